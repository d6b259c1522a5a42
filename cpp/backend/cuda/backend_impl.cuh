// CudaBackend: the kernel interface of backend/backend.hpp on one CUDA device, over the launchers of kernels.hpp.
// Polynomial memory is device memory from the stream-ordered pool (runtime_impl.cuh); every kernel, copy,
// allocation and release is queued on the one launch stream, so the operations keep their program order without
// waiting for each other. Only download() and synchronize() wait (and upload(), for the launch stream's earlier
// work): dot() and base_convert() pass their pointer tables in the kernels' parameters, and the device-side tables
// below come from the same pool, so no operation allocates with cudaMalloc or waits for the device in steady state.
//
// Device-side state, built on first use and kept for the backend's life, each cache under its own mutex:
//   * NTT tables per prime, keyed by VALUE (q, N, psi): the tables are a pure function of those three, so a host
//     NttTables freed and another allocated at the same address can never be served stale tables;
//   * base converters keyed by the BaseConverter's address, checked against its from() / to() moduli on every
//     use (the constants are a pure function of those) and rebuilt when they differ. Held by shared_ptr so that
//     a rebuild by one thread does not free the constants a conversion of another thread is reading.
// Both hold their device memory in pool blocks (kernels.hpp's PoolBlock): a fill costs a stream-ordered allocation
// and a copy, not a cudaMalloc, and a block is returned in stream order, so a converter dropped from the cache while
// a queued kernel still reads its constants is safe. (The pool is the device's default pool, alive as long as the
// CUDA context; at process exit a release that comes after the runtime's teardown fails quietly, as cudaFree would.)
//
// Tracing: every operation opens a trace::Scope of the CPU backend's name (cpu/cpu_backend.cpp) with the CPU
// backend's counts (the cost model's conventions: ntt_mod_mul_count and friends, not the GPU kernels' own instruction
// mix). When tracing is on the scope waits for the stream before it starts and before it ends, so that its time is
// the operation's own device time (plus launch overhead); with tracing off nothing waits.
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "backend/kernel_counts.hpp"
#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/register.hpp"
#include "trace/trace.hpp"

namespace ember::cuda {

namespace {

constexpr std::uint64_t kWordBytes = sizeof(u64);

/// The scope's kernel name, after waiting for the stream when tracing is on (so that earlier queued work is not
/// timed as this operation's).
const char* settled(const char* kernel) {
    if (trace::enabled()) stream_synchronize();
    return kernel;
}

/// The output limbs of an operation as the launchers take them: pointers, moduli and the one ring size.
struct OutLimbs {
    std::vector<u64*> ptr;
    std::vector<Modulus> mod;
    std::size_t n = 0;
};

OutLimbs out_limbs(Limbs out, const char* op) {
    OutLimbs o;
    o.ptr.reserve(out.size());
    o.mod.reserve(out.size());
    for (const LimbRef& r : out) {
        if (o.ptr.empty()) o.n = r.table->n;
        else if (r.table->n != o.n)
            throw std::invalid_argument(std::string(op) + ": limbs of different ring sizes in one call (" + std::to_string(o.n) +
                                        " and " + std::to_string(r.table->n) + ")");
        o.ptr.push_back(r.data);
        o.mod.push_back(r.table->mod);
    }
    return o;
}

void check_count(Limbs out, std::size_t m, const char* op) {
    if (out.size() != m)
        throw std::invalid_argument(std::string(op) + ": operand has " + std::to_string(m) + " limbs, output " + std::to_string(out.size()));
}

class CudaBackend final : public Backend {
public:
    CudaBackend() { (void)pool_stats(); }  // sets the pool up (and fails here, not in the first allocation)

    const char* name() const override { return "cuda"; }
    int threads() const override { return 1; }
    bool host_addressable() const override { return false; }

    // ---- memory ----------------------------------------------------------------------------------------------

    u64* allocate(std::size_t words, bool zero) override {
        if (words == 0) return nullptr;
        // (the pool's blocks are 256-byte aligned in practice; the device kernels need only 8, and no host code
        // touches this memory, so Backend's 64 bytes are checked by the device test, not here)
        u64* p = pool_allocate(words);
        if (zero) {
            try {
                memset_async(p, 0, words * kWordBytes);
            } catch (...) {
                pool_free(p);
                throw;
            }
        }
        return p;
    }
    void release(u64* p, std::size_t words, bool wipe) override {
        if (!p) return;
        // Called from destructors (Poly): nothing may escape. A failed wipe means the stream is already in a sticky
        // error state (the context is lost and its memory unreachable); the next checked call reports it.
        if (wipe) {
            try {
                memset_async(p, 0, words * kWordBytes);
            } catch (...) {
            }
        }
        pool_free(p);  // stream order: after the wipe and after every kernel queued on the block
    }
    void upload(u64* dst, const u64* src, std::size_t words) override { copy_to_device(dst, src, words * kWordBytes); }
    void download(u64* dst, const u64* src, std::size_t words) override { copy_to_host(dst, src, words * kWordBytes); }
    void copy_words(u64* dst, const u64* src, std::size_t words) override {
        if (words && dst != src) copy_on_device(dst, src, words * kWordBytes);
    }
    void synchronize() override { stream_synchronize(); }

    // ---- NTT -------------------------------------------------------------------------------------------------

    void ntt_forward(Limbs x) override {
        trace::Scope s(settled("ntt_forward"));
        transform(x, false);
        if (s.on()) {
            stream_synchronize();
            counts::ntt(s.c, x, false);
        }
    }
    void ntt_inverse(Limbs x) override {
        trace::Scope s(settled("ntt_inverse"));
        transform(x, true);
        if (s.on()) {
            stream_synchronize();
            counts::ntt(s.c, x, true);
        }
    }
    void ntt_inverse_from(Limbs out, ConstLimbs in) override {
        check_count(out, in.size(), "ntt_inverse_from");
        trace::Scope s(settled("ntt_inverse"));  // counted as the in-place transform, as on the CPU
        transform(out, true, in);  // the copy fused into the first kernel's load
        if (s.on()) {
            stream_synchronize();
            counts::ntt(s.c, out, true);
        }
    }

    // ---- element-wise ----------------------------------------------------------------------------------------

    void copy(Limbs out, ConstLimbs a) override {
        check_count(out, a.size(), "copy");
        trace::Scope s(settled("copy"));
        for (std::size_t l = 0; l < out.size(); ++l)
            if (out[l].data != a[l]) copy_on_device(out[l].data, a[l], out[l].table->n * kWordBytes);
        if (s.on()) {
            stream_synchronize();
            counts::io(s.c, out, 1, 1);
        }
    }
    void add(Limbs out, ConstLimbs a, ConstLimbs b) override {
        binary("add", out, a, b, 0, 1, 2, [](const OutLimbs& o, ConstLimbs x, ConstLimbs y) { cuda::add(o.ptr, x, y, o.mod, o.n); });
    }
    void sub(Limbs out, ConstLimbs a, ConstLimbs b) override {
        binary("sub", out, a, b, 0, 1, 2, [](const OutLimbs& o, ConstLimbs x, ConstLimbs y) { cuda::sub(o.ptr, x, y, o.mod, o.n); });
    }
    void mul(Limbs out, ConstLimbs a, ConstLimbs b) override {
        binary("mul", out, a, b, 1, 0, 2, [](const OutLimbs& o, ConstLimbs x, ConstLimbs y) { cuda::mul(o.ptr, x, y, o.mod, o.n); });
    }
    void mul_add(Limbs out, ConstLimbs a, ConstLimbs b) override {
        binary("mul_add", out, a, b, 1, 1, 3,
               [](const OutLimbs& o, ConstLimbs x, ConstLimbs y) { cuda::mul_add(o.ptr, x, y, o.mod, o.n); });
    }
    void neg(Limbs out, ConstLimbs a) override {
        check_count(out, a.size(), "neg");
        trace::Scope s(settled("neg"));
        const OutLimbs o = out_limbs(out, "neg");
        cuda::neg(o.ptr, a, o.mod, o.n);
        if (s.on()) {
            stream_synchronize();
            s.c.mod_add = counts::elems(out);
            counts::io(s.c, out, 1, 1);
        }
    }
    void dot(Limbs out, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b) override {
        if (a.size() != b.size() || a.empty()) throw std::invalid_argument("dot: need the same positive number of terms on both sides");
        for (std::size_t t = 0; t < a.size(); ++t) {
            check_count(out, a[t].size(), "dot");
            check_count(out, b[t].size(), "dot");
        }
        trace::Scope s(settled("dot"));
        const OutLimbs o = out_limbs(out, "dot");
        cuda::dot(o.ptr, a, b, o.mod, o.n);
        if (s.on()) {
            stream_synchronize();
            counts::dot(s.c, out, a.size(), 1);
        }
    }
    void dot2(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
              const std::vector<std::vector<const u64*>>& b1) override {
        check_dot2_args(out0, out1, a, b0, b1);
        trace::Scope s(settled("dot"));  // one dot, as the CPU backend traces it (backend/kernel_counts.hpp)
        const OutLimbs o0 = out_limbs(out0, "dot2"), o1 = out_limbs(out1, "dot2");
        cuda::dot2(o0.ptr, o1.ptr, a, b0, b1, o0.mod, o0.n);
        if (s.on()) {
            stream_synchronize();
            counts::dot(s.c, out0, a.size(), 2);
        }
    }
    void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool accumulate) override {
        check_count(out, a.size(), "mul_const");
        check_count(out, c.size(), "mul_const");
        trace::Scope s(settled(accumulate ? "mul_const_add" : "mul_const"));
        const OutLimbs o = out_limbs(out, "mul_const");
        cuda::mul_const(o.ptr, a, c, o.mod, o.n, accumulate);
        if (s.on()) {
            stream_synchronize();
            s.c.mod_mul = counts::elems(out);
            s.c.mod_add = accumulate ? counts::elems(out) : 0;
            counts::io(s.c, out, accumulate ? 2 : 1, 1);
        }
    }
    void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) override {
        check_count(out, a.size(), "add_const");
        check_count(out, c.size(), "add_const");
        trace::Scope s(settled("add_const"));
        const OutLimbs o = out_limbs(out, "add_const");
        cuda::add_const(o.ptr, a, c, o.mod, o.n);
        if (s.on()) {
            stream_synchronize();
            s.c.mod_add = counts::elems(out);
            counts::io(s.c, out, 1, 1);
        }
    }
    void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) override {
        check_count(out, a.size(), "sub_mul_const");
        check_count(out, b.size(), "sub_mul_const");
        check_count(out, c.size(), "sub_mul_const");
        trace::Scope s(settled("sub_mul_const"));
        const OutLimbs o = out_limbs(out, "sub_mul_const");
        cuda::sub_mul_const(o.ptr, a, b, c, o.mod, o.n);
        if (s.on()) {
            stream_synchronize();
            s.c.mod_mul = counts::elems(out);
            s.c.mod_add = counts::elems(out);
            counts::io(s.c, out, 2, 1);
        }
    }

    // ---- automorphisms and base conversion -------------------------------------------------------------------

    /// The indices of X -> X^galois come from the kernel (arith.hpp's automorphism_index, tested equal to the
    /// ring's table): `perm` (a host table) is not used.
    void permute(Limbs out, ConstLimbs a, std::uint64_t galois, const std::uint32_t* /*perm*/) override {
        check_count(out, a.size(), "permute");
        trace::Scope s(settled("automorph"));
        if (!out.empty()) {
            const OutLimbs o = out_limbs(out, "permute");
            for (std::size_t l = 0; l < out.size(); ++l)
                if (out[l].data == a[l]) throw std::invalid_argument("permute: output must not alias input");
            cuda::automorph(o.ptr, a, galois, out[0].table->log_n);
        }
        if (s.on()) {
            stream_synchronize();
            counts::io(s.c, out, 1, 1);
        }
    }
    void signed_digits(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t n, int digit_bits) override {
        trace::Scope s(settled("signed_digits"));
        cuda::signed_digits(out, in, mod.q, n, digit_bits);
        if (s.on()) {
            stream_synchronize();
            s.c.bytes_read = n * kWordBytes;
            s.c.bytes_written = n * kWordBytes * out.size();
        }
    }
    void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) override {
        if (in.size() != conv.from().size() || out.size() != conv.to().size())
            throw std::invalid_argument("base_convert: limb counts do not match the converter");
        trace::Scope s(settled(centered ? "base_convert_centered" : "base_convert"));
        const std::shared_ptr<const DeviceBaseConverter> dev = device_converter(conv);
        cuda::base_convert(*dev, in, out, n, centered);
        if (s.on()) {
            stream_synchronize();
            const std::uint64_t k = in.size(), m = out.size();
            s.c.mod_mul = n * k + n * k * m + (centered ? n * m : 0);
            s.c.mod_add = n * (k - 1) * m + (centered ? n * m : 0);
            s.c.bytes_read = n * k * kWordBytes;
            s.c.bytes_written = n * m * kWordBytes;
        }
    }

private:
    template <class Launch>
    void binary(const char* op, Limbs out, ConstLimbs a, ConstLimbs b, int muls, int adds, int reads, Launch launch) {
        check_count(out, a.size(), op);
        check_count(out, b.size(), op);
        trace::Scope s(settled(op));
        const OutLimbs o = out_limbs(out, op);
        launch(o, a, b);
        if (s.on()) {
            stream_synchronize();
            s.c.mod_mul = static_cast<std::uint64_t>(muls) * counts::elems(out);
            s.c.mod_add = static_cast<std::uint64_t>(adds) * counts::elems(out);
            counts::io(s.c, out, reads, 1);
        }
    }

    /// src: empty (in place) or the limbs to transform into x (inverse only).
    void transform(Limbs x, bool inverse, ConstLimbs src = {}) {
        if (x.empty()) return;
        std::vector<u64*> ptr(x.size());
        std::vector<const DeviceNttTables*> tab(x.size());
        {
            std::lock_guard<std::mutex> lock(ntt_mu_);
            for (std::size_t l = 0; l < x.size(); ++l) {
                ptr[l] = x[l].data;
                tab[l] = device_tables(*x[l].table);
            }
        }
        if (!src.empty()) cuda::ntt_inverse_from(ptr, src, tab);
        else if (inverse) cuda::ntt_inverse(ptr, tab);
        else cuda::ntt_forward(ptr, tab);
    }

    /// The device tables of t's prime (ntt_mu_ held). Map nodes are never erased while the backend lives, so the
    /// pointer stays valid after the lock is released.
    const DeviceNttTables* device_tables(const NttTables& t) {
        const NttKey key{t.mod.q, t.n, t.psi};
        auto it = ntt_.find(key);
        if (it == ntt_.end()) it = ntt_.emplace(key, std::make_unique<DeviceNttTables>(t)).first;
        return it->second.get();
    }

    static bool same_moduli(const std::vector<Modulus>& m, const std::vector<u64>& q) {
        if (m.size() != q.size()) return false;
        for (std::size_t i = 0; i < q.size(); ++i)
            if (m[i].q != q[i]) return false;
        return true;
    }
    static std::vector<u64> moduli(const std::vector<Modulus>& m) {
        std::vector<u64> q(m.size());
        for (std::size_t i = 0; i < m.size(); ++i) q[i] = m[i].q;
        return q;
    }

    std::shared_ptr<const DeviceBaseConverter> device_converter(const BaseConverter& conv) {
        std::lock_guard<std::mutex> lock(conv_mu_);
        auto it = conv_.find(&conv);
        if (it != conv_.end() && same_moduli(conv.from(), it->second.from) && same_moduli(conv.to(), it->second.to))
            return it->second.dev;
        // new, or another converter at a freed one's address: (re)build. The rings' converters live as long as their
        // RingContext, so the cache stays small; a program that makes converters on the fly would grow it, hence
        // the bound.
        if (it == conv_.end() && conv_.size() >= kMaxConverters) conv_.clear();
        ConvEntry e{moduli(conv.from()), moduli(conv.to()), std::make_shared<const DeviceBaseConverter>(conv)};
        auto& slot = conv_[&conv];
        slot = std::move(e);
        return slot.dev;
    }

    struct NttKey {
        u64 q;
        std::size_t n;
        u64 psi;
        bool operator<(const NttKey& o) const { return std::tie(q, n, psi) < std::tie(o.q, o.n, o.psi); }
    };
    struct ConvEntry {
        std::vector<u64> from, to;
        std::shared_ptr<const DeviceBaseConverter> dev;
    };
    static constexpr std::size_t kMaxConverters = 4096;

    std::mutex ntt_mu_;
    std::map<NttKey, std::unique_ptr<DeviceNttTables>> ntt_;
    std::mutex conv_mu_;
    std::unordered_map<const BaseConverter*, ConvEntry> conv_;
};

}  // namespace

std::shared_ptr<Backend> make_cuda_backend(int threads) {
    if (threads < 1 || threads > 256) throw std::invalid_argument("threads must be in [1, 256], got " + std::to_string(threads));
    if (device_count() == 0)
        throw std::runtime_error("no CUDA device: the CUDA runtime finds none (no NVIDIA GPU, no driver, or a driver older "
                                 "than this build's CUDA runtime)");
    return std::make_shared<CudaBackend>();
}

void register_cuda_backend() { register_backend_factory("cuda", &make_cuda_backend); }

}  // namespace ember::cuda
