"""The graph data model: values, nodes, the versioned JSON format, and the analyses (op counts, edges,
critical path). See the package docstring (ember/graph/__init__.py) for the format."""
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
    """A ciphertext or plaintext flowing through the program. `producer` is the id of the node that made it,
    None for a source (a program input, a fresh encryption, a plaintext constant)."""
    id: int
    kind: str
    level: int
    scale: float
    slots: int
    bytes: int
    producer: Optional[int] = None

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "level": self.level, "scale": self.scale, "slots": self.slots,
                "bytes": self.bytes}


@dataclass
class Node:
    """One evaluator operation. `level` is the level it works at: the lowest level of its ciphertext inputs
    (an operation without ciphertext inputs: its first output's). `counts` are the kernel counters measured
    while it ran (live capture only; keys COUNT_KEYS), `seconds` its measured wall time (live only)."""
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
        d = {"id": self.id, "op": self.op, "in": list(self.inputs), "out": list(self.outputs), "level": self.level,
             "slots": self.slots, "params": dict(self.params)}
        if measurements:
            d["counts"] = dict(self.counts) if self.counts is not None else None
            d["seconds"] = self.seconds
        return d


class Graph:
    """A data-flow DAG of HE operations. Nodes are kept in a topological order (the order they ran)."""

    def __init__(self, meta: Optional[dict] = None):
        self.values: dict[int, Value] = {}
        self.nodes: list[Node] = []
        self.meta: dict = dict(meta or {})
        self.outputs: list[int] = []
        self.names: dict[int, str] = {}
        self._capture = None  # the live/symbolic capture that fills this graph, if any

    def input(self, x, name: Optional[str] = None) -> None:
        """Names an input of the program (a Ciphertext the capture saw)."""
        self._mark(x, name, output=False)

    def output(self, x, name: Optional[str] = None) -> None:
        """Marks a Ciphertext as an output of the program (appended to .outputs), optionally named."""
        self._mark(x, name, output=True)

    def _mark(self, x, name, output: bool) -> None:
        if self._capture is None:
            raise ValueError("this graph was not made by a capture (ember.graph()); edit .outputs / .names directly")
        self._capture.mark(x, name, output)

    # building ----------------------------------------------------------------------------------
    def add_value(self, kind: str, level: int, scale: float, slots: int, nbytes: int, vid: Optional[int] = None) -> int:
        vid = len(self.values) if vid is None else vid
        if vid in self.values:
            raise ValueError(f"value {vid} already exists")
        self.values[vid] = Value(vid, kind, int(level), float(scale), int(slots), int(nbytes))
        return vid

    def add_node(self, op: str, inputs: Iterable[int], outputs: Iterable[int], level: Optional[int] = None,
                 slots: Optional[int] = None, params: Optional[dict] = None, counts: Optional[dict] = None,
                 seconds: Optional[float] = None) -> int:
        """Appends a node; its inputs must exist, its outputs must exist and have no producer yet."""
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
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<ember.graph.Graph {len(self.nodes)} nodes, {len(self.values)} values, mode={self.meta.get('mode')}>"

    @property
    def sources(self) -> list[int]:
        """Values no node produced (program inputs, constants), in id order."""
        return [v.id for v in self.values.values() if v.producer is None]

    def op_counts(self) -> dict[str, int]:
        """Number of nodes per operation kind, most frequent first."""
        return dict(Counter(n.op for n in self.nodes).most_common())

    def total_counts(self) -> dict[str, int]:
        """The kernel counters summed over all nodes (live graphs; equal to ember.trace() over the same block
        when every kernel ran inside an evaluator operation)."""
        tot = {k: 0 for k in COUNT_KEYS}
        for n in self.nodes:
            for k, v in (n.counts or {}).items():
                tot[k] = tot.get(k, 0) + v
        return tot

    def edges(self) -> dict[tuple[int, int], int]:
        """{(producer node, consumer node): bytes}: the data one node passes to another (the sum of the sizes
        of the distinct values passed). Edges from sources are not included."""
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
        succ: list[list[int]] = [[] for _ in self.nodes]
        for (u, v) in self.edges():
            succ[u].append(v)
        return succ

    def predecessors(self) -> list[list[int]]:
        pred: list[list[int]] = [[] for _ in self.nodes]
        for (u, v) in self.edges():
            pred[v].append(u)
        return pred

    def critical_path(self, cost: Union[None, Callable[[Node], float], Mapping[int, float]] = None
                      ) -> tuple[float, list[int]]:
        """The longest path (sum of node costs, no transfers) and its node ids. cost: a function of the node,
        a {node id: seconds} mapping, or None: the measured seconds where every node has them, else 1 per node
        (the depth in operations)."""
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
        length, path = self.critical_path(lambda n: 1.0)
        d = {"nodes": len(self.nodes), "values": len(self.values), "sources": len(self.sources),
             "edges": len(self.edges()), "depth": int(length), "op_counts": self.op_counts(),
             "bytes_moved": sum(self.edges().values()), "meta": self.meta}
        if self.nodes and all(n.seconds is not None for n in self.nodes):
            d["measured_seconds"] = sum(n.seconds for n in self.nodes)
            d["critical_path_seconds"] = self.critical_path()[0]
        return d

    def draw(self, path, max_nodes: int = 400) -> None:
        """A PNG of the graph (small graphs; matplotlib)."""
        from .draw import draw_graph
        draw_graph(self, path, max_nodes)

    # comparison --------------------------------------------------------------------------------
    def structure(self) -> dict:
        """The graph without measurements (counts, seconds) and without meta: what live and symbolic capture of
        the same program must agree on."""
        return {"values": [self.values[k].as_dict() for k in sorted(self.values)],
                "nodes": [n.as_dict(measurements=False) for n in self.nodes], "outputs": list(self.outputs)}

    def same_structure(self, other: "Graph") -> bool:
        return self.structure() == other.structure()

    # serialisation: to_dict / from_dict / save / load, as everywhere in ember ----------------------
    def to_dict(self) -> dict:
        """The graph as plain JSON-able data (format, version, meta, values, nodes, outputs, names).

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
        """Deprecated: ``json.dumps(graph.to_dict())``, or :meth:`save`."""
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
        """Deprecated: ``Graph.from_dict(json.loads(text))``, or :meth:`load`."""
        warnings.warn("Graph.from_json() is deprecated: use Graph.from_dict(json.loads(text)) or Graph.load(path)",
                      DeprecationWarning, stacklevel=2)
        return _parse(text)

    @classmethod
    def from_dict(cls, d) -> "Graph":
        """The graph that :meth:`to_dict` described, validated.

        Parameters
        ----------
        d : dict
            A graph's dictionary.

        Returns
        -------
        Graph

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
    """
    return Graph.load(path)


# validation ------------------------------------------------------------------------------------
def _plain_json(x, what: str):
    """x, if it is standard JSON (no NaN or infinity, which to_json() could not write back)."""
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
