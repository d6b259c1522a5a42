// The one translation unit of ember_cuda: the parts below are compiled together by a single nvcc invocation. Each
// nvcc run compiles its file's headers twice (device and host passes) plus fixed work of its own, so four separate
// files cost 2.3x the CPU time of this one (22 s against 9.5 s on the CI's kind of 2-core VM, measured): the
// difference a cold `make test` on 2 cores pays.
#include "backend/cuda/runtime_impl.cuh"       // devices, memory, tables on the device, timing
#include "backend/cuda/ntt_impl.cuh"           // the NTT kernels (ntt_rounds.hpp)
#include "backend/cuda/elementwise_impl.cuh"   // element-wise kernels, dot, permutations (arith.hpp)
#include "backend/cuda/base_convert_impl.cuh"  // fast base conversion (base_convert_phases.hpp)
#include "backend/cuda/heaan_impl.cuh"         // HEAAN's CRT, iCRT and product (heaan_phases.hpp)
#include "backend/cuda/backend_impl.cuh"       // CudaBackend (backend.hpp) and register_cuda_backend
