"""Calibrates the simulator's modelled GPU profile (ember.sim.devices.BUILTIN["h100"]) against a real GPU.

    python3 bench/gpu/calibrate.py [--out DIR]        # on a machine with an NVIDIA GPU and nvcc

Compiles bench/gpu/calibrate.cu (nvcc -O3, sm_90 and the device's own architecture), runs it, checks every
sampled result against Python's integers (Shoup and Barrett products, modular sums, the element-wise product of a
polynomial pair), then prints JSON lines: the measured rates beside the profile's assumptions (modular
multiplications and additions per second, DRAM bandwidth) and the element-wise product Backend::mul at
N = 2^16 with 24 limbs, measured against the profile's roofline prediction. The profile's module is loaded
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


def check(records: list[dict]) -> int:
    """Recomputes every sample; returns the number checked (raises on the first wrong one)."""
    kern = {r["kernel"]: r for r in records if "kernel" in r and r["kernel"] != "ew_mul"}
    checked = 0
    for r in records:
        if "samples" not in r:
            continue
        name, step, vals = r["samples"], r["step"], [int(v) for v in r["values"]]
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
    for o in out:
        print(json.dumps(o))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "calibrate.json").write_text(json.dumps({"records": records, "comparison": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
