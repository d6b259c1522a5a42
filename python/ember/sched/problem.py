"""A scheduling problem on plain data: tasks with per-device costs, edges with bytes, a bandwidth matrix.

    cost      {task: [seconds on device 0, 1, ...]}   (math.inf where the task cannot run there)
    edges     {(u, v): bytes}                          (v needs u's output)
    bandwidth P x P bytes per second                   (diagonal unused: the same device costs 0)
    latency   P x P seconds (optional, default 0)

Problem validates all of it (clear ValueError / TypeError on anything wrong: cycles, unknown tasks, a task no
device can run, negative or NaN costs, a bandwidth matrix of the wrong shape) and keeps dense, index-based arrays
the schedulers work on: tasks by task index (the order of `cost`), devices by device index (0 .. P - 1).
"""
from __future__ import annotations

import math
import numbers
from typing import Hashable, Mapping, Optional, Sequence


def _matrix(m, p: int, what: str, positive_off_diagonal: bool) -> list[list[float]]:
    try:
        rows = [list(r) for r in m]
    except TypeError:
        raise TypeError(f"{what} must be a {p} x {p} matrix (a list of lists or a numpy array)") from None
    if len(rows) != p or any(len(r) != p for r in rows):
        raise ValueError(f"{what} must be {p} x {p} (one row and column per device), got "
                         f"{len(rows)} x {len(rows[0]) if rows else 0}")
    out = []
    for i, r in enumerate(rows):
        row = []
        for j, x in enumerate(r):
            if isinstance(x, bool) or not isinstance(x, numbers.Real) or math.isnan(x):
                raise ValueError(f"{what}[{i}][{j}] must be a number, got {x!r}")
            x = float(x)
            if i != j:
                if positive_off_diagonal and not x > 0:
                    raise ValueError(f"{what}[{i}][{j}] must be > 0 (devices {i} and {j} need a route), got {x}")
                if x < 0:
                    raise ValueError(f"{what}[{i}][{j}] must be >= 0, got {x}")
            row.append(x)
        out.append(row)
    return out


class Problem:
    """Validated scheduling input.

    Tasks keep the caller's keys (``tasks[i]`` is the key of task index i, in the order of `cost`); the
    schedulers work on task and device indices.

    Parameters
    ----------
    cost : Mapping
        ``{task: [seconds on device 0, 1, ...]}``: a non-empty mapping, rows of one length P (the number of
        devices), entries >= 0 or ``math.inf`` where the task cannot run, at least one finite entry per row.
    edges : Mapping
        ``{(u, v): bytes}``: task v needs the output of task u, a finite number of bytes >= 0.
    bandwidth : sequence of sequence of float
        P x P bytes per second from device index i to device index j, > 0 off the diagonal (the diagonal is
        unused: a transfer on one device costs 0). A list of lists or a numpy array.
    latency : sequence of sequence of float, optional
        P x P seconds added to a transfer from device index i to device index j, >= 0 off the diagonal
        (default 0).
    devices : sequence of str, optional
        One name per device index (default ``dev0``, ``dev1``, ...).

    Attributes
    ----------
    tasks : list
        The task keys, by task index; ``index`` maps a key to its index.
    w : list of list of float
        ``w[i][d]``: seconds of task index i on device index d.
    p : int
        The number of devices, P.
    devices : list of str
        The device names, by device index.
    bw, lat : list of list of float
        The bandwidth (bytes per second) and latency (seconds) matrices.
    succ, pred : list of list of tuple
        Per task index, its ``(successor index, bytes)`` and ``(predecessor index, bytes)`` edges.
    topo : list of int
        The task indices in a topological order.
    mean_bw, mean_lat : float
        The mean bandwidth and latency over distinct device pairs (inf and 0 with one device).

    Raises
    ------
    ValueError
        `cost` empty or not a mapping, a row that is not a list of numbers, a cycle (named), a self-loop, an
        edge that is not a pair or names an unknown task, a task no device can run, a negative or NaN
        cost, rows of different lengths, bytes that are negative or not finite, a matrix of the wrong shape or
        with a bad entry, or a wrong number of device names.
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix.
    """

    def __init__(self, cost: Mapping[Hashable, Sequence[float]], edges: Mapping[tuple, float],
                 bandwidth, latency=None, devices: Optional[Sequence[str]] = None):
        if not isinstance(cost, Mapping) or not cost:
            raise ValueError("cost must be a non-empty mapping {task: [seconds on device 0, 1, ...]}")
        self.tasks = list(cost)
        self.index = {t: i for i, t in enumerate(self.tasks)}
        p = None
        self.w: list[list[float]] = []
        for t in self.tasks:
            row = cost[t]
            try:
                row = [float(x) for x in row]
            except (TypeError, ValueError):
                raise ValueError(f"cost[{t!r}] must be a list of seconds per device, got {cost[t]!r}") from None
            if p is None:
                p = len(row)
                if p == 0:
                    raise ValueError("cost rows must list at least one device")
            if len(row) != p:
                raise ValueError(f"cost[{t!r}] has {len(row)} entries, the first task {p}: one per device")
            for d, x in enumerate(row):
                if math.isnan(x) or x < 0:
                    raise ValueError(f"cost[{t!r}][{d}] = {x}: costs must be >= 0 (math.inf: cannot run there)")
            if all(math.isinf(x) for x in row):
                raise ValueError(f"task {t!r} cannot run on any device (every cost is inf)")
            self.w.append(row)
        self.p = p
        self.devices = list(devices) if devices is not None else [f"dev{i}" for i in range(p)]
        if len(self.devices) != p:
            raise ValueError(f"{len(self.devices)} device names for {p} devices")
        self.bw = _matrix(bandwidth, p, "bandwidth", True)
        self.lat = _matrix(latency, p, "latency", False) if latency is not None else [[0.0] * p for _ in range(p)]
        n = len(self.tasks)
        self.succ: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        self.pred: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        if not isinstance(edges, Mapping):
            raise TypeError("edges must be a mapping {(u, v): bytes}")
        for e, b in edges.items():
            if not isinstance(e, tuple) or len(e) != 2:
                raise ValueError(f"edge {e!r} must be a pair (u, v)")
            u, v = e
            if u not in self.index:
                raise ValueError(f"edge {e!r}: unknown task {u!r} (not in cost)")
            if v not in self.index:
                raise ValueError(f"edge {e!r}: unknown task {v!r} (not in cost)")
            if u == v:
                raise ValueError(f"edge {e!r} is a self-loop (a cycle)")
            if isinstance(b, bool) or not isinstance(b, numbers.Real) or math.isnan(b) or b < 0 or math.isinf(b):
                raise ValueError(f"edge {e!r}: bytes must be a finite number >= 0, got {b!r}")
            iu, iv = self.index[u], self.index[v]
            self.succ[iu].append((iv, float(b)))
            self.pred[iv].append((iu, float(b)))
        self.topo = self._toposort()
        # mean communication rate and latency over distinct device pairs (HEFT's c-bar = L-bar + data / B-bar)
        pairs = [(i, j) for i in range(p) for j in range(p) if i != j]
        self.mean_bw = sum(self.bw[i][j] for i, j in pairs) / len(pairs) if pairs else math.inf
        self.mean_lat = sum(self.lat[i][j] for i, j in pairs) / len(pairs) if pairs else 0.0

    def _toposort(self) -> list[int]:
        n = len(self.tasks)
        indeg = [len(self.pred[i]) for i in range(n)]
        order = [i for i in range(n) if indeg[i] == 0]
        k = 0
        while k < len(order):
            u = order[k]
            k += 1
            for v, _ in self.succ[u]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    order.append(v)
        if len(order) != n:
            left = [i for i in range(n) if indeg[i] > 0]
            cyc = self._find_cycle(set(left))
            raise ValueError("the task graph has a cycle: " + " -> ".join(repr(self.tasks[i]) for i in cyc))
        return order

    def _find_cycle(self, nodes: set) -> list[int]:
        # walk predecessors inside the unsorted remainder until a task repeats
        start = min(nodes)
        seen: dict[int, int] = {}
        path = []
        u = start
        while u not in seen:
            seen[u] = len(path)
            path.append(u)
            u = next(x for x, _ in self.pred[u] if x in nodes)
        cyc = path[seen[u]:][::-1]
        return cyc + [cyc[0]]

    def comm(self, nbytes: float, src: int, dst: int) -> float:
        """Return the seconds to move `nbytes` from device index `src` to device index `dst`.

        Parameters
        ----------
        nbytes : float
            Bytes to move.
        src, dst : int
            The device indices.

        Returns
        -------
        float
            ``lat[src][dst] + nbytes / bw[src][dst]``; 0 when `src` is `dst`.
        """
        if src == dst:
            return 0.0
        return self.lat[src][dst] + nbytes / self.bw[src][dst]

    def mean_comm(self, nbytes: float) -> float:
        """Return the mean seconds to move `nbytes` between two distinct devices (HEFT's c-bar).

        Parameters
        ----------
        nbytes : float
            Bytes to move.

        Returns
        -------
        float
            ``mean_lat + nbytes / mean_bw``; 0 with one device.
        """
        return 0.0 if self.p == 1 else self.mean_lat + nbytes / self.mean_bw

    def mean_cost(self, i: int) -> float:
        """Return the mean cost of a task over the devices that can run it.

        Parameters
        ----------
        i : int
            The task index.

        Returns
        -------
        float
            Seconds: the mean of the task's finite costs.
        """
        fin = [x for x in self.w[i] if not math.isinf(x)]
        return sum(fin) / len(fin)
