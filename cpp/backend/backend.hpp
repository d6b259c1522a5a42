// The kernel interface every backend implements (cpu/, null/, guarded/, cuda/). Scheme code (ring/, ckks/,
// circuits/, io/) calls only these operations; it never includes a backend's own headers.
//
// Polynomial memory belongs to the backend. On the CPU backend it is ordinary host memory; on the CUDA backend it
// is device memory, and in the guarded CPU mode (guarded/) it is an address range that faults when the host touches
// it. Code outside the kernels therefore never dereferences a limb pointer: it moves words with upload / download
// (ring/poly.hpp's HostLimbs does that for it) and otherwise only passes the pointers to kernels.
//
// A kernel works on a batch of limbs. Each limb is a pointer to N words and the NTT tables (hence the
// modulus) of its prime. Every kernel reports to the trace layer what it did (see trace/trace.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
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

    /// True when code outside the kernels may read and write polynomial memory through its pointers (the CPU and
    /// symbolic backends); false for device memory and the guarded mode, reached only through upload / download.
    virtual bool host_addressable() const { return true; }

    // Memory for polynomials (64-byte aligned; zeroed when asked). Freed blocks may be cached for reuse; `wipe`
    // overwrites a block before it is released (secret keys). Running out of memory throws std::bad_alloc (the
    // CPU) or std::runtime_error naming the request (device memory).
    virtual u64* allocate(std::size_t words, bool zero) = 0;
    virtual void release(u64* p, std::size_t words, bool wipe) = 0;

    // Moving words between host memory and backend memory (`dst` / `src` anywhere inside an allocated block):
    // upload host -> backend, download backend -> host, copy_words backend -> backend. Each returns when the
    // words have arrived (a download's host buffer may be read at once).
    virtual void upload(u64* dst, const u64* src, std::size_t words) = 0;
    virtual void download(u64* dst, const u64* src, std::size_t words) = 0;
    virtual void copy_words(u64* dst, const u64* src, std::size_t words) = 0;
    /// Waits for all queued work (a device backend queues kernels; the CPU backend's kernels are synchronous).
    virtual void synchronize() {}

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
    /// out0 = dot(a, b0) and out1 = dot(a, b1): two inner products over the same terms a (KSKInnerProd's two
    /// halves; a plaintext sum's two ciphertext parts), so that a backend can read a once. out0 and out1 have
    /// the same limbs (moduli); neither may alias an operand. The CPU and CUDA backends run it as one pass and trace
    /// it as one "dot" (counts::dot); this default runs two dots.
    virtual void dot2(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
                      const std::vector<std::vector<const u64*>>& b1) {
        dot(out0, a, b0);
        dot(out1, a, b1);
    }
    /// out = a * c[limb]  (accumulate: out += a * c[limb])
    virtual void mul_const(Limbs out, ConstLimbs a, std::span<const MulConst> c, bool accumulate) = 0;
    /// out = a + c[limb] on every coefficient
    virtual void add_const(Limbs out, ConstLimbs a, std::span<const u64> c) = 0;
    /// out = (a - b) * c[limb]
    virtual void sub_mul_const(Limbs out, ConstLimbs a, ConstLimbs b, std::span<const MulConst> c) = 0;
    /// out[limb][i] = a[limb][perm[i]]: the automorphism X -> X^galois in evaluation form. perm is the ring's
    /// host table of that automorphism (RingContext::automorphism_perm(galois)); a device backend may compute the
    /// same indices from `galois` instead. out must not alias a.
    virtual void permute(Limbs out, ConstLimbs a, std::uint64_t galois, const std::uint32_t* perm) = 0;
    /// Fast base conversion (NewLimb, MAD Eq. 1) of N coefficients: in has conv.from().size() limbs,
    /// out conv.to().size() limbs; coefficient form in and out. centered: exact centered conversion
    /// (ModDown, Rescale), else the plain one with a multiple of the source modulus (ModUp).
    virtual void base_convert(const BaseConverter& conv, ConstLimbs in, std::span<u64* const> out, std::size_t n, bool centered) = 0;
    /// Balanced digits in base B = 2^digit_bits (2 <= digit_bits <= 30) of the centered coefficients v in (-q/2, q/2]
    /// of the one limb `in` (n words modulo mod, coefficient form): out[d][i] = r_d mod q, with r_d in [-B/2, B/2)
    /// and v = sum_d r_d B^d over d < out.size() (the gadget decomposition of BV key switching). The caller gives
    /// enough digits to reach every v: ceil((bit_width(q) - 1) / digit_bits) + 1 do. The default moves the limb to
    /// the host and the digits back (signed_digits_host); the CPU and CUDA backends compute them in place.
    virtual void signed_digits(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t n, int digit_bits);
};

/// signed_digits on host memory, for coefficients [begin, end) (the reference the backends' kernels match).
void signed_digits_host(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t begin, std::size_t end, int digit_bits);
/// Backend::dot2's argument checks, for the backends that implement it: the same positive number of terms in a, b0
/// and b1, every term with out0's limb count, out1 with out0's limbs (sizes and moduli), no output aliasing an operand.
/// Throws std::invalid_argument.
void check_dot2_args(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
                     const std::vector<std::vector<const u64*>>& b1);

/// The CPU backend with `threads` threads (AVX-512 / IFMA picked at run time).
std::shared_ptr<Backend> make_cpu_backend(int threads);
/// The guarded CPU mode (backend/guarded/): `inner`'s kernels, on memory that the host cannot address. allocate
/// hands out addresses in a reserved range with no access rights, and every kernel and transfer translates them to
/// `inner`'s memory; a read or write by code outside the kernels faults at once, and the fault handler names the
/// guarded block. A pointer given to a kernel that is not backend memory throws std::logic_error. Results are
/// bit-identical to `inner`'s. For tests: it is what the CUDA backend asks of the scheme code, checked on a CPU.
std::shared_ptr<Backend> make_guarded_backend(std::shared_ptr<Backend> inner);

/// The devices a Context can run on: "cpu", "cpu-guarded" (the guarded mode over the CPU backend) and "cuda".
/// A device that this build or this machine lacks throws std::runtime_error saying why; an unknown name throws
/// std::invalid_argument naming the choices. "" means default_device().
std::shared_ptr<Backend> make_backend(const std::string& device, int threads);
/// EMBER_DEVICE from the environment when set (one of the names above), else "cpu".
std::string default_device();
/// Called by a backend library (ember_cuda's register_cuda_backend) to provide a device to make_backend.
using BackendFactory = std::shared_ptr<Backend> (*)(int threads);
void register_backend_factory(const std::string& device, BackendFactory make);
/// The symbolic backend: kernels that do nothing and no memory per polynomial (graph capture of programs
/// without keys or arithmetic; backend/null/).
std::shared_ptr<Backend> make_null_backend();

}  // namespace ember
