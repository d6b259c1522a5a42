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

// ---- DeviceNttTables -----------------------------------------------------------------------------------------------

DeviceNttTables::DeviceNttTables(const NttTables& t) : tw_(4 * t.n * sizeof(u64)), log_n_(static_cast<u32>(t.log_n)) {
    const std::size_t b = t.n * sizeof(u64);
    tw_.upload(t.psi_rev.data(), b, 0);
    tw_.upload(t.psi_rev_shoup.data(), b, b);
    tw_.upload(t.ipsi_rev.data(), b, 2 * b);
    tw_.upload(t.ipsi_rev_shoup.data(), b, 3 * b);
    const u64* w = static_cast<const u64*>(tw_.get());
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
    if (d.k == 0 || d.k > kBcMaxSources)
        throw std::invalid_argument("cuda::DeviceBaseConverter: 1 to " + std::to_string(kBcMaxSources) +
                                    " source primes, got " + std::to_string(d.k));
    // one block: the u64 arrays, then the doubles, then the WideBarrett constants (all 8-byte aligned)
    const std::size_t k = d.k, m = d.m;
    const std::size_t words = 3 * k + m * k + m + k + 3 * m;
    mem_ = DeviceMemory(words * sizeof(u64));
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
    mem_.upload(host.data(), host.size() * sizeof(u64));
    const u64* base = static_cast<const u64*>(mem_.get());
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
