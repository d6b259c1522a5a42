"""`ember bench boot`: bootstrapping time, precision, levels left and key sizes (one JSON object)."""
from __future__ import annotations

import resource
import statistics
import time

import numpy as np

from . import _ember
from .context import Context
from .params import CkksParams

# MAD techniques that can be switched off (BootstrapConfig fields), and key compression.
MAD_OPTIONS = ("merged_moddown", "hoisted_moddown", "depth_optimal")
# Process-wide switches (ring layer), not BootstrapConfig fields.
GLOBAL_OPTIONS = ("limb_fusion",)


def run(log_n: int = 16, levels: int = 9, log_scale: int = 44, dnum: int = 0, threads: int = 2, runs: int = 3,
        slots: int | None = None, secret: str = "ternary", insecure: bool = False, seeded: bool = True,
        off: tuple[str, ...] = (), progress=None, inputs: tuple[str, ...] = ("uniform_complex",), iterations: int = 1,
        device: str | None = None, **options) -> dict:
    """Bootstrap `runs` fresh encryptions (after one warm-up) of each input shape in `inputs`.

    The shapes are names of ember.precision.INPUT_SHAPES (default uniform complex in [-1, 1]^2), encrypted at
    level 0. precision_bits is the worst slot over all of them, `inputs` in the result the worst slot per shape.
    The process-wide limb-fusion switch is restored on return.

    Parameters
    ----------
    log_n : int, optional
        Ring dimension N = 2**log_n. Default 16.
    levels : int, optional
        Levels left after bootstrapping. Default 9.
    log_scale : int, optional
        Bits of the scale. Default 44.
    dnum : int, optional
        Key-switching digits; 0 (default) the smallest within the security bound.
    threads : int, optional
        Threads of the context. Default 2.
    runs : int, optional
        Timed bootstrappings of each shape. Default 3.
    slots : int, optional
        Slots bootstrapped (default N/2).
    secret : {"ternary", "sparse"}, optional
        The secret distribution (CkksParams.bootstrappable). Default "ternary".
    insecure : bool, optional
        Allow a parameter set above the 128-bit bound. Default False.
    seeded : bool, optional
        False stores keys uncompressed (no seeds). Default True.
    off : tuple of str, optional
        MAD options to switch off (see MAD_OPTIONS), and "limb_fusion" (GLOBAL_OPTIONS).
    progress : callable, optional
        Called with the name of each stage (a str); default none.
    inputs : tuple of str, optional
        Input shapes. Default ("uniform_complex",).
    iterations : int, optional
        1 (default), or 2 for iterative bootstrapping.
    device : str, optional
        The device of the Context: "cpu", "cpu-guarded" or "cuda" (default: the ``EMBER_DEVICE`` environment
        variable, else "cpu").
    **options
        Further options of CkksParams.bootstrappable (BootstrapConfig fields).

    Returns
    -------
    dict
        The record: timings (median_ms, min_ms, max_ms, first_ms: the warm-up), precision_bits and the worst bits
        per shape (inputs), levels_after, log_scale_after, log_q_after, key sizes, rotation_keys, setup_s,
        keygen_s, peak_rss_mb, peak_device_mb (on a GPU: the most device memory in use at once; else None),
        throughput (MAD's Eq. 3), the options in force, the parameters and the device.

    Raises
    ------
    ValueError
        For an unknown input shape, option or device, or an invalid parameter set.
    RuntimeError
        When this build or this machine lacks the device (no CUDA backend, no GPU).
    """
    from .precision import INPUT_SHAPES
    for name in inputs:
        if name not in INPUT_SHAPES:
            raise ValueError(f"unknown input shape {name!r}; choose from {', '.join(INPUT_SHAPES)}")
    fusion = _ember.limb_fusion()
    for name in off:
        if name == "limb_fusion":
            fusion = False
            continue
        if name not in MAD_OPTIONS:
            raise ValueError(f"unknown MAD option {name!r}; choose from {', '.join(MAD_OPTIONS + GLOBAL_OPTIONS)}")
        options[name] = False
    was = _ember.limb_fusion()
    _ember.set_limb_fusion(fusion)
    try:
        return _run(log_n, levels, log_scale, dnum, threads, runs, slots, secret, insecure, seeded, progress, fusion,
                    tuple(inputs), int(iterations), device, **options)
    finally:
        _ember.set_limb_fusion(was)


def _run(log_n, levels, log_scale, dnum, threads, runs, slots, secret, insecure, seeded, progress, fusion, inputs, iterations,
         device, **options) -> dict:
    """Run the benchmark of run() with the limb-fusion switch already set; return its record."""
    from .precision import input_shape, precision
    step = progress or (lambda msg: None)
    step("parameters")
    params = CkksParams.bootstrappable(log_n=log_n, levels=levels, log_scale=log_scale, slots=slots, secret=secret,
                                       dnum=dnum, insecure=insecure, **options)
    ctx = Context(params, threads=threads, device=device)
    if ctx.device == "cuda":
        _ember.cuda_memory(True)  # the GPU's peak from here (no CUDA call on other devices)
    step("linear transforms")
    t0 = time.perf_counter()
    boot = ctx.bootstrapper()
    setup_s = time.perf_counter() - t0
    step("keys")
    t0 = time.perf_counter()
    keys = ctx.keygen(bootstrapping=True, seeded=seeded)
    keygen_s = time.perf_counter() - t0
    n = boot.slots
    rng = np.random.default_rng(1)
    ms, out, first_ms, per_shape = [], None, 0.0, {}
    for r in range(runs + 1):
        for name in inputs:
            step(f"bootstrap {r}/{runs} ({name})")
            x = input_shape(name, n, rng)
            ct = ctx.encrypt(x, keys.public, level=0)
            ctx.synchronize()
            t0 = time.perf_counter()
            out = ct.bootstrap(iterations=iterations)
            ctx.synchronize()
            dt = (time.perf_counter() - t0) * 1e3
            if r == 0 and name == inputs[0]:
                first_ms = dt  # the warm-up: the first bootstrap also faults in its working memory
                continue
            ms.append(dt)
            bits = precision(x, out.decrypt(keys.secret)).min_bits
            per_shape[name] = min(per_shape.get(name, 60.0), bits)
    info = ctx.bootstrap_key_info
    gpu = _ember.cuda_memory(False) if ctx.device == "cuda" else None
    prec = min(per_shape.values())
    log_q_after = float(sum(np.log2(float(q)) for q in params.q_primes[: out.level + 1]))
    med_s = statistics.median(ms) / 1e3
    return dict(op="boot", log_n=log_n, levels=levels, dnum=params.dnum, threads=threads, backend=ctx.device, device=ctx.device,
                runs=runs, median_ms=round(statistics.median(ms), 1), min_ms=round(min(ms), 1), max_ms=round(max(ms), 1),
                first_ms=round(first_ms, 1),
                precision_bits=round(prec, 2), inputs={k: round(v, 2) for k, v in per_shape.items()},
                iterations=iterations, message_ratio_bits=params.bootstrap_config.message_ratio_bits, slots=n, levels_after=out.level, log_scale_after=round(float(np.log2(out.scale)), 2),
                log_q_after=round(log_q_after, 1), key_bytes=info["key_bytes"], key_bytes_compressed=info["key_bytes_compressed"],
                rotation_keys=info["rotation_keys"], log_qp=round(params.log_qp, 1), secret=secret,
                special_primes=len(params.p_primes), bootstrapping_levels=len(params.boot_bits),
                setup_s=round(setup_s, 2), keygen_s=round(keygen_s, 2),
                peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                # on a GPU: the most device memory in use at once (tables, keys and the bootstrappings), in MiB
                peak_device_mb=round(gpu["peak"] / 2**20, 1) if gpu else None,
                # MAD's Eq. 3: slots x log Q after bootstrapping x precision / seconds
                throughput=round(n * log_q_after * prec / med_s, 1),
                options={k: bool(getattr(params.bootstrap_config, k)) for k in MAD_OPTIONS}
                | {"key_compression": bool(seeded), "limb_fusion": bool(fusion)})
