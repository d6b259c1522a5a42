// The NTT kernels of ember_cuda: the column kernel and the row kernel of backend/cuda/ntt_rounds.hpp, which holds
// their arithmetic, indexing and the reasoning behind them (the same code runs in the host tests' emulation).
//
// A block: load its tile (kNttTileWords words: `cols` columns of N1 words, or `rows` rows of N2 words) from global
// memory into shared memory, then ceil(s / 3) register rounds of up to three stages with a barrier after each, then
// store the tile. One launch transforms up to kNttBatch limbs: blockIdx.y picks the limb, whose descriptor (data,
// twiddles, constants) is read from the kernel's parameter space (__grid_constant__: no copy per thread).
//
// Out of place (ntt_inverse_from: ModUp's Decomp + iNTT): the first kernel loads each tile from the source limb and
// stores it to the output, so the copy costs no pass of its own (MAD's per-limb caching).
//
// Untuned (see bench/gpu/device_check.sh for the measurements to make): the rows' later rounds access shared memory
// at strides of 2^k words (bank conflicts a padded or swizzled layout would remove), and the first and last rounds
// could read from / write to global memory directly instead of through the tile.
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

namespace {

struct NttBatch {
    NttLimb limb[kNttBatch];
};

template <bool kInverse, bool kRows>
__global__ void __launch_bounds__(256) ntt_kernel(const __grid_constant__ NttBatch batch, const NttShape sh) {
    extern __shared__ u64 tile[];
    const NttLimb& l = batch.limb[blockIdx.y];
    const u32 tid = threadIdx.x, nthreads = blockDim.x;
    ntt_tile_load<kRows>(tile, l.src ? l.src : l.data, sh, blockIdx.x, tid, nthreads);
    __syncthreads();
    const u32 rounds = ntt_round_count(kRows ? sh.s2 : sh.s1);
    for (u32 r = 0; r < rounds; ++r) {
        ntt_tile_round<kInverse, kRows>(tile, l, sh, blockIdx.x, tid, r);
        __syncthreads();
    }
    ntt_tile_store<kRows>(tile, l.data, sh, blockIdx.x, tid, nthreads);
}

template <bool kInverse, bool kRows>
void launch(const NttBatch& batch, u32 count, const NttShape& sh) {
    const dim3 grid(ntt_blocks<kRows>(sh), count);
    const std::size_t smem = ntt_tile_words<kRows>(sh) * sizeof(u64);
    ntt_kernel<kInverse, kRows><<<grid, ntt_block_threads<kRows>(sh), smem>>>(batch, sh);
    EMBER_CUDA_CHECK_LAUNCH();
}

/// src: empty (in place) or one source per limb, read by the first kernel only (the copy fused into its load).
void ntt(std::span<u64* const> limbs, std::span<const DeviceNttTables* const> tables, bool inverse,
         std::span<const u64* const> src = {}) {
    if (limbs.size() != tables.size())
        throw std::invalid_argument("cuda::ntt: " + std::to_string(limbs.size()) + " limbs, " + std::to_string(tables.size()) +
                                    " tables");
    if (!src.empty() && src.size() != limbs.size())
        throw std::invalid_argument("cuda::ntt: " + std::to_string(limbs.size()) + " limbs, " + std::to_string(src.size()) +
                                    " sources");
    if (limbs.empty()) return;
    const u32 log_n = tables[0]->log_n();
    if (log_n < 1 || log_n > 17) throw std::invalid_argument("cuda::ntt: log_n must be in [1, 17]");
    for (const DeviceNttTables* t : tables)
        if (t->log_n() != log_n) throw std::invalid_argument("cuda::ntt: the limbs of a batch must have one size");
    const NttShape sh = ntt_shape(log_n);
    for (std::size_t l0 = 0; l0 < limbs.size(); l0 += kNttBatch) {
        const u32 count = static_cast<u32>(std::min(kNttBatch, limbs.size() - l0));
        NttBatch batch{};
        NttBatch later{};  // the second kernel: in place on data
        for (u32 l = 0; l < count; ++l) {
            batch.limb[l] = later.limb[l] = tables[l0 + l]->limb(limbs[l0 + l], inverse);
            if (!src.empty() && src[l0 + l] != limbs[l0 + l]) batch.limb[l].src = src[l0 + l];
        }
        // forward: columns (stages of distance >= N2), then rows; inverse: rows, then columns (with N^-1)
        if (!inverse) {
            if (sh.s1 > 0) {
                launch<false, false>(batch, count, sh);
                launch<false, true>(later, count, sh);
            } else {
                launch<false, true>(batch, count, sh);
            }
        } else {
            launch<true, true>(batch, count, sh);
            if (sh.s1 > 0) launch<true, false>(later, count, sh);
        }
    }
}

}  // namespace

void ntt_forward(std::span<u64* const> limbs, std::span<const DeviceNttTables* const> tables) { ntt(limbs, tables, false); }

void ntt_inverse(std::span<u64* const> limbs, std::span<const DeviceNttTables* const> tables) { ntt(limbs, tables, true); }

void ntt_inverse_from(std::span<u64* const> limbs, std::span<const u64* const> src, std::span<const DeviceNttTables* const> tables) {
    ntt(limbs, tables, true, src);
}

}  // namespace ember::cuda
