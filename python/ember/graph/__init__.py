"""HE programs as graphs: capture, save and load, analyse.

Capture a program's evaluator operations as a data-flow DAG, save and load it as versioned JSON, and analyse it
(op counts, critical path, the edges a scheduler needs).

Live capture -- every public Evaluator operation run inside the block becomes a node, including those inside
C++ circuits (linear transforms, polynomial evaluation, bootstrapping: a bootstrapping is its hundreds of
operations, not one node)::

    import ember
    ctx = ember.Context(ember.CkksParams(log_n=13, levels=6, log_scale=40, insecure=True))
    keys = ctx.keygen(rotations=[1])
    x = ctx.encrypt([0.5] * ctx.slots, keys.public)
    with ember.graph(ctx) as g:          # ctx is optional: it only fills g.meta["params"]
        y = (x * x + x).rotate(1)
        g.input(x, "x"); g.output(y, "y")
    g.op_counts()                        # {'mul': 1, 'add': 1, 'rotate': 1}
    g.critical_path()                    # (seconds, [node ids]) from the measured times
    g.save("prog.json"); h = ember.graph.load("prog.json")

The module is callable: ``ember.graph(ctx=None)`` is ``ember.graph.capture(ctx)``.

Named programs (ember.graph.programs): ``ember.graph.graph_of("helr", log_n=16)`` is the symbolic graph of a
program of the one registry ``ember.graph.PROGRAMS`` (boot, lr-toy, helr, lola-mnist, lola-cifar, resnet20) --
what ``ember schedule NAME`` and ``ember graph NAME`` use; ``capture_program(program, params)`` captures any
``program(ctx, keys)``.

Data model (ember.graph.model)
  Value  id, kind ("ciphertext" | "plaintext" | "digits": split_hoisted's raised digits), level, scale, slots,
         bytes, producer (node id or None for a source: a program input, a fresh encryption, a plaintext
         constant).
  Node   id (0, 1, ... in execution order, which is topological), op, inputs / outputs (value ids), level (the
         lowest level of its ciphertext inputs: the level it works at), slots, params (integer arguments:
         rotate "steps", rotate_many "steps" list, automorphism "galois", drop_to_level / adjust_to /
         linear_combination "level", mul "merged"), counts (kernel counters measured while it ran: calls,
         mod_mul, mod_add, ntt, bytes_read, bytes_written, ns; live only) and seconds (measured wall time; live
         only; None in symbolic graphs).
  Graph  values {id: Value}, nodes [Node], outputs [value id], names {value id: str}, meta (mode "live" |
         "symbolic", params: log_n, levels, user_level, log_scale, dnum, slots, special_primes, threads).
         g.edges() -> {(u, v): bytes} between nodes (what a scheduler transfers), g.successors(),
         g.predecessors(), g.op_counts(), g.total_counts(), g.critical_path(cost=None), g.summary(),
         g.structure() (no measurements: what live and symbolic captures of one program share).

Operation kinds (the Evaluator's public operations, cpp/ckks/evaluator.hpp): add, sub, negate, add_plain,
sub_plain, add_const, add_vector, mul (relinearized and rescaled), mul_sum (a sum of products, relinearized and
rescaled once; inputs a_0, b_0, a_1, b_1, ..., then an optional addend summed before the rescale),
multiply_relin, relinearize, mul_plain, mul_vector, mul_const, mul_int, mul_round, linear_combination, rescale,
drop_to_level, adjust_to, rotate, rotate_many, conjugate, automorphism; the circuits' double hoisting and
bootstrapping also issue key_switch, key_switch_digits, mod_raise, mod_down, mod_down_rescale,
rotate_many_raised and mul_plain_sum, and split_hoisted makes mod_up_digits and rotate_raised_digits. Only the
outermost operation is a node (an add that levels its operands is one "add"); operations that do no work
(rotation by 0, leveling to the same level) are not nodes.

JSON format, version 1 (ember.graph.FORMAT = "ember-graph", VERSION = 1)::

    {"format": "ember-graph", "version": 1,
     "meta":    {"mode": "live", "params": {"log_n": 13, ...}},
     "values":  [{"id": 0, "kind": "ciphertext", "level": 6, "scale": 1099511627776.0, "slots": 4096,
                  "bytes": 917504}, ...],
     "nodes":   [{"id": 0, "op": "mul", "in": [0, 0], "out": [1], "level": 6, "slots": 4096,
                  "params": {"merged": 1}, "counts": {"mod_mul": ..., ...} | null, "seconds": 0.0123 | null}, ...],
     "outputs": [3],
     "names":   {"0": "x", "3": "y"}}

Nodes are numbered 0, 1, ... in a topological order; a value is produced by at most one node, before any node
reads it. ember.graph.load(path) / Graph.load(path) / Graph.from_dict(d) validate all of this (and every type
and sign) and raise ValueError naming the problem; a file from a newer version is refused with a clear message.
"""
from __future__ import annotations

import sys
import types

from .capture import Capture, capture
from .model import COUNT_KEYS, FORMAT, VERSION, Graph, Node, Value, load
from .split import split_hoisted
from .symbolic import SymbolicContext, capture_program
from .programs import PROGRAMS, graph_of

__all__ = ["Capture", "capture", "split_hoisted", "Graph", "Node", "Value", "load", "FORMAT", "VERSION", "COUNT_KEYS",
           "SymbolicContext", "capture_program", "PROGRAMS", "graph_of"]


class _CallableModule(types.ModuleType):
    """The class of the ember.graph module: `ember.graph(ctx)` is `ember.graph.capture(ctx)`.

    The module keeps its attributes.
    """

    def __call__(self, context=None, **kw) -> Capture:
        """Open a capture: ``capture(context, **kw)``.

        Parameters
        ----------
        context : ember.Context, optional
            Its parameters go into the graph's ``meta["params"]``.
        **kw
            The keyword options of :func:`capture` (meta, wait).

        Returns
        -------
        Capture
            The context manager.
        """
        return capture(context, **kw)


sys.modules[__name__].__class__ = _CallableModule
