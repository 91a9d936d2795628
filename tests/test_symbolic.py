"""SymPy moment series: exact rationals, checked against closed forms that do not go through them."""
import sympy as sp

from rmtnet.spectra import symbolic as S


def test_narayana_moments_are_exact_rationals():
    m = S.narayana_moments(sp.Rational(1, 4), 4)
    assert m == [1, sp.Rational(5, 4), sp.Rational(29, 16), sp.Rational(185, 64)]   # REFERENCE §2: m₃ = 1.8125


def test_s_transform_of_mp_from_its_moments():
    lam = sp.Rational(2, 3)
    series = S.s_series_from_moments(S.narayana_moments(lam, 6))
    exact = sp.series(1 / (1 + lam * S.w), S.w, 0, 6).removeO()
    assert sp.expand(series - exact) == 0


def test_mp_times_mp_is_fuss_catalan_two():
    m = S.free_mult_moments(S.mp_s_transform(), S.mp_s_transform(), K=7)
    assert m == S.fuss_catalan_moments(2, 7)
    # the same through moment sequences instead of S-transforms, and through a power t = 2
    assert S.free_mult_moments(S.narayana_moments(1, 7), S.narayana_moments(1, 7), K=7) == m
    assert S.free_mult_moments((S.mp_s_transform(), 2), K=7) == m


def test_bernoulli_times_mp():
    """(Bernoulli(½) ⊠ MP(1, scale 2)): the moments 1, 3, 11, 45 of the issue's ReLU-layer example."""
    m = S.free_mult_moments(S.bernoulli_s_transform(sp.Rational(1, 2)), S.mp_s_transform(1, 2), K=4)
    assert m == [1, 3, 11, 45]


def test_free_cumulants():
    semicircle = [0, 1, 0, 2, 0, 5, 0, 14]
    assert S.free_cumulants(semicircle) == [0, 1, 0, 0, 0, 0, 0, 0]
    lam = sp.Rational(3, 7)                    # MP(λ): κ_n = λ^{n-1}
    assert S.free_cumulants(S.narayana_moments(lam, 6)) == [lam ** (n - 1) for n in range(1, 7)]
    kappa = [sp.Rational(1, 2), sp.Rational(1, 3), -1, 2, sp.Rational(5, 7)]
    assert S.free_cumulants(S.moments_from_free_cumulants(kappa)) == kappa


def test_free_add_moments():
    semicircle = [0, 1, 0, 2, 0, 5]
    assert S.free_add_moments(semicircle, semicircle) == [0, 2, 0, 8, 0, 40]
    # MP(1)^{⊞t} has free cumulants t: t = 5/2 against the moments from κ_n = 5/2
    t = sp.Rational(5, 2)
    assert S.free_add_moments((S.narayana_moments(1, 5), t), K=5) == S.moments_from_free_cumulants([t] * 5)
