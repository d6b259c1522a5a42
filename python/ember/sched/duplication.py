"""List scheduling with task duplication (in the spirit of DHEFT / HCPFD: Bansal et al., Sulaiman et al.).

When a task's latest input would come over a slow link, its producer may be *recomputed* on the consumer's
device -- a copy placed in an idle slot there, fed from the producer's own inputs -- instead of waiting for the
transfer. For HE graphs this is the ModUp of a hoisted rotation set (ember.graph.split_hoisted): its raised
digits are several times the size of the ciphertext it is computed from, so on slow links sending the
ciphertext and recomputing the digits beats sending the digits.

The rule, for each ready task v (highest priority first) and each device p:
  1. the plain placement: inputs from the instance of each producer (the original or a copy) that delivers to p
     first; v in the earliest idle slot of p after the last input arrives (insertion-based);
  2. if v's latest-arriving input u has no instance on p and can run on p: a copy of u in the earliest idle slot
     of p after u's own inputs arrive there (from their best instances), then v after the copy and its other
     inputs (the copy's slot is reserved before v's is searched); with depth > 1 also chains of copies: u's
     own latest-arriving input copied before u, and so on, `depth` levels at most (each chain length tried);
  v goes to the (device, with or without copies) of the least finish time (plus lookahead when given, as in
  PEFT); copies are kept only if they make v finish strictly earlier. Copies serve every later consumer on p.
  best(duplicate=True) uses depth 1: on the bootstrapping and HELR graphs depth 2 changed the makespans by
  < 0.7% (both ways) at twice the scheduling time.

The result is a Schedule whose `copies` map a task to its extra (device, start, finish) instances;
Schedule.validate() checks copies like tasks (costs, inputs present on the device before use, no overlap).
"""
from __future__ import annotations

import heapq
import math
from typing import Optional

from .problem import Problem
from .schedule import Schedule
from .timeline import REL, Timeline, ready_queue


def list_schedule_dup(pr: Problem, algo: str, priority: list[float], lookahead: Optional[list[list[float]]] = None,
                      tiebreak: Optional[list[float]] = None, depth: int = 1) -> Schedule:
    """List-schedule a problem with task duplication (the module docstring's rule).

    Parameters
    ----------
    pr : Problem
        The scheduling problem.
    algo : str
        The name the schedule records (``Schedule.algo``).
    priority : list of float
        Per task index, its priority: the ready task of highest priority is placed first.
    lookahead : list of list of float, optional
        ``lookahead[task index][device index]`` added to a finish time when choosing the device (PEFT's OCT);
        default none.
    tiebreak : list of float, optional
        Per task index, the priority among ties (highest first; then the lower index).
    depth : int, optional
        The longest chain of copies tried before a task (default 1).

    Returns
    -------
    Schedule
        The schedule; its ``copies`` map a task to its extra (device index, start, finish) instances.
    """
    n, P = len(pr.tasks), pr.p
    indeg = [len(pr.pred[i]) for i in range(n)]
    key, heap = ready_queue(priority, tiebreak, indeg)
    lines = [Timeline() for _ in range(P)]
    inst: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]  # (device, start, finish); [0] original
    lat, bw = pr.lat, pr.bw

    def arrive(u: int, b: float, p: int) -> float:
        best = math.inf
        for d, _, f in inst[u]:
            r = f if d == p else f + lat[d][p] + b / bw[d][p]
            if r < best:
                best = r
        return best

    order = []
    while heap:
        _, i = heapq.heappop(heap)
        wi = pr.w[i]
        best = None
        for p in range(P):
            c = wi[p]
            if math.isinf(c):
                continue
            ready, crit, crit_b = 0.0, -1, 0.0
            for u, b in pr.pred[i]:
                r = arrive(u, b, p)
                if r > ready:
                    ready, crit, crit_b = r, u, b
            s = lines[p].earliest(ready, c)
            f = s + c
            obj = f + lookahead[i][p] if lookahead is not None else f
            if best is None or obj < best[0] - REL * max(1.0, abs(obj)):
                best = (obj, p, s, f, None)
            # copies on p of the critical producer, and of its own critical producer, ... (up to `depth` levels)
            chain, x = [], crit
            while x >= 0 and len(chain) < depth:
                if any(d == p for d, _, _ in inst[x]) or math.isinf(pr.w[x][p]):
                    break
                chain.append(x)
                rx, nxt = 0.0, -1
                for y, by in pr.pred[x]:
                    r = arrive(y, by, p)
                    if r > rx:
                        rx, nxt = r, y
                x = nxt
            for L in range(1, len(chain) + 1):
                tl = lines[p].clone()
                placed, prev_t, prev_f = [], -1, 0.0
                for x in reversed(chain[:L]):  # the deepest copy first; each feeds the next
                    rx = max((prev_f if y == prev_t else arrive(y, by, p) for y, by in pr.pred[x]), default=0.0)
                    sx = tl.earliest(rx, pr.w[x][p])
                    fx = sx + pr.w[x][p]
                    tl.add(sx, fx)
                    placed.append((x, sx, fx))
                    prev_t, prev_f = x, fx
                if prev_f >= ready - REL * max(1.0, ready):
                    continue  # the copies would not deliver earlier than the transfer
                others = max((arrive(u, b, p) for u, b in pr.pred[i] if u != crit), default=0.0)
                s2 = tl.earliest(max(others, prev_f), c)
                f2 = s2 + c
                obj2 = f2 + lookahead[i][p] if lookahead is not None else f2
                if obj2 < best[0] - REL * max(1.0, abs(obj2)) and f2 < f - REL * max(1.0, f):
                    best = (obj2, p, s2, f2, placed)
        _, p, s, f, dup = best
        for u, su, fu in dup or ():
            lines[p].add(su, fu)
            inst[u].append((p, su, fu))
        lines[p].add(s, f)
        inst[i].insert(0, (p, s, f))
        order.append(i)
        for v, _ in pr.succ[i]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (key[v], v))
    T = pr.tasks
    copies = {T[i]: [(d, s, f) for d, s, f in inst[i][1:]] for i in range(n) if len(inst[i]) > 1}
    return Schedule(algo, pr, {T[i]: inst[i][0][0] for i in range(n)}, {T[i]: inst[i][0][1] for i in range(n)},
                    {T[i]: inst[i][0][2] for i in range(n)}, [T[i] for i in order], copies=copies)

