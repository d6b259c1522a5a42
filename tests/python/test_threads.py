"""A context, its keys and ciphertexts used from several threads at once."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import ember

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


def test_threads_share_context_keys_and_policy(small):
    """Several Python threads share one Context and its keys: products, rotations, serialization round
    trips and decryptions (plain and flooded) at once, while another thread switches the context's flooding
    policy. Deterministic results must equal the single-threaded ones bit for bit (run under ThreadSanitizer
    by `make test-tsan`)."""
    ctx, keys = small
    rng = np.random.default_rng(11)
    xs = rng.uniform(-1, 1, (4, ctx.slots))
    cts = [ctx.encrypt(x, keys.public) for x in xs]
    ref = [((c * c).rotate(1) + c).to_bytes() for c in cts]
    flood = ember.DecryptionFlooding(noise_bits=4, statistical_bits=20, queries=1)
    stop = threading.Event()

    def toggler():
        while not stop.is_set():
            ctx.set_decryption_flooding(flood)
            ctx.set_decryption_flooding(None)

    def work(i):
        c = ember.Ciphertext.from_bytes(ctx, cts[i % 4].to_bytes())
        y = (c * c).rotate(1) + c
        same = y.to_bytes() == ref[i % 4]
        # the toggler may or may not flood this one: either way it is close to the message
        err = np.abs(ctx.decrypt(y, keys.secret) - (np.roll(xs[i % 4] ** 2, -1) + xs[i % 4])).max()
        err_f = np.abs(ctx.decrypt(c, keys.secret, flooding=flood) - xs[i % 4]).max()
        return same, err, err_f

    t = threading.Thread(target=toggler)
    t.start()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(work, range(8)))
    finally:
        stop.set()
        t.join()
        ctx.set_decryption_flooding(None)
    bound = 8 * 2.0 ** -flood.precision_bits(ctx, cts[0].scale)
    for same, err, err_f in results:
        assert same, "a product computed in a thread differs from the single-threaded one"
        assert err < bound and err_f < bound
