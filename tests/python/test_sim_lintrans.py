"""The ember accounting of the linear transform (ember.sim.kernels.lintrans) against the library's
LinearTransform (cpp/circuits/lintrans.cpp): every kernel's calls, modular products, additions, NTTs and bytes
equal ember.trace() for both paths (apply() double-hoisted, apply(hoisted=False) plain), for a banded matrix, a
dense 64-slot matrix with n1 = 8 and the CoeffToSlot factors of ember._ember.dft_factors, at N = 2^12 and 2^13.
"""
import numpy as np
import pytest

import ember
from ember.cli import main
from ember.sim import SimParams, simulate
from ember.sim.kernels import (UNTRACED, EmberModel, LTPlan, Ring, choose_n1, digit_partition, dft_indices,
                               lintrans, parse_indices)

FIELDS = ("calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written")
SETS = [(12, 4, 2), (13, 6, 3)]  # (log_n, levels, dnum)
BAND = (0, 1, 2, 5, -1, -3)


def traced(t):
    return {k: {f: c[f] for f in FIELDS} for k, c in t.counts.items()}


def modelled(m: EmberModel):
    return {k: c for k, c in m.counts.items() if k not in UNTRACED}


@pytest.fixture(scope="module", params=SETS, ids=[f"N2^{a}-L{b}-dnum{c}" for a, b, c in SETS])
def lib(request):
    """A context, the transforms of the comparison (name, indices, slots, n1 asked, level, LinearTransform) and
    Galois keys for all of them."""
    log_n, levels, dnum = request.param
    params = ember.CkksParams(log_n=log_n, levels=levels, log_scale=40, first_mod_bits=50, dnum=dnum, insecure=True)
    ctx = ember.Context(params, threads=2)
    rng = np.random.default_rng(log_n)
    full, top = ctx.slots, ctx.max_level
    cases = [("band", {k: rng.uniform(-1, 1, full) for k in BAND}, full, 0, top),
             ("band-level1", {k: rng.uniform(-1, 1, full) for k in BAND}, full, 0, 1),
             ("dense64", {k: rng.uniform(-1, 1, 64) for k in range(64)}, 64, 8, top)]
    # CoeffToSlot over N/2 slots in 3 factors, one level each, as bootstrapping applies them
    for f, diags in enumerate(ember._ember.dft_factors(log_n, full, 3, True)):
        cases.append((f"cts{f}", diags, full, 0, top - f))
    lts = [(name, sorted(d), slots, n1, level, ember.LinearTransform(ctx, d, slots=slots, level=level, n1=n1))
           for name, d, slots, n1, level in cases]
    keys = ctx.keygen(rotations=sorted({r for *_, lt in lts for r in lt.rotations}))
    return ctx, keys, lts


CASES = ["band", "band-level1", "dense64", "cts0", "cts1", "cts2"]


@pytest.mark.parametrize("hoisted", [True, False], ids=["hoisted", "plain"])
@pytest.mark.parametrize("case", CASES)
def test_lintrans_equals_trace(lib, case, hoisted):
    ctx, keys, lts = lib
    (name, idx, slots, n1, level, lt), = [c for c in lts if c[0] == case]
    ct = ctx.encrypt(np.random.default_rng(1).uniform(-1, 1, slots), keys.public, level=level)
    with ember.trace() as t:
        out = lt.apply(ct, hoisted=hoisted)
    m = EmberModel(Ring.from_params(ctx.params))
    res = lintrans(m, m.ciphertext(level + 1), idx, slots, n1, hoisted=hoisted)
    m.finish()
    assert res.q == out.level + 1
    assert modelled(m) == traced(t), f"{name} ({'hoisted' if hoisted else 'plain'}) at level {level}"
    # with no cache the DRAM bytes are the kernels' own I/O, the untraced copies and zeroing included
    assert m.cost.dram == sum(c["bytes_read"] + c["bytes_written"] for c in m.counts.values())


def test_plan_is_the_librarys(lib):
    """n1 (lt.baby_steps) and the rotation keys (lt.rotations) as the library picks them."""
    ctx, _, lts = lib
    for name, idx, slots, n1, level, lt in lts:
        plan = LTPlan.of(idx, slots, n1)
        assert plan.n1 == lt.baby_steps, name
        assert plan.rotations == sorted(lt.rotations), name
        assert plan.diagonals == len(idx)
    assert lts[2][5].baby_steps == 8  # dense64 asked for n1 = 8
    rng = np.random.default_rng(3)
    for slots in (16, 256, ctx.slots):
        for count in (1, 3, 9, 20):
            idx = [int(k) - slots * int(rng.integers(2)) for k in rng.choice(slots, min(count, slots), replace=False)]
            lt = ember.LinearTransform(ctx, {k: np.ones(slots) for k in idx}, slots=slots, level=1)
            assert choose_n1(idx, slots) == lt.baby_steps, (slots, idx)
            assert LTPlan.of(idx, slots).rotations == sorted(lt.rotations)


@pytest.mark.parametrize("coeff_to_slot", [True, False], ids=["cts", "stc"])
def test_dft_indices_are_the_librarys(coeff_to_slot):
    for slots in (1, 2, 8, 64, 512):
        for levels in (1, 2, 3, 4):
            got = dft_indices(slots, levels, coeff_to_slot)
            want = [tuple(sorted(f)) for f in ember._ember.dft_factors(10, slots, levels, coeff_to_slot)]
            assert got == want, (slots, levels)


@pytest.mark.parametrize("hoisted", [True, False], ids=["hoisted", "plain"])
def test_lintrans_compulsory_traffic(hoisted):
    """With a cache that holds everything, a linear transform moves its compulsory data only: the input read
    once, every plaintext read once (over Q_l U P on the hoisted path, Q_l on the plain one), every rotation key
    read once at this level, the result written once."""
    ring = Ring(log_n=12, q_count=7, k=2, dnum=3)
    q = 6
    plan = LTPlan.of(range(-4, 12), 2048)
    m = EmberModel(ring, cache_limbs=10 ** 6)
    lintrans(m, m.ciphertext(q), plan, plan.slots, hoisted=hoisted)
    m.finish()
    limb = ring.n * 8
    digits = len([1 for f, last in digit_partition(ring.q_count, ring.dnum) if f < min(last, q)])
    assert m.cost.ct_read == 2 * q * limb
    assert m.cost.ct_write == 2 * (q - 1) * limb
    assert m.cost.pt_read == plan.diagonals * (q + ring.k if hoisted else q) * limb
    assert m.cost.key_read == len(plan.rotations) * 2 * digits * (q + ring.k) * limb


def test_simulate_lintrans_equals_trace(lib):
    """simulate('lintrans', ...) with the library's parameters: the same kernels as the trace."""
    ctx, keys, lts = lib
    p = ctx.params
    sp = SimParams(log_n=p.log_n, limbs=len(p.q_primes), dnum=p.dnum, prime_bits=40, first_mod_bits=50)
    name, idx, slots, n1, level, lt = lts[0]
    ct = ctx.encrypt(np.zeros(slots), keys.public, level=level)
    for tech, hoisted in (("merge,hoist", True), ("merge", False)):
        with ember.trace() as t:
            lt.apply(ct, hoisted=hoisted)
        r = simulate("lintrans", sp, "ember", tech=tech, indices=list(BAND), slots=slots, n1=n1)
        assert r.extra["special_primes"] == len(p.p_primes)
        assert {k: c for k, c in r.kernels.items() if k not in UNTRACED} == traced(t)
        assert r.extra["n1"] == lt.baby_steps and r.extra["lt_path"] == ("hoisted" if hoisted else "plain")
        assert r.extra["diagonals"] == len(BAND) and r.extra["rotation_keys"] == len(lt.rotations)


def test_hoisting_saves_work():
    """The double-hoisted path does fewer NTTs and modular operations than the plain one on a DFT factor."""
    p = SimParams(log_n=14, limbs=12, dnum=3)
    hoisted = simulate("lintrans", p, "ember", tech="merge,hoist", indices="cts:1")
    plain = simulate("lintrans", p, "ember", tech="merge", indices="cts:1")
    assert hoisted.cost.ntt < plain.cost.ntt and hoisted.cost.ops < plain.cost.ops
    assert hoisted.extra["diagonals"] == plain.extra["diagonals"] == len(dft_indices(p.slots, 3, True)[1])


def test_parse_indices():
    assert parse_indices("0,1,-2", 64, 3) == [0, 1, -2]
    assert parse_indices("-3..3,64", 4096, 3) == list(range(-3, 4)) + [64]
    assert parse_indices("cts:2", 2048, 3) == list(dft_indices(2048, 3, True)[2])
    assert parse_indices("stc", 2048, 3) == list(dft_indices(2048, 3, False)[0])
    with pytest.raises(ValueError, match="factors 0..2"):
        parse_indices("cts:3", 2048, 3)
    with pytest.raises(ValueError, match="ranges"):
        parse_indices("1,x", 64, 3)
    with pytest.raises(ValueError, match="twice"):
        LTPlan.of([1, 65], 64)


def test_cli_op_lintrans(capsys):
    import json

    base = ["sim", "op", "lintrans", "--accounting", "ember", "--log-n", "12", "--limbs", "5", "--dnum", "2"]
    assert main(base + ["--slots", "64", "--indices", "0..63", "--n1", "8", "--kernels"]) == 0
    (r,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert r["op"] == "LinearTransform" and (r["slots"], r["n1"], r["diagonals"]) == (64, 8, 64)
    assert r["lt_path"] == "hoisted" and "dot" in r["kernels"] and "mul_add" not in r["kernels"]  # inner sums: dot2
    want = simulate("lintrans", SimParams(log_n=12, limbs=5, dnum=2), "ember", indices=range(64), slots=64, n1=8)
    assert r["mults"] == want.cost.mod_mul
    assert main(base + ["--indices", "cts:1", "--tech", "merge"]) == 0
    (r,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert r["lt_path"] == "plain" and r["diagonals"] == len(dft_indices(2048, 3, True)[1])
    assert main(base[:3] + base[5:] + ["--indices", "0..6"]) == 0  # the paper accounting: the diagonal count
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()][0]["gops"] > 0
    assert main(base + ["--indices", "cts:9"]) == 2
    assert "factors" in capsys.readouterr().err
