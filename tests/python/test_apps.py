"""Applications (ember.apps): encrypted HELR training against the same algorithm in float64, the LoLa-style
CNN against its numpy forward pass. Small rings (N = 2^12, insecure) in the default suite; the full demos at
N = 2^16 / 2^14 are behind the slow marker."""
import json
import subprocess
import sys

import numpy as np
import pytest

import ember

from ember.apps import cnn, datasets
from ember.apps.logreg import (EncryptedLogisticRegression, Float64LogisticRegression, Packing, Scaler,
                               encrypted_iteration, float64_iteration, nesterov_schedule, sigmoid_poly,
                               sigmoid_poly_error, train_encrypted)


# ---- logistic regression ---------------------------------------------------------------------------------------
def test_sklearn_submodule_errors():
    """A submodule scikit-learn does not have is named as such, not reported as scikit-learn missing."""
    assert datasets.sklearn("linear_model").LogisticRegression is not None
    with pytest.raises(ModuleNotFoundError, match="scikit-learn has no module 'sklearn.no_such_part'"):
        datasets.sklearn("no_such_part")


def test_sigmoid_poly_is_helr_cubic():
    c = sigmoid_poly(3, 8.0)
    # HELR's least-squares cubic on [-8, 8]: 0.5 + 0.15 x - 0.0016 x^3, max error ~0.11 on the interval
    assert c[0] == 0.5 and c[2] == 0.0
    assert abs(c[1] - 0.150094) < 1e-4 and abs(c[3] + 0.00159204) < 1e-6
    assert 0.10 < sigmoid_poly_error(c, 8.0) < 0.12
    with pytest.raises(ValueError, match="odd"):
        sigmoid_poly(2)


def test_packing_roundtrip_and_errors():
    p = Packing(slots=2048, features=31, samples=100)
    assert (p.F, p.R, p.ciphertexts) == (32, 64, 1)
    w = np.arange(31) / 31.0
    assert np.allclose(p.unpack_weights(p.pack_weights(w)), w)
    with pytest.raises(ValueError, match="expected"):
        p.pack_batch(np.zeros((99, 31)))
    with pytest.raises(ValueError, match="more than"):
        Packing(slots=16, features=31, samples=1).R
    with pytest.raises(ValueError, match="lanes"):
        Packing(slots=64, features=3, samples=200).lanes    # 25 ciphertexts of 2 x 16 rows, rows of 4 columns
    # the layouts: inner-product vector c holds pair r's features from slot r F + c on (wrapping into row r + 1);
    # gradient vector k holds, at (r, j), feature j of the pair that the lane rotation by k brings there
    q = Packing(slots=32, features=4, samples=40)           # F = 4, R = 8, 3 ciphertexts, 4 lanes
    Z = np.arange(1, 161, dtype=float).reshape(40, 4)
    vecs = q.pack_batch(Z)
    assert len(vecs) == q.vectors == 7
    pairs = np.zeros((4, 8, 4), complex)
    for i in range(40):
        g, r = divmod(i, 8)
        pairs[g // 2, r] += Z[i] * (1j if g % 2 else 1)
    for c in range(3):
        for r in range(8):
            window = np.roll(vecs[c], -(r * 4 + c))[:4]
            assert np.allclose(sorted(window, key=lambda z: (z.real, z.imag)),
                               sorted(pairs[c, r], key=lambda z: (z.real, z.imag)))
            assert np.allclose(window, np.roll(pairs[c, r], -c))  # feature (slot mod F) of pair r
    for k in range(4):
        g = vecs[3 + k].reshape(8, 4)
        for r in range(8):
            for j in range(4):
                rr = (r + (j + k >= 4)) % 8
                assert g[r, j] == pairs[(j + k) % 4, rr, j]


def _bc_batch(n):
    X, y = datasets.breast_cancer()
    Xs = Scaler().fit(X).transform(X)
    return (np.where(y == 1, 1.0, -1.0)[:, None] * Xs)[:n]


@pytest.mark.parametrize("samples,lanes", [(200, 2), (300, 4)])
def test_encrypted_iterations_match_float64(samples, lanes):
    """Three Nesterov iterations on ciphertexts (N = 2^12, scale 2^40; 200 samples x 31 features: two
    ciphertexts of 2 x 64 rows, the real and imaginary halves; 300 samples: three, and a fourth, empty, lane)
    against the float64 recurrence on the same batch: |w - w64| <= 1e-4 (the CKKS error, ~2^-25 per
    operation, grown by the 256-term sums and three steps)."""
    params = ember.CkksParams(log_n=12, levels=13, log_scale=40, first_mod_bits=50, dnum=3, insecure=True)
    ctx = ember.Context(params, threads=2)
    Z = _bc_batch(samples)
    pk = Packing(ctx.slots, Z.shape[1], len(Z))
    assert pk.lanes == lanes and pk.vectors == pk.ciphertexts + lanes
    keys = ctx.keygen(rotations=pk.rotations(), conjugation=True)
    coeffs = sigmoid_poly(3, 16.0)
    sched = nesterov_schedule(3, 1.0, 0.3)
    Zc = [ctx.encrypt(vec, keys.public) for vec in pk.pack_batch(Z)]
    w0 = np.full(Z.shape[1], 0.05)                      # a non-zero start: every term of the update matters
    v = ctx.encrypt(pk.pack_weights(w0), keys.public)
    w = ctx.encrypt(pk.pack_weights(w0), keys.public)
    v64, w64 = w0.copy(), w0.copy()
    for alpha, eta in sched:
        v, w = encrypted_iteration(v, w, Zc, len(Z), pk, coeffs, alpha, eta)
        v64, w64 = float64_iteration(v64, w64, Z, coeffs, alpha, eta)
        assert np.abs(pk.unpack_weights(ctx.decrypt(w, keys.secret)) - w64).max() <= 1e-4
        assert np.abs(pk.unpack_weights(ctx.decrypt(v, keys.secret)) - v64).max() <= 1e-4
    assert np.abs(w64).max() > 0.1                      # the step moved the weights


def test_training_with_bootstrapping_matches_float64():
    """scikit-learn-style fit at N = 2^12 (insecure) with one bootstrapping of (v + i w) / B in three iterations:
    the decrypted weights within 1e-2 of the float64 run on the same batches (bootstrapping at N = 2^12 keeps
    ~15 bits of B = 8), the same predictions on >= 99% of the samples."""
    X, y = datasets.breast_cancer()
    X, y = X[:256], y[:256]
    kw = dict(iterations=3, learning_rate=1.0, decay=0.3, sigmoid_interval=16.0)
    enc = EncryptedLogisticRegression(**kw, log_n=12, insecure=True).fit(X, y)
    assert enc.log_.bootstraps == 1 and enc.log_.iterations == 3
    ref = Float64LogisticRegression(**kw).fit(X, y, capacity=2 * enc.packing_.R)
    assert np.abs(enc.weights_ - ref.weights_).max() <= 1e-2
    assert np.mean(enc.predict(X) == ref.predict(X)) >= 0.99
    proba = enc.predict_proba(X)
    assert proba.shape == (256, 2) and np.allclose(proba.sum(1), 1.0)
    assert set(np.unique(enc.predict(X))) <= {0, 1}
    assert enc.score(X, y) > 0.85


def test_training_without_bootstrapping_makes_no_bootstrapping_keys():
    """Two iterations fit in 9 levels: the data owner makes no bootstrapping keys (at N = 2^16 they are ~38 s and
    ~9 GB) and the training bootstraps nothing; from three iterations on it bootstraps, and makes them."""
    from ember.apps.logreg import DataOwner
    from ember.graph.programs.logreg import bootstraps_needed
    X, y = datasets.breast_cancer()
    X, y = X[:128], y[:128]
    enc = EncryptedLogisticRegression(iterations=2, learning_rate=1.0, log_n=12, insecure=True, threads=1).fit(X, y)
    assert enc.log_.bootstraps == 0 and enc.log_.iterations == 2
    assert [bootstraps_needed(9, t) for t in range(1, 7)] == [False, False, True, True, True, True]
    owners = {t: DataOwner(enc.packing_, log_n=12, levels=9, threads=1, insecure=True, iterations=t) for t in (2, 3)}
    assert owners[2].ctx.user_level == 9
    assert not owners[2].bootstrapping and owners[3].bootstrapping
    assert DataOwner(enc.packing_, log_n=12, levels=9, threads=1, insecure=True).bootstrapping  # unknown: made


def test_lr_errors():
    with pytest.raises(ValueError, match="binary"):
        Float64LogisticRegression().fit(np.zeros((6, 2)) + np.arange(6)[:, None], [0, 1, 2, 0, 1, 2])
    # training refuses to run out of levels instead of returning garbage
    params = ember.CkksParams(log_n=12, levels=3, log_scale=40, first_mod_bits=50, dnum=2, insecure=True)
    ctx = ember.Context(params, threads=2)
    Z = _bc_batch(64)
    pk = Packing(ctx.slots, Z.shape[1], len(Z))
    keys = ctx.keygen(rotations=pk.rotations(), conjugation=True)
    v = ctx.encrypt(pk.pack_weights(np.zeros(31)), keys.public)
    Zc = [ctx.encrypt(vec, keys.public) for vec in pk.pack_batch(Z)]
    with pytest.raises(ValueError, match="level"):
        train_encrypted(v, v, [Zc], [64], pk, sigmoid_poly(3), nesterov_schedule(2, 1.0), 8.0)


# ---- CNN ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cnn_model():
    X, y = datasets.digits()
    Xs = cnn.scale_input(X)
    return cnn.train(Xs[:400], y[:400], epochs=3, seed=0), Xs[400:]


@pytest.mark.parametrize("batch,baby", [(1, 1), (2, 4)])
def test_encrypted_cnn_matches_numpy(cnn_model, batch, baby):
    """The LoLa-style forward pass on ciphertexts (N = 2^12: 4 replicas / image at batch 1, 2 at batch 2; plain
    and baby-step giant-step dense layer) against plain_forward: logits within 1e-2 (five 36-bit levels; the
    logits are O(10)), identical predictions."""
    model, Xte = cnn_model
    ctx = cnn.make_context(2, log_n=12, insecure=True, dnum=2)
    layout = cnn.Layout(ctx.slots, batch=batch)
    keys = ctx.keygen(rotations=layout.rotations(baby))
    em = cnn.EncryptedModel(ctx, model, layout, baby=baby)
    X = Xte[:batch]
    out = cnn.encrypted_forward(em, ctx.encrypt(layout.encode_images(X), keys.public))
    got = layout.decode_logits(ctx.decrypt(out, keys.secret), batch)
    ref = cnn.plain_forward(model, X)
    assert np.abs(got - ref).max() <= 1e-2 * max(1.0, np.abs(ref).max())
    assert (got.argmax(1) == ref.argmax(1)).all()


def test_cnn_conv_layer_matches_numpy(cnn_model):
    """The convolution representation alone: rotate_many of the 9 kernel offsets and plaintext weights gives
    conv_k(y, x) at slot 10 + 64 k + 8 y + x, equal to numpy's patches @ wc within 1e-4."""
    model, Xte = cnn_model
    ctx = cnn.make_context(2, log_n=12, insecure=True, dnum=2)
    layout = cnn.Layout(ctx.slots, batch=1)
    keys = ctx.keygen(rotations=layout.rotations())
    em = cnn.EncryptedModel(ctx, model, layout)
    x = ctx.encrypt(layout.encode_images(Xte[:1]), keys.public)
    shifted = [x] + x.rotate_many(cnn.OFFSETS[1:])
    conv = sum((xj * em.wconv[j] for j, xj in enumerate(shifted[1:], 1)), shifted[0] * em.wconv[0]) + em.bconv
    got = ctx.decrypt(conv, keys.secret).real[:cnn.BLOCK][layout.conv_positions()]   # (K, 6, 6)
    ref = cnn.plain_forward(model, Xte[:1], return_all=True)[1]["c"][0]                # (36, K)
    assert np.abs(got.reshape(cnn.K_MAPS, 36).T - ref).max() <= 1e-4


def test_cnn_layout_errors():
    with pytest.raises(ValueError, match="divide"):
        cnn.Layout(2048, batch=3)
    with pytest.raises(ValueError, match="batch"):
        cnn.Layout(2048, batch=1).encode_images(np.zeros((2, 64)))


# ---- CLI ---------------------------------------------------------------------------------------------------------
def test_demo_cli_json_fields():
    r = subprocess.run([sys.executable, "-m", "ember", "demo", "lr", "--log-n", "12", "--insecure", "--iterations",
                        "3", "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    for k in ("dataset", "samples", "features", "iterations", "bootstraps", "accuracy_encrypted", "accuracy_float64",
              "accuracy_sklearn", "auc_encrypted", "auc_float64", "seconds_per_iteration"):
        assert k in rec, k
    assert rec["dataset"] == "breast-cancer" and rec["iterations"] == 3 and rec["bootstraps"] == 1
    assert abs(rec["accuracy_encrypted"] - rec["accuracy_float64"]) <= 0.02


@pytest.mark.slow
def test_demo_lr_full():
    r = subprocess.run([sys.executable, "-m", "ember", "demo", "lr", "--json"], capture_output=True, text=True)
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert abs(rec["accuracy_encrypted"] - rec["accuracy_float64"]) <= 0.01
    assert abs(rec["auc_encrypted"] - rec["auc_float64"]) <= 0.01


@pytest.mark.slow
def test_demo_cnn_full():
    r = subprocess.run([sys.executable, "-m", "ember", "demo", "cnn", "--json"], capture_output=True, text=True)
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert rec["agreement"] >= 0.99
    assert abs(rec["accuracy_encrypted"] - rec["accuracy_plain"]) <= 0.005


# ---- graphs (symbolic) -------------------------------------------------------------------------------------------
def test_resnet_graph_counts_match_structure():
    """ResNet-20's structure (stages of 4, 8, 16 channels here, N = 2^14 symbolic, to stay seconds; the full
    16/32/64 at N = 2^16 is the slow test): bootstraps (one mod_raise each) = ReLUs - 1 = 18, one hoisted
    rotate_many per 3x3 convolution, rotations = channel diagonals + pool + dense, plaintext products = 9c per
    3x3 convolution + c per 1x1 + identity shortcuts + dense + bootstrapping's own (2 each at these params)."""
    from ember.apps import graphs
    stages = (4, 8, 16)
    g = graphs.resnet20(log_n=14, insecure=True, stages=stages)
    e = graphs.resnet20_expected(stages)
    c = g.op_counts()
    boot = graphs.resnet20(log_n=14, insecure=True, stages=stages, blocks=0).op_counts()   # stem only
    assert e["bootstraps"] == 18 and e["relus"] == 19
    assert c["mod_raise"] == e["bootstraps"]
    assert c["rotate_many"] == e["rotate_many"] == 19
    assert c["rotate"] == e["channel_rotations"] + e["pool_rotations"] + e["dense_rotations"]
    per_boot_mul_plain = 2
    assert c["mul_plain"] == (e["conv_mul_plain"] + e["identity_shortcuts"] + e["dense_mul_plain"]
                              + per_boot_mul_plain * e["bootstraps"])
    assert boot.get("mod_raise", 0) == 0                        # the stem runs on the fresh levels
    with pytest.raises(ValueError, match="levels"):
        graphs.resnet20(log_n=13, levels=9, insecure=True)
    with pytest.raises(ValueError, match="unknown program"):
        graphs.graph_of("vgg")


def test_lola_graphs():
    from ember.apps import graphs
    g = graphs.graph_of("lola-mnist", log_n=12, insecure=True)
    c = g.op_counts()
    assert c["rotate_many"] == 2 and c["mul"] == 1 + 8   # conv and baby steps hoisted; conv square, 8 pass squares
    g = graphs.graph_of("lola-cifar", log_n=13, insecure=True)
    assert g.op_counts()["rotate_many"] == 1 and len(g) > 500


def _helr_minus_bootstrap(g, log_n):
    """Op counts of the HELR graph less those of one bootstrapping captured alone at the same parameters (one
    ModRaise each: the difference has none)."""
    from ember.apps.logreg import training_params
    from ember.graph import capture_program
    params = training_params(log_n, 9, insecure=log_n < 16)
    boot = capture_program(lambda ctx, keys: ctx.encrypt(np.zeros(ctx.slots), keys.public, level=0).bootstrap(),
                           params, bootstrapping=True).op_counts()
    c = g.op_counts()
    assert boot["mod_raise"] == 1
    return {op: c.get(op, 0) - boot.get(op, 0) for op in set(c) | set(boot)}


@pytest.mark.parametrize("log_n,samples,ciphertexts,lanes", [(13, 128, 4, 4), (13, 96, 3, 4),
                                                              pytest.param(16, 1024, 4, 4, marks=pytest.mark.slow)])
def test_helr_graph_counts_match_app(log_n, samples, ciphertexts, lanes):
    """graph_of("helr"): train_encrypted's cycle at the app's default levels (9: two iterations per
    bootstrapping), captured symbolically. Less one bootstrapping captured alone (the app's parameters, no
    arcsine), the counts are the app's arithmetic (ember.apps.logreg docstring) for 2 iterations: per iteration
    C log2 F + log2(F/Q) + log2 R rotations (45 at HELR's 1024 x 256, N = 2^16), one rotate_many of Q - 1
    (3), 2C ciphertext products and C + 1 sums of products (mul_sum: S^2 + 3 conj(S)^2 per ciphertext, the Q
    lanes' products), C + 1 conjugations; one conjugation more to unpack; one mod_raise (the bootstrapping). 256 features at N = 2^13 (R = 16 rows) keep the small cases' C and Q; HELR's own shape at
    N = 2^16 (5 s of capture) is the slow case."""
    from ember.apps import graphs
    from ember.apps.logreg import LEVELS_PER_ITERATION, Packing
    g = graphs.graph_of("helr", log_n=log_n, samples=samples, insecure=log_n < 16)
    pk = Packing(1 << (log_n - 1), 256, samples)
    assert (pk.ciphertexts, pk.lanes) == (ciphertexts, lanes)
    e = graphs.helr_expected(pk)
    it = g.meta["helr"]["iterations"]
    assert it == 1 + (9 - LEVELS_PER_ITERATION - 1) // LEVELS_PER_ITERATION == 2
    if (log_n, samples) == (16, 1024):
        assert e["rotations_per_iteration"] == 45 and e["hoisted_per_iteration"] == 3     # README's HELR figures
        assert g.meta["params"]["dnum"] == 3
    assert g.op_counts()["mod_raise"] == e["bootstraps"] == 1          # one ModRaise per bootstrapping
    d = _helr_minus_bootstrap(g, log_n)
    assert d["rotate"] == it * e["rotations_per_iteration"]
    assert d["rotate_many"] == it * e["rotate_many_per_iteration"]
    hoisted = [len(n.outputs) for n in g.nodes if n.op == "rotate_many"]
    assert hoisted == [e["hoisted_per_iteration"]] * it
    assert d["mul"] == it * e["products_per_iteration"]
    assert d["mul_sum"] == it * e["product_sums_per_iteration"]
    assert d["conjugate"] == it * e["conjugations_per_iteration"] + e["unpack_conjugations"]
    assert len(g.outputs) == 1


def test_helr_expected_counts_hold_with_and_without_momentum():
    """helr_expected took a `momentum` flag it never used (any value gave the same counts): the flag is gone, and
    the counts are those of the captured cycle both from t = 0 (eta_0 = 0: the first iteration has no momentum
    terms) and from t = 2 (the steady state): the momentum adds products by constants and additions only."""
    import inspect

    from ember.apps import graphs
    from ember.apps.logreg import Packing
    assert list(inspect.signature(graphs.helr_expected).parameters) == ["packing"]
    pk = Packing(1 << 12, 256, 96)
    e = graphs.helr_expected(pk)
    for start in (0, 2):
        g = graphs.helr(log_n=13, samples=96, insecure=True, start=start)
        it = g.meta["helr"]["iterations"]
        d = _helr_minus_bootstrap(g, 13)
        assert (d["rotate"], d["rotate_many"], d["mul"], d["mul_sum"], d["conjugate"]) == (
            it * e["rotations_per_iteration"], it * e["rotate_many_per_iteration"], it * e["products_per_iteration"],
            it * e["product_sums_per_iteration"], it * e["conjugations_per_iteration"] + e["unpack_conjugations"]), start


def test_helr_graph_errors():
    from ember.apps import graphs
    with pytest.raises(ValueError, match="levels"):
        graphs.helr(log_n=13, samples=128, insecure=True, levels=4)


@pytest.mark.slow
def test_resnet20_full_graph():
    from ember.apps import graphs
    g = graphs.resnet20(log_n=16)
    e = graphs.resnet20_expected()
    c = g.op_counts()
    assert c["mod_raise"] == 18 and c["rotate"] == e["channel_rotations"] + 19


def test_demo_bootstrap_options_parse():
    from ember.cli.demo import boot_options as _boot_options
    assert _boot_options(None) is None
    assert _boot_options(["arcsin=false", "cheb_degree=63", "input_bound=1.5"]) == dict(
        arcsin=False, cheb_degree=63, input_bound=1.5)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        _boot_options(["arcsin"])
    with pytest.raises(ValueError, match="not a boolean or a number"):
        _boot_options(["arcsin=maybe"])


# ---- one ResNet-20 block, encrypted and in float64 ------------------------------------------------------------------
def _plain_ctx(log_n=16):
    from ember.apps import resnet
    return resnet.PlainContext(ember.CkksParams.bootstrappable(log_n=log_n, levels=15, log_scale=40,
                                                               insecure=log_n < 16), user_level=15)


@pytest.mark.parametrize("channels,grid,offset", [(16, 32, 0.0), (4, 8, 0.7), (3, 8, -0.25)])
def test_resnet_conv_plain_twin_is_2d_convolution(channels, grid, offset):
    """The multiplexed convolution (rotations, channel diagonals, plaintext products), run on the float64 plain
    twin with stage0_weights, equals a direct zero-padded 3x3 convolution in image form (numpy einsum) to
    1e-12: the layout, the rotation direction, the wrap-around of channels and the zero padding agree. Inputs with
    a non-zero mean (a constant offset lights up every border), 3 channels tiling 2048 slots unevenly is refused."""
    from ember.apps import resnet
    rng = np.random.default_rng(7)
    pc = _plain_ctx(16 if grid == 32 else 12)
    if pc.slots % (channels * grid * grid):
        with pytest.raises(ValueError, match="tile"):
            resnet.to_slots(np.zeros((channels, grid, grid)), pc.slots)
        return
    img = rng.uniform(-1, 1, (channels, grid, grid)) + offset
    k, b = rng.normal(0, 0.3, (channels, channels, 3, 3)), rng.normal(0, 0.3, channels)
    y = resnet.conv(pc, pc.encrypt(resnet.to_slots(img, pc.slots)), channels, 1, *resnet.stage0_weights(k, b, pc.slots, grid),
                    grid=grid)
    want = resnet.conv2d_float64(img, k, b)
    assert np.abs(y.v - resnet.to_slots(want, pc.slots)).max() < 1e-12
    # the direct convolution itself against the definition, one output
    c, yy, xx = 1, 0, grid - 1
    naive = b[c] + sum(k[c, ci, ky, kx] * img[ci, yy + ky - 1, xx + kx - 1] for ci in range(channels)
                       for ky in range(3) for kx in range(3)
                       if 0 <= yy + ky - 1 < grid and 0 <= xx + kx - 1 < grid)
    assert abs(want[c, yy, xx] - naive) < 1e-12
    assert y.level == pc.user_level - 1


def test_resnet_block_plain_twin_matches_image_form():
    """The shared residual_block on the plain twin (stage 0, 16 channels, the weights run_block draws) equals
    the block computed in image form (block_float64: numpy convolutions and numpy's chebval of the same ReLU) to
    1e-12; the ReLU inputs stay inside [-1, 1]; the levels suffice (the twin refuses a rescale at level 0); the
    composite ReLU is within 1e-3 of max(x, 0) on [-1, 1]."""
    from ember.apps import resnet
    rng = np.random.default_rng(0)
    pc = _plain_ctx()
    coeffs = resnet.relu_coefficients()
    img, (k1, b1), (k2, b2) = resnet.block_weights(16, rng)
    want, z1, z2 = resnet.block_float64(img, k1, b1, k2, b2, coeffs)
    y = resnet.residual_block(pc, pc.encrypt(resnet.to_slots(img, pc.slots)), 16, 1, 1,
                              resnet.stage0_weights(k1, b1, pc.slots), resnet.stage0_weights(k2, b2, pc.slots), coeffs)
    assert np.abs(y.v - resnet.to_slots(want, pc.slots)).max() < 1e-12
    assert y.level >= 1
    assert max(np.abs(z1).max(), np.abs(z2).max()) < 1.0
    assert np.abs(want).max() > 0.1                                      # not a block of zeros
    z = np.linspace(-1, 1, 100001)
    r = resnet.relu_float64(z, coeffs)
    assert np.abs(r - np.maximum(z, 0)).max() < 1e-3
    assert np.abs(np.diff(r) / np.diff(z)).max() < 1.1                # errors are not amplified (the bounds use it)
    with pytest.raises(ValueError, match="level"):
        pc.encrypt(np.zeros(pc.slots)).drop_to_level(0).rescale()


def test_resnet_block_encrypted_small():
    """The block encrypted on a small insecure bootstrappable context (N = 2^12, 2 channels of 8 x 8, two real
    bootstrappings without the arcsine, ~3 s) against float64 in image form. Bound: >= 20 bits in every slot
    (22.8 measured): the second bootstrapping's error passes through the last ReLU, whose slope stays below 1.1
    on [-1, 1], and the first one's is shrunk by the second convolution."""
    from ember.apps import resnet
    rec = resnet.run_block(log_n=12, channels=2, grid=8, insecure=True)
    assert rec["precision"]["min_bits"] >= 20 and rec["max_error"] < 2 ** -20
    assert rec["output_max"] > 0.1 and rec["relu_input_max"] < 1
    assert rec["rotation_keys"] == 9 and rec["bootstraps"] == 2
    with pytest.raises(ValueError, match="tile"):
        resnet.run_block(log_n=12, channels=3, grid=8, insecure=True)
    with pytest.raises(ValueError, match="levels"):
        resnet.run_block(log_n=12, channels=2, grid=8, levels=9, insecure=True)


@pytest.mark.slow
def test_resnet_block_n16():
    """One ResNet-20 block (stage 0: 16 channels of 32 x 32) at N = 2^16, 128-bit, against float64. Bound:
    bootstrapping without the arcsine (BLOCK_BOOTSTRAP_OPTIONS) gives ~18.6 bits on [-1, 1] at N = 2^16, the
    composite ReLU's slope is below 1.1, the second convolution shrinks the first bootstrapping's error and the
    second one's passes through the last ReLU: >= 16 bits in every slot (18.5 measured, median 24.8).
    Peak RSS ~15.3 GiB: run it under the big-run lock."""
    from ember.apps import resnet
    rec = resnet.run_block()
    assert rec["precision"]["min_bits"] >= 16 and rec["max_error"] < 2 ** -16
    assert rec["precision"]["median_bits"] >= 20
    assert rec["relu_input_max"] < 1 and rec["output_max"] > 0.1


def test_demo_resnet_block_cli():
    """`ember demo resnet --block` end to end at N = 2^12 (insecure, 2 channels of 32 x 32): the JSON record's
    precision and per-stage seconds; without --symbolic or --block a clear error."""
    r = subprocess.run([sys.executable, "-m", "ember", "demo", "resnet", "--block", "--log-n", "12", "--insecure",
                        "--channels", "2", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert rec["app"] == "resnet-block" and rec["precision_min_bits"] >= 20
    assert all(rec[f"{k}_s"] > 0 for k in ("keygen", "conv", "bootstrap", "relu")) and rec["peak_rss_gib"] > 0
    r = subprocess.run([sys.executable, "-m", "ember", "demo", "resnet", "--log-n", "12"], capture_output=True, text=True)
    assert r.returncode == 2 and "--block" in r.stderr
