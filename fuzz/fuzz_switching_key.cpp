// libFuzzer target: switching_key_from_bytes, then the key relinearizes a product and switches the key of
// an automorphism.
#include "fuzz_common.hpp"

using namespace ember;

EMBER_FUZZ_READER(SwitchingKey, switching_key_from_bytes, to_bytes) {
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.mul(w.ct, w.ct, obj), *w.keys.secret)); });
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.automorphism(w.ct, 5, obj), *w.keys.secret)); });
    fuzz::attempt([&] { (void)w.ev.key_switch(w.ct.c1, obj); });
}
