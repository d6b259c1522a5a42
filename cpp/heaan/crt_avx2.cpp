// CRT and iCRT with AVX2 (x86-64-v3); compiled with the AVX2 flags and entered only when CrtBasis::avx2() (CPUID
// checked, every prime below 2^50). See crt.hpp for the algorithms. The results are bit-identical to the scalar
// kernels (crt_scalar / icrt_scalar): CRT's residues are fully reduced, and iCRT computes the same integer as the
// scalar kernel (the products of the same 64-bit words of P/p_j, from word w_lo on) and rounds it the same way.
//
// AVX2 multiplies 32 x 32 -> 64 bits per lane (vpmuludq), so a 50-bit factor is split into 25-bit halves
// (f = f0 + f1 2^25) and the other factor is read as 32-bit digits: every lane product is below 2^57, and 127 of
// them sum below 2^64 without a carry out.
//
// CRT (Algo 1): lanes are 4 coefficients; a tile of 16 is read as 32-bit digit rows a_d (gathered from the N x words
// layout; the even digit is the word itself, since vpmuludq reads only the low half). For every prime p_j,
// S0 = sum_d a_d c0_d and S1 = sum_d a_d c1_d with c_d = 2^(32 d) mod p_j, over runs of at most 127 digits; each
// run's value S0 + S1 2^25 < 2^90 is reduced once per residue in the lanes (reduce90: a quotient from double
// precision, exact to within one for p_j >= 2^40, then the remainder from the low 64 bits) and the runs are summed
// modulo p_j.
//
// iCRT (Algo 6): phase 1 computes t_j = x_j inv(P/p_j) mod p_j (Shoup, fully reduced) and v = round(sum_j t_j / p_j)
// in double for 64 coefficients, writing t_j as its halves (t0_j, t1_j) group-major; phase 2 forms, for each output
// digit k (base 2^32, from digit 2 w_lo), L_k = sum_j t0_j d_jk and H_k = sum_j t1_j d_jk over the np + 1 rows of
// P/p_j (row np: v times -P), 6 digits at a time in registers; then one carry pass turns sum_k (L_k + H_k 2^25)
// 2^(32 k) into 32-bit digits, with the rounding increment added first, and the output words are read off them.
// np + 1 <= 127 rows keep the column sums below 2^64; larger np take the scalar kernel.
#include "math/avx2_util.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "heaan/crt.hpp"

namespace ember::heaan::detail {

namespace {

namespace a2 = ember::detail::avx2;
using a2::V;

constexpr std::size_t kLanes = 4;
constexpr std::size_t kCrtTile = 16;     // CRT: coefficients per tile (4 groups of 4 lanes)
constexpr std::size_t kRun = 127;        // lane products summed before a reduction (each below 2^57)
constexpr std::size_t kIcrtTile = 64;    // iCRT: coefficients whose t_j are computed together (phase 1)
constexpr int kDigits = 6;               // iCRT: output digits per register chunk (12 accumulators)
constexpr u64 kMask25 = (u64(1) << 25) - 1;
constexpr u64 kMask32 = 0xffffffffu;

inline V bcast32(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
inline V load_a(const u64* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store_a(u64* p, V v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }

/// Thread-local 64-byte aligned scratch, grown on demand.
u64* scratch(WordVec& v, std::size_t words) {
    if (v.size() < words) v.resize(words);
    return v.data();
}

/// t < 2^52 in each lane -> (double)t, exactly (t's bits under the exponent of 2^52).
inline __m256d to_double52(V t) {
    const V magic = a2::bcast(0x4330000000000000ull);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(t, magic)), _mm256_castsi256_pd(magic));
}

/// f in [0, 2^51) in each lane -> round(f) (to nearest, ties to even: nearbyint's default mode) as an integer.
inline V round_to_u64(__m256d f) {
    const V magic = a2::bcast(0x4330000000000000ull);
    const __m256d r = _mm256_add_pd(f, _mm256_castsi256_pd(magic));  // rounds f at the unit place
    return _mm256_sub_epi64(_mm256_castpd_si256(r), magic);
}

/// x < 2^64 in each lane -> (double)x, rounded once (its 32-bit halves converted exactly, then hi 2^32 + lo).
inline __m256d to_double64(V x) {
    const __m256d hi = to_double52(_mm256_srli_epi64(x, 32)), lo = to_double52(_mm256_and_si256(x, a2::bcast(kMask32)));
    return _mm256_fmadd_pd(hi, _mm256_set1_pd(4294967296.0), lo);
}

/// The prime in lanes for reduce90.
struct Red90 {
    V p, ps;
    __m256d pinv;
    explicit Red90(u64 q) : p(a2::bcast(q)), ps(a2::swap_halves(a2::bcast(q))), pinv(_mm256_set1_pd(1.0 / static_cast<double>(q))) {}
};

/// (S0 + S1 2^25) mod p in [0, p), for S0, S1 < 2^64 and 2^40 <= p < 2^50. The value V < 2^90 is rounded to double
/// with an error below 2^38 (S1's conversion 2^35, the sum 2^37), so floor(V / p) is estimated within one (the error
/// over p is below 2^-2, the products' roundings add 2^-11); r = V - qt p lies in [-p, 2p) and is exact from the
/// low 64 bits of V and qt p (qt < 2^50).
inline V reduce90(V s0, V s1, const Red90& m) {
    const __m256d v = _mm256_fmadd_pd(to_double64(s1), _mm256_set1_pd(33554432.0), to_double64(s0));
    const __m256d qd = _mm256_floor_pd(_mm256_mul_pd(v, m.pinv));
    const V qt = round_to_u64(qd);  // an integer below 2^50: exact
    const V lo = _mm256_add_epi64(s0, _mm256_slli_epi64(s1, 25));
    const V r = _mm256_sub_epi64(lo, a2::mullo(qt, m.p, m.ps));
    return a2::reduce_once(a2::add_if_neg(r, m.p), m.p);
}

/// One chunk of kDigits output digits: L[k] = sum_j t0_j d_j(k0 + k), H[k] likewise with t1_j, for one group of 4
/// coefficients. tp: R rows of 8 words (t0 lanes, t1 lanes); pd: digit k0 of row 0, rows `stride` digits apart.
inline void icrt_chunk(const u64* tp, std::size_t R, const std::uint32_t* pd, std::size_t stride, u64* sl, u64* sh) {
    V L[kDigits], H[kDigits];
    for (int k = 0; k < kDigits; ++k) L[k] = H[k] = _mm256_setzero_si256();
    for (std::size_t j = 0; j < R; ++j) {
        const V t0 = load_a(tp + 8 * j), t1 = load_a(tp + 8 * j + 4);
        const std::uint32_t* c = pd + j * stride;
#pragma GCC unroll 6
        for (int k = 0; k < kDigits; ++k) {
            const V cv = bcast32(c[k]);
            L[k] = _mm256_add_epi64(L[k], _mm256_mul_epu32(t0, cv));
            H[k] = _mm256_add_epi64(H[k], _mm256_mul_epu32(t1, cv));
        }
    }
    for (int k = 0; k < kDigits; ++k) {
        store_a(sl + kLanes * k, L[k]);
        store_a(sh + kLanes * k, H[k]);
    }
}

}  // namespace

void crt_avx2(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* out, std::size_t c0,
              std::size_t count, const u64* offset) {
    const std::size_t full = count / kCrtTile * kCrtTile;
    if (full < count)  // the last count % 16 coefficients: the scalar kernel (the same residues)
        crt_scalar(B, in + full * words, words, in_bits, np, out, c0 + full, count - full, offset);
    if (full == 0) return;
    const std::size_t D = static_cast<std::size_t>(in_bits + 31) / 32;
    const std::size_t wn = std::min(words, bigint::words_for_bits(in_bits));
    if (D > B.d32) throw std::logic_error("crt_avx2: input wider than the tables");
    thread_local WordVec dig_v;
    u64* dig = scratch(dig_v, D * kCrtTile);  // dig[d * 16 + lane]: digit d of the tile's coefficients
    const V idx = _mm256_set_epi64x(static_cast<long long>(3 * words), static_cast<long long>(2 * words),
                                    static_cast<long long>(words), 0);
    const std::size_t top_d = static_cast<std::size_t>(in_bits - 1) / 32;
    const V top_flip = a2::bcast(offset ? u64(1) << ((in_bits - 1) % 32) : 0);

    for (std::size_t t0 = 0; t0 < full; t0 += kCrtTile) {
        for (std::size_t g = 0; g < kCrtTile / kLanes; ++g) {
            const u64* base = in + (t0 + kLanes * g) * words;
            for (std::size_t d = 0; d < D; ++d) {
                const std::size_t w = d / 2;
                V v = _mm256_setzero_si256();
                if (w < wn) {
                    v = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(base + w), idx, 8);
                    if (d % 2) v = _mm256_srli_epi64(v, 32);  // even digits: the word (its high half is not read)
                }
                if (d == top_d) v = _mm256_xor_si256(v, top_flip);
                store_a(dig + d * kCrtTile + kLanes * g, v);
            }
        }
        for (std::size_t j = 0; j < np; ++j) {
            const Red90 red(B.prime(j).q);
            const V off = a2::bcast(offset ? offset[j] : 0);
            V R[4];
            const std::uint32_t* c = B.crt32.data() + j * 2 * B.d32;
            for (std::size_t d0 = 0; d0 < D; d0 += kRun) {
                const std::size_t d1 = std::min(D, d0 + kRun);
                V L[4], H[4];
                for (int g = 0; g < 4; ++g) L[g] = H[g] = _mm256_setzero_si256();
                for (std::size_t d = d0; d < d1; ++d) {
                    const V c0v = bcast32(c[2 * d]), c1v = bcast32(c[2 * d + 1]);
                    const u64* row = dig + d * kCrtTile;
#pragma GCC unroll 4
                    for (int g = 0; g < 4; ++g) {
                        const V y = load_a(row + kLanes * g);
                        L[g] = _mm256_add_epi64(L[g], _mm256_mul_epu32(y, c0v));
                        H[g] = _mm256_add_epi64(H[g], _mm256_mul_epu32(y, c1v));
                    }
                }
                for (int g = 0; g < 4; ++g) {
                    const V x = reduce90(L[g], H[g], red);
                    R[g] = d0 == 0 ? x : a2::reduce_once(_mm256_add_epi64(R[g], x), red.p);
                }
            }
            u64* o = out[j] + c0 + t0;
            for (int g = 0; g < 4; ++g) {
                if (offset) R[g] = a2::reduce_once(_mm256_add_epi64(R[g], off), red.p);
                a2::store(o + kLanes * g, R[g]);
            }
        }
    }
}

void icrt_avx2(const CrtBasis& B, const IcrtPlan& plan, const u64* const* in, int shift, int out_bits, u64* out, std::size_t c0_,
               std::size_t count) {
    const std::size_t np = plan.np, R = np + 1, on = bigint::words_for_bits(out_bits);
    const std::size_t full = count / kLanes * kLanes;
    if (R > kRun || full == 0)  // column sums would overflow (np >= 127), or fewer than 4 coefficients
        return icrt_scalar(B, plan, in, shift, out_bits, out, c0_, count);
    if (full < count) icrt_scalar(B, plan, in, shift, out_bits, out + full * on, c0_ + full, count - full);
    const std::size_t w_lo = icrt_first_digit(shift, 64);
    const std::size_t w_hi = static_cast<std::size_t>(shift + out_bits + 63) / 64;
    const std::size_t k_lo = 2 * w_lo, nd = 2 * (w_hi - w_lo);
    const std::size_t nch = (nd + kDigits - 1) / kDigits;
    if (k_lo + nch * kDigits > plan.k32) throw std::logic_error("icrt_avx2: digit range exceeds the table");
    const int s = shift - static_cast<int>(64 * w_lo);  // the output starts at bit s of the digits computed
    thread_local WordVec temp_v, sl_v, sh_v;
    u64* temp = scratch(temp_v, (kIcrtTile / kLanes) * R * 8);
    u64* sl = scratch(sl_v, (nch * kDigits + 2) * kLanes);
    u64* sh = scratch(sh_v, nch * kDigits * kLanes);
    const V mask25 = a2::bcast(kMask25), mask32 = a2::bcast(kMask32);
    const u64 top_mask = out_bits % 64 ? (~u64(0) >> (64 - out_bits % 64)) : ~u64(0);
    alignas(32) u64 lanes[kLanes];

    for (std::size_t t0 = 0; t0 < full; t0 += kIcrtTile) {
        const std::size_t c0 = c0_ + t0, G = std::min(kIcrtTile, full - t0) / kLanes;
        // ---- phase 1: t_j = x_j inv(P/p_j) mod p_j as (t0, t1) halves, group-major; v = round(sum_j t_j / p_j) ----
        __m256d f[kIcrtTile / kLanes];
        for (std::size_t g = 0; g < G; ++g) f[g] = _mm256_setzero_pd();
        for (std::size_t j = 0; j < np; ++j) {
            const a2::ModV mq(B.prime(j).q);
            const a2::ShoupV w(plan.inv[j].w, plan.inv[j].wp);
            const __m256d ip = _mm256_set1_pd(plan.inv_p[j]);
            const u64* src = in[j] + c0;
            for (std::size_t g = 0; g < G; ++g) {
                V t = a2::mul_shoup_lazy4(a2::load(src + kLanes * g), w, mq);  // [0, 4q)
                t = a2::reduce_once(a2::reduce_once(t, mq.q2), mq.q);
                u64* tg = temp + g * R * 8 + j * 8;
                store_a(tg, _mm256_and_si256(t, mask25));
                store_a(tg + 4, _mm256_srli_epi64(t, 25));
                f[g] = _mm256_add_pd(f[g], _mm256_mul_pd(to_double52(t), ip));
            }
        }
        for (std::size_t g = 0; g < G; ++g) {
            u64* tg = temp + g * R * 8 + np * 8;
            store_a(tg, round_to_u64(f[g]));  // v < np + 1: its high half is zero
            store_a(tg + 4, _mm256_setzero_si256());
        }
        for (std::size_t g = 0; g < G; ++g) {
            // ---- phase 2: the column sums of digits [k_lo, k_lo + nd) ----
            for (std::size_t ch = 0; ch < nch; ++ch)
                icrt_chunk(temp + g * R * 8, R, plan.pd32.data() + k_lo + ch * kDigits, plan.k32, sl + ch * kDigits * kLanes,
                           sh + ch * kDigits * kLanes);
            // ---- rounding increment, carries into 32-bit digits (in sl), then the output words ----
            if (shift > 0) {
                const std::size_t rk = static_cast<std::size_t>(s - 1) / 32;
                store_a(sl + kLanes * rk, _mm256_add_epi64(load_a(sl + kLanes * rk), a2::bcast(u64(1) << ((s - 1) % 32))));
            }
            V cy = _mm256_setzero_si256();
            for (std::size_t k = 0; k < nd; ++k) {
                const V L = load_a(sl + kLanes * k), H = load_a(sh + kLanes * k);
                // L + H 2^25 + carry: the low 32 bits of each part, then what lies above them
                const V lo = _mm256_add_epi64(_mm256_add_epi64(cy, _mm256_and_si256(L, mask32)),
                                              _mm256_and_si256(_mm256_slli_epi64(H, 25), mask32));
                store_a(sl + kLanes * k, _mm256_and_si256(lo, mask32));
                cy = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(lo, 32), _mm256_srli_epi64(L, 32)), _mm256_srli_epi64(H, 7));
            }
            store_a(sl + kLanes * nd, _mm256_setzero_si256());  // the words past the last digit read zeros
            store_a(sl + kLanes * (nd + 1), _mm256_setzero_si256());
            u64* obase = out + (t0 + kLanes * g) * on;
            for (std::size_t w = 0; w < on; ++w) {
                const std::size_t b = static_cast<std::size_t>(s) + 64 * w, k = b / 32;
                const int off = static_cast<int>(b % 32);
                V v = _mm256_srl_epi64(load_a(sl + kLanes * k), a2::shift_count(off));
                v = _mm256_or_si256(v, _mm256_sll_epi64(load_a(sl + kLanes * (k + 1)), a2::shift_count(32 - off)));
                v = _mm256_or_si256(v, _mm256_sll_epi64(load_a(sl + kLanes * (k + 2)), a2::shift_count(64 - off)));  // 0 when off = 0
                if (w + 1 == on) v = _mm256_and_si256(v, a2::bcast(top_mask));
                store_a(lanes, v);
                for (std::size_t i = 0; i < kLanes; ++i) obase[i * on + w] = lanes[i];
            }
        }
    }
}

}  // namespace ember::heaan::detail
