"""What the simulator counts: a Cost, the parameters it is a function of, and the MAD techniques as switches.

A Cost holds operations and main-memory bytes by kind of data; it is a function of the scheme and machine
parameters (SimParams, Machine) and of the techniques (Techniques).

Two accountings share these types:

*ember*
    Counts what Ember's kernels do (cpp/backend/cpu/cpu_backend.cpp), kernel by kernel, so that it equals the
    library's trace counters exactly.
*paper*
    Counts by the MAD paper's conventions (001, Sections 2.3 and 3; its simulator SimFHE): every NTT also
    generates its twiddles, NewLimb costs k(1 + m) products, words are stored in `word_bits` bits, and DRAM
    traffic follows the paper's cache levels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Optional

# Byte categories: ciphertext limbs read / written, switching-key limbs read, plaintext limbs read.
BYTE_KINDS = ("ct_read", "ct_write", "key_read", "pt_read")


@dataclass
class Cost:
    """Modular operations and main-memory traffic of one operation (or a sum of them).

    Costs add (``a + b``, ``a += b``) and scale by a number (``k * a``), field by field.

    Parameters
    ----------
    mod_mul : float, optional
        Modular multiplications (default 0).
    mod_add : float, optional
        Modular additions (default 0).
    ntt : float, optional
        Limb transforms (forward or inverse), counted once each (default 0).
    ct_read : float, optional
        Bytes of ciphertext limbs read from main memory (default 0).
    ct_write : float, optional
        Bytes of ciphertext limbs written to main memory (default 0).
    key_read : float, optional
        Bytes of switching-key limbs read (default 0).
    pt_read : float, optional
        Bytes of plaintext limbs read (default 0).
    """

    mod_mul: float = 0
    mod_add: float = 0
    ntt: float = 0          # limb transforms (forward or inverse), counted once each
    ct_read: float = 0      # bytes
    ct_write: float = 0
    key_read: float = 0
    pt_read: float = 0

    def __add__(self, o: "Cost") -> "Cost":
        """Return the field-by-field sum of two costs."""
        return Cost(*(getattr(self, f.name) + getattr(o, f.name) for f in fields(self)))

    def __iadd__(self, o: "Cost") -> "Cost":
        """Add another cost to this one, field by field."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(o, f.name))
        return self

    def __mul__(self, k: float) -> "Cost":
        """Return the cost with every field multiplied by `k`."""
        return Cost(*(getattr(self, f.name) * k for f in fields(self)))

    __rmul__ = __mul__

    @property
    def ops(self) -> float:
        """All modular operations, as Table 4 of 001 counts them (multiplications + additions)."""
        return self.mod_mul + self.mod_add

    @property
    def dram(self) -> float:
        """Main-memory bytes, read + written."""
        return self.ct_read + self.ct_write + self.key_read + self.pt_read

    @property
    def ai(self) -> float:
        """Arithmetic intensity in operations per byte."""
        return self.ops / self.dram if self.dram else float("inf")

    def as_dict(self) -> dict:
        """Return the cost as a dictionary: its fields plus derived figures.

        Returns
        -------
        dict
            Every field (an int when it is integral), and ``gops`` (operations / 1e9), ``mults`` (modular
            multiplications), ``dram_gb`` (bytes / 1e9) and ``ai`` (operations per byte, rounded; None without
            traffic).
        """
        d = {f.name: _num(getattr(self, f.name)) for f in fields(self)}
        d.update(gops=self.ops / 1e9, mults=_num(self.mod_mul), dram_gb=self.dram / 1e9,
                 ai=round(self.ai, 4) if self.dram else None)
        return d


def _num(x: float):
    return int(x) if float(x).is_integer() else x


# Cache levels of the paper (Section 3.1), in increasing size. What fits decides which apply.
NONE, O1, BETA, ALPHA, HUGE = 0, 1, 2, 3, 4
LEVEL_NAMES = {NONE: "none", O1: "O(1)", BETA: "O(beta)", ALPHA: "O(alpha)", HUGE: "keys"}

TECHNIQUES = ("o1", "beta", "alpha", "reorder", "merge", "hoist", "compress")
TECH_HELP = {
    "o1": "cache O(1) limbs: several sub-operations per limb while it is on chip (Fig. 1)",
    "beta": "cache O(beta) limbs: one limb of every digit, digits read once for all rotations",
    "alpha": "cache O(alpha) limbs: base conversion without the slot-wise round trip through DRAM",
    "reorder": "limb re-ordering: compute the dropped limbs first, finish ModDown as limbs appear",
    "merge": "ModDown merged with Rescale in Mult (PModUp, Algorithm 5)",
    "hoist": "ModDown hoisting in the linear transforms (Fig. 5 c), with ModUp hoisting",
    "compress": "key compression: the uniform half of every switching key comes from a PRNG seed",
}


@dataclass(frozen=True)
class Techniques:
    """The MAD techniques as switches.

    Caching ones apply only when the cache holds what they need. ``TECH_HELP`` describes each.

    Parameters
    ----------
    o1 : bool, optional
        Cache O(1) limbs: several sub-operations per limb while it is on chip (default False).
    beta : bool, optional
        Cache O(beta) limbs: one limb of every digit (default False).
    alpha : bool, optional
        Cache O(alpha) limbs: base conversion on chip (default False).
    reorder : bool, optional
        Limb re-ordering in ModDown (default False).
    merge : bool, optional
        ModDown merged with Rescale in Mult (default False).
    hoist : bool, optional
        ModDown (and ModUp) hoisting in the linear transforms (default False).
    compress : bool, optional
        Key compression: half of every switching key from a PRNG seed (default False).
    """

    o1: bool = False
    beta: bool = False
    alpha: bool = False
    reorder: bool = False
    merge: bool = False
    hoist: bool = False
    compress: bool = False

    @classmethod
    def parse(cls, spec: str) -> "Techniques":
        """Parse a technique list.

        Parameters
        ----------
        spec : str
            'none', 'all', 'caching' (o1, beta, alpha, reorder), 'fit' (same as caching: what fits is used) or a
            comma list of names from TECHNIQUES and these groups, applied left to right (a leading '-' removes
            one: 'all,-compress').

        Returns
        -------
        Techniques
            The switches.

        Raises
        ------
        ValueError
            If a name is unknown.
        """
        on: set[str] = set()
        for tok in (t.strip() for t in spec.split(",")):
            if not tok or tok == "none":
                continue
            neg = tok.startswith("-")
            name = tok[1:] if neg else tok
            group = {"all": set(TECHNIQUES), "caching": {"o1", "beta", "alpha", "reorder"},
                     "fit": {"o1", "beta", "alpha", "reorder"}}.get(name, {name})
            bad = group - set(TECHNIQUES)
            if bad:
                raise ValueError(f"unknown technique {sorted(bad)[0]!r}; choose from {', '.join(TECHNIQUES)}, "
                                 "or none / all / caching")
            on = on - group if neg else on | group
        return cls(**{t: t in on for t in TECHNIQUES})

    def names(self) -> list[str]:
        """Return the names of the techniques switched on, in TECHNIQUES order.

        Returns
        -------
        list of str
            The names.
        """
        return [t for t in TECHNIQUES if getattr(self, t)]

    def label(self) -> str:
        """Return the techniques switched on as a comma list (``"none"`` when there is none).

        Returns
        -------
        str
            What :meth:`parse` reads back.
        """
        return ",".join(self.names()) or "none"


ALL = Techniques.parse("all")
BASELINE = Techniques()


@dataclass(frozen=True)
class Machine:
    """The on-chip memory the traffic model assumes.

    Parameters
    ----------
    cache_bytes : float, optional
        Its size in bytes (default 0: nothing is reused between kernels).
    """

    cache_bytes: float = 0

    @classmethod
    def mb(cls, cache_mb: float) -> "Machine":
        """Make a machine of `cache_mb` MiB of on-chip memory.

        --cache-mb is in MiB (2^20 bytes): the paper's '1 MB limb' at N = 2^17, 64-bit words is 2^20 bytes.

        Parameters
        ----------
        cache_mb : float
            The on-chip memory in MiB.

        Returns
        -------
        Machine
            ``Machine(cache_bytes=cache_mb * 2**20)``.
        """
        return cls(cache_bytes=cache_mb * 2 ** 20)


@dataclass(frozen=True)
class SimParams:
    """A CKKS parameter set as the simulator sees it.

    Parameters
    ----------
    log_n : int, optional
        Ring degree N = 2^log_n, in [3, 20] (default 17).
    limbs : int, optional
        Ciphertext limbs at the top: L + 1 primes of Q for ember, the paper's l; at least 2 (default 35).
    dnum : int, optional
        Digits of the switching key, in [1, limbs] (default 3).
    word_bits : float, optional
        Bits per stored residue, in [8, 64]: 64 in Ember; the paper packs limbs of log q bits (default 64).
    prime_bits : int, optional
        Bits of each prime: the security bound and log Q1 of Eq. 3 depend on it (default 50).
    fft_iters : int, optional
        Linear transforms of CoeffToSlot (and of SlotToCoeff), in [1, log_n - 1] (default 3).
    poly_degree : int, optional
        Degree of the modular-reduction polynomial of EvalMod (default 63).
    double_angle : int, optional
        Its squarings (double-angle steps; default 2).
    special : int, optional
        Special primes K (ember accounting); None (the default) computes them like CkksParams does.
    level_limbs : int, optional
        Limbs of the operand, in [1, limbs], to cost an operation lower in the chain; None (the default): limbs.
    first_mod_bits : int, optional
        Bits of the first prime of Q (default 60): the ember accounting's special primes depend on it.

    Raises
    ------
    ValueError
        If a field is out of its range.
    """

    log_n: int = 17
    limbs: int = 35
    dnum: int = 3
    word_bits: float = 64
    prime_bits: int = 50
    fft_iters: int = 3
    poly_degree: int = 63
    double_angle: int = 2
    special: Optional[int] = None
    level_limbs: Optional[int] = None
    first_mod_bits: int = 60

    def __post_init__(self):
        """Check every field's range."""
        if not 3 <= self.log_n <= 20:
            raise ValueError(f"log_n must be in [3, 20], got {self.log_n}")
        if self.limbs < 2:
            raise ValueError(f"limbs must be >= 2, got {self.limbs}")
        if not 1 <= self.dnum <= self.limbs:
            raise ValueError(f"dnum must be in [1, limbs = {self.limbs}], got {self.dnum}")
        if not 8 <= self.word_bits <= 64:
            raise ValueError(f"word_bits must be in [8, 64], got {self.word_bits}")
        if self.fft_iters < 1 or self.fft_iters > self.log_n - 1:
            raise ValueError(f"fft_iters must be in [1, log_n - 1 = {self.log_n - 1}], got {self.fft_iters}")
        if self.level_limbs is not None and not 1 <= self.level_limbs <= self.limbs:
            raise ValueError(f"level_limbs must be in [1, limbs = {self.limbs}], got {self.level_limbs}")

    @property
    def n(self) -> int:
        """The ring degree N = 2^log_n."""
        return 1 << self.log_n

    @property
    def slots(self) -> int:
        """The slots, N / 2."""
        return self.n // 2

    @property
    def word_bytes(self) -> float:
        """Bytes per stored residue, word_bits / 8."""
        return self.word_bits / 8

    @property
    def limb_bytes(self) -> float:
        """Bytes of one limb, N words."""
        return self.n * self.word_bytes

    @property
    def ell(self) -> int:
        """Limbs of the operand."""
        return self.level_limbs or self.limbs

    @property
    def alpha(self) -> int:
        """Primes per digit, ceil(limbs / dnum)."""
        return -(-self.limbs // self.dnum)

    def with_(self, **kw) -> "SimParams":
        """Return a copy with some fields replaced (checked again).

        Parameters
        ----------
        **kw
            The fields to replace, by name.

        Returns
        -------
        SimParams
            The copy.
        """
        return replace(self, **kw)

    def as_dict(self) -> dict:
        """Return the parameters records show.

        Returns
        -------
        dict
            log_n, limbs, dnum, word_bits, prime_bits, fft_iters and level_limbs (the operand's limbs,
            :attr:`ell`).
        """
        return dict(log_n=self.log_n, limbs=self.limbs, dnum=self.dnum, word_bits=self.word_bits,
                    prime_bits=self.prime_bits, fft_iters=self.fft_iters, level_limbs=self.ell)


def ceil_log2(x: int) -> int:
    """Return ceil(log2(x))."""
    return int(math.ceil(math.log2(x)))


@dataclass
class Result:
    """One simulated operation: its cost, what produced it, and the stages it splits into.

    Parameters
    ----------
    op : str
        The operation (one of ``OPS``).
    accounting : str
        ``"paper"`` or ``"ember"``.
    params : SimParams
        The parameter set.
    cache_bytes : float
        The on-chip memory assumed, in bytes.
    techniques : Techniques
        The techniques (the paper accounting: those that applied).
    cost : Cost
        The operation's cost.
    cache_level : str, optional
        The cache level that applied (paper), or the limbs the cache holds (ember; default ``""``).
    stages : dict, optional
        ``{stage name: Cost}``: the sub-operations the cost splits into (default empty).
    kernels : dict, optional
        The ember accounting's per-kernel counts (default empty).
    extra : dict, optional
        More facts for the record: times on a device, bootstrapping's fresh limbs and throughput, ... (default
        empty).
    """

    op: str
    accounting: str
    params: SimParams
    cache_bytes: float
    techniques: Techniques
    cost: Cost
    cache_level: str = ""
    stages: dict = field(default_factory=dict)
    kernels: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def record(self) -> dict:
        """Return the flat JSON record the CLI prints.

        Returns
        -------
        dict
            op, accounting, gops, mults, adds, ntt, dram_gb and its parts by kind, ai, the parameters
            (:meth:`SimParams.as_dict`), cache_mb, cache_level, techniques, and everything in `extra`.
        """
        r = dict(op=self.op, accounting=self.accounting)
        c = self.cost.as_dict()
        r.update(gops=round(c["gops"], 6), mults=c["mults"], adds=c["mod_add"], ntt=c["ntt"],
                 dram_gb=round(c["dram_gb"], 6), ct_read_gb=round(self.cost.ct_read / 1e9, 6),
                 ct_write_gb=round(self.cost.ct_write / 1e9, 6), key_read_gb=round(self.cost.key_read / 1e9, 6),
                 pt_read_gb=round(self.cost.pt_read / 1e9, 6), ai=c["ai"])
        r.update(self.params.as_dict())
        r.update(cache_mb=round(self.cache_bytes / 2 ** 20, 3), cache_level=self.cache_level,
                 techniques=self.techniques.label())
        r.update(self.extra)
        return r
