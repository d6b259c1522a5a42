"""The one serialisation convention of ember's objects.

Graphs, cost tables, platforms, device profiles and executor overheads: ``to_dict()`` gives plain JSON-able data, ``Cls.from_dict(d)`` validates and rebuilds,
``save(path)`` writes the dictionary as JSON and ``Cls.load(path)`` reads it back. The two helpers here are the
JSON file half of that, shared so that every class reads and writes files the same way.
"""
from __future__ import annotations

import json
from pathlib import Path


def save_json(path, d: dict, indent: int = 1) -> None:
    """Write `d` as a JSON file (no NaN or infinity: a ValueError, not a file the loader would refuse).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    d : dict
        Plain JSON-able data (a ``to_dict()``).
    indent : int
        JSON indentation.
    """
    Path(path).write_text(json.dumps(d, indent=indent, allow_nan=False) + "\n")


def load_json(path, what: str):
    """Read the JSON document in a file.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What the file should hold, for the error message (e.g. "ember platform").

    Returns
    -------
    object
        The parsed document (for ``from_dict``).

    Raises
    ------
    ValueError
        The file is not JSON.
    """
    try:
        return json.loads(Path(path).read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not an {what}: invalid JSON ({e})") from None


class JsonFile:
    """The file half of the convention for a class with ``to_dict`` / ``from_dict``: :meth:`save` and :meth:`load`.

    A subclass names what its files hold in ``JSON_WHAT`` (for the error of a file that is not JSON).
    """

    JSON_WHAT = "ember object"

    def save(self, path) -> None:
        """Write the object as a JSON file (its ``to_dict()``).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        save_json(path, self.to_dict())

    @classmethod
    def load(cls, path):
        """Read a JSON file written by :meth:`save`, validated by ``from_dict``.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        object
            An instance of the class.

        Raises
        ------
        ValueError
            Invalid JSON or a malformed document.
        """
        return cls.from_dict(load_json(path, cls.JSON_WHAT))
