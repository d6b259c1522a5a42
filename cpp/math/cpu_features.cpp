#include "math/cpu_features.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define EMBER_X86_64 1
#endif

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ember {

const char* simd_path_name(SimdPath p) {
    switch (p) {
        case SimdPath::kAvx2: return "avx2";
        case SimdPath::kAvx512: return "avx512";
        case SimdPath::kIfma: return "ifma";
        default: return "scalar";
    }
}

namespace detail {

CpuFeatures detect_cpu() {
    CpuFeatures f;
#if defined(EMBER_X86_64)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx) return f;
    unsigned xlo, xhi;
    __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    const bool ymm_state = (xlo & 0x6) == 0x6;    // XMM and YMM saved by the OS
    const bool zmm_state = (xlo & 0xe6) == 0xe6;  // and opmask, ZMM_Hi256, Hi16_ZMM
    if (!ymm_state || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.fma = fma;
    f.avx2 = (b >> 5) & 1;
    f.bmi2 = (b >> 8) & 1;
    if (zmm_state) {
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512ifma = (b >> 21) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
    }
    if (f.avx2 && f.bmi2 && f.fma) f.best = SimdPath::kAvx2;
    if (f.best == SimdPath::kAvx2 && f.avx512f && f.avx512dq && f.avx512vl && f.avx512bw) f.best = SimdPath::kAvx512;
    if (f.best == SimdPath::kAvx512 && f.avx512ifma) f.best = SimdPath::kIfma;
#elif defined(__aarch64__)
    f.neon = true;  // Advanced SIMD is part of every AArch64 CPU
#endif
    f.path = f.best;
    return f;
}

CpuFeatures apply_simd_env(CpuFeatures f, const char* value) {
    f.path = f.best;
    f.forced = false;
    if (value == nullptr) return f;
    static constexpr SimdPath kAll[] = {SimdPath::kScalar, SimdPath::kAvx2, SimdPath::kAvx512, SimdPath::kIfma};
    std::string choices;
    for (SimdPath p : kAll) {
        if (p > f.best) break;
        choices += choices.empty() ? "" : ", ";
        choices += simd_path_name(p);
    }
    for (SimdPath p : kAll) {
        if (std::strcmp(value, simd_path_name(p)) != 0) continue;
        if (p > f.best)
            throw std::runtime_error(std::string("EMBER_SIMD=") + value + ": this CPU (" + cpu_name() +
                                     ") lacks that path; it supports " + choices);
        f.path = p;
        f.forced = true;
        return f;
    }
    throw std::runtime_error(std::string("EMBER_SIMD='") + value +
                             "' is not a kernel path: choose one of scalar, avx2, avx512, ifma (this CPU supports " +
                             choices + ")");
}

}  // namespace detail

namespace {

struct Detected {
    CpuFeatures f;
    std::string error;
};

const Detected& detected() {
    static const Detected d = [] {
        Detected r;
        try {
            r.f = detail::apply_simd_env(detail::detect_cpu(), std::getenv("EMBER_SIMD"));
        } catch (const std::exception& e) {
            r.error = e.what();
        }
        return r;
    }();
    return d;
}

}  // namespace

const CpuFeatures& cpu_features() {
    const Detected& d = detected();
    if (!d.error.empty()) throw std::runtime_error(d.error);
    return d.f;
}

std::string cpu_name() {
#if defined(EMBER_X86_64)
    unsigned r[12] = {};
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        for (unsigned i = 0; i < 3; ++i) __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        std::string s(reinterpret_cast<const char*>(r), sizeof(r));
        s = s.c_str();
        const auto b0 = s.find_first_not_of(' '), e0 = s.find_last_not_of(' ');
        return b0 == std::string::npos ? "x86-64" : s.substr(b0, e0 - b0 + 1);
    }
    return "x86-64";
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "unknown architecture";
#endif
}

}  // namespace ember
