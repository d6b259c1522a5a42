"""Workloads of `ember bench dist`: independent tasks fn(ctx, x) with a numpy reference ref(x).

batch
    ``(x * x).rotate(1)``: one HE Mul (relinearized, rescaled) and one rotation.
lr
    One logistic-regression gradient step on a ciphertext of samples x features (HELR style): per-sample inner
    products by rotate-and-add, the degree-3 sigmoid 0.5 + 0.15012 t - 0.001593 t^3, the gradient sig * x summed
    over the samples (rotate-and-add).
boot
    A bootstrapping of a level-0 ciphertext (CkksParams.bootstrappable; keys from a key directory).
"""
from __future__ import annotations

import numpy as np

LR_FEATURES = 8


def mul_rotate(ctx, x):
    """Return ``(x * x).rotate(1)``: one HE Mul and one rotation by 1 (the batch workload).

    Parameters
    ----------
    ctx : ember.Context
        The worker's context (unused).
    x : Ciphertext
        The input.

    Returns
    -------
    Ciphertext
        The square of `x`, rotated left by one slot.
    """
    return (x * x).rotate(1)


def mul_rotate_ref(v):
    """Return the numpy reference of :func:`mul_rotate`.

    Parameters
    ----------
    v : numpy.ndarray
        The input's slots.

    Returns
    -------
    numpy.ndarray
        ``np.roll(v * v, -1)``.
    """
    return np.roll(v * v, -1)


def _rot_sum(x, steps):
    for r in steps:
        x = x + x.rotate(r)
    return x


def lr_steps(slots: int, features: int = LR_FEATURES):
    """Return the rotation steps of the lr workload's two rotate-and-add sums.

    Parameters
    ----------
    slots : int
        The ciphertext's slots.
    features : int, optional
        Features per sample (default LR_FEATURES, 8); a power of two.

    Returns
    -------
    f_steps : list of int
        1, 2, 4, ... below `features`: the per-sample inner products.
    s_steps : list of int
        features, 2 features, ... below `slots`: the sum over the samples.
    """
    f = [1 << i for i in range(features.bit_length() - 1)]
    s = [features << i for i in range((slots // features).bit_length() - 1)]
    return f, s


def lr_step(ctx, x):
    """Compute one logistic-regression gradient step on a ciphertext of samples x features (the lr workload).

    Per-sample inner products with fixed weights by rotate-and-add, the degree-3 sigmoid
    0.5 + 0.15012 t - 0.001593 t^3, the gradient sig * x summed over the samples (rotate-and-add).

    Parameters
    ----------
    ctx : ember.Context
        The worker's context (unused).
    x : Ciphertext
        The samples, LR_FEATURES slots each.

    Returns
    -------
    Ciphertext
        The gradient: after the cyclic rotate-and-add, each slot holds the sum over the samples of sig * x at its
        feature position.
    """
    f_steps, s_steps = lr_steps(x.slots)
    w = np.tile(np.linspace(-0.5, 0.5, LR_FEATURES), x.slots // LR_FEATURES)
    t = _rot_sum(x * w, f_steps)
    sig = 0.5 + t * 0.15012 - (t * t) * (t * 0.001593)
    return _rot_sum(x * sig, s_steps)


def lr_step_ref(v):
    """Return the numpy reference of :func:`lr_step`.

    Parameters
    ----------
    v : numpy.ndarray
        The input's slots.

    Returns
    -------
    numpy.ndarray
        What :func:`lr_step` computes, in float64.
    """
    slots = v.shape[0]
    w = np.tile(np.linspace(-0.5, 0.5, LR_FEATURES), slots // LR_FEATURES)
    f_steps, s_steps = lr_steps(slots)
    t = v * w
    for r in f_steps:
        t = t + np.roll(t, -r)
    sig = 0.5 + 0.15012 * t - 0.001593 * t ** 3
    g = v * sig
    for r in s_steps:
        g = g + np.roll(g, -r)
    return g


def boot(ctx, x):
    """Bootstrap `x` (the boot workload).

    Parameters
    ----------
    ctx : ember.Context
        The worker's context (unused).
    x : Ciphertext
        A level-0 ciphertext of a bootstrappable parameter set.

    Returns
    -------
    Ciphertext
        ``x.bootstrap()``.
    """
    return x.bootstrap()


def boot_ref(v):
    """Return the numpy reference of :func:`boot`: `v` itself.

    Parameters
    ----------
    v : numpy.ndarray
        The input's slots.

    Returns
    -------
    numpy.ndarray
        `v`.
    """
    return v


WORKLOADS = {
    "batch": dict(fn=mul_rotate, ref=mul_rotate_ref, rotations=lambda slots: [1], level=None),
    "lr": dict(fn=lr_step, ref=lr_step_ref, rotations=lambda slots: sum(lr_steps(slots), []), level=None),
    "boot": dict(fn=boot, ref=boot_ref, rotations=lambda slots: [], level=0),
}
