// libFuzzer target: one bootstrapping key file (format in boot_world.hpp) read as Context.load_bootstrap_keys
// reads it (read_bootstrap_key / read_encapsulation_part), put in place of its counterpart in a valid key
// set; the set then bootstraps a ciphertext.
#include "boot_world.hpp"
#include "circuits/bootstrap_keys_io.hpp"
#include "fuzz_common.hpp"

using namespace ember;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    const fuzz::BootWorld& w = fuzz::boot_world();
    const Context& ctx = *w.ctx;
    const int what = data[0] % 4;
    const std::uint64_t element = data[1] | (std::uint64_t(data[2]) << 8);
    const auto bytes = fuzz::as_span(data + 3, size - 3);
    BootstrapKeys keys = w.keys;  // shares every key (shared_ptr); the one replaced is copied first
    if (what == 2) keys.galois = std::make_shared<GaloisKeys>(*w.keys.galois);
    const bool ok = fuzz::attempt([&] {
        if (what == 0) read_bootstrap_key(keys, ctx, "relin", bytes);
        else if (what == 1) read_bootstrap_key(keys, ctx, "from_sparse", bytes);
        else if (what == 2) read_bootstrap_key(keys, ctx, "galois", bytes, element);
        else {
            auto key = std::make_shared<DigitSwitchingKey>(*w.keys.to_sparse);
            const std::size_t i = std::min<std::size_t>(element % 256, key->parts.size());
            set_encapsulation_part(*key, i, read_encapsulation_part(ctx, bytes));
            if (element >= 256) key->parts.resize(i + 1);
            keys.to_sparse = std::move(key);
        }
    });
    if (!ok) return 0;
    fuzz::attempt([&] { fuzz::consume(ctx.decrypt(w.bt->bootstrap(w.ct, keys), *w.sk)); });
    return 0;
}
