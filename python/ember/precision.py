"""Precision of decrypted results, and the input shapes bootstrapping is measured on.

    stats = ember.precision(expected, got)
    print(stats)                 # min 25.3 bits (slot 1234), mean 29.8, median 30.1
    stats.min_bits, stats.worst_slot

Bits are -log2 |got - expected| per slot (complex slots: the modulus of the difference), as Lattigo's
PrecisionStats reports them; an exact slot counts as `cap` bits (60 by default).
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
from typing import Callable

import numpy as np

__all__ = ["PrecisionStats", "precision", "INPUT_SHAPES", "input_shape"]


@dataclass(frozen=True)
class PrecisionStats:
    """Per-slot precision of `got` against `expected`, in bits."""
    min_bits: float       # the worst slot
    mean_bits: float      # -log2 of the mean absolute error (not the mean of the per-slot bits)
    median_bits: float    # the median slot
    max_error: float      # max |got - expected|
    mean_error: float
    worst_slot: int       # index of the worst slot
    slots: int

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"min {self.min_bits:.2f} bits (slot {self.worst_slot}), mean {self.mean_bits:.2f}, "
                f"median {self.median_bits:.2f} over {self.slots} slots")


def precision(expected, got, cap: float = 60.0) -> PrecisionStats:
    """Min / mean / median precision in bits of `got` against `expected`, and the worst slot.

    Both are array-likes of the same length (real or complex). Raises ValueError on a length mismatch,
    an empty input or non-finite values in `expected`; a non-finite `got` slot counts as 0 bits.
    """
    e = np.asarray(expected)
    g = np.asarray(got)
    if e.shape != g.shape:
        raise ValueError(f"precision: expected has shape {e.shape}, got {g.shape}")
    if e.size == 0:
        raise ValueError("precision: no values")
    if not np.all(np.isfinite(e)):
        raise ValueError("precision: expected has non-finite values")
    err = np.abs(g.astype(complex).ravel() - e.astype(complex).ravel())
    err = np.where(np.isfinite(err), err, np.inf)
    floor = 2.0 ** -cap

    def bits(x):
        return float(np.clip(-np.log2(np.maximum(x, floor)), 0.0, cap)) if np.isfinite(x) else 0.0

    worst = int(np.argmax(err))
    return PrecisionStats(min_bits=bits(err[worst]), mean_bits=bits(float(np.mean(err))),
                          median_bits=bits(float(np.median(err))), max_error=float(err[worst]),
                          mean_error=float(np.mean(err)), worst_slot=worst, slots=int(err.size))


def _alternating(n, rng, c):
    return np.where(np.arange(n) % 2 == 0, c, -c).astype(complex)


def _spikes(n, rng):
    v = np.zeros(n, complex)
    v[rng.choice(n, size=min(4, n), replace=False)] = [1.0, -1.0, 1j, -0.5 - 0.5j][: min(4, n)]
    return v


# Input shapes whose real and imaginary parts lie in [-1, 1]: the data users bootstrap (probabilities,
# pixels, weights, constants) as well as the mean-zero vectors benchmarks like. "alternating_complex"
# (+-(1 + i) in turn) reaches the largest message coefficient such inputs can have: sqrt(2) times the scale.
INPUT_SHAPES: dict[str, Callable[[int, np.random.Generator], np.ndarray]] = {
    "uniform": lambda n, r: r.uniform(-1, 1, n) + 0j,
    "uniform_complex": lambda n, r: r.uniform(-1, 1, n) + 1j * r.uniform(-1, 1, n),
    "unit": lambda n, r: r.uniform(0, 1, n) + 0j,
    "const": lambda n, r: np.full(n, 0.99, complex),
    "const_neg": lambda n, r: np.full(n, -0.99, complex),
    "const_complex": lambda n, r: np.full(n, 0.99 + 0.99j),
    "alternating": lambda n, r: _alternating(n, r, 1.0),
    "alternating_complex": lambda n, r: _alternating(n, r, 1 + 1j),
    "spikes": _spikes,
    "zeros": lambda n, r: np.zeros(n, complex),
}


def input_shape(name: str, n: int, rng: np.random.Generator | int = 0) -> np.ndarray:
    """n slots of the named shape (see INPUT_SHAPES), complex."""
    if name not in INPUT_SHAPES:
        raise ValueError(f"unknown input shape {name!r}; choose from {', '.join(INPUT_SHAPES)}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    return INPUT_SHAPES[name](int(n), rng)
