"""Symbolic capture: the same program on a SymbolicContext (no keys, no arithmetic) gives exactly the graph of
the live run."""
import numpy as np
import pytest

import ember
from ember.graph import SymbolicContext

PARAMS = dict(log_n=12, levels=6, log_scale=40, insecure=True)
BOOT = dict(log_n=12, levels=2, slots=16, insecure=True)
ROT = [1, 3, -2]


def program(ctx, keys, x, y):
    """A bit of everything the Python API offers: operators with ciphertexts, numbers and vectors, plaintexts,
    rotations (single, hoisted, conjugation), a polynomial and a linear transform."""
    w = np.linspace(-0.5, 0.5, x.slots)
    a = x * y + 0.25 * x - 3 * y + w
    b = a.rotate(1) + a.conjugate()
    r = b.rotate_many([3, -2, 0])
    c = r[0] * r[1] + r[2] * ctx.encode(w, level=r[2].level)  # rescaled like every product
    d = ember.evaluate_chebyshev(c, [0.1, 0.5, 0.0, 0.25])
    lt = ember.LinearTransform(ctx, {0: w, 1: w[::-1], -2: np.ones(x.slots)}, level=d.level)
    return lt.apply(d) - 1.5


def live_and_symbolic(params, run, rotations=(), bootstrapping=False):
    graphs = []
    for make in (lambda p: ember.Context(p), SymbolicContext):
        ctx = make(params)
        keys = ctx.keygen(rotations=rotations, conjugation=True, bootstrapping=bootstrapping)
        with ember.graph(ctx) as g:
            out = run(ctx, keys)
            g.output(out, "out")
        graphs.append(g)
    return graphs


def test_live_and_symbolic_graphs_are_identical():
    def run(ctx, keys):
        rng = np.random.default_rng(3)
        x = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public)
        y = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public)
        return program(ctx, keys, x, y)
    live, sym = live_and_symbolic(ember.CkksParams(**PARAMS), run, rotations=ROT + [-1, 2])
    assert live.meta["mode"] == "live" and sym.meta["mode"] == "symbolic"
    assert len(live) >= 15
    assert live.structure() == sym.structure()
    assert all(n.counts is None and n.seconds is None for n in sym.nodes)
    assert sum(n.counts["mod_mul"] for n in live.nodes) > 0


def test_bootstrapping_live_and_symbolic_identical():
    def run(ctx, keys):
        x = ctx.encrypt(np.full(16, 0.3), keys.public)
        y = x.bootstrap()
        return (y * y).rotate(1)
    live, sym = live_and_symbolic(ember.CkksParams.bootstrappable(**BOOT), run, rotations=[1], bootstrapping=True)
    assert len(live) >= 100 and live.structure() == sym.structure()


def test_symbolic_runs_circuits_without_data():
    ctx = SymbolicContext(ember.CkksParams(**PARAMS))
    keys = ctx.keygen(rotations=[1])
    assert keys.secret is None and keys.public is None
    x = ctx.placeholder(level=3, slots=64)
    assert (x.level, x.slots, x.scale) == (3, 64, ctx.scale_at(3))
    y = x * x
    assert (y.level, y.slots) == (2, 64)
    with pytest.raises(ValueError, match="nothing to decrypt"):
        ctx.decrypt(y, None)
    with pytest.raises(ValueError, match="no rotation key for 5"):
        y.rotate(5)  # missing keys are still errors
    with pytest.raises(ValueError, match="slots"):
        ctx.placeholder(slots=3)
    with pytest.raises(ValueError, match="level"):
        ctx.placeholder(level=ctx.max_level + 1)
    with pytest.raises(ValueError, match="scale"):
        ctx.placeholder(scale=-1.0)
    real = ember.Context(ember.CkksParams(**PARAMS))
    with pytest.raises(ValueError, match="symbolic"):
        ember._ember.placeholder_ciphertext(real._core, 1, 2.0 ** 40, 8)


@pytest.mark.slow
def test_symbolic_n16_bootstrapping_in_seconds():
    import time
    t0 = time.perf_counter()
    ctx = SymbolicContext(ember.CkksParams.bootstrappable(log_n=16))
    ctx.keygen(bootstrapping=True)
    with ember.graph(ctx) as g:
        ctx.placeholder(level=0).bootstrap()
    assert len(g) >= 200 and g.meta["params"]["log_n"] == 16
    assert time.perf_counter() - t0 < 60  # a generous bound: the point is that no arithmetic runs
