"""Devices: Context(device=...), the guarded CPU mode, and moving objects between contexts with .to(ctx).

The guarded mode ("cpu-guarded") runs the CPU kernels on polynomial memory that faults when code outside the kernels
touches it: what a GPU's device memory demands of the scheme code, checked here without a GPU. Its results must be
the CPU backend's, byte for byte; reference: float64 on the plaintext slots.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from conftest import SMALL


@pytest.fixture(scope="module")
def pair():
    params = ember.CkksParams(**SMALL)
    cpu = ember.Context(params)
    guarded = ember.Context(params, device="cpu-guarded")
    keys = cpu.keygen(rotations=[1, -3], conjugation=True)
    return cpu, guarded, keys


def test_device_names_and_refusals():
    params = ember.CkksParams(**SMALL)
    assert ember.Context(params).device == (os.environ.get("EMBER_DEVICE") or "cpu")  # the default
    assert ember.Context(params, device="cpu").device == "cpu"
    with pytest.raises(ValueError, match=r"unknown device 'gpu'.*cpu, cpu-guarded, cuda"):
        ember.Context(params, device="gpu")
    with pytest.raises(TypeError, match="device must be a str"):
        ember.Context(params, device=0)
    # the Python extension has no CUDA backend in this build, or this machine no GPU: a clear error either way
    with pytest.raises(RuntimeError, match="CUDA"):
        ember.Context(params, device="cuda")


def test_guarded_gives_the_cpu_bytes(pair):
    cpu, guarded, keys = pair
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, cpu.slots) + 0.25  # a non-zero mean
    y = rng.uniform(-1, 1, cpu.slots)
    cx, cy = cpu.encrypt(x, keys.public), cpu.encrypt(y, keys.public)
    gx, gy = cx.to(guarded), cy.to(guarded)
    assert gx.to_bytes() == cx.to_bytes()
    guarded.set_eval_keys(keys.relin.to(guarded), keys.galois.to(guarded))
    for name, f in [("mul", lambda a, b: a * b), ("add", lambda a, b: a + b), ("rotate", lambda a, b: a.rotate(-3)),
                    ("mul by a constant", lambda a, b: a * 0.5 - b)]:
        want, got = f(cx, cy), f(gx, gy)
        assert got.to_bytes() == want.to_bytes(), name
        assert got.to(cpu).to_bytes() == want.to_bytes(), name
    # decrypted on the guarded context itself (host views of its limbs), against float64
    sk = keys.secret.to(guarded)
    np.testing.assert_allclose(guarded.decrypt(gx * gy, sk).real, x * y, atol=2.0**-16)
    np.testing.assert_allclose(guarded.decrypt(gx.rotate(1), sk).real, np.roll(x, -1), atol=2.0**-16)


def test_guarded_encrypts_and_keygens_itself(pair):
    _, guarded, _ = pair
    keys = guarded.keygen(rotations=[2])
    x = np.full(guarded.slots, -0.75)  # a constant
    ct = guarded.encrypt(x, keys.public)
    np.testing.assert_allclose(guarded.decrypt((ct * ct).rotate(2), keys.secret).real, x * x, atol=2.0**-16)


def test_to_checks_its_argument(pair):
    cpu, guarded, keys = pair
    ct = cpu.encrypt(np.zeros(cpu.slots), keys.public)
    assert ct.to(cpu) is ct
    with pytest.raises(TypeError, match="needs an ember.Context"):
        ct.to("cpu")
    other = ember.Context(ember.CkksParams(**dict(SMALL, levels=3)))
    with pytest.raises(ValueError):
        ct.to(other)


def test_ember_device_environment():
    code = "import ember; print(ember.Context(ember.CkksParams(log_n=12, levels=2, insecure=True)).device)"
    env = dict(os.environ, EMBER_DEVICE="cpu-guarded")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cpu-guarded"
    env["EMBER_DEVICE"] = "quantum"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "EMBER_DEVICE" in out.stderr and "cpu-guarded" in out.stderr
