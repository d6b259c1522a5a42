// CKKS parameters: a literal the user fills (log_n, levels, log_scale, ...) and finalize(), which picks
// the prime chain, derives the special primes from dnum, and checks 128-bit security against the
// HomomorphicEncryption.org standard table (uniform ternary secret, sigma = 3.2).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "math/modarith.hpp"

namespace ember {

enum class SecretDist : std::uint8_t { Ternary = 0, HammingWeight = 1 };

struct CkksParams {
    int log_n = 16;            // ring dimension N = 2^log_n; N/2 complex slots
    int levels = 24;           // multiplicative levels L: L + 1 primes in Q
    int log_scale = 50;        // scale Delta = 2^log_scale; the rescaling primes are near it
    int first_mod_bits = 60;   // q_0, the prime left after the last rescale
    int dnum = 3;              // digits of hybrid key switching: alpha = ceil((L+1)/dnum) primes a digit
    int special_mod_bits = 0;  // 0: 60. K special primes, the fewest with log P >= largest digit + ks_margin_bits
    int ks_margin_bits = 16;   // key-switching error ~ (digit / P) alpha sigma N: P exceeds the largest digit by this
    SecretDist secret = SecretDist::Ternary;
    int hamming_weight = 0;    // for SecretDist::HammingWeight
    double sigma = 3.2;        // error standard deviation
    bool insecure = false;     // allow parameters above the 128-bit bound (tests, experiments)
    /// Extra primes above the computation levels, bottom to top, by bit size: the levels bootstrapping
    /// consumes (SlotToCoeff, EvalMod, CoeffToSlot; see circuits/bootstrap.hpp). Fresh ciphertexts and
    /// bootstrapping outputs live at level `levels`; the levels above it belong to the bootstrapping
    /// circuit, which manages its scales itself.
    std::vector<int> boot_bits;

    // Filled by finalize().
    std::vector<u64> q_primes;  // q_0 .. q_levels, then the boot_bits primes
    std::vector<u64> p_primes;  // p_0 .. p_{K-1}

    /// Validates the literal, generates the primes and checks security. Throws std::invalid_argument
    /// naming the parameter and its bound.
    void finalize();
    bool finalized() const { return !q_primes.empty(); }
    std::size_t n() const { return std::size_t(1) << log_n; }
    std::size_t slots() const { return n() / 2; }
    /// Level of fresh ciphertexts: `levels` (the bootstrapping levels, if any, are above it).
    std::size_t user_level() const { return static_cast<std::size_t>(levels); }
    double log_q() const;
    double log_qp() const;
    std::size_t alpha() const { return (q_primes.size() + dnum - 1) / dnum; }
    /// SHA-256 of everything that determines the ring and the keys' shape (serialization headers).
    std::array<std::uint8_t, 32> hash() const;
    std::string describe() const;
};

/// Largest log2(QP) for 128-bit classical security with a uniform ternary secret (HE standard; 2^16 and
/// 2^17 from the same estimator as used by OpenFHE). 0 if log_n is outside the table.
int max_log_qp_128(int log_n);
/// The same for a secret of fixed Hamming weight; 0 where no estimate is known (log_n = 16, h >= 192:
/// 1550 bits, after Lattigo's N16QP1546H192 set).
int max_log_qp_128_sparse(int log_n, int hamming_weight);

}  // namespace ember
