// Device tests of the CUDA kernels (ember_cuda, backend/cuda/kernels.hpp): each kernel on random and extreme
// inputs against the CPU backend, bit for bit. Without a CUDA device (or driver) every test is skipped
// (GTEST_SKIP) and the program exits 0, so that builds without a GPU (CI) compile and run it.
//
// EMBER_CUDA_TEST_MAX_LOG_N (default 17) bounds the ring sizes, for the slow compute-sanitizer runs
// (bench/gpu/device_check.sh).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/kernels.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "ring/ring_context.hpp"

namespace ember {
namespace {

int max_log_n() {
    const char* v = std::getenv("EMBER_CUDA_TEST_MAX_LOG_N");
    return v && *v ? std::atoi(v) : 17;
}

/// 30, 50 (just below), 55, 60 and 61 (just below) bits: `per_size` primes = 1 mod 2n of each.
std::vector<u64> test_primes(std::size_t n, std::size_t per_size) {
    std::vector<u64> r;
    const std::pair<int, bool> sizes[] = {{30, false}, {50, true}, {55, false}, {60, false}, {61, true}};
    for (auto [bits, below] : sizes)
        for (u64 q : ntt_primes_near(bits, per_size, 2 * n, {}, below)) r.push_back(q);
    return r;
}

/// n residues mod q: uniform (kind 0), extreme values mixed in (kind 1), all q - 1 (kind 2).
std::vector<u64> sample(std::size_t n, u64 q, std::mt19937_64& rng, int kind) {
    std::uniform_int_distribution<u64> d(0, q - 1);
    std::vector<u64> v(n);
    for (auto& x : v) x = d(rng);
    if (kind == 2) v.assign(n, q - 1);
    if (kind == 1) {
        const u64 e[4] = {0, 1, q - 1, q - 2};
        for (std::size_t i = 0; i < n; ++i)
            if ((i * 7 + i / 5) % 3 != 0) v[i] = e[(i * i + i / 3) % 4];
    }
    return v;
}

/// Limbs on the host and their device copies.
struct LimbSet {
    std::vector<std::vector<u64>> host;
    std::vector<cuda::DeviceArray<u64>> dev;

    void add(std::vector<u64> v) {
        dev.emplace_back(v);
        host.push_back(std::move(v));
    }
    std::vector<u64*> dptr() const {
        std::vector<u64*> p;
        for (const auto& d : dev) p.push_back(d.data());
        return p;
    }
    std::vector<const u64*> dcptr() const {
        std::vector<const u64*> p;
        for (const auto& d : dev) p.push_back(d.data());
        return p;
    }
    std::vector<const u64*> hcptr() const {
        std::vector<const u64*> p;
        for (const auto& h : host) p.push_back(h.data());
        return p;
    }
    std::vector<u64*> hptr() {
        std::vector<u64*> p;
        for (auto& h : host) p.push_back(h.data());
        return p;
    }
    std::size_t size() const { return host.size(); }
};

class CudaKernels : public ::testing::Test {
protected:
    void SetUp() override {
        if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
    }
    std::shared_ptr<Backend> cpu = make_cpu_backend(2);
};

/// Device limbs against expected host values, word for word.
void expect_equal(const LimbSet& got, const std::vector<std::vector<u64>>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t l = 0; l < want.size(); ++l) {
        const std::vector<u64> g = got.dev[l].download();
        ASSERT_EQ(g.size(), want[l].size());
        for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], want[l][i]) << what << " limb " << l << " word " << i;
    }
}

// ---- NTT -----------------------------------------------------------------------------------------------------------

TEST_F(CudaKernels, NttMatchesCpu) {
    std::mt19937_64 rng(1);
    for (int log_n = 1; log_n <= std::min(17, max_log_n()); ++log_n) {
        const std::size_t n = std::size_t(1) << log_n;
        // two primes of each size; at 2^12 forty limbs (more than one launch of kNttBatch)
        std::vector<u64> qs = test_primes(n, log_n == 12 ? 8 : 2);
        std::vector<std::unique_ptr<NttTables>> tabs;
        std::vector<std::unique_ptr<cuda::DeviceNttTables>> dtabs;
        std::vector<const cuda::DeviceNttTables*> dt;
        for (u64 q : qs) {
            tabs.push_back(std::make_unique<NttTables>(n, Modulus(q)));
            dtabs.push_back(std::make_unique<cuda::DeviceNttTables>(*tabs.back()));
            dt.push_back(dtabs.back().get());
        }
        for (bool inverse : {false, true}) {
            for (int kind = 0; kind < 3; ++kind) {
                LimbSet x;
                for (u64 q : qs) x.add(sample(n, q, rng, kind));
                std::vector<std::vector<u64>> want = x.host;
                std::vector<LimbRef> refs;
                for (std::size_t l = 0; l < qs.size(); ++l) refs.push_back(LimbRef{want[l].data(), tabs[l].get()});
                const std::vector<u64*> p = x.dptr();
                if (inverse) {
                    cpu->ntt_inverse(refs);
                    cuda::ntt_inverse(p, dt);
                } else {
                    cpu->ntt_forward(refs);
                    cuda::ntt_forward(p, dt);
                }
                cuda::synchronize();
                expect_equal(x, want, std::string(inverse ? "inverse" : "forward") + " N=" + std::to_string(n));
                if (HasFatalFailure()) return;
            }
        }
    }
}

// ---- element-wise --------------------------------------------------------------------------------------------------

TEST_F(CudaKernels, ElementwiseMatchesCpu) {
    std::mt19937_64 rng(2);
    const std::size_t n = std::size_t(1) << std::min(12, max_log_n());
    const std::vector<u64> qs = test_primes(n, 8);  // 40 limbs: two launches of 32
    std::vector<std::unique_ptr<NttTables>> tabs;
    std::vector<Modulus> mods;
    for (u64 q : qs) {
        tabs.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        mods.push_back(tabs.back()->mod);
    }
    for (int kind = 0; kind < 3; ++kind) {
        LimbSet a, b, o;
        std::vector<MulConst> c;
        std::vector<u64> ac;
        for (u64 q : qs) {
            a.add(sample(n, q, rng, kind));
            b.add(sample(n, q, rng, kind == 2 ? 2 : 1));
            o.add(sample(n, q, rng, kind));
            c.emplace_back(kind == 2 ? q - 1 : rng() % q, Modulus(q));
            ac.push_back(kind == 2 ? q - 1 : rng() % q);
        }
        const std::vector<std::vector<u64>> o0 = o.host;
        auto run = [&](const char* name, auto&& cpu_op, auto&& gpu_op) {
            for (std::size_t l = 0; l < qs.size(); ++l) o.dev[l].upload(o0[l]);  // the accumulating ops read out
            std::vector<std::vector<u64>> want = o0;
            std::vector<LimbRef> refs;
            for (std::size_t l = 0; l < qs.size(); ++l) refs.push_back(LimbRef{want[l].data(), tabs[l].get()});
            cpu_op(std::span<const LimbRef>(refs));
            gpu_op(o.dptr());
            cuda::synchronize();
            expect_equal(o, want, std::string(name) + " kind " + std::to_string(kind));
        };
        const auto ha = a.hcptr(), hb = b.hcptr(), da = a.dcptr(), db = b.dcptr();
        run("add", [&](std::span<const LimbRef> r) { cpu->add(r, ha, hb); }, [&](std::vector<u64*> p) { cuda::add(p, da, db, mods, n); });
        run("sub", [&](std::span<const LimbRef> r) { cpu->sub(r, ha, hb); }, [&](std::vector<u64*> p) { cuda::sub(p, da, db, mods, n); });
        run("neg", [&](std::span<const LimbRef> r) { cpu->neg(r, ha); }, [&](std::vector<u64*> p) { cuda::neg(p, da, mods, n); });
        run("mul", [&](std::span<const LimbRef> r) { cpu->mul(r, ha, hb); }, [&](std::vector<u64*> p) { cuda::mul(p, da, db, mods, n); });
        run("mul_add", [&](std::span<const LimbRef> r) { cpu->mul_add(r, ha, hb); },
            [&](std::vector<u64*> p) { cuda::mul_add(p, da, db, mods, n); });
        run("mul_const", [&](std::span<const LimbRef> r) { cpu->mul_const(r, ha, c, false); },
            [&](std::vector<u64*> p) { cuda::mul_const(p, da, c, mods, n, false); });
        run("mul_const_add", [&](std::span<const LimbRef> r) { cpu->mul_const(r, ha, c, true); },
            [&](std::vector<u64*> p) { cuda::mul_const(p, da, c, mods, n, true); });
        run("add_const", [&](std::span<const LimbRef> r) { cpu->add_const(r, ha, ac); },
            [&](std::vector<u64*> p) { cuda::add_const(p, da, ac, mods, n); });
        run("sub_mul_const", [&](std::span<const LimbRef> r) { cpu->sub_mul_const(r, ha, hb, c); },
            [&](std::vector<u64*> p) { cuda::sub_mul_const(p, da, db, c, mods, n); });
        if (HasFatalFailure()) return;
    }
}

TEST_F(CudaKernels, ElementwiseOutputMayAliasAnOperand) {
    std::mt19937_64 rng(3);
    const std::size_t n = 1000;  // not a multiple of the block size
    const u64 q = test_primes(1024, 1).back();
    LimbSet a, b;
    a.add(sample(n, q, rng, 0));
    b.add(sample(n, q, rng, 0));
    const Modulus m(q);
    cuda::mul(a.dptr(), a.dcptr(), b.dcptr(), std::span<const Modulus>(&m, 1), n);
    cuda::synchronize();
    std::vector<u64> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = m.mul(a.host[0][i], b.host[0][i]);
    expect_equal(a, {want}, "mul in place");
}

// ---- dot -----------------------------------------------------------------------------------------------------------

TEST_F(CudaKernels, DotMatchesCpu) {
    std::mt19937_64 rng(4);
    const std::size_t n = std::size_t(1) << std::min(12, max_log_n());
    const std::vector<u64> qs = test_primes(n, 1);
    std::vector<std::unique_ptr<NttTables>> tabs;
    std::vector<Modulus> mods;
    for (u64 q : qs) {
        tabs.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        mods.push_back(tabs.back()->mod);
    }
    for (std::size_t terms : {1, 2, 3, 5, 64, 70}) {
        for (int kind : {0, 2}) {
            std::vector<LimbSet> a(terms), b(terms);
            std::vector<std::vector<const u64*>> ha(terms), hb(terms), da(terms), db(terms);
            for (std::size_t t = 0; t < terms; ++t) {
                for (u64 q : qs) {
                    a[t].add(sample(n, q, rng, kind));
                    b[t].add(sample(n, q, rng, kind));
                }
                ha[t] = a[t].hcptr(), hb[t] = b[t].hcptr(), da[t] = a[t].dcptr(), db[t] = b[t].dcptr();
            }
            LimbSet out;
            for (std::size_t l = 0; l < qs.size(); ++l) out.add(std::vector<u64>(n, 0));
            std::vector<std::vector<u64>> want = out.host;
            std::vector<LimbRef> refs;
            for (std::size_t l = 0; l < qs.size(); ++l) refs.push_back(LimbRef{want[l].data(), tabs[l].get()});
            cpu->dot(refs, ha, hb);
            cuda::dot(out.dptr(), da, db, mods, n);
            expect_equal(out, want, "dot terms " + std::to_string(terms));
            if (HasFatalFailure()) return;
        }
    }
}

/// Many digits: 30 terms over 40 limbs (several launches of a few limbs each: the pointers of a launch travel in its
/// parameters), and 200 terms (past one launch's DotLaunch<1>::kPtrs / 2: chunks of terms accumulating in the output), once with
/// an output that is also an operand of a later chunk (accumulated in scratch, then copied).
TEST_F(CudaKernels, DotManyTermsMatchesCpu) {
    std::mt19937_64 rng(7);
    const std::size_t n = std::size_t(1) << std::min(12, max_log_n());
    const std::vector<u64> all = test_primes(n, 8);  // 40 primes
    std::vector<std::unique_ptr<NttTables>> tabs;
    std::vector<Modulus> mods;
    for (u64 q : all) {
        tabs.push_back(std::make_unique<NttTables>(n, Modulus(q)));
        mods.push_back(tabs.back()->mod);
    }
    struct Case {
        std::size_t terms, limbs;
        bool alias;
    };
    for (const Case& cs : {Case{30, 40, false}, Case{200, 3, false}, Case{200, 3, true}}) {
        for (int kind : {0, 2}) {
            const std::size_t terms = cs.terms, limbs = cs.limbs;
            // 200 terms cycle through 23 operand sets (fewer allocations, for the sanitizer runs; 23 divides no chunk
            // size, so a term read from the wrong index still reads other words)
            const std::size_t distinct = terms <= 30 ? terms : 23;
            std::vector<LimbSet> a(distinct), b(distinct);
            for (std::size_t t = 0; t < distinct; ++t)
                for (std::size_t l = 0; l < limbs; ++l) {
                    a[t].add(sample(n, all[l], rng, kind));
                    b[t].add(sample(n, all[l], rng, kind));
                }
            std::vector<std::vector<const u64*>> ha(terms), hb(terms), da(terms), db(terms);
            for (std::size_t t = 0; t < terms; ++t) {
                const std::size_t d = t % distinct;
                ha[t] = a[d].hcptr(), hb[t] = b[d].hcptr(), da[t] = a[d].dcptr(), db[t] = b[d].dcptr();
            }
            LimbSet out;
            for (std::size_t l = 0; l < limbs; ++l) out.add(sample(n, all[l], rng, 0));
            // alias: limb 1's output is its operand b[190] (the CPU reads a copy of the output's initial words there)
            const std::vector<u64> out1_initial = out.host[1];
            if (cs.alias) {
                hb[190][1] = out1_initial.data();
                db[190][1] = out.dev[1].data();
            }
            std::vector<std::vector<u64>> want = out.host;
            std::vector<LimbRef> refs;
            for (std::size_t l = 0; l < limbs; ++l) refs.push_back(LimbRef{want[l].data(), tabs[l].get()});
            cpu->dot(refs, ha, hb);
            cuda::dot(out.dptr(), da, db, std::span<const Modulus>(mods.data(), limbs), n);
            expect_equal(out, want, "dot terms " + std::to_string(terms) + " limbs " + std::to_string(limbs) +
                                        (cs.alias ? " (output is an operand)" : "") + " kind " + std::to_string(kind));
            if (HasFatalFailure()) return;
        }
    }
}

// ---- automorphisms -------------------------------------------------------------------------------------------------

TEST_F(CudaKernels, PermuteMatchesCpu) {
    std::mt19937_64 rng(5);
    for (int log_n : {1, 4, 12, 16}) {
        if (log_n > max_log_n()) continue;
        const std::size_t n = std::size_t(1) << log_n;
        const RingContext ring(log_n, test_primes(n, 1), {}, cpu);
        for (u64 k : {u64(1), u64(5) % (2 * n), 2 * n - 1, (rng() % n) * 2 + 1}) {
            LimbSet a, out1, out2;
            std::vector<LimbRef> refs;
            std::vector<std::vector<u64>> want;
            for (std::size_t l = 0; l < ring.q_count(); ++l) {
                a.add(sample(n, ring.mod(l).q, rng, 0));
                out1.add(std::vector<u64>(n, 0));
                out2.add(std::vector<u64>(n, 0));
                want.emplace_back(n, 0);
            }
            for (std::size_t l = 0; l < ring.q_count(); ++l) refs.push_back(LimbRef{want[l].data(), &ring.table(l)});
            const std::vector<std::uint32_t>& perm = ring.automorphism_perm(k);
            cpu->permute(refs, a.hcptr(), k, perm.data());
            const cuda::DeviceArray<std::uint32_t> dperm(perm);
            cuda::permute(out1.dptr(), a.dcptr(), dperm.data(), n);
            cuda::automorph(out2.dptr(), a.dcptr(), k, log_n);
            cuda::synchronize();
            expect_equal(out1, want, "permute k=" + std::to_string(k));
            expect_equal(out2, want, "automorph k=" + std::to_string(k));
            if (HasFatalFailure()) return;
        }
    }
}

// ---- base conversion -----------------------------------------------------------------------------------------------

TEST_F(CudaKernels, BaseConvertMatchesCpu) {
    std::mt19937_64 rng(6);
    constexpr std::size_t two_n = 1 << 13;
    const std::vector<u64> q60 = ntt_primes_near(60, 40, two_n), q50 = ntt_primes_near(50, 8, two_n, {}, false);
    const std::vector<u64> p61 = ntt_primes_near(61, 4, two_n, {}, false);
    auto take = [](const std::vector<u64>& v, std::size_t b, std::size_t e) { return std::vector<u64>(v.begin() + b, v.begin() + e); };
    std::vector<u64> mixed = take(q50, 0, 5);
    for (u64 q : take(q60, 0, 7)) mixed.push_back(q);
    const std::vector<std::pair<std::vector<u64>, std::vector<u64>>> shapes = {
        {take(q60, 0, 1), take(q60, 1, 5)},  {take(q60, 0, 3), take(p61, 0, 4)}, {take(p61, 0, 4), take(q60, 0, 12)},
        {mixed, take(p61, 0, 3)},            {ntt_primes_near(61, 70, two_n, {}, false), take(q50, 0, 2)}};
    const std::size_t n = std::min<std::size_t>(std::size_t(1) << max_log_n(), 4099);  // not a multiple of 64
    for (const auto& [from, to] : shapes) {
        std::vector<Modulus> fm, tm;
        for (u64 q : from) fm.emplace_back(q);
        for (u64 p : to) tm.emplace_back(p);
        const BaseConverter conv(fm, tm);
        const cuda::DeviceBaseConverter dconv(conv);
        for (int kind = 0; kind < 3; ++kind) {
            LimbSet in, out;
            for (u64 q : from) in.add(sample(n, q, rng, kind));
            for (std::size_t j = 0; j < to.size(); ++j) out.add(std::vector<u64>(n, ~u64(0)));
            for (bool centered : {false, true}) {
                std::vector<std::vector<u64>> want(to.size(), std::vector<u64>(n));
                std::vector<u64*> pw;
                for (auto& w : want) pw.push_back(w.data());
                cpu->base_convert(conv, in.hcptr(), pw, n, centered);
                cuda::base_convert(dconv, in.dcptr(), out.dptr(), n, centered);
                expect_equal(out, want, "base_convert k=" + std::to_string(from.size()) + " m=" + std::to_string(to.size()) +
                                            (centered ? " centered" : " plain") + " kind " + std::to_string(kind));
                if (HasFatalFailure()) return;
            }
        }
    }
}

/// The largest bases: 200 sources (passes of kBcChunkSources = 95, 95 and 10; the centered sums carried in pool
/// scratch between them), as dnum = 1 or the special primes of a deep chain give, and 300 outputs (two launches of
/// kBcOutBatch = 256 and 44), against the CPU (its reference path beyond 63 sources).
TEST_F(CudaKernels, BaseConvertManyPrimesMatchesCpu) {
    std::mt19937_64 rng(8);
    constexpr std::size_t two_n = 1 << 13;
    const std::vector<u64> p61 = ntt_primes_near(61, 200, two_n, {}, false);
    const std::vector<u64> q50 = ntt_primes_near(50, 300, two_n, {}, false);
    const std::vector<u64> q60 = ntt_primes_near(60, 3, two_n, {}, false);
    const std::vector<u64> q50_4(q50.begin(), q50.begin() + 4);
    // not a multiple of 64; 256 for the sanitizer runs (EMBER_CUDA_TEST_MAX_LOG_N = 10)
    const std::size_t n = std::min<std::size_t>(std::size_t(1) << std::max(max_log_n() - 2, 1), 1000);
    for (const auto& [from, to] : {std::pair{p61, q50_4}, std::pair{q60, q50}}) {
        std::vector<Modulus> fm, tm;
        for (u64 q : from) fm.emplace_back(q);
        for (u64 p : to) tm.emplace_back(p);
        const BaseConverter conv(fm, tm);
        const cuda::DeviceBaseConverter dconv(conv);
        for (int kind : {0, 2}) {
            LimbSet in, out;
            for (u64 q : from) in.add(sample(n, q, rng, kind));
            for (std::size_t j = 0; j < to.size(); ++j) out.add(std::vector<u64>(n, ~u64(0)));
            for (bool centered : {false, true}) {
                std::vector<std::vector<u64>> want(to.size(), std::vector<u64>(n));
                std::vector<u64*> pw;
                for (auto& w : want) pw.push_back(w.data());
                cpu->base_convert(conv, in.hcptr(), pw, n, centered);
                cuda::base_convert(dconv, in.dcptr(), out.dptr(), n, centered);
                expect_equal(out, want, "base_convert k=" + std::to_string(from.size()) + " m=" + std::to_string(to.size()) +
                                            (centered ? " centered" : " plain") + " kind " + std::to_string(kind));
                if (HasFatalFailure()) return;
            }
        }
    }
}

}  // namespace
}  // namespace ember
