"""The named programs: one registry, one name per program, below every layer that uses it.

ember.sched, ember.run, ember.apps and the command line all read it; none adds to it.

    g = ember.graph.graph_of("helr", log_n=16)          # `ember schedule helr`, `ember graph helr`
    sorted(ember.graph.PROGRAMS)                          # boot, helr, lola-cifar, lola-mnist, lr-toy, resnet20

Each program is ordinary Python on ciphertexts (its module), captured symbolically -- no keys, no arithmetic --
by its builder, which returns an :class:`ember.graph.Graph`:

  boot        one bootstrapping of a level-0 ciphertext (bootstrapping.py)
  lr-toy      a toy logistic-regression step (one ciphertext, naive packing) and a bootstrapping (lr_toy.py)
  helr        HELR training as ember.apps.logreg runs it: one cycle of iterations with its bootstrapping (logreg.py)
  lola-mnist  the LoLa-style CNN of ember.apps.cnn, one image (lola.py)
  lola-cifar  a LoLa-CIFAR-shaped CNN, one image (lola.py)
  resnet20    ResNet-20 after Lee et al. ICML'22, random weights (resnet.py)

Options common to the builders: ``log_n``, ``insecure`` and, where the program has computation levels to choose,
``levels``; others are the program's own (see each builder). An option a program does not take is a ValueError
naming the program and its options.
"""
from __future__ import annotations

import inspect
from typing import Callable

from .bootstrapping import boot_graph
from .logreg import helr
from .lola import lola_cifar, lola_mnist
from .lr_toy import lr_toy_graph
from .resnet import resnet20

#: name -> builder(**options) -> Graph.
PROGRAMS: dict[str, Callable] = {
    "boot": boot_graph,
    "lr-toy": lr_toy_graph,
    "helr": helr,
    "lola-mnist": lola_mnist,
    "lola-cifar": lola_cifar,
    "resnet20": resnet20,
}


def options_of(name: str) -> list[str]:
    """Return the keyword options the program `name` takes.

    Parameters
    ----------
    name : str
        A key of ``PROGRAMS``.

    Returns
    -------
    list of str
        Its builder's keyword parameters (``**training``-style extras of helr included by their keys).

    Raises
    ------
    ValueError
        If `name` is not a program.
    """
    build = _builder(name)
    out = [p.name for p in inspect.signature(build).parameters.values()
           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if build is helr:
        from .logreg import TRAINING_DEFAULTS
        out += list(TRAINING_DEFAULTS)
    return out


def graph_of(name: str, **options):
    """Return the graph of the named program.

    Parameters
    ----------
    name : str
        One of ``PROGRAMS``: boot, lr-toy, helr, lola-mnist, lola-cifar, resnet20.
    **options
        The builder's options (``log_n``, ``levels``, ``insecure``, ...); an option given as None takes the
        program's default.

    Returns
    -------
    ember.graph.Graph
        The program's symbolic graph.

    Raises
    ------
    ValueError
        If the program is unknown, or does not take one of the options.

    Examples
    --------
    >>> g = graph_of("boot", log_n=12, levels=2, insecure=True)    # doctest: +SKIP
    >>> g.meta["program"]                                           # doctest: +SKIP
    'bootstrapping N=2^12'
    """
    build = _builder(name)
    given = {k: v for k, v in options.items() if v is not None}
    known = options_of(name)
    bad = sorted(k for k in given if k not in known)
    if bad:
        raise ValueError(f"program {name!r} takes no option {', '.join(bad)} (its options: {', '.join(known)})")
    return build(**given)


def _builder(name: str) -> Callable:
    if name not in PROGRAMS:
        raise ValueError(f"unknown program {name!r}; one of {', '.join(PROGRAMS)}")
    return PROGRAMS[name]


__all__ = ["PROGRAMS", "graph_of", "options_of", "boot_graph", "lr_toy_graph", "helr", "lola_mnist", "lola_cifar",
           "resnet20"]
