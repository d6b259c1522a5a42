"""Schedule: where and when every task runs, its metrics and a validity check.

The metrics: SLR, speedup, efficiency, utilisation; simulate() re-times a placement with other costs (a
profile-guided prediction).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Hashable, Optional

from ..serial import JsonFile
from .problem import Problem

_EPS = 1e-9

_CALLABLE: dict = {}


def _still_callable(value, name: str):
    """Return `value` as an instance of a subclass of its type that can also be called.

    The type is float, tuple, list or dict; calling the instance returns itself with a DeprecationWarning: the
    metrics that were methods (``s.cp_min()``) are properties now (``s.cp_min``), and the old call keeps
    working for one release.
    """
    base = type(value)
    cls = _CALLABLE.get((base, name))
    if cls is None:
        def __call__(self):
            warnings.warn(f"Schedule.{name}() is deprecated: the metric is a property now, use Schedule.{name} "
                          "without the call", DeprecationWarning, stacklevel=2)
            return self
        cls = _CALLABLE[(base, name)] = type(f"{base.__name__}_metric", (base,), {"__call__": __call__})
    return cls(value)


@dataclass
class Schedule(JsonFile):
    """Where and when every task of a problem runs.

    ``device[task]`` (a device index), ``start[task]`` and ``finish[task]`` (seconds), by the caller's task keys;
    `order`: the tasks in the order they were placed. Metrics follow Topcuoglu et al. 2002: SLR = makespan / sum
    over the critical path (by minimum costs) of the minimum costs; speedup = the best single device's sequential
    time / makespan; efficiency = speedup / devices. Every metric is a property (makespan, slr, speedup,
    efficiency, cp_min, sequential, busy, utilisation, transfers); calling the ones that were methods still works
    for one release, with a DeprecationWarning.

    Parameters
    ----------
    algo : str
        The algorithm that made it ("heft", "peft", "best", "naive"; simulate() appends "+simulated").
    problem : Problem
        The problem it schedules.
    device : dict
        ``{task: device index}``.
    start, finish : dict
        ``{task: seconds}``.
    order : list, optional
        The tasks in the order they were placed (default empty).
    extra : dict, optional
        Facts about how it was made (the variant, the seed, the platform, ...), merged into :meth:`summary`.
    copies : dict, optional
        ``{task: [(device index, start, finish), ...]}``: the extra instances of duplicated tasks (default
        empty).
    """

    JSON_WHAT = "ember schedule"
    algo: str
    problem: Problem = field(repr=False)
    device: dict
    start: dict
    finish: dict
    order: list = field(default_factory=list, repr=False)
    extra: dict = field(default_factory=dict, repr=False)
    copies: dict = field(default_factory=dict, repr=False)  # task -> [(device, start, finish)]: duplicates

    @property
    def makespan(self) -> float:
        """Seconds from 0 to the last finish, copies included (0 for an empty schedule)."""
        ms = max(self.finish.values()) if self.finish else 0.0
        for xs in self.copies.values():
            ms = max([ms] + [f for _, _, f in xs])
        return ms

    def instances(self, t) -> list:
        """Return every execution of a task, the original first, then its copies.

        Parameters
        ----------
        t : hashable
            The task key.

        Returns
        -------
        list of tuple
            ``[(device index, start, finish), ...]`` (seconds).
        """
        return [(self.device[t], self.start[t], self.finish[t])] + list(self.copies.get(t, ()))

    def _arrival(self, u, nbytes: float, d: int) -> tuple[float, int]:
        """Return (when u's output can be on device index d, from which device index).

        The instance of u that delivers first.
        """
        pr = self.problem
        return min((f + pr.comm(nbytes, du, d), du) for du, _, f in self.instances(u))

    @property
    def devices(self) -> list[str]:
        """The device names, by device index (the problem's)."""
        return self.problem.devices

    @property
    def cp_min(self) -> float:
        """Sum of minimum costs along the critical path computed with minimum costs (no transfers)."""
        pr = self.problem
        best = [0.0] * len(pr.tasks)
        for i in pr.topo:
            m = min(pr.w[i])
            best[i] = m + max((best[u] for u, _ in pr.pred[i]), default=0.0)
        return _still_callable(max(best) if best else 0.0, "cp_min")

    @property
    def sequential(self) -> float:
        """The whole program on the best single device (inf if no device runs every task)."""
        pr = self.problem
        return _still_callable(min(sum(pr.w[i][d] for i in range(len(pr.tasks))) for d in range(pr.p)), "sequential")

    @property
    def slr(self) -> float:
        """The schedule length ratio: makespan / cp_min (NaN when cp_min is 0)."""
        cp = self.cp_min
        return self.makespan / cp if cp > 0 else math.nan

    @property
    def speedup(self) -> float:
        """The speedup: sequential / makespan (NaN when the makespan is 0)."""
        return self.sequential / self.makespan if self.makespan > 0 else math.nan

    @property
    def efficiency(self) -> float:
        """The efficiency: speedup / the number of devices."""
        return self.speedup / self.problem.p

    @property
    def busy(self) -> list[float]:
        """Busy seconds per device index (copies included)."""
        b = [0.0] * self.problem.p
        for t, d in self.device.items():
            b[d] += self.finish[t] - self.start[t]
        for xs in self.copies.values():
            for d, s0, f0 in xs:
                b[d] += f0 - s0
        return _still_callable(b, "busy")

    @property
    def utilisation(self) -> dict[str, float]:
        """Busy fraction of the makespan per device name."""
        ms = self.makespan
        return _still_callable({name: (b / ms if ms > 0 else 0.0) for name, b in zip(self.problem.devices, self.busy)},
                               "utilisation")

    @property
    def transfers(self) -> tuple[int, float]:
        """(count, bytes) of the inputs that cross devices.

        For every execution of a task (copies included), each input is taken from the instance of its producer
        that delivers first.
        """
        pr, n, nb = self.problem, 0, 0.0
        T = pr.tasks
        for v in range(len(T)):
            for d, _, _ in self.instances(T[v]):
                for u, b in pr.pred[v]:
                    if self._arrival(T[u], b, d)[1] != d:
                        n, nb = n + 1, nb + b
        return _still_callable((n, nb), "transfers")

    def summary(self) -> dict:
        """Return the schedule's metrics as plain data.

        Returns
        -------
        dict
            algo, makespan_s, slr, speedup, efficiency, sequential_s, critical_path_min_s, tasks, transfers,
            transfer_bytes, utilisation (``{device name: busy fraction}``), tasks_per_device (``{device name:
            count}``, originals only), duplicated_tasks (the number of copies), then the entries of `extra`.
        """
        n, nb = self.transfers
        return {"algo": self.algo, "makespan_s": self.makespan, "slr": self.slr, "speedup": self.speedup,
                "efficiency": self.efficiency, "sequential_s": float(self.sequential), "critical_path_min_s": float(self.cp_min),
                "tasks": len(self.problem.tasks), "transfers": n, "transfer_bytes": nb,
                "utilisation": dict(self.utilisation),
                "tasks_per_device": {name: sum(1 for d in self.device.values() if d == i)
                                     for i, name in enumerate(self.problem.devices)},
                "duplicated_tasks": sum(len(x) for x in self.copies.values()), **self.extra}

    def validate(self, tol: float = 1e-9) -> None:
        """Check the schedule against its problem.

        Every task must be placed on a device index that can run it, run exactly its cost, start at or after 0
        and after each input is on its device (a predecessor's finish plus the transfer, from the original or a
        copy of the predecessor, whichever delivers first), and no two tasks may overlap on a device. Copies
        (duplicated tasks) are checked the same way.

        Parameters
        ----------
        tol : float, optional
            Relative tolerance (default 1e-9): comparisons allow ``tol * max(1, makespan)`` seconds.

        Raises
        ------
        ValueError
            Naming the first violation.
        """
        pr = self.problem
        scale = max(1.0, self.makespan)
        slack = tol * scale
        unknown = [t for t in self.copies if t not in pr.index]
        if unknown:
            raise ValueError(f"copies of unknown task {unknown[0]!r}")
        for i, t in enumerate(pr.tasks):
            if t not in self.device:
                raise ValueError(f"task {t!r} is not scheduled")
            for k, (d, s0, f0) in enumerate(self.instances(t)):
                what = f"task {t!r}" + (f" (copy {k})" if k else "")
                if not 0 <= d < pr.p:
                    raise ValueError(f"{what} on unknown device {d}")
                if math.isinf(pr.w[i][d]):
                    raise ValueError(f"{what} placed on device {d}, which cannot run it")
                if abs((f0 - s0) - pr.w[i][d]) > slack:
                    raise ValueError(f"{what} runs {f0 - s0} s, its cost on device {d} is {pr.w[i][d]}")
                if s0 < -slack:
                    raise ValueError(f"{what} starts before 0")
                for u, b in pr.pred[i]:
                    tu = pr.tasks[u]
                    ready = self._arrival(tu, b, d)[0]
                    if s0 < ready - slack:
                        raise ValueError(f"{what} starts at {s0} on device {d} before its input from {tu!r} "
                                         f"arrives there at {ready}")
        per: dict[int, list] = {}
        for t in self.device:
            for d, s0, f0 in self.instances(t):
                per.setdefault(d, []).append((s0, f0, t))
        for d, xs in per.items():
            xs.sort(key=lambda x: (x[0], x[1]))
            for (s0, f0, t0), (s1, f1, t1) in zip(xs, xs[1:]):
                if s1 < f0 - slack:
                    raise ValueError(f"tasks {t0!r} and {t1!r} overlap on device {d} ({s0}-{f0} and {s1}-{f1})")

    def to_dict(self) -> dict:
        """Return the schedule as plain JSON-able data.

        ``summary`` and ``tasks`` are for reading (task keys that are not int or str appear as their repr);
        ``problem`` (costs, edges, links, devices; task keys with tuples as lists, inf as null) and ``placement``
        (device, start, finish per task of the problem, the placing order, the copies) rebuild it exactly.

        Returns
        -------
        dict
            What :meth:`from_dict` reads back.
        """
        pr = self.problem
        idx = pr.index
        return {"format": SCHEDULE_FORMAT, "version": SCHEDULE_VERSION, "algo": self.algo,
                "problem": {"tasks": [_enc_key(t) for t in pr.tasks], "cost": [[_enc_num(x) for x in row] for row in pr.w],
                            "edges": [[u, v, b] for v in range(len(pr.tasks)) for u, b in pr.pred[v]],
                            "bandwidth": [[_enc_num(x) for x in row] for row in pr.bw], "latency": pr.lat,
                            "devices": list(pr.devices)},
                "placement": {"tasks": [[self.device[t], self.start[t], self.finish[t]] for t in pr.tasks],
                              "order": [idx[t] for t in self.order],
                              "copies": [[idx[t], d, s0, f0] for t, xs in self.copies.items() for d, s0, f0 in xs]},
                "extra": dict(self.extra),
                "summary": {k: (None if isinstance(v, float) and not math.isfinite(v) else v)   # standard JSON
                            for k, v in self.summary().items()},
                "tasks": [{"task": t if isinstance(t, (int, str)) else repr(t), "device": self.device[t],
                           "start": self.start[t], "finish": self.finish[t]} for t in self.order],
                **({"copies": [{"task": t if isinstance(t, (int, str)) else repr(t), "device": d, "start": s0,
                                "finish": f0} for t, xs in self.copies.items() for d, s0, f0 in xs]}
                   if self.copies else {})}

    @classmethod
    def from_dict(cls, d) -> "Schedule":
        """Return the schedule :meth:`to_dict` described (its problem validated again).

        Parameters
        ----------
        d : dict
            A schedule's dictionary.

        Returns
        -------
        Schedule
            The schedule.

        Raises
        ------
        ValueError
            Not a schedule dictionary, or an invalid problem or placement.
        """
        if not isinstance(d, dict) or d.get("format") != SCHEDULE_FORMAT:
            raise ValueError("not an ember schedule (format "
                             f"{d.get('format') if isinstance(d, dict) else None!r})")
        if d.get("version") != SCHEDULE_VERSION:
            raise ValueError(f"ember schedule version {d.get('version')!r} is not {SCHEDULE_VERSION}")
        try:
            p, pl = d["problem"], d["placement"]
            tasks = [_dec_key(t) for t in p["tasks"]]
            if not len(tasks) == len(p["cost"]) == len(pl["tasks"]):
                raise ValueError("tasks, costs and placements differ in number")
            cost = {t: [_dec_num(x) for x in row] for t, row in zip(tasks, p["cost"])}
            edges = {(tasks[u], tasks[v]): b for u, v, b in p["edges"]}
            pr = Problem(cost, edges, [[_dec_num(x) for x in row] for row in p["bandwidth"]], p["latency"],
                         p["devices"])
            place = dict(zip(tasks, pl["tasks"]))
            copies: dict = {}
            for i, dv, s0, f0 in pl["copies"]:
                copies.setdefault(tasks[i], []).append((int(dv), float(s0), float(f0)))
            return cls(str(d["algo"]), pr, {t: int(x[0]) for t, x in place.items()},
                       {t: float(x[1]) for t, x in place.items()}, {t: float(x[2]) for t, x in place.items()},
                       [tasks[i] for i in pl["order"]], dict(d.get("extra") or {}), copies)
        except (KeyError, TypeError, IndexError, ValueError) as e:
            if isinstance(e, ValueError) and str(e).startswith(("cost", "edge", "task", "bandwidth", "latency")):
                raise
            raise ValueError(f"not an ember schedule: {type(e).__name__}: {e}") from None



SCHEDULE_FORMAT, SCHEDULE_VERSION = "ember-schedule", 1


def _enc_key(t):
    return [_enc_key(x) for x in t] if isinstance(t, tuple) else t


def _dec_key(t):
    return tuple(_dec_key(x) for x in t) if isinstance(t, list) else t


def _enc_num(x: float):
    return None if math.isinf(x) else x


def _dec_num(x) -> float:
    return math.inf if x is None else float(x)


def _checked_cost_row(cost, task, p: int, placed: int) -> list:
    """Return ``cost[task]`` as floats, refusing what would re-time the schedule silently wrong.

    Parameters
    ----------
    cost : dict
        ``{task: [seconds per device]}``.
    task : hashable
        The task.
    p : int
        Devices of the problem.
    placed : int
        The device index the schedule placed the task on.

    Returns
    -------
    list of float
        The row.
    """
    if task not in cost:
        raise ValueError(f"cost has no entry for task {task!r}: simulate() needs every task of the schedule")
    try:
        row = [float(x) for x in cost[task]]
    except (TypeError, ValueError):
        raise ValueError(f"cost[{task!r}] must be a list of seconds per device, got {cost[task]!r}") from None
    if len(row) != p:
        raise ValueError(f"cost[{task!r}] has {len(row)} entries for {p} devices")
    for d, x in enumerate(row):
        if math.isnan(x) or x < 0:
            raise ValueError(f"cost[{task!r}][{d}] = {x}: costs must be >= 0")
    if math.isinf(row[placed]):
        raise ValueError(f"cost[{task!r}] is inf on device {placed}, where the schedule placed the task")
    return row


def simulate(schedule: Schedule, cost=None) -> Schedule:
    """Re-time a schedule with other costs.

    The same device indices and the same per-device order (by start time), with `cost` -- e.g. measured costs,
    to predict the makespan of a real run. Each task starts when its device has finished the previous task there
    and its inputs have arrived.

    Parameters
    ----------
    schedule : Schedule
        A schedule without copies (duplicated tasks).
    cost : dict, optional
        ``{task: [seconds on device 0, 1, ...]}`` for every task of the problem, one entry per device, each
        >= 0 (``math.inf``: cannot run there, but not on the device the task is placed on); default the
        schedule's own costs.

    Returns
    -------
    Schedule
        The re-timed schedule (``algo`` the schedule's with "+simulated"); its problem carries `cost`.

    Raises
    ------
    ValueError
        The schedule has copies, its device order contradicts the task graph, or `cost` lacks a task, has a row
        of the wrong length, a negative or NaN entry, or an infinite one on the task's own device.
    """
    pr = schedule.problem
    if schedule.copies:
        raise ValueError("simulate() re-times placements without duplicated tasks; this schedule has copies "
                         "(schedule it again without duplication)")
    w = pr.w if cost is None else [_checked_cost_row(cost, t, pr.p, schedule.device[t]) for t in pr.tasks]
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
