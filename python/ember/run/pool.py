"""The local pool (the default executor): K worker processes on this machine, each with its own Context (and
`threads` threads), the evaluation keys installed once when it starts.

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
"""
from __future__ import annotations

import hashlib
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Optional

from . import shm
from .executor import Executor, RunResult
from .keys import KeyBundle
from .packet import Packet
from .program import TaskError, dumps_fn, execute, worker_name

MAX_DEATHS_PER_TASK = 3
DEPTH = 2   # tasks in flight per worker: the next one's inputs are opened while the current one computes


def _worker_entry(fd: int, slot: int, tag: str) -> None:
    """The worker process's main (started as `python -c ...`, so the client's __main__ is never re-imported)."""
    conn = Connection(fd)
    try:
        bundle = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    _worker_main(conn, bundle, slot, tag)


def _open_shared(ctx, arena: shm.Arena, label: str, bufs: list, reader: str) -> Packet:
    """A value published in shared memory, opened (validated) in this process."""
    from ..context import Ciphertext, Plaintext
    from .keys import serial_type
    values = []
    for i, (name, size) in enumerate(bufs):
        where = f"value {i} of {label}, read by {reader}"
        try:
            with arena.view(name, size) as mv:
                t = serial_type(mv[:8], where)
                if t not in (1, 2):
                    raise ValueError(f"expected a ciphertext or plaintext, got object type {t}")
                values.append((Ciphertext if t == 1 else Plaintext).from_bytes(ctx, mv))
        except (ValueError, OSError) as e:
            raise TaskError(f"{where} failed validation: {e}") from None
    return Packet(label, values)


def _worker_main(conn, bundle: KeyBundle, slot: int, tag: str) -> None:
    """Three threads: this one receives messages and opens the inputs of the tasks queued next (validation of what
    arrived through shared memory), one computes, one publishes outputs and reports them -- so that with two
    tasks in flight, moving values overlaps computing (each releases the GIL in Ember's C++)."""
    try:
        ctx = bundle.install()
    except Exception as e:  # noqa: BLE001 -- reported to the client, which refuses to start
        conn.send_bytes(pickle.dumps(("fail", f"{type(e).__name__}: {e}")))
        return
    arena = shm.Arena(f"{tag}-w{slot}-{os.getpid()}")
    conn.send_bytes(pickle.dumps(("ready", os.getpid(), arena.tag)))
    store: dict = {}    # value key -> Packet of opened values (resident)
    fns: dict = {}      # digest of a task function's pickled bytes -> those bytes (this run's functions)
    me = worker_name()
    send_lock = threading.Lock()
    runq: queue.Queue = queue.Queue()
    pubq: queue.Queue = queue.Queue()

    def send(msg) -> None:
        with send_lock:
            try:
                conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                pass

    def failed(tid, label, e: Exception) -> None:
        """Reports a task's failure: a TaskError's message as it is, anything else with its type and this worker."""
        if isinstance(e, TaskError):
            send(("error", tid, str(e)))
        else:
            send(("error", tid, f"{label} failed on worker {slot}: {type(e).__name__}: {e}"))

    def compute() -> None:
        while (item := runq.get()) is not None:
            tid, label, op, params, fn, args, packets, profile, meta = item
            try:
                out = execute(bundle.ident, label, op, params, fn, args, *packets, profile=profile)
            except Exception as e:  # noqa: BLE001
                failed(tid, label, e)
                continue
            store[("node", tid)] = out
            meta.update(compute_s=out.seconds, profile=out.profile)
            pubq.put((tid, out, meta))

    def publish() -> None:
        while (item := pubq.get()) is not None:
            tid, out, meta = item
            try:
                t0 = time.perf_counter()
                bufs = [arena.write(v) for v in out.values] if meta["publish"] else []
                meta["publish_s"] = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                send(("error", tid, f"{out.label} on worker {slot}: its output could not be written: {type(e).__name__}: {e}"))
                continue
            meta["sent_at"] = time.monotonic()
            send(("done", tid, meta, bufs))

    threads = [threading.Thread(target=compute, daemon=True), threading.Thread(target=publish, daemon=True)]
    for t in threads:
        t.start()
    try:
        while True:
            try:
                m = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            if m[0] == "stop":
                return
            if m[0] == "reset":
                store.clear()
                fns.clear()     # the client sends each function again in its next run
                arena.release_all()
                continue
            if m[0] == "release":   # [(value key, own buffer names)]: every reader of the value is done
                for key, names in m[1]:
                    store.pop(key, None)
                    for name in names:
                        arena.release(name)
                continue
            if m[0] == "forget":    # buffers of a dead worker, removed: drop their mappings
                for name in m[1]:
                    arena.forget(name)
                continue
            _, tid, label, op, params, fn_key, fn_blob, args, inputs, profile, publish = m
            meta = {"recv_at": time.monotonic(), "worker": me, "publish": publish}
            try:
                t0 = time.perf_counter()
                packets = []
                for inp in inputs:
                    if inp[0] == "ref":
                        packets.append(store[inp[1]])
                    else:                                   # ("shm", key, label, [(name, size)])
                        p = _open_shared(ctx, arena, inp[2], inp[3], label)
                        store[inp[1]] = p
                        packets.append(p)
                meta["open_s"] = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                failed(tid, label, e)
                continue
            if fn_blob:
                fns[fn_key] = fn_blob
            runq.put((tid, label, op, params, fns.get(fn_key), args, packets, profile, meta))
    finally:
        runq.put(None)
        threads[0].join(timeout=60)
        pubq.put(None)
        threads[1].join(timeout=60)
        store.clear()
        arena.close()


class _Worker:
    def __init__(self, proc, conn, slot: int):
        self.proc, self.conn, self.slot = proc, conn, slot
        self.state = "starting"   # starting | idle | busy | dead
        self.tasks: list[int] = []         # in flight, in the order sent
        self.pid: Optional[int] = None
        self.tag: Optional[str] = None    # its shared-memory arena's tag
        self.fns: set = set()             # digests of the task functions it has been sent in this run


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
        self.tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.arena = shm.Arena(f"{self.tag}-c")
        self._dead_tags: list[str] = []
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
        code = f"from ember.run.pool import _worker_entry; _worker_entry({b.fileno()}, {slot}, {self.tag!r})"
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
                w.state, w.pid, w.tag = "idle", m[1], m[2]
            elif m[0] == "fail":
                self._kill(w)
                raise RuntimeError(f"ember worker {w.slot} could not install the keys: {m[1]}")
            elif m[0] == "done":
                if m[1] in w.tasks:
                    w.tasks.remove(m[1])
                w.state = "busy" if w.tasks else "idle"
                if run is not None:
                    m[2]["arrived_at"] = time.monotonic()
                    run.done(w, m[1], m[2], m[3])
            elif m[0] == "error":
                if m[1] in w.tasks:
                    w.tasks.remove(m[1])
                w.state = "busy" if w.tasks else "idle"
                raise TaskError(m[2])

    def _died(self, w: _Worker, run) -> None:
        tasks = list(w.tasks)
        self._kill(w)
        if w.tag is not None:   # its buffers outlive it; removed once the run no longer needs them
            self._dead_tags.append(w.tag)
        if run is not None:
            run.lost(w, tasks)
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

    def _send(self, w: _Worker, msg) -> bool:
        try:
            w.conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
            return True
        except OSError:
            return False

    def close(self) -> None:
        for w in getattr(self, "_workers", []):
            if w.state != "dead":
                self._send(w, ("stop",))
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
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # runs ------------------------------------------------------------------------------------------------------
    def _run(self, program, packets, placement, timeout, progress, profile) -> RunResult:
        if not self._workers:
            raise RuntimeError("this pool is closed")
        t_start = time.perf_counter()
        run = _Run(self, program, packets, placement or {}, progress, profile)
        for w in self._workers:
            if w.state in ("idle", "busy"):
                self._send(w, ("reset",))
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


class _Run:
    """The client-side state of one run on a LocalPool."""

    def __init__(self, pool: LocalPool, program, packets, placement: dict, progress, profile: bool):
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
        self.keys = {t.id: _input_keys(t) for t in program.tasks}
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
        return self.n_done == len(self.tasks)

    def waiting(self) -> str:
        busy = [f"{self.tasks[t].label} on worker {w.slot}" for w in self.pool._workers if w.state == "busy" for t in w.tasks]
        return ", ".join(busy) if busy else f"{len(self.ready)} ready task(s) and no idle worker"

    def _alive(self) -> set:
        return {w.slot for w in self.pool._workers if w.state in ("idle", "busy")}

    def _pick(self, slot: int) -> Optional[int]:
        """The next ready task for worker `slot`: pinned here or unpinned (or pinned to a lost worker), preferring
        one whose inputs this worker holds."""
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
        """A program input written into the client's shared memory (once)."""
        pub = self.published.get(k)
        if pub is None:
            p = self.packets[k[1]]
            pub = self.published[k] = (self.pool.arena.tag, [self.pool.arena.write(v) for v in p.values])
        return pub

    def background(self) -> bool:
        """One unit of client work while the workers compute: open an arrived program output, else write the input
        of a ready task not yet dispatched. False when there was nothing to do."""
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
        self.opened[k] = _open_shared(self.pool.ctx, self.pool.arena, label, bufs, "the client")
        self._maybe_release(k)

    def outputs(self) -> list:
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
        """Once every reader of value k is done (and a program output is opened in the client), its buffers are
        reused and the workers drop it."""
        if self.readers.get(k) or (k in self.out_keys and k[0] == "node" and k not in self.opened):
            return
        pub = self.published.pop(k, None)
        holders = self.where.pop(k, set())
        names = [n for n, _ in pub[1]] if pub else []
        owner = pub[0] if pub else None
        for w in self.pool._workers:
            if w.state in ("idle", "busy") and (w.slot in holders or w.tag == owner):
                self.pool._send(w, ("release", [(k, names if w.tag == owner else [])]))
        if owner == self.pool.arena.tag:
            for n in names:
                self.pool.arena.release(n)

    # dispatch ----------------------------------------------------------------------------------------------------
    def dispatch(self) -> None:
        for _ in range(DEPTH):
            for w in self.pool._workers:
                if w.state in ("idle", "busy") and len(w.tasks) < DEPTH and self.ready:
                    self._send_one(w)

    def _send_one(self, w: _Worker) -> None:
        tid = self._pick(w.slot)
        if tid is None:
            return
        t = self.tasks[tid]
        keys = self.keys[tid]
        inputs = []
        for k in keys:
            if w.slot in self.where.get(k, ()):
                inputs.append(("ref", k))
            else:
                if k[0] == "in" and k not in self.published:
                    t0 = time.perf_counter()
                    self._publish_input(k)
                    self.prep[tid] = self.prep.get(tid, 0.0) + time.perf_counter() - t0
                label = self.tasks[k[1]].label if k[0] == "node" else f"input {k[1]}"
                inputs.append(("shm", k, label, self.published[k][1]))
        args = [(keys.index(_key(r)), r[2]) for r in t.args]
        fn_key = self.fn_keys[id(t.fn)] if t.fn is not None else None
        blob = self.fn_blobs[fn_key] if fn_key is not None and fn_key not in w.fns else b""
        # its outputs go to shared memory when the client or a task elsewhere may read them; a value read only by
        # tasks pinned to this worker stays resident there alone (recomputed if the worker is lost)
        publish = ("node", tid) in self.out_keys or any(self.placement.get(r) != w.slot
                                                         for r in self.dependents.get(tid, ()))
        msg = ("task", tid, t.label, t.op, t.params, fn_key, blob, args, inputs, self.profile, publish)
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

    def done(self, w: _Worker, tid: int, meta: dict, bufs: list) -> None:
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

    def lost(self, w: _Worker, tids: list) -> None:
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
        """Task tid's output was lost with its worker: run it again (and, first, whatever of its own inputs was
        lost too); the tasks still to read it wait for it again."""
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
        """Per task: worker, compute_s, open_s, publish_s (on the worker), prep_s and output_open_s (client), and
        the round trip: dispatch to arrival (seconds, one monotonic clock for every process of this machine)."""
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
        """Buffers of this run go back to their owners; a dead worker's files are removed (and unmapped)."""
        self.pool.arena.release_all()
        for tag in self.pool._dead_tags:
            gone = shm.remove_tagged(tag + "-")
            for n in gone:
                self.pool.arena.forget(n)
            for w in self.pool._workers:
                if w.state in ("idle", "busy") and gone:
                    self.pool._send(w, ("forget", gone))
        self.pool._dead_tags.clear()


def _key(r) -> tuple:
    return ("in", r[1]) if r[0] == "in" else ("node", r[1])


def _input_keys(t) -> list:
    keys = []
    for r in t.args:
        k = _key(r)
        if k not in keys:
            keys.append(k)
    return keys
