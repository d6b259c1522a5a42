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
    """v as an int, or TypeError("cannot <op>: <name> must be an integer, got <type>")."""
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
        """The object in Ember's byte format. compact: coefficients bit-packed (smaller, slower) rather than
        64-bit words (written and read at memory speed); default: words for ciphertexts and plaintexts,
        packed for keys. version=1 writes the previous format (packed, SHA-256) for older readers."""
        return getattr(_ember, f"{self._kind}_to_bytes")(self._ctx._core, self._core, _coefficients(compact), version)

    @classmethod
    def from_bytes(cls, ctx: "Context", data, *, max_bytes: Optional[int] = None):
        """The object in `data`, checked against `ctx`.

        Parameters
        ----------
        ctx : Context
            The context the object was written for (its parameter hash must match).
        data : bytes-like
            Untrusted bytes: bytes, bytearray, memoryview, mmap (read in place, not copied).
        max_bytes : int, optional
            Largest accepted input, checked before anything is parsed or allocated. Default:
            ``default_max_bytes(ctx)``, the size of the largest object of this type `ctx` can write.

        Raises
        ------
        ValueError
            On anything malformed, too large, or written for other parameters; the message names the
            field and its bound.
        TypeError
            When `data` is not bytes-like.
        """
        if not isinstance(ctx, Context):
            raise TypeError("from_bytes needs the ember.Context the object belongs to")
        mx = _check_max_bytes(max_bytes)
        if isinstance(data, str):
            raise TypeError("from_bytes needs bytes-like data, got str")
        return cls(ctx, getattr(_ember, f"{cls._kind}_from_bytes")(ctx._core, data, mx))

    @classmethod
    def default_max_bytes(cls, ctx: "Context") -> int:
        """The default bound of from_bytes: the size of the largest object of this type ctx can write (for
        GaloisKeys: 256 unseeded keys)."""
        return _ember.default_max_bytes(ctx._core, cls._kind)


class _Value(_Serializable):
    """Ciphertexts and plaintexts: also written straight into a caller's buffer (shared memory, an mmap)."""

    def serialized_size(self, *, compact: Optional[bool] = None, version: int = 2) -> int:
        """len(self.to_bytes(compact=compact, version=version)), without writing anything."""
        return getattr(_ember, f"{self._kind}_serialized_size")(self._ctx._core, self._core, _coefficients(compact), version)

    def write_into(self, buffer, *, compact: Optional[bool] = None, version: int = 2) -> int:
        """Writes to_bytes() into `buffer` (a writable bytes-like object of exactly serialized_size() bytes,
        e.g. a memoryview slice of shared memory) without an intermediate copy; returns the byte count."""
        try:
            return getattr(_ember, f"{self._kind}_write_into")(self._ctx._core, self._core, buffer, _coefficients(compact), version)
        except BufferError as e:
            raise TypeError(f"write_into needs a writable, contiguous bytes-like buffer, got {type(buffer).__name__} ({e})") from None


def _coefficients(compact) -> int:
    if compact not in (None, True, False):
        raise TypeError(f"compact must be True, False or None, got {compact!r}")
    return _Serializable._COEFFS[compact]


def checksum64(data) -> int:
    """The checksum of Ember's byte format version 2 over a bytes-like object (io/serialize.hpp)."""
    return _ember.checksum64(data)


def _check_max_bytes(max_bytes) -> int:
    """0 (the default bound) for None, else a positive int."""
    if max_bytes is None:
        return 0
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive integer or None, got {max_bytes!r}")
    return int(max_bytes)


class PublicKey(_Serializable):
    _kind = "public_key"


class SwitchingKey(_Serializable):
    """A key-switching key (the relinearization key). Seeded keys serialize only a 32-byte seed for
    each uniform half."""
    _kind = "switching_key"
    digits = property(lambda self: self._core.digits)
    seeded = property(lambda self: self._core.seeded)


class GaloisKeys(_Serializable):
    """Rotation and conjugation keys, by Galois element."""
    _kind = "galois_keys"
    elements = property(lambda self: self._core.elements)


class SecretKey(_Serializable):
    """The secret key. Its memory is wiped when freed; it is never printed, pickled or serialized unless
    asked explicitly with to_bytes(export_secret=True)."""
    _kind = "secret_key"

    def to_bytes(self, *, export_secret: bool = False, compact: Optional[bool] = None, version: int = 2) -> bytes:
        if not export_secret:
            raise ValueError("refusing to serialize the secret key; call to_bytes(export_secret=True) if you mean it")
        return super().to_bytes(compact=compact, version=version)

    def __repr__(self) -> str:
        return "<ember.SecretKey (hidden)>"

    def __reduce__(self):
        raise TypeError("ember.SecretKey cannot be pickled; use to_bytes(export_secret=True)")


@dataclass(frozen=True)
class DecryptionFlooding:
    """Noise flooding at decryption against the Li-Micciancio key-recovery attack (README, "Sharing
    decrypted results").

    Each decryption gets a fresh rounded Gaussian of standard deviation
    ``sigma = 2**(statistical_bits / 2) * sqrt(N * queries) * 2**noise_bits`` on every coefficient.

    Parameters
    ----------
    noise_bits : float
        log2 of a bound on the noise of every ciphertext you decrypt (per coefficient): measure it with
        Context.decryption_noise_bits on your computation's output for inputs of zero, and add a margin.
    statistical_bits : float
        s: with the bound respected, an event of probability p without leaks (recovering the key) has
        probability at most (e p)^(1 - 2^-(s+1)) with the flooded decryptions.
    queries : float
        How many decryptions of related ciphertexts an adversary may see.
    """
    noise_bits: float
    statistical_bits: float = 30.0
    queries: float = 128.0

    def _core(self):
        c = _ember.DecryptionFloodingCore()
        c.noise_bits, c.statistical_bits, c.queries = float(self.noise_bits), float(self.statistical_bits), float(self.queries)
        return c

    def sigma_bits(self, ctx: "Context") -> float:
        """log2 of the flooding standard deviation for ctx's ring."""
        return self._core().sigma_bits(ctx.params.n)

    def precision_bits(self, ctx: "Context", scale: Optional[float] = None) -> float:
        """Bits of precision left in each slot's real (or imaginary) part: -log2 of the flooding error's
        standard deviation there, sigma * sqrt(N / 2) / scale (scale: that of a fresh ciphertext if None)."""
        scale = ctx.scale_at(ctx.user_level) if scale is None else float(scale)
        return float(np.log2(scale) - self.sigma_bits(ctx) - 0.5 * np.log2(ctx.params.n / 2))


@dataclass
class KeySet:
    """Keys from Context.keygen(). The secret key never leaves the process unless you serialize it
    explicitly; relin and galois are also registered on the context that made them."""
    secret: SecretKey
    public: PublicKey
    relin: SwitchingKey
    galois: GaloisKeys


def as_slots(values, slots_max: int) -> np.ndarray:
    """values as the complex128 slot vector of a plaintext (ValueError unless 1-D, numeric, a power-of-two length
    up to slots_max)."""
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
    """An encoded vector: a polynomial over Q_l with its scale."""
    _kind = "plaintext"

    level = property(lambda self: self._core.level)
    scale = property(lambda self: self._core.scale)
    slots = property(lambda self: self._core.slots)

    def decode(self) -> np.ndarray:
        return self._ctx._core.decode(self._core)


class Ciphertext(_Value):
    """A CKKS ciphertext. Operators: +, -, * with ciphertexts, plaintexts, numbers and numpy vectors; unary -.

    `*` means one thing whatever the other operand: the product, rescaled (one level; the result is on the
    canonical scale when both operands are), relinearized for two ciphertexts; the only exception is a
    product by an integer, which is exact and consumes no level. Operands at different levels are brought
    to the lower level exactly. Context.multiply(a, b, rescale=False) gives the product without the rescale.

    A ciphertext knows its context and the key set it was encrypted under (key_id): operations with a
    ciphertext, plaintext or key of another context or key set raise ValueError.
    """
    _kind = "ciphertext"
    __array_priority__ = 1000  # so that numpy_array * ct calls our __rmul__

    level = property(lambda self: self._core.level, doc="levels left (rescales still possible)")
    scale = property(lambda self: self._core.scale)
    slots = property(lambda self: self._core.slots)
    context = property(lambda self: self._ctx)
    key_id = property(lambda self: self._core.key_id, doc="identity of the key set it was encrypted under (0: unbound)")

    def __repr__(self) -> str:
        return f"<ember.Ciphertext slots={self.slots} level={self.level} scale={_ember.scale_str(self.scale)}>"

    def _wrap(self, core) -> "Ciphertext":
        return Ciphertext(self._ctx, core)

    # arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other):
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
        return self._wrap(self._ctx._core.negate(self._core))

    def __sub__(self, other):
        if isinstance(other, Ciphertext):
            return self._wrap(self._ctx._core.sub(self._core, other._core))
        if isinstance(other, numbers.Number):
            return self + (-complex(other))
        if isinstance(other, Plaintext):
            return self._wrap(self._ctx._core.sub_plain(self._core, other._core))
        return self + (-self._ctx._vector(other, self.slots))

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        c = self._ctx._core
        if isinstance(other, (Ciphertext, Plaintext)):
            return self._wrap(c.mul(self._core, other._core))
        if isinstance(other, numbers.Number):
            return self._wrap(c.mul_const(self._core, complex(other)))
        return self._wrap(c.mul_vector(self._core, self._ctx._vector(other, self.slots)))

    __rmul__ = __mul__

    def square(self) -> "Ciphertext":
        return self * self

    # levels, rotations --------------------------------------------------------------------------
    def rescale(self) -> "Ciphertext":
        return self._wrap(self._ctx._core.rescale(self._core))

    def drop_to_level(self, level: int) -> "Ciphertext":
        return self._wrap(self._ctx._core.drop_to_level(self._core, level))

    def rotate(self, steps: int) -> "Ciphertext":
        """Slots shifted left by `steps` (np.roll(x, -steps)); needs the Galois key of `steps`."""
        return self._wrap(self._ctx._core.rotate(self._core, int(steps)))

    def rotate_many(self, steps: Iterable[int]) -> list["Ciphertext"]:
        """See Context.rotate_many."""
        return self.context.rotate_many(self, steps)

    def rotate_sum(self, steps: Iterable[int]) -> "Ciphertext":
        """See Context.rotate_sum."""
        return self.context.rotate_sum(self, steps)

    def inner_sum(self, stride: int, count: int, radix: int = 2) -> "Ciphertext":
        """See Context.inner_sum."""
        return self.context.inner_sum(self, stride, count, radix)

    def bootstrap(self, iterations: int = 1, residual_bits: int = 0) -> "Ciphertext":
        """See Context.bootstrap."""
        return self.context.bootstrap(self, iterations=iterations, residual_bits=residual_bits)

    def conjugate(self) -> "Ciphertext":
        return self._wrap(self._ctx._core.conjugate(self._core))

    def decrypt(self, secret_key, *, flooding=None) -> np.ndarray:
        return self._ctx.decrypt(self, secret_key, flooding=flooding)


class Context:
    """One CKKS parameter set with its precomputed tables, a thread pool and the evaluation keys.

    Safe to use from several Python threads at once; long operations release the GIL.
    """

    def __init__(self, params: Optional[CkksParams] = None, threads: int = 1):
        if params is None:
            params = CkksParams()
        if not isinstance(params, CkksParams):
            raise TypeError("params must be an ember.CkksParams")
        if not isinstance(threads, numbers.Integral) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self.params = params
        self._core = self._make_core(params, int(threads))
        self._bootstrapper = None
        self._boot_keys = {}  # key-set identity -> bootstrapping keys (a later keygen adds, never replaces)
        self._boot_latest = None
        self._boot_lock = threading.Lock()

    @staticmethod
    def _make_core(params: CkksParams, threads: int):
        return _ember.ContextCore(params._core, threads)

    slots = property(lambda self: self._core.slots, doc="N/2, the largest slot count")
    max_level = property(lambda self: self._core.max_level, doc="top level of the chain (bootstrapping levels included)")
    user_level = property(lambda self: self._core.user_level,
                          doc="level of fresh ciphertexts and of bootstrapping outputs (max_level without bootstrapping)")
    threads = property(lambda self: self._core.threads)

    def scale_at(self, level: int) -> float:
        return self._core.scale_at(level)

    def __repr__(self) -> str:
        return f"<ember.Context {self.params!r} threads={self.threads}>"

    def _vector(self, values, slots: int) -> np.ndarray:
        v = as_slots(values, self.slots)
        if v.shape[0] != slots:
            raise ValueError(f"vector of {v.shape[0]} values for a ciphertext of {slots} slots")
        return v

    # keys ---------------------------------------------------------------------------------------
    def keygen(self, rotations: Iterable[int] = (), conjugation: bool = False, seeded: bool = True,
               bootstrapping: bool = False) -> KeySet:
        """Secret, public, relinearization and Galois keys (for the given slot rotations and, optionally,
        conjugation). The evaluation keys are registered on this context under their key set: operations
        on a ciphertext use the keys of the keygen that encrypted it, so a second keygen adds a key set and
        never changes what existing ciphertexts compute. seeded=True keeps only a
        32-byte seed for the uniform half of each switching key when serialized (MAD key compression).
        bootstrapping=True (parameters from CkksParams.bootstrappable): also exactly the rotation keys
        bootstrapping needs, conjugation, and the sparse-secret encapsulation keys."""
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
        """The bootstrapping circuit of this context (built once: its linear transforms are encoded here)."""
        cfg = getattr(self.params, "bootstrap_config", None)
        if cfg is None:
            raise ValueError("this context cannot bootstrap: make its parameters with ember.CkksParams.bootstrappable()")
        with self._boot_lock:
            if self._bootstrapper is None:
                self._bootstrapper = _ember.BootstrapperCore(_ember.context_of(self._core), cfg)
            return self._bootstrapper

    def bootstrap(self, ct: "Ciphertext", iterations: int = 1, residual_bits: int = 0) -> "Ciphertext":
        """A fresh encryption of ct's slots (up to the bootstrapping error) at level user_level, on the
        canonical scale. Needs keygen(bootstrapping=True).

        Precision: >= 25 bits at N = 2^16 for every input whose slots have real and imaginary parts in
        [-1, 1] (the parameters' input_bound, sqrt(2) per message coefficient, covers them all). Larger
        inputs leave EvalMod's interval and come back wrong: scale them into [-1, 1] first (a larger
        input_bound in CkksParams.bootstrappable() trades precision for range).

        iterations=2: iterative bootstrapping (META-BTS): the residual ct - bootstrap(ct), scaled up by
        2**residual_bits (0: 20), is bootstrapped again and added back. Twice the time, no extra level;
        the result sits on 2**residual_bits times the canonical scale, and its precision is then limited
        by ct's own rounding error at its scale (use a larger log_scale for 40+ bits)."""
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
        kid = keys.relin.key_id
        self._boot_keys[kid] = keys
        self._boot_latest = kid

    def _boot_keys_for(self, ct: "Ciphertext"):
        """The bootstrapping keys of ct's key set (an unbound ciphertext: the latest; unbound keys: any)."""
        if not self._boot_keys:
            raise ValueError("no bootstrapping keys: call keygen(bootstrapping=True)")
        kid = ct._core.key_id or self._boot_latest
        keys = self._boot_keys.get(kid, self._boot_keys.get(0))
        if keys is None:
            raise ValueError("cannot bootstrap: no bootstrapping keys of this ciphertext's key set; call keygen(bootstrapping=True) "
                             "with the keys that encrypted it, or load_bootstrap_keys()")
        return keys

    def _latest_boot_keys(self):
        if not self._boot_keys:
            raise ValueError("no bootstrapping keys: call keygen(bootstrapping=True) or load_bootstrap_keys()")
        return self._boot_keys[self._boot_latest]

    def save_bootstrap_keys(self, directory) -> list[str]:
        """Writes the bootstrapping keys one file per key (relinearization, each Galois key, the two
        encapsulation keys), serializing one key at a time so that no second copy of the set is ever held.
        Seeded keys are written compressed. Returns the file names."""
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
        """Loads keys written by save_bootstrap_keys() one file at a time and registers them (the
        relinearization and Galois keys also as this context's evaluation keys). Bad files raise ValueError.
        max_bytes bounds each file (default: the largest switching key, or ciphertext, of this context);
        a larger file is refused before it is read."""
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
        """Rotation-key count and bytes of the bootstrapping keys (expanded, and compressed by seeds)."""
        k = self._latest_boot_keys()
        expanded, compressed = k.bytes
        return dict(rotation_keys=k.rotation_keys, key_bytes=expanded, key_bytes_compressed=compressed)

    def set_eval_keys(self, relin: Optional[SwitchingKey] = None, galois: Optional[GaloisKeys] = None):
        """Registers evaluation keys (e.g. loaded with from_bytes) used by the ciphertext operators, under their
        key set: ciphertexts of that key set use them, those of other key sets keep theirs. Raises ValueError
        for keys of another context or a relinearization and Galois key of two different key sets."""
        for k, t in ((relin, SwitchingKey), (galois, GaloisKeys)):
            if k is not None and not isinstance(k, t):
                raise TypeError(f"expected an ember.{t.__name__}, got {type(k).__name__}")
        self._core.set_eval_keys(relin._core if relin else None, galois._core if galois else None)

    # encoding / encryption ----------------------------------------------------------------------
    def encode(self, values, level: Optional[int] = None, scale: Optional[float] = None) -> Plaintext:
        v = as_slots(values, self.slots)
        level = self.user_level if level is None else int(level)
        if not 0 <= level <= self.max_level:
            raise ValueError(f"level must be in [0, {self.max_level}], got {level}")
        scale = self.scale_at(level) if scale is None else float(scale)
        return Plaintext(self, self._core.encode(v, scale, level))

    def decode(self, pt: Plaintext) -> np.ndarray:
        return self._core.decode(pt._core)

    def encrypt(self, values, key, level: Optional[int] = None) -> Ciphertext:
        """Encrypts a vector (real or complex; length a power of two up to N/2) or a Plaintext with a
        public or a secret key."""
        pt = values if isinstance(values, Plaintext) else self.encode(values, level)
        if isinstance(key, PublicKey):
            return Ciphertext(self, self._core.encrypt_pk(pt._core, key._core))
        if isinstance(key, SecretKey):
            return Ciphertext(self, self._core.encrypt_sk(pt._core, key._core))
        raise TypeError("key must be an ember.PublicKey or ember.SecretKey")

    def decrypt(self, ct: Ciphertext, secret_key, *, flooding: Optional["DecryptionFlooding"] = None) -> np.ndarray:
        """Decrypted slot values (complex128, one per slot of the ciphertext).

        flooding: add noise-flooding for this decryption (see DecryptionFlooding); without it, the
        context's policy (set_decryption_flooding) applies, if any.
        """
        if not isinstance(ct, Ciphertext):
            raise TypeError("decrypt expects an ember.Ciphertext")
        if not isinstance(secret_key, SecretKey):
            raise TypeError("decrypt needs the ember.SecretKey")
        if flooding is not None and not isinstance(flooding, DecryptionFlooding):
            raise TypeError("flooding must be an ember.DecryptionFlooding")
        return self._core.decrypt(ct._core, secret_key._core, flooding._core() if flooding else None)

    def set_decryption_flooding(self, flooding: Optional["DecryptionFlooding"]):
        """Context-wide policy: every later decrypt() floods as `flooding` says (None: switch it off).
        Turn it on whenever decrypted results are shown to anyone but the key owner (README, "Sharing
        decrypted results")."""
        if flooding is not None and not isinstance(flooding, DecryptionFlooding):
            raise TypeError("flooding must be an ember.DecryptionFlooding or None")
        self._core.set_decryption_flooding(flooding._core() if flooding else None)

    @property
    def decryption_flooding(self) -> Optional["DecryptionFlooding"]:
        f = self._core.decryption_flooding
        return None if f is None else DecryptionFlooding(f.noise_bits, f.statistical_bits, f.queries)

    def decryption_noise_bits(self, ct: Ciphertext, secret_key) -> float:
        """log2 of the largest coefficient of the raw decryption of ct (never flooded). Run your
        computation on encryptions of zero and pass the result (plus a margin) as
        DecryptionFlooding(noise_bits=...). Keep the value private: it is what flooding hides."""
        if not isinstance(ct, Ciphertext) or not isinstance(secret_key, SecretKey):
            raise TypeError("decryption_noise_bits expects an ember.Ciphertext and the ember.SecretKey")
        return self._core.decryption_noise_bits(ct._core, secret_key._core)

    # explicit operations (the operators call these) ---------------------------------------------
    def rotate_many(self, ct: Ciphertext, steps: Iterable[int]) -> list[Ciphertext]:
        """Several rotations sharing one Decomp + ModUp (hoisting): much cheaper than separate rotates."""
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot rotate_many: expected an ember.Ciphertext, got {type(ct).__name__}")
        return [Ciphertext(self, c) for c in self._core.rotate_many(ct._core, [integer_arg("rotate_many", "step", s) for s in steps])]

    def rotate_sum(self, ct: Ciphertext, steps: Iterable[int]) -> Ciphertext:
        """sum_s rotate(ct, s) over `steps` (0: ct itself) with one Decomp + ModUp and one ModDown for all of them
        (the rotations summed in the raised basis: double hoisting); needs the Galois keys of the steps. At
        N = 2^16, x plus its rotations by 1..8 took less than rotate_many of the 8 rotations alone, before any
        addition (74 against 103 ms: `ember bench rotate_sum` / `ember bench rotate_many`, README)."""
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot rotate_sum: expected an ember.Ciphertext, got {type(ct).__name__}")
        steps = [integer_arg("rotate_sum", "step", s) for s in steps]
        return Ciphertext(self, _ember.rotate_sum(_ember.context_of(self._core), ct._core, steps,
                                                  _ember.galois_keys_of(self._core, ct._core)))

    def inner_sum(self, ct: Ciphertext, stride: int, count: int, radix: int = 2) -> Ciphertext:
        """sum_{j < count} rotate(ct, j * stride) (count a power of two). radix = 2 (default): the rotate-and-add,
        log2(count) key switches one after the other. radix 2^k: log_radix(count) rounds, each adding radix - 1
        rotations of the running sum by one rotate_sum -- fewer key switches in series (for parallel hardware), more
        rotations in all: at N = 2^16 on a 2-core CPU radix 4 took as long as radix 2 and radix 8 about 13 % longer
        (`ember bench inner_sum --radix R`). Keys: ember.inner_sum_rotations(stride, count, radix)."""
        if not isinstance(ct, Ciphertext):
            raise TypeError(f"cannot inner_sum: expected an ember.Ciphertext, got {type(ct).__name__}")
        args = [integer_arg("inner_sum", n, v) for n, v in (("stride", stride), ("count", count), ("radix", radix))]
        return Ciphertext(self, _ember.inner_sum(_ember.context_of(self._core), ct._core, *args,
                                                 _ember.galois_keys_of(self._core, ct._core)))

    def multiply_sum(self, pairs: Iterable, merged: bool = True, addend: Optional[Ciphertext] = None) -> Ciphertext:
        """sum of a_i * b_i over the ciphertext pairs (a_i, b_i), relinearized and rescaled once: the tensor
        products are added before the single key switch, so k products cost one relinearization instead of k
        (an inner product of encrypted vectors, a polynomial's giant steps). Every product must land on the
        same scale and level; the result is where multiply(a_0, b_0) would land. addend: a ciphertext on the
        products' level and scale (e.g. made with multiply(..., rescale=False)), added before the rescale."""
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
        """a * b for a ciphertext or plaintext b, relinearized; rescaled unless rescale=False (a * b is
        multiply(a, b)). merged=False takes the unmerged ModDown-then-Rescale path instead of MAD's merged
        one (same result, for comparison)."""
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
