"""Sphinx extension: the command-line reference, generated from the ``ember`` command's argparse parsers.

At ``builder-inited`` it builds the parser of ``ember.cli.main`` (without running any command), walks every
subcommand and writes ``_generated/cli.inc`` (reStructuredText: a section per command with its usage, its
subcommands and an ``.. option::`` entry per argument). ``docs/cli.rst`` includes that file, so the reference
always matches the installed ``ember`` and no help text is copied by hand.
"""
from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


class _Parser(Exception):
    """Raised instead of parsing: carries the fully built top-level parser out of ``ember.cli.main``."""


def ember_parser() -> argparse.ArgumentParser:
    """The ``ember`` command's parser, as ``ember.cli.main`` builds it.

    ``main`` builds its parser and parses in one function; parse_args is replaced for the duration of the call
    so that the parser comes back before anything runs.
    """
    from ember import cli

    original = argparse.ArgumentParser.parse_args

    def grab(self, *args, **kwargs):
        raise _Parser(self)

    argparse.ArgumentParser.parse_args = grab
    try:
        cli.main([])
    except _Parser as e:
        return e.args[0]
    finally:
        argparse.ArgumentParser.parse_args = original
    raise RuntimeError("ember.cli.main returned without parsing its arguments")


_MARKUP = re.compile(r"([\\*`|_\[\]])")


def _escape(text: str) -> str:
    """Plain text as reStructuredText (inline markup characters escaped, whitespace collapsed)."""
    return _MARKUP.sub(r"\\\1", " ".join(text.split()))


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _signature(parser) -> tuple:
    """What makes two subcommands' references identical (their arguments, not their names)."""
    return tuple((tuple(a.option_strings), a.dest, a.help, repr(a.default), repr(a.choices), a.nargs)
                 for a in parser._actions if not isinstance(a, argparse._HelpAction))


def _usage(parser, prog: str | None = None) -> list[str]:
    saved = parser.prog
    parser.prog = prog or saved
    try:
        return parser.format_usage().rstrip().splitlines()
    finally:
        parser.prog = saved


def _options(parser) -> list[str]:
    out = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]
        if not actions:
            continue
        if group.title not in ("options", "optional arguments", "positional arguments"):
            out += [f"*{_escape(group.title)}:*", ""]
        for a in actions:
            if a.option_strings:
                fmt = parser._get_formatter()
                metavar = "" if a.nargs == 0 else " " + fmt._format_args(a, fmt._get_default_metavar_for_optional(a))
                names = ", ".join(s + metavar for s in a.option_strings)
            else:
                names = a.dest
            out += [f".. option:: {names}", ""]
            text = _help(parser, a)
            if not a.option_strings and a.choices:
                text = (text + " " if text else "") + "One of: " + ", ".join(map(str, a.choices)) + "."
            if isinstance(a, argparse._AppendAction):
                text = (text + " " if text else "") + "(Repeatable.)"
            if not text and a.default not in (None, False, argparse.SUPPRESS):
                text = f"Default: {a.default}."
            out += ["   " + (_escape(text) if text else "(no description)"), ""]
    return out


def _section(title: str, level: str, anchor: str) -> list[str]:
    return [f".. _{anchor}:", "", title, level * len(title), ""]


def _anchor(path: list[str]) -> str:
    return "cli-" + "-".join(p.replace("_", "-") for p in path)


def render(parser: argparse.ArgumentParser) -> str:
    """The reference of ``parser`` and all its subcommands as reStructuredText.

    Subcommands whose arguments are identical (``ember bench ntt``, ``ember bench mul``, ...) share one section,
    which lists each of them with its one-line help.
    """
    levels = ["-", "~", "^", '"']
    lines: list[str] = []

    def walk(p, path: list[str], help_text: str, depth: int, variants: list[tuple[str, str]] = ()):
        nonlocal lines
        shown = " ".join(["ember"] + path[:-1] + ["OP"]) if variants else " ".join(["ember"] + path)
        lines.extend(_section(f"``{shown}``", levels[min(depth, len(levels) - 1)], _anchor(["ember"] + path)))
        if variants:
            lines += ["``OP`` is one of these subcommands, which take the same arguments:", ""]
            lines += [f"* ``{name}``: {_escape(h)}" for name, h in variants] + [""]
        elif help_text:
            lines += [_escape(help_text[0].upper() + help_text[1:]) + ("" if help_text.endswith(".") else "."), ""]
        if p.description:
            lines += [_escape(p.description), ""]
        lines += [".. code-block:: text", ""] + ["   " + u for u in _usage(p, shown)] + [""]
        lines += [f".. program:: {shown}", ""]
        lines += _options(p)
        sub = _subparsers(p)
        if sub is None:
            return
        helps = {a.dest: a.help or "" for a in sub._choices_actions}
        seen, groups = set(), {}
        for name, child in sub.choices.items():
            if id(child) in seen:
                continue  # an alias
            seen.add(id(child))
            key = id(child) if _subparsers(child) else _signature(child)
            groups.setdefault(key, []).append(name)
        lines += ["Subcommands:", ""]
        for names in groups.values():
            target = _anchor(["ember"] + path + [names[0]])
            for n in names:
                lines.append(f"* :ref:`{' '.join(['ember'] + path + [n])} <{target}>`: {_escape(helps.get(n, ''))}")
        lines.append("")
        for names in groups.values():
            child = sub.choices[names[0]]
            variants = [(n, helps.get(n, "")) for n in names] if len(names) > 1 else ()
            walk(child, path + [names[0]], helps.get(names[0], ""), depth + 1, variants)

    walk(parser, [], "", 0)
    return "\n".join(lines) + "\n"


def generate(app) -> None:
    os.environ.setdefault("COLUMNS", "100")  # argparse wraps usage lines at $COLUMNS
    out = Path(app.srcdir) / "_generated" / "cli.inc"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render(ember_parser())
    if not out.exists() or out.read_text() != text:  # unchanged: keep the mtime, so Sphinx rereads nothing
        out.write_text(text)
    logger.info("ember_cli: wrote %s", out)


def setup(app):
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
