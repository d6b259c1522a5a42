// Tests of the non-RNS HEAAN scheme (cpp/heaan/) against GMP and float64 references.
//
//  * CRT (Algo 1) and iCRT (Algo 6) against GMP: residues of random big integers, and the centered value of
//    random residues (mod 2^b, and shifted with rounding), on the IFMA path and the scalar path.
//  * The product polynomial (CRT -> NTT -> pointwise -> iNTT -> iCRT) against a GMP schoolbook negacyclic product.
//  * The scheme at N = 2^10 .. 2^12, log p = 30: decryptions against float64 with bounds from log_p and N.
//
// Noise bounds (slot errors, divided by Delta = 2^log_p; h = 64 the secret's weight). A coefficient error with
// variance v per coefficient gives every slot a near-Gaussian of variance N v, except a rounding times the secret:
// r(zeta) s(zeta) is a product of two near-Gaussians (variances N/12 and h) with a heavier tail,
// P(|r s| > k sigma) ~ sqrt(k) e^-2k, so the largest of N/2 <= 2^15 slots stays below 12 sigma except with
// probability < 1e-5 (measured maxima: about 8 sigma at N = 2^16).
//   fresh = 12 sqrt(N (h + 2) / 12) / Delta: encoding rounding + the rounding of HEAAN's shift by logQ (b and a s)
//   mul   = 3 fresh for |m| <= 1: m1 e2 + m2 e1 plus the rescale rounding (relinearization noise N sigma q / Q
//           sits at scale Delta^2 and vanishes in the rescale)
//   rotate / conjugate = 2 fresh + 12 N sigma / sqrt(12) q / (Q Delta): the key switch adds a rounding and
//           a' e / Q with a' uniform modulo q (centered: the CRT reads it as signed).
#include <gtest/gtest.h>
#include <gmp.h>

#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/thread_pool.hpp"
#include "heaan/context.hpp"
#include "heaan/crt.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using test::Z;
using test::cvec;
using namespace heaan;

// ---- GMP helpers ----------------------------------------------------------------------------------------------------

void to_mpz(mpz_t out, const u64* w, std::size_t n) { mpz_import(out, n, -1, sizeof(u64), 0, 0, w); }

/// out (n words) = x mod 2^(64 n), for any sign of x.
void from_mpz(u64* out, std::size_t n, const mpz_t x) {
    Z t, m;
    mpz_ui_pow_ui(m.v, 2, 64 * n);
    mpz_fdiv_r(t.v, x, m.v);
    std::fill(out, out + n, 0);
    std::size_t count = 0;
    mpz_export(out, &count, -1, sizeof(u64), 0, 0, t.v);
}

BigPoly random_poly(std::size_t n, int bits, std::mt19937_64& rng) {
    BigPoly p(n, bits);
    for (auto& w : p.data) w = rng();
    for (std::size_t i = 0; i < n; ++i) bigint::mask_bits(p.coeff(i), p.words, bits);
    return p;
}

/// floor((x + 2^(s-1)) / 2^s) for s > 0, x for s = 0.
void round_shift(mpz_t out, const mpz_t x, int s) {
    if (s == 0) { mpz_set(out, x); return; }
    Z h;
    mpz_ui_pow_ui(h.v, 2, static_cast<unsigned long>(s - 1));
    mpz_add(out, x, h.v);
    mpz_fdiv_q_2exp(out, out, static_cast<unsigned long>(s));
}

/// |a - b| as a (small) integer modulo 2^bits (a, b in words).
long long diff_mod(const u64* a, const u64* b, std::size_t n, int bits) {
    std::vector<u64> d(n);
    bigint::sub(d.data(), a, b, n);
    bigint::mask_bits(d.data(), n, bits);
    const double v = bigint::to_double_centered(d.data(), bits);
    return std::llabs(static_cast<long long>(v));
}

// ---- parameters ---------------------------------------------------------------------------------------------------

TEST(HeaanParams, DefaultsArePaper) {
    Params p;
    EXPECT_EQ(p.log_n, 16);
    EXPECT_EQ(p.log_q, 1200);
    EXPECT_EQ(p.log_p, 30);
    EXPECT_EQ(p.depth(), 40);
    // The paper's set meets only its own 80-bit estimate: refused by default, accepted on opt-in.
    EXPECT_THROW(p.validate(), std::invalid_argument);
    p.security = 80;
    EXPECT_NO_THROW(p.validate());
}

TEST(HeaanParams, RejectsWithReasons) {
    auto msg = [](Params p) {
        try { p.validate(); } catch (const std::invalid_argument& e) { return std::string(e.what()); }
        return std::string();
    };
    Params p;
    p.security = 80;
    p.log_q = 1300;
    EXPECT_NE(msg(p).find("80-bit bound of 1200"), std::string::npos) << msg(p);
    p.insecure = true;
    EXPECT_EQ(msg(p), "");
    p = Params();
    EXPECT_NE(msg(p).find("128-bit bound"), std::string::npos) << msg(p);
    p = Params();
    p.log_p = 1200;
    EXPECT_NE(msg(p).find("log_p"), std::string::npos);
    p = Params();
    p.log_n = 2;
    EXPECT_NE(msg(p).find("log_n"), std::string::npos);
    p = Params();
    p.prime_bits = 61;
    EXPECT_NE(msg(p).find("prime_bits"), std::string::npos);
    p = Params();
    p.hamming_weight = 0;
    EXPECT_NE(msg(p).find("hamming_weight"), std::string::npos);
    EXPECT_THROW(Context(Params{.log_n = 10, .log_q = 300}), std::invalid_argument);  // 80-bit bound at N = 2^10 is 18
}

// ---- CRT and iCRT against GMP -------------------------------------------------------------------------------------

struct CrtCase {
    int prime_bits;
    CrtPath path;
};

/// Sets the basis on `path`; false when this CPU (or these primes) cannot take it.
bool take_path(CrtBasis& B, CrtPath path) {
    B.set_path(path);
    return B.path() == path;
}

class HeaanCrt : public ::testing::TestWithParam<CrtCase> {};

TEST_P(HeaanCrt, ResiduesMatchGmp) {
    const auto [pb, path] = GetParam();
    const std::size_t n = 256;
    CrtBasis B(n, pb, 60, 2400);
    if (!take_path(B, path)) GTEST_SKIP() << "no " << crt_path_name(path) << " path for these primes on this CPU";
    std::mt19937_64 rng(7);
    for (int bits : {1, 52, 64, 65, 1200, 2400}) {
        const BigPoly a = random_poly(n, bits, rng);
        const std::size_t np = 60;
        std::vector<std::vector<u64>> out(np, std::vector<u64>(n));
        std::vector<u64*> ptr(np);
        for (std::size_t j = 0; j < np; ++j) ptr[j] = out[j].data();
        Z x, half, full;
        mpz_ui_pow_ui(half.v, 2, static_cast<unsigned long>(bits - 1));
        mpz_ui_pow_ui(full.v, 2, static_cast<unsigned long>(bits));
        for (bool centered : {false, true}) {
            B.crt(a.data.data(), a.words, a.bits, np, ptr.data(), 0, n, centered);
            for (std::size_t i = 0; i < n; ++i) {
                to_mpz(x.v, a.coeff(i), a.words);
                if (centered && mpz_cmp(x.v, half.v) >= 0) mpz_sub(x.v, x.v, full.v);  // signed reading
                for (std::size_t j = 0; j < np; ++j)
                    ASSERT_EQ(out[j][i], mpz_fdiv_ui(x.v, B.prime(j).q)) << "bits " << bits << " centered " << centered << " i " << i << " j " << j;
            }
        }
    }
}

TEST_P(HeaanCrt, IcrtMatchesGmp) {
    const auto [pb, path] = GetParam();
    const std::size_t n = 128;
    CrtBasis B(n, pb, 80, 64);
    if (!take_path(B, path)) GTEST_SKIP() << "no " << crt_path_name(path) << " path for these primes on this CPU";
    std::mt19937_64 rng(11);
    gmp_randstate_t st;
    gmp_randinit_default(st);
    gmp_randseed_ui(st, 5);
    for (std::size_t np : {3, 24, 49, 80}) {
        std::vector<u64> primes(np);
        for (std::size_t j = 0; j < np; ++j) primes[j] = B.prime(j).q;
        Z P, lim, c, want, m;
        test::product(P.v, primes);
        mpz_fdiv_q_2exp(lim.v, P.v, 4);  // |c| < P / 16
        const int pbits = static_cast<int>(mpz_sizeinbase(P.v, 2));
        std::vector<Z> cs(n);
        std::vector<std::vector<u64>> res(np, std::vector<u64>(n));
        for (std::size_t i = 0; i < n; ++i) {
            mpz_urandomm(cs[i].v, st, lim.v);
            if (rng() & 1) mpz_neg(cs[i].v, cs[i].v);
            if (i == 0) mpz_set_ui(cs[i].v, 0);
            if (i == 1) mpz_sub_ui(cs[i].v, lim.v, 1);
            if (i == 2) mpz_neg(cs[i].v, cs[1].v);
            for (std::size_t j = 0; j < np; ++j) res[j][i] = mpz_fdiv_ui(cs[i].v, primes[j]);
        }
        std::vector<const u64*> in(np);
        for (std::size_t j = 0; j < np; ++j) in[j] = res[j].data();
        struct Shape { int shift, out_bits; };
        std::vector<Shape> shapes = {{0, 1}, {0, 64}, {0, std::min(pbits - 8, 1200)}, {0, pbits - 5}};
        if (pbits > 400) shapes.push_back({pbits / 2, pbits / 2 - 10});
        if (pbits > 300) shapes.push_back({150, 100});
        for (const Shape& sh : shapes) {
            const std::size_t on = bigint::words_for_bits(sh.out_bits);
            std::vector<u64> out(n * on);
            B.icrt(in.data(), np, sh.shift, sh.out_bits, out.data(), 0, n);
            std::vector<u64> w(on);
            mpz_ui_pow_ui(m.v, 2, static_cast<unsigned long>(sh.out_bits));
            int off_by_one = 0;
            for (std::size_t i = 0; i < n; ++i) {
                round_shift(want.v, cs[i].v, sh.shift);
                mpz_fdiv_r(want.v, want.v, m.v);
                from_mpz(w.data(), on, want.v);
                const long long d = diff_mod(out.data() + i * on, w.data(), on, sh.out_bits);
                // exact for shift = 0; with shift > 100 the skipped low digits may move the rounding by one
                if (sh.shift == 0) ASSERT_EQ(d, 0) << "np " << np << " i " << i << " out_bits " << sh.out_bits;
                else ASSERT_LE(d, 1) << "np " << np << " i " << i;
                off_by_one += d != 0;
            }
            EXPECT_EQ(off_by_one, 0) << "np " << np << " shift " << sh.shift;  // probability ~2^-40 each
        }
    }
    gmp_randclear(st);
}

TEST_P(HeaanCrt, RoundTripIsIdentity) {
    // CRT of a centered big integer, then iCRT modulo 2^bits: the input again (and shifted: its rounded quotient)
    const auto [pb, path] = GetParam();
    const std::size_t n = 128;
    CrtBasis B(n, pb, 60, 1300);
    if (!take_path(B, path)) GTEST_SKIP() << "no " << crt_path_name(path) << " path for these primes on this CPU";
    std::mt19937_64 rng(13);
    for (int bits : {60, 1200, 1300}) {
        const BigPoly a = random_poly(n, bits, rng);
        const std::size_t np = B.primes_for(bits);
        std::vector<std::vector<u64>> rows(np, std::vector<u64>(n));
        std::vector<u64*> out(np);
        std::vector<const u64*> in(np);
        for (std::size_t j = 0; j < np; ++j) { out[j] = rows[j].data(); in[j] = rows[j].data(); }
        B.crt(a.data.data(), a.words, bits, np, out.data(), 0, n, /*centered=*/true);
        BigPoly back(n, bits);
        B.icrt(in.data(), np, 0, bits, back.data.data(), 0, n);
        EXPECT_EQ(back.data, a.data) << "bits " << bits;
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, HeaanCrt,
                         ::testing::Values(CrtCase{50, CrtPath::kIfma}, CrtCase{50, CrtPath::kAvx2}, CrtCase{50, CrtPath::kScalar},
                                           CrtCase{60, CrtPath::kScalar}, CrtCase{57, CrtPath::kScalar}),
                         [](const auto& info) { return std::string(crt_path_name(info.param.path)) + "_" + std::to_string(info.param.prime_bits); });

// ---- the AVX2 kernels against the scalar ones, bit for bit ----------------------------------------------------------

/// Runs `f` on the AVX2 path and on the scalar path of B and returns both outputs.
template <class F>
std::pair<std::vector<u64>, std::vector<u64>> on_both_paths(CrtBasis& B, F f) {
    B.set_path(CrtPath::kAvx2);
    auto fast = f();
    B.set_path(CrtPath::kScalar);
    auto ref = f();
    B.set_path(B.best_path());
    return {fast, ref};
}

TEST(HeaanCrtAvx2, CrtMatchesScalarOnEdgesTailsAndLongInputs) {
    const std::size_t n = 128, np = 40;
    CrtBasis B(n, 50, np, 4200);  // 4200-bit inputs: 132 digits, two runs of the AVX2 accumulation
    if (!take_path(B, CrtPath::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
    // primes below 2^40 are out of reach of the AVX2 reduction's quotient estimate: such a basis never takes it
    CrtBasis low(n, 39, 4, 200);
    EXPECT_NE(low.best_path(), CrtPath::kAvx2);
    low.set_path(CrtPath::kAvx2);
    EXPECT_NE(low.path(), CrtPath::kAvx2);
    std::mt19937_64 rng(21);
    for (int bits : {1, 31, 32, 33, 64, 65, 1200, 2400, 4064, 4065, 4200}) {
        BigPoly a = random_poly(n, bits, rng);
        // edges: 0, 1, 2^bits - 1 (every digit full), the top bit alone, p_0 - 1 and p_0
        std::fill(a.coeff(0), a.coeff(0) + a.words, 0);
        std::fill(a.coeff(1), a.coeff(1) + a.words, 0);
        a.coeff(1)[0] = 1;
        for (std::size_t w = 0; w < a.words; ++w) a.coeff(2)[w] = ~u64(0);
        bigint::mask_bits(a.coeff(2), a.words, bits);
        std::fill(a.coeff(3), a.coeff(3) + a.words, 0);
        a.coeff(3)[(bits - 1) / 64] = u64(1) << ((bits - 1) % 64);
        if (bits > 50) {
            std::fill(a.coeff(4), a.coeff(4) + a.words, 0);
            a.coeff(4)[0] = B.prime(0).q - 1;
            std::fill(a.coeff(5), a.coeff(5) + a.words, 0);
            a.coeff(5)[0] = B.prime(0).q;
        }
        for (bool centered : {false, true}) {
            // whole range, and a range that starts off a tile and ends in a tail (37 = 2 tiles + 5)
            for (auto [begin, end] : {std::pair<std::size_t, std::size_t>{0, n}, {3, 40}, {100, 102}}) {
                auto [fast, ref] = on_both_paths(B, [&] {
                    std::vector<u64> rows(np * n, 0xdeadbeef);
                    std::vector<u64*> ptr(np);
                    for (std::size_t j = 0; j < np; ++j) ptr[j] = rows.data() + j * n;
                    B.crt(a.data.data(), a.words, bits, np, ptr.data(), begin, end, centered);
                    return rows;
                });
                ASSERT_EQ(fast, ref) << "bits " << bits << " centered " << centered << " [" << begin << ", " << end << ")";
            }
        }
    }
}

TEST(HeaanCrtAvx2, IcrtMatchesScalarForEveryShape) {
    const std::size_t n = 128;
    CrtBasis B(n, 50, 140, 64);
    if (!take_path(B, CrtPath::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU";
    std::mt19937_64 rng(23);
    // np 126: 127 rows (the AVX2 bound); 130: the scalar fallback
    for (std::size_t np : {1, 2, 5, 24, 49, 73, 126, 130}) {
        std::vector<std::vector<u64>> res(np, std::vector<u64>(n));
        for (std::size_t j = 0; j < np; ++j) {
            const u64 q = B.prime(j).q;
            for (std::size_t i = 0; i < n; ++i) res[j][i] = rng() % q;
            res[j][0] = 0;           // c = 0
            res[j][1] = q - 1;       // c = -1
            res[j][2] = 1;           // c = 1
            res[j][3] = q - 2;
        }
        std::vector<const u64*> in(np);
        for (std::size_t j = 0; j < np; ++j) in[j] = res[j].data();
        const int pbits = B.icrt_plan(np).p_bits;
        struct Shape { int shift, out_bits; };
        std::vector<Shape> shapes = {{0, 1}, {0, 31}, {0, 64}, {0, pbits - 5}, {1, pbits - 6}, {37, 64}};
        if (pbits > 300) shapes.insert(shapes.end(), {{150, 100}, {163, 129}, {pbits / 2, pbits / 2 - 10}, {pbits - 200, 190}});
        for (const Shape& sh : shapes) {
            if (sh.shift + sh.out_bits > pbits) continue;
            const std::size_t on = bigint::words_for_bits(sh.out_bits);
            for (auto [begin, end] : {std::pair<std::size_t, std::size_t>{0, n}, {5, 71}, {90, 93}}) {
                auto [fast, ref] = on_both_paths(B, [&] {
                    std::vector<u64> out(n * on, 0xdeadbeef);
                    B.icrt(in.data(), np, sh.shift, sh.out_bits, out.data(), begin, end);
                    return out;
                });
                ASSERT_EQ(fast, ref) << "np " << np << " shift " << sh.shift << " out_bits " << sh.out_bits << " [" << begin << ", "
                                     << end << ")";
            }
        }
    }
}

// ---- the product polynomial against a GMP schoolbook product ------------------------------------------------------

void schoolbook(std::vector<Z>& c, const BigPoly& a, const BigPoly& b) {
    const std::size_t n = a.n;
    c.assign(n, Z());
    Z x, y, t;
    for (std::size_t i = 0; i < n; ++i) {
        to_mpz(x.v, a.coeff(i), a.words);
        for (std::size_t j = 0; j < n; ++j) {
            to_mpz(y.v, b.coeff(j), b.words);
            mpz_mul(t.v, x.v, y.v);
            if (i + j < n) mpz_add(c[i + j].v, c[i + j].v, t.v);
            else mpz_sub(c[i + j - n].v, c[i + j - n].v, t.v);
        }
    }
}

TEST(HeaanProduct, MatchesGmpSchoolbook) {
    const std::size_t n = 128;
    ThreadPool pool(2);
    for (int pb : {50, 60}) {
        for (CrtPath path : {CrtPath::kIfma, CrtPath::kAvx2, CrtPath::kScalar}) {
            CrtBasis B(n, pb, 70, 1300);
            if (!take_path(B, path)) continue;
            std::mt19937_64 rng(3);
            const BigPoly a = random_poly(n, 1200, rng), b = random_poly(n, 900, rng);
            std::vector<Z> c;
            schoolbook(c, a, b);
            Z want, m;
            for (auto [shift, out_bits] : {std::pair{0, 1200}, std::pair{0, 2107}, std::pair{1000, 1100}}) {
                const BigPoly got = multiply(B, pool, a, b, shift, out_bits);
                mpz_ui_pow_ui(m.v, 2, static_cast<unsigned long>(out_bits));
                std::vector<u64> w(got.words);
                for (std::size_t i = 0; i < n; ++i) {
                    round_shift(want.v, c[i].v, shift);
                    mpz_fdiv_r(want.v, want.v, m.v);
                    from_mpz(w.data(), got.words, want.v);
                    ASSERT_LE(diff_mod(got.coeff(i), w.data(), got.words, out_bits), shift ? 1 : 0)
                        << "pb " << pb << " path " << crt_path_name(path) << " shift " << shift << " i " << i;
                }
            }
        }
    }
}

// ---- big-integer helpers -------------------------------------------------------------------------------------------

TEST(HeaanBigint, DoubleConversionsAndShift) {
    std::vector<u64> w(20);
    for (double x : {0.0, 1.0, -1.0, 12345.5, -3.25e30, 7.0e200, -1.5e300}) {
        bigint::from_double(w.data(), 1200, x);
        const double back = bigint::to_double_centered(w.data(), 1200);
        EXPECT_NEAR(back, std::round(x), std::fabs(std::round(x)) * 1e-15) << x;
    }
    // round(x / 2^s), ties to even, two's complement
    std::vector<u64> a(2), out(2);
    auto shifted = [&](long long v, int s) {
        a[0] = static_cast<u64>(v);
        a[1] = v < 0 ? ~u64(0) : 0;
        bigint::mask_bits(a.data(), 2, 120);
        bigint::shift_right_round(out.data(), 120 - s, a.data(), 2, s);
        return bigint::to_double_centered(out.data(), 120 - s);
    };
    EXPECT_EQ(shifted(384, 8), 2.0);    // 1.5 -> 2
    EXPECT_EQ(shifted(640, 8), 2.0);    // 2.5 -> 2
    EXPECT_EQ(shifted(641, 8), 3.0);    // 2.504 -> 3
    EXPECT_EQ(shifted(-384, 8), -2.0);  // -1.5 -> -2
    EXPECT_EQ(shifted(-640, 8), -2.0);  // -2.5 -> -2
    EXPECT_EQ(shifted(-383, 8), -1.0);
    EXPECT_EQ(shifted(7, 0), 7.0);
    // across words: (2^64 + 2^63) / 2^64 = 1.5 -> 2
    a[0] = u64(1) << 63;
    a[1] = 1;
    bigint::shift_right_round(out.data(), 64, a.data(), 2, 64);
    EXPECT_EQ(out[0], 2u);
}

// ---- the scheme ----------------------------------------------------------------------------------------------------

struct SchemeEnv {
    std::unique_ptr<Context> ctx;
    KeySet keys;
    SchemeEnv(int log_n, int log_q, int log_p, std::vector<long> rot = {1, -1, 5}, int threads = 2, int prime_bits = 50) {
        Params p;
        p.log_n = log_n;
        p.log_q = log_q;
        p.log_p = log_p;
        p.prime_bits = prime_bits;
        p.insecure = true;
        ctx = std::make_unique<Context>(p, threads);
        keys = ctx->keygen(rot, true);
    }
    double n() const { return static_cast<double>(ctx->params().n()); }
    double delta() const { return std::ldexp(1.0, ctx->params().log_p); }
    double fresh() const { return 12 * std::sqrt(n() * (ctx->params().hamming_weight + 2) / 12.0) / delta(); }
    double mul() const { return 3 * fresh(); }
    double rot(int log_q) const {
        return 2 * fresh() + 12 * n() * ctx->params().sigma / std::sqrt(12.0) * std::ldexp(1.0, log_q - ctx->params().log_q) / delta();
    }
};

/// Slots in the unit square around 0 (test::random_slots), or real in [-1, 1].
cvec random_slots(std::size_t k, std::mt19937_64& rng, bool complex_values = true) {
    if (complex_values) return test::random_slots(k, rng);
    std::uniform_real_distribution<double> u(-1, 1);
    cvec z(k);
    for (auto& v : z) v = u(rng);
    return z;
}

using test::max_err;

TEST(HeaanScheme, EncodeDecodeRoundTrip) {
    SchemeEnv env(10, 300, 30, {});
    std::mt19937_64 rng(1);
    for (std::size_t slots : {1, 4, 512}) {
        const auto z = random_slots(slots, rng);
        const BigPoly m = env.ctx->encode(z, 30, 300);
        EXPECT_LT(max_err(env.ctx->decode(m, 30, slots), z), 4 * std::sqrt(1024.0 / 12) / env.delta());
    }
    // a large scale takes big-integer coefficients
    const auto z = random_slots(8, rng);
    const BigPoly m = env.ctx->encode(z, 200, 300);
    EXPECT_LT(max_err(env.ctx->decode(m, 200, 8), z), 1e-12);
    EXPECT_THROW(env.ctx->encode(random_slots(3, rng), 30, 300), std::invalid_argument);
}

TEST(HeaanScheme, EncryptDecrypt) {
    for (int log_n : {10, 12}) {
        SchemeEnv env(log_n, 600, 30, {});
        std::mt19937_64 rng(2);
        const auto z = random_slots(env.ctx->params().max_slots(), rng);
        const Ciphertext ct = env.ctx->encrypt(z, *env.keys.pub);
        EXPECT_EQ(ct.log_q(), 600);
        EXPECT_LT(max_err(env.ctx->decrypt(ct, *env.keys.secret), z), env.fresh());
        const Ciphertext low = env.ctx->encrypt(z, *env.keys.pub, 40, 200);
        EXPECT_EQ(low.log_q(), 200);
        EXPECT_LT(max_err(env.ctx->decrypt(low, *env.keys.secret), z), env.fresh() / 1024);
    }
}

TEST(HeaanScheme, MulRescaleWithinBound) {
    for (int log_n : {10, 11, 12}) {
        SchemeEnv env(log_n, 300, 30, {});
        std::mt19937_64 rng(3 + log_n);
        const std::size_t k = env.ctx->params().max_slots();
        const auto x = random_slots(k, rng), y = random_slots(k, rng);
        const Ciphertext cx = env.ctx->encrypt(x, *env.keys.pub), cy = env.ctx->encrypt(y, *env.keys.pub);
        const Ciphertext prod = env.ctx->mul(cx, cy, *env.keys.mult);
        EXPECT_EQ(prod.log_scale, 60);
        EXPECT_EQ(prod.log_q(), 300);
        const Ciphertext r = env.ctx->rescale(prod);
        EXPECT_EQ(r.log_q(), 270);
        EXPECT_EQ(r.log_scale, 30);
        cvec want = test::slot_mul(x, y);
        const double err = max_err(env.ctx->decrypt(r, *env.keys.secret), want);
        EXPECT_LT(err, env.mul()) << "log_n " << log_n << ": 2^" << std::log2(err) << " vs bound 2^" << std::log2(env.mul());
        // squaring takes the shared path (2 CRTs)
        const Ciphertext sq = env.ctx->rescale(env.ctx->mul(cx, cx, *env.keys.mult));
        EXPECT_LT(max_err(env.ctx->decrypt(sq, *env.keys.secret), test::slot_mul(x, x)), env.mul());
    }
}

TEST(HeaanScheme, DepthFourAndAdd) {
    SchemeEnv env(11, 300, 30, {});
    std::mt19937_64 rng(9);
    const std::size_t k = 64;
    const auto x = random_slots(k, rng, false);
    Ciphertext c = env.ctx->encrypt(x, *env.keys.pub);
    cvec want = x;
    for (int d = 0; d < 4; ++d) {
        c = env.ctx->rescale(env.ctx->mul(c, c, *env.keys.mult));
        for (auto& v : want) v = v * v;
    }
    EXPECT_EQ(c.log_q(), 300 - 4 * 30);
    EXPECT_LT(max_err(env.ctx->decrypt(c, *env.keys.secret), want), 4 * env.mul());
    // add aligns the moduli
    const Ciphertext fresh = env.ctx->encrypt(x, *env.keys.pub);
    const Ciphertext s = env.ctx->add(c, fresh);
    EXPECT_EQ(s.log_q(), 180);
    for (std::size_t i = 0; i < k; ++i) want[i] += x[i];
    EXPECT_LT(max_err(env.ctx->decrypt(s, *env.keys.secret), want), 5 * env.mul());
    const Ciphertext prod = env.ctx->mul(fresh, fresh, *env.keys.mult);
    EXPECT_THROW(env.ctx->add(prod, fresh), std::invalid_argument);  // scales 2^60 and 2^30
}

TEST(HeaanScheme, RotateAndConjugate) {
    SchemeEnv env(11, 300, 30, {1, -1, 5, 100});
    std::mt19937_64 rng(4);
    for (std::size_t k : {std::size_t(1024), std::size_t(16)}) {
        const auto x = random_slots(k, rng);
        const Ciphertext c = env.ctx->encrypt(x, *env.keys.pub);
        for (long r : {1L, -1L, 5L, 100L}) {
            const auto& key = *env.keys.galois.at(env.ctx->galois_element(r));
            const auto got = env.ctx->decrypt(env.ctx->rotate(c, r, key), *env.keys.secret);
            EXPECT_LT(max_err(got, test::rotated(x, r)), env.rot(300)) << "r = " << r << ", slots " << k;
        }
        const auto& ck = *env.keys.galois.at(env.ctx->conjugation_element());
        const auto got = env.ctx->decrypt(env.ctx->conjugate(c, ck), *env.keys.secret);
        EXPECT_LT(max_err(got, test::conjugated(x)), env.rot(300));
    }
    const Ciphertext c = env.ctx->encrypt(random_slots(8, rng), *env.keys.pub);
    EXPECT_THROW(env.ctx->rotate(c, 2, *env.keys.galois.at(env.ctx->galois_element(1))), std::invalid_argument);
    EXPECT_THROW(env.ctx->mul(c, c, *env.keys.pub), std::invalid_argument);
}

TEST(HeaanScheme, VectorAndScalarPathsAgree) {
    SchemeEnv env(10, 300, 30, {});
    const CrtPath best = env.ctx->basis().path();
    if (best == CrtPath::kScalar) GTEST_SKIP() << "no vector CRT path on this CPU";
    std::mt19937_64 rng(5);
    const auto x = random_slots(512, rng), y = random_slots(512, rng);
    const Ciphertext cx = env.ctx->encrypt(x, *env.keys.pub), cy = env.ctx->encrypt(y, *env.keys.pub);
    const Ciphertext a = env.ctx->mul(cx, cy, *env.keys.mult);
    env.ctx->basis_mut().set_path(CrtPath::kScalar);
    const Ciphertext b = env.ctx->mul(cx, cy, *env.keys.mult);
    env.ctx->basis_mut().set_path(best);
    // region 1 is exact on every path; region 2: AVX2 computes the scalar path's integer (bit-identical), IFMA skips
    // differently sized low digits, which could move a rounding by one with probability ~2^-40 per coefficient
    std::size_t diff = 0;
    for (std::size_t i = 0; i < a.a.data.size(); ++i) diff += a.a.data[i] != b.a.data[i];
    for (std::size_t i = 0; i < a.b.data.size(); ++i) diff += a.b.data[i] != b.b.data[i];
    EXPECT_EQ(diff, 0u);
}

TEST(HeaanScheme, SixtyBitPrimes) {
    SchemeEnv env(10, 300, 30, {1}, 1, 60);
    EXPECT_FALSE(env.ctx->basis().ifma());
    std::mt19937_64 rng(6);
    const auto x = random_slots(512, rng), y = random_slots(512, rng);
    const Ciphertext r = env.ctx->rescale(env.ctx->mul(env.ctx->encrypt(x, *env.keys.pub), env.ctx->encrypt(y, *env.keys.pub), *env.keys.mult));
    EXPECT_LT(max_err(env.ctx->decrypt(r, *env.keys.secret), test::slot_mul(x, y)), env.mul());
}

}  // namespace
}  // namespace ember
