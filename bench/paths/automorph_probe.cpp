// Issue 30's question for the automorphism (the evaluation-form permutation out[i] = in[perm[i]] of a rotation):
// does an AVX2 gather (vpgatherdq, four words per instruction) beat the scalar loop the CPU backend runs? Times both
// on 16 limbs of N = 2^13, 2^15, 2^16 with the permutation of X -> X^5 (ring/ring_context.cpp's formula), checks
// that they agree, and prints one JSON line per size. Build and run (x86-64 with AVX2):
//   g++ -O2 -std=c++20 bench/paths/automorph_probe.cpp -o /tmp/automorph_probe && /tmp/automorph_probe
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

using u64 = std::uint64_t;

namespace {

std::vector<std::uint32_t> rotation_perm(int log_n, u64 k) {
    const u64 n = u64(1) << log_n, two_n = 2 * n;
    auto brv = [log_n](u64 x) {
        u64 r = 0;
        for (int b = 0; b < log_n; ++b) r |= ((x >> b) & 1) << (log_n - 1 - b);
        return r;
    };
    std::vector<std::uint32_t> perm(n);
    for (u64 i = 0; i < n; ++i) perm[i] = static_cast<std::uint32_t>(brv(((2 * brv(i) + 1) * k % two_n - 1) / 2));
    return perm;
}

__attribute__((noipa)) void permute_scalar(u64* d, const u64* s, const std::uint32_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) d[i] = s[p[i]];
}

__attribute__((noipa, target("avx2"))) void permute_gather(u64* d, const u64* s, const std::uint32_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; i += 8) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 4));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_i32gather_epi64(reinterpret_cast<const long long*>(s), a, 8));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 4), _mm256_i32gather_epi64(reinterpret_cast<const long long*>(s), b, 8));
    }
}

}  // namespace

int main() {
    if (!__builtin_cpu_supports("avx2")) {
        std::printf("{\"error\": \"this CPU has no AVX2\"}\n");
        return 1;
    }
    constexpr std::size_t kLimbs = 16, kRuns = 15;
    for (int log_n : {13, 15, 16}) {
        const std::size_t n = std::size_t(1) << log_n;
        const auto perm = rotation_perm(log_n, 5);
        std::vector<u64> src(n * kLimbs), dst(n * kLimbs), ref(n);
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = i * 0x9E3779B97F4A7C15ull;
        double med[2];
        for (int f = 0; f < 2; ++f) {
            std::vector<double> us;
            for (std::size_t r = 0; r < kRuns; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                for (std::size_t l = 0; l < kLimbs; ++l)
                    (f ? permute_gather : permute_scalar)(dst.data() + l * n, src.data() + l * n, perm.data(), n);
                us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kLimbs);
            }
            std::sort(us.begin(), us.end());
            med[f] = us[kRuns / 2];
        }
        permute_scalar(ref.data(), src.data(), perm.data(), n);
        permute_gather(dst.data(), src.data(), perm.data(), n);
        const bool same = std::equal(ref.begin(), ref.end(), dst.begin());
        std::printf("{\"op\": \"automorph\", \"log_n\": %d, \"limbs\": %zu, \"runs\": %zu, \"scalar_us_per_limb\": %.1f, "
                    "\"gather_us_per_limb\": %.1f, \"gather_over_scalar\": %.2f, \"identical\": %s}\n",
                    log_n, kLimbs, kRuns, med[0], med[1], med[1] / med[0], same ? "true" : "false");
    }
}
