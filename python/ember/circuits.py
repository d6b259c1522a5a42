"""Circuits on top of the evaluator: linear transforms (matrix x ciphertext), polynomials, sums of rotations.

The sums of rotations are Ciphertext.rotate_sum / inner_sum; inner_sum_rotations gives the keys an inner sum needs.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

import numpy as np

from . import _ember
from .context import Ciphertext, Context, GaloisKeys, integer_arg


class LinearTransform:
    """A plaintext matrix applied to ciphertexts, by diagonals with baby-step giant-step.

    `diagonals` maps k to the vector diag_k[i] = M[i][(i + k) % n]; from_matrix() extracts them.
    The transform is encoded for ciphertexts of `slots` slots at `level` (default: a fresh ciphertext's) and returns
    M x at level - 1, on the canonical scale of that level. apply(hoisted=True) is MAD's double-hoisted path
    (one ModUp for all baby steps, one ModDown per giant step, the last merged with the rescale:
    Evaluator::rotate_many_raised, mul_plain_sum, mod_down, mod_down_rescale); hoisted=False is the unhoisted
    reference path (LinearTransform::apply_reference: rotates, multiplies and adds one diagonal at a time).
    Both need the Galois keys of `rotations`.

    Parameters
    ----------
    ctx : Context
        The context whose ciphertexts it transforms.
    diagonals : mapping of int to array_like
        Diagonal index k (any integer, taken modulo the slots) to its `slots` complex values diag_k. Not empty.
    slots : int, optional
        Slots of the ciphertexts it applies to. Default: the length of the first diagonal.
    level : int, optional
        Level of the ciphertexts it applies to (it consumes one). Default: ``ctx.user_level``, the level of fresh
        ciphertexts (below ``ctx.max_level`` when the parameters have bootstrapping levels).
    n1 : int, optional
        Baby steps of the baby-step giant-step split; 0 (the default) lets the library choose.

    Raises
    ------
    ValueError
        When `diagonals` is empty (the native layer raises ValueError for other invalid arguments).
    """

    def __init__(self, ctx: Context, diagonals: Mapping[int, np.ndarray], slots: Optional[int] = None,
                 level: Optional[int] = None, n1: int = 0):
        if not diagonals:
            raise ValueError("LinearTransform: no diagonals")
        diags = {int(k): np.ascontiguousarray(v, dtype=np.complex128) for k, v in diagonals.items()}
        slots = len(next(iter(diags.values()))) if slots is None else int(slots)
        level = ctx.user_level if level is None else int(level)
        self._ctx = ctx
        self._core = _ember.LinearTransformCore(_ember.context_of(ctx._core), {k: list(v) for k, v in diags.items()},
                                                slots, level, n1)

    @classmethod
    def from_matrix(cls, ctx: Context, matrix: np.ndarray, level: Optional[int] = None, n1: int = 0,
                    tol: float = 0.0) -> "LinearTransform":
        """Make the transform of a square matrix, from its nonzero diagonals.

        Parameters
        ----------
        ctx : Context
            The context whose ciphertexts it transforms.
        matrix : array_like
            An n x n matrix (real or complex); the transform applies to ciphertexts of n slots.
        level : int, optional
            Level of the ciphertexts it applies to (default: ``ctx.user_level``, as in the constructor).
        n1 : int, optional
            Baby steps; 0 (the default) lets the library choose.
        tol : float, optional
            Diagonals whose largest absolute value is at most `tol` are left out (default 0: only all-zero
            diagonals). A matrix with no diagonal left becomes the zero transform (diagonal 0 of zeros).

        Returns
        -------
        LinearTransform
            The transform x -> matrix @ x.

        Raises
        ------
        ValueError
            When `matrix` is not square.
        """
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

    rotations = property(lambda self: list(self._core.rotations),
                         doc="The rotation steps whose Galois keys apply() needs (list of int; keygen(rotations=...)).")
    level = property(lambda self: self._core.level,
                     doc="The level of the ciphertexts it applies to (the result is one level lower).")
    slots = property(lambda self: self._core.slots, doc="The slot count of the ciphertexts it applies to.")
    baby_steps = property(lambda self: self._core.baby_steps,
                          doc="The baby steps n1 of the baby-step giant-step split (the one chosen when n1 = 0).")

    def apply(self, ct: Ciphertext, hoisted: bool = True) -> Ciphertext:
        """Apply the transform to a ciphertext: M x. Calling the object, ``lt(ct)``, is the same.

        Parameters
        ----------
        ct : Ciphertext
            A ciphertext of ``slots`` slots at ``level``, on the canonical scale; its key set needs the Galois
            keys of ``rotations``.
        hoisted : bool, optional
            True (default): the double-hoisted path; False: the unhoisted reference path (same result up to
            rounding, for comparison).

        Returns
        -------
        Ciphertext
            M x at level ``level - 1``.
        """
        gk = _ember.galois_keys_of(self._ctx._core, ct._core)
        if hoisted:
            return Ciphertext(self._ctx, self._core.apply(ct._core, gk))
        return Ciphertext(self._ctx, self._core.apply_reference(ct._core, gk))

    __call__ = apply


def chebyshev_coefficients(f: Callable[[np.ndarray], np.ndarray], degree: int, interval=(-1.0, 1.0)) -> np.ndarray:
    """Compute the Chebyshev interpolant of f on [a, b] at degree + 1 Chebyshev nodes (numpy).

    Parameters
    ----------
    f : callable
        A vectorised real function, called on a numpy array of points of `interval`.
    degree : int
        Degree of the interpolant.
    interval : tuple of float, optional
        (a, b), the interval; default (-1, 1).

    Returns
    -------
    numpy.ndarray
        The `degree` + 1 coefficients c_k of sum_k c_k T_k((2x - a - b) / (b - a)), for evaluate_chebyshev.
    """
    a, b = map(float, interval)
    return np.polynomial.chebyshev.chebinterpolate(lambda y: f(0.5 * (b - a) * y + 0.5 * (a + b)), int(degree))


def evaluate_chebyshev(ct: Ciphertext, coeffs, interval=(-1.0, 1.0)) -> Ciphertext:
    """Evaluate sum_k coeffs[k] T_k((2x - a - b) / (b - a)) on a ciphertext, baby-step giant-step.

    Consumes chebyshev_depth(coeffs) levels (+1 for the affine map when the interval is not [-1, 1]); a
    ciphertext on the canonical scale gives a result on the canonical scale. Needs the relinearization key of
    the ciphertext's key set.

    Parameters
    ----------
    ct : Ciphertext
        The input x, with enough levels left.
    coeffs : array_like of float
        The real Chebyshev coefficients c_0 .. c_d (e.g. from chebyshev_coefficients).
    interval : tuple of float, optional
        (a, b), the interval the coefficients are for; default (-1, 1).

    Returns
    -------
    Ciphertext
        The polynomial's values, slot by slot, at the input's level minus the levels consumed.

    Raises
    ------
    ValueError
        When `coeffs` is empty or not one-dimensional.
    """
    ctx = ct.context
    a, b = map(float, interval)
    c = np.asarray(coeffs, dtype=np.float64)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("evaluate_chebyshev: coeffs must be a non-empty 1-D array")
    return Ciphertext(ctx, _ember.evaluate_chebyshev(_ember.context_of(ctx._core), ct._core, list(c), a, b,
                                                     _ember.relin_key_of(ctx._core, ct._core)))


def evaluate_function(ct: Ciphertext, f: Callable[[np.ndarray], np.ndarray], degree: int, interval=(-1.0, 1.0)) -> Ciphertext:
    """Evaluate f on a ciphertext through its degree-`degree` Chebyshev interpolant on `interval`.

    ``evaluate_chebyshev(ct, chebyshev_coefficients(f, degree, interval), interval)``: the slots should lie in
    `interval`, where the interpolant approximates f.

    Parameters
    ----------
    ct : Ciphertext
        The input x.
    f : callable
        A vectorised real function (called on numpy arrays).
    degree : int
        Degree of the interpolant.
    interval : tuple of float, optional
        (a, b); default (-1, 1).

    Returns
    -------
    Ciphertext
        f(x) approximately, slot by slot (levels consumed as evaluate_chebyshev says).
    """
    return evaluate_chebyshev(ct, chebyshev_coefficients(f, degree, interval), interval)


def chebyshev_depth(coeffs) -> int:
    """Return the levels evaluate_chebyshev(ct, coeffs) consumes on [-1, 1] (one more on another interval).

    Parameters
    ----------
    coeffs : array_like of float
        Chebyshev coefficients c_0 .. c_d.

    Returns
    -------
    int
        The levels consumed, without the affine map of an interval other than [-1, 1].
    """
    return _ember.chebyshev_depth([float(c) for c in np.asarray(coeffs, dtype=np.float64)])


def inner_sum_rotations(stride: int, count: int, radix: int = 2) -> list[int]:
    """Return the rotation steps Ciphertext.inner_sum(stride, count, radix) needs Galois keys for.

    Pass them to ``Context.keygen(rotations=...)``.

    Parameters
    ----------
    stride : int
        Slot distance between the summed rotations.
    count : int
        Number of rotations summed (a power of two).
    radix : int, optional
        Rotations per round plus one (a power of two >= 2; default 2, the rotate-and-add).

    Returns
    -------
    list of int
        The steps, in the order of inner_sum's rounds.

    Raises
    ------
    TypeError
        When an argument is not an integer.
    ValueError
        For arguments inner_sum refuses (raised by the native layer).
    """
    return list(_ember.inner_sum_rotations(*(integer_arg("inner_sum", n, v) for n, v in
                                             (("stride", stride), ("count", count), ("radix", radix)))))
