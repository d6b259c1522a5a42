"""Ember's cost simulator: modular operations, DRAM traffic by cache size, time per device, parameter search.

    from ember.sim import SimParams, simulate
    r = simulate("Mult", SimParams(log_n=17, limbs=35, dnum=3, word_bits=64), accounting="paper", cache_mb=0)
    r.cost.ops / 1e9, r.cost.dram / 1e9          # 1.8333 Gops, 1.9293 GB: Table 4 of 001

Two accountings: "ember" issues the kernels Ember's evaluator calls and counts what each reports (equal to
ember.trace() counters); "paper" follows the MAD paper's conventions (001; SimFHE). See cost.py, paper.py,
kernels.py, timing.py, search.py; `ember sim --help` on the command line.
"""
from .cost import ALL, BASELINE, Cost, Machine, Result, SimParams, Techniques  # noqa: F401
from .devices import BUILTIN as DEVICES, Profile  # noqa: F401
from .model import OPS, simulate  # noqa: F401

__all__ = ["Cost", "Machine", "Result", "SimParams", "Techniques", "Profile", "DEVICES", "OPS", "simulate", "ALL",
           "BASELINE"]
