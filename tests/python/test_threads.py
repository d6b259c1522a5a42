"""A context, its keys and ciphertexts used from several threads at once."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from conftest import bound_bits


def test_concurrent_operations(small):
    ctx, keys = small
    rng = np.random.default_rng(7)
    xs = rng.uniform(-1, 1, (8, ctx.slots))
    cts = [ctx.encrypt(x, keys.public) for x in xs]

    def work(i):
        c = cts[i]
        return i, (c * c).rotate(1) + c.rotate_many([3])[0]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(8)))
    for i, ct in results:
        x = xs[i]
        want = np.roll(x * x, -1) + np.roll(x, -3)
        err = np.abs(ctx.decrypt(ct, keys.secret) - want).max()
        assert -np.log2(err) >= bound_bits(ctx.params) - 2
