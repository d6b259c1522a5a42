"""Graph capture (ember.graph): live capture of evaluator operations, the JSON format and its validation,
op counts and critical path."""
import json
import time

import numpy as np
import pytest

import ember
from ember.graph import Graph


@pytest.fixture(scope="module")
def small():
    ctx = ember.Context(ember.CkksParams(log_n=12, levels=4, log_scale=40, insecure=True))
    keys = ctx.keygen(rotations=[1, 2, -1], conjugation=True)
    rng = np.random.default_rng(1)
    x = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public)
    y = ctx.encrypt(rng.uniform(-1, 1, ctx.slots), keys.public)
    return ctx, keys, x, y


def ct_bytes(ctx, level):
    return 2 * (level + 1) * ctx.params.n * 8


def test_capture_small_program(small):
    ctx, keys, x, y = small
    with ember.graph(ctx) as g:
        z = (x * y + x).rotate(1)
        g.input(x, "x")
        g.output(z, "z")
    g.input(y, "y")  # naming after the block works too
    assert g.op_counts() == {"mul": 1, "add": 1, "rotate": 1}
    assert [n.op for n in g.nodes] == ["mul", "add", "rotate"]
    # values: x, y (sources), x*y, x*y+x, rotated
    assert len(g.values) == 5 and g.sources == [0, 1]
    mul, add, rot = g.nodes
    assert mul.inputs == [0, 1] and add.inputs == [mul.outputs[0], 0] and rot.inputs == add.outputs
    assert mul.level == ctx.max_level and add.level == ctx.max_level - 1  # add works at the lower level
    assert rot.params == {"steps": 1}
    for v in g.values.values():
        assert v.kind == "ciphertext" and v.slots == ctx.slots and v.bytes == ct_bytes(ctx, v.level)
    assert g.values[rot.outputs[0]].level == ctx.max_level - 1
    assert g.values[rot.outputs[0]].scale == pytest.approx(z.scale, rel=0)
    assert g.outputs == rot.outputs and g.names == {0: "x", 1: "y", rot.outputs[0]: "z"}
    assert g.edges() == {(0, 1): ct_bytes(ctx, ctx.max_level - 1), (1, 2): ct_bytes(ctx, ctx.max_level - 1)}
    assert g.meta["mode"] == "live" and g.meta["params"]["log_n"] == 12
    assert all(n.seconds > 0 and n.counts["calls"] > 0 for n in g.nodes)


def test_counts_equal_trace(small):
    """Every kernel inside the block runs inside an evaluator operation, so the per-node counters sum exactly to
    ember.trace()'s totals."""
    ctx, keys, x, y = small
    pt = ctx.encode(np.linspace(-1, 1, ctx.slots))
    with ember.trace() as t, ember.graph() as g:
        a = x * y
        b = a * 0.25 + 3 * x - y
        c = b.conjugate() + b.rotate(2)
        r = c.rotate_many([1, 0, -1])
        _ = r[0] + r[2]
        _ = ctx.multiply(x, pt, rescale=False).rescale() + 1.5  # x * pt would rescale by itself
    assert g.total_counts() == t.totals
    assert {"rotate_many", "conjugate", "mul_plain", "mul_const", "mul_int", "rescale", "add_const"} <= set(g.op_counts())
    rm = next(n for n in g.nodes if n.op == "rotate_many")
    assert rm.params == {"steps": [1, 0, -1]} and len(rm.outputs) == 2  # the 0 rotation is the input itself
    pts = [v for v in g.values.values() if v.kind == "plaintext"]
    assert len(pts) == 1 and pts[0].bytes == (ctx.max_level + 1) * ctx.params.n * 8 and pts[0].producer is None


def test_no_work_no_node(small):
    ctx, keys, x, y = small
    with ember.graph() as g:
        same = x.rotate(0)
        also = x.drop_to_level(x.level)
    assert len(g) == 0
    with ember.graph() as g:
        s = same + also  # both are x itself
    assert g.nodes[0].inputs == [0, 0]


def test_captures_nest_in_a_thread_and_stop_on_error(small):
    """Nested captures (one context): the inner one sees its own operations, the outer one all of them, in order;
    a failed operation records nothing and the recorder is off after the block."""
    ctx, keys, x, y = small
    with ember.graph() as outer:
        a = x * y
        with ember.graph() as inner:
            b = a.rotate(1)
            with ember.graph() as innermost:
                c = b + x
        d = c.conjugate()
    assert [n.op for n in outer.nodes] == ["mul", "rotate", "add", "conjugate"]
    assert [n.op for n in inner.nodes] == ["rotate", "add"]
    assert [n.op for n in innermost.nodes] == ["add"]
    assert outer.nodes[1].inputs == outer.nodes[0].outputs          # the data flow crosses the inner blocks
    outer.output(d)
    inner.output(c)
    assert not ember._ember.oprec_recording()
    with pytest.raises(ValueError):
        with ember.graph() as g:
            x * x
            x.rotate(7)  # no key for 7
    assert not ember._ember.oprec_recording()
    assert g.op_counts() == {"mul": 1}  # what ran before the error; the failed rotation records nothing
    with ember.graph() as h:
        x + y
    assert len(h) == 1


def test_two_threads_capture_at_once(small):
    """Issue 26, defect 2: captures are per context (a ContextVar), not process-wide. Two threads capture at once
    (the second opens its capture while the first's is open and computing): each graph holds exactly its own
    thread's operations. Before, the second capture failed with "captures do not nest" (and a capture saw the
    other thread's operations)."""
    import threading
    ctx, keys, x, y = small
    first_open, results, errors = threading.Event(), {}, []

    def products():
        try:
            with ember.graph() as g:
                first_open.set()
                z = x
                for _ in range(3):
                    z = z * y
                    time.sleep(0.1)         # the other thread tries to capture meanwhile
            results["products"] = g
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def rotations():
        try:
            first_open.wait(10)
            with ember.graph() as g:
                z = x.rotate(1).rotate(2)
                z.conjugate()
            results["rotations"] = g
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=products), threading.Thread(target=rotations)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert results["products"].op_counts() == {"mul": 3}
    assert results["rotations"].op_counts() == {"rotate": 2, "conjugate": 1}
    assert not ember._ember.oprec_recording()


def test_a_thread_that_captures_nothing_does_not_leak_into_a_capture(small):
    """The recorder is one per process, but each event names its thread: evaluator calls of a thread that opens no
    capture, made while this thread's capture is open, are not in this graph (before, they were, with no error)."""
    import threading
    ctx, keys, x, y = small
    opened, done = threading.Event(), threading.Event()

    def busy():
        opened.wait(30)
        z = x
        for _ in range(4):
            z = z.rotate(1) + y
        done.set()

    t = threading.Thread(target=busy)
    t.start()
    with ember.graph() as g:
        opened.set()
        w = x * y
        assert done.wait(60)                   # the other thread's 8 operations ran while this capture was open
        w + x
    t.join(30)
    assert g.op_counts() == {"mul": 1, "add": 1}


def test_capture_waits_for_another_thread_with_a_limit(small):
    """A capture of another thread holds the process's recorder: a capture here waits for it, at most `wait`
    seconds, then says why."""
    import threading
    ctx, keys, x, y = small
    opened, release = threading.Event(), threading.Event()

    def hold():
        with ember.graph():
            opened.set()
            release.wait(30)
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert opened.wait(30)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="waited 0.2 s for the graph capture of another thread"):
            with ember.graph(wait=0.2):
                pass
        assert 0.15 < time.monotonic() - t0 < 10
    finally:
        release.set()
        t.join(30)
    with ember.graph(wait=5) as g:             # free again
        x + y
    assert g.op_counts() == {"add": 1}


def test_marking_unseen_values(small):
    ctx, keys, x, y = small
    fresh = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    with ember.graph() as g:
        x + y
    with pytest.raises(ValueError, match="not used"):
        g.output(fresh)
    with pytest.raises(TypeError):
        g.output(3)
    with pytest.raises(ValueError, match="not made by a capture"):
        Graph().output(x)


def test_json_round_trip(small, tmp_path):
    ctx, keys, x, y = small
    with ember.graph(ctx) as g:
        z = (x * y).rotate(-1) + y
        g.output(z, "z")
    path = tmp_path / "g.json"
    g.save(path)
    h = ember.graph.load(path)
    assert h.to_dict() == g.to_dict()
    assert h.same_structure(g) and h.op_counts() == g.op_counts() and h.edges() == g.edges()
    assert json.loads(path.read_text())["version"] == ember.graph.VERSION


def _doc():
    return {"format": "ember-graph", "version": 1, "meta": {},
            "values": [{"id": 0, "kind": "ciphertext", "level": 3, "scale": 2.0 ** 40, "slots": 8, "bytes": 100},
                       {"id": 1, "kind": "ciphertext", "level": 2, "scale": 2.0 ** 40, "slots": 8, "bytes": 80},
                       {"id": 2, "kind": "ciphertext", "level": 2, "scale": 2.0 ** 40, "slots": 8, "bytes": 80}],
            "nodes": [{"id": 0, "op": "mul", "in": [0, 0], "out": [1]},
                      {"id": 1, "op": "rotate", "in": [1], "out": [2], "params": {"steps": 1}}],
            "outputs": [2]}


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="other"), "not an ember graph"),
    (lambda d: d.update(version=2), "newer"),
    (lambda d: d.update(version="1"), "version must be an integer"),
    (lambda d: d.update(values={}), "'values' must be a list"),
    (lambda d: d["values"][1].update(bytes=-5), "bytes must be an integer >= 0"),
    (lambda d: d["values"][1].update(kind="bogus"), "kind must be one of"),
    (lambda d: d["values"][1].update(scale=float("nan")), "scale"),
    (lambda d: d["values"][2].update(id=1), "duplicate value id"),
    (lambda d: d["values"][0].pop("level"), "lacks level"),
    (lambda d: d["nodes"][1].update(id=5), "numbered 0, 1"),
    (lambda d: d["nodes"][1].update({"in": [7]}), "unknown input value 7"),
    (lambda d: d["nodes"][1].update(out=[1]), "produced twice"),
    (lambda d: d["nodes"][0].update({"in": [2]}), "before the node that produces it"),  # a cycle 0 -> 1 -> 0
    (lambda d: d["nodes"][0].update(op=""), "op must be"),
    (lambda d: d["nodes"][0].update(seconds=-1.0), "seconds"),
    (lambda d: d["nodes"][0].update(counts={"ntt": -1}), "counts"),
    (lambda d: d.update(outputs=[9]), "outputs"),
    (lambda d: d.update(names={"x": "a"}), "not a value id"),
])
def test_malformed_json_is_a_value_error(edit, message):
    d = _doc()
    Graph.from_dict(d)  # the unedited document is valid
    edit(d)
    with pytest.raises(ValueError, match=message):
        Graph.from_dict(json.loads(json.dumps(d)))


def test_not_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_bytes(b"{not json")
    with pytest.raises(ValueError, match="invalid JSON"):
        ember.graph.load(p)
    p.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not an object"):
        ember.graph.load(p)


def test_critical_path_known_answer():
    """A diamond 0 -> {1, 2} -> 3 plus a lone node 4: with costs 1, 5, 2, 1, 6 the longest path is 0-1-3 (7)."""
    g = Graph()
    v = [g.add_value("ciphertext", 1, 1.0, 8, 10) for _ in range(7)]
    g.add_node("a", [v[0]], [v[1]])
    g.add_node("b", [v[1]], [v[2]])
    g.add_node("c", [v[1]], [v[3]])
    g.add_node("d", [v[2], v[3]], [v[4]])
    g.add_node("e", [v[5]], [v[6]])
    cost = {0: 1, 1: 5, 2: 2, 3: 1, 4: 6}
    assert g.critical_path(cost) == (7.0, [0, 1, 3])
    assert g.critical_path(lambda n: 1.0) == (3.0, [0, 1, 3]) or g.critical_path(lambda n: 1.0)[0] == 3.0
    assert g.critical_path() == (3.0, g.critical_path()[1])  # no seconds: depth in operations
    assert g.edges() == {(0, 1): 10, (0, 2): 10, (1, 3): 10, (2, 3): 10}
    with pytest.raises(ValueError, match="already produced"):
        g.add_node("f", [v[0]], [v[1]])


BOOT = dict(log_n=12, levels=2, slots=16, insecure=True)


def test_bootstrapping_is_many_operations():
    ctx = ember.Context(ember.CkksParams.bootstrappable(**BOOT))
    keys = ctx.keygen(bootstrapping=True)
    x = ctx.encrypt(np.full(16, 0.25), keys.public)
    with ember.graph(ctx) as g:
        y = ctx.bootstrap(x)
    assert len(g) >= 100  # EvalMod alone is a degree-111 polynomial and an arcsine: hundreds of operations
    assert {"mul", "rescale", "conjugate"} <= set(g.op_counts())
    assert max(n.level for n in g.nodes) > ctx.user_level  # it runs on the bootstrapping levels
    assert np.abs(ctx.decrypt(y, keys.secret)[:16] - 0.25).max() < 1e-3  # capture does not change the result


def test_draw_small_graph(small, tmp_path):
    ctx, keys, x, y = small
    with ember.graph() as g:
        (x * y + x).rotate(1)
    g.draw(tmp_path / "g.png")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    big = Graph()
    v = big.add_value("ciphertext", 1, 1.0, 8, 1)
    for _ in range(5):
        w = big.add_value("ciphertext", 1, 1.0, 8, 1)
        big.add_node("add", [v], [w])
    with pytest.raises(ValueError, match="small graphs"):
        big.draw(tmp_path / "big.png", max_nodes=3)
