"""Mutation fuzzing of the JSON loaders (ember.graph, sim device profiles): thousands of hostile variants of
valid documents -- values replaced by wrong types, huge or negative numbers, NaN, deep nesting; keys
dropped; the text truncated or its bytes flipped. Each must load (and then work) or raise ValueError; any
other exception is a bug. Deterministic (seeded); the C++ readers are fuzzed by fuzz/ (`make fuzz`)."""
import copy
import json
import random

import pytest

from ember.graph import Graph
from ember.sim import devices

# the text verbs (Graph/Profile.from_json, to_json) are deprecated but kept one release: fuzzed while they exist
pytestmark = pytest.mark.filterwarnings(r"ignore:.*(to|from)_json\(\) is deprecated:DeprecationWarning")

HOSTILE = [None, True, False, 0, -1, 1, 2 ** 63, -(2 ** 63), 2 ** 200, 1.5, -0.0, float("nan"), float("inf"),
           float("-inf"), "", "x", "0", [], [0], [[[]]], {}, {"id": 0}, 1e308]


def _paths(d, prefix=()):
    """Every (container, key) path of a JSON document."""
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


def _mutate(doc, rnd: random.Random):
    """A structurally mutated copy of doc (as JSON text), or a byte-mutated text."""
    d = copy.deepcopy(doc)
    nested_once = False
    for _ in range(rnd.randint(1, 3)):
        paths = _paths(d)
        if not paths:
            break
        path = rnd.choice(paths)
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        r = rnd.random()
        if r < 0.6:
            parent[key] = copy.deepcopy(rnd.choice(HOSTILE))
        elif r < 0.75:
            del parent[key]
        elif r < 0.85 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif not nested_once:
            nested_once = True
            nested = parent[key]
            for _ in range(rnd.choice([2, 50, 200])):
                nested = [nested]
            parent[key] = nested
    text = json.dumps(d, allow_nan=True)
    if rnd.random() < 0.02:  # nesting deeper than Python's recursion limit
        return '{"values": ' + "[" * 100000 + "]" * 100000 + ', "name": "x"}'
    if rnd.random() < 0.2:
        b = bytearray(text.encode())
        if rnd.random() < 0.5:
            b = b[: rnd.randrange(len(b) + 1)]
        else:
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    return text


def _graph_doc():
    return {"format": "ember-graph", "version": 1, "meta": {"mode": "live"},
            "values": [{"id": 0, "kind": "ciphertext", "level": 3, "scale": 2.0 ** 40, "slots": 8, "bytes": 100},
                       {"id": 1, "kind": "ciphertext", "level": 2, "scale": 2.0 ** 40, "slots": 8, "bytes": 80},
                       {"id": 2, "kind": "ciphertext", "level": 2, "scale": 2.0 ** 40, "slots": 8, "bytes": 80},
                       {"id": 3, "kind": "plaintext", "level": 2, "scale": 2.0 ** 40, "slots": 8, "bytes": 40}],
            "nodes": [{"id": 0, "op": "mul", "in": [0, 0], "out": [1], "seconds": 0.5, "counts": {"ntt": 4}},
                      {"id": 1, "op": "rotate", "in": [1], "out": [2], "params": {"steps": 1}, "seconds": 0.25},
                      {"id": 2, "op": "add_plain", "in": [2, 3], "out": [], "seconds": 0.0}],
            "outputs": [2], "names": {"0": "x", "2": "y"}}


@pytest.mark.parametrize("seed", range(4))
def test_graph_loader_never_crashes(seed):
    rnd = random.Random(seed)
    doc = _graph_doc()
    Graph.from_json(json.dumps(doc))  # the unmutated document is valid
    loaded = refused = 0
    for _ in range(750):
        text = _mutate(doc, rnd)
        try:
            g = Graph.from_json(text)
        except ValueError:
            refused += 1
            continue
        loaded += 1
        # an accepted graph works: counts, edges, critical path, a round trip
        g.op_counts(), g.total_counts(), g.edges(), g.critical_path(), g.summary()
        assert Graph.from_json(g.to_json()).to_dict() == g.to_dict()
    assert refused > 0 and loaded > 0, (loaded, refused)


def test_device_profile_loader_never_crashes():
    rnd = random.Random(7)
    doc = json.loads(devices.load("h100").to_json())
    devices.Profile.from_json(json.dumps(doc))
    refused = 0
    for _ in range(1500):
        text = _mutate(doc, rnd)
        try:
            p = devices.Profile.from_json(text)
        except ValueError:
            refused += 1
            continue
        assert devices.Profile.from_json(p.to_json()).to_json() == p.to_json()
    assert refused > 0


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(mul_per_s=-1.0), "mul_per_s"),
    (lambda d: d.update(bandwidth="fast"), "bandwidth"),
    (lambda d: d.pop("name"), "name"),
    (lambda d: d.update(kernel_rates=[1, 2]), "kernel_rates"),
    (lambda d: d.update(kernel_rates={"ntt": float("nan")}), "kernel_rates"),
    (lambda d: d.update(threads=1.5), "threads"),
])
def test_device_profile_errors(edit, message):
    d = json.loads(devices.load("h100").to_json())
    edit(d)
    with pytest.raises(ValueError, match=message):
        devices.Profile.from_json(json.dumps(d))
    with pytest.raises(ValueError, match="not an object"):
        devices.Profile.from_json("[1]")


# Regression tests: the inputs the mutation fuzzer found, each once a TypeError, RecursionError or a graph
# that loaded but could not be written back.
@pytest.mark.parametrize("edit, message", [
    (lambda d: d["nodes"][0].update({"in": [[0]]}), "list of value ids"),          # was TypeError (int(list))
    (lambda d: d["nodes"][1].update(out=[{"id": 2}]), "list of value ids"),      # was TypeError (unhashable)
    (lambda d: d.update(outputs=[[2]]), "outputs"),                               # was TypeError (unhashable)
    (lambda d: d["meta"].update(x=float("nan")), "non-finite"),                   # loaded, to_json() failed
    (lambda d: d["nodes"][1]["params"].update(steps=float("inf")), "non-finite"),
])
def test_graph_fuzzer_findings(edit, message):
    d = _graph_doc()
    edit(d)
    with pytest.raises(ValueError, match=message):
        Graph.from_json(json.dumps(d))


def test_deep_nesting_is_a_value_error():
    deep = '{"format": "ember-graph", "values": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(ValueError, match="invalid JSON"):                          # was RecursionError
        Graph.from_json(deep)
    with pytest.raises(ValueError, match="invalid JSON"):
        devices.Profile.from_json(deep)
