"""Finer tasks for the scheduler: a hoisted baby-step set split into its independent parts.

A `rotate_many_raised` node (the double-hoisted linear transform's baby steps: one decomposition of the input,
ModUp of its digits, then one key-switch inner product per rotation, all in the raised basis) is one node of the
captured graph, often the longest on the critical path. split_hoisted() replaces each such node of at least
`min_count` rotations by

    mod_up_digits          the shared part: Decomp + ModUp of c1, once (output: the raised digits, a value of
                           kind "digits", ceil((level + 1) / alpha) digits of (level + 1 + special primes) limbs)
    rotate_raised_digits   `parts` nodes, each the rotations of a contiguous share of the steps, from the input
                           ciphertext and the digits (outputs: the original node's outputs of those steps)

so the rotations can run on different devices, each part paying the transfer of the digits and the input when
it runs away from the decomposition. Nothing else changes: the other nodes, the values and their ids, the
outputs. Cost tables price the two new kinds from the table's own rotate_many_raised line
(ember.sched.costs: mod_up_digits = cost(1 rotation) - per rotation, rotate_raised_digits = per rotation x
count), so a split node's parts cost exactly what the node cost; the simulator models the same kernels
(ember.sim.graph_model), whose totals over the parts equal the node's. Measured counters and seconds of a live
graph belong to the whole node and are dropped on the parts (the split graph is for scheduling).
"""
from __future__ import annotations

from ..params import digit_partition
from .model import Graph

SPLIT_OPS = ("mod_up_digits", "rotate_raised_digits")


def digit_count(level: int, q_count: int, dnum: int) -> int:
    """Return the digits of a ciphertext at `level` (level + 1 primes) with the key's digit partition.

    The partition: dnum digits of alpha = ceil(q_count / dnum) primes cut from the top of the chain, as
    key_switch.cpp does.

    Parameters
    ----------
    level : int
        The ciphertext's level.
    q_count : int
        The primes of the top level (levels + 1).
    dnum : int
        The key's digits.

    Returns
    -------
    int
        The digits that hold at least one of the ciphertext's primes.
    """
    ql = level + 1
    return sum(1 for first, last in digit_partition(q_count, dnum) if first < min(last, ql))


def split_hoisted(graph: Graph, parts: int = 2, min_count: int = 2) -> Graph:
    """Return a new graph with the hoisted rotation sets split into their independent parts.

    Every rotate_many_raised node of >= min_count rotations is split into one mod_up_digits node and
    min(parts, rotations) rotate_raised_digits nodes (see the module docstring). Needs graph.meta["params"]
    (log_n, levels, special_primes, dnum), which ember.graph captures record.

    Parameters
    ----------
    graph : Graph
        The graph (left unchanged).
    parts : int, optional
        The rotate_raised_digits nodes per split node, at most (default 2; 1: nothing is split).
    min_count : int, optional
        The fewest rotations of a node that is split, >= 2 (default 2).

    Returns
    -------
    Graph
        The new graph; its ``meta["split_hoisted"]`` records parts, min_count and nodes_split.

    Raises
    ------
    ValueError
        `parts` is not an integer >= 1, `min_count` not an integer >= 2, or the graph lacks ``meta["params"]``.
    """
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise ValueError(f"parts must be an integer >= 1, got {parts!r}")
    if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 2:
        raise ValueError(f"min_count must be an integer >= 2, got {min_count!r}")
    p = graph.meta.get("params") or {}
    missing = [k for k in ("log_n", "levels", "special_primes", "dnum") if k not in p]
    if missing:
        raise ValueError(f"split_hoisted needs graph.meta['params'] with {', '.join(missing)} (capture it with "
                         "ember.graph(ctx))")
    n_ring, q_count, k, dnum = 1 << int(p["log_n"]), int(p["levels"]) + 1, int(p["special_primes"]), int(p["dnum"])
    out = Graph(dict(graph.meta))
    for v in graph.values.values():
        out.add_value(v.kind, v.level, v.scale, v.slots, v.bytes, v.id)
    next_vid = max(graph.values, default=-1) + 1
    split = 0
    for nd in graph.nodes:
        rot = len(nd.outputs)
        if nd.op != "rotate_many_raised" or rot < min_count or parts < 2:
            out.add_node(nd.op, nd.inputs, nd.outputs, nd.level, nd.slots, nd.params, nd.counts, nd.seconds)
            continue
        split += 1
        src = nd.inputs[0]
        x = graph.values[src]
        nd_digits = digit_count(nd.level, q_count, dnum)
        dig = out.add_value("digits", nd.level, x.scale, x.slots, nd_digits * (nd.level + 1 + k) * n_ring * 8, next_vid)
        next_vid += 1
        out.add_node("mod_up_digits", [src], [dig], nd.level, nd.slots,
                     {"digits": nd_digits, "split_of": nd.id})
        steps = nd.params.get("steps", [])
        steps = steps if isinstance(steps, list) else [steps]
        m = min(parts, rot)
        for j in range(m):
            a, b = j * rot // m, (j + 1) * rot // m
            prm = {"split_of": nd.id}
            if len(steps) == rot:
                prm["steps"] = steps[a:b]
            out.add_node("rotate_raised_digits", [src, dig], nd.outputs[a:b], nd.level, nd.slots, prm)
    out.outputs = list(graph.outputs)
    out.names = dict(graph.names)
    out.meta["split_hoisted"] = {"parts": parts, "min_count": min_count, "nodes_split": split}
    return out
