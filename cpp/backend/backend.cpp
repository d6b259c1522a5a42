// Backend operations with a default (signed_digits on the host) and the argument checks the backends share (dot2).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace ember {

void check_dot2_args(Limbs out0, Limbs out1, const std::vector<std::vector<const u64*>>& a, const std::vector<std::vector<const u64*>>& b0,
                     const std::vector<std::vector<const u64*>>& b1) {
    if (a.empty() || a.size() != b0.size() || a.size() != b1.size())
        throw std::invalid_argument("dot2: need the same positive number of terms in a, b0 and b1");
    const std::size_t limbs = out0.size();
    auto count = [&](std::size_t m) {
        if (m != limbs) throw std::invalid_argument("dot2: operand has " + std::to_string(m) + " limbs, output " + std::to_string(limbs));
    };
    count(out1.size());
    for (std::size_t t = 0; t < a.size(); ++t) { count(a[t].size()); count(b0[t].size()); count(b1[t].size()); }
    for (std::size_t l = 0; l < limbs; ++l) {
        if (out0[l].table->n != out1[l].table->n || out0[l].mod().q != out1[l].mod().q)
            throw std::invalid_argument("dot2: the two outputs differ in limb " + std::to_string(l));
        for (std::size_t t = 0; t < a.size(); ++t)
            for (const u64* p : {a[t][l], b0[t][l], b1[t][l]})
                if (p == out0[l].data || p == out1[l].data) throw std::invalid_argument("dot2: an output aliases an operand");
    }
}

void signed_digits_host(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t begin, std::size_t end, int digit_bits) {
    const std::int64_t B = std::int64_t(1) << digit_bits, half = B / 2, mask = B - 1;
    const std::int64_t q = static_cast<std::int64_t>(mod.q);
    for (std::size_t i = begin; i < end; ++i) {
        const u64 v = in[i];
        std::int64_t rest = v > mod.q / 2 ? static_cast<std::int64_t>(v) - q : static_cast<std::int64_t>(v);
        for (u64* d : out) {
            std::int64_t r = rest & mask;  // rest mod B in [0, B) (two's complement)
            if (r >= half) r -= B;
            rest = (rest - r) >> digit_bits;  // exact: rest - r is a multiple of B
            d[i] = mod.from_signed(r);
        }
    }
}

void Backend::signed_digits(std::span<u64* const> out, const u64* in, const Modulus& mod, std::size_t n, int digit_bits) {
    if (digit_bits < 2 || digit_bits > 30) throw std::invalid_argument("signed_digits: digit_bits must be in [2, 30], got " + std::to_string(digit_bits));
    std::vector<u64> src(n);
    download(src.data(), in, n);
    std::vector<std::vector<u64>> dst(out.size(), std::vector<u64>(n));
    std::vector<u64*> ptr;
    for (auto& d : dst) ptr.push_back(d.data());
    signed_digits_host(ptr, src.data(), mod, 0, n, digit_bits);
    for (std::size_t d = 0; d < out.size(); ++d) upload(out[d], dst[d].data(), n);
}

}  // namespace ember
