// Bindings of graph capture's recording hook (cpp/ckks/op_record.hpp): start, stop -> list of event dicts.
// The graph itself is built in Python (python/ember/graph/).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>

#include "ckks/op_record.hpp"
#include "ckks/symbolic.hpp"
#include "circuits/bootstrap.hpp"

namespace nb = nanobind;
using namespace ember;

namespace {
nb::list values(const std::vector<oprec::ValueRef>& vs) {
    nb::list out;
    for (const auto& v : vs) {
        nb::dict d;
        d["id"] = v.id; d["kind"] = v.plaintext ? "plaintext" : "ciphertext"; d["level"] = v.level;
        d["scale"] = v.scale; d["slots"] = v.slots; d["bytes"] = v.bytes;
        out.append(d);
    }
    return out;
}
}  // namespace

void bind_graph(nb::module_& m) {
    // Bootstrapping keys of a symbolic context: placeholder relinearization and Galois keys, and the
    // encapsulation keys generated (on the null backend: sampling only) under a placeholder secret.
    m.def("placeholder_boot_keys", [](const Bootstrapper& b, std::shared_ptr<Context> ctx, std::shared_ptr<SwitchingKey> relin,
                                      std::shared_ptr<GaloisKeys> galois) {
        BootstrapKeys k;
        k.relin = std::move(relin);
        k.galois = std::move(galois);
        b.gen_encapsulation_keys(*placeholder_secret_key(*ctx), k, /*seeded=*/false);
        return k;
    });
    m.def("oprec_start", &oprec::start);
    m.def("oprec_recording", &oprec::recording);
    m.def("oprec_thread", &oprec::thread_id);  // the calling thread's id in the events' "thread"
    m.def("oprec_stop", [] {
        std::vector<oprec::Event> evs;
        {
            nb::gil_scoped_release r;
            evs = oprec::stop();
        }
        nb::list out;
        for (const auto& e : evs) {
            nb::dict d, c;
            d["op"] = e.op;
            d["in"] = values(e.in);
            d["out"] = values(e.out);
            nb::list args;
            for (const auto& [k, v] : e.args) args.append(nb::make_tuple(k, v));
            d["args"] = args;
            c["calls"] = e.counts.calls; c["mod_mul"] = e.counts.mod_mul; c["mod_add"] = e.counts.mod_add; c["ntt"] = e.counts.ntt;
            c["word_mul"] = e.counts.word_mul; c["adc"] = e.counts.adc;
            c["bytes_read"] = e.counts.bytes_read; c["bytes_written"] = e.counts.bytes_written; c["ns"] = e.counts.ns;
            d["counts"] = c;
            d["ns"] = e.ns;
            d["symbolic"] = e.symbolic;
            d["thread"] = e.thread;
            out.append(d);
        }
        return out;
    });
}
