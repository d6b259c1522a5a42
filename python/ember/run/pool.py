"""The local pool (the default executor): K worker processes on this machine.

Each worker has its own Context (and `threads` threads), the evaluation keys installed once when it starts.

Values move through shared memory (ember.run.shm), never through the pipe: a task's output is written once by
its worker straight into a shared-memory buffer (Ember's validated byte format, no pickling) and stays resident
in that worker's memory; a task on the same worker uses the resident object, one on another worker opens the
buffer in place; the client writes the program's inputs the same way and opens the program's outputs from the
workers' buffers. The pipe carries only small messages (the task, the names and sizes of its inputs, its
measured times). Buffers are reused once every reader of their value is done (no page faults in steady state).

The client drives the run: it sends each ready task to an idle worker (the worker of the task's pin when it has
one and that worker is alive, else preferring the worker that holds its inputs), and while the workers compute it
writes the inputs of the tasks to come and opens the outputs that arrived. Nothing is lost when a worker dies:
its buffers outlive it, its task is sent to a survivor (tasks_rerun), a replacement worker is started (it installs
the keys like the others) and the run goes on. A task that raises stops the run with a TaskError naming the node;
a task whose worker dies three times stops it with a RuntimeError; the run's timeout stops it with a TimeoutError
naming what it was waiting for.

Per-task records (RunResult.records): for each task, its worker, the seconds of its operation (compute_s), of
opening its inputs (open_s: validation of what arrived through shared memory), of publishing its outputs
(publish_s), and the client-side seconds around it -- what the scheduler's profile-guided overhead model
(ember.sched.overhead) is fitted on.

Three modules: this one (the pool: starting, watching and replacing the worker processes, the run loop),
ember.run.worker (the worker process) and ember.run.run_state (the client-side state of one run); they talk
through the dataclasses of ember.run.messages.
"""
from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import time
import uuid
from multiprocessing.connection import Connection, wait
from typing import Optional

from . import shm
from .executor import Executor, RunResult
from .messages import Done, Failed, Ready, Reset, Stop, TaskFailed
from .program import TaskError
from .run_state import DEPTH, MAX_DEATHS_PER_TASK, RunState, WorkerHandle  # noqa: F401 -- the pool's constants


class LocalPool(Executor):
    """K local worker processes with `threads` threads each.

    The constructor starts the workers and waits until each has installed the keys. Use it as a context manager
    (or call :meth:`close`) so that the processes and their shared memory go away::

        with ember.run.LocalPool(ctx, keys, workers=2) as pool:
            res = pool.map(lambda c, x: (x * x).rotate(1), cts)

    Parameters
    ----------
    ctx : ember.Context
        The client's context.
    keys : ember.KeySet, tuple or KeyBundle
        A KeySet (only its evaluation keys are sent), a ``(relin, galois)`` pair, or a KeyBundle (e.g. from a key
        directory).
    workers : int, optional
        The number of worker processes (default 2).
    threads : int, optional
        Threads of each worker's Context (default 1).
    respawn : bool, optional
        Replace a worker that dies (the replacement installs the keys when it starts; default True).
    start_timeout : float, optional
        Seconds to wait for the workers to start and install the keys (default 300).

    Raises
    ------
    ValueError
        If `workers` is not a positive integer.
    TimeoutError
        If the workers did not start within `start_timeout`.
    RuntimeError
        If a worker could not install the keys.
    """

    def __init__(self, ctx, keys, workers: int = 2, threads: int = 1, respawn: bool = True,
                 start_timeout: float = 300.0):
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        super().__init__(ctx, keys, threads)
        self.respawn = respawn
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.arena = shm.Arena(f"{self.tag}-c")
        self._dead_tags: list[str] = []
        self._workers: list[WorkerHandle] = [self._start(i) for i in range(workers)]
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
    def _start(self, slot: int) -> WorkerHandle:
        a, b = socket.socketpair()
        code = f"from ember.run.worker import worker_entry; worker_entry({b.fileno()}, {slot}, {self.tag!r})"
        p = subprocess.Popen([sys.executable, "-c", code], pass_fds=[b.fileno()], stdin=subprocess.DEVNULL)
        b.close()
        conn = Connection(a.detach())
        conn.send_bytes(pickle.dumps(self.bundle))
        return WorkerHandle(p, conn, slot)

    def worker_names(self) -> list[str]:
        """Return the workers' names, by slot.

        Returns
        -------
        list of str
            ``["worker0", "worker1", ...]``.
        """
        return [f"worker{w.slot}" for w in self._workers]

    def worker_pids(self) -> list[Optional[int]]:
        """Return the process id of each worker slot.

        Returns
        -------
        list of int or None
            By slot: the worker process's pid, or None for a slot whose worker is dead (and was not replaced).
        """
        return [w.proc.pid if w.state != "dead" else None for w in self._workers]

    def _poll(self, timeout: float, run) -> None:
        """Wait for a message or a worker's death and handle it (run: the state of the run in progress)."""
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
            if isinstance(m, Ready):
                w.state, w.pid, w.tag = "idle", m.pid, m.tag
            elif isinstance(m, Failed):
                self._kill(w)
                raise RuntimeError(f"ember worker {w.slot} could not install the keys: {m.reason}")
            elif isinstance(m, Done):
                if m.tid in w.tasks:
                    w.tasks.remove(m.tid)
                w.state = "busy" if w.tasks else "idle"
                if run is not None:
                    m.meta["arrived_at"] = time.monotonic()
                    run.done(w, m.tid, m.meta, m.buffers)
            elif isinstance(m, TaskFailed):
                if m.tid in w.tasks:
                    w.tasks.remove(m.tid)
                w.state = "busy" if w.tasks else "idle"
                raise TaskError(m.message)

    def _died(self, w: WorkerHandle, run) -> None:
        tasks = list(w.tasks)
        self._kill(w)
        if w.tag is not None:   # its buffers outlive it; removed once the run no longer needs them
            self._dead_tags.append(w.tag)
        if run is not None:
            run.lost(w, tasks)
        if self.respawn:
            self._workers[w.slot] = self._start(w.slot)

    def _kill(self, w: WorkerHandle) -> None:
        w.state = "dead"
        try:
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        w.conn.close()

    def _send(self, w: WorkerHandle, msg) -> bool:
        try:
            w.conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
            return True
        except OSError:
            return False

    def close(self) -> None:
        """Stop the workers (killing those that do not stop within 5 s) and remove the pool's shared memory."""
        for w in getattr(self, "_workers", []):
            if w.state != "dead":
                self._send(w, Stop())
        for w in getattr(self, "_workers", []):
            if w.state != "dead":
                try:
                    w.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                self._kill(w)
        self._workers = []
        if getattr(self, "arena", None) is not None:
            self.arena.close()
            shm.remove_tagged(self.tag + "-")   # whatever a killed worker left behind
            self.arena = None

    def __del__(self):
        """Close the pool, ignoring errors."""
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # runs ------------------------------------------------------------------------------------------------------
    def _run(self, program, packets, placement, timeout, progress, profile) -> RunResult:
        if not self._workers:
            raise RuntimeError("this pool is closed")
        t_start = time.perf_counter()
        run = RunState(self, program, packets, placement or {}, progress, profile)
        for w in self._workers:
            if w.state in ("idle", "busy"):
                self._send(w, Reset())
                w.fns.clear()
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
                # while the workers compute: open an output that arrived, or write a coming task's input
                busy = run.background()
                self._poll(0.0 if busy else (1.0 if left is None else min(left, 1.0)), run)
            outs = run.outputs()
        except BaseException:
            for w in self._workers:  # workers still computing for this run: replace them
                if w.state == "busy":
                    self._died(w, None)
            raise
        finally:
            run.cleanup()
        seconds = time.perf_counter() - t_start
        return RunResult(outs, seconds, {t: r["compute_s"] for t, r in run.results.items()},
                         {t: r["worker"] for t, r in run.results.items()}, run.workers_lost, run.tasks_rerun,
                         {t: r["profile"] for t, r in run.results.items() if r.get("profile") is not None},
                         records=run.records())
