"""Check the docstrings of Ember's public Python API with numpydoc's validator.

The public API is every name in the ``__all__`` of the packages listed in ``PACKAGES`` and the public methods and
properties of the classes among them. Each must have a docstring, and that docstring must document every parameter
(a ``Parameters`` section) and, for a function that returns something, a ``Returns`` (or ``Yields``) section.
The same checks run in the Sphinx build (``numpydoc_validation_checks`` in docs/conf.py); this script gives the
list without building the site::

    python docs/check_docstrings.py            # every finding, then a count; exit status 1 if any
    python docs/check_docstrings.py ember.sched  # one package
"""
from __future__ import annotations

import importlib
import inspect
import sys

from numpydoc.validate import validate

PACKAGES = ["ember", "ember.heaan", "ember.graph", "ember.sim", "ember.sched", "ember.run", "ember.apps"]
# GL08: no docstring; PR01: a parameter not documented; PR02: a documented parameter that does not exist;
# RT01: no Returns section; SS01: no summary line; YD01: a generator without Yields.
CHECKS = {"GL08", "PR01", "PR02", "RT01", "SS01", "YD01"}


def _public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in ("__call__",):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member):
            yield name, False
        elif isinstance(member, property):
            yield name, True


def public_names(packages=PACKAGES):
    """Yield the dotted import path of every public name of the given packages.

    Parameters
    ----------
    packages : list of str
        Packages whose ``__all__`` defines the public API.

    Yields
    ------
    path : str
        A path that ``numpydoc.validate.validate`` accepts.
    is_property : bool
        Whether it names a property (which documents neither parameters nor a return value).
    """
    seen = set()
    for pkg in packages:
        mod = importlib.import_module(pkg)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
                continue  # constants and submodules are documented by their package
            path = f"{pkg}.{name}"
            key = id(obj)
            if key in seen:
                continue
            seen.add(key)
            yield path, False
            if inspect.isclass(obj):
                for m, prop in _public_members(obj):
                    yield f"{path}.{m}", prop


def findings(packages=PACKAGES):
    """Return the numpydoc findings of the public API.

    Parameters
    ----------
    packages : list of str
        Packages to check.

    Returns
    -------
    list of tuple
        ``(path, code, message)`` for each finding.
    """
    out = []
    for path, prop in public_names(packages):
        if prop:  # a property documents neither parameters nor a return value: it needs a docstring only
            owner, _, attr = path.rpartition(".")
            mod, _, cls = owner.rpartition(".")
            if not inspect.getattr_static(getattr(importlib.import_module(mod), cls), attr).__doc__:
                out.append((path, "GL08", "The object does not have a docstring"))
            continue
        try:
            res = validate(path)
        except (StopIteration, TypeError, ValueError) as e:  # numpydoc cannot read the source (a native object)
            out.append((path, "SRC", f"numpydoc could not validate it ({type(e).__name__})"))
            continue
        for code, msg in res["errors"]:
            if code not in CHECKS:
                continue
            out.append((path, code, msg))
    return out


def main(argv):
    """Print the findings and return the exit status.

    Parameters
    ----------
    argv : list of str
        Packages to check (default: all of ``PACKAGES``).

    Returns
    -------
    int
        0 when there is no finding, else 1.
    """
    found = findings(argv or PACKAGES)
    for path, code, msg in found:
        print(f"{path}: {code} {msg}")
    print(f"{len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
