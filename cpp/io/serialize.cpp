#include "io/serialize.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ember {

namespace {

constexpr std::uint8_t kMagic[4] = {'E', 'M', 'B', 'R'};
constexpr std::size_t kHashBytes = 32;
constexpr std::size_t kHeaderBytes = 4 + 2 + 2 + kHashBytes + 8;  // 48
constexpr std::size_t kSha256Bytes = 32;   // the checksum of format version 1
constexpr std::size_t kChecksum64Bytes = 8; // the checksum of format version 2
constexpr std::size_t kSeedBytes = 32;

std::size_t checksum_bytes(std::uint16_t version) { return version == 1 ? kSha256Bytes : kChecksum64Bytes; }

[[noreturn]] void fail(const char* fn, const std::string& msg) { throw std::invalid_argument(std::string(fn) + ": " + msg); }

const char* type_name(std::uint16_t t) {
    switch (static_cast<SerialType>(t)) {
        case SerialType::Ciphertext: return "Ciphertext";
        case SerialType::Plaintext: return "Plaintext";
        case SerialType::PublicKey: return "PublicKey";
        case SerialType::SwitchingKey: return "SwitchingKey";
        case SerialType::GaloisKeys: return "GaloisKeys";
        case SerialType::SecretKey: return "SecretKey";
    }
    return "unknown";
}

void sha256(const std::uint8_t* data, std::size_t n, std::uint8_t* out) {
    unsigned int len = 0;
    if (EVP_Digest(data, n, out, &len, EVP_sha256(), nullptr) != 1 || len != kSha256Bytes)
        throw std::runtime_error("serialize: SHA-256 failed");
}

/// What is written: the format version and the coefficients' encoding (resolved from WriteOptions).
struct Format {
    std::uint16_t version;
    Coefficients coefficients;  // Packed or Words
};

Format resolve(const char* fn, const WriteOptions& opt, bool key) {
    if (opt.version != 1 && opt.version != 2) fail(fn, "format version must be 1 or 2, got " + std::to_string(opt.version));
    if (opt.coefficients != Coefficients::Packed && opt.coefficients != Coefficients::Words && opt.coefficients != Coefficients::Default)
        fail(fn, "coefficients must be Packed, Words or Default");
    Coefficients c = opt.coefficients;
    if (c == Coefficients::Default) c = (key || opt.version == 1) ? Coefficients::Packed : Coefficients::Words;
    if (opt.version == 1 && c != Coefficients::Packed) fail(fn, "format version 1 stores packed coefficients only");
    return {opt.version, c};
}

// ---------------------------------------------------------------------------------------------------
// What the context allows.

struct PolySpec {
    const char* field;        // for messages: "c0", "b[1]", ...
    std::size_t min_q, max_q; // q_limbs range
    bool allow_q, allow_qp;   // bases
    bool eval_only;           // form must be Eval
    bool secret = false;      // the decoded polynomial is secret (wiped when freed)
};

std::size_t limb_bytes(std::size_t n, u64 q) { return (n * static_cast<std::size_t>(std::bit_width(q)) + 7) / 8; }

/// Bytes of the packed limbs of a polynomial of this shape.
std::size_t poly_data_bytes(const RingContext& ring, std::size_t q_limbs, Basis basis) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < q_limbs; ++i) total += limb_bytes(ring.n(), ring.mod(i).q);
    if (basis == Basis::QP)
        for (std::size_t i = 0; i < ring.p_count(); ++i) total += limb_bytes(ring.n(), ring.mod(ring.q_count() + i).q);
    return total;
}

void check_slots(const char* fn, std::uint64_t slots, std::size_t n) {
    if (slots == 0 || slots > n / 2 || (slots & (slots - 1)) != 0)
        fail(fn, "slots must be a power of two in [1, N/2 = " + std::to_string(n / 2) + "], got " + std::to_string(slots));
}

void check_scale(const char* fn, double scale) {
    if (!std::isfinite(scale) || !(scale > 0)) fail(fn, "scale must be finite and > 0, got " + std::to_string(scale));
}

/// The polynomial lives in ctx's ring (same pointer, or a ring with the same primes) and has a shape that
/// `spec` allows.
void check_poly_for_write(const char* fn, const Context& ctx, const Poly& p, const PolySpec& spec) {
    const std::string f = spec.field;
    if (p.empty()) fail(fn, f + " is an empty polynomial");
    if (p.ring_ptr() != ctx.ring()) {
        const RingContext& a = p.ring();
        const RingContext& b = *ctx.ring();
        bool same = a.n() == b.n() && a.q_count() == b.q_count() && a.p_count() == b.p_count();
        for (std::size_t i = 0; same && i < a.q_count() + a.p_count(); ++i) same = a.mod(i).q == b.mod(i).q;
        if (!same) fail(fn, f + " belongs to a ring of different parameters than the context");
    }
    if (p.q_limbs() < spec.min_q || p.q_limbs() > spec.max_q)
        fail(fn, f + ".q_limbs must be in [" + std::to_string(spec.min_q) + ", " + std::to_string(spec.max_q) + "], got " + std::to_string(p.q_limbs()));
    if ((p.basis() == Basis::Q && !spec.allow_q) || (p.basis() == Basis::QP && !spec.allow_qp))
        fail(fn, f + ".basis must be " + (spec.allow_q ? "Q" : "QP"));
    if (spec.eval_only && p.form() != Form::Eval) fail(fn, f + ".form must be Eval");
}

void store_le64(std::uint8_t* p, std::uint64_t v) {
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(p, &v, 8);
    } else {
        for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
    }
}

std::uint64_t load_le64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&v, p, 8);
    } else {
        for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

// ---------------------------------------------------------------------------------------------------
// The checksum of format version 2 (serialize.hpp), computed as the bytes are written or read: after each
// limb, while they are still in cache, every whole 64-byte block up to that point.

class Checksum64 {
public:
    Checksum64() {
        for (int j = 0; j < 8; ++j) acc_[j] = 0x243F6A8885A308D3ULL * static_cast<u64>(2 * j + 1);
    }
    /// Consumes the whole 64-byte blocks of base[0, upto) not consumed yet.
    void advance(const std::uint8_t* base, std::size_t upto) {
        u64 a[8];
        std::memcpy(a, acc_, sizeof a);
        for (; done_ + 64 <= upto; done_ += 64) {
            const std::uint8_t* p = base + done_;
            for (int j = 0; j < 8; ++j) {
                const u64 x = (a[j] ^ load_le64(p + 8 * j)) * kMul;
                a[j] = x ^ (x >> 29);
            }
        }
        std::memcpy(acc_, a, sizeof a);
    }
    /// The checksum of base[0, n) (the last block zero-padded).
    u64 finish(const std::uint8_t* base, std::size_t n) {
        advance(base, n);
        if (done_ < n) {
            std::uint8_t tail[64] = {};
            std::memcpy(tail, base + done_, n - done_);
            const std::size_t start = done_;
            done_ = 0;
            advance(tail, 64);
            done_ = start + 64;
        }
        u64 h = static_cast<u64>(n) * kFold;
        for (int j = 0; j < 8; ++j) {
            h = (h ^ acc_[j]) * kFold;
            h ^= h >> 32;
        }
        return h;
    }

private:
    static constexpr u64 kMul = 0x9E3779B97F4A7C15ULL;   // odd
    static constexpr u64 kFold = 0xD6E8FEB86659FD93ULL;  // odd
    u64 acc_[8];
    std::size_t done_ = 0;
};

// ---------------------------------------------------------------------------------------------------
// Writing. A Writer with no buffer only counts, so that the output is allocated once at its exact size
// (a secret key then leaves no copies behind in reallocated memory).

class Writer {
public:
    explicit Writer(std::uint8_t* out, Checksum64* sum = nullptr) : out_(out), sum_(sum) {}
    /// Feeds what is written so far to the checksum (after each limb: the bytes are still in cache).
    void progress() {
        if (out_ && sum_) sum_->advance(out_, n_);
    }
    std::size_t size() const { return n_; }
    void u8(std::uint8_t v) {
        if (out_) out_[n_] = v;
        ++n_;
    }
    void uint(std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void u16(std::uint16_t v) { uint(v, 2); }
    void u32(std::uint32_t v) { uint(v, 4); }
    void u64(std::uint64_t v) { uint(v, 8); }
    void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
    void bytes(const std::uint8_t* src, std::size_t n) {
        if (out_) std::memcpy(out_ + n_, src, n);
        n_ += n;
    }
    /// Room for n bytes: their address (nullptr when counting).
    std::uint8_t* reserve(std::size_t n) {
        std::uint8_t* p = out_ ? out_ + n_ : nullptr;
        n_ += n;
        return p;
    }

private:
    std::uint8_t* out_;
    Checksum64* sum_;
    std::size_t n_ = 0;
};

/// Fails naming the first coefficient of src[0..n) that is not below q (when there is one).
void fail_unreduced(const char* fn, const std::string& field, std::size_t limb, const u64* src, std::size_t n, u64 q, bool reading) {
    for (std::size_t c = 0; c < n; ++c)
        if (src[c] >= q)
            fail(fn, field + ": coefficient " + std::to_string(c) + " of limb " + std::to_string(limb) +
                         (reading ? " must be below its prime " + std::to_string(q) + ", got " + std::to_string(src[c])
                                  : " is not reduced below its prime " + std::to_string(q)));
}

/// Whether any of src[0..n) is >= q. Compiled for AVX-512 too (one compare does 8 words; chosen at run time
/// where the CPU has it), so that checking a limb costs a fraction of copying it. Not under TSan: the clones'
/// ifunc resolver runs while the dynamic loader relocates, before TSan has started, and its instrumented entry
/// crashed every TSan binary at load (a bare SIGSEGV).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
bool any_unreduced(const u64* src, std::size_t n, u64 q) {
    u64 bad = 0;
    for (std::size_t c = 0; c < n; ++c) bad |= static_cast<u64>(src[c] >= q);
    return bad != 0;
}

/// Copies n coefficients to dst as little-endian u64 words, each checked below q (format 2, Words).
void store_words(const char* fn, const std::string& field, std::size_t limb, const u64* src, std::size_t n, u64 q, std::uint8_t* dst) {
    if (any_unreduced(src, n, q)) fail_unreduced(fn, field, limb, src, n, q, false);
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(dst, src, n * sizeof(u64));
    } else {
        for (std::size_t c = 0; c < n; ++c) store_le64(dst + 8 * c, src[c]);
    }
}

/// Reads n little-endian u64 words into dst, each checked below q (format 2, Words).
void load_words(const char* fn, const std::string& field, std::size_t limb, const std::uint8_t* src, std::size_t n, u64 q, u64* dst) {
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(dst, src, n * sizeof(u64));
    } else {
        for (std::size_t c = 0; c < n; ++c) dst[c] = load_le64(src + 8 * c);
    }
    if (any_unreduced(dst, n, q)) fail_unreduced(fn, field, limb, dst, n, q, true);
}

/// Packs n values below q in bit_width(q) bits each, least significant bit first, into
/// limb_bytes(n, q) bytes.
void pack_limb(const char* fn, const std::string& field, std::size_t limb, const u64* src, std::size_t n, u64 q, std::uint8_t* dst) {
    const int bw = std::bit_width(q);
    unsigned __int128 acc = 0;  // nbits < 64 pending bits
    int nbits = 0;
    std::size_t k = 0;
    for (std::size_t c = 0; c < n; ++c) {
        const u64 v = src[c];
        if (v >= q) fail(fn, field + ": coefficient " + std::to_string(c) + " of limb " + std::to_string(limb) + " is not reduced below its prime " + std::to_string(q));
        acc |= static_cast<unsigned __int128>(v) << nbits;
        nbits += bw;
        if (nbits >= 64) {
            store_le64(dst + k, static_cast<std::uint64_t>(acc));
            k += 8;
            acc >>= 64;
            nbits -= 64;
        }
    }
    for (; nbits > 0; nbits -= 8, acc >>= 8) dst[k++] = static_cast<std::uint8_t>(acc);
}

void write_poly(const char* fn, Writer& w, const Poly& p, const std::string& field, const Format& f) {
    w.u32(static_cast<std::uint32_t>(p.q_limbs()));
    w.u8(static_cast<std::uint8_t>(p.basis()));
    w.u8(static_cast<std::uint8_t>(p.form()));
    if (f.version >= 2) w.u8(static_cast<std::uint8_t>(f.coefficients));
    const RingContext& ring = p.ring();
    for (std::size_t i = 0; i < p.limbs(); ++i) {
        const u64 q = ring.mod(p.prime_index(i)).q;
        std::uint8_t* dst = w.reserve(f.coefficients == Coefficients::Words ? ring.n() * sizeof(u64) : limb_bytes(ring.n(), q));
        if (dst) {  // (a size-only pass reserves without writing)
            const HostLimbs h = p.host(i, 1);  // one limb at a time in host memory (a download from a device)
            if (f.coefficients == Coefficients::Words) store_words(fn, field, i, h.limb(0), ring.n(), q, dst);
            else pack_limb(fn, field, i, h.limb(0), ring.n(), q, dst);
        }
        w.progress();
    }
}

/// The payload size of `body` (a counting pass: nothing is written).
template <class Body>
std::size_t payload_size(Body&& body) {
    Writer counter(nullptr);
    body(counter);
    return counter.size();
}

/// header | body | checksum into out, which has exactly kHeaderBytes + payload + checksum_bytes(version) bytes.
/// On failure the output is wiped (a secret key leaves nothing behind).
template <class Body>
void seal_into(const Context& ctx, SerialType type, const Format& f, std::size_t payload, Body&& body, std::uint8_t* out) {
    try {
        Checksum64 sum;
        Writer w(out, f.version == 1 ? nullptr : &sum);
        w.bytes(kMagic, 4);
        w.u16(f.version);
        w.u16(static_cast<std::uint16_t>(type));
        const auto h = ctx.params().hash();
        w.bytes(h.data(), h.size());
        w.u64(payload);
        body(w);
        if (w.size() != kHeaderBytes + payload) throw std::logic_error("serialize: payload size changed between passes");
        if (f.version == 1) {
            sha256(out, kHeaderBytes + payload, out + kHeaderBytes + payload);
        } else {
            store_le64(out + kHeaderBytes + payload, sum.finish(out, kHeaderBytes + payload));
        }
    } catch (...) {
        OPENSSL_cleanse(out, kHeaderBytes + payload + checksum_bytes(f.version));
        throw;
    }
}

/// header | body | checksum, allocated once at its exact size.
template <class Body>
std::vector<std::uint8_t> seal(const Context& ctx, SerialType type, const Format& f, Body&& body) {
    const std::size_t payload = payload_size(body);
    std::vector<std::uint8_t> out(kHeaderBytes + payload + checksum_bytes(f.version));
    seal_into(ctx, type, f, payload, body, out.data());
    return out;
}

// ---------------------------------------------------------------------------------------------------
// Reading.

class Reader {
public:
    Reader(const char* fn, const std::uint8_t* p, std::size_t n, std::uint16_t version = kSerialFormatVersion) : fn_(fn), p_(p), n_(n), version_(version) {}
    /// Format 2: the checksum is computed as the payload is read (stored at p + n; `whole` starts at the
    /// header, the payload at whole + kHeaderBytes) and compared by verify_checksum().
    void check_as_read(const std::uint8_t* whole) { whole_ = whole; }
    /// Feeds the bytes read so far to the checksum (after each limb, while they are in cache).
    void progress() {
        if (whole_) sum_.advance(whole_, kHeaderBytes + pos_);
    }
    /// Format 2, after a successful parse: the checksum of everything read against the stored one.
    void verify_checksum() {
#ifndef EMBER_FUZZING
        if (whole_ && sum_.finish(whole_, kHeaderBytes + n_) != load_le64(p_ + n_)) fail(fn_, "checksum mismatch: the bytes are corrupted");
#endif
    }
    /// Format 2, after a failed parse: corrupted bytes are reported as such (rather than as the field they
    /// broke); a correct checksum leaves the parse's error to be thrown.
    void verify_checksum_after_failure() const {
#ifndef EMBER_FUZZING
        if (whole_ && checksum64(whole_, kHeaderBytes + n_) != load_le64(p_ + n_)) fail(fn_, "checksum mismatch: the bytes are corrupted");
#endif
    }
    std::size_t remaining() const { return n_ - pos_; }
    void need(std::size_t k, const std::string& field) const {
        if (remaining() < k)
            fail(fn_, "payload truncated reading " + field + ": " + std::to_string(k) + " bytes needed, " + std::to_string(remaining()) + " left");
    }
    std::uint64_t uint(int bytes, const std::string& field) {
        need(static_cast<std::size_t>(bytes), field);
        std::uint64_t v = 0;
        for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p_[pos_ + i]) << (8 * i);
        pos_ += static_cast<std::size_t>(bytes);
        return v;
    }
    std::uint8_t u8(const std::string& f) { return static_cast<std::uint8_t>(uint(1, f)); }
    std::uint32_t u32(const std::string& f) { return static_cast<std::uint32_t>(uint(4, f)); }
    std::uint64_t u64(const std::string& f) { return uint(8, f); }
    double f64(const std::string& f) { return std::bit_cast<double>(uint(8, f)); }
    const std::uint8_t* take(std::size_t k, const std::string& field) {
        need(k, field);
        const std::uint8_t* p = p_ + pos_;
        pos_ += k;
        return p;
    }
    void finish() const {
        if (remaining() != 0) fail(fn_, std::to_string(remaining()) + " unexpected bytes after the end of the payload");
    }
    /// The trailing key-set identity, 0 when the payload ends without one (older bytes); then finish().
    std::uint64_t key_id_and_finish() {
        const std::uint64_t id = remaining() == 8 ? u64("key_id") : 0;
        finish();
        return id;
    }
    const char* fn() const { return fn_; }
    std::uint16_t version() const { return version_; }

private:
    const char* fn_;
    const std::uint8_t* p_;
    std::size_t n_;
    std::uint16_t version_;
    std::size_t pos_ = 0;
    const std::uint8_t* whole_ = nullptr;
    Checksum64 sum_;
};

/// Checks the header (magic, version, type, parameter hash, payload length) and the checksum; returns a
/// reader over the payload.
Reader open(const char* fn, const Context& ctx, std::span<const std::uint8_t> bytes, SerialType type, const ReadOptions& opt) {
    const std::size_t size = bytes.size();
    if (size < kHeaderBytes + kChecksum64Bytes)
        fail(fn, "truncated: " + std::to_string(size) + " bytes, the header and checksum alone take " + std::to_string(kHeaderBytes + kChecksum64Bytes));
    const std::uint8_t* d = bytes.data();
    if (std::memcmp(d, kMagic, 4) != 0) fail(fn, "bad magic: not an Ember serialized object (expected \"EMBR\")");
    Reader h(fn, d + 4, kHeaderBytes - 4);
    const auto version = static_cast<std::uint16_t>(h.uint(2, "version"));
    if (version != 1 && version != 2)
        fail(fn, "format version must be 1 or 2 (this reader's), got " + std::to_string(version) +
                     (version > 2 ? " (written by a newer Ember)" : ""));
    const std::size_t sum_bytes = checksum_bytes(version);
    if (size < kHeaderBytes + sum_bytes)
        fail(fn, "truncated: " + std::to_string(size) + " bytes, the header and checksum alone take " + std::to_string(kHeaderBytes + sum_bytes));
    const auto t = static_cast<std::uint16_t>(h.uint(2, "type"));
    if (t != static_cast<std::uint16_t>(type))
        fail(fn, "object type must be " + std::to_string(static_cast<int>(type)) + " (" + type_name(static_cast<std::uint16_t>(type)) + "), got " + std::to_string(t) + " (" +
                     type_name(t) + ")");
    const std::uint8_t* hash = h.take(kHashBytes, "parameter hash");
    const auto mine = ctx.params().hash();
    if (std::memcmp(hash, mine.data(), kHashBytes) != 0)
        fail(fn, "serialized for different parameters (the parameter hash does not match the context's " + ctx.params().describe() + ")");
    // The size bound before the payload is hashed or parsed (the header fields above cost nothing).
    const std::size_t max_bytes = opt.max_bytes ? opt.max_bytes : default_max_bytes(ctx, type);
    if (size > max_bytes)
        fail(fn, "input of " + std::to_string(size) + " bytes exceeds max_bytes = " + std::to_string(max_bytes) +
                     (opt.max_bytes ? "" : " (the largest " + std::string(type_name(static_cast<std::uint16_t>(type))) + " of this context; pass a larger max_bytes to accept more)"));
    const std::uint64_t len = h.u64("payload length");
    const std::size_t avail = size - kHeaderBytes - sum_bytes;
    if (len != avail)
        fail(fn, "payload length must equal the " + std::to_string(avail) + " bytes between header and checksum, got " + std::to_string(len));
    Reader r(fn, d + kHeaderBytes, avail, version);
    if (version == 1) {  // SHA-256 over everything first
#ifndef EMBER_FUZZING
        std::uint8_t sum[kSha256Bytes];
        sha256(d, kHeaderBytes + avail, sum);
        if (CRYPTO_memcmp(sum, d + kHeaderBytes + avail, kSha256Bytes) != 0) fail(fn, "checksum mismatch: the bytes are corrupted");
#endif
    } else {  // checksum64 as the payload is read (read_object)
        r.check_as_read(d);
    }
    return r;
}

/// Opens the bytes and parses them with parse(Reader&), which must end with finish() or key_id_and_finish().
/// Format 2's checksum is computed during the parse and compared at its end; when the parse fails, a wrong
/// checksum is what is reported (corruption), else the parse's own error. Either way nothing is used before
/// every check has passed, and every allocation stays bounded by the input's size.
template <class Parse>
auto read_object(const char* fn, const Context& ctx, std::span<const std::uint8_t> bytes, SerialType type, const ReadOptions& opt, Parse&& parse) {
    Reader r = open(fn, ctx, bytes, type, opt);
    try {
        auto obj = parse(r);
        r.verify_checksum();
        return obj;
    } catch (const std::invalid_argument&) {
        r.verify_checksum_after_failure();
        throw;
    }
}

/// Unpacks n values of bit_width(q) bits from the nbytes = limb_bytes(n, q) bytes at src, each checked
/// below q; the padding bits of the last byte must be zero.
void unpack_limb(const char* fn, const std::string& field, std::size_t limb, const std::uint8_t* src, std::size_t nbytes, std::size_t n, u64 q, u64* dst) {
    const int bw = std::bit_width(q);
    const u64 mask = bw == 64 ? ~u64{0} : (u64{1} << bw) - 1;
    unsigned __int128 acc = 0;  // nbits pending bits
    int nbits = 0;
    std::size_t k = 0;
    for (std::size_t c = 0; c < n; ++c) {
        while (nbits < bw) {
            if (k + 8 <= nbytes) {
                acc |= static_cast<unsigned __int128>(load_le64(src + k)) << nbits;
                k += 8;
                nbits += 64;
            } else {
                acc |= static_cast<unsigned __int128>(src[k++]) << nbits;
                nbits += 8;
            }
        }
        const u64 v = static_cast<u64>(acc) & mask;
        acc >>= bw;
        nbits -= bw;
        if (v >= q)
            fail(fn, field + ": coefficient " + std::to_string(c) + " of limb " + std::to_string(limb) + " must be below its prime " + std::to_string(q) + ", got " +
                         std::to_string(v));
        dst[c] = v;
    }
    if (k != nbytes || acc != 0) fail(fn, field + ": padding bits of limb " + std::to_string(limb) + " must be zero");
}

Poly read_poly(Reader& r, const Context& ctx, const PolySpec& spec) {
    const char* fn = r.fn();
    const std::string f = spec.field;
    const std::uint32_t q_limbs = r.u32(f + ".q_limbs");
    if (q_limbs < spec.min_q || q_limbs > spec.max_q)
        fail(fn, f + ".q_limbs must be in [" + std::to_string(spec.min_q) + ", " + std::to_string(spec.max_q) + "], got " + std::to_string(q_limbs));
    const std::uint8_t basis = r.u8(f + ".basis");
    if (basis > 1) fail(fn, f + ".basis must be 0 (Q) or 1 (QP), got " + std::to_string(basis));
    if ((basis == 0 && !spec.allow_q) || (basis == 1 && !spec.allow_qp))
        fail(fn, f + ".basis must be " + (spec.allow_q ? "0 (Q)" : "1 (QP)") + ", got " + std::to_string(basis));
    const std::uint8_t form = r.u8(f + ".form");
    if (form > 1) fail(fn, f + ".form must be 0 (Coeff) or 1 (Eval), got " + std::to_string(form));
    if (spec.eval_only && form != 1) fail(fn, f + ".form must be 1 (Eval), got " + std::to_string(form));
    bool words = false;
    if (r.version() >= 2) {
        const std::uint8_t enc = r.u8(f + ".encoding");
        if (enc > 1) fail(fn, f + ".encoding must be 0 (Packed) or 1 (Words), got " + std::to_string(enc));
        words = enc == 1;
    }
    const RingContext& ring = *ctx.ring();
    // All limbs present before anything is allocated.
    const std::size_t nlimbs = q_limbs + (basis == 1 ? ring.p_count() : 0);
    r.need(words ? nlimbs * ring.n() * sizeof(u64) : poly_data_bytes(ring, q_limbs, static_cast<Basis>(basis)), f + " coefficients");
    Poly p(ctx.ring(), q_limbs, static_cast<Basis>(basis), static_cast<Form>(form), spec.secret);
    for (std::size_t i = 0; i < p.limbs(); ++i) {
        const u64 q = ring.mod(p.prime_index(i)).q;
        HostLimbs h = p.host(i, 1, /*fetch=*/false);  // every word is written below
        if (words) {
            load_words(fn, f, i, r.take(ring.n() * sizeof(u64), f), ring.n(), q, h.limb(0));
        } else {
            const std::size_t nb = limb_bytes(ring.n(), q);
            unpack_limb(fn, f, i, r.take(nb, f), nb, ring.n(), q, h.limb(0));
        }
        h.commit();
        r.progress();
    }
    return p;
}

// ---------------------------------------------------------------------------------------------------
// Per-type shapes.

PolySpec ct_spec(const Context& ctx, const char* field) { return {field, 1, ctx.max_level() + 1, true, false, false}; }
PolySpec key_spec(const Context& ctx, const char* field, bool secret = false) {
    return {field, ctx.max_level() + 1, ctx.max_level() + 1, false, true, true, secret};
}

std::string indexed(const char* name, std::size_t j) { return std::string(name) + "[" + std::to_string(j) + "]"; }

void check_switching_key(const char* fn, const Context& ctx, const SwitchingKey& key) {
    const std::size_t digits = ctx.partition().size();
    if (key.b.size() != digits) fail(fn, "digit count must be " + std::to_string(digits) + " (the context's partition), got " + std::to_string(key.b.size()));
    if (key.seeded()) {
        if (key.seeds.size() != digits) fail(fn, "seed count must equal the digit count " + std::to_string(digits) + ", got " + std::to_string(key.seeds.size()));
    } else if (key.a.size() != digits) {
        fail(fn, "a count must equal the digit count " + std::to_string(digits) + ", got " + std::to_string(key.a.size()));
    }
    for (std::size_t j = 0; j < digits; ++j) {
        const std::string bj = indexed("b", j), aj = indexed("a", j);
        check_poly_for_write(fn, ctx, key.b[j], key_spec(ctx, bj.c_str()));
        if (!key.seeded()) check_poly_for_write(fn, ctx, key.a[j], key_spec(ctx, aj.c_str()));
    }
}

void write_switching_key(const char* fn, Writer& w, const SwitchingKey& key, const Format& f) {
    w.u32(static_cast<std::uint32_t>(key.b.size()));
    w.u8(key.seeded() ? 1 : 0);
    for (std::size_t j = 0; j < key.b.size(); ++j) {
        write_poly(fn, w, key.b[j], indexed("b", j), f);
        if (key.seeded()) w.bytes(key.seeds[j].data(), kSeedBytes);
        else write_poly(fn, w, key.a[j], indexed("a", j), f);
    }
}

SwitchingKey read_switching_key(Reader& r, const Context& ctx) {
    const char* fn = r.fn();
    const std::size_t digits = ctx.partition().size();
    const std::uint32_t d = r.u32("digit count");
    if (d != digits) fail(fn, "digit count must be " + std::to_string(digits) + " (the context's partition), got " + std::to_string(d));
    const std::uint8_t seeded = r.u8("seeded flag");
    if (seeded > 1) fail(fn, "seeded flag must be 0 or 1, got " + std::to_string(seeded));
    SwitchingKey key;
    key.b.reserve(digits);
    key.a.reserve(digits);
    if (seeded) key.seeds.reserve(digits);
    for (std::size_t j = 0; j < digits; ++j) {
        const std::string bj = indexed("b", j), aj = indexed("a", j), sj = indexed("seed", j);
        key.b.push_back(read_poly(r, ctx, key_spec(ctx, bj.c_str())));
        if (seeded) {
            Seed s;
            std::memcpy(s.data(), r.take(kSeedBytes, sj), kSeedBytes);
            key.seeds.push_back(s);
        } else {
            key.a.push_back(read_poly(r, ctx, key_spec(ctx, aj.c_str())));
        }
    }
    // a_j re-expanded only once the whole key has been read and checked.
    if (seeded)
        for (std::size_t j = 0; j < digits; ++j) key.a.push_back(expand_uniform(ctx.ring(), key.seeds[j], ctx.max_level() + 1, Basis::QP));
    return key;
}

void check_galois_element(const char* fn, const Context& ctx, std::uint64_t k) {
    const std::uint64_t two_n = 2 * ctx.params().n();
    if (k % 2 == 0 || k >= two_n) fail(fn, "Galois element must be odd and below 2N = " + std::to_string(two_n) + ", got " + std::to_string(k));
}

// Payload bytes of the largest objects (unseeded keys, top level): 64-bit words in version 2, packed in
// version 1; and of the smallest a full-level polynomial can be (packed, version 1).
std::size_t top_limbs(const Context& ctx, Basis basis) { return ctx.max_level() + 1 + (basis == Basis::QP ? ctx.ring()->p_count() : 0); }
std::size_t max_poly_bytes(const Context& ctx, Basis basis, std::uint16_t version) {
    return version == 1 ? 6 + poly_data_bytes(*ctx.ring(), ctx.max_level() + 1, basis) : 7 + top_limbs(ctx, basis) * ctx.params().n() * sizeof(u64);
}
std::size_t min_full_poly_bytes(const Context& ctx, Basis basis) { return 6 + poly_data_bytes(*ctx.ring(), ctx.max_level() + 1, basis); }
std::size_t max_switching_key_payload(const Context& ctx, std::uint16_t version) {
    return 4 + 1 + ctx.partition().size() * 2 * max_poly_bytes(ctx, Basis::QP, version);
}
/// The smallest a switching key can be: seeded, every digit a packed b_j and a seed.
std::size_t min_switching_key_payload(const Context& ctx) { return 4 + 1 + ctx.partition().size() * (min_full_poly_bytes(ctx, Basis::QP) + kSeedBytes); }

/// The largest object of `type` in one format version (header and checksum included).
std::size_t max_bytes_of(const Context& ctx, SerialType type, std::uint16_t v) {
    constexpr std::size_t id = 8;  // the trailing key-set identity (every type but Plaintext)
    std::size_t payload = 0;
    switch (type) {
        case SerialType::Ciphertext: payload = 8 + 8 + 2 * max_poly_bytes(ctx, Basis::Q, v) + id; break;
        case SerialType::Plaintext: payload = 8 + 8 + max_poly_bytes(ctx, Basis::Q, v); break;
        case SerialType::PublicKey: payload = 2 * max_poly_bytes(ctx, Basis::QP, v) + id; break;
        case SerialType::SwitchingKey: payload = max_switching_key_payload(ctx, v) + id; break;
        case SerialType::GaloisKeys:
            payload = 4 + std::min<std::size_t>(kDefaultMaxGaloisKeys, ctx.params().n()) * (8 + max_switching_key_payload(ctx, v)) + id;
            break;
        case SerialType::SecretKey: payload = max_poly_bytes(ctx, Basis::QP, v) + id; break;
    }
    return kHeaderBytes + payload + checksum_bytes(v);
}

}  // namespace

std::size_t default_max_bytes(const Context& ctx, SerialType type) { return std::max(max_bytes_of(ctx, type, 1), max_bytes_of(ctx, type, 2)); }

std::uint64_t checksum64(const std::uint8_t* data, std::size_t n) {
    Checksum64 c;
    return c.finish(data, n);
}

// ---------------------------------------------------------------------------------------------------

namespace {

/// The checks and the body of a ciphertext / plaintext (shared by to_bytes, serialized_size and to_bytes_into).
auto ciphertext_body(const Context& ctx, const Ciphertext& ct, const Format& f) {
    static constexpr const char* fn = "to_bytes(Ciphertext)";
    check_poly_for_write(fn, ctx, ct.c0, ct_spec(ctx, "c0"));
    check_poly_for_write(fn, ctx, ct.c1, ct_spec(ctx, "c1"));
    if (ct.c1.q_limbs() != ct.c0.q_limbs() || ct.c1.form() != ct.c0.form()) fail(fn, "c0 and c1 must have the same q_limbs and form");
    check_scale(fn, ct.scale);
    check_slots(fn, ct.slots, ctx.params().n());
    return [&ct, f](Writer& w) {
        w.f64(ct.scale);
        w.u64(ct.slots);
        write_poly(fn, w, ct.c0, "c0", f);
        write_poly(fn, w, ct.c1, "c1", f);
        w.u64(ct.key_id);
    };
}

auto plaintext_body(const Context& ctx, const Plaintext& pt, const Format& f) {
    static constexpr const char* fn = "to_bytes(Plaintext)";
    check_poly_for_write(fn, ctx, pt.m, ct_spec(ctx, "m"));
    check_scale(fn, pt.scale);
    check_slots(fn, pt.slots, ctx.params().n());
    return [&pt, f](Writer& w) {
        w.f64(pt.scale);
        w.u64(pt.slots);
        write_poly(fn, w, pt.m, "m", f);
    };
}

template <class Body>
void write_exact(const char* fn, const Context& ctx, SerialType type, const Format& f, Body&& body, std::span<std::uint8_t> out) {
    const std::size_t payload = payload_size(body);
    const std::size_t total = kHeaderBytes + payload + checksum_bytes(f.version);
    if (out.size() != total) fail(fn, "the output buffer must hold exactly " + std::to_string(total) + " bytes, got " + std::to_string(out.size()));
    seal_into(ctx, type, f, payload, body, out.data());
}

}  // namespace

std::vector<std::uint8_t> to_bytes(const Context& ctx, const Ciphertext& ct, const WriteOptions& opt) {
    const Format f = resolve("to_bytes(Ciphertext)", opt, false);
    return seal(ctx, SerialType::Ciphertext, f, ciphertext_body(ctx, ct, f));
}

std::vector<std::uint8_t> to_bytes(const Context& ctx, const Plaintext& pt, const WriteOptions& opt) {
    const Format f = resolve("to_bytes(Plaintext)", opt, false);
    return seal(ctx, SerialType::Plaintext, f, plaintext_body(ctx, pt, f));
}

std::size_t serialized_size(const Context& ctx, const Ciphertext& ct, const WriteOptions& opt) {
    const Format f = resolve("serialized_size(Ciphertext)", opt, false);
    return kHeaderBytes + payload_size(ciphertext_body(ctx, ct, f)) + checksum_bytes(f.version);
}

std::size_t serialized_size(const Context& ctx, const Plaintext& pt, const WriteOptions& opt) {
    const Format f = resolve("serialized_size(Plaintext)", opt, false);
    return kHeaderBytes + payload_size(plaintext_body(ctx, pt, f)) + checksum_bytes(f.version);
}

void to_bytes_into(const Context& ctx, const Ciphertext& ct, std::span<std::uint8_t> out, const WriteOptions& opt) {
    static constexpr const char* fn = "to_bytes_into(Ciphertext)";
    const Format f = resolve(fn, opt, false);
    write_exact(fn, ctx, SerialType::Ciphertext, f, ciphertext_body(ctx, ct, f), out);
}

void to_bytes_into(const Context& ctx, const Plaintext& pt, std::span<std::uint8_t> out, const WriteOptions& opt) {
    static constexpr const char* fn = "to_bytes_into(Plaintext)";
    const Format f = resolve(fn, opt, false);
    write_exact(fn, ctx, SerialType::Plaintext, f, plaintext_body(ctx, pt, f), out);
}

std::vector<std::uint8_t> to_bytes(const Context& ctx, const PublicKey& pk, const WriteOptions& opt) {
    static constexpr const char* fn = "to_bytes(PublicKey)";
    const Format f = resolve(fn, opt, true);
    check_poly_for_write(fn, ctx, pk.b, key_spec(ctx, "b"));
    check_poly_for_write(fn, ctx, pk.a, key_spec(ctx, "a"));
    return seal(ctx, SerialType::PublicKey, f, [&](Writer& w) {
        write_poly(fn, w, pk.b, "b", f);
        write_poly(fn, w, pk.a, "a", f);
        w.u64(pk.key_id);
    });
}

std::vector<std::uint8_t> to_bytes(const Context& ctx, const SwitchingKey& key, const WriteOptions& opt) {
    static constexpr const char* fn = "to_bytes(SwitchingKey)";
    const Format f = resolve(fn, opt, true);
    check_switching_key(fn, ctx, key);
    return seal(ctx, SerialType::SwitchingKey, f, [&](Writer& w) {
        write_switching_key(fn, w, key, f);
        w.u64(key.key_id);
    });
}

std::vector<std::uint8_t> to_bytes(const Context& ctx, const GaloisKeys& gk, const WriteOptions& opt) {
    static constexpr const char* fn = "to_bytes(GaloisKeys)";
    const Format f = resolve(fn, opt, true);
    for (const auto& [k, key] : gk.keys) {
        check_galois_element(fn, ctx, k);
        check_switching_key(fn, ctx, key);
        if (key.key_id != gk.key_id) fail(fn, "the key of Galois element " + std::to_string(k) + " belongs to another key set than the set");
    }
    return seal(ctx, SerialType::GaloisKeys, f, [&](Writer& w) {
        w.u32(static_cast<std::uint32_t>(gk.keys.size()));
        for (const auto& [k, key] : gk.keys) {  // std::map: increasing elements
            w.u64(k);
            write_switching_key(fn, w, key, f);
        }
        w.u64(gk.key_id);
    });
}

std::vector<std::uint8_t> secret_key_to_bytes(const Context& ctx, const SecretKey& sk, const WriteOptions& opt) {
    static constexpr const char* fn = "secret_key_to_bytes";
    const Format f = resolve(fn, opt, true);
    check_poly_for_write(fn, ctx, sk.s, key_spec(ctx, "s"));
    return seal(ctx, SerialType::SecretKey, f, [&](Writer& w) {
        write_poly(fn, w, sk.s, "s", f);
        w.u64(sk.key_id);
    });
}

Ciphertext ciphertext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    static constexpr const char* fn = "ciphertext_from_bytes";
    return read_object(fn, ctx, bytes, SerialType::Ciphertext, opt, [&](Reader& r) {
        Ciphertext ct;
        ct.scale = r.f64("scale");
        check_scale(fn, ct.scale);
        ct.slots = r.u64("slots");
        check_slots(fn, ct.slots, ctx.params().n());
        ct.c0 = read_poly(r, ctx, ct_spec(ctx, "c0"));
        PolySpec s1 = ct_spec(ctx, "c1");
        s1.min_q = s1.max_q = ct.c0.q_limbs();  // c1 has c0's shape
        ct.c1 = read_poly(r, ctx, s1);
        if (ct.c1.form() != ct.c0.form()) fail(fn, "c1.form must equal c0.form");
        ct.key_id = r.key_id_and_finish();
        return ct;
    });
}

Plaintext plaintext_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    static constexpr const char* fn = "plaintext_from_bytes";
    return read_object(fn, ctx, bytes, SerialType::Plaintext, opt, [&](Reader& r) {
        Plaintext pt;
        pt.scale = r.f64("scale");
        check_scale(fn, pt.scale);
        pt.slots = r.u64("slots");
        check_slots(fn, pt.slots, ctx.params().n());
        pt.m = read_poly(r, ctx, ct_spec(ctx, "m"));
        r.finish();
        return pt;
    });
}

PublicKey public_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    return read_object("public_key_from_bytes", ctx, bytes, SerialType::PublicKey, opt, [&](Reader& r) {
        PublicKey pk;
        pk.b = read_poly(r, ctx, key_spec(ctx, "b"));
        pk.a = read_poly(r, ctx, key_spec(ctx, "a"));
        pk.key_id = r.key_id_and_finish();
        return pk;
    });
}

SwitchingKey switching_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    return read_object("switching_key_from_bytes", ctx, bytes, SerialType::SwitchingKey, opt, [&](Reader& r) {
        SwitchingKey key = read_switching_key(r, ctx);
        key.key_id = r.key_id_and_finish();
        return key;
    });
}

GaloisKeys galois_keys_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    static constexpr const char* fn = "galois_keys_from_bytes";
    return read_object(fn, ctx, bytes, SerialType::GaloisKeys, opt, [&](Reader& r) {
        const std::uint32_t count = r.u32("key count");
        const std::size_t n = ctx.params().n();  // N odd elements below 2N
        if (count > n) fail(fn, "key count must be at most N = " + std::to_string(n) + ", got " + std::to_string(count));
        // Every key takes at least its Galois element and a seeded switching key: a count the payload cannot
        // hold is refused before the first key is read.
        const std::size_t min_key = 8 + min_switching_key_payload(ctx);
        if (count > r.remaining() / min_key)
            fail(fn, "payload truncated: key count " + std::to_string(count) + " needs at least " + std::to_string(min_key) + " bytes per key, the payload has " +
                         std::to_string(r.remaining()) + " left");
        GaloisKeys gk;
        std::uint64_t prev = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            // (the trailing key_id is no key: stopping at it reads as truncation, not as a bad element)
            if (r.remaining() <= 8) fail(fn, "payload truncated reading Galois key " + std::to_string(i) + " of " + std::to_string(count));
            const std::uint64_t k = r.u64("Galois element");
            check_galois_element(fn, ctx, k);
            if (i > 0 && k <= prev) fail(fn, "Galois elements must be strictly increasing, got " + std::to_string(k) + " after " + std::to_string(prev));
            prev = k;
            gk.keys.emplace(k, read_switching_key(r, ctx));
        }
        gk.key_id = r.key_id_and_finish();
        for (auto& [_, key] : gk.keys) key.key_id = gk.key_id;
        return gk;
    });
}

SecretKey secret_key_from_bytes(const Context& ctx, std::span<const std::uint8_t> bytes, const ReadOptions& opt) {
    return read_object("secret_key_from_bytes", ctx, bytes, SerialType::SecretKey, opt, [&](Reader& r) {
        SecretKey sk;
        sk.s = read_poly(r, ctx, key_spec(ctx, "s", /*secret=*/true));
        sk.key_id = r.key_id_and_finish();
        return sk;
    });
}

// ---------------------------------------------------------------------------------------------------
// Moving objects between contexts (devices) of the same parameters.

namespace {
constexpr WriteOptions kWords{Coefficients::Words, kSerialFormatVersion};
}  // namespace

Ciphertext transfer(const Context& from, const Ciphertext& ct, const Context& to) { return ciphertext_from_bytes(to, to_bytes(from, ct, kWords)); }
Plaintext transfer(const Context& from, const Plaintext& pt, const Context& to) { return plaintext_from_bytes(to, to_bytes(from, pt, kWords)); }
PublicKey transfer(const Context& from, const PublicKey& pk, const Context& to) { return public_key_from_bytes(to, to_bytes(from, pk, kWords)); }
SwitchingKey transfer(const Context& from, const SwitchingKey& key, const Context& to) {
    return switching_key_from_bytes(to, to_bytes(from, key, kWords));
}
GaloisKeys transfer(const Context& from, const GaloisKeys& gk, const Context& to) { return galois_keys_from_bytes(to, to_bytes(from, gk, kWords)); }
SecretKey transfer(const Context& from, const SecretKey& sk, const Context& to) {
    std::vector<std::uint8_t> b = secret_key_to_bytes(from, sk, kWords);
    struct Wipe {
        std::vector<std::uint8_t>& b;
        ~Wipe() { OPENSSL_cleanse(b.data(), b.size()); }
    } wipe{b};
    return secret_key_from_bytes(to, b);
}

}  // namespace ember
