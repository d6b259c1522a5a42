// Plaintext matrix x ciphertext by diagonals, baby-step giant-step (Halevi-Shoup; Bossuat et al. 2021).
//
// M x = sum_k diag_k (.) rot_k(x) with diag_k[i] = M[i][(i + k) mod n]. With k = n1 j + i (k signed in
// (-n/2, n/2], i in [0, n1)):
//     M x = sum_j rot_{n1 j}( sum_i rot_{-n1 j}(diag_{n1 j + i}) (.) rot_i(x) ),
// the giant steps of each sign chained by Horner's rule, so a transform needs the keys of its baby steps
// and of +-n1 only (bootstrapping at N = 2^16: 25 rotation keys instead of 38).
// apply() is double-hoisted (MAD Section 3.2): the baby-step rotations share one Decomp + ModUp and stay
// in the raised basis QP, multiplied by plaintexts encoded over QP and summed there, so each giant step
// costs one ModDown instead of one per rotation (ModDown hoisting); the giant-step rotations accumulate
// in QP as well, and the final ModDown is merged with the rescale. apply_plain() is the reference path
// (rotate, multiply, add, rescale), which the tests compare against.
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
    /// baby-step count. raised: plaintexts encoded over Q U P for apply()'s double hoisting; otherwise over
    /// Q only (a sixth less memory at N = 2^16 with 6 special primes) and apply() hoists only the ModUp.
    LinearTransform(std::shared_ptr<const Context> ctx, const std::map<long, std::vector<cplx>>& diagonals, std::size_t slots,
                    std::size_t level, std::size_t n1 = 0, double in_scale = 0, double out_scale = 0, bool raised = true);

    /// The rotations whose Galois keys apply() and apply_plain() need.
    std::vector<long> rotations() const;
    std::size_t baby_steps() const { return n1_; }
    std::size_t level() const { return level_; }
    std::size_t slots() const { return slots_; }
    double in_scale() const { return in_scale_; }
    double out_scale() const { return out_scale_; }

    /// Double hoisting when the plaintexts are raised, else single hoisting (the baby steps share one
    /// ModUp, each is brought down, products and sums over Q, a full rotation per giant step).
    Ciphertext apply(const Ciphertext& ct, const GaloisKeys& gk) const;
    bool raised() const { return raised_; }
    Ciphertext apply_plain(const Ciphertext& ct, const GaloisKeys& gk) const;

private:
    void check_input(const Ciphertext& ct) const;

    std::shared_ptr<const Context> ctx_;
    std::size_t slots_, level_, n1_;
    double in_scale_, out_scale_, pt_scale_;
    bool raised_;
    Ciphertext apply_single(const Ciphertext& ct, const GaloisKeys& gk) const;
    static Plaintext q_part(const Plaintext& p);
    Ciphertext finish(const Evaluator& ev, std::map<long, Ciphertext>& inner, const GaloisKeys& gk) const;
    // giant step j -> baby step i -> rot_{-n1 j}(diag_{n1 j + i}) encoded over Q_level (U P when raised),
    // evaluation form
    std::map<long, std::map<std::size_t, Plaintext>> pts_;
};

}  // namespace ember
