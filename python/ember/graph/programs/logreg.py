"""HELR's server program (Han, Hong, Cheon, Park, AAAI'19, after Kim et al. 2018) and its graph.

The packing, one encrypted iteration, the training loop with its bootstrapping, written against the public
ciphertext operations only (+, -, *, rotate, conjugate, bootstrap) -- and its graph, ``graph_of("helr")``. The
application around it (the data owner, the float64 reference, the scikit-learn estimator) is
``ember.apps.logreg``, whose docstring derives the algorithm, the packing and the level budget implemented
here.
"""
from __future__ import annotations

import math
import time
import types
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ...context import Ciphertext
from ...params import CkksParams
from ..symbolic import capture_program

#: Options passed to CkksParams.bootstrappable for training: no arcsine interpolant in EvalMod. Training needs
#: far fewer bits than the library default's >= 25 (the weights carry the sigmoid's 0.1 error and the CKKS
#: noise of each iteration); without the arcsine EvalMod is shallower, so levels=9 fits the 128-bit bound with
#: dnum = 3 instead of 6 (smaller keys). Measured at N = 2^16 (2 threads, quiet lock): 18.6 bits for slots in
#: [-1, 1]^2 and 4.5 s per bootstrapping (median of 3), against ~6.8-7.5 s for the default in the same runs;
#: the trained weights stay within 1e-5 of float64's either way. The bootstrapped (v + i w) / B stays in
#: [-1, 1] by the choice of B = weight_bound.
BOOTSTRAP_OPTIONS: dict = {"arcsin": False}


#: Levels one iteration consumes on v (and one more for the iteration that packs v, w for bootstrapping).
LEVELS_PER_ITERATION = 4


# ---- the sigmoid -------------------------------------------------------------------------------------------------
def sigmoid_poly(degree: int = 3, interval: float = 8.0, points: int = 4001) -> np.ndarray:
    """Return the monomial coefficients of the least-squares odd fit of sigmoid on [-interval, interval].

    c[0] = 1/2, even coefficients beyond 0 are zero.

    Parameters
    ----------
    degree : int, optional
        The degree, odd (default 3).
    interval : float, optional
        The half-width of the interval fitted (default 8).
    points : int, optional
        The points of the uniform grid fitted on (default 4001).

    Returns
    -------
    numpy.ndarray
        c[0..degree].

    Raises
    ------
    ValueError
        The degree is not odd and positive.
    """
    if degree < 1 or degree % 2 == 0:
        raise ValueError(f"sigmoid_poly: degree must be odd, got {degree}")
    x = np.linspace(-interval, interval, points)
    A = np.stack([x ** k for k in range(1, degree + 1, 2)], axis=1)
    odd = np.linalg.lstsq(A, 1.0 / (1.0 + np.exp(-x)) - 0.5, rcond=None)[0]
    c = np.zeros(degree + 1)
    c[0] = 0.5
    c[1::2] = odd
    return c


def sigmoid_poly_error(coeffs, interval: float = 8.0) -> float:
    """Return ``max |poly - sigmoid|`` on [-interval, interval] (on a grid of 20001 points).

    Parameters
    ----------
    coeffs : array_like
        The polynomial's monomial coefficients.
    interval : float, optional
        The half-width of the interval (default 8).

    Returns
    -------
    float
        The largest error.
    """
    x = np.linspace(-interval, interval, 20001)
    return float(np.abs(np.polynomial.polynomial.polyval(x, coeffs) - 1.0 / (1.0 + np.exp(-x))).max())


def g_coeffs(coeffs) -> np.ndarray:
    """Return the coefficients of g(t) = poly(-t) ~ sigmoid(-t).

    Parameters
    ----------
    coeffs : array_like
        The monomial coefficients of poly (the sigmoid fit).

    Returns
    -------
    numpy.ndarray
        g's monomial coefficients (the odd ones negated).
    """
    c = np.array(coeffs, dtype=np.float64)
    c[1::2] *= -1
    return c


# ---- the schedule ------------------------------------------------------------------------------------------------
def nesterov_schedule(iterations: int, learning_rate: float, decay: float = 0.0) -> list[tuple[float, float]]:
    """Return the Nesterov schedule: (alpha_t, eta_t) for t < iterations.

    alpha_t = learning_rate / (1 + decay t); eta_t = (1 - lambda_{t+1}) / lambda_{t+2} (eta_0 = 0: the first
    step is plain gradient ascent; then eta_t < 0, the momentum).

    Parameters
    ----------
    iterations : int
        The iterations.
    learning_rate : float
        alpha_0.
    decay : float, optional
        The learning rate's decay (default 0).

    Returns
    -------
    list of tuple of float
        (alpha_t, eta_t) per iteration.
    """
    lam = [0.0]
    for _ in range(iterations + 2):
        lam.append((1.0 + math.sqrt(1.0 + 4.0 * lam[-1] ** 2)) / 2.0)
    return [(learning_rate / (1.0 + decay * t), (1.0 - lam[t + 1]) / lam[t + 2]) for t in range(iterations)]


# ---- the packing -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Packing:
    """Layout of one batch of n samples x `features` (padded to F) in ciphertexts of `slots` slots.

    See ``ember.apps.logreg``'s docstring for the layout.

    Parameters
    ----------
    slots : int
        S, the slots of a ciphertext.
    features : int
        The features per sample (bias included).
    samples : int
        n, the samples of a batch.
    """

    slots: int
    features: int
    samples: int

    @property
    def F(self) -> int:
        """F: the features padded to a power of two (the slots of a row)."""
        return 1 << max(0, (self.features - 1).bit_length())

    @property
    def R(self) -> int:
        """R = S / F: the rows of a ciphertext (ValueError when F > S)."""
        if self.F > self.slots:
            raise ValueError(f"Packing: {self.features} features need {self.F} slots per row, more than {self.slots}")
        return self.slots // self.F

    @property
    def ciphertexts(self) -> int:
        """Ciphertexts of the inner-product layout (two sample groups each: real and imaginary parts)."""
        return -(-self.samples // (2 * self.R))

    @property
    def lanes(self) -> int:
        """Q: the ciphertexts rounded up to a power of two; also the ciphertexts of the gradient layout."""
        q = 1 << max(0, (self.ciphertexts - 1).bit_length())
        if q > self.F:
            raise ValueError(f"Packing: {self.ciphertexts} ciphertexts per batch need more lanes than the {self.F} "
                             f"columns of a row; use smaller batches")
        return q

    @property
    def vectors(self) -> int:
        """Slot vectors (ciphertexts) per batch.

        `ciphertexts` in the inner-product layout, then `lanes` in the gradient layout.
        """
        return self.ciphertexts + self.lanes

    def rotations(self) -> list[int]:
        """Return the rotation steps an encrypted iteration needs.

        Returns
        -------
        list of int
            The steps, sorted: the sums over the F columns, the replication over the row, the lanes (hoisted)
            and the sums over the R rows.
        """
        F, S, Q = self.F, self.slots, self.lanes
        steps = [1 << k for k in range(F.bit_length() - 1)]                    # sums over the F columns
        steps += [-(Q << k) for k in range((F // Q).bit_length() - 1)]         # replication over the row
        steps += list(range(1, Q))                                             # the lanes (hoisted)
        steps += [F << k for k in range((S // F).bit_length() - 1)]             # sums over the R rows
        return sorted(set(steps))

    def _groups(self, Z: np.ndarray) -> np.ndarray:
        """Return the batch as (2 C, R, F) groups: sample i is row i mod R of group i // R (zero padding)."""
        n, f = Z.shape
        if n != self.samples or f != self.features:
            raise ValueError(f"Packing: batch of shape {Z.shape}, expected ({self.samples}, {self.features})")
        R, F = self.R, self.F
        full = np.zeros((2 * self.ciphertexts * R, F))
        full[:n, :f] = Z
        return full.reshape(2 * self.ciphertexts, R, F)

    def pack_batch(self, Z: np.ndarray) -> list[np.ndarray]:
        """Return the slot vectors (complex) of a batch.

        First the `ciphertexts` vectors of the inner-product layout, then the `lanes` vectors of the gradient
        layout (see ``ember.apps.logreg``'s docstring).

        Inner-product layout, ciphertext c: pair r = (row r of group 2c) + i (row r of group 2c + 1) occupies the
        F slots from r F + c (feature j at the slot = j mod F: columns < c come from the next slot row), so that
        its inner product lands in column c. Gradient layout, vector k: slot (r, j) holds feature j of the pair
        whose g the lane rotation by k brings there: pair r' of ciphertext c = (j + k) mod Q, r' = r + [j + k >= F]
        (mod R); zero for the padding lanes c >= C.

        Parameters
        ----------
        Z : numpy.ndarray
            The batch, samples x features.

        Returns
        -------
        list of numpy.ndarray
            The `vectors` slot vectors.

        Raises
        ------
        ValueError
            Z's shape is not (samples, features).
        """
        G = self._groups(Z)
        R, F, C, Q = self.R, self.F, self.ciphertexts, self.lanes
        pairs = np.zeros((Q, R, F), dtype=np.complex128)
        pairs[:C] = G[0::2] + 1j * G[1::2]
        cols = np.arange(F)
        out = []
        for c in range(C):
            v = pairs[c].copy()
            v[:, :c] = np.roll(pairs[c], 1, axis=0)[:, :c]    # slot (r, j < c) belongs to pair r - 1
            out.append(v.reshape(-1))
        for k in range(Q):
            v = np.empty((R, F), dtype=np.complex128)
            cross = cols + k >= F
            lane = (cols + k) % Q
            for r in range(R):
                rr = np.where(cross, (r + 1) % R, r)
                v[r] = pairs[lane, rr, cols]
            out.append(v.reshape(-1))
        return out

    def pack_weights(self, w: np.ndarray) -> np.ndarray:
        """Return the slot vector of weights: w padded to F, repeated in each of the R rows.

        Parameters
        ----------
        w : numpy.ndarray
            The `features` weights.

        Returns
        -------
        numpy.ndarray
            The S slots.
        """
        row = np.zeros(self.F)
        row[: self.features] = w
        return np.tile(row, self.R)

    def unpack_weights(self, slots: np.ndarray) -> np.ndarray:
        """Return the weights of a decrypted weight vector (the mean over the R copies).

        Parameters
        ----------
        slots : numpy.ndarray
            The decrypted slots.

        Returns
        -------
        numpy.ndarray
            The `features` weights (real parts).
        """
        return np.asarray(slots).real.reshape(self.R, self.F).mean(axis=0)[: self.features]

    def column_mask(self, column: int = 0) -> np.ndarray:
        """Return the mask of one column: 1 in the slots column, column + F, column + 2F, ..., else 0.

        Parameters
        ----------
        column : int, optional
            The column (default 0).

        Returns
        -------
        numpy.ndarray
            The S slots.
        """
        m = np.zeros(self.slots)
        m[column:: self.F] = 1.0
        return m


# ---- the server: ciphertexts and public constants only -----------------------------------------------------------
def _rotsum(ct: Ciphertext, steps) -> Ciphertext:
    for s in steps:
        ct = ct + ct.rotate(s)
    return ct


def encrypted_gradient(v: Ciphertext, Zc: list[Ciphertext], packing: Packing, coeffs, kappa: complex) -> Ciphertext:
    """Return kappa * sum_i g(z_i . v) z_i (real, in every row).

    Steps 1 to 3 of ``ember.apps.logreg``'s docstring; four levels below v (Zc at v's level or above).

    Parameters
    ----------
    v : ember.Ciphertext
        The weights v.
    Zc : list of ember.Ciphertext
        The packing's `vectors` ciphertexts of one batch (inner-product layout, then gradient layout).
    packing : Packing
        The layout.
    coeffs : array_like
        The sigmoid fit's monomial coefficients, degree 3.
    kappa : complex
        The factor folded into the sigmoid's coefficients.

    Returns
    -------
    ember.Ciphertext
        The gradient term.

    Raises
    ------
    ValueError
        The sigmoid is not of degree 3, or Zc has not the packing's number of vectors.
    """
    g0, g1, _, g3 = g_coeffs(coeffs)[:4] if len(coeffs) == 4 else (None,) * 4
    if g0 is None:
        raise ValueError("encrypted_gradient: the encrypted path evaluates a degree-3 sigmoid")
    if len(Zc) != packing.vectors:
        raise ValueError(f"encrypted_gradient: {len(Zc)} ciphertexts, the packing has {packing.vectors} per batch")
    F, R, C, Q = packing.F, packing.R, packing.ciphertexts, packing.lanes
    col = [1 << k for k in range(F.bit_length() - 1)]
    rows = [F << k for k in range(R.bit_length() - 1)]
    ctx = v.context
    T = None
    for c, z in enumerate(Zc[:C]):
        mk = packing.column_mask(c) * (kappa / 2.0)  # / 2: the real part is taken as P + conj(P)
        s = _rotsum(z * v, col)                      # pair r's inner product in slot (r, c)
        sb = s.conjugate()
        # s^2 + 3 sb^2 with one relinearization and one rescale (the integer 3 is exact and takes no level)
        cubic = (s * (mk * (g3 / 4.0))) * ctx.multiply_sum([(s, s), (sb * 3, sb)])
        gc = cubic + sb * (mk * g1) + mk * (g0 * (1 - 1j))
        T = gc if T is None else T + gc               # lane c: column c
    T = _rotsum(T, [-(Q << k) for k in range((F // Q).bit_length() - 1)])   # column j: lane j mod Q
    lanes = [T] + (T.rotate_many(range(1, Q)) if Q > 1 else [])
    # sum_k lane_k * Z'_k: the products' tensors summed, one relinearization and one rescale for all Q of them
    total = ctx.multiply_sum(zip(lanes, Zc[C:C + Q]))
    total = _rotsum(total, rows)
    return total + total.conjugate()


def encrypted_iteration(v: Ciphertext, w: Ciphertext, Zc: list[Ciphertext], n: int, packing: Packing, coeffs,
                        alpha: float, eta: float, pack_bound: Optional[float] = None):
    """Run one Nesterov iteration on ciphertexts.

    Parameters
    ----------
    v, w : ember.Ciphertext
        v_t and w_t.
    Zc : list of ember.Ciphertext
        The batch's ciphertexts (:func:`encrypted_gradient`).
    n : int
        The batch's samples.
    packing : Packing
        The layout.
    coeffs : array_like
        The sigmoid fit's monomial coefficients, degree 3.
    alpha, eta : float
        The schedule's alpha_t and eta_t.
    pack_bound : float, optional
        B: return the single ciphertext (v_{t+1} + i w_{t+1}) / B instead, ready for bootstrapping (one level
        more).

    Returns
    -------
    tuple of ember.Ciphertext or ember.Ciphertext
        (v_{t+1}, w_{t+1}); with `pack_bound`, the packed ciphertext.
    """
    one_eta = 1.0 - eta
    if pack_bound is None:
        E = encrypted_gradient(v, Zc, packing, coeffs, one_eta * alpha / n)
        v_new = (v * one_eta if one_eta != 1.0 else v) + E
        if eta != 0.0:
            v_new = v_new + w * eta
        w_new = v + (E * (1.0 / one_eta) if one_eta != 1.0 else E)
        return v_new, w_new
    B = float(pack_bound)
    E = encrypted_gradient(v, Zc, packing, coeffs, alpha / n)  # alpha/n sum g z: w_{t+1} - v_t
    # (v_{t+1} + i w_{t+1}) / B = ((1 - eta) + i) v_t / B + eta w_t / B + ((1 - eta) + i) E / B
    k = complex(one_eta, 1.0) / B
    c = v * k + E * k
    if eta != 0.0:
        c = c + w * (eta / B)
    return c


def unpack_bootstrapped(c: Ciphertext, bound: float):
    """Return (v, w) from a bootstrapped (v + i w) / B.

    v = (B/2)(c + conj c) (no level when B/2 is an integer), w = (-i B / 2)(c - conj c).

    Parameters
    ----------
    c : ember.Ciphertext
        The bootstrapped ciphertext.
    bound : float
        B.

    Returns
    -------
    tuple of ember.Ciphertext
        (v, w).
    """
    cb = c.conjugate()
    half = bound / 2.0
    v = (c + cb) * (int(half) if float(half).is_integer() else half)
    w = (c - cb) * complex(0.0, -half)
    return v, w


@dataclass
class TrainingLog:
    """What :func:`train_encrypted` did.

    Parameters
    ----------
    iterations : int
        Iterations done.
    bootstraps : int
        Bootstrappings done.
    seconds : float
        Seconds since the loop started, at the last iteration.
    bootstrap_seconds : float
        Seconds spent bootstrapping.
    levels : list
        (v's level, w's level) after each iteration.
    iterations_per_bootstrap : int
        Iterations one bootstrapping cycle holds at the starting level.
    """

    iterations: int = 0
    bootstraps: int = 0
    seconds: float = 0.0
    bootstrap_seconds: float = 0.0
    levels: list = field(default_factory=list)
    iterations_per_bootstrap: int = 0


def _bootstraps_at(level: int) -> bool:
    """Return whether an iteration (not the last) that starts at `level` bootstraps: the next would not fit after it.

    Parameters
    ----------
    level : int
        The level of v at the iteration's start.

    Returns
    -------
    bool
        The rule of :func:`train_encrypted`.
    """
    return level - LEVELS_PER_ITERATION < LEVELS_PER_ITERATION + 1


def bootstraps_needed(level: int, iterations: int) -> bool:
    """Return whether :func:`train_encrypted` will bootstrap, from fresh weights at `level`.

    Then (and only then) the training needs bootstrapping keys: without a bootstrapping, key generation skips them
    (at N = 2^16, some 38 s and 9 GB of keys).

    Parameters
    ----------
    level : int
        The level of the fresh weight ciphertexts (the context's ``user_level``).
    iterations : int
        Iterations of the training.

    Returns
    -------
    bool
        True when some iteration but the last starts below the levels of two iterations.
    """
    for _ in range(iterations - 1):
        if _bootstraps_at(level):
            return True
        level -= LEVELS_PER_ITERATION
    return False


def train_encrypted(v: Ciphertext, w: Ciphertext, batches: list[list[Ciphertext]], sizes: list[int], packing: Packing,
                    coeffs, schedule, weight_bound: float, progress: Optional[Callable] = None,
                    monitor: Optional[Callable] = None):
    """Run the server's loop: iterations on the encrypted batches, bootstrapping when the levels run out.

    When the iteration after this one would not fit in the levels left, this one outputs (v + i w) / B, which is
    bootstrapped and unpacked (never at the last iteration).

    Parameters
    ----------
    v, w : ember.Ciphertext
        The initial v and w.
    batches : list of list of ember.Ciphertext
        Each batch's ciphertexts, used in turn.
    sizes : list of int
        Each batch's samples.
    packing : Packing
        The layout.
    coeffs : array_like
        The sigmoid fit's monomial coefficients, degree 3.
    schedule : list of tuple of float
        (alpha_t, eta_t) per iteration (:func:`nesterov_schedule`); its length is the number of iterations.
    weight_bound : float
        B, which keeps the bootstrapped values in [-1, 1].
    progress : callable, optional
        ``progress(t, log)``, called after each iteration.
    monitor : callable, optional
        ``monitor(t, w_ct)``, called after each iteration (a diagnostic for the data owner's plots).

    Returns
    -------
    tuple
        (w_T, :class:`TrainingLog`).

    Raises
    ------
    ValueError
        Not enough levels for an iteration (with its bootstrapping).
    """
    log = TrainingLog(iterations_per_bootstrap=1 + (v.level - LEVELS_PER_ITERATION - 1) // LEVELS_PER_ITERATION)
    T = len(schedule)
    t0 = time.perf_counter()
    for t in range(T):
        alpha, eta = schedule[t]
        b = t % len(batches)
        last = t == T - 1
        if not last and _bootstraps_at(v.level):
            if v.level < LEVELS_PER_ITERATION + 1:
                raise ValueError(f"train_encrypted: v at level {v.level}, an iteration with bootstrapping needs "
                                 f"{LEVELS_PER_ITERATION + 1}")
            c = encrypted_iteration(v, w, batches[b], sizes[b], packing, coeffs, alpha, eta, pack_bound=weight_bound)
            tb = time.perf_counter()
            c = c.bootstrap()
            log.bootstrap_seconds += time.perf_counter() - tb
            log.bootstraps += 1
            v, w = unpack_bootstrapped(c, weight_bound)
        else:
            if v.level < LEVELS_PER_ITERATION + (0 if last else 1) or w.level < 1:
                raise ValueError(f"train_encrypted: v at level {v.level}, w at {w.level}: not enough levels")
            v, w = encrypted_iteration(v, w, batches[b], sizes[b], packing, coeffs, alpha, eta)
        log.iterations = t + 1
        log.levels.append((v.level, w.level))
        log.seconds = time.perf_counter() - t0
        if monitor is not None:
            monitor(t, w)
        if progress is not None:
            progress(t, log)
    return w, log


def training_params(log_n: int = 16, levels: int = 9, insecure: bool = False,
                    bootstrap_options: Optional[dict] = None) -> CkksParams:
    """Return the training's parameters.

    CkksParams.bootstrappable(log_n, levels) with :data:`BOOTSTRAP_OPTIONS` (or the given options); the data
    owner's context and the symbolic graph (:func:`helr`) both use it.

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16).
    levels : int, optional
        Computation levels (default 9).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    bootstrap_options : dict, optional
        CkksParams.bootstrappable options (default :data:`BOOTSTRAP_OPTIONS`).

    Returns
    -------
    ember.CkksParams
        The parameters.
    """
    opts = dict(BOOTSTRAP_OPTIONS if bootstrap_options is None else bootstrap_options)
    return CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure, **opts)


# ---- the program as a graph ---------------------------------------------------------------------------------------
#: The training options the graph depends on, at EncryptedLogisticRegression's defaults (a test checks that they
#: agree with the estimator's).
TRAINING_DEFAULTS = dict(levels=9, weight_bound=8.0, learning_rate=2.0, decay=0.0, sigmoid_degree=3,
                         sigmoid_interval=8.0, bootstrap_options=None)

#: HELR's shape (Han et al. AAAI'19): a batch of 1024 samples x 256 features (bias included), 4 ciphertexts of
#: the inner-product layout and 4 lanes at N = 2^16.
HELR_SHAPE = dict(samples=1024, features=256)


class _Stop(Exception):
    """Ends train_encrypted after the iteration that bootstraps (raised from its progress callback)."""


def helr_expected(packing) -> dict:
    """Return the app's own arithmetic for one cycle of train_encrypted at these levels.

    The plain iterations and the one that packs (v + i w) / B and bootstraps it (ember.apps.logreg's docstring:
    C log2 F + log2(F / Q) + log2 R rotations and Q - 1 hoisted per iteration; per inner-product ciphertext the
    product Z_c v, the sum S^2 + 3 conj(S)^2 as one mul_sum and the cubic's product, and the Q lanes' products as
    one mul_sum: 2C products and C + 1 product sums, 3C + 1 relinearizations where separate products took 4C + Q;
    C + 1 conjugations per iteration and one more to unpack). The momentum (eta_t != 0) changes none of these
    counts: its terms are products by constants and additions.

    Parameters
    ----------
    packing : Packing
        The layout.

    Returns
    -------
    dict
        The expected counts per iteration (rotations, hoisted rotations, rotate_many, products, product sums,
        conjugations), the unpacking's conjugations, the bootstraps and the levels per iteration.
    """
    F, R, C, Q = packing.F, packing.R, packing.ciphertexts, packing.lanes
    log2 = lambda x: x.bit_length() - 1  # noqa: E731
    per_rot = C * log2(F) + log2(F // Q) + log2(R)
    return dict(rotations_per_iteration=per_rot, hoisted_per_iteration=Q - 1,
                rotate_many_per_iteration=int(Q > 1), products_per_iteration=2 * C,
                product_sums_per_iteration=C + 1,
                conjugations_per_iteration=C + 1, unpack_conjugations=1, bootstraps=1,
                levels_per_iteration=LEVELS_PER_ITERATION)


def helr(log_n: int = 16, samples: int = HELR_SHAPE["samples"], features: int = HELR_SHAPE["features"],
         start: int = 2, insecure: bool = False, **training):
    """Return the graph of HELR training: one bootstrapping cycle, captured symbolically.

    The training as :func:`train_encrypted` runs it (the function EncryptedLogisticRegression.fit calls), zeros
    for the encrypted batch and weights.

    At the default levels (9): one plain iteration, then the iteration with pack_bound, the bootstrapping of
    (v + i w) / B and unpack_bootstrapped. Parameters, sigmoid, schedule, B and rotation keys are the training's
    (:data:`TRAINING_DEFAULTS`, or `training`): :func:`training_params`, i.e. bootstrappable without the arcsine.
    The iterations are t = start, start + 1 of the Nesterov schedule (default 2: the steady state; t = 0 has
    eta = 0, no momentum terms). The graph's output is w after the bootstrapping; v's unpacking is in the graph
    too.

    Parameters
    ----------
    log_n : int
        log2 of the ring degree (16: 128-bit bootstrappable parameters; smaller rings need insecure=True).
    samples, features : int
        The batch's shape (HELR's 1024 x 256 by default).
    start : int
        The first iteration of the Nesterov schedule captured.
    insecure : bool
        Allow parameters above the 128-bit bound.
    **training
        Any of :data:`TRAINING_DEFAULTS`' keys: levels, weight_bound, learning_rate, decay, sigmoid_degree,
        sigmoid_interval, bootstrap_options.

    Returns
    -------
    ember.graph.Graph
        The captured graph; ``meta["helr"]`` holds its shape, iterations and levels.

    Raises
    ------
    ValueError
        On an unknown training option, or levels that leave no room for an iteration with bootstrapping.
    """
    unknown = sorted(set(training) - set(TRAINING_DEFAULTS))
    if unknown:
        raise ValueError(f"helr: unknown training option(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(TRAINING_DEFAULTS)}")
    est = types.SimpleNamespace(**{**TRAINING_DEFAULTS, **{k: v for k, v in training.items() if v is not None}})
    per_boot = 1 + (est.levels - LEVELS_PER_ITERATION - 1) // LEVELS_PER_ITERATION   # as train_encrypted's log
    if per_boot < 1:
        raise ValueError(f"helr: levels={est.levels} leave no room for an iteration with bootstrapping "
                         f"({LEVELS_PER_ITERATION + 1} levels)")
    params = training_params(log_n, est.levels, insecure, est.bootstrap_options)
    pk = Packing(params.slots, features, samples)
    coeffs = sigmoid_poly(est.sigmoid_degree, est.sigmoid_interval)
    schedule = nesterov_schedule(start + per_boot + 1, est.learning_rate, est.decay)[start:]

    def program(ctx, keys):
        zeros = np.zeros(ctx.slots)
        batch = [ctx.encrypt(zeros, keys.public) for _ in range(pk.vectors)]
        v = ctx.encrypt(zeros, keys.public)
        w = ctx.encrypt(zeros, keys.public)
        out = {}

        def stop(t, log):
            if log.bootstraps:
                raise _Stop

        try:
            train_encrypted(v, w, [batch], [samples], pk, coeffs, schedule, est.weight_bound, progress=stop,
                            monitor=lambda t, w_ct: out.__setitem__("w", w_ct))
        except _Stop:
            pass
        else:
            raise RuntimeError("helr: train_encrypted ended without bootstrapping")
        return out["w"]

    g = capture_program(program, params, rotations=pk.rotations(), bootstrapping=True)
    g.meta["program"] = (f"HELR training (ember.graph.programs.logreg), {samples} x {features}, iterations {start}.."
                         f"{start + per_boot - 1} with one bootstrapping, N=2^{log_n}")
    g.meta["helr"] = dict(samples=samples, features=features, iterations=per_boot, start=start,
                          ciphertexts=pk.ciphertexts, lanes=pk.lanes, levels=est.levels)
    return g
