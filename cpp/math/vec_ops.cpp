#include "math/vec_ops.hpp"

#include <algorithm>

#include "math/cpu_features.hpp"
#include "math/vec_simd.hpp"

namespace ember {

namespace detail {

bool vec_avx2_supported() {
    return cpu_features().use_avx2();
}

bool vec_avx512_supported() {
    return cpu_features().use_avx512();
}

bool vec_ifma_supported(const Modulus& m) {
    return cpu_features().use_ifma() && m.q >= 3 && m.q < (u64(1) << 50) &&
           (m.q & (m.q - 1)) != 0;
}

Barrett64::Barrett64(const Modulus& m) : q(m.q) {
    // mu_hi:mu_lo = floor((2^128 - 1) / q), which is floor(2^128 / q) unless q is a power of two.
    if (q < 4 || (q & (q - 1)) == 0) return;
    s = m.bits - 2;  // >= 1
    mu = (m.mu_hi << s) | (m.mu_lo >> (64 - s));  // floor(2^(64+s) / q) < 2^64 since 2^s < q
    ok = true;
}

// ---- scalar kernels ------------------------------------------------------------------------------------------

void vec_add_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + b[i]; out[i] = s >= q ? s - q : s; }
}
void vec_sub_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + q - b[i]; out[i] = s >= q ? s - q : s; }
}
void vec_neg_scalar(u64* out, const u64* a, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] ? q - a[i] : 0;
}
void vec_add_const_scalar(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + c; out[i] = s >= q ? s - q : s; }
}

void vec_mul_scalar(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const Barrett64 br(m);
    if (!br.ok) {
        for (std::size_t i = 0; i < n; ++i) out[i] = m.mul(a[i], b[i]);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) out[i] = br.reduce(static_cast<u128>(a[i]) * b[i]);
}

void vec_mul_add_scalar(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    const Barrett64 br(m);
    if (!br.ok) {
        for (std::size_t i = 0; i < n; ++i) { u64 s = acc[i] + m.mul(a[i], b[i]); acc[i] = s >= q ? s - q : s; }
        return;
    }
    // a * b + acc <= (q-1)^2 + q - 1 < q^2: one Barrett reduction covers the addition too.
    for (std::size_t i = 0; i < n; ++i) acc[i] = br.reduce(static_cast<u128>(a[i]) * b[i] + acc[i]);
}

void vec_mul_const_scalar(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q, w = c.w, wp = c.wp;
    for (std::size_t i = 0; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}

void vec_mul_const_add_scalar(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q, w = c.w, wp = c.wp;
    for (std::size_t i = 0; i < n; ++i) { u64 s = out[i] + mul_shoup(a[i], w, wp, q); out[i] = s >= q ? s - q : s; }
}

void vec_sub_mul_const_scalar(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q, w = c.w, wp = c.wp;
    for (std::size_t i = 0; i < n; ++i) {
        u64 d = a[i] + q - b[i];  // in [0, 2q): the Shoup product accepts any input below 2^64
        out[i] = mul_shoup(d, w, wp, q);
    }
}

namespace {

// x mod q for x < 2^(62+bits): the two-multiplication Barrett estimate is at most 2 below the quotient
// (error < x / 2^(62+bits) + 2^s / q < 1 + 1/2), so two conditional subtractions finish it.
inline u64 reduce_dot(u128 x, const Barrett64& br) {
    const u64 q = br.q;
    const u64 xl = static_cast<u64>(x), xh = static_cast<u64>(x >> 64);
    const u64 qh = mulhi64((xh << (64 - br.s)) | (xl >> br.s), br.mu);  // 1 <= s <= 59
    return csub(csub(xl - qh * q, q), q);
}

// sum_t a[t][i] * b[t][i] for T <= chunk terms known at compile time: one reduction per coefficient.
template <int T>
void dot_fixed(u64* out, const u64* const* a, const u64* const* b, std::size_t n, const Barrett64& br) {
    const u64* A[T];
    const u64* B[T];
    for (int t = 0; t < T; ++t) { A[t] = a[t]; B[t] = b[t]; }
    for (std::size_t i = 0; i < n; ++i) {
        u128 x = 0;
        for (int t = 0; t < T; ++t) x += static_cast<u128>(A[t][i]) * B[t][i];
        out[i] = reduce_dot(x, br);
    }
}

// Streaming vec_dot: the coefficients go in blocks of kDotBlock, whose 128-bit sums (8 KiB) stay in L1, and each block
// is swept by groups of up to kDotGroup terms, so that every operand array is read contiguously, a few at a time
// (rather than one word of each of up to 32 arrays per coefficient, a pattern no prefetcher follows).
constexpr std::size_t kDotBlock = 512;
constexpr std::size_t kDotGroup = 4;

enum class DotStart { kZero, kAdd, kReduceAdd };

// One sweep of G terms over coefficients [i0, i0 + nb): the sums acc[i] start from zero (kZero), from their value
// (kAdd) or from its residue (kReduceAdd: the previous chunk of terms is full); with FINAL they are reduced into out
// instead of being kept. A coefficient's words are all read before its output is written (out may alias an operand).
template <int G, DotStart S, bool FINAL>
void dot_sweep(u128* acc, u64* out, const u64* const* a, const u64* const* b, std::size_t i0, std::size_t nb,
               const Barrett64& br) {
    const u64* A[G];
    const u64* B[G];
    for (int j = 0; j < G; ++j) { A[j] = a[j] + i0; B[j] = b[j] + i0; }
    for (std::size_t i = 0; i < nb; ++i) {
        u128 x;
        if constexpr (S == DotStart::kZero) x = 0;
        else if constexpr (S == DotStart::kAdd) x = acc[i];
        else x = reduce_dot(acc[i], br);
        for (int j = 0; j < G; ++j) x += static_cast<u128>(A[j][i]) * B[j][i];
        if constexpr (FINAL) out[i0 + i] = reduce_dot(x, br);
        else acc[i] = x;
    }
}

template <int G>
void dot_sweep_g(DotStart s, bool final, u128* acc, u64* out, const u64* const* a, const u64* const* b, std::size_t i0,
                 std::size_t nb, const Barrett64& br) {
    switch (s) {
        case DotStart::kZero:
            return final ? dot_sweep<G, DotStart::kZero, true>(acc, out, a, b, i0, nb, br)
                         : dot_sweep<G, DotStart::kZero, false>(acc, out, a, b, i0, nb, br);
        case DotStart::kAdd:
            return final ? dot_sweep<G, DotStart::kAdd, true>(acc, out, a, b, i0, nb, br)
                         : dot_sweep<G, DotStart::kAdd, false>(acc, out, a, b, i0, nb, br);
        case DotStart::kReduceAdd:
            return final ? dot_sweep<G, DotStart::kReduceAdd, true>(acc, out, a, b, i0, nb, br)
                         : dot_sweep<G, DotStart::kReduceAdd, false>(acc, out, a, b, i0, nb, br);
    }
}

// sum_t a[t][i] * b[t][i] for any number of terms, `chunk` terms per reduction, streamed (see kDotBlock).
void dot_streamed(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t chunk,
                  std::size_t n, const Barrett64& br) {
    static_assert(kDotGroup == 4);
    u128 acc[kDotBlock];
    for (std::size_t i0 = 0; i0 < n; i0 += kDotBlock) {
        const std::size_t nb = std::min(kDotBlock, n - i0);
        std::size_t used = 0;  // terms in the current chunk
        for (std::size_t t = 0; t < terms;) {
            DotStart s = t == 0 ? DotStart::kZero : DotStart::kAdd;
            if (used == chunk) { s = DotStart::kReduceAdd; used = 0; }
            const std::size_t g = std::min({kDotGroup, terms - t, chunk - used});
            const bool final = t + g == terms;
            switch (g) {
                case 1: dot_sweep_g<1>(s, final, acc, out, a + t, b + t, i0, nb, br); break;
                case 2: dot_sweep_g<2>(s, final, acc, out, a + t, b + t, i0, nb, br); break;
                case 3: dot_sweep_g<3>(s, final, acc, out, a + t, b + t, i0, nb, br); break;
                default: dot_sweep_g<4>(s, final, acc, out, a + t, b + t, i0, nb, br); break;
            }
            t += g;
            used += g;
        }
    }
}

}  // namespace

std::size_t dot_barrett_chunk(const Modulus& m) {
    // chunk * (q-1)^2 + (q-1) < 2^(62+bits) (the partial result of the previous chunk, below q, starts the next
    // one), so that x >> s fits a word and the estimate error stays below 2.
    const u128 qm1 = m.q - 1;
    const u128 lim = u128(1) << (62 + m.bits);
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::min<u128>(32, (lim - 1 - qm1) / (qm1 * qm1))));
}

void vec_dot_scalar(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    if (terms == 0) return;  // as the plain loop: nothing is written
    const Barrett64 br(m);
    if (!br.ok) {
        // 128-bit accumulation with the generic Barrett reduction, 64 products per chunk (each below 2^122).
        for (std::size_t i = 0; i < n; ++i) {
            u64 r = 0;
            for (std::size_t t0 = 0; t0 < terms; t0 += 64) {
                u128 acc = 0;
                for (std::size_t t = t0; t < std::min(terms, t0 + 64); ++t) acc += static_cast<u128>(a[t][i]) * b[t][i];
                r = t0 == 0 ? m.reduce128(acc) : m.add(r, m.reduce128(acc));
            }
            out[i] = r;
        }
        return;
    }
    const std::size_t chunk = dot_barrett_chunk(m);
    if (terms <= chunk && terms <= 4) {  // one pass over at most 8 streams, the sums in registers
        switch (terms) {
            case 1: return dot_fixed<1>(out, a, b, n, br);
            case 2: return dot_fixed<2>(out, a, b, n, br);
            case 3: return dot_fixed<3>(out, a, b, n, br);
            default: return dot_fixed<4>(out, a, b, n, br);
        }
    }
    dot_streamed(out, a, b, terms, chunk, n, br);
}

}  // namespace detail

// ---- dispatch ----------------------------------------------------------------------------------------------------

void vec_add(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_avx512_supported()) return detail::vec_add_avx512(out, a, b, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_add_avx2(out, a, b, n, m);
#endif
    detail::vec_add_scalar(out, a, b, n, m);
}
void vec_sub(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_avx512_supported()) return detail::vec_sub_avx512(out, a, b, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_sub_avx2(out, a, b, n, m);
#endif
    detail::vec_sub_scalar(out, a, b, n, m);
}
void vec_neg(u64* out, const u64* a, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_avx512_supported()) return detail::vec_neg_avx512(out, a, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_neg_avx2(out, a, n, m);
#endif
    detail::vec_neg_scalar(out, a, n, m);
}
void vec_add_const(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_avx512_supported()) return detail::vec_add_const_avx512(out, a, c, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_add_const_avx2(out, a, c, n, m);
#endif
    detail::vec_add_const_scalar(out, a, c, n, m);
}
void vec_mul(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_mul_ifma(out, a, b, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_mul_avx512(out, a, b, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_mul_avx2(out, a, b, n, m);
#endif
    detail::vec_mul_scalar(out, a, b, n, m);
}
void vec_mul_add(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_mul_add_ifma(acc, a, b, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_mul_add_avx512(acc, a, b, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_mul_add_avx2(acc, a, b, n, m);
#endif
    detail::vec_mul_add_scalar(acc, a, b, n, m);
}
void vec_mul_const(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_mul_const_ifma(out, a, c, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_mul_const_avx512(out, a, c, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_mul_const_avx2(out, a, c, n, m);
#endif
    detail::vec_mul_const_scalar(out, a, c, n, m);
}
void vec_mul_const_add(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_mul_const_add_ifma(out, a, c, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_mul_const_add_avx512(out, a, c, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_mul_const_add_avx2(out, a, c, n, m);
#endif
    detail::vec_mul_const_add_scalar(out, a, c, n, m);
}
void vec_dot(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_dot_ifma(out, a, b, terms, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_dot_avx512(out, a, b, terms, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_dot_avx2(out, a, b, terms, n, m);
#endif
    detail::vec_dot_scalar(out, a, b, terms, n, m);
}
void vec_sub_mul_const(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return detail::vec_sub_mul_const_ifma(out, a, b, c, n, m);
    if (detail::vec_avx512_supported()) return detail::vec_sub_mul_const_avx512(out, a, b, c, n, m);
    if (detail::vec_avx2_supported()) return detail::vec_sub_mul_const_avx2(out, a, b, c, n, m);
#endif
    detail::vec_sub_mul_const_scalar(out, a, b, c, n, m);
}

}  // namespace ember
