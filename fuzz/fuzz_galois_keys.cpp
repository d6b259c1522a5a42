// libFuzzer target: galois_keys_from_bytes, then every key applies its automorphism, and the set rotates
// and conjugates.
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(GaloisKeys, galois_keys_from_bytes, to_bytes) {
    for (const auto& kv : obj.keys) fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.automorphism(w.ct, kv.first, kv.second), *w.keys.secret)); });
    fuzz::attempt([&] { (void)w.ev.rotate(w.ct, 1, obj); });
    fuzz::attempt([&] { (void)w.ev.rotate_many(w.ct, {1, -2}, obj); });
    fuzz::attempt([&] { (void)w.ev.conjugate(w.ct, obj); });
}
