"""Monarch matrices (Dao et al., ICML 2022, arXiv 2204.00595): the matrix-free operator against its dense matrix and
the torch layer, the free-product singular-value law against Monte Carlo and stochastic Lanczos quadrature, and the
DFT of size b² as a product of Monarch factors (four-step Cooley–Tukey)."""
import numpy as np
import pytest
import torch
from scipy.linalg import block_diag

from rmtnet import backend as B
from rmtnet import plot
from rmtnet.nets import MonarchLinear
from rmtnet.spectra import FussCatalan, monarch, network
from rmtnet.spectra.sampling import lanczos
from rmtnet.spectra.sampling import operators as ops

LINEAR = network.mlp(1, 10, activation="linear", q0=1.0)


def _dense(factors, n):
    M = np.eye(n)
    for f in factors:
        M = f.to_dense() @ M
    return M


def _entrywise(r, l):
    """M[(s, c), (s′, c′)] = L_c[s, s′] R_{s′}[c, c′], built entry by entry (square blocks)."""
    b, k = r.shape[0], r.shape[1]
    return np.einsum("csz,zcd->sczd", l, r).reshape(b * k, b * k)


@pytest.mark.parametrize("S, C", [(3, 5), (4, 4), (6, 2)])
def test_operator_equals_dense_matrix_and_torch_layer(S, C):
    """The factors' product, its matvec and its transpose equal Pᵀ L P R entry by entry, and MonarchLinear.dense()
    with the same blocks, to 1e-12."""
    structured = ops.mixer_network(LINEAR, S, C, structure="monarch", seed=0)
    r, l = structured.layers[0][0].blocks, structured.layers[0][2].blocks
    assert r.shape == (S, C, C) and l.shape == (C, S, S)
    M = _entrywise(r, l)
    m = S * C
    U = np.random.default_rng(1).standard_normal((3, m))
    assert np.abs(_dense(structured.layers[0], m) - M).max() < 1e-12
    assert np.abs(structured.jvp(U) - U @ M.T).max() < 1e-12
    assert np.abs(structured.vjp(U) - U @ M).max() < 1e-12
    assert np.abs(structured.jacobian_gram().matvec(U[0]) - M @ (M.T @ U[0])).max() < 1e-12
    layer = MonarchLinear(m, m, S, bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.R.copy_(torch.from_numpy(r))
        layer.L.copy_(torch.from_numpy(l))
    assert np.abs(layer.dense().detach().numpy() - M).max() < 1e-12
    assert structured.nnz == [S * C * C + C * S * S]


def test_rectangular_factors_and_deep_nonlinear_jacobian():
    """Rectangular blocks (k_out ≠ k_in) against block_diag and explicit permutation matrices; a tanh Monarch net of
    depth 3 with biases: jvp/vjp against its dense Jacobian D₃K₃D₂K₂D₁K₁ to 1e-12."""
    rng = np.random.default_rng(0)
    b, k_in, k_out = 3, 2, 4
    r, l = rng.standard_normal((b, k_out, k_in)), rng.standard_normal((k_out, b, b))
    P = np.eye(b * k_out)[ops.commutation(b, k_out)]
    M = _dense(ops.monarch_factors(r, l), b * k_in)
    assert np.abs(M - P.T @ block_diag(*l) @ P @ block_diag(*r)).max() < 1e-12
    x = rng.standard_normal((2, b * k_in))
    f = ops.BlockDiagonal(r)
    assert np.abs(f.rows_t(f.rows(x)) - x @ (block_diag(*r).T @ block_diag(*r)).T).max() < 1e-12
    net = network.mlp(3, 12, activation="tanh", sigma_w=1.3, sigma_b=0.2)
    structured = ops.mixer_network(net, 3, 4, structure="monarch", seed=2)
    J = np.eye(12)
    for ell, layer in enumerate(structured.layers):
        J = np.diag(structured.d[ell]) @ _dense(layer, 12) @ J
    U = rng.standard_normal((4, 12))
    assert np.abs(structured.jacobian() - J).max() < 1e-12
    assert np.abs(structured.vjp(U) - U @ J).max() < 1e-12


def test_refusals():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="l must have shape"):
        ops.monarch_factors(rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 2, 2)))
    with pytest.raises(ValueError, match="r must be a stack of blocks"):
        ops.monarch_factors(np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="blocks must be a stack of blocks"):
        ops.BlockDiagonal(np.eye(3))
    with pytest.raises(ValueError, match="l must be finite"):
        ops.monarch_factors(np.ones((2, 2, 2)), np.full((2, 2, 2), np.nan))
    with pytest.raises(ValueError, match="depth"):
        monarch.monarch_gram_law(0)
    with pytest.raises(ValueError, match="sigma_w"):
        monarch.monarch_gram_law(1, sigma_w=0.0)
    with pytest.raises(ValueError, match="b must be"):
        monarch.dft_monarch_blocks(0)


@pytest.mark.parametrize("b", [1, 2, 3, 4, 8, 16])
def test_dft_is_a_product_of_monarch_factors(b):
    """F_n = Pᵀ L P R P for n = b² (block-diagonal DFT_b, twiddle diagonal inside L, stride permutation P), against
    NumPy's FFT of the identity, to 1e-12; applied matrix-free to a random complex vector as well."""
    n = b * b
    r, l = monarch.dft_monarch_blocks(b)
    factors = [ops.Permutation(ops.commutation(b, b))] + ops.monarch_factors(r, l)
    F = np.fft.fft(np.eye(n), axis=0)
    assert np.abs(_dense(factors, n) - F).max() < 1e-12
    rng = np.random.default_rng(b)
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    z = x[None, :]
    for f in factors:
        z = f.rows(z)
    assert np.abs(z[0] - np.fft.fft(x)).max() < 1e-12
    # twiddle: L_c = F_b diag(ω^{c·s′}); R = I ⊗ F_b
    F_b = np.fft.fft(np.eye(b), axis=0)
    assert np.abs(r - F_b).max() < 1e-12
    assert np.abs(l[-1] - F_b @ np.diag(np.exp(-2j * np.pi * (b - 1) * np.arange(b) / n))).max() < 1e-12


def _eigs(depth, S, seed):
    net = network.mlp(depth, 10, activation="linear", q0=1.0)
    return np.linalg.eigvalsh(ops.mixer_network(net, S, S, structure="monarch", seed=seed).jacobian_gram().to_dense())


def test_law_against_monte_carlo_m1024():
    """Dense eigenvalues of JJᵀ at m = 32² (one layer, seed 0) against the free product FussCatalan(2): KS ≤ 0.02, m₂
    within 5 % of the free 3 — the classical 4 of the Kronecker layer with the same blocks tied is 33 % away."""
    ev = _eigs(1, 32, seed=0)
    assert plot.ks_distance(monarch.monarch_gram_law(), ev) <= 0.02
    assert abs(np.mean(ev ** 2) / 3.0 - 1) < 0.05


@pytest.mark.slow
@pytest.mark.agreement
@pytest.mark.parametrize("depth", [1, 2])
def test_law_against_monte_carlo_m4096(depth):
    """At m = 64² (seed 0): KS ≤ 0.02 to σ_w^{2L}FussCatalan(2L) at σ_w = 1.2, m₂ within 5 % of it (free: 2L + 1
    times σ_w^{4L}; classical (L + 1)²: 33 % and 80 % away). Higher moments of one draw fluctuate by several per cent at
    these block sizes (m₃ at L = 2: +5.8 % at b = 64, +10 % at b = 32, +8 % at b = 48, seed 0), so they are not
    asserted here."""
    net = network.mlp(depth, 10, activation="linear", sigma_w=1.2, q0=1.0)
    ev = np.linalg.eigvalsh(ops.mixer_network(net, 64, 64, structure="monarch", seed=0).jacobian_gram().to_dense())
    law = monarch.monarch_gram_law(depth, sigma_w=1.2)
    assert plot.ks_distance(law, ev) <= 0.02
    assert abs(np.mean(ev ** 2) / law.moment(2) - 1) < 0.05


@pytest.mark.slow
@pytest.mark.agreement
def test_law_against_slq_at_m_1e5():
    """SLQ on the matrix-free JJᵀ at m = 317² = 100,489 (60 steps, 4 Rademacher probes, seed 1): m₂ within 4 standard
    errors of the free 3 and more than 20 from the classical 4; m₃ within 5 % of 12 (classical 25); the top Ritz value
    within 3 % of the edge 27/4; KS of the quadrature ≤ 0.035 (SLQ's resolution floor near 0 is ≈ 0.03 at 60 steps)."""
    structured = ops.mixer_network(LINEAR, 317, 317, structure="monarch", seed=0)
    q = lanczos.slq(structured.jacobian_gram(), n_steps=60, n_probes=4, seed=1)
    law = monarch.monarch_gram_law()
    assert abs(q.moment(2) - 3.0) < 4 * q.moment_stderr(2)
    assert abs(q.moment(2) - 4.0) > 20 * q.moment_stderr(2)
    assert abs(q.moment(3) / 12.0 - 1) < 0.05
    assert abs(q.top / law.edges[1] - 1) < 0.03
    est = q.interpolated(lower=0.0)
    n = 4000
    assert plot.ks_distance(law, est.quantile((np.arange(n) + 0.5) / n)) <= 0.035


@pytest.mark.parametrize("b, k", [(4, 4), (2, 7)])
def test_second_moment_at_finite_size_is_the_wick_count(b, k):
    """E tr((MMᵀ)²)/m = 3 + 1/b + 1/k + 4/m exactly (all nine pairs of Wick pairings), over 20,000 Monarch matrices
    M[(s, c), (s′, c′)] = L_c[s, s′] R_{s′}[c, c′] (seed 0): within 4 standard errors."""
    n, m = 20000, b * k
    rng = np.random.default_rng(0)
    R = rng.standard_normal((n, b, k, k)) / np.sqrt(k)
    L = rng.standard_normal((n, k, b, b)) / np.sqrt(b)
    M = np.einsum("ncsz,nzcd->nsczd", L, R).reshape(n, m, m)
    G = M @ M.transpose(0, 2, 1)
    m2 = np.einsum("nij,nji->n", G, G) / m
    assert abs(m2.mean() - (3 + 1 / b + 1 / k + 4 / m)) < 4 * m2.std() / np.sqrt(n)


def test_law_is_the_free_product():
    """σ_w^{2L}FussCatalan(2L): moments C(3k, k)/(2k + 1) at L = 1, the edge 27/4."""
    law = monarch.monarch_gram_law()
    assert isinstance(law, FussCatalan)
    assert [round(float(law.moment(k)), 9) for k in (1, 2, 3, 4)] == [1.0, 3.0, 12.0, 55.0]
    assert abs(monarch.monarch_gram_law(3, sigma_w=0.5).moment(1) - 0.5 ** 6) < 1e-12


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_operator_on_cupy_equals_numpy():
    """The same network drawn on the device: its matvec and transpose against its own dense matrix (1e-12)."""
    import cupy as cp
    structured = ops.mixer_network(LINEAR, 8, 16, structure="monarch", seed=0, backend="cupy")
    Kt = cp.eye(128)
    for f in structured.layers[0]:
        Kt = f.rows(Kt)                       # rows(I) = Kᵀ
    U = cp.random.default_rng(1).standard_normal((3, 128))
    assert float(cp.abs(structured.jvp(U) - U @ Kt).max()) < 1e-12
    assert float(cp.abs(structured.vjp(U) - U @ Kt.T).max()) < 1e-12


def test_experiment_models_spend_equal_connections():
    """The three networks of simulations/monarch.py at S = C = 16 (built, not trained): the connections counted on the
    modules are the Mixer block budget 2γ(CS² + SC²) = 32,768 within 1 % for Monarch and dense mixing."""
    from rmtnet import cli
    ns = cli.load_simulation("monarch")
    S, C, c_in = 16, 16, 49
    omega = ns["block_budget"](S, C)
    assert omega == 32768
    kwargs = dict(tokens=S, in_channels=c_in, depth=2, n_classes=10, pool="flatten", seed=0)
    from rmtnet.studies.mixer_width import build
    nets = {"mixer": build("mixer", channels=C, gamma=2.0, **kwargs),
            "monarch": build("monarch", channels=C, gamma=ns["monarch_hidden"](S, C, omega) / C, **kwargs),
            "dense": ns["_dense_net"](S, c_in, *ns["dense_shape"](S, C, omega), 10, 0)}
    for name, net in nets.items():
        per_block = ns["_connections"](net) / 2
        assert abs(per_block / omega - 1) < 0.01, (name, per_block)
    assert nets["dense"](torch.zeros(2, S, c_in)).shape == (2, 10)
