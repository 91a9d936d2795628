"""The Measure contract: one battery run over every kind of law the package builds — the library's registry of public
law classes (:mod:`rmtnet.spectra.registry`, which must name every one) and the laws other modules build — in the
manner of scipy's ``test_continuous_basic`` (ppf inverts cdf, sf + cdf = 1, total mass, moments two ways, the Cauchy transform's
expansion at infinity and its agreement with the density, sampling against the cdf, pickling), then the scipy.stats
vocabulary (ppf, sf, isf, std, median, interval, expect) on a purely atomic law against scipy.stats.rv_discrete and
on the Marchenko–Pastur law, with and without its atom at 0, against closed forms; then the final public methods
(no law overrides one), logpdf/logcdf/logsf, stats, entropy and the rng convention of rvs.

Tolerances, and why:
* cdf∘ppf to 1e-9: the generic cdf is a cubic Hermite table accurate to ~1e-10 (measures._quad_panels), and ppf
  solves on that table.
* expect(x^k) against the moment series to 1e-8·r^k, r = max |x| on the support (|m_k| ≤ r^k): expect's default
  rtol is 1e-10 per piece, and the engines' densities are solved to a relative Newton tolerance of 1e-13.
* G(z) against expect(1/(z − x)) to 1e-8 relative at z = centre + i·half-width, for the same reasons.
* sampling: the Kolmogorov–Smirnov statistic of 2000 draws (rng 11) below 1.63/√n, the 1 % critical value
  (conservative for laws with atoms, where the statistic is computed against both F(x) and F(x−)).
"""
import pickle

import numpy as np
import pytest
from scipy import integrate, optimize, stats

import rmtnet.spectra
from rmtnet.spectra import Arcsine, Bernoulli, GridDensity, MarchenkoPastur, Mixture, PointMasses, Semicircle
from rmtnet._validation import ConvergenceError
from rmtnet.spectra.measures import Measure, Tabulated
from rmtnet.spectra.registry import LAWS, LawExample, unregistered

CDF_TOL = 1e-9
MOMENT_TOL = 1e-8
CAUCHY_TOL = 1e-8
N_RVS, RVS_SEED = 2000, 11


def _slq():
    from rmtnet.spectra.sampling.lanczos import slq
    rng = np.random.default_rng(5)
    a = rng.normal(size=(60, 60))
    return slq((a + a.T) / np.sqrt(240.0), n_steps=12, n_probes=4, seed=3)


def _ntk():
    from rmtnet.spectra.network import mlp
    from rmtnet.spectra import ntk_law
    n = 400
    return ntk_law(mlp(2, widths=[2 * n, n, 1], activation="relu", last_activation=False, sigma_w=1.0),  # one hidden
                   n)


def _classical():
    from rmtnet.spectra.mixer import kronecker_gram_law
    return kronecker_gram_law(MarchenkoPastur(0.5))


# the library's registry of public law classes (rmtnet.spectra.registry), then kinds built by other modules
KINDS = {entry.name: entry.make for entry in LAWS}
KINDS.update({
    "spectral_quadrature": _slq,
    "linear_cdf": lambda: _slq().interpolated(),
    "ntk_law": _ntk,
    "ntk_law_source": lambda: _law("ntk_law").source,
    "classical_product": _classical,
})
SLOW = {"classical_product"}


_CACHE = {}


def _law(name):
    if name not in _CACHE:
        _CACHE[name] = KINDS[name]()
    return _CACHE[name]


@pytest.fixture(params=[pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in KINDS])
def kind(request):
    return request.param


def _hull(law):
    """The whole law's hull, atoms included, whatever the kind's support() still means."""
    return Measure.support(law)


def _levels(law):
    """Probabilities that land exactly on the ends of the atoms' jumps, where ppf's tie rules matter."""
    locs, masses = law.atoms()
    if not locs.size:
        return np.empty(0)
    top = law.cdf(locs)
    q = np.concatenate([top, top - masses])
    return q[(q > 0) & (q < 1)]


# --- the battery ------------------------------------------------------------------------------------------------
def test_support_holds_the_whole_law(kind):
    law = _law(kind)
    lo, hi = law.support()
    locs, _ = law.atoms()
    cont = law.continuous_support()
    ends = list(locs) + (list(cont) if cont is not None else [])
    assert (lo, hi) == (min(ends), max(ends))
    assert law.hull() == (lo, hi)


def test_support_ends_and_total_mass(kind):
    law = _law(kind)
    lo, hi = _hull(law)
    width = max(hi - lo, abs(hi), 1.0)
    assert float(law.cdf(hi)) == pytest.approx(1.0, abs=CDF_TOL)
    assert float(law.cdf(lo - 1e-6 * width)) == pytest.approx(0.0, abs=CDF_TOL)
    assert float(law.ppf(0.0)) == pytest.approx(lo, abs=1e-9 * width)
    assert float(law.ppf(1.0)) == pytest.approx(hi, abs=1e-9 * width)
    assert law.expect(lambda x: np.ones_like(x)) == pytest.approx(1.0, abs=CDF_TOL)


def test_ppf_is_the_generalised_inverse_of_cdf(kind):
    """inf{x : F(x) ≥ q}: F(x) ≥ q and F(x−) ≤ q, with F(x) = q where x is no atom."""
    law = _law(kind)
    q = np.sort(np.concatenate([np.linspace(0.005, 0.995, 23), _levels(law)]))
    x = law.ppf(q)
    F = law.cdf(x)
    atom = law._atom_mass_at(x)
    assert np.all(F >= q - CDF_TOL) and np.all(F - atom <= q + CDF_TOL)
    assert np.allclose(F[atom == 0], q[atom == 0], rtol=0, atol=CDF_TOL)
    assert np.array_equal(law.quantile(q), x)


def test_scipy_identities(kind):
    """sf = 1 − cdf (atoms included), isf(q) = ppf(1 − q), median = ppf(½), interval(c) = ppf((1 ∓ c)/2), std² = var."""
    law = _law(kind)
    lo, hi = _hull(law)
    scale = max(abs(lo), abs(hi), 1.0)
    x = np.concatenate([np.linspace(lo - 0.1 * (hi - lo + 1), hi + 0.1 * (hi - lo + 1), 31), law.atoms()[0]])
    assert np.allclose(law.sf(x) + law.cdf(x), 1.0, rtol=0, atol=1e-12)
    q = np.concatenate([np.linspace(0.01, 0.99, 9), _levels(law)])
    assert np.allclose(law.isf(q), law.ppf(1.0 - q), rtol=0, atol=1e-9 * scale)
    assert law.median() == float(law.ppf(0.5))
    for c in (0.0, 0.5, 0.9, 1.0):
        a, b = law.interval(c)
        assert (a, b) == (law.ppf(0.5 * (1 - c)), law.ppf(0.5 * (1 + c)))
    assert law.std() ** 2 == pytest.approx(law.var(), rel=1e-12, abs=1e-300)


def test_moments_by_series_and_by_quadrature(kind):
    """moment(k) (a kind's series, or the generic quadrature) against expect(x^k) (SciPy's tanh-sinh on the density
    plus the atoms). Tabulated laws carry the exact moments of the law they tabulate, not of their table: there the
    table's own moments (the hook GridDensity._moment, exact for a piecewise-linear density) are the reference."""
    law = _law(kind)
    lo, hi = _hull(law)
    r = max(abs(lo), abs(hi), 1e-300)
    series = (lambda k: GridDensity._moment(law, k)) if isinstance(law, Tabulated) else law.moment
    for k in range(1, 5):
        assert abs(law.expect(lambda x, k=k: x ** k) - series(k)) <= MOMENT_TOL * r ** k, k
    assert law.expect() == pytest.approx(series(1), abs=MOMENT_TOL * r)


def test_moment_zero_is_one(kind):
    assert _law(kind).moment(0) == pytest.approx(1.0, abs=1e-12)


def test_cauchy_transform_at_infinity_and_against_the_density(kind):
    """z G(z) = Σ m_k z^{-k} with |m_k| ≤ r^k: |zG − 1 − m₁/z| ≤ (r/|z|)²/(1 − r/|z|) for |z| > r. Then G at a point
    off the axis against ∫ dμ(x)/(z − x) by :meth:`expect`."""
    law = _law(kind)
    lo, hi = _hull(law)
    r = max(abs(lo), abs(hi), 1e-3)
    m1 = law.moment(1)
    for theta in (0.0, 0.7, np.pi / 2, 2.5):
        z = 100 * r * np.exp(1j * theta)
        g = complex(law.cauchy(z))
        assert abs(z * g - 1 - m1 / z) <= 1e-4 / (1 - 1e-2) * (1 + 1e-9)
    z = 0.5 * (lo + hi) + 0.5j * max(hi - lo, 1e-3 * r)
    g = complex(law.cauchy(z))
    assert abs(law.expect(lambda x: 1.0 / (z - x)) - g) <= CAUCHY_TOL * abs(g)


def test_rvs_follow_the_cdf(kind):
    law = _law(kind)
    s = np.sort(law.rvs(N_RVS, rng=RVS_SEED))
    assert np.array_equal(np.sort(law.rvs(N_RVS, rng=RVS_SEED)), s)
    n = s.size
    F = law.cdf(s)
    F_left = F - law._atom_mass_at(s)
    ks = max(np.max(np.arange(1, n + 1) / n - F), np.max(F_left - np.arange(n) / n))
    assert ks < 1.63 / np.sqrt(n)


def test_pickle_round_trip(kind):
    law = _law(kind)
    lo, hi = _hull(law)
    x = np.linspace(lo, hi, 13)
    z = np.array([0.5 * (lo + hi) + 1j * (hi - lo + 1), hi + 1.0 + 0.1j])
    back = pickle.loads(pickle.dumps(law))
    assert type(back) is type(law)
    assert np.array_equal(back.atoms()[0], law.atoms()[0]) and np.array_equal(back.atoms()[1], law.atoms()[1])
    assert np.allclose(back.cdf(x), law.cdf(x), rtol=0, atol=1e-14)
    assert np.allclose(back.cauchy(z), law.cauchy(z), rtol=1e-13, atol=0)
    assert back.moment(3) == pytest.approx(law.moment(3), rel=1e-13)


# --- the scipy.stats vocabulary against scipy and closed forms ----------------------------------------------------
def test_point_masses_against_scipy_rv_discrete():
    """The same atoms as scipy.stats.rv_discrete: dyadic masses, so that the cumulative levels are exact and q = 0.375
    or 0.625 lands on a jump's end in both."""
    xk = np.array([-1.0, 0.5, 2.0, 3.5])
    pk = np.array([0.125, 0.25, 0.375, 0.25])
    law, ref = PointMasses(xk, pk), stats.rv_discrete(values=(xk, pk))
    levels = np.cumsum(pk)[:-1]
    q = np.concatenate([np.linspace(0.01, 0.99, 25), levels, levels + 1e-12, levels - 1e-12])
    assert np.array_equal(law.ppf(q), ref.ppf(q))
    assert np.array_equal(law.isf(q), ref.isf(q))
    x = np.concatenate([xk, xk - 0.25, xk + 0.25])
    assert np.array_equal(law.cdf(x), ref.cdf(x))
    assert np.allclose(law.sf(x), ref.sf(x), rtol=0, atol=1e-15)
    assert law.median() == ref.median()
    for c in (0.0, 0.25, 0.5, 0.8, 0.99):
        assert law.interval(c) == ref.interval(c)
    assert law.mean() == pytest.approx(ref.mean(), rel=1e-15)
    assert law.var() == pytest.approx(ref.var(), rel=1e-14)
    assert law.std() == pytest.approx(ref.std(), rel=1e-14)
    assert law.expect(np.cos) == pytest.approx(ref.expect(np.cos), rel=1e-14)
    for lb, ub in ((0.5, 2.0), (0.0, 3.5), (-1.0, 0.5)):       # ends at atoms: scipy's sums are inclusive
        for cond in (False, True):
            assert law.expect(np.exp, lb=lb, ub=ub, conditional=cond) == pytest.approx(
                ref.expect(np.exp, lb=lb, ub=ub, conditional=cond), rel=1e-14)
    # the ends of [0, 1]: scipy's discrete laws live on integers and give (least atom) − 1 at q = 0; here, as for
    # scipy's continuous laws, the least point of the support
    assert law.ppf(0.0) == law.isf(1.0) == xk[0] and law.ppf(1.0) == law.isf(0.0) == xk[-1]
    assert law.interval(1.0) == (xk[0], xk[-1]) == law.support()


def test_reflected_atoms_against_scipy_rv_discrete():
    """Affine(·, a < 0): ppf of −X at q = P(−X ≤ −x) for an atom x of X — the end of a jump — is the generalised
    inverse of the reflected law, not the reflection of X's (a right- and a left-continuous inverse differ there)."""
    xk = np.array([1.0, 2.0, 4.0])
    pk = np.array([0.25, 0.5, 0.25])
    law = PointMasses(xk, pk).dilate(-1.0)
    ref = stats.rv_discrete(values=(-xk[::-1], pk[::-1]))
    q = np.concatenate([np.linspace(0.02, 0.98, 13), [0.25, 0.75]])
    assert np.array_equal(law.ppf(q), ref.ppf(q))
    assert np.array_equal(law.isf(q), ref.isf(q))
    # an atom beside a band: X = ½δ₁ + ½ semicircle on [2, 3]; −X has F(−2) = ½ exactly, so ppf(½) = −2
    mixed = Mixture([PointMasses([1.0], [1.0]), Semicircle(var=1 / 16, loc=2.5)], [0.5, 0.5]).dilate(-1.0)
    assert float(mixed.ppf(0.5)) == -2.0
    assert float(mixed.ppf(0.25)) == pytest.approx(-2.5, abs=CDF_TOL)        # the semicircle's median
    assert float(mixed.ppf(0.75)) == -1.0


def _brentq_quantile(F, q, a, b):
    return optimize.brentq(lambda x: F(x) - q, a, b, xtol=1e-14, rtol=1e-15)


def test_marchenko_pastur_against_closed_forms_and_scipy_quadrature():
    """MP(λ = ½, σ² = 2): mean σ², variance λσ⁴, E[1/x] = 1/(σ²(1 − λ)), E[log x] = log σ² − 1 − (1 − λ)/λ·log(1 − λ)
    (λ < 1); the cdf, sf and quantiles against scipy.integrate.quad of the closed-form density and scipy's brentq."""
    lam, s2 = 0.5, 2.0
    law = MarchenkoPastur(lam, scale=s2)
    a, b = law.continuous_support()
    assert law.support() == (a, b) and law.scale == s2
    assert law.mean() == pytest.approx(s2, rel=1e-14)
    assert law.var() == pytest.approx(lam * s2 ** 2, rel=1e-14)
    assert law.std() == pytest.approx(np.sqrt(lam) * s2, rel=1e-14)
    assert law.expect(lambda x: 1.0 / x) == pytest.approx(1.0 / (s2 * (1.0 - lam)), rel=1e-10)
    assert law.expect(np.log) == pytest.approx(np.log(s2) - 1.0 - (1.0 - lam) / lam * np.log(1.0 - lam), rel=1e-10)

    def F(x):
        return integrate.quad(law.pdf, a, x, epsabs=1e-14, epsrel=1e-13, limit=200)[0]

    x = np.linspace(a, b, 9)[1:-1]
    assert np.allclose(law.cdf(x), [F(t) for t in x], rtol=0, atol=1e-10)
    assert np.allclose(law.sf(x), [integrate.quad(law.pdf, t, b, epsabs=1e-14, limit=200)[0] for t in x],
                       rtol=0, atol=1e-10)
    q = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
    ref = np.array([_brentq_quantile(F, p, a, b) for p in q])
    assert np.allclose(law.ppf(q), ref, rtol=0, atol=1e-9 * b)
    assert np.allclose(law.isf(q), ref[::-1], rtol=0, atol=1e-9 * b)
    assert law.median() == pytest.approx(ref[2], abs=1e-9 * b)
    lo, hi = law.interval(0.8)
    assert lo == pytest.approx(ref[1], abs=1e-9 * b) and hi == pytest.approx(ref[3], abs=1e-9 * b)
    # conditional expectation on a sub-interval, against quad
    lb, ub = 1.0, 3.0
    num = integrate.quad(lambda t: np.sin(t) * law.pdf(t), lb, ub, epsabs=1e-14, epsrel=1e-13)[0]
    den = integrate.quad(law.pdf, lb, ub, epsabs=1e-14, epsrel=1e-13)[0]
    assert law.expect(np.sin, lb=lb, ub=ub) == pytest.approx(num, rel=1e-10)
    assert law.expect(np.sin, lb=lb, ub=ub, conditional=True) == pytest.approx(num / den, rel=1e-9)


def test_marchenko_pastur_with_its_atom_against_closed_forms():
    """MP(λ = 4) = ¾δ₀ + ¼ν with ν = MP(1/λ, scale λ), the law of the nonzero eigenvalues (those of XᵀX): ppf, sf, isf,
    median, interval and expect follow from the atom and ν; mean σ² = 1 and variance λσ⁴ = 4 as for λ < 1."""
    law = MarchenkoPastur(4.0)
    nu = MarchenkoPastur(0.25, scale=4.0)
    p0 = 0.75
    assert law.support() == (0.0, 9.0) and law.continuous_support() == pytest.approx((1.0, 9.0))
    assert law.mean() == pytest.approx(1.0, rel=1e-14) and law.std() == pytest.approx(2.0, rel=1e-14)
    # ppf: the atom up to q = ¾ (its jump's end included), then ν's quantile at the rescaled level
    q = np.array([0.01, 0.5, 0.75, 0.8, 0.95, 0.999])
    expected = np.where(q <= p0, 0.0, nu.ppf(np.clip((q - p0) / (1 - p0), 0, 1)))
    assert np.allclose(law.ppf(q), expected, rtol=0, atol=1e-9)
    assert law.median() == 0.0
    lo, hi = law.interval(0.9)
    assert lo == 0.0 and hi == pytest.approx(float(nu.ppf((0.95 - p0) / (1 - p0))), abs=1e-9)
    # sf excludes the atom at 0 itself, and isf of any q ≥ ¼ is the atom
    assert float(law.sf(0.0)) == pytest.approx(1 - p0, abs=1e-15) and float(law.sf(-1e-12)) == 1.0
    x = np.linspace(1.0, 9.0, 7)
    assert np.allclose(law.sf(x), (1 - p0) * nu.sf(x), rtol=0, atol=1e-12)
    assert np.all(law.isf([0.25, 0.5, 1.0]) == 0.0)
    assert np.allclose(law.isf([0.2, 0.05]), nu.isf(np.array([0.2, 0.05]) / (1 - p0)), rtol=0, atol=1e-9)
    # expect: the atom's term plus ν's, ν's by scipy's quad of its density
    ref = p0 * np.cos(0.0) + (1 - p0) * integrate.quad(lambda t: np.cos(t) * nu.pdf(t), 1.0, 9.0, epsabs=1e-14,
                                                       limit=200)[0]
    assert law.expect(np.cos) == pytest.approx(ref, rel=1e-10)
    assert law.expect(np.cos, lb=0.0, ub=0.0) == pytest.approx(p0, rel=1e-15)
    assert law.expect(np.cos, lb=0.5, conditional=True) == pytest.approx(
        integrate.quad(lambda t: np.cos(t) * nu.pdf(t), 1.0, 9.0, epsabs=1e-14, limit=200)[0], rel=1e-9)


def test_bad_arguments_name_themselves():
    law = MarchenkoPastur(0.5)
    for exc, match, call in (
            (ValueError, "q must lie in", lambda: law.ppf([0.5, 1.5])),
            (ValueError, "q must lie in", lambda: law.isf(-0.1)),
            (ValueError, "confidence must lie in", lambda: law.interval(1.2)),
            (ValueError, "q must be finite", lambda: law.ppf(np.nan)),
            (TypeError, "func must be a callable", lambda: law.expect(3.0)),
            (ValueError, "lb must not exceed ub", lambda: law.expect(lb=2.0, ub=1.0)),
            (ValueError, "lb must be a finite real", lambda: law.expect(lb="a")),
            (ValueError, "rtol must lie in", lambda: law.expect(rtol=0.0)),
            (ValueError, "atol must lie in", lambda: law.expect(atol=-1.0)),
            (ValueError, "conditional=True needs mass", lambda: law.expect(lb=10.0, ub=11.0, conditional=True)),
            (ValueError, "func must act elementwise", lambda: law.expect(lambda x: np.ones(3)))):
        with pytest.raises(exc, match=match):
            call()


# --- the law registry, final public methods, and the methods added with the hooks ---------------------------------
def _final_overrides(cls):
    """The final public methods of Measure that ``cls`` (or a base between it and Measure) defines anew."""
    return sorted({name for klass in cls.__mro__[:cls.__mro__.index(Measure)] for name in vars(klass)}
                  & set(Measure.FINAL_METHODS))


def _subclasses(cls):
    out = []
    for sub in cls.__subclasses__():
        out += [sub] + _subclasses(sub)
    return out


class _Synthetic(Measure):
    """A law class nobody registered, that overrides a final method: what both checks below must catch."""

    def continuous_support(self):
        return 0.0, 1.0

    def pdf(self, x, *, backend=None):
        return np.ones_like(x)


def test_registry_names_every_public_law_class():
    assert unregistered(rmtnet.spectra) == []
    for module in (rmtnet.spectra.measures, rmtnet.spectra.laws, rmtnet.spectra.free):
        assert unregistered(module) == [], module.__name__
    assert len({e.name for e in LAWS}) == len(LAWS)


def test_registry_fails_for_a_law_class_without_an_entry():
    public = {name: getattr(rmtnet.spectra, name) for name in rmtnet.spectra.__all__}
    assert unregistered({**public, "Synthetic": _Synthetic}) == ["Synthetic"]
    covered = LAWS + (LawExample("synthetic", _Synthetic, _Synthetic),)
    assert unregistered({**public, "Synthetic": _Synthetic}, covered) == []


def test_registry_examples_build_their_class():
    for entry in LAWS:
        assert type(entry.make()) is entry.law_class, entry.name


def test_no_law_in_rmtnet_overrides_a_final_method():
    """Subclasses implement hooks (_pdf, _cdf, _ppf, _moment, _rvs, …); the public methods are the base's."""
    import rmtnet.spectra.sampling.lanczos
    import rmtnet.spectra.mixer
    import rmtnet.spectra.ntk  # noqa: F401  (every module that defines a law)
    laws = [c for c in _subclasses(Measure) if c.__module__.startswith("rmtnet.")]
    assert len(laws) >= 20
    assert {c.__name__: _final_overrides(c) for c in laws if _final_overrides(c)} == {}
    assert _final_overrides(_Synthetic) == ["pdf"]               # the check sees an override


@pytest.mark.parametrize("name", ["marchenko_pastur_atom", "semicircle", "arcsine", "bernoulli", "mixture",
                                  "affine_reflected_atom", "free_mult_atom"])
def test_log_functions_are_the_logs(name):
    law = _law(name)
    lo, hi = _hull(law)
    x = np.concatenate([np.linspace(lo - 1.0, hi + 1.0, 41), law.atoms()[0]])
    with np.errstate(divide="ignore"):
        assert np.array_equal(law.logpdf(x), np.log(law.pdf(x)))
        assert np.array_equal(law.logcdf(x), np.log(law.cdf(x)))
        assert np.allclose(law.logsf(x), np.log(law.sf(x)), rtol=1e-12, atol=0)
    assert law.logcdf(lo - 1.0) == -np.inf and law.logsf(hi + 1.0) == -np.inf


@pytest.mark.parametrize("law, ref", [
    (Arcsine(1.0, 3.0), stats.arcsine(loc=1.0, scale=2.0)),
    (Bernoulli(0.3), stats.bernoulli(0.3)),
    (Semicircle(var=2.0, loc=1.0), stats.semicircular(loc=1.0, scale=2.0 * np.sqrt(2.0))),
    (PointMasses([-1.0, 0.5, 2.0], [0.25, 0.375, 0.375]),
     stats.rv_discrete(values=([-1.0, 0.5, 2.0], [0.25, 0.375, 0.375]))),
])
def test_stats_and_entropy_against_scipy(law, ref):
    assert np.allclose(law.stats("mvsk"), [float(v) for v in ref.stats(moments="mvsk")], rtol=1e-12, atol=1e-13)
    assert law.stats("v") == pytest.approx(float(ref.var()), rel=1e-13)
    assert law.entropy() == pytest.approx(float(ref.entropy()), rel=1e-12)


def test_stats_of_marchenko_pastur_closed_forms():
    """MP(λ, σ²): mean σ², variance λσ⁴, skewness √λ, excess kurtosis λ − 1 (central moments λ²σ⁶ and
    (2λ² + λ³)σ⁸; Bai & Silverstein 2010, ch. 3)."""
    lam, s2 = 0.5, 2.0
    m, v, s, k = MarchenkoPastur(lam, scale=s2).stats("mvsk")
    assert (m, v) == pytest.approx((s2, lam * s2 ** 2), rel=1e-14)
    assert s == pytest.approx(np.sqrt(lam), rel=1e-12) and k == pytest.approx(lam - 1.0, rel=1e-12)
    with pytest.raises(ValueError, match="moments must be"):
        MarchenkoPastur(lam).stats("mx")


def test_entropy_closed_forms_against_the_quadrature():
    """The closed forms (semicircle log(πR) − ½, arcsine log(π(hi − lo)/4)) against the generic quadrature of
    −ρ log ρ; Marchenko–Pastur's quadrature against scipy's quad. The arcsine's density diverges like |x − end|^{-½},
    and the generic route reaches 3.6e-5 of its entropy there (it integrates func·ρ to 10⁶ ulp of the ends and
    weighs the rest by func at the outermost node, which for func = −log ρ is not flat)."""
    for law in (Semicircle(var=2.0, loc=1.0), Semicircle(0.3)):
        assert Measure._entropy(law) == pytest.approx(law.entropy(), rel=1e-10)
    arcsine = Arcsine(1.0, 3.0)
    assert arcsine.entropy() == np.log(np.pi / 2)
    assert Measure._entropy(arcsine) == pytest.approx(arcsine.entropy(), rel=1e-4)
    mp = MarchenkoPastur(0.5, scale=2.0)
    a, b = mp.continuous_support()
    ref = integrate.quad(lambda x: -mp.pdf(x) * np.log(mp.pdf(x)), a, b, epsabs=1e-13, limit=200)[0]
    assert mp.entropy() == pytest.approx(ref, rel=1e-9)


def test_entropy_of_laws_with_atoms():
    """Purely atomic: the Shannon entropy; atoms beside a continuous part: −inf (the stated convention)."""
    assert Bernoulli(0.5).entropy() == pytest.approx(np.log(2.0), rel=1e-15)
    assert PointMasses([3.0], [1.0]).entropy() == 0.0
    assert MarchenkoPastur(4.0).entropy() == -np.inf
    assert Mixture([MarchenkoPastur(0.5), PointMasses([3.0], [1.0])], [0.6, 0.4]).entropy() == -np.inf
    assert np.isfinite(MarchenkoPastur(1.0).entropy())


@pytest.mark.parametrize("name", ["marchenko_pastur", "bernoulli", "mixture", "affine_reflected_atom",
                                  "gaussian_pushforward"])
def test_rvs_follow_the_rng_convention(name):
    """SPEC 7: rng an int, a Generator or None; seed= still draws the same numbers, with a DeprecationWarning."""
    law = _law(name)
    x = law.rvs(12, rng=4)
    with pytest.warns(DeprecationWarning, match="rng="):
        assert np.array_equal(law.rvs(12, seed=4), x)
    assert np.array_equal(law.rvs(12, rng=np.random.default_rng(4)), x)
    grid = law.rvs((3, 4), rng=4)
    assert grid.shape == (3, 4) and np.array_equal(grid.ravel(), x)
    one = law.rvs(rng=4)
    assert isinstance(one, float) and one == law.rvs(1, rng=4)[0]
    assert np.shape(law.rvs(5)) == (5,)
    with pytest.raises(TypeError, match="not both"):
        law.rvs(3, rng=1, seed=1)
    with pytest.raises(TypeError, match="RandomState"):
        law.rvs(3, rng=np.random.RandomState(1))


def test_marchenko_pastur_sample_is_deprecated_and_unchanged():
    from rmtnet.spectra.sampling.random_matrices import wishart_eigs
    with pytest.warns(DeprecationWarning, match="wishart_eigs"):
        eigs = MarchenkoPastur(0.5, scale=2.0).sample(20, seed=1)
    assert np.array_equal(eigs, wishart_eigs(20, 40, seed=1) * 2.0)
