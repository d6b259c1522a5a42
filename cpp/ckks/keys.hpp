// Secret, public, relinearization and Galois keys (key generation is in Context, ckks/context.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "math/sampling.hpp"
#include "ring/key_switch.hpp"
#include "ring/poly.hpp"

namespace ember {

/// s over the full basis Q U P in evaluation form. Its memory is wiped when freed.
/// key_id: a random 64-bit identity drawn at key generation, shared by every key derived from s and
/// every ciphertext encrypted under it (0: unbound). It names the key set, it reveals nothing about s.
struct SecretKey {
    Poly s;
    std::uint64_t key_id = 0;
};

/// (b, a) = (-a s + e, a) over QP, evaluation form.
struct PublicKey {
    Poly b, a;
    std::uint64_t key_id = 0;  // the secret key's
};

/// Key switching keys for X -> X^k, indexed by the Galois element k.
struct GaloisKeys {
    std::map<std::uint64_t, SwitchingKey> keys;
    std::uint64_t key_id = 0;  // the secret key's (each SwitchingKey carries it too)
    const SwitchingKey* find(std::uint64_t k) const {
        auto it = keys.find(k);
        return it == keys.end() ? nullptr : &it->second;
    }
};

struct KeySet {
    std::shared_ptr<SecretKey> secret;
    std::shared_ptr<PublicKey> pub;
    std::shared_ptr<SwitchingKey> relin;      // s^2 -> s
    std::shared_ptr<GaloisKeys> galois;       // s(X^k) -> s
};

/// Uniform a over the given limbs of the ring, expanded from a seed (domain = prime index), so a
/// seeded key can store 32 bytes instead of the polynomial.
Poly expand_uniform(const std::shared_ptr<const RingContext>& ring, const Seed& seed, std::size_t q_limbs, Basis basis);

}  // namespace ember
