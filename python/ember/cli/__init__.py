"""The `ember` command: one package at the top of the layers (graph and sim -> sched -> run -> apps -> cli).

It has a subcommand per group -- ``ember bench OP`` / ``ember bench boot`` / ``ember bench dist`` (each with its own
flags), ``ember info``, ``ember sim ...`` (cli/sim.py), ``ember schedule`` / ``ember graph`` / ``ember profile``
(cli/sched.py), ``ember demo ...`` (cli/demo.py). The libraries below return records; printing happens here.
"""
from __future__ import annotations

import argparse
import json
import sys


def _emit(records: list[dict], stream=sys.stdout) -> None:
    """Print bench records: JSON lines on a pipe, a table on a terminal."""
    if not stream.isatty():
        for r in records:
            print(json.dumps(r), file=stream, flush=True)
        return
    from rich.console import Console
    from rich.table import Table

    cols = ["op", "log_n", "levels", "dnum", "threads", "device", "runs", "median_ms", "min_ms", "max_ms", "precision_bits"]
    t = Table(title="ember bench")
    for c in cols:
        t.add_column(c, justify="right")
    for r in records:
        t.add_row(*[f"{r.get(c):.4g}" if isinstance(r.get(c), float) else str(r.get(c)) for c in cols])
    Console(file=stream).print(t)


def _shapes(text: str) -> tuple:
    """Return the input shapes of --inputs: a comma-separated list, or 'all'."""
    from ..precision import INPUT_SHAPES
    names = tuple(INPUT_SHAPES) if text.strip() == "all" else tuple(t.strip() for t in text.split(",") if t.strip())
    return names


def _or(value, default):
    """Return value, or default when it is None."""
    return default if value is None else value


class _progress:
    """A rich status line on a terminal (stderr), nothing on a pipe; call the object with the stage name."""

    def __init__(self, enabled: bool):
        self._enabled, self._status = enabled, None

    def __enter__(self):
        """Start the status line (on a terminal) and return the object."""
        if self._enabled:
            from rich.console import Console
            self._status = Console(stderr=True).status("bootstrapping")
            self._status.__enter__()
        return self

    def __call__(self, msg: str):
        """Show the stage `msg`."""
        if self._status is not None:
            self._status.update(f"ember bench boot: {msg}")

    def __exit__(self, *exc):
        """Stop the status line; exceptions propagate."""
        if self._status is not None:
            self._status.__exit__(*exc)
        return False


def _bench(args) -> int:
    """Run `ember bench OP` / `boot` / `all` (or hand `dist` on); return the exit status."""
    from .. import bench
    from .devices import device_unavailable

    if args.op == "dist":
        return _bench_dist(args)
    ops = bench.OPS if args.op == "all" else [args.op]
    try:
        why = device_unavailable(args.device)
    except ValueError as e:  # an unknown $EMBER_DEVICE
        why = str(e)
    if why:
        print(f"ember bench {args.op}: {why}", file=sys.stderr)
        return 2
    if args.op == "all" and args.device not in (None, "cpu"):  # ntt, intt and heaan-mul run on the CPU only
        ops = [op for op in ops if op not in ("ntt", "intt", "heaan-mul")]
    records = []
    for op in ops:
        try:
            if op == "heaan-mul" and args.device not in (None, "cpu"):
                raise ValueError(f"the HEAAN scheme runs on the CPU only, not on --device {args.device}")
            if op == "boot":
                from .. import bench_boot
                off = tuple(o for o in bench_boot.MAD_OPTIONS + bench_boot.GLOBAL_OPTIONS if getattr(args, "no_" + o))
                with _progress(sys.stderr.isatty()) as step:
                    rec = bench_boot.run(log_n=args.log_n, levels=_or(args.levels, 9), log_scale=_or(args.log_scale, 44),
                                         dnum=_or(args.dnum, 0), threads=_or(args.threads, 2), runs=_or(args.runs, 3),
                                         slots=args.slots, secret=args.secret, insecure=args.insecure,
                                         seeded=not args.no_key_compression, off=off, progress=step,
                                         inputs=_shapes(args.inputs), iterations=args.iterations,
                                         device=args.device)
            elif op == "heaan-mul":  # the non-RNS HEAAN scheme of paper 000 (ember.heaan)
                from ..heaan import bench_mul
                rec = bench_mul(log_n=args.log_n, log_q=args.log_q, log_p=args.log_p, threads=_or(args.threads, 2),
                                runs=_or(args.runs, 10), breakdown=args.breakdown, insecure=args.insecure)
            else:
                # --log-q, --log-p, --breakdown are heaan-mul's: `all` gives them to it alone, another op refuses them
                heaan = {} if args.op == "all" else dict(log_q=args.log_q, log_p=args.log_p, breakdown=args.breakdown)
                rec = bench.run(op, log_n=args.log_n, levels=_or(args.levels, _op_levels(args)), dnum=_or(args.dnum, 3),
                                threads=_or(args.threads, 2), runs=_or(args.runs, 10), log_scale=_or(args.log_scale, 50),
                                first_mod_bits=args.first_mod_bits, hoisted=args.hoisted, prime_bits=args.prime_bits,
                                insecure=args.insecure, count=args.count, radix=args.radix, device=args.device,
                                special_mod_bits=args.special_mod_bits, ks_margin_bits=args.ks_margin_bits, **heaan)
        except ValueError as e:
            print(f"ember bench {op}: {e}", file=sys.stderr)
            return 2
        records.append(rec)
        if not sys.stdout.isatty():
            _emit([rec])
    if sys.stdout.isatty():
        _emit(records)
        from ..heaan import breakdown_table
        for r in records:
            if "breakdown_ms" in r:
                print(breakdown_table(r))
    return 0


def _op_levels(args) -> int:
    """Return `ember bench OP`'s levels when --levels is not given.

    24, or fewer where the 128-bit bound at --log-n (with the run's log_scale, first_mod_bits and dnum) allows
    fewer -- 4 at N = 2^14 --; where it allows none, 24 and CkksParams says which bound is exceeded (--insecure
    lifts it).
    """
    if args.insecure:
        return 24
    from ..params import CkksParams
    most = CkksParams.max_secure_levels(args.log_n, _or(args.log_scale, 50), args.first_mod_bits, _or(args.dnum, 3))
    return min(24, most) if most else 24


def _bench_dist(args) -> int:
    """Run `ember bench dist`; return the exit status."""
    from ..run import bench as dist
    if (args.workers is None) == (args.scheduler is None):
        print("ember bench dist: give --workers K (local) or --scheduler ADDR (a Dask cluster)", file=sys.stderr)
        return 2
    try:
        dist.run(workload=args.workload, workers=args.workers, scheduler=args.scheduler, executor=args.executor,
                 log_n=args.log_n, tasks=args.tasks, runs=_or(args.runs, 3), threads=_or(args.threads, 1),
                 levels=args.levels, log_scale=args.log_scale, dnum=args.dnum, insecure=args.insecure,
                 baseline=not args.no_baseline, key_dir=args.key_dir, timeout=args.timeout,
                 emit=lambda r: print(json.dumps(r), flush=True), progress=sys.stderr.isatty(),
                 schedule=args.schedule, kill_after=args.kill_after, transport=args.transport,
                 kill_phase=args.kill_phase, note=lambda msg: print(msg, file=sys.stderr, flush=True))
    except (ValueError, TimeoutError, RuntimeError) as e:
        print(f"ember bench dist: {e}", file=sys.stderr)
        return 2
    return 0


def _cuda_section() -> dict:
    """Return `ember info`'s "cuda" section: whether this build has the CUDA backend, and the GPUs it finds."""
    from .. import _ember
    c = dict(_ember.cuda_info())
    if not c["built"]:
        gpus = "none (this build has no CUDA backend)"
    elif c["devices"] == 0:
        gpus = "no GPU found"
    else:
        gpus = f"{c['devices']} GPU(s); device 0: {c['description']}"
    return {"built": c["built"], "devices": c["devices"], "gpus": gpus}


def _info(args) -> int:
    """Print the installation as JSON and return 0.

    The version, the CPU and its features, the kernel path in use (EMBER_SIMD caps it), the path of each kernel
    family for the default parameter set's primes (N = 2^16, 24 levels: 50- and 60-bit primes), and "cuda": whether
    this build has the CUDA backend and the GPUs found.
    """
    import os
    from .. import _ember
    from ..bench import kernel_paths
    from ..params import CkksParams
    f = dict(_ember.cpu_features())
    p = CkksParams()
    path, fam = kernel_paths(list(p.q_primes) + list(p.p_primes))
    info = {"version": __import__("ember").__version__,
            "cpu": {"name": f.pop("name"), "features": sorted(k for k, v in f.items() if v is True and k != "forced")},
            "simd": {"best": f["best"], "path": f["path"], "forced_by_EMBER_SIMD": f["forced"],
                     "choices": ["scalar", "avx2", "avx512", "ifma"]},
            "kernel_paths": fam, "path": path,
            "threads": {"cpus": os.cpu_count(), "default": 1},
            "cuda": _cuda_section()}
    print(json.dumps(info, indent=2 if sys.stdout.isatty() else None))
    return 0


def main(argv=None) -> int:
    """Run the ``ember`` command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 for bad input reported on stderr (some subcommands use others, e.g. 1
        when ``ember sim search`` finds no parameter set). argparse errors exit through SystemExit.
    """
    p = argparse.ArgumentParser(prog="ember", description="Ember: CKKS homomorphic encryption")
    p.add_argument("--version", action="version", version=f"ember {__import__('ember').__version__}",
                   help="print the version (the VERSION file's, as ember.__version__) and exit")
    sub = p.add_subparsers(dest="cmd", required=True)

    _add_bench(sub)

    i = sub.add_parser("info", help="version, CPU features, the kernel path of each family and the CUDA backend / GPUs")
    i.set_defaults(fn=_info)

    from . import demo, sched, sim
    for group in (sim, sched, demo):
        group.add_parser(sub)

    args = p.parse_args(argv)
    runs = getattr(args, "runs", 1)
    if runs is not None and runs < 1:
        p.error("--runs must be >= 1")
    return args.fn(args)


def _add_bench(sub) -> None:
    """Register `ember bench OP | boot | dist`: a subcommand each, with the flags that apply to it."""
    from ..bench import OPS
    b = sub.add_parser("bench", help="time an operation, a bootstrapping or a distributed workload; JSON lines on a "
                                     "pipe, a table on a terminal")
    kinds = b.add_subparsers(dest="op", required=True, metavar="{" + ",".join(OPS) + ",all,boot,dist}")

    def common(p, threads: str, runs: str):
        """Add the flags every bench subcommand has (the help texts of --threads and --runs given)."""
        p.add_argument("--log-n", type=int, default=16, help="log2 of the ring degree (default 16)")
        p.add_argument("--threads", type=int, default=None, help=threads)
        p.add_argument("--runs", type=int, default=None, help=runs)
        p.add_argument("--insecure", action="store_true", help="allow parameters above the 128-bit bound")
        p.set_defaults(fn=_bench)

    def device(p, what: str):
        """Add --device (the Context's device; `what`: the help text's note on the ops it applies to)."""
        p.add_argument("--device", choices=["cpu", "cpu-guarded", "cuda"], default=None,
                       help="the device of the benchmark's Context (default: $EMBER_DEVICE, else cpu); cuda needs a "
                            "build with the CUDA backend and a GPU" + what)

    for op in OPS + ("all",):
        o = kinds.add_parser(op, help="every op but boot and dist" if op == "all" else f"time {op}")
        common(o, "threads (default 2)", "timed runs after one warm-up (default 10)")
        device(o, "; ntt, intt and heaan-mul: cpu only (all skips them on another device)")
        o.add_argument("--levels", type=int, default=None,
                       help="levels (default 24, or the most the 128-bit bound allows at --log-n: 4 at 14)")
        o.add_argument("--dnum", type=int, default=None, help="key-switching digits (default 3)")
        o.add_argument("--log-scale", type=int, default=None, help="log2 of the scale (default 50)")
        o.add_argument("--first-mod-bits", type=int, default=60)
        o.add_argument("--special-mod-bits", type=int, default=0, help="bits of each special prime (default 0: 60)")
        o.add_argument("--ks-margin-bits", type=int, default=None,
                       help="bits by which P exceeds the largest digit (default: CkksParams', 16; 0 with "
                            "--special-mod-bits 61: one special prime per 60-bit digit, as SEAL)")
        o.add_argument("--hoisted", type=int, default=8, help="rotations in rotate_many / rotate_sum")
        o.add_argument("--count", type=int, default=256, help="inner_sum: slots summed (a power of two)")
        o.add_argument("--radix", type=int, default=2, help="inner_sum: rotations per round + 1 (2: rotate-and-add)")
        o.add_argument("--prime-bits", type=int, default=49, help="prime size for ntt / intt (< 50: IFMA path)")
        o.add_argument("--log-q", type=int, default=1200, help="heaan-mul: logQ, the modulus of fresh ciphertexts")
        o.add_argument("--log-p", type=int, default=30, help="heaan-mul: log of the rescaling factor p")
        o.add_argument("--breakdown", action="store_true",
                       help="heaan-mul: time per function (CRT, NTT, iNTT, iCRT, extra)")

    o = kinds.add_parser("boot", help="bootstrapping: time, precision, levels left, key sizes")
    common(o, "threads (default 2)", "timed runs after one warm-up (default 3)")
    device(o, "")
    o.add_argument("--levels", type=int, default=None, help="levels left after bootstrapping (default 9)")
    o.add_argument("--dnum", type=int, default=None, help="key-switching digits (default 0: the smallest secure)")
    o.add_argument("--log-scale", type=int, default=None, help="log2 of the scale (default 44)")
    o.add_argument("--inputs", default="uniform_complex",
                   help="comma-separated input shapes (ember.precision.INPUT_SHAPES, or 'all'); precision is the "
                        "worst slot")
    o.add_argument("--iterations", type=int, default=1, choices=[1, 2], help="2 = iterative bootstrapping (META-BTS)")
    o.add_argument("--slots", type=int, default=None, help="slots bootstrapped (default N/2)")
    o.add_argument("--secret", choices=["ternary", "sparse"], default="ternary", help="secret distribution")
    o.add_argument("--no-merged-moddown", action="store_true", help="MAD option off: ModDown merged with Rescale")
    o.add_argument("--no-hoisted-moddown", action="store_true",
                   help="MAD option off: double hoisting in linear transforms")
    o.add_argument("--no-depth-optimal", action="store_true", help="polynomial with sqrt(d) baby steps (one more level)")
    o.add_argument("--no-key-compression", action="store_true", help="keys without PRNG seeds")
    o.add_argument("--no-limb-fusion", action="store_true", help="MAD option off: per-limb Decomp + iNTT in ModUp (and copy + iNTT in ModDown)")

    o = kinds.add_parser("dist", help="a workload of independent tasks on K local workers or a Dask cluster")
    common(o, "threads per worker (default 1)", "measured runs (default 3)")
    o.add_argument("--levels", type=int, default=None,
                   help="levels (default: ember.run.bench.DEFAULT_LEVELS at --log-n, within the 128-bit bound)")
    o.add_argument("--dnum", type=int, default=None, help="key-switching digits (default 3)")
    o.add_argument("--log-scale", type=int, default=None, help="log2 of the scale (default 50 at N >= 2^16, else 40)")
    o.add_argument("--workload", choices=["batch", "lr", "boot"], default="batch",
                   help="batch (HE Mul + rotate), lr (a logistic-regression step) or boot (bootstrapping)")
    o.add_argument("--workers", type=int, default=None, help="K local worker processes")
    o.add_argument("--scheduler", default=None, help="a Dask scheduler address, e.g. tcp://HOST:8786")
    o.add_argument("--executor", choices=["pool", "dask"], default="pool",
                   help="with --workers: the local pool (default) or a Dask LocalCluster")
    o.add_argument("--transport", choices=["auto", "shm", "tcp"], default="auto",
                   help="with Dask: values through shared memory (auto: when every worker is on this host) or as "
                        "frames through Dask's sockets")
    o.add_argument("--tasks", type=int, default=8, help="independent tasks per run")
    o.add_argument("--no-baseline", action="store_true", help="skip the one-worker runs (no efficiency)")
    o.add_argument("--key-dir", default=None, help="boot: key directory every worker can read (default: a temp dir)")
    o.add_argument("--schedule", choices=["heft", "peft"], default=None,
                   help="batch: run it as a captured graph placed by this schedule; report predicted vs measured")
    o.add_argument("--kill-after", type=float, default=None, metavar="S",
                   help="fault drill: SIGKILL one worker process S seconds into the first run of --kill-phase")
    o.add_argument("--kill-phase", choices=["baseline", "warm-up", "profiling", "run"], default="run",
                   help="fault drill: the phase whose first run loses a worker (default run: the first printed run)")
    o.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is abandoned")


if __name__ == "__main__":
    sys.exit(main())
