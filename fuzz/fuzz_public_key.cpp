// libFuzzer target: public_key_from_bytes, then the key encrypts, and the ciphertext is used.
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    PublicKey pk;
    if (!fuzz::attempt([&] { pk = public_key_from_bytes(ctx, fuzz::as_span(data, size)); })) return 0;
    (void)public_key_from_bytes(ctx, to_bytes(ctx, pk));
    Ciphertext c;
    if (fuzz::attempt([&] { c = ctx.encrypt(ctx.encode(w.x), pk); })) fuzz::use_ciphertext(w, c);
    return 0;
}
