// The fast scalar NTT (math/ntt_scalar_impl.hpp) compiled for x86-64-v3: CMake gives *_avx2.cpp files -mavx2 -mbmi2
// -mfma (x86-64 builds only), so the 64 x 64 -> 128-bit products of the Shoup reductions become mulx (any
// registers, no flags) instead of the one-operand mul tied to rax and rdx. Enter only after
// detail::ntt_scalar_v3_supported(). The implementation's anonymous namespace keeps this copy apart from the
// baseline one in math/ntt_scalar.cpp.
#include "math/ntt.hpp"
#include "math/ntt_scalar_impl.hpp"

namespace ember::detail {

void ntt_forward_scalar_v3(u64* a, const NttTables& t) { scalar_ntt::forward(a, t); }

void ntt_inverse_scalar_v3(u64* a, const NttTables& t) { scalar_ntt::inverse(a, t); }

}  // namespace ember::detail
