// Fast base conversion (Backend::base_convert) on the GPU: the constants a kernel reads and the phases of a kernel
// block, as EMBER_HD code that the kernel (backend/cuda/base_convert_impl.cuh) and the host emulation below both run.
//
// A block converts kBcCoeffs consecutive coefficients:
//   1. scale:   y[i][c] = [x_i[c] Q~_i]_{q_i} for the source limbs, into shared memory (one row of kBcCoeffs words
//               per source prime);
//   2. center:  v[c] = round(sum_i y_i / q_i) in double precision, in the CPU's order (only when centered; else 0);
//   3. output:  out_j[c] = sum_i y_i [Q / q_i]_{p_j} + v (p_j - [Q]_{p_j})  mod p_j, one (coefficient, output prime)
//               pair per thread, the sum accumulated in 128 bits and reduced once (arith.hpp's base_convert_output).
// Phases 1 and 2 read what phase 1 wrote: a barrier separates them (and 2 from 3) in the kernel. The y rows are
// read by 32 threads of a warp at consecutive coefficients (no bank conflict) and the constants of one output prime
// are the same for the whole warp (a broadcast).
//
// Any number of source primes: shared memory holds at most kBcChunkSources rows, so the sources are taken in chunks
// [i0, i0 + kc), one pass (one kernel launch) each, in increasing order. Across passes the state lives in global
// memory: each output word holds the partial sum over the chunks so far, already reduced mod p_j (the next pass adds
// its own reduced partial sum with add_mod), and the centered correction's running double f is kept per
// coefficient in a scratch array. The last pass adds v (p_j - [Q]_{p_j}) and rounds f. Every step but f is exact
// modular arithmetic, so where the reductions fall does not change a bit of the result; f is summed over
// i = 0, 1, ..., k - 1 from 0.0 with the same two roundings per term as BaseConverter (scale_block, and
// convert_reference past 63 sources) whatever the chunking.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/cuda/arith.hpp"
#include "math/rns.hpp"

namespace ember::cuda {

/// Coefficients per block, and threads per block.
constexpr u32 kBcCoeffs = 64;
constexpr u32 kBcThreads = 256;
/// Source primes per pass: the y rows of a block, (kBcChunkSources + 1) kBcCoeffs words, fill the 48 KiB of shared
/// memory a kernel may use without opting in to more. More sources take several passes (see above).
constexpr u32 kBcChunkSources = 95;
/// Output primes per pass: their limb pointers travel in the kernel's parameters (with the chunk's source pointers,
/// under the 4 KiB that any CUDA 12 toolkit and driver accept). More outputs take several passes, each of which
/// scales the sources again.
constexpr u32 kBcOutBatch = 256;

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

/// One pass of the conversion: the sources [i0, i0 + kc) (kc <= kBcChunkSources) into the outputs [j0, j0 + mb)
/// (mb <= kBcOutBatch), over every coefficient. `first` / `last`: the pass takes the first / last chunk of the
/// sources. `f`: the centered correction's running sums between passes (one double per coefficient; unused, and
/// may be null, when centered is false or one pass covers all the sources).
struct BcPass {
    u32 i0 = 0, kc = 0;
    u32 j0 = 0, mb = 0;
    bool first = true, last = true;
    bool centered = false;
    double* f = nullptr;
};

/// The passes of a conversion from k to m primes, in the order they must run: for each batch of outputs, the chunks
/// of sources in increasing order (f restarts with each batch). fn(const BcPass&) is called for each.
template <class Fn>
inline void bc_for_each_pass(u32 k, u32 m, bool centered, double* f, Fn&& fn, u32 chunk = kBcChunkSources,
                             u32 out_batch = kBcOutBatch) {
    for (u32 j0 = 0; j0 < m; j0 += out_batch) {
        for (u32 i0 = 0; i0 < k; i0 += chunk) {
            BcPass p;
            p.i0 = i0;
            p.kc = k - i0 < chunk ? k - i0 : chunk;
            p.j0 = j0;
            p.mb = m - j0 < out_batch ? m - j0 : out_batch;
            p.first = i0 == 0;
            p.last = i0 + p.kc == k;
            p.centered = centered;
            p.f = f;
            fn(static_cast<const BcPass&>(p));
        }
    }
}

/// Phase 1: y[r kBcCoeffs + c] = [x_i[c0 + c] Q~_i]_{q_i} for the pass's sources i = i0 + r, whose limbs are
/// in[0 .. kc) (0 past the n-th coefficient).
EMBER_HD inline void bc_scale(u64* y, const BaseConvTable& t, const u64* const* in, const BcPass& p, std::size_t c0,
                              std::size_t n, u32 tid, u32 nthreads) {
    for (u32 idx = tid; idx < p.kc * kBcCoeffs; idx += nthreads) {
        const u32 r = idx / kBcCoeffs, c = idx % kBcCoeffs, i = p.i0 + r;
        y[idx] = c0 + c < n ? base_convert_scale(in[r][c0 + c], load_ro(t.qinv_w + i), load_ro(t.qinv_wp + i),
                                                 load_ro(t.q + i))
                            : 0;
    }
}

/// Phase 2: when centered, f[c] += y_i / q_i for the pass's sources in increasing i, starting from 0 in the first
/// pass (as BaseConverter::scale_block sums from 0, i = 0, 1, ...), and v[c] = llround(f[c]) in the last pass; v is
/// 0 otherwise (not centered, or a pass before the last).
EMBER_HD inline void bc_center(u64* v, const u64* y, const BaseConvTable& t, const BcPass& p, std::size_t c0,
                               std::size_t n, u32 tid, u32 nthreads) {
    for (u32 c = tid; c < kBcCoeffs; c += nthreads) {
        v[c] = 0;
        if (!p.centered || c0 + c >= n) continue;
        double f = p.first ? 0.0 : p.f[c0 + c];
        for (u32 r = 0; r < p.kc; ++r) f = centered_step(f, y[r * kBcCoeffs + c], t.inv_q[p.i0 + r]);
        if (p.last) v[c] = centered_round(f);
        else p.f[c0 + c] = f;
    }
}

/// Phase 3: out_j[c0 + c] for the (coefficient, output prime) pairs of this thread, j = j0 + b with its limb at
/// out[b]: the pass's sum (plus v (p_j - [Q]_{p_j}) in the last pass) reduced mod p_j, added mod p_j to the sum of
/// the earlier passes that the word holds (written as is by the first pass).
EMBER_HD inline void bc_output(u64* const* out, const u64* y, const u64* v, const BaseConvTable& t, const BcPass& p,
                               std::size_t c0, std::size_t n, u32 tid, u32 nthreads) {
    for (u32 idx = tid; idx < p.mb * kBcCoeffs; idx += nthreads) {
        const u32 b = idx / kBcCoeffs, c = idx % kBcCoeffs, j = p.j0 + b;
        if (c0 + c >= n) continue;
        const u64 r = base_convert_output(y + c, kBcCoeffs, t.qhat + static_cast<std::size_t>(j) * t.k + p.i0, p.kc,
                                          v[c], load_ro(t.negq + j), t.pb[j]);
        u64* o = out[b] + c0 + c;
        *o = p.first ? r : add_mod(*o, r, t.pb[j].q);
    }
}

/// The kernel on the host: every pass (bc_for_each_pass with the given chunk sizes; the kernels' by default), and
/// in each every block's three phases, each run by every thread in turn.
inline void base_convert_emulate(const BaseConvTable& t, const u64* const* in, u64* const* out, std::size_t n,
                                 bool centered, u32 chunk = kBcChunkSources, u32 out_batch = kBcOutBatch) {
    std::vector<u64> y(static_cast<std::size_t>(chunk) * kBcCoeffs), v(kBcCoeffs);
    std::vector<double> f(centered && t.k > chunk ? n : 0);
    bc_for_each_pass(t.k, t.m, centered, f.empty() ? nullptr : f.data(), [&](const BcPass& p) {
        for (std::size_t c0 = 0; c0 < n; c0 += kBcCoeffs) {
            for (u32 tid = 0; tid < kBcThreads; ++tid) bc_scale(y.data(), t, in + p.i0, p, c0, n, tid, kBcThreads);
            for (u32 tid = 0; tid < kBcThreads; ++tid) bc_center(v.data(), y.data(), t, p, c0, n, tid, kBcThreads);
            for (u32 tid = 0; tid < kBcThreads; ++tid) bc_output(out + p.j0, y.data(), v.data(), t, p, c0, n, tid, kBcThreads);
        }
    }, chunk, out_batch);
}

}  // namespace ember::cuda
