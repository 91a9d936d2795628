"""Spectral measures on the real line with the interface of scipy.stats' frozen distributions.

A :class:`Measure` is a probability measure μ = (atoms) + (absolutely continuous part). Every kind answers, with
scipy.stats' meaning (atoms included wherever scipy's discrete laws include them):

``pdf(x)``, ``logpdf(x)``   density of the continuous part (atoms excluded; they are ``atoms()``) and its logarithm,
``cdf(x)``, ``sf(x)``       μ((-∞, x]) and μ((x, ∞)) = 1 − cdf(x); ``logcdf``, ``logsf`` their logarithms,
``ppf(q)``                  inf{x : cdf(x) ≥ q}, the generalised inverse (``quantile`` is the same function),
``isf(q)``                  ppf(1 − q), scipy's rule for continuous and discrete laws alike,
``mean()``, ``var()``, ``std()``, ``median()``, ``interval(confidence)``, ``moment(k)`` = ∫ x^k dμ,
``stats(moments)``          mean, variance, skewness, excess kurtosis (scipy's letters 'm', 'v', 's', 'k'),
``entropy()``               differential entropy of a continuous law (see :meth:`Measure.entropy` for atoms),
``expect(func, lb, ub)``    ∫ func dμ: the atoms' sum plus SciPy's tanh-sinh quadrature over the bands,
``support()``               (lo, hi), the smallest interval holding the whole law, atoms included (scipy's),
``continuous_support()``    (lo, hi), the hull of the continuous part's bands (``None`` if there is none),
``intervals()``             the bands themselves,
``atoms()``                 (locations, masses),
``rvs(size, rng=None)``     iid draws (the scientific-Python ``rng`` convention),
``cauchy(z)``               G(z) = ∫ dμ(x)/(z - x) (Im G < 0 for Im z > 0),
``s_transform(w)``          S(w) = (1 + w)/(w M⁻¹(w)) with M(z) = zG(z) - 1 (Voiculescu 1987, J. Operator Theory 18),
``dilate(a)``, ``shift(b)`` the laws of a·X and X + b.

The public methods are final: they validate their arguments once and call the private hooks a kind implements
(``_pdf``, ``_cdf``, ``_ppf``, ``_moment``, ``_rvs``, …; listed in :class:`Measure`'s docstring), as SciPy's
``rv_continuous`` does.

Kinds here: :class:`PointMasses` (and :class:`Empirical`), :class:`GridDensity` (a piecewise-linear density on a
grid, optionally with atoms), :class:`Mixture`, :class:`Affine` push-forwards and :class:`GaussianPushforward`
(the law of f(h), h ~ N(0, q)). Closed-form laws live in :mod:`rmtnet.spectra.laws`; ⊠/⊞ products in
:mod:`rmtnet.spectra.free`; every public law with example parameters in :mod:`rmtnet.spectra.registry`.

Modules: ``_quadrature`` (tanh-sinh nodes), ``_tables`` (the generic cdf tables, a mixin of :class:`Measure`),
``_base`` (:class:`Measure`, :class:`Affine`), ``_atomic`` (atomic and grid kinds), ``_cauchy`` (binned Cauchy
kernels), ``_pushforward`` (mixtures and push-forwards).
"""
from rmtnet._validation import ConvergenceError
from ._quadrature import adaptive_tanh_sinh, resolved_tanh_sinh, cumulative_panels
from ._quadrature import cumulative as _cumulative          # the name existing callers import
from ._cauchy import atom_cauchy, binned_cauchy
from ._base import LARGE_ORDER, Measure, Affine
from ._atomic import PointMasses, Empirical, GridDensity, Tabulated, tabulate
from ._pushforward import Mixture, OtherGram, GaussianPushforward, gaussian_pushforward

__all__ = ["Measure", "PointMasses", "Empirical", "GridDensity", "Mixture", "Affine", "OtherGram", "GaussianPushforward",
           "gaussian_pushforward", "Tabulated", "tabulate", "adaptive_tanh_sinh",
           "resolved_tanh_sinh"]

# The public classes are documented, pickled and shown under this package, where users import them from.
for _cls in (Measure, PointMasses, Empirical, GridDensity, Mixture, Affine, OtherGram, GaussianPushforward, Tabulated):
    _cls.__module__ = __name__
del _cls
