// Homomorphic operations on CKKS ciphertexts. Written only against ring-layer operations (Poly kernels
// and the key-switching building blocks), so every backend runs it unchanged.
//
// Scale management: fresh ciphertexts carry the context's canonical scale of their level
// (Context::scale_at). mul() rescales after relinearizing, and multiplication by a non-integer constant
// encodes the constant at the scale that makes the rescaled result land exactly on the canonical scale
// of the next level; add() brings two operands at different levels to the lower one the same way. So
// expressions like (x * x + 0.5 * x).rotate(1) need no manual scale or level bookkeeping.
#pragma once

#include <complex>
#include <vector>

#include "ckks/context.hpp"

namespace ember {

class Evaluator {
public:
    /// merged_moddown: the default of mul() (MAD's ModDown merged with Rescale, or the plain path).
    explicit Evaluator(std::shared_ptr<const Context> ctx, bool merged_moddown = true) : ctx_(std::move(ctx)), merged_(merged_moddown) {}
    const Context& context() const { return *ctx_; }

    // Additive operations. Levels are aligned to the lower one; scales must then agree.
    Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;
    Ciphertext negate(const Ciphertext& a) const;
    Ciphertext add_plain(const Ciphertext& a, const Plaintext& p) const;
    Ciphertext sub_plain(const Ciphertext& a, const Plaintext& p) const;
    /// Adds the complex constant c to every slot.
    Ciphertext add_const(const Ciphertext& a, cplx c) const;
    /// Adds a vector (encoded at a's scale and level).
    Ciphertext add_vector(const Ciphertext& a, const std::vector<cplx>& v) const;

    // Multiplicative operations.
    /// (c0, c1) x (d0, d1) -> relinearized, not rescaled: scale a.scale * b.scale.
    Ciphertext multiply_relin(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk) const;
    /// Multiply, relinearize and rescale. merged = true: ModDown merged with Rescale (one division by
    /// P q_l; MAD Section 3.2), false: ModDown then Rescale (the plain path).
    Ciphertext mul(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk, bool merged) const;
    Ciphertext mul(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk) const { return mul(a, b, rlk, merged_); }
    Ciphertext square(const Ciphertext& a, const SwitchingKey& rlk) const { return mul(a, a, rlk); }
    /// Plaintext product, rescaled like every mul: level a.level() - 1, scale a.scale * p.scale / q_l
    /// (canonical when both are). Throws at level 0 and on a plaintext of another level or slot count.
    Ciphertext mul(const Ciphertext& a, const Plaintext& p) const;
    /// Plaintext product, not rescaled: same level, scale a.scale * p.scale (for circuits that sum
    /// several products before one rescale).
    Ciphertext mul_plain(const Ciphertext& a, const Plaintext& p) const;
    /// Product by a vector, rescaled (the vector is encoded so that the result lands on the canonical scale:
    /// on a.scale * scale_at(l - 1) / scale_at(l), which is canonical when a's scale is).
    Ciphertext mul_vector(const Ciphertext& a, const std::vector<cplx>& v) const;
    /// The same, landing exactly on `target_scale` at level a.level() - 1.
    Ciphertext mul_vector(const Ciphertext& a, const std::vector<cplx>& v, double target_scale) const;
    /// Product by an integer: exact, no level consumed.
    Ciphertext mul_int(const Ciphertext& a, std::int64_t k) const;
    /// Product by the integer nearest to x (any magnitude, e.g. a constant pre-scaled by 2^100), no
    /// rescale: the scale is multiplied by round(x).
    Ciphertext mul_round(const Ciphertext& a, double x) const;
    /// sum_k round(k_k) x_k on the first level + 1 primes of every x_k (each at a level >= `level`; no level
    /// dropped by copying, one multiply-accumulate pass per operand), declared at `scale`: the caller
    /// chooses the integers so that every term round(k_k) x_k.scale equals it. Not rescaled; consumes no level.
    /// Throws on an empty list, a size mismatch, an operand below `level` or a non-finite constant.
    Ciphertext linear_combination(const std::vector<const Ciphertext*>& xs, const std::vector<double>& ks, std::size_t level, double scale) const;
    /// Product by a constant: integers exactly without a level, other values rescaled onto the canonical scale.
    Ciphertext mul_const(const Ciphertext& a, cplx c) const;
    /// Product by a constant, rescaled, landing exactly on `target_scale` at level a.level() - 1.
    Ciphertext mul_const(const Ciphertext& a, cplx c, double target_scale) const;
    /// The scale mul_const / mul_vector land on by default: a.scale * scale_at(l - 1) / scale_at(l).
    double product_target(const Ciphertext& a) const;

    // Levels and scales.
    Ciphertext rescale(const Ciphertext& a) const;
    /// Drops levels without dividing (the scale is unchanged).
    Ciphertext drop_to_level(const Ciphertext& a, std::size_t level) const;
    /// Brings a to `level` (<= a.level()) on the given scale, exactly: drop, multiply by an integer, rescale.
    Ciphertext adjust_to(const Ciphertext& a, std::size_t level, double scale) const;

    // Key switching and automorphisms.
    /// (u, v) with u + v s ~= c * s' (c over Q_l in evaluation form; key from s' to s).
    std::pair<Poly, Poly> key_switch(const Poly& c, const SwitchingKey& key) const;
    Ciphertext relinearize(const Poly& d0, const Poly& d1, const Poly& d2, double scale, std::size_t slots, const SwitchingKey& rlk) const;
    Ciphertext rotate(const Ciphertext& a, long steps, const GaloisKeys& gk) const;
    Ciphertext conjugate(const Ciphertext& a, const GaloisKeys& gk) const;
    /// Automorphism X -> X^k with its key.
    Ciphertext automorphism(const Ciphertext& a, std::uint64_t k, const SwitchingKey& key) const;
    /// Hoisted rotations: one Decomp + ModUp of c1 shared by all rotations.
    std::vector<Ciphertext> rotate_many(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) const;

private:
    Ciphertext automorphism_from_digits(const Ciphertext& a, const std::vector<Poly>& digits, std::uint64_t k, const SwitchingKey& key) const;
    const SwitchingKey& galois_key(const Ciphertext& a, const GaloisKeys& gk, std::uint64_t k, const char* op, long steps) const;
    struct Operands;
    Operands common_level(const char* op, const Ciphertext& a, const Ciphertext& b) const;
    std::shared_ptr<const Context> ctx_;
    bool merged_ = true;
};

}  // namespace ember
