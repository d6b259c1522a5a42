"""One serialisation convention (issue 26): graphs, cost tables, schedules, platforms, device profiles and executor
overheads
all have to_dict / from_dict / save / load; a save-load round trip rebuilds the same object (compared through an
independent reading of the file: json.loads of what save wrote equals to_dict); the old text verbs (to_json /
from_json) still work one release, with a DeprecationWarning."""
import inspect
import json
import warnings

import pytest

import ember
from ember.graph import Graph
from ember.run import RunResult
from ember.sched.costs import CostTable
from ember.sched.overhead import ExecutorOverhead
from ember import sched
from ember.sched.platform import Platform, paper
from ember.sched.schedule import Schedule
from ember.sim import devices


def _graph():
    return ember.graph.graph_of("boot", log_n=12, levels=2, insecure=True, symbolic=True)


def _costs():
    t = CostTable()
    t.set("cpu", "mul", 3, 0.25, "measured", "a note")
    t.set("cpu", "rotate", 2, 0.5, "measured", "a note")
    return t


def _overhead():
    return ExecutorOverhead.fit(RunResult([], 1.0, {0: 0.3, 1: 0.3, 2: 0.3, 3: 0.3},
                                          records=[{"open_s": 0.01, "publish_s": 0.02}] * 4), 2)


def _schedule():
    # task keys that are tuples (as limb splits make), a device that cannot run a task (inf), duplicated tasks
    import math
    import random
    from test_sched import random_dag
    cost, edges, bw, lat = random_dag(random.Random(5), 25, 3, density=0.3)   # best duplicates 2 tasks here
    key = {t: (t, i % 2) for i, t in enumerate(cost)}
    cost = {key[t]: row for t, row in cost.items()}
    cost[next(iter(cost))][0] = math.inf
    edges = {(key[u], key[v]): b for (u, v), b in edges.items()}
    return sched.best(cost, edges, bw, lat, duplicate=True, improve=20)


OBJECTS = {"schedule": (Schedule, _schedule), "graph": (Graph, _graph), "cost table": (CostTable, _costs), "platform": (Platform, lambda: paper(2, 2)),
           "profile": (devices.Profile, lambda: devices.load("h100")), "overhead": (ExecutorOverhead, _overhead)}


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_four_verbs_round_trip(name, tmp_path):
    cls, make = OBJECTS[name]
    for verb in ("to_dict", "save"):
        assert callable(getattr(cls, verb, None)), f"{cls.__name__}.{verb}"
    for verb in ("from_dict", "load"):                      # constructors: class methods
        assert isinstance(inspect.getattr_static(cls, verb, None), classmethod), f"{cls.__name__}.{verb}"  # own or inherited
    obj = make()
    d = obj.to_dict()
    path = tmp_path / "x.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                      # the current verbs do not warn
        obj.save(path)
        assert json.loads(path.read_text()) == json.loads(json.dumps(d))
        back = cls.load(path)
        assert back.to_dict() == d
        assert cls.from_dict(json.loads(json.dumps(d))).to_dict() == d
    if cls is Schedule:                                     # rebuilt exactly: keys, placement, copies, validity
        assert back.device == obj.device and back.start == obj.start and back.copies == obj.copies
        assert back.order == obj.order and back.problem.w == obj.problem.w and obj.copies
        back.validate()
    path.write_text("{not json")
    with pytest.raises(ValueError):
        cls.load(path)
    with pytest.raises(ValueError):
        cls.from_dict([1, 2])


@pytest.mark.parametrize("cls,make", [(Graph, _graph), (devices.Profile, lambda: devices.load("h100"))])
def test_old_text_verbs_warn_and_still_work(cls, make):
    obj = make()
    with pytest.warns(DeprecationWarning, match=r"to_json\(\) is deprecated"):
        text = obj.to_json()
    with pytest.warns(DeprecationWarning, match=r"from_json\(\) is deprecated"):
        back = cls.from_json(text)
    assert back.to_dict() == obj.to_dict() == json.loads(text)


def test_overhead_from_dict_refuses_nonsense():
    d = _overhead().to_dict()
    assert ExecutorOverhead.from_dict(d) == _overhead()
    for k, v in (("per_task_s", -1.0), ("workers", 0), ("wall_s", float("nan"))):
        with pytest.raises(ValueError):
            ExecutorOverhead.from_dict({**d, k: v})
    with pytest.raises(ValueError, match="not an executor overhead"):
        ExecutorOverhead.from_dict({k: v for k, v in d.items() if k != "tasks"})
