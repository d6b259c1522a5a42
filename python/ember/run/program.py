"""What executors run: a Program is a list of Tasks over numbered sources (the program's inputs).

A task is one operation -- an evaluator operation of a captured graph node, or a call of a Python function
(traced on the worker) -- whose arguments are sources or outputs of earlier tasks.

Programs come from::

  Program.batch(fn, n)          n independent calls fn(ctx, x_i) (a batch of tasks)
  Program.call(fn, n_args)      one call fn(ctx, *args) (a traced Python function as one task)
  Program.from_graph(graph)     one task per node of an ember.graph.Graph (captured live or symbolically)

execute() is what a worker runs for one task (in a pool process or a Dask worker).
"""
from __future__ import annotations

import collections
import contextlib
import os
import pickle
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import cloudpickle

from .packet import Packet


class TaskError(RuntimeError):
    """A task raised on a worker: the message names its node, its operation and the worker. Not retried."""


# (kind, index, output): ("in", i, 0) is source i; ("node", t, j) is output j of task t.
Ref = tuple


@dataclass
class Task:
    """One operation of a Program.

    An argument is a reference ``(kind, index, output)``: ``("in", i, 0)`` is source i of the program,
    ``("node", t, j)`` is output j of task t (an earlier task).

    Parameters
    ----------
    id : int
        The task's id (a graph's node id; the tasks of a program are in increasing id order).
    op : str
        ``"call"`` (a Python function, `fn`) or an evaluator operation of a graph node (a key of ``OPS``).
    args : list of tuple
        The references of its arguments, in order.
    params : dict, optional
        The operation's parameters (a graph node's params, e.g. ``{"steps": 3}``; default empty).
    fn : callable, optional
        The function of a ``"call"`` task, called as ``fn(ctx, *args)`` (default None).
    """

    id: int
    op: str
    args: list                      # [Ref]
    params: dict = field(default_factory=dict)
    fn: Optional[Callable] = None   # op == "call"

    @property
    def label(self) -> str:
        """The task as errors name it: ``"node 7 (mul)"``, or the function's name for a call task."""
        return f"node {self.id} ({getattr(self.fn, '__name__', 'call') if self.op == 'call' else self.op})"

    def deps(self) -> list[int]:
        """Return the tasks whose outputs this task reads.

        Returns
        -------
        list of int
            Their ids, sorted, each once.
        """
        return sorted({r[1] for r in self.args if r[0] == "node"})


@dataclass
class Program:
    """A list of tasks over numbered sources, and the references of its outputs.

    Parameters
    ----------
    tasks : list of Task
        The tasks, each reading only sources and earlier tasks.
    n_sources : int
        How many inputs the program takes.
    outputs : list of tuple
        The references (as in :class:`Task`) of what a run returns, in order.
    graph : ember.graph.Graph, optional
        The graph the program came from, if any (default None).
    """

    tasks: list
    n_sources: int
    outputs: list                   # [Ref]: what run() returns
    graph: object = None            # the ember.graph.Graph it came from, if any

    @classmethod
    def batch(cls, fn: Callable, n: int) -> "Program":
        """Make `n` independent tasks ``fn(ctx, x_i) -> ciphertext``.

        Source i is ``x_i``; output i is the (first) result of task i.

        Parameters
        ----------
        fn : callable
            ``fn(ctx, x)``, returning a ciphertext (or a list or tuple of them).
        n : int
            The number of tasks (and sources).

        Returns
        -------
        Program
            The batch.

        Raises
        ------
        TypeError
            If `fn` is not callable.
        """
        _check_fn(fn)
        tasks = [Task(i, "call", [("in", i, 0)], fn=fn) for i in range(n)]
        return cls(tasks, n, [("node", i, 0) for i in range(n)])

    @classmethod
    def call(cls, fn: Callable, n_args: int) -> "Program":
        """Make one task ``fn(ctx, *args)`` (a traced Python function as one task).

        Parameters
        ----------
        fn : callable
            ``fn(ctx, *args)``, returning a ciphertext (or a list or tuple of them).
        n_args : int
            The number of its arguments (the program's sources).

        Returns
        -------
        Program
            One task; its output is the first value `fn` returns.

        Raises
        ------
        TypeError
            If `fn` is not callable.
        """
        _check_fn(fn)
        return cls([Task(0, "call", [("in", i, 0) for i in range(n_args)], fn=fn)], n_args, [("node", 0, 0)])

    @classmethod
    def from_graph(cls, graph) -> "Program":
        """Make one task per node of a graph.

        The graph's sources (values no node made, in id order) are the program's inputs, listed in its
        ``source_values`` attribute; its outputs are ``graph.outputs`` (or, if none are marked, the values no
        node reads).

        Parameters
        ----------
        graph : ember.graph.Graph
            The graph (captured live or symbolically).

        Returns
        -------
        Program
            The program, with ``graph`` and ``source_values`` set.

        Raises
        ------
        ValueError
            If a node's operation cannot be executed from a graph (a constant or vector the graph does not
            record, or an internal operation of a circuit).
        """
        producer, sources = {}, sorted(v.id for v in graph.values.values() if v.producer is None)
        src_index = {v: i for i, v in enumerate(sources)}
        tasks = []
        for n in graph.nodes:
            if n.op not in OPS:
                raise ValueError(f"node {n.id} ({n.op}): cannot be executed from a graph: "
                                 f"{UNSUPPORTED.get(n.op, 'unknown operation')}")
            args = [("node", *producer[v]) if v in producer else ("in", src_index[v], 0) for v in n.inputs]
            tasks.append(Task(n.id, n.op, args, dict(n.params)))
            for j, v in enumerate(n.outputs):
                producer[v] = (n.id, j)
        outs = list(graph.outputs)
        if not outs:
            read = {v for n in graph.nodes for v in n.inputs}
            outs = [v for n in graph.nodes for v in n.outputs if v not in read]
        refs = [("node", *producer[v]) if v in producer else ("in", src_index[v], 0) for v in outs]
        p = cls(tasks, len(sources), refs, graph)
        p.source_values = sources
        return p

    def check(self) -> None:
        """Check that every task reads only existing sources and earlier tasks.

        Raises
        ------
        ValueError
            Naming the first task that does not.
        """
        for t in self.tasks:
            for r in t.args:
                if r[0] == "in" and not 0 <= r[1] < self.n_sources:
                    raise ValueError(f"{t.label}: source {r[1]} out of range")
                if r[0] == "node" and r[1] >= t.id:
                    raise ValueError(f"{t.label}: reads node {r[1]}, which is not earlier")


def _check_fn(fn):
    if not callable(fn):
        raise TypeError(f"expected a function fn(ctx, *ciphertexts), got {type(fn).__name__}")


# --- the operations a graph node can be ------------------------------------------------------------------------
def _mul(ctx, a, p):
    from ..context import Plaintext
    if isinstance(a[1], Plaintext):
        return [ctx.multiply(a[0], a[1])]
    return [ctx.multiply(a[0], a[1], merged=bool(p.get("merged", 1)))]


OPS = {
    "add": lambda c, a, p: [a[0] + a[1]],
    "sub": lambda c, a, p: [a[0] - a[1]],
    "negate": lambda c, a, p: [-a[0]],
    "add_plain": lambda c, a, p: [a[0] + a[1]],
    "sub_plain": lambda c, a, p: [a[0] - a[1]],
    "mul": _mul,
    "multiply_relin": lambda c, a, p: [c.multiply(a[0], a[1], rescale=False)],
    "mul_plain": lambda c, a, p: [c.multiply(a[0], a[1], rescale=False)],
    # the products' pairs, then (an odd count) the addend summed before the rescale
    "mul_sum": lambda c, a, p: [c.multiply_sum(zip(a[0:len(a) - 1:2], a[1::2]), merged=bool(p.get("merged", 1)),
                                               addend=a[-1] if len(a) % 2 else None)],
    "rescale": lambda c, a, p: [a[0].rescale()],
    "drop_to_level": lambda c, a, p: [a[0].drop_to_level(int(p["level"]))],
    "rotate": lambda c, a, p: [a[0].rotate(int(p["steps"]))],
    "rotate_many": lambda c, a, p: a[0].rotate_many([int(s) for s in p["steps"]]),
    "conjugate": lambda c, a, p: [a[0].conjugate()],
}
UNSUPPORTED = {k: "the graph does not record its constant or vector (capture the program as a function instead: "
                  "Program.call / Executor.map)"
               for k in ("add_const", "add_vector", "mul_const", "mul_vector", "mul_int", "mul_round",
                         "linear_combination")}
UNSUPPORTED.update({k: "an internal operation of a circuit; run the circuit as a function instead"
                    for k in ("relinearize", "adjust_to", "automorphism")})


_fn_cache: "collections.OrderedDict[bytes, Callable]" = collections.OrderedDict()
_FN_CACHE_SIZE = 64


def dumps_fn(fn) -> bytes:
    """Return a task function as bytes.

    With cloudpickle (a core dependency): lambdas, closures and functions of __main__ or of modules registered
    with cloudpickle.register_pickle_by_value travel by value, others by reference (importable on the workers).

    Parameters
    ----------
    fn : callable or None
        The function.

    Returns
    -------
    bytes
        Its pickle; ``b""`` for None.
    """
    if fn is None:
        return b""
    return cloudpickle.dumps(fn)


def loads_fn(blob: bytes):
    """Return the function of dumps_fn's bytes.

    Cached by the bytes themselves (never by an id, which Python reuses), the latest few only.

    Parameters
    ----------
    blob : bytes
        What :func:`dumps_fn` returned.

    Returns
    -------
    callable or None
        The function; None for empty bytes.
    """
    if not blob:
        return None
    fn = _fn_cache.get(blob)
    if fn is None:
        fn = _fn_cache[blob] = pickle.loads(blob)
        while len(_fn_cache) > _FN_CACHE_SIZE:
            _fn_cache.popitem(last=False)
    else:
        _fn_cache.move_to_end(blob)
    return fn


def worker_name() -> str:
    """Return the name of this worker process.

    Returns
    -------
    str
        The Dask worker's address on a Dask worker, else ``"host:pid"``.
    """
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


_COMPUTE: Optional[threading.Semaphore] = None


def set_compute_slots(n: Optional[int]) -> None:
    """Let at most `n` tasks of this process compute at once.

    A Dask worker with one thread more than its compute slots opens the next task's inputs and publishes the last
    one's outputs while a task computes, as the local pool's worker threads do.

    Parameters
    ----------
    n : int or None
        The number of compute slots; None: no bound.

    Raises
    ------
    ValueError
        If `n` is neither None nor a positive integer.
    """
    global _COMPUTE
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"compute slots must be a positive integer or None, got {n!r}")
    _COMPUTE = None if n is None else threading.Semaphore(n)


def _compute_slot():
    return _COMPUTE if _COMPUTE is not None else contextlib.nullcontext()


def execute(ident: str, label: str, op: str, params: dict, fn, args: list, *packets: Packet,
            profile: bool = False, shm_tag: Optional[str] = None) -> Packet:
    """Run one task on this worker: open (validate) its inputs, apply the operation, time it.

    Any failure is a TaskError naming the node, its op and the worker.

    Parameters
    ----------
    ident : str
        The ident of the installed KeyBundle whose Context runs the task.
    label : str
        The task's label, for errors and the output Packet.
    op : str
        ``"call"`` or a graph operation (a key of ``OPS``).
    params : dict
        The operation's parameters.
    fn : callable, bytes or None
        The function of a call task, or its :func:`dumps_fn` bytes.
    args : list of tuple
        ``args[k] = (packet index, output index)``: where each argument lies in `packets`.
    *packets : Packet
        The packets holding the task's inputs.
    profile : bool, optional
        Record every evaluator operation of a call task (default False).
    shm_tag : str, optional
        Publish the outputs in this process's shared-memory arena for that tag (the Packet then travels as
        buffer names; ember.run.shm). None (the default): the outputs stay in the Packet.

    Returns
    -------
    Packet
        The outputs, with the operation's seconds, the worker's name, the profile and ``io`` (``open_s``,
        ``publish_s``, ``started_at``).

    Raises
    ------
    TaskError
        If the function cannot be loaded, an input fails validation, the operation raises or returns something
        other than ember ciphertexts, or the outputs cannot be published.
    """
    from .keys import context_for
    where = worker_name()
    ctx = context_for(ident)
    if isinstance(fn, bytes):
        try:
            fn = loads_fn(fn)
        except Exception as e:  # noqa: BLE001
            raise TaskError(f"{label} on worker {where}: cannot load its function ({type(e).__name__}: {e}); "
                            "define it in an importable module, in __main__, or register its module with "
                            "cloudpickle.register_pickle_by_value") from None
    t_open = time.perf_counter()
    try:
        opened = [p.open(ctx, reader=label) for p in packets]
    except ValueError as e:
        raise TaskError(f"{label} on worker {where}: {e}") from None
    xs = [opened[i][j] for i, j in args]
    t_open = time.perf_counter() - t_open
    with _compute_slot():
        started = time.monotonic()
        t0 = time.perf_counter()
        out, prof = _apply(ctx, label, where, op, params, fn, xs, profile)
        seconds = time.perf_counter() - t0
    out = Packet(label, out, seconds, where, prof)
    t_pub = time.perf_counter()
    if shm_tag is not None:
        from . import shm
        try:
            out.publish(shm.arena_for(shm_tag))
        except OSError as e:
            raise TaskError(f"{label} on worker {where}: cannot publish its outputs in shared memory: {e}") from None
    out.io = {"open_s": t_open, "publish_s": time.perf_counter() - t_pub, "started_at": started}
    return out


def _apply(ctx, label: str, where: str, op: str, params: dict, fn, xs: list, profile: bool):
    """Apply the task's operation to its opened inputs: (outputs, per-operation profile or None)."""
    prof = None
    try:
        if op == "call":
            if profile:
                from .. import graph as _graph
                with _graph.capture(ctx) as g:
                    out = fn(ctx, *xs)
                prof = [[n.op, n.level, n.seconds] for n in g.nodes]
            else:
                out = fn(ctx, *xs)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
        else:
            outs = OPS[op](ctx, xs, params)
    except Exception as e:  # noqa: BLE001 -- reported to the client with the node, never retried
        raise TaskError(f"{label} failed on worker {where}: {type(e).__name__}: {e}") from None
    from ..context import Ciphertext, Plaintext
    for o in outs:
        if not isinstance(o, (Ciphertext, Plaintext)):
            raise TaskError(f"{label} on worker {where}: returned {type(o).__name__}, expected ember ciphertexts")
    return outs, prof
