// The homomorphic DFT of bootstrapping as a product of sparse matrices (Cheon-Han-Kim-Kim-Song 2018;
// Chen-Chillotti-Song 2019): the special FFT of the encoder, log2(n) butterfly stages of three
// diagonals each (0, +len/2, -len/2), grouped into `levels` factors (MAD's fftIter), each applied as
// one LinearTransform and consuming one level.
//
// The bit-reversal permutation of the FFT is left out of both directions: CoeffToSlot leaves the
// coefficients in bit-reversed slot order, EvalMod works slot by slot, and SlotToCoeff takes them in
// that order, so the two permutations cancel.
#pragma once

#include <map>
#include <vector>

#include "ckks/encoder.hpp"

namespace ember {

using Diagonals = std::map<long, std::vector<cplx>>;

/// SlotToCoeff factors (decode direction: slots <- coefficients), in the order they are applied:
/// S_2 first ... S_n last, grouped into `levels` factors. Applying all of them to the bit-reversed vector
/// w gives Encoder::fft_special(w in natural order). `scale` multiplies the first factor.
std::vector<Diagonals> slot_to_coeff_factors(const Encoder& enc, std::size_t slots, std::size_t levels, cplx scale = 1.0);

/// CoeffToSlot factors (encode direction), in application order, grouped into `levels` factors; the
/// product maps z to the bit-reversed Encoder::fft_special_inv(z), including its 1/n, times `scale`.
std::vector<Diagonals> coeff_to_slot_factors(const Encoder& enc, std::size_t slots, std::size_t levels, cplx scale = 1.0);

/// Product of two diagonal-sparse matrices (A applied after B): diag_{i+j}(AB)[r] += a_i[r] b_j[r + i].
Diagonals compose(const Diagonals& a, const Diagonals& b, std::size_t slots);

}  // namespace ember
