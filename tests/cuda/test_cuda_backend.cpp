// Device tests of the CUDA backend (backend/cuda/backend_impl.cuh through make_backend("cuda")):
//   * every Backend operation against the CPU backend on the same words, bit for bit, including the caches'
//     corner cases (a host NttTables / BaseConverter replaced by another at the same address);
//   * CKKS end to end: keys made on the CPU, serialised and loaded into a Context on the CUDA backend; the same
//     input ciphertext bytes through add, mul (merged and unmerged ModDown), rotations, constants and decryption
//     give byte-identical results on both contexts; a ciphertext encrypted on the GPU decrypts on the CPU;
//   * running out of device memory throws std::runtime_error naming the request.
// Without a CUDA device (or driver) these tests are skipped (GTEST_SKIP) and the program exits 0; one test then
// checks instead that make_backend("cuda") refuses with "no CUDA device".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/register.hpp"
#include "ckks/context.hpp"
#include "ckks/evaluator.hpp"
#include "io/serialize.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "ring/ring_context.hpp"

namespace ember {
namespace {

bool have_device() { return cuda::device_count() > 0; }

TEST(CudaBackendRegistry, MakeBackendNamesTheDevice) {
    cuda::register_cuda_backend();
    if (have_device()) {
        const std::shared_ptr<Backend> b = make_backend("cuda", 1);
        EXPECT_STREQ(b->name(), "cuda");
        EXPECT_FALSE(b->host_addressable());
        EXPECT_EQ(b->threads(), 1);
    } else {
        try {
            (void)make_backend("cuda", 1);
            ADD_FAILURE() << "make_backend(\"cuda\") without a device did not throw";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
        }
    }
}

class CudaBackendTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!have_device()) GTEST_SKIP() << "no CUDA device";
        cuda::register_cuda_backend();
        gpu = make_backend("cuda", 1);
    }
    std::shared_ptr<Backend> cpu = make_cpu_backend(2);
    std::shared_ptr<Backend> gpu;
};

// ---- the kernels through the Backend interface ------------------------------------------------------------------

/// k limbs of n words on both backends, filled with the same words.
class Twin {
public:
    Twin(Backend& cpu, Backend& gpu, const std::vector<const NttTables*>& tables) : cpu_(cpu), gpu_(gpu), tables_(tables) {
        n_ = tables.empty() ? 0 : tables[0]->n;
        for (std::size_t l = 0; l < tables.size(); ++l) {
            c_.push_back(cpu.allocate(n_, true));
            g_.push_back(gpu.allocate(n_, true));
        }
    }
    ~Twin() {
        for (u64* p : c_) cpu_.release(p, n_, false);
        for (u64* p : g_) gpu_.release(p, n_, false);
    }
    Twin(const Twin&) = delete;
    Twin& operator=(const Twin&) = delete;

    /// Uniform residues of each limb's prime (kind 0) or extreme values mixed in (kind 1).
    void randomize(std::mt19937_64& rng, int kind = 0) {
        for (std::size_t l = 0; l < c_.size(); ++l) {
            const u64 q = tables_[l]->mod.q;
            std::uniform_int_distribution<u64> d(0, q - 1);
            std::vector<u64> v(n_);
            for (std::size_t i = 0; i < n_; ++i) v[i] = (kind == 1 && i % 3 == 0) ? (i % 2 ? q - 1 : 0) : d(rng);
            cpu_.upload(c_[l], v.data(), n_);
            gpu_.upload(g_[l], v.data(), n_);
        }
    }
    std::vector<LimbRef> cref() const { return refs(c_); }
    std::vector<LimbRef> gref() const { return refs(g_); }
    std::vector<const u64*> cc() const { return {c_.begin(), c_.end()}; }
    std::vector<const u64*> gc() const { return {g_.begin(), g_.end()}; }
    std::vector<u64*> cp() const { return c_; }
    std::vector<u64*> gp() const { return g_; }

    /// The GPU's words equal the CPU's, limb by limb.
    void expect_same(const std::string& what) const {
        std::vector<u64> a(n_), b(n_);
        for (std::size_t l = 0; l < c_.size(); ++l) {
            cpu_.download(a.data(), c_[l], n_);
            gpu_.download(b.data(), g_[l], n_);
            for (std::size_t i = 0; i < n_; ++i)
                ASSERT_EQ(b[i], a[i]) << what << ": limb " << l << " (q = " << tables_[l]->mod.q << ") word " << i;
        }
    }

private:
    std::vector<LimbRef> refs(const std::vector<u64*>& p) const {
        std::vector<LimbRef> r;
        for (std::size_t l = 0; l < p.size(); ++l) r.push_back(LimbRef{p[l], tables_[l]});
        return r;
    }
    Backend& cpu_;
    Backend& gpu_;
    std::vector<const NttTables*> tables_;
    std::size_t n_ = 0;
    std::vector<u64*> c_, g_;
};

TEST_F(CudaBackendTest, EveryOperationMatchesCpu) {
    const int log_n = 12;
    const std::size_t n = std::size_t(1) << log_n;
    // 50-bit (IFMA path on the CPU) and 60-bit primes
    std::vector<u64> qs = ntt_primes_near(50, 3, 2 * n, {}, false);
    for (u64 q : ntt_primes_near(60, 3, 2 * n, {}, false)) qs.push_back(q);
    std::vector<std::unique_ptr<NttTables>> own;
    std::vector<const NttTables*> tabs;
    std::vector<Modulus> mods;
    for (u64 q : qs) {
        own.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        tabs.push_back(own.back().get());
        mods.push_back(Modulus(q));
    }
    std::mt19937_64 rng(11);
    Twin a(*cpu, *gpu, tabs), b(*cpu, *gpu, tabs), out(*cpu, *gpu, tabs), out2(*cpu, *gpu, tabs);
    for (int kind : {0, 1}) {
        a.randomize(rng, kind);
        b.randomize(rng, kind);
        out.randomize(rng, kind);
        std::vector<MulConst> mc;
        std::vector<u64> ac;
        for (const Modulus& m : mods) {
            mc.emplace_back(rng() % m.q, m);
            ac.push_back(rng() % m.q);
        }
        const std::string tag = kind ? " (extreme values)" : "";

        cpu->add(out.cref(), a.cc(), b.cc());
        gpu->add(out.gref(), a.gc(), b.gc());
        out.expect_same("add" + tag);
        cpu->sub(out.cref(), a.cc(), b.cc());
        gpu->sub(out.gref(), a.gc(), b.gc());
        out.expect_same("sub" + tag);
        cpu->neg(out.cref(), a.cc());
        gpu->neg(out.gref(), a.gc());
        out.expect_same("neg" + tag);
        cpu->mul(out.cref(), a.cc(), b.cc());
        gpu->mul(out.gref(), a.gc(), b.gc());
        out.expect_same("mul" + tag);
        cpu->mul_add(out.cref(), a.cc(), b.cc());
        gpu->mul_add(out.gref(), a.gc(), b.gc());
        out.expect_same("mul_add" + tag);
        cpu->mul_const(out.cref(), a.cc(), mc, false);
        gpu->mul_const(out.gref(), a.gc(), mc, false);
        out.expect_same("mul_const" + tag);
        cpu->mul_const(out.cref(), a.cc(), mc, true);
        gpu->mul_const(out.gref(), a.gc(), mc, true);
        out.expect_same("mul_const accumulate" + tag);
        cpu->add_const(out.cref(), a.cc(), ac);
        gpu->add_const(out.gref(), a.gc(), ac);
        out.expect_same("add_const" + tag);
        cpu->sub_mul_const(out.cref(), a.cc(), b.cc(), mc);
        gpu->sub_mul_const(out.gref(), a.gc(), b.gc(), mc);
        out.expect_same("sub_mul_const" + tag);
        cpu->copy(out.cref(), a.cc());
        gpu->copy(out.gref(), a.gc());
        out.expect_same("copy" + tag);
        // in place (out aliases an operand)
        cpu->add(out.cref(), out.cc(), b.cc());
        gpu->add(out.gref(), out.gc(), b.gc());
        out.expect_same("add in place" + tag);

        cpu->dot(out.cref(), {a.cc(), b.cc(), a.cc()}, {b.cc(), b.cc(), out.cc()});
        gpu->dot(out.gref(), {a.gc(), b.gc(), a.gc()}, {b.gc(), b.gc(), out.gc()});
        out.expect_same("dot" + tag);
        // dot2: two sums over shared terms (outputs alias no operand)
        cpu->dot2(out.cref(), out2.cref(), {a.cc(), b.cc(), a.cc()}, {b.cc(), b.cc(), a.cc()}, {a.cc(), a.cc(), b.cc()});
        gpu->dot2(out.gref(), out2.gref(), {a.gc(), b.gc(), a.gc()}, {b.gc(), b.gc(), a.gc()}, {a.gc(), a.gc(), b.gc()});
        out.expect_same("dot2 first output" + tag);
        out2.expect_same("dot2 second output" + tag);

        cpu->ntt_forward(a.cref());
        gpu->ntt_forward(a.gref());
        a.expect_same("ntt_forward" + tag);
        cpu->ntt_inverse(a.cref());
        gpu->ntt_inverse(a.gref());
        a.expect_same("ntt_inverse" + tag);
        cpu->ntt_inverse_from(out.cref(), b.cc());
        gpu->ntt_inverse_from(out.gref(), b.gc());
        out.expect_same("ntt_inverse_from" + tag);
        b.expect_same("ntt_inverse_from's input" + tag);
        if (HasFatalFailure()) return;
    }

    // automorphisms: the ring's table for X -> X^k (the CPU backend reads it, the CUDA backend computes the indices)
    const RingContext ring(log_n, qs, {}, cpu);
    for (std::uint64_t k : {std::uint64_t(1), std::uint64_t(5), std::uint64_t(25), 2 * n - 1, (rng() % n) * 2 + 1}) {
        const std::vector<std::uint32_t>& perm = ring.automorphism_perm(k);
        cpu->permute(out.cref(), a.cc(), k, perm.data());
        gpu->permute(out.gref(), a.gc(), k, perm.data());  // (the CUDA backend computes the indices itself)
        out.expect_same("permute k=" + std::to_string(k));
        if (HasFatalFailure()) return;
    }

    // base conversion, plain and centered, from 3 limbs to 3
    {
        const std::vector<Modulus> from(mods.begin(), mods.begin() + 3), to(mods.begin() + 3, mods.end());
        const BaseConverter conv(from, to);
        const std::vector<const NttTables*> to_tabs(tabs.begin() + 3, tabs.end());
        Twin dst(*cpu, *gpu, to_tabs);
        const std::vector<const u64*> ca = a.cc(), ga = a.gc();
        const std::vector<const u64*> cin(ca.begin(), ca.begin() + 3), gin(ga.begin(), ga.begin() + 3);
        for (bool centered : {false, true}) {
            cpu->base_convert(conv, cin, dst.cp(), n, centered);
            gpu->base_convert(conv, gin, dst.gp(), n, centered);
            dst.expect_same(centered ? "base_convert centered" : "base_convert");
            if (HasFatalFailure()) return;
        }
    }
}

/// A host NttTables or BaseConverter freed and replaced by another at the same address must not get the first
/// one's device constants (the NTT cache is keyed by value, the converter cache checks the moduli).
TEST_F(CudaBackendTest, CachesFollowReplacedHostObjects) {
    const std::size_t n = 1024;
    const std::vector<u64> qs = ntt_primes_near(55, 6, 2 * n, {}, false);
    std::mt19937_64 rng(3);
    std::optional<NttTables> t;  // emplace reuses the same storage: the same address, another prime
    for (int round = 0; round < 2; ++round) {
        t.emplace(n, Modulus(qs[round]));
        Twin x(*cpu, *gpu, {&*t});
        x.randomize(rng);
        cpu->ntt_forward(x.cref());
        gpu->ntt_forward(x.gref());
        x.expect_same("ntt_forward, tables round " + std::to_string(round));
        if (HasFatalFailure()) return;
    }
    std::vector<std::unique_ptr<NttTables>> own;
    std::vector<const NttTables*> tabs;
    for (u64 q : qs) {
        own.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        tabs.push_back(own.back().get());
    }
    std::optional<BaseConverter> conv;
    for (int round = 0; round < 2; ++round) {
        // round 0: qs[0..2] -> qs[3..5]; round 1: qs[3..5] -> qs[0..2]
        const std::size_t f = round ? 3 : 0, o = round ? 0 : 3;
        std::vector<Modulus> from, to;
        std::vector<const NttTables*> ft, tt;
        for (std::size_t i = 0; i < 3; ++i) {
            from.emplace_back(qs[f + i]);
            to.emplace_back(qs[o + i]);
            ft.push_back(tabs[f + i]);
            tt.push_back(tabs[o + i]);
        }
        conv.emplace(from, to);
        Twin src(*cpu, *gpu, ft), dst(*cpu, *gpu, tt);
        src.randomize(rng);
        cpu->base_convert(*conv, src.cc(), dst.cp(), n, true);
        gpu->base_convert(*conv, src.gc(), dst.gp(), n, true);
        dst.expect_same("base_convert, converter round " + std::to_string(round));
        if (HasFatalFailure()) return;
    }
}

// BV key switching's balanced digits, on random and edge residues of 50- and 60-bit primes, base 2^2 .. 2^30.
TEST_F(CudaBackendTest, SignedDigitsMatchCpu) {
    std::mt19937_64 rng(41);
    for (int bits : {50, 60}) {
        const u64 q = ntt_primes_near(bits, 1, 2 * 4096).at(0);
        const Modulus mod(q);
        const std::size_t n = 4096;
        std::vector<u64> v(n);
        std::uniform_int_distribution<u64> d(0, q - 1);
        for (std::size_t i = 0; i < n; ++i) v[i] = d(rng);
        const u64 edges[] = {0, 1, 2, q - 1, q - 2, q / 2, q / 2 + 1, q / 2 - 1};
        for (std::size_t i = 0; i < std::size(edges); ++i) v[i] = edges[i];
        for (int w : {2, 3, 4, 16, 30}) {
            const std::size_t D = (static_cast<std::size_t>(bits) + w - 1) / w + 1;
            u64* cin = cpu->allocate(n, false);
            u64* gin = gpu->allocate(n, false);
            cpu->upload(cin, v.data(), n);
            gpu->upload(gin, v.data(), n);
            std::vector<u64*> co, go;
            for (std::size_t k = 0; k < D; ++k) {
                co.push_back(cpu->allocate(n, false));
                go.push_back(gpu->allocate(n, false));
            }
            cpu->signed_digits(co, cin, mod, n, w);
            gpu->signed_digits(go, gin, mod, n, w);
            std::vector<u64> a(n), b(n);
            for (std::size_t k = 0; k < D; ++k) {
                cpu->download(a.data(), co[k], n);
                gpu->download(b.data(), go[k], n);
                ASSERT_EQ(a, b) << "q " << bits << " bits, base 2^" << w << ", digit " << k;
                cpu->release(co[k], n, false);
                gpu->release(go[k], n, false);
            }
            cpu->release(cin, n, false);
            gpu->release(gin, n, false);
        }
    }
}

TEST_F(CudaBackendTest, MemoryTransfersAndWipe) {
    const std::size_t words = 3000;
    u64* p = gpu->allocate(words, true);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
    std::vector<u64> got(words, 1);
    gpu->download(got.data(), p, words);
    for (std::size_t i = 0; i < words; ++i) ASSERT_EQ(got[i], 0u) << "allocate(zero) word " << i;
    std::vector<u64> v(words);
    for (std::size_t i = 0; i < words; ++i) v[i] = 0x9e3779b97f4a7c15ull * (i + 1);
    gpu->upload(p, v.data(), words);
    u64* q = gpu->allocate(words, false);
    gpu->copy_words(q + 10, p + 5, words - 10);  // inside blocks, at offsets
    gpu->synchronize();
    gpu->download(got.data(), q + 10, words - 10);
    for (std::size_t i = 0; i < words - 10; ++i) ASSERT_EQ(got[i], v[i + 5]) << "copy_words word " << i;
    gpu->release(p, words, true);
    gpu->release(q, words, false);
    EXPECT_EQ(gpu->allocate(0, true), nullptr);
    gpu->release(nullptr, 0, true);
}

TEST_F(CudaBackendTest, OutOfMemoryNamesTheRequest) {
    const std::size_t words = std::size_t(1) << 42;  // 32 TiB
    try {
        u64* p = gpu->allocate(words, false);
        gpu->release(p, words, false);
        ADD_FAILURE() << "allocating 32 TiB of device memory did not throw";
    } catch (const std::runtime_error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("CUDA backend: out of device memory allocating " + std::to_string(words) + " words"), std::string::npos) << m;
    }
    // the device is still usable
    u64* p = gpu->allocate(1024, true);
    gpu->release(p, 1024, false);
    gpu->synchronize();
}

// ---- CKKS end to end --------------------------------------------------------------------------------------------

CkksParams small_params() {
    CkksParams p;
    p.log_n = 12;
    p.levels = 3;
    p.log_scale = 40;
    p.first_mod_bits = 50;
    p.dnum = 2;
    p.insecure = true;
    return p;
}

std::vector<cplx> random_slots(std::size_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> d(-0.7, 0.7);
    std::vector<cplx> v(n);
    for (auto& x : v) {
        const double re = d(rng);
        x = cplx(re, d(rng));
    }
    return v;
}

/// Index of the first differing byte, or -1 when a == b (sizes included).
long first_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
    const std::size_t m = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < m; ++i)
        if (a[i] != b[i]) return static_cast<long>(i);
    return a.size() == b.size() ? -1 : static_cast<long>(m);
}

double max_error(const std::vector<cplx>& a, const std::vector<cplx>& b) {
    double e = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) e = std::max(e, std::abs(a[i] - b[i]));
    return a.size() == b.size() ? e : INFINITY;
}

TEST_F(CudaBackendTest, CkksResultsAreByteIdenticalToCpu) {
    const CkksParams params = small_params();
    const auto cctx = std::make_shared<const Context>(params, 1, make_backend("cpu", 1));
    const auto gctx = std::make_shared<const Context>(params, 1, make_backend("cuda", 1));
    ASSERT_STREQ(gctx->ring()->backend().name(), "cuda");

    // keys on the CPU, moved to the GPU context through their bytes
    const KeySet keys = cctx->keygen({1, -1, 3}, true);
    const SecretKey gsk = secret_key_from_bytes(*gctx, secret_key_to_bytes(*cctx, *keys.secret));
    const PublicKey gpk = public_key_from_bytes(*gctx, to_bytes(*cctx, *keys.pub));
    const SwitchingKey grlk = switching_key_from_bytes(*gctx, to_bytes(*cctx, *keys.relin));
    const GaloisKeys ggk = galois_keys_from_bytes(*gctx, to_bytes(*cctx, *keys.galois));
    // ... and they write the same bytes back from device memory
    EXPECT_EQ(first_difference(to_bytes(*gctx, grlk), to_bytes(*cctx, *keys.relin)), -1) << "relinearization key round trip";
    EXPECT_EQ(first_difference(to_bytes(*gctx, ggk), to_bytes(*cctx, *keys.galois)), -1) << "Galois keys round trip";

    std::mt19937_64 rng(29);
    const std::size_t slots = cctx->slots();
    const std::vector<cplx> x = random_slots(slots, rng), y = random_slots(slots, rng);
    // encoding is deterministic: the same plaintext on both
    const Plaintext px = cctx->encode(x);
    EXPECT_EQ(first_difference(to_bytes(*gctx, gctx->encode(x)), to_bytes(*cctx, px)), -1) << "encode";
    const std::vector<std::uint8_t> xb = to_bytes(*cctx, cctx->encrypt(px, *keys.pub));
    const std::vector<std::uint8_t> yb = to_bytes(*cctx, cctx->encrypt(cctx->encode(y), *keys.secret));
    const Ciphertext cx = ciphertext_from_bytes(*cctx, xb), cy = ciphertext_from_bytes(*cctx, yb);
    const Ciphertext gx = ciphertext_from_bytes(*gctx, xb), gy = ciphertext_from_bytes(*gctx, yb);
    EXPECT_EQ(first_difference(to_bytes(*gctx, gx), xb), -1) << "ciphertext round trip";

    const Evaluator ce(cctx), ge(gctx);
    auto same = [&](const Ciphertext& c, const Ciphertext& g, const std::string& what) {
        const std::vector<std::uint8_t> cb = to_bytes(*cctx, c), gb = to_bytes(*gctx, g);
        EXPECT_EQ(first_difference(cb, gb), -1) << what << ": " << cb.size() << " CPU bytes, " << gb.size() << " GPU bytes";
    };
    same(ce.add(cx, cy), ge.add(gx, gy), "add");
    same(ce.sub(cx, cy), ge.sub(gx, gy), "sub");
    const Ciphertext cm = ce.mul(cx, cy, *keys.relin, true), gm = ge.mul(gx, gy, grlk, true);
    same(cm, gm, "mul (merged ModDown)");
    same(ce.mul(cx, cy, *keys.relin, false), ge.mul(gx, gy, grlk, false), "mul (ModDown, then Rescale)");
    same(ce.mul(cm, cm, *keys.relin), ge.mul(gm, gm, grlk), "mul at level 2");
    same(ce.rotate(cx, 1, *keys.galois), ge.rotate(gx, 1, ggk), "rotate 1");
    same(ce.rotate(cm, -1, *keys.galois), ge.rotate(gm, -1, ggk), "rotate -1 at level 2");
    same(ce.conjugate(cx, *keys.galois), ge.conjugate(gx, ggk), "conjugate");
    {
        const std::vector<Ciphertext> cr = ce.rotate_many(cx, {1, 3, -1}, *keys.galois);
        const std::vector<Ciphertext> gr = ge.rotate_many(gx, {1, 3, -1}, ggk);
        ASSERT_EQ(cr.size(), gr.size());
        for (std::size_t i = 0; i < cr.size(); ++i) same(cr[i], gr[i], "rotate_many #" + std::to_string(i));
    }
    same(ce.mul_const(cx, cplx(0.375, -0.25)), ge.mul_const(gx, cplx(0.375, -0.25)), "mul_const");
    same(ce.add_const(cx, cplx(0.5, 0)), ge.add_const(gx, cplx(0.5, 0)), "add_const");
    same(ce.mul_int(cx, -3), ge.mul_int(gx, -3), "mul_int");

    // decryption on both: the same plaintext bytes, and the expected values
    const Plaintext cd = cctx->decrypt_to_plaintext(cm, *keys.secret), gd = gctx->decrypt_to_plaintext(gm, gsk);
    EXPECT_EQ(first_difference(to_bytes(*cctx, cd), to_bytes(*gctx, gd)), -1) << "decrypt_to_plaintext";
    std::vector<cplx> xy(slots);
    for (std::size_t i = 0; i < slots; ++i) xy[i] = x[i] * y[i];
    EXPECT_LT(max_error(gctx->decode(gd), xy), 1e-5) << "decrypt(mul) on the GPU";

    // encrypted on the GPU (its own randomness), decrypted on the CPU
    const Ciphertext ge_x = gctx->encrypt(gctx->encode(x), gpk);
    const Ciphertext back = ciphertext_from_bytes(*cctx, to_bytes(*gctx, ge_x));
    EXPECT_LT(max_error(cctx->decrypt(back, *keys.secret), x), 1e-5) << "GPU encryption, CPU decryption";
    const Ciphertext ge_y = gctx->encrypt(gctx->encode(y), gsk);
    EXPECT_LT(max_error(gctx->decrypt(ge_y, gsk), y), 1e-5) << "GPU secret-key encryption and decryption";
}

}  // namespace
}  // namespace ember
