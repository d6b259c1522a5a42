// libFuzzer target: secret_key_from_bytes, then the key decrypts (plain, flooded, noise measurement) and
// generates public and relinearization keys that are used.
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    std::shared_ptr<SecretKey> sk = std::make_shared<SecretKey>();
    if (!fuzz::attempt([&] { *sk = secret_key_from_bytes(ctx, fuzz::as_span(data, size)); })) return 0;
    (void)secret_key_from_bytes(ctx, secret_key_to_bytes(ctx, *sk));
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ct, *sk)); });
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ct, *sk, DecryptionFlooding{4, 20, 1})); });
    fuzz::attempt([&] { (void)ctx.decryption_noise_bits(w.ct, *sk); });
    fuzz::attempt([&] {
        const auto pk = ctx.gen_public_key(*sk);
        const auto rlk = ctx.gen_relin_key(*sk);
        const Ciphertext c = ctx.encrypt(ctx.encode(w.x), *pk);
        fuzz::consume(ctx.decrypt(w.ev.mul(c, c, *rlk), *sk));
    });
    return 0;
}
