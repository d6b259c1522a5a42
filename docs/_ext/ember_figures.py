"""Sphinx extension: the benchmark figures, drawn at build time from committed data.

At ``builder-inited`` it runs ``docs/figures/make_figures.py OUTDIR`` with the building
interpreter; the script reads the committed JSON in ``docs/figures/data/`` and writes the PNGs into OUTDIR
(``docs/_generated/figures``, ignored by git). The ``ember-figure`` directive places one of them::

    .. ember-figure:: peers.png
       :data: peers.json

       Caption text.

and appends to the caption the command, machine and date recorded in the named JSON files (their ``"command"``,
``"machine"`` and ``"date"`` keys, at the top level or in a list of runs), so that every figure names how and
where its numbers were measured. A missing or failing script, a missing data file or PNG, and a data file without
a command or a machine are build errors.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

OUTDIR = Path("_generated") / "figures"  # under the source directory: Sphinx copies the PNGs into _images/


def _script(app) -> Path:
    return Path(app.srcdir) / "figures" / "make_figures.py"


def _data_dir(app) -> Path:
    return Path(app.srcdir) / "figures" / "data"


def make_figures(app) -> None:
    """Run make_figures.py into the generated directory (every builder: the directives read the PNGs)."""
    script, out = _script(app), Path(app.srcdir) / OUTDIR
    if not script.is_file():
        raise ExtensionError(f"{script} is missing: it draws the benchmark figures")
    out.mkdir(parents=True, exist_ok=True)
    logger.info("ember_figures: %s %s", script.name, out)
    r = subprocess.run([sys.executable, str(script), str(out)], check=False, capture_output=True, text=True)
    if r.returncode != 0:
        raise ExtensionError(f"{script} failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")


def _runs(data) -> list[dict]:
    """The records of a data file that carry provenance: the file itself and/or its list of runs."""
    found = []
    if isinstance(data, dict):
        if any(k in data for k in ("command", "machine", "date")):
            found.append(data)
        for key in ("runs", "sources", "records"):
            if isinstance(data.get(key), list):
                found += [r for r in data[key] if isinstance(r, dict) and ("command" in r or "machine" in r)]
    elif isinstance(data, list):
        found += [r for r in data if isinstance(r, dict) and ("command" in r or "machine" in r)]
    return found


def machine_text(machine) -> str:
    """A machine record as words: a string as it is; a dict (make_figures' format) by its CPU, cores and path."""
    if not isinstance(machine, dict):
        return str(machine or "").strip()
    parts = [str(machine.get("cpu", "")).strip()]
    if machine.get("cores"):
        parts.append(f"{machine['cores']} cores")
    if machine.get("mem_total_gib"):
        parts.append(f"{machine['mem_total_gib']:g} GiB")
    text = ", ".join(p for p in parts if p)
    if machine.get("simd_path"):
        text += f" (Ember's {machine['simd_path']} kernels)"
    if machine.get("note"):
        text += f"; {machine['note']}"
    return text


def provenance(path: Path) -> list[tuple[str, str, str]]:
    """(command, machine, date) of every run recorded in a data file, without repeats, in file order."""
    runs = _runs(json.loads(path.read_text()))
    out = []
    for r in runs:
        item = (str(r.get("command", "")).strip(), machine_text(r.get("machine")), str(r.get("date", "")).strip()[:10])
        if not item[0] or not item[1]:
            continue
        if item not in out:
            out.append(item)
    if not out:
        raise ExtensionError(f"{path}: no record with both a \"command\" and a \"machine\" key")
    return out


class EmberFigure(SphinxDirective):
    """A generated figure with its caption and the provenance (command, machine, date) of its data."""

    required_arguments = 1
    has_content = True
    option_spec: ClassVar[dict] = {"data": directives.unchanged_required, "alt": directives.unchanged,
                                   "width": directives.unchanged}

    def run(self):
        name = self.arguments[0]
        data_files = [d.strip() for d in self.options.get("data", "").split(",") if d.strip()]
        if not data_files:
            raise self.error("ember-figure needs :data: (the JSON files behind the figure)")
        caption_text = " ".join(self.content).strip()
        prov = []
        for d in data_files:
            paths = sorted(_data_dir(self.env.app).glob(d))
            if not paths:
                raise self.error(f"ember-figure: no data file {_data_dir(self.env.app) / d}")
            for path in paths:
                self.env.note_dependency(str(path))
                prov += [p for p in provenance(path) if p not in prov]
        parts = [caption_text] if caption_text else []
        for command, machine, date in prov:
            parts.append(f"Data: ``{command}``, run on {machine}" + (f", {date}." if date else "."))
        text = " ".join(parts)

        png = Path(self.env.srcdir) / OUTDIR / name
        if not png.is_file():
            raise self.error(f"ember-figure: {png} was not generated by make_figures.py")
        figure = nodes.figure()
        image = nodes.image(uri="/" + (OUTDIR / name).as_posix(), alt=self.options.get("alt", caption_text or name))
        if "width" in self.options:
            image["width"] = self.options["width"]
        figure += image
        caption_nodes, _ = self.state.inline_text(text, self.lineno)
        figure += nodes.caption(text, "", *caption_nodes)
        return [figure]


def setup(app):
    app.add_directive("ember-figure", EmberFigure)
    app.connect("builder-inited", make_figures)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
