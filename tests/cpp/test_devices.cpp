// Devices (backend/backend.hpp's make_backend) and the guarded CPU mode (backend/guarded/): names and refusals, the
// guard itself (a host read of polynomial memory dies with the handler's message; a host pointer given to a kernel
// throws), and whole operations giving the same ciphertext bytes as the plain CPU backend from the same input bytes.
//
// The rest of the suite runs on the guarded mode too: ctest's "guarded:" entries run ember_tests with
// EMBER_DEVICE=cpu-guarded (tests/cpp/CMakeLists.txt), so any scheme code that reads or writes limbs without
// Backend::upload / download dies there, as it would on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "circuits/bootstrap.hpp"
#include "io/serialize.hpp"
#include "math/primes.hpp"
#include "trace/trace.hpp"
#include "test_util.hpp"

namespace ember {
namespace {

using namespace test;

/// Sets an environment variable for the scope and restores the old value.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_.c_str(), old_.c_str(), 1);
        else unsetenv(name_.c_str());
    }

private:
    std::string name_, old_;
    bool had_ = false;
};

/// f() throws std::logic_error (the guard's refusal) whose message contains every word.
template <class F>
void expect_refused(F&& f, const std::vector<std::string>& words) {
    try {
        f();
        ADD_FAILURE() << "no exception";
    } catch (const std::logic_error& e) {
        for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks '" << w << "'";
    }
}

TEST(Devices, NamesAndRefusals) {
    expect_invalid([] { (void)make_backend("gpu", 1); }, {"unknown device 'gpu'", "cpu, cpu-guarded, cuda"});
    expect_invalid([] { (void)make_backend("CPU", 1); }, {"unknown device"});
    EXPECT_STREQ(make_backend("cpu", 2)->name(), "cpu");
    EXPECT_EQ(make_backend("cpu", 2)->threads(), 2);
    EXPECT_STREQ(make_backend("cpu-guarded", 1)->name(), "cpu-guarded");
    EXPECT_FALSE(make_backend("cpu-guarded", 1)->host_addressable());
    EXPECT_TRUE(make_backend("cpu", 1)->host_addressable());
    // without the CUDA backend linked in, or without a GPU: a clear error, not a crash (with both, a backend)
    try {
        auto cuda = make_backend("cuda", 1);
        EXPECT_STREQ(cuda->name(), "cuda");
        EXPECT_FALSE(cuda->host_addressable());
    } catch (const std::runtime_error& e) {
        const std::string w = e.what();
        EXPECT_TRUE(w.find("no CUDA backend") != std::string::npos || w.find("no CUDA device") != std::string::npos) << w;
    }
    {
        ScopedEnv env("EMBER_DEVICE", "cpu-guarded");
        EXPECT_EQ(default_device(), "cpu-guarded");
        EXPECT_STREQ(make_backend("", 1)->name(), "cpu-guarded");
        const Context ctx(test_params(1));
        EXPECT_FALSE(ctx.ring()->backend().host_addressable());
    }
    {
        ScopedEnv env("EMBER_DEVICE", "tpu");
        expect_invalid([] { (void)default_device(); }, {"EMBER_DEVICE", "unknown device 'tpu'", "choices"});
    }
    {
        ScopedEnv env("EMBER_DEVICE", nullptr);
        EXPECT_EQ(default_device(), "cpu");
    }
}

TEST(GuardedDeathTest, HostReadOfPolynomialMemoryDies) {
    GTEST_FLAG_SET(death_test_style, "fast");  // fork without exec: also under qemu-user, where a re-exec fails
    auto be = make_backend("cpu-guarded", 1);
    u64* p = be->allocate(1024, true);
    // the words are there for the kernels and transfers ...
    std::vector<u64> host(1024, 7);
    be->upload(p, host.data(), host.size());
    std::vector<u64> back(1024, 0);
    be->download(back.data(), p, back.size());
    EXPECT_EQ(back, host);
    // ... but not for the host: the access dies, with the fault handler's message (under qemu-user, which runs the
    // emulated suites, the guest's handler is not reached and qemu reports the signal itself)
    const char* died = "touched guarded polynomial memory|qemu: uncaught target signal 11";
    EXPECT_DEATH({ volatile u64 v = p[3]; (void)v; }, died);
    EXPECT_DEATH({ p[5] = 1; }, died);
    be->release(p, 1024, true);
}

TEST(Guarded, KernelsRefuseHostPointersAndOverruns) {
    auto be = make_backend("cpu-guarded", 1);
    const RingContext ring(10, ntt_primes_near(50, 1, 2048), {}, be);
    const std::size_t n = ring.n();
    u64* dev = be->allocate(n, true);
    std::vector<u64> host(n, 1);
    const LimbRef out{dev, &ring.table(0)};
    const u64* in_host = host.data();
    expect_refused([&] { be->copy(std::span<const LimbRef>(&out, 1), std::span<const u64* const>(&in_host, 1)); },
                   {"copy", "not memory of this backend"});
    const LimbRef host_out{host.data(), &ring.table(0)};
    expect_refused([&] { be->ntt_forward(std::span<const LimbRef>(&host_out, 1)); }, {"ntt_forward", "not memory of this backend"});
    // a limb that runs past its block
    const LimbRef past{dev + 8, &ring.table(0)};
    expect_refused([&] { be->ntt_forward(std::span<const LimbRef>(&past, 1)); }, {"past the end"});
    expect_refused([&] { be->upload(dev + 1, host.data(), n); }, {"upload", "past the end"});
    be->release(dev, n, false);
    // a released block is no longer backend memory
    expect_refused([&] { be->ntt_forward(std::span<const LimbRef>(&out, 1)); }, {"not memory of this backend"});
}

// HE Mul (relinearised, rescaled), rotate, conjugate and a plaintext product on the guarded mode and on the CPU
// backend, from the same bytes: the same bytes out.
TEST(Guarded, WholeOperationsGiveTheCpuBytes) {
    const CkksParams params = test_params(3);
    auto cpu = std::make_shared<Context>(params, 1, make_backend("cpu", 1));
    auto grd = std::make_shared<Context>(params, 1, make_backend("cpu-guarded", 1));
    const KeySet keys = cpu->keygen({1, -3}, /*conjugation=*/true, /*seeded=*/true);
    std::mt19937_64 rng(29);
    const cvec x = random_slots(cpu->slots(), rng), y = random_slots(cpu->slots(), rng);
    const Ciphertext cx = cpu->encrypt(cpu->encode(x), *keys.pub), cy = cpu->encrypt(cpu->encode(y), *keys.pub);

    auto move = [&](const Ciphertext& c) { return ciphertext_from_bytes(*grd, to_bytes(*cpu, c)); };
    const SwitchingKey rlk_g = switching_key_from_bytes(*grd, to_bytes(*cpu, *keys.relin));
    const GaloisKeys gk_g = galois_keys_from_bytes(*grd, to_bytes(*cpu, *keys.galois));
    const SecretKey sk_g = secret_key_from_bytes(*grd, secret_key_to_bytes(*cpu, *keys.secret));

    Evaluator ev_c(cpu), ev_g(grd);
    const Ciphertext gx = move(cx), gy = move(cy);
    auto same = [&](const Ciphertext& on_cpu, const Ciphertext& on_guarded, const char* what) {
        EXPECT_EQ(to_bytes(*cpu, on_cpu), to_bytes(*grd, on_guarded)) << what;
    };
    const Ciphertext prod_c = ev_c.mul(cx, cy, *keys.relin), prod_g = ev_g.mul(gx, gy, rlk_g);
    same(prod_c, prod_g, "mul");
    same(ev_c.rotate(cx, 1, *keys.galois), ev_g.rotate(gx, 1, gk_g), "rotate 1");
    same(ev_c.rotate(cx, -3, *keys.galois), ev_g.rotate(gx, -3, gk_g), "rotate -3");
    same(ev_c.conjugate(cx, *keys.galois), ev_g.conjugate(gx, gk_g), "conjugate");
    const Plaintext py_c = cpu->encode(y, cx.scale, cx.level()), py_g = grd->encode(y, gx.scale, gx.level());
    same(ev_c.mul_plain(cx, py_c), ev_g.mul_plain(gx, py_g), "mul_plain");
    // and it decrypts right there (decryption reads limbs through host views)
    EXPECT_LT(max_err(grd->decrypt(prod_g, sk_g), [&] {
                  cvec z(x.size());
                  for (std::size_t i = 0; i < x.size(); ++i) z[i] = x[i] * y[i];
                  return z;
              }()),
              1e-5);
}

// On a device, polynomials stay in device memory: host transfers (traced as "upload" / "download" by Poly::host)
// belong to encoding, encryption, decryption, key generation and serialisation, never to evaluation. Checked on
// the guarded mode, which stages every host access as a GPU does, over products, rotations, rescaling and a whole
// bootstrapping (after one warm-up of each, which may build lazy tables).
TEST(Guarded, EvaluationMovesNoDataBetweenHostAndDevice) {
    BootstrapConfig cfg;
    cfg.slots = 8;
    auto ctx = std::make_shared<Context>(bootstrappable_params(12, 2, 40, cfg, 0, 50, 56, /*insecure=*/true), 1,
                                         make_backend("cpu-guarded", 1));
    const auto sk = ctx->gen_secret_key();
    const auto pk = ctx->gen_public_key(*sk);
    const auto rlk = ctx->gen_relin_key(*sk);
    const auto gk = ctx->gen_galois_keys(*sk, {1}, /*conjugation=*/true);
    const Bootstrapper bt(ctx, cfg);
    const BootstrapKeys bkeys = bt.gen_keys(*sk);
    const Evaluator ev(ctx);
    std::mt19937_64 rng(3);
    const cvec z = random_slots(8, rng);
    const std::size_t top = ctx->user_level();
    const Ciphertext x = ctx->encrypt(ctx->encode(z, ctx->scale_at(top), top), *pk);
    const Ciphertext x0 = ctx->encrypt(ctx->encode(z, ctx->scale_at(0), 0), *pk);
    auto evaluate = [&] {
        const Ciphertext p = ev.mul(x, x, *rlk);
        const Ciphertext r = ev.rotate(p, 1, *gk);
        const Ciphertext c = ev.conjugate(ev.add(r, x), *gk);
        return bt.bootstrap(x0, bkeys).level() + c.level();
    };
    (void)evaluate();  // warm-up
    trace::enable();
    trace::reset();
    (void)evaluate();
    const auto snap = trace::snapshot();
    trace::disable();
    for (const char* k : {"upload", "download"}) {
        const auto it = snap.find(k);
        EXPECT_TRUE(it == snap.end()) << k << ": " << (it == snap.end() ? 0 : it->second.calls) << " calls, "
                                      << (it == snap.end() ? 0 : it->second.bytes_read) << " bytes during evaluation";
    }
    EXPECT_GT(snap.at("ntt_forward").calls, 0u);  // the trace saw the evaluation
    // and the transfers are traced where they belong: decryption downloads
    trace::enable();
    trace::reset();
    (void)ctx->decrypt(x, *sk);
    const auto dec = trace::snapshot();
    trace::disable();
    EXPECT_GT(dec.count("download"), 0u);
}

}  // namespace
}  // namespace ember
