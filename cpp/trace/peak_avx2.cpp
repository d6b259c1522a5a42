// The AVX2 lane-product peak of trace/peak.cpp (compiled with the AVX2 flags; entered only when
// cpu_features().use_avx2()): the multiply-accumulate of the AVX2 CRT / iCRT kernels (heaan/crt_avx2.cpp), one
// 32 x 32 -> 64-bit lane product (vpmuludq) added into a 64-bit lane per word, four independent vector sums.
#include "math/avx2_util.hpp"

#include "trace/peak_kernels.hpp"

namespace ember::trace::detail {

__attribute__((noipa)) u64 lane_mul_acc_avx2(const u64* a, const u64* b, std::size_t n) {
    namespace a2 = ember::detail::avx2;
    a2::V s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (std::size_t k = 0; k + 16 <= n; k += 16) {
        s0 = _mm256_add_epi64(s0, _mm256_mul_epu32(a2::load(a + k), a2::load(b + k)));
        s1 = _mm256_add_epi64(s1, _mm256_mul_epu32(a2::load(a + k + 4), a2::load(b + k + 4)));
        s2 = _mm256_add_epi64(s2, _mm256_mul_epu32(a2::load(a + k + 8), a2::load(b + k + 8)));
        s3 = _mm256_add_epi64(s3, _mm256_mul_epu32(a2::load(a + k + 12), a2::load(b + k + 12)));
    }
    const a2::V s = _mm256_xor_si256(_mm256_xor_si256(s0, s1), _mm256_xor_si256(s2, s3));
    alignas(32) u64 l[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), s);
    return l[0] ^ l[1] ^ l[2] ^ l[3];
}

}  // namespace ember::trace::detail
