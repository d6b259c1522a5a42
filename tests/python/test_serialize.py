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


# ---- format version 2: encodings, buffers, the fast checksum, format 1 still loading ----------------------------------

def test_encodings_buffers_and_format_1(small, rng):
    """Every encoding and version decrypts to the same values (float64 reference, error < 2^-20 as fresh
    encryptions here); bytes are read in place from any buffer and written straight into one."""
    import mmap
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots) * 100 + 3.0       # non-zero mean, large values
    ct = ctx.encrypt(x, keys.public)
    words, packed, v1 = ct.to_bytes(), ct.to_bytes(compact=True), ct.to_bytes(version=1)
    assert words[4] == 2 and packed[4] == 2 and v1[4] == 1
    assert len(packed) < len(words) and len(v1) == len(packed) - 2 + 24    # no encoding bytes, 32-byte SHA-256
    assert ct.serialized_size() == len(words) and ct.serialized_size(compact=True) == len(packed)
    m = mmap.mmap(-1, len(words))
    assert ct.write_into(memoryview(m)) == len(words)
    assert m[:] == words
    for data in (words, packed, v1, bytearray(words), memoryview(words), m, memoryview(m), np.frombuffer(words, np.uint8)):
        back = ember.Ciphertext.from_bytes(ctx, data)
        assert back.to_bytes() == words                        # canonical, bit-identical
        assert np.abs(back.decrypt(keys.secret).real - x).max() < 100 * 2.0 ** -20
    with pytest.raises(ValueError, match="exactly"):
        ct.write_into(bytearray(len(words) - 1))
    with pytest.raises(TypeError):
        ct.write_into(words)                                   # read-only
    with pytest.raises(TypeError):
        ember.Ciphertext.from_bytes(ctx, "not bytes")
    with pytest.raises(ValueError, match="packed coefficients only"):
        ct.to_bytes(compact=False, version=1)
    # keys: packed by default, words on request, format 1 too; all load and work
    relin = [keys.relin.to_bytes(), keys.relin.to_bytes(compact=False), keys.relin.to_bytes(version=1)]
    assert len(relin[0]) < len(relin[1])
    for b in relin:
        fresh = ember.Context(ctx.params, threads=1)
        sk = ember.SecretKey.from_bytes(fresh, keys.secret.to_bytes(export_secret=True))
        fresh.set_eval_keys(relin=ember.SwitchingKey.from_bytes(fresh, b))
        y = ember.Ciphertext.from_bytes(fresh, words)
        assert np.abs((y * y).decrypt(sk).real - x * x).max() < 1e4 * 2.0 ** -15


def test_corrupted_format_2_bytes(small, rng):
    """A corrupted byte anywhere is refused (checksum64 catches every error within one 64-bit word); a
    coefficient at or above its prime with a recomputed checksum is refused by the coefficient check."""
    ctx, keys = small
    data = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public).to_bytes()
    r = np.random.default_rng(11)
    for i in list(r.integers(0, len(data), 300)) + [0, 4, 6, 48, 70, 71, len(data) - 1]:
        bad = bytearray(data)
        bad[int(i)] ^= 1 << int(r.integers(8))
        with pytest.raises(ValueError):
            ember.Ciphertext.from_bytes(ctx, bad)
    bad = bytearray(data)
    bad[71 + 7] ^= 0x80                                        # c0's first coefficient's top bit
    with pytest.raises(ValueError, match="checksum mismatch"):
        ember.Ciphertext.from_bytes(ctx, bad)
    n = len(data) - 8
    bad[n:] = ember.context.checksum64(bad[:n]).to_bytes(8, "little")   # resealed: the coefficient check
    with pytest.raises(ValueError, match="must be below its prime"):
        ember.Ciphertext.from_bytes(ctx, bad)
    bad = bytearray(data)
    bad[4] = 3                                                 # a future version
    with pytest.raises(ValueError, match="format version must be 1 or 2"):
        ember.Ciphertext.from_bytes(ctx, bad)


def test_params_pickle_as_their_recipe():
    """CkksParams pickle (a fitted estimator holds its parameters): the copy is the same set -- primes, bounds,
    bootstrapping configuration -- rebuilt from recipe() and validated again."""
    for p in (ember.CkksParams(**SMALL), ember.CkksParams.bootstrappable(log_n=11, levels=3, insecure=True)):
        q = pickle.loads(pickle.dumps(p))
        assert repr(q) == repr(p) and q.recipe() == p.recipe() and q.to_dict() == p.to_dict()
        assert list(q.q_primes) == list(p.q_primes) and (q.bootstrap_config is None) == (p.bootstrap_config is None)
