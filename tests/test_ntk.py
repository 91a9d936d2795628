"""Fisher / one-sample NTK (Hayase & Karakida 2021) and conjugate kernel (Fan & Wang 2020): closed forms, exact
moment recursions against the tabulated laws, and Monte Carlo of actual networks."""
import numpy as np
import pytest

from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.spectra import ck_law, fisher, fisher_law, ntk
from rmtnet.spectra.sampling import montecarlo
from rmtnet.spectra.measures import GridDensity, PointMasses, Tabulated

SQRT2 = np.sqrt(2.0)


@pytest.mark.parametrize("L, q0", [(1, 1.0), (4, 0.7), (9, 2.5)])
def test_linear_orthogonal_fisher_is_a_point_mass_at_L_q0(L, q0):
    net = network.mlp(L, 300, weights="orthogonal", sigma_w=1.0, activation="linear")
    law = fisher_law(net, q0=q0)
    assert isinstance(law, PointMasses) and law.continuous_support() is None
    assert np.allclose(law.atoms()[0], [L * q0], rtol=1e-15) and np.allclose(law.atoms()[1], [1.0])
    eig = np.asarray(montecarlo.sample_fisher_eigs(net, n_samples=2, seed=0) if q0 == net.q0 else
                     montecarlo.sample_fisher_eigs(network.mlp(L, 300, weights="orthogonal", activation="linear",
                                                            q0=q0), n_samples=2, seed=0))
    assert np.allclose(eig, L * q0, rtol=1e-12)


def test_fisher_moments_recursion_and_closed_mean():
    """m₁(μ_{ℓ+1}) = q̂_ℓ + σ² m₁(ν_ℓ) m₁(μ_ℓ): at ReLU criticality with q̂ = ½, m₁ = ½·(ℓ/2 … ) = L/4 for
    D_L on both sides; the law's moments (series) equal the independent moment recursion."""
    for L in (2, 3, 6):
        net = network.mlp(L, weights="orthogonal", sigma_w=SQRT2, activation="relu")
        m = fisher.fisher_moments(net, 4)
        assert abs(m[0] - L / 4) < 1e-12
        law = fisher_law(net)
        assert np.allclose([law.moment(k) for k in range(1, 5)], m, rtol=1e-12)


def test_tabulated_density_carries_the_exact_moments():
    """Two independent routes: the grid density of the last tabulated level (ReLU–orthogonal, L = 4: the levels
    below are exact point masses, so only this table errs) integrates to the moments of the exact moment recursion
    (series + binomial) within 3e-4 relative at the default table, and the error falls like the square of the node
    spacing (≥ 3× smaller when the table doubles)."""
    net = network.mlp(4, weights="orthogonal", sigma_w=SQRT2, activation="relu", last_activation=False, q0=1.0)
    law = fisher_law(net)
    assert isinstance(law, Tabulated)
    exact = fisher.fisher_moments(net, 3)
    err = {}
    for n0 in (200, 400):
        table = law if n0 == 200 else Tabulated(law.source, n0=n0)
        err[n0] = np.max(np.abs([GridDensity._moment(table, k) / exact[k - 1] - 1 for k in (1, 2, 3)]))
    assert err[200] < 3e-4 and err[400] < err[200] / 3, err


@pytest.mark.parametrize("L", [3, pytest.param(6, marks=pytest.mark.slow)])   # L = 6: 18 s, the same path as L = 3
def test_relu_orthogonal_fisher_matches_monte_carlo(L):
    """σ_w² = 2, ReLU, Haar weights, N = 500, 100 networks of the actual network (empirical q̂ of the propagated
    input): m₁, m₂ within 3 standard errors. The per-network spread is large (the norms q̂_ℓ and the ranks of the
    D_ℓ fluctuate by O(1/√N) and compound over layers), so the 1 % comparison is the slow test below."""
    net = network.mlp(L, 500, weights="orthogonal", sigma_w=SQRT2, activation="relu")
    S = 100
    eig = np.asarray(montecarlo.sample_fisher_eigs(net, n_samples=S, seed=L)).reshape(S, -1)
    mc = np.array([[np.mean(e ** k) for k in (1, 2)] for e in eig])
    mean, se = mc.mean(0), mc.std(0, ddof=1) / np.sqrt(S)
    th = fisher.fisher_moments(net, 2)
    assert np.all(np.abs(mean - th) < 3 * se), (mean, th, se)


@pytest.mark.slow
@pytest.mark.parametrize("L", [3, 6])
def test_relu_orthogonal_fisher_moments_within_one_percent(L):
    """The acceptance's 1 %: N = 1000, 600 networks at the mean-field norms (qhat="mean_field": the same limit, the
    scalar norm noise removed); the standard error is ≈ 0.3 % for m₂ at L = 6."""
    net = network.mlp(L, 1000, weights="orthogonal", sigma_w=SQRT2, activation="relu")
    mc = []
    for seed in range(12):
        eig = np.asarray(montecarlo.sample_fisher_eigs(net, n_samples=50, seed=100 + seed,
                                                       qhat="mean_field")).reshape(50, -1)
        mc += [[np.mean(e), np.mean(e ** 2)] for e in eig]
    mean = np.mean(mc, axis=0)
    th = fisher.fisher_moments(net, 2)
    assert np.all(np.abs(mean / th - 1) < 0.01), (mean, th)


def test_tanh_fisher_density_matches_monte_carlo():
    """A smooth case with a continuous law: tanh, Gaussian weights, L = 3, N = 1000, 4 networks at the mean-field
    norms (with the actual norms the KS is ≈ 0.08: the Gaussian layers' ‖h_ℓ‖² fluctuate by √(2/N) ≈ 4.5 % per
    layer, and q̂_ℓ shifts the whole spectrum): KS < 0.03; and the
    tabulated level's grid moments within 1e-3 of the exact recursion (each tabulation adds ~1e-4, passed on to the
    levels above through their densities)."""
    net = network.mlp(3, 1000, weights="gaussian", sigma_w=1.1, sigma_b=0.05, activation="tanh", q0=1.0,
                   last_activation=False)
    law = fisher_law(net)
    exact = fisher.fisher_moments(net, 3)
    assert np.allclose([GridDensity.moment(law, k) for k in (1, 2, 3)], exact, rtol=1e-3)
    eig = montecarlo.sample_fisher_eigs(net, n_samples=4, seed=7, qhat="mean_field")
    assert plot.ks_distance(law, eig) < 0.03


def test_critical_learning_rate_and_linear_growth_of_lambda_max():
    """Near dynamical isometry (hard-tanh, Haar weights, on the critical line at σ_b = 0.05, so q* is small and
    P(|h| < 1) ≈ 0.98): λ_max grows linearly in depth — equal increments within 5 % for L = 2, 3, 4 — and the
    spectrum concentrates near its maximum, λ_max/m₁ < 1.05 (Hayase & Karakida 2021). 2/λ_max is the critical
    learning rate."""
    from rmtnet.spectra import critical_sigma_w
    sw = critical_sigma_w("hard_tanh", 0.05)
    tops = []
    for L in (2, 3, 4):
        net = network.mlp(L, weights="orthogonal", sigma_w=sw, sigma_b=0.05, activation="hard_tanh",
                       last_activation=False)
        law = fisher_law(net)
        tops.append(law.hull()[1])
        assert 1.0 < tops[-1] / law.moment(1) < 1.05
        assert abs(fisher.critical_learning_rate(net) - 2 / tops[-1]) < 1e-15
    d1, d2 = tops[1] - tops[0], tops[2] - tops[1]
    assert d1 > 0 and abs(d2 / d1 - 1) < 0.05, tops


def test_fisher_needs_square_layers_and_positive_q0():
    with pytest.raises(ValueError, match="square"):
        fisher_law(network.mlp(2, 100, ratios=[1.0, 2.0], sigma_w=1.0))
    with pytest.raises(ValueError, match="q0"):
        fisher_law(network.mlp(2, 100, sigma_w=1.0), q0=-1.0)
    with pytest.raises(ValueError, match="qhat"):
        montecarlo.sample_fisher_eigs(network.mlp(2, 10, sigma_w=1.0), qhat="exact")



def test_bad_arguments_of_the_ntk_and_fisher_functions_are_named():
    """Found by tests/test_fuzz.py: a non-network gave AttributeError ('float' object has no attribute 'weights'),
    n_data and K went through int() (NaN: "cannot convert float NaN to integer"; K = 0, -3, "1" or True were taken as
    one moment), return_all took any truthy value, and the Fan–Wang settings' errors named sigma_w but not net."""
    net = network.mlp(2, widths=[20, 20, 1], activation="erf", last_activation=False, sigma_w=1.0)  # hidden, read-out
    square = network.mlp(1, 20, activation="erf", sigma_w=1.0)                                # the Fisher laws' network
    for call, name in ((lambda: ntk.ntk_moments(1.0, 10), "net"), (lambda: ntk.ntk_coefficients("a", 10), "net"),
                       (lambda: ntk.ntk_factor_variance(None), "net"), (lambda: fisher_law([1.0]), "net"),
                       (lambda: fisher.fisher_moments(object()), "net"),
                       (lambda: ntk.ntk_moments(net, np.nan), "n_data"),
                       (lambda: ntk.ck_moments(net, "a"), "n_data"), (lambda: ntk.ntk_moments(net, 10, K=0), "K"),
                       (lambda: ntk.ntk_moments(net, 10, K="1"), "K"),
                       (lambda: fisher.fisher_moments(square, K=True), "K"),
                       (lambda: ntk.ck_moments(net, 10, K=np.nan), "K"),
                       (lambda: ntk.ntk_coefficients(network.mlp(2, 20, sigma_w=1.5), 10), "net"),
                       (lambda: fisher_law(network.mlp(2, 10, activation="linear"), q0=5e-324), "q0")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()
    with pytest.raises(TypeError, match="return_all"):
        fisher_law(network.mlp(2, 10, activation="linear"), return_all="yes")
    with pytest.raises(OverflowError, match=r"\bK\b"):          # MP's moment of order 517 overflows
        fisher.fisher_moments(network.mlp(2, 10, activation="linear"), K=10 ** 6)
    assert fisher.fisher_moments(network.mlp(2, 10, activation="linear", sigma_w=1.2), K=1).shape == (1,)
    assert ntk.ck_moments(net, 10, K=1).shape == (1,)


def test_fisher_law_of_a_zero_input_is_a_point_mass_at_zero():
    """ReLU in the ordered phase (σ_w² < 2, σ_b = 0) has q* = 0, so network.mlp's default input is x₀ = 0 and Θ = 0:
    fisher_moments raised "series reversion needs f(0) = 0 and f'(0) != 0" (a factor δ₀ has m₁ = 0) and
    critical_learning_rate divided by λ_max = 0 (ZeroDivisionError). Now the moments are 0 and the learning rate is
    refused naming net and q0."""
    net = network.mlp(2, 10, sigma_w=1.2, activation="relu")
    assert net.q0 == 0.0
    assert np.all(fisher.fisher_moments(net, K=3) == 0.0)
    assert fisher_law(net).support() == (0.0, 0.0)
    with pytest.raises(ValueError, match=r"\bnet\b.*\bq0\b"):
        fisher.critical_learning_rate(net)
    assert fisher.critical_learning_rate(net, q0=1.0) > 0


# --- conjugate kernel -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("act", ["relu", "tanh", "erf"])
def test_ck_second_moment_closed_form_and_monte_carlo(act):
    """One layer: m₂ = 1 + γ₁ + b²γ₀ exactly (law and moment recursion), and Monte Carlo at n = 1000 data points
    (d₀ = 2000, d₁ = 1500; 4 draws) within 1 %; KS < 0.01."""
    net = network.mlp(2, widths=[2000, 1500, 1], activation=act, last_activation=False,
                      sigma_w=1.0)                                                          # one hidden layer, read-out
    n = 1000
    b = _b_phi(act)
    closed = 1 + n / 1500 + b ** 2 * n / 2000
    law = ck_law(net, n)
    assert abs(law.moment(2) - closed) < 1e-10 and abs(ntk.ck_moments(net, n)[1] - closed) < 1e-10
    eig = np.asarray(montecarlo.sample_ck_eigs(net, n, n_samples=4, seed=1)).reshape(4, -1)
    m2 = np.mean([np.mean(e ** 2) for e in eig])
    assert abs(m2 / closed - 1) < 0.01, (m2, closed)
    assert plot.ks_distance(law, eig.ravel()) < 0.01


def _b_phi(act):
    """b_φ = (E φ′(ξ))²/Var φ(ξ), independently: closed forms for ReLU and erf, adaptive quadrature for tanh."""
    if act == "relu":
        return 0.25 / (0.5 - 1 / (2 * np.pi))
    if act == "erf":                       # φ = erf(√π ξ/2): E φ′ = 1/√(1 + π/2), E φ² = (2/π) arcsin((π/2)/(1 + π/2))
        return (1 / (1 + np.pi / 2)) / (2 / np.pi * np.arcsin((np.pi / 2) / (1 + np.pi / 2)))
    from scipy import integrate
    g = lambda f: integrate.quad(lambda x: f(x) * np.exp(-x * x / 2) / np.sqrt(2 * np.pi), -40, 40,
                                 epsabs=1e-14, epsrel=1e-13, limit=200)[0]
    return g(lambda x: 1 - np.tanh(x) ** 2) ** 2 / g(lambda x: np.tanh(x) ** 2)


def _gauss_nodes():
    x, _ = np.polynomial.hermite_e.hermegauss(120)
    return x


def _gauss_weights():
    _, w = np.polynomial.hermite_e.hermegauss(120)
    return w / np.sqrt(2 * np.pi)


def test_normalised_activation_is_centred_with_unit_variance():
    for act in ("relu", "tanh", "erf", "hard_tanh"):
        phit = ntk.normalised_activation(act)
        x, w = _gauss_nodes(), _gauss_weights()
        if act in ("relu", "hard_tanh"):        # kinks: use a fine Riemann sum instead of Hermite
            x = np.linspace(-12, 12, 400001)
            w = np.exp(-x * x / 2) / np.sqrt(2 * np.pi) * (x[1] - x[0])
        assert abs(np.sum(w * phit.phi(x))) < 1e-6 and abs(np.sum(w * phit.phi(x) ** 2) - 1) < 1e-6


def test_deep_ck_matches_monte_carlo():
    """Three ReLU layers (d₀ = 2n, d_ℓ = 1.5n): KS < 0.01 at n = 1000. m₂ carries a finite-width bias O(1/n)
    (measured +1.7 %, +0.8 %, +0.2 % at n = 500, 1000, 2000), so m₂ is checked on the Richardson extrapolation
    2·m₂(n = 1000) − m₂(n = 500), within 3 standard errors of the law's m₂."""
    est = {}
    for n, S in ((500, 16), (1000, 8)):
        net = network.mlp(4, widths=[2 * n] + [3 * n // 2] * 3 + [1], activation="relu", last_activation=False,
                          sigma_w=1.0)
        eig = np.asarray(montecarlo.sample_ck_eigs(net, n, n_samples=S, seed=2)).reshape(S, -1)
        m2 = np.array([np.mean(e ** 2) for e in eig])
        est[n] = m2.mean(), m2.std(ddof=1) / np.sqrt(S)
        if n == 1000:
            law = ck_law(net, n)
            assert plot.ks_distance(law, eig.ravel()) < 0.01
            exact = ntk.ck_moments(net, n)[1]
            assert abs(law.moment(2) - exact) < 1e-12
    extrapolated = 2 * est[1000][0] - est[500][0]
    se = np.hypot(2 * est[1000][1], est[500][1])
    assert abs(extrapolated - exact) < 3 * se, (est, exact)


def test_ck_rejects_settings_outside_fan_wang():
    with pytest.raises(ValueError, match="weights"):
        ck_law(network.mlp(2, 100, weights="orthogonal", sigma_w=1.0), 50)
    with pytest.raises(ValueError, match="sigma_w"):
        ck_law(network.mlp(2, 100, sigma_w=2.0), 50)
    with pytest.raises(ValueError, match="n_data"):
        ck_law(network.mlp(2, 100, sigma_w=1.0), 0)
    with pytest.raises(ValueError, match="hidden layer"):                # depth 1: the read-out alone
        ck_law(network.mlp(1, 100, sigma_w=1.0), 50)


def test_fisher_law_return_all_gives_each_shallower_net_in_one_recursion():
    """fisher_law(net, return_all=True)[ℓ−1] is the law of the net cut after layer ℓ (linear read-out): its moments
    are those of fisher_moments (exact series) of the cut net, its cdf that of fisher_law of the cut net built on
    its own; with last_activation the last entry carries D_L (checked on an atomic ReLU–orthogonal net)."""
    def net(L, **kw):
        return network.mlp(L, 300, **{"sigma_w": 1.0, **kw})
    laws = fisher_law(net(3, weights="gaussian", activation="linear"), return_all=True)
    assert len(laws) == 3
    for L, law in enumerate(laws, start=1):
        exact = fisher.fisher_moments(net(L, weights="gaussian", activation="linear"), K=3)
        assert [law.moment(k) for k in (1, 2, 3)] == pytest.approx(exact, rel=1e-9), L
    alone = fisher_law(net(2, weights="gaussian", activation="linear"))
    x = np.linspace(*alone.support(), 41)
    assert np.allclose(laws[1].cdf(x), alone.cdf(x), atol=1e-12)
    relu = dict(weights="orthogonal", activation="relu")
    atomic = fisher_law(net(3, last_activation=True, **relu), return_all=True)
    for L in (1, 2, 3):
        own = fisher_law(net(L, last_activation=(L == 3), **relu))
        assert np.allclose(atomic[L - 1].atoms()[0], own.atoms()[0]) and np.allclose(atomic[L - 1].atoms()[1],
                                                                                    own.atoms()[1]), L
