#include "ring/ring_context.hpp"

#include <stdexcept>
#include <string>

namespace ember {

RingContext::RingContext(int log_n, const std::vector<u64>& q_primes, const std::vector<u64>& p_primes, std::shared_ptr<Backend> backend)
    : log_n_(log_n), n_(std::size_t(1) << log_n), q_count_(q_primes.size()), backend_(std::move(backend)) {
    if (log_n < 1 || log_n > 17) throw std::invalid_argument("RingContext: log_n must be in [1, 17], got " + std::to_string(log_n));
    if (q_primes.empty()) throw std::invalid_argument("RingContext: at least one Q prime is needed");
    if (!backend_) throw std::invalid_argument("RingContext: no backend");
    for (u64 q : q_primes) tables_.push_back(std::make_unique<NttTables>(n_, Modulus(q)));
    for (u64 p : p_primes) tables_.push_back(std::make_unique<NttTables>(n_, Modulus(p)));
}

const BaseConverter& RingContext::converter(const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to) const {
    std::lock_guard<std::mutex> l(mu_);
    auto key = std::make_pair(from, to);
    auto it = converters_.find(key);
    if (it != converters_.end()) return *it->second;
    std::vector<Modulus> f, t;
    for (auto i : from) f.push_back(mod(i));
    for (auto i : to) t.push_back(mod(i));
    auto conv = std::make_unique<BaseConverter>(std::move(f), std::move(t));
    auto& ref = *conv;
    converters_.emplace(std::move(key), std::move(conv));
    return ref;
}

// NTT output convention (math/ntt.hpp): slot i holds A(psi^(2 brv(i) + 1)). Under X -> X^k the value at
// psi^e becomes A(psi^(e k)), so slot i takes the slot j with 2 brv(j) + 1 = (2 brv(i) + 1) k mod 2N.
const std::vector<std::uint32_t>& RingContext::automorphism_perm(std::uint64_t k) const {
    const std::uint64_t two_n = 2 * n_;
    if ((k & 1) == 0 || k >= two_n) throw std::invalid_argument("automorphism: k must be odd and below 2N, got " + std::to_string(k));
    std::lock_guard<std::mutex> l(mu_);
    auto it = perms_.find(k);
    if (it != perms_.end()) return *it->second;
    auto brv = [this](std::uint64_t x) {
        std::uint64_t r = 0;
        for (int b = 0; b < log_n_; ++b) r |= ((x >> b) & 1) << (log_n_ - 1 - b);
        return r;
    };
    auto perm = std::make_unique<std::vector<std::uint32_t>>(n_);
    for (std::uint64_t i = 0; i < n_; ++i) {
        std::uint64_t e = ((2 * brv(i) + 1) * k) % two_n;
        (*perm)[i] = static_cast<std::uint32_t>(brv((e - 1) / 2));
    }
    auto& ref = *perm;
    perms_.emplace(k, std::move(perm));
    return ref;
}

}  // namespace ember
