"""The LoLa-style CNN's server program (Brutzkus, Elisha, Gilad-Bachrach, ICML'19) on the 8 x 8 digits.

The slot layout, the plaintext model laid out for it and the encrypted forward pass -- public operations only --
and the graphs ``graph_of("lola-mnist")`` and ``graph_of("lola-cifar")`` (a LoLa-CIFAR-shaped network).
Training, the float64 reference and the demo are ``ember.apps.cnn``'s, whose docstring describes the layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...context import Ciphertext, Context
from ...params import CkksParams
from ..capture import capture
from ..symbolic import SymbolicContext, capture_program

K_MAPS, KSIZE, OUT, HIDDEN, CLASSES = 7, 3, 6, 32, 10


BLOCK, MAP_PITCH, LEAD = 512, 64, 10


OFFSETS = [8 * dy + dx for dy in range(KSIZE) for dx in range(KSIZE)]


#: 128-bit parameters (log QP = 350 <= 438 at N = 2^14): five 36-bit levels on a 50-bit q0.
PARAMS = dict(log_n=14, levels=5, log_scale=36, first_mod_bits=50, dnum=3)


# ---- the layout --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """The slot layout of the images (``ember.apps.cnn``'s docstring describes it).

    Each image has a region of slots / batch slots: `replicas` blocks of BLOCK slots, each holding the `maps`
    copies of the image (MAP_PITCH slots apart, from LEAD on).

    Parameters
    ----------
    slots : int
        The slots of a ciphertext.
    batch : int, optional
        Images per ciphertext (default 1).
    hidden : int, optional
        Units of the hidden dense layer (default HIDDEN), a multiple of `replicas`.
    maps : int, optional
        Convolution maps (default K_MAPS).

    Raises
    ------
    ValueError
        The maps do not fit a block, the blocks of `batch` images do not divide the slots, or `hidden` is not a
        multiple of `replicas`.
    """

    slots: int
    batch: int = 1   # images per ciphertext
    hidden: int = HIDDEN
    maps: int = K_MAPS

    def __post_init__(self):
        """Check that the layout fits (see the class's Raises)."""
        if self.maps * MAP_PITCH + LEAD > BLOCK:
            raise ValueError(f"Layout: {self.maps} maps do not fit a {BLOCK}-slot block")
        if self.slots % (self.batch * BLOCK) or self.batch < 1:
            raise ValueError(f"Layout: {self.batch} images of {BLOCK}-slot blocks do not divide {self.slots} slots")
        if self.hidden % self.replicas:
            raise ValueError(f"Layout: {self.hidden} hidden units are not a multiple of {self.replicas} replicas")

    @property
    def region(self) -> int:
        """Slots per image."""
        return self.slots // self.batch

    @property
    def replicas(self) -> int:
        """Blocks per image."""
        return self.region // BLOCK

    @property
    def passes(self) -> int:
        """Passes of the first dense layer (rows per pass = replicas)."""
        return self.hidden // self.replicas

    def conv_positions(self):
        """Return the block position of (map k, output y, x).

        Returns
        -------
        numpy.ndarray
            Integer positions, shape (maps, 6, 6).
        """
        k, yy, xx = np.meshgrid(np.arange(self.maps), np.arange(OUT), np.arange(OUT), indexing="ij")
        return LEAD + MAP_PITCH * k + 8 * yy + xx

    def encode_images(self, X) -> np.ndarray:
        """Return the client's slot vector for up to `batch` images.

        Parameters
        ----------
        X : array_like
            The images, (n, 64), pixels already scaled.

        Returns
        -------
        numpy.ndarray
            The slots.

        Raises
        ------
        ValueError
            More than `batch` images.
        """
        X = np.asarray(X, dtype=np.float64)
        if len(X) > self.batch:
            raise ValueError(f"Layout: {len(X)} images for a batch of {self.batch}")
        v = np.zeros((self.batch, self.replicas, BLOCK))
        for k in range(self.maps):
            v[: len(X), :, LEAD + MAP_PITCH * k: LEAD + MAP_PITCH * (k + 1)] = X[:, None, :]
        return v.reshape(-1)

    def decode_logits(self, slots, n: Optional[int] = None) -> np.ndarray:
        """Return the logits of the images from decrypted slots.

        Parameters
        ----------
        slots : array_like
            The decrypted slots.
        n : int, optional
            The images to keep (default: all `batch`).

        Returns
        -------
        numpy.ndarray
            (images, CLASSES) real parts.
        """
        out = np.asarray(slots).real.reshape(self.batch, self.region)[:, :CLASSES]
        return out if n is None else out[:n]

    def rotations(self, baby: int = 1) -> list[int]:
        """Return the rotation steps the encrypted forward pass needs.

        Parameters
        ----------
        baby : int, optional
            The baby steps of the first dense layer (default 1: none).

        Returns
        -------
        list of int
            The steps, sorted: the kernel offsets, the baby steps, the giant steps within a block and the
            replicas' sums.
        """
        steps = set(OFFSETS) - {0}
        steps |= set(range(1, baby))
        s = baby
        while s < BLOCK:
            steps.add(s)
            s *= 2
        r = 1
        while r < self.replicas:
            steps.add(BLOCK * r)
            r *= 2
        return sorted(steps)


# ---- the server's model: plaintext weights laid out for the slots ------------------------------------------------
class EncryptedModel:
    """The trained weights as slot vectors for one layout (the server holds the model in the clear).

    Parameters
    ----------
    ctx : ember.Context
        The context the plaintexts are encoded with.
    model : dict
        The weights: wc (maps, 9), bc (maps), w1 (hidden, maps * 36), b1 (hidden), w2 (CLASSES, hidden),
        b2 (CLASSES).
    layout : Layout
        The slot layout.
    baby : int, optional
        The baby steps of the first dense layer (default 1).
    """

    def __init__(self, ctx: Context, model: dict, layout: Layout, baby: int = 1):
        self.ctx, self.layout, self.baby = ctx, layout, baby
        L, S, R = layout, layout.slots, layout.replicas
        pos = L.conv_positions()                                       # (K, 6, 6)

        def tile(block):                                               # one block pattern per replica -> all slots
            return np.tile(block.reshape(R, BLOCK), (L.batch, 1)).reshape(S)

        self.wconv = []
        for j in range(9):
            blk = np.zeros(BLOCK)
            for k in range(L.maps):
                blk[pos[k].ravel()] = model["wc"][k, j]
            self.wconv.append(np.tile(blk, S // BLOCK))
        blk = np.zeros(BLOCK)
        for k in range(L.maps):
            blk[pos[k].ravel()] = model["bc"][k]
        self.bconv = np.tile(blk, S // BLOCK)
        flat_pos = pos.reshape(L.maps, -1).ravel()                      # map-major, as plain_forward flattens
        self.u, self.b1, self.q = [], [], []
        for q in range(L.passes):
            rows = np.arange(q * R, (q + 1) * R)
            u = np.zeros((R, BLOCK))
            u[:, flat_pos] = model["w1"][rows]
            self.u.append(tile(u))
            b = np.zeros((R, BLOCK))
            b[:, :CLASSES] = model["b1"][rows][:, None]
            self.b1.append(tile(b))
            qq = np.zeros((R, BLOCK))
            qq[:, :CLASSES] = model["w2"][:, rows].T
            self.q.append(tile(qq))
        b2 = np.zeros((L.batch, L.region))
        b2[:, :CLASSES] = model["b2"]
        self.b2 = b2.reshape(S)
        self._plain = {}

    def plaintext(self, key, vec, level: int):
        """Return vec encoded at `level` on the scale q_level, cached by (key, level).

        A product with it, rescaled, keeps the ciphertext's scale.

        Parameters
        ----------
        key : hashable
            The cache key of the vector.
        vec : numpy.ndarray
            The slot vector.
        level : int
            The level.

        Returns
        -------
        ember.Plaintext
            The plaintext.
        """
        k = (key, level)
        if k not in self._plain:
            q = float(self.ctx.params.q_primes[level])
            self._plain[k] = self.ctx.encode(vec, level=level, scale=q)
        return self._plain[k]


def _rotsum(ct: Ciphertext, steps) -> Ciphertext:
    for s in steps:
        ct = ct + ct.rotate(s)
    return ct


def encrypted_forward(m: EncryptedModel, x: Ciphertext) -> Ciphertext:
    """Return the logits of the images packed in x (slot b S/B + c); public operations only.

    Parameters
    ----------
    m : EncryptedModel
        The model.
    x : ember.Ciphertext
        The images, encoded by :meth:`Layout.encode_images`.

    Returns
    -------
    ember.Ciphertext
        The logits (:meth:`Layout.decode_logits`).
    """
    L = m.layout
    # convolution: the 9 shifted inputs by one hoisted rotate_many, plaintext weights
    shifted = [x] + x.rotate_many(OFFSETS[1:])
    lvl = x.level
    conv = None
    for j, xj in enumerate(shifted):
        t = m.ctx.multiply(xj, m.plaintext(("wc", j), m.wconv[j], lvl), rescale=False)
        conv = t if conv is None else conv + t
    conv = conv.rescale() + m.bconv  # products summed raw, one rescale
    a1 = conv * conv
    # dense 1 in passes, baby-step giant-step: baby hoisted rotations of a1 shared by all passes
    baby = m.baby
    babies = [a1] + (a1.rotate_many(range(1, baby)) if baby > 1 else [])
    giant = []
    s = baby
    while s < BLOCK:
        giant.append(s)
        s *= 2
    lvl = a1.level
    out = None
    for q in range(L.passes):
        t = None
        for b, ab in enumerate(babies):
            p = m.ctx.multiply(ab, m.plaintext(("u", q, b), np.roll(m.u[q], -b), lvl), rescale=False)
            t = p if t is None else t + p
        h = _rotsum(t.rescale(), giant) + m.b1[q]
        h2 = h * h
        p = m.ctx.multiply(h2, m.plaintext(("q", q), m.q[q], h2.level), rescale=False)
        out = p if out is None else out + p
    out = out.rescale()
    r, steps = 1, []
    while r < L.replicas:
        steps.append(BLOCK * r)
        r *= 2
    return _rotsum(out, steps) + m.b2


# ---- the programs as graphs ---------------------------------------------------------------------------------------
def lola_mnist(log_n: int = 14, insecure: bool = False, seed: int = 0):
    """Return the graph of the encrypted forward pass of one image (``encrypted_forward``).

    Random weights of the trained shapes, captured symbolically at :data:`PARAMS` with `log_n`.

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 14: the 128-bit parameters; smaller rings need insecure=True).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    seed : int, optional
        Seed of the random weights (default 0).

    Returns
    -------
    ember.graph.Graph
        The captured graph, its output named "logits".
    """
    params = CkksParams(**{**PARAMS, "log_n": log_n, "insecure": insecure})
    rng = np.random.default_rng(seed)
    model = dict(wc=rng.normal(0, 0.5, (K_MAPS, 9)), bc=rng.normal(0, 0.1, K_MAPS),
                 w1=rng.normal(0, 0.1, (HIDDEN, K_MAPS * 36)), b1=rng.normal(0, 0.1, HIDDEN),
                 w2=rng.normal(0, 0.1, (CLASSES, HIDDEN)), b2=rng.normal(0, 0.1, CLASSES))
    ctx = SymbolicContext(params)
    layout = Layout(ctx.slots, batch=1)
    baby = 16 if layout.passes > 4 else 1
    keys = ctx.keygen(rotations=layout.rotations(baby))
    em = EncryptedModel(ctx, model, layout, baby=baby)
    x = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    with capture(ctx) as g:
        out = encrypted_forward(em, x)
    g.output(out, "logits")
    g.meta["program"] = f"LoLa-MNIST-style CNN (ember.graph.programs.lola) N=2^{log_n}"
    return g


LOLA_CIFAR = dict(channels=3, kernel=8, maps=83, hidden=163, classes=10)


def lola_cifar(log_n: int = 16, insecure: bool = False, seed: int = 0):
    """Return the graph of a LoLa-CIFAR-shaped network, one image, random weights.

    conv 8x8 stride 2 over 3 channels -> 83 maps, square, dense -> 163 units, square, dense -> 10; the input in
    convolution representation: conv as 3 * 64 hoisted kernel rotations with one plaintext product each per map
    group, square, dense layers as stacked passes (rotate-and-sum over the block), square, dense.

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (16 by default).
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).
    seed : int, optional
        Seed of the random weights (default 0).

    Returns
    -------
    ember.graph.Graph
        The captured graph.
    """
    sh = LOLA_CIFAR
    params = CkksParams(log_n=log_n, levels=6, log_scale=40, first_mod_bits=52, dnum=3, insecure=insecure)
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
