"""Evaluation keys for workers, and the per-process registry of installed contexts.

A KeyBundle (parameters + evaluation keys, as bytes or a key directory) is what a worker installs once.

The secret key never enters a bundle: KeyBundle.from_keys() takes the evaluation keys only and refuses a
SecretKey, and install() -- what every worker runs -- checks the type field of every key it is handed (the
header of Ember's byte format, cpp/io/serialize.hpp) and refuses a secret key with SecretKeyRefused.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import threading
from dataclasses import dataclass, field
from typing import Optional

SERIAL_MAGIC = b"EMBR"
SECRET_KEY_TYPE = 6  # SerialType::SecretKey
TYPE_NAMES = {1: "ciphertext", 2: "plaintext", 3: "public key", 4: "switching key", 5: "Galois keys", 6: "secret key"}
PARAMS_FILE = "params.json"


class SecretKeyRefused(ValueError):
    """A worker was handed a secret key. Secret keys never leave the client."""


def serial_type(data: bytes, what: str) -> int:
    """Return the object type in the header of Ember's byte format.

    Parameters
    ----------
    data : bytes-like
        A serialized object (at least its first 8 bytes).
    what : str
        What it is, for the error message.

    Returns
    -------
    int
        The type field (1 ciphertext, 2 plaintext, 3 public key, 4 switching key, 5 Galois keys, 6 secret key).

    Raises
    ------
    ValueError
        If `data` is not in that format (too short, or a bad magic).
    """
    if len(data) < 8 or bytes(data[:4]) != SERIAL_MAGIC:
        raise ValueError(f"{what}: not an Ember serialized object (bad magic)")
    return int.from_bytes(bytes(data[6:8]), "little")


def refuse_secret(data: bytes, what: str) -> None:
    """Raise SecretKeyRefused if `data` is a serialized secret key.

    Parameters
    ----------
    data : bytes-like
        A serialized object (at least its first 8 bytes).
    what : str
        What it is, for the error message.

    Raises
    ------
    SecretKeyRefused
        If its type field says secret key.
    ValueError
        If `data` is not in Ember's byte format.
    """
    if serial_type(data, what) == SECRET_KEY_TYPE:
        raise SecretKeyRefused(f"{what}: this is a secret key; an ember worker refuses to load secret keys "
                               f"(they never leave the client: give workers evaluation keys only)")


def _check_type(data: bytes, what: str, want: int) -> None:
    refuse_secret(data, what)
    t = serial_type(data, what)
    if t != want:
        raise ValueError(f"{what}: expected {TYPE_NAMES[want]}, got {TYPE_NAMES.get(t, f'type {t}')}")


@dataclass
class KeyBundle:
    """What a worker needs to compute: parameters, evaluation keys and a thread count.

    The parameter recipe (CkksParams.recipe()), the evaluation keys (bytes, broadcast to every worker once) or a
    key directory every worker can read (save_eval_keys(), or Context.save_bootstrap_keys() plus a params.json),
    and the threads of each worker's Context.

    Holds bytes and paths only -- never C++ objects, never a secret key -- so it pickles cheaply and safely
    (a Dask WorkerPlugin carries it to every worker, including those that join later). Usually made by
    :meth:`from_keys` or :meth:`from_directory`.

    Parameters
    ----------
    recipe : dict
        The parameter recipe, ``CkksParams.recipe()``.
    relin : bytes, optional
        The relinearization key in Ember's byte format.
    galois : bytes, optional
        The Galois keys in Ember's byte format.
    directory : str, optional
        A key directory every worker reads (instead of key bytes).
    threads : int, optional
        Threads of each worker's Context (default 1).
    ident : str, optional
        The bundle's identity; by default a digest of the recipe, the keys and the directory.

    Raises
    ------
    ValueError
        If `threads` is not a positive integer, or the bundle has neither key bytes nor a directory.
    """

    recipe: dict
    relin: Optional[bytes] = None
    galois: Optional[bytes] = None
    directory: Optional[str] = None
    threads: int = 1
    ident: str = field(default="")

    def __post_init__(self):
        """Check the fields and compute the ident when none was given."""
        if not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be a positive integer, got {self.threads!r}")
        if self.directory is None and self.relin is None and self.galois is None:
            raise ValueError("a KeyBundle needs evaluation keys (relin / galois bytes) or a key directory")
        if not self.ident:
            h = hashlib.sha256(json.dumps(self.recipe, sort_keys=True).encode())
            for part in (self.relin, self.galois, (self.directory or "").encode()):
                h.update(hashlib.sha256(part or b"").digest())
            self.ident = h.hexdigest()[:16]

    @classmethod
    def from_keys(cls, ctx, keys, threads: int = 1) -> "KeyBundle":
        """Make a bundle from a KeySet (its relin and galois keys only) or a (relin, galois) pair.

        Parameters
        ----------
        ctx : ember.Context
            The context of the keys (its parameters' recipe goes into the bundle).
        keys : ember.KeySet or tuple
            A KeySet, or a ``(relin, galois)`` pair of SwitchingKey and GaloisKeys (either may be None).
        threads : int, optional
            Threads of each worker's Context (default 1).

        Returns
        -------
        KeyBundle
            The evaluation keys as bytes.

        Raises
        ------
        SecretKeyRefused
            If `keys` is a SecretKey.
        TypeError
            If `keys` is neither a KeySet nor a pair of evaluation keys.
        """
        from ..context import GaloisKeys, KeySet, SecretKey, SwitchingKey
        if isinstance(keys, SecretKey):
            raise SecretKeyRefused("a secret key cannot be sent to workers; pass the KeySet or its evaluation keys")
        if isinstance(keys, KeySet):
            relin, galois = keys.relin, keys.galois
        elif isinstance(keys, (tuple, list)) and len(keys) == 2:
            relin, galois = keys
        else:
            raise TypeError("keys: expected an ember.KeySet or a (relin, galois) pair")
        if relin is not None and not isinstance(relin, SwitchingKey):
            raise TypeError(f"relin: expected an ember.SwitchingKey, got {type(relin).__name__}")
        if galois is not None and not isinstance(galois, GaloisKeys):
            raise TypeError(f"galois: expected an ember.GaloisKeys, got {type(galois).__name__}")
        return cls(recipe=ctx.params.recipe(), relin=relin.to_bytes() if relin is not None else None,
                   galois=galois.to_bytes() if galois is not None else None, threads=threads)

    @classmethod
    def from_directory(cls, directory, threads: int = 1) -> "KeyBundle":
        """Make a bundle of a key directory, which the workers read themselves.

        The directory is what save_eval_keys() writes, or save_bootstrap_keys() with a params.json; it must be at
        this path on every worker (a shared file system, or copied there).

        Parameters
        ----------
        directory : str or os.PathLike
            The key directory.
        threads : int, optional
            Threads of each worker's Context (default 1).

        Returns
        -------
        KeyBundle
            The directory's absolute path and its parameter recipe.

        Raises
        ------
        ValueError
            If the directory has no readable params.json.
        """
        d = pathlib.Path(directory)
        try:
            recipe = json.loads((d / PARAMS_FILE).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{d}: not a key directory ({PARAMS_FILE}: {e})") from None
        return cls(recipe=recipe, directory=str(d.resolve()), threads=threads)

    def install(self):
        """Make (once per process) this bundle's Context with its evaluation keys. What workers run.

        Returns
        -------
        ember.Context
            The Context, with the evaluation keys set; the same object on later calls in this process.

        Raises
        ------
        SecretKeyRefused
            If a key handed over is a secret key.
        ValueError
            If the key directory is missing or holds no keys, or a key has the wrong type.
        """
        return _install(self)


def save_eval_keys(directory, ctx, keys=None) -> list[str]:
    """Write a key directory for workers.

    params.json (the parameter recipe), and relin.key and galois.key of `keys` (the secret key is not written),
    or -- keys=None on a context with bootstrapping keys -- the bootstrapping keys (Context.save_bootstrap_keys).

    Parameters
    ----------
    directory : str or os.PathLike
        The directory (made if missing).
    ctx : ember.Context
        The context of the keys.
    keys : ember.KeySet, optional
        The keys whose relin and galois keys are written; None: ctx's bootstrapping keys.

    Returns
    -------
    list of str
        The names of the files written.
    """
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / PARAMS_FILE).write_text(json.dumps(ctx.params.recipe(), sort_keys=True))
    if keys is None:
        return [PARAMS_FILE] + ctx.save_bootstrap_keys(d)
    (d / "relin.key").write_bytes(keys.relin.to_bytes())
    (d / "galois.key").write_bytes(keys.galois.to_bytes())
    return [PARAMS_FILE, "relin.key", "galois.key"]


# --- the per-process registry (a worker's installed keys) ----------------------------------------------------
_lock = threading.Lock()
_installed: dict[str, object] = {}     # bundle ident -> Context
_by_hash: dict[bytes, object] = {}     # CkksParams hash -> a Context of those parameters (to open values)


def context_for(ident: str):
    """Return the Context this process installed for a key bundle.

    Parameters
    ----------
    ident : str
        The bundle's ident.

    Returns
    -------
    ember.Context
        The Context of :meth:`KeyBundle.install`.

    Raises
    ------
    RuntimeError
        If no bundle of that ident is installed in this process.
    """
    ctx = _installed.get(ident)
    if ctx is None:
        raise RuntimeError(f"no ember keys installed in this process (pid {os.getpid()}) for key bundle {ident}: "
                           "start the workers through an ember executor (it installs the keys on each worker)")
    return ctx


def context_by_params_hash(h: bytes):
    """Return a Context of this process with the parameters of hash `h`, or None.

    Parameters
    ----------
    h : bytes
        The parameters' hash (``CkksParams`` core hash).

    Returns
    -------
    ember.Context or None
        A registered or installed Context of those parameters.
    """
    return _by_hash.get(bytes(h))


def register_context(ctx) -> None:
    """Let values of ctx's parameters be opened in this process (the client registers its own context)."""
    _by_hash.setdefault(bytes(ctx.params._core.hash()), ctx)


def _install(b: KeyBundle):
    from ..context import Context
    from ..params import CkksParams
    with _lock:
        if b.ident in _installed:
            return _installed[b.ident]
        if b.directory is not None:  # check every file before reading any key
            d = pathlib.Path(b.directory)
            if not d.is_dir():
                raise ValueError(f"key directory {d} does not exist on this worker (pid {os.getpid()})")
            for f in sorted(d.iterdir()):
                if f.is_file() and f.name != PARAMS_FILE:
                    with open(f, "rb") as fh:
                        refuse_secret(fh.read(8), str(f))
        for blob, what in ((b.relin, "relin key"), (b.galois, "Galois keys")):
            if blob is not None:
                refuse_secret(blob, what)
        params = CkksParams.from_recipe(b.recipe)
        ctx = Context(params, threads=b.threads)
        if b.directory is not None:
            d = pathlib.Path(b.directory)
            if any(d.glob("galois-*.key")):
                ctx.load_bootstrap_keys(d)
            else:
                relin = (d / "relin.key").read_bytes() if (d / "relin.key").is_file() else None
                galois = (d / "galois.key").read_bytes() if (d / "galois.key").is_file() else None
                if relin is None and galois is None:
                    raise ValueError(f"{d}: no relin.key / galois.key / galois-*.key")
                _set_keys(ctx, relin, galois, str(d))
        else:
            _set_keys(ctx, b.relin, b.galois, "key bundle")
        _installed[b.ident] = ctx
        _by_hash.setdefault(bytes(params._core.hash()), ctx)
        return ctx


def _set_keys(ctx, relin: Optional[bytes], galois: Optional[bytes], where: str) -> None:
    from ..context import GaloisKeys, SwitchingKey
    rk = gk = None
    if relin is not None:
        _check_type(relin, f"{where}: relin key", 4)
        rk = SwitchingKey.from_bytes(ctx, relin)
    if galois is not None:
        _check_type(galois, f"{where}: Galois keys", 5)
        gk = GaloisKeys.from_bytes(ctx, galois)
    ctx.set_eval_keys(rk, gk)
