"""Applications written against Ember's public Python API.

* ``ember.apps.logreg``: encrypted logistic-regression training (HELR), scikit-learn estimators.
* ``ember.apps.cnn``: encrypted CNN inference in the LoLa style on the 8 x 8 digits
  (:class:`EncryptedCNNClassifier`, a scikit-learn classifier).
* ``ember.apps.graphs``: the applications' graphs (``graph_of(name)``: ember.graph.graph_of, the one registry of
  named programs, where the servers' programs live -- ember.graph.programs).
* ``ember.apps.resnet``: ResNet-20's convolution, ReLU and residual block; one block encrypted against float64.
* ``ember.apps.datasets``: the bundled data sets and a generator.
"""
from .logreg import (BOOTSTRAP_OPTIONS, EncryptedLogisticRegression, Float64LogisticRegression,  # noqa: F401
                     Packing, nesterov_schedule, sigmoid_poly, sigmoid_poly_error)
from .cnn import EncryptedCNNClassifier  # noqa: F401,E402
from .graphs import graph_of  # noqa: F401,E402

__all__ = ["EncryptedLogisticRegression", "EncryptedCNNClassifier", "Float64LogisticRegression", "Packing",
           "BOOTSTRAP_OPTIONS", "nesterov_schedule", "sigmoid_poly", "sigmoid_poly_error", "graph_of"]
