#include "trace/peak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "math/cpu_features.hpp"
#include "math/kernel_paths.hpp"
#include "math/modarith.hpp"
#include "math/primes.hpp"
#include "math/vec_ops.hpp"
#include "trace/peak_kernels.hpp"

namespace ember::trace {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Free {
    void operator()(u64* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<u64[], Free>;

Buffer alloc_words(std::size_t words) {
    const std::size_t bytes = std::max<std::size_t>((words * sizeof(u64) + 63) / 64 * 64, 64);
    Buffer p(static_cast<u64*>(std::aligned_alloc(64, bytes)));
    if (!p) throw std::bad_alloc();
    return p;
}

/// Runs body(t) on `threads` threads released together; wall seconds from the release to the last finish.
double run_threads(int threads, const std::function<void(int)>& body) {
    if (threads == 1) {
        const auto t0 = Clock::now();
        body(0);
        return seconds_since(t0);
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            body(t);
        });
    while (ready.load() < threads) std::this_thread::yield();
    const auto t0 = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    return seconds_since(t0);
}

/// sum_k a[k] b[k] in four two-word sums (the scalar CRT / iCRT inner product): n word products. noipa: the
/// compiler may not see that it is pure and hoist the repeated calls out of the timing loop.
__attribute__((noipa)) u64 mul_acc(const u64* a, const u64* b, std::size_t n) {
    u128 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (std::size_t k = 0; k + 4 <= n; k += 4) {
        s0 += static_cast<u128>(a[k]) * b[k];
        s1 += static_cast<u128>(a[k + 1]) * b[k + 1];
        s2 += static_cast<u128>(a[k + 2]) * b[k + 2];
        s3 += static_cast<u128>(a[k + 3]) * b[k + 3];
    }
    const u128 s = s0 + s1 + s2 + s3;
    return static_cast<u64>(s) ^ static_cast<u64>(s >> 64);
}

/// Operations per second of `work` (ops_per_rep operations per repetition), one thread and `threads` threads, each
/// thread on its own L1-resident operands; repetitions sized for about 40 ms per trial, best of 3 trials.
template <class Work>
std::pair<double, double> rate(int threads, std::size_t words, double ops_per_rep, const Modulus& m, Work work) {
    std::vector<Buffer> a, b;
    for (int t = 0; t < threads; ++t) {
        a.push_back(alloc_words(words));
        b.push_back(alloc_words(words));
        for (std::size_t i = 0; i < words; ++i) {
            a.back()[i] = (i * 0x9E3779B97F4A7C15ull + 1 + static_cast<u64>(t)) % m.q;
            b.back()[i] = (i * 0xC2B2AE3D27D4EB4Full + 7) % m.q;
        }
    }
    std::vector<u64> sink(static_cast<std::size_t>(threads), 0);
    auto body = [&](std::size_t reps) {
        return [&, reps](int t) {
            u64 s = 0;
            for (std::size_t r = 0; r < reps; ++r) {
                s ^= work(a[static_cast<std::size_t>(t)].get(), b[static_cast<std::size_t>(t)].get());
                asm volatile("" : : : "memory");  // every repetition reads the operands again
            }
            sink[static_cast<std::size_t>(t)] ^= s;
        };
    };
    std::size_t reps = 16;
    for (;;) {  // calibrate on one thread: ~40 ms per trial
        const double s = run_threads(1, body(reps));
        if (s >= 0.01 || reps > (std::size_t(1) << 40)) {
            reps = std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(reps) * 0.04 / std::max(s, 1e-9)));
            break;
        }
        reps *= 4;
    }
    double one = 0, all = 0;
    for (int trial = 0; trial < 3; ++trial) {
        one = std::max(one, ops_per_rep * static_cast<double>(reps) / run_threads(1, body(reps)));
        if (threads > 1) all = std::max(all, ops_per_rep * static_cast<double>(reps) * threads / run_threads(threads, body(reps)));
    }
    if (threads == 1) all = one;
    volatile u64 keep = 0;
    for (u64 s : sink) keep = keep ^ s;
    (void)keep;
    return {one, all};
}

/// (read + written) bytes per second of memcpy of `bytes` split over `threads` threads: best of 4 passes after one
/// untimed pass.
double copy_rate(int threads, u64* dst, const u64* src, std::size_t words) {
    auto body = [&](int t) {
        // slices of whole cache lines
        const std::size_t lines = words / 8, per = (lines + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
        const std::size_t w0 = std::min(words, static_cast<std::size_t>(t) * per * 8), w1 = std::min(words, w0 + per * 8);
        if (w1 > w0) std::memcpy(dst + w0, src + w0, (w1 - w0) * sizeof(u64));
    };
    run_threads(threads, body);
    double best = 0;
    for (int pass = 0; pass < 4; ++pass) best = std::max(best, 2.0 * static_cast<double>(words * sizeof(u64)) / run_threads(threads, body));
    return best;
}

}  // namespace

MachinePeak machine_peak(int threads, std::size_t copy_mib, std::size_t mul_words, int prime_bits) {
    if (threads < 1) throw std::invalid_argument("machine_peak: threads must be at least 1, got " + std::to_string(threads));
    if (mul_words < 8 || mul_words % 8) throw std::invalid_argument("machine_peak: mul_words must be a positive multiple of 8, got " + std::to_string(mul_words));
    if (copy_mib < 1) throw std::invalid_argument("machine_peak: copy_mib must be at least 1");
    const auto t0 = Clock::now();
    MachinePeak p;
    p.threads = threads;
    p.mul_words = mul_words;
    const Modulus m(ntt_primes_near(prime_bits, 1, u64(1) << 17, {}, /*both_sides=*/false).front());
    p.prime = m.q;
    p.mul_path = elementwise_path_for(m.q);

    const double n = static_cast<double>(mul_words);
    std::tie(p.mulmod_per_s_thread, p.mulmod_per_s) = rate(threads, mul_words, n, m, [&](u64* a, const u64* b) {
        vec_mul(a, a, b, mul_words, m);
        return a[0];
    });
    std::tie(p.word_mul_per_s_thread, p.word_mul_per_s) =
        rate(threads, mul_words, n, m, [&](u64* a, const u64* b) { return mul_acc(a, b, mul_words); });
#if defined(__x86_64__)
    if (cpu_features().use_avx2()) {
        p.lane_mul_path = "avx2";
        std::tie(p.lane_mul_per_s_thread, p.lane_mul_per_s) =
            rate(threads, mul_words, static_cast<double>(mul_words / 16 * 16), m,
                 [&](u64* a, const u64* b) { return detail::lane_mul_acc_avx2(a, b, mul_words); });
    }
#endif

    const std::size_t words = copy_mib * (std::size_t(1) << 20) / sizeof(u64);
    p.copy_bytes = words * sizeof(u64);
    Buffer src = alloc_words(words), dst = alloc_words(words);
    // first touch by the threads that copy (their pages), outside the timing
    run_threads(threads, [&](int t) {
        const std::size_t per = (words + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
        const std::size_t w0 = std::min(words, static_cast<std::size_t>(t) * per), w1 = std::min(words, w0 + per);
        for (std::size_t i = w0; i < w1; ++i) src[i] = i;
        if (w1 > w0) std::memset(dst.get() + w0, 0, (w1 - w0) * sizeof(u64));
    });
    p.copy_bytes_per_s_thread = copy_rate(1, dst.get(), src.get(), words);
    p.copy_bytes_per_s = threads > 1 ? copy_rate(threads, dst.get(), src.get(), words) : p.copy_bytes_per_s_thread;
    p.seconds = seconds_since(t0);
    return p;
}

}  // namespace ember::trace
