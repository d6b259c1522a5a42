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


def _shapes(text: str) -> tuple:
    from .precision import INPUT_SHAPES
    names = tuple(INPUT_SHAPES) if text.strip() == "all" else tuple(t.strip() for t in text.split(",") if t.strip())
    return names


def _or(value, default):
    return default if value is None else value


class _progress:
    """A rich status line on a terminal (stderr), nothing on a pipe; call the object with the stage name."""

    def __init__(self, enabled: bool):
        self._enabled, self._status = enabled, None

    def __enter__(self):
        if self._enabled:
            from rich.console import Console
            self._status = Console(stderr=True).status("bootstrapping")
            self._status.__enter__()
        return self

    def __call__(self, msg: str):
        if self._status is not None:
            self._status.update(f"ember bench boot: {msg}")

    def __exit__(self, *exc):
        if self._status is not None:
            self._status.__exit__(*exc)
        return False


def _bench(args) -> int:
    from . import bench

    if args.op == "dist":
        return _bench_dist(args)
    ops = bench.OPS if args.op == "all" else [args.op]
    records = []
    for op in ops:
        try:
            if op == "boot":
                from . import bench_boot
                off = tuple(o for o in bench_boot.MAD_OPTIONS + bench_boot.GLOBAL_OPTIONS if getattr(args, "no_" + o))
                with _progress(sys.stderr.isatty()) as step:
                    rec = bench_boot.run(log_n=args.log_n, levels=_or(args.levels, 9), log_scale=_or(args.log_scale, 44),
                                         dnum=_or(args.dnum, 0), threads=_or(args.threads, 2), runs=_or(args.runs, 3),
                                         slots=args.slots, secret=args.secret, insecure=args.insecure,
                                         seeded=not args.no_key_compression, off=off, progress=step,
                                         inputs=_shapes(args.inputs), iterations=args.iterations)
            else:
                rec = bench.run(op, log_n=args.log_n, levels=_or(args.levels, 24), dnum=_or(args.dnum, 3),
                                threads=_or(args.threads, 2), runs=_or(args.runs, 10), log_scale=_or(args.log_scale, 50),
                                first_mod_bits=args.first_mod_bits, hoisted=args.hoisted, prime_bits=args.prime_bits,
                                insecure=args.insecure, log_q=args.log_q, log_p=args.log_p, breakdown=args.breakdown,
                                count=args.count, radix=args.radix)
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


def _bench_dist(args) -> int:
    from .run import bench as dist
    if (args.workers is None) == (args.scheduler is None):
        print("ember bench dist: give --workers K (local) or --scheduler ADDR (a Dask cluster)", file=sys.stderr)
        return 2
    try:
        dist.run(workload=args.workload, workers=args.workers, scheduler=args.scheduler, executor=args.executor,
                 log_n=args.log_n, tasks=args.tasks, runs=_or(args.runs, 3), threads=_or(args.threads, 1),
                 levels=args.levels, log_scale=args.log_scale, dnum=args.dnum, insecure=args.insecure,
                 baseline=not args.no_baseline, key_dir=args.key_dir, timeout=args.timeout,
                 emit=lambda r: print(json.dumps(r), flush=True), progress=sys.stderr.isatty(),
                 schedule=args.schedule, kill_after=args.kill_after, transport=args.transport)
    except (ValueError, TimeoutError, RuntimeError) as e:
        print(f"ember bench dist: {e}", file=sys.stderr)
        return 2
    return 0


def _info(args) -> int:
    """The installation: version, the CPU and its features, the kernel path in use (EMBER_SIMD caps it) and the path
    of each kernel family for the default parameter set's primes (N = 2^16, 24 levels: 50- and 60-bit primes)."""
    import os
    from . import _ember
    from .bench import kernel_paths
    from .params import CkksParams
    f = dict(_ember.cpu_features())
    p = CkksParams()
    path, fam = kernel_paths(list(p.q_primes) + list(p.p_primes))
    info = {"version": __import__("ember").__version__,
            "cpu": {"name": f.pop("name"), "features": sorted(k for k, v in f.items() if v is True and k != "forced")},
            "simd": {"best": f["best"], "path": f["path"], "forced_by_EMBER_SIMD": f["forced"],
                     "choices": ["scalar", "avx2", "avx512", "ifma"]},
            "kernel_paths": fam, "path": path,
            "threads": {"cpus": os.cpu_count(), "default": 1},
            "gpu": "none (this build has no CUDA backend)"}
    print(json.dumps(info, indent=2 if sys.stdout.isatty() else None))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ember", description="Ember: CKKS homomorphic encryption")
    sub = p.add_subparsers(dest="cmd", required=True)

    b = sub.add_parser("bench", help="time an operation; JSON lines on a pipe, a table on a terminal")
    b.add_argument("op", choices=["ntt", "intt", "encrypt", "decrypt", "add", "mul", "rotate", "rotate_many", "rotate_sum", "inner_sum", "heaan-mul",
                                  "boot",
                                  "all", "dist"], help="'all' runs every op but boot; 'dist': a workload on many workers")
    b.add_argument("--log-n", type=int, default=16)
    b.add_argument("--levels", type=int, default=None, help="levels (default 24; boot: 9 levels left after bootstrapping)")
    b.add_argument("--dnum", type=int, default=None, help="key-switching digits (default 3; boot: 0 = smallest secure)")
    b.add_argument("--threads", type=int, default=None, help="threads (default 2; dist: per worker, default 1)")
    b.add_argument("--runs", type=int, default=None, help="timed runs after one warm-up (default 10; boot: 3)")
    b.add_argument("--log-scale", type=int, default=None, help="log2 of the scale (default 50; boot: 44)")
    b.add_argument("--inputs", default="uniform_complex",
                   help="boot: comma-separated input shapes (ember.precision.INPUT_SHAPES, or 'all'); precision is the worst slot")
    b.add_argument("--iterations", type=int, default=1, choices=[1, 2], help="boot: 2 = iterative bootstrapping (META-BTS)")
    b.add_argument("--slots", type=int, default=None, help="boot: slots bootstrapped (default N/2)")
    b.add_argument("--secret", choices=["ternary", "sparse"], default="ternary", help="boot: secret distribution")
    b.add_argument("--no-merged-moddown", action="store_true", help="boot: MAD option off: ModDown merged with Rescale")
    b.add_argument("--no-hoisted-moddown", action="store_true", help="boot: MAD option off: double hoisting in linear transforms")
    b.add_argument("--no-depth-optimal", action="store_true", help="boot: polynomial with sqrt(d) baby steps (one more level)")
    b.add_argument("--no-key-compression", action="store_true", help="boot: keys without PRNG seeds")
    b.add_argument("--no-limb-fusion", action="store_true", help="boot: MAD option off: per-limb Decomp + iNTT in ModUp")
    b.add_argument("--first-mod-bits", type=int, default=60)
    b.add_argument("--hoisted", type=int, default=8, help="rotations in rotate_many / rotate_sum")
    b.add_argument("--count", type=int, default=256, help="inner_sum: slots summed (a power of two)")
    b.add_argument("--radix", type=int, default=2, help="inner_sum: rotations per round + 1 (2: rotate-and-add)")
    b.add_argument("--prime-bits", type=int, default=49, help="prime size for ntt / intt (< 50: IFMA path)")
    b.add_argument("--insecure", action="store_true", help="allow parameters above the 128-bit bound")
    b.add_argument("--log-q", type=int, default=1200, help="heaan-mul: logQ, the modulus of fresh ciphertexts")
    b.add_argument("--log-p", type=int, default=30, help="heaan-mul: log of the rescaling factor p")
    b.add_argument("--breakdown", action="store_true", help="heaan-mul: time per function (CRT, NTT, iNTT, iCRT, extra)")
    b.add_argument("--workload", choices=["batch", "lr", "boot"], default="batch",
                   help="dist: batch (HE Mul + rotate), lr (a logistic-regression step) or boot (bootstrapping)")
    b.add_argument("--workers", type=int, default=None, help="dist: K local worker processes")
    b.add_argument("--scheduler", default=None, help="dist: a Dask scheduler address, e.g. tcp://HOST:8786")
    b.add_argument("--executor", choices=["pool", "dask"], default="pool",
                   help="dist with --workers: the local pool (default) or a Dask LocalCluster")
    b.add_argument("--transport", choices=["auto", "shm", "tcp"], default="auto",
                   help="dist with Dask: values through shared memory (auto: when every worker is on this host) "
                        "or as frames through Dask's sockets")
    b.add_argument("--tasks", type=int, default=8, help="dist: independent tasks per run")
    b.add_argument("--no-baseline", action="store_true", help="dist: skip the one-worker runs (no efficiency)")
    b.add_argument("--key-dir", default=None, help="dist boot: key directory every worker can read (default: a temp dir)")
    b.add_argument("--schedule", choices=["heft", "peft"], default=None,
                   help="dist batch: run it as a captured graph placed by this schedule; report predicted vs measured")
    b.add_argument("--kill-after", type=float, default=None, metavar="S",
                   help="dist fault drill: SIGKILL one worker process S seconds into the first run")
    b.add_argument("--timeout", type=float, default=1800.0, help="dist: seconds before a run is abandoned")
    b.set_defaults(fn=_bench)

    i = sub.add_parser("info", help="version, CPU features and the kernel path of each family")
    i.set_defaults(fn=_info)

    # Further command groups register themselves (each module has add_parser(subparsers)).
    import importlib
    for name in ("ember.sim.cli", "ember.sched.cli", "ember.apps.demo"):
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name and not name.startswith(e.name or "\0"):
                raise
            continue
        mod.add_parser(sub)

    args = p.parse_args(argv)
    runs = getattr(args, "runs", 1)
    if runs is not None and runs < 1:
        p.error("--runs must be >= 1")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
