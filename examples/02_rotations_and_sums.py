"""Rotations: the sum of all slots by log2(n) rotate-and-add steps, and hoisted rotations.

rotate_many() shares one key-switching decomposition (Decomp + ModUp) between all the rotations it
computes, so it is cheaper than the same rotations one by one.
"""
import os
import time

import numpy as np

import ember

log_n = int(os.environ.get("EMBER_EXAMPLE_LOG_N", "16"))
ctx = ember.Context(ember.CkksParams(log_n=log_n, levels=24 if log_n >= 16 else 6, log_scale=50 if log_n >= 16 else 40,
                                     dnum=3, insecure=log_n < 16), threads=2)
n = ctx.slots
steps = [2 ** i for i in range(int(np.log2(n)))]
keys = ctx.keygen(rotations=steps + list(range(1, 9)))

x = np.random.default_rng(0).uniform(-1, 1, n)
ct = ctx.encrypt(x, keys.public)

# Sum of all slots: after log2(n) rotate-and-add steps every slot holds the total.
acc = ct
for s in steps:
    acc = acc + acc.rotate(s)
total = ctx.decrypt(acc, keys.secret).real
print(f"sum of {n} slots: {total[0]:.6f} (numpy {x.sum():.6f}), error {abs(total[0] - x.sum()):.1e}")
assert abs(total[0] - x.sum()) < 1e-4 * n

t0 = time.perf_counter()
one_by_one = [ct.rotate(s) for s in range(1, 9)]
t1 = time.perf_counter()
hoisted = ct.rotate_many(range(1, 9))
t2 = time.perf_counter()
worst = max(np.abs(ctx.decrypt(h, keys.secret).real - np.roll(x, -s)).max() for s, h in zip(range(1, 9), hoisted))
print(f"8 rotations: one by one {1e3 * (t1 - t0):.0f} ms, hoisted {1e3 * (t2 - t1):.0f} ms, max error {worst:.1e}")
assert worst < 1e-6
