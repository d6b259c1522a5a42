// GPU calibration for the simulator's modelled device profile (ember.sim.devices: "h100"): what the device's
// roofline assumes -- modular multiplications and additions per second, DRAM bandwidth -- measured on a real GPU
// with plain CUDA kernels; and one element-wise product of two polynomials (Backend::mul: N = 2^16, 24 limbs) and
// a forward NTT (24 and 384 limbs) timed against the model's prediction. Not part of Ember's build (no CUDA
// backend exists yet); driven by bench/gpu/calibrate.py, which compiles it with nvcc, runs it and checks every
// sampled result against Python's integers. Prints one JSON object per line.
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

// Forward negacyclic NTT of N = 2^16 words per limb (Cooley-Tukey, twiddles psi^bitrev(i) with Shoup companions,
// outputs in bit-reversed order, as the CPU backend's). Two kernels, each on 256-word slices in shared memory:
// ntt_first does stages m = 1..128 (strides >= 256 words: slice c of a limb = its words c + 256 k), ntt_last
// m = 256..2^15 (slice = 256 consecutive words). Within a slice, passes of 3, 3 and 2 stages, each thread taking
// 2^stages words into registers (radix 8, 8, 4). Out of place (src -> dst), so repeated runs compute the same thing.
constexpr int LOGN = 16, NN = 1 << LOGN, COLS = 16, CHUNKS = 4;

// One pass of NS stages on the 256-word slice `at` (at(x): word x of the slice), first stride t (slice units),
// m the first stage's index, ibase its first twiddle block: stage p's twiddle for word x is
// tw[(m << p) + (ibase << p) + x / (2 (t >> p))]. g: this thread's group, in [0, 256 >> NS).
template <int NS, class At>
__device__ inline void ntt_pass(At at, int g, int t, int m, int ibase, const u64* tw, const u64* twp, u64 q) {
    constexpr int R = 1 << NS;
    const int d = t >> (NS - 1), x0 = (g / d) * 2 * t + g % d;
    u64 v[R];
#pragma unroll
    for (int s = 0; s < R; ++s) v[s] = at(x0 + s * d);
#pragma unroll
    for (int p = 0; p < NS; ++p) {
        const int h = 1 << (NS - 1 - p), tp = t >> p;
#pragma unroll
        for (int s = 0; s < R; ++s)
            if (!(s & h)) {
                const int i = (m << p) + (ibase << p) + (x0 + s * d) / (2 * tp);
                const u64 u = v[s], w = mul_shoup(v[s + h], tw[i], twp[i], q);
                v[s] = add_mod(u, w, q);
                v[s + h] = u >= w ? u - w : u + q - w;
            }
    }
#pragma unroll
    for (int s = 0; s < R; ++s) at(x0 + s * d) = v[s];
}

__global__ void ntt_first(const u64* __restrict__ src, u64* __restrict__ dst, const u64* __restrict__ tw,
                          const u64* __restrict__ twp, u64 q) {
    __shared__ u64 sh[256 * COLS];  // sh[k * COLS + c] = x[r0 + c + 256 k]
    const u64* x = src + (u64)blockIdx.y * NN;
    u64* y = dst + (u64)blockIdx.y * NN;
    const int r0 = blockIdx.x * COLS;
    for (int idx = threadIdx.x; idx < 256 * COLS; idx += blockDim.x) sh[idx] = x[r0 + idx % COLS + 256 * (idx / COLS)];
    __syncthreads();
    // stage m has stride 2^15 / m words = 128 / m slice units; its twiddle block is k / (2 t): ibase 0
    for (int g = threadIdx.x; g < 32 * COLS; g += blockDim.x) {
        const int c = g % COLS;
        ntt_pass<3>([&](int k) -> u64& { return sh[k * COLS + c]; }, g / COLS, 128, 1, 0, tw, twp, q);
    }
    __syncthreads();
    for (int g = threadIdx.x; g < 32 * COLS; g += blockDim.x) {
        const int c = g % COLS;
        ntt_pass<3>([&](int k) -> u64& { return sh[k * COLS + c]; }, g / COLS, 16, 8, 0, tw, twp, q);
    }
    __syncthreads();
    for (int g = threadIdx.x; g < 64 * COLS; g += blockDim.x) {
        const int c = g % COLS;
        ntt_pass<2>([&](int k) -> u64& { return sh[k * COLS + c]; }, g / COLS, 2, 64, 0, tw, twp, q);
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < 256 * COLS; idx += blockDim.x) y[r0 + idx % COLS + 256 * (idx / COLS)] = sh[idx];
}

__global__ void ntt_last(u64* __restrict__ a, const u64* __restrict__ tw, const u64* __restrict__ twp, u64 q) {
    __shared__ u64 sh[256 * CHUNKS];
    u64* x = a + (u64)blockIdx.y * NN + 256 * CHUNKS * (u64)blockIdx.x;
    for (int i = threadIdx.x; i < 256 * CHUNKS; i += blockDim.x) sh[i] = x[i];
    __syncthreads();
    // slice b (of the limb) at stride t words: stage m = 2^15 / t, twiddle block b (128 / t) + l / (2 t)
    for (int g = threadIdx.x; g < 32 * CHUNKS; g += blockDim.x) {
        const int ch = g / 32, b = blockIdx.x * CHUNKS + ch;
        ntt_pass<3>([&](int l) -> u64& { return sh[ch * 256 + l]; }, g % 32, 128, 256, b, tw, twp, q);
    }
    __syncthreads();
    for (int g = threadIdx.x; g < 32 * CHUNKS; g += blockDim.x) {
        const int ch = g / 32, b = blockIdx.x * CHUNKS + ch;
        ntt_pass<3>([&](int l) -> u64& { return sh[ch * 256 + l]; }, g % 32, 16, 2048, b * 8, tw, twp, q);
    }
    __syncthreads();
    for (int g = threadIdx.x; g < 64 * CHUNKS; g += blockDim.x) {
        const int ch = g / 64, b = blockIdx.x * CHUNKS + ch;
        ntt_pass<2>([&](int l) -> u64& { return sh[ch * 256 + l]; }, g % 64, 2, 16384, b * 64, tw, twp, q);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256 * CHUNKS; i += blockDim.x) x[i] = sh[i];
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
    // the forward NTT over 24 and 384 limbs (one modulus, q = 1 mod 2^17; psi a primitive 2^17-th root of unity)
    {
        const u64 qn = 1152921504606584833ULL, psi = 987813353222176621ULL;
        std::vector<u64> pw(NN), tw(NN), twp(NN);
        pw[0] = 1;
        for (int e = 1; e < NN; ++e) pw[e] = (u64)((u128)pw[e - 1] * psi % qn);
        for (int i = 0; i < NN; ++i) {
            int r = 0;
            for (int b = 0; b < LOGN; ++b) r |= ((i >> b) & 1) << (LOGN - 1 - b);
            tw[i] = pw[r];
            twp[i] = (u64)(((u128)tw[i] << 64) / qn);
        }
        u64 *dtw, *dtwp;
        CHECK(cudaMalloc(&dtw, NN * 8));
        CHECK(cudaMalloc(&dtwp, NN * 8));
        CHECK(cudaMemcpy(dtw, tw.data(), NN * 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dtwp, twp.data(), NN * 8, cudaMemcpyHostToDevice));
        for (int limbs : {24, 384}) {
            const u64 n = (u64)limbs * NN;
            std::vector<u64> qs(limbs, qn);
            u64 *src, *dst, *dq;
            CHECK(cudaMalloc(&src, n * 8));
            CHECK(cudaMalloc(&dst, n * 8));
            CHECK(cudaMalloc(&dq, limbs * 8));
            CHECK(cudaMemcpy(dq, qs.data(), limbs * 8, cudaMemcpyHostToDevice));
            fill<<<1024, 256>>>(src, n, NN, dq, 3);
            ms = median_ms([&] {
                ntt_first<<<dim3(256 / COLS, limbs), 256>>>(src, dst, dtw, dtwp, qn);
                ntt_last<<<dim3(NN / (256 * CHUNKS), limbs), 128>>>(dst, dtw, dtwp, qn);
            });
            std::printf("{\"kernel\": \"ntt_forward\", \"log_n\": %d, \"limbs\": %d, \"ms\": %.5f, \"q\": \"%llu\", "
                        "\"psi\": \"%llu\", \"limbs_per_s\": %.4e}\n", LOGN, limbs, ms, qn, psi, limbs / (ms * 1e-3));
            if (limbs == 24) {
                print_samples("ntt_first_limb", dst, NN, 257);
                print_samples("ntt_last_limb", dst + (u64)(limbs - 1) * NN, NN, 257);
            }
            CHECK(cudaFree(src));
            CHECK(cudaFree(dst));
            CHECK(cudaFree(dq));
        }
        CHECK(cudaFree(dtw));
        CHECK(cudaFree(dtwp));
    }
    CHECK(cudaFree(out));
    return 0;
}
