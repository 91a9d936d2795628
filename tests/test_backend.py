"""The array backend: NumPy always, CuPy when a device is present (those tests skip cleanly without one)."""
import numpy as np
import pytest
from scipy import stats

from rmtnet import backend as B
from rmtnet.spectra import MarchenkoPastur
from rmtnet.spectra.sampling import montecarlo
from rmtnet.plot import ks_distance

def test_numpy_namespace_and_float64_default():
    xp = B.namespace("numpy")
    a = xp.ones((3, 3))
    assert a.dtype == xp.float64 and B.DEFAULT_DTYPE == "float64"
    assert B.native("numpy") is np
    assert isinstance(B.to_numpy(a), np.ndarray)


def test_unknown_backend_is_rejected_by_name():
    with pytest.raises(ValueError, match="backend"):
        B.namespace("jax")
    with pytest.raises(ValueError, match="backend"):
        B.set_backend("torch")
    assert B.get_backend() == "numpy"


def test_torch_device_follows_the_array_backend():
    """``--backend cupy`` trains on CUDA, NumPy (and the default) on the CPU; a bad name is refused by name."""
    assert B.torch_device("cupy") == "cuda" and B.torch_device("numpy") == "cpu" and B.torch_device() == "cpu"
    with pytest.raises(ValueError, match="backend"):
        B.torch_device("cuda")


def test_cupy_without_a_device_is_a_clear_error():
    if B.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="cupy|CUDA|CuPy"):
        B.set_backend("cupy")
    assert B.get_backend() == "numpy"


def test_haar_orthogonal_is_orthogonal_and_haar():
    rng = B.rng(7, "numpy")
    q = montecarlo.haar_orthogonal(3, rng, "numpy", batch=20000)
    assert np.allclose(q @ np.swapaxes(q, -1, -2), np.eye(3), atol=1e-12)
    # under Haar measure on O(3) every entry is uniform on [-1, 1]; QR without the sign fix biases the diagonal
    for i, j in ((0, 0), (2, 2), (0, 1)):
        assert stats.kstest(q[:, i, j], stats.uniform(-1, 2).cdf).pvalue > 0.001


def test_seeds_make_draws_reproducible():
    a = montecarlo.wishart_eigs(50, 100, seed=3)
    b = montecarlo.wishart_eigs(50, 100, seed=3)
    c = montecarlo.wishart_eigs(50, 100, seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_global_backend_switch_round_trips():
    B.set_backend("numpy")
    assert B.get_backend() == "numpy"
    assert isinstance(montecarlo.wishart_eigs(10, 20, seed=0), np.ndarray)


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_cupy_wishart_matches_the_law():
    eig = B.to_numpy(montecarlo.wishart_eigs(1000, 2000, seed=0, backend="cupy"))
    assert eig.dtype == np.float64
    assert ks_distance(MarchenkoPastur(0.5), eig) < 0.02


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_cupy_haar_and_products():
    cp = B.native("cupy")
    q = montecarlo.haar_orthogonal(64, B.rng(1, "cupy"), "cupy", batch=4)
    assert float(cp.abs(q @ cp.swapaxes(q, -1, -2) - cp.eye(64)).max()) < 1e-12
    eig = B.to_numpy(montecarlo.ginibre_product_eigs(800, 2, seed=2, backend="cupy"))
    from rmtnet.spectra import FussCatalan
    assert ks_distance(FussCatalan(2), eig) < 0.03
