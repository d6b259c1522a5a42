// Bindings of bootstrapping (cpp/circuits/bootstrap): configuration, parameter presets, keys, the
// bootstrapper and its stages.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "circuits/bootstrap.hpp"
#include "io/serialize.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace ember;

namespace {

// Bytes of a switching key in memory: expanded (b and a) and compressed (b and the 32-byte seeds).
std::pair<std::size_t, std::size_t> key_bytes(const SwitchingKey& k) {
    std::size_t words = 0;
    for (const Poly& p : k.b) words += p.limbs() * p.n();
    const std::size_t expanded = 2 * 8 * words;
    return {expanded, k.seeded() ? 8 * words + 32 * k.seeds.size() : expanded};
}

}  // namespace

void bind_bootstrap(nb::module_& m) {
    using RG = nb::call_guard<nb::gil_scoped_release>;
    nb::class_<BootstrapConfig>(m, "BootstrapConfigCore")
        .def(nb::init<>())
        .def_rw("slots", &BootstrapConfig::slots)
        .def_rw("cts_levels", &BootstrapConfig::cts_levels)
        .def_rw("stc_levels", &BootstrapConfig::stc_levels)
        .def_rw("k_range", &BootstrapConfig::k_range)
        .def_rw("cheb_degree", &BootstrapConfig::cheb_degree)
        .def_rw("double_angles", &BootstrapConfig::double_angles)
        .def_rw("message_ratio_bits", &BootstrapConfig::message_ratio_bits)
        .def_rw("arcsin", &BootstrapConfig::arcsin)
        .def_rw("ephemeral_weight", &BootstrapConfig::ephemeral_weight)
        .def_rw("encaps_digit_bits", &BootstrapConfig::encaps_digit_bits)
        .def_rw("merged_moddown", &BootstrapConfig::merged_moddown)
        .def_rw("hoisted_moddown", &BootstrapConfig::hoisted_moddown)
        .def_rw("depth_optimal", &BootstrapConfig::depth_optimal)
        .def("evalmod_depth", &BootstrapConfig::evalmod_depth)
        .def("resolved", &BootstrapConfig::resolved, "log_n"_a)
        .def("boot_bits", &BootstrapConfig::boot_bits, "stc_bits"_a, "cts_bits"_a);

    m.def("bootstrappable_params", &bootstrappable_params, "log_n"_a, "levels"_a, "log_scale"_a, "cfg"_a, "dnum"_a = 0, "stc_bits"_a = 50,
          "cts_bits"_a = 56, "insecure"_a = false, "hamming_weight"_a = 0);

    nb::class_<BootstrapKeys>(m, "BootstrapKeysCore")
        .def_prop_ro("relin", [](const BootstrapKeys& k) { return k.relin; })
        .def_prop_ro("galois", [](const BootstrapKeys& k) { return k.galois; })
        .def_prop_ro("rotation_keys", [](const BootstrapKeys& k) { return k.galois ? k.galois->keys.size() : 0; })
        .def_prop_ro("bytes", [](const BootstrapKeys& k) {
            // (expanded, compressed) over every switching key; the small BV key counts fully in both
            std::size_t e = 0, c = 0;
            auto add = [&](const SwitchingKey& s) {
                auto [ee, cc] = key_bytes(s);
                e += ee;
                c += cc;
            };
            if (k.relin) add(*k.relin);
            if (k.galois)
                for (const auto& [_, s] : k.galois->keys) add(s);
            if (k.from_sparse) add(*k.from_sparse);
            for (const auto& [b, a] : k.to_sparse) {
                e += 8 * (b.limbs() + a.limbs()) * b.n();
                c += 8 * (b.limbs() + a.limbs()) * b.n();
            }
            return std::make_pair(e, c);
        });

    nb::class_<Bootstrapper>(m, "BootstrapperCore")
        .def("__init__",
             [](Bootstrapper* self, std::shared_ptr<Context> ctx, const BootstrapConfig& cfg) {
                 nb::gil_scoped_release r;
                 new (self) Bootstrapper(ctx, cfg);
             },
             "ctx"_a, "cfg"_a)
        .def_prop_ro("slots", &Bootstrapper::slots)
        .def_prop_ro("rotations", &Bootstrapper::rotations)
        .def_prop_ro("config", &Bootstrapper::config)
        .def("gen_keys", &Bootstrapper::gen_keys, "sk"_a, "seeded"_a = true, RG())
        .def("with_keys",
             [](const Bootstrapper& b, const SecretKey& sk, std::shared_ptr<SwitchingKey> relin, std::shared_ptr<GaloisKeys> galois, bool seeded) {
                 BootstrapKeys k;
                 k.relin = std::move(relin);
                 k.galois = std::move(galois);
                 b.gen_encapsulation_keys(sk, k, seeded);
                 return k;
             },
             "sk"_a, "relin"_a, "galois"_a, "seeded"_a = true, RG())
        .def_prop_ro("evalmod_depth", [](const Bootstrapper& b) { return b.config().evalmod_depth(); })
        .def("bootstrap", &Bootstrapper::bootstrap, "ct"_a, "keys"_a, RG());
}
