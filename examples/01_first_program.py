"""A first Ember program: encrypt a vector, compute (x^2 + x/2) rotated by one slot, decrypt.

Run with `make demo` (it builds Ember first) or `python examples/01_first_program.py`.
EMBER_DEMO_LOG_N=13 or 14 makes it quicker on a slow machine (with insecure=True, since 24 levels do not fit
the 128-bit bound at that ring size).
"""
import os
import time

import numpy as np

import ember

log_n = int(os.environ.get("EMBER_DEMO_LOG_N", "16"))  # smaller: quicker, insecure
params = ember.CkksParams(log_n=log_n, levels=24, log_scale=50, dnum=3, insecure=log_n < 16)
print(params)

t0 = time.perf_counter()
ctx = ember.Context(params, threads=2)
keys = ctx.keygen(rotations=[1, -1, 16], conjugation=True)
print(f"context and keys: {time.perf_counter() - t0:.2f} s")

x = np.random.default_rng().uniform(-1, 1, ctx.slots)
ct = ctx.encrypt(x, keys.public)

t0 = time.perf_counter()
y = (ct * ct + 0.5 * ct).rotate(1)  # relinearize and rescale happen on their own
first = time.perf_counter() - t0
t0 = time.perf_counter()
y = (ct * ct + 0.5 * ct).rotate(1)  # again: the base-conversion tables of these levels now exist
elapsed = time.perf_counter() - t0

err = np.abs(ctx.decrypt(y, keys.secret).real - np.roll(x * x + 0.5 * x, -1)).max()
print(f"(x*x + 0.5*x).rotate(1) over {ctx.slots} slots: {elapsed * 1e3:.1f} ms "
      f"(first time {first * 1e3:.1f} ms, with one-time table setup), "
      f"max error {err:.2e} ({-np.log2(err):.1f} bits), {y.level} levels left")
assert err < 2 ** -20, "decryption error too large"
