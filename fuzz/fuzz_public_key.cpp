// libFuzzer target: public_key_from_bytes, then the key encrypts, and the ciphertext is used.
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(PublicKey, public_key_from_bytes, to_bytes) {
    Ciphertext c;
    if (fuzz::attempt([&] { c = ctx.encrypt(ctx.encode(w.x), obj); })) fuzz::use_ciphertext(w, c);
}
