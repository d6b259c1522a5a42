"""Running encrypted work on several local processes with `ember.run.LocalPool`.

The client (this script) holds the secret key. The pool's workers are separate processes, each with its own
Context; they receive the evaluation keys once, when they start (never the secret key: a worker refuses one),
and the ciphertexts through shared memory. Two ways to use them:

* `pool.map(fn, cts)`: fn(ctx, ct) on every ciphertext, as independent tasks;
* `pool.run_graph(graph, inputs, schedule=...)`: a program captured with `ember.graph`, one task per operation,
  each pinned to the worker that a HEFT schedule chose.
"""
import os

import numpy as np

import ember
import ember.run
from ember import sched


def square_and_shift(ctx, x):
    """Run on a worker, with the worker's own context: x^2, moved one slot to the left."""
    return (x * x).rotate(1)


def four_squares(a, b, c, d):
    """Compute a^2 + b^2 + c^2 + d^2: four independent products, then a sum tree."""
    return (a * a + b * b) + (c * c + d * d)


def main():
    """Encrypt, compute on the pool, decrypt and compare with numpy."""
    log_n = int(os.environ.get("EMBER_EXAMPLE_LOG_N", "15"))
    params = ember.CkksParams(log_n=log_n, levels=1, log_scale=40, first_mod_bits=50, dnum=1)  # 128-bit secure
    ctx = ember.Context(params, threads=1)
    keys = ctx.keygen(rotations=[1])
    rng = np.random.default_rng(5)
    xs = [rng.uniform(-1, 1, ctx.slots) for _ in range(6)]
    cts = [ctx.encrypt(x, keys.public) for x in xs]

    # Capture the graph on the client (it runs here once), and plan it on two workers with HEFT.
    with ember.graph(ctx) as g:
        g.output(four_squares(*cts[:4]), "y")
        for i, c in enumerate(cts[:4]):
            g.input(c, f"x{i}")                                          # (name values after the graph saw them)
    inputs = {f"x{i}": c for i, c in enumerate(cts[:4])}                # each input by its name (or value id)
    platform = sched.load_platform("dask:2:1e9")                         # 2 workers, 1 GB/s between them
    plan = sched.schedule_graph(g, platform, sched.default_costs(g, platform), "heft")

    with ember.run.LocalPool(ctx, keys, workers=2) as pool:              # the pool gets evaluation keys only
        res = pool.map(square_and_shift, cts)
        ran = pool.run_graph(g, inputs, schedule=plan)

    err = max(np.abs(ctx.decrypt(y, keys.secret).real - np.roll(x * x, -1)).max() for x, y in zip(xs, res.outputs))
    print(f"map: {len(cts)} tasks on {len(set(res.node_worker.values()))} workers in {res.seconds:.2f} s, "
          f"max error {err:.1e}")
    err_g = np.abs(ctx.decrypt(ran.outputs[0], keys.secret).real - sum(x * x for x in xs[:4])).max()
    # Each node ran where the plan put it: plan worker i <-> one pool process (named "host:pid" in node_worker).
    pairs = {(plan.device[n.id], ran.node_worker[n.id]) for n in g.nodes}
    pinned = len(pairs) == len({p for p, _ in pairs}) == len({w for _, w in pairs})
    print(f"graph: {len(g)} nodes {g.op_counts()} in {ran.seconds:.2f} s, HEFT plan (modelled makespan "
          f"{1e3 * plan.makespan:.2f} ms) {[plan.device[n.id] for n in g.nodes]}, followed: {pinned}, "
          f"max error {err_g:.1e}")
    if not pinned or max(err, err_g) > 1e-5:
        raise SystemExit(f"decryption error {max(err, err_g):.1e} exceeds 1e-5, or the plan was not followed")


if __name__ == "__main__":     # the guard every multi-process Python program needs
    main()
