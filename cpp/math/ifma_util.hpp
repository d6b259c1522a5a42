// Lane helpers shared by the AVX-512 IFMA kernels (math/vec_ops_ifma.cpp, math/rns_ifma.cpp). Internal: include it
// only from *_ifma.cpp files, which are compiled with the AVX-512 F/DQ/VL/BW/IFMA flags and entered only after a CPUID
// check (the functions below use those instructions).
//
// Notation: _mm512_madd52lo/hi_epu64(z, x, y) add the low / high 52 bits of the 104-bit product x * y (x, y < 2^52)
// to z. A remainder r = x - qhat * q whose true value is known to lie in [0, 2^52) is computed modulo 2^52 as
// lo52(x) + lo52(qhat * (2^52 - q)) and masked, so no 64-bit multiply is needed (sub_qhat_q).
//
// The generic AVX-512F lane helpers (bcast, masks, reduce_once, ...) live in math/avx512_util.hpp and are visible here
// under ifma:: too.
#pragma once

#include "math/avx512_util.hpp"  // first: it silences GCC 12's false positives inside the intrinsic headers

#include <cstddef>

#include "math/modarith.hpp"

namespace ember::detail::ifma {

constexpr u64 kMask52 = (u64(1) << 52) - 1;

using avx512::bcast;
using avx512::lanes_mask;
using avx512::load_lanes;
using avx512::reduce_once;
using avx512::store_lanes;
using avx512::tail_mask;

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
