// The one nanobind module: conversion (numpy <-> std::complex vectors) and error mapping only; the
// user-facing API (operators, numpy coercion, defaults) is in python/ember/.
// Long operations release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "convert.hpp"
#include <nanobind/stl/complex.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ckks/evaluator.hpp"
#include "ckks/symbolic.hpp"
#include "io/serialize.hpp"
#include "math/cpu_features.hpp"
#include "math/kernel_paths.hpp"
#include "math/ntt.hpp"
#include "math/primes.hpp"
#include "trace/peak.hpp"
#include "trace/trace.hpp"
#include "util/errors.hpp"
#ifdef EMBER_WITH_CUDA
#include "backend/cuda/kernels.hpp"
#include "backend/cuda/register.hpp"
#endif

namespace nb = nanobind;
using namespace nb::literals;
using namespace ember;

// Other parts of the module, one file each (bindings/*.cpp).
void bind_heaan(nb::module_& m);
void bind_circuits(nb::module_& m);
void bind_bootstrap(nb::module_& m);
void bind_graph(nb::module_& m);

namespace {

using bind::CArray;
using bind::OutArray;
using bind::to_numpy;
using bind::to_vec;

/// A context with its evaluator and the evaluation keys registered on it, by key set: every keygen()
/// or set_eval_keys() adds its keys under their key-set identity, and an operation uses the keys of its
/// ciphertext's key set, so a later keygen never changes what earlier ciphertexts' operations mean.
/// Unbound ciphertexts (key_id 0) use the keys registered last; unbound keys serve any ciphertext.
struct ContextCore {
    struct EvalKeys {
        std::shared_ptr<SwitchingKey> relin;
        std::shared_ptr<GaloisKeys> galois;
    };
    std::shared_ptr<Context> ctx;
    Evaluator ev;
    mutable std::mutex mu;
    std::map<std::uint64_t, EvalKeys> keys;
    std::uint64_t latest = 0;

    ContextCore(CkksParams p, int threads, const std::string& device)
        : ctx(std::make_shared<Context>(std::move(p), threads, make_backend(device, threads))), ev(ctx) {}
    explicit ContextCore(std::shared_ptr<Context> c) : ctx(std::move(c)), ev(ctx) {}

    void register_keys(std::shared_ptr<SwitchingKey> relin, std::shared_ptr<GaloisKeys> galois) {
        if (relin && galois && relin->key_id != galois->key_id)
            throw std::invalid_argument("set_eval_keys: the relinearization and Galois keys belong to different key sets");
        if (relin) ctx->check_owned("register keys", *relin, "relinearization key");
        if (galois)
            for (const auto& [k, key] : galois->keys) ctx->check_owned("register keys", key, "Galois key");
        std::lock_guard<std::mutex> l(mu);
        const std::uint64_t id = relin ? relin->key_id : galois ? galois->key_id : latest;
        EvalKeys& e = keys[id];
        if (relin) e.relin = std::move(relin);
        if (galois) e.galois = std::move(galois);
        latest = id;
    }
    // The keys of ct's key set (unbound keys serve any ciphertext; an unbound ciphertext gets the latest).
    const EvalKeys* find(const Ciphertext& ct) const {
        const std::uint64_t id = ct.key_id ? ct.key_id : latest;
        auto it = keys.find(id);
        if (it == keys.end()) it = keys.find(0);
        return it == keys.end() ? nullptr : &it->second;
    }
    // The key `member` of ct's key set, or an error for operation `op` naming what is missing. A ciphertext of
    // another context is refused as such first (its key set's keys, if any, live in that context).
    template <class K>
    std::shared_ptr<K> key_of(const Ciphertext& ct, std::shared_ptr<K> EvalKeys::*member, const char* op, const char* what, const char* hint) const {
        ctx->check_owned(op, ct);
        std::lock_guard<std::mutex> l(mu);
        const EvalKeys* e = find(ct);
        if (!e || !(e->*member)) {
            if (keys.empty()) cannot(op, std::string("no ") + what + "; call " + hint);
            cannot(op, std::string("no ") + what + " of this ciphertext's key set is registered; call set_eval_keys() with the keys of the keygen that encrypted it");
        }
        return e->*member;
    }
    std::shared_ptr<SwitchingKey> rlk(const Ciphertext& ct) const {
        return key_of(ct, &EvalKeys::relin, "multiply", "relinearization key", "keygen() or set_eval_keys()");
    }
    std::shared_ptr<GaloisKeys> gk(const Ciphertext& ct) const { return key_of(ct, &EvalKeys::galois, "rotate", "Galois keys", "keygen(rotations=[...])"); }
};

using Core = std::shared_ptr<ContextCore>;

/// Binds `name`(ctx, data, max_bytes=0): Read (an io/serialize.hpp reader) on any bytes-like object (bytes,
/// bytearray, memoryview, mmap) in place; max_bytes 0 for the default bound. The buffer stays exported (it cannot
/// be resized or freed) while it is parsed without the GIL. kShared: the object is returned in a shared_ptr (keys,
/// which the Python objects share).
template <auto Read, bool kShared>
void def_reader(nb::module_& m, const char* name) {
    m.def(
        name,
        [](const ContextCore& c, nb::handle b, std::size_t mx) {
            bind::BufferView view(b);
            const auto bytes = view.bytes();
            nb::gil_scoped_release r;
            auto x = Read(*c.ctx, bytes, ReadOptions{mx});
            if constexpr (kShared) return std::make_shared<decltype(x)>(std::move(x));
            else return x;
        },
        "ctx"_a, "data"_a, "max_bytes"_a = 0);
}

}  // namespace

NB_MODULE(_ember, m) {
    m.doc() = "Ember core (C++): full-RNS CKKS";
#ifdef EMBER_WITH_CUDA
    ember::cuda::register_cuda_backend();  // make_backend("cuda"); needs no GPU until a context asks for one
#endif
    bind_heaan(m);

    nb::enum_<SecretDist>(m, "SecretDist").value("ternary", SecretDist::Ternary).value("hamming", SecretDist::HammingWeight);

    nb::class_<CkksParams>(m, "ParamsCore")
        .def(nb::init<>())
        .def_rw("log_n", &CkksParams::log_n)
        .def_rw("levels", &CkksParams::levels)
        .def_rw("log_scale", &CkksParams::log_scale)
        .def_rw("first_mod_bits", &CkksParams::first_mod_bits)
        .def_rw("dnum", &CkksParams::dnum)
        .def_rw("special_mod_bits", &CkksParams::special_mod_bits)
        .def_rw("ks_margin_bits", &CkksParams::ks_margin_bits)
        .def_rw("secret", &CkksParams::secret)
        .def_rw("hamming_weight", &CkksParams::hamming_weight)
        .def_rw("sigma", &CkksParams::sigma)
        .def_rw("insecure", &CkksParams::insecure)
        .def_rw("boot_bits", &CkksParams::boot_bits)
        .def_ro("q_primes", &CkksParams::q_primes)
        .def_ro("p_primes", &CkksParams::p_primes)
        .def("finalize", &CkksParams::finalize)
        .def_prop_ro("log_q", &CkksParams::log_q)
        .def_prop_ro("log_qp", &CkksParams::log_qp)
        .def_prop_ro("n", &CkksParams::n)
        .def_prop_ro("slots", &CkksParams::slots)
        .def_prop_ro("alpha", &CkksParams::alpha)
        .def("hash", [](const CkksParams& p) { auto h = p.hash(); return nb::bytes(reinterpret_cast<const char*>(h.data()), h.size()); })
        .def("__repr__", &CkksParams::describe);
    m.def("max_log_qp_128", &max_log_qp_128, "log_n"_a);
    m.def("scale_str", &scale_str, "scale"_a, "A scale as every message prints it: 2^40, or 2^40.0000000002");

    nb::class_<DecryptionFlooding>(m, "DecryptionFloodingCore")
        .def(nb::init<>())
        .def_rw("noise_bits", &DecryptionFlooding::noise_bits)
        .def_rw("statistical_bits", &DecryptionFlooding::statistical_bits)
        .def_rw("queries", &DecryptionFlooding::queries)
        .def("sigma_bits", &DecryptionFlooding::sigma_bits, "n"_a);

    nb::class_<Plaintext>(m, "PlaintextCore")
        .def_prop_ro("level", &Plaintext::level)
        .def_ro("scale", &Plaintext::scale)
        .def_ro("slots", &Plaintext::slots)
        .def_prop_ro("id", [](const Plaintext& p) { return p.id; });
    nb::class_<Ciphertext>(m, "CiphertextCore")
        .def_prop_ro("level", &Ciphertext::level)
        .def_rw("scale", &Ciphertext::scale)
        .def_ro("slots", &Ciphertext::slots)
        .def_ro("key_id", &Ciphertext::key_id)
        .def_prop_ro("id", [](const Ciphertext& c) { return c.id; });
    nb::class_<SecretKey>(m, "SecretKey").def("__repr__", [](const SecretKey&) { return "<ember.SecretKey (hidden)>"; }).def_ro("key_id", &SecretKey::key_id);
    nb::class_<PublicKey>(m, "PublicKey").def_ro("key_id", &PublicKey::key_id);
    nb::class_<SwitchingKey>(m, "SwitchingKey")
        .def_ro("key_id", &SwitchingKey::key_id)
        .def_prop_ro("digits", &SwitchingKey::digits)
        .def_prop_ro("seeded", &SwitchingKey::seeded);
    nb::class_<GaloisKeys>(m, "GaloisKeys")
        .def_ro("key_id", &GaloisKeys::key_id)
        .def_prop_ro("elements", [](const GaloisKeys& g) {
            std::vector<std::uint64_t> v;
            for (auto& [k, _] : g.keys) v.push_back(k);
            return v;
        });

    using RG = nb::call_guard<nb::gil_scoped_release>;
    nb::class_<ContextCore>(m, "ContextCore")
        .def(nb::new_([](CkksParams p, int threads, const std::string& device) { return std::make_shared<ContextCore>(std::move(p), threads, device); }),
             "params"_a, "threads"_a = 1, "device"_a = "")
        .def_prop_ro("device", [](const ContextCore& c) { return std::string(c.ctx->ring()->backend().name()); })
        .def("synchronize", [](const ContextCore& c) {
            nb::gil_scoped_release r;
            c.ctx->ring()->backend().synchronize();
        })
        .def_prop_ro("params", [](const ContextCore& c) { return c.ctx->params(); })
        .def_prop_ro("slots", [](const ContextCore& c) { return c.ctx->slots(); })
        .def_prop_ro("max_level", [](const ContextCore& c) { return c.ctx->max_level(); })
        .def_prop_ro("user_level", [](const ContextCore& c) { return c.ctx->user_level(); })
        .def_prop_ro("threads", [](const ContextCore& c) { return c.ctx->threads(); })
        .def("scale_at", [](const ContextCore& c, std::size_t l) { return c.ctx->scale_at(l); })
        .def("galois_element", [](const ContextCore& c, long r) { return c.ctx->galois_element(r); })
        .def("keygen",
             [](ContextCore& c, std::vector<long> rotations, bool conjugation, bool seeded) {
                 KeySet ks;
                 {
                     nb::gil_scoped_release r;
                     ks = c.ctx->keygen(rotations, conjugation, seeded);
                 }
                 c.register_keys(ks.relin, ks.galois);
                 return std::make_tuple(ks.secret, ks.pub, ks.relin, ks.galois);
             },
             "rotations"_a, "conjugation"_a, "seeded"_a)
        .def("gen_galois_keys", [](ContextCore& c, const SecretKey& sk, std::vector<long> rot, bool conj, bool seeded) {
            nb::gil_scoped_release r;
            return c.ctx->gen_galois_keys(sk, rot, conj, seeded);
        })
        .def("set_eval_keys",
             [](ContextCore& c, std::shared_ptr<SwitchingKey> relin, std::shared_ptr<GaloisKeys> galois) { c.register_keys(std::move(relin), std::move(galois)); },
             "relin"_a.none(), "galois"_a.none())
        .def("encode",
             [](const ContextCore& c, CArray v, double scale, std::size_t level) {
                 auto z = to_vec(v);
                 nb::gil_scoped_release r;
                 return c.ctx->encode(z, scale, level);
             })
        .def("decode", [](const ContextCore& c, const Plaintext& pt) {
            std::vector<cplx> z;
            {
                nb::gil_scoped_release r;
                z = c.ctx->decode(pt);
            }
            return to_numpy(std::move(z));
        })
        .def("encrypt_pk", [](const ContextCore& c, const Plaintext& pt, const PublicKey& pk) { return c.ctx->encrypt(pt, pk); }, RG())
        .def("encrypt_sk", [](const ContextCore& c, const Plaintext& pt, const SecretKey& sk) { return c.ctx->encrypt(pt, sk); }, RG())
        .def("decrypt",
             [](const ContextCore& c, const Ciphertext& ct, const SecretKey& sk, std::optional<DecryptionFlooding> flood) {
                 std::vector<cplx> z;
                 {
                     nb::gil_scoped_release r;
                     z = flood ? c.ctx->decrypt(ct, sk, *flood) : c.ctx->decrypt(ct, sk);
                 }
                 return to_numpy(std::move(z));
             },
             "ct"_a, "sk"_a, "flood"_a.none() = nb::none())
        .def("set_decryption_flooding", [](ContextCore& c, std::optional<DecryptionFlooding> f) { c.ctx->set_decryption_flooding(f); }, "flood"_a.none())
        .def_prop_ro("decryption_flooding", [](const ContextCore& c) { return c.ctx->decryption_flooding(); })
        .def("decryption_noise_bits", [](const ContextCore& c, const Ciphertext& ct, const SecretKey& sk) { return c.ctx->decryption_noise_bits(ct, sk); }, RG())
        .def("add", [](const ContextCore& c, const Ciphertext& a, const Ciphertext& b) { return c.ev.add(a, b); }, RG())
        .def("sub", [](const ContextCore& c, const Ciphertext& a, const Ciphertext& b) { return c.ev.sub(a, b); }, RG())
        .def("negate", [](const ContextCore& c, const Ciphertext& a) { return c.ev.negate(a); }, RG())
        .def("add_plain", [](const ContextCore& c, const Ciphertext& a, const Plaintext& p) { return c.ev.add_plain(a, p); }, RG())
        .def("sub_plain", [](const ContextCore& c, const Ciphertext& a, const Plaintext& p) { return c.ev.sub_plain(a, p); }, RG())
        .def("mul_plain", [](const ContextCore& c, const Ciphertext& a, const Plaintext& p) { return c.ev.mul_plain(a, p); }, RG())
        .def("add_const", [](const ContextCore& c, const Ciphertext& a, cplx k) { return c.ev.add_const(a, k); }, RG())
        .def("mul_const", [](const ContextCore& c, const Ciphertext& a, cplx k) { return c.ev.mul_const(a, k); }, RG())
        .def("add_vector", [](const ContextCore& c, const Ciphertext& a, CArray v) {
            auto z = to_vec(v);
            nb::gil_scoped_release r;
            return c.ev.add_vector(a, z);
        })
        .def("mul_vector", [](const ContextCore& c, const Ciphertext& a, CArray v) {
            auto z = to_vec(v);
            nb::gil_scoped_release r;
            return c.ev.mul_vector(a, z);
        })
        .def("mul", [](const ContextCore& c, const Ciphertext& a, const Ciphertext& b, bool merged) { return c.ev.mul(a, b, *c.rlk(a), merged); },
             "a"_a, "b"_a, "merged"_a = true, RG())
        .def("mul", [](const ContextCore& c, const Ciphertext& a, const Plaintext& p) { return c.ev.mul(a, p); }, "a"_a, "p"_a, RG())
        .def("multiply_relin", [](const ContextCore& c, const Ciphertext& a, const Ciphertext& b) { return c.ev.multiply_relin(a, b, *c.rlk(a)); }, RG())
        .def("mul_sum", [](const ContextCore& c, const std::vector<const Ciphertext*>& a, const std::vector<const Ciphertext*>& b, bool merged,
                           const Ciphertext* addend) {
            if (a.empty() || a.size() != b.size()) throw std::invalid_argument("cannot mul_sum: needs as many left as right operands, at least one");
            std::vector<std::pair<const Ciphertext*, const Ciphertext*>> t;
            for (std::size_t i = 0; i < a.size(); ++i) t.emplace_back(a[i], b[i]);
            return c.ev.mul_sum(t, *c.rlk(*a[0]), merged, addend);
        }, "a"_a, "b"_a, "merged"_a = true, "addend"_a = nb::none(), RG())
        .def("rescale", [](const ContextCore& c, const Ciphertext& a) { return c.ev.rescale(a); }, RG())
        .def("drop_to_level", [](const ContextCore& c, const Ciphertext& a, std::size_t l) { return c.ev.drop_to_level(a, l); }, RG())
        .def("rotate", [](const ContextCore& c, const Ciphertext& a, long k) { return c.ev.rotate(a, k, *c.gk(a)); }, RG())
        .def("conjugate", [](const ContextCore& c, const Ciphertext& a) { return c.ev.conjugate(a, *c.gk(a)); }, RG())
        .def("rotate_many", [](const ContextCore& c, const Ciphertext& a, std::vector<long> k) { return c.ev.rotate_many(a, k, *c.gk(a)); }, RG());

    // Serialization: bytes in and out; every failure on untrusted bytes is a ValueError.
    using bind::as_bytes;
    // Writers: coefficients 0 (Packed), 1 (Words) or 255 (the type's default); version 1 or 2. Ciphertexts and
    // plaintexts are written straight into the bytes object (or a caller's buffer), without the GIL.
    auto wopt = [](int coefficients, int version) {
        if (coefficients != 0 && coefficients != 1 && coefficients != 255) throw std::invalid_argument("coefficients must be 0 (Packed), 1 (Words) or 255 (default)");
        if (version < 0 || version > 0xFFFF) throw std::invalid_argument("format version must be 1 or 2, got " + std::to_string(version));
        return WriteOptions{static_cast<Coefficients>(coefficients), static_cast<std::uint16_t>(version)};
    };
    auto write_bytes = [](const Context& ctx, const auto& x, const WriteOptions& o) {
        const std::size_t n = serialized_size(ctx, x, o);
        nb::bytes out = nb::steal<nb::bytes>(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
        if (!out.is_valid()) throw nb::python_error();
        auto* p = reinterpret_cast<std::uint8_t*>(PyBytes_AsString(out.ptr()));
        nb::gil_scoped_release r;
        to_bytes_into(ctx, x, std::span<std::uint8_t>(p, n), o);
        return out;
    };
    auto write_into = [](const Context& ctx, const auto& x, nb::handle buffer, const WriteOptions& o) {
        bind::BufferView view(buffer, /*writable=*/true);
        const auto out = view.writable();
        nb::gil_scoped_release r;
        to_bytes_into(ctx, x, out, o);
        return out.size();
    };
    auto size_of = [](const Context& ctx, const auto& x, const WriteOptions& o) { return serialized_size(ctx, x, o); };
    m.def("ciphertext_to_bytes", [=](const ContextCore& c, const Ciphertext& x, int k, int v) { return write_bytes(*c.ctx, x, wopt(k, v)); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("plaintext_to_bytes", [=](const ContextCore& c, const Plaintext& x, int k, int v) { return write_bytes(*c.ctx, x, wopt(k, v)); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("ciphertext_serialized_size", [=](const ContextCore& c, const Ciphertext& x, int k, int v) { return size_of(*c.ctx, x, wopt(k, v)); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("plaintext_serialized_size", [=](const ContextCore& c, const Plaintext& x, int k, int v) { return size_of(*c.ctx, x, wopt(k, v)); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("ciphertext_write_into", [=](const ContextCore& c, const Ciphertext& x, nb::handle b, int k, int v) { return write_into(*c.ctx, x, b, wopt(k, v)); },
          "ctx"_a, "x"_a, "buffer"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("plaintext_write_into", [=](const ContextCore& c, const Plaintext& x, nb::handle b, int k, int v) { return write_into(*c.ctx, x, b, wopt(k, v)); },
          "ctx"_a, "x"_a, "buffer"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("public_key_to_bytes", [=](const ContextCore& c, const PublicKey& x, int k, int v) { return as_bytes(to_bytes(*c.ctx, x, wopt(k, v))); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("switching_key_to_bytes", [=](const ContextCore& c, const SwitchingKey& x, int k, int v) { return as_bytes(to_bytes(*c.ctx, x, wopt(k, v))); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("galois_keys_to_bytes", [=](const ContextCore& c, const GaloisKeys& x, int k, int v) { return as_bytes(to_bytes(*c.ctx, x, wopt(k, v))); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("secret_key_to_bytes", [=](const ContextCore& c, const SecretKey& x, int k, int v) { return as_bytes(ember::secret_key_to_bytes(*c.ctx, x, wopt(k, v))); },
          "ctx"_a, "x"_a, "coefficients"_a = 255, "version"_a = 2);
    m.def("checksum64", [](nb::handle b) {
        bind::BufferView view(b);
        const auto s = view.bytes();
        nb::gil_scoped_release r;
        return checksum64(s.data(), s.size());
    });
    // transfer(from, x, to): x in context `to` (io/serialize.hpp's transfer), for every kind of object
    m.def("transfer", [](const ContextCore& f, const Ciphertext& x, const ContextCore& t) { nb::gil_scoped_release r; return transfer(*f.ctx, x, *t.ctx); });
    m.def("transfer", [](const ContextCore& f, const Plaintext& x, const ContextCore& t) { nb::gil_scoped_release r; return transfer(*f.ctx, x, *t.ctx); });
    m.def("transfer", [](const ContextCore& f, const PublicKey& x, const ContextCore& t) {
        nb::gil_scoped_release r;
        return std::make_shared<PublicKey>(transfer(*f.ctx, x, *t.ctx));
    });
    m.def("transfer", [](const ContextCore& f, const SwitchingKey& x, const ContextCore& t) {
        nb::gil_scoped_release r;
        return std::make_shared<SwitchingKey>(transfer(*f.ctx, x, *t.ctx));
    });
    m.def("transfer", [](const ContextCore& f, const GaloisKeys& x, const ContextCore& t) {
        nb::gil_scoped_release r;
        return std::make_shared<GaloisKeys>(transfer(*f.ctx, x, *t.ctx));
    });
    m.def("transfer", [](const ContextCore& f, const SecretKey& x, const ContextCore& t) {
        nb::gil_scoped_release r;
        return std::make_shared<SecretKey>(transfer(*f.ctx, x, *t.ctx));
    });
    m.def("default_device", &default_device);
    // cuda_info(): {"built": this extension has the CUDA backend, "devices": GPUs the driver reports (0 without a
    // GPU or a driver), "description": device 0's name, compute capability, SMs and memory ("" without one)}.
    // Never throws: a failure to describe the device leaves the description empty.
    // cuda_memory(reset_peak): the CUDA backend's pool, {"reserved", "used", "peak"} in bytes (peak: the most in use at
    // once since the last reset); reset_peak starts a new peak after reading. None without the CUDA backend or a GPU.
    m.def("cuda_memory", [](bool reset_peak) -> nb::object {
#ifdef EMBER_WITH_CUDA
        if (ember::cuda::device_count() == 0) return nb::none();
        const ember::cuda::PoolStats s = ember::cuda::pool_stats();
        if (reset_peak) ember::cuda::reset_pool_peak();
        nb::dict d;
        d["reserved"] = s.reserved_bytes;
        d["used"] = s.used_bytes;
        d["peak"] = s.used_high_bytes;
        return d;
#else
        (void)reset_peak;
        return nb::none();
#endif
    }, "reset_peak"_a = false);
    m.def("cuda_info", []() {
        nb::dict d;
#ifdef EMBER_WITH_CUDA
        const int n = ember::cuda::device_count();
        std::string desc;
        if (n > 0) {
            try {
                desc = ember::cuda::device_description();
            } catch (const std::exception&) {
                desc.clear();
            }
        }
        d["built"] = true;
        d["devices"] = n;
        d["description"] = desc;
#else
        d["built"] = false;
        d["devices"] = 0;
        d["description"] = "";
#endif
        return d;
    });
    def_reader<ember::ciphertext_from_bytes, false>(m, "ciphertext_from_bytes");
    def_reader<ember::plaintext_from_bytes, false>(m, "plaintext_from_bytes");
    def_reader<ember::public_key_from_bytes, true>(m, "public_key_from_bytes");
    def_reader<ember::switching_key_from_bytes, true>(m, "switching_key_from_bytes");
    def_reader<ember::galois_keys_from_bytes, true>(m, "galois_keys_from_bytes");
    def_reader<ember::secret_key_from_bytes, true>(m, "secret_key_from_bytes");
    m.def("default_max_bytes", [](const ContextCore& c, const std::string& kind) {
        static const std::pair<const char*, SerialType> kinds[] = {{"ciphertext", SerialType::Ciphertext}, {"plaintext", SerialType::Plaintext},
                                                                   {"public_key", SerialType::PublicKey}, {"switching_key", SerialType::SwitchingKey},
                                                                   {"galois_keys", SerialType::GaloisKeys}, {"secret_key", SerialType::SecretKey}};
        for (const auto& [name, t] : kinds)
            if (kind == name) return default_max_bytes(*c.ctx, t);
        throw std::invalid_argument("default_max_bytes: unknown object kind " + kind);
    });

    bind_circuits(m);
    bind_bootstrap(m);
    bind_graph(m);
    m.def("context_of", [](const ContextCore& c) { return std::const_pointer_cast<Context>(c.ctx); });
    // The evaluation keys of ct's key set (for the circuits).
    m.def("relin_key_of", [](const ContextCore& c, const Ciphertext& ct) { return c.rlk(ct); });
    m.def("galois_keys_of", [](const ContextCore& c, const Ciphertext& ct) { return c.gk(ct); });

    // Symbolic runs (graph capture without keys or arithmetic): a context on the null backend, placeholders.
    m.def("symbolic_context_core", [](CkksParams p) { return std::make_shared<ContextCore>(make_symbolic_context(std::move(p))); });
    m.def("placeholder_ciphertext", [](const ContextCore& c, std::size_t level, double scale, std::size_t slots) {
        return placeholder_ciphertext(*c.ctx, level, scale, slots);
    });
    m.def("placeholder_eval_keys", [](ContextCore& c, std::vector<long> rotations, bool conjugation) {
        auto relin = placeholder_switching_key(*c.ctx);
        auto galois = placeholder_galois_keys(*c.ctx, rotations, conjugation);
        c.register_keys(relin, galois);  // unbound (key_id 0): they serve any placeholder ciphertext
        return std::make_pair(relin, galois);
    });
    nb::class_<Context>(m, "ContextHandle");

    // Tracing.
    m.def("trace_enable", &trace::enable);
    m.def("trace_disable", &trace::disable);
    m.def("trace_reset", &trace::reset);
    m.def("trace_snapshot", [] {
        nb::dict out;
        for (auto& [k, c] : trace::snapshot()) {
            nb::dict d;
            d["calls"] = c.calls; d["mod_mul"] = c.mod_mul; d["mod_add"] = c.mod_add; d["ntt"] = c.ntt;
            d["word_mul"] = c.word_mul; d["adc"] = c.adc;
            d["bytes_read"] = c.bytes_read; d["bytes_written"] = c.bytes_written; d["ns"] = c.ns;
            out[k.c_str()] = d;
        }
        return out;
    });
    m.def("machine_peak", [](int threads, std::size_t copy_mib, std::size_t mul_words, int prime_bits) {
        trace::MachinePeak p;
        {
            nb::gil_scoped_release r;
            p = trace::machine_peak(threads, copy_mib, mul_words, prime_bits);
        }
        nb::dict d;
        d["threads"] = p.threads; d["prime"] = p.prime; d["mul_path"] = p.mul_path; d["mul_words"] = p.mul_words;
        d["mulmod_per_s_thread"] = p.mulmod_per_s_thread; d["mulmod_per_s"] = p.mulmod_per_s;
        d["word_mul_per_s_thread"] = p.word_mul_per_s_thread; d["word_mul_per_s"] = p.word_mul_per_s;
        d["lane_mul_path"] = p.lane_mul_path; d["lane_mul_per_s_thread"] = p.lane_mul_per_s_thread;
        d["lane_mul_per_s"] = p.lane_mul_per_s;
        d["copy_bytes"] = p.copy_bytes; d["copy_bytes_per_s_thread"] = p.copy_bytes_per_s_thread;
        d["copy_bytes_per_s"] = p.copy_bytes_per_s; d["seconds"] = p.seconds;
        return d;
    }, nb::arg("threads") = 1, nb::arg("copy_mib") = 256, nb::arg("mul_words") = 1024, nb::arg("prime_bits") = 50,
       "The machine's measured peaks (trace/peak.hpp): vec_mul modular multiplications per second on L1-resident "
       "operands (two of mul_words words), scalar word multiply-accumulates per second, memcpy bandwidth of a "
       "copy_mib MiB buffer (bytes read + written per second); each on one thread (*_thread) and on `threads`.");

    // Micro-benchmark of one limb transform, timed in C++ (ns per call), for `ember bench ntt`.
    m.def("bench_ntt", [](int log_n, int bits, int runs, bool inverse) {
        const std::size_t n = std::size_t(1) << log_n;
        auto primes = ntt_primes_near(bits, 1, 2 * n, {}, bits != 50);
        NttTables t(n, Modulus(primes[0]));
        // 64-byte aligned like every limb of the library (a std::vector's 16-byte alignment splits each
        // AVX-512 load over two cache lines: ~115 us instead of ~97 us at N = 2^16 on IFMA)
        std::unique_ptr<u64, decltype(&std::free)> buf(static_cast<u64*>(std::aligned_alloc(64, n * sizeof(u64))), &std::free);
        if (!buf) throw std::bad_alloc();
        u64* a = buf.get();
        for (std::size_t i = 0; i < n; ++i) a[i] = (i * 0x9E3779B97F4A7C15ull) % primes[0];
        std::vector<double> ns;
        nb::gil_scoped_release r;
        constexpr int kWarmup = 20;
        for (int i = 0; i < runs + kWarmup; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            if (inverse) ntt_inverse(a, t); else ntt_forward(a, t);
            auto t1 = std::chrono::steady_clock::now();
            if (i >= kWarmup) ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
        }
        return std::make_pair(ns, std::string(ntt_path(t)));
    });
    m.def("cpu_features", [] {
        const auto& f = cpu_features();
        nb::dict d;
        d["name"] = cpu_name();
        d["avx2"] = f.avx2; d["bmi2"] = f.bmi2; d["fma"] = f.fma;
        d["avx512f"] = f.avx512f; d["avx512dq"] = f.avx512dq; d["avx512vl"] = f.avx512vl; d["avx512bw"] = f.avx512bw;
        d["avx512ifma"] = f.avx512ifma; d["neon"] = f.neon;
        d["best"] = simd_path_name(f.best);
        d["path"] = simd_path_name(f.path);
        d["forced"] = f.forced;
        return d;
    }, "The CPU's features, the best kernel path it supports and the path in use (EMBER_SIMD caps it; a bad value "
       "raises RuntimeError naming the choices).");
    m.def("kernel_paths", [](const std::vector<u64>& primes) {
        nb::dict d;
        for (const auto& [family, path] : kernel_paths(primes)) d[family.c_str()] = path;
        return d;
    }, nb::arg("primes"), "The kernel path each family takes for these primes on this CPU.");
}
