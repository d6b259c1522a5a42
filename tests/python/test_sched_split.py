"""ember.graph.split_hoisted: rotate_many_raised nodes split into mod_up_digits + rotate_raised_digits parts whose
costs (every cost table) and simulator kernel counts sum exactly to the node's; the split graph stays a valid,
loadable graph that schedules validly."""
import json
import math

import pytest

from ember.graph import Graph, split_hoisted
from ember.graph import programs
from ember.sched.costs import node_count
from ember.sched.plan import default_costs, problem_of, schedule_graph
from ember.sched.platform import paper
from ember.sim.graph_model import op_model
from ember.sim.kernels import Ring


def _costs(g):
    return default_costs(g, paper(2, 2))


@pytest.fixture(scope="module")
def boot():
    return programs.boot_graph(log_n=12, levels=2, insecure=True)


def _flat(d, pre=""):
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{pre}{k}.") if isinstance(v, dict) else {f"{pre}{k}": v})
    return out


def test_split_structure(boot):
    big = [n for n in boot.nodes if n.op == "rotate_many_raised" and len(n.outputs) >= 2]
    assert big, "the bootstrapping graph has hoisted baby-step sets"
    s = split_hoisted(boot, parts=2)
    ops = s.op_counts()
    assert ops.get("mod_up_digits") == len(big)
    assert ops.get("rotate_raised_digits") == 2 * len(big)
    assert len(s) == len(boot) + 2 * len(big)
    # every value keeps its id; each split node's outputs are produced by its parts, in order
    assert set(boot.values) <= set(s.values) and s.outputs == boot.outputs
    for n in big:
        makers = [s.nodes[s.values[v].producer] for v in n.outputs]
        assert all(m.op == "rotate_raised_digits" and m.params["split_of"] == n.id for m in makers)
        assert sum(len(m.outputs) for m in {m.id: m for m in makers}.values()) == len(n.outputs)
    # the digits value: ceil-style digit count x (level + 1 + special primes) limbs x N x 8 bytes
    p = boot.meta["params"]
    for n in s.nodes:
        if n.op == "mod_up_digits":
            d = s.values[n.outputs[0]]
            assert d.kind == "digits"
            assert d.bytes == n.params["digits"] * (n.level + 1 + p["special_primes"]) * (1 << p["log_n"]) * 8
            assert 1 <= n.params["digits"] <= p["dnum"]
    # JSON round trip (the "digits" kind is a valid value kind)
    assert Graph.from_dict(json.loads(json.dumps(s.to_dict()))).op_counts() == ops
    # parts=1 leaves the graph as it was
    assert split_hoisted(boot, parts=1).op_counts() == boot.op_counts()


def test_split_costs_sum_to_the_node(boot):
    s = split_hoisted(boot, parts=3)
    costs = _costs(boot)  # modelled cpu, h100, fpga-u280
    for m in ("cpu", "h100", "fpga-u280"):
        whole = sum(costs.node_seconds(n, m) for n in boot.nodes)
        parts = sum(costs.node_seconds(n, m) for n in s.nodes)
        assert parts == pytest.approx(whole, rel=1e-12)
        for n in s.nodes:
            if n.op == "mod_up_digits":
                assert costs.node_seconds(n, m) >= 0
        # node by node: a split node's parts against the node itself
        for n in boot.nodes:
            if n.op == "rotate_many_raised" and len(n.outputs) >= 2:
                mine = [x for x in s.nodes if x.params.get("split_of") == n.id]
                assert sum(costs.node_seconds(x, m) for x in mine) == pytest.approx(costs.node_seconds(n, m), rel=1e-12)
                assert sum(node_count(x) for x in mine if x.op == "rotate_raised_digits") == node_count(n)


def test_split_kernel_counts_sum_to_the_node():
    ring = Ring(13, 10, 3, 3)
    for steps in ([1, 2, 3, 0], [5, 6, 7, 8, 9, 10, 11]):
        whole = _flat(op_model(ring, "rotate_many_raised", [7], 7, {"steps": steps}, len(steps), slots=4096).counts)
        parts = [_flat(op_model(ring, "mod_up_digits", [7], 7, {}, 1, slots=4096).counts),
                 _flat(op_model(ring, "rotate_raised_digits", [7], 7, {"steps": steps[:2]}, 2, slots=4096).counts),
                 _flat(op_model(ring, "rotate_raised_digits", [7], 7, {"steps": steps[2:]}, len(steps) - 2,
                                slots=4096).counts)]
        keys = set(whole).union(*parts)
        assert any(whole.get(k) for k in keys)
        for k in keys:
            assert whole.get(k, 0) == sum(p.get(k, 0) for p in parts), k


def test_split_graph_schedules_validly(boot):
    s = split_hoisted(boot, parts=4)
    for algo in ("heft", "peft", "best", "naive"):
        sch = schedule_graph(s, paper(0, 2), _costs(s), algo)
        sch.validate()
        assert math.isfinite(sch.makespan)
    # same total work on one GPU as the unsplit graph
    pa, pb = problem_of(boot, paper(0, 1), _costs(boot)), problem_of(s, paper(0, 1), _costs(s))
    assert sum(w[1] for w in pb.w) == pytest.approx(sum(w[1] for w in pa.w), rel=1e-12)




def test_split_errors(boot):
    with pytest.raises(ValueError, match="parts"):
        split_hoisted(boot, parts=0)
    with pytest.raises(ValueError, match="min_count"):
        split_hoisted(boot, min_count=1)
    g = Graph()
    with pytest.raises(ValueError, match="params"):
        split_hoisted(g)
