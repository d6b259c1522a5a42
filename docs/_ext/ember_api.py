"""Sphinx extension: an API page per package, generated from the package's ``__all__``.

``.. ember-api:: ember.sched`` documents the package's docstring, then every name in its ``__all__``, in order, with
the autodoc directive that fits it: ``autoclass`` (methods and properties, also those inherited from Ember's own
base classes), ``autofunction``, ``autodata`` for constants, and ``automodule`` for a submodule listed there. So a
name added to ``__all__`` appears in the reference without editing the page, and the names autodoc cannot find by
itself (lazily imported ones such as ``ember.run.DaskExecutor``, nanobind functions) are documented too.
"""
from __future__ import annotations

import importlib
import inspect

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_LONG_VALUE = 70  # a constant whose repr is longer is shown without its value


def _is_routine(obj) -> bool:
    return inspect.isroutine(obj) or (callable(obj) and type(obj).__name__ in ("nb_func", "nb_method"))


def api_lines(package: str) -> list[str]:
    """The reStructuredText of one package's reference."""
    mod = importlib.import_module(package)
    lines = [f".. automodule:: {package}", ""]
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        path = f"{package}.{name}"
        if inspect.ismodule(obj):
            title = f"``{path}``"
            lines += [title, "-" * len(title), "", f".. automodule:: {obj.__name__}", "   :members:",
                      "   :undoc-members:", ""]
        elif inspect.isclass(obj):
            lines += [f".. autoclass:: {path}", "   :members:", "   :undoc-members:", "   :inherited-members:", ""]
        elif _is_routine(obj):
            lines += [f".. autofunction:: {path}", ""]
        else:
            lines += [f".. autodata:: {path}"]
            if len(repr(obj)) > _LONG_VALUE:
                lines += ["   :no-value:"]
            lines += [""]
    return lines


class EmberApi(SphinxDirective):
    """``.. ember-api:: PACKAGE``: the reference of every name in PACKAGE.__all__."""

    required_arguments = 1

    def run(self):
        package = self.arguments[0]
        self.env.note_dependency(inspect.getfile(importlib.import_module(package)))
        content = StringList(api_lines(package), source=f"<ember-api {package}>")
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, content, node)
        return node.children


def setup(app):
    app.add_directive("ember-api", EmberApi)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
