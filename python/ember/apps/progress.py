"""A progress bar for the demos: rich on a terminal (stderr), nothing otherwise."""
from __future__ import annotations

from typing import Optional


class Progress:
    """A rich progress bar on a terminal (stderr), nothing otherwise.

    Parameters
    ----------
    enabled : bool
        Draw it (the caller enables it on a terminal only).
    title : str
        Printed before each stage's name.
    """

    def __init__(self, enabled: bool, title: str):
        self.enabled, self.title, self._p, self._task = enabled, title, None, None

    def __enter__(self):
        """Start the bar (when enabled); return the Progress."""
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
            self._p = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                               TextColumn("{task.fields[info]}"), TimeElapsedColumn(), transient=False)
            self._p.__enter__()
        return self

    def stage(self, msg: str, total: Optional[int] = None):
        """Start a new stage: the previous one is marked complete and a new bar line begins.

        Parameters
        ----------
        msg : str
            The stage's name.
        total : int, optional
            Its number of steps (None: unknown).
        """
        if self._p is None:
            return
        if self._task is not None:
            self._p.update(self._task, completed=self._p.tasks[self._task].total or 1)
        self._task = self._p.add_task(f"{self.title}: {msg}", total=total, info="")

    def advance(self, info: str = ""):
        """Advance the current stage by one step.

        Parameters
        ----------
        info : str, optional
            Text shown next to the bar (default ``""``).
        """
        if self._p is not None and self._task is not None:
            self._p.update(self._task, advance=1, info=info)

    def __exit__(self, *exc):
        """Stop the bar; an exception raised in the block propagates."""
        if self._p is not None:
            self._p.__exit__(*exc)
        return False
