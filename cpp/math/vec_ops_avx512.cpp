// Plain AVX-512F element-wise kernels (compiled with AVX-512 F/DQ/VL/BW flags, no IFMA; entered only after
// vec_avx512_supported() in vec_ops.cpp). Each lane holds one coefficient; the n % 8 tail uses masked loads and
// stores. Any q < 2^61: the products are the path of the primes the IFMA kernels do not take (q >= 2^50, the
// 56-60-bit primes of bootstrapping among them), and of every prime on a CPU without IFMA.
//
//  * vec_add / sub / neg / add_const: the same formulas as the scalar code (any q < 2^63), the conditional
//    subtraction being an unsigned min(s, s - q).
//  * vec_mul / vec_mul_add: x = a * b (+ acc) < q^2 from four 32x32 -> 64-bit products as H * 2^64 + M * 2^32 + L
//    (a, b < 2^61, so the two middle products sum below 2^62), then the scalar Barrett64 reduction (s = bits - 2,
//    mu = floor(2^(64+s) / q)): c1 = floor(x / 2^s) is read off the three parts exactly (BarrettV::split), the high
//    product c1 * mu is estimated from three 32-bit products (mulhi_est63, at most 1 below), so the quotient
//    estimate is at most 1 + 1 below the quotient, r = lo - qhat * q (mod 2^64) lies in [0, 3q), and two
//    conditional subtractions finish it.
//  * vec_dot: per lane x = H * 2^64 + M * 2^32 + L, summing the four partial products of every term (ll into L
//    with its carries counted in H, lh + hl into M, hh into H). The scalar chunk bound (chunk * (q-1)^2 + q - 1 <
//    2^(62+bits), so that c1 fits a word), also capped so that M stays below 2^64 - 2^32, sets the terms per
//    reduction; a chunk's residue starts the next one in L. The reduction is the Barrett one above, whose estimate
//    is here up to 2 + 2 below (x up to 2^(62+bits), c1 up to 2^64: avx512::mulhi_est): r in [0, 5q), three
//    conditional subtractions.
//  * constants (Shoup, avx512::mul_shoup_lazy4, the NTT's product): a * w in [0, 4q) for any a < 2^64, then two
//    conditional subtractions (three for vec_mul_const_add).
// Outputs are fully reduced, so every kernel is bit-identical to its scalar counterpart. Moduli below 4 or powers
// of two (no Barrett64 constants) take the scalar code for the variable products.
#include "math/avx512_util.hpp"

#include <algorithm>

#include "math/vec_simd.hpp"

namespace ember::detail {

namespace {

using namespace avx512;

/// A 128-bit value per lane as H * 2^64 + M * 2^32 + L (M, H: sums of partial products, not single words).
struct Wide {
    __m512i L, M, H;
};

/// a * b for a, b < 2^61 (the middle products lh, hl are below 2^61 each).
inline Wide product(__m512i a, __m512i b) {
    const __m512i ah = _mm512_srli_epi64(a, 32), bh = _mm512_srli_epi64(b, 32);
    const __m512i ll = _mm512_mul_epu32(a, b), lh = _mm512_mul_epu32(a, bh);
    const __m512i hl = _mm512_mul_epu32(ah, b), hh = _mm512_mul_epu32(ah, bh);
    return {ll, _mm512_add_epi64(lh, hl), hh};
}

/// x.L += v, the carry into x.H.
inline void add_low(Wide& x, __m512i v, __m512i one) {
    x.L = _mm512_add_epi64(x.L, v);
    x.H = _mm512_mask_add_epi64(x.H, _mm512_cmplt_epu64_mask(x.L, v), x.H, one);
}

/// x += a * b.
inline void mac(Wide& x, __m512i a, __m512i b, __m512i one) {
    const Wide p = product(a, b);
    add_low(x, p.L, one);
    x.M = _mm512_add_epi64(x.M, p.M);
    x.H = _mm512_add_epi64(x.H, p.H);
}

/// hi64(x * c) or 1 below it, for x, c < 2^63 (ch = c >> 32): the two middle products (each below 2^63) are summed
/// before their shift, so only ll and the low half of that sum are dropped.
inline __m512i mulhi_est63(__m512i x, __m512i c, __m512i ch) {
    const __m512i xh = _mm512_srli_epi64(x, 32);
    const __m512i mid = _mm512_add_epi64(_mm512_mul_epu32(xh, c), _mm512_mul_epu32(x, ch));
    return _mm512_add_epi64(_mm512_mul_epu32(xh, ch), _mm512_srli_epi64(mid, 32));
}

/// The Barrett64 constants in lanes. BIG: s >= 32 (q >= 2^33).
template <bool BIG>
struct BarrettV {
    __m512i q, q2, q4, mu, muh, sh_hi, sh_mid, mask32, one;
    explicit BarrettV(const Barrett64& br)
        : q(bcast(br.q)), q2(bcast(2 * br.q)), q4(bcast(4 * br.q)), mu(bcast(br.mu)), muh(bcast(br.mu >> 32)),
          sh_hi(bcast(BIG ? 64 - br.s : 32 - br.s)), sh_mid(bcast(BIG ? br.s - 32 : br.s)), mask32(bcast(0xffffffffu)),
          one(bcast(1)) {}

    /// c1 = floor(x / 2^s) (returned) and lo = x mod 2^64, for x = H 2^64 + M 2^32 + L < 2^(64+s) with
    /// M < 2^64 - 2^32. With y = floor(x / 2^32) = H 2^32 + m1, m1 = M + (L >> 32):
    ///   BIG:   c1 = floor(y / 2^(s-32)) = H 2^(64-s) + (m1 >> (s-32))   (2^(s-32) divides H 2^32);
    ///   small: c1 = (y << (32-s)) | ((L mod 2^32) >> s)                  (y < 2^(32+s) <= 2^63).
    __m512i split(const Wide& x, __m512i& lo) const {
        const __m512i m1 = _mm512_add_epi64(x.M, _mm512_srli_epi64(x.L, 32));
        lo = _mm512_add_epi64(x.L, _mm512_slli_epi64(x.M, 32));
        if constexpr (BIG) return _mm512_add_epi64(_mm512_sllv_epi64(x.H, sh_hi), _mm512_srlv_epi64(m1, sh_mid));
        const __m512i y = _mm512_add_epi64(_mm512_slli_epi64(x.H, 32), m1);
        return _mm512_or_si512(_mm512_sllv_epi64(y, sh_hi), _mm512_srlv_epi64(_mm512_and_si512(x.L, mask32), sh_mid));
    }
    /// x mod q for x < q^2: c1 < 2^(bits+2) <= 2^63, so qhat = mulhi_est63(c1, mu) is the Barrett64 estimate (at most 1
    /// below the quotient) or 1 below that: r = lo - qhat q in [0, 3q), then two conditional subtractions.
    __m512i reduce_small(const Wide& x) const {
        __m512i lo;
        const __m512i c1 = split(x, lo);
        const __m512i r = _mm512_sub_epi64(lo, _mm512_mullo_epi64(mulhi_est63(c1, mu, muh), q));
        return reduce_once(reduce_once(r, q2), q);
    }
    /// x mod q for x < 2^(62+bits) = 2^(64+s): the Barrett64 estimate is at most 2 below the quotient (see
    /// vec_dot_scalar), mulhi_est up to 2 below that: r in [0, 5q), then three conditional subtractions.
    __m512i reduce_wide(const Wide& x) const {
        __m512i lo;
        const __m512i c1 = split(x, lo);
        const __m512i r = _mm512_sub_epi64(lo, _mm512_mullo_epi64(mulhi_est(c1, mu, muh), q));
        return reduce_once(reduce_once(reduce_once(r, q4), q2), q);
    }
};

template <bool BIG, bool ACC>
void mul_kernel(u64* out, const u64* a, const u64* b, std::size_t n, const Barrett64& br) {
    const BarrettV<BIG> B(br);
    if constexpr (ACC) {
        map3(out, a, b, out, n, [&](__m512i av, __m512i bv, __m512i cv) {
            Wide x = product(av, bv);
            add_low(x, cv, B.one);  // a * b + acc <= (q-1)^2 + q - 1 < q^2, as in the scalar code
            return B.reduce_small(x);
        });
    } else {
        map2(out, a, b, n, [&](__m512i av, __m512i bv) { return B.reduce_small(product(av, bv)); });
    }
}

/// A constant w with its Shoup companion in lanes.
struct ShoupV {
    __m512i q, q2, w, wp, wph;
    ShoupV(const MulConst& c, const Modulus& m)
        : q(bcast(m.q)), q2(bcast(2 * m.q)), w(bcast(c.w)), wp(bcast(c.wp)), wph(bcast(c.wp >> 32)) {}
    /// x * w mod q in [0, 2q) for any x < 2^64.
    __m512i mul(__m512i x) const { return reduce_once(mul_shoup_lazy4(x, w, wp, wph, q), q2); }
};

/// Terms per reduction of vec_dot: the scalar bound (x < 2^(62+bits)) and M = sum (lh + hl) < 2^64 - 2^32 (see
/// BarrettV::split), with lh + hl <= 2 (2^32 - 1) ((q-1) >> 32) per term.
std::size_t dot_chunk(const Modulus& m) {
    const u128 mid_max = u128(2) * 0xffffffffu * ((m.q - 1) >> 32);
    const std::size_t c = dot_barrett_chunk(m);
    if (mid_max == 0) return c;
    const u128 m_cap = (u128(1) << 64) - (u128(1) << 32) - 1;
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::min<u128>(c, m_cap / mid_max)));
}

// vec_dot: T terms at compile time (T = 0: `terms` at run time, `chunk` terms per reduction).
template <bool BIG, int T>
void dot_kernel(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t chunk,
                std::size_t n, const Barrett64& br) {
    const BarrettV<BIG> B(br);
    const __m512i zero = _mm512_setzero_si512();
    const u64* A[T > 0 ? T : 1];
    const u64* Bp[T > 0 ? T : 1];
    if constexpr (T > 0) for (int t = 0; t < T; ++t) { A[t] = a[t]; Bp[t] = b[t]; }
    for_groups(out, n, [&](std::size_t i, __mmask8 k) {
        Wide x{zero, zero, zero};
        if constexpr (T > 0) {
            for (int t = 0; t < T; ++t)
                mac(x, _mm512_maskz_loadu_epi64(k, A[t] + i), _mm512_maskz_loadu_epi64(k, Bp[t] + i), B.one);
        } else {
            std::size_t used = 0;
            for (std::size_t t = 0; t < terms; ++t) {
                if (used == chunk) { x = Wide{B.reduce_wide(x), zero, zero}; used = 0; }
                mac(x, _mm512_maskz_loadu_epi64(k, a[t] + i), _mm512_maskz_loadu_epi64(k, b[t] + i), B.one);
                ++used;
            }
        }
        return B.reduce_wide(x);
    });
}

template <bool BIG>
void dot_dispatch(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t chunk,
                  std::size_t n, const Barrett64& br) {
    if (terms <= chunk) {
        switch (terms) {
            case 1: return dot_kernel<BIG, 1>(out, a, b, terms, chunk, n, br);
            case 2: return dot_kernel<BIG, 2>(out, a, b, terms, chunk, n, br);
            case 3: return dot_kernel<BIG, 3>(out, a, b, terms, chunk, n, br);
            case 4: return dot_kernel<BIG, 4>(out, a, b, terms, chunk, n, br);
            default: break;
        }
    }
    dot_kernel<BIG, 0>(out, a, b, terms, chunk, n, br);
}

}  // namespace

// ---- additive kernels (any q < 2^63) -------------------------------------------------------------------------------

void vec_add_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const __m512i q = bcast(m.q);
    map2(out, a, b, n, [&](__m512i x, __m512i y) { return reduce_once(_mm512_add_epi64(x, y), q); });
}
void vec_sub_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const __m512i q = bcast(m.q);
    map2(out, a, b, n, [&](__m512i x, __m512i y) { return reduce_once(_mm512_sub_epi64(_mm512_add_epi64(x, q), y), q); });
}
void vec_neg_avx512(u64* out, const u64* a, std::size_t n, const Modulus& m) {
    const __m512i q = bcast(m.q);
    map1(out, a, n, [&](__m512i x) { return _mm512_maskz_sub_epi64(_mm512_test_epi64_mask(x, x), q, x); });
}
void vec_add_const_avx512(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m) {
    const __m512i q = bcast(m.q);
    const __m512i cv = bcast(c);
    map1(out, a, n, [&](__m512i x) { return reduce_once(_mm512_add_epi64(x, cv), q); });
}

// ---- products (any q < 2^61) ---------------------------------------------------------------------------------------

void vec_mul_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const Barrett64 br(m);
    if (!br.ok) return vec_mul_scalar(out, a, b, n, m);
    if (br.s >= 32) mul_kernel<true, false>(out, a, b, n, br);
    else mul_kernel<false, false>(out, a, b, n, br);
}
void vec_mul_add_avx512(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const Barrett64 br(m);
    if (!br.ok) return vec_mul_add_scalar(acc, a, b, n, m);
    if (br.s >= 32) mul_kernel<true, true>(acc, a, b, n, br);
    else mul_kernel<false, true>(acc, a, b, n, br);
}
void vec_mul_const_avx512(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const ShoupV k(c, m);
    map1(out, a, n, [&](__m512i x) { return reduce_once(k.mul(x), k.q); });
}
void vec_mul_const_add_avx512(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const ShoupV k(c, m);
    map2(out, a, out, n, [&](__m512i x, __m512i o) {
        return reduce_once(reduce_once(_mm512_add_epi64(k.mul(x), o), k.q2), k.q);  // [0, 3q) -> [0, q)
    });
}
void vec_sub_mul_const_avx512(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    const ShoupV k(c, m);
    map2(out, a, b, n, [&](__m512i x, __m512i y) {
        return reduce_once(k.mul(_mm512_sub_epi64(_mm512_add_epi64(x, k.q), y)), k.q);  // a + q - b in (0, 2q)
    });
}

void vec_dot_avx512(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    if (terms == 0) return;  // as the plain loop: nothing is written
    const Barrett64 br(m);
    if (!br.ok) return vec_dot_scalar(out, a, b, terms, n, m);
    const std::size_t chunk = dot_chunk(m);
    if (br.s >= 32) dot_dispatch<true>(out, a, b, terms, chunk, n, br);
    else dot_dispatch<false>(out, a, b, terms, chunk, n, br);
}

}  // namespace ember::detail
