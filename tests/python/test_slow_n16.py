"""N = 2^16 with the default 128-bit set (24 levels, scale 2^50, dnum 3): run with `make test-slow`."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big():
    ctx = ember.Context(ember.CkksParams(log_n=16, levels=24, log_scale=50, dnum=3), threads=2)
    return ctx, ctx.keygen(rotations=[1, -1, 16], conjugation=True)


def test_product_precision_at_least_30_bits(big):
    ctx, keys = big
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-1, 1, (2, ctx.slots))
    z = ctx.encrypt(x, keys.public) * ctx.encrypt(y, keys.public)
    err = np.abs(ctx.decrypt(z, keys.secret).real - x * y).max()
    assert -np.log2(err) >= 30


def test_demo_expression(big):
    ctx, keys = big
    x = np.random.default_rng(4).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    y = (ct * ct + 0.5 * ct).rotate(1)
    err = np.abs(ctx.decrypt(y, keys.secret).real - np.roll(x * x + 0.5 * x, -1)).max()
    assert -np.log2(err) >= 28
