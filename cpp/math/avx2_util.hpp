// Lane helpers shared by the AVX2 kernels (math/ntt_avx2.cpp, math/vec_ops_avx2.cpp, ...). Internal: include it only
// from *_avx2.cpp files, which are compiled with -mavx2 -mbmi2 -mfma and entered only after a CPUID check
// (cpu_features().use_avx2()).
//
// AVX2 has four 64-bit lanes and, for products, only the 32 x 32 -> 64-bit lane product (vpmuludq) and the
// 32 x 32 -> low 32-bit one (vpmulld); no 64-bit low product (AVX-512DQ's vpmullq), no unsigned 64-bit compare or
// min. So:
//  * hi64(x * c) is estimated from three 32 x 32 products (mulhi_est: 0, 1 or 2 below the true value);
//  * lo64(x * c) is exact from one vpmuludq and one vpmulld on the halves swapped (mullo);
//  * a conditional subtraction r -> r - m when r >= m picks on the sign of r - m (blendv), exact whenever
//    r - m lies in (-2^63, 2^63): for r in [0, 2m) with m <= 2^63, which covers every use here (m <= 4q < 2^63).
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "math/modarith.hpp"

namespace ember::detail::avx2 {

using V = __m256i;

inline V bcast(u64 x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }
inline V load(const u64* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store(u64* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline V add(V a, V b) { return _mm256_add_epi64(a, b); }
inline V sub(V a, V b) { return _mm256_sub_epi64(a, b); }

/// r in [0, 2m) -> [0, m), for m <= 2^63 (any multiple of q below 2^63 as m).
inline V reduce_once(V r, V m) {
    const V d = _mm256_sub_epi64(r, m);
    return _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(d), _mm256_castsi256_pd(r), _mm256_castsi256_pd(d)));
}

/// d + m where d < 0 as a signed word, else d: the correction of a difference d = x - y with x, y in [0, m).
inline V add_if_neg(V d, V m) {
    const V s = _mm256_add_epi64(d, m);
    return _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(d), _mm256_castsi256_pd(s), _mm256_castsi256_pd(d)));
}

/// An estimate of hi64(x * c) for any x, c < 2^64 (ch = c >> 32): hh + (hl >> 32) + (lh >> 32) from three of the four
/// 32 x 32 products; the dropped low halves and ll sum below 3 * 2^64, so the estimate is 0, 1 or 2 below.
inline V mulhi_est(V x, V c, V ch) {
    const V xh = _mm256_srli_epi64(x, 32);
    const V hh = _mm256_mul_epu32(xh, ch);
    const V hl = _mm256_mul_epu32(xh, c);
    const V lh = _mm256_mul_epu32(x, ch);
    return _mm256_add_epi64(hh, _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(lh, 32)));
}

/// c with its 32-bit halves swapped in each lane (the second operand of mullo).
inline V swap_halves(V c) { return _mm256_shuffle_epi32(c, 0xb1); }

/// lo64(x * c) for any x, c < 2^64, cs = swap_halves(c): xl*cl + ((xl*ch + xh*cl) << 32), the two cross products'
/// low halves from one vpmulld.
inline V mullo(V x, V c, V cs) {
    const V ll = _mm256_mul_epu32(x, c);
    const V cross = _mm256_mullo_epi32(x, cs);  // lane halves: lo32(xl * ch), lo32(xh * cl)
    // the low half of cross + (cross >> 32) is their sum mod 2^32; shifted up, it is the cross term mod 2^64
    const V sum = _mm256_slli_epi64(_mm256_add_epi64(cross, _mm256_srli_epi64(cross, 32)), 32);
    return _mm256_add_epi64(ll, sum);
}

/// A constant multiplier in lanes: w < q, its Shoup companion wp = floor(w 2^64 / q), and the derived operands.
struct ShoupV {
    V w, ws, wp, wph;
    ShoupV() = default;
    ShoupV(V w_, V wp_) : w(w_), ws(swap_halves(w_)), wp(wp_), wph(_mm256_srli_epi64(wp_, 32)) {}
    ShoupV(u64 w_, u64 wp_) : ShoupV(bcast(w_), bcast(wp_)) {}
};

/// The modulus in lanes, with its swapped-halves form for mullo and its multiples.
struct ModV {
    V q, qs, q2, q4;
    explicit ModV(u64 m) : q(bcast(m)), qs(swap_halves(bcast(m))), q2(bcast(2 * m)), q4(bcast(4 * m)) {}
};

/// Shoup: y * w mod q in [0, 4q) for any y < 2^64, w < q < 2^61 (the exact quotient estimate leaves [0, 2q), mulhi_est
/// may be 2 below it).
/// The two low products are fused: lo64(y w) - lo64(qt q) = (yl wl - qtl ql) + (cross(y, w) - cross(qt, q)) 2^32, the
/// cross terms' low halves from one vpmulld each, their difference summed and shifted once (three operations fewer
/// than two mullo calls).
inline V mul_shoup_lazy4(V y, const ShoupV& w, const ModV& m) {
    const V qt = mulhi_est(y, w.wp, w.wph);
    const V ll = _mm256_sub_epi64(_mm256_mul_epu32(y, w.w), _mm256_mul_epu32(qt, m.q));
    const V c = _mm256_sub_epi32(_mm256_mullo_epi32(y, w.ws), _mm256_mullo_epi32(qt, m.qs));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(_mm256_add_epi64(c, _mm256_srli_epi64(c, 32)), 32));
}

// ---- additions for the element-wise kernels (math/vec_ops_avx2.cpp) ------------------------------------------------

/// Shift counts for _mm256_sll_epi64 / _mm256_srl_epi64 (the same count in every lane).
inline __m128i shift_count(int k) { return _mm_cvtsi32_si128(k); }

/// The maskload / maskstore mask of the first r lanes (high bit set in lanes [0, r)), for 0 <= r <= 4.
inline V tail_mask(std::size_t r) {
    return _mm256_cmpgt_epi64(bcast(static_cast<u64>(r)), _mm256_setr_epi64x(0, 1, 2, 3));
}
/// The lanes of k from p, zeros in the others (the masked-out words are not read: no fault past the end).
inline V load_masked(const u64* p, V k) { return _mm256_maskload_epi64(reinterpret_cast<const long long*>(p), k); }
/// Stores the lanes of k at p (the other words are not written).
inline void store_masked(u64* p, V k, V v) { _mm256_maskstore_epi64(reinterpret_cast<long long*>(p), k, v); }

/// out[i..i+4) = f(the same lanes of each input stream) over n values: whole groups of 4, then the n % 4 tail with
/// masked loads and stores (nothing read or written past n). Each group is loaded before it is stored, so out may
/// be one of the inputs.
template <class F, class... In>
inline void map_lanes(u64* out, std::size_t n, F f, const In*... in) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) store(out + i, f(load(in + i)...));
    if (i < n) {
        const V k = tail_mask(n - i);
        store_masked(out + i, k, f(load_masked(in + i, k)...));
    }
}

/// hi64(x * c) or 1 below it, for x, c < 2^63 (ch = c >> 32): the two middle products (each below 2^63) are summed
/// before their shift, so only ll and (mid mod 2^32) * 2^32 are dropped: together below 2 * 2^64, at most 1 below.
inline V mulhi_est63(V x, V c, V ch) {
    const V xh = _mm256_srli_epi64(x, 32);
    const V mid = _mm256_add_epi64(_mm256_mul_epu32(xh, c), _mm256_mul_epu32(x, ch));
    return _mm256_add_epi64(_mm256_mul_epu32(xh, ch), _mm256_srli_epi64(mid, 32));
}

}  // namespace ember::detail::avx2
