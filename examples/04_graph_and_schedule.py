"""Programs as graphs, scheduled across heterogeneous devices with HEFT and PEFT.

`with ember.graph(ctx) as g:` records every ciphertext operation run inside the block as a node of a data-flow
graph (its kind, level, the bytes it reads and writes, its measured time). `ember.sched` then places the nodes
on a platform -- here the paper's host CPU with 2 FPGAs and 2 GPUs (`paper:2,2`) -- and predicts the makespan.
The accelerators are not on this machine: their costs are MODELLED by Ember's simulator, and the output says so.
"""
import os

import numpy as np

import ember
from ember import sched

log_n = int(os.environ.get("EMBER_EXAMPLE_LOG_N", "15"))
# One multiplicative level is all this program needs, and it fits the 128-bit bound from N = 2^13 on.
ctx = ember.Context(ember.CkksParams(log_n=log_n, levels=1, log_scale=40, first_mod_bits=50, dnum=1), threads=2)
keys = ctx.keygen(rotations=[1])
rng = np.random.default_rng(4)
xs = [rng.uniform(-1, 1, ctx.slots) for _ in range(4)]
cts = [ctx.encrypt(x, keys.public) for x in xs]


def program(a, b, c, d):
    """Sum four squares, then add each slot's right neighbour (the four products are independent)."""
    s = (a * a + b * b) + (c * c + d * d)
    return s + s.rotate(1)


# 1. Capture the program (after one run outside the capture, which builds the one-time tables of its levels).
program(*cts)
with ember.graph(ctx) as g:
    y = program(*cts)
    for i, c in enumerate(cts):
        g.input(c, f"x{i}")
    g.output(y, "y")
ref = sum(x * x for x in xs)
err = np.abs(ctx.decrypt(y, keys.secret).real - (ref + np.roll(ref, -1))).max()
seconds, path = g.critical_path()
print(f"captured {len(g)} nodes {g.op_counts()}, measured critical path {1e3 * seconds:.1f} ms "
      f"over nodes {path}; max error {err:.1e}")
if err > 1e-5:
    raise SystemExit(f"decryption error {err:.1e} exceeds 1e-5")


def schedule_both(graph, spec):
    """Schedule `graph` on the platform `spec` with HEFT and PEFT; print and return the two schedules."""
    platform = sched.load_platform(spec)
    costs = sched.default_costs(graph, platform)      # modelled figures for every device the table lacks
    out = []
    for algo in ("heft", "peft"):
        s = sched.schedule_graph(graph, platform, costs, algo)
        s.validate()                                  # dependencies, transfers, no overlaps: raises if broken
        used = sorted({platform.names[d] for d in s.device.values()})
        print(f"  {algo.upper()}: makespan {1e6 * s.makespan:7.1f} us (best single device alone "
              f"{1e6 * s.sequential:7.1f} us: {s.speedup:.2f}x), devices used {used}")
        out.append(s)
    print(f"  modelled devices: {out[0].extra['modelled_devices']}")
    return out


print(f"platform paper:2,2 = {sched.load_platform('paper:2,2').names}")
print(f"the captured program (N = 2^{log_n}):")
schedule_both(g, "paper:2,2")
cpu = sched.load_platform("paper:0,0")               # the host CPU alone
alone = sched.schedule_graph(g, cpu, sched.default_costs(g, cpu), "heft")
print(f"  host CPU alone: modelled {1e3 * alone.makespan:.2f} ms, measured here "
      f"{1e3 * sum(n.seconds for n in g.nodes):.2f} ms (the nodes' own times, one after another)")

# 2. A named program, captured symbolically (no keys, no arithmetic): the LoLa-style CNN on one image.
#    Its parameters are 128-bit secure from N = 2^14 on.
cnn = ember.graph.graph_of("lola-mnist", log_n=max(14, log_n))
print(f"lola-mnist (N = 2^{max(14, log_n)}): {len(cnn)} nodes {cnn.op_counts()}")
schedule_both(cnn, "paper:2,2")
