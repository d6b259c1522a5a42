"""Deprecated: the built-in programs moved to :mod:`ember.graph.programs`.

That is the one registry of named programs (``ember.graph.graph_of(name)``); this module is kept for one release
and warns on import.

The toy program that was ``helr`` here is ``lr-toy`` there (``lr_toy_graph``); ``helr`` now names HELR training as
ember.apps.logreg runs it, everywhere.
"""
from __future__ import annotations

import warnings

from ..graph.programs import boot_graph, lr_toy_graph
from ..graph.symbolic import capture_program

warnings.warn("ember.sched.programs is deprecated: use ember.graph.graph_of / ember.graph.programs (its 'helr' is "
              "now 'lr-toy', lr_toy_graph)", DeprecationWarning, stacklevel=2)

#: The old name of the toy program (one release).
helr_graph = lr_toy_graph

__all__ = ["boot_graph", "capture_program", "helr_graph", "lr_toy_graph"]
