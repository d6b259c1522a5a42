"""`ember sim`: the cost simulator on the command line.

    ember sim op Mult --log-n 17 --limbs 35 --dnum 3 --word-bits 64 --cache-mb 0 --accounting paper
    ember sim op all --accounting paper                      # the columns of Table 4 (001)
    ember sim op Mult --accounting ember --log-n 16 --limbs 25 --device cpu --measure
    ember sim op lintrans --accounting ember --log-n 13 --limbs 7 --slots 64 --indices 0..63 --n1 8 --kernels
    ember sim op lintrans --accounting ember --log-n 13 --limbs 7 --indices cts:1 --tech merge   # plain path
    ember sim boot --limbs 40 --dnum 2 --fft-iters 6 --word-bits 50 --cache-mb 32 --tech all --device asic
    ember sim boot --steps --png dram.png                    # Figures 2-3: DRAM per technique, stacked
    ember sim search --cache-mb 32 --bandwidth-gbs 900 --multipliers 2250
    ember sim calibrate                                      # this CPU's profile for --device cpu

A table on a terminal, one JSON object per result on a pipe.
"""
from __future__ import annotations

import json
import sys

from ..sim.cost import TECH_HELP, SimParams

# Terminal tables: the per-result columns (the parameters go to the title); a pipe gets every field as JSON.
_COLS = ["op", "gops", "mults", "dram_gb", "ct_read_gb", "ct_write_gb", "key_read_gb", "pt_read_gb", "ai",
         "cache_level"]
_TIME_COLS = ["time_ms", "bound", "measured_ms", "measured_min_ms"]
_SEARCH_COLS = ["log_n", "word_bits", "limbs", "dnum", "fft_iters", "log_q1", "log_qp", "gops", "dram_gb",
                "time_ms", "bound", "throughput"]
_HEAD = {"gops": "Gops", "mults": "G mults", "dram_gb": "DRAM GB", "ct_read_gb": "ct rd GB", "ct_write_gb": "ct wr GB",
         "key_read_gb": "key rd GB", "pt_read_gb": "pt rd GB", "cache_level": "cache", "time_ms": "pred ms",
         "measured_ms": "meas ms", "measured_min_ms": "meas min ms", "log_q1": "log Q1", "log_qp": "log QP",
         "word_bits": "w", "fft_iters": "fftIter", "throughput": "Eq.3 /1e7", "fresh_limbs": "fresh"}


def _title(cmd: str, r: dict) -> str:
    """Return a table title naming the parameters of a result."""
    return (f"{cmd} ({r['accounting']}): log N = {r['log_n']}, {r['limbs']} limbs (operand {r['level_limbs']}), "
            f"dnum = {r['dnum']}, {r['word_bits']:g}-bit words, {r['cache_mb']:g} MiB, techniques: {r['techniques']}"
            + (f", device {r['device']}" if r.get("device") else ""))


# Figures 2 and 3 of 001: each step adds one technique to the previous ones.
PAPER_STEPS = [("baseline", "none"), ("O(1) limbs", "o1"), ("O(beta) limbs", "o1,beta"),
               ("O(alpha) limbs", "o1,beta,alpha"), ("limb re-order", "caching"), ("ModDown merge", "caching,merge"),
               ("ModDown hoist", "caching,merge,hoist"), ("key compression", "all")]
EMBER_STEPS = [("plain", "none"), ("ModDown merge", "merge"), ("ModUp/ModDown hoisting", "merge,hoist"),
               ("key compression", "merge,hoist,compress")]


def _emit(records: list[dict], cols: list[str], title: str, stream=None) -> None:
    """Print results: one JSON object per line on a pipe, a table of `cols` on a terminal."""
    stream = stream or sys.stdout
    if not stream.isatty():
        for r in records:
            print(json.dumps(r), file=stream, flush=True)
        return
    from rich.console import Console
    from rich.table import Table

    cols = [c for c in cols if any(r.get(c) is not None for r in records)
            and not (c == "pt_read_gb" and not any(r.get(c) for r in records))]
    t = Table(title=title)
    for c in cols:
        t.add_column(_HEAD.get(c, c), justify="right")
    for r in records:
        t.add_row(*[_fmt(r[c] / 1e9 if c == "mults" else r.get(c)) for c in cols])
    Console(file=stream).print(t)


def _fmt(v) -> str:
    """Format a table cell (floats and large integers to 4 significant digits, None as empty)."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int) and abs(v) >= 10 ** 7:
        return f"{v:.4g}"
    return str(v)


def _add_params(p, search=False) -> None:
    """Add the simulator's parameter flags (fewer for search, which takes lists) to a subcommand."""
    g = p.add_argument_group("parameters")
    if not search:
        g.add_argument("--log-n", type=int, default=17)
        g.add_argument("--limbs", type=int, default=35, help="ciphertext limbs at the top (L + 1; the paper's l)")
        g.add_argument("--level-limbs", type=int, default=None, help="limbs of the operand (default: --limbs)")
        g.add_argument("--dnum", type=int, default=3)
        g.add_argument("--word-bits", type=float, default=64, help="bits per stored residue (64: Ember, Table 4)")
        g.add_argument("--prime-bits", type=int, default=50, help="bits per prime (log Q1, security)")
        g.add_argument("--fft-iters", type=int, default=3, help="linear transforms per DFT in bootstrapping")
    g.add_argument("--poly-degree", type=int, default=63, help="EvalMod polynomial degree")
    g.add_argument("--double-angle", type=int, default=2, help="EvalMod squarings")
    p.add_argument("--cache-mb", type=float, default=32 if search else 0, help="on-chip memory in MiB")
    p.add_argument("--tech", default=None,
                   help="MAD techniques: none, all, caching, or a comma list of "
                        + ", ".join(f"{k} ({v})" for k, v in TECH_HELP.items())
                        + "; '-name' removes one. Default: paper: caching (what fits); ember: merge,hoist")


def _params(a) -> SimParams:
    """Return the SimParams of the parsed flags."""
    w = int(a.word_bits) if float(a.word_bits).is_integer() else a.word_bits
    return SimParams(log_n=a.log_n, limbs=a.limbs, dnum=a.dnum, word_bits=w, prime_bits=a.prime_bits,
                     fft_iters=a.fft_iters, poly_degree=a.poly_degree, double_angle=a.double_angle,
                     level_limbs=a.level_limbs)


def _device(a):
    """Return the device profile of --device (None without one), saying on stderr which CPU profile is used."""
    if not getattr(a, "device", None):
        return None
    if a.device == "cpu":   # this machine's calibration, else the embedded reference machine's: say which
        from ..sim.devices import cpu_profile
        prof, label = cpu_profile(getattr(a, "profile", None))
        print(f"ember sim: cpu profile: {label}", file=sys.stderr)
        return prof
    from ..sim.devices import load
    return load(a.device, getattr(a, "profile", None))


def _fail(cmd: str, e: Exception) -> int:
    """Report an error on stderr and return the exit status 2."""
    print(f"ember sim {cmd}: {e}", file=sys.stderr)
    return 2


def _op(a) -> int:
    """Run `ember sim op`; return the exit status."""
    from ..sim.model import OPS, simulate

    try:
        p = _params(a)
        dev = _device(a)
        ops = [o for o in OPS if o not in ("LinearTransform", "PolyEval", "HoistedRotate")] if a.op == "all" else [a.op]
        indices = _lt_indices(a, p)
        results = [simulate(op, p, a.accounting, a.cache_mb, a.tech, dev, a.rotations, a.diagonals, a.fft_style,
                            indices=indices, slots=a.slots, n1=a.n1)
                   for op in ops]
    except (ValueError, FileNotFoundError) as e:
        return _fail("op", e)
    records = []
    for r in results:
        rec = r.record()
        if a.measure:
            from ..sim.calibrate import measure
            try:
                lt = None
                if r.op == "LinearTransform":
                    from ..sim.kernels import lt_spec
                    lt = lt_spec(p, a.diagonals, indices, a.slots, a.n1)
                rec.update(measure(r.op, p, threads=a.threads, runs=a.runs, rotations=a.rotations,
                                   merged=r.techniques.merge, lt=lt, hoisted=r.techniques.hoist))
            except (ValueError, ImportError) as e:
                return _fail("op --measure", e)
            if "time_ms" in rec:
                rec["predicted_over_measured"] = round(rec["time_ms"] / rec["measured_ms"], 4)
        if a.kernels and r.kernels:
            rec["kernels"] = r.kernels
        records.append(rec)
    _emit(records, _COLS + _TIME_COLS + ["predicted_over_measured"], _title("ember sim op", records[0]))
    if a.kernels and sys.stdout.isatty():
        for r in results:
            _emit([dict(kernel=k, **c) for k, c in sorted(r.kernels.items())],
                  ["kernel", "calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written"], f"{r.op}: kernels")
    if a.png:
        from ..sim.devices import BUILTIN
        from ..sim.plot import roofline
        roofline(results, dev or BUILTIN["asic"], a.png)
    return 0


def _lt_indices(a, p: SimParams):
    """Return the diagonal indices of --indices for LinearTransform (None: --diagonals or the first DFT factor)."""
    if not a.indices:
        return None
    from ..sim.kernels import parse_indices
    return parse_indices(a.indices, a.slots or p.slots, p.fft_iters)


def _boot_library(a) -> int:
    """Model the library's own bootstrapping (CkksParams.bootstrappable(log_n)) and print its record.

    The bootstrapping is captured symbolically as a graph and modelled node by node (graph_model: each node
    equals the library's measured counters), so the figures are what the library runs -- sparse-secret
    encapsulation and EvalMod as built. Returns the exit status.
    """
    import ember
    from ..sim.graph_model import UNTRACED, op_model, operand_raised
    from ..sim.kernels import Ring
    from ..sim.timing import predict
    from ..graph.programs import boot_graph
    try:
        dev = _device(a)
        g = boot_graph(log_n=a.log_n, insecure=a.log_n < 16)
    except (ValueError, FileNotFoundError) as e:
        return _fail("boot", e)
    params = ember.CkksParams.bootstrappable(log_n=a.log_n, insecure=a.log_n < 16)
    ring = Ring.from_params(params._core)
    tot = {k: 0 for k in ("mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written")}
    ms = 0.0
    for n in g.nodes:
        levels = [g.values[v].level for v in n.inputs if g.values[v].kind == "ciphertext"]
        m = op_model(ring, n.op, levels, n.level, n.params, len(n.outputs), raised=operand_raised(g, n), slots=n.slots)
        for kern, c in m.counts.items():
            if kern in UNTRACED:
                continue
            for k in tot:
                tot[k] += c[k]
        if dev is not None:
            ms += predict(m.cost, dev, m.counts, ring.log_n)["time_ms"]
    rec = {"op": "Bootstrap", "source": "library graph", "log_n": a.log_n, "nodes": len(g),
           "op_counts": g.op_counts(), "gops": round((tot["mod_mul"] + tot["mod_add"]) / 1e9, 4), **tot,
           "coverage": "every kernel of the bootstrapping: the circuits run only public evaluator operations"}
    if dev is not None:
        rec.update(device=dev.name, time_ms=round(ms, 4), modelled=True)
    print(json.dumps(rec))
    return 0


def _boot(a) -> int:
    """Run `ember sim boot`; return the exit status."""
    from ..sim.model import simulate

    if getattr(a, "library", False):
        return _boot_library(a)
    try:
        p = _params(a)
        dev = _device(a)
        if a.steps:
            steps = PAPER_STEPS if a.accounting == "paper" else EMBER_STEPS
            if a.tech:
                print("ember sim boot: --steps walks its own technique list; --tech is ignored", file=sys.stderr)
        else:
            steps = [("", a.tech)]
        results = [simulate("Bootstrap", p, a.accounting, a.cache_mb, tech, dev, fft_style=a.fft_style)
                   for _, tech in steps]
    except (ValueError, FileNotFoundError) as e:
        return _fail("boot", e)
    records = []
    for (label, _), r in zip(steps, results):
        rec = r.record()
        if label:
            rec["step"] = label
        if a.stages:
            rec["stages"] = {k: {"gops": round(c.ops / 1e9, 4), "dram_gb": round(c.dram / 1e9, 4)}
                             for k, c in r.stages.items()}
        records.append(rec)
    cols = ["step"] + [c for c in _COLS if c not in ("op", "mults")] + ["log_q1"] + _TIME_COLS + ["throughput"]
    _emit(records, cols, _title("ember sim boot", records[0]).replace(
        f"techniques: {records[0]['techniques']}", "techniques: per step" if a.steps else
        f"techniques: {records[0]['techniques']}") + f", fftIter = {p.fft_iters}")
    if a.stages and sys.stdout.isatty():
        for rec in records:
            _emit([dict(stage=k, **v) for k, v in rec["stages"].items()], ["stage", "gops", "dram_gb"],
                  f"stages {rec.get('step', '')}")
    if a.png:
        from ..sim.plot import stacked_bars
        labels = [lab or r.techniques.label() for (lab, _), r in zip(steps, results)]
        stacked_bars(results, labels, a.png, f"Bootstrap, log N = {p.log_n}, {p.limbs} limbs, dnum = {p.dnum}, "
                                             f"{a.cache_mb:g} MiB ({a.accounting})")
    return 0


def _ints(spec: str) -> list[int]:
    """Parse a list of integers and ranges, e.g. "1-6" or "40,45,50"."""
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def _search(a) -> int:
    """Run `ember sim search`; return the exit status (1 when no parameter set satisfies the bound)."""
    from ..sim.devices import Profile, asic, load
    from ..sim.search import SPARSE_192, search

    try:
        if a.device:
            dev = load(a.device, a.profile)
        else:
            dev = asic("asic", a.multipliers, a.bandwidth_gbs * 1e9, a.cache_mb,
                       f"{a.multipliers} multipliers at {a.freq_ghz} GHz, {a.bandwidth_gbs} GB/s",
                       freq_hz=a.freq_ghz * 1e9)
        bound = None
        if a.max_log_qp:
            bound = lambda log_n: a.max_log_qp  # noqa: E731
        elif a.sparse_secret:
            bound = lambda log_n: SPARSE_192.get(log_n, 0)  # noqa: E731
        res = search(a.cache_mb, dev, _ints(a.log_n), _ints(a.word_bits), _ints(a.dnum), _ints(a.fft_iters),
                     a.tech or "all", a.poly_degree, a.double_angle, a.precision_bits, bound, a.limbs)
    except (ValueError, FileNotFoundError) as e:
        return _fail("search", e)
    if not res:
        print("ember sim search: no parameter set satisfies the bound", file=sys.stderr)
        return 1
    assert isinstance(dev, Profile)
    _emit(res[: a.top], _SEARCH_COLS, f"ember sim search: {len(res)} sets, {a.cache_mb:g} MiB, {dev.name} "
                                      "(throughput: Eq. 3 / 1e7, the units of Table 6 of 001)")
    return 0


def _calibrate(a) -> int:
    """Run `ember sim calibrate` and save the CPU profile; return the exit status."""
    from pathlib import Path

    from ..sim.calibrate import calibrate
    from ..sim.devices import default_cpu_profile_path

    say = (lambda m: print(m, file=sys.stderr)) if sys.stderr.isatty() else None
    try:
        prof = calibrate(SimParams(log_n=a.compute_log_n, limbs=a.compute_limbs, dnum=2, prime_bits=50),
                         SimParams(log_n=a.stream_log_n, limbs=a.stream_limbs, dnum=3, prime_bits=50),
                         threads=a.threads, repeats=a.repeats, progress=say)
    except ImportError as e:
        return _fail("calibrate", e)
    out = Path(a.out) if a.out else default_cpu_profile_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    prof.save(out)
    rec = dict(op="calibrate", profile=str(out), threads=prof.threads, mul_per_s=round(prof.mul_per_s),
               add_per_s=round(prof.add_per_s), bandwidth_gbs=round(prof.bandwidth / 1e9, 3),
               ntt_butterflies_per_s=round(prof.kernel_rates.get("ntt_forward", 0)))
    _emit([rec], list(rec), "ember sim calibrate")
    return 0


def add_parser(subparsers) -> None:
    """Register `ember sim` on the `ember` command's subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The subparsers of the ``ember`` parser.
    """
    from ..sim.model import ACCOUNTINGS, OPS

    s = subparsers.add_parser("sim", help="cost simulator: operations, DRAM traffic, time, parameter search")
    sub = s.add_subparsers(dest="sim_cmd", required=True)

    o = sub.add_parser("op", help="one operation (or 'all': the columns of Table 4 of 001)")
    o.add_argument("op", help=f"{', '.join(OPS)} or all (case-insensitive)")
    _add_params(o)
    o.add_argument("--accounting", choices=ACCOUNTINGS, default="paper")
    o.add_argument("--rotations", type=int, default=8, help="rotations of HoistedRotate")
    o.add_argument("--diagonals", type=int, default=0,
                   help="LinearTransform: a band of this many diagonals centred on 0 (0: the first CoeffToSlot "
                        "factor of the library's DFT with --fft-iters levels)")
    o.add_argument("--indices", default=None,
                   help="LinearTransform: its diagonal indices, e.g. '0,1,2,-1' or '-3..3,64', or cts[:F] / "
                        "stc[:F] (factor F of the library's DFT with --fft-iters levels over --slots); the ember "
                        "accounting models the library's LinearTransform exactly (hoisted apply() with the "
                        "hoist technique, else the plain path: --tech merge)")
    o.add_argument("--slots", type=int, default=0, help="LinearTransform: slots (default N/2)")
    o.add_argument("--n1", type=int, default=0, help="LinearTransform: baby steps (0: the library's choice)")
    o.add_argument("--fft-style", choices=["bsgs", "bsgs_hoisted", "unrolled_hoisted"], default=None)
    o.add_argument("--device", default=None, help="time on: cpu, h100, asic, asic-f1, asic-bts, asic-ark, "
                                                  "asic-craterlake, fpga-u280, or a profile JSON")
    o.add_argument("--profile", default=None, help="CPU profile for --device cpu (default: the calibrated one)")
    o.add_argument("--measure", action="store_true", help="also time the library doing it (ember accounting)")
    o.add_argument("--threads", type=int, default=2)
    o.add_argument("--runs", type=int, default=5)
    o.add_argument("--kernels", action="store_true", help="per-kernel counts (ember accounting)")
    o.add_argument("--png", default=None, help="roofline figure with the operations placed on it")
    o.set_defaults(fn=_op)

    b = sub.add_parser("boot", help="bootstrapping (Algorithm 4 of 001)")
    _add_params(b)
    b.add_argument("--accounting", choices=ACCOUNTINGS, default="paper")
    b.add_argument("--fft-style", choices=["bsgs", "bsgs_hoisted", "unrolled_hoisted"], default=None)
    b.add_argument("--steps", action="store_true", help="one result per technique, cumulative (Figures 2-3)")
    b.add_argument("--stages", action="store_true", help="CoeffToSlot / EvalMod / SlotToCoeff split")
    b.add_argument("--device", default=None)
    b.add_argument("--profile", default=None)
    b.add_argument("--png", default=None, help="DRAM traffic per technique, stacked bars (with --steps)")
    b.add_argument("--library", action="store_true", help="model the library's own bootstrapping at --log-n "
                   "(CkksParams.bootstrappable), captured as a graph, node by node")
    b.set_defaults(fn=_boot)

    q = sub.add_parser("search", help="parameters maximizing bootstrapping throughput (Eq. 3 of 001)")
    _add_params(q, search=True)
    q.add_argument("--log-n", default="16,17")
    q.add_argument("--word-bits", default="40,45,50,54,60", help="prime = word sizes to try")
    q.add_argument("--dnum", default="1-6")
    q.add_argument("--fft-iters", default="2-8")
    q.add_argument("--limbs", choices=["all", "max"], default="all", help="every L, or the largest allowed")
    q.add_argument("--bandwidth-gbs", type=float, default=900)
    q.add_argument("--multipliers", type=int, default=2250)
    q.add_argument("--freq-ghz", type=float, default=1.0)
    q.add_argument("--device", default=None, help="a device profile instead of the three numbers above")
    q.add_argument("--profile", default=None)
    q.add_argument("--precision-bits", type=float, default=19)
    q.add_argument("--max-log-qp", type=int, default=None, help="override the 128-bit bound on log QP")
    q.add_argument("--sparse-secret", action="store_true",
                   help="SimFHE's bound for a Hamming-weight-192 secret (3069 bits at N = 2^17), as Table 5 used")
    q.add_argument("--top", type=int, default=10)
    q.set_defaults(fn=_search)

    c = sub.add_parser("calibrate", help="measure this CPU's kernel rates with Ember's kernels")
    c.add_argument("--out", default=None, help="profile JSON (default: ~/.cache/ember/sim-cpu.json, or "
                                               "$EMBER_SIM_CPU_PROFILE; until then the embedded reference machine's)")
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--repeats", type=int, default=5)
    c.add_argument("--compute-log-n", type=int, default=13)
    c.add_argument("--compute-limbs", type=int, default=7)
    c.add_argument("--stream-log-n", type=int, default=15)
    c.add_argument("--stream-limbs", type=int, default=21)
    c.set_defaults(fn=_calibrate)
