"""Closed-form laws against their published formulas (Marchenko & Pastur 1967; Wigner 1958; Penson & Życzkowski
2011, Phys. Rev. E 83, 061118) and against quadrature."""
import numpy as np
import pytest
import sympy as sp
from scipy import integrate, special, stats

from rmtnet.plot import ks_distance
from rmtnet.spectra import Arcsine, Bernoulli, FussCatalan, MarchenkoPastur, PointMasses, Semicircle
from rmtnet.spectra.sampling import montecarlo
from rmtnet.spectra import symbolic

from conftest import contour_moments, quadrature_moments, total_mass


def test_mp_quarter_ratio_published_numbers():
    mp = MarchenkoPastur(0.25)
    lo, hi = mp.continuous_support()
    assert abs(lo - 0.25) < 1e-10 and abs(hi - 2.25) < 1e-10
    assert abs(mp.moment(2) - 1.25) < 1e-10
    assert abs(mp.moment(3) - 1.8125) < 1e-10
    mass, _ = integrate.quad(mp.pdf, lo, hi, epsabs=1e-13, epsrel=1e-13, limit=200)
    assert abs(mass + mp.atoms()[1].sum() - 1) < 1e-8


def test_mp_ratio_four_atom_and_mass():
    mp = MarchenkoPastur(4.0)
    locs, masses = mp.atoms()
    assert locs.tolist() == [0.0] and abs(masses[0] - 0.75) < 1e-15
    lo, hi = mp.continuous_support()
    assert abs(lo - 1) < 1e-12 and abs(hi - 9) < 1e-12
    mass, _ = integrate.quad(mp.pdf, lo, hi, epsabs=1e-13, limit=200)
    assert abs(mass + 0.75 - 1) < 1e-8
    assert abs(total_mass(mp) - 1) < 1e-8


@pytest.mark.parametrize("ratio,scale", [(0.3, 1.0), (1.0, 2.0), (2.5, 0.7)])
def test_mp_moments_narayana_and_cauchy(ratio, scale):
    mp = MarchenkoPastur(ratio, scale)
    exact = [float(m) * scale ** (k + 1) for k, m in enumerate(symbolic.narayana_moments(sp.nsimplify(ratio), 6))]
    assert np.allclose([mp.moment(k) for k in range(1, 7)], exact, rtol=1e-12)
    # the closed-form G against its own moment expansion, via the contour integral
    assert np.allclose(contour_moments(mp, 6), exact, rtol=1e-10)
    # S-transform closed form vs numerical inversion of M
    w = np.array([0.1, -0.2 + 0.1j, 0.4j])
    from rmtnet.spectra import transforms
    assert np.allclose(transforms.s_transform(mp, w), mp.s_transform(w), rtol=1e-10)


def test_mp_monte_carlo_ks():
    mp = MarchenkoPastur(0.5)
    eig = montecarlo.wishart_eigs(1000, 2000, seed=1)
    assert ks_distance(mp, eig) < 0.02
    # and the ratio > 1 case, whose exact zeros come out as ±1e-13 from eigvalsh
    mp2 = MarchenkoPastur(2.0)
    assert ks_distance(mp2, montecarlo.wishart_eigs(1000, 500, seed=2)) < 0.02


def test_semicircle():
    sc = Semicircle(var=2.0, loc=1.0)
    assert np.allclose(sc.support(), (1 - 2 * np.sqrt(2), 1 + 2 * np.sqrt(2)))
    # even central moments var^k Catalan(k)
    c = Semicircle(var=2.0)
    assert np.allclose([c.moment(k) for k in (2, 4, 6)], [2, 2 * 4, 5 * 8])
    assert np.allclose(contour_moments(sc, 5), [sc.moment(k) for k in range(1, 6)], rtol=1e-10)
    x = np.linspace(-1.5, 3.5, 7)
    num = [integrate.quad(sc.pdf, sc.support()[0], xi)[0] for xi in x]
    assert np.allclose(sc.cdf(x), num, atol=1e-9)


@pytest.mark.parametrize("s", [1, 2, 3, 10])
def test_fuss_catalan_parametric_density(s):
    fc = FussCatalan(s)
    assert abs(fc.support()[1] - (s + 1) ** (s + 1) / s ** s) < 1e-12
    exact = [special.comb((s + 1) * k, k, exact=True) / (s * k + 1) for k in range(1, 5)]
    assert np.allclose([fc.moment(k) for k in range(1, 5)], exact, rtol=1e-14)
    # the parametric density, integrated by double-exponential quadrature, has the Fuss–Catalan moments
    assert abs(total_mass(fc) - 1) < 1e-9
    assert np.allclose(quadrature_moments(fc, 4), exact, rtol=1e-9)
    phi = np.linspace(0.01, np.pi / (s + 1) - 0.01, 2001)
    x, rho = fc.x_of_phi(phi), fc.rho_of_phi(phi)
    # pdf(x) inverts x(φ)
    assert np.allclose(fc.pdf(x[1000:1010]), rho[1000:1010], rtol=1e-8)


def test_bernoulli_and_point_masses():
    b = Bernoulli(0.3)
    assert np.allclose(b.atoms()[1], [0.7, 0.3]) and b.continuous_support() is None
    assert abs(b.moment(3) - 0.3) < 1e-15
    w = np.array([0.2, -0.1 + 0.3j])
    assert np.allclose(b.s_transform(w), (1 + w) / (0.3 + w))
    from rmtnet.spectra import transforms
    assert np.allclose(transforms.s_transform(b, w), b.s_transform(w), rtol=1e-10)
    pm = PointMasses([2.0, 1.0, 2.0], [0.25, 0.5, 0.25])
    assert pm.atoms()[0].tolist() == [1.0, 2.0] and pm.atoms()[1].tolist() == [0.5, 0.5]
    assert np.allclose(pm.cdf([0.5, 1.0, 1.5, 2.0]), [0, 0.5, 0.5, 1.0])
    assert np.allclose(pm.quantile([0.1, 0.5, 0.6, 1.0]), [1, 1, 2, 2])


def test_arcsine():
    a = Arcsine(1.0, 3.0)
    assert np.allclose([a.moment(k) for k in (1, 2)], [2.0, 4.5])
    assert np.allclose(contour_moments(a, 4), [a.moment(k) for k in range(1, 5)], rtol=1e-9)
    q = np.linspace(0.05, 0.95, 7)
    assert np.allclose(a.cdf(a.quantile(q)), q, atol=1e-12)
    assert stats.kstest(a.rvs(20000, rng=3), a.cdf).pvalue > 1e-3


@pytest.mark.parametrize("bad", [
    lambda: MarchenkoPastur(0.0), lambda: MarchenkoPastur(-1.0), lambda: MarchenkoPastur(1.0, scale=0.0),
    lambda: Bernoulli(1.5), lambda: PointMasses([0, 1], [0.5, -0.5]), lambda: PointMasses([0, 1], [0.5, 0.6]),
    lambda: FussCatalan(0), lambda: Arcsine(1, 1), lambda: Semicircle(var=-1),
])
def test_bad_parameters_raise(bad):
    with pytest.raises(ValueError):
        bad()


def test_error_messages_name_the_argument():
    with pytest.raises(ValueError, match="ratio"):
        MarchenkoPastur(0)
    with pytest.raises(ValueError, match="masses"):
        PointMasses([0, 1], [-0.5, 1.5])
    with pytest.raises(ValueError, match="masses must sum to 1"):
        PointMasses([0, 1], [0.5, 0.6])
    with pytest.raises(ValueError, match="z must be finite"):
        MarchenkoPastur(1).cauchy(np.array([np.nan]))


@pytest.mark.parametrize("law,unit,c", [(MarchenkoPastur(0.4, scale=2.5), MarchenkoPastur(0.4), 2.5),
                                        (MarchenkoPastur(3.0, scale=0.5), MarchenkoPastur(3.0), 0.5),
                                        (FussCatalan(2, scale=1.7), FussCatalan(2), 1.7)])
def test_scale_is_scipys_scale_parameter(law, unit, c):
    """``scale`` as in scipy.stats: the law of c·X, kept as the attribute ``scale``; the push-forward x ↦ c·x is the
    method ``dilate``, and the two agree (moments c^k m_k, the density ρ(x/c)/c, G(z) = G(z/c)/c, quantiles c·Q)."""
    assert law.scale == c and unit.scale == 1.0 and f"scale={c:g}" in repr(law)
    pushed = unit.dilate(c)
    assert np.allclose([law.moment(k) for k in range(1, 5)], [c ** k * unit.moment(k) for k in range(1, 5)],
                       rtol=1e-13)
    assert np.allclose([law.moment(k) for k in range(1, 5)], [pushed.moment(k) for k in range(1, 5)], rtol=1e-13)
    lo, hi = law.continuous_support()
    x = np.linspace(lo, hi, 9)[1:-1]
    assert np.allclose(law.pdf(x), pushed.pdf(x), rtol=1e-8)
    z = np.array([0.3 + 0.2j, 2.0 + 1.0j, -1.0 + 0.5j])
    assert np.allclose(law.cauchy(z), pushed.cauchy(z), rtol=1e-9)
    q = np.array([0.1, 0.5, 0.9])
    assert np.allclose(law.ppf(q), c * unit.ppf(q), rtol=1e-9, atol=1e-12)
    assert law.support() == pytest.approx(pushed.support(), rel=1e-14)


def test_semicircle_variance_attribute_and_method():
    sc = Semicircle(var=2.0, loc=1.0)
    assert sc.variance == 2.0 and sc.var() == 2.0 and sc.std() == pytest.approx(np.sqrt(2.0), rel=1e-15)
    assert sc.var() == pytest.approx(sc.moment(2) - sc.moment(1) ** 2, rel=1e-13)
    assert sc.median() == pytest.approx(1.0, abs=1e-9)     # the centre; ppf solves on the ~1e-10 cdf table


@pytest.mark.parametrize("s,scale", [(64, 1.0), (65, 1.0), (300, 1.0), (300, 2.5), (2000, 1.0)])
def test_fuss_catalan_cdf_of_high_order_holds_its_mean(s, scale):
    """A high-order Fuss–Catalan law keeps most of its mass below 1e-300 (10 % for s = 300) and its mean in a thin
    upper tail. Its cdf, taken in the φ parametrisation, must give back m₁ = scale through ∫(1 − F) (the table in
    x gave 0.968 at s = 300, 1.31 with scale 2.5, and 0.0004 at s = 2000; it is still used up to
    TABLE_MAX_ORDER = 64). A 6000-point log grid's trapezoid error is 4.8e-6 at every s."""
    law = FussCatalan(s, scale)
    top = law.hull()[1]
    x = np.concatenate([[0.0], np.geomspace(1e-14 * top, top, 6000)])
    assert np.trapezoid(1 - law.cdf(x), x) / scale == pytest.approx(1.0, abs=1e-5)
    q = np.array([0.995, 0.999])                       # quantiles above 1e-300 (below it x is not a float64)
    np.testing.assert_allclose(law.cdf(law.quantile(q)), q, atol=1e-12)


def test_fuss_catalan_cdf_is_the_free_power_of_marchenko_pastur():
    """FussCatalan(s) = MarchenkoPastur(1)^{⊠s}: the closed form's cdf against the engine's, s = 3 (the generic
    table) and 100 (the cdf in φ)."""
    from rmtnet.spectra import free_mult_power
    for s in (3, 100):
        x = np.array([1e-3, 0.5, 1.0, 3.0, 0.5 * FussCatalan(s).hull()[1]])
        np.testing.assert_allclose(FussCatalan(s).cdf(x), free_mult_power(MarchenkoPastur(1.0), s).cdf(x),
                                   atol=1e-7)
