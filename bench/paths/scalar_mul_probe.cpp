// Issue 30's question for the scalar path: how far is it from the integer multiplier's floor, and can a floating-point
// quotient estimate take work off that multiplier? Times, on one thread, in ns per product / per butterfly:
//   * "mulq": 64 x 64 -> 128-bit products accumulated in four independent 128-bit sums (the scalar base conversion's
//     inner loop), against "imul": 64 x 64 -> 64-bit products in four independent sums;
//   * radix-2 butterflies x + w y, x - w y over 4096 coefficients with the product w y mod q computed
//       "shoup": Shoup's product (two imul and one mul, the scalar NTT's),
//       "x87":   quotient round(y w / q) from the x87 unit's 64-bit mantissa (fild, fmul, fistp), then two imul,
//       "sse2":  quotient from a double (cvtsi2sd, mulsd, cvtsd2si), then two imul.
// The butterfly outputs are not checked for exactness (the point is the cost): a throwaway question, kept so that the
// figures in bench/paths/README.md can be rerun. Prints one JSON line per round. Build and run (x86-64):
//   g++ -O2 -fno-math-errno -std=c++20 bench/paths/scalar_mul_probe.cpp -o /tmp/scalar_mul_probe && /tmp/scalar_mul_probe
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

using u64 = std::uint64_t;
using u128 = unsigned __int128;

namespace {

__attribute__((noinline)) u64 sum_mulq(const u64* a, const u64* c, std::size_t n, int reps) {
    u128 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int r = 0; r < reps; ++r)
        for (std::size_t i = 0; i < n; i += 2) {
            s0 += static_cast<u128>(a[i]) * c[0];
            s1 += static_cast<u128>(a[i + 1]) * c[0];
            s2 += static_cast<u128>(a[i]) * c[1];
            s3 += static_cast<u128>(a[i + 1]) * c[1];
        }
    return static_cast<u64>(s0 ^ s1 ^ s2 ^ s3 ^ ((s0 ^ s3) >> 64));
}

__attribute__((noinline)) u64 sum_imul(const u64* a, const u64* c, std::size_t n, int reps) {
    u64 s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int r = 0; r < reps; ++r)
        for (std::size_t i = 0; i < n; i += 2) {
            s0 += a[i] * c[0];
            s1 += a[i + 1] * c[0];
            s2 += a[i] * c[1];
            s3 += a[i + 1] * c[1];
        }
    return s0 ^ s1 ^ s2 ^ s3;
}

inline u64 hi64(u64 a, u64 b) { return static_cast<u64>((static_cast<u128>(a) * b) >> 64); }

__attribute__((noinline)) void bfly_shoup(u64* x, u64* y, std::size_t n, u64 w, u64 wp, u64 q) {
    const u64 q2 = 2 * q;
    for (std::size_t i = 0; i < n; ++i) {
        u64 a = x[i];
        a = a >= q2 ? a - q2 : a;
        const u64 v = y[i] * w - hi64(y[i], wp) * q;
        x[i] = a + v;
        y[i] = a - v + q2;
    }
}

#if defined(__x86_64__)
__attribute__((noinline)) void bfly_x87(u64* x, u64* y, std::size_t n, u64 w, long double wq, u64 q) {
    const u64 q2 = 2 * q;
    for (std::size_t i = 0; i < n; ++i) {
        u64 a = x[i];
        a = a >= q2 ? a - q2 : a;
        long long c;
        __asm__("fildll %1\n\tfldt %2\n\tfmulp\n\tfistpll %0" : "=m"(c) : "m"(y[i]), "m"(wq) : "st", "st(1)");
        std::int64_t r = static_cast<std::int64_t>(y[i] * w - static_cast<u64>(c) * q);
        r += (r >> 63) & static_cast<std::int64_t>(q);
        x[i] = a + static_cast<u64>(r);
        y[i] = a - static_cast<u64>(r) + q2;
    }
}
#endif

__attribute__((noinline)) void bfly_sse2(u64* x, u64* y, std::size_t n, u64 w, double wq, u64 q) {
    const u64 q2 = 2 * q;
    for (std::size_t i = 0; i < n; ++i) {
        u64 a = x[i];
        a = a >= q2 ? a - q2 : a;
        const long long c = __builtin_llrint(static_cast<double>(static_cast<long long>(y[i])) * wq);
        std::int64_t r = static_cast<std::int64_t>(y[i] * w - static_cast<u64>(c) * q);
        r += (r >> 63) & static_cast<std::int64_t>(q);
        x[i] = a + static_cast<u64>(r);
        y[i] = a - static_cast<u64>(r) + q2;
    }
}

template <class F>
double ns_per(F&& f, double count) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / count * 1e9;
}

}  // namespace

int main() {
    const std::size_t n = 4096;
    const int reps = 20000;
    const u64 q = 562949953443841ULL;  // about 2^49 (the cost does not depend on q being prime)
    std::mt19937_64 g(1);
    std::vector<u64> x(n), y(n), a(n);
    for (auto& v : x) v = g() % q;
    for (auto& v : y) v = g() % q;
    for (auto& v : a) v = g();
    const u64 c[2] = {g(), g()};
    const u64 w = g() % q, wp = static_cast<u64>((static_cast<u128>(w) << 64) / q);
    const long double wq = static_cast<long double>(w) / static_cast<long double>(q);
    u64 sink = 0;
    for (int round = 1; round <= 3; ++round) {
        const double products = static_cast<double>(n) * 2 * reps, bflies = static_cast<double>(n) * reps;
        const double mulq = ns_per([&] { sink ^= sum_mulq(a.data(), c, n, reps); }, products);
        const double imul = ns_per([&] { sink ^= sum_imul(a.data(), c, n, reps); }, products);
        const double shoup = ns_per([&] { for (int r = 0; r < reps; ++r) bfly_shoup(x.data(), y.data(), n, w, wp, q); }, bflies);
        double x87 = 0;
#if defined(__x86_64__)
        x87 = ns_per([&] { for (int r = 0; r < reps; ++r) bfly_x87(x.data(), y.data(), n, w, wq, q); }, bflies);
#endif
        const double sse2 = ns_per([&] { for (int r = 0; r < reps; ++r) bfly_sse2(x.data(), y.data(), n, w, static_cast<double>(wq), q); }, bflies);
        std::printf("{\"round\": %d, \"mulq_ns_per_product\": %.3f, \"imul_ns_per_product\": %.3f, \"shoup_ns_per_butterfly\": %.3f, "
                    "\"x87_ns_per_butterfly\": %.3f, \"sse2_ns_per_butterfly\": %.3f}\n",
                    round, mulq, imul, shoup, x87, sse2);
    }
    std::fprintf(stderr, "(%llu)\n", static_cast<unsigned long long>(sink ^ x[0] ^ y[1]));
    return 0;
}
