// HEAAN's polynomial product on the device (paper 000, Sections IV-V and VII): the CRT kernel (one thread per output
// residue), the iCRT kernel (one thread per coefficient, its t_j in a column of shared memory), and the pipeline
// CRT -> NTT -> pointwise product -> iNTT -> iCRT built from them and the NTT and element-wise launchers. The
// per-element arithmetic is backend/cuda/heaan_phases.hpp's, tested on the host against heaan::CrtBasis.
//
// Untuned (the plain mapping of Section VII, for measurement: tests/cuda/cuda_bench.cpp's heaan_* lines): the CRT
// threads of a warp read their coefficients' words at a stride of `words` words (through L1; a tile of coefficients
// staged in shared memory would coalesce them), the iCRT threads write theirs the same way, and the iCRT runs one
// thread per coefficient (N threads: a quarter of an H100's thread slots at N = 2^16; splitting the output digits over
// threads, with a carry pass after, would fill it).
// Part of ember_cuda.cu, the library's one translation unit.
#pragma once

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cuda/check.cuh"
#include "backend/cuda/kernels.hpp"

namespace ember::cuda {

namespace {

__global__ void __launch_bounds__(kHeaanCrtThreads) heaan_crt_kernel(const HeaanCrtTable t, const HeaanCrtArgs a) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < a.n) heaan_crt_element(t, a, i, blockIdx.y);
}

__global__ void heaan_icrt_kernel(const HeaanIcrtTable tb, const u64* rows, std::size_t n, const HeaanIcrtShape sh,
                                  u64* out) {
    extern __shared__ u64 tile[];  // (np + 1) x blockDim.x: column threadIdx.x is this thread's
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64* t = tile + threadIdx.x;
    heaan_icrt_scale(t, blockDim.x, tb, rows, n, i);
    heaan_icrt_digits(t, blockDim.x, tb, sh, out + i * sh.on);
}

}  // namespace

// ---- DeviceCrtBasis ------------------------------------------------------------------------------------------------

DeviceCrtBasis::DeviceCrtBasis(const heaan::CrtBasis& basis) : basis_(&basis) {
    const HeaanCrtData d(basis);
    static_assert(sizeof(WideBarrett) == 3 * sizeof(u64));
    const std::size_t p = d.primes;
    std::vector<u64> host(d.crt64);
    host.insert(host.end(), d.two128.begin(), d.two128.end());
    const std::size_t ob = host.size();
    host.resize(ob + 3 * p);
    std::memcpy(host.data() + ob, d.pb.data(), 3 * p * sizeof(u64));
    crt_mem_ = PoolBlock(host.size());
    copy_to_device(crt_mem_.get(), host.data(), host.size() * sizeof(u64));  // stream order, as DeviceNttTables
    const u64* base = crt_mem_.get();
    crt_ = HeaanCrtTable{d.primes, d.d64, base, base + d.crt64.size(), reinterpret_cast<const WideBarrett*>(base + ob)};
    for (std::size_t j = 0; j < basis.size(); ++j) {
        ntt_owned_.push_back(std::make_unique<DeviceNttTables>(basis.ntt(j)));
        ntt_.push_back(ntt_owned_.back().get());
        mods_.push_back(basis.prime(j));
    }
}

void DeviceCrtBasis::check_np(std::size_t np, const char* op) const {
    if (np == 0 || np > basis_->size())
        throw std::invalid_argument(std::string("cuda::") + op + ": np = " + std::to_string(np) + " must be in [1, " +
                                    std::to_string(basis_->size()) + "]");
}

const HeaanIcrtTable& DeviceCrtBasis::icrt_table(std::size_t np) const {
    check_np(np, "heaan_icrt");
    std::lock_guard<std::mutex> l(mu_);
    auto it = icrt_.find(np);
    if (it != icrt_.end()) return it->second->table;
    const HeaanIcrtData d(*basis_, basis_->icrt_plan(np));
    static_assert(sizeof(double) == sizeof(u64));
    // one block: q, inv_w, inv_wp, inv_p (doubles), pw64
    std::vector<u64> host;
    host.reserve(4 * np + d.pw64.size());
    host.insert(host.end(), d.q.begin(), d.q.end());
    host.insert(host.end(), d.inv_w.begin(), d.inv_w.end());
    host.insert(host.end(), d.inv_wp.begin(), d.inv_wp.end());
    const std::size_t oi = host.size();
    host.resize(oi + np);
    std::memcpy(host.data() + oi, d.inv_p.data(), np * sizeof(double));
    const std::size_t ow = host.size();
    host.insert(host.end(), d.pw64.begin(), d.pw64.end());
    auto e = std::make_unique<Icrt>();
    e->mem = PoolBlock(host.size());
    copy_to_device(e->mem.get(), host.data(), host.size() * sizeof(u64));
    const u64* base = e->mem.get();
    e->table = HeaanIcrtTable{d.np, d.k64, base, base + np, base + 2 * np, reinterpret_cast<const double*>(base + oi),
                              base + ow};
    auto [pos, _] = icrt_.emplace(np, std::move(e));
    return pos->second->table;
}

std::span<const DeviceNttTables* const> DeviceCrtBasis::ntt_tables(std::size_t np) const {
    check_np(np, "heaan_ntt");
    return std::span<const DeviceNttTables* const>(ntt_.data(), np);
}

std::span<const Modulus> DeviceCrtBasis::moduli(std::size_t np) const {
    check_np(np, "heaan_pointwise_mul");
    return std::span<const Modulus>(mods_.data(), np);
}

// ---- launchers -----------------------------------------------------------------------------------------------------

void heaan_crt(const DeviceCrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* rows,
               bool centered) {
    const heaan::CrtBasis& hb = B.basis();
    if (in_bits < 1 || in_bits > hb.max_in_bits())
        throw std::invalid_argument("cuda::heaan_crt: input of " + std::to_string(in_bits) + " bits; the tables cover up to " +
                                    std::to_string(hb.max_in_bits()));
    if (np == 0 || np > hb.size() || np > 65535)
        throw std::invalid_argument("cuda::heaan_crt: np = " + std::to_string(np) + " is out of range");
    if (words == 0) throw std::invalid_argument("cuda::heaan_crt: coefficients of 0 words");
    const std::size_t n = hb.n();
    const HeaanCrtArgs a = make_heaan_crt_args(in, words, in_bits, np, rows, n, centered);
    const dim3 grid(static_cast<unsigned>((n + kHeaanCrtThreads - 1) / kHeaanCrtThreads), static_cast<unsigned>(np));
    heaan_crt_kernel<<<grid, kHeaanCrtThreads>>>(B.crt_table(), a);
    EMBER_CUDA_CHECK_LAUNCH();
}

void heaan_icrt(const DeviceCrtBasis& B, const u64* rows, std::size_t np, int shift, int out_bits, u64* out) {
    const heaan::CrtBasis& hb = B.basis();
    const HeaanIcrtTable& tb = B.icrt_table(np);  // checks np
    hb.check_icrt(hb.icrt_plan(np), shift, out_bits);
    const u32 block = heaan_icrt_block(np);
    if (block == 0)
        throw std::invalid_argument("cuda::heaan_icrt: np = " + std::to_string(np) + " exceeds the kernel's 191 primes");
    const std::size_t n = hb.n();
    const std::size_t smem = static_cast<std::size_t>(np + 1) * block * sizeof(u64);
    heaan_icrt_kernel<<<static_cast<unsigned>((n + block - 1) / block), block, smem>>>(tb, rows, n,
                                                                                     make_heaan_icrt_shape(shift, out_bits), out);
    EMBER_CUDA_CHECK_LAUNCH();
}

void heaan_ntt(const DeviceCrtBasis& B, std::span<u64* const> polys, std::size_t np, bool inverse) {
    const auto tabs = B.ntt_tables(np);
    const std::size_t n = B.n();
    std::vector<u64*> limbs;
    std::vector<const DeviceNttTables*> t;
    for (u64* p : polys)
        for (std::size_t j = 0; j < np; ++j) {
            limbs.push_back(p + j * n);
            t.push_back(tabs[j]);
        }
    if (inverse) ntt_inverse(limbs, t);
    else ntt_forward(limbs, t);
}

void heaan_pointwise_mul(const DeviceCrtBasis& B, u64* out, const u64* a, const u64* b, std::size_t np) {
    const auto mods = B.moduli(np);
    const std::size_t n = B.n();
    std::vector<u64*> o(np);
    std::vector<const u64*> pa(np), pb(np);
    for (std::size_t j = 0; j < np; ++j) {
        o[j] = out + j * n;
        pa[j] = a + j * n;
        pb[j] = b + j * n;
    }
    mul(o, pa, pb, mods, n);
}

std::size_t heaan_product_primes(const heaan::CrtBasis& B, int a_bits, int b_bits) {
    return B.primes_for(a_bits + b_bits + B.ntt(0).log_n);
}

void heaan_multiply(const DeviceCrtBasis& B, const u64* a, int a_bits, const u64* b, int b_bits, std::size_t np, int shift,
                    int out_bits, u64* out, bool centered) {
    const heaan::CrtBasis& hb = B.basis();
    if (np == 0 || np > hb.size()) throw std::invalid_argument("cuda::heaan_multiply: np = " + std::to_string(np) + " is out of range");
    hb.check_icrt(hb.icrt_plan(np), shift, out_bits);  // before anything is queued
    const std::size_t n = hb.n();
    const PoolBlock scratch(2 * np * n);  // freed in stream order, after the launches below
    u64* ra = scratch.get();
    u64* rb = ra + np * n;
    heaan_crt(B, a, heaan::bigint::words_for_bits(a_bits), a_bits, np, ra, centered);
    heaan_crt(B, b, heaan::bigint::words_for_bits(b_bits), b_bits, np, rb, centered);
    u64* const both[2] = {ra, rb};
    heaan_ntt(B, both, np, false);
    heaan_pointwise_mul(B, ra, ra, rb, np);
    heaan_ntt(B, std::span<u64* const>(both, 1), np, true);
    heaan_icrt(B, ra, np, shift, out_bits, out);
}

}  // namespace ember::cuda
