"""Predicted vs measured makespan on this machine (one CPU device, 2 threads), before and after profile-guided
costs.

    build/venv/bin/python bench/sched/predict.py [--log-n 13] [--runs 3]

1. `ember profile` measures the cost table (every level, median of 5 runs of each operation kind).
2. A real program (HELR iteration + bootstrapping, insecure N = 2^13 parameters) runs once to warm up, then live
   inside a graph capture `runs` times; its wall time is measured around the call.
3. Prediction = the HEFT schedule's makespan on `this:2` from the cost table (one device: the sum of node costs).
4. Profile-guided: the table is updated from run 1's per-node times (the paper's PGO) and runs 2.. are predicted
   again. Prints JSON lines; the machine is a shared 2-core VM (noisy).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import ember
from ember.sched.plan import schedule_graph
from ember.sched.platform import this_machine
from ember.sched.profile import measure


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=13)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    params = ember.CkksParams.bootstrappable(log_n=args.log_n, levels=9, insecure=True)
    table = measure(params, threads=2, runs=5, progress=False)
    f_steps = [1 << i for i in range(8)]
    ctx = ember.Context(params, threads=2)
    s_steps = [256 << i for i in range((ctx.slots // 256).bit_length() - 1)]
    keys = ctx.keygen(rotations=f_steps + s_steps, bootstrapping=True)
    import numpy as np
    rng = np.random.default_rng(0)
    z = ctx.encrypt(rng.uniform(-0.1, 0.1, ctx.slots), keys.public)
    w = ctx.encrypt(rng.uniform(-0.1, 0.1, ctx.slots), keys.public)

    def prog():
        ip = z * w
        for r in f_steps:
            ip = ip + ip.rotate(r)
        sig = 0.5 + ip * 0.15012 - (ip * ip) * (ip * 0.001593)
        grad = z * sig
        for r in s_steps:
            grad = grad + grad.rotate(r)
        return (w + grad * 0.01).bootstrap()
    plat = this_machine(2)
    prog()  # warm-up (first-touch memory, caches), not counted
    graphs, walls = [], []
    for _ in range(args.runs):
        with ember.graph(ctx) as g:
            t0 = time.perf_counter()
            prog()
            walls.append(time.perf_counter() - t0)
        graphs.append(g)
    nodes_s = [sum(n.seconds for n in g.nodes) for g in graphs]
    pred = schedule_graph(graphs[0], plat, table, "heft").makespan
    out = {"log_n": args.log_n, "nodes": len(graphs[0]), "wall_s": walls, "graph_node_s": nodes_s,
           "predicted_from_profile_s": pred,
           "error_vs_node_time": [pred / x - 1 for x in nodes_s], "error_vs_wall": [pred / x - 1 for x in walls]}
    table.update_from_graph(graphs[0], "cpu-2t")
    pgo = [schedule_graph(g, plat, table, "heft").makespan for g in graphs[1:]]
    out.update(predicted_pgo_s=pgo, pgo_error_vs_node_time=[p / x - 1 for p, x in zip(pgo, nodes_s[1:])],
               pgo_error_vs_wall=[p / x - 1 for p, x in zip(pgo, walls[1:])],
               note="node time: the graph's operations (since the circuits use only public operations, all of the "
                    "program's kernels); wall time adds Python and encoding overhead")
    print(json.dumps(out))
    print(f"median wall {statistics.median(walls):.3f} s, node time {statistics.median(nodes_s):.3f} s, "
          f"predicted {pred:.3f} s (profile) / {statistics.median(pgo) if pgo else float('nan'):.3f} s (PGO)")


if __name__ == "__main__":
    main()
