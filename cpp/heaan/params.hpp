// Parameters of the non-RNS HEAAN scheme (Cheon-Kim-Kim-Song 2017, HEAAN 2.1; paper 000, Section III).
//
// A ciphertext lives modulo q = 2^log_q (log_q <= logQ), its coefficients are big integers of
// ceil(log_q / 64) words; a product is rescaled by p = 2^log_p with a rounded shift, so the depth is
// L = logQ / logp. Switching keys (the evaluation key Q s^2, rotation and conjugation keys) live modulo Q^2.
// Polynomial products go through CRT over NTT primes (the "np" primes of the paper) and back (iCRT).
#pragma once

#include <cstddef>
#include <string>

namespace ember::heaan {

struct Params {
    int log_n = 16;            // N = 2^log_n; N/2 complex slots at most
    int log_q = 1200;          // logQ: fresh ciphertexts are modulo Q = 2^logQ, keys modulo Q^2
    int log_p = 30;            // rescaling factor p = 2^log_p; also the default encoding scale
    int hamming_weight = 64;   // h of the secret (HEAAN: 64 nonzero coefficients in {-1, 1})
    double sigma = 3.2;        // error standard deviation
    int prime_bits = 50;       // CRT/NTT primes: 50 -> the largest below 2^50 (IFMA lanes); 51..60 -> nearest 2^bits
    int security = 128;        // 128: HE standard on log2(Q^2); 80: Table II of paper 000 (HEAAN's estimate,
                               // which the paper's N = 2^16, logQ = 1200 meet; explicit opt-in only)
    bool insecure = false;     // skip the security check (tests, experiments)

    /// Throws std::invalid_argument naming the parameter and its bound.
    void validate() const;
    std::size_t n() const { return std::size_t(1) << log_n; }
    std::size_t max_slots() const { return n() / 2; }
    int depth() const { return log_p > 0 ? log_q / log_p : 0; }
    std::string describe() const;
};

/// Largest logQ for the given security level (80: paper 000 Table II, logQ <= 1200 N / 2^16; 128: half of
/// the HE standard's bound on the key modulus Q^2); 0 if unknown.
int max_log_q(int log_n, int security);

}  // namespace ember::heaan
