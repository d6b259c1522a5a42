// Homomorphic operations of heaan::Context: add, HE Mul (Fig. 2 of paper 000), rescale, rotate, conjugate.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/thread_pool.hpp"
#include "heaan/context.hpp"
#include "math/vec_ops.hpp"
#include "trace/trace.hpp"

namespace ember::heaan {

namespace {

/// Operands brought to one modulus (the smaller) and checked for matching slots and scales.
struct Aligned2 {
    const Ciphertext* x0;
    const Ciphertext* y0;
    Ciphertext xs, ys;  // the reduced copy when a modulus had to come down
    bool x_reduced = false, y_reduced = false;
    const Ciphertext& x() const { return x_reduced ? xs : *x0; }
    const Ciphertext& y() const { return y_reduced ? ys : *y0; }
};

Aligned2 align(const Context& ctx, const char* op, const Ciphertext& x, const Ciphertext& y, bool same_scale) {
    if (x.slots != y.slots)
        throw std::invalid_argument(std::string("cannot ") + op + ": the ciphertexts hold " + std::to_string(x.slots) + " and " + std::to_string(y.slots) + " slots");
    if (same_scale && x.log_scale != y.log_scale)
        throw std::invalid_argument(std::string("cannot ") + op + ": scales differ (2^" + std::to_string(x.log_scale) + " vs 2^" + std::to_string(y.log_scale) + "); rescale first");
    if (x.a.n != ctx.params().n() || y.a.n != ctx.params().n())
        throw std::invalid_argument(std::string("cannot ") + op + ": ciphertext of another ring degree");
    Aligned2 r{&x, &y, {}, {}};
    if (x.log_q() > y.log_q()) { r.xs = ctx.mod_down(x, y.log_q()); r.x_reduced = true; }
    if (y.log_q() > x.log_q()) { r.ys = ctx.mod_down(y, x.log_q()); r.y_reduced = true; }
    return r;
}

}  // namespace

namespace {

/// x + y or x - y (PolyOp: heaan::add or heaan::sub on both polynomials), at the smaller modulus.
template <void (*PolyOp)(BigPoly&, const BigPoly&, const BigPoly&, ThreadPool*)>
Ciphertext add_or_sub(const Context& ctx, const char* op, const Ciphertext& x, const Ciphertext& y) {
    auto al = align(ctx, op, x, y, true);
    Ciphertext out;
    PolyOp(out.a, al.x().a, al.y().a, &ctx.pool());
    PolyOp(out.b, al.x().b, al.y().b, &ctx.pool());
    out.log_scale = x.log_scale;
    out.slots = x.slots;
    return out;
}

}  // namespace

Ciphertext Context::add(const Ciphertext& x, const Ciphertext& y) const { return add_or_sub<heaan::add>(*this, "add", x, y); }

Ciphertext Context::sub(const Ciphertext& x, const Ciphertext& y) const { return add_or_sub<heaan::sub>(*this, "subtract", x, y); }

Ciphertext Context::negate(const Ciphertext& x) const {
    Ciphertext out;
    heaan::negate(out.a, x.a, pool_.get());
    heaan::negate(out.b, x.b, pool_.get());
    out.log_scale = x.log_scale;
    out.slots = x.slots;
    return out;
}

Ciphertext Context::add_plain(const Ciphertext& x, std::span<const cplx> z) const {
    std::vector<cplx> vals(z.begin(), z.end());
    if (vals.size() == 1 && x.slots > 1) vals.assign(x.slots, z[0]);
    if (vals.size() != x.slots)
        throw std::invalid_argument("cannot add a plaintext of " + std::to_string(vals.size()) + " values to a ciphertext of " + std::to_string(x.slots) + " slots");
    const BigPoly m = encode(vals, x.log_scale, x.log_q());
    Ciphertext out;
    out.a = x.a;
    heaan::add(out.b, x.b, m, pool_.get());
    out.log_scale = x.log_scale;
    out.slots = x.slots;
    return out;
}

Ciphertext Context::mul_const(const Ciphertext& x, double c, int log_scale) const {
    if (log_scale == 0) log_scale = params_.log_p;
    const double k = std::round(std::ldexp(c, log_scale));
    if (!std::isfinite(k) || std::fabs(k) >= 0x1p62)
        throw std::invalid_argument("cannot multiply by the constant " + std::to_string(c) + ": c 2^log_scale must stay below 2^62");
    const u64 mag = static_cast<u64>(std::fabs(k));
    Ciphertext out;
    out.a = BigPoly::uninit(x.a.n, x.a.bits);
    out.b = BigPoly::uninit(x.b.n, x.b.bits);
    const std::size_t w = x.a.words;
    auto scale = [&](BigPoly& o, const BigPoly& in) {
        pool_->parallel_range(in.n, 64, [&](std::size_t b0, std::size_t b1) {
            for (std::size_t i = b0; i < b1; ++i) {
                u64 carry = 0;
                for (std::size_t k2 = 0; k2 < w; ++k2) {
                    const u128 p = static_cast<u128>(in.coeff(i)[k2]) * mag + carry;
                    o.coeff(i)[k2] = static_cast<u64>(p);
                    carry = static_cast<u64>(p >> 64);
                }
                if (k < 0) bigint::neg(o.coeff(i), o.coeff(i), w);
                bigint::mask_bits(o.coeff(i), w, in.bits);
            }
        });
    };
    scale(out.a, x.a);
    scale(out.b, x.b);
    out.log_scale = x.log_scale + log_scale;
    out.slots = x.slots;
    return out;
}

Ciphertext Context::mod_down(const Ciphertext& x, int log_q) const {
    if (log_q < 1 || log_q > x.log_q())
        throw std::invalid_argument("cannot reduce the modulus to 2^" + std::to_string(log_q) + ": the ciphertext is modulo 2^" + std::to_string(x.log_q()));
    Ciphertext out;
    out.a = heaan::mod_down(x.a, log_q);
    out.b = heaan::mod_down(x.b, log_q);
    out.log_scale = x.log_scale;
    out.slots = x.slots;
    return out;
}

Ciphertext Context::rescale(const Ciphertext& x, int bits) const {
    if (bits == 0) bits = params_.log_p;
    if (bits < 0 || bits >= x.log_q() || bits > x.log_scale)
        throw std::invalid_argument("cannot rescale by 2^" + std::to_string(bits) + ": the ciphertext has log q = " + std::to_string(x.log_q()) +
                                    " and scale 2^" + std::to_string(x.log_scale));
    Ciphertext out;
    out.a = heaan::rescale(x.a, bits, pool_.get());
    out.b = heaan::rescale(x.b, bits, pool_.get());
    out.log_scale = x.log_scale - bits;
    out.slots = x.slots;
    return out;
}

namespace {

/// Primes per parallel task of the per-prime stages: a few consecutive ones per task (fewer hand-offs), while the
/// tasks still balance two threads on a shared machine.
std::size_t primes_per_task(std::size_t np, int threads) { return std::max<std::size_t>(1, np / (4 * static_cast<std::size_t>(threads))); }

/// Adds modular additions / subtractions to a trace kernel when tracing is on (count_kernel takes none): the NTT's
/// and iNTT's N log N per transform (an addition and a subtraction per butterfly), the element-wise sums.
void count_mod_add(const char* kernel, std::uint64_t mod_add) {
    if (!trace::enabled()) return;
    trace::Counts c;
    c.mod_add = mod_add;
    trace::record(kernel, c);
}

}  // namespace

void Context::multiply_by_key(std::size_t np, u64* R, u64* KA, const SwitchKey& key) const {
    const std::size_t n = params_.n(), per = primes_per_task(np, pool_->size());
    const bool stream = basis_->ifma();
    pool_->parallel_for((np + per - 1) / per, [&](std::size_t task) {
        // R key.a is formed and transformed in a cached scratch limb, then streamed out: written in place it would
        // first read the old contents of its row from memory (a read for ownership) only to overwrite them
        thread_local WordVec ka_v;
        if (ka_v.size() < n) ka_v.resize(n);
        u64* ka = ka_v.data();
        const std::size_t j1 = std::min(np, (task + 1) * per);
        for (std::size_t j = task * per; j < j1; ++j) {
            const NttTables& t = basis_->ntt(j);
            const Modulus& q = basis_->prime(j);
            u64* r = R + j * n;
            const u64* kra = key.a.data() + j * n;
            {
                KernelClock clk("heaan_ntt");
                ntt_forward(r, t);
            }
            {
                KernelClock clk("heaan_extra");
                vec_mul(ka, r, kra, n, q);
                vec_mul(r, r, key.b.data() + j * n, n, q);
            }
            {
                KernelClock clk("heaan_intt");
                ntt_inverse(ka, t);
                ntt_inverse(r, t);
            }
            {
                KernelClock clk("heaan_extra");
                store_row(KA + j * n, ka, n, stream);
            }
        }
    });
    std::uint64_t fwd = 0, inv = 0;
    for (std::size_t j = 0; j < np; ++j) {
        fwd += ntt_mod_mul_count(basis_->ntt(j), false);
        inv += 2 * ntt_mod_mul_count(basis_->ntt(j), true);
    }
    count_kernel("heaan_ntt", 1, fwd, np, np * n * 8, np * n * 8);
    count_kernel("heaan_extra", 1, 2 * np * n, 0, 3 * np * n * 8, 2 * np * n * 8);
    count_kernel("heaan_intt", 1, inv, 2 * np, 2 * np * n * 8, 2 * np * n * 8);
    const std::uint64_t log_n = static_cast<std::uint64_t>(params_.log_n);
    count_mod_add("heaan_ntt", np * n * log_n);
    count_mod_add("heaan_intt", 2 * np * n * log_n);
}

std::pair<BigPoly, BigPoly> Context::key_switch(const BigPoly& c, const SwitchKey& key) const {
    const std::size_t n = params_.n();
    if (c.n != n || key.n != n) throw std::invalid_argument("cannot switch keys: ring degree mismatch");
    if (c.bits > params_.log_q) throw std::invalid_argument("cannot switch keys: log q = " + std::to_string(c.bits) + " exceeds logQ");
    const std::size_t np = primes_region2(c.bits);
    if (np > key.np) throw std::invalid_argument("cannot switch keys: the key has " + std::to_string(key.np) + " primes, " + std::to_string(np) + " needed");
    RowBuffer ws = take_scratch(2 * np * n);
    u64* R = ws.data();
    u64* KA = ws.data() + np * n;
    crt_polys(*basis_, *pool_, {&c}, np, {R});
    multiply_by_key(np, R, KA, key);
    std::pair<BigPoly, BigPoly> out{BigPoly::uninit(n, c.bits), BigPoly::uninit(n, c.bits)};
    std::vector<IcrtJob> jobs(2);
    jobs[0].parts = {{KA, np, params_.log_q}};
    jobs[1].parts = {{R, np, params_.log_q}};
    jobs[0].out = out.first.data.data();
    jobs[1].out = out.second.data.data();
    for (auto& jb : jobs) jb.out_bits = c.bits;
    icrt_stage(*basis_, *pool_, jobs);
    give_back(std::move(ws));
    return out;
}

Ciphertext Context::mul(const Ciphertext& x, const Ciphertext& y, const SwitchKey& mult_key) const {
    trace::Scope total("heaan_mul");
    if (mult_key.galois != 1) throw std::invalid_argument("cannot multiply: the key given is not the evaluation (multiplication) key");
    auto al = align(*this, "multiply", x, y, false);
    const Ciphertext& X = al.x();
    const Ciphertext& Y = al.y();
    const bool square = (&x == &y);
    const int log_q = X.log_q();
    const std::size_t n = params_.n();
    const std::size_t np = primes_region1(log_q), np2 = primes_region2(log_q);
    if (np2 > mult_key.np) throw std::invalid_argument("cannot multiply: the evaluation key has " + std::to_string(mult_key.np) + " primes, " + std::to_string(np2) + " needed");

    // ---- region 1: tensor product modulo q ----
    RowBuffer ws1 = take_scratch(4 * np * n);
    u64* A1 = ws1.data();
    u64* B1 = A1 + np * n;
    u64* A2 = B1 + np * n;
    u64* B2 = A2 + np * n;
    if (square) crt_polys(*basis_, *pool_, {&X.a, &X.b}, np, {A1, B1});
    else crt_polys(*basis_, *pool_, {&X.a, &X.b, &Y.a, &Y.b}, np, {A1, B1, A2, B2});
    // prime by prime, in cache: NTT of the inputs, a1 a2, b1 b2 and a1 b2 + b1 a2 (into A1, B1, A2), iNTT
    const std::size_t per = primes_per_task(np, pool_->size());
    pool_->parallel_for((np + per - 1) / per, [&](std::size_t task) {
        const std::size_t j1 = std::min(np, (task + 1) * per);
        thread_local WordVec b2_copy;
        if (b2_copy.size() < n) b2_copy.resize(n);
        for (std::size_t j = task * per; j < j1; ++j) {
            const NttTables& t = basis_->ntt(j);
            const Modulus& q = basis_->prime(j);
            u64 *a1 = A1 + j * n, *b1 = B1 + j * n, *a2 = A2 + j * n, *b2 = B2 + j * n;
            {
                KernelClock clk("heaan_ntt");
                if (square) {
                    ntt_forward(a1, t);
                    ntt_forward(b1, t);
                } else {
                    ntt_forward(a1, t);
                    ntt_forward(b1, t);
                    ntt_forward(a2, t);
                    // b2 is read-only past its transform: transform a cached copy, so the row is not written back
                    std::memcpy(b2_copy.data(), b2, n * sizeof(u64));
                    b2 = b2_copy.data();
                    ntt_forward(b2, t);
                }
            }
            {
                KernelClock clk("heaan_extra");
                constexpr std::size_t kChunk = 1024;
                thread_local WordVec tmp_v(kChunk);
                u64* tmp = tmp_v.data();
                for (std::size_t c = 0; c < n; c += kChunk) {
                    const std::size_t len = std::min(kChunk, n - c);
                    if (square) {
                        vec_mul(tmp, a1 + c, b1 + c, len, q);
                        vec_add(a2 + c, tmp, tmp, len, q);
                        vec_mul(a1 + c, a1 + c, a1 + c, len, q);
                        vec_mul(b1 + c, b1 + c, b1 + c, len, q);
                    } else {
                        const u64* xs[2] = {a1 + c, b1 + c};
                        const u64* ys[2] = {b2 + c, a2 + c};
                        vec_dot(tmp, xs, ys, 2, len, q);  // a1 b2 + b1 a2, one reduction
                        vec_mul(a1 + c, a1 + c, a2 + c, len, q);
                        vec_mul(b1 + c, b1 + c, b2 + c, len, q);
                        std::memcpy(a2 + c, tmp, len * sizeof(u64));
                    }
                }
            }
            {
                KernelClock clk("heaan_intt");
                ntt_inverse(a1, t);
                ntt_inverse(b1, t);
                ntt_inverse(a2, t);
            }
        }
    });
    {
        std::uint64_t fwd = 0, inv = 0;
        for (std::size_t j = 0; j < np; ++j) {
            fwd += (square ? 2 : 4) * ntt_mod_mul_count(basis_->ntt(j), false);
            inv += 3 * ntt_mod_mul_count(basis_->ntt(j), true);
        }
        const std::size_t ins = square ? 2 : 4;
        count_kernel("heaan_ntt", 1, fwd, ins * np, ins * np * n * 8, ins * np * n * 8);
        count_kernel("heaan_extra", 1, (square ? 3 : 4) * np * n, 0, ins * np * n * 8, 3 * np * n * 8);
        count_kernel("heaan_intt", 1, inv, 3 * np, 3 * np * n * 8, 3 * np * n * 8);
        const std::uint64_t log_n = static_cast<std::uint64_t>(params_.log_n);
        count_mod_add("heaan_ntt", ins * np * n * log_n);
        count_mod_add("heaan_intt", 3 * np * n * log_n);
        count_mod_add("heaan_extra", np * n);  // a1 b2 + b1 a2 (the dot's one addition) or 2 a1 b1 (vec_add)
    }

    // ---- iCRT of a1 a2 modulo q, straight on to the CRT of region 2 (np2 primes) ----
    RowBuffer ws2 = take_scratch(2 * np2 * n);
    u64* R = ws2.data();
    u64* KA = R + np2 * n;
    {
        std::vector<IcrtJob> jobs(1);
        jobs[0].parts = {{A1, np, 0}};
        jobs[0].out_bits = log_q;
        jobs[0].crt_rows = R;
        jobs[0].crt_np = np2;
        icrt_stage(*basis_, *pool_, jobs);
    }

    // ---- region 2: key switching of a1 a2 (decrypted by s^2) with the evaluation key ----
    multiply_by_key(np2, R, KA, mult_key);

    // ---- the result: a = a1 b2 + b1 a2 + round(KA / Q), b = b1 b2 + round(KB / Q) modulo q; the products of
    // region 1 are reconstructed here, tile by tile with those of region 2, instead of in a pass of their own ----
    Ciphertext out;
    out.a = BigPoly::uninit(n, log_q);
    out.b = BigPoly::uninit(n, log_q);
    {
        std::vector<IcrtJob> jobs(2);
        jobs[0].parts = {{KA, np2, params_.log_q}, {A2, np, 0}};
        jobs[0].out = out.a.data.data();
        jobs[1].parts = {{R, np2, params_.log_q}, {B1, np, 0}};
        jobs[1].out = out.b.data.data();
        for (auto& jb : jobs) jb.out_bits = log_q;
        icrt_stage(*basis_, *pool_, jobs);
    }
    give_back(std::move(ws1));
    give_back(std::move(ws2));
    out.log_scale = X.log_scale + Y.log_scale;
    out.slots = X.slots;
    return out;
}

// X -> X^g on both halves, then the key switch of the first back to s.
Ciphertext Context::apply_automorphism(const Ciphertext& x, std::uint64_t g, const SwitchKey& key) const {
    Ciphertext out;
    const BigPoly a = automorphism(x.a, g, pool_.get());
    const BigPoly b = automorphism(x.b, g, pool_.get());
    auto [ka, kb] = key_switch(a, key);
    out.a = std::move(ka);
    heaan::add(out.b, b, kb, pool_.get());
    out.log_scale = x.log_scale;
    out.slots = x.slots;
    return out;
}

Ciphertext Context::rotate(const Ciphertext& x, long r, const SwitchKey& key) const {
    const std::uint64_t g = galois_element(r);
    if (g == 1) return x;
    if (key.galois != g)
        throw std::invalid_argument("cannot rotate by " + std::to_string(r) + ": the key given is for the Galois element " + std::to_string(key.galois) +
                                    ", not " + std::to_string(g));
    return apply_automorphism(x, g, key);
}

Ciphertext Context::conjugate(const Ciphertext& x, const SwitchKey& key) const {
    const std::uint64_t g = conjugation_element();
    if (key.galois != g) throw std::invalid_argument("cannot conjugate: the key given is not the conjugation key");
    return apply_automorphism(x, g, key);
}

}  // namespace ember::heaan
