"""`ember sim calibrate`: this CPU's profile, measured with Ember's own kernels.

And `--measure`: the time the library really takes for an operation, to set against the prediction.

Calibration runs a mix of operations (products merged and plain, a rotation, hoisted rotations, additions,
plaintext products, rescales) under ember.trace() and divides each kernel's work (butterflies, modular
products, modular additions or bytes: timing.KERNEL_WORK) by the time the trace recorded for it, keeping the
best of several runs (the machine may be shared). The compute ceilings come from a small set whose limbs stay
in the core caches (the NTT's from Ember's one-limb transform benchmark with hot tables), the bandwidth
ceiling from the `add` kernel (two limbs in, one out) on a set that does not fit them. Predictions at other
parameter sets then take, kernel by kernel, the larger of work / ceiling and bytes / bandwidth.
"""
from __future__ import annotations

import platform
import statistics
import time
from .cost import SimParams
from .devices import Profile
from .timing import work_of


def _context(p: SimParams, threads: int, rotations=(1,), conjugation: bool = False):
    import numpy as np

    from .. import CkksParams, Context

    params = CkksParams(log_n=p.log_n, levels=p.limbs - 1, log_scale=p.prime_bits, first_mod_bits=p.first_mod_bits,
                        dnum=p.dnum, insecure=True)
    ctx = Context(params, threads=threads)
    keys = ctx.keygen(rotations=list(rotations), conjugation=conjugation)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, ctx.slots)
    return ctx, keys, x


def _kernel_rates(p: SimParams, threads: int, repeats: int, progress=None) -> tuple[dict, dict]:
    """Best rate of every kernel over `repeats` runs of the mix (the least disturbed run on a shared machine)."""
    from .. import trace

    ctx, keys, x = _context(p, threads, rotations=(1, 2, 3, 4))
    a = ctx.encrypt(x, keys.public)
    b = ctx.encrypt(x, keys.public)
    pt = ctx.encode(x)

    def mix():
        ctx.multiply(a, b, merged=True)
        ctx.multiply(a, b, merged=False)
        a.rotate(1)
        a.rotate_many([1, 2, 3, 4])
        for _ in range(4):
            a + b
        a * pt
        a.rescale()

    mix()  # warm the allocator's block cache and the tables
    best: dict[str, float] = {}
    counts: dict[str, dict] = {}
    for i in range(repeats):
        if progress:
            progress(f"log_n = {p.log_n}: run {i + 1}/{repeats}")
        with trace() as t:
            mix()
        for k, c in t.counts.items():
            if c["ns"] > 0:
                best[k] = max(best.get(k, 0.0), work_of(k, c) / (c["ns"] * 1e-9))
                counts[k] = c
    return best, counts


def _ntt_ceilings(log_n: int, threads: int, runs: int) -> dict:
    """Measure the NTT's compute ceiling: Ember's transform on one limb with its tables hot (bench_ntt).

    For a 50-bit prime (the IFMA path where the CPU has it) and a 60-bit one (AVX-512), harmonic mean of the two
    (rescaling primes and special primes are about evenly mixed in key switching), times the threads (the
    backend transforms limbs in parallel).
    """
    from .. import _ember

    out = {}
    butterflies = (1 << log_n) // 2 * log_n
    for inverse, name in ((False, "ntt_forward"), (True, "ntt_inverse")):
        per_path = []
        for bits in (50, 60):
            ns, _ = _ember.bench_ntt(log_n, bits, runs, inverse)
            per_path.append(butterflies / (min(ns) * 1e-9))
        out[name] = threads * len(per_path) / sum(1 / r for r in per_path)
    return out


def calibrate(compute_at: SimParams = SimParams(log_n=13, limbs=7, dnum=2, prime_bits=50),
              stream_at: SimParams = SimParams(log_n=15, limbs=21, dnum=3, prime_bits=50), threads: int = 2,
              repeats: int = 5, progress=None) -> Profile:
    """Measure this CPU's profile with Ember's own kernels.

    Compute ceilings from a set whose limbs stay in the core caches (`compute_at`), the bandwidth ceiling from
    the `add` kernel streaming a set that does not (`stream_at`).

    Parameters
    ----------
    compute_at : SimParams, optional
        The cache-resident parameter set (default log N 13, 7 limbs, dnum 2).
    stream_at : SimParams, optional
        The streaming parameter set (default log N 15, 21 limbs, dnum 3).
    threads : int, optional
        Threads of the measuring Context (default 2).
    repeats : int, optional
        Runs of the operation mix; the best rate of each kernel is kept (default 5).
    progress : callable, optional
        Called with a line of text before each run.

    Returns
    -------
    Profile
        The "cpu" profile, with per-kernel rates and how they were measured.
    """
    rates, counts = _kernel_rates(compute_at, threads, repeats, progress)
    stream, _ = _kernel_rates(stream_at, threads, repeats, progress)
    in_op_ntt = {k: rates[k] for k in ("ntt_forward", "ntt_inverse") if k in rates}
    rates.update(_ntt_ceilings(compute_at.log_n, threads, max(5, repeats)))
    bandwidth = stream["add"] * 24  # add: 16 bytes read and 8 written per modular addition
    mul_kernels = [k for k in ("mul", "mul_add", "dot", "mul_const_add", "sub_mul_const") if k in rates]
    mul_rate = statistics.mean(rates[k] for k in mul_kernels)
    return Profile(name="cpu", mul_per_s=mul_rate, add_per_s=rates["add"], bandwidth=bandwidth,
                   source=f"ember sim calibrate on {platform.node() or 'this machine'} "
                          f"({platform.processor() or platform.machine()}), {time.strftime('%Y-%m-%d')}",
                   kernel_rates={k: round(v, 1) for k, v in sorted(rates.items())}, threads=threads,
                   measured=dict(compute_at=compute_at.as_dict(), stream_at=stream_at.as_dict(), repeats=repeats,
                                 stream_rates={k: round(v, 1) for k, v in sorted(stream.items())},
                                 in_op_ntt_rates={k: round(v, 1) for k, v in in_op_ntt.items()}))


MEASURABLE = ("Mult", "Rotate", "Conjugate", "HoistedRotate", "Add", "PtAdd", "PtMult", "Rescale", "LinearTransform")


def measure(op: str, p: SimParams, threads: int = 2, runs: int = 5, rotations: int = 8,
            merged: bool = True, lt=None, hoisted: bool = True) -> dict:
    """Measure the wall time of the library doing `op` on a ciphertext of p.ell limbs (p.limbs at the top).

    Parameters
    ----------
    op : str
        An operation of MEASURABLE.
    p : SimParams
        The parameter set (a ciphertext at ``p.ell`` limbs).
    threads : int, optional
        Threads of the Context (default 2).
    runs : int, optional
        Timed runs (default 5).
    rotations : int, optional
        Rotations of HoistedRotate (default 8).
    merged : bool, optional
        Mult with ModDown merged into the rescale (default True).
    lt : kernels.LTPlan, optional
        LinearTransform's shape (diagonal indices, slots, n1), applied with random diagonals; required for it.
    hoisted : bool, optional
        LinearTransform by the hoisted path (default True) or the plain one.

    Returns
    -------
    dict
        ``measured_ms`` (median), ``measured_min_ms``, ``kernels_best_ms`` (the sum over kernels of each
        kernel's fastest traced run), ``runs`` and ``threads``.

    Raises
    ------
    ValueError
        If `op` is not measurable, or LinearTransform is asked for without `lt`.
    """
    if op not in MEASURABLE:
        raise ValueError(f"cannot measure {op} with the library yet (no bootstrapping); "
                         f"measurable: {', '.join(MEASURABLE)}")
    if op == "LinearTransform" and lt is None:
        raise ValueError("measuring LinearTransform needs its shape (kernels.lt_spec)")
    rots = (range(1, rotations + 1) if op == "HoistedRotate" else lt.rotations if op == "LinearTransform" else (1,))
    ctx, keys, x = _context(p, threads, rotations=rots, conjugation=op == "Conjugate")
    level = p.ell - 1
    if op == "LinearTransform":
        import numpy as np

        from ..circuits import LinearTransform
        rng = np.random.default_rng(2)
        k_of = {j * lt.n1 + i for j, babies in lt.steps for i in babies}
        tr = LinearTransform(ctx, {k: rng.uniform(-1, 1, lt.slots) for k in sorted(k_of)}, slots=lt.slots,
                             level=level, n1=lt.n1)
        x = x[: lt.slots]
    a = ctx.encrypt(x, keys.public, level=level)
    b = ctx.encrypt(x, keys.public, level=level)
    pt = ctx.encode(x, level=level)
    fn = {
        "LinearTransform": lambda: tr.apply(a, hoisted=hoisted),
        "Mult": lambda: ctx.multiply(a, b, merged=merged),
        "Rotate": lambda: a.rotate(1),
        "Conjugate": lambda: a.conjugate(),
        "HoistedRotate": lambda: a.rotate_many(list(range(1, rotations + 1))),
        "Add": lambda: a + b,
        "PtAdd": lambda: a + pt,
        "PtMult": lambda: a * pt,  # rescaled like every product
        "Rescale": lambda: a.rescale(),
    }[op]
    from .. import trace

    fn()
    ms = []
    best: dict[str, int] = {}
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
        with trace() as t:
            fn()
        for k, c in t.counts.items():
            best[k] = min(best.get(k, c["ns"]), c["ns"])
    # The sum over kernels of each kernel's fastest run: the least disturbed kernel time on a shared machine.
    return dict(measured_ms=round(statistics.median(ms), 4), measured_min_ms=round(min(ms), 4),
                kernels_best_ms=round(sum(best.values()) / 1e6, 4), runs=runs, threads=threads)


