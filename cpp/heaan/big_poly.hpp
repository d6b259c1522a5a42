// Polynomials of Z_{2^bits}[X]/(X^N + 1) with big-integer coefficients: N x words 64-bit words,
// coefficient-major (IN_CRT(N, qLimbs) of paper 000, Fig. 1). Coefficients are kept in [0, 2^bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "heaan/bigint.hpp"

namespace ember {
class ThreadPool;
}

namespace ember::heaan {

namespace detail {
/// 64-byte aligned blocks; blocks of 1 MiB and more are recycled through a small process-wide cache (at most
/// 16 blocks, 512 MiB), so that the ciphertexts of repeated operations reuse memory instead of faulting in
/// (and zeroing) fresh pages every time.
void* block_alloc(std::size_t bytes);
void block_free(void* p, std::size_t bytes);
}  // namespace detail

/// 64-byte aligned storage whose elements are default-initialized (left as they are) on resize: kernels that
/// overwrite every word (iCRT) skip a pass over memory, and streaming stores need the alignment.
template <class T>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U>&) {}
    T* allocate(std::size_t n) { return static_cast<T*>(detail::block_alloc(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) { detail::block_free(p, n * sizeof(T)); }
    template <class U>
    void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
    template <class U, class... A>
    void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
    template <class U>
    bool operator==(const AlignedAllocator<U>&) const { return true; }
};

using WordVec = std::vector<u64, AlignedAllocator<u64>>;

struct BigPoly {
    std::size_t n = 0;
    int bits = 0;           // coefficients modulo 2^bits
    std::size_t words = 0;  // ceil(bits / 64)
    WordVec data;           // n * words

    BigPoly() = default;
    /// Zero polynomial.
    BigPoly(std::size_t n_, int bits_) : n(n_), bits(bits_), words(bigint::words_for_bits(bits_)), data(n_ * words, 0) {}
    /// Storage only (every coefficient must be written before it is read).
    static BigPoly uninit(std::size_t n_, int bits_) {
        BigPoly p;
        p.n = n_;
        p.bits = bits_;
        p.words = bigint::words_for_bits(bits_);
        p.data.resize(n_ * p.words);
        return p;
    }
    u64* coeff(std::size_t i) { return data.data() + i * words; }
    const u64* coeff(std::size_t i) const { return data.data() + i * words; }
};

/// A ternary polynomial given by its nonzero coefficients (the Hamming-weight secret).
struct SparseTernary {
    std::vector<std::pair<std::uint32_t, int>> terms;  // (position, +1 or -1)
};

/// out = a + b, a - b, -a modulo 2^bits (all of one n and one bits; out may alias an input).
void add(BigPoly& out, const BigPoly& a, const BigPoly& b, ThreadPool* pool = nullptr);
void sub(BigPoly& out, const BigPoly& a, const BigPoly& b, ThreadPool* pool = nullptr);
void negate(BigPoly& out, const BigPoly& a, ThreadPool* pool = nullptr);
/// a mod 2^bits for bits <= a.bits.
BigPoly mod_down(const BigPoly& a, int bits);
/// round(a / 2^s) mod 2^(a.bits - s): HEAAN's rescale by p = 2^s (a right shift with rounding).
BigPoly rescale(const BigPoly& a, int s, ThreadPool* pool = nullptr);
/// a(X^g) for odd g (X^N = -1 folds with a sign).
BigPoly automorphism(const BigPoly& a, std::size_t g, ThreadPool* pool = nullptr);
/// acc += sign * a * s in Z_{2^bits}[X]/(X^N + 1), sign in {-1, 1}: one shifted add per nonzero of s.
void mul_sparse_add(BigPoly& acc, const BigPoly& a, const SparseTernary& s, int sign, ThreadPool* pool = nullptr);

/// Throws std::invalid_argument("cannot <op>: ...") unless a and b have one N and one modulus.
void check_same(const char* op, const BigPoly& a, const BigPoly& b);

}  // namespace ember::heaan
