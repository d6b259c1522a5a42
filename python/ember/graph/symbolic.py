"""Symbolic runs: the same program with no encryption, no keys and no arithmetic.

A SymbolicContext has the parameters, tables and scales of a real Context, but its polynomials live on the null
backend (cpp/backend/null/): every kernel does nothing and no value holds memory. Ciphertexts are placeholders
that carry level, scale and slots; keys are placeholders of the right shapes. A program written against
ember.Context runs on it unchanged -- operators, LinearTransform, polynomial evaluation, bootstrapping -- so
``with ember.graph(sctx) as g:`` yields the exact graph of a program too large to run here (ResNet-20 at
N = 2^16) in seconds. Its values are meaningless: decrypting is refused.

    sctx = ember.graph.SymbolicContext(ember.CkksParams.bootstrappable(log_n=16))
    keys = sctx.keygen(bootstrapping=True)          # placeholders, instantly
    x = sctx.encrypt(np.zeros(sctx.slots))          # or sctx.placeholder(level=..., scale=..., slots=...)
    with ember.graph(sctx) as g:
        y = x.bootstrap()
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from .. import _ember
from ..context import Ciphertext, Context, GaloisKeys, KeySet, Plaintext, SwitchingKey, as_slots
from ..params import CkksParams
from .capture import capture


class SymbolicContext(Context):
    """A Context whose kernels do nothing (see the module docstring).

    Parameters
    ----------
    params : ember.CkksParams, optional
        The parameters (default: ``CkksParams()``, as :class:`ember.Context`).
    threads : int, optional
        Accepted and ignored (default 1).
    """

    symbolic = True

    def __init__(self, params: Optional[CkksParams] = None, threads: int = 1):
        super().__init__(params, threads)

    @staticmethod
    def _make_core(params: CkksParams, threads: int, device: str):
        return _ember.symbolic_context_core(params._core)

    def __repr__(self) -> str:
        """Return ``<ember.graph.SymbolicContext PARAMS>``."""
        return f"<ember.graph.SymbolicContext {self.params!r}>"

    def placeholder(self, level: Optional[int] = None, scale: Optional[float] = None,
                    slots: Optional[int] = None) -> Ciphertext:
        """Return a ciphertext placeholder.

        Parameters
        ----------
        level : int, optional
            Its level, in [0, max_level] (default user_level).
        scale : float, optional
            Its scale (default the canonical scale of the level).
        slots : int, optional
            Its slots (default N/2).

        Returns
        -------
        ember.Ciphertext
            The placeholder.

        Raises
        ------
        ValueError
            A level outside [0, max_level].
        """
        level = self.user_level if level is None else int(level)
        if not 0 <= level <= self.max_level:
            raise ValueError(f"level must be in [0, {self.max_level}], got {level}")
        scale = self.scale_at(level) if scale is None else float(scale)
        slots = self.slots if slots is None else int(slots)
        return Ciphertext(self, _ember.placeholder_ciphertext(self._core, level, scale, slots))

    def keygen(self, rotations: Iterable[int] = (), conjugation: bool = False, seeded: bool = True,
               bootstrapping: bool = False) -> KeySet:
        """Return placeholder evaluation keys, registered on this context.

        Parameters
        ----------
        rotations : iterable of int, optional
            The rotation steps (default none).
        conjugation : bool, optional
            Also the conjugation key (default False).
        seeded : bool, optional
            Accepted and ignored.
        bootstrapping : bool, optional
            Also the keys bootstrapping needs, its rotations and conjugation included (default False).

        Returns
        -------
        ember.KeySet
            The keys; the KeySet has no secret and no public key.
        """
        rotations = sorted({int(r) for r in rotations})
        boot = None
        if bootstrapping:
            boot = self.bootstrapper()
            rotations = sorted(set(rotations) | set(boot.rotations))
            conjugation = True
        relin, galois = _ember.placeholder_eval_keys(self._core, rotations, bool(conjugation))
        if boot is not None:
            self._register_boot_keys(_ember.placeholder_boot_keys(boot, _ember.context_of(self._core), relin, galois))
        return KeySet(None, None, SwitchingKey(self, relin), GaloisKeys(self, galois))

    def encrypt(self, values, key=None, level: Optional[int] = None) -> Ciphertext:
        """Return a placeholder for an encryption.

        Parameters
        ----------
        values : array_like or ember.Plaintext
            A vector (its length gives the slots) or a Plaintext (its level, scale and slots).
        key : object, optional
            Ignored.
        level : int, optional
            The level of a vector's placeholder (default user_level); a Plaintext's gives its own.

        Returns
        -------
        ember.Ciphertext
            The placeholder.
        """
        if isinstance(values, Plaintext):
            return self.placeholder(values.level, values.scale, values.slots)
        v = as_slots(values, self.slots)
        return self.placeholder(level, None, v.shape[0])

    def decrypt(self, ct, secret_key=None):
        """Refuse to decrypt: a symbolic context holds no data.

        Parameters
        ----------
        ct : ember.Ciphertext
            Ignored.
        secret_key : object, optional
            Ignored.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError("a symbolic context holds no data: there is nothing to decrypt")

    def save_bootstrap_keys(self, directory):
        """Refuse to save keys: a symbolic context has placeholder keys only.

        Parameters
        ----------
        directory : str or os.PathLike
            Ignored.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError("a symbolic context has placeholder keys only: nothing to save")


def capture_program(program: Callable, params: CkksParams, rotations=(), bootstrapping: bool = False,
                    symbolic: bool = True):
    """Return the graph of ``program(ctx, keys)``, run on a SymbolicContext (or a real Context) inside a capture.

    Parameters
    ----------
    program : callable
        ``program(ctx, keys) -> Ciphertext or None``; the ciphertext it returns is marked as the output "out".
    params : ember.CkksParams
        The parameters of the context it runs on.
    rotations : sequence of int
        The rotation keys it needs.
    bootstrapping : bool
        Generate (placeholder) bootstrapping keys and the conjugation key.
    symbolic : bool
        Run on a SymbolicContext (no keys, no arithmetic: seconds for ResNet-20 at N = 2^16) or on a real
        Context with two threads (the graph then carries measured times).

    Returns
    -------
    ember.graph.Graph
        The captured graph.
    """
    ctx = SymbolicContext(params) if symbolic else Context(params, threads=2)
    keys = ctx.keygen(rotations=rotations, conjugation=bootstrapping, bootstrapping=bootstrapping)
    with capture(ctx) as g:
        out = program(ctx, keys)
    if out is not None and out._core.id:  # (a value made outside the evaluator's operations has no id)
        g.output(out, "out")
    return g
