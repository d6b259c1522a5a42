"""Every kernel path gives the same bits: whole operations (HE Mul, rotate, bootstrapping at N = 2^13) on each path
this CPU supports (EMBER_SIMD=scalar|avx2|avx512|ifma) against the scalar path, byte for byte; bad EMBER_SIMD values
are refused at import with the choices named; `ember info` and `ember bench` report the path.

The path is fixed per process (EMBER_SIMD is read once), so each path runs in its own interpreter: one process makes
the keys and two ciphertexts, every path's process loads them and writes the serialized results, and the bytes are
compared. The reference is the scalar path, whose kernels are themselves tested against independent references
(tests/cpp/test_ntt.cpp, test_vec_simd.cpp; naive products, __int128 and GMP arithmetic).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

ORDER = ["scalar", "avx2", "avx512", "ifma"]
BEST = ember._ember.cpu_features()["best"]
PATHS = ORDER[: ORDER.index(BEST) + 1]

# N = 2^13, bootstrappable (insecure: a test ring), 16 slots
SETUP = textwrap.dedent("""
    import pathlib, sys, numpy as np, ember
    d = pathlib.Path(sys.argv[1])
    ctx = ember.Context(ember.CkksParams.bootstrappable(log_n=13, levels=2, slots=16, insecure=True), threads=2)
""")

MAKE = SETUP + textwrap.dedent("""
    keys = ctx.keygen(rotations=[1, 5], bootstrapping=True)
    ctx.save_bootstrap_keys(d / "keys")
    (d / "sk").write_bytes(keys.secret.to_bytes(export_secret=True))
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, 16) + 0.25                 # 16 slots (sparse packing), a non-zero mean
    y = np.full(16, -0.75)                             # a constant
    (d / "x.ct").write_bytes(ctx.encrypt(x, keys.public).to_bytes())
    (d / "y.ct").write_bytes(ctx.encrypt(y, keys.public).to_bytes())
    np.save(d / "x.npy", x)
    np.save(d / "y.npy", y)
""")

RUN = SETUP + textwrap.dedent("""
    out = pathlib.Path(sys.argv[2])
    out.mkdir()
    ctx.load_bootstrap_keys(d / "keys")
    cx = ember.Ciphertext.from_bytes(ctx, (d / "x.ct").read_bytes())
    cy = ember.Ciphertext.from_bytes(ctx, (d / "y.ct").read_bytes())
    (out / "mul").write_bytes((cx * cy).to_bytes())
    (out / "rotate").write_bytes(cx.rotate(5).to_bytes())
    (out / "boot").write_bytes(cx.bootstrap().to_bytes())
    print(ember._ember.cpu_features()["path"])
""")


def _python(code: str, *args, simd: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("EMBER_SIMD", None)
    if simd is not None:
        env["EMBER_SIMD"] = simd
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600, check=check)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    d = tmp_path_factory.mktemp("paths")
    r = _python(MAKE, d, check=False)
    assert r.returncode == 0, r.stderr
    return d


def test_whole_operations_are_bit_identical_on_every_path(shared):
    if len(PATHS) < 2:
        pytest.skip(f"this CPU has only the {BEST} path")
    results = {}
    for p in PATHS:
        r = _python(RUN, shared, shared / f"out-{p}", simd=p, check=False)
        assert r.returncode == 0, f"{p}: {r.stderr}"
        assert r.stdout.strip() == p
        results[p] = {op: (shared / f"out-{p}" / op).read_bytes() for op in ("mul", "rotate", "boot")}
    for p in PATHS[1:]:
        for op in ("mul", "rotate", "boot"):
            assert results[p][op] == results["scalar"][op], f"{op} on the {p} path differs from the scalar path"
    # and the results are right, not only equal (float64 on the plaintext)
    ctx = ember.Context(ember.CkksParams.bootstrappable(log_n=13, levels=2, slots=16, insecure=True), threads=1)
    sk = ember.SecretKey.from_bytes(ctx, (shared / "sk").read_bytes())
    x, y = np.load(shared / "x.npy"), np.load(shared / "y.npy")
    dec = {op: ember.Ciphertext.from_bytes(ctx, results["scalar"][op]).decrypt(sk).real for op in ("mul", "rotate", "boot")}
    assert np.abs(dec["mul"] - x * y).max() < 2.0 ** -20
    assert np.abs(dec["rotate"] - np.roll(x, -5)).max() < 2.0 ** -20
    assert np.abs(dec["boot"] - x).max() < 2.0 ** -12


@pytest.mark.parametrize("value", ["", "fast", "AVX2", "neon", "avx-512", "sse"])
def test_unknown_simd_value_is_refused_naming_the_choices(value):
    r = _python("import ember", simd=value, check=False)
    assert r.returncode != 0
    assert "scalar, avx2, avx512, ifma" in r.stderr, r.stderr
    assert "Segmentation" not in r.stderr and r.returncode > 0  # an exception, not a signal


def test_path_above_the_cpu_is_refused_before_any_work():
    above = ORDER[ORDER.index(BEST) + 1:] if BEST != "ifma" else []
    if not above:
        pytest.skip("this CPU has every path")
    for p in above:
        r = _python("import ember", simd=p, check=False)
        assert r.returncode == 1, (p, r.returncode, r.stderr)  # a Python exception (never SIGILL: -4)
        assert "lacks that path" in r.stderr and f"EMBER_SIMD={p}" in r.stderr


def test_forced_path_is_reported_by_info_and_bench():
    for p in PATHS:
        r = _python("import sys; from ember.cli import main; sys.exit(main(['info']))", simd=p)
        info = json.loads(r.stdout)
        assert info["simd"]["path"] == p and info["simd"]["best"] == BEST
        assert info["simd"]["forced_by_EMBER_SIMD"] is True
        fam = info["kernel_paths"]
        assert set(fam) >= {"ntt", "elementwise", "base_conversion", "automorphism", "heaan_crt"}
        if p in ("scalar", "avx2"):
            assert fam["ntt"] == p and fam["elementwise"] == p and info["path"] == p
        r = _python("import sys; from ember.cli import main; sys.exit(main(['bench', 'mul', '--log-n', '12', "
                    "'--levels', '2', '--dnum', '1', '--runs', '1', '--insecure']))", simd=p)
        rec = json.loads(r.stdout.splitlines()[0])
        assert rec["simd"] == p
        assert rec["path"] == info["path"] if p != "ifma" else rec["path"].startswith("ifma")
