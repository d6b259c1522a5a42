"""Encrypted logistic-regression training after HELR (Han, Hong, Cheon, Park, AAAI'19) and Kim et al. 2018
(iDASH): mini-batch gradient ascent on the log-likelihood with Nesterov's acceleration, a polynomial sigmoid,
samples x features packed into slots, bootstrapping of the weights when levels run out.

Roles. The *data owner* (:class:`DataOwner`) holds the secret key: it scales the data, encrypts the batches and
the initial weights, and decrypts the model. The *server* (:func:`train_encrypted`, :func:`encrypted_iteration`)
sees ciphertexts and public constants only, and uses only the public ciphertext operations (+, -, *, rotate,
conjugate, bootstrap). :class:`EncryptedLogisticRegression` runs both ends, scikit-learn style.

The algorithm (the float64 reference :func:`train_float64` runs it on the same batches):

    z_i = y_i x_i (y_i in {-1, +1}; x_i scaled to [-1, 1] with a bias column 1),  g(t) ~ sigmoid(-t)
    w_{t+1} = v_t + (alpha_t / n) sum_i g(z_i . v_t) z_i
    v_{t+1} = (1 - eta_t) w_{t+1} + eta_t w_t,     eta_t = (1 - lambda_{t+1}) / lambda_{t+2},
    lambda_0 = 0, lambda_{k+1} = (1 + sqrt(1 + 4 lambda_k^2)) / 2,  alpha_t = learning_rate / (1 + decay t).

Sigmoid. g(t) = 1/2 - a1 t - a3 t^3 with (a1, a3) the least-squares fit of sigmoid on [-8, 8] (uniform
measure): a1 = 0.150094, a3 = -0.00159204, max |error| 0.114 on the interval -- HELR's degree-3 sigmoid.
:func:`sigmoid_poly` fits any odd degree; the encrypted path evaluates degree 3.

Packing (:class:`Packing`). Features are padded to F (a power of two); a ciphertext of S slots holds R = S / F
rows; sample i of a batch is row i mod R of group i // R, and groups 2c, 2c + 1 make pair r = (row r of 2c) +
i (row r of 2c + 1) of ciphertext c < C. The weights v (and w) are one real ciphertext, the F weights repeated
in every row (feature j in the slots = j mod F). A batch is encrypted twice (the data owner's work, once):
- the inner-product layout, C ciphertexts: ciphertext c holds pair r in the F slots from r F + c on (feature j
  in the slot = j mod F, the first c columns taken from the next row), so that pair r's inner product, the sum
  of those F slots, lands in column c of row r;
- the gradient layout, Q ciphertexts (Q = C rounded up to a power of two, the *lanes*): ciphertext k holds at
  (row r, column j) feature j of pair r' of ciphertext (j + k) mod Q, r' = r + [j + k >= F] (mod R).
One iteration:

1. S_c = Z_c * v summed over F consecutive slots (log2 F rotations): slot (r, c) holds ip_a + i ip_b of pair r;
2. G_c = m_c * conj(g(Re S_c) + i g(Im S_c)) with the column-c mask m_c and the step constant folded into the
   coefficients, from S and conj(S): g(x) - i g(y) = g0 (1 - i) + g1 conj(S) + (g3 / 4) S (S^2 + 3 conj(S)^2)
   (since x^3 - i y^3 = (S^3 + 3 conj(S)^2 S) / 4); depth 2, one conjugation;
3. T = sum_c G_c (column c: lane c) is replicated over the row once for all ciphertexts (log2(F / Q)
   rotations: column j holds lane j mod Q); its rotations by k = 1 .. Q - 1 (hoisted: one decomposition) bring
   lane (j + k) mod Q to column j, which is what the gradient layout's ciphertext k holds there; the real part
   of sum_k rot(T, k) * Z'_k is sum g(ip_a) z_a + g(ip_b) z_b over the pairs; sum the R rows (log2 R
   rotations), add the conjugate (the real part).

Rotations per iteration: C log2 F + log2(F / Q) + log2 R, and Q - 1 hoisted (HELR's layout, replicating each
ciphertext's sigmoid over its rows, needs C (2 log2 F) + log2 R).

Four levels per iteration. The momentum constants are folded so that v_{t+1} is four levels below v_t:
E = (1 - eta) (alpha / n) sum g z comes out of step 3, v_{t+1} = (1 - eta) v_t + eta w_t + E and
w_{t+1} = v_t + E / (1 - eta) (w lags one level behind v, which only ever meets a constant).

Bootstrapping. When the next iteration would not fit, the iteration outputs one ciphertext
c = (v_{t+1} + i w_{t+1}) / B (one level more, the constants folded again) and bootstraps it: one bootstrap
refreshes both vectors; then v = (B/2)(c + conj c) (an integer product, no level) and w = (-i B/2)(c - conj c).
B (``weight_bound``) keeps the bootstrapped values in [-1, 1]. The bootstrapping options live in
:data:`BOOTSTRAP_OPTIONS` (one place to switch when the library's default changes).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..context import Ciphertext, Context
from ..params import CkksParams

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
    """Monomial coefficients c[0..degree] of the least-squares odd fit of sigmoid on [-interval, interval]
    (c[0] = 1/2, even coefficients beyond 0 are zero)."""
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
    """max |poly - sigmoid| on [-interval, interval]."""
    x = np.linspace(-interval, interval, 20001)
    return float(np.abs(np.polynomial.polynomial.polyval(x, coeffs) - 1.0 / (1.0 + np.exp(-x))).max())


def _g_coeffs(coeffs) -> np.ndarray:
    """g(t) = poly(-t) ~ sigmoid(-t)."""
    c = np.array(coeffs, dtype=np.float64)
    c[1::2] *= -1
    return c


# ---- the schedule ------------------------------------------------------------------------------------------------
def nesterov_schedule(iterations: int, learning_rate: float, decay: float = 0.0) -> list[tuple[float, float]]:
    """(alpha_t, eta_t) for t < iterations: alpha_t = learning_rate / (1 + decay t); eta_t = (1 - lambda_{t+1}) /
    lambda_{t+2} (eta_0 = 0: the first step is plain gradient ascent; then eta_t < 0, the momentum)."""
    lam = [0.0]
    for _ in range(iterations + 2):
        lam.append((1.0 + math.sqrt(1.0 + 4.0 * lam[-1] ** 2)) / 2.0)
    return [(learning_rate / (1.0 + decay * t), (1.0 - lam[t + 1]) / lam[t + 2]) for t in range(iterations)]


# ---- the packing -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Packing:
    """Layout of one batch of n samples x `features` (padded to F) in ciphertexts of `slots` slots."""
    slots: int
    features: int
    samples: int

    @property
    def F(self) -> int:
        return 1 << max(0, (self.features - 1).bit_length())

    @property
    def R(self) -> int:
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
        """Slot vectors (ciphertexts) per batch: `ciphertexts` in the inner-product layout, then `lanes` in the
        gradient layout."""
        return self.ciphertexts + self.lanes

    def rotations(self) -> list[int]:
        F, S, Q = self.F, self.slots, self.lanes
        steps = [1 << k for k in range(F.bit_length() - 1)]                    # sums over the F columns
        steps += [-(Q << k) for k in range((F // Q).bit_length() - 1)]         # replication over the row
        steps += list(range(1, Q))                                             # the lanes (hoisted)
        steps += [F << k for k in range((S // F).bit_length() - 1)]             # sums over the R rows
        return sorted(set(steps))

    def _groups(self, Z: np.ndarray) -> np.ndarray:
        """(2 C, R, F): sample i of the batch is row i mod R of group i // R (zero padding)."""
        n, f = Z.shape
        if n != self.samples or f != self.features:
            raise ValueError(f"Packing: batch of shape {Z.shape}, expected ({self.samples}, {self.features})")
        R, F = self.R, self.F
        full = np.zeros((2 * self.ciphertexts * R, F))
        full[:n, :f] = Z
        return full.reshape(2 * self.ciphertexts, R, F)

    def pack_batch(self, Z: np.ndarray) -> list[np.ndarray]:
        """The slot vectors (complex) of the batch Z (samples x features): first the `ciphertexts` vectors of the
        inner-product layout, then the `lanes` vectors of the gradient layout (see the module docstring).

        Inner-product layout, ciphertext c: pair r = (row r of group 2c) + i (row r of group 2c + 1) occupies the
        F slots from r F + c (feature j at the slot = j mod F: columns < c come from the next slot row), so that
        its inner product lands in column c. Gradient layout, vector k: slot (r, j) holds feature j of the pair
        whose g the lane rotation by k brings there: pair r' of ciphertext c = (j + k) mod Q, r' = r + [j + k >= F]
        (mod R); zero for the padding lanes c >= C."""
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
        row = np.zeros(self.F)
        row[: self.features] = w
        return np.tile(row, self.R)

    def unpack_weights(self, slots: np.ndarray) -> np.ndarray:
        """The weights from a decrypted weight vector (the mean over the R copies)."""
        return np.asarray(slots).real.reshape(self.R, self.F).mean(axis=0)[: self.features]

    def column_mask(self, column: int = 0) -> np.ndarray:
        m = np.zeros(self.slots)
        m[column:: self.F] = 1.0
        return m


# ---- the float64 reference ---------------------------------------------------------------------------------------
def float64_iteration(v, w, Z, coeffs, alpha, eta):
    """One iteration in float64: the same recurrence as the encrypted one. Returns (v_{t+1}, w_{t+1})."""
    g = np.polynomial.polynomial.polyval(Z @ v, _g_coeffs(coeffs))
    w_new = v + (alpha / len(Z)) * (g @ Z)
    return (1.0 - eta) * w_new + eta * w, w_new


def train_float64(batches, iterations, schedule, coeffs, w0=None, monitor=None):
    """HELR in float64 on the same batches (batch t mod len(batches) at iteration t). Returns w_T."""
    f = batches[0].shape[1]
    w = np.zeros(f) if w0 is None else np.array(w0, dtype=np.float64)
    v = w.copy()
    for t in range(iterations):
        alpha, eta = schedule[t]
        v, w = float64_iteration(v, w, batches[t % len(batches)], coeffs, alpha, eta)
        if monitor is not None:
            monitor(t, w)
    return w


# ---- the server: ciphertexts and public constants only -----------------------------------------------------------
def _rotsum(ct: Ciphertext, steps) -> Ciphertext:
    for s in steps:
        ct = ct + ct.rotate(s)
    return ct


def encrypted_gradient(v: Ciphertext, Zc: list[Ciphertext], packing: Packing, coeffs, kappa: complex) -> Ciphertext:
    """kappa * sum_i g(z_i . v) z_i (real, in every row) -- steps 1 to 3 of the module docstring; Zc are the
    packing's `vectors` ciphertexts of one batch (inner-product layout, then gradient layout).
    Four levels below v (Zc at v's level or above)."""
    g0, g1, _, g3 = _g_coeffs(coeffs)[:4] if len(coeffs) == 4 else (None,) * 4
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
    """One Nesterov iteration on ciphertexts. Returns (v_{t+1}, w_{t+1}); with pack_bound = B, the single
    ciphertext (v_{t+1} + i w_{t+1}) / B instead, ready for bootstrapping (one level more)."""
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
    """(v, w) from a bootstrapped (v + i w) / B: v = (B/2)(c + conj c) (no level when B/2 is an integer),
    w = (-i B / 2)(c - conj c)."""
    cb = c.conjugate()
    half = bound / 2.0
    v = (c + cb) * (int(half) if float(half).is_integer() else half)
    w = (c - cb) * complex(0.0, -half)
    return v, w


@dataclass
class TrainingLog:
    iterations: int = 0
    bootstraps: int = 0
    seconds: float = 0.0
    bootstrap_seconds: float = 0.0
    levels: list = field(default_factory=list)
    iterations_per_bootstrap: int = 0


def train_encrypted(v: Ciphertext, w: Ciphertext, batches: list[list[Ciphertext]], sizes: list[int], packing: Packing,
                    coeffs, schedule, weight_bound: float, progress: Optional[Callable] = None,
                    monitor: Optional[Callable] = None):
    """The server's loop: iterations on the encrypted batches, bootstrapping (v + i w) / B when the next
    iteration would not fit in the levels left. Returns (w_T, TrainingLog). `progress(t, log)` is called after
    each iteration; `monitor(t, w_ct)` (a diagnostic for the data owner's plots) too."""
    log = TrainingLog(iterations_per_bootstrap=1 + (v.level - LEVELS_PER_ITERATION - 1) // LEVELS_PER_ITERATION)
    T = len(schedule)
    t0 = time.perf_counter()
    for t in range(T):
        alpha, eta = schedule[t]
        b = t % len(batches)
        last = t == T - 1
        if not last and v.level - LEVELS_PER_ITERATION < LEVELS_PER_ITERATION + 1:
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


# ---- the data owner ----------------------------------------------------------------------------------------------
class Scaler:
    """Centre each feature on its training mean, divide by its largest |value| (so |x| <= 1 on the training
    set), drop constant features, append the bias column 1."""

    def fit(self, X):
        X = np.asarray(X, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        dev = np.abs(X - self.mean_).max(axis=0)
        self.keep_ = dev > 0
        self.scale_ = np.where(self.keep_, dev, 1.0)
        return self

    def transform(self, X):
        X = (np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_
        X = np.clip(X[:, self.keep_], -1.0, 1.0)
        return np.hstack([X, np.ones((len(X), 1))])


def training_params(log_n: int = 16, levels: int = 9, insecure: bool = False,
                    bootstrap_options: Optional[dict] = None) -> CkksParams:
    """The training's parameters: CkksParams.bootstrappable(log_n, levels) with :data:`BOOTSTRAP_OPTIONS` (or the
    given options); the data owner's context and the symbolic graph (ember.apps.graphs.helr) both use it."""
    opts = dict(BOOTSTRAP_OPTIONS if bootstrap_options is None else bootstrap_options)
    return CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure, **opts)


class DataOwner:
    """Holds the context and the secret key; encrypts batches and weights, decrypts the model."""

    def __init__(self, packing: Packing, log_n: int = 16, levels: int = 9, threads: int = 2, insecure: bool = False,
                 bootstrap_options: Optional[dict] = None):
        self.params = training_params(log_n, levels, insecure, bootstrap_options)
        self.ctx = Context(self.params, threads=threads)
        if self.ctx.slots != packing.slots:
            raise ValueError(f"DataOwner: packing for {packing.slots} slots, context has {self.ctx.slots}")
        self.packing = packing
        self.keys = self.ctx.keygen(rotations=packing.rotations(), bootstrapping=True)

    def encrypt_batch(self, Z) -> list[Ciphertext]:
        return [self.ctx.encrypt(vec, self.keys.public) for vec in self.packing.pack_batch(Z)]

    def encrypt_weights(self, w) -> Ciphertext:
        return self.ctx.encrypt(self.packing.pack_weights(w), self.keys.public)

    def decrypt_weights(self, ct: Ciphertext) -> np.ndarray:
        return self.packing.unpack_weights(self.ctx.decrypt(ct, self.keys.secret))


def _sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


class _HELRBase:
    """Shared preprocessing, batching and prediction (scikit-learn estimator conventions)."""

    def __init__(self, iterations: int = 20, learning_rate: float = 2.0, decay: float = 0.0,
                 batch_size: Optional[int] = None, sigmoid_degree: int = 3, sigmoid_interval: float = 8.0,
                 random_state: int = 0):
        self.iterations, self.learning_rate, self.decay = iterations, learning_rate, decay
        self.batch_size, self.sigmoid_degree, self.sigmoid_interval = batch_size, sigmoid_degree, sigmoid_interval
        self.random_state = random_state

    def _prepare(self, X, y, capacity: Optional[int] = None):
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(f"{type(self).__name__}: binary labels expected, got {len(self.classes_)} classes")
        self.scaler_ = Scaler().fit(X)
        Xb = self.scaler_.transform(X)
        Z = np.where(y == self.classes_[1], 1.0, -1.0)[:, None] * Xb
        n = len(Z)
        bs = self.batch_size or min(n, capacity or n)
        order = np.random.default_rng(self.random_state).permutation(n)
        nb = max(1, n // bs)
        bs = min(bs, n)
        batches = [Z[order[i * bs:(i + 1) * bs]] for i in range(nb)]
        self.coeffs_ = sigmoid_poly(self.sigmoid_degree, self.sigmoid_interval)
        self.schedule_ = nesterov_schedule(self.iterations, self.learning_rate, self.decay)
        return batches

    def decision_function(self, X):
        return self.scaler_.transform(X) @ self.weights_

    def predict_proba(self, X):
        p = _sigmoid(self.decision_function(X))
        return np.stack([1.0 - p, p], axis=1)

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y):
        return float((self.predict(X) == np.asarray(y)).mean())

    @property
    def coef_(self):
        return self.weights_[:-1][None, :]

    @property
    def intercept_(self):
        return self.weights_[-1:]


class Float64LogisticRegression(_HELRBase):
    """The same algorithm in float64 (same sigmoid polynomial, same batches, same schedule)."""

    def fit(self, X, y, capacity: Optional[int] = None, monitor=None):
        batches = self._prepare(X, y, capacity)
        self.batches_ = batches
        self.weights_ = train_float64(batches, self.iterations, self.schedule_, self.coeffs_, monitor=monitor)
        return self


class EncryptedLogisticRegression(_HELRBase):
    """Logistic regression trained on encrypted data (HELR), scikit-learn style.

    Parameters
    ----------
    iterations, learning_rate, decay : the schedule alpha_t = learning_rate / (1 + decay t), Nesterov momentum.
    batch_size : samples per mini-batch (default: as many as fit in one ciphertext, 2 N / (2 F), capped at n).
    sigmoid_degree, sigmoid_interval : the least-squares sigmoid (degree 3 in the encrypted path).
    log_n : ring dimension (16 for 128-bit bootstrapping; smaller rings need insecure=True).
    levels : computation levels above bootstrapping (4 per iteration, 5 for the one that bootstraps).
    weight_bound : B, |v|, |w| <= B is assumed when (v + i w) / B is bootstrapped.
    threads : threads of the context.

    Attributes (after fit): weights_ (scaled features + bias), coef_, intercept_, log_ (a TrainingLog),
    float64_weights_ when reference=True, history_ (per-iteration weights when fit(..., history=True)).
    """

    def __init__(self, iterations: int = 20, learning_rate: float = 2.0, decay: float = 0.0,
                 batch_size: Optional[int] = None, sigmoid_degree: int = 3, sigmoid_interval: float = 8.0,
                 log_n: int = 16, levels: int = 9, weight_bound: float = 8.0, threads: int = 2,
                 insecure: bool = False, random_state: int = 0, bootstrap_options: Optional[dict] = None):
        super().__init__(iterations, learning_rate, decay, batch_size, sigmoid_degree, sigmoid_interval, random_state)
        self.log_n, self.levels, self.weight_bound, self.threads = log_n, levels, weight_bound, threads
        self.insecure, self.bootstrap_options = insecure, bootstrap_options

    def fit(self, X, y, progress: Optional[Callable] = None, history: bool = False, stage: Optional[Callable] = None):
        stage = stage or (lambda msg: None)
        X = np.asarray(X, dtype=np.float64)
        features = Scaler().fit(X).keep_.sum() + 1
        slots = 1 << (self.log_n - 1)
        F = 1 << max(0, (int(features) - 1).bit_length())
        batches = self._prepare(X, y, capacity=2 * (slots // F))
        self.packing_ = Packing(slots, batches[0].shape[1], len(batches[0]))
        stage("keys")
        t = time.perf_counter()
        owner = DataOwner(self.packing_, self.log_n, self.levels, self.threads, self.insecure, self.bootstrap_options)
        self.keygen_seconds_ = time.perf_counter() - t
        self.params_ = owner.params
        stage("encrypting")
        enc = [owner.encrypt_batch(Z) for Z in batches]
        zero = np.zeros(self.packing_.features)
        v0, w0 = owner.encrypt_weights(zero), owner.encrypt_weights(zero)
        self.history_ = []
        monitor = (lambda t, w_ct: self.history_.append(owner.decrypt_weights(w_ct))) if history else None
        stage("training")
        w_ct, self.log_ = train_encrypted(v0, w0, enc, [len(Z) for Z in batches], self.packing_, self.coeffs_,
                                          self.schedule_, self.weight_bound, progress=progress, monitor=monitor)
        self.weights_ = owner.decrypt_weights(w_ct)
        self.batches_ = batches
        self.owner_ = owner
        return self
