"""Linear transforms against a numpy matrix product, polynomials against numpy's Chebyshev evaluation."""
import numpy as np
import pytest

import ember

PARAMS = dict(log_n=12, levels=8, log_scale=40, first_mod_bits=50, dnum=3, insecure=True)


@pytest.fixture(scope="module")
def env():
    return ember.Context(ember.CkksParams(**PARAMS), threads=2)


def bits(got, want):
    return -np.log2(max(np.abs(np.asarray(got) - np.asarray(want)).max(), 2.0 ** -60))


# A transform adds the plaintext encoding error (2^-40 relative per diagonal, times the number of
# diagonals) and one rotation's key-switching noise per diagonal: 20 bits is far below both paths'
# precision (about 27 bits here) and far above what a wrong diagonal or rotation gives (< 2 bits).
BOUND = 20


@pytest.mark.parametrize("slots, diags", [
    (2048, [0, 1, 2, 5, 17, 64, -1, -3]),
    (64, list(range(64))),            # dense: baby-step giant-step with n1 = 8
    (16, [0, 3, 7]),
    (1, [0]),
])
def test_linear_transform_matches_numpy(env, slots, diags):
    ctx = env
    rng = np.random.default_rng(slots)
    m = np.zeros((slots, slots), dtype=complex)
    rows = np.arange(slots)
    for k in diags:
        m[rows, (rows + k) % slots] = rng.uniform(-1, 1, slots) + 1j * rng.uniform(-1, 1, slots)
    m /= max(1, len(diags)) ** 0.5
    lt = ember.LinearTransform.from_matrix(ctx, m)
    keys = ctx.keygen(rotations=lt.rotations)
    x = rng.uniform(-1, 1, slots) + 1j * rng.uniform(-1, 1, slots)
    ct = ctx.encrypt(x, keys.public)
    hoisted, plain = lt.apply(ct), lt.apply(ct, hoisted=False)
    assert hoisted.level == plain.level == ct.level - 1
    assert hoisted.scale == pytest.approx(ctx.scale_at(ct.level - 1))
    want = m @ x
    assert bits(ctx.decrypt(hoisted, keys.secret), want) >= BOUND
    assert bits(ctx.decrypt(plain, keys.secret), want) >= BOUND
    # the two paths agree to within their noise
    assert bits(ctx.decrypt(hoisted, keys.secret), ctx.decrypt(plain, keys.secret)) >= BOUND


def test_linear_transform_baby_steps_and_keys(env):
    ctx = env
    lt = ember.LinearTransform(ctx, {k: np.ones(64) for k in range(64)}, slots=64)
    assert lt.baby_steps == 8
    assert sorted(lt.rotations) == list(range(1, 8)) + list(range(8, 64, 8))
    with pytest.raises(ValueError, match="values"):
        ember.LinearTransform(ctx, {0: np.ones(3)}, slots=4)
    keys = ctx.keygen(rotations=[1])
    ct = ctx.encrypt(np.zeros(64), keys.public)
    with pytest.raises(ValueError, match="no rotation key"):
        lt.apply(ct)
    with pytest.raises(ValueError, match="slots"):
        lt.apply(ctx.encrypt(np.zeros(32), keys.public))


@pytest.mark.parametrize("degree", [1, 2, 3, 7, 8, 15, 31, 63])
def test_chebyshev_matches_numpy(env, degree):
    ctx = env
    keys = ctx.keygen()
    rng = np.random.default_rng(degree)
    x = rng.uniform(-1, 1, ctx.slots)
    c = ember.chebyshev_coefficients(np.exp, degree)
    ct = ctx.encrypt(x, keys.public)
    if ember.chebyshev_depth(c) > ct.level:
        with pytest.raises(ValueError, match="levels"):
            ember.evaluate_chebyshev(ct, c)
        return
    y = ember.evaluate_chebyshev(ct, c)
    assert ct.level - y.level == ember.chebyshev_depth(c) <= int(np.ceil(np.log2(degree + 1))) + 1
    assert y.scale == pytest.approx(ctx.scale_at(y.level))
    # error: each product adds about 2^-27 here and coefficients of exp are below 2.6 in sum
    assert bits(ctx.decrypt(y, keys.secret).real, np.polynomial.chebyshev.chebval(x, c)) >= 22


def test_function_on_an_interval(env):
    ctx = env
    keys = ctx.keygen()
    x = np.random.default_rng(9).uniform(-2, 2, ctx.slots)
    y = ember.evaluate_function(ctx.encrypt(x, keys.public), np.sin, 15, (-2, 2))
    # the interpolant of sin on [-2, 2] at degree 15 is exact to ~2^-40; the bound is the noise
    assert bits(ctx.decrypt(y, keys.secret).real, np.sin(x)) >= 22
