#include "circuits/bootstrap_keys_io.hpp"

#include <memory>
#include <stdexcept>
#include <string>

namespace ember {

void read_bootstrap_key(BootstrapKeys& keys, const Context& ctx, std::string_view what, std::span<const std::uint8_t> bytes,
                        std::uint64_t element, const ReadOptions& opt) {
    std::shared_ptr<SwitchingKey>* slot = nullptr;
    if (what == "relin") slot = &keys.relin;
    else if (what == "from_sparse") slot = &keys.from_sparse;
    else if (what != "galois") throw std::invalid_argument("unknown bootstrapping key " + std::string(what) + " (relin, galois or from_sparse)");
    if (!slot) {
        const std::uint64_t two_n = 2 * ctx.params().n();
        if (element % 2 == 0 || element >= two_n)
            throw std::invalid_argument("Galois element must be odd and below 2N = " + std::to_string(two_n) + ", got " + std::to_string(element));
    }
    auto key = std::make_shared<SwitchingKey>(switching_key_from_bytes(ctx, bytes, opt));
    if (slot) {
        *slot = std::move(key);
        return;
    }
    if (!keys.galois) {
        keys.galois = std::make_shared<GaloisKeys>();
        keys.galois->key_id = key->key_id;
    } else if (key->key_id != keys.galois->key_id) {
        throw std::invalid_argument("the Galois key of element " + std::to_string(element) + " belongs to another key set than the others");
    }
    keys.galois->keys.insert_or_assign(element, std::move(*key));
}

Ciphertext read_encapsulation_part(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    Ciphertext c = ciphertext_from_bytes(ctx, bytes, opt);
    if (c.level() != 0) throw std::invalid_argument("encapsulation key parts must be at level 0, got level " + std::to_string(c.level()));
    if (c.c0.form() != Form::Eval) throw std::invalid_argument("encapsulation key parts must be in evaluation form");
    return c;
}

void set_encapsulation_part(DigitSwitchingKey& key, std::size_t i, Ciphertext part) {
    if (i > key.parts.size()) throw std::invalid_argument("encapsulation key part " + std::to_string(i) + " of " + std::to_string(key.parts.size()));
    const bool alone = key.parts.empty() || (key.parts.size() == 1 && i == 0);
    if (alone) key.key_id = part.key_id;
    else if (part.key_id != key.key_id) throw std::invalid_argument("encapsulation key parts belong to different key sets");
    if (i == key.parts.size()) key.parts.emplace_back(std::move(part.c0), std::move(part.c1));
    else key.parts[i] = {std::move(part.c0), std::move(part.c1)};
}

}  // namespace ember
