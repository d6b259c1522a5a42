"""The *ember* accounting: what Ember's kernels do, kernel call by kernel call.

Each function below follows one path of the library (cpp/ckks/evaluator.cpp, cpp/ring/key_switch.cpp) and
issues the backend kernels it calls, with the counts cpp/backend/cpu/cpu_backend.cpp reports for them:
  ntt_forward / ntt_inverse  per limb: (N/2) log N products and N log N additions; the inverse adds the N^-1
                             scaling (N/2 products merged into the last stage on every path: math/ntt.hpp,
                             ntt_mod_mul_count; builds before the scalar path merged it did a pass of N);
  base_convert[_centered]    k inputs to m outputs: N k + N k m (+ N m) products, N (k - 1) m (+ N m) additions;
  dot                        terms x limbs products, (terms - 1) x limbs additions;
  mul, mul_add, mul_const[_add], sub_mul_const, add, sub, neg, add_const, copy, automorph: one per element.
Bytes are the limbs each kernel reads and writes (8-byte words), so with no cache the accounting's bytes equal
the trace's bytes_read / bytes_written. The same access stream, limb by limb, drives a managed on-chip
memory of the given size (least recently used limbs leave first; dirty limbs of live tensors are written
back, dead temporaries are dropped): that is the ember accounting's DRAM traffic for a cache size.

Copies the library makes outside the backend (the Poly copy in ModUp, the untouched half of a plaintext
addition, Ciphertext copies in the linear transform's plain path) and the zeroing of a new polynomial (PModUp's
P limbs) are not traced; they appear here as the pseudo-kernels "memcpy" and "memset" so that DRAM traffic is
complete, and are left out of the comparison with the trace.

The linear transform (cpp/circuits/lintrans.cpp) is modelled exactly for both of its paths, given the diagonal
index set, the baby-step count n1, the slots and the level: lintrans() below; bootstrapping applies the
library's DFT factors (cpp/circuits/dft.cpp, index sets from dft_indices()) through the same function.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from ..params import digit_partition  # noqa: F401  (re-exported: ember.sim.kernels.digit_partition)
from .cost import Cost, SimParams, Techniques

WORD = 8  # Ember stores every residue in a 64-bit word

UNTRACED = ("memcpy", "memset", "mod_raise")


def special_primes(q_count: int, dnum: int, log_scale: int = 50, first_mod_bits: int = 60, sp_bits: int = 60) -> int:
    """K as cpp/ckks/params.cpp picks it: the fewest sp_bits primes with log P >= largest digit + 16 bits.
    Digits are cut from the top, so the largest one holds alpha scale primes (or q_0 when dnum = q_count)."""
    bits = [first_mod_bits] + [log_scale] * (q_count - 1)
    best = max((float(sum(bits[first:last])) for first, last in digit_partition(q_count, dnum)), default=0.0)
    k = math.ceil((best + 16) / (sp_bits - 0.5))
    while k * (sp_bits - 0.01) < best + 16:
        k += 1
    return k


@dataclass(eq=False)
class Tensor:
    """A polynomial (or scratch limbs): `limbs` limbs; kind ct / key / pt / tmp decides its byte category."""
    name: str
    limbs: int
    kind: str = "tmp"
    q: int = 0          # Q limbs (the first q limbs); the rest are P limbs
    dead: bool = False
    base: Optional["Tensor"] = None  # a view (fewer limbs) of this tensor's storage

    @property
    def p(self) -> int:
        return self.limbs - self.q

    @property
    def root(self) -> "Tensor":
        return self.base.root if self.base is not None else self

    def view(self, q: int) -> "Tensor":
        return Tensor(self.name, q, self.kind, q, base=self.root)


class LimbCache:
    """A managed on-chip memory of `capacity` limbs, least recently used out first.

    Reads of absent limbs and write-backs of evicted dirty limbs are DRAM traffic. capacity 0 is
    write-through: every access is DRAM traffic (the kernels' own I/O)."""

    def __init__(self, capacity: int):
        self.capacity = max(0, int(capacity))
        self.lines: "OrderedDict[tuple[int, int], bool]" = OrderedDict()
        self.owner: dict[int, Tensor] = {}
        self.by_tensor: dict[int, set[int]] = {}

    def _evict(self, cost: Cost, limb_bytes: int):
        while len(self.lines) > self.capacity:
            (tid, i), dirty = self.lines.popitem(last=False)
            self.by_tensor[tid].discard(i)
            if dirty and not self.owner[tid].dead:
                cost.ct_write += limb_bytes

    def read(self, t: Tensor, i: int, cost: Cost, limb_bytes: int):
        t = t.root
        key = (id(t), i)
        if key in self.lines:
            self.lines.move_to_end(key)
            return
        if t.kind == "key":
            cost.key_read += limb_bytes
        elif t.kind == "pt":
            cost.pt_read += limb_bytes
        else:
            cost.ct_read += limb_bytes
        if self.capacity:
            self.lines[key] = False
            self.owner[id(t)] = t
            self.by_tensor.setdefault(id(t), set()).add(i)
            self._evict(cost, limb_bytes)

    def write(self, t: Tensor, i: int, cost: Cost, limb_bytes: int):
        if not self.capacity:
            cost.ct_write += limb_bytes
            return
        t = t.root
        key = (id(t), i)
        self.lines[key] = True
        self.lines.move_to_end(key)
        self.owner[id(t)] = t
        self.by_tensor.setdefault(id(t), set()).add(i)
        self._evict(cost, limb_bytes)

    def free(self, t: Tensor):
        t = t.root
        t.dead = True
        for i in self.by_tensor.pop(id(t), ()):
            self.lines.pop((id(t), i), None)

    def flush(self, cost: Cost, limb_bytes: int):
        """End of the operation: live results still on chip go back to DRAM."""
        for (tid, _), dirty in self.lines.items():
            if dirty and not self.owner[tid].dead:
                cost.ct_write += limb_bytes
        self.lines.clear()
        self.by_tensor.clear()


@dataclass
class Ring:
    """The shape of an Ember parameter set: N, the Q chain length, K special primes, dnum."""
    log_n: int
    q_count: int
    k: int
    dnum: int
    inverse_scaling_merged: bool = True  # N^-1 merged into the inverse NTT's last stage (every path today)

    @classmethod
    def from_sim(cls, p: SimParams, merged: Optional[bool] = None) -> "Ring":
        """K from p.special, else from the library's own prime selection when it is importable, else from
        special_primes() (which assumes primes of exactly log_scale bits: it can be one short of the
        library when the largest digit plus 16 bits lands on a multiple of 59.5 bits)."""
        k = p.special
        if k is None:
            k = _library_special_primes(p, p.prime_bits)
        if k is None:
            k = special_primes(p.limbs, p.dnum, p.prime_bits, p.first_mod_bits)
        return cls(p.log_n, p.limbs, k, p.dnum, _vector_ntt() if merged is None else merged)

    @classmethod
    def from_params(cls, params, merged: Optional[bool] = None) -> "Ring":
        """From an ember.CkksParams: the exact chain and special primes the library uses."""
        return cls(params.log_n, len(params.q_primes), len(params.p_primes), params.dnum,
                   _vector_ntt() if merged is None else merged)

    @property
    def n(self) -> int:
        return 1 << self.log_n


def _library_special_primes(p: SimParams, log_scale: int) -> Optional[int]:
    if p.log_n > 17 or not 20 <= log_scale <= 60 or not log_scale <= p.first_mod_bits <= 61:
        return None
    try:
        from ..params import CkksParams
        return len(CkksParams(log_n=p.log_n, levels=p.limbs - 1, log_scale=log_scale, first_mod_bits=p.first_mod_bits,
                              dnum=p.dnum, insecure=True).p_primes)
    except Exception:  # noqa: BLE001 - no compiled library, or a set it refuses: use the formula
        return None


def _vector_ntt() -> bool:
    """Whether the inverse NTT merges N^-1 into its last stage: every path of this library does (the scalar one too,
    since the every-CPU work of issue 30); kept as a function so that accountings of older builds can say False."""
    return True


@dataclass
class Ct:
    c0: Tensor
    c1: Tensor

    @property
    def q(self) -> int:
        return self.c0.q


@dataclass
class EmberModel:
    """Issues Ember's kernels for an operation; `counts` is comparable with ember.trace() counts."""
    ring: Ring
    cache_limbs: int = 0
    key_compression: bool = False
    merge: bool = True          # Mult takes the merged ModDown / Rescale path (the library's default)
    limb_fusion: bool = True    # ModUp's Decomp + iNTT per limb in one pass (ember.set_limb_fusion, default on)
    counts: dict = field(default_factory=dict)
    cost: Cost = field(default_factory=Cost)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.cache = LimbCache(self.cache_limbs)
        self.limb_bytes = self.ring.n * WORD
        self._keys: dict[object, tuple[list[Tensor], list[Tensor]]] = {}

    # ---- tensors --------------------------------------------------------------------------------
    def ciphertext(self, q: int, name="ct") -> Ct:
        if not 1 <= q <= self.ring.q_count:
            raise ValueError(f"ciphertext limbs must be in [1, {self.ring.q_count}], got {q}")
        return Ct(Tensor(name + ".c0", q, "ct", q), Tensor(name + ".c1", q, "ct", q))

    def plaintext(self, q: int, name="pt") -> Tensor:
        return Tensor(name, q, "pt", q)

    def tmp(self, q: int, p: int = 0, name="tmp") -> Tensor:
        return Tensor(name, q + p, "tmp", q)

    def key(self, which) -> tuple[list[Tensor], list[Tensor]]:
        """(b, a) digit polynomials over Q U P of a switching key (one per key digit)."""
        if which not in self._keys:
            r = self.ring
            digits = len(digit_partition(r.q_count, r.dnum))
            mk = lambda h, j: Tensor(f"key{which}.{h}{j}", r.q_count + r.k, "key", r.q_count)  # noqa: E731
            self._keys[which] = ([mk("b", j) for j in range(digits)], [mk("a", j) for j in range(digits)])
        return self._keys[which]

    def free(self, *ts: Tensor):
        for t in ts:
            self.cache.free(t)

    def free_ct(self, *cts: "Ct"):
        """Temporaries that are dead (inputs of the operation stay)."""
        for c in cts:
            for t in (c.c0, c.c1):
                if t.root.kind == "tmp":
                    self.cache.free(t)

    # ---- kernels ------------------------------------------------------------------------------------
    def _count(self, name, mod_mul=0, mod_add=0, ntt=0, reads=0, writes=0):
        c = self.counts.setdefault(name, dict(calls=0, mod_mul=0, mod_add=0, ntt=0, bytes_read=0, bytes_written=0))
        c["calls"] += 1
        c["mod_mul"] += mod_mul
        c["mod_add"] += mod_add
        c["ntt"] += ntt
        c["bytes_read"] += reads * self.limb_bytes
        c["bytes_written"] += writes * self.limb_bytes
        self.cost.mod_mul += mod_mul
        self.cost.mod_add += mod_add
        self.cost.ntt += ntt

    def _r(self, t: Tensor, i: int):
        self.cache.read(t, i, self.cost, self.limb_bytes)

    def _w(self, t: Tensor, i: int):
        self.cache.write(t, i, self.cost, self.limb_bytes)

    def _elementwise(self, name, out: Tensor, out_idx, ins: list[tuple[Tensor, list[int]]], mul=0, add=0):
        """A limb-parallel kernel: for each output limb, read the inputs' limbs then write it."""
        n = self.ring.n
        for j, i in enumerate(out_idx):
            for t, idx in ins:
                self._r(t, idx[j])
            self._w(out, i)
        m = len(out_idx)
        self._count(name, mul * n * m, add * n * m, 0, len(ins) * m, m)

    def ntt(self, t: Tensor, idx, inverse: bool, src: Optional[Tensor] = None):
        """NTT of t's limbs idx in place, or out of place from src's same limbs (Backend::ntt_inverse_from:
        the copy fused, each limb read from src and written to t once)."""
        n, lg = self.ring.n, self.ring.log_n
        idx = list(idx)
        for i in idx:
            self._r(src if src is not None else t, i)
            self._w(t, i)
        per = n // 2 * lg + ((n // 2 if self.ring.inverse_scaling_merged else n) if inverse else 0)
        self._count("ntt_inverse" if inverse else "ntt_forward", per * len(idx), n * lg * len(idx), len(idx),
                    len(idx), len(idx))

    def copy(self, out: Tensor, out_idx, a: Tensor, a_idx):
        self._elementwise("copy", out, list(out_idx), [(a, list(a_idx))])

    def memcpy(self, out: Tensor, a: Tensor):
        """A whole-polynomial copy outside the backend (not traced by the library)."""
        self._elementwise("memcpy", out, list(range(a.limbs)), [(a, list(range(a.limbs)))])

    def memset(self, out: Tensor):
        """Zeroing a new polynomial (Poly's constructor, outside the backend; not traced)."""
        self._elementwise("memset", out, list(range(out.limbs)), [])

    def add(self, out, a, b, name="add"):
        r = list(range(a.limbs))
        self._elementwise(name, out, r, [(a, r), (b, r)], add=1)

    def mul(self, out, a, b):
        r = list(range(a.limbs))
        self._elementwise("mul", out, r, [(a, r), (b, r)], mul=1)

    def mul_add(self, acc, a, b):
        r = list(range(a.limbs))
        self._elementwise("mul_add", acc, r, [(a, r), (b, r), (acc, r)], mul=1, add=1)

    def mul_const(self, out, a, q: int, accumulate=False):
        r = list(range(q))
        ins = [(a, r)] + ([(out, r)] if accumulate else [])
        self._elementwise("mul_const_add" if accumulate else "mul_const", out, r, ins, mul=1, add=int(accumulate))

    def sub_mul_const(self, out, a, q: int):
        r = list(range(q))
        self._elementwise("sub_mul_const", out, r, [(a, r), (out, r)], mul=1, add=1)

    def permute(self, out, a):
        r = list(range(a.limbs))
        self._elementwise("automorph", out, r, [(a, r)])

    def dot(self, out: Tensor, digits: list[Tensor], keys: list[Tensor], q: int, automorph=False):
        """out = sum_t digits[t] * keys[t] over Q_l U P; key limbs are Q limbs 0..q-1 and all P limbs."""
        n, terms = self.ring.n, len(digits)
        for i in range(out.limbs):
            ki = i if i < q else self.ring.q_count + (i - q)
            for d, k in zip(digits, keys):
                self._r(d, i)
                self._r(k, ki)
            self._w(out, i)
        m = out.limbs
        self._count("dot_automorph" if automorph else "dot", terms * n * m, (terms - 1) * n * m, 0, 2 * terms * m, m)

    def base_convert(self, src: Tensor, src_idx, dst: Tensor, dst_idx, centered: bool):
        """NewLimb (Eq. 1, 001): slot-wise, every input limb is read before the outputs are written."""
        n = self.ring.n
        src_idx, dst_idx = list(src_idx), list(dst_idx)
        k, m = len(src_idx), len(dst_idx)
        for i in src_idx:
            self._r(src, i)
        for i in dst_idx:
            self._w(dst, i)
        mul = n * k + n * k * m + (n * m if centered else 0)
        add = n * (k - 1) * m + (n * m if centered else 0)
        self._count("base_convert_centered" if centered else "base_convert", mul, add, 0, k, m)

    # ---- ring layer: key switching (key_switch.cpp) ----------------------------------------------
    def mod_up_digits(self, c: Tensor) -> list[Tensor]:
        """Decomp + ModUp: every limb to coefficient form once; per digit, copy its own limbs, NewLimb for the
        others over Q_l U P, NTT of the new limbs."""
        ql, k = c.q, self.ring.k
        cc = self.tmp(ql, name="modup.coeff")
        if self.limb_fusion:  # the library's default: each limb copied and transformed in one pass
            self.ntt(cc, range(ql), inverse=True, src=c)
        else:
            self.memcpy(cc, c)  # Poly cc(c), then the iNTT in place
            self.ntt(cc, range(ql), inverse=True)
        out = []
        for first, last_full in digit_partition(self.ring.q_count, self.ring.dnum):
            last = min(last_full, ql)
            if first >= last:
                continue
            d = self.tmp(ql, k, name="digit")
            own = list(range(first, last))
            self.copy(d, own, c, own)
            others = [i for i in range(ql + k) if not first <= i < last]
            self.base_convert(cc, own, d, others, centered=False)
            self.ntt(d, others, inverse=False)
            out.append(d)
        self.free(cc)
        return out

    def ksk_inner_product(self, digits: list[Tensor], key) -> tuple[Tensor, Tensor]:
        b, a = self.key(key)
        ql, k = digits[0].q, self.ring.k
        off = len(b) - len(digits)
        u, v = self.tmp(ql, k, "u"), self.tmp(ql, k, "v")
        self.dot(u, digits, b[off:], ql)
        self.dot(v, digits, a[off:], ql)
        return u, v

    def divide_by_dropped(self, x: Tensor, drop_q: int) -> Tensor:
        """ModDown (drop_q = 0), ModDown merged with Rescale (drop_q = 1 over QP), Rescale (drop_q = 1 over Q)."""
        kept = x.q - drop_q
        dropped = list(range(kept, x.limbs))
        d = self.tmp(len(dropped), name="dropped")
        self.copy(d, range(len(dropped)), x, dropped)
        self.ntt(d, range(len(dropped)), inverse=True)
        out = self.tmp(kept, name="moddown")
        self.base_convert(d, range(len(dropped)), out, range(kept), centered=True)
        self.ntt(out, range(kept), inverse=False)
        self.sub_mul_const(out, x, kept)
        self.free(d)
        return out

    def p_mod_up(self, x: Tensor) -> Tensor:
        """x times P over Q_l U P (PModUp): a zeroed polynomial over QP, mul_const on its Q limbs."""
        out = self.tmp(x.q, self.ring.k, name="pmodup")
        self.memset(out)
        self.mul_const(out, x, x.q)
        return out

    def add_p_mod_up(self, acc: Tensor, x: Tensor):
        """acc += P x on the Q limbs of acc (over QP)."""
        self.mul_const(acc, x, x.q, accumulate=True)

    def rotate_raised(self, c0: Tensor, digits: list[Tensor], key) -> tuple[Tensor, Tensor]:
        """P rot(c0, c1) over Q_l U P from the digits of c1 (lintrans.cpp, rotate_raised): the inner product,
        P c0 added to its first half, both halves permuted over QP; no ModDown."""
        u, v = self.ksk_inner_product(digits, key)
        self.add_p_mod_up(u, c0)
        r0, r1 = self.tmp(u.q, u.p, name="rr.c0"), self.tmp(v.q, v.p, name="rr.c1")
        self.permute(r0, u)
        self.permute(r1, v)
        self.free(u, v)
        return r0, r1

    # ---- CKKS evaluator (evaluator.cpp) -------------------------------------------------------------
    def add_ct(self, a: Ct, b: Ct, name="add") -> Ct:
        r = Ct(self.tmp(a.q, name="sum.c0"), self.tmp(a.q, name="sum.c1"))
        self.add(r.c0, a.c0, b.c0, name)
        self.add(r.c1, a.c1, b.c1, name)
        return r

    def add_plain(self, a: Ct, pt: Tensor) -> Ct:
        r = Ct(self.tmp(a.q, name="ptsum.c0"), self.tmp(a.q, name="ptsum.c1"))
        self.add(r.c0, a.c0, pt)
        self.memcpy(r.c1, a.c1)  # a.c1 = a0.c1
        return r

    def copy_ct(self, a: Ct) -> Ct:
        """A Ciphertext copy made outside the backend (a returned or selected copy; not traced)."""
        r = Ct(self.tmp(a.q, name="copy.c0"), self.tmp(a.q, name="copy.c1"))
        self.memcpy(r.c0, a.c0)
        self.memcpy(r.c1, a.c1)
        return r

    def mul_plain(self, a: Ct, pt: Tensor) -> Ct:
        r = Ct(self.tmp(a.q, name="ptprod.c0"), self.tmp(a.q, name="ptprod.c1"))
        self.mul(r.c0, a.c0, pt)
        self.mul(r.c1, a.c1, pt)
        return r

    def mul_const_ct(self, a: Ct) -> Ct:
        """Multiplication by a real constant (mul_const kernels), before its Rescale."""
        r = Ct(self.tmp(a.q, name="cprod.c0"), self.tmp(a.q, name="cprod.c1"))
        self.mul_const(r.c0, a.c0, a.q)
        self.mul_const(r.c1, a.c1, a.q)
        return r

    def add_const_ct(self, a: Ct) -> Ct:
        r = Ct(self.tmp(a.q, name="csum.c0"), self.tmp(a.q, name="csum.c1"))
        self._elementwise("add_const", r.c0, list(range(a.q)), [(a.c0, list(range(a.q)))], add=1)
        self.memcpy(r.c1, a.c1)  # a.c1 = a0.c1
        return r

    def rescale(self, a: Ct) -> Ct:
        return Ct(self.divide_by_dropped(a.c0, 1), self.divide_by_dropped(a.c1, 1))

    def tensor(self, a: Ct, b: Ct):
        """(d0, d1, d2) of the tensor product of two ciphertexts."""
        d0, d1 = self.tensor_d01(a, b)
        return d0, d1, self.tensor_d2(a, b)

    def tensor_d01(self, a: Ct, b: Ct):
        """d0 = c0 c0' and d1 = c0 c1' + c1 c0' (the terms relinearization does not decompose)."""
        d0, d1 = (self.tmp(a.q, name=f"d{i}") for i in range(2))
        self.mul(d0, a.c0, b.c0)
        self.mul(d1, a.c0, b.c1)
        self.mul_add(d1, a.c1, b.c0)
        return d0, d1

    def tensor_d2(self, a: Ct, b: Ct):
        """d2 = c1 c1' (the term relinearization decomposes)."""
        d2 = self.tmp(a.q, name="d2")
        self.mul(d2, a.c1, b.c1)
        return d2

    def mul_ct(self, a: Ct, b: Ct, merged: Optional[bool] = None) -> Ct:
        """Ciphertext product, relinearized and rescaled; merged: MAD's single ModDown by P q_l."""
        return self.mul_sum_ct([(a, b)], merged)

    def mul_sum_ct(self, pairs: list, merged: Optional[bool] = None, addend: Optional[Ct] = None) -> Ct:
        """Evaluator::mul_sum: the tensors of every pair summed (and the addend, when given), then one
        relinearization and one rescale (mul_ct is the one-pair case)."""
        merged = self.merge if merged is None else merged
        a, b = pairs[0]
        if a.q < 2:
            raise ValueError("cannot multiply: no level left to rescale into")
        d0, d1, d2 = self.tensor(a, b)
        for x, y in pairs[1:]:
            self.mul_add(d0, x.c0, y.c0)
            self.mul_add(d1, x.c0, y.c1)
            self.mul_add(d1, x.c1, y.c0)
            self.mul_add(d2, x.c1, y.c1)
        if addend is not None:
            self.add(d0, d0, addend.c0)
            self.add(d1, d1, addend.c1)
        digits = self.mod_up_digits(d2)
        u, v = self.ksk_inner_product(digits, "relin")
        self.free(*digits, d2)
        if merged:
            self.mul_const(u, d0, a.q, accumulate=True)  # add_p_mod_up
            self.mul_const(v, d1, a.q, accumulate=True)
            self.free(d0, d1)
            out = Ct(self.divide_by_dropped(u, 1), self.divide_by_dropped(v, 1))
            self.free(u, v)
            return out
        uu, vv = self.divide_by_dropped(u, 0), self.divide_by_dropped(v, 0)
        self.free(u, v)
        c = Ct(self.tmp(a.q, name="relin.c0"), self.tmp(a.q, name="relin.c1"))
        self.add(c.c0, d0, uu)
        self.add(c.c1, d1, vv)
        self.free(d0, d1, uu, vv)
        out = self.rescale(c)
        self.free(c.c0, c.c1)
        return out

    def _automorphism_from_digits(self, a: Ct, digits: list[Tensor], key) -> Ct:
        u, v = self.ksk_inner_product(digits, key)
        uu = self.divide_by_dropped(u, 0)
        t0 = self.tmp(a.q, name="rot.t0")
        self.add(t0, a.c0, uu)
        r = Ct(self.tmp(a.q, name="rot.c0"), self.tmp(a.q, name="rot.c1"))
        self.permute(r.c0, t0)
        vv = self.divide_by_dropped(v, 0)
        self.permute(r.c1, vv)
        self.free(u, v, uu, t0, vv)
        return r

    def rotate(self, a: Ct, key="rot") -> Ct:
        digits = self.mod_up_digits(a.c1)
        r = self._automorphism_from_digits(a, digits, key)
        self.free(*digits)
        return r

    def rotate_many(self, a: Ct, count: int, keys=None) -> list[Ct]:
        """Hoisted rotations: one Decomp + ModUp, then per rotation an inner product, 2 ModDowns and
        2 automorphisms of the result."""
        digits = self.mod_up_digits(a.c1)
        keys = keys or [f"rot{i}" for i in range(count)]
        out = [self._automorphism_from_digits(a, digits, k) for k in keys[:count]]
        self.free(*digits)
        return out

    def finish(self):
        self.cache.flush(self.cost, self.limb_bytes)
        if self.key_compression:  # the uniform halves come from seeds: half the key bytes
            self.cost.key_read /= 2
        return self.cost


# ---- linear transform (cpp/circuits/lintrans.cpp), exact for both paths ------------------------------------
def normalize_indices(indices, slots: int) -> tuple[int, ...]:
    """Diagonal indices taken mod slots, as LinearTransform does (a repeated index mod slots is an error)."""
    if slots < 1 or slots & (slots - 1):
        raise ValueError(f"slots must be a power of two, got {slots}")
    out = [int(k) % slots for k in indices]
    if not out:
        raise ValueError("a linear transform needs at least one diagonal")
    if len(set(out)) != len(out):
        raise ValueError("a diagonal index is given twice (mod slots)")
    return tuple(sorted(out))


def split_index(k: int, slots: int, n1: int) -> tuple[int, int]:
    """Diagonal k in [0, slots) as the signed offset in (-slots/2, slots/2] = n1 j + i, i in [0, n1)."""
    s = k if k <= slots // 2 else k - slots
    j = s // n1
    return j, s - j * n1


def choose_n1(indices, slots: int) -> int:
    """The library's baby-step count: the power of two n1 <= slots minimising #{baby steps i} plus the
    giant steps of the Horner chains (max j - min j) (the first one on a tie)."""
    idx = normalize_indices(indices, slots)
    if slots == 1:
        return 1
    best, best_cost, n1 = 1, None, 1
    while n1 <= slots:
        split = [split_index(k, slots, n1) for k in idx]
        js = [j for j, _ in split]
        cost = len({i for _, i in split}) + max(max(js), 0) - min(min(js), 0)
        if best_cost is None or cost < best_cost:
            best, best_cost = n1, cost
        n1 <<= 1
    return best


@dataclass(frozen=True)
class LTPlan:
    """A linear transform's baby-step giant-step shape: giant step j -> baby steps i (k = n1 j + i, k signed),
    in the library's order (std::map: ascending j, then ascending i)."""
    slots: int
    n1: int
    steps: tuple[tuple[int, tuple[int, ...]], ...]

    @classmethod
    def of(cls, indices, slots: int, n1: int = 0) -> "LTPlan":
        idx = normalize_indices(indices, slots)
        n1 = n1 or choose_n1(idx, slots)
        if n1 < 1 or n1 & (n1 - 1) or n1 > slots:
            raise ValueError(f"n1 must be a power of two <= slots = {slots}, got {n1}")
        giant: dict[int, list[int]] = {}
        for k in idx:
            j, i = split_index(k, slots, n1)
            giant.setdefault(j, []).append(i)
        return cls(slots, n1, tuple((j, tuple(sorted(b))) for j, b in sorted(giant.items())))

    @property
    def diagonals(self) -> int:
        return sum(len(b) for _, b in self.steps)

    @property
    def babies(self) -> list[int]:
        """Distinct baby steps, in the order the library first meets them."""
        seen: dict[int, None] = {}
        for _, b in self.steps:
            for i in b:
                seen.setdefault(i)
        return list(seen)

    @property
    def rotations(self) -> list[int]:
        """The rotations whose keys apply() needs (LinearTransform.rotations)."""
        return sorted({self.n1 if j > 0 else -self.n1 for j, _ in self.steps if j} | {i for i in self.babies if i})

    def as_dict(self) -> dict:
        """slots, n1 (the library's baby_steps), diagonals, giants (giant steps j), babies (distinct baby steps
        i), rotation_keys."""
        return dict(slots=self.slots, n1=self.n1, diagonals=self.diagonals, giants=len(self.steps),
                    babies=len(self.babies), rotation_keys=len(self.rotations))


def lintrans(m: EmberModel, a: Ct, indices, slots: int, n1: int = 0, hoisted: bool = True) -> Ct:
    """LinearTransform.apply(a, hoisted): the kernels of lintrans.cpp for the diagonal index set `indices`
    (any integers, taken mod slots) with n1 baby steps (0: the library's choice). The result is one level
    down (one limb fewer)."""
    plan = indices if isinstance(indices, LTPlan) else LTPlan.of(indices, slots, n1)
    if a.q < 2:
        raise ValueError("a linear transform needs a ciphertext at level >= 1")
    return lintrans_hoisted(m, a, plan) if hoisted else lintrans_plain(m, a, plan)


def lintrans_hoisted(m: EmberModel, a: Ct, plan: LTPlan) -> Ct:
    """apply(): one ModUp of c1 for every baby step, baby rotations over QP (no ModDown), per giant step an
    inner sum of products by plaintexts over QP, one ModDown per polynomial and, for j != 0, a rotation in the
    raised basis; accumulation over QP, a final ModDown merged with the Rescale."""
    q, k = a.q, m.ring.k
    digits = m.mod_up_digits(a.c1)
    baby: dict[int, tuple[Tensor, Tensor]] = {}
    for i in plan.babies:
        if i == 0:
            baby[0] = (m.p_mod_up(a.c0), m.p_mod_up(a.c1))
        else:
            baby[i] = m.rotate_raised(a.c0, digits, f"rot{i}")
    m.free(*digits)
    sums: dict[int, tuple[Tensor, Tensor]] = {}
    for j, babies in plan.steps:
        s0, s1 = m.tmp(q, k, "lt.s0"), m.tmp(q, k, "lt.s1")
        for n, i in enumerate(babies):
            pt = Tensor(f"diag{j}.{i}", q + k, "pt", q)  # encoded over Q_l U P
            b0, b1 = baby[i]
            if n == 0:
                m.mul(s0, b0, pt)
                m.mul(s1, b1, pt)
            else:
                m.mul_add(s0, b0, pt)
                m.mul_add(s1, b1, pt)
        sums[j] = (s0, s1)

    def add(a, b):
        r = (m.tmp(q, k, "lt.a0"), m.tmp(q, k, "lt.a1"))
        m.add(r[0], a[0], b[0])
        m.add(r[1], a[1], b[1])
        m.free(*a, *b)
        return r

    def rot_by(sign):
        def rot(a):
            d0 = m.divide_by_dropped(a[0], 0)
            d1 = m.divide_by_dropped(a[1], 0)
            m.free(*a)
            dg = m.mod_up_digits(d1)
            g = m.rotate_raised(d0, dg, f"rot{sign * plan.n1}")
            m.free(d0, d1, *dg)
            return g
        return rot

    acc = _giant_steps(sums, rot_by, add)
    for b in baby.values():
        m.free(*b)
    out = Ct(m.divide_by_dropped(acc[0], 1), m.divide_by_dropped(acc[1], 1))
    m.free(*acc)
    return out


def _giant_steps(sums: dict, rot_by, add):
    """LinearTransform's sum over all giant steps: the positive ones, then the negative ones (each by
    Horner's rule, rot_by(sign) rotating by sign * n1), then step 0; the sums are taken out of the dict."""
    acc = None
    for sign in (1, -1):
        part = _horner(sums, sign, rot_by(sign), add)
        if part is not None:
            acc = part if acc is None else add(acc, part)
    if 0 in sums:
        acc = sums.pop(0) if acc is None else add(sums.pop(0), acc)
    assert acc is not None
    return acc


def _horner(sums: dict, sign: int, rot, add):
    """LinearTransform's giant steps of one sign (lintrans.cpp, horner): from the farthest step in, a
    rotation by sign * n1 then the step's sum; the sums are taken out of the dict."""
    far = max([j * sign for j in sums if j * sign > 0], default=0)
    a = None
    for t in range(far, 0, -1):
        if a is not None:
            a = rot(a)
        if t * sign in sums:
            x = sums.pop(t * sign)
            a = x if a is None else add(a, x)
    if a is not None:
        a = rot(a)
    return a


def lintrans_plain(m: EmberModel, a: Ct, plan: LTPlan) -> Ct:
    """apply(hoisted=False) (apply_plain): each baby step rotated on its own, mul_plain per diagonal, sums,
    a rotation per giant step, one Rescale. The Ciphertext copies of the C++ (a rotation by 0 returns a copy,
    the first term of a sum is moved, not copied) and the copy of each plaintext's Q limbs are memcpy here;
    the giant steps are chained as in the library (Horner's rule, one rotation by +-n1 per step)."""
    baby = {i: (m.rotate(a, f"rot{i}") if i else m.copy_ct(a)) for i in plan.babies}
    inner: dict[int, Ct] = {}
    for j, babies in plan.steps:
        for i in babies:
            # the plaintext's Q limbs, copied out of its encoding over Q U P (the C++ keeps one encoding)
            pt = m.tmp(a.q, name=f"diag{j}.{i}.q")
            m.copy(pt, range(a.q), m.plaintext(a.q, f"diag{j}.{i}"), range(a.q))
            t = m.mul_plain(baby[i], pt)
            m.free(pt)
            if j not in inner:
                inner[j] = t
            else:
                new = m.add_ct(inner[j], t)
                m.free_ct(inner[j], t)
                inner[j] = new
    m.free_ct(*baby.values())

    def add(x, y):
        r = m.add_ct(x, y)
        m.free_ct(x, y)
        return r

    def rot_by(sign):
        def rot(x):
            r = m.rotate(x, f"rot{sign * plan.n1}")
            m.free_ct(x)
            return r
        return rot

    acc = _giant_steps(inner, rot_by, add)
    out = m.rescale(acc)
    m.free_ct(acc)
    return out


def dft_indices(slots: int, levels: int, coeff_to_slot: bool) -> list[tuple[int, ...]]:
    """Diagonal index sets of the library's DFT factors (dft.cpp: ember._ember.dft_factors): butterfly stages
    {0, +len/2, -len/2} mod slots (CoeffToSlot: len = slots .. 2; SlotToCoeff: 2 .. slots), grouped into
    min(levels, log2 slots) factors, the first ones taking the extra stages; a factor's set is the sum set."""
    if slots < 1 or slots & (slots - 1):
        raise ValueError(f"slots must be a power of two, got {slots}")
    if levels < 1:
        raise ValueError(f"levels must be >= 1, got {levels}")
    lens = []
    ln = 2
    while ln <= slots:
        lens.append(ln)
        ln <<= 1
    if coeff_to_slot:
        lens.reverse()
    stages = [{0, (ln // 2) % slots, (-(ln // 2)) % slots} for ln in lens]
    if not stages:
        return [(0,)]
    s = len(stages)
    levels = min(levels, s)
    out, at = [], 0
    for g in range(levels):
        take = s // levels + (1 if g < s % levels else 0)
        f = {0}
        for st in stages[at:at + take]:
            f = {(x + y) % slots for x in f for y in st}
        at += take
        out.append(tuple(sorted(f)))
    return out


def parse_indices(spec: str, slots: int, levels: int) -> list[int]:
    """Diagonal indices from the command line: a comma list of integers and inclusive ranges a..b
    ("-3..3,64"), or cts[:F] / stc[:F], factor F (default 0) of the library's CoeffToSlot / SlotToCoeff with
    `levels` factors over `slots` slots."""
    spec = spec.strip()
    head, _, f = spec.partition(":")
    if head.lower() in ("cts", "stc"):
        factors = dft_indices(slots, levels, coeff_to_slot=head.lower() == "cts")
        try:
            return list(factors[int(f or 0)])
        except (ValueError, IndexError):
            raise ValueError(f"{spec!r}: the DFT over {slots} slots in {levels} levels has factors "
                             f"0..{len(factors) - 1}") from None
    out: list[int] = []
    try:
        for tok in (t.strip() for t in spec.split(",")):
            if ".." in tok:
                lo, hi = tok.split("..")
                out.extend(range(int(lo), int(hi) + 1))
            elif tok:
                out.append(int(tok))
    except ValueError:
        raise ValueError(f"diagonal indices {spec!r}: expected integers and ranges a..b, or cts[:F] / stc[:F]") \
            from None
    return out


def band_indices(diagonals: int) -> list[int]:
    """`diagonals` consecutive diagonals centred on 0: -(d // 2) .. d - 1 - d // 2 (the paper model's band)."""
    if diagonals < 1:
        raise ValueError(f"diagonals must be >= 1, got {diagonals}")
    lo = -(diagonals // 2)
    return list(range(lo, lo + diagonals))


# ---- composite operations (modelled, not validated against the library: polynomial evaluation, bootstrapping) --

def poly_eval(m: EmberModel, a: Ct, degree: int) -> Ct:
    """Chebyshev evaluation by baby-step giant-step (Bossuat et al.): T_1..T_2^l by products, giant steps
    T_2^l, T_2^(l+1), ... by squarings, leaves as constant combinations of the baby steps, then a product
    per internal node of the giant-step tree."""
    levels = int(math.ceil(math.log2(degree + 1)))
    ell = levels // 2
    powers = {1: a}
    for i in range(2, 2 ** ell + 1):
        x, y = powers[i // 2], powers[i - i // 2]
        q = min(x.q, y.q)
        powers[i] = m.mul_ct(_drop(x, q), _drop(y, q))
    giants = [powers[2 ** ell]]
    for _ in range(levels - ell - 1):
        g = giants[-1]
        giants.append(m.mul_ct(g, g))
    low = min(p.q for p in powers.values())
    leaves = []
    for _ in range(2 ** (levels - ell)):
        acc = None
        for i in range(1, 2 ** ell + 1):
            t = m.mul_const_ct(_drop(powers[i], low))
            if acc is None:
                acc = t
            else:
                new = m.add_ct(acc, t)
                m.free_ct(acc, t)
                acc = new
        shifted = m.add_const_ct(acc)
        leaves.append(m.rescale(shifted))
        m.free_ct(acc, shifted)
    for g in giants:
        nxt = []
        for j in range(0, len(leaves), 2):
            lo, hi = leaves[j], leaves[j + 1] if j + 1 < len(leaves) else None
            if hi is None:
                nxt.append(lo)
                continue
            q = min(g.q, hi.q)
            prod = m.mul_ct(_drop(g, q), _drop(hi, q))
            nxt.append(m.add_ct(prod, _drop(lo, prod.q)))
            m.free_ct(prod, lo, hi)
        leaves = nxt
    m.free_ct(*[p for i, p in powers.items() if i > 1], *giants[1:])
    return leaves[0]


def _drop(a: Ct, q: int) -> Ct:
    """Level alignment by dropping limbs: a view, no kernel (the library's drop_to_level copies)."""
    if a.q == q:
        return a
    return Ct(a.c0.view(q), a.c1.view(q))


def bootstrap(m: EmberModel, p: SimParams, hoist: bool = True) -> dict:
    """ModRaise, CoeffToSlot (fft_iters linear transforms, conjugation split), EvalMod (polynomial of
    p.poly_degree and p.double_angle squarings, on the real and imaginary parts), SlotToCoeff.

    The DFTs are the library's: dft_factors(log N, N/2, fft_iters, ...) applied as LinearTransforms over
    N/2 slots with the library's n1, each by lintrans() (its double-hoisted path when `hoist`, else the plain
    one), so this PtMatVecMult is the validated linear-transform model."""
    r = m.ring
    stages = {}
    n = r.n
    slots = n // 2

    def mark(name, before):
        stages[name] = m.cost + before * -1

    before = Cost() + m.cost
    src = m.ciphertext(1, "in")
    top = m.ciphertext(r.q_count, "raised")
    for half, dst in ((src.c0, top.c0), (src.c1, top.c1)):
        m.ntt(half, [0], inverse=True)
        for i in range(r.q_count):  # centred lift of q_0 residues into every prime
            m._r(half, 0)
            m._w(dst, i)
        m._count("mod_raise", 0, n * r.q_count, 0, r.q_count, r.q_count)
        m.ntt(dst, range(r.q_count), inverse=False)
    mark("ModRaise", before)

    before = Cost() + m.cost
    x = top
    for idx in dft_indices(slots, p.fft_iters, coeff_to_slot=True):
        nx = lintrans(m, x, idx, slots, hoisted=hoist)
        m.free_ct(x)
        x = nx
    conj = m.rotate(x, "conj")
    re, im = m.add_ct(x, conj), m.add_ct(x, conj, "sub")
    m.free_ct(x, conj)
    mark("CoeffToSlot", before)

    before = Cost() + m.cost
    outs = []
    for part in (re, im):
        y = poly_eval(m, part, p.poly_degree)
        m.free_ct(part)
        for _ in range(p.double_angle):
            sq = m.mul_ct(y, y)
            m.free_ct(y)
            y = m.add_const_ct(sq)
            m.free_ct(sq)
        outs.append(y)
    y = m.add_ct(outs[0], _drop(outs[1], outs[0].q))
    m.free_ct(*outs)
    mark("EvalMod", before)

    before = Cost() + m.cost
    for idx in dft_indices(slots, p.fft_iters, coeff_to_slot=False):
        ny = lintrans(m, y, idx, slots, hoisted=hoist)
        m.free_ct(y)
        y = ny
    mark("SlotToCoeff", before)
    return dict(stages=stages, output_limbs=y.q)


def lt_spec(p: SimParams, diagonals: int = 0, indices=None, slots: int = 0, n1: int = 0) -> LTPlan:
    """The linear transform of op LinearTransform: the diagonal indices given (taken mod slots; or a
    parse_indices() string), else a band of `diagonals` diagonals centred on 0, else the first CoeffToSlot
    factor of the library's DFT with p.fft_iters levels; over `slots` slots (default N/2), n1 baby steps
    (0: the library's choice)."""
    slots = slots or p.slots
    if slots < 1 or slots & (slots - 1) or slots > p.slots:
        raise ValueError(f"slots must be a power of two in [1, N/2 = {p.slots}], got {slots}")
    if isinstance(indices, str):
        indices = parse_indices(indices, slots, p.fft_iters)
    if indices is not None and len(indices):
        idx = list(indices)
    elif diagonals:
        if diagonals > slots:
            raise ValueError(f"{diagonals} diagonals do not fit in {slots} slots")
        idx = band_indices(diagonals)
    else:
        idx = list(dft_indices(slots, p.fft_iters, coeff_to_slot=True)[0])
    return LTPlan.of(idx, slots, n1)


OPS = ("PtAdd", "Add", "PtMult", "Mult", "Decomp", "ModUp", "KSKInnerProd", "ModDown", "Rescale",
       "Automorph", "Rotate", "Conjugate", "HoistedRotate", "LinearTransform", "PolyEval", "Bootstrap")


def run_op(op: str, p: SimParams, cache_bytes: float = 0, tech: Techniques = Techniques(merge=True, hoist=True),
           rotations: int = 8, diagonals: int = 0, ring: Optional[Ring] = None, indices=None,
           slots: int = 0, n1: int = 0) -> EmberModel:
    """Issues the kernels of one operation on an operand of p.ell limbs and returns the model.

    Where Ember's operations differ from the paper's columns: Decomp is the copy of each digit's own limbs
    (Ember fuses it into ModUp), ModUp raises every digit of one polynomial, KSKInnerProd is both dot products,
    ModDown divides one polynomial by P, PtMult includes its Rescale, Automorph permutes both polynomials.
    LinearTransform is the library's (lintrans(); see lt_spec() for its diagonals, slots and n1), hoisted
    (apply()) when tech.hoist, else the plain path."""
    ring = ring or Ring.from_sim(p)
    m = EmberModel(ring, cache_limbs=int(cache_bytes // (ring.n * WORD)), key_compression=tech.compress,
                   merge=tech.merge)
    q = p.ell
    a = m.ciphertext(q, "a")
    if op == "PtAdd":
        m.add_plain(a, m.plaintext(q))
    elif op == "Add":
        m.add_ct(a, m.ciphertext(q, "b"))
    elif op == "PtMult":
        m.rescale(m.mul_plain(a, m.plaintext(q)))
    elif op == "Mult":
        m.mul_ct(a, m.ciphertext(q, "b"))
    elif op == "Decomp":
        for first, last in digit_partition(ring.q_count, ring.dnum):
            last = min(last, q)
            if first < last:
                d = m.tmp(q, ring.k, "digit")
                m.copy(d, range(first, last), a.c1, range(first, last))
    elif op == "ModUp":
        m.mod_up_digits(a.c1)
    elif op == "KSKInnerProd":
        used = [1 for first, last in digit_partition(ring.q_count, ring.dnum) if first < min(last, q)]
        m.ksk_inner_product([Tensor(f"digit{j}", q + ring.k, "ct", q) for j in range(len(used))], "relin")
    elif op == "ModDown":
        m.divide_by_dropped(Tensor("u", q + ring.k, "ct", q), 0)
    elif op == "Rescale":
        m.rescale(a)
    elif op == "Automorph":
        r = m.tmp(q), m.tmp(q)
        m.permute(r[0], a.c0)
        m.permute(r[1], a.c1)
    elif op in ("Rotate", "Conjugate"):
        m.rotate(a)
    elif op == "HoistedRotate":
        if tech.hoist:
            m.rotate_many(a, rotations)
        else:
            for i in range(rotations):
                m.rotate(a, f"rot{i}")
    elif op == "LinearTransform":
        lt = lt_spec(p, diagonals, indices, slots, n1)
        out = lintrans(m, a, lt, lt.slots, hoisted=tech.hoist)
        m.extra = dict(lt=lt.as_dict(), output_limbs=out.q)
    elif op == "PolyEval":
        poly_eval(m, a, p.poly_degree)
    elif op == "Bootstrap":
        m.extra = bootstrap(m, p, tech.hoist)
    else:
        raise ValueError(f"unknown operation {op!r}; choose from {', '.join(OPS)}")
    m.finish()
    return m
