import json
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
