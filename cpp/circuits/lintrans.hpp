// Plaintext matrix x ciphertext by diagonals, baby-step giant-step (Halevi-Shoup; Bossuat et al. 2021).
//
// M x = sum_k diag_k (.) rot_k(x) with diag_k[i] = M[i][(i + k) mod n]. With k = n1 j + i (k signed in
// (-n/2, n/2], i in [0, n1)):
//     M x = sum_j rot_{n1 j}( sum_i rot_{-n1 j}(diag_{n1 j + i}) (.) rot_i(x) ),
// the giant steps of each sign chained by Horner's rule, so a transform needs the keys of its baby steps
// and of +-n1 only (bootstrapping at N = 2^16: 25 rotation keys instead of 38).
// apply() with hoisted_moddown (the default) is double-hoisted (MAD Section 3.2): the baby-step rotations
// share one decomposition and stay in the raised basis QP (Evaluator::rotate_many_raised), multiplied by
// plaintexts encoded over QP and summed there (Evaluator::mul_plain_sum), so each giant step costs one
// ModDown instead of one per rotation (ModDown hoisting); the giant-step rotations accumulate in QP as
// well, and the final ModDown is merged with the rescale (Evaluator::mod_down_rescale). Without it,
// single hoisting (Evaluator::rotate_many, products and sums over Q). apply_reference() is the unhoisted
// reference path (rotate, multiply, add, rescale), which the tests compare against. Every step is a
// public Evaluator operation of the caller's evaluator.
#pragma once

#include <map>
#include <vector>

#include "ckks/evaluator.hpp"

namespace ember {

class LinearTransform {
public:
    /// diagonals: index k (any integer, taken mod slots) -> the n = slots values of diag_k. The transform
    /// applies to ciphertexts of `slots` slots at `level` on scale `in_scale`; the result is at level - 1
    /// exactly on `out_scale` (0: the context's canonical scales of those levels). n1 = 0 picks the
    /// baby-step count. hoisted_moddown: plaintexts encoded over Q U P for apply()'s double hoisting;
    /// otherwise over Q only (a sixth less memory at N = 2^16 with 6 special primes) and apply() hoists
    /// only the ModUp.
    LinearTransform(std::shared_ptr<const Context> ctx, const std::map<long, std::vector<cplx>>& diagonals, std::size_t slots,
                    std::size_t level, std::size_t n1 = 0, double in_scale = 0, double out_scale = 0, bool hoisted_moddown = true);

    /// The rotations whose Galois keys apply() and apply_reference() need.
    std::vector<long> rotations() const;
    std::size_t baby_steps() const { return n1_; }
    std::size_t level() const { return level_; }
    std::size_t slots() const { return slots_; }
    double in_scale() const { return in_scale_; }
    double out_scale() const { return out_scale_; }

    /// M ct with the caller's evaluator: double hoisting when hoisted_moddown, else single hoisting (the
    /// baby steps share one ModUp, each is brought down, products and sums over Q, a full rotation per
    /// giant step). Consumes one level; the result is exactly on out_scale(). Throws for a ciphertext of
    /// another level, slot count or scale, or a missing rotation key.
    Ciphertext apply(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const;
    /// The same with an evaluator of the transform's context (default options).
    Ciphertext apply(const Ciphertext& ct, const GaloisKeys& gk) const { return apply(Evaluator(ctx_), ct, gk); }
    bool hoisted_moddown() const { return hoisted_moddown_; }
    /// The unhoisted reference path: every baby step rotated on its own, products, sums, rescale.
    Ciphertext apply_reference(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const;
    Ciphertext apply_reference(const Ciphertext& ct, const GaloisKeys& gk) const { return apply_reference(Evaluator(ctx_), ct, gk); }

private:
    void check_input(const Evaluator& ev, const Ciphertext& ct) const;
    std::vector<long> baby_step_list() const;

    std::shared_ptr<const Context> ctx_;
    std::size_t slots_, level_, n1_;
    double in_scale_, out_scale_, pt_scale_;
    bool hoisted_moddown_;
    Ciphertext apply_single(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const;
    Ciphertext apply_double(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const;
    static Plaintext q_part(const Plaintext& p);
    Ciphertext finish(const Evaluator& ev, std::map<long, Ciphertext>& inner, const GaloisKeys& gk) const;
    // giant step j -> baby step i -> rot_{-n1 j}(diag_{n1 j + i}) encoded over Q_level (U P when hoisted_moddown),
    // evaluation form
    std::map<long, std::map<std::size_t, Plaintext>> pts_;
};

}  // namespace ember
