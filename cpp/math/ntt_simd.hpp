// Internal entry points of the vector NTT kernels (math/ntt_ifma.cpp, math/ntt_avx512.cpp, math/ntt_avx2.cpp).
//
// These files are compiled with AVX-512 / AVX2 flags (on x86-64 only) and must only be entered after a CPUID check; ntt_forward /
// ntt_inverse do that. Tests and benchmarks call them directly to force one path, guarded by the *_supported
// predicates below. Every kernel is in place, takes inputs in [0, q) and returns outputs in [0, q), bit-identical
// to ntt_forward_scalar / ntt_inverse_scalar (the outputs are fully reduced, so any correct path agrees).
#pragma once

#include <cstddef>

#include "math/ntt.hpp"

namespace ember::detail {

/// Software prefetch, into L2, of the limb of the transform that will follow on this thread. Out of L2 (the
/// normal case in a pipeline), a forward transform waits on memory in its first pass over the data and then
/// computes with memory idle, and an inverse one the other way round; the kernels call step() in those
/// compute-bound stretches (the in-register stages of the forward transform, the last passes over memory of
/// the inverse), so that the next transform finds its limb in L2. A pure hint: results never depend on it.
/// (Prefetching the next prime's twiddles too was measured no better: the hardware prefetcher streams them.)
class NttPrefetch {
public:
    NttPrefetch(const void* p, std::size_t bytes);
    /// The caller will call step() about `steps` times: spread the lines over them.
    void plan(std::size_t steps) { per_step_ = steps ? (lines_ + steps - 1) / steps : lines_; }
    inline void step() {
        for (std::size_t i = 0; i < per_step_ && cur_ < end_; ++i, cur_ += 64) __builtin_prefetch(cur_, 0, 2);  // into L2 (x86: prefetcht1)
    }

private:
    const char* cur_;
    const char* end_;
    std::size_t lines_ = 0, per_step_ = 0;
};

/// The twiddles a transform reads. kFull: the full tables (psi_rev and its companions, n words each; at n = 2^16
/// 1 MiB per direction): the fewest operations. kCompact: NttTables::quad_* (n >= 64): one product more per
/// vector pair in three of the four in-register stages (about +10% when everything is in L2), 176 KiB at
/// n = 2^16, which is what matters when the tables come from L3 or DRAM (about 1.4x faster then).
enum class Twiddles { kFull, kCompact };
/// kFull if t's tables for this direction were the last ones this thread transformed with (a loop over one prime:
/// they are likely in L2), kCompact otherwise (a pipeline over many primes, each limb with its own tables).
/// Records t as the last one.
Twiddles pick_twiddles(const NttTables& t, bool inverse);

/// CPU has AVX-512 F/DQ/VL/IFMA and q < 2^50 (the 52-bit multiplier lanes need 4q < 2^52).
bool ntt_ifma_supported(const NttTables& t);
/// CPU has AVX-512 F/DQ/VL and q < 2^61.
bool ntt_avx512_supported(const NttTables& t);

/// CPU has (and EMBER_SIMD allows) AVX2, BMI2 and FMA, and q < 2^61.
bool ntt_avx2_supported(const NttTables& t);

/// IFMA kernels (52-bit Shoup products with _mm512_madd52lo/hi_epu64). Precondition: ntt_ifma_supported(t).
/// N < 16 falls back to the scalar path. The two-argument forms take the twiddles pick_twiddles() picks.
void ntt_forward_ifma(u64* a, const NttTables& t);
void ntt_inverse_ifma(u64* a, const NttTables& t);
/// The same with the given twiddles (N < 64 always reads the full tables), prefetching for the next transform
/// meanwhile (pf may be null).
void ntt_forward_ifma(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);
void ntt_inverse_ifma(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);

/// AVX-512F kernels for q < 2^61 (64-bit Shoup products emulated with 32x32->64 multiplies).
/// Precondition: ntt_avx512_supported(t). N < 16 falls back to the scalar path.
void ntt_forward_avx512(u64* a, const NttTables& t);
void ntt_inverse_avx512(u64* a, const NttTables& t);
void ntt_forward_avx512(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);
void ntt_inverse_avx512(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);

/// The process runs the AVX2 path and t has the double tables (q < 2^50; see NttTables).
bool ntt_avx2_fma_supported(const NttTables& t);

/// AVX2 kernels in double precision for q < 2^50 (math/ntt_fma_avx2.cpp: products of doubles with their FMA-exact
/// rounding errors; the AVX2 path's transform for such primes). Precondition: ntt_avx2_fma_supported(t). N < 16
/// falls back to the scalar path.
void ntt_forward_avx2_fma(u64* a, const NttTables& t);
void ntt_inverse_avx2_fma(u64* a, const NttTables& t);
void ntt_forward_avx2_fma(u64* a, const NttTables& t, NttPrefetch* pf);
void ntt_inverse_avx2_fma(u64* a, const NttTables& t, NttPrefetch* pf);

/// AVX2 kernels for q < 2^61 (4 lanes; 64-bit Shoup products from 32 x 32-bit lane products, math/avx2_util.hpp).
/// Precondition: ntt_avx2_supported(t). N < 16 falls back to the scalar path. They read the full twiddle tables.
void ntt_forward_avx2(u64* a, const NttTables& t);
void ntt_inverse_avx2(u64* a, const NttTables& t);
void ntt_forward_avx2(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);
void ntt_inverse_avx2(u64* a, const NttTables& t, NttPrefetch* pf, Twiddles tw);

}  // namespace ember::detail
