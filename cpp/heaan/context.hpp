// HEAAN context: one parameter set with its CRT/NTT basis, thread pool and encoder; key generation,
// encoding, encryption, decryption, and the homomorphic operations (evaluator.cpp). Immutable after
// construction except for internal scratch; safe to share between threads.
//
// HE Mul follows Fig. 2 of paper 000. Region 1 (tensor product of two ciphertexts modulo q): CRT of
// a1, b1, a2, b2 over np1 primes (P > 2^4 * 2N (q/2)^2; operands read centered), then prime by prime NTT,
// the pointwise a1 a2, b1 b2 and a1 b2 + b1 a2 (the cross term summed in the NTT domain: 4 CRTs and 3 iCRTs
// instead of HEAAN 2.1's 6 and 3 with Karatsuba), iNTT. Region 2 (key switching of a1 a2 with the evaluation
// key): iCRT of a1 a2 modulo q fed tile by tile into its CRT over np2 primes (P > 2^4 N (q/2) (Q^2/2)), then
// prime by prime NTT, pointwise with the key's two polynomials, iNTT; the last iCRT reconstructs
// round(KA / Q) and round(KB / Q) (the shift by logQ folded in) together with a1 b2 + b1 a2 and b1 b2 of
// region 1, and adds them. Each step is a trace kernel: heaan_crt, heaan_ntt, heaan_intt, heaan_icrt,
// heaan_extra (pointwise products, additions, copies); heaan_mul times the whole operation.
//
// Memory: the RNS forms (np x N words per polynomial: 25 MB and 37 MB at N = 2^16, logQ = 1200) do not fit in
// cache, so every stage is one pass over them: CRT and stores that are not read back soon bypass the caches
// (streaming stores), the NTT, the products and the iNTT of one prime run back to back on that prime's rows,
// and the scratch rows are kept by the context between calls.
#pragma once

#include <complex>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "ckks/encoder.hpp"
#include "heaan/crt.hpp"
#include "heaan/keys.hpp"
#include "heaan/params.hpp"

namespace ember {
class ThreadPool;
}

namespace ember::heaan {

using cplx = std::complex<double>;

class Context {
public:
    explicit Context(Params params, int threads = 1);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const Params& params() const { return params_; }
    int threads() const;
    ThreadPool& pool() const { return *pool_; }
    const CrtBasis& basis() const { return *basis_; }
    CrtBasis& basis_mut() { return *basis_; }
    /// np of region 1 (tensor product of two log_q-bit polynomials) and of region 2 (key switching).
    std::size_t primes_region1(int log_q) const;
    std::size_t primes_region2(int log_q) const;

    // ---- keys ----
    std::shared_ptr<SecretKey> gen_secret_key() const;
    std::shared_ptr<SwitchKey> gen_public_key(const SecretKey& sk) const;
    std::shared_ptr<SwitchKey> gen_mult_key(const SecretKey& sk) const;
    /// Key of X -> X^g (g = galois_element(r) for a left rotation by r slots, 2N - 1 for conjugation).
    std::shared_ptr<SwitchKey> gen_galois_key(const SecretKey& sk, std::uint64_t g) const;
    KeySet keygen(const std::vector<long>& rotations = {}, bool conjugation = false) const;
    /// 5^r mod 2N for a left rotation by r slots (r of any sign, taken modulo N/2).
    std::uint64_t galois_element(long r) const;
    std::uint64_t conjugation_element() const { return 2 * params_.n() - 1; }

    // ---- encoding ----
    /// round(2^log_scale * embedding^-1(z)) modulo 2^log_q; z.size() = slots, a power of two <= N/2.
    BigPoly encode(std::span<const cplx> z, int log_scale, int log_q) const;
    std::vector<cplx> decode(const BigPoly& m, int log_scale, std::size_t slots) const;

    // ---- encryption ----
    /// HEAAN 2.1's encryption: (v pk + (e1, e0 + Q m)) modulo q Q, shifted right by logQ (so the fresh noise
    /// is the rounding only). log_scale = 0 means log_p, log_q = 0 means logQ.
    Ciphertext encrypt(std::span<const cplx> z, const SwitchKey& pk, int log_scale = 0, int log_q = 0) const;
    /// m = b + a s modulo q, decoded.
    std::vector<cplx> decrypt(const Ciphertext& ct, const SecretKey& sk) const;

    // ---- evaluation (evaluator.cpp) ----
    Ciphertext add(const Ciphertext& x, const Ciphertext& y) const;
    Ciphertext sub(const Ciphertext& x, const Ciphertext& y) const;
    Ciphertext negate(const Ciphertext& x) const;
    /// x + z for plaintext slot values z (x.slots of them, or one value for every slot), encoded at x's scale.
    Ciphertext add_plain(const Ciphertext& x, std::span<const cplx> z) const;
    /// x * c for a real constant c, as the integer round(c 2^log_scale) (|.| < 2^62; log_scale = 0 means log_p):
    /// the scale grows by log_scale (rescale afterwards).
    Ciphertext mul_const(const Ciphertext& x, double c, int log_scale = 0) const;
    /// HE Mul with relinearization (Fig. 2), before rescaling: log_scale adds, log_q stays.
    Ciphertext mul(const Ciphertext& x, const Ciphertext& y, const SwitchKey& mult_key) const;
    /// Rescale by 2^bits (bits = 0: log_p): a right shift with rounding, log_q and log_scale drop by bits.
    Ciphertext rescale(const Ciphertext& x, int bits = 0) const;
    /// x modulo 2^log_q for a smaller log_q (no change of scale).
    Ciphertext mod_down(const Ciphertext& x, int log_q) const;
    Ciphertext rotate(const Ciphertext& x, long r, const SwitchKey& key) const;
    Ciphertext conjugate(const Ciphertext& x, const SwitchKey& key) const;
    /// (round(c key.a / Q), round(c key.b / Q)) modulo 2^c.bits: region 2 of Fig. 2.
    std::pair<BigPoly, BigPoly> key_switch(const BigPoly& c, const SwitchKey& key) const;

    /// Scratch of at least `words` words (returned to the context with give_back).
    RowBuffer take_scratch(std::size_t words) const;
    void give_back(RowBuffer&& b) const;

private:
    Ciphertext apply_automorphism(const Ciphertext& x, std::uint64_t g, const SwitchKey& key) const;
    /// Region 2 on residue rows, prime by prime (threads over primes): NTT of R, KA = R key.a and R = R key.b
    /// pointwise, iNTT of both. [heaan_ntt, heaan_extra, heaan_intt]
    void multiply_by_key(std::size_t np, u64* R, u64* KA, const SwitchKey& key) const;
    std::shared_ptr<SwitchKey> gen_switch_key(const SecretKey& sk, const std::vector<std::int64_t>& target, std::uint64_t tag, std::size_t np) const;
    BigPoly uniform_poly(int bits) const;

    Params params_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<CrtBasis> basis_;
    Encoder encoder_;
    mutable std::mutex scratch_mu_;
    mutable std::vector<RowBuffer> scratch_;
};

}  // namespace ember::heaan
