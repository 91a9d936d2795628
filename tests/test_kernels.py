"""NNGP kernels (rmtnet.spectra.kernels): closed forms vs quadrature vs wide random networks, identities tying the
kernel to mean field, GP regression, input validation, and the nngp figure."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rmtnet.spectra import activations
from rmtnet import backend as B
from rmtnet import cli
from rmtnet.spectra.network import mlp
from rmtnet.spectra import kernels, meanfield
from rmtnet.spectra.kernels import (erf_kernel, gaussian_pair_expectation, kernel_map, nngp_kernel, pair_kernel,
                                    relu_kernel)
from rmtnet.spectra.sampling.montecarlo import sample_nngp_kernel
from rmtnet.spectra.predict import gp_posterior, nngp_regression

RHOS = np.array([-1.0, -1 + 1e-12, -0.999999, -0.9, -0.5, 0.0, 0.3, 0.7, 0.99, 0.999999, 1 - 1e-12, 1.0])
VARIANCES = [(1.0, 1.0), (0.3, 2.5), (4.0, 0.01), (25.0, 9.0)]


def _inputs(seed=0, b=5, n0=16):
    """Inputs with pairwise correlations ≈ 0.5–0.85, so every NNGP entry is far from 0 and a relative error is
    meaningful entrywise."""
    rng = np.random.default_rng(seed)
    return np.abs(rng.standard_normal((b, n0))) + 0.2 * rng.standard_normal((b, n0))


# ---------------------------------------------------------------------------------------------------------------
# Bivariate Gaussian expectations

@pytest.mark.parametrize("c11,c22", VARIANCES)
@pytest.mark.parametrize("name,closed", [("relu", relu_kernel), ("erf", erf_kernel)])
def test_closed_forms_match_quadrature(name, closed, c11, c22):
    act = activations.activation(name)
    c12 = RHOS * np.sqrt(c11 * c22)
    quad = gaussian_pair_expectation(act, act, c11, c12, c22)
    assert np.all(np.isfinite(quad))
    np.testing.assert_allclose(quad, closed(c11, c12, c22), rtol=0, atol=1e-8 * max(1.0, np.sqrt(c11 * c22)))
    np.testing.assert_allclose(pair_kernel(name, c11, c12, c22, method="quadrature"), quad, rtol=0, atol=1e-15)


def test_linear_is_c12_exactly():
    c11, c22 = 2.0, 0.5
    c12 = RHOS * 1.0
    assert np.array_equal(pair_kernel("linear", c11, c12, c22), c12)
    np.testing.assert_allclose(pair_kernel("linear", c11, c12, c22, method="quadrature"), c12, atol=1e-12)


def test_quadrature_exact_identities():
    """Independent checks of the quadrature on functions with known bivariate moments: Sheppard's orthant
    probability (jumps at 0), Isserlis (polynomials), E[cos z₁ cos z₂] (smooth, oscillating)."""
    rho = np.linspace(-1, 1, 21)
    step = lambda z: (z > 0) * 1.0                                         # noqa: E731
    p = gaussian_pair_expectation(step, step, 2.0, 2.0 * rho, 2.0, f_breakpoints=(0.0,), g_breakpoints=(0.0,))
    np.testing.assert_allclose(p, 0.25 + np.arcsin(rho) / (2 * np.pi), atol=1e-12)
    c11, c22 = 1.5, 0.7
    c12 = rho * np.sqrt(c11 * c22)
    sq = gaussian_pair_expectation(np.square, np.square, c11, c12, c22)
    np.testing.assert_allclose(sq, c11 * c22 + 2 * c12 ** 2, atol=1e-12)
    cc = gaussian_pair_expectation(np.cos, np.cos, c11, c12, c22)
    exact = 0.5 * (np.exp(-(c11 + c22 - 2 * c12) / 2) + np.exp(-(c11 + c22 + 2 * c12) / 2))
    np.testing.assert_allclose(cc, exact, atol=1e-13)


@pytest.mark.parametrize("name", ["tanh", "hard_tanh", "erf", "relu"])
def test_quadrature_diagonal_is_meanfield_second_moment(name):
    act = activations.activation(name)
    for q in (0.05, 1.0, 7.0):
        got = gaussian_pair_expectation(act, act, q, q, q)
        ref = meanfield.gaussian_expectation(lambda h: act.phi(h) ** 2, q, act.breakpoints)
        assert abs(got - ref) < 1e-11, (name, q)


def test_degenerate_covariances_have_no_nan():
    act = activations.activation("hard_tanh")
    c11 = np.array([0.0, 0.0, 1.0, 2.0])
    c22 = np.array([0.0, 1.0, 0.0, 2.0])
    c12 = np.array([0.0, 0.0, 0.0, -2.0])
    v = gaussian_pair_expectation(act, act, c11, c12, c22)
    assert np.all(np.isfinite(v)) and np.allclose(v[:3], 0.0)
    assert abs(v[3] + meanfield.second_moment(act, 2.0)) < 1e-12            # ρ = -1, odd φ: E = -E[φ²]
    assert np.all(np.isfinite(relu_kernel(c11, c12, c22))) and np.all(np.isfinite(erf_kernel(c11, c12, c22)))


def test_user_callable_named_like_a_registered_activation_is_not_given_its_closed_form():
    def erf(h):                                    # scipy's erf, not rmtnet's erf(√π h/2)
        from scipy import special
        return special.erf(h)
    act = activations.activation(erf, lambda h: 2 / np.sqrt(np.pi) * np.exp(-h * h))
    v = pair_kernel(act, 1.0, 0.5, 1.0)
    assert abs(v - 2 / np.pi * np.arcsin(2 * 0.5 / 3.0)) < 1e-12           # Williams with a = 1
    with pytest.raises(ValueError, match="closed_form"):
        pair_kernel(act, 1.0, 0.5, 1.0, method="closed_form")


# ---------------------------------------------------------------------------------------------------------------
# NNGP propagation and its acceptance against wide networks

def test_nngp_relu_closed_form_quadrature_and_wide_networks_agree():
    """REFERENCE acceptance: ReLU NNGP closed form = quadrature (1e-8) = Monte Carlo of width-4096 networks within 1 %
    (relative, entrywise). MC: 2000 Gaussian networks of depth 3 drawn in law on the 5 inputs (sampler="marginal",
    exact in law; the weight-matrix sampler is checked against it below). Per-network relative spread of an entry is
    ≈ 5.5 %, so the standard error is ≈ 0.12 % and 3 SE ≈ 0.4 % — the 1 % tolerance is ≥ 2× 3 SE (asserted), while
    the O(1/n) finite-width bias (≈ 0.02 %) is negligible."""
    X = _inputs()
    net = mlp(3, 4096, sigma_w=np.sqrt(2.0), sigma_b=0.3, activation="relu")
    K = nngp_kernel(net, X)
    Kq = nngp_kernel(net, X, method="quadrature")
    np.testing.assert_allclose(Kq, K, rtol=1e-8, atol=0)
    S = 2000
    grams = sample_nngp_kernel(net, X, 4096, n_samples=S, seed=1, sampler="marginal", return_samples=True)
    mc = grams.mean(axis=0)
    rel_se = grams.std(axis=0, ddof=1) / np.sqrt(S) / np.abs(K)
    assert 3 * rel_se.max() < 0.005                                        # 1 % is well above 3 SE
    assert np.abs(mc / K - 1).max() < 0.01
    assert np.abs(mc / K - 1).max() < 4 * rel_se.max()                     # and consistent with pure noise


def test_weight_matrix_sampler_has_the_law_of_the_marginal_sampler():
    """Gaussian weight matrices materialised (16 → 128 → 128 → 128, erf) vs the marginal sampler at the same width:
    the same law, finite-width effects included, so means agree within 5 combined standard errors (≈ 1.3 % relative
    here; the O(1/n) bias of both vs the NNGP is ≈ 1 % at n = 128 and cancels) and the per-network spreads agree
    within 15 % (measured 0.94–1.05)."""
    X = _inputs(seed=3)
    net = mlp(3, 128, sigma_w=1.4, sigma_b=0.2, activation="erf")
    gw = sample_nngp_kernel(net, X, 128, n_samples=1000, seed=7, return_samples=True)
    gm = sample_nngp_kernel(net, X, 128, n_samples=4000, seed=8, sampler="marginal", return_samples=True)
    se = np.sqrt(gw.var(axis=0, ddof=1) / len(gw) + gm.var(axis=0, ddof=1) / len(gm))
    assert np.all(np.abs(gw.mean(axis=0) - gm.mean(axis=0)) <= 5 * se)
    ratio = gw.std(axis=0) / gm.std(axis=0)
    assert 0.85 < ratio.min() and ratio.max() < 1.15
    K = nngp_kernel(net, X)
    assert np.abs(gm.mean(axis=0) / K - 1).max() < 0.03


def test_orthogonal_weights_match_theory():
    """Haar orthogonal weights (a scaled Haar partial isometry at the 16 → 256 input layer, Haar orthogonal 256 × 256
    after it), 100 networks: every entry of the mean Gram within 5 standard errors (≈ 5 % relative) of the erf NNGP —
    a wrong isometry scaling (factor 256/16) or weight variance would be far outside."""
    X = _inputs(seed=3)
    net = mlp(3, 256, weights="orthogonal", sigma_w=1.4, sigma_b=0.2, activation="erf")
    K = nngp_kernel(net, X)
    g = sample_nngp_kernel(net, X, 256, n_samples=100, seed=7, return_samples=True)
    se = g.std(axis=0, ddof=1) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - K) <= 5 * se)
    assert (se / K).max() < 0.015


def test_marginal_sampler_handles_fewer_input_dims_than_inputs_and_return_all():
    X = _circle_inputs = np.sqrt(2) * np.column_stack([np.cos(np.linspace(0, 3, 7)), np.sin(np.linspace(0, 3, 7))])
    net = mlp(4, 512, sigma_w=1.3, sigma_b=0.1, activation="tanh")
    theory = nngp_kernel(net, X, return_all=True)
    mc = sample_nngp_kernel(net, X, 512, n_samples=200, seed=2, sampler="marginal", return_all=True)
    assert len(theory) == len(mc) == 4
    for t, m in zip(theory, mc):
        assert m.shape == (7, 7)
        assert np.abs(m - t).max() < 0.02 * np.abs(t).max()
    np.testing.assert_allclose(theory[0], 1.3 ** 2 * X @ X.T / 2 + 0.1 ** 2, rtol=1e-14)


def test_relu_critical_preserves_the_diagonal():
    X = _inputs(b=4)
    net = mlp(6, 100, sigma_w=np.sqrt(2.0), sigma_b=0.0, activation="relu")
    q0 = np.sum(X * X, axis=1) / X.shape[1]
    for S in nngp_kernel(net, X, return_all=True):
        np.testing.assert_allclose(np.diag(S), 2.0 * q0, rtol=1e-13)


@pytest.mark.parametrize("name,sw,sb,method", [("relu", 1.3, 0.4, "auto"), ("erf", 1.8, 0.2, "auto"),
                                               ("tanh", 1.1, 0.3, "auto"), ("hard_tanh", 1.2, 0.1, "quadrature")])
def test_diagonal_is_the_meanfield_length_map(name, sw, sb, method):
    X = _inputs(b=3)
    net = mlp(5, 100, sigma_w=sw, sigma_b=sb, activation=name)
    Ks = nngp_kernel(net, X, method=method, return_all=True)
    for a in range(X.shape[0]):
        q = meanfield.variance_profile(name, sw, sb, float(X[a] @ X[a]) / X.shape[1], 5)
        np.testing.assert_allclose([S[a, a] for S in Ks], q, rtol=1e-11)


@pytest.mark.parametrize("name", ["relu", "erf", "tanh"])
def test_kernel_is_symmetric_psd_and_kernel_map_is_one_layer(name):
    X = _inputs(seed=5, b=6)
    net = mlp(4, 100, sigma_w=1.5, sigma_b=0.2, activation=name)
    Ks = nngp_kernel(net, X, return_all=True)
    for prev, nxt in zip(Ks[:-1], Ks[1:]):
        np.testing.assert_array_equal(nxt, kernel_map(name, 1.5, 0.2, prev))
    for S in Ks:
        assert np.array_equal(S, S.T)
        assert np.linalg.eigvalsh(S).min() > -1e-12 * np.abs(S).max()


# ---------------------------------------------------------------------------------------------------------------
# GP regression

def _gp_problem():
    X = _inputs(seed=11, b=9)
    net = mlp(3, 100, sigma_w=1.5, sigma_b=0.3, activation="erf")
    Y = np.sin(X.sum(axis=1))
    return net, X[:6], Y[:6], X[6:]


def test_gp_posterior_interpolates_training_points():
    net, Xa, Ya, _ = _gp_problem()
    K = nngp_kernel(net, Xa)
    mean, var = gp_posterior(K, K, np.diag(K), Ya)
    np.testing.assert_allclose(mean, Ya, atol=1e-8)
    np.testing.assert_allclose(var, 0.0, atol=1e-8)
    _, cov = gp_posterior(K, K, K, Ya)
    np.testing.assert_allclose(cov, 0.0, atol=1e-8)


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_gp_posterior_and_nngp_regression_match_direct_solve(noise):
    net, Xa, Ya, Xt = _gp_problem()
    K = nngp_kernel(net, np.vstack([Xa, Xt]))
    n = len(Xa)
    Ktr, Kx, Ks = K[:n, :n], K[n:, :n], K[n:, n:]
    A = Ktr + noise * np.eye(n)
    mean_ref = Kx @ np.linalg.solve(A, Ya)
    cov_ref = Ks - Kx @ np.linalg.solve(A, Kx.T)
    mean, cov = gp_posterior(Ktr, Kx, Ks, Ya, noise=noise)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-8, atol=1e-12)
    m2, v2 = nngp_regression(net, Xa, Ya, Xt, noise=noise)
    np.testing.assert_allclose(m2, mean_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(v2, np.diag(cov_ref), rtol=1e-8, atol=1e-12)
    m3, c3 = nngp_regression(net, Xa, np.column_stack([Ya, 2 * Ya]), Xt, noise=noise, full_cov=True)
    np.testing.assert_allclose(m3, np.column_stack([mean_ref, 2 * mean_ref]), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(c3, cov_ref, rtol=1e-8, atol=1e-12)


def test_gp_posterior_rejects_singular_kernels():
    net, Xa, Ya, _ = _gp_problem()
    Xd = np.vstack([Xa, Xa[:1]])                                         # a repeated input: K(X, X) singular
    K = nngp_kernel(net, Xd)
    Yd = np.append(Ya, Ya[0])
    with pytest.raises(ValueError, match="positive definite|singular"):
        gp_posterior(K, K, np.diag(K), Yd)
    mean, _ = gp_posterior(K, K, np.diag(K), Yd, noise=1e-6)             # a jitter makes it solvable
    assert np.all(np.isfinite(mean))


# ---------------------------------------------------------------------------------------------------------------
# Cross kernels between two input sets, kernel_fn(x1, x2) as in neural-tangents

def _two_sets(seed=3, n1=4, n2=3, n0=16):
    """Two input sets whose rows have different norms (so the two sets' variances, and the quadrature's panels,
    differ) and pairwise correlations ≈ 0.5–0.85 (every kernel entry far from 0: an entrywise relative error)."""
    X = _inputs(seed, n1 + n2, n0) * np.linspace(0.5, 2.0, n1 + n2)[:, None]
    return X[:n1], X[n1:]


@pytest.mark.parametrize("name", ["relu", "erf", "tanh", "linear"])
def test_cross_kernel_is_the_block_of_the_joint_kernel(name):
    """kernel(x1, x2) = kernel(concat(x1, x2))[:n₁, n₁:] entrywise to 1e-14 relative, every layer's Σ and Θ, at
    depths 1, 2 and 5, with and without biases, in both parameterisations. tanh (by quadrature, whose cost grows
    with the largest variance) at depths 1 and 3 on inputs scaled by 1/2: first-layer variances 0.2–2.0, past 1 where
    the quadrature's panels start to depend on them."""
    x1, x2 = (x * (0.5 if name == "tanh" else 1.0) for x in _two_sets())
    n1, n2 = len(x1), len(x2)
    X = np.concatenate([x1, x2])
    for depth in (1, 3) if name == "tanh" else (1, 2, 5):
        for sigma_b in (0.0, 0.3):
            net = mlp(depth, 20, sigma_w=1.4, sigma_b=sigma_b, activation=name)
            joint = nngp_kernel(net, X, return_all=True)
            cross = nngp_kernel(net, x1, x2, return_all=True)
            assert len(cross) == depth and all(c.shape == (n1, n2) for c in cross)
            for c, j in zip(cross, joint):
                np.testing.assert_allclose(c, j[:n1, n1:], rtol=1e-14, atol=0)
            for par in kernels.PARAMETERIZATIONS:
                joint = kernels.ntk_kernel(net, X, parameterization=par, return_all=True)
                cross = kernels.ntk_kernel(net, x1, x2, parameterization=par, return_all=True)
                assert len(cross) == depth
                for (S, T), (Sj, Tj) in zip(cross, joint):
                    assert S.shape == T.shape == (n1, n2)
                    np.testing.assert_allclose(S, Sj[:n1, n1:], rtol=1e-14, atol=0)
                    np.testing.assert_allclose(T, Tj[:n1, n1:], rtol=1e-14, atol=0)


def test_cross_kernel_closed_form_swap_and_neural_tangents_call_shape():
    """The linear net's closed form Σ_L(x1, x2) = σ_w^{2L} x₁x₂ᵀ/n₀ and Θ_L = L·Σ_L (σ_b = 0, NTK parameterisation);
    kernel(x2, x1) = kernel(x1, x2)ᵀ; neural-tangents' positional call ntk_kernel(net, x1, x2); x2 = None or x2
    equal to x1 gives the kernel of x1 with itself, bit for bit; nngp_blocks' cross block is the same kernel."""
    x1, x2 = _two_sets()
    lin = mlp(3, 20, sigma_w=1.5, activation="linear")
    sigma = 1.5 ** 6 * x1 @ x2.T / x1.shape[1]
    np.testing.assert_allclose(nngp_kernel(lin, x1, x2), sigma, rtol=1e-14)
    np.testing.assert_allclose(kernels.ntk_kernel(lin, x1, x2), 3 * sigma, rtol=1e-14)
    net = mlp(4, 20, sigma_w=1.4, sigma_b=0.2, activation="relu")
    cross = kernels.ntk_kernel(net, x1, x2)
    assert cross.shape == (len(x1), len(x2))
    np.testing.assert_allclose(kernels.ntk_kernel(net, x2, x1), cross.T, rtol=1e-14)
    np.testing.assert_allclose(nngp_kernel(net, x2, x1), nngp_kernel(net, x1, x2).T, rtol=1e-14)
    own = kernels.ntk_kernel(net, x1)
    assert np.array_equal(kernels.ntk_kernel(net, x1, None), own)
    assert np.array_equal(kernels.ntk_kernel(net, x1, x1.copy()), own)
    assert np.array_equal(nngp_kernel(net, x1, x1.tolist()), nngp_kernel(net, x1))
    S, T = kernels.ntk_kernel(net, x1, x2, return_all=True)[-1]      # kernel_fn(x1, x2, ("nngp", "ntk"))
    assert np.array_equal(S, nngp_kernel(net, x1, x2)) and np.array_equal(T, cross)
    _, K_cross, _ = kernels.nngp_blocks(net, x2, x1)
    np.testing.assert_allclose(K_cross, nngp_kernel(net, x1, x2), rtol=1e-14)


def test_options_in_the_third_place_still_work_with_a_deprecation_warning():
    """rmtnet 0.1's calls ntk_kernel(net, X, method, parameterization, return_all) and nngp_kernel(net, X=...) give
    the same numbers with a DeprecationWarning; a clash with a keyword is a TypeError."""
    X = _inputs()
    net = mlp(3, 20, sigma_w=1.3, sigma_b=0.2, activation="erf")
    with pytest.warns(DeprecationWarning, match="x2"):
        old = kernels.ntk_kernel(net, X, "quadrature", "standard", True)
    new = kernels.ntk_kernel(net, X, method="quadrature", parameterization="standard", return_all=True)
    assert all(np.array_equal(a, b) for pair, other in zip(old, new) for a, b in zip(pair, other))
    with pytest.warns(DeprecationWarning, match="x2"):
        assert np.array_equal(nngp_kernel(net, X, "closed_form"), nngp_kernel(net, X, method="closed_form"))
    with pytest.warns(DeprecationWarning, match="X="):
        assert np.array_equal(nngp_kernel(net, X=X), nngp_kernel(net, X))
    with pytest.raises(TypeError, match="method"):
        kernels.ntk_kernel(net, X, "auto", method="auto")
    with pytest.raises(TypeError, match="x1"):
        nngp_kernel(net, X, X=X)


def test_bad_second_inputs_raise_value_errors_naming_x2():
    x1, x2 = _two_sets()
    net = mlp(2, 20, activation="relu")
    for kernel in (nngp_kernel, kernels.ntk_kernel):
        with pytest.raises(ValueError, match="x2 must have as many columns as x1"):
            kernel(net, x1, x2[:, :-1])
        with pytest.raises(ValueError, match="x2 must be finite"):
            kernel(net, x1, np.full_like(x2, np.nan))
        with pytest.raises(ValueError, match="x2 must be a 2-D"):
            kernel(net, x1, x2[0])
        with pytest.raises(ValueError, match="x2"):
            kernel(net, x1, "exact")
    with pytest.raises(ValueError, match="closed_form"):
        kernels.ntk_kernel(mlp(2, 10, activation="tanh"), x1, x2, method="closed_form")


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_cross_kernel_on_cupy():
    import cupy as cp
    x1, x2 = _two_sets()
    net = mlp(4, 20, sigma_w=1.4, sigma_b=0.2, activation="relu")
    for par in kernels.PARAMETERIZATIONS:
        g = kernels.ntk_kernel(net, cp.asarray(x1), cp.asarray(x2), parameterization=par)
        assert isinstance(g, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(g), kernels.ntk_kernel(net, x1, x2, parameterization=par), rtol=1e-13)


# ---------------------------------------------------------------------------------------------------------------
# Input validation

def test_bad_inputs_raise_value_errors_naming_the_argument():
    net, Xa, Ya, Xt = _gp_problem()
    K = nngp_kernel(net, Xa)
    with pytest.raises(ValueError, match="noise"):
        gp_posterior(K, K, np.diag(K), Ya, noise=-1e-3)
    with pytest.raises(ValueError, match="K_cross"):
        gp_posterior(K, K[:, :-1], np.diag(K), Ya)
    with pytest.raises(ValueError, match="K_test"):
        gp_posterior(K, K, np.diag(K)[:-1], Ya)
    with pytest.raises(ValueError, match="Y"):
        gp_posterior(K, K, np.diag(K), Ya[:-1])
    with pytest.raises(ValueError, match="K_train"):
        gp_posterior(K[:, :-1], K, np.diag(K), Ya)
    with pytest.raises(ValueError, match="x1 must be a 2-D"):
        nngp_kernel(net, Xa[0])
    with pytest.raises(ValueError, match="x1 must be finite"):
        nngp_kernel(net, np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="X_test"):
        nngp_regression(net, Xa, Ya, Xt[:, :-1])
    with pytest.raises(ValueError, match="Y_train"):
        nngp_regression(net, Xa, Ya[:-1], Xt)
    with pytest.raises(ValueError, match="method"):
        nngp_kernel(net, Xa, method="exact")
    with pytest.raises(ValueError, match="c12"):
        pair_kernel("relu", 1.0, 1.5, 1.0)
    with pytest.raises(ValueError, match="c11"):
        relu_kernel(-1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="Sigma"):
        kernel_map("relu", 1.0, 0.0, np.array([[1.0, 0.2], [0.3, 1.0]]))
    with pytest.raises(ValueError, match="n_samples"):
        sample_nngp_kernel(net, Xa, 64, n_samples=0)
    with pytest.raises(ValueError, match="width"):
        sample_nngp_kernel(net, Xa, -3)
    with pytest.raises(ValueError, match="sampler"):
        sample_nngp_kernel(mlp(2, 64, weights="orthogonal", sigma_w=1.0), Xa, 64, sampler="marginal")


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
@pytest.mark.parametrize("sampler", ["weights", "marginal"])
def test_sample_nngp_kernel_on_cupy(sampler):
    X = _inputs()
    net = mlp(3, 4096, sigma_w=np.sqrt(2.0), sigma_b=0.3, activation="erf")
    K = nngp_kernel(net, X)
    S = 200 if sampler == "marginal" else 16
    g = sample_nngp_kernel(net, X, 4096, n_samples=S, seed=0, backend="cupy", sampler=sampler, return_samples=True)
    assert isinstance(g, np.ndarray) and g.dtype == np.float64
    se = g.std(axis=0, ddof=1) / np.sqrt(S)
    assert np.all(np.abs(g.mean(axis=0) - K) <= 5 * se)


# ---------------------------------------------------------------------------------------------------------------
# The figure

def test_nngp_figure(tmp_path):
    """Quick mode: width 1024, 128 networks of depth 32. The correlation ρ_ℓ(θ) of MC and theory must agree within
    0.03 at every depth and angle: the standard error is ≤ 0.006 (asserted) and the finite-width bias at depth 32,
    O(L/n), measured ≈ 0.005 at this width; the GP posterior must track the truth."""
    path, tables = cli.load_simulation("nngp")["main"](full=False, outdir=tmp_path)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    csv = pd.read_csv(Path(path).with_suffix(".csv"))
    assert set(csv.panel) == set(tables)
    for name in ("ReLU correlation MC", "erf correlation MC"):
        t = tables[name]
        assert set(t.depth) == {1, 2, 4, 8, 16, 32}
        assert t.attrs["max_se"] < 0.006, name
        assert t.attrs["max_abs_err"] < 0.03, name
    gp = tables["GP regression"]
    assert gp.attrs["rmse"] < 0.2 and gp.attrs["coverage"] > 0.9
