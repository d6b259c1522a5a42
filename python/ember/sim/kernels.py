"""The *ember* accounting: what Ember's kernels do, kernel call by kernel call (ember.sim's model of the library).

One import point for three modules, split by concept:

* ember.sim.ember_model: the rings, tensors, the limb cache and EmberModel -- every evaluator and key-switching
  path of the library as the backend kernels it calls (its docstring gives the counts);
* ember.sim.lintrans: the linear transform, exact for both paths, and the DFT index sets;
* ember.sim.composite: polynomial evaluation, bootstrapping and run_op() (modelled, not validated).
"""
from ..params import digit_partition  # noqa: F401
from .composite import OPS, bootstrap, lt_spec, poly_eval, run_op  # noqa: F401
from .ember_model import UNTRACED, WORD, Ct, EmberModel, LimbCache, Ring, Tensor, special_primes  # noqa: F401
from .lintrans import (LTPlan, band_indices, choose_n1, dft_indices, lintrans, lintrans_hoisted,  # noqa: F401
                       lintrans_plain, normalize_indices, parse_indices, split_index)

__all__ = ["Ct", "EmberModel", "LTPlan", "LimbCache", "OPS", "Ring", "Tensor", "UNTRACED", "WORD", "band_indices",
           "bootstrap", "choose_n1", "dft_indices", "digit_partition", "lintrans", "lintrans_hoisted", "lintrans_plain",
           "lt_spec", "normalize_indices", "parse_indices", "poly_eval", "run_op", "special_primes", "split_index"]
