#include "heaan/params.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "ckks/params.hpp"

namespace ember::heaan {

namespace {
[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("heaan::Params: " + what); }
}  // namespace

int max_log_q(int log_n, int security) {
    if (security == 80) {
        // Table II of 000: logQ = 300, 600, 1200, 2400 for N = 2^14 .. 2^17, i.e. logQ <= 1200 N / 2^16.
        if (log_n < 10 || log_n > 17) return 0;
        return static_cast<int>((1200L << log_n) >> 16);
    }
    if (security == 128) return ember::max_log_qp_128(log_n) / 2;  // keys live modulo Q^2
    return 0;
}

void Params::validate() const {
    if (log_n < 3 || log_n > 17) bad("log_n must be in [3, 17], got " + std::to_string(log_n));
    if (log_q < 2 || log_q > 4800) bad("log_q (logQ) must be in [2, 4800], got " + std::to_string(log_q));
    if (log_p < 1 || log_p >= log_q) bad("log_p must be in [1, log_q), got " + std::to_string(log_p) + " with log_q = " + std::to_string(log_q));
    if (hamming_weight < 1 || static_cast<std::size_t>(hamming_weight) > n())
        bad("hamming_weight must be in [1, N = " + std::to_string(n()) + "], got " + std::to_string(hamming_weight));
    if (!(sigma > 0 && sigma < 100)) bad("sigma must be in (0, 100)");
    if (prime_bits < 50 || prime_bits > 60) bad("prime_bits must be in [50, 60] (50: IFMA primes below 2^50), got " + std::to_string(prime_bits));
    if (security != 80 && security != 128) bad("security must be 80 or 128, got " + std::to_string(security));
    if (!insecure) {
        const int bound = max_log_q(log_n, security);
        if (bound == 0) bad("no " + std::to_string(security) + "-bit bound is known for log_n = " + std::to_string(log_n) + "; pass insecure=True");
        if (log_q > bound) {
            std::ostringstream os;
            os << "log_q = " << log_q << " exceeds the " << security << "-bit bound of " << bound << " bits for log_n = " << log_n
               << (security == 80 ? " (paper 000, Table II: logQ <= 1200 N / 2^16)" : " (HE standard on the key modulus Q^2)")
               << "; use a smaller log_q, a larger log_n, or pass insecure=True";
            bad(os.str());
        }
    }
}

std::string Params::describe() const {
    std::ostringstream os;
    os << "heaan.Params(log_n=" << log_n << ", log_q=" << log_q << ", log_p=" << log_p << ", h=" << hamming_weight
       << ", sigma=" << sigma << ", prime_bits=" << prime_bits << ", security=" << security << (insecure ? ", insecure" : "") << ")";
    return os.str();
}

}  // namespace ember::heaan
