#include "heaan/big_poly.hpp"

#include <mutex>
#include <stdexcept>
#include <string>

#include "backend/cpu/thread_pool.hpp"

namespace ember::heaan {

namespace detail {

namespace {
constexpr std::size_t kRecycleMin = std::size_t(1) << 20, kRecycleMaxBlocks = 16, kRecycleMaxBytes = std::size_t(512) << 20;
struct BlockCache {
    std::mutex mu;
    std::vector<std::pair<void*, std::size_t>> free;
    std::size_t bytes = 0;
};
BlockCache& cache() {
    static BlockCache* c = new BlockCache;  // never destroyed: blocks may be freed during static destruction
    return *c;
}
}  // namespace

void* block_alloc(std::size_t bytes) {
    if (bytes >= kRecycleMin) {
        BlockCache& c = cache();
        std::lock_guard<std::mutex> l(c.mu);
        for (auto it = c.free.begin(); it != c.free.end(); ++it) {
            if (it->second == bytes) {
                void* p = it->first;
                c.bytes -= bytes;
                c.free.erase(it);
                return p;
            }
        }
    }
    return ::operator new(bytes, std::align_val_t(64));
}

void block_free(void* p, std::size_t bytes) {
    if (bytes >= kRecycleMin) {
        BlockCache& c = cache();
        std::lock_guard<std::mutex> l(c.mu);
        if (c.free.size() < kRecycleMaxBlocks && c.bytes + bytes <= kRecycleMaxBytes) {
            c.free.emplace_back(p, bytes);
            c.bytes += bytes;
            return;
        }
    }
    ::operator delete(p, std::align_val_t(64));
}

}  // namespace detail

namespace {

/// fn(begin, end) over coefficient ranges, on the pool when there is one.
template <class F>
void for_ranges(std::size_t n, ThreadPool* pool, F&& fn) {
    if (pool && pool->size() > 1 && n >= 1024) pool->parallel_range(n, 64, fn);
    else fn(0, n);
}

}  // namespace

void check_same(const char* op, const BigPoly& a, const BigPoly& b) {
    if (a.n != b.n || a.bits != b.bits)
        throw std::invalid_argument(std::string("cannot ") + op + ": operands differ (N = " + std::to_string(a.n) + " vs " +
                                    std::to_string(b.n) + ", log q = " + std::to_string(a.bits) + " vs " + std::to_string(b.bits) + ")");
}

namespace {

// out = a + b (kSub false) or a - b (kSub true), coefficient-wise mod 2^bits.
template <bool kSub>
void add_or_sub(const char* op, BigPoly& out, const BigPoly& a, const BigPoly& b, ThreadPool* pool) {
    check_same(op, a, b);
    if (out.n != a.n || out.bits != a.bits) out = BigPoly::uninit(a.n, a.bits);
    const std::size_t w = a.words;
    for_ranges(a.n, pool, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t i = b0; i < b1; ++i) {
            bigint::add_or_sub<kSub>(out.coeff(i), a.coeff(i), b.coeff(i), w);
            bigint::mask_bits(out.coeff(i), w, a.bits);
        }
    });
}

}  // namespace

void add(BigPoly& out, const BigPoly& a, const BigPoly& b, ThreadPool* pool) { add_or_sub<false>("add", out, a, b, pool); }

void sub(BigPoly& out, const BigPoly& a, const BigPoly& b, ThreadPool* pool) { add_or_sub<true>("sub", out, a, b, pool); }

void negate(BigPoly& out, const BigPoly& a, ThreadPool* pool) {
    if (out.n != a.n || out.bits != a.bits) out = BigPoly::uninit(a.n, a.bits);
    const std::size_t w = a.words;
    for_ranges(a.n, pool, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t i = b0; i < b1; ++i) {
            bigint::neg(out.coeff(i), a.coeff(i), w);
            bigint::mask_bits(out.coeff(i), w, a.bits);
        }
    });
}

BigPoly mod_down(const BigPoly& a, int bits) {
    if (bits > a.bits || bits < 1)
        throw std::invalid_argument("cannot reduce the modulus: log q = " + std::to_string(bits) + " must be in [1, " + std::to_string(a.bits) + "]");
    BigPoly out = BigPoly::uninit(a.n, bits);
    for (std::size_t i = 0; i < a.n; ++i) {
        for (std::size_t k = 0; k < out.words; ++k) out.coeff(i)[k] = a.coeff(i)[k];
        bigint::mask_bits(out.coeff(i), out.words, bits);
    }
    return out;
}

BigPoly rescale(const BigPoly& a, int s, ThreadPool* pool) {
    if (s < 0 || s >= a.bits)
        throw std::invalid_argument("cannot rescale by 2^" + std::to_string(s) + ": the modulus has " + std::to_string(a.bits) + " bits");
    BigPoly out = BigPoly::uninit(a.n, a.bits - s);
    for_ranges(a.n, pool, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t i = b0; i < b1; ++i) bigint::shift_right_round(out.coeff(i), out.bits, a.coeff(i), a.words, s);
    });
    return out;
}

BigPoly automorphism(const BigPoly& a, std::size_t g, ThreadPool* pool) {
    const std::size_t n = a.n, two_n = 2 * n, w = a.words;
    if (g % 2 == 0) throw std::invalid_argument("automorphism: the Galois element must be odd, got " + std::to_string(g));
    BigPoly out = BigPoly::uninit(n, a.bits);
    g %= two_n;
    for_ranges(n, pool, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t i = b0; i < b1; ++i) {
            const std::size_t j = (i * g) % two_n;  // i g < 2^34: no overflow
            if (j < n) {
                for (std::size_t k = 0; k < w; ++k) out.coeff(j)[k] = a.coeff(i)[k];
            } else {
                bigint::neg(out.coeff(j - n), a.coeff(i), w);
                bigint::mask_bits(out.coeff(j - n), w, a.bits);
            }
        }
    });
    return out;
}

void mul_sparse_add(BigPoly& acc, const BigPoly& a, const SparseTernary& s, int sign, ThreadPool* pool) {
    check_same("multiply by the secret", acc, a);
    const std::size_t n = a.n, w = a.words;
    // parallel over output coefficients: each thread owns a range of acc
    for_ranges(n, pool, [&](std::size_t o0, std::size_t o1) {
        for (const auto& [pos, sv] : s.terms) {
            const std::size_t k = pos;
            const int sg = sv * sign;
            for (std::size_t o = o0; o < o1; ++o) {
                // coefficient o of a * X^k: a[o - k] for o >= k, -a[o - k + N] otherwise
                const bool wrap = o < k;
                const u64* src = a.coeff(wrap ? o + n - k : o - k);
                u64* dst = acc.coeff(o);
                if ((sg > 0) != wrap) bigint::add(dst, dst, src, w);
                else bigint::sub(dst, dst, src, w);
            }
        }
        for (std::size_t o = o0; o < o1; ++o) bigint::mask_bits(acc.coeff(o), w, acc.bits);
    });
}

}  // namespace ember::heaan
