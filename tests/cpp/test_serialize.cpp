// Tests of io/serialize: round trips of every object type (values, bit-identity, keys still usable), the
// seeded key compression, both coefficient encodings and both format versions (1 still loads), and the
// validation of untrusted bytes (truncation at every prefix, random corruption, crafted fields with a valid
// checksum, other parameters, huge lengths refused before any allocation).
//
// EMBER_SERIAL_QUICK=1 in the environment shortens the fuzzing loops (for runs under valgrind).
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "io/serialize.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kHeader = 48;    // magic 4 | version 2 | type 2 | hash 32 | payload length 8
constexpr std::size_t kChecksum = 8;   // format 2: checksum64
constexpr std::size_t kChecksumV1 = 32;  // format 1: SHA-256
constexpr std::size_t kPolyHeader = 7; // q_limbs 4 | basis 1 | form 1 | encoding 1
constexpr WriteOptions kWords{Coefficients::Words};
constexpr WriteOptions kPacked{Coefficients::Packed};
constexpr WriteOptions kV1{Coefficients::Default, 1};

bool quick() {
    const char* q = std::getenv("EMBER_SERIAL_QUICK");
    return q && *q && std::string(q) != "0";
}

// A CPU backend that counts polynomial allocations, to check that refused inputs allocate nothing. It
// forwards every kernel, so it follows the Backend interface (backend/backend.hpp).
class CountingBackend : public Backend {
public:
    explicit CountingBackend(std::shared_ptr<Backend> inner) : in_(std::move(inner)) {}
    std::atomic<std::size_t> allocations{0};
    const char* name() const override { return "counting-cpu"; }
    int threads() const override { return in_->threads(); }
    u64* allocate(std::size_t words, bool zero) override {
        ++allocations;
        return in_->allocate(words, zero);
    }
    void release(u64* p, std::size_t words, bool wipe) override { in_->release(p, words, wipe); }
    bool host_addressable() const override { return in_->host_addressable(); }
    void upload(u64* d, const u64* s, std::size_t w) override { in_->upload(d, s, w); }
    void download(u64* d, const u64* s, std::size_t w) override { in_->download(d, s, w); }
    void copy_words(u64* d, const u64* s, std::size_t w) override { in_->copy_words(d, s, w); }
    void ntt_forward(Limbs x) override { in_->ntt_forward(x); }
    void ntt_inverse(Limbs x) override { in_->ntt_inverse(x); }
    void copy(Limbs out, ConstLimbs a) override { in_->copy(out, a); }
    void add(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->add(out, a, b); }
    void sub(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->sub(out, a, b); }
    void neg(Limbs out, ConstLimbs a) override { in_->neg(out, a); }
    void mul(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->mul(out, a, b); }
    void mul_add(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->mul_add(out, a, b); }
    void dot(Limbs out, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b) override {
        in_->dot(out, a, b);
    }
    void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool acc) override { in_->mul_const(out, a, c, acc); }
    void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) override { in_->add_const(out, a, c); }
    void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) override { in_->sub_mul_const(out, a, b, c); }
    void permute(Limbs out, ConstLimbs a, std::uint64_t k, const std::uint32_t* perm) override { in_->permute(out, a, k, perm); }
    void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) override {
        in_->base_convert(conv, in, out, n, centered);
    }

private:
    std::shared_ptr<Backend> in_;
};

struct World {
    std::shared_ptr<const Context> ctx;
    Evaluator ev;
    KeySet keys;                                // seeded relinearization and Galois keys
    std::shared_ptr<SwitchingKey> rlk_unseeded;
    std::vector<cplx> x, y;
    Ciphertext ct_x, ct_y;
    std::shared_ptr<CountingBackend> counting;
    std::shared_ptr<const Context> counted_ctx;  // same parameters, counting backend
    std::shared_ptr<const Context> other_ctx;    // other parameters

    World() : ctx(std::make_shared<Context>(test_params(3))), ev(ctx) {
        keys = ctx->keygen({1, -2}, /*conjugation=*/true, /*seeded=*/true);
        rlk_unseeded = ctx->gen_relin_key(*keys.secret, /*seeded=*/false);
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<double> u(-1, 1);
        for (std::size_t i = 0; i < ctx->slots(); ++i) {
            x.emplace_back(u(rng), u(rng));
            y.emplace_back(u(rng), u(rng));
        }
        ct_x = ctx->encrypt(ctx->encode(x), *keys.pub);
        ct_y = ctx->encrypt(ctx->encode(y), *keys.pub);
        counting = std::make_shared<CountingBackend>(make_cpu_backend(1));
        counted_ctx = std::make_shared<Context>(test_params(3), 1, counting);
        other_ctx = std::make_shared<Context>(test_params(2));
    }
};

World& world() {
    static World w;
    return w;
}

void expect_poly_identical(const Poly& a, const Poly& b, const std::string& what) {
    ASSERT_FALSE(a.empty()) << what;
    ASSERT_FALSE(b.empty()) << what;
    ASSERT_EQ(a.q_limbs(), b.q_limbs()) << what;
    ASSERT_EQ(a.basis(), b.basis()) << what;
    ASSERT_EQ(a.form(), b.form()) << what;
    ASSERT_EQ(a.n(), b.n()) << what;
    const HostLimbs ha = a.host(), hb = b.host();
    for (std::size_t i = 0; i < a.limbs(); ++i)
        ASSERT_EQ(0, std::memcmp(ha.limb(i), hb.limb(i), a.n() * sizeof(u64))) << what << ": limb " << i;
}

void expect_key_identical(const SwitchingKey& a, const SwitchingKey& b) {
    ASSERT_EQ(a.digits(), b.digits());
    ASSERT_EQ(a.a.size(), b.a.size());
    ASSERT_EQ(a.seeds, b.seeds);
    for (std::size_t j = 0; j < a.digits(); ++j) {
        expect_poly_identical(a.b[j], b.b[j], "b[" + std::to_string(j) + "]");
        expect_poly_identical(a.a[j], b.a[j], "a[" + std::to_string(j) + "]");
    }
}

// ---- byte surgery -------------------------------------------------------------------------------------------------

void put_le(Bytes& b, std::size_t off, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b.at(off + i) = static_cast<std::uint8_t>(v >> (8 * i));
}

/// The checksum's size in bytes of this format version (the version field at offset 4).
std::size_t checksum_size(const Bytes& b) { return b.at(4) == 1 && b.at(5) == 0 ? kChecksumV1 : kChecksum; }

/// Recomputes the checksum (SHA-256 in format 1, checksum64 in format 2), so that a crafted field reaches
/// the payload checks.
void reseal(Bytes& b) {
    const std::size_t n = b.size() - checksum_size(b);
    if (checksum_size(b) == kChecksumV1) {
        unsigned int len = 0;
        ASSERT_EQ(1, EVP_Digest(b.data(), n, b.data() + n, &len, EVP_sha256(), nullptr));
    } else {
        put_le(b, n, checksum64(b.data(), n), 8);
    }
}

/// Sets the payload length field to what the bytes hold and reseals.
void fix_length_and_reseal(Bytes& b) {
    put_le(b, 40, b.size() - kHeader - checksum_size(b), 8);
    reseal(b);
}

/// A copy of `base` with the `bytes`-byte field at `off` set to v, resealed.
Bytes with_field(const Bytes& base, std::size_t off, std::uint64_t v, int bytes) {
    Bytes b = base;
    put_le(b, off, v, bytes);
    reseal(b);
    return b;
}

using Loader = std::function<void(const Context&, std::span<const std::uint8_t>)>;

/// The Loader of one object type: reads the bytes and drops the object. No size bound (the default
/// bound is the largest valid object, which would refuse grown inputs before the checks these tests
/// look at; Serialize.DefaultSizeBound tests it).
template <auto FromBytes>
void load_as(const Context& k, std::span<const std::uint8_t> b) {
    (void)FromBytes(k, b, ReadOptions{std::numeric_limits<std::size_t>::max()});
}

/// Expects loading to throw std::invalid_argument whose message contains `needle`.
void expect_refused(const Loader& load, const Context& ctx, const Bytes& b, const std::string& needle, const std::string& what) {
    expect_invalid([&] { load(ctx, b); }, {needle}, what);
}

/// A crafted field (see with_field) and what loading it must report.
struct Field {
    std::size_t off;
    std::uint64_t v;
    int bytes;
    const char* needle;  // in the std::invalid_argument message
    const char* what;
};

/// Expects every crafted variant of `good` to be refused, in order.
void expect_fields_refused(const Loader& load, const Context& ctx, const Bytes& good, std::initializer_list<Field> fields) {
    for (const Field& f : fields) expect_refused(load, ctx, with_field(good, f.off, f.v, f.bytes), f.needle, f.what);
}

struct Sample {
    const char* name;
    Bytes bytes;
    Loader load;
};

/// One serialized object of every type, with its loader.
std::vector<Sample> samples() {
    World& w = world();
    const Context& c = *w.ctx;
    std::vector<Sample> s;
    s.push_back({"Ciphertext", to_bytes(c, w.ct_x), load_as<ciphertext_from_bytes>});
    s.push_back({"Plaintext", to_bytes(c, c.encode(w.x)), load_as<plaintext_from_bytes>});
    s.push_back({"PublicKey", to_bytes(c, *w.keys.pub), load_as<public_key_from_bytes>});
    s.push_back({"RelinKeySeeded", to_bytes(c, *w.keys.relin), load_as<switching_key_from_bytes>});
    s.push_back({"RelinKeyUnseeded", to_bytes(c, *w.rlk_unseeded), load_as<switching_key_from_bytes>});
    s.push_back({"GaloisKeys", to_bytes(c, *w.keys.galois), load_as<galois_keys_from_bytes>});
    s.push_back({"SecretKey", secret_key_to_bytes(c, *w.keys.secret), load_as<secret_key_from_bytes>});
    // The other coefficient encoding of each kind, and format version 1.
    s.push_back({"CiphertextPacked", to_bytes(c, w.ct_x, kPacked), load_as<ciphertext_from_bytes>});
    s.push_back({"PublicKeyWords", to_bytes(c, *w.keys.pub, kWords), load_as<public_key_from_bytes>});
    s.push_back({"RelinKeyUnseededWords", to_bytes(c, *w.rlk_unseeded, kWords), load_as<switching_key_from_bytes>});
    s.push_back({"SecretKeyWords", secret_key_to_bytes(c, *w.keys.secret, kWords), load_as<secret_key_from_bytes>});
    s.push_back({"CiphertextV1", to_bytes(c, w.ct_x, kV1), load_as<ciphertext_from_bytes>});
    s.push_back({"GaloisKeysV1", to_bytes(c, *w.keys.galois, kV1), load_as<galois_keys_from_bytes>});
    return s;
}

/// The object of sample `name` (one of the first seven) written with `opt`.
Bytes write_sample(const std::string& name, const WriteOptions& opt) {
    World& w = world();
    const Context& c = *w.ctx;
    if (name == "Ciphertext") return to_bytes(c, w.ct_x, opt);
    if (name == "Plaintext") return to_bytes(c, c.encode(w.x), opt);
    if (name == "PublicKey") return to_bytes(c, *w.keys.pub, opt);
    if (name == "RelinKeySeeded") return to_bytes(c, *w.keys.relin, opt);
    if (name == "RelinKeyUnseeded") return to_bytes(c, *w.rlk_unseeded, opt);
    if (name == "GaloisKeys") return to_bytes(c, *w.keys.galois, opt);
    if (name == "SecretKey") return secret_key_to_bytes(c, *w.keys.secret, opt);
    ADD_FAILURE() << "no sample " << name;
    return {};
}

// ---- round trips ----------------------------------------------------------------------------------------------------

// Words, Packed and format 1 hold the same objects: each loads bit-identical to the original and is rewritten
// canonically; the defaults are words for values, packed for keys; format 1 bytes (SHA-256) still load.
TEST(Serialize, EncodingsAndFormatVersionsRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const Plaintext pt = c.encode(w.y, c.scale_at(2), 2);
    for (const WriteOptions& opt : {kWords, kPacked, kV1}) {
        SCOPED_TRACE(std::string("version ") + std::to_string(opt.version) + ", coefficients " + std::to_string(static_cast<int>(opt.coefficients)));
        const Bytes bc = to_bytes(c, w.ct_x, opt);
        EXPECT_EQ(bc[4], opt.version);
        const Ciphertext back = ciphertext_from_bytes(c, bc);
        expect_poly_identical(w.ct_x.c0, back.c0, "c0");
        expect_poly_identical(w.ct_x.c1, back.c1, "c1");
        EXPECT_EQ(back.scale, w.ct_x.scale);
        EXPECT_EQ(back.key_id, w.ct_x.key_id);
        EXPECT_LT(max_err(c.decrypt(back, *w.keys.secret), w.x), 1e-6);
        EXPECT_EQ(bc, to_bytes(c, back, opt));
        const Plaintext pb = plaintext_from_bytes(c, to_bytes(c, pt, opt));
        expect_poly_identical(pt.m, pb.m, "m");
        EXPECT_LT(max_err(c.decode(pb), w.y), 1e-6);
        const SecretKey sk = secret_key_from_bytes(c, secret_key_to_bytes(c, *w.keys.secret, opt));
        expect_poly_identical(w.keys.secret->s, sk.s, "s");
        for (const SwitchingKey* key : {w.keys.relin.get(), w.rlk_unseeded.get()}) expect_key_identical(*key, switching_key_from_bytes(c, to_bytes(c, *key, opt)));
        const GaloisKeys gk = galois_keys_from_bytes(c, to_bytes(c, *w.keys.galois, opt));
        ASSERT_EQ(gk.keys.size(), w.keys.galois->keys.size());
        for (const auto& [k, key] : w.keys.galois->keys) expect_key_identical(key, *gk.find(k));
    }
    // Defaults: words for ciphertexts and plaintexts, packed for keys; format 2.
    EXPECT_EQ(to_bytes(c, w.ct_x), to_bytes(c, w.ct_x, kWords));
    EXPECT_EQ(to_bytes(c, *w.keys.pub), to_bytes(c, *w.keys.pub, kPacked));
    EXPECT_EQ(to_bytes(c, w.ct_x)[4], kSerialFormatVersion);
    EXPECT_LT(to_bytes(c, w.ct_x, kPacked).size(), to_bytes(c, w.ct_x).size());
    // Format 1 has packed coefficients only; unknown versions and encodings are not written.
    expect_invalid([&] { to_bytes(c, w.ct_x, WriteOptions{Coefficients::Words, 1}); }, {"format version 1 stores packed coefficients only"});
    expect_invalid([&] { to_bytes(c, w.ct_x, WriteOptions{Coefficients::Default, 3}); }, {"format version must be 1 or 2, got 3"});
    expect_invalid([&] { to_bytes(c, w.ct_x, WriteOptions{static_cast<Coefficients>(7)}); }, {"coefficients must be"});
}

// serialized_size / to_bytes_into write exactly to_bytes's bytes into a caller's buffer, and refuse a buffer of
// another size without writing it.
TEST(Serialize, WriteIntoACallersBuffer) {
    World& w = world();
    const Context& c = *w.ctx;
    const Plaintext pt = c.encode(w.x);
    for (const WriteOptions& opt : {kWords, kPacked, kV1}) {
        const Bytes ref = to_bytes(c, w.ct_x, opt);
        ASSERT_EQ(serialized_size(c, w.ct_x, opt), ref.size());
        Bytes out(ref.size(), 0xAB);
        to_bytes_into(c, w.ct_x, out, opt);
        EXPECT_EQ(out, ref);
        const Bytes pref = to_bytes(c, pt, opt);
        ASSERT_EQ(serialized_size(c, pt, opt), pref.size());
        Bytes pout(pref.size());
        to_bytes_into(c, pt, pout, opt);
        EXPECT_EQ(pout, pref);
    }
    Bytes small(serialized_size(c, w.ct_x) - 1, 0xCD);
    expect_invalid([&] { to_bytes_into(c, w.ct_x, small); }, {"output buffer must hold exactly"});
    EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](std::uint8_t v) { return v == 0xCD; }));
    Ciphertext bad = w.ct_x;
    bad.slots = 3;
    EXPECT_THROW(serialized_size(c, bad), std::invalid_argument);
}

// checksum64 detects every error confined to one 64-bit word (each lane step is a bijection), at any offset of
// the tail too; lengths that differ only by zero bytes differ.
TEST(Serialize, Checksum64DetectsEveryErrorWithinAWord) {
    std::mt19937_64 rng(5);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{200}, std::size_t{1000}}) {
        Bytes b(n);
        for (auto& v : b) v = static_cast<std::uint8_t>(rng());
        const std::uint64_t h = checksum64(b.data(), n);
        for (std::size_t bit = 0; bit < 8 * n; ++bit) {
            b[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            ASSERT_NE(checksum64(b.data(), n), h) << "n " << n << ", bit " << bit;
            b[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        }
        for (int t = 0; t < 200 && n >= 8; ++t) {  // random changes of one aligned word
            const std::size_t wpos = 8 * (rng() % (n / 8));
            Bytes x = b;
            const std::uint64_t delta = rng() | 1;
            for (int i = 0; i < 8; ++i) x[wpos + static_cast<std::size_t>(i)] ^= static_cast<std::uint8_t>(delta >> (8 * i));
            ASSERT_NE(checksum64(x.data(), n), h) << "n " << n << ", word at " << wpos;
        }
        Bytes longer = b;
        longer.push_back(0);
        EXPECT_NE(checksum64(longer.data(), longer.size()), h) << n;
    }
}

TEST(Serialize, CiphertextRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const Bytes b = to_bytes(c, w.ct_x);
    const Ciphertext back = ciphertext_from_bytes(c, b);
    expect_poly_identical(w.ct_x.c0, back.c0, "c0");
    expect_poly_identical(w.ct_x.c1, back.c1, "c1");
    EXPECT_EQ(w.ct_x.scale, back.scale);
    EXPECT_EQ(w.ct_x.slots, back.slots);
    EXPECT_LT(max_err(c.decrypt(back, *w.keys.secret), w.x), 1e-6);
    EXPECT_EQ(b, to_bytes(c, back));  // canonical

    // A lower level, fewer slots, another context object with the same parameters.
    std::vector<cplx> few(w.x.begin(), w.x.begin() + 8);
    Ciphertext low = w.ev.drop_to_level(c.encrypt(c.encode(few), *w.keys.secret), 1);
    const Bytes bl = to_bytes(c, low);
    EXPECT_LT(bl.size(), b.size());
    const Ciphertext back_low = ciphertext_from_bytes(*w.counted_ctx, bl);
    EXPECT_EQ(back_low.level(), 1u);
    EXPECT_EQ(back_low.slots, 8u);
    expect_poly_identical(low.c0, back_low.c0, "low c0");
    EXPECT_LT(max_err(c.decrypt(ciphertext_from_bytes(c, bl), *w.keys.secret), few), 1e-6);
}

TEST(Serialize, KeySetIdentitySurvivesAndOlderBytesLoadUnbound) {
    World& w = world();
    const Context& c = *w.ctx;
    const std::uint64_t id = w.keys.secret->key_id;
    ASSERT_NE(id, 0u);
    EXPECT_EQ(ciphertext_from_bytes(c, to_bytes(c, w.ct_x)).key_id, id);
    EXPECT_EQ(public_key_from_bytes(c, to_bytes(c, *w.keys.pub)).key_id, id);
    EXPECT_EQ(switching_key_from_bytes(c, to_bytes(c, *w.keys.relin)).key_id, id);
    const GaloisKeys gk = galois_keys_from_bytes(c, to_bytes(c, *w.keys.galois));
    EXPECT_EQ(gk.key_id, id);
    for (const auto& [k, key] : gk.keys) EXPECT_EQ(key.key_id, id) << "element " << k;
    EXPECT_EQ(secret_key_from_bytes(c, secret_key_to_bytes(c, *w.keys.secret)).key_id, id);
    // Bytes written before the identity was added (no trailing key_id): the same object, unbound.
    Bytes old = to_bytes(c, w.ct_x);
    old.erase(old.end() - static_cast<std::ptrdiff_t>(kChecksum) - 8, old.end() - static_cast<std::ptrdiff_t>(kChecksum));
    fix_length_and_reseal(old);
    const Ciphertext back = ciphertext_from_bytes(c, old);
    EXPECT_EQ(back.key_id, 0u);
    expect_poly_identical(w.ct_x.c1, back.c1, "old c1");
    EXPECT_LT(max_err(c.decrypt(back, *w.keys.secret), w.x), 1e-6);
    // A Galois key set whose keys disagree on the key set is not written.
    GaloisKeys mixed = *w.keys.galois;
    mixed.keys.begin()->second.key_id ^= 1;
    expect_invalid([&] { to_bytes(c, mixed); }, {"another key set"});
}

TEST(Serialize, PlaintextRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const Plaintext pt = c.encode(w.y, c.scale_at(2), 2);
    const Plaintext back = plaintext_from_bytes(c, to_bytes(c, pt));
    expect_poly_identical(pt.m, back.m, "m");
    EXPECT_EQ(pt.scale, back.scale);
    EXPECT_EQ(pt.slots, back.slots);
    EXPECT_LT(max_err(c.decode(back), w.y), 1e-6);
}

TEST(Serialize, PublicKeyRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const PublicKey back = public_key_from_bytes(c, to_bytes(c, *w.keys.pub));
    expect_poly_identical(w.keys.pub->b, back.b, "b");
    expect_poly_identical(w.keys.pub->a, back.a, "a");
    EXPECT_LT(max_err(c.decrypt(c.encrypt(c.encode(w.y), back), *w.keys.secret), w.y), 1e-6);
}

TEST(Serialize, RelinKeyRoundTripSeededAndUnseeded) {
    World& w = world();
    const Context& c = *w.ctx;
    const std::vector<cplx> xy = map2(w.x, w.y, [](cplx a, cplx b) { return a * b; });
    for (const SwitchingKey* key : {w.keys.relin.get(), w.rlk_unseeded.get()}) {
        SCOPED_TRACE(key->seeded() ? "seeded" : "unseeded");
        const Bytes b = to_bytes(c, *key);
        const SwitchingKey back = switching_key_from_bytes(c, b);
        EXPECT_EQ(back.seeded(), key->seeded());
        expect_key_identical(*key, back);  // a_j re-expanded from the seeds bit for bit
        EXPECT_EQ(b, to_bytes(c, back));
        const Ciphertext prod = w.ev.mul(w.ct_x, w.ct_y, back);
        EXPECT_LT(max_err(c.decrypt(prod, *w.keys.secret), xy), 1e-4);
    }
    // A seeded key stores the b_j and 32-byte seeds instead of the a_j: about half the size.
    const double seeded = static_cast<double>(to_bytes(c, *w.keys.relin).size());
    const double unseeded = static_cast<double>(to_bytes(c, *w.rlk_unseeded).size());
    EXPECT_NEAR(seeded / unseeded, 0.5, 0.01) << seeded << " vs " << unseeded;
}

TEST(Serialize, GaloisKeysRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const GaloisKeys& gk = *w.keys.galois;
    ASSERT_EQ(gk.keys.size(), 3u);
    const GaloisKeys back = galois_keys_from_bytes(c, to_bytes(c, gk));
    ASSERT_EQ(back.keys.size(), gk.keys.size());
    for (const auto& [k, key] : gk.keys) {
        ASSERT_NE(back.find(k), nullptr) << k;
        expect_key_identical(key, *back.find(k));
    }
    for (long r : {1L, -2L})
        EXPECT_LT(max_err(c.decrypt(w.ev.rotate(w.ct_x, r, back), *w.keys.secret), rotated(w.x, r)), 1e-4) << "rotate " << r;
    EXPECT_LT(max_err(c.decrypt(w.ev.conjugate(w.ct_x, back), *w.keys.secret), conjugated(w.x)), 1e-4);

    // One Galois key alone, as a switching key.
    const std::uint64_t k1 = c.galois_element(1);
    const SwitchingKey one = switching_key_from_bytes(c, to_bytes(c, *gk.find(k1)));
    expect_key_identical(*gk.find(k1), one);
    EXPECT_LT(max_err(c.decrypt(w.ev.automorphism(w.ct_x, k1, one), *w.keys.secret), rotated(w.x, 1)), 1e-4);

    // Empty key set.
    EXPECT_TRUE(galois_keys_from_bytes(c, to_bytes(c, GaloisKeys{})).keys.empty());
}

TEST(Serialize, SecretKeyRoundTrip) {
    World& w = world();
    const Context& c = *w.ctx;
    const SecretKey back = secret_key_from_bytes(c, secret_key_to_bytes(c, *w.keys.secret));
    expect_poly_identical(w.keys.secret->s, back.s, "s");
    EXPECT_TRUE(back.s.secret());
    EXPECT_LT(max_err(c.decrypt(w.ct_x, back), w.x), 1e-6);
}

// ---- sizes ----------------------------------------------------------------------------------------------------------

// The format's size from the parameters alone (checked against the real sizes at N = 2^12, then used to
// report N = 2^16).
// Packed (bit_width(q_i) bits a coefficient) or Words (64 bits).
std::size_t poly_bytes(const CkksParams& p, std::size_t q_limbs, bool qp, bool words = false) {
    std::size_t bits = 0;
    for (std::size_t i = 0; i < q_limbs; ++i) bits += words ? 64 : static_cast<std::size_t>(std::bit_width(p.q_primes[i]));
    if (qp)
        for (u64 q : p.p_primes) bits += words ? 64 : static_cast<std::size_t>(std::bit_width(q));
    return kPolyHeader + p.n() * bits / 8;
}
std::size_t switching_key_bytes(const CkksParams& p, std::size_t digits, bool seeded) {
    const std::size_t full = poly_bytes(p, p.q_primes.size(), true);
    return 5 + digits * (full + (seeded ? 32 : full));
}
constexpr std::size_t kFrame = kHeader + kChecksum;

TEST(Serialize, SizesReport) {
    World& w = world();
    const Context& c = *w.ctx;
    const CkksParams& p = c.params();
    const std::size_t L1 = p.q_primes.size(), d = c.partition().size();
    struct Row {
        const char* name;
        std::size_t actual, formula;
    };
    const Row rows[] = {
        // + 8: the trailing key-set identity of ciphertexts and keys
        {"Ciphertext (top level, words)", to_bytes(c, w.ct_x).size(), kFrame + 16 + 2 * poly_bytes(p, L1, false, true) + 8},
        {"Ciphertext (top level, packed)", to_bytes(c, w.ct_x, kPacked).size(), kFrame + 16 + 2 * poly_bytes(p, L1, false) + 8},
        {"Ciphertext (top level, format 1)", to_bytes(c, w.ct_x, kV1).size(), kHeader + kChecksumV1 + 16 + 2 * (poly_bytes(p, L1, false) - 1) + 8},
        {"Plaintext (top level, words)", to_bytes(c, c.encode(w.x)).size(), kFrame + 16 + poly_bytes(p, L1, false, true)},
        {"PublicKey", to_bytes(c, *w.keys.pub).size(), kFrame + 2 * poly_bytes(p, L1, true) + 8},
        {"Relin key, seeded", to_bytes(c, *w.keys.relin).size(), kFrame + switching_key_bytes(p, d, true) + 8},
        {"Relin key, unseeded", to_bytes(c, *w.rlk_unseeded).size(), kFrame + switching_key_bytes(p, d, false) + 8},
        {"Galois keys (3, seeded)", to_bytes(c, *w.keys.galois).size(), kFrame + 4 + 3 * (8 + switching_key_bytes(p, d, true)) + 8},
        {"SecretKey", secret_key_to_bytes(c, *w.keys.secret).size(), kFrame + poly_bytes(p, L1, true) + 8},
    };
    std::cout << "[sizes] " << p.describe() << "\n";
    for (const Row& r : rows) {
        EXPECT_EQ(r.actual, r.formula) << r.name;
        std::cout << "[sizes]   " << r.name << ": " << r.actual << " bytes\n";
    }

    // Computed, not serialized: N = 2^16, L = 24, dnum = 3 (the library's defaults).
    CkksParams big;
    big.log_n = 16;
    big.levels = 24;
    big.dnum = 3;
    big.finalize();
    const std::size_t big_digits = digit_partition(big.q_primes.size(), 3).size();
    const std::size_t s = kFrame + switching_key_bytes(big, big_digits, true), u = kFrame + switching_key_bytes(big, big_digits, false);
    std::cout << "[sizes] " << big.describe() << "\n"
              << "[sizes]   Ciphertext (top level, words): " << kFrame + 16 + 2 * poly_bytes(big, big.q_primes.size(), false, true) << " bytes\n"
              << "[sizes]   Ciphertext (top level, packed): " << kFrame + 16 + 2 * poly_bytes(big, big.q_primes.size(), false) << " bytes\n"
              << "[sizes]   Relin key, seeded: " << s << " bytes (" << s / 1048576.0 << " MiB)\n"
              << "[sizes]   Relin key, unseeded: " << u << " bytes (" << u / 1048576.0 << " MiB)\n"
              << "[sizes]   Relin key, unseeded, as raw u64 words: " << kFrame + 5 + 2 * big_digits * (kPolyHeader + 8 * big.n() * (big.q_primes.size() + big.p_primes.size()))
              << " bytes\n";
}

// ---- untrusted bytes -------------------------------------------------------------------------------------------------

TEST(Serialize, TruncatedAtEveryPrefixIsRefused) {
    World& w = world();
    for (const Sample& s : samples()) {
        SCOPED_TRACE(s.name);
        const std::size_t size = s.bytes.size();
        const std::size_t stride = std::max<std::size_t>(1, size / (quick() ? 40 : 1500));
        std::size_t tried = 0;
        auto try_len = [&](std::size_t len) {
            const Bytes cut(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(len));
            expect_refused(s.load, *w.ctx, cut, "", "prefix of " + std::to_string(len) + " bytes");
            ++tried;
        };
        for (std::size_t len = 0; len < size; len += (len < 128 || len + 128 > size) ? 1 : stride) try_len(len);
        // One byte too many.
        Bytes longer = s.bytes;
        longer.push_back(0);
        expect_refused(s.load, *w.ctx, longer, "payload length", "one extra byte");
        EXPECT_GT(tried, quick() ? 150u : 1500u);
        s.load(*w.ctx, s.bytes);  // the whole object still loads
    }
}

TEST(Serialize, RandomSingleByteCorruptionIsRefused) {
    World& w = world();
    const std::vector<Sample> all = samples();
    std::mt19937_64 rng(2024);
    const int trials = quick() ? 60 : 1000;
    for (int t = 0; t < trials; ++t) {
        const Sample& s = all[static_cast<std::size_t>(t) % all.size()];
        Bytes b = s.bytes;
        const std::size_t pos = rng() % b.size();
        b[pos] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        expect_refused(s.load, *w.ctx, b, "", std::string(s.name) + ": byte " + std::to_string(pos));
    }
}

// Corruption with the checksum recomputed, so that it reaches the payload checks: every outcome must be a
// clean load or a std::invalid_argument; half of the trials hit the structural fields at the payload's start
// (scale, slots, limb counts, basis, form, digit count, seeded flag, Galois count and element).
TEST(Serialize, ResealedCorruptionNeverCrashes) {
    World& w = world();
    const std::vector<Sample> all = samples();
    std::mt19937_64 rng(99);
    const int trials = quick() ? 60 : 1000;
    int refused = 0, loaded = 0;
    for (int t = 0; t < trials; ++t) {
        const Sample& s = all[static_cast<std::size_t>(t) % all.size()];
        Bytes b = s.bytes;
        const std::size_t payload = b.size() - kHeader - checksum_size(b);
        const std::size_t pos = kHeader + (t % 2 ? rng() % std::min<std::size_t>(payload, 24) : rng() % payload);
        b[pos] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        reseal(b);
        try {
            s.load(*w.ctx, b);
            ++loaded;
        } catch (const std::invalid_argument&) {
            ++refused;
        } catch (const std::exception& e) {
            ADD_FAILURE() << s.name << ": byte " << pos << ": non-invalid_argument exception " << e.what();
        }
    }
    EXPECT_GT(refused, trials / 5);
    std::cout << "[resealed corruption] " << refused << " refused, " << loaded << " loaded (coefficient bits still below the prime)\n";
}

TEST(Serialize, HeaderChecks) {
    World& w = world();
    const Context& c = *w.ctx;
    const Bytes good = to_bytes(c, w.ct_x);
    const Loader ct = load_as<ciphertext_from_bytes>;
    Bytes b = good;
    b[0] = 'X';
    expect_refused(ct, c, b, "magic", "magic");
    for (std::uint64_t v : {0, 3, 0xFFFF}) {
        b = good;
        put_le(b, 4, v, 2);
        expect_refused(ct, c, b, "format version must be 1 or 2", "version " + std::to_string(v));
    }
    b = good;
    put_le(b, 6, 99, 2);
    expect_refused(ct, c, b, "object type", "type 99");
    expect_refused(load_as<plaintext_from_bytes>, c, good, "object type", "ciphertext read as plaintext");
    expect_refused(load_as<secret_key_from_bytes>, c, to_bytes(c, *w.keys.pub), "object type",
                   "public key read as secret key");
    b = good;
    b[kHeader + 100] ^= 1;
    expect_refused(ct, c, b, "checksum", "payload bit flip");
    // A flipped high bit makes a coefficient >= its prime: still reported as corruption, not as the field.
    b = good;
    b[kHeader + 16 + kPolyHeader + 7] ^= 0x80;
    expect_refused(ct, c, b, "checksum mismatch", "coefficient's top bit flipped");
    b = good;
    b.back() ^= 1;
    expect_refused(ct, c, b, "checksum", "checksum bit flip");
    // Trailing bytes inside a correctly framed payload.
    b = good;
    b.insert(b.end() - static_cast<std::ptrdiff_t>(kChecksum), 0);
    fix_length_and_reseal(b);
    expect_refused(ct, c, b, "unexpected bytes", "trailing payload byte");
}

TEST(Serialize, OtherParametersAreRefused) {
    World& w = world();
    const Context& c = *w.ctx;
    const Context& other = *w.other_ctx;
    auto ko = other.keygen({}, false, true);
    const std::string msg = "serialized for different parameters";
    for (const Sample& s : samples()) expect_refused(s.load, other, s.bytes, msg, std::string(s.name) + " into other parameters");
    const Ciphertext ct_o = other.encrypt(other.encode(w.x), *ko.pub);
    expect_refused(load_as<ciphertext_from_bytes>, c, to_bytes(other, ct_o), msg, "other ciphertext");
    expect_refused(load_as<switching_key_from_bytes>, c, to_bytes(other, *ko.relin), msg, "other relin key");
    // Writing an object of another ring under this context is refused too.
    EXPECT_THROW(to_bytes(c, ct_o), std::invalid_argument);
    EXPECT_THROW(to_bytes(c, *ko.relin), std::invalid_argument);
}

TEST(Serialize, CraftedFieldsAreRefused) {
    World& w = world();
    const Context& c = *w.ctx;
    const std::size_t two_n = 2 * c.params().n();
    const Loader ct = load_as<ciphertext_from_bytes>;
    const Loader swk = load_as<switching_key_from_bytes>;
    const Loader gal = load_as<galois_keys_from_bytes>;
    const Bytes good_ct = to_bytes(c, w.ct_x);
    // Ciphertext payload: scale @48, slots @56, c0: q_limbs @64, basis @68, form @69, encoding @70,
    // coefficients @71.
    expect_fields_refused(ct, c, good_ct, {
        {48, std::bit_cast<std::uint64_t>(std::numeric_limits<double>::quiet_NaN()), 8, "scale", "NaN scale"},
        {48, std::bit_cast<std::uint64_t>(std::numeric_limits<double>::infinity()), 8, "scale", "inf scale"},
        {48, std::bit_cast<std::uint64_t>(-1.0), 8, "scale", "negative scale"},
        {48, 0, 8, "scale", "zero scale"},
        {56, 0, 8, "slots", "0 slots"},
        {56, 3, 8, "slots", "3 slots"},
        {56, c.params().n(), 8, "slots", "N slots"},
        {64, 0, 4, "q_limbs must be in [1, 4]", "0 limbs"},
        {64, 5, 4, "q_limbs must be in [1, 4]", "5 limbs"},
        {64, 0xFFFFFFFFu, 4, "q_limbs", "2^32-1 limbs"},
        {68, 1, 1, "basis", "ciphertext over QP"},
        {68, 9, 1, "basis", "basis 9"},
        {69, 2, 1, "form", "form 2"},
        {70, 2, 1, "encoding must be 0 (Packed) or 1 (Words)", "encoding 2"},
        // Fewer limbs than the data: the rest is "unexpected bytes"; c1 with another limb count: refused.
        {64, 3, 4, "", "3 limbs declared, 4 stored"},
    });
    // A coefficient of all ones in bit_width(q_0) bits is >= q_0 (packed); q_0 itself (words); in the last limb of
    // c1 too (the limb check reaches the end).
    {
        Bytes b = to_bytes(c, w.ct_x, kPacked);
        const int bw = std::bit_width(c.params().q_primes[0]);
        for (int i = 0; i < bw; ++i) b[71 + i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
        reseal(b);
        expect_refused(ct, c, b, "coefficient 0 of limb 0 must be below its prime", "packed coefficient >= q_0");
        b = with_field(good_ct, 71 + 8 * 5, c.params().q_primes[0], 8);
        expect_refused(ct, c, b, "c0: coefficient 5 of limb 0 must be below its prime " + std::to_string(c.params().q_primes[0]), "word coefficient = q_0");
        const std::size_t n = c.params().n(), limbs = w.ct_x.c0.q_limbs();
        const std::size_t last = good_ct.size() - kChecksum - 8 - 8;  // c1's last coefficient
        b = with_field(good_ct, last, ~std::uint64_t{0}, 8);
        expect_refused(ct, c, b, "c1: coefficient " + std::to_string(n - 1) + " of limb " + std::to_string(limbs - 1), "word coefficient 2^64-1");
    }

    // Switching key payload: digits @48, seeded @52, b_0: q_limbs @53, basis @57, form @58, encoding @59.
    expect_fields_refused(swk, c, to_bytes(c, *w.keys.relin), {
        {48, 3, 4, "digit count must be 2", "3 digits"},
        {48, 0xFFFFFFFFu, 4, "digit count", "2^32-1 digits"},
        {52, 2, 1, "seeded flag", "seeded = 2"},
        {52, 0, 1, "", "seeded key read as unseeded"},
        {53, 3, 4, "q_limbs must be in [4, 4]", "key over 3 limbs"},
        {57, 0, 1, "basis must be 1 (QP)", "key over Q"},
        {58, 0, 1, "form must be 1 (Eval)", "key in coefficient form"},
        {59, 1, 1, "", "packed key read as words"},
        {59, 7, 1, "encoding", "encoding 7"},
    });

    // Galois keys payload: count @48, first element @52.
    const Bytes good_gal = to_bytes(c, *w.keys.galois);
    expect_fields_refused(gal, c, good_gal, {
        {52, 4, 8, "odd", "even element"},
        {52, two_n + 1, 8, "below 2N", "element 2N+1"},
        {48, 0xFFFFFFFFu, 4, "key count must be at most", "2^32-1 keys"},
        {48, 4, 4, "truncated", "4 keys declared, 3 stored"},
    });
    {
        // Second element equal to the first: not increasing.
        const std::size_t key_len = switching_key_bytes(c.params(), c.partition().size(), true);
        Bytes b = good_gal;
        for (int i = 0; i < 8; ++i) b[52 + 8 + key_len + static_cast<std::size_t>(i)] = b[52 + static_cast<std::size_t>(i)];
        reseal(b);
        expect_refused(gal, c, b, "strictly increasing", "duplicate element");
    }

    // Writing refuses what reading would.
    Ciphertext bad = w.ct_x;
    bad.slots = 3;
    EXPECT_THROW(to_bytes(c, bad), std::invalid_argument);
    bad = w.ct_x;
    bad.scale = std::nan("");
    EXPECT_THROW(to_bytes(c, bad), std::invalid_argument);
    EXPECT_THROW(to_bytes(c, Ciphertext{}), std::invalid_argument);
    SwitchingKey half = *w.keys.relin;
    half.b.pop_back();
    EXPECT_THROW(to_bytes(c, half), std::invalid_argument);
}

TEST(Serialize, HugeClaimsAreRefusedWithoutAllocating) {
    World& w = world();
    const Context& cc = *w.counted_ctx;  // same parameters as w.ctx: its bytes load here
    const Loader ct = load_as<ciphertext_from_bytes>;
    const Loader swk = load_as<switching_key_from_bytes>;
    const Bytes good = to_bytes(*w.ctx, w.ct_x);

    auto refused_without_allocating = [&](const Loader& load, const Bytes& b, const std::string& needle, const std::string& what) {
        const std::size_t before = w.counting->allocations.load();
        expect_refused(load, cc, b, needle, what);
        EXPECT_EQ(w.counting->allocations.load(), before) << what << ": allocated polynomial memory";
    };
    // Payload lengths far beyond the bytes present.
    for (std::uint64_t len : {std::uint64_t{1} << 40, std::uint64_t{1} << 63, ~std::uint64_t{0}})
        refused_without_allocating(ct, with_field(good, 40, len, 8), "payload length", "payload length " + std::to_string(len));
    // Huge q_limbs with a valid checksum.
    refused_without_allocating(ct, with_field(good, 64, 0xFFFFFFFFu, 4), "q_limbs", "q_limbs 2^32-1");
    // Plausible shapes whose data is missing: refused before the polynomial is allocated.
    {
        Bytes b(good.begin(), good.begin() + 70 + 10);
        b.resize(b.size() + kChecksum);
        fix_length_and_reseal(b);
        refused_without_allocating(ct, b, "truncated", "c0 header without its coefficients");
    }
    {
        const Bytes key = to_bytes(*w.ctx, *w.keys.relin);
        Bytes b(key.begin(), key.begin() + 59 + 100);
        b.resize(b.size() + kChecksum);
        fix_length_and_reseal(b);
        refused_without_allocating(swk, b, "truncated", "key digit without its coefficients");
    }
    // The counter does count: a real load allocates the two polynomials.
    const std::size_t before = w.counting->allocations.load();
    (void)ciphertext_from_bytes(cc, good);
    EXPECT_GE(w.counting->allocations.load(), before + 2);
}

// The default bound is the largest object the context can write: every valid object passes it, the
// largest ones exactly; one byte more is refused before anything is hashed or allocated; an explicit
// max_bytes overrides it both ways.
TEST(Serialize, DefaultSizeBound) {
    World& w = world();
    const Context& c = *w.ctx;
    const Context& cc = *w.counted_ctx;  // same parameters, counts allocations
    const std::pair<const char*, SerialType> types[] = {{"Ciphertext", SerialType::Ciphertext}, {"Plaintext", SerialType::Plaintext},
                                                        {"PublicKey", SerialType::PublicKey},   {"RelinKeySeeded", SerialType::SwitchingKey},
                                                        {"RelinKeyUnseeded", SerialType::SwitchingKey}, {"GaloisKeys", SerialType::GaloisKeys},
                                                        {"SecretKey", SerialType::SecretKey}};
    const std::vector<Sample> all = samples();
    for (const auto& [name, type] : types) {
        const Sample* smp = nullptr;
        for (const Sample& x : all)
            if (std::string(x.name) == name) smp = &x;
        ASSERT_NE(smp, nullptr) << name;
        const std::size_t bound = default_max_bytes(c, type);
        EXPECT_LE(smp->bytes.size(), bound) << name;
        EXPECT_LE(write_sample(name, kV1).size(), bound) << name << " (format 1)";
        // Top-level ciphertexts and plaintexts, unseeded keys and secret keys in words are the largest of their type.
        if (std::string(name) != "RelinKeySeeded" && std::string(name) != "GaloisKeys") EXPECT_EQ(write_sample(name, kWords).size(), bound) << name;
    }
    auto load_ct = [](const Context& k, std::span<const std::uint8_t> b, std::size_t mx) { (void)ciphertext_from_bytes(k, b, ReadOptions{mx}); };
    const Bytes good = to_bytes(c, w.ct_x);
    EXPECT_NO_THROW(load_ct(c, good, 0));
    EXPECT_NO_THROW(load_ct(c, good, good.size()));
    expect_invalid([&] { load_ct(c, good, good.size() - 1); }, {"exceeds max_bytes = " + std::to_string(good.size() - 1)}, "explicit bound one byte short");
    // One byte longer than any valid ciphertext, length fixed and resealed: refused by size, allocating nothing.
    Bytes grown = good;
    grown.insert(grown.end() - static_cast<std::ptrdiff_t>(kChecksum), 0);
    fix_length_and_reseal(grown);
    const std::size_t before = w.counting->allocations.load();
    expect_invalid([&] { load_ct(cc, grown, 0); }, {"exceeds max_bytes", "largest Ciphertext"}, "grown ciphertext, default bound");
    EXPECT_EQ(w.counting->allocations.load(), before);
    // With a larger explicit bound the same bytes reach the payload checks.
    expect_invalid([&] { load_ct(cc, grown, grown.size()); }, {"unexpected bytes"}, "grown ciphertext, explicit bound");
    // The GaloisKeys bound: kDefaultMaxGaloisKeys unseeded keys.
    EXPECT_EQ(default_max_bytes(c, SerialType::GaloisKeys),
              48 + 4 + kDefaultMaxGaloisKeys * (8 + (default_max_bytes(c, SerialType::SwitchingKey) - 48 - 8 - kChecksum)) + 8 + kChecksum);
}

}  // namespace
}  // namespace ember
