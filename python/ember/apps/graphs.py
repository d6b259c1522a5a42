"""Application programs as graphs (symbolic runs: no keys, no arithmetic) for the simulator and the scheduler.

``graph_of(name, log_n=16)`` -> ember.graph.Graph, the contract of ``ember schedule NAME`` / ``ember graph``:

* ``lola-mnist``: the LoLa-style CNN of :mod:`ember.apps.cnn` (random weights of the trained shapes), one image;
* ``lola-cifar``: a LoLa-CIFAR-shaped network (conv 8x8 stride 2 over 3 channels -> 83 maps, square, dense
  -> 163 units, square, dense -> 10; the input in convolution representation, 3 * 64 kernel offsets by hoisted
  rotations), one image;
* ``resnet20``: ResNet-20 for CIFAR-10 after Lee et al. (ICML'22), see :func:`resnet20`;
* ``helr``: HELR training of :mod:`ember.apps.logreg` (1024 samples x 256 features), two iterations with one
  bootstrapping, as ``train_encrypted`` runs them, see :func:`helr`.

ResNet-20 (:func:`resnet20`). conv 3x3 (3 -> 16) -> 3 stages x 3 basic blocks (16, 32, 64 channels; the first
block of stages 2 and 3 has stride 2 and a 1x1 projection shortcut) -> average pool -> dense 64 -> 10; batch
normalisation is folded into the convolutions' weights and biases. The slot layout follows Lee et al.'s
multiplexed packing: every stage keeps the 32 x 32 grid, stage s with gap g = 2^s interleaves g^2 channels in
one grid (32 * 32 * 16 = 16384 slots in every stage), so a 3x3 convolution is: the 8 non-zero kernel offsets
(dy 32 + dx) g by one hoisted rotate_many, for each of the c channel diagonals i a sum of 9 plaintext products
(raw, one rescale) rotated by the multiplexed shift of channel i, and the bias: 9c mul_plain, c rescales,
c - 1 rotations, one level. ReLU(x) = x (1 + sign(x)) / 2 with sign the composite of three Chebyshev
interpolants of degrees (7, 15, 27) of odd tanh-shaped functions (Lee et al. use minimax degrees (15,
15, 27); (7, 15, 27) has depth 12 + 1 for the product with x, which fits the 15 levels of 128-bit
bootstrappable parameters at scale 2^40 with the convolution's level). A bootstrapping precedes every ReLU but
the first (the fresh input has the levels for the stem convolution and its ReLU): 18 in all.
The convolution, the ReLU and the residual block are ember.apps.resnet's (one implementation, shared with
``ember demo resnet --block``, which runs one block for real at N = 2^16 against float64).
The weights are random (there is no CIFAR-10 here): the graph, its op counts and bootstrap count are what
matters; its values are meaningless (symbolic run).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .resnet import (GRID, RELU_DEGREES, RELU_SHARPNESS, channel_shift, conv, relu, relu_coefficients,  # noqa: F401
                     relu_depth, residual_block)

RESNET_STAGES = (16, 32, 64)
RESNET_BLOCKS = 3


def _random_conv(rng, slots: int):
    """(weights, bias) of ember.apps.resnet.conv with random slot vectors (the symbolic run: values meaningless)."""
    return (lambda i, k: rng.normal(0.0, 0.1, slots)), rng.normal(0.0, 0.1, slots)


def resnet20_rotations(stages=RESNET_STAGES) -> list[int]:
    steps = set()
    for s, c in enumerate(stages):
        for gap in {1 << s, 1 << max(0, s - 1)}:
            steps |= {((dy - 1) * GRID + (dx - 1)) * gap for dy in range(3) for dx in range(3)}
            steps |= {channel_shift(i, gap) for i in range(c)}
    steps |= {1 << k for k in range(10)} | set(range(1, 10))       # average pool and the dense layer
    steps.discard(0)
    return sorted(steps)


def resnet20_program(stages=RESNET_STAGES, blocks: int = RESNET_BLOCKS, seed: int = 0):
    """program(ctx, keys) -> logits ciphertext: ResNet-20 (module docstring) with random weights."""
    def program(ctx, keys):
        rng = np.random.default_rng(seed)
        coeffs = relu_coefficients()
        x = ctx.encrypt(np.zeros(ctx.slots), keys.public)
        x = relu(conv(ctx, x, stages[0], 1, *_random_conv(rng, ctx.slots)), coeffs)   # stem: fresh levels
        for s, c in enumerate(stages):
            for b in range(blocks):
                down = s > 0 and b == 0
                gap_in = 1 << (s - 1 if down else s)
                x = residual_block(ctx, x, c, gap_in, 1 << s, _random_conv(rng, ctx.slots),
                                   _random_conv(rng, ctx.slots), coeffs,
                                   projection=_random_conv(rng, ctx.slots) if down else None)
        for k in range(10):                                           # average pool over the 32 x 32 grid
            x = x + x.rotate(1 << k)
        lvl = x.level
        q = float(ctx.params.q_primes[lvl])
        out = None
        for k in range(10):                                           # dense 64 -> 10 by diagonals
            t = ctx.multiply(x, ctx.encode(rng.normal(0.0, 0.1, ctx.slots), level=lvl, scale=q), rescale=False)
            t = t.rotate(k) if k else t
            out = t if out is None else out + t
        return out.rescale()
    return program


def resnet20_expected(stages=RESNET_STAGES, blocks: int = RESNET_BLOCKS) -> dict:
    """The structure's own arithmetic: convolutions, bootstraps, ReLUs, plaintext products and rotations."""
    convs = [(stages[0], 3)]
    for s, c in enumerate(stages):
        for b in range(blocks):
            convs += [(c, 3), (c, 3)] + ([(c, 1)] if s > 0 and b == 0 else [])
    relus = 1 + 2 * len(stages) * blocks
    identity = len(stages) * blocks - (len(stages) - 1)
    return dict(convolutions=len(convs), relus=relus, bootstraps=relus - 1, identity_shortcuts=identity,
                conv_mul_plain=sum(c * k * k for c, k in convs), dense_mul_plain=10,
                rotate_many=sum(1 for c, k in convs if k > 1),
                channel_rotations=sum(c - 1 for c, _ in convs), pool_rotations=10, dense_rotations=9)


def resnet20(log_n: int = 16, levels: int = 15, log_scale: int = 40, insecure: bool = False, seed: int = 0,
             stages=RESNET_STAGES, blocks: int = RESNET_BLOCKS, bootstrap_options: Optional[dict] = None):
    """The symbolic graph of ResNet-20 at CkksParams.bootstrappable(log_n, levels, log_scale, **bootstrap_options),
    by default the options of the block that runs for real (resnet.BLOCK_BOOTSTRAP_OPTIONS: no arcsine, which
    leaves room for dnum = 6 keys; with the arcsine these levels fit the 128-bit bound only at dnum = 33, whose
    keys do not fit this machine's memory)."""
    import ember

    from .resnet import BLOCK_BOOTSTRAP_OPTIONS
    from ember.sched.programs import capture_program
    need = relu_depth() + 1
    if levels < need + 1:
        raise ValueError(f"resnet20: a ReLU and a convolution need {need} levels and the stem one more; "
                         f"got levels={levels}")
    opts = dict(BLOCK_BOOTSTRAP_OPTIONS if bootstrap_options is None else bootstrap_options)
    params = ember.CkksParams.bootstrappable(log_n=log_n, levels=levels, log_scale=log_scale, insecure=insecure,
                                             **opts)
    g = capture_program(resnet20_program(stages, blocks, seed), params, rotations=resnet20_rotations(stages),
                        bootstrapping=True)
    g.meta["program"] = f"ResNet-20 (Lee et al. ICML'22 structure, random weights) N=2^{log_n}"
    return g


# ---- LoLa programs -----------------------------------------------------------------------------------------------
def lola_mnist(log_n: int = 14, insecure: bool = False, seed: int = 0):
    """The encrypted forward pass of ember.apps.cnn (random weights of the trained shapes), one image."""
    import ember
    from ember.graph import SymbolicContext

    from . import cnn
    params = ember.CkksParams(**{**cnn.PARAMS, "log_n": log_n, "insecure": insecure or log_n < 14})
    rng = np.random.default_rng(seed)
    model = dict(wc=rng.normal(0, 0.5, (cnn.K_MAPS, 9)), bc=rng.normal(0, 0.1, cnn.K_MAPS),
                 w1=rng.normal(0, 0.1, (cnn.HIDDEN, cnn.K_MAPS * 36)), b1=rng.normal(0, 0.1, cnn.HIDDEN),
                 w2=rng.normal(0, 0.1, (cnn.CLASSES, cnn.HIDDEN)), b2=rng.normal(0, 0.1, cnn.CLASSES))
    ctx = SymbolicContext(params)
    layout = cnn.Layout(ctx.slots, batch=1)
    baby = 16 if layout.passes > 4 else 1
    keys = ctx.keygen(rotations=layout.rotations(baby))
    em = cnn.EncryptedModel(ctx, model, layout, baby=baby)
    x = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    with ember.graph(ctx) as g:
        out = cnn.encrypted_forward(em, x)
    g.output(out, "logits")
    g.meta["program"] = f"LoLa-MNIST-style CNN (ember.apps.cnn) N=2^{log_n}"
    return g


LOLA_CIFAR = dict(channels=3, kernel=8, maps=83, hidden=163, classes=10)


def lola_cifar(log_n: int = 16, insecure: bool = False, seed: int = 0):
    """A LoLa-CIFAR-shaped network (module docstring), one image: conv as 3 * 64 hoisted kernel rotations with
    one plaintext product each per map group, square, dense layers as stacked passes (rotate-and-sum over the
    block), square, dense."""
    import ember
    from ember.sched.programs import capture_program
    sh = LOLA_CIFAR
    params = ember.CkksParams(log_n=log_n, levels=6, log_scale=40, first_mod_bits=52, dnum=3, insecure=insecure)
    slots = params.slots
    offs = sorted({c * 1024 + dy * 32 + dx for c in range(sh["channels"]) for dy in range(sh["kernel"])
                   for dx in range(sh["kernel"])} - {0})
    block = 2048                                  # 14 x 14 outputs x 83 maps do not fit 16384: 8 replicas of 2048
    sums = [1 << k for k in range(block.bit_length() - 1)]
    reps = slots // block
    rot = sorted(set(offs) | set(sums) | {block << k for k in range(reps.bit_length() - 1)})

    def program(ctx, keys):
        rng = np.random.default_rng(seed)
        x = ctx.encrypt(np.zeros(slots), keys.public)
        xs = [x] + x.rotate_many(offs)
        lvl = x.level
        q = float(ctx.params.q_primes[lvl])
        conv = None
        for xi in xs:
            p = ctx.multiply(xi, ctx.encode(rng.normal(0, 0.1, slots), level=lvl, scale=q), rescale=False)
            conv = p if conv is None else conv + p
        a = conv.rescale()
        a = a * a
        out = None
        for _ in range(-(-sh["hidden"] // reps)):           # dense 1: passes of `reps` stacked rows
            t = a * rng.normal(0, 0.1, slots)
            for s in sums:
                t = t + t.rotate(s)
            t = t * t
            t = t * rng.normal(0, 0.1, slots)
            out = t if out is None else out + t
        for k in range(reps.bit_length() - 1):
            out = out + out.rotate(block << k)
        return out
    g = capture_program(program, params, rotations=rot)
    g.meta["program"] = f"LoLa-CIFAR-shaped CNN N=2^{log_n}"
    return g


# ---- HELR training (ember.apps.logreg) ---------------------------------------------------------------------------
#: HELR's shape (Han et al. AAAI'19): a batch of 1024 samples x 256 features (bias included), 4 ciphertexts of
#: the inner-product layout and 4 lanes at N = 2^16.
HELR_SHAPE = dict(samples=1024, features=256)


class _Stop(Exception):
    """Ends train_encrypted after the iteration that bootstraps (raised from its progress callback)."""


def helr_expected(packing, momentum: bool = True) -> dict:
    """The app's own arithmetic for one cycle of train_encrypted at these levels: the plain iterations and the one
    that packs (v + i w) / B and bootstraps it (ember.apps.logreg's docstring: C log2 F + log2(F / Q) + log2 R
    rotations and Q - 1 hoisted per iteration; per inner-product ciphertext the product Z_c v, the sum
    S^2 + 3 conj(S)^2 as one mul_sum and the cubic's product, and the Q lanes' products as one mul_sum: 2C products
    and C + 1 product sums, 3C + 1 relinearizations where separate products took 4C + Q; C + 1 conjugations per
    iteration and one more to unpack)."""
    from .logreg import LEVELS_PER_ITERATION
    F, R, C, Q = packing.F, packing.R, packing.ciphertexts, packing.lanes
    log2 = lambda x: x.bit_length() - 1  # noqa: E731
    per_rot = C * log2(F) + log2(F // Q) + log2(R)
    return dict(rotations_per_iteration=per_rot, hoisted_per_iteration=Q - 1,
                rotate_many_per_iteration=int(Q > 1), products_per_iteration=2 * C,
                product_sums_per_iteration=C + 1,
                conjugations_per_iteration=C + 1, unpack_conjugations=1, bootstraps=1,
                levels_per_iteration=LEVELS_PER_ITERATION)


def helr(log_n: int = 16, samples: int = HELR_SHAPE["samples"], features: int = HELR_SHAPE["features"],
         start: int = 2, insecure: bool = False, **estimator_kw):
    """HELR training (ember.apps.logreg) as train_encrypted runs it, one bootstrapping cycle: at the default
    levels (9) one plain iteration, then the iteration with pack_bound, the bootstrapping of (v + i w) / B and
    unpack_bootstrapped -- the app's own functions, captured symbolically (zeros for the encrypted batch and
    weights). Parameters, sigmoid, schedule, B and rotation keys are EncryptedLogisticRegression's (its defaults,
    or estimator_kw: levels, weight_bound, learning_rate, decay, sigmoid_degree, sigmoid_interval,
    bootstrap_options): logreg.training_params, i.e. bootstrappable without the arcsine. The iterations are
    t = start, start + 1 of the Nesterov schedule (default 2: the steady state; t = 0 has eta = 0, no momentum
    terms). The graph's output is w after the bootstrapping; v's unpacking is in the graph too."""
    import ember

    from ember.sched.programs import capture_program

    from .logreg import (LEVELS_PER_ITERATION, EncryptedLogisticRegression, Packing, nesterov_schedule, sigmoid_poly,
                         train_encrypted, training_params)
    est = EncryptedLogisticRegression(**estimator_kw)
    per_boot = 1 + (est.levels - LEVELS_PER_ITERATION - 1) // LEVELS_PER_ITERATION   # as train_encrypted's log
    if per_boot < 1:
        raise ValueError(f"helr: levels={est.levels} leave no room for an iteration with bootstrapping "
                         f"({LEVELS_PER_ITERATION + 1} levels)")
    params = training_params(log_n, est.levels, insecure, est.bootstrap_options)
    pk = Packing(params.slots, features, samples)
    coeffs = sigmoid_poly(est.sigmoid_degree, est.sigmoid_interval)
    schedule = nesterov_schedule(start + per_boot + 1, est.learning_rate, est.decay)[start:]

    def program(ctx, keys):
        zeros = np.zeros(ctx.slots)
        batch = [ctx.encrypt(zeros, keys.public) for _ in range(pk.vectors)]
        v = ctx.encrypt(zeros, keys.public)
        w = ctx.encrypt(zeros, keys.public)
        out = {}

        def stop(t, log):
            if log.bootstraps:
                raise _Stop

        try:
            train_encrypted(v, w, [batch], [samples], pk, coeffs, schedule, est.weight_bound, progress=stop,
                            monitor=lambda t, w_ct: out.__setitem__("w", w_ct))
        except _Stop:
            pass
        else:
            raise RuntimeError("helr: train_encrypted ended without bootstrapping")
        return out["w"]

    g = capture_program(program, params, rotations=pk.rotations(), bootstrapping=True)
    g.meta["program"] = (f"HELR training (ember.apps.logreg), {samples} x {features}, iterations {start}.."
                         f"{start + per_boot - 1} with one bootstrapping, N=2^{log_n}")
    g.meta["helr"] = dict(samples=samples, features=features, iterations=per_boot, start=start,
                          ciphertexts=pk.ciphertexts, lanes=pk.lanes, levels=est.levels)
    return g


PROGRAMS = {"resnet20": resnet20, "lola-mnist": lola_mnist, "lola-cifar": lola_cifar, "helr": helr}


def graph_of(name: str, log_n: Optional[int] = None, **kw):
    """The symbolic graph of an application program (``ember schedule NAME``): resnet20, lola-mnist, lola-cifar,
    helr."""
    if name not in PROGRAMS:
        raise ValueError(f"graph_of: unknown program {name!r}; one of {', '.join(PROGRAMS)}")
    return PROGRAMS[name](**({} if log_n is None else {"log_n": log_n}), **kw)
