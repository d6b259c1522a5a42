// The kernel interface every backend implements (cpu/ now, cuda/ later). Scheme code (ring/, ckks/)
// calls only these operations; it never includes a backend's own headers.
//
// A kernel works on a batch of limbs. Each limb is a pointer to N words and the NTT tables (hence the
// modulus) of its prime. Every kernel reports to the trace layer what it did (see trace/trace.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "math/modarith.hpp"
#include "math/ntt.hpp"
#include "math/rns.hpp"

namespace ember {

struct LimbRef {
    u64* data;
    const NttTables* table;
    const Modulus& mod() const { return table->mod; }
};

using ConstLimbs = std::span<const u64* const>;
using Limbs = std::span<const LimbRef>;

class Backend {
public:
    virtual ~Backend() = default;
    virtual const char* name() const = 0;
    virtual int threads() const = 0;
    /// False for the symbolic backend (null/), whose polynomials hold no data: Poly then skips zeroing and copying.
    virtual bool holds_data() const { return true; }

    // Memory for polynomials (64-byte aligned; zeroed when asked). Freed blocks may be cached for reuse.
    virtual u64* allocate(std::size_t words, bool zero) = 0;
    virtual void release(u64* p, std::size_t words, bool wipe) = 0;

    virtual void ntt_forward(Limbs x) = 0;
    virtual void ntt_inverse(Limbs x) = 0;
    /// out = iNTT(in), limb by limb: a backend may fuse the copy into the transform so that each limb is
    /// read once and written once (MAD's per-limb caching; Decomp + iNTT of ModUp). Traced as ntt_inverse.
    virtual void ntt_inverse_from(Limbs out, ConstLimbs in) {
        copy(out, in);
        ntt_inverse(out);
    }

    virtual void copy(Limbs out, ConstLimbs a) = 0;
    virtual void add(Limbs out, ConstLimbs a, ConstLimbs b) = 0;
    virtual void sub(Limbs out, ConstLimbs a, ConstLimbs b) = 0;
    virtual void neg(Limbs out, ConstLimbs a) = 0;
    /// out = a * b (element-wise, evaluation form)
    virtual void mul(Limbs out, ConstLimbs a, ConstLimbs b) = 0;
    /// out += a * b
    virtual void mul_add(Limbs out, ConstLimbs a, ConstLimbs b) = 0;
    /// out[limb] = sum_t a[t][limb] * b[t][limb], reduced once (KSKInnerProd).
    virtual void dot(Limbs out, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b) = 0;
    /// out = a * c[limb]  (accumulate: out += a * c[limb])
    virtual void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool accumulate) = 0;
    /// out = a + c[limb] on every coefficient
    virtual void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) = 0;
    /// out = (a - b) * c[limb]
    virtual void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) = 0;
    /// out[limb][i] = a[limb][perm[i]]  (automorphism in evaluation form)
    virtual void permute(Limbs out, ConstLimbs a, const std::uint32_t* perm) = 0;
    /// Fast base conversion (NewLimb, MAD Eq. 1) of N coefficients: in has conv.from().size() limbs,
    /// out conv.to().size() limbs; coefficient form in and out. centered: exact centered conversion
    /// (ModDown, Rescale), else the plain one with a multiple of the source modulus (ModUp).
    virtual void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) = 0;
};

/// The CPU backend with `threads` threads (AVX-512 / IFMA picked at run time).
std::shared_ptr<Backend> make_cpu_backend(int threads);
/// The symbolic backend: kernels that do nothing and no memory per polynomial (graph capture of programs
/// without keys or arithmetic; backend/null/).
std::shared_ptr<Backend> make_null_backend();

}  // namespace ember
