"""What the simulator counts: a Cost (operations and main-memory bytes by kind of data), the scheme and
machine parameters it is a function of, and the MAD techniques as switches.

Two accountings share these types:
  *ember*  counts what Ember's kernels do (cpp/backend/cpu/cpu_backend.cpp), kernel by kernel, so that it
           equals the library's trace counters exactly;
  *paper*  counts by the MAD paper's conventions (001, Sections 2.3 and 3; its simulator SimFHE):
           every NTT also generates its twiddles, NewLimb costs k(1 + m) products, words are stored in
           `word_bits` bits, and DRAM traffic follows the paper's cache levels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Optional

# Byte categories: ciphertext limbs read / written, switching-key limbs read, plaintext limbs read.
BYTE_KINDS = ("ct_read", "ct_write", "key_read", "pt_read")


@dataclass
class Cost:
    """Modular operations and main-memory traffic of one operation (or a sum of them)."""
    mod_mul: float = 0
    mod_add: float = 0
    ntt: float = 0          # limb transforms (forward or inverse), counted once each
    ct_read: float = 0      # bytes
    ct_write: float = 0
    key_read: float = 0
    pt_read: float = 0

    def __add__(self, o: "Cost") -> "Cost":
        return Cost(*(getattr(self, f.name) + getattr(o, f.name) for f in fields(self)))

    def __iadd__(self, o: "Cost") -> "Cost":
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(o, f.name))
        return self

    def __mul__(self, k: float) -> "Cost":
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
    """The MAD techniques as switches. Caching ones apply only when the cache holds what they need."""
    o1: bool = False
    beta: bool = False
    alpha: bool = False
    reorder: bool = False
    merge: bool = False
    hoist: bool = False
    compress: bool = False

    @classmethod
    def parse(cls, spec: str) -> "Techniques":
        """'none', 'all', 'caching' (o1, beta, alpha, reorder), 'fit' (same as caching: what fits is used)
        or a comma list of names from TECHNIQUES (a leading '-' removes one: 'all,-compress')."""
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
        return [t for t in TECHNIQUES if getattr(self, t)]

    def label(self) -> str:
        return ",".join(self.names()) or "none"


ALL = Techniques.parse("all")
BASELINE = Techniques()


@dataclass(frozen=True)
class Machine:
    """The on-chip memory the traffic model assumes (bytes). 0: nothing is reused between kernels."""
    cache_bytes: float = 0

    @classmethod
    def mb(cls, cache_mb: float) -> "Machine":
        """--cache-mb is in MiB (2^20 bytes): the paper's '1 MB limb' at N = 2^17, 64-bit words is 2^20 bytes."""
        return cls(cache_bytes=cache_mb * 2 ** 20)


@dataclass(frozen=True)
class SimParams:
    """A CKKS parameter set as the simulator sees it.

    log_n: ring degree N = 2^log_n. limbs: ciphertext limbs at the top (L + 1 primes of Q for ember,
    the paper's l). dnum: digits of the switching key. word_bits: bits per stored residue (64 in Ember;
    the paper packs limbs of log q bits). prime_bits: bits of each prime (the security bound and
    log Q1 of Eq. 3 depend on it). fft_iters: linear transforms of CoeffToSlot (and of SlotToCoeff).
    poly_degree, double_angle: the modular-reduction polynomial of EvalMod and its squarings.
    special: special primes K (ember accounting); None computes them like CkksParams does.
    level_limbs: limbs of the operand (default: limbs), to cost an operation lower in the chain.
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
        return 1 << self.log_n

    @property
    def slots(self) -> int:
        return self.n // 2

    @property
    def word_bytes(self) -> float:
        return self.word_bits / 8

    @property
    def limb_bytes(self) -> float:
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
        return replace(self, **kw)

    def as_dict(self) -> dict:
        return dict(log_n=self.log_n, limbs=self.limbs, dnum=self.dnum, word_bits=self.word_bits,
                    prime_bits=self.prime_bits, fft_iters=self.fft_iters, level_limbs=self.ell)


def ceil_log2(x: int) -> int:
    return int(math.ceil(math.log2(x)))


@dataclass
class Result:
    """One simulated operation: its cost, what produced it, and the stages it splits into."""
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
        """The flat JSON record the CLI prints: op, gops, mults, dram_gb and the parameters."""
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
