"""Precision of decrypted results, and the input shapes bootstrapping is measured on.

::

    stats = ember.precision(expected, got)
    print(stats)                 # min 25.30 bits (slot 1234), mean 29.80, median 30.10 over 32768 slots
    stats.min_bits, stats.worst_slot

Bits are -log2 ``|got - expected|`` per slot (complex slots: the modulus of the difference), as Lattigo's
PrecisionStats reports them; an exact slot counts as `cap` bits (60 by default).
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
from typing import Callable

import numpy as np

__all__ = ["PrecisionStats", "precision", "INPUT_SHAPES", "input_shape"]


@dataclass(frozen=True)
class PrecisionStats:
    """Per-slot precision of `got` against `expected`, in bits (what ``ember.precision()`` returns).

    Bits are -log2 of an absolute error, clipped to [0, cap] (see ``ember.precision()``). Each parameter is also an
    attribute of the same name; ``str()`` gives a one-line summary.

    Parameters
    ----------
    min_bits : float
        Precision of the worst slot, in bits.
    mean_bits : float
        -log2 of the mean absolute error, in bits (not the mean of the per-slot bits).
    median_bits : float
        -log2 of the median absolute error, in bits (the median slot).
    max_error : float
        The largest absolute error, max ``|got - expected|`` (``inf`` for a non-finite slot).
    mean_error : float
        The mean absolute error.
    worst_slot : int
        Index of the worst slot (the first one, if several tie).
    slots : int
        Number of slots compared.
    """

    min_bits: float       # the worst slot
    mean_bits: float      # -log2 of the mean absolute error (not the mean of the per-slot bits)
    median_bits: float    # the median slot
    max_error: float      # max |got - expected|
    mean_error: float
    worst_slot: int       # index of the worst slot
    slots: int

    def to_dict(self) -> dict:
        """Return the fields as a plain dictionary.

        Returns
        -------
        dict
            ``{"min_bits": ..., "mean_bits": ..., ..., "slots": ...}``, JSON-able.
        """
        return asdict(self)

    def __str__(self) -> str:
        """Return a one-line summary: min bits and the worst slot, mean and median bits, slot count."""
        return (f"min {self.min_bits:.2f} bits (slot {self.worst_slot}), mean {self.mean_bits:.2f}, "
                f"median {self.median_bits:.2f} over {self.slots} slots")


def precision(expected, got, cap: float = 60.0) -> PrecisionStats:
    """Measure the min / mean / median precision in bits of `got` against `expected`, and the worst slot.

    The error of a slot is ``|got - expected|`` (complex slots: the modulus of the difference); its precision is
    -log2 of that error, clipped to [0, cap]. A non-finite `got` slot counts as 0 bits (and an infinite error).

    Parameters
    ----------
    expected : array_like
        The exact values (real or complex), finite.
    got : array_like
        The values to judge, e.g. a decryption; the same shape as `expected`.
    cap : float, optional
        Bits of an exact slot (an error of 0), and the largest value reported. Default 60.

    Returns
    -------
    PrecisionStats
        Min, mean and median bits, the largest and the mean error, the worst slot and the slot count.

    Raises
    ------
    ValueError
        On a shape mismatch, an empty input, or non-finite values in `expected`.
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
    """Return n slots alternating between c and -c (rng unused: the shape is deterministic)."""
    return np.where(np.arange(n) % 2 == 0, c, -c).astype(complex)


def _spikes(n, rng):
    """Return n zero slots except up to four at random places: 1, -1, i and -0.5 - 0.5i."""
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
    """Return `n` slots of the named input shape (see ``INPUT_SHAPES``), complex.

    Parameters
    ----------
    name : str
        A key of ``INPUT_SHAPES``: "uniform", "uniform_complex", "unit", "const", "const_neg", "const_complex",
        "alternating", "alternating_complex", "spikes" or "zeros".
    n : int
        Number of slots.
    rng : numpy.random.Generator or int, optional
        The random generator of the random shapes, or a seed for one. Default 0.

    Returns
    -------
    numpy.ndarray
        `n` complex128 values whose real and imaginary parts lie in [-1, 1].

    Raises
    ------
    ValueError
        For an unknown shape name.
    """
    if name not in INPUT_SHAPES:
        raise ValueError(f"unknown input shape {name!r}; choose from {', '.join(INPUT_SHAPES)}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    return INPUT_SHAPES[name](int(n), rng)
