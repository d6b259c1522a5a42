// Run-time CPU feature detection (CPUID), so one build runs on any x86-64.
#pragma once

namespace ember {

struct CpuFeatures {
    bool avx512f = false;
    bool avx512dq = false;
    bool avx512ifma = false;
    bool avx512vl = false;
};

/// Detected once; EMBER_SIMD=scalar|avx512|ifma in the environment caps the level (for tests and benchmarks).
const CpuFeatures& cpu_features();

}  // namespace ember
