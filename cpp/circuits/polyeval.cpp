#include "circuits/polyeval.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

namespace ember {

double ChebyshevPoly::operator()(double x) const {
    const double y = (2 * x - a - b) / (b - a);
    double b1 = 0, b2 = 0;
    for (std::size_t k = coeffs.size(); k-- > 1;) {
        const double t = 2 * y * b1 - b2 + coeffs[k];
        b2 = b1;
        b1 = t;
    }
    return y * b1 - b2 + (coeffs.empty() ? 0.0 : coeffs[0]);
}

namespace {

std::size_t ceil_log2(std::size_t x) {
    std::size_t r = 0;
    while ((std::size_t(1) << r) < x) ++r;
    return r;
}

bool negligible(double c) { return std::fabs(c) < 1e-30; }

struct ChebBasis {
    const Evaluator& ev;
    const SwitchingKey& rlk;
    std::map<std::size_t, Ciphertext> t;  // T_k(y)

    // T_k from T_a, T_b with a + b = k: T_k = 2 T_a T_b - T_{|a - b|}.
    const Ciphertext& get(std::size_t k) {
        auto it = t.find(k);
        if (it != t.end()) return it->second;
        if (k < 2) throw std::logic_error("Chebyshev basis: T_0 / T_1 missing");
        const std::size_t a = (std::size_t(1) << (ceil_log2(k) - 1)), b = k - a;  // a the largest power of two < k
        Ciphertext prod = ev.mul(get(a), get(b), rlk);
        prod = ev.add(prod, prod);
        Ciphertext r;
        if (a == b) r = ev.add_const(prod, cplx(-1.0, 0.0));
        else r = ev.sub(prod, get(a - b));
        return t.emplace(k, std::move(r)).first->second;
    }
};

// sum_{k < deg} c_k T_k for a baby polynomial (degree below the baby bound).
Ciphertext baby(ChebBasis& B, const std::vector<double>& c) {
    Ciphertext acc;
    bool have = false;
    for (std::size_t k = 1; k < c.size(); ++k) {
        if (negligible(c[k])) continue;
        Ciphertext term = B.ev.mul_const(B.get(k), cplx(c[k], 0));
        acc = have ? B.ev.add(acc, term) : term;
        have = true;
    }
    if (!have) {  // a constant: c_0 T_1 * 0 keeps the level structure simple
        acc = B.ev.mul_const(B.get(1), cplx(0.0, 0.0));
    }
    if (!c.empty() && !negligible(c[0])) acc = B.ev.add_const(acc, cplx(c[0], 0));
    return acc;
}

// p = q T_G + r, recursively; `baby_bound` = 2^l.
Ciphertext recurse(ChebBasis& B, const std::vector<double>& c, std::size_t baby_bound) {
    if (c.size() <= baby_bound) return baby(B, c);
    const std::size_t deg = c.size() - 1;
    const std::size_t G = std::size_t(1) << (ceil_log2(deg + 1) - 1);  // largest power of two <= deg
    std::vector<double> q(deg - G + 1, 0.0), r(G, 0.0);
    for (std::size_t k = 0; k < G; ++k) r[k] = c[k];
    q[0] += c[G];
    for (std::size_t k = G + 1; k <= deg; ++k) {
        q[k - G] += 2 * c[k];
        r[2 * G - k] -= c[k];
    }
    Ciphertext qc = recurse(B, q, baby_bound);
    Ciphertext prod = B.ev.mul(qc, B.get(G), B.rlk);
    return B.ev.add(prod, recurse(B, r, baby_bound));
}

}  // namespace

namespace {
// Levels consumed, following evaluate_chebyshev step by step: T_k costs ceil(log2 k) (T_1 is free), a
// term c_k T_k one more (a non-integer constant is a rescaled product), a product q T_G one more than
// its deeper operand, a sum as much as its deeper operand (the shallower one is brought down exactly).
std::size_t t_depth(std::size_t k) { return k <= 1 ? 0 : ceil_log2(k); }
std::size_t baby_depth(const std::vector<double>& c) {
    std::size_t d = 0;
    for (std::size_t k = 1; k < c.size(); ++k)
        if (!negligible(c[k])) d = std::max(d, t_depth(k) + (std::nearbyint(c[k]) == c[k] ? 0 : 1));
    return d;
}
std::size_t recurse_depth(const std::vector<double>& c, std::size_t baby_bound) {
    if (c.size() <= baby_bound) return baby_depth(c);
    const std::size_t deg = c.size() - 1;
    const std::size_t G = std::size_t(1) << (ceil_log2(deg + 1) - 1);
    std::vector<double> q(deg - G + 1, 0.0), r(G, 0.0);
    for (std::size_t k = 0; k < G; ++k) r[k] = c[k];
    q[0] += c[G];
    for (std::size_t k = G + 1; k <= deg; ++k) { q[k - G] += 2 * c[k]; r[2 * G - k] -= c[k]; }
    return std::max(std::max(recurse_depth(q, baby_bound), t_depth(G)) + 1, recurse_depth(r, baby_bound));
}
std::size_t baby_bound_for(std::size_t degree) { return std::size_t(1) << ((ceil_log2(degree + 1) + 1) / 2); }
}  // namespace

std::size_t chebyshev_depth(const ChebyshevPoly& p) {
    if (p.coeffs.empty()) return 0;
    return recurse_depth(p.coeffs, baby_bound_for(p.degree()));
}

Ciphertext evaluate_chebyshev(const Evaluator& ev, const Ciphertext& x, const ChebyshevPoly& p, const SwitchingKey& rlk) {
    if (p.coeffs.empty()) throw std::invalid_argument("cannot evaluate polynomial: no coefficients");
    if (!(p.b > p.a)) throw std::invalid_argument("cannot evaluate polynomial: interval [a, b] needs a < b");
    for (double c : p.coeffs)
        if (!std::isfinite(c)) throw std::invalid_argument("cannot evaluate polynomial: coefficient is not finite");
    const std::size_t d = p.degree();
    const std::size_t need = chebyshev_depth(p) + ((p.a == -1 && p.b == 1) ? 0 : 1);
    if (x.level() < need)
        throw std::invalid_argument("cannot evaluate polynomial of degree " + std::to_string(d) + ": needs " + std::to_string(need) +
                                    " levels, the ciphertext has " + std::to_string(x.level()));
    ChebBasis B{ev, rlk, {}};
    // y = (2x - a - b) / (b - a)
    Ciphertext y = x;
    if (!(p.a == -1 && p.b == 1)) y = ev.add_const(ev.mul_const(x, cplx(2.0 / (p.b - p.a), 0)), cplx(-(p.a + p.b) / (p.b - p.a), 0));
    B.t.emplace(1, y);
    if (d == 0) return ev.add_const(ev.mul_const(y, cplx(0, 0)), cplx(p.coeffs[0], 0));
    return recurse(B, p.coeffs, baby_bound_for(d));
}

}  // namespace ember
