"""Time per phase of encrypted HELR training (`ember demo lr`), JSON on stdout.

Wraps the public Ciphertext operations (products, rotations, conjugations, bootstraps, additions) and
Context.multiply_sum (products) with timers, runs `ember.apps.demo.run_lr` with the given options and prints the demo's record plus, per phase,
the count and the seconds over the training iterations (keygen and encryption excluded).

    flock /tmp/ember-big.lock flock -x /tmp/ember-quiet.lock \
        build/venv/bin/python bench/apps/lr_phases.py --dataset synthetic
"""
import argparse
import json
import time
from collections import defaultdict

from ember.context import Ciphertext, Context

PHASES = {"__mul__": "products", "rotate": "rotations", "rotate_many": "rotations (hoisted)",
          "conjugate": "conjugations", "bootstrap": "bootstraps", "__add__": "additions", "__sub__": "additions"}
stats = defaultdict(lambda: [0, 0.0])
depth = [0]


def wrap(name, phase, cls=Ciphertext):
    orig = getattr(cls, name)

    def timed(self, *a, **k):
        if depth[0]:                                    # inside a bootstrap: counted there
            return orig(self, *a, **k)
        depth[0] += 1
        t = time.perf_counter()
        try:
            return orig(self, *a, **k)
        finally:
            depth[0] -= 1
            s = stats[phase]
            s[0] += 1
            s[1] += time.perf_counter() - t
    setattr(cls, name, timed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="synthetic")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--levels", type=int, default=None)
    ap.add_argument("--bootstrap-option", action="append", metavar="KEY=VALUE")
    a = ap.parse_args()
    from ember.apps import demo, logreg
    for name, phase in PHASES.items():
        wrap(name, phase)
    wrap("multiply_sum", "products", Context)             # a sum of products: one relinearization and rescale
    Ciphertext.__radd__ = Ciphertext.__add__
    Ciphertext.__rmul__ = Ciphertext.__mul__
    orig_train = logreg.train_encrypted

    def train(*args, **kw):                               # count the training loop only
        stats.clear()
        return orig_train(*args, **kw)
    logreg.train_encrypted = train
    import ember.apps.logreg as lr_mod
    lr_mod.train_encrypted = train
    rec = demo.run_lr(dataset=a.dataset, iterations=a.iterations, log_n=a.log_n, threads=a.threads,
                      insecure=a.insecure, levels=a.levels, bootstrap_options=demo._boot_options(a.bootstrap_option))
    it = max(1, rec["iterations"])
    rec["phases"] = {p: dict(count=c, seconds=round(s, 3), per_iteration_s=round(s / it, 3))
                     for p, (c, s) in sorted(stats.items())}
    rec["phases_note"] = ("per-op wall time of the public Ciphertext operations (and Context.multiply_sum) during "
                          "training; a product or a sum of products includes its relinearization and rescale")
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
