"""Time model: a roofline per device.

Aggregate (any accounting, any device):
    compute = mod_mul / mul_per_s + mod_add / add_per_s,   memory = DRAM bytes / bandwidth,
    time = max(compute, memory)          (the paper's Section 4.2 model: operations over the multipliers
                                          at 1 GHz against transfers over the bandwidth).
Per kernel (ember accounting on a calibrated CPU profile): every kernel is its own roofline,
    time = sum over kernels of max(work / measured rate of that kernel, kernel bytes / bandwidth),
with the work units of KERNEL_WORK, so an NTT-heavy operation and a streaming one are each timed by the
kernels that dominate them. A limb transform also streams its twiddle table and Shoup companions (2 N words,
a different table for every prime: they do not stay in the core caches across the limbs of a polynomial), so
its bytes here are the limb read and written plus 2 N words (the accounting's DRAM bytes count only the limbs,
like the trace).
"""
from __future__ import annotations

from .cost import Cost
from .devices import Profile

# What each traced kernel's rate is measured in: 'butterflies' (N/2 log N per limb transform, = mod_add / 2),
# 'mod_mul', 'mod_add' or 'bytes' (read + written).
KERNEL_WORK = {
    "ntt_forward": "butterflies", "ntt_inverse": "butterflies",
    "base_convert": "mod_mul", "base_convert_centered": "mod_mul",
    "dot": "mod_mul", "mul": "mod_mul", "mul_add": "mod_mul",
    "mul_const": "mod_mul", "mul_const_add": "mod_mul", "sub_mul_const": "mod_mul",
    "add": "mod_add", "sub": "mod_add", "neg": "mod_add", "add_const": "mod_add",
    "copy": "bytes", "automorph": "bytes", "memcpy": "bytes", "memset": "bytes", "mod_raise": "bytes",
    "signed_digits": "bytes",
}
# Kernels the library does not trace, timed like a traced one.
RATE_ALIAS = {"memcpy": "copy", "memset": "copy", "mod_raise": "copy", "signed_digits": "copy", "neg": "add",
              "sub": "add", "add_const": "add", "mul_const": "mul", "mul_const_add": "mul_add"}


def work_of(kernel: str, c: dict) -> float:
    """Return a kernel's work in the unit its rate is measured in (KERNEL_WORK; mod_mul for unknown kernels).

    Parameters
    ----------
    kernel : str
        The kernel's name.
    c : dict
        Its counts (``mod_mul``, ``mod_add``, ``bytes_read``, ``bytes_written``, ...), as ember.trace() has them.

    Returns
    -------
    float
        Butterflies (mod_add / 2), modular products, modular additions or bytes read + written.
    """
    unit = KERNEL_WORK.get(kernel, "mod_mul")
    if unit == "butterflies":
        return c["mod_add"] / 2
    if unit == "bytes":
        return c["bytes_read"] + c["bytes_written"]
    return c[unit]


def aggregate(cost: Cost, dev: Profile) -> dict:
    """Return the time of a cost on a device by the aggregate roofline: max(compute, memory).

    Parameters
    ----------
    cost : Cost
        The operations and bytes.
    dev : Profile
        The device.

    Returns
    -------
    dict
        ``device``, ``time_ms``, ``compute_ms``, ``memory_ms`` and ``bound`` ("memory" or "compute").
    """
    compute = cost.mod_mul / dev.mul_per_s + cost.mod_add / dev.add_per_s
    memory = cost.dram / dev.bandwidth
    t = max(compute, memory)
    return dict(device=dev.name, time_ms=t * 1e3, compute_ms=compute * 1e3, memory_ms=memory * 1e3,
                bound="memory" if memory > compute else "compute")


def per_kernel(counts: dict, dev: Profile, log_n: int = 0) -> dict:
    """Return the time of kernel counts on a device as the sum of per-kernel rooflines.

    A kernel without a calibrated rate (kernel_rates, or that of the kernel RATE_ALIAS times it like) is
    computed at the device's aggregate rates.

    Parameters
    ----------
    counts : dict
        ``{kernel: counts}``, as the ember accounting (or ember.trace()) has them.
    dev : Profile
        The device (a calibrated profile's kernel_rates).
    log_n : int, optional
        log2 N: when given, a limb transform also streams its twiddle tables (2 N words); default 0: not.

    Returns
    -------
    dict
        ``device``, ``time_ms``, ``compute_ms``, ``memory_ms``, ``bound`` and ``kernel_ms`` (``{kernel: ms}``).
    """
    total = compute = memory = 0.0
    by_kernel = {}
    for k, c in counts.items():
        rate = dev.kernel_rates.get(k) or dev.kernel_rates.get(RATE_ALIAS.get(k, ""))
        w = work_of(k, c)
        if rate:
            tc = w / rate
        else:  # not calibrated: the aggregate rates
            tc = c["mod_mul"] / dev.mul_per_s + c["mod_add"] / dev.add_per_s
        moved = c["bytes_read"] + c["bytes_written"]
        if k.startswith("ntt_") and log_n:
            moved += c["ntt"] * 2 * (1 << log_n) * 8
        tm = moved / dev.bandwidth
        t = max(tc, tm)
        by_kernel[k] = t * 1e3
        total, compute, memory = total + t, compute + tc, memory + tm
    return dict(device=dev.name, time_ms=total * 1e3, compute_ms=compute * 1e3, memory_ms=memory * 1e3,
                bound="memory" if memory > compute else "compute", kernel_ms=by_kernel)


def predict(cost: Cost, dev: Profile, kernel_counts: dict | None = None, log_n: int = 0) -> dict:
    """Return the predicted time: per kernel when there are counts and the device has kernel rates, else aggregate.

    Parameters
    ----------
    cost : Cost
        The operation's cost (for the aggregate model).
    dev : Profile
        The device.
    kernel_counts : dict, optional
        The ember accounting's per-kernel counts.
    log_n : int, optional
        log2 N, for the per-kernel model's twiddle traffic (default 0).

    Returns
    -------
    dict
        What :func:`per_kernel` or :func:`aggregate` returns.
    """
    if kernel_counts and dev.kernel_rates:
        return per_kernel(kernel_counts, dev, log_n)
    return aggregate(cost, dev)


def throughput(slots: int, log_q1: float, precision_bits: float, seconds: float) -> float:
    """Eq. 3 of 001: slots x log Q1 x precision bits / bootstrapping time (bits per second)."""
    return slots * log_q1 * precision_bits / seconds
