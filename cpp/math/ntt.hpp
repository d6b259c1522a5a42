// Negacyclic number-theoretic transform over Z_q[X]/(X^N + 1).
//
// Convention (every implementation -- scalar, AVX-512F, AVX-512 IFMA, CUDA -- must match it bit for bit):
//   forward:  a[i] <- A(psi^(2*brv(i) + 1))  for i in [0, N), where psi is the primitive 2N-th root
//             stored in NttTables::psi, A is the input polynomial in coefficient order and brv is the
//             log2(N)-bit reversal. Inputs and outputs are fully reduced, in [0, q).
//   inverse:  the exact inverse of forward (including the 1/N factor).
// The fast paths are Cooley-Tukey (forward) and Gentleman-Sande (inverse) with Harvey's lazy butterflies:
// intermediate values stay in [0, 4q) and are corrected once at the end, which is why q < 2^62 is required
// for the 64-bit path; the IFMA path (52-bit multiplier lanes) is taken for q < 2^50.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "math/modarith.hpp"

namespace ember {

struct NttTables {
    std::size_t n = 0;
    int log_n = 0;
    Modulus mod;
    u64 psi = 0;                      // primitive 2N-th root of unity
    std::vector<u64> psi_rev;         // psi^brv(i), i in [0, N): twiddles of the forward transform
    std::vector<u64> psi_rev_shoup;   // Shoup companions
    std::vector<u64> ipsi_rev;        // psi^-brv(i): twiddles of the inverse transform
    std::vector<u64> ipsi_rev_shoup;
    u64 n_inv = 0, n_inv_shoup = 0;   // N^-1 mod q
    // Tables laid out for the IFMA path (52-bit Shoup companions, floor(w * 2^52 / q)); filled when q < 2^50.
    std::vector<u64> psi_rev_shoup52;
    std::vector<u64> ipsi_rev_shoup52;
    u64 n_inv_shoup52 = 0;
    // ipsi_rev[1] * N^-1 mod q with its companions: the vector paths merge the N^-1 factor into the last
    // Gentleman-Sande stage (whose only twiddle is ipsi_rev[1]).
    u64 ipsi1_ninv = 0, ipsi1_ninv_shoup = 0, ipsi1_ninv_shoup52 = 0;

    // Tables of the AVX2 double-precision path (math/ntt_fma_avx2.cpp), filled when q < 2^50 and the process runs the
    // AVX2 path (cpu_features().path): each twiddle centered (w - q when w > q/2, so |w| < q/2) as a double, and
    // w / q rounded to a double (2 MiB per prime at N = 2^16).
    std::vector<double> psi_rev_fp, psi_rev_fpq, ipsi_rev_fp, ipsi_rev_fpq;
    double n_inv_fp = 0, n_inv_fpq = 0, ipsi1_ninv_fp = 0, ipsi1_ninv_fpq = 0;

    // Compact twiddles of the four in-register stages (distance t = 8, 4, 2, 1) of the vector kernels, filled
    // when n >= 64. The stage t = 8 >> j (m = (n/16) 2^j butterfly groups) takes, for the 16-coefficient group
    // g = 4h + i and the position l < 2^j in it, the twiddle
    //     psi_rev[m + 2^j g + l] = C_j(h) * E_j(i, l),   C_j(h) = psi_rev[m + 2^j 4h],
    //                                                     E_j(i, l) = psi_rev[m + 2^j i + l] / psi_rev[m]
    // (psi_rev[m + k] = psi^(brv(m + k)) factors over the bits of k; the same holds for ipsi_rev). The kernels
    // work on four groups side by side (a "quad"): they multiply Y by the constant vector E_j(i, .) (from a 1.5 KiB
    // table that stays in L1), then by the quad's C_j, and read stage t = 8's own twiddles A_0(g) = psi_rev[n/16 + g]
    // directly. A transform then streams 112 bytes of twiddles per quad instead of 30 words per group: at
    // n = 2^16, 176 KiB (these plus the n/16 twiddles of the passes over memory) instead of 1 MiB. Out of L2, in a
    // pipeline over many primes, those bytes come from L3 or DRAM, and they dominated the transform.
    struct TailQuad {
        u64 a0[4], a0p[4];  // A_0(4h + i) and companions
        u64 c[6];           // C_1, C_1', C_2, C_2', C_3, C_3'
    };
    struct TailConsts {                 // E_j(i, .) for j = 1, 2, 3 as vectors in the lane layouts S1, S2, S3 of
        alignas(64) u64 w[3][4][8];     // the kernels (lane L holds position l = L mod 2^j)
        alignas(64) u64 wp[3][4][8];
    };
    std::vector<TailQuad> quad_fwd, quad_inv;      // 64-bit Shoup companions (AVX-512F path)
    std::vector<TailQuad> quad_fwd52, quad_inv52;  // 52-bit companions (IFMA path; q < 2^50 only)
    TailConsts econst_fwd{}, econst_inv{}, econst_fwd52{}, econst_inv52{};

    NttTables() = default;
    /// n a power of two in [2^1, 2^17], q prime with q = 1 mod 2n and q < 2^61.
    NttTables(std::size_t n, const Modulus& q);
};

/// In-place forward / inverse transform of one limb, dispatching at run time to IFMA, AVX-512F, AVX2 (in double
/// precision for q < 2^50, math/ntt_fma_avx2.cpp) or scalar.
void ntt_forward(u64* a, const NttTables& t);
void ntt_inverse(u64* a, const NttTables& t);
/// The same transform of `a`, which meanwhile prefetches into L2 the limb `next` (over the prime of `next_t`) that
/// the caller will transform next, in the same direction, on this thread. Same results; `next` may be null.
void ntt_forward(u64* a, const NttTables& t, const u64* next, const NttTables* next_t);
void ntt_inverse(u64* a, const NttTables& t, const u64* next, const NttTables* next_t);

/// The portable scalar transforms (math/ntt_scalar.cpp; always available, and what ntt_forward / ntt_inverse run
/// when no vector path applies): radix-4 passes, depth first through L2- and L1-sized blocks, Harvey's lazy
/// butterflies with Shoup products, the final reduction fused into the last forward stage and N^-1 into the last
/// inverse stage.
void ntt_forward_scalar(u64* a, const NttTables& t);
void ntt_inverse_scalar(u64* a, const NttTables& t);

/// The reference transforms: the plain radix-2 Harvey loops, one stage per sweep over the limb, then a separate
/// reduction (forward) / N^-1 (inverse) pass. Slow; kept as the independent reference every fast path (the scalar
/// transforms above included) is tested against bit for bit.
void ntt_forward_reference(u64* a, const NttTables& t);
void ntt_inverse_reference(u64* a, const NttTables& t);

/// Which path ntt_forward takes for this modulus on this CPU: "ifma", "avx512", "avx2" or "scalar".
const char* ntt_path(const NttTables& t);
/// Whether that path is one for primes below 2^50 (IFMA, or AVX2 in double precision): about half the time of the
/// 64-bit kernels of the same CPU. The CPU backend transforms such limbs last, so that threads finish together.
bool ntt_small_prime_path(const NttTables& t);

/// Modular multiplications one transform performs: (N/2) log N butterflies, plus for the inverse the N^-1
/// scaling, merged into the last stage on every path (N/2 more products; the reference loops' separate pass of N
/// products is not counted here). The trace layer counts with it.
std::uint64_t ntt_mod_mul_count(const NttTables& t, bool inverse);

}  // namespace ember
