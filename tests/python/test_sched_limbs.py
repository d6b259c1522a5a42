"""ember.sched.limbs: a graph's operations split over K limb shares. The parts of every node sum exactly to the
node on every device; K = 1 is the unsplit problem; the exchanges carry the sender's limbs (ModUp digit by digit,
ModDown's dropped limbs); the split problems schedule validly; misuse is refused."""
import math

import pytest

from ember.graph import split_hoisted
from ember.graph import programs
from ember.sched import ALGORITHMS
from ember.sched.bounds import lower_bound
from ember.sched.limbs import limb_split, share, stage_fractions
from ember.sched.plan import default_costs, problem_of
from ember.sched.platform import paper


@pytest.fixture(scope="module")
def boot():
    return programs.boot_graph(log_n=12, levels=2, insecure=True)


def _setup(g, f=2, gp=0):
    plat = paper(f, gp)
    return plat, default_costs(g, plat)


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_parts_sum_to_the_node_on_every_device(boot, parts):
    plat, costs = _setup(boot, 2, 1)
    base = problem_of(boot, plat, costs)
    pr = limb_split(boot, plat, costs, parts)
    sums = {}
    for key, row in zip(pr.tasks, pr.w):
        acc = sums.setdefault(key[0], [0.0] * len(row))
        for d, x in enumerate(row):
            acc[d] += x
    assert set(sums) == set(base.tasks)
    for t, row in zip(base.tasks, base.w):
        for d, x in enumerate(row):
            assert sums[t][d] == pytest.approx(x, rel=1e-9, abs=1e-15), (t, d)


def test_executor_overhead_is_charged_per_task(boot):
    """An executor's per-task overhead (ember.sched.overhead) is paid by every task of the split, not shared."""
    from ember.sched.overhead import ExecutorOverhead
    plat, costs = _setup(boot)
    plain = limb_split(boot, plat, costs, 2)
    oh = ExecutorOverhead(per_task_s=1e-3, workers=2, tasks=10, wall_s=1.0, compute_s=1.0)
    charged = limb_split(boot, plat, costs, 2, overhead=oh)
    assert charged.tasks == plain.tasks
    for a, b in zip(plain.w, charged.w):
        for x, y in zip(a, b):
            if not math.isinf(x) and any(v > 0 and not math.isinf(v) for v in a):
                assert y == pytest.approx(x + 1e-3)


def test_one_part_is_the_unsplit_problem(boot):
    plat, costs = _setup(boot)
    a, b = problem_of(boot, plat, costs), limb_split(boot, plat, costs, 1)
    assert a.tasks == b.tasks and a.w == b.w and a.succ == b.succ


def test_share_is_round_robin():
    assert [share(j, 7, 3) for j in range(3)] == [3, 2, 2]
    assert sum(share(j, 27, 4) for j in range(4)) == 27


def test_exchanges_carry_the_senders_limbs(boot):
    """A key switch at the top level: every part sends its limbs of each digit, in coefficient form, to every
    other part, digit after digit over one link (the edge of digit d carries digits 0..d, N words per limb: the
    last one all of the part's limbs); each post stage reads the others' dropped limbs (here the special primes)
    from their last mainP, c1's sums first (one polynomial), then c0's (two: they follow c1's on the link)."""
    plat, costs = _setup(boot)
    parts = 2
    pr = limb_split(boot, plat, costs, parts)
    p = boot.meta["params"]
    n, k = 1 << p["log_n"], p["special_primes"]
    ks = next(nd for nd in boot.nodes if nd.op == "key_switch")
    q = ks.level + 1
    succ = {pr.tasks[u]: {pr.tasks[v]: bb for v, bb in pr.succ[u]} for u in range(len(pr.tasks))}
    digits = sorted(int(t[2][3:]) for t in pr.tasks if t[0] == ks.id and t[1] == 0 and t[2].startswith("pre"))
    last = f"mainP{digits[-1]}"
    assert len(digits) >= 2 and (ks.id, 0, last) in succ
    for a in range(parts):
        other = 1 - a
        sent = []
        for d in digits:
            pre = (ks.id, a, f"pre{d}")
            if pre not in succ:
                continue  # no limb of this digit at part a
            for to in (f"main{d}", f"mainP{d}"):  # the kept limbs' and the dropped limbs' work on digit d
                nbytes = succ[pre][(ks.id, other, to)]
                assert nbytes > 0 and nbytes % (n * 8) == 0
                assert succ[pre][(ks.id, a, to)] < nbytes or len(sent) == 0  # its own digit is local
            sent.append(nbytes)
        assert sent == sorted(sent) and sent[-1] == share(a, q, parts) * n * 8
        dropped = sum(1 for i in range(q, q + k) if i % parts == a)
        assert succ[(ks.id, a, last)][(ks.id, other, "post1")] == pytest.approx(dropped * n * 8)
        assert succ[(ks.id, a, last)][(ks.id, other, "post0")] == pytest.approx(2 * dropped * n * 8)
        for h in (0, 1):  # the kept limbs' sums stay on the part
            assert (ks.id, other, f"post{h}") not in succ[(ks.id, a, f"main{digits[-1]}")]


def test_polynomials_are_tracked_apart():
    """A key switch's ModUp reads only c1 of its input (c0 is added in c0's ModDown) and element-wise operations
    are one task per polynomial: in a rotate-and-add chain, the next rotation's ModUp waits for the add's c1 task
    alone, and the add's c1 for the rotation's c1 ModDown (post1)."""
    g = programs.lr_toy_graph(log_n=12, levels=5, features=16, insecure=True)
    plat, costs = _setup(g)
    pr = limb_split(g, plat, costs, 2)
    nodes = {nd.id: nd for nd in g.nodes}
    pred = {}
    for u in range(len(pr.tasks)):
        for v, _ in pr.succ[u]:
            pred.setdefault(pr.tasks[v], set()).add(pr.tasks[u])
    boot_starts = min(nd.id for nd in g.nodes if nd.op == "mod_raise")
    checked = 0
    for t in pr.tasks:
        nd = nodes[t[0]]
        if nd.id >= boot_starts:  # the iteration's chains, not the bootstrapping (raised values are not split)
            continue
        outside = {u for u in pred.get(t, ()) if u[0] != t[0]}
        if nd.op == "rotate" and t[2].startswith("pre"):
            assert outside and all(u[2] in ("c1", "post1") for u in outside), (t, outside)  # c1 alone
            checked += 1
        if nd.op == "add" and t[2] in ("c0", "c1"):
            h = t[2][1]
            assert all(u[2] in (f"c{h}", f"post{h}") for u in outside), (t, outside)
            checked += 1
    assert checked >= 8


@pytest.mark.parametrize("parts,f,gp", [(2, 2, 0), (4, 4, 0), (2, 0, 2)])
def test_split_problems_schedule_validly_and_respect_the_bound(boot, parts, f, gp):
    plat, costs = _setup(boot, f, gp)
    for g in (boot, split_hoisted(boot, parts=2)):
        pr = limb_split(g, plat, costs, parts)
        lb = lower_bound(pr)["bound"]
        for algo in ("heft", "peft", "naive"):
            s = ALGORITHMS[algo](pr)
            s.validate()
            assert s.makespan >= lb * (1 - 1e-9)


@pytest.mark.parametrize("app", ["lola-mnist", "lola-cifar"])
def test_application_graphs_split(app):
    """The applications' graphs (their vector constants: add_vector, mul_vector) split and schedule; shares sum to
    the node."""
    from ember.apps import graph_of
    g = graph_of(app)
    plat, costs = _setup(g, 2, 0)
    base = problem_of(g, plat, costs)
    pr = limb_split(g, plat, costs, 2)
    assert sum(r[1] for r in pr.w) == pytest.approx(sum(r[1] for r in base.w), rel=1e-9)
    s = ALGORITHMS["heft"](pr)
    s.validate()
    assert s.makespan >= lower_bound(pr)["bound"] * (1 - 1e-9)


@pytest.mark.parametrize("model", ["fpga-u280", "h100"])
def test_stage_fractions_are_fractions(model):
    """stage_fractions caps pre + post + tensor at 0.95 (scaling all three), so a bound on the sum cannot fail;
    what can: an operation that is nothing but its stages (a rescale or ModDown: the iNTT of the dropped limbs,
    then their conversion onto the kept ones) reaches the cap, while a key switch keeps a main stage (the key's
    inner product) and stays below it (by 1% at least); raised rotations have no ModDown (post 0); a product's tensor share
    grows with the products summed (mul_sum of 2 vs mul), and only products have one."""
    f = {op: stage_fractions((12, 4, 2, 2), model, op, 2, 1, 2, True)
         for op in ("rotate", "mul", "mul_sum", "rotate_many_raised", "mod_down", "mod_down_rescale", "rescale")}
    for op, (pre, post, ten) in f.items():
        assert pre > 0 and post >= 0 and ten >= 0, op
        assert (ten > 0) == (op in ("mul", "mul_sum")), op  # a product's d0 and d1 beside its key switch
    for op in ("mod_down", "mod_down_rescale", "rescale"):                  # all stages: the cap is reached
        assert sum(f[op]) == pytest.approx(0.95, abs=1e-12) and f[op][1] > 0, op
    for op in ("rotate", "mul", "mul_sum", "rotate_many_raised"):           # a key switch keeps its main stage
        assert sum(f[op]) <= 0.95 - 0.01, op
    assert f["rotate"][1] > 0 and f["rotate_many_raised"][1] == 0.0
    assert f["mul_sum"][2] > f["mul"][2] and f["mul_sum"][0] > f["mul"][0]   # two products' d2 and d0, d1
    assert stage_fractions((12, 4, 2, 2), "h100", "rotate_many_raised", 2, 4, 1, True)[1] == 0.0  # raised: no ModDown


def test_misuse_is_refused(boot):
    plat, costs = _setup(boot)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="parts"):
            limb_split(boot, plat, costs, bad)
    g = split_hoisted(boot, parts=2)
    g.meta = dict(g.meta)
    g.meta["params"] = {}
    with pytest.raises(ValueError):
        limb_split(g, plat, default_costs(boot, plat), 2)
    g2 = programs.boot_graph(log_n=12, levels=2, insecure=True)
    g2.nodes[0].op = "mystery"
    with pytest.raises(ValueError, match="mystery"):
        limb_split(g2, plat, costs, 2)
    assert math.isfinite(limb_split(boot, plat, costs, 64).w[0][1])  # more parts than limbs: one per limb


def test_cli_schedules_an_application_at_its_own_parameters():
    """`ember schedule lola-mnist` (no --log-n): the application's own parameters, here split over the limbs."""
    import json
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", "lola-mnist", "--platform", "paper:2,0",
                        "--algo", "heft", "--limb-parts", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["graph"]["limb_parts"] == 2 and out["schedules"]["heft"]["makespan_s"] > 0
