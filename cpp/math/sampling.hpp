// Randomness: a seeded CSPRNG stream (AES-256-CTR from OpenSSL, keyed by a 32-byte seed and a domain
// separator), fresh seeds from the OS (RAND_bytes), and the samplers of RLWE: uniform mod q, uniform
// ternary, fixed Hamming weight ternary, and rounded Gaussian.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "math/modarith.hpp"

namespace ember {

using Seed = std::array<std::uint8_t, 32>;

/// 32 fresh bytes from the OS CSPRNG.
Seed fresh_seed();

class Prng {
public:
    Prng(const Seed& seed, std::uint64_t domain);
    ~Prng();
    Prng(const Prng&) = delete;
    Prng& operator=(const Prng&) = delete;
    void fill(std::uint8_t* out, std::size_t n);
    std::uint64_t next_u64();
    /// Uniform in [0, bound) by rejection (bound >= 1).
    std::uint64_t uniform(std::uint64_t bound);
    /// Uniform double in [0, 1) with 53 random bits.
    double uniform_double();

private:
    void refill();
    void* ctx_;
    std::array<std::uint8_t, 4096> buf_{};
    std::size_t pos_ = 4096;
};

/// n values uniform mod q (for a uniform polynomial limb; the evaluation form is uniform too).
void sample_uniform_mod(Prng& prng, const Modulus& q, std::uint64_t* out, std::size_t n);
/// Uniform ternary {-1, 0, 1}.
std::vector<std::int64_t> sample_ternary(Prng& prng, std::size_t n);
/// Exactly h nonzero coefficients in {-1, 1}.
std::vector<std::int64_t> sample_hamming(Prng& prng, std::size_t n, std::size_t h);
/// Rounded Gaussian of standard deviation sigma, cut at 6 sigma.
std::vector<std::int64_t> sample_gaussian(Prng& prng, std::size_t n, double sigma);
/// Rounded Gaussian of a large standard deviation (noise flooding, 1 <= sigma <= 2^56), not cut: Box-Muller
/// in long double from 64-bit uniforms, so the low bits of the samples are random too (a double would leave
/// the bits below sigma * 2^-50 at zero) and the tail reaches about 9.4 sigma.
std::vector<std::int64_t> sample_gaussian_wide(Prng& prng, std::size_t n, double sigma);

}  // namespace ember
