#include "heaan/bigint.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace ember::heaan::bigint {

std::vector<u64> mul_word(const std::vector<u64>& a, u64 w) {
    std::vector<u64> out(a.size() + 1, 0);
    u64 carry = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const u128 p = static_cast<u128>(a[i]) * w + carry;
        out[i] = static_cast<u64>(p);
        carry = static_cast<u64>(p >> 64);
    }
    out[a.size()] = carry;
    return out;
}

std::vector<u64> div_word(const std::vector<u64>& a, u64 d, u64* rem) {
    if (d == 0) throw std::invalid_argument("bigint::div_word: division by zero");
    std::vector<u64> out(a.size(), 0);
    u128 r = 0;
    for (std::size_t i = a.size(); i-- > 0;) {
        const u128 cur = (r << 64) | a[i];
        out[i] = static_cast<u64>(cur / d);
        r = cur % d;
    }
    if (rem) *rem = static_cast<u64>(r);
    return out;
}

u64 mod_word(const u64* a, std::size_t n, const Modulus& m) {
    u64 r = 0;
    for (std::size_t i = n; i-- > 0;) r = m.reduce128((static_cast<u128>(r) << 64) | a[i]);
    return r;
}

int bit_length(const u64* a, std::size_t n) {
    for (std::size_t i = n; i-- > 0;)
        if (a[i]) return static_cast<int>(64 * i) + 64 - __builtin_clzll(a[i]);
    return 0;
}

std::vector<u64> digits52(const std::vector<u64>& a, std::size_t count) {
    std::vector<u64> d(count, 0);
    const std::size_t n = a.size();
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t b = 52 * k, w = b / 64, off = b % 64;
        if (w >= n) break;
        u64 v = a[w] >> off;
        if (off > 12 && w + 1 < n) v |= a[w + 1] << (64 - off);
        d[k] = v & ((u64(1) << 52) - 1);
    }
    return d;
}

std::vector<u64> neg_mod_pow2(const std::vector<u64>& a, int width) {
    std::vector<u64> out(words_for_bits(width), 0);
    std::vector<u64> src(out.size(), 0);
    for (std::size_t i = 0; i < std::min(a.size(), src.size()); ++i) src[i] = a[i];
    neg(out.data(), src.data(), out.size());
    mask_bits(out.data(), out.size(), width);
    return out;
}

double to_double_centered(const u64* a, int bits) {
    const std::size_t n = words_for_bits(bits);
    const bool negative = bit(a, n, static_cast<std::size_t>(bits - 1)) != 0;
    u64 buf[80];
    std::vector<u64> big;
    u64* mag = buf;
    if (n > 80) { big.resize(n); mag = big.data(); }
    std::memcpy(mag, a, n * sizeof(u64));
    if (negative) {
        neg(mag, mag, n);
        mask_bits(mag, n, bits);
    }
    const int len = bit_length(mag, n);
    if (len == 0) return 0.0;
    // the top 128 bits, then scaled
    const int shift = std::max(0, len - 128);
    const std::size_t w = static_cast<std::size_t>(shift) / 64;
    const int off = shift % 64;
    auto word = [&](std::size_t i) { return i < n ? mag[i] : u64(0); };
    u64 lo = word(w), hi = word(w + 1);
    if (off) {
        lo = (lo >> off) | (hi << (64 - off));
        hi = (hi >> off) | (word(w + 2) << (64 - off));
    }
    const double r = std::ldexp(std::ldexp(static_cast<double>(hi), 64) + static_cast<double>(lo), shift);
    return negative ? -r : r;
}

void from_double(u64* out, int bits, double x) {
    const std::size_t n = words_for_bits(bits);
    std::memset(out, 0, n * sizeof(u64));
    if (!std::isfinite(x)) throw std::invalid_argument("heaan encode: value is not finite");
    const double r = std::round(x);
    const double mag = std::fabs(r);
    if (mag < 9.2e18) {
        out[0] = static_cast<u64>(mag);
    } else {
        int e = 0;
        const double m = std::frexp(mag, &e);  // mag = m 2^e, m in [0.5, 1)
        const u64 mi = static_cast<u64>(std::ldexp(m, 53));
        const int sh = e - 53;  // > 0 here
        const std::size_t w = static_cast<std::size_t>(sh) / 64;
        const int off = sh % 64;
        if (w < n) out[w] = mi << off;
        if (off && w + 1 < n) out[w + 1] = mi >> (64 - off);
    }
    if (r < 0) neg(out, out, n);
    mask_bits(out, n, bits);
}

void shift_right_round(u64* out, int out_bits, const u64* a, std::size_t n, int s) {
    const std::size_t on = words_for_bits(out_bits);
    constexpr std::size_t kStack = 192;
    u64 tbuf[kStack], cbuf[kStack];
    std::vector<u64> theap, cheap;
    u64* t = tbuf;
    u64* c = cbuf;
    if (n + 1 > kStack) {
        theap.resize(n + 1);
        cheap.resize(n + 1);
        t = theap.data();
        c = cheap.data();
    }
    std::memcpy(t, a, n * sizeof(u64));
    t[n] = 0;
    if (s > 0) {
        // + 2^(s-1) - 1 + (bit s of a): round half to even
        std::memset(c, 0, (n + 1) * sizeof(u64));
        const std::size_t full = static_cast<std::size_t>(s - 1) / 64;
        for (std::size_t w = 0; w < full && w <= n; ++w) c[w] = ~u64(0);
        if (full <= n && (s - 1) % 64) c[full] = (u64(1) << ((s - 1) % 64)) - 1;
        if (bit(a, n, static_cast<std::size_t>(s))) {  // + 1
            for (std::size_t w = 0; w <= n; ++w)
                if (++c[w] != 0) break;
        }
        add(t, t, c, n + 1);
    }
    const std::size_t ws = static_cast<std::size_t>(s) / 64;
    const int off = s % 64;
    for (std::size_t i = 0; i < on; ++i) {
        const std::size_t src = ws + i;
        u64 v = src <= n ? t[src] >> off : 0;
        if (off && src + 1 <= n) v |= t[src + 1] << (64 - off);
        out[i] = v;
    }
    mask_bits(out, on, out_bits);
}

}  // namespace ember::heaan::bigint
