"""Kernel counters: `with ember.trace() as t:` then `t.counts` (per kernel) and `t.totals`."""
from __future__ import annotations

from contextlib import contextmanager

from . import _ember


class Trace:
    def __init__(self):
        self.counts: dict[str, dict[str, int]] = {}

    @property
    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.counts.values():
            for k, v in c.items():
                out[k] = out.get(k, 0) + v
        return out

    def __repr__(self) -> str:
        return f"Trace({self.counts})"


@contextmanager
def trace():
    """Counts what every kernel does inside the block (modular mults and adds, NTTs, bytes, time).

    Counters are process-wide: operations run by other threads during the block are counted too.
    """
    t = Trace()
    _ember.trace_reset()
    _ember.trace_enable()
    try:
        yield t
    finally:
        _ember.trace_disable()
        t.counts = _ember.trace_snapshot()
