#include "ckks/evaluator.hpp"

#include "ckks/op_record.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "util/errors.hpp"

namespace ember {

namespace {

bool is_raised(const Ciphertext& a) { return a.c0.basis() == Basis::QP; }

// A ciphertext with a's scale, slots and key set, its polynomials still to be set.
Ciphertext meta_of(const Ciphertext& a) {
    Ciphertext r;
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = a.key_id;
    return r;
}

// raised_ok: the operation also takes ciphertexts in the raised basis Q_l U P (add, sub, mul_plain).
void check_ct(const Context& ctx, const char* op, const Ciphertext& a, bool raised_ok = false) {
    if (a.c0.empty() || a.c1.empty()) cannot(op, "empty ciphertext");
    ctx.check_owned(op, a);
    if (!raised_ok && is_raised(a)) cannot(op, "the ciphertext is in the raised basis Q U P; bring it down with mod_down() first");
}

// The key belongs to this context and to the ciphertext's key set (a key of a later keygen would
// silently give garbage).
void check_key(const Context& ctx, const char* op, const Ciphertext& a, const SwitchingKey& key, const char* what) {
    ctx.check_owned(op, key, what);
    if (a.key_id && key.key_id && a.key_id != key.key_id)
        cannot(op, std::string("the ") + what + " belongs to another key set than the ciphertext (made by another keygen)");
}

// Two ciphertext operands: the same key set (or an unbound one); the result's key set.
std::uint64_t same_key_set(const char* op, const Ciphertext& a, const Ciphertext& b) {
    if (a.key_id && b.key_id && a.key_id != b.key_id) cannot(op, "the operands were encrypted under different key sets");
    return a.key_id ? a.key_id : b.key_id;
}

void check_pt(const Context& ctx, const char* op, const Ciphertext& a, const Plaintext& p, bool raised_ok = false) {
    check_ct(ctx, op, a, raised_ok);
    if (p.m.empty()) cannot(op, "empty plaintext");
    ctx.check_owned(op, p);
    if (p.slots != a.slots)
        cannot(op, "plaintext packs " + std::to_string(p.slots) + " slots, the ciphertext " + std::to_string(a.slots));
    if (p.level() != a.level())
        cannot(op, "plaintext level " + std::to_string(p.level()) + " differs from ciphertext level " + std::to_string(a.level()));
    if (p.m.basis() != a.c0.basis())
        cannot(op, std::string(is_raised(a) ? "a raised ciphertext needs a plaintext encoded over Q U P" : "the plaintext is encoded over Q U P, the ciphertext over Q"));
}

bool scales_match(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

// Residues of a rounded double (possibly above 2^63) for every Q limb of p.
std::vector<u64> residues_of_double(const Poly& p, double x) {
    // A constant (times its scale) at or beyond Q / 2 wraps modulo Q: the product would be garbage.
    double log_q = 0;
    for (std::size_t i = 0; i < p.limbs(); ++i) log_q += std::log2(static_cast<double>(p.table(i).mod.q));
    if (std::fabs(x) >= 1 && std::log2(std::fabs(x)) >= log_q - 1)
        cannot("multiply or add by a constant", "the constant times its scale is " + scale_str(std::fabs(x)) +
                                                  ", beyond the modulus bound Q/2 = " + scale_str(std::exp2(log_q - 1)) + " at level " +
                                                  std::to_string(p.limbs() - 1) + "; scale it down or use a higher level");
    std::vector<u64> r(p.limbs());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = Encoder::residue_of(x, p.table(i).mod);
    return r;
}

}  // namespace

// Operands at a common level. No copy when they already share one; otherwise the higher one is brought
// down exactly onto the other's level and scale (for products of canonical operands that is the
// canonical scale, so the product lands on the canonical scale of the next level).
struct Evaluator::Operands {
    const Ciphertext* a;
    const Ciphertext* b;
    Ciphertext adjusted;
};

Evaluator::Operands Evaluator::common_level(const char* op, const Ciphertext& a, const Ciphertext& b, bool raised_ok) const {
    check_ct(*ctx_, op, a, raised_ok);
    check_ct(*ctx_, op, b, raised_ok);
    if (is_raised(a) != is_raised(b)) cannot(op, "one operand is in the raised basis Q U P, the other is not");
    if (a.slots != b.slots) cannot(op, "operands pack different slot counts (" + std::to_string(a.slots) + " vs " + std::to_string(b.slots) + ")");
    Operands r{&a, &b, {}};
    if (a.level() > b.level()) {
        r.adjusted = adjust_to(a, b.level(), b.scale);
        r.a = &r.adjusted;
    } else if (b.level() > a.level()) {
        r.adjusted = adjust_to(b, a.level(), a.scale);
        r.b = &r.adjusted;
    }
    return r;
}

namespace {
// Sum or difference; scales within 2^-40 of each other are the same scale (the gap is below the noise).
Ciphertext add_or_sub(const char* op, const Ciphertext& a, const Ciphertext& b, bool subtract) {
    if (!scales_match(a.scale, b.scale) && std::fabs(a.scale / b.scale - 1) >= 0x1.0p-40)
        cannot(op, "operands have different scales (" + scale_str(a.scale) + " vs " + scale_str(b.scale) + ") at level " + std::to_string(a.level()));
    Ciphertext r;
    if (subtract) {
        poly_sub(r.c0, a.c0, b.c0);
        poly_sub(r.c1, a.c1, b.c1);
    } else {
        poly_add(r.c0, a.c0, b.c0);
        poly_add(r.c1, a.c1, b.c1);
    }
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = same_key_set(op, a, b);
    return r;
}
}  // namespace

Ciphertext Evaluator::add(const Ciphertext& a, const Ciphertext& b) const {
    oprec::Op rec("add");
    rec.in(a).in(b);
    Operands o = common_level("add", a, b, /*raised_ok=*/true);
    return rec.out(add_or_sub("add", *o.a, *o.b, false));
}

Ciphertext Evaluator::sub(const Ciphertext& a, const Ciphertext& b) const {
    oprec::Op rec("sub");
    rec.in(a).in(b);
    Operands o = common_level("sub", a, b, /*raised_ok=*/true);
    return rec.out(add_or_sub("sub", *o.a, *o.b, true));
}

Ciphertext Evaluator::negate(const Ciphertext& a) const {
    check_ct(*ctx_, "negate", a);
    oprec::Op rec("negate");
    rec.in(a);
    Ciphertext r;
    poly_neg(r.c0, a.c0);
    poly_neg(r.c1, a.c1);
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = a.key_id;
    return rec.out(std::move(r));
}

namespace {
Ciphertext add_or_sub_plain(const Context& ctx, const char* op, const Ciphertext& a0, const Plaintext& p, bool subtract) {
    check_pt(ctx, op, a0, p);
    if (!scales_match(p.scale, a0.scale)) cannot(op, "plaintext scale " + scale_str(p.scale) + " differs from ciphertext scale " + scale_str(a0.scale));
    Ciphertext a;
    if (subtract) poly_sub(a.c0, a0.c0, p.m);
    else poly_add(a.c0, a0.c0, p.m);
    a.c1 = a0.c1;
    a.scale = a0.scale;
    a.slots = a0.slots;
    a.key_id = a0.key_id;
    return a;
}
}  // namespace

Ciphertext Evaluator::add_plain(const Ciphertext& a, const Plaintext& p) const {
    oprec::Op rec("add_plain");
    rec.in(a).in(p);
    return rec.out(add_or_sub_plain(*ctx_, "add_plain", a, p, false));
}
Ciphertext Evaluator::sub_plain(const Ciphertext& a, const Plaintext& p) const {
    oprec::Op rec("sub_plain");
    rec.in(a).in(p);
    return rec.out(add_or_sub_plain(*ctx_, "sub_plain", a, p, true));
}

Ciphertext Evaluator::add_vector(const Ciphertext& a, const std::vector<cplx>& v) const {
    if (v.size() != a.slots) cannot("add", "vector of " + std::to_string(v.size()) + " values for a ciphertext of " + std::to_string(a.slots) + " slots");
    oprec::Op rec("add_vector");
    rec.in(a);
    return rec.out(add_plain(a, ctx_->encode(v, a.scale, a.level())));
}

Ciphertext Evaluator::add_const(const Ciphertext& a0, cplx c) const {
    check_ct(*ctx_, "add_const", a0);
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) cannot("add_const", "constant is not finite");
    oprec::Op rec("add_const");
    rec.in(a0);
    if (c.imag() == 0) {
        // A real constant is the constant polynomial round(c * scale): the same value at every evaluation point.
        Ciphertext a;
        a.c0 = Poly::uninitialized(a0.c0.ring_ptr(), a0.c0.q_limbs(), Basis::Q, a0.c0.form());
        auto r = residues_of_double(a0.c0, std::round(c.real() * a0.scale));
        a0.c0.ring().backend().add_const(a.c0.refs(), a0.c0.crefs(), r);
        a.c1 = a0.c1;
        a.scale = a0.scale;
        a.slots = a0.slots;
        a.key_id = a0.key_id;
        return rec.out(std::move(a));
    }
    std::vector<cplx> v(a0.slots, c);
    return rec.out(add_plain(a0, ctx_->encode(v, a0.scale, a0.level())));
}

std::pair<Poly, Poly> Evaluator::key_switch(const Poly& c, const SwitchingKey& key) const {
    ctx_->check_owned("key_switch", "polynomial", c);
    ctx_->check_owned("key_switch", key, "switching key");
    auto digits = mod_up_digits(c, ctx_->partition());
    Poly u, v;
    ksk_inner_product(digits, key, u, v);
    return {mod_down_poly(u), mod_down_poly(v)};
}

Ciphertext Evaluator::relinearize(const Poly& d0, const Poly& d1, const Poly& d2, double scale, std::size_t slots, const SwitchingKey& rlk) const {
    oprec::Op rec("relinearize");  // inputs are bare polynomials: no value ids
    auto [u, v] = key_switch(d2, rlk);
    Ciphertext out;
    poly_add(out.c0, d0, u);
    poly_add(out.c1, d1, v);
    out.scale = scale;
    out.slots = slots;
    out.key_id = rlk.key_id;
    return rec.out(std::move(out));
}

namespace {
struct Tensor {
    Poly d0, d1, d2;
};
Tensor tensor(const Ciphertext& a, const Ciphertext& b) {
    Tensor t;
    poly_mul(t.d0, a.c0, b.c0);
    t.d1 = poly_dot({&a.c0, &a.c1}, {&b.c1, &b.c0});  // c0 c1' + c1 c0' in one pass, reduced once
    poly_mul(t.d2, a.c1, b.c1);
    return t;
}

// MAD's ModDown merge: the key switch of d2 stays in the raised basis, P (d0, d1) is added there, and one
// division by P q_level brings all of it down and rescales (mul and mul_sum).
Ciphertext relinearize_rescale_merged(const Context& ctx, const Tensor& t, double scale, std::size_t level, std::size_t slots,
                                      const SwitchingKey& rlk) {
    auto digits = mod_up_digits(t.d2, ctx.partition());
    Poly u, v;
    ksk_inner_product(digits, rlk, u, v);
    add_p_mod_up(u, t.d0);
    add_p_mod_up(v, t.d1);
    Ciphertext out;
    out.c0 = rescale_poly(u);
    out.c1 = rescale_poly(v);
    out.scale = scale / static_cast<double>(ctx.params().q_primes[level]);
    out.slots = slots;
    return out;
}
}  // namespace

Ciphertext Evaluator::multiply_relin(const Ciphertext& a0, const Ciphertext& b0, const SwitchingKey& rlk) const {
    oprec::Op rec("multiply_relin");
    rec.in(a0).in(b0);
    Operands o = common_level("mul", a0, b0);
    const std::uint64_t key_id = same_key_set("mul", a0, b0);
    check_key(*ctx_, "mul", a0, rlk, "relinearization key");
    Tensor t = tensor(*o.a, *o.b);
    Ciphertext r = relinearize(t.d0, t.d1, t.d2, o.a->scale * o.b->scale, o.a->slots, rlk);
    r.key_id = key_id;
    return rec.out(std::move(r));
}

Ciphertext Evaluator::mul(const Ciphertext& a0, const Ciphertext& b0, const SwitchingKey& rlk, bool merged) const {
    oprec::Op rec("mul");
    rec.in(a0).in(b0).arg("merged", merged);
    Operands o = common_level("mul", a0, b0);
    const Ciphertext& a = *o.a;
    const Ciphertext& b = *o.b;
    if (a.level() == 0) cannot("mul", "no level left to rescale into (operands at level 0)");
    const std::uint64_t key_id = same_key_set("mul", a0, b0);
    check_key(*ctx_, "mul", a0, rlk, "relinearization key");
    if (!merged) return rec.out(rescale(multiply_relin(a, b, rlk)));
    Ciphertext out = relinearize_rescale_merged(*ctx_, tensor(a, b), a.scale * b.scale, a.level(), a.slots, rlk);
    out.key_id = key_id;
    return rec.out(std::move(out));
}

Ciphertext Evaluator::mul_sum(const std::vector<std::pair<const Ciphertext*, const Ciphertext*>>& terms, const SwitchingKey& rlk,
                              bool merged, const Ciphertext* addend) const {
    if (terms.empty()) cannot("mul_sum", "no products");
    oprec::Op rec("mul_sum");
    for (const auto& [a, b] : terms) {
        if (!a || !b) cannot("mul_sum", "null operand");
        rec.in(*a).in(*b);
    }
    if (addend) rec.in(*addend);  // the odd last input of a recorded mul_sum
    rec.arg("merged", merged);
    Tensor t;
    double scale = 0;
    std::size_t level = 0, slots = 0;
    std::uint64_t key_id = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        Operands o = common_level("mul_sum", *terms[i].first, *terms[i].second);
        const Ciphertext& a = *o.a;
        const Ciphertext& b = *o.b;
        const std::uint64_t k = same_key_set("mul_sum", a, b);
        if (k && key_id && k != key_id) cannot("mul_sum", "the products' operands were encrypted under different key sets");
        if (!key_id) key_id = k;
        const double s = a.scale * b.scale;
        if (i == 0) {
            if (a.level() == 0) cannot("mul_sum", "no level left to rescale into (operands at level 0)");
            check_key(*ctx_, "mul_sum", a, rlk, "relinearization key");
            scale = s;
            level = a.level();
            slots = a.slots;
            t = tensor(a, b);
            continue;
        }
        if (a.level() != level)
            cannot("mul_sum", "product " + std::to_string(i) + " is at level " + std::to_string(a.level()) + ", the first at level " + std::to_string(level));
        if (a.slots != slots) cannot("mul_sum", "operands pack different slot counts (" + std::to_string(slots) + " vs " + std::to_string(a.slots) + ")");
        if (!scales_match(s, scale) && std::fabs(s / scale - 1) >= 0x1.0p-40)
            cannot("mul_sum", "product " + std::to_string(i) + " has scale " + scale_str(s) + ", the first " + scale_str(scale));
        poly_mul_add(t.d0, a.c0, b.c0);
        poly_mul_add(t.d1, a.c0, b.c1);
        poly_mul_add(t.d1, a.c1, b.c0);
        poly_mul_add(t.d2, a.c1, b.c1);
    }
    if (addend) {
        check_ct(*ctx_, "mul_sum", *addend);
        if (addend->key_id && key_id && addend->key_id != key_id)
            cannot("mul_sum", "the addend was encrypted under another key set than the products");
        if (!key_id) key_id = addend->key_id;
        if (addend->level() != level)
            cannot("mul_sum", "the addend is at level " + std::to_string(addend->level()) + ", the products at level " + std::to_string(level));
        if (addend->slots != slots) cannot("mul_sum", "operands pack different slot counts (" + std::to_string(slots) + " vs " + std::to_string(addend->slots) + ")");
        if (!scales_match(addend->scale, scale) && std::fabs(addend->scale / scale - 1) >= 0x1.0p-40)
            cannot("mul_sum", "the addend has scale " + scale_str(addend->scale) + ", the products " + scale_str(scale));
        poly_add(t.d0, t.d0, addend->c0);
        poly_add(t.d1, t.d1, addend->c1);
    }
    // the key set of any operand (a product's or the addend's) against the relinearization key's
    if (key_id && rlk.key_id && key_id != rlk.key_id)
        cannot("mul_sum", "the relinearization key belongs to another key set than the ciphertexts (made by another keygen)");
    Ciphertext out = merged ? relinearize_rescale_merged(*ctx_, t, scale, level, slots, rlk)
                            : rescale(relinearize(t.d0, t.d1, t.d2, scale, slots, rlk));
    out.key_id = key_id;
    return rec.out(std::move(out));
}

Ciphertext Evaluator::mul_plain(const Ciphertext& a0, const Plaintext& p) const {
    check_pt(*ctx_, "mul_plain", a0, p, /*raised_ok=*/true);
    oprec::Op rec("mul_plain");
    rec.in(a0).in(p);
    Ciphertext a;
    poly_mul(a.c0, a0.c0, p.m);
    poly_mul(a.c1, a0.c1, p.m);
    a.scale = a0.scale * p.scale;
    a.slots = a0.slots;
    a.key_id = a0.key_id;
    return rec.out(std::move(a));
}

Ciphertext Evaluator::mul(const Ciphertext& a, const Plaintext& p) const {
    check_pt(*ctx_, "mul", a, p);
    if (a.level() == 0) cannot("mul", "no level left to rescale into (ciphertext at level 0)");
    return rescale(mul_plain(a, p));  // recorded as what it is: mul_plain, then rescale
}

double Evaluator::product_target(const Ciphertext& a) const {
    const std::size_t l = a.level();
    if (l == 0) cannot("mul", "no level left to rescale into");
    return a.scale * (ctx_->scale_at(l - 1) / ctx_->scale_at(l));
}

Ciphertext Evaluator::mul_vector(const Ciphertext& a, const std::vector<cplx>& v) const {
    check_ct(*ctx_, "mul", a);
    return mul_vector(a, v, product_target(a));
}

Ciphertext Evaluator::mul_vector(const Ciphertext& a, const std::vector<cplx>& v, double target) const {
    check_ct(*ctx_, "mul", a);
    if (v.size() != a.slots) cannot("mul", "vector of " + std::to_string(v.size()) + " values for a ciphertext of " + std::to_string(a.slots) + " slots");
    const std::size_t l = a.level();
    if (l == 0) cannot("mul", "no level left to rescale into");
    if (!(target > 0) || !std::isfinite(target)) cannot("mul", "target scale must be positive");
    oprec::Op rec("mul_vector");
    rec.in(a);
    const double pscale = target * static_cast<double>(ctx_->params().q_primes[l]) / a.scale;
    Ciphertext r = rescale(mul_plain(a, ctx_->encode(v, pscale, l)));
    r.scale = target;  // exact up to the rounding of the encoded values
    return rec.out(std::move(r));
}

Ciphertext Evaluator::mul_int(const Ciphertext& a0, std::int64_t k) const {
    check_ct(*ctx_, "mul", a0);
    oprec::Op rec("mul_int");
    rec.in(a0);
    Ciphertext a;
    poly_mul_const(a.c0, a0.c0, residues_of(a0.c0, k));
    poly_mul_const(a.c1, a0.c1, residues_of(a0.c1, k));
    a.scale = a0.scale;
    a.slots = a0.slots;
    a.key_id = a0.key_id;
    return rec.out(std::move(a));
}

Ciphertext Evaluator::mul_round(const Ciphertext& a0, double x) const {
    check_ct(*ctx_, "mul", a0);
    if (!std::isfinite(x)) cannot("mul", "constant is not finite");
    oprec::Op rec("mul_round");
    rec.in(a0);
    const double k = std::round(x);
    Ciphertext a;
    poly_mul_const(a.c0, a0.c0, residues_of_double(a0.c0, k));
    poly_mul_const(a.c1, a0.c1, residues_of_double(a0.c1, k));
    a.scale = a0.scale * k;
    a.slots = a0.slots;
    a.key_id = a0.key_id;
    return rec.out(std::move(a));
}

Ciphertext Evaluator::linear_combination(const std::vector<const Ciphertext*>& xs, const std::vector<double>& ks, std::size_t level,
                                         double scale) const {
    if (xs.empty()) cannot("linear_combination", "no operands");
    if (xs.size() != ks.size()) cannot("linear_combination", std::to_string(xs.size()) + " operands but " + std::to_string(ks.size()) + " constants");
    oprec::Op rec("linear_combination");
    for (const Ciphertext* x : xs)
        if (x) rec.in(*x);
    rec.arg("level", static_cast<long long>(level));
    const std::size_t limbs = level + 1;
    Ciphertext r;
    r.c0 = Poly(ctx_->ring(), limbs, Basis::Q, Form::Eval);
    r.c1 = Poly(ctx_->ring(), limbs, Basis::Q, Form::Eval);
    std::vector<MulConst> c;
    c.reserve(limbs);
    for (std::size_t j = 0; j < xs.size(); ++j) {
        const Ciphertext& x = *xs[j];
        check_ct(*ctx_, "linear_combination", x);
        if (x.level() < level)
            cannot("linear_combination", "operand " + std::to_string(j) + " is at level " + std::to_string(x.level()) + ", below " + std::to_string(level));
        if (x.slots != xs[0]->slots) cannot("linear_combination", "operands pack different slot counts");
        r.key_id = same_key_set("linear_combination", r, x);
        if (!std::isfinite(ks[j])) cannot("linear_combination", "constant is not finite");
        const double k = std::round(ks[j]);
        c.clear();
        for (std::size_t i = 0; i < limbs; ++i) c.emplace_back(Encoder::residue_of(k, r.c0.table(i).mod), r.c0.table(i).mod);
        ctx_->ring()->backend().mul_const(r.c0.refs(), x.c0.crefs(0, limbs), c, /*accumulate=*/true);
        ctx_->ring()->backend().mul_const(r.c1.refs(), x.c1.crefs(0, limbs), c, /*accumulate=*/true);
    }
    r.scale = scale;
    r.slots = xs[0]->slots;
    return rec.out(std::move(r));
}

Ciphertext Evaluator::mul_const(const Ciphertext& a, cplx c) const {
    check_ct(*ctx_, "mul", a);
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) cannot("mul", "constant is not finite");
    // an integer is mul_int (recorded as such); any other constant is the rescaled product below
    if (c.imag() == 0 && std::nearbyint(c.real()) == c.real() && std::fabs(c.real()) < 0x1.0p62) return mul_int(a, static_cast<std::int64_t>(c.real()));
    return mul_const(a, c, product_target(a));
}

Ciphertext Evaluator::mul_const(const Ciphertext& a, cplx c, double target) const {
    check_ct(*ctx_, "mul", a);
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) cannot("mul", "constant is not finite");
    const std::size_t l = a.level();
    if (l == 0) cannot("mul", "no level left to rescale into");
    if (!(target > 0) || !std::isfinite(target)) cannot("mul", "target scale must be positive");
    oprec::Op rec("mul_const");
    rec.in(a);
    const double cscale = target * static_cast<double>(ctx_->params().q_primes[l]) / a.scale;
    if (c.imag() != 0) {
        std::vector<cplx> v(a.slots, c);
        return rec.out(mul_vector(a, v, target));
    }
    Ciphertext r;
    const double k = std::round(c.real() * cscale);
    poly_mul_const(r.c0, a.c0, residues_of_double(a.c0, k));
    poly_mul_const(r.c1, a.c1, residues_of_double(a.c1, k));
    r.slots = a.slots;
    r.key_id = a.key_id;
    r.scale = a.scale * cscale;
    r = rescale(r);
    r.scale = target;
    return rec.out(std::move(r));
}

namespace {
// a divided by its P primes (when raised) and its top drop_q primes, rounded: ModDown (drop_q = 0),
// Rescale of an ordinary ciphertext, or ModDown merged with Rescale of a raised one (drop_q = 1).
Ciphertext divided(const Context& ctx, const Ciphertext& a, std::size_t drop_q) {
    Ciphertext r;
    r.c0 = divide_by_dropped(a.c0, drop_q);
    r.c1 = divide_by_dropped(a.c1, drop_q);
    r.scale = drop_q ? a.scale / static_cast<double>(ctx.params().q_primes[a.level()]) : a.scale;
    r.slots = a.slots;
    r.key_id = a.key_id;
    return r;
}
}  // namespace

Ciphertext Evaluator::rescale(const Ciphertext& a) const {
    check_ct(*ctx_, "rescale", a);
    if (a.level() == 0) cannot("rescale", "ciphertext is at level 0");
    oprec::Op rec("rescale");
    rec.in(a);
    return rec.out(divided(*ctx_, a, 1));
}

Ciphertext Evaluator::drop_to_level(const Ciphertext& a, std::size_t level) const {
    check_ct(*ctx_, "drop_level", a);
    if (level > a.level()) cannot("drop_level", "target level " + std::to_string(level) + " above the ciphertext's " + std::to_string(a.level()));
    if (level == a.level()) return a;  // nothing dropped: the same value
    oprec::Op rec("drop_to_level");
    rec.in(a).arg("level", static_cast<long long>(level));
    Ciphertext r;
    r.c0 = restrict_to(a.c0, level + 1);
    r.c1 = restrict_to(a.c1, level + 1);
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = a.key_id;
    return rec.out(std::move(r));
}

Ciphertext Evaluator::adjust_to(const Ciphertext& a, std::size_t level, double scale) const {
    check_ct(*ctx_, "adjust level", a);
    if (level > a.level()) cannot("adjust level", "target level " + std::to_string(level) + " above the ciphertext's " + std::to_string(a.level()));
    if (level == a.level()) {
        if (!scales_match(a.scale, scale)) cannot("adjust level", "same level but scale " + scale_str(a.scale) + " differs from " + scale_str(scale));
        return a;
    }
    oprec::Op rec("adjust_to");
    rec.in(a).arg("level", static_cast<long long>(level));
    Ciphertext r = drop_to_level(a, level + 1);
    const double k = std::round(scale * static_cast<double>(ctx_->params().q_primes[level + 1]) / r.scale);
    if (k < 1) cannot("adjust level", "ciphertext scale " + scale_str(r.scale) + " is too large for target " + scale_str(scale));
    poly_mul_const(r.c0, r.c0, residues_of_double(r.c0, k));
    poly_mul_const(r.c1, r.c1, residues_of_double(r.c1, k));
    r.scale *= k;
    r = rescale(r);
    if (std::fabs(r.scale / scale - 1) < 0x1.0p-40) r.scale = scale;
    return rec.out(std::move(r));
}

const SwitchingKey& Evaluator::galois_key(const Ciphertext& a, const GaloisKeys& gk, std::uint64_t k, const char* op, long steps) const {
    const SwitchingKey* key = gk.find(k);
    if (!key) {
        if (k == ctx_->conjugation_element()) cannot(op, "no conjugation key; generate keys with conjugation=True");
        cannot(op, "no rotation key for " + std::to_string(steps) + " slots; generate keys with rotations=[" + std::to_string(steps) + ", ...]");
    }
    check_key(*ctx_, op, a, *key, k == ctx_->conjugation_element() ? "conjugation key" : "rotation key");
    return *key;
}

Ciphertext Evaluator::automorphism_from_digits(const Ciphertext& a, const std::vector<Poly>& digits, std::uint64_t k,
                                               const SwitchingKey& key) const {
    // The key switches s -> phi^-1(s): (u, v) = ModDown(<ModUp(c1), key>) gives u + v phi^-1(s) ~= c1 s,
    // so phi(c0 + u, v) decrypts under s to phi(c0 + c1 s). Only the two result polynomials are permuted,
    // never the beta digits over QP (so hoisted rotations share the digits untouched).
    Poly u, v;
    ksk_inner_product(digits, key, u, v);
    Poly t0;
    poly_add(t0, a.c0, mod_down_poly(u));
    Ciphertext r = meta_of(a);
    poly_automorph(r.c0, t0, k);
    poly_automorph(r.c1, mod_down_poly(v), k);
    return r;
}

Ciphertext Evaluator::automorphism(const Ciphertext& a, std::uint64_t k, const SwitchingKey& key) const {
    check_ct(*ctx_, "rotate", a);
    check_key(*ctx_, "rotate", a, key, "Galois key");
    oprec::Op rec("automorphism");
    rec.in(a).arg("galois", static_cast<long long>(k));
    return rec.out(automorphism_from_digits(a, mod_up_digits(a.c1, ctx_->partition()), k, key));
}

Ciphertext Evaluator::rotate(const Ciphertext& a, long steps, const GaloisKeys& gk) const {
    check_ct(*ctx_, "rotate", a);
    const long n = static_cast<long>(a.slots);
    if (((steps % n) + n) % n == 0) return a;
    oprec::Op rec("rotate");
    rec.in(a).arg("steps", steps);
    const std::uint64_t k = ctx_->galois_element(steps);
    return rec.out(automorphism(a, k, galois_key(a, gk, k, "rotate", steps)));
}

Ciphertext Evaluator::conjugate(const Ciphertext& a, const GaloisKeys& gk) const {
    check_ct(*ctx_, "conjugate", a);
    oprec::Op rec("conjugate");
    rec.in(a);
    const std::uint64_t k = ctx_->conjugation_element();
    return rec.out(automorphism(a, k, galois_key(a, gk, k, "conjugate", 0)));
}

std::vector<const SwitchingKey*> Evaluator::rotation_keys(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk, const char* op) const {
    // Keys first, so a missing one fails before any work; nullptr for the steps that are no rotation.
    const long n = static_cast<long>(a.slots);
    std::vector<const SwitchingKey*> keys(steps.size(), nullptr);
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (((steps[i] % n) + n) % n != 0) keys[i] = &galois_key(a, gk, ctx_->galois_element(steps[i]), op, steps[i]);
    return keys;
}

std::vector<Ciphertext> Evaluator::rotate_many(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) const {
    check_ct(*ctx_, "rotate_many", a);
    oprec::Op rec("rotate_many");
    rec.in(a);
    const std::vector<const SwitchingKey*> keys = rotation_keys(a, steps, gk, "rotate_many");
    // One Decomp + ModUp of c1 for all rotations (Halevi-Shoup hoisting).
    auto digits = mod_up_digits(a.c1, ctx_->partition());
    std::vector<Ciphertext> out;
    out.reserve(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (!keys[i]) out.push_back(a);
        else out.push_back(automorphism_from_digits(a, digits, ctx_->galois_element(steps[i]), *keys[i]));
    }
    for (long s : steps) rec.arg("steps", s);
    return rec.out(std::move(out));
}

}  // namespace ember

// ---- key switching of ciphertexts, the raised basis, ModRaise ----------------------------------------------------

namespace ember {

Ciphertext Evaluator::key_switch(const Ciphertext& a, const SwitchingKey& key) const {
    check_ct(*ctx_, "key_switch", a);
    ctx_->check_owned("key_switch", key, "switching key");
    oprec::Op rec("key_switch");
    rec.in(a);
    auto [u, v] = key_switch(a.c1, key);
    Ciphertext r;
    poly_add(r.c0, a.c0, u);
    r.c1 = std::move(v);
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = key.key_id ? key.key_id : a.key_id;  // now under the key's target secret
    return rec.out(std::move(r));
}

Ciphertext Evaluator::key_switch(const Ciphertext& a, const DigitSwitchingKey& key) const {
    check_ct(*ctx_, "key_switch", a);
    if (key.parts.empty()) cannot("key_switch", "empty digit switching key");
    ctx_->check_owned("key_switch", "digit switching key", key.parts[0].first);
    if (key.q_limbs() != 1 || a.c0.q_limbs() != 1)
        cannot("key_switch", "digit switching keys work over q0 alone: the key has " + std::to_string(key.q_limbs()) + " primes, the ciphertext " +
                                 std::to_string(a.c0.q_limbs()));
    if (key.digit_bits < 2 || key.digit_bits > 30) cannot("key_switch", "digit_bits must be in [2, 30], got " + std::to_string(key.digit_bits));
    {
        // enough balanced digits for every centered coefficient |v| <= q0 / 2 < 2^(b - 1): after k digits with
        // B^k >= 2^(b - 1) the rest is in {-1, 0, 1}, and one more digit takes it (B >= 4)
        const std::size_t b = static_cast<std::size_t>(std::bit_width(ctx_->ring()->mod(0).q));
        const std::size_t need = (b - 1 + static_cast<std::size_t>(key.digit_bits) - 1) / static_cast<std::size_t>(key.digit_bits) + 1;
        if (key.parts.size() < need)
            cannot("key_switch", "the digit switching key has " + std::to_string(key.parts.size()) + " parts; q0 in base 2^" +
                                     std::to_string(key.digit_bits) + " needs " + std::to_string(need));
    }
    oprec::Op rec("key_switch_digits");
    rec.in(a).arg("digits", static_cast<long long>(key.parts.size()));
    // Balanced digits of c1 in base B = 2^digit_bits, each times the key's part: c0 + sum d_i b_i, sum d_i a_i.
    const RingContext& ring = *ctx_->ring();
    Poly c1 = a.c1;
    poly_to_coeff(c1);
    Poly c0 = a.c0;
    const Modulus& m = ring.mod(0);
    const std::size_t N = ring.n(), D = key.parts.size();
    // the digits on the backend (a device keeps c1 where it is)
    std::vector<Poly> digits;
    std::vector<u64*> out;
    digits.reserve(D);
    for (std::size_t d = 0; d < D; ++d) {
        digits.push_back(Poly::uninitialized(ctx_->ring(), 1, Basis::Q, Form::Coeff));
        out.push_back(digits.back().limb(0));
    }
    ring.backend().signed_digits(out, c1.limb(0), m, N, key.digit_bits);
    Poly v(ctx_->ring(), 1, Basis::Q, Form::Eval);
    for (std::size_t d = 0; d < D; ++d) {
        poly_to_eval(digits[d]);
        poly_mul_add(c0, digits[d], key.parts[d].first);
        poly_mul_add(v, digits[d], key.parts[d].second);
    }
    Ciphertext r;
    r.c0 = std::move(c0);
    r.c1 = std::move(v);
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = key.key_id ? key.key_id : a.key_id;  // now under the key's target secret
    return rec.out(std::move(r));
}

Ciphertext Evaluator::raised_automorphism(const Ciphertext& a, const std::vector<Poly>& digits, std::uint64_t k, const SwitchingKey& key) const {
    // phi(P c0 + u, v) with (u, v) = <digits, key> over Q_l U P: P * rot(a) before its ModDown (the key
    // switches s -> phi^-1(s), see Context::gen_galois_keys).
    Poly u, v;
    ksk_inner_product(digits, key, u, v);
    add_p_mod_up(u, a.c0);
    Ciphertext r = meta_of(a);
    poly_automorph(r.c0, u, k);
    poly_automorph(r.c1, v, k);
    return r;
}

std::vector<Ciphertext> Evaluator::rotate_many_raised(const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) const {
    check_ct(*ctx_, "rotate_many_raised", a);
    oprec::Op rec("rotate_many_raised");
    rec.in(a);
    const std::vector<const SwitchingKey*> keys = rotation_keys(a, steps, gk, "rotate_many_raised");
    const bool any = std::any_of(keys.begin(), keys.end(), [](const SwitchingKey* k) { return k != nullptr; });
    // One Decomp + ModUp of c1 for every rotation.
    const std::vector<Poly> digits = any ? mod_up_digits(a.c1, ctx_->partition()) : std::vector<Poly>{};
    std::vector<Ciphertext> out;
    out.reserve(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (keys[i]) {
            out.push_back(raised_automorphism(a, digits, ctx_->galois_element(steps[i]), *keys[i]));
        } else {
            Ciphertext r = meta_of(a);  // P * a
            r.c0 = p_mod_up(a.c0);
            r.c1 = p_mod_up(a.c1);
            out.push_back(std::move(r));
        }
    }
    for (long s : steps) rec.arg("steps", s);
    return rec.out(std::move(out));
}

Ciphertext Evaluator::mod_down(const Ciphertext& raised) const {
    check_ct(*ctx_, "mod_down", raised, /*raised_ok=*/true);
    if (!is_raised(raised)) cannot("mod_down", "the ciphertext is not in the raised basis");
    oprec::Op rec("mod_down");
    rec.in(raised);
    return rec.out(divided(*ctx_, raised, 0));
}

Ciphertext Evaluator::mod_down_rescale(const Ciphertext& raised) const {
    check_ct(*ctx_, "mod_down_rescale", raised, /*raised_ok=*/true);
    if (!is_raised(raised)) cannot("mod_down_rescale", "the ciphertext is not in the raised basis (use rescale)");
    if (raised.level() == 0) cannot("mod_down_rescale", "ciphertext is at level 0");
    oprec::Op rec("mod_down_rescale");
    rec.in(raised);
    return rec.out(divided(*ctx_, raised, 1));
}

Ciphertext Evaluator::mul_plain_sum(const std::vector<const Ciphertext*>& xs, const std::vector<const Plaintext*>& ps) const {
    if (xs.empty()) cannot("mul_plain_sum", "no operands");
    if (xs.size() != ps.size()) cannot("mul_plain_sum", std::to_string(xs.size()) + " ciphertexts but " + std::to_string(ps.size()) + " plaintexts");
    oprec::Op rec("mul_plain_sum");
    const Ciphertext& x0 = *xs[0];
    const double scale = x0.scale * ps[0]->scale;
    Ciphertext r;
    for (std::size_t k = 0; k < xs.size(); ++k) {
        const Ciphertext& x = *xs[k];
        const Plaintext& p = *ps[k];
        check_pt(*ctx_, "mul_plain_sum", x, p, /*raised_ok=*/true);
        rec.in(x).in(p);
        if (x.level() != x0.level() || x.slots != x0.slots || is_raised(x) != is_raised(x0))
            cannot("mul_plain_sum", "operand " + std::to_string(k) + " differs from operand 0 in level, slots or basis");
        if (!scales_match(x.scale * p.scale, scale))
            cannot("mul_plain_sum", "term " + std::to_string(k) + " has scale " + scale_str(x.scale * p.scale) + ", term 0 " + scale_str(scale));
        r.key_id = same_key_set("mul_plain_sum", r, x);
    }
    // both parts in one pass over the terms: each plaintext read once, each sum reduced once
    std::vector<const Poly*> pm, c0, c1;
    for (std::size_t k = 0; k < xs.size(); ++k) {
        pm.push_back(&ps[k]->m);
        c0.push_back(&xs[k]->c0);
        c1.push_back(&xs[k]->c1);
    }
    std::tie(r.c0, r.c1) = poly_dot2(pm, c0, c1);
    r.scale = scale;
    r.slots = x0.slots;
    return rec.out(std::move(r));
}

Ciphertext Evaluator::mod_raise(const Ciphertext& a, std::size_t level) const {
    check_ct(*ctx_, "mod_raise", a);
    if (a.level() != 0) cannot("mod_raise", "the ciphertext must be at level 0, got " + std::to_string(a.level()));
    if (level < 1 || level > ctx_->max_level()) cannot("mod_raise", "level must be in [1, " + std::to_string(ctx_->max_level()) + "], got " + std::to_string(level));
    oprec::Op rec("mod_raise");
    rec.in(a).arg("level", static_cast<long long>(level));
    const RingContext& ring = *ctx_->ring();
    // The centered lift of each coefficient mod q0 to every prime of Q_level.
    auto raise = [&](Poly p) {
        if (p.form() != Form::Coeff) poly_to_coeff(p);
        Poly r = Poly::uninitialized(ctx_->ring(), level + 1, Basis::Q, Form::Coeff);
        ring.backend().copy(r.refs(0, 1), p.crefs());
        std::vector<std::uint32_t> from{0}, to;
        for (std::size_t i = 1; i <= level; ++i) to.push_back(static_cast<std::uint32_t>(i));
        std::vector<u64*> out;
        for (std::size_t i = 1; i <= level; ++i) out.push_back(r.limb(i));
        const u64* in[] = {p.limb(0)};
        ring.backend().base_convert(ring.converter(from, to), in, out, ring.n(), /*centered=*/true);
        poly_to_eval(r);
        return r;
    };
    Ciphertext r;
    r.c0 = raise(a.c0);
    r.c1 = raise(a.c1);
    r.scale = a.scale;
    r.slots = a.slots;
    r.key_id = a.key_id;
    return rec.out(std::move(r));
}

}  // namespace ember
