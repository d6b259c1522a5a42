// Serialization of ciphertexts, plaintexts and keys to a self-checking byte format.
//
// Every object is written as
//   header   "EMBR" | format version u16 (= 1) | object type u16 | CkksParams::hash() (32 bytes) | payload length u64
//   payload  (per type, below)
//   checksum SHA-256 of header + payload (32 bytes)
// with every integer little-endian and fixed-width. Payloads:
//   polynomial    q_limbs u32 | basis u8 | form u8 | each limb's N coefficients packed in bit_width(q_i)
//                 bits, least significant bit first (a limb is N * bit_width(q_i) / 8 bytes, zero-padded
//                 to a whole byte)
//   Plaintext     scale f64 | slots u64 | m
//   Ciphertext    scale f64 | slots u64 | c0 | c1
//   PublicKey     b | a
//   SwitchingKey  digits u32 | seeded u8 | per digit: b_j, then its 32-byte seed when seeded (a_j is
//                 re-expanded with expand_uniform on load: MAD's key compression, about half the size)
//                 or a_j when not
//   GaloisKeys    count u32 | count x (Galois element u64 | SwitchingKey payload), elements increasing
//   SecretKey     s
// followed, for a ciphertext and every key, by its key-set identity key_id u64 (ckks/keys.hpp), so that
// operands can be checked across processes (a GaloisKeys payload has one for the set, its SwitchingKey
// payloads none). Bytes without it (written before it was added) load as unbound (key_id 0).
//
// Deserialization treats its input as untrusted: the header, the payload length and the checksum are
// checked before anything else, then every count and field against the context (limb counts, basis,
// form, slots, scale, digit count, Galois elements, every coefficient below its prime) before the memory
// it implies is allocated. Every failure is a std::invalid_argument naming the field and its bound;
// bytes written for another parameter set are refused with "serialized for different parameters".
//
// Bounded: an input longer than ReadOptions::max_bytes is refused before it is hashed or parsed; the
// default bound, default_max_bytes(ctx, type), is the largest object of that type the context can
// produce (a GaloisKeys: up to kDefaultMaxGaloisKeys unseeded keys), so valid objects always pass.
// Every allocation is then bounded by the input's own size (about twice it for seeded keys, whose
// uniform halves are re-expanded from their seeds).
//
// Fuzzing builds (EMBER_FUZZING defined, fuzz/) skip the checksum comparison, so that the fuzzer reaches
// the parser; the checksum is an integrity check, not a defence (an attacker recomputes it), and every
// check after it is what protects the reader.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ckks/ciphertext.hpp"
#include "ckks/context.hpp"
#include "ckks/keys.hpp"

namespace ember {

inline constexpr std::uint16_t kSerialFormatVersion = 1;
/// GaloisKeys sets larger than this need an explicit ReadOptions::max_bytes.
inline constexpr std::size_t kDefaultMaxGaloisKeys = 256;

/// Object types of the header.
enum class SerialType : std::uint16_t {
    Ciphertext = 1,
    Plaintext = 2,
    PublicKey = 3,
    SwitchingKey = 4,
    GaloisKeys = 5,
    SecretKey = 6,
};

/// Limits on untrusted input.
struct ReadOptions {
    /// Largest accepted input in bytes (header and checksum included); 0: default_max_bytes(ctx, type).
    std::size_t max_bytes = 0;
};

/// The default bound: the size of the largest object of `type` that ctx can write.
std::size_t default_max_bytes(const Context& ctx, SerialType type);

std::vector<std::uint8_t> to_bytes(const Context& ctx, const Ciphertext& ct);
std::vector<std::uint8_t> to_bytes(const Context& ctx, const Plaintext& pt);
std::vector<std::uint8_t> to_bytes(const Context& ctx, const PublicKey& pk);
/// A relinearization key or one Galois key. Seeded keys are written in the seeded (compressed) form.
std::vector<std::uint8_t> to_bytes(const Context& ctx, const SwitchingKey& key);
std::vector<std::uint8_t> to_bytes(const Context& ctx, const GaloisKeys& gk);
/// Deliberately named so that a secret key is never written by accident.
std::vector<std::uint8_t> secret_key_to_bytes(const Context& ctx, const SecretKey& sk);

Ciphertext ciphertext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
Plaintext plaintext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
PublicKey public_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
SwitchingKey switching_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
GaloisKeys galois_keys_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
SecretKey secret_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});

}  // namespace ember
