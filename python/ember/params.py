"""CKKS parameter sets."""
from __future__ import annotations

from . import _ember


class CkksParams:
    """A CKKS parameter set, validated on construction.

    Args:
        log_n: ring dimension N = 2**log_n (N/2 complex slots).
        levels: multiplicative depth L; Q has L + 1 primes.
        log_scale: the scale is 2**log_scale; the rescaling primes are chosen next to it.
        first_mod_bits: bits of q_0, the prime left after the last rescale.
        dnum: digits of hybrid key switching (alpha = ceil((L+1)/dnum) primes per digit). The special
            primes P follow from it: the fewest 60-bit primes with log P >= the largest digit + 16 bits.
        secret: "ternary" (uniform in {-1, 0, 1}) or "hamming" (exactly `hamming_weight` nonzeros).
        hamming_weight: weight of a "hamming" secret.
        sigma: standard deviation of the error distribution.
        insecure: allow a parameter set above the 128-bit HE-standard bound on log2(QP).

    Raises ValueError (naming the parameter and the bound) for invalid or insecure sets.
    """

    def __init__(self, log_n: int = 16, levels: int = 24, log_scale: int = 50, first_mod_bits: int = 60,
                 dnum: int = 3, secret: str = "ternary", hamming_weight: int = 0, sigma: float = 3.2,
                 insecure: bool = False, special_mod_bits: int = 0):
        p = _ember.ParamsCore()
        p.log_n, p.levels, p.log_scale, p.first_mod_bits, p.dnum = log_n, levels, log_scale, first_mod_bits, dnum
        if secret not in ("ternary", "hamming"):
            raise ValueError(f"CkksParams: secret must be 'ternary' or 'hamming', got {secret!r}")
        p.secret = _ember.SecretDist.ternary if secret == "ternary" else _ember.SecretDist.hamming
        p.hamming_weight, p.sigma, p.insecure, p.special_mod_bits = hamming_weight, sigma, insecure, special_mod_bits
        p.finalize()
        self._core = p

    def __getattr__(self, name):
        return getattr(self._core, name)

    @property
    def secret(self) -> str:
        return "ternary" if self._core.secret == _ember.SecretDist.ternary else "hamming"

    def to_dict(self) -> dict:
        c = self._core
        return dict(log_n=c.log_n, levels=c.levels, log_scale=c.log_scale, first_mod_bits=c.first_mod_bits,
                    dnum=c.dnum, special_primes=len(c.p_primes), log_qp=round(c.log_qp, 1), secret=self.secret)

    def __repr__(self) -> str:
        return repr(self._core)
