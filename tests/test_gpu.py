"""CuPy path of every Monte Carlo routine: with the same draws (NumPy's stream delivered on the device,
:class:`rmtnet.backend.HostStream`) the device spectra equal the host spectra to 1e-10 relative. Skipped without a
GPU; the CPU path is complete without it."""
import numpy as np
import pytest

from rmtnet import backend as B
from rmtnet.spectra import network
from rmtnet.spectra import kernels
from rmtnet.spectra.sampling import montecarlo

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")]

SQRT2 = np.sqrt(2.0)

CASES = {
    "wishart": lambda seed, be: montecarlo.wishart_eigs(300, 500, seed=seed, backend=be, n_samples=2),
    "ginibre_product": lambda seed, be: montecarlo.ginibre_product_eigs(300, 3, seed=seed, backend=be, n_samples=2),
    "jacobian_gaussian_tanh": lambda seed, be: montecarlo.sample_jacobian_eigs(
        network.mlp(4, 300, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="tanh", q0=1.0),
        n_samples=2, seed=seed, backend=be),
    "jacobian_orthogonal_erf": lambda seed, be: montecarlo.sample_jacobian_eigs(
        network.mlp(4, 300, weights="orthogonal", sigma_w=1.1, activation="erf", q0=1.0),
        n_samples=2, seed=seed, backend=be),
    "jacobian_non_square_relu": lambda seed, be: montecarlo.sample_jacobian_eigs(
        network.mlp(3, 200, widths=[200, 300, 150, 200], weights="orthogonal", sigma_w=SQRT2, activation="relu"),
        n_samples=2, seed=seed, backend=be),
    "fisher_relu": lambda seed, be: montecarlo.sample_fisher_eigs(
        network.mlp(3, 300, weights="orthogonal", sigma_w=SQRT2, activation="relu"), n_samples=2, seed=seed, backend=be),
    "ck_relu": lambda seed, be: montecarlo.sample_ck_eigs(
        network.mlp(3, widths=[400, 300, 300, 1], activation="relu", last_activation=False, sigma_w=1.0), 200,
        n_samples=2, seed=seed,
        backend=be),
    "free_product": lambda seed, be: montecarlo.free_product_eigs(
        [np.linspace(0.5, 2.0, 300), np.repeat([0.0, 3.0], 150), np.geomspace(0.1, 1.0, 300)], seed=seed, backend=be),
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
    net = network.mlp(3, 256, weights="gaussian", sigma_w=SQRT2, activation="relu")
    X = np.random.default_rng(3).standard_normal((5, 256))
    host = montecarlo.sample_nngp_kernel(net, X, n_samples=2, seed=0, backend="numpy")
    dev = montecarlo.sample_nngp_kernel(net, X, n_samples=2, seed=B.HostStream(0, "cupy"), backend="cupy")
    assert np.allclose(B.to_numpy(dev), host, rtol=1e-10, atol=0)


def test_cupy_engine_density_equals_numpy():
    """The ⊠ engine on the GPU (one batch of grid points, ``pdf(x, backend="cupy")``) gives the host's density: the
    same Newton continuation, so agreement to rounding. The benchmark's law and a tanh Jacobian law."""
    from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult, free_mult_power, jacobian_law
    laws = [free_mult(free_mult_power(Bernoulli(0.5), 4), free_mult_power(MarchenkoPastur(1.0, 2.0), 4)),
            jacobian_law(network.mlp(4, 300, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="tanh", q0=1.0))]
    for law in laws:
        x = np.linspace(0.0, law.continuous_support()[1] * 1.02, 2001)
        host = law.pdf(x)
        dev = law.pdf(x, backend="cupy")
        assert type(dev).__module__.startswith("cupy")
        np.testing.assert_allclose(B.to_numpy(dev), host, rtol=1e-9, atol=1e-9 * host.max())


def test_cupy_engine_on_a_million_points():
    """The ⊠ engine's device path at the benchmark's size: one batch of 10⁶ grid points on the GPU. Every value is
    finite and ≥ 0, and a spread-out subsample of 1000 points equals the host's density there to 1e-9."""
    from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult, free_mult_power
    cp = B.native("cupy")
    law = free_mult(free_mult_power(Bernoulli(0.5), 4), free_mult_power(MarchenkoPastur(1.0, 2.0), 4))
    x = cp.linspace(1e-6, law.continuous_support()[1] * 1.02, 10 ** 6)
    dev = law.pdf(x, backend="cupy")
    assert type(dev).__module__.startswith("cupy") and dev.shape == (10 ** 6,)
    assert bool(cp.all(cp.isfinite(dev))) and float(dev.min()) >= 0.0
    pick = np.linspace(0, 10 ** 6 - 1, 1000).astype(int)
    host = law.pdf(B.to_numpy(x)[pick])
    np.testing.assert_allclose(B.to_numpy(dev)[pick], host, rtol=1e-9, atol=1e-9 * host.max())


def test_cupy_slq_of_a_million_dimensional_mixer_jacobian():
    """The slow CPU acceptance run (tests/test_lanczos.py::test_width_one_million_mixer_density) on the GPU: depth-4
    tanh-orthogonal Mixer JJᵀ at S = C = 1000 (m = 10⁶) drawn on the device, SLQ with 50 steps and 4 probes: KS ≤ 0.02
    to the ⊠ law of the dense structured, m₁ and m₂ within 1 % of the law's exact moments (the CPU test's tolerances)."""
    from rmtnet import plot
    from rmtnet.spectra import jacobian_law
    from rmtnet.spectra.sampling import lanczos as lz
    from rmtnet.spectra.sampling import operators as ops
    net = network.mlp(4, 10, weights="orthogonal", activation="tanh", sigma_w=1.05)
    structured = ops.mixer_network(net, 1000, 1000, seed=0, backend="cupy")
    q = lz.slq(structured.jacobian_gram(), n_steps=50, n_probes=4, seed=1)
    law = jacobian_law(net)
    u = (np.arange(4000) + 0.5) / 4000
    assert plot.ks_distance(law, q.interpolated(lower=0.0).quantile(u)) <= 0.02
    for k in (1, 2):
        assert q.moment(k) == pytest.approx(law.moment(k), rel=0.01)


def test_cupy_slq_full_reorthogonalisation_keeps_to_the_basis_memory():
    """Full reorthogonalisation stores the Lanczos basis (probes × steps × m floats) and must not copy it: at
    m = 10⁶, 8 probes and 80 steps the basis is 5.1 GB, and SLQ runs with the device pool capped at the basis plus
    1.5 GB (an earlier version copied the strided basis for CuPy's einsum, needing up to twice that). The estimate is
    the law's: m₁ and m₂ within 1 %."""
    from rmtnet.spectra import jacobian_law
    from rmtnet.spectra.sampling import lanczos as lz
    from rmtnet.spectra.sampling import operators as ops
    cp = B.native("cupy")
    net = network.mlp(4, 10, weights="orthogonal", activation="tanh", sigma_w=1.05)
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    n_probes, n_steps, m = 8, 80, 10 ** 6
    pool.set_limit(size=n_probes * n_steps * m * 8 + 1536 * 2 ** 20)
    try:
        structured = ops.mixer_network(net, 1000, 1000, seed=0, backend="cupy")
        q = lz.slq(structured.jacobian_gram(), n_steps=n_steps, n_probes=n_probes, seed=1)
    finally:
        pool.set_limit(size=0)
        pool.free_all_blocks()
    law = jacobian_law(net)
    for k in (1, 2):
        assert q.moment(k) == pytest.approx(law.moment(k), rel=0.01)
