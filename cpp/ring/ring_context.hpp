// RingContext: the ring R = Z[X]/(X^N + 1), the RNS prime chain Q = q_0 ... q_L and the special primes
// P = p_0 ... p_{K-1} of hybrid key switching, their NTT tables, and the precomputations shared by the
// polynomial operations (base converters, automorphism permutations), built lazily and cached.
//
// Prime index space: Q primes are 0 .. L, P primes are L+1 .. L+K.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.hpp"
#include "math/ntt.hpp"
#include "math/rns.hpp"

namespace ember {

class RingContext {
public:
    RingContext(int log_n, const std::vector<u64>& q_primes, const std::vector<u64>& p_primes, std::shared_ptr<Backend> backend);

    std::size_t n() const { return n_; }
    int log_n() const { return log_n_; }
    std::size_t q_count() const { return q_count_; }
    std::size_t p_count() const { return tables_.size() - q_count_; }
    const NttTables& table(std::size_t prime_index) const { return *tables_.at(prime_index); }
    const Modulus& mod(std::size_t prime_index) const { return tables_.at(prime_index)->mod; }
    Backend& backend() const { return *backend_; }
    const std::shared_ptr<Backend>& backend_ptr() const { return backend_; }

    /// Converter from the primes `from` to the primes `to` (prime indices), cached.
    const BaseConverter& converter(const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to) const;

    /// Permutation of evaluation slots for X -> X^k (k odd, in [1, 2N)): out[i] = in[perm[i]].
    const std::vector<std::uint32_t>& automorphism_perm(std::uint64_t k) const;

private:
    int log_n_;
    std::size_t n_;
    std::size_t q_count_;
    std::vector<std::unique_ptr<NttTables>> tables_;
    std::shared_ptr<Backend> backend_;
    mutable std::mutex mu_;
    mutable std::map<std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>, std::unique_ptr<BaseConverter>> converters_;
    mutable std::map<std::uint64_t, std::unique_ptr<std::vector<std::uint32_t>>> perms_;
};

}  // namespace ember
