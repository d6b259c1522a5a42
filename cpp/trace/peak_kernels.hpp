// Internal: the vector kernels of the machine-peak measurements (trace/peak.cpp), one file per instruction set.
#pragma once

#include <cstddef>

#include "math/modarith.hpp"

namespace ember::trace::detail {
#if defined(__x86_64__)
/// sum of the 32 x 32 -> 64-bit lane products a[k] * b[k] (low halves), n a multiple of 16: n lane products (AVX2).
u64 lane_mul_acc_avx2(const u64* a, const u64* b, std::size_t n);
#endif
}  // namespace ember::trace::detail
