import json
import os
import subprocess
import sys

import pytest

FIELDS = {"op", "log_n", "levels", "dnum", "threads", "backend", "runs", "median_ms", "min_ms", "max_ms", "precision_bits"}


@pytest.mark.parametrize("op", ["ntt", "mul", "rotate", "rotate_many", "rotate_sum", "inner_sum", "encrypt", "decrypt", "add"])
def test_bench_prints_json(op):
    cmd = [sys.executable, "-m", "ember", "bench", op, "--log-n", "12", "--levels", "3", "--dnum", "2", "--runs", "2",
           "--log-scale", "30", "--first-mod-bits", "40", "--insecure", "--threads", "1", "--hoisted", "3", "--count", "32", "--radix", "4"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()
    assert len(out) == 1
    rec = json.loads(out[0])
    assert FIELDS <= rec.keys()
    assert rec["op"] == op and rec["median_ms"] > 0 and rec["min_ms"] <= rec["median_ms"] <= rec["max_ms"]
    if op not in ("ntt",):
        assert rec["precision_bits"] > 15


@pytest.mark.parametrize("flags", [[], ["--no-hoisted-moddown", "--no-merged-moddown", "--no-key-compression", "--no-limb-fusion"]])
def test_bench_boot_prints_json(flags):
    cmd = [sys.executable, "-m", "ember", "bench", "boot", "--log-n", "12", "--levels", "2", "--slots", "16", "--runs", "1",
           "--insecure", *flags]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()
    rec = json.loads(out[-1])
    assert FIELDS | {"slots", "levels_after", "precision_bits", "key_bytes", "throughput"} <= rec.keys()
    assert rec["op"] == "boot" and rec["slots"] == 16 and rec["levels_after"] == 2 and rec["precision_bits"] > 20
    assert rec["key_bytes_compressed"] == (rec["key_bytes"] if flags else rec["key_bytes_compressed"])
    assert rec["key_bytes_compressed"] < rec["key_bytes"] or flags
    assert rec["options"]["hoisted_moddown"] == (not flags) and rec["options"]["merged_moddown"] == (not flags)
    assert rec["options"]["limb_fusion"] == (not flags)


def test_bench_refuses_insecure():
    cmd = [sys.executable, "-m", "ember", "bench", "mul", "--log-n", "12", "--levels", "10"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2 and "128-bit" in r.stderr


@pytest.mark.parametrize("log_n", [13, 14, 15, 16])
@pytest.mark.parametrize("log_scale", [40, 50])
def test_max_secure_levels_is_the_bound(log_n, log_scale):
    """CkksParams.max_secure_levels (what the N-dependent defaults follow) against the constructor's own
    128-bit check: L levels are accepted without insecure, L + 1 are refused naming the bound (none at all: 0)."""
    import ember
    most = ember.CkksParams.max_secure_levels(log_n, log_scale)
    if most:
        ember.CkksParams(log_n=log_n, levels=most, log_scale=log_scale)
    for levels in ([most + 1] if most else [2, 3, 4, 5]):     # (levels=1 has fewer primes than digits)
        with pytest.raises(ValueError, match="128-bit"):
            ember.CkksParams(log_n=log_n, levels=levels, log_scale=log_scale)
    assert (most > 0) == (log_n >= 14)


def test_bench_levels_follow_the_ring():
    """Issue 26, defect 5: `ember bench mul --log-n 14` failed (its default 24 levels exceed the 128-bit bound at
    N = 2^14); the default now follows N: the most levels within the bound (4 at a 50-bit scale)."""
    import ember
    cmd = [sys.executable, "-m", "ember", "bench", "mul", "--log-n", "14", "--runs", "1", "--threads", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert rec["levels"] == ember.CkksParams.max_secure_levels(14, 50) == 4
    assert rec["log_qp"] <= ember.max_log_qp_128(14) and rec["precision_bits"] > 20


def test_bench_refuses_heaan_mul_options_for_other_ops(capsys):
    """log_q, log_p and breakdown are heaan-mul's: ember.bench.run refuses a value other than the default for the
    ops it times, naming the parameter (before, it ignored them), and so does `ember bench OP` with the flag."""
    from ember import bench
    from ember.cli import main
    for kw in (dict(log_q=600), dict(log_p=40), dict(breakdown=True)):
        (name, value), = kw.items()
        with pytest.raises(ValueError, match=f"{name}={value} applies to heaan-mul only, not to mul"):
            bench.run("mul", log_n=12, levels=3, insecure=True, **kw)
    assert main(["bench", "ntt", "--log-n", "12", "--runs", "1", "--breakdown"]) == 2
    assert "breakdown=True applies to heaan-mul only, not to ntt" in capsys.readouterr().err


def test_bench_dist_at_log_n_14(capsys):
    """Issue 26, defect 5: `ember bench dist --log-n 14` failed the same way; now batch and lr run at the most
    levels the bound allows there (5 at the 40-bit scale used below N = 2^16), and every output is within the
    workload's precision of numpy."""
    import ember
    from ember.cli import main
    for workload in ("batch", "lr"):
        assert main(["bench", "dist", "--log-n", "14", "--workload", workload, "--workers", "1", "--tasks", "2",
                     "--runs", "1"]) == 0
        rec = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert rec["complete"] and rec["params"]["levels"] == 5 == ember.CkksParams.max_secure_levels(14, 40)
        assert rec["params"]["log_qp"] <= ember.max_log_qp_128(14)


def test_profile_defaults_are_secure(tmp_path):
    """`ember profile` with its defaults was refused (N = 2^13 with 9 levels is above the bound); its ring is now
    2^14 and its levels the most the bound allows there."""
    out = tmp_path / "cpu.json"
    cmd = [sys.executable, "-m", "ember", "profile", "--threads", "1", "--runs", "1", "--every", "5", "-o", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DEVICE"}  # the CPU's table ("cpu-1t")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())
    dev = table["devices"]["cpu-1t"]
    assert dev["params"]["log_n"] == 14 and dev["params"]["levels"] == 5


def test_info_has_a_cuda_section():
    """Issue 29: `ember info` says whether this build has the CUDA backend and which GPUs it finds."""
    from ember import _ember
    cuda = _ember.cuda_info()
    assert set(cuda) == {"built", "devices", "description"} and cuda["devices"] >= 0
    out = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, check=True).stdout
    info = json.loads(out)["cuda"]
    assert info["built"] == cuda["built"] and info["devices"] == cuda["devices"]
    if not cuda["built"]:
        assert "no CUDA backend" in info["gpus"]
    elif cuda["devices"] == 0:
        assert info["gpus"] == "no GPU found"
    else:
        assert cuda["description"] in info["gpus"]


SMALL_BENCH = ["--log-n", "12", "--levels", "3", "--dnum", "2", "--runs", "1", "--log-scale", "30", "--first-mod-bits",
               "40", "--insecure", "--threads", "1"]


def test_bench_device():
    """Issue 29: `ember bench OP --device D` times a Context on D and says so in every record ("device")."""
    cmd = [sys.executable, "-m", "ember", "bench", "mul", *SMALL_BENCH, "--device", "cpu-guarded"]
    rec = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    assert rec["device"] == "cpu-guarded" and rec["precision_bits"] > 15
    cmd = [sys.executable, "-m", "ember", "bench", "ntt", "--log-n", "12", "--runs", "1"]
    rec = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    assert rec["device"] == "cpu"  # ntt / intt: a CPU kernel, no context


def test_bench_cuda_without_a_gpu_fails_cleanly():
    """`--device cuda` without the CUDA backend or a GPU: one line on stderr naming CUDA, status 2, no traceback."""
    from ember import _ember
    if _ember.cuda_info()["devices"] > 0:
        pytest.skip("this machine has a GPU")
    for cmd in (["bench", "mul", *SMALL_BENCH, "--device", "cuda"],
                ["profile", "--threads", "1", "--runs", "1", "--every", "5", "--device", "cuda"]):
        r = subprocess.run([sys.executable, "-m", "ember", *cmd], capture_output=True, text=True)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert "CUDA" in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("built", [False, True])
def test_cuda_refusals_name_the_reason(monkeypatch, capsys, built):
    """Both reasons, whatever this build has: no CUDA backend (a wheel), or the backend and no GPU."""
    from ember import _ember
    from ember.cli import main
    monkeypatch.setattr(_ember, "cuda_info", lambda: {"built": built, "devices": 0, "description": ""})
    assert main(["bench", "add", *SMALL_BENCH, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert ("no CUDA GPU found" if built else "no CUDA backend") in err
    main(["info"])
    assert json.loads(capsys.readouterr().out)["cuda"]["built"] is built


def test_profile_records_the_device(tmp_path):
    """`ember profile --device D`: the table's model is D-<T>t and its params name the device."""
    out = tmp_path / "guarded.json"
    cmd = [sys.executable, "-m", "ember", "profile", "--threads", "1", "--runs", "1", "--every", "5", "--device",
           "cpu-guarded", "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dev = json.loads(out.read_text())["devices"]["cpu-guarded-1t"]
    assert dev["params"]["device"] == "cpu-guarded" and dev["source"] == "measured" and "cpu-guarded" in dev["note"]


def test_bench_special_primes_flags():
    """`ember bench --special-mod-bits B --ks-margin-bits M` builds the set with those special primes and records them;
    an impossible margin is refused with the parameter's name (status 2)."""
    import ember
    cmd = [sys.executable, "-m", "ember", "bench", "rotate", *SMALL_BENCH]
    def record(*flags):
        r = subprocess.run(cmd + list(flags), capture_output=True, text=True, check=True)
        return json.loads(r.stdout.strip().splitlines()[-1])
    rec = record("--special-mod-bits", "61", "--ks-margin-bits", "0")
    # primes of 40, 30, 30, 31 bits in two digits, the larger of 70 bits: two 61-bit special primes (122 bits) for
    # a margin of 0, three for a margin of 60
    assert rec["special_bits"] == [61, 61] and rec["special_primes"] == 2 and rec["ks_margin_bits"] == 0
    assert rec["precision_bits"] > 10
    assert record("--special-mod-bits", "61", "--ks-margin-bits", "60")["special_primes"] == 3
    assert record("--special-mod-bits", "61")["ks_margin_bits"] == ember.CkksParams().ks_margin_bits  # the default
    r = subprocess.run(cmd + ["--ks-margin-bits", "99"], capture_output=True, text=True)
    assert r.returncode == 2 and "ks_margin_bits" in r.stderr and "Traceback" not in r.stderr
