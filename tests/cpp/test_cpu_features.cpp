// Run-time path selection (math/cpu_features): detection is consistent, EMBER_SIMD caps the path, and bad values or
// paths above the CPU's are refused with an error that names the choices. apply_simd_env is pure, so every case runs
// on every machine with made-up feature sets.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "math/cpu_features.hpp"

namespace ember {
namespace {

CpuFeatures with_best(SimdPath best) {
    CpuFeatures f;
    f.best = best;
    f.path = best;
    return f;
}

std::string refusal(const CpuFeatures& f, const char* value) {
    try {
        detail::apply_simd_env(f, value);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return {};
}

TEST(CpuFeatures, DetectionIsConsistent) {
    const CpuFeatures d = detail::detect_cpu();
    if (d.best >= SimdPath::kAvx2) EXPECT_TRUE(d.avx2 && d.bmi2 && d.fma);
    if (d.best >= SimdPath::kAvx512) EXPECT_TRUE(d.avx512f && d.avx512dq && d.avx512vl && d.avx512bw);
    if (d.best >= SimdPath::kIfma) EXPECT_TRUE(d.avx512ifma);
    if (d.avx2 && d.bmi2 && d.fma) EXPECT_GE(d.best, SimdPath::kAvx2);
#if !defined(__x86_64__)
    EXPECT_EQ(d.best, SimdPath::kScalar);  // no vector kernels off x86-64
#endif
    // the process's own features: the path in use never exceeds the CPU's best
    const CpuFeatures& f = cpu_features();
    EXPECT_LE(f.path, f.best);
    EXPECT_EQ(f.best, d.best);
    EXPECT_FALSE(cpu_name().empty());
}

TEST(CpuFeatures, UnsetKeepsTheBest) {
    for (SimdPath b : {SimdPath::kScalar, SimdPath::kAvx2, SimdPath::kAvx512, SimdPath::kIfma}) {
        const CpuFeatures f = detail::apply_simd_env(with_best(b), nullptr);
        EXPECT_EQ(f.path, b);
        EXPECT_FALSE(f.forced);
    }
}

TEST(CpuFeatures, CapsAtOrBelowTheBest) {
    const CpuFeatures ifma = with_best(SimdPath::kIfma);
    const struct {
        const char* value;
        SimdPath path;
    } cases[] = {{"scalar", SimdPath::kScalar}, {"avx2", SimdPath::kAvx2}, {"avx512", SimdPath::kAvx512}, {"ifma", SimdPath::kIfma}};
    for (const auto& c : cases) {
        const CpuFeatures f = detail::apply_simd_env(ifma, c.value);
        EXPECT_EQ(f.path, c.path) << c.value;
        EXPECT_TRUE(f.forced);
        EXPECT_STREQ(simd_path_name(f.path), c.value);
        EXPECT_EQ(f.use_avx2(), c.path >= SimdPath::kAvx2);
        EXPECT_EQ(f.use_avx512(), c.path >= SimdPath::kAvx512);
        EXPECT_EQ(f.use_ifma(), c.path == SimdPath::kIfma);
    }
    EXPECT_EQ(detail::apply_simd_env(with_best(SimdPath::kScalar), "scalar").path, SimdPath::kScalar);
}

TEST(CpuFeatures, RefusesPathsAboveTheCpu) {
    const std::string m = refusal(with_best(SimdPath::kAvx2), "avx512");
    ASSERT_FALSE(m.empty()) << "avx512 on an AVX2-only CPU was accepted";
    EXPECT_NE(m.find("lacks"), std::string::npos) << m;
    EXPECT_NE(m.find("scalar, avx2"), std::string::npos) << m;  // the choices this CPU has
    EXPECT_FALSE(refusal(with_best(SimdPath::kAvx2), "ifma").empty());
    EXPECT_FALSE(refusal(with_best(SimdPath::kScalar), "avx2").empty());
    EXPECT_FALSE(refusal(with_best(SimdPath::kAvx512), "ifma").empty());
}

TEST(CpuFeatures, RefusesUnknownValuesNamingTheChoices) {
    for (const char* bad : {"", "AVX2", "sse4", "neon", "avx-512", "scalar ", "fast"}) {
        const std::string m = refusal(with_best(SimdPath::kIfma), bad);
        ASSERT_FALSE(m.empty()) << "'" << bad << "' was accepted";
        EXPECT_NE(m.find("scalar, avx2, avx512, ifma"), std::string::npos) << m;
    }
}

}  // namespace
}  // namespace ember
