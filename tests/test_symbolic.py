"""SymPy moment series: exact rationals, checked against closed forms and a moment–cumulant recursion that do not go
through them."""
import time
from fractions import Fraction

import sympy as sp

from rmtnet.spectra import symbolic as S


def test_narayana_moments_are_exact_rationals():
    m = S.narayana_moments(sp.Rational(1, 4), 4)
    assert m == [1, sp.Rational(5, 4), sp.Rational(29, 16), sp.Rational(185, 64)]   # m₃ = 1 + 3λ + λ²


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


def _moments_from_cumulants_nc(kappa, K):
    """m_1..m_K from free cumulants κ_1..κ_K by summing over non-crossing partitions, in plain fractions: the block
    of a non-crossing partition of {1, …, n} that holds 1 has some size s, and the s gaps after its elements hold
    non-crossing partitions of i_1 + … + i_s = n − s points, so m_n = Σ_s κ_s Σ_{i_1+…+i_s = n−s} m_{i_1}⋯m_{i_s}
    (Nica & Speicher, Lectures on the Combinatorics of Free Probability, 2006, Lecture 11), m_0 = 1."""
    m = [Fraction(1)]

    def gaps(s, total):   # Σ over compositions of total into s parts ≥ 0 of the product of moments
        if s == 0:
            return Fraction(1) if total == 0 else Fraction(0)
        return sum(m[i] * gaps(s - 1, total - i) for i in range(total + 1))

    for n in range(1, K + 1):
        m.append(sum(kappa[s - 1] * gaps(s, n - s) for s in range(1, n + 1)))
    return m[1:]


def test_semicircle_plus_mp_stays_rational_and_fast():
    """Semicircle(1) ⊞ MP(½) at K = 8: free cumulants κ₂ = 1 (semicircle) plus κ_n = λ^{n−1} (MP(λ)); moments by the
    non-crossing-partition recursion above. Every moment is a SymPy Rational (m₈ = 151417/128), in well under a
    second."""
    K, lam = 8, Fraction(1, 2)
    kappa = [(1 if n == 2 else 0) + lam ** (n - 1) for n in range(1, K + 1)]
    expected = [sp.Rational(f.numerator, f.denominator) for f in _moments_from_cumulants_nc(kappa, K)]
    assert expected[-1] == sp.Rational(151417, 128)
    semicircle = [0, 1, 0, 2, 0, 5, 0, 14]          # Catalan numbers
    start = time.perf_counter()
    m = S.free_add_moments(semicircle, S.narayana_moments(sp.Rational(1, 2), K), K=K)
    elapsed = time.perf_counter() - start
    assert m == expected
    assert all(isinstance(x, sp.Rational) for x in m)
    assert elapsed < 1.0
    assert S.free_cumulants(m) == [sp.Rational(f.numerator, f.denominator) for f in kappa]


def test_moments_from_free_cumulants_match_non_crossing_sum():
    kappa = [Fraction(1, 2), Fraction(-1, 3), Fraction(2), Fraction(5, 7), Fraction(-3, 4), Fraction(1, 9)]
    m = S.moments_from_free_cumulants([sp.Rational(k.numerator, k.denominator) for k in kappa])
    assert m == [sp.Rational(f.numerator, f.denominator) for f in _moments_from_cumulants_nc(kappa, 6)]
    assert all(isinstance(x, sp.Rational) for x in m)


def test_fractional_free_mult_power_is_exact():
    """MP(1)^{⊠t} has S(w) = (1 + w)^{−t}, so m_n = (1/n)[w^{n−1}](1 + w)^{(1+t)n} = C((1 + t)n, n − 1)/n, rational
    for rational t (Fuss–Catalan numbers at integer t). At t = ½ through the S-transform and through the moments."""
    t, K = sp.Rational(1, 2), 7
    expected = [sp.binomial((1 + t) * n, n - 1) / n for n in range(1, K + 1)]
    assert all(isinstance(x, sp.Rational) for x in expected)
    assert S.free_mult_moments((S.mp_s_transform(), t), K=K) == expected
    m = S.free_mult_moments((S.narayana_moments(1, K), t), K=K)
    assert m == expected and all(isinstance(x, sp.Rational) for x in m)
    assert S.free_mult_moments((S.mp_s_transform(), 3), K=K) == S.fuss_catalan_moments(3, K)


def test_input_conversion():
    """Python ints and Fractions are taken exactly, Python floats through nsimplify, SymPy Floats stay Floats."""
    assert S.narayana_moments(Fraction(1, 3), 3) == [1, sp.Rational(4, 3), sp.Rational(19, 9)]
    assert S.narayana_moments(0.5, 3) == [1, sp.Rational(3, 2), sp.Rational(11, 4)]
    floats = S.free_cumulants([sp.Float(1), sp.Float(1.5)])
    assert all(isinstance(x, sp.Float) for x in floats) and [float(x) for x in floats] == [1.0, 0.5]
