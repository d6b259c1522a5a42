// libFuzzer target: switching_key_from_bytes, then the key relinearizes a product and switches the key of
// an automorphism.
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    SwitchingKey key;
    if (!fuzz::attempt([&] { key = switching_key_from_bytes(ctx, fuzz::as_span(data, size)); })) return 0;
    (void)switching_key_from_bytes(ctx, to_bytes(ctx, key));
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.mul(w.ct, w.ct, key), *w.keys.secret)); });
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.automorphism(w.ct, 5, key), *w.keys.secret)); });
    fuzz::attempt([&] { (void)w.ev.key_switch(w.ct.c1, key); });
    return 0;
}
