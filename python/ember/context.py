"""The user-facing CKKS API: Context, keys, Plaintext and Ciphertext with Python operators."""
from __future__ import annotations

import numbers
import threading
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from . import _ember
from .params import CkksParams


def integer_arg(op: str, name: str, v) -> int:
    """Return v as an int, or raise TypeError("cannot <op>: <name> must be an integer, got <type>").

    Parameters
    ----------
    op : str
        The operation, for the message.
    name : str
        The argument's name, for the message.
    v : object
        The value: an integral number (not a bool).

    Returns
    -------
    int
        ``int(v)``.

    Raises
    ------
    TypeError
        When `v` is not an integral number, or is a bool.
    """
    if not isinstance(v, numbers.Integral) or isinstance(v, bool):
        raise TypeError(f"cannot {op}: {name} must be an integer, got {type(v).__name__}")
    return int(v)


class _Serializable:
    """An object bound to a context, with to_bytes() / from_bytes(ctx, data).

    The byte format (format version 2; io/serialize.hpp) has a header (magic, version, type, parameter hash,
    sizes) and a 64-bit checksum against accidental corruption; from_bytes validates every size and
    coefficient and raises ValueError on anything malformed. Bytes of format version 1 (SHA-256) still load.
    """

    _kind = ""
    _COEFFS = {None: 255, False: 1, True: 0}   # compact -> Coefficients (default, Words, Packed)

    def __init__(self, ctx: "Context", core):
        self._ctx, self._core = ctx, core

    def to_bytes(self, *, compact: Optional[bool] = None, version: int = 2) -> bytes:
        """Serialize the object in Ember's byte format.

        Parameters
        ----------
        compact : bool, optional
            True: coefficients bit-packed (smaller, slower); False: 64-bit words (written and read at memory
            speed); None (default): words for ciphertexts and plaintexts, packed for keys.
        version : int, optional
            Format version: 2 (default), or 1 for the previous format (packed, SHA-256) for older readers.

        Returns
        -------
        bytes
            The serialized object; ``from_bytes(ctx, data)`` reads it back.

        Raises
        ------
        TypeError
            When `compact` is not True, False or None.
        """
        return getattr(_ember, f"{self._kind}_to_bytes")(self._ctx._core, self._core, _coefficients(compact), version)

    @classmethod
    def from_bytes(cls, ctx: "Context", data, *, max_bytes: Optional[int] = None):
        """Read an object from `data`, checked against `ctx`.

        Parameters
        ----------
        ctx : Context
            The context the object was written for (its parameter hash must match).
        data : bytes-like
            Untrusted bytes: bytes, bytearray, memoryview, mmap (read in place, not copied).
        max_bytes : int, optional
            Largest accepted input, checked before anything is parsed or allocated. Default:
            ``default_max_bytes(ctx)``, the size of the largest object of this type `ctx` can write.

        Returns
        -------
        object
            An instance of the class it is called on, bound to `ctx`.

        Raises
        ------
        ValueError
            On anything malformed, too large, or written for other parameters; the message names the
            field and its bound.
        TypeError
            When `data` is not bytes-like, or `ctx` is not an ember.Context.
        """
        if not isinstance(ctx, Context):
            raise TypeError("from_bytes needs the ember.Context the object belongs to")
        mx = _check_max_bytes(max_bytes)
        if isinstance(data, str):
            raise TypeError("from_bytes needs bytes-like data, got str")
        return cls(ctx, getattr(_ember, f"{cls._kind}_from_bytes")(ctx._core, data, mx))

    def to(self, ctx: "Context"):
        """Return this object in another context of the same parameters, on that context's device.

        The explicit way to move data between devices, e.g. from a CPU context to a CUDA one and back: the
        words go through host memory in the serialised format and are validated on the way in, as by
        from_bytes. A secret key's host copy is wiped.

        Parameters
        ----------
        ctx : Context
            The destination context; its parameters must equal this object's context's.

        Returns
        -------
        object
            An instance of the same class, bound to `ctx` (self when `ctx` is its own context).

        Raises
        ------
        TypeError
            When `ctx` is not an ember.Context.
        ValueError
            When `ctx` has other parameters.
        """
        if not isinstance(ctx, Context):
            raise TypeError(f"to() needs an ember.Context, got {type(ctx).__name__}")
        if ctx is self._ctx:
            return self
        return type(self)(ctx, _ember.transfer(self._ctx._core, self._core, ctx._core))

    @classmethod
    def default_max_bytes(cls, ctx: "Context") -> int:
        """Return the default bound of from_bytes: the size of the largest object of this type ctx can write.

        Parameters
        ----------
        ctx : Context
            The context.

        Returns
        -------
        int
            The bound in bytes (for GaloisKeys: that of 256 unseeded keys).
        """
        return _ember.default_max_bytes(ctx._core, cls._kind)


class _Value(_Serializable):
    """Ciphertexts and plaintexts: also written straight into a caller's buffer (shared memory, an mmap)."""

    def serialized_size(self, *, compact: Optional[bool] = None, version: int = 2) -> int:
        """Return len(self.to_bytes(compact=compact, version=version)), without writing anything.

        Parameters
        ----------
        compact : bool, optional
            As in to_bytes.
        version : int, optional
            As in to_bytes (default 2).

        Returns
        -------
        int
            The size in bytes.
        """
        return getattr(_ember, f"{self._kind}_serialized_size")(self._ctx._core, self._core, _coefficients(compact), version)

    def write_into(self, buffer, *, compact: Optional[bool] = None, version: int = 2) -> int:
        """Write to_bytes() into `buffer` without an intermediate copy.

        Parameters
        ----------
        buffer : writable bytes-like
            Exactly serialized_size() bytes (with the same `compact` and `version`), e.g. a memoryview slice of
            shared memory; contiguous.
        compact : bool, optional
            As in to_bytes.
        version : int, optional
            As in to_bytes (default 2).

        Returns
        -------
        int
            The number of bytes written.

        Raises
        ------
        TypeError
            When `buffer` is not a writable, contiguous bytes-like object.
        """
        try:
            return getattr(_ember, f"{self._kind}_write_into")(self._ctx._core, self._core, buffer, _coefficients(compact), version)
        except BufferError as e:
            raise TypeError(f"write_into needs a writable, contiguous bytes-like buffer, got {type(buffer).__name__} ({e})") from None


def _coefficients(compact) -> int:
    """Return the native coefficient encoding of a `compact` argument (TypeError unless True, False or None)."""
    if compact not in (None, True, False):
        raise TypeError(f"compact must be True, False or None, got {compact!r}")
    return _Serializable._COEFFS[compact]


def checksum64(data) -> int:
    """Compute the checksum of Ember's byte format version 2 over a bytes-like object (io/serialize.hpp).

    Parameters
    ----------
    data : bytes-like
        The bytes.

    Returns
    -------
    int
        The 64-bit checksum.
    """
    return _ember.checksum64(data)


def _check_max_bytes(max_bytes) -> int:
    """Return 0 (the default bound) for None, else max_bytes as a positive int (ValueError otherwise)."""
    if max_bytes is None:
        return 0
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive integer or None, got {max_bytes!r}")
    return int(max_bytes)


class PublicKey(_Serializable):
    """The public (encryption) key, from Context.keygen(); Context.encrypt takes it.

    Made by keygen() or from_bytes(), not by calling the class.

    Parameters
    ----------
    ctx : Context
        The context it belongs to.
    core : object
        The native key.
    """

    _kind = "public_key"


class SwitchingKey(_Serializable):
    """A key-switching key (the relinearization key).

    Seeded keys serialize only a 32-byte seed for each uniform half. Made by keygen() or from_bytes(), not by
    calling the class.

    Parameters
    ----------
    ctx : Context
        The context it belongs to.
    core : object
        The native key.
    """

    _kind = "switching_key"
    digits = property(lambda self: self._core.digits, doc="The number of key-switching digits (dnum) of the key.")
    seeded = property(lambda self: self._core.seeded,
                      doc="Whether the uniform halves come from stored seeds (serialized as 32-byte seeds).")


class GaloisKeys(_Serializable):
    """Rotation and conjugation keys, by Galois element.

    Made by keygen() or from_bytes(), not by calling the class.

    Parameters
    ----------
    ctx : Context
        The context they belong to.
    core : object
        The native keys.
    """

    _kind = "galois_keys"
    elements = property(lambda self: self._core.elements,
                        doc="The Galois elements with a key (list of int, ascending): 5^r mod 2N for a rotation by r, "
                            "2N - 1 for conjugation.")


class SecretKey(_Serializable):
    """The secret key.

    Its memory is wiped when freed; it is never printed, pickled or serialized unless asked explicitly with
    to_bytes(export_secret=True). Made by keygen() or from_bytes(), not by calling the class.

    Parameters
    ----------
    ctx : Context
        The context it belongs to.
    core : object
        The native key.
    """

    _kind = "secret_key"

    def to_bytes(self, *, export_secret: bool = False, compact: Optional[bool] = None, version: int = 2) -> bytes:
        """Serialize the secret key, only when asked explicitly.

        Parameters
        ----------
        export_secret : bool, optional
            Must be True; the default False refuses.
        compact : bool, optional
            As in the other objects' to_bytes (None: packed, as for every key).
        version : int, optional
            Format version, 2 (default) or 1.

        Returns
        -------
        bytes
            The serialized key. Whoever holds them can decrypt: keep them secret.

        Raises
        ------
        ValueError
            Unless `export_secret` is True.
        """
        if not export_secret:
            raise ValueError("refusing to serialize the secret key; call to_bytes(export_secret=True) if you mean it")
        return super().to_bytes(compact=compact, version=version)

    def __repr__(self) -> str:
        """Return ``<ember.SecretKey (hidden)>``: the key is never printed."""
        return "<ember.SecretKey (hidden)>"

    def __reduce__(self):
        """Refuse pickling (TypeError): serialize with to_bytes(export_secret=True) instead."""
        raise TypeError("ember.SecretKey cannot be pickled; use to_bytes(export_secret=True)")


@dataclass(frozen=True)
class DecryptionFlooding:
    """Noise flooding at decryption against the Li-Micciancio key-recovery attack.

    See the README, "Sharing decrypted results".

    Each decryption gets a fresh rounded Gaussian of standard deviation
    ``sigma = 2**(statistical_bits / 2) * sqrt(N * queries) * 2**noise_bits`` on every coefficient.

    Parameters
    ----------
    noise_bits : float
        log2 of a bound on the noise of every ciphertext you decrypt (per coefficient): measure it with
        Context.decryption_noise_bits on your computation's output for inputs of zero, and add a margin.
    statistical_bits : float, optional
        s: with the bound respected, an event of probability p without leaks (recovering the key) has
        probability at most (e p)^(1 - 2^-(s+1)) with the flooded decryptions. Default 30.
    queries : float, optional
        How many decryptions of related ciphertexts an adversary may see. Default 128.
    """

    noise_bits: float
    statistical_bits: float = 30.0
    queries: float = 128.0

    def _core(self):
        """Return the native policy object."""
        c = _ember.DecryptionFloodingCore()
        c.noise_bits, c.statistical_bits, c.queries = float(self.noise_bits), float(self.statistical_bits), float(self.queries)
        return c

    def sigma_bits(self, ctx: "Context") -> float:
        """Return log2 of the flooding standard deviation for ctx's ring.

        Parameters
        ----------
        ctx : Context
            The context (its ring degree N enters sigma).

        Returns
        -------
        float
            log2(sigma), in bits.
        """
        return self._core().sigma_bits(ctx.params.n)

    def precision_bits(self, ctx: "Context", scale: Optional[float] = None) -> float:
        """Return the bits of precision left in each slot's real (or imaginary) part.

        That is -log2 of the flooding error's standard deviation there, sigma * sqrt(N / 2) / scale.

        Parameters
        ----------
        ctx : Context
            The context.
        scale : float, optional
            The scale of the decrypted ciphertext; default: that of a fresh ciphertext (``scale_at(user_level)``).

        Returns
        -------
        float
            The bits of precision (may be negative when the flooding swamps the message).
        """
        scale = ctx.scale_at(ctx.user_level) if scale is None else float(scale)
        return float(np.log2(scale) - self.sigma_bits(ctx) - 0.5 * np.log2(ctx.params.n / 2))


@dataclass
class KeySet:
    """Keys from Context.keygen().

    The secret key never leaves the process unless you serialize it explicitly; relin and galois are also
    registered on the context that made them. Each parameter is an attribute of the same name.

    Parameters
    ----------
    secret : SecretKey
        The secret key (decryption).
    public : PublicKey
        The public key (encryption).
    relin : SwitchingKey
        The relinearization key (ciphertext products).
    galois : GaloisKeys
        The rotation and conjugation keys asked for.
    """

    secret: SecretKey
    public: PublicKey
    relin: SwitchingKey
    galois: GaloisKeys


def as_slots(values, slots_max: int) -> np.ndarray:
    """Return `values` as the complex128 slot vector of a plaintext.

    Parameters
    ----------
    values : array_like
        A 1-D numeric array (real or complex) of a power-of-two length up to `slots_max`.
    slots_max : int
        The largest slot count (N/2).

    Returns
    -------
    numpy.ndarray
        A contiguous complex128 copy (or view) of the values.

    Raises
    ------
    ValueError
        Unless `values` is 1-D, numeric and of a power-of-two length up to `slots_max`.
    """
    v = np.asarray(values)
    if v.ndim == 0:
        raise ValueError("expected a 1-D array of slot values, got a scalar")
    if v.ndim != 1:
        raise ValueError(f"expected a 1-D array of slot values, got shape {v.shape}")
    n = v.shape[0]
    if n == 0 or n & (n - 1) or n > slots_max:
        raise ValueError(f"the number of values must be a power of two in [1, {slots_max}], got {n}")
    if not np.issubdtype(v.dtype, np.number):
        raise ValueError(f"slot values must be numeric, got dtype {v.dtype}")
    return np.ascontiguousarray(v, dtype=np.complex128)


class Plaintext(_Value):
    """An encoded vector: a polynomial over Q_l with its scale.

    Made by Context.encode() or from_bytes(), not by calling the class.

    Parameters
    ----------
    ctx : Context
        The context it belongs to.
    core : object
        The native plaintext.
    """

    _kind = "plaintext"

    level = property(lambda self: self._core.level, doc="The level l of the plaintext (its polynomial is over Q_l).")
    scale = property(lambda self: self._core.scale, doc="The scale the values were encoded at (a float, e.g. 2**50).")
    slots = property(lambda self: self._core.slots, doc="The number of slots encoded (a power of two up to N/2).")

    def decode(self) -> np.ndarray:
        """Decode the plaintext back to its slot values.

        Returns
        -------
        numpy.ndarray
            complex128, one value per slot (the encoded values up to the encoding's rounding).
        """
        return self._ctx._core.decode(self._core)


class Ciphertext(_Value):
    """A CKKS ciphertext. Operators: +, -, * with ciphertexts, plaintexts, numbers and numpy vectors; unary -.

    `*` means one thing whatever the other operand: the product, rescaled (one level; the result is on the
    canonical scale when both operands are), relinearized for two ciphertexts; the only exception is a
    product by an integer, which is exact and consumes no level. Operands at different levels are brought
    to the lower level exactly. Context.multiply(a, b, rescale=False) gives the product without the rescale.

    A ciphertext knows its context and the key set it was encrypted under (key_id): operations with a
    ciphertext, plaintext or key of another context or key set raise ValueError.

    Made by Context.encrypt(), the operations, or from_bytes(), not by calling the class.

    Parameters
    ----------
    ctx : Context
        The context it belongs to.
    core : object
        The native ciphertext.
    """

    _kind = "ciphertext"
    __array_priority__ = 1000  # so that numpy_array * ct calls our __rmul__

    level = property(lambda self: self._core.level, doc="The levels left (rescales still possible).")
    scale = property(lambda self: self._core.scale, doc="The scale of the encrypted values (a float, e.g. 2**50).")
    slots = property(lambda self: self._core.slots, doc="The number of slots (a power of two up to N/2).")
    context = property(lambda self: self._ctx, doc="The Context the ciphertext belongs to.")
    key_id = property(lambda self: self._core.key_id,
                      doc="The identity of the key set it was encrypted under (0: unbound).")

    def __repr__(self) -> str:
        """Return ``<ember.Ciphertext slots=... level=... scale=...>``."""
        return f"<ember.Ciphertext slots={self.slots} level={self.level} scale={_ember.scale_str(self.scale)}>"

    def _wrap(self, core) -> "Ciphertext":
        """Return a Ciphertext of this context around a native result."""
        return Ciphertext(self._ctx, core)

    # arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other):
        """Add a ciphertext, plaintext, number (to every slot) or vector of the same slot count (no level used)."""
        c = self._ctx._core
        if isinstance(other, Ciphertext):
            return self._wrap(c.add(self._core, other._core))
        if isinstance(other, Plaintext):
            return self._wrap(c.add_plain(self._core, other._core))
        if isinstance(other, numbers.Number):
            return self._wrap(c.add_const(self._core, complex(other)))
        return self._wrap(c.add_vector(self._core, self._ctx._vector(other, self.slots)))

    __radd__ = __add__

    def __neg__(self):
        """Negate every slot."""
        return self._wrap(self._ctx._core.negate(self._core))

    def __sub__(self, other):
        """Subtract a ciphertext, plaintext, number or vector (no level used)."""
        if isinstance(other, Ciphertext):
            return self._wrap(self._ctx._core.sub(self._core, other._core))
        if isinstance(other, numbers.Number):
            return self + (-complex(other))
        if isinstance(other, Plaintext):
            return self._wrap(self._ctx._core.sub_plain(self._core, other._core))
        return self + (-self._ctx._vector(other, self.slots))

    def __rsub__(self, other):
        """Return ``other - self`` for a number or vector `other`."""
        return (-self) + other

    def __mul__(self, other):
        """Multiply by a ciphertext, plaintext, number or vector, rescaled (an integer: exact, no level used)."""
        c = self._ctx._core
        if isinstance(other, (Ciphertext, Plaintext)):
            return self._wrap(c.mul(self._core, other._core))
        if isinstance(other, numbers.Number):
            return self._wrap(c.mul_const(self._core, complex(other)))
        return self._wrap(c.mul_vector(self._core, self._ctx._vector(other, self.slots)))

    __rmul__ = __mul__

    def square(self) -> "Ciphertext":
        """Return ``self * self``: the square, relinearized and rescaled (one level).

        Returns
        -------
        Ciphertext
            The slot-wise square at one level lower.
        """
        return self * self

    # levels, rotations --------------------------------------------------------------------------
    def rescale(self) -> "Ciphertext":
        """Divide by the top prime q_l, rounding: one level lower, the scale divided by q_l.

        Returns
        -------
        Ciphertext
            The rescaled ciphertext (the operators rescale by themselves; this is for products made with
            ``Context.multiply(..., rescale=False)``).

        Raises
        ------
        ValueError
            At level 0.
        """
        return self._wrap(self._ctx._core.rescale(self._core))

    def drop_to_level(self, level: int) -> "Ciphertext":
        """Drop levels without dividing: the same values and scale at a lower level.

        Parameters
        ----------
        level : int
            The target level, at most the ciphertext's.

        Returns
        -------
        Ciphertext
            The ciphertext at `level`.

        Raises
        ------
        ValueError
            For a level above the ciphertext's.
        """
        return self._wrap(self._ctx._core.drop_to_level(self._core, level))

    def rotate(self, steps: int) -> "Ciphertext":
        """Shift the slots left by `steps` (np.roll(x, -steps)); needs the Galois key of `steps`.

        Parameters
        ----------
        steps : int
            The rotation (any sign, taken modulo the slots; negative shifts right).

        Returns
        -------
        Ciphertext
            The rotated ciphertext (same level and scale).

        Raises
        ------
        ValueError
            Without the Galois key of the rotation (keygen(rotations=[steps])).
        """
        return self._wrap(self._ctx._core.rotate(self._core, int(steps)))

    def rotate_many(self, steps: Iterable[int]) -> list["Ciphertext"]:
        """Rotate by several steps sharing one Decomp + ModUp (hoisting); see Context.rotate_many.

        Parameters
        ----------
        steps : iterable of int
            The rotations.

        Returns
        -------
        list of Ciphertext
            One rotated ciphertext per step, in order.
        """
        return self.context.rotate_many(self, steps)

    def rotate_sum(self, steps: Iterable[int]) -> "Ciphertext":
        """Sum the rotations of the ciphertext by `steps` with one ModUp and one ModDown; see Context.rotate_sum.

        Parameters
        ----------
        steps : iterable of int
            The rotations summed (0: the ciphertext itself).

        Returns
        -------
        Ciphertext
            The sum, at the same level and scale.
        """
        return self.context.rotate_sum(self, steps)

    def inner_sum(self, stride: int, count: int, radix: int = 2) -> "Ciphertext":
        """Sum the rotations by j * stride for j < count; see Context.inner_sum.

        Parameters
        ----------
        stride : int
            Slot distance between the summed rotations.
        count : int
            Number of rotations summed (a power of two).
        radix : int, optional
            Rotations per round plus one (a power of two; default 2, the rotate-and-add).

        Returns
        -------
        Ciphertext
            The sum, at the same level and scale.
        """
        return self.context.inner_sum(self, stride, count, radix)

    def bootstrap(self, iterations: int = 1, residual_bits: int = 0) -> "Ciphertext":
        """Bootstrap the ciphertext: a fresh encryption of its slots at the user level; see Context.bootstrap.

        Parameters
        ----------
        iterations : int, optional
            1 (default) or 2 (iterative bootstrapping).
        residual_bits : int, optional
            With iterations=2: bits the residual is scaled up by (0: 20).

        Returns
        -------
        Ciphertext
            The bootstrapped ciphertext.
        """
        return self.context.bootstrap(self, iterations=iterations, residual_bits=residual_bits)

    def conjugate(self) -> "Ciphertext":
        """Conjugate every slot (complex conjugate); needs the conjugation key (keygen(conjugation=True)).

        Returns
        -------
        Ciphertext
            The conjugated ciphertext (same level and scale).
        """
        return self._wrap(self._ctx._core.conjugate(self._core))

    def decrypt(self, secret_key, *, flooding=None) -> np.ndarray:
        """Decrypt the ciphertext: ``self.context.decrypt(self, secret_key, flooding=flooding)``.

        Parameters
        ----------
        secret_key : SecretKey
            The secret key of the ciphertext's key set.
        flooding : DecryptionFlooding, optional
            Noise flooding for this decryption (default: the context's policy, if any).

        Returns
        -------
        numpy.ndarray
            The slot values, complex128.
        """
        return self._ctx.decrypt(self, secret_key, flooding=flooding)


class Context:
    """One CKKS parameter set with its precomputed tables, a thread pool and the evaluation keys.

    Safe to use from several Python threads at once; long operations release the GIL.

    Parameters
    ----------
    params : CkksParams, optional
        The parameter set; default ``CkksParams()`` (N = 2^16, 24 levels, 50-bit scale, dnum 3).
    threads : int, optional
        Threads of the context's pool (a positive integer; default 1).
    device : str, optional
        Where polynomials live and kernels run: ``"cpu"``; ``"cuda"`` (an NVIDIA GPU, in builds with the CUDA
        backend); or ``"cpu-guarded"``, the CPU kernels on memory that faults when touched outside them (a test
        mode that checks what the GPU demands of the code, on any machine). Default: the ``EMBER_DEVICE``
        environment variable, else ``"cpu"``. Objects move between contexts with ``x.to(other_ctx)``.

    Raises
    ------
    TypeError
        When `params` is not an ember.CkksParams.
    ValueError
        When `threads` is not a positive integer, or `device` is not one of the names above.
    RuntimeError
        When this build or this machine lacks the device (a wheel has no CUDA backend; no GPU is present).
    """

    def __init__(self, params: Optional[CkksParams] = None, threads: int = 1, device: Optional[str] = None):
        if params is None:
            params = CkksParams()
        if not isinstance(params, CkksParams):
            raise TypeError("params must be an ember.CkksParams")
        if not isinstance(threads, numbers.Integral) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if device is not None and not isinstance(device, str):
            raise TypeError(f"device must be a str, got {type(device).__name__}")
        self.params = params
        self._core = self._make_core(params, int(threads), device or "")
        self._bootstrapper = None
        self._boot_keys = {}  # key-set identity -> bootstrapping keys (a later keygen adds, never replaces)
        self._boot_latest = None
        self._boot_lock = threading.Lock()

    @staticmethod
    def _make_core(params: CkksParams, threads: int, device: str):
        """Return the native context of the parameter set on `device` ("" for the default) with `threads` threads."""
        return _ember.ContextCore(params._core, threads, device)

    slots = property(lambda self: self._core.slots, doc="N/2, the largest slot count.")
    max_level = property(lambda self: self._core.max_level,
                         doc="The top level of the chain (bootstrapping levels included).")
    user_level = property(lambda self: self._core.user_level,
                          doc="The level of fresh ciphertexts and of bootstrapping outputs (max_level without "
                              "bootstrapping).")
    threads = property(lambda self: self._core.threads, doc="The number of threads of the context's pool.")
    device = property(lambda self: self._core.device,
                      doc='The device its polynomials live on: "cpu", "cpu-guarded" or "cuda" ("symbolic" for graph capture).')

    def synchronize(self) -> None:
        """Wait until every operation queued on the context's device has finished.

        Operations on a GPU (device "cuda") return once their kernels are queued; a result's values are read back
        (decrypt, to_bytes, to) only after its kernels, so this matters for timing alone. On the CPU it returns at
        once.
        """
        self._core.synchronize()

    def scale_at(self, level: int) -> float:
        """Return the canonical scale of a level.

        Delta = 2**log_scale at user_level, then scale_{l-1} = scale_l^2 / q_l, so that a product of two
        ciphertexts on canonical scales lands on the canonical scale after rescaling. Above user_level
        (bootstrapping levels): the power of two nearest to q_l.

        Parameters
        ----------
        level : int
            A level in [0, max_level].

        Returns
        -------
        float
            The scale.
        """
        return self._core.scale_at(level)

    def __repr__(self) -> str:
        """Return ``<ember.Context CkksParams(...) threads=...>``."""
        dev = "" if self.device == "cpu" else f" device={self.device!r}"
        return f"<ember.Context {self.params!r} threads={self.threads}{dev}>"

    def _vector(self, values, slots: int) -> np.ndarray:
        """Return `values` as a slot vector of exactly `slots` values (ValueError otherwise)."""
        v = as_slots(values, self.slots)
        if v.shape[0] != slots:
            raise ValueError(f"vector of {v.shape[0]} values for a ciphertext of {slots} slots")
        return v

    # keys ---------------------------------------------------------------------------------------
    def keygen(self, rotations: Iterable[int] = (), conjugation: bool = False, seeded: bool = True,
               bootstrapping: bool = False) -> KeySet:
        """Generate a key set: secret, public, relinearization and Galois keys.

        The evaluation keys are registered on this context under their key set: operations on a ciphertext use
        the keys of the keygen that encrypted it, so a second keygen adds a key set and never changes what
        existing ciphertexts compute.

        Parameters
        ----------
        rotations : iterable of int, optional
            Slot rotations to make Galois keys for (default none).
        conjugation : bool, optional
            Also make the conjugation key. Default False.
        seeded : bool, optional
            True (default): keep only a 32-byte seed for the uniform half of each switching key when serialized
            (MAD key compression).
        bootstrapping : bool, optional
            True (parameters from CkksParams.bootstrappable): also exactly the rotation keys bootstrapping needs,
            conjugation, and the sparse-secret encapsulation keys, registered for Context.bootstrap. Default False.

        Returns
        -------
        KeySet
            The keys (secret, public, relin, galois).

        Raises
        ------
        ValueError
            With ``bootstrapping=True`` on parameters that cannot bootstrap.
        """
        rotations = [int(r) for r in rotations]
        boot = None
        if bootstrapping:
            boot = self.bootstrapper()
            rotations = sorted(set(rotations) | set(boot.rotations))
            conjugation = True
        sk, pk, rlk, gk = self._core.keygen(rotations, bool(conjugation), bool(seeded))
        if boot is not None:
            self._register_boot_keys(boot.with_keys(sk, rlk, gk, bool(seeded)))
        return KeySet(SecretKey(self, sk), PublicKey(self, pk), SwitchingKey(self, rlk), GaloisKeys(self, gk))

    # bootstrapping ------------------------------------------------------------------------------
    def bootstrapper(self):
        """Return the bootstrapping circuit of this context (built once: its linear transforms are encoded here).

        Returns
        -------
        object
            The native bootstrapper (its ``rotations`` are the rotation keys it needs, ``slots`` the slots it
            bootstraps); the same object on every call.

        Raises
        ------
        ValueError
            When the parameters were not made with CkksParams.bootstrappable().
        """
        cfg = getattr(self.params, "bootstrap_config", None)
        if cfg is None:
            raise ValueError("this context cannot bootstrap: make its parameters with ember.CkksParams.bootstrappable()")
        with self._boot_lock:
            if self._bootstrapper is None:
                self._bootstrapper = _ember.BootstrapperCore(_ember.context_of(self._core), cfg)
            return self._bootstrapper

    def bootstrap(self, ct: "Ciphertext", iterations: int = 1, residual_bits: int = 0) -> "Ciphertext":
        """Bootstrap a ciphertext: a fresh encryption of its slots (up to the bootstrapping error).

        The result is at level user_level, on the canonical scale. Needs keygen(bootstrapping=True) (or
        load_bootstrap_keys) for the ciphertext's key set.

        Precision: >= 25 bits at N = 2^16 for every input whose slots have real and imaginary parts in
        [-1, 1] (the parameters' input_bound, sqrt(2) per message coefficient, covers them all). Larger
        inputs leave EvalMod's interval and come back wrong: scale them into [-1, 1] first (a larger
        input_bound in CkksParams.bootstrappable() trades precision for range).

        iterations=2: iterative bootstrapping (META-BTS): the residual ct - bootstrap(ct), scaled up by
        2**residual_bits (0: 20), is bootstrapped again and added back. Twice the time, no extra level;
        the result sits on 2**residual_bits times the canonical scale, and its precision is then limited
        by ct's own rounding error at its scale (use a larger log_scale for 40+ bits).

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext to bootstrap (for the stated precision, its slots' real and imaginary parts in
            [-1, 1]).
        iterations : int, optional
            1 (default) or 2 (iterative bootstrapping).
        residual_bits : int, optional
            With iterations=2: the bits the residual is scaled up by (0, the default: 20).

        Returns
        -------
        Ciphertext
            The bootstrapped ciphertext at level user_level.

        Raises
        ------
        TypeError
            When `ct` is not an ember.Ciphertext.
        ValueError
            For iterations other than 1 or 2, parameters that cannot bootstrap, or no bootstrapping keys of the
            ciphertext's key set.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError("bootstrap expects an ember.Ciphertext")
        if iterations not in (1, 2):
            raise ValueError(f"bootstrap: iterations must be 1 or 2, got {iterations!r}")
        boot = self.bootstrapper()
        keys = self._boot_keys_for(ct)
        if iterations == 2:
            return Ciphertext(self, boot.bootstrap_iterative(ct._core, keys, int(residual_bits)))
        return Ciphertext(self, boot.bootstrap(ct._core, keys))

    def _register_boot_keys(self, keys):
        """Register bootstrapping keys under their key set, as the latest."""
        kid = keys.relin.key_id
        self._boot_keys[kid] = keys
        self._boot_latest = kid

    def _boot_keys_for(self, ct: "Ciphertext"):
        """Return the bootstrapping keys of ct's key set (an unbound ciphertext: the latest; unbound keys: any)."""
        if not self._boot_keys:
            raise ValueError("no bootstrapping keys: call keygen(bootstrapping=True)")
        kid = ct._core.key_id or self._boot_latest
        keys = self._boot_keys.get(kid, self._boot_keys.get(0))
        if keys is None:
            raise ValueError("cannot bootstrap: no bootstrapping keys of this ciphertext's key set; call keygen(bootstrapping=True) "
                             "with the keys that encrypted it, or load_bootstrap_keys()")
        return keys

    def _latest_boot_keys(self):
        """Return the bootstrapping keys registered last (ValueError if none)."""
        if not self._boot_keys:
            raise ValueError("no bootstrapping keys: call keygen(bootstrapping=True) or load_bootstrap_keys()")
        return self._boot_keys[self._boot_latest]

    def save_bootstrap_keys(self, directory) -> list[str]:
        """Write the latest bootstrapping keys into a directory, one file per key.

        The files are relin.key, galois-<element>.key per Galois key and, with sparse-secret encapsulation,
        from_sparse.key and to_sparse-<i>.ct; each key is serialized on its own, so that no second copy of the
        set is ever held. Seeded keys are written compressed.

        Parameters
        ----------
        directory : str or os.PathLike
            The directory (created if missing; existing files of the same names are overwritten).

        Returns
        -------
        list of str
            The names of the files written.

        Raises
        ------
        ValueError
            When no bootstrapping keys are registered.
        """
        import pathlib
        k = self._latest_boot_keys()
        d = pathlib.Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        handle, names = _ember.context_of(self._core), []

        def write(name: str, data: bytes):
            (d / name).write_bytes(data)
            names.append(name)

        write("relin.key", k.key_to_bytes(handle, "relin"))
        for e in k.galois_elements:
            write(f"galois-{e}.key", k.key_to_bytes(handle, "galois", e))
        parts = k.to_sparse_to_bytes(handle)
        if parts:
            write("from_sparse.key", k.key_to_bytes(handle, "from_sparse"))
            for i, part in enumerate(parts):
                write(f"to_sparse-{i:02d}.ct", part)
        return names

    def load_bootstrap_keys(self, directory, *, max_bytes: Optional[int] = None):
        """Load keys written by save_bootstrap_keys(), one file at a time, and register them.

        The relinearization and Galois keys are also registered as this context's evaluation keys.

        Parameters
        ----------
        directory : str or os.PathLike
            A directory written by save_bootstrap_keys().
        max_bytes : int, optional
            Bound on each file (default: the largest switching key, or ciphertext, of this context); a larger
            file is refused before it is read.

        Raises
        ------
        ValueError
            For a directory without relin.key, a bad file name, a file over the bound, or malformed keys.
        """
        import pathlib
        d = pathlib.Path(directory)
        if not (d / "relin.key").is_file():
            raise ValueError(f"{d}: no relin.key (not a directory written by save_bootstrap_keys)")
        mx = _check_max_bytes(max_bytes)
        limit = {"key": mx or SwitchingKey.default_max_bytes(self), "ct": mx or Ciphertext.default_max_bytes(self)}

        def read(f, kind):
            size = f.stat().st_size
            if size > limit[kind]:
                raise ValueError(f"{f.name}: {size} bytes exceeds max_bytes = {limit[kind]}")
            return f.read_bytes()

        handle, k = _ember.context_of(self._core), _ember.BootstrapKeysCore()
        k.key_from_bytes(handle, "relin", read(d / "relin.key", "key"), 0, mx)
        for f in sorted(d.glob("galois-*.key")):
            try:
                e = int(f.stem.split("-", 1)[1])
            except ValueError:
                raise ValueError(f"{f.name}: bad Galois key file name") from None
            k.key_from_bytes(handle, "galois", read(f, "key"), e, mx)
        if (d / "from_sparse.key").is_file():
            k.key_from_bytes(handle, "from_sparse", read(d / "from_sparse.key", "key"), 0, mx)
            parts = sorted(d.glob("to_sparse-*.ct"))
            if not parts:
                raise ValueError(f"{d}: from_sparse.key without its to_sparse-*.ct parts")
            k.to_sparse_from_bytes(handle, [read(f, "ct") for f in parts], int(self.params.bootstrap_config.encaps_digit_bits), mx)
        self._core.set_eval_keys(k.relin, k.galois)
        self._register_boot_keys(k)

    @property
    def bootstrap_key_info(self) -> dict:
        """The latest bootstrapping keys' rotation-key count and size in bytes, as a dict.

        Keys: rotation_keys, key_bytes (expanded) and key_bytes_compressed (seeded halves as seeds). Raises
        ValueError without bootstrapping keys.
        """
        k = self._latest_boot_keys()
        expanded, compressed = k.bytes
        return dict(rotation_keys=k.rotation_keys, key_bytes=expanded, key_bytes_compressed=compressed)

    def set_eval_keys(self, relin: Optional[SwitchingKey] = None, galois: Optional[GaloisKeys] = None):
        """Register evaluation keys (e.g. loaded with from_bytes) for the ciphertext operators.

        They are registered under their key set: ciphertexts of that key set use them, those of other key sets
        keep theirs.

        Parameters
        ----------
        relin : SwitchingKey, optional
            A relinearization key.
        galois : GaloisKeys, optional
            Rotation and conjugation keys.

        Raises
        ------
        TypeError
            For keys of the wrong type.
        ValueError
            For keys of another context, or a relinearization and Galois key of two different key sets.
        """
        for k, t in ((relin, SwitchingKey), (galois, GaloisKeys)):
            if k is not None and not isinstance(k, t):
                raise TypeError(f"expected an ember.{t.__name__}, got {type(k).__name__}")
        self._core.set_eval_keys(relin._core if relin else None, galois._core if galois else None)

    # encoding / encryption ----------------------------------------------------------------------
    def encode(self, values, level: Optional[int] = None, scale: Optional[float] = None) -> Plaintext:
        """Encode a vector as a plaintext.

        Parameters
        ----------
        values : array_like
            A 1-D real or complex vector of a power-of-two length up to N/2 (its length is the slot count).
        level : int, optional
            The level, in [0, max_level]; default user_level.
        scale : float, optional
            The scale; default the canonical scale of the level (scale_at(level)).

        Returns
        -------
        Plaintext
            The encoded vector.

        Raises
        ------
        ValueError
            For values that are not such a vector, or a level out of range.
        """
        v = as_slots(values, self.slots)
        level = self.user_level if level is None else int(level)
        if not 0 <= level <= self.max_level:
            raise ValueError(f"level must be in [0, {self.max_level}], got {level}")
        scale = self.scale_at(level) if scale is None else float(scale)
        return Plaintext(self, self._core.encode(v, scale, level))

    def decode(self, pt: Plaintext) -> np.ndarray:
        """Decode a plaintext back to its slot values.

        Parameters
        ----------
        pt : Plaintext
            A plaintext of this context.

        Returns
        -------
        numpy.ndarray
            complex128, one value per slot.
        """
        return self._core.decode(pt._core)

    def encrypt(self, values, key, level: Optional[int] = None) -> Ciphertext:
        """Encrypt a vector or a Plaintext with a public or a secret key.

        Parameters
        ----------
        values : array_like or Plaintext
            A real or complex vector (its length a power of two up to N/2, the ciphertext's slot count), encoded
            with encode(values, level); or a Plaintext, encrypted as it is.
        key : PublicKey or SecretKey
            The key to encrypt with; the ciphertext belongs to its key set.
        level : int, optional
            The level of an encoded vector (default user_level); ignored for a Plaintext.

        Returns
        -------
        Ciphertext
            The encryption, on the plaintext's scale and level.

        Raises
        ------
        TypeError
            When `key` is neither a PublicKey nor a SecretKey.
        ValueError
            For values that are not such a vector, or a level out of range.
        """
        pt = values if isinstance(values, Plaintext) else self.encode(values, level)
        if isinstance(key, PublicKey):
            return Ciphertext(self, self._core.encrypt_pk(pt._core, key._core))
        if isinstance(key, SecretKey):
            return Ciphertext(self, self._core.encrypt_sk(pt._core, key._core))
        raise TypeError("key must be an ember.PublicKey or ember.SecretKey")

    def decrypt(self, ct: Ciphertext, secret_key, *, flooding: Optional["DecryptionFlooding"] = None) -> np.ndarray:
        """Decrypt and decode a ciphertext.

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext.
        secret_key : SecretKey
            The secret key of its key set.
        flooding : DecryptionFlooding, optional
            Noise flooding for this decryption (see DecryptionFlooding); without it, the context's policy
            (set_decryption_flooding) applies, if any.

        Returns
        -------
        numpy.ndarray
            The decrypted slot values (complex128, one per slot of the ciphertext).

        Raises
        ------
        TypeError
            For arguments of the wrong type.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError("decrypt expects an ember.Ciphertext")
        if not isinstance(secret_key, SecretKey):
            raise TypeError("decrypt needs the ember.SecretKey")
        if flooding is not None and not isinstance(flooding, DecryptionFlooding):
            raise TypeError("flooding must be an ember.DecryptionFlooding")
        return self._core.decrypt(ct._core, secret_key._core, flooding._core() if flooding else None)

    def set_decryption_flooding(self, flooding: Optional["DecryptionFlooding"]):
        """Set the context-wide flooding policy: every later decrypt() floods as `flooding` says.

        Turn it on whenever decrypted results are shown to anyone but the key owner (README, "Sharing
        decrypted results").

        Parameters
        ----------
        flooding : DecryptionFlooding or None
            The policy; None switches it off.

        Raises
        ------
        TypeError
            When `flooding` is neither a DecryptionFlooding nor None.
        """
        if flooding is not None and not isinstance(flooding, DecryptionFlooding):
            raise TypeError("flooding must be an ember.DecryptionFlooding or None")
        self._core.set_decryption_flooding(flooding._core() if flooding else None)

    @property
    def decryption_flooding(self) -> Optional["DecryptionFlooding"]:
        """The context-wide flooding policy set by set_decryption_flooding (None: off)."""
        f = self._core.decryption_flooding
        return None if f is None else DecryptionFlooding(f.noise_bits, f.statistical_bits, f.queries)

    def decryption_noise_bits(self, ct: Ciphertext, secret_key) -> float:
        """Measure log2 of the largest coefficient of the raw decryption of ct (never flooded).

        Run your computation on encryptions of zero and pass the result (plus a margin) as
        DecryptionFlooding(noise_bits=...). Keep the value private: it is what flooding hides.

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext.
        secret_key : SecretKey
            The secret key of its key set.

        Returns
        -------
        float
            The bits of the largest coefficient.

        Raises
        ------
        TypeError
            For arguments of the wrong type.
        """
        if not isinstance(ct, Ciphertext) or not isinstance(secret_key, SecretKey):
            raise TypeError("decryption_noise_bits expects an ember.Ciphertext and the ember.SecretKey")
        return self._core.decryption_noise_bits(ct._core, secret_key._core)

    # explicit operations (the operators call these) ---------------------------------------------
    def rotate_many(self, ct: Ciphertext, steps: Iterable[int]) -> list[Ciphertext]:
        """Rotate by several steps sharing one Decomp + ModUp (hoisting): much cheaper than separate rotates.

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext.
        steps : iterable of int
            The rotations (each needs its Galois key).

        Returns
        -------
        list of Ciphertext
            ``[ct.rotate(s) for s in steps]``, computed together.

        Raises
        ------
        TypeError
            When `ct` is not an ember.Ciphertext or a step is not an integer.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot rotate_many: expected an ember.Ciphertext, got {type(ct).__name__}")
        return [Ciphertext(self, c) for c in self._core.rotate_many(ct._core, [integer_arg("rotate_many", "step", s) for s in steps])]

    def rotate_sum(self, ct: Ciphertext, steps: Iterable[int]) -> Ciphertext:
        """Sum rotate(ct, s) over `steps` with one Decomp + ModUp and one ModDown for all of them.

        The rotations are summed in the raised basis (double hoisting); needs the Galois keys of the steps. At
        N = 2^16, x plus its rotations by 1..8 took less than rotate_many of the 8 rotations alone, before any
        addition (74 against 103 ms: `ember bench rotate_sum` / `ember bench rotate_many`, README).

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext.
        steps : iterable of int
            The rotations summed (0: ct itself; a step given twice is counted twice). Not empty.

        Returns
        -------
        Ciphertext
            The sum, at ct's level and scale.

        Raises
        ------
        TypeError
            When `ct` is not an ember.Ciphertext or a step is not an integer.
        ValueError
            For an empty list of steps or a missing Galois key.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot rotate_sum: expected an ember.Ciphertext, got {type(ct).__name__}")
        steps = [integer_arg("rotate_sum", "step", s) for s in steps]
        return Ciphertext(self, _ember.rotate_sum(_ember.context_of(self._core), ct._core, steps,
                                                  _ember.galois_keys_of(self._core, ct._core)))

    def inner_sum(self, ct: Ciphertext, stride: int, count: int, radix: int = 2) -> Ciphertext:
        """Sum rotate(ct, j * stride) over j < count (count a power of two).

        radix = 2 (default): the rotate-and-add, log2(count) key switches one after the other. radix 2^k:
        log_radix(count) rounds, each adding radix - 1 rotations of the running sum by one rotate_sum -- fewer key
        switches in series (for parallel hardware), more rotations in all: at N = 2^16 on a 2-core CPU radix 4 took
        as long as radix 2 and radix 8 about 13 % longer (`ember bench inner_sum --radix R`). Keys:
        ember.inner_sum_rotations(stride, count, radix).

        Parameters
        ----------
        ct : Ciphertext
            The ciphertext.
        stride : int
            Slot distance between the summed rotations (nonzero).
        count : int
            Number of rotations summed (a power of two, at most the slots).
        radix : int, optional
            Rotations per round plus one (a power of two >= 2; default 2).

        Returns
        -------
        Ciphertext
            The sum, at ct's level and scale.

        Raises
        ------
        TypeError
            When `ct` is not an ember.Ciphertext or an argument is not an integer.
        ValueError
            For invalid arguments or a missing Galois key.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot inner_sum: expected an ember.Ciphertext, got {type(ct).__name__}")
        args = [integer_arg("inner_sum", n, v) for n, v in (("stride", stride), ("count", count), ("radix", radix))]
        return Ciphertext(self, _ember.inner_sum(_ember.context_of(self._core), ct._core, *args,
                                                 _ember.galois_keys_of(self._core, ct._core)))

    def multiply_sum(self, pairs: Iterable, merged: bool = True, addend: Optional[Ciphertext] = None) -> Ciphertext:
        """Sum a_i * b_i over the ciphertext pairs (a_i, b_i), relinearized and rescaled once.

        The tensor products are added before the single key switch, so k products cost one relinearization
        instead of k (an inner product of encrypted vectors, a polynomial's giant steps). Every product must land
        on the same scale and level; the result is where multiply(a_0, b_0) would land.

        Parameters
        ----------
        pairs : iterable of (Ciphertext, Ciphertext)
            The products' operands. Not empty.
        merged : bool, optional
            True (default): ModDown merged with the rescale (MAD); False: ModDown then Rescale (same result up to
            rounding, for comparison).
        addend : Ciphertext, optional
            A ciphertext on the products' level and scale (e.g. made with multiply(..., rescale=False)), added
            before the rescale.

        Returns
        -------
        Ciphertext
            The sum of the products, one level below the operands.

        Raises
        ------
        TypeError
            For pairs that are not two ember.Ciphertext, or an addend that is not one.
        ValueError
            For no pairs, or products on different scales or levels.
        """
        pairs = list(pairs)
        if not pairs:
            raise ValueError("multiply_sum: no products")
        for p in pairs:
            if not (isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, Ciphertext) for x in p)):
                raise TypeError("multiply_sum expects pairs (a, b) of ember.Ciphertext")
        if addend is not None and not isinstance(addend, Ciphertext):
            raise TypeError(f"multiply_sum: addend must be an ember.Ciphertext, got {type(addend).__name__}")
        return Ciphertext(self, self._core.mul_sum([a._core for a, _ in pairs], [b._core for _, b in pairs], merged,
                                                   None if addend is None else addend._core))

    def multiply(self, a: Ciphertext, b, rescale: bool = True, merged: bool = True) -> Ciphertext:
        """Multiply a ciphertext by a ciphertext or plaintext, relinearized; rescaled unless rescale=False.

        ``a * b`` is multiply(a, b).

        Parameters
        ----------
        a : Ciphertext
            The first operand.
        b : Ciphertext or Plaintext
            The second operand.
        rescale : bool, optional
            True (default): rescale the product (one level); False: keep it at the operands' level on the product
            of their scales.
        merged : bool, optional
            For two ciphertexts rescaled: False takes the unmerged ModDown-then-Rescale path instead of MAD's
            merged one (same result up to rounding, for comparison). Default True.

        Returns
        -------
        Ciphertext
            The product.

        Raises
        ------
        TypeError
            For operands of the wrong type.
        """
        if not isinstance(a, Ciphertext):
            raise TypeError("multiply: a must be an ember.Ciphertext")
        if isinstance(b, Plaintext):
            core = self._core.mul(a._core, b._core) if rescale else self._core.mul_plain(a._core, b._core)
            return Ciphertext(self, core)
        if not isinstance(b, Ciphertext):
            raise TypeError("multiply: b must be an ember.Ciphertext or ember.Plaintext")
        if rescale:
            return Ciphertext(self, self._core.mul(a._core, b._core, merged))
        return Ciphertext(self, self._core.multiply_relin(a._core, b._core))
