"""The command line's device checks: whether `--device` can run on this build and machine."""
from __future__ import annotations


def device_unavailable(device: str | None) -> str | None:
    """Return why a Context cannot run on `device` here, or None if it can.

    Only "cuda" can be missing: from the build (a wheel has no CUDA backend) or from the machine (no GPU).

    Parameters
    ----------
    device : str or None
        A device name; None means $EMBER_DEVICE, else "cpu".

    Returns
    -------
    str or None
        A one-line reason for the command line's error, or None.

    Raises
    ------
    ValueError
        When $EMBER_DEVICE names an unknown device (--device has choices).
    """
    from .. import _ember
    if (device or _ember.default_device()) != "cuda":
        return None
    c = _ember.cuda_info()
    if not c["built"]:
        return ("device 'cuda': this build of Ember has no CUDA backend (wheels are CPU only; build one with "
                "`pip install . -Ccmake.define.EMBER_CUDA=ON`)")
    if c["devices"] == 0:
        return "device 'cuda': no CUDA GPU found (no NVIDIA GPU or driver visible to the CUDA runtime)"
    return None
