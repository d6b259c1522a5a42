"""Encrypted logistic-regression training after HELR (Han, Hong, Cheon, Park, AAAI'19) and Kim et al. 2018.

HELR (and iDASH's Kim et al.): mini-batch gradient ascent on the log-likelihood with Nesterov's acceleration, a
polynomial sigmoid, samples x features packed into slots, bootstrapping of the weights when levels run out.

Roles. The *data owner* (:class:`DataOwner`) holds the secret key: it scales the data, encrypts the batches and
the initial weights, and decrypts the model. The *server* (:func:`train_encrypted`, :func:`encrypted_iteration`)
sees ciphertexts and public constants only, and uses only the public ciphertext operations (+, -, *, rotate,
conjugate, bootstrap). :class:`EncryptedLogisticRegression` runs both ends, a scikit-learn estimator.

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

Where the code lives. The server's program -- :class:`Packing`, the sigmoid fit, the schedule,
:func:`encrypted_gradient`, :func:`encrypted_iteration`, :func:`train_encrypted`, :func:`training_params` -- is
:mod:`ember.graph.programs.logreg` (the program ``graph_of("helr")`` captures, below the scheduler and this
package), re-exported here; this module holds the data owner, the float64 reference and the estimators.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from ..context import Ciphertext, Context
from .datasets import estimator_bases, sklearn
from ..graph.programs.logreg import (BOOTSTRAP_OPTIONS, LEVELS_PER_ITERATION, Packing, TrainingLog,  # noqa: F401
                                   bootstraps_needed, encrypted_gradient, encrypted_iteration, g_coeffs,
                                   nesterov_schedule, sigmoid_poly, sigmoid_poly_error, train_encrypted,
                                   training_params, unpack_bootstrapped)


# ---- the float64 reference ---------------------------------------------------------------------------------------
def float64_iteration(v, w, Z, coeffs, alpha, eta):
    """One iteration in float64: the same recurrence as the encrypted one. Returns (v_{t+1}, w_{t+1})."""
    g = np.polynomial.polynomial.polyval(Z @ v, g_coeffs(coeffs))
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


# ---- the data owner ----------------------------------------------------------------------------------------------
class Scaler:
    """The data owner's scaling of the features.

    Centre each feature on its training mean, divide by its largest |value| (so |x| <= 1 on the training set), drop
    constant features, append the bias column 1.
    """

    def fit(self, X):
        """Learn the means and scales.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples.

        Returns
        -------
        Scaler
            self.
        """
        X = np.asarray(X, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        dev = np.abs(X - self.mean_).max(axis=0)
        self.keep_ = dev > 0
        self.scale_ = np.where(self.keep_, dev, 1.0)
        return self

    def transform(self, X):
        """Scale samples as fitted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        numpy.ndarray of shape (n_samples, kept features + 1)
            The scaled kept features, clipped to [-1, 1], and the bias column 1.
        """
        X = (np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_
        X = np.clip(X[:, self.keep_], -1.0, 1.0)
        return np.hstack([X, np.ones((len(X), 1))])


class DataOwner:
    """Holds the context and the secret key; encrypts batches and weights, decrypts the model."""

    def __init__(self, packing: Packing, log_n: int = 16, levels: int = 9, threads: int = 2, insecure: bool = False,
                 bootstrap_options: Optional[dict] = None, iterations: Optional[int] = None):
        self.params = training_params(log_n, levels, insecure, bootstrap_options)
        self.ctx = Context(self.params, threads=threads)
        if self.ctx.slots != packing.slots:
            raise ValueError(f"DataOwner: packing for {packing.slots} slots, context has {self.ctx.slots}")
        self.packing = packing
        # bootstrapping keys only when the training will bootstrap (unknown iterations: always)
        self.bootstrapping = iterations is None or bootstraps_needed(self.ctx.user_level, iterations)
        self.keys = self.ctx.keygen(rotations=packing.rotations(), conjugation=True, bootstrapping=self.bootstrapping)

    def encrypt_batch(self, Z) -> list[Ciphertext]:
        """Encrypt one batch in both layouts (:meth:`Packing.pack_batch`).

        Parameters
        ----------
        Z : numpy.ndarray of shape (samples, features)
            The batch's rows z_i = y_i x_i.

        Returns
        -------
        list of Ciphertext
            The inner-product ciphertexts, then the gradient lanes.
        """
        return [self.ctx.encrypt(vec, self.keys.public) for vec in self.packing.pack_batch(Z)]

    def encrypt_weights(self, w) -> Ciphertext:
        """Encrypt weights, repeated in every row.

        Parameters
        ----------
        w : array-like of shape (features,)
            Weights.

        Returns
        -------
        Ciphertext
        """
        return self.ctx.encrypt(self.packing.pack_weights(w), self.keys.public)

    def decrypt_weights(self, ct: Ciphertext) -> np.ndarray:
        """Decrypt weights (the first row's).

        Parameters
        ----------
        ct : Ciphertext
            Encrypted weights.

        Returns
        -------
        numpy.ndarray of shape (features,)
        """
        return self.packing.unpack_weights(self.ctx.decrypt(ct, self.keys.secret))


def _sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


_ClassifierMixin, _BaseEstimator = estimator_bases()


def _validation():
    """scikit-learn's input validation (ModuleNotFoundError saying how to install it when it is missing)."""
    return sklearn("utils.validation"), sklearn("utils.multiclass")


class _HELRBase(_ClassifierMixin, _BaseEstimator):
    """Shared preprocessing, batching and prediction of the two HELR estimators (scikit-learn estimators)."""

    def __init__(self, iterations: int = 20, learning_rate: float = 2.0, decay: float = 0.0,
                 batch_size: Optional[int] = None, sigmoid_degree: int = 3, sigmoid_interval: float = 8.0,
                 random_state: int = 0):
        self.iterations, self.learning_rate, self.decay = iterations, learning_rate, decay
        self.batch_size, self.sigmoid_degree, self.sigmoid_interval = batch_size, sigmoid_degree, sigmoid_interval
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False      # binary labels only
        return tags

    def _check_X(self, X, reset: bool):
        validation, _ = _validation()
        if not reset:
            validation.check_is_fitted(self, "weights_")
        return validation.validate_data(self, X, reset=reset, dtype=np.float64)

    def _prepare(self, X, y, capacity: Optional[int] = None):
        validation, multiclass = _validation()
        X, y = validation.validate_data(self, X, y, dtype=np.float64)
        multiclass.check_classification_targets(y)
        kind = multiclass.type_of_target(y, input_name="y")
        if kind != "binary":
            raise ValueError(f"{type(self).__name__}: Only binary classification is supported. The type of the "
                             f"target is {kind}.")
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(f"{type(self).__name__}: binary labels expected, got {len(self.classes_)} class(es)")
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
        return X, batches

    def decision_function(self, X):
        """Compute the linear score of each sample (positive: the second class).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, unscaled (the scaler fitted on the training set is applied).

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
            ``scaled(X) @ weights_``.
        """
        X = self._check_X(X, reset=False)
        return self.scaler_.transform(X) @ self.weights_

    def predict_proba(self, X):
        """Class probabilities, the logistic function of :meth:`decision_function`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        numpy.ndarray of shape (n_samples, 2)
            Probabilities of ``classes_[0]`` and ``classes_[1]``.
        """
        p = _sigmoid(self.decision_function(X))
        return np.stack([1.0 - p, p], axis=1)

    def predict(self, X):
        """Predicted labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
            ``classes_[1]`` where the decision function is positive, ``classes_[0]`` elsewhere.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    @property
    def coef_(self):
        """Weights of the scaled features, shape (1, features kept by the scaler)."""
        return self.weights_[:-1][None, :]

    @property
    def intercept_(self):
        """The bias weight, shape (1,)."""
        return self.weights_[-1:]


class Float64LogisticRegression(_HELRBase):
    """The same algorithm in float64 (same sigmoid polynomial, same batches, same schedule), a scikit-learn estimator.

    Parameters
    ----------
    iterations, learning_rate, decay, batch_size, sigmoid_degree, sigmoid_interval, random_state
        As :class:`EncryptedLogisticRegression`'s.

    Attributes
    ----------
    weights_, coef_, intercept_, classes_, n_features_in_, scaler_, coeffs_, schedule_, batches_
        As :class:`EncryptedLogisticRegression`'s.
    """

    def fit(self, X, y, *, capacity: Optional[int] = None, monitor=None):
        """Train in float64.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Binary labels.
        capacity : int, optional
            Samples per batch when ``batch_size`` is None (the encrypted estimator's ``2 * packing_.R``, to run
            on the same batches); default: all samples.
        monitor : callable, optional
            ``monitor(t, w)`` after iteration t.

        Returns
        -------
        Float64LogisticRegression
            self.
        """
        _, batches = self._prepare(X, y, capacity)
        self.batches_ = batches
        self.weights_ = train_float64(batches, self.iterations, self.schedule_, self.coeffs_, monitor=monitor)
        return self


class EncryptedLogisticRegression(_HELRBase):
    """Logistic regression trained on encrypted data (HELR), a scikit-learn estimator.

    ``fit`` runs both ends: the data owner encrypts the scaled batches, the server trains on ciphertexts, the
    data owner decrypts the weights; prediction is in the clear with the decrypted weights.

    Parameters
    ----------
    iterations : int, default=20
        Gradient steps (Nesterov momentum).
    learning_rate, decay : float, default=2.0 and 0.0
        The step alpha_t = learning_rate / (1 + decay t).
    batch_size : int, optional
        Samples per mini-batch (default: as many as fit in one ciphertext, 2 N / (2 F), capped at n).
    sigmoid_degree : int, default=3
        Degree of the least-squares sigmoid. The encrypted path evaluates degree 3 only: with any other degree,
        ``fit`` raises ValueError at the first iteration.
    sigmoid_interval : float, default=8.0
        The sigmoid is fitted on [-sigmoid_interval, sigmoid_interval].
    log_n : int, default=16
        log2 of the ring degree (16 for 128-bit bootstrapping; smaller rings need insecure=True).
    levels : int, default=9
        Computation levels above bootstrapping (4 per iteration, 5 for the one that bootstraps).
    weight_bound : float, default=8.0
        B: ``|v|, |w| <= B`` is assumed when (v + i w) / B is bootstrapped.
    threads : int, default=2
        Threads of the context.
    insecure : bool, default=False
        Allow parameters above the 128-bit security bound (small rings, for tests).
    random_state : int, default=0
        Seed of the batches' sample order.
    bootstrap_options : dict, optional
        Bootstrapping options (default :data:`BOOTSTRAP_OPTIONS`).

    Attributes
    ----------
    weights_ : numpy.ndarray
        Decrypted weights of the scaled features and the bias (last).
    coef_, intercept_ : numpy.ndarray
        ``weights_`` split as scikit-learn's linear models do.
    classes_ : numpy.ndarray
        The two labels.
    n_features_in_ : int
        Features seen by fit.
    scaler_ : Scaler
        The data owner's scaling.
    coeffs_ : numpy.ndarray
        The sigmoid polynomial's monomial coefficients (:func:`sigmoid_poly`).
    schedule_ : list of tuple of float
        The (alpha_t, eta_t) of each iteration (:func:`nesterov_schedule`).
    packing_ : Packing
        The slot layout.
    params_ : ember.CkksParams
        The training's parameters.
    log_ : TrainingLog
        Iterations, bootstraps, levels and timings of the server's loop.
    keygen_seconds_ : float
        Time of the data owner's key generation.
    batches_ : list of numpy.ndarray
        The plaintext batches (z = y x) that were encrypted.
    history_ : list of numpy.ndarray
        Decrypted weights after each iteration when ``fit(..., history=True)``; empty otherwise.
    """

    def __init__(self, iterations: int = 20, learning_rate: float = 2.0, decay: float = 0.0,
                 batch_size: Optional[int] = None, sigmoid_degree: int = 3, sigmoid_interval: float = 8.0,
                 log_n: int = 16, levels: int = 9, weight_bound: float = 8.0, threads: int = 2,
                 insecure: bool = False, random_state: int = 0, bootstrap_options: Optional[dict] = None):
        super().__init__(iterations, learning_rate, decay, batch_size, sigmoid_degree, sigmoid_interval, random_state)
        self.log_n, self.levels, self.weight_bound, self.threads = log_n, levels, weight_bound, threads
        self.insecure, self.bootstrap_options = insecure, bootstrap_options

    def __sklearn_tags__(self):
        """Scikit-learn's tags: binary only, non-deterministic (fresh encryption noise in every fit)."""
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True                 # fresh encryption noise in every fit
        return tags

    def fit(self, X, y, *, progress: Optional[Callable] = None, history: bool = False,
            stage: Optional[Callable] = None):
        """Train on encrypted batches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Binary labels.
        progress : callable, optional
            ``progress(t, log)`` after each iteration.
        history : bool
            Decrypt the weights after every iteration into ``history_``.
        stage : callable, optional
            ``stage(message)`` at each phase (keys, encrypting, training).

        Returns
        -------
        EncryptedLogisticRegression
            self.

        Raises
        ------
        ValueError
            Labels that are not binary, invalid samples, or parameters out of range (levels, ring size).
        """
        stage = stage or (lambda msg: None)
        validation, _ = _validation()
        Xv = validation.check_array(X, dtype=np.float64)
        features = Scaler().fit(Xv).keep_.sum() + 1
        slots = 1 << (self.log_n - 1)
        F = 1 << max(0, (int(features) - 1).bit_length())
        _, batches = self._prepare(X, y, capacity=2 * (slots // F))
        self.packing_ = Packing(slots, batches[0].shape[1], len(batches[0]))
        stage("keys")
        t = time.perf_counter()
        owner = DataOwner(self.packing_, self.log_n, self.levels, self.threads, self.insecure, self.bootstrap_options,
                          iterations=len(self.schedule_))
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
        return self
