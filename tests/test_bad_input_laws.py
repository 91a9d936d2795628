"""Bad input and silent wrong numbers in the spectral laws: variances and central moments far from the origin,
narrow closed forms, Gaussian push-forwards of fast-growing functions, Marchenko–Pastur at tiny ratios, and the
refusals that name their argument. One test per case; the property test at the end translates and dilates every
law kind by 1e-12…1e12 against references computed in 60-digit arithmetic from the law's own float parameters."""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rmtnet._validation import ConvergenceError
from rmtnet.spectra import Arcsine, Bernoulli, FussCatalan, MarchenkoPastur, Semicircle
from rmtnet.spectra.free import free_add
from rmtnet.spectra.registry import LAWS, example
from rmtnet.spectra.measures import (Affine, GaussianPushforward, GridDensity, Mixture, PointMasses,
                                     gaussian_pushforward, tabulate)

mp.mp.dps = 60


# --- variance by a stable route ----------------------------------------------------------------------------------
def test_arcsine_narrow_variance_is_not_zero():
    """Arcsine(1, 1 + 1e-12): variance (hi − lo)²/8 = 1.2502e-25 (1 + 1e-12 is 1 + 1.0000889e-12 in float64)."""
    law = Arcsine(1, 1 + 1e-12)
    assert law.var() == pytest.approx((law.hi - law.lo) ** 2 / 8, rel=1e-15)
    assert law.var() == pytest.approx(1.25e-25, rel=2e-4)
    assert law.std() == pytest.approx((law.hi - law.lo) / math.sqrt(8), rel=1e-15)


def test_point_masses_variance_beyond_float64_raises_naming_var():
    with pytest.raises(OverflowError, match=r"\bvar\b.*not representable"):
        PointMasses([1e308, -1e308], [0.5, 0.5]).var()
    with pytest.raises(OverflowError, match=r"\bvar\b"):
        PointMasses([1e308, -1e308], [0.5, 0.5]).std()


FAR = 1e8


@pytest.mark.parametrize("name, law, var", [
    ("arcsine", lambda: Arcsine(FAR - 1.0, FAR + 1.0), 0.5),
    ("grid", lambda: GridDensity([FAR, FAR + 1.0], [1.0, 1.0]), 1.0 / 12),
    ("mixture", lambda: Mixture([Semicircle(1.0, loc=FAR - 1.0), Semicircle(1.0, loc=FAR + 1.0)], [0.5, 0.5]), 2.0),
    ("tabulated", lambda: tabulate(Semicircle(1.0, loc=FAR)), 1.0),
    ("pushforward", lambda: gaussian_pushforward(lambda h: FAR + h, 1.0), 1.0),
    ("pushforward_chi2", lambda: gaussian_pushforward(lambda h: FAR + h * h, 1.0), 2.0),
])
def test_variance_far_from_the_origin(name, law, var):
    """E[x²] − E[x]² returned 0 (or 4 for a push-forward) for these laws 10⁸ from 0; the centred routes are exact to
    the rounding of the law's own data (10⁸ + h carries 1e-8 absolute: 1e-8 relative to a unit width)."""
    mu = law()
    assert mu.var() == pytest.approx(var, rel=1e-7)
    assert mu.central_moment(2) == mu.var()


def test_central_moments_of_the_pushforward_far_from_the_origin():
    """x = 10⁶ + h², h ~ N(0, 1): the centred χ²₁ moments 2, 8, 60."""
    mu = gaussian_pushforward(lambda h: 1e6 + h * h, 1.0)
    assert [mu.central_moment(k) for k in (2, 3, 4)] == pytest.approx([2.0, 8.0, 60.0], rel=1e-8)


def test_stats_skewness_and_kurtosis_far_from_the_origin():
    """The skewness and excess kurtosis of MP(½) shifted by 10⁹: √λ and λ − 1, as at the origin."""
    m, v, s, k = MarchenkoPastur(0.5).shift(1e9).stats("mvsk")
    assert (v, s, k) == pytest.approx((0.5, math.sqrt(0.5), -0.5), rel=1e-12)


def test_free_add_far_from_the_origin_has_the_summed_variance():
    """⊞ takes its scale from var(): free cumulants add, so the mean is 2·10⁸ and the variance 1 + ½."""
    nu = free_add(Semicircle(1.0, loc=FAR), Arcsine(FAR - 1.0, FAR + 1.0))
    assert nu.mean() == pytest.approx(2 * FAR, rel=1e-15)
    assert nu.var() == pytest.approx(1.5, rel=1e-12)
    assert nu._scale() == pytest.approx(math.sqrt(1.5), rel=1e-12)


# --- Gaussian push-forwards of fast-growing functions -----------------------------------------------------------
@pytest.mark.parametrize("name, f, k, exact", [
    ("exp_k1", np.exp, 1, math.exp(0.5)),
    ("exp_k3", np.exp, 3, math.exp(4.5)),
    ("exp_k10", np.exp, 10, math.exp(50.0)),
    ("exp_k20", np.exp, 20, math.exp(200.0)),
    ("exp_x2_over_4", lambda h: np.exp(h * h / 4), 1, math.sqrt(2.0)),
    ("x_pow_20", lambda h: h ** 20, 1, 654729075.0),                       # 19!!
    ("cosh_5x", lambda h: np.cosh(5 * h), 1, math.exp(12.5)),
    ("cosh_5x_k2", lambda h: np.cosh(5 * h), 2, (1 + math.exp(50.0)) / 2),
])
def test_gaussian_pushforward_moments_of_fast_growing_functions(name, f, k, exact):
    """E[e^{kh}] = e^{k²q/2}, E[e^{h²/4}] = √2, E[h²⁰] = 19!!, E[cosh 5h] = e^{12.5} at q = 1: were off by up to
    −99.98 %; now within the documented 1e-12."""
    assert gaussian_pushforward(f, 1.0).moment(k) == pytest.approx(exact, rel=1e-12)


def test_gaussian_pushforward_divergent_moment_is_refused_with_the_reason():
    """E[(e^{h²/4})²] = E[e^{h²/2}] diverges at q = 1: OverflowError naming k and f, not a finite number."""
    law = gaussian_pushforward(lambda h: np.exp(h * h / 4), 1.0)
    with pytest.raises(OverflowError, match=r"moment\(k=2\).*f\(h\) leaves float64"):
        law.moment(2)


def test_gaussian_pushforward_non_decaying_moment_is_refused_by_convergence_error():
    """f = e^{h²/2000}, k = 1000: f^k·φ is flat in h (E[e^{h²/2}] diverges) while f stays finite to |h| = 1190; the
    integrand still carries mass at 576 s.d.: ConvergenceError naming f(h) and where, not a finite number."""
    law = gaussian_pushforward(lambda h: np.exp(h * h / 2000), 1.0)
    with pytest.raises(ConvergenceError, match=r"order 1000 of f\(h\).*beyond \|h\| = 576"):
        law.moment(1000)


def test_gaussian_pushforward_of_a_complex_function_is_refused_naming_f():
    with pytest.raises(ValueError, match=r"\bf must be real-valued"):
        gaussian_pushforward(lambda h: h + 1j, 1.0)


def test_gaussian_pushforward_of_a_function_returning_strings_is_refused_naming_f():
    with pytest.raises(TypeError, match=r"\bf must return real numbers.*dtype <U1"):
        gaussian_pushforward(lambda h: np.array(["a"] * np.size(h)), 1.0)


@pytest.mark.parametrize("width", [-1.0, 0.0, float("nan")])
def test_gaussian_pushforward_with_a_bad_width_is_refused_naming_width(width):
    with pytest.raises(ValueError, match=r"\bwidth must"):
        gaussian_pushforward(lambda h: h, 1.0, width=width)


@pytest.mark.parametrize("q", [-1.0, 0.0])
def test_gaussian_pushforward_with_a_bad_variance_is_refused_naming_q(q):
    with pytest.raises(ValueError, match=r"\bq must lie in \(0"):
        GaussianPushforward(lambda h: h, q)


# --- Marchenko–Pastur at tiny ratios ------------------------------------------------------------------------------
def _mp_cdf_reference(lam, x):
    """The MP(λ) cdf by 60-digit quadrature of the density in u = (x − 1 − λ)/(2√λ), (2/π)√(1 − u²)/(1 + λ + 2√λu)."""
    lam = mp.mpf(lam)
    u = (mp.mpf(x) - 1 - lam) / (2 * mp.sqrt(lam))
    u = max(min(u, 1), -1)
    return mp.quad(lambda t: 2 / mp.pi * mp.sqrt(1 - t * t) / (1 + lam + 2 * mp.sqrt(lam) * t), [-1, u])


@pytest.mark.parametrize("lam", [1e-7, 1e-12, 1e-20, 1e-33, 1e-40])
def test_marchenko_pastur_tiny_ratio_cdf_rises_across_its_band(lam):
    """MP(λ ≲ 1e-32).cdf was identically 0: its band 1 ± 2√λ is a few ulp wide. Now the cdf at the floats in the
    band matches 60-digit quadrature of the density, and rises from 0 to 1 across it."""
    law = MarchenkoPastur(lam)
    lo, hi = law.edges
    assert lo < 1.0 < hi
    xs = np.array([lo, 1.0 - 2 * math.sqrt(lam) * 0.3, 1.0, 1.0 + 2 * math.sqrt(lam) * 0.7, hi])
    got = law.cdf(xs)
    ref = np.array([float(_mp_cdf_reference(lam, x)) for x in xs])
    assert np.allclose(got, ref, rtol=0, atol=1e-13)
    assert got[0] <= 1e-15 and got[-1] == 1.0 and 0.4 < got[2] < 0.6
    q = np.array([0.1, 0.5, 0.9])
    assert np.allclose(law.cdf(law.ppf(q)), q, atol=1e-13 + float(np.spacing(1.0)) / (2 * math.sqrt(lam)))
    assert law.var() == pytest.approx(lam, rel=1e-15)


def test_marchenko_pastur_tiny_ratio_against_monte_carlo():
    """MP(10⁻⁸): the standardised eigenvalues of XXᵀ/M, N = 40, M = 4·10⁹ are out of reach; instead draws of the law
    itself (inverting the cdf) must have mean 1 and variance λ, and a two-sided KS distance small for 4000 draws."""
    law = MarchenkoPastur(1e-8)
    x = law.rvs(4000, rng=3)
    u = (x - 1.0 - 1e-8) / (2e-4)
    assert abs(np.mean(x) - 1.0) < 5 * 1e-4 / math.sqrt(4000)
    ks = np.max(np.abs(np.sort(law.cdf(x)) - (np.arange(1, 4001) - 0.5) / 4000))
    assert ks < 0.03 and np.all(np.abs(u) <= 1.0)


# --- refusals that name their argument ----------------------------------------------------------------------------
def test_semicircle_narrower_than_float64_at_loc_is_refused_naming_var_and_loc():
    with pytest.raises(ValueError, match=r"\bvar\b.*\bloc\b.*must be at least"):
        Semicircle(1e300, loc=1e308)


@pytest.mark.parametrize("rtol", [-1.0, 0.0, 1.0, float("nan")])
def test_tabulate_with_a_bad_rtol_is_refused_naming_rtol_and_range(rtol):
    with pytest.raises(ValueError, match=r"\brtol must .*\(0\.0, 1\.0\)|\brtol must be a finite"):
        tabulate(Semicircle(), rtol=rtol)


def test_tabulate_with_a_bad_n0_is_refused_naming_n0():
    with pytest.raises(ValueError, match=r"\bn0 must be an integer"):
        tabulate(Semicircle(), n0=0)


@pytest.mark.parametrize("ret", ["a", None, object()])
def test_expect_of_a_function_returning_non_numbers_names_func(ret):
    with pytest.raises(TypeError, match=r"\bfunc must return numbers.*returned"):
        Semicircle().expect(lambda x: np.full(np.shape(x), ret, dtype=object) if ret is not None else ret)
    with pytest.raises(TypeError, match=r"\bfunc must return numbers"):
        Bernoulli(0.5).expect(lambda x: "a")


def test_central_moment_order_is_checked():
    with pytest.raises(ValueError, match=r"\bk must"):
        Semicircle().central_moment(-1)
    with pytest.raises(ValueError, match=r"\bk must be an integer in \[0, 10000\]"):
        Semicircle().central_moment(10_001)


# --- property: every law kind translated and dilated by 1e-12…1e12 -------------------------------------------------
def _mp_central(values, c):
    """The central moments μ₂, μ₃, μ₄ of atoms/weights given as 60-digit pairs, about their mean ``c``."""
    return [mp.fsum(p * (x - c) ** k for x, p in values) for k in (2, 3, 4)]


def _reference(kind, mu, w, p):
    """(law, [μ₂, μ₃, μ₄]) in 60 digits from the law's own float parameters."""
    if kind == "arcsine":
        r = (mp.mpf(mu.hi) - mp.mpf(mu.lo)) / 2
        return [r ** 2 / 2, 0, 3 * r ** 4 / 8]
    if kind == "semicircle":
        v = mp.mpf(mu.variance)
        return [v, 0, 2 * v * v]
    if kind == "points":
        pairs = [(mp.mpf(x), mp.mpf(q) / mp.fsum(mu.atoms()[1])) for x, q in zip(*mu.atoms())]
        return _mp_central(pairs, mp.fsum(x * q for x, q in pairs))
    if kind == "grid":
        x, rho = [mp.mpf(v) for v in mu.x], [mp.mpf(v) for v in mu.rho]

        def about(k, c):     # exact cell integrals of (t − c)^k times the linear density, t = x0 + h·s
            return mp.fsum((x1 - x0) * mp.fsum(mp.binomial(k, j) * (x0 - c) ** (k - j) * (x1 - x0) ** j
                                               * (r0 / ((j + 1) * (j + 2)) + r1 / (j + 2))
                                               for j in range(k + 1))
                           for x0, x1, r0, r1 in zip(x[:-1], x[1:], rho[:-1], rho[1:]))
        mass = about(0, 0)          # 1 up to the rounding of the normalised density: the law is μ/M
        c = about(1, 0) / mass
        return [about(k, c) / mass for k in (2, 3, 4)]
    if kind == "mixture":
        locs = [mp.mpf(m.loc) for m in mu.components]
        var = [mp.mpf(m.variance) for m in mu.components]
        wts = [mp.mpf(v) for v in mu.weights]
        wts = [q / mp.fsum(wts) for q in wts]
        c = mp.fsum(q * l for q, l in zip(wts, locs))
        d = [l - c for l in locs]
        return [mp.fsum(q * (v + e ** 2) for q, v, e in zip(wts, var, d)),
                mp.fsum(q * (e ** 3 + 3 * v * e) for q, v, e in zip(wts, var, d)),
                mp.fsum(q * (2 * v * v + 6 * v * e * e + e ** 4) for q, v, e in zip(wts, var, d))]
    if kind in ("mp", "fuss_catalan"):
        lam, s = mp.mpf(p), int(p)
        if kind == "mp":
            raw = [1] + [mp.fsum(mp.binomial(k, j) * mp.binomial(k, j - 1) / k * lam ** (j - 1)
                                 for j in range(1, k + 1)) for k in range(1, 5)]
        else:
            raw = [mp.binomial((s + 1) * k, k) / (s * k + 1) for k in range(5)]
        m = raw[1]
        return [mp.mpf(w) ** k * mp.fsum(mp.binomial(k, j) * raw[j] * (-m) ** (k - j) for j in range(k + 1))
                for k in (2, 3, 4)]
    if kind == "bernoulli":
        q = mp.mpf(p)
        return [mp.mpf(w) ** k * ((1 - q) * (-q) ** k + q * (1 - q) ** k) for k in (2, 3, 4)]
    if kind == "pushforward_h":
        return [mp.mpf(w) ** 2, 0, 3 * mp.mpf(w) ** 4]
    return [2 * mp.mpf(w) ** 2, 8 * mp.mpf(w) ** 3, 60 * mp.mpf(w) ** 4]         # pushforward_h2: w·χ²₁


def _law(kind, c, w, p):
    """The law of kind ``kind`` centred near c with width ~w, built from its own parameters (not by Affine) where it
    has a location, otherwise through Affine (MP, Fuss–Catalan, Bernoulli: also the Affine route)."""
    if kind == "arcsine":
        return Arcsine(c - w, c + w)
    if kind == "semicircle":
        return Semicircle(w * w, loc=c)
    if kind == "points":
        return PointMasses([c - w, c + 0.5 * w, c + 2 * w], [0.25, 0.5, 0.25])
    if kind == "grid":
        t = np.linspace(0.0, 1.0, 9)
        return GridDensity(c + w * t, 1.0 + t, normalize=True)
    if kind == "mixture":
        return Mixture([Semicircle(w * w, loc=c - w), Semicircle(4 * w * w, loc=c + 3 * w)], [p, 1 - p])
    if kind == "mp":
        return Affine(MarchenkoPastur(p, scale=w), 1.0, c)
    if kind == "fuss_catalan":
        return Affine(FussCatalan(int(p)), w, c)
    if kind == "bernoulli":
        return Affine(Bernoulli(p), w, c)
    if kind == "pushforward_h":
        return gaussian_pushforward(lambda h: c + w * h, 1.0)
    return gaussian_pushforward(lambda h: c + w * h * h, 1.0)


KINDS = ["arcsine", "semicircle", "points", "grid", "mixture", "mp", "fuss_catalan", "bernoulli", "pushforward_h",
         "pushforward_h2"]


@st.composite
def translated_laws(draw):
    kind = draw(st.sampled_from(KINDS))
    centre = draw(st.sampled_from([-1.0, 1.0])) * 10.0 ** draw(st.integers(-12, 12))
    # widths down to 1e-12 of the centre; a push-forward's panels (0.0075 s.d.) must stay ≥ 1 ulp of the centre
    lowest = -9 if kind.startswith("pushforward") else -12
    w = abs(centre) * 10.0 ** draw(st.integers(lowest, 12)) * draw(st.floats(0.5, 2.0))
    p = {"mp": draw(st.sampled_from([1e-12, 1e-3, 0.3, 1.0, 2.5])), "fuss_catalan": draw(st.integers(1, 4)),
         "mixture": draw(st.floats(0.1, 0.9)), "bernoulli": draw(st.floats(0.05, 0.95))}.get(kind, 0.0)
    return kind, centre, w, p


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(translated_laws(), st.sampled_from([-1.0, 1.0]), st.integers(-12, 12), st.integers(-12, 12))
def test_central_moments_of_translated_and_dilated_laws(case, sign, log_a, log_b):
    """var, std and central moments 2–4 of every kind at centres 1e-12…1e12 and widths 1e-12…1e12 relative, against
    60-digit references from the law's own float parameters, to 1e-9 relative (μ₃: 1e-9·μ₂^{3/2} absolute) plus, for
    the push-forwards, the rounding of c + w·f(h) itself (ulp(c)/w relative); then dilated by ±1e-12…1e12 and
    shifted by 1e-12…1e12 through Affine (a·X + b). E[x²] − E[x]² lost every digit here."""
    kind, c, w, p = case
    law = _law(kind, c, w, p)
    ref = [float(v) for v in _reference(kind, law, w, p)]
    slack = 1e-9 + (8 * float(np.spacing(abs(c))) / w if kind.startswith("pushforward") else 0.0)
    assert law.var() == pytest.approx(ref[0], rel=slack)
    assert law.std() == pytest.approx(math.sqrt(ref[0]), rel=slack)
    got = [law.central_moment(k) for k in (2, 3, 4)]
    assert got[0] == law.var()
    assert got[1] == pytest.approx(ref[1], rel=slack, abs=slack * ref[0] ** 1.5)
    assert got[2] == pytest.approx(ref[2], rel=4 * slack)
    a, b = sign * 10.0 ** log_a, 10.0 ** log_b      # and through Affine: a·X + b has μ_k(aX + b) = a^k μ_k(X)
    moved = law.dilate(a).shift(b)
    assert moved.var() == pytest.approx(a * a * ref[0], rel=slack)
    assert moved.central_moment(3) == pytest.approx(a ** 3 * ref[1], rel=slack, abs=slack * (a * a * ref[0]) ** 1.5)
    assert moved.central_moment(4) == pytest.approx(a ** 4 * ref[2], rel=4 * slack)
    if kind in ("arcsine", "semicircle"):             # cdf/ppf round trip, to the float spacing at the centre
        q = np.array([0.1, 0.5, 0.9])
        x = law.ppf(q)
        assert np.allclose(law.cdf(x), q, rtol=0, atol=1e-9 + 4 * float(np.spacing(abs(c))) / w)


@pytest.mark.parametrize("name", [entry.name for entry in LAWS])
def test_central_moments_of_every_registered_law_agree_with_the_raw_moments(name):
    """Each kind's central-moment route (closed form, centred sum, centred quadrature) against the raw moments
    shifted in 60 digits, for the registry's example of every law (all near the origin, where the shift is exact to
    the raw moments' own accuracy): 1e-8 relative to Σ|terms|."""
    law = example(name)
    raw = [mp.mpf(float(law.moment(j))) for j in range(5)]
    for k in (2, 3, 4):
        terms = [mp.binomial(k, j) * raw[j] * (-raw[1]) ** (k - j) for j in range(k + 1)]
        assert law.central_moment(k) == pytest.approx(float(mp.fsum(terms)),
                                                      abs=1e-8 * float(mp.fsum(abs(t) for t in terms)))


@pytest.mark.parametrize("name, f, func, exact", [
    ("exp_cubed", np.exp, lambda x: x ** 3, math.exp(4.5)),
    ("exp_fifth", np.exp, lambda x: x ** 5, math.exp(12.5)),
    ("x_pow_20", lambda h: h ** 20, None, 654729075.0),
])
def test_gaussian_pushforward_expect_of_fast_growing_functions(name, f, func, exact):
    """expect integrates over the same range as the moments: the tails beyond ±9 s.d. are followed there too (the
    default rtol 1e-10)."""
    assert gaussian_pushforward(f, 1.0).expect(func) == pytest.approx(exact, rel=1e-10)


def test_gaussian_pushforward_expect_overflowing_in_the_tail_is_refused_with_the_reason():
    """E[e^{10h}] = e^{50} through expect: (e^h)^10 is inf at h = 72 although φ there is 0; refused naming f(h)
    (moment(10) computes it in logarithms)."""
    law = gaussian_pushforward(np.exp, 1.0)
    with pytest.raises(OverflowError, match=r"expect of f\(h\).*leaves float64"):
        law.expect(lambda x: x ** 10)
    assert law.moment(10) == pytest.approx(math.exp(50.0), rel=1e-12)


def test_marchenko_pastur_tiny_ratio_entropy_and_stats():
    """Below the tiny-ratio threshold the entropy is log(2√λ) plus the entropy in u: against the generic table route
    at λ = 1e-7 (1e-9), and the semicircle of variance λ, its limit, at λ = 1e-33 (1e-12); stats are closed forms."""
    law = MarchenkoPastur(1e-7)
    assert law.entropy() == pytest.approx(_table_entropy(1e-7), abs=1e-9)
    assert MarchenkoPastur(1e-33).entropy() == pytest.approx(Semicircle(1e-33).entropy(), abs=1e-12)
    assert MarchenkoPastur(1e-33).stats("mvsk") == pytest.approx((1.0, 1e-33, math.sqrt(1e-33), -1.0), rel=1e-12)


def _table_entropy(lam):
    """The entropy of MP(λ) by the generic quadrature of −ρ log ρ in x (the route above the threshold)."""
    threshold = MarchenkoPastur.TINY_RATIO
    try:
        MarchenkoPastur.TINY_RATIO = 0.0
        return MarchenkoPastur(lam).entropy()
    finally:
        MarchenkoPastur.TINY_RATIO = threshold


def test_gaussian_pushforward_of_a_function_vanishing_in_float64_tails_has_mass_one():
    """φ′(h)² = (1 − tanh²h)² is exactly 0.0 beyond |h| ≈ 19 in float64: the tail of the order-0 integrand (the
    Gaussian weight alone) must still vanish there. It was taken as 1 where f = c, so the tanh Jacobian law on the
    critical line raised ConvergenceError ("mass beyond 576 standard deviations"). Reference: scipy quad."""
    from scipy import integrate, stats
    q = 1.3179389989721502
    f = lambda h: (1 - np.tanh(h) ** 2) ** 2                                    # noqa: E731
    law = gaussian_pushforward(f, q)
    pdf = stats.norm(scale=math.sqrt(q)).pdf
    m1 = integrate.quad(lambda h: f(h) * pdf(h), -40, 40, epsabs=1e-15, limit=200)[0]
    m2 = integrate.quad(lambda h: f(h) ** 2 * pdf(h), -40, 40, epsabs=1e-15, limit=200)[0]
    assert law.moment(0) == pytest.approx(1.0, abs=1e-14)
    assert law.var() == pytest.approx(m2 - m1 ** 2, rel=1e-12)


def test_expect_of_a_function_returning_nan_names_func():
    """Before: a ConvergenceError from the quadrature ("status -3, a non-finite value") that did not name func."""
    with pytest.raises(ValueError, match=r"^func returned NaN at x = "):
        Arcsine(1.0, 3.0).expect(lambda x: np.full_like(x, np.nan))
    with pytest.raises(ValueError, match=r"^func returned NaN at x = \[0.5\]"):
        PointMasses([0.5, 2.0], [0.5, 0.5]).expect(lambda x: np.where(x < 1, np.nan, x))


@pytest.mark.parametrize("call, match", [
    (lambda: __import__("rmtnet.spectra.stability", fromlist=["x"]).learning_rate_border(5e-324),
     "lambda_max is too small"),                                               # was ZeroDivisionError
    (lambda: __import__("rmtnet.spectra.transforms", fromlist=["x"]).m_inverse(MarchenkoPastur(0.5), 5e-324),
     r"w = .* leaves float64"),                                                # was inf+nanj
    (lambda: __import__("rmtnet.spectra.diagnostics", fromlist=["x"]).spike_strength(1e308, 1.0),
     r"eig = .* leaves float64"),                                              # was inf
    (lambda: __import__("rmtnet.spectra.diagnostics", fromlist=["x"]).tracy_widom_margin(10, 40, 1e308),
     r"scale = .* beyond float64"),                                            # was inf
])
def test_results_beyond_float64_are_refused_naming_the_argument(call, match):
    """Found by the fuzz's stress profile: four results that left float64 came back as inf/NaN or a bare
    ZeroDivisionError."""
    with pytest.raises(OverflowError, match=match):
        call()
