"""The simulator's model of one captured graph node (ember.graph).

The kernels the library's Evaluator runs for that operation at those operand levels, in the ember accounting,
so that summed over a captured graph they equal ember.trace() (kernels the library does not trace -- memcpy,
memset -- are left out of `traced`)::

    counts = node_counts(Ring.from_params(params._core), graph, node)   # {kernel: {calls, mod_mul, ...}}

Mirrors cpp/ckks/evaluator.cpp: operands at different levels are first levelled (adjust_to: restrict to one
level above the lower, multiply by an integer, rescale), then the operation itself. Constants are taken as real
(add_const / mul_const of a complex constant encode a vector instead: not modelled, ValueError from
node_counts only when the caller says so -- the graph does not record the constant).
"""
from __future__ import annotations

from .kernels import Ct, EmberModel, Ring, Tensor, digit_partition

UNTRACED = {"memcpy", "memset", "mod_raise"}
# Operations whose model is not yet checked against measured counters (tests treat a mismatch on these as an
# expected failure). Empty: every operation of a bootstrapping matches its node's counters exactly
# (tests/python/test_sim.py::test_bootstrap_equals_trace); a new public operation starts here.
UNVERIFIED: set[str] = set()


def _levels(graph, node) -> list[int]:
    return [graph.values[v].level for v in node.inputs if graph.values[v].kind == "ciphertext"]


def operand_raised(graph, node) -> bool:
    """Whether the node's first ciphertext operand is over Q_l U P (its bytes hold more than level + 1 limbs)."""
    n = 1 << int(graph.meta.get("params", {}).get("log_n", 0) or 0)
    for v in node.inputs:
        val = graph.values[v]
        if val.kind == "ciphertext":
            return n > 1 and val.bytes > 2 * (val.level + 1) * n * 8
    return False


def _ct(m: EmberModel, q: int, raised: bool, name: str) -> Ct:
    if not raised:
        return m.ciphertext(q, name)
    k = m.ring.k
    return Ct(Tensor(name + ".c0", q + k, "ct", q), Tensor(name + ".c1", q + k, "ct", q))


def _adjust(m: EmberModel, a: Ct, level: int) -> Ct:
    """Evaluator::adjust_to from a.q - 1 down to `level`: restrict to level + 2 limbs, mul_const, rescale."""
    keep = level + 2
    r = Ct(m.tmp(keep, name="adj.c0"), m.tmp(keep, name="adj.c1"))
    if a.q > keep:  # drop_to_level copies the kept limbs (at the same level it is the value itself)
        m.copy(r.c0, range(keep), a.c0, range(keep))
        m.copy(r.c1, range(keep), a.c1, range(keep))
    else:
        m.memcpy(r.c0, a.c0)
        m.memcpy(r.c1, a.c1)
    m.mul_const(r.c0, r.c0, keep)
    m.mul_const(r.c1, r.c1, keep)
    return m.rescale(r)


def _operands(m: EmberModel, levels: list[int]) -> list[Ct]:
    lo = min(levels)
    out = []
    for i, l in enumerate(levels):
        x = m.ciphertext(l + 1, f"in{i}")
        out.append(_adjust(m, x, lo) if l > lo else x)
    return out


def op_model(ring: Ring, op: str, levels: list[int], level: int, params: dict | None = None, outputs: int = 1,
             merged: bool = True, limb_fusion: bool = True, cache_limbs: int = 0, raised: bool = False,
             slots: int = 0) -> EmberModel:
    """Return the finished simulator model of one evaluator operation.

    `levels` of its ciphertext operands, `level` the level it works at, `params` its recorded arguments
    (ember.graph.Node.params), `outputs` (rotate_many), `raised`: the operands are over Q_l U P, `slots`
    (rotate_many_raised: which steps are 0).
    """
    params = params or {}
    m = EmberModel(ring, cache_limbs=cache_limbs, merge=merged, limb_fusion=limb_fusion)
    q = level + 1
    if raised and op in ("add", "sub"):
        a, b = _ct(m, q, True, "a"), _ct(m, q, True, "b")
        m.add(m.tmp(q, ring.k), a.c0, b.c0, op)
        m.add(m.tmp(q, ring.k), a.c1, b.c1, op)
    elif op == "mul_plain_sum":  # one dot2: the plaintexts shared by both parts
        kp = ring.k if raised else 0
        xs = [_ct(m, q, raised, f"x{i}") for i in range(max(1, len(levels)))]
        pts = [m.tmp(q, kp, name=f"pt{i}") for i in range(len(xs))]
        m.dot2(m.tmp(q, kp, name="mps0"), m.tmp(q, kp, name="mps1"), pts, [x.c0 for x in xs], [x.c1 for x in xs])
    elif op == "mod_down":
        a = _ct(m, q, True, "a")
        m.divide_by_dropped(a.c0, 0)
        m.divide_by_dropped(a.c1, 0)
    elif op == "mod_down_rescale":
        a = _ct(m, q, True, "a")
        m.divide_by_dropped(a.c0, 1)
        m.divide_by_dropped(a.c1, 1)
    elif op == "key_switch":
        a = m.ciphertext(q)
        digits = m.mod_up_digits(a.c1)
        u, v = m.ksk_inner_product(digits, "ks")
        uu = m.divide_by_dropped(u, 0)
        m.divide_by_dropped(v, 0)
        m.add(m.tmp(q), a.c0, uu)
    elif op == "key_switch_digits":  # BV switch over q0: c1 to coefficients, its digits, each to NTT form, two mul_adds
        a = m.ciphertext(1)
        t = m.tmp(1, name="ksd.c1")
        m.memcpy(t, a.c1)
        m.ntt(t, [0], inverse=True)
        c0, v = m.tmp(1, name="ksd.c0"), m.tmp(1, name="ksd.v")
        m.memcpy(c0, a.c0)
        ndig = int(params.get("digits", 1))
        digs = [m.tmp(1, name=f"ksd.d{d}") for d in range(ndig)]
        m.signed_digits(digs, t)
        for d, dig in enumerate(digs):
            kb, ka = m.tmp(1, name=f"ksd.b{d}"), m.tmp(1, name=f"ksd.a{d}")
            m.ntt(dig, [0], inverse=False)
            m.mul_add(c0, dig, kb)
            m.mul_add(v, dig, ka)
    elif op == "rotate_many_raised":
        a = m.ciphertext(q)
        steps = params.get("steps", [1] * outputs)
        steps = steps if isinstance(steps, list) else [steps]
        nonzero = [s for s in steps if not slots or s % slots]
        digits = m.mod_up_digits(a.c1) if nonzero else []
        for s in steps:
            if slots and s % slots == 0:
                m.p_mod_up(a.c0)
                m.p_mod_up(a.c1)
            else:
                m.rotate_raised(a.c0, digits, f"rot{s}")
    elif op == "mod_up_digits":  # the shared part of a split rotate_many_raised (ember.graph.split_hoisted)
        a = m.ciphertext(q)
        m.mod_up_digits(a.c1)
    elif op == "rotate_raised_digits":  # its rotations, from digits made elsewhere (read, not recomputed)
        a = m.ciphertext(q)
        steps = params.get("steps", [1] * outputs)
        steps = steps if isinstance(steps, list) else [steps]
        digits = [m.tmp(q, ring.k, name="digit") for first, last in digit_partition(ring.q_count, ring.dnum)
                  if first < min(last, q)]
        for s in steps:
            if slots and s % slots == 0:
                m.p_mod_up(a.c0)
                m.p_mod_up(a.c1)
            else:
                m.rotate_raised(a.c0, digits, f"rot{s}")
    elif op == "mod_raise":
        top = int(params.get("level", level))
        a = m.ciphertext(1)
        for c in (a.c0, a.c1):
            t = m.tmp(1, name="mr.coeff")
            m.memcpy(t, c)
            m.ntt(t, [0], inverse=True)
            r = m.tmp(top + 1, name="mr.out")
            m.copy(r, [0], t, [0])
            m.base_convert(t, [0], r, range(1, top + 1), centered=True)
            m.ntt(r, range(top + 1), inverse=False)
    elif op == "mul_sum":
        xs = _operands(m, levels if len(levels) >= 2 else [level, level])
        # an odd operand count: the last is the addend summed before the rescale
        m.mul_sum_ct(list(zip(xs[0:len(xs) - 1:2], xs[1::2])), merged=bool(params.get("merged", 1)),
                     addend=xs[-1] if len(xs) % 2 else None)
    elif op in ("add", "sub", "mul", "multiply_relin"):
        a, b = _operands(m, levels)
        if op in ("add", "sub"):
            m.add_ct(a, b, op)
        elif op == "mul":
            m.mul_ct(a, b, merged=bool(params.get("merged", 1)))
        else:
            d0, d1, d2 = m.tensor(a, b)
            digits = m.mod_up_digits(d2)
            u, v = m.ksk_inner_product(digits, "relin")
            uu, vv = m.divide_by_dropped(u, 0), m.divide_by_dropped(v, 0)
            m.add(m.tmp(q), d0, uu)
            m.add(m.tmp(q), d1, vv)
    elif op == "negate":
        a = m.ciphertext(q)
        m._elementwise("neg", m.tmp(q), list(range(q)), [(a.c0, list(range(q)))])
        m._elementwise("neg", m.tmp(q), list(range(q)), [(a.c1, list(range(q)))])
    elif op in ("add_plain", "sub_plain"):
        m.add_plain(m.ciphertext(q), m.plaintext(q))
    elif op == "add_const":
        m.add_const_ct(m.ciphertext(q))
    elif op == "mul_plain":
        m.mul_plain(m.ciphertext(q), m.plaintext(q))
    elif op in ("mul_int", "mul_round"):
        m.mul_const_ct(m.ciphertext(q))
    elif op == "mul_const":
        m.rescale(m.mul_const_ct(m.ciphertext(q)))
    elif op == "rescale":
        m.rescale(m.ciphertext(q))
    elif op == "adjust_to":
        _adjust(m, m.ciphertext(q), int(params.get("level", level - 1)))
    elif op == "drop_to_level":
        keep = int(params.get("level", level - 1)) + 1
        a = m.ciphertext(q)
        m.copy(m.tmp(keep), range(keep), a.c0, range(keep))
        m.copy(m.tmp(keep), range(keep), a.c1, range(keep))
    elif op == "linear_combination":
        keep = int(params.get("level", level)) + 1
        out = Ct(m.tmp(keep, name="lc.c0"), m.tmp(keep, name="lc.c1"))
        for i, l in enumerate(levels):
            x = m.ciphertext(l + 1, f"x{i}")
            m.mul_const(out.c0, x.c0, keep, accumulate=True)
            m.mul_const(out.c1, x.c1, keep, accumulate=True)
    elif op in ("rotate", "conjugate", "automorphism"):
        m.rotate(m.ciphertext(q))
    elif op == "rotate_many":
        m.rotate_many(m.ciphertext(q), outputs)
    else:
        raise ValueError(f"no simulator model for graph operation {op!r}")
    m.finish()
    return m


def node_counts(ring: Ring, graph, node, merged: bool = True, limb_fusion: bool = True) -> dict:
    """Per-kernel counts of one captured node (traced kernels only)."""
    m = op_model(ring, node.op, _levels(graph, node), node.level, node.params, len(node.outputs), merged, limb_fusion,
                 raised=operand_raised(graph, node), slots=node.slots)
    return {k: v for k, v in m.counts.items() if k not in UNTRACED}


def graph_counts(ring: Ring, graph, **kw) -> dict:
    """Totals (calls, mod_mul, mod_add, ntt, bytes_read, bytes_written) of the model over every node."""
    tot = {k: 0 for k in ("calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written")}
    for n in graph.nodes:
        for c in node_counts(ring, graph, n, **kw).values():
            for k in tot:
                tot[k] += c[k]
    return tot
