"""The *paper* accounting: CKKS costs by the conventions of the MAD paper (001) and its simulator SimFHE.

Conventions (001 Sections 2.3, 3 and 4.1; SimFHE's published model):
  * a limb is N words of `word_bits` bits; Table 4 uses 64-bit words, Table 5 packs log q = 50 bits;
  * a limb NTT costs (N/2) log N butterflies (one product and two additions each) plus N + N/2
    products generating its twiddle factors on the fly;
  * NewLimb (Eq. 1) from k limbs to m limbs costs N k (1 + m) products and N k m additions;
  * Decomp costs two products per coefficient of every digit;
  * a digit holds alpha = ceil(l / dnum) limbs of the operand and the raised basis adds alpha + 1 limbs,
    so digits are re-cut at every level (SimFHE does so; the paper's Table 1 fixes alpha at the top);
  * key switching always uses dnum digits, each key digit is 2 (1 with key compression) polynomials over
    the raised basis;
  * plaintexts (the diagonals of the linear transforms) are not counted as DRAM traffic;
  * DRAM traffic follows the cache level that fits (Section 3.1): none (every sub-operation reads and writes
    its limbs), O(1) limbs, O(beta) limbs, O(alpha) limbs (+ limb re-ordering), and a key-sized cache.

With cache 0, 64-bit words, 35 limbs and dnum = 3 at log N = 17 this gives Table 4 of 001.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

from .cost import ALPHA, BETA, HUGE, LEVEL_NAMES, NONE, O1, Cost, Machine, SimParams, Techniques


def alpha_of(limbs: int, dnum: int) -> int:
    """Return the limbs per digit, ceil(limbs / dnum)."""
    return -(-limbs // dnum)


def cache_level(p: SimParams, machine: Machine, tech: Techniques) -> int:
    """Return the largest enabled cache level whose working set fits in the on-chip memory (Section 3.1).

    O(1): one limb (the paper's 1 MB). O(beta): one limb of each digit of both halves, 2 dnum limbs
    (the paper's 6 MB at dnum = 3). O(alpha): a base conversion done on chip needs its alpha + 1 input
    limbs in coefficient form (the digit, or the dropped limbs of ModDown) and the output limb being
    generated and transformed: alpha + 3 limbs with alpha = ceil((l + 1) / dnum). The paper's text quotes
    2 alpha + 3 MB (27 MB at l = 35, dnum = 3), i.e. double-buffered; SimFHE sizes it at alpha limbs. Keys:
    the O(alpha) set plus a whole relinearization key (SimFHE's 'huge' cache, used by EvalMod).
    """
    limbs_fit = machine.cache_bytes / p.limb_bytes
    a = alpha_of(p.limbs + 1, p.dnum)
    level = NONE
    if (tech.o1 or tech.beta or tech.alpha) and limbs_fit >= 1:
        level = O1
    if (tech.beta or tech.alpha) and limbs_fit >= 2 * p.dnum:
        level = BETA
    if tech.alpha and limbs_fit >= a + 3:
        level = ALPHA
        key_limbs = (1 if tech.compress else 2) * p.dnum * (p.limbs + alpha_of(p.limbs, p.dnum) + 1)
        if limbs_fit >= a + 3 + key_limbs:
            level = HUGE
    return level


def bsgs_iters(log_n: int, fft_iters: int) -> list[int]:
    """log2 radix of each of the fft_iters linear transforms of a DFT over N/2 slots (sums to log N - 1)."""
    base, extra = divmod(log_n - 1, fft_iters)
    res = [base] * fft_iters
    for i in range(extra):
        res[-1 - i] += 1
    return res


def eval_mod_limbs(poly_degree: int, double_angle: int) -> int:
    """Return the limbs EvalMod consumes: ceil(log2 poly_degree) + double_angle + 1."""
    return int(math.ceil(math.log2(poly_degree))) + double_angle + 1


class PaperModel:
    """Accumulates a Cost while the methods below walk through an operation."""

    def __init__(self, p: SimParams, machine: Machine = Machine(), tech: Techniques = Techniques(),
                 karatsuba: bool = True, fft_style: str | None = None):
        self.p, self.tech = p, tech
        self.N, self.log_n = p.n, p.log_n
        self.level = cache_level(p, machine, tech)
        self.reorder = tech.reorder and self.level >= ALPHA
        self.karatsuba = karatsuba
        self.fft_style = fft_style or ("unrolled_hoisted" if tech.hoist else "bsgs")
        if self.fft_style not in ("bsgs", "bsgs_hoisted", "unrolled_hoisted"):
            raise ValueError(f"fft_style must be bsgs, bsgs_hoisted or unrolled_hoisted, got {self.fft_style!r}")
        self.cost = Cost()
        self.stages: dict[str, Cost] = {}

    @property
    def level_name(self) -> str:
        """The name of the cache level that applies ("none", "O(1)", "O(beta)", "O(alpha)" or "keys")."""
        return LEVEL_NAMES[self.level]

    @contextmanager
    def stage(self, name: str):
        """Add what the cost grows by inside the ``with`` block to the stage `name`."""
        before = Cost() + self.cost
        yield
        diff = self.cost + before * -1
        self.stages[name] = self.stages.get(name, Cost()) + diff

    # ---- bookkeeping ------------------------------------------------------------------------
    def _rd(self, limbs: float):
        self.cost.ct_read += limbs * self.p.limb_bytes

    def _wr(self, limbs: float):
        self.cost.ct_write += limbs * self.p.limb_bytes

    def _key(self, limbs: float):
        self.cost.key_read += (1 if self.tech.compress else 2) * limbs * self.p.limb_bytes

    def _add(self, limbs: int, times: int = 1):
        self.cost.mod_add += times * self.N * limbs

    def _mul(self, limbs: int, times: int = 1):
        self.cost.mod_mul += times * self.N * limbs

    def _ntt(self, limbs: int):
        """Count `limbs` limb NTTs, forward or inverse: butterflies plus the on-the-fly twiddles.

        N products for the powers of psi, N/2 for the twiddles.
        """
        n = self.N
        self.cost.ntt += limbs
        self.cost.mod_mul += (n // 2 * self.log_n + n + n // 2) * limbs
        self.cost.mod_add += n * self.log_n * limbs

    def _alpha(self, limbs: int) -> int:
        return alpha_of(limbs, self.p.dnum)

    def key_limbs(self, limbs: int) -> int:
        """Limbs of the raised basis for an l-limb operand: l + alpha + 1."""
        return limbs + self._alpha(limbs) + 1

    @property
    def _limb_rdwr(self) -> bool:
        """No O(1) caching: every sub-operation reads its limbs and writes them back."""
        return self.level < O1

    @property
    def _reorder_rdwr(self) -> bool:
        return self._limb_rdwr or not self.reorder

    # ---- ciphertext element-wise operations ----------------------------------------------------
    def _stream(self, read: float, written: float, rd: bool, wr: bool):
        """DRAM traffic of an element-wise operation: `read` limbs in when rd, `written` limbs out when wr."""
        if rd:
            self._rd(read)
        if wr:
            self._wr(written)

    def ct_add(self, l, rd=False, wr=False):
        """Count a ciphertext addition over l limbs (rd: the inputs are read; wr: the result is written)."""
        self._add(l, 2)
        self._stream(4 * l, 2 * l, rd, wr)

    def ct_add_plain(self, l, rd=False, wr=False):
        """Count a ciphertext-plaintext addition over l limbs (rd / wr: DRAM reads / writes)."""
        self._add(l)
        self._stream(2 * l, l, rd, wr)

    def ct_mul_plain(self, l, rd=False, wr=False):
        """Count a ciphertext-plaintext product over l limbs (rd / wr: DRAM reads / writes)."""
        self._mul(l, 2)
        self._stream(3 * l, 2 * l, rd, wr)

    def ct_automorph(self, l, rd=False, wr=False):
        """Count an automorphism of a ciphertext over l limbs: traffic only (rd / wr: DRAM reads / writes)."""
        self._stream(2 * l, 2 * l, rd, wr)

    # ---- RNS building blocks (Algorithms 1-3) -----------------------------------------------------
    def decompose(self, l):
        """Count Decomp of l limbs: two products per coefficient."""
        self._mul(l, 2)

    def new_limbs(self, k, m):
        """NewLimb (Eq. 1) of m limbs from k."""
        self.cost.mod_add += self.N * k * m
        self.cost.mod_mul += self.N * k * (1 + m)

    def mod_up(self, l_in, l_key, rd=False, wr=False):
        """Algorithm 1 for one digit of l_in limbs into the l_key-limb raised basis."""
        delta = l_key - l_in
        if rd:
            self._rd(l_in)
        self._ntt(l_in)
        if self.level < ALPHA:  # limb-wise -> slot-wise through DRAM
            self._wr(l_in)
            self._rd(l_in)
        self.new_limbs(l_in, delta)
        if self.level < ALPHA:  # slot-wise -> limb-wise for the NTT of the new limbs
            self._wr(delta)
            self._rd(delta)
        self._ntt(delta)
        if wr:
            self._wr(delta)

    def _mod_down_reduce(self, l_key, l_out):
        dropped = l_key - l_out
        self._ntt(dropped)
        if self.level < ALPHA:
            self._wr(dropped)
            self._rd(dropped)
        self.new_limbs(dropped, l_out)
        if self.level < ALPHA:
            self._wr(l_out)
            self._rd(l_out)
        self._ntt(l_out)

    def mod_down(self, l_key, l_out, rd=False, wr=False):
        """Algorithm 2 for one polynomial: l_key limbs down to l_out."""
        if rd:
            self._rd(l_key - l_out)
        self._mod_down_reduce(l_key, l_out)
        if rd:
            self._rd(l_out)
        self._add(l_out)
        self._mul(l_out)
        if wr:
            self._wr(l_out)

    def rescale(self, l, rd=False, wr=False):
        """Rescale of one polynomial (ModDown by its last limb)."""
        if rd:
            self._rd(1)
        self._ntt(1)
        self._add(l - 1)
        self._mul(l - 1)
        self._ntt(l - 1)
        if rd:
            self._rd(l - 1)
        if wr:
            self._wr(l - 1)

    def ks_mod_up(self, l, l_key, rd=False, wr=True):
        """Decomp + ModUp of every digit (the hoistable half of key switching)."""
        a = self._alpha(l)
        if rd:
            self._rd(l)
        for _ in range(self.p.dnum):
            self.decompose(a)
            self.mod_up(a, l_key)
            if wr:
                self._wr(l_key - a)

    def ks_inner_product(self, l, l_key, rd=True, wr=False, key_cached=False):
        """Count the inner product of the raised digits with the switching key (key_cached: no key traffic)."""
        for i in range(self.p.dnum):
            if rd:
                self._rd(l_key)
            if not key_cached:
                self._key(l_key)
            self.ct_mul_plain(l_key)
            if i:
                self.ct_add(l_key)
        if wr:
            self._wr(2 * l_key)

    def ks_mod_down(self, l, l_key, down_rd, rd=False, wr=False):
        """Count ModDown of both inner-product polynomials, then the first one added to the operand's c0.

        down_rd: each ModDown reads its limbs; rd: c0 is read; wr: the results are written.
        """
        self.mod_down(l_key, l, rd=down_rd, wr=wr)
        self.mod_down(l_key, l, rd=down_rd, wr=False)
        if rd:
            self._rd(l)
        self._add(l)
        if wr:
            self._wr(l)

    def key_switch(self, l, l_key, rd=False, wr=False, key_cached=False):
        """Count a key switch of an l-limb polynomial over the l_key-limb raised basis."""
        self.ks_mod_up(l, l_key, rd=rd, wr=True)
        self.ks_inner_product(l, l_key, rd=True, wr=self._limb_rdwr, key_cached=key_cached)
        self.ks_mod_down(l, l_key, self._limb_rdwr, rd=rd, wr=wr)

    # ---- ciphertext operations -------------------------------------------------------------------
    def rotate(self, l, rd=False, wr=False):
        """Count a rotation (automorphism and key switch) of an l-limb ciphertext."""
        self.ct_automorph(l, rd=rd, wr=self._limb_rdwr)
        self.key_switch(l, self.key_limbs(l), rd=self._limb_rdwr, wr=wr)

    def rotate_digits(self, l, l_key, rd=True, wr=True):
        """One rotation of already raised digits (hoisted rotations)."""
        self.ks_inner_product(l, l_key, rd=rd, wr=True)
        self.ks_mod_down(l, l_key, True, rd=rd, wr=wr)

    def hoisted_rotations(self, l, rotations):
        """Count `rotations` rotations of one l-limb ciphertext sharing one Decomp + ModUp."""
        l_key = self.key_limbs(l)
        self.ks_mod_up(l, l_key)
        for _ in range(rotations):
            self.rotate_digits(l, l_key, rd=self.level < BETA)

    def _tensor_rest(self, l, sqr):
        """(a0 b1 + a1 b0, b0 b1) once a0 a1 is done; Karatsuba trades a product for three additions."""
        if sqr:
            self._mul(l, 2)
            self._add(l)
        elif self.karatsuba:
            self._mul(l, 2)
            self._add(l, 4)
        else:
            self._mul(l, 3)
            self._add(l)

    def multiply(self, l, sqr=False, rd=False, wr=False, key_cached=False):
        """Count Mult: tensor, key switch of a0 a1, Rescale.

        With `merge` the ModDown and Rescale become one ModDown by P q_l after adding PModUp(a0 b1 + a1 b0, b0 b1)
        in the raised basis (Fig. 4).
        """
        l_key = self.key_limbs(l)
        limb_rdwr, reorder_rdwr = self._limb_rdwr, self._reorder_rdwr
        inputs = 1 if sqr else 2
        if rd:
            self._rd(inputs * l)
        self._mul(l)
        if limb_rdwr:
            self._wr(l)
        self.ks_mod_up(l, l_key, rd=limb_rdwr, wr=True)
        self.ks_inner_product(l, l_key, rd=True, wr=limb_rdwr, key_cached=key_cached)
        if self.tech.merge:
            if rd:
                self._rd(2 * inputs * l)
            self._tensor_rest(l, sqr)
            self.ct_mul_plain(l)  # PModUp: times P mod q_i
            if limb_rdwr:
                self._rd(2 * l)
            self.ct_add(l, wr=reorder_rdwr)
            for _ in range(2):
                self.mod_down(l_key, l - 1, rd=reorder_rdwr, wr=wr)
        else:
            if not limb_rdwr and reorder_rdwr:
                self._wr(2 * l_key)  # the inner product leaves in an order ModDown cannot consume
            for _ in range(2):
                self.mod_down(l_key, l, rd=reorder_rdwr, wr=limb_rdwr)
            if rd:
                self._rd(2 * inputs * l)
            self._tensor_rest(l, sqr)
            if limb_rdwr:
                self._rd(2 * l)
            self.ct_add(l, wr=reorder_rdwr)
            for _ in range(2):
                self.rescale(l, rd=reorder_rdwr, wr=wr)

    def double_multiply(self, l, sqr=False, rd=True, wr=True, key_cached=False):
        """2 x y (Chebyshev recurrences)."""
        self.multiply(l, sqr=sqr, rd=rd, wr=False, key_cached=key_cached)
        self.ct_add(l - 1, wr=wr)

    # ---- linear transforms (PtMatVecMult) --------------------------------------------------------
    def _add_pmodup_b(self, l, pmodup, limb_rdwr):
        """Count a rotation kept in the raised basis: its b times P added to the inner product's first half.

        PModUp: b read and multiplied when `pmodup`; the first half is read and written back when limb_rdwr.
        """
        if pmodup:
            self._rd(l)
            self._mul(l)  # PModUp of b
        if limb_rdwr:
            self._rd(l)
        self._add(l)
        if limb_rdwr:
            self._wr(l)

    def _diagonal_sum(self, limbs, count, read, write):
        """Count the sum of `count` rotated ciphertexts times their plaintext diagonals, over `limbs` limbs.

        read: each rotation is read in; write: the sum is written out.
        """
        for idx in range(count):
            if read:
                self._rd(2 * limbs)
            self.ct_mul_plain(limbs)
            if idx:
                self.ct_add(limbs)
        if write:
            self._wr(2 * limbs)

    def lt_unrolled_hoisted(self, l, diagonals):
        """ModUp once, every rotation's inner product kept in the raised basis, ModDown twice (Fig. 5 c)."""
        l_key = self.key_limbs(l)
        limb_rdwr = self._limb_rdwr
        self.ks_mod_up(l, l_key, rd=True)
        for idx in range(diagonals - 1):
            self.ks_inner_product(l, l_key, rd=self.level < BETA or idx == 0, wr=limb_rdwr)
            self._add_pmodup_b(l, limb_rdwr or idx == 0, limb_rdwr)
        self._diagonal_sum(l_key, diagonals, read=limb_rdwr, write=limb_rdwr)
        for _ in range(2):
            self.mod_down(l_key, l - 1, rd=self._reorder_rdwr, wr=True)

    def _bsgs_split(self, diagonals, giant):
        giant = giant or int(math.isqrt(diagonals))
        baby = -(-diagonals // giant)
        return baby, giant

    def lt_bsgs(self, l, diagonals, giant=0):
        """Baby-step giant-step with hoisted baby steps, a full Rotate per giant step (Jung et al.)."""
        baby, giant = self._bsgs_split(diagonals, giant)
        l_key = self.key_limbs(l)
        limb_rdwr = self._limb_rdwr
        self.ks_mod_up(l, l_key, rd=True)
        for idx in range(baby - 1):
            self.rotate_digits(l, l_key, rd=self.level < BETA or idx == 0)
        lo = -(diagonals // 2)
        for start in range(lo, lo + diagonals, baby):
            self._diagonal_sum(l, min(lo + diagonals - start, baby), read=True, write=limb_rdwr)
            if not start <= 0 < start + baby:
                self.rotate(l, rd=limb_rdwr, wr=limb_rdwr)
            if limb_rdwr:
                self._rd(2 * l)
            self._rd(2 * l)
            self.ct_add(l, wr=True)
        for _ in range(2):
            self.rescale(l, rd=True, wr=True)

    def lt_bsgs_hoisted(self, l, diagonals, giant=0):
        """Lattigo's double hoisting: baby steps and giant-step sums stay in the raised basis."""
        baby, giant = self._bsgs_split(diagonals, giant)
        l_key = self.key_limbs(l)
        gs = l - 1
        limb_rdwr, reorder_rdwr = self._limb_rdwr, self._reorder_rdwr
        self.ks_mod_up(l, l_key, rd=True)
        for idx in range(baby - 1):
            self.ks_inner_product(l, l_key, rd=self.level < BETA or idx == 0)
            if limb_rdwr or giant > 1:
                self._wr(l_key)
            if limb_rdwr:
                self._wr(l_key)
            self._add_pmodup_b(l, limb_rdwr or idx == 0, limb_rdwr)
        lo = -(diagonals // 2)
        for start in range(lo, lo + diagonals, baby):
            self._diagonal_sum(l_key, min(lo + diagonals - start, baby), read=limb_rdwr or start != lo,
                               write=limb_rdwr)
            if giant > 1:
                for _ in range(2):
                    self.mod_down(l_key, gs, rd=reorder_rdwr, wr=True)
                if start <= 0 < start + baby:
                    self.ct_mul_plain(gs)
                else:
                    self.ks_mod_up(gs, l_key, rd=True)
                    self.ks_inner_product(gs, l_key)
                    self._rd(gs)
                    self._mul(gs)
                    self._add(gs)
                if start != lo:
                    self._rd(2 * l_key)
                    self.ct_add(l_key)
                self._wr(2 * l_key)
        for _ in range(2):
            self.mod_down(l_key, gs, rd=reorder_rdwr, wr=True)

    def linear_transform(self, l, diagonals, giant=0):
        """Count a linear transform of `diagonals` diagonals on l limbs by the model's fft_style."""
        if self.fft_style == "unrolled_hoisted":
            self.lt_unrolled_hoisted(l, diagonals)
        elif self.fft_style == "bsgs_hoisted":
            self.lt_bsgs_hoisted(l, diagonals, giant)
        else:
            self.lt_bsgs(l, diagonals, giant)

    def dft(self, l):
        """fft_iters linear transforms of 2^(r+1) - 1 diagonals each, one level each."""
        for r in bsgs_iters(self.log_n, self.p.fft_iters):
            self.linear_transform(l, 2 ** (r + 1) - 1)
            l -= 1
        return l

    # ---- EvalMod: Chebyshev polynomial by baby-step giant-step, then double-angle squarings --------
    def _key_cached(self):
        return self.level >= HUGE

    def _baby_steps(self, l, m, ell):
        top = 2 ** ell
        reached, level = 1, 1
        while reached < top:
            reach = min(2 ** level, top)
            for i in range(reached, reach):
                self.double_multiply(l, sqr=(i + 1) % 2 == 0, key_cached=self._key_cached())
            red = l - 1
            for _ in range(reached):  # bring the earlier T_i down a level
                self._rd(2 * l)
                self.ct_mul_plain(l)
                self.rescale(l)
                self._wr(2 * red)
            for i in range(reached, reach):  # T_{m+n} = 2 T_m T_n - T_{|m-n|}
                self._rd(2 * red)
                if (i + 1) % 2:
                    self.ct_add_plain(red)
                else:
                    self.ct_add(red)
                self._wr(2 * red)
            reached, level, l = reach, level + 1, red
        return l

    def _giant_steps(self, l, m, ell):
        g = l - 1
        cur = 2 ** ell
        while cur < 2 ** (m - 1):
            self.double_multiply(g, sqr=True, key_cached=self._key_cached())
            g -= 1
            self.ct_add_plain(g)
            cur *= 2

    def _leaves(self, l, m, ell):
        for _ in range(2 ** (m - ell)):
            for i in range(2 ** ell):
                self._rd(2 * l)
                self.ct_mul_plain(l)
                if i == 0:
                    self.ct_add_plain(l)
                else:
                    self.ct_add(l)
            self.rescale(l)
            self._wr(2 * (l - 1))
        return l - 1

    def _tree(self, l, m, ell):
        for i in range(m - ell - 1, -1, -1):
            for _ in range(2 ** i):
                self.multiply(l, key_cached=self._key_cached())
                red = l - 1
                self._rd(2 * l)
                self.ct_mul_plain(l)
                self.rescale(l)
                self.ct_add(red)
                self._wr(2 * red)
            l -= 1
        return l

    def eval_mod(self, l):
        """Polynomial evaluation of degree p.poly_degree then p.double_angle squarings; returns the limbs left."""
        d, r = self.p.poly_degree, self.p.double_angle
        m = int(math.ceil(math.log2(d + 1)))
        ell = m // 2
        start = l
        l = self._baby_steps(l, m, ell)
        self._giant_steps(l, m, ell)
        l = self._leaves(l, m, ell)
        l = self._tree(l, m, ell)
        for _ in range(r):
            self.double_multiply(l, sqr=True, key_cached=self._key_cached())
            self.ct_add_plain(l)
            l -= 1
        assert l == start - eval_mod_limbs(d, r), (l, start)
        return l

    # ---- bootstrapping (Algorithm 4) -------------------------------------------------------------
    def bootstrap(self):
        """Count a bootstrapping from p.limbs limbs (CoeffToSlot, EvalMod, SlotToCoeff stages); return the cost.

        Raises
        ------
        ValueError
            If the limbs do not suffice for the DFTs and EvalMod.
        """
        p = self.p
        top = p.limbs
        cts = top - p.fft_iters
        if cts - eval_mod_limbs(p.poly_degree, p.double_angle) < 1:
            raise ValueError(f"bootstrapping needs more than {top} limbs: {p.fft_iters} per DFT and "
                             f"{eval_mod_limbs(p.poly_degree, p.double_angle)} for EvalMod")
        with self.stage("CoeffToSlot"):
            l = self.dft(top)
            # conjugate and add / subtract: real and imaginary parts into two ciphertexts
            self._rd(2 * l)
            self.rotate(l)
            self._rd(2 * l)
            self.ct_add(l)
            self.ct_add(l)
            self._wr(2 * l)
        with self.stage("EvalMod"):
            if self.level >= HUGE:
                self._key(self.key_limbs(cts))
            for _ in range(2):
                out = self.eval_mod(cts)
            self._wr(4 * out)
        with self.stage("SlotToCoeff"):
            self.ct_add(out)
            self.dft(out)
        return self.cost


# Operation names: the columns of Table 4 and the composite operations.
OPS = ("PtAdd", "Add", "PtMult", "Mult", "Decomp", "ModUp", "KSKInnerProd", "ModDown", "Rescale",
       "Automorph", "Rotate", "Conjugate", "HoistedRotate", "LinearTransform", "PolyEval", "Bootstrap")


def run_op(op: str, p: SimParams, machine: Machine = Machine(), tech: Techniques = Techniques(),
           rotations: int = 8, diagonals: int = 0, fft_style: str | None = None) -> PaperModel:
    """Walk one operation at the operand's limbs p.ell (Bootstrap: from p.limbs) and return the model."""
    m = PaperModel(p, machine, tech, fft_style=fft_style)
    l = p.ell
    l_key = m.key_limbs(l)
    a = alpha_of(l, p.dnum)
    if op == "PtAdd":
        m.ct_add_plain(l, rd=True, wr=True)
    elif op == "Add":
        m.ct_add(l, rd=True, wr=True)
    elif op == "PtMult":
        m.ct_mul_plain(l, rd=True, wr=True)
        m.rescale(l, rd=True, wr=True)
        m.rescale(l, rd=True, wr=True)
    elif op == "Mult":
        m.multiply(l, rd=True, wr=True)
    elif op == "Decomp":
        m._rd(l)
        m.decompose(l)
        m._wr(l)
    elif op == "ModUp":
        m.mod_up(a, l_key, rd=True, wr=True)
    elif op == "KSKInnerProd":
        m.ks_inner_product(l, l_key, rd=True)
    elif op == "ModDown":
        m.mod_down(l_key, l, rd=True, wr=True)
    elif op == "Rescale":
        m.rescale(l, rd=True, wr=True)
        m.rescale(l, rd=True, wr=True)
    elif op == "Automorph":
        m.ct_automorph(l, rd=True, wr=True)
    elif op in ("Rotate", "Conjugate"):
        m.rotate(l, rd=True, wr=True)
    elif op == "HoistedRotate":
        m.hoisted_rotations(l, rotations)
    elif op == "LinearTransform":
        m.linear_transform(l, diagonals or 2 ** (bsgs_iters(p.log_n, p.fft_iters)[0] + 1) - 1)
    elif op == "PolyEval":
        m.eval_mod(l)
    elif op == "Bootstrap":
        m.bootstrap()
    else:
        raise ValueError(f"unknown operation {op!r}; choose from {', '.join(OPS)}")
    return m
