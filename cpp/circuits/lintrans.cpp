#include "circuits/lintrans.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "util/errors.hpp"

namespace ember {

namespace {

std::vector<cplx> rotated(const std::vector<cplx>& v, long k) {  // np.roll(v, -k)
    const long n = static_cast<long>(v.size());
    std::vector<cplx> out(v.size());
    for (long i = 0; i < n; ++i) out[i] = v[((i + k) % n + n) % n];
    return out;
}

// Diagonal k (in [0, slots)) as a signed offset in (-slots/2, slots/2], split as n1 j + i with i in [0, n1).
std::pair<long, std::size_t> split_index(std::size_t k, std::size_t slots, std::size_t n1) {
    const long s = k <= slots / 2 ? static_cast<long>(k) : static_cast<long>(k) - static_cast<long>(slots);
    const long m = static_cast<long>(n1);
    const long j = s >= 0 ? s / m : -((-s + m - 1) / m);
    return {j, static_cast<std::size_t>(s - j * m)};
}

// Baby-step count: the power of two minimising (#baby rotations) + kGiantWeight (#giant rotations); the giant steps
// are chained (Horner), one rotation by +-n1 per step from the farthest one in. A giant step is a whole key switch
// (ModDown, ModUp, inner product), a hoisted baby step shares the ModUp: about a third of one at N = 2^16 (the
// default bootstrapping: 0.17 s against 0.05-0.07 s on a 2-core Zen 3). But every baby step is one more Galois key,
// so the weight is 2, not 3: there the bootstrapping took 0.88x the time of weight 1 with 28 keys instead of 24
// (6.2 GB against 5.4 GB), where weight 3 took 44 keys (9.6 GB) for a few per cent more.
constexpr std::size_t kGiantWeight = 2;

std::size_t choose_n1(const std::set<std::size_t>& idx, std::size_t slots) {
    std::size_t best = 1, best_cost = SIZE_MAX;
    for (std::size_t n1 = 1; n1 <= slots; n1 <<= 1) {
        std::set<std::size_t> bi;
        long jmin = 0, jmax = 0;
        for (auto k : idx) {
            const auto [j, i] = split_index(k, slots, n1);
            bi.insert(i);
            jmin = std::min(jmin, j);
            jmax = std::max(jmax, j);
        }
        const std::size_t cost = bi.size() + kGiantWeight * static_cast<std::size_t>(jmax - jmin);
        if (cost < best_cost) { best_cost = cost; best = n1; }
    }
    return best;
}

// sum_j rot_{n1 j}(S_j) over the giant steps j != 0 of one sign, by Horner's rule:
// rot_{+-n1}(S_{+-1} + rot_{+-n1}(S_{+-2} + ...)), every step a rotation by the same +-n1 (two keys in
// all instead of one per giant step). Acc: the running sum's type; rot and add act on it.
// The sums are moved out of the map.
template <class Acc, class Rot, class Add>
std::optional<Acc> horner(std::map<long, Acc>& sums, int sign, Rot&& rot, Add&& add) {
    long far = 0;
    for (const auto& [j, _] : sums)
        if (j * sign > far) far = j * sign;
    std::optional<Acc> a;
    for (long t = far; t >= 1; --t) {
        if (a) a = rot(*a);
        auto it = sums.find(t * sign);
        if (it != sums.end()) a = a ? add(*a, it->second) : std::move(it->second);
    }
    if (a) a = rot(*a);
    return a;
}

}  // namespace

LinearTransform::LinearTransform(std::shared_ptr<const Context> ctx, const std::map<long, std::vector<cplx>>& diagonals,
                                 std::size_t slots, std::size_t level, std::size_t n1, double in_scale, double out_scale, bool hoisted_moddown)
    : ctx_(std::move(ctx)), slots_(slots), level_(level), hoisted_moddown_(hoisted_moddown) {
    if (!ctx_) fail("LinearTransform", "no context");
    if (slots == 0 || (slots & (slots - 1)) || slots > ctx_->slots())
        fail("LinearTransform", "slots must be a power of two in [1, " + std::to_string(ctx_->slots()) + "], got " + std::to_string(slots));
    if (level < 1 || level > ctx_->max_level())
        fail("LinearTransform", "level must be in [1, " + std::to_string(ctx_->max_level()) + "], got " + std::to_string(level));
    if (diagonals.empty()) fail("LinearTransform", "no diagonals");
    std::map<std::size_t, std::vector<cplx>> diag;
    for (const auto& [k, v] : diagonals) {
        if (v.size() != slots)
            fail("LinearTransform", "diagonal " + std::to_string(k) + " has " + std::to_string(v.size()) + " values, slots = " + std::to_string(slots));
        const std::size_t kk = static_cast<std::size_t>(((k % static_cast<long>(slots)) + static_cast<long>(slots)) % static_cast<long>(slots));
        if (diag.count(kk)) fail("LinearTransform", "diagonal " + std::to_string(k) + " given twice (mod slots)");
        diag[kk] = v;
    }
    std::set<std::size_t> idx;
    for (auto& [k, _] : diag) idx.insert(k);
    if (slots == 1) n1 = 1;
    n1_ = n1 ? n1 : choose_n1(idx, slots);
    if (n1_ == 0 || (n1_ & (n1_ - 1)) || n1_ > slots) fail("LinearTransform", "n1 must be a power of two <= slots");
    if (in_scale < 0 || out_scale < 0 || !std::isfinite(in_scale) || !std::isfinite(out_scale))
        fail("LinearTransform", "scales must be positive (or 0 for the canonical ones)");
    in_scale_ = in_scale > 0 ? in_scale : ctx_->scale_at(level);
    out_scale_ = out_scale > 0 ? out_scale : ctx_->scale_at(level - 1);
    // Plaintexts at the scale that lands the rescaled result exactly on out_scale.
    pt_scale_ = out_scale_ * static_cast<double>(ctx_->params().q_primes[level]) / in_scale_;
    for (auto& [k, v] : diag) {
        const auto [j, i] = split_index(k, slots, n1_);
        const auto w = rotated(v, -j * static_cast<long>(n1_));
        Plaintext pt;
        pt.m = ctx_->encoder().encode(ctx_->ring(), w, pt_scale_, level + 1, hoisted_moddown_ ? Basis::QP : Basis::Q);
        pt.scale = pt_scale_;
        pt.slots = slots_;
        pts_[j].emplace(i, std::move(pt));
    }
}

std::vector<long> LinearTransform::rotations() const {
    std::set<long> r;
    for (auto& [j, babies] : pts_) {
        if (j) r.insert(j > 0 ? static_cast<long>(n1_) : -static_cast<long>(n1_));
        for (auto& [i, _] : babies) if (i) r.insert(static_cast<long>(i));
    }
    return {r.begin(), r.end()};
}

void LinearTransform::check_input(const Evaluator& ev, const Ciphertext& ct) const {
    if (&ev.context() != ctx_.get()) cannot("apply linear transform", "the evaluator belongs to another context than the transform");
    if (ct.c0.empty()) fail("cannot apply linear transform", "empty ciphertext");
    ctx_->check_owned("apply linear transform", ct);
    if (ct.slots != slots_)
        fail("cannot apply linear transform", "ciphertext has " + std::to_string(ct.slots) + " slots, the transform " + std::to_string(slots_));
    if (ct.level() != level_)
        fail("cannot apply linear transform", "ciphertext at level " + std::to_string(ct.level()) + ", the transform was encoded for level " + std::to_string(level_));
    if (std::fabs(ct.scale / in_scale_ - 1) > 1e-9)
        cannot("apply linear transform", "ciphertext scale " + scale_str(ct.scale) + " differs from the transform's input scale " + scale_str(in_scale_));
}

Plaintext LinearTransform::q_part(const Plaintext& p) {
    Plaintext pt = p;
    pt.m = Poly::uninitialized(p.m.ring_ptr(), p.m.q_limbs(), Basis::Q, Form::Eval);
    p.m.ring().backend().copy(pt.m.refs(), p.m.crefs(0, p.m.q_limbs()));
    return pt;
}

std::vector<long> LinearTransform::baby_step_list() const {
    std::vector<long> steps;  // in order of first use
    for (auto& [j, babies] : pts_)
        for (auto& [i, _] : babies)
            if (std::find(steps.begin(), steps.end(), static_cast<long>(i)) == steps.end()) steps.push_back(static_cast<long>(i));
    return steps;
}

namespace {
// Baby step -> its rotation, from the hoisted rotations of `steps`.
std::map<std::size_t, const Ciphertext*> by_step(const std::vector<long>& steps, const std::vector<Ciphertext>& rots) {
    std::map<std::size_t, const Ciphertext*> baby;
    for (std::size_t k = 0; k < steps.size(); ++k) baby[static_cast<std::size_t>(steps[k])] = &rots[k];
    return baby;
}
}  // namespace

Ciphertext LinearTransform::apply_single(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const {
    const std::vector<long> steps = baby_step_list();
    const std::vector<Ciphertext> rots = ev.rotate_many(ct, steps, gk);
    const auto baby = by_step(steps, rots);
    std::map<long, Ciphertext> inner;
    for (auto& [j, babies] : pts_) {
        bool f = true;
        for (auto& [i, pt] : babies) {
            Ciphertext t = ev.mul_plain(*baby.at(i), pt);
            if (f) inner[j] = std::move(t);
            else inner[j] = ev.add(inner[j], t);
            f = false;
        }
    }
    return finish(ev, inner, gk);
}

Ciphertext LinearTransform::finish(const Evaluator& ev, std::map<long, Ciphertext>& inner, const GaloisKeys& gk) const {
    // sum_j rot_{n1 j}(inner_j): j = 0 as it is, each sign by Horner's rule with one key; then the rescale.
    const long n1 = static_cast<long>(n1_);
    auto add = [&](const Ciphertext& a, const Ciphertext& b) { return ev.add(a, b); };
    std::optional<Ciphertext> acc;
    for (int sign : {1, -1}) {
        auto part = horner(inner, sign, [&](const Ciphertext& a) { return ev.rotate(a, sign * n1, gk); }, add);
        if (part) acc = acc ? ev.add(*acc, *part) : std::move(*part);
    }
    auto it = inner.find(0);
    if (it != inner.end()) acc = acc ? ev.add(it->second, *acc) : std::move(it->second);
    Ciphertext r = ev.rescale(*acc);
    r.scale = out_scale_;
    return r;
}

Ciphertext LinearTransform::apply_reference(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const {
    check_input(ev, ct);
    std::map<std::size_t, Ciphertext> baby;
    for (auto& [j, babies] : pts_)
        for (auto& [i, _] : babies)
            if (!baby.count(i)) baby.emplace(i, ev.rotate(ct, static_cast<long>(i), gk));
    std::map<long, Ciphertext> inner;
    for (auto& [j, babies] : pts_) {
        bool f = true;
        for (auto& [i, pt] : babies) {
            // plaintexts over Q U P: their Q limbs (the same encoding) copied out
            Ciphertext t = ev.mul_plain(baby.at(i), hoisted_moddown_ ? q_part(pt) : pt);
            if (f) inner[j] = std::move(t);
            else inner[j] = ev.add(inner[j], t);
            f = false;
        }
    }
    return finish(ev, inner, gk);
}

Ciphertext LinearTransform::apply(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const {
    check_input(ev, ct);
    return hoisted_moddown_ ? apply_double(ev, ct, gk) : apply_single(ev, ct, gk);
}

Ciphertext LinearTransform::apply_double(const Evaluator& ev, const Ciphertext& ct, const GaloisKeys& gk) const {
    // Baby steps: one decomposition of c1 for all of them; each rotation stays in the raised basis Q U P.
    const std::vector<long> steps = baby_step_list();
    const std::vector<Ciphertext> rots = ev.rotate_many_raised(ct, steps, gk);
    const auto baby = by_step(steps, rots);
    // Inner sums in the raised basis (plaintexts encoded over Q U P), one multiply-accumulate per giant step.
    std::map<long, Ciphertext> sums;
    for (auto& [j, babies] : pts_) {
        std::vector<const Ciphertext*> xs;
        std::vector<const Plaintext*> ps;
        for (auto& [i, pt] : babies) {
            xs.push_back(baby.at(i));
            ps.push_back(&pt);
        }
        sums.emplace(j, ev.mul_plain_sum(xs, ps));
    }
    // Giant steps by Horner's rule, the running sum raised: one ModDown before each rotation, which is
    // key-switched into the raised basis again (ModDown hoisting: no ModDown per baby step).
    auto add = [&](const Ciphertext& a, const Ciphertext& b) { return ev.add(a, b); };
    const long n1 = static_cast<long>(n1_);
    std::optional<Ciphertext> acc;
    for (int sign : {1, -1}) {
        auto rot = [&](const Ciphertext& a) { return std::move(ev.rotate_many_raised(ev.mod_down(a), {sign * n1}, gk)[0]); };
        auto part = horner(sums, sign, rot, add);
        if (part) acc = acc ? add(*acc, *part) : std::move(*part);
    }
    auto it = sums.find(0);
    if (it != sums.end()) acc = acc ? add(it->second, *acc) : std::move(it->second);
    // One ModDown for everything, merged with the rescale (divide by P q_level).
    Ciphertext r = ev.mod_down_rescale(*acc);
    r.scale = out_scale_;
    r.slots = slots_;
    return r;
}

}  // namespace ember
