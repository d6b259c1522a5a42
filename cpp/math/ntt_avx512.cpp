// AVX-512F negacyclic NTT for q < 2^61 (compiled with -mavx512f/dq/vl/bw; entered only after a CPUID check).
//
// AVX-512 has no 64x64 -> 128-bit multiply, so the Shoup quotient Q = hi64(y * w'), w' = floor(w * 2^64 / q),
// is estimated from three 32x32 -> 64-bit products (_mm512_mul_epu32):
//     Q~ = yh*wh + (yh*wl >> 32) + (yl*wh >> 32)       (the dropped carries make Q - Q~ in {0, 1, 2})
// and r = y*w - Q~*q (mod 2^64, _mm512_mullo_epi64) lies in [0, 4q) for any y < 2^64 (avx512::mul_shoup_lazy4 in
// math/avx512_util.hpp, shared with the element-wise kernels).
//
// Value states: clean = in [0, 2q) or [0, 4q) as stated (or [0, q) at the very ends); raw = some value below
// 8q (< 2^64 for q < 2^61) that may only feed a product or a sum that is reduced afterwards.
// Forward (Cooley-Tukey): X clean in [0, 2q), Y raw. Kind P butterflies (outputs will be X inputs next) make
// both outputs clean in [0, 2q); kind Q (outputs will be Y inputs next) leave them raw (X + T, X - T + 4q, both
// below 6q); kind C (in-register stages, mixed roles) leaves them clean in [0, 4q).
// Inverse (Gentleman-Sande): sums come out clean, products raw (< 4q); kind A reads two sums, kind B two
// products (their sum, below 8q, is reduced twice).
//
// The schedule (radix-4 passes, L1 blocking, the in-register stages on 16-coefficient groups, interleaving)
// is the same as the IFMA kernel's, see math/ntt_ifma.cpp. At N = 2^16 and a 60-bit prime this path is about
// 2.5x faster than the scalar one on Sapphire Rapids, so ntt_forward / ntt_inverse dispatch to it. The two twiddle
// layouts of the in-register stages (full tables, or the compact NttTables::TailQuad with one product more per
// vector pair in three stages) are those of the IFMA kernel too.
#include "math/avx512_util.hpp"  // first: it silences GCC 12's false positives inside the intrinsic headers

#include <algorithm>
#include <array>
#include <utility>

#include "math/ntt_schedule.hpp"
#include "math/ntt_simd.hpp"

namespace ember::detail {

namespace {

using V = __m512i;

constexpr int kTailGroups = 4;        // 16-coefficient groups interleaved in the in-register stages

struct Consts {
    V q, q2, q4;
    explicit Consts(u64 m)
        : q(_mm512_set1_epi64(static_cast<long long>(m))),
          q2(_mm512_set1_epi64(static_cast<long long>(2 * m))),
          q4(_mm512_set1_epi64(static_cast<long long>(4 * m))) {}
};

inline V ld(const u64* p) { return _mm512_loadu_si512(p); }
inline void st(u64* p, V v) { _mm512_storeu_si512(p, v); }
inline V bc(u64 x) { return _mm512_set1_epi64(static_cast<long long>(x)); }
inline V bc2(const u64* p) { return _mm512_broadcast_i64x2(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline V bc4(const u64* p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

/// A twiddle vector: w, its Shoup companion w' and w' >> 32.
struct Tw {
    V w, wp, wph;
    Tw(V w_, V wp_) : w(w_), wp(wp_), wph(_mm512_srli_epi64(wp_, 32)) {}
};

/// y * w mod q in [0, 4q) for any y < 2^64.
inline V mul_raw(V y, const Tw& tw, const Consts& k) { return avx512::mul_shoup_lazy4(y, tw.w, tw.wp, tw.wph, k.q); }
/// [0, 2m) -> [0, m)
inline V reduce(V x, V m) { return avx512::reduce_once(x, m); }
/// y * w mod q in [0, 2q).
inline V mul_clean(V y, const Tw& tw, const Consts& k) { return reduce(mul_raw(y, tw, k), k.q2); }

// ---- forward butterflies -------------------------------------------------------------------------------------
/// Kind P: X clean [0, 2q), Y raw -> both outputs clean in [0, 2q).
inline void fwd_p(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_clean(y, tw, k);
    const V s = _mm512_add_epi64(x, t);
    const V d = _mm512_sub_epi64(x, t);
    x = _mm512_min_epu64(s, _mm512_sub_epi64(s, k.q2));
    y = _mm512_min_epu64(d, _mm512_add_epi64(d, k.q2));
}
/// Kind Q: X clean [0, 2q), Y raw -> raw outputs X + T, X - T + 4q (both below 6q).
inline void fwd_q(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_raw(y, tw, k);
    const V x4 = _mm512_add_epi64(x, k.q4);
    x = _mm512_add_epi64(x, t);
    y = _mm512_sub_epi64(x4, t);
}
/// Kind C (the in-register stages, where the two lanes' roles differ within a vector): X clean [0, 2q), Y raw ->
/// outputs X + T, X - T + 2q clean in [0, 4q); the consumer reduces the X inputs it takes from them.
inline void fwd_c(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = mul_clean(y, tw, k);
    const V x2 = _mm512_add_epi64(x, k.q2);
    x = _mm512_add_epi64(x, t);
    y = _mm512_sub_epi64(x2, t);
}
/// Last stage: X clean [0, 4q), Y raw -> outputs in [0, q).
inline void fwd_last(V& x, V& y, const Tw& tw, const Consts& k) {
    const V t = reduce(mul_clean(y, tw, k), k.q);
    const V xr = reduce(reduce(x, k.q2), k.q);
    const V s = _mm512_add_epi64(xr, t);
    const V d = _mm512_sub_epi64(xr, t);
    x = reduce(s, k.q);
    y = _mm512_min_epu64(d, _mm512_add_epi64(d, k.q));
}

// ---- inverse butterflies -------------------------------------------------------------------------------------
/// Kind A: both inputs clean in [0, 2q) -> X + Y clean in [0, 2q), W * (X - Y + 2q) raw in [0, 4q).
inline void inv_a(V& x, V& y, const Tw& tw, const Consts& k) {
    const V s = _mm512_add_epi64(x, y);
    const V d = _mm512_sub_epi64(_mm512_add_epi64(x, k.q2), y);
    x = reduce(s, k.q2);
    y = mul_raw(d, tw, k);
}
/// The first stage: inputs in [0, q) -> X + Y in [0, 2q) without a reduction, W * (X - Y + q) raw.
inline void inv_first(V& x, V& y, const Tw& tw, const Consts& k) {
    const V d = _mm512_sub_epi64(_mm512_add_epi64(x, k.q), y);
    x = _mm512_add_epi64(x, y);
    y = mul_raw(d, tw, k);
}
/// Kind B: inputs in [0, 4q) -> same outputs as kind A.
inline void inv_b(V& x, V& y, const Tw& tw, const Consts& k) {
    const V s = _mm512_add_epi64(x, y);
    const V d = _mm512_sub_epi64(_mm512_add_epi64(x, k.q4), y);
    x = reduce(reduce(s, k.q4), k.q2);
    y = mul_raw(d, tw, k);
}
struct LastConsts {
    Tw ni, wn;
    explicit LastConsts(const NttTables& tb)
        : ni(bc(tb.n_inv), bc(tb.n_inv_shoup)), wn(bc(tb.ipsi1_ninv), bc(tb.ipsi1_ninv_shoup)) {}
};
/// Last stage (distance N/2) merged with the N^-1 factor: inputs in [0, 4q) -> outputs in [0, q).
inline void inv_last(V& x, V& y, const LastConsts& lc, const Consts& k) {
    const V s = _mm512_add_epi64(x, y);
    const V d = _mm512_sub_epi64(_mm512_add_epi64(x, k.q4), y);
    x = reduce(mul_clean(s, lc.ni, k), k.q);
    y = reduce(mul_clean(d, lc.wn, k), k.q);
}

// ---- lane layouts of a 16-coefficient group (e = e3 e2 e1 e0 in binary) ----------------------------------------
// Each layout maps e to (vector, lane). In layout S_t the pairs (e, e + t) of the stage of distance t sit in the
// same lane of the two vectors, and the lanes are ordered so that the twiddle vector is a simple load:
//   N  (natural, t = 8): vector e3, lane e2 e1 e0           twiddle: broadcast of w[N/16 + g]
//   S1 (t = 4):          vector e2, lane e1 e0 e3           twiddle: 128-bit broadcast of w[N/8 + 2g .. +2)
//   S2 (t = 2):          vector e1, lane e0 e3 e2           twiddle: 256-bit broadcast of w[N/4 + 4g .. +4)
//   S3 (t = 1):          vector e0, lane e3 e2 e1           twiddle: load of w[N/2 + 8g .. +8)
struct Pos {
    int v, l;
};
constexpr Pos layout_pos(int lay, int e) {
    const int e0 = e & 1, e1 = (e >> 1) & 1, e2 = (e >> 2) & 1, e3 = (e >> 3) & 1;
    switch (lay) {
        case 0: return {e3, e & 7};
        case 1: return {e2, 4 * e1 + 2 * e0 + e3};
        case 2: return {e1, 4 * e0 + 2 * e3 + e2};
        default: return {e0, 4 * e3 + 2 * e2 + e1};
    }
}
/// _mm512_permutex2var_epi64 indices moving a group from layout `src` to layout `dst`: [output vector][lane].
constexpr std::array<std::array<long long, 8>, 2> perm_indices(int src, int dst) {
    std::array<std::array<long long, 8>, 2> idx{};
    for (int e = 0; e < 16; ++e) {
        const Pos d = layout_pos(dst, e), s = layout_pos(src, e);
        idx[d.v][d.l] = 8 * s.v + s.l;
    }
    return idx;
}

static_assert(perm_indices(0, 1) == perm_indices(1, 2) && perm_indices(1, 2) == perm_indices(2, 3) &&
              perm_indices(2, 3) == perm_indices(3, 0));
static_assert(perm_indices(1, 0) == perm_indices(2, 1) && perm_indices(2, 1) == perm_indices(3, 2) &&
              perm_indices(3, 2) == perm_indices(0, 3));

struct Perm {
    V a, b;
    Perm(int src, int dst) {
        const auto idx = perm_indices(src, dst);
        a = _mm512_loadu_si512(idx[0].data());
        b = _mm512_loadu_si512(idx[1].data());
    }
    inline void apply(V& x, V& y) const {
        const V nx = _mm512_permutex2var_epi64(x, a, y);
        const V ny = _mm512_permutex2var_epi64(x, b, y);
        x = nx;
        y = ny;
    }
};

// ---- forward passes --------------------------------------------------------------------------------------------

struct Tw4 {  // the three twiddles of a radix-4 block
    Tw w1, w2, w3;
    Tw4(const u64* w, const u64* wp, std::size_t m, std::size_t i)
        : w1(bc(w[m + i]), bc(wp[m + i])),
          w2(bc(w[2 * m + 2 * i]), bc(wp[2 * m + 2 * i])),
          w3(bc(w[2 * m + 2 * i + 1]), bc(wp[2 * m + 2 * i + 1])) {}
};

/// The radix-4 units at offsets j (second stage of kind P) and j + t/4 (kind Q) of the block at p, side by side
/// so that two independent chains are in flight.
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

/// Stages of distance t and t/2 (t >= 32) on the blocks [i0, i1) of size 2t. In the unit at offset j of a
/// block (j < t/4), the second stage's outputs are X inputs of the next stage (kind P); at j + t/4 they are
/// Y inputs (kind Q).
void fwd_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk) {
    const Consts k = kk;  // a local copy stays in registers (stores through u64* may alias kk)
    const std::size_t m = n / (2 * t), qt = t / 4;
    std::size_t i = i0;
    if (qt == 8) {  // t = 32: one pair of units per block, so two blocks per iteration
        for (; i + 2 <= i1; i += 2) {
            const Tw4 ta(w, wp, m, i), tb(w, wp, m, i + 1);
            fwd_radix4_units(a + 2 * t * i, t, 0, ta, k);
            fwd_radix4_units(a + 2 * t * (i + 1), t, 0, tb, k);
        }
    }
    for (; i < i1; ++i) {
        const Tw4 tw(w, wp, m, i);
        u64* p = a + 2 * t * i;
        #pragma GCC unroll 2  // as in the IFMA kernel
        for (std::size_t j = 0; j < qt; j += 8) fwd_radix4_units(p, t, j, tw, k);
    }
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t.
void fwd_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk) {
    const Consts k = kk;  // a local copy stays in registers (stores through u64* may alias kk)
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1(bc(w[m + i]), bc(wp[m + i]));
        for (std::size_t j = 0; j < h; j += 8) {
            V x = ld(p + j), y = ld(p + j + t);
            fwd_p(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
        }
        for (std::size_t j = h; j < t; j += 8) {
            V x = ld(p + j), y = ld(p + j + t);
            fwd_q(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
        }
    }
}

/// Stages t = 8, 4, 2, 1 on the groups [g0, g1) of 16 coefficients; outputs in [0, q), twiddles from the full
/// tables (Twiddles::kFull, and always for N < 64). G groups are processed side by side: one group is a long
/// dependency chain (about 70 cycles), and the scheduler only finds enough independent work when the chains are
/// interleaved in the instruction stream.
template <int G>
inline void fwd_tail16_step(u64* a, std::size_t n, std::size_t g, const u64* w, const u64* wp, const Consts& k,
                            const Perm& rot) {
    const u64 *w8 = w + n / 16, *w8p = wp + n / 16;
    const u64 *w4 = w + n / 8, *w4p = wp + n / 8;
    const u64 *w2 = w + n / 4, *w2p = wp + n / 4;
    const u64 *w1 = w + n / 2, *w1p = wp + n / 2;
    V x[G], y[G];
    for (int i = 0; i < G; ++i) x[i] = ld(a + 16 * (g + i)), y[i] = ld(a + 16 * (g + i) + 8);
    for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], Tw(bc(w8[g + i]), bc(w8p[g + i])), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) x[i] = reduce(x[i], k.q2);
    for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], Tw(bc2(w4 + 2 * (g + i)), bc2(w4p + 2 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) x[i] = reduce(x[i], k.q2);
    for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], Tw(bc4(w2 + 4 * (g + i)), bc4(w2p + 4 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) fwd_last(x[i], y[i], Tw(ld(w1 + 8 * (g + i)), ld(w1p + 8 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) st(a + 16 * (g + i), x[i]), st(a + 16 * (g + i) + 8, y[i]);
}

static_assert(kTailGroups == 4, "the compact twiddle tables are laid out for quads of groups");

/// The same on the quad of groups 4h .. 4h + 3 with the compact tables: stage t = 8 >> j (j >= 1) multiplies Y
/// by the constant E_j(i, .) of group 4h + i (raw, below 4q), then by the quad's C_j (see ntt_ifma.cpp).
inline void fwd_tail16_quad(u64* a, std::size_t h, const NttTables::TailQuad& tq, const NttTables::TailConsts& ec,
                            const Consts& k, const Perm& rot) {
    constexpr int G = 4;
    u64* p = a + 64 * h;
    V x[G], y[G];
    for (int i = 0; i < G; ++i) x[i] = ld(p + 16 * i), y[i] = ld(p + 16 * i + 8);
    for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], Tw(bc(tq.a0[i]), bc(tq.a0p[i])), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) x[i] = reduce(x[i], k.q2), y[i] = mul_raw(y[i], Tw(ld(ec.w[0][i]), ld(ec.wp[0][i])), k);
    {
        const Tw c(bc(tq.c[0]), bc(tq.c[1]));
        for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) x[i] = reduce(x[i], k.q2), y[i] = mul_raw(y[i], Tw(ld(ec.w[1][i]), ld(ec.wp[1][i])), k);
    {
        const Tw c(bc(tq.c[2]), bc(tq.c[3]));
        for (int i = 0; i < G; ++i) fwd_c(x[i], y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) y[i] = mul_raw(y[i], Tw(ld(ec.w[2][i]), ld(ec.wp[2][i])), k);
    {
        const Tw c(bc(tq.c[4]), bc(tq.c[5]));
        for (int i = 0; i < G; ++i) fwd_last(x[i], y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) st(p + 16 * i, x[i]), st(p + 16 * i + 8, y[i]);
}

void fwd_tail16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, NttPrefetch* pf,
                Twiddles tw) {
    const Consts k = kk;  // local copies stay in registers (stores through u64* may alias kk)
    // N -> S1 -> S2 -> S3 -> N: each step rotates the four index bits of the layout by one, the same permutation
    const Perm rot(0, 1);
    const std::size_t n = tb.n;  // a local copy: stores through u64* may alias tb.n
    if (tw == Twiddles::kFull || n < 64) {
        const u64 *w = tb.psi_rev.data(), *wp = tb.psi_rev_shoup.data();
        std::size_t g = g0;
        for (; g + kTailGroups <= g1; g += kTailGroups) {
            fwd_tail16_step<kTailGroups>(a, n, g, w, wp, k, rot);
            if (pf) pf->step();
        }
        for (; g < g1; ++g) fwd_tail16_step<1>(a, n, g, w, wp, k, rot);
        return;
    }
    const NttTables::TailQuad* tq = tb.quad_fwd.data();
    for (std::size_t h = g0 / 4; h < g1 / 4; ++h) {  // g0, g1 are multiples of 4 for N >= 64
        fwd_tail16_quad(a, h, tq[h], tb.econst_fwd, k, rot);
        if (pf) pf->step();
    }
}

// ---- inverse passes --------------------------------------------------------------------------------------------


/// Stages t = 1, 2, 4, 8 on the groups [g0, g1) of 16 coefficients (inputs in [0, q)), G groups side by side,
/// twiddles from the full tables (kFull; always for N < 64). When N = 16 the stage t = 8 is the last one and
/// includes the N^-1 factor.
template <bool Last, int G>
inline void inv_head16_step(u64* a, std::size_t n, std::size_t g, const u64* w, const u64* wp, const Consts& k,
                            const LastConsts& lc, const Perm& rot) {
    const u64 *w8 = w + n / 16, *w8p = wp + n / 16;
    const u64 *w4 = w + n / 8, *w4p = wp + n / 8;
    const u64 *w2 = w + n / 4, *w2p = wp + n / 4;
    const u64 *w1 = w + n / 2, *w1p = wp + n / 2;
    V x[G], y[G];
    for (int i = 0; i < G; ++i) x[i] = ld(a + 16 * (g + i)), y[i] = ld(a + 16 * (g + i) + 8);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_first(x[i], y[i], Tw(ld(w1 + 8 * (g + i)), ld(w1p + 8 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_b(x[i], y[i], Tw(bc4(w2 + 4 * (g + i)), bc4(w2p + 4 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_b(x[i], y[i], Tw(bc2(w4 + 2 * (g + i)), bc2(w4p + 2 * (g + i))), k);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) {
        if constexpr (Last) inv_last(x[i], y[i], lc, k);
        else inv_b(x[i], y[i], Tw(bc(w8[g + i]), bc(w8p[g + i])), k);
    }
    for (int i = 0; i < G; ++i) st(a + 16 * (g + i), x[i]), st(a + 16 * (g + i) + 8, y[i]);
}

/// The same on the quad of groups 4h .. 4h + 3 with the compact tables (N >= 64, so never the last stage).
inline void inv_head16_quad(u64* a, std::size_t h, const NttTables::TailQuad& tq, const NttTables::TailConsts& ec,
                            const Consts& k, const Perm& rot) {
    constexpr int G = 4;
    u64* p = a + 64 * h;
    V x[G], y[G];
    for (int i = 0; i < G; ++i) x[i] = ld(p + 16 * i), y[i] = ld(p + 16 * i + 8);
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_first(x[i], y[i], Tw(ld(ec.w[2][i]), ld(ec.wp[2][i])), k);
    {
        const Tw c(bc(tq.c[4]), bc(tq.c[5]));
        for (int i = 0; i < G; ++i) y[i] = mul_raw(y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_b(x[i], y[i], Tw(ld(ec.w[1][i]), ld(ec.wp[1][i])), k);
    {
        const Tw c(bc(tq.c[2]), bc(tq.c[3]));
        for (int i = 0; i < G; ++i) y[i] = mul_raw(y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_b(x[i], y[i], Tw(ld(ec.w[0][i]), ld(ec.wp[0][i])), k);
    {
        const Tw c(bc(tq.c[0]), bc(tq.c[1]));
        for (int i = 0; i < G; ++i) y[i] = mul_raw(y[i], c, k);
    }
    for (int i = 0; i < G; ++i) rot.apply(x[i], y[i]);
    for (int i = 0; i < G; ++i) inv_b(x[i], y[i], Tw(bc(tq.a0[i]), bc(tq.a0p[i])), k);
    for (int i = 0; i < G; ++i) st(p + 16 * i, x[i]), st(p + 16 * i + 8, y[i]);
}

template <bool Last>
void inv_head16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, const LastConsts& lcc,
                Twiddles tw) {
    const Consts k = kk;  // local copies stay in registers (stores through u64* may alias kk, lcc)
    const LastConsts lc = lcc;
    const Perm rot(1, 0);  // N -> S3 -> S2 -> S1 -> N, each step the same bit rotation
    const std::size_t n = tb.n;  // a local copy: stores through u64* may alias tb.n
    if (tw == Twiddles::kFull || n < 64) {
        const u64 *w = tb.ipsi_rev.data(), *wp = tb.ipsi_rev_shoup.data();
        std::size_t g = g0;
        for (; g + kTailGroups <= g1; g += kTailGroups) inv_head16_step<Last, kTailGroups>(a, n, g, w, wp, k, lc, rot);
        for (; g < g1; ++g) inv_head16_step<Last, 1>(a, n, g, w, wp, k, lc, rot);
        return;
    }
    const NttTables::TailQuad* tq = tb.quad_inv.data();
    for (std::size_t h = g0 / 4; h < g1 / 4; ++h) inv_head16_quad(a, h, tq[h], tb.econst_inv, k, rot);
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t (Last: t = N/2, with N^-1).
template <bool Last, bool Pf>
void inv_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk, const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;  // local copies stay in registers (stores through u64* may alias kk, lcc)
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1(bc(w[m + i]), bc(wp[m + i]));
        for (std::size_t j = 0; j < t; j += 8) {
            V x = ld(p + j), y = ld(p + j + t);
            if constexpr (Last) inv_last(x, y, lc, k);
            else if (j < h) inv_a(x, y, w1, k);
            else inv_b(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
            if constexpr (Pf) pf->step();
        }
    }
}

/// Stages of distance t and 2t (t >= 16) on the blocks [i0, i1) of size 4t (Last: 2t = N/2, with N^-1).
template <bool Last, bool Pf>
void inv_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const u64* w, const u64* wp,
                const Consts& kk, const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;  // local copies stay in registers (stores through u64* may alias kk, lcc)
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 4 * t * i;
        const Tw wa(bc(w[m + 2 * i]), bc(wp[m + 2 * i]));
        const Tw wb(bc(w[m + 2 * i + 1]), bc(wp[m + 2 * i + 1]));
        const Tw wc(bc(w[m / 2 + i]), bc(wp[m / 2 + i]));
        // j in [0, t/2): the inputs are sums (kind A); j + t/2: products (kind B). One iteration does both.
        #pragma GCC unroll 2  // as in the IFMA kernel
        for (std::size_t j = 0; j < h; j += 8) {
            u64* p0 = p + j;
            u64* p1 = p + j + h;
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
            if constexpr (Pf) pf->step();
        }
    }
}

/// This file's kernels for the shared pass schedule (math/ntt_schedule.hpp). First is ignored: words in [0, q)
/// are valid inputs of every forward pass here.
struct Kernels {
    using Consts = ::ember::detail::Consts;
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

void ntt_forward_avx512(u64* a, const NttTables& tb) {
    ntt_forward_avx512(a, tb, nullptr, pick_twiddles(tb, false));
}

void ntt_forward_avx512(u64* a, const NttTables& tb, NttPrefetch* pf, Twiddles tw) {
    if (tb.n < 16) { ntt_forward_scalar(a, tb); return; }
    ntt_schedule::forward<Kernels>(a, tb, tb.psi_rev.data(), tb.psi_rev_shoup.data(), pf, tw);
}

void ntt_inverse_avx512(u64* a, const NttTables& tb) {
    ntt_inverse_avx512(a, tb, nullptr, pick_twiddles(tb, true));
}

void ntt_inverse_avx512(u64* a, const NttTables& tb, NttPrefetch* pf, Twiddles tw) {
    if (tb.n < 16) { ntt_inverse_scalar(a, tb); return; }
    ntt_schedule::inverse<Kernels>(a, tb, tb.ipsi_rev.data(), tb.ipsi_rev_shoup.data(), pf, tw);
}

}  // namespace ember::detail
