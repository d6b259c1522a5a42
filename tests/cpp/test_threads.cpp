// Several std::threads sharing one Context (and its thread pool), one Evaluator and one key set: encrypt,
// multiply, rotate, decrypt at the same time. Deterministic operations must give bit-identical results to a
// single-threaded reference; decryptions must be within the usual bound of the expected slots. Run under
// ThreadSanitizer by `make test-tsan` (EMBER_STRESS_ROUNDS shortens or lengthens it).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "io/serialize.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

bool identical(const Poly& a, const Poly& b) {
    if (a.q_limbs() != b.q_limbs() || a.basis() != b.basis() || a.form() != b.form()) return false;
    const HostLimbs ha = a.host(), hb = b.host();
    for (std::size_t i = 0; i < a.limbs(); ++i)
        if (std::memcmp(ha.limb(i), hb.limb(i), a.n() * sizeof(u64)) != 0) return false;
    return true;
}

bool identical(const Ciphertext& a, const Ciphertext& b) { return a.scale == b.scale && a.slots == b.slots && identical(a.c0, b.c0) && identical(a.c1, b.c1); }

int rounds() {
    const char* r = std::getenv("EMBER_STRESS_ROUNDS");
    return r && *r ? std::max(1, std::atoi(r)) : 3;
}

TEST(Threads, SharedContextStress) {
    auto ctx = std::make_shared<Context>(test_params(3), /*threads=*/2);
    const Evaluator ev(ctx);
    const KeySet keys = ctx->keygen({1, 5}, /*conjugation=*/false);
    constexpr int kThreads = 4;
    std::mt19937_64 rng(21);

    // Single-threaded reference: inputs, and rotate(x * x, 1) + rotate(x * x, 5) computed once.
    std::vector<std::vector<cplx>> xs;
    std::vector<Ciphertext> cts, refs;
    std::vector<std::vector<std::uint8_t>> ref_bytes;
    for (int t = 0; t < kThreads; ++t) {
        xs.push_back(random_slots(ctx->slots(), rng));
        cts.push_back(ctx->encrypt(ctx->encode(xs.back()), *keys.pub));
        const Ciphertext sq = ev.mul(cts.back(), cts.back(), *keys.relin);
        refs.push_back(ev.add(ev.rotate(sq, 1, *keys.galois), ev.rotate(sq, 5, *keys.galois)));
        ref_bytes.push_back(to_bytes(*ctx, refs.back()));
    }
    auto expected = [&](int t) { return slot_add(rotated(slot_mul(xs[t], xs[t]), 1), rotated(slot_mul(xs[t], xs[t]), 5)); };
    for (int t = 0; t < kThreads; ++t) ASSERT_LT(max_err(ctx->decrypt(refs[t], *keys.secret), expected(t)), 1e-5);

    std::atomic<int> mismatches{0}, bad_decryptions{0}, errors{0};
    const int n_rounds = rounds();
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
        pool.emplace_back([&, t] {
            try {
                for (int r = 0; r < n_rounds; ++r) {
                    // Each thread works on another thread's input in turn, so every input is shared.
                    const int i = (t + r) % kThreads;
                    const Ciphertext sq = ev.mul(cts[i], cts[i], *keys.relin);
                    const Ciphertext y = ev.add(ev.rotate(sq, 1, *keys.galois), ev.rotate(sq, 5, *keys.galois));
                    if (!identical(y, refs[i])) ++mismatches;
                    if (to_bytes(*ctx, y) != ref_bytes[i]) ++mismatches;
                    const Ciphertext back = ciphertext_from_bytes(*ctx, ref_bytes[i]);
                    if (!identical(back, refs[i])) ++mismatches;
                    if (max_err(ctx->decrypt(y, *keys.secret), expected(i)) > 1e-5) ++bad_decryptions;
                    // Fresh encryptions draw their own randomness in every thread.
                    const Ciphertext fresh = ctx->encrypt(ctx->encode(xs[i]), *keys.pub);
                    if (max_err(ctx->decrypt(fresh, *keys.secret), xs[i]) > 1e-6) ++bad_decryptions;
                    const auto rot = ev.rotate_many(fresh, {1, 5}, *keys.galois);
                    if (max_err(ctx->decrypt(rot[1], *keys.secret), rotated(xs[i], 5)) > 1e-6) ++bad_decryptions;
                    // An explicitly flooded decryption (does not touch the context's policy).
                    if (max_err(ctx->decrypt(fresh, *keys.secret, DecryptionFlooding{4, 20, 1}), xs[i]) > 1e-3) ++bad_decryptions;
                }
            } catch (const std::exception& e) {
                ++errors;
                ADD_FAILURE() << "thread " << t << ": " << e.what();
            }
        });
    for (auto& th : pool) th.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(mismatches.load(), 0) << "results differ from the single-threaded reference";
    EXPECT_EQ(bad_decryptions.load(), 0);
}

}  // namespace
}  // namespace ember
