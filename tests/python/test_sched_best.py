"""sched.best: the shortest of several list schedules (HEFT, PEFT, crossed priorities and placements, tie-breaks,
seeded rank perturbations, start-time refinement). Valid; against the optimum by brute force on tiny DAGs and a
hand-computed one. ("Never worse than HEFT or PEFT" cannot fail -- best keeps both among its variants -- so it is not
what these tests check.)"""
import itertools
import math
import random

import pytest

from ember import sched
from test_sched import HEFT_E, HEFT_W, ONES, PEFT_E, PEFT_W, random_dag


def test_best_on_the_papers_examples_is_valid():
    for w, e in ((HEFT_W, HEFT_E), (PEFT_W, PEFT_E)):
        b = sched.best(w, e, ONES)
        b.validate()
        assert b.extra["variants_tried"] >= 5 + 2 * 2 * 8
    # HEFT's 80 on Topcuoglu's Fig. 2 and PEFT's 122 on Arabnejad's example are upper bounds the variants keep
    assert sched.best(HEFT_W, HEFT_E, ONES).makespan <= 80
    assert sched.best(PEFT_W, PEFT_E, ONES).makespan <= 122


def test_best_hand_computed_optimum():
    # two identical devices, transfers free in effect (1e30 B/s): a (3), b (2), c (2) independent, then d (1)
    # needing all three. d starts only when a, b and c are done; 3 + 2 + 2 on two devices takes at least 4
    # ({a}, {b, c}), so the optimum is 4 + 1 = 5, with a alone on one device.
    cost = {"a": [3, 3], "b": [2, 2], "c": [2, 2], "d": [1, 1]}
    edges = {("a", "d"): 1, ("b", "d"): 1, ("c", "d"): 1}
    bw = [[0, 1e30], [1e30, 0]]
    s = sched.best(cost, edges, bw)
    s.validate()
    assert s.makespan == pytest.approx(5)
    assert s.device["b"] == s.device["c"] != s.device["a"]
    # with a slow link (1 B/s: each transfer of 1 byte costs 1 s) the best is still 5: d joins the {b, c}
    # device at 4, waiting for a's byte (3 + 1 = 4)
    s = sched.best(cost, edges, [[0, 1], [1, 0]])
    s.validate()
    assert s.makespan == pytest.approx(5)


@pytest.mark.parametrize("seed", range(10))
def test_best_valid_and_deterministic_on_random_dags(seed):
    rng = random.Random(100 + seed)
    cost, edges, bw, lat = random_dag(rng, rng.randrange(10, 90), rng.randrange(2, 6))
    b = sched.best(cost, edges, bw, lat)
    b.validate()  # precedences, transfer delays, no overlap on a device, durations equal costs
    # the same seed gives the same schedule
    assert sched.best(cost, edges, bw, lat).makespan == b.makespan


def _optimum(cost, edges, bw, lat):
    """The optimal makespan by brute force: every placement and every topological order, each task started as
    early as its device and inputs allow (the optimal schedule's tasks in order of start time are one such order,
    and starting them as early as possible only moves them earlier: the minimum is the optimum)."""
    tasks = list(cost)
    p = len(next(iter(cost.values())))
    preds = {t: [(u, b) for (u, v), b in edges.items() if v == t] for t in tasks}

    def orders(done, rest):
        if not rest:
            yield done
        for t in rest:
            if all(u in done for u, _ in preds[t]):
                yield from orders(done + [t], [r for r in rest if r != t])
    topo = list(orders([], tasks))
    best = math.inf
    for place in itertools.product(range(p), repeat=len(tasks)):
        dev = dict(zip(tasks, place))
        if any(math.isinf(cost[t][dev[t]]) for t in tasks):
            continue
        for order in topo:
            free, fin = [0.0] * p, {}
            for t in order:
                d = dev[t]
                fin[t] = cost[t][d] + max([free[d]] + [fin[u] + (0.0 if dev[u] == d else lat[dev[u]][d] + b / bw[dev[u]][d])
                                                     for u, b in preds[t]])
                free[d] = fin[t]
            best = min(best, max(fin.values()))
    return best


def test_best_against_the_brute_force_optimum():
    """Twelve random 6-task DAGs on 2-3 devices: best is never below the optimum (a schedule below it would be
    invalid), within 10% of it on every DAG and optimal (to 0.1%) on at least 9 (measured: 9 optimal, worst 1.0996;
    HEFT alone: 6 optimal, worst 1.165, which fails both bounds)."""
    ratios = []
    for seed in range(12):
        rng = random.Random(500 + seed)
        cost, edges, bw, lat = random_dag(rng, 6, rng.randrange(2, 4), density=0.4)
        opt = _optimum(cost, edges, bw, lat)
        b = sched.best(cost, edges, bw, lat)
        b.validate()
        assert b.makespan >= opt * (1 - 1e-9), seed
        ratios.append(b.makespan / opt)
    assert max(ratios) <= 1.10, ratios
    assert sum(r <= 1 + 1e-3 for r in ratios) >= 9, ratios


def test_best_improves_on_heft_somewhere():
    # the variants must matter: on some random DAG they beat both HEFT and PEFT
    wins = 0
    for seed in range(15):
        rng = random.Random(seed)
        cost, edges, bw, lat = random_dag(rng, 60, 3)
        b = sched.best(cost, edges, bw, lat)
        wins += b.makespan < min(sched.heft(cost, edges, bw, lat).makespan,
                                 sched.peft(cost, edges, bw, lat).makespan) * (1 - 1e-9)
    assert wins >= 3


def test_best_bad_arguments():
    with pytest.raises(ValueError, match="perturb"):
        sched.best(HEFT_W, HEFT_E, ONES, perturb=-1)
    with pytest.raises(ValueError, match="improve"):
        sched.best(HEFT_W, HEFT_E, ONES, improve=-1)
    with pytest.raises(ValueError, match="cycle"):
        sched.best({0: [1.0], 1: [1.0]}, {(0, 1): 0, (1, 0): 0}, [[0]])
    assert math.isfinite(sched.best({0: [1.0, math.inf]}, {}, [[0, 1], [1, 0]]).makespan)


def test_move_post_pass_hand_computed():
    # two identical devices, free transfers: a (1) and b (1) independent, then c (1) needing both.
    # A schedule with everything on device 0 takes 3; moving a or b to device 1 gives 2, the optimum.
    from ember.sched.algorithms import _move_critical
    from ember.sched.schedule import Schedule
    pr = sched.Problem({"a": [1, 1], "b": [1, 1], "c": [1, 1]}, {("a", "c"): 0, ("b", "c"): 0}, [[0, 1], [1, 0]])
    bad = Schedule("manual", pr, {"a": 0, "b": 0, "c": 0}, {"a": 0, "b": 1, "c": 2}, {"a": 1, "b": 2, "c": 3})
    bad.validate()
    out, moves = _move_critical(bad, 10)
    out.validate()
    assert out.makespan == 2 and moves == 1
    assert out.device["a"] != out.device["b"]
    # an optimal schedule is left alone
    assert _move_critical(out, 10) is None


@pytest.mark.parametrize("seed", range(6))
def test_move_post_pass_never_hurts(seed):
    rng = random.Random(200 + seed)
    cost, edges, bw, lat = random_dag(rng, 70, rng.randrange(2, 5))
    plain = sched.best(cost, edges, bw, lat, improve=0)
    moved = sched.best(cost, edges, bw, lat)
    moved.validate()
    assert moved.makespan <= plain.makespan * (1 + 1e-12)
