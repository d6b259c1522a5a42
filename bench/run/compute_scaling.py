"""The scaling ceiling of this machine for the batch workload, with no executor at all: K processes each run the
same HE Mul + rotate loop at once (their own Context, keys and ciphertext, one thread each), against one process
alone. Two processes on two cores compute more slowly than one (shared caches, memory bandwidth), which bounds
what any executor's 2-worker efficiency can reach. One JSON line: per-task seconds alone and concurrent, medians
over --rounds rounds, and the implied ceiling t1 / tK.

    build/venv/bin/python bench/run/compute_scaling.py [--log-n 15] [--workers 2] [--tasks 30] [--rounds 3]
"""
import argparse
import json
import multiprocessing as mp
import statistics
import time

import numpy as np

import ember


def _work(log_n, levels, n, start, out):
    ctx = ember.Context(ember.CkksParams(log_n=log_n, levels=levels, log_scale=40, dnum=3), threads=1)
    keys = ctx.keygen(rotations=[1])
    ct = ctx.encrypt(np.random.default_rng(1).uniform(-1, 1, ctx.slots), keys.public)
    (ct * ct).rotate(1)
    out.put("ready")
    start.wait()
    t0 = time.perf_counter()
    for _ in range(n):
        (ct * ct).rotate(1)
    out.put((time.perf_counter() - t0) / n)


def per_task(k, log_n, levels, n):
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=_work, args=(log_n, levels, n, start, out)) for _ in range(k)]
    for p in ps:
        p.start()
    for _ in range(k):
        assert out.get() == "ready"
    start.set()
    res = [out.get() for _ in range(k)]
    for p in ps:
        p.join()
    return statistics.mean(res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=15)
    ap.add_argument("--levels", type=int, default=12)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    alone, together = [], []
    for _ in range(a.rounds):
        alone.append(per_task(1, a.log_n, a.levels, a.tasks))
        together.append(per_task(a.workers, a.log_n, a.levels, a.tasks))
    t1, tk = statistics.median(alone), statistics.median(together)
    print(json.dumps({"log_n": a.log_n, "levels": a.levels, "workers": a.workers, "task_seconds_alone": t1,
                      "task_seconds_concurrent": tk, "speedup_ceiling": a.workers * t1 / tk,
                      "efficiency_ceiling": t1 / tk, "rounds_alone": alone, "rounds_concurrent": together}))


if __name__ == "__main__":
    main()
