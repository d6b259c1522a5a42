// Which kernel path (scalar, avx2, avx512, ifma) each kernel family takes on this CPU, for `ember info` and the
// "path" of every `ember bench` record. The paths follow the dispatchers' own predicates, so they are what runs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "math/modarith.hpp"

namespace ember {

/// The NTT's path for a limb of 2^16 coefficients over the prime q (math/ntt.cpp's choice).
const char* ntt_path_for(u64 q);
/// The element-wise modular products' path for modulus q (math/vec_ops.cpp's choice; additions follow the same
/// vector level, without the IFMA split).
const char* elementwise_path_for(u64 q);
/// The family -> path table of this CPU for the primes given (several paths joined with '+', widest first, e.g.
/// "ifma+avx512" when the primes below 2^50 take IFMA and the 60-bit ones AVX-512F): ntt, elementwise,
/// base_conversion, automorphism, heaan_crt.
std::vector<std::pair<std::string, std::string>> kernel_paths(const std::vector<u64>& primes);

}  // namespace ember
