"""One-way layering of the Python package (issue 26), checked on the source of every module with `ast`:

    core (ember/*.py and the _ember binding) -> graph, sim (the models) -> sched -> run -> apps -> cli

* each layer imports only the layers below it (graph and sim are peers: neither imports the other), at module
  level or inside a function alike; the one exception is the root package's facade, ember/__init__.py, which
  imports ember.graph so that ``ember.graph(ctx)`` works after ``import ember``;
* nothing underscore-private crosses a module: no ``from ember.x import _name`` (from another module, in any
  package) and no ``name._private`` on a module, class or function imported from another layer (the binding
  module ``ember._ember`` is the core layer's, usable everywhere);
* reflection counts: ``importlib.import_module("ember.x")`` is an import of ember.x;
* no import cycles between modules (function-level imports included).

test_checker_catches_planted_violations plants each kind of violation in a copy of the package and checks that
the checker reports it, so that a checker that saw nothing would fail.
"""
import ast
import pathlib
import shutil

import pytest

import ember

ROOT = pathlib.Path(ember.__file__).resolve().parent
LAYERS = {"core": 0, "graph": 1, "sim": 1, "sched": 2, "run": 3, "apps": 4, "cli": 5}
BINDING = "ember._ember"
FACADE = {("ember", "graph")}          # (importing module's layer-package, imported layer) allowed upward


def _modules(root: pathlib.Path) -> dict:
    """module name -> path, for every .py file of the package at root."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _layer(mod: str) -> str:
    parts = mod.split(".")
    if mod == "ember.__main__":     # `python -m ember`: the command line's entry point
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


def _imports(mod: str, path: pathlib.Path, modules: dict):
    """(line, target module, imported name or None) for every import of an ember module in the file, and the
    local names bound to ember modules (for attribute checks)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    package = mod if is_pkg else mod.rpartition(".")[0]
    found, aliases = [], {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and node.args[0].value.split(".")[0] == "ember"):
            found.append((node.lineno, node.args[0].value, None))       # reflection
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "ember" or a.name.startswith("ember."):
                    found.append((node.lineno, a.name, None))
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "ember"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if not (src == "ember" or src.startswith("ember.")):
                continue
            for a in node.names:
                sub = f"{src}.{a.name}"
                if sub in modules or sub == BINDING:    # a submodule: the import is of that module
                    found.append((node.lineno, sub, None))
                    aliases[a.asname or a.name] = sub
                else:
                    found.append((node.lineno, src, a.name))
                    aliases[a.asname or a.name] = src   # a class or function of src: its attributes are src's
    attrs = [(n.lineno, aliases[n.value.id], n.attr) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases]
    return found, attrs


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def check(root: pathlib.Path = ROOT) -> list[str]:
    """Every layering violation of the package at root, one line each."""
    modules = _modules(root)
    problems, edges = [], {m: set() for m in modules}
    for mod, path in modules.items():
        src_layer = _layer(mod)
        found, attrs = _imports(mod, path, modules)
        where = f"{path.relative_to(root.parent)}"
        for line, target, name in found:
            tgt_layer = _layer(target)
            if target in modules:
                edges[mod].add(target)
            if tgt_layer != src_layer:
                up = LAYERS[tgt_layer] >= LAYERS[src_layer]
                if up and not (mod == "ember" and tgt_layer == "graph"):
                    problems.append(f"{where}:{line}: layer {src_layer} imports {target} (layer {tgt_layer}), "
                                    f"which is not below it")
                if target != BINDING and _private(target.rpartition(".")[2]):
                    problems.append(f"{where}:{line}: private module {target} imported from another package")
            if name is not None and _private(name) and target != mod and f"{target}.{name}" != BINDING:
                problems.append(f"{where}:{line}: private name {name} imported from {target} (another module)")
        for line, target, attr in attrs:
            if _layer(target) != src_layer and _private(attr) and f"{target}.{attr}" != BINDING:
                problems.append(f"{where}:{line}: private attribute {target}.{attr} of another package")
    for cycle in _cycles(edges):
        problems.append("import cycle: " + " -> ".join(cycle + cycle[:1]))
    return problems


def _cycles(edges: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_layers_import_one_way():
    assert check() == []


def test_every_layer_is_found():
    """The checker sees every package of the picture (a renamed package would silently leave the check)."""
    modules = _modules(ROOT)
    assert {_layer(m) for m in modules} == set(LAYERS)
    assert len(modules) > 60


@pytest.mark.parametrize("plant, expect", [
    # an upward import (sched -> apps), at function level
    (("sched/plan.py", "\n\ndef _planted():\n    from ..apps import graph_of\n    return graph_of\n"),
     "layer sched imports ember.apps"),
    # a peer import (sim -> graph)
    (("sim/model.py", "\nfrom ..graph import Graph  # noqa\n"), "layer sim imports ember.graph"),
    # a private name across packages (run <- sched)
    (("run/bench.py", "\nfrom ..sched.costs import _ring_of  # noqa\n"), "private name _ring_of"),
    # a private attribute of another package's module
    (("apps/demo.py", "\nfrom ..sim import kernels as _k\n_x = _k._secret\n"), "private attribute ember.sim.kernels._secret"),
    # reflection: sched reaching into apps by name
    (("sched/plan.py", "\n\ndef _planted():\n    import importlib\n    return importlib.import_module('ember.apps')\n"),
     "layer sched imports ember.apps"),
    # a cycle inside a layer
    (("sched/problem.py", "\nfrom . import plan  # noqa\n"), "import cycle"),
])
def test_checker_catches_planted_violations(tmp_path, plant, expect):
    copy = tmp_path / "ember"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    assert check(copy) == []                      # the copy is clean, like the package
    rel, text = plant
    with open(copy / rel, "a") as f:
        f.write(text)
    problems = check(copy)
    assert any(expect in p for p in problems), problems
