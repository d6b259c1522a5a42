// The symbolic ("null") backend: every kernel does nothing and polynomials share one scratch buffer, so a
// program runs through the whole scheme (evaluator, linear transforms, bootstrapping) without arithmetic
// and without memory per value: graph capture (python/ember/graph) records its operations in seconds,
// also for programs far too large to run here. Values computed on it are meaningless by design.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.hpp"

namespace ember {

namespace {

class NullBackend final : public Backend {
public:
    const char* name() const override { return "symbolic"; }
    int threads() const override { return 1; }
    bool holds_data() const override { return false; }

    // One scratch buffer, grown to the largest request; older buffers stay alive (polynomials may still
    // point into them) until the backend goes. Code outside the kernels that writes limbs (encoding,
    // sampling) writes there; nothing reads it back meaningfully.
    u64* allocate(std::size_t words, bool /*zero*/) override {
        std::lock_guard<std::mutex> l(mu_);
        if (words > size_) {
            size_ = std::max(words, 2 * size_);
            buffers_.push_back(std::make_unique<u64[]>(size_));
        }
        return buffers_.back().get();
    }
    void release(u64*, std::size_t, bool) override {}
    void upload(u64*, const u64*, std::size_t) override {}
    void download(u64*, const u64*, std::size_t) override {}
    void copy_words(u64*, const u64*, std::size_t) override {}

    void ntt_forward(Limbs) override {}
    void ntt_inverse(Limbs) override {}
    void ntt_inverse_from(Limbs, ConstLimbs) override {}
    void copy(Limbs, ConstLimbs) override {}
    void add(Limbs, ConstLimbs, ConstLimbs) override {}
    void sub(Limbs, ConstLimbs, ConstLimbs) override {}
    void neg(Limbs, ConstLimbs) override {}
    void mul(Limbs, ConstLimbs, ConstLimbs) override {}
    void mul_add(Limbs, ConstLimbs, ConstLimbs) override {}
    void dot(Limbs, const std::vector<std::vector<const u64*>>&, const std::vector<std::vector<const u64*>>&) override {}
    void mul_const(Limbs, ConstLimbs, std::span<const MulConst>, bool) override {}
    void add_const(Limbs, ConstLimbs, std::span<const u64>) override {}
    void sub_mul_const(Limbs, ConstLimbs, ConstLimbs, std::span<const MulConst>) override {}
    void permute(Limbs, ConstLimbs, std::uint64_t, const std::uint32_t*) override {}
    void base_convert(const BaseConverter&, ConstLimbs, std::span<u64* const>, std::size_t, bool) override {}
    void signed_digits(std::span<u64* const>, const u64*, const Modulus&, std::size_t, int) override {}

private:
    std::mutex mu_;
    std::size_t size_ = 0;
    std::vector<std::unique_ptr<u64[]>> buffers_;
};

}  // namespace

std::shared_ptr<Backend> make_null_backend() { return std::make_shared<NullBackend>(); }

}  // namespace ember
