// libFuzzer target: secret_key_from_bytes, then the key decrypts (plain, flooded, noise measurement) and
// generates public and relinearization keys that are used.
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(SecretKey, secret_key_from_bytes, secret_key_to_bytes) {
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ct, obj)); });
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ct, obj, DecryptionFlooding{4, 20, 1})); });
    fuzz::attempt([&] { (void)ctx.decryption_noise_bits(w.ct, obj); });
    fuzz::attempt([&] {
        const auto pk = ctx.gen_public_key(obj);
        const auto rlk = ctx.gen_relin_key(obj);
        const Ciphertext c = ctx.encrypt(ctx.encode(w.x), *pk);
        fuzz::consume(ctx.decrypt(w.ev.mul(c, c, *rlk), obj));
    });
}
