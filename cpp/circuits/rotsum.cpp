#include "circuits/rotsum.hpp"

#include <string>

#include "util/errors.hpp"

namespace ember {

namespace {

bool pow2(std::size_t x) { return x && !(x & (x - 1)); }

std::size_t log2_of(std::size_t x) {
    std::size_t k = 0;
    while ((std::size_t(1) << k) < x) ++k;
    return k;
}

/// The rounds of inner_sum: for each, the steps of its rotate_sum (0 first: the running sum itself).
std::vector<std::vector<long>> rounds(long stride, std::size_t count, std::size_t radix) {
    if (!pow2(count)) cannot("inner_sum", "count must be a power of two >= 1, got " + std::to_string(count));
    if (radix < 2 || !pow2(radix)) cannot("inner_sum", "radix must be a power of two >= 2, got " + std::to_string(radix));
    if (stride == 0 && count > 1) cannot("inner_sum", "stride must not be 0");
    std::vector<std::vector<long>> out;
    const std::size_t total = log2_of(count), per = log2_of(radix);
    long t = stride;
    for (std::size_t done = 0; done < total;) {
        const std::size_t d = std::min(per, total - done);
        std::vector<long> steps;
        for (long j = 0; j < (long(1) << d); ++j) steps.push_back(j * t);
        out.push_back(std::move(steps));
        t <<= d;
        done += d;
    }
    return out;
}

}  // namespace

Ciphertext rotate_sum(const Evaluator& ev, const Ciphertext& a, const std::vector<long>& steps, const GaloisKeys& gk) {
    if (steps.empty()) cannot("rotate_sum", "no steps");
    std::vector<Ciphertext> rots = ev.rotate_many_raised(a, steps, gk);
    Ciphertext acc = std::move(rots[0]);
    for (std::size_t i = 1; i < rots.size(); ++i) acc = ev.add(acc, rots[i]);
    return ev.mod_down(acc);
}

Ciphertext inner_sum(const Evaluator& ev, const Ciphertext& a, long stride, std::size_t count, std::size_t radix,
                     const GaloisKeys& gk) {
    const auto rs = rounds(stride, count, radix);
    Ciphertext acc = a;
    for (const auto& steps : rs) {
        if (steps.size() == 2) acc = ev.add(acc, ev.rotate(acc, steps[1], gk));  // one rotation: nothing to hoist
        else acc = rotate_sum(ev, acc, steps, gk);
    }
    return acc;
}

std::vector<long> inner_sum_rotations(long stride, std::size_t count, std::size_t radix) {
    std::vector<long> out;
    for (const auto& steps : rounds(stride, count, radix)) out.insert(out.end(), steps.begin() + 1, steps.end());
    return out;
}

}  // namespace ember
