"""The executor's per-task overhead, measured on a real run (profile-guided), for predicting makespans.

A run on K workers takes `wall` seconds; its tasks' own operations took sum(compute_s) worker-seconds. What is
left, spread over the T tasks,

    per_task_s = (K * wall - sum(compute_s)) / T

is the executor's per-task overhead: every worker-second the run spent on a task besides its operation --
sending it, moving its values (written into shared memory, validated and opened), reporting it, and the idle
time these cause. A schedule that charges each task its measured compute time plus per_task_s predicts the
makespan of the next runs of the same executor (ExecutorOverhead.charge); runs that report per-task records
(the local pool: open_s, publish_s, prep_s, output_open_s, round_trip_s) also give its breakdown.

The compute times are the run's own (the tasks' times under the run's contention: two workers on two cores
compute more slowly than one), through CostTable.update_from_run, as the paper's PGO does.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Optional

from ..serial import JsonFile


@dataclass
class ExecutorOverhead(JsonFile):
    """per_task_s: the fitted per-task overhead (seconds, >= 0); workers, tasks, wall_s, compute_s (sum): the run it
    was fitted on; breakdown: medians of the per-task records' fields (None when the executor has none)."""

    JSON_WHAT = "ember executor overhead"
    per_task_s: float
    workers: int
    tasks: int
    wall_s: float
    compute_s: float
    breakdown: dict = field(default_factory=dict)

    DEFINITION = ("per_task_s = (workers * wall_s - sum of the tasks' own operation seconds) / tasks: the worker-"
                  "seconds per task spent besides its operation (dispatch, moving values: serialize, validate, "
                  "open; reporting; idle waits these cause)")

    @classmethod
    def fit(cls, result, workers: int) -> "ExecutorOverhead":
        """From an ember.run RunResult (seconds, node_seconds, records) of a run on `workers` workers."""
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        secs = [s for s in result.node_seconds.values() if s is not None and s >= 0]
        if not secs:
            raise ValueError("the run has no measured task times to fit an overhead on")
        t = len(secs)
        busy = math.fsum(secs)
        per = max(0.0, (workers * result.seconds - busy) / t)
        brk = {}
        recs = getattr(result, "records", None) or []
        for k in ("open_s", "publish_s", "prep_s", "output_open_s", "round_trip_s"):
            v = [r[k] for r in recs if r.get(k) is not None]
            if v:
                brk[k] = statistics.median(v)
        return cls(per, workers, t, result.seconds, busy, brk)

    @classmethod
    def mean(cls, fits: list) -> "ExecutorOverhead":
        """The average of several fits (profiling runs) of the same executor and workload."""
        if not fits:
            raise ValueError("no fits to average")
        keys = set.intersection(*(set(f.breakdown) for f in fits))
        return cls(statistics.mean(f.per_task_s for f in fits), fits[0].workers, fits[0].tasks,
                   statistics.mean(f.wall_s for f in fits), statistics.mean(f.compute_s for f in fits),
                   {k: statistics.mean(f.breakdown[k] for f in fits) for k in sorted(keys)})

    def charge(self, cost: dict) -> dict:
        """A copy of a scheduling cost table {task: [seconds per device]} with per_task_s added where a task can run
        (math.inf stays inf; tasks of zero cost on every device -- sources and sinks of the client -- stay 0)."""
        out = {}
        for t, row in cost.items():
            if all(c == 0 or math.isinf(c) for c in row):
                out[t] = list(row)
            else:
                out[t] = [c if math.isinf(c) else c + self.per_task_s for c in row]
        return out

    def to_dict(self) -> dict:
        return {"per_task_s": self.per_task_s, "workers": self.workers, "tasks": self.tasks, "wall_s": self.wall_s,
                "compute_s": self.compute_s, "breakdown": self.breakdown, "definition": self.DEFINITION}

    @classmethod
    def from_dict(cls, d) -> "ExecutorOverhead":
        """The overhead :meth:`to_dict` described.

        Parameters
        ----------
        d : dict
            An overhead's dictionary.

        Returns
        -------
        ExecutorOverhead

        Raises
        ------
        ValueError
            A missing or malformed field.
        """
        try:
            vals = [float(d[k]) for k in ("per_task_s", "wall_s", "compute_s")]
            workers, tasks = int(d["workers"]), int(d["tasks"])
            brk = {str(k): float(v) for k, v in dict(d.get("breakdown") or {}).items()}
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not an executor overhead: {e!r}") from None
        if not all(math.isfinite(v) and v >= 0 for v in vals) or workers < 1 or tasks < 0:
            raise ValueError(f"not an executor overhead: values out of range in {d!r}")
        return cls(vals[0], workers, tasks, vals[1], vals[2], brk)



def predict_batch(compute_s: float, tasks: int, workers: int, overhead: Optional[ExecutorOverhead] = None) -> float:
    """The makespan of `tasks` equal independent tasks of compute_s seconds on `workers` workers, each task also
    charged the executor's per-task overhead (list scheduling: ceil(tasks / workers) rounds)."""
    per = compute_s + (overhead.per_task_s if overhead is not None else 0.0)
    return math.ceil(tasks / workers) * per
