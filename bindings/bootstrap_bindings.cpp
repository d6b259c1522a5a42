// Bindings of bootstrapping (cpp/circuits/bootstrap): configuration, parameter presets, keys, the
// bootstrapper and its stages.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "circuits/bootstrap.hpp"
#include "circuits/bootstrap_keys_io.hpp"
#include "convert.hpp"
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
        .def_rw("arcsin_degree", &BootstrapConfig::arcsin_degree)
        .def_rw("input_bound", &BootstrapConfig::input_bound)
        .def("arcsin_coefficients", [](const BootstrapConfig& c) { return c.arcsin_poly().coeffs; },
             "Chebyshev coefficients of the arcsine polynomial in s / s_B (resolved configurations only)")
        .def("sine_bound", [](const BootstrapConfig& c) { return std::sin(2 * 3.14159265358979323846 * c.input_bound / std::ldexp(1.0, c.message_ratio_bits)); })
        .def("approx_error", &BootstrapConfig::approx_error)
        .def_rw("ephemeral_weight", &BootstrapConfig::ephemeral_weight)
        .def_rw("encaps_digit_bits", &BootstrapConfig::encaps_digit_bits)
        .def_rw("merged_moddown", &BootstrapConfig::merged_moddown)
        .def_rw("hoisted_moddown", &BootstrapConfig::hoisted_moddown)
        .def_rw("depth_optimal", &BootstrapConfig::depth_optimal)
        .def("evalmod_depth", &BootstrapConfig::evalmod_depth)
        .def("resolved", &BootstrapConfig::resolved, "log_n"_a)
        .def("boot_bits", &BootstrapConfig::boot_bits, "stc_bits"_a, "cts_bits"_a);

    m.def("set_limb_fusion", &set_limb_fusion, "on"_a, "MAD's per-limb caching in ModUp (process-wide; on by default)");
    m.def("limb_fusion", &limb_fusion);
    m.def("bootstrappable_params", &bootstrappable_params, "log_n"_a, "levels"_a, "log_scale"_a, "cfg"_a, "dnum"_a = 0, "stc_bits"_a = 50,
          "cts_bits"_a = 56, "insecure"_a = false, "hamming_weight"_a = 0, "special_bits"_a = 52, "first_mod_bits"_a = 60);

    // One key at a time in and out, so that saving or loading never holds two copies of the key set.
    // Names: "relin", "from_sparse" (hybrid keys), "galois" with its Galois element; the BV key s -> s'
    // is a list of level-0 pairs written as ciphertexts.
    auto key_of = [](BootstrapKeys& k, const std::string& what, std::uint64_t elt) -> std::shared_ptr<SwitchingKey>* {
        if (what == "relin") return &k.relin;
        if (what == "from_sparse") return &k.from_sparse;
        if (what == "galois") return nullptr;
        throw std::invalid_argument("unknown bootstrapping key " + what);
    };
    nb::class_<BootstrapKeys>(m, "BootstrapKeysCore")
        .def(nb::init<>())
        .def_prop_ro("galois_elements", [](const BootstrapKeys& k) {
            std::vector<std::uint64_t> v;
            if (k.galois)
                for (const auto& [e, _] : k.galois->keys) v.push_back(e);
            return v;
        })
        .def("key_to_bytes",
             [key_of](BootstrapKeys& k, const std::shared_ptr<Context>& ctx, const std::string& what, std::uint64_t elt) {
                 const SwitchingKey* key = nullptr;
                 if (auto* p = key_of(k, what, elt)) key = p->get();
                 else if (k.galois) key = k.galois->find(elt);
                 if (!key) throw std::invalid_argument("no " + what + " key" + (what == "galois" ? " for element " + std::to_string(elt) : ""));
                 std::vector<std::uint8_t> b;
                 {
                     nb::gil_scoped_release r;
                     b = to_bytes(*ctx, *key);
                 }
                 return bind::as_bytes(b);
             },
             "ctx"_a, "what"_a, "element"_a = 0)
        .def("key_from_bytes",
             [](BootstrapKeys& k, const std::shared_ptr<Context>& ctx, const std::string& what, nb::bytes data, std::uint64_t elt, std::size_t max_bytes) {
                 read_bootstrap_key(k, *ctx, what, bind::span_of(data), elt, ReadOptions{max_bytes});
             },
             "ctx"_a, "what"_a, "data"_a, "element"_a = 0, "max_bytes"_a = 0)
        .def("to_sparse_to_bytes",
             [](const BootstrapKeys& k, const std::shared_ptr<Context>& ctx) {
                 std::vector<nb::bytes> out;
                 if (k.to_sparse)
                     for (const auto& [b, a] : k.to_sparse->parts) {
                         Ciphertext c{b, a, 1.0, ctx->slots()};
                         c.key_id = k.to_sparse->key_id;
                         out.push_back(bind::as_bytes(to_bytes(*ctx, c, WriteOptions{Coefficients::Packed})));  // a key: compact
                     }
                 return out;
             },
             "ctx"_a)
        .def("to_sparse_from_bytes",
             [](BootstrapKeys& k, const std::shared_ptr<Context>& ctx, const std::vector<nb::bytes>& parts, int digit_bits, std::size_t max_bytes) {
                 auto key = std::make_shared<DigitSwitchingKey>();
                 key->digit_bits = digit_bits;
                 for (const auto& p : parts) set_encapsulation_part(*key, key->parts.size(), read_encapsulation_part(*ctx, bind::span_of(p), ReadOptions{max_bytes}));
                 k.to_sparse = std::move(key);
             },
             "ctx"_a, "parts"_a, "digit_bits"_a, "max_bytes"_a = 0)
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
            if (k.to_sparse)
                for (const auto& [b, a] : k.to_sparse->parts) {
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
        .def("bootstrap", &Bootstrapper::bootstrap, "ct"_a, "keys"_a, RG())
        .def("bootstrap_iterative", &Bootstrapper::bootstrap_iterative, "ct"_a, "keys"_a, "residual_bits"_a = 0, RG());
}
