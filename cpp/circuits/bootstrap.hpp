// CKKS bootstrapping as a circuit over the evaluator's public operations (Cheon-Han-Kim-Kim-Song 2018;
// Chen-Chillotti-Song 2019; Han-Ki 2020; Bossuat-Mouchet-Troncoso-Pastoriza-Hubaux 2021; MAD, Algo 4):
//
//   input (any level, scale Delta)   --drop to level 0, times the integer round(q0 / (2^R Delta))-->
//   level 0 on scale Delta0 ~ q0 / 2^R  --[encapsulation: switch to an ephemeral sparse secret s']-->
//   ModRaise to Q_L: the plaintext becomes t = m + q0 I with |I| small  --[back to s, at level L]-->
//   SubSum (sparse slots: the trace onto the subring of 2n coefficients)  -->
//   CoeffToSlot (the special inverse FFT in `cts_levels` factors; slots <- coefficients t / (K q0))  -->
//   real and imaginary parts (a conjugation)  -->
//   EvalMod: y -> cos(2 pi (K y - 1/4) / 2^r) by a Chebyshev interpolant, then r double angles
//   c -> 2 c^2 - 1, which gives sin(2 pi t / q0) ~= 2 pi m / q0  -->
//   SlotToCoeff (the special FFT in `stc_levels` factors) onto level `levels` on the canonical scale.
//
// Why sine by cosine and double angles: the interval [-K, K] of t / q0 is wide, and a Chebyshev
// interpolant of cos on [-K, K] / 2^r needs a degree ~ 2 pi K / 2^r + 20 for ~50 bits, so r = 3 or 4
// double angles keep the degree near 30 and the depth at ~8. The sine's error (2 pi m / q0)^2 / 6
// (relative) would need a message ratio 2^R of ~2^10, and every error of EvalMod and CoeffToSlot is
// multiplied by 2^R on the way back to the message; the arcsine correction (s + s^3 / 6) / 2 pi (two
// levels) leaves a relative error of 3 (2 pi m / q0)^4 / 40. For n slots uniform in [-1, 1] the
// coefficients are ~2.6 / sqrt(n) at most, so R = 10.5 - log2(n) / 2 keeps that error near 2^-30: R = 3
// for 2^15 slots, 7 bits of precision over R = 10. The coefficient m_0 is the slots' mean: vectors with a large mean
// (all slots near 0.5, say) lose precision at R = 3 (~13 bits at mean 0.5); message_ratio_bits = 8 or
// more suits them.
//
// Sparse-secret encapsulation (Bossuat et al. 2022): ModRaise is done under an ephemeral secret of
// Hamming weight h (32), which keeps |I| <= ~6 sqrt(h / 12) instead of ~6 sqrt(N / 18) for the dense
// ternary secret, so K = 12 suffices. The switch s -> s' is a BV key over q0 alone (digits of
// `encaps_digit_bits` bits), an RLWE instance with a 60-bit modulus; the switch s' -> s is an ordinary
// hybrid key over QP under the dense secret s (the HE-standard bound applies to it as to every key).
//
// Levels, bottom to top: q0, the user's `levels`, SlotToCoeff (stc_levels), EvalMod (its depth),
// CoeffToSlot (cts_levels): CkksParams::boot_bits holds their sizes (bootstrappable_params builds it).
#pragma once

#include <memory>
#include <vector>

#include "circuits/lintrans.hpp"
#include "circuits/polyeval.hpp"

namespace ember {

struct BootstrapConfig {
    std::size_t slots = 0;           // 0: N / 2 (full); otherwise a power of two below N / 2 (sparse)
    std::size_t cts_levels = 3;      // CoeffToSlot factors (MAD's fftIter), 1 .. log2(slots)
    std::size_t stc_levels = 3;      // SlotToCoeff factors
    double k_range = 12;             // EvalMod covers t / q0 in [-K, K]
    std::size_t cheb_degree = 0;     // degree of the cosine interpolant; 0: automatic (resolved): the lowest degree
                                     // of depth 7 whose EvalMod error is within 0.05 bit of degree 127's at
                                     // the chosen R (111 at R = 4, 119 at R = 5 .. 8)
    std::size_t double_angles = 0;   // r (0: the interpolant is sin(2 pi K y) itself, odd)
    int message_ratio_bits = 0;      // R: log2(q0 / Delta0); 0: automatic, the R that minimises the modelled worst-case error
    bool arcsin = true;              // undo the sine by a polynomial for arcsin(s) / (2 pi) (arcsin_poly below)
    std::size_t arcsin_degree = 13;  // its degree (odd, >= 3): ceil(log2(degree + 1)) levels
    double input_bound = 1.4142135623730951;  // B: the precision holds for message coefficients |c| <= B (times
                                              // the scale); slots with |Re|, |Im| <= 1 give |c| <= sqrt(2)
    int ephemeral_weight = 32;       // h of the encapsulation secret; 0: no encapsulation
    int encaps_digit_bits = 4;       // digit size of the BV key s -> s'

    // MAD techniques, each can be switched off (the results agree with the plain paths).
    bool merged_moddown = true;      // products: ModDown merged with the rescale (one division by P q_l)
    bool hoisted_moddown = true;     // linear transforms: double hoisting (one ModDown per giant step,
                                     // plaintexts over QP); off: single hoisting (ModUp shared, plaintexts over Q)
    bool depth_optimal = true;       // polynomial: depth ceil(log2(d + 1)) (more products) or ~sqrt baby steps
    // MAD's key compression is chosen at key generation (Bootstrapper::gen_keys(sk, seeded)); its per-limb
    // caching (Decomp + iNTT of each limb in one pass, in every ModUp) is the ring layer's set_limb_fusion.

    /// This configuration with the automatic fields filled in for a ring of 2^log_n (slots, message ratio).
    BootstrapConfig resolved(int log_n) const;
    /// Levels EvalMod consumes (the Chebyshev interpolant, the double angles and the arcsine correction).
    std::size_t evalmod_depth() const;
    /// The polynomial that follows the sine: arcsin(s) / (2 pi) interpolated at the Chebyshev nodes of
    /// |s| <= s_B = sin(2 pi B / 2^R) (B = input_bound, R = message_ratio_bits, which must be resolved),
    /// in the variable s / s_B. Odd (its even coefficients are exactly 0).
    ChebyshevPoly arcsin_poly() const;
    /// EvalMod's approximation error in message units (times the scale) for coefficients |c| <= B:
    /// max |2^R P(sin(2 pi c / 2^R)) - c|, with the cosine interpolant and double angles in float64.
    double approx_error() const;
    /// Bit sizes of the bootstrapping primes (CkksParams::boot_bits), bottom to top, for `stc_bits` /
    /// 60-bit EvalMod / `cts_bits` primes.
    std::vector<int> boot_bits(int stc_bits, int cts_bits) const;
};

/// Keys bootstrapping needs besides the relinearization key: Galois keys for exactly the rotations of
/// its linear transforms and SubSum plus conjugation, and the two encapsulation keys.
struct BootstrapKeys {
    std::shared_ptr<SwitchingKey> relin;
    std::shared_ptr<GaloisKeys> galois;
    std::shared_ptr<DigitSwitchingKey> to_sparse;  // BV key s -> s' over q0 (Context::gen_digit_switching_key)
    std::shared_ptr<SwitchingKey> from_sparse;     // hybrid key s' -> s over QP (Context::gen_switching_key)
};

/// A parameter set for bootstrapping: the user's `levels` at 2^log_scale above a 60-bit q0, then the
/// bootstrapping levels of `cfg`. dnum = 0 picks the smallest dnum within the 128-bit bound (with
/// insecure: 3, or fewer digits when there are fewer primes). hamming_weight = 0: uniform ternary secret.
CkksParams bootstrappable_params(int log_n, int levels, int log_scale, const BootstrapConfig& cfg, int dnum = 0, int stc_bits = 50,
                                 int cts_bits = 56, bool insecure = false, int hamming_weight = 0, int special_bits = 52,
                                 int first_mod_bits = 60);

class Bootstrapper {
public:
    /// Precomputes the transforms and the polynomial; the context must have been made with
    /// cfg.boot_bits(...) on top of its levels (checked).
    Bootstrapper(std::shared_ptr<const Context> ctx, BootstrapConfig cfg);

    const BootstrapConfig& config() const { return cfg_; }
    std::size_t slots() const { return n_; }
    /// The rotations (slot shifts) whose Galois keys bootstrapping needs, conjugation aside.
    std::vector<long> rotations() const;
    BootstrapKeys gen_keys(const SecretKey& sk, bool seeded = true) const;
    /// Only the encapsulation keys (the relinearization and Galois keys made elsewhere, e.g. by
    /// Context::keygen with rotations() and conjugation).
    void gen_encapsulation_keys(const SecretKey& sk, BootstrapKeys& keys, bool seeded = true) const;

    /// Refreshes ct (any level, cfg.slots slots) to level `levels` on the canonical scale.
    Ciphertext bootstrap(const Ciphertext& ct, const BootstrapKeys& keys) const;
    /// Iterative bootstrapping (Bae, Cheon, Cho, Kim, Kim, "META-BTS", 2022): y1 = bootstrap(ct); the
    /// residual r = ct - y1 (at ct's level and scale), scaled up by 2^residual_bits, is bootstrapped again;
    /// the result is y1 + y2 / 2^residual_bits at level `levels` on the scale 2^residual_bits times the
    /// canonical one (the division is that change of scale and y1 is multiplied by the integer
    /// 2^residual_bits, so the sum adds no rounding). Twice the time of bootstrap(), no extra level; the
    /// precision is then limited by ct's own rounding error at its scale, no longer by EvalMod.
    /// residual_bits must keep 2^residual_bits |ct - y1| within input_bound: 0 picks 20 (one pass gives
    /// >= 25 bits on its bounded inputs).
    Ciphertext bootstrap_iterative(const Ciphertext& ct, const BootstrapKeys& keys, int residual_bits = 0) const;

    // The stages, public for tests.
    /// Level 0, message ratio applied, encapsulated, raised to Q_L: plaintext t = Delta0 m + q0 I; the
    /// returned scale is declared K q0 gap (so that the coefficient values are t / (K q0) after SubSum).
    Ciphertext mod_raise(const Ciphertext& ct, const BootstrapKeys& keys, double& delta0) const;
    Ciphertext sub_sum(const Ciphertext& ct, const GaloisKeys& gk) const;
    /// CoeffToSlot and the split into real and imaginary parts: one ciphertext (sparse: [Re, Im] in 2n
    /// slots) or two (full slots).
    std::vector<Ciphertext> coeff_to_slot(const Ciphertext& ct, const GaloisKeys& gk) const;
    /// sin(2 pi K y) of every slot, landing on `target_scale` at level levels + stc_levels.
    Ciphertext eval_mod(const Ciphertext& ct, const SwitchingKey& rlk, double target_scale) const;
    Ciphertext slot_to_coeff(const std::vector<Ciphertext>& parts, const GaloisKeys& gk) const;

    double stc_input_scale() const { return stc_in_; }
    const ChebyshevPoly& evalmod_poly() const { return poly_; }
    const ChebyshevPoly& arcsin_poly() const { return asin_; }

private:
    Ciphertext apply(const LinearTransform& lt, const Ciphertext& ct, const GaloisKeys& gk) const;
    Ciphertext times_i(const Ciphertext& ct, bool negative) const;
    Plaintext monomial_i(std::size_t level, bool negative) const;

    std::shared_ptr<const Context> ctx_;
    Evaluator ev_;
    BootstrapConfig cfg_;
    std::size_t n_, gap_;
    bool sparse_;
    std::size_t top_, evalmod_in_, stc_top_, out_level_;
    double cts_in_, evalmod_in_scale_, stc_in_;
    ChebyshevPoly poly_, asin_;
    std::vector<LinearTransform> cts_, stc_;
    Plaintext minus_i_, plus_i_;  // -i and +i as X^(N/2) at the levels of their uses (full slots)
};

}  // namespace ember
