// Linked into ember_tests when the CUDA kernels are built (tests/cuda/CMakeLists.txt): registers the CUDA backend
// before main, so that `EMBER_DEVICE=cuda ember_tests` runs the whole C++ suite on the GPU (bench/gpu/device_check.sh).
// Registering touches no CUDA API; without a GPU, make_backend("cuda") still fails cleanly ("no CUDA device").
#include "backend/cuda/register.hpp"

namespace {
[[maybe_unused]] const bool g_registered = [] {
    ember::cuda::register_cuda_backend();
    return true;
}();
}  // namespace
