"""The executor interface shared by the local pool and Dask.

An executor maps a function over ciphertexts, calls a traced function, or runs a captured graph (optionally
placed by a HEFT/PEFT schedule); each returns a RunResult with every node's measured time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from .keys import KeyBundle, register_context
from .packet import Packet
from .program import Program

DEFAULT_TIMEOUT = 600.0


@dataclass
class RunResult:
    """The outcome of one run on an executor: its outputs and where the time went.

    Parameters
    ----------
    outputs : list
        The output ciphertexts (and plaintexts) of the program, opened in the client's context and validated.
    seconds : float
        The run's wall time, in seconds.
    node_seconds : dict, optional
        ``{task id: seconds}``: each task's measured time on its worker (default empty).
    node_worker : dict, optional
        ``{task id: worker name}``: the worker that ran each task (default empty).
    workers_lost : int, optional
        Workers that died during the run (default 0).
    tasks_rerun : int, optional
        Task executions repeated because of them (default 0).
    profile : dict, optional
        ``{task id: [[op, level, seconds], ...]}``: per task, every evaluator operation it ran (filled when the
        run was made with ``profile=True``; default empty).
    records : list of dict, optional
        Per task, where its time went besides the operation (the local pool: ``open_s``, ``publish_s`` on the
        worker, ``prep_s`` / ``output_open_s`` on the client, ``round_trip_s``; Dask: ``open_s``, ``publish_s``,
        ``output_open_s``); ember.sched.overhead fits the executor's per-task overhead on them (default empty).
    """

    outputs: list
    seconds: float
    node_seconds: dict = field(default_factory=dict)
    node_worker: dict = field(default_factory=dict)
    workers_lost: int = 0
    tasks_rerun: int = 0
    profile: dict = field(default_factory=dict)
    records: list = field(default_factory=list)

    def measured_graph(self, graph):
        """Return a copy of `graph` whose nodes carry the seconds measured on the workers.

        For cost tables: ember.sched's profile-guided updates. Nodes this run did not time keep their seconds.

        Parameters
        ----------
        graph : ember.graph.Graph
            The graph the run executed (its node ids are the run's task ids).

        Returns
        -------
        ember.graph.Graph
            A deep copy of `graph` with ``node.seconds`` set from ``node_seconds``.
        """
        import copy
        from ..graph.model import Graph
        g = Graph.from_dict(copy.deepcopy(graph.to_dict()))
        for n in g.nodes:
            if n.id in self.node_seconds:
                n.seconds = self.node_seconds[n.id]
        return g

    def run_record(self, graph) -> dict:
        """Return every node's measured time on the worker that ran it, as a run record.

        The record is what ``CostTable.update_from_run()`` reads.

        Parameters
        ----------
        graph : ember.graph.Graph
            The graph the run executed (its node ids are the run's task ids).

        Returns
        -------
        dict
            ``{"tasks": [{"op", "level", "seconds", "device", "count"}, ...]}``, one entry per node this run timed:
            ``device`` is the worker's name, ``count`` the node's outputs for a ``rotate_many`` node, else 1.
        """
        tasks = []
        for n in graph.nodes:
            if n.id in self.node_seconds:
                count = len(n.outputs) if n.op == "rotate_many" else 1
                tasks.append({"op": n.op, "level": n.level, "seconds": self.node_seconds[n.id],
                              "device": self.node_worker.get(n.id, ""), "count": count})
        return {"tasks": tasks}


def _by_value_id(graph, sources, inputs: dict) -> dict:
    """Return run_graph's inputs keyed by value id: a name given to ``graph.input(x, name)`` becomes its value's id.

    Raises ValueError for a name that names no source value (naming those that do), a name shared by several
    source values, or a source value given twice (by its name and its id).
    """
    sources = set(sources)
    named: dict[str, list[int]] = {}
    for vid, name in sorted(graph.names.items()):
        named.setdefault(name, []).append(vid)
    out: dict = {}
    for key, x in inputs.items():
        vid = key
        if isinstance(key, str):
            vids = [v for v in named.get(key, []) if v in sources]
            if not vids:
                known = sorted(n for n, vs in named.items() if any(v in sources for v in vs))
                what = (f"it names value(s) {named[key]}, which a node makes" if key in named
                        else "no value has that name")
                raise ValueError(f"run_graph: input {key!r} is not the name of a source value of the graph ({what}); "
                                 f"the named inputs are {', '.join(map(repr, known)) or 'none'}")
            if len(vids) > 1:
                raise ValueError(f"run_graph: input {key!r} names several source values {vids}; key them by value id")
            vid = vids[0]
        if vid in out:
            raise ValueError(f"run_graph: source value {vid} ({graph.names.get(vid)!r}) is given twice, by its name "
                             "and by its id")
        out[vid] = x
    return out


class Executor:
    """Base class of the executors.

    Subclasses implement ``_run(program, packets, placement, timeout, progress, profile)`` and
    :meth:`worker_names`. An executor is a context manager: leaving the ``with`` block closes it.

    Parameters
    ----------
    ctx : ember.Context
        The client's context; the inputs of every run must belong to it.
    keys : ember.KeySet, tuple or KeyBundle
        The evaluation keys for the workers: a KeySet (only its evaluation keys are used), a ``(relin, galois)``
        pair, or a :class:`~ember.run.KeyBundle` (e.g. from a key directory).
    threads : int, optional
        Threads of each worker's Context, used when a bundle is made from `keys` (default 1).

    Raises
    ------
    TypeError
        If `ctx` is not an ember.Context.
    SecretKeyRefused
        If `keys` is a secret key.
    """

    def __init__(self, ctx, keys, threads: int = 1):
        from ..context import Context
        if not isinstance(ctx, Context):
            raise TypeError("the first argument must be the client's ember.Context")
        self.ctx = ctx
        self.bundle = keys if isinstance(keys, KeyBundle) else KeyBundle.from_keys(ctx, keys, threads=threads)
        if self.bundle.ident == "":
            raise ValueError("bad key bundle")
        register_context(ctx)

    # public API ------------------------------------------------------------------------------------------------
    def map(self, fn: Callable, cts: Sequence, **kw) -> RunResult:
        """Run ``fn(ctx, ct)`` on every ciphertext, as independent tasks spread over the workers.

        `fn` runs on the workers with their own Context (use only the ctx it is given) and must return
        ciphertexts.

        Parameters
        ----------
        fn : callable
            ``fn(ctx, ct)``, returning a ciphertext (or a list or tuple of them).
        cts : sequence of Ciphertext or Plaintext
            The inputs, one task each.
        **kw
            Passed to :meth:`run` (`placement`, `timeout`, `progress`, `profile`).

        Returns
        -------
        RunResult
            ``outputs[i]`` is the (first) output of ``fn`` on ``cts[i]``.
        """
        cts = list(cts)
        return self.run(Program.batch(fn, len(cts)), cts, **kw)

    def call(self, fn: Callable, *cts, **kw) -> RunResult:
        """Run ``fn(ctx, *cts)`` as one task on one worker.

        Parameters
        ----------
        fn : callable
            ``fn(ctx, *cts)``, returning a ciphertext (or a list or tuple of them).
        *cts : Ciphertext or Plaintext
            Its arguments.
        **kw
            Passed to :meth:`run` (`placement`, `timeout`, `progress`, `profile`).

        Returns
        -------
        RunResult
            Its ``outputs`` hold the first value ``fn`` returned.
        """
        return self.run(Program.call(fn, len(cts)), list(cts), **kw)

    def run_graph(self, graph, inputs, schedule=None, **kw) -> RunResult:
        """Execute a captured graph node by node, one task per node.

        Parameters
        ----------
        graph : ember.graph.Graph
            The graph (captured live or symbolically).
        inputs : dict or sequence
            ``{name or value id: Ciphertext | Plaintext}`` for every source value of the graph (values no node
            made), keyed by the name given to ``graph.input(x, name)`` or by the value id; or a list of them in
            source-id order.
        schedule : ember.sched.Schedule, optional
            A schedule of this graph on K workers: each node is pinned to its device's worker (falling back to
            another if that one is lost). None (the default): the executor places the tasks.
        **kw
            Passed to :meth:`run` (`timeout`, `progress`, `profile`).

        Returns
        -------
        RunResult
            Its ``outputs`` are the values of ``graph.outputs`` (or, if none are marked, of the values no node
            reads); task ids are node ids.

        Raises
        ------
        ValueError
            If `inputs` is a dict without some source value, with a name that is not the name of a source value,
            or with a value given twice (by its name and its id), or a node's operation cannot be executed from a
            graph.
        """
        prog = Program.from_graph(graph)
        if isinstance(inputs, dict):
            inputs = _by_value_id(graph, prog.source_values, inputs)
            missing = [v for v in prog.source_values if v not in inputs]
            if missing:
                raise ValueError("run_graph: no input given for source value(s) "
                                 + ", ".join(f"{v} ({graph.names[v]!r})" if v in graph.names else str(v) for v in missing))
            inputs = [inputs[v] for v in prog.source_values]
        placement = None
        if schedule is not None:
            names = list(schedule.devices)
            placement = {int(t): (int(d) if isinstance(d, int) else names.index(d)) for t, d in schedule.device.items()}
        return self.run(prog, list(inputs), placement=placement, **kw)

    def run(self, program: Program, inputs: Sequence, placement: Optional[dict] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT, progress: Optional[Callable] = None,
            profile: bool = False) -> RunResult:
        """Run a program on the workers.

        Parameters
        ----------
        program : Program
            The tasks to run.
        inputs : sequence of Ciphertext or Plaintext
            The program's sources, in order; they must belong to the executor's context.
        placement : dict, optional
            ``{task id: worker index}``: tasks pinned to a worker (index into :meth:`worker_names`); a pinned
            worker lost during the run has its tasks run elsewhere. None (the default): the executor places them.
        timeout : float or None, optional
            Seconds the run may take (default ``DEFAULT_TIMEOUT``, 600); None: no limit.
        progress : callable, optional
            Called as ``progress(done, total)`` each time a task completes.
        profile : bool, optional
            Record every evaluator operation of the ``call`` tasks in ``RunResult.profile`` (default False).

        Returns
        -------
        RunResult
            The outputs, the run's wall time and the per-task measurements.

        Raises
        ------
        ValueError
            If the program is malformed, the input count or context is wrong, `timeout` is not positive, or
            `placement` pins a task the program does not have or to a worker the executor does not have.
        TypeError
            If an input is not an ember Ciphertext or Plaintext.
        TaskError
            If a task raised on its worker.
        TimeoutError
            If the run did not finish within `timeout`.
        """
        from ..context import Ciphertext, Plaintext
        program.check()
        if len(inputs) != program.n_sources:
            raise ValueError(f"the program has {program.n_sources} inputs, {len(inputs)} given")
        for i, x in enumerate(inputs):
            if not isinstance(x, (Ciphertext, Plaintext)):
                raise TypeError(f"input {i}: expected an ember Ciphertext or Plaintext, got {type(x).__name__}")
            if x._ctx is not self.ctx:
                raise ValueError(f"input {i} belongs to another context than the executor's")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if placement:
            self._check_placement(program, placement)
        packets = [Packet(f"input {i}", [x]) for i, x in enumerate(inputs)]
        t0 = time.perf_counter()
        res = self._run(program, packets, placement, timeout, progress, profile)
        if not res.seconds:  # (an executor may time the run itself, without its bookkeeping)
            res.seconds = time.perf_counter() - t0
        return res

    def _check_placement(self, program: Program, placement: dict) -> None:
        """Check that `placement` pins only tasks of `program`, to workers this executor has.

        A pin to a worker this executor does not have is an error naming the node and the worker (the local pool
        and Dask alike); a pinned worker lost during the run is another matter: its tasks go elsewhere.
        """
        names = self.worker_names()
        labels = {t.id: t.label for t in program.tasks}
        for tid, w in sorted(placement.items(), key=lambda kv: str(kv[0])):
            if tid not in labels:
                raise ValueError(f"the placement pins node {tid!r}, which the program does not have")
            if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w < len(names):
                raise ValueError(f"{labels[tid]} is pinned to worker {w!r}, and this executor has "
                                 f"{len(names)} worker(s): 0..{len(names) - 1} ({', '.join(names)})")

    def _open_outputs(self, program: Program, results: dict, packets: list) -> list:
        out = []
        for r in program.outputs:
            p = packets[r[1]] if r[0] == "in" else results[r[1]]
            out.append(p.open(self.ctx, reader="the client")[r[2]])
        return out

    def worker_names(self) -> list[str]:
        """Return the names of the executor's workers, by worker index.

        Returns
        -------
        list of str
            One name per worker; a placement's worker indices index this list.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release the executor's workers and resources (the base class has none)."""
        pass

    def __enter__(self):
        """Return the executor itself."""
        return self

    def __exit__(self, *exc):
        """Close the executor; an exception raised in the block propagates."""
        self.close()
        return False
