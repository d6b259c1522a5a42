#include "math/vec_ops.hpp"

#include <algorithm>

namespace ember {

// Scalar implementations; vectorised versions may be dispatched from here later (same results).

void vec_add(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + b[i]; out[i] = s >= q ? s - q : s; }
}
void vec_sub(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + q - b[i]; out[i] = s >= q ? s - q : s; }
}
void vec_neg(u64* out, const u64* a, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] ? q - a[i] : 0;
}
void vec_mul(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    for (std::size_t i = 0; i < n; ++i) out[i] = m.mul(a[i], b[i]);
}
void vec_mul_add(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = acc[i] + m.mul(a[i], b[i]); acc[i] = s >= q ? s - q : s; }
}
void vec_mul_const(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) out[i] = mul_shoup(a[i], c.w, c.wp, q);
}
void vec_mul_const_add(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = out[i] + mul_shoup(a[i], c.w, c.wp, q); out[i] = s >= q ? s - q : s; }
}
void vec_add_const(u64* out, const u64* a, u64 c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = a[i] + c; out[i] = s >= q ? s - q : s; }
}
void vec_dot(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    // terms <= 64: each product is below 2^122, so 64 of them fit in 128 bits.
    for (std::size_t t0 = 0; t0 < terms; t0 += 64) {
        const std::size_t t1 = std::min(terms, t0 + 64);
        for (std::size_t i = 0; i < n; ++i) {
            u128 acc = 0;
            for (std::size_t t = t0; t < t1; ++t) acc += static_cast<u128>(a[t][i]) * b[t][i];
            const u64 r = m.reduce128(acc);
            out[i] = t0 == 0 ? r : m.add(out[i], r);
        }
    }
}

void vec_sub_mul_const(u64* out, const u64* a, const u64* b, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) {
        u64 d = a[i] + q - b[i];  // in [0, 2q): the Shoup product accepts any input below 2^64
        out[i] = mul_shoup(d, c.w, c.wp, q);
    }
}

}  // namespace ember
