"""One predictor for every kernel (rmtnet.spectra.predict.gradient_descent_mse): a finite torch network's empirical
NTK through it equals the linearised network trained by gradient descent; its times, its t = ∞ and its agreement with
ntk_predict; the deprecated aliases of the names that moved out of kernels and ntk."""
import numpy as np
import pytest

from rmtnet.spectra import network
from rmtnet.spectra import gradient_descent_mse, kernels
from rmtnet.spectra.predict import ntk_predict

torch = pytest.importorskip("torch")


def _jacobian(model, x):
    """(n, P) Jacobian of the scalar outputs at the rows of x, one backward pass per example (no probes code)."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    for xi in x:
        out = model(xi[None])[0, 0]
        rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(out, params)]))
    return torch.stack(rows).numpy()


@pytest.mark.parametrize("k", [1, 7, 60])
def test_empirical_ntk_predictor_equals_the_linearised_network_trained_by_gradient_descent(k):
    """f_lin(θ) = f(θ₀) + J(θ − θ₀), trained by k full-batch steps of gradient descent on (1/2N) Σ (f − y)² at
    learning rate η, gives on train and test points what gradient_descent_mse(Θ, y, η, steps=True) predicts from the
    empirical NTK Θ = JJᵀ (float64): to 1e-8."""
    from rmtnet.nets import MLP
    from rmtnet.nets.probes import empirical_ntk
    model = MLP((3, 16, 16, 1), activation="tanh", sigma_w=1.3, sigma_b=0.2, seed=4, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    x_train = torch.randn(6, 3, generator=g, dtype=torch.float64)
    x_test = torch.randn(4, 3, generator=g, dtype=torch.float64)
    y = np.sin(np.arange(6.0))
    theta_tt = empirical_ntk(model, x_train).numpy()
    theta_st = empirical_ntk(model, x_test, x_train).numpy()
    with torch.no_grad():
        f_train0, f_test0 = model(x_train)[:, 0].numpy(), model(x_test)[:, 0].numpy()
    eta = 0.5 * 2 * y.size / np.linalg.eigvalsh(theta_tt)[-1]              # half the largest stable rate
    J_train, J_test = _jacobian(model, x_train), _jacobian(model, x_test)
    step = np.zeros(J_train.shape[1])                                        # θ − θ₀
    for _ in range(k):
        residual = f_train0 + J_train @ step - y
        step -= eta * J_train.T @ residual / y.size
    predict = gradient_descent_mse(theta_tt, y, learning_rate=eta, steps=True)
    fx_train, fx_test = predict(k, f_train0, f_test0, theta_st)
    assert np.max(np.abs(fx_train - (f_train0 + J_train @ step))) < 1e-8
    assert np.max(np.abs(fx_test - (f_test0 + J_test @ step))) < 1e-8


def test_times_arrays_infinity_and_gradient_flow():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 5))
    K = A @ A.T + 0.5 * np.eye(5)
    Kx = rng.standard_normal((3, 5))
    y = rng.standard_normal((5, 2))
    f0, g0 = rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    eta = 0.7
    predict = gradient_descent_mse(K, y, learning_rate=eta)
    ts = np.array([[0.0, 0.5], [2.0, 40.0]])
    tr, te = predict(ts, f0, g0, Kx)
    assert tr.shape == (2, 2, 5, 2) and te.shape == (2, 2, 3, 2)
    for i in np.ndindex(ts.shape):                                           # each time alone, and the closed form
        a, b = predict(ts[i], f0, g0, Kx)
        assert np.allclose(a, tr[i], atol=1e-13) and np.allclose(b, te[i], atol=1e-13)
        lam, V = np.linalg.eigh(K)
        decay = (V * np.exp(-lam * eta * ts[i] / y.size)) @ V.T
        assert np.allclose(a, y + decay @ (f0 - y), atol=1e-12)
        assert np.allclose(b, g0 + Kx @ np.linalg.solve(K, (np.eye(5) - decay) @ (y - f0)), atol=1e-12)
    tr0, te0 = predict(0.0, f0, g0, Kx)
    assert np.allclose(tr0, f0, atol=1e-12) and np.allclose(te0, g0, atol=1e-12)
    tr_inf, te_inf = predict(None, f0, g0, Kx)                               # t = ∞: kernel regression
    assert np.array_equal(tr_inf, y)
    assert np.allclose(te_inf, g0 + Kx @ np.linalg.solve(K, y - f0), atol=1e-12)
    assert np.allclose(predict(1e6, f0, g0, Kx)[1], te_inf, atol=1e-10)
    assert predict(3.0).shape == (5, 2)                                      # train outputs alone
    gd = gradient_descent_mse(K, y, learning_rate=1e-3, steps=True)          # small steps → the flow at t = kη
    assert np.allclose(gd(2000, f0, g0, Kx)[1], gradient_descent_mse(K, y)(2.0, f0, g0, Kx)[1], atol=1e-3)


def test_ntk_predict_is_the_predictor_of_the_infinite_width_ntk():
    net = network.mlp(3, 4, sigma_w=1.3, sigma_b=0.1)
    rng = np.random.default_rng(2)
    Xa, Xt, Y = rng.standard_normal((6, 4)), rng.standard_normal((3, 4)), rng.standard_normal(6)
    theta = kernels.ntk_kernel(net, np.concatenate([Xa, Xt]))
    predict = gradient_descent_mse(theta[:6, :6], Y, learning_rate=0.4, diag_reg=1e-3)
    for t in (None, 0.5, 5.0):
        mean, _ = ntk_predict(net, Xa, Y, Xt, t=t, learning_rate=0.4, diag_reg=1e-3)
        assert np.max(np.abs(mean - predict(t, 0.0, None, theta[6:, :6])[1])) < 1e-12


def test_gradient_descent_mse_refuses_bad_input():
    K = np.array([[1.0, 1.0], [1.0, 1.0]])                                   # singular
    with pytest.raises(ValueError, match="positive definite"):
        gradient_descent_mse(K, np.ones(2))(None, 0.0, None, K)
    with pytest.raises(ValueError, match="k_train_train must be symmetric"):
        gradient_descent_mse(np.array([[1.0, 0.0], [1.0, 1.0]]), np.ones(2))
    with pytest.raises(ValueError, match="y_train"):
        gradient_descent_mse(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="learning_rate"):
        gradient_descent_mse(np.eye(2), np.ones(2), learning_rate=0.0)
    with pytest.raises(ValueError, match="t must be an integer"):
        gradient_descent_mse(np.eye(2), np.ones(2), steps=True)(1.5)
    with pytest.raises(ValueError, match="k_test_train"):
        gradient_descent_mse(np.eye(2), np.ones(2))(1.0, 0.0, None, np.ones((3, 3)))


@pytest.mark.parametrize("old, new", [
    ("rmtnet.spectra.kernels:gp_posterior", "rmtnet.spectra.predict:gp_posterior"),
    ("rmtnet.spectra.kernels:nngp_regression", "rmtnet.spectra.predict:nngp_regression"),
    ("rmtnet.spectra.kernels:ntk_predict", "rmtnet.spectra.predict:ntk_predict"),
    ("rmtnet.spectra.kernels:sample_nngp_kernel", "rmtnet.spectra.sampling.montecarlo:sample_nngp_kernel"),
    ("rmtnet.spectra.ntk:fisher_law", "rmtnet.spectra.fisher:fisher_law"),
    ("rmtnet.spectra.ntk:fisher_moments", "rmtnet.spectra.fisher:fisher_moments"),
    ("rmtnet.spectra.ntk:critical_learning_rate", "rmtnet.spectra.fisher:critical_learning_rate"),
])
def test_moved_names_keep_a_deprecated_alias(old, new):
    import importlib
    (old_mod, name), (new_mod, new_name) = old.split(":"), new.split(":")
    with pytest.warns(DeprecationWarning, match=new_mod.replace(".", r"\.")):
        alias = getattr(importlib.import_module(old_mod), name)
    assert alias is getattr(importlib.import_module(new_mod), new_name)
