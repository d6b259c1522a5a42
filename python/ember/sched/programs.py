"""Built-in programs whose graphs the scheduler runs on (captured symbolically: no keys, no arithmetic).

  boot   one bootstrapping of a level-0 ciphertext (CkksParams.bootstrappable(log_n), 9 user levels)
  helr   one HELR iteration (Han et al. 2019 style logistic regression: inner products by rotate-and-add, a
         degree-3 sigmoid, the gradient summed over samples, the weight update) followed by its bootstrapping
Other programs (LoLa-MNIST / CIFAR, ResNet-20) come from ember.apps when present: any callable
program(ctx, keys) -> output ciphertext can be captured with capture_program().
"""
from __future__ import annotations

from typing import Callable


def capture_program(program: Callable, params, rotations=(), bootstrapping: bool = False, symbolic: bool = True):
    """Runs program(ctx, keys) on a SymbolicContext (or a real Context) inside a graph capture."""
    import ember
    from ember.graph import SymbolicContext
    ctx = SymbolicContext(params) if symbolic else ember.Context(params, threads=2)
    keys = ctx.keygen(rotations=rotations, conjugation=bootstrapping, bootstrapping=bootstrapping)
    with ember.graph(ctx) as g:
        out = program(ctx, keys)
    if out is not None and out._core.id:  # (a value made outside the evaluator's operations has no id)
        g.output(out, "out")
    return g


def boot_graph(log_n: int = 16, levels: int = 9, symbolic: bool = True, insecure: bool = False):
    import ember
    params = ember.CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure)

    def prog(ctx, keys):
        x = ctx.encrypt([0.0] * ctx.slots, keys.public, level=0)
        return x.bootstrap()
    g = capture_program(prog, params, bootstrapping=True, symbolic=symbolic)
    g.meta["program"] = f"bootstrapping N=2^{log_n}"
    return g


def helr_graph(log_n: int = 16, levels: int = 9, features: int = 256, symbolic: bool = True, insecure: bool = False):
    """One HELR iteration on a batch packed as samples x features in the slots, then bootstrapping the weights."""
    import ember
    params = ember.CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure)
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
    g.meta["program"] = f"HELR iteration + bootstrapping N=2^{log_n}, {features} features"
    return g


PROGRAMS = {"boot": boot_graph, "helr": helr_graph}
