"""A scheduling problem on plain data: tasks with per-device costs, edges with bytes, a bandwidth matrix.

    cost      {task: [seconds on device 0, 1, ...]}   (math.inf where the task cannot run there)
    edges     {(u, v): bytes}                          (v needs u's output)
    bandwidth P x P bytes per second                   (diagonal unused: the same device costs 0)
    latency   P x P seconds (optional, default 0)

Problem validates all of it (clear ValueError / TypeError on anything wrong: cycles, unknown tasks, a task no
device can run, negative or NaN costs, a bandwidth matrix of the wrong shape) and keeps dense, index-based arrays
the schedulers work on."""
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
    """Validated scheduling input. Tasks keep the caller's keys (`tasks[i]` is the key of index i, in the
    order of `cost`); the schedulers work on indices."""

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
        """Seconds to move nbytes from device src to device dst (0 on the same device)."""
        if src == dst:
            return 0.0
        return self.lat[src][dst] + nbytes / self.bw[src][dst]

    def mean_comm(self, nbytes: float) -> float:
        return 0.0 if self.p == 1 else self.mean_lat + nbytes / self.mean_bw

    def mean_cost(self, i: int) -> float:
        """Mean cost of task i over the devices that can run it."""
        fin = [x for x in self.w[i] if not math.isinf(x)]
        return sum(fin) / len(fin)
