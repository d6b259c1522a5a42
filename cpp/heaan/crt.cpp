#include "heaan/crt.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "math/cpu_features.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "math/primes.hpp"
#include "math/vec_ops.hpp"
#include "trace/trace.hpp"

namespace ember::heaan {

namespace {

/// -p^-1 mod 2^52 (p odd), by Newton iteration.
u64 neg_inv52(u64 p) {
    u64 inv = p;
    for (int i = 0; i < 6; ++i) inv *= 2 - p * inv;
    return (0 - inv) & ((u64(1) << 52) - 1);
}

}  // namespace

CrtBasis::CrtBasis(std::size_t n, int prime_bits, std::size_t count, int max_in_bits)
    : n_(n), prime_bits_(prime_bits), max_in_bits_(max_in_bits) {
    if (n < 8 || (n & (n - 1))) throw std::invalid_argument("CrtBasis: N must be a power of two >= 8, got " + std::to_string(n));
    if (prime_bits < 20 || prime_bits > 60) throw std::invalid_argument("CrtBasis: prime_bits must be in [20, 60], got " + std::to_string(prime_bits));
    if (count == 0) throw std::invalid_argument("CrtBasis: at least one prime is needed");
    const auto ps = ntt_primes_near(prime_bits, count, 2 * n, {}, /*both_sides=*/false);
    primes_.reserve(count);
    ntt_.reserve(count);
    log_prefix_.assign(1, 0.0);
    for (u64 q : ps) {
        primes_.emplace_back(q);
        ntt_.emplace_back(n, primes_.back());
        log_prefix_.push_back(log_prefix_.back() + std::log2(static_cast<double>(q)));
    }
    d52 = static_cast<std::size_t>(max_in_bits + 51) / 52;
    d64 = bigint::words_for_bits(max_in_bits);
    crt52.resize(count * d52);
    crt64.resize(count * d64);
    two128.resize(count);
    pinv52.resize(count);
    for (std::size_t j = 0; j < count; ++j) {
        const Modulus& m = primes_[j];
        const u64 r52 = m.reduce128(u128(1) << 52), r64 = m.reduce128(u128(1) << 64);
        u64 x = m.reduce128(u128(1) << 104);
        for (std::size_t d = 0; d < d52; ++d) { crt52[j * d52 + d] = x; x = m.mul(x, r52); }
        x = 1 % m.q;
        for (std::size_t k = 0; k < d64; ++k) { crt64[j * d64 + k] = x; x = m.mul(x, r64); }
        two128[j] = m.mul(r64, r64);
        pinv52[j] = neg_inv52(m.q);
    }
    // the vector kernels need every prime below 2^50 (IFMA: 52-bit lanes; AVX2: 25-bit halves), and AVX2 above 2^40
    // (its double-precision quotient estimate)
    const bool small = std::all_of(ps.begin(), ps.end(), [](u64 q) { return q < (u64(1) << 50); });
    const bool large = std::all_of(ps.begin(), ps.end(), [](u64 q) { return q >= (u64(1) << 40); });
    avx2_ok_ = small && large && detail::crt_avx2_supported();
    if (small && detail::crt_ifma_supported() && n >= 64) best_ = CrtPath::kIfma;
    else if (avx2_ok_) best_ = CrtPath::kAvx2;
    path_ = best_;
    if (avx2_ok_) {  // also on IFMA CPUs: tests and benches compare the paths
        d32 = static_cast<std::size_t>(max_in_bits + 31) / 32;
        crt32.resize(count * d32 * 2);
        for (std::size_t j = 0; j < count; ++j) {
            const Modulus& m = primes_[j];
            const u64 r32 = u64(1) << 32;
            u64 x = 1 % m.q;
            for (std::size_t d = 0; d < d32; ++d) {
                crt32[(j * d32 + d) * 2] = static_cast<std::uint32_t>(x & ((u64(1) << 25) - 1));
                crt32[(j * d32 + d) * 2 + 1] = static_cast<std::uint32_t>(x >> 25);
                x = m.mul(x, r32);
            }
        }
    }
}

const char* crt_path_name(CrtPath p) {
    switch (p) {
        case CrtPath::kIfma: return "ifma";
        case CrtPath::kAvx2: return "avx2";
        default: return "scalar";
    }
}

std::size_t CrtBasis::primes_for(int bound_bits) const {
    const double need = bound_bits + 4.0;
    for (std::size_t np = 1; np <= primes_.size(); ++np)
        if (log_prefix_[np] > need) return np;
    throw std::invalid_argument("heaan: a product bound of 2^" + std::to_string(bound_bits) + " needs more than the " +
                                std::to_string(primes_.size()) + " primes of the basis");
}

const IcrtPlan& CrtBasis::icrt_plan(std::size_t np) const {
    if (np == 0 || np > primes_.size())
        throw std::invalid_argument("icrt: np = " + std::to_string(np) + " must be in [1, " + std::to_string(primes_.size()) + "]");
    std::lock_guard<std::mutex> l(mu_);
    auto it = plans_.find(np);
    if (it != plans_.end()) return *it->second;
    auto plan = std::make_unique<IcrtPlan>();
    IcrtPlan& pl = *plan;
    pl.np = np;
    std::vector<u64> P{1};
    for (std::size_t j = 0; j < np; ++j) {
        P = bigint::mul_word(P, primes_[j].q);
        while (P.size() > 1 && P.back() == 0) P.pop_back();
    }
    pl.P = P;
    pl.p_bits = bigint::bit_length(P.data(), P.size());
    pl.k52 = static_cast<std::size_t>(pl.p_bits + 51) / 52 + 1;
    pl.k64 = P.size() + 1;
    const std::size_t pad52 = 16;  // zero digits past k52: the IFMA kernel runs whole chunks of digits
    pl.pd52.assign((np + 1) * (pl.k52 + pad52), 0);
    pl.pw64.assign((np + 1) * pl.k64, 0);
    pl.inv.resize(np);
    pl.inv_shoup52.resize(np);
    pl.inv_p.resize(np);
    auto put = [&](std::size_t row, const std::vector<u64>& v) {
        const auto d = bigint::digits52(v, pl.k52);
        std::copy(d.begin(), d.end(), pl.pd52.begin() + static_cast<std::ptrdiff_t>(row * (pl.k52 + pad52)));
        for (std::size_t w = 0; w < std::min(v.size(), pl.k64); ++w) pl.pw64[row * pl.k64 + w] = v[w];
    };
    for (std::size_t j = 0; j < np; ++j) {
        const Modulus& m = primes_[j];
        u64 rem = 0;
        const auto Pj = bigint::div_word(P, m.q, &rem);
        const u64 pj_mod = bigint::mod_word(Pj.data(), Pj.size(), m);
        const u64 inv = m.inv(pj_mod);
        pl.inv[j] = MulConst(inv, m);
        pl.inv_shoup52[j] = static_cast<u64>((static_cast<u128>(inv) << 52) / m.q);
        pl.inv_p[j] = 1.0 / static_cast<double>(m.q);
        put(j, Pj);
    }
    // row np: -P modulo 2^(52 k52) (digits) and modulo 2^(64 k64) (words), multiplied by v it subtracts v P
    {
        const auto neg52 = bigint::neg_mod_pow2(P, static_cast<int>(52 * pl.k52));
        const auto d = bigint::digits52(neg52, pl.k52);
        std::copy(d.begin(), d.end(), pl.pd52.begin() + static_cast<std::ptrdiff_t>(np * (pl.k52 + pad52)));
        const auto neg64 = bigint::neg_mod_pow2(P, static_cast<int>(64 * pl.k64));
        for (std::size_t w = 0; w < pl.k64; ++w) pl.pw64[np * pl.k64 + w] = w < neg64.size() ? neg64[w] : 0;
    }
    pl.k32 = 2 * pl.k64 + 8;  // 8 zero digits: the AVX2 kernel runs whole chunks of 6
    pl.pd32.assign((np + 1) * pl.k32, 0);
    for (std::size_t row = 0; row <= np; ++row)
        for (std::size_t w = 0; w < pl.k64; ++w) {
            const u64 v = pl.pw64[row * pl.k64 + w];
            pl.pd32[row * pl.k32 + 2 * w] = static_cast<std::uint32_t>(v);
            pl.pd32[row * pl.k32 + 2 * w + 1] = static_cast<std::uint32_t>(v >> 32);
        }
    pl.k52 += pad52;  // row stride (the digits past the original k52 are zero for rows < np; never used for output)
    auto [pos, _] = plans_.emplace(np, std::move(plan));
    return *pos->second;
}

std::vector<u64> CrtBasis::centered_offsets(int in_bits, std::size_t np) const {
    std::vector<u64> off(np);
    for (std::size_t j = 0; j < np; ++j) off[j] = primes_[j].neg(primes_[j].pow(2, static_cast<u64>(in_bits - 1)));
    return off;
}

void CrtBasis::crt_block(const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* rows, std::size_t c0,
                         std::size_t count, const u64* offset) const {
    if (in_bits > max_in_bits_ || in_bits < 1)
        throw std::invalid_argument("crt: input of " + std::to_string(in_bits) + " bits; the tables cover up to " + std::to_string(max_in_bits_));
    if (np == 0 || np > primes_.size()) throw std::invalid_argument("crt: np = " + std::to_string(np) + " is out of range");
#if defined(__x86_64__)
    if (path_ == CrtPath::kIfma) return detail::crt_ifma(*this, in, words, in_bits, np, rows, c0, count, offset);
    if (path_ == CrtPath::kAvx2) return detail::crt_avx2(*this, in, words, in_bits, np, rows, c0, count, offset);
#endif
    detail::crt_scalar(*this, in, words, in_bits, np, rows, c0, count, offset);
}

void CrtBasis::check_icrt(const IcrtPlan& plan, int shift, int out_bits) const {
    if (shift < 0 || out_bits < 1 || shift + out_bits > plan.p_bits)
        throw std::invalid_argument("icrt: shift + out_bits = " + std::to_string(shift + out_bits) + " exceeds log2 P = " + std::to_string(plan.p_bits));
}

void CrtBasis::icrt_block(const IcrtPlan& plan, const u64* const* rows, int shift, int out_bits, u64* out, std::size_t c0,
                          std::size_t count) const {
#if defined(__x86_64__)
    if (path_ == CrtPath::kIfma) return detail::icrt_ifma(*this, plan, rows, shift, out_bits, out, c0, count);
    if (path_ == CrtPath::kAvx2) return detail::icrt_avx2(*this, plan, rows, shift, out_bits, out, c0, count);
#endif
    detail::icrt_scalar(*this, plan, rows, shift, out_bits, out, c0, count);
}

void CrtBasis::crt(const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* out, std::size_t begin, std::size_t end,
                   bool centered) const {
    const std::vector<u64> off = centered ? centered_offsets(in_bits, np) : std::vector<u64>();
    crt_block(in + begin * words, words, in_bits, np, out, begin, end - begin, centered ? off.data() : nullptr);
}

void CrtBasis::icrt(const u64* const* in, std::size_t np, int shift, int out_bits, u64* out, std::size_t begin, std::size_t end) const {
    const IcrtPlan& plan = icrt_plan(np);
    check_icrt(plan, shift, out_bits);
    icrt_block(plan, in, shift, out_bits, out + begin * bigint::words_for_bits(out_bits), begin, end - begin);
}

// ---- scalar kernels ---------------------------------------------------------------------------------------------

namespace detail {

// The IFMA kernels (heaan/crt_ifma.cpp) are x86-64 only. Their predicate lives here, built with the baseline flags:
// it runs on every CPU, before the check.
bool crt_ifma_supported() {
#if defined(__x86_64__)
    return cpu_features().use_ifma();
#else
    return false;
#endif
}
bool crt_avx2_supported() {
#if defined(__x86_64__)
    return cpu_features().use_avx2();
#else
    return false;
#endif
}

void crt_scalar(const CrtBasis& B, const u64* in, std::size_t words, int in_bits, std::size_t np, u64* const* out, std::size_t c0,
                std::size_t count, const u64* offset) {
    const std::size_t wn = std::min(words, bigint::words_for_bits(in_bits));
    const std::size_t top_w = static_cast<std::size_t>(in_bits - 1) / 64;
    const u64 top_bit = u64(1) << ((in_bits - 1) % 64);
    std::vector<u64> buf(wn);
    for (std::size_t i = c0; i < c0 + count; ++i) {
        const u64* a = in + (i - c0) * words;
        if (offset) {
            std::copy(a, a + wn, buf.begin());
            buf[top_w] ^= top_bit;
            a = buf.data();
        }
        for (std::size_t j = 0; j < np; ++j) {
            const u64* tb = B.crt64.data() + j * B.d64;
            u128 acc = 0;
            u64 top = 0;  // carries out of the two-word accumulator (60-bit primes, many words)
            for (std::size_t k = 0; k < wn; ++k) {
                const u128 p = static_cast<u128>(a[k]) * tb[k];
                acc += p;
                top += acc < p;
            }
            const Modulus& m = B.prime(j);
            u64 r = m.reduce128(acc);
            if (top) r = m.add(r, m.mul(top, B.two128[j]));
            if (offset) r = m.add(r, offset[j]);
            out[j][i] = r;
        }
    }
}

namespace {
/// words w[0..nw) hold bits [0, 64 nw) of a value; out = round(value / 2^s) mod 2^out_bits (w is modified).
void extract_round(u64* out, int out_bits, u64* w, std::size_t nw, int s) {
    if (s > 0) {
        std::size_t k = static_cast<std::size_t>(s - 1) / 64;
        u64 add = u64(1) << ((s - 1) % 64);
        for (; k < nw && add; ++k) {
            const u64 v = w[k] + add;
            add = v < add ? 1 : 0;
            w[k] = v;
        }
    }
    const std::size_t on = bigint::words_for_bits(out_bits), ws = static_cast<std::size_t>(s) / 64;
    const int off = s % 64;
    for (std::size_t i = 0; i < on; ++i) {
        const std::size_t src = ws + i;
        u64 v = src < nw ? w[src] >> off : 0;
        if (off && src + 1 < nw) v |= w[src + 1] << (64 - off);
        out[i] = v;
    }
    bigint::mask_bits(out, on, out_bits);
}
}  // namespace

void icrt_scalar(const CrtBasis& B, const IcrtPlan& plan, const u64* const* in, int shift, int out_bits, u64* out, std::size_t c0,
                 std::size_t count) {
    const std::size_t np = plan.np, on = bigint::words_for_bits(out_bits);
    const std::size_t w_lo = icrt_first_digit(shift, 64);
    const std::size_t w_hi = static_cast<std::size_t>(shift + out_bits + 63) / 64;
    const std::size_t nw = w_hi - w_lo;
    std::vector<u128> acc(nw + 1);
    std::vector<u64> t(np + 1), w(nw);
    for (std::size_t i = c0; i < c0 + count; ++i) {
        double f = 0;
        for (std::size_t j = 0; j < np; ++j) {
            const u64 q = B.prime(j).q;
            t[j] = mul_shoup(in[j][i], plan.inv[j].w, plan.inv[j].wp, q);
            f += static_cast<double>(t[j]) * plan.inv_p[j];
        }
        t[np] = static_cast<u64>(std::nearbyint(f));  // v = round(sum t_j / p_j): c = sum t_j P/p_j - v P
        std::fill(acc.begin(), acc.end(), u128(0));
        for (std::size_t j = 0; j <= np; ++j) {
            const u64* row = plan.pw64.data() + j * plan.k64;
            const u64 tj = t[j];
            for (std::size_t k = w_lo; k < w_hi; ++k) {
                const u128 p = static_cast<u128>(tj) * row[k];
                acc[k - w_lo] += static_cast<u64>(p);
                acc[k - w_lo + 1] += static_cast<u64>(p >> 64);
            }
        }
        u128 carry = 0;
        for (std::size_t k = 0; k < nw; ++k) {
            const u128 v = acc[k] + carry;
            w[k] = static_cast<u64>(v);
            carry = v >> 64;
        }
        extract_round(out + (i - c0) * on, out_bits, w.data(), nw, shift - static_cast<int>(64 * w_lo));
    }
}

}  // namespace detail

// ---- whole-polynomial stages ------------------------------------------------------------------------------------

namespace {
std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
/// Coefficients per parallel task: 1024 (16 IFMA blocks): small enough to balance two threads on a shared
/// machine, large enough that the per-task overhead vanishes.
constexpr std::size_t kTask = 1024;
}  // namespace

KernelClock::KernelClock(const char* kernel) : kernel_(kernel), on_(trace::enabled()) {
    if (on_) t0_ = now_ns();
}
KernelClock::~KernelClock() {
    if (!on_) return;
    trace::Counts c;
    c.ns = static_cast<std::uint64_t>(now_ns() - t0_);
    trace::record(kernel_, c);
}

void count_kernel(const char* kernel, std::uint64_t calls, std::uint64_t mod_mul, std::uint64_t ntt, std::uint64_t bytes_read,
                  std::uint64_t bytes_written) {
    if (!trace::enabled()) return;
    trace::Counts c;
    c.calls = calls;
    c.mod_mul = mod_mul;
    c.ntt = ntt;
    c.bytes_read = bytes_read;
    c.bytes_written = bytes_written;
    trace::record(kernel, c);
}

namespace {
/// Adds the counts count_kernel has no argument for (modular additions, word products, multi-word additions) to a
/// trace kernel when tracing is on (calls, time and bytes are recorded by count_kernel / KernelClock).
void count_words(const char* kernel, std::uint64_t mod_add, std::uint64_t word_mul, std::uint64_t adc) {
    if (!trace::enabled()) return;
    trace::Counts c;
    c.mod_add = mod_add;
    c.word_mul = word_mul;
    c.adc = adc;
    trace::record(kernel, c);
}
/// Word products the CRT kernel executes per residue of an input of `bits` bits held in `words` words: 52-bit digits
/// (IFMA), 32-bit digits times the two 25-bit halves of the table entry (AVX2: two lane products each), 64-bit words.
std::size_t crt_word_products(const CrtBasis& B, int bits, std::size_t words) {
    if (B.ifma()) return static_cast<std::size_t>(bits + 51) / 52;
    if (B.avx2()) return 2 * (static_cast<std::size_t>(bits + 31) / 32);
    return words;
}
/// Output digits the iCRT kernel multiplies per coefficient and row (the rows are t_0 .. t_{np-1} and v): the
/// scalar kernel runs words [w_lo, w_hi) (so does the AVX2 one, as 32-bit digits); the IFMA kernel runs the nd digits in nc chunks of kc, nc kc >= nd
/// (the table rows are zero-padded), and propagates carries over nd. first: products, second: carry steps.
std::pair<std::uint64_t, std::uint64_t> icrt_digits(CrtPath path, std::size_t np, int shift, int out_bits) {
    const bool ifma = path == CrtPath::kIfma;
    const int db = ifma ? 52 : 64;
    const std::size_t nd = static_cast<std::size_t>(shift + out_bits + db - 1) / db - detail::icrt_first_digit(shift, db);
    // AVX2 (np + 1 <= 127): the same words as 32-bit digits, run in chunks of 6 (zero-padded table rows), two lane
    // products per digit (t_j's 25-bit halves)
    if (path == CrtPath::kAvx2 && np + 1 <= 127) return {2 * ((2 * nd + 5) / 6 * 6), 2 * nd};
    if (!ifma) return {nd, nd};
    const std::size_t nc = (nd + 12) / 13, kc = (nd + nc - 1) / nc;
    return {nc * kc, nd};
}
}  // namespace

RowBuffer::RowBuffer(std::size_t words) : size_(words) {
    const std::size_t bytes = (words * sizeof(u64) + 63) / 64 * 64;
    p_.reset(static_cast<u64*>(std::aligned_alloc(64, std::max<std::size_t>(bytes, 64))));
    if (!p_) throw std::bad_alloc();
}
void RowBuffer::Free::operator()(u64* p) const { std::free(p); }

void store_row(u64* dst, const u64* src, std::size_t n, bool stream) {
#if defined(__x86_64__)
    if (stream && n % 8 == 0 && reinterpret_cast<std::uintptr_t>(dst) % 64 == 0 && reinterpret_cast<std::uintptr_t>(src) % 64 == 0)
        return detail::copy_stream(dst, src, n);
#else
    (void)stream;  // streaming stores are an x86-64 (IFMA) kernel
#endif
    std::memcpy(dst, src, n * sizeof(u64));
}

void crt_polys(const CrtBasis& B, ThreadPool& pool, const std::vector<const BigPoly*>& polys, std::size_t np, const RnsPolys& dest,
               bool centered) {
    const std::size_t n = B.n();
    if (dest.size() != polys.size()) throw std::logic_error("crt_polys: one destination per polynomial");
    std::vector<std::vector<u64*>> outs(polys.size(), std::vector<u64*>(np));
    std::vector<std::vector<u64>> offs(polys.size());
    std::uint64_t wmul = 0, rd = 0;
    for (std::size_t k = 0; k < polys.size(); ++k) {
        const BigPoly& p = *polys[k];
        if (p.n != n) throw std::invalid_argument("crt: polynomial of degree " + std::to_string(p.n) + ", the basis has N = " + std::to_string(n));
        for (std::size_t j = 0; j < np; ++j) outs[k][j] = dest[k] + j * n;
        if (centered) offs[k] = B.centered_offsets(p.bits, np);
        wmul += n * np * crt_word_products(B, p.bits, p.words);  // word products, each accumulated into the two-word sum (Table IV: qLimbs per residue)
        rd += n * p.words * 8;
    }
    const std::size_t tasks = (n + kTask - 1) / kTask;
    pool.parallel_for(tasks, [&](std::size_t t) {
        KernelClock clk("heaan_crt");
        const std::size_t c0 = t * kTask, cnt = std::min(kTask, n - c0);
        for (std::size_t k = 0; k < polys.size(); ++k) {
            const BigPoly& p = *polys[k];
            B.crt_block(p.coeff(c0), p.words, p.bits, np, outs[k].data(), c0, cnt, centered ? offs[k].data() : nullptr);
        }
    });
    // one reduction of the two-word sum per residue (Table IV's N np modular multiplications; the scalar path's extra
    // product when that sum overflows two words, which needs more than 2^(64 - prime_bits) words, is not counted);
    // centered: one modular addition of the offset per residue
    const std::uint64_t residues = polys.size() * n * np;
    count_kernel("heaan_crt", polys.size(), residues, 0, rd, residues * 8);
    count_words("heaan_crt", centered ? residues : 0, wmul, wmul);
}

void crt_small(const CrtBasis& B, ThreadPool& pool, const std::vector<std::int64_t>& v, std::size_t np, u64* dest) {
    const std::size_t n = B.n();
    pool.parallel_for(np, [&](std::size_t j) {
        KernelClock clk("heaan_crt");
        const Modulus& m = B.prime(j);
        u64* r = dest + j * n;
        for (std::size_t i = 0; i < n; ++i) r[i] = m.from_signed(v[i]);
    });
    count_kernel("heaan_crt", 1, 0, 0, n * 8, n * np * 8);
}

namespace {
void transform_rows(const CrtBasis& B, ThreadPool& pool, const RnsPolys& polys, std::size_t np, bool inverse) {
    const char* name = inverse ? "heaan_intt" : "heaan_ntt";
    const std::size_t n = B.n(), count = polys.size();
    // prime-major: the rows of one prime run back to back, so its twiddle tables are read from memory once
    pool.parallel_for(np, [&](std::size_t j) {
        KernelClock clk(name);
        for (std::size_t k = 0; k < count; ++k) {
            u64* row = polys[k] + j * n;
            if (inverse) ntt_inverse(row, B.ntt(j));
            else ntt_forward(row, B.ntt(j));
        }
    });
    std::uint64_t mm = 0;
    for (std::size_t j = 0; j < np; ++j) mm += count * ntt_mod_mul_count(B.ntt(j), inverse);
    count_kernel(name, 1, mm, count * np, count * np * n * 8, count * np * n * 8);
    count_words(name, count * np * n * static_cast<std::uint64_t>(B.ntt(0).log_n), 0, 0);  // an addition and a subtraction per butterfly
}
}  // namespace

void ntt_rows(const CrtBasis& B, ThreadPool& pool, const RnsPolys& polys, std::size_t np) { transform_rows(B, pool, polys, np, false); }
void intt_rows(const CrtBasis& B, ThreadPool& pool, const RnsPolys& polys, std::size_t np) { transform_rows(B, pool, polys, np, true); }

void icrt_stage(const CrtBasis& B, ThreadPool& pool, std::vector<IcrtJob>& jobs) {
    const std::size_t n = B.n();
    struct Prepared {
        std::vector<const IcrtPlan*> plan;
        std::vector<std::vector<const u64*>> in;  // per part: its np row pointers
        std::vector<u64*> crt_out;
        std::vector<u64> crt_off;
    };
    std::vector<Prepared> prep(jobs.size());
    std::size_t max_words = 0;
    std::uint64_t icrt_mm = 0, crt_mm = 0, crt_calls = 0, icrt_calls = 0, icrt_rd = 0, icrt_wr = 0, crt_wr = 0;
    std::uint64_t icrt_wmul = 0, icrt_adc = 0, crt_wmul = 0, extra_adc = 0;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        IcrtJob& jb = jobs[k];
        Prepared& pr = prep[k];
        if (jb.parts.empty()) throw std::logic_error("icrt: a job without parts");
        const std::size_t words = bigint::words_for_bits(jb.out_bits);
        max_words = std::max(max_words, words);
        for (const IcrtPart& part : jb.parts) {
            const IcrtPlan& plan = B.icrt_plan(part.np);
            B.check_icrt(plan, part.shift, jb.out_bits);
            pr.plan.push_back(&plan);
            pr.in.emplace_back(part.np);
            for (std::size_t j = 0; j < part.np; ++j) pr.in.back()[j] = part.rows + j * n;
            // per coefficient: np Shoup products t_j; (np + 1) x digits word products (row np: v times -P), each
            // accumulated; a carry step per digit; the rounding increment when shifted
            const auto [digits, carries] = icrt_digits(B.path(), part.np, part.shift, jb.out_bits);
            icrt_mm += n * part.np;
            icrt_wmul += n * (part.np + 1) * digits;
            icrt_adc += n * (part.np + 1) * digits + n * carries + (part.shift > 0 ? n : 0);
            icrt_rd += n * part.np * 8;
            icrt_calls += 1;
        }
        if (jb.out && reinterpret_cast<std::uintptr_t>(jb.out) % 64) throw std::logic_error("icrt: output must be 64-byte aligned");
        if (jb.crt_rows) {
            pr.crt_out.resize(jb.crt_np);
            for (std::size_t j = 0; j < jb.crt_np; ++j) pr.crt_out[j] = jb.crt_rows + j * n;
            pr.crt_off = B.centered_offsets(jb.out_bits, jb.crt_np);
            crt_mm += n * jb.crt_np;  // one reduction per residue (as crt_polys; centered: one modular addition)
            crt_wmul += n * jb.crt_np * crt_word_products(B, jb.out_bits, words);
            crt_calls += 1;
            crt_wr += n * jb.crt_np * 8;
        }
        icrt_rd += jb.addend ? n * words * 8 : 0;
        extra_adc += n * words * (jb.parts.size() - 1 + (jb.addend ? 1 : 0));  // big-integer sums of the parts (heaan_extra)
        icrt_wr += jb.out ? n * words * 8 : 0;
    }
    const std::size_t tasks = (n + kTask - 1) / kTask;
    pool.parallel_for(tasks, [&](std::size_t t) {
        thread_local WordVec tile, part_tile;
        // blocks of 512 coefficients (IFMA: the kernel reads 4 KiB runs of every row), 64 on the scalar path
        const std::size_t c0 = t * kTask, cnt = std::min(kTask, n - c0), blk = B.ifma() ? 512 : 64;
        if (tile.size() < blk * max_words) tile.resize(blk * max_words);
        if (part_tile.size() < blk * max_words) part_tile.resize(blk * max_words);
        for (std::size_t b0 = c0; b0 < c0 + cnt; b0 += blk) {
            const std::size_t bc = std::min(blk, c0 + cnt - b0);
            for (std::size_t k = 0; k < jobs.size(); ++k) {
                const IcrtJob& jb = jobs[k];
                const Prepared& pr = prep[k];
                const std::size_t words = bigint::words_for_bits(jb.out_bits);
                {
                    KernelClock clk("heaan_icrt");
                    B.icrt_block(*pr.plan[0], pr.in[0].data(), jb.parts[0].shift, jb.out_bits, tile.data(), b0, bc);
                }
                for (std::size_t p = 1; p <= jb.parts.size(); ++p) {
                    const u64* add = nullptr;
                    std::size_t stride = words;
                    if (p < jb.parts.size()) {
                        KernelClock clk("heaan_icrt");
                        B.icrt_block(*pr.plan[p], pr.in[p].data(), jb.parts[p].shift, jb.out_bits, part_tile.data(), b0, bc);
                        add = part_tile.data();
                    } else if (jb.addend) {
                        add = jb.addend + b0 * words;
                    }
                    if (!add) continue;
                    KernelClock clk("heaan_extra");
                    for (std::size_t i = 0; i < bc; ++i) {
                        u64* x = tile.data() + i * words;
                        bigint::add(x, x, add + i * stride, words);
                        bigint::mask_bits(x, words, jb.out_bits);
                    }
                }
                if (jb.out) {
                    KernelClock clk("heaan_icrt");
#if defined(__x86_64__)
                    if (B.ifma() && bc % 8 == 0) detail::copy_stream(jb.out + b0 * words, tile.data(), bc * words);
                    else
#endif
                        std::memcpy(jb.out + b0 * words, tile.data(), bc * words * sizeof(u64));
                }
                if (jb.crt_rows) {
                    KernelClock clk("heaan_crt");
                    B.crt_block(tile.data(), words, jb.out_bits, jb.crt_np, pr.crt_out.data(), b0, bc, pr.crt_off.data());
                }
            }
        }
    });
    count_kernel("heaan_icrt", icrt_calls, icrt_mm, 0, icrt_rd, icrt_wr);
    count_words("heaan_icrt", 0, icrt_wmul, icrt_adc);
    if (crt_calls) {
        count_kernel("heaan_crt", crt_calls, crt_mm, 0, 0, crt_wr);
        count_words("heaan_crt", crt_mm, crt_wmul, crt_wmul);
    }
    if (extra_adc) count_words("heaan_extra", 0, 0, extra_adc);
}

void icrt_poly(const CrtBasis& B, ThreadPool& pool, const u64* rows, std::size_t np, int shift, int out_bits, BigPoly& out) {
    if (out.n != B.n() || out.bits != out_bits) out = BigPoly::uninit(B.n(), out_bits);
    std::vector<IcrtJob> jobs(1);
    jobs[0].parts = {{rows, np, shift}};
    jobs[0].out_bits = out_bits;
    jobs[0].out = out.data.data();
    icrt_stage(B, pool, jobs);
}

BigPoly multiply(const CrtBasis& B, ThreadPool& pool, const BigPoly& a, const BigPoly& b, int shift, int out_bits) {
    if (a.n != B.n() || b.n != B.n()) throw std::invalid_argument("multiply: polynomials must have N = " + std::to_string(B.n()));
    const int log_n = B.ntt(0).log_n;
    const std::size_t np = B.primes_for(a.bits + b.bits + log_n);
    const std::size_t n = B.n();
    RowBuffer rows(2 * np * n);
    u64* ra = rows.data();
    u64* rb = rows.data() + np * n;
    crt_polys(B, pool, {&a, &b}, np, {ra, rb}, /*centered=*/false);
    ntt_rows(B, pool, {ra, rb}, np);
    pool.parallel_for(np, [&](std::size_t j) { vec_mul(ra + j * n, ra + j * n, rb + j * n, n, B.prime(j)); });
    intt_rows(B, pool, {ra}, np);
    BigPoly out;
    icrt_poly(B, pool, rows.data(), np, shift, out_bits, out);
    return out;
}

}  // namespace ember::heaan
