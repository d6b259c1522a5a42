#include "ckks/encoder.hpp"

#include "util/errors.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace ember {

namespace {
void bit_reverse(std::vector<cplx>& v) {
    const std::size_t n = v.size();
    for (std::size_t i = 1, j = 0; i < n; ++i) {
        std::size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(v[i], v[j]);
    }
}
bool pow2(std::size_t x) { return x && !(x & (x - 1)); }
}  // namespace

Encoder::Encoder(std::size_t n) : n_(n) {
    if (!pow2(n) || n < 4) fail("Encoder", "N must be a power of two >= 4");
    const std::size_t m = 2 * n;
    ksi_.resize(m + 1);
    for (std::size_t k = 0; k <= m; ++k) {
        const double a = 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(m);
        ksi_[k] = cplx(std::cos(a), std::sin(a));
    }
    rot_group_.resize(n / 2);
    std::size_t g = 1;
    for (std::size_t j = 0; j < n / 2; ++j) { rot_group_[j] = g; g = g * 5 % m; }
}

void Encoder::fft_special(std::vector<cplx>& vals) const {
    const std::size_t size = vals.size(), m = 2 * n_;
    bit_reverse(vals);
    for (std::size_t len = 2; len <= size; len <<= 1) {
        const std::size_t lenh = len >> 1, lenq = len << 2, gap = m / lenq;
        for (std::size_t i = 0; i < size; i += len) {
            for (std::size_t j = 0; j < lenh; ++j) {
                const std::size_t idx = (rot_group_[j] % lenq) * gap;
                cplx u = vals[i + j];
                cplx v = vals[i + j + lenh] * ksi_[idx];
                vals[i + j] = u + v;
                vals[i + j + lenh] = u - v;
            }
        }
    }
}

void Encoder::fft_special_inv(std::vector<cplx>& vals) const {
    const std::size_t size = vals.size(), m = 2 * n_;
    for (std::size_t len = size; len >= 2; len >>= 1) {
        const std::size_t lenh = len >> 1, lenq = len << 2, gap = m / lenq;
        for (std::size_t i = 0; i < size; i += len) {
            for (std::size_t j = 0; j < lenh; ++j) {
                const std::size_t idx = (lenq - (rot_group_[j] % lenq)) * gap;
                cplx u = vals[i + j] + vals[i + j + lenh];
                cplx v = (vals[i + j] - vals[i + j + lenh]) * ksi_[idx];
                vals[i + j] = u;
                vals[i + j + lenh] = v;
            }
        }
    }
    bit_reverse(vals);
    const double inv = 1.0 / static_cast<double>(size);
    for (auto& v : vals) v *= inv;
}

u64 Encoder::residue_of(double x, const Modulus& q) {
    if (std::fabs(x) < 9.2e18) return q.from_signed(static_cast<std::int64_t>(x));
    if (!std::isfinite(x)) fail("encode", "value is not finite");
    int exp = 0;
    double mant = std::frexp(std::fabs(x), &exp);  // |x| = mant * 2^exp, mant in [0.5, 1)
    const std::int64_t mi = static_cast<std::int64_t>(std::ldexp(mant, 53));
    u64 r = q.mul(q.from_signed(mi), q.pow(2, static_cast<u64>(exp - 53)));
    return x < 0 ? q.neg(r) : r;
}

Poly Encoder::encode(const std::shared_ptr<const RingContext>& ring, std::span<const cplx> z, double scale, std::size_t q_limbs,
                     Basis basis) const {
    const std::size_t slots = z.size();
    if (!pow2(slots) || slots > n_ / 2)
        fail("encode", "the slot count must be a power of two in [1, N/2 = " + std::to_string(n_ / 2) + "], got " + std::to_string(slots));
    if (!(scale > 0) || !std::isfinite(scale)) fail("encode", "scale must be positive and finite");
    std::vector<cplx> w(z.begin(), z.end());
    double max_abs = 0;
    for (const auto& v : w) {
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) fail("encode", "input contains NaN or infinity");
        max_abs = std::max(max_abs, std::abs(v));
    }
    // Every coefficient is at most max |x| times the scale (the coefficients are averages of the slots), so
    // the plaintext is representable when max |x| * scale < Q / 2 over its primes; beyond it the residues
    // wrap and the ciphertext would decrypt to garbage.
    double log_q = 0;
    for (std::size_t i = 0; i < q_limbs; ++i) log_q += std::log2(static_cast<double>(ring->mod(i).q));
    if (basis == Basis::QP)
        for (std::size_t j = 0; j < ring->p_count(); ++j) log_q += std::log2(static_cast<double>(ring->mod(ring->q_count() + j).q));
    if (max_abs > 0 && std::log2(max_abs) + std::log2(scale) >= log_q - 1) {
        char buf[320];
        std::snprintf(buf, sizeof buf,
                      "the largest value, |x| = %.6g, times the scale %s is 2^%.2f, beyond the modulus bound Q/2 = 2^%.2f of "
                      "these %zu primes (level %zu); scale the values down, or encode at a higher level or a smaller scale",
                      max_abs, scale_str(scale).c_str(), std::log2(max_abs) + std::log2(scale), log_q - 1, q_limbs, q_limbs - 1);
        fail("encode", buf);
    }
    fft_special_inv(w);
    const std::size_t gap = n_ / (2 * slots);
    Poly p(ring, q_limbs, basis, Form::Coeff);
    // Each rounded value is m * 2^e with |m| < 2^53 (e = 0 below 2^63): its residues are m * (2^e mod q),
    // with 2^e mod q computed once per limb and exponent (large scales, e.g. linear-transform
    // plaintexts at 2^60 and more, would otherwise cost a modular power per value and limb).
    struct Split {
        std::int64_t m;
        int e;
    };
    std::vector<Split> parts(2 * slots);
    int emax = 0;
    for (std::size_t k = 0; k < 2 * slots; ++k) {
        const double v = std::round((k < slots ? w[k].real() : w[k - slots].imag()) * scale);
        if (std::fabs(v) >= 0x1.0p1000) fail("encode", "value * scale is too large");
        if (std::fabs(v) < 9.2e18) {
            parts[k] = {static_cast<std::int64_t>(v), 0};
        } else {
            int exp = 0;
            const double mant = std::frexp(v, &exp);  // v = mant * 2^exp, |mant| in [0.5, 1)
            parts[k] = {static_cast<std::int64_t>(std::ldexp(mant, 53)), exp - 53};
            emax = std::max(emax, exp - 53);
        }
    }
    HostLimbs ph = p.host(0, SIZE_MAX, /*fetch=*/false);  // p is zero: only the used coefficients are written
    for (std::size_t i = 0; i < p.limbs(); ++i) {
        const Modulus& q = p.table(i).mod;
        std::vector<u64> pow2(static_cast<std::size_t>(emax) + 1);
        pow2[0] = 1;
        for (std::size_t e = 1; e < pow2.size(); ++e) pow2[e] = q.add(pow2[e - 1], pow2[e - 1]);
        u64* d = ph.limb(i);
        for (std::size_t k = 0; k < 2 * slots; ++k) {
            const u64 r = q.from_signed(parts[k].m);
            d[k * gap] = parts[k].e == 0 ? r : q.mul(r, pow2[static_cast<std::size_t>(parts[k].e)]);
        }
    }
    ph.commit();
    poly_to_eval(p);
    return p;
}

std::vector<cplx> Encoder::decode(const Poly& p_in, double scale, std::size_t slots) const {
    if (!pow2(slots) || slots > n_ / 2) fail("decode", "bad slot count " + std::to_string(slots));
    if (p_in.basis() != Basis::Q) fail("decode", "polynomial must be over Q");
    Poly p(p_in);
    poly_to_coeff(p);
    std::vector<Modulus> basis;
    for (std::size_t i = 0; i < p.q_limbs(); ++i) basis.push_back(p.table(i).mod);
    CrtReconstructor crt(basis);
    const std::size_t gap = n_ / (2 * slots), L = p.q_limbs();
    std::vector<cplx> w(slots);
    std::vector<u64> res(L);
    const HostLimbs ph = std::as_const(p).host(0, L);
    auto coeff = [&](std::size_t idx) {
        for (std::size_t i = 0; i < L; ++i) res[i] = ph.limb(i)[idx];
        return crt.to_double_centered(res.data());
    };
    for (std::size_t k = 0; k < slots; ++k) w[k] = cplx(coeff(k * gap) / scale, coeff((k + slots) * gap) / scale);
    fft_special(w);
    return w;
}

}  // namespace ember
