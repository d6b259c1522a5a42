// Context: one CKKS parameter set with its ring, encoder and per-level scales; key generation,
// encryption and decryption. Immutable after construction (the decryption-flooding policy aside, which
// is set under a lock) and safe to share between threads.
#pragma once

#include <complex>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "ckks/ciphertext.hpp"
#include "ckks/encoder.hpp"
#include "ckks/keys.hpp"
#include "ckks/params.hpp"

namespace ember {

/// Noise flooding at decryption, the defence against the key-recovery attack of Li and Micciancio
/// (EUROCRYPT 2021) on shared CKKS decryptions: a decryption m + e reveals the noise e, which is a
/// known linear function of the secret. Flooding adds a fresh rounded Gaussian of standard deviation
///   sigma = 2^(statistical_bits / 2) * sqrt(N * queries) * 2^noise_bits
/// to every coefficient of m + e before decoding, where 2^noise_bits bounds |e| per coefficient.
///
/// Why this size: the order-a Renyi divergence between the views (queries decryptions of N coefficients)
/// with and without e is at most exp(a * N * queries * B^2 / (2 sigma^2)) = exp(a 2^-(statistical_bits+1));
/// at a = 2^(statistical_bits + 1) it is e, so any event (recovering the key, say) that has probability p
/// when decryptions reveal nothing beyond the message has probability at most (e p)^(1 - 2^-(s+1)) with
/// them: for p = 2^-128 and s = 30, 2^-126.6. The bound holds only if every shared decryption has noise
/// below 2^noise_bits: measure it on the computation you will run (Context::decryption_noise_bits on its
/// output for inputs of zero) and add a margin. Cost: each slot gets an error of standard deviation
/// about sigma * sqrt(N / 2) / scale in its real and in its imaginary part.
struct DecryptionFlooding {
    double noise_bits = 0;          ///< log2 of a bound on the decryption noise per coefficient (>= 0)
    double statistical_bits = 30;   ///< s above
    double queries = 128;           ///< decryptions of related ciphertexts an adversary may see (>= 1)
    /// log2(sigma) for a ring of degree n; throws std::invalid_argument naming a field out of range.
    double sigma_bits(std::size_t n) const;
};

class Context {
public:
    /// `params` is finalized here if it was not. backend: nullptr for make_backend(default_device(), threads), the CPU
    /// backend with `threads` unless EMBER_DEVICE names another device (backend/backend.hpp).
    Context(CkksParams params, int threads = 1, std::shared_ptr<Backend> backend = nullptr);

    const CkksParams& params() const { return params_; }
    const std::shared_ptr<const RingContext>& ring() const { return ring_; }
    const Encoder& encoder() const { return encoder_; }
    std::size_t slots() const { return params_.slots(); }
    /// Top level of the prime chain (bootstrapping levels included).
    std::size_t max_level() const { return params_.q_primes.size() - 1; }
    /// Level of fresh ciphertexts and of bootstrapping outputs (= max_level() without bootstrapping levels).
    std::size_t user_level() const { return params_.user_level(); }
    int threads() const { return ring_->backend().threads(); }
    const std::vector<DigitRange>& partition() const { return partition_; }
    /// Canonical scale of level l: Delta at user_level(), then scale_{l-1} = scale_l^2 / q_l, so that a
    /// product of two ciphertexts on canonical scales lands on the canonical scale after rescaling. Above
    /// user_level() (bootstrapping levels): the power of two nearest to q_l.
    double scale_at(std::size_t level) const { return scales_.at(level); }

    // Keys.
    std::shared_ptr<SecretKey> gen_secret_key() const;
    std::shared_ptr<PublicKey> gen_public_key(const SecretKey& sk) const;
    /// Switching key from s' to s_to (both over QP, evaluation form): b_j + a_j s_to = e_j + P g_j s'.
    /// seeded: the a_j come from stored seeds.
    SwitchingKey gen_switching_key(const Poly& s_to, const Poly& s_prime, bool seeded = true) const;
    std::shared_ptr<SwitchingKey> gen_relin_key(const SecretKey& sk, bool seeded = true) const;
    /// An ephemeral secret of exactly `hamming_weight` nonzero coefficients in {-1, 1} (a fresh key set of
    /// its own), e.g. bootstrapping's sparse-secret encapsulation.
    std::shared_ptr<SecretKey> gen_sparse_secret_key(std::size_t hamming_weight) const;
    /// Hybrid switching key from `from` to `to` over QP (ciphertexts under `from` re-encrypted under `to`
    /// by Evaluator::key_switch); it belongs to `to`'s key set.
    std::shared_ptr<SwitchingKey> gen_switching_key(const SecretKey& from, const SecretKey& to, bool seeded = true) const;
    /// BV switching key from `from` to `to` over q0 alone, digits of `digit_bits` bits (no special
    /// primes: safe for a sparse `to` where a key over QP would not be); it belongs to `to`'s key set.
    std::shared_ptr<DigitSwitchingKey> gen_digit_switching_key(const SecretKey& from, const SecretKey& to, int digit_bits) const;
    /// Galois keys for the given rotations (slot shifts, any sign) and optionally conjugation. The key of
    /// X -> X^k switches from s to phi_k^-1(s) (not from phi_k(s) to s): the rotation then needs no
    /// automorphism of the key-switching digits, only of the result (see Evaluator::automorphism).
    std::shared_ptr<GaloisKeys> gen_galois_keys(const SecretKey& sk, const std::vector<long>& rotations, bool conjugation, bool seeded = true) const;
    KeySet keygen(const std::vector<long>& rotations = {}, bool conjugation = false, bool seeded = true) const;
    /// Galois element of a left rotation by r slots: 5^r mod 2N (r may be negative).
    std::uint64_t galois_element(long r) const;
    std::uint64_t conjugation_element() const { return 2 * params_.n() - 1; }

    // Encoding.
    Plaintext encode(std::span<const cplx> z, double scale, std::size_t level) const;
    Plaintext encode(std::span<const cplx> z) const { return encode(z, scale_at(user_level()), user_level()); }
    std::vector<cplx> decode(const Plaintext& pt) const;

    // Encryption and decryption.
    Ciphertext encrypt(const Plaintext& pt, const PublicKey& pk) const;
    Ciphertext encrypt(const Plaintext& pt, const SecretKey& sk) const;
    /// c0 + c1 s, flooded when the context has a flooding policy (set_decryption_flooding).
    Plaintext decrypt_to_plaintext(const Ciphertext& ct, const SecretKey& sk) const;
    /// c0 + c1 s flooded as `flood` says (whatever the context's policy).
    Plaintext decrypt_to_plaintext(const Ciphertext& ct, const SecretKey& sk, const DecryptionFlooding& flood) const;
    std::vector<cplx> decrypt(const Ciphertext& ct, const SecretKey& sk) const { return decode(decrypt_to_plaintext(ct, sk)); }
    std::vector<cplx> decrypt(const Ciphertext& ct, const SecretKey& sk, const DecryptionFlooding& flood) const {
        return decode(decrypt_to_plaintext(ct, sk, flood));
    }
    /// The context-wide policy: every decrypt() without an explicit policy floods as `flood` says
    /// (std::nullopt: no flooding, the default). Thread-safe.
    void set_decryption_flooding(std::optional<DecryptionFlooding> flood);
    std::optional<DecryptionFlooding> decryption_flooding() const;
    /// log2 of the largest |coefficient| of c0 + c1 s, never flooded: for a ciphertext computed from
    /// encryptions of zero, the noise bound DecryptionFlooding::noise_bits asks for. Keep its result
    /// private (it is the quantity flooding hides).
    double decryption_noise_bits(const Ciphertext& ct, const SecretKey& sk) const;

    // Identity checks (every operation makes them; see ckks/ciphertext.hpp).
    /// Refuses a polynomial of another context (another ring object), naming the difference:
    /// "cannot <op>: <what> belongs to another context: log_n 13 vs 12". `what`: "ciphertext", "plaintext", ...
    void check_owned(const char* op, const char* what, const Poly& p) const;
    /// The same for every part of a ciphertext, a plaintext or a key.
    void check_owned(const char* op, const Ciphertext& ct) const;
    void check_owned(const char* op, const Plaintext& pt) const;
    void check_owned(const char* op, const SwitchingKey& key, const char* what) const;

    /// Signed small polynomial (coefficients given) over q_limbs (+P) in evaluation form.
    Poly small_poly(const std::vector<std::int64_t>& coeffs, std::size_t q_limbs, Basis basis, bool secret = false) const;

private:
    /// A fresh secret: uniform ternary (hamming_weight 0) or of that Hamming weight, with a fresh key set.
    std::shared_ptr<SecretKey> gen_secret_key_with(std::size_t hamming_weight) const;
    CkksParams params_;
    std::shared_ptr<const RingContext> ring_;
    Encoder encoder_;
    std::vector<double> scales_;
    std::vector<DigitRange> partition_;
    mutable std::mutex flood_mu_;
    std::optional<DecryptionFlooding> flood_;

    Plaintext decrypt_raw(const Ciphertext& ct, const SecretKey& sk) const;
};

}  // namespace ember
