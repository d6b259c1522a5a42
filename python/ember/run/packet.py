"""Values in flight: a Packet is the output of one task (or a program input).

A Packet holds its ciphertexts / plaintexts, the label of the node that made it, its measured time and worker.

Between processes a Packet travels as Ember's own byte format (to_bytes: header, parameter hash, checksum) in
separate frames behind a small JSON header -- never a pickle of a C++ object. Dask uses the same frames
(register_dask_serializers()). A Packet published in shared memory (publish(): the same bytes written into a
buffer of ember.run.shm, for executors whose processes share one host) travels as the buffers' names only
(ShmRef), and its reader opens the bytes in place; in the process that made it, it keeps its objects. Values are
validated when a task opens them (from_bytes checks every size, modulus and the checksum); a value that fails is
a ValueError naming the node that made it and the node that read it.
"""
from __future__ import annotations

import json
import pickle
import sys
from typing import Optional

class ShmRef:
    """Where a value lies in shared memory.

    Parameters
    ----------
    name : str
        The buffer's name (ember.run.shm).
    size : int
        The value's byte count.
    host : str
        The host key (ember.run.shm.host_key) of the machine whose shared memory holds it.
    """

    __slots__ = ("name", "size", "host")

    def __init__(self, name: str, size: int, host: str):
        self.name, self.size, self.host = str(name), int(size), str(host)

    def to_json(self) -> list:
        """Return the reference as a JSON list ``[name, size, host]``."""
        return [self.name, self.size, self.host]

    @classmethod
    def from_json(cls, v) -> "ShmRef":
        """Make a reference from the list of :meth:`to_json`.

        Parameters
        ----------
        v : list or tuple
            ``[name, size, host]``, with a positive integer size.

        Returns
        -------
        ShmRef
            The reference.

        Raises
        ------
        ValueError
            If `v` is malformed.
        """
        if not (isinstance(v, (list, tuple)) and len(v) == 3 and isinstance(v[0], str) and isinstance(v[1], int)
                and not isinstance(v[1], bool) and v[1] > 0 and isinstance(v[2], str)):
            raise ValueError("ember packet: malformed shared-memory reference")
        return cls(*v)

    def __repr__(self) -> str:
        """Return the buffer's name and size."""
        return f"<ShmRef {self.name} {self.size} B>"


class Packet:
    """The output of one task (or a program input): its values, label, measured time and worker.

    After :meth:`publish`, the attribute ``refs`` holds the values' ShmRefs (what the Packet sends instead of
    bytes); before, it is None.

    Parameters
    ----------
    label : str
        The node that made it, ``"node 7 (mul)"``, or ``"input 3"``.
    values : list
        Ember Ciphertext / Plaintext objects, or their bytes after a transfer, or ShmRefs (opened lazily, once).
    seconds : float, optional
        The task's measured time (default 0).
    worker : str, optional
        Where it ran (default ``""``).
    profile : list, optional
        ``[[op, level, seconds], ...]``: the task's evaluator operations, when profiled (default None).
    io : dict, optional
        The task's seconds of opening its inputs and publishing its outputs on its worker (``{"open_s",
        "publish_s", ...}``), when measured (default None).
    """

    __slots__ = ("label", "values", "seconds", "worker", "profile", "refs", "io")

    def __init__(self, label: str, values: list, seconds: float = 0.0, worker: str = "", profile=None, io=None):
        self.label, self.values, self.seconds, self.worker, self.profile = label, list(values), seconds, worker, profile
        self.refs = None
        self.io = io

    def publish(self, arena) -> "Packet":
        """Write each value into a shared-memory buffer of `arena`; from now on the Packet travels as their names.

        Values that are ShmRefs already are kept as they are.

        Parameters
        ----------
        arena : ember.run.shm.Arena
            This process's arena.

        Returns
        -------
        Packet
            self, with ``refs`` set.

        Raises
        ------
        OSError
            If the shared memory cannot hold the values.
        """
        from . import shm
        host = shm.host_key()
        refs = []
        for v in self.values:
            if isinstance(v, ShmRef):
                refs.append(v)
                continue
            name, size = arena.write(v)
            refs.append(ShmRef(name, size, host))
        self.refs = refs
        return self

    def __repr__(self) -> str:
        """Return the label, the number of values, the seconds and the worker."""
        return f"<ember.run.Packet {self.label}: {len(self.values)} value(s), {self.seconds * 1e3:.1f} ms on {self.worker}>"

    def __reduce_ex__(self, protocol):
        """Pickle the Packet as its frames (:meth:`dumps`), out of band with protocol 5."""
        # pickled (e.g. inside a Dask task graph) as Ember's byte frames, never as C++ objects; with protocol 5 the
        # frames go out of band (Dask sends them as they are, without copying them into the pickle)
        frames = self.dumps()
        if protocol >= 5:
            return (_from_pickled, tuple([frames[0]] + [pickle.PickleBuffer(f) for f in frames[1:]]))
        return (Packet.loads, (frames,))

    def to_frames(self) -> tuple[dict, list[bytes]]:
        """Return the Packet as a JSON-able header and Ember's byte frames.

        A published Packet (or one holding ShmRefs) puts the references in the header and has no frames.

        Returns
        -------
        header : dict
            ``label``, ``seconds``, ``worker``, ``profile``, and ``io`` and ``shm`` when present.
        frames : list of bytes-like
            Each value in Ember's byte format.
        """
        header = {"label": self.label, "seconds": self.seconds, "worker": self.worker, "profile": self.profile}
        if self.io:
            header["io"] = self.io
        if self.refs is not None or any(isinstance(v, ShmRef) for v in self.values):
            header["shm"] = [r.to_json() for r in (self.refs if self.refs is not None else self.values)]
            return header, []
        frames = [v if isinstance(v, (bytes, bytearray, memoryview)) else v.to_bytes() for v in self.values]
        return header, frames

    @classmethod
    def from_frames(cls, header: dict, frames: list) -> "Packet":
        """Make a Packet of :meth:`to_frames`' header and frames; the values stay bytes (or ShmRefs) until opened.

        Parameters
        ----------
        header : dict
            The header.
        frames : list of bytes-like
            The values' bytes (none for a shared-memory header).

        Returns
        -------
        Packet
            The Packet, unvalidated.

        Raises
        ------
        ValueError
            If the header is malformed.
        """
        if not isinstance(header, dict) or "label" not in header:
            raise ValueError("ember packet: malformed header")
        if "shm" in header:
            refs = header["shm"]
            if frames or not isinstance(refs, (list, tuple)):     # (msgpack may hand lists over as tuples)
                raise ValueError("ember packet: malformed shared-memory header")
            values = [ShmRef.from_json(r) for r in refs]
        else:   # frames are kept as they arrived (bytes, bytearray or memoryview: from_bytes reads them in place)
            values = [f if isinstance(f, (bytes, bytearray)) else memoryview(f) for f in frames]
        io = header.get("io")
        return cls(str(header["label"]), values, float(header.get("seconds", 0.0)), str(header.get("worker", "")),
                   header.get("profile"), dict(io) if isinstance(io, dict) else None)

    def dumps(self) -> list[bytes]:
        """Return the Packet as a list of frames: the JSON header (UTF-8), then the values' bytes.

        Returns
        -------
        list of bytes-like
            What :meth:`loads` reads.
        """
        header, frames = self.to_frames()
        return [json.dumps(header).encode()] + frames

    @classmethod
    def loads(cls, frames: list) -> "Packet":
        """Make a Packet of :meth:`dumps`' frames.

        Parameters
        ----------
        frames : list of bytes-like
            The JSON header, then the values' bytes.

        Returns
        -------
        Packet
            The Packet, unvalidated.

        Raises
        ------
        ValueError
            If the header is malformed.
        """
        try:
            header = json.loads(bytes(frames[0]))
        except (ValueError, IndexError):
            raise ValueError("ember packet: malformed header") from None
        return cls.from_frames(header, frames[1:])

    def open(self, ctx, reader: Optional[str] = None) -> list:
        """Return the values as ember objects of `ctx`, validated.

        Bytes arriving from another process (or a shared-memory buffer) are parsed and validated here, once: the
        opened objects replace them in the Packet.

        Parameters
        ----------
        ctx : ember.Context
            The context to open them in.
        reader : str, optional
            Who reads them (a node's label, "the client"), for the error message.

        Returns
        -------
        list
            The Ciphertext / Plaintext objects.

        Raises
        ------
        ValueError
            If a value fails validation (naming the node that made it and the reader).
        """
        from ..context import Ciphertext, Plaintext
        out = []
        for i, v in enumerate(self.values):
            if not isinstance(v, (Ciphertext, Plaintext)):
                where = f"value {i} of {self.label}" + (f", read by {reader}" if reader else "")
                try:
                    if isinstance(v, ShmRef):
                        v = _open_ref(ctx, v, where)
                    else:
                        v = _open_bytes(ctx, v, where)
                except (ValueError, OSError) as e:
                    raise ValueError(f"{where} failed validation: {e}") from None
                self.values[i] = v
            out.append(v)
        return out


def _open_bytes(ctx, data, where: str):
    from ..context import Ciphertext, Plaintext
    from .keys import serial_type
    t = serial_type(data, where)
    if t not in (1, 2):
        raise ValueError(f"expected a ciphertext or plaintext, got object type {t}")
    return (Ciphertext if t == 1 else Plaintext).from_bytes(ctx, data)


def _open_ref(ctx, ref: ShmRef, where: str):
    """Open a value in another process's shared-memory buffer, read in place and validated.

    The checksum fails a buffer that changed under the reader.
    """
    from . import shm
    here = shm.host_key()
    if ref.host != here:
        raise ValueError(f"it lies in the shared memory of another host ({ref.host.split('|')[0]}), not this one "
                         f"({here.split('|')[0]}): shared-memory transport needs every worker on the client's "
                         "host (use transport='tcp' for a cluster of several machines)")
    with shm.reader().view(ref.name, ref.size) as mv:
        return _open_bytes(ctx, mv, where)


def _from_pickled(header, *frames) -> "Packet":
    return Packet.loads([header, *frames])


_registered = False


def register_dask_serializers() -> None:
    """Register Packet with Dask's serialization ('dask' family): a JSON header and Ember's byte frames."""
    global _registered
    if _registered:
        return
    from distributed.protocol import dask_deserialize, dask_serialize

    @dask_serialize.register(Packet)
    def _ser(p: Packet):
        header, frames = p.to_frames()
        return {"ember": header}, frames

    @dask_deserialize.register(Packet)
    def _de(header: dict, frames: list) -> Packet:
        return Packet.from_frames(header["ember"], frames)

    _registered = True


# On a Dask worker (or a client that imported distributed), register now: unpickling the Packet type named in a
# Dask header imports this module, so the deserializer is in place before Dask looks for it.
if "distributed" in sys.modules:
    register_dask_serializers()
