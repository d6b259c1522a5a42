"""Figures for `ember sim ... --png FILE`.

DRAM traffic per technique as stacked bars, and a roofline with the operations placed on it. matplotlib is
optional: it is imported only here, and only when a figure is asked for.
"""
from __future__ import annotations

from .cost import Result
from .devices import Profile


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("ember sim --png needs matplotlib, which is not installed; install it "
                         "(pip install matplotlib) or drop --png") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def stacked_bars(results: list[Result], labels: list[str], path: str, title: str = "") -> None:
    """Draw one bar per result (a technique step), stacked by what is moved, into a PNG file.

    Ciphertext reads / writes, key reads, plaintext reads (GB); operations (Gops) on a second axis.

    Parameters
    ----------
    results : list of Result
        The results, one bar each.
    labels : list of str
        The bars' labels.
    path : str
        The file to write.
    title : str, optional
        The figure's title.

    Raises
    ------
    SystemExit
        If matplotlib is not installed.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(results) + 2), 4.5))
    kinds = [("ct_read", "ciphertext limbs read"), ("ct_write", "ciphertext limbs written"),
             ("key_read", "key limbs read"), ("pt_read", "plaintext limbs read")]
    bottom = [0.0] * len(results)
    for attr, name in kinds:
        vals = [getattr(r.cost, attr) / 1e9 for r in results]
        if any(vals):
            ax.bar(range(len(results)), vals, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(results)), labels, rotation=20, ha="right")
    ax.set_ylabel("DRAM traffic (GB)")
    ax2 = ax.twinx()
    ax2.plot(range(len(results)), [r.cost.ops / 1e9 for r in results], "k.-", label="operations")
    ax2.set_ylabel("modular operations (G)")
    ax2.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def roofline(results: list[Result], dev: Profile, path: str, title: str = "") -> None:
    """Draw the device's roofline with each operation at its arithmetic intensity and rate, into a PNG file.

    Modular ops/s against ops per DRAM byte; an operation's rate is its operations over its predicted
    ``time_ms`` (in ``extra``) when there is one, else the roofline's at its intensity. Operations without
    operations or traffic are left out.

    Parameters
    ----------
    results : list of Result
        The operations.
    dev : Profile
        The device.
    path : str
        The file to write.
    title : str, optional
        The figure's title (default: "roofline: " and the device's name).

    Raises
    ------
    SystemExit
        If matplotlib is not installed.
    """
    plt = _pyplot()
    peak = 1 / (0.5 / dev.mul_per_s + 0.5 / dev.add_per_s)  # an even mix of products and additions
    bw = dev.bandwidth
    results = [r for r in results if r.cost.dram and r.cost.ops]  # no point on a log axis for zero operations
    ais = [r.cost.ai for r in results]
    lo, hi = min(ais + [peak / bw]) / 4, max(ais + [peak / bw]) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.loglog(xs, [min(peak, bw * x) for x in xs], "k-", lw=1.5, label=f"{dev.name} roofline")
    for r in results:
        t = r.extra.get("time_ms")
        rate = r.cost.ops / (t / 1e3) if t else min(peak, bw * r.cost.ai)
        ax.loglog([r.cost.ai], [rate], "o")
        ax.annotate(r.op, (r.cost.ai, rate), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("arithmetic intensity (modular ops / DRAM byte)")
    ax.set_ylabel("modular ops / s")
    ax.set_title(title or f"roofline: {dev.name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
