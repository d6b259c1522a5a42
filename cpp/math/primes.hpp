// NTT-friendly prime generation: primes q = 1 (mod 2N) of a requested size.
#pragma once

#include <vector>

#include "math/modarith.hpp"

namespace ember {

/// Deterministic Miller-Rabin for 64-bit integers.
bool is_prime(u64 n);

/// `count` distinct primes q = 1 (mod 2n) as close as possible to 2^bits, none in `exclude`.
/// Candidates are taken alternately just below and just above 2^bits when `both_sides` is true,
/// otherwise only below (needed when 2^bits is a hard ceiling, e.g. the 2^50 IFMA bound).
/// The result is ordered by distance to 2^bits, nearest first.
std::vector<u64> ntt_primes_near(int bits, std::size_t count, u64 two_n, const std::vector<u64>& exclude = {},
                                 bool both_sides = true);

/// A primitive `order`-th root of unity mod q (order a power of two dividing q-1); the smallest such value,
/// so tables are reproducible.
u64 root_of_unity(u64 m, u64 q);

}  // namespace ember
