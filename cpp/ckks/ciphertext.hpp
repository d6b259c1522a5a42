// CKKS plaintexts and ciphertexts: polynomials over Q_l in evaluation form with their scale and the
// number of slots they pack.
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
    /// Graph capture's value id (ckks/op_record.hpp): 0 until a recorded operation sees the value; copies share it.
    mutable std::uint64_t id = 0;
    std::size_t level() const { return c0.q_limbs() - 1; }
};

}  // namespace ember
