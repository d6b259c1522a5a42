// Tests of the negacyclic NTT (math/ntt): convention, convolution property, round trip, and bit-identity of
// every vector path with the scalar reference.
#include <gtest/gtest.h>

#include <cfenv>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "math/cpu_features.hpp"
#include "math/ntt.hpp"
#include "math/ntt_simd.hpp"
#include "math/primes.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

// ---- helpers ----------------------------------------------------------------------------------------------------

struct PrimeSpec {
    const char* name;
    int bits;
    bool below_only;  // only candidates below 2^bits (2^50 is the IFMA ceiling, 2^61 Ember's)
};

// 30 and 49 bits and just below 2^50 take the IFMA path; 55, 60 and 61 bits the 64-bit paths.
const PrimeSpec kPrimes[] = {
    {"p30", 30, false}, {"p49", 49, false}, {"p50-", 50, true}, {"p55", 55, false}, {"p60", 60, false}, {"p61", 61, true},
};

u64 prime_for(const PrimeSpec& s, std::size_t n) { return ntt_primes_near(s.bits, 1, 2 * n, {}, /*both_sides=*/!s.below_only).at(0); }

/// n values uniform in [0, q) from a generator seeded with `seed`.
std::vector<u64> random_poly(std::size_t n, u64 q, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    return uniform_vec(n, q, rng);
}

u64 bit_rev(u64 x, int bits) {
    u64 r = 0;
    for (int i = 0; i < bits; ++i) { r = (r << 1) | (x & 1); x >>= 1; }
    return r;
}

/// FNV-1a over the little-endian bytes of the words.
u64 fnv1a(const std::vector<u64>& v) {
    u64 h = 0xcbf29ce484222325ull;
    for (u64 w : v)
        for (int b = 0; b < 8; ++b) { h ^= (w >> (8 * b)) & 0xff; h *= 0x100000001b3ull; }
    return h;
}

/// Inputs that stress the lazy bounds of the vector paths as well as random ones.
std::vector<std::vector<u64>> test_inputs(std::size_t n, u64 q, std::uint64_t seed) {
    std::vector<std::vector<u64>> ins;
    ins.push_back(random_poly(n, q, seed));
    ins.push_back(random_poly(n, q, seed + 1));
    ins.emplace_back(n, q - 1);
    ins.emplace_back(n, 0);
    std::vector<u64> alt(n);
    for (std::size_t i = 0; i < n; ++i) alt[i] = (i & 1) ? q - 1 : 0;
    ins.push_back(alt);
    std::vector<u64> one(n, 0);
    one[0] = 1;
    ins.push_back(one);
    ins.emplace_back(n, q - 2);
    std::vector<u64> edges(n);  // 0, 1, q - 1, q - 2 in a pattern that is not periodic in any power of two
    for (std::size_t i = 0; i < n; ++i) {
        const u64 e[4] = {0, 1, q - 1, q - 2};
        edges[i] = e[(i * i + i / 3) % 4];
    }
    ins.push_back(edges);
    return ins;
}

const std::vector<std::size_t> kSizes = {2, 4, 8, 16, 1024, 4096, 8192};

/// Calls f(n, prime spec, q, tables) for every size and every prime of kPrimes, in order; stops at the first fatal
/// failure (as an ASSERT inside the loops would).
template <class F>
void for_each_table(const std::vector<std::size_t>& sizes, F&& f) {
    for (std::size_t n : sizes) {
        for (const PrimeSpec& ps : kPrimes) {
            const u64 q = prime_for(ps, n);
            const NttTables tb(n, Modulus(q));
            f(n, ps, q, tb);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

// ---- (a) convolution: forward, pointwise product, inverse == naive negacyclic product --------------------------

TEST(Ntt, NegacyclicConvolutionMatchesNaive) {
    std::uint64_t seed = 1000;
    for_each_table(kSizes, [&](std::size_t n, const PrimeSpec& ps, u64 q, const NttTables& tb) {
        const auto a = random_poly(n, q, ++seed), b = random_poly(n, q, ++seed);
        const auto want = negacyclic_naive(a, b, q);

        auto fa = a, fb = b;
        ntt_forward(fa.data(), tb);
        ntt_forward(fb.data(), tb);
        std::vector<u64> fc(n);
        for (std::size_t i = 0; i < n; ++i) fc[i] = tb.mod.mul(fa[i], fb[i]);
        ntt_inverse(fc.data(), tb);
        EXPECT_EQ(fc, want) << "dispatch path " << ntt_path(tb) << ", n=" << n << ", " << ps.name << " q=" << q;

        fa = a, fb = b;
        ntt_forward_scalar(fa.data(), tb);
        ntt_forward_scalar(fb.data(), tb);
        for (std::size_t i = 0; i < n; ++i) fc[i] = tb.mod.mul(fa[i], fb[i]);
        ntt_inverse_scalar(fc.data(), tb);
        EXPECT_EQ(fc, want) << "scalar path, n=" << n << ", " << ps.name << " q=" << q;
    });
}

// ---- (b) the convention: forward output i = A(psi^(2 brv(i) + 1)) -----------------------------------------------

TEST(Ntt, ForwardEvaluatesAtOddPowersInBitReversedOrder) {
    std::uint64_t seed = 2000;
    for_each_table({2, 4, 8, 16, 1024}, [&](std::size_t n, const PrimeSpec& ps, u64 q, const NttTables& tb) {
        const Modulus& m = tb.mod;
        // psi is a primitive 2n-th root of unity
        EXPECT_EQ(m.pow(tb.psi, n), q - 1);
        const auto a = random_poly(n, q, ++seed);
        auto f = a;
        ntt_forward(f.data(), tb);
        auto fs = a;
        ntt_forward_scalar(fs.data(), tb);
        for (std::size_t i = 0; i < n; ++i) {
            const u64 x = m.pow(tb.psi, 2 * bit_rev(i, tb.log_n) + 1);
            u64 v = 0;  // Horner
            for (std::size_t k = n; k-- > 0;) v = m.add(m.mul(v, x), a[k]);
            ASSERT_EQ(fs[i], v) << "scalar, n=" << n << ", " << ps.name << ", i=" << i;
            ASSERT_EQ(f[i], v) << ntt_path(tb) << ", n=" << n << ", " << ps.name << ", i=" << i;
        }
    });
}

// ---- (c) round trip ------------------------------------------------------------------------------------------------

TEST(Ntt, InverseOfForwardIsIdentity) {
    std::uint64_t seed = 3000;
    for_each_table(kSizes, [&](std::size_t n, const PrimeSpec& ps, u64 q, const NttTables& tb) {
        for (const auto& a : test_inputs(n, q, seed += 7)) {
            auto f = a;
            ntt_forward(f.data(), tb);
            for (u64 x : f) ASSERT_LT(x, q);
            ntt_inverse(f.data(), tb);
            EXPECT_EQ(f, a) << ntt_path(tb) << ", n=" << n << ", " << ps.name;
            auto s = a;
            ntt_forward_scalar(s.data(), tb);
            ntt_inverse_scalar(s.data(), tb);
            EXPECT_EQ(s, a) << "scalar, n=" << n << ", " << ps.name;
        }
    });
}

// ---- (d) every vector path is bit-identical to the scalar reference --------------------------------------------

using FastFn = void (*)(u64*, const NttTables&);

void check_fast_path(const char* path, bool (*supported)(const NttTables&), FastFn fwd, FastFn inv) {
    int checked = 0;
    std::uint64_t seed = 4000;
    const std::vector<std::size_t> sizes = {2, 4, 8, 16, 32, 64, 128, 1024, 2048, 4096, 8192, 1u << 14, 1u << 16, 1u << 17};
    for_each_table(sizes, [&](std::size_t n, const PrimeSpec& ps, u64 q, const NttTables& tb) {
        if (!supported(tb)) return;
        ++checked;
        for (const auto& a : test_inputs(n, q, seed += 11)) {
            auto want = a, got = a;
            ntt_forward_reference(want.data(), tb);
            fwd(got.data(), tb);
            ASSERT_EQ(got, want) << path << " forward, n=" << n << ", " << ps.name << " q=" << q;
            want = a, got = a;  // the inverse on arbitrary reduced inputs, not only on forward outputs
            ntt_inverse_reference(want.data(), tb);
            inv(got.data(), tb);
            ASSERT_EQ(got, want) << path << " inverse, n=" << n << ", " << ps.name << " q=" << q;
        }
    });
    if (checked == 0) GTEST_SKIP() << "the " << path << " path is not supported on this CPU";
}

// The vector kernels exist in x86-64 builds only (CMake leaves their files out elsewhere).
#if defined(__x86_64__)
TEST(Ntt, IfmaPathMatchesScalar) {
    check_fast_path("ifma", detail::ntt_ifma_supported, detail::ntt_forward_ifma, detail::ntt_inverse_ifma);
}

TEST(Ntt, Avx512PathMatchesScalar) {
    check_fast_path("avx512", detail::ntt_avx512_supported, detail::ntt_forward_avx512, detail::ntt_inverse_avx512);
}
#endif

#if defined(__x86_64__)
TEST(Ntt, Avx2PathMatchesScalar) {
    check_fast_path("avx2", detail::ntt_avx2_supported, detail::ntt_forward_avx2, detail::ntt_inverse_avx2);
}

TEST(Ntt, Avx2FmaPathMatchesScalar) {  // the double-precision kernels, q < 2^50
    check_fast_path("avx2-fma", detail::ntt_avx2_fma_supported, detail::ntt_forward_avx2_fma, detail::ntt_inverse_avx2_fma);
}

TEST(Ntt, Avx2FmaPathIgnoresTheCallersRoundingMode) {
    // The quotient estimates' bounds assume rounding to nearest, which the kernels set for each transform: under a
    // caller's upward, downward or toward-zero mode the results stay bit-identical to the reference, and the
    // caller's mode is back afterwards.
    int checked = 0;
    for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
        const std::size_t n = 4096;
        const NttTables tb(n, Modulus(prime_for(kPrimes[2], n)));  // just below 2^50
        if (!detail::ntt_avx2_fma_supported(tb)) continue;
        ++checked;
        for (const auto& a : test_inputs(n, tb.mod.q, 6000 + static_cast<std::uint64_t>(mode))) {
            auto want = a, got = a;
            ntt_forward_reference(want.data(), tb);
            ASSERT_EQ(std::fesetround(mode), 0);
            detail::ntt_forward_avx2_fma(got.data(), tb);
            const int after = std::fegetround();
            std::fesetround(FE_TONEAREST);
            ASSERT_EQ(after, mode) << "the caller's rounding mode was not restored";
            ASSERT_EQ(got, want) << "forward, rounding mode " << mode;
            ntt_inverse_reference(want.data(), tb);
            std::fesetround(mode);
            detail::ntt_inverse_avx2_fma(got.data(), tb);
            std::fesetround(FE_TONEAREST);
            ASSERT_EQ(got, want) << "inverse, rounding mode " << mode;
        }
    }
    if (checked == 0) GTEST_SKIP() << "the avx2-fma path is not supported on this CPU";
}
#endif

TEST(Ntt, DispatchMatchesScalar) {
    std::uint64_t seed = 5000;
    for_each_table({16, 4096, std::size_t(1) << 16}, [&](std::size_t n, const PrimeSpec& ps, u64 q, const NttTables& tb) {
        const auto a = random_poly(n, q, ++seed);
        auto want = a, got = a;
        ntt_forward_scalar(want.data(), tb);
        ntt_forward(got.data(), tb);
        EXPECT_EQ(got, want) << ntt_path(tb) << ", n=" << n << ", " << ps.name;
        want = a, got = a;
        ntt_inverse_scalar(want.data(), tb);
        ntt_inverse(got.data(), tb);
        EXPECT_EQ(got, want) << ntt_path(tb) << ", n=" << n << ", " << ps.name;
    });
}

TEST(Ntt, PathSelection) {
    const std::size_t n = 1024;
    const NttTables small(n, Modulus(prime_for(kPrimes[2], n)));  // just below 2^50
    const NttTables big(n, Modulus(prime_for(kPrimes[5], n)));    // 61 bits
    const std::string ps = ntt_path(small), pb = ntt_path(big);
    EXPECT_EQ(ps == "ifma", detail::ntt_ifma_supported(small));
    EXPECT_NE(pb, "ifma");  // IFMA needs q < 2^50
    EXPECT_TRUE(pb == "avx512" || pb == "avx2" || pb == "scalar");
    const SimdPath path = cpu_features().path;
    EXPECT_EQ(pb, std::string(simd_path_name(path == SimdPath::kIfma ? SimdPath::kAvx512 : path)));
    // below N = 16 the vector kernels defer to the scalar code, and ntt_path says so
    EXPECT_STREQ(ntt_path(NttTables(8, Modulus(prime_for(kPrimes[2], 8)))), "scalar");
    if (!cpu_features().use_avx2()) {
        EXPECT_EQ(ps, "scalar");
        EXPECT_EQ(pb, "scalar");
    }
    // the small-prime paths (IFMA, AVX2 in double precision) are those of q < 2^50 only
    EXPECT_FALSE(ntt_small_prime_path(big));
    EXPECT_EQ(ntt_small_prime_path(small), ps == "ifma" || (ps == "avx2" && detail::ntt_avx2_fma_supported(small)));
    EXPECT_EQ(ntt_small_prime_path(small), path == SimdPath::kIfma || (path == SimdPath::kAvx2 && cpu_features().fma));
}

// ---- (e) argument validation -------------------------------------------------------------------------------------

void expect_tables_invalid(std::size_t n, u64 q, const std::string& needle) {
    expect_invalid([&] { NttTables tb(n, q == 0 ? Modulus() : Modulus(q)); }, {needle},
                         "NttTables(" + std::to_string(n) + ", " + std::to_string(q) + ")");
}

TEST(Ntt, ConstructorRejectsBadArguments) {
    const u64 q = ntt_primes_near(30, 1, u64(1) << 18).at(0);  // = 1 mod 2^18: valid for every n <= 2^17
    EXPECT_NO_THROW(NttTables(2, Modulus(q)));
    EXPECT_NO_THROW(NttTables(std::size_t(1) << 17, Modulus(q)));
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(6), std::size_t(1000),
                          std::size_t(1) << 18, std::size_t(1) << 20}) {
        expect_tables_invalid(n, q, "n must be a power of two in [2, 2^17]");
    }
    expect_tables_invalid(16, (u64(1) << 30) + 1, "prime");  // = 1 mod 32 but 5^2 * 13 * 41 * 61 * 1321
    expect_tables_invalid(16, 257 * 65537, "prime");
    expect_tables_invalid(16, 0, "2^61");  // default Modulus
    // prime but not 1 mod 2n
    const u64 q64 = ntt_primes_near(40, 1, 64).at(0);
    if ((q64 - 1) % 128 != 0) expect_tables_invalid(64, q64, "1 mod 2n");
    expect_tables_invalid(1024, 1000003, "1 mod 2n");  // prime, 1000002 = 2 * 3 * 166667
    // q >= 2^61 cannot even form a Modulus
    EXPECT_THROW(Modulus(u64(1) << 61), std::invalid_argument);
}

// ---- golden vector -------------------------------------------------------------------------------------------------

// Guards against silent convention changes (root choice, ordering, scaling): the forward transform of
// 0, 1, ..., 15 for N = 16 and q = ntt_primes_near(30, 1, 32)[0] must keep this FNV-1a hash. The value was
// computed once from the scalar reference path; if it changes, every stored ciphertext/key in NTT form changes too.
TEST(Ntt, GoldenVectorN16) {
    const std::size_t n = 16;
    const u64 q = ntt_primes_near(30, 1, 32).at(0);
    const NttTables tb(n, Modulus(q));
    std::vector<u64> a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = i;
    auto s = a;
    ntt_forward_scalar(s.data(), tb);
    constexpr u64 kGoldenHash = 0x69bc39624f962194ull;
    EXPECT_EQ(fnv1a(s), kGoldenHash) << "q=" << q << " psi=" << tb.psi;
    auto d = a;
    ntt_forward(d.data(), tb);
    EXPECT_EQ(d, s);
    ntt_inverse(d.data(), tb);
    EXPECT_EQ(d, a);
}

// ---- fast scalar transforms (math/ntt_scalar.cpp) against the reference loops ---------------------------------------

/// Primes for the scalar checks at size n: 20 to 61 bits, the bounds the fast scalar kernels switch on (2^60: below
/// it they skip a correction per radix-4 unit) from both sides, the IFMA ceiling 2^50 from both sides, and the
/// largest NTT prime below 2^61.
struct NamedPrime {
    std::string name;
    u64 q;
};

std::vector<NamedPrime> scalar_check_primes(std::size_t n) {
    const u64 two_n = 2 * n;
    std::vector<NamedPrime> ps;
    auto below = [&](int bits) { return ntt_primes_near(bits, 1, two_n, {}, /*both_sides=*/false).at(0); };
    auto above = [&](int bits) {  // the nearest NTT prime above 2^bits
        for (u64 q : ntt_primes_near(bits, 8, two_n, {}, /*both_sides=*/true))
            if (q > (u64(1) << bits)) return q;
        return u64(0);
    };
    for (int bits : {20, 30, 40, 49, 55}) ps.push_back({"p" + std::to_string(bits), ntt_primes_near(bits, 1, two_n).at(0)});
    ps.push_back({"below 2^50", below(50)});
    ps.push_back({"above 2^50", above(50)});
    ps.push_back({"below 2^60", below(60)});
    ps.push_back({"above 2^60", above(60)});
    ps.push_back({"largest below 2^61", below(61)});
    for (const NamedPrime& p : ps) EXPECT_NE(p.q, 0u) << p.name << ", n=" << n;
    return ps;
}

/// Random inputs and edge values: all 0, 1, q - 1 or q - 2, alternating, and a non-periodic mix of the four.
std::vector<std::vector<u64>> scalar_check_inputs(std::size_t n, u64 q, std::uint64_t seed) {
    std::vector<std::vector<u64>> ins;
    ins.push_back(random_poly(n, q, seed));
    ins.push_back(random_poly(n, q, seed + 1));
    for (u64 v : {u64(0), u64(1), q - 1, q - 2}) ins.emplace_back(n, v);
    std::vector<u64> alt(n), alt2(n), mix(n);
    const u64 e[4] = {0, 1, q - 1, q - 2};
    for (std::size_t i = 0; i < n; ++i) {
        alt[i] = (i & 1) ? q - 1 : 0;
        alt2[i] = (i & 1) ? q - 2 : q - 1;
        mix[i] = e[(i * i + i / 3) % 4];
    }
    ins.push_back(alt), ins.push_back(alt2), ins.push_back(mix);
    return ins;
}

/// fwd / inv == the reference loops bit for bit (the inverse on arbitrary reduced inputs too), and inv(fwd(a)) == a.
void check_scalar_against_reference(const char* name, FastFn fwd, FastFn inv) {
    std::uint64_t seed = 6000;
    for (int log_n = 1; log_n <= 17; ++log_n) {
        const std::size_t n = std::size_t(1) << log_n;
        for (const NamedPrime& np : scalar_check_primes(n)) {
            const u64 q = np.q;
            const std::string& pname = np.name;
            if (q == 0) continue;
            const NttTables tb(n, Modulus(q));
            for (const auto& a : scalar_check_inputs(n, q, seed += 13)) {
                auto want = a, got = a;
                ntt_forward_reference(want.data(), tb);
                fwd(got.data(), tb);
                ASSERT_EQ(got, want) << name << " forward, n=" << n << ", " << pname << " q=" << q;
                inv(got.data(), tb);
                ASSERT_EQ(got, a) << name << " round trip, n=" << n << ", " << pname << " q=" << q;
                want = a, got = a;
                ntt_inverse_reference(want.data(), tb);
                inv(got.data(), tb);
                ASSERT_EQ(got, want) << name << " inverse, n=" << n << ", " << pname << " q=" << q;
            }
        }
    }
}

TEST(NttScalar, FastMatchesReference) { check_scalar_against_reference("scalar", ntt_forward_scalar, ntt_inverse_scalar); }

TEST(NttScalar, ModMulCountMergesNInverse) {
    for (std::size_t n : {std::size_t(2), std::size_t(16), std::size_t(1) << 16}) {
        const NttTables tb(n, Modulus(ntt_primes_near(49, 1, 2 * n).at(0)));
        const std::uint64_t bfly = n / 2 * static_cast<std::uint64_t>(tb.log_n);
        EXPECT_EQ(ntt_mod_mul_count(tb, false), bfly) << "n=" << n;
        EXPECT_EQ(ntt_mod_mul_count(tb, true), bfly + n / 2) << "n=" << n;
    }
}

}  // namespace
}  // namespace ember
