// NTT tables, the scalar reference transforms and the run-time dispatch to the vector kernels.
#include "math/ntt.hpp"

#include <cstdint>
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

    // Only where the AVX2 path is the process's path (the CPU's best, or EMBER_SIMD=avx2): on IFMA or AVX-512 CPUs
    // these primes take other kernels, and the path is fixed for the process.
    if (q < kIfmaBound && cpu_features().path == SimdPath::kAvx2) {
        const double qd = static_cast<double>(q);
        auto centered = [&](u64 w) { return static_cast<double>(w > q / 2 ? static_cast<std::int64_t>(w - q) : static_cast<std::int64_t>(w)); };
        auto fill = [&](const std::vector<u64>& w, std::vector<double>& wd, std::vector<double>& wq) {
            wd.resize(n);
            wq.resize(n);
            for (std::size_t i = 0; i < n; ++i) wd[i] = centered(w[i]), wq[i] = wd[i] / qd;
        };
        fill(psi_rev, psi_rev_fp, psi_rev_fpq);
        fill(ipsi_rev, ipsi_rev_fp, ipsi_rev_fpq);
        n_inv_fp = centered(n_inv), n_inv_fpq = n_inv_fp / qd;
        ipsi1_ninv_fp = centered(ipsi1_ninv), ipsi1_ninv_fpq = ipsi1_ninv_fp / qd;
    }

    if (n >= 64) {
        const bool ifma = q < kIfmaBound;
        const std::size_t groups = n / 16, quads = groups / 4;
        quad_fwd.resize(quads);
        quad_inv.resize(quads);
        if (ifma) {
            quad_fwd52.resize(quads);
            quad_inv52.resize(quads);
        }
        auto put = [&](std::size_t h, const std::vector<u64>& w, TailQuad& o64, TailQuad* o52) {
            for (int i = 0; i < 4; ++i) {
                const u64 a0 = w[groups + 4 * h + i];
                o64.a0[i] = a0, o64.a0p[i] = mod.shoup(a0);
                if (o52) o52->a0[i] = a0, o52->a0p[i] = shoup52(a0, q);
            }
            for (int j = 1; j <= 3; ++j) {
                const u64 c = w[(groups << j) + ((4 * h) << j)];
                o64.c[2 * j - 2] = c, o64.c[2 * j - 1] = mod.shoup(c);
                if (o52) o52->c[2 * j - 2] = c, o52->c[2 * j - 1] = shoup52(c, q);
            }
        };
        for (std::size_t h = 0; h < quads; ++h) {
            put(h, psi_rev, quad_fwd[h], ifma ? &quad_fwd52[h] : nullptr);
            put(h, ipsi_rev, quad_inv[h], ifma ? &quad_inv52[h] : nullptr);
        }
        auto econst = [&](const std::vector<u64>& w, TailConsts& o64, TailConsts* o52) {
            for (int j = 1; j <= 3; ++j) {
                const std::size_t m = groups << j;
                const u64 inv_wm = mod.inv(w[m]);
                for (int i = 0; i < 4; ++i) {
                    for (int lane = 0; lane < 8; ++lane) {
                        const std::size_t l = static_cast<std::size_t>(lane) & ((std::size_t(1) << j) - 1);
                        const u64 e = mod.mul(w[m + (static_cast<std::size_t>(i) << j) + l], inv_wm);
                        o64.w[j - 1][i][lane] = e, o64.wp[j - 1][i][lane] = mod.shoup(e);
                        if (o52) o52->w[j - 1][i][lane] = e, o52->wp[j - 1][i][lane] = shoup52(e, q);
                    }
                }
            }
        };
        econst(psi_rev, econst_fwd, ifma ? &econst_fwd52 : nullptr);
        econst(ipsi_rev, econst_inv, ifma ? &econst_inv52 : nullptr);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Scalar reference (the fast scalar transforms are in math/ntt_scalar.cpp). Cooley-Tukey (forward) /
// Gentleman-Sande (inverse) with Harvey's lazy butterflies, one radix-2 stage per sweep over the limb:
//   forward: X, Y in [0, 4q) -> X' = X mod 2q + W*Y mod q (lazy, [0, 4q)), Y' = X mod 2q - W*Y + 2q ([0, 4q));
//   inverse: X, Y in [0, 2q) -> X' = X + Y mod 2q ([0, 2q)),  Y' = W * (X - Y + 2q) (Shoup, [0, 2q)).
// 4q < 2^64 holds for every q < 2^61.

void ntt_forward_reference(u64* a, const NttTables& tb) {
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

void ntt_inverse_reference(u64* a, const NttTables& tb) {
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
    return cpu_features().use_ifma() && t.n != 0 && t.mod.q < kIfmaBound;
}

bool ntt_avx512_supported(const NttTables& t) {
    return cpu_features().use_avx512() && t.n != 0 && t.mod.q < kAvx512Bound;
}

bool ntt_avx2_supported(const NttTables& t) {
    return cpu_features().use_avx2() && t.n != 0 && t.mod.q < kAvx512Bound;
}

bool ntt_avx2_fma_supported(const NttTables& t) {
    return cpu_features().use_avx2() && t.n != 0 && !t.psi_rev_fp.empty();
}

}  // namespace detail

namespace {

enum class Path { kScalar, kAvx2, kAvx2Fma, kAvx512, kIfma };  // kAvx2Fma: the AVX2 path's double-precision kernels

// The x86-64 vector kernels exist only in x86-64 builds (CMake leaves their files out elsewhere).
#if defined(__x86_64__)
constexpr bool kX86Kernels = true;
#else
constexpr bool kX86Kernels = false;
#endif

constexpr std::size_t kMinVectorN = 16;  // the vector kernels fall back to the scalar code below this size

Path choose(const NttTables& t) {
    if (!kX86Kernels || t.n < kMinVectorN) return Path::kScalar;
    if (detail::ntt_ifma_supported(t)) return Path::kIfma;
    if (detail::ntt_avx512_supported(t)) return Path::kAvx512;
    if (detail::ntt_avx2_fma_supported(t)) return Path::kAvx2Fma;
    if (detail::ntt_avx2_supported(t)) return Path::kAvx2;
    return Path::kScalar;
}

}  // namespace

const char* ntt_path(const NttTables& t) {
    switch (choose(t)) {
        case Path::kIfma: return "ifma";
        case Path::kAvx512: return "avx512";
        case Path::kAvx2:
        case Path::kAvx2Fma: return "avx2";
        default: return "scalar";
    }
}

bool ntt_small_prime_path(const NttTables& t) {
    const Path p = choose(t);
    return p == Path::kIfma || p == Path::kAvx2Fma;
}

void ntt_forward(u64* a, const NttTables& t) { ntt_forward(a, t, nullptr, nullptr); }
void ntt_inverse(u64* a, const NttTables& t) { ntt_inverse(a, t, nullptr, nullptr); }

namespace detail {

NttPrefetch::NttPrefetch(const void* p, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t(63);
    cur_ = reinterpret_cast<const char*>(a);
    end_ = static_cast<const char*>(p) + bytes;
    lines_ = (reinterpret_cast<std::uintptr_t>(end_) - a + 63) / 64;
}

Twiddles pick_twiddles(const NttTables& t, bool inverse) {
    thread_local const NttTables* last[2] = {nullptr, nullptr};
    const NttTables*& l = last[inverse ? 1 : 0];
    const bool hot = l == &t;
    l = &t;
    return hot ? Twiddles::kFull : Twiddles::kCompact;
}

}  // namespace detail

namespace {

/// The dispatcher of ntt_forward (kInverse false) and ntt_inverse (true): the path choose() picks, the twiddle
/// layout pick_twiddles() picks, and the prefetch of the next limb when there is one.
template <bool kInverse>
void ntt_dispatch(u64* a, const NttTables& t, const u64* next, const NttTables* next_t) {
    const Path path = choose(t);
    if (path == Path::kScalar) {
        if constexpr (kInverse) ntt_inverse_scalar(a, t);
        else ntt_forward_scalar(a, t);
        return;
    }
    detail::NttPrefetch pf(next, next && next_t ? next_t->n * sizeof(u64) : 0);
    detail::NttPrefetch* ppf = next && next_t ? &pf : nullptr;
    const detail::Twiddles tw = detail::pick_twiddles(t, kInverse);
#if defined(__x86_64__)
    if constexpr (kInverse) {
        if (path == Path::kIfma) detail::ntt_inverse_ifma(a, t, ppf, tw);
        else if (path == Path::kAvx512) detail::ntt_inverse_avx512(a, t, ppf, tw);
        else if (path == Path::kAvx2Fma) detail::ntt_inverse_avx2_fma(a, t, ppf);
        else detail::ntt_inverse_avx2(a, t, ppf, tw);
    } else {
        if (path == Path::kIfma) detail::ntt_forward_ifma(a, t, ppf, tw);
        else if (path == Path::kAvx512) detail::ntt_forward_avx512(a, t, ppf, tw);
        else if (path == Path::kAvx2Fma) detail::ntt_forward_avx2_fma(a, t, ppf);
        else detail::ntt_forward_avx2(a, t, ppf, tw);
    }
#else
    (void)ppf, (void)tw;
#endif
}

}  // namespace

void ntt_forward(u64* a, const NttTables& t, const u64* next, const NttTables* next_t) { ntt_dispatch<false>(a, t, next, next_t); }

void ntt_inverse(u64* a, const NttTables& t, const u64* next, const NttTables* next_t) { ntt_dispatch<true>(a, t, next, next_t); }

std::uint64_t ntt_mod_mul_count(const NttTables& t, bool inverse) {
    const std::uint64_t n = t.n, butterflies = n / 2 * static_cast<std::uint64_t>(t.log_n);
    // every path, the scalar one included, merges the inverse's N^-1 into its last stage: N/2 products
    return inverse ? butterflies + n / 2 : butterflies;
}

}  // namespace ember
