// AVX2 element-wise kernels (x86-64-v3: compiled with -mavx2 -mbmi2 -mfma; entered only after vec_avx2_supported()
// in vec_ops.cpp). Four 64-bit lanes, one coefficient each; the n % 4 tail uses masked loads and stores
// (_mm256_maskload_epi64 / _mm256_maskstore_epi64: nothing is read or written past n). The arithmetic is that of the
// AVX-512F kernels (math/vec_ops_avx512.cpp) with the AVX2 lane helpers of math/avx2_util.hpp: 64-bit products from
// 32 x 32 -> 64-bit pieces (vpmuludq), low products mod 2^64 from vpmuludq + vpmulld (avx2::mullo), and conditional
// subtractions picking on the sign of r - m (avx2::reduce_once; every value here is below 2^63, q < 2^61).
//
//  * vec_add / sub / neg / add_const: the scalar formulas (any q < 2^61, c < q).
//  * vec_mul / vec_mul_add: x = a * b (+ acc) < q^2 as H * 2^64 + M * 2^32 + L (hh, lh + hl, ll; mul_add adds acc's
//    low half to L, which cannot carry since ll <= (2^32 - 1)^2, and its high half to M), then the scalar Barrett64
//    reduction (s = bits - 2, mu = floor(2^(64+s) / q)): c1 = floor(x / 2^s) read off the parts exactly
//    (BarrettV::split), qhat = mulhi_est63(c1, mu) at most 1 below the Barrett64 estimate, itself at most 1 below the
//    quotient: r = lo - qhat q (mod 2^64) in [0, 3q), two conditional subtractions.
//  * constants (Shoup, avx2::mul_shoup_lazy4): [0, 4q), two conditional subtractions (three for mul_const_add).
//  * vec_dot: per lane x = H * 2^64 + M * 2^32 + L with L the sum of the low halves of the ll products (never
//    carries), M the sums of lh + hl and of ll's high halves, H of hh. Terms per reduction: the scalar bound
//    (dot_barrett_chunk: x < 2^(62+bits)), capped so that M stays below 2^64 - 2^32; a chunk's residue starts the next
//    one in L. Reduction: the Barrett one above with mulhi_est (up to 2 below, c1 may reach 2^64): r in [0, 5q), three
//    conditional subtractions. Streaming, as the scalar kernel: 1..4 terms within one chunk are read in one pass
//    (at most 8 streams); otherwise the coefficients go in blocks of kDotBlock, whose accumulators stay in L1, and
//    each block is swept by groups of up to kDotGroup terms, every array being read contiguously.
// Outputs are fully reduced, so every kernel is bit-identical to its scalar counterpart. Moduli below 4 or powers of
// two (no Barrett64 constants) take the scalar code for the variable products (vec_mul, vec_mul_add, vec_dot).
#include "math/avx2_util.hpp"

#include <algorithm>

#include "math/vec_simd.hpp"

namespace ember::detail {

namespace {

using namespace avx2;

/// A 128-bit value per lane as H * 2^64 + M * 2^32 + L (M, H: sums of partial products, not single words).
struct Wide {
    V L, M, H;
};

/// a * b for a, b < 2^61: L = ll, M = lh + hl (each below 2^61), H = hh.
inline Wide product(V a, V b) {
    const V ah = _mm256_srli_epi64(a, 32), bh = _mm256_srli_epi64(b, 32);
    const V ll = _mm256_mul_epu32(a, b), lh = _mm256_mul_epu32(a, bh);
    const V hl = _mm256_mul_epu32(ah, b), hh = _mm256_mul_epu32(ah, bh);
    return {ll, _mm256_add_epi64(lh, hl), hh};
}

/// x += a * b for a, b < 2^61, with ll split: its low half into L (so that L never carries), its high half into M.
inline void mac(Wide& x, V a, V b, V mask32) {
    const V ah = _mm256_srli_epi64(a, 32), bh = _mm256_srli_epi64(b, 32);
    const V ll = _mm256_mul_epu32(a, b), lh = _mm256_mul_epu32(a, bh);
    const V hl = _mm256_mul_epu32(ah, b), hh = _mm256_mul_epu32(ah, bh);
    x.L = _mm256_add_epi64(x.L, _mm256_and_si256(ll, mask32));
    x.M = _mm256_add_epi64(x.M, _mm256_add_epi64(_mm256_add_epi64(lh, hl), _mm256_srli_epi64(ll, 32)));
    x.H = _mm256_add_epi64(x.H, hh);
}

/// The Barrett64 constants in lanes. BIG: s >= 32 (q >= 2^33).
template <bool BIG>
struct BarrettV {
    ModV m;
    V mu, muh, mask32;
    __m128i sh_hi, sh_mid;
    explicit BarrettV(const Barrett64& br)
        : m(br.q), mu(bcast(br.mu)), muh(bcast(br.mu >> 32)), mask32(bcast(0xffffffffu)),
          sh_hi(shift_count(BIG ? 64 - br.s : 32 - br.s)), sh_mid(shift_count(BIG ? br.s - 32 : br.s)) {}

    /// c1 = floor(x / 2^s) (returned) and lo = x mod 2^64, for x = H 2^64 + M 2^32 + L < 2^(64+s) with
    /// M + (L >> 32) < 2^64. With y = floor(x / 2^32) = H 2^32 + m1, m1 = M + (L >> 32):
    ///   BIG:   c1 = floor(y / 2^(s-32)) = H 2^(64-s) + (m1 >> (s-32))   (2^(s-32) divides H 2^32);
    ///   small: c1 = (y << (32-s)) | ((L mod 2^32) >> s)                  (y < 2^(32+s) <= 2^63).
    V split(const Wide& x, V& lo) const {
        const V m1 = _mm256_add_epi64(x.M, _mm256_srli_epi64(x.L, 32));
        lo = _mm256_add_epi64(x.L, _mm256_slli_epi64(x.M, 32));
        if constexpr (BIG) return _mm256_add_epi64(_mm256_sll_epi64(x.H, sh_hi), _mm256_srl_epi64(m1, sh_mid));
        const V y = _mm256_add_epi64(_mm256_slli_epi64(x.H, 32), m1);
        return _mm256_or_si256(_mm256_sll_epi64(y, sh_hi), _mm256_srl_epi64(_mm256_and_si256(x.L, mask32), sh_mid));
    }
    /// x mod q for x < q^2: c1 < 2^(bits+2) <= 2^63 and mu < 2^63, so mulhi_est63 applies (at most 1 below the
    /// Barrett64 estimate, which is at most 1 below the quotient): r in [0, 3q).
    V reduce_small(const Wide& x) const {
        V lo;
        const V c1 = split(x, lo);
        const V r = _mm256_sub_epi64(lo, mullo(mulhi_est63(c1, mu, muh), m.q, m.qs));
        return reduce_once(reduce_once(r, m.q2), m.q);
    }
    /// x mod q for x < 2^(62+bits) = 2^(64+s): the Barrett64 estimate is at most 2 below the quotient (see
    /// vec_dot_scalar), mulhi_est up to 2 below that: r in [0, 5q).
    V reduce_wide(const Wide& x) const {
        V lo;
        const V c1 = split(x, lo);
        const V r = _mm256_sub_epi64(lo, mullo(mulhi_est(c1, mu, muh), m.q, m.qs));
        return reduce_once(reduce_once(reduce_once(r, m.q4), m.q2), m.q);
    }
};

template <bool BIG, bool ACC>
void mul_kernel(u64* out, const u64* a, const u64* b, std::size_t n, const Barrett64& br) {
    const BarrettV<BIG> B(br);
    if constexpr (ACC) {
        map_lanes(out, n, [&](V av, V bv, V cv) {
            // a * b + acc <= (q-1)^2 + q - 1 < q^2, as in the scalar code; ll + (acc mod 2^32) < 2^64
            Wide x = product(av, bv);
            x.L = _mm256_add_epi64(x.L, _mm256_and_si256(cv, B.mask32));
            x.M = _mm256_add_epi64(x.M, _mm256_srli_epi64(cv, 32));
            return B.reduce_small(x);
        }, a, b, static_cast<const u64*>(out));
    } else {
        map_lanes(out, n, [&](V av, V bv) { return B.reduce_small(product(av, bv)); }, a, b);
    }
}

// ---- vec_dot ---------------------------------------------------------------------------------------------------------

/// Coefficients per block of the streaming dot (accumulators: 24 bytes each, 12 KiB) and terms per sweep of a block
/// (2 streams each).
constexpr std::size_t kDotBlock = 512;
constexpr std::size_t kDotGroup = 4;

/// Terms per reduction: the scalar bound and M < 2^64 - 2^32 (see BarrettV::split; L < 2^61 + chunk 2^32 adds less
/// than 2^32 to M there), with lh + hl + (ll >> 32) <= 2 (2^32 - 1) ((q-1) >> 32) + 2^32 - 1 per term.
std::size_t dot_chunk(const Modulus& m) {
    const u128 per_term = u128(2) * 0xffffffffu * ((m.q - 1) >> 32) + 0xffffffffu;
    const u128 m_cap = (u128(1) << 64) - (u128(1) << 32) - 1;
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::min<u128>(dot_barrett_chunk(m), m_cap / per_term)));
}

enum class Start { kZero, kAdd, kReduceAdd };

/// One sweep of G terms over coefficients [i0, i0 + nb): the accumulators acc[v] (4 coefficients each) start from
/// zero (kZero), from their value (kAdd) or from its residue (kReduceAdd: the previous chunk is full); with FINAL the
/// sums are reduced into out instead of being kept. The words of a coefficient are all read before its output is
/// written (out may alias an operand).
template <bool BIG, int G, Start S, bool FINAL>
void dot_sweep(Wide* acc, u64* out, const u64* const* a, const u64* const* b, std::size_t i0, std::size_t nb,
               const BarrettV<BIG>& B) {
    const u64* A[G];
    const u64* Bp[G];
    for (int j = 0; j < G; ++j) { A[j] = a[j] + i0; Bp[j] = b[j] + i0; }
    const V zero = _mm256_setzero_si256();
    auto step = [&](std::size_t v, auto&& ld) {
        Wide x;
        if constexpr (S == Start::kZero) x = Wide{zero, zero, zero};
        else if constexpr (S == Start::kAdd) x = acc[v];
        else x = Wide{B.reduce_wide(acc[v]), zero, zero};
        for (int j = 0; j < G; ++j) mac(x, ld(A[j] + 4 * v), ld(Bp[j] + 4 * v), B.mask32);
        return x;
    };
    const std::size_t full = nb / 4;
    for (std::size_t v = 0; v < full; ++v) {
        const Wide x = step(v, [](const u64* p) { return load(p); });
        if constexpr (FINAL) store(out + i0 + 4 * v, B.reduce_wide(x));
        else acc[v] = x;
    }
    if (nb % 4) {
        const V k = tail_mask(nb % 4);
        const Wide x = step(full, [k](const u64* p) { return load_masked(p, k); });
        if constexpr (FINAL) store_masked(out + i0 + 4 * full, k, B.reduce_wide(x));
        else acc[full] = x;
    }
}

template <bool BIG, int G>
void dot_sweep_g(Start s, bool final, Wide* acc, u64* out, const u64* const* a, const u64* const* b, std::size_t i0,
                 std::size_t nb, const BarrettV<BIG>& B) {
    switch (s) {
        case Start::kZero:
            return final ? dot_sweep<BIG, G, Start::kZero, true>(acc, out, a, b, i0, nb, B)
                         : dot_sweep<BIG, G, Start::kZero, false>(acc, out, a, b, i0, nb, B);
        case Start::kAdd:
            return final ? dot_sweep<BIG, G, Start::kAdd, true>(acc, out, a, b, i0, nb, B)
                         : dot_sweep<BIG, G, Start::kAdd, false>(acc, out, a, b, i0, nb, B);
        case Start::kReduceAdd:
            return final ? dot_sweep<BIG, G, Start::kReduceAdd, true>(acc, out, a, b, i0, nb, B)
                         : dot_sweep<BIG, G, Start::kReduceAdd, false>(acc, out, a, b, i0, nb, B);
    }
}

template <bool BIG>
void dot_sweep_any(std::size_t g, Start s, bool final, Wide* acc, u64* out, const u64* const* a, const u64* const* b,
                   std::size_t i0, std::size_t nb, const BarrettV<BIG>& B) {
    static_assert(kDotGroup == 4);
    switch (g) {
        case 1: return dot_sweep_g<BIG, 1>(s, final, acc, out, a, b, i0, nb, B);
        case 2: return dot_sweep_g<BIG, 2>(s, final, acc, out, a, b, i0, nb, B);
        case 3: return dot_sweep_g<BIG, 3>(s, final, acc, out, a, b, i0, nb, B);
        default: return dot_sweep_g<BIG, 4>(s, final, acc, out, a, b, i0, nb, B);
    }
}

template <bool BIG>
void dot_kernel(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t chunk,
                std::size_t n, const Barrett64& br) {
    const BarrettV<BIG> B(br);
    if (terms <= chunk && terms <= kDotGroup) {
        // one pass over the whole limb: at most 8 streams, the sums in registers
        return dot_sweep_any<BIG>(terms, Start::kZero, true, nullptr, out, a, b, 0, n, B);
    }
    Wide acc[kDotBlock / 4];
    for (std::size_t i0 = 0; i0 < n; i0 += kDotBlock) {
        const std::size_t nb = std::min(kDotBlock, n - i0);
        std::size_t used = 0;  // terms in the current chunk
        for (std::size_t t = 0; t < terms;) {
            Start s = t == 0 ? Start::kZero : Start::kAdd;
            if (used == chunk) { s = Start::kReduceAdd; used = 0; }
            const std::size_t g = std::min({kDotGroup, terms - t, chunk - used});
            dot_sweep_any<BIG>(g, s, t + g == terms, acc, out, a + t, b + t, i0, nb, B);
            t += g;
            used += g;
        }
    }
}

}  // namespace

// ---- additive kernels ----------------------------------------------------------------------------------------------

void vec_add_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const V q = bcast(m.q);
    map_lanes(out, n, [&](V x, V y) { return reduce_once(_mm256_add_epi64(x, y), q); }, a, b);
}
void vec_sub_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const V q = bcast(m.q);
    map_lanes(out, n, [&](V x, V y) { return add_if_neg(_mm256_sub_epi64(x, y), q); }, a, b);
}
void vec_neg_avx2(u64* out, const u64* a, std::size_t n, const Modulus& m) {
    const V q = bcast(m.q);
    const V zero = _mm256_setzero_si256();
    map_lanes(out, n, [&](V x) { return _mm256_andnot_si256(_mm256_cmpeq_epi64(x, zero), _mm256_sub_epi64(q, x)); }, a);
}
void vec_add_const_avx2(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m) {
    const V q = bcast(m.q);
    const V cv = bcast(c);
    map_lanes(out, n, [&](V x) { return reduce_once(_mm256_add_epi64(x, cv), q); }, a);
}

// ---- products (any q < 2^61) ---------------------------------------------------------------------------------------

void vec_mul_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const Barrett64 br(m);
    if (!br.ok) return vec_mul_scalar(out, a, b, n, m);
    if (br.s >= 32) mul_kernel<true, false>(out, a, b, n, br);
    else mul_kernel<false, false>(out, a, b, n, br);
}
void vec_mul_add_avx2(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const Barrett64 br(m);
    if (!br.ok) return vec_mul_add_scalar(acc, a, b, n, m);
    if (br.s >= 32) mul_kernel<true, true>(acc, a, b, n, br);
    else mul_kernel<false, true>(acc, a, b, n, br);
}
void vec_mul_const_avx2(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const ModV q(m.q);
    const ShoupV w(c.w, c.wp);
    map_lanes(out, n, [&](V x) { return reduce_once(reduce_once(mul_shoup_lazy4(x, w, q), q.q2), q.q); }, a);
}
void vec_mul_const_add_avx2(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const ModV q(m.q);
    const ShoupV w(c.w, c.wp);
    map_lanes(out, n, [&](V x, V o) {
        const V p = reduce_once(mul_shoup_lazy4(x, w, q), q.q2);                    // [0, 2q)
        return reduce_once(reduce_once(_mm256_add_epi64(p, o), q.q2), q.q);         // [0, 3q) -> [0, q)
    }, a, static_cast<const u64*>(out));
}
void vec_sub_mul_const_avx2(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    const ModV q(m.q);
    const ShoupV w(c.w, c.wp);
    map_lanes(out, n, [&](V x, V y) {
        const V d = _mm256_sub_epi64(_mm256_add_epi64(x, q.q), y);  // a + q - b in (0, 2q)
        return reduce_once(reduce_once(mul_shoup_lazy4(d, w, q), q.q2), q.q);
    }, a, b);
}

void vec_dot_avx2(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    if (terms == 0) return;  // as the plain loop: nothing is written
    const Barrett64 br(m);
    if (!br.ok) return vec_dot_scalar(out, a, b, terms, n, m);
    const std::size_t chunk = dot_chunk(m);
    if (br.s >= 32) dot_kernel<true>(out, a, b, terms, chunk, n, br);
    else dot_kernel<false>(out, a, b, terms, chunk, n, br);
}

}  // namespace ember::detail
