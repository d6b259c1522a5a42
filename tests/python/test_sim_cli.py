"""`ember sim`: JSON lines on a pipe with op, gops, mults, dram_gb and the parameters."""
import importlib.util
import json

import pytest

from ember.cli import main


def lines(capsys):
    return [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]


def test_op_paper_table4_mult(capsys):
    assert main(["sim", "op", "Mult", "--log-n", "17", "--limbs", "35", "--dnum", "3", "--word-bits", "64",
                 "--cache-mb", "0", "--accounting", "paper"]) == 0
    (r,) = lines(capsys)
    for key in ("op", "gops", "mults", "dram_gb", "log_n", "limbs", "dnum", "word_bits", "cache_mb"):
        assert key in r
    assert r["op"] == "Mult" and r["log_n"] == 17 and r["limbs"] == 35
    assert r["gops"] == pytest.approx(1.8333, abs=1e-3)
    assert r["dram_gb"] == pytest.approx(1.9293, abs=1e-3)


def test_op_all_and_ember_kernels(capsys):
    assert main(["sim", "op", "all", "--accounting", "paper"]) == 0
    assert [r["op"] for r in lines(capsys)][:4] == ["PtAdd", "Add", "PtMult", "Mult"]
    assert main(["sim", "op", "rotate", "--accounting", "ember", "--log-n", "13", "--limbs", "8", "--kernels"]) == 0
    (r,) = lines(capsys)
    assert r["op"] == "Rotate" and "ntt_forward" in r["kernels"]


def test_boot_steps_and_device(capsys):
    assert main(["sim", "boot", "--steps", "--limbs", "40", "--dnum", "2", "--fft-iters", "6", "--word-bits", "50",
                 "--cache-mb", "32", "--device", "asic"]) == 0
    rs = lines(capsys)
    assert [r["step"] for r in rs][0] == "baseline" and rs[-1]["step"] == "key compression"
    assert rs[-1]["time_ms"] == pytest.approx(39.35, rel=0.01)
    assert all("throughput" in r for r in rs)


def test_search_small(capsys):
    assert main(["sim", "search", "--cache-mb", "32", "--log-n", "17", "--word-bits", "50", "--dnum", "2-3",
                 "--fft-iters", "6", "--sparse-secret", "--top", "3"]) == 0
    rs = lines(capsys)
    assert len(rs) == 3 and rs[0]["throughput"] >= rs[1]["throughput"]
    assert (rs[0]["limbs"], rs[0]["dnum"]) == (40, 2)


def test_errors_name_the_problem(capsys):
    assert main(["sim", "op", "Frobnicate"]) == 2
    assert "unknown operation" in capsys.readouterr().err
    assert main(["sim", "op", "Mult", "--tech", "o2"]) == 2
    assert "unknown technique" in capsys.readouterr().err
    assert main(["sim", "op", "Mult", "--accounting", "ember", "--word-bits", "50"]) == 2
    assert "64-bit" in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib is installed")
def test_png_without_matplotlib_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit, match="matplotlib"):
        main(["sim", "boot", "--steps", "--png", str(tmp_path / "x.png")])


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed")
def test_png_figures(tmp_path, capsys):
    assert main(["sim", "boot", "--steps", "--png", str(tmp_path / "bars.png")]) == 0
    assert main(["sim", "op", "all", "--device", "asic", "--png", str(tmp_path / "roof.png")]) == 0
    assert (tmp_path / "bars.png").stat().st_size > 0 and (tmp_path / "roof.png").stat().st_size > 0
