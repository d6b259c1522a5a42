#include "ckks/op_record.hpp"

#include <chrono>
#include <mutex>
#include <stdexcept>

namespace ember::oprec {

namespace detail { std::atomic<int> g_recording{0}; }

namespace {
std::mutex g_mu;
std::vector<Event> g_events;
std::atomic<std::uint64_t> g_next_id{1};
std::atomic<std::uint64_t> g_next_thread{1};
thread_local int t_depth = 0;
thread_local std::uint64_t t_thread = 0;

std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::uint64_t poly_bytes(const Poly& p) { return p.empty() ? 0 : static_cast<std::uint64_t>(p.limbs()) * p.n() * sizeof(u64); }

std::uint64_t id_of(std::uint64_t& id) {
    if (id == 0) id = fresh_id();
    return id;
}

ValueRef ref_of(const Ciphertext& c) {
    ValueRef r;
    r.id = id_of(c.id);
    r.level = c.c0.empty() ? 0 : c.level();
    r.scale = c.scale;
    r.slots = c.slots;
    r.bytes = poly_bytes(c.c0) + poly_bytes(c.c1);
    return r;
}
}  // namespace

std::uint64_t fresh_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t thread_id() {
    if (t_thread == 0) t_thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
    return t_thread;
}

void start() {
    std::lock_guard<std::mutex> l(g_mu);
    if (detail::g_recording.load() != 0) throw std::logic_error("graph capture is already recording (captures do not nest)");
    g_events.clear();
    trace::enable();  // the kernels count only while tracing is on
    detail::g_recording.store(1);
}

std::vector<Event> stop() {
    std::lock_guard<std::mutex> l(g_mu);
    if (detail::g_recording.exchange(0) != 0) trace::disable();
    return std::exchange(g_events, {});
}

Op::Op(const char* op) {
    ++t_depth;
    if (t_depth != 1 || !recording()) return;
    on_ = true;
    ev_.op = op;
    ev_.thread = thread_id();
    prev_sink_ = trace::set_thread_sink(&ev_.counts);
    t0_ = now_ns();
}

Op::~Op() {
    --t_depth;
    if (!on_) return;
    trace::set_thread_sink(prev_sink_);
    if (!done_) return;
    ev_.ns = now_ns() - t0_;
    std::lock_guard<std::mutex> l(g_mu);
    if (recording()) g_events.push_back(std::move(ev_));
}

Op& Op::in(const Ciphertext& c) {
    if (!on_) return *this;
    ev_.in.push_back(ref_of(c));
    if (!c.c0.empty() && !c.c0.ring().backend().holds_data()) ev_.symbolic = true;
    if (!c.c0.empty() && !device_) {
        Backend& be = c.c0.ring().backend();
        if (!be.host_addressable() && be.holds_data()) {
            // A device queues kernels and returns: the operation's time runs from an empty queue to the end of its
            // own work (finish() waits too), not from the call to the return.
            device_ = &be;
            be.synchronize();
            t0_ = now_ns();
        }
    }
    return *this;
}

Op& Op::in(const Plaintext& p) {
    if (!on_) return *this;
    ValueRef r;
    r.id = id_of(p.id);
    r.plaintext = true;
    r.level = p.m.empty() ? 0 : p.level();
    r.scale = p.scale;
    r.slots = p.slots;
    r.bytes = poly_bytes(p.m);
    ev_.in.push_back(r);
    return *this;
}

Op& Op::arg(const char* name, long long v) {
    if (on_) ev_.args.emplace_back(name, v);
    return *this;
}

void Op::finish() {
    if (device_) device_->synchronize();
    done_ = true;
}

Ciphertext Op::out(Ciphertext c) {
    if (!on_) return c;
    for (const auto& i : ev_.in)
        if (c.id != 0 && c.id == i.id) return c;  // a copy of an input: no work done, nothing recorded
    c.id = fresh_id();
    ev_.out.push_back(ref_of(c));
    finish();
    return c;
}

std::vector<Ciphertext> Op::out(std::vector<Ciphertext> cs) {
    if (!on_) return cs;
    for (auto& c : cs) {
        bool copy = false;
        for (const auto& i : ev_.in) copy = copy || (c.id != 0 && c.id == i.id);
        if (copy) continue;  // rotate_many by 0: the input itself
        c.id = fresh_id();
        ev_.out.push_back(ref_of(c));
    }
    if (!ev_.out.empty()) finish();
    return cs;
}

}  // namespace ember::oprec
