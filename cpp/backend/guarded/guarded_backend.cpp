// The guarded CPU mode (backend.hpp's make_guarded_backend): the CPU backend's kernels on polynomial memory that
// the host cannot address, so that scheme code reaching past the backend into polynomial data (what the CUDA
// backend's device memory forbids) is caught on a machine without a GPU.
//
// Memory comes from arenas. Each arena is two mappings of the same size: a guard range with no access rights
// (PROT_NONE), whose addresses allocate() hands out, and a real range (read-write) at the same offsets, which the
// kernels and transfers use after translating each pointer. Touching a guard address outside the kernels faults at
// once; a SIGSEGV handler installed with the first arena names the guarded block before the process dies. Kernel
// operands and transfer ranges are checked against the live blocks: a host pointer, a released block or a range
// past a block's end throws std::logic_error naming the operation.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <openssl/crypto.h>

#include "backend/backend.hpp"

#if defined(__unix__) || defined(__APPLE__)
#define EMBER_GUARDED_MMAP 1
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace ember {

#if EMBER_GUARDED_MMAP

namespace {

constexpr std::size_t W = sizeof(u64);
constexpr std::size_t kArenaBytes = std::size_t(1) << 30;  // 1 GiB of address space each (a larger block gets its own)
constexpr std::size_t kAlign = 64;

// Guard ranges of every live arena, read by the fault handler (async-signal-safe: atomics only).
constexpr int kMaxArenas = 512;
std::atomic<std::uintptr_t> g_lo[kMaxArenas];
std::atomic<std::uintptr_t> g_hi[kMaxArenas];
struct sigaction g_previous;
std::once_flag g_handler_once;

void write_str(const char* s) {
    ssize_t r = ::write(2, s, std::strlen(s));
    (void)r;
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
    const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (int i = 0; i < kMaxArenas; ++i) {
        if (a >= g_lo[i].load(std::memory_order_relaxed) && a < g_hi[i].load(std::memory_order_relaxed)) {
            char hex[19] = "0x";
            for (int d = 0; d < 16; ++d) hex[2 + d] = "0123456789abcdef"[(a >> (60 - 4 * d)) & 0xf];
            hex[18] = '\0';
            write_str("ember: the host touched guarded polynomial memory at ");
            write_str(hex);
            write_str(" (device cpu-guarded): code outside the backend's kernels read or wrote limb data directly; "
                      "it must go through Backend::upload / download (ring/poly.hpp: HostLimbs)\n");
            break;
        }
    }
    // Hand the fault on: to the handler that was there before, else the default action (the access faults again).
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) { g_previous.sa_sigaction(sig, info, uctx); return; }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
        g_previous.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
}

void install_handler() {
    std::call_once(g_handler_once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_fault;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigaction(SIGSEGV, &sa, &g_previous);
    });
}

void* map_or_throw(std::size_t bytes, int prot) {
    void* p = mmap(nullptr, bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
}

class GuardedBackend final : public Backend {
public:
    explicit GuardedBackend(std::shared_ptr<Backend> inner) : in_(std::move(inner)) {
        if (!in_) throw std::invalid_argument("make_guarded_backend: no backend to guard");
        if (!in_->host_addressable()) throw std::invalid_argument("make_guarded_backend: the inner backend must use host memory");
        name_ = std::string(in_->name()) + "-guarded";
        install_handler();
    }
    ~GuardedBackend() override {
        for (const Arena& a : arenas_) {
            g_lo[a.slot].store(0);
            g_hi[a.slot].store(0);
            munmap(reinterpret_cast<void*>(a.guard), a.bytes);
            munmap(a.real, a.bytes);
        }
    }
    const char* name() const override { return name_.c_str(); }
    int threads() const override { return in_->threads(); }
    bool host_addressable() const override { return false; }
    void synchronize() override { in_->synchronize(); }

    u64* allocate(std::size_t words, bool zero) override {
        if (words == 0) return nullptr;
        const std::size_t bytes = (words * W + kAlign - 1) / kAlign * kAlign;
        std::lock_guard<std::mutex> l(mu_);
        std::uintptr_t g = 0;
        auto f = free_.find(bytes);  // an exact-size block freed earlier (polynomials come in few sizes)
        if (f != free_.end()) {
            g = f->second;
            free_.erase(f);
        } else {
            Arena* a = nullptr;
            for (Arena& c : arenas_)
                if (c.bytes - c.used >= bytes) { a = &c; break; }
            if (!a) a = &new_arena(bytes);
            g = a->guard + a->used;
            a->used += bytes;
        }
        live_[g] = Block{words, bytes};
        u64* r = real(g);
        if (zero) std::memset(r, 0, words * W);
        return reinterpret_cast<u64*>(g);
    }
    void release(u64* p, std::size_t words, bool wipe) override {
        if (!p) return;
        std::lock_guard<std::mutex> l(mu_);
        const auto g = reinterpret_cast<std::uintptr_t>(p);
        auto it = live_.find(g);
        if (it == live_.end()) throw std::logic_error("release: not a live block of the guarded backend");
        if (it->second.words != words) throw std::logic_error("release: block of " + std::to_string(it->second.words) + " words released as " + std::to_string(words));
        if (wipe) OPENSSL_cleanse(real(g), words * W);
        free_.emplace(it->second.bytes, g);
        live_.erase(it);
    }

    void upload(u64* dst, const u64* src, std::size_t words) override {
        if (words) std::memcpy(tr(dst, words, "upload"), src, words * W);
    }
    void download(u64* dst, const u64* src, std::size_t words) override {
        if (words) std::memcpy(dst, tr(src, words, "download"), words * W);
    }
    void copy_words(u64* dst, const u64* src, std::size_t words) override {
        if (words) std::memmove(tr(dst, words, "copy_words"), tr(src, words, "copy_words"), words * W);
    }

    void ntt_forward(Limbs x) override { in_->ntt_forward(out_refs(x, "ntt_forward")); }
    void ntt_inverse(Limbs x) override { in_->ntt_inverse(out_refs(x, "ntt_inverse")); }
    void ntt_inverse_from(Limbs out, ConstLimbs in) override {
        in_->ntt_inverse_from(out_refs(out, "ntt_inverse_from"), in_refs(in, out, "ntt_inverse_from"));
    }
    void copy(Limbs out, ConstLimbs a) override { in_->copy(out_refs(out, "copy"), in_refs(a, out, "copy")); }
    void add(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->add(out_refs(out, "add"), in_refs(a, out, "add"), in_refs(b, out, "add")); }
    void sub(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->sub(out_refs(out, "sub"), in_refs(a, out, "sub"), in_refs(b, out, "sub")); }
    void neg(Limbs out, ConstLimbs a) override { in_->neg(out_refs(out, "neg"), in_refs(a, out, "neg")); }
    void mul(Limbs out, ConstLimbs a, ConstLimbs b) override { in_->mul(out_refs(out, "mul"), in_refs(a, out, "mul"), in_refs(b, out, "mul")); }
    void mul_add(Limbs out, ConstLimbs a, ConstLimbs b) override {
        in_->mul_add(out_refs(out, "mul_add"), in_refs(a, out, "mul_add"), in_refs(b, out, "mul_add"));
    }
    void dot(Limbs out, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b) override {
        std::vector<std::vector<const u64*>> ta, tb;
        for (const auto& v : a) ta.push_back(in_refs(v, out, "dot"));
        for (const auto& v : b) tb.push_back(in_refs(v, out, "dot"));
        in_->dot(out_refs(out, "dot"), ta, tb);
    }
    void dot2(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
              const std::vector<std::vector<const u64*>>& b1) override {
        std::vector<std::vector<const u64*>> ta, tb0, tb1;
        for (const auto& v : a) ta.push_back(in_refs(v, out0, "dot2"));
        for (const auto& v : b0) tb0.push_back(in_refs(v, out0, "dot2"));
        for (const auto& v : b1) tb1.push_back(in_refs(v, out0, "dot2"));
        in_->dot2(out_refs(out0, "dot2"), out_refs(out1, "dot2"), ta, tb0, tb1);
    }
    void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool accumulate) override {
        in_->mul_const(out_refs(out, "mul_const"), in_refs(a, out, "mul_const"), c, accumulate);
    }
    void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) override {
        in_->add_const(out_refs(out, "add_const"), in_refs(a, out, "add_const"), c);
    }
    void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) override {
        in_->sub_mul_const(out_refs(out, "sub_mul_const"), in_refs(a, out, "sub_mul_const"), in_refs(b, out, "sub_mul_const"), c);
    }
    void permute(Limbs out, ConstLimbs a, std::uint64_t galois, const std::uint32_t* perm) override {
        in_->permute(out_refs(out, "permute"), in_refs(a, out, "permute"), galois, perm);
    }
    void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) override {
        std::vector<const u64*> ti;
        std::vector<u64*> to;
        for (const u64* p : in) ti.push_back(tr(p, n, "base_convert"));
        for (u64* p : out) to.push_back(tr(p, n, "base_convert"));
        in_->base_convert(conv, ti, to, n, centered);
    }

    void signed_digits(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t n, int digit_bits) override {
        std::vector<u64*> to;
        for (u64* p : out) to.push_back(tr(p, n, "signed_digits"));
        in_->signed_digits(to, tr(in, n, "signed_digits"), mod, n, digit_bits);
    }

private:
    struct Arena {
        std::uintptr_t guard = 0;
        u64* real = nullptr;
        std::size_t bytes = 0, used = 0;
        int slot = 0;
    };
    struct Block {
        std::size_t words = 0, bytes = 0;
    };

    Arena& new_arena(std::size_t need) {
        const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const std::size_t bytes = (std::max(need, kArenaBytes) + page - 1) / page * page;
        int slot = -1;
        for (int i = 0; i < kMaxArenas && slot < 0; ++i) {
            std::uintptr_t zero = 0;
            if (g_lo[i].compare_exchange_strong(zero, 1)) slot = i;  // claimed (1: no address is in [1, 0))
        }
        if (slot < 0) throw std::runtime_error("guarded backend: too many arenas");
        Arena a;
        a.bytes = bytes;
        a.slot = slot;
        a.guard = reinterpret_cast<std::uintptr_t>(map_or_throw(bytes, PROT_NONE));
        a.real = static_cast<u64*>(map_or_throw(bytes, PROT_READ | PROT_WRITE));
        g_hi[slot].store(a.guard + bytes);
        g_lo[slot].store(a.guard);
        arenas_.push_back(a);
        return arenas_.back();
    }
    // Real address of the guard address g (caller holds mu_ or g is known to be live).
    u64* real(std::uintptr_t g) const {
        for (const Arena& a : arenas_)
            if (g >= a.guard && g < a.guard + a.bytes) return reinterpret_cast<u64*>(reinterpret_cast<std::uintptr_t>(a.real) + (g - a.guard));
        return nullptr;
    }
    /// The real address of [p, p + words) after checking that it lies inside one live block.
    u64* tr(const u64* p, std::size_t words, const char* op) const {
        const auto g = reinterpret_cast<std::uintptr_t>(p);
        std::lock_guard<std::mutex> l(mu_);
        auto it = live_.upper_bound(g);
        if (it == live_.begin() || p == nullptr)
            throw std::logic_error(std::string(op) + ": an operand is not memory of this backend (a host pointer given to a kernel?)");
        --it;
        if (g + words * W > it->first + it->second.words * W)
            throw std::logic_error(std::string(op) + ": an operand runs past the end of its block (or is not memory of this backend)");
        return real(g);
    }
    std::vector<LimbRef> out_refs(Limbs x, const char* op) const {
        std::vector<LimbRef> r;
        r.reserve(x.size());
        for (const LimbRef& l : x) r.push_back({tr(l.data, l.table->n, op), l.table});
        return r;
    }
    std::vector<const u64*> in_refs(ConstLimbs a, Limbs like, const char* op) const {
        std::vector<const u64*> r;
        r.reserve(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) r.push_back(tr(a[i], i < like.size() ? like[i].table->n : like.empty() ? 1 : like[0].table->n, op));
        return r;
    }

    std::shared_ptr<Backend> in_;
    std::string name_;
    mutable std::mutex mu_;
    std::vector<Arena> arenas_;
    std::map<std::uintptr_t, Block> live_;
    std::multimap<std::size_t, std::uintptr_t> free_;
};

}  // namespace

std::shared_ptr<Backend> make_guarded_backend(std::shared_ptr<Backend> inner) {
    return std::make_shared<GuardedBackend>(std::move(inner));
}

#else

std::shared_ptr<Backend> make_guarded_backend(std::shared_ptr<Backend>) {
    throw std::runtime_error("the guarded CPU mode needs mmap (POSIX); it is not available on this platform");
}

#endif

}  // namespace ember
