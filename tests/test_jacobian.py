"""Jacobian spectra of deep random networks: closed forms at criticality (REFERENCE §2), non-square layers, and
theory vs Monte Carlo of actual propagated networks (Pennington, Schoenholz & Ganguli 2017/2018)."""
import numpy as np
import pytest

from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.spectra import FussCatalan, MarchenkoPastur, jacobian_law, sample_jacobian_eigs
from rmtnet.spectra.sampling import montecarlo

SQRT2 = np.sqrt(2.0)


@pytest.mark.parametrize("L, edge", [(1, 3 + 2 * SQRT2), (2, (11 + 5 * np.sqrt(5)) / 2)])
def test_relu_gaussian_critical_edge(L, edge):
    law = jacobian_law(network.mlp(L, weights="gaussian", sigma_w=SQRT2, activation="relu"))
    assert abs(law.continuous_support()[1] - edge) < 1e-8 * edge
    locs, masses = law.atoms()
    assert np.allclose(locs, [0.0]) and abs(masses[0] - 0.5) < 1e-14     # max of the D² atoms at 0


@pytest.mark.parametrize("L", [2, 3, 5, 8])
def test_relu_orthogonal_critical_edge(L):
    law = jacobian_law(network.mlp(L, weights="orthogonal", sigma_w=SQRT2, activation="relu"))
    edge = L ** L / (L - 1) ** (L - 1)
    assert abs(law.continuous_support()[1] - edge) < 1e-8 * edge


@pytest.mark.parametrize("L", [1, 3, 6])
def test_linear_gaussian_is_fuss_catalan(L):
    law = jacobian_law(network.mlp(L, weights="gaussian", activation="linear"))
    fc = FussCatalan(L)
    assert abs(law.continuous_support()[1] - fc.continuous_support()[1]) < 1e-8 * fc.continuous_support()[1]
    x = np.linspace(0.05, 0.95, 7) * fc.continuous_support()[1]
    assert np.allclose(law.pdf(x), fc.pdf(x), rtol=1e-8)


@pytest.mark.parametrize("act, weights, slope", [("relu", "gaussian", 2), ("relu", "orthogonal", 1),
                                                 ("linear", "gaussian", 1), ("linear", "orthogonal", 0)])
@pytest.mark.parametrize("L", [1, 4, 10])
def test_critical_variance_law(act, weights, slope, L):
    """σ²_{JJᵀ} = L(μ₂/μ₁² - 1 - s₁) at χ = 1: 2L, L, L, 0."""
    sw = SQRT2 if act == "relu" else 1.0
    law = jacobian_law(network.mlp(L, weights=weights, sigma_w=sw, activation=act))
    assert abs(law.moment(1) - 1.0) < 1e-12
    assert abs(law.var() - slope * L) < 1e-8 * max(1, L)


def test_non_square_single_layer_is_mp():
    """One linear Gaussian layer n₁×n₀: JJᵀ = WWᵀ is σ²·MP(n₁/n₀) exactly, for both a wider and a narrower layer."""
    for r in (0.5, 2.0):
        law = jacobian_law(network.mlp(1, 400, ratios=[r], weights="gaussian", sigma_w=1.3, activation="linear"))
        mp = MarchenkoPastur(r, scale=1.3 ** 2)
        x = np.linspace(*mp.continuous_support(), 9)[1:-1]
        assert np.allclose(law.pdf(x), mp.pdf(x), rtol=1e-9)
        assert np.allclose(law.atoms()[1], mp.atoms()[1]) and abs(law.moment(3) - mp.moment(3)) < 1e-10


@pytest.mark.parametrize("weights", ["gaussian", pytest.param("orthogonal", marks=pytest.mark.slow)])
def test_non_square_relu_network_matches_monte_carlo(weights):
    """A bottleneck 600 → 900 → 450 → 600 ReLU net, 8 draws: KS < 0.02 (the eigenvalues are squared singular
    values, exact zeros below 1e-28·max, so only samples below 1e-24·max count on the atom at 0), and m₁, m₂
    within 3 standard errors. ~25 s per weight kind (the cdf of a three-level nested law); orthogonal is slow."""
    net = network.mlp(3, 600, widths=[600, 900, 450, 600], weights=weights, sigma_w=SQRT2, activation="relu",
                   q0=1.0)
    law = jacobian_law(net)
    eig = np.asarray(montecarlo.sample_jacobian_eigs(net, n_samples=8, seed=3)).reshape(8, -1)
    assert plot.ks_distance(law, eig.ravel(), atom_rtol=1e-24) < 0.02, weights
    z, *_ = _moments_check(law, eig, K=2)
    assert np.all(z < 3.0), (weights, z)


def test_nested_product_is_tabulated_without_changing_the_law():
    """600 → 600 → 900 (one width change after a product): jacobian_law tabulates the inner product; against the
    same law built untabulated, the density agrees to 1e-4 relative and the moments exactly (they come from the
    source's series)."""
    from rmtnet.spectra.free import free_mult_scaled
    from rmtnet.spectra.jacobian import _layers
    from rmtnet.spectra.measures import OtherGram, Tabulated
    net = network.mlp(2, 600, widths=[600, 600, 900], weights="gaussian", sigma_w=SQRT2, activation="relu")
    law = jacobian_law(net)
    (_, w1, d1), (r2, w2, d2) = _layers(net)
    exact = free_mult_scaled([OtherGram(free_mult_scaled([w1, d1, w2]), r2), d2])
    assert any(isinstance(f.base, Tabulated) for f, _ in law.factors if isinstance(f, OtherGram))
    lo, hi = exact.continuous_support()
    x = lo + (hi - lo) * np.linspace(0.02, 0.98, 12)
    assert np.allclose(law.pdf(x), exact.pdf(x), rtol=1e-4, atol=0)
    assert np.allclose([law.moment(k) for k in (1, 2, 3)], [exact.moment(k) for k in (1, 2, 3)], rtol=1e-12)


@pytest.mark.parametrize("kwargs, name", [(dict(ratios=[1.0]), "ratios"), (dict(weights="haar"), "weights"),
                                          (dict(sigma_b=-1.0), "sigma_b"), (dict(sigma_w=0.0), "sigma_w"),
                                          (dict(activation="softplus"), "activation"),
                                          (dict(widths=[10, 10]), "widths"), (dict(q0=-1.0), "q0")])
def test_bad_network_descriptions_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        network.mlp(2, 100, **kwargs)


# --- smooth activations: theory vs Monte Carlo --------------------------------------------------------------------
SMOOTH = [("tanh", 1.05, 0.0), ("erf", 1.2, 0.1)]


def _moments_check(law, eig_per_sample, K=4, n_se=3.0):
    mc = np.array([[np.mean(e ** k) for k in range(1, K + 1)] for e in eig_per_sample])
    mean, se = mc.mean(0), mc.std(0, ddof=1) / np.sqrt(len(mc))
    th = np.array([law.moment(k) for k in range(1, K + 1)])
    return np.abs(mean - th) / se, mean, th, se


def _smooth_case(act, sw, sb, weights, L, N, S, seed):
    net = network.mlp(L, N, weights=weights, sigma_w=sw, sigma_b=sb, activation=act, q0=1.0)
    law = jacobian_law(net)
    eig = np.asarray(sample_jacobian_eigs(net, n_samples=S, seed=seed)).reshape(S, -1)
    return net, law, eig


# The KS distance needs the law's cdf: its density on ≥ 1600 nodes, each a Newton solve through the push-forwards'
# ~1000 bins — 30 s for L = 2 orthogonal, 2–3 minutes for L = 8 Gaussian (2L factors) on 2 cores. One case runs by
# default; the other seven are marked slow (run with -m slow).
DEFAULT_SMOOTH = {("tanh", "orthogonal", 2)}
SMOOTH_CASES = [pytest.param(act, sw, sb, weights, L,
                             marks=() if (act, weights, L) in DEFAULT_SMOOTH else pytest.mark.slow)
                for act, sw, sb in SMOOTH for weights in ("gaussian", "orthogonal") for L in (2, 8)]


@pytest.mark.parametrize("act, sw, sb, weights, L", SMOOTH_CASES)
def test_smooth_activation_matches_monte_carlo(act, sw, sb, weights, L):
    """N = 2000, the input at q₀ = 1 (so q_ℓ drifts towards q* layer by layer, and the theory follows the same q_ℓ):
    KS < 0.02 on the pooled sample; moments 1–4 within 3 standard errors over 6 independent networks."""
    net, law, eig = _smooth_case(act, sw, sb, weights, L, 2000, 6, seed=11 * L)
    assert len(set(net.q)) > 1 or L == 1                    # not at the fixed point: per-layer q_ℓ matter
    assert plot.ks_distance(law, eig.ravel()) < 0.02
    z, mean, th, se = _moments_check(law, eig)
    assert np.all(z < 3.0), (z, mean, th, se)


@pytest.mark.slow
@pytest.mark.parametrize("act, sw, sb", SMOOTH)
@pytest.mark.parametrize("weights", ["gaussian", "orthogonal"])
def test_depth_32_converges_with_width(act, sw, sb, weights):
    """L = 32: KS < 0.03 at N = 4000, and the KS distance shrinks from N = 1000 to N = 4000.

    Two networks pooled at each width, compared on the range float64 resolves, x ≥ the larger of their floors (see
    the Fuss–Catalan test below). One network alone is a noisy witness: for tanh–Gaussian at N = 1000 its KS was
    0.0069, 0.0035, 0.0081, 0.0132 over seeds 5–8, and 0.0033 (two) and 0.0017 (four) pooled — the distance is
    mostly network-to-network fluctuation, which shrinks with N as the bias does."""
    net = network.mlp(32, 4000, weights=weights, sigma_w=sw, sigma_b=sb, activation=act, q0=1.0)
    law = jacobian_law(net)                       # the limit law does not depend on N: one cdf table for both
    ks = {}
    for N in (1000, 4000):
        eigs, floor = sample_jacobian_eigs(net, width=N, n_samples=2, seed=5, return_floor=True)
        ks[N] = plot.ks_distance(law, eigs, floor=floor)
        print(f"N = {N}: floor {floor:.2g}, mass below: law {float(law.cdf_above(floor, floor)):.4f}, "
              f"samples {np.mean(eigs < floor):.4f}; KS {ks[N]:.4f}")
    assert ks[4000] < 0.03 and ks[4000] < ks[1000], ks


def test_deep_product_resolution_floor():
    """Fuss–Catalan(32) has 16 % of its mass below x₀ = n(ε‖J‖₂)² ≈ 3e-27 (n = 800), where float64 cannot place
    eigenvalues: the samples pile up near ε²λ_max and the full KS distance is ≈ 0.09 at any N. They are counted right,
    though: the fraction below x₀ matches the law within 3 binomial standard errors, and on x ≥ x₀ the KS distance
    is < 0.01."""
    net = network.mlp(32, 800, weights="gaussian", activation="linear", sigma_w=1.0)
    eigs, floor = sample_jacobian_eigs(net, n_samples=1, seed=3, return_floor=True)
    law = FussCatalan(32)
    p = law.cdf(floor)
    assert 1e-28 < floor < 1e-25 and 0.1 < p < 0.25
    assert abs(np.mean(eigs < floor) - p) < 3 * np.sqrt(p * (1 - p) / eigs.size)
    assert plot.ks_distance(law, eigs) > 0.05                     # the float64 placement below x₀ is not the law's
    assert plot.ks_distance(law, eigs, floor=floor) < 0.01


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(float).eps, reason="no extended precision here")
def test_deep_product_float64_error_below_floor_scale():
    """The floor's premise, checked independently: the product J = D_32W_32 ⋯ D_1W_1 formed in float64 and in
    extended precision (80-bit, ε ≈ 1e-19) gives eigenvalues of JJᵀ that differ by less than 2√(x·x₀) — a singular
    value error below √(x₀) — at every x, from λ_max down to 1e-35 (erf, σ_w = 1.2, σ_b = 0.1, n = 200)."""
    net = network.mlp(32, 200, weights="gaussian", sigma_w=1.2, sigma_b=0.1, activation="erf", q0=1.0)
    j64 = jld = None
    for w, _, h in montecarlo.propagate(net, n_samples=1, seed=3):
        a = net.activation.dphi(h[0])[:, None] * w[0]
        j64 = a if j64 is None else a @ j64
        jld = a.astype(np.longdouble) if jld is None else a.astype(np.longdouble) @ jld
    e64 = np.sort(np.linalg.svd(j64, compute_uv=False) ** 2)
    eld = np.sort(np.linalg.svd(jld.astype(float), compute_uv=False) ** 2)   # rounding J itself costs only ε‖J‖
    floor = 200 * np.finfo(float).eps ** 2 * e64[-1]
    assert eld[0] < 1e-30                                   # the law does reach far below the floor here
    assert np.all(np.abs(e64 - eld) <= 2 * np.sqrt(eld * floor))
    assert np.all(np.abs(e64 - eld)[eld > 1e-12] <= 1e-8 * eld[eld > 1e-12])

def test_per_layer_variances_follow_mean_field():
    """The Monte Carlo's actual pre-activations have ‖h_ℓ‖²/n → q_ℓ of the recursion the theory uses: over 16
    networks at n = 1000 the mean of ‖h_ℓ‖²/n is within 3 standard errors of q_ℓ at every layer, and the standard
    error is below 1.5 % of q_ℓ (so the check has teeth)."""
    net = network.mlp(6, 1000, weights="orthogonal", sigma_w=1.3, sigma_b=0.2, activation="tanh", q0=2.0)
    emp = np.array([np.mean(h ** 2, axis=-1) for _, _, h in montecarlo.propagate(net, n_samples=16, seed=0)])
    mean, se = emp.mean(1), emp.std(1, ddof=1) / 4.0
    assert np.all(se < 0.015 * np.asarray(net.q)), se / net.q
    assert np.all(np.abs(mean - net.q) < 3 * se), ((mean - net.q) / se)
