// The fast base conversion kernel of ember_cuda (Backend::base_convert, plain and centered): the three phases of
// backend/cuda/base_convert_phases.hpp (scale into shared memory, the centered correction, the outputs), separated by
// barriers, kBcCoeffs coefficients per block, one launch per pass (bc_for_each_pass: one launch unless there are
// more than kBcChunkSources sources or kBcOutBatch outputs).
//
// Nothing is staged and nothing waits: the pass's limb pointers travel by value in the kernel's parameter space
// (__grid_constant__, read in place), the converter's constants are device memory kept by DeviceBaseConverter, and
// the only scratch (the centered correction's running sums, when one pass cannot take every source) comes from the
// stream-ordered pool and is released in stream order.
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

namespace {

/// A launch's parameters: the converter's constants (device pointers), the pass, and its limbs (the sources
/// [i0, i0 + kc) in `in`, the outputs [j0, j0 + mb) in `out`).
struct BcLaunch {
    BaseConvTable t;
    BcPass pass;
    const u64* in[kBcChunkSources];
    u64* out[kBcOutBatch];
};
static_assert(sizeof(BcLaunch) + sizeof(std::size_t) <= 4096, "base_convert's parameters must fit the classic 4 KiB");

__global__ void __launch_bounds__(kBcThreads) base_convert_kernel(const __grid_constant__ BcLaunch l, std::size_t n) {
    extern __shared__ u64 smem[];
    u64* y = smem;                         // l.pass.kc rows of kBcCoeffs words
    u64* v = smem + l.pass.kc * kBcCoeffs; // kBcCoeffs words
    const std::size_t c0 = static_cast<std::size_t>(blockIdx.x) * kBcCoeffs;
    bc_scale(y, l.t, l.in, l.pass, c0, n, threadIdx.x, blockDim.x);
    __syncthreads();
    bc_center(v, y, l.t, l.pass, c0, n, threadIdx.x, blockDim.x);
    __syncthreads();
    bc_output(l.out, y, v, l.t, l.pass, c0, n, threadIdx.x, blockDim.x);
}

}  // namespace

void base_convert(const DeviceBaseConverter& conv, std::span<const u64* const> in, std::span<u64* const> out,
                  std::size_t n, bool centered) {
    const BaseConvTable& t = conv.table();
    if (in.size() != t.k || out.size() != t.m)
        throw std::invalid_argument("cuda::base_convert: limb counts do not match the converter");
    if (n == 0 || t.m == 0) return;
    const std::size_t blocks = (n + kBcCoeffs - 1) / kBcCoeffs;
    if (blocks > 0x7fffffffu) throw std::invalid_argument("cuda::base_convert: too many coefficients");
    // the centered correction's running sums between passes, when the sources take more than one (stream order:
    // allocated before the first launch, freed after the last)
    double* f = nullptr;
    if (centered && t.k > kBcChunkSources) f = reinterpret_cast<double*>(pool_allocate(n));
    static_assert(sizeof(double) == sizeof(u64));
    try {
        bc_for_each_pass(t.k, t.m, centered, f, [&](const BcPass& p) {
            BcLaunch l{};
            l.t = t;
            l.pass = p;
            for (u32 r = 0; r < p.kc; ++r) l.in[r] = in[p.i0 + r];
            for (u32 b = 0; b < p.mb; ++b) l.out[b] = out[p.j0 + b];
            const std::size_t smem = (static_cast<std::size_t>(p.kc) + 1) * kBcCoeffs * sizeof(u64);  // <= 48 KiB
            base_convert_kernel<<<static_cast<unsigned>(blocks), kBcThreads, smem>>>(l, n);
            EMBER_CUDA_CHECK_LAUNCH();
        });
    } catch (...) {
        pool_free(f);
        throw;
    }
    pool_free(f);  // after the launches that use it (stream order)
}

}  // namespace ember::cuda
