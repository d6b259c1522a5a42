// Vector and optimized scalar kernels (math/vec_simd.hpp) against references: every path of every element-wise
// kernel against plain __int128 arithmetic, the AVX-512F and AVX2 products against the scalar kernels (the primes of
// 50..61 bits they serve), the streaming vec_dot (scalar and AVX2) over 1..40 terms and sizes around its blocks, and
// BaseConverter::convert (each path) against convert_reference.
// Forced-IFMA / AVX-512 / AVX2 cases are skipped on CPUs without those instructions (or with EMBER_SIMD capping
// them). Fixed seeds throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "math/cpu_features.hpp"
#include "math/modarith.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "math/vec_ops.hpp"
#include "math/vec_simd.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;
using Vec = std::vector<u64>;

// 30-, 45-, 49-bit primes, the largest NTT primes below 2^50 (the IFMA ceiling), 60- and 61-bit primes, plus
// non-prime odd moduli and one just above 2^50 (scalar there).
std::vector<u64> simd_moduli() {
    std::vector<u64> qs;
    for (int bits : {30, 45, 49}) qs.push_back(ntt_primes_near(bits, 1, 1 << 17).at(0));
    for (u64 q : ntt_primes_near(50, 2, 1 << 17, {}, false)) qs.push_back(q);
    qs.push_back((u64(1) << 49) + 1);          // just above 2^49 (Barrett estimate needs two corrections)
    qs.push_back((u64(1) << 50) - 1);          // largest IFMA modulus (not prime: the kernels do not care)
    qs.push_back((u64(1) << 50) + 55);         // just above: scalar
    qs.push_back(ntt_primes_near(60, 1, 1 << 17).at(0));
    qs.push_back(ntt_primes_near(61, 1, 1 << 17, {}, false).at(0));
    qs.push_back((u64(1) << 61) - 1);
    qs.push_back(1000003);
    return qs;
}

// NTT primes near 2^50 (those above it are beyond the IFMA kernels), 2^55, 2^58, 2^60 and below 2^61: the
// AVX-512F path of the products. Four of each size (both sides of 2^bits), three below 2^61.
std::vector<u64> wide_primes() {
    std::vector<u64> qs;
    for (int bits : {50, 55, 58, 60}) for (u64 q : ntt_primes_near(bits, 4, 1 << 17)) qs.push_back(q);
    for (u64 q : ntt_primes_near(61, 3, 1 << 17, {}, false)) qs.push_back(q);
    return qs;
}

Vec rand_vec(std::size_t n, u64 q, std::mt19937_64& rng) {
    Vec v = uniform_vec(n, q, rng);
    // extreme values, including in the n % 8 tail
    for (std::size_t i = 0; i < n; i += 1 + rng() % 7) {
        const u64 r = rng() % 4;
        if (r == 0) v[i] = q - 1;
        else if (r == 1) v[i] = 0;
    }
    if (n >= 3) { v[0] = q - 1; v[1] = 0; v[n - 1] = q - 1; }
    return v;
}

const std::vector<std::size_t> kSizes = {8, 64, 1000, 65536};

// Function tables of the paths: the public dispatcher, the scalar code, and the vector kernels where usable.
struct Paths {
    std::string name;
    decltype(&vec_add) add, sub;
    decltype(&vec_neg) neg;
    decltype(&vec_add_const) add_const;
    decltype(&vec_mul) mul;
    decltype(&vec_mul_add) mul_add;
    decltype(&vec_mul_const) mul_const, mul_const_add;
    decltype(&vec_dot) dot;
    decltype(&vec_sub_mul_const) sub_mul_const;
};

const Paths kPublic{"public", vec_add, vec_sub, vec_neg, vec_add_const, vec_mul, vec_mul_add, vec_mul_const,
                    vec_mul_const_add, vec_dot, vec_sub_mul_const};
const Paths kScalar{"scalar", detail::vec_add_scalar, detail::vec_sub_scalar, detail::vec_neg_scalar,
                    detail::vec_add_const_scalar, detail::vec_mul_scalar, detail::vec_mul_add_scalar,
                    detail::vec_mul_const_scalar, detail::vec_mul_const_add_scalar, detail::vec_dot_scalar,
                    detail::vec_sub_mul_const_scalar};
// The vector kernels exist in x86-64 builds only (CMake leaves their files out elsewhere): their tables and tests
// are compiled there only.
#if defined(__x86_64__)
// AVX-512F for the additive kernels, IFMA for the multiplicative ones
const Paths kIfma{"ifma", detail::vec_add_avx512, detail::vec_sub_avx512, detail::vec_neg_avx512,
                  detail::vec_add_const_avx512, detail::vec_mul_ifma, detail::vec_mul_add_ifma,
                  detail::vec_mul_const_ifma, detail::vec_mul_const_add_ifma, detail::vec_dot_ifma,
                  detail::vec_sub_mul_const_ifma};

// AVX-512F everywhere (the products for any q < 2^61)
const Paths kAvx512{"avx512", detail::vec_add_avx512, detail::vec_sub_avx512, detail::vec_neg_avx512,
                    detail::vec_add_const_avx512, detail::vec_mul_avx512, detail::vec_mul_add_avx512,
                    detail::vec_mul_const_avx512, detail::vec_mul_const_add_avx512, detail::vec_dot_avx512,
                    detail::vec_sub_mul_const_avx512};
#endif

#if defined(__x86_64__)
// AVX2 everywhere (any q < 2^61; x86-64 only)
const Paths kAvx2{"avx2", detail::vec_add_avx2, detail::vec_sub_avx2, detail::vec_neg_avx2,
                  detail::vec_add_const_avx2, detail::vec_mul_avx2, detail::vec_mul_add_avx2,
                  detail::vec_mul_const_avx2, detail::vec_mul_const_add_avx2, detail::vec_dot_avx2,
                  detail::vec_sub_mul_const_avx2};
#endif

void check_paths(const Paths& P, u64 q, std::size_t n, std::mt19937_64& rng, bool mul_ok, bool add_ok) {
    SCOPED_TRACE(P.name + " q=" + std::to_string(q) + " n=" + std::to_string(n));
    const Modulus m(q);
    const Vec a = rand_vec(n, q, rng), b = rand_vec(n, q, rng), acc = rand_vec(n, q, rng);
    const u64 cv = std::uniform_int_distribution<u64>(0, q - 1)(rng);
    for (u64 cw : {cv, u64(0), u64(1), q - 1}) {
        const MulConst c(cw, m);
        Vec out(n, 12345);
        auto P128 = [&](u128 x) { return static_cast<u64>(x % q); };
        auto expect = [&](const Vec& got, const std::function<u64(std::size_t)>& want, const char* what) {
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want(i)) << what << " i=" << i << " c=" << cw;
        };
        if (add_ok && cw == cv) {
            P.add(out.data(), a.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) + b[i]); }, "add");
            P.sub(out.data(), a.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) + q - b[i]); }, "sub");
            P.neg(out.data(), a.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(q) - a[i]); }, "neg");
            P.add_const(out.data(), a.data(), cw, n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) + cw); }, "add_const");
            out = a;  // in place
            P.add(out.data(), out.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) + b[i]); }, "add in place");
        }
        if (!mul_ok) continue;
        if (cw == cv) {
            P.mul(out.data(), a.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) * b[i]); }, "mul");
            P.mul(out.data(), a.data(), a.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) * a[i]); }, "square");
            out = acc;
            P.mul_add(out.data(), a.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) * b[i] + acc[i]); }, "mul_add");
            out = a;  // in place
            P.mul(out.data(), out.data(), b.data(), n, m);
            expect(out, [&](std::size_t i) { return P128(u128(a[i]) * b[i]); }, "mul in place");
        }
        P.mul_const(out.data(), a.data(), c, n, m);
        expect(out, [&](std::size_t i) { return P128(u128(a[i]) * cw); }, "mul_const");
        out = acc;
        P.mul_const_add(out.data(), a.data(), c, n, m);
        expect(out, [&](std::size_t i) { return P128(u128(a[i]) * cw + acc[i]); }, "mul_const_add");
        P.sub_mul_const(out.data(), a.data(), b.data(), c, n, m);
        expect(out, [&](std::size_t i) { return P128((u128(a[i]) + q - b[i]) * cw); }, "sub_mul_const");
        out = b;  // in place on the second operand
        P.sub_mul_const(out.data(), a.data(), out.data(), c, n, m);
        expect(out, [&](std::size_t i) { return P128((u128(a[i]) + q - b[i]) * cw); }, "sub_mul_const in place");
    }
    if (!mul_ok) return;
    // vec_dot: term counts around the specializations and the chunk sizes (15 for IFMA, bits-dependent scalar)
    const std::vector<std::size_t> term_counts =
        n <= 1000 ? std::vector<std::size_t>{1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 40} : std::vector<std::size_t>{1, 3, 5, 16};
    for (std::size_t terms : term_counts) {
        std::vector<Vec> A, B;
        for (std::size_t t = 0; t < terms; ++t) { A.push_back(rand_vec(n, q, rng)); B.push_back(rand_vec(n, q, rng)); }
        if (terms >= 2 && n >= 8) for (std::size_t t = 0; t < terms; ++t) { A[t][5] = B[t][5] = q - 1; }  // worst case
        std::vector<const u64*> pa, pb;
        for (std::size_t t = 0; t < terms; ++t) { pa.push_back(A[t].data()); pb.push_back(B[t].data()); }
        Vec out(n, 777);
        P.dot(out.data(), pa.data(), pb.data(), terms, n, m);
        for (std::size_t i = 0; i < n; ++i) {
            u64 want = 0;
            for (std::size_t t = 0; t < terms; ++t) want = static_cast<u64>((u128(want) + u128(A[t][i]) * B[t][i]) % q);
            ASSERT_EQ(out[i], want) << "dot terms=" << terms << " i=" << i;
        }
        // in place: out aliases the first term's left operand (each coefficient reads all terms before the write)
        Vec inplace = A[0];
        pa[0] = inplace.data();
        P.dot(inplace.data(), pa.data(), pb.data(), terms, n, m);
        ASSERT_EQ(inplace, out) << "dot in place, terms=" << terms;
    }
}

// ---- reference tests first: the scalar code (and the public dispatcher) against __int128 ---------------------------

TEST(VecSimd, ScalarMatchesInt128) {
    std::mt19937_64 rng(101);
    for (u64 q : simd_moduli())
        for (std::size_t n : kSizes) check_paths(kScalar, q, n, rng, true, true);
}

TEST(VecSimd, PublicDispatchMatchesInt128) {
    std::mt19937_64 rng(102);
    for (u64 q : simd_moduli())
        for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(1000), std::size_t(65536)})
            check_paths(kPublic, q, n, rng, true, true);
}

TEST(VecSimd, Barrett64MatchesInt128) {
    std::mt19937_64 rng(103);
    std::vector<u64> qs = simd_moduli();
    for (int bits = 3; bits <= 61; ++bits) {
        qs.push_back((u64(1) << (bits - 1)) + 1);
        qs.push_back((u64(1) << bits) - 1);
    }
    for (u64 q : qs) {
        const Modulus m(q);
        const detail::Barrett64 br(m);
        ASSERT_TRUE(br.ok) << q;
        std::uniform_int_distribution<u64> d(0, q - 1);
        for (int it = 0; it < 20000; ++it) {
            const u64 a = it < 3 ? q - 1 : d(rng), b = it < 2 ? q - 1 : d(rng), c = it < 1 ? q - 1 : d(rng);
            const u128 x = u128(a) * b + c;  // the largest x the kernels feed it: (q-1)^2 + (q-1)
            ASSERT_EQ(br.reduce(x), static_cast<u64>(x % q)) << "q=" << q << " a=" << a << " b=" << b << " c=" << c;
        }
    }
    EXPECT_FALSE(detail::Barrett64(Modulus(u64(1) << 40)).ok);
    EXPECT_FALSE(detail::Barrett64(Modulus(3)).ok);
}

// ---- forced vector paths (x86-64 builds) -----------------------------------------------------------------------------

#if defined(__x86_64__)
TEST(VecSimd, Avx512AndIfmaMatchInt128) {
    // the additive kernels need AVX-512F only; the multiplicative ones IFMA and q < 2^50
    if (!detail::vec_avx512_supported()) GTEST_SKIP() << "CPU lacks AVX-512 F/DQ/VL";
    const bool ifma = cpu_features().avx512ifma;
    std::mt19937_64 rng(104);
    int ifma_moduli = 0;
    for (u64 q : simd_moduli()) {
        const bool mul_ok = detail::vec_ifma_supported(Modulus(q));
        ifma_moduli += mul_ok;
        if (ifma) EXPECT_EQ(mul_ok, q < (u64(1) << 50)) << q;
        for (std::size_t n : kSizes) check_paths(kIfma, q, n, rng, mul_ok, true);
        for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(9), std::size_t(15)}) check_paths(kIfma, q, n, rng, mul_ok, true);
    }
    if (ifma) EXPECT_GE(ifma_moduli, 7);
}

// ---- AVX-512F products against the scalar kernels --------------------------------------------------------------

// Operands of the multiplicative kernels: a, b, acc, constants, and the operands of up to max_terms dot terms.
struct MulInputs {
    Vec a, b, acc;
    std::vector<u64> consts;
    std::vector<Vec> A, B;
};

MulInputs mul_inputs(std::size_t n, u64 q, std::size_t max_terms, std::mt19937_64& rng) {
    MulInputs in{rand_vec(n, q, rng), rand_vec(n, q, rng), rand_vec(n, q, rng), {0, 1, q - 1, q / 2}, {}, {}};
    in.consts.push_back(std::uniform_int_distribution<u64>(0, q - 1)(rng));
    for (std::size_t t = 0; t < max_terms; ++t) { in.A.push_back(rand_vec(n, q, rng)); in.B.push_back(rand_vec(n, q, rng)); }
    // the largest sums: every term (q-1)^2 in coefficient 5, and in the last one (in the n % 8 tail when there is one)
    for (std::size_t t = 0; t < max_terms && n >= 8; ++t) in.A[t][5] = in.B[t][5] = in.A[t][n - 1] = in.B[t][n - 1] = q - 1;
    return in;
}

// Every multiplicative kernel of P on `in`, out of place and in place, each output with its name.
std::vector<std::pair<std::string, Vec>> mul_outputs(const Paths& P, const Modulus& m, const MulInputs& in,
                                                     const std::vector<std::size_t>& term_counts) {
    const std::size_t n = in.a.size();
    std::vector<std::pair<std::string, Vec>> r;
    auto add = [&](std::string name, Vec v) { r.emplace_back(std::move(name), std::move(v)); };
    Vec out(n, 12345);
    P.mul(out.data(), in.a.data(), in.b.data(), n, m), add("mul", out);
    P.mul(out.data(), in.a.data(), in.a.data(), n, m), add("square", out);
    out = in.a, P.mul(out.data(), out.data(), in.b.data(), n, m), add("mul in place", out);
    out = in.acc, P.mul_add(out.data(), in.a.data(), in.b.data(), n, m), add("mul_add", out);
    out = in.a, P.mul_add(out.data(), out.data(), in.b.data(), n, m), add("mul_add aliased", out);
    for (u64 cw : in.consts) {
        const MulConst c(cw, m);
        const std::string k = " c=" + std::to_string(cw);
        P.mul_const(out.data(), in.a.data(), c, n, m), add("mul_const" + k, out);
        out = in.acc, P.mul_const_add(out.data(), in.a.data(), c, n, m), add("mul_const_add" + k, out);
        P.sub_mul_const(out.data(), in.a.data(), in.b.data(), c, n, m), add("sub_mul_const" + k, out);
        out = in.b, P.sub_mul_const(out.data(), in.a.data(), out.data(), c, n, m), add("sub_mul_const in place" + k, out);
    }
    std::vector<const u64*> pa, pb;
    for (std::size_t t = 0; t < in.A.size(); ++t) { pa.push_back(in.A[t].data()); pb.push_back(in.B[t].data()); }
    for (std::size_t terms : term_counts) {
        out.assign(n, 777);
        P.dot(out.data(), pa.data(), pb.data(), terms, n, m), add("dot terms=" + std::to_string(terms), out);
    }
    return r;
}

void expect_same_outputs(const Paths& P, const Modulus& m, const MulInputs& in, const std::vector<std::size_t>& term_counts) {
    const auto want = mul_outputs(kScalar, m, in, term_counts), got = mul_outputs(P, m, in, term_counts);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
        const Vec &w = want[k].second, &g = got[k].second;
        for (std::size_t i = 0; i < w.size(); ++i) {
            ASSERT_LT(w[i], m.q) << want[k].first << " i=" << i;
            ASSERT_EQ(g[i], w[i]) << P.name << " " << want[k].first << " q=" << m.q << " n=" << w.size() << " i=" << i;
        }
    }
}

TEST(VecSimd, Avx512MulMatchesScalar) {
    if (!detail::vec_avx512_supported()) GTEST_SKIP() << "CPU lacks AVX-512 F/DQ/VL";
    std::mt19937_64 rng(106);
    // around the dot specializations (1..4) and the chunk sizes (2..32 terms per reduction, depending on q)
    const std::vector<std::size_t> terms = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 32, 33, 40};
    std::vector<u64> qs = wide_primes();
    for (u64 q : simd_moduli()) qs.push_back(q);  // smaller moduli too: the AVX-512F kernels serve any q < 2^61
    for (u64 q : qs) {
        const Modulus m(q);
        for (std::size_t n : {1, 3, 7, 8, 9, 15, 17, 64, 203, 1000}) {
            SCOPED_TRACE("q=" + std::to_string(q) + " n=" + std::to_string(n));
            expect_same_outputs(kAvx512, m, mul_inputs(n, q, terms.back(), rng), terms);
        }
        // a whole limb at N = 2^16 (a few term counts)
        expect_same_outputs(kAvx512, m, mul_inputs(65536 + 3, q, 5, rng), {1, 3, 5});
        // edge values only: every operand 0, or every operand q - 1 (the largest products and sums)
        for (u64 v : {u64(0), q - 1}) {
            MulInputs in = mul_inputs(203, q, terms.back(), rng);
            for (Vec* x : {&in.a, &in.b, &in.acc}) std::fill(x->begin(), x->end(), v);
            for (auto& x : in.A) std::fill(x.begin(), x.end(), v);
            for (auto& x : in.B) std::fill(x.begin(), x.end(), v);
            expect_same_outputs(kAvx512, m, in, terms);
        }
    }
}

TEST(VecSimd, Avx512MatchesInt128) {
    if (!detail::vec_avx512_supported()) GTEST_SKIP() << "CPU lacks AVX-512 F/DQ/VL";
    std::mt19937_64 rng(107);
    std::vector<u64> qs = wide_primes();
    for (u64 q : simd_moduli()) qs.push_back(q);
    for (u64 q : {u64(2), u64(3), u64(1) << 40}) qs.push_back(q);  // no Barrett64 constants: scalar inside
    for (u64 q : qs)
        for (std::size_t n : {std::size_t(1), std::size_t(9), std::size_t(64), std::size_t(1000)}) check_paths(kAvx512, q, n, rng, true, true);
}

TEST(VecSimd, Avx512MulAllBitSizes) {
    if (!detail::vec_avx512_supported()) GTEST_SKIP() << "CPU lacks AVX-512 F/DQ/VL";
    // every bit size up to 61, at both ends of the range and in the middle (the Barrett64 shift, the dot chunk and
    // the middle-product cap change with bits and q / 2^bits)
    std::mt19937_64 rng(108);
    for (int bits = 3; bits <= 61; ++bits) {
        for (u64 q : {(u64(1) << (bits - 1)) + 1, (u64(1) << bits) - 1, (u64(1) << (bits - 1)) + (u64(1) << (bits - 2)) + 1}) {
            const Modulus m(q);
            SCOPED_TRACE("q=" + std::to_string(q));
            expect_same_outputs(kAvx512, m, mul_inputs(203, q, 33, rng), {1, 2, 3, 4, 5, 9, 17, 33});
        }
    }
}

TEST(VecSimd, IfmaMulAllBitSizes) {
    if (!cpu_features().avx512ifma) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
    // every bit size up to 50, at both ends of the range (the Barrett parameters change with bits and q / 2^bits)
    std::mt19937_64 rng(105);
    for (int bits = 2; bits <= 50; ++bits) {
        for (u64 q : {(u64(1) << (bits - 1)) + 1, (u64(1) << bits) - 1, (u64(1) << (bits - 1)) + (u64(1) << (bits - 2)) + 1}) {
            if (q < 3 || (q & (q - 1)) == 0) continue;
            const Modulus m(q);
            ASSERT_TRUE(detail::vec_ifma_supported(m));
            const std::size_t n = 203;
            Vec a = rand_vec(n, q, rng), b = rand_vec(n, q, rng), acc = rand_vec(n, q, rng), out(n);
            detail::vec_mul_ifma(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<u64>(u128(a[i]) * b[i] % q)) << q;
            out = acc;
            detail::vec_mul_add_ifma(out.data(), a.data(), b.data(), n, m);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<u64>((u128(a[i]) * b[i] + acc[i]) % q)) << q;
            const u64* pa[3] = {a.data(), b.data(), acc.data()};
            const u64* pb[3] = {b.data(), acc.data(), a.data()};
            detail::vec_dot_ifma(out.data(), pa, pb, 3, n, m);
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(out[i], static_cast<u64>((u128(a[i]) * b[i] + u128(b[i]) * acc[i] + u128(acc[i]) * a[i]) % q)) << q;
        }
    }
}
#endif  // __x86_64__

// ---- AVX2 against the __int128 reference and the scalar kernels -------------------------------------------------------

#if defined(__x86_64__)
bool avx2_on() { return cpu_features().use_avx2(); }

// Every modulus the AVX2 kernels meet: the list above, the wide primes, and those without Barrett64 constants
// (below 4, powers of two: scalar inside), 5 and 7 (s = 1).
std::vector<u64> avx2_moduli() {
    std::vector<u64> qs = simd_moduli();
    for (u64 q : wide_primes()) qs.push_back(q);
    for (u64 q : {u64(2), u64(3), u64(5), u64(7), u64(1) << 40, u64(1) << 60}) qs.push_back(q);
    return qs;
}

TEST(VecSimd, Avx2MatchesInt128) {
    if (!avx2_on()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    std::mt19937_64 rng(109);
    for (u64 q : avx2_moduli())
        for (std::size_t n : {1, 3, 4, 5, 7, 8, 9, 64, 1000}) check_paths(kAvx2, q, n, rng, true, true);
    for (u64 q : simd_moduli()) check_paths(kAvx2, q, 65536 + 3, rng, true, true);
}

TEST(VecSimd, Avx2MulMatchesScalar) {
    if (!avx2_on()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    std::mt19937_64 rng(110);
    const std::vector<std::size_t> terms = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 32, 33, 40};
    for (u64 q : avx2_moduli()) {
        const Modulus m(q);
        for (std::size_t n : {1, 3, 5, 7, 8, 9, 15, 17, 64, 203, 515}) {
            SCOPED_TRACE("q=" + std::to_string(q) + " n=" + std::to_string(n));
            MulInputs in = mul_inputs(n, q, terms.back(), rng);
            in.consts.push_back(q >= 3 ? q - 2 : 0);
            expect_same_outputs(kAvx2, m, in, terms);
        }
        // a whole limb at N = 2^16 (a few term counts, the last vector partial)
        expect_same_outputs(kAvx2, m, mul_inputs(65536 + 3, q, 6, rng), {1, 3, 6});
        // edge values only: every operand 0, 1, q - 1 or q - 2, and a random mix of the four
        const std::vector<u64> edges = {0, 1 % q, q - 1, q >= 2 ? q - 2 : 0};
        for (int mode = 0; mode <= 4; ++mode) {
            MulInputs in = mul_inputs(203, q, terms.back(), rng);
            auto fill = [&](Vec& x) { for (u64& v : x) v = mode < 4 ? edges[mode] : edges[rng() % 4]; };
            for (Vec* x : {&in.a, &in.b, &in.acc}) fill(*x);
            for (auto& x : in.A) fill(x);
            for (auto& x : in.B) fill(x);
            expect_same_outputs(kAvx2, m, in, terms);
        }
    }
}

TEST(VecSimd, Avx2MulAllBitSizes) {
    if (!avx2_on()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    // every bit size up to 61, at both ends of the range and in the middle (the Barrett64 shift, BIG or not, the dot
    // chunk and the middle-product cap change with bits and q / 2^bits)
    std::mt19937_64 rng(111);
    for (int bits = 3; bits <= 61; ++bits) {
        for (u64 q : {(u64(1) << (bits - 1)) + 1, (u64(1) << bits) - 1, (u64(1) << (bits - 1)) + (u64(1) << (bits - 2)) + 1}) {
            const Modulus m(q);
            SCOPED_TRACE("q=" + std::to_string(q));
            expect_same_outputs(kAvx2, m, mul_inputs(203, q, 33, rng), {1, 2, 3, 4, 5, 9, 17, 33});
        }
    }
}

TEST(VecSimd, Avx2AdditiveEdgeValues) {
    if (!avx2_on()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    // all pairs of 0, 1, q - 1, q - 2 (and random values), every size up to 13: the additive kernels and the
    // constants against the scalar ones
    std::mt19937_64 rng(112);
    for (u64 q : avx2_moduli()) {
        const Modulus m(q);
        const std::vector<u64> edges = {0, 1 % q, q - 1, q >= 2 ? q - 2 : 0, q / 2, rng() % q};
        Vec a, b;
        for (u64 x : edges) for (u64 y : edges) { a.push_back(x); b.push_back(y); }
        for (std::size_t n = 1; n <= a.size(); n += (n < 13 ? 1 : 7)) {
            for (u64 c : edges) {
                Vec w(n, 5), g(n, 5);
                auto same = [&](const char* what) {
                    for (std::size_t i = 0; i < n; ++i)
                        ASSERT_EQ(g[i], w[i]) << what << " q=" << q << " n=" << n << " i=" << i << " c=" << c;
                };
                detail::vec_add_scalar(w.data(), a.data(), b.data(), n, m), detail::vec_add_avx2(g.data(), a.data(), b.data(), n, m);
                same("add");
                detail::vec_sub_scalar(w.data(), a.data(), b.data(), n, m), detail::vec_sub_avx2(g.data(), a.data(), b.data(), n, m);
                same("sub");
                detail::vec_neg_scalar(w.data(), a.data(), n, m), detail::vec_neg_avx2(g.data(), a.data(), n, m);
                same("neg");
                detail::vec_add_const_scalar(w.data(), a.data(), c, n, m), detail::vec_add_const_avx2(g.data(), a.data(), c, n, m);
                same("add_const");
                const MulConst k(c, m);
                detail::vec_mul_const_scalar(w.data(), a.data(), k, n, m), detail::vec_mul_const_avx2(g.data(), a.data(), k, n, m);
                same("mul_const");
                w = b, g = b;
                detail::vec_mul_const_add_scalar(w.data(), a.data(), k, n, m), detail::vec_mul_const_add_avx2(g.data(), a.data(), k, n, m);
                same("mul_const_add");
                detail::vec_sub_mul_const_scalar(w.data(), a.data(), b.data(), k, n, m);
                detail::vec_sub_mul_const_avx2(g.data(), a.data(), b.data(), k, n, m);
                same("sub_mul_const");
                for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(w[i], static_cast<u64>((u128(a[i]) + q - b[i]) * k.w % q));
            }
        }
    }
}
#endif  // __x86_64__

// ---- the streaming vec_dot: 1..40 terms, sizes around its blocks ------------------------------------------------------

TEST(VecSimd, DotStreamingMatchesInt128) {
    // each path (scalar, the public dispatcher, AVX2 where on) against the __int128 sum of 1..40 terms, out of place and
    // in place (out aliasing the first left operand), for sizes with tails and around the 512-coefficient blocks
    std::vector<std::pair<std::string, decltype(&vec_dot)>> paths = {{"scalar", detail::vec_dot_scalar}, {"public", vec_dot}};
#if defined(__x86_64__)
    if (cpu_features().use_avx2()) paths.emplace_back("avx2", detail::vec_dot_avx2);
#endif
    std::mt19937_64 rng(113);
    std::vector<u64> qs = simd_moduli();
    for (u64 q : {u64(3), u64(5), u64(1) << 40, ntt_primes_near(60, 1, 1 << 17).at(0)}) qs.push_back(q);
    const std::size_t max_terms = 40;
    for (u64 q : qs) {
        const Modulus m(q);
        for (std::size_t n : {1, 3, 5, 7, 511, 512, 513, 1029}) {
            std::vector<Vec> A, B;
            for (std::size_t t = 0; t < max_terms; ++t) { A.push_back(rand_vec(n, q, rng)); B.push_back(rand_vec(n, q, rng)); }
            for (std::size_t t = 0; t < max_terms; ++t) {  // the largest sums: every operand q - 1, first and last coefficients
                A[t][0] = B[t][0] = A[t][n - 1] = B[t][n - 1] = q - 1;
                if (n > 600) A[t][512] = B[t][512] = q - 1;
            }
            std::vector<const u64*> pa, pb;
            for (std::size_t t = 0; t < max_terms; ++t) { pa.push_back(A[t].data()); pb.push_back(B[t].data()); }
            Vec want(n, 0);
            for (std::size_t terms = 1; terms <= max_terms; ++terms) {
                for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<u64>((u128(want[i]) + u128(A[terms - 1][i]) * B[terms - 1][i]) % q);
                for (const auto& [name, dot] : paths) {
                    SCOPED_TRACE(name + " q=" + std::to_string(q) + " n=" + std::to_string(n) + " terms=" + std::to_string(terms));
                    Vec out(n, 777);
                    dot(out.data(), pa.data(), pb.data(), terms, n, m);
                    ASSERT_EQ(out, want);
                    Vec inplace = A[0];
                    std::vector<const u64*> pa2 = pa;
                    pa2[0] = inplace.data();
                    dot(inplace.data(), pa2.data(), pb.data(), terms, n, m);
                    ASSERT_EQ(inplace, want) << "in place";
                }
            }
        }
    }
}

// ---- BaseConverter ---------------------------------------------------------------------------------------------------

struct ConvCase {
    std::vector<u64> from, to;
};

// Distinct NTT primes of the given sizes (bits 52 gives primes just below 2^52, 61 just below 2^61).
std::vector<u64> take_primes(const std::vector<int>& bits, std::vector<u64>& used) {
    std::vector<u64> out;
    for (int b : bits) {
        const u64 q = ntt_primes_near(b, 1, 1 << 17, used, b != 50 && b != 52 && b != 61).at(0);
        used.push_back(q);
        out.push_back(q);
    }
    return out;
}

void check_convert(const BaseConverter& conv, std::mt19937_64& rng, std::size_t n, bool scalar_too) {
    const std::size_t k = conv.from().size(), m = conv.to().size();
    std::vector<Vec> in(k);
    for (std::size_t i = 0; i < k; ++i) in[i] = rand_vec(n, conv.from()[i].q, rng);
    // coefficient-wide special values: 0, Q - 1, (Q -+ 1) / 2 (the rounding boundary of the centered mode), 1
    for (std::size_t i = 0; i < k && n >= 8; ++i) {
        const u64 q = conv.from()[i].q;
        in[i][0] = 0;
        in[i][1] = q - 1;
        in[i][2] = (q - 1) / 2;
        in[i][3] = (q + 1) / 2;
        in[i][4] = 1;
    }
    std::vector<const u64*> ip;
    for (auto& v : in) ip.push_back(v.data());
    const std::size_t b = n > 10 ? rng() % 9 : 0, e = n > 10 ? n - rng() % 9 : n;
    for (bool centered : {false, true}) {
        SCOPED_TRACE(std::string(centered ? "centered" : "plain") + " k=" + std::to_string(k) + " m=" + std::to_string(m) +
                     " n=" + std::to_string(n));
        // m output limbs prefilled with 7 (so that writes outside [b, e) show), filled by one conversion path
        auto run = [&](const auto& path) {
            std::vector<Vec> o(m, Vec(n, 7));
            std::vector<u64*> op;
            for (auto& v : o) op.push_back(v.data());
            path(op.data());
            return o;
        };
        const std::vector<Vec> ref = run([&](u64* const* o) { conv.convert_reference(ip.data(), o, b, e, centered); });
        ASSERT_EQ(run([&](u64* const* o) { conv.convert(ip.data(), o, b, e, centered); }), ref) << "convert";
        if (scalar_too) {
            ASSERT_EQ(run([&](u64* const* o) { detail::base_convert_scalar(conv, ip.data(), o, b, e, centered); }), ref)
                << "base_convert_scalar";
        }
#if defined(__x86_64__)
        if (detail::base_convert_ifma_supported(conv)) {
            ASSERT_EQ(run([&](u64* const* o) { detail::base_convert_ifma(conv, ip.data(), o, b, e, centered); }), ref)
                << "base_convert_ifma";
        }
        if (detail::base_convert_avx2_supported(conv)) {
            ASSERT_EQ(run([&](u64* const* o) { detail::base_convert_avx2(conv, ip.data(), o, b, e, centered); }), ref)
                << "base_convert_avx2";
        }
#endif
    }
}

TEST(BaseConvSimd, RandomShapesMatchReference) {
    std::mt19937_64 rng(201);
    const std::vector<int> sizes = {50, 50, 50, 60, 60, 45, 30, 52, 61, 55};
    for (int it = 0; it < 60; ++it) {
        const std::size_t k = 1 + rng() % 12, m = 1 + rng() % 30;
        std::vector<int> fb, tb;
        for (std::size_t i = 0; i < k; ++i) fb.push_back(sizes[rng() % (it < 20 ? 5 : sizes.size())]);
        for (std::size_t j = 0; j < m; ++j) tb.push_back(sizes[rng() % (it < 20 ? 5 : sizes.size())]);
        std::vector<u64> used;
        const auto from = take_primes(fb, used), to = take_primes(tb, used);
        const BaseConverter conv(moduli_of(from), moduli_of(to));
        const std::size_t n = std::vector<std::size_t>{8, 64, 203, 1000}[rng() % 4];
        check_convert(conv, rng, n, true);
    }
}

TEST(BaseConvSimd, WideAccumulatorsMatchReference) {
    // 12 sources of 61 bits: the 128-bit sums exceed what the two-multiplication Barrett estimate covers for
    // 61-bit targets (generic reduction in the scalar kernel); the IFMA kernel has 24 rows of digits.
    std::mt19937_64 rng(203);
    std::vector<u64> used;
    const auto from = take_primes(std::vector<int>(12, 61), used);
    const auto to = take_primes({61, 61, 50, 30, 60}, used);
    const BaseConverter conv(moduli_of(from), moduli_of(to));
    for (std::size_t n : {std::size_t(1), std::size_t(9), std::size_t(333)}) check_convert(conv, rng, n, true);
}

TEST(BaseConvSimd, KeySwitchShapesMatchReference) {
    // ModUp: 9 Q primes (q_0 of 60 bits among them) -> 16 Q primes + 8 special primes of 60 bits;
    // ModDown: 8 special + 1 Q prime -> 24 Q primes (centered). Also the all-50-bit case.
    std::mt19937_64 rng(202);
    std::vector<u64> used;
    const auto q0 = take_primes({60}, used);
    const auto qs = take_primes(std::vector<int>(24, 50), used);
    const auto ps = take_primes(std::vector<int>(8, 60), used);
    auto mods = [](std::initializer_list<std::vector<u64>> parts) {
        std::vector<Modulus> r;
        for (const auto& p : parts) for (u64 q : p) r.emplace_back(q);
        return r;
    };
    const std::vector<u64> d0(qs.begin(), qs.begin() + 8), rest(qs.begin() + 8, qs.end());
    const std::vector<u64> d1(qs.begin() + 8, qs.begin() + 17), others(qs.begin(), qs.begin() + 8);
    const std::vector<u64> others2(qs.begin() + 17, qs.end());
    const BaseConverter up0(mods({q0, d0}), mods({rest, ps}));
    const BaseConverter up1(mods({d1}), mods({q0, others, others2, ps}));
    const BaseConverter down(mods({ps, {qs[0]}}), mods({q0, std::vector<u64>(qs.begin() + 1, qs.end())}));
    const BaseConverter small(mods({d1}), mods({others, others2}));
    for (const BaseConverter* c : {&up0, &up1, &down, &small}) {
        ASSERT_EQ(c->from().size(), 9u);
        check_convert(*c, rng, 4096 + 5, true);
    }
    check_convert(down, rng, 65536, false);
}

TEST(BaseConvSimd, IfmaPathIsTakenOnIfmaCpus) {
    if (!cpu_features().avx512ifma) GTEST_SKIP() << "CPU lacks AVX-512 IFMA";
    std::vector<u64> used;
    const auto f = take_primes({60, 50, 50}, used), t = take_primes({50, 60, 61, 52}, used);
    const std::vector<Modulus> fm = moduli_of(f);
    std::vector<Modulus> tm = moduli_of(t);
    EXPECT_TRUE(detail::base_convert_ifma_supported(BaseConverter(fm, tm)));
    tm.emplace_back(1000003);  // below 2^20: not for the Montgomery kernel
    EXPECT_FALSE(detail::base_convert_ifma_supported(BaseConverter(fm, tm)));
}

// ---- AVX2 base conversion against the scalar kernel and the reference --------------------------------------------------

#if defined(__x86_64__)
// Residues of n coefficients: uniform, with 0, 1, q - 1 and q - 2 sprinkled per residue, and whole coefficients of one
// edge value in every limb (0, 1, q - 1: x = Q - 1, the largest sums; (q -+ 1) / 2: x = (Q -+ 1) / 2, the rounding
// boundary of the centered mode).
std::vector<Vec> avx2_conv_inputs(const BaseConverter& conv, std::size_t n, std::mt19937_64& rng) {
    const std::size_t k = conv.from().size();
    std::vector<Vec> in(k, Vec(n));
    for (std::size_t c = 0; c < n; ++c) {
        const unsigned whole = static_cast<unsigned>(rng() % 12);  // 0..5: every limb the same edge value
        for (std::size_t i = 0; i < k; ++i) {
            const u64 q = conv.from()[i].q;
            const u64 edges[6] = {0, 1, q - 1, q - 2, (q - 1) / 2, (q + 1) / 2};
            if (whole < 6) in[i][c] = edges[whole] % q;
            else in[i][c] = rng() % 3 == 0 ? edges[rng() % 4] % q : rng() % q;
        }
    }
    return in;
}

// base_convert_avx2 == base_convert_scalar == convert_reference on [b, e) of n coefficients, both modes; the words
// outside [b, e) stay untouched.
void check_avx2_convert(const BaseConverter& conv, std::mt19937_64& rng, std::size_t n, std::size_t b, std::size_t e) {
    ASSERT_TRUE(detail::base_convert_avx2_supported(conv));
    const std::size_t k = conv.from().size(), m = conv.to().size();
    const std::vector<Vec> in = avx2_conv_inputs(conv, n, rng);
    std::vector<const u64*> ip;
    for (const auto& v : in) ip.push_back(v.data());
    for (bool centered : {false, true}) {
        SCOPED_TRACE(std::string(centered ? "centered" : "plain") + " k=" + std::to_string(k) + " m=" + std::to_string(m) +
                     " n=" + std::to_string(n) + " [" + std::to_string(b) + ", " + std::to_string(e) + ")");
        auto run = [&](const auto& path) {
            std::vector<Vec> o(m, Vec(n, 7));
            std::vector<u64*> op;
            for (auto& v : o) op.push_back(v.data());
            path(op.data());
            return o;
        };
        const std::vector<Vec> ref = run([&](u64* const* o) { conv.convert_reference(ip.data(), o, b, e, centered); });
        ASSERT_EQ(run([&](u64* const* o) { detail::base_convert_scalar(conv, ip.data(), o, b, e, centered); }), ref)
            << "base_convert_scalar";
        ASSERT_EQ(run([&](u64* const* o) { detail::base_convert_avx2(conv, ip.data(), o, b, e, centered); }), ref)
            << "base_convert_avx2";
        ASSERT_EQ(run([&](u64* const* o) { conv.convert(ip.data(), o, b, e, centered); }), ref) << "convert";
    }
}

TEST(BaseConvSimd, Avx2MatchesScalarAndReference) {
    if (!cpu_features().use_avx2()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    // 1..20 sources, 1..12 targets, primes of 30 to 61 bits mixed; ranges with tails (not multiples of 4 or of the
    // 64-coefficient block), starting anywhere
    std::mt19937_64 rng(301);
    const std::vector<int> sizes = {30, 31, 33, 36, 40, 45, 49, 50, 52, 55, 58, 59, 60, 61};
    const std::vector<std::size_t> ns = {1, 2, 3, 4, 5, 7, 63, 64, 65, 67, 130, 257, 1001};
    for (int it = 0; it < 80; ++it) {
        const std::size_t k = 1 + it % 20, m = 1 + (it * 7) % 12;
        std::vector<int> fb, tb;
        const int span = it % 4 == 0 ? 1 : 0;  // every fourth base: one size for all (all 30-bit, all 61-bit, ...)
        const int fixed = sizes[rng() % sizes.size()];
        for (std::size_t i = 0; i < k; ++i) fb.push_back(span ? fixed : sizes[rng() % sizes.size()]);
        for (std::size_t j = 0; j < m; ++j) tb.push_back(span ? fixed : sizes[rng() % sizes.size()]);
        std::vector<u64> used;
        const auto from = take_primes(fb, used), to = take_primes(tb, used);
        const BaseConverter conv(moduli_of(from), moduli_of(to));
        const std::size_t n = ns[rng() % ns.size()];
        const std::size_t b = n > 8 ? rng() % 9 : rng() % n, e = n > 8 ? n - rng() % 9 : b + 1 + rng() % (n - b);
        check_avx2_convert(conv, rng, n, b, e);
        if (HasFatalFailure()) return;
    }
}

TEST(BaseConvSimd, Avx2WideSumsMatchReference) {
    if (!cpu_features().use_avx2()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    // 61-bit sources: 20 of them (sums beyond the Barrett estimate for 61-bit targets, and the middle partial
    // products normalized on the way), and 63 (the most the kernel takes: sums up to 2^128, v up to 63)
    std::mt19937_64 rng(303);
    for (std::size_t k : {std::size_t(12), std::size_t(20), std::size_t(63)}) {
        std::vector<u64> used;
        const auto from = take_primes(std::vector<int>(k, 61), used);
        const auto to = take_primes({61, 30, 60, 61, 45}, used);
        const BaseConverter conv(moduli_of(from), moduli_of(to));
        for (std::size_t n : {std::size_t(5), std::size_t(200)}) check_avx2_convert(conv, rng, n, n == 5 ? 1 : 3, n);
    }
}

TEST(BaseConvSimd, Avx2KeySwitchShapesMatchScalar) {
    if (!cpu_features().use_avx2()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    // ModUp 8 + 1 -> 24 + 8 and ModDown 8 (+ 1) -> 24 at N = 2^16 (a range with tails at both ends)
    std::mt19937_64 rng(304);
    std::vector<u64> used;
    const auto q0 = take_primes({60}, used);
    const auto qs = take_primes(std::vector<int>(32, 50), used);
    const auto ps = take_primes(std::vector<int>(8, 60), used);
    std::vector<u64> up_from = q0, up_to(qs.begin() + 8, qs.end()), down_from = ps, down_to = q0;
    up_from.insert(up_from.end(), qs.begin(), qs.begin() + 8);
    up_to.insert(up_to.end(), ps.begin(), ps.end());
    down_to.insert(down_to.end(), qs.begin(), qs.begin() + 23);
    for (const BaseConverter& conv : {BaseConverter(moduli_of(up_from), moduli_of(up_to)),
                                      BaseConverter(moduli_of(down_from), moduli_of(down_to))}) {
        check_avx2_convert(conv, rng, 65536, 3, 65536 - 1);
        if (HasFatalFailure()) return;
    }
}

TEST(BaseConvSimd, Avx2SupportedShapes) {
    if (!cpu_features().use_avx2()) GTEST_SKIP() << "AVX2 path off (CPU lacks AVX2/BMI2/FMA, or EMBER_SIMD caps it)";
    std::vector<u64> used;
    const auto f = take_primes(std::vector<int>(63, 30), used), t = take_primes({61, 30}, used);
    EXPECT_TRUE(detail::base_convert_avx2_supported(BaseConverter(moduli_of(f), moduli_of(t))));
    std::vector<u64> f64 = f;
    f64.push_back(take_primes({31}, used).at(0));  // 64 sources: the scalar kernel's fallback
    EXPECT_FALSE(detail::base_convert_avx2_supported(BaseConverter(moduli_of(f64), moduli_of(t))));
}
#endif  // __x86_64__

}  // namespace
}  // namespace ember
