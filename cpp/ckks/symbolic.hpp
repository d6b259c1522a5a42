// Placeholders for symbolic runs (a Context on the null backend, backend/null/): ciphertexts and keys with
// the shapes of real ones and no contents, so a program runs through the evaluator and the C++ circuits
// unchanged and graph capture records its exact operations without encryption, keys or arithmetic.
#pragma once

#include <memory>
#include <vector>

#include "ckks/context.hpp"

namespace ember {

/// A context on the symbolic backend (same parameters, tables and scales; kernels do nothing).
std::shared_ptr<Context> make_symbolic_context(CkksParams params);
/// A ciphertext of the given level, scale and slots (checked against the context), holding nothing.
Ciphertext placeholder_ciphertext(const Context& ctx, std::size_t level, double scale, std::size_t slots);
/// Key-shaped placeholders. On a context that holds data they are not keys: refused.
std::shared_ptr<SecretKey> placeholder_secret_key(const Context& ctx);
std::shared_ptr<SwitchingKey> placeholder_switching_key(const Context& ctx);
std::shared_ptr<GaloisKeys> placeholder_galois_keys(const Context& ctx, const std::vector<long>& rotations, bool conjugation);

}  // namespace ember
