// The RNS side of HEAAN's polynomial products (paper 000, Sections IV-V): np NTT primes p_j with
// P = p_0 ... p_{np-1} above twice the largest product coefficient, CRT (Algo 1) from N x words big integers
// to np x N residues, the core's NTT per prime, and iCRT (Algo 5 reordered as Algo 6) back.
//
// CRT (Algo 1): mod(A, p_j) = mod(sum_k a_k mod(beta^k, p_j), p_j) with the table mod(beta^k, p_j) precomputed
// and the sum kept in a two-word accumulator (three on the scalar path when 60-bit primes would overflow it),
// reduced once per residue.
//   * IFMA path (all p_j < 2^50): the coefficient is read as 52-bit digits a_d (beta = 2^52 inside the kernel),
//     lanes are 8 coefficients, the accumulator is the pair (lo, hi) of _mm512_madd52lo/hi sums, and the table
//     holds mod(2^(52 d) 2^104, p_j) so that two Montgomery steps by 2^52 finish the reduction.
//   * AVX2 path (all p_j in [2^40, 2^50); crt_avx2.cpp): lanes are 4 coefficients read as 32-bit digits (beta = 2^32), the
//     table entries split into 25-bit halves so that every lane product (vpmuludq) stays below 2^57; the two sums
//     are combined and reduced once per run of 127 digits.
//   * scalar path (any primes < 2^61, beta = 2^64): u128 accumulator plus a carry word.
//
// iCRT (Algo 6): t_j = mod(x_j inv(P/p_j), p_j) (Shoup), then the matrix product sum_j t_j (P/p_j) digit by
// digit: for every output digit k, accum_small = sum_j t_j TB_Pdivp[j][k] is a two-word sum (lo into digit k,
// hi into digit k + 1), the digits are carried into a big integer at the end. "mod P" is replaced by
// subtracting v P with v = round(sum_j t_j / p_j) computed in double (exact: P exceeds 16 |c|, so the
// fraction is within 1/16 of an integer while the floating error is below 2^-40), which leaves the centered
// value c in (-P/2, P/2); "mod q" (q = 2^logq) is then a truncation, so only the digits below the output's top
// bit are computed (PLimbs shrinks to qLimbs). When the output is shifted right by s bits (key switching
// divides by Q), the digits below bit s - 100 are skipped: they move round(c / 2^s) by less than 2^-40 (so
// at most by one, with probability below 2^-40 per coefficient).
//   * IFMA path: lanes are 8 coefficients and each lane runs the digits k of its own coefficient (N PLimbs-way
//     parallelism); the t_j of a tile of coefficients are written transposed (tile-major, the np residues of
//     a coefficient group adjacent: Section V-B's transposition) so that the product reads them contiguously.
//   * AVX2 path: lanes are 4 coefficients, t_j split into 25-bit halves times 32-bit digits of P/p_j (the same
//     words as the scalar path's, so the same integer and the same bits); np + 1 <= 127 rows, else scalar.
//   * scalar path: beta = 2^64 words with u128 accumulators.
//
// Threads (Section V-B): CRT and iCRT split the N coefficients, NTT and iNTT the primes (crt_polys & co below).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "heaan/big_poly.hpp"
#include "math/ntt.hpp"

namespace ember {
class ThreadPool;
}

namespace ember::heaan {

/// Tables of iCRT for the first np primes.
struct IcrtPlan {
    std::size_t np = 0;
    int p_bits = 0;                  // bit length of P
    std::vector<u64> P;              // P as words
    std::vector<MulConst> inv;       // inv(P/p_j) mod p_j with 64-bit Shoup companions
    std::vector<u64> inv_shoup52;    // floor(inv_j 2^52 / p_j) (IFMA Shoup)
    std::vector<double> inv_p;       // 1 / p_j
    std::size_t k52 = 0;             // row stride of pd52: ceil(log2 P / 52) + 1 digits, then 16 zero digits (the
                                     // IFMA kernel runs whole chunks of up to 13 digits)
    std::vector<u64> pd52;           // (np + 1) x k52: digits base 2^52 of P/p_j; row np: of -P mod 2^(52 (k52 - 16))
    std::size_t k64 = 0;             // words per row of pw64
    std::vector<u64> pw64;           // (np + 1) x k64: words of P/p_j; row np: of 2^(64 k64) - P
    std::size_t k32 = 0;             // row stride of pd32: 2 k64 digits, then 8 zero digits (AVX2 chunks of 6)
    std::vector<std::uint32_t> pd32; // (np + 1) x k32: the words of pw64 as 32-bit digits (AVX2 iCRT)
};

/// The CRT / iCRT kernels a basis runs, slowest first.
enum class CrtPath { kScalar, kAvx2, kIfma };
/// "scalar", "avx2" or "ifma".
const char* crt_path_name(CrtPath p);

class CrtBasis {
public:
    /// `count` primes q = 1 mod 2n below 2^prime_bits (nearest first), CRT tables for inputs of up to max_in_bits.
    CrtBasis(std::size_t n, int prime_bits, std::size_t count, int max_in_bits);
    CrtBasis(const CrtBasis&) = delete;
    CrtBasis& operator=(const CrtBasis&) = delete;

    std::size_t n() const { return n_; }
    std::size_t size() const { return primes_.size(); }
    int prime_bits() const { return prime_bits_; }
    const Modulus& prime(std::size_t j) const { return primes_[j]; }
    const NttTables& ntt(std::size_t j) const { return ntt_[j]; }
    int max_in_bits() const { return max_in_bits_; }
    /// log2(p_0 ... p_{np-1}).
    double log_p(std::size_t np) const { return log_prefix_.at(np); }
    /// Primes needed for products with |c| <= 2^bound_bits: the fewest np with P > 2^(bound_bits + 4)
    /// (1 bit for the sign, 3 of margin for the rounded quotient of iCRT). Throws if the basis is too small.
    std::size_t primes_for(int bound_bits) const;
    /// The kernels in use: IFMA (CPU has AVX-512 IFMA, every prime is below 2^50, N >= 64), else AVX2 (CPU has AVX2,
    /// every prime in [2^40, 2^50)), else scalar. EMBER_SIMD caps the choice (math/cpu_features.hpp).
    CrtPath path() const { return path_; }
    /// The fastest path this basis can take on this CPU.
    CrtPath best_path() const { return best_; }
    /// Runs `p`, or the best path below it that this basis can take (tests compare the paths). AVX2 needs its own
    /// condition (primes in [2^40, 2^50)), which an IFMA basis need not meet.
    void set_path(CrtPath p) {
        if (p > best_) p = best_;
        if (p == CrtPath::kAvx2 && !avx2_ok_) p = CrtPath::kScalar;
        path_ = p;
    }
    bool ifma() const { return path_ == CrtPath::kIfma; }
    bool avx2() const { return path_ == CrtPath::kAvx2; }
    /// on: the best path; off: the scalar kernels.
    void set_ifma(bool on) { set_path(on ? best_ : CrtPath::kScalar); }
    /// Coefficients per kernel block: 64 on the IFMA path (8 groups of 8 lanes), 1 on the others.
    std::size_t block() const { return ifma() ? 64 : 1; }

    /// p_j - (2^(in_bits-1) mod p_j) for j < np: the CRT of a centered input (read as signed, in
    /// [-2^(in_bits-1), 2^(in_bits-1))) flips its top bit, i.e. adds 2^(in_bits-1), and adds these afterwards.
    std::vector<u64> centered_offsets(int in_bits, std::size_t np) const;

    /// CRT (Algo 1) of the coefficients [c0, c0 + count): `in` points at coefficient c0 (count x words words, values
    /// below 2^in_bits <= 2^max_in_bits); rows[j][c0 + i] = in_i mod p_j for j < np. offset: nullptr (unsigned
    /// inputs) or centered_offsets(in_bits, np). c0 and count are multiples of block(); 64-byte aligned rows take
    /// streaming stores (they are read back by the NTT long after, so they bypass the caches).
    void crt_block(const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* rows, std::size_t c0, std::size_t count,
                   const u64* offset) const;
    /// iCRT (Algo 6) of coefficients [c0, c0 + count): c_i in (-P/2, P/2) with c_i = rows[j][c0 + i] mod p_j
    /// (|c_i| < P/16), out (pointing at coefficient c0, count x words_for_bits(out_bits) words) =
    /// round(c_i / 2^shift) mod 2^out_bits. Requires shift + out_bits <= log2 P. Exact for shift = 0; see the
    /// header comment for shift > 0.
    void icrt_block(const IcrtPlan& plan, const u64* const* rows, int shift, int out_bits, u64* out, std::size_t c0, std::size_t count) const;

    /// The same over [begin, end) with absolute indexing of `in` / `out` (tests).
    void crt(const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* out, std::size_t begin, std::size_t end,
             bool centered = false) const;
    void icrt(const u64* const* in, std::size_t np, int shift, int out_bits, u64* out, std::size_t begin, std::size_t end) const;

    const IcrtPlan& icrt_plan(std::size_t np) const;

    // CRT tables (Algo 1), public for the kernels.
    std::size_t d52 = 0, d64 = 0;  // digits / words per row
    std::vector<u64> crt52;        // [j * d52 + d] = 2^(52 d + 104) mod p_j
    std::vector<u64> crt64;        // [j * d64 + k] = 2^(64 k) mod p_j
    std::vector<u64> two128;       // 2^128 mod p_j
    std::vector<u64> pinv52;       // -p_j^-1 mod 2^52
    std::size_t d32 = 0;               // digits per row of crt32 (AVX2 path only; 0 otherwise)
    std::vector<std::uint32_t> crt32;  // [(j * d32 + d) * 2 + h]: 2^(32 d) mod p_j, its low (h = 0) and high 25 bits

    /// Throws unless shift + out_bits <= log2 P.
    void check_icrt(const IcrtPlan& plan, int shift, int out_bits) const;

private:

    std::size_t n_;
    int prime_bits_, max_in_bits_;
    std::vector<Modulus> primes_;
    std::vector<NttTables> ntt_;
    std::vector<double> log_prefix_;
    CrtPath path_ = CrtPath::kScalar, best_ = CrtPath::kScalar;
    bool avx2_ok_ = false;  // the AVX2 kernels can run (CPU, primes) and crt32 is built
    mutable std::mutex mu_;
    mutable std::map<std::size_t, std::unique_ptr<IcrtPlan>> plans_;
};

namespace detail {
/// CPU has (and EMBER_SIMD allows) AVX-512 IFMA (heaan/crt_ifma.cpp); outside x86-64 always false (heaan/crt.cpp).
bool crt_ifma_supported();
/// CPU has (and EMBER_SIMD allows) AVX2 (heaan/crt_avx2.cpp); outside x86-64 always false (heaan/crt.cpp).
bool crt_avx2_supported();
// Kernels behind crt_block / icrt_block (same contracts; IFMA: c0 and count multiples of 64). The IFMA ones
// (heaan/crt_ifma.cpp) and copy_stream exist in x86-64 builds only.
#if defined(__x86_64__)
void crt_ifma(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* rows, std::size_t c0,
              std::size_t count, const u64* offset);
void icrt_ifma(const CrtBasis& B, const IcrtPlan& plan, const u64* const* rows, int shift, int out_bits, u64* out, std::size_t c0,
               std::size_t count);
// AVX2 (heaan/crt_avx2.cpp): any c0 and count (a tail of fewer than 16 / 4 coefficients, and iCRT with np >= 127, take
// the scalar kernels).
void crt_avx2(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* rows, std::size_t c0,
              std::size_t count, const u64* offset);
void icrt_avx2(const CrtBasis& B, const IcrtPlan& plan, const u64* const* rows, int shift, int out_bits, u64* out, std::size_t c0,
               std::size_t count);
#endif
void crt_scalar(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* rows, std::size_t c0,
                std::size_t count, const u64* offset);
void icrt_scalar(const CrtBasis& B, const IcrtPlan& plan, const u64* const* rows, int shift, int out_bits, u64* out, std::size_t c0,
                 std::size_t count);
#if defined(__x86_64__)
/// dst = src (`words` words, both 64-byte aligned, words a multiple of 8) with streaming stores (IFMA builds only).
void copy_stream(u64* dst, const u64* src, std::size_t words);
#endif
/// First 52-bit digit (IFMA) / 64-bit word (scalar) iCRT accumulates when the output is shifted by `shift`.
inline std::size_t icrt_first_digit(int shift, int digit_bits) { return shift > 100 ? static_cast<std::size_t>(shift - 100) / digit_bits : 0; }
}  // namespace detail

// ---- whole-polynomial stages on a thread pool ---------------------------------------------------------------------
//
// Trace: every stage records its kernels' counts once (calls, modular and word multiplications, bytes) and each
// thread adds the time it spent in each kernel, so a kernel's ns is CPU time summed over the threads; inside a
// fused stage (iCRT feeding CRT, NTT -> products -> iNTT per prime) the parts are timed separately. The
// breakdown of HE Mul (bench) scales these CPU times to the measured wall time.

/// Times a section on the calling thread and adds it to a trace kernel (ns only) when tracing is on.
class KernelClock {
public:
    explicit KernelClock(const char* kernel);
    ~KernelClock();
    KernelClock(const KernelClock&) = delete;
    KernelClock& operator=(const KernelClock&) = delete;

private:
    const char* kernel_;
    bool on_;
    std::int64_t t0_ = 0;
};
/// Adds counts (calls, multiplications, bytes; no time) to a trace kernel when tracing is on.
void count_kernel(const char* kernel, std::uint64_t calls, std::uint64_t mod_mul, std::uint64_t ntt, std::uint64_t bytes_read,
                  std::uint64_t bytes_written);

/// 64-byte aligned scratch of u64 words.
class RowBuffer {
public:
    RowBuffer() = default;
    explicit RowBuffer(std::size_t words);
    u64* data() { return p_.get(); }
    const u64* data() const { return p_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free { void operator()(u64* p) const; };
    std::unique_ptr<u64[], Free> p_;
    std::size_t size_ = 0;
};

/// dst = src (n words): with streaming stores when `stream` (IFMA builds: both 64-byte aligned, n a multiple of 8).
void store_row(u64* dst, const u64* src, std::size_t n, bool stream);

/// One polynomial's np residue rows sit contiguously (row j at poly + j * N); the stages take lists of them.
using RnsPolys = std::vector<u64*>;

/// CRT of polys[k] into dest[k] (np rows each), threads over coefficients. centered: coefficients read as
/// signed (|x| <= 2^(bits-1)), which halves the product bounds and keeps the key-switching noise a' e / Q free of
/// the bias of a' in [0, q). [heaan_crt]
void crt_polys(const CrtBasis& B, ThreadPool& pool, const std::vector<const BigPoly*>& polys, std::size_t np, const RnsPolys& dest,
               bool centered = true);
/// Residues of a small signed polynomial into np rows. [heaan_crt]
void crt_small(const CrtBasis& B, ThreadPool& pool, const std::vector<std::int64_t>& v, std::size_t np, u64* dest);
/// Forward / inverse NTT of every row of the polys, threads over primes. [heaan_ntt] / [heaan_intt]
void ntt_rows(const CrtBasis& B, ThreadPool& pool, const RnsPolys& polys, std::size_t np);
void intt_rows(const CrtBasis& B, ThreadPool& pool, const RnsPolys& polys, std::size_t np);

/// One reconstruction: the np residue rows of a polynomial (row j at rows + j N), read as the centered integer
/// c and output as round(c / 2^shift).
struct IcrtPart {
    const u64* rows = nullptr;
    std::size_t np = 0;
    int shift = 0;
};
/// One output of the iCRT stage: the sum of its parts (and of `addend` when set) modulo 2^out_bits, written to
/// `out` when set and/or converted on the spot (centered CRT) into crt_np rows at crt_rows. So the iCRT of region
/// 1 feeds the CRT of region 2 tile by tile, and the result of HE Mul adds the reconstructions of region 1
/// (a1 b2 + b1 a2, b1 b2) and region 2 without a pass over memory in between. addend and out hold
/// N x words_for_bits(out_bits) words (out 64-byte aligned: it takes streaming stores).
struct IcrtJob {
    std::vector<IcrtPart> parts;
    int out_bits = 0;
    const u64* addend = nullptr;
    u64* out = nullptr;
    u64* crt_rows = nullptr;
    std::size_t crt_np = 0;
};
/// Runs the jobs over all coefficients, threads over coefficients. [heaan_icrt, heaan_crt, heaan_extra]
void icrt_stage(const CrtBasis& B, ThreadPool& pool, std::vector<IcrtJob>& jobs);
/// iCRT of one poly's np rows into out (allocated as N x words_for_bits(out_bits)). [heaan_icrt]
void icrt_poly(const CrtBasis& B, ThreadPool& pool, const u64* rows, std::size_t np, int shift, int out_bits, BigPoly& out);

/// round(a * b / 2^shift) mod 2^out_bits in Z[X]/(X^N + 1), a and b read as integers in [0, 2^bits): the
/// CRT -> NTT -> pointwise -> iNTT -> iCRT product of paper 000 (Fig. 2) on its own (tests, benchmarks).
BigPoly multiply(const CrtBasis& B, ThreadPool& pool, const BigPoly& a, const BigPoly& b, int shift, int out_bits);

}  // namespace ember::heaan
