"""One bootstrapping of a level-0 ciphertext as a graph, ``graph_of("boot")``."""
from __future__ import annotations

from ...params import CkksParams
from ..symbolic import capture_program


def boot_graph(log_n: int = 16, levels: int = 9, symbolic: bool = True, insecure: bool = False):
    """Return the graph of one bootstrapping of a level-0 ciphertext at CkksParams.bootstrappable(log_n, levels).

    Parameters
    ----------
    log_n : int, optional
        log2 of the ring degree (default 16; bootstrappable parameters fit the 128-bit bound from 16 on).
    levels : int, optional
        Computation levels left after the bootstrapping (default 9).
    symbolic : bool, optional
        Capture on a SymbolicContext (no keys, no arithmetic; the default) or run it for real.
    insecure : bool, optional
        Allow parameters above the 128-bit bound (default False).

    Returns
    -------
    ember.graph.Graph
        The captured graph; ``meta["program"]`` names it.
    """
    params = CkksParams.bootstrappable(log_n=log_n, levels=levels, insecure=insecure)

    def prog(ctx, keys):
        x = ctx.encrypt([0.0] * ctx.slots, keys.public, level=0)
        return x.bootstrap()
    g = capture_program(prog, params, bootstrapping=True, symbolic=symbolic)
    g.meta["program"] = f"bootstrapping N=2^{log_n}"
    return g
