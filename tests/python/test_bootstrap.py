"""Bootstrapping from Python: ctx.bootstrap / ct.bootstrap at N = 2^12 (insecure) against numpy, the
bootstrapping keys, errors; one N = 2^16 full-slot run marked slow.

Error model (derived in tests/cpp/test_bootstrap.cpp, whose numbers it reuses): bootstrapping the message z
gives z + E(z) + noise, where

* E(z) is EvalMod's deterministic error, computed here in float64: every message coefficient c is read
  as s = sin(2 pi c Delta0 / q0) and returned as (q0 / Delta0) P(s / s_B), P the configuration's arcsine
  interpolant on |s| <= s_B = sin(2 pi B / 2^R) (R = message_ratio_bits, B = input_bound, Delta0 = k * scale
  with k = round(q0 / (2^R scale))); for |c| <= B it is below cfg.approx_error();
* noise <= C 2^R sqrt(2n) sqrt(N / 18) sqrt(min(4n, N)) 2^-60 with C = 16 pi K 2^r (K = k_range,
  r = double_angles): the rescale rounding at the 60-bit EvalMod scale, decoded over the 2n' coefficients
  of an n'-slot ciphertext, times EvalMod's gain, 2^R on the way back to the message and sqrt(2n) for
  SlotToCoeff's sum (measured 2 to 3 bits below it for N = 2^12 .. 2^16, 64 .. 32768 slots);
* plus 12 sqrt(2 n N) / Delta: the input's own error and SlotToCoeff's final rounding onto Delta.
"""
import time

import numpy as np
import pytest

import ember
from ember.precision import INPUT_SHAPES, input_shape

BOOT = dict(log_n=12, levels=2, slots=16, insecure=True)


# ---- the canonical embedding of the n-slot subring (independent of the encoder) ----------------------------------
# z_j = sum_{k<n} w_k rho_j^k, w_k = c_k + i c_{k+n}, rho_j = exp(i pi 5^j / 2n). The 5^j mod 4n run over
# a = 4m + 1, so with zp[m] = z_j for 5^j = 4m + 1: w_k = exp(-i pi k / 2n) fft(zp)_k / n.

def _perm(n):
    g = np.array([pow(5, j, 4 * n) for j in range(n)])
    return (g - 1) // 4  # m of every slot j


def message_coeffs(z):
    n = len(z)
    zp = np.empty(n, complex)
    zp[_perm(n)] = z
    w = np.exp(-1j * np.pi * np.arange(n) / (2 * n)) * np.fft.fft(zp) / n
    return np.concatenate([w.real, w.imag])


def message_slots(c):
    n = len(c) // 2
    w = c[:n] + 1j * c[n:]
    zp = n * np.fft.ifft(w * np.exp(1j * np.pi * np.arange(n) / (2 * n)))
    return zp[_perm(n)]


def boot_model(ctx, z, in_scale):
    """(expected = z + E(z), max |E|, noise bound) for bootstrapping a ciphertext of message z on in_scale."""
    p, cfg = ctx.params, ctx.params.bootstrap_config
    N, n, q0 = 2 ** p.log_n, len(z), float(p.q_primes[0])
    ratio = 2.0 ** cfg.message_ratio_bits
    delta0 = round(q0 / (ratio * in_scale)) * in_scale
    s = np.sin(2 * np.pi * message_coeffs(np.asarray(z, complex)) * delta0 / q0)
    if cfg.arcsin:
        v = np.polynomial.chebyshev.chebval(s / cfg.sine_bound(), cfg.arcsin_coefficients())
    else:
        v = s / (2 * np.pi)
    expected = message_slots((q0 / delta0) * v)
    C = 16 * np.pi * cfg.k_range * 2.0 ** cfg.double_angles
    noise = C * ratio * np.sqrt(2 * n) * np.sqrt(N / 18) * np.sqrt(min(4 * n, N)) * 2.0 ** -60
    floor = 12 * np.sqrt(2 * n * N) / ctx.scale_at(ctx.user_level)
    return expected, np.abs(expected - z).max(), noise + floor


def err(got, want):
    return np.abs(np.asarray(got) - np.asarray(want)).max()


def test_embedding_inverts_and_matches_the_encoder():
    rng = np.random.default_rng(0)
    for n in (2, 16, 512):
        z = rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)
        assert err(message_slots(message_coeffs(z)), z) < 1e-13
    # a constant vector is the polynomial c_0 + c_n X^(N/2) (X^(N/2) is i in every slot)
    assert np.allclose(message_coeffs(np.full(8, 1 + 2j)), [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0])


@pytest.fixture(scope="module")
def boot():
    ctx = ember.Context(ember.CkksParams.bootstrappable(**BOOT), threads=2)
    return ctx, ctx.keygen(bootstrapping=True)


def test_bootstrap_after_products(boot):
    ctx, keys = boot
    assert ctx.user_level == 2 and ctx.max_level > ctx.user_level
    n = BOOT["slots"]
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1, 1, (2, n))
    cx, cy = ctx.encrypt(x, keys.public), ctx.encrypt(y, keys.public)
    p = (cx * cy) * cx
    assert p.level == 0
    before = ctx.decrypt(p, keys.secret)
    # before bootstrapping: the fresh errors (4 units each) and two products' roundings (8 units each),
    # |x|, |y| <= 1: 16 units after x y, 28 after x y x; unit sqrt(2 n N) / Delta for n decoded slots
    unit = np.sqrt(2 * n * 2 ** ctx.params.log_n) / 2.0 ** ctx.params.log_scale
    assert err(before, x * x * y) < 28 * unit

    t = time.perf_counter()
    out = p.bootstrap()
    elapsed = time.perf_counter() - t
    assert out.level == ctx.user_level
    assert out.scale == ctx.scale_at(ctx.user_level)
    assert out.slots == n
    after = ctx.decrypt(out, keys.secret)
    expected, det, bound = boot_model(ctx, before, p.scale)
    print(f"bootstrap {n} slots: {elapsed:.3f} s; against before + E: 2^{np.log2(err(after, expected)):.2f} "
          f"(bound 2^{np.log2(bound):.2f}); precision 2^{np.log2(err(after, x * x * y)):.2f} (max |E| 2^{np.log2(det):.2f})")
    assert err(after, expected) < bound
    assert err(after, x * x * y) < det + bound + 28 * unit

    # ctx.bootstrap is the same operation
    fresh = ctx.bootstrap(cx)
    assert fresh.level == ctx.user_level
    expected_x, det_x, bound_x = boot_model(ctx, x, cx.scale)
    assert err(ctx.decrypt(fresh, keys.secret), expected_x) < bound_x

    # the refreshed ciphertext multiplies again: the tensor product decrypts to after^2 exactly, the
    # relinearization and rescale add one rounding term (8 units at the scale of level 1)
    sq = out * out
    assert sq.level == ctx.user_level - 1
    unit1 = np.sqrt(2 * n * 2 ** ctx.params.log_n) / ctx.scale_at(sq.level)
    assert err(ctx.decrypt(sq, keys.secret), after * after) < 8 * unit1
    d = err(after, x * x * y)
    assert err(ctx.decrypt(sq, keys.secret), (x * x * y) ** 2) < d * (2 + d) + 8 * unit1
    both = out * fresh
    assert err(ctx.decrypt(both, keys.secret), after * ctx.decrypt(fresh, keys.secret)) < 8 * unit1


def test_bootstrap_key_info(boot):
    ctx, keys = boot
    info = ctx.bootstrap_key_info
    assert set(info) == {"rotation_keys", "key_bytes", "key_bytes_compressed"}
    assert all(isinstance(v, int) and v > 0 for v in info.values())
    assert info["key_bytes_compressed"] < info["key_bytes"]
    # exactly the bootstrapper's rotations plus conjugation
    assert info["rotation_keys"] == len(ctx.bootstrapper().rotations) + 1
    assert len(keys.galois.elements) == info["rotation_keys"]
    # unseeded keys do not compress
    other = ember.Context(ember.CkksParams.bootstrappable(**BOOT), threads=2)
    other.keygen(bootstrapping=True, seeded=False)
    plain = other.bootstrap_key_info
    assert plain["key_bytes_compressed"] == plain["key_bytes"] == info["key_bytes"]


def test_errors(boot, small):
    ctx, keys = boot
    # a context from plain CkksParams cannot bootstrap
    sctx, skeys = small
    sct = sctx.encrypt(np.zeros(16), skeys.public)
    with pytest.raises(ValueError, match="cannot bootstrap"):
        sctx.bootstrap(sct)
    with pytest.raises(ValueError, match="cannot bootstrap"):
        sct.bootstrap()
    with pytest.raises(ValueError, match="keygen"):
        sctx.bootstrap_key_info
    # a bootstrappable context before keygen(bootstrapping=True)
    fresh = ember.Context(ember.CkksParams.bootstrappable(**BOOT), threads=1)
    fkeys = fresh.keygen()
    with pytest.raises(ValueError, match=r"keygen\(bootstrapping=True\)"):
        fresh.bootstrap(fresh.encrypt(np.zeros(16), fkeys.public))
    with pytest.raises(ValueError, match=r"keygen\(bootstrapping=True\)"):
        fresh.bootstrap_key_info
    # options
    with pytest.raises(ValueError, match="unknown option 'no_such_option'"):
        ember.CkksParams.bootstrappable(**BOOT, no_such_option=1)
    with pytest.raises(ValueError, match="unknown option"):
        ember.CkksParams.bootstrappable(**BOOT, evalmod_depth=3)  # a method of the configuration, not a field
    with pytest.raises(ValueError, match="secret"):
        ember.CkksParams.bootstrappable(**BOOT, secret="dense")
    with pytest.raises(ValueError, match="message_ratio_bits"):
        ember.CkksParams.bootstrappable(**BOOT, message_ratio_bits=1)
    # N = 2^12 cannot hold the bootstrapping chain at 128 bits
    with pytest.raises(ValueError, match="128-bit"):
        ember.CkksParams.bootstrappable(log_n=12, levels=2)
    # the ciphertext must pack the bootstrapper's slot count
    with pytest.raises(ValueError, match="8 slots"):
        ctx.encrypt(np.zeros(8), keys.public).bootstrap()
    with pytest.raises(TypeError):
        ctx.bootstrap(np.zeros(16))


def test_dnum_may_use_the_bootstrapping_primes():
    # 19 primes in Q (3 user + 16 bootstrapping): dnum = 5 is a valid partition
    p = ember.CkksParams.bootstrappable(**BOOT, dnum=5)
    assert p.dnum == 5


def test_insecure_refusal_names_log_qp():
    with pytest.raises(ValueError, match="exceeds the 128-bit security bound"):
        ember.CkksParams.bootstrappable(log_n=12, levels=2)


# ---- every input shape, against a bound derived from the parameters ----------------------------------------------

def _battery(ctx, keys, shapes=None, iterations=1):
    """(shape, stats, bound) for every input shape, each a fresh encryption at level 0 bootstrapped."""
    p, cfg = ctx.params, ctx.params.bootstrap_config
    rng = np.random.default_rng(7)
    out = []
    for name in shapes or INPUT_SHAPES:
        z = input_shape(name, ctx.slots, rng)
        ct = ctx.encrypt(z, keys.public, level=0)
        got = ctx.decrypt(ct.bootstrap(iterations=iterations), keys.secret)
        _, _, noise = boot_model(ctx, z, ct.scale)
        out.append((name, ember.precision(z, got), noise + cfg.approx_error()))
    return out


@pytest.fixture(scope="module")
def full13():
    """N = 2^13, all 4096 slots, the default bootstrapping configuration (insecure: a small ring)."""
    ctx = ember.Context(ember.CkksParams.bootstrappable(log_n=13, levels=3, insecure=True), threads=2)
    return ctx, ctx.keygen(bootstrapping=True)


def test_every_input_shape_within_the_derived_bound(full13):
    """Uniform real / complex, [0, 1], constants +-0.99 (and complex), alternating signs (real, and
    +-(1 + i), the largest coefficient sqrt(2) slots in [-1, 1]^2 can give), isolated spikes, zeros: each
    within the noise model plus the configuration's worst-case EvalMod error (approx_error(), for every
    coefficient up to input_bound = sqrt 2). The old automatic ratio (R = 3 with a cubic arcsine) gave 5
    bits on constants at N = 2^16."""
    ctx, keys = full13
    cfg = ctx.params.bootstrap_config
    assert cfg.input_bound == pytest.approx(np.sqrt(2))
    assert cfg.approx_error() < 2.0 ** -30  # the configuration's own worst case, float64
    results = _battery(ctx, keys)
    for name, stats, bound in results:
        print(f"{name:20s} {stats}  (bound {-np.log2(bound):.2f} bits)")
        assert stats.max_error < bound, name
    assert min(s.min_bits for _, s, _ in results) > 26  # measured 28.7-29.5 at this ring


def test_inputs_beyond_the_bound_are_the_documented_failure(full13):
    """Slots at 4 + 4i put coefficients far outside input_bound: EvalMod's interval is left and the
    result is wrong, as the docstring says (a check that the bound is real, not a promise)."""
    ctx, keys = full13
    z = np.full(ctx.slots, 4 + 4j)
    got = ctx.decrypt(ctx.encrypt(z, keys.public, level=0).bootstrap(), keys.secret)
    # the guarantee inside the box is > 26 bits here (test above); beyond it the arcsine is extrapolated:
    # 10.5 bits at R = 5 (the automatic ratio of this ring with the default degrees), below 10 at R = 4
    assert ember.precision(z, got).min_bits < 15


def test_iterative_bootstrapping_gains_precision():
    """iterations=2 (META-BTS): the residual, scaled by 2^20, bootstrapped again. With 2^55 user primes at
    N = 2^13 the input's own rounding is ~2^-42, so the one-pass error (~2^-30) is what the second pass
    removes."""
    ctx = ember.Context(ember.CkksParams.bootstrappable(log_n=13, levels=2, log_scale=55, insecure=True), threads=2)
    keys = ctx.keygen(bootstrapping=True)
    rng = np.random.default_rng(3)
    for name in ("uniform_complex", "const", "alternating_complex"):
        z = input_shape(name, ctx.slots, rng)
        ct = ctx.encrypt(z, keys.public, level=0)
        one = ember.precision(z, ctx.decrypt(ct.bootstrap(), keys.secret))
        out = ct.bootstrap(iterations=2)
        two = ember.precision(z, ctx.decrypt(out, keys.secret))
        print(f"{name}: one pass {one.min_bits:.2f} bits, two passes {two.min_bits:.2f} bits (scale 2^{np.log2(out.scale):.1f})")
        assert out.level == ctx.user_level
        assert out.scale == pytest.approx(ctx.scale_at(ctx.user_level) * 2.0 ** 20)
        assert two.min_bits > one.min_bits + 6
    with pytest.raises(ValueError, match="iterations"):
        ct.bootstrap(iterations=3)


@pytest.mark.slow
def test_every_input_shape_n16():
    """The battery at N = 2^16, 2^15 slots, the 128-bit default: >= 25 bits for every shape."""
    params = ember.CkksParams.bootstrappable(log_n=16)
    ctx = ember.Context(params, threads=2)
    keys = ctx.keygen(bootstrapping=True)
    results = _battery(ctx, keys)
    for name, stats, bound in results:
        print(f"{name:20s} {stats}  (bound {-np.log2(bound):.2f} bits)")
        assert stats.max_error < bound, name
        assert stats.min_bits >= 25, name


@pytest.mark.slow
def test_full_slots_n16():
    """N = 2^16, all 32768 slots, the default configuration (scale 2^44, R = 4, ternary secret at 128 bits).
    At 2^40 the output's own rounding (~2^-23.5 for any fresh ciphertext at N = 2^16) would already be below
    25 bits, hence the 2^44 default (26.3 to 26.5 bits measured)."""
    params = ember.CkksParams.bootstrappable(log_n=16)
    assert not params.insecure and params.secret == "ternary"
    ctx = ember.Context(params, threads=2)
    t = time.perf_counter()
    keys = ctx.keygen(bootstrapping=True)
    t_keys = time.perf_counter() - t
    rng = np.random.default_rng(16)
    z = rng.uniform(-1, 1, ctx.slots) + 1j * rng.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(z, keys.public)
    t = time.perf_counter()
    out = ct.bootstrap()
    t_boot = time.perf_counter() - t
    assert out.level == ctx.user_level and out.scale == ctx.scale_at(ctx.user_level)
    got = ctx.decrypt(out, keys.secret)
    expected, det, bound = boot_model(ctx, z, ct.scale)
    bits = -np.log2(err(got, z))
    print(f"N = 2^16 full slots ({params!r}, R = {params.bootstrap_config.message_ratio_bits}): keygen {t_keys:.1f} s, "
          f"bootstrap {t_boot:.1f} s, precision {bits:.2f} bits, against z + E 2^{np.log2(err(got, expected)):.2f} "
          f"(model bound 2^{np.log2(bound):.2f}, max |E| 2^{np.log2(det):.2f})")
    assert bits >= 25
    assert err(got, expected) < bound


def test_bootstrap_keys_save_and_load_one_by_one(tmp_path):
    """Keys written one file per key load into a fresh context and bootstrap there; bad files are refused."""
    params = ember.CkksParams.bootstrappable(**BOOT)
    ctx = ember.Context(params, threads=2)
    keys = ctx.keygen(bootstrapping=True)
    names = ctx.save_bootstrap_keys(tmp_path)
    info = ctx.bootstrap_key_info
    assert "relin.key" in names and "from_sparse.key" in names
    assert sum(n.startswith("galois-") for n in names) == info["rotation_keys"]
    # seeded keys are written compressed: together below the expanded size
    assert sum((tmp_path / n).stat().st_size for n in names) < info["key_bytes"]
    rng = np.random.default_rng(5)
    z = rng.uniform(-1, 1, 16)
    ct_bytes = ctx.encrypt(z, keys.public, level=0).to_bytes()
    sk_bytes = keys.secret.to_bytes(export_secret=True)

    ctx2 = ember.Context(params, threads=2)
    ctx2.load_bootstrap_keys(tmp_path)
    assert ctx2.bootstrap_key_info == info
    out = ember.Ciphertext.from_bytes(ctx2, ct_bytes).bootstrap()
    got = out.decrypt(ember.SecretKey.from_bytes(ctx2, sk_bytes)).real
    assert out.level == ctx2.user_level
    assert np.abs(got - z).max() < 2.0 ** -12  # a working bootstrap (the precision is tested above)

    # a corrupted key file is a ValueError, not a crash
    bad = tmp_path / names[-2]
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        ember.Context(params, threads=2).load_bootstrap_keys(tmp_path)
    with pytest.raises(ValueError, match="relin.key"):
        ctx2.load_bootstrap_keys(tmp_path / "nowhere")


@pytest.mark.slow
def test_iterative_forty_bits_n16():
    """The README's 40-bit recipe at N = 2^16, 128-bit: a 61-bit q0 holds a 2^57 input (R = 4), two passes
    bring EvalMod's ~2^-26.6 error down to the rounding of the message itself (40.1 to 40.5 bits measured
    against the decrypted input; the float64 vector is ~40.4 bits away from what the encoder stores)."""
    params = ember.CkksParams.bootstrappable(log_n=16, levels=6, log_scale=57, first_mod_bits=61)
    assert not params.insecure and params.first_mod_bits == 61
    ctx = ember.Context(params, threads=2)
    keys = ctx.keygen(bootstrapping=True)
    rng = np.random.default_rng(40)
    for name in ("uniform_complex", "const"):
        z = input_shape(name, ctx.slots, rng)
        ct = ctx.encrypt(z, keys.public, level=0)
        m = ctx.decrypt(ct, keys.secret)
        two = ember.precision(m, ctx.decrypt(ct.bootstrap(iterations=2), keys.secret))
        print(f"{name}: two passes {two.min_bits:.2f} bits against the encrypted message")
        assert two.min_bits >= 40, name


@pytest.mark.parametrize("log_n, options", [(16, {}), (16, {"message_ratio_bits": 8}), (13, {"insecure": True, "levels": 3}),
                                            (16, {"slots": 2 ** 10})])
def test_automatic_sine_degree(log_n, options):
    """cheb_degree = 0 (default) resolves to the lowest odd degree of depth 7 whose worst-case EvalMod error
    (float64, approx_error) is within 0.05 bit of degree 127's at the chosen R; the degree below it is
    not (so the search did not stop early); a fixed degree is kept."""
    cfg = ember.CkksParams.bootstrappable(log_n=log_n, **options).bootstrap_config
    d = cfg.cheb_degree
    assert 65 <= d <= 127 and d % 2 == 1
    best = ember.CkksParams.bootstrappable(log_n=log_n, cheb_degree=127, message_ratio_bits=cfg.message_ratio_bits,
                                           **{k: v for k, v in options.items() if k != "message_ratio_bits"}).bootstrap_config
    assert cfg.approx_error() <= best.approx_error() * 2 ** 0.05
    if d > 65:
        lower = ember.CkksParams.bootstrappable(log_n=log_n, cheb_degree=d - 2, message_ratio_bits=cfg.message_ratio_bits,
                                                **{k: v for k, v in options.items() if k != "message_ratio_bits"}).bootstrap_config
        assert lower.approx_error() > best.approx_error() * 2 ** 0.05
    assert ember.CkksParams.bootstrappable(log_n=log_n, cheb_degree=119, **options).bootstrap_config.cheb_degree == 119
