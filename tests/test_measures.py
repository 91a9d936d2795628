"""The Measure kinds (grid densities, mixtures, affine push-forwards, empirical samples, Gaussian push-forwards)
and the generic scipy.stats-like interface, each against an independent computation."""
import numpy as np
import pytest
from scipy import integrate, special, stats

from rmtnet.spectra import (Affine, Empirical, GridDensity, MarchenkoPastur, Mixture, PointMasses, Semicircle,
                            gaussian_pushforward)

Z = np.array([0.3 + 0.4j, 1.7 + 0.05j, -2.0 + 1.0j, 5.0 + 0.0j])


def cauchy_by_quad(pdf, lo, hi, z):
    """∫ ρ(x)/(z - x) dx by adaptive quadrature, real and imaginary parts separately."""
    re = integrate.quad(lambda x: (pdf(x) / (z - x)).real, lo, hi, limit=500, epsabs=1e-13, epsrel=1e-12)[0]
    im = integrate.quad(lambda x: (pdf(x) / (z - x)).imag, lo, hi, limit=500, epsabs=1e-13, epsrel=1e-12)[0]
    return re + 1j * im


# --- GridDensity -----------------------------------------------------------------------------------------------
@pytest.fixture
def tent():
    """A piecewise-linear density on [0, 3] (non-symmetric tent) with an atom at 4."""
    x = np.array([0.0, 0.5, 2.0, 3.0])
    rho = np.array([0.0, 0.6, 0.2, 0.0])
    return GridDensity(x, rho, atoms=([4.0], [0.2]), normalize=True)


def test_grid_density_cauchy_is_exact_for_piecewise_linear(tent):
    lin = lambda t: float(np.interp(t, tent.x, tent.rho))  # noqa: E731
    for z in Z[:3]:
        expected = cauchy_by_quad(lin, 0.0, 3.0, z) + 0.2 / (z - 4.0)
        assert abs(tent.cauchy(z) - expected) < 1e-10 * abs(expected)


def test_grid_density_mass_moments_cdf(tent):
    lin = lambda t: float(np.interp(t, tent.x, tent.rho))  # noqa: E731
    assert abs(integrate.quad(lin, 0, 3, points=[0.5, 2.0])[0] - 0.8) < 1e-12
    for k in (1, 2, 3):
        expected = integrate.quad(lambda t: t ** k * lin(t), 0, 3, points=[0.5, 2.0])[0] + 0.2 * 4.0 ** k
        assert abs(tent.moment(k) - expected) < 1e-12 * expected
    xs = np.array([0.5, 1.0, 2.0, 3.5, 4.0])
    expected = [integrate.quad(lin, 0, min(t, 3), points=[0.5, 2.0])[0] + 0.2 * (t >= 4) for t in xs]
    assert np.allclose(tent.cdf(xs), expected, atol=1e-12)


def test_grid_density_rejects_bad_grids():
    with pytest.raises(ValueError, match="increasing"):
        GridDensity([0, 2, 1], [0, 1, 0])
    with pytest.raises(ValueError, match="density"):
        GridDensity([0, 1, 2], [0, -1, 0])
    with pytest.raises(ValueError):
        GridDensity([0, 1, 2], [0, 5, 0])          # mass 5, normalize=False


# --- Mixture and Affine ---------------------------------------------------------------------------------------
def test_mixture_is_the_weighted_sum():
    a, b = MarchenkoPastur(0.5), PointMasses([1.0, 3.0], [0.5, 0.5])
    mix = Mixture([a, b], [0.3, 0.7])
    assert np.allclose(mix.cauchy(Z[:3]), 0.3 * a.cauchy(Z[:3]) + 0.7 * b.cauchy(Z[:3]), rtol=1e-14)
    xs = np.linspace(-0.5, 4, 11)
    assert np.allclose(mix.cdf(xs), 0.3 * a.cdf(xs) + 0.7 * b.cdf(xs), atol=1e-14)
    locs, masses = mix.atoms()
    assert np.allclose(locs, [1.0, 3.0]) and np.allclose(masses, [0.35, 0.35])
    assert abs(mix.moment(3) - (0.3 * a.moment(3) + 0.7 * b.moment(3))) < 1e-12
    # sampling reproduces the law: KS against the exact CDF (atoms included), n = 20000, fixed seed
    s = np.sort(mix.rvs(20000, rng=1))
    n = s.size
    F = mix.cdf(s)
    F_left = F - mix._atom_mass_at(s)
    ks = max(np.max(np.arange(1, n + 1) / n - F), np.max(F_left - np.arange(n) / n))
    assert ks < 1.63 / np.sqrt(n)          # the 1 % critical value of the KS statistic


@pytest.mark.parametrize("a,b", [(2.5, 0.0), (-1.5, 0.0), (0.7, -0.3), (-2.0, 1.0)])
def test_affine_pushforward(a, b):
    base = MarchenkoPastur(4.0)           # atom 0.75 at 0 and a continuous part
    law = Affine(base, a, b)
    for k in (1, 2, 3):
        expected = sum(special.comb(k, j) * a ** j * b ** (k - j) * base.moment(j) for j in range(k + 1))
        assert abs(law.moment(k) - expected) < 1e-12 * max(1.0, abs(expected))
    locs, masses = law.atoms()
    assert np.allclose(locs, [b]) and np.allclose(masses, [0.75])
    # cdf of a·X + b against P(X ≤ (x - b)/a) (a > 0) or P(X ≥ (x - b)/a) (a < 0)
    xs = np.linspace(*law.support(), 9)
    y = (xs - b) / a
    expected = base.cdf(y) if a > 0 else 1.0 - base.cdf(y) + base._atom_mass_at(y)
    assert np.allclose(law.cdf(xs), expected, atol=1e-12)
    # density transforms with the Jacobian; G(z) = G_base((z - b)/a)/a off the axis
    x_in = np.linspace(*law.continuous_support(), 7)[1:-1]
    assert np.allclose(law.pdf(x_in), base.pdf((x_in - b) / a) / abs(a), rtol=1e-12)
    zs = np.array([0.3 + 0.9j, -1.0 + 0.2j])
    assert np.allclose(law.cauchy(zs), base.cauchy((zs - b) / a) / a, rtol=1e-12)
    # the methods dilate() and shift() are this push-forward
    assert np.allclose(base.dilate(a).shift(b).cauchy(zs), law.cauchy(zs), rtol=1e-12)


def test_quantile_inverts_cdf_with_and_without_atoms():
    for law in (MarchenkoPastur(0.5), MarchenkoPastur(4.0), Semicircle(2.0),
                Mixture([MarchenkoPastur(0.5), PointMasses([3.0], [1.0])], [0.6, 0.4])):
        q = np.linspace(0.01, 0.99, 37)
        x = law.quantile(q)
        F = law.cdf(x)
        F_left = F - law._atom_mass_at(x)
        # inf{x: F(x) ≥ q}: F(x) ≥ q and the left limit F(x-) ≤ q
        assert np.all(F >= q - 1e-9) and np.all(F_left <= q + 1e-9)
        cont = law._atom_mass_at(x) == 0
        assert np.allclose(F[cont], q[cont], atol=1e-9)


def test_generic_rvs_matches_cdf():
    law = MarchenkoPastur(0.3, scale=2.0)
    s = law.rvs(20000, rng=3)
    assert stats.kstest(s, law.cdf).statistic < 1.63 / np.sqrt(s.size)


# --- Empirical --------------------------------------------------------------------------------------------------
def test_empirical_measure():
    s = np.array([3.0, 1.0, 2.0, 2.0])
    e = Empirical(s)
    assert np.allclose(e.cdf([0.5, 1.0, 2.0, 2.5, 3.0]), [0, 0.25, 0.75, 0.75, 1.0])
    assert np.allclose(e.quantile([0.1, 0.25, 0.26, 0.75, 1.0]), [1, 1, 2, 2, 3])
    assert e.moment(2) == pytest.approx(np.mean(s ** 2), rel=1e-15)
    z = 0.5 + 0.5j
    assert e.cauchy(z) == pytest.approx(np.mean(1 / (z - s)), rel=1e-14)
    with pytest.raises(ValueError, match="samples"):
        Empirical([])


# --- Gaussian push-forwards ----------------------------------------------------------------------------------
def test_relu_derivative_law_is_two_atoms():
    law = gaussian_pushforward(lambda h: (h > 0).astype(float), 1.3)
    locs, masses = law.atoms()
    assert np.allclose(locs, [0.0, 1.0]) and np.allclose(masses, [0.5, 0.5], atol=1e-14)
    assert law.continuous_mass < 1e-14 and law.continuous_support() is None


@pytest.mark.parametrize("q", [0.25, 1.0, 3.0])
def test_hard_tanh_derivative_law(q):
    law = gaussian_pushforward(lambda h: (np.abs(h) < 1).astype(float), q)
    locs, masses = law.atoms()
    p1 = special.erf(1 / np.sqrt(2 * q))           # P(|h| < 1)
    assert np.allclose(locs, [0.0, 1.0]) and np.allclose(masses, [1 - p1, p1], atol=1e-13)


@pytest.mark.parametrize("q", [0.3, 1.0, 2.5])
def test_gaussian_kernel_law_moments_closed_form(q):
    """f(h) = exp(-a h²) (the erf-type φ'² law): E[f^k] = 1/√(1 + 2akq)."""
    a = np.pi / 2                                    # φ(h) = erf(√π h/2): φ'(h)² = exp(-πh²/2)
    law = gaussian_pushforward(lambda h: np.exp(-a * h * h), q)
    for k in range(1, 6):
        assert abs(law.moment(k) - 1 / np.sqrt(1 + 2 * a * k * q)) < 1e-11
    # density: ρ(x) = 2 φ_q(h)/|f'(h)| at h = √(-log x / a); it integrates to 1 and has the right mean
    x = np.linspace(0.05, 0.95, 7)
    h = np.sqrt(-np.log(x) / a)
    expected = 2 * np.exp(-h * h / (2 * q)) / np.sqrt(2 * np.pi * q) / (2 * a * h * x)
    assert np.allclose(law.pdf(x), expected, rtol=1e-8)


def test_tanh_law_cauchy_transform_against_quadrature():
    """G(z) = E[1/(z - f(h))] by Gauss–Hermite-free adaptive quadrature over h; the panel construction is
    a linear density per panel (h-width 18√q/2400), which bounds the relative error near 1e-6 here."""
    q = 0.7
    f = lambda h: (1 - np.tanh(h) ** 2) ** 2                     # noqa: E731
    law = gaussian_pushforward(f, q)
    phi = lambda h: np.exp(-h * h / (2 * q)) / np.sqrt(2 * np.pi * q)  # noqa: E731
    for z in (0.5 + 0.3j, 1.2 + 0.1j, -0.5 + 0.5j, 0.3 + 0.02j):
        re = integrate.quad(lambda h: (phi(h) / (z - f(h))).real, -12, 12, limit=800, epsabs=1e-14)[0]
        im = integrate.quad(lambda h: (phi(h) / (z - f(h))).imag, -12, 12, limit=800, epsabs=1e-14)[0]
        expected = re + 1j * im
        assert abs(law.cauchy(z) - expected) < 1e-5 * abs(expected)
    for k in (1, 2, 3):
        expected = integrate.quad(lambda h: phi(h) * f(h) ** k, -12, 12, epsabs=1e-15)[0]
        assert abs(law.moment(k) - expected) < 1e-11


def test_gaussian_pushforward_rejects_bad_input():
    with pytest.raises(ValueError, match="q"):
        gaussian_pushforward(np.tanh, -1.0)
    with pytest.raises(ValueError, match="f"):
        gaussian_pushforward(3.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        gaussian_pushforward(lambda h: 1 / h * 0 + np.log(h), 1.0)


def test_non_finite_arguments_are_rejected():
    law = MarchenkoPastur(0.5)
    for name, call in (("z", lambda: law.cauchy([1.0 + 1j, np.nan])), ("x", lambda: law.pdf([np.inf])),
                       ("q", lambda: law.quantile([1.5])), ("k", lambda: law.moment(-1))):
        with pytest.raises(ValueError, match=name):
            call()


# --- the cdf from above a floor -------------------------------------------------------------------------------
def test_cdf_above_equals_cdf_with_and_without_atoms():
    """1 − (mass above x), from the density above lo only, against the cdf integrated up from the bottom."""
    from rmtnet.spectra import Bernoulli, free_mult
    from rmtnet.spectra.laws import FussCatalan
    for law, lo, tol in ((FussCatalan(3), 1e-6, 1e-7),
                         (free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0)), 1e-4, 1e-9)):
        x = np.concatenate([[lo], np.geomspace(1.001 * lo, 1.1 * law.continuous_support()[1], 40)])
        assert np.max(np.abs(law.cdf_above(x, lo) - law.cdf(x))) < tol
    with pytest.raises(ValueError, match="x must be ≥ lo"):
        FussCatalan(3).cdf_above([1e-7, 1.0], 1e-6)


def test_cdf_above_in_the_deep_tail_of_fuss_catalan_32():
    """Fuss–Catalan(32) puts 15.6 % of its mass below 3e-27 and ~1e-9 below 1e-300. The mass below lo from
    1 − ∫_lo ρ agrees with ∫_{1e-300}^{lo} ρ (adaptive quadrature in log x of the closed-form density) to 1e-8."""
    from rmtnet.spectra.laws import FussCatalan
    law, lo = FussCatalan(32), 3e-27
    f = lambda s: law.pdf(np.array([np.exp(s)]))[0] * np.exp(s)  # noqa: E731
    below = integrate.quad(f, np.log(1e-300), np.log(lo), limit=400, epsabs=1e-13)[0]
    assert 0.15 < below < 0.16
    assert abs(float(law.cdf_above(lo, lo)) - below) < 1e-8


def test_resolved_tanh_sinh_splits_where_the_integrand_is_not_resolved():
    """A step of width 1e-3 inside [0, 1]: one tanh-sinh panel converges (its sum is within 2e-10 of the exact
    integral) but its cumulative table, which integrates between nodes by quadratics, misses the total by > 1e-8;
    split at the feature, the table's total is exact to 1e-12 and its cdf at every node to 1e-8."""
    from rmtnet.spectra.measures import _cumulative, adaptive_tanh_sinh, resolved_tanh_sinh
    eps, c0 = 1e-3, 0.6137
    f = lambda x: 1 + np.tanh((x - c0) / eps)                          # noqa: E731
    F = lambda x: x + eps * np.log(np.cosh((x - c0) / eps))             # noqa: E731
    exact = F(1.0) - F(0.0)
    single = adaptive_tanh_sinh(f, 0.0, 1.0, min_level=2)
    assert abs(single[3] * np.sum(single[1] * single[2]) - exact) < 2e-10
    assert abs(_cumulative([single])[1][-1] - exact) > 1e-8
    pieces = resolved_tanh_sinh(f, 0.0, 1.0, min_level=2)
    assert len(pieces) > 1 and any(abs(p[0][0] - c0) < 0.01 for p in pieces[1:])
    x, c, _ = _cumulative(pieces)
    assert abs(c[-1] - exact) < 1e-12
    assert np.max(np.abs(c - (F(x) - F(0.0)))) < 1e-8
    smooth = resolved_tanh_sinh(np.exp, 0.0, 1.0, min_level=2)           # resolved: no split
    assert len(smooth) == 1


def test_gaussian_pushforward_cdf_next_to_a_turning_point():
    """f(h) = sech⁴h has its maximum 1 at h = 0, so the law of f(h), h ~ N(0, q), has an inverse-square-root edge at 1
    (f ≈ 1 − 2h²). Its cdf is closed form, F(x) = 2Φ(−h(x)/√q) with h(x) = arcsech(x^{1/4}). The density there is
    solved for on each monotone panel of f by a bracketed root; Newton from a linear guess lost 2.6e-4 of the mass."""
    q = 0.7
    law = gaussian_pushforward(lambda h: (1.0 - np.tanh(h) ** 2) ** 2, q)
    x = np.array([1e-9, 1e-3, 0.2, 0.6, 0.9, 0.99, 1 - 1e-6, 1 - 1e-9])
    exact = 2 * special.ndtr(-np.arccosh(x ** -0.25) / np.sqrt(q))
    with pytest.warns(RuntimeWarning, match="next to the edge 1"):        # the tail the nodes cannot reach
        F = law.cdf(x)
    assert np.max(np.abs(F - exact)) < 1e-9
    assert float(law.cdf(1.0)) == pytest.approx(1.0, abs=1e-9)
    (edge, mass, beta), = [t for t in law.edge_tails() if t[0] == 1.0]
    assert abs(beta + 0.5) < 1e-3
    assert law.expect(lambda t: np.ones_like(t)) == pytest.approx(1.0, abs=1e-12)


def test_quantile_of_many_atoms_falls_in_no_crack():
    """Masses that do not add up exactly: F(a_k) − m_k and F(a_{k−1}) differ by rounding, and a q between them must
    still pick a_{k−1} or a_k (it fell to the bottom of the support), like the pooled Lanczos quadratures."""
    rng = np.random.default_rng(3)
    locs = np.sort(rng.normal(size=48))
    w = rng.uniform(0.1, 1.0, size=48)
    law = PointMasses(locs, w / w.sum())
    a, m = law.atoms()
    top = law.cdf(a)
    for k in range(1, a.size):
        for q in (top[k] - m[k], top[k - 1]):
            assert float(law.ppf(q)) in (a[k - 1], a[k])
    q = np.linspace(0.001, 0.999, 500)
    x = law.ppf(q)
    assert np.all(law.cdf(x) >= q - 1e-15) and np.all(law.cdf(x) - law._atom_mass_at(x) <= q + 1e-15)


def test_the_measures_package_keeps_every_public_name_of_the_former_module():
    """measures.py became a package of five modules; every public name it defined (and the ConvergenceError it
    raised, which callers imported from it) still imports from rmtnet.spectra.measures."""
    import rmtnet.spectra.measures as M
    former = ["Measure", "PointMasses", "Empirical", "GridDensity", "Tabulated", "tabulate", "Mixture", "Affine",
              "OtherGram", "GaussianPushforward", "gaussian_pushforward", "adaptive_tanh_sinh", "resolved_tanh_sinh",
              "cumulative_panels", "binned_cauchy", "atom_cauchy", "LARGE_ORDER", "ConvergenceError", "_cumulative"]
    assert [name for name in former if not hasattr(M, name)] == []
    assert set(M.__all__) <= set(former)
