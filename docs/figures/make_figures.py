"""Draw the documentation's figures from the committed JSON under docs/figures/data/ (never runs a benchmark).

    build/venv/bin/python docs/figures/make_figures.py OUTDIR

writes peers.png, keyswitch_bandwidth.png, boot_gantt.png, helr_loss.png and boot_precision.png into OUTDIR
(matplotlib, Agg backend; offline, a few seconds). A figure whose JSON is missing is skipped with a message
(exit status 1 then only with --strict).
Every PNG has a footer naming the JSON, the command that wrote it, the machine and the date.
docs/figures/gen_data.py writes the JSON (see docs/figures/README.md).
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
DPI = 120
LIB_STYLE = {"ember": ("Ember", "#d62728"), "openfhe": ("OpenFHE", "#1f77b4"), "desilo": ("DESILO", "#2ca02c"),
             "seal": ("SEAL", "#9467bd"), "lattigo": ("Lattigo", "#ff7f0e")}
DEVICE_NAMES = {"cpu-2t": "host CPU, 2 threads", "cpu": "host CPU (model)", "fpga-u280": "Alveo U280", "h100": "H100"}
OP_LABEL = {"mul": "HE Mul\n(relin + rescale)", "rotate": "rotate by 1", "rotate_many": "8 rotations\n(hoisted)",
            "boot": "bootstrapping\n(2^15 slots)"}


def load(name: str) -> dict:
    """Read data/<name>.json."""
    with open(DATA / f"{name}.json") as f:
        return json.load(f)


def footer(fig, recs: list[tuple[str, dict]], extra: str = "") -> None:
    """Write the provenance of the figure's JSON files at the bottom of the figure."""
    lines = []
    for fname, rec in recs:
        m = rec["machine"]
        lines.append(f"data: docs/figures/data/{fname}, written by: {rec['command']}  ({rec['elapsed_s']:.0f} s)")
        lines.append(f"machine: {m['cpu']}, {m['cores']} cores, Ember SIMD path {m['simd_path']}; "
                     f"{rec['date']}; ember {rec['ember_version']} ({rec.get('git', '?')})")
    if extra:
        lines += textwrap.wrap(extra, 180)
    fig.text(0.005, 0.005, "\n".join(lines), fontsize=6.5, color="#444444", va="bottom", ha="left", family="monospace")


def _finish(fig, path: Path, footer_lines: int) -> None:
    h = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, min(0.45, (0.14 * footer_lines + 0.1) / h), 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"wrote {path}")


def _fmt_time(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    return f"{ms:.3g} ms"


# ---- 1. peers -----------------------------------------------------------------------------------------------------
def _records(group: dict, run: str) -> list[dict]:
    for r in group["runs"]:
        if r["name"] == run:
            return r["records"]
    return []


def _peer_panel(ax, recs: list[dict], ops: list[str], libs: list[str], title: str) -> None:
    """Bars of each library's median time over Ember's (same run), one group per operation."""
    by = {(r["library"], r.get("op", "boot")): r for r in recs if not r.get("error") and r.get("median_ms")}
    libs = [lib for lib in libs if any((lib, op) in by for op in ops)]
    width = 0.8 / max(1, len(libs))
    for j, lib in enumerate(libs):
        name, colour = LIB_STYLE.get(lib, (lib, "grey"))
        for i, op in enumerate(ops):
            r, e = by.get((lib, op)), by.get(("ember", op))
            if r is None or e is None:
                continue
            ratio = r["median_ms"] / e["median_ms"]
            x = i + (j - (len(libs) - 1) / 2) * width
            ax.bar(x, ratio, width * 0.92, color=colour, label=name if i == 0 else None)
            bits = r.get("precision_bits")
            lab = _fmt_time(r["median_ms"]) + (f"\n{bits:.1f} b" if bits is not None else "")
            if r.get("levels_after") is not None:
                lab += f"\n{r['levels_after']} lv"
            ax.text(x, ratio * 1.04, lab, ha="center", va="bottom", fontsize=6.5)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}x" if v in (0.5, 2, 3, 5) else ""))
    ax.axhline(1.0, color="black", lw=0.6)
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels([OP_LABEL.get(op, op) for op in ops], fontsize=8)
    ax.set_ylabel("median time / Ember's median (same run)")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3, which="both")
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, 0.5), hi * 2.2)
    ax.legend(fontsize=8, loc="upper left")


def fig_peers(out: Path) -> None:
    """peers.png: one row per CPU kind (one data/peers_<kind>.json each)."""
    files = sorted(glob.glob(str(DATA / "peers_*.json")))
    if not files:
        raise FileNotFoundError("no data/peers_*.json")
    recs = [(Path(f).name, json.load(open(f))) for f in files]
    rows = [(fname, rec, g) for fname, rec in recs for g in rec["data"]["groups"]]
    fig, axes = plt.subplots(len(rows), 2, figsize=(13, 5.2 * len(rows)), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 1.2]})
    errors, runs = [], []
    for (fname, rec, g), ax in zip(rows, axes):
        ops_recs = _records(g, "ops") + [dict(r, op="boot") for r in _records(g, "boot")]
        std = [r for r in ops_recs if r.get("op") != "rotate_many"]
        m = rec["machine"]
        _peer_panel(ax[0], std, ["mul", "rotate", "boot"], ["ember", "openfhe", "desilo", "seal", "lattigo"],
                    f"{g['cpu_kind'].upper()} ({m['cpu']}, {m['cores']} cores): N = 2^16, 24 levels, dnum 3, "
                    f"2 threads; bootstrapping: each library's own setup at N = 2^16")
        seal = _records(g, "seal_config")
        if seal:
            _peer_panel(ax[1], seal, ["mul", "rotate"], ["ember", "seal"],
                        "SEAL's configuration: N = 2^15, 15 levels,\n1 thread (Ember: dnum 16, --insecure)")
        else:
            ax[1].axis("off")
        for r in ops_recs + seal:
            if r.get("error"):
                err = str(r["error"]).split(";")[0].split("(")[0].strip()
                errors.append(f"{LIB_STYLE.get(r['library'], (r['library'],))[0]} at N = 2^{r.get('log_n')}: {err}")
        runs.append(f"{g['cpu_kind']}: " + ", ".join(
            f"{r['name']} {r['seconds']:.0f} s (1-min load after {r['loadavg_after'][0]:.1f})" for r in g["runs"]))
    note = ("Bar labels: median time, precision in bits (and levels left after bootstrapping). Bootstrapping setups "
            "differ in levels left, precision and security: see bench/peers/README.md. Runs: " + "; ".join(runs)
            + ". ")
    if errors:
        note += "Not measured: " + "; ".join(sorted(set(errors))[:4]) + "."
    footer(fig, [(f, r) for f, r in recs], note)
    _finish(fig, out / "peers.png", 2 * len(recs) + 2 + (1 if errors else 0) + len(rows))


# ---- 2. key-switch kernels ----------------------------------------------------------------------------------------
def fig_keyswitch(out: Path) -> None:
    """keyswitch_bandwidth.png: achieved GB/s per kernel against the measured copy bandwidth."""
    rec = load("keyswitch_bandwidth")
    d = rec["data"]
    ks = set(d["keyswitch_kernels"])
    fig, axes = plt.subplots(1, len(d["ops"]), figsize=(13, 5.8), sharex=True)
    copy, copy1 = d["machine_peak"]["copy_gb_s"], d["machine_peak_1thread"]["copy_gb_s"]
    for ax, (op, o) in zip(axes, d["ops"].items()):
        names = list(o["kernels"])
        gbs = [o["kernels"][k]["gb_s"] for k in names]
        cols = ["#d62728" if k in ks else "#7f7f7f" for k in names]
        y = range(len(names))
        ax.barh(y, gbs, color=cols)
        for i, k in enumerate(names):
            v = o["kernels"][k]
            ax.text(gbs[i] + 0.2, i, f"{v['bytes'] / 1e6:.0f} MB in {v['ms']:.1f} ms", va="center", fontsize=7)
        ax.axvline(copy, color="black", ls="--", lw=1.2, label=f"copy bandwidth, {d['params']['threads']} threads: "
                                                                f"{copy:.1f} GB/s")
        ax.axvline(copy1, color="black", ls=":", lw=1.0, label=f"copy bandwidth, 1 thread: {copy1:.1f} GB/s")
        ax.set_yticks(list(y))
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("achieved GB/s = (bytes read + written) / kernel time")
        ax.set_title(f"{'HE Mul' if op == 'mul' else 'rotate by 1'}: {o['wall_ms_untraced_median']:.0f} ms "
                     f"(kernels {o['kernel_ms_sum']:.0f} ms traced)", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    hi = max(max(v["gb_s"] for v in o["kernels"].values()) for o in d["ops"].values())
    axes[0].set_xlim(0, max(hi, copy, copy1) * 1.45)
    handles, labels = axes[0].get_legend_handles_labels()
    handles += [Patch(color="#d62728"), Patch(color="#7f7f7f")]
    labels += ["key switching: NTTs, base conversions (ModUp / ModDown), inner product with the key (dot), "
               "ModDown's scalings, copies", "tensor product / automorphism / addition"]
    fig.legend(handles, labels, fontsize=7.5, loc="lower center", ncol=2, bbox_to_anchor=(0.5, 0.075), frameon=False)
    p = d["params"]
    fig.suptitle(f"Kernels of HE Mul and rotate against the copy bandwidth (ember.trace(); N = 2^{p['log_n']}, "
                 f"{p['levels']} levels, dnum {p['dnum']}, {p['threads']} threads; medians of {d['runs']} runs)",
                 fontsize=10)
    footer(fig, [("keyswitch_bandwidth.json", rec)])
    _finish(fig, out / "keyswitch_bandwidth.png", 5)


# ---- 3. Gantt chart -----------------------------------------------------------------------------------------------
def fig_gantt(out: Path) -> None:
    """boot_gantt.png: HEFT and PEFT schedules of the bootstrapping graph (modelled FPGAs and GPUs)."""
    rec = load("boot_gantt")
    d = rec["data"]
    devs = d["platform"]["devices"]
    algos = [a for a in ("heft", "peft") if "tasks" in d["schedules"].get(a, {})]
    ops = sorted({t[4] for a in algos for t in d["schedules"][a]["tasks"]})
    count = {op: sum(1 for t in d["schedules"][algos[0]]["tasks"] if t[4] == op) for op in ops}
    ops.sort(key=lambda op: -count[op])
    cmap = plt.get_cmap("tab20")
    colour = {op: cmap(i % 20) for i, op in enumerate(ops)}
    fig, axes = plt.subplots(len(algos), 1, figsize=(13, 2.3 + 2.1 * len(algos)), sharex=True, squeeze=False)
    labels = []
    for dv in devs:
        src = dv["cost_source"]
        what = DEVICE_NAMES.get(dv["model"], dv["model"])
        labels.append(f"{dv['name']}: {what}\n({'MODELLED' if src == 'modelled' else src + ' costs'})")
    for ax, algo in zip(axes[:, 0], algos):
        s = d["schedules"][algo]
        for _, dev, st, fin, op in s["tasks"]:
            ax.barh(dev, (fin - st) * 1e3, left=st * 1e3, height=0.75, color=colour[op], edgecolor="none")
        ax.set_yticks(range(len(devs)))
        ax.set_yticklabels(labels, fontsize=7.5)
        ax.invert_yaxis()
        summ = s["summary"]
        util = ", ".join(f"{k} {v:.0%}" for k, v in summ["utilisation"].items() if v > 0.005)
        ax.set_title(f"{algo.upper()}: makespan {summ['makespan_s'] * 1e3:.2f} ms (modelled), "
                     f"{summ['transfers']} transfers; busy: {util}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time (ms)")
    top = ops[:14]
    axes[0, 0].legend([Patch(color=colour[o]) for o in top], [f"{o} ({count[o]})" for o in top], fontsize=6.5,
                      ncol=7, loc="lower left", bbox_to_anchor=(0, 1.12), frameon=False)
    g = d["graph"]
    sc = d["schedules"]
    others = ", ".join(f"{a} {sc[a]['summary']['makespan_s'] * 1e3:.2f} ms" for a in sc if a not in algos)
    lb = d["lower_bound"]["bound"] * 1e3
    fig.suptitle(f"Bootstrapping graph (N = 2^{g['params']['log_n']}, {g['nodes']} operations, symbolic capture) on "
                 f"{d['platform']['name']}: CPU + 2 FPGA + 2 GPU, FPGAs and GPUs MODELLED\n"
                 f"other schedules: {others}; lower bound on any schedule {lb:.2f} ms", fontsize=9.5)
    footer(fig, [("boot_gantt.json", rec)], "MODELLED: " + d["note"])
    _finish(fig, out / "boot_gantt.png", 4)


# ---- 4. HELR loss -------------------------------------------------------------------------------------------------
def fig_helr(out: Path) -> None:
    """helr_loss.png: training log-loss per iteration, encrypted against float64."""
    rec = load("helr_loss")
    d = rec["data"]
    it = d["iterations"]
    fig, ax = plt.subplots(1, 3, figsize=(13, 5.0), gridspec_kw={"width_ratios": [1.6, 1, 1]})
    ax[0].plot(it, d["loss_encrypted"], "-o", ms=3.5, color="#d62728", label="encrypted (EncryptedLogisticRegression)")
    ax[0].plot(it, d["loss_float64"], "--", color="black", lw=1.2, label="float64 (Float64LogisticRegression)")
    ax[0].axhline(d["loss_sklearn"], color="#1f77b4", ls=":", label=f"scikit-learn optimum {d['loss_sklearn']:.3f}")
    ax[0].set(xlabel="iteration", ylabel="training log-loss", title="training loss")
    ax[1].plot(it, d["test_accuracy_encrypted"], "-o", ms=3, color="#d62728", label="encrypted")
    ax[1].plot(it, d["test_accuracy_float64"], "--", color="black", lw=1.2, label="float64")
    ax[1].axhline(d["test_accuracy_sklearn"], color="#1f77b4", ls=":", label="scikit-learn")
    ax[1].set(xlabel="iteration", ylabel="test accuracy", title="test accuracy")
    diffs = d["max_weight_diff_per_iteration"]
    ax[2].semilogy(it[1:], diffs, "-o", ms=3, color="#555555")
    ax[2].set(xlabel="iteration", ylabel="max |w_encrypted - w_float64|", title="weights: encrypted vs float64")
    for a in ax:
        a.grid(alpha=0.3)
    ax[0].legend(fontsize=8)
    ax[1].legend(fontsize=8, loc="lower right")
    hp, p = d["hyperparameters"], d["params"]
    per_it = d["train_seconds"] / max(1, len(it) - 1)
    fig.suptitle(f"HELR on {d['dataset']}\nN = 2^{p['log_n']}, {p['levels']} levels, {d['threads']} threads, "
                 f"{d['bootstraps']} bootstrappings; {hp['iterations']} iterations, learning rate "
                 f"{hp['learning_rate']}, decay {hp['decay']}, sigmoid on [-{hp['sigmoid_interval']:g}, "
                 f"{hp['sigmoid_interval']:g}]; {per_it:.2f} s per iteration (bootstrapping included)", fontsize=9)
    footer(fig, [("helr_loss.json", rec)], f"keygen {d['keygen_seconds']:.0f} s, training {d['train_seconds']:.0f} s "
           f"of which bootstrapping {d['bootstrap_seconds']:.0f} s; final max |w_enc - w_f64| "
           f"{d['max_weight_diff_final']:.2g}, max |loss_enc - loss_f64| "
           f"{max(abs(a - b) for a, b in zip(d['loss_encrypted'], d['loss_float64'])):.2g}")
    _finish(fig, out / "helr_loss.png", 3)


# ---- 5. bootstrapping precision -----------------------------------------------------------------------------------
def fig_precision(out: Path) -> None:
    """boot_precision.png: worst-slot and mean precision after bootstrapping, per input shape."""
    rec = load("boot_precision")
    d = rec["data"]
    cfgs = d["configs"]
    heights = [len(c["rows"]) for c in cfgs]
    fig, axes = plt.subplots(len(cfgs), 1, figsize=(11, 1.6 + 0.34 * sum(heights) + 0.8 * len(cfgs)),
                             gridspec_kw={"height_ratios": heights}, sharex=True, squeeze=False)
    for ax, c in zip(axes[:, 0], cfgs):
        rows = c["rows"]
        y = list(range(len(rows)))
        mins = [r["min_bits"] for r in rows]
        means = [r["mean_bits"] for r in rows]
        ax.barh([v - 0.2 for v in y], mins, 0.38, color="#d62728", label="worst slot (min bits)")
        ax.barh([v + 0.2 for v in y], means, 0.38, color="#1f77b4", label="mean (-log2 mean |error|)")
        for i, r in enumerate(rows):
            ax.text(mins[i] + 0.15, i - 0.2, f"{mins[i]:.2f}", va="center", fontsize=6.5)
            ax.text(means[i] + 0.15, i + 0.2, f"{means[i]:.2f}", va="center", fontsize=6.5)
        ax.set_yticks(y)
        ax.set_yticklabels([r["shape"] + ("" if r["origin"].startswith("ember") else " *") for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.axvline(25, color="black", ls="--", lw=1, label="25 bits (documented guarantee at N = 2^16)")
        p = c["params"]
        ax.set_title(f"{c['label']}: N = 2^{p['log_n']}, scale 2^{c['log_scale_after']:.0f} after bootstrapping, "
                     f"{c['levels_after']} levels left, message ratio R = {c['message_ratio_bits']}, "
                     f"{d['reps_per_shape']} fresh encryptions per shape", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    lo = min(min(r["min_bits"] for r in c["rows"]) for c in cfgs)
    hi = max(max(r["mean_bits"] for r in c["rows"]) for c in cfgs)
    axes[-1, 0].set_xlim(max(0, math.floor(lo) - 3), hi + 2.5)
    axes[-1, 0].set_xlabel("bits of precision after one bootstrapping (absolute error, ember.precision)")
    axes[0, 0].legend(fontsize=8, loc="lower right")
    footer(fig, [("boot_precision.json", rec)], "* shapes defined in docs/figures/gen_data.py (extra_shapes); the "
           "others are ember.precision.INPUT_SHAPES. Bits are absolute: tiny inputs keep the same absolute error.")
    _finish(fig, out / "boot_precision.png", 3)


FIGURES = {"peers": fig_peers, "keyswitch_bandwidth": fig_keyswitch, "boot_gantt": fig_gantt,
           "helr_loss": fig_helr, "boot_precision": fig_precision}


def main() -> int:
    """Draw every figure whose JSON exists into OUTDIR."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", default=None, help="comma list of " + ",".join(FIGURES))
    ap.add_argument("--strict", action="store_true", help="exit with status 1 when a figure's JSON is missing")
    args = ap.parse_args()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    missing = 0
    for name, fn in FIGURES.items():
        if args.only and name not in args.only.split(","):
            continue
        try:
            fn(out)
        except FileNotFoundError as e:
            missing += 1
            print(f"{name}: skipped, no data ({e})", file=sys.stderr)
    return 1 if missing and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
