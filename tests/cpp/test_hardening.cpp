// Tests of the hardening measures: secret-key memory wiped when freed (observed through the CPU backend's
// block cache, no read of freed memory), and noise flooding at decryption (the size of the flooding noise,
// statistically, with stated bounds; the context-wide policy; the noise measurement it relies on).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "ckks/context.hpp"
#include "math/sampling.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

/// Every coefficient of `p` (coefficient form) centered in limb 0, checked to be the same integer in every
/// limb (so that it is small and the centering is exact).
std::vector<std::int64_t> centered_small(const Poly& p) {
    std::vector<std::int64_t> v(p.n());
    const u64 q0 = p.ring().mod(0).q;
    const HostLimbs h = p.host();
    for (std::size_t i = 0; i < p.n(); ++i) {
        const u64 r = h.limb(0)[i];
        v[i] = r > q0 / 2 ? -static_cast<std::int64_t>(q0 - r) : static_cast<std::int64_t>(r);
    }
    for (std::size_t l = 1; l < p.limbs(); ++l) {
        const Modulus& m = p.table(l).mod;
        for (std::size_t i = 0; i < p.n(); ++i)
            if (h.limb(l)[i] != m.from_signed(v[i])) {
                ADD_FAILURE() << "coefficient " << i << " differs between limb 0 and limb " << l << ": not a small integer";
                return v;
            }
    }
    return v;
}

// ---- secret memory ------------------------------------------------------------------------------------------------

// The CPU backend keeps freed blocks in a LIFO cache per size class. Freeing a polynomial and asking the same
// backend for a block of the same size right away (one thread, nothing in between) hands back that very block,
// still owned by the backend: reading it is defined behaviour and shows what the free left in memory. The control
// (a public polynomial) shows that the observation would see unwiped data: the secret's zeros are the wipe.
TEST(Hardening, FreedSecretKeyMemoryIsWiped) {
    auto backend = make_cpu_backend(1);
    const Context ctx(test_params(2), 1, backend);
    auto observe_free = [&](auto&& make, bool expect_wiped, const char* what) {
        const u64* block = nullptr;
        std::size_t words = 0;
        {
            auto holder = make();
            const Poly& p = *holder;
            words = p.limbs() * p.n();
            block = p.limb(0);
            std::size_t nonzero = 0;
            for (std::size_t i = 0; i < words; ++i) nonzero += block[i] != 0;
            ASSERT_GT(nonzero, words / 2) << what << ": the polynomial should be mostly nonzero before it is freed";
        }  // freed here
        u64* again = backend->allocate(words, /*zero=*/false);
        ASSERT_EQ(again, block) << what << ": the backend did not hand the freed block back (its cache changed?); the test cannot observe it";
        std::size_t nonzero = 0;
        for (std::size_t i = 0; i < words; ++i) nonzero += again[i] != 0;
        backend->release(again, words, /*wipe=*/false);
        if (expect_wiped) EXPECT_EQ(nonzero, 0u) << what << ": " << nonzero << " of " << words << " words survived the free";
        else EXPECT_GT(nonzero, words / 2) << what << ": control should keep its contents";
    };
    struct SkHolder {
        std::shared_ptr<SecretKey> sk;
        const Poly& operator*() const { return sk->s; }
    };
    struct PolyHolder {
        std::unique_ptr<Poly> p;
        const Poly& operator*() const { return *p; }
    };
    observe_free([&] { return SkHolder{ctx.gen_secret_key()}; }, true, "secret key");
    // A secret key read from bytes is secret too.
    auto sk = ctx.gen_secret_key();
    // (serialization is exercised elsewhere; here, a copy: copies of secret polynomials stay secret)
    observe_free([&] { return SkHolder{std::make_shared<SecretKey>(*sk)}; }, true, "copy of a secret key");
    auto pk = ctx.gen_public_key(*sk);
    observe_free([&] { return PolyHolder{std::make_unique<Poly>(pk->a)}; }, false, "public polynomial (control)");
}

// ---- noise flooding -----------------------------------------------------------------------------------------------

struct FloodWorld {
    std::shared_ptr<Context> ctx = std::make_shared<Context>(test_params(2));
    KeySet keys = ctx->keygen();
    std::vector<cplx> x;
    Ciphertext ct;
    FloodWorld() {
        std::mt19937_64 rng(11);
        x = random_slots(ctx->slots(), rng);
        ct = ctx->encrypt(ctx->encode(x), *keys.pub);
    }
};

// The flooding noise is the difference between a flooded and a plain decryption of the same ciphertext
// (c0 + c1 s is deterministic). With noise_bits = 10, s = 30, one query and N = 2^12, sigma = 2^(15 + 6 + 10).
// Over n = 8 N samples, each bound below is 6 standard errors of its estimator (a false failure has
// probability below 1e-8 each): sample standard deviation within 6 / sqrt(2n) of sigma (relative), mean
// within 6 sigma / sqrt(n), excess kurtosis within 6 sqrt(24 / n) of 0, odd samples within 6 * 0.5 / sqrt(n) of
// one half (the low bits are random too).
TEST(Hardening, FloodingNoiseHasTheStatedSize) {
    FloodWorld w;
    const Context& c = *w.ctx;
    const DecryptionFlooding f{/*noise_bits=*/10, /*statistical_bits=*/30, /*queries=*/1};
    const double sigma_bits = f.sigma_bits(c.params().n());
    ASSERT_DOUBLE_EQ(sigma_bits, 31.0);
    const double sigma = std::exp2(sigma_bits);
    Plaintext raw = c.decrypt_to_plaintext(w.ct, *w.keys.secret);
    std::vector<double> e;
    for (int run = 0; run < 8; ++run) {
        Plaintext fl = c.decrypt_to_plaintext(w.ct, *w.keys.secret, f);
        Poly d;
        poly_sub(d, fl.m, raw.m);
        poly_to_coeff(d);
        for (std::int64_t v : centered_small(d)) e.push_back(static_cast<double>(v));
    }
    const double n = static_cast<double>(e.size());
    double sum = 0, sum2 = 0, sum4 = 0, odd = 0;
    for (double v : e) sum += v;
    const double mean = sum / n;
    for (double v : e) {
        sum2 += (v - mean) * (v - mean);
        sum4 += std::pow(v - mean, 4);
        odd += std::fmod(std::fabs(v), 2.0) == 1.0;
    }
    const double sd = std::sqrt(sum2 / (n - 1));
    const double kurt = (sum4 / n) / std::pow(sum2 / n, 2) - 3;
    EXPECT_LT(std::fabs(sd / sigma - 1), 6 / std::sqrt(2 * n)) << "sd = 2^" << std::log2(sd) << ", sigma = 2^" << sigma_bits;
    EXPECT_LT(std::fabs(mean), 6 * sigma / std::sqrt(n)) << "mean " << mean;
    EXPECT_LT(std::fabs(kurt), 6 * std::sqrt(24 / n)) << "excess kurtosis " << kurt;
    EXPECT_LT(std::fabs(odd / n - 0.5), 6 * 0.5 / std::sqrt(n)) << "fraction of odd samples " << odd / n;

    // The precision left is the stated one: slot errors of standard deviation sigma sqrt(N / 2) / scale in each
    // real and imaginary part, within 10% (N complex slots' worth of samples: far tighter than 10%).
    const std::vector<cplx> z = c.decode(c.decrypt_to_plaintext(w.ct, *w.keys.secret, f));
    double s2 = 0;
    for (std::size_t i = 0; i < z.size(); ++i) s2 += std::norm(z[i] - w.x[i]);
    const double slot_sd = std::sqrt(s2 / (2.0 * static_cast<double>(z.size())));
    const double want = sigma * std::sqrt(c.params().n() / 2.0) / w.ct.scale;
    EXPECT_NEAR(slot_sd / want, 1.0, 0.1) << "slot error sd 2^" << std::log2(slot_sd) << ", stated 2^" << std::log2(want);
}

TEST(Hardening, SamplerWideMatchesItsSigmaAcrossScales) {
    Prng prng(fresh_seed(), 0);
    for (double bits : {0.0, 20.0, 45.0, 56.0}) {
        const double sigma = std::exp2(bits);
        const std::vector<std::int64_t> v = sample_gaussian_wide(prng, 1 << 15, sigma);
        double s2 = 0;
        for (auto x : v) s2 += static_cast<double>(x) * static_cast<double>(x);
        // E[round(x)^2] = sigma^2 + 1/12 for the rounding; 6 standard errors.
        const double sd = std::sqrt(s2 / static_cast<double>(v.size()));
        const double want = std::sqrt(sigma * sigma + 1.0 / 12);
        EXPECT_LT(std::fabs(sd / want - 1), 6 / std::sqrt(2.0 * static_cast<double>(v.size()))) << "sigma 2^" << bits;
    }
    expect_invalid([&] { (void)sample_gaussian_wide(prng, 4, std::exp2(57)); }, {"sigma"}, "sigma above 2^56");
    expect_invalid([&] { (void)sample_gaussian_wide(prng, 4, 0.5); }, {"sigma"}, "sigma below 1");
}

TEST(Hardening, FloodingPolicyAppliesToEveryDecryption) {
    FloodWorld w;
    Context& c = *w.ctx;
    const SecretKey& sk = *w.keys.secret;
    const std::vector<cplx> plain = c.decrypt(w.ct, sk);
    EXPECT_EQ(c.decrypt(w.ct, sk), plain) << "without a policy, decryption is deterministic";
    ASSERT_FALSE(c.decryption_flooding());
    const DecryptionFlooding f{8, 30, 128};
    c.set_decryption_flooding(f);
    ASSERT_TRUE(c.decryption_flooding());
    EXPECT_EQ(c.decryption_flooding()->noise_bits, 8);
    const std::vector<cplx> a = c.decrypt(w.ct, sk), b = c.decrypt(w.ct, sk);
    EXPECT_NE(a, plain);
    EXPECT_NE(a, b) << "each decryption draws fresh noise";
    // Still close to the message: sigma = 2^(15 + 9.5 + 8) = 2^32.5, slot sd 2^(32.5 + 5.5 - 40) = 2^-2; 8 sd.
    EXPECT_LT(max_err(a, w.x), 8 * std::exp2(f.sigma_bits(c.params().n()) + 5.5 - 40));
    c.set_decryption_flooding(std::nullopt);
    EXPECT_EQ(c.decrypt(w.ct, sk), plain);

    expect_invalid([&] { c.set_decryption_flooding(DecryptionFlooding{-1, 30, 1}); }, {"noise_bits"}, "negative noise_bits");
    expect_invalid([&] { c.set_decryption_flooding(DecryptionFlooding{10, 30, 0.5}); }, {"queries"}, "queries below 1");
    expect_invalid([&] { (void)c.decrypt(w.ct, sk, DecryptionFlooding{40, 30, 1}); }, {"exceeds 2^56"}, "flooding beyond the sampler");
}

TEST(Hardening, DecryptionNoiseBitsMeasuresTheNoise) {
    FloodWorld w;
    const Context& c = *w.ctx;
    // A public-key encryption of zero: noise about the ModDown rounding times the secret, a few bits.
    const std::vector<cplx> zeros(c.slots(), cplx(0, 0));
    const Ciphertext z = c.encrypt(c.encode(zeros), *w.keys.pub);
    const double nb = c.decryption_noise_bits(z, *w.keys.secret);
    EXPECT_GT(nb, 1.0);
    EXPECT_LT(nb, 12.0);
    // A message of magnitude ~1 at scale 2^40 decrypts to coefficients near 2^40 / sqrt(N) .. 2^40.
    const double mb = c.decryption_noise_bits(w.ct, *w.keys.secret);
    EXPECT_GT(mb, 30.0);
    EXPECT_LT(mb, 41.0);
}

}  // namespace
}  // namespace ember
