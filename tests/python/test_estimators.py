"""The applications' estimators are scikit-learn estimators (issue 26): EncryptedLogisticRegression, its float64
twin and EncryptedCNNClassifier pass sklearn's estimator checks (tiny insecure rings, N = 2^11, so that each
check takes seconds), clone and GridSearchCV work on them, and their docstrings name only parameters and
attributes that exist.

Checks that do not apply are named in EXPECTED_FAILURES (xfail, with the reason); checks sklearn skips on its own
(pandas or array-API input when those are not installed, pipeline consistency for non-deterministic estimators)
are reported as skipped by pytest."""
import inspect
import re

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from ember.apps import EncryptedCNNClassifier, EncryptedLogisticRegression, Float64LogisticRegression  # noqa: E402
from ember.apps import cnn, datasets  # noqa: E402

TINY_LR = dict(iterations=2, log_n=11, insecure=True, threads=1)
# a small network (2 maps, 2 hidden units, 2 images per ciphertext) keeps encrypted prediction ~10 ms per image
# (check_classifiers_train predicts 300 samples several times); input_scale 1: sklearn's check data are
# standardised, not 0..16 pixels
TINY_CNN = dict(hidden=2, maps=2, input_scale=1.0, log_n=11, images_per_ciphertext=2, insecure=True, threads=1)

_NOISE = ("CKKS encryption adds fresh noise in every fit/prediction: two runs agree to ~1e-6, not to the "
          "check's rtol 1e-7")
EXPECTED_FAILURES = {
    "EncryptedLogisticRegression": {"check_fit_idempotent": _NOISE},
    # its predictions are encrypted too: every check comparing two predict_proba runs at 1e-7 meets the noise
    # (test_cnn_classifier_pickles_and_is_subset_invariant checks the same properties at 1e-4)
    "EncryptedCNNClassifier": {k: _NOISE for k in ("check_fit_idempotent", "check_estimators_pickle",
                                                   "check_methods_subset_invariance",
                                                   "check_methods_sample_order_invariance")},
}


def _expected_failures(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks([Float64LogisticRegression(), EncryptedLogisticRegression(**TINY_LR),
                          EncryptedCNNClassifier(**TINY_CNN)], expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_expected_failures_are_real_checks():
    """A misspelt name in EXPECTED_FAILURES would silently check nothing."""
    from sklearn.utils import estimator_checks
    for checks in EXPECTED_FAILURES.values():
        for name in checks:
            assert callable(getattr(estimator_checks, name, None)), name


@pytest.mark.parametrize("est", [EncryptedLogisticRegression(**TINY_LR, learning_rate=0.5),
                                 EncryptedCNNClassifier(**TINY_CNN, epochs=3)])
def test_clone_keeps_parameters_not_state(est):
    X, y = datasets.digits()
    X, y = X[:60], (y[:60] % 2)
    fitted = est.fit(X, y)
    c = clone(fitted)
    assert c.get_params() == est.get_params() and c is not est
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(c)), vars(c).keys()
    assert type(c).__name__ in repr(c)


def test_grid_search_encrypted_lr_agrees_with_float64():
    """GridSearchCV over the encrypted estimator against the same search over the float64 twin (same batches:
    batch_size fixed): the same best parameters, fold scores within 2 / fold size (a sample or two near the
    boundary may flip under the CKKS error; the weights agree to ~1e-4)."""
    X, y = datasets.breast_cancer()
    X, y = X[:256], y[:256]
    grid = {"learning_rate": [0.05, 2.0]}
    common = dict(iterations=2, decay=0.3, sigmoid_interval=16.0, batch_size=64)
    cv = KFold(2, shuffle=True, random_state=0)
    enc = GridSearchCV(EncryptedLogisticRegression(**common, log_n=11, insecure=True, threads=1), grid, cv=cv).fit(X, y)
    ref = GridSearchCV(Float64LogisticRegression(**common), grid, cv=cv).fit(X, y)
    assert enc.best_params_ == ref.best_params_
    for k in ("split0_test_score", "split1_test_score"):
        assert np.abs(enc.cv_results_[k] - ref.cv_results_[k]).max() <= 2 / 128
    assert isinstance(enc.best_estimator_, EncryptedLogisticRegression)
    assert enc.best_estimator_.log_.iterations == 2


def test_grid_search_cnn_scores_are_the_plain_networks():
    """GridSearchCV over EncryptedCNNClassifier (encrypted prediction) against the float64 network of each
    (candidate, fold), trained by cnn.train and run by plain_forward: fold accuracy within 1 / fold size."""
    X, y = datasets.digits()
    X, y = X[:160], y[:160]
    est = EncryptedCNNClassifier(hidden=4, maps=2, log_n=11, images_per_ciphertext=2, insecure=True, threads=1)
    grid = {"epochs": [1, 8]}
    cv = KFold(2, shuffle=True, random_state=0)
    gs = GridSearchCV(est, grid, cv=cv).fit(X, y)
    for i, params in enumerate(gs.cv_results_["params"]):
        for f, (tr, te) in enumerate(cv.split(X)):
            classes = np.unique(y[tr])
            model = cnn.train(X[tr] / 16.0, np.searchsorted(classes, y[tr]), epochs=params["epochs"], hidden=4,
                              maps=2, seed=0)
            pred = classes[cnn.plain_forward(model, X[te] / 16.0)[:, :len(classes)].argmax(1)]
            assert abs(gs.cv_results_[f"split{f}_test_score"][i] - (pred == y[te]).mean()) <= 1 / len(te)
    assert gs.best_params_ == {"epochs": 8}


def test_cnn_classifier_fit_is_float64_predict_is_encrypted():
    """fit is cnn.train on the scaled images (same weights, bit for bit); the encrypted logits are
    plain_forward's within 1e-3 of their size (five 36-bit levels at N = 2^12), the same predictions; labels
    that are not 0..9 map through classes_; accuracy on held-out digits above 0.8 after 10 epochs."""
    X, y = datasets.digits()
    labels = np.array(list("abcdefghij"))[y]
    clf = EncryptedCNNClassifier(epochs=10, log_n=12, insecure=True, dnum=2, threads=1).fit(X[:500], labels[:500])
    ref_model = cnn.train(cnn.scale_input(X[:500]), y[:500], epochs=10, seed=0)
    for k, v in ref_model.items():
        assert np.array_equal(clf.model_[k], v), k
    Xt = X[500:516]
    got = clf.encrypted_logits(Xt)
    ref = cnn.plain_forward(ref_model, cnn.scale_input(Xt))
    assert np.abs(got - ref).max() <= 1e-3 * np.abs(ref).max()
    assert (clf.predict(Xt) == clf.classes_[ref.argmax(1)]).all()
    proba = clf.predict_proba(Xt)
    assert proba.shape == (16, 10) and np.allclose(proba.sum(1), 1.0)
    assert clf.score(Xt, labels[500:516]) > 0.8


def test_cnn_classifier_pickles_and_is_subset_invariant():
    """What the noise-sensitive sklearn checks test, at the CKKS error (1e-4 on probabilities): a pickled
    classifier predicts as the original; predicting a subset or a permutation gives the same rows."""
    import pickle
    X, y = datasets.digits()
    clf = EncryptedCNNClassifier(**TINY_CNN, epochs=3).fit(X[:100], y[:100])
    other = pickle.loads(pickle.dumps(clf))
    for k, v in clf.model_.items():
        assert np.array_equal(other.model_[k], v)
    Xt = X[100:110]
    full = clf.predict_proba(Xt)
    assert np.abs(other.predict_proba(Xt) - full).max() <= 1e-4
    assert np.abs(clf.predict_proba(Xt[3:7]) - full[3:7]).max() <= 1e-4
    order = np.arange(10)[::-1]
    assert np.abs(clf.predict_proba(Xt[order]) - full[order]).max() <= 1e-4


def test_cnn_classifier_errors():
    X, y = datasets.digits()
    with pytest.raises(ValueError, match="at most 64"):
        EncryptedCNNClassifier(epochs=1).fit(np.zeros((4, 65)), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="2 to 10 classes"):
        EncryptedCNNClassifier(epochs=1).fit(X[:40], np.arange(40) % 11)


def _doc_section(doc: str, title: str) -> list:
    """The names a numpydoc section documents: its unindented lines, "a, b : type" or "a, b"."""
    lines = inspect.cleandoc(doc).splitlines()
    if title not in lines:
        return []
    names = []
    k = lines.index(title) + 2
    while k < len(lines) and not (k + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[k + 1])):
        line = lines[k]
        if line.strip() and not line.startswith(" "):
            names += [n.strip() for n in line.split(" :")[0].split(",")]
        k += 1
    return names


@pytest.mark.parametrize("cls,kw", [(EncryptedLogisticRegression, TINY_LR), (Float64LogisticRegression, {}),
                                    (EncryptedCNNClassifier, dict(TINY_CNN, epochs=2))])
def test_docstrings_name_only_what_exists(cls, kw):
    """Every constructor parameter is documented and every documented parameter exists; every documented
    attribute exists after fit (the old docstring advertised reference=True and float64_weights_)."""
    params = _doc_section(cls.__doc__, "Parameters")
    attrs = _doc_section(cls.__doc__, "Attributes")
    sig = set(inspect.signature(cls).parameters)
    assert set(params) == sig, (set(params) ^ sig)
    X, y = datasets.digits()
    fitted = cls(**kw).fit(X[:60], y[:60] % 2)
    assert attrs and all(hasattr(fitted, a) for a in attrs), [a for a in attrs if not hasattr(fitted, a)]
