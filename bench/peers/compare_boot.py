#!/usr/bin/env python3
"""Side-by-side CKKS bootstrapping benchmark: Ember vs. DESILO vs. OpenFHE.

Companion of compare_peers.py (same conventions, helpers imported from it): every
library runs in its own subprocess (``--worker NAME``) under the interpreter that
has it, one after the other, never two at once. A missing package, an exception,
a crash or an out-of-memory kill turns into a JSON line with an "error" field;
the peak RSS of each library is that of its own subprocess (os.wait4 rusage).

* DESILO  (``desilofhe`` 2.x) runs under ``--desilo-python``.
* OpenFHE (``openfhe``, CPython 3.10 wheel) runs under ``--openfhe-python``.
* Ember runs under ``--ember-python`` once ``ember.CkksParams.bootstrappable``
  exists; until then its line says "skipped: ember has no bootstrapping yet".

Per library: one warm-up bootstrap, then ``--runs`` timed ones. Output: one JSON
object per line (fields in FIELDS below), then a ``rich`` table when stdout is a
terminal (or with ``--table``). See README.md next to this file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import (  # noqa: E402  (kept Python 3.10-compatible, like this file)
    DEFAULT_OPENFHE_PYTHON, RESULT_PREFIX, _openfhe_moduli_bits, add_output_args, comma_list, emit, fmt,
    import_peer, run_peers, run_worker_main, show_table, time_it, timing_fields)

DEFAULT_DESILO_PYTHON = "/tmp/ci/build/venv/bin/python"
ALL_PEERS = ("desilo", "openfhe", "ember")
LOCK_PATH = os.path.join(tempfile.gettempdir(), "ember-compare-boot.lock")

FIELDS = ("library", "version", "op", "log_n", "slots", "inputs", "threads", "security", "runs",
          "median_ms", "min_ms", "max_ms", "precision_bits", "levels_after", "log_q_after", "log_scale",
          "keygen_s", "setup_s", "peak_rss_mb", "throughput", "notes")


# --------------------------------------------------------------------------
# helpers shared by parent and workers (Python 3.10-compatible)
# --------------------------------------------------------------------------

def log(msg):
    sys.stderr.write("[compare_boot] %s\n" % msg)
    sys.stderr.flush()


def make_record(library, cfg, **kw):
    rec = {k: None for k in FIELDS}
    rec.update(library=library, op="bootstrap", log_n=cfg["log_n"], slots=cfg["slots"], threads=cfg["threads"],
               runs=cfg["runs"], notes="")
    rec.update(kw)
    return rec


def make_inputs(cfg, slots, complex_ok):
    """Uniform in [-1, 1]: real, or real and imaginary parts each uniform in [-1, 1]."""
    import numpy as np
    rng = np.random.default_rng(cfg["seed"])
    want = cfg["inputs"]
    use_complex = complex_ok if want == "auto" else want == "complex"
    x = rng.uniform(-1, 1, slots)
    if use_complex:
        x = x + 1j * rng.uniform(-1, 1, slots)
    return x, ("complex" if use_complex else "real")


def max_err_bits(got, want):
    """-log2(max |got - want|) over all slots (complex modulus for complex inputs)."""
    import numpy as np
    want = np.asarray(want)
    got = np.asarray(got)[: len(want)]
    if not np.iscomplexobj(want):
        got = got.real
    err = float(np.max(np.abs(got - want)))
    return 53.0 if err < 2.0 ** -53 else round(-math.log2(err), 2)


def timed_bootstraps(fn, runs):
    """compare_peers.time_it (1 warm-up + `runs` timed calls) plus the CPU/wall ratio of the whole
    thing, which tells whether the library really used the threads it was given."""
    c0, w0 = os.times(), time.perf_counter()
    t, out = time_it(fn, runs)
    c1, w1 = os.times(), time.perf_counter()
    util = (c1.user + c1.system - c0.user - c0.system) / max(w1 - w0, 1e-9)
    return t, out, round(max(util, 0.0), 2)


def throughput(rec):
    """MAD Eq. 3: slots x log q after bootstrapping x precision bits / bootstrapping seconds."""
    try:
        return round(rec["slots"] * rec["log_q_after"] * rec["precision_bits"] / (rec["median_ms"] / 1e3))
    except (TypeError, ZeroDivisionError):
        return None


# --------------------------------------------------------------------------
# DESILO worker
# --------------------------------------------------------------------------

def _desilo_residue_bits(engine, ct):
    """log2 of each RNS modulus of `ct`, read from its serialization: the residues of a ciphertext are
    uniform mod q_i, so max over N coefficients ~ q_i (to ~1e-4 bits). desilofhe exposes neither its
    moduli nor their sizes. Uses the second polynomial (the last limbs x N x 8 bytes of the
    serialization). Returns (bits, reliable)."""
    import numpy as np
    n = 2 * engine.slot_count
    data = bytes(engine.serialize_ciphertext(ct))
    limbs = len(data) // (n * 8) // 2
    arr = np.frombuffer(data[len(data) - limbs * n * 8:], dtype=np.uint64).reshape(limbs, n)
    bits, reliable = [], True
    for row in arr:
        m = int(row.max())
        bits.append(math.log2(m + 1))
        reliable &= abs(float(np.mean(row >= m // 2)) - 0.5) < 0.03  # uniform below m
    return bits, reliable


def worker_desilo(cfg):
    desilofhe, version = import_peer("desilofhe", "desilofhe", lambda msg: make_record("desilo", cfg, error=msg))
    if desilofhe is None:
        return
    threads, mode, key_size = cfg["threads"], cfg["desilo_mode"], cfg["desilo_key"]
    security = "library default (DESILO does not document a level; not configurable)"
    if cfg["quick"] and not cfg["desilo_in_quick"]:
        emit(make_record("desilo", cfg, version=version, log_n=16, slots=1 << 15, security=security,
                         notes="skipped: --quick",
                         error="skipped: DESILO's bootstrapping engine has one fixed parameter set (N=2^16, "
                               "2^15 slots); no small ring for --quick (run without --quick, or add "
                               "--desilo-in-quick to run it at full size)"))
        return

    t0 = time.perf_counter()
    engine = desilofhe.Engine(mode=mode, bootstrap=True, thread_count=threads)
    setup_s = time.perf_counter() - t0
    slots = engine.slot_count
    log_n = int(round(math.log2(2 * slots)))
    notes = []
    if cfg["slots"] and cfg["slots"] != slots:
        notes.append("--slots %d ignored: Engine(bootstrap=True) in desilofhe %s has no slot-count option, "
                     "all %d slots are bootstrapped" % (cfg["slots"], version, slots))
    if log_n != cfg["log_n"]:
        notes.append("requested log_n=%d, DESILO's bootstrapping engine is fixed at log_n=%d" % (cfg["log_n"], log_n))
    base = dict(version=version, log_n=log_n, slots=slots, threads=threads, security=security)

    t0 = time.perf_counter()
    sk = engine.create_secret_key()
    rlk = engine.create_relinearization_key(sk)
    cjk = engine.create_conjugation_key(sk)
    if key_size == "small":
        rot = engine.create_roll_key(sk)
        sbk = engine.create_small_bootstrap_key(sk)
        fn_args = (rlk, cjk, rot, sbk)
        key_desc = "create_roll_key + create_small_bootstrap_key (the low-memory variant)"
    else:
        bk = engine.create_bootstrap_key(sk, size=key_size)
        fn_args = (rlk, cjk, bk)
        key_desc = "create_bootstrap_key(sk, size=%r)%s" % (key_size, " (the default)" if key_size == "medium" else "")
    keygen_s = time.perf_counter() - t0

    x, kind = make_inputs(cfg, slots, complex_ok=True)
    ct = engine.encrypt(x, sk, 0)  # level 0: nothing left, as in DESILO's bootstrapping example
    t, out, util = timed_bootstraps(lambda: engine.bootstrap(ct, *fn_args), cfg["runs"])
    prec = max_err_bits(engine.decrypt(out, sk), x)
    try:
        bits, reliable = _desilo_residue_bits(engine, out)
        log_q = round(sum(bits), 1)
        if not reliable:
            notes.append("log_q_after UNRELIABLE (residues not uniform below their max)")
        q_desc = "%d RNS limbs of %s bits" % (len(bits), "/".join(sorted({"%.0f" % b for b in bits})))
    except Exception as exc:  # noqa: BLE001
        log_q, q_desc = None, "modulus not inferred (%r)" % exc
    notes.append(
        "Engine(mode=%r, bootstrap=True, thread_count=%d) (setup %.1fs, build %s); keys: secret, "
        "relinearization, conjugation, %s; bootstrap(ct, %s) on a level-0 secret-key encryption; "
        "output level %d (max_level %d); output modulus inferred from the serialized ciphertext: %s; "
        "log_scale null: desilofhe exposes no scale (its serialized plaintexts are not plain residues); "
        "CPU/wall during the bootstraps %.2f"
        % (mode, threads, setup_s, engine.build_hash, key_desc, ", ".join(type(a).__name__ for a in fn_args),
           out.level, engine.max_level, q_desc, util))
    rec = make_record("desilo", cfg, **base, **timing_fields(t), inputs=kind, precision_bits=prec,
                      levels_after=out.level, log_q_after=log_q, log_scale=None,
                      keygen_s=round(keygen_s, 1), setup_s=round(setup_s, 1), notes=". ".join(notes))
    emit(rec)


# --------------------------------------------------------------------------
# OpenFHE worker (runs under Python 3.10)
# --------------------------------------------------------------------------

def worker_openfhe(cfg):
    import numpy as np
    o, version = import_peer("openfhe", "openfhe numpy", lambda msg: make_record("openfhe", cfg, error=msg))
    if o is None:
        return
    n = 1 << cfg["log_n"]
    secure = cfg["openfhe_security"] == "128"
    scale_bits = cfg["openfhe_scale_bits"] or (50 if secure else 59)
    # the example's gap q0/scale = 2^1 (60/59); FirstModSize 60 with a 50-bit scale is refused by
    # EvalBootstrap ("Degree [10] must be less than or equal to the correction factor [8]" at N=2^16)
    first_mod = cfg["openfhe_first_mod"] or scale_bits + 1
    budget = cfg["openfhe_level_budget"]
    kd = o.SecretKeyDist.UNIFORM_TERNARY
    boot_depth = o.CryptoContext.GetBootstrapDepth(budget, kd)
    sec_level = o.SecurityLevel.HEStd_128_classic if secure else o.SecurityLevel.HEStd_NotSet
    security = "HEStd_128_classic" if secure else "NONE (HEStd_NotSet: not 128-bit secure)"

    def build(levels_after):
        p = o.CCParamsCKKSRNS()
        p.SetSecretKeyDist(kd)
        p.SetSecurityLevel(sec_level)
        p.SetRingDim(n)
        p.SetScalingModSize(scale_bits)
        p.SetScalingTechnique(o.ScalingTechnique.FLEXIBLEAUTO)
        p.SetFirstModSize(first_mod)
        p.SetMultiplicativeDepth(levels_after + boot_depth)
        if cfg["inputs"] == "complex":
            p.SetCKKSDataType(o.CKKSDataType.COMPLEX)
        return o.GenCryptoContext(p)

    # levels after bootstrapping: the example's 10, or fewer when OpenFHE refuses the modulus at the
    # requested security level for this ring dimension (it does at N=2^16 and 128 bits)
    wanted = cfg["openfhe_levels_after"]
    candidates = [wanted] if wanted else list(range(10, 0, -1))
    t0 = time.perf_counter()
    cc, levels_req, refused = None, None, []
    for a in candidates:
        try:
            cc = build(a)
            levels_req = a
            break
        except Exception as exc:  # noqa: BLE001
            msg = " ".join(str(exc).split())
            refused.append((a, msg.split("():", 1)[-1].strip()[:160]))
    base = dict(version=version, security=security)
    if cc is None:
        emit(make_record("openfhe", cfg, **base, log_scale=scale_bits,
                         error="GenCryptoContext refused every depth tried (levels after "
                         "bootstrapping %s, scale %d bits, first modulus %d bits, level budget %s): %s"
                         % (candidates, scale_bits, first_mod, budget, refused[-1][1])))
        return
    for feat in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE, o.ADVANCEDSHE, o.FHE):
        cc.Enable(feat)
    n = cc.GetRingDimension()
    slots = cfg["slots"] or n // 2
    depth = levels_req + boot_depth
    q_bits = _openfhe_moduli_bits(o, cc)  # before EvalBootstrapSetup: the context is still small
    cc.EvalBootstrapSetup(budget, [0, 0], slots)
    setup_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    kp = cc.KeyGen()
    cc.EvalMultKeyGen(kp.secretKey)
    cc.EvalBootstrapKeyGen(kp.secretKey, slots)
    keygen_s = time.perf_counter() - t0

    x, kind = make_inputs(cfg, slots, complex_ok=False)  # REAL is OpenFHE's default CKKSDataType
    pt = cc.MakeCKKSPackedPlaintext(x, 1, depth - 1, None, slots)  # as in simple-ckks-bootstrapping.py
    ct = cc.Encrypt(kp.publicKey, pt)
    t, out, util = timed_bootstraps(lambda: cc.EvalBootstrap(ct), cfg["runs"])
    dec = cc.Decrypt(out, kp.secretKey)
    dec.SetLength(slots)
    got = np.array(dec.GetCKKSPackedValue() if kind == "complex" else dec.GetRealPackedValue())
    prec = max_err_bits(got, x)
    deg = out.GetNoiseScaleDeg()
    levels_after = depth - out.GetLevel() - (deg - 1)
    log_q = round(sum(q_bits[: levels_after + 1]), 1) if q_bits else None
    log_scale = round(math.log2(out.GetScalingFactor()) / deg, 2)
    counts = {}
    for b in q_bits or []:
        counts[b] = counts.get(b, 0) + 1
    notes = []
    if cfg["quick"]:
        notes.append("QUICK: toy parameters, not secure")
    if refused and not wanted:
        notes.append("levels after bootstrapping reduced from the example's 10 to %d: OpenFHE refuses more at %s for "
                     "N=%d (%s)" % (levels_req, security, n, refused[-1][1]))
    notes.append(
        "simple-ckks-bootstrapping recipe: UNIFORM_TERNARY, FLEXIBLEAUTO, ScalingModSize %d, FirstModSize %d, "
        "level budget %s (bootstrap depth %d), depth %d = %d + %d, default dnum (NumLargeDigits auto), "
        "ring dim %d, EvalBootstrapSetup(%s, [0, 0], %d), EvalBootstrap(ct) on a public-key encryption at "
        "level depth-1; Q = %d primes [%s]; output level %d, noise-scale degree %d; log_q_after = the first "
        "levels_after+1 primes; OMP_NUM_THREADS=%s, CPU/wall during the bootstraps %.2f"
        % (scale_bits, first_mod, budget, boot_depth, depth, levels_req, boot_depth, n, budget, slots,
           len(q_bits or []), ", ".join("%dx%g" % (c, b) for b, c in sorted(counts.items(), reverse=True)),
           out.GetLevel(), deg, os.environ.get("OMP_NUM_THREADS"), util))
    emit(make_record("openfhe", cfg, **base, **timing_fields(t), log_n=int(math.log2(n)), slots=slots, inputs=kind,
                     precision_bits=prec, levels_after=levels_after, log_q_after=log_q, log_scale=log_scale,
                     keygen_s=round(keygen_s, 1), setup_s=round(setup_s, 1), notes="; ".join(notes)))


# --------------------------------------------------------------------------
# Ember worker (kept tiny: adapt it as the bootstrapping API settles)
# --------------------------------------------------------------------------

def worker_ember(cfg):
    import inspect
    try:
        import ember
    except ImportError as exc:
        emit(make_record("ember", cfg, notes="skipped: ember not importable",
                         error="skipped: `import ember` failed under %s (%s)" % (sys.executable, exc)))
        return
    version = getattr(ember, "__version__", None)
    if not hasattr(ember.CkksParams, "bootstrappable"):
        emit(make_record("ember", cfg, version=version, notes="skipped",
                         error="skipped: ember has no bootstrapping yet"))
        return
    security = "NONE (insecure=True, --quick)" if cfg["quick"] else "128-bit (Ember's bound on log QP)"
    try:
        kw = dict(log_n=cfg["log_n"], slots=cfg["slots"] or None)
        if cfg["quick"]:
            kw["insecure"] = True
        t0 = time.perf_counter()
        params = ember.CkksParams.bootstrappable(**kw)
        ctx = ember.Context(params, threads=cfg["threads"])
        setup_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        keys = ctx.keygen(bootstrapping=True)
        keygen_s = time.perf_counter() - t0
        slots = cfg["slots"] or ctx.slots
        x, kind = make_inputs(cfg, slots, complex_ok=True)
        ct = ctx.encrypt(x, keys.secret, level=0)
        with_keys = "keys" in inspect.signature(ctx.bootstrap).parameters   # older builds took the key set
        boot = (lambda: ctx.bootstrap(ct, keys)) if with_keys else (lambda: ctx.bootstrap(ct))
        t, out, util = timed_bootstraps(boot, cfg["runs"])
        prec = max_err_bits(ctx.decrypt(out, keys.secret), x)
        q = getattr(params, "q_primes", None)
        log_q = round(sum(math.log2(p) for p in q[: out.level + 1]), 1) if q is not None else None
        emit(make_record("ember", cfg, version=version, security=security, **timing_fields(t), slots=slots,
                         inputs=kind, precision_bits=prec, levels_after=out.level, log_q_after=log_q,
                         log_scale=round(math.log2(out.scale), 2), keygen_s=round(keygen_s, 1),
                         setup_s=round(setup_s, 1),
                         notes="CkksParams.bootstrappable(%s) = %s; ctx.keygen(bootstrapping=True); "
                               "ctx.bootstrap(ct%s) on a level-0 encryption; CPU/wall %.2f"
                               % (", ".join("%s=%r" % kv for kv in kw.items()), params.to_dict(),
                                  ", keys" if with_keys else "", util)))
    except Exception as exc:  # noqa: BLE001
        emit(make_record("ember", cfg, version=version, security=security, error="%s: %s" % (type(exc).__name__, exc)))


WORKERS = {"desilo": worker_desilo, "openfhe": worker_openfhe, "ember": worker_ember}


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def mem_available_gb():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return None


def wait_for_quiet(need_gb, max_load, wait_s, settle_s=20):
    """True when MemAvailable >= need_gb (and the 1-minute load average <= max_load, if given) has held
    for settle_s seconds, waiting up to wait_s seconds for it; also returns the last MemAvailable."""
    deadline = time.time() + wait_s
    since, last_log = None, 0.0
    while True:
        avail = mem_available_gb()
        load = os.getloadavg()[0]
        ok = (avail is None or avail >= need_gb) and (max_load is None or load <= max_load)
        if ok and wait_s <= 0:
            return True, avail
        if ok:
            since = since or time.time()
            if time.time() - since >= settle_s:
                return True, avail
        else:
            since = None
            if time.time() >= deadline:
                return False, avail
            if time.time() - last_log >= 60:
                last_log = time.time()
                log("waiting for a quiet machine: %.1f GiB available (need %.1f), load %.2f%s ..."
                    % (avail if avail is not None else float("nan"), need_gb, load,
                       " (max %.2f)" % max_load if max_load is not None else ""))
        time.sleep(5)


def run_worker(peer, cfg, args):
    """Runs one library in its own process; returns its records with peak_rss_mb (from wait4)."""
    python = {"desilo": args.desilo_python, "openfhe": args.openfhe_python, "ember": args.ember_python}[peer]
    if not os.path.exists(python):
        return [make_record(peer, cfg, error="interpreter %s not found (use --%s-python)" % (python, peer))]
    env = dict(os.environ)
    t = str(cfg["threads"])
    env.update(OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    argv = [python, os.path.abspath(__file__), "--worker", peer, "--worker-config", json.dumps(cfg)]
    log("running %s under %s ..." % (peer, python))
    import subprocess
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        proc = subprocess.Popen(argv, env=env, stdout=out_f, stderr=err_f, text=True)
        status, usage, timed_out = None, None, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > args.timeout:
                timed_out = True
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        proc.returncode = 0  # reaped by wait4 above; keeps Popen from waiting again
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
    wall = time.perf_counter() - t0
    rss_mb = round(usage.ru_maxrss / 1024, 1)  # Linux: KiB
    records = [json.loads(line[len(RESULT_PREFIX):]) for line in out.splitlines() if line.startswith(RESULT_PREFIX)]
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        rc_desc = "killed by signal %d%s" % (sig, " (timeout %ss)" % args.timeout if timed_out else
                                             " (out of memory?)" if sig == signal.SIGKILL else "")
    else:
        rc_desc = "exit %d" % os.WEXITSTATUS(status)
    log("%s finished in %.1fs (%s, peak RSS %.0f MB)" % (peer, wall, rc_desc, rss_mb))
    if rc_desc != "exit 0" and not records:
        tail = " | ".join(err.strip().splitlines()[-4:])
        records.append(make_record(peer, cfg, error="worker %s: %s" % (rc_desc, tail)))
    elif err.strip() and args.verbose:
        sys.stderr.write(err)
    for r in records:
        r["peak_rss_mb"] = rss_mb
        r["throughput"] = throughput(r)
    return records


def run_when_quiet(peer, cfg, args):
    """run_worker once the machine is quiet; again (up to --retries times) after a SIGKILL that was not
    our timeout, which on a shared machine usually means the kernel's OOM killer."""
    for attempt in range(args.retries + 1):
        ok, avail = wait_for_quiet(args.min_avail_gb, args.max_load, args.wait_mem)
        if not ok:
            return [make_record(peer, cfg, error="skipped: machine busy: %.1f GiB of memory available "
                                "(--min-avail-gb %.1f), load %.2f (--max-load %s); other jobs running? use "
                                "--wait-mem SECONDS" % (avail, args.min_avail_gb, os.getloadavg()[0], args.max_load))]
        try:
            recs = run_worker(peer, cfg, args)
        except Exception as exc:  # noqa: BLE001
            return [make_record(peer, cfg, error="%s: %s" % (type(exc).__name__, exc))]
        killed = [r for r in recs if "killed by signal %d (out of memory" % signal.SIGKILL in (r.get("error") or "")]
        if not killed or attempt == args.retries:
            if attempt:
                for r in recs:
                    r["notes"] = ((r.get("notes") or "") + "; attempt %d (earlier attempts killed by SIGKILL)"
                                  % (attempt + 1)).lstrip("; ")
            return recs
        log("%s was killed (out of memory?); retrying (%d of %d)" % (peer, attempt + 1, args.retries))
    return recs


def print_table(records, console_file=None):
    f = fmt
    headers = ["library", "N", "slots", "in", "median s", "min s", "bits", "lvls", "logQ", "logD",
               "keygen s", "RSS GiB", "thru (Eq.3)", "status"]
    rows, problems = [], []
    for r in records:
        status = "ok"
        if r.get("error"):
            status = "skipped" if "skipped" in (r.get("error") or "") else "error"
            problems.append("%s: %s" % (r.get("library"), r["error"]))
        elif "NONE" in (r.get("security") or ""):
            status = "ok (toy)"
        rows.append([r.get("library", "?"), "2^%s" % r.get("log_n"), f(r.get("slots"), "{}"),
                     (r.get("inputs") or "-")[:4], f(r.get("median_ms") and r["median_ms"] / 1e3, "{:.2f}"),
                     f(r.get("min_ms") and r["min_ms"] / 1e3, "{:.2f}"), f(r.get("precision_bits")),
                     f(r.get("levels_after"), "{}"), f(r.get("log_q_after"), "{:.0f}"), f(r.get("log_scale")),
                     f(r.get("keygen_s")), f(r.get("peak_rss_mb") and r["peak_rss_mb"] / 1024, "{:.2f}"),
                     f(r.get("throughput"), "{:.3g}"), status])
    show_table("CKKS bootstrapping (1 warm-up + runs); bits = precision; thru = slots x logQ_after x bits / s",
               headers, rows, problems, left=("library", "in", "status"), console_file=console_file)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="timed bootstraps after one warm-up (default 3)")
    ap.add_argument("--threads", type=int, default=2, help="threads per library (default 2)")
    ap.add_argument("--peers", default=",".join(ALL_PEERS), help="comma list of: %s (default: all)" % ",".join(ALL_PEERS))
    ap.add_argument("--log-n", type=int, default=None, help="log2 ring dimension (default 16; 12 with --quick)")
    ap.add_argument("--slots", type=int, default=None,
                    help="slots to bootstrap, a power of two <= N/2 (default N/2; 64 with --quick; DESILO: always N/2)")
    ap.add_argument("--inputs", default="auto", choices=("auto", "real", "complex"),
                    help="auto (default): complex where the library's default setup supports it (DESILO, Ember), "
                         "real for OpenFHE (its default CKKSDataType.REAL)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run with TOY (insecure) parameters: N=2^12, 64 slots; DESILO is skipped")
    ap.add_argument("--seed", type=int, default=1, help="numpy seed for the inputs (default 1)")
    ap.add_argument("--desilo-python", default=os.environ.get("DESILO_PYTHON", DEFAULT_DESILO_PYTHON),
                    help="interpreter with desilofhe (default $DESILO_PYTHON or %s)" % DEFAULT_DESILO_PYTHON)
    ap.add_argument("--openfhe-python", default=os.environ.get("OPENFHE_PYTHON", DEFAULT_OPENFHE_PYTHON),
                    help="interpreter with the openfhe wheel, CPython 3.10 (default $OPENFHE_PYTHON or %s)"
                    % DEFAULT_OPENFHE_PYTHON)
    ap.add_argument("--ember-python", default=os.environ.get("EMBER_PYTHON", sys.executable),
                    help="interpreter with ember (default $EMBER_PYTHON or this one)")
    ap.add_argument("--desilo-key", default="medium", choices=("medium", "large", "small"),
                    help="DESILO bootstrap key: create_bootstrap_key(size=medium|large) (default medium, the "
                         "library's default) or small = roll key + small bootstrap key (less memory, slower)")
    ap.add_argument("--desilo-mode", default="parallel", choices=("cpu", "parallel"),
                    help="desilofhe Engine mode (default parallel, with thread_count=--threads)")
    ap.add_argument("--desilo-in-quick", action="store_true", help="run DESILO (at full size) even with --quick")
    ap.add_argument("--openfhe-security", default=None, choices=("128", "notset"),
                    help="HEStd_128_classic (default) or HEStd_NotSet (default with --quick)")
    ap.add_argument("--openfhe-scale-bits", type=int, default=None,
                    help="ScalingModSize (default 50 = OpenFHE's default at 128-bit; 59 = the example's, with notset)")
    ap.add_argument("--openfhe-first-mod", type=int, default=None,
                    help="FirstModSize (default scale bits + 1, the example's 60/59 gap; EvalBootstrap refuses "
                         "a gap above its correction factor, 8 at N=2^16)")
    ap.add_argument("--openfhe-levels-after", type=int, default=None,
                    help="levels left after bootstrapping (default: the example's 10, or the most OpenFHE "
                         "accepts at the security level)")
    ap.add_argument("--openfhe-level-budget", default="4,4",
                    help="CoeffsToSlots,SlotsToCoeffs level budget (default 4,4 as in the example)")
    ap.add_argument("--min-avail-gb", type=float, default=None,
                    help="MemAvailable needed before starting each library (default 18 GiB for N >= 2^16, else 0)")
    ap.add_argument("--max-load", type=float, default=None,
                    help="also require a 1-minute load average <= this before starting each library "
                         "(default: no check)")
    ap.add_argument("--wait-mem", type=int, default=0,
                    help="seconds to wait for --min-avail-gb (and --max-load) to hold for 20 s before skipping a "
                         "library (default 0: check once, do not wait)")
    ap.add_argument("--retries", type=int, default=0,
                    help="run a library again (after waiting for a quiet machine) when it was killed by SIGKILL, "
                         "e.g. by the OOM killer (default 0)")
    ap.add_argument("--no-oom-first", dest="oom_first", action="store_false",
                    help="do not set oom_score_adj=1000 in the workers (default: they volunteer as the OOM "
                         "killer's first victim, to spare other jobs on a shared machine)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per library (default 3600)")
    add_output_args(ap, WORKERS)
    args = ap.parse_args(argv)
    if args.log_n is None:
        args.log_n = 12 if args.quick else 16
    if args.slots is None and args.quick:
        args.slots = 64
    if args.openfhe_security is None:
        args.openfhe_security = "notset" if args.quick else "128"
    if args.min_avail_gb is None:
        args.min_avail_gb = 18.0 if args.log_n >= 16 else 0.0
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        cfg = json.loads(args.worker_config)
        if cfg.get("oom_first", True):
            try:  # on a shared machine, let the kernel kill this benchmark rather than someone else's job
                with open("/proc/self/oom_score_adj", "w") as fh:
                    fh.write("1000")
            except OSError:
                pass
        run_worker_main(WORKERS, args.worker, cfg, lambda msg: make_record(args.worker, cfg, error=msg))
        return 0

    peers = comma_list(args.peers)
    cfg = dict(log_n=args.log_n, slots=args.slots, threads=args.threads, runs=args.runs, seed=args.seed,
               inputs=args.inputs, quick=args.quick, desilo_key=args.desilo_key, desilo_mode=args.desilo_mode,
               desilo_in_quick=args.desilo_in_quick, openfhe_security=args.openfhe_security,
               openfhe_scale_bits=args.openfhe_scale_bits, openfhe_first_mod=args.openfhe_first_mod,
               openfhe_levels_after=args.openfhe_levels_after,
               openfhe_level_budget=[int(v) for v in args.openfhe_level_budget.split(",")], oom_first=args.oom_first)

    # never two of these runs at once (each full-size library needs up to ~15 GB)
    import fcntl
    lock = open(LOCK_PATH, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log("another compare_boot.py holds %s; waiting for it ..." % LOCK_PATH)
        fcntl.flock(lock, fcntl.LOCK_EX)

    def run_one(peer):
        if peer not in WORKERS:
            return [make_record(peer, cfg, error="unknown library (choose from %s)" % ",".join(ALL_PEERS))]
        return run_when_quiet(peer, cfg, args)

    run_peers(peers, run_one, FIELDS, args, print_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
