"""The README's Python code runs as written (issue 26: every README example runs in the suite).

Each ```python block of README.md runs in a fresh interpreter, unchanged (the first program at its own N = 2^16,
some 10 s here). A block whose last printed line is a number is an error against float64: it must be below 2^-20."""
import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_blocks():
    assert BLOCKS, "README.md has no ```python block: this test would check nothing"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    if lines:
        try:
            value = float(lines[-1])
        except ValueError:
            return
        assert 0 <= value < 2.0 ** -20, f"the README's printed error {value} is not below 2^-20"
