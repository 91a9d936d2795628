"""Bad input never passes silently: the examples a scripted probe of the public API found (unclear errors, wrong
inputs accepted, NaN or inf returned), each now a clear error naming the argument or the right value."""
import numpy as np
import pytest
import sympy as sp

from rmtnet.spectra import (Bernoulli, FussCatalan, GridDensity, MarchenkoPastur, PointMasses, Semicircle,
                            free_mult_power)
from rmtnet.spectra import symbolic as S
from rmtnet.spectra.random_matrices import free_product_eigs

MP = MarchenkoPastur(0.5)


@pytest.mark.parametrize("call, message", [
    (lambda: MP.quantile("a"), "q must be real numbers"),
    (lambda: MP.ppf("a"), "q must be real numbers"),
    (lambda: MP.pdf("a"), "x must be real numbers"),
    (lambda: MP.cdf([1.0, None]), "x must be finite"),
    (lambda: PointMasses(["a"], [1.0]), "locations must be real numbers"),
    (lambda: MP.moment(None), "k must be a non-negative integer, got None"),
    (lambda: MP.moment("2"), "k must be a non-negative integer"),
    (lambda: MP.moment(2.5), "k must be a non-negative integer, got 2.5"),
    (lambda: MP.rvs(2.5), "n must be an integer >= 0, got 2.5"),
    (lambda: MP.rvs(3, seed="abc"), "seed must be None, a non-negative integer"),
    (lambda: MP.rvs(3, seed=-1), "seed must be None, a non-negative integer"),
    (lambda: FussCatalan(float("nan")), "s must be a positive integer, got nan"),
    (lambda: FussCatalan(2.5), "s must be a positive integer, got 2.5"),
    (lambda: GridDensity([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], atoms=([0.5, 0.7], [0.1])), "equal length"),
    (lambda: GridDensity([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], atoms=[0.5]), "a pair (locations, masses)"),
])
def test_unclear_errors_now_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_integral_floats_stay_accepted():
    assert FussCatalan(3.0).s == 3 and MP.moment(2.0) == MP.moment(2)
    assert len(MP.rvs(np.int64(3), seed=np.int64(1))) == 3


@pytest.mark.parametrize("law, w", [(MarchenkoPastur(1.0), -1.0), (MarchenkoPastur(0.5), -2.0), (Bernoulli(0.5), -0.5)])
def test_s_transform_at_its_pole_raises_instead_of_returning_inf(law, w):
    with pytest.raises(ValueError, match=r"w = \[.*\] is a pole or lies outside the domain"):
        law.s_transform(w)
    assert np.isfinite(law.s_transform(w / 2))                              # away from the pole it is finite


@pytest.mark.parametrize("law, k", [(MarchenkoPastur(0.5), 10 ** 6), (Semicircle(1.0), 1100)])
def test_moments_beyond_float64_raise_overflow_naming_k(law, k):
    """m_k of MP(½) and of the semicircle grow like (1 + √λ)^{2k} and 2^k: beyond ~1.8e308 they are not
    representable; before, MP returned NaN and the semicircle NaN."""
    with pytest.raises(OverflowError, match=f"moment\\(k={k}\\)"):
        law.moment(k)
    assert np.isfinite(law.moment(200))


def test_free_mult_power_accepts_large_exponents():
    """A valid exponent of 600 raised OverflowError; the mean of μ^{⊠600} is m₁(μ)^600 (means multiply)."""
    law = free_mult_power(Bernoulli(0.5), 600)
    assert law.moment(1) == pytest.approx(0.5 ** 600, rel=1e-9)


@pytest.mark.parametrize("call, message", [
    (lambda: S.bernoulli_s_transform(2), r"p must lie in \(0, 1\], got 2"),
    (lambda: S.bernoulli_s_transform(-0.5), r"p must lie in \(0, 1\], got -0.5"),
    (lambda: S.mp_s_transform(-1, 1), r"ratio must lie in \(0, oo\), got -1"),
    (lambda: S.mp_s_transform(1, 0), r"scale must lie in \(0, oo\), got 0"),
    (lambda: S.fuss_catalan_moments(0, 3), r"s must lie in \[1, oo\), got 0"),
    (lambda: S.fuss_catalan_moments(-1, 3), r"s must lie in \[1, oo\), got -1"),
    (lambda: S.narayana_moments(1, -1), "K must be an integer >= 0, got -1"),
    (lambda: S.free_mult_moments(S.mp_s_transform(), K=2.5), "K must be an integer >= 0"),
    (lambda: S.bernoulli_s_transform(sp.oo), "p must be a finite real number"),
])
def test_symbolic_parameters_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_symbolic_parameters_may_stay_symbols_and_k_zero_is_empty():
    p = sp.Symbol("p", positive=True)
    assert sp.simplify(S.bernoulli_s_transform(p) - (1 + S.w) / (p + S.w)) == 0
    assert S.moments_from_s(S.mp_s_transform(), 0) == [] and S.free_mult_moments(S.mp_s_transform(), K=0) == []


def test_free_product_eigs_refuses_nan_diagonals():
    with pytest.raises(ValueError, match=r"diagonals\[1\] must be finite"):
        free_product_eigs([np.ones(4), np.array([1.0, np.nan, 1.0, 1.0])], seed=0)
    with pytest.raises(ValueError, match="same length"):
        free_product_eigs([np.ones(4), np.ones(3)], seed=0)
