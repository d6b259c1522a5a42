"""Predicted vs measured makespan of a graph run on K = 2 local worker processes (ember.run.LocalPool, the
distributed-execution issue), the HEFT schedule pinning nodes to workers. Profile-guided (the scheduling issue's
PGO): a profiling run's per-node times update the cost table and its records give the executor's per-task
overhead (ember.sched.overhead), which every node is charged; the schedule's makespan is then the prediction for
the runs that follow.

    build/venv/bin/python bench/sched/predict_dist.py [--log-n 14] [--runs 5]

Costs before the profiling run: `ember profile` at 1 thread (a worker is one process with one thread); bandwidth
and latency of the dask:2 platform measured between two local processes. Prints one JSON line: the prediction
from the table alone (no executor overhead, as before), and the profile-guided one, each against the median of
the measured runs.
"""
import argparse
import json
import statistics

import numpy as np

import ember
import ember.run
from ember.sched.overhead import ExecutorOverhead
from ember.sched.plan import schedule_graph
from ember.sched.platform import Platform
from ember.sched.profile import measure


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=14)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    params = ember.CkksParams(log_n=a.log_n, levels=6, log_scale=40, insecure=True)
    table = measure(params, threads=1, runs=5, progress=False)          # cpu-1t: one worker = one thread
    ctx = ember.Context(params, threads=1)
    keys = ctx.keygen(rotations=[1, 2, 4, 8])
    rng = np.random.default_rng(0)
    vals = [rng.uniform(-1, 1, ctx.slots) for _ in range(4)]
    xs = [ctx.encrypt(v, keys.public) for v in vals]
    with ember.graph(ctx) as g:             # 4 independent branches then a reduction: parallelism 4
        parts = []
        for x in xs:
            y = x * x
            for r in (1, 2, 4, 8):
                y = y + y.rotate(r)
            parts.append(y * y)
        out = (parts[0] + parts[1]) * (parts[2] + parts[3])
        g.output(out)
    ref_parts = []
    for v in vals:
        y = v * v
        for r in (1, 2, 4, 8):
            y = y + np.roll(y, -r)
        ref_parts.append(y * y)
    ref = (ref_parts[0] + ref_parts[1]) * (ref_parts[2] + ref_parts[3])
    plat = Platform.preset("dask:2")                   # 2 workers, bandwidth measured between two processes
    s0 = schedule_graph(g, plat, table, "heft")
    with ember.run.LocalPool(ctx, keys, workers=2) as pool:
        pool.run_graph(g, xs, schedule=s0)              # warm-up
        fits = []
        for _ in range(2):                              # profiling runs
            prof = pool.run_graph(g, xs, schedule=s0)
            table.update_from_nodes("cpu-1t", [(t["op"], t["level"], t["seconds"], t["count"])
                                               for t in prof.run_record(g)["tasks"]])
            fits.append(ExecutorOverhead.fit(prof, 2))
        fitted = ExecutorOverhead.mean(fits)
        plain = schedule_graph(g, plat, table, "heft")
        s = schedule_graph(g, plat, table, "heft", overhead=fitted)
        meas, errs = [], []
        for _ in range(a.runs):
            res = pool.run_graph(g, xs, schedule=s)
            meas.append(res.seconds)
            errs.append(float(np.abs(ctx.decrypt(res.outputs[0], keys.secret) - ref).max() / np.abs(ref).max()))
    m = statistics.median(meas)
    print(json.dumps({"log_n": a.log_n, "nodes": len(g), "workers": 2, "bandwidth": plat.bandwidth[0][1],
                      "predicted_table_only_s": s0.makespan, "table_only_error": s0.makespan / m - 1,
                      "predicted_pgo_no_overhead_s": plain.makespan, "pgo_no_overhead_error": plain.makespan / m - 1,
                      "predicted_s": s.makespan, "measured_s": meas, "measured_median_s": m,
                      "error_vs_median": s.makespan / m - 1,
                      "errors": [s.makespan / x - 1 for x in meas],
                      "executor_overhead": fitted.to_dict(), "max_relative_error_vs_numpy": max(errs)}))


if __name__ == '__main__':
    main()
