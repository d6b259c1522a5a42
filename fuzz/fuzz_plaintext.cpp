// libFuzzer target: plaintext_from_bytes, then the plaintext is decoded, written back, added to and
// multiplied into a ciphertext, encrypted and decrypted.
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    Plaintext pt;
    if (!fuzz::attempt([&] { pt = plaintext_from_bytes(ctx, fuzz::as_span(data, size)); })) return 0;
    (void)plaintext_from_bytes(ctx, to_bytes(ctx, pt));
    fuzz::attempt([&] { fuzz::consume(ctx.decode(pt)); });
    fuzz::attempt([&] { (void)w.ev.add_plain(w.ct, pt); });
    fuzz::attempt([&] { (void)w.ev.mul_plain(w.ct, pt); });
    fuzz::attempt([&] { fuzz::use_ciphertext(w, ctx.encrypt(pt, *w.keys.pub)); });
    return 0;
}
