"""Values in flight: a Packet is the output of one task (or a program input) -- its ciphertexts / plaintexts, the
label of the node that made it, its measured time and worker.

Between processes a Packet travels as Ember's own byte format (to_bytes: header, parameter hash, SHA-256) in
separate frames behind a small JSON header -- never a pickle of a C++ object. Dask uses the same frames
(register_dask_serializers()). Values are validated when a task opens them (from_bytes checks every size,
modulus and the checksum); a value that fails is a ValueError naming the node that made it and the node that
read it.
"""
from __future__ import annotations

import json
import pickle
import sys
from typing import Optional

class Packet:
    """label: "node 7 (mul)" or "input 3"; values: ember Ciphertext / Plaintext objects, or their bytes after a
    transfer (opened lazily, once); seconds: the task's measured time; worker: where it ran."""
    __slots__ = ("label", "values", "seconds", "worker", "profile")

    def __init__(self, label: str, values: list, seconds: float = 0.0, worker: str = "", profile=None):
        self.label, self.values, self.seconds, self.worker, self.profile = label, list(values), seconds, worker, profile

    def __repr__(self) -> str:
        return f"<ember.run.Packet {self.label}: {len(self.values)} value(s), {self.seconds * 1e3:.1f} ms on {self.worker}>"

    def __reduce_ex__(self, protocol):
        # pickled (e.g. inside a Dask task graph) as Ember's byte frames, never as C++ objects; with protocol 5 the
        # frames go out of band (Dask sends them as they are, without copying them into the pickle)
        frames = self.dumps()
        if protocol >= 5:
            return (_from_pickled, tuple([frames[0]] + [pickle.PickleBuffer(f) for f in frames[1:]]))
        return (Packet.loads, (frames,))

    def to_frames(self) -> tuple[dict, list[bytes]]:
        header = {"label": self.label, "seconds": self.seconds, "worker": self.worker, "profile": self.profile}
        frames = [v if isinstance(v, (bytes, bytearray, memoryview)) else v.to_bytes() for v in self.values]
        return header, frames

    @classmethod
    def from_frames(cls, header: dict, frames: list) -> "Packet":
        if not isinstance(header, dict) or "label" not in header:
            raise ValueError("ember packet: malformed header")
        # frames are kept as they arrived (bytes, bytearray or memoryview: from_bytes reads them in place)
        return cls(str(header["label"]), [f if isinstance(f, (bytes, bytearray)) else memoryview(f) for f in frames],
                   float(header.get("seconds", 0.0)), str(header.get("worker", "")), header.get("profile"))

    def dumps(self) -> list[bytes]:
        header, frames = self.to_frames()
        return [json.dumps(header).encode()] + frames

    @classmethod
    def loads(cls, frames: list) -> "Packet":
        try:
            header = json.loads(bytes(frames[0]))
        except (ValueError, IndexError):
            raise ValueError("ember packet: malformed header") from None
        return cls.from_frames(header, frames[1:])

    def open(self, ctx, reader: Optional[str] = None) -> list:
        """The values as ember objects of `ctx`, validated (bytes arriving from another process are parsed here)."""
        from ..context import Ciphertext, Plaintext
        from .keys import serial_type
        out = []
        for i, v in enumerate(self.values):
            if not isinstance(v, (Ciphertext, Plaintext)):
                where = f"value {i} of {self.label}" + (f", read by {reader}" if reader else "")
                try:
                    t = serial_type(v, where)
                    if t not in (1, 2):
                        raise ValueError(f"expected a ciphertext or plaintext, got object type {t}")
                    v = (Ciphertext if t == 1 else Plaintext).from_bytes(ctx, v)
                except ValueError as e:
                    raise ValueError(f"{where} failed validation: {e}") from None
                self.values[i] = v
            out.append(v)
        return out


def _from_pickled(header, *frames) -> "Packet":
    return Packet.loads([header, *frames])


_registered = False


def register_dask_serializers() -> None:
    """Registers Packet with Dask's serialization ('dask' family): a JSON header and Ember's byte frames."""
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
