// Kernel counters: every backend kernel reports what it did (modular multiplications and additions,
// limb NTTs, bytes read and written, wall time) when tracing is on. The cost simulator is validated
// against these counts and the scheduler builds its cost tables from them, so they count exactly what
// the kernels execute, by the conventions documented next to each kernel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace ember::trace {

struct Counts {
    std::uint64_t calls = 0;
    std::uint64_t mod_mul = 0;        // modular multiplications (Shoup, Barrett or Montgomery: one each)
    std::uint64_t mod_add = 0;        // modular additions / subtractions (incl. lazy corrections folded in)
    std::uint64_t ntt = 0;            // limb transforms (forward or inverse), each N/2 log N butterflies
    // Big-integer word arithmetic (HEAAN's CRT / iCRT, paper 000 Table IV's "Multiplication" and "ADC" rows); zero
    // for the RNS kernels:
    std::uint64_t word_mul = 0;       // word products outside modular multiplications (64 x 64 -> 128 bits on the
                                      // scalar path; one 52 x 52 -> 104-bit madd52lo/hi pair on IFMA)
    std::uint64_t adc = 0;            // multi-word additions: one per word product accumulated into a multi-word sum
                                      // (add + add-with-carry; folded into madd52 on IFMA), one per word of carry
                                      // propagation, one per word of a big-integer addition
    std::uint64_t bytes_read = 0;     // bytes of limbs / keys / plaintexts read
    std::uint64_t bytes_written = 0;  // bytes of limbs written
    std::uint64_t ns = 0;             // wall time
    Counts& operator+=(const Counts& o);
};

namespace detail { extern std::atomic<int> g_enabled; }

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed) != 0; }
/// Nesting-safe: enable() increments, disable() decrements.
void enable();
void disable();
void reset();
void record(const char* kernel, const Counts& c);
/// Also add every count this thread records to *sink (nullptr: none); returns the previous sink. Used by
/// graph capture (ckks/op_record.hpp) to attribute kernel counts to one evaluator operation.
Counts* set_thread_sink(Counts* sink);
std::map<std::string, Counts> snapshot();

/// RAII: fill `c` in the kernel, the elapsed time is added and everything recorded on scope exit.
class Scope {
public:
    explicit Scope(const char* kernel) : kernel_(kernel), on_(enabled()) {
        if (on_) t0_ = std::chrono::steady_clock::now();
    }
    ~Scope() {
        if (!on_) return;
        c.calls += 1;
        c.ns += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
        record(kernel_, c);
    }
    bool on() const { return on_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Counts c;

private:
    const char* kernel_;
    bool on_;
    std::chrono::steady_clock::time_point t0_;
};

}  // namespace ember::trace
