"""Data-parallel scheduling over the RNS limbs: every operation of a graph split into K parts.

Part j works on the limbs i with i = j (mod K), as multi-GPU CKKS implementations partition a ciphertext's
residues.

Most CKKS kernels work limb by limb (additions, products by plaintexts and constants, NTTs, automorphisms, the
key-switching inner products), so a part needs only its own limbs of its inputs: its edges come from the same
part of the producer, carrying that part's share of the value's bytes. Two steps mix limbs and become explicit
exchanges between the parts:

  ModUp       (key switching: key_switch, rotate, conjugate, rotate_many, mul, mul_sum, rotate_many_raised,
              mod_up_digits): each part turns its limbs of the polynomial being decomposed (c1, or the product's
              d2) to coefficient form and sends them to every other part, which extends all digits onto its own
              limbs of Q_l U P (NewLimb), takes its NTTs and its share of the inner products;
  dropping    (ModDown, rescale, their merged form, mul_const, adjust_to, and the tail of a key switch that
              returns to Q): the owners of the dropped limbs (the special primes, the top prime) send them in
              coefficient form to every part, which converts them onto its kept limbs.

A ciphertext's two polynomials are tracked apart: every part of a node ends in one task for c0 and one for c1
(the same task where the value is not a plain ciphertext: raised values, digits), and each stage reads only the
polynomials it needs. Element-wise operations are one task per polynomial (half the part's share each: c0 + m and
the copy of c1 stream the same words). So in a rotate-and-add chain the next key switch starts on c1 while c0 is
still being finished.

A key switch becomes, per part: `pre<d>` (its limbs of digit d of c1 -- a product's d2 = c1 c1' -- to
coefficient form; it reads c1 only) -> `main<d>` and `mainP<d>` (digit d extended onto the part's kept limbs,
resp. onto the limbs it drops at the end -- its special primes, the top prime of a merged rescale --, NTT, the
inner-product terms; digit by digit, so the transfer of one digit overlaps the work on the previous one; the
dropped limbs' chain apart, so that their sums are ready, and sent, while the kept limbs' work goes on) ->
`post1`, `post0` (ModDown of c1's sum, then c0's: c0's adds c0 of the input, rotated, or the product's d0, made
by the product's `tensor` task, the d0 and d1 terms that the key switch does not read). The exchanges are the
edges pre<d>(i) -> main<d>(j), mainP<d>(j) (a part sends its digits in order over each link: the edge of digit d
carries the bytes of digits 0..d) and mainP<last>(i) -> post1(j), post0(j), i != j, N words per limb (c1's sums
first; c0's edge carries both, as they follow each other on the link). A dropping op is `pre1` -> `post1` and
`pre0` -> `post0` (c1's dropped limbs sent first, likewise); ModRaise (level 0 to the top) sends the one limb to
every part; the level-0 BV key switch stays one task.

Costs: a part's share of a stage is the node's cost on that device (the cost table, as for the unsplit graph)
times the stage's fraction times the part's share of the limbs (its limb count over the level's); the stages'
fractions come from the simulator's kernel model of the operation on the device's profile (pre: d2 of the
tensor product where there is one and the iNTT of the decomposed polynomial, or the iNTT of the dropped limbs;
tensor: d0 and d1; post: the conversion of the dropped limbs onto the kept ones, their NTT and the subtraction;
main: the rest, split between main and mainP by limb counts; the two polynomials' stages halve theirs), the
built-in profile of a modelled device, this CPU's calibration for a CPU table (else the H100 profile's). Hence
the parts of a node sum exactly to the node on every device, and with K = 1 the problem is ember.sched.plan's.

What the model leaves out (as the rest of ember.sched): links do not contend, so the all-to-all exchanges of K
parts are as cheap as K - 1 independent transfers; each part is assumed to hold its share of the keys and
plaintexts (no transfer is charged for them); the limb shares are equal up to one limb.
"""
from __future__ import annotations

import math
from functools import lru_cache

from ..params import digit_partition
from .plan import problem_of
from .problem import Problem

WORD = 8
LOCAL = {"add", "sub", "negate", "add_plain", "sub_plain", "add_vector", "add_const", "mul_plain", "mul_plain_sum", "mul_int",
         "mul_round", "linear_combination", "drop_to_level", "rotate_raised_digits"}
KEY_SWITCH_Q = {"key_switch", "rotate", "conjugate", "automorphism", "rotate_many", "mul", "multiply_relin",
                "mul_sum"}
KEY_SWITCH_RAISED = {"rotate_many_raised", "mod_up_digits"}
PRODUCTS = {"mul", "multiply_relin", "mul_sum"}
RESCALING = {"rescale", "mul_const", "mul_vector", "adjust_to"}  # drop the top prime
SIM_ALIAS = {"mul_vector": "mul_const"}  # the simulator's model of the same kernels
DROPPING = {"mod_down", "mod_down_rescale"} | RESCALING
SINGLE = {"key_switch_digits"}  # the BV switch at level 0: one limb, one task
PER_POLY = LOCAL - {"rotate_raised_digits"}  # element-wise on c0 and c1 alike (rotate_raised_digits: on digits)
KNOWN = LOCAL | KEY_SWITCH_Q | KEY_SWITCH_RAISED | DROPPING | SINGLE | {"mod_raise"}


def share(j: int, limbs: int, parts: int) -> int:
    """Return how many of `limbs` limbs (indices 0..limbs-1) part j owns: those i with i = j (mod parts).

    Parameters
    ----------
    j : int
        The part.
    limbs : int
        The number of limbs.
    parts : int
        The number of parts.

    Returns
    -------
    int
        The part's share.
    """
    return len(range(j, limbs, parts))


def _profile(model: str):
    from ..sim import devices as simdev
    if model in simdev.BUILTIN:
        return simdev.BUILTIN[model]
    if model.startswith("cpu"):     # this CPU's calibration, else the embedded reference machine's
        return simdev.cpu_profile()[0]
    return simdev.BUILTIN["h100"]


@lru_cache(maxsize=None)
def stage_fractions(ring_shape: tuple, model: str, op: str, level: int, outputs: int, products: int,
                    merged: bool) -> tuple[float, float, float]:
    """Return the (pre, post, tensor) fractions of an operation's modelled time on a device model's profile.

    Main is the rest; tensor: a product's terms that the key switch does not read (d0 and d1 of each pair), 0
    for the other operations. Their sum is at most 0.95 (scaled down otherwise).

    Parameters
    ----------
    ring_shape : tuple of int
        (log_n, limbs of the top level, special primes, dnum).
    model : str
        The cost-table device model (its simulator profile: a built-in one, this CPU's for a CPU model, else
        the H100's).
    op : str
        The operation kind.
    level : int
        The level it works at.
    outputs : int
        Its outputs (the rotations of a rotate_many).
    products : int
        The products of a mul_sum (others ignore it).
    merged : bool
        Whether a product's rescale is merged into its ModDown.

    Returns
    -------
    tuple of float
        (pre, post, tensor).
    """
    from ..sim.graph_model import op_model
    from ..sim.kernels import EmberModel, Ring
    from ..sim.timing import predict
    ring = Ring(*ring_shape)
    prof = _profile(model)
    cache = int(prof.cache_mb * 2 ** 20 // (ring.n * WORD))
    q = level + 1

    def seconds(m) -> float:
        m.finish()
        return predict(m.cost, prof, m.counts, ring.log_n)["time_ms"] / 1e3

    products = products if op == "mul_sum" else 1
    arity = 2 * products if op in PRODUCTS else 1
    arg = {"adjust_to": level - 1, "mod_raise": ring.q_count - 1}.get(op, level)
    total = seconds(op_model(ring, SIM_ALIAS.get(op, op), [level] * arity, level, {"level": arg}, outputs,
                             cache_limbs=cache))
    if total <= 0:
        return 0.0, 0.0, 0.0
    pre, post, tens = (EmberModel(ring, cache_limbs=cache) for _ in range(3))
    if op == "mod_raise":  # the one limb of c0 and c1 to coefficient form; the rest is main
        d = pre.tmp(1)
        for _ in range(2):
            pre.ntt(d, [0], inverse=True)
        drop, tails = 0, 0
    elif op in KEY_SWITCH_Q | KEY_SWITCH_RAISED:
        if op in PRODUCTS:  # the tensor product (EmberModel.tensor): d2 = c1 c1' first, d0 and d1 beside the switch
            for _ in range(products):
                tens.tensor_d01(tens.ciphertext(q, "a"), tens.ciphertext(q, "b"))
                pre.tensor_d2(pre.ciphertext(q, "a"), pre.ciphertext(q, "b"))
        pre.ntt(pre.tmp(q), range(q), inverse=True, src=pre.ciphertext(q).c1)
        drop = ring.k + (1 if op in PRODUCTS and merged else 0)
        tails = 0 if op in KEY_SWITCH_RAISED else 2 * (outputs if op == "rotate_many" else 1)
    else:  # dropping: the iNTT of the dropped limbs, then their conversion onto the kept ones
        drop = 1 if op in RESCALING else ring.k + (1 if op == "mod_down_rescale" else 0)
        d = pre.tmp(drop)
        for _ in range(2):
            pre.ntt(d, range(drop), inverse=True)
        tails = 2
    kept = q - (1 if drop > ring.k or op in RESCALING else 0)
    src = post.tmp(max(1, drop))
    for _ in range(tails):
        out = post.tmp(kept)
        post.base_convert(src, range(drop), out, range(kept), centered=True)
        post.ntt(out, range(kept), inverse=False)
        post.sub_mul_const(out, post.tmp(kept + drop), kept)
    f_pre, f_post = seconds(pre) / total, seconds(post) / total if tails else 0.0
    f_ten = seconds(tens) / total if op in PRODUCTS else 0.0
    if f_pre + f_post + f_ten > 0.95:  # the sub-models are rooflines of their own: never let them eat the whole node
        s = 0.95 / (f_pre + f_post + f_ten)
        f_pre, f_post, f_ten = f_pre * s, f_post * s, f_ten * s
    return f_pre, f_post, f_ten


def limb_split(graph, platform, costs, parts: int, overhead=None) -> Problem:
    """Return the scheduling problem of a graph with every operation split over `parts` limb shares.

    See the module docstring. Tasks are (node id, part, stage) tuples; a node at a level with fewer limbs than
    parts has one part per limb.

    Parameters
    ----------
    graph : ember.graph.Graph
        The program's graph, with ``meta["params"]`` (log_n, levels, special_primes, dnum).
    platform : Platform
        The devices, bandwidth and latency.
    costs : CostTable
        Seconds per device model; it must have every device model of the platform.
    parts : int
        K, >= 1; 1 is ``ember.sched.plan.problem_of``'s problem (tasks: node ids).
    overhead : ember.sched.overhead.ExecutorOverhead, optional
        An executor's per-task overhead, charged to every task of the split.

    Returns
    -------
    Problem
        The problem.

    Raises
    ------
    ValueError
        `parts` is not an integer >= 1; with `parts` > 1, the graph lacks ``meta["params"]`` or an operation has
        no exchange model; or as ``ember.sched.plan.problem_of``.
    """
    if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
        raise ValueError(f"parts must be an integer >= 1, got {parts!r}")
    if parts == 1:
        return problem_of(graph, platform, costs, overhead)
    base = problem_of(graph, platform, costs)
    p = graph.meta.get("params") or {}
    missing = [k for k in ("log_n", "levels", "special_primes", "dnum") if k not in p]
    if missing:
        raise ValueError(f"limb_split needs graph.meta['params'] with {', '.join(missing)} (capture it with "
                         "ember.graph(ctx))")
    ring_shape = (int(p["log_n"]), int(p["levels"]) + 1, int(p["special_primes"]), int(p["dnum"]))
    n_ring, k = 1 << ring_shape[0], ring_shape[2]
    limb = n_ring * WORD
    models = [d.model for d in platform.devices]
    nodes = {nd.id: nd for nd in graph.nodes}
    for nd in graph.nodes:
        if nd.op not in KNOWN:
            raise ValueError(f"limb_split: no exchange model for operation {nd.op!r} (node {nd.id}); known: "
                             f"{', '.join(sorted(KNOWN))}")

    def limbs_of(nd) -> int:  # the limbs its parts work on
        return int(nd.params.get("level", nd.level)) + 1 if nd.op == "mod_raise" else nd.level + 1

    def nparts(nd) -> int:
        return 1 if nd.op in SINGLE else min(parts, limbs_of(nd))

    digit_ranges = digit_partition(ring_shape[1], ring_shape[3])  # the key's digits, cut from the top of the chain
    cost: dict = {}
    edges: dict = {}
    exits: dict = {}  # node id -> {part: its last task}

    def edge(u, v, nbytes):
        edges[(u, v)] = edges.get((u, v), 0.0) + nbytes

    for nd in graph.nodes:
        i = base.index[nd.id]
        kp, q = nparts(nd), limbs_of(nd)
        w = base.w[i]
        split = nd.op in KEY_SWITCH_Q | KEY_SWITCH_RAISED | DROPPING or nd.op == "mod_raise"
        fr = [stage_fractions(ring_shape, m, nd.op, nd.level, max(1, len(nd.outputs)), max(1, len(nd.inputs) // 2),
                              bool(nd.params.get("merged", 1))) if split else (0.0, 0.0, 0.0) for m in models]
        f_pre, f_post, f_ten = [x[0] for x in fr], [x[1] for x in fr], [x[2] for x in fr]

        def task(key, mult_of_device):  # cost row: the node's cost on each device times the stage's multiplier
            cost[key] = [x if math.isinf(x) else x * mult_of_device(d) for d, x in enumerate(w)]
            return key

        entries: dict = {}  # part -> [(task, fraction of the part's limbs it reads, the polynomials it reads)]
        exits[nd.id] = {}   # part -> (the task that makes its c0, the task that makes its c1)
        outs = max(1, len(nd.outputs)) if nd.op == "rotate_many" else 1
        pown = [sum(1 for t in range(q, q + k) if t % kp == j) for j in range(kp)]  # its special primes (of Q_l U P)
        # the limbs each part drops at the end: ModDown's special primes, the top prime of a rescale
        drop_p = nd.op in KEY_SWITCH_Q or nd.op in ("mod_down", "mod_down_rescale")
        drop_top = nd.op in RESCALING or nd.op == "mod_down_rescale" or (nd.op in PRODUCTS and nd.params.get("merged", 1))
        drops = [(pown[a] if drop_p else 0) + (1 if drop_top and (q - 1) % kp == a else 0) for a in range(kp)]
        if nd.op in KEY_SWITCH_Q | KEY_SWITCH_RAISED:
            digits = [(f, min(e, q)) for f, e in digit_ranges if f < min(e, q)]
            nd_ = len(digits)
            own = [[sum(1 for t in range(f, e) if t % kp == j) for f, e in digits] for j in range(kp)]
            f_main = [1 - a - b - c for a, b, c in zip(f_pre, f_post, f_ten)]
            for j in range(kp):
                sh = share(j, q, kp) / q
                # ModUp reads c1 (of each operand: a product's d2 = c1 c1')
                pres = {d: task((nd.id, j, f"pre{d}"), lambda dv, d=d: f_pre[dv] * own[j][d] / q)
                        for d in range(nd_) if own[j][d]}
                entries[j] = [(t, own[j][d] / max(1, share(j, q, kp)), (1,)) for d, t in pres.items()]
                # the extension, NTTs and inner products work on the part's limbs of Q_l U P; those on the limbs
                # ModDown drops (the part's special primes, the top prime of a merged rescale) are a chain of their
                # own, "mainP<d>", beside the kept limbs' "main<d>": the dropped limbs' sums are then ready as soon
                # as the last digit has arrived, and their exchange overlaps the kept limbs' work. Each digit's
                # share is split by limb counts
                msh = (share(j, q, kp) + pown[j]) / (q + k)
                fP = drops[j] / (share(j, q, kp) + pown[j])
                mains = [task((nd.id, j, f"main{d}"), lambda dv: f_main[dv] * msh / nd_ * (1 - fP))
                         for d in range(nd_)]
                for x, y in zip(mains, mains[1:]):  # the inner products accumulate digit by digit
                    edge(x, y, 2 * outs * (share(j, q, kp) + pown[j] - drops[j]) * limb)
                if nd.op in KEY_SWITCH_RAISED:  # raised outputs: P c0 (rotated) plus the sums, made by the last
                    entries[j].append((mains[-1], 1.0, (0,)))
                    exits[nd.id][j] = (mains[-1], mains[-1])
                    continue
                mps = [task((nd.id, j, f"mainP{d}"), lambda dv: f_main[dv] * msh / nd_ * fP) for d in range(nd_)]
                for x, y in zip(mps, mps[1:]):
                    edge(x, y, 2 * outs * drops[j] * limb)
                # ModDown, one task per output polynomial: c1's first (the next key switch reads it), then c0's
                # (+ c0 of the input, rotated, or a product's d0; c1's gets its d1)
                posts = [task((nd.id, j, f"post{h}"), lambda dv: f_post[dv] * sh / 2) for h in range(2)]
                for post in posts:
                    edge(mains[-1], post, outs * (share(j, q, kp) + pown[j] - drops[j]) * limb)
                    edge(mps[-1], post, outs * drops[j] * limb)
                if nd.op in PRODUCTS:  # d0 and d1 of the tensor product: the part's own limbs, beside the key switch
                    ten = task((nd.id, j, "tensor"), lambda dv: f_ten[dv] * sh)
                    entries[j].append((ten, 1.0, (0, 1)))
                    for post in posts:
                        edge(ten, post, share(j, q, kp) * limb)
                else:
                    entries[j].append((posts[0], 1.0, (0,)))
                exits[nd.id][j] = (posts[0], posts[1])
            # ModUp's exchange, digit by digit: each part's limbs of the digit, in coefficient form, to every part.
            # A part sends its digits in order over each link, so digit d arrives after the bytes of digits
            # 0..d: the edge carries them all (the pre tasks are chained in that order)
            for a in range(kp):
                sent = 0
                prev = None
                for d in range(nd_):
                    if own[a][d]:
                        sent += own[a][d]
                        if prev is not None:
                            edge((nd.id, a, f"pre{prev}"), (nd.id, a, f"pre{d}"), 0.0)
                        prev = d
                        tos = [f"main{d}"] + ([f"mainP{d}"] if nd.op in KEY_SWITCH_Q else [])
                        for b in range(kp):
                            for to in tos:
                                edge((nd.id, a, f"pre{d}"), (nd.id, b, to), (own[a][d] if a == b else sent) * limb)
            if nd.op in KEY_SWITCH_Q:  # ModDown's: the dropped limbs' sums, c1's then c0's over each link
                for a in range(kp):
                    for b in range(kp):
                        if a != b and drops[a]:
                            for h, nb in ((1, 1), (0, 2)):
                                edge((nd.id, a, f"mainP{nd_ - 1}"), (nd.id, b, f"post{h}"), nb * outs * drops[a] * limb)
        elif nd.op in DROPPING:  # one pre and one post per polynomial, c1 first: its transfer and conversion come first
            for j in range(kp):
                sh = share(j, q, kp) / q
                pres = [task((nd.id, j, f"pre{h}"), lambda dv: f_pre[dv] * sh / 2) for h in range(2)]
                posts = [task((nd.id, j, f"post{h}"), lambda dv: (1 - f_pre[dv]) * sh / 2) for h in range(2)]
                for h in range(2):
                    edge(pres[h], posts[h], share(j, q, kp) * limb)
                edge(pres[1], pres[0], 0.0)  # (the sends' order: the edges below count c1's bytes before c0's)
                entries[j] = [(pres[0], 1.0, (0,)), (pres[1], 1.0, (1,))]
                exits[nd.id][j] = (posts[0], posts[1])
            for a in range(kp):
                for b in range(kp):
                    if a != b and drops[a]:
                        for h, nb in ((1, 1), (0, 2)):
                            edge((nd.id, a, f"pre{h}"), (nd.id, b, f"post{h}"), nb * drops[a] * limb)
        elif nd.op == "mod_raise":  # the one limb (part 0) to coefficient form, then to every part
            pre = task((nd.id, 0, "pre"), lambda dv: f_pre[dv])
            entries[0] = [(pre, 1.0, (0, 1))]
            for j in range(kp):
                sh = share(j, q, kp) / q
                t = task((nd.id, j, "main"), lambda dv: (1 - f_pre[dv]) * sh)
                exits[nd.id][j] = (t, t)
                edge(pre, t, 2 * limb)
        elif nd.op in PER_POLY:  # element-wise on each polynomial: one task per polynomial, half the part's share
            for j in range(kp):
                sh = share(j, q, kp) / q
                ts = [task((nd.id, j, f"c{h}"), lambda dv: sh / 2) for h in range(2)]
                entries[j] = [(ts[0], 1.0, (0,)), (ts[1], 1.0, (1,))]
                exits[nd.id][j] = (ts[0], ts[1])
        else:
            for j in range(kp):
                sh = share(j, q, kp) / q
                t = task((nd.id, j, "main"), lambda dv: sh)
                entries[j], exits[nd.id][j] = [(t, 1.0, (0, 1))], (t, t)
        # data edges from the producers: part j of the producer to part j here (limb t belongs to part t mod K;
        # a level with fewer limbs than K parts has part t = limb t, so the index matches across levels); a
        # single-task node, or a part with no match, reads every part of the producer
        for u, b in base.pred[i]:
            un = nodes[base.tasks[u]]
            ukp, vq = nparts(un), limbs_of(un)
            for j, ents in entries.items():
                srcs = [j] if (j < ukp and kp > 1) else list(range(ukp))
                for a in srcs:
                    nbytes = b * share(a, vq, ukp) / vq / 2  # per polynomial
                    for t, frac, polys in ents:
                        for h in polys:
                            edge(exits[un.id][a][h], t, nbytes * frac)
    if overhead is not None:
        cost = overhead.charge(cost)
    return Problem(cost, edges, platform.bandwidth, platform.latency, platform.names)
