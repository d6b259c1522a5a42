// Fast base conversion (Backend::base_convert) on the GPU: the constants a kernel reads and the phases of a kernel
// block, as EMBER_HD code that the kernel (backend/cuda/base_convert_impl.cuh) and the host emulation below both run.
//
// A block converts kBcCoeffs consecutive coefficients:
//   1. scale:   y[i][c] = [x_i[c] Q~_i]_{q_i} for the k source limbs, into shared memory (k rows of kBcCoeffs words);
//   2. center:  v[c] = round(sum_i y_i / q_i) in double precision, in the CPU's order (only when centered; else 0);
//   3. output:  out_j[c] = sum_i y_i [Q / q_i]_{p_j} + v (p_j - [Q]_{p_j})  mod p_j, one (coefficient, output prime)
//               pair per thread, the sum accumulated in 128 bits and reduced once (arith.hpp's base_convert_output).
// Phases 1 and 2 read what phase 1 wrote: a barrier separates them (and 2 from 3) in the kernel. The y rows are
// read by 32 threads of a warp at consecutive coefficients (no bank conflict) and the constants of one output prime
// are the same for the whole warp (a broadcast).
#pragma once

#include <cstddef>
#include <vector>

#include "backend/cuda/arith.hpp"
#include "math/rns.hpp"

namespace ember::cuda {

/// Coefficients per block, and threads per block.
constexpr u32 kBcCoeffs = 64;
constexpr u32 kBcThreads = 256;
/// Source primes a block can hold in 48 KiB of shared memory ((k + 1) kBcCoeffs words).
constexpr u32 kBcMaxSources = 95;

/// The constants of a conversion from k primes to m primes (pointers into one memory space: host or device).
struct BaseConvTable {
    u32 k = 0, m = 0;
    const u64* q = nullptr;          // [i] q_i
    const u64* qinv_w = nullptr;     // [i] Q~_i = (Q / q_i)^-1 mod q_i
    const u64* qinv_wp = nullptr;    // [i] its Shoup companion
    const double* inv_q = nullptr;   // [i] 1 / q_i, as BaseConverter::inv_q
    const u64* qhat = nullptr;       // [j k + i] [Q / q_i]_{p_j}
    const u64* negq = nullptr;       // [j] p_j - [Q]_{p_j}, or 0 when [Q]_{p_j} = 0
    const WideBarrett* pb = nullptr; // [j] p_j's reduction constants
};

/// The constants of a BaseConverter in host vectors (the emulation reads them in place; the device copy uploads
/// them).
struct BaseConvData {
    u32 k = 0, m = 0;
    std::vector<u64> q, qinv_w, qinv_wp, qhat, negq;
    std::vector<double> inv_q;
    std::vector<WideBarrett> pb;

    explicit BaseConvData(const BaseConverter& conv) {
        k = static_cast<u32>(conv.from().size());
        m = static_cast<u32>(conv.to().size());
        for (u32 i = 0; i < k; ++i) {
            q.push_back(conv.from()[i].q);
            qinv_w.push_back(conv.qhat_inv[i].w);
            qinv_wp.push_back(conv.qhat_inv[i].wp);
            inv_q.push_back(conv.inv_q[i]);
        }
        for (u32 j = 0; j < m; ++j) {
            const Modulus& p = conv.to()[j];
            for (u32 i = 0; i < k; ++i) qhat.push_back(conv.qhat_mod_p[j][i]);
            negq.push_back(conv.q_mod_p[j] != 0 ? p.q - conv.q_mod_p[j] : 0);
            pb.push_back(make_wide_barrett(p));
        }
    }
    /// The table with pointers into these vectors.
    BaseConvTable host_table() const {
        return BaseConvTable{k, m, q.data(), qinv_w.data(), qinv_wp.data(), inv_q.data(), qhat.data(), negq.data(),
                             pb.data()};
    }
};

/// Phase 1: y[i kBcCoeffs + c] = [x_i[c0 + c] Q~_i]_{q_i} (0 past the n-th coefficient).
EMBER_HD inline void bc_scale(u64* y, const BaseConvTable& t, const u64* const* in, std::size_t c0, std::size_t n,
                              u32 tid, u32 nthreads) {
    for (u32 idx = tid; idx < t.k * kBcCoeffs; idx += nthreads) {
        const u32 i = idx / kBcCoeffs, c = idx % kBcCoeffs;
        y[idx] = c0 + c < n ? base_convert_scale(in[i][c0 + c], load_ro(t.qinv_w + i), load_ro(t.qinv_wp + i),
                                                 load_ro(t.q + i))
                            : 0;
    }
}

/// Phase 2: v[c] = llround(sum_i y_i / q_i) (sums from 0, i = 0, 1, ..., as BaseConverter::scale_block) when
/// centered, else 0.
EMBER_HD inline void bc_center(u64* v, const u64* y, const BaseConvTable& t, bool centered, u32 tid, u32 nthreads) {
    for (u32 c = tid; c < kBcCoeffs; c += nthreads) {
        if (!centered) {
            v[c] = 0;
            continue;
        }
        double f = 0;
        for (u32 i = 0; i < t.k; ++i) f = centered_step(f, y[i * kBcCoeffs + c], t.inv_q[i]);
        v[c] = centered_round(f);
    }
}

/// Phase 3: out_j[c0 + c] for the (coefficient, output prime) pairs of this thread.
EMBER_HD inline void bc_output(u64* const* out, const u64* y, const u64* v, const BaseConvTable& t, std::size_t c0,
                               std::size_t n, u32 tid, u32 nthreads) {
    for (u32 idx = tid; idx < t.m * kBcCoeffs; idx += nthreads) {
        const u32 j = idx / kBcCoeffs, c = idx % kBcCoeffs;
        if (c0 + c >= n) continue;
        out[j][c0 + c] = base_convert_output(y + c, kBcCoeffs, t.qhat + static_cast<std::size_t>(j) * t.k, t.k, v[c],
                                             load_ro(t.negq + j), t.pb[j]);
    }
}

/// The kernel on the host: every block's three phases, each run by every thread in turn.
inline void base_convert_emulate(const BaseConvTable& t, const u64* const* in, u64* const* out, std::size_t n,
                                 bool centered) {
    std::vector<u64> y(static_cast<std::size_t>(t.k) * kBcCoeffs), v(kBcCoeffs);
    for (std::size_t c0 = 0; c0 < n; c0 += kBcCoeffs) {
        for (u32 tid = 0; tid < kBcThreads; ++tid) bc_scale(y.data(), t, in, c0, n, tid, kBcThreads);
        for (u32 tid = 0; tid < kBcThreads; ++tid) bc_center(v.data(), y.data(), t, centered, tid, kBcThreads);
        for (u32 tid = 0; tid < kBcThreads; ++tid) bc_output(out, y.data(), v.data(), t, c0, n, tid, kBcThreads);
    }
}

}  // namespace ember::cuda
