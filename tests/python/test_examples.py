"""The examples/ series runs (at a small ring size so the default suite stays fast)."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))
# Examples whose 128-bit parameters need N = 2^16 whatever EMBER_EXAMPLE_LOG_N says (HELR's bootstrappable chain:
# 29 s and 2.9 GB on the 2-core VM, keys 16 s of it): `make test-slow` runs them.
SLOW = {"07_helr_training.py"}
CASES = [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else []) for p in EXAMPLES]


@pytest.mark.parametrize("path", CASES)
def test_example_runs(path):
    env = dict(os.environ, EMBER_EXAMPLE_LOG_N="13", EMBER_DEMO_LOG_N="13")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
