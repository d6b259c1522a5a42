// Host tests of the CUDA kernels' HEAAN arithmetic (backend/cuda/heaan_phases.hpp): the CRT and iCRT kernels run
// through their host emulations (the same EMBER_HD element functions with the kernels' block and thread indexing),
// compiled here by the ordinary C++ compiler, against heaan::CrtBasis's scalar path (and its best path on this CPU)
// word for word, on random big-integer polynomials with the extreme coefficients 0, 1, q/2 - 1, q/2, q/2 + 1 and
// q - 1 (q = 2^bits) mixed in; and the product pipeline (emulated CRT, the CPU's NTT and pointwise product, emulated
// iCRT) against heaan::multiply. What remains for a GPU (tests/cuda/test_cuda_heaan.cpp): the launches, the memory
// spaces and the device's own NTT and products in the pipeline. Needs no CUDA toolkit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "backend/cpu/thread_pool.hpp"
#include "backend/cuda/heaan_phases.hpp"
#include "heaan/big_poly.hpp"
#include "heaan/crt.hpp"
#include "math/ntt.hpp"
#include "math/vec_ops.hpp"

namespace ember {
namespace {

using heaan::BigPoly;
using heaan::CrtBasis;
using heaan::CrtPath;
using cuda::u32;

/// The extreme coefficients modulo 2^bits (in `words` words): 0, 1, 2^(bits-1) - 1, 2^(bits-1), 2^(bits-1) + 1,
/// 2^bits - 1 (e = 0 .. 5).
void put_edge(u64* c, std::size_t words, int bits, int e) {
    std::fill(c, c + words, 0);
    const std::size_t tw = static_cast<std::size_t>(bits - 1) / 64;
    const u64 tb = u64(1) << ((bits - 1) % 64);
    switch (e) {
        case 0: break;
        case 1: c[0] = 1; break;
        case 2:  // 2^(bits-1) - 1
            for (std::size_t k = 0; k < tw; ++k) c[k] = ~u64(0);
            c[tw] = tb - 1;
            break;
        case 3: c[tw] = tb; break;
        case 4: c[tw] |= tb; c[0] |= 1; break;
        default:
            for (std::size_t k = 0; k < words; ++k) c[k] = ~u64(0);
            heaan::bigint::mask_bits(c, words, bits);
    }
}

/// n coefficients of `bits` bits: uniform (kind 0), the extremes mixed in (kind 1: two thirds of them), all 2^bits - 1
/// (kind 2: the largest products).
BigPoly sample_poly(std::size_t n, int bits, std::mt19937_64& rng, int kind) {
    BigPoly p(n, bits);
    for (std::size_t i = 0; i < n; ++i) {
        u64* c = p.coeff(i);
        for (std::size_t k = 0; k < p.words; ++k) c[k] = rng();
        heaan::bigint::mask_bits(c, p.words, bits);
        if (kind == 2) put_edge(c, p.words, bits, 5);
        else if (kind == 1 && (i * 7 + i / 5) % 3 != 0) put_edge(c, p.words, bits, static_cast<int>((i * i + i / 3) % 6));
    }
    return p;
}

std::vector<u64*> row_ptrs(std::vector<u64>& rows, std::size_t np, std::size_t n) {
    std::vector<u64*> p(np);
    for (std::size_t j = 0; j < np; ++j) p[j] = rows.data() + j * n;
    return p;
}

/// The paths to compare with: the scalar one (the reference the others are tested identical to) and this CPU's best.
std::vector<CrtPath> paths_of(const CrtBasis& B) {
    std::vector<CrtPath> p{CrtPath::kScalar};
    if (B.best_path() != CrtPath::kScalar) p.push_back(B.best_path());
    return p;
}

// ---- CRT -----------------------------------------------------------------------------------------------------------

TEST(CudaHeaan, CrtMatchesCrtBasis) {
    const std::size_t n = 256;
    for (int pb : {50, 60}) {
        CrtBasis B(n, pb, 60, 2400);
        const cuda::HeaanCrtData data(B);
        const cuda::HeaanCrtTable t = data.host_table();
        const std::size_t np = B.size();
        std::mt19937_64 rng(static_cast<u64>(pb));
        for (int bits : {1, 2, 63, 64, 65, 127, 1199, 1200, 2400}) {
            for (int kind : {0, 1, 2}) {
                const BigPoly a = sample_poly(n, bits, rng, kind);
                for (bool centered : {false, true}) {
                    std::vector<u64> want(np * n), got(np * n, ~u64(0));
                    cuda::heaan_crt_emulate(t, cuda::make_heaan_crt_args(a.data.data(), a.words, bits, np, got.data(), n, centered));
                    for (CrtPath path : paths_of(B)) {
                        B.set_path(path);
                        std::fill(want.begin(), want.end(), 0);
                        B.crt(a.data.data(), a.words, bits, np, row_ptrs(want, np, n).data(), 0, n, centered);
                        ASSERT_EQ(got, want) << "pb " << pb << " bits " << bits << " kind " << kind << " centered "
                                             << centered << " path " << heaan::crt_path_name(path);
                    }
                    if (centered) {  // the offsets the kernel derives from the table
                        const auto off = B.centered_offsets(bits, np);
                        const auto args = cuda::make_heaan_crt_args(a.data.data(), a.words, bits, np, got.data(), n, true);
                        for (std::size_t j = 0; j < np; ++j)
                            ASSERT_EQ(cuda::heaan_crt_offset(t, args, static_cast<u32>(j)), off[j]) << "bits " << bits << " j " << j;
                    }
                }
            }
        }
    }
}

TEST(CudaHeaan, CrtReadsOnlyTheInputBits) {
    // coefficients stored in more words than in_bits needs (a wider polynomial read at fewer bits): the words past
    // words_for_bits(in_bits) are not read, as on the CPU
    const std::size_t n = 64, words = 40;
    CrtBasis B(n, 60, 30, 2500);
    B.set_path(CrtPath::kScalar);
    const cuda::HeaanCrtData data(B);
    std::mt19937_64 rng(5);
    std::vector<u64> in(n * words);
    for (auto& w : in) w = rng();
    for (int bits : {1000, 1024, 1200}) {
        for (std::size_t i = 0; i < n; ++i) heaan::bigint::mask_bits(in.data() + i * words, heaan::bigint::words_for_bits(bits), bits);
        const std::size_t np = B.size();
        std::vector<u64> want(np * n), got(np * n);
        B.crt(in.data(), words, bits, np, row_ptrs(want, np, n).data(), 0, n, true);
        cuda::heaan_crt_emulate(data.host_table(), cuda::make_heaan_crt_args(in.data(), words, bits, np, got.data(), n, true));
        ASSERT_EQ(got, want) << "bits " << bits;
    }
}

// ---- iCRT ----------------------------------------------------------------------------------------------------------

/// (shift, out_bits) pairs with shift + out_bits <= p_bits: whole words, single bits, the skipped digits (shift > 100),
/// shifts that are multiples of 64, and the largest output.
std::vector<std::pair<int, int>> icrt_shapes(int p_bits) {
    const std::pair<int, int> all[] = {{0, 1},      {0, 37},     {0, 64},      {0, 65},     {0, 1200},   {1, 40},
                                       {37, 500},   {63, 64},    {64, 64},     {100, 1000}, {101, 1000}, {164, 999},
                                       {1200, 1200}, {1280, 1216}, {1200, 2400}, {2400, 1200}};
    std::vector<std::pair<int, int>> r;
    for (auto sh : all)
        if (sh.first + sh.second <= p_bits) r.push_back(sh);
    r.emplace_back(0, p_bits);
    r.emplace_back(p_bits / 2, p_bits - p_bits / 2);
    r.emplace_back(p_bits - 1, 1);
    return r;
}

TEST(CudaHeaan, IcrtMatchesCrtBasis) {
    for (int pb : {50, 60}) {
        CrtBasis B(128, pb, 80, 64 * 80);
        std::mt19937_64 rng(static_cast<u64>(pb) + 1);
        for (std::size_t np : {std::size_t(1), std::size_t(2), std::size_t(25), std::size_t(80)}) {
            const heaan::IcrtPlan& plan = B.icrt_plan(np);
            const cuda::HeaanIcrtData data(B, plan);
            const cuda::HeaanIcrtTable tb = data.host_table();
            for (int src = 0; src < 2; ++src) {
                // residues: uniform (any c in [0, P), the v the CPU computes, exact or not), or those of integers with
                // |c| < P/32 (the iCRT's contract), extremes included
                std::vector<u64> rows(np * B.n());
                if (src == 0) {
                    for (std::size_t j = 0; j < np; ++j)
                        for (std::size_t i = 0; i < B.n(); ++i) rows[j * B.n() + i] = rng() % B.prime(j).q;
                } else {
                    const int bits = plan.p_bits - 5;
                    const BigPoly c = sample_poly(B.n(), bits, rng, 1);
                    B.set_path(CrtPath::kScalar);
                    B.crt(c.data.data(), c.words, bits, np, row_ptrs(rows, np, B.n()).data(), 0, B.n(), true);
                }
                const auto ptr = row_ptrs(rows, np, B.n());
                std::vector<const u64*> cptr(ptr.begin(), ptr.end());
                for (auto [shift, out_bits] : icrt_shapes(plan.p_bits)) {
                    const auto sh = cuda::make_heaan_icrt_shape(shift, out_bits);
                    std::vector<u64> got(B.n() * sh.on, ~u64(0)), want(B.n() * sh.on);
                    const u32 block = cuda::heaan_icrt_block(np);
                    ASSERT_GT(block, 0u);
                    for (u32 blk : {block, 32u, 96u}) {  // 96: a partial last block
                        cuda::heaan_icrt_emulate(tb, rows.data(), B.n(), sh, got.data(), blk);
                        for (CrtPath path : paths_of(B)) {
                            B.set_path(path);
                            B.icrt(cptr.data(), np, shift, out_bits, want.data(), 0, B.n());
                            ASSERT_EQ(got, want) << "pb " << pb << " np " << np << " src " << src << " shift " << shift
                                                 << " out_bits " << out_bits << " block " << blk << " path "
                                                 << heaan::crt_path_name(path);
                        }
                    }
                }
            }
        }
    }
}

// ---- the product ---------------------------------------------------------------------------------------------------

/// heaan::multiply's pipeline with the kernels' CRT and iCRT (emulated) and the CPU's NTT and products; centered:
/// the operands read as signed (HE Mul's region 1).
BigPoly emulated_product(const CrtBasis& B, const BigPoly& a, const BigPoly& b, std::size_t np, int shift, int out_bits,
                         bool centered) {
    const std::size_t n = B.n();
    const cuda::HeaanCrtData cd(B);
    const cuda::HeaanIcrtData id(B, B.icrt_plan(np));
    std::vector<u64> ra(np * n), rb(np * n);
    cuda::heaan_crt_emulate(cd.host_table(), cuda::make_heaan_crt_args(a.data.data(), a.words, a.bits, np, ra.data(), n, centered));
    cuda::heaan_crt_emulate(cd.host_table(), cuda::make_heaan_crt_args(b.data.data(), b.words, b.bits, np, rb.data(), n, centered));
    for (std::size_t j = 0; j < np; ++j) {
        ntt_forward(ra.data() + j * n, B.ntt(j));
        ntt_forward(rb.data() + j * n, B.ntt(j));
        vec_mul(ra.data() + j * n, ra.data() + j * n, rb.data() + j * n, n, B.prime(j));
        ntt_inverse(ra.data() + j * n, B.ntt(j));
    }
    BigPoly out = BigPoly::uninit(n, out_bits);
    cuda::heaan_icrt_emulate(id.host_table(), ra.data(), n, cuda::make_heaan_icrt_shape(shift, out_bits), out.data.data(),
                             cuda::heaan_icrt_block(np));
    return out;
}

/// The CPU's product of centered operands from its stages (crt_polys centered, as HE Mul's region 1).
BigPoly cpu_centered_product(const CrtBasis& B, ThreadPool& pool, const BigPoly& a, const BigPoly& b, std::size_t np,
                             int shift, int out_bits) {
    const std::size_t n = B.n();
    heaan::RowBuffer rows(2 * np * n);
    u64* ra = rows.data();
    u64* rb = rows.data() + np * n;
    heaan::crt_polys(B, pool, {&a, &b}, np, {ra, rb}, true);
    heaan::ntt_rows(B, pool, {ra, rb}, np);
    for (std::size_t j = 0; j < np; ++j) vec_mul(ra + j * n, ra + j * n, rb + j * n, n, B.prime(j));
    heaan::intt_rows(B, pool, {ra}, np);
    BigPoly out;
    heaan::icrt_poly(B, pool, ra, np, shift, out_bits, out);
    return out;
}

TEST(CudaHeaan, ProductMatchesMultiply) {
    ThreadPool pool(1);
    for (std::size_t n : {std::size_t(64), std::size_t(1024)}) {
        const int log_n = n == 64 ? 6 : 10;
        CrtBasis B(n, 50, 50, 2500);  // 50 primes of 50 bits: products of two 1200-bit polynomials at N <= 2^10
        std::mt19937_64 rng(n);
        for (int kind : {0, 1, 2}) {
            const BigPoly a = sample_poly(n, 1200, rng, kind), b = sample_poly(n, 1200, rng, kind == 1 ? 0 : kind);
            const std::size_t np = B.primes_for(a.bits + b.bits + log_n);
            for (auto [shift, out_bits] : {std::pair{0, 1200}, std::pair{0, 2400}, std::pair{1200, 1200}, std::pair{1000, 1100}}) {
                for (CrtPath path : paths_of(B)) {
                    B.set_path(path);
                    const BigPoly want = heaan::multiply(B, pool, a, b, shift, out_bits);
                    const BigPoly got = emulated_product(B, a, b, np, shift, out_bits, false);
                    ASSERT_TRUE(std::equal(got.data.begin(), got.data.end(), want.data.begin(), want.data.end()))
                        << "n " << n << " kind " << kind << " shift " << shift << " out_bits " << out_bits << " path "
                        << heaan::crt_path_name(path);
                }
            }
            // centered operands (HE Mul's region 1: np from 2 log q + log N - 1), reduced mod q
            const std::size_t npc = B.primes_for(2 * 1200 + log_n - 1);
            const BigPoly want = cpu_centered_product(B, pool, a, b, npc, 0, 1200);
            const BigPoly got = emulated_product(B, a, b, npc, 0, 1200, true);
            ASSERT_TRUE(std::equal(got.data.begin(), got.data.end(), want.data.begin(), want.data.end())) << "centered n " << n << " kind " << kind;
        }
    }
}

}  // namespace
}  // namespace ember
