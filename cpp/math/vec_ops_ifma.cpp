// AVX-512 IFMA element-wise kernels, q < 2^50 (compiled with AVX-512 F/DQ/VL/BW/IFMA flags; entered only after
// vec_ifma_supported in vec_ops.cpp). Each lane holds one coefficient; the n % 8 tail uses masked loads and stores.
// The plain AVX-512F kernels (vec_add / sub / neg / add_const for any q, the products for the primes above 2^50)
// are in math/vec_ops_avx512.cpp.
//
// On the lane helpers of math/ifma_util.hpp (52-bit products, remainders modulo 2^52):
//
//  * vec_mul / vec_mul_add: Barrett. x = a * b (+ acc) < q^2 is split by the IFMA pair into hi * 2^52 + lo,
//    c1 = floor(x / 2^s) < 2^52 and qhat = floor(c1 * mu / 2^52) with mu = floor(2^(52+s) / q) < 2^52. The estimate
//    is below the quotient by less than e = xmax / 2^(52+s) + 2^s / q, which the parameter choice keeps under 2
//    (under 1 for most primes: then one conditional subtraction suffices).
//  * constants (Shoup): w' = floor(w * 2^52 / q) = wp >> 12 (wp = floor(w * 2^64 / q)); for a < 2^52,
//    a * w - floor(a * w' / 2^52) * q lies in [0, 2q).
//  * vec_dot: sum_t a_t * b_t accumulated as L = sum lo52, H = sum hi52 (at most 15 terms per chunk, so that
//    H < 2^52; a chunk's residue starts the next one), then x = H * 2^52 + L = H * R + L (mod q) with
//    R = 2^52 mod q, reduced by two Shoup estimates (H * R with R' = floor(R * 2^52 / q), L with floor(2^52 / q))
//    to [0, 4q), then two conditional subtractions.
#include "math/ifma_util.hpp"

#include <algorithm>
#include <cmath>

#include "math/vec_simd.hpp"

namespace ember::detail {

namespace {

using namespace ifma;
using avx512::for_groups;
using avx512::map1;
using avx512::map2;
using avx512::map3;

// ---- Barrett parameters for a * b (+ c) mod q, q < 2^50 ----------------------------------------------------------
struct MulParams {
    u64 mu = 0;
    int s = 0;
    bool two = true;  // two conditional subtractions (estimate error may reach 2)
};

MulParams mul_params(u64 q, int bits) {
    // x <= (q-1)^2 + (q-1) = q (q-1) (products, plus an accumulator below q)
    const long double xmax = static_cast<long double>(q) * static_cast<long double>(q - 1);
    MulParams best;
    long double best_e = 1e9L;
    for (int s = bits - 1; s >= std::max(0, bits - 4); --s) {
        if (std::ldexp(1.0L, 52 + s) <= xmax) continue;  // c1 = floor(x / 2^s) must stay below 2^52
        const long double e = xmax / std::ldexp(1.0L, 52 + s) + std::ldexp(1.0L, s) / static_cast<long double>(q);
        if (e < best_e) { best_e = e; best.s = s; }
    }
    best.mu = static_cast<u64>((u128(1) << (52 + best.s)) / q);
    best.two = !(best_e < 1.0L - 1e-15L);  // long double: ~1e-19 relative error
    return best;
}

template <bool TWO, bool ACC>
void mul_kernel(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m, const MulParams& P) {
    const __m512i q = bcast(m.q), q2 = bcast(2 * m.q), negq = bcast((u64(1) << 52) - m.q);
    const __m512i mu = bcast(P.mu), mask = bcast(kMask52);
    const __m512i shl = _mm512_set1_epi64(52 - P.s), shr = _mm512_set1_epi64(P.s);
    const __m512i zero = _mm512_setzero_si512();
    auto f = [&](__m512i av, __m512i bv, __m512i cv) {
        const __m512i lo = _mm512_madd52lo_epu64(ACC ? cv : zero, av, bv);  // may carry into bit 52 with ACC
        const __m512i hi = _mm512_madd52hi_epu64(zero, av, bv);
        const __m512i c1 = _mm512_add_epi64(_mm512_sllv_epi64(hi, shl), _mm512_srlv_epi64(lo, shr));
        const __m512i qh = _mm512_madd52hi_epu64(zero, c1, mu);
        __m512i r = sub_qhat_q(lo, qh, negq, mask);
        if (TWO) r = reduce_once(r, q2);
        return reduce_once(r, q);
    };
    if constexpr (ACC) map3(out, a, b, out, n, f);
    else map2(out, a, b, n, [&](__m512i av, __m512i bv) { return f(av, bv, zero); });
}

// Shoup with 52-bit companions. MODE 0: a * w; 1: out + a * w; 2: (a + q - b) * w.
template <int MODE>
void mul_const_kernel(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    const __m512i q = bcast(m.q), q2 = bcast(2 * m.q), negq = bcast((u64(1) << 52) - m.q);
    const __m512i w = bcast(c.w), wp = bcast(c.wp >> 12);  // wp: floor(w * 2^52 / q)
    const __m512i mask = bcast(kMask52);
    const __m512i zero = _mm512_setzero_si512();
    if constexpr (MODE == 0) {
        map1(out, a, n, [&](__m512i av) { return reduce_once(mul_shoup52(zero, av, w, wp, negq, mask), q); });
    } else if constexpr (MODE == 1) {
        map2(out, a, out, n, [&](__m512i av, __m512i ov) {
            return reduce_once(reduce_once(mul_shoup52(ov, av, w, wp, negq, mask), q2), q);  // [0, 3q) -> [0, q)
        });
    } else {
        map2(out, a, b, n, [&](__m512i av, __m512i bv) {
            const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(av, q), bv);  // [0, 2q) < 2^52
            return reduce_once(mul_shoup52(zero, d, w, wp, negq, mask), q);
        });
    }
}

// vec_dot: T terms at compile time (T = 0: `terms` at run time). Products are accumulated per group of 8
// coefficients as L = sum lo52, H = sum hi52; every 15 terms (a, b < 2^50 make each hi52 < 2^48, so H and the
// carries of L stay below 2^52) the pair is reduced and the residue starts the next chunk in L.
template <int T>
void dot_kernel(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    constexpr std::size_t kChunk = 15;
    static_assert(T <= static_cast<int>(kChunk));
    const u64 qq = m.q;
    const u64 R = (u64(1) << 52) % qq;
    const __m512i q = bcast(qq), q2 = bcast(2 * qq), negq = bcast((u64(1) << 52) - qq);
    const __m512i vR = bcast(R), vRp = bcast(static_cast<u64>((static_cast<u128>(R) << 52) / qq));
    const __m512i vW1 = bcast((u64(1) << 52) / qq);
    const __m512i mask = bcast(kMask52);
    const __m512i zero = _mm512_setzero_si512();
    // x = H 2^52 + L = H R + L (mod q); H R and L each by a Shoup estimate, r in [0, 4q), then [0, q)
    auto reduce = [&](__m512i L, __m512i H) {
        H = _mm512_add_epi64(H, _mm512_srli_epi64(L, 52));
        L = _mm512_and_si512(L, mask);
        const __m512i qh = _mm512_madd52hi_epu64(_mm512_madd52hi_epu64(zero, H, vRp), L, vW1);
        return reduce_once(reduce_once(sub_qhat_q(_mm512_madd52lo_epu64(L, H, vR), qh, negq, mask), q2), q);
    };
    const u64* A[T > 0 ? T : 1];
    const u64* B[T > 0 ? T : 1];
    if constexpr (T > 0) for (int t = 0; t < T; ++t) { A[t] = a[t]; B[t] = b[t]; }
    auto group = [&](std::size_t i, __mmask8 k) {
        __m512i L = zero, H = zero;
        if constexpr (T > 0) {
            for (int t = 0; t < T; ++t) {
                const __m512i av = _mm512_maskz_loadu_epi64(k, A[t] + i), bv = _mm512_maskz_loadu_epi64(k, B[t] + i);
                L = _mm512_madd52lo_epu64(L, av, bv);
                H = _mm512_madd52hi_epu64(H, av, bv);
            }
        } else {
            std::size_t used = 0;
            for (std::size_t t = 0; t < terms; ++t) {
                if (used == kChunk) { L = reduce(L, H); H = zero; used = 0; }
                const __m512i av = _mm512_maskz_loadu_epi64(k, a[t] + i), bv = _mm512_maskz_loadu_epi64(k, b[t] + i);
                L = _mm512_madd52lo_epu64(L, av, bv);
                H = _mm512_madd52hi_epu64(H, av, bv);
                ++used;
            }
        }
        return reduce(L, H);
    };
    for_groups(out, n, group);
}

}  // namespace

// ---- IFMA ----------------------------------------------------------------------------------------------------------

void vec_mul_ifma(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const MulParams P = mul_params(m.q, m.bits);
    if (P.two) mul_kernel<true, false>(out, a, b, n, m, P);
    else mul_kernel<false, false>(out, a, b, n, m, P);
}
void vec_mul_add_ifma(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const MulParams P = mul_params(m.q, m.bits);
    if (P.two) mul_kernel<true, true>(acc, a, b, n, m, P);
    else mul_kernel<false, true>(acc, a, b, n, m, P);
}
void vec_mul_const_ifma(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    mul_const_kernel<0>(out, a, nullptr, c, n, m);
}
void vec_mul_const_add_ifma(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    mul_const_kernel<1>(out, a, nullptr, c, n, m);
}
void vec_sub_mul_const_ifma(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    mul_const_kernel<2>(out, a, b, c, n, m);
}

void vec_dot_ifma(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    switch (terms) {
        case 0: return;  // as the plain loop: nothing is written
        case 1: return dot_kernel<1>(out, a, b, terms, n, m);
        case 2: return dot_kernel<2>(out, a, b, terms, n, m);
        case 3: return dot_kernel<3>(out, a, b, terms, n, m);
        case 4: return dot_kernel<4>(out, a, b, terms, n, m);
        default: return dot_kernel<0>(out, a, b, terms, n, m);
    }
}

}  // namespace ember::detail
