// Homomorphic operations on CKKS ciphertexts. Written only against ring-layer operations (Poly kernels
// and the key-switching building blocks), so every backend runs it unchanged. The circuits (linear
// transforms, polynomial evaluation, bootstrapping) are written only against these public operations:
// none of them calls the ring's key-switching functions, so graph capture (ckks/op_record.hpp) sees every
// step of a circuit.
//
// Contracts. Levels: an operation consumes no level unless it says so. Every operation throws
// std::invalid_argument ("cannot <op>: <why>") on an empty operand, an operand of another context
// ("ciphertext belongs to another context: log_n 13 vs 12"), operands or keys of different key sets,
// operands packing different slot counts, a missing key, and the bounds it names.
// Rotation direction: rotate(a, k) shifts the slots left by k, slot i of the result is slot i + k of a
// (mod slots), numpy's np.roll(z, -k); negative k shift right.
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
    /// merged_moddown: the default of mul() (MAD's ModDown merged with Rescale, or the unmerged path).
    explicit Evaluator(std::shared_ptr<const Context> ctx, bool merged_moddown = true) : ctx_(std::move(ctx)), merged_(merged_moddown) {}
    const Context& context() const { return *ctx_; }
    /// The ModDown path mul() and mul_sum() take by default (true: merged with the rescale).
    bool merged_moddown() const { return merged_; }

    // Additive operations. Levels are aligned to the lower one exactly (adjust_to); scales must then agree
    // (throws otherwise).
    /// a + b, a - b, -a (no level consumed) a + b, a - b, -a: same level, same scale. add and sub also take two raised
    /// ciphertexts (see rotate_many_raised), never one raised and one not.
    Ciphertext add(const Ciphertext& a, const Ciphertext& b) const;
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b) const;
    Ciphertext negate(const Ciphertext& a) const;
    /// a + p, a - p for a plaintext at a's level, slot count and scale (throws otherwise).
    Ciphertext add_plain(const Ciphertext& a, const Plaintext& p) const;
    Ciphertext sub_plain(const Ciphertext& a, const Plaintext& p) const;
    /// Adds the complex constant c to every slot (no level consumed; a non-real c encodes a vector). Throws
    /// for a non-finite c or one whose product with the scale exceeds Q/2.
    Ciphertext add_const(const Ciphertext& a, cplx c) const;
    /// Adds a vector (encoded at a's scale and level; no level consumed). Throws unless it has a.slots values.
    Ciphertext add_vector(const Ciphertext& a, const std::vector<cplx>& v) const;

    // Multiplicative operations. Naming: mul* rescales (one level, the result on the canonical scale when
    // the operands are), mul_int is exact and consumes no level, multiply_relin / mul_plain / mul_round /
    // mul_plain_sum are the raw products without the rescale (scale multiplied).
    /// (c0, c1) x (d0, d1) -> relinearized, not rescaled: scale a.scale * b.scale, level unchanged.
    Ciphertext multiply_relin(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk) const;
    /// Multiply, relinearize and rescale: level l - 1 (l the lower operand level), scale a.scale * b.scale /
    /// q_l (canonical for canonical operands). merged = true: ModDown merged with Rescale (one division by
    /// P q_l; MAD Section 3.2), false: ModDown then Rescale (the unmerged path); the same result up to
    /// rounding. Throws at level 0 and for a relinearization key of another key set.
    Ciphertext mul(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk, bool merged) const;
    Ciphertext mul(const Ciphertext& a, const Ciphertext& b, const SwitchingKey& rlk) const { return mul(a, b, rlk, merged_); }
    /// sum_i a_i * b_i with one relinearization and one rescale, as `mul` does for a single product: the
    /// tensor products are summed in degree 2 and pay a single key switch (Paterson-Stockmeyer's giant steps that
    /// land on one level, inner products). Every product must come out on the same scale (a_i.scale * b_i.scale
    /// within 2^-40 of the first) at the same level (operands of a pair are brought to a common level as by mul;
    /// pairs on different levels throw). Result: level l - 1, scale (a_0.scale * b_0.scale) / q_l.
    /// addend (optional): a ciphertext at the products' level l and on their scale, added to the sum before the
    /// rescale, so that sum_i a_i b_i + addend costs one rescale (a polynomial's giant steps plus its baby-step
    /// remainder); any other level or scale throws.
    Ciphertext mul_sum(const std::vector<std::pair<const Ciphertext*, const Ciphertext*>>& terms, const SwitchingKey& rlk,
                       bool merged, const Ciphertext* addend = nullptr) const;
    Ciphertext mul_sum(const std::vector<std::pair<const Ciphertext*, const Ciphertext*>>& terms, const SwitchingKey& rlk) const {
        return mul_sum(terms, rlk, merged_);
    }
    /// mul(a, a, rlk).
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
    /// Product by the integer nearest to x (any magnitude, e.g. a constant pre-scaled by 2^100), not
    /// rescaled: the scale is multiplied by round(x).
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
    /// Divides by the top prime q_l, rounding: level l - 1, scale a.scale / q_l. Throws at level 0.
    Ciphertext rescale(const Ciphertext& a) const;
    /// Drops levels without dividing (the scale is unchanged). Throws for a level above a's.
    Ciphertext drop_to_level(const Ciphertext& a, std::size_t level) const;
    /// Brings a to `level` (<= a.level()) on the given scale, exactly: drop, multiply by an integer, rescale.
    Ciphertext adjust_to(const Ciphertext& a, std::size_t level, double scale) const;

    // Key switching and automorphisms. Hybrid key switching (Decomp, ModUp, inner product with the key,
    // ModDown); no level consumed, scale unchanged, the key-switching error added.
    /// (u, v) with u + v s ~= c * s' (c over Q_l in evaluation form; key from s' to s).
    std::pair<Poly, Poly> key_switch(const Poly& c, const SwitchingKey& key) const;
    /// a (decrypting under s') re-encrypted under s with the key from s' to s: (c0 + u, v), (u, v) the
    /// switch of c1. Same level, scale and slots; the key set becomes the key's (that of s).
    Ciphertext key_switch(const Ciphertext& a, const SwitchingKey& key) const;
    /// The same with a BV key (DigitSwitchingKey, no special primes): c1's balanced base-2^digit_bits
    /// digits times the key's parts. a must be over the key's q_limbs() primes (throws otherwise).
    Ciphertext key_switch(const Ciphertext& a, const DigitSwitchingKey& key) const;
    /// (d0, d1, d2) (decrypting as d0 + d1 s + d2 s^2) back to two parts with the relinearization key.
    Ciphertext relinearize(const Poly& d0, const Poly& d1, const Poly& d2, double scale, std::size_t slots, const SwitchingKey& rlk) const;
    /// Slots shifted left by `steps` (np.roll(z, -steps); any sign, taken mod slots; 0: a itself) with the
    /// Galois key of 5^steps. Throws when gk has no key for the rotation.
    Ciphertext rotate(const Ciphertext& a, long steps, const GaloisKeys& gk) const;
    /// Complex conjugate of every slot (Galois element 2N - 1). Throws without the conjugation key.
    Ciphertext conjugate(const Ciphertext& a, const GaloisKeys& gk) const;
    /// Automorphism X -> X^k (k odd, below 2N) with its key (from s to phi_k^-1(s), Context::gen_galois_keys):
    /// no level consumed, scale unchanged.
    Ciphertext automorphism(const Ciphertext& a, std::uint64_t k, const SwitchingKey& key) const;
    /// Hoisted rotations: one Decomp + ModUp of c1 shared by all rotations; result i is rotate(a, steps[i]).
    /// Every key is looked up before any work (a missing one throws first).
    std::vector<Ciphertext> rotate_many(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) const;

    // The raised basis Q_l U P (MAD's hoisting, Bossuat et al.'s double hoisting). A raised ciphertext
    // is what a key switch holds before its ModDown: P times a ciphertext, plus key-switching terms, over
    // Q_l U P (c0.basis() == Basis::QP; level and scale as the ciphertext it stands for). add, sub and
    // mul_plain / mul_plain_sum (by plaintexts encoded over Q_l U P) work on raised ciphertexts as on
    // ordinary ones, so sums of rotated products accumulate there and pay a single ModDown. Every other
    // operation refuses a raised ciphertext.
    /// Hoisted rotations left in the raised basis: one decomposition (Decomp + ModUp of c1) shared by
    /// every step; step s gives P * rotate(a, s) over Q_l U P without its ModDown (step 0: P * a, no key
    /// needed). Keys and errors as rotate_many.
    std::vector<Ciphertext> rotate_many_raised(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) const;
    /// ModDown: a raised ciphertext divided by P, rounded, back over Q_l (scale and level unchanged).
    Ciphertext mod_down(const Ciphertext& raised) const;
    /// ModDown merged with Rescale (MAD Section 3.2): divided by P q_l in one rounding, onto Q_{l-1}; scale
    /// raised.scale / q_l. Throws at level 0.
    Ciphertext mod_down_rescale(const Ciphertext& raised) const;
    /// sum_k xs[k] * ps[k] in one multiply-accumulate pass, not rescaled: scale xs[0].scale * ps[0].scale
    /// (every term must have the same product scale), the level of the operands. Raised or ordinary
    /// ciphertexts (all alike) with plaintexts over the same basis. Throws on an empty list, a size
    /// mismatch or mixed levels, slots, bases or scales.
    Ciphertext mul_plain_sum(const std::vector<const Ciphertext*>& xs, const std::vector<const Plaintext*>& ps) const;

    // Bootstrapping's ModRaise.
    /// a (at level 0) read over Q_level: every coefficient's centered residue mod q0 lifted to the primes
    /// q_1 .. q_level (the plaintext becomes m + q0 I with a small integer polynomial I). Scale and slots
    /// unchanged (the caller declares the scale its circuit reads the result at). Throws unless a is at
    /// level 0 and level <= max_level.
    Ciphertext mod_raise(const Ciphertext& a, std::size_t level) const;

private:
    Ciphertext automorphism_from_digits(const Ciphertext& a, const std::vector<Poly>& digits, std::uint64_t k, const SwitchingKey& key) const;
    Ciphertext raised_automorphism(const Ciphertext& a, const std::vector<Poly>& digits, std::uint64_t k, const SwitchingKey& key) const;
    std::vector<const SwitchingKey*> rotation_keys(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk, const char* op) const;
    const SwitchingKey& galois_key(const Ciphertext& a, const GaloisKeys& gk, std::uint64_t k, const char* op, long steps) const;
    struct Operands;
    Operands common_level(const char* op, const Ciphertext& a, const Ciphertext& b, bool raised_ok = false) const;
    std::shared_ptr<const Context> ctx_;
    bool merged_ = true;
};

}  // namespace ember
