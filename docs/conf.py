"""Sphinx configuration of Ember's documentation (``make docs``).

The build is offline: no intersphinx, no remote images or fonts fetched at build time. ``make docs`` runs it with
``-W --keep-going -n`` (every warning is an error, references are checked) twice: the doctest builder (the
tutorial's code runs) and the HTML builder (output in build/docs/html).

The Python reference is autodoc of the *importable* ``ember`` package (``make docs`` installs it into build/venv
first): each API page documents its package's ``__all__``. numpydoc renders and validates the docstrings with the
same checks as docs/check_docstrings.py. The C++ reference is Breathe over Doxygen XML of the public headers
(_ext/ember_doxygen.py). The command-line reference is generated from the ``ember`` command's argparse parsers
(_ext/ember_cli.py), the benchmark figures by docs/figures/make_figures.py (_ext/ember_figures.py).
"""
from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import ember  # noqa: E402,F401  (fail early unless the package being documented is importable)

project = "Ember"
author = "the Ember authors"
copyright = "the Ember authors; Apache License 2.0"
release = (ROOT / "VERSION").read_text().strip()
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "numpydoc",
    "breathe",
    "ember_api",
    "ember_cli",
    "ember_doxygen",
    "ember_figures",
]

exclude_patterns = ["_generated", "figures", "_ext", "check_docstrings.py"]
root_doc = "index"
language = "en"
nitpicky = True
default_role = "code"           # `x` is inline code, never a silent reference
highlight_language = "python3"
pygments_style = "sphinx"
templates_path: list[str] = []

# --- HTML ------------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"Ember {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {"navigation_with_keys": True}

# --- Python API: autodoc + numpydoc -----------------------------------------------------------------------------
PACKAGES = ["ember", "ember.heaan", "ember.graph", "ember.sim", "ember.sched", "ember.run", "ember.apps"]

# The API pages are generated from each package's __all__ (_ext/ember_api.py): classes with :members:,
# :undoc-members: (a public name without a docstring is still documented, so that numpydoc reports it: GL08) and
# :inherited-members: (from Ember's own base classes only, see _skip_member).
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"       # the numpydoc sections give the types; signatures stay readable
autodoc_class_signature = "mixed"
autodoc_inherit_docstrings = True
add_module_names = False
python_display_short_literal_types = True

numpydoc_show_class_members = False      # autodoc documents the members; no autosummary tables
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False         # types stay text: no intersphinx to resolve numpy / builtins against
numpydoc_attributes_as_param_list = True
# The checks of docs/check_docstrings.py, over the same names: the functions and classes in each package's
# __all__ and the methods and properties the classes define themselves. Constants, submodules and members a class
# inherits (documented once where they are defined) are left out, as the script leaves them out.
numpydoc_validation_checks = {"GL08", "PR01", "PR02", "RT01", "SS01", "YD01"}


def _public_owned(cls) -> set[str]:
    out = set()
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            out.add(name)
    return out


PROPERTIES: set[str] = set()   # public properties: they need a docstring (GL08), checked by _property_docstring


def _validation_exclusions() -> list[str]:
    """Regexes (numpydoc_validation_exclude) for what check_docstrings.py does not validate with numpydoc."""
    out = [r"^ember\.[\w.]*\._\w+$"]   # private names
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            path = re.escape(f"{pkg}.{name}")
            if inspect.ismodule(obj):
                out.append(rf"^{re.escape(obj.__name__)}(\..*)?$")   # a submodule and what it documents
                continue
            if not (inspect.isclass(obj) or callable(obj)):
                out.append(rf"^{path}$")               # a constant
                continue
            if inspect.isclass(obj):
                owned = _public_owned(obj)
                for attr in dir(obj):
                    if attr.startswith("_"):
                        continue
                    if attr not in owned:
                        out.append(rf"^{path}\.{re.escape(attr)}$")   # inherited, or a plain attribute
                    elif isinstance(inspect.getattr_static(obj, attr), property):
                        # a property documents neither parameters nor a return value: it needs a docstring only
                        # (numpydoc's validator cannot read the source of a lambda property)
                        out.append(rf"^{path}\.{re.escape(attr)}$")
                        PROPERTIES.add(f"{pkg}.{name}.{attr}")
    return out


numpydoc_validation_exclude = set(_validation_exclusions())


def _skip_member(app, what, name, obj, skip, options):
    """A class's API is its methods and properties (as in check_docstrings.py): plain attributes (dataclass fields,
    constants) are documented by the class docstring, and members inherited from outside Ember (object, Exception,
    dict, ...) are not Ember's."""
    if what != "class" or skip:
        return None
    if not (callable(obj) or isinstance(obj, (property, classmethod, staticmethod))):
        return True
    module = getattr(obj, "__module__", None) or getattr(getattr(obj, "fget", None), "__module__", None)
    if module is not None and not str(module).startswith("ember"):
        return True
    return None


def _property_docstring(app, what, name, obj, options, lines):
    """GL08 for a public property without a docstring (what check_docstrings.py checks for properties)."""
    if name in PROPERTIES and not any(line.strip() for line in lines):
        from sphinx.util import logging
        logging.getLogger("numpydoc").warning(
            f"[numpydoc] Validation warnings while processing docstring for {name!r}:\n"
            "  GL08: The object does not have a docstring\n")


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _property_docstring, priority=400)


# --- doctest: the tutorial's code runs (sphinx -b doctest) ------------------------------------------------------
doctest_global_setup = """
import numpy as np
import ember
"""
doctest_test_doctest_blocks = ""   # only explicit doctest / testcode blocks run, not the >>> lines of docstrings

# --- C++ API: Doxygen XML + Breathe -----------------------------------------------------------------------------
ember_doxygen_dir = str(ROOT / "build" / "docs" / "doxygen")
breathe_projects = {"ember": str(ROOT / "build" / "docs" / "doxygen" / "xml")}
breathe_default_project = "ember"
breathe_default_members = ("members",)
breathe_show_include = False   # each header is a section title of its own
cpp_index_common_prefix = ["ember::"]
# Names the documented signatures use without a target here: the standard library (no intersphinx), the
# namespaces, and the types of the support headers (installed because the API headers include them, not documented).
from ember_doxygen import support_names  # noqa: E402  (docs/_ext, on sys.path above)

nitpick_ignore_regex = [
    (r"cpp:.*", r"std(::.*)?"),
    (r"cpp:.*", r"u?int\d+_t|size_t|ptrdiff_t"),
    (r"cpp:.*", r"(ember::)?(heaan::)?(" + "|".join(re.escape(n) for n in support_names(ROOT)) + r")(::\w+)*"),
]
