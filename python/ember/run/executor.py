"""The executor interface shared by the local pool and Dask: map a function over ciphertexts, call a traced
function, run a captured graph (optionally placed by a HEFT/PEFT schedule); RunResult with every node's
measured time."""
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
    """outputs: the output ciphertexts (opened in the client's context, validated); seconds: the run's wall time;
    node_seconds / node_worker: each task's measured time and the worker that ran it (by task id); workers_lost:
    workers that died during the run; tasks_rerun: task executions repeated because of them; profile: per task,
    the [op, level, seconds] of every evaluator operation (profile=True); records: per task, where its time went
    besides the operation (the local pool: open_s, publish_s on the worker, prep_s / output_open_s on the client,
    round_trip_s; Dask: open_s, publish_s, output_open_s; ember.sched.overhead fits the executor's per-task overhead on them)."""
    outputs: list
    seconds: float
    node_seconds: dict = field(default_factory=dict)
    node_worker: dict = field(default_factory=dict)
    workers_lost: int = 0
    tasks_rerun: int = 0
    profile: dict = field(default_factory=dict)
    records: list = field(default_factory=list)

    def measured_graph(self, graph):
        """A copy of `graph` whose nodes carry the seconds measured on the workers (for cost tables:
        ember.sched profile-guided updates)."""
        import copy
        from ..graph.model import Graph
        g = Graph.from_dict(copy.deepcopy(graph.to_dict()))
        for n in g.nodes:
            if n.id in self.node_seconds:
                n.seconds = self.node_seconds[n.id]
        return g

    def run_record(self, graph) -> dict:
        """{"tasks": [{"op", "level", "seconds", "device", "count"}]} for CostTable.update_from_run(): every node's
        measured time on the worker that ran it (device: the worker's name)."""
        tasks = []
        for n in graph.nodes:
            if n.id in self.node_seconds:
                count = len(n.outputs) if n.op == "rotate_many" else 1
                tasks.append({"op": n.op, "level": n.level, "seconds": self.node_seconds[n.id],
                              "device": self.node_worker.get(n.id, ""), "count": count})
        return {"tasks": tasks}


class Executor:
    """Base class: subclasses implement _run(program, packets, placement, timeout, progress, profile) and
    worker_names()."""

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
        """fn(ctx, ct) on every ciphertext, as independent tasks spread over the workers. fn runs on the workers
        with their own Context (use only the ctx it is given) and must return ciphertexts."""
        cts = list(cts)
        return self.run(Program.batch(fn, len(cts)), cts, **kw)

    def call(self, fn: Callable, *cts, **kw) -> RunResult:
        """fn(ctx, *cts) as one task on one worker."""
        return self.run(Program.call(fn, len(cts)), list(cts), **kw)

    def run_graph(self, graph, inputs, schedule=None, **kw) -> RunResult:
        """Executes a captured graph node by node. inputs: {value id: Ciphertext | Plaintext} for every source value
        of the graph (or a list in source-id order). schedule: an ember.sched Schedule of this graph on K workers
        -- each node is pinned to its device's worker (falling back to another if that one is lost); None: the
        executor places tasks."""
        prog = Program.from_graph(graph)
        if isinstance(inputs, dict):
            missing = [v for v in prog.source_values if v not in inputs]
            if missing:
                raise ValueError(f"run_graph: no input given for source value(s) {missing}")
            inputs = [inputs[v] for v in prog.source_values]
        placement = None
        if schedule is not None:
            names = list(schedule.devices)
            placement = {int(t): (int(d) if isinstance(d, int) else names.index(d)) for t, d in schedule.device.items()}
        return self.run(prog, list(inputs), placement=placement, **kw)

    def run(self, program: Program, inputs: Sequence, placement: Optional[dict] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT, progress: Optional[Callable] = None,
            profile: bool = False) -> RunResult:
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
        """A pin to a worker this executor does not have is an error naming the node and the worker (the local
        pool and Dask alike); a pinned worker lost during the run is another matter: its tasks go elsewhere."""
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
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
