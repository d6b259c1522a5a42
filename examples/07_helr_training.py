"""Training a logistic regression on encrypted data (HELR) with `ember.apps.EncryptedLogisticRegression`.

`fit` plays both roles: the data owner scales and encrypts the samples and keeps the secret key; the server runs
Nesterov-accelerated gradient steps with a cubic sigmoid on ciphertexts only; the owner decrypts the weights.
`Float64LogisticRegression` runs the very same algorithm (same batches, sigmoid and schedule) in float64, so the
two models must agree to within the CKKS error; scikit-learn's LogisticRegression gives the accuracy to aim for.

The training's parameters can bootstrap, and 128-bit bootstrappable parameters need N = 2^16: the ring is 2^16 even
when EMBER_EXAMPLE_LOG_N asks for less, and most of the run is the key generation. Two iterations fit in the 9
levels without a bootstrapping, so `fit` makes no bootstrapping keys (about 30 s and 3 GB on two cores); with more,
it makes them (some 9 GB more) and bootstraps the weights and the momentum together whenever the levels run out.
"""
import os
import time

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ember.apps import EncryptedLogisticRegression, Float64LogisticRegression

ITERATIONS = 2
log_n = max(16, int(os.environ.get("EMBER_EXAMPLE_LOG_N", "16")))   # bootstrapping needs 2^16 for 128 bits

X, y = load_breast_cancer(return_X_y=True)                           # 569 samples, 30 features, 2 classes
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)

hp = dict(iterations=ITERATIONS, learning_rate=2.0, sigmoid_interval=8.0)
t0 = time.perf_counter()
enc = EncryptedLogisticRegression(**hp, log_n=log_n, levels=9).fit(Xtr, ytr)
elapsed = time.perf_counter() - t0
# The float64 reference on the same mini-batches (as many samples per batch as one ciphertext holds).
ref = Float64LogisticRegression(**hp).fit(Xtr, ytr, capacity=2 * enc.packing_.R)
sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(Xtr, ytr)   # converged, with its own scaling

print(f"{enc.params_}")
print(f"encrypted training: {elapsed:.1f} s (keys {enc.keygen_seconds_:.1f} s, {enc.log_.iterations} iterations "
      f"{enc.log_.seconds:.1f} s, {enc.log_.bootstraps} bootstrappings)")
gap = np.abs(enc.weights_ - ref.weights_).max()
same = np.mean(enc.predict(Xte) == ref.predict(Xte))
print(f"weights: largest difference from float64 {gap:.1e}; same test predictions on {100 * same:.1f} % of samples")
print(f"test accuracy: encrypted {enc.score(Xte, yte):.3f}, float64 {ref.score(Xte, yte):.3f}, "
      f"scikit-learn (converged) {sk.score(Xte, yte):.3f}")
if gap > 1e-3 or same < 0.99:
    raise SystemExit(f"encrypted and float64 training disagree: weight gap {gap:.1e} (bound 1e-3), "
                     f"{100 * same:.1f} % equal predictions (bound 99 %)")
