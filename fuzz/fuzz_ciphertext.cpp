// libFuzzer target: ciphertext_from_bytes, then the accepted ciphertext is used (fuzz_common.hpp).
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fuzz::World& w = fuzz::world();
    Ciphertext c;
    if (!fuzz::attempt([&] { c = ciphertext_from_bytes(*w.ctx, fuzz::as_span(data, size)); })) return 0;
    fuzz::use_ciphertext(w, c);
    return 0;
}
