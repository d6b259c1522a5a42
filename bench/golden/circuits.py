"""Golden values of the circuits, for refactors that must not change a bit:

    PYTHONPATH=<old build's package dir> python bench/golden/circuits.py save DIR    # before the change
    python bench/golden/circuits.py check DIR                                        # after: exit 1 on any difference

`save` writes keys, inputs and the decryptions of every circuit's output (linear transforms hoisted and
reference, Chebyshev polynomials, products merged / unmerged / unrescaled, rotations, constants,
bootstrapping one and two passes at N = 2^12, insecure); `check` loads the same keys and inputs (so no
fixed seed is needed: the randomness is in the saved bytes), reruns everything and compares level,
scale and every decrypted value exactly. DIR takes ~150 MB (the bootstrapping keys)."""
import sys, pathlib, pickle
import numpy as np
import ember
from ember import circuits

mode, d = sys.argv[1], pathlib.Path(sys.argv[2])
d.mkdir(parents=True, exist_ok=True)

def run(ctx, sk, ct, ctb, boot_ctx, boot_sk, bct):
    out = {}
    rng = np.random.default_rng(5)
    n = ct.slots
    M = rng.uniform(-1, 1, (n, n))
    lt = circuits.LinearTransform.from_matrix(ctx, M, level=ct.level)
    out["lt_hoisted"] = lt.apply(ct, hoisted=True)
    out["lt_plain"] = lt.apply(ct, hoisted=False)
    D = {0: rng.uniform(-1, 1, n), 3: rng.uniform(-1, 1, n), -5: rng.uniform(-1, 1, n), 17: rng.uniform(-1, 1, n)}
    lt2 = circuits.LinearTransform(ctx, D, level=ct.level)
    out["lt2_hoisted"] = lt2.apply(ct, hoisted=True)
    out["cheb"] = circuits.evaluate_function(ct, np.tanh, 31, (-1.5, 1.5))
    out["cheb_m11"] = circuits.evaluate_function(ct, lambda x: x ** 3 - 0.5 * x, 7)
    out["mul_merged"] = ctx.multiply(ct, ctb, merged=True)
    out["mul_plain"] = ctx.multiply(ct, ctb, merged=False)
    out["mul_norescale"] = ctx.multiply(ct, ctb, rescale=False)
    out["rot3"] = ct.rotate(3)
    out["rotm"] = ct.rotate_many([1, 3, -5])[2]
    out["conj"] = ct.conjugate()
    out["const"] = ct * 0.37 + 1.25
    res = {k: (v.level, v.scale, ctx.decrypt(v, sk)) for k, v in out.items()}
    b1 = boot_ctx.bootstrap(bct)
    res["boot"] = (b1.level, b1.scale, boot_ctx.decrypt(b1, boot_sk))
    b2 = boot_ctx.bootstrap(bct, iterations=2)
    res["boot2"] = (b2.level, b2.scale, boot_ctx.decrypt(b2, boot_sk))
    return res

P = dict(log_n=12, levels=6, log_scale=40, dnum=3, insecure=True)
if mode == "save":
    ctx = ember.Context(ember.CkksParams(**P))
    rots = sorted(set(range(-64, 65)))
    ks = ctx.keygen(rotations=rots, conjugation=True)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 64) + 1j * rng.uniform(-1, 1, 64)
    y = rng.uniform(-1, 1, 64)
    ct, ctb = ctx.encrypt(x, ks.public), ctx.encrypt(y, ks.secret)
    pass
    bctx = ember.Context(ember.CkksParams.bootstrappable(log_n=12, levels=2, slots=16, insecure=True))
    bks = bctx.keygen(bootstrapping=True)
    bct = bctx.encrypt(rng.uniform(-1, 1, 16), bks.public)
    (d / "sk").write_bytes(ks.secret.to_bytes(export_secret=True))
    (d / "rlk").write_bytes(ks.relin.to_bytes())
    (d / "gk").write_bytes(ks.galois.to_bytes())
    (d / "ct").write_bytes(ct.to_bytes()); (d / "ctb").write_bytes(ctb.to_bytes())
    (d / "bsk").write_bytes(bks.secret.to_bytes(export_secret=True))
    bctx.save_bootstrap_keys(d / "bkeys")
    (d / "bct").write_bytes(bct.to_bytes())
    res = run(ctx, ks.secret, ct, ctb, bctx, bks.secret, bct)
    pickle.dump(res, open(d / "golden.pkl", "wb"))
    print("saved", len(res), "golden values")
else:
    ctx = ember.Context(ember.CkksParams(**P))
    sk = ember.SecretKey.from_bytes(ctx, (d / "sk").read_bytes())
    ctx.set_eval_keys(ember.SwitchingKey.from_bytes(ctx, (d / "rlk").read_bytes()), ember.GaloisKeys.from_bytes(ctx, (d / "gk").read_bytes()))
    ct = ember.Ciphertext.from_bytes(ctx, (d / "ct").read_bytes()); ctb = ember.Ciphertext.from_bytes(ctx, (d / "ctb").read_bytes())
    bctx = ember.Context(ember.CkksParams.bootstrappable(log_n=12, levels=2, slots=16, insecure=True))
    bsk = ember.SecretKey.from_bytes(bctx, (d / "bsk").read_bytes())
    bctx.load_bootstrap_keys(d / "bkeys")
    bct = ember.Ciphertext.from_bytes(bctx, (d / "bct").read_bytes())
    res = run(ctx, sk, ct, ctb, bctx, bsk, bct)
    gold = pickle.load(open(d / "golden.pkl", "rb"))
    bad = 0
    for k, (lv, sc, v) in gold.items():
        l2, s2, v2 = res[k]
        same = lv == l2 and sc == s2 and np.array_equal(v, v2)
        bad += not same
        print(f"{k:14s} {'bit-identical' if same else 'DIFFERS'} level {lv}/{l2} scale 2^{np.log2(sc):.6f}/2^{np.log2(s2):.6f} max|diff| {np.max(np.abs(v - v2)):.3e}")
    print("ALL BIT-IDENTICAL" if not bad else f"{bad} DIFFER")
    sys.exit(1 if bad else 0)
