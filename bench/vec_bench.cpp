// Micro-benchmark of the element-wise kernels and of the RNS base conversion, one thread: a baseline ("old") against
// the dispatched implementations ("new": IFMA where the CPU and the modulus allow it, else AVX-512F, else the
// AVX2 lanes, else the scalar code; EMBER_SIMD=scalar|avx2|avx512|ifma caps that). The baseline of the element-wise kernels is, with --vs old
// (default), the previous scalar implementations reproduced below from the code they replaced, and with
// --vs scalar the current scalar kernels (detail::vec_*_scalar: what runs without AVX-512); vec_mul_const_add and
// vec_sub_mul_const have no previous implementation and are measured against the scalar kernels in either mode.
// Convert: --vs old compares with the per-coefficient conversion reproduced below, --vs scalar with
// detail::base_convert_scalar (the blocked kernel, what EMBER_SIMD=scalar runs).
// vec_add / sub / neg / add_const are measured against the scalar kernels in either mode too.
// vec_dot is measured for each count of --terms (default 3; key switching has 2 * dnum terms, up to 32), and each such
// count adds a record "vec_dot_scalar": the streaming scalar kernel (detail::vec_dot_scalar) against the scalar
// kernel it replaced (baseline "percoeff", reproduced below: every term's word of one coefficient, then the next).
//
//   ember_vec_bench [--n 65536] [--runs 31] [--warmup 3] [--bits 50,60] [--terms 3] [--clock cpu|wall] [--only vec,conv]
//                   [--blocked] [--vs old|scalar]
//
// Prints one JSON line per (kernel, bits) with the median nanoseconds per coefficient of `runs` timed runs of each
// implementation (old and new runs alternate, so both see the same machine load and cache state; --blocked runs
// each implementation back to back instead), the speedup old / new, the baseline, and the path the new code takes
// (the outputs of the two are compared, the program fails when they differ). Convert
// shapes take runs / 2 runs. --clock cpu (default) times with CLOCK_THREAD_CPUTIME_ID, which leaves out the time the
// thread is descheduled on a shared machine; --clock wall uses steady_clock. Convert shapes (9 -> 24 limbs, the
// key-switching case at N = 2^16, 25 Q primes, dnum 3, 8 special primes):
//   modup:   q_0 (60 bits) + 8 Q primes (< 2^50) -> 16 Q primes + 8 special primes (60 bits)
//   moddown: 8 special primes + 1 Q prime -> q_0 + 23 Q primes
//   all50:   9 Q primes -> 15 Q primes (every prime < 2^50)
// each in both modes (centered false / true).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "math/cpu_features.hpp"
#include "math/modarith.hpp"
#include "math/primes.hpp"
#include "math/rns.hpp"
#include "math/vec_ops.hpp"
#include "math/vec_simd.hpp"

using namespace ember;
using namespace ember::bench;

namespace {

// ---- the implementations before this change (scalar, Modulus::mul = 128-bit Barrett with a two-word mu) ----------

void old_vec_mul(u64* out, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    for (std::size_t i = 0; i < n; ++i) out[i] = m.mul(a[i], b[i]);
}
void old_vec_mul_add(u64* acc, const u64* a, const u64* b, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) { u64 s = acc[i] + m.mul(a[i], b[i]); acc[i] = s >= q ? s - q : s; }
}
void old_vec_mul_const(u64* out, const u64* a, const MulConst& c, std::size_t n, const Modulus& m) {
    const u64 q = m.q;
    for (std::size_t i = 0; i < n; ++i) out[i] = mul_shoup(a[i], c.w, c.wp, q);
}
void old_vec_dot(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    for (std::size_t t0 = 0; t0 < terms; t0 += 64) {
        const std::size_t t1 = std::min(terms, t0 + 64);
        for (std::size_t i = 0; i < n; ++i) {
            u128 acc = 0;
            for (std::size_t t = t0; t < t1; ++t) acc += static_cast<u128>(a[t][i]) * b[t][i];
            const u64 r = m.reduce128(acc);
            out[i] = t0 == 0 ? r : m.add(out[i], r);
        }
    }
}
// The scalar vec_dot before the streaming one (math/vec_ops.cpp): per coefficient, one word of every term, 128-bit
// sums reduced with the Barrett64 constants once per dot_barrett_chunk terms (dot_fixed for 1..4 terms: the same loop).
inline u64 percoeff_reduce(u128 x, const detail::Barrett64& br) {
    const u64 q = br.q;
    const u64 xl = static_cast<u64>(x), xh = static_cast<u64>(x >> 64);
    const u64 qh = mulhi64((xh << (64 - br.s)) | (xl >> br.s), br.mu);
    return detail::csub(detail::csub(xl - qh * q, q), q);
}
void percoeff_vec_dot(u64* out, const u64* const* a, const u64* const* b, std::size_t terms, std::size_t n, const Modulus& m) {
    const detail::Barrett64 br(m);
    if (terms == 0) return;
    if (!br.ok) return detail::vec_dot_scalar(out, a, b, terms, n, m);
    const std::size_t chunk = detail::dot_barrett_chunk(m);
    for (std::size_t i = 0; i < n; ++i) {
        u128 x = 0;
        std::size_t used = 0;
        for (std::size_t t = 0; t < terms; ++t) {
            if (used == chunk) { x = percoeff_reduce(x, br); used = 0; }
            x += static_cast<u128>(a[t][i]) * b[t][i];
            ++used;
        }
        out[i] = percoeff_reduce(x, br);
    }
}
void old_convert(const BaseConverter& cv, const u64* const* in, u64* const* out, std::size_t begin, std::size_t end, bool centered) {
    const auto& from = cv.from();
    const auto& to = cv.to();
    const std::size_t k = from.size(), m = to.size();
    constexpr std::size_t B = 64;
    u64 y[64 * B];
    u64 v[B];
    for (std::size_t c0 = begin; c0 < end; c0 += B) {
        const std::size_t nb = std::min(B, end - c0);
        cv.scale_block(in, c0, nb, y, B, v, centered);  // unchanged from the old code but for the zero padding
        for (std::size_t j = 0; j < m; ++j) {
            const Modulus& p = to[j];
            const u64* row = cv.qhat_mod_p[j].data();
            u64* dst = out[j] + c0;
            for (std::size_t t = 0; t < nb; ++t) {
                u128 acc = 0;
                for (std::size_t i = 0; i < k; ++i) acc += static_cast<u128>(y[i * B + t]) * row[i];
                dst[t] = p.reduce128(acc);
            }
            if (centered) {
                const u64 qm = cv.q_mod_p[j];
                for (std::size_t t = 0; t < nb; ++t) dst[t] = p.sub(dst[t], p.mul(v[t], qm));
            }
        }
    }
}

// ---- timing --------------------------------------------------------------------------------------------------------

bool g_cpu_clock = true;

struct Pair {
    double old_ns, new_ns;
};

bool g_blocked = false;

/// Median ns per coefficient of old() and new_() over `runs` runs each: alternating (default; each run follows
/// one of the other implementation, so both start from the same cache state) or, with --blocked, all runs of
/// one implementation back to back (each run finds its own previous output in cache when it fits).
Pair time_pair(const std::function<void()>& old_fn, const std::function<void()>& new_fn, std::size_t n, int runs, int warmup) {
    std::vector<double> a(runs), b(runs);
    auto timed = [&](const std::function<void()>& f) { return time_once(f, g_cpu_clock, static_cast<double>(n)); };
    if (g_blocked) {
        warm_up(old_fn, warmup);
        for (int r = 0; r < runs; ++r) a[r] = timed(old_fn);
        warm_up(new_fn, warmup);
        for (int r = 0; r < runs; ++r) b[r] = timed(new_fn);
    } else {
        warm_up([&] { old_fn(); new_fn(); }, warmup);
        for (int r = 0; r < runs; ++r) { a[r] = timed(old_fn); b[r] = timed(new_fn); }
    }
    return {median(a), median(b)};
}

std::vector<u64> rand_vec(std::size_t n, u64 q, std::mt19937_64& rng) {
    std::uniform_int_distribution<u64> d(0, q - 1);
    std::vector<u64> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

/// The path the dispatched element-wise kernels take for m (the products; the additive ones need no IFMA).
const char* vec_path(const Modulus& m) {
#if defined(__x86_64__)
    if (detail::vec_ifma_supported(m)) return "ifma";
    if (detail::vec_avx512_supported()) return "avx512";
    if (detail::vec_avx2_supported()) return "avx2";
#else
    (void)m;
#endif
    return "scalar";
}

/// One record: the kernel, the fields of `extra` (the case), then the timings.
void emit(const std::string& kernel, const JsonLine& extra, std::size_t n, int runs, const Pair& p, const char* path) {
    JsonLine(/*spaced=*/true)
        .str("kernel", kernel).append(extra).num("n", n).num("runs", runs)
        .str("clock", g_cpu_clock ? "thread_cpu" : "wall").str("order", g_blocked ? "blocked" : "alternating")
        .fixed("old_ns_per_coeff", p.old_ns, 3).fixed("new_ns_per_coeff", p.new_ns, 3).fixed("speedup", p.old_ns / p.new_ns, 2)
        .str("new_path", path)
        .print();
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t n = 65536;
    int runs = 31, warmup = 3;
    std::vector<int> bits_list = {50, 60};
    std::vector<int> terms_list = {3};
    std::string only = "vec,conv";
    bool vs_scalar = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&] { return option_value(argc, argv, i); };
        if (arg == "--n") n = static_cast<std::size_t>(std::atoll(next()));
        else if (arg == "--runs") runs = std::max(1, std::atoi(next()));
        else if (arg == "--warmup") warmup = std::max(0, std::atoi(next()));
        else if (arg == "--bits") bits_list = parse_list(next());
        else if (arg == "--terms") terms_list = parse_list(next());
        else if (arg == "--clock") g_cpu_clock = std::string(next()) != "wall";
        else if (arg == "--only") only = next();
        else if (arg == "--blocked") g_blocked = true;
        else if (arg == "--vs") vs_scalar = std::string(next()) == "scalar";
        else {
            std::fprintf(stderr, "usage: %s [--n 65536] [--runs 31] [--warmup 3] [--bits 50,60] [--terms 3] [--clock cpu|wall] [--only vec,conv] [--blocked] [--vs old|scalar]\n", argv[0]);
            return 2;
        }
    }
    for (int t : terms_list) {
        if (t < 1) { std::fprintf(stderr, "--terms: counts must be positive\n"); return 2; }
    }
    std::mt19937_64 rng(42);

    if (only.find("vec") != std::string::npos) {
        for (int bits : bits_list) {
            // bits 50: the largest NTT prime below 2^50 (IFMA); otherwise the NTT prime nearest 2^bits
            const u64 q = ntt_primes_near(bits, 1, 1 << 17, {}, bits != 50).at(0);
            const Modulus m(q);
            const char* path = vec_path(m);
            auto a = rand_vec(n, q, rng), b = rand_vec(n, q, rng), acc = rand_vec(n, q, rng);
            std::vector<u64> out(n), out2(n);
            const MulConst c(rand_vec(1, q, rng)[0], m);
            const int max_terms = *std::max_element(terms_list.begin(), terms_list.end());
            std::vector<std::vector<u64>> A, Bv;
            std::vector<const u64*> pa, pb;
            for (int t = 0; t < max_terms; ++t) { A.push_back(rand_vec(n, q, rng)); Bv.push_back(rand_vec(n, q, rng)); }
            for (int t = 0; t < max_terms; ++t) { pa.push_back(A[t].data()); pb.push_back(Bv[t].data()); }
            // old(out), new(out2) from the same starting values (the accumulating kernels run as often in both)
            auto run = [&](const std::string& kernel, const JsonLine& extra, const char* baseline,
                           const std::function<void(u64*)>& old_fn, const std::function<void(u64*)>& new_fn) {
                out = acc, out2 = acc;
                emit(kernel, JsonLine(true).num("bits", bits).append(extra).str("baseline", baseline), n, runs,
                     time_pair([&] { old_fn(out.data()); }, [&] { new_fn(out2.data()); }, n, runs, warmup), path);
                if (out != out2) { std::fprintf(stderr, "%s: old and new differ\n", kernel.c_str()); std::exit(1); }
            };
            const char* base = vs_scalar ? "scalar" : "old";
            const JsonLine none(true);
            run("vec_mul", none, base,
                [&](u64* o) { (vs_scalar ? detail::vec_mul_scalar : old_vec_mul)(o, a.data(), b.data(), n, m); },
                [&](u64* o) { vec_mul(o, a.data(), b.data(), n, m); });
            run("vec_mul_add", none, base,
                [&](u64* o) { (vs_scalar ? detail::vec_mul_add_scalar : old_vec_mul_add)(o, a.data(), b.data(), n, m); },
                [&](u64* o) { vec_mul_add(o, a.data(), b.data(), n, m); });
            for (int terms : terms_list) {
                const std::size_t T = static_cast<std::size_t>(terms);
                run("vec_dot", JsonLine(true).num("terms", terms), base,
                    [&](u64* o) { (vs_scalar ? detail::vec_dot_scalar : old_vec_dot)(o, pa.data(), pb.data(), T, n, m); },
                    [&](u64* o) { vec_dot(o, pa.data(), pb.data(), T, n, m); });
            }
            run("vec_mul_const", none, base,
                [&](u64* o) { (vs_scalar ? detail::vec_mul_const_scalar : old_vec_mul_const)(o, a.data(), c, n, m); },
                [&](u64* o) { vec_mul_const(o, a.data(), c, n, m); });
            run("vec_mul_const_add", none, "scalar",
                [&](u64* o) { detail::vec_mul_const_add_scalar(o, a.data(), c, n, m); },
                [&](u64* o) { vec_mul_const_add(o, a.data(), c, n, m); });
            run("vec_sub_mul_const", none, "scalar",
                [&](u64* o) { detail::vec_sub_mul_const_scalar(o, a.data(), b.data(), c, n, m); },
                [&](u64* o) { vec_sub_mul_const(o, a.data(), b.data(), c, n, m); });
            // the additive kernels against the scalar ones in either mode (unchanged since the first implementation)
            run("vec_add", none, "scalar", [&](u64* o) { detail::vec_add_scalar(o, a.data(), b.data(), n, m); },
                [&](u64* o) { vec_add(o, a.data(), b.data(), n, m); });
            run("vec_sub", none, "scalar", [&](u64* o) { detail::vec_sub_scalar(o, a.data(), b.data(), n, m); },
                [&](u64* o) { vec_sub(o, a.data(), b.data(), n, m); });
            run("vec_neg", none, "scalar", [&](u64* o) { detail::vec_neg_scalar(o, a.data(), n, m); },
                [&](u64* o) { vec_neg(o, a.data(), n, m); });
            run("vec_add_const", none, "scalar", [&](u64* o) { detail::vec_add_const_scalar(o, a.data(), c.w, n, m); },
                [&](u64* o) { vec_add_const(o, a.data(), c.w, n, m); });
            // the streaming scalar dot against the per-coefficient one it replaced (new_path: scalar whatever the CPU)
            for (int terms : terms_list) {
                const std::size_t T = static_cast<std::size_t>(terms);
                out = acc, out2 = acc;
                emit("vec_dot_scalar", JsonLine(true).num("bits", bits).num("terms", terms).str("baseline", "percoeff"), n, runs,
                     time_pair([&] { percoeff_vec_dot(out.data(), pa.data(), pb.data(), T, n, m); },
                               [&] { detail::vec_dot_scalar(out2.data(), pa.data(), pb.data(), T, n, m); }, n, runs, warmup),
                     "scalar");
                if (out != out2) { std::fprintf(stderr, "vec_dot_scalar: percoeff and streaming differ\n"); std::exit(1); }
            }
        }
    }

    if (only.find("conv") != std::string::npos) {
        const std::vector<u64> q50 = ntt_primes_near(50, 24, 1 << 17, {}, false);
        const std::vector<u64> p60 = ntt_primes_near(60, 9, 1 << 17, q50);  // q_0 and 8 special primes
        auto mods = [](const std::vector<u64>& qs, std::size_t b, std::size_t e) {
            std::vector<Modulus> r;
            for (std::size_t i = b; i < e; ++i) r.emplace_back(qs[i]);
            return r;
        };
        auto cat = [](std::vector<Modulus> a, const std::vector<Modulus>& b) { a.insert(a.end(), b.begin(), b.end()); return a; };
        struct Shape {
            const char* name;
            BaseConverter conv;
        };
        std::vector<Shape> shapes;
        shapes.push_back({"modup", BaseConverter(cat(mods(p60, 0, 1), mods(q50, 0, 8)), cat(mods(q50, 8, 24), mods(p60, 1, 9)))});
        shapes.push_back({"moddown", BaseConverter(cat(mods(p60, 1, 9), mods(q50, 0, 1)), cat(mods(p60, 0, 1), mods(q50, 1, 24)))});
        shapes.push_back({"all50", BaseConverter(mods(q50, 0, 9), mods(q50, 9, 24))});
        for (const Shape& s : shapes) {
            const BaseConverter& cv = s.conv;
            const std::size_t k = cv.from().size(), m = cv.to().size();
            std::vector<std::vector<u64>> in(k), o1(m, std::vector<u64>(n)), o2(m, std::vector<u64>(n));
            std::vector<const u64*> ip;
            std::vector<u64*> p1, p2;
            for (std::size_t i = 0; i < k; ++i) { in[i] = rand_vec(n, cv.from()[i].q, rng); ip.push_back(in[i].data()); }
            for (std::size_t j = 0; j < m; ++j) { p1.push_back(o1[j].data()); p2.push_back(o2[j].data()); }
            const char* path = detail::base_convert_ifma_supported(cv)   ? "ifma"
                               : detail::base_convert_avx2_supported(cv) ? "avx2"
                                                                         : "scalar";
            for (bool centered : {false, true}) {
                const JsonLine extra = JsonLine(true).str("shape", s.name).num("k", k).num("m", m).boolean("centered", centered)
                                           .str("baseline", vs_scalar ? "scalar" : "old");
                const int cruns = std::max(1, runs / 2);
                emit("convert", extra, n, cruns,
                     time_pair([&] {
                                   if (vs_scalar) detail::base_convert_scalar(cv, ip.data(), p1.data(), 0, n, centered);
                                   else old_convert(cv, ip.data(), p1.data(), 0, n, centered);
                               },
                               [&] { cv.convert(ip.data(), p2.data(), 0, n, centered); }, n, cruns, 1), path);
                if (o1 != o2) { std::fprintf(stderr, "convert %s: old and new differ\n", s.name); return 1; }
            }
        }
    }
    return 0;
}
