// libFuzzer target: plaintext_from_bytes, then the plaintext is decoded, written back, added to and
// multiplied into a ciphertext, encrypted and decrypted.
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(Plaintext, plaintext_from_bytes, to_bytes) {
    fuzz::attempt([&] { fuzz::consume(ctx.decode(obj)); });
    fuzz::attempt([&] { (void)w.ev.add_plain(w.ct, obj); });
    fuzz::attempt([&] { (void)w.ev.mul_plain(w.ct, obj); });
    fuzz::attempt([&] { fuzz::use_ciphertext(w, ctx.encrypt(obj, *w.keys.pub)); });
}
