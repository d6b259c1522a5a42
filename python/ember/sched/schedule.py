"""Schedule: where and when every task runs, its metrics (SLR, speedup, efficiency, utilisation) and a
validity check; simulate() re-times a placement with other costs (a profile-guided prediction)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable, Optional

from .problem import Problem

_EPS = 1e-9


@dataclass
class Schedule:
    """device[task], start[task], finish[task] (seconds), by the caller's task keys; order: tasks in the order
    they were placed. Metrics follow Topcuoglu et al. 2002: SLR = makespan / sum over the critical path (by
    minimum costs) of the minimum costs; speedup = the best single device's sequential time / makespan;
    efficiency = speedup / devices."""
    algo: str
    problem: Problem = field(repr=False)
    device: dict
    start: dict
    finish: dict
    order: list = field(default_factory=list, repr=False)
    extra: dict = field(default_factory=dict, repr=False)

    @property
    def makespan(self) -> float:
        return max(self.finish.values()) if self.finish else 0.0

    @property
    def devices(self) -> list[str]:
        return self.problem.devices

    def cp_min(self) -> float:
        """Sum of minimum costs along the critical path computed with minimum costs (no transfers)."""
        pr = self.problem
        best = [0.0] * len(pr.tasks)
        for i in pr.topo:
            m = min(pr.w[i])
            best[i] = m + max((best[u] for u, _ in pr.pred[i]), default=0.0)
        return max(best) if best else 0.0

    def sequential(self) -> float:
        """The whole program on the best single device (inf if no device runs every task)."""
        pr = self.problem
        return min(sum(pr.w[i][d] for i in range(len(pr.tasks))) for d in range(pr.p))

    @property
    def slr(self) -> float:
        cp = self.cp_min()
        return self.makespan / cp if cp > 0 else math.nan

    @property
    def speedup(self) -> float:
        return self.sequential() / self.makespan if self.makespan > 0 else math.nan

    @property
    def efficiency(self) -> float:
        return self.speedup / self.problem.p

    def busy(self) -> list[float]:
        b = [0.0] * self.problem.p
        for t, d in self.device.items():
            b[d] += self.finish[t] - self.start[t]
        return b

    def utilisation(self) -> dict[str, float]:
        ms = self.makespan
        return {name: (b / ms if ms > 0 else 0.0) for name, b in zip(self.problem.devices, self.busy())}

    def transfers(self) -> tuple[int, float]:
        """(count, bytes) of the edges whose ends run on different devices."""
        pr, n, nb = self.problem, 0, 0.0
        for u in range(len(pr.tasks)):
            du = self.device[pr.tasks[u]]
            for v, b in pr.succ[u]:
                if self.device[pr.tasks[v]] != du:
                    n, nb = n + 1, nb + b
        return n, nb

    def summary(self) -> dict:
        n, nb = self.transfers()
        return {"algo": self.algo, "makespan_s": self.makespan, "slr": self.slr, "speedup": self.speedup,
                "efficiency": self.efficiency, "sequential_s": self.sequential(), "critical_path_min_s": self.cp_min(),
                "tasks": len(self.problem.tasks), "transfers": n, "transfer_bytes": nb,
                "utilisation": self.utilisation(),
                "tasks_per_device": {name: sum(1 for d in self.device.values() if d == i)
                                     for i, name in enumerate(self.problem.devices)}, **self.extra}

    def validate(self, tol: float = 1e-9) -> None:
        """Raises ValueError unless: every task is placed on a device that can run it, runs exactly its cost,
        starts after each predecessor's finish plus the transfer, and no two tasks overlap on a device."""
        pr = self.problem
        scale = max(1.0, self.makespan)
        slack = tol * scale
        for i, t in enumerate(pr.tasks):
            if t not in self.device:
                raise ValueError(f"task {t!r} is not scheduled")
            d = self.device[t]
            if not 0 <= d < pr.p:
                raise ValueError(f"task {t!r} on unknown device {d}")
            if math.isinf(pr.w[i][d]):
                raise ValueError(f"task {t!r} placed on device {d}, which cannot run it")
            if abs((self.finish[t] - self.start[t]) - pr.w[i][d]) > slack:
                raise ValueError(f"task {t!r} runs {self.finish[t] - self.start[t]} s, its cost on device {d} is {pr.w[i][d]}")
            if self.start[t] < -slack:
                raise ValueError(f"task {t!r} starts before 0")
            for u, b in pr.pred[i]:
                tu = pr.tasks[u]
                ready = self.finish[tu] + pr.comm(b, self.device[tu], d)
                if self.start[t] < ready - slack:
                    raise ValueError(f"task {t!r} starts at {self.start[t]} before its input from {tu!r} arrives at {ready}")
        per: dict[int, list] = {}
        for t, d in self.device.items():
            per.setdefault(d, []).append((self.start[t], self.finish[t], t))
        for d, xs in per.items():
            xs.sort(key=lambda x: (x[0], x[1]))
            for (s0, f0, t0), (s1, f1, t1) in zip(xs, xs[1:]):
                if s1 < f0 - slack:
                    raise ValueError(f"tasks {t0!r} and {t1!r} overlap on device {d} ({s0}-{f0} and {s1}-{f1})")

    def to_dict(self) -> dict:
        return {"summary": self.summary(),
                "tasks": [{"task": t if isinstance(t, (int, str)) else repr(t), "device": self.device[t],
                           "start": self.start[t], "finish": self.finish[t]} for t in self.order]}


def simulate(schedule: Schedule, cost=None) -> Schedule:
    """Re-times a schedule: the same devices and the same per-device order, with `cost` ({task: [seconds per
    device]}, default the schedule's own) -- e.g. measured costs, to predict the makespan of a real run. Each
    task starts when its device has finished the previous task there and its inputs have arrived."""
    pr = schedule.problem
    w = pr.w if cost is None else [[float(x) for x in cost[t]] for t in pr.tasks]
    per: dict[int, list[int]] = {}
    for i in sorted(range(len(pr.tasks)), key=lambda i: schedule.start[pr.tasks[i]]):
        per.setdefault(schedule.device[pr.tasks[i]], []).append(i)
    prev = [-1] * len(pr.tasks)
    for seq in per.values():
        for a, b in zip(seq, seq[1:]):
            prev[b] = a
    # a topological order of the graph plus the device-order edges
    n = len(pr.tasks)
    indeg = [len(pr.pred[i]) + (prev[i] >= 0) for i in range(n)]
    nxt = [-1] * n
    for i in range(n):
        if prev[i] >= 0:
            nxt[prev[i]] = i
    order = [i for i in range(n) if indeg[i] == 0]
    k = 0
    while k < len(order):
        u = order[k]
        k += 1
        for v in [x for x, _ in pr.succ[u]] + ([nxt[u]] if nxt[u] >= 0 else []):
            indeg[v] -= 1
            if indeg[v] == 0:
                order.append(v)
    if len(order) != n:
        raise ValueError("the schedule's device order contradicts the task graph")
    start, finish = [0.0] * n, [0.0] * n
    dev = [schedule.device[t] for t in pr.tasks]
    for i in order:
        s = finish[prev[i]] if prev[i] >= 0 else 0.0
        for u, b in pr.pred[i]:
            s = max(s, finish[u] + pr.comm(b, dev[u], dev[i]))
        start[i], finish[i] = s, s + w[i][dev[i]]
    out = Schedule(schedule.algo + "+simulated", pr if cost is None else _with_costs(pr, w), {t: dev[i] for i, t in enumerate(pr.tasks)},
                   {t: start[i] for i, t in enumerate(pr.tasks)}, {t: finish[i] for i, t in enumerate(pr.tasks)},
                   [pr.tasks[i] for i in order])
    return out


def _with_costs(pr: Problem, w: list[list[float]]) -> Problem:
    import copy
    q = copy.copy(pr)
    q.w = w
    return q
