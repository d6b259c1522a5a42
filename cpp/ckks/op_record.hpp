// Operation recording: the hook behind graph capture (python/ember/graph). While recording is on, every
// public Evaluator operation called from outside the evaluator (the outermost one on its thread: an
// add that levels its operands through adjust_to is one "add") reports one event: its kind, its
// ciphertext / plaintext inputs and outputs (value id, level, scale, slots, bytes), a few integer
// arguments (rotation steps, target level) and, measured while it ran, the kernel counters of the trace
// layer and its wall time. C++ circuits (linear transforms, polynomial evaluation, bootstrapping) call
// the same public operations, so they are recorded operation by operation.
//
// Value ids: a Ciphertext or Plaintext gets a process-unique id the first time a recorded operation
// sees it (as an input, or as an output it makes); copies share the id (the same value). An operation
// whose output is a copy of one of its inputs (rotation by 0 slots, leveling to the same level) did no
// work and records nothing.
//
// Recording is process-wide; each event carries the recorder's id of the thread that called the operation
// (thread_id()), so that a capture keeps only its own thread's operations while other threads call the
// evaluator too. The per-operation counters are those of the calling thread. When off, the cost is one
// relaxed atomic load per operation.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ckks/ciphertext.hpp"
#include "trace/trace.hpp"

namespace ember::oprec {

struct ValueRef {
    std::uint64_t id = 0;
    bool plaintext = false;
    std::size_t level = 0;
    double scale = 0;
    std::size_t slots = 0;
    std::uint64_t bytes = 0;
};

struct Event {
    std::string op;
    std::vector<ValueRef> in, out;
    std::vector<std::pair<std::string, long long>> args;
    trace::Counts counts;  // kernels run by the operation (counts.ns: their time)
    std::uint64_t ns = 0;  // wall time of the whole operation
    bool symbolic = false; // ran on the symbolic (null) backend: counts and time mean nothing
    std::uint64_t thread = 0; // thread_id() of the thread that called the operation
};

namespace detail { extern std::atomic<int> g_recording; }
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed) != 0; }

/// Starts recording (clears earlier events). Throws if a recording is already under way.
void start();
/// Stops recording and returns the events in the order the operations finished (a topological order).
std::vector<Event> stop();
/// A fresh process-unique value id (never 0).
std::uint64_t fresh_id();
/// The calling thread's id for the recorder: 1, 2, ... in the order threads first ask (never reused).
std::uint64_t thread_id();

/// RAII recorder of one operation: construct it first thing in a public Evaluator operation, name the
/// inputs, and pass every result through out(). Inactive (and free) unless recording is on and this is
/// the outermost operation of the thread. The event is kept only if out() was reached (an operation that
/// throws records nothing).
class Op {
public:
    explicit Op(const char* op);
    ~Op();
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;

    Op& in(const Ciphertext& c);
    Op& in(const Plaintext& p);
    Op& arg(const char* name, long long v);
    Ciphertext out(Ciphertext c);
    std::vector<Ciphertext> out(std::vector<Ciphertext> cs);

private:
    void finish();
    bool on_ = false;
    bool done_ = false;
    Event ev_;
    trace::Counts* prev_sink_ = nullptr;
    Backend* device_ = nullptr;  // the inputs' backend when it queues work (a GPU): waited for around the timing
    std::uint64_t t0_ = 0;
};

}  // namespace ember::oprec
