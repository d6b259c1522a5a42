"""The local pool's worker process (ember.run.pool starts it as ``python -c``).

It installs the evaluation keys, then receives tasks (ember.run.messages.RunTask), opens their inputs from shared
memory or its resident store, runs them and publishes their outputs, reporting Done / TaskFailed. Three threads:
the receiving one opens the inputs of the task queued next, one computes, one publishes -- so that with two tasks
in flight, moving values overlaps computing (each releases the GIL in Ember's C++).
"""
from __future__ import annotations

import os
import pickle
import queue
import threading
import time
from multiprocessing.connection import Connection

from . import shm
from .keys import KeyBundle
from .messages import (Done, Failed, Forget, Ready, Release, Reset, ResidentInput, RunTask, Stop,
                       TaskFailed)
from .packet import Packet
from .program import TaskError, execute, worker_name


def worker_entry(fd: int, slot: int, tag: str) -> None:
    """Run the worker process: read the key bundle from the socket `fd`, then serve (:func:`worker_main`).

    Started as `python -c ...`, so the client's __main__ is never re-imported.
    """
    conn = Connection(fd)
    try:
        bundle = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    worker_main(conn, bundle, slot, tag)


def open_shared(ctx, arena: shm.Arena, label: str, bufs: list, reader: str) -> Packet:
    """Open (validate) in this process a value published in shared memory.

    Parameters
    ----------
    ctx : ember.Context
        The context to open it in.
    arena : ember.run.shm.Arena
        The arena to read the buffers through.
    label : str
        The label of the node that made it.
    bufs : list of tuple
        ``[(name, size), ...]``: the buffers of its values.
    reader : str
        Who reads it, for the error message.

    Returns
    -------
    Packet
        The opened values.

    Raises
    ------
    TaskError
        If a value fails validation.
    """
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


def worker_main(conn, bundle: KeyBundle, slot: int, tag: str) -> None:
    """Install the keys, then serve tasks until Stop or the client's end of the connection closes.

    Three threads: this one receives messages and opens the inputs of the tasks queued next (validation of what
    arrived through shared memory), one computes, one publishes outputs and reports them -- so that with two
    tasks in flight, moving values overlaps computing (each releases the GIL in Ember's C++).
    """
    try:
        ctx = bundle.install()
    except Exception as e:  # noqa: BLE001 -- reported to the client, which refuses to start
        conn.send_bytes(pickle.dumps(Failed(f"{type(e).__name__}: {e}")))
        return
    arena = shm.Arena(f"{tag}-w{slot}-{os.getpid()}")
    conn.send_bytes(pickle.dumps(Ready(os.getpid(), arena.tag)))
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
        """Report a task's failure: a TaskError's message as it is, anything else with its type and this worker."""
        if isinstance(e, TaskError):
            send(TaskFailed(tid, str(e)))
        else:
            send(TaskFailed(tid, f"{label} failed on worker {slot}: {type(e).__name__}: {e}"))

    def compute() -> None:
        while (item := runq.get()) is not None:
            task, fn, packets, meta = item
            try:
                out = execute(bundle.ident, task.label, task.op, task.params, fn, task.args, *packets,
                              profile=task.profile)
            except Exception as e:  # noqa: BLE001
                failed(task.tid, task.label, e)
                continue
            tid = task.tid
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
                send(TaskFailed(tid, f"{out.label} on worker {slot}: its output could not be written: "
                                     f"{type(e).__name__}: {e}"))
                continue
            meta["sent_at"] = time.monotonic()
            send(Done(tid, meta, bufs))

    threads = [threading.Thread(target=compute, daemon=True), threading.Thread(target=publish, daemon=True)]
    for t in threads:
        t.start()
    try:
        while True:
            try:
                m = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                return
            if isinstance(m, Stop):
                return
            if isinstance(m, Reset):
                store.clear()
                fns.clear()     # the client sends each function again in its next run
                arena.release_all()
                continue
            if isinstance(m, Release):  # every reader of the value is done
                for key, names in m.items:
                    store.pop(key, None)
                    for name in names:
                        arena.release(name)
                continue
            if isinstance(m, Forget):   # buffers of a dead worker, removed: drop their mappings
                for name in m.names:
                    arena.forget(name)
                continue
            task: RunTask = m
            meta = {"recv_at": time.monotonic(), "worker": me, "publish": task.publish}
            try:
                t0 = time.perf_counter()
                packets = []
                for inp in task.inputs:
                    if isinstance(inp, ResidentInput):
                        packets.append(store[inp.key])
                    else:
                        p = open_shared(ctx, arena, inp.label, inp.buffers, task.label)
                        store[inp.key] = p
                        packets.append(p)
                meta["open_s"] = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                failed(task.tid, task.label, e)
                continue
            if task.fn_blob:
                fns[task.fn_key] = task.fn_blob
            runq.put((task, fns.get(task.fn_key), packets, meta))
    finally:
        runq.put(None)
        threads[0].join(timeout=60)
        pubq.put(None)
        threads[1].join(timeout=60)
        store.clear()
        arena.close()
