// Bootstrapping (circuits/bootstrap) and the two circuits it is built from with explicit scales
// (circuits/polyeval: evaluate_chebyshev with a target scale; circuits/lintrans: LinearTransform with
// in_scale / out_scale), at N = 2^12 (insecure, a small ring) against float64 references.
//
// Error model of a bootstrap with n slots (inputs with real and imaginary parts uniform in [-1, 1];
// Delta = 2^log_scale the output scale, R = message_ratio_bits, K = k_range, r = double_angles). The
// result is z + E(z) + noise, with
//
// E(z), EvalMod's deterministic error, computed here in float64 (boot_model): EvalMod reads each
//     message coefficient c as s = sin(2 pi c Delta0 / q0) and returns (q0 / Delta0) P(s / s_B), P the
//     configuration's arcsine interpolant on |s| <= s_B = sin(2 pi B / 2^R) (B = input_bound = sqrt 2, the
//     largest coefficient slots in [-1, 1]^2 can give). The automatic R keeps max |E| below 2^-33 for
//     every such input (BootstrapConfig::approx_error); a coefficient above B leaves the interval, which
//     is what the worst-case inputs below check. The tests compare the result with z + E(z) within the
//     noise bound below, and with z within the noise bound plus max |E|.
// noise, two terms:
//  (1) CoeffToSlot / EvalMod noise at the ~2^60 scale of the EvalMod primes. A rescale's rounding leaves
//      ~sqrt(N / 18) per coefficient (r0 + r1 s, r_i uniform in [-1/2, 1/2], s ternary). A slot of an
//      n'-slot ciphertext is decoded from the 2n' coefficients of its subring only, so it sees
//      ~sqrt(2 n') of them: EvalMod runs on 2n slots (sparse: [Re, Im]) or N/2 (full), sqrt(min(4n, N)).
//      EvalMod's output ~ m / 2^R is read as the message after multiplying by q0 / Delta0 = 2^R, and
//      SlotToCoeff sums the 2n real coefficients of every slot (~sqrt(2 n) for independent errors):
//          noise = C * 2^R * sqrt(2 n) * sqrt(N / 18) * sqrt(min(4 n, N)) * 2^-60,
//      which at full slots is (C / sqrt 18) * 2^R * sqrt(2n) * N * 2^-60. C is EvalMod's gain on noise:
//      its slope 2 pi K on the CoeffToSlot output y = t / (K q0), the rounding inside the interpolant and
//      the double angles (up to 2 per step on the angle): C = 16 pi K 2^r, about 2 bits above what was
//      measured with a sine of degree 119 (the default before 111) and r = 0 (2^7.4 at N = 2^13 full slots; with r = 3
//      and a degree-30 cosine the gain was 2^8.7..2^10.1, measured at 64 .. 2048 slots at N = 2^12, full
//      slots at N = 2^13
//      and 2^14; R = 6 and 8): the model's dependence on n and N holds to 0.2 bits, and the bound is 2 to
//      3 bits above the measured noise. (With
//      "sqrt(N) in a slot" in place of sqrt(min(4 n, N)) the model would miss the sparse decoding: the
//      measured noise grows like n, not sqrt(n), from 64 to 2048 slots.)
//  (2) The input's own error, carried through (fresh: 4 units), and the rounding of SlotToCoeff's last
//      rescale onto Delta (8 units): test_ckks.cpp's fresh() and op(), with the unit sqrt(2n N) / Delta of
//      n decoded slots in place of N / Delta:  floor = 12 sqrt(2 n N) / Delta. (Those units carry the tail
//      of the maximum over 2048 slots: for 8 or 16 slots the floor is ~4 bits above the measured error.)
// A functional error (wrong coefficient order, scale, key, sign of I) gives errors of order 1. The
// parameter sets exercise each term where it dominates: 8 slots at 2^40 (E, then the floor), 64 slots at
// 2^50 with R = 8 and full slots at 2^50, N = 2^12 and 2^13 (the noise (1)).
//
// Timing (2 threads): ~8 s in all, half of it key generation for the six parameter sets.
#include <gmp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "circuits/bootstrap.hpp"
#include "circuits/lintrans.hpp"
#include "circuits/polyeval.hpp"
#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

constexpr int kLogN = 12, kLevels = 2;
constexpr double kPi = 3.14159265358979323846;

double bits(double err) { return -std::log2(std::max(err, 1e-300)); }

void report(const std::string& what, double err, double bound) {
    if (err == 0)
        std::printf("[ measured ] %-58s error 0 (identical), bound 2^-%.2f\n", what.c_str(), bits(bound));
    else
        std::printf("[ measured ] %-58s error 2^-%.2f, bound 2^-%.2f\n", what.c_str(), bits(err), bits(bound));
}

/// n complex values with real and imaginary parts uniform in [-1, 1].
cvec uniform_box(std::size_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    cvec v(n);
    for (auto& x : v) {
        const double re = d(rng), im = d(rng);
        x = {re, im};
    }
    return v;
}

// ---- the canonical embedding of the n-slot subring, in float64 (independent of the encoder) ----------------------
// z_j = sum_{k<n} (c_k + i c_{k+n}) rho_j^k with rho_j = exp(i pi 5^j / 2n) (so rho_j^n = i): the 2n real
// coefficients c (over the scale) of the subring polynomial X^gap. The rho_j run over the 4n-th roots
// exp(i pi a / 2n) with a = 1 mod 4, so sum_j rho_j^(k-l) = n [k = l] for |k - l| < n and
// c_k + i c_{k+n} = (1/n) sum_j z_j conj(rho_j)^k.

struct Embedding {
    std::size_t n;
    std::vector<cplx> root;      // exp(2 pi i a / 4n)
    std::vector<std::size_t> g;  // 5^j mod 4n
    explicit Embedding(std::size_t n_) : n(n_), root(4 * n_), g(n_) {
        for (std::size_t a = 0; a < 4 * n; ++a) root[a] = std::polar(1.0, 2 * kPi * static_cast<double>(a) / static_cast<double>(4 * n));
        for (std::size_t j = 0, p = 1; j < n; ++j, p = p * 5 % (4 * n)) g[j] = p;
    }
    std::vector<double> coeffs(const cvec& z) const {
        std::vector<double> c(2 * n);
        for (std::size_t k = 0; k < n; ++k) {
            cplx w = 0;
            for (std::size_t j = 0; j < n; ++j) w += z[j] * std::conj(root[g[j] * k % (4 * n)]);
            w /= static_cast<double>(n);
            c[k] = w.real();
            c[k + n] = w.imag();
        }
        return c;
    }
    cvec slots(const std::vector<double>& c) const {
        cvec z(n, 0);
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t k = 0; k < n; ++k) z[j] += cplx(c[k], c[k + n]) * root[g[j] * k % (4 * n)];
        return z;
    }
};

// ---- the error model of the header --------------------------------------------------------------------------------

struct BootModel {
    cvec expected;   // z + E(z)
    double det = 0;  // max |E(z)|
    double noise = 0, floor = 0;
    double bound() const { return noise + floor; }                  // for |result - expected|
    double precision_bound() const { return det + noise + floor; }  // for |result - z|
};

/// The model for bootstrapping a ciphertext of message z on scale in_scale (at any level; mod_raise
/// multiplies it by k = round(q0 / (2^R in_scale)), Delta0 = k in_scale).
BootModel boot_model(const Context& ctx, const BootstrapConfig& cfg, const cvec& z, double in_scale) {
    const double N = static_cast<double>(ctx.params().n()), n = static_cast<double>(z.size());
    const double q0 = static_cast<double>(ctx.params().q_primes[0]);
    const double ratio = std::exp2(cfg.message_ratio_bits);
    const double delta0 = std::round(q0 / (ratio * in_scale)) * in_scale;
    const Embedding emb(z.size());
    std::vector<double> c = emb.coeffs(z);
    const ChebyshevPoly asin = cfg.arcsin ? cfg.arcsin_poly() : ChebyshevPoly{};
    const double sb = std::sin(2 * kPi * cfg.input_bound / ratio);
    for (double& x : c) {
        const double s = std::sin(2 * kPi * x * delta0 / q0);
        x = (q0 / delta0) * (cfg.arcsin ? asin(s / sb) : s / (2 * kPi));
    }
    BootModel m;
    m.expected = emb.slots(c);
    m.det = max_err(m.expected, z);
    const double C = 16 * kPi * cfg.k_range * std::ldexp(1.0, static_cast<int>(cfg.double_angles));  // 16 pi K 2^r
    m.noise = C * ratio * std::sqrt(2 * n) * std::sqrt(N / 18) * std::sqrt(std::min(4 * n, N)) * std::ldexp(1.0, -60);
    m.floor = 12 * std::sqrt(2 * n * N) / ctx.scale_at(ctx.user_level());
    return m;
}

// ---- parameter sets -----------------------------------------------------------------------------------------------

/// The library's default configuration on `slots` slots (0: full).
BootstrapConfig config(std::size_t slots) {
    BootstrapConfig c;
    c.slots = slots;
    return c;
}
BootstrapConfig config_r8(std::size_t slots, bool depth_optimal = true) {
    BootstrapConfig c = config(slots);
    c.message_ratio_bits = 8;
    c.depth_optimal = depth_optimal;
    return c;
}

/// One bootstrappable parameter set (N = 2^12, 2 user levels, insecure) with its keys and a Bootstrapper
/// for `cfg`. Built once each (key generation), see the accessors below.
struct BootEnv {
    BootstrapConfig cfg;
    std::shared_ptr<Context> ctx;
    std::shared_ptr<SecretKey> sk;
    std::shared_ptr<PublicKey> pk;
    std::unique_ptr<Bootstrapper> bt;
    BootstrapKeys keys;
    std::unique_ptr<Evaluator> ev;
    BootEnv(const BootstrapConfig& c, int log_scale, int log_n = kLogN) : cfg(c) {
        ctx = std::make_shared<Context>(bootstrappable_params(log_n, kLevels, log_scale, cfg, 0, 50, 56, /*insecure=*/true), 2);
        sk = ctx->gen_secret_key();
        pk = ctx->gen_public_key(*sk);
        bt = std::make_unique<Bootstrapper>(ctx, cfg);
        cfg = bt->config();  // with the automatic fields (message ratio) resolved
        keys = bt->gen_keys(*sk);
        ev = std::make_unique<Evaluator>(ctx);
    }
    std::size_t slots() const { return bt->slots(); }
    /// The model for a fresh encryption at the user level (on its canonical scale).
    BootModel model(const cvec& z) const { return boot_model(*ctx, cfg, z, ctx->scale_at(ctx->user_level())); }
    Ciphertext enc(const cvec& z, std::size_t level) const { return ctx->encrypt(ctx->encode(z, ctx->scale_at(level), level), *pk); }
    cvec dec(const Ciphertext& ct) const { return ctx->decrypt(ct, *sk); }
};

/// 8 slots, scale 2^40, the default configuration: E dominates.
BootEnv& env8() {
    static BootEnv e(config(8), 40);
    return e;
}
/// 64 slots, scale 2^50, R = 8: the noise (1) dominates.
BootEnv& env64() {
    static BootEnv e(config_r8(64), 50);
    return e;
}
/// The same with depth_optimal = false, which changes the EvalMod depth, hence the prime chain.
BootEnv& env64_sqrt_baby_steps() {
    static BootEnv e(config_r8(64, false), 50);
    return e;
}
/// Full slots (2048), scale 2^50, the default configuration.
BootEnv& env_full() {
    static BootEnv e(config(0), 50);
    return e;
}

/// Full slots at N = 2^13 (4096), scale 2^50: the model's dependence on N.
BootEnv& env_full_n13() {
    static BootEnv e(config(0), 50, 13);
    return e;
}

/// Bootstraps a fresh encryption (at the user level) of z; checks the output's level, scale and slots.
cvec bootstrapped(const BootEnv& e, const cvec& z, const Bootstrapper* bt = nullptr) {
    const Ciphertext out = (bt ? *bt : *e.bt).bootstrap(e.enc(z, e.ctx->user_level()), e.keys);
    EXPECT_EQ(out.level(), e.ctx->user_level());
    EXPECT_EQ(out.scale, e.ctx->scale_at(e.ctx->user_level()));
    EXPECT_EQ(out.slots, e.slots());
    return e.dec(out);
}

/// got (a bootstrap of z) against z + E(z) within the noise bound and against z within max |E| more.
void check_against_model(const BootModel& m, const cvec& z, const cvec& got, const std::string& what) {
    std::printf("[ model    ] %s: max |E| 2^-%.2f, noise 2^-%.2f, floor 2^-%.2f\n", what.c_str(), bits(m.det), bits(m.noise),
                bits(m.floor));
    report(what + ", against z + E(z)", max_err(got, m.expected), m.bound());
    report(what + ", precision (against z)", max_err(got, z), m.precision_bound());
    EXPECT_LT(max_err(got, m.expected), m.bound()) << what;
    EXPECT_LT(max_err(got, z), m.precision_bound()) << what;
}

// ---- whole bootstrap: precision against the input ---------------------------------------------------------------

TEST(Bootstrap, SparseSlotsPrecision) {
    for (BootEnv* e : {&env8(), &env64()}) {
        for (std::uint64_t seed : {1, 2}) {
            std::mt19937_64 rng(seed);
            const cvec z = uniform_box(e->slots(), rng);
            check_against_model(
                e->model(z), z, bootstrapped(*e, z),
                std::to_string(e->slots()) + " slots, R " + std::to_string(e->cfg.message_ratio_bits) + ", seed " + std::to_string(seed));
        }
    }
    // E's worst cases: a constant vector (c_0 = c_n = 1), and +-(1 + i) in turn, whose coefficient
    // c_(n/2) = sqrt(2) is the largest that slots in [-1, 1]^2 can give (the configuration's input_bound)
    const cvec one(8, cplx(1, 1));
    check_against_model(env8().model(one), one, bootstrapped(env8(), one), "8 slots, constant 1 + i");
    cvec alt(8);
    for (std::size_t j = 0; j < alt.size(); ++j) alt[j] = j % 2 ? cplx(-1, -1) : cplx(1, 1);
    const BootModel ma = env8().model(alt);
    check_against_model(ma, alt, bootstrapped(env8(), alt), "8 slots, +-(1 + i) in turn");
    EXPECT_LT(ma.det, std::ldexp(1.0, -25));  // EvalMod's own error at the worst input, from the configuration
}

TEST(Bootstrap, FullSlotsPrecision) {
    BootEnv& e = env_full();
    ASSERT_EQ(e.slots(), e.ctx->slots());
    std::mt19937_64 rng(3);
    const cvec z = uniform_box(e.slots(), rng);
    check_against_model(e.model(z), z, bootstrapped(e, z), "full slots (2048)");
}

TEST(Bootstrap, FullSlotsPrecisionAtN8192) {
    // The noise term grows like N^1.5 at full slots (sqrt(N / 18) sqrt(N) per slot, sqrt(2n) = sqrt(N) for
    // SlotToCoeff): measured 2^-29.2 at N = 2^12, 2^-27.7 at 2^13, 2^-26.2 at 2^14 (R = 6).
    BootEnv& e = env_full_n13();
    ASSERT_EQ(e.slots(), 4096u);
    std::mt19937_64 rng(3);
    const cvec z = uniform_box(e.slots(), rng);
    check_against_model(e.model(z), z, bootstrapped(e, z), "N = 2^13, full slots (4096)");
}

TEST(Bootstrap, ProductAtLevelZeroThenMultiplyAgain) {
    // x * y down to level 0, bootstrapped, then squared at the refreshed level. The bootstrap carries the
    // product's own error, so the model is taken for the product's decryption (on the product's scale).
    BootEnv& e = env8();
    std::mt19937_64 rng(4);
    const cvec x = uniform_box(8, rng), y = uniform_box(8, rng);
    const Ciphertext p = e.ev->mul(e.enc(x, 1), e.enc(y, 1), *e.keys.relin);
    ASSERT_EQ(p.level(), 0u);
    const cvec before = e.dec(p);
    const Ciphertext b = e.bt->bootstrap(p, e.keys);
    ASSERT_EQ(b.level(), e.ctx->user_level());
    EXPECT_EQ(b.scale, e.ctx->scale_at(e.ctx->user_level()));
    const BootModel m = boot_model(*e.ctx, e.cfg, before, p.scale);
    const cvec after = e.dec(b);
    check_against_model(m, before, after, "bootstrap of a level-0 product, 8 slots");
    // The square of the refreshed ciphertext against the square of its own decryption: the tensor product
    // decrypts exactly to after^2; relinearization and the rescale add one rounding term, 8 units of
    // sqrt(2 n N) / Delta (the floor's unit).
    const Ciphertext sq = e.ev->mul(b, b, *e.keys.relin);
    EXPECT_EQ(sq.level(), e.ctx->user_level() - 1);
    const double sq_bound = 8 * std::sqrt(16.0 * 4096) / e.ctx->scale_at(sq.level());
    const double sq_err = max_err(e.dec(sq), slot_mul(after, after));
    report("square after bootstrapping, against after^2", sq_err, sq_bound);
    EXPECT_LT(sq_err, sq_bound);
    // and against the clear (x y)^2: |after^2 - (x y)^2| <= d (2 |x y| + d) with d = |after - x y|, |x y| <= 2
    const cvec xy2 = slot_mul(slot_mul(x, y), slot_mul(x, y));
    const double carried = max_err(after, slot_mul(x, y));
    report("square after bootstrapping, against (x y)^2", max_err(e.dec(sq), xy2), 4 * carried + carried * carried + sq_bound);
    EXPECT_LT(max_err(e.dec(sq), xy2), 4 * carried + carried * carried + sq_bound);
}

TEST(Bootstrap, BootstrappingTwice) {
    // The second bootstrap's message is the first one's output (with its error): the model applies to it.
    BootEnv& e = env8();
    std::mt19937_64 rng(5);
    const cvec z = uniform_box(8, rng);
    const Ciphertext in = e.enc(z, 0);
    const Ciphertext once = e.bt->bootstrap(in, e.keys);
    const BootModel m1 = boot_model(*e.ctx, e.cfg, z, in.scale);
    const cvec once_v = e.dec(once);
    check_against_model(m1, z, once_v, "bootstrap of a level-0 encryption, 8 slots");
    const Ciphertext twice = e.bt->bootstrap(once, e.keys);
    const BootModel m2 = boot_model(*e.ctx, e.cfg, once_v, once.scale);
    const cvec twice_v = e.dec(twice);
    check_against_model(m2, once_v, twice_v, "bootstrap of the bootstrapped, 8 slots");
    report("bootstrap twice, against z", max_err(twice_v, z), m1.precision_bound() + m2.precision_bound());
    EXPECT_LT(max_err(twice_v, z), m1.precision_bound() + m2.precision_bound());
}

// ---- the MAD options, each switched off ---------------------------------------------------------------------------
// On the 64-slot set, where the noise dominates (so that a path adding noise would show). E is the same
// for every variant (the same message and Delta0), so the variants must agree within the noise bound.
// (merged_moddown = false currently gives a bit-identical result: ModDown's rounding followed by the
// rescale's equals the single rounding of the division by P q_l. The test does not require it.)

TEST(BootstrapMad, EachOptionOffAgreesWithAllOn) {
    BootEnv& e = env64();
    std::mt19937_64 rng(6);
    const cvec z = uniform_box(64, rng);
    const BootModel m = e.model(z);
    const Ciphertext in = e.enc(z, e.ctx->user_level());
    const cvec all_on = e.dec(e.bt->bootstrap(in, e.keys));
    check_against_model(m, z, all_on, "64 slots, all MAD options on");
    BootstrapConfig merged_off = e.cfg, hoisted_off = e.cfg;
    merged_off.merged_moddown = false;
    hoisted_off.hoisted_moddown = false;
    for (const auto& [name, cfg] : {std::pair<std::string, BootstrapConfig>{"merged_moddown = false", merged_off},
                                    std::pair<std::string, BootstrapConfig>{"hoisted_moddown = false", hoisted_off}}) {
        SCOPED_TRACE(name);
        // the same parameters and keys: neither option changes the levels or the rotations
        const Bootstrapper bt(e.ctx, cfg);
        ASSERT_EQ(bt.rotations(), e.bt->rotations());
        const Ciphertext out = bt.bootstrap(in, e.keys);
        EXPECT_EQ(out.level(), e.ctx->user_level());
        EXPECT_EQ(out.scale, e.ctx->scale_at(e.ctx->user_level()));
        const cvec got = e.dec(out);
        check_against_model(m, z, got, "64 slots, " + name);
        report("  " + name + " against all options on", max_err(got, all_on), m.bound());
        EXPECT_LT(max_err(got, all_on), m.bound());
    }
}

TEST(BootstrapMad, DepthOptimalOffHasItsOwnLevelsAndAgrees) {
    BootEnv& d = env64_sqrt_baby_steps();
    BootEnv& e = env64();
    // ~sqrt(d) baby steps never need fewer levels than the depth-optimal evaluation
    EXPECT_GE(d.cfg.evalmod_depth(), e.cfg.evalmod_depth());
    EXPECT_EQ(d.ctx->params().boot_bits.size(), d.cfg.stc_levels + d.cfg.evalmod_depth() + d.cfg.cts_levels);
    if (d.cfg.evalmod_depth() != e.cfg.evalmod_depth())
        expect_invalid([&] { Bootstrapper bt(e.ctx, d.cfg); }, {"bootstrapping levels", "EvalMod"},
                       "depth_optimal = false on the depth-optimal chain");
    std::mt19937_64 rng(6);
    const cvec z = uniform_box(64, rng);
    const cvec all_on = bootstrapped(e, z);
    const cvec got = bootstrapped(d, z);
    const BootModel m = d.model(z);
    check_against_model(m, z, got, "64 slots, depth_optimal = false");
    report("  depth_optimal = false against true", max_err(got, all_on), m.bound());
    EXPECT_LT(max_err(got, all_on), m.bound());
}

// ---- the stages ---------------------------------------------------------------------------------------------------

/// Centered integer coefficients of p (any form) mod the product of its Q primes, exactly (GMP CRT).
std::vector<Z> centered_coeffs(const Poly& p_in) {
    Poly p(p_in);
    poly_to_coeff(p);
    std::vector<u64> primes;
    for (std::size_t i = 0; i < p.q_limbs(); ++i) primes.push_back(p.table(i).mod.q);
    Z M;
    product(M.v, primes);
    std::vector<u64> res(primes.size());
    std::vector<Z> out(p.n());
    const HostLimbs ph = p.host();
    for (std::size_t c = 0; c < p.n(); ++c) {
        for (std::size_t i = 0; i < primes.size(); ++i) res[i] = ph.limb(i)[c];
        crt_gmp(out[c].v, res, primes);
        center(out[c].v, M.v);
    }
    return out;
}

TEST(BootstrapStages, ModRaiseGivesDelta0MPlusQ0I) {
    // mod_raise(ct): drop to level 0, multiply by the integer k = round(q0 / (2^R scale_0)) (Delta0 = k
    // scale_0), switch to the sparse secret, raise to Q_L, switch back. Its plaintext is
    //     t = k m0 + q0 I + e,   |I| <= K,   e the two key switches' noise,
    // with m0 the centered plaintext of the level-0 input. The BV switch s -> s' adds sum_i digit_i e_i
    // over ~17 digits of |digit| <= 8 and Gaussian e_i (sigma 3.2): ~2^12 per coefficient (measured max
    // 2^13.9); the hybrid switch back adds its rounding, ~2^4. |e| < 2^30 leaves a wide margin while any error in the lift
    // (a wrong multiple of q0, a non-centered lift) is of order q0 = 2^60.
    BootEnv& e = env8();
    const Context& c = *e.ctx;
    std::mt19937_64 rng(7);
    const cvec z = uniform_box(8, rng);
    const Ciphertext ct = e.enc(z, c.user_level());
    const Ciphertext ct0 = e.ev->drop_to_level(ct, 0);
    double delta0 = 0;
    const Ciphertext raised = e.bt->mod_raise(ct, e.keys, delta0);
    ASSERT_EQ(raised.level(), c.max_level());
    EXPECT_EQ(raised.slots, 8u);
    const u64 q0 = c.params().q_primes[0];
    const std::size_t N = c.params().n(), gap = N / 16;
    EXPECT_EQ(raised.scale, e.cfg.k_range * static_cast<double>(q0) * static_cast<double>(gap));
    // Delta0 = k scale_0 with k the integer nearest to q0 / (2^R scale_0)
    const double kd = delta0 / ct0.scale;
    ASSERT_EQ(kd, std::round(kd));
    EXPECT_EQ(kd, std::round(static_cast<double>(q0) / (std::ldexp(1.0, e.cfg.message_ratio_bits) * ct0.scale)));
    EXPECT_NEAR(std::log2(delta0), std::log2(static_cast<double>(q0)) - e.cfg.message_ratio_bits, 0.01);
    const long k = static_cast<long>(kd);

    const std::vector<Z> m0 = centered_coeffs(c.decrypt_to_plaintext(ct0, *e.sk).m);
    const std::vector<Z> t = centered_coeffs(c.decrypt_to_plaintext(raised, *e.sk).m);
    ASSERT_EQ(m0.size(), N);
    ASSERT_EQ(t.size(), N);
    Z q(q0), d, I, r, limit;
    mpz_set_ui(limit.v, 1);
    mpz_mul_2exp(limit.v, limit.v, 30);
    long max_i = 0;
    double max_r = 0;
    std::size_t bad_r = 0, bad_i = 0;
    for (std::size_t i = 0; i < N; ++i) {
        mpz_mul_si(d.v, m0[i].v, k);
        mpz_sub(d.v, t[i].v, d.v);  // t - k m0 = q0 I + e
        // I = round(d / q0), r = d - q0 I in (-q0/2, q0/2]
        mpz_set(r.v, d.v);
        center(r.v, q.v);
        mpz_sub(I.v, d.v, r.v);
        ASSERT_TRUE(mpz_divisible_p(I.v, q.v));
        mpz_divexact(I.v, I.v, q.v);
        const long ii = mpz_get_si(I.v);
        max_i = std::max(max_i, std::labs(ii));
        max_r = std::max(max_r, std::fabs(mpz_get_d(r.v)));
        if (mpz_cmpabs(r.v, limit.v) >= 0) ++bad_r;
        if (!mpz_fits_slong_p(I.v) || static_cast<double>(std::labs(ii)) > e.cfg.k_range) ++bad_i;
    }
    std::printf("[ measured ] mod_raise: max |I| = %ld (K = %g), max |e| = 2^%.2f, Delta0 = 2^%.3f\n", max_i, e.cfg.k_range,
                std::log2(max_r), std::log2(delta0));
    EXPECT_EQ(bad_r, 0u) << "coefficients whose t - k m0 is not a multiple of q0 up to 2^30 (max |e| = 2^" << std::log2(max_r) << ")";
    EXPECT_EQ(bad_i, 0u) << "coefficients with |I| > K (max |I| = " << max_i << ")";
    // the sparse secret keeps I small but not zero (sum of 32 terms uniform in [-1/2, 1/2]: std 1.6)
    EXPECT_GE(max_i, 1);
}

/// Sorted real parts.
std::vector<double> sorted_re(const cvec& v) {
    std::vector<double> r;
    for (auto x : v) r.push_back(x.real());
    std::sort(r.begin(), r.end());
    return r;
}
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

TEST(BootstrapStages, StagesComposeAndCarryTheCoefficients) {
    // Sparse (n = 8 slots, gap = N / 2n): after SubSum and CoeffToSlot the 2n slots hold the 2n subring
    // coefficients t_{gap j} / (K q0) of the raised plaintext (real; in the FFT's order, so the multisets
    // are compared: sorting is 1-Lipschitz in the max norm, so the sorted vectors differ by at most the
    // slot error). EvalMod turns each y into (s + s^3 / 6) / (2 pi), s = sin(2 pi K y) = sin(2 pi t / q0),
    // compared here with that float64 expression (so only its noise remains, not the arcsine's
    // truncation); SlotToCoeff then gives the message.
    BootEnv& e = env8();
    const Context& c = *e.ctx;
    const Bootstrapper& bt = *e.bt;
    std::mt19937_64 rng(8);
    const cvec z = uniform_box(8, rng);
    const BootModel bb = e.model(z);
    const Ciphertext ct = e.enc(z, c.user_level());
    double delta0 = 0;
    const Ciphertext raised = bt.mod_raise(ct, e.keys, delta0);
    const std::vector<Z> t = centered_coeffs(c.decrypt_to_plaintext(raised, *e.sk).m);
    const std::size_t N = c.params().n(), gap = N / 16;
    const double q0 = static_cast<double>(c.params().q_primes[0]), K = e.cfg.k_range, R = e.cfg.message_ratio_bits;

    const Ciphertext summed = bt.sub_sum(raised, *e.keys.galois);
    EXPECT_EQ(summed.level(), raised.level());
    const std::vector<Ciphertext> cts = bt.coeff_to_slot(summed, *e.keys.galois);
    ASSERT_EQ(cts.size(), 1u);  // sparse: [Re, Im] in one ciphertext of 2n slots
    EXPECT_EQ(cts[0].level(), c.max_level() - e.cfg.cts_levels);
    std::vector<double> want_y, want_v;
    for (std::size_t j = 0; j < 16; ++j) {
        Z r(t[gap * j]), q(c.params().q_primes[0]);
        center(r.v, q.v);  // t mod q0, centered, exactly
        const double s = std::sin(2 * kPi * mpz_get_d(r.v) / q0);
        want_y.push_back(mpz_get_d(t[gap * j].v) / (K * q0));
        want_v.push_back(bt.arcsin_poly()(s / std::sin(2 * kPi * e.cfg.input_bound / std::exp2(R))));
    }
    std::sort(want_y.begin(), want_y.end());
    std::sort(want_v.begin(), want_v.end());
    Ciphertext y = cts[0];
    y.slots = 16;
    const cvec ys = e.dec(y);
    double im = 0;
    for (auto v : ys) im = std::max(im, std::fabs(v.imag()));
    // EvalMod multiplies an error of y by K (v ~= K y), then 2^R and sqrt(2n) take it to the message: so
    // CoeffToSlot must stay below noise / (K 2^R sqrt(2n)) (2^-45.6 here) not to exceed the noise term.
    const double y_bound = bb.noise / (K * std::exp2(R) * std::sqrt(16.0));
    const double y_err = max_abs_diff(sorted_re(ys), want_y);
    report("CoeffToSlot slots vs t / (K q0)", y_err, y_bound);
    report("CoeffToSlot imaginary parts", im, y_bound);
    EXPECT_LT(y_err, y_bound);
    EXPECT_LT(im, y_bound);

    // EvalMod onto the scale the full bootstrap uses (bootstrap(): stc_in q0 / Delta0 with the arcsine).
    // Its own noise, before the 2^R and the SlotToCoeff sum, is noise / (2^R sqrt(2n)) per value; the max of
    // single values has the heavier tail of a product of roundings (r1 s, see test_ckks.cpp), which
    // SlotToCoeff's sum averages out, and it depends on the key (|s| at the 2n roots): times 4. Measured
    // 2^-42.4 to 2^-45.2 over keys.
    const double target = bt.stc_input_scale() * q0 / delta0;
    Ciphertext v = bt.eval_mod(cts[0], *e.keys.relin, target);
    EXPECT_EQ(v.level(), c.user_level() + e.cfg.stc_levels);
    EXPECT_EQ(v.scale, target);
    Ciphertext vv = v;
    vv.slots = 16;
    const double v_err = max_abs_diff(sorted_re(e.dec(vv)), want_v);
    const double v_bound = 4 * bb.noise / (std::exp2(R) * std::sqrt(16.0));
    report("EvalMod output vs float64 arcsin-poly(sin(2 pi t / q0))", v_err, v_bound);
    EXPECT_LT(v_err, v_bound);

    v.scale = bt.stc_input_scale();
    const Ciphertext out = bt.slot_to_coeff({v}, *e.keys.galois);
    EXPECT_EQ(out.level(), c.user_level());
    EXPECT_EQ(out.scale, c.scale_at(c.user_level()));
    EXPECT_EQ(out.slots, 8u);
    check_against_model(bb, z, e.dec(out), "stages composed by hand, 8 slots");
}

// ---- polynomial evaluation and linear transforms with explicit scales -------------------------------------------------

/// A plain context (no bootstrapping levels): N = 2^12, 6 levels at 2^40, rotations for the transform below.
struct PlainEnv {
    std::shared_ptr<Context> ctx;
    KeySet keys;
    std::unique_ptr<Evaluator> ev;
    PlainEnv() {
        ctx = std::make_shared<Context>(test_params(6, 2), 2);
        keys = ctx->keygen({1, 2, 3, 4, 5, 8, 12, -1, -2, -3, -4, -8}, false);
        ev = std::make_unique<Evaluator>(ctx);
    }
    /// N / 2^40: the unit of test_ckks.cpp's bounds (one product or rotation: 8 units, fresh: 4 units).
    double unit() const { return std::ldexp(1.0, kLogN - 40); }
};
PlainEnv& plain_env() {
    static PlainEnv e;
    return e;
}

std::size_t ceil_log2(std::size_t x) {
    std::size_t r = 0;
    while ((std::size_t(1) << r) < x) ++r;
    return r;
}

TEST(BootstrapCircuits, ChebyshevDepthIsCeilLog2) {
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(0.1, 1.0);
    for (std::size_t d : {7, 15, 31}) {
        ChebyshevPoly p;
        for (std::size_t k = 0; k <= d; ++k) p.coeffs.push_back(u(rng) * (rng() & 1 ? 1 : -1));  // every coefficient nonzero
        EXPECT_EQ(chebyshev_depth(p, true), ceil_log2(d + 1)) << "degree " << d;
        EXPECT_GE(chebyshev_depth(p, false), chebyshev_depth(p, true)) << "degree " << d;
    }
}

TEST(BootstrapCircuits, ChebyshevLandsOnTheTargetScale) {
    // Error of p(x) = sum c_k T_k(x): an input error e (fresh, 4 units) moves T_k by at most k^2 e (Markov's
    // inequality, |T_k'| <= k^2 on [-1, 1]), and each product adds one rounding term (8 units) that the
    // later products carry with the same k^2 gain; so |error| <= 2 * 8 units * sum |c_k| k^2, plus the
    // final rescale's rounding at the target scale (8 N / target). The target scales are not powers of two
    // and not canonical, so a wrong landing scale would show as a relative error of order 1.
    PlainEnv& e = plain_env();
    const Context& c = *e.ctx;
    std::mt19937_64 rng(10);
    std::vector<double> x(c.slots());
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : x) v = u(rng);
    const cvec xc(x.begin(), x.end());
    const Ciphertext ct = c.encrypt(c.encode(xc, c.scale_at(c.user_level()), c.user_level()), *e.keys.pub);
    const auto f = [](double t) { return std::exp(t) * std::cos(2 * t) + 0.25 * std::sin(5 * t); };
    for (std::size_t d : {7, 15, 31}) {
        for (bool optimal : {true, false}) {
            SCOPED_TRACE("degree " + std::to_string(d) + (optimal ? ", depth-optimal" : ", sqrt baby steps"));
            const ChebyshevPoly p = ChebyshevPoly::interpolate(f, d, -1.0, 1.0);
            const double target = 1.2345 * std::ldexp(1.0, 38 + static_cast<int>(d % 5));
            const std::size_t depth = chebyshev_depth(p, optimal);
            if (depth > ct.level()) continue;
            const Ciphertext y = evaluate_chebyshev(*e.ev, ct, p, *e.keys.relin, target, optimal);
            EXPECT_EQ(y.scale, target);
            EXPECT_EQ(y.level(), ct.level() - depth);
            double sum = 0;
            for (std::size_t k = 0; k <= d; ++k) sum += std::fabs(p.coeffs[k]) * static_cast<double>(k * k);
            const double bound = 2 * 8 * e.unit() * sum + 8 * static_cast<double>(c.params().n()) / target;
            const cvec got = c.decrypt(y, *e.keys.secret);
            double err = 0;
            for (std::size_t i = 0; i < x.size(); ++i) err = std::max(err, std::abs(got[i] - cplx(p(x[i]), 0)));
            report("chebyshev degree " + std::to_string(d) + (optimal ? " optimal" : " sqrt"), err, bound);
            EXPECT_LT(err, bound);
        }
    }
}

TEST(BootstrapCircuits, LinearTransformWithExplicitScales) {
    // y_i = sum_k d_k[i] x[(i + k) mod n]. Error: the input's fresh error (4 units at the input scale) and
    // one rotation's rounding (8 units) per diagonal, times |d_k| <= 1, then the final rescale's rounding
    // at the output scale (8 units): bound = ndiag * 12 u / in_scale + 8 u / out_scale, with the unit
    // u = sqrt(2 n N) of n decoded slots (test_ckks.cpp's N for full slots). Input and output scales are
    // neither canonical nor powers of two, so a wrong scale gives a relative error of order 1.
    PlainEnv& e = plain_env();
    const Context& c = *e.ctx;
    const std::size_t n = 16, level = 4;
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> box(-M_SQRT1_2, M_SQRT1_2);
    std::map<long, std::vector<cplx>> diags;
    for (long k : {0L, 1L, 2L, 5L, -3L, 8L, 12L}) {
        std::vector<cplx> d(n);
        for (auto& v : d) {
            const double re = box(rng), im = box(rng);
            v = {re, im};
        }
        diags[k] = d;
    }
    const cvec x = uniform_box(n, rng);
    cvec want(n, 0);
    for (const auto& [k, d] : diags)
        for (std::size_t i = 0; i < n; ++i)
            want[i] += d[i] * x[((static_cast<long>(i) + k) % static_cast<long>(n) + static_cast<long>(n)) % static_cast<long>(n)];
    const double in_scale = 1.37 * std::ldexp(1.0, 39), out_scale = 0.71 * std::ldexp(1.0, 43);
    const LinearTransform lt(e.ctx, diags, n, level, 0, in_scale, out_scale);
    EXPECT_EQ(lt.in_scale(), in_scale);
    EXPECT_EQ(lt.out_scale(), out_scale);
    const Ciphertext ct = c.encrypt(c.encode(x, in_scale, level), *e.keys.pub);
    const double u = std::sqrt(2.0 * static_cast<double>(n * c.params().n()));
    const double bound = static_cast<double>(diags.size()) * 12 * u / in_scale + 8 * u / out_scale;
    for (bool hoisted : {true, false}) {
        SCOPED_TRACE(hoisted ? "apply (hoisted)" : "apply_reference");
        const Ciphertext y = hoisted ? lt.apply(ct, *e.keys.galois) : lt.apply_reference(ct, *e.keys.galois);
        EXPECT_EQ(y.level(), level - 1);
        EXPECT_EQ(y.scale, out_scale);
        const double err = max_err(c.decrypt(y, *e.keys.secret), want);
        report(std::string("linear transform, ") + (hoisted ? "hoisted" : "plain"), err, bound);
        EXPECT_LT(err, bound);
    }
    // a ciphertext on another scale is refused
    const Ciphertext other = c.encrypt(c.encode(x, c.scale_at(level), level), *e.keys.pub);
    expect_invalid([&] { lt.apply(other, *e.keys.galois); }, {"scale"}, "input on the canonical scale");
}

// ---- misuse -------------------------------------------------------------------------------------------------------

TEST(BootstrapMisuse, WrongSlotCount) {
    BootEnv& e = env8();
    std::mt19937_64 rng(12);
    const Ciphertext ct16 = e.enc(uniform_box(16, rng), e.ctx->user_level());
    expect_invalid([&] { e.bt->bootstrap(ct16, e.keys); }, {"16 slots", "8"}, "16 slots into an 8-slot bootstrapper");
    // slot counts that are not powers of two or above N / 2 are refused by the constructor
    for (std::size_t s : {std::size_t(6), std::size_t(4096)}) expect_invalid([&] { Bootstrapper bt(e.ctx, config(s)); }, {"slots"});
}

TEST(BootstrapMisuse, ParametersWithoutBootstrappingLevels) {
    auto ctx = std::make_shared<Context>(test_params(3, 2), 1);
    expect_invalid([&] { Bootstrapper bt(ctx, config(8)); }, {"bootstrapping levels", "bootstrappable_params"});
    expect_invalid([&] { Bootstrapper bt(nullptr, config(8)); }, {"context"});
}

TEST(BootstrapMisuse, MissingKeys) {
    BootEnv& e = env8();
    std::mt19937_64 rng(13);
    const Ciphertext ct = e.enc(uniform_box(8, rng), e.ctx->user_level());
    BootstrapKeys no_encaps;
    no_encaps.relin = e.keys.relin;
    no_encaps.galois = e.keys.galois;
    expect_invalid([&] { e.bt->bootstrap(ct, no_encaps); }, {"encapsulation keys"}, "no encapsulation keys");
    BootstrapKeys half = e.keys;
    half.from_sparse.reset();
    expect_invalid([&] { e.bt->bootstrap(ct, half); }, {"encapsulation keys"}, "no key back from the sparse secret");
    BootstrapKeys no_relin = e.keys;
    no_relin.relin.reset();
    expect_invalid([&] { e.bt->bootstrap(ct, no_relin); }, {"missing keys"}, "no relinearization key");
    expect_invalid([&] { e.bt->bootstrap(Ciphertext{}, e.keys); }, {"empty"}, "empty ciphertext");
}

TEST(BootstrapMisuse, InputScaleAboveTheMessageRatio) {
    // the scale must leave 2^R of room below q0: k = round(q0 / (2^R scale)) >= 1
    BootEnv& e = env8();
    std::mt19937_64 rng(14);
    Ciphertext ct = e.ev->drop_to_level(e.enc(uniform_box(8, rng), e.ctx->user_level()), 0);
    ct.scale = std::ldexp(static_cast<double>(e.ctx->params().q_primes[0]), -e.cfg.message_ratio_bits + 2);
    expect_invalid([&] { e.bt->bootstrap(ct, e.keys); }, {"input scale", "q0"});
}

TEST(BootstrapMisuse, InvalidConfigurations) {
    BootstrapConfig c = config(8);
    c.k_range = 0;
    expect_invalid([&] { (void)c.evalmod_depth(); }, {"k_range"});
    c = config(8);
    c.message_ratio_bits = 1;
    expect_invalid([&] { (void)bootstrappable_params(kLogN, kLevels, 40, c, 0, 50, 56, true); }, {"message_ratio_bits"});
    c = config(8);
    c.cts_levels = 4;  // more factors than log2(8) FFT stages
    const CkksParams p = bootstrappable_params(kLogN, kLevels, 40, c, 0, 50, 56, true);
    auto ctx = std::make_shared<Context>(p, 1);
    expect_invalid([&] { Bootstrapper bt(ctx, c); }, {"log2(slots) = 3"});
    // the 128-bit bound: N = 2^12 cannot hold the bootstrapping chain securely
    expect_invalid([&] { (void)bootstrappable_params(kLogN, kLevels, 40, config(8)); }, {"128-bit"});
}

}  // namespace
}  // namespace ember
