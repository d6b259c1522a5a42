"""ember.precision and the refusal of values that the modulus cannot hold (encode, constants, vectors)."""
import numpy as np
import pytest

import ember
from ember.precision import INPUT_SHAPES, input_shape


def test_precision_stats_against_known_errors():
    expected = np.zeros(8, complex)
    got = expected.copy()
    got[3] = 2.0 ** -20
    got[5] = 2.0 ** -30 * 1j
    s = ember.precision(expected, got)
    assert s.min_bits == pytest.approx(20.0) and s.worst_slot == 3 and s.slots == 8
    assert s.max_error == pytest.approx(2.0 ** -20)
    assert s.median_bits == pytest.approx(60.0)           # most slots exact: capped at 60 bits
    assert s.mean_bits == pytest.approx(-np.log2((2.0 ** -20 + 2.0 ** -30) / 8))
    assert "slot 3" in str(s)
    assert ember.precision([1.0, 2.0], [1.0, np.nan]).min_bits == 0.0
    with pytest.raises(ValueError, match="shape"):
        ember.precision([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="no values"):
        ember.precision([], [])


def test_input_shapes_lie_in_the_unit_box():
    for name in INPUT_SHAPES:
        z = input_shape(name, 64, 1)
        assert z.shape == (64,) and np.all(np.abs(z.real) <= 1) and np.all(np.abs(z.imag) <= 1), name
    with pytest.raises(ValueError, match="unknown input shape"):
        input_shape("gaussian", 8)


@pytest.fixture(scope="module")
def small():
    ctx = ember.Context(ember.CkksParams(log_n=13, levels=3, log_scale=40, dnum=2, insecure=True), threads=2)
    return ctx, ctx.keygen()


def test_encoding_refuses_values_beyond_the_modulus(small):
    ctx, keys = small
    with pytest.raises(ValueError) as e:
        ctx.encrypt(np.full(ctx.slots, 1e60), keys.public)
    msg = str(e.value)
    assert "1e+60" in msg and "scale 2^40" in msg and "modulus bound" in msg
    with pytest.raises(ValueError, match="modulus bound"):
        ctx.encode(np.full(8, 1e60))
    # just inside the bound at the top level: Q / 2 over 4 primes is ~2^169, so 2^100 at scale 2^40 fits
    z = np.full(8, 2.0 ** 100)
    got = ctx.decrypt(ctx.encrypt(z, keys.public), keys.secret).real
    assert np.abs(got / z - 1).max() < 2.0 ** -20
    # at level 0 (q0, 60 bits) the same value cannot be held
    with pytest.raises(ValueError, match=r"level 0"):
        ctx.encrypt(z, keys.public, level=0)


def test_constants_and_vectors_beyond_the_modulus_are_refused(small):
    ctx, keys = small
    ct = ctx.encrypt(np.full(8, 0.5), keys.public)
    for op in (lambda: ct * 1e60, lambda: ct + 1e60, lambda: ct * np.full(8, 1e60), lambda: ct * (1e60 + 1e60j)):
        with pytest.raises(ValueError, match="modulus bound"):
            op()
    # ordinary constants still work
    assert np.abs(ctx.decrypt(ct * 3.25, keys.secret).real - 1.625).max() < 2.0 ** -20
