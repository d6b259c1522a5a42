"""ResNet-20's building blocks (Lee et al., ICML'22 layout) and the symbolic graph of the whole network.

The blocks: the multiplexed convolution, the composite ReLU, the basic residual block; the graph:
``graph_of("resnet20")``.

The ONE implementation of the convolution (:func:`conv`), the composite ReLU (:func:`relu`) and the basic
residual block (:func:`residual_block`): :func:`resnet20_program` runs them symbolically (random slot vectors,
the graph), :func:`ember.apps.resnet.run_block` runs one block on a real :class:`ember.Context` at N = 2^16 against
float64, and :class:`ember.apps.resnet.PlainContext` runs them in float64 on numpy (the "plain twin": same code,
no encryption). The layout, the convolution and the ReLU are described in ``ember.apps.resnet``.

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
The weights are random (there is no CIFAR-10 here): the graph, its op counts and bootstrap count are what
matters; its values are meaningless (symbolic run).
"""
from __future__ import annotations

import contextlib
from typing import Callable, Optional

import numpy as np

from ...circuits import chebyshev_coefficients, chebyshev_depth, evaluate_chebyshev
from ...params import CkksParams
from ..symbolic import capture_program

GRID = 32


RELU_DEGREES = (7, 15, 27)


RELU_SHARPNESS = (4.0, 8.0, 6.0)


#: Bootstrapping options of the real block. Without the arcsine, EvalMod needs 4 fewer 60-bit levels: at
#: levels=15, log_scale=40 the special primes grow from 2 to 6 within the 128-bit bound on log QP and dnum falls
#: from 33 to 6, one switching key from 1.13 GiB to 0.21 GiB. With the arcsine the ~25 bootstrapping keys alone
#: need ~28 GiB (killed for memory on this 23 GiB machine); the price is precision: ~18-19 bits instead of 25.
BLOCK_BOOTSTRAP_OPTIONS: dict = {"arcsin": False}


# ---- the composite ReLU --------------------------------------------------------------------------------------------
def relu_coefficients() -> list[np.ndarray]:
    """Return the Chebyshev coefficients on [-1, 1] of the three stages of the composite sign.

    The interpolants of tanh(k x) / tanh(k) (k = RELU_SHARPNESS, degrees RELU_DEGREES), each divided by its own
    maximum on [-1, 1] so that every stage maps [-1, 1] into [-1, 1] (an interpolant overshoots 1 by up to 4 %,
    and the next stage, evaluated outside [-1, 1], would blow up). The sharpness (4, 8, 6) minimises the ReLU's
    error on a grid of choices: max |x (1 + sign x) / 2 - max(x, 0)| = 9.1e-4 on [-1, 1]
    (tests/python/test_apps.py).

    Returns
    -------
    list of numpy.ndarray
        The three stages' coefficients.
    """
    z = np.linspace(-1.0, 1.0, 20001)
    out = []
    for d, k in zip(RELU_DEGREES, RELU_SHARPNESS):
        c = chebyshev_coefficients(lambda x, k=k: np.tanh(k * x) / np.tanh(k), d)
        out.append(c / np.abs(np.polynomial.chebyshev.chebval(z, c)).max())
    return out


def relu_depth() -> int:
    """Return the levels the composite ReLU takes: the three Chebyshev stages and the product with x.

    Returns
    -------
    int
        The depth.
    """
    return sum(chebyshev_depth(c) for c in relu_coefficients()) + 1


def relu_stages(coeffs):
    """Return the stages as evaluated: the last one's coefficients halved and 1/2 added to T0 ((1 + sign) / 2).

    Parameters
    ----------
    coeffs : list of array_like
        The stages' Chebyshev coefficients (:func:`relu_coefficients`).

    Returns
    -------
    list of numpy.ndarray
        The stages' coefficients, copied.
    """
    out = [np.asarray(c, dtype=np.float64) for c in coeffs]
    out[-1] = out[-1] * 0.5
    out[-1][0] += 0.5
    return out


def relu(x, coeffs):
    """Return x (1 + sign x) / 2: the composite sign, then one product with x.

    Parameters
    ----------
    x : ember.Ciphertext
        The input, or a value with a ``chebyshev(c)`` method of its own, such as ember.apps.resnet.PlainVector.
    coeffs : list of array_like
        The stages' Chebyshev coefficients (:func:`relu_coefficients`).

    Returns
    -------
    ember.Ciphertext
        The ReLU (of the type of `x`).
    """
    s = x
    for c in relu_stages(coeffs):
        s = s.chebyshev(c) if hasattr(s, "chebyshev") else evaluate_chebyshev(s, c)
    xs = x.drop_to_level(s.level) if x.level > s.level else x
    return xs * s


# ---- the convolution and the block ---------------------------------------------------------------------------------
def channel_shift(i: int, gap: int, grid: int = GRID) -> int:
    """Return the slot shift of channel i in the multiplexed grid with gap `gap` (gap^2 channels per grid).

    Parameters
    ----------
    i : int
        The channel.
    gap : int
        The gap.
    grid : int, optional
        The grid's side (default GRID).

    Returns
    -------
    int
        The shift.
    """
    per = gap * gap
    return (i // per) * grid * grid + ((i % per) // gap) * grid + (i % gap)


def kernel_offsets(kernel: int, gap: int, grid: int = GRID) -> list[tuple[int, int, int]]:
    """Return (dy, dx, slot offset) of each offset of a kernel x kernel convolution, dy-major.

    Parameters
    ----------
    kernel : int
        The kernel's side.
    gap : int
        The gap of the multiplexed grid.
    grid : int, optional
        The grid's side (default GRID).

    Returns
    -------
    list of tuple of int
        The offsets.
    """
    r = kernel // 2
    return [(dy - r, dx - r, ((dy - r) * grid + (dx - r)) * gap) for dy in range(kernel) for dx in range(kernel)]


def block_rotations(channels: int, gap: int = 1, grid: int = GRID) -> list[int]:
    """Return the rotation keys one basic block needs: 8 kernel offsets and channels - 1 channel shifts.

    Parameters
    ----------
    channels : int
        The block's channels.
    gap : int, optional
        The gap of the multiplexed grid (default 1).
    grid : int, optional
        The grid's side (default GRID).

    Returns
    -------
    list of int
        The rotation steps, sorted, without 0.
    """
    steps = {o for _, _, o in kernel_offsets(3, gap, grid)} | {channel_shift(i, gap, grid) for i in range(channels)}
    steps.discard(0)
    return sorted(steps)


def conv(ctx, x, channels: int, gap: int, weights: Callable[[int, int], np.ndarray], bias, kernel: int = 3,
         scale: Optional[float] = None, grid: int = GRID):
    """Return the multiplexed convolution of x (module docstring); one level.

    Parameters
    ----------
    ctx : ember.Context
        The context (or ember.apps.resnet.PlainContext).
    x : ember.Ciphertext
        The input.
    channels : int
        The channel diagonals.
    gap : int
        The gap of the multiplexed grid.
    weights : callable
        ``weights(i, k)``: the slot vector of channel diagonal i and kernel offset k (:func:`kernel_offsets`'
        order).
    bias : array_like
        A slot vector.
    kernel : int, optional
        The kernel's side (default 3).
    scale : float, optional
        The output's scale: the plaintexts' scales bring it there (to add it to another branch); default the
        input's.
    grid : int, optional
        The grid's side (default GRID).

    Returns
    -------
    ember.Ciphertext
        The convolution plus the bias.
    """
    offsets = [o for _, _, o in kernel_offsets(kernel, gap, grid)]
    nz = [o for o in offsets if o != 0]
    shifted = dict(zip(nz, x.rotate_many(nz))) if nz else {}
    shifted[0] = x
    lvl = x.level
    q = float(ctx.params.q_primes[lvl]) * (1.0 if scale is None else scale / x.scale)
    out = None
    for i in range(channels):
        acc = None
        for k, o in enumerate(offsets):
            p = ctx.multiply(shifted[o], ctx.encode(weights(i, k), level=lvl, scale=q), rescale=False)
            acc = p if acc is None else acc + p
        acc = acc.rescale()
        s = channel_shift(i, gap, grid)
        acc = acc.rotate(s) if s else acc
        out = acc if out is None else out + acc
    return out + bias      # bias (batch normalisation folded)


def _no_clock(name):
    return contextlib.nullcontext()


def residual_block(ctx, x, channels: int, gap_in: int, gap: int, conv1, conv2, coeffs, projection=None,
                   grid: int = GRID, clock=_no_clock):
    """Return ResNet-20's basic block of x.

    conv 3x3 -> bootstrap -> ReLU -> conv 3x3 -> + shortcut -> bootstrap -> ReLU.

    Parameters
    ----------
    ctx : ember.Context
        The context (or ember.apps.resnet.PlainContext).
    x : ember.Ciphertext
        The input.
    channels : int
        The channel diagonals of the convolutions.
    gap_in, gap : int
        The gaps of the input's grid and of the block's.
    conv1, conv2 : tuple
        (weights, bias) of :func:`conv`.
    coeffs : list of array_like
        The ReLU's stages (:func:`relu_coefficients`).
    projection : tuple, optional
        (weights, bias) of a 1x1 projection shortcut; None (default): the identity shortcut (x brought to the
        branch's level and scale by a product with ones).
    grid : int, optional
        The grid's side (default GRID).
    clock : callable, optional
        ``clock(name)``: a context manager timing the stages conv, bootstrap, relu (default: none).

    Returns
    -------
    ember.Ciphertext
        The block's output.
    """
    with clock("conv"):
        h = conv(ctx, x, channels, gap_in, *conv1, grid=grid)
    with clock("bootstrap"):
        h = h.bootstrap()
    with clock("relu"):
        h = relu(h, coeffs)
    with clock("conv"):
        h = conv(ctx, h, channels, gap, *conv2, grid=grid)
        if x.level > h.level + 1:
            x = x.drop_to_level(h.level + 1)
        if projection is not None:                                    # 1x1 projection shortcut
            sc = conv(ctx, x, channels, gap_in, *projection, kernel=1, scale=h.scale, grid=grid)
        else:                                                         # identity, brought to h's level and scale
            q = float(ctx.params.q_primes[x.level]) * h.scale / x.scale
            sc = ctx.multiply(x, ctx.encode(np.ones(ctx.slots), level=x.level, scale=q), rescale=False)
            sc = sc.rescale()
        y = h + sc
    with clock("bootstrap"):
        y = y.bootstrap()
    with clock("relu"):
        return relu(y, coeffs)


# ---- ResNet-20 as a graph -----------------------------------------------------------------------------------------
RESNET_STAGES = (16, 32, 64)


RESNET_BLOCKS = 3


def _random_conv(rng, slots: int):
    """Return (weights, bias) of :func:`conv` with random slot vectors (the symbolic run: values meaningless)."""
    return (lambda i, k: rng.normal(0.0, 0.1, slots)), rng.normal(0.0, 0.1, slots)


def resnet20_rotations(stages=RESNET_STAGES) -> list[int]:
    """Return the rotation keys ResNet-20 needs.

    Parameters
    ----------
    stages : sequence of int, optional
        Channels per stage (default RESNET_STAGES).

    Returns
    -------
    list of int
        The steps, sorted, without 0: the kernel offsets and channel shifts of every stage's gaps, the average
        pool's and the dense layer's.
    """
    steps = set()
    for s, c in enumerate(stages):
        for gap in {1 << s, 1 << max(0, s - 1)}:
            steps |= {((dy - 1) * GRID + (dx - 1)) * gap for dy in range(3) for dx in range(3)}
            steps |= {channel_shift(i, gap) for i in range(c)}
    steps |= {1 << k for k in range(10)} | set(range(1, 10))       # average pool and the dense layer
    steps.discard(0)
    return sorted(steps)


def resnet20_program(stages=RESNET_STAGES, blocks: int = RESNET_BLOCKS, seed: int = 0):
    """Return ``program(ctx, keys) -> logits ciphertext``: ResNet-20 (module docstring) with random weights.

    Parameters
    ----------
    stages : sequence of int, optional
        Channels per stage (default RESNET_STAGES).
    blocks : int, optional
        Basic blocks per stage (default RESNET_BLOCKS).
    seed : int, optional
        Seed of the random weights (default 0).

    Returns
    -------
    callable
        The program.
    """
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
    """Return the structure's own arithmetic: convolutions, bootstraps, ReLUs, plaintext products and rotations.

    Parameters
    ----------
    stages : sequence of int, optional
        Channels per stage (default RESNET_STAGES).
    blocks : int, optional
        Basic blocks per stage (default RESNET_BLOCKS).

    Returns
    -------
    dict
        The expected counts.
    """
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
    """Return the symbolic graph of ResNet-20 (random weights).

    At CkksParams.bootstrappable(log_n, levels, log_scale, **bootstrap_options), by default the options of the
    block that runs for real (resnet.BLOCK_BOOTSTRAP_OPTIONS: no arcsine, which leaves room for dnum = 6 keys;
    with the arcsine these levels fit the 128-bit bound only at dnum = 33, whose keys do not fit this machine's
    memory).

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16: 128-bit bootstrappable parameters).
    levels, log_scale : int, optional
        Computation levels and the scale's log2 of the bootstrappable parameters (default 15 and 40).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    seed : int, optional
        Seed of the random weights (default 0).
    stages : sequence of int, optional
        Channels per stage (default RESNET_STAGES).
    blocks : int, optional
        Basic blocks per stage (default RESNET_BLOCKS).
    bootstrap_options : dict, optional
        CkksParams.bootstrappable options (default :data:`BLOCK_BOOTSTRAP_OPTIONS`).

    Returns
    -------
    ember.graph.Graph
        The captured graph.

    Raises
    ------
    ValueError
        If the levels do not hold a ReLU, a convolution and the stem.
    """
    need = relu_depth() + 1
    if levels < need + 1:
        raise ValueError(f"resnet20: a ReLU and a convolution need {need} levels and the stem one more; "
                         f"got levels={levels}")
    opts = dict(BLOCK_BOOTSTRAP_OPTIONS if bootstrap_options is None else bootstrap_options)
    params = CkksParams.bootstrappable(log_n=log_n, levels=levels, log_scale=log_scale, insecure=insecure, **opts)
    g = capture_program(resnet20_program(stages, blocks, seed), params, rotations=resnet20_rotations(stages),
                        bootstrapping=True)
    g.meta["program"] = f"ResNet-20 (Lee et al. ICML'22 structure, random weights) N=2^{log_n}"
    return g
