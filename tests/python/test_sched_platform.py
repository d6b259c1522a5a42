"""Platforms (the route rule), cost tables (modelled, measured, profile-guided), graphs onto platforms, the CLI."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.graph import SymbolicContext
from ember.sched import costs as C
from ember.sched.plan import default_costs, problem_of, schedule_graph
from ember.sched.platform import LINKS, Device, Platform, paper

PARAMS = dict(log_n=12, levels=4, log_scale=40, insecure=True)


def test_paper_platform_route_rule():
    p = paper(2, 2)
    assert p.names == ["cpu", "fpga0", "fpga1", "gpu0", "gpu1"]
    bw = {(a, b): p.bandwidth[i][j] for i, a in enumerate(p.names) for j, b in enumerate(p.names)}
    assert bw["cpu", "fpga0"] == LINKS["pcie4x16"][0] and bw["cpu", "gpu1"] == LINKS["pcie3x16"][0]
    assert bw["gpu0", "gpu1"] == LINKS["nvlink3"][0] and bw["fpga0", "fpga1"] == LINKS["qsfp28x2"][0]
    # no direct FPGA-GPU link: the slowest route, through the host's PCIe 3 link to the GPU (the paper: 16 GB/s)
    assert bw["fpga0", "gpu0"] == LINKS["pcie3x16"][0]
    assert all(p.bandwidth[i][j] == p.bandwidth[j][i] for i in range(5) for j in range(5))
    with pytest.raises(ValueError, match="four PCIe slots"):
        paper(3, 2)
    assert Platform.preset("paper:1,3").names == ["cpu", "fpga0", "gpu0", "gpu1", "gpu2"]
    with pytest.raises(ValueError, match="unknown platform"):
        Platform.preset("cluster")


def test_route_rule_minimum_over_routes_and_latency():
    devs = [Device(x, "cpu", "cpu-1t") for x in "abcd"]
    # a-b fast, b-d slow, a-c medium, c-d fast: no a-d link; routes a-b-d (min 1), a-c-d (min 5): the paper takes 1
    p = Platform.from_links("t", devs, [("a", "b", 10, 1e-6), ("b", "d", 1, 2e-6), ("a", "c", 5), ("c", "d", 8)])
    i = {n: k for k, n in enumerate(p.names)}
    assert p.bandwidth[i["a"]][i["d"]] == 1 and p.latency[i["a"]][i["d"]] == pytest.approx(3e-6)
    assert p.bandwidth[i["a"]][i["b"]] == 10  # a direct link wins
    with pytest.raises(ValueError, match="not connected"):
        Platform.from_links("t", devs, [("a", "b", 10)])
    with pytest.raises(ValueError, match="unknown device"):
        Platform.from_links("t", devs, [("a", "z", 10)])
    assert Platform.from_dict(json.loads(json.dumps(p.to_dict()))).bandwidth == p.bandwidth


def test_modelled_costs_grow_with_level_and_are_marked():
    params = ember.CkksParams(**PARAMS)
    t = C.CostTable.modelled(params, ["h100", "fpga-u280"])
    assert t.source("h100") == "modelled" and "modelled" in t.devices["h100"]["note"]
    for dev in ("h100", "fpga-u280"):
        for op in ("add", "mul", "rotate", "rescale"):
            lo, hi = t.seconds(dev, op, 1), t.seconds(dev, op, 4)
            assert 0 < lo < hi
        assert t.seconds(dev, "rotate", 3) > t.seconds(dev, "add", 3)
        # hoisting: 4 rotations sharing a ModUp cost less than 4 rotations
        assert t.seconds(dev, "rotate_many", 3, 4) < 4 * t.seconds(dev, "rotate", 3)
    assert t.seconds("h100", "mul", 3) < t.seconds("fpga-u280", "mul", 3)
    assert t.seconds("h100", "conjugate", 2) == t.seconds("h100", "rotate", 2)  # alias
    with pytest.raises(ValueError, match="unknown modelled device"):
        C.CostTable.modelled(params, ["tpu"])
    back = C.CostTable.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.seconds("h100", "mul", 3) == t.seconds("h100", "mul", 3)


def test_cost_table_interpolation_and_errors():
    t = C.CostTable()
    t.set("d", "add", 0, 1.0)
    t.set("d", "add", 4, 5.0)
    assert t.seconds("d", "add", 2) == 3.0 and t.seconds("d", "add", 9) == 5.0
    assert t.seconds("d", "sub", 2) == 3.0  # alias of add
    with pytest.raises(ValueError, match="no cost for operation 'mul'"):
        t.seconds("d", "mul", 1)
    with pytest.raises(ValueError, match="no costs for device"):
        t.seconds("x", "add", 1)
    with pytest.raises(ValueError, match=">= 0"):
        t.set("d", "add", 1, -1.0)
    with pytest.raises(ValueError, match="not an ember cost table"):
        C.CostTable.from_dict({"format": "x"})


def test_cost_table_has_agrees_with_seconds():
    """has(device, op) is True exactly when seconds(device, op, level) returns a figure: before, it left out the
    fallbacks seconds uses (a counted operation priced per item, mul_sum, drop_to_level, the parts of a split
    rotate_many_raised), and it said True for a counted operation with one reference entry, where seconds failed
    with a KeyError."""
    t = C.CostTable()
    t.set("d", "rotate", 3, 1.0)
    t.set("d", "mul", 3, 2.0)
    t.set("d", "mul_plain", 3, 0.5)
    t.set("d", "linear_combination@1", 3, 1.0)  # one reference entry of a counted operation's line, not both
    ops = ["rotate", "conjugate", "mul", "relinearize", "mul_plain", "mul_sum", "rotate_many", "rotate_many_raised",
           "mod_up_digits", "rotate_raised_digits", "drop_to_level", "linear_combination", "add", "rescale", "nope"]
    for op in ops:
        try:
            t.seconds("d", op, 3, 2)
            figure = True
        except ValueError:
            figure = False
        assert t.has("d", op) == figure, op
    assert t.has("d", "rotate_many") and t.has("d", "mul_sum") and t.has("d", "drop_to_level")
    assert not t.has("d", "add") and not t.has("d", "linear_combination")
    with pytest.raises(ValueError, match="'linear_combination@1' and 'linear_combination@8'"):
        t.seconds("d", "linear_combination", 3, 2)
    with pytest.raises(ValueError, match="no costs for device 'x'"):
        t.has("x", "rotate")


def test_cost_table_set_on_an_existing_model_keeps_source_note_and_params_consistent():
    """set() on an existing device model: before, its source, note and params were silently dropped. Now a
    conflicting source or params is refused, naming both, and a new note is appended; equal values (from_dict,
    modelled, the profiler's loops) pass."""
    t = C.CostTable()
    t.set("d", "add", 0, 1.0, "modelled", "sim", {"log_n": 12})
    t.set("d", "add", 1, 1.5, "modelled", "sim", {"log_n": 12})
    with pytest.raises(ValueError, match="device model 'd' is modelled: cannot set a measured figure"):
        t.set("d", "mul", 0, 2.0)
    with pytest.raises(ValueError, match=r"params \{'log_n': 12\}.*params \{'log_n': 13\}"):
        t.set("d", "mul", 0, 2.0, "modelled", "sim", {"log_n": 13})
    assert "mul" not in t.devices["d"]["ops"]
    t.set("d", "mul", 0, 2.0, "modelled", "a second run")
    assert t.source("d") == "modelled" and t.note("d") == "sim; a second run"
    t.set("d", "mul", 1, 2.5, "modelled", "sim")
    assert t.note("d") == "sim; a second run" and t.devices["d"]["params"] == {"log_n": 12}
    back = C.CostTable.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.to_dict() == t.to_dict()
    u = C.CostTable()
    u.set("e", "add", 0, 1.0)
    u.set("e", "mul", 0, 1.0, params={"log_n": 12})  # a model without params records the first given
    assert u.devices["e"]["params"] == {"log_n": 12}


def small_program(ctx, keys):
    x = ctx.encrypt(np.full(ctx.slots, 0.5), keys.public)
    y = x * x
    z = y.rotate(1) + y * 0.5
    return z.rotate_many([1, 2])[1] + x


def test_profile_times_the_circuits_operations_from_a_live_bootstrapping(monkeypatch):
    """measure_bootstrapping: the raised-basis operations and ModRaise enter the table as measured entries (a line
    a + b * count for the counted ones), so a split's ModUp has a cost of its own on the CPU."""
    from ember.sched.costs import CostTable
    from ember.sched.profile import measure_bootstrapping
    monkeypatch.delenv("EMBER_DEVICE", raising=False)  # the CPU's table ("cpu-1t") under any default device
    params = ember.CkksParams.bootstrappable(log_n=12, levels=2, insecure=True)
    t = CostTable()
    t.set("cpu-1t", "rotate", 0, 1e-3)  # a table the per-level loop made (one kind is enough here)
    n = measure_bootstrapping(params, t, threads=1, runs=1, progress=False)
    ops = t.devices["cpu-1t"]["ops"]
    assert n >= 4 and {"mod_down", "mod_raise"} <= set(ops)
    assert "rotate_many_raised@1" in ops and "rotate_many_raised@4" in ops
    assert "rotate" in ops and set(ops["rotate"]) == {0}  # what the table had is kept
    lvl = max(ops["rotate_many_raised@1"])
    one, four = ops["rotate_many_raised@1"][lvl], ops["rotate_many_raised@4"][lvl]
    assert 0 <= one <= four < 10
    assert all(0 < x < 10 for x in ops["mod_down"].values())


def test_measured_profile_and_profile_guided_update(monkeypatch):
    from ember.sched.profile import measure
    monkeypatch.delenv("EMBER_DEVICE", raising=False)  # the CPU's table ("cpu-1t") under any default device
    params = ember.CkksParams(**PARAMS)
    t = measure(params, threads=1, levels=[1, 4], runs=2, progress=False)
    assert t.source("cpu-1t") == "measured"
    # every kind at both levels (timings themselves are not asserted: the machine is shared)
    assert set(t.devices["cpu-1t"]["ops"]) == {"add", "add_plain", "add_const", "mul_int", "mul_plain", "rotate",
                                               "rotate_many@1", "rotate_many@4", "mul", "mul_sum@1", "mul_sum@4", "mul_const",
                                               "rescale"}
    assert all(set(lv) == {1, 4} and all(0 < x < 10 for x in lv.values()) for lv in t.devices["cpu-1t"]["ops"].values())
    ctx = ember.Context(params)
    keys = ctx.keygen(rotations=[1, 2])
    with ember.graph(ctx) as g:
        small_program(ctx, keys)
    n = t.update_from_graph(g, "cpu-1t")
    assert n >= 4 and t.source("cpu-1t") == "profile-guided"
    mul = next(x for x in g.nodes if x.op == "mul")
    assert t.seconds("cpu-1t", "mul", mul.level) == pytest.approx(mul.seconds)
    run = {"tasks": [{"op": "add", "level": 4, "seconds": 0.123, "device": "cpu-1t"}]}
    t.update_from_run(run)
    assert t.seconds("cpu-1t", "add", 4) == 0.123
    with pytest.raises(ValueError, match="tasks"):
        t.update_from_run({"nodes": []})
    sym = SymbolicContext(params)
    skeys = sym.keygen(rotations=[1, 2])
    with ember.graph(sym) as h:
        small_program(sym, skeys)
    with pytest.raises(ValueError, match="no measured times"):
        t.update_from_graph(h, "cpu-1t")


def test_graph_onto_paper_platform():
    params = ember.CkksParams(**PARAMS)
    sym = SymbolicContext(params)
    keys = sym.keygen(rotations=[1, 2])
    with ember.graph(sym) as g:
        small_program(sym, keys)
    plat = paper(2, 2)
    costs = default_costs(g, plat)
    assert costs.source("h100") == "modelled" and costs.source("fpga-u280") == "modelled"
    pr = problem_of(g, plat, costs)
    assert len(pr.tasks) == len(g) and pr.p == 5
    rm = next(n for n in g.nodes if n.op == "rotate_many")
    assert pr.w[pr.index[rm.id]][3] == pytest.approx(costs.seconds("h100", "rotate_many", rm.level, 2))
    for algo in ("naive", "heft", "peft"):
        s = schedule_graph(g, plat, costs, algo)
        s.validate()
        assert "gpu0" in s.extra["modelled_devices"]
        assert s.makespan >= s.cp_min
    with pytest.raises(ValueError, match="no device 'cpu-2t'"):
        problem_of(g, Platform.preset("this:2"), costs)


def test_cli_graph_and_schedule(tmp_path):
    out = tmp_path / "boot.json"
    cmd = [sys.executable, "-m", "ember", "graph", "boot", "--log-n", "12", "--levels", "2", "--insecure", "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    summ = json.loads(r.stdout)
    assert summ["nodes"] >= 100 and out.exists()
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(out), "--platform", "paper:2,2", "--algo", "all",
                        "--png", str(tmp_path / "g.png")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert set(res["schedules"]) == {"naive", "heft", "peft", "best"}
    assert res["schedules"]["best"]["makespan_s"] <= min(res["schedules"][a]["makespan_s"] for a in ("heft", "peft"))
    assert "MODELLED" in res["note"] and "gpu0" in res["modelled_devices"]
    assert res["schedules"]["heft"]["makespan_s"] < res["schedules"]["naive"]["makespan_s"]
    assert (tmp_path / "g-heft.png").exists()
    lb = res["lower_bound"]  # ember.sched.bounds: no schedule is shorter
    assert 0 < lb["bound_s"] <= min(x["makespan_s"] for x in res["schedules"].values()) * (1 + 1e-9)
    assert lb["bound_with_copies_s"] <= lb["bound_s"] and lb["sync_tasks"] >= 1
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(out), "--platform", "paper:0,2", "--algo", "best",
                        "--split-hoisted", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    split = json.loads(r.stdout)
    assert split["graph"]["nodes"] > summ["nodes"] and split["schedules"]["best"]["makespan_s"] > 0
    # with task duplication: never longer than best, copies counted, the Gantt chart drawn
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(out), "--platform", "paper:0,2", "--algo",
                        "best-dup", "--split-hoisted", "4", "--png", str(tmp_path / "dup.png")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    dup = json.loads(r.stdout)["schedules"]["best-dup"]
    assert dup["makespan_s"] <= split["schedules"]["best"]["makespan_s"] * (1 + 1e-12)
    assert dup["duplicated_tasks"] >= 0 and (tmp_path / "dup.png").exists()
    assert dup["makespan_s"] >= json.loads(r.stdout)["lower_bound"]["bound_with_copies_s"] * (1 - 1e-9)
    # data-parallel over the limbs (ember.sched.limbs): the shares' tasks, a valid schedule above its bound
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(out), "--platform", "paper:2,0", "--algo", "heft",
                        "--limb-parts", "2", "--png", str(tmp_path / "limbs.png")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    lim = json.loads(r.stdout)
    assert lim["graph"]["limb_parts"] == 2 and lim["graph"]["tasks"] > 2 * summ["nodes"]
    assert lim["schedules"]["heft"]["makespan_s"] >= lim["lower_bound"]["bound_s"] * (1 - 1e-9)
    assert (tmp_path / "limbs.png").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "not an ember graph" in r.stderr


def test_cli_program_from_file_and_clear_errors(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import numpy as np\n"
                    "def square_sum(ctx, keys):\n"
                    "    x = ctx.encrypt(np.zeros(ctx.slots), keys.public)\n"
                    "    y = x * x\n"
                    "    return y + y.rotate(1)\n"
                    "square_sum.rotations = [1]\n")
    r = subprocess.run([sys.executable, "-m", "ember", "graph", f"{prog}:square_sum", "--log-n", "12", "--levels", "2",
                        "--insecure"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["op_counts"] == {"mul": 1, "rotate": 1, "add": 1}
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", f"{prog}:nothing", "--log-n", "12", "--insecure"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no function 'nothing'" in r.stderr


def test_dask_platform_measures_bandwidth():
    p = Platform.preset("dask:3")
    assert p.names == ["worker0", "worker1", "worker2"] and all(d.model == "cpu-1t" for d in p.devices)
    bw = p.bandwidth[0][1]
    assert bw > 1e6 and p.bandwidth[1][0] == bw and p.latency[0][1] >= 0 and "measured" in p.notes[0]
    q = Platform.preset("dask:2:5e9")
    assert q.bandwidth == [[0.0, 5e9], [5e9, 0.0]]
    with pytest.raises(ValueError, match="dask"):
        Platform.preset("dask:x")


def test_cli_profile_guided_prediction_equals_the_run(tmp_path):
    """--profile-from a live graph: every (op, level) of this program occurs once, so on one CPU device the
    profile-guided prediction is exactly the run's summed node times."""
    ctx = ember.Context(ember.CkksParams(**PARAMS))
    keys = ctx.keygen(rotations=[1])
    x = ctx.encrypt(np.full(ctx.slots, 0.5), keys.public)
    with ember.graph(ctx) as g:
        (x * x + x).rotate(1) * 0.5
    assert len({(n.op, n.level) for n in g.nodes}) == len(g)
    path = tmp_path / "live.json"
    g.save(path)
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", str(path), "--platform", "this:1", "--profile-from",
                        str(path), "--profile-device", "cpu-1t"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["cost_sources"] == {"cpu-1t": "profile-guided"} and res["note"] == "measured costs"
    assert res["schedules"]["heft"]["makespan_s"] == pytest.approx(sum(n.seconds for n in g.nodes), rel=1e-9)


def _fresh_env(tmp_path, **extra) -> dict:
    """A fresh install's environment: no calibration anywhere (home and cache dirs empty, no
    EMBER_SIM_CPU_PROFILE), the package importable but not run from a checkout."""
    import os
    import ember as _e
    env = {k: v for k, v in os.environ.items() if k != "EMBER_SIM_CPU_PROFILE"}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=str(__import__("pathlib").Path(_e.__file__).resolve().parents[1]), **extra)
    return env


def test_schedule_on_a_fresh_install_uses_the_embedded_profile(tmp_path):
    """Issue 26, defect 6: `ember schedule boot --platform paper:2,2` with no calibration file (and run outside the
    checkout, whose bench/ it used to read) works from the embedded reference machine's profile and says so."""
    r = subprocess.run([sys.executable, "-m", "ember", "schedule", "boot", "--platform", "paper:2,2"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_fresh_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "cpu: profile: embedded reference (the 2-core development VM: Intel Xeon with AVX-512 IFMA" in r.stderr
    res = json.loads(r.stdout)
    assert res["cost_sources"]["cpu"] == "modelled" and "embedded reference" in res["cost_notes"]["cpu"]
    assert res["schedules"]["heft"]["makespan_s"] > 0


def test_embedded_profile_is_the_reference_calibration(tmp_path, monkeypatch):
    """The embedded profile holds the figures of the committed calibration of the reference machine
    (bench/sim/cpu_calibration.json), labelled with the machine; a calibration of this machine (written where
    `ember sim calibrate` writes it) takes its place, labelled as calibrated."""
    import pathlib
    from ember.sim import devices
    committed = pathlib.Path(__file__).resolve().parents[2] / "bench" / "sim" / "cpu_calibration.json"
    if not committed.exists():
        pytest.skip("not run from a checkout")
    ref = devices.reference_cpu_profile()
    mine = devices.Profile.load(committed)
    assert (ref.kernel_rates, ref.mul_per_s, ref.bandwidth, ref.threads) == \
        (mine.kernel_rates, mine.mul_per_s, mine.bandwidth, mine.threads)
    assert ref.source.startswith("embedded reference (the 2-core development VM")
    g = SymbolicContext(ember.CkksParams(**PARAMS)).params
    monkeypatch.setenv("EMBER_SIM_CPU_PROFILE", str(tmp_path / "none.json"))
    emb = C.CostTable.modelled(g, ["cpu"], levels=[2])
    assert "profile: embedded reference" in emb.note("cpu")
    fast = json.loads(committed.read_text())                    # a machine twice as fast on every figure
    fast["kernel_rates"] = {k: 2 * v for k, v in fast["kernel_rates"].items()}
    for k in ("mul_per_s", "add_per_s", "bandwidth"):
        fast[k] *= 2
    (tmp_path / "mine.json").write_text(json.dumps(fast))
    monkeypatch.setenv("EMBER_SIM_CPU_PROFILE", str(tmp_path / "mine.json"))
    cal = C.CostTable.modelled(g, ["cpu"], levels=[2])
    assert cal.note("cpu").endswith(f"profile: calibrated ({tmp_path / 'mine.json'})")
    for op in ("mul", "rotate", "add"):
        assert cal.seconds("cpu", op, 2) == pytest.approx(emb.seconds("cpu", op, 2) / 2, rel=1e-9)


def test_dask_workers_keeps_a_given_latency_beside_a_measured_bandwidth():
    """dask_workers(k, latency=x) with the bandwidth measured: x is used and the notes say so (before, x was
    silently replaced by the measured latency); with both given, both are used; with neither, both are measured."""
    from ember.sched import platform as P
    given = P.dask_workers(2, latency=5e-3)
    assert given.latency[0][1] == given.latency[1][0] == 5e-3 and given.latency[0][0] == 0.0
    assert given.bandwidth[0][1] > 0 and any("as given" in n for n in given.notes)
    both = P.dask_workers(3, bandwidth=1e9, latency=1e-4)
    assert both.bandwidth[0][2] == 1e9 and both.latency[2][1] == 1e-4 and not both.notes
    fixed = P.dask_workers(2, bandwidth=1e9)
    assert fixed.latency[0][1] == 0.0
    measured = P.dask_workers(2)
    assert measured.latency[0][1] > 0 and not any("as given" in n for n in measured.notes)
