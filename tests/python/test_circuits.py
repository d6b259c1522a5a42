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
    # baby steps 1..7 and the two giant-step keys +-8 (the giant steps are chained by Horner's rule)
    assert sorted(lt.rotations) == [-8] + list(range(1, 9))
    with pytest.raises(ValueError, match="values"):
        ember.LinearTransform(ctx, {0: np.ones(3)}, slots=4)
    keys = ctx.keygen(rotations=[1])
    ct = ctx.encrypt(np.zeros(64), keys.public)
    with pytest.raises(ValueError, match="no rotation key"):
        lt.apply(ct)
    with pytest.raises(ValueError, match="slots"):
        lt.apply(ctx.encrypt(np.zeros(32), keys.public))


def test_linear_transform_default_level_is_a_fresh_ciphertexts():
    """With bootstrapping levels above user_level, the default level was max_level: a transform built with the
    defaults refused every fresh ciphertext (encoded for level max_level). It is now user_level, the level of a
    fresh ciphertext (max_level when the parameters have no bootstrapping levels), for both constructors."""
    ctx = ember.Context(ember.CkksParams.bootstrappable(log_n=10, levels=3, insecure=True), threads=1)
    assert ctx.user_level < ctx.max_level
    m = np.eye(16)[::-1] * 0.5
    lt = ember.LinearTransform.from_matrix(ctx, m)
    assert lt.level == ember.LinearTransform(ctx, {0: np.ones(16)}).level == ctx.user_level
    keys = ctx.keygen(rotations=lt.rotations)
    x = np.linspace(-1, 1, 16)
    ct = ctx.encrypt(x, keys.public)
    y = lt(ct)
    assert y.level == ct.level - 1 and bits(ctx.decrypt(y, keys.secret), m @ x) >= BOUND
    # another level is still a choice, and a mismatch is an error naming both levels
    top = ember.LinearTransform.from_matrix(ctx, m, level=ctx.max_level)
    with pytest.raises(ValueError, match=f"ciphertext at level {ctx.user_level}, the transform was encoded for "
                                         f"level {ctx.max_level}"):
        top(ct)


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


def _apply_clear(factors, v):
    for f in factors:
        out = np.zeros(len(v), complex)
        for k, d in f.items():
            out += np.asarray(d) * np.roll(v, -k)
        v = out
    return v


def _bitrev(n):
    b = int(np.log2(n))
    return np.array([int(format(i, f"0{b}b")[::-1], 2) if b else 0 for i in range(n)])


@pytest.mark.parametrize("slots", [2, 8, 32])
@pytest.mark.parametrize("levels", [1, 2, 3])
def test_dft_factors_are_the_canonical_embedding(slots, levels):
    """SlotToCoeff factors applied to bit-reversed w evaluate sum_k w_k zeta_j^k at the slot roots
    zeta_j = exp(2 pi i 5^j gap / 2N) (direct O(n^2) evaluation); CoeffToSlot inverts them."""
    log_n = 8
    n2 = 2 ** (log_n + 1)
    gap = 2 ** log_n // (2 * slots)
    rng = np.random.default_rng(slots * 10 + levels)
    w = rng.normal(size=slots) + 1j * rng.normal(size=slots)
    stc = ember._ember.dft_factors(log_n, slots, levels, False)
    cts = ember._ember.dft_factors(log_n, slots, levels, True)
    assert len(stc) == len(cts) == min(levels, int(np.log2(slots)))
    assert all(len(f) <= 3 ** int(np.ceil(np.log2(slots) / levels)) for f in stc)
    roots = np.exp(2j * np.pi * np.array([pow(5, j, n2) * gap for j in range(slots)]) / n2)
    want = np.array([np.sum(w * roots[j] ** np.arange(slots)) for j in range(slots)])
    got = _apply_clear(stc, w[_bitrev(slots)])
    assert np.abs(got - want).max() < 1e-10 * slots
    assert np.abs(_apply_clear(cts, got) - w[_bitrev(slots)]).max() < 1e-12 * slots


def test_homomorphic_dft_round_trip(env):
    """CoeffToSlot then SlotToCoeff on a ciphertext as LinearTransforms (2 levels each) is the identity."""
    ctx = env
    slots = 64
    lts, level = [], ctx.max_level
    for cts in (True, False):
        for f in ember._ember.dft_factors(ctx.params.log_n, slots, 2, cts):
            lts.append(ember.LinearTransform(ctx, f, slots=slots, level=level))
            level -= 1
    keys = ctx.keygen(rotations=sorted({r for lt in lts for r in lt.rotations}))
    x = np.random.default_rng(2).uniform(-1, 1, slots)
    ct = ctx.encrypt(x, keys.public)
    for lt in lts:
        ct = lt.apply(ct)
    assert ct.level == ctx.max_level - 4
    assert bits(ctx.decrypt(ct, keys.secret), x) >= BOUND


# ---- sums of rotations (Ciphertext.rotate_sum / inner_sum): one ModUp and one ModDown per round ------------------
@pytest.mark.parametrize("stride, count, radix", [(1, 64, 2), (1, 64, 4), (1, 64, 8), (1, 32, 4), (64, 32, 4),
                                                  (-3, 16, 4), (5, 1, 4), (1, 2048, 16)])
def test_inner_sum_matches_numpy(env, stride, count, radix):
    # non-zero mean data (sums of up to 2048 values near 3: magnitudes ~ 6000): the error bound is relative to that
    ctx = env
    keys = ctx.keygen(rotations=ember.inner_sum_rotations(stride, count, radix))
    rng = np.random.default_rng(count + radix)
    x = rng.uniform(-1, 1, ctx.slots) + 3.0
    want = sum(np.roll(x, -j * stride) for j in range(count))
    got = ctx.decrypt(ctx.encrypt(x, keys.public).inner_sum(stride, count, radix), keys.secret).real
    assert bits(got / np.abs(want).max(), want / np.abs(want).max()) >= BOUND + 5


def test_inner_sum_rotations_and_rounds(env):
    assert ember.inner_sum_rotations(1, 256, 4) == [1, 2, 3, 4, 8, 12, 16, 32, 48, 64, 128, 192]
    assert ember.inner_sum_rotations(1, 256, 2) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert ember.inner_sum_rotations(2, 1, 4) == []
    assert ember.inner_sum_rotations(1, 8) == [1, 2, 4]  # default radix 2: the rotate-and-add
    ctx = env
    steps = ember.inner_sum_rotations(1, 256, 4)
    keys = ctx.keygen(rotations=steps)
    ct = ctx.encrypt(np.ones(ctx.slots), keys.public)
    # radix 4 over 256 slots: 4 rounds, each one hoisted decomposition (rotate_many_raised) and one ModDown
    with ember.graph(ctx) as g:
        ct.inner_sum(1, 256, 4)
    ops = g.op_counts()
    assert ops.get("rotate_many_raised") == 4 and ops.get("mod_down") == 4 and ops.get("rotate", 0) == 0


def test_rotate_sum_equals_rotations_added(env):
    ctx = env
    keys = ctx.keygen(rotations=[1, -1, 7])
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots) - 2.0
    ct = ctx.encrypt(x, keys.public)
    steps = [0, 1, -1, 7, 7]
    got = ctx.decrypt(ct.rotate_sum(steps), keys.secret)
    want = sum(np.roll(x, -s) for s in steps)
    assert bits(got, want) >= BOUND + 5
    serial = ct + ct.rotate(1) + ct.rotate(-1) + ct.rotate(7) + ct.rotate(7)
    assert bits(got, ctx.decrypt(serial, keys.secret)) >= BOUND + 5
    assert ctx.rotate_sum(ct, [0]).level == ct.level


def test_sums_of_rotations_refuse_bad_input(env):
    ctx = env
    keys = ctx.keygen(rotations=[1, 2])
    ct = ctx.encrypt(np.ones(ctx.slots), keys.public)
    with pytest.raises(ValueError, match="no steps"):
        ct.rotate_sum([])
    with pytest.raises(ValueError, match="rotation key"):
        ct.rotate_sum([1, 5])
    with pytest.raises(ValueError, match="power of two"):
        ct.inner_sum(1, 6, 2)
    with pytest.raises(ValueError, match="radix"):
        ct.inner_sum(1, 8, 6)
    with pytest.raises(ValueError, match="radix"):
        ct.inner_sum(1, 8, 1)
    with pytest.raises(ValueError, match="count"):
        ct.inner_sum(1, 0, 2)
    with pytest.raises(ValueError, match="stride"):
        ct.inner_sum(0, 8, 2)
    with pytest.raises(ValueError, match="rotation key"):
        ct.inner_sum(1, 8, 4)          # needs 3
    with pytest.raises(ValueError, match="count .*-8"):
        ct.inner_sum(1, -8, 2)
    with pytest.raises(ValueError, match="more than the ciphertext's 2048 slots"):
        ct.inner_sum(1, 4096, 2)
    with pytest.raises(TypeError, match="stride must be an integer"):
        ct.inner_sum(1.5, 8, 2)
    with pytest.raises(TypeError, match="step must be an integer"):
        ct.rotate_sum([1, "2"])
    with pytest.raises(TypeError, match="radix must be an integer"):
        ember.inner_sum_rotations(1, 8, 2.0)
    # another context's ciphertext is refused by this context's operations
    other = ember.Context(ember.CkksParams(**{**PARAMS, "log_n": 13}), threads=1)
    ko = other.keygen(rotations=[1])
    co = other.encrypt(np.ones(other.slots), ko.public)
    with pytest.raises(ValueError, match="another context"):
        ctx.rotate_sum(co, [0, 1])
    with pytest.raises(ValueError, match="another context"):
        ctx.inner_sum(co, 1, 2)
    with pytest.raises(ValueError, match="another context"):   # (was: "no Galois keys of this ciphertext's key set")
        ctx.rotate_many(co, [1])
    with pytest.raises(ValueError, match="another context"):
        ctx.multiply(co, co)
    # a ciphertext of another key set of this context: its own key set has no Galois keys
    bare = ctx.keygen()
    with pytest.raises(ValueError, match="rotation key"):
        ctx.encrypt(np.ones(ctx.slots), bare.public).rotate_sum([1])
    with pytest.raises(ValueError, match="radix"):
        ember.inner_sum_rotations(1, 8, 3)
