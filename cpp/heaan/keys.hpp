// HEAAN keys (HEAAN 2.1, paper 000 Section III): the secret s (Hamming weight h, coefficients in {-1, 0, 1}),
// and switching keys modulo Q^2, (a, b) with b + a s = e + Q s' for a uniform a and a Gaussian e:
//   public (encryption) key: s' = 0;  evaluation key (HE Mul): s' = s^2;  rotation by r: s' = s(X^(5^r));
//   conjugation: s' = s(X^-1).
// A switching key is kept as the residues of a and b over the first np CRT primes in NTT form: region 2 of
// HE Mul (Fig. 2) multiplies them pointwise with the NTT of the polynomial being switched.
#pragma once

#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "heaan/big_poly.hpp"
#include "heaan/crt.hpp"

namespace ember::heaan {

/// The secret key; its memory is wiped when freed.
struct SecretKey {
    std::vector<std::int64_t> s;  // N coefficients in {-1, 0, 1}
    SparseTernary sparse;         // the h nonzero ones
    SecretKey() = default;
    SecretKey(const SecretKey&) = delete;
    SecretKey& operator=(const SecretKey&) = delete;
    ~SecretKey();
};

struct SwitchKey {
    std::size_t n = 0, np = 0;
    std::uint64_t galois = 0;  // 0: public key, 1: evaluation key (s^2), else the Galois element
    RowBuffer a, b;            // np x N residues each, NTT form
};

struct KeySet {
    std::shared_ptr<SecretKey> secret;
    std::shared_ptr<SwitchKey> pub;    // encryption key
    std::shared_ptr<SwitchKey> mult;   // evaluation key of HE Mul
    std::map<std::uint64_t, std::shared_ptr<SwitchKey>> galois;  // by Galois element (rotations, conjugation)
};

/// A ciphertext modulo q = 2^log_q: b + a s = m + e, m encoding the slots at scale 2^log_scale.
struct Ciphertext {
    BigPoly a, b;
    int log_scale = 0;
    std::size_t slots = 0;
    int log_q() const { return a.bits; }
};

}  // namespace ember::heaan
