#include "circuits/dft.hpp"

#include "util/errors.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember {

namespace {

long norm(long k, std::size_t n) {
    const long m = static_cast<long>(n);
    return ((k % m) + m) % m;
}

void add_to(Diagonals& d, long k, std::size_t r, cplx v, std::size_t n) {
    auto& diag = d[norm(k, n)];
    if (diag.empty()) diag.assign(n, cplx(0, 0));
    diag[r] += v;
}

// One butterfly stage of the special FFT (forward: decode direction; else the inverse direction).
Diagonals stage(const Encoder& enc, std::size_t n, std::size_t len, bool forward) {
    const std::size_t m = 2 * enc.n(), lenh = len / 2, lenq = len * 4, gap = m / lenq;
    // rot_group[j] = 5^j mod 2N and ksi[k] = exp(2 pi i k / 2N), as in the encoder
    Diagonals d;
    std::size_t g = 1;
    std::vector<std::size_t> rot(lenh);
    for (std::size_t j = 0; j < lenh; ++j) { rot[j] = g; g = g * 5 % m; }
    for (std::size_t i = 0; i < n; i += len) {
        for (std::size_t j = 0; j < lenh; ++j) {
            const std::size_t r = i + j, s = i + j + lenh;
            const std::size_t idx = forward ? (rot[j] % lenq) * gap : (lenq - rot[j] % lenq) * gap;
            const double ang = 2.0 * M_PI * static_cast<double>(idx) / static_cast<double>(m);
            const cplx w(std::cos(ang), std::sin(ang));
            if (forward) {  // out[r] = v[r] + w v[s], out[s] = v[r] - w v[s]
                add_to(d, 0, r, 1.0, n);
                add_to(d, static_cast<long>(lenh), r, w, n);
                add_to(d, -static_cast<long>(lenh), s, 1.0, n);
                add_to(d, 0, s, -w, n);
            } else {        // out[r] = v[r] + v[s], out[s] = (v[r] - v[s]) w
                add_to(d, 0, r, 1.0, n);
                add_to(d, static_cast<long>(lenh), r, 1.0, n);
                add_to(d, -static_cast<long>(lenh), s, w, n);
                add_to(d, 0, s, -w, n);
            }
        }
    }
    return d;
}

std::vector<Diagonals> group(const std::vector<Diagonals>& stages, std::size_t levels, std::size_t n, cplx scale) {
    if (levels == 0) fail("DFT", "levels must be >= 1");
    const std::size_t s = stages.size();
    if (s == 0) {  // one slot: the identity
        Diagonals id;
        id[0] = std::vector<cplx>(n, scale);
        return {id};
    }
    levels = std::min(levels, s);
    std::vector<Diagonals> out;
    std::size_t at = 0;
    for (std::size_t g = 0; g < levels; ++g) {
        const std::size_t take = s / levels + (g < s % levels ? 1 : 0);
        Diagonals f = stages[at];
        for (std::size_t t = 1; t < take; ++t) f = compose(stages[at + t], f, n);
        at += take;
        out.push_back(std::move(f));
    }
    for (auto& [k, v] : out.front())
        for (auto& x : v) x *= scale;
    return out;
}

void check(std::size_t slots, std::size_t N) {
    if (slots == 0 || (slots & (slots - 1)) || slots > N / 2)
        fail("DFT", "slots must be a power of two in [1, N/2], got " + std::to_string(slots));
}

}  // namespace

Diagonals compose(const Diagonals& a, const Diagonals& b, std::size_t n) {
    Diagonals out;
    for (const auto& [i, ai] : a)
        for (const auto& [j, bj] : b) {
            auto& d = out[norm(i + j, n)];
            if (d.empty()) d.assign(n, cplx(0, 0));
            for (std::size_t r = 0; r < n; ++r) d[r] += ai[r] * bj[(r + static_cast<std::size_t>(i)) % n];
        }
    return out;
}

std::vector<Diagonals> slot_to_coeff_factors(const Encoder& enc, std::size_t slots, std::size_t levels, cplx scale) {
    check(slots, enc.n());
    std::vector<Diagonals> stages;
    for (std::size_t len = 2; len <= slots; len <<= 1) stages.push_back(stage(enc, slots, len, true));
    return group(stages, levels, slots, scale);
}

std::vector<Diagonals> coeff_to_slot_factors(const Encoder& enc, std::size_t slots, std::size_t levels, cplx scale) {
    check(slots, enc.n());
    std::vector<Diagonals> stages;
    for (std::size_t len = slots; len >= 2; len >>= 1) stages.push_back(stage(enc, slots, len, false));
    return group(stages, levels, slots, scale / static_cast<double>(slots));
}

}  // namespace ember
