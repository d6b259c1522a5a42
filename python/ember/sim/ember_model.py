"""The *ember* accounting: what Ember's kernels do, kernel call by kernel call.

Each function below follows one path of the library (cpp/ckks/evaluator.cpp, cpp/ring/key_switch.cpp) and
issues the backend kernels it calls, with the counts cpp/backend/cpu/cpu_backend.cpp reports for them:
  ntt_forward / ntt_inverse  per limb: (N/2) log N products and N log N additions; the inverse adds the N^-1
                             scaling (N/2 products merged into the last stage on every path: math/ntt.hpp,
                             ntt_mod_mul_count; builds before the scalar path merged it did a pass of N);
  base_convert[_centered]    k inputs to m outputs: N k + N k m (+ N m) products, N (k - 1) m (+ N m) additions;
  dot                        terms x limbs products, (terms - 1) x limbs additions; dot2 (two sums over shared
                             terms, read once) is traced as one dot with twice the products and additions;
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
index set, the baby-step count n1, the slots and the level: ember.sim.lintrans; bootstrapping applies the
library's DFT factors (cpp/circuits/dft.cpp, index sets from dft_indices()) through the same function
(ember.sim.composite).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from ..params import digit_partition  # noqa: F401  (re-exported by ember.sim.kernels)
from .cost import Cost, SimParams

WORD = 8  # Ember stores every residue in a 64-bit word

UNTRACED = ("memcpy", "memset", "mod_raise")


def special_primes(q_count: int, dnum: int, log_scale: int = 50, first_mod_bits: int = 60, sp_bits: int = 60) -> int:
    """Return K as cpp/ckks/params.cpp picks it: the fewest sp_bits primes with log P >= largest digit + 16 bits.

    Digits are cut from the top, so the largest one holds alpha scale primes (or q_0 when dnum = q_count).
    """
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
        """The P limbs: limbs beyond the first q."""
        return self.limbs - self.q

    @property
    def root(self) -> "Tensor":
        """The tensor whose storage this one is (itself unless it is a view)."""
        return self.base.root if self.base is not None else self

    def view(self, q: int) -> "Tensor":
        """Return a view of the first q limbs of this tensor's storage (no kernel)."""
        return Tensor(self.name, q, self.kind, q, base=self.root)


class LimbCache:
    """A managed on-chip memory of `capacity` limbs, least recently used out first.

    Reads of absent limbs and write-backs of evicted dirty limbs are DRAM traffic. capacity 0 is
    write-through: every access is DRAM traffic (the kernels' own I/O).
    """

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
        """Read limb i of t: DRAM traffic of its kind unless it is on chip; it is then on chip."""
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
        """Write limb i of t: on chip (dirty) when there is a cache, else straight to DRAM."""
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
        """Mark t dead: its limbs leave the cache without being written back."""
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
        """Make the ring of a SimParams, with K from p.special when it is set.

        Else K comes from the library's own prime selection when it is importable, else from special_primes()
        (which assumes primes of exactly log_scale bits: it can be one short of the library when the largest
        digit plus 16 bits lands on a multiple of 59.5 bits).
        """
        k = p.special
        if k is None:
            k = _library_special_primes(p, p.prime_bits)
        if k is None:
            k = special_primes(p.limbs, p.dnum, p.prime_bits, p.first_mod_bits)
        return cls(p.log_n, p.limbs, k, p.dnum, _vector_ntt() if merged is None else merged)

    @classmethod
    def from_params(cls, params, merged: Optional[bool] = None) -> "Ring":
        """Make the ring of an ember.CkksParams: the exact chain and special primes the library uses."""
        return cls(params.log_n, len(params.q_primes), len(params.p_primes), params.dnum,
                   _vector_ntt() if merged is None else merged)

    @property
    def n(self) -> int:
        """The ring degree N = 2^log_n."""
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
    """Return whether the inverse NTT merges N^-1 into its last stage.

    Every path of this library does (the scalar one too, since the every-CPU work of issue 30); kept as a
    function so that accountings of older builds can say False.
    """
    return True


@dataclass
class Ct:
    """A ciphertext of the model: its two polynomials."""

    c0: Tensor
    c1: Tensor

    @property
    def q(self) -> int:
        """Its Q limbs (the level + 1)."""
        return self.c0.q


@dataclass
class EmberModel:
    """Issues Ember's kernels for an operation; `counts` is comparable with ember.trace() counts."""

    ring: Ring
    cache_limbs: int = 0
    key_compression: bool = False
    merge: bool = True          # Mult takes the merged ModDown / Rescale path (the library's default)
    limb_fusion: bool = True    # ModUp's Decomp + iNTT, ModDown's copy + iNTT per limb in one pass (default on)
    counts: dict = field(default_factory=dict)
    cost: Cost = field(default_factory=Cost)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        """Make the limb cache and the per-model state."""
        self.cache = LimbCache(self.cache_limbs)
        self.limb_bytes = self.ring.n * WORD
        self._keys: dict[object, tuple[list[Tensor], list[Tensor]]] = {}

    # ---- tensors --------------------------------------------------------------------------------
    def ciphertext(self, q: int, name="ct") -> Ct:
        """Return an input ciphertext of q limbs (ValueError outside [1, q_count])."""
        if not 1 <= q <= self.ring.q_count:
            raise ValueError(f"ciphertext limbs must be in [1, {self.ring.q_count}], got {q}")
        return Ct(Tensor(name + ".c0", q, "ct", q), Tensor(name + ".c1", q, "ct", q))

    def plaintext(self, q: int, name="pt") -> Tensor:
        """Return an input plaintext of q limbs."""
        return Tensor(name, q, "pt", q)

    def tmp(self, q: int, p: int = 0, name="tmp") -> Tensor:
        """Return a temporary of q Q limbs and p P limbs."""
        return Tensor(name, q + p, "tmp", q)

    def key(self, which) -> tuple[list[Tensor], list[Tensor]]:
        """Return the (b, a) digit polynomials over Q U P of a switching key (one per key digit)."""
        if which not in self._keys:
            r = self.ring
            digits = len(digit_partition(r.q_count, r.dnum))
            mk = lambda h, j: Tensor(f"key{which}.{h}{j}", r.q_count + r.k, "key", r.q_count)  # noqa: E731
            self._keys[which] = ([mk("b", j) for j in range(digits)], [mk("a", j) for j in range(digits)])
        return self._keys[which]

    def free(self, *ts: Tensor):
        """Mark tensors dead (their limbs leave the cache unwritten)."""
        for t in ts:
            self.cache.free(t)

    def free_ct(self, *cts: "Ct"):
        """Mark the temporaries of these ciphertexts dead (inputs of the operation stay)."""
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
        """Issue a limb-parallel kernel: for each output limb, read the inputs' limbs then write it."""
        n = self.ring.n
        for j, i in enumerate(out_idx):
            for t, idx in ins:
                self._r(t, idx[j])
            self._w(out, i)
        m = len(out_idx)
        self._count(name, mul * n * m, add * n * m, 0, len(ins) * m, m)

    def ntt(self, t: Tensor, idx, inverse: bool, src: Optional[Tensor] = None, src_idx=None):
        """Issue the NTT of t's limbs idx, in place or out of place from src's limbs src_idx (default: idx).

        Out of place is Backend::ntt_inverse_from: the copy fused, each limb read from src and written to t once.
        """
        n, lg = self.ring.n, self.ring.log_n
        idx = list(idx)
        src_idx = idx if src_idx is None else list(src_idx)
        for i, si in zip(idx, src_idx):
            if src is not None:
                self._r(src, si)
            else:
                self._r(t, i)
            self._w(t, i)
        per = n // 2 * lg + ((n // 2 if self.ring.inverse_scaling_merged else n) if inverse else 0)
        self._count("ntt_inverse" if inverse else "ntt_forward", per * len(idx), n * lg * len(idx), len(idx),
                    len(idx), len(idx))

    def copy(self, out: Tensor, out_idx, a: Tensor, a_idx):
        """Issue the copy kernel: a's limbs a_idx into out's limbs out_idx."""
        self._elementwise("copy", out, list(out_idx), [(a, list(a_idx))])

    def signed_digits(self, outs: list, a: Tensor):
        """Issue BV key switching's balanced-digit kernel: limb 0 of a read once, one digit limb written to each out."""
        self._r(a, 0)
        for t in outs:
            self._w(t, 0)
        self._count("signed_digits", 0, 0, 0, 1, len(outs))

    def memcpy(self, out: Tensor, a: Tensor):
        """Issue a whole-polynomial copy outside the backend (not traced by the library)."""
        self._elementwise("memcpy", out, list(range(a.limbs)), [(a, list(range(a.limbs)))])

    def memset(self, out: Tensor):
        """Issue the zeroing of a new polynomial (Poly's constructor, outside the backend; not traced)."""
        self._elementwise("memset", out, list(range(out.limbs)), [])

    def add(self, out, a, b, name="add"):
        """Issue out = a + b over a's limbs (name: "add" or "sub")."""
        r = list(range(a.limbs))
        self._elementwise(name, out, r, [(a, r), (b, r)], add=1)

    def mul(self, out, a, b):
        """Issue out = a * b over a's limbs."""
        r = list(range(a.limbs))
        self._elementwise("mul", out, r, [(a, r), (b, r)], mul=1)

    def mul_add(self, acc, a, b):
        """Issue acc += a * b over a's limbs."""
        r = list(range(a.limbs))
        self._elementwise("mul_add", acc, r, [(a, r), (b, r), (acc, r)], mul=1, add=1)

    def mul_const(self, out, a, q: int, accumulate=False):
        """Issue out = c a (or out += c a: mul_const_add) over the first q limbs."""
        r = list(range(q))
        ins = [(a, r)] + ([(out, r)] if accumulate else [])
        self._elementwise("mul_const_add" if accumulate else "mul_const", out, r, ins, mul=1, add=int(accumulate))

    def sub_mul_const(self, out, a, q: int):
        """Issue out = (a - out) c over the first q limbs (ModDown's last step)."""
        r = list(range(q))
        self._elementwise("sub_mul_const", out, r, [(a, r), (out, r)], mul=1, add=1)

    def permute(self, out, a):
        """Issue the automorph kernel: out = a permuted, over a's limbs."""
        r = list(range(a.limbs))
        self._elementwise("automorph", out, r, [(a, r)])

    def dot(self, out: Tensor, a: list[Tensor], b: list[Tensor]):
        """Issue Backend::dot over out's limbs: out = sum_t a[t] * b[t] (every operand with out's limbs)."""
        n, terms = self.ring.n, len(a)
        for i in range(out.limbs):
            for x, y in zip(a, b):
                self._r(x, i)
                self._r(y, i)
            self._w(out, i)
        m = out.limbs
        self._count("dot", terms * n * m, (terms - 1) * n * m, 0, 2 * terms * m, m)

    def dot2(self, out0: Tensor, out1: Tensor, shared: list[Tensor], b0: list[Tensor], b1: list[Tensor],
             q: Optional[int] = None):
        """Issue Backend::dot2: out0 = sum_t shared[t] * b0[t], out1 likewise with b1, each shared limb read once.

        q: the b limbs are a switching key's (Q limbs 0..q-1 and all P limbs, as in dot); None: out0's limbs.
        """
        n, terms = self.ring.n, len(shared)
        for i in range(out0.limbs):
            ki = i if q is None or i < q else self.ring.q_count + (i - q)
            for s, x, y in zip(shared, b0, b1):
                self._r(s, i)
                self._r(x, ki)
                self._r(y, ki)
            self._w(out0, i)
            self._w(out1, i)
        m = out0.limbs
        self._count("dot", 2 * terms * n * m, 2 * (terms - 1) * n * m, 0, 3 * terms * m, 2 * m)

    def base_convert(self, src: Tensor, src_idx, dst: Tensor, dst_idx, centered: bool):
        """Issue NewLimb (Eq. 1, 001): slot-wise, every input limb is read before the outputs are written."""
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
        """Issue Decomp + ModUp of c; return the raised digits.

        Every limb to coefficient form once; per digit, copy its own limbs, NewLimb for the others over Q_l U P,
        NTT of the new limbs.
        """
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
        """Issue the dot products of the raised digits with switching key `key` (one dot2); return (u, v) over QP."""
        b, a = self.key(key)
        ql, k = digits[0].q, self.ring.k
        off = len(b) - len(digits)
        u, v = self.tmp(ql, k, "u"), self.tmp(ql, k, "v")
        self.dot2(u, v, digits, b[off:], a[off:], ql)
        return u, v

    def divide_by_dropped(self, x: Tensor, drop_q: int) -> Tensor:
        """Issue ModDown (drop_q = 0), ModDown merged with Rescale (drop_q = 1 over QP) or Rescale (1 over Q)."""
        kept = x.q - drop_q
        dropped = list(range(kept, x.limbs))
        d = self.tmp(len(dropped), name="dropped")
        if self.limb_fusion:  # the library's default: each dropped limb copied and transformed in one pass
            self.ntt(d, range(len(dropped)), inverse=True, src=x, src_idx=dropped)
        else:
            self.copy(d, range(len(dropped)), x, dropped)
            self.ntt(d, range(len(dropped)), inverse=True)
        out = self.tmp(kept, name="moddown")
        self.base_convert(d, range(len(dropped)), out, range(kept), centered=True)
        self.ntt(out, range(kept), inverse=False)
        self.sub_mul_const(out, x, kept)
        self.free(d)
        return out

    def p_mod_up(self, x: Tensor) -> Tensor:
        """Issue x times P over Q_l U P (PModUp): a zeroed polynomial over QP, mul_const on its Q limbs."""
        out = self.tmp(x.q, self.ring.k, name="pmodup")
        self.memset(out)
        self.mul_const(out, x, x.q)
        return out

    def add_p_mod_up(self, acc: Tensor, x: Tensor):
        """Issue acc += P x on the Q limbs of acc (over QP)."""
        self.mul_const(acc, x, x.q, accumulate=True)

    def rotate_raised(self, c0: Tensor, digits: list[Tensor], key) -> tuple[Tensor, Tensor]:
        """Issue P rot(c0, c1) over Q_l U P from the digits of c1 (lintrans.cpp, rotate_raised).

        The inner product, P c0 added to its first half, both halves permuted over QP; no ModDown.
        """
        u, v = self.ksk_inner_product(digits, key)
        self.add_p_mod_up(u, c0)
        r0, r1 = self.tmp(u.q, u.p, name="rr.c0"), self.tmp(v.q, v.p, name="rr.c1")
        self.permute(r0, u)
        self.permute(r1, v)
        self.free(u, v)
        return r0, r1

    # ---- CKKS evaluator (evaluator.cpp) -------------------------------------------------------------
    def add_ct(self, a: Ct, b: Ct, name="add") -> Ct:
        """Issue a ciphertext addition (name "sub": a subtraction); return the result."""
        r = Ct(self.tmp(a.q, name="sum.c0"), self.tmp(a.q, name="sum.c1"))
        self.add(r.c0, a.c0, b.c0, name)
        self.add(r.c1, a.c1, b.c1, name)
        return r

    def add_plain(self, a: Ct, pt: Tensor) -> Ct:
        """Issue a plaintext addition (c1 copied outside the backend); return the result."""
        r = Ct(self.tmp(a.q, name="ptsum.c0"), self.tmp(a.q, name="ptsum.c1"))
        self.add(r.c0, a.c0, pt)
        self.memcpy(r.c1, a.c1)  # a.c1 = a0.c1
        return r

    def copy_ct(self, a: Ct) -> Ct:
        """Issue a Ciphertext copy made outside the backend (a returned or selected copy; not traced)."""
        r = Ct(self.tmp(a.q, name="copy.c0"), self.tmp(a.q, name="copy.c1"))
        self.memcpy(r.c0, a.c0)
        self.memcpy(r.c1, a.c1)
        return r

    def mul_plain(self, a: Ct, pt: Tensor) -> Ct:
        """Issue a plaintext product, before its Rescale; return the result."""
        r = Ct(self.tmp(a.q, name="ptprod.c0"), self.tmp(a.q, name="ptprod.c1"))
        self.mul(r.c0, a.c0, pt)
        self.mul(r.c1, a.c1, pt)
        return r

    def mul_const_ct(self, a: Ct) -> Ct:
        """Issue a multiplication by a real constant (mul_const kernels), before its Rescale."""
        r = Ct(self.tmp(a.q, name="cprod.c0"), self.tmp(a.q, name="cprod.c1"))
        self.mul_const(r.c0, a.c0, a.q)
        self.mul_const(r.c1, a.c1, a.q)
        return r

    def add_const_ct(self, a: Ct) -> Ct:
        """Issue the addition of a constant (add_const on c0, c1 copied); return the result."""
        r = Ct(self.tmp(a.q, name="csum.c0"), self.tmp(a.q, name="csum.c1"))
        self._elementwise("add_const", r.c0, list(range(a.q)), [(a.c0, list(range(a.q)))], add=1)
        self.memcpy(r.c1, a.c1)  # a.c1 = a0.c1
        return r

    def rescale(self, a: Ct) -> Ct:
        """Issue the Rescale of both polynomials; return the result."""
        return Ct(self.divide_by_dropped(a.c0, 1), self.divide_by_dropped(a.c1, 1))

    def tensor(self, a: Ct, b: Ct):
        """Issue the tensor product of two ciphertexts; return (d0, d1, d2)."""
        d0, d1 = self.tensor_d01(a, b)
        return d0, d1, self.tensor_d2(a, b)

    def tensor_d01(self, a: Ct, b: Ct):
        """Issue d0 = c0 c0' and d1 = c0 c1' + c1 c0' (the terms relinearization does not decompose)."""
        d0, d1 = (self.tmp(a.q, name=f"d{i}") for i in range(2))
        self.mul(d0, a.c0, b.c0)
        self.dot(d1, [a.c0, a.c1], [b.c1, b.c0])
        return d0, d1

    def tensor_d2(self, a: Ct, b: Ct):
        """Issue d2 = c1 c1' (the term relinearization decomposes)."""
        d2 = self.tmp(a.q, name="d2")
        self.mul(d2, a.c1, b.c1)
        return d2

    def mul_ct(self, a: Ct, b: Ct, merged: Optional[bool] = None) -> Ct:
        """Issue a ciphertext product, relinearized and rescaled; merged: MAD's single ModDown by P q_l."""
        return self.mul_sum_ct([(a, b)], merged)

    def mul_sum_ct(self, pairs: list, merged: Optional[bool] = None, addend: Optional[Ct] = None) -> Ct:
        """Issue Evaluator::mul_sum: the tensors of every pair summed (and the addend, when given).

        Then one relinearization and one rescale (mul_ct is the one-pair case).
        """
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
        """Issue a rotation (or conjugation) with switching key `key`; return the result."""
        digits = self.mod_up_digits(a.c1)
        r = self._automorphism_from_digits(a, digits, key)
        self.free(*digits)
        return r

    def rotate_many(self, a: Ct, count: int, keys=None) -> list[Ct]:
        """Issue `count` hoisted rotations; return the results.

        One Decomp + ModUp, then per rotation an inner product, 2 ModDowns and 2 automorphisms of the result.
        """
        digits = self.mod_up_digits(a.c1)
        keys = keys or [f"rot{i}" for i in range(count)]
        out = [self._automorphism_from_digits(a, digits, k) for k in keys[:count]]
        self.free(*digits)
        return out

    def finish(self):
        """End the operation: live results still on chip go back to DRAM."""
        self.cache.flush(self.cost, self.limb_bytes)
        if self.key_compression:  # the uniform halves come from seeds: half the key bytes
            self.cost.key_read /= 2
        return self.cost
