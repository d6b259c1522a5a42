// Element-wise modular kernels over one limb (n words, one modulus). Inputs are in [0, q), outputs too.
// Dispatch: IFMA lanes for q < 2^50 when the CPU has them, else AVX-512F lanes (64-bit products from 32-bit
// pieces, any q) when it has AVX-512 F/DQ/VL, else AVX2 lanes (the same arithmetic on four lanes) when it has
// AVX2 / BMI2 / FMA, else the scalar code; EMBER_SIMD=scalar|avx2|avx512|ifma caps the level (math/cpu_features).
// All paths give the same (fully reduced) outputs. vec_dot (the key-switch inner product) streams its operands in
// blocks of coefficients, a few arrays at a time, on every path.
#pragma once

#include <cstddef>

#include "math/modarith.hpp"

namespace ember {

void vec_add(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_sub(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_neg(u64* out, const u64* a, std::size_t n, const Modulus& m);
/// out = a * b
void vec_mul(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
/// acc = acc + a * b
void vec_mul_add(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m);
/// out = a * c for a constant c (Shoup)
void vec_mul_const(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
/// out = out + a * c
void vec_mul_const_add(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
/// out = a + c for a constant c < q
void vec_add_const(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m);
/// out = sum_j a[j] * b[j] over `terms` pairs of limbs (KSKInnerProd): products are accumulated without
/// reduction (128-bit; in AVX-512F lanes as sums of 32x32-bit partial products; IFMA lo/hi 52-bit accumulators) and
/// reduced once per coefficient (once per chunk of terms when there are many).
void vec_dot(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m);
/// out = (a - b) * c  (ModDown and rescale: (x - conv(x)) * P^-1)
void vec_sub_mul_const(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m);

}  // namespace ember
