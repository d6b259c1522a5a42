"""Circuits on top of the evaluator: linear transforms (matrix x ciphertext), polynomials, sums of rotations
(Ciphertext.rotate_sum / inner_sum; inner_sum_rotations gives the keys an inner sum needs)."""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np

from . import _ember
from .context import Ciphertext, Context, GaloisKeys, integer_arg


class LinearTransform:
    """A plaintext matrix applied to ciphertexts, by diagonals with baby-step giant-step.

    `diagonals` maps k to the vector diag_k[i] = M[i][(i + k) % n]; from_matrix() extracts them.
    The transform is encoded for ciphertexts of `slots` slots at `level` (default: the top) and returns
    M x at level - 1. apply(hoisted=True) is MAD's double-hoisted path (one ModUp for all baby steps,
    one ModDown per giant step, the last merged with the rescale: Evaluator::rotate_many_raised,
    mul_plain_sum, mod_down, mod_down_rescale); hoisted=False is the unhoisted reference path
    (LinearTransform::apply_reference: rotates, multiplies and adds one diagonal at a time).
    """

    def __init__(self, ctx: Context, diagonals: Mapping[int, np.ndarray], slots: Optional[int] = None,
                 level: Optional[int] = None, n1: int = 0):
        if not diagonals:
            raise ValueError("LinearTransform: no diagonals")
        diags = {int(k): np.ascontiguousarray(v, dtype=np.complex128) for k, v in diagonals.items()}
        slots = len(next(iter(diags.values()))) if slots is None else int(slots)
        level = ctx.max_level if level is None else int(level)
        self._ctx = ctx
        self._core = _ember.LinearTransformCore(_ember.context_of(ctx._core), {k: list(v) for k, v in diags.items()},
                                                slots, level, n1)

    @classmethod
    def from_matrix(cls, ctx: Context, matrix: np.ndarray, level: Optional[int] = None, n1: int = 0,
                    tol: float = 0.0) -> "LinearTransform":
        m = np.asarray(matrix)
        n = m.shape[0]
        if m.ndim != 2 or m.shape[1] != n:
            raise ValueError(f"LinearTransform.from_matrix: expected a square matrix, got shape {m.shape}")
        rows = np.arange(n)
        diags = {k: m[rows, (rows + k) % n] for k in range(n)}
        diags = {k: d for k, d in diags.items() if np.abs(d).max() > tol}
        if not diags:
            diags = {0: np.zeros(n)}
        return cls(ctx, diags, n, level, n1)

    rotations = property(lambda self: list(self._core.rotations), doc="rotations whose keys apply() needs")
    level = property(lambda self: self._core.level)
    slots = property(lambda self: self._core.slots)
    baby_steps = property(lambda self: self._core.baby_steps)

    def apply(self, ct: Ciphertext, hoisted: bool = True) -> Ciphertext:
        gk = _ember.galois_keys_of(self._ctx._core, ct._core)
        if hoisted:
            return Ciphertext(self._ctx, self._core.apply(ct._core, gk))
        return Ciphertext(self._ctx, self._core.apply_reference(ct._core, gk))

    __call__ = apply


def chebyshev_coefficients(f: Callable[[np.ndarray], np.ndarray], degree: int, interval=(-1.0, 1.0)) -> np.ndarray:
    """Chebyshev interpolant of f on [a, b] at degree + 1 Chebyshev nodes (numpy)."""
    a, b = map(float, interval)
    return np.polynomial.chebyshev.chebinterpolate(lambda y: f(0.5 * (b - a) * y + 0.5 * (a + b)), int(degree))


def evaluate_chebyshev(ct: Ciphertext, coeffs, interval=(-1.0, 1.0)) -> Ciphertext:
    """sum_k coeffs[k] T_k((2x - a - b) / (b - a)) on a ciphertext, baby-step giant-step.

    Consumes chebyshev_depth(degree) levels (+1 for the affine map when the interval is not [-1, 1]).
    """
    ctx = ct.context
    a, b = map(float, interval)
    c = np.asarray(coeffs, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("evaluate_chebyshev: coeffs must be a non-empty 1-D array")
    return Ciphertext(ctx, _ember.evaluate_chebyshev(_ember.context_of(ctx._core), ct._core, list(c), a, b,
                                                     _ember.relin_key_of(ctx._core, ct._core)))


def evaluate_function(ct: Ciphertext, f: Callable[[np.ndarray], np.ndarray], degree: int, interval=(-1.0, 1.0)) -> Ciphertext:
    """f on a ciphertext through its degree-`degree` Chebyshev interpolant on `interval`."""
    return evaluate_chebyshev(ct, chebyshev_coefficients(f, degree, interval), interval)


def chebyshev_depth(coeffs) -> int:
    """Levels evaluate_chebyshev(ct, coeffs) consumes on [-1, 1] (one more on another interval)."""
    return _ember.chebyshev_depth([float(c) for c in np.asarray(coeffs, dtype=np.float64)])


def inner_sum_rotations(stride: int, count: int, radix: int = 2) -> list[int]:
    """The rotation steps Ciphertext.inner_sum(stride, count, radix) needs Galois keys for (keygen(rotations=...))."""
    return list(_ember.inner_sum_rotations(*(integer_arg("inner_sum", n, v) for n, v in
                                             (("stride", stride), ("count", count), ("radix", radix)))))
