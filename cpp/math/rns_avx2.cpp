// BaseConverter::convert with AVX2 (x86-64-v3: compiled with -mavx2 -mbmi2 -mfma; entered only after
// base_convert_avx2_supported). Any bases of at most 63 source primes, every prime in [2, 2^61). Four coefficients
// per vector, one per 64-bit lane; the same blocked scheme as base_convert_scalar:
//
//  * Scale: y_i = [x_i Q~_i]_{q_i} for a block of coefficients with the AVX2 Shoup product (avx2::mul_shoup_lazy4,
//    [0, 4q), then two conditional subtractions: fully reduced, so the very values of the scalar kernel). Each y_i
//    is stored with its high half y_i >> 32 beside it (the operand of the 32 x 32 -> 64-bit lane products).
//  * Centered: v = llround(sum_i y_i / q_i), the double operations of BaseConverter::scale_block in the same order
//    (u64 -> double with one rounding, product by 1/q_i, running sum from 0), with an empty asm barrier between the
//    product and the sum so that they are never fused into an FMA (this file is compiled with -mfma, the scalar one
//    is not); then llround for f >= 0 as trunc(f) + (f - trunc(f) >= 0.5), exact. v is one more row of y (v <= k,
//    high half 0) whose constant is p_j - [Q]_{p_j}, so the correction -v Q is one more term, as in the scalar code.
//  * Accumulation: x = sum_i y_i c_i exactly (c_i = [Q_i*]_{p_j} < p_j, y_i < 2^61) per lane from the four
//    32 x 32 -> 64-bit products ll, lh, hl, hh (vpmuludq) as
//        L  += ll            (mod 2^64: it wraps),
//        Lh += ll >> 32      (exact: below 2^38),
//        M  += lh + hl,      H += hh   (hh < 2^58: 64 terms fit).
//    The low halves of the ll sum to S = L - (Lh << 32) (mod 2^64, exact because S < 64 * 2^32), so the wrapping of
//    L loses nothing, at one shift and two additions per term. M is kept below 2^64 - 2^39 from bounds on the actual
//    constants and source sizes (max y_i * c_i split the same way): a term that could push it past that is preceded by
//    a normalization, H += M >> 32, M mod 2^32 (the key-switching shapes need none, or one). Then
//        x = (S mod 2^32) + 2^32 T + 2^64 H,   T = M + Lh + (S >> 32),
//    lo = x mod 2^64 = L + (M << 32), hi = H + (T >> 32).
//  * Reduction to [0, p_j): when the scalar kernel's Barrett estimate applies (TargetReduce::fast, the same s and mu:
//    the estimate is at most 2 below the quotient), qhat = mulhi_est(x >> s, mu) (up to 2 further below), r = lo -
//    qhat p in [0, 5p); otherwise (very wide sums) hi * (2^64 mod p) by Shoup plus lo by Shoup with w = 1, each in
//    [0, 4p), r in [0, 8p). Conditional subtractions of 4p, 2p, p finish either.
// Every output is the exact residue, so the kernel is bit-identical to base_convert_scalar and convert_reference.
// Two targets share each load of y (2 x 4 accumulators); the constants are stored pre-broadcast (vpmuludq memory
// operands). The n % 4 tail of a range uses masked loads and stores: nothing is read or written outside [begin, end).
#include "math/avx2_util.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "math/cpu_features.hpp"
#include "math/rns.hpp"
#include "math/vec_simd.hpp"

namespace ember::detail {

namespace {

using namespace avx2;

constexpr std::size_t kBlock = 64;             // coefficients per block
constexpr std::size_t kGroups = kBlock / 4;    // vectors per row of the block
constexpr u64 kMask32 = 0xffffffffu;

/// 32-byte aligned storage of four words (a lane vector in memory); local types keep the std::vector code that this
/// AVX2 file instantiates private to it.
struct alignas(32) Lane4 {
    u64 w[4];
};
struct Chunk {
    std::size_t end;  // terms [previous end, end) are accumulated before the next normalization
};

/// One 128-bit sum per lane (see the header comment).
struct Acc {
    V L, Lh, M, H;
};

inline void mac(Acc& a, V y, V yh, V c, V ch) {
    const V ll = _mm256_mul_epu32(y, c);
    a.L = add(a.L, ll);
    a.Lh = add(a.Lh, _mm256_srli_epi64(ll, 32));
    a.M = add(a.M, add(_mm256_mul_epu32(y, ch), _mm256_mul_epu32(yh, c)));
    a.H = add(a.H, _mm256_mul_epu32(yh, ch));
}

inline void normalize(Acc& a, V mask32) {
    a.H = add(a.H, _mm256_srli_epi64(a.M, 32));
    a.M = _mm256_and_si256(a.M, mask32);
}

/// The reduction constants of one target prime.
struct TargetV {
    ModV m;
    V mu, muh;             // fast: Barrett constant floor(2^(64+s) / p)
    __m128i sh_hi, sh_lo;  // fast: 64 - s, s
    ShoupV r64;            // otherwise: 2^64 mod p
    V pinv, pinvh;         // otherwise: floor(2^64 / p), the Shoup companion of 1
    bool fast;

    TargetV(u64 p, bool fast_, int s, u64 mu_)
        : m(p), mu(bcast(mu_)), muh(bcast(mu_ >> 32)), sh_hi(shift_count(64 - s)), sh_lo(shift_count(s)),
          r64(static_cast<u64>((u128(1) << 64) % p), static_cast<u64>((((u128(1) << 64) % p) << 64) / p)),
          pinv(bcast(static_cast<u64>((u128(1) << 64) / p))), pinvh(bcast(static_cast<u64>(((u128(1) << 64) / p) >> 32))),
          fast(fast_) {}
};

/// base_convert_scalar's TargetReduce choice (rns.cpp): the s with the smallest error bound of the two-multiplication
/// Barrett estimate for sums up to xmax, when that bound is below 2 (fast); mu = floor(2^(64+s) / p).
TargetV make_target(const Modulus& pm, u128 xmax) {
    const u64 q = pm.q;
    int s = 0;
    bool fast = false;
    if (q >= 4 && (q & (q - 1)) != 0) {
        int xbits = 0;
        while (xbits < 128 && (xmax >> xbits) != 0) ++xbits;
        long double best = 2.0L;
        for (int t = std::max(1, xbits - 64); t <= pm.bits - 1; ++t) {
            const long double e = std::ldexp(static_cast<long double>(xmax), -(64 + t)) + std::ldexp(1.0L, t) / static_cast<long double>(q);
            if (e < best - 1e-6L) { best = e; s = t; fast = true; }
        }
    }
    const u64 mu = fast ? static_cast<u64>((u128(1) << (64 + s)) / q) : 0;
    return TargetV(q, fast, fast ? s : 1, mu);
}

/// x mod p from the accumulators.
inline V reduce(const Acc& a, const TargetV& t) {
    const V s = sub(a.L, _mm256_slli_epi64(a.Lh, 32));              // sum of the low halves of ll, < 2^38
    const V T = add(add(a.M, a.Lh), _mm256_srli_epi64(s, 32));
    const V hi = add(a.H, _mm256_srli_epi64(T, 32));
    const V lo = add(a.L, _mm256_slli_epi64(a.M, 32));
    V r;
    if (t.fast) {
        const V c1 = _mm256_or_si256(_mm256_sll_epi64(hi, t.sh_hi), _mm256_srl_epi64(lo, t.sh_lo));  // x >> s
        r = sub(lo, mullo(mulhi_est(c1, t.mu, t.muh), t.m.q, t.m.qs));                                // [0, 5p)
    } else {
        const V rh = mul_shoup_lazy4(hi, t.r64, t.m);                                                  // [0, 4p)
        const V rl = sub(lo, mullo(mulhi_est(lo, t.pinv, t.pinvh), t.m.q, t.m.qs));                    // [0, 4p)
        r = add(rh, rl);                                                                               // [0, 8p)
    }
    return reduce_once(reduce_once(reduce_once(r, t.m.q4), t.m.q2), t.m.q);
}

/// y (< 2^63) as a double, rounded once to nearest (static_cast<double>(y)): the two halves as exact doubles
/// (2^84 + hi 2^32 and 2^52 + lo from their bit patterns), the first minus 2^84 + 2^52 exactly, plus the second.
inline __m256d to_double(V y) {
    const V lo = _mm256_blend_epi32(y, bcast(0x4330000000000000ull), 0xaa);
    const V hi = _mm256_or_si256(_mm256_srli_epi64(y, 32), bcast(0x4530000000000000ull));
    const __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(hi), _mm256_set1_pd(0x1.00000001p84));  // 2^84 + 2^52
    return _mm256_add_pd(d, _mm256_castsi256_pd(lo));
}

/// The outputs of one or two targets (TWO) for the ng groups of a block: rows of y at yb ([g][i][y, y >> 32]),
/// constants at cp ([i][c0, c0 >> 32, c1, c1 >> 32], broadcast), normalizations after each chunk but the last.
template <bool TWO>
void targets(const u64* yb, std::size_t kt, std::size_t ng, std::size_t nb, const u64* cp, const Chunk* chunks,
             std::size_t nchunks, const TargetV& t0, const TargetV* t1, u64* d0, u64* d1) {
    const V zero = _mm256_setzero_si256();
    const V mask32 = bcast(kMask32);
    for (std::size_t g = 0; g < ng; ++g) {
        Acc a0{zero, zero, zero, zero}, a1{zero, zero, zero, zero};
        const u64* yp = yb + g * kt * 8;
        std::size_t i = 0;
        for (std::size_t ch = 0; ch < nchunks; ++ch) {
            const std::size_t e = chunks[ch].end;
            for (; i < e; ++i) {
                const V y = load(yp + 8 * i), yh = load(yp + 8 * i + 4);
                const u64* c = cp + 16 * i;
                mac(a0, y, yh, load(c), load(c + 4));
                if constexpr (TWO) mac(a1, y, yh, load(c + 8), load(c + 12));
            }
            if (ch + 1 < nchunks) {
                normalize(a0, mask32);
                if constexpr (TWO) normalize(a1, mask32);
            }
        }
        const std::size_t rem = nb - 4 * g;
        if (rem >= 4) {
            store(d0 + 4 * g, reduce(a0, t0));
            if constexpr (TWO) store(d1 + 4 * g, reduce(a1, *t1));
        } else {
            const V k = tail_mask(rem);
            store_masked(d0 + 4 * g, k, reduce(a0, t0));
            if constexpr (TWO) store_masked(d1 + 4 * g, k, reduce(a1, *t1));
        }
    }
}

}  // namespace

void base_convert_avx2(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                       std::size_t end, bool centered) {
    const auto& from = conv.from();
    const auto& to = conv.to();
    const std::size_t k = from.size(), m = to.size();
    if (begin >= end || m == 0) return;
    const std::size_t kt = centered ? k + 1 : k;  // terms per output (row k: v)
    const std::size_t mp = (m + 1) / 2;           // pairs of targets

    // ---- plan: broadcast constants, per-target reduction, normalization chunks per pair ----
    std::vector<Lane4> cst(mp * kt * 4);
    std::vector<TargetV> tv;
    tv.reserve(m);
    auto ymax = [&](std::size_t i) -> u64 { return i < k ? from[i].q - 1 : k; };  // bound on row i (v <= k)
    auto put = [&](std::size_t j, std::size_t i, u64 c) {
        Lane4* slot = cst.data() + ((j / 2) * kt + i) * 4 + (j & 1) * 2;
        for (int l = 0; l < 4; ++l) { slot[0].w[l] = c; slot[1].w[l] = c >> 32; }
    };
    // per term and target: the bound on lh + hl
    std::vector<Lane4> mid;  // [j][i] in w[0] (Lane4 to stay with local types)
    mid.resize(m * kt);
    for (std::size_t j = 0; j < m; ++j) {
        const u64 p = to[j].q;
        u128 xmax = 0;
        for (std::size_t i = 0; i < kt; ++i) {
            u64 c;
            if (i < k) {
                c = conv.qhat_mod_p[j][i] % p;
            } else {
                const u64 qm = conv.q_mod_p[j] % p;
                c = qm ? p - qm : 0;
            }
            put(j, i, c);
            xmax += static_cast<u128>(ymax(i)) * c;
            mid[j * kt + i].w[0] = std::min(ymax(i), kMask32) * (c >> 32) + (ymax(i) >> 32) * (c & kMask32);
        }
        // the scalar kernel's xmax (its v bound is k (p - 1), at least ours)
        u128 xs = 0;
        for (std::size_t i = 0; i < k; ++i) xs += static_cast<u128>(from[i].q - 1) * conv.qhat_mod_p[j][i];
        if (centered) xs += static_cast<u128>(k) * (p - 1);
        tv.push_back(make_target(to[j], std::max(xs, xmax)));
    }
    // chunks: M starts below 2^32 (after a normalization) and must stay below 2^64 - 2^39
    const u128 budget = (u128(1) << 64) - (u128(1) << 39) - (u128(1) << 32);
    std::vector<Chunk> chunks;
    std::vector<Chunk> chunk_start(mp + 1);  // pair jp: chunks[chunk_start[jp].end, chunk_start[jp + 1].end)
    for (std::size_t jp = 0; jp < mp; ++jp) {
        chunk_start[jp].end = chunks.size();
        const std::size_t j0 = 2 * jp, j1 = std::min(j0 + 1, m - 1);
        u128 s0 = 0, s1 = 0;
        for (std::size_t i = 0; i < kt; ++i) {
            const u64 b0 = mid[j0 * kt + i].w[0], b1 = mid[j1 * kt + i].w[0];
            if (s0 + b0 > budget || s1 + b1 > budget) {
                chunks.push_back({i});
                s0 = s1 = 0;
            }
            s0 += b0;
            s1 += b1;
        }
        chunks.push_back({kt});
    }
    chunk_start[mp].end = chunks.size();

    std::vector<Lane4> ybuf(kGroups * kt * 2);
    u64* yb = ybuf[0].w;
    const u64* cbase = cst[0].w;

    for (std::size_t c0 = begin; c0 < end; c0 += kBlock) {
        const std::size_t nb = std::min(kBlock, end - c0);
        const std::size_t ng = (nb + 3) / 4, full = nb / 4;

        // ---- y_i = [x_i Q~_i]_{q_i} ----
        for (std::size_t i = 0; i < k; ++i) {
            const ModV q(from[i].q);
            const ShoupV w(conv.qhat_inv[i].w, conv.qhat_inv[i].wp);
            const u64* src = in[i] + c0;
            auto put_y = [&](std::size_t g, V x) {
                const V y = reduce_once(reduce_once(mul_shoup_lazy4(x, w, q), q.q2), q.q);
                u64* d = yb + (g * kt + i) * 8;
                store(d, y);
                store(d + 4, _mm256_srli_epi64(y, 32));
            };
            for (std::size_t g = 0; g < full; ++g) put_y(g, load(src + 4 * g));
            if (full < ng) put_y(full, load_masked(src + 4 * full, tail_mask(nb - 4 * full)));
        }

        // ---- v = llround(sum_i y_i / q_i) (BaseConverter::scale_block's double operations, in its order) ----
        if (centered) {
            const __m256d half = _mm256_set1_pd(0.5);
            for (std::size_t g = 0; g < ng; ++g) {
                const u64* yp = yb + g * kt * 8;
                __m256d f = _mm256_setzero_pd();
                for (std::size_t i = 0; i < k; ++i) {
                    __m256d prod = _mm256_mul_pd(to_double(load(yp + 8 * i)), _mm256_set1_pd(conv.inv_q[i]));
                    __asm__("" : "+x"(prod));  // keeps the product rounded on its own (no FMA contraction)
                    f = _mm256_add_pd(f, prod);
                }
                const __m256d tr = _mm256_round_pd(f, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
                const __m256d up = _mm256_cmp_pd(_mm256_sub_pd(f, tr), half, _CMP_GE_OQ);
                const V v = sub(_mm256_cvtepi32_epi64(_mm256_cvttpd_epi32(tr)), _mm256_castpd_si256(up));
                u64* d = yb + (g * kt + k) * 8;
                store(d, v);
                store(d + 4, _mm256_setzero_si256());
            }
        }

        // ---- outputs, two targets at a time ----
        for (std::size_t jp = 0; jp < mp; ++jp) {
            const std::size_t j0 = 2 * jp, j1 = j0 + 1;
            const u64* cp = cbase + jp * kt * 16;
            const Chunk* ch = chunks.data() + chunk_start[jp].end;
            const std::size_t nch = chunk_start[jp + 1].end - chunk_start[jp].end;
            if (j1 < m) targets<true>(yb, kt, ng, nb, cp, ch, nch, tv[j0], &tv[j1], out[j0] + c0, out[j1] + c0);
            else targets<false>(yb, kt, ng, nb, cp, ch, nch, tv[j0], nullptr, out[j0] + c0, nullptr);
        }
    }
}

}  // namespace ember::detail
