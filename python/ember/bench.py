"""`ember bench OP`: timings of CKKS operations as JSON lines (one object per measurement)."""
from __future__ import annotations

import statistics
import time
from typing import Callable, Optional

import numpy as np

from . import _ember
from .context import Context
from .params import CkksParams

OPS = ("ntt", "intt", "encrypt", "decrypt", "add", "mul", "rotate", "rotate_many", "rotate_sum", "inner_sum", "heaan-mul")  # `boot`: bench_boot.py


def kernel_paths(primes) -> tuple[str, dict]:
    """Return a record's kernel path for these primes, and the path of every kernel family.

    Parameters
    ----------
    primes : iterable of int
        The primes of the parameter set (e.g. its q and p primes).

    Returns
    -------
    path : str
        The record's "path": the NTT's and the element-wise kernels' paths for these primes, joined with '+'
        where they differ, widest first (e.g. "ifma+avx512").
    families : dict
        The path of every kernel family (family name to path).
    """
    fam = dict(_ember.kernel_paths([int(q) for q in primes]))
    order = ("ifma", "avx512", "avx2", "scalar")
    used = {p for k in ("ntt", "elementwise") for p in fam[k].split("+")}
    return "+".join(p for p in order if p in used), fam


def _precision(err: float) -> float:
    """Return -log2 of an error, at most 60 bits."""
    return float(-np.log2(max(err, 2.0 ** -60)))


def _time(fn: Callable[[], object], runs: int, warmup: int = 1, sync: Callable[[], None] = lambda: None) -> list[float]:
    """Call fn `warmup` times, then time `runs` calls, each until sync() returns (a device's queue drained); in ms."""
    for _ in range(warmup):
        fn()
    sync()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def run(op: str, log_n: int = 16, levels: int = 24, dnum: int = 3, threads: int = 2, runs: int = 10,
        log_scale: int = 50, first_mod_bits: int = 60, hoisted: int = 8, prime_bits: int = 49,
        insecure: bool = False, progress=None, log_q: int = 1200, log_p: int = 30, breakdown: bool = False,
        count: int = 256, radix: int = 2, device: Optional[str] = None, special_mod_bits: int = 0,
        ks_margin_bits: Optional[int] = None) -> dict:
    """Time one operation and measure its precision.

    rotate_many: `hoisted` rotations by 1..hoisted; rotate_sum: the sum of x and those rotations (one ModUp, one
    ModDown); inner_sum: ct.inner_sum(1, count, radix). ntt / intt time one transform of one prime (one thread).

    Parameters
    ----------
    op : str
        One of ``OPS`` but "heaan-mul" (timed by ember.heaan.bench_mul).
    log_n : int, optional
        Ring dimension N = 2**log_n. Default 16.
    levels : int, optional
        Levels of the parameter set. Default 24.
    dnum : int, optional
        Key-switching digits. Default 3.
    threads : int, optional
        Threads of the context. Default 2.
    runs : int, optional
        Timed runs, after one warm-up. Default 10.
    log_scale : int, optional
        Bits of the scale. Default 50.
    first_mod_bits : int, optional
        Bits of q_0. Default 60.
    hoisted : int, optional
        Rotations of rotate_many and rotate_sum. Default 8.
    prime_bits : int, optional
        Bits of the prime of ntt / intt. Default 49.
    insecure : bool, optional
        Allow a parameter set above the 128-bit bound. Default False.
    special_mod_bits, ks_margin_bits : int, optional
        The special primes of the parameter set (CkksParams): their bits (0: 60) and the margin of log2(P) over the
        largest digit (None: CkksParams' default). Recorded in the result.
    progress : object, optional
        Unused.
    log_q : int, optional
        heaan-mul's (ember.heaan.bench_mul), which this function does not time: only the default, 1200, is
        accepted.
    log_p : int, optional
        heaan-mul's, as `log_q`: only the default, 30, is accepted.
    breakdown : bool, optional
        heaan-mul's, as `log_q`: only the default, False, is accepted.
    count : int, optional
        inner_sum: slots summed (a power of two). Default 256.
    radix : int, optional
        inner_sum: rotations per round plus one. Default 2.
    device : str, optional
        The device of the Context timed: "cpu", "cpu-guarded" or "cuda" (default: the ``EMBER_DEVICE``
        environment variable, else "cpu"). ntt / intt time a CPU kernel without a Context: "cpu" only.

    Returns
    -------
    dict
        The record: op, log_n, levels, dnum, threads, backend, device, runs, simd, path, kernel_paths, median_ms,
        min_ms, max_ms, precision_bits (-log2 of the largest error), log_qp, special_primes, special_bits and
        ks_margin_bits, plus rotations, or
        count and radix, where they apply. For ntt / intt: op, log_n, threads (1), backend, device ("cpu"), runs,
        simd, path, prime_bits, median_ms, min_ms, max_ms, median_us and precision_bits None (levels and dnum 0).

    Raises
    ------
    ValueError
        For an unknown op or device, "heaan-mul", a value of log_q, log_p or breakdown other than its default
        (they apply to heaan-mul only), ntt / intt on a device other than the CPU, or an invalid parameter set.
    RuntimeError
        When this build or this machine lacks the device (no CUDA backend, no GPU).
    """
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; choose from {', '.join(OPS)}")
    if op == "heaan-mul":  # the non-RNS HEAAN scheme of paper 000: ember.heaan.bench_mul (which uses this module)
        raise ValueError("heaan-mul is timed by ember.heaan.bench_mul (`ember bench heaan-mul`), not ember.bench.run")
    for name, value, default in (("log_q", log_q, 1200), ("log_p", log_p, 30), ("breakdown", breakdown, False)):
        if value != default:  # heaan-mul's: no other op would use it
            raise ValueError(f"{name}={value!r} applies to heaan-mul only, not to {op} (its default is {default!r})")
    rec = dict(op=op, log_n=log_n, levels=levels, dnum=dnum, threads=threads, backend="cpu", device="cpu", runs=runs,
               simd=_ember.cpu_features()["path"])
    if op in ("ntt", "intt"):
        if device not in (None, "", "cpu"):
            raise ValueError(f"{op} times one CPU transform without a context; device {device!r} applies to the "
                             "ciphertext operations only")
        ns, path = _ember.bench_ntt(log_n, prime_bits, runs, op == "intt")
        ms = [x / 1e6 for x in ns]
        rec.update(threads=1, levels=0, dnum=0, prime_bits=prime_bits, path=path)
        rec.update(median_ms=statistics.median(ms), min_ms=min(ms), max_ms=max(ms), precision_bits=None)
        rec["median_us"] = rec["median_ms"] * 1e3
        return rec

    margin = {} if ks_margin_bits is None else dict(ks_margin_bits=ks_margin_bits)
    params = CkksParams(log_n=log_n, levels=levels, log_scale=log_scale, first_mod_bits=first_mod_bits, dnum=dnum,
                        insecure=insecure, special_mod_bits=special_mod_bits, **margin)
    ctx = Context(params, threads=threads, device=device)
    rec["device"] = rec["backend"] = ctx.device
    rec["path"], rec["kernel_paths"] = kernel_paths(list(params.q_primes) + list(params.p_primes))
    rotations = [1] if op == "rotate" else list(range(1, hoisted + 1)) if op in ("rotate_many", "rotate_sum") else []
    if op == "inner_sum":
        from .circuits import inner_sum_rotations
        rotations = inner_sum_rotations(1, count, radix)
    keys = ctx.keygen(rotations=rotations)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, ctx.slots)
    y = rng.uniform(-1, 1, ctx.slots)
    cx = ctx.encrypt(x, keys.public)
    cy = ctx.encrypt(y, keys.public)
    if op == "encrypt":
        fn, check = (lambda: ctx.encrypt(x, keys.public)), (lambda r: r.decrypt(keys.secret).real - x)
    elif op == "decrypt":
        fn, check = (lambda: ctx.decrypt(cx, keys.secret)), (lambda r: r.real - x)
    elif op == "add":
        fn, check = (lambda: cx + cy), (lambda r: r.decrypt(keys.secret).real - (x + y))
    elif op == "mul":
        fn, check = (lambda: cx * cy), (lambda r: r.decrypt(keys.secret).real - x * y)
    elif op == "rotate":
        fn, check = (lambda: cx.rotate(1)), (lambda r: r.decrypt(keys.secret).real - np.roll(x, -1))
    elif op == "rotate_sum":
        fn = lambda: cx.rotate_sum(range(hoisted + 1))  # noqa: E731
        check = lambda r: r.decrypt(keys.secret).real - sum(np.roll(x, -j) for j in range(hoisted + 1))  # noqa: E731
        rec["rotations"] = hoisted
    elif op == "inner_sum":
        fn = lambda: cx.inner_sum(1, count, radix)  # noqa: E731
        check = lambda r: r.decrypt(keys.secret).real - sum(np.roll(x, -j) for j in range(count))  # noqa: E731
        rec.update(count=count, radix=radix)
    else:  # rotate_many
        steps = list(range(1, hoisted + 1))
        fn = lambda: cx.rotate_many(steps)  # noqa: E731
        check = lambda r: np.concatenate([c.decrypt(keys.secret).real - np.roll(x, -s) for c, s in zip(r, steps)])  # noqa: E731
        rec["rotations"] = hoisted
    ms = _time(fn, runs, sync=ctx.synchronize)
    err = float(np.abs(check(fn())).max())
    rec.update(median_ms=statistics.median(ms), min_ms=min(ms), max_ms=max(ms), precision_bits=round(_precision(err), 2),
               log_qp=round(params.log_qp, 1), special_primes=len(params.p_primes),
               special_bits=[int(p).bit_length() for p in params.p_primes], ks_margin_bits=params.ks_margin_bits)
    return rec
