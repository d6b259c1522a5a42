// Bindings of the circuits built on the evaluator (cpp/circuits/): linear transforms, polynomials, sums of rotations.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/complex.h>

#include "circuits/dft.hpp"
#include "circuits/lintrans.hpp"
#include "circuits/polyeval.hpp"
#include "circuits/rotsum.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace ember;

void bind_circuits(nb::module_& m) {
    using RG = nb::call_guard<nb::gil_scoped_release>;
    nb::class_<LinearTransform>(m, "LinearTransformCore")
        .def("__init__",
             [](LinearTransform* self, std::shared_ptr<Context> ctx, const std::map<long, std::vector<cplx>>& diags, std::size_t slots,
                std::size_t level, std::size_t n1) {
                 nb::gil_scoped_release r;
                 new (self) LinearTransform(ctx, diags, slots, level, n1);
             },
             "ctx"_a, "diagonals"_a, "slots"_a, "level"_a, "n1"_a = 0)
        .def_prop_ro("rotations", &LinearTransform::rotations)
        .def_prop_ro("baby_steps", &LinearTransform::baby_steps)
        .def_prop_ro("level", &LinearTransform::level)
        .def_prop_ro("slots", &LinearTransform::slots)
        .def("apply", [](const LinearTransform& lt, const Ciphertext& ct, const GaloisKeys& gk) { return lt.apply(ct, gk); }, RG())
        .def("apply_reference", [](const LinearTransform& lt, const Ciphertext& ct, const GaloisKeys& gk) { return lt.apply_reference(ct, gk); }, RG());

    m.def("evaluate_chebyshev",
          [](std::shared_ptr<Context> ctx, const Ciphertext& x, std::vector<double> coeffs, double a, double b, const SwitchingKey& rlk) {
              ChebyshevPoly p{std::move(coeffs), a, b};
              nb::gil_scoped_release r;
              return evaluate_chebyshev(Evaluator(ctx), x, p, rlk);
          });
    m.def("rotate_sum", [](std::shared_ptr<Context> ctx, const Ciphertext& x, std::vector<long> steps, const GaloisKeys& gk) {
        nb::gil_scoped_release r;
        return rotate_sum(Evaluator(ctx), x, steps, gk);
    });
    m.def("inner_sum", [](std::shared_ptr<Context> ctx, const Ciphertext& x, long stride, long count, long radix,
                          const GaloisKeys& gk) {
        nb::gil_scoped_release r;
        return inner_sum(Evaluator(ctx), x, stride, count, radix, gk);
    });
    m.def("inner_sum_rotations", &inner_sum_rotations, "stride"_a, "count"_a, "radix"_a);
    m.def("dft_factors", [](std::size_t log_n, std::size_t slots, std::size_t levels, bool coeff_to_slot) {
        Encoder enc(std::size_t(1) << log_n);
        return coeff_to_slot ? coeff_to_slot_factors(enc, slots, levels) : slot_to_coeff_factors(enc, slots, levels);
    });
    m.def("chebyshev_depth", [](std::vector<double> coeffs) { return chebyshev_depth(ChebyshevPoly{std::move(coeffs), -1, 1}); });
}
