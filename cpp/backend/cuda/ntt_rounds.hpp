// The negacyclic NTT of the CUDA backend: its decomposition into two shared-memory kernels, written as EMBER_HD
// phases that the kernels (backend/cuda/ntt_impl.cuh) and a host emulation (ntt_emulate below, run by the host tests)
// both execute, so that everything but the barriers and the memory spaces is tested without a GPU.
//
// Convention: math/ntt.hpp's, bit for bit. Forward: Cooley-Tukey stages m = 1, 2, ..., N/2 (distance t = N / 2m,
// twiddle psi_rev[m + i] for the i-th group of 2t words); inverse: Gentleman-Sande stages m = N/2, ..., 1 with
// ipsi_rev. Inputs in [0, q), outputs in [0, q) (the transform's last stage reduces them; the inverse's last stage
// also multiplies by N^-1, with the tables' n_inv and ipsi1_ninv, as the CPU's scalar path does).
//
// Lazy butterflies (Harvey, "Faster arithmetic for number-theoretic transforms", 2014), with the ranges of the CPU's
// reference transforms (ntt_forward_reference / ntt_inverse_reference; 4q < 2^64 since q < 2^61):
//   forward:  x, y in [0, 4q):  u = x mod 2q (one correction), v = w y mod q in [0, 2q) (Shoup),
//             x' = u + v, y' = u - v + 2q, both in [0, 4q); the last stage's outputs are corrected to [0, q).
//   inverse:  x, y in [0, 2q):  x' = (x + y) mod 2q (one correction), y' = w (x - y + 2q) mod q in [0, 2q) (Shoup);
//             the last stage (distance N/2, twiddle ipsi_rev[1]) instead forms x' = N^-1 (x + y) and
//             y' = ipsi_rev[1] N^-1 (x - y + 2q), fully reduced.
//
// Decomposition (the "four-step"-like split of Bailey, J. Supercomputing 4, 1990, as used by the GPU NTTs of Kim et
// al., "Accelerating number theoretic transformations for bootstrappable homomorphic encryption on GPUs", IISWC 2020,
// and Jung et al., TCHES 2021): write N = N1 N2 (N1 = 2^s1, N2 = 2^s2, s1 = floor(log N / 2)) and the word index as
// j = j1 N2 + j2.
//   * The first s1 forward stages (distances t >= N2) only combine words of one column j2 (stride N2): on each column
//     they are exactly a transform of size N1 whose stage ml, group g uses psi_rev[ml + g].
//   * The last s2 stages (t < N2) only combine words of one row j1 (N2 consecutive words): on row j1 they are a
//     transform of size N2 whose stage ml, group g uses psi_rev[(N1 + j1) ml + g] (global stage m = N1 ml, global
//     group j1 ml + g).
// So both kernels run the same sub-transform with a twiddle base b (twiddle index b ml + g; b = 1 for the columns,
// N1 + j1 for row j1). Each twiddle of [N1, N) belongs to exactly one row and one stage: the row kernel reads each
// one once from memory (several threads of a block may share it through L1); the column kernel reads [1, N1), which
// stays in cache across blocks.
//
// A kernel block loads a tile of sub-transforms into shared memory (kNttTileWords words), runs rounds of up to three
// stages (radix 8: each thread takes 8 words into registers, does 12 butterflies with 7 twiddles, writes them back),
// with a barrier between rounds, and stores the tile. The forward transform is the column kernel then the row
// kernel; the inverse the row kernel then the column kernel.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/cuda/arith.hpp"
#include "math/ntt.hpp"

namespace ember::cuda {

/// Words of one block's shared-memory tile (16 KiB): 256 threads of 8 words each.
constexpr u32 kNttTileWords = 2048;
/// Stages per register round (radix 2^3 = 8).
constexpr u32 kNttRoundStages = 3;

/// The split of a transform of N = 2^log_n words (1 <= log_n <= 17) and the kernels' tiles.
struct NttShape {
    u32 log_n = 0;
    u32 s1 = 0, s2 = 0;  // stages of the column kernel (the widest distances; s1 may be 0) and of the row kernel
    u32 n1 = 1, n2 = 1;  // 2^s1 rows of 2^s2 words
    u32 cols = 0;        // columns per block of the column kernel
    u32 rows = 0;        // rows per block of the row kernel
};

inline NttShape ntt_shape(u32 log_n) {
    NttShape sh;
    sh.log_n = log_n;
    sh.s1 = log_n / 2;
    sh.s2 = log_n - sh.s1;
    sh.n1 = u32(1) << sh.s1;
    sh.n2 = u32(1) << sh.s2;
    sh.cols = (kNttTileWords >> sh.s1) < sh.n2 ? (kNttTileWords >> sh.s1) : sh.n2;
    sh.rows = (kNttTileWords >> sh.s2) < sh.n1 ? (kNttTileWords >> sh.s2) : sh.n1;
    return sh;
}

/// Threads per sub-transform of 2^s words: each takes 2^min(3, s) words.
EMBER_HD inline u32 ntt_sub_threads(u32 s) { return s >= kNttRoundStages ? u32(1) << (s - kNttRoundStages) : 1; }
/// Register rounds of a sub-transform of s stages (the last one takes the s mod 3 remaining stages, if any).
EMBER_HD inline u32 ntt_round_count(u32 s) { return (s + kNttRoundStages - 1) / kNttRoundStages; }

/// Threads of a block of the column (kRows false) or row kernel.
template <bool kRows>
EMBER_HD inline u32 ntt_block_threads(const NttShape& sh) {
    return kRows ? sh.rows * ntt_sub_threads(sh.s2) : sh.cols * ntt_sub_threads(sh.s1);
}
/// Blocks per limb.
template <bool kRows>
EMBER_HD inline u32 ntt_blocks(const NttShape& sh) {
    return kRows ? sh.n1 / sh.rows : sh.n2 / sh.cols;
}
/// Words of a block's tile.
template <bool kRows>
EMBER_HD inline u32 ntt_tile_words(const NttShape& sh) {
    return kRows ? sh.rows << sh.s2 : sh.cols << sh.s1;
}

/// One limb of a batch: its words and the tables of its prime for one direction.
struct NttLimb {
    u64* data = nullptr;
    const u64* src = nullptr;  // where the transform's first kernel reads the limb when not from data (out of place:
                               // Backend::ntt_inverse_from, the copy fused into the first load); the later kernel
                               // works in place on data
    const u64* w = nullptr;   // psi_rev (forward) or ipsi_rev (inverse), N words
    const u64* wp = nullptr;  // their Shoup companions
    u64 q = 0;
    u64 ninv = 0, ninv_p = 0;  // inverse: N^-1 and ipsi_rev[1] N^-1 with companions (the merged last stage)
    u64 last = 0, last_p = 0;
};

/// The limb descriptor of `data` (N words) over `t`'s prime, with the twiddles at w / wp (host copies of the
/// tables for the emulation, device copies for the kernels).
inline NttLimb make_ntt_limb(u64* data, const NttTables& t, const u64* w, const u64* wp) {
    NttLimb l;
    l.data = data;
    l.w = w;
    l.wp = wp;
    l.q = t.mod.q;
    l.ninv = t.n_inv;
    l.ninv_p = t.n_inv_shoup;
    l.last = t.ipsi1_ninv;
    l.last_p = t.ipsi1_ninv_shoup;
    return l;
}

// ---- butterflies -----------------------------------------------------------------------------------------------

/// Cooley-Tukey (forward) butterfly, x, y in [0, 4q) -> [0, 4q).
EMBER_HD inline void ct_butterfly(u64& x, u64& y, u64 w, u64 wp, u64 q) {
    const u64 q2 = 2 * q;
    const u64 u = csub(x, q2);
    const u64 v = mul_shoup_lazy(y, w, wp, q);
    x = u + v;
    y = u - v + q2;
}

/// Gentleman-Sande (inverse) butterfly, x, y in [0, 2q) -> [0, 2q).
EMBER_HD inline void gs_butterfly(u64& x, u64& y, u64 w, u64 wp, u64 q) {
    const u64 q2 = 2 * q;
    const u64 u = x, v = y;
    x = csub(u + v, q2);
    y = mul_shoup_lazy(u - v + q2, w, wp, q);
}

/// The inverse transform's last butterfly (twiddle ipsi_rev[1]) with the N^-1 scaling merged in, x, y in [0, 2q) ->
/// [0, q): x' = N^-1 (x + y), y' = ipsi_rev[1] N^-1 (x - y + 2q) (the Shoup products take any input below 2^64).
EMBER_HD inline void gs_butterfly_last(u64& x, u64& y, const NttLimb& l) {
    const u64 u = x, v = y;
    x = mul_shoup(u + v, l.ninv, l.ninv_p, l.q);
    y = mul_shoup(u - v + 2 * l.q, l.last, l.last_p, l.q);
}

// ---- one register round ----------------------------------------------------------------------------------------

/// One round of R stages of a sub-transform of S = 2^s words at x[0], x[stride], ... (twiddle base b), by the thread
/// k of `nthreads` of the sub-transform; `done` stages are done. The round's stages have distances t, t/2, ..., h
/// (forward, h = t / 2^(R-1)) or h, 2h, ..., t (inverse), and split the sub-transform into S / 2^R units of 2^R words
/// x[blk 2t + j + e h] (e < 2^R) for blk < S / 2t, j < h, which a thread transforms in registers: unit u has
/// blk = u / h, j = u mod h. At stage distance D the word with offset j + e h in its block of 2t lies in group
/// blk (2t / 2D) + floor(e h / 2D) of the sub-transform's stage ml = S / 2D. final_stage (forward only): this round
/// ends the whole transform, whose outputs are reduced to [0, q).
template <int R, bool kInverse>
EMBER_HD inline void ntt_round_r(u64* x, u32 stride, u32 k, u32 nthreads, u32 s, u32 done, u32 b, const NttLimb& l,
                                 bool final_stage) {
    constexpr u32 kW = u32(1) << R;
    const u32 lh = kInverse ? done : s - done - R;  // log2 h
    const u32 lt = lh + R - 1;                      // log2 t
    const u32 units = u32(1) << (s - R);
    const u64 q = l.q;
    for (u32 u = k; u < units; u += nthreads) {
        const u32 blk = u >> lh, j = u & ((u32(1) << lh) - 1);
        u64* p = x + ((blk << (lt + 1)) + j) * stride;
        const u32 step = (u32(1) << lh) * stride;
        u64 v[kW];
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
        for (u32 e = 0; e < kW; ++e) v[e] = p[e * step];
        if constexpr (!kInverse) {
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
            for (int st = 0; st < R; ++st) {  // distance t >> st, register distance 2^(R-1-st)
                const u32 d = u32(1) << (R - 1 - st);
                const u32 ml = u32(1) << (s - lt - 1 + st);  // S / 2 (t >> st)
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
                for (u32 e = 0; e < kW; ++e) {
                    if (e & d) continue;
                    const u32 idx = b * ml + (blk << st) + (e >> (R - st));
                    ct_butterfly(v[e], v[e + d], load_ro(l.w + idx), load_ro(l.wp + idx), q);
                }
            }
            if (final_stage) {
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
                for (u32 e = 0; e < kW; ++e) v[e] = csub(csub(v[e], 2 * q), q);  // [0, 4q) -> [0, q)
            }
        } else {
            (void)final_stage;
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
            for (int st = 0; st < R; ++st) {  // distance h << st, register distance 2^st
                const u32 d = u32(1) << st;
                const u32 ml = u32(1) << (s - lh - 1 - st);  // S / 2 (h << st)
                // twiddle indices of global stage m lie in [m, 2m): index 1 is the transform's last stage (m = 1)
                const bool last = b * ml == 1;
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
                for (u32 e = 0; e < kW; ++e) {
                    if (e & d) continue;
                    if (last) {
                        gs_butterfly_last(v[e], v[e + d], l);
                    } else {
                        const u32 idx = b * ml + (blk << (R - 1 - st)) + (e >> (st + 1));
                        gs_butterfly(v[e], v[e + d], load_ro(l.w + idx), load_ro(l.wp + idx), q);
                    }
                }
            }
        }
#if EMBER_DEVICE_CODE
#pragma unroll
#endif
        for (u32 e = 0; e < kW; ++e) p[e * step] = v[e];
    }
}

// ---- the phases of a kernel block ------------------------------------------------------------------------------
//
// Tiles. Column kernel (kRows false), block bx: columns c0 = bx cols .. c0 + cols - 1; word (j1, c) of the tile at
// tile[j1 cols + c] <-> data[j1 N2 + c0 + c] (consecutive threads load consecutive words: runs of `cols` words of
// each row); sub-transform c at tile + c, stride cols; thread tid works on column tid mod cols as its thread
// tid / cols. Row kernel, block bx: rows r0 = bx rows .., the tile is data[r0 N2 .. (r0 + rows) N2) as it is; row r at
// tile + r N2, stride 1, thread tid works on row tid / T as its thread tid mod T (T threads per row).

/// Copies the block's words from global memory into the tile (thread tid of nthreads).
template <bool kRows>
EMBER_HD inline void ntt_tile_load(u64* tile, const u64* data, const NttShape& sh, u32 bx, u32 tid, u32 nthreads) {
    const u32 words = ntt_tile_words<kRows>(sh);
    if constexpr (kRows) {
        const u64* src = data + static_cast<std::size_t>(bx) * words;
        for (u32 i = tid; i < words; i += nthreads) tile[i] = src[i];
    } else {
        const u32 c0 = bx * sh.cols;
        for (u32 i = tid; i < words; i += nthreads) tile[i] = data[(i / sh.cols) * sh.n2 + c0 + i % sh.cols];
    }
}

/// Copies the tile back to global memory.
template <bool kRows>
EMBER_HD inline void ntt_tile_store(const u64* tile, u64* data, const NttShape& sh, u32 bx, u32 tid, u32 nthreads) {
    const u32 words = ntt_tile_words<kRows>(sh);
    if constexpr (kRows) {
        u64* dst = data + static_cast<std::size_t>(bx) * words;
        for (u32 i = tid; i < words; i += nthreads) dst[i] = tile[i];
    } else {
        const u32 c0 = bx * sh.cols;
        for (u32 i = tid; i < words; i += nthreads) data[(i / sh.cols) * sh.n2 + c0 + i % sh.cols] = tile[i];
    }
}

/// Round `round` of thread tid on the tile of block bx.
template <bool kInverse, bool kRows>
EMBER_HD inline void ntt_tile_round(u64* tile, const NttLimb& l, const NttShape& sh, u32 bx, u32 tid, u32 round) {
    const u32 s = kRows ? sh.s2 : sh.s1;
    const u32 per = ntt_sub_threads(s);
    u64* x;
    u32 stride, k, b;
    if constexpr (kRows) {
        const u32 r = tid / per;
        x = tile + (r << s);
        stride = 1;
        k = tid % per;
        b = sh.n1 + bx * sh.rows + r;
    } else {
        x = tile + tid % sh.cols;
        stride = sh.cols;
        k = tid / sh.cols;
        b = 1;
    }
    const u32 done = round * kNttRoundStages;
    const u32 stages = s - done < kNttRoundStages ? s - done : kNttRoundStages;
    // the forward transform ends with the row kernel's last round
    const bool final_stage = !kInverse && kRows && done + stages == s;
    switch (stages) {
        case 3: ntt_round_r<3, kInverse>(x, stride, k, per, s, done, b, l, final_stage); break;
        case 2: ntt_round_r<2, kInverse>(x, stride, k, per, s, done, b, l, final_stage); break;
        default: ntt_round_r<1, kInverse>(x, stride, k, per, s, done, b, l, final_stage); break;
    }
}

// ---- host emulation --------------------------------------------------------------------------------------------

/// One kernel on the host: for every block, the load, the rounds and the store, each phase run by every thread of
/// the block in turn (a barrier separates the phases in the kernel, so no thread sees another's words of the same
/// phase: any order of the threads gives the kernel's result).
template <bool kInverse, bool kRows>
inline void ntt_kernel_emulate(const NttLimb& l, const NttShape& sh) {
    const u32 s = kRows ? sh.s2 : sh.s1;
    const u32 threads = ntt_block_threads<kRows>(sh), rounds = ntt_round_count(s);
    std::vector<u64> tile(ntt_tile_words<kRows>(sh));
    for (u32 bx = 0; bx < ntt_blocks<kRows>(sh); ++bx) {
        for (u32 tid = 0; tid < threads; ++tid) ntt_tile_load<kRows>(tile.data(), l.src ? l.src : l.data, sh, bx, tid, threads);
        for (u32 r = 0; r < rounds; ++r)
            for (u32 tid = 0; tid < threads; ++tid) ntt_tile_round<kInverse, kRows>(tile.data(), l, sh, bx, tid, r);
        for (u32 tid = 0; tid < threads; ++tid) ntt_tile_store<kRows>(tile.data(), l.data, sh, bx, tid, threads);
    }
}

/// The CUDA transform of one limb (l.data, host memory; from l.src when set) computed on the host by the kernels'
/// own code, in the order the launcher runs them (the first kernel reads l.src, the second l.data).
inline void ntt_emulate(const NttLimb& l, const NttShape& sh, bool inverse) {
    NttLimb later = l;
    later.src = nullptr;
    if (!inverse) {
        if (sh.s1 > 0) {
            ntt_kernel_emulate<false, false>(l, sh);
            ntt_kernel_emulate<false, true>(later, sh);
        } else {
            ntt_kernel_emulate<false, true>(l, sh);
        }
    } else {
        ntt_kernel_emulate<true, true>(l, sh);
        if (sh.s1 > 0) ntt_kernel_emulate<true, false>(later, sh);
    }
}

}  // namespace ember::cuda
