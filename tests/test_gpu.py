"""CuPy path of every Monte Carlo routine: with the same draws (NumPy's stream delivered on the device,
:class:`rmtnet._backend.HostStream`) the device spectra equal the host spectra to 1e-10 relative. Skipped without a
GPU; the CPU path is complete without it."""
import numpy as np
import pytest

from rmtnet import _backend as B
from rmtnet import arch
from rmtnet.spectra import kernels, montecarlo

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")]

SQRT2 = np.sqrt(2.0)

CASES = {
    "wishart": lambda seed, be: montecarlo.wishart_eigs(300, 500, seed=seed, backend=be, n_samples=2),
    "ginibre_product": lambda seed, be: montecarlo.ginibre_product_eigs(300, 3, seed=seed, backend=be, n_samples=2),
    "jacobian_gaussian_tanh": lambda seed, be: montecarlo.sample_jacobian_eigs(
        arch.mlp(4, 300, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="tanh", q0=1.0),
        n_samples=2, seed=seed, backend=be),
    "jacobian_orthogonal_erf": lambda seed, be: montecarlo.sample_jacobian_eigs(
        arch.mlp(4, 300, weights="orthogonal", sigma_w=1.1, activation="erf", q0=1.0),
        n_samples=2, seed=seed, backend=be),
    "jacobian_non_square_relu": lambda seed, be: montecarlo.sample_jacobian_eigs(
        arch.mlp(3, 200, widths=[200, 300, 150, 200], weights="orthogonal", sigma_w=SQRT2, activation="relu"),
        n_samples=2, seed=seed, backend=be),
    "fisher_relu": lambda seed, be: montecarlo.sample_fisher_eigs(
        arch.mlp(3, 300, weights="orthogonal", sigma_w=SQRT2, activation="relu"), n_samples=2, seed=seed, backend=be),
    "ck_relu": lambda seed, be: montecarlo.sample_ck_eigs(
        arch.mlp(2, widths=[400, 300, 300], activation="relu"), 200, n_samples=2, seed=seed, backend=be),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cupy_spectra_equal_numpy_spectra_on_the_same_draws(name):
    host = B.to_numpy(CASES[name](0, "numpy"))
    dev_out = CASES[name](B.HostStream(0, "cupy"), "cupy")
    assert type(dev_out).__module__.startswith("cupy")
    dev = B.to_numpy(dev_out)
    assert dev.dtype == np.float64 and dev.shape == host.shape
    scale = np.max(np.abs(host))
    assert np.max(np.abs(np.sort(dev) - np.sort(host))) < 1e-10 * scale, name


def test_cupy_nngp_kernel_equals_numpy():
    net = arch.mlp(3, 256, weights="gaussian", sigma_w=SQRT2, activation="relu")
    X = np.random.default_rng(3).standard_normal((5, 256))
    host = kernels.sample_nngp_kernel(net, X, n_samples=2, seed=0, backend="numpy")
    dev = kernels.sample_nngp_kernel(net, X, n_samples=2, seed=B.HostStream(0, "cupy"), backend="cupy")
    assert np.allclose(B.to_numpy(dev), host, rtol=1e-10, atol=0)


def test_cupy_engine_density_equals_numpy():
    """The ⊠ engine on the GPU (one batch of grid points, ``pdf(x, backend="cupy")``) gives the host's density: the
    same Newton continuation, so agreement to rounding. The benchmark's law and a tanh Jacobian law."""
    from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult, free_mult_power, jacobian_law
    laws = [free_mult(free_mult_power(Bernoulli(0.5), 4), free_mult_power(MarchenkoPastur(1.0, 2.0), 4)),
            jacobian_law(arch.mlp(4, 300, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="tanh", q0=1.0))]
    for law in laws:
        x = np.linspace(0.0, law.support()[1] * 1.02, 2001)
        host = law.pdf(x)
        dev = law.pdf(x, backend="cupy")
        assert type(dev).__module__.startswith("cupy")
        np.testing.assert_allclose(B.to_numpy(dev), host, rtol=1e-9, atol=1e-9 * host.max())
