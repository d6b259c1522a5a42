// Exhaustive check of both twiddle layouts of the vector NTT kernels (detail::Twiddles::kFull / kCompact)
// against the scalar reference, on the edge-case inputs of tests/cpp/test_ntt.cpp, for every size and a range
// of prime sizes. The dispatcher picks the layout from the call history (detail::pick_twiddles), so the unit
// tests exercise each layout only on some of their inputs; this forces each one on all of them.
//
//   g++ -O3 -std=c++20 -I cpp bench/ntt_twiddles_check.cpp build-perf/libember_core.a -lcrypto -lpthread
//     -o build-perf/ember_ntt_twiddles_check && build-perf/ember_ntt_twiddles_check
// Prints one line per (path, layout) and exits non-zero on the first mismatch.
#include <cstdio>
#include <random>
#include <vector>

#include "math/ntt.hpp"
#include "math/ntt_simd.hpp"
#include "math/primes.hpp"

using namespace ember;
using detail::Twiddles;
using Scalar = void (*)(u64*, const NttTables&);
using Simd = void (*)(u64*, const NttTables&, detail::NttPrefetch*, Twiddles);

namespace {

std::vector<std::vector<u64>> inputs(std::size_t n, u64 q, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<u64>> ins;
    for (int r = 0; r < 2; ++r) {
        std::vector<u64> v(n);
        for (auto& x : v) x = rng() % q;
        ins.push_back(v);
    }
    ins.emplace_back(n, q - 1);
    ins.emplace_back(n, 0);
    std::vector<u64> alt(n), one(n, 0), top(n);
    for (std::size_t i = 0; i < n; ++i) alt[i] = (i & 1) ? q - 1 : 0, top[i] = q - 1 - (rng() & 3);
    one[0] = 1;
    ins.push_back(alt);
    ins.push_back(one);
    ins.push_back(top);
    return ins;
}

}  // namespace

int main() {
#if !defined(__x86_64__)
    std::printf("no vector NTT kernels in this build (they are x86-64 only): nothing to check\n");
    return 0;
#else
    const int bits[] = {20, 30, 40, 45, 49, 50, 55, 59, 60, 61};
    int failures = 0;
    long checked[2][2] = {};
    for (int lg = 4; lg <= 17; ++lg) {
        const std::size_t n = std::size_t(1) << lg;
        for (int b : bits) {
            std::vector<u64> qs = ntt_primes_near(b, 1, 2 * n, {}, b != 50 && b != 61);
            const NttTables tb(n, Modulus(qs[0]));
            for (int path = 0; path < 2; ++path) {
                const bool ok = path == 0 ? detail::ntt_ifma_supported(tb) : detail::ntt_avx512_supported(tb);
                if (!ok) continue;
                for (Twiddles tw : {Twiddles::kFull, Twiddles::kCompact}) {
                    // The SIMD transform (ifma or avx512 by path) of a against the scalar one; false (printed) on a mismatch.
                    auto same = [&](const std::vector<u64>& a, const char* dir, Scalar scalar, Simd ifma, Simd avx512) {
                        auto want = a, got = a;
                        scalar(want.data(), tb);
                        if (path == 0) ifma(got.data(), tb, nullptr, tw);
                        else avx512(got.data(), tb, nullptr, tw);
                        if (got == want) return true;
                        std::printf("MISMATCH %s path=%s layout=%d n=%zu q=%llu\n", dir, path ? "avx512" : "ifma", int(tw), n,
                                    static_cast<unsigned long long>(qs[0]));
                        return false;
                    };
                    for (const auto& a : inputs(n, qs[0], 1000 + lg * 31 + b)) {
                        if (!same(a, "forward", ntt_forward_scalar, detail::ntt_forward_ifma, detail::ntt_forward_avx512)) return 1;
                        if (!same(a, "inverse", ntt_inverse_scalar, detail::ntt_inverse_ifma, detail::ntt_inverse_avx512)) return 1;
                        ++checked[path][int(tw)];
                    }
                }
            }
        }
    }
    for (int path = 0; path < 2; ++path)
        for (int tw = 0; tw < 2; ++tw)
            std::printf("%s %s: %ld inputs, forward and inverse bit-identical to the scalar reference\n",
                        path ? "avx512" : "ifma", tw ? "compact" : "full", checked[path][tw]);
    return failures;
#endif
}
