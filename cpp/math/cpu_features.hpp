// Run-time CPU feature detection, per architecture, so one build runs on every CPU of its architecture.
//
// x86-64: CPUID and XGETBV (the OS must save the vector state too). The kernel paths, from the reference up:
//   scalar  portable C++ (the reference every other path is tested against, bit for bit);
//   avx2    x86-64-v3: AVX2, BMI2 and FMA (4 x 64-bit lanes; 64-bit products from 32 x 32-bit lane products);
//   avx512  AVX-512 F/DQ/VL/BW (8 lanes, same arithmetic);
//   ifma    AVX-512 IFMA on top of avx512 (52-bit multiplier lanes, for primes below 2^50).
// aarch64: the scalar path only (NEON has no 64-bit lane multiply); other architectures: scalar.
//
// EMBER_SIMD=scalar|avx2|avx512|ifma in the environment caps the path (tests and benchmarks force one path with
// it). A value that is not one of those, or a path this CPU lacks, is refused with std::runtime_error naming the
// choices, on the first call of cpu_features() (Context construction and the Python module's import make that
// call, so the refusal comes before any work, never as SIGILL).
#pragma once

#include <string>

namespace ember {

/// The kernel paths in increasing order; each includes the instructions of those below it (on x86-64).
enum class SimdPath { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kIfma = 3 };

struct CpuFeatures {
    // what the CPU has (as detected, before EMBER_SIMD)
    bool avx2 = false, bmi2 = false, fma = false;             // x86-64-v3 (with the OS saving YMM state)
    bool avx512f = false, avx512dq = false, avx512vl = false, avx512bw = false, avx512ifma = false;
    bool neon = false;                                          // aarch64 Advanced SIMD
    /// The best path the CPU supports, and the one the kernels use (capped by EMBER_SIMD).
    SimdPath best = SimdPath::kScalar;
    SimdPath path = SimdPath::kScalar;
    bool forced = false;  // EMBER_SIMD was set

    bool use_avx2() const { return path >= SimdPath::kAvx2; }
    bool use_avx512() const { return path >= SimdPath::kAvx512; }
    bool use_ifma() const { return path >= SimdPath::kIfma; }
};

/// Detected once (thread-safe); throws std::runtime_error on a bad EMBER_SIMD (every later call throws the same).
const CpuFeatures& cpu_features();

/// "scalar", "avx2", "avx512" or "ifma".
const char* simd_path_name(SimdPath p);

/// The processor's name as the CPU reports it (x86-64: the CPUID brand string; elsewhere the architecture).
std::string cpu_name();

namespace detail {
/// Caps the detected features `f` with an EMBER_SIMD value (null: not set). Throws std::runtime_error naming the
/// choices for an unknown value, and for a path above f.best. Pure: tests call it with made-up features.
CpuFeatures apply_simd_env(CpuFeatures f, const char* value);
/// The features as detected, EMBER_SIMD ignored.
CpuFeatures detect_cpu();
}  // namespace detail

}  // namespace ember
