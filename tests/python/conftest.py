import numpy as np
import pytest

import ember

# Small ring for the default suite: N = 2^12, 4 levels, scale 2^40 (above the 128-bit bound for this N,
# hence insecure=True; the security check itself is tested in test_params.py).
SMALL = dict(log_n=12, levels=4, log_scale=40, first_mod_bits=50, dnum=2, insecure=True)


def bound_bits(params) -> float:
    """Stated error bound for one operation, in bits below 1, for inputs in [-1, 1].

    The dominant fresh error is the rounding of ModDown times the secret: about K * sqrt(2N/3) per
    coefficient, times sqrt(N) in the canonical embedding, times a tail factor 2^4, divided by the scale
    2^log_scale. Relinearization and rescale add errors of the same size, covered by another 2^3.
    """
    n = 2 ** params.log_n
    k = len(params.p_primes) + 1
    per_coeff = k * np.sqrt(2 * n / 3)
    return params.log_scale - np.log2(per_coeff * np.sqrt(n)) - 4 - 3


@pytest.fixture(scope="session")
def small():
    params = ember.CkksParams(**SMALL)
    ctx = ember.Context(params, threads=2)
    keys = ctx.keygen(rotations=[1, -1, 3, 5, 7, 16, 100], conjugation=True)
    return ctx, keys


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
