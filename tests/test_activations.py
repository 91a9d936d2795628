"""One activation, defined once (rmtnet.spectra.activations): a new activation defined in one place below gets its
mean field, NNGP and NTK kernels, JJᵀ law and torch model, each checked against an independent computation (SciPy's
adaptive quadrature, Monte Carlo of random networks, the model's weights applied in NumPy); the registry, the
built-in definitions (GELU now in the theory) and the deprecated old names."""
import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from array_api_compat import array_namespace
from scipy import integrate, optimize, stats

from rmtnet.spectra import network
from rmtnet.nets import MLP
from rmtnet.nets.models import Elementwise, activation_module
from rmtnet.spectra import activations, kernels, meanfield, sample_jacobian_eigs
from rmtnet.spectra.activations import Activation, activation, define_activation, registered_activations
from rmtnet.spectra.jacobian import jacobian_law


# --- the one place: softsign φ(h) = h/(1 + |h|), φ′(h) = 1/(1 + |h|)², a kink of φ′ at 0 ---------------------------

def softsign(h):
    xp = array_namespace(h)
    return h / (1.0 + xp.abs(h))


def softsign_derivative(h):
    xp = array_namespace(h)
    return 1.0 / (1.0 + xp.abs(h)) ** 2


SOFTSIGN = define_activation("softsign_test", softsign, softsign_derivative, breakpoints=(0.0,))
SIGMA_B = 0.1


# --- independent references: SciPy's adaptive quadrature, split at the kink ---------------------------------------

def density(u):
    return math.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)


def gauss(f, q):
    """E[f(h)], h ~ N(0, q), by scipy.integrate.quad on each side of 0."""
    s = math.sqrt(q)
    g = lambda u: f(s * u) * density(u)                                                  # noqa: E731
    return sum(integrate.quad(g, a, b, epsabs=1e-14, epsrel=1e-13, limit=200)[0] for a, b in ((-np.inf, 0), (0, np.inf)))


def pair(f, g, c11, c12, c22):
    """E[f(z₁)g(z₂)] for (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]), |c12| < √(c11c22): z₁ = √c11 u,
    z₂ = a u + s v with u, v iid N(0, 1), nested quad split at the kinks u = 0 and v = −a u/s."""
    s1, a = math.sqrt(c11), c12 / math.sqrt(c11)
    s = math.sqrt(c22 - a * a)

    def inner(u):
        k = -a * u / s
        h = lambda v: g(a * u + s * v) * density(v)                                      # noqa: E731
        return sum(integrate.quad(h, lo, hi, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
                   for lo, hi in ((-np.inf, k), (k, np.inf)))

    outer = lambda u: f(s1 * u) * density(u) * inner(u)                                  # noqa: E731
    return sum(integrate.quad(outer, lo, hi, epsabs=1e-12, epsrel=1e-11, limit=200)[0]
               for lo, hi in ((-np.inf, 0), (0, np.inf)))


def PHI(x):                                # softsign and its derivative on Python floats, written out again
    return x / (1.0 + abs(x))


def DPHI(x):
    return 1.0 / (1.0 + abs(x)) ** 2


# --- the mean field ---------------------------------------------------------------------------------------------

def test_mean_field_of_the_new_activation():
    """q*, χ and σ* from the definition alone (quadrature) equal SciPy's adaptive quadrature of the same
    expectations: q* to 1e-12, χ(σ*) = 1 to 1e-12, μ₂ = E[φ′⁴] to 1e-12 (measured: 3e-16, 2e-16)."""
    sw = meanfield.critical_sigma_w("softsign_test", SIGMA_B)
    q = meanfield.q_star(SOFTSIGN, sw, SIGMA_B)
    ref = optimize.brentq(lambda t: sw ** 2 * gauss(lambda h: PHI(h) ** 2, t) + SIGMA_B ** 2 - t, 1e-6, 10.0,
                          xtol=1e-15)
    assert abs(q / ref - 1) < 1e-12, (q, ref)
    assert abs(sw ** 2 * gauss(lambda h: DPHI(h) ** 2, ref) - 1) < 1e-12
    assert abs(meanfield.chi("softsign_test", sw, SIGMA_B) - 1) < 1e-12
    assert abs(meanfield.d2_moments(SOFTSIGN, q, 2) - gauss(lambda h: DPHI(h) ** 4, q)) < 1e-12


# --- NNGP and NTK kernels: quadrature (no closed form) vs nested adaptive quadrature -------------------------------

def _reference_kernels(net, X):
    """Σ_L and Θ_L (NTK parameterisation) by the recursion of Jacot et al. (2018) with every bivariate Gaussian
    expectation from :func:`pair`."""
    sw2, sb2 = net.sigma_w ** 2, net.sigma_b ** 2
    S = sw2 * X @ X.T / X.shape[1] + sb2
    T = S.copy()
    for _ in range(net.depth - 1):
        K, D = np.empty_like(S), np.empty_like(S)
        for i in range(len(S)):
            K[i, i] = gauss(lambda h: PHI(h) ** 2, S[i, i])
            D[i, i] = gauss(lambda h: DPHI(h) ** 2, S[i, i])
            for j in range(i + 1, len(S)):
                args = S[i, i], S[i, j], S[j, j]
                K[i, j] = K[j, i] = pair(PHI, PHI, *args)
                D[i, j] = D[j, i] = pair(DPHI, DPHI, *args)
        S = sw2 * K + sb2
        T = S + sw2 * D * T
    return S, T


def test_nngp_and_ntk_kernels_of_the_new_activation():
    """``nngp_kernel`` and ``ntk_kernel`` of ``network.mlp(3, activation=softsign)`` on two inputs: the activation has
    no closed form, so ``method="auto"`` is the quadrature; both agree with the nested-quadrature recursion to 1e-11
    (relative; measured 7e-15 and 2e-13), and ``method="closed_form"`` says there is none."""
    net = network.mlp(3, 8, sigma_w=1.4, sigma_b=SIGMA_B, activation=SOFTSIGN, q0=1.0)
    X = np.array([[1.0, 0.5, -0.3], [0.2, 1.1, 0.4]])
    S_ref, T_ref = _reference_kernels(net, X)
    S = kernels.nngp_kernel(net, X)
    T = kernels.ntk_kernel(net, X)
    np.testing.assert_allclose(S, S_ref, rtol=1e-11)
    np.testing.assert_allclose(T, T_ref, rtol=1e-11)
    with pytest.raises(ValueError, match="no closed form"):
        kernels.pair_kernel(SOFTSIGN, 1.0, 0.5, 1.0, method="closed_form")


# --- the JJᵀ law: theory vs Monte Carlo ------------------------------------------------------------------------

def test_jacobian_law_of_the_new_activation():
    """JJᵀ of a critical softsign network (L = 2, Gaussian weights, at q*): its mean is χ² = 1 (the D² moments), and
    its moments 1–3 lie within 4 standard errors of Monte Carlo over 6 networks of width 400."""
    sw = meanfield.critical_sigma_w(SOFTSIGN, SIGMA_B)
    net = network.mlp(2, 400, sigma_w=sw, sigma_b=SIGMA_B, activation="softsign_test")
    law = jacobian_law(net)
    mu1 = meanfield.d2_moments(SOFTSIGN, net.q[0], 1)
    assert abs(law.moment(1) - (sw ** 2 * mu1) ** 2) < 1e-8
    eig = np.asarray(sample_jacobian_eigs(net, n_samples=6, seed=3)).reshape(6, -1)
    mc = np.array([[np.mean(e ** k) for k in (1, 2, 3)] for e in eig])
    mean, se = mc.mean(0), mc.std(0, ddof=1) / np.sqrt(len(mc))
    th = np.array([law.moment(k) for k in (1, 2, 3)])
    assert np.all(np.abs(mean - th) < 4 * se), (mean, th, se)


# --- the torch model ---------------------------------------------------------------------------------------------

def test_torch_model_of_the_new_activation():
    """``nets.MLP`` with the new activation wraps its φ (no torch class named): the forward pass equals the weights
    applied in NumPy with φ in NumPy (1e-12, float64), and autograd through φ on tensors gives the φ′ defined."""
    net = network.mlp(3, 6, widths=[6, 9, 7, 4], sigma_w=1.4, sigma_b=SIGMA_B, activation=SOFTSIGN)
    model = MLP.from_arch(net, seed=0, dtype=torch.float64)
    assert isinstance(model.phi, Elementwise)
    x = np.random.default_rng(0).standard_normal((5, 6))
    h = x
    for ell, lin in enumerate(model.layers):
        h = h @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
        if ell < len(model.layers) - 1 or net.last_activation:
            h = softsign(h)
    np.testing.assert_allclose(model(torch.from_numpy(x)).detach().numpy(), h, rtol=0, atol=1e-12)
    by_name = MLP([6, 9, 4], activation="softsign_test", seed=0, dtype=torch.float64)
    assert by_name.phi.activation is SOFTSIGN
    t = torch.linspace(-3, 3, 13, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(SOFTSIGN.phi(t).sum(), t)
    np.testing.assert_allclose(grad.numpy(), softsign_derivative(t.detach().numpy()), atol=1e-15)


# --- built-in definitions, registry, old names -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["linear", "relu", "hard_tanh", "erf", "tanh", "gelu"])
def test_builtin_phi_runs_on_numpy_and_torch_and_matches_its_torch_module(name):
    """φ and φ′ of each built-in give the same numbers on NumPy arrays and torch tensors, and its torch module
    computes φ (1e-15, float64)."""
    act = activation(name)
    h = np.linspace(-3.0, 3.0, 25)
    t = torch.from_numpy(h)
    np.testing.assert_allclose(act.phi(t).numpy(), act.phi(h), rtol=0, atol=1e-15)
    np.testing.assert_allclose(act.dphi(t).numpy(), act.dphi(h), rtol=0, atol=1e-15)
    np.testing.assert_allclose(activation_module(name)(t).numpy(), act.phi(h), rtol=0, atol=1e-15)


def test_gelu_is_in_the_theory():
    """GELU (φ = hΦ(h)): its φ′ is the derivative of its φ, its torch module is nn.GELU, and its mean field and
    NNGP diagonal are the Gaussian expectations of SciPy's quadrature (1e-10)."""
    gelu = activation("gelu")
    assert isinstance(activation_module("gelu"), torch.nn.GELU) and gelu.pair_kernels is None
    h = np.linspace(-4, 4, 17)
    t = torch.from_numpy(h).requires_grad_(True)
    (grad,) = torch.autograd.grad(gelu.phi(t).sum(), t)
    np.testing.assert_allclose(gelu.dphi(h), grad.numpy(), atol=1e-15)
    np.testing.assert_allclose(gelu.phi(h), h * stats.norm.cdf(h), atol=1e-15)
    phi = lambda x: x * stats.norm.cdf(x)                                               # noqa: E731
    for q in (0.3, 2.0):
        assert abs(meanfield.second_moment(gelu, q) - gauss(lambda x: phi(x) ** 2, q)) < 1e-10
        assert abs(kernels.pair_kernel("gelu", q, q, q) - gauss(lambda x: phi(x) ** 2, q)) < 1e-10
    assert 0 < meanfield.chi("gelu", 1.2, 0.1) < 1


def test_closed_forms_live_on_the_definitions():
    """relu, erf and linear hold the pair (E[φφ], E[φ′φ′]) that the kernels' public closed forms return; a callable
    named like a built-in gets none."""
    c11, c12, c22 = np.broadcast_arrays(1.3, np.linspace(-1, 1, 7) * np.sqrt(1.3 * 0.6), 0.6)
    for name, k, d in (("relu", kernels.relu_kernel, kernels.relu_derivative_kernel),
                       ("erf", kernels.erf_kernel, kernels.erf_derivative_kernel)):
        K, D = activation(name).pair_kernels(c11, c12, c22)
        assert np.array_equal(K, k(c11, c12, c22)) and np.array_equal(D, d(c11, c12, c22))
    assert np.array_equal(activation("linear").pair_kernels(c11, c12, c22)[0], c12)
    assert activation(np.tanh, lambda h: 1 - np.tanh(h) ** 2).pair_kernels is None
    assert {"relu", "erf", "linear", "gelu", "softsign_test"} <= set(registered_activations())


def test_registry_rules_and_pickling():
    with pytest.raises(ValueError, match="already defined"):
        define_activation("relu", np.abs, np.sign)
    with pytest.raises(ValueError, match="replace=True"):
        define_activation("softsign_test", softsign, softsign_derivative)
    with pytest.raises(ValueError, match="already defined"):
        define_activation("relu", np.abs, np.sign, replace=True)
    with pytest.raises(ValueError, match="breakpoints"):
        define_activation("bad_kinks", np.abs, np.sign, breakpoints=("x",))
    with pytest.raises(ValueError, match="callables"):
        define_activation("not_callable", 1.0, np.sign)
    with pytest.raises(ValueError, match="activation must be one of"):
        activation("swish")
    assert pickle.loads(pickle.dumps(activation("erf"))) is activation("erf")
    assert pickle.loads(pickle.dumps(SOFTSIGN)) is SOFTSIGN
    assert isinstance(SOFTSIGN, Activation) and activations.activation("softsign_test") is SOFTSIGN


def test_old_names_are_deprecated_aliases():
    for name in ("Activation", "activation"):
        with pytest.warns(DeprecationWarning, match="rmtnet.spectra.activations"):
            assert getattr(meanfield, name) is getattr(activations, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert meanfield.normalised_activation("relu").breakpoints == (0.0,)
