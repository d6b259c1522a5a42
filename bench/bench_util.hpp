// Helpers shared by the command-line micro-benchmarks (bench/ntt_bench.cpp, bench/vec_bench.cpp): option parsing,
// clocks and timed runs, order statistics, and the one-line JSON records they print. Header-only (inline).
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ember::bench {

// ---- command line ---------------------------------------------------------------------------------------------------

/// "16,17" -> {16, 17}.
inline std::vector<int> parse_list(const char* s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
    return out;
}

/// The value after option argv[i] (advancing i); exits with status 2 when it is missing.
inline const char* option_value(int argc, char** argv, int& i) {
    if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", argv[i]);
        std::exit(2);
    }
    return argv[++i];
}

// ---- timing ---------------------------------------------------------------------------------------------------------

/// Nanoseconds on the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID, which leaves out the time the thread is
/// descheduled on a shared machine) or, with cpu_clock = false, on steady_clock.
inline double now_ns(bool cpu_clock) {
    if (cpu_clock) {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e9 + ts.tv_nsec;
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The time of one call of f in nanoseconds, divided by `per` (1000 for microseconds, n for a time per element).
template <class F>
double time_once(F&& f, bool cpu_clock, double per) {
    const double t0 = now_ns(cpu_clock);
    f();
    return (now_ns(cpu_clock) - t0) / per;
}

/// Calls f at least `runs` times and, with min_ms > 0, until min_ms milliseconds (steady_clock) have passed, so that
/// caches, branch predictors and the clock settle.
template <class F>
void warm_up(F&& f, int runs, int min_ms = 0) {
    const auto w0 = std::chrono::steady_clock::now();
    for (int i = 0; i < runs || std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(min_ms); ++i) f();
}

struct Stats {
    double median, min, max;
};

inline Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t k = v.size();
    const double med = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    return {med, v.front(), v.back()};
}

inline double median(std::vector<double> v) { return stats(std::move(v)).median; }

// ---- output ---------------------------------------------------------------------------------------------------------

/// One JSON object on one line, fields in the order added; `spaced` writes ", " and ": " between them instead of
/// "," and ":". Strings are written as given (no escaping: the benchmarks' names need none).
class JsonLine {
public:
    explicit JsonLine(bool spaced) : spaced_(spaced) {}
    JsonLine& str(const std::string& key, const std::string& v) { return raw(key, "\"" + v + "\""); }
    template <class Int>
    JsonLine& num(const std::string& key, Int v) { return raw(key, std::to_string(v)); }
    /// v with `decimals` digits after the point (printf "%.*f").
    JsonLine& fixed(const std::string& key, double v, int decimals) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
        return raw(key, buf);
    }
    JsonLine& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
    /// The fields of another record, appended in their order.
    JsonLine& append(const JsonLine& o) {
        fields_.insert(fields_.end(), o.fields_.begin(), o.fields_.end());
        return *this;
    }
    std::string text() const {
        std::string s = "{";
        for (std::size_t i = 0; i < fields_.size(); ++i) {
            if (i) s += spaced_ ? ", " : ",";
            s += "\"" + fields_[i].first + "\"" + (spaced_ ? ": " : ":") + fields_[i].second;
        }
        return s + "}";
    }
    /// Prints the line on stdout and flushes it (a consumer reads records as they come).
    void print() const {
        std::printf("%s\n", text().c_str());
        std::fflush(stdout);
    }

private:
    JsonLine& raw(const std::string& key, std::string v) {
        fields_.emplace_back(key, std::move(v));
        return *this;
    }
    bool spaced_;
    std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace ember::bench
