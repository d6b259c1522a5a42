"""Ember: fast full-RNS CKKS homomorphic encryption.

A parameter set, a context, keys, and arithmetic on encrypted vectors with Python operators::

    import numpy as np, ember
    ctx = ember.Context(ember.CkksParams(log_n=16, levels=24, log_scale=50, dnum=3), threads=2)
    keys = ctx.keygen(rotations=[1, -1, 16], conjugation=True)
    x = np.random.uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys.public)
    y = (ct * ct + 0.5 * ct).rotate(1)
    print(np.abs(ctx.decrypt(y, keys.secret).real - np.roll(x * x + 0.5 * x, -1)).max())

The public names are those of ``__all__``; the submodules ``ember.heaan`` (the non-RNS HEAAN scheme) and
``ember.graph`` (programs as graphs: ``with ember.graph() as g:``) are imported with the package.
"""
from ._ember import cpu_features as _cpu_features, max_log_qp_128 as _max_log_qp_128


def max_log_qp_128(log_n: int) -> int:
    """Return the largest log2(QP) that keeps 128-bit classical security at ring degree 2^log_n.

    The bound of the HomomorphicEncryption.org standard for a uniform ternary secret (2^16 and 2^17 from the same
    estimator as OpenFHE's); :class:`CkksParams` refuses parameters above it unless ``insecure=True``.

    Parameters
    ----------
    log_n : int
        log2 of the ring degree N.

    Returns
    -------
    int
        Bits of the whole modulus Q times P (ciphertext primes and special primes); 0 when log_n is outside the
        table.
    """
    return _max_log_qp_128(int(log_n))


_cpu_features()  # a bad EMBER_SIMD is refused here, at import, before any work (RuntimeError naming the choices)
from .params import CkksParams  # noqa: F401
from .context import (Context, Ciphertext, Plaintext, KeySet, PublicKey, SecretKey, SwitchingKey,  # noqa: F401
                      GaloisKeys, DecryptionFlooding)
from .tracing import trace  # noqa: F401
from .precision import PrecisionStats, precision  # noqa: F401


def _version() -> str:
    """Return the project's version, defined once in the VERSION file.

    In a source checkout (python/ember next to ../../VERSION) it is read from that file, else from the installed
    distribution's metadata, which the build took from it.

    Returns
    -------
    str
        The version, or ``"unknown"`` for a copy of the package that was never installed.
    """
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    if (root / "VERSION").is_file() and (root / "pyproject.toml").is_file():
        return (root / "VERSION").read_text().strip()
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("ember-fhe")
    except PackageNotFoundError:  # a copy of the package that was never installed
        return "unknown"


__version__ = _version()
__all__ = ["CkksParams", "Context", "Ciphertext", "Plaintext", "KeySet", "trace", "PublicKey", "SecretKey",
           "GaloisKeys", "SwitchingKey", "DecryptionFlooding", "max_log_qp_128", "precision", "PrecisionStats",
           "LinearTransform", "chebyshev_coefficients", "chebyshev_depth", "evaluate_chebyshev", "evaluate_function",
           "inner_sum_rotations"]
from .circuits import (LinearTransform, chebyshev_coefficients, chebyshev_depth, evaluate_chebyshev,  # noqa: F401,E402
                       evaluate_function, inner_sum_rotations)
from . import heaan  # noqa: F401,E402  (the non-RNS HEAAN scheme of paper 000)
from . import graph  # noqa: F401,E402  (programs as graphs: `with ember.graph() as g:`)
