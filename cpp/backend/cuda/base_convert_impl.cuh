// The fast base conversion kernel of ember_cuda (Backend::base_convert, plain and centered): the three phases of
// backend/cuda/base_convert_phases.hpp (scale into shared memory, the centered correction, the outputs), separated by
// barriers, kBcCoeffs coefficients per block.
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

namespace {

__global__ void __launch_bounds__(kBcThreads) base_convert_kernel(const BaseConvTable t, const u64* const* in,
                                                                  u64* const* out, std::size_t n, bool centered) {
    extern __shared__ u64 smem[];
    u64* y = smem;                         // t.k rows of kBcCoeffs words
    u64* v = smem + t.k * kBcCoeffs;       // kBcCoeffs words
    const std::size_t c0 = static_cast<std::size_t>(blockIdx.x) * kBcCoeffs;
    bc_scale(y, t, in, c0, n, threadIdx.x, blockDim.x);
    __syncthreads();
    bc_center(v, y, t, centered, threadIdx.x, blockDim.x);
    __syncthreads();
    bc_output(out, y, v, t, c0, n, threadIdx.x, blockDim.x);
}

}  // namespace

void base_convert(const DeviceBaseConverter& conv, std::span<const u64* const> in, std::span<u64* const> out,
                  std::size_t n, bool centered) {
    const BaseConvTable& t = conv.table();
    if (in.size() != t.k || out.size() != t.m)
        throw std::invalid_argument("cuda::base_convert: limb counts do not match the converter");
    if (n == 0) return;
    // the limb pointers, staged in device memory for the call: the k inputs, then the m outputs
    const std::vector<const u64*> pin_h(in.begin(), in.end());
    const std::vector<u64*> pout_h(out.begin(), out.end());
    DeviceMemory mem((pin_h.size() + pout_h.size()) * sizeof(u64*));
    mem.upload(pin_h.data(), pin_h.size() * sizeof(u64*));
    mem.upload(pout_h.data(), pout_h.size() * sizeof(u64*), pin_h.size() * sizeof(u64*));
    const auto* pin = static_cast<const u64* const*>(mem.get());
    auto* pout = reinterpret_cast<u64* const*>(static_cast<char*>(mem.get()) + pin_h.size() * sizeof(u64*));
    const std::size_t blocks = (n + kBcCoeffs - 1) / kBcCoeffs;
    const std::size_t smem = (static_cast<std::size_t>(t.k) + 1) * kBcCoeffs * sizeof(u64);  // <= 48 KiB
    base_convert_kernel<<<static_cast<unsigned>(blocks), kBcThreads, smem>>>(t, pin, pout, n, centered);
    EMBER_CUDA_CHECK_LAUNCH();
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());  // before `mem` is freed
}

}  // namespace ember::cuda
