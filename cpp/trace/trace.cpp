#include "trace/trace.hpp"

#include <mutex>

namespace ember::trace {

namespace detail { std::atomic<int> g_enabled{0}; }

namespace {
std::mutex g_mu;
thread_local Counts* t_sink = nullptr;
std::map<std::string, Counts>& table() {
    static std::map<std::string, Counts> t;
    return t;
}
}  // namespace

Counts& Counts::operator+=(const Counts& o) {
    calls += o.calls; mod_mul += o.mod_mul; mod_add += o.mod_add; ntt += o.ntt;
    word_mul += o.word_mul; adc += o.adc;
    bytes_read += o.bytes_read; bytes_written += o.bytes_written; ns += o.ns;
    return *this;
}

void enable() { detail::g_enabled.fetch_add(1); }
void disable() { if (detail::g_enabled.fetch_sub(1) <= 0) detail::g_enabled.store(0); }
void reset() { std::lock_guard<std::mutex> l(g_mu); table().clear(); }
Counts* set_thread_sink(Counts* sink) {
    Counts* prev = t_sink;
    t_sink = sink;
    return prev;
}
void record(const char* kernel, const Counts& c) {
    if (t_sink) *t_sink += c;
    std::lock_guard<std::mutex> l(g_mu);
    table()[kernel] += c;
}
std::map<std::string, Counts> snapshot() {
    std::lock_guard<std::mutex> l(g_mu);
    return table();
}

}  // namespace ember::trace
