"""`ember bench dist`: a workload of independent tasks on K local workers or a Dask cluster, one JSON object per run.

Fields: workload, executor, workers, threads, tasks, log_n, run, seconds (the run's wall time), precision_bits
(worst output against numpy), complete (every output arrived and is within the workload's precision),
workers_lost, tasks_rerun, task_seconds (median of the tasks' own operation times, measured on the workers),
overhead_per_task_s and overhead_definition (ember.sched.overhead: (K * seconds - sum of the tasks' operation
seconds) / tasks -- the worker-seconds per task spent besides its operation: dispatch, moving values, validation,
reporting, idle waits), overhead_breakdown (the local pool's per-task medians: open_s and publish_s on the worker,
prep_s and output_open_s on the client, round_trip_s), he_mul_s (one HE Mul at the tasks' parameters and level,
in one process at the workers' thread count) and overhead_vs_he_mul, efficiency (t_1 / (K t_K) against the same
tasks on one worker, when measured) with one_worker_seconds, task_seconds_one_worker and compute_bound_efficiency
(task_seconds_one_worker / task_seconds: the efficiency the tasks' own slowdown under K concurrent workers allows,
whatever the executor), and predicted_seconds / prediction_error (the makespan predicted before the run from the
two latest earlier runs' measured task times and fitted per-task overhead -- two profiling runs, then each
measured run in turn: profile-guided -- against this run; profile: that fit).
"""
from __future__ import annotations

import math
import statistics
import tempfile
import time
from typing import Callable, Optional

import numpy as np

from .workloads import WORKLOADS

# levels / log_scale per ring for batch and lr (within the 128-bit bound with dnum = 3)
DEFAULT_LEVELS = {12: 3, 13: 5, 14: 8, 15: 12, 16: 24}
MIN_BITS = {"batch": 20.0, "lr": 10.0, "boot": 10.0}


def _params(workload: str, log_n: int, levels: Optional[int], log_scale: Optional[int], dnum: Optional[int],
            insecure: bool):
    import ember
    if workload == "boot":
        return ember.CkksParams.bootstrappable(log_n=log_n, levels=levels or 2, insecure=insecure,
                                               **({"log_scale": log_scale} if log_scale else {}))
    floor = 5 if workload == "lr" else 1   # lr: five products deep
    return ember.CkksParams(log_n=log_n, levels=levels or max(floor, DEFAULT_LEVELS.get(log_n, 8)),
                            log_scale=log_scale or (50 if log_n >= 16 else 40), dnum=3 if dnum is None else dnum,
                            insecure=insecure)


def run(workload: str = "batch", workers: Optional[int] = 2, scheduler: Optional[str] = None,
        executor: str = "pool", log_n: int = 13, tasks: int = 8, runs: int = 3, threads: int = 1,
        levels: Optional[int] = None, log_scale: Optional[int] = None, dnum: Optional[int] = None,
        insecure: bool = False, baseline: bool = True, key_dir: Optional[str] = None, timeout: float = 1800.0,
        emit: Optional[Callable[[dict], None]] = None, progress: bool = False,
        schedule: Optional[str] = None, kill_after: Optional[float] = None, transport: str = "auto") -> list[dict]:
    import ember
    from .keys import KeyBundle, save_eval_keys
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
    if tasks < 1 or runs < 1:
        raise ValueError("--tasks and --runs must be >= 1")
    if scheduler is None and (workers is None or workers < 1):
        raise ValueError("--workers must be >= 1")
    w = WORKLOADS[workload]
    params = _params(workload, log_n, levels, log_scale, dnum, insecure)
    ctx = ember.Context(params, threads=threads)  # (as many threads as a worker: the captured graph's node times)
    rng = np.random.default_rng(1)
    tmp = None
    if workload == "boot":
        keys = ctx.keygen(bootstrapping=True)
        if key_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="ember-keys-")
            key_dir = tmp.name
        save_eval_keys(key_dir, ctx)              # bootstrapping keys, one file each; the secret key stays here
        bundle = KeyBundle.from_directory(key_dir, threads=threads)
    else:
        keys = ctx.keygen(rotations=w["rotations"](ctx.slots))
        bundle = KeyBundle.from_keys(ctx, keys, threads=threads)
    xs = [rng.uniform(-1, 1, ctx.slots) * (0.5 if workload == "lr" else 1.0) for _ in range(tasks)]
    cts = [ctx.encrypt(x, keys.public, level=w["level"]) for x in xs]
    refs = [w["ref"](x) for x in xs]

    # one HE Mul in this process, before any worker starts (nothing else running)
    he_mul = _he_mul_seconds(ctx, cts[0]) if workload != "boot" else None
    if scheduler is not None:
        from .dask_exec import DaskExecutor
        ex = DaskExecutor(ctx, bundle, address=scheduler, transport=transport)
        ex.client.wait_for_workers(1, timeout=120)
        name = "dask"
    elif executor == "dask":
        from .dask_exec import DaskExecutor
        ex = DaskExecutor(ctx, bundle, workers=workers, threads=threads, transport=transport)
        name = "dask-local"
    elif executor == "pool":
        from .pool import LocalPool
        ex = LocalPool(ctx, bundle, workers=workers, threads=threads)
        name = "pool"
    else:
        raise ValueError(f"unknown executor {executor!r}: pool or dask")
    records = []
    try:
        k = len(ex.worker_names())
        if schedule is not None:
            records = _scheduled(ex, ctx, keys, w, cts, refs, k, schedule, runs, timeout, emit,
                                 dict(workload=workload, executor=name, workers=k, threads=threads, tasks=tasks,
                                      log_n=log_n))
            return records
        from ..sched.overhead import ExecutorOverhead, predict_batch
        base = base_task = None
        if baseline and k > 1:      # the same tasks on one worker (all pinned to worker 0)
            ex.map(w["fn"], cts[:1], timeout=timeout)                                   # warm-up
            one = []            # (seconds, task seconds) of each run; its outputs are dropped at once
            for _ in range(runs):
                r = ex.run(_batch(w["fn"], tasks), cts, placement={i: 0 for i in range(tasks)}, timeout=timeout)
                one.append((r.seconds, list(r.node_seconds.values())))
                del r
            base = statistics.median(t for t, _ in one)
            base_task = statistics.median(s for _, ts in one for s in ts)
        del ex.map(w["fn"], cts, timeout=timeout).outputs[:]                             # warm-up: every worker
        fits = []       # two profiling runs: the executor's per-task overhead and the tasks' times, measured
        for _ in range(2):
            prof = ex.map(w["fn"], cts, timeout=timeout)
            fits.append((ExecutorOverhead.fit(prof, k), statistics.median(prof.node_seconds.values())))
            del prof    # (its outputs' memory is reused by the next runs: fresh pages are slow in a VM)
        for i in range(runs):
            # predicted before the run, from the two latest runs' profiles (rolling, as PGO feeds each run back)
            fitted = ExecutorOverhead.mean([f for f, _ in fits[-2:]])
            predicted = predict_batch(statistics.mean(c for _, c in fits[-2:]), tasks, k, fitted)
            bar = _Bar(tasks, f"{workload} run {i + 1}/{runs}") if progress else None
            drill = _kill_timer(ex, kill_after) if kill_after is not None and i == 0 else None
            try:
                res = ex.map(w["fn"], cts, timeout=timeout, progress=bar)
            finally:
                if bar is not None:
                    bar.close()
                if drill is not None:
                    drill.cancel()
            errs = [float(np.abs(ctx.decrypt(o, keys.secret) - r).max()) for o, r in zip(res.outputs, refs)]
            worst = max(errs) if errs else math.inf
            bits = -math.log2(worst) if worst > 0 else 64.0
            ov = ExecutorOverhead.fit(res, k)
            if res.workers_lost == 0:
                fits.append((ov, statistics.median(res.node_seconds.values())))
            task_s = statistics.median(res.node_seconds.values())
            rec = dict(workload=workload, executor=name, workers=k, threads=threads, tasks=tasks, log_n=log_n,
                       transport=getattr(ex, "transport", "shm"), io_threads=getattr(ex, "io_threads", None),
                       run=i + 1, seconds=res.seconds, precision_bits=round(bits, 2),
                       complete=len(res.outputs) == tasks and bits >= MIN_BITS[workload],
                       workers_lost=res.workers_lost, tasks_rerun=res.tasks_rerun,
                       task_seconds=task_s,
                       overhead_per_task_s=ov.per_task_s, overhead_definition=ExecutorOverhead.DEFINITION,
                       overhead_breakdown=ov.breakdown or None,
                       he_mul_s=he_mul, overhead_vs_he_mul=(ov.per_task_s / he_mul) if he_mul else None,
                       efficiency=(base / (k * res.seconds)) if base else None,
                       one_worker_seconds=base, task_seconds_one_worker=base_task,
                       compute_bound_efficiency=(base_task / task_s) if base_task else None,
                       predicted_seconds=predicted, prediction_error=(predicted - res.seconds) / res.seconds,
                       profile=fitted.to_dict())
            del res
            records.append(rec)
            if emit is not None:
                emit(rec)
    finally:
        ex.close()
        if tmp is not None:
            tmp.cleanup()
    return records


def _scheduled(ex, ctx, keys, w, cts, refs, k, algo, runs, timeout, emit, head) -> list[dict]:
    """The batch as a captured graph (one node per operation), placed by a HEFT / PEFT schedule on the K workers;
    the schedule's makespan (predicted) against the measured runs.

    Profile-guided, as the scheduling issue's PGO: two profiling runs (placed by a first schedule from the capture's
    per-node times) give each operation's measured time on the workers (CostTable.update_from_nodes) and the
    executor's per-task overhead (ember.sched.overhead: moving values, dispatch, reporting); before each measured
    run the schedule is recomputed with every node charged its latest measured time plus the two latest runs'
    overhead, and its makespan is the prediction for that run (which is then learnt from in turn). Values move inside the per-task overhead (each task publishes its outputs and opens
    its inputs), so the edges cost nothing more."""
    import ember
    from ..sched.algorithms import ALGORITHMS
    from ..sched.costs import CostTable
    from ..sched.overhead import ExecutorOverhead
    from .program import Program
    with ember.graph(ctx) as g:
        for y in [w["fn"](ctx, c) for c in cts]:
            g.output(y)
    prog = Program.from_graph(g)
    names = [f"worker{i}" for i in range(k)]
    edges = {(u, v): 0 for (u, v) in g.edges()}
    bw = [[1.0 if a == b else 1e18 for b in range(k)] for a in range(k)]

    def schedule(table, overhead=None):
        cost = {n.id: [table.node_seconds(n, "worker")] * k for n in g.nodes}
        if overhead is not None:
            cost = overhead.charge(cost)
        return ALGORITHMS[algo](cost, edges, bw, [[0.0] * k for _ in range(k)], names)
    table = CostTable()
    table.update_from_graph(g, "worker")                               # the capture's times (client, one thread)
    first = schedule(table)
    placement = {t: first.device[t] for t in first.device}
    ex.run(prog, cts, placement=placement, timeout=timeout)            # warm-up
    fits = []

    def learn(res):                                                    # profile-guided: measured on the workers
        table.update_from_nodes("worker", [(t["op"], t["level"], t["seconds"], t["count"])
                                           for t in res.run_record(g)["tasks"]])
        if res.workers_lost == 0:
            fits.append(ExecutorOverhead.fit(res, k))
    for _ in range(2):                                                 # the profiling runs
        learn(ex.run(prog, cts, placement=placement, timeout=timeout))
    out = []
    for i in range(runs):
        fitted = ExecutorOverhead.mean(fits[-2:])                      # the two latest runs' profiles
        s = schedule(table, fitted)
        s_plain = schedule(table)
        placement = {t: s.device[t] for t in s.device}
        res = ex.run(prog, cts, placement=placement, timeout=timeout)
        learn(res)
        errs = [float(np.abs(ctx.decrypt(o, keys.secret) - r).max()) for o, r in zip(res.outputs, refs)]
        bits = -math.log2(max(errs)) if max(errs) > 0 else 64.0
        rec = dict(head, run=i + 1, schedule=algo, graph_nodes=len(g.nodes), seconds=res.seconds,
                   predicted_seconds=s.makespan, prediction_error=(s.makespan - res.seconds) / res.seconds,
                   predicted_without_overhead_s=s_plain.makespan,
                   overhead_per_task_s=fitted.per_task_s, overhead_definition=ExecutorOverhead.DEFINITION,
                   overhead_breakdown=fitted.breakdown or None, precision_bits=round(bits, 2),
                   complete=len(res.outputs) == len(cts) and bits >= 20.0,
                   workers_lost=res.workers_lost, tasks_rerun=res.tasks_rerun,
                   node_seconds_sum=sum(res.node_seconds.values()),
                   cost_source="profile-guided: per-node times and per-task overhead of the two latest runs")
        del res
        out.append(rec)
        if emit is not None:
            emit(rec)
    return out


def _he_mul_seconds(ctx, ct, reps: int = 7) -> float:
    """Median seconds of one HE Mul (relinearized, rescaled) of ct by itself, in this process."""
    ct * ct
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        ct * ct
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _kill_timer(ex, seconds: float):
    """Fault drill: SIGKILL one worker process `seconds` into the run (the local pool's first worker; on Dask, the
    first worker in address order -- by pid from here when it runs on this host, else from inside itself)."""
    import os
    import signal
    import socket
    import sys
    import threading

    def kill():
        if hasattr(ex, "worker_pids"):
            pid = ex.worker_pids()[0]
        else:
            addr = ex.worker_names()[0]
            pid, host = ex.client.run(lambda: (os.getpid(), socket.gethostname()), workers=[addr])[addr]
            if host != socket.gethostname():
                ex.client.run(lambda: os.kill(os.getpid(), signal.SIGKILL), workers=[addr], wait=False)
                print(f"ember bench dist: SIGKILL sent to worker {addr} (pid {pid} on {host})", file=sys.stderr)
                return
        os.kill(pid, signal.SIGKILL)
        print(f"ember bench dist: SIGKILL sent to worker pid {pid}", file=sys.stderr)
    t = threading.Timer(seconds, kill)
    t.daemon = True
    t.start()
    return t


def _batch(fn, n):
    from .program import Program
    return Program.batch(fn, n)


class _Bar:
    """A rich progress bar on stderr (the caller enables it on a terminal only)."""

    def __init__(self, total: int, title: str):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
        self._p = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), transient=True)
        self._p.start()
        self._t = self._p.add_task(title, total=total)
        self._t0 = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        self._p.update(self._t, completed=done)

    def close(self) -> None:
        self._p.stop()
