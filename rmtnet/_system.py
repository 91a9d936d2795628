"""What the machine lends this process: the one place that reads CPU affinity and free memory, and that refuses an
allocation the machine cannot hold (:func:`check_allocation`) before it is attempted."""
from __future__ import annotations

import os

from rmtnet._optional import require


def affinity_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS tells it (Linux), else ``os.cpu_count()``."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                     # macOS, Windows
        return max(1, os.cpu_count() or 1)


class MemoryLimitError(MemoryError, ValueError):
    """A size the machine cannot hold, refused before anything is allocated. Both a ``MemoryError`` (what it is) and a
    ``ValueError`` (a size argument out of the range this machine allows), so either ``except`` catches it."""


#: Below this many bytes an allocation is not checked (reading the free memory would cost more than it saves).
CHECK_ABOVE = 1 << 28


def _meminfo_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), in bytes; None where the file or the field is missing."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _device_bytes(backend) -> int | None:
    """Free memory of the current CuPy device plus what CuPy's pool holds unused; None where CuPy is not in use."""
    if backend != "cupy":
        return None
    try:
        cupy = require("cupy", "the free-memory check on a CuPy device")
        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free) + int(cupy.get_default_memory_pool().free_bytes())
    except Exception:                          # noqa: BLE001 - no device: fall back on host memory
        return None


def available_memory(backend=None) -> int | None:
    """Bytes an allocation may take now: the free memory of the CuPy device when ``backend`` is "cupy", else the host's
    MemAvailable (Linux ``/proc/meminfo``), else physical pages × page size (``os.sysconf``); None where the OS does
    not say.

    Examples
    --------
    >>> available_memory() is None or available_memory() > 0
    True
    """
    device = _device_bytes(backend)
    if device is not None:
        return device
    host = _meminfo_bytes()
    if host is not None:
        return host
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def human_bytes(n: float) -> str:
    """``n`` bytes in binary units: "512 B", "23 GiB", "7.3 TiB" (two significant digits at least).

    Examples
    --------
    >>> human_bytes(512), human_bytes(8e12)
    ('512 B', '7.3 TiB')
    """
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    try:
        value, unit = float(n), 0
    except OverflowError:                      # an int past float64: a product of absurd sizes
        return "more than 10³⁰⁸ B"
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    if unit == len(units) - 1 and value >= 1024:
        return f"{value:.3g} {units[unit]}"
    return f"{value:.0f} {units[unit]}" if value >= 10 or unit == 0 else f"{value:.1f} {units[unit]}"


def check_allocation(name: str, nbytes: float, *, what: str, alternative: str, backend=None,
                     available: int | None = None) -> None:
    """Refuse, before allocating, what cannot fit: a :class:`MemoryLimitError` naming the size argument ``name``,
    the bytes ``what`` needs against those available, and the ``alternative``.

    Allocations under :data:`CHECK_ABOVE` bytes pass unchecked; above it the need is compared with
    :func:`available_memory` (or ``available``, for a device the caller asks itself, such as a torch CUDA device).
    Only what exceeds the free memory is refused: never what fits.

    Parameters
    ----------
    name : str
        The argument that sets the size ("width", "n", "size", …), named in the message.
    nbytes : float
        The bytes the operation would allocate (a float, so products of huge sizes need not fit an int64).
    what : str
        What would be allocated, e.g. "the n×n Gram matrix XXᵀ (n = 1000000)".
    alternative : str
        What to do instead: a matrix-free operator, a smaller size, …
    backend : str, optional
        "cupy" to compare with the device's free memory.
    available : int, optional
        The free bytes, where the caller knows them better.

    Examples
    --------
    >>> check_allocation("n", 8 * 100 ** 2, what="a 100×100 matrix", alternative="a smaller n")
    >>> try:
    ...     check_allocation("n", 8.0 * 10 ** 24, what="a 10¹²×10¹² matrix", alternative="a smaller n")
    ... except MemoryLimitError as e:
    ...     print(str(e).split(":")[0])
    n is too large for this machine
    """
    if nbytes <= CHECK_ABOVE:
        return
    free = available_memory(backend) if available is None else available
    if free is None or nbytes <= free:
        return
    raise MemoryLimitError(f"{name} is too large for this machine: {what} would need {human_bytes(nbytes)}, "
                           f"{human_bytes(free)} available; {alternative}")
