// Host interface of the CUDA kernels (library ember_cuda, built when CMake's EMBER_CUDA is on): device memory, the
// per-prime tables on the device, and one launcher per operation of the backend interface (backend/backend.hpp),
// each over a batch of limbs whose words are in device memory.
//
// Plain C++ (no CUDA header): a test or a backend includes it with the ordinary compiler and links ember_cuda.
// The Backend built on these launchers is backend_impl.cuh's CudaBackend, made available to make_backend("cuda") by
// register_cuda_backend() (backend/cuda/register.hpp); ember_cuda is not linked into ember_core nor the wheel (the
// Python extension links it when CMake's EMBER_CUDA is on outside a wheel build). The launchers, the pool and the copies all queue on one stream, the legacy default stream
// (the "launch stream"), and return once the work is queued (except where noted); stream_synchronize() waits for it.
// Errors (a failed allocation, launch or copy) throw std::runtime_error naming the CUDA error.
//
// Every kernel gives the CPU backend's results bit for bit: the arithmetic is backend/cuda/arith.hpp's,
// ntt_rounds.hpp's and base_convert_phases.hpp's, which the host tests (tests/cpp/test_cuda_arith.cpp) compare with
// the CPU backend; tests/cuda compares the kernels themselves on a GPU. The HEAAN product's CRT and iCRT
// (heaan_phases.hpp) are compared with heaan::CrtBasis the same way (tests/cpp/test_cuda_heaan.cpp,
// tests/cuda/test_cuda_heaan.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/arith.hpp"
#include "backend/cuda/base_convert_phases.hpp"
#include "backend/cuda/heaan_phases.hpp"
#include "backend/cuda/ntt_rounds.hpp"
#include "math/modarith.hpp"
#include "math/ntt.hpp"
#include "math/rns.hpp"

namespace ember::cuda {

// ---- devices and memory ----------------------------------------------------------------------------------------

/// CUDA devices present; 0 when there is none, no driver, or the driver is too old for this build (never throws).
int device_count() noexcept;
/// Device 0: name, compute capability, SMs, memory (for logs).
std::string device_description();
/// Waits for all queued work of the device; throws on an error of an earlier launch.
void synchronize();

/// A block of device memory (cudaMalloc), freed by the destructor. Move-only.
class DeviceMemory {
public:
    DeviceMemory() = default;
    explicit DeviceMemory(std::size_t bytes);
    ~DeviceMemory();
    DeviceMemory(DeviceMemory&& o) noexcept;
    DeviceMemory& operator=(DeviceMemory&& o) noexcept;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;

    void* get() const { return p_; }
    std::size_t bytes() const { return bytes_; }
    /// Synchronous copies from / to host memory at a byte offset.
    void upload(const void* src, std::size_t bytes, std::size_t offset = 0);
    void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;

private:
    void* p_ = nullptr;
    std::size_t bytes_ = 0;
};

/// n values of T in device memory.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    explicit DeviceArray(std::size_t n) : mem_(n * sizeof(T)), n_(n) {}
    explicit DeviceArray(const std::vector<T>& v) : DeviceArray(v.size()) { upload(v); }
    T* data() const { return static_cast<T*>(mem_.get()); }
    std::size_t size() const { return n_; }
    void upload(const std::vector<T>& v) { mem_.upload(v.data(), v.size() * sizeof(T)); }
    std::vector<T> download() const {
        std::vector<T> v(n_);
        mem_.download(v.data(), n_ * sizeof(T));
        return v;
    }

private:
    DeviceMemory mem_;
    std::size_t n_ = 0;
};

// ---- the stream-ordered pool and copies -------------------------------------------------------------------------
// Memory for a backend's polynomials: cudaMallocAsync / cudaFreeAsync on the launch stream, from the device's
// default memory pool with its release threshold raised to "keep everything", so that a freed block stays with the
// pool and serves a later allocation without a call into the driver or a synchronisation of the device (a plain
// cudaFree waits for the whole device). Allocation, zeroing, freeing and the copies below are ordered with the
// kernels on that stream: a block may be used by work queued after its allocation and freed while work that uses it
// is still queued.

/// `words` 64-bit words from the pool (nullptr for 0; aligned as the pool aligns, 256 bytes in practice: the device
/// test checks Backend's 64). When the pool cannot grow, waits for the stream, trims the pool's unused reserve and
/// tries once more; then throws std::runtime_error "CUDA backend: out of device memory allocating N words (X MiB)
/// (pool: R MiB reserved, U MiB in use; device: F MiB free of T MiB): <CUDA error>".
u64* pool_allocate(std::size_t words);
/// Returns a block of pool_allocate to the pool once the work queued before this call is done (stream order).
/// nullptr: nothing. Never throws (a failure surfaces at the next checked call).
void pool_free(void* p) noexcept;
/// The pool's memory: reserved from the device, and handed out in live blocks.
struct PoolStats {
    std::size_t reserved_bytes = 0;
    std::size_t used_bytes = 0;
    std::size_t used_high_bytes = 0;  // the most in use at once since the process started or reset_pool_peak()
};
PoolStats pool_stats();
/// Starts a new peak: used_high_bytes becomes the bytes in use now.
void reset_pool_peak();
/// Queued: `bytes` bytes at p (device memory) set to `value`.
void memset_async(void* p, int value, std::size_t bytes);
/// host -> device: returns when `src` may be reused; work queued afterwards sees the words.
void copy_to_device(void* dst, const void* src, std::size_t bytes);
/// device -> host: waits for the work queued before it; returns when the words are in `dst`.
void copy_to_host(void* dst, const void* src, std::size_t bytes);
/// device -> device, queued.
void copy_on_device(void* dst, const void* src, std::size_t bytes);
/// Waits for the launch stream's queued work (not other streams'); throws on an error of an earlier launch.
void stream_synchronize();

/// A block of pool_allocate, returned to the pool by the destructor (pool_free: in stream order, so it may go while
/// queued work still reads it). Move-only. For device-side tables kept by a backend: unlike DeviceMemory
/// (cudaMalloc / cudaFree, which wait for the whole device), creating and freeing one does not stall the device.
class PoolBlock {
public:
    PoolBlock() = default;
    explicit PoolBlock(std::size_t words) : p_(pool_allocate(words)) {}
    ~PoolBlock() { pool_free(p_); }
    PoolBlock(PoolBlock&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    PoolBlock& operator=(PoolBlock&& o) noexcept {
        if (this != &o) {
            pool_free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    PoolBlock(const PoolBlock&) = delete;
    PoolBlock& operator=(const PoolBlock&) = delete;
    u64* get() const { return p_; }

private:
    u64* p_ = nullptr;
};

// ---- NTT -------------------------------------------------------------------------------------------------------

/// A prime's NTT tables on the device (psi_rev, ipsi_rev and their Shoup companions: 4N words, from the pool).
/// Built with one copy from host memory (which waits for the launch stream's queued work: a cache fill, not a
/// steady-state cost).
class DeviceNttTables {
public:
    explicit DeviceNttTables(const NttTables& t);
    /// The kernels' descriptor of the limb `data` (device memory, N words) for one direction.
    NttLimb limb(u64* data, bool inverse) const;
    u32 log_n() const { return log_n_; }

private:
    PoolBlock tw_;
    NttLimb fwd_, inv_;  // with data = nullptr
    u32 log_n_ = 0;
};

/// In-place forward / inverse negacyclic NTT of each limb (all of one size N = 2^log_n, 1 <= log_n <= 17) over the
/// prime of tables[l]: the column kernel and the row kernel of ntt_rounds.hpp, up to kNttBatch limbs per launch.
void ntt_forward(std::span<u64* const> limbs, std::span<const DeviceNttTables* const> tables);
void ntt_inverse(std::span<u64* const> limbs, std::span<const DeviceNttTables* const> tables);
/// limbs[l] = inverse NTT of src[l] (src[l] may be limbs[l]): the copy fused into the first kernel's load.
void ntt_inverse_from(std::span<u64* const> limbs, std::span<const u64* const> src, std::span<const DeviceNttTables* const> tables);
/// Limbs per launch (their descriptors travel as the kernel's parameter).
constexpr std::size_t kNttBatch = 32;

// ---- element-wise operations -----------------------------------------------------------------------------------
// out[l][i] = f(a[l][i], b[l][i], out[l][i]) over n words of each limb l, modulo mod[l] (the Backend operations of
// the same names). Operands unused by an operation may be empty spans. The output may alias an operand.

void add(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n);
void sub(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n);
void neg(std::span<u64* const> out, std::span<const u64* const> a, std::span<const Modulus> mod, std::size_t n);
void mul(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
         std::span<const Modulus> mod, std::size_t n);
/// out += a * b
void mul_add(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
             std::span<const Modulus> mod, std::size_t n);
/// out = a * c[l] (accumulate: out += a * c[l])
void mul_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const MulConst> c,
               std::span<const Modulus> mod, std::size_t n, bool accumulate);
/// out = a + c[l]
void add_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64> c,
               std::span<const Modulus> mod, std::size_t n);
/// out = (a - b) * c[l]
void sub_mul_const(std::span<u64* const> out, std::span<const u64* const> a, std::span<const u64* const> b,
                   std::span<const MulConst> c, std::span<const Modulus> mod, std::size_t n);

/// out[l] = sum_t a[t][l] * b[t][l] (Backend::dot; a[t][l], b[t][l] device pointers; any positive number of terms;
/// out[l] may be one of limb l's operands). Queued, like the element-wise launchers: the pointer tables travel in
/// the kernel parameters (several launches when they do not fit one), nothing is allocated or waited for (except
/// scratch from the pool in the one case spelled out in elementwise_impl.cuh, beyond any digit count Ember uses).
void dot(std::span<u64* const> out, const std::vector<std::vector<const u64*>>& a,
         const std::vector<std::vector<const u64*>>& b, std::span<const Modulus> mod, std::size_t n);
/// out0[l] = sum_t a[t][l] * b0[t][l] and out1[l] likewise with b1, each a[t][l] word read once (Backend::dot2; the
/// outputs alias no operand). Queued like dot, its pointer tables in the kernel parameters.
void dot2(std::span<u64* const> out0, std::span<u64* const> out1, const std::vector<std::vector<const u64*>>& a,
          const std::vector<std::vector<const u64*>>& b0, const std::vector<std::vector<const u64*>>& b1,
          std::span<const Modulus> mod, std::size_t n);

// ---- automorphisms ---------------------------------------------------------------------------------------------

/// out[l][i] = a[l][perm[i]] (Backend::permute; perm: n indices in device memory). out must not alias a.
void permute(std::span<u64* const> out, std::span<const u64* const> a, const std::uint32_t* perm, std::size_t n);
/// The same with the indices of X -> X^k computed in the kernel (arith.hpp's automorphism_index; no table).
void automorph(std::span<u64* const> out, std::span<const u64* const> a, std::uint64_t k, int log_n);

/// Backend::signed_digits: out[d][i] = digit d of the centered in[i] (arith.hpp's signed_digit_step), for up to
/// kMaxSignedDigits digits, n coefficients modulo q (device pointers).
void signed_digits(std::span<u64* const> out, const u64* in, u64 q, std::size_t n, int digit_bits);
constexpr std::size_t kMaxSignedDigits = 64;

// ---- base conversion -------------------------------------------------------------------------------------------

/// A BaseConverter's constants on the device (from the pool; any number of source and target primes). Built with one
/// copy from host memory, as DeviceNttTables.
class DeviceBaseConverter {
public:
    explicit DeviceBaseConverter(const BaseConverter& conv);
    const BaseConvTable& table() const { return table_; }

private:
    PoolBlock mem_;
    BaseConvTable table_;
};

/// Backend::base_convert of n coefficients: in has k limbs, out m limbs (device pointers, out not aliasing in).
/// Queued: the limb pointers travel in the kernel parameters, one launch per pass of base_convert_phases.hpp (one
/// unless k > kBcChunkSources or m > kBcOutBatch); the centered conversion of more than kBcChunkSources sources
/// takes n words of scratch from the pool, freed in stream order.
void base_convert(const DeviceBaseConverter& conv, std::span<const u64* const> in, std::span<u64* const> out,
                  std::size_t n, bool centered);

// ---- HEAAN (non-RNS) polynomial products (heaan_impl.cuh) ----------------------------------------------------
// Paper 000's product of big-integer polynomials (heaan/crt.hpp: CRT -> NTT per prime -> pointwise -> iNTT -> iCRT)
// on the device, bit for bit the CPU's (the arithmetic is heaan_phases.hpp's; the NTT and the products are the
// launchers above). Big-integer polynomials are BigPoly's layout in device memory (n x words_for_bits(bits) words,
// coefficient-major, values in [0, 2^bits)); residue rows are the CPU's RnsPolys layout (np rows of n words, row j at
// rows + j n). Queued like the other launchers.

/// A heaan::CrtBasis's tables on the device: the CRT constants and every prime's NTT tables (from the pool, built
/// with copies from host memory, as DeviceNttTables), and the iCRT constants of each np asked for (built on first
/// use, then kept). The basis must outlive this object.
class DeviceCrtBasis {
public:
    explicit DeviceCrtBasis(const heaan::CrtBasis& basis);
    const heaan::CrtBasis& basis() const { return *basis_; }
    std::size_t n() const { return basis_->n(); }
    const HeaanCrtTable& crt_table() const { return crt_; }
    /// The iCRT constants of the first np primes (thread-safe).
    const HeaanIcrtTable& icrt_table(std::size_t np) const;
    /// The NTT tables and the moduli of the first np primes.
    std::span<const DeviceNttTables* const> ntt_tables(std::size_t np) const;
    std::span<const Modulus> moduli(std::size_t np) const;

private:
    struct Icrt {
        PoolBlock mem;
        HeaanIcrtTable table;
    };
    void check_np(std::size_t np, const char* op) const;

    const heaan::CrtBasis* basis_;
    PoolBlock crt_mem_;
    HeaanCrtTable crt_;
    std::vector<std::unique_ptr<DeviceNttTables>> ntt_owned_;
    std::vector<const DeviceNttTables*> ntt_;
    std::vector<Modulus> mods_;
    mutable std::mutex mu_;
    mutable std::map<std::size_t, std::unique_ptr<Icrt>> icrt_;
};

/// CRT (Algo 1) of a polynomial of in_bits-bit coefficients (`words` words each) into np residue rows: the CPU's
/// CrtBasis::crt(in, words, in_bits, np, rows, 0, n, centered). One thread per residue. [heaan_crt]
void heaan_crt(const DeviceCrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* rows,
               bool centered);
/// iCRT (Algo 6) of np residue rows into out (n x words_for_bits(out_bits) words): round(c / 2^shift) mod
/// 2^out_bits, the CPU's CrtBasis::icrt (shift + out_bits <= log2 P). One thread per coefficient. [heaan_icrt]
void heaan_icrt(const DeviceCrtBasis& B, const u64* rows, std::size_t np, int shift, int out_bits, u64* out);
/// Forward / inverse NTT of the np rows of each polynomial in `polys` (the CPU's ntt_rows / intt_rows): one batch of
/// ntt_forward / ntt_inverse over all their rows. [heaan_ntt / heaan_intt]
void heaan_ntt(const DeviceCrtBasis& B, std::span<u64* const> polys, std::size_t np, bool inverse);
/// out = a * b row by row (np rows mod their primes; out may alias a or b): the CPU's vec_mul per prime.
void heaan_pointwise_mul(const DeviceCrtBasis& B, u64* out, const u64* a, const u64* b, std::size_t np);
/// The primes heaan::multiply takes for a product of a_bits- and b_bits-bit polynomials:
/// primes_for(a_bits + b_bits + log2 N).
std::size_t heaan_product_primes(const heaan::CrtBasis& B, int a_bits, int b_bits);
/// out = round(a b / 2^shift) mod 2^out_bits in Z[X]/(X^N + 1) over np primes: CRT of a and b (centered: read as
/// signed, as HE Mul's region 1), NTT, pointwise product, iNTT, iCRT -- heaan::multiply's product (centered = false,
/// np = heaan_product_primes) word for word. Scratch: 2 np N words from the pool, freed in stream order.
void heaan_multiply(const DeviceCrtBasis& B, const u64* a, int a_bits, const u64* b, int b_bits, std::size_t np, int shift,
                    int out_bits, u64* out, bool centered = false);

// ---- measurement -----------------------------------------------------------------------------------------------

/// The median time in milliseconds of `reps` runs of `launch` (queued work), timed by CUDA events after one
/// warm-up run.
double time_ms(const std::function<void()>& launch, int reps);
/// The device's copy bandwidth: bytes read plus bytes written per second of a device-to-device copy of `bytes`.
double copy_bandwidth(std::size_t bytes, int reps);

}  // namespace ember::cuda
