"""The cost simulator (ember.sim): the ember accounting equals the library's trace counters exactly; the paper
accounting reproduces Table 4 and the directions of Figures 2-3 of the MAD paper (001); the search lands on
Table 5.

The linear transform's model is validated against the library in test_sim_lintrans.py; bootstrapping's waits
for the library's bootstrapping (the bootstrapping issue): see the skipped test at the end.
"""
import numpy as np
import pytest

import ember
from ember.sim import SimParams, Techniques, simulate
from ember.sim import kernels, paper
from ember.sim.cost import Machine
from ember.sim.kernels import UNTRACED, EmberModel, Ring
from ember.sim.search import SPARSE_192, search
from ember.sim.devices import BUILTIN
from ember.sim.timing import aggregate

FIELDS = ("calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written")

# Parameter sets of the validation: (log_n, levels, dnum). Ciphertexts are taken at several levels.
SETS = [(12, 4, 2), (13, 6, 3), (13, 7, 4)]


@pytest.fixture(scope="module", params=SETS, ids=[f"N2^{a}-L{b}-dnum{c}" for a, b, c in SETS])
def lib(request):
    log_n, levels, dnum = request.param
    params = ember.CkksParams(log_n=log_n, levels=levels, log_scale=40, first_mod_bits=50, dnum=dnum, insecure=True)
    ctx = ember.Context(params, threads=2)
    keys = ctx.keygen(rotations=[1, 2, 3, 5], conjugation=True)
    x = np.random.default_rng(7).uniform(-1, 1, ctx.slots)
    return ctx, keys, x


def traced(counts):
    return {k: {f: c[f] for f in FIELDS} for k, c in counts.items()}


def modelled(m: EmberModel):
    return {k: c for k, c in m.counts.items() if k not in UNTRACED}


def run_both(ctx, keys, x, what, level):
    a = ctx.encrypt(x, keys.public, level=level)
    b = ctx.encrypt(x, keys.public, level=level)
    pt = ctx.encode(x, level=level)
    m = EmberModel(Ring.from_params(ctx.params))
    ma, mb = m.ciphertext(level + 1, "a"), m.ciphertext(level + 1, "b")
    lib_ops = {
        "mul": lambda: ctx.multiply(a, b, merged=True),
        "mul_plain_path": lambda: ctx.multiply(a, b, merged=False),
        "rotate": lambda: a.rotate(3),
        "conjugate": lambda: a.conjugate(),
        "rotate_many": lambda: a.rotate_many([1, 2, 3, 5]),
        "add": lambda: a + b,
        "add_plain": lambda: a + pt,
        "mul_plain": lambda: ctx.multiply(a, pt, rescale=False),
        "rescale": lambda: a.rescale(),
    }
    model_ops = {
        "mul": lambda: m.mul_ct(ma, mb, merged=True),
        "mul_plain_path": lambda: m.mul_ct(ma, mb, merged=False),
        "rotate": lambda: m.rotate(ma),
        "conjugate": lambda: m.rotate(ma, "conj"),
        "rotate_many": lambda: m.rotate_many(ma, 4),
        "add": lambda: m.add_ct(ma, mb),
        "add_plain": lambda: m.add_plain(ma, m.plaintext(level + 1)),
        "mul_plain": lambda: m.mul_plain(ma, m.plaintext(level + 1)),
        "rescale": lambda: m.rescale(ma),
    }
    with ember.trace() as t:
        lib_ops[what]()
    model_ops[what]()
    m.finish()
    return m, t


OPS = ["mul", "mul_plain_path", "rotate", "conjugate", "rotate_many", "add", "add_plain", "mul_plain", "rescale"]


@pytest.mark.parametrize("what", OPS)
def test_ember_accounting_equals_trace(lib, what):
    """Every kernel's calls, modular products, additions, NTTs and bytes: exactly the library's counters,
    with ciphertexts at the top level, one below, and level 1."""
    ctx, keys, x = lib
    for level in sorted({ctx.max_level, ctx.max_level - 1, 1}):
        if what in ("mul", "mul_plain_path", "rescale", "mul_plain") and level == 0:
            continue
        m, t = run_both(ctx, keys, x, what, level)
        assert modelled(m) == traced(t.counts), f"{what} at level {level}"


def test_ember_bytes_are_the_tensors_touched(lib):
    """With no cache the DRAM bytes are the kernels' own I/O (plus the untraced copies). With a cache that
    holds everything, a Mult moves exactly its compulsory tensors: both inputs and the key digits it uses read
    once, the result written once."""
    ctx, keys, x = lib
    level = ctx.max_level
    m, t = run_both(ctx, keys, x, "mul", level)
    io = sum(c["bytes_read"] + c["bytes_written"] for c in m.counts.values())
    assert m.cost.dram == io
    assert m.cost.ct_read + m.cost.key_read == sum(c["bytes_read"] for c in m.counts.values())

    ring = Ring.from_params(ctx.params)
    big = EmberModel(ring, cache_limbs=10 ** 6)
    q = level + 1
    big.mul_ct(big.ciphertext(q, "a"), big.ciphertext(q, "b"))
    big.finish()
    limb = ring.n * 8
    digits = len([1 for f, l in kernels.digit_partition(ring.q_count, ring.dnum) if f < min(l, q)])
    assert big.cost.ct_read == 4 * q * limb
    assert big.cost.key_read == 2 * digits * (q + ring.k) * limb
    assert big.cost.ct_write == 2 * (q - 1) * limb


def test_ember_cache_only_lowers_traffic():
    p = SimParams(log_n=14, limbs=12, dnum=3)
    prev = None
    for mb in (0, 0.25, 1, 4, 16, 1024):
        r = simulate("Rotate", p, "ember", cache_mb=mb)
        assert r.cost.ops == simulate("Rotate", p, "ember").cost.ops
        if prev is not None:
            assert r.cost.dram <= prev
        prev = r.cost.dram


def test_special_primes_formula_matches_the_library():
    for log_n, levels, dnum in [(12, 4, 2), (14, 10, 3), (16, 24, 3), (17, 34, 3), (15, 20, 1), (16, 30, 6)]:
        p = ember.CkksParams(log_n=log_n, levels=levels, log_scale=50, first_mod_bits=60, dnum=dnum, insecure=True)
        assert kernels.special_primes(levels + 1, dnum, 50, 60) == len(p.p_primes)


# ---- paper accounting: Table 4 of 001 (log N = 17, 35 limbs, dnum = 3, 64-bit words, no cache) ----------------
TABLE4 = {  # op: (Gops, DRAM GB)
    "PtAdd": (0.0046, 0.1101), "Add": (0.0092, 0.2202), "PtMult": (0.2747, 0.3282), "Decomp": (0.0092, 0.0734),
    "ModUp": (0.2847, 0.1510), "KSKInnerProd": (0.0629, 0.4530), "ModDown": (0.3000, 0.1877),
    "Mult": (1.8333, 1.9293), "Automorph": (0.0, 0.1468), "Rotate": (1.5310, 1.5645), "Conjugate": (1.5310, 1.5645),
}
TABLE4_BOOT = (149.546, 207.982)
T4 = SimParams(log_n=17, limbs=35, dnum=3, word_bits=64, fft_iters=3)


@pytest.mark.parametrize("op", list(TABLE4))
def test_paper_table4_primitives(op):
    gops, gb = TABLE4[op]
    r = simulate(op, T4, "paper", cache_mb=0)
    assert r.cost.ops / 1e9 == pytest.approx(gops, rel=0.05, abs=6e-5)
    assert r.cost.dram / 1e9 == pytest.approx(gb, rel=0.05)


def test_paper_table4_bootstrap():
    r = simulate("Bootstrap", T4, "paper", cache_mb=0)
    assert r.cost.ops / 1e9 == pytest.approx(TABLE4_BOOT[0], rel=0.10)
    assert r.cost.dram / 1e9 == pytest.approx(TABLE4_BOOT[1], rel=0.10)
    assert r.cost.ai == pytest.approx(0.72, abs=0.01)


def _boot(p, mb, tech, **kw):
    return simulate("Bootstrap", p, "paper", cache_mb=mb, tech=tech, **kw).cost


def test_paper_figure2_caching_directions():
    """Each caching technique lowers bootstrapping's DRAM traffic, leaves its operations alone, and the
    cumulative reductions are near the paper's: O(1) -15 %, O(beta) -22 %, O(alpha) -44 %, re-order -52 %."""
    base = _boot(T4, 64, "none")
    steps = [("o1", -0.15), ("o1,beta", -0.22), ("o1,beta,alpha", -0.44), ("caching", -0.52)]
    prev = base.dram
    for tech, paper_change in steps:
        c = _boot(T4, 64, tech)
        assert c.ops == base.ops
        assert c.dram < prev
        assert c.key_read == base.key_read  # caching does not touch the keys
        assert abs((c.dram / base.dram - 1) - paper_change) < 0.10, tech
        prev = c.dram


def test_paper_figure3_algorithmic_directions():
    """Table 5 parameters with all caching (32 MB): ModDown merge -6 % operations at equal traffic; ModDown
    hoisting -34 % operations, fewer ciphertext bytes, more key bytes; key compression halves the key bytes."""
    p = SimParams(log_n=17, limbs=40, dnum=2, word_bits=50, prime_bits=50, fft_iters=6)
    base = _boot(p, 32, "caching")
    merge = _boot(p, 32, "caching,merge")
    hoist = _boot(p, 32, "caching,merge,hoist")
    comp = _boot(p, 32, "all")
    assert merge.ops / base.ops - 1 == pytest.approx(-0.06, abs=0.02)
    assert merge.dram == pytest.approx(base.dram, rel=0.01)
    assert hoist.ops / merge.ops - 1 == pytest.approx(-0.34, abs=0.05)
    assert hoist.ct_read + hoist.ct_write < merge.ct_read + merge.ct_write
    assert hoist.key_read > merge.key_read
    assert comp.key_read == pytest.approx(hoist.key_read / 2)
    assert comp.ops == hoist.ops
    # overall: arithmetic intensity about 3x the baseline's 0.72
    assert comp.ai / _boot(T4, 0, "none").ai == pytest.approx(3.0, rel=0.15)


def test_cache_levels_follow_what_fits():
    p = T4
    limb = p.limb_bytes
    tech = Techniques.parse("caching")
    lvl = lambda mb: paper.cache_level(p, Machine.mb(mb), tech)  # noqa: E731
    assert lvl(0) == 0 and lvl(0.5) == 0
    assert lvl(limb / 2 ** 20) == 1
    assert lvl(6 * limb / 2 ** 20) == 2             # 2 dnum limbs
    assert lvl(15 * limb / 2 ** 20) == 3            # alpha + 3 limbs, alpha = ceil(36 / 3)
    assert paper.cache_level(p, Machine.mb(1000), Techniques.parse("o1")) == 1  # only what is switched on


def test_time_model_reproduces_table6_mad_row():
    """The MAD design next to the GPU (2250 multipliers at 1 GHz, 900 GB/s, 32 MB) bootstraps with Table 5's
    parameters in 39.35 ms: throughput 3006 in Table 6's units."""
    p = SimParams(log_n=17, limbs=40, dnum=2, word_bits=50, prime_bits=50, fft_iters=6)
    r = simulate("Bootstrap", p, "paper", cache_mb=32, tech="all", device=BUILTIN["asic"])
    assert r.extra["time_ms"] == pytest.approx(39.35, rel=0.01)
    assert r.extra["log_q1"] == 950
    assert r.extra["throughput"] == pytest.approx(3006, rel=0.01)


def test_search_lands_on_table5():
    """With SimFHE's search space (q = 50 bits, fftIter in {3, 4, 6, 8}) and its security bound, 32 MB lands on
    Table 5: log N = 17, L = 40, dnum = 2, fftIter = 6."""
    res = search(32, BUILTIN["asic"], log_ns=(16, 17), word_bits=(50,), dnums=range(1, 5), fft_iters=(3, 4, 6, 8),
                 bound=SPARSE_192.get)
    best = res[0]
    assert (best["log_n"], best["limbs"], best["dnum"], best["fft_iters"]) == (17, 40, 2, 6)
    assert all(r["log_qp"] <= r["max_log_qp"] for r in res)


def test_search_respects_the_library_bound():
    res = search(32, BUILTIN["asic"], log_ns=(16,), word_bits=(50,), dnums=(2, 3), fft_iters=(4,), limbs="max")
    assert res and all(r["log_qp"] <= ember.max_log_qp_128(16) for r in res)


def test_roofline_bounds():
    c = simulate("Mult", T4, "paper").cost
    t = aggregate(c, BUILTIN["asic"])
    assert t["time_ms"] == pytest.approx(max(t["compute_ms"], t["memory_ms"]))
    assert t["memory_ms"] == pytest.approx(c.dram / 900e9 * 1e3)


def test_ember_composites_run():
    """Polynomial evaluation and bootstrapping are modelled for the ember accounting (not validated against the
    library yet); the linear transform is the library's (test_sim_lintrans.py)."""
    p = SimParams(log_n=13, limbs=25, dnum=3, fft_iters=3, poly_degree=63, double_angle=2)
    for op in ("LinearTransform", "PolyEval", "HoistedRotate"):
        assert simulate(op, p, "ember").cost.ops > 0
    r = simulate("Bootstrap", p, "ember")
    assert r.extra["fresh_limbs"] >= 1
    assert set(r.stages) == {"ModRaise", "CoeffToSlot", "EvalMod", "SlotToCoeff"}
    assert sum(s.ops for s in r.stages.values()) == pytest.approx(r.cost.ops)


def test_ember_bootstrap_dfts_are_the_library_linear_transforms():
    """Bootstrapping's PtMatVecMult is kernels.lintrans on the library's DFT factors (dft_indices): its
    CoeffToSlot stage is those fft_iters transforms, one level each, plus the conjugation split."""
    p = SimParams(log_n=12, limbs=16, dnum=3, fft_iters=3, poly_degree=15, double_angle=1)
    for tech, hoisted in (("merge,hoist", True), ("merge", False)):
        r = simulate("Bootstrap", p, "ember", tech=tech)
        m = EmberModel(Ring.from_sim(p))
        x = m.ciphertext(p.limbs, "raised")
        for idx in kernels.dft_indices(p.slots, p.fft_iters, coeff_to_slot=True):
            x = kernels.lintrans(m, x, idx, p.slots, hoisted=hoisted)
        conj = m.rotate(x, "conj")
        m.add_ct(x, conj)
        m.add_ct(x, conj, "sub")
        assert x.q == p.limbs - p.fft_iters
        assert r.stages["CoeffToSlot"].ops == m.cost.ops and r.stages["CoeffToSlot"].ntt == m.cost.ntt


@pytest.mark.parametrize("log_n", [12, 13])
def test_bootstrap_equals_trace(log_n):
    """A real bootstrapping captured as a graph (ember.graph): for every node, the simulator's model of that
    operation at its operand levels (ember.sim.graph_model) equals the kernel counters the node measured, exactly;
    so the model summed over the graph equals the trace of everything the evaluator's operations ran. Kernels run
    outside public Evaluator operations (the linear transforms' hoisted ring-level paths and ModRaise, until the
    circuits use only public operations: the api issue) are not in the graph: then the comparison with the whole
    trace is an expected failure that names the gap."""
    import numpy as np
    import ember
    from ember.sim.graph_model import UNVERIFIED, graph_counts, node_counts
    from ember.sim.kernels import Ring
    params = ember.CkksParams.bootstrappable(log_n=log_n, levels=2, slots=16, insecure=True)
    ctx = ember.Context(params)
    keys = ctx.keygen(bootstrapping=True)
    x = ctx.encrypt(np.full(16, 0.25), keys.public, level=0)
    with ember.trace() as t, ember.graph(ctx) as g:
        ctx.bootstrap(x)
    ring = Ring.from_params(params._core)
    keys_ = ("calls", "mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written")
    unverified = set()
    for n in g.nodes:
        try:
            c = node_counts(ring, g, n)
        except ValueError:
            unverified.add(n.op)  # an operation the simulator has no model of yet
            continue
        model = {k: sum(v[k] for v in c.values()) for k in keys_}
        measured = {k: n.counts[k] for k in keys_}
        if n.op in UNVERIFIED and model != measured:
            unverified.add(n.op)
            continue
        assert model == measured, (n.id, n.op, n.level, n.params)
    assert len(g) >= 100
    if unverified:
        pytest.xfail(f"the simulator's model of {sorted(unverified)} (new public operations) does not match the "
                     f"library yet; every other node matches exactly")
    model = graph_counts(ring, g)
    graph_total = g.total_counts()
    assert model == {k: graph_total[k] for k in keys_}
    trace = {k: t.totals[k] for k in keys_}
    if model != trace:
        missing = 1 - model["mod_mul"] / trace["mod_mul"]
        pytest.xfail(f"{missing:.0%} of the bootstrapping's modular multiplications run outside public Evaluator "
                     f"operations (linear transforms, ModRaise): not in the graph until the circuits use only "
                     f"public operations (api issue); every captured node matches the model exactly")


def test_sim_boot_library_models_the_captured_bootstrapping():
    """`ember sim boot --library` models the library's own bootstrapping node by node: its totals equal the
    counters a real bootstrapping's graph measured (N = 2^12, the parameters of CkksParams.bootstrappable)."""
    import json
    import subprocess
    import sys
    import numpy as np
    import ember
    r = subprocess.run([sys.executable, "-m", "ember", "sim", "boot", "--library", "--log-n", "12", "--device", "h100"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["modelled"] is True and rec["time_ms"] > 0
    params = ember.CkksParams.bootstrappable(log_n=12, insecure=True)
    ctx = ember.Context(params)
    keys = ctx.keygen(bootstrapping=True)
    x = ctx.encrypt(np.zeros(ctx.slots), keys.public, level=0)
    with ember.graph(ctx) as g:
        ctx.bootstrap(x)
    tot = g.total_counts()
    assert rec["nodes"] == len(g) and rec["op_counts"] == g.op_counts()
    for k in ("mod_mul", "mod_add", "ntt", "bytes_read", "bytes_written"):
        assert rec[k] == tot[k], k
