"""Speed of Ember's byte format for one top-level ciphertext: to_bytes / from_bytes in each encoding (format 2,
64-bit words, the default for ciphertexts; format 2 packed; format 1: packed + SHA-256), write_into / from_bytes
on a shared mapping (what the local pool does), and a plain copy of the same bytes for reference. Medians of
--reps calls, milliseconds; one JSON line.

    build/venv/bin/python bench/run/serialize_speed.py [--log-n 16]
"""
import argparse
import json
import mmap
import statistics
import time

import numpy as np

import ember

LEVELS = {13: 5, 14: 8, 15: 12, 16: 24}


def med(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-n", type=int, default=16, choices=sorted(LEVELS))
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()
    p = ember.CkksParams(log_n=a.log_n, levels=LEVELS[a.log_n], log_scale=50 if a.log_n == 16 else 40, dnum=3)
    ctx = ember.Context(p, threads=1)
    keys = ctx.keygen(rotations=[])
    x = np.random.default_rng(0).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    out = {"log_n": a.log_n, "levels": LEVELS[a.log_n], "unit": "ms"}
    for name, kw in (("words", {}), ("packed", {"compact": True}), ("format1", {"version": 1})):
        b = ct.to_bytes(**kw)
        back = ember.Ciphertext.from_bytes(ctx, b)
        assert np.abs(ctx.decrypt(back, keys.secret) - x).max() < 2.0 ** -20
        out[name] = {"bytes": len(b), "to_bytes": med(lambda: ct.to_bytes(**kw), a.reps),
                     "from_bytes": med(lambda: ember.Ciphertext.from_bytes(ctx, b), a.reps)}
    b = ct.to_bytes()
    m = mmap.mmap(-1, len(b))
    with memoryview(m) as mv:
        out["shared"] = {"write_into": med(lambda: ct.write_into(mv), a.reps),
                         "from_bytes": med(lambda: ember.Ciphertext.from_bytes(ctx, mv), a.reps)}
    dst = bytearray(len(b))
    src = np.frombuffer(b, np.uint8)
    d = np.frombuffer(dst, np.uint8)
    out["memcpy_same_bytes"] = med(lambda: np.copyto(d, src), a.reps)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
