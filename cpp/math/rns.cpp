#include "math/rns.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "math/cpu_features.hpp"
#include "math/vec_simd.hpp"

namespace ember {

BaseConverter::BaseConverter(std::vector<Modulus> from, std::vector<Modulus> to) : from_(std::move(from)), to_(std::move(to)) {
    const std::size_t k = from_.size(), m = to_.size();
    if (k == 0) throw std::invalid_argument("BaseConverter: empty source basis");
    qhat_inv.resize(k);
    for (std::size_t i = 0; i < k; ++i) {
        const Modulus& qi = from_[i];
        u64 prod = 1;
        for (std::size_t l = 0; l < k; ++l) if (l != i) prod = qi.mul(prod, from_[l].q % qi.q);
        qhat_inv[i] = MulConst(qi.inv(prod), qi);
    }
    qhat_mod_p.assign(m, std::vector<u64>(k));
    for (std::size_t j = 0; j < m; ++j) {
        const Modulus& pj = to_[j];
        for (std::size_t i = 0; i < k; ++i) {
            u64 prod = 1;
            for (std::size_t l = 0; l < k; ++l) if (l != i) prod = pj.mul(prod, from_[l].q % pj.q);
            qhat_mod_p[j][i] = prod;
        }
    }
    q_mod_p.resize(m);
    for (std::size_t j = 0; j < m; ++j) {
        u64 prod = 1;
        for (std::size_t l = 0; l < k; ++l) prod = to_[j].mul(prod, from_[l].q % to_[j].q);
        q_mod_p[j] = prod;
    }
    inv_q.resize(k);
    for (std::size_t i = 0; i < k; ++i) inv_q[i] = 1.0 / static_cast<double>(from_[i].q);
}

void BaseConverter::convert_reference(const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered) const {
    const std::size_t k = from_.size(), m = to_.size();
    std::vector<u64> y(k);
    for (std::size_t c = begin; c < end; ++c) {
        double frac = 0;
        for (std::size_t i = 0; i < k; ++i) {
            y[i] = from_[i].mul(in[i][c], qhat_inv[i].w);
            frac += static_cast<double>(y[i]) * inv_q[i];
        }
        const u64 v = centered ? static_cast<u64>(std::llround(frac)) : 0;
        for (std::size_t j = 0; j < m; ++j) {
            u64 acc = 0;
            for (std::size_t i = 0; i < k; ++i) acc = to_[j].add(acc, to_[j].mul(y[i] % to_[j].q, qhat_mod_p[j][i]));
            out[j][c] = to_[j].sub(acc, to_[j].mul(v, q_mod_p[j]));
        }
    }
}

namespace {
/// The plain conversion from one prime q: Q~ = 1, so y = x and the output is x mod p_j, with no product to form. So
/// a digit of one prime (dnum = number of Q primes, SEAL's choice) costs a copy or a subtraction per coefficient.
void convert_one_prime(const Modulus& q, const std::vector<Modulus>& to, const u64* x, u64* const* out, std::size_t begin,
                       std::size_t end) {
    for (std::size_t j = 0; j < to.size(); ++j) {
        const u64 p = to[j].q;
        u64* o = out[j];
        if (q.q <= p) {
            std::copy(x + begin, x + end, o + begin);
        } else if (q.q <= 2 * p) {
            for (std::size_t c = begin; c < end; ++c) o[c] = x[c] >= p ? x[c] - p : x[c];
        } else {  // Barrett: floor(x floor(2^64 / p) / 2^64) is 0 or 1 below x / p for x < 2^64
            const u64 r = static_cast<u64>((static_cast<u128>(1) << 64) / p);
            for (std::size_t c = begin; c < end; ++c) {
                const u64 v = x[c] - mulhi64(x[c], r) * p;
                o[c] = v >= p ? v - p : v;
            }
        }
    }
}
}  // namespace

void BaseConverter::convert(const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered) const {
    if (begin >= end) return;
    if (from_.size() == 1 && !centered) return convert_one_prime(from_[0], to_, in[0], out, begin, end);
#if defined(__x86_64__)
    if (detail::base_convert_ifma_supported(*this)) return detail::base_convert_ifma(*this, in, out, begin, end, centered);
    if (detail::base_convert_avx2_supported(*this)) return detail::base_convert_avx2(*this, in, out, begin, end, centered);
#endif
    detail::base_convert_scalar(*this, in, out, begin, end, centered);
}

namespace detail {

namespace {

// Reduction of one output limb's 128-bit accumulator x <= xmax: a Barrett estimate with two multiplications,
// qhat = floor((x >> s) * mu / 2^64), mu = floor(2^(64+s) / p), when some s makes x >> s fit a word and keeps
// the estimate within 2 of the quotient (error < xmax / 2^(64+s) + 2^s / p); otherwise Modulus::reduce128.
struct TargetReduce {
    const Modulus* p = nullptr;
    u64 mu = 0;
    int s = 0;
    bool fast = false;

    TargetReduce(const Modulus& pm, u128 xmax) : p(&pm) {
        const u64 q = pm.q;
        if (q < 4 || (q & (q - 1)) == 0) return;
        int xbits = 0;  // bit length of xmax
        while (xbits < 128 && (xmax >> xbits) != 0) ++xbits;
        long double best = 2.0L;
        for (int t = std::max(1, xbits - 64); t <= pm.bits - 1; ++t) {  // 2^t < q keeps mu below 2^64
            const long double e = std::ldexp(static_cast<long double>(xmax), -(64 + t)) + std::ldexp(1.0L, t) / static_cast<long double>(q);
            if (e < best - 1e-6L) { best = e; s = t; fast = true; }
        }
        if (fast) mu = static_cast<u64>((u128(1) << (64 + s)) / q);
    }
    u64 reduce(u128 x) const { return fast ? reduce_fast(x) : p->reduce128(x); }
    u64 reduce_fast(u128 x) const {
        const u64 q = p->q;
        // x >> s with 1 <= s < 64 on the two words (no 128-bit variable shift)
        const u64 xl = static_cast<u64>(x), xh = static_cast<u64>(x >> 64);
        const u64 c1 = (xh << (64 - s)) | (xl >> s);
        return csub(csub(xl - mulhi64(c1, mu) * q, q), q);  // [0, 3q) -> [0, q)
    }
};

}  // namespace

// The predicates of the x86-64 kernels (math/rns_ifma.cpp, math/rns_avx2.cpp) live here, in a file built with the
// baseline flags: they run on every CPU before the check, so they must not be compiled with AVX-512 / AVX2 (an
// AddressSanitizer build gave the IFMA file's copy EVEX instructions in its prologue: SIGILL on an AVX2 CPU).
#if defined(__x86_64__)
bool base_convert_ifma_supported(const BaseConverter& conv) {
    const CpuFeatures& f = cpu_features();
    if (!f.use_ifma()) return false;
    if (conv.from().empty() || conv.from().size() > 64) return false;
    if (conv.qhat_inv.size() != conv.from().size() || conv.qhat_mod_p.size() != conv.to().size() ||
        conv.q_mod_p.size() != conv.to().size() || conv.inv_q.size() != conv.from().size())
        return false;
    auto ok = [](const Modulus& m) { return (m.q & 1) && m.q >= (u64(1) << 20) && m.q < (u64(1) << 61); };
    for (const Modulus& m : conv.from()) if (!ok(m)) return false;
    for (const Modulus& m : conv.to()) if (!ok(m)) return false;
    for (const auto& row : conv.qhat_mod_p) if (row.size() != conv.from().size()) return false;
    return true;
}

bool base_convert_avx2_supported(const BaseConverter& conv) {
    if (!cpu_features().use_avx2()) return false;
    const std::size_t k = conv.from().size(), m = conv.to().size();
    if (k == 0 || k > 63) return false;  // k > 63: the scalar kernel's fallback (convert_reference)
    if (conv.qhat_inv.size() != k || conv.qhat_mod_p.size() != m || conv.q_mod_p.size() != m || conv.inv_q.size() != k)
        return false;
    auto ok = [](const Modulus& q) { return q.q >= 2 && q.q < (u64(1) << 61); };
    for (const Modulus& q : conv.from()) if (!ok(q)) return false;
    for (const Modulus& q : conv.to()) if (!ok(q)) return false;
    for (const auto& row : conv.qhat_mod_p) if (row.size() != k) return false;
    return true;
}
#else
// The x86-64 kernels are not built elsewhere: the scalar one always runs.
bool base_convert_ifma_supported(const BaseConverter&) { return false; }
bool base_convert_avx2_supported(const BaseConverter&) { return false; }
#endif

void base_convert_scalar(const BaseConverter& conv, const u64* const* in, u64* const* out, std::size_t begin,
                         std::size_t end, bool centered) {
    const auto& from = conv.from();
    const auto& to = conv.to();
    const std::size_t k = from.size(), m = to.size();
    // Blocked: y_i = [x_i * Q~_i]_{q_i} for a block of coefficients, then 128-bit accumulations of y_i * [Q_i*]_p
    // for two output primes and two coefficients at a time (four products per two loads of y and two of the
    // constants, which are interleaved per pair of outputs). The centered correction -v * Q is folded in as one
    // more term v * (p - [Q]_p), so every output is one reduction of one accumulator.
    constexpr std::size_t B = 64;
    if (k > 63) { conv.convert_reference(in, out, begin, end, centered); return; }
    const std::size_t kt = centered ? k + 1 : k;  // terms per output (row k: v)
    const std::size_t mp = (m + 1) / 2;           // pairs of outputs (the last one padded with zero constants)
    alignas(64) u64 y[64 * B + 1];
    u64* v = y + k * B;
    std::vector<u64> cst(mp * 2 * kt, 0);  // [pair][i][0..1] = [Q_i*]_{p_j}; row k: p_j - [Q]_{p_j} (or 0)
    std::vector<TargetReduce> red;
    red.reserve(m);
    bool all_fast = true;
    for (std::size_t j = 0; j < m; ++j) {
        const u64 p = to[j].q;
        u64* c = cst.data() + (j / 2) * 2 * kt + (j & 1);
        u128 xmax = 0;
        for (std::size_t i = 0; i < k; ++i) {
            c[2 * i] = conv.qhat_mod_p[j][i];
            xmax += static_cast<u128>(from[i].q - 1) * conv.qhat_mod_p[j][i];
        }
        if (centered) {
            const u64 qm = conv.q_mod_p[j];
            c[2 * k] = qm ? p - qm : 0;
            xmax += static_cast<u128>(k) * (p - 1);  // v <= k (a sum of k fractions below 1, rounded)
        }
        red.emplace_back(to[j], xmax);
        all_fast = all_fast && red.back().fast;
    }
    auto kernel = [&](auto fast_tag) {
        constexpr bool kFast = decltype(fast_tag)::value;
        auto reduce = [&](std::size_t j, u128 x) { return kFast ? red[j].reduce_fast(x) : red[j].reduce(x); };
        for (std::size_t c0 = begin; c0 < end; c0 += B) {
            const std::size_t nb = std::min(B, end - c0);
            conv.scale_block(in, c0, nb, y, B, v, centered);
            for (std::size_t jp = 0; jp < mp; ++jp) {
                const std::size_t j0 = 2 * jp, j1 = j0 + 1;
                const bool has1 = j1 < m;
                const u64* cp = cst.data() + jp * 2 * kt;
                u64* d0 = out[j0] + c0;
                u64* d1 = has1 ? out[j1] + c0 : nullptr;
                for (std::size_t t = 0; t < nb; t += 2) {
                    u128 a00 = 0, a01 = 0, a10 = 0, a11 = 0;
                    const u64* yp = y + t;
                    for (std::size_t i = 0; i < kt; ++i) {
                        const u64 y0 = yp[i * B], y1 = yp[i * B + 1], ca = cp[2 * i], cb = cp[2 * i + 1];
                        a00 += static_cast<u128>(y0) * ca;
                        a01 += static_cast<u128>(y1) * ca;
                        a10 += static_cast<u128>(y0) * cb;
                        a11 += static_cast<u128>(y1) * cb;
                    }
                    const bool two = t + 1 < nb;
                    d0[t] = reduce(j0, a00);
                    if (two) d0[t + 1] = reduce(j0, a01);
                    if (has1) {
                        d1[t] = reduce(j1, a10);
                        if (two) d1[t + 1] = reduce(j1, a11);
                    }
                }
            }
        }
    };
    if (all_fast) kernel(std::true_type{});
    else kernel(std::false_type{});
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// CRT reconstruction with fixed-width word arrays.

namespace {
// out[0..w) = a[0..w) * b (returns carry word)
u64 mul_word(u64* out, const u64* a, u64 b, std::size_t w) {
    u64 carry = 0;
    for (std::size_t i = 0; i < w; ++i) {
        u128 t = static_cast<u128>(a[i]) * b + carry;
        out[i] = static_cast<u64>(t);
        carry = static_cast<u64>(t >> 64);
    }
    return carry;
}
// acc += a * b over w words (acc has w words; overflow ignored by caller's bounds)
void mul_add_word(u64* acc, const u64* a, u64 b, std::size_t w) {
    u64 carry = 0;
    for (std::size_t i = 0; i < w; ++i) {
        u128 t = static_cast<u128>(a[i]) * b + acc[i] + carry;
        acc[i] = static_cast<u64>(t);
        carry = static_cast<u64>(t >> 64);
    }
}
int cmp_words(const u64* a, const u64* b, std::size_t w) {
    for (std::size_t i = w; i-- > 0;) {
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}
void sub_words(u64* a, const u64* b, std::size_t w) {  // a -= b, a >= b
    u64 borrow = 0;
    for (std::size_t i = 0; i < w; ++i) {
        u128 t = static_cast<u128>(a[i]) - b[i] - borrow;
        a[i] = static_cast<u64>(t);
        borrow = static_cast<u64>(t >> 64) ? 1 : 0;
    }
}
}  // namespace

CrtReconstructor::CrtReconstructor(std::vector<Modulus> basis) : basis_(std::move(basis)) {
    const std::size_t k = basis_.size();
    if (k == 0) throw std::invalid_argument("CrtReconstructor: empty basis");
    words_ = k + 1;  // one spare word so that sums of k terms below k*Q never overflow
    Q_.assign(words_, 0);
    Q_[0] = 1;
    std::vector<u64> tmp(words_);
    for (std::size_t i = 0; i < k; ++i) { mul_word(tmp.data(), Q_.data(), basis_[i].q, words_); Q_ = tmp; }
    Qhalf_ = Q_;
    for (std::size_t i = 0; i < words_; ++i) Qhalf_[i] = (Q_[i] >> 1) | (i + 1 < words_ ? Q_[i + 1] << 63 : 0);
    Qstar_.assign(k, std::vector<u64>(words_, 0));
    qtilde_.resize(k);
    for (std::size_t i = 0; i < k; ++i) {
        std::vector<u64> s(words_, 0);
        s[0] = 1;
        u64 prod_mod = 1;
        for (std::size_t l = 0; l < k; ++l) {
            if (l == i) continue;
            mul_word(tmp.data(), s.data(), basis_[l].q, words_);
            s = tmp;
            prod_mod = basis_[i].mul(prod_mod, basis_[l].q % basis_[i].q);
        }
        Qstar_[i] = s;
        qtilde_[i] = MulConst(basis_[i].inv(prod_mod), basis_[i]);
    }
}

void CrtReconstructor::reconstruct(const u64* residues, u64* out) const {
    const std::size_t k = basis_.size();
    for (std::size_t w = 0; w < words_; ++w) out[w] = 0;
    for (std::size_t i = 0; i < k; ++i) {
        u64 y = mul_shoup(residues[i], qtilde_[i].w, qtilde_[i].wp, basis_[i].q);
        mul_add_word(out, Qstar_[i].data(), y, words_);
    }
    // sum < k * Q: subtract Q until below
    while (cmp_words(out, Q_.data(), words_) >= 0) sub_words(out, Q_.data(), words_);
}

double CrtReconstructor::to_double_centered(const u64* residues) const {
    u64 buf[2 * 80];
    std::vector<u64> heap;
    u64* x = buf;
    if (words_ > 80) { heap.resize(2 * words_); x = heap.data(); }
    u64* y = x + words_;
    reconstruct(residues, x);
    bool neg = cmp_words(x, Qhalf_.data(), words_) > 0;
    if (neg) {  // x <- Q - x
        for (std::size_t i = 0; i < words_; ++i) y[i] = Q_[i];
        sub_words(y, x, words_);
        x = y;
    }
    double v = 0;
    for (std::size_t i = words_; i-- > 0;) v = v * 18446744073709551616.0 + static_cast<double>(x[i]);
    return neg ? -v : v;
}

}  // namespace ember
