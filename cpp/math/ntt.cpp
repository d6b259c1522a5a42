// NTT tables, the scalar reference transforms and the run-time dispatch to the vector kernels.
#include "math/ntt.hpp"

#include <cstring>

#include <stdexcept>
#include <string>

#include "math/cpu_features.hpp"
#include "math/ntt_simd.hpp"
#include "math/primes.hpp"

namespace ember {

namespace {

constexpr std::size_t kMaxN = std::size_t(1) << 17;
constexpr u64 kIfmaBound = u64(1) << 50;    // 4q < 2^52: the IFMA multiplier lanes are 52 bits wide
constexpr u64 kAvx512Bound = u64(1) << 61;  // every modulus Ember accepts

u64 bit_reverse(u64 x, int bits) {
    u64 r = 0;
    for (int i = 0; i < bits; ++i) { r = (r << 1) | (x & 1); x >>= 1; }
    return r;
}

/// floor(w * 2^52 / q) for w < q < 2^50.
u64 shoup52(u64 w, u64 q) { return static_cast<u64>((static_cast<u128>(w) << 52) / q); }

}  // namespace

NttTables::NttTables(std::size_t n_, const Modulus& q_) {
    if (n_ < 2 || n_ > kMaxN || (n_ & (n_ - 1)) != 0)
        throw std::invalid_argument("NttTables: n must be a power of two in [2, 2^17], got " + std::to_string(n_));
    const u64 q = q_.q;
    if (q < 3 || q >= kAvx512Bound)
        throw std::invalid_argument("NttTables: q must be a prime below 2^61, got " + std::to_string(q));
    if (!is_prime(q)) throw std::invalid_argument("NttTables: q must be prime, got " + std::to_string(q));
    if ((q - 1) % (2 * n_) != 0)
        throw std::invalid_argument("NttTables: q must be 1 mod 2n (2n = " + std::to_string(2 * n_) + "), got q = " +
                                    std::to_string(q));

    n = n_;
    log_n = __builtin_ctzll(n_);
    mod = q_;
    psi = root_of_unity(2 * n, q);
    const u64 psi_inv = mod.inv(psi);

    psi_rev.resize(n);
    psi_rev_shoup.resize(n);
    ipsi_rev.resize(n);
    ipsi_rev_shoup.resize(n);
    // powers in natural order, then scattered to bit-reversed positions
    u64 p = 1, ip = 1;
    for (std::size_t i = 0; i < n; ++i) {
        const u64 r = bit_reverse(i, log_n);
        psi_rev[r] = p;
        ipsi_rev[r] = ip;
        p = mod.mul(p, psi);
        ip = mod.mul(ip, psi_inv);
    }
    for (std::size_t i = 0; i < n; ++i) {
        psi_rev_shoup[i] = mod.shoup(psi_rev[i]);
        ipsi_rev_shoup[i] = mod.shoup(ipsi_rev[i]);
    }
    n_inv = mod.inv(n % q);
    n_inv_shoup = mod.shoup(n_inv);
    ipsi1_ninv = mod.mul(ipsi_rev[1], n_inv);  // n >= 2
    ipsi1_ninv_shoup = mod.shoup(ipsi1_ninv);

    if (q < kIfmaBound) {
        psi_rev_shoup52.resize(n);
        ipsi_rev_shoup52.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            psi_rev_shoup52[i] = shoup52(psi_rev[i], q);
            ipsi_rev_shoup52[i] = shoup52(ipsi_rev[i], q);
        }
        n_inv_shoup52 = shoup52(n_inv, q);
        ipsi1_ninv_shoup52 = shoup52(ipsi1_ninv, q);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Scalar reference. Cooley-Tukey (forward) / Gentleman-Sande (inverse) with Harvey's lazy butterflies:
//   forward: X, Y in [0, 4q) -> X' = X mod 2q + W*Y mod q (lazy, [0, 4q)), Y' = X mod 2q - W*Y + 2q ([0, 4q));
//   inverse: X, Y in [0, 2q) -> X' = X + Y mod 2q ([0, 2q)),  Y' = W * (X - Y + 2q) (Shoup, [0, 2q)).
// 4q < 2^64 holds for every q < 2^61.

void ntt_forward_scalar(u64* a, const NttTables& tb) {
    const std::size_t n = tb.n;
    const u64 q = tb.mod.q, q2 = 2 * q;
    const u64* w = tb.psi_rev.data();
    const u64* wp = tb.psi_rev_shoup.data();
    for (std::size_t m = 1, t = n >> 1; m < n; m <<= 1, t >>= 1) {
        for (std::size_t i = 0; i < m; ++i) {
            const u64 W = w[m + i], Wp = wp[m + i];
            u64* x = a + 2 * i * t;
            u64* y = x + t;
            for (std::size_t j = 0; j < t; ++j) {
                u64 u = x[j];
                if (u >= q2) u -= q2;
                const u64 v = mul_shoup_lazy(y[j], W, Wp, q);
                x[j] = u + v;
                y[j] = u - v + q2;
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        u64 u = a[i];
        if (u >= q2) u -= q2;
        if (u >= q) u -= q;
        a[i] = u;
    }
}

void ntt_inverse_scalar(u64* a, const NttTables& tb) {
    const std::size_t n = tb.n;
    const u64 q = tb.mod.q, q2 = 2 * q;
    const u64* w = tb.ipsi_rev.data();
    const u64* wp = tb.ipsi_rev_shoup.data();
    for (std::size_t m = n >> 1, t = 1; m >= 1; m >>= 1, t <<= 1) {
        for (std::size_t i = 0; i < m; ++i) {
            const u64 W = w[m + i], Wp = wp[m + i];
            u64* x = a + 2 * i * t;
            u64* y = x + t;
            for (std::size_t j = 0; j < t; ++j) {
                const u64 u = x[j], v = y[j];
                u64 s = u + v;
                if (s >= q2) s -= q2;
                x[j] = s;
                y[j] = mul_shoup_lazy(u - v + q2, W, Wp, q);
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) a[i] = mul_shoup(a[i], tb.n_inv, tb.n_inv_shoup, q);
}

// ---------------------------------------------------------------------------------------------------------------
// Dispatch.

namespace detail {

bool ntt_ifma_supported(const NttTables& t) {
    const CpuFeatures& f = cpu_features();
    return f.avx512f && f.avx512dq && f.avx512vl && f.avx512ifma && t.n != 0 && t.mod.q < kIfmaBound;
}

bool ntt_avx512_supported(const NttTables& t) {
    const CpuFeatures& f = cpu_features();
    return f.avx512f && f.avx512dq && f.avx512vl && t.n != 0 && t.mod.q < kAvx512Bound;
}

}  // namespace detail

namespace {

enum class Path { kScalar, kAvx512, kIfma };

constexpr std::size_t kMinVectorN = 16;  // the vector kernels fall back to the scalar code below this size

Path choose(const NttTables& t) {
    if (t.n < kMinVectorN) return Path::kScalar;
    if (detail::ntt_ifma_supported(t)) return Path::kIfma;
    if (detail::ntt_avx512_supported(t)) return Path::kAvx512;
    return Path::kScalar;
}

}  // namespace

const char* ntt_path(const NttTables& t) {
    switch (choose(t)) {
        case Path::kIfma: return "ifma";
        case Path::kAvx512: return "avx512";
        default: return "scalar";
    }
}

void ntt_forward(u64* a, const NttTables& t) {
    switch (choose(t)) {
        case Path::kIfma: detail::ntt_forward_ifma(a, t); break;
        case Path::kAvx512: detail::ntt_forward_avx512(a, t); break;
        default: ntt_forward_scalar(a, t); break;
    }
}

void ntt_inverse(u64* a, const NttTables& t) {
    switch (choose(t)) {
        case Path::kIfma: detail::ntt_inverse_ifma(a, t); break;
        case Path::kAvx512: detail::ntt_inverse_avx512(a, t); break;
        default: ntt_inverse_scalar(a, t); break;
    }
}

std::uint64_t ntt_mod_mul_count(const NttTables& t, bool inverse) {
    const std::uint64_t n = t.n, butterflies = n / 2 * static_cast<std::uint64_t>(t.log_n);
    if (!inverse) return butterflies;
    return butterflies + (std::strcmp(ntt_path(t), "scalar") == 0 ? n : n / 2);
}

}  // namespace ember
