// Writes the seed corpora of the fuzz targets: valid small-N objects, one directory per target under the
// directory given as the only argument (fuzz/README.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "boot_world.hpp"
#include "fuzz_common.hpp"

using namespace ember;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& dir, const std::string& name, const std::vector<std::uint8_t>& b) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<std::uint8_t> framed(int what, std::uint64_t element, std::vector<std::uint8_t> b) {
    b.insert(b.begin(), {static_cast<std::uint8_t>(what), static_cast<std::uint8_t>(element & 0xff), static_cast<std::uint8_t>(element >> 8)});
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    const fs::path out = argv[1];
    const fuzz::World& w = fuzz::world();
    const Context& ctx = *w.ctx;
    const Evaluator& ev = w.ev;
    // Ciphertexts: top level, after a product (rescaled, lower level), sparse slots, a coefficient-form one.
    write(out / "ciphertext", "top", to_bytes(ctx, w.ct));
    write(out / "ciphertext", "product", to_bytes(ctx, ev.mul(w.ct, w.ct, *w.keys.relin)));
    write(out / "ciphertext", "level0", to_bytes(ctx, ev.drop_to_level(w.ct, 0)));
    std::vector<cplx> two(2, cplx(0.5, 0));
    write(out / "ciphertext", "sparse", to_bytes(ctx, ctx.encrypt(ctx.encode(two), *w.keys.secret)));
    // The other encoding (packed coefficients) and format version 1 (no encoding bytes, SHA-256).
    write(out / "ciphertext", "top_packed", to_bytes(ctx, w.ct, WriteOptions{Coefficients::Packed}));
    write(out / "ciphertext", "top_v1", to_bytes(ctx, w.ct, WriteOptions{Coefficients::Default, 1}));
    write(out / "plaintext", "top", to_bytes(ctx, ctx.encode(w.x)));
    write(out / "plaintext", "level0", to_bytes(ctx, ctx.encode(w.x, ctx.scale_at(0), 0)));
    write(out / "public_key", "pk", to_bytes(ctx, *w.keys.pub));
    write(out / "public_key", "pk_words", to_bytes(ctx, *w.keys.pub, WriteOptions{Coefficients::Words}));
    write(out / "switching_key", "relin_v1", to_bytes(ctx, *w.keys.relin, WriteOptions{Coefficients::Default, 1}));
    write(out / "switching_key", "relin_seeded", to_bytes(ctx, *w.keys.relin));
    write(out / "switching_key", "relin_unseeded", to_bytes(ctx, *ctx.gen_relin_key(*w.keys.secret, /*seeded=*/false)));
    write(out / "galois_keys", "rot_conj_seeded", to_bytes(ctx, *w.keys.galois));
    write(out / "galois_keys", "rot_unseeded", to_bytes(ctx, *ctx.gen_galois_keys(*w.keys.secret, {1}, false, /*seeded=*/false)));
    write(out / "galois_keys", "empty", to_bytes(ctx, GaloisKeys{}));
    write(out / "secret_key", "sk", secret_key_to_bytes(ctx, *w.keys.secret));

    const fuzz::BootWorld& b = fuzz::boot_world();
    const Context& bc = *b.ctx;
    const fs::path bd = out / "bootstrap_keys";
    write(bd, "relin", framed(0, 0, to_bytes(bc, *b.keys.relin)));
    write(bd, "from_sparse", framed(1, 0, to_bytes(bc, *b.keys.from_sparse)));
    for (const auto& [e, key] : b.keys.galois->keys) write(bd, "galois-" + std::to_string(e), framed(2, e, to_bytes(bc, key)));
    for (std::size_t i = 0; i < b.keys.to_sparse->parts.size(); ++i) {
        Ciphertext part{b.keys.to_sparse->parts[i].first, b.keys.to_sparse->parts[i].second, 1.0, bc.slots()};
        part.key_id = b.keys.to_sparse->key_id;
        write(bd, "to_sparse-" + std::to_string(i), framed(3, i, to_bytes(bc, part)));
    }
    std::printf("seed corpora written under %s\n", out.c_str());
    return 0;
}
