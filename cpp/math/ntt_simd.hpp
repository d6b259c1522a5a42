// Internal entry points of the vector NTT kernels (math/ntt_ifma.cpp, math/ntt_avx512.cpp).
//
// These files are compiled with AVX-512 flags and must only be entered after a CPUID check; ntt_forward /
// ntt_inverse do that. Tests and benchmarks call them directly to force one path, guarded by the *_supported
// predicates below. Every kernel is in place, takes inputs in [0, q) and returns outputs in [0, q), bit-identical
// to ntt_forward_scalar / ntt_inverse_scalar (the outputs are fully reduced, so any correct path agrees).
#pragma once

#include "math/ntt.hpp"

namespace ember::detail {

/// CPU has AVX-512 F/DQ/VL/IFMA and q < 2^50 (the 52-bit multiplier lanes need 4q < 2^52).
bool ntt_ifma_supported(const NttTables& t);
/// CPU has AVX-512 F/DQ/VL and q < 2^61.
bool ntt_avx512_supported(const NttTables& t);

/// IFMA kernels (52-bit Shoup products with _mm512_madd52lo/hi_epu64). Precondition: ntt_ifma_supported(t).
/// N < 16 falls back to the scalar path.
void ntt_forward_ifma(u64* a, const NttTables& t);
void ntt_inverse_ifma(u64* a, const NttTables& t);

/// AVX-512F kernels for q < 2^61 (64-bit Shoup products emulated with 32x32->64 multiplies).
/// Precondition: ntt_avx512_supported(t). N < 16 falls back to the scalar path.
void ntt_forward_avx512(u64* a, const NttTables& t);
void ntt_inverse_avx512(u64* a, const NttTables& t);

}  // namespace ember::detail
