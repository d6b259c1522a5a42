"""Schedulers on plain data: the published worked examples of HEFT and PEFT, validity on random DAGs, errors."""
import math
import random

import pytest

from ember import sched
from ember.sched import Problem

# Topcuoglu, Hariri & Wu, IEEE TPDS 13(3) 2002, Fig. 2: 10 tasks, 3 processors; edge weights are the (mean)
# communication costs, so the bandwidth is 1 between distinct processors.
HEFT_W = {1: [14, 16, 9], 2: [13, 19, 18], 3: [11, 13, 19], 4: [13, 8, 17], 5: [12, 13, 10], 6: [13, 16, 9],
          7: [7, 15, 11], 8: [5, 11, 14], 9: [18, 12, 20], 10: [21, 7, 16]}
HEFT_E = {(1, 2): 18, (1, 3): 12, (1, 4): 9, (1, 5): 11, (1, 6): 14, (2, 8): 19, (2, 9): 16, (3, 7): 23,
          (4, 8): 27, (4, 9): 23, (5, 9): 13, (6, 8): 15, (7, 10): 17, (8, 10): 11, (9, 10): 13}
# Arabnejad & Barbosa, IEEE TPDS 25(3) 2014, Fig. 3 / Table 1 (tasks T1..T10 as 0..9).
PEFT_W = {0: [22, 21, 36], 1: [22, 18, 18], 2: [32, 27, 43], 3: [7, 10, 4], 4: [29, 27, 35], 5: [26, 17, 24],
          6: [14, 25, 30], 7: [29, 23, 36], 8: [15, 21, 8], 9: [13, 16, 33]}
PEFT_E = {(0, 1): 17, (0, 2): 31, (0, 3): 29, (0, 4): 13, (0, 5): 7, (1, 7): 3, (1, 8): 30, (2, 6): 16, (3, 7): 11,
          (3, 8): 7, (4, 8): 57, (5, 7): 5, (6, 9): 9, (7, 9): 42, (8, 9): 7}
ONES = [[1.0] * 3 for _ in range(3)]


def test_heft_reproduces_topcuoglu_fig2():
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    s.validate()
    assert s.makespan == 80
    # the upward ranks of Table 2 and the schedule of Fig. 2(a) (processors P1..P3 as 0..2)
    ranks = sched.upward_rank(Problem(HEFT_W, HEFT_E, ONES))
    assert [round(r, 2) for r in ranks] == [108.0, 77.0, 80.0, 80.0, 69.0, 63.33, 42.67, 35.67, 44.33, 14.67]
    assert s.order == [1, 3, 4, 2, 5, 6, 9, 7, 8, 10]
    placed = {t: (s.device[t], s.start[t], s.finish[t]) for t in s.order}
    assert placed == {1: (2, 0, 9), 3: (2, 9, 28), 4: (1, 18, 26), 2: (0, 27, 40), 5: (2, 28, 38), 6: (1, 26, 42),
                      9: (1, 56, 68), 7: (2, 38, 49), 8: (0, 57, 62), 10: (1, 73, 80)}


def test_peft_reproduces_arabnejad_example():
    oct_ = sched.optimistic_cost_table(Problem(PEFT_W, PEFT_E, ONES))
    assert oct_ == [[64, 68, 86], [42, 39, 42], [27, 41, 43], [42, 39, 50], [28, 37, 28], [42, 39, 44],
                    [13, 16, 22], [13, 16, 33], [13, 16, 20], [0, 0, 0]]
    s = sched.peft(PEFT_W, PEFT_E, ONES)
    s.validate()
    assert s.makespan == 122
    assert {t: s.device[t] for t in PEFT_W} == {0: 0, 1: 0, 2: 0, 3: 0, 4: 2, 5: 1, 6: 0, 7: 1, 8: 2, 9: 1}
    # the same paper's HEFT schedule of this graph: 133
    assert sched.heft(PEFT_W, PEFT_E, ONES).makespan == 133


def test_metrics_on_the_heft_example():
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    # CP_MIN by minimum costs: 1 -> 2 -> 9 -> 10 or 1 -> 4 -> 9 -> 10 ... = 9 + ... ; check by brute force
    best = {}
    pr = Problem(HEFT_W, HEFT_E, ONES)
    for i in pr.topo:
        best[i] = min(pr.w[i]) + max((best[u] for u, _ in pr.pred[i]), default=0)
    assert s.cp_min == max(best.values())
    assert s.slr == pytest.approx(80 / max(best.values()))
    seq = min(sum(c[d] for c in HEFT_W.values()) for d in range(3))
    assert s.speedup == pytest.approx(seq / 80) and s.efficiency == pytest.approx(seq / 80 / 3)
    u = s.utilisation
    assert set(u) == {"dev0", "dev1", "dev2"}
    assert sum(u.values()) * 80 == pytest.approx(sum(s.finish[t] - s.start[t] for t in HEFT_W))


def test_metrics_are_all_properties_and_old_calls_warn():
    """Every Schedule metric is a property; the ones that were methods still answer a call, with a
    DeprecationWarning, and the same value (one release)."""
    import inspect
    import warnings
    from ember.sched.schedule import Schedule
    metrics = ("makespan", "slr", "speedup", "efficiency", "cp_min", "sequential", "busy", "utilisation", "transfers")
    assert all(isinstance(inspect.getattr_static(Schedule, m), property) for m in metrics)
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    for m in ("cp_min", "sequential", "busy", "utilisation", "transfers"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert getattr(s, m)() == getattr(s, m)
        assert [x.category for x in w] == [DeprecationWarning] and f"Schedule.{m}()" in str(w[0].message), m
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.summary()                                     # the library itself uses the properties
    assert sum(s.busy) == pytest.approx(sum(s.finish[t] - s.start[t] for t in HEFT_W))


def random_dag(rng, n, p, density=0.15, inf_rate=0.1):
    cost = {}
    for i in range(n):
        row = [rng.uniform(0.5, 20) for _ in range(p)]
        for d in range(p):
            if rng.random() < inf_rate:
                row[d] = math.inf
        if all(math.isinf(x) for x in row):
            row[rng.randrange(p)] = rng.uniform(0.5, 20)
        cost[f"t{i}"] = row
    edges = {}
    for v in range(n):
        for u in range(max(0, v - 12), v):
            if rng.random() < density:
                edges[(f"t{u}", f"t{v}")] = rng.uniform(0, 5e9)
    bw = [[0 if a == b else rng.choice([16e9, 32e9, 600e9, 1e9]) for b in range(p)] for a in range(p)]
    lat = [[0 if a == b else rng.uniform(0, 1e-3) for b in range(p)] for a in range(p)]
    return cost, edges, bw, lat


@pytest.mark.parametrize("seed", range(12))
def test_random_dags_give_valid_schedules(seed):
    rng = random.Random(seed)
    cost, edges, bw, lat = random_dag(rng, rng.randrange(5, 80), rng.randrange(1, 6))
    results = {}
    for name, algo in sched.ALGORITHMS.items():
        s = algo(cost, edges, bw, lat)
        s.validate()  # precedence + transfers, no overlap on a device, durations equal costs
        assert set(s.device) == set(cost)
        results[name] = s.makespan
        # re-timing the placement with its own costs never makes it later (no insertion gaps to lose)
        r = sched.simulate(s)
        r.validate()
        assert r.makespan <= s.makespan * (1 + 1e-9)
    lower = max(min(c) for c in cost.values())
    assert all(m >= lower for m in results.values())


def test_validate_catches_broken_schedules():
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    s.start[10] -= 5
    s.finish[10] -= 5
    with pytest.raises(ValueError, match="before its input"):
        s.validate()
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    s.finish[1] += 1
    with pytest.raises(ValueError, match="runs"):
        s.validate()
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    s.device[8], s.start[8], s.finish[8] = 2, 28.0, 42.0  # onto P3 over task 5, with P3's cost 14
    with pytest.raises(ValueError, match="overlap|before its input"):
        s.validate()


def test_simulate_with_measured_costs():
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    doubled = {t: [2 * x for x in c] for t, c in HEFT_W.items()}
    r = sched.simulate(s, doubled)
    r.validate()
    assert r.device == s.device
    assert 80 < r.makespan <= 160 + sum(HEFT_E.values())


def test_simulate_refuses_costs_that_would_retime_silently_wrong():
    """simulate() with measured costs: a missing task, a short row, a negative or NaN cost, or inf on the device
    the task is placed on are errors (before: KeyError, or a makespan computed from them)."""
    import math
    s = sched.heft(HEFT_W, HEFT_E, ONES)
    t0 = next(iter(HEFT_W))
    placed = s.device[t0]
    cases = [({t: c for t, c in HEFT_W.items() if t != t0}, "no entry"),
             ({**HEFT_W, t0: HEFT_W[t0][:-1]}, "entries for"),
             ({**HEFT_W, t0: [-1.0] * len(HEFT_W[t0])}, ">= 0"),
             ({**HEFT_W, t0: [math.nan] * len(HEFT_W[t0])}, ">= 0"),
             ({**HEFT_W, t0: [math.inf if d == placed else 1.0 for d in range(len(HEFT_W[t0]))]}, "placed")]
    for cost, message in cases:
        with pytest.raises(ValueError, match=message):
            sched.simulate(s, cost)
    other = [math.inf if d != placed else 3.0 for d in range(len(HEFT_W[t0]))]  # inf elsewhere is fine
    sched.simulate(s, {**HEFT_W, t0: other}).validate()


@pytest.mark.parametrize("cost, edges, bw, message", [
    ({1: [1, 2], 2: [1, 1]}, {(1, 2): 1, (2, 1): 1}, [[0, 1], [1, 0]], "cycle"),
    ({1: [1, 2]}, {(1, 1): 1}, [[0, 1], [1, 0]], "self-loop"),
    ({1: [1, 2]}, {(1, 9): 1}, [[0, 1], [1, 0]], "unknown task 9"),
    ({1: [math.inf, math.inf]}, {}, [[0, 1], [1, 0]], "cannot run on any device"),
    ({1: [-1, 2]}, {}, [[0, 1], [1, 0]], "must be >= 0"),
    ({1: [float("nan"), 2]}, {}, [[0, 1], [1, 0]], "must be >= 0"),
    ({1: [1, 2], 2: [1]}, {}, [[0, 1], [1, 0]], "one per device"),
    ({1: [1, 2]}, {}, [[0, 1]], "must be 2 x 2"),
    ({1: [1, 2]}, {}, [[0, 0], [1, 0]], "must be > 0"),
    ({1: [1, 2], 2: [1, 2]}, {(1, 2): -5}, [[0, 1], [1, 0]], "bytes"),
    ({}, {}, [[0]], "non-empty"),
])
def test_bad_inputs_are_clear_errors(cost, edges, bw, message):
    for algo in sched.ALGORITHMS.values():
        with pytest.raises(ValueError, match=message):
            algo(cost, edges, bw)


def test_device_that_cannot_run_a_task_is_never_used_for_it():
    cost = {"a": [1, math.inf], "b": [math.inf, 1], "c": [2, 2]}
    edges = {("a", "c"): 10, ("b", "c"): 10}
    for algo in sched.ALGORITHMS.values():
        s = algo(cost, edges, [[0, 100], [100, 0]])
        s.validate()
        assert s.device["a"] == 0 and s.device["b"] == 1


def test_one_calling_convention_for_every_algorithm():
    """Issue 26 (one convention): the problem first, each algorithm's own options as keywords only -- the same
    call works for naive, HEFT, PEFT and best, on plain data or a Problem, and returns a Schedule; an option
    given by position is refused (before, naive(cost, edges, bw, lat, devs, 3) silently meant seed=3)."""
    pr = sched.Problem(HEFT_W, HEFT_E, ONES)
    for name, algo in sched.ALGORITHMS.items():
        for s in (algo(HEFT_W, HEFT_E, ONES), algo(pr)):
            assert isinstance(s, sched.Schedule) and s.makespan >= 0
            s.validate()
        with pytest.raises(TypeError):
            algo(HEFT_W, HEFT_E, ONES, None, None, 0)
    assert sched.heft(HEFT_W, HEFT_E, ONES).makespan == 80                # the published example still holds
