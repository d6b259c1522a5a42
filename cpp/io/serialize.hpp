// Serialization of ciphertexts, plaintexts and keys to a self-checking byte format.
//
// Every object is written as (format version 2, the default)
//   header   "EMBR" | format version u16 (= 2) | object type u16 | CkksParams::hash() (32 bytes) | payload length u64
//   payload  (per type, below)
//   checksum checksum64(header + payload) (8 bytes, below)
// with every integer little-endian and fixed-width. Payloads:
//   polynomial    q_limbs u32 | basis u8 | form u8 | encoding u8 | the limbs, each of N coefficients:
//                   encoding 1 (Words):  each coefficient a u64 (8 N bytes a limb: written and read at memory
//                                        speed; the default for ciphertexts and plaintexts)
//                   encoding 0 (Packed): each coefficient in bit_width(q_i) bits, least significant bit first
//                                        (N * bit_width(q_i) / 8 bytes a limb, zero-padded to a whole byte;
//                                        the default for keys, which are large and written once)
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
// Format version 1 (still read, and written on request: WriteOptions::version = 1) differs in two places:
// a polynomial has no encoding byte (always Packed), and the checksum is SHA-256 (32 bytes). Other versions
// are refused with "format version must be 1 or 2".
//
// The checksum catches accidental corruption (it is not a defence: an attacker recomputes it; every check
// after it is what protects the reader). checksum64 runs eight lanes over the little-endian 64-bit words of
// the bytes (the tail zero-padded to a whole 64-byte block): lane j takes word 8i + j as
//   x = (acc_j XOR w) * M;  acc_j = x XOR (x >> 29)        (M odd: each step is a bijection of acc_j)
// from acc_j = seed_j, and the lanes are folded with the byte count. Every error within one 64-bit word is
// detected for certain (the lane's state then differs at every later step); others slip through with
// probability about 2^-64. It runs at memory speed, where SHA-256 took half the time of a ciphertext's
// to_bytes.
//
// Deserialization treats its input as untrusted: the header, the payload length and the checksum are
// checked before anything else, then every count and field against the context (limb counts, basis,
// form, encoding, slots, scale, digit count, Galois elements, every coefficient below its prime) before
// the memory it implies is allocated. Every failure is a std::invalid_argument naming the field and its
// bound; bytes written for another parameter set are refused with "serialized for different parameters".
//
// Bounded: an input longer than ReadOptions::max_bytes is refused before it is hashed or parsed; the
// default bound, default_max_bytes(ctx, type), is the largest object of that type the context can
// produce (64-bit words; a GaloisKeys: up to kDefaultMaxGaloisKeys unseeded keys), so valid objects always
// pass. Every allocation is then bounded by the input's own size (about twice it for seeded keys, whose
// uniform halves are re-expanded from their seeds).
//
// Fuzzing builds (EMBER_FUZZING defined, fuzz/) skip the checksum comparison, so that the fuzzer reaches
// the parser.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ckks/ciphertext.hpp"
#include "ckks/context.hpp"
#include "ckks/keys.hpp"

namespace ember {

/// The version written by default; readers accept 1 and 2.
inline constexpr std::uint16_t kSerialFormatVersion = 2;
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

/// How a polynomial's coefficients are stored (format version 2).
enum class Coefficients : std::uint8_t {
    Packed = 0,  ///< bit_width(q_i) bits each: smaller, slower
    Words = 1,   ///< a u64 each: written and read at memory speed
    Default = 255,  ///< Words for ciphertexts and plaintexts, Packed for keys
};

/// How an object is written.
struct WriteOptions {
    Coefficients coefficients = Coefficients::Default;
    /// 2 (the default), or 1 for readers that predate version 2 (Packed coefficients only, SHA-256).
    std::uint16_t version = kSerialFormatVersion;
};

/// The checksum of format version 2 (above), over n bytes.
std::uint64_t checksum64(const std::uint8_t* data, std::size_t n);

/// The default bound: the size of the largest object of `type` that ctx can write.
std::size_t default_max_bytes(const Context& ctx, SerialType type);

std::vector<std::uint8_t> to_bytes(const Context& ctx, const Ciphertext& ct, const WriteOptions& opt = {});
std::vector<std::uint8_t> to_bytes(const Context& ctx, const Plaintext& pt, const WriteOptions& opt = {});
std::vector<std::uint8_t> to_bytes(const Context& ctx, const PublicKey& pk, const WriteOptions& opt = {});
/// A relinearization key or one Galois key. Seeded keys are written in the seeded (compressed) form.
std::vector<std::uint8_t> to_bytes(const Context& ctx, const SwitchingKey& key, const WriteOptions& opt = {});
std::vector<std::uint8_t> to_bytes(const Context& ctx, const GaloisKeys& gk, const WriteOptions& opt = {});
/// Deliberately named so that a secret key is never written by accident.
std::vector<std::uint8_t> secret_key_to_bytes(const Context& ctx, const SecretKey& sk, const WriteOptions& opt = {});

/// The size of to_bytes(ctx, x, opt), and the same bytes written straight into `out` (exactly that size),
/// e.g. a Python bytes object or shared memory, without an intermediate copy. Validated like to_bytes.
std::size_t serialized_size(const Context& ctx, const Ciphertext& ct, const WriteOptions& opt = {});
std::size_t serialized_size(const Context& ctx, const Plaintext& pt, const WriteOptions& opt = {});
void to_bytes_into(const Context& ctx, const Ciphertext& ct, std::span<std::uint8_t> out, const WriteOptions& opt = {});
void to_bytes_into(const Context& ctx, const Plaintext& pt, std::span<std::uint8_t> out, const WriteOptions& opt = {});

Ciphertext ciphertext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
Plaintext plaintext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
PublicKey public_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
SwitchingKey switching_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
GaloisKeys galois_keys_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});
SecretKey secret_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt = {});

/// The same object in context `to`, from context `from` of the same parameters (checked by the parameter hash), for
/// moving data between devices explicitly: a CPU context and a CUDA one, say. The words go through host memory
/// as the serialised format (64-bit words, fully validated on the way in); a secret key's host copy is wiped.
Ciphertext transfer(const Context& from, const Ciphertext& ct, const Context& to);
Plaintext transfer(const Context& from, const Plaintext& pt, const Context& to);
PublicKey transfer(const Context& from, const PublicKey& pk, const Context& to);
SwitchingKey transfer(const Context& from, const SwitchingKey& key, const Context& to);
GaloisKeys transfer(const Context& from, const GaloisKeys& gk, const Context& to);
SecretKey transfer(const Context& from, const SecretKey& sk, const Context& to);

}  // namespace ember
