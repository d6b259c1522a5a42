#include "util/errors.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ember {

void fail(std::string_view where, std::string_view why) {
    std::string m(where);
    m += ": ";
    m += why;
    throw std::invalid_argument(m);
}

std::string scale_str(double s) {
    if (!(s > 0) || !std::isfinite(s)) return std::to_string(s);
    int e = 0;
    if (std::frexp(s, &e) == 0.5) return "2^" + std::to_string(e - 1);
    char buf[40];
    std::snprintf(buf, sizeof buf, "2^%.10g", std::log2(s));
    return buf;
}

}  // namespace ember
