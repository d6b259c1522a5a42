#include "math/kernel_paths.hpp"

#include <algorithm>

#include "heaan/crt.hpp"
#include "math/cpu_features.hpp"
#include "math/ntt.hpp"
#include "math/vec_simd.hpp"

namespace ember {

const char* ntt_path_for(u64 q) {
    NttTables t;  // the dispatcher looks at n and q only: no tables are built
    t.n = std::size_t(1) << 16;
    t.log_n = 16;
    t.mod = Modulus(q);
    return ntt_path(t);
}

const char* elementwise_path_for(u64 q) {
    const Modulus m(q);
    if (detail::vec_ifma_supported(m)) return "ifma";
    if (detail::vec_avx512_supported()) return "avx512";
    if (detail::vec_avx2_supported()) return "avx2";
    return "scalar";
}

namespace {

/// The distinct paths of f over the primes, widest first, joined with '+'.
template <class F>
std::string joined(const std::vector<u64>& primes, F f) {
    static constexpr const char* kOrder[] = {"ifma", "avx512", "avx2", "scalar"};
    std::vector<std::string> seen;
    for (u64 q : primes) {
        const std::string p = f(q);
        if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
    }
    std::string out;
    for (const char* p : kOrder)
        if (std::find(seen.begin(), seen.end(), p) != seen.end()) out += (out.empty() ? "" : "+") + std::string(p);
    return out.empty() ? "scalar" : out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> kernel_paths(const std::vector<u64>& primes) {
    const CpuFeatures& f = cpu_features();
    std::vector<std::pair<std::string, std::string>> out;
    out.emplace_back("ntt", joined(primes, ntt_path_for));
    out.emplace_back("elementwise", joined(primes, elementwise_path_for));
    // base_convert_ifma takes odd primes in [2^20, 2^61), base_convert_avx2 any primes (below 2^61, as every Modulus)
    const bool ifma_primes = std::all_of(primes.begin(), primes.end(), [](u64 q) { return (q & 1) && q >= (u64(1) << 20); });
    out.emplace_back("base_conversion", f.use_ifma() && ifma_primes ? "ifma" : f.use_avx2() ? "avx2" : "scalar");
    out.emplace_back("automorphism", "scalar");
    out.emplace_back("heaan_crt", heaan::detail::crt_ifma_supported() ? "ifma" : heaan::detail::crt_avx2_supported() ? "avx2" : "scalar");
    return out;
}

}  // namespace ember
