"""A toy logistic-regression step followed by bootstrapping, ``graph_of("lr-toy")``.

One ciphertext, a naive packing (samples x features in the slots), inner products by rotate-and-add, a degree-3
sigmoid, the gradient summed over the samples, the weight update, then one bootstrapping of the weights. It came
first, as a small program for the scheduler; HELR training as the application runs it is ``graph_of("helr")``
(ember.graph.programs.logreg).
"""
from __future__ import annotations

from ...params import CkksParams
from ..symbolic import capture_program


def lr_toy_graph(log_n: int = 16, levels: int = 9, features: int = 256, symbolic: bool = True,
                 insecure: bool = False):
    """Return the graph of one toy logistic-regression iteration, then bootstrapping the weights.

    The batch is packed as samples x features in the slots (module docstring).

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16; bootstrappable parameters fit the 128-bit bound from 16 on).
    levels : int, optional
        Computation levels left after the bootstrapping (default 9).
    features : int, optional
        Features per sample, a power of two (the rotate-and-add of the inner products; default 256).
    symbolic : bool, optional
        Capture on a SymbolicContext (no keys, no arithmetic; the default) or run it for real.
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).

    Returns
    -------
    ember.graph.Graph
        The captured graph; ``meta["program"]`` names it.

    Raises
    ------
    ValueError
        If `features` is not a power of two that fits the slots.
    """
    params = CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure)
    slots = params.slots
    if features > slots or features & (features - 1):
        raise ValueError(f"features must be a power of two <= {slots}")
    f_steps = [1 << i for i in range(features.bit_length() - 1)]
    s_steps = [features << i for i in range((slots // features).bit_length() - 1)]

    def prog(ctx, keys):
        z = ctx.encrypt([0.0] * slots, keys.public)         # the batch (labels folded in), samples x features
        w = ctx.encrypt([0.0] * slots, keys.public)         # the weights, replicated per sample
        ip = z * w
        for r in f_steps:                                   # inner product per sample: sum over features
            ip = ip + ip.rotate(r)
        sig = 0.5 + ip * 0.15012 - (ip * ip) * (ip * 0.001593)   # degree-3 sigmoid (Kim et al. 2018)
        grad = z * sig
        for r in s_steps:                                   # sum over the samples
            grad = grad + grad.rotate(r)
        w = w + grad * 0.01                                 # learning rate / batch size
        return w.bootstrap()
    g = capture_program(prog, params, rotations=f_steps + s_steps, bootstrapping=True, symbolic=symbolic)
    g.meta["program"] = f"toy logistic-regression iteration + bootstrapping N=2^{log_n}, {features} features"
    return g
