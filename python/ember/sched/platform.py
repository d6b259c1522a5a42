"""Platforms: devices plus a bandwidth matrix (and optional latency), built from the links between devices.

The paper's rule (Section 3.1): two devices with a direct link use its bandwidth; without one, "the minimal
bandwidth from all available routes connecting the two nodes" -- each route's bandwidth is that of its slowest
link, and the pair gets the smallest over all simple routes (latency: the sum along that route).

Presets (Platform.preset(spec)):
  paper[:F,G]   the paper's Fig. 4 system: a host CPU and F FPGAs + G GPUs in its four PCIe slots (default 2,2).
                Links: CPU-FPGA PCIe 4.0 x16 (31.5 GB/s), CPU-GPU PCIe 3.0 x16 (15.75 GB/s), GPU-GPU NVLink 3
                (600 GB/s), FPGA-FPGA QSFP28 x2 (2 x 100 Gb/s = 25 GB/s). The FPGAs and GPUs are modelled
                devices (fpga-u280, h100 cost models); the host is this machine's CPU.
  this[:T]      this machine: one CPU device at T threads (default 2).
  dask:K[:BW]   K workers of a Dask cluster (1 thread each), all-to-all links of BW bytes/s (default: measured
                by sending ciphertext-sized messages between two local processes, measure_bandwidth()).
Each device has a `model`: the cost-table device it is timed by (cpu-1t / cpu-2t measured by `ember profile`,
else the simulator's "cpu" model; h100, fpga-u280, asic-*: modelled).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from ..serial import JsonFile

GB = 1e9
LINKS = {  # bytes per second, with where the figure comes from
    "pcie4x16": (31.5 * GB, "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b"),
    "pcie3x16": (15.75 * GB, "PCIe 3.0 x16: 8 GT/s x 16 lanes, 128b/130b"),
    "nvlink3": (600 * GB, "NVLink 3 (A100/H100 class), the paper's 600 GB/s"),
    "qsfp28x2": (25 * GB, "QSFP28 x2: 2 x 100 Gb/s"),
}


@dataclass
class Device:
    """A device of a platform.

    Parameters
    ----------
    name : str
        Its name, unique in the platform.
    kind : str
        What it is: cpu, gpu, fpga, asic or worker.
    model : str
        The cost-table device model it is timed by (cpu-1t, cpu-2t, cpu, h100, fpga-u280, ...); several devices
        may share one model.
    modelled : bool, optional
        Marks a device that was not run, whose costs the simulator models (default False); informational.
    """

    name: str
    kind: str            # cpu, gpu, fpga, asic, worker
    model: str           # cost-table device it is timed by
    modelled: bool = False

    def as_dict(self) -> dict:
        """Return the device's fields as a dict.

        Returns
        -------
        dict
            name, kind, model, modelled.
        """
        return asdict(self)


@dataclass
class Platform(JsonFile):
    """Devices and the bandwidth and latency between them.

    Device index i is ``devices[i]``: the row and column i of the matrices.

    Parameters
    ----------
    name : str
        The platform's name.
    devices : list of Device
        The devices, in device-index order.
    bandwidth : list of list of float
        P x P bytes per second between device indices (diagonal 0: unused).
    latency : list of list of float
        P x P seconds between device indices.
    notes : list of str, optional
        Where the figures come from.
    """

    JSON_WHAT = "ember platform"

    name: str
    devices: list
    bandwidth: list      # P x P bytes/s (diagonal 0: unused)
    latency: list        # P x P seconds
    notes: list = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The devices' names, in device-index order."""
        return [d.name for d in self.devices]

    def to_dict(self) -> dict:
        """Return the platform as plain JSON-able data.

        Returns
        -------
        dict
            What :meth:`from_dict` reads back: name, devices (their :meth:`Device.as_dict`), bandwidth, latency,
            notes.
        """
        return {"name": self.name, "devices": [d.as_dict() for d in self.devices], "bandwidth": self.bandwidth,
                "latency": self.latency, "notes": self.notes}


    @classmethod
    def from_dict(cls, d: dict) -> "Platform":
        """Return the platform :meth:`to_dict` described.

        Parameters
        ----------
        d : dict
            A platform's dictionary.

        Returns
        -------
        Platform
            The platform.

        Raises
        ------
        ValueError
            A missing or malformed field.
        """
        if not isinstance(d, dict):
            raise ValueError("not a platform description: the document is not an object")
        try:
            devs = [Device(**x) for x in d["devices"]]
            return cls(d["name"], devs, [list(map(float, r)) for r in d["bandwidth"]],
                       [list(map(float, r)) for r in d.get("latency") or [[0.0] * len(devs)] * len(devs)],
                       list(d.get("notes", [])))
        except (KeyError, TypeError) as e:
            raise ValueError(f"not a platform description: {e}") from None

    @classmethod
    def from_links(cls, name: str, devices: Sequence[Device], links: Sequence[tuple], notes=()) -> "Platform":
        """Build a platform from the links between its devices.

        Two devices with a direct link get its bandwidth and latency; others get the paper's rule (module
        docstring): the smallest bandwidth over all simple routes, each route's being its slowest link's (ties:
        the fewest hops), and the sum of the latencies along that route.

        Parameters
        ----------
        name : str
            The platform's name.
        devices : sequence of Device
            The devices, in device-index order; names must be unique.
        links : sequence of tuple
            ``(device name a, device name b, bytes per second[, latency in seconds])``, undirected.
        notes : sequence of str, optional
            Where the figures come from.

        Returns
        -------
        Platform
            The platform.

        Raises
        ------
        ValueError
            Duplicate device names, a link naming an unknown device or with a bandwidth <= 0, or two devices
            without a route between them.
        """
        idx = {d.name: i for i, d in enumerate(devices)}
        if len(idx) != len(devices):
            raise ValueError("device names must be unique")
        P = len(devices)
        adj: list[dict[int, tuple[float, float]]] = [dict() for _ in range(P)]
        for link in links:
            a, b, bw = link[0], link[1], float(link[2])
            lat = float(link[3]) if len(link) > 3 else 0.0
            for x in (a, b):
                if x not in idx:
                    raise ValueError(f"link {a}-{b}: unknown device {x!r}")
            if not bw > 0:
                raise ValueError(f"link {a}-{b}: bandwidth must be > 0, got {bw}")
            adj[idx[a]][idx[b]] = adj[idx[b]][idx[a]] = (bw, lat)
        B = [[0.0] * P for _ in range(P)]
        L = [[0.0] * P for _ in range(P)]
        for s in range(P):
            best: dict[int, tuple[float, float, int]] = {}

            def walk(u, seen, bott, lat, hops):
                for v, (bw, lt) in adj[u].items():
                    if v in seen:
                        continue
                    nb, nl = min(bott, bw), lat + lt
                    cur = best.get(v)
                    if cur is None or nb < cur[0] or (nb == cur[0] and hops + 1 < cur[2]):
                        best[v] = (nb, nl, hops + 1)
                    walk(v, seen | {v}, nb, nl, hops + 1)
            walk(s, {s}, math.inf, 0.0, 0)
            for t in range(P):
                if t == s:
                    continue
                if t in adj[s]:  # a direct link
                    B[s][t], L[s][t] = adj[s][t]
                    continue
                if t not in best:
                    raise ValueError(f"devices {devices[s].name} and {devices[t].name} are not connected")
                B[s][t], L[s][t] = best[t][0], best[t][1]
        return cls(name, list(devices), B, L, list(notes))

    @classmethod
    def preset(cls, spec: str, bandwidth: Optional[float] = None) -> "Platform":
        """Build a preset platform (module docstring).

        Parameters
        ----------
        spec : str
            ``paper[:F,G]`` (the paper's Fig. 4 system, F FPGAs and G GPUs), ``this[:T]`` (this machine at T
            threads) or ``dask:K[:BW]`` (K Dask workers, BW bytes per second).
        bandwidth : float, optional
            Bytes per second between Dask workers when the spec gives none (default: measured,
            ``measure_bandwidth``); the other presets ignore it.

        Returns
        -------
        Platform
            The platform.

        Raises
        ------
        ValueError
            An unknown preset or a malformed spec.
        """
        kind, _, arg = spec.partition(":")
        kind = kind.strip().lower()
        if kind == "paper":
            f, g = 2, 2
            if arg:
                try:
                    f, g = (int(x) for x in arg.split(","))
                except ValueError:
                    raise ValueError(f"paper platform: expected paper:F,G (FPGAs, GPUs), got {spec!r}") from None
            return paper(f, g)
        if kind == "this":
            return this_machine(int(arg) if arg else 2)
        if kind == "dask":
            parts = arg.split(":") if arg else []
            if not parts or not parts[0].isdigit():
                raise ValueError(f"dask platform: expected dask:K[:BYTES_PER_S], got {spec!r}")
            bw = float(parts[1]) if len(parts) > 1 else bandwidth
            return dask_workers(int(parts[0]), bw)
        raise ValueError(f"unknown platform {spec!r}; presets: paper[:F,G], this[:T], dask:K[:BW] (or a JSON file)")


def paper(fpgas: int = 2, gpus: int = 2, fpga_model: str = "fpga-u280", gpu_model: str = "h100",
          host_model: str = "cpu") -> Platform:
    """Return the paper's Fig. 4 system with F FPGAs and G GPUs (F + G <= 4 PCIe slots) and the host CPU.

    The devices are "cpu", "fpga0", ..., "gpu0", ... in that order; the links are the module docstring's.

    Parameters
    ----------
    fpgas, gpus : int, optional
        F and G (default 2 and 2).
    fpga_model, gpu_model, host_model : str, optional
        The cost-table device models of the FPGAs, the GPUs and the host (default fpga-u280, h100 and cpu: the
        simulator's model of this CPU).

    Returns
    -------
    Platform
        The platform, named ``paper-<F>F<G>G``.

    Raises
    ------
    ValueError
        F or G is negative, or F + G > 4.
    """
    if fpgas < 0 or gpus < 0 or fpgas + gpus > 4:
        raise ValueError(f"the paper's host has four PCIe slots: 0 <= FPGAs + GPUs <= 4, got {fpgas} + {gpus}")
    devs = [Device("cpu", "cpu", host_model, modelled=(host_model == "cpu"))]
    devs += [Device(f"fpga{i}", "fpga", fpga_model, True) for i in range(fpgas)]
    devs += [Device(f"gpu{i}", "gpu", gpu_model, True) for i in range(gpus)]
    links = []
    for d in devs[1:]:
        links.append(("cpu", d.name, LINKS["pcie4x16" if d.kind == "fpga" else "pcie3x16"][0]))
    fs = [d.name for d in devs if d.kind == "fpga"]
    gs = [d.name for d in devs if d.kind == "gpu"]
    links += [(a, b, LINKS["qsfp28x2"][0]) for i, a in enumerate(fs) for b in fs[i + 1:]]
    links += [(a, b, LINKS["nvlink3"][0]) for i, a in enumerate(gs) for b in gs[i + 1:]]
    notes = [f"{k}: {v[1]} = {v[0] / GB:g} GB/s" for k, v in LINKS.items()] + [
        "routing: the paper's rule, the minimum bandwidth over the available routes",
        f"FPGAs timed by the {fpga_model} model and GPUs by the {gpu_model} model: MODELLED devices"]
    return Platform.from_links(f"paper-{fpgas}F{gpus}G", devs, links, notes)


def this_machine(threads: int = 2) -> Platform:
    """Return this machine: one CPU device, timed by the cost-table device model ``cpu-<threads>t``.

    Parameters
    ----------
    threads : int, optional
        The threads the CPU runs at (default 2).

    Returns
    -------
    Platform
        The platform, named ``this-<threads>t``.
    """
    return Platform(f"this-{threads}t", [Device("cpu", "cpu", f"cpu-{threads}t")], [[0.0]], [[0.0]],
                    [f"this machine's CPU at {threads} thread(s), timed by `ember profile` (cpu-{threads}t)"])


def dask_workers(k: int, bandwidth: Optional[float] = None, latency: Optional[float] = None) -> Platform:
    """Return K Dask workers (one thread each, timed by the device model cpu-1t), linked all to all.

    Parameters
    ----------
    k : int
        The number of workers, >= 1.
    bandwidth : float, optional
        Bytes per second between two workers (default: measured by ``measure_bandwidth``).
    latency : float, optional
        Seconds per transfer. Default: 0 with a given bandwidth, the measured latency when the bandwidth is
        measured (a latency given here is kept then, and the platform's notes say so).

    Returns
    -------
    Platform
        The platform, named ``dask-<k>``, devices ``worker0``, ``worker1``, ...

    Raises
    ------
    ValueError
        k < 1.
    """
    if k < 1:
        raise ValueError(f"dask platform: K must be >= 1, got {k}")
    notes = []
    if bandwidth is None:
        bandwidth, measured = measure_bandwidth()
        notes.append(f"bandwidth {bandwidth / GB:.3f} GB/s and latency {measured * 1e6:.0f} us measured between two "
                     f"local processes with ciphertext-sized messages")
        if latency is None:
            latency = measured
        else:
            notes.append(f"latency {latency * 1e6:.0f} us as given (not the measured one)")
    elif latency is None:
        latency = 0.0
    devs = [Device(f"worker{i}", "worker", "cpu-1t") for i in range(k)]
    B = [[0.0 if i == j else float(bandwidth) for j in range(k)] for i in range(k)]
    L = [[0.0 if i == j else float(latency) for j in range(k)] for i in range(k)]
    return Platform(f"dask-{k}", devs, B, L, notes)


def _echo(conn):
    while True:
        m = conn.recv_bytes()
        if not m:
            break
        conn.send_bytes(b"k")


def measure_bandwidth(nbytes: int = 2 * 14 * (1 << 16) * 8, rounds: int = 5) -> tuple[float, float]:
    """Measure the bandwidth and latency between this process and another over a multiprocessing pipe.

    Parameters
    ----------
    nbytes : int, optional
        The message size (default: a ciphertext at N = 2^16 with 14 limbs, 2 x 14 x 2^16 8-byte words).
    rounds : int, optional
        Sends of each kind (default 5).

    Returns
    -------
    tuple of float
        (bytes per second, latency in seconds): ``nbytes / (median time of an acknowledged send - latency)``,
        and the median of `rounds` 1-byte round trips, halved.
    """
    import multiprocessing as mp
    import statistics
    import time
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=_echo, args=(b,), daemon=True)
    p.start()
    try:
        payload = bytes(nbytes)
        a.send_bytes(b"x")
        a.recv_bytes()
        lat = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            a.send_bytes(b"x")
            a.recv_bytes()
            lat.append((time.perf_counter() - t0) / 2)
        secs = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            a.send_bytes(payload)
            a.recv_bytes()
            secs.append(time.perf_counter() - t0)
        a.send_bytes(b"")
        latency = statistics.median(lat)
        return nbytes / max(1e-9, statistics.median(secs) - latency), latency
    finally:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()


def load_platform(spec: str) -> Platform:
    """Return the platform of a preset spec or of a JSON file.

    Parameters
    ----------
    spec : str
        A preset (:meth:`Platform.preset`) or the path of a JSON file of :meth:`Platform.to_dict` (a name
        ending in ``.json``, or an existing file).

    Returns
    -------
    Platform
        The platform.

    Raises
    ------
    ValueError
        An unreadable or malformed file, or an unknown or malformed preset.
    """
    from pathlib import Path
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        try:
            return Platform.from_dict(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{spec}: cannot read platform JSON ({e})") from None
    return Platform.preset(spec)
