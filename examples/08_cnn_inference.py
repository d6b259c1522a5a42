"""Encrypted CNN inference (LoLa style) with `ember.apps.EncryptedCNNClassifier` on scikit-learn's 8 x 8 digits.

`fit` trains the network in float64 on plaintext images (conv 3x3 -> square -> dense -> square -> dense: only
additions and products, so CKKS can evaluate it exactly up to its rounding). `encrypted_logits` is the client and
the server in one call: fresh keys, each image encrypted, the network run on ciphertexts, the logits decrypted.
The same network in float64 (a few lines of numpy below, on the trained weights `model_`) is the reference: the
encrypted logits must match it, and so must the predicted labels.
"""
import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from ember.apps import EncryptedCNNClassifier

IMAGES = 8
log_n = max(14, int(os.environ.get("EMBER_EXAMPLE_LOG_N", "14")))   # the network's parameters: 128-bit from 2^14


def float64_logits(model, X):
    """Run the classifier's network in float64 on images X (n, 64) already divided by 16."""
    img = X.reshape(-1, 8, 8)
    patches = np.stack([img[:, dy:dy + 6, dx:dx + 6].reshape(len(X), 36) for dy in range(3) for dx in range(3)],
                       axis=2)                                         # (n, 36 positions, 9 kernel offsets)
    conv = (patches @ model["wc"].T + model["bc"]) ** 2                # (n, 36, maps), squared
    h = conv.transpose(0, 2, 1).reshape(len(X), -1) @ model["w1"].T + model["b1"]   # dense 1 on map-major features
    return (h ** 2) @ model["w2"].T + model["b2"]


X, y = load_digits(return_X_y=True)                                   # 1797 images of 8 x 8 pixels in 0..16
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
clf = EncryptedCNNClassifier(log_n=log_n, random_state=0).fit(Xtr, ytr)    # float64 training, ~2 s

reference = float64_logits(clf.model_, Xte / 16.0)
print(f"float64 network: test accuracy {np.mean(clf.classes_[reference.argmax(1)] == yte):.3f} "
      f"on {len(yte)} images")

t0 = time.perf_counter()
enc = clf.encrypted_logits(Xte[:IMAGES])                              # keys, encrypt, infer, decrypt
elapsed = time.perf_counter() - t0
labels, ref_labels = clf.classes_[enc.argmax(1)], clf.classes_[reference[:IMAGES].argmax(1)]
err = np.abs(enc - reference[:IMAGES]).max()
print(f"encrypted inference at N = 2^{log_n}: {IMAGES} images in {elapsed:.2f} s (with key generation)")
print(f"  true labels     {yte[:IMAGES]}")
print(f"  encrypted       {labels}")
print(f"  float64         {ref_labels}")
print(f"  largest logit difference {err:.1e} (logits up to {np.abs(reference[:IMAGES]).max():.1f})")
if err > 1e-2 or (labels != ref_labels).any():
    raise SystemExit(f"encrypted and float64 inference disagree: logit error {err:.1e} (bound 1e-2), "
                     f"labels {labels} vs {ref_labels}")
