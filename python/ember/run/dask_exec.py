"""Dask executor: an existing cluster (scheduler address or distributed.Client) or a LocalCluster on loopback.

Keys: a WorkerPlugin (EmberKeysPlugin) carries the KeyBundle -- evaluation keys as bytes, or a key directory's
path -- to every worker once, and Dask hands it to workers that join later; tasks carry only ciphertexts.
Values: tasks return Packets, which Dask moves between processes with the serializers registered in
ember.run.packet (Ember's byte format; no pickling of C++ objects) and which the reading task validates.
Transport: when the client and every worker share one host (a LocalCluster, or `dask worker` processes on the
client's machine; transport="auto" checks), values do not travel through Dask's sockets at all: the client writes
the program's inputs, and each task its outputs, into shared-memory buffers (ember.run.shm: Ember's bytes,
written once) and Dask carries only the buffers' names; a reader opens the bytes in place and validates them as
it would bytes from a socket. A task's output also stays resident in its worker, so a task on the same worker
uses it as it is. Buffers are reused run after run (no fresh pages to fault in), and their files are removed
when the executor closes (also those of a worker that died). transport="tcp" (or "auto" on a cluster of several
machines) sends the bytes through Dask as frames.
Placement: a task pinned by a schedule is submitted with workers=[its worker], allow_other_workers=True (so it
falls back when that worker is gone); unpinned tasks are placed by Dask. Faults are Dask's: a lost worker's
tasks and lost intermediate values are recomputed on the survivors; a task that raises is not retried (a
TaskError names its node); a task that kills workers repeatedly ends as KilledWorker, reported with its node.
A SchedulerPlugin counts the workers lost and the tasks run more than once.
"""
from __future__ import annotations

import itertools
import os
import time
import uuid
from collections import Counter
from typing import Optional

from distributed import Client, LocalCluster, as_completed
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from . import shm
from .executor import Executor, RunResult
from .packet import Packet, register_dask_serializers
from .program import TaskError, dumps_fn, execute, set_compute_slots

register_dask_serializers()

MONITOR = "ember-run-monitor"


class EmberKeysPlugin(WorkerPlugin):
    """A Dask WorkerPlugin that installs a KeyBundle's Context and evaluation keys on every worker, once.

    Dask also runs it on workers that join later. A worker refuses a bundle holding a secret key
    (SecretKeyRefused).

    Parameters
    ----------
    bundle : KeyBundle
        The keys to install.
    io_threads : int, optional
        Threads of each worker kept from computing (they open inputs and publish outputs). None (the default):
        1 when the worker has two threads or more, else 0.
    """

    def __init__(self, bundle, io_threads: Optional[int] = None):
        self.bundle = bundle
        self.io_threads = io_threads    # None: one when the worker has two threads or more
        self.name = f"ember-keys-{bundle.ident}"

    def setup(self, worker):
        """Install the keys on `worker` and bound its computing tasks (Dask calls it on each worker).

        Parameters
        ----------
        worker : distributed.Worker
            The worker.
        """
        register_dask_serializers()
        self.bundle.install()
        n = int(getattr(getattr(worker, "state", None), "nthreads", None) or getattr(worker, "nthreads", 1))
        io = (1 if n >= 2 else 0) if self.io_threads is None else self.io_threads
        # the worker's other threads compute; these open inputs and publish outputs
        set_compute_slots(max(1, n - io) if io else None)


class _Monitor(SchedulerPlugin):
    """On the scheduler: how many workers left, and how often each ember task started processing."""

    name = MONITOR

    def __init__(self):
        self.lost = 0
        self.starts: Counter = Counter()

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing" and isinstance(key, str) and key.startswith("ember-"):
            self.starts[key] += 1

    def remove_worker(self, scheduler=None, worker=None, **kwargs):
        self.lost += 1


def _monitor_snapshot(dask_scheduler=None, prefix: str = "ember-"):
    p = dask_scheduler.plugins.get(MONITOR)
    if p is None:
        return None
    return p.lost, {k: c for k, c in p.starts.items() if k.startswith(prefix)}


class DaskExecutor(Executor):
    """Runs programs on a Dask cluster.

    With neither `address` nor `client`, a LocalCluster of `workers` processes on 127.0.0.1 is started here and
    stopped by :meth:`close`, each computing one task at a time; it has 1 + io_threads Dask threads per worker.

    Parameters
    ----------
    ctx : ember.Context
        The client's context.
    keys : ember.KeySet, tuple or KeyBundle
        The evaluation keys: a KeySet (only its evaluation keys are sent), a ``(relin, galois)`` pair, or a
        KeyBundle (e.g. from a key directory).
    address : str, optional
        A scheduler address (``"tcp://host:8786"``) to connect to.
    client : distributed.Client, optional
        A client to use (not closed by :meth:`close`).
    workers : int, optional
        Worker processes of the LocalCluster started here (default 2).
    threads : int, optional
        Threads of each worker's Context (default 1).
    connect_timeout : float, optional
        Seconds to wait when connecting to `address` (default 60).
    transport : {"auto", "shm", "tcp"}, optional
        ``"auto"`` (the default: shared memory when the client and every worker are on one host, else Dask's
        sockets), ``"shm"`` (shared memory; a ValueError if some worker is on another host) or ``"tcp"`` (values
        as frames through Dask). With shared memory, a worker that joins later from another host fails the tasks
        it is given with an error saying so: use "tcp" for clusters of several machines.
    io_threads : int, optional
        Dask threads of each worker kept from computing: while one task computes, they open the next task's
        inputs and publish the last one's outputs (tasks compute in the worker's other threads); 0: every Dask
        thread computes, with no overlap. None (the default): for a LocalCluster started here, 1 when its workers
        leave a core free (workers x threads < this machine's cores), else 0 -- an I/O thread competing with the
        computing ones for the cores slows them more than it saves (N = 2^15, 2 workers on 2 cores, 16 tasks:
        0.42 s with, 0.36 s without; the pool 0.29 s) --; for a cluster's workers, 1 on a worker with 2 threads or
        more (``dask worker --nthreads K+1`` computes K tasks at once), else 0.

    Raises
    ------
    ValueError
        If `transport`, `io_threads` or `workers` is invalid, or ``transport="shm"`` with a worker on another
        host.
    """

    TRANSPORTS = ("auto", "shm", "tcp")

    def __init__(self, ctx, keys, address: Optional[str] = None, client: Optional[Client] = None,
                 workers: int = 2, threads: int = 1, connect_timeout: float = 60.0, transport: str = "auto",
                 io_threads: Optional[int] = None):
        if transport not in self.TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(self.TRANSPORTS)}, got {transport!r}")
        bad_io = not isinstance(io_threads, int) or isinstance(io_threads, bool) or io_threads < 0
        if io_threads is not None and bad_io:
            raise ValueError(f"io_threads must be None or a non-negative integer, got {io_threads!r}")
        super().__init__(ctx, keys, threads)
        self._cluster = None
        self.arena = None
        self.tag = "d" + uuid.uuid4().hex[:10]
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address is not None:
            self.client = Client(address, timeout=connect_timeout)
        else:
            if not isinstance(workers, int) or workers < 1:
                raise ValueError(f"workers must be a positive integer, got {workers!r}")
            if io_threads is None:
                io_threads = 1 if workers * threads < _cores() else 0
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1 + io_threads, processes=True,
                                         host="127.0.0.1", dashboard_address=None, memory_limit=0)
            self.client = Client(self._cluster)
        try:
            self.io_threads = io_threads    # (None for a cluster's workers: each decides by its thread count)
            self.client.register_plugin(EmberKeysPlugin(self.bundle, io_threads))
            try:
                self.client.register_plugin(_Monitor())
                self._monitored = True
            except Exception:  # noqa: BLE001 -- a scheduler without ember installed: no counts
                self._monitored = False
            self._requested = transport
            self.transport = None       # decided now if workers are connected, else at the first run
            if self.client.scheduler_info(n_workers=-1)["workers"]:
                self._choose_transport()
        except BaseException:
            self.close()
            raise

    def _choose_transport(self) -> str:
        """Choose the transport: 'shm' when every connected worker shares the client's host, else 'tcp'.

        'shm' only when the request allows it; a request for 'shm' that cannot be met is a ValueError.
        """
        t = "tcp"
        if self._requested != "tcp":
            here = shm.host_key()
            hosts = self.client.run(shm.host_key)
            away = sorted(a for a, h in hosts.items() if h != here)
            if hosts and not away:
                t = "shm"
            elif self._requested == "shm":
                raise ValueError("transport='shm' needs every worker on the client's host; "
                                 + (f"{', '.join(away)} {'is' if len(away) == 1 else 'are'} not" if away
                                    else "no worker is connected") + " (use transport='tcp' or 'auto')")
        self.transport = t
        if t == "shm" and self.arena is None:
            self.arena = shm.Arena(f"{self.tag}c")
        return t

    def _release(self) -> None:
        """Let the next run reuse every buffer this run used (the run is over)."""
        if self.arena is None:
            return
        self.arena.release_all()
        try:
            self.client.run(shm.release_tagged, self.tag, on_error="ignore")
        except Exception:  # noqa: BLE001 -- a worker that is gone has nothing to release
            pass

    def worker_names(self) -> list[str]:
        """Return the addresses of the cluster's workers, sorted.

        Returns
        -------
        list of str
            The scheduler's current workers; a placement's worker indices index this list.
        """
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def close(self) -> None:
        """Remove the executor's shared memory, close its own client and stop the LocalCluster it started."""
        if getattr(self, "arena", None) is not None:
            try:    # the workers' buffers of this executor, and their mappings of the client's
                self.client.run(shm.drop_tagged, self.tag, on_error="ignore")
            except Exception:  # noqa: BLE001 -- closed client or cluster: the files are removed below
                pass
            self.arena.close()
            self.arena = None
            shm.reader().forget_tagged(self.tag)
            shm.remove_tagged(self.tag)     # also the files of workers that died
        if getattr(self, "_own_client", False) and getattr(self, "client", None) is not None:
            self.client.close()
        if getattr(self, "_cluster", None) is not None:
            self._cluster.close()
            self._cluster = None

    def _run(self, program, packets, placement, timeout, progress, profile) -> RunResult:
        c = self.client
        run_id = uuid.uuid4().hex[:12]
        prefix = f"ember-{run_id}-"
        before = c.run_on_scheduler(_monitor_snapshot, prefix=prefix) if self._monitored else None
        t0 = time.perf_counter()    # (the run's time: without the fault counters' bookkeeping above)
        addrs = self.worker_names()
        if self.transport is None:
            self._choose_transport()
        use_shm = self.transport == "shm"
        try:
            return self._submit_and_wait(program, packets, placement, timeout, progress, profile, t0, prefix, before,
                                         addrs, use_shm)
        finally:
            if use_shm:
                self._release()

    def _submit_and_wait(self, program, packets, placement, timeout, progress, profile, t0, prefix, before, addrs,
                         use_shm) -> RunResult:
        c = self.client
        src = {}

        def source(i: int):
            """Return input i for the graph, made when the first task that reads it is submitted.

            So the first tasks start while the client writes the later inputs. It stays in the task graph, never
            lost with a worker: with shared memory the Packet itself, which carries only its buffer's name (the
            client's buffer, which outlives any worker), is the task's argument; over sockets, a task holding
            Ember's bytes, so that tasks sharing an input do not each carry its bytes.
            """
            if i not in src:
                if use_shm:
                    src[i] = packets[i].publish(self.arena)
                else:
                    src[i] = c.submit(_source, packets[i], key=f"{prefix}in-{i}", pure=False)
            return src[i]

        futs, blobs = {}, {}
        for t in program.tasks:
            if t.fn is not None and id(t.fn) not in blobs:
                blobs[id(t.fn)] = dumps_fn(t.fn)
            keys = []
            for r in t.args:
                k = ("in", r[1]) if r[0] == "in" else ("node", r[1])
                if k not in keys:
                    keys.append(k)
            deps = [source(k[1]) if k[0] == "in" else futs[k[1]] for k in keys]
            args = [(keys.index(("in", r[1]) if r[0] == "in" else ("node", r[1])), r[2]) for r in t.args]
            kw = dict(key=f"{prefix}{t.id}", pure=False, retries=0)
            pin = (placement or {}).get(t.id)
            if pin is not None and pin < len(addrs):     # (a worker gone since the check: Dask places it)
                kw.update(workers=[addrs[pin]], allow_other_workers=True)
            futs[t.id] = c.submit(execute, self.bundle.ident, t.label, t.op, t.params, blobs.get(id(t.fn)), args, *deps,
                                  profile=profile, shm_tag=self.tag if use_shm else None, **kw)
        labels = {f.key: program.tasks[i].label for i, f in zip(itertools.count(), futs.values())}
        results, done, out_open = {}, 0, {}
        out_ids = sorted({r[1] for r in program.outputs if r[0] == "node"})
        wanted = set(out_ids)
        task_of = {f.key: i for i, f in futs.items()}
        try:
            ac = as_completed(list(futs.values()), timeout=timeout)
            for f in ac:
                if f.status == "error":
                    exc = f.exception()
                    if isinstance(exc, TaskError):
                        raise TaskError(str(exc)) from None
                    raise RuntimeError(f"{labels[f.key]}: {type(exc).__name__}: {exc}") from None
                if f.status == "cancelled":
                    raise RuntimeError(f"{labels[f.key]}: cancelled (the cluster lost it)")
                i = task_of[f.key]
                if i in wanted:     # an output: fetched and opened (validated) now, while the others compute
                    t = time.perf_counter()
                    p = f.result()
                    p.open(self.ctx, reader="the client")
                    out_open[i] = time.perf_counter() - t
                    results[i] = p
                done += 1
                if progress is not None:
                    progress(done, len(futs))
        except TimeoutError:
            pending = [labels[f.key] for f in futs.values() if not f.done()]
            raise TimeoutError(f"ember run timed out after {timeout:g} s with {done} of {len(futs)} tasks done; "
                               f"waiting for {', '.join(pending[:5])}{' ...' if len(pending) > 5 else ''}") from None
        except BaseException:
            c.cancel(list(futs.values()), force=True)
            raise
        seconds = time.perf_counter() - t0
        meta = {i: _meta(p) for i, p in results.items()}
        inner = [i for i in futs if i not in results]  # intermediate values: read their times where they lie
        meta.update(zip(inner, c.gather([c.submit(_meta, futs[i], key=f"{prefix}meta-{i}", pure=False)
                                         for i in inner])))
        lost = rerun = 0
        if self._monitored:
            after = c.run_on_scheduler(_monitor_snapshot, prefix=prefix)
            if before is not None and after is not None:
                lost = after[0] - before[0]
                rerun = sum(max(0, n - 1) for k, n in after[1].items() if k[len(prefix):].isdigit())
        outs = self._open_outputs(program, results, packets)
        c.cancel(list(futs.values()) + [f for f in src.values() if not isinstance(f, Packet)])
        # per task: where its time went (on its worker: open_s, publish_s -- with shared memory, the bytes' writing;
        # over sockets Dask serialises later --; on the client: output_open_s, fetching and validating an output)
        records = [{"task": t, "op": program.tasks[t].op, "worker": m[1], "compute_s": m[0],
                    **(m[3] or {}), "output_open_s": out_open.get(t)} for t, m in sorted(meta.items())]
        return RunResult(outs, seconds, {t: m[0] for t, m in meta.items()}, {t: m[1] for t, m in meta.items()},
                         lost, rerun, {t: m[2] for t, m in meta.items() if m[2] is not None}, records)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _source(p):
    return p


def _meta(p):
    """(seconds, worker, profile, io) of a task's Packet, read where it lies (no ciphertext moves)."""
    return p.seconds, p.worker, p.profile, p.io
