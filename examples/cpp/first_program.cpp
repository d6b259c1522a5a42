// The C++ counterpart of examples/01_first_program.py, built against an installed Ember (examples/cpp/CMakeLists.txt):
// encrypt a vector, compute (x * x) rotated by one slot, decrypt, and compare with the same computation in float64.
// Small, insecure parameters (N = 2^12, scale 2^40) so that it runs in a second; the bound is 2^-20 per slot.
// Exits 0 when every slot is within the bound, 1 otherwise.
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <ember/ckks/context.hpp>
#include <ember/ckks/evaluator.hpp>
#include <ember/version.hpp>

int main() {
#ifdef EMBER_PACKAGE_VERSION
    // The headers and the CMake package must be the same release (both come from Ember's VERSION file).
    if (std::strcmp(EMBER_PACKAGE_VERSION, ember::kVersion) != 0) {
        std::fprintf(stderr, "version mismatch: CMake package %s, headers %s\n", EMBER_PACKAGE_VERSION, ember::kVersion);
        return 1;
    }
#endif
    ember::CkksParams params;
    params.log_n = 12;          // N = 2^12: 2048 slots
    params.levels = 4;
    params.log_scale = 40;      // scale 2^40
    params.first_mod_bits = 50;
    params.dnum = 2;
    params.insecure = true;     // below the 128-bit bound at this N; for a quick check only
    params.finalize();

    auto ctx = std::make_shared<ember::Context>(params, /*threads=*/2);
    const ember::KeySet keys = ctx->keygen(/*rotations=*/{1});
    const ember::Evaluator ev(ctx);

    std::mt19937_64 rng(2024);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::vector<ember::cplx> x(ctx->slots());
    for (auto& v : x) v = {uniform(rng), uniform(rng)};

    const ember::Ciphertext ct = ctx->encrypt(ctx->encode(x), *keys.pub);
    const ember::Ciphertext sq = ev.mul(ct, ct, *keys.relin);          // relinearized and rescaled
    const ember::Ciphertext rot = ev.rotate(sq, 1, *keys.galois);      // slot i <- slot i + 1
    const std::vector<ember::cplx> y = ctx->decrypt(rot, *keys.secret);

    double max_err = 0;
    const std::size_t n = x.size();
    for (std::size_t i = 0; i < n; ++i) {
        const ember::cplx want = x[(i + 1) % n] * x[(i + 1) % n];
        max_err = std::max(max_err, std::abs(y[i] - want));
    }
    const double bound = std::ldexp(1.0, -20);
    std::printf("Ember %s: (x * x).rotate(1) over %zu slots, max error %.3g (2^%.1f), bound 2^-20: %s\n",
                ember::kVersion, n, max_err, std::log2(max_err), max_err < bound ? "ok" : "FAILED");
    return max_err < bound ? 0 : 1;
}
