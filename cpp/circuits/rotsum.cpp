#include "circuits/rotsum.hpp"

#include <algorithm>
#include <string>

#include "util/errors.hpp"

namespace ember {

namespace {

constexpr long kMaxCount = long(1) << 20;   // more slots than any ring has: a longer sum only repeats itself
constexpr long kMaxStride = long(1) << 31;

bool pow2(long x) { return x > 0 && !(x & (x - 1)); }

int log2_of(long x) {  // x a power of two
    int k = 0;
    while ((long(1) << k) < x) ++k;
    return k;
}

/// The rounds of inner_sum: for each, the steps of its rotate_sum (0 first: the running sum itself).
std::vector<std::vector<long>> rounds(long stride, long count, long radix) {
    if (!pow2(count) || count > kMaxCount)
        cannot("inner_sum", "count must be a power of two in [1, 2^20], got " + std::to_string(count));
    if (!pow2(radix) || radix < 2) cannot("inner_sum", "radix must be a power of two >= 2, got " + std::to_string(radix));
    if (stride == 0 && count > 1) cannot("inner_sum", "stride must not be 0");
    if (stride >= kMaxStride || stride <= -kMaxStride)
        cannot("inner_sum", "stride must be below 2^31 in magnitude, got " + std::to_string(stride));
    std::vector<std::vector<long>> out;
    const int total = log2_of(count), per = log2_of(radix);
    long t = stride;
    for (int done = 0; done < total;) {
        const int d = std::min(per, total - done);
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

Ciphertext inner_sum(const Evaluator& ev, const Ciphertext& a, long stride, long count, long radix,
                     const GaloisKeys& gk) {
    const auto rs = rounds(stride, count, radix);
    if (static_cast<std::size_t>(count) > a.slots)
        cannot("inner_sum", "count " + std::to_string(count) + " is more than the ciphertext's " + std::to_string(a.slots) + " slots");
    Ciphertext acc = a;
    for (const auto& steps : rs) {
        if (steps.size() == 2) acc = ev.add(acc, ev.rotate(acc, steps[1], gk));  // one rotation: nothing to hoist
        else acc = rotate_sum(ev, acc, steps, gk);
    }
    return acc;
}

std::vector<long> inner_sum_rotations(long stride, long count, long radix) {
    std::vector<long> out;
    for (const auto& steps : rounds(stride, count, radix)) out.insert(out.end(), steps.begin() + 1, steps.end());
    return out;
}

}  // namespace ember
