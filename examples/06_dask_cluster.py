"""The same encrypted work on a Dask cluster, through `ember.run.DaskExecutor`.

Here the cluster is a `distributed.LocalCluster` of two worker processes on the loopback interface; with a real
cluster you would pass `Client("tcp://scheduler:8786")` (over TLS: see README, "Security") instead. The client
(this script) keeps the secret key: the executor registers a Dask worker plugin that carries the parameters and
the *evaluation* keys only, which every worker installs once (also workers that join later). Ciphertexts travel
as Ember's validated bytes -- through shared memory here, since the workers share the client's host.
"""
import os

import numpy as np
from distributed import Client, LocalCluster

import ember
import ember.run
from ember import sched


def square_and_shift(ctx, x):
    """Run on a Dask worker, with the worker's own context: x^2, moved one slot to the left."""
    return (x * x).rotate(1)


def four_squares(a, b, c, d):
    """Compute a^2 + b^2 + c^2 + d^2: four independent products, then a sum tree."""
    return (a * a + b * b) + (c * c + d * d)


def main():
    """Start a two-worker cluster, compute on it, decrypt and compare with numpy; stop everything on the way out."""
    log_n = int(os.environ.get("EMBER_EXAMPLE_LOG_N", "15"))
    params = ember.CkksParams(log_n=log_n, levels=1, log_scale=40, first_mod_bits=50, dnum=1)  # 128-bit secure
    ctx = ember.Context(params, threads=1)
    keys = ctx.keygen(rotations=[1])
    rng = np.random.default_rng(6)
    xs = [rng.uniform(-1, 1, ctx.slots) for _ in range(6)]
    cts = [ctx.encrypt(x, keys.public) for x in xs]

    with ember.graph(ctx) as g:                                          # capture once on the client
        g.output(four_squares(*cts[:4]), "y")
        for i, c in enumerate(cts[:4]):
            g.input(c, f"x{i}")
    inputs = {v: cts[int(g.names[v][1:])] for v in g.sources}          # source value id -> its ciphertext
    platform = sched.load_platform("dask:2:1e9")                         # 2 workers, 1 GB/s between them
    plan = sched.schedule_graph(g, platform, sched.default_costs(g, platform), "heft")

    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                       dashboard_address=None) as cluster,
          Client(cluster) as client,
          ember.run.DaskExecutor(ctx, keys, client=client) as ex):     # closed in reverse order on the way out
        print(f"cluster: {len(ex.worker_names())} workers {ex.worker_names()}, transport {ex.transport}")
        res = ex.map(square_and_shift, cts)
        ran = ex.run_graph(g, inputs, schedule=plan)

    err = max(np.abs(ctx.decrypt(y, keys.secret).real - np.roll(x * x, -1)).max() for x, y in zip(xs, res.outputs))
    print(f"map: {len(cts)} tasks on {len(set(res.node_worker.values()))} workers in {res.seconds:.2f} s, "
          f"max error {err:.1e}")
    pairs = {(plan.device[n.id], ran.node_worker[n.id]) for n in g.nodes}   # plan worker i <-> one Dask worker
    pinned = len(pairs) == len({p for p, _ in pairs}) == len({w for _, w in pairs})
    err_g = np.abs(ctx.decrypt(ran.outputs[0], keys.secret).real - sum(x * x for x in xs[:4])).max()
    print(f"graph: {len(g)} nodes in {ran.seconds:.2f} s, HEFT plan {[plan.device[n.id] for n in g.nodes]}, "
          f"followed: {pinned}, max error {err_g:.1e}")
    if not pinned or max(err, err_g) > 1e-5:
        raise SystemExit(f"decryption error {max(err, err_g):.1e} exceeds 1e-5, or the plan was not followed")


if __name__ == "__main__":     # required: Dask starts its worker processes by re-importing this script
    main()
