// The fast scalar NTT (math/ntt_scalar_impl.hpp), compiled with the baseline flags: the portable path, and the one
// EMBER_SIMD=scalar runs. (A second copy compiled for x86-64-v3, -mbmi2 / mulx, measured within 1 % of this one on
// Zen 3 -- GCC keeps the one-operand mul, and a forced mulx was 20 % slower -- so there is none.)
#include "math/ntt.hpp"

#include "math/ntt_scalar_impl.hpp"

namespace ember {

void ntt_forward_scalar(u64* a, const NttTables& t) { detail::scalar_ntt::forward(a, t); }

void ntt_inverse_scalar(u64* a, const NttTables& t) { detail::scalar_ntt::inverse(a, t); }

}  // namespace ember
