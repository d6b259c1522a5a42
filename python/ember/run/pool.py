"""The local pool (the default executor): K worker processes on this machine, each with its own Context (and
`threads` threads), the evaluation keys installed once when it starts.

The client drives the run: it sends each ready task to an idle worker (the worker of the task's pin when it has
one and that worker is alive), with the input values as Ember bytes unless the worker already holds them (its own
outputs and what it received stay in its store for the run). Every result comes back as bytes, so nothing is
lost when a worker dies: its task is sent to a survivor (tasks_rerun), a replacement worker is started (it
installs the keys like the others) and the run goes on. A task that raises stops the run with a TaskError naming
the node; a task whose worker dies three times stops it with a RuntimeError; the run's timeout stops it with a
TimeoutError naming what it was waiting for.
"""
from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Optional

from .executor import Executor, RunResult
from .keys import KeyBundle
from .packet import Packet
from .program import TaskError, dumps_fn, execute

MAX_DEATHS_PER_TASK = 3


def _worker_entry(fd: int, slot: int) -> None:
    """The worker process's main (started as `python -c ...`, so the client's __main__ is never re-imported)."""
    conn = Connection(fd)
    try:
        bundle = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    _worker_main(conn, bundle, slot)


def _worker_main(conn, bundle: KeyBundle, slot: int) -> None:
    try:
        bundle.install()
    except Exception as e:  # noqa: BLE001 -- reported to the client, which refuses to start
        conn.send_bytes(pickle.dumps(("fail", f"{type(e).__name__}: {e}")))
        return
    conn.send_bytes(pickle.dumps(("ready", os.getpid())))
    store: dict = {}
    fns: dict = {}
    while True:
        try:
            m = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if m[0] == "stop":
            return
        if m[0] == "reset":
            store.clear()
            fns.clear()
            continue
        _, tid, label, op, params, fn_key, fn_blob, args, inputs, profile = m
        try:
            packets = []
            for inp in inputs:
                if inp[0] == "ref":
                    packets.append(store[inp[1]])
                else:
                    p = Packet.loads(inp[2])
                    store[inp[1]] = p
                    packets.append(p)
            if fn_key is not None and fn_key not in fns:
                fns[fn_key] = fn_blob
            out = execute(bundle.ident, label, op, params, fns.get(fn_key), args, *packets, profile=profile)
            store[("node", tid)] = out
            conn.send_bytes(pickle.dumps(("done", tid, out.dumps())))
        except TaskError as e:
            conn.send_bytes(pickle.dumps(("error", tid, str(e))))
        except Exception as e:  # noqa: BLE001
            conn.send_bytes(pickle.dumps(("error", tid, f"{label} failed on worker {slot}: {type(e).__name__}: {e}")))


class _Worker:
    def __init__(self, proc, conn, slot: int):
        self.proc, self.conn, self.slot = proc, conn, slot
        self.state = "starting"   # starting | idle | busy | dead
        self.task: Optional[int] = None
        self.pid: Optional[int] = None


class LocalPool(Executor):
    """K local worker processes with `threads` threads each.

        with ember.run.LocalPool(ctx, keys, workers=2) as pool:
            res = pool.map(lambda c, x: (x * x).rotate(1), cts)

    keys: a KeySet (only its evaluation keys are sent), a (relin, galois) pair, or a KeyBundle (e.g. from a key
    directory). respawn: replace a worker that dies (the replacement installs the keys when it starts)."""

    def __init__(self, ctx, keys, workers: int = 2, threads: int = 1, respawn: bool = True,
                 start_timeout: float = 300.0):
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        super().__init__(ctx, keys, threads)
        self.respawn = respawn
        self._workers: list[_Worker] = [self._start(i) for i in range(workers)]
        deadline = time.monotonic() + start_timeout
        try:
            while any(w.state == "starting" for w in self._workers):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"ember local pool: workers did not start within {start_timeout:.0f} s")
                self._poll(min(left, 1.0), None)
        except BaseException:
            self.close()
            raise

    # workers ---------------------------------------------------------------------------------------------------
    def _start(self, slot: int) -> _Worker:
        a, b = socket.socketpair()
        code = f"from ember.run.pool import _worker_entry; _worker_entry({b.fileno()}, {slot})"
        p = subprocess.Popen([sys.executable, "-c", code], pass_fds=[b.fileno()], stdin=subprocess.DEVNULL)
        b.close()
        conn = Connection(a.detach())
        conn.send_bytes(pickle.dumps(self.bundle))
        return _Worker(p, conn, slot)

    def worker_names(self) -> list[str]:
        return [f"worker{w.slot}" for w in self._workers]

    def worker_pids(self) -> list[Optional[int]]:
        """The process id of each worker slot (None while one is starting)."""
        return [w.proc.pid if w.state != "dead" else None for w in self._workers]

    def _poll(self, timeout: float, run) -> None:
        """Waits for a message or a worker's death; handles it (run: the state of the run in progress)."""
        conns = {w.conn: w for w in self._workers if w.state != "dead"}
        for r in wait(list(conns), timeout=timeout):
            w = conns[r]
            if w.state == "dead":
                continue
            try:
                m = pickle.loads(w.conn.recv_bytes())
            except (EOFError, OSError):  # the process died (its end of the socket closed)
                self._died(w, run)
                continue
            if m[0] == "ready":
                w.state, w.pid = "idle", m[1]
            elif m[0] == "fail":
                self._kill(w)
                raise RuntimeError(f"ember worker {w.slot} could not install the keys: {m[1]}")
            elif m[0] == "done":
                w.state, w.task = "idle", None
                if run is not None:
                    run.done(w, m[1], Packet.loads(m[2]))
            elif m[0] == "error":
                w.state, w.task = "idle", None
                raise TaskError(m[2])

    def _died(self, w: _Worker, run) -> None:
        task = w.task
        self._kill(w)
        if run is not None:
            run.lost(w, task)
        if self.respawn:
            self._workers[w.slot] = self._start(w.slot)

    def _kill(self, w: _Worker) -> None:
        w.state = "dead"
        try:
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        w.conn.close()

    def close(self) -> None:
        for w in getattr(self, "_workers", []):
            if w.state != "dead":
                try:
                    w.conn.send_bytes(pickle.dumps(("stop",)))
                except (OSError, ValueError):
                    pass
        for w in getattr(self, "_workers", []):
            if w.state != "dead":
                try:
                    w.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                self._kill(w)
        self._workers = []

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # runs ------------------------------------------------------------------------------------------------------
    def _run(self, program, packets, placement, timeout, progress, profile) -> RunResult:
        if not self._workers:
            raise RuntimeError("this pool is closed")
        run = _Run(self, program, packets, placement or {}, progress, profile)
        for w in self._workers:
            if w.state in ("idle", "busy"):
                w.conn.send_bytes(pickle.dumps(("reset",)))
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not run.finished():
                run.dispatch()
                if not any(w.state != "dead" for w in self._workers):
                    raise RuntimeError("every ember worker died and none could be restarted")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"ember run timed out after {timeout:g} s with {run.n_done} of "
                                       f"{len(program.tasks)} tasks done; waiting for {run.waiting()}")
                self._poll(1.0 if left is None else min(left, 1.0), run)
        except BaseException:
            for w in self._workers:  # workers still computing for this run: replace them
                if w.state == "busy":
                    self._died(w, None)
            raise
        outs = self._open_outputs(program, run.results, packets)
        return RunResult(outs, 0.0, {t: p.seconds for t, p in run.results.items()},
                         {t: p.worker for t, p in run.results.items()}, run.workers_lost, run.tasks_rerun,
                         {t: p.profile for t, p in run.results.items() if p.profile is not None})


class _Run:
    """The client-side state of one run on a LocalPool."""

    def __init__(self, pool: LocalPool, program, packets, placement: dict, progress, profile: bool):
        self.pool, self.program, self.packets, self.placement = pool, program, packets, placement
        self.progress, self.profile = progress, profile
        self.tasks = {t.id: t for t in program.tasks}
        self.waiting_on = {t.id: set(t.deps()) for t in program.tasks}
        self.readers: dict[int, list[int]] = {}
        for t in program.tasks:
            for d in t.deps():
                self.readers.setdefault(d, []).append(t.id)
        self.ready = deque(t.id for t in program.tasks if not self.waiting_on[t.id])
        self.results: dict[int, Packet] = {}
        self.where: dict[tuple, set] = {}
        self.frames: dict[tuple, list] = {}
        self.deaths: dict[int, int] = {}
        self.fn_blobs: dict[int, bytes] = {}
        self.workers_lost = self.tasks_rerun = self.n_done = 0

    def finished(self) -> bool:
        return self.n_done == len(self.tasks)

    def waiting(self) -> str:
        busy = [f"{self.tasks[w.task].label} on worker {w.slot}" for w in self.pool._workers if w.state == "busy"]
        return ", ".join(busy) if busy else f"{len(self.ready)} ready task(s) and no idle worker"

    def _pick(self, slot: int) -> Optional[int]:
        alive = {w.slot for w in self.pool._workers if w.state in ("idle", "busy")}
        for i, tid in enumerate(self.ready):
            pin = self.placement.get(tid)
            if pin is None or pin == slot or pin not in alive or pin >= len(self.pool._workers):
                del self.ready[i]
                return tid
        return None

    def dispatch(self) -> None:
        for w in self.pool._workers:
            if w.state != "idle" or not self.ready:
                continue
            tid = self._pick(w.slot)
            if tid is None:
                continue
            t = self.tasks[tid]
            keys = []
            for r in t.args:
                k = ("in", r[1]) if r[0] == "in" else ("node", r[1])
                if k not in keys:
                    keys.append(k)
            inputs = []
            for k in keys:
                if w.slot in self.where.get(k, ()):
                    inputs.append(("ref", k))
                else:
                    if k not in self.frames:
                        p = self.packets[k[1]] if k[0] == "in" else self.results[k[1]]
                        self.frames[k] = p.dumps()
                    inputs.append(("data", k, self.frames[k]))
                    self.where.setdefault(k, set()).add(w.slot)
            args = [(keys.index(("in", r[1]) if r[0] == "in" else ("node", r[1])), r[2]) for r in t.args]
            fn_key = id(t.fn) if t.fn is not None else None
            blob = b""
            if fn_key is not None:
                if fn_key not in self.fn_blobs:
                    self.fn_blobs[fn_key] = dumps_fn(t.fn)
                blob = self.fn_blobs[fn_key]
            msg = ("task", tid, t.label, t.op, t.params, fn_key, blob, args, inputs, self.profile)
            try:
                w.conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:  # the worker died before we noticed: the task goes back, the worker is replaced
                self.ready.appendleft(tid)
                self.pool._died(w, self)
                continue
            w.state, w.task = "busy", tid

    def done(self, w: _Worker, tid: int, packet: Packet) -> None:
        if tid in self.results:
            return
        self.results[tid] = packet
        self.where[("node", tid)] = {w.slot}
        self.n_done += 1
        for r in self.readers.get(tid, []):
            self.waiting_on[r].discard(tid)
            if not self.waiting_on[r]:
                self.ready.append(r)
        if self.progress is not None:
            self.progress(self.n_done, len(self.tasks))

    def lost(self, w: _Worker, tid: Optional[int]) -> None:
        self.workers_lost += 1
        for holders in self.where.values():
            holders.discard(w.slot)
        if tid is not None and tid not in self.results:
            self.deaths[tid] = self.deaths.get(tid, 0) + 1
            if self.deaths[tid] >= MAX_DEATHS_PER_TASK:
                raise RuntimeError(f"{self.tasks[tid].label}: its worker died {self.deaths[tid]} times; giving up")
            self.tasks_rerun += 1
            self.ready.appendleft(tid)
