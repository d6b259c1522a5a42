"""Objects that know where they belong (issue 16): every row of the issue's table of silent wrong answers
and confusing errors, now a clear error or the right result. Contexts A (N = 2^12) and B (N = 2^13)."""
import numpy as np
import pytest

import ember
from conftest import SMALL, bound_bits

SMALL_B = dict(SMALL, log_n=13)


@pytest.fixture(scope="module")
def two():
    A = ember.Context(ember.CkksParams(**SMALL))
    B = ember.Context(ember.CkksParams(**SMALL_B))
    return A, A.keygen(rotations=[1]), B, B.keygen(rotations=[1])


def max_err(got, want):
    return float(np.abs(np.asarray(got) - np.asarray(want)).max())


def tol(ctx):
    return 2.0 ** -bound_bits(ctx.params)


def vec(ctx, seed=0, n=None):
    r = np.random.default_rng(seed)
    n = n or ctx.slots
    return r.uniform(-1, 1, n) + 1j * r.uniform(-1, 1, n)


# --- A.decrypt(ct_from_A, secret_key_from_B): accepted, returned garbage ------------------------------------------
def test_decrypt_with_the_secret_key_of_another_context(two):
    A, ka, B, kb = two
    ct = A.encrypt(vec(A), ka.public)
    with pytest.raises(ValueError, match="secret key belongs to another context: log_n 13 vs 12"):
        A.decrypt(ct, kb.secret)


def test_decrypt_with_another_secret_key_of_the_same_context(two):
    A, ka, _, _ = two
    other = A.keygen()
    ct = A.encrypt(vec(A), ka.public)
    with pytest.raises(ValueError, match="secret key is not the one this ciphertext was encrypted for"):
        A.decrypt(ct, other.secret)
    assert max_err(A.decrypt(ct, ka.secret), vec(A)) < tol(A)  # the right key still works


# --- A.keygen() a second time, then ct * ct on an older ciphertext: the new relin key replaced the old one --------
def test_second_keygen_does_not_change_older_ciphertexts():
    A = ember.Context(ember.CkksParams(**SMALL))
    k1 = A.keygen(rotations=[1])
    x = vec(A, 1)
    ct = A.encrypt(x, k1.public)
    k2 = A.keygen(rotations=[1])  # registers a second key set
    assert ct.key_id == k1.secret._core.key_id != k2.secret._core.key_id
    # products and rotations of ct use the keys of ct's own key set
    assert max_err(A.decrypt(ct * ct, k1.secret), x * x) < 4 * tol(A)
    assert max_err(A.decrypt(ct.rotate(1), k1.secret), np.roll(x, -1)) < 2 * tol(A)
    # ciphertexts of the second key set use the second keys
    ct2 = A.encrypt(x, k2.public)
    assert max_err(A.decrypt(ct2 * ct2, k2.secret), x * x) < 4 * tol(A)
    # mixing the two key sets is refused
    with pytest.raises(ValueError, match="different key sets"):
        ct * ct2
    with pytest.raises(ValueError, match="different key sets"):
        ct + ct2
    # a sum of products: an addend of the other key set is refused, whichever key set the products are in
    raw2 = A.multiply(ct2, ct2, rescale=False)
    with pytest.raises(ValueError, match="addend was encrypted under another key set"):
        A.multiply_sum([(ct, ct)], addend=raw2)
    raw = A.multiply(ct, ct, rescale=False)
    assert max_err(A.decrypt(A.multiply_sum([(ct, ct)], addend=raw), k1.secret), 2 * x * x) < 6 * tol(A)


# --- p.log_n = 12 on CkksParams(log_n=13): silently ignored ----------------------------------------------------------
def test_params_are_immutable():
    p = ember.CkksParams(**SMALL_B)
    with pytest.raises(AttributeError, match="immutable"):
        p.log_n = 12
    with pytest.raises(AttributeError, match="immutable"):
        p.levels = 2
    assert p.log_n == 13 and ember.Context(p).slots == 2 ** 12
    b = ember.CkksParams.bootstrappable(log_n=12, levels=2, slots=16, insecure=True)
    with pytest.raises(AttributeError, match="immutable"):
        b.bootstrap_config = None


# --- ct * plaintext did not rescale, every other * did ----------------------------------------------------------------
def test_times_plaintext_rescales_like_every_product(two):
    A, ka, _, _ = two
    x, y = vec(A, 2), vec(A, 3)
    ct = A.encrypt(x, ka.public)
    pt = A.encode(y)
    by_pt, by_ct, by_vec = ct * pt, ct * A.encrypt(y, ka.public), ct * y
    for r in (by_pt, by_ct, by_vec):
        assert r.level == ct.level - 1
        assert r.scale == pytest.approx(A.scale_at(ct.level - 1), rel=1e-12)
        assert max_err(A.decrypt(r, ka.secret), x * y) < 4 * tol(A)
    # the product without the rescale is explicit in the name
    raw = A.multiply(ct, pt, rescale=False)
    assert raw.level == ct.level and raw.scale == pytest.approx(ct.scale * pt.scale)
    assert max_err(A.decrypt(raw, ka.secret), x * y) < 4 * tol(A)
    assert (ct * 3).level == ct.level  # integers: exact, no level


# --- ct - plaintext: TypeError ----------------------------------------------------------------------------------------
def test_minus_plaintext(two):
    A, ka, _, _ = two
    x, y = vec(A, 4), vec(A, 5)
    ct = A.encrypt(x, ka.public)
    d = ct - A.encode(y)
    assert d.level == ct.level
    assert max_err(A.decrypt(d, ka.secret), x - y) < tol(A)
    assert max_err(A.decrypt(A.encode(y) - ct, ka.secret), y - x) < tol(A)


# --- operands of another context: refused, but with messages that did not say so ---------------------------------------
def test_operands_of_another_context_are_named(two):
    A, ka, B, kb = two
    ct_a = A.encrypt(vec(A, 6), ka.public)
    ct_b = B.encrypt(vec(B, 6), kb.public)
    with pytest.raises(ValueError, match="ciphertext belongs to another context: log_n 13 vs 12"):
        A.decrypt(ct_b, ka.secret)
    with pytest.raises(ValueError, match="public key belongs to another context: log_n 13 vs 12"):
        A.encrypt(vec(A, 6), kb.public)
    with pytest.raises(ValueError, match="ciphertext belongs to another context: log_n 13 vs 12"):
        A.multiply(ct_a, ct_b)
    with pytest.raises(ValueError, match="ciphertext belongs to another context: log_n 13 vs 12"):
        A.multiply_sum([(ct_a, ct_a)], addend=B.multiply(ct_b, ct_b, rescale=False))
    with pytest.raises(ValueError, match="another context"):
        ct_a + ct_b
    with pytest.raises(ValueError, match="plaintext belongs to another context"):
        ct_a + B.encode(vec(B, 6))
    with pytest.raises(ValueError, match="another context"):
        ct_a * B.encode(vec(B, 6))
    # the same parameters in another Context object: named as such
    A2 = ember.Context(ember.CkksParams(**SMALL))
    with pytest.raises(ValueError, match="same parameters, another Context object"):
        A2.encrypt(vec(A), ka.public)


def test_other_levels_of_the_prime_chain_are_named():
    A = ember.Context(ember.CkksParams(**SMALL))
    C = ember.Context(ember.CkksParams(**dict(SMALL, levels=3)))
    ka, kc = A.keygen(), C.keygen()
    with pytest.raises(ValueError, match="another context: 4 vs 5 primes in Q"):
        A.decrypt(C.encrypt(vec(C), kc.public), ka.secret)


# --- identity survives serialisation -------------------------------------------------------------------------------
def test_identity_survives_serialisation(two):
    A, ka, _, _ = two
    x = vec(A, 7)
    ct = A.encrypt(x, ka.public)
    # another process: a fresh context with the same parameters, keys and ciphertexts as bytes
    F = ember.Context(ember.CkksParams(**SMALL))
    sk = ember.SecretKey.from_bytes(F, ka.secret.to_bytes(export_secret=True))
    relin = ember.SwitchingKey.from_bytes(F, ka.relin.to_bytes())
    galois = ember.GaloisKeys.from_bytes(F, ka.galois.to_bytes())
    back = ember.Ciphertext.from_bytes(F, ct.to_bytes())
    assert back.key_id == ct.key_id == sk._core.key_id == relin._core.key_id == galois._core.key_id != 0
    F.set_eval_keys(relin, galois)
    assert max_err(F.decrypt(back * back, sk), x * x) < 4 * tol(A)
    other = F.keygen()
    with pytest.raises(ValueError, match="not the one this ciphertext was encrypted for"):
        F.decrypt(back, other.secret)
    with pytest.raises(ValueError, match="different key sets"):
        back + F.encrypt(x, other.public)
    # keys of two key sets cannot be registered as one
    with pytest.raises(ValueError, match="different key sets"):
        F.set_eval_keys(relin, other.galois)
