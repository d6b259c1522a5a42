"""List schedulers: HEFT, PEFT, the best of several list schedules, and the paper's naive baseline.

HEFT is Topcuoglu, Hariri & Wu 2002, PEFT Arabnejad & Barbosa 2014. One calling convention for all four (and
ALGORITHMS[name]): the problem first -- ``(cost, edges, bandwidth[, latency, devices])`` as plain data (see
problem.py) or a Problem -- and each algorithm's own options as keywords only (``insertion=``, ``seed=``,
``perturb=``, ...); each returns a Schedule.

HEFT   priority: upward rank, rank_u(t) = mean cost(t) + max over successors s of (mean transfer(t, s) + rank_u(s));
       mean cost over the devices that can run t, mean transfer = L-bar + bytes / B-bar over distinct device pairs.
       Placement: the device with the earliest finish time, insertion-based (a task may fill an idle gap).
PEFT   priority: rank_oct(t) = mean over devices p of OCT(t, p), the optimistic cost table
       OCT(t, p) = max over successors s of min over devices w of (OCT(s, w) + cost(s, w) + (mean transfer if w != p)).
       Placement: the device minimising EFT(t, p) + OCT(t, p), insertion-based.
best   several list schedules of the same problem, keeping the shortest (ties: the earlier variant): HEFT and
       PEFT themselves, the two priorities (upward rank, OCT rank) crossed with the two placements (EFT,
       EFT + OCT), upward rank with ties broken by the successors' mean work, `perturb` seeded random
       perturbations of both ranks (each task's rank times U(1 - 0.05, 1 + 0.05)), and `refine` rounds that
       re-run the list with the best schedule's start times as the priority (earliest first); then a post-pass
       (`improve` evaluations at most): a task of the critical chain (latest first) moves to another device when
       re-timing the schedule with each device's order kept (the moved task placed by its start time) shortens
       the makespan; repeated while a move helps. Never worse than HEFT or PEFT (both are among the variants).
naive  tasks in a topological order, each on a random device among those idle when its inputs are ready (else the
       ones that free up first), all inputs transferred from where they were made, no insertion.

Ties: between tasks, the lower index (the order of `cost`); between devices, the lower device index. Ranks and
finish times that differ by less than 1e-9 relative are ties (floating-point sums of equal values). A schedule's
``device[task]`` is a device index (0 .. P - 1).
"""
from __future__ import annotations

import heapq
import math
import random
from typing import Optional

from .problem import Problem
from .schedule import Schedule
from .timeline import REL, Timeline, ready_queue


def upward_rank(pr: Problem) -> list[float]:
    """Return HEFT's upward rank of every task.

    rank_u(t) = mean cost(t) + max over successors s of (mean transfer(t, s) + rank_u(s)), with the mean cost over
    the device indices that can run t (:meth:`Problem.mean_cost`) and the mean transfer over distinct device pairs
    (:meth:`Problem.mean_comm`); 0 is the maximum for a task without successors.

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    list of float
        The rank of each task, by task index (seconds).
    """
    n = len(pr.tasks)
    rank = [0.0] * n
    for i in reversed(pr.topo):
        m = 0.0
        for s, b in pr.succ[i]:
            m = max(m, pr.mean_comm(b) + rank[s])
        rank[i] = pr.mean_cost(i) + m
    return rank


def optimistic_cost_table(pr: Problem) -> list[list[float]]:
    """Return PEFT's optimistic cost table.

    OCT(t, p) = max over successors s of min over device indices w of (OCT(s, w) + cost(s, w) + (the mean
    transfer of the edge's bytes if w != p)); 0 for a task without successors.

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    list of list of float
        ``oct[i][p]``: the optimistic cost in seconds of task index i on device index p.
    """
    n, P = len(pr.tasks), pr.p
    oct_ = [[0.0] * P for _ in range(n)]
    for i in reversed(pr.topo):
        row = [0.0] * P
        for s, b in pr.succ[i]:
            c = pr.mean_comm(b)
            base = [oct_[s][w] + pr.w[s][w] for w in range(P)]
            best_any = min(base[w] + c for w in range(P))
            for p in range(P):
                # staying on p saves the transfer
                v = min(best_any, base[p])
                if v > row[p]:
                    row[p] = v
        oct_[i] = row
    return oct_


def _list_schedule(pr: Problem, algo: str, priority: list[float], lookahead: Optional[list[list[float]]],
                   insertion: bool = True, tiebreak: Optional[list[float]] = None) -> Schedule:
    """List-schedule the tasks of `pr` by priority.

    Tasks become ready when their predecessors are placed; the ready task of highest `priority` (then of
    highest `tiebreak`, then the lower index) goes to the device index minimising its finish time (plus
    lookahead[task][device] when given).
    """
    n, P = len(pr.tasks), pr.p
    indeg = [len(pr.pred[i]) for i in range(n)]
    key, heap = ready_queue(priority, tiebreak, indeg)
    lines = [Timeline() for _ in range(P)]
    dev = [-1] * n
    start = [0.0] * n
    finish = [0.0] * n
    order = []
    while heap:
        _, i = heapq.heappop(heap)
        best = None
        wi = pr.w[i]
        preds = pr.pred[i]
        for p in range(P):
            c = wi[p]
            if math.isinf(c):
                continue
            ready = 0.0
            for u, b in preds:
                du = dev[u]
                r = finish[u] if du == p else finish[u] + pr.lat[du][p] + b / pr.bw[du][p]
                if r > ready:
                    ready = r
            s = lines[p].earliest(ready, c, insertion)
            f = s + c
            obj = f + lookahead[i][p] if lookahead is not None else f
            if best is None or obj < best[0] - REL * max(1.0, abs(obj)):
                best = (obj, p, s, f)
        _, p, s, f = best
        dev[i], start[i], finish[i] = p, s, f
        lines[p].add(s, f)
        order.append(i)
        for v, _ in pr.succ[i]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (key[v], v))
    T = pr.tasks
    return Schedule(algo, pr, {T[i]: dev[i] for i in range(n)}, {T[i]: start[i] for i in range(n)},
                    {T[i]: finish[i] for i in range(n)}, [T[i] for i in order])


def _problem(cost, edges, bandwidth, latency, devices) -> Problem:
    if isinstance(cost, Problem):
        return cost
    return Problem(cost, edges if edges is not None else {}, bandwidth, latency, devices)


def heft(cost, edges=None, bandwidth=None, latency=None, devices=None, *, insertion: bool = True) -> Schedule:
    """Schedule a problem with HEFT (Topcuoglu et al. 2002).

    Tasks by decreasing upward rank with mean costs (:func:`upward_rank`), each on the device index where it
    finishes first, insertion-based. Called as ``heft(cost, edges, bandwidth)`` on plain data (see
    :mod:`ember.sched`) or ``heft(problem)``.

    Parameters
    ----------
    cost : dict or Problem
        ``{task: [seconds on device 0, 1, ...]}``: one entry per device index, ``math.inf`` where the task cannot
        run there; or a ``Problem``, and then `edges`, `bandwidth`, `latency` and `devices` are ignored.
    edges : dict, optional
        ``{(u, v): bytes}``: task v needs the output of task u (default: no edges).
    bandwidth : sequence of sequence of float
        P x P bytes per second from device index i to device index j (the diagonal is unused); required with
        plain data.
    latency : sequence of sequence of float, optional
        P x P seconds added to every transfer between two device indices (default 0).
    devices : sequence of str, optional
        One name per device index (default ``dev0``, ``dev1``, ...).
    insertion : bool, optional
        Let a task fill an idle gap between tasks already placed (default True); False: after the device's
        last task.

    Returns
    -------
    Schedule
        The schedule (``algo`` "heft").

    Raises
    ------
    ValueError
        Invalid problem data (see ``Problem``): a cycle, an unknown task, a task no device can run, a
        negative cost, a wrong-shaped matrix.
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix (`bandwidth` missing).
    """
    pr = _problem(cost, edges, bandwidth, latency, devices)
    rank = upward_rank(pr)
    return _list_schedule(pr, "heft", rank, None, insertion)


def peft(cost, edges=None, bandwidth=None, latency=None, devices=None, *, insertion: bool = True) -> Schedule:
    """Schedule a problem with PEFT (Arabnejad & Barbosa 2014).

    Tasks by decreasing rank_oct, the mean of their row of the optimistic cost table
    (:func:`optimistic_cost_table`), each on the device index minimising its earliest finish time plus its OCT,
    insertion-based.

    Parameters
    ----------
    cost : dict or Problem
        ``{task: [seconds on device 0, 1, ...]}``: one entry per device index, ``math.inf`` where the task cannot
        run there; or a ``Problem``, and then `edges`, `bandwidth`, `latency` and `devices` are ignored.
    edges : dict, optional
        ``{(u, v): bytes}``: task v needs the output of task u (default: no edges).
    bandwidth : sequence of sequence of float
        P x P bytes per second from device index i to device index j (the diagonal is unused); required with
        plain data.
    latency : sequence of sequence of float, optional
        P x P seconds added to every transfer between two device indices (default 0).
    devices : sequence of str, optional
        One name per device index (default ``dev0``, ``dev1``, ...).
    insertion : bool, optional
        Let a task fill an idle gap between tasks already placed (default True); False: after the device's
        last task.

    Returns
    -------
    Schedule
        The schedule (``algo`` "peft").

    Raises
    ------
    ValueError
        Invalid problem data (see ``Problem``): a cycle, an unknown task, a task no device can run, a
        negative cost, a wrong-shaped matrix.
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix (`bandwidth` missing).
    """
    pr = _problem(cost, edges, bandwidth, latency, devices)
    oct_ = optimistic_cost_table(pr)
    rank = [sum(r) / len(r) for r in oct_]
    return _list_schedule(pr, "peft", rank, oct_, insertion)


def best(cost, edges=None, bandwidth=None, latency=None, devices=None, *, insertion: bool = True, perturb: int = 8,
         refine: int = 2, improve: int = 300, seed: int = 0, duplicate: bool = False) -> Schedule:
    """Return the shortest of several list schedules of a problem.

    The variants (see the module docstring): HEFT, PEFT, their priorities crossed with their placements, a
    successor-work tie-break, `perturb` seeded rank perturbations and `refine` rounds of start-time
    re-prioritisation, then up to `improve` re-timings of critical-task moves between devices. Never worse than
    heft() or peft() on the same problem (with the same `insertion`). duplicate=True: the same priorities once
    more with task duplication (ember.sched.duplication: a producer recomputed on its consumer's device instead
    of a slow transfer), keeping the shortest schedule of all -- never worse than without duplication.

    Parameters
    ----------
    cost : dict or Problem
        ``{task: [seconds on device 0, 1, ...]}``: one entry per device index, ``math.inf`` where the task cannot
        run there; or a ``Problem``, and then `edges`, `bandwidth`, `latency` and `devices` are ignored.
    edges : dict, optional
        ``{(u, v): bytes}``: task v needs the output of task u (default: no edges).
    bandwidth : sequence of sequence of float
        P x P bytes per second from device index i to device index j (the diagonal is unused); required with
        plain data.
    latency : sequence of sequence of float, optional
        P x P seconds added to every transfer between two device indices (default 0).
    devices : sequence of str, optional
        One name per device index (default ``dev0``, ``dev1``, ...).
    insertion : bool, optional
        Let a task fill an idle gap between tasks already placed (default True); the duplication pass always
        inserts.
    perturb : int, optional
        Rounds of random rank perturbations (default 8); each round multiplies every task's upward rank and
        rank_oct by U(0.95, 1.05) and tries both with both placements (EFT, EFT + OCT): four variants a round.
    refine : int, optional
        Rounds of re-prioritisation by the best schedule's start times, earliest first (default 2); stops at
        the first round that does not improve.
    improve : int, optional
        Most re-timings the post-pass may evaluate, moving tasks of the critical chain to other devices
        (default 300; 0: no post-pass).
    seed : int, optional
        Seed of the perturbations (default 0).
    duplicate : bool, optional
        Also try every priority with task duplication (default False).

    Returns
    -------
    Schedule
        The shortest schedule (``algo`` "best"); ``extra["variant"]`` names the variant that made it and
        ``extra["variants_tried"]`` counts the list schedules tried.

    Raises
    ------
    ValueError
        `perturb`, `refine` or `improve` is negative, or the problem data is invalid (see ``Problem``).
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix (`bandwidth` missing).
    """
    pr = _problem(cost, edges, bandwidth, latency, devices)
    if perturb < 0 or refine < 0 or improve < 0:
        raise ValueError(f"perturb, refine and improve must be >= 0, got {perturb}, {refine} and {improve}")
    ru = upward_rank(pr)
    oct_ = optimistic_cost_table(pr)
    ro = [sum(r) / len(r) for r in oct_]
    succ_work = [sum(pr.mean_cost(v) for v, _ in pr.succ[i]) for i in range(len(pr.tasks))]
    variants = [("heft", ru, None, None), ("peft", ro, oct_, None), ("rank_u+oct", ru, oct_, None),
                ("rank_oct+eft", ro, None, None), ("rank_u/succ-work", ru, None, succ_work)]
    rng = random.Random(seed)
    for k in range(perturb):
        for name, r in (("rank_u", ru), ("rank_oct", ro)):
            pr_ = [x * rng.uniform(0.95, 1.05) for x in r]
            variants.append((f"{name}~{k}", pr_, None, None))
            variants.append((f"{name}~{k}+oct", pr_, oct_, None))
    top, top_name, tried = None, None, 0
    for name, pri, la, tb in variants:
        s = _list_schedule(pr, "best", pri, la, insertion, tb)
        tried += 1
        if top is None or s.makespan < top.makespan * (1 - REL):
            top, top_name = s, name
    for r in range(refine):
        # the best schedule's start times as the priority: earliest first (a placement order HEFT's ranks missed)
        T = top.problem.tasks
        pri = [-top.start[T[i]] for i in range(len(T))]
        improved = False
        for la in (None, oct_):
            s = _list_schedule(pr, "best", pri, la, insertion, ru)
            tried += 1
            if s.makespan < top.makespan * (1 - REL):
                top, top_name, improved = s, f"refine{r}" + ("+oct" if la is not None else ""), True
        if not improved:
            break
    if improve:
        moved = _move_critical(top, improve)
        if moved is not None and moved[0].makespan < top.makespan * (1 - REL):
            top, top_name = moved[0], top_name + f"+{moved[1]} moves"
    if duplicate:
        from .duplication import list_schedule_dup
        T = top.problem.tasks
        dup_variants = [(name, pri, la, tb) for name, pri, la, tb in variants]
        dup_variants.append(("start-time", [-top.start[T[i]] for i in range(len(T))], None, ru))
        for name, pri, la, tb in dup_variants:
            s = list_schedule_dup(pr, "best", pri, la, tb)
            tried += 1
            if s.makespan < top.makespan * (1 - REL):
                top, top_name = s, name + "+dup"
    top.extra.update(variant=top_name, variants_tried=tried)
    return top


def _retime(pr: Problem, dev: list[int], order: list[int]) -> tuple[list[float], list[float]]:
    """Return the start and finish times of a placement.

    Tasks in `order` (consistent with the graph and with each device's sequence), each as early as its device
    and its inputs (transfers included) allow.
    """
    n = len(pr.tasks)
    free = [0.0] * pr.p
    start, finish = [0.0] * n, [0.0] * n
    w, lat, bw = pr.w, pr.lat, pr.bw
    for i in order:
        d = dev[i]
        s = free[d]
        for u, b in pr.pred[i]:
            du = dev[u]
            r = finish[u] if du == d else finish[u] + lat[du][d] + b / bw[du][d]
            if r > s:
                s = r
        start[i] = s
        finish[i] = free[d] = s + w[i][d]
    return start, finish


def _critical_chain(pr: Problem, dev: list[int], order: list[int], start: list[float], finish: list[float]) -> list[int]:
    """Return the tasks that fix the makespan, latest first.

    From the last to finish back through whatever delayed each start (an input's arrival, else the previous
    task on the device).
    """
    n = len(pr.tasks)
    prev, last = [-1] * n, {}
    for i in order:
        prev[i] = last.get(dev[i], -1)
        last[dev[i]] = i
    t = max(range(n), key=lambda i: finish[i])
    chain = []
    while t >= 0:
        chain.append(t)
        s, d, nxt = start[t], dev[t], -1
        tol = REL * max(1.0, s)
        for u, b in pr.pred[t]:
            if abs(finish[u] + pr.comm(b, dev[u], d) - s) <= tol:
                nxt = u
                break
        if nxt < 0 and prev[t] >= 0 and abs(finish[prev[t]] - s) <= tol:
            nxt = prev[t]
        t = nxt
    return chain


def _move_critical(sch: Schedule, budget: int) -> Optional[tuple[Schedule, int]]:
    """Run the post-pass of best(): move critical tasks to other devices.

    First-improvement moves, at most `budget` re-timings. Returns (schedule, moves made) or None when nothing
    moved.
    """
    pr = sch.problem
    T, n = pr.tasks, len(pr.tasks)
    pos = [0] * n
    for k, i in enumerate(pr.topo):
        pos[i] = k
    dev = [sch.device[T[i]] for i in range(n)]
    order = sorted(range(n), key=lambda i: (sch.start[T[i]], pos[i]))
    start, finish = _retime(pr, dev, order)  # (no insertion gaps: never later than the list schedule)
    ms, used, moves = max(finish), 0, 0
    improved = True
    while improved and used < budget:
        improved = False
        for t in _critical_chain(pr, dev, order, start, finish):
            for q in range(pr.p):
                if q == dev[t] or math.isinf(pr.w[t][q]) or used >= budget:
                    continue
                used += 1
                old, dev[t] = dev[t], q
                s2, f2 = _retime(pr, dev, order)
                m2 = max(f2)
                if m2 < ms * (1 - REL):
                    ms, start, finish, improved, moves = m2, s2, f2, True, moves + 1
                    order = sorted(range(n), key=lambda i: (start[i], pos[i]))
                    break
                dev[t] = old
            if improved:
                break
    if not moves:
        return None
    out = Schedule("best", pr, {T[i]: dev[i] for i in range(n)}, {T[i]: start[i] for i in range(n)},
                   {T[i]: finish[i] for i in range(n)}, [T[i] for i in order])
    return out, moves


def naive(cost, edges=None, bandwidth=None, latency=None, devices=None, *, seed: int = 0) -> Schedule:
    """Schedule a problem with the paper's naive baseline.

    Tasks in a topological order, each on a random device index among those that can run it and are idle when
    its producers have all finished (else among those that free up first), every input transferred from its
    producer's device, each task after the last one of its device (no insertion).

    Parameters
    ----------
    cost : dict or Problem
        ``{task: [seconds on device 0, 1, ...]}``: one entry per device index, ``math.inf`` where the task cannot
        run there; or a ``Problem``, and then `edges`, `bandwidth`, `latency` and `devices` are ignored.
    edges : dict, optional
        ``{(u, v): bytes}``: task v needs the output of task u (default: no edges).
    bandwidth : sequence of sequence of float
        P x P bytes per second from device index i to device index j (the diagonal is unused); required with
        plain data.
    latency : sequence of sequence of float, optional
        P x P seconds added to every transfer between two device indices (default 0).
    devices : sequence of str, optional
        One name per device index (default ``dev0``, ``dev1``, ...).
    seed : int, optional
        Seed of the random choices (default 0).

    Returns
    -------
    Schedule
        The schedule (``algo`` "naive", ``extra["seed"]``).

    Raises
    ------
    ValueError
        Invalid problem data (see ``Problem``): a cycle, an unknown task, a task no device can run, a
        negative cost, a wrong-shaped matrix.
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix (`bandwidth` missing).
    """
    pr = _problem(cost, edges, bandwidth, latency, devices)
    rng = random.Random(seed)
    n, P = len(pr.tasks), pr.p
    free = [0.0] * P
    dev = [-1] * n
    start = [0.0] * n
    finish = [0.0] * n
    for i in pr.topo:
        able = [p for p in range(P) if not math.isinf(pr.w[i][p])]
        ready = max((finish[u] for u, _ in pr.pred[i]), default=0.0)
        idle = [p for p in able if free[p] <= ready]
        if not idle:
            first = min(free[p] for p in able)
            idle = [p for p in able if free[p] <= first]
        p = rng.choice(idle)
        s = max(free[p], max((finish[u] + pr.comm(b, dev[u], p) for u, b in pr.pred[i]), default=0.0))
        dev[i], start[i], finish[i] = p, s, s + pr.w[i][p]
        free[p] = finish[i]
    T = pr.tasks
    return Schedule("naive", pr, {T[i]: dev[i] for i in range(n)}, {T[i]: start[i] for i in range(n)},
                    {T[i]: finish[i] for i in range(n)}, [T[i] for i in pr.topo], {"seed": seed})


ALGORITHMS = {"heft": heft, "peft": peft, "best": best, "naive": naive}
