"""Bootstrapping with each MAD technique switched off in turn, then all on (issue 3's table).

Each configuration runs `ember bench boot` in its own process (so peak memory is per configuration) and
one JSON line per configuration is printed, then a markdown table:

    python bench/boot_options.py --log-n 16 --threads 2 --runs 3
    python bench/boot_options.py --log-n 13 --runs 2 --insecure      # quick look on a small ring

Configurations: all on; ModDown merged with Rescale off (`--no-merged-moddown`); ModDown hoisting off
(`--no-hoisted-moddown`: single hoisting, plaintexts over Q); key compression off (`--no-key-compression`:
keys stored without PRNG seeds, which only changes their size); per-limb fusion off
(`--no-limb-fusion`: ModUp copies the polynomial, then transforms it, instead of Decomp + iNTT per limb in
one pass; with Ember's Galois keys a rotation permutes its results, so MAD's automorphism has no place in
that fusion). (`--no-depth-optimal`, Ember's own option, costs one more 60-bit
level, which the 128-bit preset at N = 2^16 has no room for.)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CONFIGS = [
    ("all on", []),
    ("ModDown+Rescale merge off", ["--no-merged-moddown"]),
    ("ModDown hoisting off", ["--no-hoisted-moddown"]),
    ("key compression off", ["--no-key-compression"]),
    ("per-limb fusion off", ["--no-limb-fusion"]),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated row numbers (0 = all on) to run")
    args = ap.parse_args(argv)
    only = {int(x) for x in args.only.split(",") if x} if args.only else set(range(len(CONFIGS)))
    rows = []
    for idx, (name, flags) in enumerate(CONFIGS):
        if idx not in only:
            continue
        cmd = [sys.executable, "-m", "ember", "bench", "boot", "--log-n", str(args.log_n), "--threads", str(args.threads),
               "--runs", str(args.runs), *flags] + (["--insecure"] if args.insecure else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            rec = {"config": name, "error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
        else:
            rec = {"config": name, **json.loads(r.stdout.strip().splitlines()[-1])}
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    print()
    print("| configuration | median s | precision bits | levels after | rotation keys | keys GB (compressed) | peak GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['config']} | error: {r['error']} | | | | | |")
            continue
        print(f"| {r['config']} | {r['median_ms'] / 1e3:.2f} | {r['precision_bits']:.2f} | {r['levels_after']} | {r['rotation_keys']} | "
              f"{r['key_bytes'] / 1e9:.2f} ({r['key_bytes_compressed'] / 1e9:.2f}) | {r['peak_rss_mb'] / 1024:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
