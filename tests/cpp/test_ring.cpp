// Property tests of the ring layer (ring/poly, ring/key_switch, ring/ring_context) on small rings N = 2^4 .. 2^10,
// against independent references: naive O(N^2) negacyclic products with __int128, the coefficient-domain definition
// of X -> X^k, and GMP for everything that needs the integer behind the RNS residues (ModUp digits, ModDown /
// Rescale rounding).
#include <gtest/gtest.h>
#include <gmp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "math/primes.hpp"
#include "ring/key_switch.hpp"
#include "ring/poly.hpp"
#include "ring/ring_context.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

// ---- helpers ----------------------------------------------------------------------------------------------------

using namespace test;

constexpr int kMaxLogN = 10;
constexpr u64 kTwoN = u64(2) << kMaxLogN;  // primes = 1 mod 2^11 serve every N <= 2^10

/// Q: 60, 40, 50 (below 2^50, the IFMA path), 30 and 55 bits; P: two 61-bit primes. All distinct.
struct Primes {
    std::vector<u64> q, p;
};
const Primes& primes() {
    static const Primes pr = [] {
        Primes r;
        for (auto [bits, below] : std::vector<std::pair<int, bool>>{{60, false}, {40, false}, {50, true}, {30, false}, {55, false}})
            r.q.push_back(ntt_primes_near(bits, 1, kTwoN, r.q, !below).at(0));
        r.p = ntt_primes_near(61, 2, kTwoN, r.q, false);
        return r;
    }();
    return pr;
}

std::shared_ptr<const RingContext> make_ring(int log_n, std::size_t q_count = 5) {
    std::vector<u64> q(primes().q.begin(), primes().q.begin() + q_count);
    return std::make_shared<RingContext>(log_n, q, primes().p, make_cpu_backend(2));
}

u64 prime_of(const Poly& p, std::size_t limb) { return p.table(limb).mod.q; }
std::vector<u64> primes_of(const Poly& p) {
    std::vector<u64> r;
    for (std::size_t i = 0; i < p.limbs(); ++i) r.push_back(prime_of(p, i));
    return r;
}

/// Uniform residues on every limb (an arbitrary element of R_Q or R_QP), coefficient form.
Poly random_poly(const std::shared_ptr<const RingContext>& ring, std::size_t q_limbs, Basis basis, std::mt19937_64& rng) {
    Poly p(ring, q_limbs, basis, Form::Coeff);
    for (std::size_t i = 0; i < p.limbs(); ++i)
        for (std::size_t c = 0; c < p.n(); ++c) p.limb(i)[c] = rng() % prime_of(p, i);
    return p;
}

/// Coefficient-form copy of limb data: [limb][coefficient].
std::vector<std::vector<u64>> coeffs(const Poly& p) {
    Poly c(p);
    poly_to_coeff(c);
    std::vector<std::vector<u64>> r(c.limbs());
    for (std::size_t i = 0; i < c.limbs(); ++i) r[i].assign(c.limb(i), c.limb(i) + c.n());
    return r;
}

// ---- element-wise operations ------------------------------------------------------------------------------------

TEST(Ring, PolyMulMatchesNaiveNegacyclicProduct) {
    std::mt19937_64 rng(11);
    for (int log_n = 4; log_n <= kMaxLogN; log_n += 2) {
        SCOPED_TRACE("N = 2^" + std::to_string(log_n));
        auto ring = make_ring(log_n);
        Poly a = random_poly(ring, 5, Basis::QP, rng), b = random_poly(ring, 5, Basis::QP, rng), acc = random_poly(ring, 5, Basis::QP, rng);
        const auto ac = coeffs(a), bc = coeffs(b), accc = coeffs(acc);
        poly_to_eval(a);
        poly_to_eval(b);
        poly_to_eval(acc);
        Poly prod;
        poly_mul(prod, a, b);
        EXPECT_EQ(prod.form(), Form::Eval);
        poly_mul_add(acc, a, b);
        const auto pc = coeffs(prod), sc = coeffs(acc);
        for (std::size_t i = 0; i < a.limbs(); ++i) {
            const u64 q = prime_of(a, i);
            const auto want = negacyclic_naive(ac[i], bc[i], q);
            ASSERT_EQ(pc[i], want) << "limb " << i << " (q = " << q << ")";
            for (std::size_t c = 0; c < want.size(); ++c)
                ASSERT_EQ(sc[i][c], static_cast<u64>((static_cast<u128>(want[c]) + accc[i][c]) % q)) << "mul_add limb " << i;
        }
        // output aliasing an operand
        Poly a2(a);
        poly_mul(a2, a2, b);
        EXPECT_EQ(coeffs(a2), pc);
    }
}

TEST(Ring, ElementWiseOpsMatchPerCoefficient) {
    std::mt19937_64 rng(12);
    auto ring = make_ring(6);
    for (Basis basis : {Basis::Q, Basis::QP}) {
        const Poly a = random_poly(ring, 3, basis, rng), b = random_poly(ring, 3, basis, rng);
        Poly s, d, ng, mc;
        poly_add(s, a, b);
        poly_sub(d, a, b);
        poly_neg(ng, a);
        const std::int64_t k = -123456789012345;
        poly_mul_const(mc, a, residues_of(a, k));
        ASSERT_EQ(s.limbs(), a.limbs());
        for (std::size_t i = 0; i < a.limbs(); ++i) {
            const u64 q = prime_of(a, i);
            const u64 kr = static_cast<u64>((static_cast<i128>(k) % static_cast<i128>(q) + q) % q);
            EXPECT_EQ(residues_of(a, k)[i], kr);
            for (std::size_t c = 0; c < a.n(); ++c) {
                const u128 x = a.limb(i)[c], y = b.limb(i)[c];
                ASSERT_EQ(s.limb(i)[c], static_cast<u64>((x + y) % q));
                ASSERT_EQ(d.limb(i)[c], static_cast<u64>((x + q - y) % q));
                ASSERT_EQ(ng.limb(i)[c], static_cast<u64>((q - x) % q));
                ASSERT_EQ(mc.limb(i)[c], static_cast<u64>(x * kr % q));
            }
        }
    }
}

TEST(Ring, RestrictAndDropKeepLowLimbs) {
    std::mt19937_64 rng(13);
    auto ring = make_ring(5);
    const Poly x = random_poly(ring, 5, Basis::QP, rng);
    const Poly r = restrict_to(x, 2);
    ASSERT_EQ(r.q_limbs(), 2u);
    ASSERT_EQ(r.p_limbs(), 2u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(std::equal(r.limb(i), r.limb(i) + r.n(), x.limb(i)));
    for (std::size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(r.prime_index(2 + j), ring->q_count() + j);
        EXPECT_TRUE(std::equal(r.limb(2 + j), r.limb(2 + j) + r.n(), x.limb(5 + j)));
    }
    Poly y = random_poly(ring, 4, Basis::Q, rng);
    const Poly y0(y);
    y.drop_to(2);
    EXPECT_EQ(y.q_limbs(), 2u);
    EXPECT_EQ(y.level(), 1u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(std::equal(y.limb(i), y.limb(i) + y.n(), y0.limb(i)));
    EXPECT_THROW(y.drop_to(3), std::invalid_argument);
    EXPECT_THROW(y.drop_to(0), std::invalid_argument);
    Poly xq(x);
    EXPECT_THROW(xq.drop_to(2), std::invalid_argument);  // basis QP
    EXPECT_THROW(restrict_to(x, 6), std::invalid_argument);
    EXPECT_THROW(restrict_to(x, 0), std::invalid_argument);
}

// ---- automorphisms ----------------------------------------------------------------------------------------------

TEST(Ring, AutomorphismMatchesCoefficientDefinition) {
    std::mt19937_64 rng(14);
    for (int log_n = 4; log_n <= kMaxLogN; log_n += 3) {
        SCOPED_TRACE("N = 2^" + std::to_string(log_n));
        auto ring = make_ring(log_n, 3);
        const std::size_t n = ring->n();
        const u64 two_n = 2 * n;
        std::vector<u64> ks;
        if (n <= 64) {
            for (u64 k = 1; k < two_n; k += 2) ks.push_back(k);
        } else {
            u64 g = 1;
            for (int r = 0; r < 6; ++r) { ks.push_back(g); g = g * 5 % two_n; }  // rotations
            ks.push_back(two_n - 1);                                             // conjugation
            for (int i = 0; i < 10; ++i) ks.push_back((rng() % n) * 2 + 1);
        }
        Poly a = random_poly(ring, 3, Basis::QP, rng);
        const auto ac = coeffs(a);
        poly_to_eval(a);
        for (u64 k : ks) {
            const auto& perm = ring->automorphism_perm(k);
            ASSERT_EQ(perm.size(), n);
            std::vector<std::uint32_t> sorted(perm.begin(), perm.end());
            std::sort(sorted.begin(), sorted.end());
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << "not a permutation, k = " << k;
            EXPECT_EQ(&ring->automorphism_perm(k), &perm) << "not cached";
            // every aligned run of outputs reads one aligned run of inputs (the CPU backend prefetches by runs)
            for (std::size_t run = 2; run < n; run *= 2)
                for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(perm[i] / run, perm[i - i % run] / run) << "k = " << k << ", run " << run;

            Poly out;
            poly_automorph(out, a, k);
            ASSERT_EQ(out.form(), Form::Eval);
            const auto oc = coeffs(out);
            for (std::size_t l = 0; l < a.limbs(); ++l) {
                const u64 q = prime_of(a, l);
                // a(X^k): X^i -> X^(ik mod 2N) = -X^(ik mod 2N - N) when ik mod 2N >= N
                std::vector<u64> want(n, 0);
                for (std::size_t i = 0; i < n; ++i) {
                    const u64 e = (i * k) % two_n;
                    if (e < n) want[e] = ac[l][i];
                    else want[e - n] = (q - ac[l][i]) % q;
                }
                ASSERT_EQ(oc[l], want) << "k = " << k << ", limb " << l;
            }
        }
        // composition: X -> X^5 twice is X -> X^25
        Poly t1, t2, t3;
        poly_automorph(t1, a, 5);
        poly_automorph(t2, t1, 5);
        poly_automorph(t3, a, 25 % two_n);
        EXPECT_EQ(coeffs(t2), coeffs(t3));

        Poly out;
        EXPECT_THROW(poly_automorph(out, a, 2), std::invalid_argument);       // even
        EXPECT_THROW(poly_automorph(out, a, two_n + 1), std::invalid_argument);  // >= 2N
        EXPECT_THROW(poly_automorph(a, a, 5), std::invalid_argument);         // aliasing
        Poly ac_poly = random_poly(ring, 3, Basis::Q, rng);
        EXPECT_THROW(poly_automorph(out, ac_poly, 5), std::invalid_argument);  // coefficient form
    }
}

// ---- key-switching building blocks ------------------------------------------------------------------------------

TEST(Ring, DigitPartitionCoversFromTheTop) {
    for (std::size_t qc = 1; qc <= 40; ++qc) {
        for (std::size_t dnum = 1; dnum <= qc; ++dnum) {
            SCOPED_TRACE("q_count " + std::to_string(qc) + " dnum " + std::to_string(dnum));
            const auto parts = digit_partition(qc, dnum);
            const std::size_t alpha = (qc + dnum - 1) / dnum;
            ASSERT_FALSE(parts.empty());
            ASSERT_LE(parts.size(), dnum);
            ASSERT_EQ(parts.size(), (qc + alpha - 1) / alpha);
            // contiguous, descending, covering [0, qc) exactly
            std::size_t top = qc;
            for (std::size_t j = 0; j < parts.size(); ++j) {
                const auto [first, last] = parts[j];
                ASSERT_EQ(last, top) << "digit " << j << " not adjacent to the previous one";
                ASSERT_LT(first, last) << "empty digit " << j;
                ASSERT_LE(last - first, alpha);
                if (j + 1 < parts.size()) {
                    ASSERT_EQ(last - first, alpha) << "only the last digit may be short";
                }
                top = first;
            }
            ASSERT_EQ(top, 0u);
            // q_0 is in the last digit, which is the smallest
            ASSERT_EQ(parts.back().first, 0u);
            for (const auto& d : parts) ASSERT_LE(parts.back().second - parts.back().first, d.second - d.first);
        }
    }
    EXPECT_THROW(digit_partition(5, 0), std::invalid_argument);
    EXPECT_THROW(digit_partition(5, 6), std::invalid_argument);
}

TEST(Ring, ModUpDigitsAreDigitPlusMultipleOfDigitModulus) {
    std::mt19937_64 rng(15);
    for (int log_n : {4, 10}) {
        auto ring = make_ring(log_n);
        for (std::size_t dnum : {1, 2, 3, 5}) {
            const auto part = digit_partition(ring->q_count(), dnum);
            for (std::size_t ql : {5, 3, 1}) {
                SCOPED_TRACE("N = 2^" + std::to_string(log_n) + " dnum " + std::to_string(dnum) + " q_limbs " + std::to_string(ql));
                Poly c = random_poly(ring, ql, Basis::Q, rng);
                const auto cc = coeffs(c);
                poly_to_eval(c);
                const auto digits = mod_up_digits(c, part);
                // the non-empty digits, clipped to the operand's limbs, in partition order
                std::vector<DigitRange> expect;
                for (auto [f, l] : part)
                    if (f < std::min(l, ql)) expect.emplace_back(f, std::min(l, ql));
                ASSERT_EQ(digits.size(), expect.size());
                for (std::size_t j = 0; j < digits.size(); ++j) {
                    const Poly& d = digits[j];
                    const auto [first, last] = expect[j];
                    ASSERT_EQ(d.basis(), Basis::QP);
                    ASSERT_EQ(d.form(), Form::Eval);
                    ASSERT_EQ(d.q_limbs(), ql);
                    // the digit's own limbs are copied in evaluation form
                    for (std::size_t i = first; i < last; ++i) ASSERT_TRUE(std::equal(d.limb(i), d.limb(i) + d.n(), c.limb(i))) << "limb " << i;
                    std::vector<u64> dprimes;
                    for (std::size_t i = first; i < last; ++i) dprimes.push_back(prime_of(c, i));
                    Z D, x;
                    product(D.v, dprimes);
                    const auto dc = coeffs(d);
                    const auto lp = primes_of(d);
                    std::vector<u64> res(dprimes.size());
                    for (std::size_t co = 0; co < d.n(); ++co) {
                        for (std::size_t i = first; i < last; ++i) res[i - first] = cc[i][co];
                        crt_gmp(x.v, res, dprimes);
                        // one u in [0, |digit|) explains every limb
                        ASSERT_TRUE(is_x_plus_small_multiple(dc, co, lp, x.v, D.v, dprimes.size())) << "digit " << j << " coefficient " << co;
                    }
                }
            }
        }
        // misuse
        Poly qp = random_poly(ring, 2, Basis::QP, rng);
        poly_to_eval(qp);
        EXPECT_THROW(mod_up_digits(qp, digit_partition(5, 2)), std::invalid_argument);
        Poly coef = random_poly(ring, 2, Basis::Q, rng);
        EXPECT_THROW(mod_up_digits(coef, digit_partition(5, 2)), std::invalid_argument);
    }
}

TEST(Ring, LimbFusionInModUpAndModDownIsBitIdentical) {
    // Decomp + iNTT per limb in one pass (Backend::ntt_inverse_from) against copy, then iNTT in place
    std::mt19937_64 rng(16);
    auto ring = make_ring(10);
    Poly c = random_poly(ring, 5, Basis::Q, rng);
    poly_to_eval(c);
    Poly in_place(c);
    ring->backend().ntt_inverse(in_place.refs());
    Poly fused = Poly::uninitialized(ring, 5, Basis::Q, Form::Coeff);
    ring->backend().ntt_inverse_from(fused.refs(), c.crefs());
    for (std::size_t i = 0; i < c.limbs(); ++i)
        for (std::size_t k = 0; k < c.n(); ++k) ASSERT_EQ(fused.limb(i)[k], in_place.limb(i)[k]) << i << " " << k;
    const auto part = digit_partition(ring->q_count(), 2);
    ASSERT_TRUE(limb_fusion());
    const auto on = mod_up_digits(c, part);
    set_limb_fusion(false);
    const auto off = mod_up_digits(c, part);
    set_limb_fusion(true);
    ASSERT_EQ(on.size(), off.size());
    for (std::size_t d = 0; d < on.size(); ++d)
        for (std::size_t i = 0; i < on[d].limbs(); ++i)
            for (std::size_t k = 0; k < c.n(); ++k) ASSERT_EQ(on[d].limb(i)[k], off[d].limb(i)[k]);
    // ModDown / merged Rescale: the dropped limbs copied and transformed in one pass, or copied first
    Poly x = random_poly(ring, 4, Basis::QP, rng);
    poly_to_eval(x);
    for (std::size_t drop : {0, 1}) {
        const Poly fused_down = divide_by_dropped(x, drop);
        set_limb_fusion(false);
        const Poly plain_down = divide_by_dropped(x, drop);
        set_limb_fusion(true);
        ASSERT_EQ(fused_down.limbs(), plain_down.limbs());
        for (std::size_t i = 0; i < fused_down.limbs(); ++i)
            for (std::size_t k = 0; k < x.n(); ++k) ASSERT_EQ(fused_down.limb(i)[k], plain_down.limb(i)[k]) << drop << " " << i << " " << k;
    }
}

TEST(Ring, KskInnerProductMatchesPerDigitProducts) {
    // u = sum_j digit_j * b_{offset + j}, v likewise with a, over Q_l U P. The reference multiplies digit by digit.
    std::mt19937_64 rng(20);
    for (int log_n : {4, 9}) {
        auto ring = make_ring(log_n);
        for (std::size_t dnum : {1, 2, 3}) {
            const auto part = digit_partition(ring->q_count(), dnum);
            SwitchingKey key;
            for (std::size_t j = 0; j < part.size(); ++j) {
                key.b.push_back(random_poly(ring, ring->q_count(), Basis::QP, rng));
                key.a.push_back(random_poly(ring, ring->q_count(), Basis::QP, rng));
                poly_to_eval(key.b.back());
                poly_to_eval(key.a.back());
            }
            for (std::size_t ql : {5, 3, 2}) {
                Poly c = random_poly(ring, ql, Basis::Q, rng);
                poly_to_eval(c);
                const auto digits = mod_up_digits(c, part);
                const std::size_t offset = key.digits() - digits.size();
                {
                    SCOPED_TRACE("N = 2^" + std::to_string(log_n) + " dnum " + std::to_string(dnum) + " q_limbs " + std::to_string(ql));
                    Poly u, v;
                    ksk_inner_product(digits, key, u, v);
                    ASSERT_EQ(u.q_limbs(), ql);
                    ASSERT_EQ(u.basis(), Basis::QP);
                    ASSERT_EQ(u.form(), Form::Eval);
                    Poly ru, rv, t, d;
                    for (std::size_t j = 0; j < digits.size(); ++j) {
                        d = digits[j];
                        poly_mul(t, d, restrict_to(key.b[offset + j], ql));
                        if (j == 0) ru = t; else poly_add(ru, ru, t);
                        poly_mul(t, d, restrict_to(key.a[offset + j], ql));
                        if (j == 0) rv = t; else poly_add(rv, rv, t);
                    }
                    for (std::size_t i = 0; i < u.limbs(); ++i) {
                        ASSERT_TRUE(std::equal(u.limb(i), u.limb(i) + u.n(), ru.limb(i))) << "u limb " << i;
                        ASSERT_TRUE(std::equal(v.limb(i), v.limb(i) + v.n(), rv.limb(i))) << "v limb " << i;
                    }
                }
            }
        }
    }
}

TEST(Ring, Dot2MatchesPerCoefficientSums) {
    // poly_dot2 / Backend::dot2 (both inner products in one pass, in coefficient blocks): against the sums of __int128
    // products reduced mod q, for term counts that give one block (1, 3 terms) and many (24, 70 terms: blocks of
    // 512 and fewer than the CPU backend's dot chunk), at N = 2^13 over 30- to 61-bit primes with extreme values mixed in.
    std::mt19937_64 rng(23);
    const int log_n = 13;
    std::vector<u64> q;
    for (int bits : {61, 30, 50, 60}) q.push_back(ntt_primes_near(bits, 1, u64(2) << log_n, q, bits > 50).at(0));
    auto ring = std::make_shared<RingContext>(log_n, std::vector<u64>(q.begin(), q.begin() + 3), std::vector<u64>{q[3]}, make_cpu_backend(2));
    for (std::size_t terms : {1, 3, 24, 70}) {
        SCOPED_TRACE(std::to_string(terms) + " terms");
        std::vector<Poly> a, b0, b1;
        for (std::size_t t = 0; t < terms; ++t)
            for (auto* v : {&a, &b0, &b1}) {
                Poly p = random_poly(ring, 3, Basis::QP, rng);
                for (std::size_t i = 0; i < p.limbs(); ++i)
                    for (std::size_t c = 0; c < p.n(); c += 7) p.limb(i)[c] = prime_of(p, i) - 1 - (c % 14 == 0);  // q - 1, q - 2
                p.set_form(Form::Eval);  // uniform residues are as good in either form
                v->push_back(std::move(p));
            }
        std::vector<const Poly*> pa, pb0, pb1;
        for (std::size_t t = 0; t < terms; ++t) { pa.push_back(&a[t]); pb0.push_back(&b0[t]); pb1.push_back(&b1[t]); }
        const auto [u, v] = poly_dot2(pa, pb0, pb1);
        ASSERT_EQ(u.limbs(), 4u);
        for (std::size_t i = 0; i < u.limbs(); ++i) {
            const u64 m = prime_of(u, i);
            for (std::size_t c = 0; c < u.n(); ++c) {
                u128 su = 0, sv = 0;
                for (std::size_t t = 0; t < terms; ++t) {
                    su = (su + static_cast<u128>(a[t].limb(i)[c]) * b0[t].limb(i)[c]) % m;
                    sv = (sv + static_cast<u128>(a[t].limb(i)[c]) * b1[t].limb(i)[c]) % m;
                }
                ASSERT_EQ(u.limb(i)[c], static_cast<u64>(su)) << "u limb " << i << " coefficient " << c;
                ASSERT_EQ(v.limb(i)[c], static_cast<u64>(sv)) << "v limb " << i << " coefficient " << c;
            }
        }
    }
    // refusals: term counts, shapes, aliasing outputs
    Poly x = random_poly(ring, 3, Basis::QP, rng), y = random_poly(ring, 2, Basis::QP, rng);
    x.set_form(Form::Eval);
    y.set_form(Form::Eval);
    expect_invalid([&] { (void)poly_dot2({&x}, {&x, &x}, {&x}); }, {"dot2", "terms"});
    expect_invalid([&] { (void)poly_dot2({}, {}, {}); }, {"dot2", "terms"});
    expect_invalid([&] { (void)poly_dot2({&x}, {&y}, {&x}); }, {"dot2", "differ"});
    Backend& be = ring->backend();
    const auto refs = x.refs();
    const std::vector<std::vector<const u64*>> one{x.crefs()};
    expect_invalid([&] { be.dot2(refs, y.refs(), one, one, one); }, {"dot2"});
    Poly o = random_poly(ring, 3, Basis::QP, rng);
    expect_invalid([&] { be.dot2(refs, o.refs(), one, one, one); }, {"dot2", "alias"});
}

/// Checks divide_by_dropped(x, drop_q) against round(x_c / D) computed with GMP; returns the fraction of exact matches.
double check_divide(const Poly& x_in, std::size_t drop_q) {
    const Poly out = divide_by_dropped(x_in, drop_q);
    const std::size_t kept = x_in.q_limbs() - drop_q;
    EXPECT_EQ(out.basis(), Basis::Q);
    EXPECT_EQ(out.q_limbs(), kept);
    EXPECT_EQ(out.form(), x_in.form());
    const auto xc = coeffs(x_in), oc = coeffs(out);
    const auto all = primes_of(x_in);
    std::vector<u64> kprimes(all.begin(), all.begin() + kept), dprimes(all.begin() + kept, all.end());
    Z M, D, Qk, x, r, got, t, twoD;
    product(M.v, all);
    product(D.v, dprimes);
    product(Qk.v, kprimes);
    mpz_mul_2exp(twoD.v, D.v, 1);
    std::vector<u64> res(all.size()), kres(kept);
    std::size_t exact = 0;
    for (std::size_t c = 0; c < x_in.n(); ++c) {
        for (std::size_t i = 0; i < all.size(); ++i) res[i] = xc[i][c];
        crt_gmp(x.v, res, all);
        center(x.v, M.v);
        // r = round(x_c / D) = floor((2 x_c + D) / 2D)
        mpz_mul_2exp(r.v, x.v, 1);
        mpz_add(r.v, r.v, D.v);
        mpz_fdiv_q(r.v, r.v, twoD.v);
        for (std::size_t i = 0; i < kept; ++i) kres[i] = oc[i][c];
        crt_gmp(got.v, kres, kprimes);
        mpz_sub(t.v, got.v, r.v);
        center(t.v, Qk.v);
        EXPECT_LE(mpz_cmpabs_ui(t.v, 1), 0) << "coefficient " << c << " is off by more than 1";
        if (mpz_sgn(t.v) == 0) ++exact;
        if (::testing::Test::HasFailure()) break;
    }
    return static_cast<double>(exact) / x_in.n();
}

TEST(Ring, DivideByDroppedRoundsTheQuotient) {
    std::mt19937_64 rng(16);
    for (int log_n : {4, 8, 10}) {
        auto ring = make_ring(log_n);
        for (Form form : {Form::Coeff, Form::Eval}) {
            for (std::size_t ql : {5, 3, 2}) {
                SCOPED_TRACE("N = 2^" + std::to_string(log_n) + (form == Form::Eval ? " eval" : " coeff") + " q_limbs " + std::to_string(ql));
                Poly xqp = random_poly(ring, ql, Basis::QP, rng);
                Poly xq = random_poly(ring, ql, Basis::Q, rng);
                if (form == Form::Eval) { poly_to_eval(xqp); poly_to_eval(xq); }
                // ModDown (by P), ModDown + Rescale (by q_l P), Rescale (by q_l). The centered conversion is exact
                // away from the +-1/2 rounding boundary, so essentially every coefficient is the exact rounding.
                EXPECT_GE(check_divide(xqp, 0), 0.99) << "ModDown";
                EXPECT_GE(check_divide(xqp, 1), 0.99) << "ModDown + Rescale";
                EXPECT_GE(check_divide(xq, 1), 0.99) << "Rescale";
                if (ql > 2) {
                    EXPECT_GE(check_divide(xq, 2), 0.99) << "Rescale by two primes";
                }
            }
        }
        Poly xq = random_poly(ring, 2, Basis::Q, rng);
        EXPECT_THROW(divide_by_dropped(xq, 0), std::invalid_argument);  // nothing to divide by
        EXPECT_THROW(divide_by_dropped(xq, 2), std::invalid_argument);  // would drop every limb
    }
}

TEST(Ring, DivideByDroppedOfSmallValues) {
    // x = D * m + e with small m and |e| < D/2: the quotient is exactly m (a ModDown of a key-switching result).
    std::mt19937_64 rng(17);
    auto ring = make_ring(6);
    Poly x(ring, 3, Basis::QP, Form::Coeff);
    const auto all = primes_of(x);
    Z D, v, e;
    product(D.v, {all[3], all[4]});
    std::vector<i64> m(x.n());
    gmp_randstate_t st;
    gmp_randinit_default(st);
    gmp_randseed_ui(st, 17);
    for (std::size_t c = 0; c < x.n(); ++c) {
        m[c] = static_cast<i64>(rng() % 2000001) - 1000000;
        mpz_set_si(v.v, m[c]);
        mpz_mul(v.v, v.v, D.v);
        mpz_urandomb(e.v, st, 100);
        if (c & 1) mpz_neg(e.v, e.v);
        mpz_add(v.v, v.v, e.v);
        for (std::size_t i = 0; i < x.limbs(); ++i) x.limb(i)[c] = mpz_fdiv_ui(v.v, all[i]);
    }
    gmp_randclear(st);
    poly_to_eval(x);
    const auto oc = coeffs(divide_by_dropped(x, 0));
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t c = 0; c < x.n(); ++c) ASSERT_EQ(oc[i][c], Modulus(all[i]).from_signed(m[c])) << "limb " << i << " coefficient " << c;
}

TEST(Ring, PModUpThenModDownIsIdentity) {
    std::mt19937_64 rng(18);
    for (int log_n : {4, 7, 10}) {
        auto ring = make_ring(log_n);
        Z P;
        product(P.v, primes().p);
        for (Form form : {Form::Coeff, Form::Eval}) {
            for (std::size_t ql : {1, 3, 5}) {
                SCOPED_TRACE("N = 2^" + std::to_string(log_n) + " q_limbs " + std::to_string(ql));
                Poly x = random_poly(ring, ql, Basis::Q, rng);
                if (form == Form::Eval) poly_to_eval(x);
                const Poly up = p_mod_up(x);
                ASSERT_EQ(up.basis(), Basis::QP);
                ASSERT_EQ(up.q_limbs(), ql);
                ASSERT_EQ(up.form(), form);
                for (std::size_t i = 0; i < ql; ++i) {
                    const u64 q = prime_of(x, i), pm = mpz_fdiv_ui(P.v, q);
                    for (std::size_t c = 0; c < x.n(); ++c) ASSERT_EQ(up.limb(i)[c], static_cast<u64>(static_cast<u128>(x.limb(i)[c]) * pm % q));
                }
                for (std::size_t j = 0; j < up.p_limbs(); ++j)
                    for (std::size_t c = 0; c < x.n(); ++c) ASSERT_EQ(up.limb(ql + j)[c], 0u) << "P limbs must be zero";
                const Poly back = divide_by_dropped(up, 0);
                ASSERT_EQ(back.form(), form);
                ASSERT_EQ(back.q_limbs(), ql);
                for (std::size_t i = 0; i < ql; ++i) ASSERT_TRUE(std::equal(back.limb(i), back.limb(i) + x.n(), x.limb(i))) << "limb " << i;
            }
        }
        Poly qp = random_poly(ring, 2, Basis::QP, rng);
        EXPECT_THROW(p_mod_up(qp), std::invalid_argument);
    }
}

// ---- context and misuse -----------------------------------------------------------------------------------------

TEST(Ring, ContextLayoutAndCaches) {
    auto ring = make_ring(5);
    EXPECT_EQ(ring->n(), 32u);
    EXPECT_EQ(ring->q_count(), 5u);
    EXPECT_EQ(ring->p_count(), 2u);
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(ring->mod(i).q, primes().q[i]);
    for (std::size_t j = 0; j < 2; ++j) EXPECT_EQ(ring->mod(5 + j).q, primes().p[j]);
    const auto& c1 = ring->converter({0, 1}, {2, 5, 6});
    EXPECT_EQ(&c1, &ring->converter({0, 1}, {2, 5, 6}));
    EXPECT_NE(&c1, &ring->converter({0, 1}, {2, 5}));
    EXPECT_EQ(c1.to()[1].q, primes().p[0]);
    EXPECT_THROW(RingContext(0, primes().q, primes().p, make_cpu_backend(1)), std::invalid_argument);
    EXPECT_THROW(RingContext(4, {}, primes().p, make_cpu_backend(1)), std::invalid_argument);
    EXPECT_THROW(RingContext(4, primes().q, primes().p, nullptr), std::invalid_argument);
    EXPECT_THROW(make_cpu_backend(0), std::invalid_argument);
}

TEST(Ring, ShapeAndFormMismatchesThrow) {
    std::mt19937_64 rng(19);
    auto ring = make_ring(4);
    auto other = make_ring(4);
    const Poly a3 = random_poly(ring, 3, Basis::Q, rng), a2 = random_poly(ring, 2, Basis::Q, rng);
    const Poly a3p = random_poly(ring, 3, Basis::QP, rng), o3 = random_poly(other, 3, Basis::Q, rng);
    Poly e3(a3);
    poly_to_eval(e3);
    Poly out;
    expect_invalid([&] { poly_add(out, a3, a2); }, {"add", "differ"});
    expect_invalid([&] { poly_sub(out, a3, a2); }, {"sub", "differ"});
    expect_invalid([&] { poly_add(out, a3, a3p); }, {"add"});
    expect_invalid([&] { poly_add(out, a3, o3); }, {"add"});  // same shape, another ring
    expect_invalid([&] { poly_add(out, a3, e3); }, {"add", "form"});
    expect_invalid([&] { poly_mul(out, a3, a3); }, {"mul", "evaluation form"});
    expect_invalid([&] { poly_mul(out, e3, a3); }, {"mul"});
    Poly acc(e3);
    Poly e2(a2);
    poly_to_eval(e2);
    expect_invalid([&] { poly_mul_add(acc, e2, e2); }, {"mul_add"});
    Poly acc_c(a3);
    expect_invalid([&] { poly_mul_add(acc_c, a3, a3); }, {"mul_add"});
    expect_invalid([&] { poly_mul_const(out, a3, {1, 2}); }, {"mul_const"});
    expect_invalid([&] { Poly p(ring, 0, Basis::Q, Form::Coeff); }, {"q_limbs"});
    expect_invalid([&] { Poly p(ring, 6, Basis::Q, Form::Coeff); }, {"q_limbs"});
    expect_invalid([&] { Poly p(nullptr, 1, Basis::Q, Form::Coeff); }, {"ring"});
}

}  // namespace
}  // namespace ember
