import pytest

import ember


def test_default_set_is_128_bit_secure():
    p = ember.CkksParams()  # N = 2^16, 24 levels, scale 2^50, dnum 3
    assert p.log_qp <= ember.max_log_qp_128(16) == 1747
    assert len(p.q_primes) == 25
    assert p.q_primes[0].bit_length() == 60
    assert all(q < 2 ** 50 for q in p.q_primes[1:])  # the IFMA range
    assert all(q % (2 * 2 ** 16) == 1 for q in list(p.q_primes) + list(p.p_primes))
    assert len(set(p.q_primes) | set(p.p_primes)) == len(p.q_primes) + len(p.p_primes)


def test_insecure_refused_with_bound():
    with pytest.raises(ValueError, match=r"128-bit security bound of 1747 bits for log_n = 16"):
        ember.CkksParams(log_n=16, levels=30)
    with pytest.raises(ValueError, match="128-bit"):
        ember.CkksParams(log_n=13, levels=10, log_scale=40)
    p = ember.CkksParams(log_n=13, levels=10, log_scale=40, insecure=True)
    assert p.log_qp > ember.max_log_qp_128(13)


@pytest.mark.parametrize("kw, word", [
    (dict(log_n=2), "log_n"),
    (dict(log_n=12, levels=2, log_scale=30, first_mod_bits=40, dnum=5, insecure=True), "dnum"),
    (dict(log_scale=70), "log_scale"),
    (dict(first_mod_bits=62), "first_mod_bits"),
    (dict(secret="gaussian"), "secret"),
    (dict(secret="hamming", hamming_weight=0), "hamming_weight"),
    (dict(levels=-1), "levels"),
    (dict(ks_margin_bits=-1), "ks_margin_bits"),
    (dict(ks_margin_bits=61), "ks_margin_bits"),
])
def test_invalid_parameters_name_the_parameter(kw, word):
    with pytest.raises(ValueError, match=word):
        ember.CkksParams(**kw)


def test_sparse_secret_has_one_name():
    """The fixed-Hamming-weight secret is "sparse" wherever users see it -- the property, to_dict and repr (they
    said "hamming", while bootstrappable, the CLI and the docs say "sparse") --; "hamming" stays accepted as
    another name for it, by both constructors, and an unknown name is refused naming both."""
    small = dict(log_n=12, levels=2, log_scale=30, first_mod_bits=40, hamming_weight=64, insecure=True)
    for secret in ("sparse", "hamming"):
        p = ember.CkksParams(secret=secret, **small)
        assert p.secret == p.to_dict()["secret"] == "sparse" and "secret=sparse(64)" in repr(p)
        assert p.recipe()["secret"] == secret and ember.CkksParams.from_recipe(p.recipe()).secret == "sparse"
        b = ember.CkksParams.bootstrappable(log_n=10, levels=2, secret=secret, hamming_weight=64, insecure=True)
        assert b.secret == "sparse" and b.hamming_weight == 64 and "secret=sparse(64)" in repr(b)
    t = ember.CkksParams(**{**small, "hamming_weight": 0})
    assert t.secret == "ternary" and "secret=ternary" in repr(t)
    with pytest.raises(ValueError, match="secret must be 'ternary' or 'sparse'.*got 'gaussian'"):
        ember.CkksParams(secret="gaussian")


def test_special_primes_follow_dnum():
    for dnum in (1, 2, 3, 4):
        p = ember.CkksParams(log_n=13, levels=5, log_scale=30, first_mod_bits=40, dnum=dnum, insecure=True)
        alpha = -(-6 // dnum)
        # P must exceed the largest digit (alpha primes of at most 40 bits) by the margin
        assert sum(q.bit_length() for q in p.p_primes) >= 30 * alpha
        assert p.alpha == alpha


def test_hash_depends_on_primes():
    a = ember.CkksParams(log_n=12, levels=3, log_scale=30, first_mod_bits=40, dnum=2, insecure=True)
    b = ember.CkksParams(log_n=12, levels=3, log_scale=31, first_mod_bits=40, dnum=2, insecure=True)
    assert a.hash() != b.hash() and len(a.hash()) == 32


def test_ks_margin_bits_default_is_the_core_default():
    assert ember.CkksParams().ks_margin_bits == ember._ember.ParamsCore().ks_margin_bits == 16


def test_ks_margin_bits_sets_the_special_modulus():
    # log2(P) >= the largest digit's bits + the margin, with the fewest special primes; SEAL's shape at N = 2^15
    # (one digit per 60/50-bit prime, one 61-bit special prime) is within the 128-bit bound without insecure.
    import math
    for margin in (0, 16, 40):
        p = ember.CkksParams(log_n=15, levels=15, dnum=16, special_mod_bits=61, ks_margin_bits=margin, insecure=True)
        log_p = sum(math.log2(q) for q in p.p_primes)
        assert log_p >= 60 + margin - 1e-9  # the largest digit is q_0, 60 bits
        assert sum(math.log2(q) for q in p.p_primes[:-1]) < 60 + margin  # one prime fewer would not do
        assert ember.CkksParams.from_recipe(p.recipe()).hash() == p.hash()
    seal = ember.CkksParams(log_n=15, levels=15, dnum=16, special_mod_bits=61, ks_margin_bits=0)
    assert len(seal.p_primes) == 1 and seal.log_qp <= ember.max_log_qp_128(15)
    other = ember.CkksParams(log_n=15, levels=15, dnum=16, special_mod_bits=61, ks_margin_bits=1, insecure=True)
    assert len(other.p_primes) == 2 and seal.hash() != other.hash()
