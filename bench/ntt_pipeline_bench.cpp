// NTT in a pipeline-like setting: many limbs over many primes, each transformed once per round, vs the
// hot loop of ember_ntt_bench (same array, same tables, everything in L2).
//
//   ember_ntt_pipeline_bench [--log-n 16] [--rounds 30] [--threads 1] [--q 25] [--p 8] [--inverse 0]
//                            [--prefetch 1] [--mode hot|cold|cold_data|cold_tab] [--clock cpu|wall]
//                            [--twiddles auto|full|compact]
//
// Limbs/primes are laid out like the default CkksParams: one 60-bit q0, (q-1) primes below 2^50 (IFMA path),
// then p 60-bit special primes (AVX-512 path). Before each round every limb is rewritten (as base conversion
// does), then the limbs are transformed in sequence (threads > 1: limbs handed out by an atomic counter,
// like ThreadPool::parallel_for; each thread claims its next limb before it starts the current one and, with
// --prefetch 1, hands it to ntt_forward(a, t, next, next_t) as the CPU backend does). Modes:
//   hot        one limb per thread, one table per path, repeated       (ember_ntt_bench)
//   cold       every limb with its own prime (the pipeline case)       (data and tables from L3 or DRAM)
//   cold_data  every limb, all with the same prime per path            (tables hot)
//   cold_tab   one limb per thread, every prime                        (data hot)
// --twiddles forces one twiddle layout of the vector kernels (default: the one ntt_forward picks, which is the
// full tables when the previous transform on the thread used the same tables, else the compact ones).
// Prints one JSON line per mode with the median (and the minimum) over rounds of the mean microseconds per
// transform (thread CPU time by default), split by path (ifma = primes < 2^50, avx512 = 60-bit primes), and of
// the whole round's wall time.
//
// Build (no CMake target: tests/cpp/CMakeLists.txt is not ours to change; add -DEMBER_NO_PREFETCH_API to build
// against a library without the prefetching entry points):
//   g++ -O3 -std=c++20 -I cpp bench/ntt_pipeline_bench.cpp build-perf/libember_core.a -lcrypto -lpthread
//     -o build-perf/ember_ntt_pipeline_bench
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "math/ntt.hpp"
#include "math/primes.hpp"
#ifndef EMBER_NO_PREFETCH_API
#include "math/ntt_simd.hpp"
#endif

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t k = v.size();
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/// Thread CPU time (--clock cpu, the default: the machine is shared, and time spent descheduled is not the
/// kernel's) or wall time (--clock wall), in microseconds.
bool g_cpu_clock = true;
double now_us() {
    if (!g_cpu_clock) return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

struct Job {
    u64* data;
    const NttTables* tb;
    bool ifma;
};

}  // namespace

int main(int argc, char** argv) {
    int log_n = 16, rounds = 30, threads = 1, nq = 25, np = 8, inverse = 0, prefetch = 1;
    std::string only, twiddles = "auto";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (a == "--log-n") log_n = v;
        else if (a == "--rounds") rounds = v;
        else if (a == "--threads") threads = v;
        else if (a == "--q") nq = v;
        else if (a == "--p") np = v;
        else if (a == "--inverse") inverse = v;
        else if (a == "--prefetch") prefetch = v;
        else if (a == "--mode") only = argv[i + 1];
        else if (a == "--clock") g_cpu_clock = std::string(argv[i + 1]) != "wall";
        else if (a == "--twiddles") twiddles = argv[i + 1];
    }
    const std::size_t n = std::size_t(1) << log_n;
    const u64 two_n = 2 * n;
    std::vector<u64> scale = ntt_primes_near(50, nq - 1, two_n, {}, false);
    std::vector<u64> primes = ntt_primes_near(60, 1, two_n, scale, true);
    primes.insert(primes.end(), scale.begin(), scale.end());
    const auto sp = ntt_primes_near(60, np, two_n, primes, true);
    primes.insert(primes.end(), sp.begin(), sp.end());
    const std::size_t L = primes.size();

    std::vector<NttTables> tabs;
    tabs.reserve(L);
    for (u64 q : primes) tabs.emplace_back(n, Modulus(q));
    u64* pool = static_cast<u64*>(std::aligned_alloc(64, L * n * sizeof(u64)));
    std::mt19937_64 rng(1);
    // The limb and tables the hot / cold_data / cold_tab modes reuse: the first 50-bit prime's and q0's.
    const std::size_t ifma_ref = 1, avx_ref = 0;
    auto refill = [&](std::size_t cnt) {  // rewrite the limbs (as base conversion does); values < q
        for (std::size_t l = 0; l < cnt; ++l) {
            // the two reused limbs meet other primes too: keep them below every prime (all are above 2^49)
            const u64 q = l == ifma_ref || l == avx_ref ? u64(1) << 49 : tabs[l].mod.q;
            u64* p = pool + l * n;
            u64 x = rng();
            for (std::size_t i = 0; i < n; ++i) { x = x * 6364136223846793005ULL + 1442695040888963407ULL; p[i] = (x >> 4) % q; }
        }
    };
    refill(L);
    // with --prefetch 1 (and a library that has the 4-argument entry points) each thread claims its next job
    // before it starts the current one and passes it on, as the CPU backend does
    auto fn = [&](const Job& j, const Job* nx) {
#ifdef EMBER_NO_PREFETCH_API
        (void)nx;
        inverse ? ntt_inverse(j.data, *j.tb) : ntt_forward(j.data, *j.tb);
#else
        const u64* nd = nx && prefetch ? nx->data : nullptr;
        const NttTables* nt = nx && prefetch ? nx->tb : nullptr;
        if (twiddles == "auto") {
            inverse ? ntt_inverse(j.data, *j.tb, nd, nt) : ntt_forward(j.data, *j.tb, nd, nt);
            return;
        }
#if defined(__x86_64__)
        // a forced twiddle layout: straight to the kernel of the path ntt_forward would take
        const detail::Twiddles tw = twiddles == "full" ? detail::Twiddles::kFull : detail::Twiddles::kCompact;
        detail::NttPrefetch pf(nd, nd ? nt->n * sizeof(u64) : 0);
        detail::NttPrefetch* ppf = nd ? &pf : nullptr;
        const bool ifma = std::strcmp(ntt_path(*j.tb), "ifma") == 0;
        if (inverse) ifma ? detail::ntt_inverse_ifma(j.data, *j.tb, ppf, tw) : detail::ntt_inverse_avx512(j.data, *j.tb, ppf, tw);
        else ifma ? detail::ntt_forward_ifma(j.data, *j.tb, ppf, tw) : detail::ntt_forward_avx512(j.data, *j.tb, ppf, tw);
#else
        // no vector kernels outside x86-64 (the scalar path has one twiddle layout): --twiddles is ignored
        inverse ? ntt_inverse(j.data, *j.tb, nd, nt) : ntt_forward(j.data, *j.tb, nd, nt);
#endif
#endif
    };

    auto run_mode = [&](const std::string& mode) {
        std::vector<Job> jobs;
        for (std::size_t l = 0; l < L; ++l) {
            const bool ifma = primes[l] < (u64(1) << 50);
            if (mode == "hot") jobs.push_back({nullptr, &tabs[ifma ? ifma_ref : avx_ref], ifma});  // own buffer
            else if (mode == "cold") jobs.push_back({pool + l * n, &tabs[l], ifma});
            else if (mode == "cold_data") jobs.push_back({pool + l * n, &tabs[ifma ? ifma_ref : avx_ref], ifma});
            else jobs.push_back({nullptr, &tabs[l], ifma});  // cold_tab: each thread's own (hot) array
        }
        if (mode == "hot") {  // same limb repeatedly: group by path so it stays hot
            std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.ifma > b.ifma; });
        }
        const std::vector<u64> hot_buf(pool + ifma_ref * n, pool + (ifma_ref + 1) * n);  // values < every q
        std::vector<double> ifma_us, avx_us, wall_us;
        for (int r = 0; r < rounds + 2; ++r) {
            refill(L);
            std::vector<double> t(jobs.size());
            std::atomic<std::size_t> next{0};
            auto worker = [&] {
                // hot mode: a private, 64-byte aligned array per thread
                u64* own = static_cast<u64*>(std::aligned_alloc(64, n * sizeof(u64)));
                std::copy(hot_buf.begin(), hot_buf.end(), own);
                std::size_t i = next.fetch_add(1);
                while (i < jobs.size()) {
                    const std::size_t k = next.fetch_add(1);
                    const double t0 = now_us();
                    Job j = jobs[i];
                    if (!j.data) j.data = own;
                    Job nx{};
                    if (k < jobs.size()) nx = jobs[k], nx.data = nx.data ? nx.data : own;
                    fn(j, k < jobs.size() ? &nx : nullptr);
                    t[i] = now_us() - t0;
                    i = k;
                }
                std::free(own);
            };
            const auto w0 = Clock::now();
            std::vector<std::thread> ws;
            for (int k = 1; k < threads; ++k) ws.emplace_back(worker);
            worker();
            for (auto& w : ws) w.join();
            const double wall = std::chrono::duration<double, std::micro>(Clock::now() - w0).count();
            if (r < 2) continue;  // warm-up rounds
            double si = 0, sa = 0;
            int ci = 0, ca = 0;
            for (std::size_t i = 0; i < jobs.size(); ++i) (jobs[i].ifma ? (si += t[i], ++ci) : (sa += t[i], ++ca));
            ifma_us.push_back(ci ? si / ci : 0);
            avx_us.push_back(ca ? sa / ca : 0);
            wall_us.push_back(wall);
        }
        auto mn = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
        std::printf("{\"mode\":\"%s\",\"twiddles\":\"%s\",\"dir\":\"%s\",\"log_n\":%d,\"threads\":%d,\"limbs\":%zu,\"ifma_us\":%.1f,"
                    "\"avx512_us\":%.1f,\"round_us\":%.0f,\"ifma_min_us\":%.1f,\"avx512_min_us\":%.1f,"
                    "\"round_min_us\":%.0f}\n",
                    mode.c_str(), twiddles.c_str(), inverse ? "inv" : "fwd", log_n, threads, L, median(ifma_us), median(avx_us),
                    median(wall_us), mn(ifma_us), mn(avx_us), mn(wall_us));
        std::fflush(stdout);
    };
    for (const char* m : {"hot", "cold", "cold_data", "cold_tab"})
        if (only.empty() || only == m) run_mode(m);
    std::free(pool);
    return 0;
}
