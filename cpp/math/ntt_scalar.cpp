// The fast scalar NTT (math/ntt_scalar_impl.hpp), compiled with the baseline flags: the portable path, and the one
// EMBER_SIMD=scalar runs. math/ntt_scalar_v3_avx2.cpp holds the same code compiled for x86-64-v3.
#include "math/ntt.hpp"

#include "math/cpu_features.hpp"
#include "math/ntt_scalar_impl.hpp"

namespace ember {

void ntt_forward_scalar(u64* a, const NttTables& t) { detail::scalar_ntt::forward(a, t); }

void ntt_inverse_scalar(u64* a, const NttTables& t) { detail::scalar_ntt::inverse(a, t); }

namespace detail {

bool ntt_scalar_v3_supported() {
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    return f.use_avx2() && f.bmi2;  // use_avx2: the CPU has AVX2, BMI2 and FMA, and EMBER_SIMD allows them
#else
    return false;
#endif
}

}  // namespace detail

}  // namespace ember
