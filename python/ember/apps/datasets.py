"""Data sets for the applications, all shipped inside installed packages (no downloads).

* breast cancer (Wisconsin diagnostic, 569 x 30) and the 8 x 8 digits (1797 x 64): scikit-learn's bundled
  copies (``sklearn.datasets.load_*`` read files inside the package);
* ``synthetic_lr``: a generator for any shape (HELR's benchmark shape is 1024 samples x 256 features).
"""
from __future__ import annotations

import numpy as np


def sklearn(module: str = "datasets"):
    """Return scikit-learn's submodule `module` (the applications' data sets and reference models).

    Parameters
    ----------
    module : str, optional
        The submodule's name (default "datasets").

    Returns
    -------
    module
        ``sklearn.<module>``.

    Raises
    ------
    ModuleNotFoundError
        If scikit-learn is missing (saying how to install it), or has no such submodule.
    """
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
    """Return the bases of the applications' estimators.

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
    """Return the Wisconsin diagnostic breast-cancer data set (scikit-learn's bundled copy).

    Returns
    -------
    X : numpy.ndarray
        569 x 30, float64.
    y : numpy.ndarray
        int64 in {0, 1} (1 = benign).
    """
    X, y = sklearn().load_breast_cancer(return_X_y=True)
    return X.astype(np.float64), y.astype(np.int64)


def digits(classes=None):
    """Return the 8 x 8 digits (scikit-learn's bundled copy), or two of their classes.

    Parameters
    ----------
    classes : tuple of int, optional
        ``(a, b)``: keep only those two digits, with y = 1 for b (HELR's MNIST 3 vs 8 task on the small
        digits). None (the default): all ten.

    Returns
    -------
    X : numpy.ndarray
        The images, one row of 64 pixels (0..16) each, float64.
    y : numpy.ndarray
        int64: the digit, or 0 / 1 with `classes`.
    """
    X, y = sklearn().load_digits(return_X_y=True)
    X = X.astype(np.float64)
    if classes is None:
        return X, y.astype(np.int64)
    a, b = classes
    keep = (y == a) | (y == b)
    return X[keep], (y[keep] == b).astype(np.int64)


def synthetic_lr(samples: int = 1024, features: int = 255, seed: int = 0, noise: float = 1.0):
    """Return a logistic-regression problem of any shape.

    x is uniform in [-1, 1]^features; y = 1 when x.w* + noise * t > 0 for a standard logistic draw t, i.e.
    y ~ Bernoulli(sigmoid(x.w* / noise)) (w* normal with standard deviation 3 / sqrt(features)). With 255
    features and the bias column the training matrix is 1024 x 256 (HELR's benchmark shape).

    Parameters
    ----------
    samples : int, optional
        Rows (default 1024).
    features : int, optional
        Columns (default 255).
    seed : int, optional
        The random generator's seed (default 0).
    noise : float, optional
        Scale of the logistic noise (default 1.0).

    Returns
    -------
    X : numpy.ndarray
        samples x features, float64.
    y : numpy.ndarray
        int64 in {0, 1}.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (samples, features))
    w = rng.normal(0.0, 3.0 / np.sqrt(features), features)
    t = X @ w + noise * rng.logistic(size=samples)
    return X, (t > 0).astype(np.int64)


def train_test_split(X, y, test_fraction: float = 0.2, seed: int = 0):
    """Split a data set, stratified by class.

    numpy only, so that the encrypted and the float64 runs see the same rows.

    Parameters
    ----------
    X : numpy.ndarray
        The samples.
    y : numpy.ndarray
        Their labels.
    test_fraction : float, optional
        The fraction of each class held out, rounded (default 0.2).
    seed : int, optional
        The random generator's seed (default 0).

    Returns
    -------
    X_train, X_test, y_train, y_test : numpy.ndarray
        The rows of each part, in their original order.
    """
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        test[idx[: int(round(test_fraction * len(idx)))]] = True
    return X[~test], X[test], y[~test], y[test]
