// BaseConverter::convert with AVX-512 IFMA (compiled with AVX-512 F/DQ/VL/BW/IFMA flags; entered only after
// base_convert_ifma_supported). Works for any source and target primes in [2^20, 2^61), 50- and 60-bit mixed.
//
// Per block of coefficients, the k values y_i = [x_i Q~_i]_{q_i} are laid out as "rows" of 52-bit digits:
// one row y_i when q_i < 2^52, two rows (y_i mod 2^52, y_i >> 52) otherwise, plus one row v (centered mode).
// Every output limb p_j is then a dot product of those rows with per-(j, row) constants
//     c = [Q_i*]_{p_j} * 2^(52 * part) * 2^104 mod p_j      (part 1 for the high digit row)
//     c = (p_j - [Q]_{p_j}) * 2^104 mod p_j                 (the v row: subtracts v Q)
// accumulated with _mm512_madd52lo/hi_epu64 into 52-bit-digit accumulators (2 digits when p_j < 2^52, 3 when
// the constants have 61 bits: c = c0 + c1 2^52), followed by two Montgomery steps by 2^52 (which remove the
// 2^104 factor) and one conditional subtraction. The outputs are the exact residues, so they are bit-identical
// to convert_reference; v itself is computed as in the reference (same double operations in the same order,
// without contraction), then rounded half away from zero.
//
// Bounds (R <= 2k + 1 <= 129 rows, every row digit and every constant digit below 2^52): the low accumulators
// take R values below 2^52, far from 2^64. Small targets: x = D0 + D1 2^52 < R 2^104, the first step leaves
// E < R 2^52 + p + 1, the second F < R + 2 + p < 2p. Big targets: x < R 2^113 (c < 2^61), F < R 2^9 + p + 1 < 2p.
#include "math/ifma_util.hpp"

#include <algorithm>
#include <vector>

#include "math/cpu_features.hpp"
#include "math/rns.hpp"
#include "math/vec_simd.hpp"

namespace ember::detail {

namespace {

using namespace ifma;

constexpr std::size_t kBlock = 128;  // coefficients per block (16 groups of 8 lanes)

/// -p^-1 mod 2^52 (p odd).
u64 neg_inv52(u64 p) {
    u64 inv = p;  // p * p = 1 mod 8: correct to 3 bits; each Newton step doubles that (mod 2^64)
    for (int i = 0; i < 6; ++i) inv *= 2 - p * inv;
    return (0 - inv) & kMask52;
}

struct Plan {
    std::size_t k = 0, m = 0, rows = 0;
    std::vector<int> src_row;         // first row of source i
    std::vector<unsigned char> kind;  // source i: 0: q < 2^51 (52-bit Shoup), 1: q < 2^52, 2: two rows (1, 2: 64-bit Shoup)
    std::vector<u64> c0, c1;          // [j * rows + r]: constant digits (c1 only for targets >= 2^52)
    std::vector<unsigned char> big;   // target j >= 2^52
    std::vector<u64> pinv;            // -p_j^-1 mod 2^52
};

Plan make_plan(const BaseConverter& conv, bool centered) {
    const auto& from = conv.from();
    const auto& to = conv.to();
    Plan P;
    P.k = from.size();
    P.m = to.size();
    P.src_row.resize(P.k);
    P.kind.resize(P.k);
    std::size_t r = 0;
    for (std::size_t i = 0; i < P.k; ++i) {
        const u64 q = from[i].q;
        P.src_row[i] = static_cast<int>(r);
        P.kind[i] = q < (u64(1) << 51) ? 0 : q < (u64(1) << 52) ? 1 : 2;
        r += P.kind[i] == 2 ? 2 : 1;
    }
    const std::size_t vrow = r;
    P.rows = r + (centered ? 1 : 0);
    P.c0.assign(P.m * P.rows, 0);
    P.c1.assign(P.m * P.rows, 0);
    P.big.resize(P.m);
    P.pinv.resize(P.m);
    for (std::size_t j = 0; j < P.m; ++j) {
        const Modulus& pm = to[j];
        const u64 p = pm.q;
        P.big[j] = p >= (u64(1) << 52);
        P.pinv[j] = neg_inv52(p);
        const u64 r104 = pm.reduce128(u128(1) << 104);               // 2^104 mod p
        const u64 r156 = pm.mul(r104, (u64(1) << 52) % p);           // 2^156 mod p
        auto put = [&](std::size_t row, u64 c) {
            P.c0[j * P.rows + row] = P.big[j] ? (c & kMask52) : c;
            P.c1[j * P.rows + row] = P.big[j] ? (c >> 52) : 0;
        };
        for (std::size_t i = 0; i < P.k; ++i) {
            const u64 M = conv.qhat_mod_p[j][i] % p;
            put(P.src_row[i], pm.mul(M, r104));
            if (P.kind[i] == 2) put(P.src_row[i] + 1, pm.mul(M, r156));
        }
        if (centered) {
            const u64 qm = conv.q_mod_p[j] % p;
            put(vrow, pm.mul(qm ? p - qm : 0, r104));
        }
    }
    return P;
}

// Montgomery step: with D0 < 2^52 and m = D0 * (-p^-1) mod 2^52, D0 + (m p mod 2^52) is 0 when D0 = 0 and exactly
// 2^52 otherwise (m != 0 then), so the carry out of the low digit is the mask D0 != 0.

/// The carry part of a Montgomery step on x = lo + hi 2^52: moves the bits of lo above 52 into hi, returns
/// m = lo * (-p^-1) mod 2^52 and adds to hi the carry out of lo + (m p mod 2^52).
inline __m512i mont_carry(__m512i& lo, __m512i& hi, __m512i pinv, __m512i mask, __m512i zero, __m512i one) {
    hi = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));
    lo = _mm512_and_si512(lo, mask);
    const __m512i mq = _mm512_madd52lo_epu64(zero, lo, pinv);
    hi = _mm512_mask_add_epi64(hi, _mm512_test_epi64_mask(lo, lo), hi, one);
    return mq;
}

/// Two Montgomery steps by 2^52 for p < 2^52: x = D0 + D1 2^52 -> x 2^-104 mod p in [0, p).
inline __m512i mont_small(__m512i D0, __m512i D1, __m512i p, __m512i pinv, __m512i mask, __m512i zero, __m512i one) {
    __m512i mq = mont_carry(D0, D1, pinv, mask, zero, one);
    __m512i E0 = _mm512_madd52hi_epu64(D1, mq, p), E1 = zero;  // E = (x + m p) / 2^52
    mq = mont_carry(E0, E1, pinv, mask, zero, one);
    return reduce_once(_mm512_madd52hi_epu64(E1, mq, p), p);  // [0, 2p) -> [0, p)
}

/// Same for p in [2^52, 2^61) = p0 + p1 2^52: x = D0 + D1 2^52 + D2 2^104.
inline __m512i mont_big(__m512i D0, __m512i D1, __m512i D2, __m512i p, __m512i p0, __m512i p1, __m512i pinv,
                        __m512i mask, __m512i zero, __m512i one) {
    __m512i mq = mont_carry(D0, D1, pinv, mask, zero, one);
    __m512i E0 = _mm512_madd52lo_epu64(_mm512_madd52hi_epu64(D1, mq, p0), mq, p1);
    __m512i E1 = _mm512_madd52hi_epu64(D2, mq, p1);
    mq = mont_carry(E0, E1, pinv, mask, zero, one);
    const __m512i F0 = _mm512_madd52lo_epu64(_mm512_madd52hi_epu64(E1, mq, p0), mq, p1);
    const __m512i F1 = _mm512_madd52hi_epu64(zero, mq, p1);
    return reduce_once(_mm512_add_epi64(F0, _mm512_slli_epi64(F1, 52)), p);  // [0, 2p) -> [0, p)
}

/// G groups of 8 coefficients (starting at group g0) of one target: p < 2^52 (constants c0), or with BIG
/// p in [2^52, 2^61) (constants c0 + c1 2^52).
template <bool BIG, int G>
inline void target(const u64* rows, std::size_t R, const u64* c0, const u64* c1, u64 pq, u64 pinv_s, u64* dst,
                   std::size_t g0, std::size_t nb) {
    const __m512i zero = _mm512_setzero_si512();
    __m512i D0[G], D1[G], D1b[G], D2[G];  // BIG: D1 in two halves (shorter dependency chains), D2
    for (int u = 0; u < G; ++u) D0[u] = D1[u] = D1b[u] = D2[u] = zero;
    const u64* base = rows + g0 * 8;
    for (std::size_t r = 0; r < R; ++r) {
        const __m512i cv0 = bcast(c0[r]);
        const __m512i cv1 = BIG ? bcast(c1[r]) : zero;
        const u64* row = base + r * kBlock;
        for (int u = 0; u < G; ++u) {
            const __m512i y = _mm512_loadu_si512(row + 8 * u);
            D0[u] = _mm512_madd52lo_epu64(D0[u], y, cv0);
            D1[u] = _mm512_madd52hi_epu64(D1[u], y, cv0);
            if constexpr (BIG) {
                D1b[u] = _mm512_madd52lo_epu64(D1b[u], y, cv1);
                D2[u] = _mm512_madd52hi_epu64(D2[u], y, cv1);
            }
        }
    }
    const __m512i p = bcast(pq), p0 = bcast(pq & kMask52), p1 = bcast(pq >> 52);  // p0, p1: BIG only
    const __m512i pinv = bcast(pinv_s), mask = bcast(kMask52), one = _mm512_set1_epi64(1);
    for (int u = 0; u < G; ++u) {
        const std::size_t lane0 = (g0 + u) * 8;
        if constexpr (BIG) {
            store_lanes(dst + lane0, nb - lane0,
                        mont_big(D0[u], _mm512_add_epi64(D1[u], D1b[u]), D2[u], p, p0, p1, pinv, mask, zero, one));
        } else {
            store_lanes(dst + lane0, nb - lane0, mont_small(D0[u], D1[u], p, pinv, mask, zero, one));
        }
    }
}

}  // namespace

void base_convert_ifma(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                       std::size_t end, bool centered) {
    if (begin >= end) return;
    const Plan P = make_plan(conv, centered);
    const auto& from = conv.from();
    const auto& to = conv.to();
    const std::size_t k = P.k, m = P.m, R = P.rows;
    std::vector<u64> rowbuf(R * kBlock + 8);
    u64* rows = rowbuf.data();
    u64* vrow = rows + (R - 1) * kBlock;  // valid when centered

    const __m512i zero = _mm512_setzero_si512();
    const __m512i mask = bcast(kMask52);

    for (std::size_t c0 = begin; c0 < end; c0 += kBlock) {
        const std::size_t nb = std::min(kBlock, end - c0);
        const std::size_t ng = (nb + 7) / 8;  // groups in this block (lanes past nb hold y = 0)

        // ---- rows: y_i = x_i * Q~_i mod q_i ----
        for (std::size_t i = 0; i < k; ++i) {
            const u64 q = from[i].q, w = conv.qhat_inv[i].w, wp = conv.qhat_inv[i].wp;
            const u64* src = in[i] + c0;
            u64* row = rows + static_cast<std::size_t>(P.src_row[i]) * kBlock;
            if (P.kind[i] == 0) {
                // q < 2^51: Shoup with the 52-bit companion wp >> 12
                const __m512i vq = bcast(q), vnegq = bcast((u64(1) << 52) - q);
                const __m512i vw = bcast(w), vwp = bcast(wp >> 12);
                for (std::size_t g = 0; g < ng; ++g) {
                    const __m512i x = load_lanes(src + 8 * g, nb - 8 * g);
                    _mm512_storeu_si512(row + 8 * g, reduce_once(mul_shoup52(zero, x, vw, vwp, vnegq, mask), vq));
                }
            } else {
                // q in [2^51, 2^61): Shoup with the 64-bit companion wp; floor(x * wp / 2^64) is assembled from
                // 52-bit digit products (x = x0 + x1 2^52, wp = w0 + w1 2^52), leaving out only the low digit
                // product's carry, so the estimate is at most one below and x * w - qhat * q lies in [0, 3q).
                const __m512i vq = bcast(q), vq2 = bcast(2 * q), vw = bcast(w);
                const __m512i w0 = bcast(wp & kMask52), w1 = bcast(wp >> 52);
                u64* row_hi = row + kBlock;
                for (std::size_t g = 0; g < ng; ++g) {
                    const __m512i x = load_lanes(src + 8 * g, nb - 8 * g);
                    const __m512i x0 = _mm512_and_si512(x, mask), x1 = _mm512_srli_epi64(x, 52);
                    __m512i mid = _mm512_madd52hi_epu64(zero, x0, w0);
                    mid = _mm512_madd52lo_epu64(mid, x0, w1);
                    mid = _mm512_madd52lo_epu64(mid, x1, w0);
                    __m512i top = _mm512_madd52hi_epu64(zero, x0, w1);
                    top = _mm512_madd52hi_epu64(top, x1, w0);
                    top = _mm512_madd52lo_epu64(top, x1, w1);
                    const __m512i qh = _mm512_add_epi64(_mm512_srli_epi64(mid, 12), _mm512_slli_epi64(top, 40));
                    __m512i yv = _mm512_sub_epi64(_mm512_mullo_epi64(x, vw), _mm512_mullo_epi64(qh, vq));
                    yv = reduce_once(reduce_once(yv, vq2), vq);  // [0, 3q) -> [0, q)
                    if (P.kind[i] == 1) {
                        _mm512_storeu_si512(row + 8 * g, yv);
                    } else {
                        _mm512_storeu_si512(row + 8 * g, _mm512_and_si512(yv, mask));
                        _mm512_storeu_si512(row_hi + 8 * g, _mm512_srli_epi64(yv, 52));
                    }
                }
            }
        }

        // ---- v = llround(sum_i y_i / q_i), the same double operations as convert_reference ----
        if (centered) {
            const __m512d half = _mm512_set1_pd(0.5);
            const __m512i one = _mm512_set1_epi64(1);
            for (std::size_t g = 0; g < ng; ++g) {
                __m512d f = _mm512_setzero_pd();
                for (std::size_t i = 0; i < k; ++i) {
                    const u64* row = rows + static_cast<std::size_t>(P.src_row[i]) * kBlock + 8 * g;
                    __m512i yv = _mm512_loadu_si512(row);
                    if (P.kind[i] == 2) yv = _mm512_add_epi64(yv, _mm512_slli_epi64(_mm512_loadu_si512(row + kBlock), 52));
                    const __m512d prod = _mm512_mul_round_pd(_mm512_cvtepu64_pd(yv), _mm512_set1_pd(conv.inv_q[i]),
                                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    f = _mm512_add_round_pd(f, prod, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                }
                // f >= 0: llround(f) = trunc(f) + (f - trunc(f) >= 0.5), the difference being exact
                const __m512d tr = _mm512_roundscale_pd(f, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
                const __mmask8 up = _mm512_cmp_pd_mask(_mm512_sub_pd(f, tr), half, _CMP_GE_OQ);
                const __m512i vv = _mm512_mask_add_epi64(_mm512_cvttpd_epu64(tr), up, _mm512_cvttpd_epu64(tr), one);
                _mm512_storeu_si512(vrow + 8 * g, vv);
            }
        }

        // ---- outputs ----
        for (std::size_t j = 0; j < m; ++j) {
            u64* dst = out[j] + c0;
            const u64* c0r = P.c0.data() + j * R;
            const u64 pq = to[j].q, pinv = P.pinv[j];
            std::size_t g = 0;
            const u64* c1r = P.c1.data() + j * R;
            if (!P.big[j]) {
                for (; g + 8 <= ng; g += 8) target<false, 8>(rows, R, c0r, c1r, pq, pinv, dst, g, nb);
                for (; g < ng; ++g) target<false, 1>(rows, R, c0r, c1r, pq, pinv, dst, g, nb);
            } else {
                for (; g + 4 <= ng; g += 4) target<true, 4>(rows, R, c0r, c1r, pq, pinv, dst, g, nb);
                for (; g < ng; ++g) target<true, 1>(rows, R, c0r, c1r, pq, pinv, dst, g, nb);
            }
        }
    }
}

}  // namespace ember::detail
