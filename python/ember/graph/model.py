"""The graph data model: values, nodes, the versioned JSON format, and the analyses.

The analyses: op counts, edges, critical path. See the package docstring (ember/graph/__init__.py) for the
format.
"""
from __future__ import annotations

import json
import math
import numbers
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Union

FORMAT = "ember-graph"
VERSION = 1
VALUE_KINDS = ("ciphertext", "plaintext", "digits")  # digits: a split hoisted rotation set's ModUp (split.py)
COUNT_KEYS = ("calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written", "ns")


@dataclass
class Value:
    """A ciphertext or plaintext flowing through the program.

    Parameters
    ----------
    id : int
        The value id.
    kind : str
        "ciphertext", "plaintext" or "digits" (the raised digits of a split hoisted rotation set, split.py).
    level : int
        Its level.
    scale : float
        Its scale.
    slots : int
        Its slots.
    bytes : int
        Its size in bytes.
    producer : int, optional
        The id of the node that made it; None for a source (a program input, a fresh encryption, a plaintext
        constant).
    """

    id: int
    kind: str
    level: int
    scale: float
    slots: int
    bytes: int
    producer: Optional[int] = None

    def as_dict(self) -> dict:
        """Return the value as it is written in the JSON format.

        Returns
        -------
        dict
            id, kind, level, scale, slots, bytes (not the producer, which the nodes give).
        """
        return {"id": self.id, "kind": self.kind, "level": self.level, "scale": self.scale, "slots": self.slots,
                "bytes": self.bytes}


@dataclass
class Node:
    """One evaluator operation.

    Parameters
    ----------
    id : int
        The node id: its position in the graph's (topological) order.
    op : str
        The operation kind.
    inputs, outputs : list of int
        The value ids it reads and makes.
    level : int
        The level it works at: the lowest level of its ciphertext inputs (an operation without ciphertext
        inputs: its first output's).
    slots : int
        Its slots.
    params : dict, optional
        Its integer arguments (rotate "steps", ...; the package docstring).
    counts : dict, optional
        The kernel counters measured while it ran (live capture only; keys COUNT_KEYS).
    seconds : float, optional
        Its measured wall time (live capture only).
    """

    id: int
    op: str
    inputs: list[int]
    outputs: list[int]
    level: int
    slots: int
    params: dict = field(default_factory=dict)
    counts: Optional[dict] = None
    seconds: Optional[float] = None

    def as_dict(self, measurements: bool = True) -> dict:
        """Return the node as it is written in the JSON format.

        Parameters
        ----------
        measurements : bool, optional
            Include counts and seconds (default True).

        Returns
        -------
        dict
            id, op, in, out, level, slots, params (and counts, seconds).
        """
        d = {"id": self.id, "op": self.op, "in": list(self.inputs), "out": list(self.outputs), "level": self.level,
             "slots": self.slots, "params": dict(self.params)}
        if measurements:
            d["counts"] = dict(self.counts) if self.counts is not None else None
            d["seconds"] = self.seconds
        return d


class Graph:
    """A data-flow DAG of HE operations.

    Nodes are kept in a topological order (the order they ran).

    Parameters
    ----------
    meta : dict, optional
        The graph's metadata (mode, params, ...), copied.

    Attributes
    ----------
    values : dict
        ``{value id: Value}``.
    nodes : list of Node
        The nodes, by node id.
    meta : dict
        The metadata.
    outputs : list of int
        The value ids of the program's outputs.
    names : dict
        ``{value id: name}``.
    """

    def __init__(self, meta: Optional[dict] = None):
        self.values: dict[int, Value] = {}
        self.nodes: list[Node] = []
        self.meta: dict = dict(meta or {})
        self.outputs: list[int] = []
        self.names: dict[int, str] = {}
        self._capture = None  # the live/symbolic capture that fills this graph, if any

    def input(self, x, name: Optional[str] = None) -> None:
        """Name an input of the program (a value the capture saw).

        Parameters
        ----------
        x : ember.Ciphertext or ember.Plaintext
            The value.
        name : str, optional
            Its name.

        Raises
        ------
        ValueError
            The graph was not made by a capture, or the capture did not see the value.
        """
        self._mark(x, name, output=False)

    def output(self, x, name: Optional[str] = None) -> None:
        """Mark a value as an output of the program (appended to `outputs`), optionally named.

        Parameters
        ----------
        x : ember.Ciphertext or ember.Plaintext
            The value.
        name : str, optional
            Its name.

        Raises
        ------
        ValueError
            The graph was not made by a capture, or the capture did not see the value.
        """
        self._mark(x, name, output=True)

    def _mark(self, x, name, output: bool) -> None:
        if self._capture is None:
            raise ValueError("this graph was not made by a capture (ember.graph()); edit .outputs / .names directly")
        self._capture.mark(x, name, output)

    # building ----------------------------------------------------------------------------------
    def add_value(self, kind: str, level: int, scale: float, slots: int, nbytes: int, vid: Optional[int] = None) -> int:
        """Add a value (without a producer yet).

        Parameters
        ----------
        kind : str
            "ciphertext", "plaintext" or "digits" (not checked here).
        level : int
            Its level.
        scale : float
            Its scale.
        slots : int
            Its slots.
        nbytes : int
            Its size in bytes.
        vid : int, optional
            Its id (default: the number of values so far).

        Returns
        -------
        int
            Its id.

        Raises
        ------
        ValueError
            The id exists.
        """
        vid = len(self.values) if vid is None else vid
        if vid in self.values:
            raise ValueError(f"value {vid} already exists")
        self.values[vid] = Value(vid, kind, int(level), float(scale), int(slots), int(nbytes))
        return vid

    def add_node(self, op: str, inputs: Iterable[int], outputs: Iterable[int], level: Optional[int] = None,
                 slots: Optional[int] = None, params: Optional[dict] = None, counts: Optional[dict] = None,
                 seconds: Optional[float] = None) -> int:
        """Append a node; its inputs must exist, its outputs must exist and have no producer yet.

        Parameters
        ----------
        op : str
            The operation kind.
        inputs, outputs : iterable of int
            The value ids it reads and makes; the outputs' producer becomes this node.
        level : int, optional
            The level it works at (default: the lowest level of its ciphertext inputs, else its first output's,
            else 0).
        slots : int, optional
            Its slots (default: its first output's, else its first input's, else 0).
        params : dict, optional
            Its integer arguments.
        counts : dict, optional
            Measured kernel counters.
        seconds : float, optional
            Measured wall time.

        Returns
        -------
        int
            The node id.

        Raises
        ------
        ValueError
            An unknown input or output value, or an output that already has a producer.
        """
        inputs, outputs = [int(v) for v in inputs], [int(v) for v in outputs]
        nid = len(self.nodes)
        for v in inputs:
            if v not in self.values:
                raise ValueError(f"node {nid} ({op}): unknown input value {v}")
        for v in outputs:
            if v not in self.values:
                raise ValueError(f"node {nid} ({op}): unknown output value {v}")
            if self.values[v].producer is not None:
                raise ValueError(f"node {nid} ({op}): value {v} is already produced by node {self.values[v].producer}")
        if level is None:
            cts = [self.values[v].level for v in inputs if self.values[v].kind == "ciphertext"]
            level = min(cts) if cts else (self.values[outputs[0]].level if outputs else 0)
        if slots is None:
            slots = self.values[outputs[0]].slots if outputs else (self.values[inputs[0]].slots if inputs else 0)
        for v in outputs:
            self.values[v].producer = nid
        self.nodes.append(Node(nid, op, inputs, outputs, int(level), int(slots), dict(params or {}), counts, seconds))
        return nid

    # queries -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Return the number of nodes."""
        return len(self.nodes)

    def __repr__(self) -> str:
        """Return a short description: nodes, values, mode."""
        return f"<ember.graph.Graph {len(self.nodes)} nodes, {len(self.values)} values, mode={self.meta.get('mode')}>"

    @property
    def sources(self) -> list[int]:
        """Values no node produced (program inputs, constants), in id order."""
        return [v.id for v in self.values.values() if v.producer is None]

    def op_counts(self) -> dict[str, int]:
        """Count the nodes per operation kind.

        Returns
        -------
        dict
            ``{op: nodes}``, most frequent first.
        """
        return dict(Counter(n.op for n in self.nodes).most_common())

    def total_counts(self) -> dict[str, int]:
        """Sum the kernel counters over all nodes (live graphs).

        Equal to ember.trace() over the same block when every kernel ran inside an evaluator operation.

        Returns
        -------
        dict
            ``{counter: total}``: every key of COUNT_KEYS (0 in a symbolic graph), and any other key a node has.
        """
        tot = {k: 0 for k in COUNT_KEYS}
        for n in self.nodes:
            for k, v in (n.counts or {}).items():
                tot[k] = tot.get(k, 0) + v
        return tot

    def edges(self) -> dict[tuple[int, int], int]:
        """Return the data one node passes to another.

        Returns
        -------
        dict
            ``{(producer node id, consumer node id): bytes}``: the sum of the sizes of the distinct values
            passed. Edges from sources are not included.
        """
        out: dict[tuple[int, int], int] = {}
        for n in self.nodes:
            seen = set()
            for v in n.inputs:
                p = self.values[v].producer
                if p is None or v in seen:
                    continue
                seen.add(v)
                out[(p, n.id)] = out.get((p, n.id), 0) + self.values[v].bytes
        return out

    def successors(self) -> list[list[int]]:
        """Return the successors of every node (by :meth:`edges`).

        Returns
        -------
        list of list of int
            Per node id, the ids of the nodes that read one of its outputs.
        """
        succ: list[list[int]] = [[] for _ in self.nodes]
        for (u, v) in self.edges():
            succ[u].append(v)
        return succ

    def predecessors(self) -> list[list[int]]:
        """Return the predecessors of every node (by :meth:`edges`).

        Returns
        -------
        list of list of int
            Per node id, the ids of the nodes whose outputs it reads.
        """
        pred: list[list[int]] = [[] for _ in self.nodes]
        for (u, v) in self.edges():
            pred[v].append(u)
        return pred

    def critical_path(self, cost: Union[None, Callable[[Node], float], Mapping[int, float]] = None
                      ) -> tuple[float, list[int]]:
        """Return the longest path (sum of node costs, no transfers) and its node ids.

        Parameters
        ----------
        cost : callable or Mapping, optional
            A function of the node, a ``{node id: seconds}`` mapping, or None (default): the measured seconds
            where every node has them, else 1 per node (the depth in operations).

        Returns
        -------
        tuple
            (length, node ids of the path, first to last); (0.0, []) for an empty graph.
        """
        if cost is None:
            if self.nodes and all(n.seconds is not None for n in self.nodes):
                cost_of = [float(n.seconds) for n in self.nodes]
            else:
                cost_of = [1.0] * len(self.nodes)
        elif callable(cost):
            cost_of = [float(cost(n)) for n in self.nodes]
        else:
            cost_of = [float(cost[n.id]) for n in self.nodes]
        pred = self.predecessors()
        best = [0.0] * len(self.nodes)
        back = [-1] * len(self.nodes)
        for n in self.nodes:  # topological order
            b, arg = 0.0, -1
            for p in pred[n.id]:
                if best[p] > b or arg < 0:
                    b, arg = best[p], p
            best[n.id] = b + cost_of[n.id]
            back[n.id] = arg
        if not self.nodes:
            return 0.0, []
        end = max(range(len(self.nodes)), key=lambda i: best[i])
        path = []
        while end >= 0:
            path.append(end)
            end = back[end]
        return best[path[0]], path[::-1]

    def summary(self) -> dict:
        """Return the graph's facts as plain data.

        Returns
        -------
        dict
            nodes, values, sources, edges, depth (the longest path in operations), op_counts, bytes_moved (over
            all edges), meta; with measured seconds on every node also measured_seconds (their sum) and
            critical_path_seconds.
        """
        length, path = self.critical_path(lambda n: 1.0)
        d = {"nodes": len(self.nodes), "values": len(self.values), "sources": len(self.sources),
             "edges": len(self.edges()), "depth": int(length), "op_counts": self.op_counts(),
             "bytes_moved": sum(self.edges().values()), "meta": self.meta}
        if self.nodes and all(n.seconds is not None for n in self.nodes):
            d["measured_seconds"] = sum(n.seconds for n in self.nodes)
            d["critical_path_seconds"] = self.critical_path()[0]
        return d

    def draw(self, path, max_nodes: int = 400) -> None:
        """Draw the graph as an image file (small graphs; matplotlib): ``ember.graph.draw.draw_graph``.

        Parameters
        ----------
        path : str or os.PathLike
            The image file to write (a PNG for a ``.png`` suffix).
        max_nodes : int, optional
            The most nodes drawn (default 400).

        Raises
        ------
        ValueError
            The graph has more than `max_nodes` nodes.
        ImportError
            matplotlib is not installed.
        """
        from .draw import draw_graph
        draw_graph(self, path, max_nodes)

    # comparison --------------------------------------------------------------------------------
    def structure(self) -> dict:
        """Return the graph without measurements (counts, seconds) and without meta.

        Returns
        -------
        dict
            values, nodes, outputs: what live and symbolic captures of the same program must agree on.
        """
        return {"values": [self.values[k].as_dict() for k in sorted(self.values)],
                "nodes": [n.as_dict(measurements=False) for n in self.nodes], "outputs": list(self.outputs)}

    def same_structure(self, other: "Graph") -> bool:
        """Return whether two graphs have the same :meth:`structure`.

        Parameters
        ----------
        other : Graph
            The other graph.

        Returns
        -------
        bool
            Whether they agree.
        """
        return self.structure() == other.structure()

    # serialisation: to_dict / from_dict / save / load, as everywhere in ember ----------------------
    def to_dict(self) -> dict:
        """Return the graph as plain JSON-able data (format, version, meta, values, nodes, outputs, names).

        Returns
        -------
        dict
            What :meth:`from_dict` reads back.
        """
        return {"format": FORMAT, "version": VERSION, "meta": self.meta,
                "values": [self.values[k].as_dict() for k in sorted(self.values)],
                "nodes": [n.as_dict() for n in self.nodes], "outputs": list(self.outputs),
                "names": {str(k): v for k, v in sorted(self.names.items())}}

    def to_json(self, indent: Optional[int] = None) -> str:
        """Return the graph as JSON text (deprecated: ``json.dumps(graph.to_dict())``, or :meth:`save`).

        Parameters
        ----------
        indent : int, optional
            The indentation of ``json.dumps`` (default: none).

        Returns
        -------
        str
            The JSON text.
        """
        warnings.warn("Graph.to_json() is deprecated: use Graph.to_dict() (and json.dumps) or Graph.save(path)",
                      DeprecationWarning, stacklevel=2)
        return _dumps(self.to_dict(), indent)

    def save(self, path) -> None:
        """Write the graph as a JSON file.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        Path(path).write_text(_dumps(self.to_dict()))

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Graph":
        """Read a graph from JSON text (deprecated: ``Graph.from_dict(json.loads(text))``, or :meth:`load`).

        Parameters
        ----------
        text : str or bytes
            The JSON text.

        Returns
        -------
        Graph
            The graph, validated.

        Raises
        ------
        ValueError
            Invalid JSON or a malformed graph.
        """
        warnings.warn("Graph.from_json() is deprecated: use Graph.from_dict(json.loads(text)) or Graph.load(path)",
                      DeprecationWarning, stacklevel=2)
        return _parse(text)

    @classmethod
    def from_dict(cls, d) -> "Graph":
        """Return the graph that :meth:`to_dict` described, validated.

        Parameters
        ----------
        d : dict
            A graph's dictionary.

        Returns
        -------
        Graph
            The graph.

        Raises
        ------
        ValueError
            A malformed document (naming what is wrong).
        """
        return _from_dict(d)

    @classmethod
    def load(cls, path) -> "Graph":
        """Read a graph JSON file (:meth:`save`'s), validated.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        Graph
            The graph.

        Raises
        ------
        ValueError
            Invalid JSON or a malformed graph.
        """
        return _parse(Path(path).read_bytes())


def _dumps(d: dict, indent: Optional[int] = None) -> str:
    return json.dumps(d, indent=indent, allow_nan=False)


def _parse(text: Union[str, bytes]) -> Graph:
    try:
        d = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: nesting too deep
        raise ValueError(f"not an ember graph: invalid JSON ({e})") from None
    return _from_dict(d)


def load(path) -> Graph:
    """Read a graph JSON file: :meth:`Graph.load`.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    Graph
        The graph, validated.

    Raises
    ------
    ValueError
        Invalid JSON or a malformed graph.
    """
    return Graph.load(path)


# validation ------------------------------------------------------------------------------------
def _plain_json(x, what: str):
    """Return x if it is standard JSON (no NaN or infinity, which :meth:`Graph.save` could not write back)."""
    try:
        json.dumps(x, allow_nan=False)
    except ValueError:
        raise ValueError(f"ember graph: {what} holds a non-finite number") from None
    return x


def _is_id(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _int(x, what: str, lo: int = 0) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < lo:
        raise ValueError(f"{what} must be an integer >= {lo}, got {x!r}")
    return int(x)


def _num(x, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {x!r}")
    return float(x)


def _from_dict(d) -> Graph:
    if not isinstance(d, dict):
        raise ValueError("not an ember graph: the JSON document is not an object")
    if d.get("format") != FORMAT:
        raise ValueError(f"not an ember graph: format is {d.get('format')!r}, expected {FORMAT!r}")
    ver = d.get("version")
    if isinstance(ver, bool) or not isinstance(ver, int):
        raise ValueError(f"ember graph: version must be an integer, got {ver!r}")
    if ver > VERSION:
        raise ValueError(f"ember graph version {ver} is newer than this ember reads ({VERSION}); upgrade ember")
    if ver < 1:
        raise ValueError(f"ember graph: unknown version {ver}")
    for key, typ in (("values", list), ("nodes", list)):
        if not isinstance(d.get(key), typ):
            raise ValueError(f"ember graph: '{key}' must be a list")
    meta = d.get("meta", {})
    if not isinstance(meta, dict):
        raise ValueError("ember graph: 'meta' must be an object")
    _plain_json(meta, "'meta'")
    g = Graph(meta)
    for i, v in enumerate(d["values"]):
        w = f"value #{i}"
        if not isinstance(v, dict):
            raise ValueError(f"ember graph: {w} is not an object")
        missing = {"id", "kind", "level", "scale", "slots", "bytes"} - set(v)
        if missing:
            raise ValueError(f"ember graph: {w} lacks {', '.join(sorted(missing))}")
        vid = _int(v["id"], f"{w}: id")
        if vid in g.values:
            raise ValueError(f"ember graph: duplicate value id {vid}")
        if v["kind"] not in VALUE_KINDS:
            raise ValueError(f"ember graph: value {vid}: kind must be one of {VALUE_KINDS}, got {v['kind']!r}")
        g.add_value(v["kind"], _int(v["level"], f"value {vid}: level"), _num(v["scale"], f"value {vid}: scale"),
                    _int(v["slots"], f"value {vid}: slots"), _int(v["bytes"], f"value {vid}: bytes"), vid)
    made_by: dict = {}
    for i, n in enumerate(d["nodes"]):
        if isinstance(n, dict) and isinstance(n.get("out"), list):
            for v in n["out"]:
                if not isinstance(v, int) or isinstance(v, bool):
                    continue  # reported below as an unknown value
                if v in made_by:
                    raise ValueError(f"ember graph: value {v} is produced twice (nodes {made_by[v]} and {i})")
                made_by[v] = i
    for i, n in enumerate(d["nodes"]):
        if not isinstance(n, dict):
            raise ValueError(f"ember graph: node #{i} is not an object")
        missing = {"id", "op", "in", "out"} - set(n)
        if missing:
            raise ValueError(f"ember graph: node #{i} lacks {', '.join(sorted(missing))}")
        if n["id"] != i:
            raise ValueError(f"ember graph: node #{i} has id {n['id']!r}; nodes must be numbered 0, 1, ... in order")
        if not isinstance(n["op"], str) or not n["op"]:
            raise ValueError(f"ember graph: node {i}: op must be a non-empty string")
        for key in ("in", "out"):
            if not isinstance(n[key], list) or not all(_is_id(v) for v in n[key]):
                raise ValueError(f"ember graph: node {i}: '{key}' must be a list of value ids (integers)")
        for v in n["in"]:
            if v not in g.values:
                raise ValueError(f"ember graph: node {i} ({n['op']}): unknown input value {v!r}")
            if made_by.get(v, -1) >= i:
                raise ValueError(f"ember graph: node {i} ({n['op']}) reads value {v} before the node that produces it "
                                 f"(nodes must be in a topological order; a cycle cannot be)")
        params = n.get("params", {})
        if not isinstance(params, dict):
            raise ValueError(f"ember graph: node {i}: params must be an object")
        _plain_json(params, f"node {i}: params")
        counts = n.get("counts")
        if counts is not None:
            if not isinstance(counts, dict):
                raise ValueError(f"ember graph: node {i}: counts must be an object or null")
            counts = {str(k): _int(c, f"node {i}: counts[{k!r}]") for k, c in counts.items()}
        seconds = n.get("seconds")
        if seconds is not None:
            seconds = _num(seconds, f"node {i}: seconds")
        level = _int(n["level"], f"node {i}: level") if "level" in n else None
        slots = _int(n["slots"], f"node {i}: slots") if "slots" in n else None
        g.add_node(n["op"], n["in"], n["out"], level, slots, params, counts, seconds)
    outputs = d.get("outputs", [])
    if not isinstance(outputs, list) or any(not _is_id(v) or v not in g.values for v in outputs):
        raise ValueError("ember graph: 'outputs' must be a list of known value ids")
    g.outputs = list(outputs)
    names = d.get("names", {})
    if not isinstance(names, dict):
        raise ValueError("ember graph: 'names' must be an object {value id: name}")
    for k, v in names.items():
        try:
            vid = int(k)
        except ValueError:
            raise ValueError(f"ember graph: names: key {k!r} is not a value id") from None
        if vid not in g.values or not isinstance(v, str):
            raise ValueError(f"ember graph: names: {k!r} -> {v!r} is not a known value id with a string name")
        g.names[vid] = v
    return g
