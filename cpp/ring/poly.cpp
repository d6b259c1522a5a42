#include "ring/poly.hpp"

#include "trace/trace.hpp"

#include <algorithm>
#include <stdexcept>

#include <openssl/crypto.h>

namespace ember {

Poly::Poly(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form, bool secret, Zeroed zeroed)
    : ring_(std::move(ring)), q_limbs_(q_limbs), basis_(basis), form_(form), secret_(secret) {
    if (!ring_) throw std::invalid_argument("Poly: no ring");
    if (q_limbs == 0 || q_limbs > ring_->q_count())
        throw std::invalid_argument("Poly: q_limbs must be in [1, " + std::to_string(ring_->q_count()) + "], got " + std::to_string(q_limbs));
    capacity_ = limbs() * ring_->n();
    data_ = ring_->backend().allocate(capacity_, zeroed.value && ring_->backend().holds_data());
}

Poly::Poly(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form, bool secret)
    : Poly(std::move(ring), q_limbs, basis, form, secret, Zeroed{true}) {}

Poly Poly::uninitialized(std::shared_ptr<const RingContext> ring, std::size_t q_limbs, Basis basis, Form form) {
    return Poly(std::move(ring), q_limbs, basis, form, false, Zeroed{false});
}

void Poly::release() {
    if (data_) ring_->backend().release(data_, capacity_, secret_);
    data_ = nullptr;
    capacity_ = 0;
}

Poly::~Poly() { release(); }

Poly::Poly(const Poly& o) : ring_(o.ring_), q_limbs_(o.q_limbs_), basis_(o.basis_), form_(o.form_), secret_(o.secret_) {
    if (!ring_) return;
    capacity_ = limbs() * ring_->n();
    data_ = ring_->backend().allocate(capacity_, false);
    if (ring_->backend().holds_data()) ring_->backend().copy_words(data_, o.data_, capacity_);
}

Poly& Poly::operator=(const Poly& o) {
    if (this == &o) return *this;
    Poly tmp(o);
    *this = std::move(tmp);
    return *this;
}

Poly::Poly(Poly&& o) noexcept
    : ring_(std::move(o.ring_)), q_limbs_(o.q_limbs_), capacity_(o.capacity_), basis_(o.basis_), form_(o.form_), secret_(o.secret_), data_(o.data_) {
    o.data_ = nullptr;
    o.capacity_ = 0;
    o.q_limbs_ = 0;
}

Poly& Poly::operator=(Poly&& o) noexcept {
    if (this == &o) return *this;
    release();
    ring_ = std::move(o.ring_);
    q_limbs_ = o.q_limbs_;
    capacity_ = o.capacity_;
    basis_ = o.basis_;
    form_ = o.form_;
    secret_ = o.secret_;
    data_ = o.data_;
    o.data_ = nullptr;
    o.capacity_ = 0;
    o.q_limbs_ = 0;
    return *this;
}

HostLimbs Poly::host(std::size_t first, std::size_t count, bool fetch) { return HostLimbs(*this, first, count, fetch, true); }
HostLimbs Poly::host(std::size_t first, std::size_t count) const { return HostLimbs(*this, first, count, true, false); }

HostLimbs::HostLimbs(const Poly& p, std::size_t first, std::size_t count, bool fetch, bool writable)
    : writable_(writable), secret_(p.secret()) {
    if (p.empty()) throw std::invalid_argument("Poly::host: empty polynomial");
    if (first > p.limbs()) throw std::invalid_argument("Poly::host: first limb " + std::to_string(first) + " of " + std::to_string(p.limbs()));
    count_ = std::min(count, p.limbs() - first);
    n_ = p.n();
    backend_ = &p.ring().backend();
    device_ = const_cast<u64*>(p.limb(first));
    if (backend_->host_addressable()) {
        base_ = device_;
        return;
    }
    staged_.resize(count_ * n_);
    if (fetch && count_) {
        trace::Scope s("download");  // host transfers show in traces: on a device they belong to setup, not to evaluation
        backend_->download(staged_.data(), device_, count_ * n_);
        if (s.on()) s.c.bytes_read = s.c.bytes_written = count_ * n_ * sizeof(u64);
    }
    base_ = staged_.data();
}

HostLimbs::HostLimbs(HostLimbs&& o) noexcept
    : backend_(o.backend_), device_(o.device_), base_(o.base_), staged_(std::move(o.staged_)), count_(o.count_), n_(o.n_),
      writable_(o.writable_), secret_(o.secret_) {
    if (!staged_.empty()) base_ = staged_.data();
    o.count_ = 0;
    o.base_ = o.device_ = nullptr;
}

HostLimbs::~HostLimbs() {
    if (secret_ && !staged_.empty()) OPENSSL_cleanse(staged_.data(), staged_.size() * sizeof(u64));
}

void HostLimbs::commit() {
    if (!writable_) throw std::logic_error("HostLimbs::commit: read-only host view of a const polynomial");
    if (base_ != device_ && count_) {
        trace::Scope s("upload");
        backend_->upload(device_, base_, count_ * n_);
        if (s.on()) s.c.bytes_read = s.c.bytes_written = count_ * n_ * sizeof(u64);
    }
}

std::vector<LimbRef> Poly::refs(std::size_t first, std::size_t count) {
    count = std::min(count, limbs() - first);
    std::vector<LimbRef> r;
    r.reserve(count);
    for (std::size_t i = first; i < first + count; ++i) r.push_back({limb(i), &table(i)});
    return r;
}

std::vector<const u64*> Poly::crefs(std::size_t first, std::size_t count) const {
    count = std::min(count, limbs() - first);
    std::vector<const u64*> r;
    r.reserve(count);
    for (std::size_t i = first; i < first + count; ++i) r.push_back(limb(i));
    return r;
}

void Poly::drop_to(std::size_t q_limbs) {
    if (basis_ != Basis::Q) throw std::invalid_argument("Poly::drop_to: only for basis Q");
    if (q_limbs == 0 || q_limbs > q_limbs_)
        throw std::invalid_argument("Poly::drop_to: target " + std::to_string(q_limbs) + " limbs, have " + std::to_string(q_limbs_));
    q_limbs_ = q_limbs;
}

std::string Poly::describe() const {
    if (!ring_) return "empty poly";
    return std::to_string(q_limbs_) + " Q limbs" + (basis_ == Basis::QP ? " + " + std::to_string(p_limbs()) + " P limbs" : "") +
           (form_ == Form::Eval ? ", evaluation form" : ", coefficient form");
}

namespace {
void check_pair(const char* op, const Poly& a, const Poly& b) {
    if (a.empty() || b.empty()) throw std::invalid_argument(std::string(op) + ": empty operand");
    if (!a.same_shape(b))
        throw std::invalid_argument(std::string(op) + ": operands differ (" + a.describe() + " vs " + b.describe() + ")");
    if (a.form() != b.form())
        throw std::invalid_argument(std::string(op) + ": operands in different forms (" + a.describe() + " vs " + b.describe() + ")");
}
void shape_like(Poly& out, const Poly& a) {
    if (&out == &a) return;
    if (out.empty() || !out.same_shape(a)) out = Poly::uninitialized(a.ring_ptr(), a.q_limbs(), a.basis(), a.form());
    out.set_form(a.form());
}
void need_eval(const char* op, const Poly& a) {
    if (a.form() != Form::Eval) throw std::invalid_argument(std::string(op) + ": operand must be in evaluation form (" + a.describe() + ")");
}
}  // namespace

void poly_add(Poly& out, const Poly& a, const Poly& b) {
    check_pair("add", a, b);
    shape_like(out, a);
    out.ring().backend().add(out.refs(), a.crefs(), b.crefs());
}
void poly_sub(Poly& out, const Poly& a, const Poly& b) {
    check_pair("sub", a, b);
    shape_like(out, a);
    out.ring().backend().sub(out.refs(), a.crefs(), b.crefs());
}
void poly_neg(Poly& out, const Poly& a) {
    shape_like(out, a);
    out.ring().backend().neg(out.refs(), a.crefs());
}
void poly_mul(Poly& out, const Poly& a, const Poly& b) {
    check_pair("mul", a, b);
    need_eval("mul", a);
    shape_like(out, a);
    out.ring().backend().mul(out.refs(), a.crefs(), b.crefs());
}
void poly_mul_add(Poly& acc, const Poly& a, const Poly& b) {
    check_pair("mul_add", a, b);
    check_pair("mul_add", acc, a);
    need_eval("mul_add", a);
    acc.ring().backend().mul_add(acc.refs(), a.crefs(), b.crefs());
}
namespace {
/// The limbs of every term, each term checked against the first operand (same shape and form, evaluation form).
std::vector<std::vector<const u64*>> term_limbs(const char* op, const Poly& x, const std::vector<const Poly*>& terms) {
    need_eval(op, x);
    std::vector<std::vector<const u64*>> r;
    r.reserve(terms.size());
    for (const Poly* p : terms) {
        check_pair(op, x, *p);
        r.push_back(p->crefs());
    }
    return r;
}
Poly like_eval(const Poly& x) { return Poly::uninitialized(x.ring_ptr(), x.q_limbs(), x.basis(), Form::Eval); }
}  // namespace

Poly poly_dot(const std::vector<const Poly*>& a, const std::vector<const Poly*>& b) {
    if (a.empty() || a.size() != b.size()) throw std::invalid_argument("dot: need the same positive number of terms on both sides");
    const Poly& x = *a[0];
    const auto ta = term_limbs("dot", x, a), tb = term_limbs("dot", x, b);
    Poly r = like_eval(x);
    x.ring().backend().dot(r.refs(), ta, tb);
    return r;
}

std::pair<Poly, Poly> poly_dot2(const std::vector<const Poly*>& a, const std::vector<const Poly*>& b0, const std::vector<const Poly*>& b1) {
    if (a.empty() || a.size() != b0.size() || a.size() != b1.size())
        throw std::invalid_argument("dot2: need the same positive number of terms in a, b0 and b1");
    const Poly& x = *a[0];
    const auto ta = term_limbs("dot2", x, a), tb0 = term_limbs("dot2", x, b0), tb1 = term_limbs("dot2", x, b1);
    std::pair<Poly, Poly> r{like_eval(x), like_eval(x)};
    x.ring().backend().dot2(r.first.refs(), r.second.refs(), ta, tb0, tb1);
    return r;
}
void poly_mul_const(Poly& out, const Poly& a, const std::vector<u64>& c_res) {
    if (c_res.size() != a.limbs()) throw std::invalid_argument("mul_const: need one residue per limb");
    shape_like(out, a);
    std::vector<MulConst> c;
    c.reserve(c_res.size());
    for (std::size_t i = 0; i < c_res.size(); ++i) c.emplace_back(c_res[i], a.table(i).mod);
    out.ring().backend().mul_const(out.refs(), a.crefs(), c, false);
}
void poly_to_eval(Poly& a) {
    if (a.form() == Form::Eval) return;
    a.ring().backend().ntt_forward(a.refs());
    a.set_form(Form::Eval);
}
void poly_to_coeff(Poly& a) {
    if (a.form() == Form::Coeff) return;
    a.ring().backend().ntt_inverse(a.refs());
    a.set_form(Form::Coeff);
}
void poly_automorph(Poly& out, const Poly& a, std::uint64_t k) {
    need_eval("automorph", a);
    if (&out == &a) throw std::invalid_argument("automorph: output must not alias the input");
    shape_like(out, a);
    out.ring().backend().permute(out.refs(), a.crefs(), k, a.ring().automorphism_perm(k).data());
}
Poly restrict_to(const Poly& p, std::size_t q_limbs) {
    if (q_limbs == 0 || q_limbs > p.q_limbs())
        throw std::invalid_argument("restrict: " + std::to_string(q_limbs) + " Q limbs asked of " + p.describe());
    Poly out = p.secret() ? Poly(p.ring_ptr(), q_limbs, p.basis(), p.form(), true) : Poly::uninitialized(p.ring_ptr(), q_limbs, p.basis(), p.form());
    std::vector<const u64*> src = p.crefs(0, q_limbs);
    for (std::size_t j = 0; j < p.p_limbs(); ++j) src.push_back(p.limb(p.q_limbs() + j));
    p.ring().backend().copy(out.refs(), src);
    return out;
}

std::vector<u64> residues_of(const Poly& p, std::int64_t v) {
    std::vector<u64> r(p.limbs());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = p.table(i).mod.from_signed(v);
    return r;
}

}  // namespace ember
