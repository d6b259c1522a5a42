// Per-element modular arithmetic of the CUDA backend, written once for the device and the host.
//
// The arithmetic here is EMBER_HD: `__host__ __device__` when compiled by nvcc, plain inline C++ otherwise (only the
// make_* functions, which derive constants from a Modulus, are host-only). The CUDA kernels (backend/cuda/*_impl.cuh,
// compiled as ember_cuda.cu) call it on the device; the host tests (tests/cpp/test_cuda_arith.cpp), built by the
// ordinary C++ compiler with no CUDA toolkit, call the very same code and compare it with the CPU backend bit for
// bit. A GPU is needed only for what the host cannot show: the launches, the memory spaces and the barriers.
//
// Conventions (those of math/modarith.hpp and math/vec_ops.hpp): moduli are odd primes q < 2^61, inputs of the
// element-wise operations lie in [0, q) and every result leaving a kernel is fully reduced to [0, q), as the CPU
// backend's. Only the NTT butterflies (backend/cuda/ntt_rounds.hpp) work on lazy ranges internally.
//
// Techniques:
//  * Shoup's multiplication by a constant w with the precomputed quotient w' = floor(w 2^64 / q) (V. Shoup, NTL's
//    MulModPrecon; analysed by D. Harvey, "Faster arithmetic for number-theoretic transforms", J. Symb. Comp. 60,
//    2014): one high and two low 64-bit products, result in [0, 2q) for any input below 2^64.
//  * Barrett's reduction (P. Barrett, CRYPTO '86) of 128-bit values, in two forms: a one-word constant
//    mu = floor(2^(64+s) / q) for products of two residues (x < q^2), and the two-word mu = floor(2^128 / q) of
//    math/modarith.hpp's Modulus for any 128-bit value (the sums of the inner products and base conversions).
//  * Sums of products are accumulated exactly in 128 bits and reduced once (a "lazy" reduction; cf. the KSKInnerProd
//    of Agrawal et al., "MAD: memory-aware design techniques for accelerating FHE", MICRO 2023, and Jung et al.,
//    "Over 100x faster bootstrapping in FHE through memory-centric optimization with GPUs", TCHES 2021).
//  * On the device the 64 x 64 -> 128-bit product is __umul64hi plus the ordinary low product (the device has no
//    native 128-bit integer type worth using); on the host unsigned __int128.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "math/modarith.hpp"

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

// EMBER_DEVICE_CODE: true while nvcc compiles the device side of a translation unit (in the host pass, and for the
// plain C++ compiler, the host definitions are used).
#if defined(__CUDA_ARCH__)
#define EMBER_DEVICE_CODE 1
#else
#define EMBER_DEVICE_CODE 0
#endif

namespace ember::cuda {

using u64 = std::uint64_t;
using u32 = std::uint32_t;

// ---- 64-bit words ----------------------------------------------------------------------------------------------

/// The high word of the 128-bit product a * b.
EMBER_HD inline u64 mulhi(u64 a, u64 b) {
#if EMBER_DEVICE_CODE
    return __umul64hi(a, b);
#else
    return static_cast<u64>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

/// *p through the read-only data cache on the device (tables every thread reads: twiddles, constants).
EMBER_HD inline u64 load_ro(const u64* p) {
#if EMBER_DEVICE_CODE
    return __ldg(p);
#else
    return *p;
#endif
}

/// x - m if x >= m, else x (one conditional subtraction: brings [0, 2m) to [0, m)).
EMBER_HD inline u64 csub(u64 x, u64 m) { return x >= m ? x - m : x; }

/// (a + b) mod q for a, b in [0, q).
EMBER_HD inline u64 add_mod(u64 a, u64 b, u64 q) { return csub(a + b, q); }
/// (a - b) mod q for a, b in [0, q).
EMBER_HD inline u64 sub_mod(u64 a, u64 b, u64 q) { return csub(a + q - b, q); }
/// -a mod q for a in [0, q).
EMBER_HD inline u64 neg_mod(u64 a, u64 q) { return a != 0 ? q - a : 0; }

// Balanced digits (Backend::signed_digits; backend.cpp's signed_digits_host is the reference): the centered value of
// a residue, then one digit r in [-B/2, B/2) of B = 2^digit_bits at a time, as a residue mod q (|r| < q).
EMBER_HD inline long long centered_of(u64 v, u64 q) { return v > q / 2 ? static_cast<long long>(v) - static_cast<long long>(q) : static_cast<long long>(v); }
EMBER_HD inline u64 signed_digit_step(long long& rest, int digit_bits, u64 q) {
    const long long B = 1LL << digit_bits;
    long long r = rest & (B - 1);
    if (r >= B / 2) r -= B;
    rest = (rest - r) >> digit_bits;  // exact: rest - r is a multiple of B
    return r >= 0 ? static_cast<u64>(r) : q - static_cast<u64>(-r);
}

/// a * w mod q in [0, 2q) for any a < 2^64, w < q and wp = floor(w 2^64 / q) (Shoup). The quotient estimate
/// floor(a wp / 2^64) is the true quotient floor(a w / q) or one less, so a w - estimate * q, computed modulo 2^64,
/// is the remainder or the remainder plus q.
EMBER_HD inline u64 mul_shoup_lazy(u64 a, u64 w, u64 wp, u64 q) { return a * w - mulhi(a, wp) * q; }
/// a * w mod q in [0, q) (Shoup, corrected once).
EMBER_HD inline u64 mul_shoup(u64 a, u64 w, u64 wp, u64 q) { return csub(mul_shoup_lazy(a, w, wp, q), q); }

// ---- 128-bit accumulators --------------------------------------------------------------------------------------

/// An unsigned 128-bit value as two words (the device has no fast native type for it).
struct U128 {
    u64 lo = 0, hi = 0;
};

/// The full product a * b.
EMBER_HD inline U128 mul_wide(u64 a, u64 b) { return U128{a * b, mulhi(a, b)}; }

/// acc += a * b (modulo 2^128; callers keep the sums below 2^128).
EMBER_HD inline void mac(U128& acc, u64 a, u64 b) {
    const u64 lo = a * b, hi = mulhi(a, b);
    acc.lo += lo;
    acc.hi += hi + (acc.lo < lo ? 1 : 0);  // the carry out of the low word
}

/// acc += x.
EMBER_HD inline void add_word(U128& acc, u64 x) {
    acc.lo += x;
    acc.hi += acc.lo < x ? 1 : 0;
}

// ---- Barrett reduction -----------------------------------------------------------------------------------------

/// Barrett constants for products of two residues: x mod q for x < q^2 with one high product.
/// s = bits(q) - 2 and mu = floor(2^(64+s) / q) (< 2^64 since 2^s < q). For x < q^2 < 2^(2 bits):
///   x >> s < 2^(bits+2) fits a word, and the estimate floor((x >> s) mu / 2^64) is below the quotient by less than
///   x / 2^(64+s) + 2^s / q + 1 < 1/2 + 1/2 + 1 (q > 2^(bits-1), bits <= 61), i.e. by at most one: one correction.
/// This is the CPU's Barrett64 (math/vec_simd.hpp); q must be at least 4 and not a power of two (Ember's moduli are
/// primes of at least 20 bits).
struct Barrett {
    u64 q = 0, mu = 0;
    u32 s = 0;
};

/// x mod q for x < q^2 (x given as hi:lo), in [0, q).
EMBER_HD inline u64 barrett_reduce(U128 x, const Barrett& b) {
    // x >> s on the two words (1 <= s <= 59)
    const u64 xs = (x.hi << (64 - b.s)) | (x.lo >> b.s);
    return csub(x.lo - mulhi(xs, b.mu) * b.q, b.q);
}

/// a * b mod q for a, b in [0, q).
EMBER_HD inline u64 mul_mod(u64 a, u64 b, const Barrett& br) { return barrett_reduce(mul_wide(a, b), br); }

/// (acc + a * b) mod q for acc, a, b in [0, q): (q - 1)^2 + (q - 1) < q^2, so one reduction covers the sum
/// (as the CPU's vec_mul_add).
EMBER_HD inline u64 mul_add_mod(u64 acc, u64 a, u64 b, const Barrett& br) {
    U128 x = mul_wide(a, b);
    add_word(x, acc);
    return barrett_reduce(x, br);
}

/// The constants of a modulus (host side; q >= 4, not a power of two). floor(2^128 / q) >> (64 - s) is
/// floor(2^(64+s) / q).
inline Barrett make_barrett(const Modulus& m) {
    const u32 s = static_cast<u32>(m.bits - 2);
    return Barrett{m.q, (m.mu_hi << s) | (m.mu_lo >> (64 - s)), s};
}

/// Barrett constants for any 128-bit value: mu = floor(2^128 / q) = mu_hi 2^64 + mu_lo (math/modarith.hpp's
/// Modulus holds the same two words).
struct WideBarrett {
    u64 q = 0, mu_hi = 0, mu_lo = 0;
};

inline WideBarrett make_wide_barrett(const Modulus& m) { return WideBarrett{m.q, m.mu_hi, m.mu_lo}; }

/// x mod q for any x < 2^128, in [0, q). The quotient estimate floor(x mu / 2^128) is computed exactly from the
/// partial products of x and mu (the middle sum carried in full). Since mu > 2^128 / q - 1 and x < 2^128,
/// x mu / 2^128 > x / q - 1: the estimate is floor(x / q) or one less, and one correction finishes. Only the low
/// word of the estimate is needed: the remainder x - estimate * q is below 2q < 2^64, exact modulo 2^64.
EMBER_HD inline u64 wide_reduce(U128 x, const WideBarrett& b) {
    // x mu = xh mh 2^128 + (xh ml + xl mh) 2^64 + xl ml; the estimate is its high part (bits 128 and up).
    const U128 ll = mul_wide(x.lo, b.mu_lo);
    const U128 lh = mul_wide(x.lo, b.mu_hi);
    const U128 hl = mul_wide(x.hi, b.mu_lo);
    // middle = lh + hl + ll.hi, a 130-bit sum: its low word is dropped, its carries go into the estimate
    u64 mid = lh.lo + ll.hi;
    u64 carry = mid < ll.hi ? 1 : 0;
    mid += hl.lo;
    carry += mid < hl.lo ? 1 : 0;
    const u64 est = x.hi * b.mu_hi + lh.hi + hl.hi + carry;  // low word of the estimate (mod 2^64)
    return csub(x.lo - est * b.q, b.q);
}

// ---- element-wise kernels (Backend::add, sub, neg, mul, mul_add, mul_const, add_const, sub_mul_const) -------

/// The element-wise operations of the backend interface.
enum class EwOp : int { kAdd, kSub, kNeg, kMul, kMulAdd, kMulConst, kMulConstAdd, kAddConst, kSubMulConst };

/// The per-limb constants of an element-wise operation: the modulus with its Barrett constants, and the constant
/// operand (w with its Shoup companion wp for the products by a constant; w alone for kAddConst).
struct EwConsts {
    Barrett br;
    u64 w = 0, wp = 0;
};

/// One output word of operation kOp: a, b the operands' words, o the output's current word (read by the
/// accumulating operations only). All in [0, q); the result too, as the CPU backend's (math/vec_ops.hpp).
template <EwOp kOp>
EMBER_HD inline u64 ew_apply(u64 a, u64 b, u64 o, const EwConsts& c) {
    const u64 q = c.br.q;
    if constexpr (kOp == EwOp::kAdd) return add_mod(a, b, q);
    else if constexpr (kOp == EwOp::kSub) return sub_mod(a, b, q);
    else if constexpr (kOp == EwOp::kNeg) return neg_mod(a, q);
    else if constexpr (kOp == EwOp::kMul) return mul_mod(a, b, c.br);
    else if constexpr (kOp == EwOp::kMulAdd) return mul_add_mod(o, a, b, c.br);
    else if constexpr (kOp == EwOp::kMulConst) return mul_shoup(a, c.w, c.wp, q);
    else if constexpr (kOp == EwOp::kMulConstAdd) return add_mod(o, mul_shoup(a, c.w, c.wp, q), q);
    else if constexpr (kOp == EwOp::kAddConst) return add_mod(a, c.w, q);
    else return mul_shoup(a + q - b, c.w, c.wp, q);  // kSubMulConst: a - b + q in [0, 2q) enters the Shoup product
}

/// Whether kOp reads its second operand b / the output's current word.
EMBER_HD constexpr bool ew_reads_b(EwOp op) { return op == EwOp::kAdd || op == EwOp::kSub || op == EwOp::kMul ||
                                                     op == EwOp::kMulAdd || op == EwOp::kSubMulConst; }
EMBER_HD constexpr bool ew_reads_out(EwOp op) { return op == EwOp::kMulAdd || op == EwOp::kMulConstAdd; }

// ---- key-switch inner product (Backend::dot) -------------------------------------------------------------------

/// Products summed in one 128-bit accumulator before a reduction: 63 products below 2^122 (q < 2^61) plus the
/// residue of the previous chunk stay below 2^128.
constexpr std::size_t kWideTerms = 63;

/// sum_t a[t][i] * b[t][i] mod q for one coefficient i (Backend::dot / vec_dot): the products are summed exactly in
/// 128 bits and reduced once per kWideTerms terms (once for every inner product Ember forms). a[t], b[t]: limbs of
/// one prime, values in [0, q). Any positive number of terms.
EMBER_HD inline u64 dot_coeff(const u64* const* a, const u64* const* b, std::size_t terms, std::size_t i,
                             const WideBarrett& wb) {
    u64 r = 0;
    for (std::size_t t0 = 0; t0 < terms; t0 += kWideTerms) {
        const std::size_t t1 = t0 + kWideTerms < terms ? t0 + kWideTerms : terms;
        U128 acc{r, 0};
        for (std::size_t t = t0; t < t1; ++t) mac(acc, a[t][i], b[t][i]);
        r = wide_reduce(acc, wb);
    }
    return r;
}

/// dot_coeff for two inner products over the same terms a (Backend::dot2): each a[t][i] is read once and enters both
/// sums; r0 = sum_t a[t][i] b0[t][i], r1 = sum_t a[t][i] b1[t][i], both in [0, q), the very words of two dot_coeffs.
EMBER_HD inline void dot2_coeff(const u64* const* a, const u64* const* b0, const u64* const* b1, std::size_t terms,
                                std::size_t i, const WideBarrett& wb, u64& r0, u64& r1) {
    r0 = 0, r1 = 0;
    for (std::size_t t0 = 0; t0 < terms; t0 += kWideTerms) {
        const std::size_t t1 = t0 + kWideTerms < terms ? t0 + kWideTerms : terms;
        U128 acc0{r0, 0}, acc1{r1, 0};
        for (std::size_t t = t0; t < t1; ++t) {
            const u64 x = a[t][i];
            mac(acc0, x, b0[t][i]);
            mac(acc1, x, b1[t][i]);
        }
        r0 = wide_reduce(acc0, wb);
        r1 = wide_reduce(acc1, wb);
    }
}

// ---- fast base conversion (Backend::base_convert) --------------------------------------------------------------
//
// For x with residues x_i over B = {q_0 .. q_{k-1}} (math/rns.hpp's BaseConverter; Bajard et al., SAC 2016, and
// Halevi-Polyakov-Shoup, CT-RSA 2019, for the centered variant):
//   y_i = [x_i Q~_i]_{q_i}                       (Shoup, the constant Q~_i = (Q / q_i)^-1 mod q_i)
//   out_j = sum_i y_i [Q / q_i]_{p_j} (+ v (p_j - [Q]_{p_j}) when centered)   mod p_j
// with the sum of at most k + 1 products accumulated in 128 bits and reduced once (per kWideTerms terms), and
// v = round(sum_i y_i / q_i) computed in double precision exactly as BaseConverter::scale_block does.

/// y_i = [x_i Q~_i]_{q_i}.
EMBER_HD inline u64 base_convert_scale(u64 x, u64 w, u64 wp, u64 q) { return mul_shoup(x, w, wp, q); }

/// The running sum f + y / q_i of the centered correction, rounded exactly as the CPU rounds it: the product and the
/// sum each rounded to nearest, never fused into one FMA (the CPU's scalar code is built without FMA and its AVX2
/// and IFMA kernels keep the two roundings apart). nvcc would contract `f + a * b` into an FMA, so the device uses
/// the explicitly rounded intrinsics; the host keeps scale_block's expression, which the host compiler treats as
/// it treats the CPU backend's own code.
EMBER_HD inline double centered_step(double f, u64 y, double inv_q) {
#if EMBER_DEVICE_CODE
    return __dadd_rn(f, __dmul_rn(__ull2double_rn(y), inv_q));
#else
    return f + static_cast<double>(y) * inv_q;
#endif
}

/// v = llround(f) for the centered correction (f >= 0, f <= k): the nearest integer, halves away from zero, as
/// std::llround.
EMBER_HD inline u64 centered_round(double f) {
#if EMBER_DEVICE_CODE
    return static_cast<u64>(llround(f));
#else
    return static_cast<u64>(std::llround(f));
#endif
}

/// One output residue of the conversion: (sum_i y[i * y_stride] * qhat[i] + v * negq) mod p for k terms, where
/// y_i < q_i < 2^61 (not reduced mod p: the product is below 2^122 all the same), qhat[i] = [Q / q_i]_p,
/// negq = p - [Q]_p (or 0) and v = 0 for the plain conversion.
EMBER_HD inline u64 base_convert_output(const u64* y, std::size_t y_stride, const u64* qhat, std::size_t k, u64 v,
                                        u64 negq, const WideBarrett& pb) {
    U128 acc{};
    std::size_t in_acc = 0;  // products in acc since the last reduction
    for (std::size_t i = 0; i < k; ++i) {
        if (in_acc == kWideTerms) {
            acc = U128{wide_reduce(acc, pb), 0};
            in_acc = 0;
        }
        mac(acc, y[i * y_stride], qhat[i]);
        ++in_acc;
    }
    // v <= k and negq < p: v negq < 2^68, and 2^128 - 63 2^122 = 2^122 leaves room for it (zero when plain)
    mac(acc, v, negq);
    return wide_reduce(acc, pb);
}

// ---- automorphisms (Backend::permute) --------------------------------------------------------------------------

/// The log_n-bit reversal of x < 2^log_n (log_n >= 1).
EMBER_HD inline u32 bit_reverse(u32 x, int log_n) {
#if EMBER_DEVICE_CODE
    return __brev(x) >> (32 - log_n);
#else
    u32 r = 0;
    for (int b = 0; b < log_n; ++b) r |= ((x >> b) & 1u) << (log_n - 1 - b);
    return r;
#endif
}

/// The evaluation slot that slot i takes under X -> X^k (k odd, below 2N), for math/ntt.hpp's order (slot i holds
/// A(psi^(2 brv(i) + 1))): out[i] = in[automorphism_index(i, k, log_n)], the permutation of
/// RingContext::automorphism_perm, computed on the fly. 2 brv(i) + 1 < 2N and k < 2N, so the product fits 64 bits.
EMBER_HD inline u32 automorphism_index(u32 i, u64 k, int log_n) {
    const u64 two_n_mask = (u64(2) << log_n) - 1;
    const u64 e = ((2 * static_cast<u64>(bit_reverse(i, log_n)) + 1) * k) & two_n_mask;  // odd
    return bit_reverse(static_cast<u32>((e - 1) >> 1), log_n);
}

}  // namespace ember::cuda
