#!/usr/bin/env python3
"""Side-by-side CKKS benchmark: Ember vs. peer libraries (DESILO, OpenFHE, SEAL).

Every peer runs in its own subprocess (``--worker NAME``), so a missing
package, an exception, a segfault or an out-of-memory kill in one peer turns
into a JSON line with an "error" field and never ends the whole run.

* DESILO runs under the interpreter that runs this script (``desilofhe`` wheels
  exist for CPython >= 3.10).
* OpenFHE runs under ``--openfhe-python`` (default: pyenv's 3.10.13), because
  the ``openfhe`` wheel on PyPI only ships a CPython 3.10 extension module.
* Microsoft SEAL runs under the same ``--openfhe-python``, through TenSEAL's
  bundled SEAL bindings (``import tenseal.sealapi``; ``pip install tenseal``
  into that CPython 3.10).
* Ember is measured through its own CLI (``ember bench OP ...``) when
  ``import ember`` works in this interpreter; otherwise it is skipped with a
  note.

Output: one JSON object per line on stdout with the fields
library, version, op, log_n, levels, dnum, threads, median_ms, min_ms,
max_ms, precision_bits, notes (plus "error" when something failed), then a
``rich`` summary table when stdout is a terminal (or with ``--table``).

See README.md next to this file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RESULT_PREFIX = "@@PEER-RESULT "
DEFAULT_OPENFHE_PYTHON = "/root/.pyenv/versions/3.10.13/bin/python"
ALL_PEERS = ("desilo", "openfhe", "seal", "ember")
OPS = ("mul", "rotate", "rotate_many")
N_ROTATIONS = 8  # rotate_many: rotations by 1..8 of one ciphertext

FIELDS = ("library", "version", "op", "log_n", "levels", "dnum", "threads",
          "median_ms", "min_ms", "max_ms", "precision_bits", "notes")


# --------------------------------------------------------------------------
# helpers shared by parent and workers (keep them Python 3.10-compatible)
# --------------------------------------------------------------------------

def make_record(library, op, cfg, **kw):
    rec = {
        "library": library,
        "version": kw.pop("version", None),
        "op": op,
        "log_n": kw.pop("log_n", cfg["log_n"]),
        "levels": kw.pop("levels", cfg["levels"]),
        "dnum": kw.pop("dnum", cfg["dnum"]),
        "threads": kw.pop("threads", cfg["threads"]),
        "median_ms": None,
        "min_ms": None,
        "max_ms": None,
        "precision_bits": None,
        "notes": "",
    }
    rec.update(kw)
    return rec


def emit(rec):
    """Worker side: hand one record to the parent."""
    sys.stdout.write(RESULT_PREFIX + json.dumps(rec) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write("[compare_peers] %s\n" % msg)
    sys.stderr.flush()


def time_it(fn, runs):
    """Warm up once, then time `runs` calls. Returns (median, min, max) in ms
    and the result of the last call."""
    out = fn()  # warm-up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return (round(statistics.median(samples), 3), round(min(samples), 3),
            round(max(samples), 3)), out


def precision_bits(got, want):
    import numpy as np
    got = np.asarray(got, dtype=np.complex128).real[: len(want)]
    err = float(np.max(np.abs(got - np.asarray(want))))
    if err < 2.0 ** -53:  # exact to double precision (keeps the JSON finite)
        return 53.0
    return round(-math.log2(err), 2)


def rotation_precision(got, x, k):
    """Precision of a decrypted rotation by k, trying both directions.
    Returns (bits, direction)."""
    import numpy as np
    left = precision_bits(got, np.roll(x, -k))
    right = precision_bits(got, np.roll(x, k))
    return (left, "left") if left >= right else (right, "right")


def timing_fields(t):
    return {"median_ms": t[0], "min_ms": t[1], "max_ms": t[2]}


def import_peer(module, pip_args, error_record):
    """Worker side: import a peer library. Returns (module, version); when it cannot be imported, emits
    error_record(message) (a record carrying the error) and returns (None, None)."""
    import importlib
    import importlib.metadata as md
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        emit(error_record("%s not importable under %s (%s); install with `%s -m pip install %s`"
                          % (module, sys.executable, exc, sys.executable, pip_args)))
        return None, None
    try:
        version = md.version(module)
    except Exception:  # noqa: BLE001
        version = getattr(mod, "__version__", None)
    return mod, version


def run_worker_main(workers, name, cfg, error_record):
    """Worker side of main(): run workers[name](cfg); an exception is printed and becomes one record
    error_record(message), so that the parent keeps going."""
    try:
        workers[name](cfg)
    except Exception as exc:  # noqa: BLE001 - report, the parent keeps going
        import traceback
        traceback.print_exc()
        emit(error_record("%s: %s" % (type(exc).__name__, exc)))


@contextlib.contextmanager
def scratch_path(name):
    """A path called `name` in a fresh temporary folder; the file and the folder are removed afterwards
    (best effort)."""
    path = os.path.join(tempfile.mkdtemp(prefix="ofhe-"), name)
    try:
        yield path
    finally:
        try:
            os.remove(path)
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


# --------------------------------------------------------------------------
# DESILO worker
# --------------------------------------------------------------------------

def worker_desilo(cfg):
    import numpy as np
    desilofhe, version = import_peer("desilofhe", "desilofhe",
                                     lambda msg: make_record("desilo", "all", cfg, error=msg))
    if desilofhe is None:
        return
    threads = cfg["threads"]

    # DESILO's Python API has no knob for N, the prime sizes, the scale or
    # dnum: the engine picks N and its modulus chain from max_level alone.
    t0 = time.perf_counter()
    engine = desilofhe.Engine(max_level=cfg["levels"], mode="parallel", thread_count=threads)
    setup_s = time.perf_counter() - t0
    slots = engine.slot_count
    log_n = int(round(math.log2(2 * slots)))
    levels = engine.max_level
    n = 2 * slots
    limb = n * 8  # bytes of one 64-bit RNS word of one polynomial

    sk = engine.create_secret_key()
    rlk = engine.create_relinearization_key(sk)
    enc_key = engine.create_public_key(sk) if cfg["encrypt"] == "public" else sk
    rng = np.random.default_rng(cfg["seed"])
    x = rng.uniform(-1, 1, slots)
    y = rng.uniform(-1, 1, slots)
    cx = engine.encrypt(x, enc_key)
    cy = engine.encrypt(y, enc_key)
    fresh_bits = precision_bits(engine.decrypt(cx, sk), x)

    ct_words = cx.nbytes / limb / cx.polynomial_count
    rlk_words = rlk.nbytes / limb
    sk_words = sk.nbytes / limb
    notes_common = (
        "Engine(max_level=%d, mode='parallel', thread_count=%d) -> N=2^%d, %d levels "
        "(build %s, engine setup %.1fs). DESILO exposes no API for prime sizes, scale or dnum; "
        "inferred from object sizes: top-level ciphertext = %.0f x 64-bit words per polynomial, "
        "secret key = %.0f words, relinearization key = %.0f words "
        "(not one prime per level; scale fixed by the library)."
        % (cfg["levels"], threads, log_n, levels, engine.build_hash, setup_s,
           ct_words, sk_words, rlk_words))
    if log_n != cfg["log_n"]:
        notes_common += " NOTE: requested log_n=%d but DESILO chose log_n=%d for max_level=%d." % (
            cfg["log_n"], log_n, cfg["levels"])
    base = dict(version=version, log_n=log_n, levels=levels, dnum=None, threads=threads)

    ops = cfg["ops"]
    if "mul" in ops:
        try:
            t, out = time_it(lambda: engine.multiply(cx, cy, rlk), cfg["runs"])
            prec = precision_bits(engine.decrypt(out, sk), x * y)
            emit(make_record("desilo", "mul", cfg, **base, **timing_fields(t), precision_bits=prec,
                             notes="multiply(ct, ct, relinearization_key): relinearize + rescale "
                                   "(level %d -> %d); inputs %s-key encrypted, fresh-ciphertext "
                                   "precision %.1f bits. " % (cx.level, out.level, cfg["encrypt"], fresh_bits)
                             + notes_common))
        except Exception as exc:  # noqa: BLE001
            emit(make_record("desilo", "mul", cfg, **base, error=repr(exc)))

    if "rotate" in ops or "rotate_many" in ops:
        try:
            keys = [engine.create_fixed_rotation_key(sk, k) for k in range(1, N_ROTATIONS + 1)]
        except Exception as exc:  # noqa: BLE001
            emit(make_record("desilo", "rotate", cfg, **base, error="rotation keygen: %r" % exc))
            keys = None
        if keys is not None and "rotate" in ops:
            try:
                t, out = time_it(lambda: engine.rotate(cx, keys[0]), cfg["runs"])
                prec, direction = rotation_precision(engine.decrypt(out, sk), x, 1)
                emit(make_record("desilo", "rotate", cfg, **base, **timing_fields(t),
                                 precision_bits=prec,
                                 notes="rotate(ct, FixedRotationKey(delta=1)); one key switch; "
                                       "precision_bits = vs np.roll (%s rotation). " % direction
                                       + notes_common))
            except Exception as exc:  # noqa: BLE001
                emit(make_record("desilo", "rotate", cfg, **base, error=repr(exc)))
        if keys is not None and "rotate_many" in ops:
            try:
                t, outs = time_it(lambda: engine.rotate_many(cx, keys), cfg["runs"])
                precs = [rotation_precision(engine.decrypt(o, sk), x, k)[0]
                         for k, o in zip(range(1, N_ROTATIONS + 1), outs)]
                emit(make_record("desilo", "rotate_many", cfg, **base, **timing_fields(t),
                                 precision_bits=min(precs),
                                 notes="rotate_many(ct, [FixedRotationKey(d) for d in 1..%d]) "
                                       "(library batch API; whether it hoists the decomposition "
                                       "is not documented); precision_bits = worst of the %d. "
                                       % (N_ROTATIONS, N_ROTATIONS) + notes_common))
            except Exception as exc:  # noqa: BLE001
                emit(make_record("desilo", "rotate_many", cfg, **base, error=repr(exc)))


# --------------------------------------------------------------------------
# OpenFHE worker (runs under Python 3.10)
# --------------------------------------------------------------------------

def _openfhe_moduli_bits(o, cc):
    """log2 of every Q prime, read from the JSON serialization of the context
    (OpenFHE's Python API does not expose the tower moduli)."""
    with scratch_path("cc.json") as path:
        if not o.SerializeToFile(path, cc, o.JSON):
            return None
        with open(path) as fh:
            doc = json.load(fh)
    towers = []

    def walk(node):
        if isinstance(node, dict):
            elp = node.get("elp")
            if isinstance(elp, dict) and not towers:
                for item in elp.get("ptr_wrapper", {}).get("data", {}).get("p", []):
                    data = item.get("ptr_wrapper", {}).get("data", {}).get("value0", {})
                    cm = data.get("cm")
                    if isinstance(cm, dict):
                        cm = cm.get("v")
                    if isinstance(cm, list):
                        val = 0
                        for i, w in enumerate(cm):
                            val |= int(w) << (64 * i)
                    elif cm is not None:
                        val = int(cm)
                    else:
                        continue
                    towers.append(round(math.log2(val), 2))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return towers or None


def _openfhe_key_words(o, cc, n):
    """Size of the serialized relinearization key in N-coefficient 64-bit words."""
    with scratch_path("mk.bin") as path:
        if not cc.SerializeEvalMultKey(path, o.BINARY):
            return None
        return os.path.getsize(path) / (n * 8)


def worker_openfhe(cfg):
    import numpy as np
    o, version = import_peer("openfhe", "openfhe numpy", lambda msg: make_record("openfhe", "all", cfg, error=msg))
    if o is None:
        return
    n = 1 << cfg["log_n"]
    slots = n // 2
    scaling = cfg["openfhe_scaling"]

    def build(security):
        p = o.CCParamsCKKSRNS()
        p.SetRingDim(n)
        p.SetMultiplicativeDepth(cfg["levels"])
        p.SetScalingModSize(cfg["log_scale"])
        p.SetFirstModSize(cfg["first_mod"])
        p.SetNumLargeDigits(cfg["dnum"])
        p.SetKeySwitchTechnique(o.HYBRID)
        p.SetScalingTechnique(getattr(o, scaling))
        p.SetSecurityLevel(security)
        p.SetBatchSize(slots)
        return o.GenCryptoContext(p)

    sec_note = "HEStd_128_classic"
    try:
        cc = build(o.HEStd_128_classic)
    except Exception as exc:  # noqa: BLE001
        msg = " ".join(str(exc).split())
        msg = msg.split("():", 1)[-1].strip() if "():" in msg else msg
        sec_note = "HEStd_NotSet (HEStd_128_classic refused: %s)" % msg[:300]
        cc = build(o.HEStd_NotSet)
    for feat in (o.PKE, o.KEYSWITCH, o.LEVELEDSHE):
        cc.Enable(feat)
    if cc.GetRingDimension() != n:
        sec_note += "; OpenFHE changed the ring dimension to %d" % cc.GetRingDimension()
        n = cc.GetRingDimension()

    kp = cc.KeyGen()
    cc.EvalMultKeyGen(kp.secretKey)
    rng = np.random.default_rng(cfg["seed"])
    x = rng.uniform(-1, 1, slots)
    y = rng.uniform(-1, 1, slots)
    enc_key = kp.publicKey if cfg["encrypt"] == "public" else kp.secretKey
    cx = cc.Encrypt(enc_key, cc.MakeCKKSPackedPlaintext(x.tolist()))
    cy = cc.Encrypt(enc_key, cc.MakeCKKSPackedPlaintext(y.tolist()))
    last_log_precision = [None]

    def dec(ct):
        pt = cc.Decrypt(ct, kp.secretKey)
        pt.SetLength(slots)
        try:
            last_log_precision[0] = pt.GetLogPrecision()
        except Exception:  # noqa: BLE001
            last_log_precision[0] = None
        return np.array(pt.GetRealPackedValue())

    fresh_bits = precision_bits(dec(cx), x)

    q_bits = _openfhe_moduli_bits(o, cc)
    log_q = math.log2(int(cc.GetElementParams().GetModulus()))
    key_words = _openfhe_key_words(o, cc, n)
    n_q = len(q_bits) if q_bits else cfg["levels"] + 1
    special = None
    if key_words:
        # hybrid relin key = dnum digits x 2 polynomials x (|Q| + |P|) words
        special = round(key_words / (2 * cfg["dnum"]) - n_q)
    if q_bits:
        counts = {}
        for b in q_bits:
            counts[b] = counts.get(b, 0) + 1
        q_desc = "Q = %d primes [%s] (logQ=%.0f)" % (
            len(q_bits), ", ".join("%dx%g" % (c, b) for b, c in sorted(counts.items(), reverse=True)),
            log_q)
    else:
        q_desc = "logQ=%.0f" % log_q
    params_note = (
        "ring dim %d; %s; HYBRID key switching, NumLargeDigits=%d, P = %s special primes (inferred from "
        "relin-key size %.0f words = dnum x 2 x (|Q|+|P|); OpenFHE sizes them at up to 60 bits); "
        "%s; security %s; OMP_NUM_THREADS=%s."
        % (n, q_desc, cfg["dnum"], special, key_words or float("nan"), scaling, sec_note,
           os.environ.get("OMP_NUM_THREADS")))
    base = dict(version=version, log_n=int(math.log2(n)), levels=n_q - 1, dnum=cfg["dnum"],
                threads=cfg["threads"])
    ops = cfg["ops"]

    if "mul" in ops:
        try:
            if scaling == "FIXEDMANUAL":
                fn = lambda: cc.Rescale(cc.EvalMult(cx, cy))  # noqa: E731
                what = "Rescale(EvalMult(ct, ct)) (EvalMult relinearizes with the eval-mult key)"
            else:
                fn = lambda: cc.EvalMult(cx, cy)  # noqa: E731
                what = ("EvalMult(ct, ct) with %s: relinearizes; the rescale is deferred to the next "
                        "operation and is NOT in the timing" % scaling)
            t, out = time_it(fn, cfg["runs"])
            prec = precision_bits(dec(out), x * y)
            what += ("; inputs %s-key encrypted, fresh-ciphertext precision %.1f bits; OpenFHE's own "
                     "estimate for the product (Plaintext.GetLogPrecision) %s bits; note OpenFHE's CKKS "
                     "Decrypt adds randomized decoding noise, so precision_bits is a lower bound"
                     % (cfg["encrypt"], fresh_bits,
                        "%.1f" % last_log_precision[0] if last_log_precision[0] is not None else "n/a"))
            emit(make_record("openfhe", "mul", cfg, **base, **timing_fields(t), precision_bits=prec,
                             notes=what + ". " + params_note))
        except Exception as exc:  # noqa: BLE001
            emit(make_record("openfhe", "mul", cfg, **base, error=repr(exc)))

    if "rotate" in ops or "rotate_many" in ops:
        idx = list(range(1, N_ROTATIONS + 1))
        try:
            cc.EvalRotateKeyGen(kp.secretKey, idx)
        except Exception as exc:  # noqa: BLE001
            emit(make_record("openfhe", "rotate", cfg, **base, error="EvalRotateKeyGen: %r" % exc))
            idx = None
        if idx and "rotate" in ops:
            try:
                t, out = time_it(lambda: cc.EvalRotate(cx, 1), cfg["runs"])
                prec, direction = rotation_precision(dec(out), x, 1)
                emit(make_record("openfhe", "rotate", cfg, **base, **timing_fields(t),
                                 precision_bits=prec,
                                 notes="EvalRotate(ct, 1); precision_bits vs np.roll (%s rotation). "
                                       % direction + params_note))
            except Exception as exc:  # noqa: BLE001
                emit(make_record("openfhe", "rotate", cfg, **base, error=repr(exc)))
        if idx and "rotate_many" in ops:
            try:
                m = cc.GetCyclotomicOrder()

                def many():
                    pre = cc.EvalFastRotationPrecompute(cx)
                    return [cc.EvalFastRotation(cx, k, m, pre) for k in idx]

                t, outs = time_it(many, cfg["runs"])
                precs = [rotation_precision(dec(ct), x, k)[0] for k, ct in zip(idx, outs)]
                emit(make_record("openfhe", "rotate_many", cfg, **base, **timing_fields(t),
                                 precision_bits=min(precs),
                                 notes="hoisted: EvalFastRotationPrecompute once + %d x "
                                       "EvalFastRotation(ct, k, 2N, precomp), k=1..%d, all timed; "
                                       "precision_bits = worst of the %d. "
                                       % (N_ROTATIONS, N_ROTATIONS, N_ROTATIONS) + params_note))
            except Exception as exc:  # noqa: BLE001
                emit(make_record("openfhe", "rotate_many", cfg, **base, error=repr(exc)))


# --------------------------------------------------------------------------
# Microsoft SEAL worker (TenSEAL's bundled bindings, runs under --openfhe-python)
# --------------------------------------------------------------------------

def _seal_version(parms):
    """SEAL's major.minor, read from the header SEAL writes in front of every serialized object
    (magic 0xA15E, header size, major, minor, ...); None when it cannot be read."""
    try:
        with scratch_path("parms.bin") as path:
            parms.save(path)
            with open(path, "rb") as fh:
                head = fh.read(5)
        if len(head) == 5 and head[:2] == b"\x5e\xa1":
            return "%d.%d" % (head[3], head[4])
    except Exception:  # noqa: BLE001
        pass
    return None


def worker_seal(cfg):
    import importlib
    import numpy as np
    tenseal, ts_version = import_peer("tenseal", "tenseal numpy",
                                      lambda msg: make_record("seal", "all", cfg, threads=1, error=msg))
    if tenseal is None:
        return
    s = importlib.import_module("tenseal.sealapi")
    n = 1 << cfg["log_n"]
    slots = n // 2
    bits = [cfg["first_mod"]] + [cfg["log_scale"]] * cfg["levels"] + [60]  # last: SEAL's one special prime
    parms = s.EncryptionParameters(s.SCHEME_TYPE.CKKS)
    parms.set_poly_modulus_degree(n)
    seal_version = _seal_version(parms)
    version = "%s (TenSEAL %s)" % (seal_version or "?", ts_version)
    ver_note = ("SEAL %s bundled with TenSEAL %s (SEAL version read from its serialization header)"
                % (seal_version, ts_version) if seal_version else
                "SEAL bundled with TenSEAL %s (SEAL version not readable)" % ts_version)
    thr_note = "SEAL is single-threaded (threads=1)"
    if cfg["threads"] != 1:
        thr_note += "; --threads %d does not apply to it" % cfg["threads"]
    base = dict(version=version, threads=1, dnum=cfg["levels"] + 1)

    def fail(op, msg):
        emit(make_record("seal", op, cfg, **base, error=msg, notes=ver_note + "; " + thr_note))

    max_bits = s.CoeffModulus.MaxBitCount(n, s.SEC_LEVEL_TYPE.TC128)
    try:
        parms.set_coeff_modulus(s.CoeffModulus.Create(n, bits))
    except Exception as exc:  # noqa: BLE001
        fail("all", "CoeffModulus.Create(%d, %s): %s" % (n, bits, exc))
        return
    # SEAL's default: 128-bit check (HomomorphicEncryption.org table) stays on; a refusal is an error record
    ctx = s.SEALContext(parms, True, s.SEC_LEVEL_TYPE.TC128)
    if not ctx.parameters_set():
        fail("all", "SEALContext refused the parameters: %s (%s); log2(QP) = %d bits, SEAL's 128-bit bound "
                    "for N=2^%d is %d bits" % (ctx.parameters_error_message(), ctx.parameters_error_name(),
                                               sum(bits), cfg["log_n"], max_bits))
        return
    q_bits = [m.bit_count() for m in ctx.first_context_data().parms().coeff_modulus()]
    levels = len(q_bits) - 1
    base.update(levels=levels, dnum=len(q_bits))
    scale = 2.0 ** cfg["log_scale"]

    keygen = s.KeyGenerator(ctx)
    sk = keygen.secret_key()
    if cfg["encrypt"] == "public":
        pk = s.PublicKey()
        keygen.create_public_key(pk)
        encryptor = s.Encryptor(ctx, pk)
        encrypt = encryptor.encrypt
    else:
        encryptor = s.Encryptor(ctx, sk)
        encrypt = encryptor.encrypt_symmetric
    decryptor = s.Decryptor(ctx, sk)
    encoder = s.CKKSEncoder(ctx)
    ev = s.Evaluator(ctx)

    def enc(v):
        pt, ct = s.Plaintext(), s.Ciphertext()
        encoder.encode(v.tolist(), scale, pt)
        encrypt(pt, ct)
        return ct

    def dec(ct):
        pt = s.Plaintext()
        decryptor.decrypt(ct, pt)
        return np.array(encoder.decode_double(pt))

    rng = np.random.default_rng(cfg["seed"])
    x = rng.uniform(-1, 1, slots)
    y = rng.uniform(-1, 1, slots)
    cx, cy = enc(x), enc(y)
    fresh_bits = precision_bits(dec(cx), x)
    counts = {}
    for b in q_bits:
        counts[b] = counts.get(b, 0) + 1
    params_note = (
        "poly_modulus_degree 2^%d; CoeffModulus.Create(N, %s): Q = %d primes [%s] + 1 special prime of %d bits, "
        "log2(QP) = %d (SEAL's 128-bit bound %d, sec_level TC128); key switching with one digit per Q prime "
        "(dnum = %d) and the one special prime; scale 2^%d; inputs %s-key encrypted at the top level, "
        "fresh-ciphertext precision %.1f bits; %s; %s."
        % (cfg["log_n"], "[%d] + [%d]*%d + [60]" % (cfg["first_mod"], cfg["log_scale"], cfg["levels"]),
           len(q_bits), ", ".join("%dx%d" % (c, b) for b, c in sorted(counts.items(), reverse=True)),
           bits[-1], sum(bits), max_bits, len(q_bits), cfg["log_scale"], cfg["encrypt"], fresh_bits,
           thr_note, ver_note))
    if cfg["dnum"] != len(q_bits):
        params_note += " --dnum %d does not apply: SEAL's digit count is fixed." % cfg["dnum"]
    ops = cfg["ops"]

    if "mul" in ops:
        try:
            relin = s.RelinKeys()
            keygen.create_relin_keys(relin)

            def mul():
                out = s.Ciphertext()
                ev.multiply(cx, cy, out)
                ev.relinearize_inplace(out, relin)
                ev.rescale_to_next_inplace(out)
                return out

            t, out = time_it(mul, cfg["runs"])
            prec = precision_bits(dec(out), x * y)
            emit(make_record("seal", "mul", cfg, **base, **timing_fields(t), precision_bits=prec,
                             notes="timed together, like `ember bench mul` (ct * ct: tensor, relinearize, "
                                   "rescale): multiply(ct, ct) + relinearize_inplace(relin_keys) + "
                                   "rescale_to_next_inplace (level %d -> %d primes). "
                                   % (cx.coeff_modulus_size(), out.coeff_modulus_size()) + params_note))
        except Exception as exc:  # noqa: BLE001
            fail("mul", repr(exc))

    if "rotate" in ops or "rotate_many" in ops:
        steps = list(range(1, (N_ROTATIONS if "rotate_many" in ops else 1) + 1))
        gk = s.GaloisKeys()
        try:
            # this binding's create_galois_keys(list) takes Galois elements, not steps: a left rotation by k
            # is the element 3^k mod 2N (SEAL's GaloisTool::get_elt_from_step)
            keygen.create_galois_keys([pow(3, k, 2 * n) for k in steps], gk)
        except Exception as exc:  # noqa: BLE001
            fail("rotate", "create_galois_keys: %r" % exc)
            steps = None
        if steps and "rotate" in ops:
            try:
                def rot():
                    out = s.Ciphertext()
                    ev.rotate_vector(cx, 1, gk, out)
                    return out

                t, out = time_it(rot, cfg["runs"])
                prec, direction = rotation_precision(dec(out), x, 1)
                emit(make_record("seal", "rotate", cfg, **base, **timing_fields(t), precision_bits=prec,
                                 notes="rotate_vector(ct, 1, galois_keys) (Galois keys for %s only); "
                                       "precision_bits vs np.roll (%s rotation). "
                                       % ("step 1" if len(steps) == 1 else "steps 1..%d" % len(steps),
                                          direction) + params_note))
            except Exception as exc:  # noqa: BLE001
                fail("rotate", repr(exc))
        if steps and "rotate_many" in ops:
            try:
                def many():
                    outs = []
                    for k in steps:
                        out = s.Ciphertext()
                        ev.rotate_vector(cx, k, gk, out)
                        outs.append(out)
                    return outs

                t, outs = time_it(many, cfg["runs"])
                precs = [rotation_precision(dec(o), x, k)[0] for k, o in zip(steps, outs)]
                emit(make_record("seal", "rotate_many", cfg, **base, **timing_fields(t),
                                 precision_bits=min(precs),
                                 notes="NOT hoisted: SEAL has no hoisted-rotation API, so %d separate "
                                       "rotate_vector(ct, k, galois_keys), k=1..%d (%d full key switches; "
                                       "Ember and OpenFHE hoist the decomposition); precision_bits = worst "
                                       "of the %d. " % ((len(steps),) * 4) + params_note))
            except Exception as exc:  # noqa: BLE001
                fail("rotate_many", repr(exc))


# --------------------------------------------------------------------------
# Ember (through its CLI)
# --------------------------------------------------------------------------

def _ember_cli_command():
    exe = os.path.join(os.path.dirname(sys.executable), "ember")
    if os.path.exists(exe):
        return [exe]
    exe = shutil.which("ember")
    if exe:
        return [exe]
    return [sys.executable, "-c",
            "import sys; from ember.cli import main; sys.argv[0] = 'ember'; sys.exit(main())"]


def worker_ember(cfg):
    import importlib.metadata as md
    try:
        import ember  # noqa: F401
    except ImportError as exc:
        emit(make_record("ember", "all", cfg, notes="skipped: Ember is not importable in %s"
                         % sys.executable,
                         error="`import ember` failed (%s); build/install Ember "
                               "(e.g. pip install /work/main) to include it" % exc))
        return
    version = getattr(ember, "__version__", None)
    if version is None:
        try:
            version = md.version("ember-fhe")
        except Exception:  # noqa: BLE001
            version = None
    base = dict(version=version)
    cli = _ember_cli_command()
    for op in cfg["ops"]:
        argv = cli + ["bench", op, "--log-n", str(cfg["log_n"]), "--levels", str(cfg["levels"]),
                      "--dnum", str(cfg["dnum"]), "--threads", str(cfg["threads"]),
                      "--runs", str(cfg["runs"])]
        # only pass the scale flags when they differ from Ember's defaults (50 / 60), so that a
        # CLI without them still works at the default parameters
        if cfg["log_scale"] != 50:
            argv += ["--log-scale", str(cfg["log_scale"])]
        if cfg["first_mod"] != 60:
            argv += ["--first-mod-bits", str(cfg["first_mod"])]
        if cfg.get("special_bits"):
            argv += ["--special-mod-bits", str(cfg["special_bits"])]
        if cfg.get("ks_margin") is not None:
            argv += ["--ks-margin-bits", str(cfg["ks_margin"])]
        proc, shown, insecure_note = None, None, ""
        if cfg.get("insecure"):
            argv += ["--insecure"]
            insecure_note = " (--insecure asked for by compare_peers.py --insecure)"
        for attempt in (0, 1):
            shown = "ember " + " ".join(argv[len(cli):])
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=cfg["timeout"])
            except subprocess.TimeoutExpired:
                proc = None
                emit(make_record("ember", op, cfg, **base, error="`%s` timed out" % shown))
                break
            except OSError as exc:
                proc = None
                emit(make_record("ember", op, cfg, **base, error="`%s`: %s" % (shown, exc)))
                break
            refused = proc.returncode != 0 and "security bound" in (proc.stderr + proc.stdout)
            if attempt == 0 and refused:
                # like OpenFHE's HEStd_NotSet fallback (e.g. --quick's small ring)
                msg = (proc.stderr or proc.stdout).strip().splitlines()[-1]
                insecure_note = " (retried with --insecure after: %s)" % msg[:200]
                argv = argv + ["--insecure"]
                continue
            break
        if proc is None:
            continue
        parsed = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    parsed.append(json.loads(line))
                except ValueError:
                    pass
        parsed = [r for r in parsed if "median_ms" in r]
        if proc.returncode != 0 or not parsed:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            emit(make_record("ember", op, cfg, **base,
                             error="`%s` exited %d with no median_ms line: %s"
                                   % (shown, proc.returncode, " | ".join(tail))))
            continue
        for r in parsed:
            rec = make_record("ember", r.get("op", op), cfg, **base)
            for k in ("log_n", "levels", "dnum", "threads", "median_ms", "min_ms", "max_ms",
                      "precision_bits", "version"):
                if r.get(k) is not None:
                    rec[k] = round(r[k], 3) if k.endswith("_ms") and isinstance(r[k], float) else r[k]
            extra = {k: v for k, v in r.items() if k not in rec}
            rec["notes"] = ("`%s`" % shown + insecure_note
                            + ("; ember also reported %s" % json.dumps(extra) if extra else ""))
            emit(rec)


WORKERS = {"desilo": worker_desilo, "openfhe": worker_openfhe, "seal": worker_seal, "ember": worker_ember}


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def run_peer(peer, cfg, args):
    python = args.openfhe_python if peer in ("openfhe", "seal") else sys.executable
    env = dict(os.environ)
    t = str(cfg["threads"])
    env.update(OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if peer in ("openfhe", "seal") and not os.path.exists(python):
        return [make_record(peer, "all", cfg, error="%s interpreter %s not found (use --openfhe-python)"
                            % ("OpenFHE" if peer == "openfhe" else "SEAL (TenSEAL)", python))]
    argv = [python, os.path.abspath(__file__), "--worker", peer, "--worker-config", json.dumps(cfg)]
    log("running %s under %s ..." % (peer, python))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=args.timeout)
        out, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, rc = "timed out after %ss" % args.timeout, None
    records = [json.loads(line[len(RESULT_PREFIX):]) for line in out.splitlines()
               if line.startswith(RESULT_PREFIX)]
    log("%s finished in %.1fs (exit %s)" % (peer, time.perf_counter() - t0, rc))
    if rc != 0:
        tail = " | ".join(err.strip().splitlines()[-4:])
        missing = [op for op in cfg["ops"] if not any(r["op"] == op for r in records)]
        if not records or missing:
            records.append(make_record(peer, ",".join(missing) or "all", cfg,
                                       error="worker exited %s: %s" % (rc, tail)))
    elif err.strip() and args.verbose:
        sys.stderr.write(err)
    return records


def fmt(v, spec="{:.1f}"):
    """A table cell: '-' for a missing value."""
    return "-" if v is None else spec.format(v)


def show_table(title, headers, rows, problems, left=("library",), console_file=None, drop_when_narrow=()):
    """A rich table (columns in `left` left-aligned), then the problem lines; on a terminal too narrow for
    it, the columns in drop_when_narrow are left out. Without rich, nothing (the JSON lines are there)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        log("rich is not installed; no summary table")
        return
    console = Console(file=console_file)
    if not console.is_terminal:
        console = Console(file=console_file, width=160)
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    if drop_when_narrow and sum(widths) + 3 * len(widths) + 4 > console.width:
        keep = [i for i, h in enumerate(headers) if h not in drop_when_narrow]
        headers = [headers[i] for i in keep]
        widths = [widths[i] for i in keep]
        rows = [[row[i] for i in keep] for row in rows]
    table = Table(title=title)
    for i, col in enumerate(headers):
        table.add_column(col, justify="left" if col in left else "right", no_wrap=True, min_width=widths[i])
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for line in problems:
        console.print(line, markup=False, highlight=False)


def print_table(records, console_file=None):
    f = fmt
    headers = ["library", "version", "op", "N", "levels", "dnum", "thr", "median", "min", "max",
               "bits", "status"]
    rows, problems = [], []
    for r in records:
        status = "ok"
        if r.get("error"):
            status = "skipped" if (r.get("notes") or "").startswith("skipped") else "error"
            problems.append("%s %s %s: %s" % (r.get("library"), r.get("op"), status, r["error"]))
        rows.append([r.get("library", "?"), str(r.get("version") or "-"), r.get("op", "?"),
                     "2^%s" % r.get("log_n"), f(r.get("levels"), "{}"), f(r.get("dnum"), "{}"),
                     f(r.get("threads"), "{}"), f(r.get("median_ms")), f(r.get("min_ms")),
                     f(r.get("max_ms")), f(r.get("precision_bits")), status])
    show_table("CKKS ops, ms (lower is better); bits = HE precision", headers, rows, problems,
               left=("library", "version", "op", "status"), console_file=console_file,
               drop_when_narrow=("version", "thr"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=None, help="timed runs after one warm-up (default 10; 3 with --quick)")
    ap.add_argument("--threads", type=int, default=2, help="threads per library (default 2)")
    ap.add_argument("--peers", default=",".join(ALL_PEERS), help="comma list of: %s (default: all)" % ",".join(ALL_PEERS))
    ap.add_argument("--ops", default=",".join(OPS), help="comma list of: %s (default: all)" % ",".join(OPS))
    ap.add_argument("--log-n", type=int, default=None, help="log2 ring dimension (default 16; 14 with --quick)")
    ap.add_argument("--levels", type=int, default=None,
                    help="multiplicative levels = ciphertext primes - 1 (default 24; 6 with --quick)")
    ap.add_argument("--dnum", type=int, default=3, help="hybrid key-switching digits (default 3)")
    ap.add_argument("--log-scale", type=int, default=50, help="scaling-prime bits (OpenFHE; default 50)")
    ap.add_argument("--first-mod", type=int, default=60, help="first-prime bits (OpenFHE; default 60)")
    ap.add_argument("--openfhe-scaling", default="FIXEDMANUAL", choices=("FIXEDMANUAL", "FLEXIBLEAUTO"),
                    help="OpenFHE scaling technique (default FIXEDMANUAL: the rescale is explicit and timed)")
    ap.add_argument("--encrypt", default="secret", choices=("secret", "public"),
                    help="encrypt the peers' inputs with the secret key (default) or the public key")
    ap.add_argument("--quick", action="store_true", help="smoke run: log_n 14, 6 levels, 3 runs")
    ap.add_argument("--seed", type=int, default=1, help="numpy seed for the inputs (default 1)")
    ap.add_argument("--openfhe-python", default=os.environ.get("OPENFHE_PYTHON", DEFAULT_OPENFHE_PYTHON),
                    help="interpreter that has the openfhe wheel and tenseal (runs the OpenFHE and SEAL workers), "
                         "CPython 3.10 (default $OPENFHE_PYTHON or %s)"
                    % DEFAULT_OPENFHE_PYTHON)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per peer (default 3600)")
    ap.add_argument("--insecure", action="store_true",
                    help="pass --insecure to `ember bench` up front (Ember only; SEAL and OpenFHE keep their "
                         "checks), e.g. at SEAL's configuration: dnum 16 with N=2^15 / 15 levels / log scale 50 "
                         "gives Ember 2 special primes, log2(QP) = 930 > the 128-bit bound of 881 bits")
    ap.add_argument("--special-mod-bits", type=int, default=0,
                    help="Ember's special prime bits (`ember bench --special-mod-bits`; default 0: Ember's 60)")
    ap.add_argument("--ks-margin-bits", type=int, default=None,
                    help="Ember's margin of log2(P) over the largest digit (`ember bench --ks-margin-bits`; default: "
                         "Ember's 16). --special-mod-bits 61 --ks-margin-bits 0 at SEAL's configuration gives Ember "
                         "SEAL's modulus shape, one special prime (log2(QP) = 871, within the 128-bit bound)")
    add_output_args(ap, WORKERS)
    args = ap.parse_args(argv)
    if args.runs is None:
        args.runs = 3 if args.quick else 10
    if args.log_n is None:
        args.log_n = 14 if args.quick else 16
    if args.levels is None:
        args.levels = 6 if args.quick else 24
    return args


def add_output_args(ap, workers):
    """The options both scripts end with: --output, --table/--no-table, --verbose, and the hidden --worker NAME
    and --worker-config JSON a subprocess is started with."""
    ap.add_argument("--output", help="also append the JSON lines to this file")
    ap.add_argument("--table", dest="table", action="store_true", default=None,
                    help="print the rich table even when stdout is not a terminal")
    ap.add_argument("--no-table", dest="table", action="store_false")
    ap.add_argument("--verbose", action="store_true", help="forward the workers' stderr")
    ap.add_argument("--worker", choices=sorted(workers), help=argparse.SUPPRESS)
    ap.add_argument("--worker-config", help=argparse.SUPPRESS)


def comma_list(text):
    """'a, b,,c' -> ['a', 'b', 'c']."""
    return [v.strip() for v in text.split(",") if v.strip()]


def write_records(recs, fields, out_fh=None):
    """One JSON line per record on stdout (and appended to out_fh): `fields` first, in order, then the rest."""
    for r in recs:
        line = json.dumps({**{k: r.get(k) for k in fields}, **{k: v for k, v in r.items() if k not in fields}})
        print(line, flush=True)
        if out_fh:
            out_fh.write(line + "\n")
            out_fh.flush()


def run_peers(peers, run_one, fields, args, print_table):
    """Parent side of main(): the records of run_one(peer) for each peer in turn, written as JSON lines as
    they come (and appended to --output), then the table when stdout is a terminal or with --table."""
    records = []
    out_fh = open(args.output, "a") if args.output else None
    for peer in peers:
        recs = run_one(peer)
        write_records(recs, fields, out_fh)
        records.extend(recs)
    if out_fh:
        out_fh.close()
    show = sys.stdout.isatty() if args.table is None else args.table
    if show:
        print_table(records)
    return records


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        cfg = json.loads(args.worker_config)
        run_worker_main(WORKERS, args.worker, cfg, lambda msg: make_record(args.worker, "all", cfg, error=msg))
        return 0

    peers = comma_list(args.peers)
    ops = comma_list(args.ops)
    cfg = dict(log_n=args.log_n, levels=args.levels, dnum=args.dnum, threads=args.threads,
               runs=args.runs, log_scale=args.log_scale, first_mod=args.first_mod, seed=args.seed,
               ops=ops, openfhe_scaling=args.openfhe_scaling, timeout=args.timeout,
               encrypt=args.encrypt, insecure=args.insecure, special_bits=args.special_mod_bits,
               ks_margin=args.ks_margin_bits)

    def run_one(peer):
        if peer not in WORKERS:
            return [make_record(peer, "all", cfg, error="unknown peer (choose from %s)" % ",".join(ALL_PEERS))]
        if not (set(ops) & set(OPS)):
            return [make_record(peer, "all", cfg, error="no known op in --ops")]
        try:
            return run_peer(peer, cfg, args)
        except Exception as exc:  # noqa: BLE001
            return [make_record(peer, "all", cfg, error="%s: %s" % (type(exc).__name__, exc))]

    run_peers(peers, run_one, FIELDS, args, print_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
