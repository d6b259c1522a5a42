// HEAAN's CRT and iCRT (paper 000, Algo 1 and Algo 6; heaan/crt.hpp) on the GPU: the constants the kernels read and
// the per-element arithmetic, as EMBER_HD code that the kernels (backend/cuda/heaan_impl.cuh) and the host emulation
// below both run. Every result is bit for bit that of heaan::CrtBasis's scalar path (detail::crt_scalar,
// detail::icrt_scalar), which the CPU's AVX2 and IFMA paths are tested identical to; tests/cpp/test_cuda_heaan.cpp
// compares them on the host, tests/cuda/test_cuda_heaan.cpp the kernels on a GPU.
//
// CRT (one thread per output residue, Section VII's mapping): residue j of coefficient i is
//   r = (sum_k a_k (2^(64 k) mod p_j)) mod p_j
// over the coefficient's 64-bit words a_k (beta = 2^64), the products summed exactly as the CPU's scalar path sums
// them: a 128-bit accumulator plus a count `top` of its carries out (60-bit primes and many words overflow two
// words), then r = acc mod p_j + top (2^128 mod p_j) mod p_j. A centered input (read as signed) has its top bit
// flipped on the fly and p_j - (2^(in_bits - 1) mod p_j) added (CrtBasis::centered_offsets, here computed from the
// table: (2^(64 w) mod p_j) 2^b mod p_j with in_bits - 1 = 64 w + b). Every step is exact modular arithmetic ending
// in [0, p_j), so the residue is the CPU's word for word.
//
// iCRT (one thread per coefficient, all its output words): t_j = x_j inv(P/p_j) mod p_j (Shoup, the plan's
// constants), v = round(sum_j t_j / p_j) summed in double in the CPU's order with the CPU's two roundings per term
// (arith.hpp's centered_step: no FMA contraction on the device) and rounded half to even (std::nearbyint / rint);
// then, word by word from w_lo = icrt_first_digit(shift, 64) (the words below bit shift - 100 are skipped, as on the
// CPU), the 128-bit column sums acc[m] = sum_j lo(t_j W_j[w_lo + m]) + hi(t_j W_j[w_lo + m - 1]) over the np + 1 rows
// W_j of IcrtPlan::pw64 (P/p_j, and 2^(64 k64) - P for t_np = v), carried into words; the rounding increment
// 2^(s - 1) and the shift by s = shift - 64 w_lo are applied as the words stream out, and the result is truncated to
// out_bits (mod 2^out_bits). The same integers as icrt_scalar's, so the same bits. The thread keeps its t_j in a
// column of shared memory (row j at j * stride: no bank conflicts across a warp) and needs no barrier: nothing is
// shared between threads.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "backend/cuda/arith.hpp"
#include "heaan/crt.hpp"

namespace ember::cuda {

// ---- CRT -------------------------------------------------------------------------------------------------------

/// A basis's CRT constants (pointers into one memory space: host or device).
struct HeaanCrtTable {
    u32 primes = 0;                   // primes in the table
    u32 d64 = 0;                      // words per row of crt64 (inputs of up to CrtBasis::max_in_bits bits)
    const u64* crt64 = nullptr;       // [j d64 + k] = 2^(64 k) mod p_j (CrtBasis::crt64)
    const u64* two128 = nullptr;      // [j] = 2^128 mod p_j (CrtBasis::two128)
    const WideBarrett* pb = nullptr;  // [j] p_j's reduction constants
};

/// The constants of a CrtBasis in host vectors (the emulation reads them in place; the device copy uploads them).
struct HeaanCrtData {
    u32 primes = 0, d64 = 0;
    std::vector<u64> crt64, two128;
    std::vector<WideBarrett> pb;

    explicit HeaanCrtData(const heaan::CrtBasis& B)
        : primes(static_cast<u32>(B.size())), d64(static_cast<u32>(B.d64)), crt64(B.crt64), two128(B.two128) {
        for (std::size_t j = 0; j < B.size(); ++j) pb.push_back(make_wide_barrett(B.prime(j)));
    }
    HeaanCrtTable host_table() const { return HeaanCrtTable{primes, d64, crt64.data(), two128.data(), pb.data()}; }
};

/// One CRT: n coefficients of `words` words each (coefficient-major, BigPoly's layout) into np rows of n residues
/// (row j at rows + j n, the CPU's RnsPolys layout).
struct HeaanCrtArgs {
    const u64* in = nullptr;
    u64* rows = nullptr;
    std::size_t n = 0;
    u32 words = 0;      // words per input coefficient
    u32 wn = 0;         // words read: min(words, words_for_bits(in_bits))
    u32 np = 0;
    u32 top_word = 0;   // (in_bits - 1) / 64: the word of the sign bit
    u32 top_shift = 0;  // (in_bits - 1) % 64
    bool centered = false;
};

/// The arguments of a CRT of in_bits-bit inputs (host side; CrtBasis::crt_block checks the bounds).
inline HeaanCrtArgs make_heaan_crt_args(const u64* in, std::size_t words, int in_bits, std::size_t np, u64* rows,
                                        std::size_t n, bool centered) {
    HeaanCrtArgs a;
    a.in = in;
    a.rows = rows;
    a.n = n;
    a.words = static_cast<u32>(words);
    const std::size_t need = heaan::bigint::words_for_bits(in_bits);
    a.wn = static_cast<u32>(words < need ? words : need);
    a.np = static_cast<u32>(np);
    a.top_word = static_cast<u32>((in_bits - 1) / 64);
    a.top_shift = static_cast<u32>((in_bits - 1) % 64);
    a.centered = centered;
    return a;
}

/// p_j - (2^(in_bits - 1) mod p_j): CrtBasis::centered_offsets(in_bits, np)[j].
EMBER_HD inline u64 heaan_crt_offset(const HeaanCrtTable& t, const HeaanCrtArgs& a, u32 j) {
    const WideBarrett pb = t.pb[j];
    const u64 x = load_ro(t.crt64 + static_cast<std::size_t>(j) * t.d64 + a.top_word);  // 2^(64 top_word) mod p_j
    return neg_mod(wide_reduce(mul_wide(x, u64(1) << a.top_shift), pb), pb.q);     // x 2^b < 2^125
}

/// Residue j of coefficient i (detail::crt_scalar's value).
EMBER_HD inline u64 heaan_crt_residue(const HeaanCrtTable& t, const HeaanCrtArgs& a, std::size_t i, u32 j) {
    const u64* x = a.in + i * a.words;
    const u64* tb = t.crt64 + static_cast<std::size_t>(j) * t.d64;
    U128 acc{};
    u64 top = 0;  // carries out of the 128-bit accumulator (the CPU's `top += acc < p`)
    for (u32 k = 0; k < a.wn; ++k) {
        u64 w = load_ro(x + k);
        if (a.centered && k == a.top_word) w ^= u64(1) << a.top_shift;
        const U128 p = mul_wide(w, load_ro(tb + k));
        acc.lo += p.lo;
        const u64 c = acc.lo < p.lo ? 1 : 0;
        const u64 h = acc.hi + p.hi;
        const u64 h2 = h + c;
        top += (h < p.hi ? 1 : 0) + (h2 < c ? 1 : 0);  // at most one of the two carries
        acc.hi = h2;
    }
    const WideBarrett pb = t.pb[j];
    u64 r = wide_reduce(acc, pb);
    if (top) r = add_mod(r, wide_reduce(mul_wide(top, load_ro(t.two128 + j)), pb), pb.q);
    if (a.centered) r = add_mod(r, heaan_crt_offset(t, a, j), pb.q);
    return r;
}

/// The CRT kernel's element (coefficient i, prime j): rows[j n + i].
EMBER_HD inline void heaan_crt_element(const HeaanCrtTable& t, const HeaanCrtArgs& a, std::size_t i, u32 j) {
    a.rows[static_cast<std::size_t>(j) * a.n + i] = heaan_crt_residue(t, a, i, j);
}

/// Threads per block of the CRT kernel (x: coefficients; y: primes).
constexpr u32 kHeaanCrtThreads = 256;

/// The CRT kernel on the host: every block (x over coefficients, y over primes), every thread of it in turn.
inline void heaan_crt_emulate(const HeaanCrtTable& t, const HeaanCrtArgs& a) {
    const std::size_t blocks = (a.n + kHeaanCrtThreads - 1) / kHeaanCrtThreads;
    for (u32 j = 0; j < a.np; ++j)
        for (std::size_t b = 0; b < blocks; ++b)
            for (u32 tid = 0; tid < kHeaanCrtThreads; ++tid) {
                const std::size_t i = b * kHeaanCrtThreads + tid;
                if (i < a.n) heaan_crt_element(t, a, i, j);
            }
}

// ---- iCRT ------------------------------------------------------------------------------------------------------

/// The iCRT constants of the first np primes of a basis (pointers into one memory space).
struct HeaanIcrtTable {
    u32 np = 0;
    u32 k64 = 0;                  // words per row of pw64
    const u64* q = nullptr;       // [j] p_j
    const u64* inv_w = nullptr;   // [j] inv(P/p_j) mod p_j (IcrtPlan::inv)
    const u64* inv_wp = nullptr;  // [j] its Shoup companion
    const double* inv_p = nullptr;  // [j] 1 / p_j (IcrtPlan::inv_p)
    const u64* pw64 = nullptr;    // (np + 1) x k64 (IcrtPlan::pw64): words of P/p_j; row np: 2^(64 k64) - P
};

/// An IcrtPlan's constants in host vectors.
struct HeaanIcrtData {
    u32 np = 0, k64 = 0;
    std::vector<u64> q, inv_w, inv_wp, pw64;
    std::vector<double> inv_p;

    HeaanIcrtData(const heaan::CrtBasis& B, const heaan::IcrtPlan& plan)
        : np(static_cast<u32>(plan.np)), k64(static_cast<u32>(plan.k64)), pw64(plan.pw64), inv_p(plan.inv_p) {
        for (std::size_t j = 0; j < plan.np; ++j) {
            q.push_back(B.prime(j).q);
            inv_w.push_back(plan.inv[j].w);
            inv_wp.push_back(plan.inv[j].wp);
        }
    }
    HeaanIcrtTable host_table() const {
        return HeaanIcrtTable{np, k64, q.data(), inv_w.data(), inv_wp.data(), inv_p.data(), pw64.data()};
    }
};

/// The output words of an iCRT with shift and out_bits (detail::icrt_scalar's ranges).
struct HeaanIcrtShape {
    u32 w_lo = 0;      // first word accumulated (icrt_first_digit(shift, 64))
    u32 nw = 0;        // words accumulated: [w_lo, w_lo + nw) = [w_lo, ceil((shift + out_bits) / 64))
    u32 on = 0;        // output words: words_for_bits(out_bits)
    int s = 0;         // shift - 64 w_lo: the shift applied to the accumulated words
    int out_bits = 0;
};

/// Host side (CrtBasis::check_icrt checks shift + out_bits <= log2 P).
inline HeaanIcrtShape make_heaan_icrt_shape(int shift, int out_bits) {
    HeaanIcrtShape sh;
    const std::size_t w_lo = heaan::detail::icrt_first_digit(shift, 64);
    const std::size_t w_hi = static_cast<std::size_t>(shift + out_bits + 63) / 64;
    sh.w_lo = static_cast<u32>(w_lo);
    sh.nw = static_cast<u32>(w_hi - w_lo);
    sh.on = static_cast<u32>(heaan::bigint::words_for_bits(out_bits));
    sh.s = shift - static_cast<int>(64 * w_lo);
    sh.out_bits = out_bits;
    return sh;
}

/// v = round(f), halves to even (the CPU's std::nearbyint in the default rounding mode; the device's rint).
EMBER_HD inline u64 heaan_icrt_round(double f) {
#if EMBER_DEVICE_CODE
    return static_cast<u64>(rint(f));
#else
    return static_cast<u64>(std::nearbyint(f));
#endif
}

/// Phase 1 of coefficient i: t[j stride] = t_j = x_j inv(P/p_j) mod p_j for j < np, x_j = rows[j n + i], and
/// t[np stride] = v = round(sum_j t_j / p_j) (summed in j order from 0.0, as icrt_scalar).
EMBER_HD inline void heaan_icrt_scale(u64* t, u32 stride, const HeaanIcrtTable& tb, const u64* rows, std::size_t n,
                                      std::size_t i) {
    double f = 0;
    for (u32 j = 0; j < tb.np; ++j) {
        const u64 tj = mul_shoup(load_ro(rows + static_cast<std::size_t>(j) * n + i), load_ro(tb.inv_w + j),
                                 load_ro(tb.inv_wp + j), load_ro(tb.q + j));
        t[static_cast<std::size_t>(j) * stride] = tj;
        f = centered_step(f, tj, tb.inv_p[j]);
    }
    t[static_cast<std::size_t>(tb.np) * stride] = heaan_icrt_round(f);
}

/// Phase 2 of a coefficient: its on output words out[0 .. on) = round(c / 2^shift) mod 2^out_bits from the t column
/// of phase 1 (see the header comment: the words of icrt_scalar's accumulation, carries and extract_round, streamed).
EMBER_HD inline void heaan_icrt_digits(const u64* t, u32 stride, const HeaanIcrtTable& tb, const HeaanIcrtShape& sh,
                                       u64* out) {
    const u32 rows = tb.np + 1;
    const bool round = sh.s > 0;
    const u32 kr = round ? static_cast<u32>(sh.s - 1) / 64 : 0;             // word of the rounding increment
    const u64 radd = round ? u64(1) << ((sh.s - 1) % 64) : 0;
    const u32 ws = static_cast<u32>(sh.s) / 64, off = static_cast<u32>(sh.s) % 64;  // output word i: bits of W[ws + i ..]
    const u32 rem = static_cast<u32>(sh.out_bits) % 64;
    U128 cur{}, next{};  // acc[m] and acc[m + 1] of icrt_scalar
    u64 carry = 0;       // its carry between words (acc[m] + carry < 2^128, so the carry fits a word)
    u64 rc = 0;          // extract_round's rounding carry
    u64 prev = 0;        // W[m - 1]
    for (u32 m = 0; m <= ws + sh.on; ++m) {
        u64 w = 0;  // W[m]: word m of the accumulated (and rounded) value, 0 past nw
        if (m < sh.nw) {
            const std::size_t k = sh.w_lo + m;
            for (u32 j = 0; j < rows; ++j) {
                const U128 p = mul_wide(t[static_cast<std::size_t>(j) * stride], load_ro(tb.pw64 + static_cast<std::size_t>(j) * tb.k64 + k));
                add_word(cur, p.lo);
                add_word(next, p.hi);
            }
            add_word(cur, carry);
            w = cur.lo;
            carry = cur.hi;
            cur = next;
            next = U128{};
            if (round && m >= kr) {  // + 2^(s - 1), carried up
                if (m == kr) rc = radd;
                w += rc;
                rc = w < rc ? 1 : 0;
            }
        }
        if (m > ws) {
            const u32 i = m - ws - 1;
            u64 o = (prev >> off) | (off ? w << (64 - off) : 0);
            if (i + 1 == sh.on && rem) o &= ~u64(0) >> (64 - rem);  // mod 2^out_bits
            out[i] = o;
        }
        prev = w;
    }
}

/// Coefficients per block of the iCRT kernel (one thread each) for np primes: its t columns, (np + 1) x block
/// words, fill at most the 48 KiB of shared memory a kernel may use without opting in; 0 when np + 1 > 192.
inline u32 heaan_icrt_block(std::size_t np) {
    for (u32 c : {128u, 64u, 32u})
        if ((np + 1) * c * sizeof(u64) <= 48 * 1024) return c;
    return 0;
}

/// The iCRT kernel on the host: blocks of `block` coefficients, each thread (coefficient) running both phases on
/// its column of the block's tile. out: n x sh.on words (coefficient-major).
inline void heaan_icrt_emulate(const HeaanIcrtTable& tb, const u64* rows, std::size_t n, const HeaanIcrtShape& sh,
                               u64* out, u32 block) {
    std::vector<u64> tile(static_cast<std::size_t>(tb.np + 1) * block);
    for (std::size_t c0 = 0; c0 < n; c0 += block)
        for (u32 tid = 0; tid < block; ++tid) {
            const std::size_t i = c0 + tid;
            if (i >= n) continue;
            heaan_icrt_scale(tile.data() + tid, block, tb, rows, n, i);
            heaan_icrt_digits(tile.data() + tid, block, tb, sh, out + i * sh.on);
        }
}

}  // namespace ember::cuda
