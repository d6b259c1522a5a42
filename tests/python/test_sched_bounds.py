"""ember.sched.bounds: lower bounds on every schedule's makespan. Checked against brute-force optimal schedules
of small random DAGs (the bound never exceeds the optimum), a hand-computed instance where the communication-
aware bound is exact and the classic ones are not, and the schedulers' own schedules."""
import math
import random

import pytest

from ember import sched
from ember.sched import Problem
from ember.sched.bounds import cp_bound, lower_bound, segment_bound, sync_tasks, work_bound
from test_sched import random_dag


def brute_force_optimum(pr: Problem) -> float:
    """The optimal makespan: depth-first over (ready task, device), each task appended at the earliest time its
    device and inputs allow. Some optimal schedule is reached: list its tasks by start time; appending them in
    that order on the same devices starts each no later than it did. Branches at or above the best so far are
    cut (times only grow)."""
    n, P = len(pr.tasks), pr.p
    dev, fin = [-1] * n, [0.0] * n
    free = [0.0] * P
    indeg = [len(pr.pred[i]) for i in range(n)]
    best = [math.inf]

    def go(done: int, ms: float):
        if ms >= best[0]:
            return
        if done == n:
            best[0] = ms
            return
        for i in range(n):
            if indeg[i] != 0 or dev[i] >= 0:
                continue
            for d in range(P):
                c = pr.w[i][d]
                if math.isinf(c):
                    continue
                s = free[d]
                for u, b in pr.pred[i]:
                    s = max(s, fin[u] + pr.comm(b, dev[u], d))
                old = free[d]
                dev[i], fin[i], free[d] = d, s + c, s + c
                for v, _ in pr.succ[i]:
                    indeg[v] -= 1
                go(done + 1, max(ms, s + c))
                for v, _ in pr.succ[i]:
                    indeg[v] += 1
                dev[i], free[d] = -1, old

    go(0, 0.0)
    return best[0]


def small_instance(rng):
    n = rng.randrange(3, 8)
    p = rng.randrange(2, 4)
    kind = rng.randrange(3)
    cost = {}
    base = [rng.uniform(0.1, 3) for _ in range(n)]
    slow = rng.uniform(1.5, 20)
    for i in range(n):
        if kind == 0:      # unrelated devices
            row = [rng.uniform(0.1, 3) for _ in range(p)]
        elif kind == 1:    # identical accelerators
            row = [base[i]] * p
        else:              # a slow host beside identical accelerators (two device classes)
            row = [base[i] * slow] + [base[i]] * (p - 1)
        if rng.random() < 0.15:
            row[rng.randrange(p)] = 0.0
        if p > 1 and rng.random() < 0.1:
            row[rng.randrange(p)] = math.inf
        cost[i] = row
    edges = {}
    for v in range(1, n):
        for u in range(v):
            if rng.random() < (0.75 if u == v - 1 else 0.3):
                edges[(u, v)] = rng.choice([0.0, rng.uniform(0, 4), rng.uniform(0, 40)])
    bw = [[0 if a == b else rng.choice([1.0, 2.0, 10.0]) for b in range(p)] for a in range(p)]
    lat = [[0 if a == b else rng.choice([0.0, rng.uniform(0, 0.5)]) for b in range(p)] for a in range(p)]
    return Problem(cost, edges, bw, lat)


def test_bound_never_exceeds_the_optimum_on_random_small_dags():
    rng = random.Random(11)
    stronger = exact = 0
    for _ in range(300):
        pr = small_instance(rng)
        opt = brute_force_optimum(pr)
        assert opt <= sched.best(pr).makespan * (1 + 1e-9)  # the brute force is a minimum
        lb = lower_bound(pr)
        assert lb["bound"] <= opt * (1 + 1e-9) + 1e-12, (lb, opt, pr.w, pr.succ)
        assert lb["bound"] >= max(lb["cp"], lb["work"])
        assert lb["bound_with_copies"] <= lb["bound"] * (1 + 1e-12)  # (copies only relax the problem)
        stronger += lb["segments"] > max(lb["cp"], lb["work"]) * (1 + 1e-6)
        exact += abs(lb["bound"] - opt) <= 1e-9 * max(1.0, opt)
    # the communication-aware part must matter on some instances, and the bound must be tight on some (the
    # same check with the bound inflated by 2% fails on 188 of these 300 instances)
    print(f"segment bound stronger on {stronger}, exact on {exact} of 300")
    assert stronger >= 30, stronger
    assert exact >= 60, exact


def _sync_by_bitsets(pr: Problem) -> list[int]:
    # the definition, directly: ancestors | descendants cover every other task
    n = len(pr.tasks)
    anc, desc = [0] * n, [0] * n
    for i in pr.topo:
        for u, _ in pr.pred[i]:
            anc[i] |= anc[u] | (1 << u)
    for i in reversed(pr.topo):
        for v, _ in pr.succ[i]:
            desc[i] |= desc[v] | (1 << v)
    return [i for i in pr.topo if (anc[i] | desc[i]).bit_count() == n - 1]


def test_sync_tasks_match_their_definition():
    rng = random.Random(5)
    found = 0
    for _ in range(200):
        n = rng.randrange(1, 30)
        cost = {i: [1.0] for i in range(n)}
        dens = rng.choice([0.1, 0.3, 0.6])
        edges = {(u, v): 1.0 for v in range(n) for u in range(max(0, v - rng.randrange(1, 6)), v) if rng.random() < dens}
        # shuffle the task order so the topological order is not the index order
        perm = list(range(n))
        rng.shuffle(perm)
        pr = Problem({perm[i]: cost[i] for i in range(n)}, {(perm[u], perm[v]): b for (u, v), b in edges.items()}, [[0]])
        got = sync_tasks(pr)
        assert got == _sync_by_bitsets(pr)
        found += len(got)
    assert found > 50  # (93 sync tasks in these 200 graphs when written)


def test_hand_computed_transfer_bound_is_exact():
    # two identical devices, link 1 B/s: a -> {b, c} -> d, every task 1 s, every value 5 B (5 s to move).
    # Running b and c on different devices costs two transfers (>= 10 s), so the optimum is all four in a row: 4.
    # The classic bounds say 3 (critical path a, b, d) and 2 (4 s of work on two devices).
    cost = {t: [1.0, 1.0] for t in "abcd"}
    edges = {("a", "b"): 5, ("a", "c"): 5, ("b", "d"): 5, ("c", "d"): 5}
    pr = Problem(cost, edges, [[0, 1], [1, 0]])
    assert [pr.tasks[i] for i in sync_tasks(pr)] == ["a", "d"]
    assert cp_bound(pr) == 3 and work_bound(pr) == 2
    assert segment_bound(pr) == pytest.approx(4)
    assert brute_force_optimum(pr) == pytest.approx(4)
    # a fast link (1e9 B/s): b and c in parallel, optimum 3 = the critical path; the bound follows
    # plain data, as the schedulers take it; bad input is the same clear error
    assert lower_bound(cost, edges, [[0, 1], [1, 0]])["bound"] == pytest.approx(4)
    with pytest.raises(ValueError, match="cycle"):
        lower_bound({"a": [1.0], "b": [1.0]}, {("a", "b"): 1, ("b", "a"): 1}, [[0]])
    fast = Problem(cost, edges, [[0, 1e9], [1e9, 0]])
    assert lower_bound(fast)["bound"] == pytest.approx(3, rel=1e-6)
    assert brute_force_optimum(fast) == pytest.approx(3, rel=1e-6)
    # H between the sync tasks split by the window argument: b, c of 3 s each on two devices with 1 s transfers:
    # the second device works in [1, T - 1], so 6 <= T + (T - 2): T >= 4, total 1 + 4 + 1 = 6 (optimum: 6)
    cost2 = {"a": [1.0, 1.0], "b": [3.0, 3.0], "c": [3.0, 3.0], "d": [1.0, 1.0]}
    edges2 = {("a", "b"): 1, ("a", "c"): 1, ("b", "d"): 1, ("c", "d"): 1}
    pr2 = Problem(cost2, edges2, [[0, 1], [1, 0]])
    assert segment_bound(pr2) == pytest.approx(6)
    assert brute_force_optimum(pr2) == pytest.approx(6)


def test_work_bound_counts_a_slow_device_by_its_speed():
    # a host 4x slower than one accelerator: 5 tasks of 1 s can not finish before 5 / 1.25 = 4 s (the classic
    # work / devices says 2.5); the optimum is 4: one task on the host, four on the accelerator
    cost = {i: [4.0, 1.0] for i in range(5)}
    pr = Problem(cost, {}, [[0, 1], [1, 0]])
    assert work_bound(pr) == pytest.approx(4)
    assert brute_force_optimum(pr) == pytest.approx(4)


@pytest.mark.parametrize("seed", range(4))
def test_schedulers_respect_the_bound_on_random_dags(seed):
    rng = random.Random(300 + seed)
    cost, edges, bw, lat = random_dag(rng, rng.randrange(20, 120), rng.randrange(1, 6))
    pr = Problem(cost, edges, bw, lat)
    lb = lower_bound(pr)["bound"]
    for algo in ("heft", "peft", "best", "naive"):
        assert sched.ALGORITHMS[algo](pr).makespan >= lb * (1 - 1e-9)
