"""bench/gpu/calibrate.py's checker (the GPU run itself needs a GPU: this tests that a wrong device result is
caught, with records built from the Python reference, and that the recorded H200 run passes it)."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def calib():
    spec = importlib.util.spec_from_file_location("calibrate", ROOT / "bench/gpu/calibrate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _records(calib, q=(1 << 60) - 93, iters=64, lanes=256, step=16):
    w = calib.mix(12345) % q
    recs = []
    for name in ("mul_shoup", "mul_barrett", "add_mod"):
        recs.append({"kernel": name, "q": str(q), "w": str(w), "iters": iters})
        vals = []
        for lane in range(0, lanes, step):
            x = calib.mix(lane) % q
            if name == "mul_shoup":
                v = x * pow(w, iters, q) % q
            elif name == "mul_barrett":
                v = pow(x, 1 << iters, q)
            else:
                v = (x + iters * (calib.mix(~lane & calib.MASK) % q)) % q
            vals.append(str(v))
        recs.append({"samples": name, "step": step, "values": vals})
    return recs


def test_checker_accepts_the_reference_and_catches_a_wrong_word(calib):
    recs = _records(calib)
    assert calib.check(recs) == 3 * 16
    for k in (1, 3, 5):  # one wrong value in each kernel's samples
        bad = json.loads(json.dumps(recs))
        bad[k]["values"][7] = str(int(bad[k]["values"][7]) ^ 1)
        with pytest.raises(AssertionError, match="lane 112"):
            calib.check(bad)


def test_the_recorded_gpu_run_checks(calib):
    run = json.loads((ROOT / "bench/gpu/results/h200-2026-11-27.json").read_text())
    assert calib.check(run["records"]) == 1088  # 576 rate-kernel words and 2 x 256 NTT words
    bad = json.loads(json.dumps(run["records"]))
    ew = next(r for r in bad if r.get("samples") == "ew_mul")
    ew["values"][3] = str(int(ew["values"][3]) + 1)
    with pytest.raises(AssertionError, match="ew_mul word"):
        calib.check(bad)
    bad = json.loads(json.dumps(run["records"]))
    ntt = next(r for r in bad if r.get("samples") == "ntt_last_limb")
    ntt["values"][200] = str((int(ntt["values"][200]) + 1) % (1 << 60))
    with pytest.raises(AssertionError, match="ntt_last_limb word"):
        calib.check(bad)


def test_ntt_reference_is_the_negacyclic_transform(calib):
    """The checker's NTT against its definition: output i is the input polynomial at psi^(2 bitrev(i) + 1)."""
    import random
    q, psi16 = 1152921504606584833, 987813353222176621   # psi16: a primitive 2^17-th root of unity mod q
    n = 16
    psi = pow(psi16, (1 << 16) // n, q)                     # a primitive 2n-th root
    rng = random.Random(5)
    a = [rng.randrange(q) for _ in range(n)]
    got = calib.ntt_reference(a, q, psi)
    for i in range(n):
        x = pow(psi, 2 * int(format(i, "04b")[::-1], 2) + 1, q)
        assert got[i] == sum(c * pow(x, k, q) for k, c in enumerate(a)) % q
