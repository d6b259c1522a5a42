// Polynomial evaluation in the Chebyshev basis, baby-step giant-step (Paterson-Stockmeyer style, as in
// Bossuat et al. 2021 and Lattigo's polynomial evaluator).
//
// p(x) = sum_k c_k T_k(y), y = (2x - a - b) / (b - a) for x in [a, b]. With G = 2^g a giant power,
// T_{G+m} = 2 T_m T_G - T_{G-m} splits p = q T_G + r (deg r < G), recursively down to baby polynomials
// of degree < 2^l, which are linear combinations of T_0 .. T_{2^l - 1}. The evaluation is driven by its
// target (level, scale), as in Lattigo: each giant-step product q T_G asks q for the scale that makes the
// rescaled product land exactly on the target, and each baby polynomial multiplies its T_k by integer
// constants and rescales once, so the result is exactly on the requested scale whatever the primes.
#pragma once

#include <vector>

#include "ckks/evaluator.hpp"

namespace ember {

struct ChebyshevPoly {
    std::vector<double> coeffs;  // c_0 .. c_d
    double a = -1, b = 1;        // the interval
    std::size_t degree() const { return coeffs.empty() ? 0 : coeffs.size() - 1; }
    /// Chebyshev interpolant of f at the d + 1 Chebyshev nodes of [a, b].
    template <class F>
    static ChebyshevPoly interpolate(F&& f, std::size_t degree, double a, double b);
    /// Evaluation in the clear (Clenshaw), the reference for tests.
    double operator()(double x) const;
};

/// Levels evaluate_chebyshev consumes for this polynomial, not counting the affine map (one more level
/// unless [a, b] = [-1, 1]). depth_optimal: ceil(log2(d + 1)), with the baby-step bound that needs the
/// fewest products at that depth; otherwise baby steps of ~sqrt(d), often one level more.
std::size_t chebyshev_depth(const ChebyshevPoly& p, bool depth_optimal = true);

/// p(x), landing exactly on `target_scale` (0: x's ratio to the canonical scale is kept, so a canonical
/// input gives a canonical output) at level x.level() - chebyshev_depth(p) (- 1 for the affine map).
Ciphertext evaluate_chebyshev(const Evaluator& ev, const Ciphertext& x, const ChebyshevPoly& p, const SwitchingKey& rlk,
                              double target_scale = 0, bool depth_optimal = true);

// ---------------------------------------------------------------------------------------------------
template <class F>
ChebyshevPoly ChebyshevPoly::interpolate(F&& f, std::size_t degree, double a, double b) {
    const std::size_t n = degree + 1;
    std::vector<double> fx(n);
    const double pi = 3.14159265358979323846;
    for (std::size_t j = 0; j < n; ++j) {
        const double t = std::cos(pi * (static_cast<double>(j) + 0.5) / static_cast<double>(n));
        fx[j] = f(0.5 * (b - a) * t + 0.5 * (a + b));
    }
    ChebyshevPoly p;
    p.a = a;
    p.b = b;
    p.coeffs.assign(n, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
        double s = 0;
        for (std::size_t j = 0; j < n; ++j) s += fx[j] * std::cos(pi * static_cast<double>(k) * (static_cast<double>(j) + 0.5) / static_cast<double>(n));
        p.coeffs[k] = (k == 0 ? 1.0 : 2.0) * s / static_cast<double>(n);
    }
    return p;
}

}  // namespace ember
