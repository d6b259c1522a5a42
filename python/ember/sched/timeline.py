"""What the list schedulers share (algorithms.py, duplication.py).

The tie tolerance, the devices' timelines of idle gaps (insertion-based placement) and the ready queue.
"""
from __future__ import annotations

import heapq
import math
from typing import Optional

import numpy as np

#: Ranks and finish times that differ by less than this, relative, are ties (floating-point sums of equal values).
REL = 1e-9


def quantize(x: float, scale: float) -> float:
    """Round x to the tie tolerance (relative to scale), for priority keys.

    Parameters
    ----------
    x : float
        The value (infinite values are returned as they are).
    scale : float
        The magnitude the tolerance is relative to (<= 0: x is returned as it is).

    Returns
    -------
    float
        x rounded to a multiple of ``REL * scale``.
    """
    if math.isinf(x) or scale <= 0:
        return x
    step = REL * scale
    return round(x / step) * step


class Timeline:
    """One device's idle gaps before its tail (the time it is free for good).

    The gaps are kept in numpy arrays that grow by doubling, so the insertion policy's search -- the first gap
    after `ready` that holds a job of length d -- is a vectorised scan. Gaps shorter than the tie tolerance are
    dropped.
    """

    __slots__ = ("gs", "ge", "n", "tail")

    def __init__(self):
        self.gs = np.empty(16)
        self.ge = np.empty(16)
        self.n = 0
        self.tail = 0.0

    def earliest(self, ready: float, d: float, insertion: bool = True) -> float:
        """Return the earliest start of a job of `d` seconds that can start at `ready`.

        Parameters
        ----------
        ready : float
            When the job's inputs are there (seconds).
        d : float
            The job's length (seconds).
        insertion : bool, optional
            Search the idle gaps (default True): the first gap ending after `ready` that holds the job from
            max(gap start, ready) on (within the tie tolerance), else max(ready, tail); False: max(ready, tail).

        Returns
        -------
        float
            The start (seconds).
        """
        n = self.n
        if insertion and n and ready < self.ge[n - 1]:
            ge = self.ge[:n]
            k = int(np.searchsorted(ge, ready, "right"))
            s = np.maximum(self.gs[k:n], ready)
            ok = (ge[k:] - s) >= d - REL * max(1.0, abs(ready), d)
            j = int(ok.argmax())
            if ok[j]:
                return float(s[j])
        return ready if ready > self.tail else self.tail

    def _insert(self, k: int, a: float, b: float):
        n = self.n
        if n == len(self.gs):
            self.gs = np.concatenate([self.gs, np.empty(n)])
            self.ge = np.concatenate([self.ge, np.empty(n)])
        if k < n:
            self.gs[k + 1:n + 1] = self.gs[k:n]
            self.ge[k + 1:n + 1] = self.ge[k:n]
        self.gs[k], self.ge[k] = a, b
        self.n = n + 1

    def _delete(self, k: int):
        n = self.n
        self.gs[k:n - 1] = self.gs[k + 1:n]
        self.ge[k:n - 1] = self.ge[k + 1:n]
        self.n = n - 1

    def add(self, s: float, f: float):
        """Mark the interval [s, f) busy.

        At or after the tail, it moves the tail (and opens a gap from the old tail to s when s is later); before
        it, the interval must lie inside an idle gap, which splits.

        Parameters
        ----------
        s, f : float
            Start and finish (seconds).

        Raises
        ------
        AssertionError
            The interval lies outside every idle gap (an internal error).
        """
        eps = REL * max(1.0, abs(f))
        if s >= self.tail - eps:
            if s > self.tail + eps:
                self._insert(self.n, self.tail, s)
            self.tail = max(self.tail, f)
            return
        # inside a gap: the gap [a, b) with a <= s and f <= b splits into [a, s) and [f, b)
        k = int(np.searchsorted(self.ge[:self.n], s, "right"))
        if k >= self.n or self.gs[k] > s + eps or f > self.ge[k] + eps:
            raise AssertionError("internal: a job placed outside every idle gap")
        a, b = float(self.gs[k]), float(self.ge[k])
        self._delete(k)
        if b - f > eps:
            self._insert(k, f, b)
        if s - a > eps:
            self._insert(k, a, s)

    def clone(self) -> "Timeline":
        """Return an independent copy (to try a placement without committing it).

        Returns
        -------
        Timeline
            The copy.
        """
        c = Timeline()
        c.gs, c.ge, c.n, c.tail = self.gs.copy(), self.ge.copy(), self.n, self.tail
        return c


def ready_queue(priority: list[float], tiebreak: Optional[list[float]], indegree: list[int]):
    """Return the list schedulers' ready queue: (keys, heap).

    A task's key is its priority (highest first; ties within the tolerance: then its tiebreak, highest first;
    then the lower index); the heap holds ``(key, task index)`` of the tasks with no predecessor.

    Parameters
    ----------
    priority : list of float
        Per task index, its priority.
    tiebreak : list of float or None
        Per task index, the priority among ties; None: none.
    indegree : list of int
        Per task index, its number of predecessors.

    Returns
    -------
    tuple
        (keys by task index, the heap: a list in heap order).
    """
    scale = max((abs(x) for x in priority if not math.isinf(x)), default=1.0)
    if tiebreak is None:
        key = [-quantize(x, scale) for x in priority]
    else:
        tscale = max((abs(x) for x in tiebreak if not math.isinf(x)), default=1.0)
        key = [(-quantize(x, scale), -quantize(y, tscale)) for x, y in zip(priority, tiebreak)]
    heap = [(key[i], i) for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(heap)
    return key, heap
