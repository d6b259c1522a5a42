// A small benchmark of the CUDA kernels (ember_cuda) for bench/gpu/device_check.sh: one JSON object per line.
//   {"device": ...}
//   {"kernel": "copy", "bytes_per_s": ...}                                  device-to-device copy, read + written
//   {"kernel": "ntt_forward", "log_n": 16, "limbs": 24, "ms": ..., "us_per_limb": ...}   (and ntt_inverse, mul, dot3,
//                                                         base_convert_modup: one digit of 3 to the other primes)
// Each time is the median of --reps timed runs (CUDA events) after a warm-up. 60-bit primes, as the CKKS Q primes.
// Options: --log-n L (16), --limbs K (24, and 16 K: past the L2 cache), --reps R (20).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/kernels.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"

using namespace ember;

int main(int argc, char** argv) {
    int log_n = 16, limbs = 24, reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--log-n")) log_n = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--limbs")) limbs = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: %s [--log-n L] [--limbs K] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (cuda::device_count() == 0) {
        std::printf("{\"device\": null, \"skipped\": \"no CUDA device\"}\n");
        return 0;
    }
    std::printf("{\"device\": \"%s\"}\n", cuda::device_description().c_str());
    std::fflush(stdout);
    const double bw = cuda::copy_bandwidth(std::size_t(1) << 30, reps);
    std::printf("{\"kernel\": \"copy\", \"bytes\": %zu, \"bytes_per_s\": %.4e}\n", std::size_t(1) << 30, bw);
    std::fflush(stdout);

    const std::size_t n = std::size_t(1) << log_n;
    const std::vector<u64> primes = ntt_primes_near(60, static_cast<std::size_t>(limbs), 2 * n);
    std::vector<std::unique_ptr<NttTables>> tabs;
    std::vector<std::unique_ptr<cuda::DeviceNttTables>> dtabs;
    std::vector<Modulus> mods;
    for (u64 q : primes) {
        tabs.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        dtabs.push_back(std::make_unique<cuda::DeviceNttTables>(*tabs.back()));
        mods.push_back(tabs.back()->mod);
    }
    for (int batch : {1, 16}) {  // one polynomial's limbs, then 16 of them (past the L2 cache)
        const std::size_t count = static_cast<std::size_t>(limbs) * batch;
        std::mt19937_64 rng(1);
        // operands: x (transformed), a and b (3 digits each, for dot), out
        std::vector<cuda::DeviceArray<u64>> x, a, b, out;
        std::vector<u64*> px, pout;
        std::vector<const cuda::DeviceNttTables*> pt;
        std::vector<Modulus> m;
        std::vector<const u64*> pa, pb;
        for (std::size_t l = 0; l < count; ++l) {
            const u64 q = primes[l % primes.size()];
            std::vector<u64> v(n);
            for (auto& w : v) w = rng() % q;
            x.emplace_back(v);
            a.emplace_back(v);
            b.emplace_back(v);
            out.emplace_back(v);
            px.push_back(x.back().data());
            pout.push_back(out.back().data());
            pa.push_back(a.back().data());
            pb.push_back(b.back().data());
            pt.push_back(dtabs[l % primes.size()].get());
            m.push_back(mods[l % primes.size()]);
        }
        auto report = [&](const char* kernel, double ms) {
            std::printf("{\"kernel\": \"%s\", \"log_n\": %d, \"limbs\": %zu, \"ms\": %.5f, \"us_per_limb\": %.4f}\n", kernel,
                        log_n, count, ms, ms * 1e3 / static_cast<double>(count));
            std::fflush(stdout);
        };
        report("ntt_forward", cuda::time_ms([&] { cuda::ntt_forward(px, pt); }, reps));
        report("ntt_inverse", cuda::time_ms([&] { cuda::ntt_inverse(px, pt); }, reps));
        report("mul", cuda::time_ms([&] { cuda::mul(pout, pa, pb, m, n); }, reps));
        // dot over 3 digits (dnum = 3): the same a and b limbs thrice (the kernel reads them thrice all the same); the
        // pointer tables travel in the launches' parameters (kDotPtrs per launch), nothing staged or waited for
        const std::vector<std::vector<const u64*>> da(3, pa), db(3, pb);
        report("dot3", cuda::time_ms([&] { cuda::dot(pout, da, db, m, n); }, reps));
        // ModUp of one digit (dnum = 3): the first third of one polynomial's primes to the others, plain
        if (batch == 1 && limbs >= 2) {
            const std::size_t k = (static_cast<std::size_t>(limbs) + 2) / 3;
            const BaseConverter conv(std::vector<Modulus>(mods.begin(), mods.begin() + k),
                                     std::vector<Modulus>(mods.begin() + k, mods.end()));
            const cuda::DeviceBaseConverter dconv(conv);
            const std::vector<const u64*> bin(pa.begin(), pa.begin() + k);
            const std::vector<u64*> bout(pout.begin() + k, pout.begin() + limbs);
            report("base_convert_modup", cuda::time_ms([&] { cuda::base_convert(dconv, bin, bout, n, false); }, reps));
        }
    }
    cuda::synchronize();
    return 0;
}
