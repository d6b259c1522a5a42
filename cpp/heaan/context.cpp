#include "heaan/context.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/thread_pool.hpp"
#include "math/cpu_features.hpp"
#include "math/sampling.hpp"
#include "math/vec_ops.hpp"
#include "trace/trace.hpp"

namespace ember::heaan {

namespace {

// Domain separators of the CSPRNG streams.
constexpr std::uint64_t kDomainSecret = 0x4845414e00000001ull;
constexpr std::uint64_t kDomainUniform = 0x4845414e00000002ull;
constexpr std::uint64_t kDomainError = 0x4845414e00000003ull;
constexpr std::uint64_t kDomainEncrypt = 0x4845414e00000004ull;

bool pow2(std::size_t x) { return x && !(x & (x - 1)); }

/// v as a two's complement integer of n words.
void set_signed(u64* out, std::size_t n, std::int64_t v) {
    const u64 fill = v < 0 ? ~u64(0) : 0;
    out[0] = static_cast<u64>(v);
    for (std::size_t i = 1; i < n; ++i) out[i] = fill;
}

/// HEAAN's ZO(1/2): 0 with probability 1/2, +1 and -1 with 1/4 each.
std::vector<std::int64_t> sample_zo(Prng& prng, std::size_t n) {
    std::vector<std::int64_t> v(n);
    u64 bits = 0;
    int left = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (left < 2) { bits = prng.next_u64(); left = 64; }
        const int r = static_cast<int>(bits & 3);
        bits >>= 2;
        left -= 2;
        v[i] = r < 2 ? 0 : (r == 2 ? 1 : -1);
    }
    return v;
}

}  // namespace

SecretKey::~SecretKey() {
    volatile std::int64_t* p = s.data();
    for (std::size_t i = 0; i < s.size(); ++i) p[i] = 0;
    for (auto& t : sparse.terms) {
        volatile std::uint32_t* pos = &t.first;
        volatile int* sg = &t.second;
        *pos = 0;
        *sg = 0;
    }
}

Context::Context(Params params, int threads) : params_(std::move(params)), encoder_((params_.validate(), params_.n())) {
    if (threads < 1 || threads > 1024) throw std::invalid_argument("heaan::Context: threads must be in [1, 1024], got " + std::to_string(threads));
    (void)cpu_features();  // a bad EMBER_SIMD is refused before any work
    pool_ = std::make_unique<ThreadPool>(threads);
    // enough primes for the largest product: a log Q-bit polynomial times a key modulo Q^2 (region 2)
    const int bound = 3 * params_.log_q + params_.log_n + 5;
    const double per = params_.prime_bits - 0.02;
    const std::size_t count = static_cast<std::size_t>(std::ceil(bound / per)) + 1;
    basis_ = std::make_unique<CrtBasis>(params_.n(), params_.prime_bits, count, 2 * params_.log_q);
}

Context::~Context() = default;

int Context::threads() const { return pool_->size(); }

// Centered operands (|x| <= q/2, keys |k| <= Q^2/2): region 1 sums two products of N terms, |c| <= 2 N q^2 / 4;
// region 2 |c| <= N (q/2) (Q^2/2); encryption (v ternary) |c| <= N Q^2 / 2.
std::size_t Context::primes_region1(int log_q) const { return basis_->primes_for(2 * log_q + params_.log_n - 1); }
std::size_t Context::primes_region2(int log_q) const { return basis_->primes_for(log_q + 2 * params_.log_q + params_.log_n - 2); }

RowBuffer Context::take_scratch(std::size_t words) const {
    {
        std::lock_guard<std::mutex> l(scratch_mu_);
        for (auto it = scratch_.begin(); it != scratch_.end(); ++it) {
            if (it->size() >= words) {
                RowBuffer b = std::move(*it);
                scratch_.erase(it);
                return b;
            }
        }
    }
    return RowBuffer(words);
}

void Context::give_back(RowBuffer&& b) const {
    std::lock_guard<std::mutex> l(scratch_mu_);
    if (scratch_.size() < 4) scratch_.push_back(std::move(b));
}

// ---- keys ---------------------------------------------------------------------------------------------------------

std::shared_ptr<SecretKey> Context::gen_secret_key() const {
    Prng prng(fresh_seed(), kDomainSecret);
    auto sk = std::make_shared<SecretKey>();
    sk->s = sample_hamming(prng, params_.n(), static_cast<std::size_t>(params_.hamming_weight));
    for (std::size_t i = 0; i < sk->s.size(); ++i)
        if (sk->s[i]) sk->sparse.terms.emplace_back(static_cast<std::uint32_t>(i), static_cast<int>(sk->s[i]));
    return sk;
}

BigPoly Context::uniform_poly(int bits) const {
    Prng prng(fresh_seed(), kDomainUniform);
    BigPoly a(params_.n(), bits);
    prng.fill(reinterpret_cast<std::uint8_t*>(a.data.data()), a.data.size() * sizeof(u64));
    for (std::size_t i = 0; i < a.n; ++i) bigint::mask_bits(a.coeff(i), a.words, bits);
    return a;
}

std::shared_ptr<SwitchKey> Context::gen_switch_key(const SecretKey& sk, const std::vector<std::int64_t>& target, std::uint64_t tag,
                                                   std::size_t np) const {
    const std::size_t n = params_.n();
    const int logQ = params_.log_q, bits = 2 * logQ;
    if (sk.s.size() != n) throw std::invalid_argument("keygen: the secret key has N = " + std::to_string(sk.s.size()) + ", the context " + std::to_string(n));
    // b = e - a s + Q target  (mod Q^2)
    BigPoly a = uniform_poly(bits);
    BigPoly b(n, bits);
    {
        Prng prng(fresh_seed(), kDomainError);
        const auto e = sample_gaussian(prng, n, params_.sigma);
        std::vector<u64> t(b.words + 1);
        for (std::size_t i = 0; i < n; ++i) {
            u64* c = b.coeff(i);
            set_signed(c, b.words, e[i]);
            if (!target.empty() && target[i] != 0) {
                // |target_i| 2^logQ, negated for a negative target
                std::fill(t.begin(), t.end(), 0);
                const u64 mag = static_cast<u64>(target[i] < 0 ? -target[i] : target[i]);
                const std::size_t w = static_cast<std::size_t>(logQ) / 64;
                const int off = logQ % 64;
                t[w] = mag << off;
                if (off) t[w + 1] = mag >> (64 - off);
                if (target[i] < 0) bigint::neg(t.data(), t.data(), b.words);
                bigint::add(c, c, t.data(), b.words);
            }
            bigint::mask_bits(c, b.words, bits);
        }
    }
    mul_sparse_add(b, a, sk.sparse, -1, pool_.get());
    auto key = std::make_shared<SwitchKey>();
    key->n = n;
    key->np = np;
    key->galois = tag;
    key->a = RowBuffer(np * n);
    key->b = RowBuffer(np * n);
    crt_polys(*basis_, *pool_, {&a, &b}, np, {key->a.data(), key->b.data()});
    ntt_rows(*basis_, *pool_, {key->a.data(), key->b.data()}, np);
    return key;
}

std::shared_ptr<SwitchKey> Context::gen_public_key(const SecretKey& sk) const {
    return gen_switch_key(sk, {}, 0, basis_->primes_for(2 * params_.log_q + params_.log_n - 1));
}

std::shared_ptr<SwitchKey> Context::gen_mult_key(const SecretKey& sk) const {
    // s^2 in Z[X]/(X^N + 1): h^2 signed monomials
    const std::size_t n = params_.n();
    std::vector<std::int64_t> s2(n, 0);
    for (const auto& [i, si] : sk.sparse.terms)
        for (const auto& [j, sj] : sk.sparse.terms) {
            const std::size_t k = static_cast<std::size_t>(i) + j;
            if (k < n) s2[k] += si * sj;
            else s2[k - n] -= si * sj;
        }
    return gen_switch_key(sk, s2, 1, primes_region2(params_.log_q));
}

std::shared_ptr<SwitchKey> Context::gen_galois_key(const SecretKey& sk, std::uint64_t g) const {
    const std::size_t n = params_.n(), two_n = 2 * n;
    if (g % 2 == 0 || g >= two_n || g == 1) throw std::invalid_argument("keygen: Galois element " + std::to_string(g) + " must be odd, in (1, 2N)");
    std::vector<std::int64_t> t(n, 0);  // s(X^g)
    for (const auto& [i, si] : sk.sparse.terms) {
        const std::size_t j = (static_cast<std::size_t>(i) * g) % two_n;
        if (j < n) t[j] += si;
        else t[j - n] -= si;
    }
    return gen_switch_key(sk, t, g, primes_region2(params_.log_q));
}

std::uint64_t Context::galois_element(long r) const {
    const long half = static_cast<long>(params_.n() / 2);
    long k = r % half;
    if (k < 0) k += half;
    const std::uint64_t two_n = 2 * params_.n();
    std::uint64_t g = 1;
    for (long i = 0; i < k; ++i) g = g * 5 % two_n;
    return g;
}

KeySet Context::keygen(const std::vector<long>& rotations, bool conjugation) const {
    KeySet ks;
    ks.secret = gen_secret_key();
    ks.pub = gen_public_key(*ks.secret);
    ks.mult = gen_mult_key(*ks.secret);
    for (long r : rotations) {
        const std::uint64_t g = galois_element(r);
        if (g != 1 && !ks.galois.count(g)) ks.galois[g] = gen_galois_key(*ks.secret, g);
    }
    if (conjugation) ks.galois[conjugation_element()] = gen_galois_key(*ks.secret, conjugation_element());
    return ks;
}

// ---- encoding -----------------------------------------------------------------------------------------------------

BigPoly Context::encode(std::span<const cplx> z, int log_scale, int log_q) const {
    const std::size_t n = params_.n(), slots = z.size();
    if (!pow2(slots) || slots > n / 2)
        throw std::invalid_argument("cannot encode: " + std::to_string(slots) + " values; the slot count must be a power of two <= N/2 = " + std::to_string(n / 2));
    if (log_q < 1 || log_q > params_.log_q) throw std::invalid_argument("cannot encode: log_q = " + std::to_string(log_q) + " must be in [1, " + std::to_string(params_.log_q) + "]");
    if (log_scale < 0 || log_scale >= log_q) throw std::invalid_argument("cannot encode: log_scale = " + std::to_string(log_scale) + " must be in [0, log_q)");
    std::vector<cplx> w(z.begin(), z.end());
    encoder_.fft_special_inv(w);
    const std::size_t gap = n / (2 * slots);
    BigPoly m(n, log_q);
    for (std::size_t k = 0; k < slots; ++k) {
        bigint::from_double(m.coeff(k * gap), log_q, std::ldexp(w[k].real(), log_scale));
        bigint::from_double(m.coeff((k + slots) * gap), log_q, std::ldexp(w[k].imag(), log_scale));
    }
    return m;
}

std::vector<cplx> Context::decode(const BigPoly& m, int log_scale, std::size_t slots) const {
    const std::size_t n = params_.n();
    if (m.n != n) throw std::invalid_argument("cannot decode: polynomial of degree " + std::to_string(m.n));
    if (!pow2(slots) || slots > n / 2) throw std::invalid_argument("cannot decode: bad slot count " + std::to_string(slots));
    const std::size_t gap = n / (2 * slots);
    std::vector<cplx> w(slots);
    for (std::size_t k = 0; k < slots; ++k) {
        const double re = bigint::to_double_centered(m.coeff(k * gap), m.bits);
        const double im = bigint::to_double_centered(m.coeff((k + slots) * gap), m.bits);
        w[k] = cplx(std::ldexp(re, -log_scale), std::ldexp(im, -log_scale));
    }
    encoder_.fft_special(w);
    return w;
}

// ---- encryption ---------------------------------------------------------------------------------------------------

Ciphertext Context::encrypt(std::span<const cplx> z, const SwitchKey& pk, int log_scale, int log_q) const {
    if (log_scale == 0) log_scale = params_.log_p;
    if (log_q == 0) log_q = params_.log_q;
    if (pk.galois != 0) throw std::invalid_argument("cannot encrypt: the key given is not a public key");
    const std::size_t n = params_.n();
    if (pk.n != n) throw std::invalid_argument("cannot encrypt: the public key has N = " + std::to_string(pk.n));
    Ciphertext ct;
    BigPoly m = encode(z, log_scale, log_q);
    ct.slots = z.size();
    ct.log_scale = log_scale;

    // (v pk.a, v pk.b) / Q: the Gaussian e1, e0 that HEAAN adds before the shift move round(x / Q) only when
    // x mod Q lies within 2^5 of Q/2, which happens with probability below 2^(6 - logQ) per coefficient: the
    // shifted ciphertext has the same distribution up to N 2^(6 - logQ), so they are left out.
    Prng prng(fresh_seed(), kDomainEncrypt);
    const auto v = sample_zo(prng, n);
    const std::size_t np = basis_->primes_for(2 * params_.log_q + params_.log_n - 1);
    if (np > pk.np) throw std::invalid_argument("cannot encrypt: the public key has " + std::to_string(pk.np) + " primes, " + std::to_string(np) + " needed");
    RowBuffer ws = take_scratch(2 * np * n);
    u64* V = ws.data();
    u64* A = ws.data() + np * n;
    crt_small(*basis_, *pool_, v, np, V);
    multiply_by_key(np, V, A, pk);
    ct.a = BigPoly::uninit(n, log_q);
    ct.b = BigPoly::uninit(n, log_q);
    std::vector<IcrtJob> jobs(2);
    jobs[0].parts = {{A, np, params_.log_q}};
    jobs[0].out = ct.a.data.data();
    jobs[1].parts = {{V, np, params_.log_q}};
    jobs[1].addend = m.data.data();
    jobs[1].out = ct.b.data.data();
    for (auto& jb : jobs) jb.out_bits = log_q;
    icrt_stage(*basis_, *pool_, jobs);
    give_back(std::move(ws));
    return ct;
}

std::vector<cplx> Context::decrypt(const Ciphertext& ct, const SecretKey& sk) const {
    if (sk.s.size() != params_.n()) throw std::invalid_argument("cannot decrypt: the secret key has N = " + std::to_string(sk.s.size()));
    check_same("decrypt", ct.a, ct.b);
    BigPoly m = ct.b;
    mul_sparse_add(m, ct.a, sk.sparse, 1, pool_.get());
    return decode(m, ct.log_scale, ct.slots);
}

}  // namespace ember::heaan
