// Lane helpers shared by the AVX-512 kernels: the element-wise ones (math/vec_ops_avx512.cpp, math/vec_ops_ifma.cpp),
// the NTT (math/ntt_avx512.cpp) and, through math/ifma_util.hpp, the IFMA kernels. Internal: include it only from
// *_avx512.cpp / *_ifma.cpp files, which are compiled with the AVX-512 F/DQ/VL/BW flags and entered only after a CPUID
// check (the functions below use those instructions). Plain AVX-512F/DQ: no IFMA here.
//
// 64-bit products: AVX-512 has no 64x64 -> 128-bit multiply, so the high word of a product is estimated from three
// 32x32 -> 64-bit products (_mm512_mul_epu32), mulhi_est below, and remainders are computed modulo 2^64
// (_mm512_mullo_epi64, DQ).
//
// GCC 12 flags the self-initialized _mm512_undefined_* inside the intrinsic headers (a known false positive).
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstddef>

#include "math/modarith.hpp"

namespace ember::detail::avx512 {

/// x in every lane.
inline __m512i bcast(u64 x) { return _mm512_set1_epi64(static_cast<long long>(x)); }

/// The first r lanes of a partial group, r < 8 (the n % 8 tail after the whole groups).
inline __mmask8 tail_mask(std::size_t r) { return static_cast<__mmask8>((1u << r) - 1u); }

/// The first min(avail, 8) lanes.
inline __mmask8 lanes_mask(std::size_t avail) { return avail >= 8 ? static_cast<__mmask8>(0xffu) : tail_mask(avail); }

/// The first min(avail, 8) words at p, zeros in the other lanes (nothing is read past them).
inline __m512i load_lanes(const u64* p, std::size_t avail) { return _mm512_maskz_loadu_epi64(lanes_mask(avail), p); }

/// Stores the first min(avail, 8) lanes of v at p (a plain store when all 8 fit).
inline void store_lanes(u64* p, std::size_t avail, __m512i v) {
    if (avail >= 8) _mm512_storeu_si512(p, v);
    else _mm512_mask_storeu_epi64(p, tail_mask(avail), v);
}

/// r in [0, 2q) -> [0, q) (unsigned min: r - q wraps above r when r < q). Any multiple of q works as q: [0, 2m) -> [0, m).
inline __m512i reduce_once(__m512i r, __m512i q) { return _mm512_min_epu64(r, _mm512_sub_epi64(r, q)); }

/// out[i..i+8) = f(the same lanes of each input stream) over n values: whole groups of 8, then the n % 8 tail
/// with masked loads and stores.
template <class F, class... In>
inline void map_lanes(u64* out, std::size_t n, F f, const In*... in) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm512_storeu_si512(out + i, f(_mm512_loadu_si512(in + i)...));
    if (i < n) {
        const __mmask8 k = tail_mask(n - i);
        _mm512_mask_storeu_epi64(out + i, k, f(_mm512_maskz_loadu_epi64(k, in + i)...));
    }
}
template <class F>
inline void map1(u64* out, const u64* a, std::size_t n, F f) { map_lanes(out, n, f, a); }
template <class F>
inline void map2(u64* out, const u64* a, const u64* b, std::size_t n, F f) { map_lanes(out, n, f, a, b); }
template <class F>
inline void map3(u64* out, const u64* a, const u64* b, const u64* c, std::size_t n, F f) { map_lanes(out, n, f, a, b, c); }

/// out[i..i+8) = group(i, k) for the groups of 8 coefficients of [0, n), k the lanes in range (all 8 but in the
/// n % 8 tail): for kernels that read a variable number of streams (load them with _mm512_maskz_loadu_epi64(k, .)).
template <class G>
inline void for_groups(u64* out, std::size_t n, G group) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm512_storeu_si512(out + i, group(i, static_cast<__mmask8>(0xff)));
    if (i < n) {
        const __mmask8 k = tail_mask(n - i);
        _mm512_mask_storeu_epi64(out + i, k, group(i, k));
    }
}

/// An estimate of hi64(x * c) for any x, c < 2^64 (ch = c >> 32): hh + (hl >> 32) + (lh >> 32) from three of the
/// four 32x32 products; the dropped low halves and ll sum below 3 * 2^64, so the estimate is 0, 1 or 2 below.
inline __m512i mulhi_est(__m512i x, __m512i c, __m512i ch) {
    const __m512i xh = _mm512_srli_epi64(x, 32);
    const __m512i hh = _mm512_mul_epu32(xh, ch);
    const __m512i hl = _mm512_mul_epu32(xh, c);
    const __m512i lh = _mm512_mul_epu32(x, ch);
    return _mm512_add_epi64(hh, _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(lh, 32)));
}

/// Shoup: y * w mod q in [0, 4q) for any y < 2^64, w < q < 2^61, wp = floor(w * 2^64 / q), wph = wp >> 32
/// (the exact quotient estimate leaves [0, 2q), mulhi_est may be 2 below it).
inline __m512i mul_shoup_lazy4(__m512i y, __m512i w, __m512i wp, __m512i wph, __m512i q) {
    return _mm512_sub_epi64(_mm512_mullo_epi64(y, w), _mm512_mullo_epi64(mulhi_est(y, wp, wph), q));
}

}  // namespace ember::detail::avx512
