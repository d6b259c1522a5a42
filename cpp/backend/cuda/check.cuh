// Error checking and launch helpers shared by the .cu files of ember_cuda (internal).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace ember::cuda::detail {

[[noreturn]] inline void fail(cudaError_t e, const char* what, const char* file, int line) {
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                             ") at " + file + ":" + std::to_string(line));
}

/// Throws when the launches queued so far failed to launch (bad configuration, no device, ...).
#define EMBER_CUDA_CHECK(expr)                                                              \
    do {                                                                                    \
        const cudaError_t ember_cuda_err_ = (expr);                                         \
        if (ember_cuda_err_ != cudaSuccess)                                                 \
            ::ember::cuda::detail::fail(ember_cuda_err_, #expr, __FILE__, __LINE__);        \
    } while (0)
#define EMBER_CUDA_CHECK_LAUNCH() EMBER_CUDA_CHECK(cudaGetLastError())

/// Blocks of `threads` threads to cover n items with a grid-stride loop: enough to fill the device several times
/// over, no more than needed.
inline unsigned grid_for(std::size_t n, unsigned threads, unsigned cap = 4096) {
    const std::size_t b = (n + threads - 1) / threads;
    return static_cast<unsigned>(b < cap ? (b == 0 ? 1 : b) : cap);
}

}  // namespace ember::cuda::detail
