"""The infinite-width NTK (rmtnet.spectra.kernels.ntk_kernel) and the trained-ensemble predictor (ntk_predict):
closed forms against quadrature and finite differences, exact identities, the empirical NTK of actual torch networks,
the gradient-flow and gradient-descent predictors against their own definitions, and input validation."""
import numpy as np
import pytest
import torch

from rmtnet import backend as B
from rmtnet.spectra.network import mlp
from rmtnet.nets import MLP
from rmtnet.nets.probes import parameter_jacobian
from rmtnet.spectra.kernels import (derivative_pair_kernel, erf_derivative_kernel, erf_kernel, nngp_kernel,
                                    ntk_kernel, relu_derivative_kernel)
from rmtnet.spectra.predict import ntk_predict

RHOS = np.array([-1.0, -0.999999, -0.9, -0.5, 0.0, 0.3, 0.7, 0.99, 0.999999, 1.0])
VARIANCES = [(1.0, 1.0), (0.3, 2.5), (4.0, 0.01), (25.0, 9.0)]


def _inputs(seed=0, b=5, n0=16):
    """Inputs with pairwise correlations ≈ 0.5–0.85: every kernel entry far from 0 (relative errors mean something)."""
    rng = np.random.default_rng(seed)
    return np.abs(rng.standard_normal((b, n0))) + 0.2 * rng.standard_normal((b, n0))


# ---------------------------------------------------------------------------------------------------------------
# E[φ′φ′] and the kernel

@pytest.mark.parametrize("c11,c22", VARIANCES)
@pytest.mark.parametrize("name,closed", [("relu", relu_derivative_kernel), ("erf", erf_derivative_kernel)])
def test_derivative_closed_forms_match_quadrature(name, closed, c11, c22):
    c12 = RHOS * np.sqrt(c11 * c22)
    exact = closed(c11, c12, c22)
    quad = derivative_pair_kernel(name, c11, c12, c22, method="quadrature")
    assert np.allclose(quad, exact, rtol=1e-10, atol=1e-12)


def test_erf_derivative_kernel_is_the_c12_derivative_of_the_erf_kernel():
    """Price's theorem: ∂E[φ(z₁)φ(z₂)]/∂c12 = E[φ′(z₁)φ′(z₂)]; central differences of the closed form."""
    c11, c22 = 0.7, 2.2
    c12 = np.linspace(-0.9, 0.9, 7) * np.sqrt(c11 * c22)
    h = 1e-5
    fd = (erf_kernel(c11, c12 + h, c22) - erf_kernel(c11, c12 - h, c22)) / (2 * h)
    assert np.allclose(fd, erf_derivative_kernel(c11, c12, c22), rtol=1e-8)


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
@pytest.mark.parametrize("act", ["relu", "erf"])
def test_ntk_closed_form_equals_quadrature(act, parameterization):
    net = mlp(4, widths=(16, 300, 200, 100, 1), activation=act, sigma_w=1.3, sigma_b=0.2)
    X = _inputs()
    a = ntk_kernel(net, X, parameterization=parameterization)
    b = ntk_kernel(net, X, method="quadrature", parameterization=parameterization)
    assert np.max(np.abs(a - b) / np.abs(a)) < 1e-10


def test_linear_network_ntk_is_depth_times_nngp():
    """φ = id, σ_w = 1, σ_b = 0: Σ_ℓ = XXᵀ/n₀ and Σ̇ = 1, so Θ_L = L·XXᵀ/n₀ (ntk) and, with square widths n,
    Θ_L = XXᵀ(1 + (L − 1)n/n₀) (standard)."""
    X = _inputs()
    G = X @ X.T
    net = mlp(4, widths=(16, 50, 50, 50, 1), activation="linear")
    assert np.allclose(ntk_kernel(net, X), 4 * G / 16, rtol=1e-13)
    assert np.allclose(ntk_kernel(net, X, parameterization="standard"), G * (1 + 3 * 50 / 16), rtol=1e-13)


def test_return_all_carries_the_nngp_and_the_recursion():
    net = mlp(3, 64, activation="tanh", sigma_w=1.5, sigma_b=0.1)
    X = _inputs(b=4)
    layers = ntk_kernel(net, X, return_all=True)
    assert len(layers) == 3
    for (S, _), S_ref in zip(layers, nngp_kernel(net, X, return_all=True)):
        assert np.allclose(S, S_ref, rtol=1e-14)
    (S1, T1), (S2, T2) = layers[:2]
    assert np.allclose(T1, S1)
    d = np.diag(S1)
    D = derivative_pair_kernel("tanh", d[:, None], S1, d[None, :])
    assert np.allclose(T2, S2 + 1.5 ** 2 * D * T1, rtol=1e-13)
    assert np.all(np.linalg.eigvalsh(layers[-1][1]) > 0)


def _empirical(net, X, seeds):
    """Per-seed empirical NTKs of MLP.from_arch(net) (one output unit): the standard one, J Jᵀ over all parameters,
    and the NTK-parameterised one, each layer's block weighted by σ_w²/n_{ℓ−1} (weights) or σ_b² (biases)."""
    std, ntk = [], []
    for seed in seeds:
        model = MLP.from_arch(net, seed=seed, dtype=torch.float64)
        J = parameter_jacobian(model, torch.from_numpy(X))
        s = n = 0.0
        for name, jac in J.items():
            g = (jac.flatten(1) @ jac.flatten(1).T).numpy()
            layer = int(name.split(".")[1])
            c = net.sigma_w ** 2 / net.widths[layer] if name.endswith("weight") else net.sigma_b ** 2
            s, n = s + g, n + c * g
        std.append(s)
        ntk.append(n)
    return np.array(std), np.array(ntk)


CASES = [("relu", 1), ("relu", 2), ("relu", 3), ("erf", 1), ("erf", 4),
         pytest.param("relu", 4, marks=pytest.mark.slow), pytest.param("relu", 5, marks=pytest.mark.slow),
         pytest.param("erf", 2, marks=pytest.mark.slow), pytest.param("erf", 3, marks=pytest.mark.slow),
         pytest.param("erf", 5, marks=pytest.mark.slow)]


@pytest.mark.parametrize("act,depth", CASES)
def test_ntk_matches_the_empirical_ntk_of_wide_torch_networks(act, depth):
    """Width 2048, 8 seeds, 3 inputs: every entry of the mean empirical NTK within 3 standard errors of the limit,
    in both parameterisations (depth 1 is deterministic: equal to rounding)."""
    width = 2048
    net = mlp(depth, widths=(8,) + (width,) * (depth - 1) + (1,), activation=act, sigma_w=1.2, sigma_b=0.3,
              last_activation=False)
    X = _inputs(b=3, n0=8)
    std, ntk = _empirical(net, X, range(8))
    for emp, par in ((std, "standard"), (ntk, "ntk")):
        theory = ntk_kernel(net, X, parameterization=par)
        if depth == 1:
            assert np.allclose(emp, theory, rtol=1e-12)
            continue
        se = emp.std(axis=0, ddof=1) / np.sqrt(len(emp))
        assert np.all(np.abs(emp.mean(axis=0) - theory) <= 3 * se), (par, emp.mean(axis=0), theory, se)


def test_large_kernel_on_closed_forms_is_vectorised():
    """A 600 × 600 ReLU kernel at depth 10 in one pass per layer: symmetric, positive definite, diagonal equal to the
    one-point recursion (the benchmark times 2000 × 2000)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((600, 20))
    net = mlp(10, 100, sigma_w=np.sqrt(2), sigma_b=0.1)
    T = ntk_kernel(net, X)
    assert np.array_equal(T, T.T)
    d = np.array([ntk_kernel(net, X[i:i + 1])[0, 0] for i in (0, 17, 599)])
    assert np.allclose(np.diag(T)[[0, 17, 599]], d, rtol=1e-13)


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_ntk_kernel_on_cupy_matches_numpy():
    import cupy as cp
    X = _inputs(b=64)
    for act in ("relu", "erf"):
        net = mlp(5, 100, activation=act, sigma_w=1.3, sigma_b=0.2)
        g = ntk_kernel(net, cp.asarray(X))
        assert isinstance(g, cp.ndarray)
        assert np.allclose(cp.asnumpy(g), ntk_kernel(net, X), rtol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Prediction

def _problem(seed=0, n=12, t=5, n0=6):
    rng = np.random.default_rng(seed)
    Xa, Xt = rng.standard_normal((n, n0)), rng.standard_normal((t, n0))
    Y = np.sin(Xa[:, :2].sum(axis=1, keepdims=True)) * [1.0, -0.5]
    return mlp(3, 512, sigma_w=1.4, sigma_b=0.2, activation="erf"), Xa, Y, Xt


def _joint(net, Xa, Xt, par="ntk"):
    n = len(Xa)
    S, T = ntk_kernel(net, np.concatenate([Xa, Xt]), parameterization=par, return_all=True)[-1]
    return n, S, T


def test_t_infinity_is_kernel_regression():
    net, Xa, Y, Xt = _problem()
    n, S, T = _joint(net, Xa, Xt)
    mean, cov = ntk_predict(net, Xa, Y, Xt)
    A, Tx, K, Kx = T[:n, :n], T[n:, :n], S[:n, :n], S[n:, :n]
    assert np.allclose(mean, Tx @ np.linalg.solve(A, Y), rtol=1e-10, atol=1e-12)
    P = np.linalg.solve(A, Tx.T).T                                 # Θ*Θ⁻¹
    expected = S[n:, n:] + P @ K @ P.T - P @ Kx.T - Kx @ P.T
    assert np.allclose(cov, expected, rtol=1e-9, atol=1e-12)
    # at the training points the ensemble interpolates with no spread
    m_tr, c_tr = ntk_predict(net, Xa, Y, Xa)
    assert np.allclose(m_tr, Y, atol=1e-8) and np.max(np.abs(c_tr)) < 1e-7


def test_time_zero_is_the_prior_and_long_time_is_t_infinity():
    net, Xa, Y, Xt = _problem()
    n, S, _ = _joint(net, Xa, Xt)
    mean, cov = ntk_predict(net, Xa, Y, Xt, t=0.0)
    assert np.all(mean == 0) and np.allclose(cov, S[n:, n:], rtol=1e-13)
    m_inf, c_inf = ntk_predict(net, Xa, Y, Xt)
    m_t, c_t = ntk_predict(net, Xa, Y, Xt, t=1e9)
    assert np.allclose(m_t, m_inf, rtol=1e-7, atol=1e-9) and np.allclose(c_t, c_inf, rtol=1e-6, atol=1e-9)


def test_gradient_descent_predictor_is_the_iterated_linear_model():
    """k steps of f ← f − (η/N)Θ(f − Y) on the train outputs, with the test outputs moved by −(η/N)Θ*(f − Y), from
    f = 0: the mean of ntk_predict(steps=k). And the flow at t = kη is the small-η limit of k steps."""
    net, Xa, Y, Xt = _problem()
    n, _, T = _joint(net, Xa, Xt)
    A, Tx = T[:n, :n], T[n:, :n]
    eta, k = 0.7, 40
    f, g = np.zeros_like(Y), np.zeros((len(Xt), Y.shape[1]))
    for _ in range(k):
        r = f - Y
        f, g = f - eta / Y.size * A @ r, g - eta / Y.size * Tx @ r
    mean, _ = ntk_predict(net, Xa, Y, Xt, learning_rate=eta, steps=k)
    assert np.allclose(mean, g, rtol=1e-10, atol=1e-12)
    m_gd, c_gd = ntk_predict(net, Xa, Y, Xt, learning_rate=1e-4, steps=200_000)
    m_gf, c_gf = ntk_predict(net, Xa, Y, Xt, learning_rate=1.0, t=20.0)
    assert np.allclose(m_gd, m_gf, rtol=1e-3, atol=1e-6) and np.allclose(c_gd, c_gf, rtol=1e-3, atol=1e-6)


def test_diag_reg_is_scaled_by_the_mean_eigenvalue():
    net, Xa, Y, Xt = _problem()
    n, _, T = _joint(net, Xa, Xt)
    lam = 0.1 * np.trace(T[:n, :n]) / n
    a, _ = ntk_predict(net, Xa, Y, Xt, diag_reg=0.1)
    b, _ = ntk_predict(net, Xa, Y, Xt, diag_reg=lam, diag_reg_absolute_scale=True)
    assert np.allclose(a, b, rtol=1e-12)
    assert np.allclose(a, T[n:, :n] @ np.linalg.solve(T[:n, :n] + lam * np.eye(n), Y), rtol=1e-10)


def test_bad_inputs_raise_value_errors_naming_the_argument():
    net, Xa, Y, Xt = _problem()
    with pytest.raises(ValueError, match="parameterization"):
        ntk_kernel(net, Xa, parameterization="mean_field")
    with pytest.raises(ValueError, match="method"):
        ntk_kernel(net, Xa, method="exact")
    with pytest.raises(ValueError, match="closed_form"):
        ntk_kernel(mlp(2, 10, activation="tanh", sigma_w=1.0), Xa, method="closed_form")
    with pytest.raises(ValueError, match="x1 must be finite"):
        ntk_kernel(net, np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="X_test"):
        ntk_predict(net, Xa, Y, Xt[:, :-1])
    with pytest.raises(ValueError, match="Y_train"):
        ntk_predict(net, Xa, Y[:-1], Xt)
    with pytest.raises(ValueError, match="t must lie"):
        ntk_predict(net, Xa, Y, Xt, t=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        ntk_predict(net, Xa, Y, Xt, t=1.0, learning_rate=0.0)
    with pytest.raises(ValueError, match="diag_reg"):
        ntk_predict(net, Xa, Y, Xt, diag_reg=-1.0)
    with pytest.raises(ValueError, match="steps"):
        ntk_predict(net, Xa, Y, Xt, steps=-2)
    with pytest.raises(ValueError, match="either t"):
        ntk_predict(net, Xa, Y, Xt, t=1.0, steps=3)
    with pytest.raises(ValueError, match="positive definite"):
        ntk_predict(net, np.concatenate([Xa, Xa[:1]]), np.concatenate([Y, Y[:1]]), Xt)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
@pytest.mark.parametrize("act", ["relu", "erf", "linear"])
def test_blockwise_recursion_equals_the_whole_matrix_one(act, parameterization, threads, monkeypatch):
    """The closed forms run a few rows of the upper triangle at a time through all layers (blocks of 4 rows here,
    37 points: ten blocks, the last of one row), on one thread or two, mirrored: every layer's Σ and Θ equal the
    recursion written on whole matrices, exactly symmetric, and the kernel of each point with itself equal to the
    recursion on that point alone (its correlation with itself exactly 1 at every layer: one rounding below 1 would
    move ReLU's arccos by 1e-8)."""
    from threadpoolctl import threadpool_limits
    from rmtnet.spectra import kernels
    from rmtnet.spectra.activations import activation
    monkeypatch.setattr(kernels, "_BLOCK_ENTRIES", 4 * 37)
    net = mlp(4, widths=(12, 30, 20, 10, 1), activation=act, sigma_w=1.3, sigma_b=0.2)
    X = np.random.default_rng(3).standard_normal((37, 12))
    with threadpool_limits(threads):
        layers = ntk_kernel(net, X, parameterization=parameterization, return_all=True)
        nngp = nngp_kernel(net, X, return_all=True)
    pair, sw2, sb2 = activation(act).pair_kernels, 1.3 ** 2, 0.2 ** 2
    S = sw2 * X @ X.T / 12 + sb2
    T = S if parameterization == "ntk" else X @ X.T + 1.0
    for layer, ((S_b, T_b), S_n) in enumerate(zip(layers, nngp)):
        if layer:
            d = np.diag(S)
            K, D = pair(d[:, None], S, d[None, :])
            S_next = sw2 * K + sb2
            T = (S_next if parameterization == "ntk" else net.widths[layer] * K + 1.0) + sw2 * D * T
            S = S_next
        for got in (S_b, T_b, S_n):
            assert np.array_equal(got, got.T)
        np.testing.assert_allclose(S_b, S, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(T_b, T, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(S_n, S_b)
    alone = [ntk_kernel(net, X[i:i + 1], parameterization=parameterization)[0, 0] for i in (0, 17, 36)]
    np.testing.assert_allclose(np.diag(layers[-1][1])[[0, 17, 36]], alone, rtol=1e-14)   # a ρ = 1 − 1e-16: 1e-8
