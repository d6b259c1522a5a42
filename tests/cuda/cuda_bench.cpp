// A small benchmark of the CUDA kernels (ember_cuda) for bench/gpu/device_check.sh: one JSON object per line.
//   {"device": ...}
//   {"kernel": "copy", "bytes_per_s": ...}                                  device-to-device copy, read + written
//   {"kernel": "ntt_forward", "log_n": 16, "limbs": 24, "ms": ..., "us_per_limb": ...}   (and ntt_inverse, mul, dot3,
//                                                         base_convert_modup: one digit of 3 to the other primes)
//   {"kernel": "heaan_crt", "log_n": 16, "log_q": 1200, "np": 49, "polys": 2, "ms": ...}   HEAAN's product of two
//                                                         log_q-bit polynomials (paper 000), per function: heaan_crt
//                                                         (both operands), heaan_ntt (both), heaan_pointwise,
//                                                         heaan_intt, heaan_icrt, and heaan_product (the whole
//                                                         cuda::heaan_multiply); then heaan_he_mul: the kernels of one
//                                                         HE Mul (Fig. 2, the evaluator's sequence, see heaan_he_mul)
// Each time is the median of --reps timed runs (CUDA events) after a warm-up. 60-bit primes, as the CKKS Q primes;
// HEAAN: 50-bit primes, as heaan::Params' default.
// Options: --log-n L (16), --limbs K (24, and 16 K: past the L2 cache), --reps R (20), --heaan-log-q Q (1200; 0: no
// HEAAN lines).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/kernels.hpp"
#include "heaan/crt.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"

using namespace ember;

namespace {

/// HEAAN's product of two log_q-bit polynomials at N = 2^log_n, per function, and the kernels of one HE Mul.
void heaan_bench(int log_n, int log_q, int reps) {
    const std::size_t n = std::size_t(1) << log_n;
    // region 2 (key switching: a log_q-bit polynomial times a key modulo Q^2, Q = 2^log_q) needs the most primes
    const int bound2 = 3 * log_q + log_n - 2;
    const heaan::CrtBasis B(n, 50, static_cast<std::size_t>(bound2 + 4) / 49 + 2, 2 * log_q);
    const cuda::DeviceCrtBasis dB(B);
    const std::size_t np = cuda::heaan_product_primes(B, log_q, log_q);
    const std::size_t np1 = B.primes_for(2 * log_q + log_n - 1), np2 = B.primes_for(bound2);
    const std::size_t words = heaan::bigint::words_for_bits(log_q);
    std::mt19937_64 rng(2);
    auto big_poly = [&] {  // n coefficients of log_q bits
        std::vector<u64> v(n * words);
        for (auto& w : v) w = rng();
        for (std::size_t i = 0; i < n; ++i) heaan::bigint::mask_bits(v.data() + i * words, words, log_q);
        return cuda::DeviceArray<u64>(v);
    };
    std::vector<cuda::DeviceArray<u64>> in;
    for (int k = 0; k < 4; ++k) in.push_back(big_poly());
    const std::size_t rows_max = std::max(np, np1);
    cuda::DeviceArray<u64> rows(5 * rows_max * n), out(2 * n * words), tmp(n * words), r2(2 * np2 * n), key(2 * np2 * n);
    cuda::memset_async(key.data(), 0, key.size() * sizeof(u64));  // the key's values do not change the time
    auto report = [&](const char* kernel, std::size_t primes, int polys, double ms) {
        std::printf("{\"kernel\": \"%s\", \"log_n\": %d, \"log_q\": %d, \"np\": %zu, \"polys\": %d, \"ms\": %.5f}\n", kernel,
                    log_n, log_q, primes, polys, ms);
        std::fflush(stdout);
    };
    u64* ra = rows.data();
    u64* rb = ra + np * n;
    u64* const both[2] = {ra, rb};
    // per function, on one product's data (the NTT, products and iNTT rerun in place on values in range)
    double sum = 0, t;
    sum += t = cuda::time_ms([&] {
        cuda::heaan_crt(dB, in[0].data(), words, log_q, np, ra, false);
        cuda::heaan_crt(dB, in[1].data(), words, log_q, np, rb, false);
    }, reps);
    report("heaan_crt", np, 2, t);
    sum += t = cuda::time_ms([&] { cuda::heaan_ntt(dB, both, np, false); }, reps);
    report("heaan_ntt", np, 2, t);
    sum += t = cuda::time_ms([&] { cuda::heaan_pointwise_mul(dB, ra, ra, rb, np); }, reps);
    report("heaan_pointwise", np, 1, t);
    sum += t = cuda::time_ms([&] { cuda::heaan_ntt(dB, std::span<u64* const>(both, 1), np, true); }, reps);
    report("heaan_intt", np, 1, t);
    sum += t = cuda::time_ms([&] { cuda::heaan_icrt(dB, ra, np, 0, log_q, out.data()); }, reps);
    report("heaan_icrt", np, 1, t);
    report("heaan_product_sum_of_parts", np, 2, sum);
    report("heaan_product", np, 2,
           cuda::time_ms([&] { cuda::heaan_multiply(dB, in[0].data(), log_q, in[1].data(), log_q, np, 0, log_q, out.data()); }, reps));
    // HE Mul (Fig. 2, Context::mul's sequence): region 1 over np1 primes: CRT (centered) of a1 b1 a2 b2, 4 NTTs,
    // a1 b2 + b1 a2 (dot), a1 a2, b1 b2, 3 iNTTs; the iCRT of a1 a2 mod q fed to its CRT over np2 primes; region 2:
    // NTT, the two products by the key, 2 iNTTs; the result: the iCRTs of KA and KB (shift log Q) and of
    // a1 b2 + b1 a2 and b1 b2. Without the final big-integer additions of those (no kernel of their own yet: two
    // passes over 2 x n x words words) and with the CPU's fusion of the iCRT into the CRT left as two kernels.
    u64* r1[5];
    for (int k = 0; k < 5; ++k) r1[k] = rows.data() + static_cast<std::size_t>(k) * np1 * n;
    u64* R = r2.data();
    u64* KA = R + np2 * n;
    const auto mods1 = dB.moduli(np1);
    std::vector<u64*> cross(np1);
    std::vector<std::vector<const u64*>> dx(2, std::vector<const u64*>(np1)), dy(2, std::vector<const u64*>(np1));
    for (std::size_t j = 0; j < np1; ++j) {
        cross[j] = r1[4] + j * n;
        dx[0][j] = r1[0] + j * n;  // a1 b2
        dy[0][j] = r1[3] + j * n;
        dx[1][j] = r1[1] + j * n;  // b1 a2
        dy[1][j] = r1[2] + j * n;
    }
    u64* const res1[3] = {r1[0], r1[1], r1[4]};
    u64* const reg2[2] = {KA, R};
    const double he = cuda::time_ms([&] {
        for (std::size_t k = 0; k < 4; ++k) cuda::heaan_crt(dB, in[k].data(), words, log_q, np1, r1[k], true);
        cuda::heaan_ntt(dB, std::span<u64* const>(r1, 4), np1, false);
        cuda::dot(cross, dx, dy, mods1, n);
        cuda::heaan_pointwise_mul(dB, r1[0], r1[0], r1[2], np1);
        cuda::heaan_pointwise_mul(dB, r1[1], r1[1], r1[3], np1);
        cuda::heaan_ntt(dB, res1, np1, true);
        cuda::heaan_icrt(dB, r1[0], np1, 0, log_q, tmp.data());
        cuda::heaan_crt(dB, tmp.data(), words, log_q, np2, R, true);
        cuda::heaan_ntt(dB, std::span<u64* const>(&R, 1), np2, false);
        cuda::heaan_pointwise_mul(dB, KA, R, key.data(), np2);
        cuda::heaan_pointwise_mul(dB, R, R, key.data() + np2 * n, np2);
        cuda::heaan_ntt(dB, reg2, np2, true);
        cuda::heaan_icrt(dB, KA, np2, log_q, log_q, out.data());
        cuda::heaan_icrt(dB, R, np2, log_q, log_q, out.data() + n * words);
        cuda::heaan_icrt(dB, r1[4], np1, 0, log_q, tmp.data());
        cuda::heaan_icrt(dB, r1[1], np1, 0, log_q, tmp.data());
    }, reps);
    std::printf("{\"kernel\": \"heaan_he_mul\", \"log_n\": %d, \"log_q\": %d, \"np1\": %zu, \"np2\": %zu, \"ms\": %.5f, "
                "\"paper_000_titan_rtx_ms\": 38.1}\n",
                log_n, log_q, np1, np2, he);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    int log_n = 16, limbs = 24, reps = 20, heaan_log_q = 1200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--log-n")) log_n = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--limbs")) limbs = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--heaan-log-q")) heaan_log_q = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: %s [--log-n L] [--limbs K] [--reps R] [--heaan-log-q Q]\n", argv[0]);
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
        // pointer tables travel in the launches' parameters (DotLaunch<1>::kPtrs per launch), nothing staged or waited for
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
    if (heaan_log_q > 0) heaan_bench(log_n, heaan_log_q, reps);
    cuda::synchronize();
    return 0;
}
