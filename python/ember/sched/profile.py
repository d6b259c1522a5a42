"""`ember profile`: this machine's cost table, measured. Every operation kind is run `runs` times at every level
asked for, on a Context with `threads` threads, inside a graph capture; the C++ wall time of each node (not the
Python call) is kept and the median goes into the table as device "cpu-<threads>t", marked "measured".
The machine is shared and noisy: medians of several runs, and `runs` >= 5 for figures worth quoting."""
from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

from .costs import COUNTED, CostTable


def _ops(ctx, a, b, pt):
    """(op name as recorded, a function doing it once) for ciphertexts a, b at one level."""
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


def measure(params, threads: int = 1, levels: Optional[Iterable[int]] = None, runs: int = 5,
            progress: bool = True, device: Optional[str] = None) -> CostTable:
    """Measures the operation kinds at each level (default: every level) and returns the cost table."""
    import ember
    from ember.graph import capture
    ctx = ember.Context(params, threads=threads)
    keys = ctx.keygen(rotations=range(1, COUNTED["rotate_many"] + 1))
    levels = list(range(ctx.max_level + 1)) if levels is None else sorted(set(int(x) for x in levels))
    for l in levels:
        if not 0 <= l <= ctx.max_level:
            raise ValueError(f"level {l} outside [0, {ctx.max_level}]")
    name = device or f"cpu-{threads}t"
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
                      f"measured by ember profile: median of {runs} runs, {threads} thread(s), shared VM (noisy)",
                      {"log_n": params.log_n, "levels": ctx.max_level, "threads": threads})
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
