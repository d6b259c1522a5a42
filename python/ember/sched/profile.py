"""`ember profile`: this machine's cost table, measured.

Every operation kind is run `runs` times at every level asked for, on a Context with `threads` threads, inside a
graph capture; the C++ wall time of each node (not the Python call) is kept and the median goes into the table
as the device model "cpu-<threads>t", marked "measured". The machine is shared and noisy: medians of several
runs, and `runs` >= 5 for figures worth quoting. On another device of the Context (`backend`: "cpu-guarded",
"cuda") the model is "<device>-<threads>t" (a CUDA context has one thread: "cuda-1t"). The model's params name
the device ("device") and, for a GPU, which one ("gpu").
"""
from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

from .costs import COUNTED, CostTable


def _ops(ctx, a, b, pt):
    """Yield (op name as recorded, a function doing it once) for ciphertexts a, b at one level."""
    k = COUNTED["rotate_many"]
    yield "add", lambda: a + b
    yield "add_plain", lambda: a + pt
    yield "add_const", lambda: a + 0.5
    yield "mul_int", lambda: a * 3
    yield "mul_plain", lambda: ctx.multiply(a, pt, rescale=False)  # a * pt is mul_plain, then rescale
    yield "rotate", lambda: a.rotate(1)
    yield "rotate_many@1", lambda: a.rotate_many([1])
    yield f"rotate_many@{k}", lambda: a.rotate_many(list(range(1, k + 1)))
    if a.level >= 1:
        yield "mul", lambda: a * b
        yield "mul_sum@1", lambda: ctx.multiply_sum([(a, b)])
        yield f"mul_sum@{COUNTED['mul_sum']}", lambda: ctx.multiply_sum([(a, b)] * COUNTED["mul_sum"])
        yield "mul_const", lambda: a * 0.37
        yield "rescale", lambda: a.rescale()


def _model_and_meta(ctx, params, threads: int, device: Optional[str]) -> tuple[str, dict, str]:
    """Return the device model of a context's figures, the params recorded with them, and the note's device text."""
    meta = {"log_n": params.log_n, "levels": ctx.max_level, "threads": ctx.threads, "device": ctx.device}
    if ctx.device == "cpu":
        return device or f"cpu-{threads}t", meta, ""
    where = f" on {ctx.device}"
    if ctx.device == "cuda":
        from ember import _ember
        meta["gpu"] = _ember.cuda_info()["description"]
        where += f" ({meta['gpu']})"
    return device or f"{ctx.device}-{ctx.threads}t", meta, where


def measure(params, threads: int = 1, levels: Optional[Iterable[int]] = None, runs: int = 5,
            progress: bool = True, device: Optional[str] = None, backend: Optional[str] = None) -> CostTable:
    """Measure the operation kinds at each level and return the cost table.

    Parameters
    ----------
    params : ember.CkksParams
        The parameters to measure at.
    threads : int, optional
        Threads of the Context (default 1).
    levels : iterable of int, optional
        The levels (default: every level, 0 to the context's max_level).
    runs : int, optional
        Runs per operation and level after a warm-up (default 5); the median is kept.
    progress : bool, optional
        Show a progress bar (default True).
    device : str, optional
        The device model to record the figures under (default ``cpu-<threads>t``; on another `backend`,
        ``<backend>-<threads>t``, e.g. ``cuda-1t``).
    backend : str, optional
        The device the Context runs on: "cpu", "cpu-guarded" or "cuda" (default: the ``EMBER_DEVICE``
        environment variable, else "cpu"); recorded in the model's params ("device"; "gpu": the GPU's description).

    Returns
    -------
    CostTable
        The measured table: one device model, marked "measured".

    Raises
    ------
    ValueError
        A level outside [0, max_level], or an unknown `backend`.
    RuntimeError
        When this build or this machine lacks the `backend` device (no CUDA backend, no GPU).
    """
    import ember
    from ember.graph import capture
    ctx = ember.Context(params, threads=threads, device=backend)
    keys = ctx.keygen(rotations=range(1, COUNTED["rotate_many"] + 1))
    levels = list(range(ctx.max_level + 1)) if levels is None else sorted(set(int(x) for x in levels))
    for l in levels:
        if not 0 <= l <= ctx.max_level:
            raise ValueError(f"level {l} outside [0, {ctx.max_level}]")
    name, meta, where = _model_and_meta(ctx, params, threads, device)
    table = CostTable()
    rng = np.random.default_rng(0)
    work = [(l, op, f) for l in levels for op, f in _ops_at(ctx, keys, l, rng)]
    bar = None
    if progress:
        from rich.progress import Progress
        bar = Progress(transient=True)
        task = bar.add_task(f"profiling {name} (N = 2^{params.log_n})", total=len(work))
        bar.start()
    try:
        for l, op, f in work:
            f()  # warm-up
            with capture() as g:
                for _ in range(runs):
                    f()
            secs = [n.seconds for n in g.nodes]
            if not secs:
                raise RuntimeError(f"internal: {op} recorded no node")
            table.set(name, op, l, float(np.median(secs)), "measured",
                      f"measured by ember profile{where}: median of {runs} runs, {threads} thread(s), shared VM (noisy)",
                      meta)
            if bar:
                bar.advance(task)
    finally:
        if bar:
            bar.stop()
    return table


def _ops_at(ctx, keys, level, rng):
    v = rng.uniform(-1, 1, ctx.slots)
    a = ctx.encrypt(v, keys.public, level=level)
    b = ctx.encrypt(v[::-1].copy(), keys.public, level=level)
    pt = ctx.encode(v, level=level)
    return list(_ops(ctx, a, b, pt))


def measure_bootstrapping(params, table: CostTable, threads: int = 2, runs: int = 1, device: Optional[str] = None,
                          progress: bool = True, backend: Optional[str] = None) -> int:
    """Time the operations only circuits issue, from live bootstrappings, and add them to a table.

    The operations: the raised basis of the double-hoisted linear transforms (rotate_many_raised, mul_plain_sum,
    mod_down, mod_down_rescale), ModRaise, the sparse-secret key switches, linear_combination. They are timed as
    nodes of live bootstrappings (`runs` of them after a warm-up, captured by ember.graph: each node's C++ wall
    time) and added to `table` as measured entries of the same device model, for the operation kinds it has no
    entry of (at any level; drop_to_level excluded): the median per level, and for a counted operation
    (rotate_many_raised, mul_plain_sum, linear_combination) the least-squares line seconds = a + b * count per
    level (a, b >= 0: flat at the median if the slope comes out negative, through the origin if the intercept
    does), stored at its reference counts (skipped at a level where the nodes have a single count). Needs
    bootstrappable parameters (CkksParams.bootstrappable).

    Parameters
    ----------
    params : ember.CkksParams
        Bootstrappable parameters.
    table : CostTable
        The table to add to (in place).
    threads : int, optional
        Threads of the Context (default 2).
    runs : int, optional
        Bootstrappings timed after the warm-up (default 1).
    device : str, optional
        The device model to add the entries to (default ``cpu-<threads>t``, or ``<backend>-<threads>t`` as in
        measure()).
    progress : bool, optional
        Show a progress bar (default True).
    backend : str, optional
        The device the Context runs on, as in measure() (default: ``EMBER_DEVICE``, else "cpu").

    Returns
    -------
    int
        How many entries were added.
    """
    import ember
    from ember.graph import capture
    from .costs import node_count
    ctx = ember.Context(params, threads=threads, device=backend)
    name, meta, where = _model_and_meta(ctx, params, threads, device)
    bar = None
    if progress:
        from rich.progress import Progress
        bar = Progress(transient=True)
        task = bar.add_task(f"profiling {name}: keys and {runs + 1} bootstrappings (N = 2^{params.log_n})",
                            total=runs + 2)
        bar.start()
    try:
        keys = ctx.keygen(conjugation=True, bootstrapping=True)
        x = ctx.encrypt(np.zeros(ctx.slots), keys.public, level=0)
        if bar:
            bar.advance(task)
        x.bootstrap()  # warm-up (plaintext caches, page faults)
        if bar:
            bar.advance(task)
        with capture() as g:
            for _ in range(runs):
                x.bootstrap()
                if bar:
                    bar.advance(task)
    finally:
        if bar:
            bar.stop()
    have = table.devices.get(name, {}).get("ops", {})
    known = {op.split("@")[0] for op in have}
    groups: dict = {}
    for n in g.nodes:
        if n.seconds is None or n.op in known or n.op in ("drop_to_level",):
            continue
        groups.setdefault((n.op, n.level), []).append((node_count(n), float(n.seconds)))
    note = (f"measured by ember profile{where}: nodes of {runs} live bootstrapping(s), {threads} thread(s), "
            "shared VM (noisy)")
    added = 0
    for (op, level), xs in sorted(groups.items()):
        if op in COUNTED:
            counts = sorted({c for c, _ in xs})
            if len(counts) < 2:
                continue  # one count: no line to fit (the table keeps its fallback for this op and level)
            m = len(xs)
            mc = sum(c for c, _ in xs) / m
            ms = sum(s for _, s in xs) / m
            b = sum((c - mc) * (s - ms) for c, s in xs) / sum((c - mc) ** 2 for c, _ in xs)
            a = ms - b * mc
            if b < 0:  # noise: no growth with the count -- a flat line at the median
                a, b = float(np.median([s for _, s in xs])), 0.0
            elif a < 0:  # through the origin instead
                a, b = 0.0, sum(c * s for c, s in xs) / sum(c * c for c, _ in xs)
            for ref in (1, COUNTED[op]):
                table.set(name, f"{op}@{ref}", level, max(0.0, a + b * ref), "measured", note, meta)
                added += 1
        else:
            table.set(name, op, level, float(np.median([s for _, s in xs])), "measured", note, meta)
            added += 1
    return added
