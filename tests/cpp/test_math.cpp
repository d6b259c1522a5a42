// Property tests of the word-level math (math/modarith, primes, rns, vec_ops, sampling) against independent
// references: plain __int128 arithmetic, GMP (primality, CRT, powers, inverses) and OpenSSL for the PRNG stream.
// Every test uses fixed seeds, so a failure is reproducible.
#include <gtest/gtest.h>
#include <gmp.h>

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "math/modarith.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "math/sampling.hpp"
#include "math/vec_ops.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

// ---- helpers ----------------------------------------------------------------------------------------------------

/// Little-endian words of z >= 0, padded to `words`.
std::vector<u64> words_of(const mpz_t z, std::size_t words) {
    std::vector<u64> w(std::max<std::size_t>(words, (mpz_sizeinbase(z, 2) + 63) / 64 + 1), 0);
    std::size_t cnt = 0;
    mpz_export(w.data(), &cnt, -1, sizeof(u64), 0, 0, z);
    w.resize(std::max(words, cnt));
    return w;
}

u128 rand128(std::mt19937_64& rng) { return (static_cast<u128>(rng()) << 64) | rng(); }

/// Moduli for the arithmetic tests: random GMP primes of 20..61 bits, NTT primes, and the extremes.
std::vector<u64> test_moduli() {
    std::mt19937_64 rng(1);
    std::vector<u64> qs = {3, 5, 65537, (u64(1) << 61) - 1 /* Mersenne prime, the largest modulus allowed */};
    for (int bits = 20; bits <= 61; ++bits) qs.push_back(random_prime(rng, bits));
    for (int bits : {30, 40, 50, 55, 60}) qs.push_back(ntt_primes_near(bits, 1, 1 << 17).at(0));
    qs.push_back(ntt_primes_near(50, 1, 1 << 17, {}, false).at(0));
    qs.push_back(ntt_primes_near(61, 1, 1 << 17, {}, false).at(0));
    for (u64 q : qs) EXPECT_TRUE(gmp_is_prime(q)) << q;
    return qs;
}

// ---- Modulus ----------------------------------------------------------------------------------------------------

TEST(Modulus, ConstructorRejectsOutOfRange) {
    EXPECT_THROW(Modulus(0), std::invalid_argument);
    EXPECT_THROW(Modulus(1), std::invalid_argument);
    EXPECT_THROW(Modulus(u64(1) << 61), std::invalid_argument);
    EXPECT_THROW(Modulus(~u64(0)), std::invalid_argument);
    EXPECT_NO_THROW(Modulus((u64(1) << 61) - 1));
    Modulus m(1000003);
    EXPECT_EQ(m.bits, 20);
    // mu = floor(2^128 / q) split in two words
    Z mu, two128(1), q(1000003);
    mpz_mul_2exp(two128.v, two128.v, 128);
    mpz_fdiv_q(mu.v, two128.v, q.v);
    const auto w = words_of(mu.v, 2);
    EXPECT_EQ(m.mu_lo, w[0]);
    EXPECT_EQ(m.mu_hi, w[1]);
}

TEST(Modulus, Reduce128MatchesInt128) {
    std::mt19937_64 rng(2);
    for (u64 q : test_moduli()) {
        const Modulus m(q);
        std::vector<u128> xs = {0, 1, q - 1, q, q + 1, static_cast<u128>(q) * q - 1, static_cast<u128>(q) * q,
                                ~u128(0), ~u128(0) - 1, ~u128(0) - q, ~u128(0) / q * q, ~u128(0) / q * q - 1,
                                static_cast<u128>(~u64(0)), static_cast<u128>(~u64(0)) + 1, u128(1) << 127, (u128(1) << 127) - 1};
        for (int i = 0; i < 2000; ++i) xs.push_back(rand128(rng));
        for (int i = 0; i < 200; ++i) xs.push_back(~u128(0) - (rng() & 0xffffff));             // near 2^128 - 1
        for (int i = 0; i < 200; ++i) xs.push_back(rand128(rng) >> (rng() % 128));             // all magnitudes
        for (int i = 0; i < 200; ++i) {                                                          // near multiples of q
            const u128 k = rand128(rng) / q;
            xs.push_back(k * q + (rng() % 3) - 1 + (k == 0 ? 1 : 0));
        }
        for (u128 x : xs) ASSERT_EQ(m.reduce128(x), static_cast<u64>(x % q)) << "q=" << q << " x=" << static_cast<u64>(x >> 64) << ":" << static_cast<u64>(x);
        for (int i = 0; i < 500; ++i) {
            const u64 x = rng();
            ASSERT_EQ(m.reduce(x), x % q);
        }
    }
}

TEST(Modulus, MulAddSubNegMatchInt128) {
    std::mt19937_64 rng(3);
    for (u64 q : test_moduli()) {
        const Modulus m(q);
        std::uniform_int_distribution<u64> d(0, q - 1);
        std::vector<std::pair<u64, u64>> ops = {{0, 0}, {q - 1, q - 1}, {0, q - 1}, {q - 1, 1}, {1, 1}};
        for (int i = 0; i < 3000; ++i) ops.emplace_back(d(rng), d(rng));
        for (auto [a, b] : ops) {
            ASSERT_EQ(m.mul(a, b), static_cast<u64>(static_cast<u128>(a) * b % q)) << q << " " << a << " " << b;
            ASSERT_EQ(m.add(a, b), static_cast<u64>((static_cast<u128>(a) + b) % q));
            ASSERT_EQ(m.sub(a, b), static_cast<u64>((static_cast<u128>(a) + q - b) % q));
            ASSERT_EQ(m.neg(a), static_cast<u64>((q - a) % q));
        }
        // from_signed vs the mathematical residue
        std::vector<i64> vs = {0, 1, -1, INT64_MAX, INT64_MIN, INT64_MIN + 1, static_cast<i64>(q), -static_cast<i64>(q)};
        for (int i = 0; i < 500; ++i) vs.push_back(static_cast<i64>(rng()));
        for (i64 v : vs) {
            const i128 r = ((static_cast<i128>(v) % static_cast<i128>(q)) + q) % q;
            ASSERT_EQ(m.from_signed(v), static_cast<u64>(r)) << v;
        }
    }
}

TEST(Modulus, PowAndInvMatchGmp) {
    std::mt19937_64 rng(4);
    for (u64 q : test_moduli()) {
        const Modulus m(q);
        Z Q(q), b, e, r, inv;
        for (int i = 0; i < 300; ++i) {
            const u64 a = (i == 0) ? 0 : (i == 1 ? q - 1 : rng());  // a is reduced by pow
            const u64 ex = (i < 3) ? static_cast<u64>(i) : ((i & 1) ? rng() : rng() % 1000);
            mpz_set_ui(b.v, a);
            mpz_set_ui(e.v, ex);
            mpz_powm(r.v, b.v, e.v, Q.v);
            ASSERT_EQ(m.pow(a, ex), mpz_get_ui(r.v)) << "q=" << q << " a=" << a << " e=" << ex;
        }
        for (int i = 0; i < 200; ++i) {
            u64 a = (i == 0) ? 1 : (i == 1 ? q - 1 : 1 + rng() % (q - 1));
            if (i == 2) a = q + 1;  // not reduced: inverse of 1
            mpz_set_ui(b.v, a);
            ASSERT_NE(mpz_invert(inv.v, b.v, Q.v), 0);
            const u64 got = m.inv(a);
            ASSERT_EQ(got, mpz_get_ui(inv.v)) << "q=" << q << " a=" << a;
            ASSERT_EQ(static_cast<u64>(static_cast<u128>(got) * (a % q) % q), 1u);
        }
        EXPECT_THROW(m.inv(0), std::invalid_argument);
        EXPECT_THROW(m.inv(q), std::invalid_argument);
    }
}

TEST(Modulus, ShoupMatchesInt128) {
    std::mt19937_64 rng(5);
    for (u64 q : test_moduli()) {
        const Modulus m(q);
        std::uniform_int_distribution<u64> d(0, q - 1);
        for (int i = 0; i < 200; ++i) {
            const u64 w = i == 0 ? 0 : (i == 1 ? q - 1 : d(rng));
            const u64 wp = m.shoup(w);
            // w' = floor(w 2^64 / q)
            ASSERT_EQ(wp, static_cast<u64>((static_cast<u128>(w) << 64) / q));
            for (int j = 0; j < 50; ++j) {
                // any a < 2^64 is accepted, not only reduced values
                const u64 a = j == 0 ? ~u64(0) : (j == 1 ? 0 : (j & 1 ? rng() : d(rng)));
                const u64 want = static_cast<u64>(static_cast<u128>(a) * w % q);
                const u64 lazy = mul_shoup_lazy(a, w, wp, q);
                ASSERT_LT(lazy, 2 * q);
                ASSERT_EQ(lazy % q, want);
                ASSERT_EQ(mul_shoup(a, w, wp, q), want) << "q=" << q << " a=" << a << " w=" << w;
            }
        }
        // MulConst reduces a constant above q first
        const u64 big = rng();
        const MulConst c(big, m);
        EXPECT_EQ(c.w, big % q);
        const u64 a = d(rng);
        EXPECT_EQ(c.mul(a, q), static_cast<u64>(static_cast<u128>(a) * (big % q) % q));
    }
}

// ---- primes -----------------------------------------------------------------------------------------------------

TEST(Primes, IsPrimeMatchesGmpOnRandomOddNumbers) {
    std::mt19937_64 rng(6);
    int primes_seen = 0;
    for (int bits = 2; bits <= 64; ++bits) {
        for (int i = 0; i < 400; ++i) {
            u64 n = (bits == 64 ? rng() : (rng() & ((u64(1) << bits) - 1))) | 1 | (u64(1) << (bits - 1));
            const bool want = gmp_is_prime(n);
            primes_seen += want;
            ASSERT_EQ(is_prime(n), want) << n;
        }
    }
    EXPECT_GT(primes_seen, 500);  // the sample must contain primes as well as composites
    for (u64 n = 0; n < 5000; ++n) ASSERT_EQ(is_prime(n), gmp_is_prime(n)) << n;
}

TEST(Primes, IsPrimeHardCases) {
    // Carmichael numbers, strong pseudoprimes to several small bases, squares and products of two large primes,
    // and the largest primes below 2^61 and 2^64.
    const std::vector<u64> cases = {
        561, 1105, 1729, 2465, 2821, 6601, 8911, 41041, 825265, 321197185, 2047, 1373653, 25326001, 3215031751ull,
        2152302898747ull, 3474749660383ull, 341550071728321ull, 3825123056546413051ull,
        (u64(1) << 61) - 1, 18446744073709551557ull /* 2^64 - 59 */, 18446744073709551615ull, 4294967291ull * 4294967279ull,
        4294967291ull * 4294967291ull, 1000000007ull * 998244353ull, 2305843009213693951ull * 1 /* 2^61-1 */, 41, 43, 37, 1, 0, 2};
    for (u64 n : cases) EXPECT_EQ(is_prime(n), gmp_is_prime(n)) << n;
    // semiprimes p * q with p, q ~ 2^31 (pass trial division, fail Miller-Rabin)
    std::mt19937_64 rng(7);
    for (int i = 0; i < 200; ++i) {
        const u64 p = random_prime(rng, 31 + i % 2), q = random_prime(rng, 32);
        ASSERT_FALSE(is_prime(p * q)) << p << " * " << q;
        ASSERT_TRUE(is_prime(p));
    }
}

TEST(Primes, NttPrimesNearProperties) {
    struct Case { int bits; std::size_t count; u64 two_n; bool both; };
    const Case cases[] = {{20, 4, 32, true}, {30, 6, 1 << 11, true}, {40, 5, 1 << 13, true}, {50, 8, 1 << 17, false},
                          {50, 8, 1 << 17, true}, {55, 5, 1 << 13, true}, {60, 10, 1 << 17, true}, {61, 4, 1 << 17, true},
                          {61, 4, 1 << 12, false}, {36, 3, 1 << 5, false}};
    for (const auto& c : cases) {
        SCOPED_TRACE("bits=" + std::to_string(c.bits) + " 2N=" + std::to_string(c.two_n) + " both=" + std::to_string(c.both));
        const auto ps = ntt_primes_near(c.bits, c.count, c.two_n, {}, c.both);
        ASSERT_EQ(ps.size(), c.count);
        const u64 center = u64(1) << c.bits;
        auto dist = [&](u64 p) { return p > center ? p - center : center - p; };
        std::set<u64> seen;
        for (std::size_t i = 0; i < ps.size(); ++i) {
            EXPECT_TRUE(gmp_is_prime(ps[i])) << ps[i];
            EXPECT_EQ(ps[i] % c.two_n, 1u) << ps[i];
            EXPECT_LT(ps[i], u64(1) << 61);
            if (!c.both) {
                EXPECT_LT(ps[i], center);
            }
            EXPECT_TRUE(seen.insert(ps[i]).second) << "duplicate " << ps[i];
            if (i) {
                EXPECT_LT(dist(ps[i - 1]), dist(ps[i])) << "not ordered by distance to 2^bits";
            }
        }
        // Nearest: every prime = 1 mod 2N strictly closer to 2^bits than the farthest returned one (on the allowed
        // sides) must have been returned.
        const u64 far = dist(ps.back());
        for (u64 c0 = center - (center - 1) % c.two_n; c0 + far >= center && c0 > c.two_n; c0 -= c.two_n) {  // below
            if (dist(c0) < far && gmp_is_prime(c0)) {
                EXPECT_TRUE(seen.count(c0)) << "skipped nearer prime " << c0;
            }
        }
        if (c.both && c.bits < 61) {
            for (u64 c0 = center + 1; c0 - center < far; c0 += c.two_n)
                if (gmp_is_prime(c0)) {
                    EXPECT_TRUE(seen.count(c0)) << "skipped nearer prime " << c0;
                }
        }
        // exclusion: the same call with the first prime excluded returns the others plus one more
        const auto ex = ntt_primes_near(c.bits, c.count, c.two_n, {ps[0]}, c.both);
        EXPECT_EQ(std::count(ex.begin(), ex.end(), ps[0]), 0);
        EXPECT_TRUE(std::equal(ps.begin() + 1, ps.end(), ex.begin()));
    }
    EXPECT_THROW(ntt_primes_near(9, 1, 32), std::invalid_argument);
    EXPECT_THROW(ntt_primes_near(62, 1, 32), std::invalid_argument);
    EXPECT_THROW(ntt_primes_near(30, 1, 48), std::invalid_argument);
    EXPECT_THROW(ntt_primes_near(30, 1, 0), std::invalid_argument);
    // 2^12 = 1 mod 2N has too few candidates for 2N = 2^10
    EXPECT_THROW(ntt_primes_near(12, 50, 1 << 10), std::runtime_error);
}

TEST(Primes, RootOfUnityHasExactOrderAndIsSmallest) {
    for (int log_m : {1, 2, 5, 9, 11}) {
        const u64 m = u64(1) << log_m;
        for (int bits : {20, 30, 45, 50, 60, 61}) {
            const u64 q = ntt_primes_near(bits, 1, std::max<u64>(m, 32), {}, bits != 61 && bits != 50).at(0);
            const u64 w = root_of_unity(m, q);
            Z W(w), Q(q), e, r;
            mpz_set_ui(e.v, m);
            mpz_powm(r.v, W.v, e.v, Q.v);
            EXPECT_EQ(mpz_get_ui(r.v), 1u) << "w^m != 1, q=" << q << " m=" << m;
            mpz_set_ui(e.v, m / 2);
            mpz_powm(r.v, W.v, e.v, Q.v);
            EXPECT_EQ(mpz_get_ui(r.v), q - 1) << "order below m, q=" << q << " m=" << m;  // order is a power of 2
            // the smallest of the primitive m-th roots w^(odd)
            u64 best = ~u64(0);
            for (u64 i = 1; i < m; i += 2) {
                mpz_set_ui(e.v, i);
                mpz_powm(r.v, W.v, e.v, Q.v);
                best = std::min<u64>(best, mpz_get_ui(r.v));
            }
            EXPECT_EQ(w, best);
        }
    }
    EXPECT_THROW(root_of_unity(6, 97), std::invalid_argument);
    EXPECT_THROW(root_of_unity(64, 97), std::invalid_argument);  // 64 does not divide 96
    EXPECT_THROW(root_of_unity(1, 97), std::invalid_argument);
}

// ---- RNS base conversion ----------------------------------------------------------------------------------------

struct ConvSetup {
    std::vector<u64> from, to;
    std::vector<Modulus> fm, tm;
};
ConvSetup conv_setup(int from_bits, std::size_t k, int to_bits, std::size_t m) {
    ConvSetup s;
    s.from = ntt_primes_near(from_bits, k, 1 << 13, {}, from_bits != 50);
    s.to = ntt_primes_near(to_bits, m, 1 << 13, s.from, to_bits != 50);
    s.fm = moduli_of(s.from);
    s.tm = moduli_of(s.to);
    return s;
}

/// Input values for the converter: special ones (0, 1, -1, around Q/2, small of both signs) then random.
std::vector<std::vector<u64>> conv_inputs(const std::vector<u64>& primes, std::size_t n, std::mt19937_64& rng, std::vector<Z>& xs) {
    const std::size_t k = primes.size();
    Z Q;
    product(Q.v, primes);
    xs.assign(n, Z());
    Z half, delta;
    mpz_fdiv_q_2exp(half.v, Q.v, 1);
    mpz_fdiv_q_2exp(delta.v, Q.v, 40);  // Q/2 -+ Q 2^-40: near the boundary but far above the rounding error of v
    for (std::size_t c = 0; c < n; ++c) {
        mpz_t& x = xs[c].v;
        switch (c) {
            case 0: mpz_set_ui(x, 0); break;
            case 1: mpz_set_ui(x, 1); break;
            case 2: mpz_sub_ui(x, Q.v, 1); break;
            case 3: mpz_set(x, half.v); break;
            case 4: mpz_add_ui(x, half.v, 1); break;
            case 5: mpz_set_ui(x, 123456789); break;
            case 6: mpz_sub_ui(x, Q.v, 987654321); break;
            case 7: mpz_sub(x, half.v, delta.v); break;
            case 8: mpz_add(x, half.v, delta.v); break;
            default: {
                // uniform in [0, Q) from independent residues
                std::vector<u64> r(k);
                for (std::size_t i = 0; i < k; ++i) r[i] = rng() % primes[i];
                crt_gmp(x, r, primes);
            }
        }
        mpz_mod(x, x, Q.v);  // the fixed values of cases 5 and 6 exceed a one-prime Q of 21 bits
    }
    std::vector<std::vector<u64>> in(k, std::vector<u64>(n));
    for (std::size_t i = 0; i < k; ++i)
        for (std::size_t c = 0; c < n; ++c) in[i][c] = mod_of(xs[c].v, primes[i]);
    return in;
}

/// Runs both conversion modes for one pair of bases on n inputs and checks them against GMP and convert_reference.
void check_conversion(const std::vector<u64>& from, const std::vector<u64>& to, std::size_t n, std::mt19937_64& rng) {
    const std::size_t k = from.size(), m = to.size();
    const BaseConverter conv(moduli_of(from), moduli_of(to));
    ASSERT_EQ(conv.from().size(), k);
    ASSERT_EQ(conv.to().size(), m);
    std::vector<Z> xs;
    const auto in = conv_inputs(from, n, rng, xs);
    Z Q, xc, t;
    product(Q.v, from);  // Q is odd: the centered range (-Q/2, Q/2] is [-(Q-1)/2, (Q-1)/2]
    std::vector<const u64*> inp;
    for (auto& v : in) inp.push_back(v.data());
    for (bool centered : {false, true}) {
        SCOPED_TRACE(centered ? "centered" : "plain");
        std::vector<std::vector<u64>> out(m, std::vector<u64>(n, ~u64(0))), ref(m, std::vector<u64>(n, ~u64(0)));
        std::vector<u64*> op, rp;
        for (auto& v : out) op.push_back(v.data());
        for (auto& v : ref) rp.push_back(v.data());
        conv.convert(inp.data(), op.data(), 0, n, centered);
        conv.convert_reference(inp.data(), rp.data(), 0, n, centered);
        ASSERT_EQ(out, ref) << "convert differs from convert_reference";
        for (std::size_t c = 0; c < n; ++c) {
            for (std::size_t j = 0; j < m; ++j) ASSERT_LT(out[j][c], to[j]);
            if (!centered) {
                // one u in [0, k) must explain every output limb
                ASSERT_TRUE(is_x_plus_small_multiple(out, c, to, xs[c].v, Q.v, k)) << "coefficient " << c << ": no u in [0, k) with y = x + uQ";
            } else {
                mpz_set(xc.v, xs[c].v);
                center(xc.v, Q.v);
                bool exact = true;
                for (std::size_t j = 0; j < m; ++j) exact = exact && out[j][c] == mod_of(xc.v, to[j]);
                if (c == 3 || c == 4) {
                    // x = (Q -+ 1)/2 sits on the rounding boundary of v = round(x/Q + u) in floating point:
                    // either representative is a correct conversion there.
                    mpz_sub(t.v, xc.v, Q.v);
                    if (mpz_sgn(xc.v) < 0) mpz_add(t.v, xc.v, Q.v);
                    bool other = true;
                    for (std::size_t j = 0; j < m; ++j) other = other && out[j][c] == mod_of(t.v, to[j]);
                    ASSERT_TRUE(exact || other) << "coefficient " << c;
                } else {
                    ASSERT_TRUE(exact) << "coefficient " << c << ": not the centered value";
                }
            }
        }
        // a sub-range [begin, end) leaves everything else untouched and agrees with the full conversion
        std::vector<std::vector<u64>> part(m, std::vector<u64>(n, 7));
        std::vector<u64*> pp;
        for (auto& v : part) pp.push_back(v.data());
        const std::size_t b = 3, e = std::min<std::size_t>(131, n);
        conv.convert(inp.data(), pp.data(), b, e, centered);
        for (std::size_t j = 0; j < m; ++j)
            for (std::size_t c = 0; c < n; ++c) ASSERT_EQ(part[j][c], (c >= b && c < e) ? out[j][c] : 7u) << "j=" << j << " c=" << c;
    }
}

TEST(BaseConverter, MatchesGmpAndReference) {
    std::mt19937_64 rng(8);
    const std::size_t n = 203;  // not a multiple of the 64-coefficient block nor of the 8 vector lanes
    for (int fb : {50, 60}) for (int tb : {50, 60}) for (std::size_t k : {1, 2, 5, 12}) for (std::size_t m : {1, 3, 9}) {
        SCOPED_TRACE("from " + std::to_string(k) + "x" + std::to_string(fb) + " bits to " + std::to_string(m) + "x" + std::to_string(tb) + " bits");
        const ConvSetup s = conv_setup(fb, k, tb, m);
        check_conversion(s.from, s.to, n, rng);
        if (HasFatalFailure()) return;
    }
    EXPECT_THROW(BaseConverter({}, {Modulus(97)}), std::invalid_argument);
}

TEST(BaseConverter, OtherPrimeSizesAndLargeBases) {
    // Around the 2^52 digit size of the IFMA lanes, small and 61-bit primes, and source bases up to and past the
    // 64 primes the blocked paths accept (the 128-bit accumulators then carry 64 products of up to 122 bits).
    std::mt19937_64 rng(81);
    const std::pair<int, int> sizes[] = {{21, 61}, {30, 52}, {52, 53}, {53, 30}, {61, 61}, {61, 21}, {40, 52}, {53, 53}};
    for (auto [fb, tb] : sizes) for (std::size_t k : {1, 3, 12, 33, 64, 65}) {  // k = 1: the one-prime shortcut
        SCOPED_TRACE("from " + std::to_string(k) + "x" + std::to_string(fb) + " bits to 5x" + std::to_string(tb) + " bits");
        const auto from = ntt_primes_near(fb, k, 64, {}, false);
        const auto to = ntt_primes_near(tb, 5, 64, from, false);
        check_conversion(from, to, 70, rng);
        if (HasFatalFailure()) return;
    }
}

TEST(BaseConverter, PrecomputedConstants) {
    const ConvSetup s = conv_setup(60, 5, 50, 3);
    const BaseConverter conv(s.fm, s.tm);
    Z Q, Qi, inv, qi, t;
    product(Q.v, s.from);
    for (std::size_t i = 0; i < s.from.size(); ++i) {
        mpz_divexact_ui(Qi.v, Q.v, s.from[i]);
        mpz_set_ui(qi.v, s.from[i]);
        ASSERT_NE(mpz_invert(inv.v, Qi.v, qi.v), 0);
        EXPECT_EQ(conv.qhat_inv[i].w, mpz_get_ui(inv.v));
        for (std::size_t j = 0; j < s.to.size(); ++j) EXPECT_EQ(conv.qhat_mod_p[j][i], mod_of(Qi.v, s.to[j]));
    }
    for (std::size_t j = 0; j < s.to.size(); ++j) EXPECT_EQ(conv.q_mod_p[j], mod_of(Q.v, s.to[j]));
}

TEST(CrtReconstructor, MatchesGmp) {
    std::mt19937_64 rng(9);
    for (int bits : {30, 50, 60, 61}) for (std::size_t k : {1, 2, 5, 12}) {
        SCOPED_TRACE(std::to_string(k) + " primes of " + std::to_string(bits) + " bits");
        const auto primes = ntt_primes_near(bits, k, 1 << 12, {}, bits != 61);
        const CrtReconstructor crt(moduli_of(primes));
        ASSERT_GE(crt.words(), k);
        Z Q, xc;
        product(Q.v, primes);
        EXPECT_EQ(crt.modulus_words(), words_of(Q.v, crt.words()));
        std::vector<Z> xs;
        std::vector<std::vector<u64>> in = conv_inputs(primes, 400, rng, xs);
        // small centered values of both signs (the decoding case): exact in a double
        for (int i = 0; i < 100; ++i) {
            // |v| < 2^min(53, log2(Q) - 2): small against Q/2 and exact in a double
            const int vb = std::min<int>(53, static_cast<int>(mpz_sizeinbase(Q.v, 2)) - 2);
            const i64 v = static_cast<i64>(rng() >> (64 - vb + rng() % vb)) * ((i & 1) ? -1 : 1);
            mpz_set_si(xs[300 + i].v, v);
            if (v < 0) mpz_add(xs[300 + i].v, xs[300 + i].v, Q.v);
            for (std::size_t j = 0; j < k; ++j) in[j][300 + i] = mod_of(xs[300 + i].v, primes[j]);
        }
        std::vector<u64> res(k), out(crt.words());
        for (std::size_t c = 0; c < xs.size(); ++c) {
            for (std::size_t j = 0; j < k; ++j) res[j] = in[j][c];
            crt.reconstruct(res.data(), out.data());
            ASSERT_EQ(out, words_of(xs[c].v, crt.words())) << "coefficient " << c;
            mpz_set(xc.v, xs[c].v);
            center(xc.v, Q.v);
            const double want = mpz_get_d(xc.v);
            const double got = crt.to_double_centered(res.data());
            if (mpz_sizeinbase(xc.v, 2) <= 53) {
                ASSERT_EQ(got, want) << "coefficient " << c;
            } else {
                ASSERT_LT(std::fabs(got - want), std::ldexp(std::fabs(want), -50)) << "coefficient " << c;
            }
        }
    }
    EXPECT_THROW(CrtReconstructor(std::vector<Modulus>{}), std::invalid_argument);
}

// ---- vec_ops ----------------------------------------------------------------------------------------------------

TEST(VecOps, MatchPerElementInt128) {
    std::mt19937_64 rng(10);
    for (u64 q : test_moduli()) {
        const Modulus m(q);
        std::uniform_int_distribution<u64> d(0, q - 1);
        for (std::size_t n : {1, 7, 8, 33, 1024}) {
            std::vector<u64> a(n), b(n), acc(n);
            for (std::size_t i = 0; i < n; ++i) { a[i] = d(rng); b[i] = d(rng); acc[i] = d(rng); }
            if (n > 4) { a[0] = 0; b[0] = q - 1; a[1] = q - 1; b[1] = q - 1; a[2] = q - 1; b[2] = 0; }
            const u64 cv = d(rng), cadd = d(rng);
            const MulConst c(cv, m);
            auto P = [&](u128 x) { return static_cast<u64>(x % q); };
            std::vector<u64> out(n);
            vec_add(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) + b[i])) << "add q=" << q;
            vec_sub(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) + q - b[i])) << "sub q=" << q;
            vec_neg(out.data(), a.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(q) - a[i])) << "neg q=" << q;
            vec_mul(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) * b[i])) << "mul q=" << q;
            out = acc;
            vec_mul_add(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) * b[i] + acc[i])) << "mul_add q=" << q;
            vec_mul_const(out.data(), a.data(), c, n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) * cv)) << "mul_const q=" << q;
            out = acc;
            vec_mul_const_add(out.data(), a.data(), c, n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) * cv + acc[i])) << "mul_const_add q=" << q;
            vec_add_const(out.data(), a.data(), cadd, n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) + cadd)) << "add_const q=" << q;
            vec_sub_mul_const(out.data(), a.data(), b.data(), c, n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P((u128(a[i]) + q - b[i]) * cv)) << "sub_mul_const q=" << q;
            // in place (out aliases the first operand), as the polynomial layer uses them
            out = a;
            vec_add(out.data(), out.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) + b[i]));
            out = a;
            vec_mul(out.data(), out.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P(u128(a[i]) * b[i]));
            out = b;
            vec_sub_mul_const(out.data(), a.data(), out.data(), c, n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], P((u128(a[i]) + q - b[i]) * cv));
        }
    }
}

// ---- sampling ---------------------------------------------------------------------------------------------------

Seed seed_of(std::uint8_t b) {
    Seed s{};
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(b + 31 * i);
    return s;
}

TEST(Sampling, PrngIsDeterministicAndDomainSeparated) {
    const Seed s = seed_of(1);
    std::vector<std::uint8_t> x(10000), y(10000), z(10000), w(10000);
    {
        Prng a(s, 5), b(s, 5), c(s, 6), d(seed_of(2), 5);
        a.fill(x.data(), x.size());
        // chunked fills across the 4096-byte refill boundary give the same stream
        std::size_t off = 0;
        for (std::size_t chunk : {1, 7, 4000, 100, 4096, 3, 1793}) { b.fill(y.data() + off, chunk); off += chunk; }
        ASSERT_EQ(off, y.size());
        c.fill(z.data(), z.size());
        d.fill(w.data(), w.size());
    }
    EXPECT_EQ(x, y);
    EXPECT_NE(x, z);
    EXPECT_NE(x, w);
    // byte-wise the streams of different domains agree no more than chance would (1/256 per byte)
    std::size_t same = 0;
    for (std::size_t i = 0; i < x.size(); ++i) same += x[i] == z[i];
    EXPECT_LT(same, 100u);
    {
        Prng a(s, 9), b(s, 9), c(s, 10);
        std::vector<u64> va, vb, vc;
        for (int i = 0; i < 2000; ++i) { va.push_back(a.next_u64()); vb.push_back(b.next_u64()); vc.push_back(c.next_u64()); }
        EXPECT_EQ(va, vb);
        EXPECT_NE(va, vc);
    }
}

TEST(Sampling, PrngIsAes256CtrOfTheSeed) {
    // Documented construction: AES-256-CTR keyed by the seed, IV = domain (little-endian) in the first 8 bytes.
    const Seed s = seed_of(3);
    const std::uint64_t domain = 0x0123456789abcdefull;
    std::vector<std::uint8_t> got(5000), want(5000), zeros(5000, 0);
    Prng p(s, domain);
    p.fill(got.data(), got.size());
    EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
    std::uint8_t iv[16] = {0};
    for (int i = 0; i < 8; ++i) iv[i] = static_cast<std::uint8_t>(domain >> (8 * i));
    ASSERT_EQ(EVP_EncryptInit_ex(c, EVP_aes_256_ctr(), nullptr, s.data(), iv), 1);
    int outl = 0;
    ASSERT_EQ(EVP_EncryptUpdate(c, want.data(), &outl, zeros.data(), static_cast<int>(zeros.size())), 1);
    EVP_CIPHER_CTX_free(c);
    EXPECT_EQ(got, want);
}

TEST(Sampling, FreshSeedsDiffer) {
    EXPECT_NE(fresh_seed(), fresh_seed());
}

TEST(Sampling, UniformBounds) {
    Prng p(seed_of(4), 0);
    EXPECT_EQ(p.uniform(0), 0u);
    EXPECT_EQ(p.uniform(1), 0u);
    // uniform(7): each value within 5 sigma of n/7
    const int n = 70000;
    std::vector<int> cnt(7, 0);
    for (int i = 0; i < n; ++i) {
        const u64 v = p.uniform(7);
        ASSERT_LT(v, 7u);
        ++cnt[v];
    }
    const double sd = std::sqrt(n * (1.0 / 7) * (6.0 / 7));
    for (int c : cnt) EXPECT_LT(std::fabs(c - n / 7.0), 5 * sd);
    for (int i = 0; i < 10000; ++i) {
        const u64 b = (p.next_u64() >> (p.next_u64() % 63)) + 1;
        ASSERT_LT(p.uniform(b), b);
        const double d = p.uniform_double();
        ASSERT_GE(d, 0.0);
        ASSERT_LT(d, 1.0);
    }
    ASSERT_LE(p.uniform(~u64(0)), ~u64(0) - 1);
    // sample_uniform_mod: in range, mean q/2 within 5 sigma (sigma of the mean: q / sqrt(12 n))
    const Modulus q(ntt_primes_near(60, 1, 1 << 12).at(0));
    std::vector<u64> v(50000);
    sample_uniform_mod(p, q, v.data(), v.size());
    long double mean = 0;
    for (u64 x : v) { ASSERT_LT(x, q.q); mean += x; }
    mean /= v.size();
    EXPECT_LT(std::fabs(static_cast<double>(mean) - q.q / 2.0), 5 * q.q / std::sqrt(12.0 * v.size()));
}

TEST(Sampling, TernaryFrequencies) {
    Prng p(seed_of(5), 0);
    const std::size_t n = 30000;
    const auto v = sample_ternary(p, n);
    ASSERT_EQ(v.size(), n);
    std::map<std::int64_t, int> cnt;
    for (auto x : v) {
        ASSERT_TRUE(x == -1 || x == 0 || x == 1) << x;
        ++cnt[x];
    }
    const double sd = std::sqrt(n * (1.0 / 3) * (2.0 / 3));  // binomial(n, 1/3)
    for (std::int64_t x : {-1, 0, 1}) EXPECT_LT(std::fabs(cnt[x] - n / 3.0), 5 * sd) << "value " << x << ": " << cnt[x];
}

TEST(Sampling, HammingWeightIsExact) {
    Prng p(seed_of(6), 0);
    long plus = 0, total = 0;
    for (auto [n, h] : std::vector<std::pair<std::size_t, std::size_t>>{{16, 0}, {16, 1}, {16, 16}, {256, 64}, {4096, 192}, {4096, 4095}}) {
        for (int rep = 0; rep < 20; ++rep) {
            const auto v = sample_hamming(p, n, h);
            ASSERT_EQ(v.size(), n);
            std::size_t nz = 0;
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_TRUE(v[i] == -1 || v[i] == 0 || v[i] == 1);
                if (v[i]) { ++nz; plus += v[i] == 1; ++total; }
            }
            ASSERT_EQ(nz, h) << "n=" << n << " h=" << h;
        }
    }
    // signs balanced within 5 sigma
    EXPECT_LT(std::fabs(plus - total / 2.0), 5 * std::sqrt(total / 4.0));
    EXPECT_THROW(sample_hamming(p, 16, 17), std::invalid_argument);
}

TEST(Sampling, GaussianMomentsAndTail) {
    Prng p(seed_of(7), 0);
    const std::size_t n = 100000;
    const double sigma = 3.2;
    const auto v = sample_gaussian(p, n, sigma);
    ASSERT_EQ(v.size(), n);
    double s1 = 0, s2 = 0;
    long over2 = 0;
    for (auto x : v) {
        ASSERT_LE(std::llabs(x), static_cast<long long>(6 * sigma)) << "beyond the 6 sigma cut";
        s1 += x;
        s2 += static_cast<double>(x) * x;
        over2 += std::fabs(static_cast<double>(x)) > 2 * sigma;
    }
    const double mean = s1 / n, sd = std::sqrt(s2 / n - mean * mean);
    // Rounding to integers adds variance 1/12: expected sd = sqrt(sigma^2 + 1/12) = 3.213. Standard errors: sigma/sqrt(n)
    // for the mean (0.010), sigma/sqrt(2n) for the sd (0.0072); 5 of them each.
    EXPECT_LT(std::fabs(mean), 5 * sigma / std::sqrt(double(n)));
    EXPECT_LT(std::fabs(sd - std::sqrt(sigma * sigma + 1.0 / 12)), 5 * sigma / std::sqrt(2.0 * n));
    // tail mass beyond 2 sigma (|x| >= 7 since x is an integer): P(|N(0, sigma^2)| > 6.5) = 0.0422, binomial 5 sigma
    const double pt = std::erfc(6.5 / (sigma * std::sqrt(2.0)));
    EXPECT_LT(std::fabs(over2 - n * pt), 5 * std::sqrt(n * pt * (1 - pt))) << over2 << " vs " << n * pt;
}

}  // namespace
}  // namespace ember
