// The fast scalar NTT (math/ntt.hpp's convention, bit-identical to ntt_forward_reference / ntt_inverse_reference).
//
// Included by math/ntt_scalar.cpp only (built with the baseline flags). Everything below sits in an anonymous
// namespace and calls no inline function with external linkage (mulhi64, mul_shoup_lazy, std::min ...), so that a
// copy compiled with other instruction-set flags could include it without an ODR clash (such a copy, for
// x86-64-v3, was measured no faster and removed).
//
// The transform: (N/2) log N butterflies, each a Shoup product (three 64-bit multiplications; a core has one
// multiplier, so about 3 cycles per butterfly is the floor) and a few additions.
//  * Harvey's lazy butterflies, with bounds chosen so that few corrections remain (see the kernels): the forward
//    (Cooley-Tukey) passes keep the coefficients in [0, 8q), the inverse (Gentleman-Sande) ones in [0, 4q).
//  * Radix-4 passes: two stages per pass over the data (each element loaded and stored once per two stages).
//  * Depth first: a radix-4 pass over a span S > kBlock is followed (forward) / preceded (inverse) by the
//    transforms of its four quarters, recursively, so a span of 2^14 coefficients (128 KiB) is worked on while it
//    sits in L2, and spans of at most kBlock coefficients run all their remaining stages inside L1. A limb of
//    2^16 coefficients thus goes through L3 about once per direction instead of log N = 16 times.
//  * The last two forward stages are fused with the final reduction to [0, q); the inverse's last stage (distance
//    N/2, twiddle ipsi_rev[1]) multiplies by N^-1 and ipsi_rev[1] N^-1 instead of a separate scaling pass (N/2
//    products instead of N).
//  * x86-64: the conditional subtractions are sub + cmov in inline assembly (GCC makes branches of some of them,
//    mispredicted half the time on uniform residues); elsewhere plain C++.
#include <cstddef>
#include <cstdint>

#include "math/ntt.hpp"

namespace ember::detail {
namespace {
namespace scalar_ntt {

using W64 = std::uint64_t;
using W128 = unsigned __int128;
using Size = std::size_t;

/// Coefficients per in-cache block (at most 16 KiB of data, plus as much twiddle data streaming past it): spans up
/// to this size run all their remaining stages breadth first.
constexpr Size kBlock = Size(1) << 11;

#define EMBER_NTT_INLINE inline __attribute__((always_inline))

// The high half of a 64 x 64-bit product. Deliberately the one-operand mul in both copies: BMI2's mulx (inline
// assembly; GCC turns _mulx_u64 back into mul) measured 20-30% slower in these kernels on Zen 3.
EMBER_NTT_INLINE W64 hi64(W64 a, W64 b) { return static_cast<W64>((static_cast<W128>(a) * b) >> 64); }
/// a * w mod q in [0, 2q) for any a < 2^64 (Shoup; wp = floor(w 2^64 / q)).
EMBER_NTT_INLINE W64 mul_lazy(W64 a, W64 w, W64 wp, W64 q) { return a * w - hi64(a, wp) * q; }
/// x - m if x >= m, else x. On x86-64 as sub + cmov in inline assembly: GCC turns some of these selections into
/// branches, which the data (uniform residues) mispredicts half the time.
EMBER_NTT_INLINE W64 csub(W64 x, W64 m) {
#if defined(__x86_64__)
    W64 d = x;
    __asm__("sub %2, %1\n\tcmovae %1, %0" : "+r"(x), "+&r"(d) : "r"(m) : "cc");
    return x;
#else
    return x >= m ? x - m : x;
#endif
}
/// x - y if x >= y, else x - y + m (for x, y < m: (x - y) mod m).
EMBER_NTT_INLINE W64 sub_mod(W64 x, W64 y, W64 m) {
#if defined(__x86_64__)
    W64 t;
    __asm__("sub %2, %0\n\tlea (%0,%3), %1\n\tcmovb %1, %0" : "+&r"(x), "=&r"(t) : "r"(y), "r"(m) : "cc");
    return x;
#else
    return x >= y ? x - y : x - y + m;
#endif
}

struct Tw {
    W64 w, wp;
};

/// Per-prime constants. kBig: q >= 2^60, where the bounds leave less room and one more correction per radix-4
/// unit is needed (see the kernels).
struct Mod {
    W64 q, q2, q4, q8;
    explicit Mod(W64 q_) : q(q_), q2(2 * q_), q4(4 * q_), q8(8 * q_) {}
};

// ---- forward (Cooley-Tukey) ----------------------------------------------------------------------------------------
//
// Between passes the coefficients lie in [0, 8q) (8q < 2^64 for q < 2^61). A radix-4 unit (x0, x1, x2, x3) at
// distances h, 2h, 3h: stage 1 pairs (x0, x2) and (x1, x3) with twiddle a, stage 2 (x0, x1) with b and (x2, x3)
// with c; Harvey's butterfly X' = x + v, Y' = x - v + 2q with v = W y mod q in [0, 2q) (Shoup):
//   x0 -> [0, 4q) (one correction), so y0 = x0 + v2 and y2 = x0 - v2 + 2q lie in [0, 6q), and the outputs
//   z = y0 +- u1 (+2q), y2 +- u3 (+2q) in [0, 8q) again. x1 needs no correction: y1 = x1 + v3 and y3 = x1 - v3 + 2q
//   (< 10q) only enter products (Shoup's bound holds for any input below 2^64); 10q < 2^64 needs q < 2^60, so
//   with kBig x1 is corrected as well.
// One correction (two instructions) per four butterflies instead of Harvey's four: the products' three 64-bit
// multiplications compete with the additions for the integer ports, so every instruction saved counts.

/// kFirst: the transform's first pass (inputs in [0, q): no correction); kFinal: its last two stages.
enum class FwdKind { kFirst, kMid, kFinal };

template <bool kBig, FwdKind kKind>
EMBER_NTT_INLINE void fwd4_body(W64* p0, W64* p1, W64* p2, W64* p3, Tw a, Tw b, Tw c, Mod m) {
    constexpr bool kFirst = kKind == FwdKind::kFirst, kFinal = kKind == FwdKind::kFinal;
    const W64 q = m.q, q2 = m.q2;
    W64 x0 = kFirst ? *p0 : csub(*p0, m.q4);
    const W64 x1 = kBig && !kFirst ? csub(*p1, m.q4) : *p1;
    if constexpr (kFinal) x0 = csub(x0, q2);  // [0, 2q): the outputs below then lie in [0, 4q)
    const W64 v2 = mul_lazy(*p2, a.w, a.wp, q), v3 = mul_lazy(*p3, a.w, a.wp, q);
    const W64 y0 = kFinal ? csub(x0 + v2, q2) : x0 + v2;
    const W64 y2 = kFinal ? sub_mod(x0, v2, q2) : x0 - v2 + q2;
    const W64 y1 = x1 + v3, y3 = x1 - v3 + q2;
    const W64 u1 = mul_lazy(y1, b.w, b.wp, q), u3 = mul_lazy(y3, c.w, c.wp, q);
    W64 z0, z1, z2, z3;
    if constexpr (kFinal) {  // the transform's last stage: fully reduced
        z0 = csub(csub(y0 + u1, q2), q);
        z1 = csub(sub_mod(y0, u1, q2), q);
        z2 = csub(csub(y2 + u3, q2), q);
        z3 = csub(sub_mod(y2, u3, q2), q);
    } else {
        z0 = y0 + u1, z1 = y0 - u1 + q2, z2 = y2 + u3, z3 = y2 - u3 + q2;
    }
    *p0 = z0, *p1 = z1, *p2 = z2, *p3 = z3;
}

/// Radix-4 pass (stages t = 2h and h) over `units` consecutive units of 4h coefficients from p; unit k takes the
/// twiddles w1[k] (stage 2h) and w2[2k], w2[2k + 1] (stage h). kFinal (h = 1 only): the last two stages of the
/// transform, reduced to [0, q).
template <bool kBig, FwdKind kKind>
void fwd4_pass(W64* p, Size units, Size h, const W64* w1, const W64* w1p, const W64* w2, const W64* w2p,
               Mod m) {
    if constexpr (kKind == FwdKind::kFinal) {  // h = 1: three twiddles per unit
        (void)h;
        for (Size k = 0; k < units; ++k, p += 4)
            fwd4_body<kBig, kKind>(p, p + 1, p + 2, p + 3, Tw{w1[k], w1p[k]}, Tw{w2[2 * k], w2p[2 * k]},
                                   Tw{w2[2 * k + 1], w2p[2 * k + 1]}, m);
    } else {  // h >= 4 (the passes before the final one have t = 2h = 2^odd)
        for (Size k = 0; k < units; ++k) {
            const Tw a{w1[k], w1p[k]}, b{w2[2 * k], w2p[2 * k]}, c{w2[2 * k + 1], w2p[2 * k + 1]};
            for (W64* const e = p + h; p != e; ++p) fwd4_body<kBig, kKind>(p, p + h, p + 2 * h, p + 3 * h, a, b, c, m);
            p += 3 * h;
        }
    }
}

/// A radix-2 pass (stage t) over `units` consecutive units of 2t coefficients from p, unit k with twiddle w[k]:
/// the odd stage of a block with an odd stage count, run first (in and out as for the radix-4 passes).
template <FwdKind kKind>
void fwd2_pass(W64* p, Size units, Size t, const W64* w, const W64* wp, Mod m) {
    for (Size k = 0; k < units; ++k, p += t) {
        const W64 tw = w[k], twp = wp[k];
        for (W64* const e = p + t; p != e; ++p) {
            const W64 x = kKind == FwdKind::kFirst ? p[0] : csub(p[0], m.q4);  // [0, 4q)
            const W64 v = mul_lazy(p[t], tw, twp, m.q);
            p[0] = x + v, p[t] = x - v + m.q2;  // [0, 6q)
        }
    }
}

/// The only stage of a transform of size 2 (twiddle w[1]), reduced to [0, q).
inline void fwd2_only(W64* p, const W64* w, const W64* wp, Mod m) {
    const W64 x = p[0], v = mul_lazy(p[1], w[1], wp[1], m.q);  // x < q, v < 2q
    p[0] = csub(csub(x + v, m.q2), m.q);
    p[1] = csub(sub_mod(x, v, m.q2), m.q);
}

template <bool kBig>
struct Fwd {
    const W64* w;
    const W64* wp;
    Size n;
    Mod m;

    /// The radix-4 pass of stages t and t/2 over the units of [off, off + span).
    void pass4(W64* a, Size off, Size span, Size t) const {
        const Size g = n / (2 * t) + off / (2 * t), units = span / (2 * t);  // stage t: twiddle w[n/(2t) + unit]
        if (2 * t == n) fwd4_pass<kBig, FwdKind::kFirst>(a + off, units, t / 2, w + g, wp + g, w + 2 * g, wp + 2 * g, m);
        else fwd4_pass<kBig, FwdKind::kMid>(a + off, units, t / 2, w + g, wp + g, w + 2 * g, wp + 2 * g, m);
    }

    /// All stages with 2t <= span on [off, off + span) (the wider ones being done): with an odd stage count a
    /// radix-2 pass first, then radix-4 passes, the last one (t = 2, 1) fused with the final reduction.
    void block(W64* a, Size off, Size span) const {
        if (n == 2) { fwd2_only(a, w, wp, m); return; }
        Size t = span / 2;
        if (__builtin_ctzll(span) & 1) {
            const Size g = n / (2 * t) + off / (2 * t), units = span / (2 * t);
            if (span == n) fwd2_pass<FwdKind::kFirst>(a + off, units, t, w + g, wp + g, m);
            else fwd2_pass<FwdKind::kMid>(a + off, units, t, w + g, wp + g, m);
            t /= 2;
        }
        for (; t >= 4; t /= 4) pass4(a, off, span, t);
        const Size g = n / 4 + off / 4;  // t == 2: the last two stages
        fwd4_pass<kBig, FwdKind::kFinal>(a + off, span / 4, 1, w + g, wp + g, w + 2 * g, wp + 2 * g, m);
    }

    /// The stages with 2t <= span on [off, off + span): a radix-4 pass over it, then its four quarters (depth
    /// first), down to spans of kBlock.
    void rec(W64* a, Size off, Size span) const {
        if (span <= kBlock) { block(a, off, span); return; }
        pass4(a, off, span, span / 2);
        const Size s4 = span / 4;
        for (int k = 0; k < 4; ++k) rec(a, off + k * s4, s4);
    }
};

// ---- inverse (Gentleman-Sande) -------------------------------------------------------------------------------------
//
// Between passes the coefficients lie in [0, 4q). A radix-4 unit (x0, x1, x2, x3) at distances t, 2t, 3t: stage 1
// pairs (x0, x1) with twiddle a and (x2, x3) with b, stage 2 (x0, x2) and (x1, x3) with c; the butterfly is
// X' = x + y, Y' = W (x - y + B) (Shoup, [0, 2q)) where B bounds y:
//   y0 = x0 + x1 and y2 lie in [0, 8q), z0 = y0 + y2 in [0, 16q) is brought back to [0, 4q) with two corrections,
//   and z1 = y1 + y3 (two products) lies in [0, 4q) as it is. 16q <= 2^64 needs q <= 2^60; with kBig, y0 and y2
//   are corrected to [0, 4q) first and z0 (< 8q) once.
// The first pass sees inputs in [0, q) (z0 < 4q, no correction); the last stage (distance N/2, only twiddle
// ipsi_rev[1]) multiplies by N^-1 and ipsi_rev[1] N^-1 and reduces to [0, q).

enum class InvKind { kFirst, kMid, kLast };

template <bool kBig, InvKind kKind>
EMBER_NTT_INLINE void inv4_body(W64* p0, W64* p1, W64* p2, W64* p3, Tw a, Tw b, Tw c, Tw ni, Mod m) {
    const W64 q = m.q;
    const W64 x0 = *p0, x1 = *p1, x2 = *p2, x3 = *p3;
    constexpr bool kFirst = kKind == InvKind::kFirst, kSmallY = kBig || kFirst;  // y0, y2 < 4q
    const W64 bx = kFirst ? q : m.q4;  // bound of the inputs
    W64 y0 = x0 + x1, y2 = x2 + x3;
    const W64 y1 = mul_lazy(x0 - x1 + bx, a.w, a.wp, q), y3 = mul_lazy(x2 - x3 + bx, b.w, b.wp, q);
    if constexpr (kBig && !kFirst) y0 = csub(y0, m.q4), y2 = csub(y2, m.q4);
    const W64 by = kSmallY ? m.q4 : m.q8;  // bound of y0, y2
    if constexpr (kKind == InvKind::kLast) {
        *p0 = csub(mul_lazy(y0 + y2, ni.w, ni.wp, q), q);
        *p1 = csub(mul_lazy(y1 + y3, ni.w, ni.wp, q), q);
        *p2 = csub(mul_lazy(y0 - y2 + by, c.w, c.wp, q), q);
        *p3 = csub(mul_lazy(y1 - y3 + m.q2, c.w, c.wp, q), q);
    } else {
        W64 z0 = y0 + y2;  // < 2 by
        if constexpr (!kFirst) {
            if constexpr (!kSmallY) z0 = csub(z0, m.q8);
            z0 = csub(z0, m.q4);
        }
        *p0 = z0;
        *p1 = y1 + y3;
        *p2 = mul_lazy(y0 - y2 + by, c.w, c.wp, q);
        *p3 = mul_lazy(y1 - y3 + m.q2, c.w, c.wp, q);
    }
}

/// Radix-4 pass (stages t and 2t) over `units` consecutive units of 4t coefficients from p; unit k takes the
/// twiddles w1[2k], w1[2k + 1] (stage t) and w2[k] (stage 2t); kLast: c and ni instead (one unit).
template <bool kBig, InvKind kKind>
void inv4_pass(W64* p, Size units, Size t, const W64* w1, const W64* w1p, const W64* w2, const W64* w2p, Tw c,
               Tw ni, Mod m) {
    constexpr bool kLast = kKind == InvKind::kLast;
    if (t == 1) {
        for (Size k = 0; k < units; ++k, p += 4)
            inv4_body<kBig, kKind>(p, p + 1, p + 2, p + 3, Tw{w1[2 * k], w1p[2 * k]},
                                   Tw{w1[2 * k + 1], w1p[2 * k + 1]}, kLast ? c : Tw{w2[k], w2p[k]}, ni, m);
    } else if (t == 2) {
        for (Size k = 0; k < units; ++k, p += 8) {
            const Tw a{w1[2 * k], w1p[2 * k]}, b{w1[2 * k + 1], w1p[2 * k + 1]}, cc = kLast ? c : Tw{w2[k], w2p[k]};
            inv4_body<kBig, kKind>(p, p + 2, p + 4, p + 6, a, b, cc, ni, m);
            inv4_body<kBig, kKind>(p + 1, p + 3, p + 5, p + 7, a, b, cc, ni, m);
        }
    } else {
        for (Size k = 0; k < units; ++k) {
            const Tw a{w1[2 * k], w1p[2 * k]}, b{w1[2 * k + 1], w1p[2 * k + 1]}, cc = kLast ? c : Tw{w2[k], w2p[k]};
            for (W64* const e = p + t; p != e; ++p) inv4_body<kBig, kKind>(p, p + t, p + 2 * t, p + 3 * t, a, b, cc, ni, m);
            p += 3 * t;
        }
    }
}

/// The first stage alone (t = 1, when the stage count of the block is odd; inputs in [0, q), outputs in [0, 2q)).
/// kLast: n == 2, the only stage (c: ipsi_rev[1] N^-1).
template <bool kLast>
void inv2_first(W64* p, Size pairs, const W64* w, const W64* wp, Tw c, Tw ni, Mod m) {
    const W64 q = m.q;
    for (Size k = 0; k < pairs; ++k, p += 2) {
        const W64 x = p[0], y = p[1];
        if constexpr (kLast) {
            p[0] = csub(mul_lazy(x + y, ni.w, ni.wp, q), q);
            p[1] = csub(mul_lazy(x - y + q, c.w, c.wp, q), q);
        } else {
            p[0] = x + y;
            p[1] = mul_lazy(x - y + q, w[k], wp[k], q);
        }
    }
}

template <bool kBig>
struct Inv {
    const W64* w;
    const W64* wp;
    Size n;
    Mod m;
    Tw ni, last;  // N^-1 and ipsi_rev[1] N^-1 with their companions

    /// The radix-4 pass of stages t and 2t over the units of [off, off + span).
    template <InvKind kKind>
    void pass4(W64* a, Size off, Size span, Size t) const {
        const Size g = n / (2 * t) + off / (2 * t);  // stage t: twiddles w[n/(2t) + 2 unit (+1)]
        inv4_pass<kBig, kKind>(a + off, span / (4 * t), t, w + g, wp + g, w + g / 2, wp + g / 2, last, ni, m);
    }
    void pass4(W64* a, Size off, Size span, Size t) const {
        if (4 * t == n) pass4<InvKind::kLast>(a, off, span, t);
        else pass4<InvKind::kMid>(a, off, span, t);
    }

    /// All stages with 2t <= span on [off, off + span) (the narrower ones being done: none, the transform starts
    /// here).
    void block(W64* a, Size off, Size span) const {
        Size t = 1;
        if (__builtin_ctzll(span) & 1) {  // odd stage count: t = 1 alone first
            const Size g = n / 2 + off / 2;
            if (n == 2) inv2_first<true>(a + off, 1, w + g, wp + g, last, ni, m);
            else inv2_first<false>(a + off, span / 2, w + g, wp + g, last, ni, m);
            t = 2;
        } else if (n == 4) {
            pass4<InvKind::kLast>(a, off, span, 1);
            return;
        } else {
            pass4<InvKind::kFirst>(a, off, span, 1);
            t = 4;
        }
        for (; 2 * t < span; t *= 4) pass4(a, off, span, t);
    }

    /// The stages with 2t <= span on [off, off + span): its four quarters (depth first, down to spans of kBlock),
    /// then a radix-4 pass over it.
    void rec(W64* a, Size off, Size span) const {
        if (span <= kBlock) { block(a, off, span); return; }
        const Size s4 = span / 4;
        for (int k = 0; k < 4; ++k) rec(a, off + k * s4, s4);
        pass4(a, off, span, s4);
    }
};

constexpr W64 kBigQ = W64(1) << 60;

EMBER_NTT_INLINE void forward(W64* a, const NttTables& tb) {
    const W64 q = tb.mod.q;
    if (q >= kBigQ) Fwd<true>{tb.psi_rev.data(), tb.psi_rev_shoup.data(), tb.n, Mod(q)}.rec(a, 0, tb.n);
    else Fwd<false>{tb.psi_rev.data(), tb.psi_rev_shoup.data(), tb.n, Mod(q)}.rec(a, 0, tb.n);
}

EMBER_NTT_INLINE void inverse(W64* a, const NttTables& tb) {
    const W64 q = tb.mod.q;
    const Tw ni{tb.n_inv, tb.n_inv_shoup}, last{tb.ipsi1_ninv, tb.ipsi1_ninv_shoup};
    if (q >= kBigQ) Inv<true>{tb.ipsi_rev.data(), tb.ipsi_rev_shoup.data(), tb.n, Mod(q), ni, last}.rec(a, 0, tb.n);
    else Inv<false>{tb.ipsi_rev.data(), tb.ipsi_rev_shoup.data(), tb.n, Mod(q), ni, last}.rec(a, 0, tb.n);
}

#undef EMBER_NTT_INLINE

}  // namespace scalar_ntt
}  // namespace
}  // namespace ember::detail
