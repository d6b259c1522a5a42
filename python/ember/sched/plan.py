"""Graphs onto platforms: the cost of every node on every device (from a cost table by the device's model), the
graph's edges with their bytes, the platform's bandwidth -- then any of the schedulers."""
from __future__ import annotations

import math
from typing import Optional

from .algorithms import ALGORITHMS
from .costs import CostTable, node_count
from .platform import Platform
from .problem import Problem
from .schedule import Schedule


def problem_of(graph, platform: Platform, costs: CostTable, overhead=None) -> Problem:
    """The scheduling problem of an ember.graph.Graph: tasks are node ids. overhead: an executor's per-task overhead
    (ember.sched.overhead.ExecutorOverhead, fitted on a real run) charged to every node where it can run."""
    if len(graph) == 0:
        raise ValueError("the graph has no operations to schedule")
    models = [d.model for d in platform.devices]
    for m in set(models):
        if m not in costs.devices:
            hint = ("run `ember profile` (measured)" if m.startswith("cpu-")
                    else "build it with CostTable.modelled(params, [...])")
            raise ValueError(f"the cost table has no device {m!r} (platform {platform.name}); {hint}")
    cache: dict[tuple, float] = {}
    cost = {}
    for n in graph.nodes:
        count = node_count(n)
        row = []
        for m in models:
            k = (m, n.op, n.level, count)
            if k not in cache:
                try:
                    cache[k] = costs.node_seconds(n, m)
                except ValueError:
                    cache[k] = math.inf  # this device has no figure for the op: it does not run it
            row.append(cache[k])
        if all(math.isinf(x) for x in row):
            raise ValueError(f"node {n.id} ({n.op} at level {n.level}) has no cost on any device of {platform.name}")
        cost[n.id] = row
    if overhead is not None:
        cost = overhead.charge(cost)
    return Problem(cost, graph.edges(), platform.bandwidth, platform.latency, platform.names)


def schedule_problem(pr: Problem, algo: str = "heft", seed: int = 0) -> Schedule:
    """algo: naive (seeded), heft, peft, best, or best-dup (best with task duplication: ember.sched.duplication)."""
    if algo not in ALGORITHMS and algo != "best-dup":
        raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(ALGORITHMS)}, best-dup")
    if algo == "best-dup":
        return ALGORITHMS["best"](pr, duplicate=True)
    return ALGORITHMS[algo](pr, seed=seed) if algo == "naive" else ALGORITHMS[algo](pr)


def schedule_graph(graph, platform: Platform, costs: CostTable, algo: str = "heft", seed: int = 0,
                   overhead=None) -> Schedule:
    """algo: naive, heft, peft, best, or best-dup (schedule_problem)."""
    s = schedule_problem(problem_of(graph, platform, costs, overhead), algo, seed)
    s.extra.update(platform=platform.name, graph_nodes=len(graph),
                   modelled_devices=[d.name for d in platform.devices
                                     if d.model in costs.devices and costs.source(d.model) == "modelled"],
                   cost_sources={m: costs.source(m) for m in sorted({d.model for d in platform.devices})})
    if overhead is not None:
        s.extra.update(executor_overhead_per_task_s=overhead.per_task_s)
    return s


def default_costs(graph, platform: Platform, table: Optional[CostTable] = None) -> CostTable:
    """The given table, completed with modelled figures (the simulator at the graph's parameters) for every
    device model of the platform it lacks. CPU models missing a measurement fall back to the "cpu" model
    (this CPU's calibrated kernel rates), relabelled."""
    t = CostTable() if table is None else table
    params = graph.meta.get("params")
    missing = sorted({d.model for d in platform.devices} - set(t.devices))
    if not missing:
        return t
    if not params:
        raise ValueError("the graph has no meta['params'] (capture it with ember.graph(ctx)): cannot model costs")
    want = sorted({("cpu" if m.startswith("cpu") else m) for m in missing})
    mod = CostTable.modelled(params, want)
    for m in missing:
        src = "cpu" if m.startswith("cpu") else m
        t.devices[m] = mod.devices[src]
    return t
