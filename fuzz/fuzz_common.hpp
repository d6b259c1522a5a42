// Shared world of the libFuzzer targets (fuzz/fuzz_*.cpp): a small insecure ring (N = 2^5, two levels)
// with its keys, and the operations an accepted object goes through, so that accepted garbage cannot
// crash later. Built with clang -fsanitize=fuzzer,address,undefined and EMBER_FUZZING (the readers skip
// the checksum: the fuzzer must reach the parser, and an attacker recomputes a checksum anyway).
//
// A target returns normally when the reader refuses the input with std::invalid_argument (the exception
// the Python bindings turn into ValueError) and when an operation on an accepted object refuses it the
// same way; any other exception escapes and libFuzzer reports it as a crash, like a sanitizer report.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "io/serialize.hpp"

namespace ember::fuzz {

inline CkksParams small_params() {
    CkksParams p;
    p.log_n = 5;
    p.levels = 2;
    p.log_scale = 30;
    p.first_mod_bits = 40;
    p.dnum = 2;
    p.insecure = true;
    return p;
}

/// The key-set identity of every world's keys: fixed, so that the seeds (written by fuzz_make_seeds) belong
/// to the key set of the fuzzing process and reach the operations rather than the key-set check.
inline constexpr std::uint64_t kKeyId = 0x5eed5eed5eed5eedULL;

/// A fresh secret key with the fixed identity.
inline std::shared_ptr<SecretKey> secret_key(const Context& ctx) {
    auto sk = ctx.gen_secret_key();
    sk->key_id = kKeyId;
    return sk;
}

struct World {
    std::shared_ptr<const Context> ctx = std::make_shared<Context>(small_params(), 1);
    Evaluator ev{ctx};
    KeySet keys;
    std::vector<cplx> x;
    Ciphertext ct;  // a valid encryption of x at the top level
    World() {
        keys.secret = secret_key(*ctx);
        keys.pub = ctx->gen_public_key(*keys.secret);
        keys.relin = ctx->gen_relin_key(*keys.secret);
        keys.galois = ctx->gen_galois_keys(*keys.secret, {1, -2}, /*conjugation=*/true);
        for (std::size_t i = 0; i < ctx->slots(); ++i) x.emplace_back(0.5 - 0.1 * static_cast<double>(i % 7), 0.25);
        ct = ctx->encrypt(ctx->encode(x), *keys.pub);
    }
};

inline const World& world() {
    static const World w;
    return w;
}

inline std::span<const std::uint8_t> as_span(const std::uint8_t* data, std::size_t size) { return {data, size}; }

/// Runs f; a std::invalid_argument is a refusal (fine), anything else escapes.
template <class F>
bool attempt(F&& f) {
    try {
        f();
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

/// Defines a deserialiser target: its libFuzzer entry point reads the input with READ(ctx, bytes) (a refusal
/// ends it), checks that what was accepted is written by WRITE(ctx, obj) in a form READ accepts again, and
/// hands the object to the body that follows the macro, `{ ... }`, which sees `w` (the world), `ctx` and
/// `obj` (a `const TYPE&`) and puts it through the operations it must survive.
#define EMBER_FUZZ_READER(TYPE, READ, WRITE)                                                                           \
    static void use_accepted([[maybe_unused]] const ::ember::fuzz::World& w,                                           \
                             [[maybe_unused]] const ::ember::Context& ctx, const TYPE& obj);                           \
    extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {                                \
        const ::ember::fuzz::World& w = ::ember::fuzz::world();                                                        \
        const ::ember::Context& ctx = *w.ctx;                                                                          \
        TYPE obj;                                                                                                      \
        if (!::ember::fuzz::attempt([&] { obj = READ(ctx, ::ember::fuzz::as_span(data, size)); })) return 0;           \
        (void)READ(ctx, WRITE(ctx, obj));                                                                              \
        use_accepted(w, ctx, obj);                                                                                     \
        return 0;                                                                                                      \
    }                                                                                                                  \
    static void use_accepted([[maybe_unused]] const ::ember::fuzz::World& w,                                           \
                             [[maybe_unused]] const ::ember::Context& ctx, const TYPE& obj)

/// Touches every decoded value (so that NaN or infinity coming out of garbage is computed, not skipped).
inline void consume(const std::vector<cplx>& z) {
    volatile double s = 0;
    for (const cplx& v : z) s = s + v.real() + v.imag();
}

/// What a ciphertext accepted from bytes goes through: written and read back, decrypted, squared,
/// multiplied by a fresh ciphertext and a plaintext, rotated, conjugated, rescaled.
inline void use_ciphertext(const World& w, const Ciphertext& c) {
    const Context& ctx = *w.ctx;
    const auto bytes = to_bytes(ctx, c);
    (void)ciphertext_from_bytes(ctx, bytes);  // what the writer writes, the reader accepts
    attempt([&] { consume(ctx.decrypt(c, *w.keys.secret)); });
    attempt([&] { consume(ctx.decrypt(w.ev.mul(c, c, *w.keys.relin), *w.keys.secret)); });
    attempt([&] { (void)w.ev.mul(c, w.ct, *w.keys.relin); });
    attempt([&] { (void)w.ev.add(c, w.ct); });
    attempt([&] { (void)w.ev.mul_plain(c, ctx.encode(w.x, c.scale, c.level())); });
    attempt([&] { consume(ctx.decrypt(w.ev.rotate(c, 1, *w.keys.galois), *w.keys.secret)); });
    attempt([&] { (void)w.ev.conjugate(c, *w.keys.galois); });
    attempt([&] { (void)w.ev.rescale(c); });
}

}  // namespace ember::fuzz
