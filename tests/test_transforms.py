"""Transforms and their inverses: round trips, closed-form S-transforms, and the ψ/η/χ relations."""
import numpy as np
import pytest

from rmtnet.spectra import (Bernoulli, ConvergenceError, MarchenkoPastur, Semicircle, cauchy_inverse, eta, eta_inverse, free_mult,
                            m_inverse, psi, psi_inverse, s_transform)

# points in the range of M on the physical sheet for every MP law below (checked against the closed form)
W = np.array([-0.3, -0.1 + 0.2j, 0.3 - 0.3j, 0.05])


@pytest.mark.parametrize("ratio,scale", [(0.25, 1.0), (1.0, 2.0), (3.0, 0.5)])
def test_mp_s_transform_closed_form(ratio, scale):
    mu = MarchenkoPastur(ratio, scale)
    numeric = s_transform(mu, W)                      # generic route: S = (1 + w)/(w M⁻¹(w))
    assert np.allclose(numeric, 1.0 / (scale * (1 + ratio * W)), rtol=1e-10)
    assert np.allclose(mu.s_transform(W), numeric, rtol=1e-10)


def test_outside_the_range_of_m_is_an_error_not_a_wrong_branch():
    """w = 2 - i is not M(z) for any z off the support of MP(1, 2): the closed form (1 + w)(1 + λw)σ/w = 8.8 - 1.6i
    has M(8.8 - 1.6i) ≠ w on the physical sheet, so the inverse must refuse instead of returning it."""
    mu = MarchenkoPastur(1.0, 2.0)
    z = 2.0 * (1 + (2 - 1j)) * (1 + (2 - 1j)) / (2 - 1j)
    assert abs(mu.m_transform(z) - (2 - 1j)) > 0.1
    with pytest.raises(ConvergenceError, match="m_inverse"):
        m_inverse(mu, np.array([2 - 1j]))


def test_bernoulli_s_transform_closed_form():
    mu = Bernoulli(0.3)
    w = np.array([-0.2, 0.4 + 0.1j, 1.0 + 1.0j])
    assert np.allclose(s_transform(mu, w), (1 + w) / (0.3 + w), rtol=1e-10)


def test_s_transform_is_multiplicative_through_the_engine():
    a, b = MarchenkoPastur(0.5), Bernoulli(0.6)
    w = np.array([-0.15, 0.3 + 0.2j, 0.1 - 0.4j])
    prod = free_mult(a, b)
    assert np.allclose(s_transform(prod, w), a.s_transform(w) * b.s_transform(w), rtol=1e-8)


def test_inverses_round_trip():
    mu = MarchenkoPastur(0.5)
    z = m_inverse(mu, W)
    assert np.allclose(mu.m_transform(z), W, rtol=1e-11)
    u = psi_inverse(mu, W)
    assert np.allclose(psi(mu, u), W, rtol=1e-11)
    e = np.array([-0.2, 0.1 + 0.1j, 0.3 - 0.2j])
    assert np.allclose(eta(mu, eta_inverse(mu, e)), e, rtol=1e-11)


def test_semicircle_cauchy_inverse_is_g_plus_one_over_g():
    """R(g) = σ²g for the semicircle, so G⁻¹(g) = σ²g + 1/g near g = 0."""
    mu = Semicircle(2.0)
    g = np.array([0.1 - 0.2j, -0.05 - 0.3j, 0.2 + 0.1j])
    assert np.allclose(cauchy_inverse(mu, g), 2.0 * g + 1.0 / g, rtol=1e-11)


def test_psi_eta_relations():
    mu = MarchenkoPastur(2.0)
    u = np.array([0.1 + 0.3j, -0.4 + 0.05j])
    p = psi(mu, u)
    assert np.allclose(p, mu.m_transform(1 / u), rtol=1e-14)
    assert np.allclose(eta(mu, u), p / (1 + p), rtol=1e-14)
    # ψ(u) = Σ m_k u^k for small u
    u0 = 0.01
    series = sum(mu.moment(k) * u0 ** k for k in range(1, 12))
    assert abs(psi(mu, u0) - series) < 1e-15


def test_non_finite_arguments_name_the_argument():
    mu = MarchenkoPastur(0.5)
    with pytest.raises(ValueError, match="w"):
        s_transform(mu, np.array([np.nan]))
    with pytest.raises(ValueError, match="g"):
        cauchy_inverse(mu, np.array([np.inf]))
