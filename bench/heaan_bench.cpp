// HE Mul of the non-RNS HEAAN scheme (paper 000) without Python: the median time and the per-function breakdown
// (Table VII) from the trace layer, one JSON line. `ember bench heaan-mul` is the usual entry point (same
// measurement, same fields); this driver is for profilers.
//
//   heaan_bench [--log-n 16] [--log-q 1200] [--log-p 30] [--threads 2] [--runs 10] [--prime-bits 50] [--scalar]
//
// --scalar forces the portable CRT / iCRT kernels; --prime-bits 57..60 takes 60-bit-class primes (AVX-512F NTT,
// scalar CRT / iCRT): the prime-size comparison of the notes. Build (not part of CMake):
//   g++ -O3 -std=c++20 -Icpp bench/heaan_bench.cpp build/libember_core.a -lcrypto -lpthread
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "heaan/context.hpp"
#include "trace/trace.hpp"

using namespace ember;
using namespace ember::heaan;

int main(int argc, char** argv) {
    Params p;
    int threads = 2, runs = 10;
    bool scalar = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--log-n") p.log_n = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--log-q") p.log_q = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--log-p") p.log_p = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--threads") threads = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--runs") runs = std::max(1, std::atoi(bench::option_value(argc, argv, i)));
        else if (a == "--prime-bits") p.prime_bits = std::atoi(bench::option_value(argc, argv, i));
        else if (a == "--scalar") scalar = true;
        else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); return 2; }
    }
    p.insecure = true;
    Context ctx(p, threads);
    if (scalar) ctx.basis_mut().set_ifma(false);
    auto sk = ctx.gen_secret_key();
    auto pk = ctx.gen_public_key(*sk);
    auto evk = ctx.gen_mult_key(*sk);
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<cplx> x(p.n() / 2), y(p.n() / 2);
    for (std::size_t i = 0; i < x.size(); ++i) { x[i] = u(rng); y[i] = u(rng); }
    const Ciphertext cx = ctx.encrypt(x, *pk), cy = ctx.encrypt(y, *pk);
    Ciphertext r = ctx.mul(cx, cy, *evk);  // warm-up: iCRT tables, scratch

    std::vector<double> ms, cpu_ms;
    std::map<std::string, double> ns;  // per trace kernel, summed over the runs
    for (int k = 0; k < runs; ++k) {
        trace::reset();
        trace::enable();
        const double c0 = bench::now_ns(true), t0 = bench::now_ns(false);
        r = ctx.mul(cx, cy, *evk);
        ms.push_back((bench::now_ns(false) - t0) / 1e6);
        cpu_ms.push_back((bench::now_ns(true) - c0) / 1e6);  // this thread only
        trace::disable();
        for (auto& [name, c] : trace::snapshot()) ns[name] += static_cast<double>(c.ns);
    }
    const auto dec = ctx.decrypt(ctx.rescale(r), *sk);
    double err = 0;
    for (std::size_t i = 0; i < dec.size(); ++i) err = std::max(err, std::abs(dec[i] - x[i] * y[i]));

    // kernel times are summed over the threads: the five functions are scaled to the wall time of heaan_mul
    const char* fns[][2] = {{"CRT", "heaan_crt"}, {"NTT", "heaan_ntt"}, {"iNTT", "heaan_intt"}, {"iCRT", "heaan_icrt"}, {"extra", "heaan_extra"}};
    double cpu = 0;
    for (auto& f : fns) cpu += ns[f[1]];
    const double scale = cpu > 0 ? ns["heaan_mul"] / cpu : 0;
    const bench::Stats st = bench::stats(ms);
    bench::JsonLine line(false), brk(false), cpu_line(false);
    for (auto& f : fns) {
        brk.fixed(f[0], ns[f[1]] * scale / runs / 1e6, 2);
        cpu_line.fixed(f[0], ns[f[1]] / runs / 1e6, 2);
    }
    brk.fixed("total", ns["heaan_mul"] / runs / 1e6, 2);
    line.str("op", "heaan-mul").num("log_n", p.log_n).num("log_q", p.log_q).num("log_p", p.log_p).num("threads", threads)
        .str("backend", "cpu").num("runs", runs).fixed("median_ms", st.median, 2).fixed("min_ms", st.min, 2).fixed("max_ms", st.max, 2)
        .fixed("precision_bits", -std::log2(err), 2).num("prime_bits", p.prime_bits).boolean("ifma", ctx.basis().ifma())
        .str("crt_path", heaan::crt_path_name(ctx.basis().path()))
        .num("np_region1", ctx.primes_region1(p.log_q)).num("np_region2", ctx.primes_region2(p.log_q))
        .fixed("caller_cpu_ms", bench::median(cpu_ms), 2);
    std::printf("%s", line.text().substr(0, line.text().size() - 1).c_str());
    std::printf(",\"breakdown_ms\":%s,\"cpu_ms\":%s}\n", brk.text().c_str(), cpu_line.text().c_str());
    return 0;
}
