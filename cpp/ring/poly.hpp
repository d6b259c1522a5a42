// Poly: an element of R_Q or R_{QP} in RNS form, limbs x N words. Limbs 0 .. q_limbs-1 are the first
// q_limbs primes of Q; when the basis is QP the K special primes follow. The form (coefficient or
// evaluation) and the basis are part of the value and every operation checks them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ring/ring_context.hpp"

namespace ember {

enum class Form : std::uint8_t { Coeff = 0, Eval = 1 };
enum class Basis : std::uint8_t { Q = 0, QP = 1 };

class Poly {
public:
    Poly() = default;
    /// Zero polynomial with q_limbs primes of Q (and the P primes when basis is QP).
    Poly(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form, bool secret = false);
    /// Same shape, contents unspecified (for outputs that a kernel overwrites entirely).
    static Poly uninitialized(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form);
    ~Poly();
    Poly(const Poly& o);
    Poly& operator=(const Poly& o);
    Poly(Poly&& o) noexcept;
    Poly& operator=(Poly&& o) noexcept;

    const RingContext& ring() const { return *ring_; }
    const std::shared_ptr<const RingContext>& ring_ptr() const { return ring_; }
    bool empty() const { return !ring_; }
    std::size_t n() const { return ring_->n(); }
    std::size_t q_limbs() const { return q_limbs_; }
    std::size_t p_limbs() const { return basis_ == Basis::QP ? ring_->p_count() : 0; }
    std::size_t limbs() const { return q_limbs_ + p_limbs(); }
    std::size_t level() const { return q_limbs_ - 1; }
    Basis basis() const { return basis_; }
    Form form() const { return form_; }
    void set_form(Form f) { form_ = f; }
    bool secret() const { return secret_; }

    /// Prime index (in the ring's index space) of limb i.
    std::uint32_t prime_index(std::size_t i) const {
        return static_cast<std::uint32_t>(i < q_limbs_ ? i : ring_->q_count() + (i - q_limbs_));
    }
    const NttTables& table(std::size_t i) const { return ring_->table(prime_index(i)); }
    u64* limb(std::size_t i) { return data_ + i * ring_->n(); }
    const u64* limb(std::size_t i) const { return data_ + i * ring_->n(); }

    /// Limb views for backend kernels; [first, first + count) of this polynomial's limbs.
    std::vector<LimbRef> refs(std::size_t first = 0, std::size_t count = SIZE_MAX);
    std::vector<const u64*> crefs(std::size_t first = 0, std::size_t count = SIZE_MAX) const;

    /// Drops the top Q limbs down to `q_limbs` (basis Q only; the memory is kept).
    void drop_to(std::size_t q_limbs);
    /// Same ring, same basis and number of limbs: compatible for element-wise operations.
    bool same_shape(const Poly& o) const {
        return ring_ == o.ring_ && q_limbs_ == o.q_limbs_ && basis_ == o.basis_;
    }
    std::string describe() const;

private:
    struct NoInit {};
    Poly(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form, bool secret, NoInit);
    void release();
    std::shared_ptr<const RingContext> ring_;
    std::size_t q_limbs_ = 0;
    std::size_t capacity_ = 0;  // words allocated
    Basis basis_ = Basis::Q;
    Form form_ = Form::Coeff;
    bool secret_ = false;
    u64* data_ = nullptr;
};

// Element-wise operations. Operands must have the same shape and form (checked; errors name the operation
// and the mismatch). `out` may alias an operand and is (re)shaped as needed.
void poly_add(Poly& out, const Poly& a, const Poly& b);
void poly_sub(Poly& out, const Poly& a, const Poly& b);
void poly_neg(Poly& out, const Poly& a);
void poly_mul(Poly& out, const Poly& a, const Poly& b);       // evaluation form
void poly_mul_add(Poly& acc, const Poly& a, const Poly& b);   // acc += a * b, evaluation form
/// out = a * c for an integer constant c given by its residues per limb (c_res.size() == limbs()).
void poly_mul_const(Poly& out, const Poly& a, const std::vector<u64>& c_res);
void poly_to_eval(Poly& a);
void poly_to_coeff(Poly& a);
/// out = a(X^k), evaluation form.
void poly_automorph(Poly& out, const Poly& a, std::uint64_t k);
/// The first q_limbs Q limbs of p (and its P limbs when p is over QP), as a new polynomial.
Poly restrict_to(const Poly& p, std::size_t q_limbs);
/// Residues of a signed 64-bit integer for every limb of p.
std::vector<u64> residues_of(const Poly& p, std::int64_t v);

}  // namespace ember
