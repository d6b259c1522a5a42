// Poly: an element of R_Q or R_{QP} in RNS form, limbs x N words. Limbs 0 .. q_limbs-1 are the first
// q_limbs primes of Q; when the basis is QP the K special primes follow. The form (coefficient or
// evaluation) and the basis are part of the value and every operation checks them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ring/ring_context.hpp"

namespace ember {

enum class Form : std::uint8_t { Coeff = 0, Eval = 1 };
enum class Basis : std::uint8_t { Q = 0, QP = 1 };

class HostLimbs;

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
    /// Limb i in backend memory: an address to hand to kernels, never to read or write here (on the CUDA backend
    /// it is device memory). Code outside the kernels reads and writes limbs through host().
    u64* limb(std::size_t i) { return data_ + i * ring_->n(); }
    const u64* limb(std::size_t i) const { return data_ + i * ring_->n(); }

    /// Host access to limbs [first, first + count): see HostLimbs. fetch = false skips reading the polynomial: the
    /// host words then start as zeros (or as the polynomial's own words where they are host memory), so use it
    /// only on a zero polynomial or to overwrite every word.
    HostLimbs host(std::size_t first = 0, std::size_t count = SIZE_MAX, bool fetch = true);
    /// Read-only host access (nothing is written back).
    HostLimbs host(std::size_t first = 0, std::size_t count = SIZE_MAX) const;

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
    struct Zeroed {
        bool value;
    };
    Poly(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form, bool secret, Zeroed zeroed);
    void release();
    std::shared_ptr<const RingContext> ring_;
    std::size_t q_limbs_ = 0;
    std::size_t capacity_ = 0;  // words allocated
    Basis basis_ = Basis::Q;
    Form form_ = Form::Coeff;
    bool secret_ = false;
    u64* data_ = nullptr;
};

/// Limbs of a polynomial in host memory, for the code outside the kernels (encoding, decoding, sampling, key
/// generation, serialisation). On a backend whose memory the host may address (the CPU backend) these are the
/// polynomial's own words, so writes land at once; otherwise (CUDA, the guarded mode) a host copy, downloaded when
/// made (unless fetch is false) and uploaded by commit(). Call commit() after writing in either case. A copy of a
/// secret polynomial is wiped when it goes. Keep it no longer than the polynomial.
class HostLimbs {
public:
    HostLimbs(const HostLimbs&) = delete;
    HostLimbs& operator=(const HostLimbs&) = delete;
    HostLimbs(HostLimbs&& o) noexcept;
    HostLimbs& operator=(HostLimbs&&) = delete;
    ~HostLimbs();

    std::size_t count() const { return count_; }
    std::size_t n() const { return n_; }
    /// Limb `first + i` of the polynomial, n() words.
    u64* limb(std::size_t i) { return base_ + i * n_; }
    const u64* limb(std::size_t i) const { return base_ + i * n_; }
    /// Writes the host words back to the polynomial (a no-op when they are its own). Not for read-only access.
    void commit();

private:
    friend class Poly;
    HostLimbs(const Poly& p, std::size_t first, std::size_t count, bool fetch, bool writable);
    Backend* backend_ = nullptr;
    u64* device_ = nullptr;  // the polynomial's words (backend memory)
    u64* base_ = nullptr;    // what limb() points into: device_ itself, or staged_
    std::vector<u64> staged_;
    std::size_t count_ = 0, n_ = 0;
    bool writable_ = false, secret_ = false;
};

// Element-wise operations. Operands must have the same shape and form (checked; errors name the operation
// and the mismatch). `out` may alias an operand and is (re)shaped as needed.
void poly_add(Poly& out, const Poly& a, const Poly& b);
void poly_sub(Poly& out, const Poly& a, const Poly& b);
void poly_neg(Poly& out, const Poly& a);
void poly_mul(Poly& out, const Poly& a, const Poly& b);       // evaluation form
void poly_mul_add(Poly& acc, const Poly& a, const Poly& b);   // acc += a * b, evaluation form
/// sum_t a[t] * b[t] as a new polynomial, reduced once (one backend dot). Every operand has the same shape, in
/// evaluation form.
Poly poly_dot(const std::vector<const Poly*>& a, const std::vector<const Poly*>& b);
/// (sum_t a[t] * b0[t], sum_t a[t] * b1[t]) as two new polynomials, each reduced once: one backend dot2, which
/// reads the shared terms a once. Every operand has the same shape, in evaluation form.
std::pair<Poly, Poly> poly_dot2(const std::vector<const Poly*>& a, const std::vector<const Poly*>& b0, const std::vector<const Poly*>& b1);
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
