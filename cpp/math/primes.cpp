#include "math/primes.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ember {

bool is_prime(u64 n) {
    if (n < 2) return false;
    for (u64 p : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
        if (n % p == 0) return n == p;
    }
    u64 d = n - 1;
    int s = 0;
    while ((d & 1) == 0) { d >>= 1; ++s; }
    auto mulmod = [n](u64 a, u64 b) { return static_cast<u64>(static_cast<u128>(a) * b % n); };
    auto powmod = [&](u64 a, u64 e) {
        u64 r = 1;
        while (e) { if (e & 1) r = mulmod(r, a); a = mulmod(a, a); e >>= 1; }
        return r;
    };
    // These bases are a deterministic witness set for all n < 2^64.
    for (u64 a : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
        u64 x = powmod(a % n, d);
        if (x == 1 || x == n - 1) continue;
        bool composite = true;
        for (int r = 1; r < s; ++r) {
            x = mulmod(x, x);
            if (x == n - 1) { composite = false; break; }
        }
        if (composite) return false;
    }
    return true;
}

std::vector<u64> ntt_primes_near(int bits, std::size_t count, u64 two_n, const std::vector<u64>& exclude,
                                 bool both_sides) {
    if (bits < 10 || bits > 61) throw std::invalid_argument("ntt_primes_near: bits must be in [10, 61], got " + std::to_string(bits));
    if (two_n == 0 || (two_n & (two_n - 1)) != 0) throw std::invalid_argument("ntt_primes_near: 2N must be a power of two");
    const u64 center = u64(1) << bits;
    const u64 top = both_sides ? (bits == 61 ? (u64(1) << 61) - 1 : center << 1) : center;
    std::vector<u64> out;
    auto ok = [&](u64 c) {
        return c > two_n && c < (u64(1) << 61) && std::find(exclude.begin(), exclude.end(), c) == exclude.end() &&
               std::find(out.begin(), out.end(), c) == out.end() && is_prime(c);
    };
    // candidates c = center +/- k * 2N + 1 walk outward from 2^bits
    u64 k_max = (center >> 1) / two_n;
    for (u64 k = 0; k < k_max && out.size() < count; ++k) {
        u64 below = center - (k + 1) * two_n + 1;
        u64 above = center + k * two_n + 1;
        // the nearer one first
        if (both_sides && above < top && above - center <= center - below) {
            if (ok(above) && out.size() < count) out.push_back(above);
            if (ok(below) && out.size() < count) out.push_back(below);
        } else {
            if (ok(below) && out.size() < count) out.push_back(below);
            if (both_sides && above < top && ok(above) && out.size() < count) out.push_back(above);
        }
    }
    if (out.size() < count)
        throw std::runtime_error("ntt_primes_near: only " + std::to_string(out.size()) + " primes of " + std::to_string(bits) +
                                 " bits are = 1 mod " + std::to_string(two_n) + ", " + std::to_string(count) + " needed");
    return out;
}

u64 root_of_unity(u64 order, u64 q) {
    if (order < 2 || (order & (order - 1)) != 0) throw std::invalid_argument("root_of_unity: order must be a power of two >= 2");
    if ((q - 1) % order != 0) throw std::invalid_argument("root_of_unity: order does not divide q - 1");
    Modulus m(q);
    // w = x^((q-1)/order) has order exactly `order` iff w^(order/2) = -1.
    u64 w = 0;
    for (u64 x = 2; x < q; ++x) {
        u64 c = m.pow(x, (q - 1) / order);
        if (m.pow(c, order / 2) == q - 1) { w = c; break; }
    }
    // the smallest primitive root among the odd powers of w, so that tables do not depend on the search
    u64 best = w, x = w, w2 = m.mul(w, w);
    for (u64 i = 1; i < order; i += 2) {
        if (x < best) best = x;
        x = m.mul(x, w2);
    }
    return best;
}

}  // namespace ember
