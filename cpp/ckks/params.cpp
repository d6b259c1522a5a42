#include "ckks/params.hpp"

#include "util/errors.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <openssl/evp.h>

#include "math/primes.hpp"

namespace ember {

int max_log_qp_128(int log_n) {
    switch (log_n) {
        case 10: return 27;
        case 11: return 54;
        case 12: return 109;
        case 13: return 218;
        case 14: return 438;
        case 15: return 881;
        case 16: return 1747;
        case 17: return 3523;
        default: return 0;
    }
}

int max_log_qp_128_sparse(int log_n, int hamming_weight) {
    // Lattigo's default bootstrapping set N16QP1546H192H32 (log N = 16, log QP = 1546, h = 192) is
    // documented at 128-bit security by its authors' lattice-estimator runs; no other sparse point is
    // claimed here.
    if (log_n == 16 && hamming_weight >= 192) return 1550;
    return 0;
}

namespace {
[[noreturn]] void bad(const std::string& what) { fail("CkksParams", what); }
double bits_of(const std::vector<u64>& v, std::size_t first, std::size_t last) {
    double s = 0;
    for (std::size_t i = first; i < last; ++i) s += std::log2(static_cast<double>(v[i]));
    return s;
}
}  // namespace

void CkksParams::finalize() {
    if (log_n < 3 || log_n > 17) bad("log_n must be in [3, 17], got " + std::to_string(log_n));
    if (log_n < 10 && !insecure) bad("log_n = " + std::to_string(log_n) + " is below 10, the smallest ring of the 128-bit table; pass insecure=True");
    if (levels < 0 || levels > 100) bad("levels must be in [0, 100], got " + std::to_string(levels));
    if (log_scale < 20 || log_scale > 60) bad("log_scale must be in [20, 60], got " + std::to_string(log_scale));
    if (first_mod_bits < log_scale || first_mod_bits > 61)
        bad("first_mod_bits must be in [log_scale = " + std::to_string(log_scale) + ", 61], got " + std::to_string(first_mod_bits));
    const int q_count = levels + 1 + static_cast<int>(boot_bits.size());
    if (dnum < 1 || dnum > q_count) bad("dnum must be in [1, number of Q primes = " + std::to_string(q_count) + "], got " + std::to_string(dnum));
    if (special_mod_bits != 0 && (special_mod_bits < 20 || special_mod_bits > 61))
        bad("special_mod_bits must be 0 (auto) or in [20, 61], got " + std::to_string(special_mod_bits));
    if (!(sigma > 0 && sigma < 100)) bad("sigma must be in (0, 100)");
    if (ks_margin_bits < 0 || ks_margin_bits > 60) bad("ks_margin_bits must be in [0, 60], got " + std::to_string(ks_margin_bits));
    if (boot_bits.size() > 64) bad("at most 64 bootstrapping primes, got " + std::to_string(boot_bits.size()));
    for (int b : boot_bits)
        if (b < 20 || b > 61) bad("boot_bits entries must be in [20, 61], got " + std::to_string(b));
    if (secret == SecretDist::HammingWeight) {
        if (hamming_weight < 1 || static_cast<std::size_t>(hamming_weight) > n())
            bad("hamming_weight must be in [1, N = " + std::to_string(n()) + "], got " + std::to_string(hamming_weight));
        if (hamming_weight < 64 && !insecure) bad("hamming_weight " + std::to_string(hamming_weight) + " is below 64; pass insecure=True");
    }

    const u64 two_n = 2 * n();
    // Rescaling primes nearest to 2^log_scale first, so the top levels (rescaled first, whose scale drift
    // is amplified the most) get the closest ones. Stay below 2^50 when log_scale = 50 (IFMA lanes).
    std::vector<u64> scale = levels ? ntt_primes_near(log_scale, static_cast<std::size_t>(levels), two_n, {}, log_scale != 50) : std::vector<u64>{};
    std::vector<u64> q0 = ntt_primes_near(first_mod_bits, 1, two_n, scale, first_mod_bits != 50);
    q_primes.clear();
    q_primes.push_back(q0[0]);
    for (std::size_t i = scale.size(); i-- > 0;) q_primes.push_back(scale[i]);
    // Bootstrapping primes: each run of equal sizes gets the primes nearest to 2^bits at its top.
    for (std::size_t at = 0; at < boot_bits.size();) {
        std::size_t end = at;
        while (end < boot_bits.size() && boot_bits[end] == boot_bits[at]) ++end;
        std::vector<u64> run = ntt_primes_near(boot_bits[at], end - at, two_n, q_primes, boot_bits[at] != 50);
        for (std::size_t i = run.size(); i-- > 0;) q_primes.push_back(run[i]);
        at = end;
    }

    // Special primes: K of them with P above the largest digit by a margin, because the key-switching
    // error is about (max digit / P) * alpha * sigma * N. 60-bit primes keep K small (K = 8 for
    // N = 2^16, 25 primes, dnum = 3), which keeps P inside the 128-bit budget.
    const int sp_bits = special_mod_bits ? special_mod_bits : 60;
    const std::size_t qn = q_primes.size();
    const std::size_t a = (qn + dnum - 1) / dnum;
    double max_digit = 0;
    for (std::size_t j = 0; j < static_cast<std::size_t>(dnum); ++j) {
        std::size_t last = qn - std::min(qn, j * a), first = qn - std::min(qn, (j + 1) * a);
        if (last > first) max_digit = std::max(max_digit, bits_of(q_primes, first, last));
    }
    const double kMarginBits = ks_margin_bits;
    std::size_t k = static_cast<std::size_t>(std::ceil((max_digit + kMarginBits) / (sp_bits - 0.5)));
    p_primes = ntt_primes_near(sp_bits, k, two_n, q_primes, sp_bits != 50);
    while (bits_of(p_primes, 0, p_primes.size()) < max_digit + kMarginBits) p_primes = ntt_primes_near(sp_bits, ++k, two_n, q_primes, sp_bits != 50);

    const int bound = secret == SecretDist::Ternary ? max_log_qp_128(log_n) : max_log_qp_128_sparse(log_n, hamming_weight);
    const double lqp = log_qp();
    if (!insecure) {
        if (bound == 0)
            bad(secret == SecretDist::Ternary ? "no 128-bit bound is known for log_n = " + std::to_string(log_n) + "; pass insecure=True"
                                              : "no 128-bit bound is known for a Hamming-weight-" + std::to_string(hamming_weight) + " secret at log_n = " +
                                                    std::to_string(log_n) + " (known: log_n = 16, h >= 192, log QP <= 1550); pass insecure=True");
        if (lqp > bound) {
            std::ostringstream os;
            os.precision(1);
            os << std::fixed << "log2(QP) = " << lqp << " bits exceeds the 128-bit security bound of " << bound << " bits for log_n = " << log_n
               << (secret == SecretDist::Ternary ? " (HE standard, ternary secret)" : " (Hamming-weight secret)")
               << "; use fewer levels, a smaller log_scale or a larger dnum, or pass insecure=True";
            q_primes.clear();
            p_primes.clear();
            bad(os.str());
        }
    }
}

double CkksParams::log_q() const { return bits_of(q_primes, 0, q_primes.size()); }
double CkksParams::log_qp() const { return log_q() + bits_of(p_primes, 0, p_primes.size()); }

std::array<std::uint8_t, 32> CkksParams::hash() const {
    std::vector<std::uint8_t> buf;
    auto put = [&](std::uint64_t v) { for (int i = 0; i < 8; ++i) buf.push_back(static_cast<std::uint8_t>(v >> (8 * i))); };
    buf.insert(buf.end(), {'E', 'M', 'B', 'E', 'R', '-', 'C', 'K', 'K', 'S'});
    put(static_cast<std::uint64_t>(log_n));
    put(static_cast<std::uint64_t>(levels));
    put(static_cast<std::uint64_t>(dnum));
    put(static_cast<std::uint64_t>(ks_margin_bits));
    put(static_cast<std::uint64_t>(log_scale));
    put(static_cast<std::uint64_t>(secret));
    put(static_cast<std::uint64_t>(hamming_weight));
    std::uint64_t sbits;
    std::memcpy(&sbits, &sigma, 8);
    put(sbits);
    put(q_primes.size());
    for (u64 q : q_primes) put(q);
    put(p_primes.size());
    for (u64 p : p_primes) put(p);
    std::array<std::uint8_t, 32> h{};
    unsigned int len = 0;
    if (EVP_Digest(buf.data(), buf.size(), h.data(), &len, EVP_sha256(), nullptr) != 1 || len != 32)
        throw std::runtime_error("CkksParams::hash: SHA-256 failed");
    return h;
}

std::string CkksParams::describe() const {
    std::ostringstream os;
    os.precision(1);
    os << std::fixed << "CkksParams(log_n=" << log_n << ", levels=" << levels << ", log_scale=" << log_scale << ", first_mod_bits=" << first_mod_bits
       << ", dnum=" << dnum;
    if (!boot_bits.empty()) os << ", bootstrapping levels=" << boot_bits.size();
    os << ", special primes=" << p_primes.size() << ", log2(QP)=" << (finalized() ? log_qp() : 0.0)
       << ", secret=" << (secret == SecretDist::Ternary ? "ternary" : "sparse(" + std::to_string(hamming_weight) + ")")
       << (insecure ? ", insecure" : "") << ")";
    return os.str();
}

}  // namespace ember
