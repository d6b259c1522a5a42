// The pass schedule shared by the vector NTT kernels (math/ntt_ifma.cpp, ntt_avx512.cpp, ntt_avx2.cpp,
// ntt_fma_avx2.cpp): which stages
// are fused into radix-4 passes, which run inside 32 KiB L1 blocks (depth first) and which sweep the whole
// array, where the in-register stages go, and how the next limb's prefetch is paced. The kernels differ in
// their butterflies only; each file instantiates these drivers with its own kernel set K (a struct in its
// anonymous namespace, so every instantiation stays local to the file compiled with its instruction set):
//   K::Consts, K::LastConsts        per-prime vector constants (LastConsts(tb): the last inverse stage's)
//   K::kTailGroups                  16-coefficient groups per interleaved in-register step
//   K::fwd2<First>, K::fwd4<First>  forward radix-2 / radix-4 passes over blocks [i0, i1) (First: the transform's
//                                   first pass over those blocks, whose inputs are the caller's words in [0, q))
//   K::fwd_tail<First>              the forward in-register stages on groups [g0, g1) (First: N = 16, no pass before)
//   K::inv_head<Last>               the inverse in-register stages (Last: they are all the stages, N = 16)
//   K::inv2<Last, Pf>, K::inv4<...> inverse passes (Last: the last stage, with N^-1; Pf: prefetch steps)
// Plain C++: included by files compiled with different -m flags.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "math/ntt_simd.hpp"

namespace ember::detail::ntt_schedule {

constexpr std::size_t kBlock = 4096;  // coefficients per L1 block (32 KiB)

/// A pass: radix 2 or 4 starting at distance t; span = coefficients per independent block.
struct Pass {
    std::size_t t;
    int radix;
    std::size_t span;
};

/// Forward transform of a (N >= 16; the caller handles smaller N) with twiddles w and companions wp (words, or
/// whatever element type T the kernels read their twiddles as).
template <class K, class T>
void forward(u64* a, const NttTables& tb, const T* w, const T* wp, NttPrefetch* pf, Twiddles tw) {
    const std::size_t n = tb.n;
    const typename K::Consts k(tb.mod.q);
    // stages of distance n/2 .. 16, widest first: one radix-2 if their count is odd, then radix-4 pairs
    std::array<Pass, 16> passes{};
    int np = 0;
    std::size_t t = n / 2;
    if ((tb.log_n - 4) & 1) { passes[np++] = {t, 2, 2 * t}; t /= 2; }
    for (; t >= 32; t /= 4) passes[np++] = {t, 4, 2 * t};

    const std::size_t blk = std::min(n, kBlock);
    if (pf) pf->plan(n / (16 * K::kTailGroups));  // one step per interleaved step of the in-register stages
    auto run = [&](int r, std::size_t i0, std::size_t i1) {
        const Pass& ps = passes[r];
        if (r == 0) {
            if (ps.radix == 2) K::template fwd2<true>(a, n, ps.t, i0, i1, w, wp, k);
            else K::template fwd4<true>(a, n, ps.t, i0, i1, w, wp, k);
        } else if (ps.radix == 2) {
            K::template fwd2<false>(a, n, ps.t, i0, i1, w, wp, k);
        } else {
            K::template fwd4<false>(a, n, ps.t, i0, i1, w, wp, k);
        }
    };
    int p = 0;
    for (; p < np && passes[p].span > blk; ++p) run(p, 0, n / passes[p].span);  // wide passes: the whole array
    for (std::size_t b = 0; b < n; b += blk) {  // the rest depth first, one L1 block at a time
        for (int r = p; r < np; ++r) run(r, b / passes[r].span, (b + blk) / passes[r].span);
        if (np == 0) K::template fwd_tail<true>(a, b / 16, (b + blk) / 16, tb, k, pf, tw);
        else K::template fwd_tail<false>(a, b / 16, (b + blk) / 16, tb, k, pf, tw);
    }
}

/// Inverse transform of a (N >= 16; the caller handles smaller N).
template <class K, class T>
void inverse(u64* a, const NttTables& tb, const T* w, const T* wp, NttPrefetch* pf, Twiddles tw) {
    const std::size_t n = tb.n;
    const typename K::Consts k(tb.mod.q);
    const typename K::LastConsts lc(tb);
    if (n == 16) { K::template inv_head<true>(a, 0, 1, tb, k, lc, tw); return; }

    // stages of distance 16 .. n/2, narrowest first: one radix-2 if their count is odd, then radix-4 pairs
    std::array<Pass, 16> passes{};
    int np = 0;
    std::size_t t = 16;
    if ((tb.log_n - 4) & 1) { passes[np++] = {t, 2, 2 * t}; t *= 2; }
    for (; t < n / 2; t *= 4) passes[np++] = {t, 4, 4 * t};

    auto run = [&](const Pass& ps, std::size_t i0, std::size_t i1, bool last, NttPrefetch* f) {
        if (f) {
            if (ps.radix == 2) {
                if (last) K::template inv2<true, true>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
                else K::template inv2<false, true>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
            } else {
                if (last) K::template inv4<true, true>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
                else K::template inv4<false, true>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
            }
        } else if (ps.radix == 2) {
            if (last) K::template inv2<true, false>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
            else K::template inv2<false, false>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
        } else {
            if (last) K::template inv4<true, false>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
            else K::template inv4<false, false>(a, n, ps.t, i0, i1, w, wp, k, lc, f);
        }
    };
    const std::size_t blk = std::min(n, kBlock);
    int p = 0;
    while (p < np && passes[p].span <= blk) ++p;  // passes [0, p) run inside L1 blocks
    // the wide passes at the end work on data in L2: prefetch for the next transform there (one step per
    // inner iteration: n/16 per radix-2 pass, n/64 per radix-4 pass)
    if (pf) {
        std::size_t steps = 0;
        for (int r = p; r < np; ++r) steps += passes[r].radix == 2 ? n / 16 : n / 64;
        pf->plan(steps);
    }
    for (std::size_t b = 0; b < n; b += blk) {
        K::template inv_head<false>(a, b / 16, (b + blk) / 16, tb, k, lc, tw);
        for (int r = 0; r < p; ++r)
            run(passes[r], b / passes[r].span, (b + blk) / passes[r].span, r == np - 1, nullptr);
    }
    for (int r = p; r < np; ++r) run(passes[r], 0, n / passes[r].span, r == np - 1, pf);
}

}  // namespace ember::detail::ntt_schedule
