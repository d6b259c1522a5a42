"""Device profiles for the time model: what a device computes per second and moves per second.

A profile is a roofline: modular multiplications per second, modular additions per second, DRAM bandwidth
and on-chip memory. The CPU profile is measured on this machine by `ember sim calibrate` (Ember's own
kernels, one rate per kernel); until it is, the calibrated profile of a reference machine ships with the package
(reference_cpu.json: the 2-core development VM, Xeon with AVX-512 IFMA, 2026-11-21) and every output that uses it
says so ("embedded reference"). The others come from published figures, cited below.

Sources
  [H100]  NVIDIA H100 Tensor Core GPU datasheet (2023): H100 SXM5, 3.35 TB/s HBM3, 50 MB L2 cache;
          NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs, 128 FP32 and 64 INT32 lanes per
          SM, 67 TFLOPS FP32 at boost (=> 1.98 GHz). INT32 issue rate: 132 x 64 x 1.98e9 = 1.67e13 op/s.
          Assumption (ours, not published): a 64-bit Shoup modular multiplication takes 16 INT32 instructions
          (64x64->128 partial products, the quotient estimate, the correction), a modular addition 3.
          Measured on an H200 (same SMs and clocks; bench/gpu/README.md, 2026-11-27): Shoup products 0.80x,
          Barrett products of two variables 0.31x, additions 0.49x these rates; element-wise kernels at scale
          within 2 % of the roofline (memory-bound); a plain NTT kernel of ours 2.2-3x the modelled time.
  [001]   Agrawal et al., MAD: Memory-Aware Design Techniques for Accelerating FHE, MICRO 2023, Table 6: ASIC
          designs at 1 GHz with one modular operation per multiplier per cycle: the MAD design next to the GPU
          (2250 multipliers, 900 GB/s, 32 MB), F1 (18432, 1 TB/s, 64 MB), BTS (8192, 1 TB/s, 512 MB),
          ARK (20480, 1 TB/s, 512 MB), CraterLake (14336, 2.4 TB/s, 256 MB).
  [U280]  AMD/Xilinx Alveo U280 data sheet DS963: 8 GB HBM2 at 460 GB/s, 9024 DSP slices, 41 MB of on-chip
          SRAM (BRAM + URAM); FAB (Agrawal et al., HPCA 2023) runs CKKS bootstrapping on it at 300 MHz.
          Assumption (ours): one 54-bit modular multiplier per 8 DSP48E2 slices (a 54x54 product and the
          Barrett reduction), so 1128 multipliers, each one operation per cycle.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Union


@dataclass
class Profile:
    """A device as the time model sees it: a roofline of modular operations and DRAM bandwidth.

    ``DEVICES`` (ember.sim.devices.BUILTIN) holds the profiles of published devices; ``ember sim calibrate``
    measures this machine's CPU.

    Parameters
    ----------
    name : str
        The device's name.
    mul_per_s : float
        Modular multiplications per second (whole device).
    add_per_s : float
        Modular additions per second.
    bandwidth : float
        DRAM bytes per second.
    cache_mb : float, optional
        On-chip memory in MiB (default 0).
    source : str, optional
        Where the figures come from (default ``""``).
    multipliers : int, optional
        ASIC-style: modular multipliers, for Eq. 3 searches (default 0).
    freq_hz : float, optional
        Clock frequency in Hz (default 0: not given).
    kernel_rates : dict, optional
        ``{kernel: rate}``: per-kernel rates measured by ``ember sim calibrate``, in the work units of
        ``ember.sim.timing.KERNEL_WORK`` per second (default empty: the aggregate rates are used).
    threads : int, optional
        Threads of a calibrated CPU profile (default 0).
    measured : dict, optional
        How a calibrated profile was measured (parameter sets, repeats, other rates; default empty).
    """

    name: str
    mul_per_s: float            # modular multiplications per second (whole device)
    add_per_s: float            # modular additions per second
    bandwidth: float            # DRAM bytes per second
    cache_mb: float = 0         # on-chip memory (MiB)
    source: str = ""
    multipliers: int = 0        # ASIC-style: modular multipliers (for Eq. 3 searches)
    freq_hz: float = 0
    # Per-kernel rates measured by `ember sim calibrate` (work units per second; see calibrate.KERNEL_WORK).
    kernel_rates: dict = field(default_factory=dict)
    threads: int = 0
    measured: dict = field(default_factory=dict)

    # serialisation: to_dict / from_dict / save / load, as everywhere in ember
    def to_dict(self) -> dict:
        """Return the profile as plain JSON-able data.

        Returns
        -------
        dict
            What :meth:`from_dict` reads back.
        """
        return asdict(self)

    def save(self, path) -> None:
        """Write the profile as a JSON file (what ``ember sim calibrate`` writes).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        """
        Path(path).write_text(_dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path) -> "Profile":
        """Read a profile JSON file.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        Profile

        Raises
        ------
        ValueError
            Invalid JSON or a malformed profile (naming the field).
        """
        return _parse(Path(path).read_bytes())

    def to_json(self) -> str:
        """Return the profile as JSON text (deprecated: ``json.dumps(profile.to_dict())``, or :meth:`save`).

        Returns
        -------
        str
            The JSON document, indented, keys sorted.
        """
        warnings.warn("Profile.to_json() is deprecated: use Profile.to_dict() (and json.dumps) or Profile.save(path)",
                      DeprecationWarning, stacklevel=2)
        return _dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Profile":
        """Read a profile from JSON text (deprecated: ``Profile.from_dict(json.loads(text))``, or :meth:`load`).

        Parameters
        ----------
        text : str or bytes
            The JSON document.

        Returns
        -------
        Profile
            The profile.

        Raises
        ------
        ValueError
            Invalid JSON or a malformed profile (naming the field).
        """
        warnings.warn("Profile.from_json() is deprecated: use Profile.from_dict(json.loads(text)) or "
                      "Profile.load(path)", DeprecationWarning, stacklevel=2)
        return _parse(text)

    @classmethod
    def from_dict(cls, d) -> "Profile":
        """Make a profile from its dictionary (e.g. a file ``ember sim calibrate`` wrote).

        A malformed one is a ValueError naming the field. Unknown keys are ignored.

        Parameters
        ----------
        d : dict
            A profile's dictionary.

        Returns
        -------
        Profile

        Raises
        ------
        ValueError
            A missing or invalid field.
        """
        if not isinstance(d, dict):
            raise ValueError("device profile: the document is not an object")

        def num(k, lo_exclusive: bool, default=None):
            v = d.get(k, default)
            if v is None:
                raise ValueError(f"device profile: lacks {k}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (lo_exclusive and v == 0):
                raise ValueError(f"device profile: {k} must be a finite number {'> 0' if lo_exclusive else '>= 0'}, got {v!r}")
            return float(v)

        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"device profile: name must be a non-empty string, got {name!r}")
        source = d.get("source", "")
        if not isinstance(source, str):
            raise ValueError(f"device profile: source must be a string, got {source!r}")
        ints = {}
        for k in ("multipliers", "threads"):
            v = d.get(k, 0)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2 ** 40:
                raise ValueError(f"device profile: {k} must be an integer in [0, 2^40), got {v!r}")
            ints[k] = v
        rates = d.get("kernel_rates", {})
        if not isinstance(rates, dict) or not all(
                isinstance(k, str) and not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v > 0
                for k, v in rates.items()):
            raise ValueError("device profile: kernel_rates must map kernel names to finite rates > 0")
        measured = d.get("measured", {})
        try:
            if not isinstance(measured, dict):
                raise ValueError
            json.dumps(measured, allow_nan=False)
        except ValueError:
            raise ValueError("device profile: measured must be an object of finite numbers, strings and lists") from None
        return cls(name, num("mul_per_s", True), num("add_per_s", True), num("bandwidth", True), num("cache_mb", False, 0),
                   source, ints["multipliers"], num("freq_hz", False, 0), {k: float(v) for k, v in rates.items()},
                   ints["threads"], measured)


def _dumps(d: dict) -> str:
    return json.dumps(d, indent=1, sort_keys=True)


def _parse(text: Union[str, bytes]) -> Profile:
    try:
        d = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"device profile: invalid JSON ({e})") from None
    return Profile.from_dict(d)


def asic(name: str, multipliers: int, bandwidth: float, cache_mb: float, source: str, freq_hz: float = 1e9) -> Profile:
    """Return the profile of an ASIC-style design: one modular operation per multiplier per cycle.

    Parameters
    ----------
    name : str
        The device's name.
    multipliers : int
        Its modular multipliers.
    bandwidth : float
        DRAM bytes per second.
    cache_mb : float
        On-chip memory in MiB.
    source : str
        Where the figures come from.
    freq_hz : float, optional
        The clock (default 1e9: the paper's 1 GHz).

    Returns
    -------
    Profile
        Modular multiplications and additions each at ``multipliers * freq_hz`` per second.
    """
    ops = multipliers * freq_hz
    return Profile(name, ops, ops, bandwidth, cache_mb, source, multipliers, freq_hz)


_INT32 = 132 * 64 * 1.98e9
BUILTIN = {
    "h100": Profile("h100", _INT32 / 16, _INT32 / 3, 3.35e12, 50, "[H100] datasheet + whitepaper; 16 / 3 INT32 "
                    "instructions per modular mul / add (assumed)", freq_hz=1.98e9),
    "asic": asic("asic", 2250, 900e9, 32, "[001] Table 6, MAD next to the GPU: 2250 mult., 900 GB/s, 32 MB"),
    "asic-f1": asic("asic-f1", 18432, 1e12, 64, "[001] Table 6, F1"),
    "asic-bts": asic("asic-bts", 8192, 1e12, 512, "[001] Table 6, BTS"),
    "asic-ark": asic("asic-ark", 20480, 1e12, 512, "[001] Table 6, ARK"),
    "asic-craterlake": asic("asic-craterlake", 14336, 2.4e12, 256, "[001] Table 6, CraterLake"),
    "fpga-u280": asic("fpga-u280", 1128, 460e9, 41, "[U280] DS963 + FAB; 8 DSPs per multiplier (assumed)",
                      freq_hz=300e6),
}

CPU_PROFILE_ENV = "EMBER_SIM_CPU_PROFILE"


def default_cpu_profile_path() -> Path:
    """Return where `ember sim calibrate` writes this machine's profile (and where `--device cpu` reads it).

    $EMBER_SIM_CPU_PROFILE when set, else ``$XDG_CACHE_HOME/ember/sim-cpu.json`` (``~/.cache`` by default).
    """
    env = os.environ.get(CPU_PROFILE_ENV)
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "ember" / "sim-cpu.json"


#: The calibrated CPU profile of the reference machine, shipped with the package (package data).
REFERENCE_CPU_PROFILE = Path(__file__).with_name("reference_cpu.json")


def reference_cpu_profile() -> Profile:
    """Return the embedded reference machine's calibrated CPU profile (its `source` names the machine).

    Returns
    -------
    Profile
        The figures `ember sim calibrate --threads 2` measured on the 2-core development VM (Intel Xeon with
        AVX-512 IFMA), 2026-11-21.
    """
    return Profile.load(REFERENCE_CPU_PROFILE)


def cpu_profile(path: Optional[str] = None) -> tuple[Profile, str]:
    """Return the CPU profile the time models use, and where it comes from.

    Parameters
    ----------
    path : str, optional
        A profile JSON to use. None: this machine's calibration (default_cpu_profile_path(), written by
        `ember sim calibrate`) when there is one, else the embedded reference machine's.

    Returns
    -------
    profile : Profile
        The profile.
    label : str
        A label for the output: "calibrated (PATH)" or "embedded reference (MACHINE ...)".

    Raises
    ------
    FileNotFoundError
        If `path` is given and does not exist.
    ValueError
        If the file is not a valid profile.
    """
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"no CPU profile at {p}")
        return Profile.load(p), f"calibrated ({p})"
    p = default_cpu_profile_path()
    if p.exists():
        return Profile.load(p), f"calibrated ({p})"
    ref = reference_cpu_profile()
    return ref, ref.source + "; run `ember sim calibrate` for this machine's own figures"


def load(name_or_path: str, cpu_profile_path: Optional[str] = None) -> Profile:
    """Return a built-in profile by name, 'cpu', or a profile JSON file.

    Parameters
    ----------
    name_or_path : str
        A name of BUILTIN; 'cpu' (this machine's calibration, else the embedded reference machine's:
        :func:`cpu_profile`); or the path of a profile JSON file.
    cpu_profile_path : str, optional
        The profile file 'cpu' reads (default: :func:`cpu_profile`'s choice).

    Returns
    -------
    Profile
        The profile.

    Raises
    ------
    ValueError
        If the name is unknown and no such file exists, or the file is not a valid profile.
    """
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    if name_or_path == "cpu":
        return cpu_profile(cpu_profile_path)[0]
    path = Path(name_or_path)
    if path.exists():
        return Profile.load(path)
    raise ValueError(f"unknown device {name_or_path!r}; choose from cpu, {', '.join(BUILTIN)} or a profile JSON file")
