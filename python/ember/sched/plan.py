"""Graphs onto platforms: a graph's scheduling problem, then any of the schedulers.

The problem: the cost of every node on every device of the platform (from a cost table, by the Device's
cost-table model), the graph's edges with their bytes, the platform's bandwidth and latency.
"""
from __future__ import annotations

import math
from typing import Optional

from .algorithms import ALGORITHMS
from .costs import CostTable, node_count
from .platform import Platform
from .problem import Problem
from .schedule import Schedule


def problem_of(graph, platform: Platform, costs: CostTable, overhead=None) -> Problem:
    """Return the scheduling problem of a graph on a platform.

    Tasks are the graph's node ids, device indices the platform's devices in order; a node's cost on a device is
    the cost table's figure for the node on the Device's model (``math.inf`` where the table has none for its
    operation: the device does not run it), edges are ``graph.edges()``.

    Parameters
    ----------
    graph : ember.graph.Graph
        The program's graph.
    platform : Platform
        The devices, bandwidth and latency.
    costs : CostTable
        Seconds per device model; it must have every device model of the platform.
    overhead : ember.sched.overhead.ExecutorOverhead, optional
        An executor's per-task overhead (fitted on a real run), charged to every node where it can run.

    Returns
    -------
    Problem
        The problem, with the platform's device names.

    Raises
    ------
    ValueError
        The graph is empty, the cost table lacks a device model of the platform, or a node has no cost on any
        device.
    """
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
    """Schedule a problem with the named algorithm.

    Parameters
    ----------
    pr : Problem
        The problem.
    algo : str, optional
        naive (seeded), heft (the default), peft, best, or best-dup (best with task duplication:
        ember.sched.duplication).
    seed : int, optional
        The seed of naive (default 0); the other algorithms ignore it.

    Returns
    -------
    Schedule
        The schedule.

    Raises
    ------
    ValueError
        An unknown algorithm.
    """
    if algo not in ALGORITHMS and algo != "best-dup":
        raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(ALGORITHMS)}, best-dup")
    if algo == "best-dup":
        return ALGORITHMS["best"](pr, duplicate=True)
    return ALGORITHMS[algo](pr, seed=seed) if algo == "naive" else ALGORITHMS[algo](pr)


def schedule_graph(graph, platform: Platform, costs: CostTable, algo: str = "heft", seed: int = 0,
                   overhead=None) -> Schedule:
    """Schedule a graph on a platform.

    The problem is :func:`problem_of`'s, the schedule :func:`schedule_problem`'s.

    Parameters
    ----------
    graph : ember.graph.Graph
        The program's graph.
    platform : Platform
        The devices, bandwidth and latency.
    costs : CostTable
        Seconds per device model; it must have every device model of the platform.
    algo : str, optional
        naive, heft (the default), peft, best, or best-dup.
    seed : int, optional
        The seed of naive (default 0).
    overhead : ember.sched.overhead.ExecutorOverhead, optional
        An executor's per-task overhead, charged to every node where it can run.

    Returns
    -------
    Schedule
        The schedule; its ``extra`` adds platform (the platform's name), graph_nodes, modelled_devices (the
        names of the devices whose model's figures are "modelled"), cost_sources (``{device model: source}``)
        and, with an overhead, executor_overhead_per_task_s.

    Raises
    ------
    ValueError
        As :func:`problem_of` and :func:`schedule_problem`.
    """
    s = schedule_problem(problem_of(graph, platform, costs, overhead), algo, seed)
    s.extra.update(platform=platform.name, graph_nodes=len(graph),
                   modelled_devices=[d.name for d in platform.devices
                                     if d.model in costs.devices and costs.source(d.model) == "modelled"],
                   cost_sources={m: costs.source(m) for m in sorted({d.model for d in platform.devices})})
    if overhead is not None:
        s.extra.update(executor_overhead_per_task_s=overhead.per_task_s)
    return s


def default_costs(graph, platform: Platform, table: Optional[CostTable] = None) -> CostTable:
    """Return a cost table with every device model of the platform.

    The given table, completed in place with modelled figures (the simulator at the graph's parameters) for
    every device model of the platform it lacks. CPU models missing a measurement (``cpu-2t``, ...) fall back to
    the "cpu" model (this CPU's calibrated kernel rates, else the embedded reference machine's), relabelled.

    Parameters
    ----------
    graph : ember.graph.Graph
        The graph whose ``meta["params"]`` the figures are modelled at.
    platform : Platform
        The platform whose device models the table needs.
    table : CostTable, optional
        The table to complete (default: a new, empty one).

    Returns
    -------
    CostTable
        `table` itself (or the new table), completed.

    Raises
    ------
    ValueError
        A device model is missing and the graph has no ``meta["params"]``, or a missing model is not one the
        simulator knows.
    """
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
