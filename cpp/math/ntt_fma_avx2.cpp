// AVX2 negacyclic NTT in double precision for q < 2^50 (compiled with -mavx2 -mbmi2 -mfma -ffp-contract=off
// -fno-fast-math on x86-64 only; entered only after a CPUID check, detail::ntt_avx2_fma_supported; round to nearest
// set for each transform).
//
// AVX2 has no 64-bit integer lane product: the integer kernel (math/ntt_avx2.cpp) builds each Shoup product from
// ten 32 x 32-bit lane products. Below 2^50 a product of two coefficients fits the 106 bits of a double and its
// rounding error (two-product with an FMA), so a modular product takes four floating-point multiplications and
// two additions on the two FMA and two add pipes, and the transform is several times cheaper per butterfly.
//
// Representation: between the first and the last pass the limb holds doubles (bit patterns in the u64 array), each
// an integer in a signed range (|x| < 2^52); the first forward pass / the first inverse pass converts the words
// [0, q) on load, the last stage reduces to [0, q) and converts back on store. Every output is fully reduced, so the
// kernels are bit-identical to the scalar ones (tests/cpp/test_ntt.cpp checks it on random and edge inputs).
//
// Arithmetic (sizes in units of q; q < 2^50, so q 2^-53 < 1/8):
//  * Twiddles are centered, |w| <= (q - 1)/2, with wq = fl(w / q) (|wq| <= 1/2): NttTables::psi_rev_fp / _fpq.
//  * mul(a, w), |a| < 2^52: h = fl(a w), l = fma(a, w, -h) (exactly a w - h), c = round(fl(a wq)),
//    r = fma(-c, q, h) + l. |fl(a wq) - a w / q| <= |a| 2^-53, so r = a w - c q exactly with
//    |r| <= q/2 + |a| q 2^-53 <= (1/2 + |a| / (8q)) q. Both operations are exact: |h - c q| <= |l| + |r| < 2^47 + 2^50,
//    an integer below 2^53, and so is r.
//  * reduce(x), |x| <= 4q: x - round(fl(x / q)) q, |result| <= q/2 + 1.
//  * canon(x), |x| <= 4q: reduce, then + q if negative: [0, q).
//  * Forward (Cooley-Tukey) passes reduce the inputs that are not multiplied in the pass's first stage (x0, x1 of a
//    radix-4 unit); outputs then stay below 2.4q (a pass maps B to at most 1.63 + 0.14 B, the first pass's inputs
//    are below q). Inverse (Gentleman-Sande) passes reduce the sums of their first stage; outputs stay below 2q.
//    Every product's operand stays below 4q < 2^52.
// The pass schedule and the lane layouts of the in-register stages are those of the integer AVX2 kernel (see
// there), on the same memory: the doubles are moved with the same permutes.
#include <immintrin.h>


#include "math/ntt_schedule.hpp"
#include "math/ntt_simd.hpp"

namespace ember::detail {

namespace {

using D = __m256d;

constexpr int kTailGroups = 2;  // 16-coefficient groups interleaved in the in-register stages (4 vectors each)
constexpr double kMagic = 4503599627370496.0;  // 2^52: its bit pattern has a zero mantissa

inline D ld(const u64* p) { return _mm256_loadu_pd(reinterpret_cast<const double*>(p)); }
inline void st(u64* p, D v) { _mm256_storeu_pd(reinterpret_cast<double*>(p), v); }
inline D ldt(const double* p) { return _mm256_loadu_pd(p); }
inline D bc(double x) { return _mm256_set1_pd(x); }
inline D add(D a, D b) { return _mm256_add_pd(a, b); }
inline D sub(D a, D b) { return _mm256_sub_pd(a, b); }
inline D rnd(D x) { return _mm256_round_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

struct Consts {
    D q, qinv, magic;
    explicit Consts(u64 qq) : q(bc(static_cast<double>(qq))), qinv(bc(1.0 / static_cast<double>(qq))), magic(bc(kMagic)) {}
};

/// A twiddle (centered) and its quotient companion w / q.
struct Tw {
    D w, wq;
    Tw(double a, double b) : w(bc(a)), wq(bc(b)) {}
    Tw(D a, D b) : w(a), wq(b) {}
};

/// Words in [0, 2^52) (as loaded) -> their values: the words with 2^52's exponent, minus 2^52.
inline D from_words(D raw, const Consts& k) { return sub(_mm256_or_pd(raw, k.magic), k.magic); }
/// Integers in [0, 2^52) -> their words: the mantissa of x + 2^52.
inline D to_words(D x, const Consts& k) { return _mm256_xor_pd(add(x, k.magic), k.magic); }

/// a * w mod q, |a| < 2^52 -> |result| <= q/2 + |a| q 2^-53.
inline D mul(D a, const Tw& t, const Consts& k) {
    const D h = _mm256_mul_pd(a, t.w);
    const D l = _mm256_fmsub_pd(a, t.w, h);
    const D c = rnd(_mm256_mul_pd(a, t.wq));
    return add(_mm256_fnmadd_pd(c, k.q, h), l);
}
/// |x| <= 4q -> x mod q with |result| <= q/2 + 1.
inline D reduce(D x, const Consts& k) { return _mm256_fnmadd_pd(rnd(_mm256_mul_pd(x, k.qinv)), k.q, x); }
/// |x| <= 4q -> x mod q in [0, q).
inline D canon(D x, const Consts& k) {
    const D r = reduce(x, k);
    return add(r, _mm256_and_pd(_mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_LT_OQ), k.q));
}

/// Cooley-Tukey butterfly: (x, y) -> (x + w y, x - w y).
inline void ct(D& x, D& y, const Tw& tw, const Consts& k) {
    const D v = mul(y, tw, k);
    y = sub(x, v);
    x = add(x, v);
}
/// Gentleman-Sande butterfly: (x, y) -> (x + y, w (x - y)); kReduce: the sum reduced.
template <bool kReduce>
inline void gs(D& x, D& y, const Tw& tw, const Consts& k) {
    const D d = sub(x, y);
    x = add(x, y);
    if constexpr (kReduce) x = reduce(x, k);
    y = mul(d, tw, k);
}

struct LastConsts {
    Tw ni, wn;  // N^-1 and ipsi_rev[1] N^-1
    explicit LastConsts(const NttTables& tb) : ni(tb.n_inv_fp, tb.n_inv_fpq), wn(tb.ipsi1_ninv_fp, tb.ipsi1_ninv_fpq) {}
};
/// The inverse's last stage (distance N/2) with N^-1: (x, y) -> ((x + y) / N, w (x - y) / N), reduced to [0, q)
/// and stored as words (|x|, |y| <= 2q).
inline void gs_last(D& x, D& y, const LastConsts& lc, const Consts& k) {
    const D d = sub(x, y);
    x = to_words(canon(mul(add(x, y), lc.ni, k), k), k);
    y = to_words(canon(mul(d, lc.wn, k), k), k);
}

// ---- lane layouts of a 16-coefficient group (those of math/ntt_avx2.cpp) ------------------------------------------
inline void swap128(D& a, D& b) {
    const D lo = _mm256_permute2f128_pd(a, b, 0x20);
    const D hi = _mm256_permute2f128_pd(a, b, 0x31);
    a = lo;
    b = hi;
}
inline void unpack(D& a, D& b) {
    const D lo = _mm256_unpacklo_pd(a, b);
    const D hi = _mm256_unpackhi_pd(a, b);
    a = lo;
    b = hi;
}
/// The twiddles of stage t = 2 for the S layout: (w0 w0 w1 w1) and (w2 w2 w3 w3) of w[b .. b + 4).
inline Tw tw_s_lo(const double* w, const double* wq) {
    return Tw(_mm256_permute4x64_pd(ldt(w), 0x50), _mm256_permute4x64_pd(ldt(wq), 0x50));
}
inline Tw tw_s_hi(const double* w, const double* wq) {
    return Tw(_mm256_permute4x64_pd(ldt(w), 0xfa), _mm256_permute4x64_pd(ldt(wq), 0xfa));
}

/// The twiddle tables of one direction.
struct Tables {
    const double *w, *wq;
};
inline Tables fwd_tables(const NttTables& tb) { return {tb.psi_rev_fp.data(), tb.psi_rev_fpq.data()}; }
inline Tables inv_tables(const NttTables& tb) { return {tb.ipsi_rev_fp.data(), tb.ipsi_rev_fpq.data()}; }
inline Tw tw_at(const Tables& t, std::size_t i) { return Tw(t.w[i], t.wq[i]); }

// ---- forward passes -----------------------------------------------------------------------------------------------

/// Inputs of a forward pass: kFirst, words in [0, q) converted; otherwise the x side (not multiplied in the pass's
/// first stage) reduced.
template <bool kFirst>
inline D fwd_x(const u64* p, const Consts& k) {
    return kFirst ? from_words(ld(p), k) : reduce(ld(p), k);
}
template <bool kFirst>
inline D fwd_y(const u64* p, const Consts& k) {
    return kFirst ? from_words(ld(p), k) : ld(p);
}

/// Stages of distance t and t/2 (t >= 32) on the blocks [i0, i1) of size 2t.
template <bool kFirst>
void fwd_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const Tables& tt, const Consts& kk) {
    const Consts k = kk;
    const std::size_t m = n / (2 * t), h = t / 2;
    for (std::size_t i = i0; i < i1; ++i) {
        const Tw w1 = tw_at(tt, m + i), w2 = tw_at(tt, 2 * m + 2 * i), w3 = tw_at(tt, 2 * m + 2 * i + 1);
        u64* p = a + 2 * t * i;
        for (std::size_t j = 0; j < h; j += 4) {
            u64* p0 = p + j;
            D x0 = fwd_x<kFirst>(p0, k), x1 = fwd_x<kFirst>(p0 + h, k);
            D x2 = fwd_y<kFirst>(p0 + t, k), x3 = fwd_y<kFirst>(p0 + t + h, k);
            ct(x0, x2, w1, k);
            ct(x1, x3, w1, k);
            ct(x0, x1, w2, k);
            ct(x2, x3, w3, k);
            st(p0, x0), st(p0 + h, x1), st(p0 + t, x2), st(p0 + t + h, x3);
        }
    }
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t.
template <bool kFirst>
void fwd_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const Tables& tt, const Consts& kk) {
    const Consts k = kk;
    const std::size_t m = n / (2 * t);
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1 = tw_at(tt, m + i);
        for (std::size_t j = 0; j < t; j += 4) {
            D x = fwd_x<kFirst>(p + j, k), y = fwd_y<kFirst>(p + j + t, k);
            ct(x, y, w1, k);
            st(p + j, x), st(p + j + t, y);
        }
    }
}

/// Stages t = 8, 4, 2, 1 on G groups of 16 coefficients from group g, reduced to [0, q) and stored as words.
template <bool kFirst, int G>
inline void fwd_tail16_step(u64* a, std::size_t n, std::size_t g, const Tables& tt, const Consts& k) {
    D v[G][4];
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) {
            const u64* p = a + 16 * (g + i) + 4 * r;
            v[i][r] = r < 2 ? fwd_x<kFirst>(p, k) : fwd_y<kFirst>(p, k);
        }
    for (int i = 0; i < G; ++i) {  // t = 8: pairs (V0, V2), (V1, V3); x side reduced on load
        const Tw t8 = tw_at(tt, n / 16 + g + i);
        ct(v[i][0], v[i][2], t8, k);
        ct(v[i][1], v[i][3], t8, k);
    }
    for (int i = 0; i < G; ++i) {  // t = 4: pairs (V0, V1), (V2, V3)
        const std::size_t b = n / 8 + 2 * (g + i);
        ct(v[i][0], v[i][1], tw_at(tt, b), k);
        ct(v[i][2], v[i][3], tw_at(tt, b + 1), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 2 in the S layout: x side S0, S2 reduced
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        v[i][0] = reduce(v[i][0], k), v[i][2] = reduce(v[i][2], k);
        const std::size_t b = n / 4 + 4 * (g + i);
        ct(v[i][0], v[i][1], tw_s_lo(tt.w + b, tt.wq + b), k);
        ct(v[i][2], v[i][3], tw_s_hi(tt.w + b, tt.wq + b), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 1 in the U layout, reduced, then back to the natural layout
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 2 + 8 * (g + i);
        ct(v[i][0], v[i][1], Tw(ldt(tt.w + b), ldt(tt.wq + b)), k);
        ct(v[i][2], v[i][3], Tw(ldt(tt.w + b + 4), ldt(tt.wq + b + 4)), k);
        for (int r = 0; r < 4; ++r) v[i][r] = to_words(canon(v[i][r], k), k);
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
    }
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) st(a + 16 * (g + i) + 4 * r, v[i][r]);
}

template <bool kFirst>
void fwd_tail16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, NttPrefetch* pf) {
    const Consts k = kk;
    const Tables tt = fwd_tables(tb);
    std::size_t g = g0;
    for (; g + kTailGroups <= g1; g += kTailGroups) {
        fwd_tail16_step<kFirst, kTailGroups>(a, tb.n, g, tt, k);
        if (pf) pf->step();
    }
    for (; g < g1; ++g) fwd_tail16_step<kFirst, 1>(a, tb.n, g, tt, k);
}

// ---- inverse passes -----------------------------------------------------------------------------------------------

/// Stages t = 1, 2, 4, 8 on G groups of 16 coefficients from group g (inputs: words in [0, q)). Last (N = 16): the
/// stage t = 8 is the last one, with N^-1.
template <bool Last, int G>
inline void inv_head16_step(u64* a, std::size_t n, std::size_t g, const Tables& tt, const Consts& k, const LastConsts& lc) {
    D v[G][4];
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) v[i][r] = from_words(ld(a + 16 * (g + i) + 4 * r), k);
    for (int i = 0; i < G; ++i) {  // t = 1 in the U layout (sums reduced)
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 2 + 8 * (g + i);
        gs<true>(v[i][0], v[i][1], Tw(ldt(tt.w + b), ldt(tt.wq + b)), k);
        gs<true>(v[i][2], v[i][3], Tw(ldt(tt.w + b + 4), ldt(tt.wq + b + 4)), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 2 in the S layout
        unpack(v[i][0], v[i][1]);
        unpack(v[i][2], v[i][3]);
        const std::size_t b = n / 4 + 4 * (g + i);
        gs<false>(v[i][0], v[i][1], tw_s_lo(tt.w + b, tt.wq + b), k);
        gs<false>(v[i][2], v[i][3], tw_s_hi(tt.w + b, tt.wq + b), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 4 in the natural layout (sums reduced)
        swap128(v[i][0], v[i][1]);
        swap128(v[i][2], v[i][3]);
        const std::size_t b = n / 8 + 2 * (g + i);
        gs<true>(v[i][0], v[i][1], tw_at(tt, b), k);
        gs<true>(v[i][2], v[i][3], tw_at(tt, b + 1), k);
    }
    for (int i = 0; i < G; ++i) {  // t = 8
        if constexpr (Last) {
            gs_last(v[i][0], v[i][2], lc, k);
            gs_last(v[i][1], v[i][3], lc, k);
        } else {
            const Tw t8 = tw_at(tt, n / 16 + g + i);
            gs<false>(v[i][0], v[i][2], t8, k);
            gs<false>(v[i][1], v[i][3], t8, k);
        }
    }
    for (int i = 0; i < G; ++i)
        for (int r = 0; r < 4; ++r) st(a + 16 * (g + i) + 4 * r, v[i][r]);
}

template <bool Last>
void inv_head16(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& kk, const LastConsts& lcc) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const Tables tt = inv_tables(tb);
    std::size_t g = g0;
    for (; g + kTailGroups <= g1; g += kTailGroups) inv_head16_step<Last, kTailGroups>(a, tb.n, g, tt, k, lc);
    for (; g < g1; ++g) inv_head16_step<Last, 1>(a, tb.n, g, tt, k, lc);
}

/// One stage of distance t >= 16 on the blocks [i0, i1) of size 2t (Last: t = N/2, with N^-1), sums reduced.
template <bool Last, bool Pf>
void inv_radix2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const Tables& tt, const Consts& kk,
                const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t);
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 2 * t * i;
        const Tw w1 = tw_at(tt, m + i);
        for (std::size_t j = 0; j < t; j += 8) {  // one prefetch step per 8 coefficients
            for (std::size_t u = j; u < j + 8; u += 4) {
                D x = ld(p + u), y = ld(p + u + t);
                if constexpr (Last) gs_last(x, y, lc, k);
                else gs<true>(x, y, w1, k);
                st(p + u, x), st(p + u + t, y);
            }
            if constexpr (Pf) pf->step();
        }
    }
}

/// Stages of distance t and 2t (t >= 16) on the blocks [i0, i1) of size 4t (Last: 2t = N/2, with N^-1); the first
/// stage's sums reduced.
template <bool Last, bool Pf>
void inv_radix4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, const Tables& tt, const Consts& kk,
                const LastConsts& lcc, NttPrefetch* pf) {
    const Consts k = kk;
    const LastConsts lc = lcc;
    const std::size_t m = n / (2 * t);
    for (std::size_t i = i0; i < i1; ++i) {
        u64* p = a + 4 * t * i;
        const Tw wa = tw_at(tt, m + 2 * i), wb = tw_at(tt, m + 2 * i + 1), wc = tw_at(tt, m / 2 + i);
        for (std::size_t j = 0; j < t; j += 8) {  // one prefetch step per 8 coefficients
            for (std::size_t u = j; u < j + 8; u += 4) {
                u64* p0 = p + u;
                D x0 = ld(p0), x1 = ld(p0 + t), x2 = ld(p0 + 2 * t), x3 = ld(p0 + 3 * t);
                gs<true>(x0, x1, wa, k);
                gs<true>(x2, x3, wb, k);
                if constexpr (Last) {
                    gs_last(x0, x2, lc, k);
                    gs_last(x1, x3, lc, k);
                } else {
                    gs<false>(x0, x2, wc, k);
                    gs<false>(x1, x3, wc, k);
                }
                st(p0, x0), st(p0 + t, x1), st(p0 + 2 * t, x2), st(p0 + 3 * t, x3);
            }
            if constexpr (Pf) pf->step();
        }
    }
}

/// Round to nearest for the duration of a transform, whatever mode the calling thread set (fesetround): the
/// quotient estimates' error bounds assume it. (The exact operations are exact in any mode; the estimates are not.)
class NearestRounding {
public:
    NearestRounding() : saved_(_mm_getcsr()) {
        if (saved_ & kRoundingBits) _mm_setcsr(saved_ & ~kRoundingBits);
    }
    ~NearestRounding() {
        if (saved_ & kRoundingBits) _mm_setcsr(saved_);
    }
    NearestRounding(const NearestRounding&) = delete;
    NearestRounding& operator=(const NearestRounding&) = delete;

private:
    static constexpr unsigned kRoundingBits = 0x6000;  // MXCSR.RC: 00 = to nearest
    unsigned saved_;
};

/// This file's kernels for the shared pass schedule (math/ntt_schedule.hpp), which hands them the double twiddle
/// tables (w, w / q) as (w, wp).
struct Kernels {
    using Consts = ::ember::detail::Consts;
    using LastConsts = ::ember::detail::LastConsts;
    using Cd = const double*;
    static constexpr int kTailGroups = ::ember::detail::kTailGroups;
    template <bool First>
    static void fwd2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, Cd w, Cd wq, const Consts& k) {
        fwd_radix2<First>(a, n, t, i0, i1, Tables{w, wq}, k);
    }
    template <bool First>
    static void fwd4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, Cd w, Cd wq, const Consts& k) {
        fwd_radix4<First>(a, n, t, i0, i1, Tables{w, wq}, k);
    }
    template <bool First>
    static void fwd_tail(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& k, NttPrefetch* pf, Twiddles) {
        fwd_tail16<First>(a, g0, g1, tb, k, pf);
    }
    template <bool Last>
    static void inv_head(u64* a, std::size_t g0, std::size_t g1, const NttTables& tb, const Consts& k, const LastConsts& lc, Twiddles) {
        inv_head16<Last>(a, g0, g1, tb, k, lc);
    }
    template <bool Last, bool Pf>
    static void inv2(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, Cd w, Cd wq, const Consts& k,
                     const LastConsts& lc, NttPrefetch* pf) {
        inv_radix2<Last, Pf>(a, n, t, i0, i1, Tables{w, wq}, k, lc, pf);
    }
    template <bool Last, bool Pf>
    static void inv4(u64* a, std::size_t n, std::size_t t, std::size_t i0, std::size_t i1, Cd w, Cd wq, const Consts& k,
                     const LastConsts& lc, NttPrefetch* pf) {
        inv_radix4<Last, Pf>(a, n, t, i0, i1, Tables{w, wq}, k, lc, pf);
    }
};

}  // namespace

void ntt_forward_avx2_fma(u64* a, const NttTables& tb) { ntt_forward_avx2_fma(a, tb, nullptr); }

void ntt_forward_avx2_fma(u64* a, const NttTables& tb, NttPrefetch* pf) {
    if (tb.n < 16) { ntt_forward_scalar(a, tb); return; }
    const NearestRounding rn;
    ntt_schedule::forward<Kernels>(a, tb, tb.psi_rev_fp.data(), tb.psi_rev_fpq.data(), pf, Twiddles::kFull);
}

void ntt_inverse_avx2_fma(u64* a, const NttTables& tb) { ntt_inverse_avx2_fma(a, tb, nullptr); }

void ntt_inverse_avx2_fma(u64* a, const NttTables& tb, NttPrefetch* pf) {
    if (tb.n < 16) { ntt_inverse_scalar(a, tb); return; }
    const NearestRounding rn;
    ntt_schedule::inverse<Kernels>(a, tb, tb.ipsi_rev_fp.data(), tb.ipsi_rev_fpq.data(), pf, Twiddles::kFull);
}

}  // namespace ember::detail
