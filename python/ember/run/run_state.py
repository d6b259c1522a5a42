"""The client-side state of one run on the local pool (ember.run.pool).

Which tasks are ready, where each value lives (resident on workers, published in shared memory), what to send
next and to whom, what to recompute when a worker dies, and the per-task records of the run.
"""
from __future__ import annotations

import hashlib
import time
from collections import deque
from typing import Optional

from . import shm
from .messages import Forget, Release, ResidentInput, RunTask, SharedInput
from .packet import Packet
from .program import dumps_fn
from .worker import open_shared

MAX_DEATHS_PER_TASK = 3
DEPTH = 2   # tasks in flight per worker: the next one's inputs are opened while the current one computes


class WorkerHandle:
    """The client's view of one worker process: its state and the tasks in flight there."""

    def __init__(self, proc, conn, slot: int):
        self.proc, self.conn, self.slot = proc, conn, slot
        self.state = "starting"   # starting | idle | busy | dead
        self.tasks: list[int] = []         # in flight, in the order sent
        self.pid: Optional[int] = None
        self.tag: Optional[str] = None    # its shared-memory arena's tag
        self.fns: set = set()             # digests of the task functions it has been sent in this run


class RunState:
    """The client-side state of one run on a LocalPool (the pool drives it: dispatch, background, done, lost)."""

    def __init__(self, pool, program, packets, placement: dict, progress, profile: bool):
        self.pool, self.program, self.packets, self.placement = pool, program, packets, placement
        self.progress, self.profile = progress, profile
        self.tasks = {t.id: t for t in program.tasks}
        # each task function pickled once per run and named by its bytes' digest: never by id(fn), which Python
        # reuses once a function is freed (a loop of lambdas would run the first one every time)
        self.fn_keys: dict[int, str] = {}                # id(fn) -> digest; the program holds fn during the run
        self.fn_blobs: dict[str, bytes] = {}             # digest -> the pickled function
        for t in program.tasks:
            if t.fn is not None and id(t.fn) not in self.fn_keys:
                blob = dumps_fn(t.fn)
                digest = hashlib.sha256(blob).hexdigest()
                self.fn_keys[id(t.fn)] = digest
                self.fn_blobs[digest] = blob
        self.waiting_on = {t.id: set(t.deps()) for t in program.tasks}
        self.keys = {t.id: input_keys(t) for t in program.tasks}
        self.readers: dict[tuple, set] = {}              # value key -> tasks still to read it
        for t in program.tasks:
            for k in self.keys[t.id]:
                self.readers.setdefault(k, set()).add(t.id)
        self.out_keys = {("in", r[1]) if r[0] == "in" else ("node", r[1]) for r in program.outputs}
        self.dependents: dict[int, list] = {}
        for t in program.tasks:
            for d in t.deps():
                self.dependents.setdefault(d, []).append(t.id)
        self.ready = deque(t.id for t in program.tasks if not self.waiting_on[t.id])
        self.results: dict[int, dict] = {}               # task -> its meta (times, worker)
        self.where: dict[tuple, set] = {}                # value key -> workers holding it resident
        self.published: dict[tuple, tuple] = {}          # value key -> (owner tag, [(name, size)])
        self.opened: dict[tuple, Packet] = {}            # program outputs opened in the client
        self.to_open: deque = deque()
        self.prep: dict[int, float] = {}                 # task -> client seconds writing its inputs
        self.dispatched: dict[int, float] = {}
        self.open_s: dict[int, float] = {}
        self.open_cpu: dict[int, float] = {}
        self.deaths: dict[int, int] = {}
        self.workers_lost = self.tasks_rerun = self.n_done = 0

    # state -------------------------------------------------------------------------------------------------------
    def finished(self) -> bool:
        """Return whether every task of the program is done."""
        return self.n_done == len(self.tasks)

    def waiting(self) -> str:
        """Return what the run waits for, for a timeout's message: the tasks in flight, or the ready tasks."""
        busy = [f"{self.tasks[t].label} on worker {w.slot}" for w in self.pool._workers if w.state == "busy" for t in w.tasks]
        return ", ".join(busy) if busy else f"{len(self.ready)} ready task(s) and no idle worker"

    def _alive(self) -> set:
        return {w.slot for w in self.pool._workers if w.state in ("idle", "busy")}

    def _pick(self, slot: int) -> Optional[int]:
        """Take the next ready task for worker `slot` off the ready queue (None if there is none).

        A task pinned here, unpinned, or pinned to a lost worker; preferring one pinned here, then one whose inputs
        this worker holds.
        """
        alive = self._alive()
        best, best_local = None, -1
        for i, tid in enumerate(self.ready):
            pin = self.placement.get(tid)
            if pin is None or pin == slot or pin not in alive:
                local = sum(1 for k in self.keys[tid] if slot in self.where.get(k, ()))
                if pin == slot:
                    local += 1 << 20
                if local > best_local:
                    best, best_local = i, local
                if local == len(self.keys[tid]) and pin in (None, slot):
                    break
        if best is None:
            return None
        tid = self.ready[best]
        del self.ready[best]
        return tid

    # values ------------------------------------------------------------------------------------------------------
    def _publish_input(self, k: tuple) -> tuple:
        """Write a program input into the client's shared memory (once); return its (owner tag, buffers)."""
        pub = self.published.get(k)
        if pub is None:
            p = self.packets[k[1]]
            pub = self.published[k] = (self.pool.arena.tag, [self.pool.arena.write(v) for v in p.values])
        return pub

    def background(self) -> bool:
        """Do one unit of client work while the workers compute.

        Open an arrived program output, else write the input of a ready task not yet dispatched. Return False
        when there was nothing to do.
        """
        if self.to_open:
            tid = self.to_open.popleft()
            t0, c0 = time.perf_counter(), time.process_time()
            self._open_output(("node", tid))
            self.open_s[tid] = self.open_s.get(tid, 0.0) + time.perf_counter() - t0
            self.open_cpu[tid] = time.process_time() - c0
            return True
        for tid in self.ready:
            for k in self.keys[tid]:
                if k[0] == "in" and k not in self.published:
                    t0 = time.perf_counter()
                    self._publish_input(k)
                    self.prep[tid] = self.prep.get(tid, 0.0) + time.perf_counter() - t0
                    return True
        return False

    def _open_output(self, k: tuple) -> None:
        if k in self.opened or k not in self.published:
            return
        owner, bufs = self.published[k]
        label = self.tasks[k[1]].label if k[0] == "node" else f"input {k[1]}"
        self.opened[k] = open_shared(self.pool.ctx, self.pool.arena, label, bufs, "the client")
        self._maybe_release(k)

    def outputs(self) -> list:
        """Return the program's outputs, opening (validating) in the client those not opened yet."""
        while self.to_open:
            self.background()
        out = []
        for r in self.program.outputs:
            if r[0] == "in":
                out.append(self.packets[r[1]].values[r[2]])
            else:
                k = ("node", r[1])
                self._open_output(k)
                out.append(self.opened[k].values[r[2]])
        return out

    def _maybe_release(self, k: tuple) -> None:
        """Release value k once every reader of it is done (and a program output is opened in the client).

        Its buffers are then reused and the workers drop it.
        """
        if self.readers.get(k) or (k in self.out_keys and k[0] == "node" and k not in self.opened):
            return
        pub = self.published.pop(k, None)
        holders = self.where.pop(k, set())
        names = [n for n, _ in pub[1]] if pub else []
        owner = pub[0] if pub else None
        for w in self.pool._workers:
            if w.state in ("idle", "busy") and (w.slot in holders or w.tag == owner):
                self.pool._send(w, Release([(k, names if w.tag == owner else [])]))
        if owner == self.pool.arena.tag:
            for n in names:
                self.pool.arena.release(n)

    # dispatch ----------------------------------------------------------------------------------------------------
    def dispatch(self) -> None:
        """Send ready tasks to the live workers, up to DEPTH tasks in flight on each."""
        for _ in range(DEPTH):
            for w in self.pool._workers:
                if w.state in ("idle", "busy") and len(w.tasks) < DEPTH and self.ready:
                    self._send_one(w)

    def _send_one(self, w: WorkerHandle) -> None:
        tid = self._pick(w.slot)
        if tid is None:
            return
        t = self.tasks[tid]
        keys = self.keys[tid]
        inputs = []
        for k in keys:
            if w.slot in self.where.get(k, ()):
                inputs.append(ResidentInput(k))
            else:
                if k[0] == "in" and k not in self.published:
                    t0 = time.perf_counter()
                    self._publish_input(k)
                    self.prep[tid] = self.prep.get(tid, 0.0) + time.perf_counter() - t0
                label = self.tasks[k[1]].label if k[0] == "node" else f"input {k[1]}"
                inputs.append(SharedInput(k, label, self.published[k][1]))
        args = [(keys.index(value_key(r)), r[2]) for r in t.args]
        fn_key = self.fn_keys[id(t.fn)] if t.fn is not None else None
        blob = self.fn_blobs[fn_key] if fn_key is not None and fn_key not in w.fns else b""
        # its outputs go to shared memory when the client or a task elsewhere may read them; a value read only by
        # tasks pinned to this worker stays resident there alone (recomputed if the worker is lost)
        publish = ("node", tid) in self.out_keys or any(self.placement.get(r) != w.slot
                                                         for r in self.dependents.get(tid, ()))
        msg = RunTask(tid, t.label, t.op, t.params, fn_key, blob, args, inputs, self.profile, publish)
        sent_at = time.monotonic()        # before the send: the worker may start (and finish) before it returns
        if not self.pool._send(w, msg):   # the worker died before we noticed: the task goes back
            self.ready.appendleft(tid)
            self.pool._died(w, self)
            return
        if fn_key is not None:
            w.fns.add(fn_key)
        for k in keys:
            self.where.setdefault(k, set()).add(w.slot)
        self.dispatched[tid] = sent_at
        w.tasks.append(tid)
        w.state = "busy"

    def done(self, w: WorkerHandle, tid: int, meta: dict, bufs: list) -> None:
        """Record that task `tid` finished on worker `w` (meta: its times; bufs: the buffers of its outputs).

        Readers of its inputs that are done release them, its dependents become ready, a program output is queued
        to be opened, and the progress callback is told.
        """
        if tid in self.results:
            return
        meta["dispatched_at"] = self.dispatched.get(tid)
        self.results[tid] = meta
        k = ("node", tid)
        self.where.setdefault(k, set()).add(w.slot)
        if bufs:
            self.published[k] = (w.tag, [tuple(b) for b in bufs])
        self.n_done += 1
        for d in self.keys[tid]:
            self.readers.get(d, set()).discard(tid)
            self._maybe_release(d)
        for r in self.dependents.get(tid, []):
            self.waiting_on[r].discard(tid)
            if not self.waiting_on[r]:
                self.ready.append(r)
        if k in self.out_keys:
            self.to_open.append(tid)
        elif not self.readers.get(k):
            self._maybe_release(k)
        if self.progress is not None:
            self.progress(self.n_done, len(self.tasks))

    def lost(self, w: WorkerHandle, tids: list) -> None:
        """Handle the death of worker `w` with tasks `tids` in flight.

        Its tasks are queued again and the values that lived only on it and are still to be read are recomputed.
        A task whose worker died MAX_DEATHS_PER_TASK times raises a RuntimeError.
        """
        self.workers_lost += 1
        for holders in self.where.values():    # its resident values are gone; published buffers remain
            holders.discard(w.slot)
        for tid in reversed(tids):
            if tid in self.results:
                continue
            self.deaths[tid] = self.deaths.get(tid, 0) + 1
            if self.deaths[tid] >= MAX_DEATHS_PER_TASK:
                raise RuntimeError(f"{self.tasks[tid].label}: its worker died {self.deaths[tid]} times; giving up")
            self.tasks_rerun += 1
            self.ready.appendleft(tid)
        # values that lived only on it (never published) and are still to be read: recompute them
        for k, rs in list(self.readers.items()):
            if rs and not self._available(k):
                self._recompute(k[1])

    def _available(self, k: tuple) -> bool:
        return k[0] == "in" or k in self.published or bool(self.where.get(k))

    def _recompute(self, tid: int) -> None:
        """Run task tid again: its output was lost with its worker.

        Whatever of its own inputs was lost too is recomputed first; the tasks still to read it wait for it again.
        """
        if tid not in self.results:
            return                              # already to be run
        del self.results[tid]
        self.n_done -= 1
        self.tasks_rerun += 1
        self.published.pop(("node", tid), None)
        self.where.pop(("node", tid), None)
        self.to_open = deque(t for t in self.to_open if t != tid)
        for k in self.keys[tid]:
            self.readers.setdefault(k, set()).add(tid)
            if not self._available(k):
                self._recompute(k[1])
        self.waiting_on[tid] = {k[1] for k in self.keys[tid] if k[0] == "node" and k[1] not in self.results}
        for r in self.dependents.get(tid, []):
            if r not in self.results:
                self.waiting_on[r].add(tid)
                if r in self.ready:
                    self.ready.remove(r)
        if not self.waiting_on[tid]:
            self.ready.appendleft(tid)

    # after the run -----------------------------------------------------------------------------------------------
    def records(self) -> list:
        """Return the per-task records of the run.

        Per task: worker, compute_s, open_s, publish_s (on the worker), prep_s and output_open_s (client), and the
        round trip: dispatch to arrival (seconds, one monotonic clock for every process of this machine).
        """
        out = []
        for tid, m in sorted(self.results.items()):
            t = self.tasks[tid]
            rt = (m["arrived_at"] - m["dispatched_at"]) if m.get("dispatched_at") is not None else None
            out.append({"task": tid, "op": t.op, "worker": m["worker"], "compute_s": m["compute_s"],
                        "open_s": m["open_s"], "publish_s": m["publish_s"], "prep_s": self.prep.get(tid, 0.0),
                        "output_open_s": self.open_s.get(tid, 0.0), "output_open_cpu_s": self.open_cpu.get(tid, 0.0),
                        "round_trip_s": rt,
                        "dispatched_at": m.get("dispatched_at"), "arrived_at": m["arrived_at"]})
        return out

    def cleanup(self) -> None:
        """Give this run's buffers back to their owners; remove (and unmap) a dead worker's files."""
        self.pool.arena.release_all()
        for tag in self.pool._dead_tags:
            gone = shm.remove_tagged(tag + "-")
            for n in gone:
                self.pool.arena.forget(n)
            for w in self.pool._workers:
                if w.state in ("idle", "busy") and gone:
                    self.pool._send(w, Forget(gone))
        self.pool._dead_tags.clear()


def value_key(r) -> tuple:
    """Return the key of a task argument's value: ("in", i) for program input i, ("node", id) for a task's output."""
    return ("in", r[1]) if r[0] == "in" else ("node", r[1])


def input_keys(t) -> list:
    """Return the keys of the distinct values a task reads, in the order of its arguments."""
    keys = []
    for r in t.args:
        k = value_key(r)
        if k not in keys:
            keys.append(k)
    return keys
