"""Sphinx extension: the C++ reference, from Doxygen XML of Ember's public headers, for Breathe.

At ``builder-inited`` it reads the public header list (``EMBER_API_HEADERS`` in ``cmake/EmberHeaders.cmake``: the
headers ``cmake --install`` gives a user to include), runs ``doxygen`` on them with a configuration written here
(XML only) into ``ember_doxygen_dir`` (Breathe's ``ember`` project in conf.py points there), and writes
``_generated/cpp_api.inc``: a section per header with its opening comment and a Breathe directive for every class,
struct, function, enum, typedef and variable it declares. ``docs/cpp/api.rst`` includes that file. The headers'
``///`` comments are the documentation. ``support_names()`` lists the types of the support headers (installed, not
documented), which conf.py lets the documented signatures name without a target.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)


def public_headers(root: Path) -> list[str]:
    """The API headers (paths under cpp/) listed in cmake/EmberHeaders.cmake."""
    text = (root / "cmake" / "EmberHeaders.cmake").read_text()
    m = re.search(r"set\(EMBER_API_HEADERS\s+(.*?)\)", text, re.DOTALL)
    if not m:
        raise ExtensionError("cmake/EmberHeaders.cmake has no set(EMBER_API_HEADERS ...)")
    return m.group(1).split()


def _opening_comment(path: Path) -> str:
    """The header's opening ``//`` comment block (what the file is for), as one paragraph of text."""
    lines = []
    for line in path.read_text().splitlines():
        s = line.strip()
        if s.startswith("//"):
            lines.append(s.lstrip("/").strip())
        elif lines or not (s.startswith("#pragma") or not s):
            break
    return " ".join(l for l in lines if l)


def _escape(text: str) -> str:
    return re.sub(r"([\\*`|_\[\]])", r"\\\1", text)


def entities(xml: Path) -> dict[str, list[tuple[int, str, str]]]:
    """What each header declares, from Doxygen's XML: {header: [(line, directive, argument)]}, in file order.

    Classes and structs (not nested ones: their enclosing class shows them), and the namespace-level functions,
    enums, typedefs and variables; a function's argument is its full signature, so that overloads resolve.
    """
    out: dict[str, list[tuple[int, str, str]]] = {}

    def add(loc, directive, arg):
        if loc is None:
            return
        out.setdefault(loc.get("file"), []).append((int(loc.get("line", 0)), directive, arg))

    index = ET.parse(xml / "index.xml").getroot()
    classes = {c.findtext("name") for c in index.findall("compound") if c.get("kind") in ("class", "struct")}
    for c in index.findall("compound"):
        kind, refid = c.get("kind"), c.get("refid")
        if kind in ("class", "struct"):
            name = c.findtext("name")
            if name.rsplit("::", 1)[0] in classes:
                continue
            d = ET.parse(xml / f"{refid}.xml").getroot().find("compounddef")
            add(d.find("location"), f"doxygen{kind}", name)
        elif kind == "namespace":
            d = ET.parse(xml / f"{refid}.xml").getroot().find("compounddef")
            for m in d.iter("memberdef"):
                mk, q = m.get("kind"), m.findtext("qualifiedname")
                if mk == "function":
                    add(m.find("location"), "doxygenfunction", q + (m.findtext("argsstring") or "()"))
                elif mk in ("enum", "typedef", "variable"):
                    add(m.find("location"), f"doxygen{mk}", q)
    for items in out.values():
        items.sort()
    return out


def support_names(root: Path) -> list[str]:
    """Types declared by the support headers (EMBER_SUPPORT_HEADERS: installed, not documented) and the
    namespaces: what the documented signatures may name without a target here."""
    text = (root / "cmake" / "EmberHeaders.cmake").read_text()
    m = re.search(r"set\(EMBER_SUPPORT_HEADERS\s+(.*?)\)", text, re.DOTALL)
    names = {"ember", "ember::heaan", "ember::trace", "ember::oprec", "heaan", "trace", "oprec"}
    for h in (m.group(1).split() if m else []):
        src = (root / "cpp" / h).read_text()
        names.update(re.findall(r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct|enum(?:\s+class)?)\s+(\w+)\s*(?:final\s*)?[:{;]",
                                src, re.MULTILINE))
        names.update(re.findall(r"^\s*using\s+(\w+)\s*=", src, re.MULTILINE))
    return sorted(names)


def run_doxygen(app) -> None:
    root = Path(app.srcdir).parent
    out = Path(app.config.ember_doxygen_dir)
    if not out.is_absolute():
        out = root / out
    doxygen = shutil.which("doxygen")
    if doxygen is None:
        raise ExtensionError("doxygen is not installed (Debian: apt-get install doxygen; `make docs` installs it)")
    headers = public_headers(root)
    config = "\n".join([
        "PROJECT_NAME = Ember",
        "INPUT = " + " ".join(f"cpp/{h}" for h in headers),
        f"OUTPUT_DIRECTORY = {out}",
        "GENERATE_XML = YES", "GENERATE_HTML = NO", "GENERATE_LATEX = NO", "XML_PROGRAMLISTING = NO",
        "STRIP_FROM_PATH = cpp", "STRIP_FROM_INC_PATH = cpp", "FULL_PATH_NAMES = YES",
        "EXTRACT_ALL = YES", "EXTRACT_PRIVATE = NO", "EXTRACT_STATIC = YES",
        "EXCLUDE_SYMBOLS = detail detail::* *::detail::*",
        "ENABLE_PREPROCESSING = YES", "MACRO_EXPANSION = NO", "SEARCH_INCLUDES = NO",
        "QUIET = YES", "WARNINGS = NO", "WARN_IF_UNDOCUMENTED = NO",
        "CASE_SENSE_NAMES = YES", "MARKDOWN_SUPPORT = NO", "AUTOLINK_SUPPORT = NO",
        "",
    ])
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([doxygen, "-"], check=False, input=config, cwd=root, capture_output=True, text=True)
    xml = out / "xml"
    if r.returncode != 0 or not (xml / "index.xml").is_file():
        raise ExtensionError(f"doxygen failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")

    declared = entities(xml)
    lines = []
    for h in headers:
        title = f"``#include <ember/{h}>``"
        lines += [title, "-" * len(title), ""]
        intro = _opening_comment(root / "cpp" / h)
        if intro:
            lines += [_escape(intro), ""]
        for _, directive, arg in declared.get(h, []):
            lines += [f".. {directive}:: {arg}"]
            if directive in ("doxygenclass", "doxygenstruct"):
                lines += ["   :members:", "   :undoc-members:"]
            lines += [""]
    inc = Path(app.srcdir) / "_generated" / "cpp_api.inc"
    inc.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if not inc.exists() or inc.read_text() != text:
        inc.write_text(text)
    logger.info("ember_doxygen: %d public headers -> %s", len(headers), xml)


def setup(app):
    app.add_config_value("ember_doxygen_dir", "build/docs/doxygen", "env")
    app.connect("builder-inited", run_doxygen)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
