#include "circuits/polyeval.hpp"

#include "util/errors.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
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

// Levels below the input at which T_k lives: T_1 = y is free, T_k = 2 T_a T_b - T_{a-b} one more than T_a.
std::size_t t_depth(std::size_t k) { return k <= 1 ? 0 : ceil_log2(k); }

// p = q T_G + r with G the largest power of two <= deg p (T_{G+m} = 2 T_m T_G - T_{G-m}).
struct Split {
    std::size_t G;
    std::vector<double> q, r;
};
Split split(const std::vector<double>& c) {
    const std::size_t deg = c.size() - 1;
    Split s;
    s.G = std::size_t(1) << (ceil_log2(deg + 1) - 1);
    s.q.assign(deg - s.G + 1, 0.0);
    s.r.assign(s.G, 0.0);
    for (std::size_t k = 0; k < s.G; ++k) s.r[k] = c[k];
    s.q[0] += c[s.G];
    for (std::size_t k = s.G + 1; k <= deg; ++k) {
        s.q[k - s.G] += 2 * c[k];
        s.r[2 * s.G - k] -= c[k];
    }
    return s;
}

// Deepest level offset (levels below the input) at which the recursion can land, following the
// evaluation step by step: a baby polynomial sum_k c_k T_k multiplies every T_k by a constant and
// rescales once (one level below its deepest T_k); a giant step q T_G lands one level below both T_G and
// q's own landing level; p = q T_G + r lands at the deeper of the two.
std::size_t land_depth(const std::vector<double>& c, std::size_t baby_bound) {
    if (c.size() <= baby_bound) {
        std::size_t d = 0;
        for (std::size_t k = 1; k < c.size(); ++k)
            if (!negligible(c[k])) d = std::max(d, t_depth(k));
        return d + 1;
    }
    const Split s = split(c);
    return std::max(std::max(land_depth(s.q, baby_bound), t_depth(s.G)) + 1, land_depth(s.r, baby_bound));
}

// Baby-step bound: the largest power of two up to ~sqrt(degree) whose evaluation is as shallow as the
// shallowest one (bound 2, pure giant steps, lands ceil(log2(d + 1)) levels down): fewest products at
// the smallest depth. A leaf c_k T_k with 2^(j-1) < k < 2^j costs j + 1 levels, so larger bounds are
// often one level deeper; depth_optimal = false takes ~sqrt(degree) regardless (fewer products).
std::size_t baby_bound_for(const std::vector<double>& c, bool depth_optimal) {
    const std::size_t degree = c.size() - 1;
    const std::size_t sqrt_bound = std::size_t(1) << ((ceil_log2(degree + 1) + 1) / 2);
    if (!depth_optimal || degree < 2) return std::max<std::size_t>(2, sqrt_bound);
    const std::size_t best = land_depth(c, 2);
    std::size_t bound = 2;
    for (std::size_t b = 4; b <= sqrt_bound; b <<= 1)
        if (land_depth(c, b) == best) bound = b;
    return bound;
}

struct ChebBasis {
    const Evaluator& ev;
    const SwitchingKey& rlk;
    std::map<std::size_t, Ciphertext> t;  // T_k(y)

    // T_k from T_a, T_b with a + b = k (a the largest power of two < k): T_{2a} = 2 T_a^2 - 1, and otherwise
    // T_k = 2 T_a T_b - T_{a-b} as one Evaluator::mul_sum of (2 T_a) T_b whose addend is -T_{a-b} times the
    // integer that puts it on the product's scale before the rescale (Evaluator::linear_combination): no level
    // alignment of T_{a-b} (a rescale) and no subtraction after the product. T_b and T_{a-b} are never below
    // T_a (depth ceil(log2 k) below the input); mul_sum brings a higher T_b onto T_a's level and scale.
    const Ciphertext& get(std::size_t k) {
        auto it = t.find(k);
        if (it != t.end()) return it->second;
        if (k < 2) throw std::logic_error("Chebyshev basis: T_0 / T_1 missing");
        const std::size_t a = (std::size_t(1) << (ceil_log2(k) - 1)), b = k - a;
        if (a == b) {
            Ciphertext r = ev.add_const(ev.mul_int(ev.mul(get(a), get(a), rlk), 2), cplx(-1.0, 0.0));
            return t.emplace(k, std::move(r)).first->second;
        }
        const Ciphertext& ta = get(a);
        const Ciphertext& tb = get(b);
        const Ciphertext& td = get(a - b);
        const double product_scale = ta.scale * (tb.level() == ta.level() ? tb.scale : ta.scale);
        const Ciphertext two_ta = ev.mul_int(ta, 2);
        const Ciphertext minus_td = ev.linear_combination({&td}, {-product_scale / td.scale}, ta.level(), product_scale);
        Ciphertext r = ev.mul_sum({{&two_ta, &tb}}, rlk, ev.merged_moddown(), &minus_td);
        return t.emplace(k, std::move(r)).first->second;
    }
};

// sum_k c_k T_k before its rescale: every T_k is dropped to level + 1 and multiplied by the integer
// round(c_k * scale * q_{level+1} / scale(T_k)), so all terms share the scale scale * q_{level+1}; one rescale
// then lands exactly on (level, scale).
Ciphertext baby_unrescaled(ChebBasis& B, const std::vector<double>& c, std::size_t level, double scale) {
    const Evaluator& ev = B.ev;
    const double big = scale * static_cast<double>(ev.context().params().q_primes[level + 1]);
    std::vector<const Ciphertext*> ts;
    std::vector<double> ks;
    for (std::size_t k = 1; k < c.size(); ++k) {
        if (negligible(c[k])) continue;
        const Ciphertext& tk = B.get(k);
        ts.push_back(&tk);
        ks.push_back(c[k] * big / tk.scale);
    }
    if (ts.empty()) {  // a constant: 0 * T_1, so that the result is a ciphertext on the right level and scale
        ts.push_back(&B.get(1));
        ks.push_back(0.0);
    }
    // one multiply-accumulate pass per T_k on its first level + 2 primes (all terms on the scale `big`)
    Ciphertext acc = ev.linear_combination(ts, ks, level + 1, big);
    if (!c.empty() && !negligible(c[0])) acc = ev.add_const(acc, cplx(c[0], 0));
    return acc;
}

// sum_k c_k T_k landing exactly on (level, scale).
Ciphertext baby(ChebBasis& B, const std::vector<double>& c, std::size_t level, double scale) {
    Ciphertext r = B.ev.rescale(baby_unrescaled(B, c, level, scale));
    r.scale = scale;
    return r;
}

// p = q T_G + r landing exactly on (level, scale): q lands on (level + 1, scale * q_{level+1} / scale(T_G))
// so that the rescaled product is on `scale`; r lands on (level, scale) directly. r is split again while it is
// above the baby-step bound (r = q' T_G' + r', ...): every product of that chain lands on the same (level, scale),
// so their tensors are summed and pay one relinearization and one rescale (Evaluator::mul_sum) -- for the
// degree-111 sine of bootstrapping, 3 of its 6 giant-step key switches. The final remainder r (degree <
// baby_bound) is added to that sum before its rescale (it is on the products' level and scale there), which
// saves the remainder's own rescale and the addition after it.
Ciphertext recurse(ChebBasis& B, const std::vector<double>& c, std::size_t baby_bound, std::size_t level, double scale) {
    if (c.size() <= baby_bound) return baby(B, c, level, scale);
    const Evaluator& ev = B.ev;
    const double q_next = static_cast<double>(ev.context().params().q_primes[level + 1]);
    std::vector<Ciphertext> qs, tgs;  // the chain's factors, kept alive for mul_sum
    std::vector<double> rest = c;
    while (rest.size() > baby_bound) {
        Split s = split(rest);
        tgs.push_back(ev.drop_to_level(B.get(s.G), level + 1));
        qs.push_back(recurse(B, s.q, baby_bound, level + 1, scale * q_next / tgs.back().scale));
        rest = std::move(s.r);
    }
    std::vector<std::pair<const Ciphertext*, const Ciphertext*>> terms;
    for (std::size_t i = 0; i < qs.size(); ++i) terms.emplace_back(&qs[i], &tgs[i]);
    // the remainder of degree < baby_bound: nothing to add when all its coefficients are negligible
    bool zero = true;
    for (double x : rest) zero = zero && negligible(x);
    std::optional<Ciphertext> r;
    // on the products' scale by construction: scale(q_i) * scale(T_G_i) = scale * q_{level+1} (mul_sum checks it)
    if (!zero) r = baby_unrescaled(B, rest, level, scale);
    Ciphertext prod = ev.mul_sum(terms, B.rlk, ev.merged_moddown(), r ? &*r : nullptr);
    prod.scale = scale;
    return prod;
}

}  // namespace

std::size_t chebyshev_depth(const ChebyshevPoly& p, bool depth_optimal) {
    if (p.coeffs.empty()) return 0;
    return land_depth(p.coeffs, baby_bound_for(p.coeffs, depth_optimal));
}

Ciphertext evaluate_chebyshev(const Evaluator& ev, const Ciphertext& x, const ChebyshevPoly& p, const SwitchingKey& rlk, double target_scale,
                              bool depth_optimal) {
    if (p.coeffs.empty()) fail("cannot evaluate polynomial", "no coefficients");
    if (!(p.b > p.a)) fail("cannot evaluate polynomial", "interval [a, b] needs a < b");
    for (double c : p.coeffs)
        if (!std::isfinite(c)) fail("cannot evaluate polynomial", "coefficient is not finite");
    if (target_scale < 0 || !std::isfinite(target_scale)) fail("cannot evaluate polynomial", "target scale must be positive");
    const bool affine = !(p.a == -1 && p.b == 1);
    const std::size_t d = p.degree();
    const std::size_t need = chebyshev_depth(p, depth_optimal) + (affine ? 1 : 0);
    if (x.level() < need)
        throw std::invalid_argument("cannot evaluate polynomial of degree " + std::to_string(d) + ": needs " + std::to_string(need) +
                                    " levels, the ciphertext has " + std::to_string(x.level()));
    const Context& ctx = ev.context();
    const std::size_t out = x.level() - need;
    // Default: keep the input's ratio to the canonical scale (canonical in, canonical out).
    const double scale = target_scale > 0 ? target_scale : x.scale * (ctx.scale_at(out) / ctx.scale_at(x.level()));
    ChebBasis B{ev, rlk, {}};
    // y = (2x - a - b) / (b - a)
    Ciphertext y = x;
    if (affine) y = ev.add_const(ev.mul_const(x, cplx(2.0 / (p.b - p.a), 0)), cplx(-(p.a + p.b) / (p.b - p.a), 0));
    B.t.emplace(1, y);
    return recurse(B, p.coeffs, d == 0 ? 1 : baby_bound_for(p.coeffs, depth_optimal), out, scale);
}

}  // namespace ember
