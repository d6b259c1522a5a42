// Bindings of the non-RNS HEAAN scheme (cpp/heaan/): submodule _ember.heaan.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_heaan(nb::module_& m) {
    nb::module_ h = m.def_submodule("heaan", "Non-RNS HEAAN (paper 000)");
    (void)h;
}
