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
    """An executor's per-task overhead, fitted on a run (module docstring).

    Parameters
    ----------
    per_task_s : float
        The fitted per-task overhead (seconds, >= 0).
    workers : int
        The workers of the run it was fitted on.
    tasks : int
        Its tasks with a measured time.
    wall_s : float
        Its wall time (seconds).
    compute_s : float
        The sum of its tasks' own operation seconds.
    breakdown : dict, optional
        Medians of the per-task records' fields (open_s, publish_s, prep_s, output_open_s, round_trip_s), for
        those the executor reports; empty when it reports none.
    """

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
        """Fit the overhead on a run.

        Parameters
        ----------
        result : ember.run.RunResult
            The run's result: its seconds, node_seconds and (optional) records are read.
        workers : int
            The workers it ran on, >= 1.

        Returns
        -------
        ExecutorOverhead
            The fit.

        Raises
        ------
        ValueError
            `workers` < 1, or the run has no measured task times.
        """
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
        """Return the average of several fits (profiling runs) of the same executor and workload.

        Parameters
        ----------
        fits : list of ExecutorOverhead
            The fits; workers and tasks are taken from the first, the breakdown keys all of them share are
            averaged.

        Returns
        -------
        ExecutorOverhead
            The average.

        Raises
        ------
        ValueError
            No fits.
        """
        if not fits:
            raise ValueError("no fits to average")
        keys = set.intersection(*(set(f.breakdown) for f in fits))
        return cls(statistics.mean(f.per_task_s for f in fits), fits[0].workers, fits[0].tasks,
                   statistics.mean(f.wall_s for f in fits), statistics.mean(f.compute_s for f in fits),
                   {k: statistics.mean(f.breakdown[k] for f in fits) for k in sorted(keys)})

    def charge(self, cost: dict) -> dict:
        """Return a copy of a scheduling cost table with the per-task overhead added where a task can run.

        Parameters
        ----------
        cost : dict
            ``{task: [seconds on device 0, 1, ...]}``.

        Returns
        -------
        dict
            The copy: ``math.inf`` stays inf; a task whose every entry is 0 or inf (sources and sinks of the
            client) is unchanged.
        """
        out = {}
        for t, row in cost.items():
            if all(c == 0 or math.isinf(c) for c in row):
                out[t] = list(row)
            else:
                out[t] = [c if math.isinf(c) else c + self.per_task_s for c in row]
        return out

    def to_dict(self) -> dict:
        """Return the overhead as plain JSON-able data.

        Returns
        -------
        dict
            What :meth:`from_dict` reads back, with its ``definition``.
        """
        return {"per_task_s": self.per_task_s, "workers": self.workers, "tasks": self.tasks, "wall_s": self.wall_s,
                "compute_s": self.compute_s, "breakdown": self.breakdown, "definition": self.DEFINITION}

    @classmethod
    def from_dict(cls, d) -> "ExecutorOverhead":
        """Return the overhead :meth:`to_dict` described.

        Parameters
        ----------
        d : dict
            An overhead's dictionary.

        Returns
        -------
        ExecutorOverhead
            The overhead.

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
    """Return the makespan of equal independent tasks on a number of workers.

    Each task is charged its compute seconds plus the executor's per-task overhead; list scheduling takes
    ceil(tasks / workers) rounds.

    Parameters
    ----------
    compute_s : float
        Seconds of one task's operation.
    tasks : int
        The number of tasks.
    workers : int
        The number of workers.
    overhead : ExecutorOverhead, optional
        The executor's overhead (default: none).

    Returns
    -------
    float
        Seconds.
    """
    per = compute_s + (overhead.per_task_s if overhead is not None else 0.0)
    return math.ceil(tasks / workers) * per
