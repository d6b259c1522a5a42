"""Kernel counters: `with ember.trace() as t:` then `t.counts` (per kernel) and `t.totals`."""
from __future__ import annotations

from contextlib import contextmanager

from . import _ember


class Trace:
    """The counters of one ``with ember.trace() as t:`` block.

    Empty inside the block; filled when the block ends.

    Attributes
    ----------
    counts : dict of str to dict of str to int
        Per kernel name, its counters (calls, modular multiplications and additions, NTTs, bytes read and
        written, nanoseconds, ...), as the native trace layer reports them (cpp/trace/trace.hpp).
    """

    def __init__(self):
        self.counts: dict[str, dict[str, int]] = {}

    @property
    def totals(self) -> dict[str, int]:
        """Each counter summed over all kernels (a new dict on every access)."""
        out: dict[str, int] = {}
        for c in self.counts.values():
            for k, v in c.items():
                out[k] = out.get(k, 0) + v
        return out

    def __repr__(self) -> str:
        """Return ``Trace({...})`` with the per-kernel counts."""
        return f"Trace({self.counts})"


@contextmanager
def trace():
    """Count what every kernel does inside the block (modular mults and adds, NTTs, bytes, time).

    The counters are reset and enabled on entry, disabled on exit, and their snapshot is stored in the
    yielded object's ``counts`` when the block ends (also when it raises).

    Counters are process-wide: operations run by other threads during the block are counted too.

    Yields
    ------
    Trace
        The object whose ``counts`` and ``totals`` hold the counters once the block has ended.

    Examples
    --------
    >>> with ember.trace() as t:  # doctest: +SKIP
    ...     y = ct * ct
    >>> t.totals["ntt"]  # doctest: +SKIP
    """
    t = Trace()
    _ember.trace_reset()
    _ember.trace_enable()
    try:
        yield t
    finally:
        _ember.trace_disable()
        t.counts = _ember.trace_snapshot()
