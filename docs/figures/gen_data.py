"""Measure (or model) the data behind the documentation's figures and write it as JSON under docs/figures/data/.

Run from the repository root, one figure at a time (the heavy ones take /tmp/ember-big.lock, so that two
N = 2^16 bootstrapping jobs never share the 23 GiB of a small machine)::

    PYTHONPATH=python build/venv/bin/python docs/figures/gen_data.py peers        # ~12 min
    PYTHONPATH=python build/venv/bin/python docs/figures/gen_data.py keyswitch    # ~1 min
    PYTHONPATH=python build/venv/bin/python docs/figures/gen_data.py gantt        # ~1 min (modelled devices)
    PYTHONPATH=python build/venv/bin/python docs/figures/gen_data.py helr         # ~3 min
    PYTHONPATH=python build/venv/bin/python docs/figures/gen_data.py precision    # ~6 min

Every JSON carries "command" (the command line that wrote it), "machine" (CPU model, cores, the SIMD path Ember
took, from ``ember info``), "date", "ember_version", "elapsed_s" and the figure's "data". Figures of devices
that were not run (the scheduler's FPGAs and GPUs) say "modelled". docs/figures/make_figures.py draws the PNGs
from these files only.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import gc
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "figures" / "data"
BIG_LOCK = "/tmp/ember-big.lock"


# ---- shared: provenance -------------------------------------------------------------------------------------------
def _rel(path: str) -> str:
    """`path` relative to the repository root when it lies inside it."""
    p = Path(path).absolute()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def command_line() -> str:
    """Return the command line that is running, as typed from the repository root."""
    args = [_rel(sys.argv[0])] + sys.argv[1:]
    env = "PYTHONPATH=python " if "PYTHONPATH" in os.environ else ""
    return env + " ".join(shlex.quote(a) for a in [_rel(sys.executable)] + args)


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def _meminfo_gib(key: str) -> float | None:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return round(int(line.split()[1]) / 2 ** 20, 1)
    return None


def machine() -> dict:
    """CPU model (/proc/cpuinfo), cores, memory, load and `ember info` (SIMD path, kernel paths)."""
    info = json.loads(subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True,
                                     check=True, cwd=ROOT, env=_env()).stdout)
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "mem_total_gib": _meminfo_gib("MemTotal"),
            "simd_path": info["path"], "kernel_paths": info["kernel_paths"], "cpu_features": info["cpu"]["features"],
            "loadavg_at_start": list(os.getloadavg())}


def _git() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=ROOT).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _env() -> dict:
    """Return os.environ with the in-place package first on the path (python/ember, the compiled extension)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)          # idle + iowait, total


QUIET = {"max_wait_s": 900.0, "waited_s": None, "busy_fraction": None, "waited_total_s": 0.0}


def wait_quiet(max_wait: float, busy: float = 0.1, window: float = 5.0, windows: int = 3) -> None:
    """Wait (up to max_wait seconds) until the CPUs are idle but `busy` for `windows` windows in a row."""
    t0, quiet = time.time(), 0
    last = 1.0
    while time.time() - t0 < max_wait:
        i0, a0 = _cpu_times()
        time.sleep(window)
        i1, a1 = _cpu_times()
        last = 1.0 - (i1 - i0) / max(1, a1 - a0)
        quiet = quiet + 1 if last <= busy else 0
        if quiet >= windows:
            break
        if quiet == 0:
            print(f"machine busy ({last:.0%} of the CPUs): waiting", file=sys.stderr)
    waited = round(time.time() - t0, 1)
    QUIET.update(max_wait_s=max_wait, waited_s=waited, busy_fraction=round(last, 3), quiet=quiet >= windows,
                 waited_total_s=round(QUIET.get("waited_total_s", 0.0) + waited, 1))


@contextlib.contextmanager
def big_lock(use: bool):
    """Hold /tmp/ember-big.lock (exclusive) while a job needs many GiB, then wait for a quiet machine."""
    if not use:
        yield
        return
    with open(BIG_LOCK, "a") as f:
        print(f"waiting for {BIG_LOCK} ...", file=sys.stderr)
        fcntl.flock(f, fcntl.LOCK_EX)
        print("lock held", file=sys.stderr)
        try:
            wait_quiet(QUIET["max_wait_s"])
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write(name: str, data: dict, started: float, mach: dict, extra: dict | None = None) -> Path:
    """Write data/<name>.json with the provenance fields."""
    import ember
    mach = dict(mach, loadavg_at_end=list(os.getloadavg()), quiet_wait=dict(QUIET))
    rec = {"figure": name, "command": command_line(), "machine": mach,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "ember_version": ember.__version__, "git": _git(), "elapsed_s": round(time.time() - started, 1),
           "run_s": round(time.time() - started - QUIET.get("waited_total_s", 0.0), 1)}
    rec.update(extra or {})
    rec["data"] = data
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"{name}.json"
    path.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"wrote {_rel(str(path))} ({rec['elapsed_s']} s)", file=sys.stderr)
    return path


def _run_jsonl(cmd: list[str], timeout: float) -> tuple[list[dict], float]:
    """Run a bench script that prints one JSON object per line; returns the objects and the seconds it took."""
    print("$ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=_env(), timeout=timeout)
    lines = [json.loads(s) for s in p.stdout.splitlines() if s.strip().startswith("{")]
    if p.returncode:
        print(f"exit status {p.returncode}", file=sys.stderr)
    return lines, round(time.time() - t0, 1)


def _show(cmd: list[str]) -> str:
    return "PYTHONPATH=python " + " ".join(shlex.quote(_rel(c) if c.startswith("/") and os.path.exists(c) else c)
                                           for c in cmd)


# ---- 1. peers ---------------------------------------------------------------------------------------------------
def peers(args) -> None:
    """compare_peers.py (HE Mul, rotate) and compare_boot.py (bootstrapping), all libraries in one run each."""
    py = sys.executable
    mach, t0 = machine(), time.time()
    runs = []
    ops = [py, "bench/peers/compare_peers.py", "--peers", args.peers, "--ops", "mul,rotate,rotate_many",
           "--log-n", "16", "--levels", "24", "--dnum", "3", "--log-scale", "50", "--first-mod", "60",
           "--threads", "2", "--runs", str(args.runs), "--no-table"]
    boot = [py, "bench/peers/compare_boot.py", "--peers", args.boot_peers, "--log-n", "16", "--threads", "2",
            "--runs", str(args.boot_runs), "--desilo-python", py, "--wait-mem", "900", "--no-table"]
    seal = [py, "bench/peers/compare_peers.py", "--peers", "seal,ember", "--ops", "mul,rotate", "--log-n", "15",
            "--levels", "15", "--dnum", "16", "--log-scale", "50", "--first-mod", "60", "--threads", "1",
            "--runs", str(args.runs), "--insecure", "--no-table"]
    jobs = [("ops", ops, 1800)] + ([("boot", boot, 3600)] if args.boot_runs else []) + \
        ([("seal_config", seal, 900)] if args.seal else [])
    with big_lock(True):
        for i, (name, cmd, timeout) in enumerate(jobs):
            if i:
                wait_quiet(QUIET["max_wait_s"])
            lines, secs = _run_jsonl(cmd, timeout)
            runs.append({"name": name, "command": _show(cmd), "seconds": secs, "records": lines,
                         "loadavg_after": list(os.getloadavg())})
    group = {"cpu_kind": mach["simd_path"], "cpu": mach["cpu"], "runs": runs,
             "note": "each run measures all its libraries one after the other in one process tree; ratios between "
                     "libraries are taken within one run"}
    write("peers_" + mach["simd_path"], {"groups": [group]}, t0, mach)


# ---- 2. key-switch kernels against the copy bandwidth --------------------------------------------------------------
def keyswitch(args) -> None:
    """ember.trace() of HE Mul and rotate at N = 2^16, 24 levels, dnum 3: bytes and time per kernel."""
    import ember
    from ember.heaan import machine_peak
    mach, t0 = machine(), time.time()
    with big_lock(True):
        peak = machine_peak(threads=args.threads)
        peak1 = machine_peak(threads=1)
        params = ember.CkksParams(log_n=16, levels=24, log_scale=50, dnum=3)
        ctx = ember.Context(params, threads=args.threads)
        keys = ctx.keygen(rotations=[1])
        rng = np.random.default_rng(0)
        a = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.secret)
        b = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.secret)
        ops = {"mul": lambda: a * b, "rotate": lambda: a.rotate(1)}
        out = {}
        for name, fn in ops.items():
            for _ in range(2):          # warm-up: first touches of the working memory
                fn()
            walls, untraced, per_kernel = [], [], {}
            for _ in range(args.runs):
                s = time.perf_counter()
                fn()
                untraced.append(time.perf_counter() - s)
                with ember.trace() as t:
                    s = time.perf_counter()
                    fn()
                    walls.append(time.perf_counter() - s)
                for k, c in t.counts.items():
                    acc = per_kernel.setdefault(k, {})
                    for f, v in c.items():
                        acc.setdefault(f, []).append(v)
            kernels = {}
            for k, fields in per_kernel.items():
                med = {f: float(np.median(v)) for f, v in fields.items()}
                byts = med["bytes_read"] + med["bytes_written"]
                kernels[k] = {"calls": med["calls"], "bytes_read": med["bytes_read"],
                              "bytes_written": med["bytes_written"], "bytes": byts, "ms": med["ns"] / 1e6,
                              "ms_min": min(fields["ns"]) / 1e6, "ms_max": max(fields["ns"]) / 1e6,
                              "gb_s": byts / med["ns"] if med["ns"] else None,
                              "gb_s_best": byts / min(fields["ns"]) if min(fields["ns"]) else None,
                              "mod_mul": med["mod_mul"], "mod_add": med["mod_add"], "ntt": med["ntt"]}
            out[name] = {"wall_ms_traced_median": float(np.median(walls)) * 1e3,
                         "wall_ms_untraced_median": float(np.median(untraced)) * 1e3,
                         "kernel_ms_sum": sum(v["ms"] for v in kernels.values()),
                         "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1]["ms"]))}
    data = {"params": {"log_n": 16, "levels": 24, "log_scale": 50, "dnum": 3, "threads": args.threads,
                       "special_primes": len(params.p_primes), "log_qp": round(params.log_qp, 1)},
            "runs": args.runs, "statistic": "median over runs of each kernel's summed counters per operation",
            "machine_peak": peak, "machine_peak_1thread": peak1,
            "copy_bandwidth_gb_s": peak["copy_gb_s"],
            "definition": "achieved GB/s = (bytes_read + bytes_written) / kernel wall time, both from ember.trace(); "
                          "copy bandwidth = ember.heaan.machine_peak(threads).copy_gb_s (memcpy of 256 MiB, bytes "
                          "read + written per second, best of a few trials)",
            "keyswitch_kernels": ["ntt_forward", "ntt_inverse", "base_convert", "base_convert_centered", "dot",
                                  "sub_mul_const", "mul_const_add", "copy"],
            "other_kernels": {"mul": "tensor product (ct x ct)", "mul_add": "tensor product (ct x ct)",
                              "automorph": "the rotation's automorphism", "add": "c0 + key-switched part"},
            "ops": out}
    write("keyswitch_bandwidth", data, t0, mach)


# ---- 3. HEFT / PEFT Gantt chart of the bootstrapping graph ---------------------------------------------------------
def gantt(args) -> None:
    """Schedules of the N = 2^16 bootstrapping graph on the paper's CPU + 2 FPGA + 2 GPU platform."""
    from ember.graph import graph_of
    from ember.sched import CostTable, default_costs, lower_bound, schedule_graph
    from ember.sched.platform import paper
    mach, t0 = machine(), time.time()
    g = graph_of("boot", log_n=16)
    host_costs = ROOT / args.host_costs if args.host_costs else None
    table, host = CostTable(), "cpu"
    if host_costs:
        m = CostTable.load(host_costs)
        tp = next(iter(m.devices.values())).get("params", {})
        gp = g.meta.get("params", {})
        if gp.get("log_n") == tp.get("log_n") and gp.get("levels") == tp.get("levels"):
            table.merge(m)
            host = next(iter(m.devices))
    plat = paper(2, 2, host_model=host)
    costs = default_costs(g, plat, table)
    ops = {n.id: n.op for n in g.nodes}
    scheds, timing = {}, {}
    for algo in args.algos.split(","):
        s0 = time.time()
        s = schedule_graph(g, plat, costs, algo)
        s.validate()
        timing[algo] = round(time.time() - s0, 2)
        rec = {"summary": s.summary()}
        if algo in ("heft", "peft"):
            rec["tasks"] = [[t, s.device[t], s.start[t], s.finish[t], ops.get(t, "")] for t in s.problem.tasks]
        scheds[algo] = rec
    lb = lower_bound(s.problem)
    devices = [{**d, "cost_source": costs.source(d["model"]), "cost_note": costs.note(d["model"])}
               for d in plat.to_dict()["devices"]]
    modelled = [d["name"] for d in devices if d["cost_source"] == "modelled"]
    data = {"graph": {"program": "boot", "nodes": len(g), "params": g.meta.get("params"),
                      "op_counts": g.op_counts(), "capture": "symbolic (ember.graph.SymbolicContext)"},
            "platform": {"name": plat.name, "devices": devices, "bandwidth": plat.to_dict()["bandwidth"],
                         "notes": plat.to_dict()["notes"]},
            "host_costs": _rel(str(host_costs)) if host == "cpu-2t" else None,
            "modelled_devices": modelled,
            "note": ("times of " + ", ".join(modelled) + " are MODELLED (ember.sim device profiles), not measured; "
                     + ("the host CPU is timed by the measured cost table " + _rel(str(host_costs))
                        if host != "cpu" else "the host CPU by the simulator's CPU model")),
            "task_format": ["task", "device index", "start s", "finish s", "op"],
            "schedules": scheds, "schedule_seconds": timing,
            "lower_bound": {k: v for k, v in lb.items()}}
    write("boot_gantt", data, t0, mach, {"modelled": True})


# ---- 4. HELR training loss ----------------------------------------------------------------------------------------
def helr(args) -> None:
    """EncryptedLogisticRegression against Float64LogisticRegression on scikit-learn's breast-cancer set."""
    from ember.apps import EncryptedLogisticRegression, Float64LogisticRegression, datasets
    from ember.apps.demo import LR_PRESETS
    mach, t0 = machine(), time.time()
    hp = dict(LR_PRESETS[args.dataset])
    if args.iterations:
        hp["iterations"] = args.iterations
    X, y = datasets.breast_cancer() if args.dataset == "breast-cancer" else datasets.digits((3, 8))
    Xtr, Xte, ytr, yte = datasets.train_test_split(X, y, seed=0)
    with big_lock(True):
        t1 = time.time()
        enc = EncryptedLogisticRegression(**hp, log_n=16, threads=args.threads, random_state=0)
        enc.fit(Xtr, ytr, history=True)
        fit_s = time.time() - t1
    f64_hist = []
    ref = Float64LogisticRegression(**hp, random_state=0).fit(
        Xtr, ytr, capacity=2 * enc.packing_.R, monitor=lambda t, w: f64_hist.append(np.array(w, copy=True)))
    final_diff = float(np.abs(enc.weights_ - ref.weights_).max())
    pos = enc.classes_[1]

    def curves(hist, Xa, ya):
        Xs = enc.scaler_.transform(Xa)
        s = np.where(np.asarray(ya) == pos, 1.0, -1.0)
        w0 = np.zeros(Xs.shape[1])
        loss = [float(np.mean(np.logaddexp(0.0, -s * (Xs @ w)))) for w in [w0] + list(hist)]
        acc = [float(np.mean((Xs @ w > 0) == (s > 0))) for w in [w0] + list(hist)]
        return loss, acc

    LogReg = datasets.sklearn("linear_model").LogisticRegression
    Xs = enc.scaler_.transform(Xtr)
    sk = LogReg(max_iter=10000).fit(Xs[:, :-1], ytr)
    s = np.where(np.asarray(ytr) == pos, 1.0, -1.0)
    sk_loss = float(np.mean(np.logaddexp(0.0, -s * sk.decision_function(Xs[:, :-1]))))
    enc_loss, enc_acc_tr = curves(enc.history_, Xtr, ytr)
    f64_loss, f64_acc_tr = curves(f64_hist, Xtr, ytr)
    _, enc_acc = curves(enc.history_, Xte, yte)
    _, f64_acc = curves(f64_hist, Xte, yte)
    diffs = [float(np.abs(a - b).max()) for a, b in zip(enc.history_, f64_hist)]
    log = enc.log_
    data = {"dataset": f"scikit-learn load_breast_cancer ({len(Xtr)} training / {len(Xte)} test samples, "
                       f"{X.shape[1]} features)" if args.dataset == "breast-cancer" else args.dataset,
            "hyperparameters": hp, "params": enc.params_.to_dict(), "threads": args.threads,
            "packing": {"features": int(enc.packing_.features), "padded_features": int(enc.packing_.F),
                        "batch_size": int(enc.packing_.samples), "batches": len(enc.batches_)},
            "loss_definition": "mean training log-loss, mean(log(1 + exp(-s_i x_i . w))) with s_i = +-1, on the "
                               "scaled training features; iteration 0 is w = 0",
            "iterations": list(range(len(enc_loss))),
            "loss_encrypted": enc_loss, "loss_float64": f64_loss, "loss_sklearn": sk_loss,
            "train_accuracy_encrypted": enc_acc_tr, "train_accuracy_float64": f64_acc_tr,
            "test_accuracy_encrypted": enc_acc, "test_accuracy_float64": f64_acc,
            "test_accuracy_sklearn": float(sk.score(enc.scaler_.transform(Xte)[:, :-1], yte)),
            "max_weight_diff_per_iteration": diffs, "max_weight_diff_final": final_diff,
            "bootstraps": log.bootstraps, "train_seconds": log.seconds, "bootstrap_seconds": log.bootstrap_seconds,
            "keygen_seconds": enc.keygen_seconds_, "fit_seconds": fit_s}
    write("helr_loss", data, t0, mach)


# ---- 5. bootstrapping precision per input shape --------------------------------------------------------------------
def extra_shapes() -> dict:
    """Input shapes beyond ember.precision.INPUT_SHAPES, all with real and imaginary parts in [-1, 1]."""
    def signs(n, r):
        return r.choice([-1.0, 1.0], n)

    return {
        "mean_0.5": lambda n, r: 0.5 + r.uniform(-0.1, 0.1, n) + 0j,
        "mean_0.7+0.7i": lambda n, r: (0.7 + 0.7j) + 0.05 * (r.uniform(-1, 1, n) + 1j * r.uniform(-1, 1, n)),
        "tiny_1e-6": lambda n, r: 1e-6 * (r.uniform(-1, 1, n) + 1j * r.uniform(-1, 1, n)),
        "near_bound_real": lambda n, r: signs(n, r) * r.uniform(0.99, 1.0, n) + 0j,
        "near_bound_complex": lambda n, r: 0.999 * (signs(n, r) + 1j * signs(n, r)),
        "gaussian_0.3": lambda n, r: np.clip(r.normal(0, 0.3, n), -1, 1) + 0j,
    }


def precision(args) -> None:
    """Bootstrap fresh level-0 encryptions of every input shape and measure min / mean bits."""
    import ember
    from ember.precision import INPUT_SHAPES, input_shape
    mach, t0 = machine(), time.time()
    shapes = {name: (lambda n, r, name=name: input_shape(name, n, r)) for name in INPUT_SHAPES}
    origin = {name: "ember.precision.INPUT_SHAPES" for name in INPUT_SHAPES}
    for name, fn in extra_shapes().items():
        shapes[name], origin[name] = fn, "docs/figures/gen_data.py extra_shapes()"
    configs = [{"label": f"2^{args.log_n - 1} slots (full)", "slots": None, "shapes": list(shapes)}]
    if args.sparse_slots:
        configs.append({"label": f"{args.sparse_slots} slots (sparse packing)", "slots": args.sparse_slots,
                        "shapes": ["uniform_complex", "const", "alternating_complex", "spikes", "tiny_1e-6"]})
    results = []
    with big_lock(True):
        for cfg in configs:
            params = ember.CkksParams.bootstrappable(log_n=args.log_n, slots=cfg["slots"])
            ctx = ember.Context(params, threads=args.threads)
            s = time.time()
            keys = ctx.keygen(bootstrapping=True)
            keygen_s = time.time() - s
            rng = np.random.default_rng(args.seed)
            n = ctx.bootstrapper().slots        # the bootstrapper's slots (fewer values pack sparsely)
            warm = ctx.encrypt(np.zeros(n), keys.public, level=0).bootstrap()  # warm-up (first-touch memory)
            del warm
            rows = []
            for name in cfg["shapes"]:
                st, times = [], []
                for _ in range(args.reps):
                    z = shapes[name](n, rng)
                    ct = ctx.encrypt(z, keys.public, level=0)
                    s = time.perf_counter()
                    out = ct.bootstrap()
                    times.append(time.perf_counter() - s)
                    st.append(ember.precision(z, ctx.decrypt(out, keys.secret)))
                worst = min(st, key=lambda x: x.min_bits)
                rows.append({"shape": name, "origin": origin[name],
                             "max_abs": float(np.max(np.abs(z))),
                             "min_bits": worst.min_bits, "min_bits_per_rep": [x.min_bits for x in st],
                             "mean_bits": float(np.mean([x.mean_bits for x in st])),
                             "median_bits": float(np.median([x.median_bits for x in st])),
                             "max_error": worst.max_error, "worst_slot": worst.worst_slot,
                             "bootstrap_s": times})
                print(f"{cfg['label']:28s} {name:22s} min {worst.min_bits:6.2f}  mean "
                      f"{rows[-1]['mean_bits']:6.2f}", file=sys.stderr)
            results.append({"label": cfg["label"], "slots": n, "params": params.to_dict(),
                            "levels_after": out.level, "log_scale_after": float(np.log2(out.scale)),
                            "message_ratio_bits": params.bootstrap_config.message_ratio_bits,
                            "keygen_s": keygen_s, "rows": rows})
            del ctx, keys, ct, out
            gc.collect()
    data = {"log_n": args.log_n, "threads": args.threads, "reps_per_shape": args.reps, "seed": args.seed,
            "definition": "bits = -log2 |decrypted - input| per slot (complex modulus), ember.precision: min_bits is "
                          "the worst slot over all repetitions, mean_bits = -log2(mean absolute error) averaged over "
                          "repetitions; each repetition a fresh public-key encryption at level 0, bootstrapped once",
            "configs": results}
    write("boot_precision", data, t0, mach)


def main() -> int:
    """Parse the figure's name and its options, and run it."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="figure", required=True)
    p = sub.add_parser("peers", help="peer comparison (compare_peers.py + compare_boot.py)")
    p.add_argument("--runs", type=int, default=10, help="timed runs of mul / rotate (default 10)")
    p.add_argument("--peers", default="ember,openfhe,desilo,seal")
    p.add_argument("--boot-runs", type=int, default=3, help="timed bootstraps per library (0: skip)")
    p.add_argument("--boot-peers", default="ember,desilo,openfhe")
    p.add_argument("--no-seal", dest="seal", action="store_false",
                   help="skip the run at SEAL's configuration (N = 2^15, 15 levels, 1 thread)")
    p.set_defaults(fn=peers)
    p = sub.add_parser("keyswitch", help="ember.trace() per kernel of HE Mul and rotate vs the copy bandwidth")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.set_defaults(fn=keyswitch)
    p = sub.add_parser("gantt", help="HEFT / PEFT schedules of the bootstrapping graph on paper:2,2")
    p.add_argument("--host-costs", default="bench/sched/cpu_n16_2t.json",
                   help="measured CPU cost table for the host ('' : the simulator's CPU model)")
    p.add_argument("--algos", default="naive,heft,peft,best")
    p.set_defaults(fn=gantt)
    p = sub.add_parser("helr", help="HELR training loss, encrypted vs float64")
    p.add_argument("--dataset", default="breast-cancer", choices=["breast-cancer", "digits-3-8"])
    p.add_argument("--iterations", type=int, default=None, help="default: the demo's preset")
    p.add_argument("--threads", type=int, default=2)
    p.set_defaults(fn=helr)
    p = sub.add_parser("precision", help="bootstrapping precision per input shape")
    p.add_argument("--log-n", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sparse-slots", type=int, default=1024, help="also a sparse packing (0: skip)")
    p.set_defaults(fn=precision)
    ap.add_argument("--quiet-wait", type=float, default=300.0,
                    help="before measuring, wait up to this many seconds for CPUs busy <= 10%% for 15 s (default 300)")
    args = ap.parse_args()
    QUIET["max_wait_s"] = args.quiet_wait
    os.chdir(ROOT)
    args.fn(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
