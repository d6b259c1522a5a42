"""The examples/ series runs (at a small ring size so the default suite stays fast)."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path):
    env = dict(os.environ, EMBER_EXAMPLE_LOG_N="13", EMBER_DEMO_LOG_N="13")
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
