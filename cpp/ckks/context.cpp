#include "ckks/context.hpp"

#include <algorithm>
#include <cmath>

#include <openssl/crypto.h>
#include <stdexcept>
#include <string>
#include <utility>

#include "util/errors.hpp"

namespace ember {

namespace {
CkksParams finalized(CkksParams p) {
    if (!p.finalized()) p.finalize();
    return p;
}
}  // namespace

Context::Context(CkksParams params, int threads, std::shared_ptr<Backend> backend)
    : params_(finalized(std::move(params))),
      ring_(std::make_shared<RingContext>(params_.log_n, params_.q_primes, params_.p_primes, backend ? backend : make_backend(default_device(), threads))),
      encoder_(params_.n()) {
    const std::size_t L = max_level(), U = user_level();
    scales_.assign(L + 1, 0.0);
    scales_[U] = std::ldexp(1.0, params_.log_scale);
    for (std::size_t l = U; l > 0; --l) scales_[l - 1] = scales_[l] * scales_[l] / static_cast<double>(params_.q_primes[l]);
    // Bootstrapping levels: nominal scales (the power of two nearest to the prime); the bootstrapping
    // circuit sets its scales explicitly.
    for (std::size_t l = U + 1; l <= L; ++l) scales_[l] = std::ldexp(1.0, static_cast<int>(std::lround(std::log2(static_cast<double>(params_.q_primes[l])))));
    partition_ = digit_partition(params_.q_primes.size(), static_cast<std::size_t>(params_.dnum));
}

void Context::check_owned(const char* op, const char* what, const Poly& p) const {
    const std::string where = std::string("cannot ") + op;
    if (p.empty()) fail(where, std::string(what) + " is empty");
    if (p.ring_ptr() == ring_) return;
    const RingContext& a = p.ring();
    const RingContext& b = *ring_;
    std::string diff;
    if (a.log_n() != b.log_n()) diff = "log_n " + std::to_string(a.log_n()) + " vs " + std::to_string(b.log_n());
    else if (a.q_count() != b.q_count()) diff = std::to_string(a.q_count()) + " vs " + std::to_string(b.q_count()) + " primes in Q";
    else if (a.p_count() != b.p_count()) diff = std::to_string(a.p_count()) + " vs " + std::to_string(b.p_count()) + " special primes";
    else {
        for (std::size_t i = 0; diff.empty() && i < a.q_count() + a.p_count(); ++i)
            if (a.mod(i).q != b.mod(i).q) diff = "prime " + std::to_string(i) + " is " + std::to_string(a.mod(i).q) + " vs " + std::to_string(b.mod(i).q);
        if (diff.empty()) diff = "the same parameters, another Context object (move it with to_bytes / from_bytes)";
    }
    fail(where, std::string(what) + " belongs to another context: " + diff);
}

void Context::check_owned(const char* op, const Ciphertext& ct) const {
    check_owned(op, "ciphertext", ct.c0);
    check_owned(op, "ciphertext", ct.c1);
}

void Context::check_owned(const char* op, const Plaintext& pt) const { check_owned(op, "plaintext", pt.m); }

void Context::check_owned(const char* op, const SwitchingKey& key, const char* what) const {
    if (key.b.empty()) fail(std::string("cannot ") + op, std::string(what) + " is empty");
    check_owned(op, what, key.b[0]);
}

namespace {
// A fresh nonzero key-set identity (random: two key generations never share one).
std::uint64_t fresh_key_id() {
    const Seed s = fresh_seed();
    std::uint64_t id = 0;
    for (int i = 0; i < 8; ++i) id |= static_cast<std::uint64_t>(s[i]) << (8 * i);
    return id ? id : 1;
}
}  // namespace

Poly Context::small_poly(const std::vector<std::int64_t>& coeffs, std::size_t q_limbs, Basis basis, bool secret) const {
    Poly p(ring_, q_limbs, basis, Form::Coeff, secret);
    HostLimbs h = p.host(0, SIZE_MAX, /*fetch=*/false);  // zero polynomial
    for (std::size_t i = 0; i < p.limbs(); ++i) {
        const Modulus& m = p.table(i).mod;
        u64* d = h.limb(i);
        for (std::size_t c = 0; c < coeffs.size(); ++c) d[c] = m.from_signed(coeffs[c]);
    }
    h.commit();
    poly_to_eval(p);
    return p;
}

Poly expand_uniform(const std::shared_ptr<const RingContext>& ring, const Seed& seed, std::size_t q_limbs, Basis basis) {
    Poly a(ring, q_limbs, basis, Form::Eval);
    const RingContext& r = *ring;
    // Limbs are independent streams (domain = prime index), so they expand in parallel and the
    // expansion of a prefix of the limbs does not depend on how many limbs were asked for.
    // no backend kernel for this: it is key material generation, done on the host
    HostLimbs h = a.host(0, SIZE_MAX, /*fetch=*/false);
    for (std::size_t i = 0; i < a.limbs(); ++i) {
        Prng prng(seed, a.prime_index(i));
        sample_uniform_mod(prng, r.table(a.prime_index(i)).mod, h.limb(i), r.n());
    }
    h.commit();
    return a;
}

std::shared_ptr<SecretKey> Context::gen_secret_key() const {
    return gen_secret_key_with(params_.secret == SecretDist::Ternary ? 0 : static_cast<std::size_t>(params_.hamming_weight));
}

std::shared_ptr<SecretKey> Context::gen_secret_key_with(std::size_t hamming_weight) const {
    Prng prng(fresh_seed(), 0);
    std::vector<std::int64_t> s = hamming_weight == 0 ? sample_ternary(prng, params_.n()) : sample_hamming(prng, params_.n(), hamming_weight);
    auto sk = std::make_shared<SecretKey>();
    sk->s = small_poly(s, params_.q_primes.size(), Basis::QP, /*secret=*/true);
    sk->key_id = fresh_key_id();
    OPENSSL_cleanse(s.data(), s.size() * sizeof(s[0]));
    return sk;
}

std::shared_ptr<PublicKey> Context::gen_public_key(const SecretKey& sk) const {
    // Over QP, so that encryption can divide its noise by P (see encrypt).
    check_owned("generate a public key", "secret key", sk.s);
    const std::size_t ql = params_.q_primes.size();
    auto pk = std::make_shared<PublicKey>();
    pk->key_id = sk.key_id;
    pk->a = expand_uniform(ring_, fresh_seed(), ql, Basis::QP);
    Prng prng(fresh_seed(), 0);
    pk->b = small_poly(sample_gaussian(prng, params_.n(), params_.sigma), ql, Basis::QP);
    Poly as;
    poly_mul(as, pk->a, sk.s);
    poly_sub(pk->b, pk->b, as);  // b = e - a s
    return pk;
}

SwitchingKey Context::gen_switching_key(const Poly& s_to, const Poly& s_prime, bool seeded) const {
    const std::size_t ql = params_.q_primes.size();
    for (const Poly* p : {&s_to, &s_prime})
        if (p->basis() != Basis::QP || p->q_limbs() != ql || p->form() != Form::Eval)
            fail("gen_switching_key", "secrets must be over the full basis QP in evaluation form");
    SwitchingKey key;
    // [P]_{q_i}
    std::vector<u64> p_mod_q(ql);
    for (std::size_t i = 0; i < ql; ++i) {
        const Modulus& qi = ring_->mod(i);
        u64 prod = 1;
        for (u64 p : params_.p_primes) prod = qi.mul(prod, p % qi.q);
        p_mod_q[i] = prod;
    }
    for (std::size_t j = 0; j < partition_.size(); ++j) {
        Seed seed = fresh_seed();
        Poly a = expand_uniform(ring_, seed, ql, Basis::QP);
        Prng prng(fresh_seed(), 0);
        Poly b = small_poly(sample_gaussian(prng, params_.n(), params_.sigma), ql, Basis::QP);
        poly_mul_add(b, a, s_to);   // b = e + a s
        poly_neg(b, b);             // b = -a s - e  (the sign of e is irrelevant)
        // + P * s' on the limbs of digit j
        const auto [first, last] = partition_[j];
        std::vector<LimbRef> out;
        std::vector<const u64*> src;
        std::vector<MulConst> c;
        for (std::size_t i = first; i < last; ++i) {
            out.push_back({b.limb(i), &b.table(i)});
            src.push_back(s_prime.limb(i));
            c.emplace_back(p_mod_q[i], ring_->mod(i));
        }
        ring_->backend().mul_const(out, src, c, /*accumulate=*/true);
        key.b.push_back(std::move(b));
        key.a.push_back(std::move(a));
        if (seeded) key.seeds.push_back(seed);
    }
    return key;
}

std::shared_ptr<SwitchingKey> Context::gen_relin_key(const SecretKey& sk, bool seeded) const {
    check_owned("generate a relinearization key", "secret key", sk.s);
    Poly s2(ring_, params_.q_primes.size(), Basis::QP, Form::Eval, true);
    poly_mul(s2, sk.s, sk.s);
    auto key = std::make_shared<SwitchingKey>(gen_switching_key(sk.s, s2, seeded));
    key->key_id = sk.key_id;
    return key;
}

std::shared_ptr<SecretKey> Context::gen_sparse_secret_key(std::size_t h) const {
    if (h == 0 || h > params_.n()) fail("gen_sparse_secret_key", "hamming_weight must be in [1, N = " + std::to_string(params_.n()) + "], got " + std::to_string(h));
    return gen_secret_key_with(h);
}

std::shared_ptr<SwitchingKey> Context::gen_switching_key(const SecretKey& from, const SecretKey& to, bool seeded) const {
    check_owned("generate a switching key", "secret key", from.s);
    check_owned("generate a switching key", "secret key", to.s);
    auto key = std::make_shared<SwitchingKey>(gen_switching_key(to.s, from.s, seeded));
    key->key_id = to.key_id;
    return key;
}

std::shared_ptr<DigitSwitchingKey> Context::gen_digit_switching_key(const SecretKey& from, const SecretKey& to, int digit_bits) const {
    check_owned("generate a digit switching key", "secret key", from.s);
    check_owned("generate a digit switching key", "secret key", to.s);
    // (base 2 has no balanced digits for positive values: {-1, 0} never reaches +1)
    if (digit_bits < 2 || digit_bits > 30) fail("gen_digit_switching_key", "digit_bits must be in [2, 30], got " + std::to_string(digit_bits));
    const std::size_t N = params_.n();
    // Both secrets over q0 alone (evaluation form: limb 0 of the QP polynomials).
    Poly s0(ring_, 1, Basis::Q, Form::Eval, /*secret=*/true), t0(ring_, 1, Basis::Q, Form::Eval, /*secret=*/true);
    ring_->backend().copy(s0.refs(), from.s.crefs(0, 1));
    ring_->backend().copy(t0.refs(), to.s.crefs(0, 1));
    const Modulus& q0 = ring_->mod(0);
    // Balanced digits of a value below q0: ceil((log2 q0 + 1) / w) + 1 of them suffice.
    const std::size_t D = (static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(q0.q)))) + 1 + digit_bits - 1) / digit_bits + 1;
    auto key = std::make_shared<DigitSwitchingKey>();
    key->digit_bits = digit_bits;
    key->key_id = to.key_id;
    Prng prng(fresh_seed(), 0);
    u64 pow = 1;
    const u64 B = (u64(1) << digit_bits) % q0.q;
    for (std::size_t i = 0; i < D; ++i) {
        // b_i = -a_i to + e_i + B^i from
        Poly a = expand_uniform(ring_, fresh_seed(), 1, Basis::Q);
        Poly b = small_poly(sample_gaussian(prng, N, params_.sigma), 1, Basis::Q);
        Poly t;
        poly_mul(t, a, t0);
        poly_sub(b, b, t);
        poly_mul_const(t, s0, std::vector<u64>{pow});
        poly_add(b, b, t);
        key->parts.emplace_back(std::move(b), std::move(a));
        pow = q0.mul(pow, B);
    }
    return key;
}

std::uint64_t Context::galois_element(long r) const {
    const std::uint64_t two_n = 2 * params_.n(), half = params_.n() / 2;
    long rr = r % static_cast<long>(half);
    if (rr < 0) rr += static_cast<long>(half);
    std::uint64_t g = 1;
    for (long i = 0; i < rr; ++i) g = g * 5 % two_n;
    return g;
}

std::shared_ptr<GaloisKeys> Context::gen_galois_keys(const SecretKey& sk, const std::vector<long>& rotations, bool conjugation, bool seeded) const {
    check_owned("generate Galois keys", "secret key", sk.s);
    auto gk = std::make_shared<GaloisKeys>();
    gk->key_id = sk.key_id;
    std::vector<std::uint64_t> elts;
    for (long r : rotations) {
        std::uint64_t k = galois_element(r);
        if (k != 1) elts.push_back(k);
    }
    if (conjugation) elts.push_back(conjugation_element());
    for (std::uint64_t k : elts) {
        if (gk->keys.count(k)) continue;
        // from s to phi_k^-1(s) = s(X^(k^-1 mod 2N))
        const std::uint64_t two_n = 2 * params_.n();
        std::uint64_t k_inv = 1;
        while (k_inv * k % two_n != 1) k_inv += 2;
        Poly s_inv(ring_, params_.q_primes.size(), Basis::QP, Form::Eval, true);
        poly_automorph(s_inv, sk.s, k_inv);
        SwitchingKey key = gen_switching_key(s_inv, sk.s, seeded);
        key.key_id = sk.key_id;
        gk->keys.emplace(k, std::move(key));
    }
    return gk;
}

KeySet Context::keygen(const std::vector<long>& rotations, bool conjugation, bool seeded) const {
    KeySet ks;
    ks.secret = gen_secret_key();
    ks.pub = gen_public_key(*ks.secret);
    ks.relin = gen_relin_key(*ks.secret, seeded);
    ks.galois = gen_galois_keys(*ks.secret, rotations, conjugation, seeded);
    return ks;
}

Plaintext Context::encode(std::span<const cplx> z, double scale, std::size_t level) const {
    if (level > max_level()) fail("cannot encode", "level " + std::to_string(level) + " above the maximum " + std::to_string(max_level()));
    Plaintext pt;
    pt.m = encoder_.encode(ring_, z, scale, level + 1);
    pt.scale = scale;
    pt.slots = z.size();
    return pt;
}

std::vector<cplx> Context::decode(const Plaintext& pt) const {
    check_owned("decode", pt);
    return encoder_.decode(pt.m, pt.scale, pt.slots);
}

namespace {
// (c0 + m, c1): an encryption of zero with the plaintext added, its scale, slots and key set.
Ciphertext with_message(Poly c0, Poly c1, const Plaintext& pt, std::uint64_t key_id) {
    Ciphertext ct;
    poly_add(ct.c0, c0, pt.m);
    ct.c1 = std::move(c1);
    ct.scale = pt.scale;
    ct.slots = pt.slots;
    ct.key_id = key_id;
    return ct;
}
}  // namespace

Ciphertext Context::encrypt(const Plaintext& pt, const PublicKey& pk) const {
    // (v b + e0, v a + e1) over Q_l U P, then ModDown: the encryption noise v e + e0 + e1 s is divided by
    // P and only the rounding of the division remains (as Lattigo does), so fresh ciphertexts are as
    // precise as secret-key encryptions.
    check_owned("encrypt", pt);
    check_owned("encrypt", "public key", pk.b);
    const std::size_t ql = pt.m.q_limbs();
    Prng prng(fresh_seed(), 0);
    Poly v = small_poly(sample_ternary(prng, params_.n()), ql, Basis::QP, true);
    Poly u0 = small_poly(sample_gaussian(prng, params_.n(), params_.sigma), ql, Basis::QP);
    Poly u1 = small_poly(sample_gaussian(prng, params_.n(), params_.sigma), ql, Basis::QP);
    poly_mul_add(u0, v, restrict_to(pk.b, ql));
    poly_mul_add(u1, v, restrict_to(pk.a, ql));
    return with_message(mod_down_poly(u0), mod_down_poly(u1), pt, pk.key_id);
}

Ciphertext Context::encrypt(const Plaintext& pt, const SecretKey& sk) const {
    check_owned("encrypt", pt);
    check_owned("encrypt", "secret key", sk.s);
    const std::size_t ql = pt.m.q_limbs();
    Prng prng(fresh_seed(), 0);
    Poly c1 = expand_uniform(ring_, fresh_seed(), ql, Basis::Q);
    Poly c0 = small_poly(sample_gaussian(prng, params_.n(), params_.sigma), ql, Basis::Q);
    Poly s(ring_, ql, Basis::Q, Form::Eval, true);
    ring_->backend().copy(s.refs(), sk.s.crefs(0, ql));
    Poly as;
    poly_mul(as, c1, s);
    poly_sub(c0, c0, as);
    return with_message(std::move(c0), std::move(c1), pt, sk.key_id);
}

Plaintext Context::decrypt_raw(const Ciphertext& ct, const SecretKey& sk) const {
    check_owned("decrypt", ct);
    check_owned("decrypt", "secret key", sk.s);
    if (ct.key_id && sk.key_id && ct.key_id != sk.key_id) fail("cannot decrypt", "the secret key is not the one this ciphertext was encrypted for");
    const std::size_t ql = ct.c0.q_limbs();
    Poly s(ring_, ql, Basis::Q, Form::Eval, true);
    ring_->backend().copy(s.refs(), sk.s.crefs(0, ql));
    Plaintext pt;
    pt.m = ct.c0;
    poly_mul_add(pt.m, ct.c1, s);
    pt.scale = ct.scale;
    pt.slots = ct.slots;
    return pt;
}

double DecryptionFlooding::sigma_bits(std::size_t n) const {
    auto bad = [](const std::string& what) { throw std::invalid_argument("DecryptionFlooding: " + what); };
    if (!(noise_bits >= 0 && noise_bits <= 62)) bad("noise_bits must be in [0, 62], got " + std::to_string(noise_bits));
    if (!(statistical_bits >= 0 && statistical_bits <= 128)) bad("statistical_bits must be in [0, 128], got " + std::to_string(statistical_bits));
    if (!(queries >= 1 && queries <= 0x1.0p64)) bad("queries must be in [1, 2^64], got " + std::to_string(queries));
    return statistical_bits / 2 + 0.5 * std::log2(static_cast<double>(n) * queries) + noise_bits;
}

Plaintext Context::decrypt_to_plaintext(const Ciphertext& ct, const SecretKey& sk) const {
    if (auto f = decryption_flooding()) return decrypt_to_plaintext(ct, sk, *f);
    return decrypt_raw(ct, sk);
}

Plaintext Context::decrypt_to_plaintext(const Ciphertext& ct, const SecretKey& sk, const DecryptionFlooding& flood) const {
    const double bits = flood.sigma_bits(params_.n());
    // The sampler's limit; the message is long gone well before (sigma above the scale).
    if (bits > 56) throw std::invalid_argument("decrypt: flooding noise of 2^" + std::to_string(bits) + " exceeds 2^56 (lower noise_bits, statistical_bits or queries)");
    Plaintext pt = decrypt_raw(ct, sk);
    Prng prng(fresh_seed(), 0);
    const Poly f = small_poly(sample_gaussian_wide(prng, params_.n(), std::exp2(bits)), pt.m.q_limbs(), Basis::Q);
    if (pt.m.form() != Form::Eval) throw std::invalid_argument("decrypt: the ciphertext must be in evaluation form");
    poly_add(pt.m, pt.m, f);
    return pt;
}

void Context::set_decryption_flooding(std::optional<DecryptionFlooding> flood) {
    if (flood) flood->sigma_bits(params_.n());  // validates
    std::lock_guard<std::mutex> l(flood_mu_);
    flood_ = flood;
}

std::optional<DecryptionFlooding> Context::decryption_flooding() const {
    std::lock_guard<std::mutex> l(flood_mu_);
    return flood_;
}

double Context::decryption_noise_bits(const Ciphertext& ct, const SecretKey& sk) const {
    Plaintext pt = decrypt_raw(ct, sk);
    poly_to_coeff(pt.m);
    // Centered in the first limb: exact while |c0 + c1 s| < q_0 / 2, which a decryptable encryption of
    // zero satisfies by a wide margin.
    double mx = 0;
    const Modulus& m = ring_->mod(0);
    const HostLimbs h = std::as_const(pt.m).host(0, 1);
    const u64* d = h.limb(0);
    for (std::size_t i = 0; i < params_.n(); ++i) {
        const double v = d[i] > m.q / 2 ? static_cast<double>(m.q - d[i]) : static_cast<double>(d[i]);
        mx = std::max(mx, v);
    }
    return mx > 0 ? std::log2(mx) : 0.0;
}

}  // namespace ember
