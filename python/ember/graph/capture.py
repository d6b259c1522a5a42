"""Live capture: `with ember.graph() as g:` records the evaluator operations run inside the block.

The C++ Evaluator reports every public operation (cpp/ckks/op_record.hpp); this module turns the reports into a
Graph with value ids renumbered 0, 1, ... in order of first appearance, so that two captures of the same program
(live or symbolic) give the same numbering.

Which captures are open is per context (a ``contextvars.ContextVar``: per thread, per asyncio task), never a module
global. In one context, captures nest: an inner capture's operations belong to it and to every capture around
it. The C++ recorder itself is one per process, so captures of different contexts take turns: a capture opened
while another thread's is open waits for it to close (``wait`` seconds at most) -- two threads, or two compute slots
of a Dask worker profiling their tasks, each get the graph of their own operations, one after the other. Each event
names the thread that called the operation, and a capture keeps only its own thread's: the evaluator calls of a
thread that captures nothing, made while another thread captures, never reach that capture.
"""
from __future__ import annotations

import contextvars
import threading
import time
from typing import Optional

from .. import _ember
from .model import Graph

#: The captures open in this context, outermost first.
_open: contextvars.ContextVar[tuple] = contextvars.ContextVar("ember_graph_open_captures", default=())
_turn = threading.Condition()       # guards _holder
_holder: Optional["Capture"] = None  # the outermost capture of the context that holds the C++ recorder
DEFAULT_WAIT = 600.0


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
    """The context manager returned by ember.graph().

    ``with ember.graph(ctx) as g:`` -> g is the Graph, filled when the block exits (also when it raises: the
    operations done so far).

    Inside the block, g.input(ct, name) and g.output(ct, name) name a program's inputs and outputs (outputs are
    also listed in g.outputs, in the order marked); they may also be called after the block on values it saw.
    Captures nest within a thread (the inner one's operations are also the outer one's); a capture in another
    thread waits for this one to close (module docstring).

    Parameters
    ----------
    context : ember.Context, optional
        Its parameters go into ``graph.meta["params"]``.
    meta : dict, optional
        Initial ``graph.meta`` entries.
    wait : float, optional
        Seconds to wait for another thread's capture to close (default 600); then RuntimeError.
    """

    def __init__(self, context=None, meta: Optional[dict] = None, wait: Optional[float] = DEFAULT_WAIT):
        self.graph = Graph(dict(meta or {}))
        if context is not None:
            self.graph.meta.setdefault("params", _params_meta(context))
        self.graph._capture = self
        self._pids: dict[int, int] = {}     # process-wide value id -> graph value id
        self._pending_out: list[tuple[int, Optional[str]]] = []
        self._pending_names: list[tuple[int, str]] = []
        self._events: list = []
        self._open = False
        self._used = False
        self._token = None
        self._context = context
        self._wait = wait

    def __enter__(self) -> Graph:
        """Start recording and return the graph (filled when the block exits).

        Returns
        -------
        Graph
            The graph.

        Raises
        ------
        RuntimeError
            The capture was used before, another thread's capture did not close within `wait` seconds, or the
            operation recorder is already running outside ember.graph.
        """
        if self._used:
            raise RuntimeError("a capture records one block; open a new one with ember.graph()")
        self._used = True
        stack = _open.get()
        if stack:   # nested in this context: what ran so far belongs to the captures around it
            _distribute(_ember.oprec_stop(), stack)
        else:
            _take_turn(self, self._wait)
        try:
            _ember.oprec_start()
        except BaseException:
            if not stack:
                _end_turn()
            raise
        self._token = _open.set(stack + (self,))
        self._open = True
        return self.graph

    def __exit__(self, *exc):
        """Stop recording and build the graph from the operations recorded.

        Parameters
        ----------
        *exc
            The exception type, value and traceback (None when the block did not raise).

        Returns
        -------
        bool
            False: an exception of the block propagates.

        Raises
        ------
        RuntimeError
            This capture is not the innermost open one of this thread.
        ValueError
            A value named or marked as an output inside the block does not appear in the graph.
        """
        stack = _open.get()
        if not stack or stack[-1] is not self:
            raise RuntimeError("graph captures must close in this thread, innermost first")
        _distribute(_ember.oprec_stop(), stack)
        _open.reset(self._token)
        self._open = False
        try:
            if len(stack) > 1:
                _ember.oprec_start()    # the captures around it go on recording
        finally:
            if len(stack) == 1:
                _end_turn()
        events, self._events = self._events, []
        self._build(events)
        return False

    # naming ------------------------------------------------------------------------------------
    def mark(self, x, name: Optional[str], output: bool):
        """Name a value of the capture, or mark it as an output (what Graph.input and Graph.output call).

        Inside the block the request is kept until the block exits; after it, it applies at once.

        Parameters
        ----------
        x : ember.Ciphertext or ember.Plaintext
            The value.
        name : str or None
            Its name (None: no name).
        output : bool
            Append it to the graph's outputs.

        Raises
        ------
        TypeError
            `x` is not a Ciphertext or Plaintext.
        ValueError
            No operation used the value, or (after the block) it does not appear in the graph.
        """
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


def _distribute(events: list, captures) -> None:
    """Give the calling thread's events to the captures (all of this thread: they close in the thread that opened them).

    Parameters
    ----------
    events : list of dict
        The recorder's events (``_ember.oprec_stop()``), of every thread.
    captures : tuple of Capture
        The captures open in this context.
    """
    me = _ember.oprec_thread()
    mine = [e for e in events if e["thread"] == me]
    for c in captures:
        c._events.extend(mine)


def _take_turn(capture: Capture, wait: Optional[float]) -> None:
    """Take the C++ recorder for this context's captures, once no other context's capture holds it."""
    global _holder
    deadline = None if wait is None else time.monotonic() + wait
    with _turn:
        while _holder is not None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise RuntimeError(f"waited {wait:g} s for the graph capture of another thread to close (the "
                                   "operation recorder is one per process; captures of different threads take turns)")
            _turn.wait(left)
        if _ember.oprec_recording():
            raise RuntimeError("the operation recorder is already running outside ember.graph (oprec_start); "
                               "stop it first")
        _holder = capture


def _end_turn() -> None:
    global _holder
    with _turn:
        _holder = None
        _turn.notify_all()


def capture(context=None, *, meta: Optional[dict] = None, wait: Optional[float] = DEFAULT_WAIT) -> Capture:
    """Return a capture: ``with ember.graph(ctx) as g:`` records every evaluator operation of the block into g.

    Parameters
    ----------
    context : ember.Context, optional
        Its parameters go into ``g.meta["params"]``.
    meta : dict, optional
        Initial ``g.meta`` entries.
    wait : float, optional
        Seconds to wait for another thread's capture to close (default 600; None: no limit).

    Returns
    -------
    Capture
        The context manager; ``g.meta["mode"]`` is "symbolic" when the operations ran on a SymbolicContext (then
        nodes have no counts and no seconds), else "live".
    """
    return Capture(context, meta=meta, wait=wait)
