"""Every CKKS operation against the same computation in float64 numpy, with the bound of conftest."""
import numpy as np
import pytest

import ember
from conftest import bound_bits


def err_bits(got, want):
    e = np.abs(np.asarray(got) - np.asarray(want)).max()
    return -np.log2(max(e, 2.0 ** -60))


def check(ctx, keys, ct, want, extra_bits=0.0):
    got = ctx.decrypt(ct, keys.secret)
    assert got.shape == np.shape(want)
    bits = err_bits(got, want)
    assert bits >= bound_bits(ctx.params) - extra_bits, f"precision {bits:.1f} bits below the bound"
    return bits


def test_encrypt_decrypt_public_and_secret(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    check(ctx, keys, ctx.encrypt(x, keys.public), x)
    check(ctx, keys, ctx.encrypt(x, keys.secret), x)


@pytest.mark.parametrize("slots", [1, 2, 8, 256, 2048])
def test_sparse_slots(small, rng, slots):
    ctx, keys = small
    x = rng.uniform(-1, 1, slots)
    ct = ctx.encrypt(x, keys.public)
    assert ct.slots == slots
    check(ctx, keys, ct, x)
    check(ctx, keys, ct * ct, x * x, extra_bits=1)
    if slots > 1:
        check(ctx, keys, ct.rotate(1), np.roll(x, -1))
        check(ctx, keys, ct.rotate(-1), np.roll(x, 1))


def test_add_sub_negate(small, rng):
    ctx, keys = small
    x, y = rng.uniform(-1, 1, (2, ctx.slots))
    cx, cy = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    check(ctx, keys, cx + cy, x + y)
    check(ctx, keys, cx - cy, x - y)
    check(ctx, keys, -cx, -x)
    check(ctx, keys, cx + 0.25, x + 0.25)
    check(ctx, keys, 0.25 - cx, 0.25 - x)
    check(ctx, keys, cx + (1 + 2j), x + (1 + 2j))
    check(ctx, keys, cx + y, x + y)
    check(ctx, keys, cx - y, x - y)


def test_mul_paths(small, rng):
    ctx, keys = small
    x, y = rng.uniform(-1, 1, (2, ctx.slots))
    cx, cy = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    merged = ctx.multiply(cx, cy, merged=True)
    plain = ctx.multiply(cx, cy, merged=False)
    assert merged.level == plain.level == cx.level - 1
    assert merged.scale == pytest.approx(ctx.scale_at(cx.level - 1), rel=1e-12)
    check(ctx, keys, merged, x * y, extra_bits=1)
    check(ctx, keys, plain, x * y, extra_bits=1)
    unrescaled = ctx.multiply(cx, cy, rescale=False)
    assert unrescaled.level == cx.level
    check(ctx, keys, unrescaled.rescale(), x * y, extra_bits=1)


def test_multiply_sum(small, rng):
    # sum of products, one relinearization: against numpy, as precise as a product (4 terms of |x y| <= 1: 2 bits
    # of growth allowed), on the level and scale of one product; misuse is a clear error
    ctx, keys = small
    xs, ys = rng.uniform(-1, 1, (2, 4, ctx.slots))
    cxs = [ctx.encrypt(x, keys.public) for x in xs]
    cys = [ctx.encrypt(y, keys.public) for y in ys]
    want = (xs * ys).sum(axis=0)
    for merged in (True, False):
        r = ctx.multiply_sum(zip(cxs, cys), merged=merged)
        assert r.level == cxs[0].level - 1
        assert r.scale == pytest.approx(ctx.scale_at(r.level), rel=1e-12)
        check(ctx, keys, r, want, extra_bits=3)
    with pytest.raises(ValueError, match="no products"):
        ctx.multiply_sum([])
    with pytest.raises(TypeError, match="pairs"):
        ctx.multiply_sum([cxs[0]])
    with pytest.raises(ValueError, match="level"):
        ctx.multiply_sum([(cxs[0], cys[0]), (cxs[1].rescale(), cys[1].rescale())])
    # an addend on the products' level and scale is summed before the one rescale
    raw = ctx.multiply(cxs[2], cys[2], rescale=False)
    r = ctx.multiply_sum(zip(cxs[:2], cys[:2]), addend=raw)
    assert r.level == cxs[0].level - 1
    check(ctx, keys, r, (xs[:3] * ys[:3]).sum(axis=0), extra_bits=3)
    with pytest.raises(ValueError, match="addend.*scale"):
        ctx.multiply_sum(zip(cxs[:2], cys[:2]), addend=cxs[3])
    with pytest.raises(TypeError, match="addend"):
        ctx.multiply_sum(zip(cxs[:2], cys[:2]), addend=xs[0])


def test_mul_constants_and_vectors(small, rng):
    ctx, keys = small
    x, y = rng.uniform(-1, 1, (2, ctx.slots))
    cx = ctx.encrypt(x, keys.public)
    three = cx * 3
    assert three.level == cx.level  # integers consume no level
    check(ctx, keys, three, 3 * x, extra_bits=2)
    half = 0.5 * cx
    assert half.level == cx.level - 1 and half.scale == pytest.approx(ctx.scale_at(cx.level - 1))
    check(ctx, keys, half, 0.5 * x)
    check(ctx, keys, cx * (0.5 - 0.25j), x * (0.5 - 0.25j))
    check(ctx, keys, cx * y, x * y)
    check(ctx, keys, y * cx, x * y)


def test_expression_with_level_alignment(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots)
    cx = ctx.encrypt(x, keys.public)
    check(ctx, keys, (cx * cx + 0.5 * cx).rotate(1), np.roll(x * x + 0.5 * x, -1), extra_bits=1)
    check(ctx, keys, cx * cx + cx, x * x + x, extra_bits=1)  # cx at a higher level is brought down exactly
    check(ctx, keys, (cx * cx) * cx, x ** 3, extra_bits=2)


def test_depth_to_level_zero(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots)
    ct, want = ctx.encrypt(x, keys.public), x.copy()
    while ct.level > 0:
        ct, want = ct * ct, want * want
    check(ctx, keys, ct, want, extra_bits=4)
    with pytest.raises(ValueError, match="level"):
        ct * ct


def test_rotations_and_conjugate(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    cx = ctx.encrypt(x, keys.public)
    for r in (1, -1, 3, 16, 100):
        check(ctx, keys, cx.rotate(r), np.roll(x, -r))
    check(ctx, keys, cx.rotate(0), x)
    check(ctx, keys, cx.conjugate(), np.conj(x))
    with pytest.raises(ValueError, match="no rotation key for 2 slots"):
        cx.rotate(2)


def test_rotate_many_matches_rotate(small, rng):
    ctx, keys = small
    x = rng.uniform(-1, 1, ctx.slots)
    cx = ctx.encrypt(x, keys.public)
    steps = [1, 3, 5, 7, -1, 0]
    many = cx.rotate_many(steps)
    for s, c in zip(steps, many):
        one = ctx.decrypt(cx.rotate(s), keys.secret)
        hoisted = ctx.decrypt(c, keys.secret)
        check(ctx, keys, c, np.roll(x, -s))
        assert err_bits(hoisted, one) >= bound_bits(ctx.params)
    with pytest.raises(ValueError, match="no rotation key"):
        cx.rotate_many([1, 2])


def test_bad_inputs_raise(small):
    ctx, keys = small
    with pytest.raises(ValueError, match="power of two"):
        ctx.encrypt(np.zeros(3), keys.public)
    with pytest.raises(ValueError, match="power of two"):
        ctx.encrypt(np.zeros(ctx.slots * 2), keys.public)
    with pytest.raises(ValueError, match="1-D"):
        ctx.encrypt(np.zeros((2, 2)), keys.public)
    with pytest.raises(ValueError, match="NaN"):
        ctx.encrypt(np.array([np.nan, 0.0]), keys.public)
    with pytest.raises(TypeError):
        ctx.encrypt(np.zeros(4), "not a key")
    a = ctx.encrypt(np.zeros(4), keys.public)
    b = ctx.encrypt(np.zeros(8), keys.public)
    with pytest.raises(ValueError, match="slot"):
        a + b
    with pytest.raises(ValueError, match="values"):
        a + np.zeros(8)
    other = ember.Context(ctx.params, threads=1)
    with pytest.raises(ValueError, match="another context"):
        a + other.encrypt(np.zeros(4), other.keygen().public)


def test_secret_key_is_not_printed(small):
    _, keys = small
    assert "hidden" in repr(keys.secret)
