// ember_cuda: devices, device memory, the per-prime tables on the device, and timing (backend/cuda/kernels.hpp).
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

int device_count() noexcept {
    int n = 0;
    // no device, no driver (cudaErrorInsufficientDriver / cudaErrorNoDevice): none usable
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();  // clears the error so that it does not surface in a later check
        return 0;
    }
    return n;
}

std::string device_description() {
    cudaDeviceProp p{};
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    return std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
           std::to_string(p.multiProcessorCount) + " SMs, " + std::to_string(p.totalGlobalMem >> 20) + " MiB";
}

void synchronize() { EMBER_CUDA_CHECK(cudaDeviceSynchronize()); }

// ---- DeviceMemory --------------------------------------------------------------------------------------------------

DeviceMemory::DeviceMemory(std::size_t bytes) : bytes_(bytes) {
    if (bytes) EMBER_CUDA_CHECK(cudaMalloc(&p_, bytes));
}

DeviceMemory::~DeviceMemory() {
    if (p_) (void)cudaFree(p_);  // no throw from a destructor; a pending error surfaces at the next check
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
    if (this != &o) {
        if (p_) (void)cudaFree(p_);
        p_ = std::exchange(o.p_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}

void DeviceMemory::upload(const void* src, std::size_t bytes, std::size_t offset) {
    if (offset + bytes > bytes_) throw std::out_of_range("DeviceMemory::upload past the end");
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(static_cast<char*>(p_) + offset, src, bytes, cudaMemcpyHostToDevice));
}

void DeviceMemory::download(void* dst, std::size_t bytes, std::size_t offset) const {
    if (offset + bytes > bytes_) throw std::out_of_range("DeviceMemory::download past the end");
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(dst, static_cast<const char*>(p_) + offset, bytes, cudaMemcpyDeviceToHost));
}

// ---- the stream-ordered pool and copies ----------------------------------------------------------------------------

namespace {

constexpr cudaStream_t kLaunchStream = 0;  // the legacy default stream, which every launcher queues on

/// The current device's default memory pool, its release threshold raised on first use (once per process) so that
/// freed blocks stay reserved instead of going back to the driver at each synchronisation.
cudaMemPool_t launch_pool() {
    static const cudaMemPool_t pool = [] {
        int dev = 0;
        EMBER_CUDA_CHECK(cudaGetDevice(&dev));
        int supported = 0;
        EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev));
        if (!supported) throw std::runtime_error("CUDA backend: device " + std::to_string(dev) + " has no stream-ordered memory pools");
        cudaMemPool_t p = nullptr;
        EMBER_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&p, dev));
        unsigned long long keep = ~0ull;
        EMBER_CUDA_CHECK(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep));
        return p;
    }();
    return pool;
}

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

PoolStats pool_stats() {
    unsigned long long reserved = 0, used = 0, high = 0;
    EMBER_CUDA_CHECK(cudaMemPoolGetAttribute(launch_pool(), cudaMemPoolAttrReservedMemCurrent, &reserved));
    EMBER_CUDA_CHECK(cudaMemPoolGetAttribute(launch_pool(), cudaMemPoolAttrUsedMemCurrent, &used));
    EMBER_CUDA_CHECK(cudaMemPoolGetAttribute(launch_pool(), cudaMemPoolAttrUsedMemHigh, &high));
    return PoolStats{static_cast<std::size_t>(reserved), static_cast<std::size_t>(used), static_cast<std::size_t>(high)};
}

void reset_pool_peak() {
    unsigned long long zero = 0;  // (the only value the attribute accepts: it restarts from the current use)
    EMBER_CUDA_CHECK(cudaMemPoolSetAttribute(launch_pool(), cudaMemPoolAttrUsedMemHigh, &zero));
}

u64* pool_allocate(std::size_t words) {
    if (words == 0) return nullptr;
    const cudaMemPool_t pool = launch_pool();
    const bool too_big = words > (~std::size_t(0)) / sizeof(u64);
    const std::size_t bytes = too_big ? ~std::size_t(0) : words * sizeof(u64);
    void* p = nullptr;
    cudaError_t e = too_big ? cudaErrorMemoryAllocation : cudaMallocAsync(&p, bytes, pool, kLaunchStream);
    if (e == cudaErrorMemoryAllocation && !too_big) {
        // blocks freed by queued work return to the pool once that work is done; the pool's unused reserve may be
        // fragmented, or needed by memory outside the pool (tables, staged pointer arrays): wait, trim, retry once
        (void)cudaGetLastError();
        EMBER_CUDA_CHECK(cudaStreamSynchronize(kLaunchStream));
        EMBER_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
        e = cudaMallocAsync(&p, bytes, pool, kLaunchStream);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // out of memory is not sticky: clear it so that the next check does not see it
        std::size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
        std::string state;
        try {
            const PoolStats st = pool_stats();
            state = " (pool: " + mib(st.reserved_bytes) + " reserved, " + mib(st.used_bytes) + " in use; device: " +
                    mib(free_b) + " free of " + mib(total_b) + ")";
        } catch (const std::exception&) {
            state = " (pool state unavailable)";
        }
        const std::string what = std::to_string(words) + " words (" + (too_big ? std::string("more than the address space") : mib(bytes)) + ")";
        // a request beyond the device's memory is out of memory whatever code the driver gives it
        if (e == cudaErrorMemoryAllocation || too_big || (total_b != 0 && bytes > total_b))
            throw std::runtime_error("CUDA backend: out of device memory allocating " + what + state + ": " +
                                     cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
        detail::fail(e, ("cudaMallocAsync of " + what + state).c_str(), __FILE__, __LINE__);
    }
    return static_cast<u64*>(p);
}

void pool_free(void* p) noexcept {
    if (!p) return;
    // no throw (called from destructors): a failure here is an earlier launch's sticky error, which the next
    // checked call reports
    if (cudaFreeAsync(p, kLaunchStream) != cudaSuccess) (void)cudaGetLastError();
}

void memset_async(void* p, int value, std::size_t bytes) {
    if (bytes) EMBER_CUDA_CHECK(cudaMemsetAsync(p, value, bytes, kLaunchStream));
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
    // from pageable host memory cudaMemcpy returns once the words are staged (src reusable); the legacy default
    // stream orders it with the kernels
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void copy_on_device(void* dst, const void* src, std::size_t bytes) {
    if (bytes && dst != src) EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, kLaunchStream));
}

void stream_synchronize() { EMBER_CUDA_CHECK(cudaStreamSynchronize(kLaunchStream)); }

// ---- DeviceNttTables -----------------------------------------------------------------------------------------------

DeviceNttTables::DeviceNttTables(const NttTables& t) : tw_(4 * t.n), log_n_(static_cast<u32>(t.log_n)) {
    const std::size_t b = t.n * sizeof(u64);
    u64* w = tw_.get();
    // stream order: the copies follow the allocation, and the kernels that read the tables follow the copies
    copy_to_device(w, t.psi_rev.data(), b);
    copy_to_device(w + t.n, t.psi_rev_shoup.data(), b);
    copy_to_device(w + 2 * t.n, t.ipsi_rev.data(), b);
    copy_to_device(w + 3 * t.n, t.ipsi_rev_shoup.data(), b);
    fwd_ = make_ntt_limb(nullptr, t, w, w + t.n);
    inv_ = make_ntt_limb(nullptr, t, w + 2 * t.n, w + 3 * t.n);
}

NttLimb DeviceNttTables::limb(u64* data, bool inverse) const {
    NttLimb l = inverse ? inv_ : fwd_;
    l.data = data;
    return l;
}

// ---- DeviceBaseConverter -------------------------------------------------------------------------------------------

DeviceBaseConverter::DeviceBaseConverter(const BaseConverter& conv) {
    const BaseConvData d(conv);
    if (d.k == 0) throw std::invalid_argument("cuda::DeviceBaseConverter: no source primes");
    // one block: the u64 arrays, then the doubles, then the WideBarrett constants (all 8-byte aligned)
    const std::size_t k = d.k, m = d.m;
    const std::size_t words = 3 * k + m * k + m + k + 3 * m;
    mem_ = PoolBlock(words);
    std::vector<u64> host;
    host.reserve(words);
    auto put = [&](const auto* p, std::size_t count) {
        const std::size_t at = host.size();
        host.resize(at + count * sizeof(*p) / sizeof(u64));
        std::memcpy(host.data() + at, p, count * sizeof(*p));
        return at;
    };
    const std::size_t oq = put(d.q.data(), k), ow = put(d.qinv_w.data(), k), owp = put(d.qinv_wp.data(), k);
    const std::size_t oh = put(d.qhat.data(), m * k), on = put(d.negq.data(), m), oi = put(d.inv_q.data(), k);
    const std::size_t ob = put(d.pb.data(), m);
    static_assert(sizeof(WideBarrett) == 3 * sizeof(u64) && sizeof(double) == sizeof(u64));
    copy_to_device(mem_.get(), host.data(), host.size() * sizeof(u64));  // stream order, as DeviceNttTables
    const u64* base = mem_.get();
    table_ = BaseConvTable{d.k,        d.m,       base + oq, base + ow, base + owp, reinterpret_cast<const double*>(base + oi),
                           base + oh, base + on, reinterpret_cast<const WideBarrett*>(base + ob)};
}

// ---- timing --------------------------------------------------------------------------------------------------------

double time_ms(const std::function<void()>& launch, int reps) {
    cudaEvent_t start, stop;
    EMBER_CUDA_CHECK(cudaEventCreate(&start));
    EMBER_CUDA_CHECK(cudaEventCreate(&stop));
    launch();  // warm-up
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        EMBER_CUDA_CHECK(cudaEventRecord(start));
        launch();
        EMBER_CUDA_CHECK(cudaEventRecord(stop));
        EMBER_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        t.push_back(ms);
    }
    EMBER_CUDA_CHECK_LAUNCH();
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    if (t.empty()) return 0;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

double copy_bandwidth(std::size_t bytes, int reps) {
    DeviceMemory a(bytes), b(bytes);
    EMBER_CUDA_CHECK(cudaMemset(a.get(), 1, bytes));
    const double ms = time_ms([&] { EMBER_CUDA_CHECK(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); }, reps);
    return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

}  // namespace ember::cuda
