"""The linear transform (cpp/circuits/lintrans.cpp) in the ember accounting, and the DFT factors as index sets.

The model is exact for both of the linear transform's paths (hoisted and plain) given the diagonal index set,
the baby-step count n1, the slots and the level; the DFT factors of bootstrapping (cpp/circuits/dft.cpp) are
given as index sets. Part of ember.sim.kernels (the facade re-exports it).
"""
from __future__ import annotations

from dataclasses import dataclass

from .ember_model import Ct, EmberModel, Tensor


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


GIANT_WEIGHT = 2  # a giant step weighs two baby steps in choose_n1


def choose_n1(indices, slots: int) -> int:
    """Return the library's baby-step count for a set of diagonal indices.

    The power of two n1 <= slots minimising #{baby steps i} plus twice the giant steps of the Horner chains
    (max j - min j) (the first one on a tie): cpp/circuits/lintrans.cpp's kGiantWeight.
    """
    idx = normalize_indices(indices, slots)
    if slots == 1:
        return 1
    best, best_cost, n1 = 1, None, 1
    while n1 <= slots:
        split = [split_index(k, slots, n1) for k in idx]
        js = [j for j, _ in split]
        cost = len({i for _, i in split}) + GIANT_WEIGHT * (max(max(js), 0) - min(min(js), 0))
        if best_cost is None or cost < best_cost:
            best, best_cost = n1, cost
        n1 <<= 1
    return best


@dataclass(frozen=True)
class LTPlan:
    """A linear transform's baby-step giant-step shape.

    Giant step j -> baby steps i (k = n1 j + i, k signed), in the library's order (std::map: ascending j, then
    ascending i).

    Parameters
    ----------
    slots : int
        The slots it acts on (a power of two).
    n1 : int
        The baby-step count.
    steps : tuple
        ``((j, (i, ...)), ...)``: each giant step with its baby steps.
    """

    slots: int
    n1: int
    steps: tuple[tuple[int, tuple[int, ...]], ...]

    @classmethod
    def of(cls, indices, slots: int, n1: int = 0) -> "LTPlan":
        """Make the plan of a set of diagonal indices (taken mod slots) with n1 baby steps (0: choose_n1())."""
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
        """The number of diagonals."""
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
        """Return the plan's shape as a dictionary.

        slots, n1 (the library's baby_steps), diagonals, giants (giant steps j), babies (distinct baby steps i),
        rotation_keys.
        """
        return dict(slots=self.slots, n1=self.n1, diagonals=self.diagonals, giants=len(self.steps),
                    babies=len(self.babies), rotation_keys=len(self.rotations))


def lintrans(m: EmberModel, a: Ct, indices, slots: int, n1: int = 0, hoisted: bool = True) -> Ct:
    """Issue the kernels of LinearTransform.apply(a, hoisted) (lintrans.cpp); return the result.

    For the diagonal index set `indices` (any integers, taken mod slots, or an LTPlan) with n1 baby steps (0:
    the library's choice). The result is one level down (one limb fewer).
    """
    plan = indices if isinstance(indices, LTPlan) else LTPlan.of(indices, slots, n1)
    if a.q < 2:
        raise ValueError("a linear transform needs a ciphertext at level >= 1")
    return lintrans_hoisted(m, a, plan) if hoisted else lintrans_plain(m, a, plan)


def lintrans_hoisted(m: EmberModel, a: Ct, plan: LTPlan) -> Ct:
    """Issue the kernels of apply(), the double-hoisted path; return the result.

    One ModUp of c1 for every baby step, baby rotations over QP (no ModDown), per giant step an inner sum of
    products by plaintexts over QP, one ModDown per polynomial and, for j != 0, a rotation in the raised basis;
    accumulation over QP, a final ModDown merged with the Rescale.
    """
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
        pts = [Tensor(f"diag{j}.{i}", q + k, "pt", q) for i in babies]  # encoded over Q_l U P
        m.dot2(s0, s1, pts, [baby[i][0] for i in babies], [baby[i][1] for i in babies])  # mul_plain_sum
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
    """Sum over all giant steps, as LinearTransform does.

    The positive ones, then the negative ones (each by Horner's rule, rot_by(sign) rotating by sign * n1), then
    step 0; the sums are taken out of the dict.
    """
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
    """Sum LinearTransform's giant steps of one sign (lintrans.cpp, horner).

    From the farthest step in, a rotation by sign * n1 then the step's sum; the sums are taken out of the dict.
    """
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
    """Issue the kernels of apply(hoisted=False) (apply_plain); return the result.

    Each baby step rotated on its own, mul_plain per diagonal, sums, a rotation per giant step, one Rescale.
    The Ciphertext copies of the C++ (a rotation by 0 returns a copy,
    the first term of a sum is moved, not copied) and the copy of each plaintext's Q limbs are memcpy here;
    the giant steps are chained as in the library (Horner's rule, one rotation by +-n1 per step).
    """
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
    """Return the diagonal index sets of the library's DFT factors (dft.cpp: ember._ember.dft_factors).

    Butterfly stages {0, +len/2, -len/2} mod slots (CoeffToSlot: len = slots .. 2; SlotToCoeff: 2 .. slots),
    grouped into min(levels, log2 slots) factors, the first ones taking the extra stages; a factor's set is the
    sum set.
    """
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
    """Parse diagonal indices from the command line.

    A comma list of integers and inclusive ranges a..b ("-3..3,64"), or cts[:F] / stc[:F], factor F (default 0)
    of the library's CoeffToSlot / SlotToCoeff with `levels` factors over `slots` slots.
    """
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
