// Host tests of the CUDA backend's arithmetic (backend/cuda/arith.hpp, ntt_rounds.hpp, base_convert_phases.hpp):
// the EMBER_HD functions the kernels run, compiled here by the ordinary C++ compiler, against the CPU backend bit for
// bit. The NTT and the base conversion are run through the host emulations of their kernels (the same phase functions
// with the same thread indexing, the threads of a phase one after the other), so that the kernels' index arithmetic
// is checked too; what remains for a GPU (tests/cuda) is the memory spaces, the barriers and the launches.
// Needs no CUDA toolkit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/arith.hpp"
#include "backend/cuda/base_convert_phases.hpp"
#include "backend/cuda/ntt_rounds.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "ring/ring_context.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using u128 = unsigned __int128;

struct PrimeSpec {
    int bits;
    bool below_only;
};
// 30 bits, just below 2^50 (the CPU's IFMA bound), 55, 60 and just below 2^61 (Ember's bound; q >= 2^60 is the
// scalar NTT's "big" case).
const PrimeSpec kPrimes[] = {{30, false}, {50, true}, {55, false}, {60, false}, {61, true}};

/// `count` primes = 1 mod 2n of the given size.
std::vector<u64> primes_of(const PrimeSpec& s, std::size_t n, std::size_t count = 1) {
    return ntt_primes_near(s.bits, count, 2 * n, {}, /*both_sides=*/!s.below_only);
}

/// n residues mod q: uniform, with runs of the extreme values 0, 1, q - 1, q - 2 mixed in (kind 1), or all q - 1
/// (kind 2: the largest sums and products).
std::vector<u64> sample(std::size_t n, u64 q, std::mt19937_64& rng, int kind = 0) {
    std::vector<u64> v = test::uniform_vec(n, q, rng);
    if (kind == 2) return std::vector<u64>(n, q - 1);
    if (kind == 1) {
        const u64 e[4] = {0, 1, q - 1, q - 2};
        for (std::size_t i = 0; i < n; ++i)
            if ((i * 7 + i / 5) % 3 != 0) v[i] = e[(i * i + i / 3) % 4];
    }
    return v;
}

// ---- scalar arithmetic ---------------------------------------------------------------------------------------------

TEST(CudaArith, WideProductsMatchInt128) {
    std::mt19937_64 rng(1);
    for (int r = 0; r < 20000; ++r) {
        const u64 a = rng(), b = r % 7 == 0 ? ~u64(0) : rng();
        const u128 p = static_cast<u128>(a) * b;
        ASSERT_EQ(cuda::mulhi(a, b), static_cast<u64>(p >> 64));
        const cuda::U128 w = cuda::mul_wide(a, b);
        ASSERT_EQ(w.lo, static_cast<u64>(p));
        ASSERT_EQ(w.hi, static_cast<u64>(p >> 64));
    }
    // 63 products of maximal 61-bit words plus a word: the sums the inner product and base conversion form
    const u64 m = (u64(1) << 61) - 1;
    cuda::U128 acc{m, 0};
    u128 ref = m;
    for (int t = 0; t < 63; ++t) {
        cuda::mac(acc, m, m);
        ref += static_cast<u128>(m) * m;
        ASSERT_EQ(acc.lo, static_cast<u64>(ref));
        ASSERT_EQ(acc.hi, static_cast<u64>(ref >> 64));
    }
    cuda::add_word(acc, ~u64(0));
    ref += ~u64(0);
    EXPECT_EQ(acc.lo, static_cast<u64>(ref));
    EXPECT_EQ(acc.hi, static_cast<u64>(ref >> 64));
}

// Balanced digits: the kernels' step (arith.hpp) against the backends' reference (signed_digits_host), and both
// against the definition (the digits rebuild the centered value, each in [-B/2, B/2)).
TEST(CudaArith, SignedDigitsMatchTheReferenceAndRebuildTheValue) {
    std::mt19937_64 rng(12);
    for (int bits : {30, 50, 60, 61}) {
        const u64 q = ntt_primes_near(bits, 1, 2 * 64).at(0);
        const Modulus mod(q);
        std::vector<u64> v = {0, 1, 2, q - 1, q - 2, q / 2, q / 2 + 1, q / 2 - 1};
        std::uniform_int_distribution<u64> d(0, q - 1);
        while (v.size() < 200) v.push_back(d(rng));
        for (int w = 2; w <= 30; ++w) {
            const std::size_t D = (static_cast<std::size_t>(std::bit_width(q)) - 1 + w - 1) / w + 1;  // the evaluator's bound
            std::vector<std::vector<u64>> ref(D, std::vector<u64>(v.size()));
            std::vector<u64*> ptr;
            for (auto& r : ref) ptr.push_back(r.data());
            signed_digits_host(ptr, v.data(), mod, 0, v.size(), w);
            for (std::size_t i = 0; i < v.size(); ++i) {
                long long rest = cuda::centered_of(v[i], q);
                const __int128 value = rest;
                __int128 rebuilt = 0, pw = 1;
                for (std::size_t k = 0; k < D; ++k) {
                    const u64 digit = cuda::signed_digit_step(rest, w, q);
                    ASSERT_EQ(digit, ref[k][i]) << "q " << bits << " bits, w " << w << ", value " << v[i] << ", digit " << k;
                    const long long r = digit > q / 2 ? static_cast<long long>(digit) - static_cast<long long>(q) : static_cast<long long>(digit);
                    ASSERT_TRUE(r >= -(1LL << (w - 1)) && r < (1LL << (w - 1))) << r;
                    rebuilt += static_cast<__int128>(r) * pw;
                    pw <<= w;
                }
                ASSERT_EQ(rest, 0) << "q " << bits << " bits, w " << w << ", value " << v[i] << ": digits left over";
                ASSERT_TRUE(rebuilt == value) << "q " << bits << " bits, w " << w << ", value " << v[i];
            }
        }
    }
}

TEST(CudaArith, ReductionsMatchInt128) {
    std::mt19937_64 rng(2);
    for (const PrimeSpec& s : kPrimes) {
        for (u64 q : primes_of(s, 1 << 12, 3)) {
            const Modulus mod(q);
            const cuda::Barrett br = cuda::make_barrett(mod);
            const cuda::WideBarrett wb = cuda::make_wide_barrett(mod);
            std::vector<u64> a = sample(4096, q, rng, 1), b = sample(4096, q, rng, 0), c = sample(4096, q, rng, 1);
            a.push_back(q - 1), b.push_back(q - 1), c.push_back(q - 1);
            for (std::size_t i = 0; i < a.size(); ++i) {
                const u128 p = static_cast<u128>(a[i]) * b[i];
                ASSERT_EQ(cuda::mul_mod(a[i], b[i], br), static_cast<u64>(p % q)) << q;
                ASSERT_EQ(cuda::mul_add_mod(c[i], a[i], b[i], br), static_cast<u64>((p + c[i]) % q)) << q;
                const MulConst w(b[i], mod);
                ASSERT_EQ(cuda::mul_shoup(a[i], w.w, w.wp, q), static_cast<u64>(p % q)) << q;
                ASSERT_LT(cuda::mul_shoup_lazy(~u64(0) - a[i], w.w, w.wp, q), 2 * q);
            }
            // any 128-bit value
            std::vector<u128> xs = {0, 1, q, static_cast<u128>(q) * q, static_cast<u128>(q) * q - 1, ~u128(0),
                                    ~u128(0) - q, (~u128(0) / q) * q, (~u128(0) / q) * q - 1,
                                    static_cast<u128>(63) * (q - 1) * (q - 1) + (q - 1)};
            for (int r = 0; r < 20000; ++r) xs.push_back((static_cast<u128>(rng()) << 64) | rng());
            for (u128 x : xs)
                ASSERT_EQ(cuda::wide_reduce(cuda::U128{static_cast<u64>(x), static_cast<u64>(x >> 64)}, wb),
                          static_cast<u64>(x % q))
                    << q;
        }
    }
}

// ---- element-wise kernels against the CPU backend ------------------------------------------------------------------

class CudaArithBackend : public ::testing::Test {
protected:
    std::shared_ptr<Backend> cpu = make_cpu_backend(1);
};

TEST_F(CudaArithBackend, ElementwiseOpsMatchCpu) {
    constexpr std::size_t n = 1 << 12;
    std::mt19937_64 rng(3);
    std::vector<std::unique_ptr<NttTables>> tables;
    for (const PrimeSpec& s : kPrimes)
        for (u64 q : primes_of(s, n, 2)) tables.push_back(std::make_unique<NttTables>(n, Modulus(q)));
    for (int kind = 0; kind < 3; ++kind) {
        const std::size_t limbs = tables.size();
        std::vector<std::vector<u64>> a(limbs), b(limbs), acc(limbs), out(limbs);
        std::vector<MulConst> cst;
        std::vector<u64> addc;
        for (std::size_t l = 0; l < limbs; ++l) {
            const u64 q = tables[l]->mod.q;
            a[l] = sample(n, q, rng, kind);
            b[l] = sample(n, q, rng, kind == 2 ? 2 : 1);
            acc[l] = sample(n, q, rng, kind);
            out[l].assign(n, 0);
            cst.emplace_back(kind == 2 ? q - 1 : rng() % q, tables[l]->mod);
            addc.push_back(kind == 2 ? q - 1 : rng() % q);
        }
        std::vector<LimbRef> refs;
        std::vector<const u64*> pa, pb;
        for (std::size_t l = 0; l < limbs; ++l) {
            refs.push_back(LimbRef{out[l].data(), tables[l].get()});
            pa.push_back(a[l].data());
            pb.push_back(b[l].data());
        }
        // each operation: the CPU backend's call, then the CUDA kernels' per-word function (ew_apply) on every word
        auto check = [&](const char* name, auto op_tag, auto&& cpu_op, bool with_const) {
            constexpr cuda::EwOp kOp = decltype(op_tag)::value;
            for (std::size_t l = 0; l < limbs; ++l) out[l] = acc[l];  // mul_add / mul_const_add read out
            cpu_op();
            for (std::size_t l = 0; l < limbs; ++l) {
                const Modulus& m = tables[l]->mod;
                cuda::EwConsts c{cuda::make_barrett(m), 0, 0};
                if (with_const) c.w = cst[l].w, c.wp = cst[l].wp;
                if (kOp == cuda::EwOp::kAddConst) c.w = addc[l];
                for (std::size_t i = 0; i < n; ++i)
                    ASSERT_EQ(out[l][i], cuda::ew_apply<kOp>(a[l][i], b[l][i], acc[l][i], c))
                        << name << " q=" << m.q << " i=" << i << " kind=" << kind;
            }
        };
        using E = cuda::EwOp;
        check("add", std::integral_constant<E, E::kAdd>{}, [&] { cpu->add(refs, pa, pb); }, false);
        check("sub", std::integral_constant<E, E::kSub>{}, [&] { cpu->sub(refs, pa, pb); }, false);
        check("neg", std::integral_constant<E, E::kNeg>{}, [&] { cpu->neg(refs, pa); }, false);
        check("mul", std::integral_constant<E, E::kMul>{}, [&] { cpu->mul(refs, pa, pb); }, false);
        check("mul_add", std::integral_constant<E, E::kMulAdd>{}, [&] { cpu->mul_add(refs, pa, pb); }, false);
        check("mul_const", std::integral_constant<E, E::kMulConst>{}, [&] { cpu->mul_const(refs, pa, cst, false); }, true);
        check("mul_const_add", std::integral_constant<E, E::kMulConstAdd>{}, [&] { cpu->mul_const(refs, pa, cst, true); },
              true);
        check("add_const", std::integral_constant<E, E::kAddConst>{}, [&] { cpu->add_const(refs, pa, addc); }, false);
        check("sub_mul_const", std::integral_constant<E, E::kSubMulConst>{}, [&] { cpu->sub_mul_const(refs, pa, pb, cst); },
              true);
    }
}

TEST_F(CudaArithBackend, DotMatchesCpu) {
    constexpr std::size_t n = 1 << 10;
    std::mt19937_64 rng(4);
    std::vector<std::unique_ptr<NttTables>> tables;
    for (const PrimeSpec& s : kPrimes) tables.push_back(std::make_unique<NttTables>(n, Modulus(primes_of(s, n).at(0))));
    const std::size_t limbs = tables.size();
    // 1..4 terms (the CPU's fixed-size kernels), a digit count past its chunk of terms, and past kWideTerms = 63
    for (std::size_t terms : {1, 2, 3, 4, 5, 9, 17, 33, 63, 64, 70, 130}) {
        for (int kind = 0; kind < 3; ++kind) {
            std::vector<std::vector<std::vector<u64>>> a(terms), b(terms);  // [t][l]
            std::vector<std::vector<const u64*>> pa(terms), pb(terms);
            for (std::size_t t = 0; t < terms; ++t) {
                for (std::size_t l = 0; l < limbs; ++l) {
                    a[t].push_back(sample(n, tables[l]->mod.q, rng, kind));
                    b[t].push_back(sample(n, tables[l]->mod.q, rng, kind == 0 ? 0 : 2));
                }
                for (std::size_t l = 0; l < limbs; ++l) {
                    pa[t].push_back(a[t][l].data());
                    pb[t].push_back(b[t][l].data());
                }
            }
            std::vector<std::vector<u64>> out(limbs, std::vector<u64>(n));
            std::vector<LimbRef> refs;
            for (std::size_t l = 0; l < limbs; ++l) refs.push_back(LimbRef{out[l].data(), tables[l].get()});
            cpu->dot(refs, pa, pb);
            for (std::size_t l = 0; l < limbs; ++l) {
                std::vector<const u64*> al(terms), bl(terms);  // the kernel's pointer tables of limb l
                for (std::size_t t = 0; t < terms; ++t) al[t] = pa[t][l], bl[t] = pb[t][l];
                const cuda::WideBarrett wb = cuda::make_wide_barrett(tables[l]->mod);
                for (std::size_t i = 0; i < n; ++i)
                    ASSERT_EQ(cuda::dot_coeff(al.data(), bl.data(), terms, i, wb), out[l][i])
                        << "terms=" << terms << " q=" << tables[l]->mod.q << " i=" << i << " kind=" << kind;
            }
        }
    }
}

/// dot2_coeff (the CUDA dot2's arithmetic: each shared word read once, two 128-bit sums) against the CPU backend's
/// dot2 (coefficient blocks, two vec_dots) at N = 2^12 (several blocks once the terms pass 16), term counts around the
/// CPU's fixed kernels and kWideTerms, and the chunked launches of cuda::dot2 (past DotLaunch<2>::kPtrs / 3 = 112 terms).
TEST_F(CudaArithBackend, Dot2MatchesCpu) {
    constexpr std::size_t n = 1 << 12;
    std::mt19937_64 rng(24);
    std::vector<std::unique_ptr<NttTables>> tables;
    for (const PrimeSpec& s : kPrimes) tables.push_back(std::make_unique<NttTables>(n, Modulus(primes_of(s, n).at(0))));
    const std::size_t limbs = tables.size();
    for (std::size_t terms : {1, 3, 4, 17, 64, 130}) {
        const int kind = static_cast<int>(terms % 3);
        std::vector<std::vector<std::vector<u64>>> a(terms), b0(terms), b1(terms);  // [t][l]
        std::vector<std::vector<const u64*>> pa(terms), pb0(terms), pb1(terms);
        for (std::size_t t = 0; t < terms; ++t)
            for (std::size_t l = 0; l < limbs; ++l) {
                const u64 q = tables[l]->mod.q;
                a[t].push_back(sample(n, q, rng, kind));
                b0[t].push_back(sample(n, q, rng, kind == 0 ? 0 : 2));
                b1[t].push_back(sample(n, q, rng, kind));
            }
        for (std::size_t t = 0; t < terms; ++t)
            for (std::size_t l = 0; l < limbs; ++l) {
                pa[t].push_back(a[t][l].data());
                pb0[t].push_back(b0[t][l].data());
                pb1[t].push_back(b1[t][l].data());
            }
        std::vector<std::vector<u64>> o0(limbs, std::vector<u64>(n)), o1(limbs, std::vector<u64>(n));
        std::vector<LimbRef> r0, r1;
        for (std::size_t l = 0; l < limbs; ++l) {
            r0.push_back(LimbRef{o0[l].data(), tables[l].get()});
            r1.push_back(LimbRef{o1[l].data(), tables[l].get()});
        }
        cpu->dot2(r0, r1, pa, pb0, pb1);
        for (std::size_t l = 0; l < limbs; ++l) {
            const u64 q = tables[l]->mod.q;
            std::vector<const u64*> al(terms), bl0(terms), bl1(terms);
            for (std::size_t t = 0; t < terms; ++t) al[t] = pa[t][l], bl0[t] = pb0[t][l], bl1[t] = pb1[t][l];
            const cuda::WideBarrett wb = cuda::make_wide_barrett(tables[l]->mod);
            for (std::size_t i = 0; i < n; ++i) {
                u64 x0 = 0, x1 = 0;
                for (std::size_t t0 = 0; t0 < terms; t0 += 112) {  // cuda::dot2's launches of at most 112 terms
                    const std::size_t tc = std::min<std::size_t>(112, terms - t0);
                    u64 p0, p1;
                    cuda::dot2_coeff(al.data() + t0, bl0.data() + t0, bl1.data() + t0, tc, i, wb, p0, p1);
                    x0 = t0 == 0 ? p0 : cuda::add_mod(x0, p0, q);
                    x1 = t0 == 0 ? p1 : cuda::add_mod(x1, p1, q);
                }
                ASSERT_EQ(x0, o0[l][i]) << "terms=" << terms << " q=" << q << " i=" << i;
                ASSERT_EQ(x1, o1[l][i]) << "terms=" << terms << " q=" << q << " i=" << i;
            }
        }
    }
}

/// The CUDA dot in chunks of terms (past DotLaunch<1>::kPtrs / 2 = 176 terms a launch takes one chunk, and the next launch
/// adds its dot_coeff to the output mod q): the same bits as the CPU's one reduction.
TEST_F(CudaArithBackend, DotInTermChunksMatchesCpu) {
    constexpr std::size_t n = 64, terms = 400;
    std::mt19937_64 rng(10);
    for (const PrimeSpec& s : kPrimes) {
        const NttTables table(n, Modulus(primes_of(s, n).at(0)));
        const u64 q = table.mod.q;
        for (int kind = 0; kind < 3; ++kind) {
            std::vector<std::vector<u64>> a(terms), b(terms);
            std::vector<std::vector<const u64*>> pa(terms), pb(terms);
            for (std::size_t t = 0; t < terms; ++t) {
                a[t] = sample(n, q, rng, kind);
                b[t] = sample(n, q, rng, kind == 0 ? 0 : 2);
                pa[t] = {a[t].data()};
                pb[t] = {b[t].data()};
            }
            std::vector<u64> out(n);
            const LimbRef ref{out.data(), &table};
            cpu->dot(std::span<const LimbRef>(&ref, 1), pa, pb);
            std::vector<const u64*> al(terms), bl(terms);
            for (std::size_t t = 0; t < terms; ++t) al[t] = a[t].data(), bl[t] = b[t].data();
            const cuda::WideBarrett wb = cuda::make_wide_barrett(table.mod);
            for (std::size_t chunk : {std::size_t(1), std::size_t(63), std::size_t(176), std::size_t(399)})
                for (std::size_t i = 0; i < n; ++i) {
                    u64 r = 0;
                    for (std::size_t t0 = 0; t0 < terms; t0 += chunk) {
                        const std::size_t tc = std::min(chunk, terms - t0);
                        const u64 part = cuda::dot_coeff(al.data() + t0, bl.data() + t0, tc, i, wb);
                        r = t0 == 0 ? part : cuda::add_mod(r, part, q);
                    }
                    ASSERT_EQ(r, out[i]) << "q=" << q << " chunk=" << chunk << " i=" << i << " kind=" << kind;
                }
        }
    }
}

// ---- NTT -----------------------------------------------------------------------------------------------------------

TEST(CudaNtt, ShapesFitTheKernels) {
    for (cuda::u32 log_n = 1; log_n <= 17; ++log_n) {
        const cuda::NttShape sh = cuda::ntt_shape(log_n);
        EXPECT_EQ(sh.s1 + sh.s2, log_n);
        EXPECT_EQ(sh.n1 * sh.n2, cuda::u32(1) << log_n);
        EXPECT_LE(cuda::ntt_block_threads<false>(sh), 256u) << log_n;
        EXPECT_LE(cuda::ntt_block_threads<true>(sh), 256u) << log_n;
        EXPECT_LE(cuda::ntt_tile_words<false>(sh), cuda::kNttTileWords);
        EXPECT_LE(cuda::ntt_tile_words<true>(sh), cuda::kNttTileWords);
        // the blocks cover the limb exactly
        EXPECT_EQ(cuda::ntt_blocks<false>(sh) * cuda::ntt_tile_words<false>(sh), sh.n1 * sh.n2);
        EXPECT_EQ(cuda::ntt_blocks<true>(sh) * cuda::ntt_tile_words<true>(sh), sh.n1 * sh.n2);
        if (log_n >= 12) {  // the sizes CKKS uses: full 256-thread blocks, radix-8 rounds
            EXPECT_EQ(cuda::ntt_block_threads<false>(sh), 256u);
            EXPECT_EQ(cuda::ntt_block_threads<true>(sh), 256u);
        }
    }
}

/// The emulated CUDA transform of `in` over `t`, forward or inverse, against the CPU backend's; out of place (the
/// limb's src set, as ntt_inverse_from launches it; the output starts as other words): the same words, `in` untouched.
void expect_ntt_matches(Backend& cpu, const NttTables& t, const std::vector<u64>& in, bool inverse, const std::string& what,
                        bool out_of_place = false) {
    std::vector<u64> ref = in, got = in;
    if (out_of_place) std::reverse(got.begin(), got.end());
    const LimbRef r{ref.data(), &t};
    if (inverse) cpu.ntt_inverse(std::span<const LimbRef>(&r, 1));
    else cpu.ntt_forward(std::span<const LimbRef>(&r, 1));
    cuda::NttLimb l = inverse ? cuda::make_ntt_limb(got.data(), t, t.ipsi_rev.data(), t.ipsi_rev_shoup.data())
                              : cuda::make_ntt_limb(got.data(), t, t.psi_rev.data(), t.psi_rev_shoup.data());
    const std::vector<u64> src = in;
    if (out_of_place) l.src = src.data();
    cuda::ntt_emulate(l, cuda::ntt_shape(static_cast<cuda::u32>(t.log_n)), inverse);
    for (std::size_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(got[i], ref[i]) << what << (inverse ? " inverse" : " forward") << (out_of_place ? " out of place" : "")
                                  << " N=" << t.n << " q=" << t.mod.q << " i=" << i;
    ASSERT_EQ(src, in) << what << ": the source was written";
}

TEST_F(CudaArithBackend, NttEmulationMatchesCpu) {
    std::mt19937_64 rng(5);
    for (int log_n = 1; log_n <= 17; ++log_n) {
        const std::size_t n = std::size_t(1) << log_n;
        // every prime size up to 2^16 (the CKKS sizes 2^12..2^16 with two primes each), one at 2^17
        for (const PrimeSpec& s : kPrimes) {
            if (log_n == 17 && s.bits != 61) continue;
            const std::size_t count = log_n >= 12 && log_n <= 16 ? 2 : 1;
            for (u64 q : primes_of(s, n, count)) {
                const NttTables t(n, Modulus(q));
                std::vector<std::vector<u64>> ins = {sample(n, q, rng, 0), sample(n, q, rng, 1), sample(n, q, rng, 2)};
                std::vector<u64> one(n, 0);
                one[0] = 1;
                ins.push_back(one);
                for (std::size_t k = 0; k < ins.size(); ++k) {
                    expect_ntt_matches(*cpu, t, ins[k], false, "input " + std::to_string(k));
                    expect_ntt_matches(*cpu, t, ins[k], true, "input " + std::to_string(k));
                    if (k == 0) {  // out of place (ntt_inverse_from's fused copy), both directions
                        expect_ntt_matches(*cpu, t, ins[k], true, "input 0", true);
                        expect_ntt_matches(*cpu, t, ins[k], false, "input 0", true);
                    }
                    if (HasFatalFailure()) return;
                }
            }
        }
    }
}

TEST(CudaNtt, EmulationRoundTrips) {
    std::mt19937_64 rng(6);
    for (int log_n : {12, 16}) {
        const std::size_t n = std::size_t(1) << log_n;
        const u64 q = primes_of(kPrimes[4], n).at(0);
        const NttTables t(n, Modulus(q));
        const std::vector<u64> x = sample(n, q, rng, 1);
        std::vector<u64> y = x;
        const cuda::NttShape sh = cuda::ntt_shape(static_cast<cuda::u32>(log_n));
        cuda::ntt_emulate(cuda::make_ntt_limb(y.data(), t, t.psi_rev.data(), t.psi_rev_shoup.data()), sh, false);
        cuda::ntt_emulate(cuda::make_ntt_limb(y.data(), t, t.ipsi_rev.data(), t.ipsi_rev_shoup.data()), sh, true);
        EXPECT_EQ(y, x) << log_n;
    }
}

// ---- base conversion -----------------------------------------------------------------------------------------------

/// The emulated kernel against the CPU backend's base_convert (plain and centered) for a conversion from `from` to
/// `to`.
/// `to`, with the kernels' pass sizes or smaller ones (chunk sources and out_batch outputs per pass).
void expect_base_convert_matches(Backend& cpu, const std::vector<u64>& from, const std::vector<u64>& to, std::size_t n,
                                 std::mt19937_64& rng, cuda::u32 chunk = cuda::kBcChunkSources,
                                 cuda::u32 out_batch = cuda::kBcOutBatch) {
    const BaseConverter conv(test::moduli_of(from), test::moduli_of(to));
    const cuda::BaseConvData data(conv);
    const cuda::BaseConvTable tab = data.host_table();
    for (int kind = 0; kind < 3; ++kind) {
        std::vector<std::vector<u64>> in(from.size());
        std::vector<const u64*> pin;
        for (std::size_t i = 0; i < from.size(); ++i) {
            in[i] = sample(n, from[i], rng, kind);
            pin.push_back(in[i].data());
        }
        for (bool centered : {false, true}) {
            std::vector<std::vector<u64>> ref(to.size(), std::vector<u64>(n)), got(to.size(), std::vector<u64>(n, ~u64(0)));
            std::vector<u64*> pref, pgot;
            for (std::size_t j = 0; j < to.size(); ++j) pref.push_back(ref[j].data()), pgot.push_back(got[j].data());
            cpu.base_convert(conv, pin, pref, n, centered);
            cuda::base_convert_emulate(tab, pin.data(), pgot.data(), n, centered, chunk, out_batch);
            for (std::size_t j = 0; j < to.size(); ++j)
                for (std::size_t c = 0; c < n; ++c)
                    ASSERT_EQ(got[j][c], ref[j][c]) << "k=" << from.size() << " m=" << to.size() << " chunk=" << chunk
                                                    << " out_batch=" << out_batch << " centered=" << centered
                                                    << " kind=" << kind << " j=" << j << " c=" << c;
        }
    }
}

TEST_F(CudaArithBackend, BaseConvertEmulationMatchesCpu) {
    std::mt19937_64 rng(7);
    constexpr std::size_t two_n = 1 << 13;
    // Ember's shapes: ModUp of a digit (a few Q primes -> the other Q primes and the P primes), ModDown / rescale
    // (P primes -> Q primes, centered), with 50- to 61-bit primes mixed; and a source basis past kWideTerms.
    const std::vector<u64> q60 = ntt_primes_near(60, 40, two_n), q50 = ntt_primes_near(50, 8, two_n, {}, false);
    const std::vector<u64> p61 = ntt_primes_near(61, 4, two_n, {}, false);
    auto take = [](const std::vector<u64>& v, std::size_t b, std::size_t e) { return std::vector<u64>(v.begin() + b, v.begin() + e); };
    // n = 1000: not a multiple of the kernel's 64 coefficients per block
    expect_base_convert_matches(*cpu, take(q60, 0, 1), take(q60, 1, 5), 1000, rng);
    expect_base_convert_matches(*cpu, take(q60, 0, 3), take(p61, 0, 4), 1000, rng);
    expect_base_convert_matches(*cpu, take(p61, 0, 4), take(q60, 0, 12), 1000, rng);
    std::vector<u64> mixed = take(q50, 0, 5);
    for (u64 q : take(q60, 0, 7)) mixed.push_back(q);
    expect_base_convert_matches(*cpu, mixed, take(p61, 0, 3), 512, rng);
    // 70 sources (> kWideTerms = 63: two reductions per output; the CPU takes its reference path beyond 63)
    std::vector<u64> many = ntt_primes_near(61, 70, two_n, {}, false);
    expect_base_convert_matches(*cpu, many, take(q50, 0, 2), 200, rng);
}

// More sources than one pass takes (kBcChunkSources; dnum = 1, or the special primes of a deep chain) and more
// outputs than one launch carries (kBcOutBatch): several passes, the outputs accumulating mod p_j across them and the
// centered sum f carried in scratch. The same passes with small sizes cover every combination of first / middle /
// last chunk and output batch on small bases.
TEST_F(CudaArithBackend, BaseConvertInSeveralPassesMatchesCpu) {
    std::mt19937_64 rng(9);
    constexpr std::size_t two_n = 1 << 13;
    const std::vector<u64> q60 = ntt_primes_near(60, 24, two_n), q50 = ntt_primes_near(50, 8, two_n, {}, false);
    auto take = [](const std::vector<u64>& v, std::size_t b, std::size_t e) { return std::vector<u64>(v.begin() + b, v.begin() + e); };
    std::vector<u64> mixed = take(q50, 0, 5);
    for (u64 q : take(q60, 0, 7)) mixed.push_back(q);  // 12 sources
    for (cuda::u32 chunk : {1u, 2u, 5u, 11u, 12u})
        for (cuda::u32 out_batch : {1u, 3u, 7u})
            expect_base_convert_matches(*cpu, mixed, take(q60, 10, 17), 130, rng, chunk, out_batch);
    // the kernels' sizes: 200 sources (passes of 95, 95 and 10) into 2, and 3 sources into 300 outputs (batches of
    // 256 and 44)
    const std::vector<u64> p61 = ntt_primes_near(61, 200, two_n, {}, false);
    expect_base_convert_matches(*cpu, p61, take(q50, 0, 2), 130, rng);
    const std::vector<u64> p55 = ntt_primes_near(55, 300, two_n, {}, false);
    expect_base_convert_matches(*cpu, take(q60, 0, 3), p55, 70, rng);
}

// ---- automorphisms -------------------------------------------------------------------------------------------------

TEST_F(CudaArithBackend, AutomorphismIndexMatchesRingPermutation) {
    std::mt19937_64 rng(8);
    for (int log_n : {1, 2, 3, 5, 8, 12, 13, 16, 17}) {
        const std::size_t n = std::size_t(1) << log_n;
        const RingContext ring(log_n, {ntt_primes_near(50, 1, 2 * n).at(0)}, {}, cpu);
        std::vector<u64> ks = {1, 2 * n - 1, 5 % (2 * n), 3 % (2 * n)};
        for (int r = 0; r < 4; ++r) ks.push_back((rng() % n) * 2 + 1);
        for (u64 k : ks) {
            const std::vector<std::uint32_t>& perm = ring.automorphism_perm(k);
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(cuda::automorphism_index(static_cast<cuda::u32>(i), k, log_n), perm[i]) << "N=" << n << " k=" << k;
            // and the backend's gather with that permutation equals the gather with the computed indices
            const u64 q = ring.mod(0).q;
            std::vector<u64> a = sample(n, q, rng), out(n);
            const LimbRef r{out.data(), &ring.table(0)};
            const u64* pa = a.data();
            cpu->permute(std::span<const LimbRef>(&r, 1), std::span<const u64* const>(&pa, 1), k, perm.data());
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[cuda::automorphism_index(static_cast<cuda::u32>(i), k, log_n)]);
        }
    }
}

}  // namespace
}  // namespace ember
