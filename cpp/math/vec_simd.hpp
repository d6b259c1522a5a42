// Internal entry points of the element-wise kernels (math/vec_ops.cpp, math/vec_ops_avx2.cpp, math/vec_ops_avx512.cpp,
// math/vec_ops_ifma.cpp) and of the base conversion kernels (math/rns.cpp, math/rns_ifma.cpp, math/rns_avx2.cpp).
//
// The public functions in vec_ops.hpp / BaseConverter::convert dispatch here at run time (CPUID, see
// cpu_features). Tests and benchmarks call these directly to force one path, guarded by the *_supported
// predicates. Every path returns fully reduced outputs, so all of them are bit-identical to the scalar code.
//
//  * *_avx2 kernels: AVX2 (x86-64-v3; 4 lanes, the same 32x32 -> 64-bit product arithmetic as the AVX-512F kernels),
//    any q < 2^61. Precondition: vec_avx2_supported(). The dispatcher takes them on CPUs without AVX-512 (and with
//    EMBER_SIMD=avx2). Like the *_avx512 and *_ifma kernels, they exist on x86-64 only (calls need #if __x86_64__).
//  * *_avx512 kernels: plain AVX-512F/DQ (64-bit products from 32x32 -> 64-bit pieces), any q < 2^61 (the
//    additive ones any q < 2^63). Precondition: vec_avx512_supported(). The dispatcher takes them for the moduli the
//    IFMA kernels do not take (q >= 2^50: the 60-bit primes), and for all moduli on CPUs without IFMA.
//  * *_ifma kernels: 52-bit lanes (_mm512_madd52lo/hi_epu64). Precondition: vec_ifma_supported(m), i.e. the CPU
//    has AVX-512 F/DQ/VL/IFMA, q < 2^50 and q is not a power of two.
//  * *_scalar kernels: portable code, any q < 2^61 (the run-time fallback without AVX2, or EMBER_SIMD=scalar).
//    vec_dot_scalar streams its operands: blocks of coefficients, each swept by a few terms at a time.
//  * base_convert_ifma: any bases of primes below 2^61 (52-bit digit Montgomery accumulation); precondition
//    base_convert_ifma_supported(conv). base_convert_avx2: up to 63 source primes, any primes below 2^61 (exact
//    128-bit sums from 32 x 32-bit lane products); precondition base_convert_avx2_supported(conv).
//    base_convert_scalar: any bases (the fallback).
#pragma once

#include <cstddef>

#include "math/modarith.hpp"

namespace ember {
class BaseConverter;
}

namespace ember::detail {

/// The AVX2 path is enabled: the CPU has AVX2/BMI2/FMA (x86-64-v3) and EMBER_SIMD does not cap it below avx2.
bool vec_avx2_supported();
/// CPU has AVX-512 F/DQ/VL.
bool vec_avx512_supported();
/// CPU has AVX-512 F/DQ/VL/IFMA, 3 <= q < 2^50 and q is not a power of two.
bool vec_ifma_supported(const Modulus& m);

// ---- scalar ----------------------------------------------------------------------------------------------------
void vec_add_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_sub_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_neg_scalar(u64* out, const u64* a, std::size_t n, const Modulus& m);
void vec_add_const_scalar(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m);
void vec_mul_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_add_scalar(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_const_scalar(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_mul_const_add_scalar(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_dot_scalar(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m);
void vec_sub_mul_const_scalar(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m);

// ---- AVX2 (math/vec_ops_avx2.cpp, x86-64 only, entered only after vec_avx2_supported()) -----------------------
void vec_add_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_sub_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_neg_avx2(u64* out, const u64* a, std::size_t n, const Modulus& m);
void vec_add_const_avx2(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m);
void vec_mul_avx2(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_add_avx2(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_const_avx2(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_mul_const_add_avx2(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_dot_avx2(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m);
void vec_sub_mul_const_avx2(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m);

// ---- AVX-512F (math/vec_ops_avx512.cpp, entered only after vec_avx512_supported()) -----------------------------
void vec_add_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_sub_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_neg_avx512(u64* out, const u64* a, std::size_t n, const Modulus& m);
void vec_add_const_avx512(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m);
void vec_mul_avx512(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_add_avx512(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_const_avx512(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_mul_const_add_avx512(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_dot_avx512(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m);
void vec_sub_mul_const_avx512(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m);

// ---- IFMA (math/vec_ops_ifma.cpp, entered only after vec_ifma_supported(m)) ------------------------------------
void vec_mul_ifma(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_add_ifma(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m);
void vec_mul_const_ifma(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_mul_const_add_ifma(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m);
void vec_dot_ifma(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m);
void vec_sub_mul_const_ifma(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m);

/// r - q if r >= q, else r, always without a branch: left to itself, the compiler turns the second of two chained
/// conditional subtractions into a branch, which random residues mispredict half of the time.
inline u64 csub(u64 r, u64 q) {
#if defined(__x86_64__)
    u64 t = r;
    __asm__("sub %[q], %[t]\n\tcmovb %[r], %[t]" : [t] "+&r"(t) : [q] "r"(q), [r] "r"(r) : "cc");
    return t;
#else
    return r >= q ? r - q : r;
#endif
}

/// Barrett constants for a*b mod q with two multiplications (scalar, any q < 2^61 that is not a power of two
/// and at least 4): with s = bits(q) - 2 and mu = floor(2^(64+s) / q), for x < q^2 the estimate
/// floor((x >> s) * mu / 2^64) is the quotient or one below it, so x - estimate * q lies in [0, 2q).
struct Barrett64 {
    u64 q = 0, mu = 0;
    int s = 0;
    bool ok = false;  // false for q < 4 or a power of two: use Modulus::reduce128 instead
    explicit Barrett64(const Modulus& m);
    /// x mod q for x < q^2 (in particular a * b + c with a, b, c < q).
    u64 reduce(u128 x) const {
        // x >> s with 1 <= s <= 59, written on the two words so that no 128-bit variable shift is emitted
        const u64 xl = static_cast<u64>(x), xh = static_cast<u64>(x >> 64);
        const u64 qh = mulhi64((xh << (64 - s)) | (xl >> s), mu);
        return csub(xl - qh * q, q);
    }
};

/// Terms of vec_dot summed before one reduction with the Barrett64 constants (at least 1, at most 32):
/// chunk * (q-1)^2 + (q-1) < 2^(62+bits), so that x >> s fits a word (the residue of the previous chunk, below q,
/// starts the next one). Requires Barrett64(m).ok.
std::size_t dot_barrett_chunk(const Modulus& m);

// ---- base conversion (math/rns.cpp, math/rns_ifma.cpp, math/rns_avx2.cpp) -------------------------------------------
/// Portable blocked kernel (any bases; bit-identical to convert_reference).
void base_convert_scalar(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                         std::size_t end, bool centered);
/// CPU has AVX-512 F/DQ/VL/IFMA and every source and target prime is odd and in [2^20, 2^61).
bool base_convert_ifma_supported(const BaseConverter& conv);
/// IFMA kernel. Precondition: base_convert_ifma_supported(conv).
void base_convert_ifma(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                       std::size_t end, bool centered);
/// The AVX2 path is enabled (cpu_features().use_avx2()), 1 <= k <= 63 source primes, every prime in [2, 2^61)
/// (math/rns_avx2.cpp; false on other architectures).
bool base_convert_avx2_supported(const BaseConverter& conv);
/// AVX2 kernel (x86-64 only). Precondition: base_convert_avx2_supported(conv).
void base_convert_avx2(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                       std::size_t end, bool centered);

}  // namespace ember::detail
