"""Trace counters count exactly what the algorithms do (the simulator is validated against them)."""
import numpy as np

import ember


def digit_sizes(q_count: int, dnum: int, level_limbs: int):
    alpha = -(-q_count // dnum)
    sizes = []
    for j in range(dnum):
        last, first = q_count - min(q_count, j * alpha), q_count - min(q_count, (j + 1) * alpha)
        last = min(last, level_limbs)
        if last > first:
            sizes.append(last - first)
    return sizes


def test_mul_ntt_counts_match_the_algorithm(small):
    ctx, keys = small
    p = ctx.params
    ct = ctx.encrypt(np.zeros(ctx.slots), keys.public)
    ql, k, n = ct.level + 1, len(p.p_primes), 2 ** p.log_n
    with ember.trace() as t:
        ctx.multiply(ct, ct, merged=True)
    c = t.counts
    digits = digit_sizes(len(p.q_primes), p.dnum, ql)
    # ModUp: every limb to coefficient form once, then NTT of the new limbs of each digit.
    # ModDown merged with Rescale (x2 polynomials): iNTT of the K + 1 dropped limbs, NTT of the ql - 1 kept.
    fwd = sum(ql - d + k for d in digits) + 2 * (ql - 1)
    inv = ql + 2 * (k + 1)
    assert c["ntt_forward"]["ntt"] == fwd
    assert c["ntt_inverse"]["ntt"] == inv
    log_n = p.log_n
    assert c["ntt_forward"]["mod_mul"] == fwd * n // 2 * log_n
    # the N^-1 factor: merged into the last stage on every path (N/2 products: one per butterfly of that stage)
    scaling = n // 2
    assert c["ntt_inverse"]["mod_mul"] == inv * (n // 2 * log_n + scaling)
    # Tensor: 4 products (c0 c0' and c1 c1' as products, c0 c1' + c1 c0' as a two-term dot); KSKInnerProd: one
    # product per digit over ql + K limbs, for both halves of the key (one dot2).
    assert c["mul"]["mod_mul"] == 2 * ql * n
    assert "mul_add" not in c
    assert c["dot"]["mod_mul"] == 2 * ql * n + 2 * len(digits) * (ql + k) * n
    assert c["dot"]["calls"] == 2
    # Base conversion: ModUp (k_in = digit, m_out = ql - d + K) and the two ModDowns (K + 1 -> ql - 1).
    bc = sum(d * n + d * (ql - d + k) * n for d in digits)
    assert c["base_convert"]["mod_mul"] == bc
    kk, mm = k + 1, ql - 1
    assert c["base_convert_centered"]["mod_mul"] == 2 * (kk * n + kk * mm * n + mm * n)
    assert all(v["ns"] > 0 and v["calls"] > 0 for v in c.values())


def test_trace_off_counts_nothing(small):
    ctx, keys = small
    ct = ctx.encrypt(np.zeros(4), keys.public)
    with ember.trace() as t:
        pass
    ct * ct
    assert t.counts == {}
