"""The messages between the local pool's client and its worker processes.

The client is ember.run.pool, the worker ember.run.worker; the messages are small dataclasses pickled over the
pipe, named fields instead of tuples unpacked by position. Values never travel here: a message names
shared-memory buffers (ember.run.shm) by (name, size).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union


# ---- inputs of a task ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResidentInput:
    """A value the worker already holds (its own output, or an input it opened for an earlier task)."""

    key: tuple                      # ("in", i) or ("node", task id)


@dataclass(frozen=True)
class SharedInput:
    """A value published in shared memory, to be opened (validated) by the worker."""

    key: tuple
    label: str                      # the producing task's label, or "input i"
    buffers: list                   # [(name, size)]


TaskInput = Union[ResidentInput, SharedInput]


# ---- client -> worker ------------------------------------------------------------------------------------------
@dataclass
class RunTask:
    """Run one task.

    The operation (op, params) or the function (fn_key, its pickled bytes the first time this worker meets it in a
    run) on its inputs.
    """

    tid: int
    label: str
    op: Optional[str]
    params: Any
    fn_key: Optional[str]           # sha256 of the pickled function (None: a named operation)
    fn_blob: bytes                  # the pickled function, or b"" when the worker has it already
    args: list                      # [(index into inputs, value index)]
    inputs: list                    # [TaskInput]
    profile: bool
    publish: bool                   # write the outputs to shared memory (someone else reads them)


@dataclass(frozen=True)
class Stop:
    """End the worker process."""


@dataclass(frozen=True)
class Reset:
    """A new run: drop resident values, the run's functions and release every buffer."""


@dataclass
class Release:
    """Every reader of these values is done: [(value key, names of this worker's own buffers holding it)]."""

    items: list


@dataclass
class Forget:
    """Buffers of a dead worker were removed: drop their mappings."""

    names: list


# ---- worker -> client ------------------------------------------------------------------------------------------
@dataclass
class Ready:
    """The worker installed the keys."""

    pid: int
    tag: str                        # its shared-memory arena's tag


@dataclass
class Failed:
    """The worker could not install the keys."""

    reason: str


@dataclass
class Done:
    """A task finished.

    Its times (meta: recv_at, worker, open_s, compute_s, profile, publish_s, sent_at) and the buffers its outputs
    were written to ([] when not published).
    """

    tid: int
    meta: dict
    buffers: list = field(default_factory=list)


@dataclass
class TaskFailed:
    """A task raised (or its inputs or outputs failed): the message names the node."""

    tid: int
    message: str
