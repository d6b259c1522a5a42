#include "ring/key_switch.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

namespace ember {

std::vector<DigitRange> digit_partition(std::size_t q_count, std::size_t dnum) {
    if (dnum == 0 || dnum > q_count)
        throw std::invalid_argument("digit_partition: dnum must be in [1, " + std::to_string(q_count) + "], got " + std::to_string(dnum));
    const std::size_t alpha = (q_count + dnum - 1) / dnum;
    std::vector<DigitRange> out;
    for (std::size_t j = 0; j < dnum; ++j) {
        const std::size_t last = q_count - std::min(q_count, j * alpha);
        const std::size_t first = q_count - std::min(q_count, (j + 1) * alpha);
        if (last > first) out.emplace_back(first, last);
    }
    return out;
}

namespace {

// Scratch limbs over arbitrary primes (a Poly holds a prefix of Q plus maybe P; the dropped set of a
// ModDown, e.g. {q_l} U P, is not such a shape).
struct Scratch {
    const RingContext& ring;
    std::vector<std::uint32_t> primes;
    u64* data = nullptr;
    Scratch(const RingContext& r, std::vector<std::uint32_t> p) : ring(r), primes(std::move(p)) {
        data = ring.backend().allocate(primes.size() * ring.n(), false);
    }
    ~Scratch() { ring.backend().release(data, primes.size() * ring.n(), false); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    u64* limb(std::size_t i) { return data + i * ring.n(); }
    std::vector<LimbRef> refs() {
        std::vector<LimbRef> r;
        for (std::size_t i = 0; i < primes.size(); ++i) r.push_back({limb(i), &ring.table(primes[i])});
        return r;
    }
    std::vector<const u64*> crefs() {
        std::vector<const u64*> r;
        for (std::size_t i = 0; i < primes.size(); ++i) r.push_back(limb(i));
        return r;
    }
};

}  // namespace

namespace {
std::atomic<bool> g_limb_fusion{true};
}  // namespace

void set_limb_fusion(bool on) { g_limb_fusion.store(on, std::memory_order_relaxed); }
bool limb_fusion() { return g_limb_fusion.load(std::memory_order_relaxed); }

std::vector<Poly> mod_up_digits(const Poly& c, const std::vector<DigitRange>& partition) {
    if (c.basis() != Basis::Q) throw std::invalid_argument("ModUp: input must be over Q, got " + c.describe());
    if (c.form() != Form::Eval) throw std::invalid_argument("ModUp: input must be in evaluation form");
    const RingContext& ring = c.ring();
    Backend& be = ring.backend();
    const std::size_t ql = c.q_limbs();
    const std::size_t k = ring.p_count();

    // Coefficient form of every limb, once for all digits; with limb fusion (MAD's per-limb caching) each
    // limb is copied and transformed in one pass instead of a copy of the whole polynomial then an iNTT.
    Poly cc;
    if (limb_fusion()) {
        cc = Poly::uninitialized(c.ring_ptr(), ql, Basis::Q, Form::Coeff);
        be.ntt_inverse_from(cc.refs(), c.crefs());
    } else {
        cc = c;
        poly_to_coeff(cc);
    }

    std::vector<Poly> out;
    for (auto [first, last_full] : partition) {
        const std::size_t last = std::min(last_full, ql);
        if (first >= last) continue;
        Poly d = Poly::uninitialized(c.ring_ptr(), ql, Basis::QP, Form::Eval);
        // The digit's own limbs are already known in evaluation form.
        std::vector<LimbRef> own;
        std::vector<const u64*> own_src, conv_in;
        for (std::size_t i = first; i < last; ++i) {
            own.push_back({d.limb(i), &d.table(i)});
            own_src.push_back(c.limb(i));
            conv_in.push_back(cc.limb(i));
        }
        be.copy(own, own_src);
        // NewLimb for every other prime of Q_l U P, then NTT.
        std::vector<std::uint32_t> from, to;
        std::vector<u64*> conv_out;
        std::vector<LimbRef> new_limbs;
        for (std::size_t i = first; i < last; ++i) from.push_back(static_cast<std::uint32_t>(i));
        for (std::size_t i = 0; i < ql + k; ++i) {
            if (i >= first && i < last) continue;
            to.push_back(d.prime_index(i));
            conv_out.push_back(d.limb(i));
            new_limbs.push_back({d.limb(i), &d.table(i)});
        }
        be.base_convert(ring.converter(from, to), conv_in, conv_out, ring.n(), /*centered=*/false);
        be.ntt_forward(new_limbs);
        out.push_back(std::move(d));
    }
    return out;
}

void ksk_inner_product(const std::vector<Poly>& digits, const SwitchingKey& key, Poly& u, Poly& v) {
    if (digits.empty()) throw std::invalid_argument("KSKInnerProd: no digits");
    if (digits.size() > key.digits())
        throw std::invalid_argument("KSKInnerProd: " + std::to_string(digits.size()) + " digits but the key has " + std::to_string(key.digits()));
    if (key.a.size() != key.b.size()) throw std::invalid_argument("KSKInnerProd: key is not expanded");
    const Poly& d0 = digits[0];
    const std::size_t ql = d0.q_limbs(), k = d0.p_limbs();
    const RingContext& ring = d0.ring();
    if (key.b[0].q_limbs() < ql) throw std::invalid_argument("KSKInnerProd: key has fewer Q limbs than the operand");
    u = Poly::uninitialized(d0.ring_ptr(), ql, Basis::QP, Form::Eval);
    v = Poly::uninitialized(d0.ring_ptr(), ql, Basis::QP, Form::Eval);
    // Key limbs used at this level: Q limbs 0..ql-1 and all P limbs.
    auto key_limbs = [&](const Poly& kp) {
        std::vector<const u64*> r;
        for (std::size_t i = 0; i < ql; ++i) r.push_back(kp.limb(i));
        for (std::size_t j = 0; j < k; ++j) r.push_back(kp.limb(kp.q_limbs() + j));
        return r;
    };
    // The digits of a level-l operand are the last ones of the key's partition (digits are cut from the top).
    const std::size_t offset = key.digits() - digits.size();
    std::vector<std::vector<const u64*>> dl, kb, ka;
    for (std::size_t j = 0; j < digits.size(); ++j) {
        if (!digits[j].same_shape(d0)) throw std::invalid_argument("KSKInnerProd: digits differ in shape");
        dl.push_back(digits[j].crefs());
        kb.push_back(key_limbs(key.b[offset + j]));
        ka.push_back(key_limbs(key.a[offset + j]));
    }
    if (digits[0].form() != Form::Eval) throw std::invalid_argument("KSKInnerProd: digits must be in evaluation form");
    ring.backend().dot2(u.refs(), v.refs(), dl, kb, ka);  // the digits read once for both halves
}

Poly divide_by_dropped(const Poly& x, std::size_t drop_q) {
    const RingContext& ring = x.ring();
    Backend& be = ring.backend();
    const std::size_t ql = x.q_limbs();
    if (drop_q >= ql) throw std::invalid_argument("ModDown/Rescale: cannot drop " + std::to_string(drop_q) + " of " + std::to_string(ql) + " Q limbs");
    const std::size_t kept = ql - drop_q;
    // Dropped limbs (indices within x) and their primes.
    std::vector<std::size_t> dropped;
    for (std::size_t i = kept; i < x.limbs(); ++i) dropped.push_back(i);
    if (dropped.empty()) throw std::invalid_argument("ModDown/Rescale: nothing to divide by");
    std::vector<std::uint32_t> dprimes, kprimes;
    for (auto i : dropped) dprimes.push_back(x.prime_index(i));
    for (std::size_t i = 0; i < kept; ++i) kprimes.push_back(static_cast<std::uint32_t>(i));

    Scratch d(ring, dprimes);
    {
        std::vector<const u64*> src;
        for (auto i : dropped) src.push_back(x.limb(i));
        if (x.form() == Form::Eval && limb_fusion()) {
            be.ntt_inverse_from(d.refs(), src);  // each limb copied and transformed in one pass, as in ModUp
        } else {
            be.copy(d.refs(), src);
            if (x.form() == Form::Eval) be.ntt_inverse(d.refs());
        }
    }
    Poly out = Poly::uninitialized(x.ring_ptr(), kept, Basis::Q, x.form());
    // conv = NewLimb(dropped -> kept), into out's limbs, then to x's form.
    {
        std::vector<u64*> dst;
        for (std::size_t i = 0; i < kept; ++i) dst.push_back(out.limb(i));
        be.base_convert(ring.converter(dprimes, kprimes), d.crefs(), dst, ring.n(), /*centered=*/true);
        if (x.form() == Form::Eval) be.ntt_forward(out.refs());
    }
    // out_i = (x_i - conv_i) * D^-1 mod q_i
    std::vector<MulConst> dinv;
    for (std::size_t i = 0; i < kept; ++i) {
        const Modulus& qi = ring.mod(i);
        u64 prod = 1;
        for (auto p : dprimes) prod = qi.mul(prod, ring.mod(p).q % qi.q);
        dinv.emplace_back(qi.inv(prod), qi);
    }
    be.sub_mul_const(out.refs(), x.crefs(0, kept), out.crefs(), dinv);
    return out;
}

namespace {
std::vector<MulConst> p_mod_q(const RingContext& ring, std::size_t q_limbs) {
    std::vector<MulConst> pm;
    for (std::size_t i = 0; i < q_limbs; ++i) {
        const Modulus& qi = ring.mod(i);
        u64 prod = 1;
        for (std::size_t j = 0; j < ring.p_count(); ++j) prod = qi.mul(prod, ring.mod(ring.q_count() + j).q % qi.q);
        pm.emplace_back(prod, qi);
    }
    return pm;
}
}  // namespace

Poly p_mod_up(const Poly& x) {
    if (x.basis() != Basis::Q) throw std::invalid_argument("PModUp: input must be over Q");
    Poly out(x.ring_ptr(), x.q_limbs(), Basis::QP, x.form());
    x.ring().backend().mul_const(out.refs(0, x.q_limbs()), x.crefs(), p_mod_q(x.ring(), x.q_limbs()), false);
    return out;  // P limbs stay zero
}

void add_p_mod_up(Poly& acc, const Poly& x) {
    if (x.basis() != Basis::Q || acc.basis() != Basis::QP || acc.q_limbs() != x.q_limbs() || acc.form() != x.form())
        throw std::invalid_argument("PModUp: accumulator (" + acc.describe() + ") does not match the operand (" + x.describe() + ")");
    x.ring().backend().mul_const(acc.refs(0, x.q_limbs()), x.crefs(), p_mod_q(x.ring(), x.q_limbs()), /*accumulate=*/true);
}

}  // namespace ember
