"""The `ember` command."""
from __future__ import annotations

import argparse
import json
import sys


def _emit(records: list[dict], stream=sys.stdout) -> None:
    """JSON lines on a pipe, a table on a terminal."""
    if not stream.isatty():
        for r in records:
            print(json.dumps(r), file=stream, flush=True)
        return
    from rich.console import Console
    from rich.table import Table

    cols = ["op", "log_n", "levels", "dnum", "threads", "backend", "runs", "median_ms", "min_ms", "max_ms", "precision_bits"]
    t = Table(title="ember bench")
    for c in cols:
        t.add_column(c, justify="right")
    for r in records:
        t.add_row(*[f"{r.get(c):.4g}" if isinstance(r.get(c), float) else str(r.get(c)) for c in cols])
    Console(file=stream).print(t)


def _bench(args) -> int:
    from . import bench

    ops = bench.OPS if args.op == "all" else [args.op]
    records = []
    for op in ops:
        try:
            rec = bench.run(op, log_n=args.log_n, levels=args.levels, dnum=args.dnum, threads=args.threads,
                            runs=args.runs, log_scale=args.log_scale, first_mod_bits=args.first_mod_bits,
                            hoisted=args.hoisted, prime_bits=args.prime_bits, insecure=args.insecure,
                            log_q=args.log_q, log_p=args.log_p, breakdown=args.breakdown)
        except ValueError as e:
            print(f"ember bench {op}: {e}", file=sys.stderr)
            return 2
        records.append(rec)
        if not sys.stdout.isatty():
            _emit([rec])
    if sys.stdout.isatty():
        _emit(records)
        from .heaan import breakdown_table
        for r in records:
            if "breakdown_ms" in r:
                print(breakdown_table(r))
    return 0


def _info(args) -> int:
    from . import _ember
    print(json.dumps({"version": __import__("ember").__version__, "cpu": _ember.cpu_features()}))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ember", description="Ember: CKKS homomorphic encryption")
    sub = p.add_subparsers(dest="cmd", required=True)

    b = sub.add_parser("bench", help="time an operation; JSON lines on a pipe, a table on a terminal")
    b.add_argument("op", choices=["ntt", "intt", "encrypt", "decrypt", "add", "mul", "rotate", "rotate_many", "heaan-mul", "all"])
    b.add_argument("--log-n", type=int, default=16)
    b.add_argument("--levels", type=int, default=24)
    b.add_argument("--dnum", type=int, default=3)
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--runs", type=int, default=10)
    b.add_argument("--log-scale", type=int, default=50)
    b.add_argument("--first-mod-bits", type=int, default=60)
    b.add_argument("--hoisted", type=int, default=8, help="rotations in rotate_many")
    b.add_argument("--prime-bits", type=int, default=49, help="prime size for ntt / intt (< 50: IFMA path)")
    b.add_argument("--insecure", action="store_true", help="allow parameters above the 128-bit bound")
    b.add_argument("--log-q", type=int, default=1200, help="heaan-mul: logQ, the modulus of fresh ciphertexts")
    b.add_argument("--log-p", type=int, default=30, help="heaan-mul: log of the rescaling factor p")
    b.add_argument("--breakdown", action="store_true", help="heaan-mul: time per function (CRT, NTT, iNTT, iCRT, extra)")
    b.set_defaults(fn=_bench)

    i = sub.add_parser("info", help="version and CPU features")
    i.set_defaults(fn=_info)

    # Further command groups register themselves (each module has add_parser(subparsers)).
    import importlib
    for name in ("ember.sim.cli",):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name and not name.startswith(e.name or "\0"):
                raise
            continue
        mod.add_parser(sub)

    args = p.parse_args(argv)
    if getattr(args, "runs", 1) < 1:
        p.error("--runs must be >= 1")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
