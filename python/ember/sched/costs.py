"""Cost tables: seconds per (device model, operation kind, level).

Each device model is marked by where its figures come from -- "measured" (`ember profile`: this machine's CPU
timed operation by operation), "modelled" (the cost simulator's per-operation kernel counts, python/ember/sim, on
a device profile: H100, the U280 FPGA, the ASICs; no such device was run) or "profile-guided" (per-node times of a
real run replaced the entries, as the paper's PGO).

    table = CostTable.modelled(params, ["h100", "fpga-u280"])      # from the simulator
    table.merge(CostTable.load("cpu.json"))                         # measured by `ember profile`
    table.seconds("h100", "rotate", level=12)
    table.node_seconds(node, "h100")                                # a graph node (rotate_many: its outputs)

JSON: {"format": "ember-costs", "version": 1, "devices": {model: {"source": ..., "note": ..., "params": {...},
"ops": {op: {level: seconds}}}}}. Levels missing from a table are interpolated linearly between the nearest
levels present (cost grows with the limbs), and extrapolated flat beyond them.
"""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Iterable, Optional

FORMAT = "ember-costs"
VERSION = 1
SOURCES = ("measured", "modelled", "profile-guided")

# operations timed one per kind; the others borrow a kind's figures
ALIAS = {"sub": "add", "negate": "add", "sub_plain": "add_plain", "add_vector": "add_plain", "mul_round": "mul_int",
         "automorphism": "rotate", "conjugate": "rotate", "multiply_relin": "mul", "relinearize": "mul",
         "mul_vector": "mul_const", "adjust_to": "mul_const",
         # the raised basis and ModRaise (public operations of the circuits' double hoisting), when a table
         # has no figures of their own: the nearest measured kind
         "mod_down": "rescale", "mod_down_rescale": "rescale", "mod_raise": "rescale", "key_switch": "rotate",
         "key_switch_digits": "mul_plain"}
# operations whose cost grows with a count: (op, parameter) -> cost = base + per_item * count, stored as two
# pseudo-ops "<op>@1" and "<op>@<K>"
COUNTED = {"rotate_many": 4, "linear_combination": 8, "rotate_many_raised": 4, "mul_plain_sum": 8, "mul_sum": 4}
# counted operations without figures of their own: per item, like this kind
COUNTED_FALLBACK = {"rotate_many": "rotate", "linear_combination": "mul_int", "rotate_many_raised": "rotate_many",
                    "mul_plain_sum": "mul_plain"}


class CostTable:
    """Seconds per (device model, operation kind, level), each device model marked by its source.

    A device model is a name the platform's devices refer to (``Device.model``): "cpu-2t", "h100", ...; one
    model may time several devices. The table starts empty (module docstring: building and querying it).

    Attributes
    ----------
    devices : dict
        ``{device model: {"source": ..., "note": ..., "params": {...}, "ops": {op: {level: seconds}}}}``.
    """

    def __init__(self):
        self.devices: dict[str, dict] = {}

    # ---- building ----------------------------------------------------------------------------
    def set(self, device: str, op: str, level: int, seconds: float, source: str = "measured", note: str = "",
            params: Optional[dict] = None):
        """Set one entry: the seconds of an operation kind at a level on a device model.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").
        op : str
            The operation kind (a counted operation's reference entries: ``"<op>@1"``, ``"<op>@<K>"``).
        level : int
            The level.
        seconds : float
            The cost, finite and >= 0.
        source : str, optional
            "measured" (default), "modelled" or "profile-guided"; for an existing device model, its own.
        note : str, optional
            How the figures were obtained.
        params : dict, optional
            The parameters they were obtained at.

        Raises
        ------
        ValueError
            An unknown source, a source or params other than an existing device model's, or seconds negative,
            NaN or infinite.

        Notes
        -----
        `source`, `note` and `params` are recorded when the device model is new to the table. For an existing
        one, `source` must be its own (one source marks all of a model's figures), a new `note` is appended to
        its note ("; "), and `params` are recorded when it has none, else must equal its own.
        """
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if not (seconds >= 0) or math.isinf(seconds):
            raise ValueError(f"cost of {op} at level {level} on {device} must be a finite number >= 0, got {seconds}")
        d = self.devices.get(device)
        if d is None:
            d = self.devices[device] = {"source": source, "note": note, "params": dict(params or {}), "ops": {}}
        else:
            if source != d["source"]:
                raise ValueError(f"device model {device!r} is {d['source']}: cannot set a {source} figure ({op} at "
                                 f"level {level}) in it; pass source={d['source']!r} or use another device model")
            if params and d["params"] and dict(params) != d["params"]:
                raise ValueError(f"device model {device!r} has figures at params {d['params']}: cannot set one ({op} "
                                 f"at level {level}) at params {dict(params)}; use another device model")
            if params and not d["params"]:
                d["params"] = dict(params)
            if note and note != d.get("note") and note not in d.get("note", "").split("; "):
                d["note"] = (d.get("note", "") + "; " if d.get("note") else "") + note
        d["ops"].setdefault(op, {})[int(level)] = float(seconds)

    def merge(self, other: "CostTable") -> "CostTable":
        """Copy every device model of another table into this one, replacing models of the same name.

        Parameters
        ----------
        other : CostTable
            The table to copy from (deep-copied: the two tables share nothing).

        Returns
        -------
        CostTable
            This table.
        """
        for name, d in other.devices.items():
            self.devices[name] = json.loads(json.dumps(d))
            self.devices[name]["ops"] = {op: {int(k): v for k, v in lv.items()} for op, lv in d["ops"].items()}
        return self

    # ---- queries -----------------------------------------------------------------------------
    def source(self, device: str) -> str:
        """Return where a device model's figures come from.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").

        Returns
        -------
        str
            "measured", "modelled" or "profile-guided".

        Raises
        ------
        ValueError
            The table has no such device model.
        """
        return self._dev(device)["source"]

    def note(self, device: str) -> str:
        """Return a device model's note: how it was measured or modelled.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").

        Returns
        -------
        str
            The note ("" when none); for a modelled CPU it names the profile: "profile: calibrated (PATH)" or
            "profile: embedded reference (MACHINE ...)".

        Raises
        ------
        ValueError
            The table has no such device model.
        """
        return self._dev(device).get("note", "")

    def _dev(self, device: str) -> dict:
        if device not in self.devices:
            raise ValueError(f"no costs for device {device!r}; the table has {', '.join(self.devices) or 'none'}")
        return self.devices[device]

    def has(self, device: str, op: str) -> bool:
        """Return whether :meth:`seconds` has a figure for an operation kind on a device model.

        Its own entry, its alias's (``ALIAS``), a counted operation's reference entries, or the fallbacks that
        :meth:`seconds` uses (``COUNTED_FALLBACK``, mul_sum, drop_to_level and the parts of a split
        rotate_many_raised): True exactly when :meth:`seconds` returns a figure rather than raising.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").
        op : str
            The operation kind.

        Returns
        -------
        bool
            Whether the table has the figures.

        Raises
        ------
        ValueError
            The table has no such device model.
        """
        self._dev(device)
        try:
            self.seconds(device, op, 0)  # the figure's existence does not depend on the level
        except ValueError:
            return False
        return True

    def seconds(self, device: str, op: str, level: int, count: int = 1) -> float:
        """Return the seconds of an operation on a device model at a level.

        In order: the parts of a split rotate_many_raised without figures of their own (mod_up_digits,
        rotate_raised_digits) from the rotate_many_raised line, cost(k) = one + per * (k - 1) split as
        (one - per) + per * k; a counted operation (``COUNTED``) with reference entries, linear in `count`
        through them (never below 0); the operation's own entry, else its alias's (``ALIAS``); else mul_sum as
        one mul and two mul_plain per extra product, a counted operation as `count` times its fallback kind
        (``COUNTED_FALLBACK``), drop_to_level as free. A level between the table's levels is interpolated
        linearly, beyond them the nearest level's figure is used.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").
        op : str
            The operation kind.
        level : int
            The level it works at.
        count : int, optional
            The count of a counted operation (rotations, terms, products; default 1); others ignore it.

        Returns
        -------
        float
            Seconds.

        Raises
        ------
        ValueError
            The table has no such device model, or no figure for the operation (a counted operation: only one of
            its two reference entries).
        """
        ops = self._dev(device)["ops"]
        if op in ("mod_up_digits", "rotate_raised_digits") and op not in ops:
            # the parts of a split rotate_many_raised (ember.graph.split_hoisted), priced from its own line so
            # that the parts sum to the whole: cost(k) = one + per * (k - 1) = (one - per) + per * k
            one = self.seconds(device, "rotate_many_raised", level, 1)
            per = self.seconds(device, "rotate_many_raised", level, 2) - one
            return max(0.0, one - per) if op == "mod_up_digits" else per * count
        if op in COUNTED and (f"{op}@1" in ops or f"{op}@{COUNTED[op]}" in ops):
            k = COUNTED[op]
            if f"{op}@1" not in ops or f"{op}@{k}" not in ops:
                raise ValueError(f"the line of {op!r} on device {device!r} needs both reference entries, "
                                 f"'{op}@1' and '{op}@{k}'; the table has one")
            one = _interp(ops[f"{op}@1"], level)
            many = _interp(ops[f"{op}@{k}"], level)
            per = (many - one) / (k - 1)
            return max(0.0, one + per * (count - 1))
        key = op if op in ops else ALIAS.get(op)
        if key not in ops:
            if op == "mul_sum":  # no figures of its own (an older table): one mul, and per extra product the
                # tensor's four products and adds, about two mul_plains (the relinearization is paid once)
                return self.seconds(device, "mul", level) + (count - 1) * 2 * self.seconds(device, "mul_plain", level)
            if op in COUNTED_FALLBACK:  # no figures of its own: per item, like the fallback kind
                return count * self.seconds(device, COUNTED_FALLBACK[op], level, 1)
            if op == "drop_to_level":
                return 0.0  # keeps a prefix of the limbs: a view, no arithmetic (modelled as free)
            raise ValueError(f"no cost for operation {op!r} on device {device!r} (known: {', '.join(sorted(ops))})")
        return _interp(ops[key], level)

    def node_seconds(self, node, device: str) -> float:
        """Return the cost of a graph node on a device model.

        Parameters
        ----------
        node : ember.graph.Node
            The node: its op, level and (for counted operations, ``node_count``) its inputs or outputs.
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").

        Returns
        -------
        float
            Seconds (:meth:`seconds`).

        Raises
        ------
        ValueError
            The table has no such device model, or no figure for the node's operation.
        """
        return self.seconds(device, node.op, node.level, node_count(node))

    # ---- profile-guided ------------------------------------------------------------------------
    def update_from_nodes(self, device: str, records: Iterable[tuple[str, int, float, int]]) -> int:
        """Replace entries by the median of measured records and mark the device model profile-guided.

        Records without seconds (None or negative) are skipped. A counted operation (``COUNTED``) at a reference
        count (1 or the table's K) sets that reference entry; at another count it is scaled to both reference
        counts by the ratio of its seconds to the table's figure (skipped when the table has none). The device
        model is created when the table lacks it. The device model is marked profile-guided when an entry was
        set.

        Parameters
        ----------
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").
        records : iterable of tuple
            ``(op, level, seconds, count)`` of measured operations.

        Returns
        -------
        int
            How many (op, level) entries were set.
        """
        groups: dict[tuple[str, int], list[float]] = {}
        for op, level, sec, count in records:
            if sec is None or not sec >= 0:
                continue
            if op in COUNTED:
                # keep the per-operation figure at its own count: entries "<op>@<count>" when they are the
                # reference counts, else spread into a per-item ratio of the existing line
                if count not in (1, COUNTED[op]):
                    try:
                        ratio = sec / self.seconds(device, op, level, count)
                    except ValueError:
                        continue
                    for c in (1, COUNTED[op]):
                        groups.setdefault((f"{op}@{c}", level), []).append(ratio * self.seconds(device, op, level, c))
                    continue
                op = f"{op}@{count}"
            groups.setdefault((op, int(level)), []).append(float(sec))
        d = self.devices.setdefault(device, {"source": "profile-guided", "note": "", "params": {}, "ops": {}})
        for (op, level), xs in groups.items():
            d["ops"].setdefault(op, {})[level] = statistics.median(xs)
        if groups:
            d["source"] = "profile-guided"
            d["note"] = (d.get("note", "") + "; " if d.get("note") else "") + f"{len(groups)} entries from a run's per-node times"
        return len(groups)

    def update_from_graph(self, graph, device: str) -> int:
        """Update a device model from a live graph's measured per-node seconds (profile-guided).

        Parameters
        ----------
        graph : ember.graph.Graph
            A graph whose nodes have measured seconds (nodes without are skipped).
        device : str
            The cost-table device model (a key of `devices`, e.g. "h100" or "cpu-2t").

        Returns
        -------
        int
            How many (op, level) entries were set (:meth:`update_from_nodes`).

        Raises
        ------
        ValueError
            No node of the graph has measured seconds.
        """
        recs = []
        for n in graph.nodes:
            if n.seconds is None:
                continue
            recs.append((n.op, n.level, n.seconds, node_count(n)))
        if not recs:
            raise ValueError("the graph has no measured times (a symbolic graph?): nothing to learn from")
        return self.update_from_nodes(device, recs)

    def update_from_run(self, run: dict, device: Optional[str] = None) -> int:
        """Update the table from a run record (profile-guided).

        Parameters
        ----------
        run : dict
            ``{"tasks": [{"op", "level", "seconds", "device_model"?, "device"?, "count"?}, ...]}`` (a RUN.json)
            or an ember graph document (``format`` "ember-graph") with measured seconds. A task's device model is
            its "device_model", else its "device", else `device`.
        device : str, optional
            The cost-table device model of the tasks that name none; required for a graph document.

        Returns
        -------
        int
            How many (op, level) entries were set, over all device models.

        Raises
        ------
        ValueError
            A malformed record, a task without a device model, or a graph document without `device`.
        """
        if isinstance(run, dict) and run.get("format") == "ember-graph":
            from ..graph import Graph
            if device is None:
                raise ValueError("a graph run needs the device it ran on (--device)")
            return self.update_from_graph(Graph.from_dict(run), device)
        tasks = run.get("tasks") if isinstance(run, dict) else None
        if not isinstance(tasks, list):
            raise ValueError("a run record needs a 'tasks' list of {op, level, seconds[, device, count]}")
        by_dev: dict[str, list] = {}
        for i, t in enumerate(tasks):
            if not isinstance(t, dict) or not {"op", "level", "seconds"} <= set(t):
                raise ValueError(f"run task #{i} lacks op, level or seconds")
            dev = t.get("device_model") or t.get("device") or device
            if dev is None:
                raise ValueError(f"run task #{i} has no device; pass device=")
            by_dev.setdefault(str(dev), []).append((t["op"], int(t["level"]), float(t["seconds"]), int(t.get("count", 1))))
        return sum(self.update_from_nodes(d, r) for d, r in by_dev.items())

    # ---- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Return the table as plain JSON-able data (the module docstring's format).

        Returns
        -------
        dict
            What :meth:`from_dict` reads back (levels as strings).
        """
        return {"format": FORMAT, "version": VERSION,
                "devices": {name: {**{k: v for k, v in d.items() if k != "ops"},
                                   "ops": {op: {str(l): s for l, s in sorted(lv.items())} for op, lv in d["ops"].items()}}
                            for name, d in self.devices.items()}}

    def save(self, path):
        """Write the table as a JSON file.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def from_dict(cls, d) -> "CostTable":
        """Return the table :meth:`to_dict` described, validated.

        Parameters
        ----------
        d : dict
            A cost table's dictionary.

        Returns
        -------
        CostTable
            The table.

        Raises
        ------
        ValueError
            Not a cost table, another version, or a malformed device model, level or figure.
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"not an ember cost table (format {d.get('format') if isinstance(d, dict) else None!r})")
        if d.get("version") != VERSION:
            raise ValueError(f"ember cost table version {d.get('version')!r} is not {VERSION}")
        t = cls()
        devs = d.get("devices")
        if not isinstance(devs, dict):
            raise ValueError("ember cost table: 'devices' must be an object")
        for name, dv in devs.items():
            if not isinstance(dv, dict) or not isinstance(dv.get("ops"), dict):
                raise ValueError(f"ember cost table: device {name!r} needs an 'ops' object")
            src = dv.get("source")
            if src not in SOURCES:
                raise ValueError(f"ember cost table: device {name!r} source must be one of {SOURCES}")
            for op, lv in dv["ops"].items():
                if not isinstance(lv, dict) or not lv:
                    raise ValueError(f"ember cost table: {name}/{op} must map levels to seconds")
                for l, s in lv.items():
                    try:
                        level = int(l)
                    except ValueError:
                        raise ValueError(f"ember cost table: {name}/{op}: level {l!r} is not an integer") from None
                    if isinstance(s, bool) or not isinstance(s, (int, float)):
                        raise ValueError(f"ember cost table: {name}/{op}/{l}: seconds must be a number")
                    t.set(name, op, level, float(s), src, dv.get("note", ""), dv.get("params"))
        return t

    @classmethod
    def load(cls, path) -> "CostTable":
        """Read a cost table JSON file (:meth:`save`'s).

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        CostTable
            The table.

        Raises
        ------
        ValueError
            Not JSON, or not a valid cost table.
        """
        try:
            d = json.loads(Path(path).read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        return cls.from_dict(d)

    # ---- modelled devices ----------------------------------------------------------------------
    @classmethod
    def modelled(cls, params, devices: Iterable[str], levels: Optional[Iterable[int]] = None,
                 cpu_profile: Optional[str] = None) -> "CostTable":
        """Build a table of modelled figures from the simulator.

        Seconds per operation and level on device profiles of the simulator, from the simulator's
        per-operation kernel counts for the library's parameters on each device's roofline. The device models
        are marked "modelled".

        Parameters
        ----------
        params : ember.CkksParams or dict
            The parameters, or a graph's ``meta["params"]`` (log_n, levels, special_primes, dnum).
        devices : iterable of str
            The device models: "cpu" (this CPU's calibrated kernel rates, else the embedded reference
            machine's) or a built-in profile of ember.sim (h100, fpga-u280, ...).
        levels : iterable of int, optional
            The levels to model (default: every level of the parameters).
        cpu_profile : str, optional
            A CPU profile JSON for "cpu" (default: this machine's calibration, else the embedded reference).

        Returns
        -------
        CostTable
            The table.

        Raises
        ------
        ValueError
            An unknown device model, no timing for the CPU, or a parameter dict that lacks a key.
        """
        from ..sim import devices as simdev
        from ..sim.graph_model import op_model
        from ..sim.kernels import Ring
        from ..sim.timing import predict
        ring = _ring_of(params)
        levels = list(range(ring.q_count)) if levels is None else sorted(set(int(x) for x in levels))
        t = cls()
        for name in devices:
            if name == "cpu":  # calibrated kernel rates (this CPU's, else the embedded reference machine's)
                try:
                    prof, label = simdev.cpu_profile(cpu_profile)
                except FileNotFoundError as e:
                    raise ValueError(f"no timing for the CPU: {e}") from None
                note = f"modelled: ember.sim kernel counts on the cpu roofline; profile: {label}"
            elif name in simdev.BUILTIN:
                prof = simdev.BUILTIN[name]
                note = f"modelled: ember.sim kernel counts on the {name} roofline ({prof.source})"
            else:
                raise ValueError(f"unknown modelled device {name!r}; choose from cpu, {', '.join(simdev.BUILTIN)}")
            cache_limbs = int(prof.cache_mb * 2 ** 20 // (ring.n * 8))
            for level in levels:
                for op, count in _MODEL_OPS:
                    if level == 0 and op in _NEEDS_LEVEL or (op == "mod_raise" and level != 0):
                        continue
                    arity = (count if op in ("linear_combination", "mul_plain_sum") else 2 * count if op == "mul_sum"
                             else 2 if op in ("add", "mul") else 1)
                    arg = {"adjust_to": level - 1, "mod_raise": ring.q_count - 1}.get(op, level)
                    m = op_model(Ring(ring.log_n, ring.q_count, ring.k, ring.dnum), op, [level] * arity, level,
                                 {"level": arg}, count, cache_limbs=cache_limbs, raised=(op == "mul_plain_sum"))
                    sec = predict(m.cost, prof, m.counts, ring.log_n)["time_ms"] / 1e3
                    key = f"{op}@{count}" if op in COUNTED else op
                    t.set(name, key, level, sec, "modelled", note, {"log_n": ring.log_n, "limbs": ring.q_count,
                                                                     "special": ring.k, "dnum": ring.dnum})
        return t




def node_count(node) -> int:
    """Return the count of a counted operation.

    Rotations of rotate_many, rotate_many_raised and rotate_raised_digits (its outputs), terms of
    linear_combination (its inputs), products of mul_plain_sum and mul_sum (half its inputs), at least 1; 1 for
    other operations.

    Parameters
    ----------
    node : ember.graph.Node
        The node.

    Returns
    -------
    int
        The count.
    """
    if node.op in ("rotate_many", "rotate_many_raised", "rotate_raised_digits"):
        return max(1, len(node.outputs))
    if node.op == "linear_combination":
        return max(1, len(node.inputs))
    if node.op in ("mul_plain_sum", "mul_sum"):
        return max(1, len(node.inputs) // 2)
    return 1


_NEEDS_LEVEL = {"mul", "mul_sum", "mul_const", "rescale", "adjust_to", "mod_down_rescale"}
_MODEL_OPS = [("add", 1), ("add_plain", 1), ("add_const", 1), ("mul", 1), ("mul_plain", 1), ("mul_const", 1),
              ("mul_int", 1), ("rescale", 1), ("adjust_to", 1), ("rotate", 1), ("rotate_many", 1),
              ("rotate_many", COUNTED["rotate_many"]), ("linear_combination", 1),
              ("linear_combination", COUNTED["linear_combination"]), ("key_switch", 1), ("mod_down", 1),
              ("mod_down_rescale", 1), ("mod_raise", 1), ("rotate_many_raised", 1),
              ("rotate_many_raised", COUNTED["rotate_many_raised"]), ("mul_plain_sum", 1),
              ("mul_plain_sum", COUNTED["mul_plain_sum"]), ("mul_sum", 1), ("mul_sum", COUNTED["mul_sum"])]


class _RingShape:
    def __init__(self, log_n, q_count, k, dnum):
        self.log_n, self.q_count, self.k, self.dnum = log_n, q_count, k, dnum
        self.n = 1 << log_n


def _ring_of(params) -> _RingShape:
    if isinstance(params, dict):
        need = {"log_n", "levels", "special_primes", "dnum"}
        if not need <= set(params):
            raise ValueError(f"parameters need {', '.join(sorted(need))} (a graph's meta['params']), got {sorted(params)}")
        return _RingShape(int(params["log_n"]), int(params["levels"]) + 1, int(params["special_primes"]), int(params["dnum"]))
    core = params._core
    return _RingShape(int(core.log_n), len(core.q_primes), len(core.p_primes), int(core.dnum))


def _interp(lv: dict, level: int) -> float:
    if level in lv:
        return lv[level]
    ks = sorted(lv)
    if level <= ks[0]:
        return lv[ks[0]]
    if level >= ks[-1]:
        return lv[ks[-1]]
    import bisect
    j = bisect.bisect_left(ks, level)
    a, b = ks[j - 1], ks[j]
    return lv[a] + (lv[b] - lv[a]) * (level - a) / (b - a)
