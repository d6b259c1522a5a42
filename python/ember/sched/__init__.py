"""Schedule HE programs across heterogeneous devices.

HEFT, PEFT and the naive baseline, platforms (devices and a bandwidth matrix), cost tables (seconds per operation
kind x level x device model) and graph -> schedule.

On plain data, for any DAG::

    from ember import sched
    s = sched.heft(cost, edges, bandwidth)     # also sched.peft(...), sched.best(...), sched.naive(..., seed=0)
    s.makespan, s.device[t], s.start[t], s.finish[t]
    s.slr, s.speedup, s.efficiency, s.utilisation, s.summary(), s.validate()

where cost is {task: [seconds on device 0, 1, ...]} (math.inf where a task cannot run), edges {(u, v): bytes},
bandwidth a P x P matrix in bytes per second between device indices (the diagonal is unused: the same device
costs 0), and optionally latency (P x P seconds) and devices (one name per device index). A schedule's
``s.device[t]`` is a device index. Bad input (cycles, unknown tasks, a task no device can run, negative
costs, a wrong-shaped matrix) raises ValueError naming the problem.

bounds.lower_bound(cost, edges, bandwidth) (or a Problem) bounds the makespan of ANY schedule from below
(critical path, work over the devices' speeds, and a communication-aware bound over the graph's sync tasks;
proven in bounds.py). best(..., duplicate=True) adds task duplication (duplication.py; Schedule.copies).

simulate(schedule, cost) re-times a schedule's placement with other costs (e.g. measured ones).

Data parallelism over the RNS limbs: limbs.limb_split(graph, platform, costs, K) is the problem of a graph whose
every operation is split into K limb shares, ModUp (digit by digit) and ModDown being explicit exchanges between
the shares and a ciphertext's two polynomials tracked apart (limbs.py); any scheduler runs on it (`ember schedule
--limb-parts K`).

On graphs (ember.graph): schedule_graph(graph, platform, costs, algo) with a Platform (platform.py: the
paper's Fig. 4 system, this machine, K Dask workers; each Device is timed by a cost-table device model) and a
CostTable (costs.py: seconds per device model, measured by `ember profile`, modelled from the simulator -- a CPU
from its calibrated profile, this machine's or the embedded reference machine's --, profile-guided), all
exported here. Programs: ember.graph.graph_of(name) -- the one registry of named programs (boot, lr-toy, helr,
lola-mnist, lola-cifar, resnet20) -- or FILE.py:FUNCTION on the command line.
The command line: ember.cli.sched (`ember schedule`, `ember graph`, `ember profile`); benchmarks: bench/sched/.

Profile-guided costs (`ember schedule --profile-from RUN.json`, CostTable.update_from_run): RUN.json is either a
live graph JSON (ember.graph; its nodes' measured seconds, with --profile-device naming the cost-table device
model) or {"tasks": [{"op": "mul", "level": 12, "seconds": 0.031, "device": "cpu-1t", "count": 1}, ...]}: per
executed node its operation kind, level, measured seconds, the cost-table device model it ran on, and for rotate_many /
linear_combination / mul_plain_sum the count (rotations, terms). The median per (device model, op, level) replaces
the table's entry and the device model is marked profile-guided.
"""
from . import bounds, limbs
from .algorithms import ALGORITHMS, best, heft, naive, optimistic_cost_table, peft, upward_rank
from .bounds import lower_bound
from .costs import CostTable
from .plan import default_costs, problem_of, schedule_graph, schedule_problem
from .platform import Device, Platform, load_platform
from .problem import Problem
from .schedule import Schedule, simulate

__all__ = ["heft", "peft", "best", "naive", "ALGORITHMS", "Problem", "Schedule", "simulate", "optimistic_cost_table",
           "upward_rank", "bounds", "limbs", "schedule_graph", "schedule_problem", "problem_of", "default_costs",
           "CostTable", "Platform", "Device", "load_platform", "lower_bound"]
