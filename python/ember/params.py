"""CKKS parameter sets."""
from __future__ import annotations

from typing import Optional

from . import _ember


def digit_partition(q_count: int, dnum: int) -> list[tuple[int, int]]:
    """Return the key-switching digits of a chain of q_count primes.

    The digits are [first, last) prime ranges of dnum digits of alpha = ceil(q_count / dnum) primes, cut from the
    top of the chain as cpp/ckks/key_switch.cpp does (the last digit may be shorter, or absent). The one definition
    the simulator (ember.sim) and the graph layer (ember.graph.split_hoisted) use.

    Parameters
    ----------
    q_count : int
        Primes of the chain (levels + 1).
    dnum : int
        Digits of the switching keys.

    Returns
    -------
    list of (int, int)
        Each digit's prime range, from the top of the chain down.
    """
    alpha = -(-q_count // dnum)
    out = []
    for j in range(dnum):
        last, first = q_count - min(q_count, j * alpha), q_count - min(q_count, (j + 1) * alpha)
        if last > first:
            out.append((first, last))
    return out


class CkksParams:
    """A CKKS parameter set, validated on construction.

    The prime chain and the special primes are generated on construction; the set is immutable (assigning an
    attribute raises AttributeError). Attributes of the native parameter set (``n``, ``slots``, ``q_primes``,
    ``p_primes``, ``log_qp``, ``boot_bits``, ...) are readable on it.

    Parameters
    ----------
    log_n : int, optional
        Ring dimension N = 2**log_n (N/2 complex slots), in [3, 17]; below 10 only with `insecure`. Default 16.
    levels : int, optional
        Multiplicative depth L, in [0, 100]; Q has L + 1 primes. Default 24.
    log_scale : int, optional
        The scale is 2**log_scale (bits, in [20, 60]); the rescaling primes are chosen next to it. Default 50.
    first_mod_bits : int, optional
        Bits of q_0, the prime left after the last rescale, in [log_scale, 61]. Default 60.
    dnum : int, optional
        Digits of hybrid key switching (alpha = ceil((L+1)/dnum) primes per digit), in [1, L + 1]. The special
        primes P follow from it: the fewest primes with log P >= the largest digit + 16 bits. Default 3.
    secret : {"ternary", "sparse"}, optional
        "ternary" (uniform in {-1, 0, 1}; the default) or "sparse" (exactly `hamming_weight` nonzeros; "hamming"
        is accepted as another name for it).
    hamming_weight : int, optional
        Weight of a "sparse" secret, in [1, N] (below 64 only with `insecure`); ignored for "ternary".
    sigma : float, optional
        Standard deviation of the error distribution, in (0, 100). Default 3.2.
    insecure : bool, optional
        Allow a parameter set above the 128-bit HE-standard bound on log2(QP) (or without a known bound).
        Default False.
    special_mod_bits : int, optional
        Bits of each special prime: 0 (the default) for 60, else in [20, 61].
    ks_margin_bits : int, optional
        Bits by which the special modulus P exceeds the largest key-switching digit, in [0, 60] (default 16). The
        special primes are the fewest with log2(P) >= that digit's bits + this margin; the key-switching error
        scales with digit / P. A margin of 0 with 61-bit special primes gives one special prime per 60-bit digit,
        as SEAL's default modulus chains do (more key-switching noise, a smaller log2(QP)).

    Raises
    ------
    ValueError
        For invalid or insecure sets, naming the parameter and the bound.
    """

    def __init__(self, log_n: int = 16, levels: int = 24, log_scale: int = 50, first_mod_bits: int = 60,
                 dnum: int = 3, secret: str = "ternary", hamming_weight: int = 0, sigma: float = 3.2,
                 insecure: bool = False, special_mod_bits: int = 0, ks_margin_bits: int = 16):
        p = _ember.ParamsCore()
        p.log_n, p.levels, p.log_scale, p.first_mod_bits, p.dnum = log_n, levels, log_scale, first_mod_bits, dnum
        if secret not in ("ternary", "sparse", "hamming"):
            raise ValueError(f"CkksParams: secret must be 'ternary' or 'sparse' ('hamming' is another name for "
                             f"'sparse'), got {secret!r}")
        p.secret = _ember.SecretDist.ternary if secret == "ternary" else _ember.SecretDist.hamming
        p.hamming_weight, p.sigma, p.insecure, p.special_mod_bits = hamming_weight, sigma, insecure, special_mod_bits
        p.ks_margin_bits = ks_margin_bits
        p.finalize()
        object.__setattr__(self, "_core", p)
        object.__setattr__(self, "_recipe", dict(
            kind="ckks", log_n=log_n, levels=levels, log_scale=log_scale, first_mod_bits=first_mod_bits, dnum=dnum,
            secret=secret, hamming_weight=hamming_weight, sigma=sigma, insecure=insecure,
            special_mod_bits=special_mod_bits, ks_margin_bits=ks_margin_bits))

    bootstrap_config = None  # an _ember.BootstrapConfigCore for sets made by bootstrappable()

    def __setattr__(self, name, value):
        """Refuse every assignment: the set is immutable (AttributeError)."""
        # Immutable: a Context copies nothing back, so an assignment after construction would be ignored.
        raise AttributeError(f"CkksParams is immutable: cannot set {name!r}; make a new set, e.g. CkksParams({name}=..., ...)")

    def __delattr__(self, name):
        """Refuse every deletion: the set is immutable (AttributeError)."""
        raise AttributeError(f"CkksParams is immutable: cannot delete {name!r}")

    @classmethod
    def bootstrappable(cls, log_n: int = 16, levels: int = 9, log_scale: int = 44, slots: Optional[int] = None,
                       secret: str = "ternary", hamming_weight: int = 192, dnum: int = 0, cts_levels: int = 3,
                       stc_levels: int = 3, insecure: bool = False, cts_bits: int = 56, stc_bits: int = 50,
                       special_bits: int = 52, first_mod_bits: int = 60, **options) -> "CkksParams":
        """Make a parameter set with bootstrapping levels on top of `levels` computation levels.

        Ciphertexts are encrypted at level `levels` and ctx.bootstrap() returns them there, on the scale
        2**log_scale (44 by default: at N = 2^16 a rescale's rounding alone limits a 2^40 ciphertext to ~24
        bits). Above it sit SlotToCoeff (`stc_levels`, 50-bit primes), EvalMod (60-bit primes: a
        Chebyshev sine and an arcsine interpolant) and CoeffToSlot (`cts_levels`, 56-bit); the special primes
        are `special_bits` (52) bits, which keeps the default within the 128-bit bound at dnum = 6.

        Precision: the default guarantees >= 25 bits at N = 2^16 for every input whose slots have real and
        imaginary parts in [-1, 1] (message coefficients up to `input_bound` = sqrt(2) times the scale);
        inputs beyond leave EvalMod's interval and come back wrong.

        Parameters
        ----------
        log_n : int, optional
            Ring dimension N = 2**log_n. Default 16.
        levels : int, optional
            Computation levels left after bootstrapping (the level of fresh ciphertexts). Default 9.
        log_scale : int, optional
            Bits of the scale of fresh ciphertexts and bootstrapping outputs. Default 44.
        slots : int, optional
            Slots bootstrapped (a power of two up to N/2; default N/2).
        secret : {"ternary", "sparse"}, optional
            "ternary" (uniform, the HE-standard 128-bit bound on log QP applies; the default) or "sparse"
            (Hamming weight `hamming_weight`; a 128-bit estimate is known only for log_n = 16,
            h >= 192, log QP <= 1550, after Lattigo's N16QP1546H192 set); "hamming" is another name for "sparse".
        hamming_weight : int, optional
            Weight of a "sparse" secret (default 192); ignored for "ternary".
        dnum : int, optional
            Key-switching digits; 0 (the default) picks the smallest within the security bound.
        cts_levels : int, optional
            Levels of CoeffToSlot. Default 3.
        stc_levels : int, optional
            Levels of SlotToCoeff. Default 3.
        insecure : bool, optional
            Allow a set above the 128-bit bound (or without a known bound). Default False.
        cts_bits : int, optional
            Bits of the CoeffToSlot primes. Default 56.
        stc_bits : int, optional
            Bits of the SlotToCoeff primes. Default 50.
        special_bits : int, optional
            Bits of the special primes. Default 52.
        first_mod_bits : int, optional
            Bits of q0 (60). The level-0 input's scale must stay below q0 / 2^R, so
            iterative bootstrapping to 40+ bits wants first_mod_bits=61 with log_scale=57.
        **options
            BootstrapConfig fields: k_range, cheb_degree (0: automatic, the lowest degree of depth 7
            within 0.05 bit of degree 127's EvalMod error), double_angles, message_ratio_bits (0: automatic,
            the R with the smallest modelled worst-case error for ``|coefficients| <= input_bound``),
            input_bound (default sqrt(2)), arcsin, arcsin_degree (odd, default 13),
            ephemeral_weight (sparse-secret encapsulation, 0 = off), encaps_digit_bits,
            merged_moddown, hoisted_moddown, depth_optimal (the MAD options).

        Returns
        -------
        CkksParams
            The set, with its ``bootstrap_config`` (the resolved BootstrapConfig) for Context.bootstrapper().

        Raises
        ------
        ValueError
            For an unknown option, a secret other than "ternary" or "sparse", or an invalid or insecure set.
        """
        cfg = _ember.BootstrapConfigCore()
        cfg.slots = 0 if slots is None else int(slots)
        cfg.cts_levels, cfg.stc_levels = int(cts_levels), int(stc_levels)
        for k, v in options.items():
            if not hasattr(cfg, k) or k.startswith("_") or callable(getattr(cfg, k)):
                raise ValueError(f"CkksParams.bootstrappable: unknown option {k!r}")
            setattr(cfg, k, v)
        cfg = cfg.resolved(int(log_n))  # the automatic message ratio for this slot count
        if secret not in ("ternary", "sparse", "hamming"):
            raise ValueError(f"CkksParams.bootstrappable: secret must be 'ternary' or 'sparse' ('hamming' is another "
                             f"name for 'sparse'), got {secret!r}")
        core = _ember.bootstrappable_params(int(log_n), int(levels), int(log_scale), cfg, dnum=int(dnum),
                                            stc_bits=int(stc_bits), cts_bits=int(cts_bits), insecure=bool(insecure),
                                            special_bits=int(special_bits), first_mod_bits=int(first_mod_bits),
                                            hamming_weight=int(hamming_weight) if secret != "ternary" else 0)
        self = cls.__new__(cls)
        object.__setattr__(self, "_core", core)
        object.__setattr__(self, "bootstrap_config", cfg)
        object.__setattr__(self, "_recipe", dict(
            kind="bootstrappable", log_n=log_n, levels=levels, log_scale=log_scale, slots=slots, secret=secret,
            hamming_weight=hamming_weight, dnum=dnum, cts_levels=cts_levels, stc_levels=stc_levels,
            insecure=insecure, cts_bits=cts_bits, stc_bits=stc_bits, special_bits=special_bits,
            first_mod_bits=first_mod_bits, **options))
        return self

    @classmethod
    def max_secure_levels(cls, log_n: int, log_scale: int = 50, first_mod_bits: int = 60, dnum: int = 3,
                          limit: int = 256) -> int:
        """Return the most levels a parameter set with these other parameters has within the 128-bit bound.

        Defaults that depend on the ring follow from it (``ember bench``, ``ember bench dist``, ``ember profile``):
        at N = 2^16, 50-bit scale and dnum 3 it is 24, at N = 2^14 only 4.

        Parameters
        ----------
        log_n : int
            log2 of the ring degree.
        log_scale, first_mod_bits, dnum : int, optional
            As in the constructor (ternary secret); defaults 50, 60 and 3.
        limit : int, optional
            The largest number of levels tried. Default 256.

        Returns
        -------
        int
            The largest L such that CkksParams(log_n, L, ...) is accepted without ``insecure``; 0 if none is (then
            every choice of levels needs insecure=True or a larger ring).
        """
        bound = _ember.max_log_qp_128(int(log_n))
        best = 0
        for levels in range(1, limit + 1):
            try:
                p = cls(log_n=log_n, levels=levels, log_scale=log_scale, first_mod_bits=first_mod_bits, dnum=dnum,
                        insecure=True)
            except ValueError:
                continue        # e.g. more digits than primes: a few more levels may be valid
            if p._core.log_qp > bound:
                break
            best = levels
        return best

    def recipe(self) -> dict:
        """Return the constructor call that makes this set, as plain JSON-able data.

        CkksParams.from_recipe() rebuilds it: how another process (a worker) makes the same parameters.

        Returns
        -------
        dict
            ``kind`` ("ckks" for the constructor, "bootstrappable" for CkksParams.bootstrappable) and the
            arguments of that call (a copy).
        """
        return dict(self._recipe)

    @classmethod
    def from_recipe(cls, recipe: dict) -> "CkksParams":
        """Rebuild the parameter set described by recipe().

        Parameters
        ----------
        recipe : dict
            A dictionary returned by recipe() (possibly after a JSON round trip).

        Returns
        -------
        CkksParams
            The same parameter set, validated again.

        Raises
        ------
        ValueError
            For anything that is not a recipe, or one with unknown arguments, or an invalid set.
        """
        if not isinstance(recipe, dict) or recipe.get("kind") not in ("ckks", "bootstrappable"):
            raise ValueError(f"not a CkksParams recipe: {recipe!r}")
        kw = {k: v for k, v in recipe.items() if k != "kind"}
        try:
            return cls.bootstrappable(**kw) if recipe["kind"] == "bootstrappable" else cls(**kw)
        except TypeError as e:
            raise ValueError(f"bad CkksParams recipe: {e}") from None

    def __reduce__(self):
        """Pickle the set as its recipe (rebuilt by from_recipe on load)."""
        # pickled as its recipe (the binding's ParamsCore does not pickle): a fitted estimator holding its
        # parameters pickles, and the copy is the same set (validated again on load)
        return (type(self).from_recipe, (self.recipe(),))

    def __getattr__(self, name):
        """Read the attributes of the native parameter set (n, slots, q_primes, p_primes, log_qp, ...)."""
        if name == "_core":
            raise AttributeError(name)
        return getattr(self._core, name)

    @property
    def secret(self) -> str:
        """The secret distribution: "ternary" or "sparse" (weight ``hamming_weight``; also when made as "hamming")."""
        return "ternary" if self._core.secret == _ember.SecretDist.ternary else "sparse"

    def to_dict(self) -> dict:
        """Summarise the set for records and reports.

        Returns
        -------
        dict
            log_n, levels, log_scale, first_mod_bits, dnum, special_primes (their count), log_qp (bits, rounded to
            0.1), secret, and bootstrapping_levels for a bootstrappable set. Not a recipe: from_recipe does not
            take it.
        """
        c = self._core
        d = dict(log_n=c.log_n, levels=c.levels, log_scale=c.log_scale, first_mod_bits=c.first_mod_bits,
                 dnum=c.dnum, special_primes=len(c.p_primes), log_qp=round(c.log_qp, 1), secret=self.secret)
        if c.boot_bits:
            d["bootstrapping_levels"] = len(c.boot_bits)
        return d

    def __repr__(self) -> str:
        """Return the native set's description: its parameters, special-prime count and log2(QP)."""
        return repr(self._core)
