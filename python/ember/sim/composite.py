"""Composite operations in the ember accounting, and run_op(): one operation of the paper's list on a model.

The composite operations -- polynomial evaluation, bootstrapping -- are modelled, not validated against the
library. Part of ember.sim.kernels (the facade re-exports it).
"""
from __future__ import annotations

import math
from typing import Optional

from ..params import digit_partition
from .cost import Cost, SimParams, Techniques
from .ember_model import WORD, Ct, EmberModel, Ring, Tensor
from .lintrans import LTPlan, band_indices, dft_indices, lintrans, parse_indices


# ---- composite operations (modelled, not validated against the library: polynomial evaluation, bootstrapping) --

def poly_eval(m: EmberModel, a: Ct, degree: int) -> Ct:
    """Issue the kernels of a Chebyshev evaluation of `degree` on `a` by baby-step giant-step (Bossuat et al.).

    T_1..T_2^l by products, giant steps T_2^l, T_2^(l+1), ... by squarings, leaves as constant combinations of
    the baby steps, then a product per internal node of the giant-step tree. Returns the result's ciphertext.
    """
    levels = int(math.ceil(math.log2(degree + 1)))
    ell = levels // 2
    powers = {1: a}
    for i in range(2, 2 ** ell + 1):
        x, y = powers[i // 2], powers[i - i // 2]
        q = min(x.q, y.q)
        powers[i] = m.mul_ct(_drop(x, q), _drop(y, q))
    giants = [powers[2 ** ell]]
    for _ in range(levels - ell - 1):
        g = giants[-1]
        giants.append(m.mul_ct(g, g))
    low = min(p.q for p in powers.values())
    leaves = []
    for _ in range(2 ** (levels - ell)):
        acc = None
        for i in range(1, 2 ** ell + 1):
            t = m.mul_const_ct(_drop(powers[i], low))
            if acc is None:
                acc = t
            else:
                new = m.add_ct(acc, t)
                m.free_ct(acc, t)
                acc = new
        shifted = m.add_const_ct(acc)
        leaves.append(m.rescale(shifted))
        m.free_ct(acc, shifted)
    for g in giants:
        nxt = []
        for j in range(0, len(leaves), 2):
            lo, hi = leaves[j], leaves[j + 1] if j + 1 < len(leaves) else None
            if hi is None:
                nxt.append(lo)
                continue
            q = min(g.q, hi.q)
            prod = m.mul_ct(_drop(g, q), _drop(hi, q))
            nxt.append(m.add_ct(prod, _drop(lo, prod.q)))
            m.free_ct(prod, lo, hi)
        leaves = nxt
    m.free_ct(*[p for i, p in powers.items() if i > 1], *giants[1:])
    return leaves[0]


def _drop(a: Ct, q: int) -> Ct:
    """Level alignment by dropping limbs: a view, no kernel (the library's drop_to_level copies)."""
    if a.q == q:
        return a
    return Ct(a.c0.view(q), a.c1.view(q))


def bootstrap(m: EmberModel, p: SimParams, hoist: bool = True) -> dict:
    """Issue the kernels of a bootstrapping; return its stages' costs and the output's limbs.

    ModRaise, CoeffToSlot (fft_iters linear transforms, conjugation split), EvalMod (polynomial of
    p.poly_degree and p.double_angle squarings, on the real and imaginary parts), SlotToCoeff.

    The DFTs are the library's: dft_factors(log N, N/2, fft_iters, ...) applied as LinearTransforms over
    N/2 slots with the library's n1, each by lintrans() (its double-hoisted path when `hoist`, else the plain
    one), so this PtMatVecMult is the validated linear-transform model.
    """
    r = m.ring
    stages = {}
    n = r.n
    slots = n // 2

    def mark(name, before):
        stages[name] = m.cost + before * -1

    before = Cost() + m.cost
    src = m.ciphertext(1, "in")
    top = m.ciphertext(r.q_count, "raised")
    for half, dst in ((src.c0, top.c0), (src.c1, top.c1)):
        m.ntt(half, [0], inverse=True)
        for i in range(r.q_count):  # centred lift of q_0 residues into every prime
            m._r(half, 0)
            m._w(dst, i)
        m._count("mod_raise", 0, n * r.q_count, 0, r.q_count, r.q_count)
        m.ntt(dst, range(r.q_count), inverse=False)
    mark("ModRaise", before)

    before = Cost() + m.cost
    x = top
    for idx in dft_indices(slots, p.fft_iters, coeff_to_slot=True):
        nx = lintrans(m, x, idx, slots, hoisted=hoist)
        m.free_ct(x)
        x = nx
    conj = m.rotate(x, "conj")
    re, im = m.add_ct(x, conj), m.add_ct(x, conj, "sub")
    m.free_ct(x, conj)
    mark("CoeffToSlot", before)

    before = Cost() + m.cost
    outs = []
    for part in (re, im):
        y = poly_eval(m, part, p.poly_degree)
        m.free_ct(part)
        for _ in range(p.double_angle):
            sq = m.mul_ct(y, y)
            m.free_ct(y)
            y = m.add_const_ct(sq)
            m.free_ct(sq)
        outs.append(y)
    y = m.add_ct(outs[0], _drop(outs[1], outs[0].q))
    m.free_ct(*outs)
    mark("EvalMod", before)

    before = Cost() + m.cost
    for idx in dft_indices(slots, p.fft_iters, coeff_to_slot=False):
        ny = lintrans(m, y, idx, slots, hoisted=hoist)
        m.free_ct(y)
        y = ny
    mark("SlotToCoeff", before)
    return dict(stages=stages, output_limbs=y.q)


def lt_spec(p: SimParams, diagonals: int = 0, indices=None, slots: int = 0, n1: int = 0) -> LTPlan:
    """Return the linear transform of op LinearTransform as an LTPlan.

    The diagonal indices given (taken mod slots; or a parse_indices() string), else a band of `diagonals`
    diagonals centred on 0, else the first CoeffToSlot factor of the library's DFT with p.fft_iters levels;
    over `slots` slots (default N/2), n1 baby steps (0: the library's choice).
    """
    slots = slots or p.slots
    if slots < 1 or slots & (slots - 1) or slots > p.slots:
        raise ValueError(f"slots must be a power of two in [1, N/2 = {p.slots}], got {slots}")
    if isinstance(indices, str):
        indices = parse_indices(indices, slots, p.fft_iters)
    if indices is not None and len(indices):
        idx = list(indices)
    elif diagonals:
        if diagonals > slots:
            raise ValueError(f"{diagonals} diagonals do not fit in {slots} slots")
        idx = band_indices(diagonals)
    else:
        idx = list(dft_indices(slots, p.fft_iters, coeff_to_slot=True)[0])
    return LTPlan.of(idx, slots, n1)


OPS = ("PtAdd", "Add", "PtMult", "Mult", "Decomp", "ModUp", "KSKInnerProd", "ModDown", "Rescale",
       "Automorph", "Rotate", "Conjugate", "HoistedRotate", "LinearTransform", "PolyEval", "Bootstrap")


def run_op(op: str, p: SimParams, cache_bytes: float = 0, tech: Techniques = Techniques(merge=True, hoist=True),
           rotations: int = 8, diagonals: int = 0, ring: Optional[Ring] = None, indices=None,
           slots: int = 0, n1: int = 0) -> EmberModel:
    """Issue the kernels of one operation on an operand of p.ell limbs and return the model.

    Where Ember's operations differ from the paper's columns: Decomp is the copy of each digit's own limbs
    (Ember fuses it into ModUp), ModUp raises every digit of one polynomial, KSKInnerProd is both dot products,
    ModDown divides one polynomial by P, PtMult includes its Rescale, Automorph permutes both polynomials.
    LinearTransform is the library's (lintrans(); see lt_spec() for its diagonals, slots and n1), hoisted
    (apply()) when tech.hoist, else the plain path.
    """
    ring = ring or Ring.from_sim(p)
    m = EmberModel(ring, cache_limbs=int(cache_bytes // (ring.n * WORD)), key_compression=tech.compress,
                   merge=tech.merge)
    q = p.ell
    a = m.ciphertext(q, "a")
    if op == "PtAdd":
        m.add_plain(a, m.plaintext(q))
    elif op == "Add":
        m.add_ct(a, m.ciphertext(q, "b"))
    elif op == "PtMult":
        m.rescale(m.mul_plain(a, m.plaintext(q)))
    elif op == "Mult":
        m.mul_ct(a, m.ciphertext(q, "b"))
    elif op == "Decomp":
        for first, last in digit_partition(ring.q_count, ring.dnum):
            last = min(last, q)
            if first < last:
                d = m.tmp(q, ring.k, "digit")
                m.copy(d, range(first, last), a.c1, range(first, last))
    elif op == "ModUp":
        m.mod_up_digits(a.c1)
    elif op == "KSKInnerProd":
        used = [1 for first, last in digit_partition(ring.q_count, ring.dnum) if first < min(last, q)]
        m.ksk_inner_product([Tensor(f"digit{j}", q + ring.k, "ct", q) for j in range(len(used))], "relin")
    elif op == "ModDown":
        m.divide_by_dropped(Tensor("u", q + ring.k, "ct", q), 0)
    elif op == "Rescale":
        m.rescale(a)
    elif op == "Automorph":
        r = m.tmp(q), m.tmp(q)
        m.permute(r[0], a.c0)
        m.permute(r[1], a.c1)
    elif op in ("Rotate", "Conjugate"):
        m.rotate(a)
    elif op == "HoistedRotate":
        if tech.hoist:
            m.rotate_many(a, rotations)
        else:
            for i in range(rotations):
                m.rotate(a, f"rot{i}")
    elif op == "LinearTransform":
        lt = lt_spec(p, diagonals, indices, slots, n1)
        out = lintrans(m, a, lt, lt.slots, hoisted=tech.hoist)
        m.extra = dict(lt=lt.as_dict(), output_limbs=out.q)
    elif op == "PolyEval":
        poly_eval(m, a, p.poly_degree)
    elif op == "Bootstrap":
        m.extra = bootstrap(m, p, tech.hoist)
    else:
        raise ValueError(f"unknown operation {op!r}; choose from {', '.join(OPS)}")
    m.finish()
    return m
