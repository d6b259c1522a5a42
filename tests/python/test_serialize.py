"""Round trips through bytes, and refusal of malformed bytes (never a crash)."""
import pickle

import numpy as np
import pytest

import ember
from conftest import SMALL, bound_bits


def test_round_trips(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    ct2 = ember.Ciphertext.from_bytes(ctx, ct.to_bytes())
    assert ct2.level == ct.level and ct2.scale == ct.scale and ct2.slots == ct.slots
    assert np.array_equal(ctx.decrypt(ct2, keys.secret), ctx.decrypt(ct, keys.secret))
    pt = ctx.encode(x, level=2)
    pt2 = ember.Plaintext.from_bytes(ctx, pt.to_bytes())
    assert np.array_equal(pt2.decode(), pt.decode())

    pk = ember.PublicKey.from_bytes(ctx, keys.public.to_bytes())
    sk = ember.SecretKey.from_bytes(ctx, keys.secret.to_bytes(export_secret=True))
    ct3 = ctx.encrypt(x, pk)
    assert -np.log2(np.abs(ctx.decrypt(ct3, sk) - x).max()) >= bound_bits(ctx.params)


def test_loaded_eval_keys_work(small, rng):
    ctx, keys = small
    fresh = ember.Context(ctx.params, threads=1)
    fresh.set_eval_keys(relin=ember.SwitchingKey.from_bytes(fresh, keys.relin.to_bytes()),
                        galois=ember.GaloisKeys.from_bytes(fresh, keys.galois.to_bytes()))
    x = rng.uniform(-1, 1, fresh.slots)
    sk = ember.SecretKey.from_bytes(fresh, keys.secret.to_bytes(export_secret=True))
    pk = ember.PublicKey.from_bytes(fresh, keys.public.to_bytes())
    ct = fresh.encrypt(x, pk)
    y = (ct * ct).rotate(1)
    assert -np.log2(np.abs(fresh.decrypt(y, sk).real - np.roll(x * x, -1)).max()) >= bound_bits(fresh.params) - 1


def test_seeded_keys_are_half_size(small):
    ctx = ember.Context(small[0].params)  # keygen registers its keys on the context: keep the fixture's
    seeded = ctx.keygen(seeded=True).relin.to_bytes()
    full = ctx.keygen(seeded=False).relin.to_bytes()
    assert 0.45 < len(seeded) / len(full) < 0.55


def test_secret_key_not_written_by_accident(small):
    _, keys = small
    with pytest.raises(ValueError, match="export_secret"):
        keys.secret.to_bytes()
    with pytest.raises(TypeError):
        pickle.dumps(keys.secret)


def test_bad_bytes_raise_value_error(small, rng):
    ctx, keys = small
    data = ctx.encrypt(rng.uniform(-1, 1, 16), keys.public).to_bytes()
    for cut in [0, 1, 4, 10, 40, 80, len(data) // 2, len(data) - 1]:
        with pytest.raises(ValueError):
            ember.Ciphertext.from_bytes(ctx, data[:cut])
    r = np.random.default_rng(5)
    for _ in range(200):
        bad = bytearray(data)
        i = int(r.integers(len(bad)))
        bad[i] ^= int(r.integers(1, 256))
        with pytest.raises(ValueError):
            ember.Ciphertext.from_bytes(ctx, bytes(bad))
    with pytest.raises(ValueError):
        ember.PublicKey.from_bytes(ctx, data)  # a ciphertext is not a public key
    other = ember.Context(ember.CkksParams(**{**SMALL, "levels": 3}))
    with pytest.raises(ValueError, match="different parameters"):
        ember.Ciphertext.from_bytes(other, data)
