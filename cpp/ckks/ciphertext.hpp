// CKKS plaintexts and ciphertexts: polynomials over Q_l in evaluation form with their scale and the
// number of slots they pack.
//
// Identity. A plaintext or ciphertext belongs to the parameter set of its polynomials' ring (the Context
// that made them: Context::check_owned refuses another's); a ciphertext also records the key set it was
// encrypted under (key_id, the secret key's; 0 = unbound, e.g. built by hand), which decryption and every
// operation with a key or with another ciphertext check. Both survive serialisation (io/serialize.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ring/poly.hpp"

namespace ember {

struct Plaintext {
    Poly m;
    double scale = 0;
    std::size_t slots = 0;
    /// Graph capture's value id (ckks/op_record.hpp): 0 until a recorded operation sees the value; copies share it.
    mutable std::uint64_t id = 0;
    std::size_t level() const { return m.q_limbs() - 1; }
};

/// Decrypts as c0 + c1 * s.
struct Ciphertext {
    Poly c0, c1;
    double scale = 0;
    std::size_t slots = 0;
    /// Identity of the key set it was encrypted under (SecretKey::key_id); 0: unbound.
    std::uint64_t key_id = 0;
    /// Graph capture's value id (ckks/op_record.hpp): 0 until a recorded operation sees the value; copies share it.
    mutable std::uint64_t id = 0;
    std::size_t level() const { return c0.q_limbs() - 1; }
};

}  // namespace ember
