#include "math/cpu_features.hpp"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace ember {

static CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1;
    if (!osxsave) return f;
    unsigned xlo, xhi;
    __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    const bool zmm_state = (xlo & 0xe6) == 0xe6;  // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM enabled by the OS
    if (!zmm_state || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512ifma = (b >> 21) & 1;
    f.avx512vl = (b >> 31) & 1;
    if (const char* cap = std::getenv("EMBER_SIMD")) {
        if (std::strcmp(cap, "scalar") == 0) f = CpuFeatures{};
        else if (std::strcmp(cap, "avx512") == 0) f.avx512ifma = false;
    }
    return f;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

}  // namespace ember
