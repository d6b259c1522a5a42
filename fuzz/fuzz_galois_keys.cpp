// libFuzzer target: galois_keys_from_bytes, then every key applies its automorphism, and the set rotates
// and conjugates.
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    GaloisKeys gk;
    if (!fuzz::attempt([&] { gk = galois_keys_from_bytes(ctx, fuzz::as_span(data, size)); })) return 0;
    (void)galois_keys_from_bytes(ctx, to_bytes(ctx, gk));
    for (const auto& kv : gk.keys) fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.ev.automorphism(w.ct, kv.first, kv.second), *w.keys.secret)); });
    fuzz::attempt([&] { (void)w.ev.rotate(w.ct, 1, gk); });
    fuzz::attempt([&] { (void)w.ev.rotate_many(w.ct, {1, -2}, gk); });
    fuzz::attempt([&] { (void)w.ev.conjugate(w.ct, gk); });
    return 0;
}
