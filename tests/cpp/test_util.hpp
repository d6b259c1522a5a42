// Helpers shared by the C++ tests: GMP references (CRT, products, centering, primes), modulus and vector builders,
// the exception checker, and the CKKS slot helpers.
//
// Header-only and ODR-safe: every function is `inline` (or a template) and every class is defined in place, all in
// the named namespace ember::test, so each test file may include it and pull the names in with
// `using namespace test;`.
#pragma once

#include <gtest/gtest.h>
#include <gmp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ckks/params.hpp"
#include "ring/poly.hpp"
#include "math/modarith.hpp"

namespace ember::test {

// ---- GMP ----------------------------------------------------------------------------------------------------------

/// Minimal RAII wrapper around mpz_t.
struct Z {
    mpz_t v;
    Z() { mpz_init(v); }
    explicit Z(u64 x) { mpz_init(v); mpz_set_ui(v, x); }
    Z(const Z& o) { mpz_init_set(v, o.v); }
    Z& operator=(const Z& o) { mpz_set(v, o.v); return *this; }
    ~Z() { mpz_clear(v); }
};

/// z mod p in [0, p) for any sign of z.
/// The same limbs and the same words in every limb (read through host views: also on a device backend).
inline bool same_words(const Poly& a, const Poly& b) {
    if (a.limbs() != b.limbs() || a.n() != b.n()) return false;
    const HostLimbs ha = a.host(), hb = b.host();
    for (std::size_t i = 0; i < a.limbs(); ++i)
        if (!std::equal(ha.limb(i), ha.limb(i) + a.n(), hb.limb(i))) return false;
    return true;
}

inline u64 mod_of(const mpz_t z, u64 p) { return mpz_fdiv_ui(z, p); }

/// CRT by Garner's incremental method with mpz_invert (not the Q_i* formula the library uses); result in [0, prod).
inline void crt_gmp(mpz_t out, const std::vector<u64>& res, const std::vector<u64>& primes) {
    Z M(1), t, inv, qi;
    mpz_set_ui(out, 0);
    for (std::size_t i = 0; i < primes.size(); ++i) {
        mpz_set_ui(qi.v, primes[i]);
        // t = (r_i - x) * M^-1 mod q_i
        mpz_set_ui(t.v, res[i]);
        mpz_sub(t.v, t.v, out);
        ASSERT_NE(mpz_invert(inv.v, M.v, qi.v), 0);
        mpz_mul(t.v, t.v, inv.v);
        mpz_fdiv_r(t.v, t.v, qi.v);
        mpz_addmul(out, t.v, M.v);
        mpz_mul(M.v, M.v, qi.v);
    }
}

/// out = product of the primes.
inline void product(mpz_t out, const std::vector<u64>& primes) {
    mpz_set_ui(out, 1);
    for (u64 p : primes) mpz_mul_ui(out, out, p);
}

/// x <- centered representative of x mod M, in (-M/2, M/2] (for odd M: [-(M-1)/2, (M-1)/2]).
inline void center(mpz_t x, const mpz_t M) {
    Z half;
    mpz_fdiv_r(x, x, M);
    mpz_fdiv_q_2exp(half.v, M, 1);
    if (mpz_cmp(x, half.v) > 0) mpz_sub(x, x, M);
}

/// Whether some u in [0, count) makes y = x + u M explain every limb: got[j][c] == y mod primes[j] for all j (the
/// result of an approximate base conversion, which may add a small multiple of the source modulus M).
inline bool is_x_plus_small_multiple(const std::vector<std::vector<u64>>& got, std::size_t c, const std::vector<u64>& primes,
                                     const mpz_t x, const mpz_t M, std::size_t count) {
    Z t;
    for (std::size_t u = 0; u < count; ++u) {
        mpz_mul_ui(t.v, M, u);
        mpz_add(t.v, t.v, x);
        bool all = true;
        for (std::size_t j = 0; j < primes.size() && all; ++j) all = got[j][c] == mod_of(t.v, primes[j]);
        if (all) return true;
    }
    return false;
}

/// Primality by GMP (independent of ember::is_prime).
inline bool gmp_is_prime(u64 n) {
    Z z(n);
    return mpz_probab_prime_p(z.v, 40) != 0;
}

/// Random prime of exactly `bits` bits from GMP (independent of ember::is_prime).
inline u64 random_prime(std::mt19937_64& rng, int bits) {
    for (;;) {
        const u64 lo = u64(1) << (bits - 1);
        u64 x = lo | (rng() & (lo - 1));
        if (bits == 61) x = std::min(x, (u64(1) << 61) - (u64(1) << 32));
        Z z(x), p;
        mpz_nextprime(p.v, z.v);
        if (mpz_sizeinbase(p.v, 2) == static_cast<std::size_t>(bits)) return mpz_get_ui(p.v);
    }
}

// ---- moduli and vectors -------------------------------------------------------------------------------------------

/// One Modulus per value, in order.
inline std::vector<Modulus> moduli_of(const std::vector<u64>& qs) {
    std::vector<Modulus> r;
    for (u64 q : qs) r.emplace_back(q);
    return r;
}

/// n values uniform in [0, q).
inline std::vector<u64> uniform_vec(std::size_t n, u64 q, std::mt19937_64& rng) {
    std::uniform_int_distribution<u64> d(0, q - 1);
    std::vector<u64> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

/// Naive O(N^2) product in Z_q[X]/(X^N + 1) with 128-bit accumulators (independent of the NTT code).
inline std::vector<u64> negacyclic_naive(const std::vector<u64>& a, const std::vector<u64>& b, u64 q) {
    const std::size_t n = a.size();
    std::vector<u128> pos(n, 0), neg(n, 0);
    // each product is below 2^122, so 32 of them fit in an accumulator before it has to be reduced
    for (std::size_t i = 0; i < n; ++i) {
        const u128 ai = a[i];
        for (std::size_t j = 0; j < n - i; ++j) pos[i + j] += ai * b[j];
        for (std::size_t j = n - i; j < n; ++j) neg[i + j - n] += ai * b[j];
        if ((i & 31) == 31) {
            for (std::size_t k = 0; k < n; ++k) { pos[k] %= q; neg[k] %= q; }
        }
    }
    std::vector<u64> c(n);
    for (std::size_t k = 0; k < n; ++k) {
        const u64 p = static_cast<u64>(pos[k] % q), m = static_cast<u64>(neg[k] % q);
        c[k] = p >= m ? p - m : p + q - m;
    }
    return c;
}

// ---- exceptions ---------------------------------------------------------------------------------------------------

/// Expects f() to throw std::invalid_argument whose message contains every one of `words`; `what` (if any)
/// prefixes the failure messages.
template <class F>
void expect_invalid(F&& f, const std::vector<std::string>& words, const std::string& what = {}) {
    const std::string pre = what.empty() ? std::string() : what + ": ";
    try {
        f();
        ADD_FAILURE() << pre << "no exception";
    } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << pre << "message '" << msg << "' lacks '" << w << "'";
    } catch (const std::exception& e) {
        ADD_FAILURE() << pre << "wrong exception type: " << e.what();
    }
}

// ---- CKKS ---------------------------------------------------------------------------------------------------------

using cvec = std::vector<std::complex<double>>;

/// N = 2^12, 40-bit scale, 50-bit q_0, insecure (a small ring).
inline CkksParams test_params(int levels, int dnum = 2) {
    CkksParams p;
    p.log_n = 12;
    p.levels = levels;
    p.log_scale = 40;
    p.first_mod_bits = 50;
    p.dnum = dnum;
    p.insecure = true;
    return p;
}

/// Slots uniform in the square [-1/sqrt2, 1/sqrt2]^2, so |z| <= 1 and products stay in the unit disk.
inline cvec random_slots(std::size_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> d(-M_SQRT1_2, M_SQRT1_2);
    cvec v(n);
    // (as the tests were written: constructor arguments, evaluated in the compiler's order)
    for (auto& x : v) x = std::complex<double>(d(rng), d(rng));
    return v;
}

/// max_i |a_i - b_i| (and a size check).
inline double max_err(const cvec& a, const cvec& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

/// Left rotation by r (any sign): slot j takes slot j + r.
inline cvec rotated(const cvec& z, long r) {
    const long n = static_cast<long>(z.size());
    cvec o(z.size());
    for (long j = 0; j < n; ++j) o[j] = z[((j + r) % n + n) % n];
    return o;
}

/// Slot-wise complex conjugate.
inline cvec conjugated(const cvec& z) {
    cvec o(z);
    for (auto& v : o) v = std::conj(v);
    return o;
}

/// o_i = f(a_i, b_i).
template <class F>
cvec map2(const cvec& a, const cvec& b, F f) {
    cvec o(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) o[i] = f(a[i], b[i]);
    return o;
}

/// Slot-wise a_i * b_i, a_i + b_i, a_i - b_i, and a_i * c for a real c.
inline cvec slot_mul(const cvec& a, const cvec& b) { return map2(a, b, [](auto x, auto y) { return x * y; }); }
inline cvec slot_add(const cvec& a, const cvec& b) { return map2(a, b, [](auto x, auto y) { return x + y; }); }
inline cvec slot_sub(const cvec& a, const cvec& b) { return map2(a, b, [](auto x, auto y) { return x - y; }); }
inline cvec scaled(const cvec& a, double c) { return map2(a, a, [c](auto x, auto) { return x * c; }); }

}  // namespace ember::test
