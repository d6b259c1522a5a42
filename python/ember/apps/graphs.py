"""The applications' programs as graphs, re-exported from :mod:`ember.graph.programs`.

They now live in :mod:`ember.graph.programs`, the one registry of named programs (below the scheduler, the
executors and this package).

``graph_of(name, **options)`` is ember.graph.graph_of: ``graph_of("helr")`` is the program ``ember schedule helr``
schedules (resnet20, lola-mnist, lola-cifar, helr, and the built-in boot and lr-toy).
"""
from __future__ import annotations

from ..graph.programs import graph_of
from ..graph.programs.logreg import HELR_SHAPE, helr, helr_expected
from ..graph.programs.lola import LOLA_CIFAR, lola_cifar, lola_mnist
from ..graph.programs.resnet import (RESNET_BLOCKS, RESNET_STAGES, resnet20, resnet20_expected, resnet20_program,
                                     resnet20_rotations)

__all__ = ["graph_of", "HELR_SHAPE", "helr", "helr_expected", "LOLA_CIFAR", "lola_cifar", "lola_mnist", "RESNET_BLOCKS",
           "RESNET_STAGES", "resnet20", "resnet20_expected", "resnet20_program", "resnet20_rotations"]
