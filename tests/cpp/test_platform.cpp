// What differs between the platforms Ember builds for (x86-64, aarch64): the kernel path the dispatchers take, and the
// portable integer code the non-x86 builds compile instead of x86 intrinsics (carry chains, 64 x 64 -> 128-bit
// products). Each runs everywhere; the emulated runs (make test-arm64, make test-baseline-cpu) set EMBER_EXPECT_PATH
// to the path the emulated CPU must get.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "heaan/bigint.hpp"
#include "math/cpu_features.hpp"
#include "math/kernel_paths.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

/// The path every kernel family must take here: EMBER_EXPECT_PATH, else "scalar" off x86-64 (no vector kernels are
/// built there), else nothing to check ("").
std::string expected_path() {
    if (const char* e = std::getenv("EMBER_EXPECT_PATH")) return e;
#if defined(__x86_64__)
    return "";
#else
    return "scalar";
#endif
}

TEST(Platform, KernelPathsAreTheExpectedOnes) {
    const std::string want = expected_path();
    if (want.empty()) GTEST_SKIP() << "EMBER_EXPECT_PATH not set: any path this CPU supports is right";
    EXPECT_STREQ(simd_path_name(cpu_features().path), want.c_str()) << "on " << cpu_name();
    const u64 q50 = ntt_primes_near(50, 1, 1 << 17, {}, false).at(0), q60 = ntt_primes_near(60, 1, 1 << 17).at(0);
    for (const auto& [family, path] : kernel_paths({q50, q60})) {
        // base conversion has IFMA and AVX2 kernels (an AVX-512 CPU without IFMA takes the AVX2 one), the HEAAN CRT
        // an IFMA kernel only, automorphisms no vector kernel
        std::string expect = want;
        if (family == "base_conversion") expect = want == "ifma" || want == "scalar" ? want : "avx2";
        else if (family == "heaan_crt") expect = want == "ifma" || want == "scalar" ? want : "avx2";  // no AVX-512F kernel
        else if (family == "automorphism") expect = "scalar";
        EXPECT_EQ(path, expect) << family;
    }
    // the transform the dispatcher runs agrees with the reference
    for (u64 q : {q50, q60}) {
        const NttTables tb(4096, Modulus(q));
        EXPECT_EQ(std::string(ntt_path(tb)), want == "ifma" && q == q60 ? "avx512" : want);
        std::mt19937_64 rng(q);
        const std::vector<u64> a = uniform_vec(4096, q, rng);
        auto got = a, ref = a;
        ntt_forward(got.data(), tb);
        ntt_forward_scalar(ref.data(), tb);
        EXPECT_EQ(got, ref);
    }
}

// mpz of n little-endian words.
Z to_mpz(const u64* a, std::size_t n) {
    Z z;
    mpz_import(z.v, n, -1, sizeof(u64), 0, 0, a);
    return z;
}

TEST(Platform, BigintCarryChainsMatchGmp) {
    // heaan/bigint.hpp: ADC / SBB intrinsics on x86-64, 128-bit sums elsewhere; all-ones words make every carry
    // (borrow) ripple through the whole number
    std::mt19937_64 rng(11);
    for (std::size_t n : {1, 2, 3, 5, 9}) {
        Z mod;
        mpz_ui_pow_ui(mod.v, 2, 64 * n);
        for (int it = 0; it < 400; ++it) {
            std::vector<u64> a(n), b(n), out(n);
            for (std::size_t i = 0; i < n; ++i) {
                const unsigned kind = static_cast<unsigned>(rng() % 4);
                a[i] = kind == 0 ? ~u64(0) : kind == 1 ? 0 : rng();
                b[i] = kind == 1 ? ~u64(0) : kind == 2 ? 1 : rng();
            }
            const Z za = to_mpz(a.data(), n), zb = to_mpz(b.data(), n);
            Z want;
            heaan::bigint::add(out.data(), a.data(), b.data(), n);
            mpz_add(want.v, za.v, zb.v);
            mpz_mod(want.v, want.v, mod.v);
            ASSERT_EQ(mpz_cmp(to_mpz(out.data(), n).v, want.v), 0) << "add, n=" << n;
            heaan::bigint::sub(out.data(), a.data(), b.data(), n);
            mpz_sub(want.v, za.v, zb.v);
            mpz_mod(want.v, want.v, mod.v);
            ASSERT_EQ(mpz_cmp(to_mpz(out.data(), n).v, want.v), 0) << "sub, n=" << n;
            heaan::bigint::neg(out.data(), a.data(), n);
            mpz_neg(want.v, za.v);
            mpz_mod(want.v, want.v, mod.v);
            ASSERT_EQ(mpz_cmp(to_mpz(out.data(), n).v, want.v), 0) << "neg, n=" << n;
        }
    }
}

TEST(Platform, WideProductsAreExact) {
    // unsigned __int128 products (MUL on x86-64, MUL + UMULH on aarch64) against 32-bit schoolbook halves
    std::mt19937_64 rng(12);
    for (int it = 0; it < 100000; ++it) {
        const u64 a = it == 0 ? ~u64(0) : rng(), b = it < 2 ? ~u64(0) : rng() >> (rng() % 64);
        const u64 al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
        const u64 ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
        const u64 mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
        const u64 hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
        ASSERT_EQ(mulhi64(a, b), hi) << a << " * " << b;
        ASSERT_EQ(static_cast<u64>(static_cast<u128>(a) * b), a * b);
    }
}

}  // namespace
}  // namespace ember
