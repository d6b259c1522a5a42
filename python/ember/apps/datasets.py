"""Data sets for the applications, all shipped inside installed packages (no downloads).

* breast cancer (Wisconsin diagnostic, 569 x 30) and the 8 x 8 digits (1797 x 64): scikit-learn's bundled
  copies (``sklearn.datasets.load_*`` read files inside the package);
* ``synthetic_lr``: a generator for any shape (HELR's benchmark shape is 1024 samples x 256 features).
"""
from __future__ import annotations

import numpy as np


def sklearn(module: str = "datasets"):
    """scikit-learn's submodule `module` (the applications' data sets and reference models); a missing
    scikit-learn raises ModuleNotFoundError saying how to install it."""
    import importlib
    import importlib.util
    try:
        return importlib.import_module("sklearn." + module)
    except ModuleNotFoundError as e:
        if e.name is not None and e.name.split(".")[0] != "sklearn":
            raise
        if e.name is not None and e.name != "sklearn" and importlib.util.find_spec("sklearn") is not None:
            raise ModuleNotFoundError(f"scikit-learn has no module {e.name!r}") from e
        raise ModuleNotFoundError("ember.apps needs scikit-learn: pip install 'ember-fhe[apps]' "
                                  "(or scikit-learn)") from e


def estimator_bases():
    """The bases of the applications' estimators.

    Returns
    -------
    tuple of type
        ``(sklearn.base.ClassifierMixin, sklearn.base.BaseEstimator)``; without scikit-learn (the ``apps`` extra),
        two empty stand-ins, so that ``import ember.apps`` works: fitting an estimator then raises
        ModuleNotFoundError saying how to install scikit-learn.
    """
    try:
        base = sklearn("base")
    except ModuleNotFoundError:
        class ClassifierMixin:  # noqa: D101 -- stand-ins, only without scikit-learn
            pass

        class BaseEstimator:  # noqa: D101
            pass
        return ClassifierMixin, BaseEstimator
    return base.ClassifierMixin, base.BaseEstimator


def breast_cancer():
    """(X, y) with X 569 x 30 float64, y in {0, 1} (1 = benign)."""
    X, y = sklearn().load_breast_cancer(return_X_y=True)
    return X.astype(np.float64), y.astype(np.int64)


def digits(classes=None):
    """(X, y) of the 8 x 8 digits (pixels 0..16). With classes=(a, b): only those two, y = 1 for b (HELR's
    MNIST 3 vs 8 task on the small digits)."""
    X, y = sklearn().load_digits(return_X_y=True)
    X = X.astype(np.float64)
    if classes is None:
        return X, y.astype(np.int64)
    a, b = classes
    keep = (y == a) | (y == b)
    return X[keep], (y[keep] == b).astype(np.int64)


def synthetic_lr(samples: int = 1024, features: int = 255, seed: int = 0, noise: float = 1.0):
    """A logistic-regression problem of any shape: x uniform in [-1, 1]^features, y ~ Bernoulli(sigmoid(x.w* + noise)).
    With 255 features and the bias column the training matrix is 1024 x 256 (HELR's benchmark shape)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (samples, features))
    w = rng.normal(0.0, 3.0 / np.sqrt(features), features)
    t = X @ w + noise * rng.logistic(size=samples)
    return X, (t > 0).astype(np.int64)


def train_test_split(X, y, test_fraction: float = 0.2, seed: int = 0):
    """A stratified split (numpy only, so that the encrypted and the float64 runs see the same rows)."""
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        test[idx[: int(round(test_fraction * len(idx)))]] = True
    return X[~test], X[test], y[~test], y[test]
