#include "circuits/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "util/errors.hpp"

#include "circuits/dft.hpp"

namespace ember {

namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void bad(const std::string& why) { fail("bootstrapping", why); }

// s_B = sin(2 pi B / 2^R): the largest |sine| a message coefficient |c| <= B produces (the sine must stay
// monotone there: 2 pi B / 2^R < pi / 2).
double sine_bound(const BootstrapConfig& cfg) {
    const double a = 2 * kPi * cfg.input_bound / std::ldexp(1.0, cfg.message_ratio_bits);
    if (!(a < 0.5 * kPi))
        bad("message_ratio_bits = " + std::to_string(cfg.message_ratio_bits) + " is too small for input_bound = " + std::to_string(cfg.input_bound) +
            ": 2 pi B / 2^R must stay below pi / 2 (R >= " + std::to_string(static_cast<int>(std::ceil(std::log2(4 * cfg.input_bound)))) + ")");
    return std::sin(a);
}

bool pow2(std::size_t x) { return x && !(x & (x - 1)); }
std::size_t log2_exact(std::size_t x) {
    std::size_t r = 0;
    while ((std::size_t(1) << r) < x) ++r;
    return r;
}

// cos(2 pi (K y - 1/4) / 2^r) on y in [-1, 1]: after r double angles, sin(2 pi K y).
// The automatic sine degree's range: depth 7 (64 < d <= 127); the unresolved configuration plans its levels with
// kAutoDegreeMax (every degree of the range has its depth when depth_optimal; otherwise the automatic degree is
// kAutoDegreeShallow, the earlier fixed default, so that the levels planned and used agree).
constexpr std::size_t kAutoDegreeMin = 65, kAutoDegreeMax = 127, kAutoDegreeShallow = 119;

std::size_t planned_degree(const BootstrapConfig& cfg) {
    if (cfg.cheb_degree) return cfg.cheb_degree;
    return cfg.depth_optimal ? kAutoDegreeMax : kAutoDegreeShallow;
}

ChebyshevPoly cosine_poly(const BootstrapConfig& cfg) {
    const double K = cfg.k_range, scale = std::ldexp(1.0, -static_cast<int>(cfg.double_angles));
    ChebyshevPoly p = ChebyshevPoly::interpolate([&](double y) { return std::cos(2 * kPi * (K * y - 0.25) * scale); }, planned_degree(cfg), -1.0, 1.0);
    // Without double angles this is sin(2 pi K y), odd: its even coefficients are exactly 0 (the
    // evaluation then builds and multiplies only the odd T_k).
    if (cfg.double_angles == 0)
        for (std::size_t k = 0; k < p.coeffs.size(); k += 2) p.coeffs[k] = 0.0;
    return p;
}

void check_config(const BootstrapConfig& cfg) {
    if (!(cfg.k_range >= 1 && cfg.k_range <= 1024)) bad("k_range must be in [1, 1024]");
    if (cfg.cheb_degree != 0 && (cfg.cheb_degree < 2 || cfg.cheb_degree > 1023)) bad("cheb_degree must be 0 (automatic) or in [2, 1023]");
    if (cfg.double_angles > 8) bad("double_angles must be at most 8");
    if (cfg.message_ratio_bits != 0 && (cfg.message_ratio_bits < 2 || cfg.message_ratio_bits > 40))
        bad("message_ratio_bits must be 0 (automatic) or in [2, 40]");
    if (cfg.ephemeral_weight < 0) bad("ephemeral_weight must be >= 0");
    if (cfg.encaps_digit_bits < 2 || cfg.encaps_digit_bits > 30) bad("encaps_digit_bits must be in [2, 30]");
    if (cfg.cts_levels < 1 || cfg.stc_levels < 1) bad("cts_levels and stc_levels must be >= 1");
    if (cfg.arcsin && (cfg.arcsin_degree < 3 || cfg.arcsin_degree > 63 || cfg.arcsin_degree % 2 == 0))
        bad("arcsin_degree must be odd, in [3, 63]");
    if (!(cfg.input_bound > 0 && cfg.input_bound <= 64)) bad("input_bound must be in (0, 64]");
}

// The modelled noise of a bootstrap in message units, for choosing R: rescale roundings at the 2^60 EvalMod
// scale (sqrt(N / 18) per coefficient, sqrt(min(4n, N)) of them in a slot), times EvalMod's gain on them
// (its slope 2 pi K, doubled by every double angle, times 2), 2^R back to the message and sqrt(2n) for
// SlotToCoeff's sum. Calibrated against measurements at N = 2^13 .. 2^16 (tests/cpp/test_bootstrap.cpp).
double noise_model(const BootstrapConfig& cfg, std::size_t n, std::size_t N) {
    const double gain = 4 * kPi * cfg.k_range * std::ldexp(1.0, static_cast<int>(cfg.double_angles));
    return gain * std::ldexp(1.0, cfg.message_ratio_bits) * std::sqrt(2.0 * n) * std::sqrt(N / 18.0) *
           std::sqrt(static_cast<double>(std::min(4 * n, N))) * std::ldexp(1.0, -60);
}

// The block-diagonal diag(A, A) on 2n slots from the diagonals of A on n slots.
Diagonals doubled(const Diagonals& a, std::size_t n) {
    Diagonals out;
    for (const auto& [k, d] : a) {
        for (std::size_t r = 0; r < 2 * n; ++r) {
            const std::size_t rr = r % n;
            const long off = (rr + static_cast<std::size_t>(k) < n) ? k : k + static_cast<long>(n);  // column wraps inside the block
            auto& v = out[off % static_cast<long>(2 * n)];
            if (v.empty()) v.assign(2 * n, cplx(0, 0));
            v[r] += d[rr];
        }
    }
    return out;
}

// 2n x 2n matrices: D = diag(c_top * I, c_bottom * I) and M1 = [[I, iI], [I, iI]].
Diagonals halves(std::size_t n, cplx top, cplx bottom) {
    Diagonals d;
    d[0].assign(2 * n, top);
    for (std::size_t r = n; r < 2 * n; ++r) d[0][r] = bottom;
    return d;
}
Diagonals recombine(std::size_t n) {
    Diagonals d;
    d[0].assign(2 * n, cplx(1, 0));
    d[static_cast<long>(n)].assign(2 * n, cplx(0, 1));
    for (std::size_t r = n; r < 2 * n; ++r) {
        d[0][r] = cplx(0, 1);
        d[static_cast<long>(n)][r] = cplx(1, 0);
    }
    return d;
}

// Scales along a chain of linear transforms from in0 (before the first) to out_last (after the last),
// applied at levels top, top - 1, ...: a factor at level l turns scale `in` into `out` with plaintexts at
// pt = out q_l / in, and its diagonals are encoded to pt * max|entry| integers. The product of all pt is
// fixed by the chain, so the intermediate scales are chosen to give every factor the same precision
// (the CoeffToSlot factor carrying 1/n would otherwise lose log2(n) bits). Returns (in, out) per factor.
std::vector<std::pair<double, double>> plan_scales(const Context& c, const std::vector<Diagonals>& factors, std::size_t top, double in0,
                                                   double out_last) {
    const std::size_t J = factors.size();
    std::vector<double> lm(J);  // log2 max |entry|
    double total = std::log2(out_last) - std::log2(in0);
    for (std::size_t j = 0; j < J; ++j) {
        double m = 0;
        for (const auto& [k, d] : factors[j])
            for (const auto& v : d) m = std::max(m, std::abs(v));
        lm[j] = std::log2(m > 0 ? m : 1.0);
        total += std::log2(static_cast<double>(c.params().q_primes[top - j])) + lm[j];
    }
    const double e = total / static_cast<double>(J);  // bits of every factor's encoded entries
    std::vector<std::pair<double, double>> r(J);
    double in = std::log2(in0);
    for (std::size_t j = 0; j < J; ++j) {
        const double out = j + 1 == J ? std::log2(out_last) : e - lm[j] + in - std::log2(static_cast<double>(c.params().q_primes[top - j]));
        r[j] = {std::exp2(in), j + 1 == J ? out_last : std::exp2(out)};
        in = out;
    }
    r[0].first = in0;
    return r;
}


}  // namespace

BootstrapConfig BootstrapConfig::resolved(int log_n) const {
    BootstrapConfig c = *this;
    if (log_n < 1 || log_n > 30) bad("log_n out of range");
    check_config(c);
    const std::size_t N = std::size_t(1) << log_n, n = slots ? slots : N / 2;
    if (c.message_ratio_bits == 0) {
        // The R with the smallest modelled worst-case error over |c| <= B: EvalMod's approximation error
        // falls with R (the sine's argument 2 pi c / 2^R shrinks), the noise grows as 2^R.
        double best = INFINITY;
        for (int R = 2; R <= 20; ++R) {
            BootstrapConfig t = c;
            t.message_ratio_bits = R;
            if (2 * kPi * t.input_bound / std::ldexp(1.0, R) >= 0.45 * kPi) continue;  // sine too close to its turn
            const double e = t.approx_error() + noise_model(t, n, N);
            if (e < best) {
                best = e;
                c.message_ratio_bits = R;
            }
        }
        if (c.message_ratio_bits == 0) bad("no message ratio fits input_bound = " + std::to_string(c.input_bound));
    }
    if (c.cheb_degree == 0) {
        c.cheb_degree = planned_degree(c);
        if (c.depth_optimal) {
            // The lowest degree (odd without double angles: the sine is odd) whose worst-case EvalMod error is
            // within a twentieth of a bit of the highest degree's: the error falls with the degree until the
            // arcsine's (or the noise's) share dominates, and every degree below the cap saves products at the
            // same depth. (A quarter bit picked 109 at N = 2^16, R = 4, which measured 0.5 bit below 111 over the
            // input battery, 25.66 against 26.2: the float64 model does not see all of the sine's error.)
            const double limit = c.approx_error() * std::exp2(0.05);
            const std::size_t step = c.double_angles == 0 ? 2 : 1;
            std::size_t lo = 0, hi = (kAutoDegreeMax - kAutoDegreeMin) / step;  // candidate index: kAutoDegreeMin + step * i
            while (lo < hi) {  // the error is monotone in the degree here: binary search for the first that fits
                const std::size_t mid = (lo + hi) / 2;
                BootstrapConfig t = c;
                t.cheb_degree = kAutoDegreeMin + step * mid;
                if (t.approx_error() <= limit) hi = mid;
                else lo = mid + 1;
            }
            c.cheb_degree = kAutoDegreeMin + step * lo;
        }
    }
    return c;
}

ChebyshevPoly BootstrapConfig::arcsin_poly() const {
    if (message_ratio_bits < 2) bad("arcsin_poly needs a resolved message_ratio_bits");
    const double sb = sine_bound(*this);
    ChebyshevPoly p = ChebyshevPoly::interpolate([sb](double u) { return std::asin(sb * u) / (2 * kPi); }, arcsin_degree, -1.0, 1.0);
    for (std::size_t k = 0; k < p.coeffs.size(); k += 2) p.coeffs[k] = 0.0;  // odd: exactly
    return p;
}

double BootstrapConfig::approx_error() const {
    const ChebyshevPoly cosp = cosine_poly(*this);
    const ChebyshevPoly asp = arcsin ? arcsin_poly() : ChebyshevPoly{};
    const double ratio = std::ldexp(1.0, message_ratio_bits), sb = arcsin ? sine_bound(*this) : 1.0;
    const int span = static_cast<int>(std::floor(k_range - input_bound / ratio));
    double worst = 0;
    for (int I = -span; I <= span; ++I)
        for (int j = -100; j <= 100; ++j) {
            const double c = input_bound * j / 100.0, y = (I + c / ratio) / k_range;
            double v = cosp(y);
            for (std::size_t d = 0; d < double_angles; ++d) v = 2 * v * v - 1;
            const double got = arcsin ? ratio * asp(v / sb) : ratio * v / (2 * kPi);
            worst = std::max(worst, std::fabs(got - c));
        }
    return worst;
}

std::size_t BootstrapConfig::evalmod_depth() const {
    check_config(*this);
    std::size_t asin_depth = 0;
    if (arcsin) {  // the depth depends only on the degree (the odd terms are all there)
        ChebyshevPoly p;
        p.coeffs.assign(arcsin_degree + 1, 0.0);
        for (std::size_t k = 1; k <= arcsin_degree; k += 2) p.coeffs[k] = 1.0;
        asin_depth = chebyshev_depth(p, true);
    }
    return chebyshev_depth(cosine_poly(*this), depth_optimal) + double_angles + asin_depth;
}

std::vector<int> BootstrapConfig::boot_bits(int stc_bits, int cts_bits) const {
    std::vector<int> b(stc_levels, stc_bits);
    b.insert(b.end(), evalmod_depth(), 60);
    b.insert(b.end(), cts_levels, cts_bits);
    return b;
}

CkksParams bootstrappable_params(int log_n, int levels, int log_scale, const BootstrapConfig& cfg, int dnum, int stc_bits, int cts_bits,
                                 bool insecure, int hamming_weight, int special_bits, int first_mod_bits) {
    CkksParams p;
    p.log_n = log_n;
    p.levels = levels;
    p.log_scale = log_scale;
    p.first_mod_bits = first_mod_bits;  // q0: Delta0 = q0 / 2^R bounds the scale of the level-0 input
    p.boot_bits = cfg.boot_bits(stc_bits, cts_bits);
    p.insecure = insecure;
    // 8 bits of margin: the key-switching error stays below a rescale's rounding error, and P stays small
    // enough for dnum = 5 within the 128-bit bound at N = 2^16.
    p.ks_margin_bits = 8;
    // 52-bit special primes: P is cut finer than with 60-bit ones (6 x 52 = 312 bits for the largest digit
    // of 300 + 8 at N = 2^16 instead of 6 x 60), which leaves room for EvalMod's eleven 60-bit levels
    // within the 128-bit bound at dnum = 6.
    p.special_mod_bits = special_bits;
    if (hamming_weight > 0) {
        p.secret = SecretDist::HammingWeight;
        p.hamming_weight = hamming_weight;
    }
    const int primes = levels + 1 + static_cast<int>(p.boot_bits.size());
    if (dnum == 0 && insecure) dnum = std::min(3, primes);
    if (dnum > 0) {
        p.dnum = dnum;
        p.finalize();
        return p;
    }
    std::string last;
    for (int d = 1; d <= primes; ++d) {
        CkksParams t = p;
        t.dnum = d;
        try {
            t.finalize();
            return t;
        } catch (const std::invalid_argument& e) {
            last = e.what();
        }
    }
    fail("bootstrappable_params", "no dnum fits the 128-bit bound (" + last + ")");
}

Bootstrapper::Bootstrapper(std::shared_ptr<const Context> ctx, BootstrapConfig cfg) : ctx_(std::move(ctx)), ev_(ctx_, cfg.merged_moddown), cfg_(cfg) {
    if (!ctx_) bad("no context");
    check_config(cfg_);
    cfg_ = cfg_.resolved(ctx_->params().log_n);
    const Context& c = *ctx_;
    const std::size_t N = c.params().n();
    n_ = cfg_.slots ? cfg_.slots : N / 2;
    if (!pow2(n_) || n_ > N / 2 || n_ < 2) bad("slots must be a power of two in [2, N/2 = " + std::to_string(N / 2) + "], got " + std::to_string(n_));
    gap_ = N / (2 * n_);
    sparse_ = n_ < N / 2;
    const std::size_t stages = log2_exact(n_);
    if (cfg_.cts_levels > stages || cfg_.stc_levels > stages)
        bad("cts_levels and stc_levels must be at most log2(slots) = " + std::to_string(stages));
    poly_ = cosine_poly(cfg_);
    if (cfg_.arcsin) asin_ = cfg_.arcsin_poly();
    const std::size_t em = cfg_.evalmod_depth();
    const std::size_t need = cfg_.stc_levels + em + cfg_.cts_levels;
    if (c.params().boot_bits.size() != need)
        bad("the parameters have " + std::to_string(c.params().boot_bits.size()) + " bootstrapping levels, this configuration needs " +
            std::to_string(need) + " (SlotToCoeff " + std::to_string(cfg_.stc_levels) + " + EvalMod " + std::to_string(em) + " + CoeffToSlot " +
            std::to_string(cfg_.cts_levels) + "); build them with bootstrappable_params");
    out_level_ = c.user_level();
    top_ = c.max_level();
    stc_top_ = out_level_ + cfg_.stc_levels;
    evalmod_in_ = top_ - cfg_.cts_levels;
    const double q0 = static_cast<double>(c.params().q_primes[0]);
    cts_in_ = cfg_.k_range * q0 * static_cast<double>(gap_);
    evalmod_in_scale_ = c.scale_at(evalmod_in_);
    // SlotToCoeff input: the scale at which EvalMod's output (sin(2 pi t / q0), read as m) sits near 2^60.
    stc_in_ = std::ldexp(cfg_.arcsin ? 1.0 : 2 * kPi, 60 - cfg_.message_ratio_bits);

    // CoeffToSlot: the inverse special FFT (with 1/2 for the real / imaginary split), the last factor
    // of a sparse transform on 2n slots with diag(1/2, -i/2) so that u + conj(u) = [Re w, Im w].
    const Encoder& enc = c.encoder();
    auto cts = coeff_to_slot_factors(enc, n_, cfg_.cts_levels, sparse_ ? 1.0 : 0.5);
    std::vector<std::size_t> cts_slots(cts.size(), n_);
    if (sparse_) {
        cts.back() = compose(halves(n_, cplx(0.5, 0), cplx(0, -0.5)), doubled(cts.back(), n_), 2 * n_);
        cts_slots.back() = 2 * n_;
    }
    const auto cts_scales = plan_scales(c, cts, top_, cts_in_, evalmod_in_scale_);
    for (std::size_t j = 0; j < cts.size(); ++j)
        cts_.emplace_back(ctx_, cts[j], cts_slots[j], top_ - j, 0, cts_scales[j].first, cts_scales[j].second, cfg_.hoisted_moddown);
    if (!sparse_) {
        minus_i_ = monomial_i(evalmod_in_, true);
        plus_i_ = monomial_i(stc_top_, false);
    }
    // SlotToCoeff: the special FFT; a sparse transform's first factor on 2n slots recombines [a, b] into a + i b.
    auto stc = slot_to_coeff_factors(enc, n_, cfg_.stc_levels, 1.0);
    std::vector<std::size_t> stc_slots(stc.size(), n_);
    if (sparse_) {
        stc.front() = compose(doubled(stc.front(), n_), recombine(n_), 2 * n_);
        stc_slots.front() = 2 * n_;
    }
    const auto stc_scales = plan_scales(c, stc, stc_top_, stc_in_, c.scale_at(out_level_));
    for (std::size_t j = 0; j < stc.size(); ++j)
        stc_.emplace_back(ctx_, stc[j], stc_slots[j], stc_top_ - j, 0, stc_scales[j].first, stc_scales[j].second, cfg_.hoisted_moddown);
}

std::vector<long> Bootstrapper::rotations() const {
    std::set<long> r;
    for (const auto* v : {&cts_, &stc_})
        for (const auto& lt : *v)
            for (long k : lt.rotations()) r.insert(k);
    for (std::size_t s = n_; s < ctx_->params().n() / 2; s <<= 1) r.insert(static_cast<long>(s));
    return {r.begin(), r.end()};
}

BootstrapKeys Bootstrapper::gen_keys(const SecretKey& sk, bool seeded) const {
    BootstrapKeys k;
    k.relin = ctx_->gen_relin_key(sk, seeded);
    k.galois = ctx_->gen_galois_keys(sk, rotations(), /*conjugation=*/true, seeded);
    gen_encapsulation_keys(sk, k, seeded);
    return k;
}

void Bootstrapper::gen_encapsulation_keys(const SecretKey& sk, BootstrapKeys& k, bool seeded) const {
    if (cfg_.ephemeral_weight <= 0) return;
    const Context& c = *ctx_;
    if (static_cast<std::size_t>(cfg_.ephemeral_weight) > c.params().n()) bad("ephemeral_weight exceeds N");
    // All from the key generator: the ephemeral sparse secret s', the BV key s -> s' over q0 and the
    // hybrid key s' -> s over QP under the dense secret (the HE-standard bound applies to it as to every key).
    const auto sparse = c.gen_sparse_secret_key(static_cast<std::size_t>(cfg_.ephemeral_weight));
    k.from_sparse = c.gen_switching_key(*sparse, sk, seeded);
    k.to_sparse = c.gen_digit_switching_key(sk, *sparse, cfg_.encaps_digit_bits);
}

Ciphertext Bootstrapper::mod_raise(const Ciphertext& ct, const BootstrapKeys& keys, double& delta0) const {
    if (ct.c0.empty()) bad("empty ciphertext");
    if (ct.slots != n_) bad("the ciphertext packs " + std::to_string(ct.slots) + " slots, the bootstrapper " + std::to_string(n_));
    const Context& c = *ctx_;
    const double q0 = static_cast<double>(c.params().q_primes[0]);
    Ciphertext x = ev_.drop_to_level(ct, 0);
    // Message ratio: the integer that brings the scale to q0 / 2^R.
    const double k = std::round(q0 / (std::ldexp(1.0, cfg_.message_ratio_bits) * x.scale));
    if (k < 1) bad("the input scale " + scale_str(x.scale) + " is above q0 / 2^" + std::to_string(cfg_.message_ratio_bits));
    if (k > 1) x = ev_.mul_round(x, k);
    delta0 = x.scale;
    const bool encaps = cfg_.ephemeral_weight > 0;
    if (encaps) {
        if (!keys.to_sparse || keys.to_sparse->parts.empty() || !keys.from_sparse) bad("no encapsulation keys; generate them with Bootstrapper::gen_keys");
        if (keys.to_sparse->digit_bits != cfg_.encaps_digit_bits)
            bad("the encapsulation key has digits of " + std::to_string(keys.to_sparse->digit_bits) + " bits, the configuration " + std::to_string(cfg_.encaps_digit_bits));
        x = ev_.key_switch(x, *keys.to_sparse);  // s -> s' over q0
    }
    x = ev_.mod_raise(x, top_);  // the plaintext becomes t = Delta0 m + q0 I over Q_L
    if (encaps) x = ev_.key_switch(x, *keys.from_sparse);  // s' -> s over QP
    x.scale = cts_in_;
    x.slots = n_;
    return x;
}

Ciphertext Bootstrapper::sub_sum(const Ciphertext& ct, const GaloisKeys& gk) const {
    Ciphertext x = ct;
    x.slots = ctx_->params().n() / 2;
    for (std::size_t s = n_; s < ctx_->params().n() / 2; s <<= 1) x = ev_.add(x, ev_.rotate(x, static_cast<long>(s), gk));
    x.slots = n_;
    return x;
}

Ciphertext Bootstrapper::apply(const LinearTransform& lt, const Ciphertext& ct, const GaloisKeys& gk) const {
    Ciphertext x = ct;
    x.slots = lt.slots();  // n or 2n: a polynomial of the n-slot subring reads as [z, z] on 2n slots
    return lt.apply(ev_, x, gk);  // double hoisting (hoisted_moddown), else single
}

Plaintext Bootstrapper::monomial_i(std::size_t level, bool negative) const {
    // X^(N/2) is i at every slot (zeta^(5^j N / 2) = i^(5^j) = i): a product by it is exact and takes no level.
    const Context& c = *ctx_;
    Plaintext p;
    p.m = Poly(c.ring(), level + 1, Basis::Q, Form::Coeff);
    HostLimbs h = p.m.host(0, SIZE_MAX, /*fetch=*/false);  // zero polynomial
    for (std::size_t i = 0; i < p.m.limbs(); ++i) h.limb(i)[c.params().n() / 2] = negative ? p.m.table(i).mod.q - 1 : 1;
    h.commit();
    poly_to_eval(p.m);
    p.scale = 1;
    p.slots = n_;
    return p;
}

Ciphertext Bootstrapper::times_i(const Ciphertext& ct, bool negative) const {
    // the two uses (full slots): -i after CoeffToSlot, +i before SlotToCoeff, encoded once in the constructor
    const Plaintext& p = negative ? minus_i_ : plus_i_;
    if (p.m.empty() || p.level() != ct.level() || ct.slots != n_) return ev_.mul_plain(ct, monomial_i(ct.level(), negative));
    return ev_.mul_plain(ct, p);
}

std::vector<Ciphertext> Bootstrapper::coeff_to_slot(const Ciphertext& ct, const GaloisKeys& gk) const {
    Ciphertext x = ct;
    for (const auto& lt : cts_) x = apply(lt, x, gk);
    const Ciphertext xc = ev_.conjugate(x, gk);
    if (sparse_) return {ev_.add(x, xc)};
    return {ev_.add(x, xc), times_i(ev_.sub(x, xc), /*negative=*/true)};
}

Ciphertext Bootstrapper::eval_mod(const Ciphertext& ct, const SwitchingKey& rlk, double target_scale) const {
    const Context& c = *ctx_;
    const std::size_t r = cfg_.double_angles;
    // Scales backwards through the double angles: a square at level l lands on s^2 / q_l.
    const std::size_t sine_out = stc_top_ + (cfg_.arcsin ? chebyshev_depth(asin_, true) : 0), poly_out = sine_out + r;
    // The sine lands near 2^60 (its own level's scale) when the arcsine follows, else on the target.
    const double sine_scale = cfg_.arcsin ? c.scale_at(sine_out) : target_scale;
    double s = sine_scale;
    for (std::size_t j = r; j-- > 0;) s = std::sqrt(s * static_cast<double>(c.params().q_primes[poly_out - j]));
    Ciphertext x = evaluate_chebyshev(ev_, ct, poly_, rlk, s, cfg_.depth_optimal);
    if (x.level() != poly_out) bad("internal: EvalMod polynomial landed on level " + std::to_string(x.level()));
    for (std::size_t j = 0; j < r; ++j) x = ev_.add_const(ev_.mul_int(ev_.mul(x, x, rlk), 2), cplx(-1, 0));
    x.scale = sine_scale;
    if (cfg_.arcsin) {
        x.scale = sine_scale * sine_bound(cfg_);  // the same ciphertext read as s / s_B, the arcsine's variable
        x = evaluate_chebyshev(ev_, x, asin_, rlk, target_scale, true);
    }
    x.scale = target_scale;
    return x;
}

Ciphertext Bootstrapper::slot_to_coeff(const std::vector<Ciphertext>& parts, const GaloisKeys& gk) const {
    Ciphertext x = parts.size() == 1 ? parts[0] : ev_.add(parts[0], times_i(parts[1], false));
    for (const auto& lt : stc_) x = apply(lt, x, gk);
    x.slots = n_;
    return x;
}

Ciphertext Bootstrapper::bootstrap(const Ciphertext& ct, const BootstrapKeys& keys) const {
    if (!keys.relin || !keys.galois) bad("missing keys; generate them with Bootstrapper::gen_keys");
    double delta0 = 0;
    Ciphertext x = mod_raise(ct, keys, delta0);
    if (sparse_) x = sub_sum(x, *keys.galois);
    std::vector<Ciphertext> parts = coeff_to_slot(x, *keys.galois);
    // EvalMod lands on the scale at which its output, sin(2 pi t / q0) ~= 2 pi Delta0 m / q0 or with the
    // arcsine Delta0 m / q0, reads as m on stc_in_.
    const double q0 = static_cast<double>(ctx_->params().q_primes[0]);
    const double target = stc_in_ * q0 / ((cfg_.arcsin ? 1.0 : 2 * kPi) * delta0);
    for (auto& p : parts) {
        p = eval_mod(p, *keys.relin, target);
        p.scale = stc_in_;
    }
    return slot_to_coeff(parts, *keys.galois);
}

Ciphertext Bootstrapper::bootstrap_iterative(const Ciphertext& ct, const BootstrapKeys& keys, int residual_bits) const {
    if (residual_bits == 0) residual_bits = 20;
    if (residual_bits < 1 || residual_bits > 40) bad("residual_bits must be in [1, 40], got " + std::to_string(residual_bits));
    const Ciphertext y1 = bootstrap(ct, keys);
    // ct - y1 on ct's level and scale (the evaluator brings y1 down exactly), times 2^residual_bits
    const std::int64_t up = std::int64_t(1) << residual_bits;
    Ciphertext y2 = bootstrap(ev_.mul_int(ev_.sub(ct, y1), up), keys);
    Ciphertext x = ev_.mul_int(y1, up);
    x.scale = y1.scale * static_cast<double>(up);  // the same message on 2^k times the scale
    y2.scale *= static_cast<double>(up);            // y2 / 2^k
    return ev_.add(x, y2);
}

}  // namespace ember
