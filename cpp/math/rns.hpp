// RNS bases and fast base conversion (NewLimb, Eq. 1 of the MAD paper, 001).
//
// For x given by its residues x_i = [x]_{q_i} over B = {q_0..q_{k-1}} with Q = prod q_i, Q_i* = Q / q_i and
// Q~_i = (Q_i*)^-1 mod q_i, the conversion to a prime p is
//     NewLimb([x]_B, p) = sum_i [x_i * Q~_i]_{q_i} * [Q_i*]_p   mod p,
// which equals (x + u * Q) mod p for some integer 0 <= u < k: the "approximate" (HPS-free) conversion
// used by hybrid key switching (ModUp, Algo 1) and ModDown (Algo 2); the u*Q term is absorbed in the noise.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "math/modarith.hpp"

namespace ember {

class BaseConverter {
public:
    BaseConverter() = default;
    BaseConverter(std::vector<Modulus> from, std::vector<Modulus> to);

    const std::vector<Modulus>& from() const { return from_; }
    const std::vector<Modulus>& to() const { return to_; }

    /// Converts coefficients [begin, end) of the k input limbs in[0..k) to the m output limbs out[0..m).
    /// Inputs in [0, q_i); outputs in [0, p_j). Thread-safe (const); callers split [0, n) across threads.
    /// centered = false: NewLimb as above, x + u Q with 0 <= u < k (ModUp).
    /// centered = true: the exact centered value x in (-Q/2, Q/2], by subtracting v Q with
    /// v = round(sum_i [x_i Q~_i]_{q_i} / q_i) computed in floating point (Halevi-Polyakov-Shoup). ModDown
    /// and Rescale need it: the biased error of the plain conversion, u in [0, k), is a constant offset on
    /// every coefficient, which the canonical embedding amplifies by ~N.
    void convert(const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered = false) const;

    /// Same result through the plain per-coefficient formula (the reference the fast path is tested against).
    void convert_reference(const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered = false) const;

    /// First step of a blocked conversion, for coefficients [c0, c0 + nb) with nb <= stride: row i of y (at
    /// y + i * stride) gets y_i = [x_i * Q~_i]_{q_i}, and with `centered` v[t] = round(sum_i y_i / q_i) (the v
    /// above). An odd block gets a zero after its last coefficient in each row and in v (room for kernels that
    /// take two coefficients at a time).
    void scale_block(const u64* const* in, std::size_t c0, std::size_t nb, u64* y, std::size_t stride, u64* v, bool centered) const {
        const std::size_t k = from_.size();
        for (std::size_t i = 0; i < k; ++i) {
            const u64 q = from_[i].q, w = qhat_inv[i].w, wp = qhat_inv[i].wp;
            const u64* src = in[i] + c0;
            u64* dst = y + i * stride;
            for (std::size_t t = 0; t < nb; ++t) dst[t] = mul_shoup(src[t], w, wp, q);
            if (nb & 1) dst[nb] = 0;
        }
        if (centered) {
            for (std::size_t t = 0; t < nb; ++t) {
                double frac = 0;
                for (std::size_t i = 0; i < k; ++i) frac += static_cast<double>(y[i * stride + t]) * inv_q[i];
                v[t] = static_cast<u64>(std::llround(frac));
            }
            if (nb & 1) v[nb] = 0;
        }
    }

    // Precomputed constants, public for tests and the CUDA backend.
    std::vector<MulConst> qhat_inv;            // Q~_i mod q_i, with Shoup companions (k)
    std::vector<std::vector<u64>> qhat_mod_p;  // [j][i] = Q_i* mod p_j (m x k)
    std::vector<u64> q_mod_p;                  // [j] = Q mod p_j
    std::vector<double> inv_q;                 // 1 / q_i

private:
    std::vector<Modulus> from_, to_;
};

/// Exact CRT reconstruction helper: x mod Q from residues, as little-endian 64-bit words
/// (k words for k primes < 2^61). Used by decoding; a fixed-limb big integer, no allocation per call.
class CrtReconstructor {
public:
    CrtReconstructor() = default;
    explicit CrtReconstructor(std::vector<Modulus> basis);
    std::size_t words() const { return words_; }
    /// residues[i] in [0, q_i) -> out[0..words) = x in [0, Q)
    void reconstruct(const u64* residues, u64* out) const;
    /// The centered value x - Q if x > Q/2, as a double (scaled by 2^-exp2_shift not applied).
    double to_double_centered(const u64* residues) const;
    const std::vector<u64>& modulus_words() const { return Q_; }

private:
    std::vector<Modulus> basis_;
    std::size_t words_ = 0;
    std::vector<u64> Q_, Qhalf_;                 // Q and floor(Q/2)
    std::vector<std::vector<u64>> Qstar_;        // Q / q_i as words
    std::vector<MulConst> qtilde_;               // (Q/q_i)^-1 mod q_i
};

}  // namespace ember
