#include "math/rns.hpp"

#include <cmath>
#include <stdexcept>

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

void BaseConverter::convert(const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered) const {
    const std::size_t k = from_.size(), m = to_.size();
    // Blocked: y_i = [x_i * Q~_i]_{q_i} for a block of coefficients, then for each output prime a
    // 128-bit accumulation of y_i * [Q_i*]_p (each product < 2^122, up to 64 terms fit before reducing).
    constexpr std::size_t B = 64;
    u64 y[64 * B];
    u64 v[B];
    if (k > 64) { convert_reference(in, out, begin, end, centered); return; }
    for (std::size_t c0 = begin; c0 < end; c0 += B) {
        const std::size_t nb = std::min(B, end - c0);
        for (std::size_t i = 0; i < k; ++i) {
            const u64 q = from_[i].q, w = qhat_inv[i].w, wp = qhat_inv[i].wp;
            const u64* src = in[i] + c0;
            u64* dst = y + i * B;
            for (std::size_t t = 0; t < nb; ++t) dst[t] = mul_shoup(src[t], w, wp, q);
        }
        if (centered) {
            for (std::size_t t = 0; t < nb; ++t) {
                double frac = 0;
                for (std::size_t i = 0; i < k; ++i) frac += static_cast<double>(y[i * B + t]) * inv_q[i];
                v[t] = static_cast<u64>(std::llround(frac));
            }
        }
        for (std::size_t j = 0; j < m; ++j) {
            const Modulus& p = to_[j];
            const u64* row = qhat_mod_p[j].data();
            u64* dst = out[j] + c0;
            for (std::size_t t = 0; t < nb; ++t) {
                u128 acc = 0;
                for (std::size_t i = 0; i < k; ++i) acc += static_cast<u128>(y[i * B + t]) * row[i];
                dst[t] = p.reduce128(acc);
            }
            if (centered) {
                const u64 qm = q_mod_p[j];
                for (std::size_t t = 0; t < nb; ++t) dst[t] = p.sub(dst[t], p.mul(v[t], qm));
            }
        }
    }
}

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
