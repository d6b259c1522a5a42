// The element-wise kernels of ember_cuda (Backend::add ... sub_mul_const), the key-switch inner product (dot) and
// the automorphisms (permute): one thread per word, a grid-stride loop over the n words of a limb, blockIdx.y the
// limb. The per-word arithmetic is backend/cuda/arith.hpp's (ew_apply, dot_coeff, automorphism_index), tested on the
// host against the CPU backend.
//
// These kernels are memory-bound (one or two modular products per 16-24 bytes moved); the grid-stride loop with
// 64-bit loads is the plain form, left for measurement (wider loads and fusing operations are what would help).
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kEwBatch = 32;  // limbs per launch (descriptors in the parameter space: 32 x 64 bytes)

struct EwLimb {
    u64* out;
    const u64* a;
    const u64* b;
    EwConsts c;
};
struct EwBatch {
    EwLimb limb[kEwBatch];
};

template <EwOp kOp>
__global__ void __launch_bounds__(kThreads) ew_kernel(const __grid_constant__ EwBatch batch, std::size_t n) {
    const EwLimb& l = batch.limb[blockIdx.y];
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const u64 a = l.a[i];
        const u64 b = ew_reads_b(kOp) ? l.b[i] : 0;
        const u64 o = ew_reads_out(kOp) ? l.out[i] : 0;
        l.out[i] = ew_apply<kOp>(a, b, o, l.c);
    }
}

void check_count(std::size_t want, std::size_t got, const char* op, const char* what) {
    if (want != got)
        throw std::invalid_argument(std::string("cuda::") + op + ": " + std::to_string(got) + " " + what + " for " +
                                    std::to_string(want) + " output limbs");
}

/// Launches ew_kernel<kOp> over the limbs; `consts(l)` gives limb l's EwConsts.
template <EwOp kOp, class Consts>
void elementwise(const char* op, std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
                 std::span<const Modulus> mod, std::size_t n, Consts consts) {
    check_count(out.size(), a.size(), op, "operands a");
    if (ew_reads_b(kOp)) check_count(out.size(), b.size(), op, "operands b");
    check_count(out.size(), mod.size(), op, "moduli");
    for (std::size_t l0 = 0; l0 < out.size(); l0 += kEwBatch) {
        const std::size_t count = std::min(kEwBatch, out.size() - l0);
        EwBatch batch{};
        for (std::size_t l = 0; l < count; ++l)
            batch.limb[l] = EwLimb{out[l0 + l], a[l0 + l], ew_reads_b(kOp) ? b[l0 + l] : nullptr, consts(l0 + l)};
        const dim3 grid(detail::grid_for(n, kThreads), static_cast<unsigned>(count));
        ew_kernel<kOp><<<grid, kThreads>>>(batch, n);
        EMBER_CUDA_CHECK_LAUNCH();
    }
}

// ---- balanced digits (BV key switching) --------------------------------------------------------------------------

struct DigitOuts {
    u64* out[kMaxSignedDigits];
};

__global__ void __launch_bounds__(kThreads) signed_digits_kernel(const __grid_constant__ DigitOuts d, unsigned count,
                                                                 const u64* in, u64 q, std::size_t n, int digit_bits) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        long long rest = centered_of(in[i], q);
        for (unsigned k = 0; k < count; ++k) d.out[k][i] = signed_digit_step(rest, digit_bits, q);
    }
}

// ---- dot ---------------------------------------------------------------------------------------------------------

/// A launch of dot_kernel<K> (K = 1: Backend::dot, K = 2: dot2): up to kLimbs output limbs (K outputs each) with
/// their moduli, and for output limb b its `terms` operand pointers of a at ptr[(K + 1) b terms ...], then those of
/// b (dot2: b0, then b1). accumulate: a later chunk of the terms, added mod q to the sums the outputs hold.
template <int K>
struct DotLaunch {
    static constexpr std::size_t kLimbs = K == 1 ? 32 : 16;  // output limbs per launch
    static constexpr std::size_t kPtrs = K == 1 ? 352 : 336;  // operand pointers per launch ((K + 1) x terms x limbs)
    u64* out[K][kLimbs];
    WideBarrett wb[kLimbs];
    const u64* ptr[kPtrs];
    u32 terms;
    u32 accumulate;
};
static_assert(sizeof(DotLaunch<1>) + sizeof(std::size_t) <= 4096, "dot's parameters must fit the classic 4 KiB");
static_assert(sizeof(DotLaunch<2>) + sizeof(std::size_t) <= 4096, "dot2's parameters must fit the classic 4 KiB");

template <int K>
__global__ void __launch_bounds__(kThreads) dot_kernel(const __grid_constant__ DotLaunch<K> l, std::size_t n) {
    const u32 b = blockIdx.y;
    const WideBarrett& wb = l.wb[b];
    const u64* const* pa = l.ptr + (K + 1) * static_cast<std::size_t>(b) * l.terms;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        u64 r[K];
        if constexpr (K == 1) r[0] = dot_coeff(pa, pa + l.terms, l.terms, i, wb);
        else dot2_coeff(pa, pa + l.terms, pa + 2 * l.terms, l.terms, i, wb, r[0], r[1]);
        for (int k = 0; k < K; ++k) {
            u64* const out = l.out[k][b];
            out[i] = l.accumulate ? add_mod(out[i], r[k], wb.q) : r[k];
        }
    }
}

// ---- permutations ------------------------------------------------------------------------------------------------

struct PermLimb {
    u64* out;
    const u64* a;
};
struct PermBatch {
    PermLimb limb[kEwBatch];
};

/// out[i] = a[perm[i]] (perm in device memory), or a[automorphism_index(i, k, log_n)] when perm is null.
__global__ void __launch_bounds__(kThreads) permute_kernel(const __grid_constant__ PermBatch batch, const u32* perm, u64 k,
                                                           int log_n, std::size_t n) {
    const PermLimb& l = batch.limb[blockIdx.y];
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const u32 src = perm ? perm[i] : automorphism_index(static_cast<u32>(i), k, log_n);
        l.out[i] = l.a[src];
    }
}

void permute_any(std::span<u64* const> out, std::span<const u64* const> a, const u32* perm, u64 k, int log_n,
                 std::size_t n) {
    check_count(out.size(), a.size(), "permute", "operands");
    for (std::size_t l = 0; l < out.size(); ++l)
        if (out[l] == a[l]) throw std::invalid_argument("cuda::permute: output must not alias input");
    for (std::size_t l0 = 0; l0 < out.size(); l0 += kEwBatch) {
        const std::size_t count = std::min(kEwBatch, out.size() - l0);
        PermBatch batch{};
        for (std::size_t l = 0; l < count; ++l) batch.limb[l] = PermLimb{out[l0 + l], a[l0 + l]};
        const dim3 grid(detail::grid_for(n, kThreads), static_cast<unsigned>(count));
        permute_kernel<<<grid, kThreads>>>(batch, perm, k, log_n, n);
        EMBER_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace

// ---- element-wise entry points ---------------------------------------------------------------------------------

void add(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n) {
    elementwise<EwOp::kAdd>("add", out, a, b, mod, n, [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), 0, 0}; });
}
void sub(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n) {
    elementwise<EwOp::kSub>("sub", out, a, b, mod, n, [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), 0, 0}; });
}
void neg(std::span<u64* const> out, std::span<const u64* const> a, std::span<const Modulus> mod, std::size_t n) {
    elementwise<EwOp::kNeg>("neg", out, a, {}, mod, n, [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), 0, 0}; });
}
void mul(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n) {
    elementwise<EwOp::kMul>("mul", out, a, b, mod, n, [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), 0, 0}; });
}
void mul_add(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
             std::span<const Modulus> mod, std::size_t n) {
    elementwise<EwOp::kMulAdd>("mul_add", out, a, b, mod, n,
                               [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), 0, 0}; });
}
void mul_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const MulConst> c,
               std::span<const Modulus> mod, std::size_t n, bool accumulate) {
    check_count(out.size(), c.size(), "mul_const", "constants");
    auto consts = [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), c[l].w, c[l].wp}; };
    if (accumulate) elementwise<EwOp::kMulConstAdd>("mul_const", out, a, {}, mod, n, consts);
    else elementwise<EwOp::kMulConst>("mul_const", out, a, {}, mod, n, consts);
}
void add_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64> c,
               std::span<const Modulus> mod, std::size_t n) {
    check_count(out.size(), c.size(), "add_const", "constants");
    elementwise<EwOp::kAddConst>("add_const", out, a, {}, mod, n,
                                 [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), c[l], 0}; });
}
void sub_mul_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
                   std::span<const MulConst> c, std::span<const Modulus> mod, std::size_t n) {
    check_count(out.size(), c.size(), "sub_mul_const", "constants");
    elementwise<EwOp::kSubMulConst>("sub_mul_const", out, a, b, mod, n,
                                    [&](std::size_t l) { return EwConsts{make_barrett(mod[l]), c[l].w, c[l].wp}; });
}

// ---- dot ---------------------------------------------------------------------------------------------------------

namespace {

using Terms = std::vector<std::vector<const u64*>>;

/// dot (K = 1) and dot2 (K = 2) after their argument checks: outs[k][l] = sum_t ops[0][t][l] * ops[k + 1][t][l].
/// The pointers travel in the launches' parameters (nothing staged, nothing waited for): as many limbs per launch as
/// DotLaunch<K>::kPtrs allows with all their terms, or, past kPtrs / (K + 1) terms (beyond any dnum Ember allows), one
/// limb per launch and the terms in chunks, each launch adding its sums to the outputs' (exact: the same bits). An
/// output that is also one of its limb's operands then accumulates in scratch memory, copied to it after the last
/// chunk (Backend::dot allows the aliasing; dot2 does not).
template <int K>
void dot_launches(const std::span<u64* const> (&outs)[K], const Terms* const (&ops)[K + 1], std::span<const Modulus> mod,
                  std::size_t n) {
    using Launch = DotLaunch<K>;
    const std::size_t terms = ops[0]->size(), limbs = outs[0].size();
    if (limbs == 0 || n == 0) return;
    const std::size_t chunk = std::min(terms, Launch::kPtrs / (K + 1));
    const std::size_t per_launch = std::min(Launch::kLimbs, Launch::kPtrs / ((K + 1) * chunk));
    const bool chunked = chunk < terms;
    for (std::size_t l0 = 0; l0 < limbs; l0 += per_launch) {
        const std::size_t count = std::min(per_launch, limbs - l0);
        Launch l{};
        u64* scratch[K] = {};  // chunked only (count == 1)
        for (std::size_t k = 0; k < count; ++k) {
            for (int o = 0; o < K; ++o) l.out[o][k] = outs[o][l0 + k];
            l.wb[k] = make_wide_barrett(mod[l0 + k]);
        }
        auto release = [&] {
            for (u64* p : scratch) pool_free(p);  // stream order: after the copies
        };
        try {
            if (chunked)
                for (int o = 0; o < K; ++o) {
                    bool alias = false;
                    for (int v = 0; v <= K && !alias; ++v)
                        for (std::size_t t = 0; t < terms && !alias; ++t) alias = (*ops[v])[t][l0] == outs[o][l0];
                    if (alias) l.out[o][0] = scratch[o] = pool_allocate(n);
                }
            for (std::size_t t0 = 0; t0 < terms; t0 += chunk) {
                const std::size_t tc = std::min(chunk, terms - t0);
                l.terms = static_cast<u32>(tc);
                l.accumulate = t0 > 0;
                for (std::size_t k = 0; k < count; ++k)
                    for (int v = 0; v <= K; ++v)
                        for (std::size_t t = 0; t < tc; ++t) l.ptr[(K + 1) * k * tc + v * tc + t] = (*ops[v])[t0 + t][l0 + k];
                const dim3 grid(detail::grid_for(n, kThreads), static_cast<unsigned>(count));
                dot_kernel<K><<<grid, kThreads>>>(l, n);
                EMBER_CUDA_CHECK_LAUNCH();
            }
            for (int o = 0; o < K; ++o)
                if (scratch[o]) copy_on_device(outs[o][l0], scratch[o], n * sizeof(u64));
        } catch (...) {
            release();
            throw;
        }
        release();
    }
}

/// Every term of every operand list has `limbs` limbs (op: the operation's name in the message).
void check_term_limbs(const char* op, std::size_t limbs, std::initializer_list<std::pair<const Terms*, const char*>> lists) {
    for (const auto& [terms, name] : lists)
        for (const auto& t : *terms) check_count(limbs, t.size(), op, name);
}

}  // namespace

void dot(std::span<u64* const> out, const Terms& a, const Terms& b, std::span<const Modulus> mod, std::size_t n) {
    if (a.empty() || b.size() != a.size()) throw std::invalid_argument("cuda::dot: need the same positive number of terms on both sides");
    check_count(out.size(), mod.size(), "dot", "moduli");
    check_term_limbs("dot", out.size(), {{&a, "limbs of a term of a"}, {&b, "limbs of a term of b"}});
    dot_launches<1>({out}, {&a, &b}, mod, n);
}

void dot2(std::span<u64* const> out0, std::span<u64* const> out1, const Terms& a, const Terms& b0, const Terms& b1,
          std::span<const Modulus> mod, std::size_t n) {
    if (a.empty() || b0.size() != a.size() || b1.size() != a.size())
        throw std::invalid_argument("cuda::dot2: need the same positive number of terms in a, b0 and b1");
    check_count(out0.size(), out1.size(), "dot2", "limbs of the second output");
    check_count(out0.size(), mod.size(), "dot2", "moduli");
    check_term_limbs("dot2", out0.size(),
                     {{&a, "limbs of a term of a"}, {&b0, "limbs of a term of b0"}, {&b1, "limbs of a term of b1"}});
    dot_launches<2>({out0, out1}, {&a, &b0, &b1}, mod, n);
}

// ---- permutations ------------------------------------------------------------------------------------------------

void permute(std::span<u64* const> out, std::span<const u64* const> a, const std::uint32_t* perm, std::size_t n) {
    if (!perm) throw std::invalid_argument("cuda::permute: no permutation");
    permute_any(out, a, perm, 0, 0, n);
}

void signed_digits(std::span<u64* const> out, const u64* in, u64 q, std::size_t n, int digit_bits) {
    if (out.size() > kMaxSignedDigits)
        throw std::invalid_argument("cuda::signed_digits: " + std::to_string(out.size()) + " digits, at most " + std::to_string(kMaxSignedDigits));
    if (digit_bits < 2 || digit_bits > 30) throw std::invalid_argument("cuda::signed_digits: digit_bits must be in [2, 30]");
    if (out.empty() || n == 0) return;
    DigitOuts d{};
    for (std::size_t k = 0; k < out.size(); ++k) d.out[k] = out[k];
    signed_digits_kernel<<<detail::grid_for(n, kThreads), kThreads>>>(d, static_cast<unsigned>(out.size()), in, q, n, digit_bits);
    EMBER_CUDA_CHECK_LAUNCH();
}

void automorph(std::span<u64* const> out, std::span<const u64* const> a, std::uint64_t k, int log_n) {
    if (log_n < 1 || log_n > 17 || (k & 1) == 0 || k >= (u64(2) << log_n))
        throw std::invalid_argument("cuda::automorph: k must be odd and below 2N, log_n in [1, 17]");
    permute_any(out, a, nullptr, k, log_n, std::size_t(1) << log_n);
}

}  // namespace ember::cuda
