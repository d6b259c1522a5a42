// GPU calibration for the simulator's modelled device profile (ember.sim.devices: "h100"): what the device's
// roofline assumes -- modular multiplications and additions per second, DRAM bandwidth -- measured on a real GPU
// with plain CUDA kernels, and one element-wise product of two polynomials (Backend::mul: N = 2^16, 24 limbs)
// timed against the model's prediction. Not part of Ember's build (no CUDA backend exists yet); driven by
// bench/gpu/calibrate.py, which compiles it with nvcc, runs it and checks every sampled result against Python's
// integers. Prints one JSON object per line.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using u64 = unsigned long long;
using u128 = unsigned __int128;

#define CHECK(x)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

// Inputs are a function of their index (splitmix64), so that the checker recomputes them.
__host__ __device__ inline u64 mix(u64 z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct Mod {
    u64 q, r1, r0;  // q and floor(2^128 / q) = r1 * 2^64 + r0
};

Mod make_mod(u64 q) {
    u128 r = (~(u128)0) / q;  // floor((2^128 - 1) / q) = floor(2^128 / q) for odd q
    return Mod{q, (u64)(r >> 64), (u64)r};
}

// a * b mod q for a, b < q < 2^62: the 128-bit product reduced by Barrett's method with floor(2^128 / q)
__device__ inline u64 mul_barrett(u64 a, u64 b, const Mod& m) {
    u64 lo = a * b, hi = __umul64hi(a, b);
    u64 c = __umul64hi(lo, m.r0);
    u64 t_lo = lo * m.r1, t_hi = __umul64hi(lo, m.r1);
    u64 s = t_lo + c;
    u64 s_hi = t_hi + (s < t_lo);
    u64 u_lo = hi * m.r0, u_hi = __umul64hi(hi, m.r0);
    u64 s2 = s + u_lo;
    u64 carry = u_hi + (s2 < u_lo);
    u64 quot = hi * m.r1 + s_hi + carry;  // floor(a b / q) or one less
    u64 r = lo - quot * m.q;
    return r >= m.q ? r - m.q : r;
}

// x * w mod q with the precomputed w' = floor(w 2^64 / q) (Shoup): one high product, two low ones
__device__ inline u64 mul_shoup(u64 x, u64 w, u64 wp, u64 q) {
    u64 hi = __umul64hi(x, wp);
    u64 r = x * w - hi * q;
    return r >= q ? r - q : r;
}

__device__ inline u64 add_mod(u64 a, u64 b, u64 q) {
    u64 s = a + b;
    return s >= q ? s - q : s;
}

constexpr int CHAINS = 4;  // independent chains per thread (instruction-level parallelism)

__global__ void shoup_chain(u64* out, u64 w, u64 wp, u64 q, int iters) {
    u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    u64 x[CHAINS];
    for (int c = 0; c < CHAINS; ++c) x[c] = mix(t * CHAINS + c) % q;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = mul_shoup(x[c], w, wp, q);
    for (int c = 0; c < CHAINS; ++c) out[t * CHAINS + c] = x[c];
}

__global__ void barrett_chain(u64* out, Mod m, int iters) {  // repeated squaring: both operands variable
    u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    u64 x[CHAINS];
    for (int c = 0; c < CHAINS; ++c) x[c] = mix(t * CHAINS + c) % m.q;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = mul_barrett(x[c], x[c], m);
    for (int c = 0; c < CHAINS; ++c) out[t * CHAINS + c] = x[c];
}

__global__ void add_chain(u64* out, u64 q, int iters) {
    u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    u64 x[CHAINS], y[CHAINS];
    for (int c = 0; c < CHAINS; ++c) {
        x[c] = mix(t * CHAINS + c) % q;
        y[c] = mix(~(t * CHAINS + c)) % q;
    }
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = add_mod(x[c], y[c], q);
    for (int c = 0; c < CHAINS; ++c) out[t * CHAINS + c] = x[c];
}

__global__ void fill(u64* a, u64 n, u64 n_ring, const u64* qs, u64 salt) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        a[i] = mix(i ^ salt) % qs[i / n_ring];
}

// Backend::mul: c = a * b over `limbs` limbs of n_ring words, limb i modulo mods[i]; one thread per word
__global__ void ew_mul(const u64* __restrict__ a, const u64* __restrict__ b, u64* __restrict__ c, u64 n,
                       u64 n_ring, const Mod* __restrict__ mods) {
    u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (i < n) c[i] = mul_barrett(a[i], b[i], mods[i / n_ring]);
}

__global__ void copy(const ulonglong2* __restrict__ a, ulonglong2* __restrict__ b, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) b[i] = a[i];
}

template <class F>
double median_ms(F launch, int reps = 20) {
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s));
    CHECK(cudaEventCreate(&e));
    launch();  // warm-up
    CHECK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(s));
        launch();
        CHECK(cudaEventRecord(e));
        CHECK(cudaEventSynchronize(e));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, s, e));
        t.push_back(ms);
    }
    CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

void print_samples(const char* name, const u64* dev, u64 n, u64 step) {
    std::vector<u64> h(n);
    CHECK(cudaMemcpy(h.data(), dev, n * 8, cudaMemcpyDeviceToHost));
    std::printf("{\"samples\": \"%s\", \"step\": %llu, \"values\": [", name, step);
    for (u64 i = 0; i < n; i += step) std::printf("%s\"%llu\"", i ? ", " : "", h[i]);
    std::printf("]}\n");
}

int main() {
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("{\"device\": \"%s\", \"sms\": %d, \"l2_mb\": %.1f, \"memory_gb\": %.1f}\n", p.name,
                p.multiProcessorCount, p.l2CacheSize / 1048576.0, p.totalGlobalMem / 1e9);
    const u64 q = (1ULL << 60) - 93;  // 60-bit moduli (odd; primality does not matter for the rates)
    const Mod m = make_mod(q);
    const int threads = 256, blocks = p.multiProcessorCount * 16, iters = 4096;
    const u64 lanes = (u64)threads * blocks * CHAINS;
    u64* out;
    CHECK(cudaMalloc(&out, lanes * 8));

    const u64 w = mix(12345) % q, wp = (u64)(((u128)w << 64) / q);
    double ms = median_ms([&] { shoup_chain<<<blocks, threads>>>(out, w, wp, q, iters); });
    std::printf("{\"kernel\": \"mul_shoup\", \"ms\": %.4f, \"ops\": %llu, \"ops_per_s\": %.4e, \"q\": \"%llu\", "
                "\"w\": \"%llu\", \"iters\": %d}\n", ms, lanes * iters, lanes * iters / (ms * 1e-3), q, w, iters);
    print_samples("mul_shoup", out, lanes, lanes / 64);
    ms = median_ms([&] { barrett_chain<<<blocks, threads>>>(out, m, iters); });
    std::printf("{\"kernel\": \"mul_barrett\", \"ms\": %.4f, \"ops\": %llu, \"ops_per_s\": %.4e, \"q\": \"%llu\", "
                "\"iters\": %d}\n", ms, lanes * iters, lanes * iters / (ms * 1e-3), q, iters);
    print_samples("mul_barrett", out, lanes, lanes / 64);
    ms = median_ms([&] { add_chain<<<blocks, threads>>>(out, q, iters); });
    std::printf("{\"kernel\": \"add_mod\", \"ms\": %.4f, \"ops\": %llu, \"ops_per_s\": %.4e, \"q\": \"%llu\", "
                "\"iters\": %d}\n", ms, lanes * iters, lanes * iters / (ms * 1e-3), q, iters);
    print_samples("add_mod", out, lanes, lanes / 64);

    // DRAM bandwidth: a 2 GiB copy (bytes read + written)
    const u64 words = 1ULL << 28;
    u64 *a, *b;
    CHECK(cudaMalloc(&a, words * 8));
    CHECK(cudaMalloc(&b, words * 8));
    CHECK(cudaMemset(a, 1, words * 8));
    ms = median_ms([&] { copy<<<p.multiProcessorCount * 8, 512>>>((const ulonglong2*)a, (ulonglong2*)b, words / 2); });
    std::printf("{\"kernel\": \"copy\", \"ms\": %.4f, \"bytes\": %llu, \"bytes_per_s\": %.4e}\n", ms, 2 * words * 8,
                2 * words * 8 / (ms * 1e-3));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));

    // Backend::mul on a polynomial pair at N = 2^16, 24 limbs (and on 16 such pairs at once, past the L2 cache)
    const u64 n_ring = 1 << 16;
    for (int batch : {1, 16}) {
        const u64 limbs = 24ULL * batch, n = limbs * n_ring;
        std::vector<u64> qs(limbs);
        std::vector<Mod> mods(limbs);
        for (u64 i = 0; i < limbs; ++i) {
            qs[i] = q - 2 * (i % 24);
            mods[i] = make_mod(qs[i]);
        }
        u64 *x, *y, *z, *dq;
        Mod* dm;
        CHECK(cudaMalloc(&x, n * 8));
        CHECK(cudaMalloc(&y, n * 8));
        CHECK(cudaMalloc(&z, n * 8));
        CHECK(cudaMalloc(&dq, limbs * 8));
        CHECK(cudaMalloc(&dm, limbs * sizeof(Mod)));
        CHECK(cudaMemcpy(dq, qs.data(), limbs * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dm, mods.data(), limbs * sizeof(Mod), cudaMemcpyHostToDevice));
        fill<<<1024, 256>>>(x, n, n_ring, dq, 1);
        fill<<<1024, 256>>>(y, n, n_ring, dq, 2);
        ms = median_ms([&] { ew_mul<<<(unsigned)((n + 255) / 256), 256>>>(x, y, z, n, n_ring, dm); });
        std::printf("{\"kernel\": \"ew_mul\", \"log_n\": 16, \"limbs\": %llu, \"ms\": %.5f, \"bytes\": %llu, "
                    "\"bytes_per_s\": %.4e, \"ops_per_s\": %.4e}\n", limbs, ms, 3 * n * 8, 3 * n * 8 / (ms * 1e-3),
                    n / (ms * 1e-3));
        if (batch == 1) print_samples("ew_mul", z, n, 4099);
        CHECK(cudaFree(x));
        CHECK(cudaFree(y));
        CHECK(cudaFree(z));
        CHECK(cudaFree(dq));
        CHECK(cudaFree(dm));
    }
    CHECK(cudaFree(out));
    return 0;
}
