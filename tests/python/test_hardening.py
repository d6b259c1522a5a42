"""Hardening from Python: bounded deserialisation (max_bytes), noise flooding at decryption (the stated size
of its error, the context-wide policy, clear errors), secret keys never pickled."""
import pickle

import numpy as np
import pytest

import ember


# ---- bounded deserialisation ---------------------------------------------------------------------------------------

def test_default_bound_is_the_largest_object(small):
    ctx, keys = small
    ct = ctx.encrypt(np.full(ctx.slots, 0.5), keys.public)  # top level: the largest ciphertext
    data = ct.to_bytes()
    assert ember.Ciphertext.default_max_bytes(ctx) == len(data)
    # keys are written packed by default; the bound is their largest encoding (64-bit words)
    assert ember.SecretKey.default_max_bytes(ctx) == len(keys.secret.to_bytes(export_secret=True, compact=False))
    assert ember.PublicKey.default_max_bytes(ctx) == len(keys.public.to_bytes(compact=False))
    assert ember.PublicKey.default_max_bytes(ctx) > len(keys.public.to_bytes())
    assert ember.SwitchingKey.default_max_bytes(ctx) >= len(keys.relin.to_bytes())
    back = ember.Ciphertext.from_bytes(ctx, data, max_bytes=len(data))
    assert np.abs(back.decrypt(keys.secret).real - 0.5).max() < 1e-6


def test_max_bytes_refuses_before_parsing(small):
    ctx, keys = small
    data = ctx.encrypt(np.zeros(ctx.slots), keys.public).to_bytes()
    with pytest.raises(ValueError, match=f"exceeds max_bytes = {len(data) - 1}"):
        ember.Ciphertext.from_bytes(ctx, data, max_bytes=len(data) - 1)
    # one byte more than any valid ciphertext: refused by the default bound, naming it
    with pytest.raises(ValueError, match="exceeds max_bytes"):
        ember.Ciphertext.from_bytes(ctx, data + b"\0")
    for bad in (0, -1, True, 1.5, "100"):
        with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
            ember.Ciphertext.from_bytes(ctx, data, max_bytes=bad)
    # a header claiming an absurd payload is refused by its length check, nothing allocated
    with pytest.raises(ValueError):
        ember.GaloisKeys.from_bytes(ctx, data[:48] + b"\xff" * 40)


def test_galois_keys_bound(small):
    ctx, keys = small
    data = keys.galois.to_bytes()
    assert len(data) <= ember.GaloisKeys.default_max_bytes(ctx)
    g = ember.GaloisKeys.from_bytes(ctx, data)
    assert isinstance(g, ember.GaloisKeys)
    with pytest.raises(ValueError, match="exceeds max_bytes"):
        ember.GaloisKeys.from_bytes(ctx, data, max_bytes=1000)


def test_secret_key_is_never_pickled(small):
    ctx, keys = small
    with pytest.raises(TypeError):
        pickle.dumps(keys.secret)


# ---- noise flooding ------------------------------------------------------------------------------------------------

def _slot_errors(ctx, keys, flood, runs=4):
    x = np.linspace(-1, 1, ctx.slots) + 0.25j
    ct = ctx.encrypt(x, keys.public)
    plain = ctx.decrypt(ct, keys.secret)
    d = np.concatenate([ctx.decrypt(ct, keys.secret, flooding=flood) - plain for _ in range(runs)])
    return np.concatenate([d.real, d.imag]), ct


def test_flooding_noise_has_the_stated_size(small):
    """The slot error of a flooded decryption (minus the plain one) has the standard deviation the
    documentation states, 2^-precision_bits: within 6 standard errors of the sample deviation."""
    ctx, keys = small
    flood = ember.DecryptionFlooding(noise_bits=6, statistical_bits=30, queries=16)
    assert flood.sigma_bits(ctx) == pytest.approx(15 + 0.5 * (12 + 4) + 6)
    e, ct = _slot_errors(ctx, keys, flood)
    want = 2.0 ** -flood.precision_bits(ctx, ct.scale)
    assert want == pytest.approx(2.0 ** (flood.sigma_bits(ctx) + 0.5 * 11) / ct.scale)
    sd = e.std()
    assert abs(sd / want - 1) < 6 / np.sqrt(2 * e.size), (sd, want)
    assert abs(e.mean()) < 6 * want / np.sqrt(e.size)


def test_flooding_policy(small):
    ctx, keys = small
    x = np.full(ctx.slots, 0.3)
    ct = ctx.encrypt(x, keys.public)
    plain = ctx.decrypt(ct, keys.secret)
    assert ctx.decryption_flooding is None
    flood = ember.DecryptionFlooding(noise_bits=4, statistical_bits=20, queries=1)
    try:
        ctx.set_decryption_flooding(flood)
        assert ctx.decryption_flooding == flood
        a, b = ctx.decrypt(ct, keys.secret), ct.decrypt(keys.secret)
        assert not np.array_equal(a, plain) and not np.array_equal(a, b)  # fresh noise per decryption
        bound = 8 * 2.0 ** -flood.precision_bits(ctx, ct.scale)
        assert np.abs(a - x).max() < bound and np.abs(b - x).max() < bound
    finally:
        ctx.set_decryption_flooding(None)
    assert np.array_equal(ctx.decrypt(ct, keys.secret), plain)


def test_flooding_errors(small):
    ctx, keys = small
    ct = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    with pytest.raises(TypeError, match="DecryptionFlooding"):
        ctx.decrypt(ct, keys.secret, flooding=3)
    with pytest.raises(TypeError, match="DecryptionFlooding"):
        ctx.set_decryption_flooding({"noise_bits": 3})
    with pytest.raises(ValueError, match="noise_bits"):
        ctx.decrypt(ct, keys.secret, flooding=ember.DecryptionFlooding(noise_bits=-1))
    with pytest.raises(ValueError, match="queries"):
        ctx.set_decryption_flooding(ember.DecryptionFlooding(noise_bits=1, queries=0))
    with pytest.raises(ValueError, match="statistical_bits"):
        ctx.set_decryption_flooding(ember.DecryptionFlooding(noise_bits=1, statistical_bits=float("nan")))
    with pytest.raises(ValueError, match="exceeds 2\\^56"):
        ctx.decrypt(ct, keys.secret, flooding=ember.DecryptionFlooding(noise_bits=40))
    assert ctx.decryption_flooding is None


def test_decryption_noise_bits(small):
    """Encryptions of zero have a few bits of noise; a product of them more, below the scale."""
    ctx, keys = small
    z = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    fresh = ctx.decryption_noise_bits(z, keys.secret)
    assert 1 < fresh < 16
    prod = ctx.decryption_noise_bits(z * z, keys.secret)
    assert 1 < prod < ctx.params.log_scale
