// Device tests of HEAAN's product on the GPU (backend/cuda/heaan_impl.cuh): the CRT and iCRT kernels against
// heaan::CrtBasis, and the whole product (CRT -> NTT -> pointwise -> iNTT -> iCRT) of two random 1200-bit
// polynomials at N = 2^12 and 2^16 against heaan::multiply (and, with centered operands, against the CPU stages HE
// Mul's region 1 runs), word for word. Without a CUDA device every test is skipped (GTEST_SKIP, exit 0).
//
// EMBER_CUDA_TEST_MAX_LOG_N (default 17) bounds the ring sizes, for the slow compute-sanitizer runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cpu/thread_pool.hpp"
#include "backend/cuda/kernels.hpp"
#include "heaan/big_poly.hpp"
#include "heaan/crt.hpp"
#include "math/vec_ops.hpp"

namespace ember {
namespace {

using heaan::BigPoly;
using heaan::CrtBasis;

constexpr int kLogQ = 1200;

int max_log_n() {
    const char* v = std::getenv("EMBER_CUDA_TEST_MAX_LOG_N");
    return v && *v ? std::atoi(v) : 17;
}

#define SKIP_WITHOUT_DEVICE() \
    if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"

/// Random coefficients of `bits` bits with the extremes 0, 1, 2^(bits-1) and 2^bits - 1 mixed in (with_edges).
BigPoly sample_poly(std::size_t n, int bits, std::mt19937_64& rng, bool with_edges) {
    BigPoly p(n, bits);
    for (std::size_t i = 0; i < n; ++i) {
        u64* c = p.coeff(i);
        for (std::size_t k = 0; k < p.words; ++k) c[k] = rng();
        if (with_edges && i % 3 != 0) {
            std::fill(c, c + p.words, 0);
            switch (i % 4) {
                case 0: break;
                case 1: c[0] = 1; break;
                case 2: c[(bits - 1) / 64] = u64(1) << ((bits - 1) % 64); break;
                default: std::fill(c, c + p.words, ~u64(0));
            }
        }
        heaan::bigint::mask_bits(c, p.words, bits);
    }
    return p;
}

cuda::DeviceArray<u64> upload(const BigPoly& p) { return cuda::DeviceArray<u64>(std::vector<u64>(p.data.begin(), p.data.end())); }

/// A basis with enough 50-bit primes for centered and plain products of two kLogQ-bit polynomials at N = 2^log_n.
CrtBasis make_basis(int log_n) { return CrtBasis(std::size_t(1) << log_n, 50, (2 * kLogQ + log_n + 4) / 49 + 2, 2 * kLogQ + 64); }

TEST(CudaHeaan, CrtAndIcrtMatchCpu) {
    SKIP_WITHOUT_DEVICE();
    const int log_n = std::min(12, max_log_n());
    CrtBasis B = make_basis(log_n);
    B.set_path(heaan::CrtPath::kScalar);
    const cuda::DeviceCrtBasis dB(B);
    const std::size_t n = B.n(), np = B.size();
    std::mt19937_64 rng(1);
    for (int bits : {1, 64, 65, kLogQ, 2 * kLogQ}) {
        const BigPoly a = sample_poly(n, bits, rng, true);
        const auto da = upload(a);
        for (bool centered : {false, true}) {
            cuda::DeviceArray<u64> rows(np * n);
            cuda::heaan_crt(dB, da.data(), a.words, bits, np, rows.data(), centered);
            std::vector<u64> want(np * n);
            std::vector<u64*> ptr(np);
            for (std::size_t j = 0; j < np; ++j) ptr[j] = want.data() + j * n;
            B.crt(a.data.data(), a.words, bits, np, ptr.data(), 0, n, centered);
            ASSERT_EQ(rows.download(), want) << "crt bits " << bits << " centered " << centered;
            if (!centered || bits != kLogQ) continue;
            // iCRT of these residues (c = a read as signed: |c| <= 2^(kLogQ - 1) < P / 16)
            std::vector<const u64*> cptr(ptr.begin(), ptr.end());
            for (auto [shift, out_bits] : {std::pair{0, kLogQ}, std::pair{0, 64}, std::pair{100, 1000}, std::pair{700, 500}}) {
                const std::size_t on = heaan::bigint::words_for_bits(out_bits);
                cuda::DeviceArray<u64> out(n * on);
                cuda::heaan_icrt(dB, rows.data(), np, shift, out_bits, out.data());
                std::vector<u64> w(n * on);
                B.icrt(cptr.data(), np, shift, out_bits, w.data(), 0, n);
                ASSERT_EQ(out.download(), w) << "icrt shift " << shift << " out_bits " << out_bits;
            }
        }
    }
}

/// The CPU's product of centered operands from its stages (as HE Mul's region 1: crt_polys centered).
BigPoly cpu_centered_product(const CrtBasis& B, ThreadPool& pool, const BigPoly& a, const BigPoly& b, std::size_t np) {
    const std::size_t n = B.n();
    heaan::RowBuffer rows(2 * np * n);
    u64* ra = rows.data();
    u64* rb = rows.data() + np * n;
    heaan::crt_polys(B, pool, {&a, &b}, np, {ra, rb}, true);
    heaan::ntt_rows(B, pool, {ra, rb}, np);
    for (std::size_t j = 0; j < np; ++j) vec_mul(ra + j * n, ra + j * n, rb + j * n, n, B.prime(j));
    heaan::intt_rows(B, pool, {ra}, np);
    BigPoly out;
    heaan::icrt_poly(B, pool, ra, np, 0, kLogQ, out);
    return out;
}

TEST(CudaHeaan, ProductMatchesCpu) {
    SKIP_WITHOUT_DEVICE();
    ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    for (int log_n : {12, 16}) {
        if (log_n > max_log_n()) continue;
        const CrtBasis B = make_basis(log_n);
        const cuda::DeviceCrtBasis dB(B);
        const std::size_t n = B.n();
        std::mt19937_64 rng(static_cast<u64>(log_n));
        for (bool edges : {false, true}) {
            const BigPoly a = sample_poly(n, kLogQ, rng, edges), b = sample_poly(n, kLogQ, rng, false);
            const auto da = upload(a), db = upload(b);
            const std::size_t np = cuda::heaan_product_primes(B, a.bits, b.bits);
            for (auto [shift, out_bits] : {std::pair{0, kLogQ}, std::pair{0, 2 * kLogQ}, std::pair{kLogQ, kLogQ}}) {
                const BigPoly want = heaan::multiply(B, pool, a, b, shift, out_bits);
                cuda::DeviceArray<u64> out(want.data.size());
                cuda::heaan_multiply(dB, da.data(), a.bits, db.data(), b.bits, np, shift, out_bits, out.data());
                const std::vector<u64> got = out.download();
                ASSERT_TRUE(std::equal(got.begin(), got.end(), want.data.begin(), want.data.end()))
                    << "log_n " << log_n << " edges " << edges << " shift " << shift << " out_bits " << out_bits;
            }
            // centered operands, np of HE Mul's region 1 (2 log q + log N - 1), reduced mod 2^log q
            const std::size_t npc = B.primes_for(2 * kLogQ + log_n - 1);
            const BigPoly want = cpu_centered_product(B, pool, a, b, npc);
            cuda::DeviceArray<u64> out(want.data.size());
            cuda::heaan_multiply(dB, da.data(), a.bits, db.data(), b.bits, npc, 0, kLogQ, out.data(), true);
            const std::vector<u64> got = out.download();
            ASSERT_TRUE(std::equal(got.begin(), got.end(), want.data.begin(), want.data.end()))
                << "centered log_n " << log_n << " edges " << edges;
        }
    }
}

TEST(CudaHeaan, RejectsBadArguments) {
    SKIP_WITHOUT_DEVICE();
    const CrtBasis B = make_basis(6);
    const cuda::DeviceCrtBasis dB(B);
    cuda::DeviceArray<u64> buf(B.n() * 64);
    EXPECT_THROW(cuda::heaan_crt(dB, buf.data(), 1, B.max_in_bits() + 1, 1, buf.data(), false), std::invalid_argument);
    EXPECT_THROW(cuda::heaan_crt(dB, buf.data(), 1, 64, B.size() + 1, buf.data(), false), std::invalid_argument);
    EXPECT_THROW(cuda::heaan_icrt(dB, buf.data(), 1, 0, 64, buf.data()), std::invalid_argument);  // 50-bit P
    EXPECT_THROW(cuda::heaan_icrt(dB, buf.data(), 0, 0, 8, buf.data()), std::invalid_argument);
}

}  // namespace
}  // namespace ember
