"""One entry point for both accountings: simulate(op, params, ...) -> Result."""
from __future__ import annotations

from typing import Optional

from . import kernels, paper
from .cost import ALPHA, BETA, O1, Machine, Result, SimParams, Techniques
from .devices import Profile
from .timing import predict, throughput

OPS = paper.OPS
ACCOUNTINGS = ("paper", "ember")
# Default techniques: the paper accounting uses the caching techniques that fit (cache 0: Table 4's
# baseline); the ember accounting follows the library (merged ModDown in Mult, hoisted ModUp).
DEFAULT_TECH = {"paper": "caching", "ember": "merge,hoist"}
PRECISION_BITS = 19  # bit precision after bootstrapping assumed in Eq. 3 (001, Table 6)


def canonical_op(op: str) -> str:
    """Return the name in OPS of an operation, matched without case, '-' or '_', or by an alias.

    Parameters
    ----------
    op : str
        A name such as ``"mult"``, ``"hoisted-rotate"``, or an alias (``"mul"``, ``"rot"``, ``"rotate_many"``,
        ``"hoisted"``, ``"boot"``, ``"lt"``, ``"lintrans"``, ``"ptmul"``, ``"conj"``).

    Returns
    -------
    str
        The operation's name in OPS.

    Raises
    ------
    ValueError
        If the operation is unknown.
    """
    for o in OPS:
        if o.lower() == op.lower().replace("-", "").replace("_", ""):
            return o
    aliases = {"mul": "Mult", "rot": "Rotate", "rotate_many": "HoistedRotate", "hoisted": "HoistedRotate",
               "boot": "Bootstrap", "lt": "LinearTransform", "lintrans": "LinearTransform", "ptmul": "PtMult",
               "conj": "Conjugate"}
    if op.lower() in aliases:
        return aliases[op.lower()]
    raise ValueError(f"unknown operation {op!r}; choose from {', '.join(OPS)}")


def simulate(op: str, params: SimParams, accounting: str = "paper", cache_mb: float = 0,
             tech: Optional[Techniques | str] = None, device: Optional[Profile] = None, rotations: int = 8,
             diagonals: int = 0, fft_style: Optional[str] = None, indices=None, slots: int = 0,
             n1: int = 0) -> Result:
    """Simulate one operation in one accounting.

    LinearTransform: `indices` (diagonal indices taken mod `slots`, or a string such as '0..63' or 'cts:1':
    kernels.parse_indices), else a band of `diagonals` diagonals centred on 0, else the first CoeffToSlot factor
    of the library's DFT; `slots` (default N/2) and `n1` (0: the library's choice) shape it. The ember
    accounting models the library's LinearTransform exactly (apply(), double-hoisted, with the hoist technique;
    the plain path without it). The paper accounting sees only the number of diagonals (given, or counted from
    `indices`).

    Parameters
    ----------
    op : str
        The operation: a name of ``OPS`` or an alias (``canonical_op``).
    params : SimParams
        The parameter set.
    accounting : {"paper", "ember"}, optional
        The MAD paper's conventions (default) or Ember's kernels.
    cache_mb : float, optional
        On-chip memory in MiB (default 0: nothing is reused between kernels).
    tech : Techniques or str, optional
        The techniques, or a :meth:`Techniques.parse` string. None (the default): "caching" for the paper
        accounting (those that fit the cache), "merge,hoist" for ember (what the library does).
    device : Profile, optional
        A device to predict the time on: ``time_ms``, ``compute_ms``, ``memory_ms``, ``bound`` and ``device``
        are added to ``extra`` (and, for Bootstrap, ``throughput``: Eq. 3 of 001 in the units of its Table 6).
    rotations : int, optional
        Rotations of HoistedRotate (default 8).
    diagonals : int, optional
        Diagonals of LinearTransform (default 0: see above).
    fft_style : {"bsgs", "bsgs_hoisted", "unrolled_hoisted"}, optional
        The paper accounting's linear-transform algorithm; None (the default): "unrolled_hoisted" with the hoist
        technique, else "bsgs". The ember accounting ignores it.
    indices : sequence of int or str, optional
        Diagonal indices of LinearTransform (see above).
    slots : int, optional
        Slots of LinearTransform, a power of two up to N/2 (default 0: N/2).
    n1 : int, optional
        Baby steps of the ember accounting's LinearTransform (default 0: the library's choice).

    Returns
    -------
    Result
        The operation's cost, with ``extra`` holding what else was found (the techniques requested when they
        differ from those that applied, bootstrapping's fresh limbs and log Q1, the special primes, the linear
        transform's shape, the predicted time).

    Raises
    ------
    ValueError
        If the operation, the accounting, a technique or a shape argument is invalid, or the ember accounting is
        asked for words other than 64 bits.

    Examples
    --------
    >>> from ember.sim import SimParams, simulate
    >>> r = simulate("Mult", SimParams(log_n=17, limbs=35, dnum=3, word_bits=64), accounting="paper", cache_mb=0)
    >>> round(r.cost.ops / 1e9, 4), round(r.cost.dram / 1e9, 4)
    (1.8333, 1.9294)
    """
    op = canonical_op(op)
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {', '.join(ACCOUNTINGS)}, got {accounting!r}")
    if tech is None:
        tech = DEFAULT_TECH[accounting]
    if isinstance(tech, str):
        tech = Techniques.parse(tech)
    machine = Machine.mb(cache_mb)
    extra: dict = {}
    if op == "HoistedRotate":
        extra["rotations"] = rotations
    if accounting == "paper":
        if op == "LinearTransform" and indices is not None and len(indices):
            diagonals = kernels.lt_spec(params, diagonals, indices, slots, n1).diagonals
        m = paper.run_op(op, params, machine, tech, rotations=rotations, diagonals=diagonals, fft_style=fft_style)
        # what applied: the caching techniques the cache holds, and the algorithmic ones asked for
        applied = Techniques(o1=m.level >= O1, beta=m.level >= BETA, alpha=m.level >= ALPHA, reorder=m.reorder,
                             merge=tech.merge, hoist=tech.hoist, compress=tech.compress)
        if applied != tech:
            extra["requested"] = tech.label()
        res = Result(op, accounting, params, machine.cache_bytes, applied, m.cost, m.level_name, m.stages)
        if op == "Bootstrap":
            fresh = params.limbs - 2 * params.fft_iters - paper.eval_mod_limbs(params.poly_degree, params.double_angle)
            extra.update(fresh_limbs=fresh, log_q1=fresh * params.prime_bits, fft_style=m.fft_style)
    else:
        if params.word_bits != 64:
            raise ValueError("the ember accounting stores 64-bit words; use --word-bits 64")
        m = kernels.run_op(op, params, machine.cache_bytes, tech, rotations=rotations, diagonals=diagonals,
                           indices=indices, slots=slots, n1=n1)
        res = Result(op, accounting, params, machine.cache_bytes, tech, m.cost,
                     f"{int(machine.cache_bytes // params.limb_bytes)} limbs (LRU)",
                     m.extra.get("stages", {}), m.counts)
        extra["special_primes"] = m.ring.k
        if op == "Bootstrap":
            out = m.extra["output_limbs"]
            extra.update(fresh_limbs=out - 1, log_q1=(out - 1) * params.prime_bits)
        if op == "LinearTransform":
            extra.update(m.extra["lt"], lt_path="hoisted" if tech.hoist else "plain")
    if device is not None:
        t = predict(res.cost, device, res.kernels if accounting == "ember" else None, params.log_n)
        t.pop("kernel_ms", None)
        extra.update({k: (round(v, 6) if isinstance(v, float) else v) for k, v in t.items()})
        if op == "Bootstrap" and extra.get("log_q1", 0) > 0:
            # Eq. 3 in the units of Table 6 of 001 (bits / s / 1e7)
            extra["throughput"] = round(throughput(params.slots, extra["log_q1"], PRECISION_BITS,
                                                   t["time_ms"] / 1e3) / 1e7, 2)
    res.extra = extra
    return res
