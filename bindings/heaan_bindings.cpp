// Bindings of the non-RNS HEAAN scheme (cpp/heaan/): submodule _ember.heaan. Conversion (numpy <-> complex
// vectors) and error mapping only; the user-facing API is python/ember/heaan.py. Long calls release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "convert.hpp"
#include <nanobind/stl/complex.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>

#include "heaan/context.hpp"
#include "trace/trace.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace ember;
using HCtx = heaan::Context;
using heaan::cplx;

using bind::CArray;
using bind::OutArray;
using bind::to_numpy;
using bind::to_vec;

using Ct = heaan::Ciphertext;
using CtPtr = std::shared_ptr<Ct>;
CtPtr wrap(Ct&& c) { return std::make_shared<Ct>(std::move(c)); }

}  // namespace

void bind_heaan(nb::module_& m) {
    nb::module_ h = m.def_submodule("heaan", "Non-RNS HEAAN (paper 000): big-integer ciphertexts modulo 2^logq");
    using RG = nb::call_guard<nb::gil_scoped_release>;

    nb::class_<heaan::Params>(h, "ParamsCore")
        .def(nb::init<>())
        .def_rw("log_n", &heaan::Params::log_n)
        .def_rw("log_q", &heaan::Params::log_q)
        .def_rw("log_p", &heaan::Params::log_p)
        .def_rw("hamming_weight", &heaan::Params::hamming_weight)
        .def_rw("sigma", &heaan::Params::sigma)
        .def_rw("prime_bits", &heaan::Params::prime_bits)
        .def_rw("security", &heaan::Params::security)
        .def_rw("insecure", &heaan::Params::insecure)
        .def("validate", &heaan::Params::validate)
        .def_prop_ro("n", &heaan::Params::n)
        .def_prop_ro("max_slots", &heaan::Params::max_slots)
        .def_prop_ro("depth", &heaan::Params::depth)
        .def("__repr__", &heaan::Params::describe);
    h.def("max_log_q", &heaan::max_log_q, "log_n"_a, "security"_a);

    nb::class_<heaan::SecretKey>(h, "SecretKey").def("__repr__", [](const heaan::SecretKey&) { return "<ember.heaan.SecretKey (hidden)>"; });
    nb::class_<heaan::SwitchKey>(h, "SwitchKey")
        .def_ro("np", &heaan::SwitchKey::np)
        .def_ro("galois", &heaan::SwitchKey::galois);
    nb::class_<Ct>(h, "CiphertextCore")
        .def_prop_ro("log_q", &Ct::log_q)
        .def_ro("log_scale", &Ct::log_scale)
        .def_ro("slots", &Ct::slots)
        .def("words", [](const Ct& c) { return c.a.words; });

    nb::class_<HCtx>(h, "ContextCore")
        .def(nb::new_([](heaan::Params p, int threads) {
                 nb::gil_scoped_release r;
                 return std::make_shared<HCtx>(std::move(p), threads);
             }),
             "params"_a, "threads"_a = 1)
        .def_prop_ro("params", [](const HCtx& c) { return c.params(); })
        .def_prop_ro("threads", &HCtx::threads)
        .def_prop_ro("ifma", [](const HCtx& c) { return c.basis().ifma(); })
        .def("set_ifma", [](HCtx& c, bool on) { c.basis_mut().set_ifma(on); })
        .def_prop_ro("crt_path", [](const HCtx& c) { return std::string(heaan::crt_path_name(c.basis().path())); })
        .def("set_crt_path",
             [](HCtx& c, const std::string& name) {
                 heaan::CrtPath p;
                 if (name == "scalar") p = heaan::CrtPath::kScalar;
                 else if (name == "avx2") p = heaan::CrtPath::kAvx2;
                 else if (name == "ifma") p = heaan::CrtPath::kIfma;
                 else throw std::invalid_argument("crt path must be one of scalar, avx2, ifma; got '" + name + "'");
                 c.basis_mut().set_path(p);
             },
             "path"_a, "Runs the CRT / iCRT kernels of `path`, or the fastest path below it this basis can take.")
        .def_prop_ro("primes", [](const HCtx& c) {
            std::vector<std::uint64_t> v;
            for (std::size_t j = 0; j < c.basis().size(); ++j) v.push_back(c.basis().prime(j).q);
            return v;
        })
        .def("primes_region1", &HCtx::primes_region1)
        .def("primes_region2", &HCtx::primes_region2)
        .def("galois_element", &HCtx::galois_element)
        .def_prop_ro("conjugation_element", &HCtx::conjugation_element)
        .def("gen_secret_key", &HCtx::gen_secret_key, RG())
        .def("gen_public_key", &HCtx::gen_public_key, RG())
        .def("gen_mult_key", &HCtx::gen_mult_key, RG())
        .def("gen_galois_key", &HCtx::gen_galois_key, RG())
        .def("encrypt",
             [](const HCtx& c, CArray v, const heaan::SwitchKey& pk, int log_scale, int log_q) {
                 auto z = to_vec(v);
                 nb::gil_scoped_release r;
                 return wrap(c.encrypt(z, pk, log_scale, log_q));
             },
             "values"_a, "pk"_a, "log_scale"_a = 0, "log_q"_a = 0)
        .def("decrypt",
             [](const HCtx& c, const Ct& ct, const heaan::SecretKey& sk) {
                 std::vector<cplx> z;
                 {
                     nb::gil_scoped_release r;
                     z = c.decrypt(ct, sk);
                 }
                 return to_numpy(std::move(z));
             })
        .def("add", [](const HCtx& c, const Ct& a, const Ct& b) { return wrap(c.add(a, b)); }, RG())
        .def("sub", [](const HCtx& c, const Ct& a, const Ct& b) { return wrap(c.sub(a, b)); }, RG())
        .def("negate", [](const HCtx& c, const Ct& a) { return wrap(c.negate(a)); }, RG())
        .def("add_plain",
             [](const HCtx& c, const Ct& a, CArray v) {
                 auto z = to_vec(v);
                 nb::gil_scoped_release r;
                 return wrap(c.add_plain(a, z));
             })
        .def("mul_const", [](const HCtx& c, const Ct& a, double k, int log_scale) { return wrap(c.mul_const(a, k, log_scale)); }, RG())
        .def("mul", [](const HCtx& c, const Ct& a, const Ct& b, const heaan::SwitchKey& k) { return wrap(c.mul(a, b, k)); }, RG())
        .def("square", [](const HCtx& c, const Ct& a, const heaan::SwitchKey& k) { return wrap(c.mul(a, a, k)); }, RG())
        .def("rescale", [](const HCtx& c, const Ct& a, int bits) { return wrap(c.rescale(a, bits)); }, RG())
        .def("mod_down", [](const HCtx& c, const Ct& a, int log_q) { return wrap(c.mod_down(a, log_q)); }, RG())
        .def("rotate", [](const HCtx& c, const Ct& a, long r, const heaan::SwitchKey& k) { return wrap(c.rotate(a, r, k)); }, RG())
        .def("conjugate", [](const HCtx& c, const Ct& a, const heaan::SwitchKey& k) { return wrap(c.conjugate(a, k)); }, RG())
        // HE Mul timed in C++ (ns per call, GIL released), for `ember bench heaan-mul`.
        .def("bench_mul",
             [](const HCtx& c, const Ct& a, const Ct& b, const heaan::SwitchKey& k, int runs) {
                 std::vector<double> ns;
                 nb::gil_scoped_release r;
                 for (int i = 0; i < runs; ++i) {
                     const auto t0 = std::chrono::steady_clock::now();
                     Ct out = c.mul(a, b, k);
                     const auto t1 = std::chrono::steady_clock::now();
                     ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
                 }
                 return ns;
             });
}
