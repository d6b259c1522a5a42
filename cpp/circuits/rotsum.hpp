// Sums of rotations with one key switch each: rotate_sum and the hoisted inner sum.
//
// rotate_sum(a, {s_1, ..., s_k}) = sum_i rot(a, s_i) (step 0: a itself) with one decomposition of c1 for every
// step, the rotations left in the raised basis Q_l U P and summed there, and one ModDown for the sum
// (Evaluator::rotate_many_raised, add, mod_down: double hoisting applied to a plain sum). Against k - 1
// separate rotations and additions it saves k - 2 decompositions (ModUp) and k - 2 ModDowns, and rounds once.
//
// inner_sum(a, stride, count, radix) = sum_{j < count} rot(a, j * stride), count a power of two: the usual
// rotate-and-add takes log2(count) key switches one after the other; here each round adds radix - 1 rotations of
// the running sum (steps t, 2t, ..., (radix - 1) t, one rotate_sum), so log_radix(count) rounds (the last one
// smaller when log2(count) is not a multiple of log2(radix)). radix = 2 is the rotate-and-add itself (its rounds
// one rotation each). Every step is a public Evaluator operation of the caller's evaluator, so a graph capture
// records it as rotate_many_raised, add and mod_down nodes.
#pragma once

#include <cstddef>
#include <vector>

#include "ckks/evaluator.hpp"

namespace ember {

/// sum over `steps` of rot(a, s) (duplicates counted as often as given; 0 is a itself), one ModUp and one
/// ModDown; level and scale of a. Throws on an empty list or a missing Galois key (before any work).
Ciphertext rotate_sum(const Evaluator& ev, const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk);

/// sum_{j < count} rot(a, j * stride) by rounds of rotate_sum (see above). count a power of two, at most a's slots;
/// radix a power of two >= 2; 0 < |stride| < 2^31 (a stride that is a multiple of the slots sums count copies of
/// a). Throws otherwise, or on a missing Galois key.
Ciphertext inner_sum(const Evaluator& ev, const Ciphertext& a, long stride, long count, long radix,
                     const GaloisKeys& gk);

/// The rotation steps inner_sum(stride, count, radix) needs keys for, in the order of its rounds (count at most
/// 2^20; the same checks as inner_sum otherwise).
std::vector<long> inner_sum_rotations(long stride, long count, long radix);

}  // namespace ember
