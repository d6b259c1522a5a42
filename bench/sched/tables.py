"""Regenerates the paper's Tables 1 and 2 (heterogeneous-computing paper 004, Section 4.2) with Ember's own programs,
and the scheduling-speed figures.

    build/venv/bin/python bench/sched/tables.py [--log-n 16] [--host-costs bench/sched/cpu_n16_2t.json] [--out DIR]

Graphs (captured symbolically: no keys, no arithmetic): one N = 2^16 bootstrapping, one HELR iteration with its
bootstrapping, the same two with their hoisted baby-step sets split (ember.graph.split_hoisted), the same two
data-parallel over the RNS limbs (ember.sched.limbs: one limb share per accelerator; a 1-device row keeps the best
of 1, 2 and 4 shares), and, when ember.apps provides them, LoLa-MNIST / LoLa-CIFAR and the HELR application's own
training cycle ("LR app": ember.apps.graph_of("helr"), unsplit and over the limbs). Devices: the host CPU is timed by this
machine's measured cost table (`ember profile`, 2 threads) when --host-costs is given, else by the simulator's CPU
model; FPGAs (U280) and GPUs (H100) are MODELLED by the simulator -- no such device was run. Prints JSON lines and
writes tables.md (markdown) and tables.json to --out.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from ember import sched
from ember.graph import Graph, split_hoisted
from ember.sched import bounds
from ember.sched import costs as C
from ember.graph import programs
from ember.sched.limbs import limb_split
from ember.sched.plan import default_costs, schedule_graph, schedule_problem
from ember.sched.platform import paper

SPLIT_PARTS = 8  # the largest baby-step set of the bootstrapping's linear transforms: one rotation per part
TABLE2 = [(1, 0), (2, 0), (4, 0), (0, 1), (0, 2), (0, 4), (1, 3), (2, 2), (3, 1)]
# data-parallel over the limbs (the application's HELR cycle only when ember.apps is there)
LIMBS = {"Bootstrapping (limbs)": "Bootstrapping", "LR (limbs)": "LR", "LR app (limbs)": "LR app"}


def solve(name: str, g: Graph, plat, costs, algo: str, parts: int = 1, seed: int = 0):
    """A schedule of graph g: for the limb variants, of its limb-split problem with `parts` shares."""
    if name not in LIMBS:
        return schedule_graph(g, plat, costs, algo, seed=seed)
    return schedule_problem(limb_split(g, plat, costs, parts), algo, seed)


def graphs(log_n: int) -> dict[str, Graph]:
    out = {"Bootstrapping": programs.boot_graph(log_n=log_n), "LR": programs.lr_toy_graph(log_n=log_n)}
    # the same graphs with each hoisted baby-step set split into its ModUp and its rotations (ember.graph.split_hoisted:
    # the parts cost exactly what the node cost), so that the rotations can run on different devices
    for name in ("Bootstrapping", "LR"):
        out[f"{name} (split)"] = split_hoisted(out[name], parts=SPLIT_PARTS)
    try:
        import ember.apps as apps  # the applications issue (LoLa CNNs, HELR training)
        # "LR app": HELR training as ember.apps.logreg runs it (EncryptedLogisticRegression's defaults: 1024 x 256,
        # 4 ciphertexts and 4 lanes per batch, one plain iteration, the packing one, bootstrapping, unpacking)
        for name, key in (("MNIST", "lola-mnist"), ("Cifar10", "lola-cifar"), ("LR app", "helr")):
            build = getattr(apps, "graph_of", None)
            if build is not None:
                out[name] = build(key)  # the application's own parameters
    except ModuleNotFoundError:
        print("# ember.apps not available: LoLa-MNIST / CIFAR / HELR-app graphs skipped (applications issue)",
              file=sys.stderr)
    for name, of in LIMBS.items():
        if of in out:
            out[name] = out[of]
    return out


def cost_table(g: Graph, host_costs: str | None) -> C.CostTable:
    t = C.CostTable()
    if host_costs:
        m = C.CostTable.load(host_costs)
        gp, tp = g.meta.get("params", {}), m.devices.get("cpu-2t", {}).get("params", {})
        # measured figures only for the parameters they were measured at; other graphs get the CPU model
        if gp.get("log_n") == tp.get("log_n") and gp.get("levels") == tp.get("levels"):
            t.merge(m)
    return t


def run(args) -> dict:
    res: dict = {"table1": {}, "table2": {}, "speed": {}, "notes": []}
    gs = graphs(args.log_n)
    host = "cpu-2t" if args.host_costs else "cpu"
    res["notes"].append(f"host CPU timed by {'measured ' + args.host_costs + ' for graphs at its parameters, else ' if args.host_costs else ''}"
                        "the simulator's CPU model (modelled); FPGA = fpga-u280 model, GPU = h100 model: MODELLED; "
                        "LoLa graphs at ember.apps' own parameters")
    for name, g in gs.items():
        base = cost_table(g, args.host_costs)
        # Table 1: 2 FPGA + 2 GPU + host, naive vs HEFT vs PEFT
        plat = paper(2, 2, host_model=host)
        costs = default_costs(g, plat, base)
        row = {}
        for algo in ("naive", "heft", "peft", "best", "best-dup"):
            t0 = time.perf_counter()
            s = solve(name, g, plat, costs, algo, parts=4, seed=args.seed)
            dt = time.perf_counter() - t0
            s.validate()
            row[algo] = {"makespan_ms": s.makespan * 1e3, "schedule_s": dt, "utilisation": s.utilisation,
                         "cp_bound_ms": s.cp_min * 1e3}
            print(json.dumps({"table": 1, "program": name, "nodes": len(g), "algo": algo, **row[algo]}))
        res["table1"][name] = row
        # Table 2: configurations
        row2 = {}
        for f, gp in TABLE2:
            plat = paper(f, gp, host_model=host)
            costs = default_costs(g, plat, base)
            best, parts_used = None, 1
            # the limb variants: one share per accelerator; one device: the best of 1, 2 and 4 shares
            for parts in ((1, 2, 4) if f + gp == 1 else (f + gp,)) if name in LIMBS else (1,):
                trial = {}
                for algo in ("heft", "peft", "best"):
                    s_try = solve(name, g, plat, costs, algo, parts)
                    s_try.validate()
                    trial[algo] = (s_try.makespan * 1e3, s_try)
                if best is None or min(v[0] for v in trial.values()) < min(v[0] for v in best.values()):
                    best, parts_used = trial, parts
            s = best["best"][1]
            best = {a: v[0] for a, v in best.items()}
            # lower bounds on ANY schedule (ember.sched.bounds): the critical path at each node's fastest device,
            # the work over the devices' speeds, and the communication-aware segment bound; the old
            # "work / all devices" (the host counted as a whole device) is kept for comparison
            lb = bounds.lower_bound(s.problem)
            naive_work = sum(min(r) for r in s.problem.w) / len(plat.devices) * 1e3
            if min(best.values()) < lb["bound"] * 1e3 * (1 - 1e-9):
                raise AssertionError(f"{name} {f}F+{gp}G: a schedule beats the lower bound {lb}")
            # with task duplication (copies of producers instead of slow transfers): the single-run segment bound
            # does not hold for it, bound_with_copies (its segment bound without transfer terms) does
            if name in LIMBS:  # task duplication on the limb-split problems: not run (10 s each, little to copy)
                sd = s
            else:
                sd = schedule_graph(g, plat, costs, "best-dup")
                sd.validate()
            if sd.makespan < lb["bound_with_copies"] * (1 - 1e-9) or sd.makespan > s.makespan * (1 + 1e-12):
                raise AssertionError(f"{name} {f}F+{gp}G: best-dup {sd.makespan} against best {s.makespan}, {lb}")
            row2[f"{f}F+{gp}G"] = {**best, "cp_bound_ms": lb["cp"] * 1e3, "work_bound_ms": lb["work"] * 1e3,
                                   "segment_bound_ms": lb["segments"] * 1e3, "sync_tasks": lb["sync_tasks"],
                                   "work_over_all_devices_ms": naive_work,
                                   "classic_bound_ms": max(lb["cp"] * 1e3, naive_work), "bound_ms": lb["bound"] * 1e3,
                                   "dup": sd.makespan * 1e3, "dup_copies": sum(len(x) for x in sd.copies.values()),
                                   "bound_with_copies_ms": lb["bound_with_copies"] * 1e3, "limb_parts": parts_used,
                                   "tasks": len(s.problem.tasks)}
            if name in LIMBS:
                row2[f"{f}F+{gp}G"]["dup"] = None
            print(json.dumps({"table": 2, "program": name, "config": f"{f}F+{gp}G", **row2[f"{f}F+{gp}G"]}))
        res["table2"][name] = row2
    # speed: the N = 2^16 bootstrapping graph, and a 100,000-node graph (random DAG, 2 inputs per task)
    plat = paper(2, 2, host_model=host)
    for tag, key in (("boot", "Bootstrapping"), ("boot_split", "Bootstrapping (split)")):
        g = gs[key]
        costs = default_costs(g, plat, cost_table(g, args.host_costs))
        for algo in ("heft", "peft", "best", "best-dup"):
            t0 = time.perf_counter()
            schedule_graph(g, plat, costs, algo)
            res["speed"][f"{tag}_{algo.replace('-', '_')}_s"] = time.perf_counter() - t0
        res["speed"][f"{tag}_nodes"] = len(g)
    rng = random.Random(0)
    n = 100_000
    cost = {i: [rng.uniform(1e-3, 2e-2) for _ in range(5)] for i in range(n)}
    edges = {(u, v): 1.8e6 for v in range(1, n) for u in rng.sample(range(max(0, v - 50), v), min(2, v))}
    bw = plat.bandwidth
    for algo in ("heft", "peft"):
        t0 = time.perf_counter()
        sched.ALGORITHMS[algo](cost, edges, bw)
        res["speed"][f"random100k_{algo}_s"] = time.perf_counter() - t0
    print(json.dumps({"speed": res["speed"]}))
    return res


def markdown(res: dict) -> str:
    progs = list(res["table1"])
    lines = ["Table 1: makespan (ms) and speedup over naive, 2 FPGA + 2 GPU + host (FPGA/GPU modelled)", "",
             "| Scheduling | " + " | ".join(progs) + " |", "|---|" + "---|" * len(progs)]
    for algo in ("naive", "heft", "peft", "best", "best-dup"):
        cells = []
        for p in progs:
            r = res["table1"][p]
            cells.append(f"{r[algo]['makespan_ms']:.2f} ({r['naive']['makespan_ms'] / r[algo]['makespan_ms']:.2f}x)")
        lines.append(f"| {algo.upper()} | " + " | ".join(cells) + " |")
    lines += ["", "Table 2: makespan (ms), HEFT / PEFT / best, each with the host CPU; in brackets a lower bound on any "
              "schedule (ember.sched.bounds: critical path, work over the devices' speeds, and the communication-aware "
              "segment bound)", "",
              "| Design | " + " | ".join(progs) + " |", "|---|" + "---|" * len(progs)]
    for f, g in TABLE2:
        k = f"{f}F+{g}G"
        cells = [f"{res['table2'][p][k]['heft']:.2f} / {res['table2'][p][k]['peft']:.2f} / {res['table2'][p][k]['best']:.2f} "
                 f"(>= {res['table2'][p][k]['bound_ms']:.2f})"
                 for p in progs]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "Table 2b: with task duplication (best-dup: sched.best(duplicate=True)), makespan (ms) and copies; "
              "in brackets the bound that holds for schedules with copies (ember.sched.bounds: critical path, work over "
              "the devices' speeds, segment bound without transfer terms)", "", "| Design | " + " | ".join(progs) + " |", "|---|" + "---|" * len(progs)]
    for f, g in TABLE2:
        k = f"{f}F+{g}G"
        cells = [f"{res['table2'][p][k]['dup']:.2f}, {res['table2'][p][k]['dup_copies']} copies "
                 f"(>= {res['table2'][p][k]['bound_with_copies_ms']:.2f})" if res['table2'][p][k]['dup'] is not None
                 else "-" for p in progs]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "Scaling (the shortest of HEFT / PEFT / best; in brackets the most any schedule could reach over "
              "this 1-device schedule: its makespan / the lower bound, then the same with the classic bound "
              "max(critical path, work / all devices)):", ""]
    dups = []
    for p in progs:
        t = res["table2"][p]
        for kind, one, two, four in (("FPGA", "1F+0G", "2F+0G", "4F+0G"), ("GPU", "0F+1G", "0F+2G", "0F+4G")):
            top = lambda c: min(t[c][a] for a in ("heft", "peft", "best"))  # noqa: E731
            b1 = top(one)
            r2 = b1 / top(two)
            r4 = b1 / top(four)
            lines.append(f"- {p}, {kind}: 1 -> 2: {r2:.2f}x (<= {b1 / t[two]['bound_ms']:.2f}x; classic "
                         f"{b1 / t[two]['classic_bound_ms']:.2f}x), 1 -> 4: {r4:.2f}x (<= {b1 / t[four]['bound_ms']:.2f}x; "
                         f"classic {b1 / t[four]['classic_bound_ms']:.2f}x)")
            if t[one]["dup"] is None:
                continue
            # with duplication allowed (on 1 device there is nothing to copy: the same 1-device schedules)
            d1 = min(b1, t[one]["dup"])
            dups.append(f"- {p}, {kind}: 1 -> 2: {d1 / t[two]['dup']:.2f}x (<= {d1 / t[two]['bound_with_copies_ms']:.2f}x), "
                        f"1 -> 4: {d1 / t[four]['dup']:.2f}x (<= {d1 / t[four]['bound_with_copies_ms']:.2f}x)")
    lines += ["", "Scaling with task duplication (best-dup; in brackets the most the bound for schedules with copies "
              "allows):", ""] + dups
    lim = [p for p in progs if p in LIMBS]
    if lim:
        lines += ["", "Limb variants (ember.sched.limbs): shares per configuration and tasks, " + "; ".join(
            f"{p}: " + ", ".join(f"{k} {v['limb_parts']} ({v['tasks']} tasks)" for k, v in res["table2"][p].items())
            for p in lim) + "; Table 1 with 4 shares. Task duplication not run on them (Table 2b: -)."]
    lines += ["", "Speed: " + json.dumps(res["speed"]), ""] + ["Note: " + n for n in res["notes"]]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--host-costs", default=None, help="measured CPU cost table (ember profile -o), device cpu-2t")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="directory for tables.md and tables.json")
    args = ap.parse_args()
    res = run(args)
    md = markdown(res)
    print(md, file=sys.stderr)
    if args.out:
        d = Path(args.out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "tables.md").write_text(md)
        (d / "tables.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
