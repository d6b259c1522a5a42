"""Drawing small graphs (matplotlib, imported only when drawing).

Nodes placed by depth (x) and order within the depth (y), edges as lines, colours by operation kind.
"""
from __future__ import annotations


def pyplot():
    """Return matplotlib.pyplot on the Agg backend.

    Returns
    -------
    module
        matplotlib.pyplot.

    Raises
    ------
    ImportError
        matplotlib is missing (the message gives the install hint).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        raise ImportError("drawing needs matplotlib: pip install matplotlib (make install does)") from None
    return plt


_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
            "#bab0ac", "#1f77b4", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f"]
_KINDS = ["mul", "rotate", "rotate_many", "add", "rescale", "mul_plain", "mul_const", "mul_int", "add_const",
          "linear_combination", "sub", "conjugate", "drop_to_level", "add_plain", "mul_round"]


def op_colour(op: str):
    """Return the colour of an operation kind in graph and Gantt drawings (stable across drawings).

    Parameters
    ----------
    op : str
        The operation kind.

    Returns
    -------
    str
        A hex colour.
    """
    import zlib
    k = _KINDS.index(op) if op in _KINDS else zlib.crc32(op.encode())
    return _PALETTE[k % len(_PALETTE)]


def draw_graph(graph, path, max_nodes: int = 400) -> None:
    """Draw a small graph as an image file.

    Nodes placed by depth (x) and order within the depth (y), edges as lines, colour by operation kind.

    Parameters
    ----------
    graph : Graph
        The graph.
    path : str or os.PathLike
        The image file to write (matplotlib picks the format from its suffix).
    max_nodes : int, optional
        The most nodes drawn (default 400).

    Raises
    ------
    ValueError
        The graph has more than `max_nodes` nodes.
    ImportError
        matplotlib is not installed.
    """
    if len(graph) > max_nodes:
        raise ValueError(f"the graph has {len(graph)} nodes; drawing is for small graphs (<= {max_nodes})")
    plt = pyplot()
    pred = graph.predecessors()
    depth = [0] * len(graph)
    for n in graph.nodes:
        depth[n.id] = 1 + max((depth[p] for p in pred[n.id]), default=-1)
    rows: dict[int, int] = {}
    pos = {}
    for n in graph.nodes:
        r = rows.get(depth[n.id], 0)
        rows[depth[n.id]] = r + 1
        pos[n.id] = (depth[n.id], -r)
    fig, ax = plt.subplots(figsize=(min(20, 2 + 0.6 * (max(depth, default=0) + 1)), min(20, 2 + 0.4 * max(rows.values(), default=1))))
    for (u, v) in graph.edges():
        ax.plot([pos[u][0], pos[v][0]], [pos[u][1], pos[v][1]], color="#999999", lw=0.6, zorder=1)
    seen = set()
    for n in graph.nodes:
        x, y = pos[n.id]
        lab = n.op if n.op not in seen else None
        seen.add(n.op)
        ax.scatter([x], [y], s=60, color=op_colour(n.op), zorder=2, label=lab)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_axis_off()
    ax.set_title(f"{len(graph)} operations, depth {max(depth, default=-1) + 1}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
