"""The HE Mul breakdown of `ember bench heaan-mul --breakdown` (paper 002, Table II): the operations each function
executes per HE Mul, checked against paper 000's Table IV, and the rates against the machine's measured peaks.

Paper 000's symbols (Table III): N coefficients, qLimbs = ceil(log q / log beta) words of a coefficient, np primes
(P = p_0 ... p_{np-1}), PLimbs = max_j log(P / p_j) / log beta words of a row of TB_Pdivp; beta = 2^64 on a CPU. In
Ember: np is Context.primes(1, log_q) (region 1) or Context.primes(2, log_q) (region 2, key switching), and beta is
2^64 on the scalar CRT / iCRT kernels but 2^52 on the AVX-512 IFMA ones (52-bit digits), so qLimbs = ceil(log q /
52) there. Table IV counts one conversion (one polynomial); one Ember HE Mul (x y, x != y) runs

    CRT : 4 polynomials (a1, b1, a2, b2) at np1, and the iCRT output a1 a2 mod q at np2 (key switching);
    NTT : those 4 np1 + np2 rows;
    iNTT: 3 np1 rows (a1 a2, a1 b2 + b1 a2, b1 b2) and 2 np2 rows (a1 a2 times evk.a and evk.b);
    iCRT: 3 reconstructions at np1 (shift 0) and 2 at np2 (shifted right by log Q);

(a square x x: 2 polynomials and 2 np1 forward rows in region 1). The counts are those formulas summed over these
conversions, exactly, except where Ember's kernels execute something else:

    * CRT: as Table IV (Multiplication = ADC = N qLimbs np, Modular mul = N np), plus N np modular additions Table
      IV does not have: Ember's CRT reads the coefficients centered (adds 2^(log q - 1) by flipping the top bit, then
      the residue of -2^(log q - 1)), which halves the product bounds.
    * NTT: as Table IV (np N/2 log N modular multiplications, np N log N additions / subtractions).
    * iNTT: np (N/2 log N + N/2) modular multiplications instead of np (N/2 log N + N): every path merges the N^-1
      factor into the last stage (one product per butterfly of that stage, N/2) instead of a pass of N products.
      Additions / subtractions as Table IV.
    * iCRT: N np modular multiplications instead of Table IV's 2 N np: one Shoup product t_j per residue; "mod P"
      is not a reduction but the subtraction of v P, with v = round(sum_j t_j / p_j) from N np floating-point
      multiply-adds (not counted) and one more row (-P) in the word product. The word product runs over the output
      digits only, (np + 1) x digits instead of np x PLimbs: "mod q" (q = 2^log q) is a truncation, so region 1
      needs ceil(log q / log beta) digits of the PLimbs (~ 2 log q / 64); region 2's output, divided by Q = 2^log Q,
      skips the digits below bit log Q - 100 (they move the rounded result by less than 2^-40). ADC: one per
      product (as Table IV), plus Ember's carry propagation (one per digit) and the rounding increment of the
      shifted reconstructions (one per coefficient).

Rates are not asserted (timing): only that they are positive and are the counts over the function's time,
divided by the measured peaks.
"""
import math

import numpy as np
import pytest

import ember
from ember import _ember, heaan

LOG_N, LOG_Q, LOG_P = 11, 300, 30
FIELDS = ("calls", "mod_mul", "mod_add", "word_mul", "adc", "ntt", "bytes_read", "bytes_written")
FUNCS = {"CRT": "heaan_crt", "NTT": "heaan_ntt", "iNTT": "heaan_intt", "iCRT": "heaan_icrt", "extra": "heaan_extra"}


@pytest.fixture(scope="module")
def env():
    ctx = heaan.Context(LOG_N, LOG_Q, LOG_P, threads=2, insecure=True)
    keys = ctx.keygen()
    return ctx, keys


CRT_PATHS = ("scalar", "avx2", "ifma")


def _paths(ctx):
    """The CRT / iCRT kernel paths this CPU runs: scalar always, and every vector path up to the one the basis takes
    (the context's own choice is restored by the callers)."""
    orig = ctx.crt_path
    ctx._core.set_crt_path("ifma")
    best = ctx.crt_path
    ctx._core.set_crt_path(orig)
    return list(CRT_PATHS[:CRT_PATHS.index(best) + 1])


def crt_digits(log_q, path):
    """Word products of the CRT per residue of a log_q-bit coefficient: 52-bit digits (IFMA), 64-bit words (scalar),
    32-bit digits times the two 25-bit halves of the table entry (AVX2: two lane products per digit)."""
    if path == "avx2":
        return 2 * -(-log_q // 32)
    return -(-log_q // (52 if path == "ifma" else 64))


def icrt_digits(shift, log_q, path):
    """(digits multiplied per row, carry steps) of one reconstruction: the output digits, from digit
    (shift - 100) / beta_bits when shift > 100 (crt.hpp icrt_first_digit); the IFMA kernel runs them in nc chunks of
    kc digits (nc kc >= nd, zero-padded table rows); the AVX2 kernel runs the scalar kernel's 64-bit words as 2 nd
    32-bit digits, in chunks of 6 (zero-padded), two lane products per digit."""
    ifma = path == "ifma"
    db = 52 if ifma else 64
    first = (shift - 100) // db if shift > 100 else 0
    nd = -(-(shift + log_q) // db) - first
    if path == "avx2":
        return 2 * (-(-2 * nd // 6) * 6), 2 * nd
    if not ifma:
        return nd, nd
    nc = -(-nd // 13)
    kc = -(-nd // nc)
    return nc * kc, nd


def ember_counts(ctx, log_q, square, path):
    """The counters of one HE Mul at modulus 2^log_q, per function, as Ember's kernels execute them."""
    n, lg, log_Q = 2 ** ctx.log_n, ctx.log_n, ctx.log_q
    np1, np2 = ctx.primes(1, log_q), ctx.primes(2, log_q)
    ql = crt_digits(log_q, path)            # CRT word products per residue (qLimbs for Ember's beta)
    words = -(-log_q // 64)                 # 64-bit words of a coefficient
    ins = 2 if square else 4
    res = n * (ins * np1 + np2)             # CRT residues
    nf, ni = ins * np1 + np2, 3 * np1 + 2 * np2
    (d0p, d0), (dqp, dq) = icrt_digits(0, log_q, path), icrt_digits(log_Q, log_q, path)
    icrt_wmul = 3 * n * (np1 + 1) * d0p + 2 * n * (np2 + 1) * dqp
    return {
        "CRT": dict(calls=ins + 1, mod_mul=res, mod_add=res, word_mul=res * ql, adc=res * ql, ntt=0,
                    bytes_read=ins * n * words * 8, bytes_written=res * 8),
        "NTT": dict(calls=2, mod_mul=nf * n // 2 * lg, mod_add=nf * n * lg, word_mul=0, adc=0, ntt=nf,
                    bytes_read=nf * n * 8, bytes_written=nf * n * 8),
        "iNTT": dict(calls=2, mod_mul=ni * (n // 2 * lg + n // 2), mod_add=ni * n * lg, word_mul=0, adc=0, ntt=ni,
                     bytes_read=ni * n * 8, bytes_written=ni * n * 8),
        "iCRT": dict(calls=5, mod_mul=3 * n * np1 + 2 * n * np2, mod_add=0, word_mul=icrt_wmul,
                     adc=icrt_wmul + 3 * n * d0 + 2 * n * dq + 2 * n, ntt=0,
                     bytes_read=(3 * np1 + 2 * np2) * n * 8, bytes_written=2 * n * words * 8),
        "extra": dict(calls=2, mod_mul=(3 if square else 4) * np1 * n + 2 * np2 * n, mod_add=np1 * n, word_mul=0,
                      adc=2 * n * words, ntt=0, bytes_read=ins * np1 * n * 8 + 3 * np2 * n * 8,
                      bytes_written=3 * np1 * n * 8 + 2 * np2 * n * 8),
    }


def plimbs(ctx, np_):
    """PLimbs of paper 000 (Table III) for the first np_ primes, beta = 2^64: max_j log2(P / p_j) / 64, rounded up."""
    ps = ctx._core.primes[:np_]
    log_p = sum(math.log2(p) for p in ps)
    return math.ceil((log_p - math.log2(min(ps))) / 64)


def table_iv(ctx, log_q, square, path):
    """Paper 000's Table IV per conversion, summed over the conversions of one Ember HE Mul (module docstring), with
    beta the kernel's digit (2^52 IFMA, 2^32 AVX2, 2^64 scalar)."""
    n, lg = 2 ** ctx.log_n, ctx.log_n
    np1, np2 = ctx.primes(1, log_q), ctx.primes(2, log_q)
    q_limbs = -(-log_q // {"ifma": 52, "avx2": 32}.get(path, 64))
    ins = 2 if square else 4
    crt_np = ins * np1 + np2
    rows_f, rows_i = ins * np1 + np2, 3 * np1 + 2 * np2
    icrt_mult = 3 * n * np1 * plimbs(ctx, np1) + 2 * n * np2 * plimbs(ctx, np2)
    return {
        "CRT": dict(mult=n * q_limbs * crt_np, mod_mul=n * crt_np, adc=n * q_limbs * crt_np, add_sub=0),
        "NTT": dict(mult=0, mod_mul=rows_f * n // 2 * lg, adc=0, add_sub=rows_f * n * lg),
        "iNTT": dict(mult=0, mod_mul=rows_i * (n // 2 * lg + n), adc=0, add_sub=rows_i * n * lg),
        "iCRT": dict(mult=icrt_mult, mod_mul=2 * n * (3 * np1 + 2 * np2), adc=icrt_mult, add_sub=0),
    }


def traced_mul(ctx, keys, log_q, square):
    rng = np.random.default_rng(5)
    x = ctx.encrypt(rng.uniform(0, 1, ctx.slots), keys.public)
    y = ctx.encrypt(rng.uniform(0, 1, ctx.slots), keys.public)
    if log_q != ctx.log_q:
        x, y = x.mod_down(log_q), y.mod_down(log_q)
    with ember.trace() as t:
        x.mul(x) if square else x.mul(y)
    return t.counts


@pytest.mark.parametrize("log_q", [LOG_Q, 250])  # fresh (qLimbs 5, region 2: 7 digits) and lower (4 and 6)
@pytest.mark.parametrize("square", [False, True])
def test_counts_per_function_are_what_the_kernels_execute(env, log_q, square):
    ctx, keys = env
    orig = ctx.crt_path
    for path in _paths(ctx):
        ctx._core.set_crt_path(path)
        try:
            counts = traced_mul(ctx, keys, log_q, square)
        finally:
            ctx._core.set_crt_path(orig)
        want = ember_counts(ctx, log_q, square, path)
        for name, kernel in FUNCS.items():
            got = {f: counts[kernel][f] for f in FIELDS}
            assert got == want[name], (name, path, got, want[name])
        assert counts["heaan_mul"]["calls"] == 1


@pytest.mark.parametrize("square", [False, True])
def test_counts_against_table_iv(env, square):
    """Every Table IV entry, with the differences of the module docstring stated as exact corrections."""
    ctx, keys = env
    n = 2 ** ctx.log_n
    orig = ctx.crt_path
    for path in _paths(ctx):
        ctx._core.set_crt_path(path)
        try:
            counts = traced_mul(ctx, keys, LOG_Q, square)
        finally:
            ctx._core.set_crt_path(orig)
        c = {name: counts[k] for name, k in FUNCS.items()}
        tiv = table_iv(ctx, LOG_Q, square, path)
        lanes = 2 if path == "avx2" else 1  # AVX2: a digit product is two lane products (the entry's 25-bit halves)
        np1, np2 = ctx.primes(1), ctx.primes(2)
        ins = 2 if square else 4
        # CRT: Table IV exactly (Multiplication, ADC, Modular mul); plus the centered read's one modular addition per
        # residue (Table IV: none)
        assert c["CRT"]["word_mul"] == lanes * tiv["CRT"]["mult"]
        assert c["CRT"]["adc"] == lanes * tiv["CRT"]["adc"]
        assert c["CRT"]["mod_mul"] == tiv["CRT"]["mod_mul"]
        assert c["CRT"]["mod_add"] == tiv["CRT"]["add_sub"] + n * (ins * np1 + np2)
        # NTT: Table IV exactly
        assert c["NTT"]["mod_mul"] == tiv["NTT"]["mod_mul"]
        assert c["NTT"]["mod_add"] == tiv["NTT"]["add_sub"]
        assert c["NTT"]["word_mul"] == c["NTT"]["adc"] == 0
        # iNTT: N^-1 merged into the last stage: N/2 products per row fewer than Table IV's N; additions exactly
        rows = 3 * np1 + 2 * np2
        assert c["iNTT"]["mod_mul"] == tiv["iNTT"]["mod_mul"] - rows * n // 2
        assert c["iNTT"]["mod_add"] == tiv["iNTT"]["add_sub"]
        # iCRT: one Shoup product per residue (Table IV: two); the word product over the output digits only, with
        # the extra row of v P: fewer products than Table IV's np PLimbs for both regions
        assert c["iCRT"]["mod_mul"] * 2 == tiv["iCRT"]["mod_mul"]
        # (AVX2: a 64-bit limb is two 32-bit digits, each two lane products)
        assert 0 < c["iCRT"]["word_mul"] < (4 if path == "avx2" else 1) * tiv["iCRT"]["mult"]
        (d0p, d0), (dqp, dq) = icrt_digits(0, LOG_Q, path), icrt_digits(ctx.log_q, LOG_Q, path)
        assert c["iCRT"]["word_mul"] == 3 * n * (np1 + 1) * d0p + 2 * n * (np2 + 1) * dqp
        assert c["iCRT"]["adc"] == c["iCRT"]["word_mul"] + 3 * n * d0 + 2 * n * dq + 2 * n
        if path == "scalar":  # region 1: the output's qLimbs words instead of PLimbs (about 2 qLimbs)
            assert d0 == -(-LOG_Q // 64) and plimbs(ctx, np1) >= 2 * d0 - 1


def test_counters_in_snapshot_and_graph_capture(env):
    """word_mul and adc are trace counters like the others: in every kernel of the snapshot (zero outside the big-
    integer kernels)."""
    ctx, keys = env
    counts = traced_mul(ctx, keys, LOG_Q, False)
    for k, c in counts.items():
        assert set(FIELDS) <= set(c), k
    assert counts["heaan_ntt"]["word_mul"] == 0 and counts["heaan_crt"]["word_mul"] > 0


def test_machine_peak():
    pk = heaan.machine_peak(2, copy_mib=16)
    assert pk["threads"] == 2 and pk["mul_words"] == 1024 and pk["copy_mib"] == 16
    for k in ("gmulmod_s", "gmulmod_s_thread", "gwmul_s", "gwmul_s_thread", "copy_gb_s", "copy_gb_s_thread"):
        assert pk[k] > 0, k
    assert pk["prime"] < 2 ** 50 and pk["prime"] % (2 ** 17) == 1
    assert pk["mul_path"] == _ember.kernel_paths([pk["prime"]])["elementwise"]
    has_avx2 = _ember.cpu_features()["path"] in ("avx2", "avx512", "ifma")
    assert pk["lane_path"] == ("avx2" if has_avx2 else None)
    if has_avx2:
        assert pk["glane_s"] > 0 and pk["glane_s_thread"] > 0
    else:
        assert pk["glane_s"] is None
    assert heaan.machine_peak(2, copy_mib=16) == pk  # cached per process
    with pytest.raises(ValueError):
        _ember.machine_peak(0)


def test_bench_breakdown_rates_from_counts_and_peaks(env):
    ctx, _ = env
    peak = heaan.machine_peak(1, copy_mib=16)
    runs = 2
    rec = heaan.bench_mul(log_n=LOG_N, log_q=LOG_Q, log_p=LOG_P, threads=1, runs=runs, breakdown=True, insecure=True, peak=peak)
    assert rec["peak"] == peak and rec["path"]
    f = rec["breakdown"]
    want = ember_counts(ctx, LOG_Q, False, rec["crt_path"])
    for name in FUNCS:
        r = f[name]
        assert {k: r[k] for k in FIELDS} == want[name], name  # per HE Mul: the runs' sums divided by the runs
        assert r["ms"] > 0 and 0 < r["share"] < 1
        sec = r["ms"] / 1e3
        assert r["gmulmod_s"] > 0 and r["gb_s"] > 0
        assert r["gmulmod_s"] == pytest.approx(r["mod_mul"] / sec / 1e9, rel=1e-6)
        assert r["gwmul_s"] == pytest.approx(r["word_mul"] / sec / 1e9, rel=1e-6)
        assert r["gb_s"] == pytest.approx((r["bytes_read"] + r["bytes_written"]) / sec / 1e9, rel=1e-6)
        assert r["mulmod_peak_frac"] == pytest.approx(r["gmulmod_s"] / peak["gmulmod_s"])
        lanes = rec["crt_path"] == "avx2" and name in ("CRT", "iCRT")  # lane products against the lane peak
        assert r["wmul_peak"] == ("avx2 lane" if lanes else "scalar word")
        assert r["wmul_peak_frac"] == pytest.approx(r["gwmul_s"] / (peak["glane_s"] if lanes else peak["gwmul_s"]))
        assert r["bw_peak_frac"] == pytest.approx(r["gb_s"] / peak["copy_gb_s"])
        assert r["bound"] in ("compute", "memory")
    for name in ("CRT", "iCRT"):
        assert f[name]["gwmul_s"] > 0
    tot = f["total"]
    assert tot["mod_mul"] == sum(want[k]["mod_mul"] for k in FUNCS)
    assert tot["ms"] == pytest.approx(rec["breakdown_ms"]["total"], abs=0.01)
    text = heaan.breakdown_table(rec)
    for s in ("Gmulmod/s", "GB/s", "%peak", "iCRT", "peaks, measured", rec["path"]):
        assert s in text
    # records without the Table II columns still print (older records)
    old = {k: v for k, v in rec.items() if k not in ("breakdown", "peak")}
    assert "iCRT" in heaan.breakdown_table(old) and "Gmulmod/s" not in heaan.breakdown_table(old)
