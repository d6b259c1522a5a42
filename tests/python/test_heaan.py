"""ember.heaan: the non-RNS HEAAN scheme of paper 000, against float64.

Error bounds (slot errors; Delta = 2^log_p, h = 64 the secret's weight, sigma = 3.2), derived in
tests/cpp/test_heaan.cpp: a fresh ciphertext carries the encoding rounding and the rounding of HEAAN's shift
by logQ, 12 sqrt(N (h + 2) / 12) / Delta at the tail; HE Mul then rescale 3x that for |m| <= 1; a rotation or
conjugation 2x that plus the key-switching noise 12 N sigma / sqrt(12) (q / Q) / Delta.
"""
import math

import numpy as np
import pytest

import ember
from ember import heaan

LOG_N, LOG_Q, LOG_P = 11, 300, 30


def fresh_bound(log_n, log_p, h=64):
    n = 2 ** log_n
    return 12 * math.sqrt(n * (h + 2) / 12) / 2 ** log_p


def mul_bound(log_n, log_p):
    return 3 * fresh_bound(log_n, log_p)


def rot_bound(log_n, log_p, log_q, log_qmax, sigma=3.2):
    n = 2 ** log_n
    return 2 * fresh_bound(log_n, log_p) + 12 * n * sigma / math.sqrt(12) * 2.0 ** (log_q - log_qmax) / 2 ** log_p


@pytest.fixture(scope="module")
def env():
    ctx = heaan.Context(LOG_N, LOG_Q, LOG_P, threads=2, insecure=True)
    keys = ctx.keygen(rotations=[1, -1, 7], conjugation=True)
    return ctx, keys


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def test_params_defaults_are_the_papers():
    with pytest.raises(ValueError, match="128-bit bound"):  # the paper's set is refused by default
        heaan.Params()
    p = heaan.Params(security=80)
    assert (p.log_n, p.log_q, p.log_p, p.depth) == (16, 1200, 30, 40)
    assert p.hamming_weight == 64


@pytest.mark.parametrize("kwargs, needle", [
    (dict(log_q=1300, security=80), "80-bit bound of 1200"),
    (dict(), "128-bit bound"),
    (dict(log_p=1200), "log_p"),
    (dict(prime_bits=61), "prime_bits"),
    (dict(log_n=2), "log_n"),
    (dict(hamming_weight=0), "hamming_weight"),
])
def test_params_refused_with_reason(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        heaan.Params(**kwargs)


def test_small_ring_needs_insecure():
    with pytest.raises(ValueError, match="insecure"):
        heaan.Context(10, 300, 30)


def test_encrypt_decrypt(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    assert (ct.log_q, ct.log_scale, ct.slots) == (LOG_Q, LOG_P, ctx.slots)
    assert np.abs(ctx.decrypt(ct, keys.secret) - x).max() < 2 * fresh_bound(LOG_N, LOG_P)


def test_fewer_slots_pad_and_lower_modulus(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, 5)
    ct = ctx.encrypt(x, keys.public, log_q=120, log_scale=40)
    assert ct.slots == 8 and ct.log_q == 120
    out = ct.decrypt(keys.secret)
    assert np.abs(out[:5] - x).max() < 1e-6 and np.abs(out[5:]).max() < 1e-6


def test_mul_rescale_within_bound(env, rng):
    ctx, keys = env
    x, y = rng.uniform(0, 1, (2, ctx.slots))
    cx, cy = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    prod = cx.mul(cy)  # relinearized, not rescaled
    assert (prod.log_q, prod.log_scale) == (LOG_Q, 2 * LOG_P)
    r = cx * cy  # rescaled
    assert (r.log_q, r.log_scale) == (LOG_Q - LOG_P, LOG_P)
    err = np.abs(ctx.decrypt(r, keys.secret) - x * y).max()
    assert err < mul_bound(LOG_N, LOG_P), f"2^{np.log2(err):.1f}"
    sq = cx * cx  # the squaring path
    assert np.abs(ctx.decrypt(sq, keys.secret) - x * x).max() < mul_bound(LOG_N, LOG_P)


def test_depth_and_mixed_levels(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, 64)
    c = ctx.encrypt(x, keys.public)
    want = x.copy()
    for _ in range(5):
        c = c * c
        want = want * want
    assert c.log_q == LOG_Q - 5 * LOG_P
    s = c + ctx.encrypt(x, keys.public)  # the fresh one is brought down to c's modulus
    assert s.log_q == c.log_q
    assert np.abs(ctx.decrypt(s, keys.secret) - (want + x)).max() < 6 * mul_bound(LOG_N, LOG_P)


def test_operators_with_numbers(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, ctx.slots)
    c = ctx.encrypt(x, keys.public)
    b = 2 * fresh_bound(LOG_N, LOG_P)
    assert np.abs(ctx.decrypt(c + 0.25, keys.secret) - (x + 0.25)).max() < b
    assert np.abs(ctx.decrypt(1.0 - c, keys.secret) - (1.0 - x)).max() < b
    assert np.abs(ctx.decrypt(c * 0.5, keys.secret) - 0.5 * x).max() < 2 * b
    assert np.abs(ctx.decrypt(-c - c, keys.secret) + 2 * x).max() < 2 * b
    arr = rng.uniform(-1, 1, ctx.slots)
    assert np.abs(ctx.decrypt(c + arr, keys.secret) - (x + arr)).max() < b


@pytest.mark.parametrize("r", [1, -1, 7])
def test_rotate(env, rng, r):
    ctx, keys = env
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    got = ctx.decrypt(ctx.encrypt(x, keys.public).rotate(r), keys.secret)
    assert np.abs(got - np.roll(x, -r)).max() < rot_bound(LOG_N, LOG_P, LOG_Q, LOG_Q)


def test_conjugate_and_rotate_after_mul(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    c = ctx.encrypt(x / 2, keys.public)
    got = ctx.decrypt(c.conjugate(), keys.secret)
    assert np.abs(got - np.conj(x / 2)).max() < rot_bound(LOG_N, LOG_P, LOG_Q, LOG_Q)
    y = (c * c).rotate(1)
    want = np.roll((x / 2) ** 2, -1)
    assert np.abs(ctx.decrypt(y, keys.secret) - want).max() < mul_bound(LOG_N, LOG_P) + rot_bound(LOG_N, LOG_P, LOG_Q, LOG_Q)


def test_errors_name_the_problem(env, rng):
    ctx, keys = env
    c = ctx.encrypt(rng.uniform(-1, 1, 8), keys.public)
    with pytest.raises(ValueError, match="no key for the Galois element"):
        c.rotate(2)
    with pytest.raises(ValueError, match="scales differ"):
        c.mul(c) + c
    with pytest.raises(ValueError, match="slot count"):
        ctx.encrypt(np.zeros(3), keys.public, slots=3)
    other = heaan.Context(LOG_N, LOG_Q, LOG_P, insecure=True)
    with pytest.raises(ValueError, match="another context"):
        other.decrypt(c, keys.secret)


def test_secret_key_is_hidden(env):
    _, keys = env
    assert "hidden" in repr(keys.secret) and "hidden" in repr(keys)


def test_primes_of_fig2(env):
    ctx, _ = env
    # region 1: P > 2^4 N q^2 / 2; region 2: P > 2^4 N (q/2) (Q^2/2), primes just below 2^50
    assert ctx.primes(1) == math.ceil((2 * LOG_Q + LOG_N - 1 + 4) / 49.999)
    assert ctx.primes(2) == math.ceil((3 * LOG_Q + LOG_N - 2 + 4) / 49.999)
    with pytest.raises(ValueError, match="region must be 1"):
        ctx.primes(3)


def test_trace_breakdown_kernels(env, rng):
    ctx, keys = env
    x = rng.uniform(0, 1, ctx.slots)
    c = ctx.encrypt(x, keys.public)
    with ember.trace() as t:
        c.mul(c)
    for k in ("heaan_crt", "heaan_ntt", "heaan_intt", "heaan_icrt", "heaan_extra", "heaan_mul"):
        assert t.counts[k]["ns"] > 0, k
    assert t.counts["heaan_ntt"]["ntt"] == 2 * ctx.primes(1) + ctx.primes(2)  # squaring: 2 inputs; region 2: 1
    assert t.counts["heaan_intt"]["ntt"] == 3 * ctx.primes(1) + 2 * ctx.primes(2)


def test_bench_record_small():
    rec = heaan.bench_mul(log_n=11, log_q=300, log_p=30, threads=1, runs=2, breakdown=True, insecure=True)
    for k in ("op", "log_n", "threads", "backend", "runs", "median_ms", "min_ms", "max_ms", "precision_bits"):
        assert k in rec
    assert rec["op"] == "heaan-mul" and rec["precision_bits"] > 15
    b = rec["breakdown_ms"]
    assert set(b) >= {"CRT", "NTT", "iNTT", "iCRT", "extra", "total"}
    assert abs(sum(b[k] for k in ("CRT", "NTT", "iNTT", "iCRT", "extra")) - b["total"]) < 0.05 * b["total"] + 0.1
    assert "iCRT" in heaan.breakdown_table(rec)


@pytest.mark.slow
def test_paper_parameters_precision():
    """N = 2^16, logQ = 1200, logp = 30: HE Mul precision at least reference HEAAN's (about 2^-13.5)."""
    ctx = heaan.Context(16, 1200, 30, threads=2, security=80)  # the paper's own 80-bit estimate
    keys = ctx.keygen(rotations=[1])
    rng = np.random.default_rng(7)
    x, y = rng.uniform(0, 1, (2, ctx.slots))
    cx, cy = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    err = np.abs(ctx.decrypt(cx * cy, keys.secret) - x * y).max()
    assert -np.log2(err) >= 13.5
    assert err < mul_bound(16, 30)
    got = ctx.decrypt(cx.rotate(1), keys.secret)
    assert np.abs(got - np.roll(x, -1)).max() < rot_bound(16, 30, 1200, 1200)
