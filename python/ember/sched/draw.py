"""A schedule's Gantt chart (matplotlib, imported only when drawing)."""
from __future__ import annotations

from ..graph.draw import op_colour, pyplot


def gantt(schedule, path, title: str = "", ops: dict | None = None) -> None:
    """Draw a schedule's Gantt chart as an image file.

    One row per device, one bar per task (copies of duplicated tasks hatched), coloured by operation kind when
    `ops` is given; the title names the modelled devices (``extra["modelled_devices"]``).

    Parameters
    ----------
    schedule : Schedule
        The schedule.
    path : str or os.PathLike
        The image file to write (matplotlib picks the format from its suffix).
    title : str, optional
        The title (default: the schedule's algorithm), followed by the makespan.
    ops : dict, optional
        ``{task: operation kind}`` for the colours.

    Raises
    ------
    ImportError
        matplotlib is not installed.
    """
    plt = pyplot()
    names = schedule.problem.devices
    fig, ax = plt.subplots(figsize=(11, 1 + 0.5 * len(names)))
    ms = schedule.makespan
    unit, scale = ("ms", 1e3) if ms < 10 else ("s", 1.0)
    for t, d in schedule.device.items():
        op = ops.get(t, "") if ops else ""
        ax.barh(d, (schedule.finish[t] - schedule.start[t]) * scale, left=schedule.start[t] * scale, height=0.8,
                color=op_colour(op) if op else "#4e79a7", edgecolor="none")
    for t, xs in schedule.copies.items():  # duplicated tasks (sched.best(duplicate=True)): hatched
        op = ops.get(t, "") if ops else ""
        for d, s0, f0 in xs:
            ax.barh(d, (f0 - s0) * scale, left=s0 * scale, height=0.8, color=op_colour(op) if op else "#4e79a7",
                    edgecolor="black", hatch="//", linewidth=0.3)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    mod = schedule.extra.get("modelled_devices") or []
    ax.set_title((title or schedule.algo) + f"  makespan {ms * scale:.4g} {unit}" +
                 (f"  (modelled: {', '.join(mod)})" if mod else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
