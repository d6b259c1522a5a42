#include "circuits/lintrans.hpp"

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

namespace ember {

namespace {

std::vector<cplx> rotated(const std::vector<cplx>& v, long k) {  // np.roll(v, -k)
    const long n = static_cast<long>(v.size());
    std::vector<cplx> out(v.size());
    for (long i = 0; i < n; ++i) out[i] = v[((i + k) % n + n) % n];
    return out;
}

// Baby-step count: the power of two minimising (#baby rotations) + (#giant rotations).
std::size_t choose_n1(const std::set<std::size_t>& idx, std::size_t slots) {
    std::size_t best = 1, best_cost = SIZE_MAX;
    for (std::size_t n1 = 1; n1 <= slots; n1 <<= 1) {
        std::set<std::size_t> bi, gi;
        for (auto k : idx) { bi.insert(k % n1); gi.insert(k / n1); }
        const std::size_t cost = bi.size() + gi.size();
        if (cost < best_cost) { best_cost = cost; best = n1; }
    }
    return best;
}

}  // namespace

LinearTransform::LinearTransform(std::shared_ptr<const Context> ctx, const std::map<long, std::vector<cplx>>& diagonals,
                                 std::size_t slots, std::size_t level, std::size_t n1, double in_scale, double out_scale)
    : ctx_(std::move(ctx)), slots_(slots), level_(level) {
    if (!ctx_) throw std::invalid_argument("LinearTransform: no context");
    if (slots == 0 || (slots & (slots - 1)) || slots > ctx_->slots())
        throw std::invalid_argument("LinearTransform: slots must be a power of two in [1, " + std::to_string(ctx_->slots()) + "], got " + std::to_string(slots));
    if (level < 1 || level > ctx_->max_level())
        throw std::invalid_argument("LinearTransform: level must be in [1, " + std::to_string(ctx_->max_level()) + "], got " + std::to_string(level));
    if (diagonals.empty()) throw std::invalid_argument("LinearTransform: no diagonals");
    std::map<std::size_t, std::vector<cplx>> diag;
    for (const auto& [k, v] : diagonals) {
        if (v.size() != slots)
            throw std::invalid_argument("LinearTransform: diagonal " + std::to_string(k) + " has " + std::to_string(v.size()) + " values, slots = " + std::to_string(slots));
        const std::size_t kk = static_cast<std::size_t>(((k % static_cast<long>(slots)) + static_cast<long>(slots)) % static_cast<long>(slots));
        if (diag.count(kk)) throw std::invalid_argument("LinearTransform: diagonal " + std::to_string(k) + " given twice (mod slots)");
        diag[kk] = v;
    }
    std::set<std::size_t> idx;
    for (auto& [k, _] : diag) idx.insert(k);
    n1_ = n1 ? n1 : choose_n1(idx, slots);
    if (n1_ == 0 || (n1_ & (n1_ - 1)) || n1_ > slots) throw std::invalid_argument("LinearTransform: n1 must be a power of two <= slots");
    if (in_scale < 0 || out_scale < 0 || !std::isfinite(in_scale) || !std::isfinite(out_scale))
        throw std::invalid_argument("LinearTransform: scales must be positive (or 0 for the canonical ones)");
    in_scale_ = in_scale > 0 ? in_scale : ctx_->scale_at(level);
    out_scale_ = out_scale > 0 ? out_scale : ctx_->scale_at(level - 1);
    // Plaintexts at the scale that lands the rescaled result exactly on out_scale.
    pt_scale_ = out_scale_ * static_cast<double>(ctx_->params().q_primes[level]) / in_scale_;
    for (auto& [k, v] : diag) {
        const std::size_t j = k / n1_, i = k % n1_;
        const auto w = rotated(v, -static_cast<long>(j * n1_));
        pts_[j].emplace(i, ctx_->encoder().encode(ctx_->ring(), w, pt_scale_, level + 1, Basis::QP));
    }
}

std::vector<long> LinearTransform::rotations() const {
    std::set<long> r;
    for (auto& [j, babies] : pts_) {
        if (j) r.insert(static_cast<long>(j * n1_));
        for (auto& [i, _] : babies) if (i) r.insert(static_cast<long>(i));
    }
    return {r.begin(), r.end()};
}

void LinearTransform::check_input(const Ciphertext& ct) const {
    if (ct.c0.empty()) throw std::invalid_argument("cannot apply linear transform: empty ciphertext");
    if (ct.slots != slots_)
        throw std::invalid_argument("cannot apply linear transform: ciphertext has " + std::to_string(ct.slots) + " slots, the transform " + std::to_string(slots_));
    if (ct.level() != level_)
        throw std::invalid_argument("cannot apply linear transform: ciphertext at level " + std::to_string(ct.level()) + ", the transform was encoded for level " + std::to_string(level_));
    if (std::fabs(ct.scale / in_scale_ - 1) > 1e-9)
        throw std::invalid_argument("cannot apply linear transform: ciphertext scale 2^" + std::to_string(std::log2(ct.scale)) +
                                    " differs from the transform's input scale 2^" + std::to_string(std::log2(in_scale_)));
}

Ciphertext LinearTransform::apply_plain(const Ciphertext& ct, const GaloisKeys& gk) const {
    check_input(ct);
    const Evaluator ev(ctx_);
    std::map<std::size_t, Ciphertext> baby;
    for (auto& [j, babies] : pts_)
        for (auto& [i, _] : babies)
            if (!baby.count(i)) baby.emplace(i, ev.rotate(ct, static_cast<long>(i), gk));
    // The plaintexts over Q_level: the Q limbs of the ones encoded over Q_level U P (the same encoding).
    auto q_part = [&](const Poly& qp) {
        Plaintext pt;
        pt.m = Poly::uninitialized(qp.ring_ptr(), qp.q_limbs(), Basis::Q, Form::Eval);
        qp.ring().backend().copy(pt.m.refs(), qp.crefs(0, qp.q_limbs()));
        pt.scale = pt_scale_;
        pt.slots = slots_;
        return pt;
    };
    Ciphertext acc;
    bool first = true;
    for (auto& [j, babies] : pts_) {
        Ciphertext inner;
        bool f = true;
        for (auto& [i, pqp] : babies) {
            Ciphertext t = ev.mul_plain(baby.at(i), q_part(pqp));
            inner = f ? t : ev.add(inner, t);
            f = false;
        }
        inner = ev.rotate(inner, static_cast<long>(j * n1_), gk);
        acc = first ? inner : ev.add(acc, inner);
        first = false;
    }
    Ciphertext r = ev.rescale(acc);
    r.scale = out_scale_;
    return r;
}

namespace {

// Galois key of X -> X^k, or an error naming the rotation.
const SwitchingKey& key_for(const Context& ctx, const GaloisKeys& gk, long r) {
    const SwitchingKey* key = gk.find(ctx.galois_element(r));
    if (!key) throw std::invalid_argument("cannot apply linear transform: no rotation key for " + std::to_string(r) + " slots");
    return *key;
}

// P * rot_r(ct) over Q_l U P from the digits of ct.c1: phi(P c0 + u', v') with (u', v') = <digits, key>
// (the key switches s -> phi^-1(s), see Context::gen_galois_keys).
std::pair<Poly, Poly> rotate_raised(const Context& ctx, const Poly& c0, const std::vector<Poly>& digits, long r, const GaloisKeys& gk) {
    Poly u, v;
    ksk_inner_product(digits, key_for(ctx, gk, r), u, v);
    add_p_mod_up(u, c0);
    const std::uint64_t k = ctx.galois_element(r);
    std::pair<Poly, Poly> out;
    poly_automorph(out.first, u, k);
    poly_automorph(out.second, v, k);
    return out;
}

}  // namespace

Ciphertext LinearTransform::apply(const Ciphertext& ct, const GaloisKeys& gk) const {
    check_input(ct);
    const Context& ctx = *ctx_;
    // Baby steps: one ModUp of c1 for all of them; each rotation stays over QP.
    const auto digits = mod_up_digits(ct.c1, ctx.partition());
    std::map<std::size_t, std::pair<Poly, Poly>> baby;
    for (auto& [j, babies] : pts_)
        for (auto& [i, _] : babies) {
            if (baby.count(i)) continue;
            if (i == 0) baby.emplace(0, std::make_pair(p_mod_up(ct.c0), p_mod_up(ct.c1)));
            else baby.emplace(i, rotate_raised(ctx, ct.c0, digits, static_cast<long>(i), gk));
        }
    Poly acc0, acc1;
    bool first = true;
    for (auto& [j, babies] : pts_) {
        // Inner sum over QP (plaintexts encoded over QP), then one ModDown for the whole giant step.
        Poly s0, s1;
        bool f = true;
        for (auto& [i, pt] : babies) {
            const auto& [b0, b1] = baby.at(i);
            if (f) { poly_mul(s0, b0, pt); poly_mul(s1, b1, pt); }
            else { poly_mul_add(s0, b0, pt); poly_mul_add(s1, b1, pt); }
            f = false;
        }
        std::pair<Poly, Poly> g;
        if (j == 0) {
            g = {std::move(s0), std::move(s1)};
        } else {
            Poly d0 = divide_by_dropped(s0, 0), d1 = divide_by_dropped(s1, 0);
            g = rotate_raised(ctx, d0, mod_up_digits(d1, ctx.partition()), static_cast<long>(j * n1_), gk);
        }
        if (first) { acc0 = std::move(g.first); acc1 = std::move(g.second); }
        else { poly_add(acc0, acc0, g.first); poly_add(acc1, acc1, g.second); }
        first = false;
    }
    // One ModDown for everything, merged with the rescale (divide by P q_level).
    Ciphertext r;
    r.c0 = divide_by_dropped(acc0, 1);
    r.c1 = divide_by_dropped(acc1, 1);
    r.scale = out_scale_;
    r.slots = slots_;
    return r;
}

}  // namespace ember
