// Bootstrapping keys read one at a time from bytes (the files Context.save_bootstrap_keys writes): the
// checks of io/serialize plus those of each key's role (its Galois element, the encapsulation parts at
// level 0 in evaluation form). Shared by the Python bindings and the fuzz target fuzz/fuzz_bootstrap_keys.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "circuits/bootstrap.hpp"
#include "io/serialize.hpp"

namespace ember {

/// Reads one switching key into `keys`: what = "relin", "from_sparse" or "galois" (with its odd Galois
/// element below 2N). Throws std::invalid_argument on anything malformed.
void read_bootstrap_key(BootstrapKeys& keys, const Context& ctx, std::string_view what, std::span<const std::uint8_t> bytes,
                        std::uint64_t element = 0, const ReadOptions& opt = {});

/// One part (b_i, a_i) of the encapsulation key s -> s', written as a ciphertext: checked to be at level 0
/// in evaluation form.
Ciphertext read_encapsulation_part(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});

/// Puts `part` at index i of the digit key (i == parts: appended), refusing a part of another key set.
void set_encapsulation_part(DigitSwitchingKey& key, std::size_t i, Ciphertext part);

}  // namespace ember
