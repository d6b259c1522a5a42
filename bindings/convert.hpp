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

/// A view of any contiguous buffer (bytes, bytearray, memoryview, mmap, numpy array), held until the view is
/// destroyed (meanwhile its exporter cannot resize or free it), so that the serializers read or write it in
/// place, without a copy and without the GIL. Not a buffer: TypeError.
class BufferView {
public:
    explicit BufferView(nb::handle obj, bool writable = false) {
        if (PyObject_GetBuffer(obj.ptr(), &view_, writable ? (PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) : PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
    }
    ~BufferView() { PyBuffer_Release(&view_); }
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;
    std::span<const std::uint8_t> bytes() const { return {static_cast<const std::uint8_t*>(view_.buf), static_cast<std::size_t>(view_.len)}; }
    std::span<std::uint8_t> writable() { return {static_cast<std::uint8_t*>(view_.buf), static_cast<std::size_t>(view_.len)}; }

private:
    Py_buffer view_{};
};

}  // namespace ember::bind
