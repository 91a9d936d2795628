"""The ⊠/⊞ engine and the laws it calls keep a computation on the device of its input.

Without a GPU the CuPy path cannot run here, so its one way to break — a host (NumPy) array meeting a device array
inside the engine, which CuPy refuses with a TypeError, or a result quietly brought back to the host — is checked
with a stand-in: :class:`DeviceArray`, a NumPy array that, like a CuPy array, refuses plain host arrays (ndim ≥ 1)
as operands of ufuncs, array functions and indexing, and a module ``fake_device`` that, like ``cupy``, creates
such arrays. ``rmtnet.backend.module_of`` is pointed at it. The densities computed on the stand-in must then equal
the host ones to rounding (the same arithmetic in the same order), and come back as device arrays.
The real CuPy run is ``tests/test_gpu.py::test_cupy_engine_density_equals_numpy`` (skipped without a GPU)."""
import types

import numpy as np
import pytest

from rmtnet import backend as B
from rmtnet.spectra import network
from rmtnet.spectra import (Bernoulli, FussCatalan, MarchenkoPastur, Semicircle, free_add, free_mult, free_mult_power,
                            jacobian_law)
from rmtnet.spectra.measures import GridDensity, OtherGram


class HostArrayOnDevice(TypeError):
    pass


def _is_host(a):
    return type(a) is np.ndarray and a.ndim > 0


def _check(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            _check(o)
    elif isinstance(obj, dict):
        _check(list(obj.values()))
    elif _is_host(obj):
        raise HostArrayOnDevice(f"a host array of shape {obj.shape} met a device array")


def _down(obj):
    if isinstance(obj, DeviceArray):
        return obj.view(np.ndarray)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_down(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _down(v) for k, v in obj.items()}
    return obj


def _up(obj):
    if type(obj) is np.ndarray:
        return obj.view(DeviceArray)
    if isinstance(obj, tuple):
        return tuple(_up(o) for o in obj)
    return obj


class DeviceArray(np.ndarray):
    """A NumPy array that behaves, as to mixing, like a CuPy array."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _check(inputs)
        _check(kwargs.get("out", ()))
        return _up(getattr(ufunc, method)(*_down(inputs), **_down(kwargs)))

    def __array_function__(self, func, types_, args, kwargs):
        _check(args)
        _check(kwargs)
        return _up(func(*_down(args), **_down(kwargs)))

    def __getitem__(self, key):
        _check(key)
        return _up(self.view(np.ndarray)[_down(key)])

    def __setitem__(self, key, value):
        _check(key)
        _check(value)
        self.view(np.ndarray)[_down(key)] = _down(value)


def _device_function(name):
    f = getattr(np, name)
    return lambda *a, **k: _up(f(*_down(a), **_down(k)))


fake_device = types.SimpleNamespace(**{name: _device_function(name) for name in (
    "asarray", "array", "zeros", "ones", "full", "empty", "zeros_like", "full_like", "stack", "isin", "isfinite")})


@pytest.fixture
def device(monkeypatch):
    real = B.module_of
    monkeypatch.setattr(B, "module_of", lambda x: fake_device if isinstance(x, DeviceArray) else real(x))
    return lambda a: np.asarray(a, dtype=float).view(DeviceArray)


def test_the_stand_in_refuses_host_arrays(device):
    d = device([1.0, 2.0])
    with pytest.raises(HostArrayOnDevice):
        d + np.array([1.0, 2.0])
    with pytest.raises(HostArrayOnDevice):
        np.where(d > 1, d, np.zeros(2))
    with pytest.raises(HostArrayOnDevice):
        d[np.array([True, False])]
    assert isinstance(d * 2.0 + np.float64(1.0), DeviceArray)


LAWS = {
    "(Bern ⊠ MP)^⊠3, the benchmark's law": lambda: free_mult(free_mult_power(Bernoulli(0.5), 3),
                                                              free_mult_power(MarchenkoPastur(1.0, 2.0), 3)),
    "Fuss-Catalan 2 (nested power)": lambda: FussCatalan(2),
    "MP ⊠ grid density": lambda: free_mult(MarchenkoPastur(0.5), GridDensity(np.linspace(0.5, 1.5, 41),
                                                                             np.ones(41), normalize=True)),
    "tanh Jacobian, L = 2 (Gaussian push-forward)": lambda: jacobian_law(
        network.mlp(2, 100, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="tanh", q0=1.0)),
    "non-square layer (other Gram) ⊠ Bernoulli": lambda: free_mult(OtherGram(MarchenkoPastur(2.0), 0.5),
                                                                     Bernoulli(0.5)),
    "semicircle ⊞ MP": lambda: free_add(Semicircle(1.0), MarchenkoPastur(0.5)),
}


@pytest.mark.parametrize("name", list(LAWS))
def test_engine_density_stays_on_the_device_and_equals_the_host(name, device):
    law = LAWS[name]()
    lo, hi = law.hull()
    x = np.linspace(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo), 37)
    host = law.pdf(x)
    dev = law.pdf(device(x))
    assert isinstance(dev, DeviceArray), name
    assert host.max() > 0
    np.testing.assert_allclose(dev.view(np.ndarray), host, rtol=1e-12, atol=1e-12 * host.max())


def test_pdf_backend_numpy_is_the_host_path():
    law = LAWS["(Bern ⊠ MP)^⊠3, the benchmark's law"]()
    x = np.linspace(0.1, law.continuous_support()[1], 9)
    np.testing.assert_array_equal(law.pdf(x, backend="numpy"), law.pdf(x))
    with pytest.raises(ValueError, match="backend"):
        law.pdf(x, backend="tpu")
    with pytest.raises(ValueError, match="x must be finite"):
        law.pdf([0.5, np.nan])
