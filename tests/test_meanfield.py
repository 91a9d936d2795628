"""Mean field: length map, q*, χ, the critical line and the D² laws, against closed forms and adaptive quadrature."""
import numpy as np
import pytest
from scipy import integrate, special

from rmtnet.spectra import activations
from rmtnet.spectra import meanfield as mf


def by_quad(f, q):
    """E[f(h)], h ~ N(0, q), by adaptive quadrature (independent of the Gauss–Hermite rule)."""
    g = lambda h: f(h) * np.exp(-h * h / (2 * q)) / np.sqrt(2 * np.pi * q)   # noqa: E731
    s = 12 * np.sqrt(q)
    return integrate.quad(g, -s, s, limit=400, epsabs=1e-15, epsrel=1e-13)[0]


@pytest.mark.parametrize("q", [0.05, 0.7, 3.0])
def test_closed_forms_equal_quadrature(q):
    erf, tanh = activations.activation("erf"), activations.activation("tanh")
    assert abs(mf.second_moment(erf, q) - by_quad(lambda h: erf.phi(h) ** 2, q)) < 1e-12
    for k in (1, 2, 3):
        assert abs(mf.d2_moments(erf, q, k) - by_quad(lambda h: erf.dphi(h) ** (2 * k), q)) < 1e-12
        assert abs(mf.d2_moments(tanh, q, k) - by_quad(lambda h: tanh.dphi(h) ** (2 * k), q)) < 1e-12
    assert mf.length_map("relu", q, 1.3, 0.2) == pytest.approx(1.3 ** 2 * q / 2 + 0.04, rel=1e-15)
    assert mf.d2_moments("hard_tanh", q, 2) == pytest.approx(special.erf(1 / np.sqrt(2 * q)), rel=1e-14)


@pytest.mark.parametrize("name,sw,sb", [("tanh", 1.5, 0.1), ("erf", 2.0, 0.3), ("tanh", 1.05, 0.0)])
def test_q_star_is_the_fixed_point(name, sw, sb):
    act = activations.activation(name)
    q = mf.q_star(name, sw, sb)
    assert q > 0
    assert abs(sw ** 2 * by_quad(lambda h: act.phi(h) ** 2, q) + sb ** 2 - q) < 1e-12 * q
    assert mf.chi(name, sw, sb) == pytest.approx(sw ** 2 * by_quad(lambda h: act.dphi(h) ** 2, q), rel=1e-12)


def test_ordered_phase_goes_to_zero_and_linear_line_of_fixed_points():
    assert mf.q_star("tanh", 0.8, 0.0) == 0.0
    assert mf.q_star("tanh", 1.0, 0.0) == 0.0          # critical: q_ℓ ~ 1/ℓ, still q* = 0
    assert mf.q_star("linear", 1.0, 0.0, q0=0.37) == pytest.approx(0.37, rel=1e-14)
    assert mf.q_star("relu", np.sqrt(2), 0.0, q0=2.5) == pytest.approx(2.5, rel=1e-14)
    with pytest.raises(ValueError, match="without bound"):
        mf.q_star("relu", 2.0, 0.0)


def test_critical_line():
    assert mf.critical_sigma_w("relu") == pytest.approx(np.sqrt(2), rel=1e-12)
    # σ_b = 0: q* = 0 and χ = σ_w² below σ_w = 1, but above it q* ≈ (σ_w² - 1)/2 and χ - 1 = O((σ_w - 1)²): the
    # root is a double root from the right, so it is determined only to ~√ε
    s0 = mf.critical_sigma_w("tanh", 0.0)
    assert abs(s0 - 1.0) < 1e-7 and abs(mf.chi("tanh", s0, 0.0) - 1.0) < 1e-13
    for name, sb in (("tanh", 0.05), ("erf", 0.2)):
        s = mf.critical_sigma_w(name, sb)
        act = activations.activation(name)
        q = mf.q_star(name, s, sb)
        assert s ** 2 * by_quad(lambda h: act.dphi(h) ** 2, q) == pytest.approx(1.0, abs=1e-10)
        assert s > 1.0                                  # bias pushes the critical line above σ_w = 1


def test_d2_laws():
    relu = mf.d2_law("relu", 1.0)
    assert np.allclose(relu.atoms()[1], [0.5, 0.5])
    p = special.erf(1 / np.sqrt(2 * 0.4))
    ht = mf.d2_law("hard_tanh", 0.4)
    assert np.allclose(ht.atoms()[0], [0, 1]) and np.allclose(ht.atoms()[1], [1 - p, p])
    t = mf.d2_law("tanh", 0.7)
    for k in (1, 2):
        assert t.moment(k) == pytest.approx(mf.d2_moments("tanh", 0.7, k), rel=1e-11)


def test_custom_activation_and_errors():
    soft = activations.activation(lambda h: np.log1p(np.exp(h)), lambda h: special.expit(h))
    assert mf.d2_moments(soft, 1.0, 1) == pytest.approx(by_quad(lambda h: special.expit(h) ** 2, 1.0), rel=1e-12)
    with pytest.raises(ValueError, match="activation must be one of"):
        activations.activation("swish")
    with pytest.raises(ValueError, match="derivative"):
        activations.activation(np.sin)
    with pytest.raises(ValueError, match="sigma_w"):
        mf.length_map("tanh", 1.0, -1.0)


@pytest.mark.parametrize("q", [1e2, 1e6, 1e12])
def test_narrow_tanh_peak_resolved_at_large_q(q):
    """E[sech⁴(h)] and E[sech⁸(h)], h ~ N(0, q): at large q the Gaussian is flat across the peak, so they approach
    (4/3)/√(2πq) and (32/35)/√(2πq) with relative corrections O(1/q); at q = 100 against SciPy's adaptive quad.
    (Uniform panels capped in number gave χ = 9.9e-4 instead of 5.3e5 at σ_w = 10⁶.)"""
    for k, c in ((1, 4 / 3), (2, 32 / 35)):
        got = mf.d2_moments("tanh", q, k)
        if q >= 1e6:
            ref = c / np.sqrt(2 * np.pi * q)
        else:
            ref = integrate.quad(lambda h: np.cosh(h) ** (-4 * k) * np.exp(-h * h / (2 * q)) / np.sqrt(2 * np.pi * q),
                                 -60, 60, points=[0], epsabs=0, epsrel=1e-13, limit=500)[0]
        assert got == pytest.approx(ref, rel=1e-6 if q == 1e6 else 1e-10)


def test_chi_of_tanh_at_sigma_w_one_million():
    """χ = σ_w² E[sech⁴(√q* ξ)] ≈ σ_w² (4/3)/√(2π q*) to O(1/q*) = 1e-12, with q* ≈ σ_w²."""
    q = mf.q_star("tanh", 1e6)
    assert q == pytest.approx(1e12, rel=1e-5)
    assert mf.chi("tanh", 1e6) == pytest.approx(1e12 * (4 / 3) / np.sqrt(2 * np.pi * q), rel=1e-6)


def test_sigma_beyond_float64_squares_and_bad_brackets_are_named():
    """σ_w, σ_b above 1e150 (σ² leaves float64: chi and critical_sigma_w raised a bare OverflowError (34, 'Numerical
    result out of range')) and brackets that are not a pair 0 < lo < hi (a bare unpacking TypeError, or an error
    naming sigma_w) are refused naming the argument; chi checks σ_b also where it does not enter (ReLU)."""
    for call, name in ((lambda: mf.chi("erf", 1e308, 0.1), "sigma_w"), (lambda: mf.chi("erf", 1.0, 1e200), "sigma_b"),
                       (lambda: mf.critical_sigma_w("erf", 1e200), "sigma_b"),
                       (lambda: mf.length_map("tanh", 1.0, 1e300), "sigma_w"),
                       (lambda: mf.chi("relu", 1.0, "a"), "sigma_b")):
        with pytest.raises(ValueError, match=name):
            call()
    for bracket in (0.5, None, (0.5,), (0.5, 1.0, 2.0), (0.5, np.nan), (-1.0, 2.0), (2.0, 0.5), (0.5, 1e300)):
        with pytest.raises(ValueError, match="bracket"):
            mf.critical_sigma_w("erf", 0.1, bracket=bracket)
    with pytest.raises(ValueError, match=r"no critical sigma_w in bracket=\(2, 3\)"):
        mf.critical_sigma_w("erf", 0.1, bracket=(2.0, 3.0))
    assert mf.critical_sigma_w("erf", 0.1, bracket=[0.5, 2.0]) == pytest.approx(mf.critical_sigma_w("erf", 0.1))


@pytest.mark.parametrize("name", ["linear", "relu", "hard_tanh", "erf", "tanh", "gelu"])
def test_zeroth_moment_of_the_d2_law_is_one(name):
    """E[(φ′(h)²)⁰] = 1 for every activation; the closed forms of ReLU (½) and hard-tanh (P(|h| < 1)) hold for k ≥ 1
    only, and k = 0 used to return them."""
    assert mf.d2_moments(name, 0.7, 0) == 1.0
    assert mf.d2_moments(name, 0.7, 1) == pytest.approx(mf.d2_law(name, 0.7).moment(1), rel=1e-9)
