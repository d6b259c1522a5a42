"""Live capture: `with ember.graph() as g:` records the evaluator operations run inside the block.

The C++ Evaluator reports every public operation (cpp/ckks/op_record.hpp); this module turns the reports into a
Graph with value ids renumbered 0, 1, ... in order of first appearance, so that two captures of the same program
(live or symbolic) give the same numbering."""
from __future__ import annotations

import threading
from typing import Optional

from .. import _ember
from .model import Graph

_lock = threading.Lock()


def _core_of(x):
    core = getattr(x, "_core", None)
    if core is None or not hasattr(core, "id"):
        raise TypeError(f"expected an ember.Ciphertext or ember.Plaintext, got {type(x).__name__}")
    return core


def _params_meta(ctx) -> dict:
    p = ctx.params
    return {"log_n": int(p.log_n), "levels": int(ctx.max_level), "user_level": int(ctx.user_level),
            "log_scale": float(p.log_scale), "dnum": int(p._core.dnum), "slots": int(ctx.slots),
            "special_primes": len(p._core.p_primes), "threads": int(ctx.threads)}


class Capture:
    """The context manager returned by ember.graph(). `with ember.graph(ctx) as g:` -> g is the Graph, filled
    when the block exits (also when it raises: the operations done so far).

    Inside the block, g.input(ct, name) and g.output(ct, name) name a program's inputs and outputs (outputs are
    also listed in g.outputs, in the order marked); they may also be called after the block on values it saw.
    Captures do not nest, and record the operations of every thread of the process."""

    def __init__(self, context=None, meta: Optional[dict] = None):
        self.graph = Graph(dict(meta or {}))
        if context is not None:
            self.graph.meta.setdefault("params", _params_meta(context))
        self.graph._capture = self
        self._pids: dict[int, int] = {}     # process-wide value id -> graph value id
        self._pending_out: list[tuple[int, Optional[str]]] = []
        self._pending_names: list[tuple[int, str]] = []
        self._open = False
        self._context = context

    def __enter__(self) -> Graph:
        with _lock:
            if _ember.oprec_recording():
                raise RuntimeError("a graph capture is already running; captures do not nest")
            _ember.oprec_start()
            self._open = True
        return self.graph

    def __exit__(self, *exc):
        events = _ember.oprec_stop()
        self._open = False
        self._build(events)
        return False

    # naming ------------------------------------------------------------------------------------
    def mark(self, x, name: Optional[str], output: bool):
        core = _core_of(x)
        pid = core.id
        if pid == 0:
            raise ValueError("this value was not used by any operation in the capture; only values the graph "
                             "saw can be named or marked as outputs")
        if self._open:
            if output:
                self._pending_out.append((pid, name))
            elif name is not None:
                self._pending_names.append((pid, name))
            return
        self._resolve(pid, name, output)

    def _resolve(self, pid: int, name: Optional[str], output: bool):
        if pid not in self._pids:
            raise ValueError("this value does not appear in the captured graph")
        vid = self._pids[pid]
        if output and vid not in self.graph.outputs:
            self.graph.outputs.append(vid)
        if name is not None:
            self.graph.names[vid] = str(name)

    # building ----------------------------------------------------------------------------------
    def _build(self, events: list) -> None:
        g = self.graph

        def value(ref) -> int:
            pid = ref["id"]
            if pid not in self._pids:
                self._pids[pid] = g.add_value(ref["kind"], ref["level"], ref["scale"], ref["slots"], ref["bytes"])
            return self._pids[pid]

        symbolic = any(e["symbolic"] for e in events) or bool(getattr(self._context, "symbolic", False))
        g.meta["mode"] = "symbolic" if symbolic else "live"
        for e in events:
            inputs = [value(r) for r in e["in"]]
            outputs = [value(r) for r in e["out"]]
            params: dict = {}
            for k, v in e["args"]:
                if k in params or (e["op"] == "rotate_many" and k == "steps"):
                    params.setdefault(k, [])
                    if not isinstance(params[k], list):
                        params[k] = [params[k]]
                    params[k].append(int(v))
                else:
                    params[k] = int(v)
            if symbolic:  # nothing was computed: no counters, no times
                g.add_node(e["op"], inputs, outputs, params=params)
            else:
                g.add_node(e["op"], inputs, outputs, params=params, counts=dict(e["counts"]), seconds=e["ns"] * 1e-9)
        for pid, name in self._pending_names:
            self._resolve(pid, name, False)
        for pid, name in self._pending_out:
            self._resolve(pid, name, True)
        self._pending_names, self._pending_out = [], []


def capture(context=None, *, meta: Optional[dict] = None) -> Capture:
    """`with ember.graph(ctx) as g:` records every evaluator operation of the block into the Graph g.
    context (optional): its parameters go into g.meta['params']. g.meta['mode'] is 'symbolic' when the
    operations ran on a SymbolicContext (then nodes have no counts and no seconds), else 'live'."""
    return Capture(context, meta=meta)
