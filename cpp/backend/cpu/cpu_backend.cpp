// CPU backend: limb-parallel kernels over a thread pool, element-wise work in math/vec_ops and the NTT
// in math/ntt (both dispatch to IFMA / AVX-512 / scalar code by CPUID).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>
#include <stdexcept>
#include <string>

#if defined(__linux__)
#include <malloc.h>  // mallopt (glibc; macOS has no <malloc.h>)
#endif

#include <openssl/crypto.h>

#include "backend/backend.hpp"
#include "backend/cpu/block_cache.hpp"
#include "backend/kernel_counts.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "math/cpu_features.hpp"
#include "math/vec_ops.hpp"
#include "trace/trace.hpp"

namespace ember {

namespace {

constexpr std::uint64_t W = sizeof(u64);

// glibc serves blocks of 128 KiB and more with fresh mmaps and unmaps them on free, so every temporary
// vector of a limb's size (encoder buffers, sampled noise, diagonals) faults its pages in again; in a VM
// a 4 KiB fault with the kernel's zeroing costs ~4 us (1 s per GiB, measured). Keeping such blocks in
// the heap and the freed top of the heap up to 256 MiB makes them reusable without faults. Set once, when
// the library is loaded; MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ in the environment still win.
// glibc only (other C libraries, e.g. macOS's, have no mallopt).
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
[[maybe_unused]] const bool g_malloc_tuned = [] {
    if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 256 << 20);
    if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
}();
#endif

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int threads) : pool_(threads) {}
    const char* name() const override { return "cpu"; }
    int threads() const override { return pool_.size(); }

    u64* allocate(std::size_t words, bool zero) override {
        if (words == 0) return nullptr;
        void* p = blocks_.get(words * W);
        if (!p) throw std::bad_alloc();
        if (zero) std::memset(p, 0, words * W);
        return static_cast<u64*>(p);
    }
    void release(u64* p, std::size_t words, bool wipe) override {
        if (!p) return;
        if (wipe) OPENSSL_cleanse(p, words * W);
        blocks_.put(p, words * W);
    }
    // Host memory: the transfers are copies.
    void upload(u64* dst, const u64* src, std::size_t words) override { copy_words(dst, src, words); }
    void download(u64* dst, const u64* src, std::size_t words) override { copy_words(dst, src, words); }
    void copy_words(u64* dst, const u64* src, std::size_t words) override {
        if (words && dst != src) std::memcpy(dst, src, words * W);
    }

    void ntt_forward(Limbs x) override {
        trace::Scope s("ntt_forward");
        transform<false>(x);
        if (s.on()) counts::ntt(s.c, x, false);
    }
    void ntt_inverse(Limbs x) override {
        trace::Scope s("ntt_inverse");
        transform<true>(x);
        if (s.on()) counts::ntt(s.c, x, true);
    }
    void ntt_inverse_from(Limbs out, ConstLimbs in) override {
        check(out, in.size(), "ntt_inverse_from");
        trace::Scope s("ntt_inverse");  // the same reads and writes as the in-place transform: the copy is fused
        transform<true>(out, in);
        if (s.on()) counts::ntt(s.c, out, true);
    }

    void copy(Limbs out, ConstLimbs a) override {
        check(out, a.size(), "copy");
        trace::Scope s("copy");
        pool_.parallel_for(out.size(), [&](std::size_t l) {
            if (out[l].data != a[l]) std::memcpy(out[l].data, a[l], n_of(out[l]) * W);
        });
        if (s.on()) counts::io(s.c, out, 1, 1);
    }
    void add(Limbs out, ConstLimbs a, ConstLimbs b) override { binary<vec_add>("add", out, a, b, 0, 1, 2); }
    void sub(Limbs out, ConstLimbs a, ConstLimbs b) override { binary<vec_sub>("sub", out, a, b, 0, 1, 2); }
    void neg(Limbs out, ConstLimbs a) override {
        check(out, a.size(), "neg");
        trace::Scope s("neg");
        pool_.parallel_for(out.size(), [&](std::size_t l) { vec_neg(out[l].data, a[l], n_of(out[l]), out[l].mod()); });
        if (s.on()) { s.c.mod_add = counts::elems(out); counts::io(s.c, out, 1, 1); }
    }
    void mul(Limbs out, ConstLimbs a, ConstLimbs b) override { binary<vec_mul>("mul", out, a, b, 1, 0, 2); }
    void mul_add(Limbs out, ConstLimbs a, ConstLimbs b) override { binary<vec_mul_add>("mul_add", out, a, b, 1, 1, 3); }
    void dot(Limbs out, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b) override {
        if (a.size() != b.size() || a.empty()) throw std::invalid_argument("dot: need the same positive number of terms on both sides");
        for (std::size_t t = 0; t < a.size(); ++t) { check(out, a[t].size(), "dot"); check(out, b[t].size(), "dot"); }
        trace::Scope s("dot");
        const std::size_t terms = a.size();
        pool_.parallel_for(out.size(), [&](std::size_t l) {
            const std::size_t n = n_of(out[l]);
            std::vector<const u64*> A(terms), B(terms);
            for (std::size_t t = 0; t < terms; ++t) {
                A[t] = a[t][l];
                B[t] = b[t][l];
            }
            vec_dot(out[l].data, A.data(), B.data(), terms, n, out[l].mod());
        });
        if (s.on()) counts::dot(s.c, out, terms, 1);
    }
    /// Both inner products block by block: the terms' block of a (at most 128 KiB) is still in L2 when the second
    /// product reads it, so a streams from memory once instead of twice (the key-switch inner product: 3 reads per
    /// term instead of 4).
    void dot2(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
              const std::vector<std::vector<const u64*>>& b1) override {
        check_dot2_args(out0, out1, a, b0, b1);
        const std::size_t terms = a.size();
        trace::Scope s("dot");
        // the largest power of two of coefficients whose `terms` rows fit in 128 KiB (at least 512): 96 to 192 KiB
        // measured alike on Zen 3 (512 KiB L2), 320 KiB slower
        std::size_t block = 512;
        while (block * 2 * terms * W <= (std::size_t(128) << 10)) block *= 2;
        pool_.parallel_for(out0.size(), [&](std::size_t l) {
            const std::size_t n = n_of(out0[l]);
            std::vector<const u64*> A(terms), B0(terms), B1(terms);
            for (std::size_t off = 0; off < n; off += block) {
                const std::size_t nb = std::min(block, n - off);
                for (std::size_t t = 0; t < terms; ++t) {
                    A[t] = a[t][l] + off;
                    B0[t] = b0[t][l] + off;
                    B1[t] = b1[t][l] + off;
                }
                vec_dot(out0[l].data + off, A.data(), B0.data(), terms, nb, out0[l].mod());
                vec_dot(out1[l].data + off, A.data(), B1.data(), terms, nb, out1[l].mod());
            }
        });
        if (s.on()) counts::dot(s.c, out0, terms, 2);
    }
    void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool accumulate) override {
        check(out, a.size(), "mul_const"); check(out, c.size(), "mul_const");
        trace::Scope s(accumulate ? "mul_const_add" : "mul_const");
        pool_.parallel_for(out.size(), [&](std::size_t l) {
            if (accumulate) vec_mul_const_add(out[l].data, a[l], c[l], n_of(out[l]), out[l].mod());
            else vec_mul_const(out[l].data, a[l], c[l], n_of(out[l]), out[l].mod());
        });
        if (s.on()) { s.c.mod_mul = counts::elems(out); s.c.mod_add = accumulate ? counts::elems(out) : 0; counts::io(s.c, out, accumulate ? 2 : 1, 1); }
    }
    void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) override {
        check(out, a.size(), "add_const"); check(out, c.size(), "add_const");
        trace::Scope s("add_const");
        pool_.parallel_for(out.size(), [&](std::size_t l) { vec_add_const(out[l].data, a[l], c[l], n_of(out[l]), out[l].mod()); });
        if (s.on()) { s.c.mod_add = counts::elems(out); counts::io(s.c, out, 1, 1); }
    }
    void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) override {
        check(out, a.size(), "sub_mul_const"); check(out, b.size(), "sub_mul_const"); check(out, c.size(), "sub_mul_const");
        trace::Scope s("sub_mul_const");
        pool_.parallel_for(out.size(), [&](std::size_t l) { vec_sub_mul_const(out[l].data, a[l], b[l], c[l], n_of(out[l]), out[l].mod()); });
        if (s.on()) { s.c.mod_mul = counts::elems(out); s.c.mod_add = counts::elems(out); counts::io(s.c, out, 2, 1); }
    }
    void permute(Limbs out, ConstLimbs a, std::uint64_t /*galois*/, const std::uint32_t* perm) override {
        check(out, a.size(), "permute");
        trace::Scope s("automorph");
        pool_.parallel_for(out.size(), [&](std::size_t l) {
            if (out[l].data == a[l]) throw std::invalid_argument("permute: output must not alias input");
            const std::size_t n = n_of(out[l]);
            const u64* src = a[l];
            u64* dst = out[l].data;
            // In evaluation form an automorphism maps each aligned run of 2^k outputs to one aligned run of 2^k
            // inputs (the high bits of an index decide the low bits of its root's exponent), read in an order no
            // hardware prefetcher follows: prefetch the next run's source sequentially while this run is gathered.
            // (A hint only: the words are the same for any permutation.)
            constexpr std::size_t kRun = 512;  // 4 KiB
            if (n < 2 * kRun) {
                for (std::size_t i = 0; i < n; ++i) dst[i] = src[perm[i]];
                return;
            }
            for (std::size_t c = 0; c < n; c += kRun) {
                if (c + kRun < n) {
                    const u64* next = src + (perm[c + kRun] & ~static_cast<std::uint32_t>(kRun - 1));
                    for (std::size_t k = 0; k < kRun; k += 8) __builtin_prefetch(next + k);
                }
                for (std::size_t i = c; i < c + kRun; ++i) dst[i] = src[perm[i]];
            }
        });
        if (s.on()) counts::io(s.c, out, 1, 1);
    }
    void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) override {
        if (in.size() != conv.from().size() || out.size() != conv.to().size())
            throw std::invalid_argument("base_convert: limb counts do not match the converter");
        trace::Scope s(centered ? "base_convert_centered" : "base_convert");
        pool_.parallel_range(n, 64, [&](std::size_t b, std::size_t e) { conv.convert(in.data(), out.data(), b, e, centered); });
        if (s.on()) {
            const std::uint64_t k = in.size(), m = out.size();
            // x_i * Q~_i, then k products per output limb (+ v * Q per output limb when centered)
            s.c.mod_mul = n * k + n * k * m + (centered ? n * m : 0);
            s.c.mod_add = n * (k - 1) * m + (centered ? n * m : 0);
            s.c.bytes_read = n * k * W;
            s.c.bytes_written = n * m * W;
        }
    }

    void signed_digits(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t n, int digit_bits) override {
        if (digit_bits < 2 || digit_bits > 30) throw std::invalid_argument("signed_digits: digit_bits must be in [2, 30], got " + std::to_string(digit_bits));
        trace::Scope s("signed_digits");
        pool_.parallel_range(n, 256, [&](std::size_t b, std::size_t e) { signed_digits_host(out, in, mod, b, e, digit_bits); });
        if (s.on()) {
            s.c.bytes_read = n * W;
            s.c.bytes_written = n * W * out.size();
        }
    }

private:
    /// Transforms every limb. Each thread claims its next limb before it starts on the current one and hands
    /// it to the kernel, which prefetches that limb into L2 while it computes (in a pipeline the limb was just
    /// written by another kernel and is not in L2). Limbs on a 64-bit path (about 2.5x the IFMA path's time, 2x
    /// the AVX2 double-precision one's, at N = 2^16) go first, and no limb is claimed ahead when fewer than one per
    /// thread are left, so that the call does not end with one thread idle while another works through a long limb
    /// or one held in reserve.
    template <bool Inverse>
    void transform(Limbs x, ConstLimbs src = {}) {
        const std::size_t count = x.size();
        std::vector<std::uint32_t> order(count);
        for (std::size_t l = 0; l < count; ++l) order[l] = static_cast<std::uint32_t>(l);
        std::stable_partition(order.begin(), order.end(), [&](std::uint32_t l) { return !ember::ntt_small_prime_path(*x[l].table); });
        const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(pool_.size()), count);
        std::atomic<std::size_t> claim{0};
        pool_.parallel_for(workers, [&](std::size_t) {
            std::size_t i = claim.fetch_add(1);
            while (i < count) {
                std::size_t j = count;
                if (claim.load(std::memory_order_relaxed) + workers <= count) j = claim.fetch_add(1);
                const LimbRef& cur = x[order[i]];
                const LimbRef* nx = j < count ? &x[order[j]] : nullptr;
                // out of place: the limb is copied and transformed while it is in cache; prefetch the next
                // limb's source then
                u64* next = nx ? (src.empty() ? nx->data : const_cast<u64*>(src[order[j]])) : nullptr;
                if (!src.empty() && src[order[i]] != cur.data) std::memcpy(cur.data, src[order[i]], n_of(cur) * W);
                if constexpr (Inverse) ember::ntt_inverse(cur.data, *cur.table, next, nx ? nx->table : nullptr);
                else ember::ntt_forward(cur.data, *cur.table, next, nx ? nx->table : nullptr);
                i = j < count ? j : claim.fetch_add(1);
            }
        });
    }

    /// out[l] = Kernel(a[l], b[l]) for every limb (vec_add, vec_sub, vec_mul, vec_mul_add: mul_add reads out
    /// too), traced as `op`: `muls` modular multiplications and `adds` additions per element, `reads` arrays read.
    template <auto Kernel>
    void binary(const char* op, Limbs out, ConstLimbs a, ConstLimbs b, int muls, int adds, int reads) {
        check(out, a.size(), op);
        check(out, b.size(), op);
        trace::Scope s(op);
        pool_.parallel_for(out.size(), [&](std::size_t l) { Kernel(out[l].data, a[l], b[l], n_of(out[l]), out[l].mod()); });
        if (s.on()) {
            s.c.mod_mul = static_cast<std::uint64_t>(muls) * counts::elems(out);
            s.c.mod_add = static_cast<std::uint64_t>(adds) * counts::elems(out);
            counts::io(s.c, out, reads, 1);
        }
    }

    static std::size_t n_of(const LimbRef& r) { return r.table->n; }
    static void check(Limbs out, std::size_t m, const char* op) {
        if (out.size() != m) throw std::invalid_argument(std::string(op) + ": operand has " + std::to_string(m) + " limbs, output " + std::to_string(out.size()));
    }
    // Freed blocks kept for reuse (they count in the process's memory; see block_cache.hpp). 2 GiB: the
    // default bootstrapping at N = 2^16 peaks at 10.9 GiB (in key generation; the cache does not set it) and
    // faults no page after the first bootstrapping. EMBER_BLOCK_CACHE_MB in the environment sets another
    // bound (0: no cache).
    static std::size_t cache_bytes_from_env() {
        const char* v = std::getenv("EMBER_BLOCK_CACHE_MB");
        if (!v || !*v) return std::size_t(2) << 30;
        char* end = nullptr;
        const unsigned long long mb = std::strtoull(v, &end, 10);
        if (*end != '\0' || mb > (std::size_t(1) << 20)) throw std::invalid_argument("EMBER_BLOCK_CACHE_MB must be a number of MiB, got '" + std::string(v) + "'");
        return static_cast<std::size_t>(mb) << 20;
    }
    ThreadPool pool_;
    BlockCache blocks_{cache_bytes_from_env()};
};

}  // namespace

std::shared_ptr<Backend> make_cpu_backend(int threads) {
    if (threads < 1 || threads > 256) throw std::invalid_argument("threads must be in [1, 256], got " + std::to_string(threads));
    (void)cpu_features();  // a bad EMBER_SIMD is refused here, before any work (std::runtime_error naming the choices)
    return std::make_shared<CpuBackend>(threads);
}

}  // namespace ember
