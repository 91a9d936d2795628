"""One array namespace over NumPy and CuPy.

Spectral numerics run in float64 by default. The backend is chosen per call (``backend="cupy"``) or globally
(:func:`set_backend`); ``None`` means "the global default", which starts as NumPy. CuPy is optional: asking for it
without CuPy or without a CUDA device raises a clear :class:`RuntimeError`, and :func:`gpu_available` lets tests skip.
The namespaces are array-api-compat wrappers, so code written against them runs unchanged on either library.
"""
from __future__ import annotations

import numpy as np
import array_api_compat

from rmtnet._optional import hint, require

_BACKENDS = ("numpy", "cupy")
_default = "numpy"
DEFAULT_DTYPE = "float64"


def set_backend(name: str) -> None:
    """Set the global default backend (``"numpy"`` or ``"cupy"``)."""
    global _default
    check_name(name)
    if name == "cupy":
        cupy_module()  # fail now, not at first use
    _default = name


def get_backend() -> str:
    return _default


def check_name(name):
    """Raise ValueError unless ``name`` is a backend rmtnet knows (``"numpy"`` or ``"cupy"``)."""
    if not isinstance(name, str) or name not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {name!r}")


def cupy_module():
    """The ``cupy`` module, or RuntimeError saying what is missing (CuPy itself, or a CUDA device)."""
    try:
        cupy = require("cupy", "backend='cupy'")
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError(hint(exc, "backend='cupy'") or f"backend='cupy': CuPy failed to import: {exc}") from exc
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("backend='cupy' needs a CUDA device; none was found")
    except cupy.cuda.runtime.CUDARuntimeError as exc:  # pragma: no cover
        raise RuntimeError(f"backend='cupy' needs a CUDA device: {exc}") from exc
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        cupy_module()
    except RuntimeError:
        return False
    return True


def namespace(backend: str | None = None):
    """The array-api-compat namespace of ``backend`` (NumPy or CuPy)."""
    name = _default if backend is None else backend
    check_name(name)
    if name == "numpy":
        return array_api_compat.array_namespace(np.empty(0))
    cp = cupy_module()
    return array_api_compat.array_namespace(cp.empty(0))


def native(backend: str | None = None):
    """The library module itself (``numpy`` or ``cupy``), for routines outside the array API (QR, RNG)."""
    name = _default if backend is None else backend
    check_name(name)
    return np if name == "numpy" else cupy_module()


def module_of(x):
    """The library that holds array ``x``: ``cupy`` for a CuPy array, else ``numpy`` (Python scalars and lists are
    host data). Code that must keep a computation on the device its input lives on creates its arrays with this
    module; NumPy's ufuncs and functions applied to CuPy arrays dispatch to CuPy by themselves (NEP 13/18)."""
    if array_api_compat.is_cupy_array(x):
        return cupy_module()
    return np


def as_array(x, dtype=None, like=None):
    """``x`` as an array of the library that holds ``like`` (by default, of ``x`` itself): host constants meet a
    device computation on the device (a copy), and device data is never brought to the host implicitly."""
    return module_of(x if like is None else like).asarray(x, dtype=dtype)


def to_numpy(x):
    """Bring an array from any backend to host NumPy."""
    if hasattr(x, "get"):  # cupy
        return x.get()
    return np.asarray(x)


def torch_device(backend: str | None = None) -> str:
    """The torch device that goes with an array backend: ``"cuda"`` for CuPy, ``"cpu"`` for NumPy (``None``: the
    default backend). The figure scripts' ``--backend cupy`` thus puts both the spectral Monte Carlo and the
    training of torch models on the GPU."""
    name = get_backend() if backend is None else backend
    check_name(name)
    return "cuda" if name == "cupy" else "cpu"


def rng(seed, backend: str | None = None):
    """A seeded generator of the backend (``numpy.random.Generator`` or ``cupy.random.Generator``). A generator
    passed as ``seed`` (e.g. a :class:`HostStream`) is returned as it is, so samplers accept either."""
    if hasattr(seed, "standard_normal"):
        return seed
    if getattr(seed, "ndim", None) == 0 and hasattr(seed, "item"):     # a NumPy/torch integer scalar or 0-d array
        seed = seed.item()
    if not (seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0)
            or isinstance(seed, np.random.SeedSequence)):
        raise ValueError(f"seed must be None, a non-negative integer, a SeedSequence or a generator, got {seed!r}")
    lib = native(backend)
    return lib.random.default_rng(seed)


class HostStream:
    """NumPy's random stream for ``seed``, delivered as arrays of ``backend``: with it a CuPy run draws exactly the
    matrices the NumPy run draws, so the two backends' spectra can be compared entry by entry (pass it as the
    samplers' ``seed``). Slower than the device's own generator: for checks, not production."""

    def __init__(self, seed, backend: str | None = None):
        self._g = np.random.default_rng(seed)
        self._xp = native(backend)

    def _put(self, x):
        return self._xp.asarray(x)

    def standard_normal(self, size=None, dtype="float64"):
        return self._put(self._g.standard_normal(size, dtype=dtype))

    def random(self, size=None, dtype="float64"):
        return self._put(self._g.random(size, dtype=dtype))

    def integers(self, *args, **kwargs):
        return self._put(self._g.integers(*args, **kwargs))

    def choice(self, *args, **kwargs):
        return self._put(self._g.choice(*args, **kwargs))
