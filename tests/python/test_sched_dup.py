"""Task duplication (ember.sched.duplication, sched.best(duplicate=True)): a hand-computed case, validity of
copies (every input on the device before use), never worse than without duplication."""
import math
import random

import pytest

from ember import sched
from ember.sched.duplication import list_schedule_dup
from test_sched import random_dag

# two identical devices joined by a 1 B/s link. x (0.1 s, 1-byte output) -> u (0.5 s, 100-byte output) -> v1, v2
# (2 s each, independent). Without copies v1 and v2 share u's device (moving u's output takes 100 s):
# 0.1 + 0.5 + 2 + 2 = 4.6 s. With a copy of u on device 1, fed by x's byte (arrives at 0.1 + 1 = 1.1 s), u runs
# there from 1.1 to 1.6 and v2 from 1.6 to 3.6 while v1 runs on device 0 from 0.6 to 2.6: 3.6 s. (Copying x as
# well would give 2.6 s; the rule copies one producer per placement, as DHEFT's critical parent.)
COST = {"x": [0.1, 0.1], "u": [0.5, 0.5], "v1": [2.0, 2.0], "v2": [2.0, 2.0]}
EDGES = {("x", "u"): 1, ("u", "v1"): 100, ("u", "v2"): 100}
SLOW = [[0, 1], [1, 0]]


def test_duplication_hand_computed():
    plain = sched.best(COST, EDGES, SLOW)
    assert plain.makespan == pytest.approx(4.6)
    assert not plain.copies
    d = sched.best(COST, EDGES, SLOW, duplicate=True)
    d.validate()
    assert d.makespan == pytest.approx(3.6)
    assert d.extra["variant"].endswith("+dup")
    (dev0, s0, f0), = d.copies["u"]
    assert dev0 != d.device["u"] and (s0, f0) == pytest.approx((1.1, 1.6))
    assert d.device["v2"] == dev0 and d.start["v2"] == pytest.approx(1.6)
    assert d.summary()["duplicated_tasks"] == 1
    assert d.to_dict()["copies"][0]["task"] == "u"
    assert d.busy == pytest.approx([0.1 + 0.5 + 2, 0.5 + 2] if d.device["u"] == 0 else [0.5 + 2, 0.1 + 0.5 + 2])
    # transfers: x's byte to the copy; v1 and v2 read u on their own devices
    assert d.transfers == (1, 1.0)
    # a fast link: no copy is worth it, the same makespan as without duplication
    fast = [[0, 1e12], [1e12, 0]]
    assert sched.best(COST, EDGES, fast, duplicate=True).makespan == pytest.approx(sched.best(COST, EDGES, fast).makespan)


def test_copies_can_beat_the_single_run_bound():
    # why bounds.lower_bound separates "bound" (each task once) from "bound_with_copies": here the copy makes
    # the schedule 3.6 s, below the single-run bound, which the brute-force optimum without copies (4.6) meets
    from ember.sched.bounds import lower_bound
    from test_sched_bounds import brute_force_optimum
    pr = sched.Problem(COST, EDGES, SLOW)
    lb = lower_bound(pr)
    assert brute_force_optimum(pr) == pytest.approx(4.6)
    assert lb["bound"] > 3.6 >= lb["bound_with_copies"]
    assert sched.best(pr, duplicate=True).makespan == pytest.approx(3.6)
    # the bound with copies is 0.1 (x) + 0.5 (u) + 2 (v1, v2 on two devices) = 2.6, and it is reached by copying
    # both x and u onto device 1 (two levels of copies, which the list scheduler does not try): a valid schedule
    assert lb["bound_with_copies"] == pytest.approx(2.6)
    from ember.sched.schedule import Schedule
    full = Schedule("hand", pr, {"x": 0, "u": 0, "v1": 0, "v2": 1}, {"x": 0.0, "u": 0.1, "v1": 0.6, "v2": 0.6},
                    {"x": 0.1, "u": 0.6, "v1": 2.6, "v2": 2.6}, copies={"x": [(1, 0.0, 0.1)], "u": [(1, 0.1, 0.6)]})
    full.validate()
    assert full.makespan == pytest.approx(2.6)
    # ... which the duplicating list scheduler finds with chains of copies (depth 2)
    d2 = list_schedule_dup(pr, "dheft", sched.upward_rank(pr), depth=2)
    d2.validate()
    assert d2.makespan == pytest.approx(2.6) and set(d2.copies) == {"x", "u"}
    assert list_schedule_dup(pr, "dheft", sched.upward_rank(pr), depth=1).makespan == pytest.approx(3.6)


def test_validator_checks_copies():
    d = sched.best(COST, EDGES, SLOW, duplicate=True)
    dev0, s0, f0 = d.copies["u"][0]
    # without the copy, v2's input is not on its device in time
    saved = d.copies.pop("u")
    with pytest.raises(ValueError, match="before its input from 'u'"):
        d.validate()
    # a copy that starts before its own input (x's byte) arrives
    d.copies["u"] = [(dev0, s0 - 0.5, f0 - 0.5)]
    with pytest.raises(ValueError, match=r"copy 1\) starts at .* before its input from 'x'"):
        d.validate()
    # a copy of the wrong length, a copy overlapping v2, a copy on an unknown device, of an unknown task
    d.copies["u"] = [(dev0, s0, f0 + 0.1)]
    with pytest.raises(ValueError, match="its cost"):
        d.validate()
    d.copies["u"] = saved + [(dev0, 2.0, 2.5)]  # a second copy, its input there in time, but during v2
    with pytest.raises(ValueError, match="overlap"):
        d.validate()
    d.copies["u"] = [(7, s0, f0)]
    with pytest.raises(ValueError, match="unknown device"):
        d.validate()
    d.copies = {"nope": [(0, 0.0, 1.0)], "u": saved}
    with pytest.raises(ValueError, match="unknown task"):
        d.validate()
    d.copies = {"u": saved}
    d.validate()
    with pytest.raises(ValueError, match="copies"):
        sched.simulate(d)


@pytest.mark.parametrize("seed", range(6))
def test_duplication_valid_and_never_worse_on_random_dags(seed):
    rng = random.Random(500 + seed)
    cost, edges, bw, lat = random_dag(rng, rng.randrange(15, 70), rng.randrange(2, 5))
    plain = sched.best(cost, edges, bw, lat)
    d = sched.best(cost, edges, bw, lat, duplicate=True)
    d.validate()
    assert d.makespan <= plain.makespan * (1 + 1e-12)
    from ember.sched.bounds import lower_bound
    assert d.makespan >= lower_bound(d.problem)["bound_with_copies"] * (1 - 1e-9)
    # the duplicating list scheduler alone, on HEFT's priority: valid too (copies included)
    pr = sched.Problem(cost, edges, bw, lat)
    for depth in (1, 2, 3):
        s = list_schedule_dup(pr, "dheft", sched.upward_rank(pr), depth=depth)
        s.validate()
        assert math.isfinite(s.makespan)


def test_duplication_used_on_random_dags_with_slow_links():
    # the copies must matter somewhere: DAGs whose tasks output either a small value (0.1 GB) or a large one
    # (5 GB, like raised digits from a ciphertext), devices joined by 1 GB/s links: some schedule copies tasks
    # and is shorter than every schedule without copies
    wins = 0
    for seed in range(8):
        rng = random.Random(seed)
        n, p = 40, 3
        cost = {i: [rng.uniform(0.5, 3) for _ in range(p)] for i in range(n)}
        out = [rng.choice([0.1e9, 5e9]) for _ in range(n)]
        edges = {(u, v): out[u] for v in range(n) for u in range(max(0, v - 8), v) if rng.random() < 0.25}
        bw = [[0 if a == b else 1e9 for b in range(p)] for a in range(p)]
        d = sched.best(cost, edges, bw, duplicate=True)
        d.validate()
        wins += bool(d.copies) and d.makespan < sched.best(cost, edges, bw).makespan * (1 - 1e-9)
    assert wins >= 6, wins  # (8 of 8 when written)
