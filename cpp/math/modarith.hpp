// Word-sized modular arithmetic for NTT-friendly primes below 2^61.
//
// Two reduction schemes are used throughout Ember:
//  * Shoup: multiply by a constant w known in advance, with w' = floor(w * 2^64 / q).
//    One high product gives the quotient estimate; the result lies in [0, 2q).
//  * Barrett: multiply two arbitrary residues, reducing the 128-bit product with
//    mu = floor(2^128 / q) (stored as two words).
// Lazy variants return values in [0, 2q) or [0, 4q), the Harvey NTT relies on them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ember {

using u64 = std::uint64_t;
using i64 = std::int64_t;
using u128 = unsigned __int128;
using i128 = __int128;

inline u64 mulhi64(u64 a, u64 b) { return static_cast<u64>((static_cast<u128>(a) * b) >> 64); }

/// A prime modulus q < 2^61 with its Barrett constant.
struct Modulus {
    u64 q = 0;
    u64 mu_hi = 0;  // floor(2^128 / q) = mu_hi * 2^64 + mu_lo
    u64 mu_lo = 0;
    int bits = 0;

    Modulus() = default;
    explicit Modulus(u64 q_) : q(q_) {
        if (q < 2 || q >= (u64(1) << 61)) throw std::invalid_argument("Modulus: q must be in [2, 2^61), got " + std::to_string(q_));
        u128 two128_div = (~u128(0)) / q;  // floor((2^128 - 1) / q) == floor(2^128 / q) for q not a power of 2
        mu_hi = static_cast<u64>(two128_div >> 64);
        mu_lo = static_cast<u64>(two128_div);
        bits = 64 - __builtin_clzll(q);
    }

    /// Reduce a 128-bit value (any value < 2^128) mod q (Barrett, exact result in [0, q)).
    u64 reduce128(u128 x) const {
        u64 xl = static_cast<u64>(x), xh = static_cast<u64>(x >> 64);
        // quotient estimate = floor(x * mu / 2^128), keep the high 64 bits of the middle sums
        u128 t = static_cast<u128>(xl) * mu_lo;
        u128 m1 = static_cast<u128>(xl) * mu_hi + (t >> 64);
        u128 m2 = static_cast<u128>(xh) * mu_lo;
        u128 mid = (m1 & ~u64(0)) + (m2 & ~u64(0));
        u128 qhat = static_cast<u128>(xh) * mu_hi + (m1 >> 64) + (m2 >> 64) + (mid >> 64);
        u64 r = xl - static_cast<u64>(qhat) * q;
        // the estimate is at most 2 below the true quotient
        if (r >= q) r -= q;
        if (r >= q) r -= q;
        return r;
    }
    u64 reduce(u64 x) const { return x >= q ? x % q : x; }
    u64 mul(u64 a, u64 b) const { return reduce128(static_cast<u128>(a) * b); }
    u64 add(u64 a, u64 b) const { u64 s = a + b; return s >= q ? s - q : s; }
    u64 sub(u64 a, u64 b) const { return a >= b ? a - b : a + q - b; }
    u64 neg(u64 a) const { return a ? q - a : 0; }
    u64 pow(u64 a, u64 e) const {
        u64 r = 1 % q;
        a %= q;
        while (e) { if (e & 1) r = mul(r, a); a = mul(a, a); e >>= 1; }
        return r;
    }
    /// Inverse for prime q (Fermat).
    u64 inv(u64 a) const {
        if (a % q == 0) throw std::invalid_argument("Modulus::inv: zero has no inverse");
        return pow(a, q - 2);
    }
    /// Reduce a signed 64-bit integer.
    u64 from_signed(i64 v) const {
        if (v >= 0) return static_cast<u64>(v) % q;
        u64 r = static_cast<u64>(-(v + 1)) % q;  // avoids overflow at INT64_MIN
        return q - 1 - r;
    }
    /// Shoup companion of a constant w < q.
    u64 shoup(u64 w) const { return static_cast<u64>((static_cast<u128>(w) << 64) / q); }
};

/// a * w mod q in [0, 2q) for any a < 2^64 (Shoup).
inline u64 mul_shoup_lazy(u64 a, u64 w, u64 wp, u64 q) { return a * w - mulhi64(a, wp) * q; }
inline u64 mul_shoup(u64 a, u64 w, u64 wp, u64 q) {
    u64 r = mul_shoup_lazy(a, w, wp, q);
    return r >= q ? r - q : r;
}

/// A constant multiplier with its Shoup companion.
struct MulConst {
    u64 w = 0, wp = 0;
    MulConst() = default;
    MulConst(u64 w_, const Modulus& m) : w(w_ % m.q), wp(m.shoup(w_ % m.q)) {}
    u64 mul(u64 a, u64 q) const { return mul_shoup(a, w, wp, q); }
};

}  // namespace ember
