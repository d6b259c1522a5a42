"""`ember bench dist`: a workload of independent tasks on K local workers or a Dask cluster, one JSON object per run.

Fields: workload, executor, workers, threads, tasks, log_n, params (the parameter set), run, seconds (the run's wall
time), precision_bits (worst output against numpy), complete (every output arrived and is within the workload's
precision), workers_lost, tasks_rerun, task_seconds (median of the tasks' own operation times, measured on the workers),
overhead_per_task_s and overhead_definition (ember.sched.overhead: (K * seconds - sum of the tasks' operation seconds) /
tasks -- the worker-seconds per task spent besides its operation: dispatch, moving values, validation, reporting, idle
waits), overhead_breakdown (the local pool's per-task medians: open_s and publish_s on the worker, prep_s and
output_open_s on the client, round_trip_s), he_mul_s (one HE Mul at the tasks' parameters and level, in one process at
the workers' thread count) and overhead_vs_he_mul, efficiency (t_1 / (K t_K) against the same tasks on one worker, when
measured) with one_worker_seconds, task_seconds_one_worker and compute_bound_efficiency (task_seconds_one_worker /
task_seconds: the efficiency the tasks' own slowdown under K concurrent workers allows, whatever the executor), and
predicted_seconds / prediction_error (the makespan predicted before the run from the two latest earlier runs' measured
task times and fitted per-task overhead -- two profiling runs, then each measured run in turn: profile-guided -- against
this run; profile: that fit), and phases: for each phase before the measured runs (baseline: the one-worker runs;
warm-up; profiling), its runs, workers_lost, tasks_rerun and the worst precision_bits of its outputs -- a fault there is
reported too, not only in the runs printed.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import tempfile
import time
from typing import Callable, Optional

import numpy as np

from .workloads import WORKLOADS

# levels per ring for batch and lr (the README's and bench/'s figures were measured with them), clamped to the
# 128-bit bound at the run's log_scale and dnum unless --insecure
DEFAULT_LEVELS = {12: 3, 13: 5, 14: 8, 15: 12, 16: 24}
MIN_BITS = {"batch": 20.0, "lr": 10.0, "boot": 10.0}
MIN_LEVELS = {"batch": 1, "lr": 5}     # lr: five products deep


def default_levels(workload: str, log_n: int, log_scale: int, dnum: int, insecure: bool) -> int:
    """Return the levels of batch and lr when --levels is not given.

    DEFAULT_LEVELS at this ring (8 beyond the table), at least the workload's depth, and -- unless insecure -- no
    more than the 128-bit bound allows (CkksParams.max_secure_levels: 24 at N = 2^16 with a 50-bit scale, 5 at
    N = 2^14 with a 40-bit one).

    Parameters
    ----------
    workload : {"batch", "lr"}
        The workload.
    log_n : int
        log2 of the ring degree.
    log_scale : int
        Bits of the scale.
    dnum : int
        The key-switching decomposition number.
    insecure : bool
        Skip the 128-bit bound.

    Returns
    -------
    int
        The number of levels.

    Raises
    ------
    ValueError
        If the workload's depth does not fit the bound at this ring (naming the bound).
    """
    floor = MIN_LEVELS[workload]
    want = max(floor, DEFAULT_LEVELS.get(log_n, 8))
    if insecure:
        return want
    from ..params import CkksParams
    most = CkksParams.max_secure_levels(log_n, log_scale, 60, dnum)
    if most < floor:
        from .. import max_log_qp_128
        raise ValueError(f"the {workload} workload needs {floor} level(s), and no parameter set at log_n={log_n} "
                         f"(log_scale {log_scale}, dnum {dnum}) has {floor} within the 128-bit bound (log QP <= "
                         f"{max_log_qp_128(log_n)}); use a larger --log-n, or --insecure")
    return min(want, most)


def _params(workload: str, log_n: int, levels: Optional[int], log_scale: Optional[int], dnum: Optional[int],
            insecure: bool):
    from ..params import CkksParams
    if workload == "boot":
        return CkksParams.bootstrappable(log_n=log_n, levels=levels or 2, insecure=insecure,
                                         **({"log_scale": log_scale} if log_scale else {}))
    log_scale = log_scale or (50 if log_n >= 16 else 40)
    dnum = 3 if dnum is None else dnum
    levels = levels or default_levels(workload, log_n, log_scale, dnum, insecure)
    return CkksParams(log_n=log_n, levels=levels, log_scale=log_scale, dnum=dnum, insecure=insecure)


def run(workload: str = "batch", workers: Optional[int] = 2, scheduler: Optional[str] = None,
        executor: str = "pool", log_n: int = 16, tasks: int = 8, runs: int = 3, threads: int = 1,
        levels: Optional[int] = None, log_scale: Optional[int] = None, dnum: Optional[int] = None,
        insecure: bool = False, baseline: bool = True, key_dir: Optional[str] = None, timeout: float = 1800.0,
        emit: Optional[Callable[[dict], None]] = None, progress: bool = False,
        schedule: Optional[str] = None, kill_after: Optional[float] = None, transport: str = "auto",
        kill_phase: str = "run", note: Optional[Callable[[str], None]] = None) -> list[dict]:
    """Run the benchmark and return its records (module docstring), each also passed to `emit`.

    Every phase -- the one-worker baseline, the warm-up, the two profiling runs, the measured runs -- reports the
    workers it lost and the tasks it ran again, and the worst precision of its outputs: each record carries the
    earlier phases' under ``phases`` (a worker lost before the measured runs is never silent), and `note` is told
    as it happens.

    Parameters
    ----------
    workload : {"batch", "lr", "boot"}, optional
        The workload (ember.run.workloads; default "batch").
    workers : int, optional
        Workers of the local pool or local Dask cluster (default 2).
    scheduler : str, optional
        A Dask scheduler address: run on that cluster instead (`executor` is then ignored).
    executor : {"pool", "dask"}, optional
        The local pool or a local Dask cluster (default "pool").
    log_n : int, optional
        log2 of the ring degree (default 16).
    tasks : int, optional
        Tasks per run (default 8).
    runs : int, optional
        Measured runs (default 3).
    threads : int, optional
        Threads of each worker's Context and of the client's (default 1).
    levels, log_scale, dnum : int, optional
        The parameter set's levels (default: :func:`default_levels`; 2 for boot), scale bits (default 50 at
        log_n >= 16, else 40; boot: the bootstrappable default) and dnum (default 3).
    insecure : bool, optional
        Allow parameters beyond the 128-bit bound (default False).
    baseline : bool, optional
        Also time the tasks on one worker, for the efficiency (default True; skipped with one worker).
    key_dir : str, optional
        The key directory of the boot workload (default: a temporary one).
    timeout : float, optional
        Seconds each run may take (default 1800).
    emit : callable, optional
        Called with each record as it is made.
    progress : bool, optional
        Show a progress bar during the measured runs (default False).
    schedule : str, optional
        A scheduling algorithm of ember.sched ("heft", "peft", ...): run the batch as a captured graph placed by
        it (profile-guided) instead of as independent tasks.
    kill_after : float, optional
        The fault drill: SIGKILL one worker process `kill_after` seconds into the first run of `kill_phase` (0:
        just before it starts). None (the default): no drill.
    transport : str, optional
        The Dask executor's transport (default "auto").
    kill_phase : {"baseline", "warm-up", "profiling", "run"}, optional
        The phase of the fault drill (default "run").
    note : callable, optional
        Called with a line of text on every fault (the command line prints it on stderr).

    Returns
    -------
    list of dict
        One record per measured run.

    Raises
    ------
    ValueError
        If an argument is invalid.
    """
    import ember
    from .keys import KeyBundle, save_eval_keys
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
    if kill_phase not in PHASES:
        raise ValueError(f"kill_phase must be one of {', '.join(PHASES)}, got {kill_phase!r}")
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
    faults = _Phases(ctx, keys, refs, MIN_BITS[workload], note,
                     (kill_phase, kill_after) if kill_after is not None else None, ex)
    try:
        k = len(ex.worker_names())
        if schedule is not None:
            records = _scheduled(ex, ctx, keys, w, cts, refs, k, schedule, runs, timeout, emit,
                                 dict(workload=workload, executor=name, workers=k, threads=threads, tasks=tasks,
                                      log_n=log_n, params=params.to_dict()), faults)
            return records
        from ..sched.overhead import ExecutorOverhead, predict_batch
        base = base_task = None
        if baseline and k > 1:      # the same tasks on one worker (all pinned to worker 0)
            with faults.phase("baseline") as ph:
                ph.check(ex.map(w["fn"], cts[:1], timeout=timeout), refs[:1])                 # warm-up
                one = []            # (seconds, task seconds) of each run; its outputs are dropped at once
                for _ in range(runs):
                    r = ex.run(_batch(w["fn"], tasks), cts, placement={i: 0 for i in range(tasks)}, timeout=timeout)
                    ph.check(r)
                    one.append((r.seconds, list(r.node_seconds.values())))
                    del r
            base = statistics.median(t for t, _ in one)
            base_task = statistics.median(s for _, ts in one for s in ts)
        with faults.phase("warm-up") as ph:                                                   # every worker
            r = ex.map(w["fn"], cts, timeout=timeout)
            ph.check(r)
            del r
        fits = []       # two profiling runs: the executor's per-task overhead and the tasks' times, measured
        with faults.phase("profiling") as ph:
            for attempt in range(4):    # a run that lost a worker (its time holds the recovery) is run again
                prof = ex.map(w["fn"], cts, timeout=timeout)
                ph.check(prof)
                if prof.workers_lost == 0 or attempt >= 2:
                    fits.append((ExecutorOverhead.fit(prof, k), statistics.median(prof.node_seconds.values())))
                del prof    # (its outputs' memory is reused by the next runs: fresh pages are slow in a VM)
                if len(fits) == 2:
                    break
        for i in range(runs):
            # predicted before the run, from the two latest runs' profiles (rolling, as PGO feeds each run back)
            fitted = ExecutorOverhead.mean([f for f, _ in fits[-2:]])
            predicted = predict_batch(statistics.mean(c for _, c in fits[-2:]), tasks, k, fitted)
            bar = _Bar(tasks, f"{workload} run {i + 1}/{runs}") if progress else None
            try:
                with faults.phase("run") as ph:
                    res = ex.map(w["fn"], cts, timeout=timeout, progress=bar)
                    bits = ph.check(res)
            finally:
                if bar is not None:
                    bar.close()
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
                       profile=fitted.to_dict(), phases=faults.before_runs(), params=params.to_dict())
            del res
            records.append(rec)
            if emit is not None:
                emit(rec)
    finally:
        ex.close()
        if tmp is not None:
            tmp.cleanup()
    return records


def _scheduled(ex, ctx, keys, w, cts, refs, k, algo, runs, timeout, emit, head, faults) -> list[dict]:
    """Run the batch as a captured graph placed by a HEFT / PEFT schedule on the K workers; return the records.

    One node per operation; the schedule's makespan (predicted) against the measured runs.

    Profile-guided, as the scheduling issue's PGO: two profiling runs (placed by a first schedule from the capture's
    per-node times) give each operation's measured time on the workers (CostTable.update_from_nodes) and the
    executor's per-task overhead (ember.sched.overhead: moving values, dispatch, reporting); before each measured
    run the schedule is recomputed with every node charged its latest measured time plus the two latest runs'
    overhead, and its makespan is the prediction for that run (which is then learnt from in turn). Values move
    inside the per-task overhead (each task publishes its outputs and opens its inputs), so the edges cost nothing
    more.
    """
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
    with faults.phase("warm-up") as ph:
        ph.check(ex.run(prog, cts, placement=placement, timeout=timeout))
    fits = []

    def learn(res):                                                    # profile-guided: measured on the workers
        table.update_from_nodes("worker", [(t["op"], t["level"], t["seconds"], t["count"])
                                           for t in res.run_record(g)["tasks"]])
        if res.workers_lost == 0:
            fits.append(ExecutorOverhead.fit(res, k))
    with faults.phase("profiling") as ph:
        for _ in range(2):                                             # the profiling runs
            res = ex.run(prog, cts, placement=placement, timeout=timeout)
            ph.check(res)
            learn(res)
    out = []
    for i in range(runs):
        fitted = ExecutorOverhead.mean(fits[-2:])                      # the two latest runs' profiles
        s = schedule(table, fitted)
        s_plain = schedule(table)
        placement = {t: s.device[t] for t in s.device}
        with faults.phase("run") as ph:
            res = ex.run(prog, cts, placement=placement, timeout=timeout)
            bits = ph.check(res)
        learn(res)
        rec = dict(head, run=i + 1, schedule=algo, graph_nodes=len(g.nodes), seconds=res.seconds,
                   predicted_seconds=s.makespan, prediction_error=(s.makespan - res.seconds) / res.seconds,
                   predicted_without_overhead_s=s_plain.makespan,
                   overhead_per_task_s=fitted.per_task_s, overhead_definition=ExecutorOverhead.DEFINITION,
                   overhead_breakdown=fitted.breakdown or None, precision_bits=round(bits, 2),
                   complete=len(res.outputs) == len(cts) and bits >= 20.0,
                   workers_lost=res.workers_lost, tasks_rerun=res.tasks_rerun,
                   node_seconds_sum=sum(res.node_seconds.values()),
                   cost_source="profile-guided: per-node times and per-task overhead of the two latest runs",
                   phases=faults.before_runs())
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


PHASES = ("baseline", "warm-up", "profiling", "run")


class _Phases:
    """Per phase of a benchmark: its runs, the workers they lost, the tasks they ran again and the worst precision.

    The precision of the outputs is against the numpy references; `note` hears of every fault as it happens. The
    fault drill kills a worker in the first run of its phase.
    """

    def __init__(self, ctx, keys, refs, min_bits: float, note, drill, ex):
        self.ctx, self.keys, self.refs, self.min_bits, self.note = ctx, keys, refs, min_bits, note
        self.drill, self.ex = drill, ex
        self.stats: dict[str, dict] = {}
        self.current: Optional[str] = None

    @contextlib.contextmanager
    def phase(self, name: str):
        self.current = name
        self.stats.setdefault(name, dict(runs=0, workers_lost=0, tasks_rerun=0, precision_bits=None))
        timer = None
        if self.drill is not None and self.drill[0] == name:
            timer = _kill_timer(self.ex, self.drill[1], self.note)
            self.drill = None                     # once
        try:
            yield self
        finally:
            if timer is not None:
                timer.cancel()
            self.current = None

    def check(self, res, refs=None) -> float:
        """Record a run of the current phase; return its outputs' worst precision in bits (64: exact)."""
        refs = self.refs if refs is None else refs
        errs = [float(np.abs(self.ctx.decrypt(o, self.keys.secret) - r).max()) for o, r in zip(res.outputs, refs)]
        worst = max(errs) if errs else math.inf
        bits = -math.log2(worst) if worst > 0 else 64.0
        st = self.stats[self.current]
        st["runs"] += 1
        st["workers_lost"] += res.workers_lost
        st["tasks_rerun"] += res.tasks_rerun
        st["precision_bits"] = round(bits if st["precision_bits"] is None else min(st["precision_bits"], bits), 2)
        if (res.workers_lost or res.tasks_rerun) and self.note is not None:
            ok = "all outputs within the workload's precision" if bits >= self.min_bits else \
                f"outputs only {bits:.1f} bits precise"
            self.note(f"ember bench dist: {self.current} phase: {res.workers_lost} worker(s) lost, "
                      f"{res.tasks_rerun} task(s) run again ({ok})")
        return bits

    def before_runs(self) -> dict:
        """Return the phases before the measured runs, as the records report them."""
        return {k: dict(v) for k, v in self.stats.items() if k != "run"}


def _kill_timer(ex, seconds: float, note=None):
    """Fault drill: SIGKILL one worker process `seconds` into the run; return the timer (None when done at once).

    The local pool's first worker; on Dask, the first worker in address order -- by pid from here when it runs on
    this host, else from inside itself. 0 seconds: at once, before the run starts. `note` hears what was killed.
    """
    import os
    import signal
    import socket
    import threading

    say = note or (lambda msg: None)

    def kill():
        if hasattr(ex, "worker_pids"):
            live = [p for p in ex.worker_pids() if p is not None]  # a dead slot not yet replaced has no pid
            if not live:
                say("ember bench dist: no live worker to kill")
                return
            pid = live[0]
        else:
            addr = ex.worker_names()[0]
            pid, host = ex.client.run(lambda: (os.getpid(), socket.gethostname()), workers=[addr])[addr]
            if host != socket.gethostname():
                ex.client.run(lambda: os.kill(os.getpid(), signal.SIGKILL), workers=[addr], wait=False)
                say(f"ember bench dist: SIGKILL sent to worker {addr} (pid {pid} on {host})")
                return
        os.kill(pid, signal.SIGKILL)
        say(f"ember bench dist: SIGKILL sent to worker pid {pid}")
    if seconds <= 0:
        kill()
        return None
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
