// The CUDA backend's entry points (library ember_cuda; plain C++, no CUDA header). A program that links ember_cuda
// calls register_cuda_backend() once, after which make_backend("cuda", threads) and so Context(params, threads,
// make_backend("cuda", threads)) or EMBER_DEVICE=cuda run on the GPU (backend/cuda/backend_impl.cuh).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace ember::cuda {

/// Provides the device "cuda" to make_backend (register_backend_factory). Idempotent and thread-safe; needs no
/// GPU (the factory checks for one when it is called).
void register_cuda_backend();

/// A CUDA backend on device 0 (`threads` is accepted for the interface's sake and must be in [1, 256]; the backend
/// reports 1). Throws std::runtime_error("no CUDA device: ...") when device_count() is 0.
std::shared_ptr<Backend> make_cuda_backend(int threads);

}  // namespace ember::cuda
