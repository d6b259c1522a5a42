// The trace counts of the backend kernels (trace/trace.hpp), one convention for every backend: the cost simulator
// and the scheduler's cost tables read them, so a CPU and a GPU run of the same operation count the same work.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "trace/trace.hpp"

namespace ember::counts {

/// Coefficients over all limbs of `out`.
inline std::uint64_t elems(Limbs out) {
    std::uint64_t e = 0;
    for (const LimbRef& r : out) e += r.table->n;
    return e;
}

/// `reads` arrays of out's shape read and `writes` written.
inline void io(trace::Counts& c, Limbs out, int reads, int writes) {
    const std::uint64_t bytes = elems(out) * sizeof(u64);
    c.bytes_read = bytes * static_cast<std::uint64_t>(reads);
    c.bytes_written = bytes * static_cast<std::uint64_t>(writes);
}

/// Inner products of `terms` terms into `outputs` polynomials of out's shape over shared terms (Backend::dot: one
/// output, dot2: two, the shared terms read once): terms products and terms - 1 additions per output element.
inline void dot(trace::Counts& c, Limbs out, std::uint64_t terms, int outputs) {
    const std::uint64_t k = static_cast<std::uint64_t>(outputs);
    c.mod_mul = k * terms * elems(out);
    c.mod_add = k * (terms - 1) * elems(out);
    io(c, out, static_cast<int>((k + 1) * terms), outputs);
}

/// Limb NTTs: (N/2) log N butterflies, one product and two additions each, and the N^-1 scaling of the inverse
/// (see ntt_mod_mul_count); each limb read and written once.
inline void ntt(trace::Counts& c, Limbs x, bool inverse) {
    for (const LimbRef& r : x) {
        const std::uint64_t n = r.table->n, lg = static_cast<std::uint64_t>(r.table->log_n);
        c.ntt += 1;
        c.mod_mul += ntt_mod_mul_count(*r.table, inverse);
        c.mod_add += n * lg;
        c.bytes_read += n * sizeof(u64);
        c.bytes_written += n * sizeof(u64);
    }
}

}  // namespace ember::counts
