"""Lower bounds on the makespan of ANY schedule of a Problem.

The model is the schedulers' and Schedule.validate()'s: a task runs its cost on one device, devices run one task
at a time, an input made on another device arrives latency + bytes / bandwidth after its producer finished,
transfers need no device time and do not contend.

  cp_bound(pr)             the critical path, each task at its cheapest device, no transfers
  work_bound(pr)           the total work at each task's cheapest device, over the devices' best relative speeds
  segment_bound(pr)        the communication-aware bound below; never below the two others
  lower_bound(pr)          max of the three, with their parts (a dict)

These bounds are for schedules in which every task runs once. With task duplication (sched.best(duplicate=True):
copies of a task recompute it elsewhere), cp_bound and work_bound still hold (every copy needs its inputs; every
task runs at least once), but the transfer terms of segment_bound do not (a copy can replace a transfer the
window argument counts): segment_bound(pr, copies=True) drops them, and lower_bound()["bound_with_copies"] is
the bound for those schedules. Why the rest still holds with copies: let F_k be the earliest finish of any
instance of s_k and J_k+1 the instance of s_k+1 that finishes first. Every instance of a descendant of s_k needs,
through its inputs, an instance of s_k, so starts >= F_k; J_k+1 needs an instance of each of its ancestors, so
one instance of every task of H_k runs inside [F_k, start(J_k+1)], along every path of H_k one after the other.
Hence start(J_k+1) - F_k >= max(path, work with all windows [0, T]) of H_k, F_k+1 >= start(J_k+1) + min_d
w[s_k+1][d], and M >= the sum over the segments and sync tasks.

Notation: m_i = min over devices of w[i][d] (the task's cheapest cost). A schedule S gives each task a device
D(i), a start s_i and a finish f_i = s_i + w[i][D(i)]; M(S) = max f_i.

work_bound. The relative speed of device e is s_e = max over tasks i of m_i / w[i][e] (<= 1; 0 if e runs no
task). Device e does sum over its tasks of w[i][e] <= M of work, and sum over its tasks of m_i
= sum w[i][e] * (m_i / w[i][e]) <= s_e * M. Every task runs somewhere, so sum_i m_i <= M * sum_e s_e:
M >= sum_i m_i / sum_e s_e. (With one slow host beside K accelerators this is about work / K, where
"work / all devices" would count the host as a whole device.)

segment_bound. A *sync* task is comparable with every other task (each other task is its ancestor or its
descendant). Let s_1, ..., s_S be the sync tasks in topological order (a chain). Every other task lies in exactly
one *segment*: H_0 before s_1 (ancestors of s_1), H_k between s_k and s_k+1 (descendants of s_k, ancestors of
s_k+1), H_S after s_S. In any schedule the segments run one after the other in time: all of H_k starts after s_k
finishes and finishes before s_k+1 starts. So with devices d_k = D(s_k)::

    M  =  span(H_0) + sum_k [ w[s_k][d_k] + span(H_k) ]            (span(H_k) = start(s_k+1) - finish(s_k),
                                                                    span(H_0) = start(s_1), span(H_S) = M - f(s_S))
    M  >= min over d_1..d_S of  L_0(d_1) + sum_k [ w[s_k][d_k] + L_k(d_k, d_k+1) ] + L_S(d_S)

where L_k(a, b) is any lower bound on span(H_k) given D(s_k) = a and D(s_k+1) = b; the minimum over device
sequences is a dynamic programme over k (S x P x P). L_k(a, b), measured from finish(s_k) (time 0) to
start(s_k+1) (time T), is the largest of::

  (path)  Every path s_k -> x_1 -> ... -> x_r -> s_k+1 through H_k: T >= sum m_(x_j). When a != b, the path
          starts on device a and ends on b, so one of its edges joins two different devices and costs at least
          c(e) = min over device pairs p != q of (lat[p][q] + bytes(e) / bw[p][q]); then
          T >= sum m_(x_j) + min over the path's edges of c(e). Computed as max over thresholds t of
          (t + the longest path using only edges with c(e) >= t), which is exactly max over paths.
  (work)  Device windows. A task x of H_k on a device e != a: follow a path from s_k to x; its first task not on
          a, x', has a predecessor y on a (y = s_k or y in H_k), so s_x >= s_x' >= f_y + comm(bytes(y, x'), a,
          D(x')) >= EF(y) + out_a(y, x'), where EF(y) is the longest path s_k -> y (0 for s_k, m's summed,
          y's own included) and out_a(bytes) = min over q != a of comm(bytes, a, q). So every device e != a
          works on H_k only after OFF = min over edges (y, x') into H_k from {s_k} + H_k of EF(y) + out_a. By
          the mirror argument (the last task not on b of a path from x to s_k+1 and its successor y' on b,
          y' = s_k+1 or y' in H_k), every device e != b has finished its H_k work by T - END, END = min over
          edges (x', y') of in_b(bytes) + TL(y'), TL(y') the longest path from y' to s_k+1 (y' included, s_k+1
          not; 0 for s_k+1), in_b(bytes) = min over q != b of comm(bytes, q, b). As in work_bound,
          sum over H_k of m_i <= sum_e s_e * max(0, T - off_e - end_e), with off_e = 0 if e == a else OFF and
          end_e = 0 if e == b else END; T is at least the smallest value satisfying it (a piecewise-linear
          increasing function of T: solved exactly). When the devices form at most two classes of identical
          cost columns (K accelerators, or K accelerators + a host), the same windows bound a fractional
          assignment instead: each task split between the classes, class loads within the classes' summed
          windows; the least class-A load for a class-B capacity is the fractional knapsack (tasks by
          w_A / w_B), feasibility is monotone in T, and a bisection keeps its lower end infeasible (so the
          value returned never exceeds the true least T).
          Inputs from earlier segments only add constraints and are ignored (a relaxation: still a bound).
  (empty) H_k empty: s_k+1 consumes s_k's output directly, T >= comm(bytes, a, b).

H_0 has no start task: its windows start at 0 on every device (OFF = 0) and (path) needs no crossing;
H_S has no end task: END = 0, and it ends at M. With no sync task at all the bound is the whole graph as one
segment: max(cp_bound, work_bound) with windows [0, M].

Why it matters: with K accelerators joined by slow links, spreading a segment over two devices costs at least
OFF + END of idle window on the second device; when those transfers are as long as the segment's work, the
bound shows that no schedule gets K-fold speedup (bench/sched: FPGAs on QSFP28). Checked against brute-force
optimal schedules of small random DAGs (tests/python/test_sched_bounds.py).
"""
from __future__ import annotations

import math

from .problem import Problem


def _mins(pr: Problem) -> list[float]:
    return [min(r) for r in pr.w]


def cp_bound(pr: Problem) -> float:
    """Return the critical-path bound: the longest path with each task at its cheapest device, no transfers.

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    float
        Seconds (0 for no task).
    """
    m = _mins(pr)
    best = [0.0] * len(pr.tasks)
    for i in pr.topo:
        best[i] = m[i] + max((best[u] for u, _ in pr.pred[i]), default=0.0)
    return max(best, default=0.0)


def _speeds(pr: Problem, tasks, m) -> list[float]:
    """Return the devices' relative speeds s_e over a set of tasks.

    s_e = max over `tasks` of positive cost of m_i / w[i][e] (0 where e runs none of them). Tasks with m_i = 0
    add nothing to the work, so they need no speed.
    """
    sp = [0.0] * pr.p
    for i in tasks:
        if m[i] <= 0:
            continue
        row = pr.w[i]
        for e in range(pr.p):
            c = row[e]
            if math.isinf(c):
                continue
            r = m[i] / c
            if r > sp[e]:
                sp[e] = r
    return sp


def work_bound(pr: Problem) -> float:
    """Return the work bound: the total work at each task's cheapest device over the devices' relative speeds.

    sum_i m_i / sum_e s_e (module docstring).

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    float
        Seconds (0 when there is no work).
    """
    m = _mins(pr)
    tot = sum(m)
    sp = sum(_speeds(pr, range(len(pr.tasks)), m))
    return tot / sp if tot > 0 else 0.0


def _window_solve(work: float, speeds: list[float], delays: list[float]) -> float:
    """Return the smallest T >= 0 with sum_e speeds[e] * max(0, T - delays[e]) >= work."""
    if work <= 0:
        return 0.0
    pts = sorted((d, s) for s, d in zip(speeds, delays) if s > 0)
    rate, acc = 0.0, 0.0  # acc = sum s * (T - d) over the devices already counted, at T = the current point
    for k, (d, s) in enumerate(pts):
        # before adding device k: between the previous point and d the capacity grows at `rate`
        if k and rate > 0:
            prev = pts[k - 1][0]
            need = work - acc
            if need <= rate * (d - prev):
                return prev + need / rate
            acc += rate * (d - prev)
        rate += s
    prev = pts[-1][0] if pts else 0.0
    return prev + (work - acc) / rate if rate > 0 else math.inf


def device_classes(pr: Problem) -> list[list[int]]:
    """Group the devices by identical cost columns (the same cost for every task).

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    list of list of int
        The classes of device indices, in device-index order (by first member, then within a class).
    """
    groups: dict[tuple, list[int]] = {}
    for e in range(pr.p):
        groups.setdefault(tuple(r[e] for r in pr.w), []).append(e)
    return list(groups.values())


class _Fractional:
    """Fractional assignment of a task set to at most two device classes.

    The smallest load class A must carry when class B has capacity C_B is reached by giving B the tasks that save
    the most A-time per B-second first (w_A / w_B descending; the fractional knapsack), which is exact for the
    fractional relaxation.
    """

    def __init__(self, pr: Problem, tasks, classes: list[list[int]]):
        import bisect
        self._bisect = bisect.bisect_right
        self.k = len(classes)
        ea = classes[0][0]
        if self.k == 1:
            self.total = sum(pr.w[i][ea] for i in tasks)
            return
        eb = classes[1][0]
        self.only_a = self.only_b = 0.0
        both = []
        for i in tasks:
            wa, wb = pr.w[i][ea], pr.w[i][eb]
            if math.isinf(wb):
                self.only_a += wa
            elif math.isinf(wa):
                self.only_b += wb
            elif wa > 0 or wb > 0:
                both.append((math.inf if wb == 0 else wa / wb, wa, wb))
        both.sort(key=lambda x: -x[0])
        self.wa = [x[1] for x in both]
        self.wb = [x[2] for x in both]
        self.pa, self.pb = [0.0], [0.0]
        for a, b in zip(self.wa, self.wb):
            self.pa.append(self.pa[-1] + a)
            self.pb.append(self.pb[-1] + b)

    def feasible(self, caps: list[float]) -> bool:
        if self.k == 1:
            return self.total <= caps[0]
        room = caps[1] - self.only_b
        if room < 0:
            return False
        k = self._bisect(self.pb, room) - 1  # whole tasks that fit in B
        moved = self.pa[k]
        if k < len(self.wa) and self.wb[k] > 0:
            moved += self.wa[k] * (room - self.pb[k]) / self.wb[k]
        return self.only_a + self.pa[-1] - moved <= caps[0]


def sync_tasks(pr: Problem) -> list[int]:
    """Return the sync tasks: those comparable with every other task (an ancestor or a descendant).

    Linear time: in a topological order, the task v at position k reaches every later task iff each later task
    has a predecessor at a position >= k (by induction along the order: that predecessor is v or a later task,
    reached), and is reached from every earlier task iff each earlier task has a successor at a position <= k.

    Parameters
    ----------
    pr : Problem
        The scheduling problem.

    Returns
    -------
    list of int
        Their task indices, in topological order.
    """
    n = len(pr.tasks)
    pos = [0] * n
    for k, i in enumerate(pr.topo):
        pos[i] = k
    last_pred = [max((pos[u] for u, _ in pr.pred[i]), default=-1) for i in pr.topo]   # by position
    first_succ = [min((pos[v] for v, _ in pr.succ[i]), default=n) for i in pr.topo]
    suffix_min = [n] * (n + 1)  # min of last_pred over positions > k
    for k in range(n - 1, -1, -1):
        suffix_min[k] = min(suffix_min[k + 1], last_pred[k])
    out, prefix_max = [], -1  # max of first_succ over positions < k
    for k, i in enumerate(pr.topo):
        if suffix_min[k + 1] >= k and prefix_max <= k:
            out.append(i)
        prefix_max = max(prefix_max, first_succ[k])
    return out


class _Seg:
    """One segment of the segment bound.

    Its tasks, start sync task (or None), end sync task (or None), and the pieces of L(a, b) that do not depend
    on the devices.
    """

    def __init__(self, pr: Problem, m: list[float], tasks: list[int], src, dst, classes: list[list[int]]):
        self.pr, self.m, self.src, self.dst = pr, m, src, dst
        self.tasks = tasks
        inside = set(tasks)
        self.work = sum(m[i] for i in tasks)
        self.speeds = _speeds(pr, tasks, m)
        self.classes = classes if len(classes) <= 2 else None
        self.frac = _Fractional(pr, tasks, classes) if self.classes else None
        # EF: longest path from src (src itself 0) to each task, its own cost included
        ef = {}
        if src is not None:
            ef[src] = 0.0
        for i in tasks:  # tasks are in topological order
            ef[i] = m[i] + max((ef[u] for u, _ in pr.pred[i] if u in ef), default=0.0)
        tl = {}
        if dst is not None:
            tl[dst] = 0.0
        for i in reversed(tasks):
            tl[i] = m[i] + max((tl[v] for v, _ in pr.succ[i] if v in tl), default=0.0)
        self.ef, self.tl = ef, tl
        # edges leaving {src} + H into H, edges leaving H into H + {dst}
        self.out_edges = [(ef[y], b) for y in ([src] if src is not None else []) + tasks
                          for x, b in pr.succ[y] if x in inside]
        self.in_edges = [(tl[yp], b) for x in tasks for yp, b in pr.succ[x]
                         if yp in inside or yp == dst]
        # the path part: edges of the segment's sub-DAG including src and dst
        self.direct = None
        if not tasks and src is not None and dst is not None:
            self.direct = sum(b for v, b in pr.succ[src] if v == dst)
        p = pr.p
        pairs = [(q, r) for q in range(p) for r in range(p) if q != r]
        self._cmin = (lambda b: min(pr.lat[q][r] + b / pr.bw[q][r] for q, r in pairs)) if pairs else None
        self.cp = max((ef[i] + tl[i] - m[i] for i in tasks), default=0.0)
        self._cp_cross = None

    def cp_cross(self) -> float:
        """Return max over paths src -> dst of (interior length + min over the path's edges of c(e))."""
        if self._cp_cross is not None:
            return self._cp_cross
        pr, m, src, dst = self.pr, self.m, self.src, self.dst
        nodes = [src] + self.tasks + [dst]
        member = set(nodes)
        edges = [(u, v, self._cmin(b)) for u in nodes for v, b in pr.succ[u] if v in member and u != dst]
        best = -math.inf
        ts = sorted({c for _, _, c in edges})
        if len(ts) > 32:  # any set of thresholds gives a bound: 32 of them, the smallest included
            ts = [ts[k * (len(ts) - 1) // 31] for k in range(32)]
        for t in ts:
            # longest src -> dst path using only edges with c >= t
            dist = {src: 0.0}
            for u in nodes:
                if u not in dist:
                    continue
                for v, b in pr.succ[u]:
                    if v in member and u != dst and self._cmin(b) >= t:
                        val = dist[u] + (m[v] if v != dst else 0.0)
                        if val > dist.get(v, -math.inf):
                            dist[v] = val
            if dst in dist:
                best = max(best, t + dist[dst])
        self._cp_cross = best if best > -math.inf else 0.0
        return self._cp_cross

    def bound(self, a, b) -> float:
        """Return L(a, b): a lower bound on the segment's span with src on device a and dst on device b.

        None for a or b: absent, or anywhere.
        """
        pr = self.pr
        if not self.tasks:
            if self.direct is None or a is None or b is None:
                return 0.0
            return pr.comm(self.direct, a, b)
        lb = self.cp
        if a is not None and b is not None and a != b and self._cmin is not None:
            lb = max(lb, self.cp_cross())
        P = pr.p
        off = 0.0
        if a is not None and P > 1:
            out_a = lambda nb: min(pr.lat[a][q] + nb / pr.bw[a][q] for q in range(P) if q != a)  # noqa: E731
            off = min((ef + out_a(nb) for ef, nb in self.out_edges), default=math.inf)
        end = 0.0
        if b is not None and P > 1:
            in_b = lambda nb: min(pr.lat[q][b] + nb / pr.bw[q][b] for q in range(P) if q != b)  # noqa: E731
            end = min((tl + in_b(nb) for tl, nb in self.in_edges), default=math.inf)
        delays = [(0.0 if e == a or a is None else off) + (0.0 if e == b or b is None else end) for e in range(P)]
        lb = max(lb, _window_solve(self.work, self.speeds, delays))
        if self.frac is None or self.work <= 0:
            return lb
        # the fractional assignment over the device classes' windows: bisection on T, keeping lo infeasible
        def caps(t):
            return [sum(max(0.0, t - delays[e]) for e in c) for c in self.classes]
        lo = lb
        if self.frac.feasible(caps(lo)):
            return lo
        hi = max(delays) + sum(self.m[i] for i in self.tasks)
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if self.frac.feasible(caps(mid)):
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-12 * hi:
                break
        return lo


def segment_bound(pr: Problem, copies: bool = False) -> float:
    """Return the communication-aware lower bound of the module docstring.

    About linear in the graph's size times P^3.

    Parameters
    ----------
    pr : Problem
        The scheduling problem.
    copies : bool, optional
        The bound for schedules with duplicated tasks instead (no transfer terms; default False).

    Returns
    -------
    float
        Seconds.
    """
    m = _mins(pr)
    syncs = sync_tasks(pr)
    classes = device_classes(pr)
    if not syncs:
        return _Seg(pr, m, list(pr.topo), None, None, classes).bound(None, None)
    sset = set(syncs)
    # the segment of each non-sync task: the number of sync tasks before it in the topological order
    # (a non-sync task between s_k and s_k+1 in every topological order lies in H_k)
    segs_tasks = [[] for _ in range(len(syncs) + 1)]
    k = 0
    for i in pr.topo:
        if i in sset:
            k += 1
        else:
            segs_tasks[k].append(i)
    ends = [None] + syncs + [None]
    segs = [_Seg(pr, m, segs_tasks[k], ends[k], ends[k + 1], classes) for k in range(len(syncs) + 1)]
    P = pr.p
    if copies:  # no device terms: each segment from "anywhere" to "anywhere", each sync task at its cheapest
        return sum(sg.bound(None, None) for sg in segs) + sum(m[i] for i in syncs)
    # dp[d]: least bound of everything up to and including sync task s_k on device d
    s1 = syncs[0]
    dp = [segs[0].bound(None, d) + pr.w[s1][d] for d in range(P)]
    for k in range(1, len(syncs)):
        sk = syncs[k]
        dp = [min(dp[a] + segs[k].bound(a, d) for a in range(P)
                  if not math.isinf(dp[a])) + pr.w[sk][d] if not math.isinf(pr.w[sk][d]) else math.inf
              for d in range(P)]
    return min(dp[a] + segs[-1].bound(a, None) for a in range(P) if not math.isinf(dp[a]))


def lower_bound(cost, edges=None, bandwidth=None, latency=None, devices=None) -> dict:
    """Return lower bounds on the makespan of every schedule of a problem.

    Takes a Problem or the schedulers' plain data: ``lower_bound(cost, edges, bandwidth[, latency])``.

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

    Returns
    -------
    dict
        "cp": ``cp_bound``, "work": ``work_bound``, "segments": ``segment_bound``, "bound": the
        largest of the three, "segments_with_copies": ``segment_bound(copies=True)``, "bound_with_copies":
        max(cp, work, segments_with_copies), "sync_tasks": how many tasks are sync tasks. Every schedule of the
        problem has a makespan >= "bound" (seconds); every schedule with duplicated tasks >= "bound_with_copies".

    Raises
    ------
    ValueError
        Invalid problem data (see ``Problem``): a cycle, an unknown task, a task no device can run, a
        negative cost, a wrong-shaped matrix.
    TypeError
        `edges` is not a mapping, or `bandwidth` or `latency` is not a matrix (`bandwidth` missing).
    """
    pr = cost if isinstance(cost, Problem) else Problem(cost, edges if edges is not None else {}, bandwidth, latency,
                                                       devices)
    cp, wk, sg = cp_bound(pr), work_bound(pr), segment_bound(pr)
    sc = segment_bound(pr, copies=True)
    return {"cp": cp, "work": wk, "segments": sg, "segments_with_copies": sc, "bound": max(cp, wk, sg),
            "bound_with_copies": max(cp, wk, sc), "sync_tasks": len(sync_tasks(pr))}
