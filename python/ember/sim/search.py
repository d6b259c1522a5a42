"""Parameter search (001, Section 4.2): maximize the bootstrapping throughput of Eq. 3 on a given machine.

Brute force over log N, word size, dnum, DFT levels and limbs under the 128-bit bound.

A candidate: prime (and stored word) size w bits, L limbs after ModRaise, dnum digits. Its raised basis
holds L + ceil(L / dnum) + 1 limbs (the paper accounting's alpha + 1 special limbs), and
(L + ceil(L / dnum) + 1) w <= the 128-bit bound on log QP for N. Bootstrapping uses fft_iters limbs per DFT
and ceil(log2 d) + r + 1 for EvalMod; the rest, L - 2 fft_iters - EvalMod, is log Q1 = fresh limbs x w.
The time is the roofline of the paper accounting's bootstrapping with the given techniques.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from . import paper
from .cost import Machine, SimParams, Techniques
from .devices import Profile, asic
from .timing import aggregate, throughput

# The HE standard's 128-bit bounds (ternary secret), as cpp/ckks/params.cpp has them; used when the
# compiled library is not importable.
_HE_STANDARD = {10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881, 16: 1747, 17: 3523}
# SimFHE's bounds for a sparse secret of Hamming weight 192 (what Table 5 of 001 was searched under).
SPARSE_192 = {16: 1533, 17: 3069}


def max_log_qp_128(log_n: int) -> int:
    """Return the 128-bit bound on log QP at ring degree 2^log_n.

    The compiled library's bound when it is importable, else the HE standard's (0 for a log N it lacks).
    """
    try:
        from .. import max_log_qp_128 as lib
        return int(lib(log_n))
    except Exception:  # noqa: BLE001 - the simulator runs without the compiled library
        return _HE_STANDARD.get(log_n, 0)


def search(cache_mb: float = 32, device: Optional[Profile] = None, log_ns: Iterable[int] = (16, 17),
           word_bits: Iterable[int] = (40, 45, 50, 54, 60), dnums: Iterable[int] = range(1, 7),
           fft_iters: Iterable[int] = range(2, 9), tech: Techniques | str = "all", poly_degree: int = 63,
           double_angle: int = 2, precision_bits: float = 19, bound: Optional[Callable[[int], int]] = None,
           limbs: str = "all") -> list[dict]:
    """Return every feasible candidate with its time and throughput, best first.

    Parameters
    ----------
    cache_mb : float, optional
        On-chip memory in MiB (default 32).
    device : Profile, optional
        The device (default: the MAD ASIC of 001's Table 6 with `cache_mb`).
    log_ns : iterable of int, optional
        log N values to try (default 16, 17).
    word_bits : iterable of int, optional
        Prime (and stored word) sizes to try (default 40, 45, 50, 54, 60).
    dnums : iterable of int, optional
        dnum values to try (default 1..6).
    fft_iters : iterable of int, optional
        DFT levels to try (default 2..8).
    tech : Techniques or str, optional
        The techniques (default "all").
    poly_degree : int, optional
        Degree of EvalMod's polynomial (default 63).
    double_angle : int, optional
        EvalMod's squarings (default 2).
    precision_bits : float, optional
        Bits of precision after bootstrapping in Eq. 3 (default 19).
    bound : callable, optional
        ``bound(log_n) -> max log QP`` (default :func:`max_log_qp_128`; SPARSE_192 for Table 5's bound).
    limbs : {"all", "max"}, optional
        "all" (the default) tries every feasible L; "max" only the largest L the bound allows for each
        (log N, w, dnum).

    Returns
    -------
    list of dict
        One record per candidate (parameters, log Q1, log QP, gops, dram_gb, time_ms, bound, throughput in
        1e7 bits / s), highest throughput first.
    """
    device = device or asic("asic", 2250, 900e9, cache_mb, "[001] Table 6")
    tech = Techniques.parse(tech) if isinstance(tech, str) else tech
    bound = bound or max_log_qp_128
    machine = Machine.mb(cache_mb)
    es = paper.eval_mod_limbs(poly_degree, double_angle)
    out = []
    for log_n in log_ns:
        qp_bits = bound(log_n)
        for w in word_bits:
            max_raised = qp_bits // w
            for dnum in dnums:
                l_max = 0
                for L in range(1, max_raised + 1):
                    if L + -(-L // dnum) + 1 <= max_raised:
                        l_max = L
                for fi in fft_iters:
                    if fi > log_n - 1:
                        continue
                    l_min = 2 * fi + es + 1
                    if l_max < l_min:
                        continue
                    for L in (range(max(l_min, dnum), l_max + 1) if limbs == "all" else [l_max]):
                        p = SimParams(log_n=log_n, limbs=L, dnum=dnum, word_bits=w, prime_bits=w, fft_iters=fi,
                                      poly_degree=poly_degree, double_angle=double_angle)
                        cost = paper.run_op("Bootstrap", p, machine, tech).cost
                        t = aggregate(cost, device)
                        fresh = L - 2 * fi - es
                        thr = throughput(p.slots, fresh * w, precision_bits, t["time_ms"] / 1e3)
                        out.append(dict(op="search", log_n=log_n, word_bits=w, limbs=L, dnum=dnum, fft_iters=fi,
                                        fresh_limbs=fresh, log_q1=fresh * w,
                                        log_qp=(L + -(-L // dnum) + 1) * w, max_log_qp=qp_bits,
                                        gops=round(cost.ops / 1e9, 4), mults=int(cost.mod_mul),
                                        dram_gb=round(cost.dram / 1e9, 4), time_ms=round(t["time_ms"], 4),
                                        bound=t["bound"], throughput=round(thr / 1e7, 2), cache_mb=cache_mb,
                                        device=device.name))
    out.sort(key=lambda r: -r["throughput"])
    return out
