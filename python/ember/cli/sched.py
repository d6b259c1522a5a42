"""`ember schedule`, `ember graph`, `ember profile`: JSON on stdout (one object), a table on stderr / a terminal.

    ember graph boot --log-n 13 --insecure -o boot.json        # capture a program's graph (symbolic) and save it
    ember graph show boot.json [--png boot.png]                 # op counts, critical path, summary
    ember schedule boot.json --platform paper:2,2 --algo heft --png gantt.png
    ember schedule helr --log-n 16 --platform paper --algo all  # naive, heft, peft and best side by side
    ember schedule boot.json --platform paper:4,0 --limb-parts 4  # every operation split over 4 limb shares
    ember profile --log-n 16 --threads 2 -o cpu.json            # measure this CPU's cost table
    ember profile --log-n 16 --bootstrappable --threads 2 --with-bootstrapping 3 -o cpu.json  # + circuits' ops

Every figure of a modelled device (FPGA, GPU, ASIC) is marked "modelled" in the output.
"""
from __future__ import annotations

import json
import sys


def _table(title: str, cols: list[str], rows: list[list]) -> None:
    """Print a table on stderr."""
    from rich.console import Console
    from rich.table import Table
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(*[f"{x:.4g}" if isinstance(x, float) else str(x) for x in r])
    Console(file=sys.stderr).print(t)


def _load_graph(args):
    """Return the graph of the source argument: a named program, a graph JSON file or FILE.py:FUNCTION."""
    from ..graph import PROGRAMS, graph_of, load
    src = args.source
    if src in PROGRAMS:   # the one registry of named programs (ember.graph.programs); None: the program's default
        return graph_of(src, log_n=args.log_n, levels=args.levels, insecure=args.insecure)
    if src.endswith(".json"):
        return load(src)
    if ".py:" in src:  # FILE.py:FUNCTION, a program(ctx, keys) -> ciphertext, captured symbolically
        return _program_from_file(src, args)
    raise ValueError(f"unknown program or graph {src!r}; give a graph JSON file, FILE.py:FUNCTION or one of "
                     f"{', '.join(PROGRAMS)}")


def _program_from_file(spec: str, args):
    """Capture FILE.py:FUNCTION symbolically on bootstrappable parameters and return its graph."""
    import importlib.util

    from ..graph import capture_program
    from ..params import CkksParams
    path, _, name = spec.rpartition(":")
    mod_spec = importlib.util.spec_from_file_location("ember_user_program", path)
    if mod_spec is None:
        raise ValueError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ValueError(f"{path} has no function {name!r}")
    params = CkksParams.bootstrappable(log_n=16 if args.log_n is None else args.log_n,
                                       levels=9 if args.levels is None else args.levels, insecure=args.insecure)
    rotations = getattr(fn, "rotations", ())
    g = capture_program(fn, params, rotations=rotations, bootstrapping=True)
    g.meta["program"] = spec
    return g


def _costs(args, graph, platform):
    """Return the costs of the graph on the platform: the --costs tables, profile-guided updates, the defaults."""
    from ..sched.costs import CostTable
    from ..sched.plan import default_costs
    table = CostTable()
    for path in args.costs or []:
        table.merge(CostTable.load(path))
    if args.profile_from:
        with open(args.profile_from) as f:
            run = json.load(f)
        model = args.profile_device or platform.devices[0].model
        n = table.update_from_run(run, model)
        print(f"profile-guided: {n} (op, level) entries of {model} updated from {args.profile_from}", file=sys.stderr)
    return default_costs(graph, platform, table)


def _schedule(args) -> int:
    """Run `ember schedule`; return the exit status."""
    from ..sched.plan import schedule_graph
    from ..sched.platform import load_platform
    graph = _load_graph(args)
    if args.split_hoisted:
        from ..graph import split_hoisted
        graph = split_hoisted(graph, parts=args.split_hoisted)
    platform = load_platform(args.platform)
    costs = _costs(args, graph, platform)
    algos = ["naive", "heft", "peft", "best"] if args.algo == "all" else [args.algo]
    out = {"graph": {"nodes": len(graph), "program": graph.meta.get("program"), "params": graph.meta.get("params")},
           "platform": platform.to_dict(),
           "cost_sources": {m: costs.source(m) for m in sorted({d.model for d in platform.devices})},
           "cost_notes": {m: costs.note(m) for m in sorted({d.model for d in platform.devices})},
           "schedules": {}}
    rows = []
    base = None
    ops = {n.id: n.op for n in graph.nodes}
    limb_problem = None
    if args.limb_parts:
        from ..sched.limbs import limb_split
        from ..sched.plan import schedule_problem
        limb_problem = limb_split(graph, platform, costs, args.limb_parts)
        out["graph"]["limb_parts"], out["graph"]["tasks"] = args.limb_parts, len(limb_problem.tasks)
        ops = {t: ops[t[0]] for t in limb_problem.tasks} if args.limb_parts > 1 else ops
    for a in algos:
        if limb_problem is None:
            s = schedule_graph(graph, platform, costs, a, seed=args.seed)
        else:
            s = schedule_problem(limb_problem, a, args.seed)
        s.validate()
        summ = s.summary()
        out["schedules"][a] = summ if not args.tasks else s.to_dict()
        base = s.makespan if a == "naive" else base
        rows.append([a, s.makespan * 1e3, (base / s.makespan) if base else "", s.slr, s.speedup, s.efficiency,
                     s.cp_min * 1e3, " ".join(f"{k}={v:.2f}" for k, v in s.utilisation.items())])
        if args.png:
            from ..sched.draw import gantt
            path = args.png if len(algos) == 1 else args.png.replace(".png", f"-{a}.png")
            gantt(s, path, title=f"{a} on {platform.name}", ops=ops)
    modelled = [d.name for d in platform.devices if costs.source(d.model) == "modelled"]
    from ..sched.bounds import lower_bound
    lb = lower_bound(s.problem)  # any schedule of this graph on this platform takes at least this long
    out["lower_bound"] = {(k if k == "sync_tasks" else k + "_s"): v for k, v in lb.items()}
    out["modelled_devices"] = modelled
    out["note"] = ("times of " + ", ".join(modelled) + " are MODELLED (ember.sim), not measured") if modelled else "measured costs"
    print(json.dumps(out, indent=None if not args.pretty else 1))
    _table(f"ember schedule: {len(graph)} nodes on {platform.name}" + (" (modelled devices: " + ", ".join(modelled) + ")" if modelled else ""),
           ["algo", "makespan_ms", "vs naive", "SLR", "speedup", "efficiency", "CP bound ms", "utilisation"], rows)
    print(f"lower bound on any schedule: {lb['bound'] * 1e3:.4g} ms (with task copies: "
          f"{lb['bound_with_copies'] * 1e3:.4g} ms; ember.sched.bounds)", file=sys.stderr)
    for m, note in out["cost_notes"].items():   # which CPU profile a modelled CPU's figures come from
        if "profile: " in note:
            print(f"{m}: {note[note.index('profile: '):]}", file=sys.stderr)
    return 0


def _graph(args) -> int:
    """Run `ember graph`; return the exit status."""
    if args.source == "show":
        if not args.file:
            raise SystemExit("ember graph show FILE.json")
        from ..graph import load
        g = load(args.file)
    else:
        g = _load_graph(args)
    if args.output:
        g.save(args.output)
    summ = g.summary()
    summ["critical_path_ops"] = [g.nodes[i].op for i in g.critical_path(lambda n: 1.0)[1]][:50]
    print(json.dumps(summ))
    _table(f"ember graph: {len(g)} nodes ({g.meta.get('mode')})", ["op", "count"], [[k, v] for k, v in g.op_counts().items()])
    if args.png:
        g.draw(args.png)
    return 0


def _profile(args) -> int:
    """Run `ember profile`; return the exit status."""
    import ember
    from ..sched.profile import measure
    from .devices import device_unavailable
    why = device_unavailable(args.device)
    if why:
        raise ValueError(why)
    levels = args.levels
    if args.bootstrappable:
        params = ember.CkksParams.bootstrappable(log_n=args.log_n, levels=9 if levels is None else levels,
                                                 insecure=args.insecure)
    else:
        if levels is None:      # follows N: the most the 128-bit bound allows (9 with --insecure)
            levels = 9 if args.insecure else (ember.CkksParams.max_secure_levels(args.log_n, args.log_scale, 60,
                                                                                  args.dnum) or 9)
        params = ember.CkksParams(log_n=args.log_n, levels=levels, log_scale=args.log_scale, dnum=args.dnum,
                                  insecure=args.insecure)
    levels = None
    if args.every > 1:
        top = len(params.q_primes) - 1
        levels = sorted(set(range(0, top + 1, args.every)) | {top})
    if args.with_bootstrapping and not args.bootstrappable:
        raise ValueError("--with-bootstrapping needs --bootstrappable (parameters that can bootstrap)")
    table = None
    for th in args.threads:
        t = measure(params, threads=th, levels=levels, runs=args.runs, progress=sys.stderr.isatty(),
                    backend=args.device)
        if args.with_bootstrapping:
            from ..sched.profile import measure_bootstrapping
            n = measure_bootstrapping(params, t, threads=th, runs=args.with_bootstrapping,
                                      progress=sys.stderr.isatty(), backend=args.device)
            print(f"{next(iter(t.devices))}: {n} entries from the nodes of live bootstrappings", file=sys.stderr)
        table = t if table is None else table.merge(t)
    if args.output:
        table.save(args.output)
    print(json.dumps(table.to_dict()))
    for name, d in table.devices.items():
        all_levels = sorted({l for lv in d["ops"].values() for l in lv})
        shown = all_levels[:: max(1, len(all_levels) // 6)]
        rows = [[op] + [lv[l] * 1e3 if l in lv else "" for l in shown] for op, lv in sorted(d["ops"].items())]
        _table(f"ember profile {name} ({d['source']}), milliseconds", ["op"] + [f"level {l}" for l in shown], rows)
    return 0


def _clear_errors(fn):
    """Bad input (a malformed graph, an unknown platform, a missing cost) is one line on stderr, exit status 2."""
    def run(args) -> int:
        """Run the subcommand, turning ValueError and FileNotFoundError into a line on stderr and status 2."""
        try:
            return fn(args)
        except (ValueError, FileNotFoundError) as e:
            print(f"ember {args.cmd}: error: {e}", file=sys.stderr)
            return 2
    return run


def add_parser(sub) -> None:
    """Register `ember schedule`, `ember graph` and `ember profile` on the `ember` command's subparsers.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the ``ember`` parser.
    """
    from ..graph import PROGRAMS
    names = ", ".join(PROGRAMS)

    def common(p):
        """Add the program flags (--log-n, --levels, --insecure) to a subcommand."""
        p.add_argument("--log-n", type=int, default=None,
                       help="programs: log2 of the ring degree (default: the program's own; FILE.py:FUNCTION 16)")
        p.add_argument("--levels", type=int, default=None,
                       help="programs: computation levels (default: the program's own; FILE.py:FUNCTION 9)")
        p.add_argument("--insecure", action="store_true", help="allow parameters above the 128-bit bound")

    s = sub.add_parser("schedule", help="schedule a program or a graph JSON on a platform (naive, HEFT, PEFT, best)")
    s.add_argument("source", help=f"a graph JSON file, a named program ({names}: ember.graph.PROGRAMS) or "
                                  "FILE.py:FUNCTION, a program(ctx, keys) -> ciphertext (its optional attribute "
                                  ".rotations lists the rotation keys it needs) captured symbolically on "
                                  "bootstrappable parameters")
    s.add_argument("--platform", default="paper", help="paper[:F,G], this[:T], dask:K[:BW] or a platform JSON")
    s.add_argument("--algo", default="heft", choices=["naive", "heft", "peft", "best", "best-dup", "all"],
                   help="best-dup: best with task duplication (copies of a producer instead of slow transfers)")
    s.add_argument("--costs", action="append", help="cost table JSON (ember profile -o); repeatable")
    s.add_argument("--profile-from", help="RUN.json with per-task times (or a live graph JSON): profile-guided costs")
    s.add_argument("--profile-device", help="the device model the run's times belong to (default: the first device's)")
    s.add_argument("--split-hoisted", type=int, default=0, metavar="PARTS",
                   help="split each hoisted baby-step set into its ModUp and PARTS rotation nodes "
                        "(ember.graph.split_hoisted; the parts cost what the node cost) before scheduling")
    s.add_argument("--limb-parts", type=int, default=0, metavar="K",
                   help="data-parallel over the RNS limbs: every operation split into K limb shares with explicit "
                        "ModUp / ModDown exchanges (ember.sched.limbs; the shares cost what the node cost)")
    s.add_argument("--seed", type=int, default=0, help="naive: random seed")
    s.add_argument("--png", help="draw the Gantt chart(s)")
    s.add_argument("--tasks", action="store_true", help="include every task's device, start and finish")
    s.add_argument("--pretty", action="store_true")
    common(s)
    s.set_defaults(fn=_clear_errors(_schedule))

    g = sub.add_parser("graph", help="capture a program's graph (symbolic) or show a graph JSON")
    g.add_argument("source", help=f"a named program ({names}), FILE.py:FUNCTION, or 'show'")
    g.add_argument("file", nargs="?", help="show: the graph JSON")
    g.add_argument("-o", "--output", help="save the graph JSON")
    g.add_argument("--png", help="draw the graph (small graphs)")
    common(g)
    g.set_defaults(fn=_clear_errors(_graph))

    p = sub.add_parser("profile", help="measure this CPU's (or GPU's) cost table (seconds per op kind and level)")
    p.add_argument("--log-n", type=int, default=14, help="log2 of the ring degree (default 14)")
    p.add_argument("--levels", type=int, default=None,
                   help="levels (default: the most the 128-bit bound allows at --log-n, 5 at 14; --bootstrappable or "
                        "--insecure: 9)")
    p.add_argument("--log-scale", type=int, default=40)
    p.add_argument("--dnum", type=int, default=3)
    p.add_argument("--bootstrappable", action="store_true", help="the parameters of CkksParams.bootstrappable (their levels)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--device", choices=["cpu", "cpu-guarded", "cuda"], default=None,
                   help="the device of the measured Context (default: $EMBER_DEVICE, else cpu), recorded in the "
                        "table; its model: cpu-<T>t, cpu-guarded-<T>t or cuda-1t")
    p.add_argument("--every", type=int, default=1, help="measure every k-th level (the others are interpolated)")
    p.add_argument("--with-bootstrapping", type=int, default=0, metavar="RUNS",
                   help="also time the operations only circuits issue (raised basis, ModRaise, ...) as the nodes of "
                        "RUNS live bootstrappings (needs --bootstrappable)")
    p.add_argument("-o", "--output", help="save the cost table JSON")
    p.add_argument("--insecure", action="store_true")
    p.set_defaults(fn=_clear_errors(_profile))
