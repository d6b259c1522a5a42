"""Calibrates the simulator's modelled GPU profile (ember.sim.devices.BUILTIN["h100"]) against a real GPU.

    python3 bench/gpu/calibrate.py [--out DIR]        # on a machine with an NVIDIA GPU and nvcc

Compiles bench/gpu/calibrate.cu (nvcc -O3, sm_90 and the device's own architecture), runs it, checks every
sampled result against Python's integers (Shoup and Barrett products, modular sums, the element-wise product of a
polynomial pair), then prints JSON lines: the measured rates beside the profile's assumptions (modular
multiplications and additions per second, DRAM bandwidth), and the element-wise product Backend::mul and a
forward NTT at N = 2^16 (24 and 384 limbs) measured against the profile's roofline prediction. The profile's module is loaded
from the source tree by path, so neither Ember's build nor its C++ extension is needed there. Exits non-zero
when a sample is wrong. The profile itself is not changed by this script: the figures are facts for it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MASK = (1 << 64) - 1


def mix(z: int) -> int:
    """splitmix64, as calibrate.cu's mix()."""
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def h100_profile():
    path = HERE.parent.parent / "python/ember/sim/devices.py"
    spec = importlib.util.spec_from_file_location("ember_sim_devices", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod.BUILTIN["h100"]


def ntt_reference(a: list, q: int, psi: int) -> list:
    """The forward negacyclic NTT as calibrate.cu computes it (Cooley-Tukey, twiddles psi^bitrev(i), outputs in
    bit-reversed order), with Python's integers."""
    n = len(a)
    lg = n.bit_length() - 1
    pw = [1] * n
    for e in range(1, n):
        pw[e] = pw[e - 1] * psi % q
    tw = [pw[int(format(i, f"0{lg}b")[::-1], 2)] for i in range(n)]
    a = list(a)
    t, m = n, 1
    while m < n:
        t //= 2
        for i in range(m):
            s = tw[m + i]
            for j in range(2 * i * t, 2 * i * t + t):
                u, v = a[j], a[j + t] * s % q
                a[j], a[j + t] = (u + v) % q, (u - v) % q
        m *= 2
    return a


def check(records: list[dict]) -> int:
    """Recomputes every sample; returns the number checked (raises on the first wrong one)."""
    kern = {r["kernel"]: r for r in records if "kernel" in r and r["kernel"] != "ew_mul"}
    checked = 0
    for r in records:
        if "samples" not in r:
            continue
        name, step, vals = r["samples"], r["step"], [int(v) for v in r["values"]]
        if name.startswith("ntt_"):
            k = next(x for x in records if x.get("kernel") == "ntt_forward" and x["limbs"] == 24)
            q, psi, n = int(k["q"]), int(k["psi"]), 1 << k["log_n"]
            limb = 0 if name == "ntt_first_limb" else k["limbs"] - 1
            want = ntt_reference([mix((limb * n + i) ^ 3) % q for i in range(n)], q, psi)
            for j, got in enumerate(vals):
                if got != want[j * step]:
                    raise AssertionError(f"{name} word {j * step}: {got} != {want[j * step]}")
                checked += 1
            continue
        if name == "ew_mul":
            q0, n_ring = (1 << 60) - 93, 1 << 16
            for k, got in enumerate(vals):
                i = k * step
                qi = q0 - 2 * ((i // n_ring) % 24)
                a, b = mix(i ^ 1) % qi, mix(i ^ 2) % qi
                if got != a * b % qi:
                    raise AssertionError(f"ew_mul word {i}: {got} != {a * b % qi}")
                checked += 1
            continue
        k = kern[name]
        q, iters = int(k["q"]), k["iters"]
        for j, got in enumerate(vals):
            lane = j * step
            x = mix(lane) % q
            if name == "mul_shoup":
                want = x * pow(int(k["w"]), iters, q) % q
            elif name == "mul_barrett":
                want = pow(x, 1 << iters, q)
            else:
                want = (x + iters * (mix(~lane & MASK) % q)) % q
            if got != want:
                raise AssertionError(f"{name} lane {lane}: {got} != {want}")
            checked += 1
    return checked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="directory for calibrate.json (the raw records and the comparison)")
    args = ap.parse_args(argv)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "calibrate"
        subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=native", "-o", str(exe), str(HERE / "calibrate.cu")],
                       check=True)
        run = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    records = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    checked = check(records)
    prof = h100_profile()
    dev = records[0]
    rate = {r["kernel"]: r for r in records if "kernel" in r}
    out = [dict(dev, samples_checked=checked, note="measured on this GPU; the profile is the simulator's h100")]
    out.append({"what": "modular multiplications per second", "profile": prof.mul_per_s,
                "measured_shoup": rate["mul_shoup"]["ops_per_s"],
                "measured_barrett": rate["mul_barrett"]["ops_per_s"],
                "barrett_over_profile": rate["mul_barrett"]["ops_per_s"] / prof.mul_per_s})
    out.append({"what": "modular additions per second", "profile": prof.add_per_s,
                "measured": rate["add_mod"]["ops_per_s"],
                "measured_over_profile": rate["add_mod"]["ops_per_s"] / prof.add_per_s})
    out.append({"what": "DRAM bytes per second (copy, read + written)", "profile": prof.bandwidth,
                "measured": rate["copy"]["bytes_per_s"],
                "measured_over_profile": rate["copy"]["bytes_per_s"] / prof.bandwidth})
    for r in (r for r in records if r.get("kernel") == "ew_mul"):
        words = r["limbs"] << r["log_n"]
        model_s = max(r["bytes"] / prof.bandwidth, words / prof.mul_per_s)  # the aggregate roofline of Backend::mul
        out.append({"what": f"Backend::mul, N = 2^{r['log_n']}, {r['limbs']} limbs", "model_ms": model_s * 1e3,
                    "measured_ms": r["ms"], "measured_over_model": r["ms"] / (model_s * 1e3),
                    "measured_bytes_per_s": r["bytes_per_s"]})
    for r in (r for r in records if r.get("kernel") == "ntt_forward"):
        n, lg = 1 << r["log_n"], r["log_n"]
        muls, adds, moved = r["limbs"] * n // 2 * lg, r["limbs"] * n * lg, r["limbs"] * 2 * n * 8
        compute = muls / prof.mul_per_s + adds / prof.add_per_s
        model_s = max(compute, moved / prof.bandwidth)  # the aggregate roofline (sim.timing.aggregate)
        out.append({"what": f"forward NTT, N = 2^{lg}, {r['limbs']} limbs", "model_ms": model_s * 1e3,
                    "model_compute_ms": compute * 1e3, "model_memory_ms": moved / prof.bandwidth * 1e3,
                    "measured_ms": r["ms"], "measured_over_model": r["ms"] / (model_s * 1e3),
                    "measured_us_per_limb": r["ms"] * 1e3 / r["limbs"]})
    for o in out:
        print(json.dumps(o))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "calibrate.json").write_text(json.dumps({"records": records, "comparison": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
