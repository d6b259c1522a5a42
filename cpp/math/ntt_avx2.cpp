// AVX2 negacyclic NTT for q < 2^61 (compiled with -mavx2 -mbmi2 -mfma on x86-64 only; entered only after a CPUID
// check, detail::ntt_avx2_supported).
//
// The arithmetic is the AVX-512F kernel's (math/ntt_avx512.cpp) on four lanes: Shoup products with the quotient
// estimated from three 32 x 32-bit lane products (0, 1 or 2 below, so a product lies in [0, 4q) for any input below
// 2^64) and the low words from vpmuludq + vpmulld (math/avx2_util.hpp). The butterflies and their value states are
// those of the AVX-512F kernel (see there): forward kinds P, Q, C and the last stage; inverse kinds A, B, the first
// stage and the last stage merged with N^-1. AVX2 has no unsigned 64-bit compare, so a conditional subtraction
// picks on the sign of the difference (avx2::reduce_once), exact for every range used here (all below 8q <= 2^64,
// reduced against multiples m <= 4q < 2^63).
//
// The pass schedule (radix-4 passes, depth-first L1 blocks, the in-register stages on 16-coefficient groups) is the
// shared one of math/ntt_schedule.hpp. A 16-coefficient group is four vectors here; its four in-register stages use
// three lane layouts (e = the coefficient's index in the group):
//   natural  V: vector e >> 2, lanes e & 3            stages t = 8 (V0, V2), (V1, V3) and t = 4 (V0, V1), (V2, V3)
//   S:       S0 = (0 1 4 5), S1 = (2 3 6 7), S2 = (8 9 12 13), S3 = (10 11 14 15)   stage t = 2: (S0, S1), (S2, S3)
//   U:       U0 = (0 2 4 6), U1 = (1 3 5 7), U2 = (8 10 12 14), U3 = (9 11 13 15)   stage t = 1: (U0, U1), (U2, U3)
// V <-> S is a 128-bit lane exchange (vperm2i128), S <-> U an unpack of 64-bit words (its own inverse), so the
// twiddles of t = 1 are plain loads of the full tables, those of t = 2 one permute of a load, and t = 8, 4
// broadcasts. This path reads the full twiddle tables only (the compact ones are laid out for 8 lanes).
#include "math/avx2_util.hpp"

#include <utility>

#include "math/ntt_schedule.hpp"
#include "math/ntt_simd.hpp"

namespace ember::detail {

namespace {

using avx2::V;
using Tw = avx2::ShoupV;
using Consts = avx2::ModV;

constexpr int kTailGroups = 2;  // 16-coefficient groups interleaved in the in-register stages (4 vectors each)

inline V ld(const u64* p) { return avx2::load(p); }
inline void st(u64* p, V v) { avx2::store(p, v); }
inline V bc(u64 x) { return avx2::bcast(x); }
inline V add(V a, V b) { return _mm256_add_epi64(a, b); }
inline V sub(V a, V b) { return _mm256_sub_epi64(a, b); }

/// y * w mod q in [0, 4q) for any y < 2^64.
inline V mul_raw(V y, const Tw& tw, const Consts& k) { return avx2::mul_shoup_lazy4(y, tw, k); }
/// [0, 2m) -> [0, m)
inline V reduce(V x, V m) { return avx2::reduce_once(x, m); }
/// y * w mod q in [0, 2q).
inline V mul_clean(V y, const Tw& tw, const Consts& k) { return reduce(mul_raw(y, tw, k), k.q2); }

// ---- forward butterflies (kinds of math/ntt_avx512.cpp) ---------------------------------------------------------
/// Kind P: X clean [0, 2q), Y raw -> both outputs clean in [0, 2q).
inline void fwd_p(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_clean(y, tw, k);
    const V s = add(x, t);
    const V d = sub(x, t);  // in (-2q, 2q)
    x = reduce(s, k.q2);
    y = avx2::add_if_neg(d, k.q2);
}
/// Kind Q: X clean [0, 2q), Y raw -> raw outputs X + T, X - T + 4q (both below 6q).
inline void fwd_q(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_raw(y, tw, k);
    const V x4 = add(x, k.q4);
    x = add(x, t);
    y = sub(x4, t);
}
/// Kind C: X clean [0, 2q), Y raw -> X + T, X - T + 2q clean in [0, 4q).
inline void fwd_c(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_clean(y, tw, k);
    const V x2 = add(x, k.q2);
    x = add(x, t);
    y = sub(x2, t);
}
/// Last stage: X clean [0, 4q), Y raw -> outputs in [0, q).
inline void fwd_last(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = reduce(mul_clean(y, tw, k), k.q);
    const V xr = reduce(reduce(x, k.q2), k.q);
    x = reduce(add(xr, t), k.q);
    y = avx2::add_if_neg(sub(xr, t), k.q);
}

// ---- inverse butterflies ----------------------------------------------------------------------------------------
/// Kind A: both inputs clean in [0, 2q) -> X + Y clean in [0, 2q), W * (X - Y + 2q) raw in [0, 4q).
inline void inv_a(V& x, V& y, const Tw& tw, const Consts& k) {
    const V s = add(x, y);
    const V d = sub(add(x, k.q2), y);
    x = reduce(s, k.q2);
    y = mul_raw(d, tw, k);
}
/// The first stage: inputs in [0, q) -> X + Y in [0, 2q), W * (X - Y + q) raw.
inline void inv_first(V& x, V& y, const Tw& tw, const Consts& k) {
    const V d = sub(add(x, k.q), y);
    x = add(x, y);
    y = mul_raw(d, tw, k);
}
/// Kind B: inputs in [0, 4q) -> same outputs as kind A.
inline void inv_b(V& x, V& y, const Tw& tw, const Consts& k) {
    const V s = add(x, y);
    const V d = sub(add(x, k.q4), y);
    x = reduce(reduce(s, k.q4), k.q2);
    y = mul_raw(d, tw, k);
}
struct LastConsts {
    Tw ni, wn;
    explicit LastConsts(const NttTables& tb) : ni(tb.n_inv, tb.n_inv_shoup), wn(tb.ipsi1_ninv, tb.ipsi1_ninv_shoup) {}
};
/// Last stage (distance N/2) merged with the N^-1 factor: inputs in [0, 4q) -> outputs in [0, q).
inline void inv_last(V& x, V& y, const LastConsts& lc, const Consts& k) {
    const V s = add(x, y);
    const V d = sub(add(x, k.q4), y);
    x = reduce(mul_clean(s, lc.ni, k), k.q);
    y = reduce(mul_clean(d, lc.wn, k), k.q);
}

// ---- lane layouts of a 16-coefficient group ---------------------------------------------------------------------
/// V <-> S (an involution): exchange the upper 128 bits of the first vector of each pair with the lower ones of
/// the second.
inline void swap128(V& a, V& b) {
    const V lo = _mm256_permute2x128_si256(a, b, 0x20);
    const V hi = _mm256_permute2x128_si256(a, b, 0x31);
    a = lo;
    b = hi;
}
/// S <-> U (an involution): even words of the pair to the first vector, odd words to the second.
inline void unpack(V& a, V& b) {
    const V lo = _mm256_unpacklo_epi64(a, b);
    const V hi = _mm256_unpackhi_epi64(a, b);
    a = lo;
    b = hi;
}

/// The twiddles of stage t = 2 for the S layout: W = w[4g .. 4g + 4) gives (w0 w0 w1 w1) for (S0, S1) and
/// (w2 w2 w3 w3) for (S2, S3).
inline Tw tw_s_lo(const u64* w, const u64* wp) {
    return Tw(_mm256_permute4x64_epi64(ld(w), 0x50), _mm256_permute4x64_epi64(ld(wp), 0x50));
}
inline Tw tw_s_hi(const u64* w, const u64* wp) {
    return Tw(_mm256_permute4x64_epi64(ld(w), 0xfa), _mm256_permute4x64_epi64(ld(wp), 0xfa));
}

// ---- forward passes ---------------------------------------------------------------------------------------------

struct Tw4 {  // the three twiddles of a radix-4 block
    Tw w1, w2, w3;
    Tw4(const u64* w, const u64* wp, std::size_t m, std::size_t i)
        : w1(w[m + i], wp[m + i]), w2(w[2 * m + 2 * i], wp[2 * m + 2 * i]), w3(w[2 * m + 2 * i + 1], wp[2 * m + 2 * i + 1]) {}
};

/// The radix-4 units at offsets j (second stage of kind P) and j + t/4 (kind Q) of the block at p.
inline void fwd_radix4_units(u64* p, std::size_t t, std::size_t j, const Tw4& tw, const Consts& k) {
    const std::size_t h = t / 2, qt = t / 4;
    u64* p0 = p + j;
    u64* p1 = p + j + qt;
    V x0 = ld(p0), x1 = ld(p0 + h), x2 = ld(p0 + t), x3 = ld(p0 + t + h);
    V y0 = ld(p1), y1 = ld(p1 + h), y2 = ld(p1 + t), y3 = ld(p1 + t + h);
    fwd_p(x0, x2, tw.w1, k);
    fwd_p(y0, y2, tw.w1, k);
    fwd_q(x1, x3, tw.w1, k);
    fwd_q(y1, y3, tw.w1, k);
    fwd_p(x0, x1, tw.w2, k);
    fwd_q(y0, y1, tw.w2, k);
    fwd_p(x2, x3, tw.w3, k);
    fwd_q(y2, y3, tw.w3, k);
    st(p0, x0), st(p0 + h, x1), st(p0 + t, x2), st(p0 + t + h, x3);
    st(p1, y0), st(p1 + h, y1), st(p1 + t, y2), st(p1 + t + h, y3);
}

/// Stages of distance t and t/2 (t >= 32) on the blocks [i0, i1) of size 2t.
void fwd_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk) {
    const Consts k = kk;  // a local copy stays in registers (stores through u64* may alias kk)
    const std::size_t m = n / (2 * t), qt = t / 4;
    for (std::size_t i = i0; i < i1; ++i) {
        const Tw4 tw(w, wp, m, i);
        u64* p = a + 2 * t * i;
        for (std::size_t j = 0; j < qt; j += 4) fwd_radix4_units(p, t, j, tw, k);
    }
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t.
void fwd_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk) {
    const Consts k = kk;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1(w[m + i], wp[m + i]);
        for (std::size_t j = 0; j < h; j += 4) {
            V x = ld(p + j), y = ld(p + j + t);
            fwd_p(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
        }
        for (std::size_t j = h; j < t; j += 4) {
            V x = ld(p + j), y = ld(p + j + t);
            fwd_q(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
        }
    }
}

/// Stages t = 8, 4, 2, 1 on G groups of 16 coefficients from group g (inputs: X halves clean in [0, 2q), Y halves
/// raw; outputs in [0, q)), interleaved so that independent chains are in flight.
template <int G>
inline void fwd_tail16_step(u64* a, std::size_t n, std::size_t g, const u64* w, const u64* wp, const Consts& k) {
    V v[G][4];
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) v[i][r] = ld(a + 16 * (g + i) + 4 * r);
    for (int i = 0; i < G; ++i) {  // t = 8
        const Tw t8(w[n / 16 + g + i], wp[n / 16 + g + i]);
        fwd_c(v[i][0], v[i][2], t8, k);
        fwd_c(v[i][1], v[i][3], t8, k);
    }
    for (int i = 0; i < G; ++i) {  // t = 4: X inputs are V0 and V2
        const std::size_t b = n / 8 + 2 * (g + i);
        v[i][0] = reduce(v[i][0], k.q2), v[i][2] = reduce(v[i][2], k.q2);
        fwd_c(v[i][0], v[i][1], Tw(w[b], wp[b]), k);
        fwd_c(v[i][2], v[i][3], Tw(w[b + 1], wp[b + 1]), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 2 in the S layout: X inputs are S0 and S2
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        v[i][0] = reduce(v[i][0], k.q2), v[i][2] = reduce(v[i][2], k.q2);
        const std::size_t b = n / 4 + 4 * (g + i);
        fwd_c(v[i][0], v[i][1], tw_s_lo(w + b, wp + b), k);
        fwd_c(v[i][2], v[i][3], tw_s_hi(w + b, wp + b), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 1 in the U layout, then back to the natural one
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 2 + 8 * (g + i);
        fwd_last(v[i][0], v[i][1], Tw(ld(w + b), ld(wp + b)), k);
        fwd_last(v[i][2], v[i][3], Tw(ld(w + b + 4), ld(wp + b + 4)), k);
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
    }
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) st(a + 16 * (g + i) + 4 * r, v[i][r]);
}

void fwd_tail16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, NttPrefetch* pf,
                Twiddles) {
    const Consts k = kk;
    const std::size_t n = tb.n;
    const u64 *w = tb.psi_rev.data(), *wp = tb.psi_rev_shoup.data();
    std::size_t g = g0;
    for (; g + kTailGroups <= g1; g += kTailGroups) {
        fwd_tail16_step<kTailGroups>(a, n, g, w, wp, k);
        if (pf) pf->step();
    }
    for (; g < g1; ++g) fwd_tail16_step<1>(a, n, g, w, wp, k);
}

// ---- inverse passes ---------------------------------------------------------------------------------------------

/// Stages t = 1, 2, 4, 8 on G groups of 16 coefficients from group g (inputs in [0, q)). When N = 16 the stage
/// t = 8 is the last one and includes the N^-1 factor.
template <bool Last, int G>
inline void inv_head16_step(u64* a, std::size_t n, std::size_t g, const u64* w, const u64* wp, const Consts& k,
                            const LastConsts& lc) {
    V v[G][4];
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) v[i][r] = ld(a + 16 * (g + i) + 4 * r);
    for (int i = 0; i < G; ++i) {  // t = 1 in the U layout
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 2 + 8 * (g + i);
        inv_first(v[i][0], v[i][1], Tw(ld(w + b), ld(wp + b)), k);
        inv_first(v[i][2], v[i][3], Tw(ld(w + b + 4), ld(wp + b + 4)), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 2 in the S layout
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 4 + 4 * (g + i);
        inv_b(v[i][0], v[i][1], tw_s_lo(w + b, wp + b), k);
        inv_b(v[i][2], v[i][3], tw_s_hi(w + b, wp + b), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 4 in the natural layout
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        const std::size_t b = n / 8 + 2 * (g + i);
        inv_b(v[i][0], v[i][1], Tw(w[b], wp[b]), k);
        inv_b(v[i][2], v[i][3], Tw(w[b + 1], wp[b + 1]), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 8
        if constexpr (Last) {
            inv_last(v[i][0], v[i][2], lc, k);
            inv_last(v[i][1], v[i][3], lc, k);
        } else {
            const Tw t8(w[n / 16 + g + i], wp[n / 16 + g + i]);
            inv_b(v[i][0], v[i][2], t8, k);
            inv_b(v[i][1], v[i][3], t8, k);
        }
    }
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) st(a + 16 * (g + i) + 4 * r, v[i][r]);
}

template <bool Last>
void inv_head16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, const LastConsts& lcc,
                Twiddles) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const std::size_t n = tb.n;
    const u64 *w = tb.ipsi_rev.data(), *wp = tb.ipsi_rev_shoup.data();
    std::size_t g = g0;
    for (; g + kTailGroups <= g1; g += kTailGroups) inv_head16_step<Last, kTailGroups>(a, n, g, w, wp, k, lc);
    for (; g < g1; ++g) inv_head16_step<Last, 1>(a, n, g, w, wp, k, lc);
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t (Last: t = N/2, with N^-1).
template <bool Last, bool Pf>
void inv_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk, const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1(w[m + i], wp[m + i]);
        for (std::size_t j = 0; j < t; j += 8) {  // two vectors per step: one prefetch step per 8 coefficients
            for (std::size_t u = j; u < j + 8; u += 4) {
                V x = ld(p + u), y = ld(p + u + t);
                if constexpr (Last) inv_last(x, y, lc, k);
                else if (u < h) inv_a(x, y, w1, k);
                else inv_b(x, y, w1, k);
                st(p + u, x), st(p + u + t, y);
            }
            if constexpr (Pf) pf->step();
        }
    }
}

/// Stages of distance t and 2t (t >= 16) on the blocks [i0, i1) of size 4t (Last: 2t = N/2, with N^-1).
template <bool Last, bool Pf>
void inv_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk, const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 4 * t * i;
        const Tw wa(w[m + 2 * i], wp[m + 2 * i]);
        const Tw wb(w[m + 2 * i + 1], wp[m + 2 * i + 1]);
        const Tw wc(w[m / 2 + i], wp[m / 2 + i]);
        // j in [0, t/2): the inputs are sums (kind A); j + t/2: products (kind B). One iteration does both.
        for (std::size_t j = 0; j < h; j += 8) {  // two steps of 4 lanes: one prefetch step per 8 coefficients
            for (std::size_t u = j; u < j + 8; u += 4) {
                u64* p0 = p + u;
                u64* p1 = p + u + h;
                V x0 = ld(p0), x1 = ld(p0 + t), x2 = ld(p0 + 2 * t), x3 = ld(p0 + 3 * t);
                V y0 = ld(p1), y1 = ld(p1 + t), y2 = ld(p1 + 2 * t), y3 = ld(p1 + 3 * t);
                inv_a(x0, x1, wa, k);
                inv_b(y0, y1, wa, k);
                inv_a(x2, x3, wb, k);
                inv_b(y2, y3, wb, k);
                if constexpr (Last) {
                    inv_last(x0, x2, lc, k);
                    inv_last(y0, y2, lc, k);
                    inv_last(x1, x3, lc, k);
                    inv_last(y1, y3, lc, k);
                } else {
                    inv_a(x0, x2, wc, k);
                    inv_a(y0, y2, wc, k);
                    inv_b(x1, x3, wc, k);
                    inv_b(y1, y3, wc, k);
                }
                st(p0, x0), st(p0 + t, x1), st(p0 + 2 * t, x2), st(p0 + 3 * t, x3);
                st(p1, y0), st(p1 + t, y1), st(p1 + 2 * t, y2), st(p1 + 3 * t, y3);
            }
            if constexpr (Pf) pf->step();
        }
    }
}

/// This file's kernels for the shared pass schedule (math/ntt_schedule.hpp). First is ignored: words in [0, q)
/// are valid inputs of every forward pass here.
struct Kernels {
    using Consts = avx2::ModV;
    using LastConsts = ::ember::detail::LastConsts;
    static constexpr int kTailGroups = ::ember::detail::kTailGroups;
    template <bool First, class... A> static void fwd2(A&&... a) { fwd_radix2(std::forward<A>(a)...); }
    template <bool First, class... A> static void fwd4(A&&... a) { fwd_radix4(std::forward<A>(a)...); }
    template <bool First, class... A> static void fwd_tail(A&&... a) { fwd_tail16(std::forward<A>(a)...); }
    template <bool Last, class... A> static void inv_head(A&&... a) { inv_head16<Last>(std::forward<A>(a)...); }
    template <bool Last, bool Pf, class... A> static void inv2(A&&... a) { inv_radix2<Last, Pf>(std::forward<A>(a)...); }
    template <bool Last, bool Pf, class... A> static void inv4(A&&... a) { inv_radix4<Last, Pf>(std::forward<A>(a)...); }
};

}  // namespace

void ntt_forward_avx2(u64* a, const NttTables& tb) { ntt_forward_avx2(a, tb, nullptr, Twiddles::kFull); }

void ntt_forward_avx2(u64* a, const NttTables& tb, NttPrefetch* pf, Twiddles tw) {
    if (tb.n < 16) { ntt_forward_scalar(a, tb); return; }
    ntt_schedule::forward<Kernels>(a, tb, tb.psi_rev.data(), tb.psi_rev_shoup.data(), pf, tw);
}

void ntt_inverse_avx2(u64* a, const NttTables& tb) { ntt_inverse_avx2(a, tb, nullptr, Twiddles::kFull); }

void ntt_inverse_avx2(u64* a, const NttTables& tb, NttPrefetch* pf, Twiddles tw) {
    if (tb.n < 16) { ntt_inverse_scalar(a, tb); return; }
    ntt_schedule::inverse<Kernels>(a, tb, tb.ipsi_rev.data(), tb.ipsi_rev_shoup.data(), pf, tw);
}

}  // namespace ember::detail
