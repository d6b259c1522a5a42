"""Predicted vs measured makespan of a graph run on K = 2 local worker processes (ember.run.LocalPool, the
distributed-execution issue), the HEFT schedule pinning nodes to workers.

    build/venv/bin/python bench/sched/predict_dist.py

Costs: `ember profile` at 1 thread (a worker is one process with one thread); bandwidth and latency of the dask:2
platform measured between two local processes. The runs' per-node times then update the table (profile-guided)
when the executor reports them per node id. Prints one JSON line.
"""
import json, statistics, time
import numpy as np
import ember, ember.run
from ember.sched.plan import schedule_graph
from ember.sched.platform import Platform
from ember.sched.profile import measure



def main():
    params = ember.CkksParams(log_n=14, levels=6, log_scale=40, insecure=True)
    table = measure(params, threads=1, runs=5, progress=False)          # cpu-1t: one worker = one thread
    ctx = ember.Context(params, threads=1)
    keys = ctx.keygen(rotations=[1, 2, 4, 8])
    rng = np.random.default_rng(0)
    xs = [ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public) for _ in range(4)]
    with ember.graph(ctx) as g:             # 4 independent branches then a reduction: parallelism 4
        parts = []
        for x in xs:
            y = x * x
            for r in (1, 2, 4, 8):
                y = y + y.rotate(r)
            parts.append(y * y)
        out = (parts[0] + parts[1]) * (parts[2] + parts[3])
        g.output(out)
    plat = Platform.preset("dask:2")                   # 2 workers, bandwidth measured between two processes
    s = schedule_graph(g, plat, table, "heft")
    pred = s.makespan
    with ember.run.LocalPool(ctx, keys, workers=2) as pool:
        pool.run_graph(g, xs, schedule=s)               # warm-up
        meas = []
        for _ in range(3):
            res = pool.run_graph(g, xs, schedule=s)
            meas.append(res.seconds)
        table.update_from_run({"tasks": [{"op": n.op, "level": n.level, "seconds": res.node_seconds[n.id], "device": "cpu-1t"}
                                         for n in g.nodes if n.id in res.node_seconds]}) if isinstance(res.node_seconds, dict) else None
        pgo = schedule_graph(g, plat, table, "heft").makespan
    print(json.dumps({"nodes": len(g), "bandwidth": plat.bandwidth[0][1], "predicted_s": pred, "measured_s": meas,
                      "error_vs_median": pred / statistics.median(meas) - 1, "predicted_pgo_s": pgo,
                      "pgo_error_vs_median": pgo / statistics.median(meas) - 1}))


if __name__ == '__main__':
    main()
