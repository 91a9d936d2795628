"""The ⊠ / ⊞ engine: against SymPy series, closed forms, Fuss–Catalan, atoms, and Monte Carlo (issue #2)."""
import numpy as np
import pytest
import sympy as sp
from scipy import linalg

from rmtnet.plot import ks_distance
from rmtnet.spectra import Bernoulli, ConvergenceError, FussCatalan, MarchenkoPastur, PointMasses, Semicircle, free_add, free_add_power, free_mult, free_mult_power, gaussian_pushforward, symbolic
from rmtnet.spectra.sampling import montecarlo

from conftest import contour_moments, quadrature_moments, total_mass


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b) / np.abs(b))


# --- two Marchenko–Pastur laws ---------------------------------------------------------------------------------
A, B = sp.Rational(1, 2), sp.Rational(3, 10)


@pytest.fixture(scope="module")
def mp_product():
    return free_mult(MarchenkoPastur(float(A)), MarchenkoPastur(float(B)))


def test_mp_product_moments_equal_sympy_series(mp_product):
    exact = symbolic.free_mult_moments(symbolic.mp_s_transform(A), symbolic.mp_s_transform(B), K=6)
    assert all(isinstance(m, sp.Rational) for m in exact)
    assert rel([mp_product.moment(k) for k in range(1, 7)], [float(m) for m in exact]) < 1e-10
    # independent of the series: moments read off the engine's Cauchy transform on a contour
    assert rel(contour_moments(mp_product, 6), [float(m) for m in exact]) < 1e-10
    # and the density + atoms (no atoms here) integrate to 1 and give the same moments
    assert abs(total_mass(mp_product) - 1) < 1e-8
    assert rel(quadrature_moments(mp_product, 4), [float(m) for m in exact[:4]]) < 1e-7


def test_mp_product_vs_wishart_monte_carlo(mp_product):
    """Density vs the spectrum of W1 W2 for independent Wishart matrices at N = 2000 (KS < 0.02)."""
    n = 2000
    rng = np.random.default_rng(7)
    x1 = rng.standard_normal((n, int(n / float(A)))) / np.sqrt(n / float(A))
    x2 = rng.standard_normal((n, int(n / float(B)))) / np.sqrt(n / float(B))
    w1, w2 = x1 @ x1.T, x2 @ x2.T
    c = linalg.cholesky(w1, lower=True)              # W1 = C Cᵀ, eig(Cᵀ W2 C) = eig(W1 W2)
    eig = linalg.eigvalsh(c.T @ w2 @ c)
    assert ks_distance(mp_product, eig) < 0.02


# --- Fuss–Catalan: products of Gaussian layers --------------------------------------------------------------------
@pytest.mark.parametrize("s", [2, 3, 10])
def test_product_of_gaussian_layers_is_fuss_catalan(s):
    law = free_mult_power(MarchenkoPastur(1.0), s)
    exact = [float(sp.binomial((s + 1) * k, k) / (s * k + 1)) for k in range(1, 7)]
    assert rel([law.moment(k) for k in range(1, 7)], exact) < 1e-10
    assert abs(law.continuous_support()[1] - (s + 1) ** (s + 1) / s ** s) < 1e-8
    assert law.continuous_support()[0] == 0.0
    fc = FussCatalan(s)
    x = np.linspace(0.02, 0.98, 50) * fc.continuous_support()[1]
    assert np.max(np.abs(law.pdf(x) - fc.pdf(x))) < 1e-6


def test_fuss_catalan_monte_carlo():
    law = free_mult_power(MarchenkoPastur(1.0), 3)
    eig = montecarlo.ginibre_product_eigs(1000, 3, seed=5)
    assert ks_distance(law, eig) < 0.02


# --- atoms: one critical ReLU Gaussian layer ----------------------------------------------------------------------
def test_relu_layer_atom_support_moments():
    law = free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0))
    locs, masses = law.atoms()
    assert locs.tolist() == [0.0] and abs(masses[0] - 0.5) < 1e-15
    lo, hi = law.continuous_support()
    assert abs(lo - (3 - 2 * np.sqrt(2))) < 1e-8 and abs(hi - (3 + 2 * np.sqrt(2))) < 1e-8
    assert rel([law.moment(k) for k in range(1, 5)], [1, 3, 11, 45]) < 1e-12
    assert rel(contour_moments(law, 4), [1, 3, 11, 45]) < 1e-10
    assert abs(total_mass(law) - 1) < 1e-8
    # the closed form of REFERENCE §2: M⁻¹(m) = (1+m)(1+2m)/m at L = 1 ⇒ density from the quadratic
    x = np.linspace(lo + 1e-3, hi - 1e-3, 9)
    # G solves x g² ... via m: 2m² + (3 - x)m + 1 = 0, ρ = -Im((1+m)/x)/π with Im m < 0
    disc = (3 - x) ** 2 - 8 + 0j
    m = (-(3 - x) - 1j * np.sqrt(-disc)) / 4
    assert np.allclose(law.pdf(x), -np.imag((1 + m) / x) / np.pi, atol=1e-10)


def test_atoms_of_products_and_sums():
    # Belinschi: nonzero atoms a·b with mass p + q - 1 when positive; at 0 the larger mass
    law = free_mult(PointMasses([0.0, 2.0], [0.1, 0.9]), PointMasses([1.0, 3.0], [0.2, 0.8]))
    locs, masses = law.atoms()
    assert np.allclose(locs, [0.0, 2.0, 6.0]) and np.allclose(masses, [0.1, 0.1, 0.7])
    # the engine's Cauchy transform sees the same atoms: mass = lim_{y↓0} iy·G(a + iy)
    y = 1e-7
    seen = np.real(1j * y * law.cauchy(np.array([2.0, 6.0]) + 1j * y))
    assert np.allclose(seen, [0.1, 0.7], atol=1e-5)
    s = free_add(PointMasses([0.0, 1.0], [0.2, 0.8]), PointMasses([0.0, 1.0], [0.1, 0.9]))
    assert np.allclose(s.atoms()[0], [1.0, 2.0]) and np.allclose(s.atoms()[1], [0.1, 0.7])
    seen = np.real(1j * y * s.cauchy(np.array([1.0, 2.0]) + 1j * y))
    assert np.allclose(seen, [0.1, 0.7], atol=1e-5)
    p = free_mult_power(Bernoulli(0.9), 3)       # power t: mass t·p - (t - 1) at 1
    assert np.allclose(p.atoms()[0], [0.0, 1.0]) and np.allclose(p.atoms()[1], [0.1, 0.7])


# --- a law that is not algebraic: D² of tanh --------------------------------------------------------------------
@pytest.fixture(scope="module")
def tanh_law():
    nu = gaussian_pushforward(lambda h: (1 - np.tanh(h) ** 2) ** 2, 0.7)
    return nu, free_mult_power(nu, 5)


def test_tanh_power_moments_equal_series(tanh_law):
    nu, law = tanh_law
    mom = [sp.Float(nu.moment(k), 30) for k in range(1, 5)]
    exact = symbolic.free_mult_moments((mom, 5), K=4)
    assert rel([law.moment(k) for k in range(1, 5)], [float(m) for m in exact]) < 1e-8
    # the engine itself (density + atoms), not only the series
    assert abs(total_mass(law) - 1) < 1e-6
    assert rel(quadrature_moments(law, 4), [float(m) for m in exact]) < 1e-8
    assert rel(contour_moments(law, 4), [float(m) for m in exact]) < 1e-8


def test_tanh_power_monte_carlo(tanh_law):
    nu, law = tanh_law
    n = 2000
    diags = [np.sqrt(nu.rvs(n, rng=10 + i)) for i in range(5)]
    eig = montecarlo.free_product_eigs(diags, seed=11)
    assert ks_distance(law, eig) < 0.02


# --- ⊞ ---------------------------------------------------------------------------------------------------------
def test_free_add_semicircles_and_series():
    s = free_add(Semicircle(1.0), Semicircle(2.0, loc=1.0))
    ref = Semicircle(3.0, loc=1.0)
    assert np.allclose(s.continuous_support(), ref.continuous_support(), atol=1e-8)
    x = np.linspace(-2.4, 4.4, 25)
    assert np.max(np.abs(s.pdf(x) - ref.pdf(x))) < 1e-8
    mp = MarchenkoPastur(0.5)
    law = free_add_power(mp, 2.5)
    exact = symbolic.free_add_moments(([sp.Rational(x).limit_denominator(10**6) for x in
                                        [mp.moment(k) for k in range(1, 6)]], sp.Rational(5, 2)), K=5)
    assert rel(contour_moments(law, 5), [float(m) for m in exact]) < 1e-9
    assert abs(total_mass(law) - 1) < 1e-8


# --- errors ------------------------------------------------------------------------------------------------------
def test_bad_input():
    mp = MarchenkoPastur(1.0)
    with pytest.raises(ValueError, match="t must lie"):
        free_mult_power(mp, 0.5)
    with pytest.raises(ValueError, match=r"\[0, ∞\)"):
        free_mult(mp, Semicircle(1.0))
    with pytest.raises(ValueError, match="measures\\[1\\]"):
        free_mult(mp, 3.0)
    with pytest.raises(ValueError, match="z must be finite"):
        free_mult(mp, mp).cauchy(np.array([1 + 1j, np.inf]))
    with pytest.raises(ValueError, match="max_iter"):
        free_mult(mp, mp, max_iter=0)


def test_forced_failure_raises_convergence_error():
    law = free_mult(MarchenkoPastur(0.5), MarchenkoPastur(0.3), max_iter=1)
    with pytest.raises(ConvergenceError) as info:
        law.cauchy(np.array([1.0 + 0.1j]))
    err = info.value
    assert err.z is not None and err.iteration is not None and err.residual is not None
    assert "z=" in str(err) and "iteration=" in str(err) and "residual=" in str(err)
