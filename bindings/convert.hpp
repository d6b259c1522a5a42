// numpy <-> std::complex<double> vectors, shared by the binding files.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <span>
#include <vector>
#include <nanobind/ndarray.h>

#include <complex>
#include <vector>

namespace ember::bind {

namespace nb = nanobind;

using CArray = nb::ndarray<const std::complex<double>, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, std::complex<double>, nb::ndim<1>>;

inline std::vector<std::complex<double>> to_vec(const CArray& a) { return {a.data(), a.data() + a.shape(0)}; }

/// Hands the vector to numpy without a copy (a capsule owns it).
inline OutArray to_numpy(std::vector<std::complex<double>>&& v) {
    auto* heap = new std::vector<std::complex<double>>(std::move(v));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<std::complex<double>>*>(p); });
    return OutArray(heap->data(), {heap->size()}, owner);
}

/// Bytes objects in and out of the serializers (io/serialize.hpp).
inline std::span<const std::uint8_t> span_of(const nb::bytes& b) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(b.c_str()), b.size());
}
inline nb::bytes as_bytes(const std::vector<std::uint8_t>& v) { return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size()); }

}  // namespace ember::bind
