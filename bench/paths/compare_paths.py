#!/usr/bin/env python3
"""Kernel paths side by side: `ember bench OP` under every EMBER_SIMD path this CPU has (and, optionally, under an
earlier build of Ember), alternating the variants round by round so that a noisy machine affects them alike.

    build/venv/bin/python bench/paths/compare_paths.py --ops mul,rotate --rounds 3 -- --log-n 16 --levels 24 --runs 5
    build/venv/bin/python bench/paths/compare_paths.py --ops ntt --baseline today=build/base_py/pkg -- --runs 200

Everything after `--` goes to `ember bench` unchanged. --baseline NAME=DIR runs the `ember` package found in DIR
(e.g. a staged build of an earlier commit: DIR/ember/_ember*.so) as one more variant, with EMBER_SIMD=scalar unless
NAME=DIR:PATH gives another path. Output: one JSON line per (variant, op, round) as `ember bench` prints it, with
"variant" and "round" added, then one summary line per (variant, op) with the median over rounds of the median_ms of
each round and its ratio to the first variant ("ratio_to": its name). The machine is whatever runs this script:
put its name beside any figure you quote.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ORDER = ["scalar", "avx2", "avx512", "ifma"]


def _variants(args) -> list[tuple[str, str | None, str]]:
    """(name, PYTHONPATH or None, EMBER_SIMD) in the order they run each round."""
    import ember  # noqa: PLC0415 - the package under test, for the CPU's best path
    best = ember._ember.cpu_features()["best"]
    paths = ORDER[: ORDER.index(best) + 1] if args.paths == "all" else args.paths.split(",")
    out = []
    for b in args.baseline or []:
        name, _, rest = b.partition("=")
        d, _, simd = rest.partition(":")
        out.append((name, os.path.abspath(d), simd or "scalar"))
    out += [(p, None, p) for p in paths]
    return out


def _run(op: str, pythonpath: str | None, simd: str, extra: list[str]) -> dict:
    env = dict(os.environ, EMBER_SIMD=simd)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, "-c", "import sys; from ember.cli import main; sys.exit(main(sys.argv[1:]))", "bench", op, *extra]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return {"op": op, "error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default="mul,rotate", help="comma list of `ember bench` ops")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every variant once per op")
    ap.add_argument("--paths", default="all", help="comma list of EMBER_SIMD paths (default: all this CPU has)")
    ap.add_argument("--baseline", action="append", help="NAME=DIR[:PATH]: an earlier build's package directory")
    args = ap.parse_args(argv)
    variants = _variants(args)
    res: dict[tuple[str, str], list[float]] = {}
    for rnd in range(args.rounds):
        for op in args.ops.split(","):
            for name, pp, simd in variants:
                rec = _run(op, pp, simd, extra)
                rec.update(variant=name, round=rnd)
                print(json.dumps(rec), flush=True)
                if "median_ms" in rec:
                    res.setdefault((name, op), []).append(rec["median_ms"])
    for op in args.ops.split(","):
        ref_name = variants[0][0]
        ref = statistics.median(res.get((ref_name, op), [float("nan")]))
        for name, _, simd in variants:
            ms = res.get((name, op))
            if not ms:
                continue
            med = statistics.median(ms)
            print(json.dumps({"summary": True, "op": op, "variant": name, "simd": simd, "rounds": len(ms),
                              "median_ms": round(med, 4), "per_round_ms": [round(x, 4) for x in ms],
                              "ratio_to": ref_name, "ratio": round(med / ref, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
