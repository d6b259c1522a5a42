// CRT and iCRT with AVX-512 IFMA (52-bit multiply-accumulate lanes); compiled with the IFMA flags and entered
// only when CrtBasis::ifma() (CPUID checked, every prime below 2^50). See crt.hpp for the algorithms.
//
// Lanes are 8 coefficients. CRT reads a tile of 64 coefficients as 52-bit digit rows (gathered from the N x
// words layout), then for every prime p_j accumulates sum_d a_d * mod(2^(52 d + 104), p_j) in two 64-bit
// lanes per coefficient (the low and high halves of the 104-bit products: the "two-word accumulator" of
// Algo 1) and reduces once with two Montgomery steps by 2^52. Bounds: D <= 185 digits below 2^52 times
// constants below 2^50 give lo < D 2^52 and hi < D 2^50, far from 2^64; after the first Montgomery step
// E < D 2^50 + p + 1, after the second F < 2^(log2 D - 2) + 2 + p < 2p.
//
// iCRT: phase 1 (Algo 5 lines 1-3) computes t_j = x_j inv(P/p_j) mod p_j (Shoup with a 52-bit companion) and
// the quotient estimate v = round(sum_j t_j / p_j) for a tile of 64 coefficients, writing the t_j transposed
// (pairs of groups of 8 coefficients, then j: 128 contiguous bytes per j); phase 2 (Algo 6 lines 4-11) is the
// matrix product over the output digits in chunks of at most 13, two groups at a time: 28 accumulators stay
// in registers while j runs over the np + 1 rows (row np multiplies v by the digits of -P). An accumulator
// takes 2 (np + 1) values below 2^52, so np <= 2^10 keeps it below 2^63.
#include "math/ifma_util.hpp"  // first: it silences GCC 12's false positives inside the intrinsic headers

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "heaan/crt.hpp"
#include "math/cpu_features.hpp"

namespace ember::heaan::detail {

namespace {

using ember::detail::ifma::kMask52;
using ember::detail::ifma::mul_shoup52;
using ember::detail::ifma::reduce_once;
constexpr std::size_t kTile = 64;  // coefficients per tile: 8 groups of 8 lanes

inline __m512i set1(u64 v) { return ember::detail::ifma::bcast(v); }

/// x = D0 + D1 2^52 -> x 2^-104 mod p in [0, p) (two Montgomery steps by 2^52, p < 2^50).
inline __m512i mont104(__m512i D0, __m512i D1, __m512i p, __m512i pinv) {
    const __m512i zero = _mm512_setzero_si512(), mask = set1(kMask52), one = set1(1);
    D1 = _mm512_add_epi64(D1, _mm512_srli_epi64(D0, 52));
    D0 = _mm512_and_si512(D0, mask);
    __m512i m = _mm512_madd52lo_epu64(zero, D0, pinv);
    // D0 + (m p mod 2^52) is 0 when D0 = 0 and exactly 2^52 otherwise: the carry is the mask D0 != 0
    D1 = _mm512_mask_add_epi64(D1, _mm512_test_epi64_mask(D0, D0), D1, one);
    const __m512i E = _mm512_madd52hi_epu64(D1, m, p);
    const __m512i E0 = _mm512_and_si512(E, mask);
    __m512i E1 = _mm512_srli_epi64(E, 52);
    m = _mm512_madd52lo_epu64(zero, E0, pinv);
    E1 = _mm512_mask_add_epi64(E1, _mm512_test_epi64_mask(E0, E0), E1, one);
    return reduce_once(_mm512_madd52hi_epu64(E1, m, p), p);
}

inline __m512i srl(__m512i v, std::size_t c) { return _mm512_srl_epi64(v, _mm_cvtsi64_si128(static_cast<long long>(c))); }
inline __m512i sll(__m512i v, std::size_t c) { return _mm512_sll_epi64(v, _mm_cvtsi64_si128(static_cast<long long>(c))); }

/// One chunk of KC output digits of the iCRT matrix product for two groups of 8 coefficients.
/// tp: R rows of 16 lanes (t of group 0, then of group 1); pd: digit k0 of row 0, rows `stride` apart.
template <int KC>
inline void icrt_chunk(const u64* tp, std::size_t R, const u64* pd, std::size_t stride, __m512i* carry, u64* dg0, u64* dg1) {
    __m512i A0[KC + 1], A1[KC + 1];
    A0[0] = carry[0];
    A1[0] = carry[1];
    for (int k = 1; k <= KC; ++k) A0[k] = A1[k] = _mm512_setzero_si512();
    for (std::size_t j = 0; j < R; ++j) {
        const __m512i t0 = _mm512_load_si512(tp + 16 * j);
        const __m512i t1 = _mm512_load_si512(tp + 16 * j + 8);
        const u64* c = pd + j * stride;
#pragma GCC unroll 16
        for (int k = 0; k < KC; ++k) {
            const __m512i cv = set1(c[k]);
            A0[k] = _mm512_madd52lo_epu64(A0[k], t0, cv);
            A0[k + 1] = _mm512_madd52hi_epu64(A0[k + 1], t0, cv);
            A1[k] = _mm512_madd52lo_epu64(A1[k], t1, cv);
            A1[k + 1] = _mm512_madd52hi_epu64(A1[k + 1], t1, cv);
        }
    }
    for (int k = 0; k < KC; ++k) {
        _mm512_store_si512(dg0 + 8 * k, A0[k]);
        _mm512_store_si512(dg1 + 8 * k, A1[k]);
    }
    carry[0] = A0[KC];
    carry[1] = A1[KC];
}

using ChunkFn = void (*)(const u64*, std::size_t, const u64*, std::size_t, __m512i*, u64*, u64*);

/// icrt_chunk<K + 1> for K in the sequence (a plain array: std::array would drop __m512i's attributes).
template <int... K>
ChunkFn chunk_fn(int kc, std::integer_sequence<int, K...>) {
    static constexpr ChunkFn table[] = {icrt_chunk<K + 1>...};
    constexpr int kMax = static_cast<int>(sizeof...(K));
    return table[kc >= 1 && kc <= kMax ? kc - 1 : kMax - 1];
}

/// icrt_chunk<kc>, kc in [1, 13] (13 for any larger kc).
ChunkFn chunk_fn(int kc) { return chunk_fn(kc, std::make_integer_sequence<int, 13>{}); }

/// Thread-local 64-byte aligned scratch, grown on demand.
u64* scratch(WordVec& v, std::size_t words) {
    if (v.size() < words) v.resize(words);
    return v.data();
}

}  // namespace

void copy_stream(u64* dst, const u64* src, std::size_t words) {
    for (std::size_t i = 0; i < words; i += 8) _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_load_si512(src + i));
    _mm_sfence();
}

void crt_ifma(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* out, std::size_t c0_,
              std::size_t count, const u64* offset) {
    if (c0_ % kTile || count % kTile) throw std::logic_error("crt_ifma: blocks must be multiples of 64 coefficients");
    const std::size_t D = static_cast<std::size_t>(in_bits + 51) / 52;
    const std::size_t wn = std::min(words, bigint::words_for_bits(in_bits));
    thread_local WordVec dig_v, wbuf_v;
    u64* dig = scratch(dig_v, D * kTile);
    u64* wbuf = scratch(wbuf_v, wn * 8);
    const __m512i idx = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), set1(words));
    const __m512i mask = set1(kMask52);
    const std::size_t top_d = static_cast<std::size_t>(in_bits - 1) / 52;
    const __m512i top_flip = set1(offset ? u64(1) << ((in_bits - 1) % 52) : 0);
    bool stream = true;
    for (std::size_t j = 0; j < np; ++j) stream = stream && (reinterpret_cast<std::uintptr_t>(out[j] + c0_) % 64 == 0);

    for (std::size_t t0 = 0; t0 < count; t0 += kTile) {
        const std::size_t c0 = c0_ + t0;
        // 52-bit digit rows of the tile: dig[d * 64 + lane]
        for (std::size_t g = 0; g < 8; ++g) {
            const u64* base = in + (t0 + 8 * g) * words;
            for (std::size_t w = 0; w < wn; ++w)
                _mm512_store_si512(wbuf + 8 * w, _mm512_i64gather_epi64(idx, reinterpret_cast<const long long*>(base + w), 8));
            for (std::size_t d = 0; d < D; ++d) {
                const std::size_t b = 52 * d, w = b / 64, off = b % 64;
                __m512i v = srl(_mm512_load_si512(wbuf + 8 * w), off);
                if (off > 12 && w + 1 < wn) v = _mm512_or_si512(v, sll(_mm512_load_si512(wbuf + 8 * (w + 1)), 64 - off));
                v = _mm512_and_si512(v, mask);
                if (d == top_d) v = _mm512_xor_si512(v, top_flip);
                _mm512_store_si512(dig + d * kTile + 8 * g, v);
            }
        }
        // Algo 1 per prime: two-word accumulation over the digits, one reduction
        for (std::size_t j = 0; j < np; ++j) {
            const u64* c = B.crt52.data() + j * B.d52;
            __m512i L[8], H[8];
            for (int u = 0; u < 8; ++u) L[u] = H[u] = _mm512_setzero_si512();
            for (std::size_t d = 0; d < D; ++d) {
                const __m512i cv = set1(c[d]);
                const u64* row = dig + d * kTile;
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) {
                    const __m512i y = _mm512_load_si512(row + 8 * u);
                    L[u] = _mm512_madd52lo_epu64(L[u], y, cv);
                    H[u] = _mm512_madd52hi_epu64(H[u], y, cv);
                }
            }
            const __m512i p = set1(B.prime(j).q), pinv = set1(B.pinv52[j]);
            const __m512i ov = set1(offset ? offset[j] : 0);
            u64* o = out[j] + c0;
            for (int u = 0; u < 8; ++u) {
                __m512i r = mont104(L[u], H[u], p, pinv);
                if (offset) r = reduce_once(_mm512_add_epi64(r, ov), p);
                if (stream) _mm512_stream_si512(reinterpret_cast<__m512i*>(o + 8 * u), r);
                else _mm512_storeu_si512(o + 8 * u, r);
            }
        }
    }
    if (stream) _mm_sfence();
}

void icrt_ifma(const CrtBasis& B, const IcrtPlan& plan, const u64* const* in, int shift, int out_bits, u64* out, std::size_t c0_,
               std::size_t count) {
    if (c0_ % kTile || count % kTile) throw std::logic_error("icrt_ifma: blocks must be multiples of 64 coefficients");
    const std::size_t np = plan.np, R = np + 1, on = bigint::words_for_bits(out_bits);
    const std::size_t klo = icrt_first_digit(shift, 52);
    const std::size_t khi = static_cast<std::size_t>(shift + out_bits + 51) / 52;
    const std::size_t nd = khi - klo;
    const std::size_t nc = (nd + 12) / 13;
    const int kc = static_cast<int>((nd + nc - 1) / nc);
    const std::size_t ndp = nc * static_cast<std::size_t>(kc);  // digits computed (the table rows are zero-padded)
    if (klo + ndp > plan.k52) throw std::logic_error("icrt_ifma: digit range exceeds the table");
    const ChunkFn chunk = chunk_fn(kc);

    // Tiles of up to kBig coefficients: phase 1 reads kBig / 8 lines in a row from each of the np rows (a DRAM page
    // at a time, and long enough runs for the prefetchers), the product then runs on 64 coefficients at a time.
    constexpr std::size_t kBig = 512;
    thread_local WordVec temp_v, dg_v, f_v;
    u64* temp = scratch(temp_v, (kBig / 16) * R * 16);
    const std::size_t dstride = (ndp + 3) * 8;
    u64* dgb = scratch(dg_v, 2 * dstride);
    double* fb = reinterpret_cast<double*>(scratch(f_v, kBig));
    const __m512i mask = set1(kMask52), zero = _mm512_setzero_si512();
    const __m512i oidx = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), set1(on));
    // rounding: + 2^(shift - 1) on digit (shift - 1) / 52
    const bool round = shift > 0;
    const std::size_t rk = round ? static_cast<std::size_t>(shift - 1) / 52 - klo : 0;
    const __m512i rv = set1(round ? u64(1) << ((shift - 1) % 52) : 0);
    const u64 top_mask = out_bits % 64 ? (~u64(0) >> (64 - out_bits % 64)) : ~u64(0);

    for (std::size_t t0 = 0; t0 < count; t0 += kBig) {
        const std::size_t c0 = c0_ + t0, tb = std::min(kBig, count - t0), G = tb / 8;
        // ---- phase 1: t_j = x_j inv(P/p_j) mod p_j, transposed (pairs of groups, then j); v = round(sum_j t_j / p_j)
        for (std::size_t g = 0; g < G; ++g) _mm512_store_pd(fb + 8 * g, _mm512_setzero_pd());
        for (std::size_t j = 0; j < np; ++j) {
            const u64 q = B.prime(j).q;
            const __m512i vq = set1(q), vnegq = set1((u64(1) << 52) - q);
            const __m512i vw = set1(plan.inv[j].w), vwp = set1(plan.inv_shoup52[j]);
            const __m512d ip = _mm512_set1_pd(plan.inv_p[j]);
            const u64* src = in[j] + c0;
            for (std::size_t g = 0; g < G; ++g) {
                const __m512i x = _mm512_loadu_si512(src + 8 * g);
                const __m512i t = reduce_once(mul_shoup52(zero, x, vw, vwp, vnegq, mask), vq);
                _mm512_store_si512(temp + (g / 2) * R * 16 + j * 16 + (g % 2) * 8, t);
                _mm512_store_pd(fb + 8 * g, _mm512_fmadd_pd(_mm512_cvtepu64_pd(t), ip, _mm512_load_pd(fb + 8 * g)));
            }
        }
        for (std::size_t g = 0; g < G; ++g)
            _mm512_store_si512(temp + (g / 2) * R * 16 + np * 16 + (g % 2) * 8,
                               _mm512_cvt_roundpd_epu64(_mm512_load_pd(fb + 8 * g), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));

        for (std::size_t pr = 0; pr < G / 2; ++pr) {
            // ---- phase 2: digits klo .. klo + ndp of sum_j t_j P/p_j - v P, two groups at a time ----
            const u64* tp = temp + pr * R * 16;
            u64* d0 = dgb;
            u64* d1 = dgb + dstride;
            __m512i carry[2] = {zero, zero};
            for (std::size_t c = 0; c < nc; ++c) {
                const std::size_t k0 = c * static_cast<std::size_t>(kc);
                chunk(tp, R, plan.pd52.data() + klo + k0, plan.k52, carry, d0 + 8 * k0, d1 + 8 * k0);
            }
            // ---- carries, rounding, and the output words (bits [shift, shift + out_bits)) ----
            for (std::size_t h = 0; h < 2; ++h) {
                const std::size_t g = 2 * pr + h;
                u64* d = dgb + h * dstride;
                if (round) _mm512_store_si512(d + 8 * rk, _mm512_add_epi64(_mm512_load_si512(d + 8 * rk), rv));
                __m512i cy = zero;
                for (std::size_t k = 0; k < nd; ++k) {
                    const __m512i v = _mm512_add_epi64(_mm512_load_si512(d + 8 * k), cy);
                    _mm512_store_si512(d + 8 * k, _mm512_and_si512(v, mask));
                    cy = _mm512_srli_epi64(v, 52);
                }
                for (std::size_t k = nd; k < nd + 3; ++k) _mm512_store_si512(d + 8 * k, zero);
                u64* obase = out + (t0 + 8 * g) * on;
                for (std::size_t w = 0; w < on; ++w) {
                    const std::size_t b = static_cast<std::size_t>(shift) + 64 * w - 52 * klo;
                    const std::size_t k = b / 52, off = b % 52;
                    __m512i v = srl(_mm512_load_si512(d + 8 * k), off);
                    v = _mm512_or_si512(v, sll(_mm512_load_si512(d + 8 * (k + 1)), 52 - off));
                    if (off > 40) v = _mm512_or_si512(v, sll(_mm512_load_si512(d + 8 * (k + 2)), 104 - off));
                    if (w + 1 == on) v = _mm512_and_si512(v, set1(top_mask));
                    _mm512_i64scatter_epi64(reinterpret_cast<long long*>(obase + w), oidx, v, 8);
                }
            }
        }
    }
}

}  // namespace ember::heaan::detail
