"""ResNet-20's building blocks (Lee et al., ICML'22 layout) and one basic residual block run for real.

The ONE implementation of the convolution (:func:`conv`), the composite ReLU (:func:`relu`) and the basic
residual block (:func:`residual_block`) is :mod:`ember.graph.programs.resnet` (re-exported here), where
:func:`~ember.graph.programs.resnet.resnet20_program` runs them symbolically (random slot vectors, the graph);
:func:`run_block` runs one block on a real :class:`ember.Context` at N = 2^16 and checks it against float64, and
:class:`PlainContext` runs them in float64 on numpy (the "plain twin": same code, no encryption).

Layout. A C x G x G activation (G = 32) lives in the slots as channel-major rows: slot (c G + y) G + x, the
C G^2 values repeated to fill the slots (at N = 2^16 and C = 16: 16384 values, twice). Stage s of ResNet-20
interleaves gap^2 channels (gap = 2^s) in one grid (:func:`channel_shift`); the real block is stage 0 (gap 1).

Convolution (:func:`conv`), "channel diagonals": the 8 non-zero kernel offsets o_k = (dy G + dx) gap by one
hoisted rotate_many, then for each diagonal i a sum of 9 plaintext products w_{i,k} * rot(x, o_k) (one
rescale), rotated by the shift of channel i, plus the bias: 9C mul_plain, C rescales, C - 1 rotations, one
level. With :func:`stage0_weights` the plaintexts make this exactly a zero-padded 3 x 3 convolution: output
channel c takes input channel (c + i) mod C on diagonal i (the repetition of the C G^2 values wraps the
channels around), and w_{i,k} is zero where the offset leaves the G x G image (the zero padding), so the
rotations' wrap-around across rows, channels and the slot vector never reaches an output.

ReLU(x) = x (1 + sign x) / 2, sign the composite of odd Chebyshev interpolants of tanh(k x) / tanh(k) of degrees
(7, 15, 27) on [-1, 1], each normalised into [-1, 1] (depth 12 + 1 for the product with x; within 9.1e-4 of
max(x, 0) on [-1, 1]); its input must stay inside [-1, 1].
"""
from __future__ import annotations

import contextlib
import time
from typing import Optional

import numpy as np

from ..circuits import chebyshev_depth
from ..graph.programs.resnet import (BLOCK_BOOTSTRAP_OPTIONS, GRID, RELU_DEGREES, RELU_SHARPNESS,  # noqa: F401
                                     block_rotations, channel_shift, conv, kernel_offsets, relu, relu_coefficients,
                                     relu_depth, relu_stages, residual_block)


def relu_float64(z: np.ndarray, coeffs) -> np.ndarray:
    """Evaluate the composite-polynomial ReLU in float64 (numpy's chebval, independent of Ember's evaluator).

    Parameters
    ----------
    z : numpy.ndarray
        The inputs, inside [-1, 1].
    coeffs : sequence
        The composite sign's coefficients (:func:`relu_coefficients`).

    Returns
    -------
    numpy.ndarray
        z times the composite sign of z, stage by stage as the encrypted path evaluates it.
    """
    s = z
    for c in relu_stages(coeffs):
        s = np.polynomial.chebyshev.chebval(s, c)
    return z * s


# ---- the plain twin -------------------------------------------------------------------------------------------------
class PlainVector:
    """A float64 stand-in for a Ciphertext in the operations the block uses.

    rotate = np.roll(v, -steps) (Ember's direction: slots shift left), products and sums of values, rescale /
    drop_to_level / bootstrap change only the bookkeeping (level, scale), chebyshev = numpy's chebval. No
    encryption, no noise.

    Parameters
    ----------
    ctx : PlainContext
        The context it belongs to (its ``context`` attribute).
    v : array-like
        The slot values.
    level : int
        Its level.
    scale : float
        Its scale.
    """

    def __init__(self, ctx: "PlainContext", v, level: int, scale: float):
        self.context, self.v, self.level, self.scale = ctx, np.asarray(v, dtype=np.float64), int(level), float(scale)
        self.slots = self.v.size

    def _like(self, v, level=None, scale=None):
        return PlainVector(self.context, v, self.level if level is None else level,
                           self.scale if scale is None else scale)

    def __add__(self, other):
        """Return the sum with another PlainVector (at the lower level) or with values."""
        if isinstance(other, PlainVector):
            return self._like(self.v + other.v, min(self.level, other.level))
        return self._like(self.v + np.asarray(other, dtype=np.float64))

    __radd__ = __add__

    def __mul__(self, other):
        """Return the product with another PlainVector (one level below the lower) or with values (same level)."""
        if isinstance(other, PlainVector):
            return self._like(self.v * other.v, min(self.level, other.level) - 1)
        return self._like(self.v * np.asarray(other, dtype=np.float64))

    def rotate(self, steps: int):
        """Return the vector rotated left by `steps` slots."""
        return self._like(np.roll(self.v, -int(steps)))

    def rotate_many(self, steps):
        """Return the rotations by each of `steps`."""
        return [self.rotate(s) for s in steps]

    def rescale(self):
        """Return the vector one level down, its scale divided by the dropped prime (ValueError at level 0)."""
        if self.level <= 0:
            raise ValueError("PlainVector.rescale: no level left (the program would fail encrypted)")
        return self._like(self.v, self.level - 1, self.scale / float(self.context.params.q_primes[self.level]))

    def drop_to_level(self, level: int):
        """Return the vector at `level`."""
        return self._like(self.v, level)

    def bootstrap(self):
        """Return the vector at the context's user level and scale."""
        return self._like(self.v, self.context.user_level, self.context.scale)

    def chebyshev(self, c):
        """Return the Chebyshev series `c` at the values, chebyshev_depth(c) levels down."""
        return self._like(np.polynomial.chebyshev.chebval(self.v, c), self.level - chebyshev_depth(c))


class PlainContext:
    """The Context calls the block makes (encode, multiply, encrypt), on PlainVectors: see PlainVector.

    Parameters
    ----------
    params : ember.CkksParams
        The parameters whose primes, slots and scale it follows.
    user_level : int, optional
        The level of a fresh (encrypted or bootstrapped) vector (default: the top, len(q_primes) - 1).
    slots : int, optional
        Its slots (default: params.slots).
    """

    def __init__(self, params, user_level: Optional[int] = None, slots: Optional[int] = None):
        self.params = params
        self.slots = int(params.slots if slots is None else slots)
        self.user_level = len(params.q_primes) - 1 if user_level is None else int(user_level)
        self.scale = 2.0 ** float(params.to_dict().get("log_scale", 40))

    def encode(self, values, level: int, scale: float):
        """Return the values as a PlainVector at `level` and `scale`."""
        return PlainVector(self, values, level, scale)

    def encrypt(self, values, key=None):
        """Return the values as a PlainVector at the user level and the context's scale (`key` is ignored)."""
        return PlainVector(self, values, self.user_level, self.scale)

    def multiply(self, a, b, rescale: bool = True):
        """Return a * b at a's level, the scales multiplied, then rescaled unless rescale=False."""
        out = PlainVector(self, a.v * b.v, a.level, a.scale * b.scale)
        return out.rescale() if rescale else out


# ---- stage 0 weights: the multiplexed convolution as a true 3x3 convolution -----------------------------------------
def to_slots(image: np.ndarray, slots: int) -> np.ndarray:
    """C x G x G -> the slot vector (channel-major rows, repeated to fill `slots`)."""
    flat = np.asarray(image, dtype=np.float64).ravel()
    if slots % flat.size:
        raise ValueError(f"to_slots: {flat.size} values do not tile {slots} slots")
    return np.tile(flat, slots // flat.size)


def from_slots(v: np.ndarray, channels: int, grid: int = GRID) -> np.ndarray:
    """Return the first copy of a C x G x G activation in the slots (real parts)."""
    return np.real(np.asarray(v))[:channels * grid * grid].reshape(channels, grid, grid)


def stage0_weights(kernel: np.ndarray, bias: np.ndarray, slots: int, grid: int = GRID):
    """Return (weights, bias) for :func:`conv` at gap 1 that compute a zero-padded 3x3 convolution.

    The convolution is out[c] = sum_{c', ky, kx} kernel[c, c', ky, kx] in[c', y + ky - 1, x + kx - 1] + bias[c];
    ``weights(i, k)`` is the slot vector of diagonal i and kernel offset k, ``bias`` a slot vector.

    Diagonal i reads input channel c' = (c + i) mod C at slot (c' G + y) G + x (the rotation by the channel shift
    comes after the product), so w_{i,k} holds kernel[(c' - i) mod C, c', k] there, times the mask of the (y, x)
    whose neighbour (y + dy, x + dx) lies inside the image (zero padding).
    """
    kernel = np.asarray(kernel, dtype=np.float64)
    channels = kernel.shape[0]
    if kernel.shape != (channels, channels, 3, 3):
        raise ValueError(f"stage0_weights: kernel must be C x C x 3 x 3, got {kernel.shape}")
    ys, xs = np.mgrid[0:grid, 0:grid]
    offs = kernel_offsets(3, 1, grid)
    cin = np.arange(channels)

    def weights(i: int, k: int) -> np.ndarray:
        dy, dx, _ = offs[k]
        mask = ((ys + dy >= 0) & (ys + dy < grid) & (xs + dx >= 0) & (xs + dx < grid)).astype(np.float64)
        w = kernel[(cin - i) % channels, cin, k // 3, k % 3]
        return to_slots(w[:, None, None] * mask[None], slots)

    b = to_slots(np.broadcast_to(np.asarray(bias, dtype=np.float64)[:, None, None], (channels, grid, grid)), slots)
    return weights, b


def conv2d_float64(image: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Direct zero-padded 3x3 convolution in image form (C_in x G x G -> C_out x G x G), numpy float64."""
    c, g, _ = image.shape
    p = np.pad(image, ((0, 0), (1, 1), (1, 1)))
    out = np.broadcast_to(np.asarray(bias, dtype=np.float64)[:, None, None], (kernel.shape[0], g, g)).copy()
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("oi,iyx->oyx", kernel[:, :, ky, kx], p[:, ky:ky + g, kx:kx + g])
    return out


def block_float64(image, k1, b1, k2, b2, coeffs, exact_relu: bool = False):
    """Compute the block in image form: relu(conv2(relu(conv1(x))) + x).

    Returns (output, z1, z2): the output and the two ReLU inputs. exact_relu: max(z, 0) instead of the composite
    polynomial.
    """
    act = (lambda z: np.maximum(z, 0.0)) if exact_relu else (lambda z: relu_float64(z, coeffs))
    z1 = conv2d_float64(image, k1, b1)
    z2 = conv2d_float64(act(z1), k2, b2) + image
    return act(z2), z1, z2


# ---- the real run ---------------------------------------------------------------------------------------------------
INPUT_HALF_WIDTH = 0.5          # input uniform in [-0.5, 0.5]: the shortcut's sum x + conv stays inside [-1, 1]
TARGET_STD = (0.15, 0.10)       # standard deviation aimed at for the two convolutions' outputs


def block_weights(channels: int, rng, grid: int = GRID):
    """Return a random input and weights for one block (stage 0), scaled so that every ReLU input stays in [-1, 1].

    Input uniform in [-a, a] (a = INPUT_HALF_WIDTH); each convolution's weights normal(0, sigma) with
    sigma = target / sqrt(9 C E[in^2]) (9 C terms per output; E[in^2] = a^2 / 3 for the input, t1^2 / 2 for the
    ReLU of a centred normal of std t1 = TARGET_STD[0]), biases normal(0, target / 10). run_block checks the
    float64 pre-activations (max |z| < 1) before anything is encrypted.
    """
    a = INPUT_HALF_WIDTH
    t1, t2 = TARGET_STD
    image = rng.uniform(-a, a, (channels, grid, grid))
    s1 = t1 / np.sqrt(9 * channels * a * a / 3)
    s2 = t2 / np.sqrt(9 * channels * t1 * t1 / 2)
    k1, b1 = rng.normal(0.0, s1, (channels, channels, 3, 3)), rng.normal(0.0, t1 / 10, channels)
    k2, b2 = rng.normal(0.0, s2, (channels, channels, 3, 3)), rng.normal(0.0, t2 / 10, channels)
    return image, (k1, b1), (k2, b2)


class Stopwatch:
    """The clock(name) context manager for residual_block: seconds summed per stage.

    Parameters
    ----------
    on_stage : callable, optional
        Called with a stage's name when it starts.
    """

    def __init__(self, on_stage=None):
        self.seconds: dict[str, float] = {}
        self.on_stage = on_stage

    @contextlib.contextmanager
    def __call__(self, name: str):
        """Time the ``with`` block as stage `name` (added to ``seconds[name]``).

        Parameters
        ----------
        name : str
            The stage.

        Yields
        ------
        None
            Control to the timed block.
        """
        if self.on_stage:
            self.on_stage(name)
        t = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t


def _peak_rss_gib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20     # KiB on Linux


def run_block(log_n: int = 16, channels: int = 16, grid: int = GRID, levels: int = 15, log_scale: int = 40,
              threads: int = 2, seed: int = 0, insecure: bool = False, progress=None,
              bootstrap_options: Optional[dict] = None) -> dict:
    """Run one basic residual block encrypted on a real Context, against the same block in float64.

    The block is stage 0 (`channels` channels, gap 1), on CkksParams.bootstrappable(log_n, levels, log_scale,
    **bootstrap_options), keygen with bootstrapping and the block's rotations only; the reference is the same
    block in float64 in image form (:func:`block_float64`, same random weights, :func:`block_weights`).

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16).
    channels : int, optional
        The block's channels (default 16); channels x grid x grid must divide the slots.
    grid : int, optional
        The image's side (default GRID, 32).
    levels : int, optional
        Levels above bootstrapping (default 15; at least a ReLU's depth + 1).
    log_scale : int, optional
        Bits of the scale (default 40).
    threads : int, optional
        Threads of the Context (default 2).
    seed : int, optional
        Seed of the random input and weights (default 0).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    progress : callable, optional
        ``progress(stage)`` when each stage starts (keygen, encrypt, the block's conv / bootstrap / relu stages,
        decrypt).
    bootstrap_options : dict, optional
        Bootstrapping options (default BLOCK_BOOTSTRAP_OPTIONS).

    Returns
    -------
    dict
        The record: precision (bits), max error, the ReLU inputs' largest magnitude, rotation keys, seconds per
        stage, peak RSS, parameters.

    Raises
    ------
    ValueError
        If `levels` is too small, the activation does not tile the slots, or a float64 ReLU input leaves [-1, 1].
    """
    import ember
    need = relu_depth() + 1
    if levels < need:
        raise ValueError(f"resnet block: a ReLU and a convolution need {need} levels; got levels={levels}")
    opts = dict(BLOCK_BOOTSTRAP_OPTIONS if bootstrap_options is None else bootstrap_options)
    params = ember.CkksParams.bootstrappable(log_n=log_n, levels=levels, log_scale=log_scale, insecure=insecure,
                                             **opts)
    if params.slots % (channels * grid * grid):
        raise ValueError(f"resnet block: {channels} channels of {grid} x {grid} do not tile the {params.slots} "
                         f"slots of N = 2^{log_n}")
    note = progress or (lambda stage: None)
    rng = np.random.default_rng(seed)
    coeffs = relu_coefficients()
    image, (k1, b1), (k2, b2) = block_weights(channels, rng, grid)
    want, z1, z2 = block_float64(image, k1, b1, k2, b2, coeffs)
    pre_max = float(max(np.abs(z1).max(), np.abs(z2).max()))
    if pre_max >= 1.0:
        raise ValueError(f"resnet block: a ReLU input reaches {pre_max:.3f}, outside the composite sign's [-1, 1]")
    exact, _, _ = block_float64(image, k1, b1, k2, b2, coeffs, exact_relu=True)

    seconds = {}
    t0 = time.perf_counter()
    note("keygen")
    t = time.perf_counter()
    ctx = ember.Context(params, threads=threads)
    rots = block_rotations(channels, 1, grid)
    keys = ctx.keygen(rotations=rots, bootstrapping=True)
    seconds["keygen"] = time.perf_counter() - t
    slots = ctx.slots
    conv1 = stage0_weights(k1, b1, slots, grid)
    conv2 = stage0_weights(k2, b2, slots, grid)
    note("encrypt")
    t = time.perf_counter()
    x = ctx.encrypt(to_slots(image, slots), keys.public)
    seconds["encrypt"] = time.perf_counter() - t
    clock = Stopwatch(note)
    y = residual_block(ctx, x, channels, 1, 1, conv1, conv2, coeffs, grid=grid, clock=clock)
    seconds.update(clock.seconds)
    note("decrypt")
    t = time.perf_counter()
    got = np.real(ctx.decrypt(y, keys.secret))
    seconds["decrypt"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    expected = to_slots(want, slots)
    stats = ember.precision(expected, got)
    return dict(app="resnet-block", program=f"ResNet-20 basic block, stage 0 ({channels} channels, {grid} x {grid}, "
                                            f"gap 1), identity shortcut, N=2^{log_n}",
                log_n=log_n, channels=channels, grid=grid, slots=slots, seed=seed, threads=threads,
                precision=stats.to_dict(), precision_min_bits=stats.min_bits,
                precision_median_bits=stats.median_bits, max_error=stats.max_error,
                max_error_first_copy=float(np.abs(from_slots(got, channels, grid) - want).max()),
                output_max=float(np.abs(want).max()), relu_input_max=pre_max,
                relu_poly_vs_exact_max=float(np.abs(want - exact).max()),
                rotation_keys=len(rots), rotations=rots, bootstraps=2, level_out=y.level,
                seconds=seconds, peak_rss_gib=_peak_rss_gib(), bootstrap_options=opts, params=params.to_dict())
