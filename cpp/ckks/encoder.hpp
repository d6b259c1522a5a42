// Canonical-embedding encoder of CKKS (Cheon-Kim-Kim-Song 2017; HEAAN's special FFT).
//
// n slots (a power of two, 1 <= n <= N/2) live in the subring Z[Y]/(Y^(2n) + 1), Y = X^(N/2n): slot j is
// m(zeta^(5^j)) for zeta = exp(i pi / N), so X -> X^5 rotates the slots left by one and X -> X^(2N-1)
// conjugates them. The coefficient at X^(k N/2n) is Re(w_k) for k < n and Im(w_{k-n}) for k >= n, where
// w is the special inverse FFT of the slot values.
#pragma once

#include <complex>
#include <span>
#include <vector>

#include "math/rns.hpp"
#include "ring/poly.hpp"

namespace ember {

using cplx = std::complex<double>;

class Encoder {
public:
    explicit Encoder(std::size_t n);
    std::size_t n() const { return n_; }

    /// Special FFT (coefficients -> slots) and its inverse, in place on `slots` values.
    void fft_special(std::vector<cplx>& vals) const;
    void fft_special_inv(std::vector<cplx>& vals) const;

    /// round(scale * embedding^-1(z)) as a polynomial over the first q_limbs primes, evaluation form.
    /// z.size() is the slot count (power of two <= N/2).
    /// basis QP: also over the special primes (plaintexts applied in the raised basis, e.g. the
    /// baby-step products of a double-hoisted linear transform).
    Poly encode(const std::shared_ptr<const RingContext>& ring, std::span<const cplx> z, double scale, std::size_t q_limbs,
                Basis basis = Basis::Q) const;
    /// The integer constant round(scale * c) on every slot: a constant polynomial (c real).
    /// Inverse of encode for a polynomial in coefficient or evaluation form.
    std::vector<cplx> decode(const Poly& p, double scale, std::size_t slots) const;

    /// Residue of an integral double (|x| may exceed 2^63) modulo q.
    static u64 residue_of(double x, const Modulus& q);

private:
    std::size_t n_;
    std::vector<cplx> ksi_;              // exp(2 pi i k / 2N), k in [0, 2N]
    std::vector<std::size_t> rot_group_;  // 5^j mod 2N, j < N/2
};

}  // namespace ember
