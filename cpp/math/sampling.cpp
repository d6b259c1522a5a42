#include "math/sampling.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace ember {

Seed fresh_seed() {
    Seed s{};
    if (RAND_bytes(s.data(), static_cast<int>(s.size())) != 1) throw std::runtime_error("RAND_bytes failed: no OS randomness");
    return s;
}

Prng::Prng(const Seed& seed, std::uint64_t domain) {
    EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
    if (!c) throw std::runtime_error("Prng: EVP_CIPHER_CTX_new failed");
    std::uint8_t iv[16] = {0};
    std::memcpy(iv, &domain, sizeof(domain));
    if (EVP_EncryptInit_ex(c, EVP_aes_256_ctr(), nullptr, seed.data(), iv) != 1) {
        EVP_CIPHER_CTX_free(c);
        throw std::runtime_error("Prng: AES-256-CTR init failed");
    }
    ctx_ = c;
}

Prng::~Prng() {
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(ctx_));
    OPENSSL_cleanse(buf_.data(), buf_.size());
}

void Prng::refill() {
    static const std::array<std::uint8_t, 4096> zeros{};
    int outl = 0;
    if (EVP_EncryptUpdate(static_cast<EVP_CIPHER_CTX*>(ctx_), buf_.data(), &outl, zeros.data(), static_cast<int>(zeros.size())) != 1 ||
        outl != static_cast<int>(buf_.size()))
        throw std::runtime_error("Prng: keystream generation failed");
    pos_ = 0;
}

void Prng::fill(std::uint8_t* out, std::size_t n) {
    while (n) {
        if (pos_ == buf_.size()) refill();
        std::size_t take = std::min(n, buf_.size() - pos_);
        std::memcpy(out, buf_.data() + pos_, take);
        pos_ += take; out += take; n -= take;
    }
}

std::uint64_t Prng::next_u64() {
    if (buf_.size() - pos_ < 8) refill();
    std::uint64_t v;
    std::memcpy(&v, buf_.data() + pos_, 8);
    pos_ += 8;
    return v;
}

std::uint64_t Prng::uniform(std::uint64_t bound) {
    if (bound <= 1) return 0;
    const int bits = 64 - __builtin_clzll(bound - 1);
    const std::uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    for (;;) {
        std::uint64_t v = next_u64() & mask;
        if (v < bound) return v;
    }
}

double Prng::uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

void sample_uniform_mod(Prng& prng, const Modulus& q, std::uint64_t* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = prng.uniform(q.q);
}

std::vector<std::int64_t> sample_ternary(Prng& prng, std::size_t n) {
    std::vector<std::int64_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(prng.uniform(3)) - 1;
    return v;
}

std::vector<std::int64_t> sample_hamming(Prng& prng, std::size_t n, std::size_t h) {
    if (h > n) throw std::invalid_argument("sample_hamming: weight " + std::to_string(h) + " exceeds N = " + std::to_string(n));
    std::vector<std::int64_t> v(n, 0);
    std::vector<std::uint32_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<std::uint32_t>(i);
    for (std::size_t i = 0; i < h; ++i) {  // partial Fisher-Yates
        std::size_t j = i + prng.uniform(n - i);
        std::swap(idx[i], idx[j]);
        v[idx[i]] = (prng.next_u64() & 1) ? 1 : -1;
    }
    return v;
}

std::vector<std::int64_t> sample_gaussian(Prng& prng, std::size_t n, double sigma) {
    std::vector<std::int64_t> v(n);
    const double bound = 6.0 * sigma;
    for (std::size_t i = 0; i < n;) {
        double u1 = prng.uniform_double(), u2 = prng.uniform_double();
        if (u1 <= 0) continue;
        double r = sigma * std::sqrt(-2.0 * std::log(u1));
        double g[2] = {r * std::cos(2 * M_PI * u2), r * std::sin(2 * M_PI * u2)};
        for (double x : g) {
            if (i < n && std::fabs(x) <= bound) v[i++] = static_cast<std::int64_t>(std::llround(x));
        }
    }
    return v;
}

std::vector<std::int64_t> sample_gaussian_wide(Prng& prng, std::size_t n, double sigma) {
    if (!(sigma >= 1.0 && sigma <= 0x1.0p56)) throw std::invalid_argument("sample_gaussian_wide: sigma must be in [1, 2^56], got " + std::to_string(sigma));
    std::vector<std::int64_t> v(n);
    if constexpr (std::numeric_limits<long double>::digits >= 64) {  // x86-64: 80-bit; aarch64 Linux: 128-bit
        const long double s = sigma, two_pi = 6.283185307179586476925286766559L;
        for (std::size_t i = 0; i < n;) {
            // u1 in (0, 1], u2 in [0, 1), 64 random bits each
            const long double u1 = (static_cast<long double>(prng.next_u64()) + 1.0L) * 0x1.0p-64L;
            const long double u2 = static_cast<long double>(prng.next_u64()) * 0x1.0p-64L;
            const long double r = s * std::sqrt(-2.0L * std::log(u1));
            const long double g[2] = {r * std::cos(two_pi * u2), r * std::sin(two_pi * u2)};
            for (long double x : g)
                if (i < n) v[i++] = std::llround(x);
        }
    } else {
        // long double is a double (macOS arm64, MSVC). A double sample of sigma up to 2^56 has steps of up to 2^7 at its
        // 9.4 sigma tail, so above 2^26 each sample is the sum of two independent rounded Gaussians, of variances
        // sigma^2 - 2^40 and 2^40 (a Gaussian of variance sigma^2 up to the two roundings): the second, of sigma 2^20,
        // fills the low bits that the first leaves on its grid. u1 from 64 random bits keeps the 9.4 sigma tail.
        constexpr double kFill = 0x1.0p20, kSplit = 0x1.0p26, two_pi = 6.283185307179586;
        const bool split = sigma > kSplit;
        const double s1 = split ? std::sqrt(sigma * sigma - kFill * kFill) : sigma;
        for (std::size_t i = 0; i < n;) {
            const double u1 = (static_cast<double>(prng.next_u64()) + 1.0) * 0x1.0p-64;  // (0, 1]
            const double u2 = static_cast<double>(prng.next_u64() >> 11) * 0x1.0p-53;    // [0, 1)
            const double r = std::sqrt(-2.0 * std::log(u1));
            const double g[2] = {r * std::cos(two_pi * u2), r * std::sin(two_pi * u2)};
            if (split) {
                v[i++] = std::llround(s1 * g[0]) + std::llround(kFill * g[1]);
            } else {
                for (double x : g)
                    if (i < n) v[i++] = std::llround(sigma * x);
            }
        }
    }
    return v;
}

}  // namespace ember
