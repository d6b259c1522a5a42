// Micro-benchmark of the negacyclic NTT paths (scalar, and on x86-64 AVX2 -- integer, and in double precision for
// q < 2^50 ("avx2-fma") --, AVX-512F, AVX-512 IFMA), one thread.
//
//   ember_ntt_bench [--log-n 16[,17...]] [--bits 50,60] [--runs 200] [--warmup 20] [--paths scalar,avx2,avx2-fma,avx512,ifma]
//
// Prints one JSON line per (path, log_n, bits) with median / min / max microseconds of the forward and the
// inverse transform over `runs` timed runs (each run is timed on its own, in place, on a 64-byte aligned buffer,
// after a warm-up of at least 100 ms).
// bits = 50 means the largest NTT prime below 2^50 (the IFMA ceiling); other values the NTT prime nearest 2^bits.
// Paths the CPU (or the modulus) does not support are skipped; builds for other architectures (aarch64) have the
// scalar path only ("dispatch" says which path ntt_forward takes).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "math/ntt.hpp"
#include "math/ntt_simd.hpp"
#include "math/primes.hpp"

using namespace ember;
using namespace ember::bench;

namespace {

using Fn = void (*)(u64*, const NttTables&);

Stats time_fn(Fn f, u64* a, const NttTables& tb, int runs, int warmup) {
    // warm up for `warmup` runs and at least 100 ms, so that caches, branch predictors and the clock settle
    warm_up([&] { f(a, tb); }, warmup, 100);
    std::vector<double> us(runs);
    for (int r = 0; r < runs; ++r) us[r] = time_once([&] { f(a, tb); }, /*cpu_clock=*/false, 1000.0);  // steady_clock, us
    return stats(us);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> log_ns = {16}, bits_list = {50, 60};
    int runs = 200, warmup = 20;
    std::string paths = "scalar,avx2,avx2-fma,avx512,ifma";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&] { return option_value(argc, argv, i); };
        if (arg == "--log-n") log_ns = parse_list(next());
        else if (arg == "--bits") bits_list = parse_list(next());
        else if (arg == "--runs") runs = std::max(1, std::atoi(next()));
        else if (arg == "--warmup") warmup = std::max(0, std::atoi(next()));
        else if (arg == "--paths") paths = next();
        else {
            std::fprintf(stderr,
                         "usage: %s [--log-n 16[,17]] [--bits 50,60] [--runs 200] [--warmup 20] "
                         "[--paths scalar,avx2,avx2-fma,avx512,ifma]\n",
                         argv[0]);
            return 2;
        }
    }
    auto want = [&](const char* p) { return ("," + paths + ",").find("," + std::string(p) + ",") != std::string::npos; };

    for (int log_n : log_ns) {
        const std::size_t n = std::size_t(1) << log_n;
        for (int bits : bits_list) {
            const u64 q = ntt_primes_near(bits, 1, 2 * n, {}, /*both_sides=*/bits != 50 && bits != 61).at(0);
            const NttTables tb(n, Modulus(q));
            struct P {
                const char* name;
                bool ok;
                Fn fwd, inv;
            };
            const P ps[] = {
                {"scalar", true, ntt_forward_scalar, ntt_inverse_scalar},
#if defined(__x86_64__)  // the vector kernels exist in x86-64 builds only
                {"avx2", detail::ntt_avx2_supported(tb), detail::ntt_forward_avx2, detail::ntt_inverse_avx2},
                {"avx2-fma", detail::ntt_avx2_fma_supported(tb), detail::ntt_forward_avx2_fma, detail::ntt_inverse_avx2_fma},
                {"avx512", detail::ntt_avx512_supported(tb), detail::ntt_forward_avx512, detail::ntt_inverse_avx512},
                {"ifma", detail::ntt_ifma_supported(tb), detail::ntt_forward_ifma, detail::ntt_inverse_ifma},
#endif
            };
            u64* a = static_cast<u64*>(std::aligned_alloc(64, n * sizeof(u64)));
            for (const P& p : ps) {
                if (!p.ok || !want(p.name)) continue;
                std::mt19937_64 rng(42);
                for (std::size_t i = 0; i < n; ++i) a[i] = rng() % q;
                const Stats f = time_fn(p.fwd, a, tb, runs, warmup);
                const Stats v = time_fn(p.inv, a, tb, runs, warmup);
                JsonLine(/*spaced=*/false)
                    .str("path", p.name).num("log_n", log_n).num("bits", tb.mod.bits).num("q", static_cast<unsigned long long>(q))
                    .num("runs", runs).str("dispatch", ntt_path(tb))
                    .fixed("fwd_median_us", f.median, 2).fixed("fwd_min_us", f.min, 2).fixed("fwd_max_us", f.max, 2)
                    .fixed("inv_median_us", v.median, 2).fixed("inv_min_us", v.min, 2).fixed("inv_max_us", v.max, 2)
                    .print();
            }
            std::free(a);
        }
    }
    return 0;
}
