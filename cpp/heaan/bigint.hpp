// Fixed-width big-integer helpers on little-endian 64-bit words (beta = 2^64), the coefficient format of
// HEAAN's polynomials: a value modulo 2^bits takes ceil(bits / 64) words, the bits above `bits` are zero.
// Only what the scheme needs (table precomputation, encoding, rescaling); the hot paths are in crt*.cpp.
#pragma once

#include <cstddef>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>  // _addcarry_u64 / _subborrow_u64 (baseline x86-64: ADC / SBB)
#endif

#include "math/modarith.hpp"

namespace ember::heaan::bigint {

inline std::size_t words_for_bits(int bits) { return static_cast<std::size_t>(bits + 63) / 64; }

/// Clears the bits at and above `bits` (a has n words).
inline void mask_bits(u64* a, std::size_t n, int bits) {
    const std::size_t full = static_cast<std::size_t>(bits) / 64;
    if (full >= n) return;
    const int rem = bits % 64;
    a[full] &= rem ? (~u64(0) >> (64 - rem)) : 0;
    for (std::size_t i = full + 1; i < n; ++i) a[i] = 0;
}

/// One word of a carry (borrow) chain: *s = a + b + c (a - b - c) mod 2^64, returns the carry (borrow) out, c in {0, 1}.
/// x86-64: ADC / SBB through the intrinsics; elsewhere a 128-bit sum (aarch64: two ADDS and the carry flag read back).
inline unsigned char add_carry(unsigned char c, u64 a, u64 b, u64* s) {
#if defined(__x86_64__)
    unsigned long long r;
    c = _addcarry_u64(c, a, b, &r);
    *s = r;
    return c;
#else
    const u128 t = static_cast<u128>(a) + b + c;
    *s = static_cast<u64>(t);
    return static_cast<unsigned char>(t >> 64);
#endif
}
inline unsigned char sub_borrow(unsigned char c, u64 a, u64 b, u64* s) {
#if defined(__x86_64__)
    unsigned long long r;
    c = _subborrow_u64(c, a, b, &r);
    *s = r;
    return c;
#else
    const u128 t = static_cast<u128>(a) - b - c;  // wraps mod 2^128: the high word is all ones on a borrow
    *s = static_cast<u64>(t);
    return static_cast<unsigned char>((t >> 64) & 1);
#endif
}

/// out = a + b (kSub false) or a - b (kSub true) mod 2^(64 n): one carry (borrow) chain; out may alias a or b.
template <bool kSub>
inline void add_or_sub(u64* out, const u64* a, const u64* b, std::size_t n) {
    unsigned char c = 0;
    for (std::size_t i = 0; i < n; ++i) {
        u64 s;
        if constexpr (kSub) c = sub_borrow(c, a[i], b[i], &s);
        else c = add_carry(c, a[i], b[i], &s);
        out[i] = s;
    }
}
/// out = a + b mod 2^(64 n) (out may alias a or b).
inline void add(u64* out, const u64* a, const u64* b, std::size_t n) { add_or_sub<false>(out, a, b, n); }
/// out = a - b mod 2^(64 n).
inline void sub(u64* out, const u64* a, const u64* b, std::size_t n) { add_or_sub<true>(out, a, b, n); }
/// out = -a mod 2^(64 n).
inline void neg(u64* out, const u64* a, std::size_t n) {
    unsigned char c = 0;
    for (std::size_t i = 0; i < n; ++i) {
        u64 s;
        c = sub_borrow(c, 0, a[i], &s);
        out[i] = s;
    }
}
inline bool is_zero(const u64* a, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) if (a[i]) return false;
    return true;
}
/// Bit `b` of a (n words); 0 past the end.
inline int bit(const u64* a, std::size_t n, std::size_t b) { return b / 64 < n ? static_cast<int>((a[b / 64] >> (b % 64)) & 1) : 0; }

/// a * w as n + 1 words.
std::vector<u64> mul_word(const std::vector<u64>& a, u64 w);
/// a / d (same length), remainder in *rem.
std::vector<u64> div_word(const std::vector<u64>& a, u64 d, u64* rem);
/// a mod m.
u64 mod_word(const u64* a, std::size_t n, const Modulus& m);
/// floor(log2(a)) + 1 (0 for a = 0).
int bit_length(const u64* a, std::size_t n);
/// Digits of a in base 2^52, `count` of them (zeros past the end).
std::vector<u64> digits52(const std::vector<u64>& a, std::size_t count);
/// 2^(width) - a mod 2^width, as words (width a multiple of 64 or not).
std::vector<u64> neg_mod_pow2(const std::vector<u64>& a, int width);

/// The value a mod 2^bits read as a signed integer in [-2^(bits-1), 2^(bits-1)), as the nearest double
/// (correctly rounded for |a| < 2^1023).
double to_double_centered(const u64* a, int bits);
/// round(x) mod 2^bits into n = words_for_bits(bits) words (two's complement for x < 0). x must be finite.
void from_double(u64* out, int bits, double x);

/// out = round(a / 2^s) mod 2^out_bits, for a < 2^(64 n), s >= 0, ties to even: an exact half (the low s bits
/// are 10...0, as after a product by a power of two) rounds without a bias, which the canonical embedding would
/// amplify by ~N.
void shift_right_round(u64* out, int out_bits, const u64* a, std::size_t n, int s);

}  // namespace ember::heaan::bigint
