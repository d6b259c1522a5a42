#include "ckks/symbolic.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember {

namespace {
void require_symbolic(const Context& ctx, const char* what) {
    if (ctx.ring()->backend().holds_data())
        throw std::invalid_argument(std::string(what) + ": placeholders exist only on a symbolic context");
}
}  // namespace

std::shared_ptr<Context> make_symbolic_context(CkksParams params) { return std::make_shared<Context>(std::move(params), 1, make_null_backend()); }

Ciphertext placeholder_ciphertext(const Context& ctx, std::size_t level, double scale, std::size_t slots) {
    require_symbolic(ctx, "placeholder ciphertext");
    if (level > ctx.max_level()) throw std::invalid_argument("placeholder: level " + std::to_string(level) + " above the top level " + std::to_string(ctx.max_level()));
    if (!(scale > 0) || !std::isfinite(scale)) throw std::invalid_argument("placeholder: scale must be a positive finite number");
    if (slots == 0 || (slots & (slots - 1)) || slots > ctx.slots())
        throw std::invalid_argument("placeholder: slots must be a power of two in [1, " + std::to_string(ctx.slots()) + "], got " + std::to_string(slots));
    Ciphertext c;
    c.c0 = Poly::uninitialized(ctx.ring(), level + 1, Basis::Q, Form::Eval);
    c.c1 = Poly::uninitialized(ctx.ring(), level + 1, Basis::Q, Form::Eval);
    c.scale = scale;
    c.slots = slots;
    return c;
}

std::shared_ptr<SecretKey> placeholder_secret_key(const Context& ctx) {
    require_symbolic(ctx, "placeholder secret key");
    auto sk = std::make_shared<SecretKey>();
    sk->s = Poly::uninitialized(ctx.ring(), ctx.params().q_primes.size(), Basis::QP, Form::Eval);
    return sk;
}

std::shared_ptr<SwitchingKey> placeholder_switching_key(const Context& ctx) {
    require_symbolic(ctx, "placeholder key");
    auto k = std::make_shared<SwitchingKey>();
    const std::size_t ql = ctx.params().q_primes.size();
    for (std::size_t j = 0; j < ctx.partition().size(); ++j) {
        k->b.push_back(Poly::uninitialized(ctx.ring(), ql, Basis::QP, Form::Eval));
        k->a.push_back(Poly::uninitialized(ctx.ring(), ql, Basis::QP, Form::Eval));
    }
    return k;
}

std::shared_ptr<GaloisKeys> placeholder_galois_keys(const Context& ctx, const std::vector<long>& rotations, bool conjugation) {
    require_symbolic(ctx, "placeholder keys");
    auto g = std::make_shared<GaloisKeys>();
    for (long r : rotations) g->keys.emplace(ctx.galois_element(r), *placeholder_switching_key(ctx));
    if (conjugation) g->keys.emplace(ctx.conjugation_element(), *placeholder_switching_key(ctx));
    return g;
}

}  // namespace ember
