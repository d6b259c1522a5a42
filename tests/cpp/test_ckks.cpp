// End-to-end tests of CKKS (ckks/params, encoder, context, evaluator) at N = 2^12 against plain complex arithmetic
// in double / long double, with error bounds derived from the noise model below.
//
// Noise model (slot errors before dividing by the scale Delta = 2^log_scale; N = 2^12). A polynomial error e gives
// slot j the error e(zeta_j), a sum of N terms:
//   * encoding rounding, coefficients uniform in [-1/2, 1/2]:   E|e(zeta)|^2 = N/12, std 18.5
//   * fresh Gaussian error, sigma = 3.2 (secret-key encryption): E|e(zeta)|^2 = N sigma^2, std 205
//   * rounding of a division (ModDown, Rescale): r0 + r1 s with r_i uniform in [-1/2, 1/2] and s ternary. In the
//     slots this is r0(zeta) + r1(zeta) s(zeta), a product of two independent near-Gaussians with E|.|^2 = N/12 and
//     2N/3: scale sigma_r = N sqrt(2/36) = 0.236 N = 965. The product has a heavier tail than a Gaussian:
//     P(|r1 s| > k sigma_r) ~ exp(-2k), so the largest of 2048 slots exceeds 10 sigma_r = 2.4 N with probability
//     below 2048 e^-20 < 1e-5. Public-key encryption divides its noise by P, leaving only this rounding; rotations
//     and relinearization add one such term (their key-switching noise, alpha (D/P) sigma N, is below 2^-8 per
//     coefficient).
// Measured maxima (N = 2^12, log_scale = 40): sk encryption 2^-30.7, pk encryption 2^-27.5 (1.4 N / Delta),
// mul 2^-27.2, rotate 2^-27.4. Bounds, with |m| <= 1 per slot:
//   fresh (pk or sk):               one rounding term, tail 2.4 N                      -> fresh() = 4 N / Delta (2^-26)
//   after one mul / rescale / rotation: the inputs' errors times |m| <= 1, plus one rounding term, tail <= 4.8 N
//                                                                                          -> op() = 8 N / Delta (2^-25)
// A functional error (wrong slot, scale, sign or key) is of order 1, far above these; so is any loss of more than
// ~2 bits of precision against the measured values.
#include <gtest/gtest.h>
#include <gmp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "circuits/rotsum.hpp"
#include "math/primes.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

struct Env {
    std::shared_ptr<Context> ctx;
    KeySet keys;
    std::unique_ptr<Evaluator> ev;
    Env(CkksParams p, const std::vector<long>& rotations, bool conjugation, int threads = 2) {
        ctx = std::make_shared<Context>(p, threads);
        keys = ctx->keygen(rotations, conjugation);
        ev = std::make_unique<Evaluator>(ctx);
    }
    /// N / Delta: the unit of the noise bounds.
    double unit() const { return std::ldexp(1.0, ctx->params().log_n - ctx->params().log_scale); }
    double fresh() const { return 4 * unit(); }
    double op() const { return 8 * unit(); }
    Ciphertext enc(const cvec& z, bool pk = true, std::size_t level = SIZE_MAX) const {
        const std::size_t l = level == SIZE_MAX ? ctx->max_level() : level;
        const Plaintext pt = ctx->encode(z, ctx->scale_at(l), l);
        return pk ? ctx->encrypt(pt, *keys.pub) : ctx->encrypt(pt, *keys.secret);
    }
    cvec dec(const Ciphertext& ct) const { return ctx->decrypt(ct, *keys.secret); }
};

/// The main context: levels 3, dnum 2, rotations +-1 and 3, conjugation; threads = 2. Built once.
Env& env() {
    static Env e(test_params(3, 2), {1, -1, 3}, true);
    return e;
}

/// Calls body(slots, x, y) for 16 and for 2048 slots, x and y random slot vectors from a generator seeded with seed.
template <class F>
void for_random_pairs(std::uint64_t seed, F&& body) {
    std::mt19937_64 rng(seed);
    for (std::size_t slots : {16, 2048}) {
        SCOPED_TRACE("slots " + std::to_string(slots));
        const cvec x = random_slots(slots, rng), y = random_slots(slots, rng);
        body(slots, x, y);
    }
}

// ---- GMP helpers for the encoder checks -------------------------------------------------------------------------

/// Centered integer coefficients of p (any form) as doubles, by GMP CRT (Garner).
std::vector<double> centered_coeffs(const Poly& p_in) {
    Poly p(p_in);
    poly_to_coeff(p);
    std::vector<u64> primes;
    for (std::size_t i = 0; i < p.q_limbs(); ++i) primes.push_back(p.table(i).mod.q);
    Z M, x;
    product(M.v, primes);
    std::vector<u64> res(primes.size());
    std::vector<double> out(p.n());
    const HostLimbs ph = p.host();
    for (std::size_t c = 0; c < p.n(); ++c) {
        for (std::size_t i = 0; i < primes.size(); ++i) res[i] = ph.limb(i)[c];
        crt_gmp(x.v, res, primes);
        center(x.v, M.v);
        out[c] = mpz_get_d(x.v);
    }
    return out;
}

/// Slot j = m(zeta^(5^j)), zeta = exp(i pi / N), by direct evaluation in long double.
std::vector<std::complex<long double>> naive_slots(const std::vector<double>& coeffs, double scale, std::size_t slots) {
    const std::size_t n = coeffs.size(), two_n = 2 * n;
    std::vector<std::complex<long double>> zeta(two_n);
    for (std::size_t t = 0; t < two_n; ++t) {
        const long double a = 3.14159265358979323846264338327950288L * static_cast<long double>(t) / static_cast<long double>(n);
        zeta[t] = {cosl(a), sinl(a)};
    }
    std::vector<std::complex<long double>> out(slots);
    std::size_t g = 1;
    for (std::size_t j = 0; j < slots; ++j) {
        std::complex<long double> s = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (coeffs[i] != 0) s += static_cast<long double>(coeffs[i]) * zeta[(i * g) % two_n];
        out[j] = s / static_cast<long double>(scale);
        g = g * 5 % two_n;
    }
    return out;
}

// ---- parameters -------------------------------------------------------------------------------------------------

TEST(CkksParams, InsecureParametersAreRefused) {
    CkksParams p;
    p.log_n = 16;
    p.levels = 30;
    expect_invalid([&] { p.finalize(); }, {"128-bit"}, "log_n = 16, levels = 30 without insecure");
    EXPECT_FALSE(p.finalized());
    CkksParams p2;
    p2.log_n = 16;
    p2.levels = 30;
    expect_invalid([&] { Context c(p2); }, {"128-bit"});
    // the same literal with insecure = true finalizes
    p2.insecure = true;
    EXPECT_NO_THROW(p2.finalize());
    EXPECT_GT(p2.log_qp(), max_log_qp_128(16));
    // a small ring needs insecure as well
    CkksParams p3 = test_params(2, 1);
    p3.log_n = 9;
    p3.insecure = false;
    expect_invalid([&] { p3.finalize(); }, {"log_n"});
}

TEST(CkksParams, ValidationNamesTheParameter) {
    auto bad = [](auto mutate, const char* word) {
        CkksParams p = test_params(3, 2);
        mutate(p);
        expect_invalid([&] { p.finalize(); }, {word});
    };
    bad([](CkksParams& p) { p.levels = -1; }, "levels");
    bad([](CkksParams& p) { p.log_scale = 10; }, "log_scale");
    bad([](CkksParams& p) { p.log_scale = 61; }, "log_scale");
    bad([](CkksParams& p) { p.first_mod_bits = 30; }, "first_mod_bits");
    bad([](CkksParams& p) { p.dnum = 0; }, "dnum");
    bad([](CkksParams& p) { p.dnum = 5; }, "dnum");
    bad([](CkksParams& p) { p.sigma = 0; }, "sigma");
    bad([](CkksParams& p) { p.special_mod_bits = 10; }, "special_mod_bits");
    bad([](CkksParams& p) { p.log_n = 18; }, "log_n");
    bad([](CkksParams& p) { p.secret = SecretDist::HammingWeight; p.hamming_weight = 0; }, "hamming_weight");
}

TEST(CkksParams, PrimeChainProperties) {
    struct Case { int log_n, levels, log_scale, first, dnum; bool insecure; };
    const Case cases[] = {{12, 3, 40, 50, 2, true}, {12, 4, 40, 50, 3, true}, {12, 3, 40, 50, 1, true}, {14, 5, 40, 50, 3, false},
                          {13, 8, 50, 60, 3, true}, {15, 12, 45, 55, 4, false}, {14, 0, 40, 50, 1, false}};
    for (const auto& c : cases) {
        CkksParams p;
        p.log_n = c.log_n; p.levels = c.levels; p.log_scale = c.log_scale; p.first_mod_bits = c.first; p.dnum = c.dnum; p.insecure = c.insecure;
        SCOPED_TRACE(p.describe());
        ASSERT_NO_THROW(p.finalize());
        SCOPED_TRACE(p.describe());
        const u64 two_n = 2 * p.n();
        ASSERT_EQ(p.q_primes.size(), static_cast<std::size_t>(c.levels + 1));
        std::vector<u64> all = p.q_primes;
        all.insert(all.end(), p.p_primes.begin(), p.p_primes.end());
        for (u64 q : all) {
            EXPECT_TRUE(is_prime(q)) << q;
            EXPECT_EQ(q % two_n, 1u) << q;
        }
        std::sort(all.begin(), all.end());
        EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "repeated prime";
        EXPECT_NEAR(std::log2(double(p.q_primes[0])), c.first, 0.01);
        for (std::size_t i = 1; i < p.q_primes.size(); ++i) {
            EXPECT_NEAR(std::log2(double(p.q_primes[i])), c.log_scale, 0.01);
            if (c.log_scale == 50) {
                EXPECT_LT(p.q_primes[i], u64(1) << 50);
            }
        }
        // P exceeds the largest digit by the 16-bit margin, with the fewest special primes that do
        double max_digit = 0;
        for (auto [f, l] : digit_partition(p.q_primes.size(), c.dnum)) {
            double b = 0;
            for (std::size_t i = f; i < l; ++i) b += std::log2(double(p.q_primes[i]));
            max_digit = std::max(max_digit, b);
        }
        double pbits = 0;
        for (u64 q : p.p_primes) pbits += std::log2(double(q));
        EXPECT_GE(pbits, max_digit + 16);
        EXPECT_LT(pbits - std::log2(double(p.p_primes.back())), max_digit + 16) << "one special prime fewer would do";
        double qbits = 0;
        for (u64 q : p.q_primes) qbits += std::log2(double(q));
        EXPECT_NEAR(p.log_q(), qbits, 1e-9);
        EXPECT_NEAR(p.log_qp(), qbits + pbits, 1e-9);
        if (!c.insecure) {
            EXPECT_LE(p.log_qp(), max_log_qp_128(c.log_n));
        }
    }
}

// ---- encoding ---------------------------------------------------------------------------------------------------

TEST(CkksEncoder, RoundTripFullAndSparse) {
    Env& e = env();
    std::mt19937_64 rng(21);
    // Rounding the coefficients costs at most sqrt(N/12) * 6 / Delta ~ 2^-33 per slot: 2^-30 leaves 8x.
    const double bound = std::ldexp(1.0, -30);
    for (std::size_t slots : {1, 2, 16, 2048}) {
        for (std::size_t level : {std::size_t(0), e.ctx->max_level()}) {
            const cvec z = random_slots(slots, rng);
            const Plaintext pt = e.ctx->encode(z, e.ctx->scale_at(level), level);
            EXPECT_EQ(pt.slots, slots);
            EXPECT_EQ(pt.level(), level);
            EXPECT_LT(max_err(e.ctx->decode(pt), z), bound) << "slots " << slots << " level " << level;
        }
    }
    // scales beyond 2^63 (the coefficients' residues are computed from the double's mantissa and exponent)
    for (int log_scale : {62, 70, 90}) {
        const cvec z = random_slots(64, rng);
        const Plaintext pt = e.ctx->encode(z, std::ldexp(1.0, log_scale), e.ctx->max_level());
        EXPECT_LT(max_err(e.ctx->decode(pt), z), bound) << "scale 2^" << log_scale;
    }
    // large values at a small scale: relative precision
    cvec big = random_slots(2048, rng);
    for (auto& v : big) v *= 1e6;
    EXPECT_LT(max_err(e.ctx->decode(e.ctx->encode(big)), big), 1e6 * bound);
    // a real constant vector encodes to a constant polynomial
    const cvec c(2048, cplx(0.75, 0));
    const auto coeffs = centered_coeffs(e.ctx->encode(c).m);
    EXPECT_EQ(coeffs[0], std::round(0.75 * e.ctx->scale_at(e.ctx->max_level())));
    for (std::size_t i = 1; i < coeffs.size(); ++i) ASSERT_EQ(coeffs[i], 0.0) << i;
}

TEST(CkksEncoder, DecodeMatchesDirectEvaluation) {
    Env& e = env();
    std::mt19937_64 rng(22);
    const double scale = e.ctx->scale_at(e.ctx->max_level());
    for (std::size_t slots : {1, 2, 16, 2048}) {
        SCOPED_TRACE("slots " + std::to_string(slots));
        const cvec z = random_slots(slots, rng);
        const Plaintext pt = e.ctx->encode(z);
        const auto coeffs = centered_coeffs(pt.m);
        // a sparse encoding lives in Z[X^(N / 2 slots)]
        const std::size_t gap = e.ctx->params().n() / (2 * slots);
        for (std::size_t i = 0; i < coeffs.size(); ++i)
            if (i % gap) {
                ASSERT_EQ(coeffs[i], 0.0) << "coefficient " << i << " outside the subring";
            }
        const auto naive = naive_slots(coeffs, scale, slots);
        const cvec dec = e.ctx->decode(pt);
        for (std::size_t j = 0; j < slots; ++j) {
            const cplx nj(static_cast<double>(naive[j].real()), static_cast<double>(naive[j].imag()));
            ASSERT_LT(std::abs(dec[j] - nj), std::ldexp(1.0, -40)) << "decode vs direct evaluation, slot " << j;
            ASSERT_LT(std::abs(z[j] - nj), std::ldexp(1.0, -30)) << "encode: m(zeta^(5^j)) != z_j, slot " << j;
        }
    }
    // an arbitrary polynomial (not from the encoder) with random 45-bit coefficients, full slots
    Plaintext pt;
    pt.m = Poly(e.ctx->ring(), 3, Basis::Q, Form::Coeff);
    pt.scale = std::ldexp(1.0, 50);
    pt.slots = e.ctx->slots();
    std::vector<double> coeffs(pt.m.n());
    for (auto& c : coeffs) c = static_cast<double>(static_cast<i64>(rng() >> 19) - (i64(1) << 44));
    HostLimbs mh = pt.m.host(0, SIZE_MAX, /*fetch=*/false);
    for (std::size_t i = 0; i < pt.m.q_limbs(); ++i)
        for (std::size_t c = 0; c < pt.m.n(); ++c) mh.limb(i)[c] = pt.m.table(i).mod.from_signed(static_cast<i64>(coeffs[c]));
    mh.commit();
    const auto naive = naive_slots(coeffs, pt.scale, pt.slots);
    const cvec dec = e.ctx->decode(pt);
    for (std::size_t j = 0; j < pt.slots; ++j)
        ASSERT_LT(std::abs(dec[j] - cplx(double(naive[j].real()), double(naive[j].imag()))), std::ldexp(1.0, -36)) << "slot " << j;
}

TEST(CkksEncoder, ResidueOfMatchesGmp) {
    std::mt19937_64 rng(23);
    const auto qs = ntt_primes_near(60, 2, 1 << 13);
    Z x, m;
    for (int e = 0; e < 400; e += 3) {
        for (int sgn : {1, -1}) {
            // an integral double with a full 53-bit mantissa (or fewer bits for small e)
            const double mant = static_cast<double>((rng() >> 11) | (u64(1) << 52));
            const double v = sgn * (e >= 52 ? std::ldexp(mant, e - 52) : std::floor(std::ldexp(mant, e - 52)));
            mpz_set_d(x.v, v);
            for (u64 q : qs) ASSERT_EQ(Encoder::residue_of(v, Modulus(q)), mpz_fdiv_ui(x.v, q)) << "v = " << v;
        }
    }
    EXPECT_THROW(Encoder::residue_of(std::numeric_limits<double>::infinity(), Modulus(qs[0])), std::invalid_argument);
}

// ---- encryption and additive operations -------------------------------------------------------------------------

TEST(Ckks, EncryptDecryptPublicAndSecretKey) {
    Env& e = env();
    std::mt19937_64 rng(24);
    for (std::size_t slots : {1, 16, 2048}) {
        for (bool pk : {true, false}) {
            for (std::size_t level : {std::size_t(0), std::size_t(2), e.ctx->max_level()}) {
                const cvec z = random_slots(slots, rng);
                const Ciphertext ct = e.enc(z, pk, level);
                EXPECT_EQ(ct.level(), level);
                EXPECT_EQ(ct.slots, slots);
                const double err = max_err(e.dec(ct), z);
                EXPECT_LT(err, e.fresh()) << (pk ? "public" : "secret") << " key, slots " << slots << " level " << level;
            }
        }
    }
    // two encryptions of the same message differ (fresh randomness)
    const cvec z = random_slots(2048, rng);
    const Ciphertext a = e.enc(z), b = e.enc(z);
    EXPECT_FALSE(same_words(a.c1, b.c1));
}

TEST(Ckks, AddSubNegateConstantsAndPlaintexts) {
    Env& e = env();
    for_random_pairs(25, [&](std::size_t, const cvec& x, const cvec& y) {
        const Ciphertext cx = e.enc(x), cy = e.enc(y, false);
        const double two = 2 * e.fresh();
        EXPECT_LT(max_err(e.dec(e.ev->add(cx, cy)), slot_add(x, y)), two);
        EXPECT_LT(max_err(e.dec(e.ev->sub(cx, cy)), slot_sub(x, y)), two);
        EXPECT_LT(max_err(e.dec(e.ev->negate(cx)), map2(x, x, [](cplx a, cplx) { return -a; })), e.fresh());
        for (cplx c : {cplx(0.25, 0), cplx(-3.5, 0), cplx(0.3, -0.7), cplx(0, 1)}) {
            EXPECT_LT(max_err(e.dec(e.ev->add_const(cx, c)), map2(x, x, [c](cplx a, cplx) { return a + c; })), e.fresh()) << "add_const " << c;
        }
        const Plaintext py = e.ctx->encode(y, cx.scale, cx.level());
        EXPECT_LT(max_err(e.dec(e.ev->add_plain(cx, py)), slot_add(x, y)), e.fresh());
        EXPECT_LT(max_err(e.dec(e.ev->sub_plain(cx, py)), slot_sub(x, y)), e.fresh());
        EXPECT_LT(max_err(e.dec(e.ev->add_vector(cx, y)), slot_add(x, y)), e.fresh());
        // operands at different levels are aligned to the lower one
        const Ciphertext low = e.enc(y, true, 1);
        const Ciphertext s = e.ev->add(cx, low);
        EXPECT_EQ(s.level(), 1u);
        EXPECT_LT(max_err(e.dec(s), slot_add(x, y)), e.op());
        // integer constants: exact, no level used
        for (std::int64_t k : {3, -2, 0}) {
            const Ciphertext r = e.ev->mul_const(cx, cplx(double(k), 0));
            EXPECT_EQ(r.level(), cx.level());
            EXPECT_EQ(r.scale, cx.scale);
            EXPECT_LT(max_err(e.dec(r), scaled(x, double(k))), std::max<double>(1, std::abs(k)) * e.fresh()) << k;
            EXPECT_LT(max_err(e.dec(e.ev->mul_int(cx, k)), scaled(x, double(k))), std::max<double>(1, std::abs(k)) * e.fresh());
        }
    });
}

// ---- multiplication ---------------------------------------------------------------------------------------------

TEST(Ckks, MulMergedAndPlainPaths) {
    Env& e = env();
    for_random_pairs(26, [&](std::size_t slots, const cvec& x, const cvec& y) {
        const cvec xy = slot_mul(x, y);
        const Ciphertext cx = e.enc(x), cy = e.enc(y);
        const Ciphertext m1 = e.ev->mul(cx, cy, *e.keys.relin, true);
        const Ciphertext m0 = e.ev->mul(cx, cy, *e.keys.relin, false);
        for (const Ciphertext* m : {&m1, &m0}) {
            EXPECT_EQ(m->level(), cx.level() - 1);
            EXPECT_NEAR(m->scale / e.ctx->scale_at(m->level()), 1.0, 1e-12) << "not on the canonical scale";
        }
        const double err_merged = max_err(e.dec(m1), xy), err_plain = max_err(e.dec(m0), xy);
        EXPECT_LT(err_merged, e.op()) << "merged ModDown + Rescale";
        EXPECT_LT(err_plain, e.op()) << "ModDown then Rescale";
        EXPECT_LT(max_err(e.dec(m1), e.dec(m0)), 2 * e.op());
        RecordProperty("mul_err_log2_merged_slots" + std::to_string(slots), std::to_string(std::log2(err_merged)));
        RecordProperty("mul_err_log2_plain_slots" + std::to_string(slots), std::to_string(std::log2(err_plain)));
        // square
        EXPECT_LT(max_err(e.dec(e.ev->square(cx, *e.keys.relin)), slot_mul(x, x)), e.op());
        // relinearized, not rescaled: scale Delta^2, same level
        const Ciphertext r = e.ev->multiply_relin(cx, cy, *e.keys.relin);
        EXPECT_EQ(r.level(), cx.level());
        EXPECT_DOUBLE_EQ(r.scale, cx.scale * cy.scale);
        EXPECT_LT(max_err(e.dec(r), xy), e.op());
        EXPECT_LT(max_err(e.dec(e.ev->rescale(r)), xy), e.op());
    });
}

TEST(Ckks, MulSumEqualsTheSumOfProducts) {
    // sum_i x_i y_i against float64 on the slots: the tensors are added before one relinearization and one
    // rescale, so the error is that of one product per term (|x|, |y| <= 1: each term's error <= op) plus one
    // key switch and one rounding, below (k + 1) op. Merged and unmerged paths; one operand a level higher
    // (brought down as by mul); level, scale and the misuse errors.
    Env& e = env();
    std::mt19937_64 rng(61);
    for (std::size_t slots : {16, 2048}) {
        SCOPED_TRACE("slots " + std::to_string(slots));
        const std::size_t k = 3, top = e.ctx->max_level();
        std::vector<cvec> xs, ys;
        std::vector<Ciphertext> cx, cy;
        cvec want(slots, cplx(0, 0));
        for (std::size_t i = 0; i < k; ++i) {
            xs.push_back(random_slots(slots, rng));
            ys.push_back(random_slots(slots, rng));
            cx.push_back(e.enc(xs[i], true, i == 1 ? top : top - 1));  // term 1: its left operand one level up
            cy.push_back(e.enc(ys[i], true, top - 1));
            const cvec p = slot_mul(xs[i], ys[i]);
            for (std::size_t j = 0; j < slots; ++j) want[j] += p[j];
        }
        std::vector<std::pair<const Ciphertext*, const Ciphertext*>> terms;
        for (std::size_t i = 0; i < k; ++i) terms.emplace_back(&cx[i], &cy[i]);
        for (bool merged : {true, false}) {
            SCOPED_TRACE(merged ? "merged" : "unmerged");
            const Ciphertext r = e.ev->mul_sum(terms, *e.keys.relin, merged);
            EXPECT_EQ(r.level(), top - 2);
            EXPECT_NEAR(r.scale / e.ctx->scale_at(r.level()), 1.0, 1e-12) << "not on the canonical scale";
            const double err = max_err(e.dec(r), want);
            EXPECT_LT(err, double(k + 1) * e.op());
            RecordProperty(std::string("mul_sum_err_log2_") + (merged ? "merged" : "unmerged") + std::to_string(slots), std::to_string(std::log2(err)));
        }
        // one term is mul
        const Ciphertext one = e.ev->mul_sum({{&cx[0], &cy[0]}}, *e.keys.relin);
        EXPECT_LT(max_err(e.dec(one), e.dec(e.ev->mul(cx[0], cy[0], *e.keys.relin))), 2 * e.op());
    }
    const cvec x = random_slots(16, rng);
    const Ciphertext a = e.enc(x, true, 2), b = e.enc(x, true, 1), z = e.enc(x, true, 0);
    const Ciphertext a_big = e.ev->mul_int(a, 3);
    Ciphertext a_scaled = a;
    a_scaled.scale *= 2;  // declared scale differs: the products would not add up
    expect_invalid([&] { e.ev->mul_sum({}, *e.keys.relin); }, {"mul_sum", "no products"});
    expect_invalid([&] { e.ev->mul_sum({{&a, &a}, {&b, &b}}, *e.keys.relin); }, {"mul_sum", "level"});
    expect_invalid([&] { e.ev->mul_sum({{&a, &a}, {&a_scaled, &a}}, *e.keys.relin); }, {"mul_sum", "scale"});
    expect_invalid([&] { e.ev->mul_sum({{&z, &z}}, *e.keys.relin); }, {"mul_sum", "level 0"});
    EXPECT_LT(max_err(e.dec(e.ev->mul_sum({{&a, &a}, {&a_big, &a}}, *e.keys.relin)), slot_mul(x, map2(x, x, [](auto u, auto) { return 4.0 * u; }))), 6 * e.op());
    // an addend on the products' level and scale (a raw product, multiply_relin) is summed before the one rescale:
    // a^2 + a^2 + a^2 = 3 x^2 within the error of three products
    const Ciphertext raw = e.ev->multiply_relin(a, a, *e.keys.relin);
    for (bool merged : {true, false}) {
        const Ciphertext s = e.ev->mul_sum({{&a, &a}, {&a, &a}}, *e.keys.relin, merged, &raw);
        EXPECT_EQ(s.level(), 1u);
        EXPECT_LT(max_err(e.dec(s), slot_mul(x, map2(x, x, [](auto u, auto) { return 3.0 * u; }))), 4 * e.op());
    }
    expect_invalid([&] { e.ev->mul_sum({{&a, &a}}, *e.keys.relin, true, &a); }, {"mul_sum", "addend", "scale"});
    expect_invalid([&] { e.ev->mul_sum({{&a, &a}}, *e.keys.relin, true, &b); }, {"mul_sum", "addend", "level"});
}

TEST(Ckks, MulChainDownToLevelZero) {
    Env& e = env();
    std::mt19937_64 rng(27);
    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
    const Ciphertext cx = e.enc(x), cy = e.enc(y);
    // p_{k+1} = p_k * (x or y): with |x|, |y|, |p_k| <= 1 the error grows by at most the input's error plus one
    // multiplication's: err(p_k) <= k (fresh + op).
    Ciphertext p = cx;
    cvec want = x;
    for (std::size_t k = 1; k <= e.ctx->max_level(); ++k) {
        const bool use_x = k % 2 == 0;
        p = e.ev->mul(p, use_x ? cx : cy, *e.keys.relin, k % 2 == 1);  // the other operand is at a higher level
        want = slot_mul(want, use_x ? x : y);
        EXPECT_EQ(p.level(), e.ctx->max_level() - k);
        EXPECT_LT(max_err(e.dec(p), want), k * (e.fresh() + e.op())) << "depth " << k;
    }
    ASSERT_EQ(p.level(), 0u);
    expect_invalid([&] { e.ev->mul(p, p, *e.keys.relin); }, {"level"});
    expect_invalid([&] { e.ev->rescale(p); }, {"level 0"});
    expect_invalid([&] { e.ev->mul_const(p, cplx(0.5, 0)); }, {"level"});
}

TEST(Ckks, MulByFractionalConstantsAndVectors) {
    Env& e = env();
    std::mt19937_64 rng(28);
    const cvec x = random_slots(2048, rng), v = random_slots(2048, rng);
    const Ciphertext cx = e.enc(x);
    for (cplx c : {cplx(0.5, 0), cplx(-1.25, 0), cplx(3.7, 0), cplx(0.3, -0.7), cplx(1e-3, 0)}) {
        const Ciphertext r = e.ev->mul_const(cx, c);
        EXPECT_EQ(r.level(), cx.level() - 1) << c;
        EXPECT_NEAR(r.scale / e.ctx->scale_at(r.level()), 1.0, 1e-12);
        // the input's error times |c| plus the rescale rounding
        EXPECT_LT(max_err(e.dec(r), map2(x, x, [c](cplx a, cplx) { return a * c; })), std::max(1.0, std::abs(c)) * e.op()) << c;
    }
    const Ciphertext r = e.ev->mul_vector(cx, v);
    EXPECT_EQ(r.level(), cx.level() - 1);
    EXPECT_LT(max_err(e.dec(r), slot_mul(x, v)), e.op());
    // product then sum with a fresh ciphertext: levels and scales are reconciled automatically
    const Ciphertext s = e.ev->add(e.ev->mul_const(cx, cplx(0.5, 0)), cx);
    EXPECT_LT(max_err(e.dec(s), scaled(x, 1.5)), 2 * e.op());
}

// ---- rotations --------------------------------------------------------------------------------------------------

TEST(Ckks, RotateAndConjugate) {
    Env& e = env();
    std::mt19937_64 rng(29);
    for (std::size_t slots : {16, 2048}) {
        SCOPED_TRACE("slots " + std::to_string(slots));
        const cvec x = random_slots(slots, rng);
        for (std::size_t level : {e.ctx->max_level(), std::size_t(1)}) {
            const Ciphertext cx = e.enc(x, true, level);
            for (long r : {1L, -1L, 3L}) {
                const Ciphertext rc = e.ev->rotate(cx, r, *e.keys.galois);
                EXPECT_EQ(rc.level(), level);
                EXPECT_LT(max_err(e.dec(rc), rotated(x, r)), e.op()) << "rotate " << r << " level " << level;
            }
            EXPECT_LT(max_err(e.dec(e.ev->conjugate(cx, *e.keys.galois)), conjugated(x)), e.op()) << "conjugate, level " << level;
            // rotations by a multiple of the slot count are the identity and need no key
            EXPECT_LT(max_err(e.dec(e.ev->rotate(cx, 0, *e.keys.galois)), x), e.fresh());
            EXPECT_LT(max_err(e.dec(e.ev->rotate(cx, static_cast<long>(slots), *e.keys.galois)), x), e.fresh());
        }
        // composition: rotate 1 then 3 = rotate 4
        const Ciphertext c13 = e.ev->rotate(e.ev->rotate(e.enc(x), 1, *e.keys.galois), 3, *e.keys.galois);
        EXPECT_LT(max_err(e.dec(c13), rotated(x, 4)), 2 * e.op());
    }
}

TEST(Ckks, RotateManyMatchesIndividualRotations) {
    Env& e = env();
    std::mt19937_64 rng(30);
    for (std::size_t slots : {16, 2048}) {
        const cvec x = random_slots(slots, rng);
        const Ciphertext cx = e.enc(x);
        const std::vector<long> steps = {1, -1, 3, 0, 1};
        const auto many = e.ev->rotate_many(cx, steps, *e.keys.galois);
        ASSERT_EQ(many.size(), steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const cvec got = e.dec(many[i]);
            EXPECT_LT(max_err(got, rotated(x, steps[i])), e.op()) << "slots " << slots << " step " << steps[i];
            EXPECT_LT(max_err(got, e.dec(e.ev->rotate(cx, steps[i], *e.keys.galois))), 2 * e.op());
            EXPECT_EQ(many[i].level(), cx.level());
            EXPECT_EQ(many[i].slots, slots);
        }
    }
}

TEST(Ckks, GaloisElementsAndScales) {
    Env& e = env();
    const u64 two_n = 2 * e.ctx->params().n(), half = e.ctx->params().n() / 2;
    for (long r : {0L, 1L, 2L, 3L, 7L, 100L, 2047L, 2048L, 4096L, -1L, -3L, -2048L}) {
        u64 g = 1;
        const long rr = ((r % long(half)) + long(half)) % long(half);
        for (long i = 0; i < rr; ++i) g = g * 5 % two_n;
        EXPECT_EQ(e.ctx->galois_element(r), g) << r;
        EXPECT_EQ(e.ctx->galois_element(r) * e.ctx->galois_element(-r) % two_n, 1u) << r;
    }
    EXPECT_EQ(e.ctx->conjugation_element(), two_n - 1);
    EXPECT_EQ(e.ctx->scale_at(e.ctx->max_level()), std::ldexp(1.0, 40));
    for (std::size_t l = e.ctx->max_level(); l > 0; --l)
        EXPECT_DOUBLE_EQ(e.ctx->scale_at(l - 1), e.ctx->scale_at(l) * e.ctx->scale_at(l) / double(e.ctx->params().q_primes[l]));
}

// ---- other parameter sets and key variants ----------------------------------------------------------------------

void mul_rotate_check(Env& e, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
    Ciphertext cx = e.enc(x), cy = e.enc(y);
    cvec wx = x, wy = y;
    // at every level down to 1: mul (both paths) and rotate; then step one level down
    for (std::size_t level = e.ctx->max_level(); level >= 1; --level) {
        SCOPED_TRACE("level " + std::to_string(level));
        const cvec xy = slot_mul(wx, wy);
        EXPECT_LT(max_err(e.dec(e.ev->mul(cx, cy, *e.keys.relin, true)), xy), 2 * e.op());
        EXPECT_LT(max_err(e.dec(e.ev->mul(cx, cy, *e.keys.relin, false)), xy), 2 * e.op());
        EXPECT_LT(max_err(e.dec(e.ev->rotate(cx, 1, *e.keys.galois)), rotated(wx, 1)), 2 * e.op());
        cx = e.ev->mul_const(cx, cplx(0.9, 0));
        cy = e.ev->mul_const(cy, cplx(-0.9, 0));
        for (auto& v : wx) v *= 0.9;
        for (auto& v : wy) v *= -0.9;
    }
}

TEST(Ckks, DnumOne) {
    Env e(test_params(3, 1), {1}, false);
    EXPECT_EQ(e.ctx->partition().size(), 1u);
    mul_rotate_check(e, 31);
}

TEST(Ckks, DnumThreeFourLevels) {
    Env e(test_params(4, 3), {1}, false);
    EXPECT_EQ(e.ctx->partition().size(), 3u);
    mul_rotate_check(e, 32);
}

TEST(Ckks, UnseededKeysAndSeedExpansion) {
    Env& e = env();
    std::mt19937_64 rng(33);
    const auto rlk = e.ctx->gen_relin_key(*e.keys.secret, /*seeded=*/false);
    EXPECT_FALSE(rlk->seeded());
    const auto gk = e.ctx->gen_galois_keys(*e.keys.secret, {2}, false, /*seeded=*/false);
    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
    const Ciphertext cx = e.enc(x), cy = e.enc(y);
    EXPECT_LT(max_err(e.dec(e.ev->mul(cx, cy, *rlk)), slot_mul(x, y)), e.op());
    EXPECT_LT(max_err(e.dec(e.ev->rotate(cx, 2, *gk)), rotated(x, 2)), e.op());
    // a seeded key's a_j is the expansion of its seed
    ASSERT_TRUE(e.keys.relin->seeded());
    const SwitchingKey& k = *e.keys.relin;
    for (std::size_t j = 0; j < k.digits(); ++j) {
        const Poly a = expand_uniform(e.ctx->ring(), k.seeds[j], e.ctx->params().q_primes.size(), Basis::QP);
        ASSERT_TRUE(same_words(a, k.a[j])) << j;
    }
}

TEST(Ckks, SecretDistributions) {
    // ternary (default) and fixed Hamming weight: coefficients of s, and a working mul
    Env& e = env();
    Poly s(e.keys.secret->s);
    poly_to_coeff(s);
    const u64 q = s.table(0).mod.q;
    const HostLimbs sh = s.host(0, 1);
    for (std::size_t c = 0; c < s.n(); ++c) ASSERT_TRUE(sh.limb(0)[c] <= 1 || sh.limb(0)[c] == q - 1) << c;
    CkksParams p = test_params(2, 1);
    p.secret = SecretDist::HammingWeight;
    p.hamming_weight = 64;
    Env h(p, {}, false, 1);
    Poly hs(h.keys.secret->s);
    poly_to_coeff(hs);
    std::size_t nz = 0;
    const HostLimbs hh = hs.host(0, 1);
    for (std::size_t c = 0; c < hs.n(); ++c) {
        const u64 v = hh.limb(0)[c];
        ASSERT_TRUE(v <= 1 || v == hs.table(0).mod.q - 1);
        nz += v != 0;
    }
    EXPECT_EQ(nz, 64u);
    std::mt19937_64 rng(34);
    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
    EXPECT_LT(max_err(h.dec(h.ev->mul(h.enc(x), h.enc(y), *h.keys.relin)), slot_mul(x, y)), h.op());
}

// ---- misuse -----------------------------------------------------------------------------------------------------

TEST(CkksMisuse, EvaluatorRejectsInvalidInput) {
    Env& e = env();
    std::mt19937_64 rng(35);
    const cvec x = random_slots(2048, rng), xs = random_slots(16, rng);
    const Ciphertext full = e.enc(x), sparse = e.enc(xs), low = e.enc(x, true, 1);
    const auto& rlk = *e.keys.relin;
    const auto& gk = *e.keys.galois;
    GaloisKeys no_conj;  // empty
    expect_invalid([&] { e.ev->rotate(full, 2, gk); }, {"rotation key", "2"});
    expect_invalid([&] { e.ev->rotate(full, 5, no_conj); }, {"rotation key", "5"});
    expect_invalid([&] { e.ev->conjugate(full, no_conj); }, {"conjugation key"});
    expect_invalid([&] { e.ev->rotate_many(full, {1, 7}, gk); }, {"rotation key", "7"});
    expect_invalid([&] { e.ev->add(full, sparse); }, {"slot"});
    expect_invalid([&] { e.ev->sub(full, sparse); }, {"slot"});
    expect_invalid([&] { e.ev->mul(full, sparse, rlk); }, {"slot"});
    expect_invalid([&] { e.ev->mul(full, sparse, rlk, false); }, {"slot"});
    expect_invalid([&] { e.ev->multiply_relin(full, sparse, rlk); }, {"slot"});
    expect_invalid([&] { e.ev->add_vector(full, xs); }, {"vector"});
    expect_invalid([&] { e.ev->mul_vector(full, xs); }, {"vector"});
    const Plaintext p_top = e.ctx->encode(x), p_low = e.ctx->encode(x, e.ctx->scale_at(1), 1);
    expect_invalid([&] { e.ev->add_plain(full, p_low); }, {"level"});
    expect_invalid([&] { e.ev->mul_plain(full, p_low); }, {"level"});
    expect_invalid([&] { e.ev->sub_plain(full, p_low); }, {"level"});
    const Plaintext p_scale = e.ctx->encode(x, 2 * full.scale, full.level());
    expect_invalid([&] { e.ev->add_plain(full, p_scale); }, {"scale"});
    // different scales at the same level
    Ciphertext skewed = full;
    skewed.scale *= 2;
    expect_invalid([&] { e.ev->add(full, skewed); }, {"scale"});
    expect_invalid([&] { e.ev->drop_to_level(low, 2); }, {"level"});
    expect_invalid([&] { e.ev->add(full, Ciphertext{}); }, {"empty"});
    expect_invalid([&] { e.ev->rotate(Ciphertext{}, 1, gk); }, {"empty"});
    expect_invalid([&] { e.ev->add_const(full, cplx(std::nan(""), 0)); }, {"finite"});
    expect_invalid([&] { e.ev->mul_const(full, cplx(INFINITY, 0)); }, {"finite"});
    expect_invalid([&] { e.ctx->decrypt(Ciphertext{}, *e.keys.secret); }, {"empty"});
    const cvec three(3, cplx(1, 0));
    expect_invalid([&] { e.ctx->encode(three); }, {"slot"});
    expect_invalid([&] { e.ctx->encode(x, full.scale, e.ctx->max_level() + 1); }, {"level"});
    const cvec nan_v(4, cplx(std::nan(""), 0));
    expect_invalid([&] { e.ctx->encode(nan_v); }, {"NaN"});
}

bool same_poly(const Poly& a, const Poly& b) {
    if (a.q_limbs() != b.q_limbs() || a.basis() != b.basis() || a.form() != b.form()) return false;
    return same_words(a, b);
}
bool same_ct(const Ciphertext& a, const Ciphertext& b) {
    return same_poly(a.c0, b.c0) && same_poly(a.c1, b.c1) && a.scale == b.scale && a.slots == b.slots && a.key_id == b.key_id;
}

TEST(Ckks, RotateSumAndInnerSumAgainstTheSlotSums) {
    // rotate_sum: the rotations summed in the raised basis, one ModDown; against the float64 sum of the rolled
    // slots (non-zero mean input), and within rounding of the rotate-and-add it replaces.
    Env& e = env();
    std::mt19937_64 rng(61);
    cvec x = random_slots(2048, rng);
    for (auto& v : x) v += cplx(3.0, -1.0);
    const Ciphertext a = e.enc(x);
    const GaloisKeys& gk = *e.keys.galois;
    const std::vector<long> steps = {0, 1, -1, 3, 3};
    cvec want(2048, cplx(0));
    for (std::size_t i = 0; i < 2048; ++i)
        for (long s : steps) want[i] += x[(i + 2048 + s) % 2048];
    const Ciphertext rs = rotate_sum(*e.ev, a, steps, gk);
    EXPECT_EQ(rs.level(), a.level());
    EXPECT_EQ(rs.scale, a.scale);
    EXPECT_LT(max_err(e.dec(rs), want), 4 * e.op());
    Ciphertext serial = a;
    for (std::size_t k = 1; k < steps.size(); ++k) serial = e.ev->add(serial, e.ev->rotate(a, steps[k], gk));
    EXPECT_LT(max_err(e.dec(rs), e.dec(serial)), 4 * e.op());
    // inner_sum over 2 slots at stride 1 (one round, one rotation) and at stride 3; count 1 is the input
    for (long stride : {1L, 3L}) {
        cvec w(2048);
        for (std::size_t i = 0; i < 2048; ++i) w[i] = x[i] + x[(i + stride) % 2048];
        EXPECT_LT(max_err(e.dec(inner_sum(*e.ev, a, stride, 2, 4, gk)), w), 4 * e.op());
    }
    EXPECT_LT(max_err(e.dec(inner_sum(*e.ev, a, 1, 1, 2, gk)), x), e.fresh());
    EXPECT_EQ(inner_sum_rotations(1, 256, 4), (std::vector<long>{1, 2, 3, 4, 8, 12, 16, 32, 48, 64, 128, 192}));
    EXPECT_EQ(inner_sum_rotations(8, 8, 2), (std::vector<long>{8, 16, 32}));
    EXPECT_EQ(inner_sum_rotations(1, 8, 4), (std::vector<long>{1, 2, 3, 4}));
    expect_invalid([&] { rotate_sum(*e.ev, a, {}, gk); }, {"cannot rotate_sum", "no steps"});
    expect_invalid([&] { rotate_sum(*e.ev, a, {1, 2}, gk); }, {"rotation key", "2"});
    expect_invalid([&] { inner_sum(*e.ev, a, 1, 3, 4, gk); }, {"cannot inner_sum", "power of two"});
    expect_invalid([&] { inner_sum(*e.ev, a, 1, 4, 3, gk); }, {"cannot inner_sum", "radix"});
    expect_invalid([&] { inner_sum(*e.ev, a, 0, 4, 2, gk); }, {"cannot inner_sum", "stride"});
    expect_invalid([&] { inner_sum(*e.ev, a, 1, 4, 4, gk); }, {"rotation key"});
    expect_invalid([&] { inner_sum(*e.ev, a, 1, 4096, 2, gk); }, {"cannot inner_sum", "4096", "2048 slots"});
    expect_invalid([&] { inner_sum(*e.ev, a, 1, -4, 2, gk); }, {"cannot inner_sum", "count", "-4"});
    expect_invalid([&] { inner_sum_rotations(1, long(1) << 40, 2); }, {"cannot inner_sum", "2^20"});
    expect_invalid([&] { inner_sum_rotations(long(1) << 40, 4, 2); }, {"cannot inner_sum", "stride", "2^31"});
}

TEST(Ckks, RaisedBasisOperationsMatchTheOrdinaryOnes) {
    // The raised-basis operations against the ordinary ones, bit for bit: ModDown of a rotation left in the raised
    // basis is the rotation (ModDown(P c0 + u) = c0 + ModDown(u) exactly); ModDown merged with Rescale of P a is
    // the rescale of a; the multiply-accumulate equals products then sums (every residue fully reduced); ModRaise
    // restricted to q0 is the input.
    Env& e = env();
    std::mt19937_64 rng(38);
    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
    const Ciphertext a = e.enc(x);
    const GaloisKeys& gk = *e.keys.galois;
    const auto raised = e.ev->rotate_many_raised(a, {1, 0, -1, 3}, gk);
    ASSERT_EQ(raised.size(), 4u);
    EXPECT_EQ(raised[0].c0.basis(), Basis::QP);
    EXPECT_TRUE(same_ct(e.ev->mod_down(raised[0]), e.ev->rotate(a, 1, gk)));
    EXPECT_TRUE(same_ct(e.ev->mod_down(raised[1]), a));
    EXPECT_TRUE(same_ct(e.ev->mod_down(raised[2]), e.ev->rotate(a, -1, gk)));
    EXPECT_TRUE(same_ct(e.ev->mod_down(raised[3]), e.ev->rotate(a, 3, gk)));
    EXPECT_TRUE(same_ct(e.ev->mod_down_rescale(raised[1]), e.ev->rescale(a)));
    // sums in the raised basis: plaintexts over Q U P
    const std::size_t l = a.level();
    Plaintext px, py;
    px.m = e.ctx->encoder().encode(e.ctx->ring(), x, e.ctx->scale_at(l), l + 1, Basis::QP);
    py.m = e.ctx->encoder().encode(e.ctx->ring(), y, e.ctx->scale_at(l), l + 1, Basis::QP);
    px.scale = py.scale = e.ctx->scale_at(l);
    px.slots = py.slots = 2048;
    const Ciphertext s = e.ev->mul_plain_sum({&raised[0], &raised[3]}, {&px, &py});
    EXPECT_TRUE(same_ct(s, e.ev->add(e.ev->mul_plain(raised[0], px), e.ev->mul_plain(raised[3], py))));
    // the result, brought down and rescaled, is rot_1(a) x + rot_3(a) y
    cvec want(2048);
    for (std::size_t i = 0; i < 2048; ++i) want[i] = x[(i + 1) % 2048] * x[i] + x[(i + 3) % 2048] * y[i];
    EXPECT_LT(max_err(e.dec(e.ev->mod_down_rescale(s)), want), 2 * e.op());
    // a raised ciphertext is refused where it has no meaning, and plaintexts must match its basis
    expect_invalid([&] { e.ev->rescale(raised[0]); }, {"raised basis"});
    expect_invalid([&] { e.ev->rotate(raised[0], 1, gk); }, {"raised basis"});
    expect_invalid([&] { e.ev->add(raised[0], a); }, {"raised basis"});
    expect_invalid([&] { e.ev->mod_down(a); }, {"not in the raised basis"});
    expect_invalid([&] { e.ev->mul_plain(raised[0], e.ctx->encode(x)); }, {"Q U P"});
    // ModRaise: level 0 lifted to the top, restricted back to q0 it is the input; refused above level 0
    const Ciphertext low = e.ev->drop_to_level(a, 0);
    const Ciphertext up = e.ev->mod_raise(low, e.ctx->max_level());
    EXPECT_EQ(up.level(), e.ctx->max_level());
    EXPECT_TRUE(same_ct(e.ev->drop_to_level(up, 0), low));
    expect_invalid([&] { e.ev->mod_raise(a, 2); }, {"level 0"});
}

TEST(Ckks, KeySwitchOfACiphertextAndDigitKeys) {
    // Ciphertexts under an ephemeral sparse secret s' switched to s with the key generator's hybrid key, and s to
    // s' over q0 with its BV digit key: both decrypt to the message under the target secret.
    Env& e = env();
    std::mt19937_64 rng(39);
    const cvec x = random_slots(2048, rng);
    const auto sparse = e.ctx->gen_sparse_secret_key(32);
    ASSERT_NE(sparse->key_id, e.keys.secret->key_id);
    const Ciphertext under_sparse = e.ctx->encrypt(e.ctx->encode(x), *sparse);
    const auto to_s = e.ctx->gen_switching_key(*sparse, *e.keys.secret);
    EXPECT_EQ(to_s->key_id, e.keys.secret->key_id);
    const Ciphertext back = e.ev->key_switch(under_sparse, *to_s);
    EXPECT_EQ(back.key_id, e.keys.secret->key_id);  // now under s
    EXPECT_LT(max_err(e.dec(back), x), 2 * e.op());
    // s -> s' over q0 with 4-bit digits, at level 0
    const auto to_sparse = e.ctx->gen_digit_switching_key(*e.keys.secret, *sparse, 4);
    EXPECT_EQ(to_sparse->q_limbs(), 1u);
    const Ciphertext low = e.ev->drop_to_level(e.enc(x), 0);
    const Ciphertext sw = e.ev->key_switch(low, *to_sparse);
    EXPECT_EQ(sw.key_id, sparse->key_id);
    // at level 0 the error is the BV noise times the digits: still far below the scale
    EXPECT_LT(max_err(e.ctx->decrypt(sw, *sparse), x), 1e-3);
    expect_invalid([&] { e.ev->key_switch(e.enc(x), *to_sparse); }, {"q0"});
    // too few digits for q0 is refused before any work (it used to depend on the data); base 2 has no balanced digits
    DigitSwitchingKey short_key = *to_sparse;
    short_key.parts.resize(short_key.parts.size() - 2);
    expect_invalid([&] { e.ev->key_switch(low, short_key); }, {"digit switching key has", "needs"});
    expect_invalid([&] { (void)e.ctx->gen_digit_switching_key(*e.keys.secret, *sparse, 1); }, {"digit_bits must be in [2, 30]"});
}

TEST(CkksMisuse, OperandsOfAnotherContextOrKeySetAreNamed) {
    // Objects know their context (their ring) and ciphertexts their key set: every operation refuses a
    // mismatch with a message that says so, and no key of another keygen gives a silent wrong answer.
    Env& e = env();
    std::mt19937_64 rng(37);
    const cvec x = random_slots(2048, rng);
    const Ciphertext ct = e.enc(x);
    ASSERT_NE(ct.key_id, 0u);
    EXPECT_EQ(ct.key_id, e.keys.secret->key_id);
    EXPECT_EQ(e.keys.relin->key_id, e.keys.secret->key_id);
    EXPECT_EQ(e.keys.galois->find(e.ctx->galois_element(1))->key_id, e.keys.secret->key_id);
    // another key set of the same context
    const KeySet other = e.ctx->keygen({1}, true);
    ASSERT_NE(other.secret->key_id, e.keys.secret->key_id);
    expect_invalid([&] { e.ctx->decrypt(ct, *other.secret); }, {"secret key is not the one this ciphertext was encrypted for"});
    expect_invalid([&] { e.ev->mul(ct, ct, *other.relin); }, {"relinearization key belongs to another key set"});
    expect_invalid([&] { e.ev->mul(ct, ct, *other.relin, false); }, {"relinearization key belongs to another key set"});
    expect_invalid([&] { e.ev->multiply_relin(ct, ct, *other.relin); }, {"relinearization key belongs to another key set"});
    expect_invalid([&] { e.ev->rotate(ct, 1, *other.galois); }, {"rotation key belongs to another key set"});
    expect_invalid([&] { e.ev->rotate_many(ct, {1}, *other.galois); }, {"rotation key belongs to another key set"});
    expect_invalid([&] { e.ev->conjugate(ct, *other.galois); }, {"conjugation key belongs to another key set"});
    const Ciphertext ct_other = e.ctx->encrypt(e.ctx->encode(x), *other.pub);
    expect_invalid([&] { e.ev->add(ct, ct_other); }, {"different key sets"});
    expect_invalid([&] { e.ev->mul(ct, ct_other, *e.keys.relin); }, {"different key sets"});
    // key ids survive the operations
    EXPECT_EQ(e.ev->mul(ct, ct, *e.keys.relin).key_id, ct.key_id);
    EXPECT_EQ(e.ev->rotate(ct, 1, *e.keys.galois).key_id, ct.key_id);
    EXPECT_EQ(e.ev->mul_const(ct, cplx(0.5, 0)).key_id, ct.key_id);
    EXPECT_EQ(e.ev->rescale(e.ev->mul_plain(ct, e.ctx->encode(x))).key_id, ct.key_id);
    // another context: log_n 12 vs 11
    CkksParams pb = test_params(3, 2);
    pb.log_n = 11;
    auto cb = std::make_shared<Context>(pb, 1);
    const KeySet kb = cb->keygen({1}, false);
    const Ciphertext ct_b = cb->encrypt(cb->encode(random_slots(1024, rng)), *kb.pub);
    const std::string diff = "belongs to another context: log_n 11 vs " + std::to_string(e.ctx->params().log_n);
    expect_invalid([&] { e.ctx->decrypt(ct_b, *e.keys.secret); }, {"ciphertext " + diff});
    expect_invalid([&] { e.ctx->decrypt(ct, *kb.secret); }, {"secret key " + diff});
    expect_invalid([&] { e.ctx->encrypt(e.ctx->encode(x), *kb.pub); }, {"public key " + diff});
    expect_invalid([&] { e.ev->add(ct, ct_b); }, {"ciphertext " + diff});
    expect_invalid([&] { e.ev->mul(ct, ct, *kb.relin); }, {"relinearization key " + diff});
    expect_invalid([&] { e.ev->rotate(ct, 1, *kb.galois); }, {"rotation key " + diff});
    expect_invalid([&] { e.ev->add_plain(ct, cb->encode(random_slots(2048 / 2, rng))); }, {"another context"});
}

TEST(CkksMisuse, PlaintextWithAnotherSlotCountIsRejected) {
    // add() and mul() refuse ciphertexts packing different slot counts; a plaintext packing another slot count is
    // the same mistake (a 16-slot plaintext added to a 2048-slot ciphertext adds the 16 values tiled 128 times; a
    // 2048-slot plaintext added to a 16-slot ciphertext leaves the 16-slot subring and decodes to garbage).
    Env& e = env();
    std::mt19937_64 rng(36);
    const cvec x = random_slots(2048, rng), xs = random_slots(16, rng);
    const Ciphertext full = e.enc(x), sparse = e.enc(xs);
    const Plaintext p_sparse = e.ctx->encode(xs, full.scale, full.level());
    const Plaintext p_full = e.ctx->encode(x, sparse.scale, sparse.level());
    // Found by this test (fixed): the plaintext operations once did not compare p.slots with the ciphertext.
    expect_invalid([&] { e.ev->add_plain(sparse, p_full); }, {"slot"});
    expect_invalid([&] { e.ev->sub_plain(sparse, p_full); }, {"slot"});
    expect_invalid([&] { e.ev->mul_plain(sparse, p_full); }, {"slot"});
    expect_invalid([&] { e.ev->add_plain(full, p_sparse); }, {"slot"});
}

// ---- threads ----------------------------------------------------------------------------------------------------

TEST(CkksThreads, ConcurrentMulAndRotateOnOneContext) {
    // A fresh context (threads = 2, cold converter and permutation caches) shared by 4 threads, each doing
    // encrypt / mul / rotate / rotate_many / decrypt on its own data at the same time.
    Env e(test_params(3, 2), {1, -1, 3}, true, 2);
    constexpr int kThreads = 4, kIters = 3;
    std::vector<double> err_mul(kThreads * kIters, 1), err_rot(kThreads * kIters, 1), err_many(kThreads * kIters, 1);
    std::atomic<int> failures{0};
    std::vector<std::string> what(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
        ts.emplace_back([&, t] {
            try {
                std::mt19937_64 rng(100 + t);
                for (int it = 0; it < kIters; ++it) {
                    const cvec x = random_slots(2048, rng), y = random_slots(2048, rng);
                    const Ciphertext cx = e.enc(x), cy = e.enc(y);
                    const long r = (t + it) % 3 == 0 ? 1 : ((t + it) % 3 == 1 ? -1 : 3);
                    const Ciphertext m = e.ev->mul(cx, cy, *e.keys.relin, (t + it) % 2 == 0);
                    const Ciphertext rc = e.ev->rotate(m, r, *e.keys.galois);
                    const auto many = e.ev->rotate_many(cx, {r, 1, -1}, *e.keys.galois);
                    const cvec xy = slot_mul(x, y);
                    err_mul[t * kIters + it] = max_err(e.dec(m), xy);
                    err_rot[t * kIters + it] = max_err(e.dec(rc), rotated(xy, r));
                    err_many[t * kIters + it] = max_err(e.dec(many[0]), rotated(x, r));
                }
            } catch (const std::exception& ex) {
                what[t] = ex.what();
                ++failures;
            }
        });
    }
    for (auto& th : ts) th.join();
    ASSERT_EQ(failures.load(), 0) << what[0] << what[1] << what[2] << what[3];
    for (int i = 0; i < kThreads * kIters; ++i) {
        EXPECT_LT(err_mul[i], e.op()) << "thread " << i / kIters << " iteration " << i % kIters;
        EXPECT_LT(err_rot[i], 2 * e.op()) << "thread " << i / kIters << " iteration " << i % kIters;
        EXPECT_LT(err_many[i], e.op()) << "thread " << i / kIters << " iteration " << i % kIters;
    }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// Evaluator::linear_combination (the fused baby step of polynomial evaluation) against its reference:
// each operand dropped to the level, multiplied by the rounded integer (mul_round) and added: bit-identical.
TEST(Ckks, LinearCombinationEqualsDropMulRoundAdd) {
    Env& e = env();
    std::mt19937_64 rng(21);
    const cvec x = random_slots(16, rng), y = random_slots(16, rng), z = random_slots(16, rng);
    const std::size_t top = e.ctx->max_level();
    const Ciphertext a = e.enc(x), b = e.ev->drop_to_level(e.enc(y), top - 1), c = e.enc(z);
    const std::vector<double> ks = {3.0, -7.4, 0x1.8p70};  // one beyond 2^64 (residues of a large double)
    const std::size_t level = top - 1;
    const Ciphertext got = e.ev->linear_combination({&a, &b, &c}, ks, level, 1234.5);
    Ciphertext want = e.ev->mul_round(e.ev->drop_to_level(a, level), ks[0]);
    for (auto [ct, k] : {std::pair{&b, ks[1]}, std::pair{&c, ks[2]}}) {
        Ciphertext t = e.ev->mul_round(e.ev->drop_to_level(*ct, level), k);
        t.scale = want.scale;
        want = e.ev->add(want, t);
    }
    ASSERT_EQ(got.level(), level);
    EXPECT_EQ(got.scale, 1234.5);
    ASSERT_TRUE(same_words(got.c0, want.c0));
    ASSERT_TRUE(same_words(got.c1, want.c1));
    expect_invalid([&] { (void)e.ev->linear_combination({}, {}, level, 1.0); }, {"no operands"});
    expect_invalid([&] { (void)e.ev->linear_combination({&a}, {1.0, 2.0}, level, 1.0); }, {"constants"});
    expect_invalid([&] { (void)e.ev->linear_combination({&b}, {1.0}, top, 1.0); }, {"below"});
    expect_invalid([&] { (void)e.ev->linear_combination({&a}, {std::nan("")}, level, 1.0); }, {"finite"});
}

}  // namespace
}  // namespace ember
