"""Predicted (ember accounting + calibrated CPU roofline) against measured (the library) time on this CPU.

    python bench/sim/predict_vs_measure.py --profile bench/sim/cpu_calibration.json --threads 2

One JSON object per (parameter set, operation): predicted_ms, measured_ms (median) and measured_min_ms of
`runs` runs, kernels_best_ms (the sum over kernels of each kernel's fastest traced run), and their ratios.
The machine may be shared: the minimum is the least disturbed run, kernels_best the least disturbed kernels.
Bootstrapping is predicted only: the library has no bootstrapping yet.

    python bench/sim/predict_vs_measure.py --lintrans --runs 5

instead times the library's LinearTransform on the middle CoeffToSlot factor (fft_iters 3, N/2 slots), both
paths (hoisted apply() and the plain one), against the ember accounting's exact model of it.
"""
import argparse
import json

from ember.sim import SimParams, simulate
from ember.sim.calibrate import measure
from ember.sim.devices import load

SETS = [(14, 9, 2), (15, 16, 3), (16, 25, 3)]
OPS = ["Mult", "Rotate", "HoistedRotate"]


def compared(r, m) -> dict:
    """The fields of one row: simulate()'s prediction r against measure()'s m, and their ratios."""
    pred = r.extra["time_ms"]
    return dict(predicted_ms=round(pred, 2), bound=r.extra["bound"], measured_ms=m["measured_ms"],
                measured_min_ms=m["measured_min_ms"], kernels_best_ms=m["kernels_best_ms"],
                pred_over_median=round(pred / m["measured_ms"], 3), pred_over_min=round(pred / m["measured_min_ms"], 3),
                pred_over_kernels_best=round(pred / m["kernels_best_ms"], 3))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="bench/sim/cpu_calibration.json")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--lintrans", action="store_true", help="LinearTransform rows (both paths) only")
    a = ap.parse_args()
    dev = load("cpu", a.profile)
    if a.lintrans:
        from ember.sim.kernels import lt_spec

        for log_n, limbs, dnum in SETS:
            p = SimParams(log_n=log_n, limbs=limbs, dnum=dnum, prime_bits=50, fft_iters=3)
            lt = lt_spec(p, indices="cts:1")
            for tech, hoisted in (("merge,hoist", True), ("merge", False)):
                r = simulate("LinearTransform", p, "ember", tech=tech, device=dev, indices="cts:1")
                m = measure("LinearTransform", p, threads=a.threads, runs=a.runs, lt=lt, hoisted=hoisted)
                print(json.dumps(dict(op="LinearTransform", path=r.extra["lt_path"], diagonals=lt.diagonals,
                                      n1=lt.n1, log_n=log_n, limbs=limbs, dnum=dnum, threads=a.threads,
                                      **compared(r, m))), flush=True)
        raise SystemExit(0)
    for log_n, limbs, dnum in SETS:
        p = SimParams(log_n=log_n, limbs=limbs, dnum=dnum, prime_bits=50)
        for op in OPS:
            r = simulate(op, p, "ember", device=dev, rotations=8)
            m = measure(op, p, threads=a.threads, runs=a.runs, rotations=8)
            print(json.dumps(dict(op=op, log_n=log_n, limbs=limbs, dnum=dnum, threads=a.threads, **compared(r, m))),
                  flush=True)
        p = SimParams(log_n=log_n, limbs=limbs, dnum=dnum, prime_bits=50, fft_iters=3, poly_degree=31,
                      double_angle=2)
        try:
            r = simulate("Bootstrap", p, "ember", device=dev)
            print(json.dumps(dict(op="Bootstrap", log_n=log_n, limbs=limbs, dnum=dnum, threads=a.threads,
                                  predicted_ms=round(r.extra["time_ms"], 2), bound=r.extra["bound"],
                                  measured_ms=None, note="no bootstrapping in the library yet")), flush=True)
        except ValueError as e:
            print(json.dumps(dict(op="Bootstrap", log_n=log_n, limbs=limbs, error=str(e))), flush=True)
