"""Encrypted CNN inference in the LoLa style (Brutzkus, Elisha, Gilad-Bachrach, ICML'19) on the 8 x 8 digits.

The network: conv 3x3 (K = 7 maps, stride 1, valid: 6 x 6 each) -> square -> dense (7 * 36 -> H = 32) -> square
-> dense (32 -> 10). It is trained in float64 with numpy (``train``); ``plain_forward`` is the same
polynomial network in float64, the reference the encrypted predictions are compared with.

Slot layout (:class:`Layout`, S = N/2 slots, B images per ciphertext, blocks of 512 slots):

* each image owns S / B slots = 16 / B *replicas* of a 512-slot block (LoLa's stacked vectors: one dense-layer
  pass multiplies every replica by a different row);
* inside a block, map k's 64-slot region starts at 10 + 64 k; the client places the 8 x 8 image (row-major, so
  pixel (y, x) at 8 y + x) in every map region of every replica. The convolution representation is then
  X_j = rotate(X, 8 dy + dx) for the 9 kernel offsets (one hoisted ``rotate_many``): slot 10 + 64 k + 8 y + x of
  X_j holds pixel (y + dy, x + dx), so conv_k = sum_j w[k, j] X_j + b_k with plaintext vectors, no further
  rotation. Slots with x >= 6 or y >= 6 (and the first 10 of a block) are junk: their dense weights are zero.
* dense 1, pass q: the product U_q * a (row q R + r of the weights in replica r) summed over each block by
  rotations (1, 2, ..., 256; or baby-step giant-step with ``baby`` hoisted rotations of the input shared by all
  passes, giant steps baby * 2^i), so slot j < 10 of replica r holds h[q R + r] exactly: the first 10 slots of
  every block carry zero weights, so the window sums there see one block only -- the result comes out
  *interleaved*, replicated over the 10 class positions for free;
* square, dense 2: sum_q Q_q * h_q^2 with Q_q[replica r, c] = W2[c, q R + r], then a sum over the replicas
  (rotations by 512 * 2^i): logit c of image b lands in slot b S / B + c.

Depth 5 (conv, square, dense, square, dense). ``encrypted_forward`` is a plain function of (model,
ciphertext) that uses only public operations (rotate_many, rotate, *, +, multiply(rescale=False), rescale), so
the same program runs under a graph capture. The server's side -- :class:`Layout`, :class:`EncryptedModel`,
``encrypted_forward`` and the network's constants -- lives in :mod:`ember.graph.programs.lola` (the program
``graph_of("lola-mnist")`` captures) and is re-exported here; this module trains, keeps the float64 reference
and runs the demo.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ..context import Context
from ..graph.programs.lola import (BLOCK, CLASSES, HIDDEN, K_MAPS, KSIZE, LEAD, MAP_PITCH, OFFSETS, OUT,  # noqa: F401
                                   PARAMS, EncryptedModel, Layout, encrypted_forward)
from ..params import CkksParams
from .datasets import estimator_bases, sklearn
from .progress import Progress


# ---- float training and the float64 reference --------------------------------------------------------------------
def _patches(X):
    """(n, 36, 9): the 3x3 patch of every output position of the 8 x 8 images (n, 64)."""
    img = X.reshape(-1, 8, 8)
    cols = [img[:, dy:dy + OUT, dx:dx + OUT].reshape(len(X), OUT * OUT) for dy in range(KSIZE) for dx in range(KSIZE)]
    return np.stack(cols, axis=2)


def plain_forward(model: dict, X, return_all: bool = False):
    """Compute the logits of the polynomial network in float64 (the encrypted path's reference).

    Parameters
    ----------
    model : dict
        The weights (``train``'s).
    X : array-like of shape (n, 64)
        Pixels already scaled (:func:`scale_input`).
    return_all : bool
        Also return the intermediate activations.

    Returns
    -------
    numpy.ndarray of shape (n, 10), or (logits, dict of activations)
    """
    P = _patches(np.asarray(X, dtype=np.float64))
    c = P @ model["wc"].T + model["bc"]                 # (n, 36, K)
    a1 = c ** 2
    f = a1.transpose(0, 2, 1).reshape(len(X), -1)       # (n, K * 36), map-major
    h = f @ model["w1"].T + model["b1"]
    a2 = h ** 2
    out = a2 @ model["w2"].T + model["b2"]
    return (out, dict(P=P, c=c, a1=a1, f=f, h=h, a2=a2)) if return_all else out


def scale_input(X):
    """Scale the digits' pixels (0..16) to [0, 1].

    Parameters
    ----------
    X : array-like
        Pixels.

    Returns
    -------
    numpy.ndarray
        ``X / 16`` in float64.
    """
    return np.asarray(X, dtype=np.float64) / 16.0


def train(X, y, epochs: int = 60, hidden: int = HIDDEN, maps: int = K_MAPS, lr: float = 3e-3, batch: int = 32,
          weight_decay: float = 1e-4, seed: int = 0, progress=None) -> dict:
    """Train the network in float64: Adam on the softmax cross-entropy.

    Parameters
    ----------
    X : numpy.ndarray of shape (n, 64)
        Images, already scaled (:func:`scale_input`).
    y : numpy.ndarray of shape (n,)
        Class indices 0..9.
    epochs, hidden, maps, lr, batch, weight_decay, seed
        Passes, hidden units, convolution maps, Adam's step, samples per step, L2 penalty, seed.
    progress : callable, optional
        ``progress(epoch)`` after each epoch.

    Returns
    -------
    dict
        The weights wc, bc, w1, b1, w2, b2.
    """
    rng = np.random.default_rng(seed)
    m = dict(wc=rng.normal(0, 0.5, (maps, 9)), bc=np.zeros(maps),
             w1=rng.normal(0, 1 / np.sqrt(maps * 36), (hidden, maps * 36)), b1=np.zeros(hidden),
             w2=rng.normal(0, 1 / np.sqrt(hidden), (CLASSES, hidden)), b2=np.zeros(CLASSES))
    mom = {k: np.zeros_like(v) for k, v in m.items()}
    vel = {k: np.zeros_like(v) for k, v in m.items()}
    step = 0
    Y = np.eye(CLASSES)[y]
    for ep in range(epochs):
        order = rng.permutation(len(X))
        for i in range(0, len(X), batch):
            idx = order[i:i + batch]
            out, t = plain_forward(m, X[idx], return_all=True)
            p = np.exp(out - out.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            d_out = (p - Y[idx]) / len(idx)
            g = dict(w2=d_out.T @ t["a2"], b2=d_out.sum(0))
            d_h = (d_out @ m["w2"]) * 2 * t["h"]
            g["w1"], g["b1"] = d_h.T @ t["f"], d_h.sum(0)
            d_f = d_h @ m["w1"]
            d_c = d_f.reshape(len(idx), maps, OUT * OUT).transpose(0, 2, 1) * 2 * t["c"]
            g["wc"] = np.einsum("npk,npj->kj", d_c, t["P"])
            g["bc"] = d_c.sum((0, 1))
            step += 1
            for k in m:
                gk = g[k] + weight_decay * m[k]
                mom[k] = 0.9 * mom[k] + 0.1 * gk
                vel[k] = 0.999 * vel[k] + 0.001 * gk ** 2
                m[k] -= lr * (mom[k] / (1 - 0.9 ** step)) / (np.sqrt(vel[k] / (1 - 0.999 ** step)) + 1e-8)
        if progress is not None:
            progress(ep)
    return m


# ---- the estimator ---------------------------------------------------------------------------------------------
_ClassifierMixin, _BaseEstimator = estimator_bases()


class EncryptedCNNClassifier(_ClassifierMixin, _BaseEstimator):
    """The LoLa-style CNN as a scikit-learn classifier.

    ``fit`` trains in float64 on the plaintext (``train``), ``predict`` and ``predict_proba`` run the network on
    encrypted images (``encrypted_forward``) and decrypt the logits -- the client's and the server's sides in
    one call, with fresh keys per call.

    The samples are 8 x 8 images, row-major (64 features); fewer features are zero-padded to 64 (pixel j of the
    image is feature j), more are refused. Up to 10 classes.

    Parameters
    ----------
    epochs : int, default=60
        Passes of Adam over the training set.
    hidden : int, default=32
        Units of the hidden dense layer (a multiple of the layout's replicas per image).
    maps : int, default=7
        Convolution maps (at most 7 fit a 512-slot block).
    learning_rate : float, default=3e-3
        Adam's step.
    batch_size : int, default=32
        Samples per Adam step.
    weight_decay : float, default=1e-4
        L2 penalty of the weights.
    input_scale : float, default=16.0
        The features are divided by it (16: the digits' pixels, 0..16).
    random_state : int, default=0
        Seed of the initial weights and the sample order.
    log_n : int, default=14
        log2 of the ring degree of the encrypted inference (14: 128-bit; smaller rings need insecure=True).
    dnum : int, default=3
        Digits of the key switching.
    images_per_ciphertext : int, default=1
        Images packed in one ciphertext (a power of two dividing N / 1024).
    baby_steps : int, optional
        Baby steps of the dense layer's rotations (default: 16 when the layer takes more than 4 passes, else 1).
    threads : int, default=2
        Threads of the context.
    insecure : bool, default=False
        Allow parameters above the 128-bit security bound (small rings, for tests).

    Attributes
    ----------
    model_ : dict
        The float64 weights (wc, bc, w1, b1, w2, b2), ``plain_forward``'s model.
    classes_ : numpy.ndarray
        The labels; label ``classes_[c]`` is the network's output c.
    n_features_in_ : int
        Features seen by fit.

    Examples
    --------
    >>> from ember.apps import EncryptedCNNClassifier, datasets
    >>> X, y = datasets.digits()
    >>> clf = EncryptedCNNClassifier(epochs=5, log_n=12, insecure=True).fit(X[:300], y[:300])  # doctest: +SKIP
    >>> clf.predict(X[300:302])                                                                  # doctest: +SKIP
    """

    def __init__(self, epochs: int = 60, hidden: int = HIDDEN, maps: int = K_MAPS, learning_rate: float = 3e-3,
                 batch_size: int = 32, weight_decay: float = 1e-4, input_scale: float = 16.0, random_state: int = 0,
                 log_n: int = PARAMS["log_n"], dnum: int = PARAMS["dnum"], images_per_ciphertext: int = 1,
                 baby_steps: Optional[int] = None, threads: int = 2, insecure: bool = False):
        self.epochs, self.hidden, self.maps, self.learning_rate = epochs, hidden, maps, learning_rate
        self.batch_size, self.weight_decay, self.input_scale = batch_size, weight_decay, input_scale
        self.random_state, self.log_n, self.dnum = random_state, log_n, dnum
        self.images_per_ciphertext, self.baby_steps, self.threads, self.insecure = (
            images_per_ciphertext, baby_steps, threads, insecure)

    def __sklearn_tags__(self):
        """Scikit-learn's tags: non-deterministic (fresh keys and encryption noise in every prediction)."""
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True          # fresh keys and encryption noise in every prediction
        return tags

    def _images(self, X):
        X = np.asarray(X, dtype=np.float64) / self.input_scale
        return np.pad(X, ((0, 0), (0, 64 - X.shape[1])))

    def fit(self, X, y):
        """Train the network in float64 on the plaintext.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_features <= 64
            Images, row-major (zero-padded to 8 x 8).
        y : array-like of shape (n_samples,)
            Labels, at most 10 distinct.

        Returns
        -------
        EncryptedCNNClassifier
            self.

        Raises
        ------
        ValueError
            More than 64 features, fewer than 2 or more than 10 classes, or invalid samples.
        """
        validation, multiclass = sklearn("utils.validation"), sklearn("utils.multiclass")
        X, y = validation.validate_data(self, X, y, dtype=np.float64)
        multiclass.check_classification_targets(y)
        if X.shape[1] > 64:
            raise ValueError(f"EncryptedCNNClassifier: {X.shape[1]} features, at most 64 (an 8 x 8 image)")
        self.classes_ = np.unique(y)
        if not 2 <= len(self.classes_) <= CLASSES:
            raise ValueError(f"EncryptedCNNClassifier: 2 to {CLASSES} classes expected, got {len(self.classes_)} "
                             f"class(es)")
        self.model_ = train(self._images(X), np.searchsorted(self.classes_, y), epochs=self.epochs,
                            hidden=self.hidden, maps=self.maps, lr=self.learning_rate, batch=self.batch_size,
                            weight_decay=self.weight_decay, seed=self.random_state)
        return self

    def _check_X(self, X):
        validation = sklearn("utils.validation")
        validation.check_is_fitted(self, "model_")
        return validation.validate_data(self, X, reset=False, dtype=np.float64)

    def encrypted_logits(self, X) -> np.ndarray:
        """Compute the network's logits on encrypted images and decrypt them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images, as in fit.

        Returns
        -------
        numpy.ndarray of shape (n_samples, n_classes)
            Logit c is the score of ``classes_[c]``; within the CKKS error of
            ``plain_forward(model_, images)``.
        """
        X = self._images(self._check_X(X))
        ctx = make_context(self.threads, log_n=self.log_n, dnum=self.dnum, insecure=self.insecure)
        layout = Layout(ctx.slots, batch=self.images_per_ciphertext, hidden=self.hidden, maps=self.maps)
        baby = self.baby_steps if self.baby_steps is not None else (16 if layout.passes > 4 else 1)
        keys = ctx.keygen(rotations=layout.rotations(baby))
        em = EncryptedModel(ctx, self.model_, layout, baby=baby)
        B = layout.batch
        out = [layout.decode_logits(ctx.decrypt(encrypted_forward(
            em, ctx.encrypt(layout.encode_images(X[a:a + B]), keys.public)), keys.secret), len(X[a:a + B]))
            for a in range(0, len(X), B)]
        logits = np.concatenate(out) if out else np.zeros((0, CLASSES))
        return logits[:, :len(self.classes_)]

    def predict_proba(self, X):
        """Class probabilities, the softmax of :meth:`encrypted_logits`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images.

        Returns
        -------
        numpy.ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        z = self.encrypted_logits(X)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Labels predicted on encrypted images.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Images.

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
            ``classes_`` at the largest encrypted logit.
        """
        logits = self.encrypted_logits(X)
        return self.classes_[logits.argmax(axis=1)]


# ---- the demo ----------------------------------------------------------------------------------------------------
def make_context(threads: int = 2, **overrides) -> Context:
    """Make the inference context: :data:`PARAMS` with overrides.

    Parameters
    ----------
    threads : int
        Threads of the context.
    **overrides
        CkksParams arguments replacing :data:`PARAMS`' (e.g. ``log_n=12, insecure=True``).

    Returns
    -------
    Context
    """
    return Context(CkksParams(**{**PARAMS, **overrides}), threads=threads)


def run_demo(images: Optional[int] = None, batch: int = 1, threads: int = 2, seed: int = 0, png: Optional[str] = None,
             progress: bool = False, epochs: Optional[int] = None, params: Optional[dict] = None) -> dict:
    """Run the demo: train, encrypt the test digits, infer, compare with the float64 network.

    Parameters
    ----------
    images : int, optional
        Test images to classify (default: the whole test split).
    batch : int
        Images per ciphertext.
    threads, seed, png, progress, epochs, params
        Context threads, split and training seed, a directory for the confusion matrix, a progress bar, training
        epochs (default 60), CkksParams overrides.

    Returns
    -------
    dict
        The record ``ember demo cnn --json`` prints (accuracies, agreement, latency, parameters).
    """
    from . import datasets

    X, y = datasets.digits()
    Xtr, Xte, ytr, yte = datasets.train_test_split(scale_input(X), y, test_fraction=0.25, seed=seed)
    if images is not None:
        Xte, yte = Xte[:images], yte[:images]
    ep = 60 if epochs is None else epochs
    with Progress(progress, "ember demo cnn") as bar:
        bar.stage("training (float64)", ep)
        t = time.perf_counter()
        model = train(Xtr, ytr, epochs=ep, seed=seed, progress=lambda e: bar.advance())
        train_s = time.perf_counter() - t
        plain = plain_forward(model, Xte)
        bar.stage("keys")
        ctx = make_context(threads, **(params or {}))
        layout = Layout(ctx.slots, batch=batch)
        baby = 16 if layout.passes > 4 else 1
        keys = ctx.keygen(rotations=layout.rotations(baby))
        em = EncryptedModel(ctx, model, layout, baby=baby)
        # warm-up (encodes the plaintext weights once), not timed
        encrypted_forward(em, ctx.encrypt(layout.encode_images(Xte[:batch]), keys.public))
        n = len(Xte)
        chunks = [(i, min(i + batch, n)) for i in range(0, n, batch)]
        bar.stage(f"encrypted inference ({batch} per ciphertext)", len(chunks))
        enc_logits, server_s = [], []
        for a, b in chunks:
            ct = ctx.encrypt(layout.encode_images(Xte[a:b]), keys.public)
            t = time.perf_counter()
            out = encrypted_forward(em, ct)
            server_s.append(time.perf_counter() - t)
            enc_logits.append(layout.decode_logits(ctx.decrypt(out, keys.secret), b - a))
            bar.advance(f"{server_s[-1]:.2f} s")
    enc = np.concatenate(enc_logits)
    pe, pp = enc.argmax(1), plain.argmax(1)
    # latency: one image alone (batch 1 layout) is what the chunks measure when batch == 1
    rec = dict(app="cnn", dataset="digits-8x8", images=int(n), batch=batch, passes=layout.passes, baby_steps=baby,
               accuracy_encrypted=float((pe == yte).mean()), accuracy_plain=float((pp == yte).mean()),
               agreement=float((pe == pp).mean()), max_logit_error=float(np.abs(enc - plain).max()),
               latency_s=float(np.median(server_s)), images_per_s=float(n / sum(server_s)),
               seconds_per_ciphertext=float(np.median(server_s)), train_seconds=train_s, threads=threads,
               params=ctx.params.to_dict(), rotation_keys=len(layout.rotations(baby)))
    if png:
        _confusion_png(png, yte, pe)
        rec["png"] = png
    return rec


def _confusion_png(directory, y, pred):
    import pathlib

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cm = np.zeros((CLASSES, CLASSES), int)
    np.add.at(cm, (y, pred), 1)
    fig, ax = plt.subplots(figsize=(5, 4.5))
    im = ax.imshow(cm, cmap="Blues")
    for i in range(CLASSES):
        for j in range(CLASSES):
            ax.text(j, i, cm[i, j], ha="center", va="center", fontsize=7, color="white" if cm[i, j] > cm.max() / 2 else "black")
    ax.set(xlabel="encrypted prediction", ylabel="true digit", xticks=range(CLASSES), yticks=range(CLASSES),
           title="LoLa-style CNN on encrypted 8x8 digits")
    fig.colorbar(im)
    fig.tight_layout()
    fig.savefig(d / "cnn_confusion.png", dpi=120)
    plt.close(fig)
