// Lane helpers shared by the AVX-512 IFMA kernels (math/vec_ops_ifma.cpp, math/rns_ifma.cpp). Internal: include it
// only from *_ifma.cpp files, which are compiled with the AVX-512 F/DQ/VL/BW/IFMA flags and entered only after a CPUID
// check (the functions below use those instructions).
//
// Notation: _mm512_madd52lo/hi_epu64(z, x, y) add the low / high 52 bits of the 104-bit product x * y (x, y < 2^52)
// to z. A remainder r = x - qhat * q whose true value is known to lie in [0, 2^52) is computed modulo 2^52 as
// lo52(x) + lo52(qhat * (2^52 - q)) and masked, so no 64-bit multiply is needed (sub_qhat_q).
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

namespace ember::detail::ifma {

constexpr u64 kMask52 = (u64(1) << 52) - 1;

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

/// r in [0, 2q) -> [0, q) (unsigned min: r - q wraps above r when r < q).
inline __m512i reduce_once(__m512i r, __m512i q) { return _mm512_min_epu64(r, _mm512_sub_epi64(r, q)); }

/// t - qhat * q mod 2^52 (negq = 2^52 - q, mask = 2^52 - 1): the remainder of a Barrett or Shoup estimate qhat of
/// the quotient of t, exact when its true value lies in [0, 2^52).
inline __m512i sub_qhat_q(__m512i t, __m512i qhat, __m512i negq, __m512i mask) {
    return _mm512_and_si512(_mm512_madd52lo_epu64(t, qhat, negq), mask);
}

/// Shoup with a 52-bit companion wp52 = floor(w * 2^52 / q), for x < 2^52 and w < q:
/// acc + x * w - floor(x * wp52 / 2^52) * q, which is acc + [0, 2q); that true value must stay below 2^52.
inline __m512i mul_shoup52(__m512i acc, __m512i x, __m512i w, __m512i wp52, __m512i negq, __m512i mask) {
    const __m512i qh = _mm512_madd52hi_epu64(_mm512_setzero_si512(), x, wp52);
    return sub_qhat_q(_mm512_madd52lo_epu64(acc, x, w), qh, negq, mask);
}

}  // namespace ember::detail::ifma
