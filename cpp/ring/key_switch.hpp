// Hybrid key-switching building blocks (MAD paper 001, Algos 1-3; Han-Ki 2020):
//   Decomp      split x in R_Q into beta <= dnum digits, each the residues over a group of alpha primes;
//   ModUp       extend each digit to the basis Q_l U P by fast base conversion (NewLimb, Eq. 1);
//   KSKInnerProd  (u, v) = sum_j digit_j * (b_j, a_j) over Q_l U P;
//   ModDown     (u, v) / P back to Q_l (Algo 2), optionally merged with a Rescale (dividing by P q_l).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "ring/poly.hpp"

namespace ember {

/// Digit j covers Q prime indices [first, last). Digits are cut from the top of the chain so that q_0,
/// usually the largest prime, lands in the smallest digit; this keeps every digit's product below P.
using DigitRange = std::pair<std::size_t, std::size_t>;
std::vector<DigitRange> digit_partition(std::size_t q_count, std::size_t dnum);

/// A switching key from s' to s: for every digit j, (b_j, a_j) with b_j = -a_j s + e_j + P * g_j * s'
/// over the full basis Q U P in evaluation form, where g_j = 1 mod the primes of digit j and 0 mod the
/// others. When seeded, a_j is the expansion of seeds[j] (MAD's key compression) and may be dropped
/// from memory and re-expanded.
struct SwitchingKey {
    std::vector<Poly> b;
    std::vector<Poly> a;
    std::vector<std::array<std::uint8_t, 32>> seeds;  // empty when not seeded
    std::uint64_t key_id = 0;  // identity of the key set of s, the secret it switches to (0: unbound)
    bool seeded() const { return !seeds.empty(); }
    std::size_t digits() const { return b.size(); }
};

/// A BV (digit-decomposition) switching key from s to s' over the first q_limbs() primes of Q, without
/// special primes: parts[i] = (b_i, a_i) with b_i + a_i s' = e_i + B^i s, B = 2^digit_bits. For switching
/// over a small modulus where a hybrid key's P would be too large for the target secret (bootstrapping's
/// encapsulation into a sparse secret over q0). key_id: the key set of s', the secret it switches to.
struct DigitSwitchingKey {
    std::vector<std::pair<Poly, Poly>> parts;
    int digit_bits = 0;
    std::uint64_t key_id = 0;
    std::size_t q_limbs() const { return parts.empty() ? 0 : parts[0].first.q_limbs(); }
};

/// Decomp + ModUp of c (basis Q, evaluation form): one polynomial per non-empty digit, basis Q_l U P,
/// evaluation form.
std::vector<Poly> mod_up_digits(const Poly& c, const std::vector<DigitRange>& partition);

/// MAD's per-limb caching in ModUp and ModDown (on by default): Decomp and iNTT of each limb in one pass, and the
/// copy of each dropped limb with its iNTT in ModDown / Rescale (divide_by_dropped). With Ember's
/// Galois keys (s -> phi^-1(s)) a rotation permutes its results, not its input digits, so MAD's fusion of
/// the automorphism into the inner product has no place (and no code) here. Process-wide, for measuring
/// the technique on and off.
void set_limb_fusion(bool on);
bool limb_fusion();

/// KSKInnerProd: u = sum_j digits[j] * key.b[j], v = sum_j digits[j] * key.a[j] over Q_l U P.
void ksk_inner_product(const std::vector<Poly>& digits, const SwitchingKey& key, Poly& u, Poly& v);

/// Divides x (any form) by the product of its P primes (when basis QP) and of its top `drop_q` Q primes,
/// rounding, and returns the result over the remaining Q primes in x's form. ModDown is
/// divide_by_dropped(x, 0); ModDown merged with Rescale is divide_by_dropped(x, 1); Rescale of a
/// basis-Q polynomial is divide_by_dropped(x, 1) too.
Poly divide_by_dropped(const Poly& x, std::size_t drop_q);
/// ModDown: x over Q_l U P divided by P (rounded), over Q_l.
inline Poly mod_down_poly(const Poly& x) { return divide_by_dropped(x, 0); }
/// Rescale of x over Q_l, or ModDown merged with Rescale of x over Q_l U P: divided by q_l (and P), rounded,
/// over Q_{l-1}.
inline Poly rescale_poly(const Poly& x) { return divide_by_dropped(x, 1); }

/// P * x over Q_l U P for x over Q_l (MAD Algo 5, PModUp): multiply by P mod q_i, zero on the P limbs.
Poly p_mod_up(const Poly& x);
/// acc += PModUp(x) for acc over Q_l U P and x over Q_l: only the Q limbs change.
void add_p_mod_up(Poly& acc, const Poly& x);

}  // namespace ember
