"""Dask executor: an existing cluster (scheduler address or distributed.Client) or a LocalCluster on loopback.

Keys: a WorkerPlugin (EmberKeysPlugin) carries the KeyBundle -- evaluation keys as bytes, or a key directory's
path -- to every worker once, and Dask hands it to workers that join later; tasks carry only ciphertexts.
Values: tasks return Packets, which Dask moves between processes with the serializers registered in
ember.run.packet (Ember's byte format; no pickling of C++ objects) and which the reading task validates.
Placement: a task pinned by a schedule is submitted with workers=[its worker], allow_other_workers=True (so it
falls back when that worker is gone); unpinned tasks are placed by Dask. Faults are Dask's: a lost worker's
tasks and lost intermediate values are recomputed on the survivors; a task that raises is not retried (a
TaskError names its node); a task that kills workers repeatedly ends as KilledWorker, reported with its node.
A SchedulerPlugin counts the workers lost and the tasks run more than once.
"""
from __future__ import annotations

import itertools
import time
import uuid
from collections import Counter
from typing import Optional

from distributed import Client, LocalCluster, as_completed
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from .executor import Executor, RunResult
from .packet import register_dask_serializers
from .program import TaskError, dumps_fn, execute

register_dask_serializers()

MONITOR = "ember-run-monitor"


class EmberKeysPlugin(WorkerPlugin):
    """Installs a KeyBundle's Context and evaluation keys on every worker, once (also on workers that join
    later). A worker refuses a bundle holding a secret key (SecretKeyRefused)."""

    def __init__(self, bundle):
        self.bundle = bundle
        self.name = f"ember-keys-{bundle.ident}"

    def setup(self, worker):
        register_dask_serializers()
        self.bundle.install()


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

    address: a scheduler address ("tcp://host:8786"); client: a distributed.Client; neither: a LocalCluster of
    `workers` processes x `threads` threads on 127.0.0.1, started here and stopped by close(). Each worker's
    Context has `threads` threads."""

    def __init__(self, ctx, keys, address: Optional[str] = None, client: Optional[Client] = None,
                 workers: int = 2, threads: int = 1, connect_timeout: float = 60.0):
        super().__init__(ctx, keys, threads)
        self._cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address is not None:
            self.client = Client(address, timeout=connect_timeout)
        else:
            if not isinstance(workers, int) or workers < 1:
                raise ValueError(f"workers must be a positive integer, got {workers!r}")
            self._cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                                         host="127.0.0.1", dashboard_address=None, memory_limit=0)
            self.client = Client(self._cluster)
        try:
            self.client.register_plugin(EmberKeysPlugin(self.bundle))
            try:
                self.client.register_plugin(_Monitor())
                self._monitored = True
            except Exception:  # noqa: BLE001 -- a scheduler without ember installed: no counts
                self._monitored = False
        except BaseException:
            self.close()
            raise

    def worker_names(self) -> list[str]:
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def close(self) -> None:
        if getattr(self, "_own_client", False) and getattr(self, "client", None) is not None:
            self.client.close()
        if getattr(self, "_cluster", None) is not None:
            self._cluster.close()
            self._cluster = None

    def _run(self, program, packets, placement, timeout, progress, profile) -> RunResult:
        c = self.client
        t0 = time.perf_counter()
        run_id = uuid.uuid4().hex[:12]
        prefix = f"ember-{run_id}-"
        before = c.run_on_scheduler(_monitor_snapshot, prefix=prefix) if self._monitored else None
        addrs = self.worker_names()
        # program inputs go into the task graph (as Ember bytes), so that they are never lost with a worker
        src = [c.submit(_source, p, key=f"{prefix}in-{i}", pure=False) for i, p in enumerate(packets)]
        futs, blobs = {}, {}
        for t in program.tasks:
            if t.fn is not None and id(t.fn) not in blobs:
                blobs[id(t.fn)] = dumps_fn(t.fn)
            keys = []
            for r in t.args:
                k = ("in", r[1]) if r[0] == "in" else ("node", r[1])
                if k not in keys:
                    keys.append(k)
            deps = [src[k[1]] if k[0] == "in" else futs[k[1]] for k in keys]
            args = [(keys.index(("in", r[1]) if r[0] == "in" else ("node", r[1])), r[2]) for r in t.args]
            kw = dict(key=f"{prefix}{t.id}", pure=False, retries=0)
            pin = (placement or {}).get(t.id)
            if pin is not None and addrs:
                kw.update(workers=[addrs[pin % len(addrs)]], allow_other_workers=True)
            futs[t.id] = c.submit(execute, self.bundle.ident, t.label, t.op, t.params, blobs.get(id(t.fn)), args, *deps,
                                  profile=profile, **kw)
        labels = {f.key: program.tasks[i].label for i, f in zip(itertools.count(), futs.values())}
        results, done = {}, 0
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
                    p = f.result()
                    p.open(self.ctx, reader="the client")
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
        c.cancel(list(futs.values()) + src)
        return RunResult(outs, seconds, {t: m[0] for t, m in meta.items()}, {t: m[1] for t, m in meta.items()},
                         lost, rerun, {t: m[2] for t, m in meta.items() if m[2] is not None})


def _source(p):
    return p


def _meta(p):
    """(seconds, worker, profile) of a task's Packet, read where it lies (no ciphertext moves)."""
    return p.seconds, p.worker, p.profile
