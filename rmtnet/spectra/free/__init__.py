"""Free multiplicative (⊠) and additive (⊞) convolution of spectral measures.

The engine: subordination as one Newton system, continued in z
----------------------------------------------------------------
For ν = ⊠_i μ_i^{⊠t_i} (measures on [0, ∞), real powers t_i ≥ 1, T = Σ t_i) write m = M_ν(z) = zG_ν(z) - 1 and
ω_i = M_i^{-1}(m), the subordination points (Belinschi & Bercovici 2007). From S_ν = Π S_i^{t_i} and
S(w) = (1 + w)/(w M^{-1}(w)):

    log z = (1 - T) log((1 + m)/m) + Σ_i t_i log ω_i,        M_i(ω_i) = m   for every i.             (⊠)

For ⊞ with g = G_ν(z) and ω_i = G_i^{-1}(g) (Voiculescu's subordination; R_i(g) = ω_i - 1/g):

    z = Σ_i t_i ω_i - (T - 1)/g,                              G_i(ω_i) = g   for every i.             (⊞)

Each factor enters only through its own transform (M_i or G_i) and derivative, so closed-form laws, atoms
(Bernoulli D² of ReLU), grid densities and non-algebraic push-forwards (φ'(h)² of tanh/erf) are all handled by one
mechanism. The system is "arrowhead" — each inner equation couples ω_i to the single outer unknown — so a Newton step
costs O(number of factors) by a Schur complement, and many factors (deep networks, L = 100) are cheap.

**Branch control.** Why not the fixed point ω₁ = z h_ν(z h_μ(ω₁))? It converges only linearly, and slowly near the
real axis where densities are read off. Instead every z = x + iy is reached by *continuation*: start at y₀ far above
the spectrum, where m ≈ m₁/z and ω_i ≈ m₁ᵢ/m are unambiguous (the branch with Im G < 0, continued from |z| → ∞),
and walk y down geometrically to the target (y = 0 for densities), Newton-polishing at every step. A step is accepted
only if Newton converges to relative accuracy ``tol`` within a few iterations and the solution stays on the physical
side (Im m ≤ 0, Im ω_i ≥ 0 for ⊠; Im g ≤ 0, Im ω_i ≥ 0 for ⊞) without a jump; otherwise the step is halved. All grid
points move together (vectorised). Points near the law's centre (for ⊠, near 0, where a hard edge puts the
quadrature's nodes down to 10⁻³⁰⁰) share the way down: the solution on z = c + iy is solved once on a ladder of
heights, and each such point starts at the rung just above 30|x − c| (``_from_trunk``). The total number of Newton
iterations per point is capped by ``max_iter``; exceeding it raises :class:`ConvergenceError` with z, the
iteration count and the residual.

**Atoms** follow Belinschi (2003) / Bercovici–Voiculescu (1998): (μ⊠ν)({0}) = max(μ({0}), ν({0})); a product of
nonzero atoms a_i carries mass Σ t_i μ_i({a_i}) - (T - 1) when positive (similarly for ⊞ at Σ t_i a_i).
**Bands and edges.** The continuous part's bands are read off the density on a grid that follows the law's scales:
the hull on 200 points, for ⊠ the same range logarithmically (4 points a decade), and fine grids at every scale around
the *seeds* — the points each choice of one feature per factor (an atom, a band's edge or middle) maps to, Σ t_i f_i
for ⊞ and Π f_i^{t_i} for ⊠ — so that bands 10²⁴ apart, or a thousandth of the hull wide, are found. A grid cell
counts as density only where it holds mass (ρ·Δx > 1e-10), and every interior local minimum of the grid density is
minimised (bounded Brent) so that gaps narrower than the grid are found. **Mass accounting**: the bands' masses
(the integral of the density, with each band's edge tails beyond the last quadrature node taken from the density's
power law there, :meth:`Measure.edge_tails`) and the atoms must add to 1 within 1e-8 (a missed band loses its whole
mass); the cdf, quantiles and everything built on them raise
:class:`ConvergenceError` otherwise (``law.mass_accounting()`` shows the books). Where a law crowds mass into a hard
edge beyond float64's reach (a deep critical ReLU network's JJᵀ law at 0), that mass is 1 minus the resolved mass,
accepted where it agrees with the edge's power law to 2 %, and a warning says how much.
**Scales.** ⊞ is solved about the law's mean and on its width (√Var), so laws far from 0 keep their digits; the
outer equation's residual is measured relative to its terms. The continuation starts 10× the rms scale above the
axis, and again from above the support's radius (moment ratios) if that fails. Beyond the reach of float64
(⊞: a hull 2·10⁶ times the narrowest factor's width solved in the tests, 2·10⁷ not; ⊠: a radius 10³ times the rms
solved, 10⁴ not) the ConvergenceError names the scale ratio.
Each edge is a real critical point of z(m) (λ_max = min_{m>0} M^{-1}(m) and its mirror at a left edge), located by a
secant search on dz/dm = 0 along the real branch (16-point sections on the density if that branch leaves the
bracket).
The density is -Im G/π of the continuous part: the atoms' poles are removed, so that a point evaluated slightly above
the axis next to an atom does not pick up the atom's Cauchy tail.
**Moments** are exact through the S-transform / free-cumulant series (:mod:`rmtnet.spectra.series`).

The engine lives in private modules, one idea each: the Newton system and its continuation in
:mod:`rmtnet.spectra._subordination`, the bands and mass books in :mod:`rmtnet.spectra._support`, ⊠ and ⊞ in
:mod:`rmtnet.spectra._free_product` and :mod:`rmtnet.spectra._free_sum`; the descent's step control, stall rule,
grid search and books are the shared helpers of :mod:`rmtnet.spectra.continuation`. This module holds the public
operations and re-exports :class:`FreeProduct` and :class:`FreeSum`.
"""
from __future__ import annotations

from rmtnet._validation import integer_at_least, real_scalar
from ._free_product import FreeProduct
from ._free_sum import FreeSum
from ._subordination import DEFAULT_MAX_ITER as _DEFAULT_MAX_ITER
from ._subordination import DEFAULT_TOL as _DEFAULT_TOL
from ..measures import Affine, Measure, PointMasses

__all__ = ["free_mult", "free_mult_scaled", "free_mult_power", "free_add", "free_add_power", "FreeProduct", "FreeSum"]
FreeProduct.__module__ = FreeSum.__module__ = __name__      # documented, pickled and shown under rmtnet.spectra.free


# ---------------------------------------------------------------------------------------------------------------
def _solver_settings(tol, max_iter):
    """``tol`` in (0, 1) and ``max_iter`` an integer ≥ 1, or ValueError naming them."""
    return (real_scalar("tol", tol, lo=0.0, hi=1.0, lo_open=True, hi_open=True),
            integer_at_least("max_iter", max_iter, 1))


def _collect(cls, pairs, tol, max_iter):
    """Flatten nested convolutions of the same kind and merge repeated factors (powers add).

    Exact because the transforms linearise: (μ ⊠ ν)^{⊠t} has S-transform S_μ^t S_ν^t, so it is μ^{⊠t} ⊠ ν^{⊠t}
    (and (μ ⊞ ν)^{⊞t} = μ^{⊞t} ⊞ ν^{⊞t}, R-transforms adding). A nested product is thus one Newton system of the
    distinct factors, never a solve inside a solve. A law that is itself a free power of a simpler one and says so by
    a ``free_factors()`` method (FussCatalan(s) = MP^{⊠s}), or a dilation of one, is taken apart in a product the
    same way (:func:`_parts`): its own transform is a nested solve, which near its hard edge at 0 has to reach
    heights of 1e-49 and below when the other factors span many decades."""
    merged = {}
    order = []
    for mu, t in pairs:
        if not isinstance(mu, Measure):
            raise ValueError(f"factors must be Measure objects, got {type(mu).__name__}")
        parts = _parts(cls, mu)
        inner = [(mu, t)] if parts is None else [(m, s * t) for m, s in parts]
        for m, s in inner:
            if id(m) not in merged:
                order.append(m)
                merged[id(m)] = 0.0
            merged[id(m)] += s
    return [(m, merged[id(m)]) for m in order]


def _parts(cls, mu):
    """The pairs (μ_i, t_i) that ``cls`` takes μ apart into, or None: a convolution of its own kind; for ⊠, a law
    that says it is a free power (``free_factors()``), and a dilation D_a of one (a > 0): D_a(⊠ μ_i^{t_i}) is
    ⊠ (D_c μ_i)^{t_i} with c = a^{1/Σt_i}, since S_{D_c μ} = S_μ/c."""
    if type(mu) is cls:
        return list(mu.factors)
    if cls is not FreeProduct:
        return None
    if callable(getattr(mu, "free_factors", None)):
        return list(mu.free_factors())
    if type(mu) is Affine and mu.b == 0 and mu.a > 0 and callable(getattr(mu.base, "free_factors", None)):
        parts = list(mu.base.free_factors())
        c = mu.a ** (1.0 / sum(t for _, t in parts))
        return [(m.dilate(c), t) for m, t in parts]
    return None


def _check_nonnegative(mu, name):
    if type(mu) is FreeProduct:
        # ⊠ of laws on [0, ∞) with positive means is one (its factors are flattened into the new product, so its own
        # support, a continuation over a grid, is never needed)
        for k, (factor, _) in enumerate(mu.factors):
            _check_nonnegative(factor, f"{name}'s factor {k}")
        return
    a, _ = mu.hull()
    if a < -1e-12:
        raise ValueError(f"{name} must be supported on [0, ∞) for ⊠; its support starts at {a!r}")
    if mu.moment(1) <= 0:
        raise ValueError(f"{name} has mean 0 (it is δ₀); ⊠ with δ₀ is δ₀")


def free_mult(*measures, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
    """Free multiplicative convolution μ₁ ⊠ μ₂ ⊠ … of measures on [0, ∞) (two or more factors).

    S_{μ⊠ν} = S_μ S_ν, with S(w) = (1 + w)/(w M⁻¹(w)) as in :mod:`rmtnet.spectra.transforms`. The result is a
    lazy :class:`FreeProduct` measure: its density, Cauchy transform, atoms, support edges and moments are computed
    on demand by the subordination engine described in this module's docstring. ``tol`` is the relative Newton
    tolerance; ``max_iter`` caps the Newton iterations per point (a :class:`ConvergenceError` reports z, iteration
    and residual when it is reached).

    Parameters
    ----------
    *measures : Measure
        Two or more laws on [0, ∞) (or one list/tuple of them); nested products are flattened.
    tol : float, optional
        Relative Newton tolerance, in (0, 1).
    max_iter : int, optional
        Newton iterations allowed per point (≥ 1).

    Returns
    -------
    FreeProduct
        The lazy law ν = μ₁ ⊠ μ₂ ⊠ …

    Examples
    --------
    MP(1) ⊠ MP(1) is the Fuss–Catalan law of order 2, whose moments are the Fuss–Catalan numbers C(3k, k)/(2k + 1):

    >>> from rmtnet.spectra.laws import FussCatalan, MarchenkoPastur
    >>> nu = free_mult(MarchenkoPastur(1), MarchenkoPastur(1))
    >>> [round(float(nu.moment(k)), 6) for k in (1, 2, 3)]
    [1.0, 3.0, 12.0]
    >>> print(f"{float(nu.pdf(1.0)):.6f} {float(FussCatalan(2).pdf(1.0)):.6f}")
    0.178979 0.178979
    """
    tol, max_iter = _solver_settings(tol, max_iter)
    if len(measures) == 1 and isinstance(measures[0], (list, tuple)):
        measures = tuple(measures[0])
    if len(measures) < 1:
        raise ValueError("free_mult needs at least one measure")
    for i, mu in enumerate(measures):
        if not isinstance(mu, Measure):
            raise ValueError(f"measures[{i}] must be a Measure, got {type(mu).__name__}")
        _check_nonnegative(mu, f"measures[{i}]")
    return FreeProduct(_collect(FreeProduct, [(mu, 1.0) for mu in measures], tol, max_iter), tol, max_iter)


def _single_atom(mu):
    """c if μ = δ_c, else None."""
    locs, masses = mu.atoms()
    if locs.size == 1 and masses[0] > 1 - 1e-14 and mu.continuous_support() is None:
        return float(locs[0])
    return None


def free_mult_scaled(factors, scale=1.0, **kwargs):
    """``scale`` · (⊠ factors), with every point mass δ_c among the factors folded into the scale (μ ⊠ δ_c is μ
    dilated by c), so that only genuine laws reach the engine. Returns δ_scale when nothing is left, the single
    remaining law (dilated) when one is, else an :class:`Affine` of a :class:`FreeProduct`.

    Parameters
    ----------
    factors : iterable of Measure
        The laws on [0, ∞) to multiply; point masses δ_c among them are folded into ``scale``.
    scale : float, optional
        Dilation applied to the product.
    **kwargs
        ``tol`` and ``max_iter``, passed on to :func:`free_mult`.

    Returns
    -------
    Measure
        A :class:`PointMasses`, a single (dilated) factor, or an :class:`Affine` of a :class:`FreeProduct`.

    Examples
    --------
    δ₂ ⊠ μ is μ dilated by 2, so with scale 3 the result is μ dilated by 6:

    >>> from rmtnet.spectra.laws import MarchenkoPastur
    >>> from rmtnet.spectra.measures import PointMasses
    >>> free_mult_scaled([PointMasses([2.0], [1.0]), MarchenkoPastur(0.5)], 3.0)
    Affine(MarchenkoPastur(ratio=0.5, scale=1), a=6.0, b=0.0)
    >>> free_mult_scaled([PointMasses([2.0], [1.0])], 3.0)
    PointMasses(locations=[6.0], masses=[1.0])
    """
    rest = []
    for mu in factors:
        c = _single_atom(mu)
        if c is None:
            rest.append(mu)
        else:
            scale *= c
    if scale == 0:
        return PointMasses([0.0], [1.0])
    if not rest:
        return PointMasses([scale], [1.0])
    prod = rest[0] if len(rest) == 1 else free_mult(*rest, **kwargs)
    return prod if scale == 1 else Affine(prod, scale)

def free_mult_power(mu, t, *, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
    """μ^{⊠t} for real t ≥ 1: the measure with S-transform S_μ^t (for integer t, μ ⊠ … ⊠ μ, t times).

    Parameters
    ----------
    mu : Measure
        A law on [0, ∞) with positive mean.
    t : float
        The (real) power, t ≥ 1.
    tol, max_iter : float, int, optional
        Newton tolerance and iteration cap, as in :func:`free_mult`.

    Returns
    -------
    FreeProduct
        The lazy law μ^{⊠t}.

    Examples
    --------
    MP(1)^{⊠3} is FussCatalan(3): second moment C(8, 2)/7 = 4, and the same density:

    >>> from rmtnet.spectra.laws import FussCatalan, MarchenkoPastur
    >>> nu = free_mult_power(MarchenkoPastur(1), 3)
    >>> [round(float(nu.moment(k)), 6) for k in (1, 2)]
    [1.0, 4.0]
    >>> print(f"{float(nu.pdf(2.0)):.6f} {float(FussCatalan(3).pdf(2.0)):.6f}")
    0.069442 0.069442
    """
    tol, max_iter = _solver_settings(tol, max_iter)
    if not isinstance(mu, Measure):
        raise ValueError(f"mu must be a Measure, got {type(mu).__name__}")
    t = real_scalar("t", t, lo=1.0)
    _check_nonnegative(mu, "mu")
    return FreeProduct(_collect(FreeProduct, [(mu, t)], tol, max_iter), tol, max_iter)


def free_add(*measures, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
    """Free additive convolution μ₁ ⊞ μ₂ ⊞ … (R-transforms add), by the same continuation engine.

    Parameters
    ----------
    *measures : Measure
        Two or more laws on ℝ (or one list/tuple of them); nested sums are flattened.
    tol : float, optional
        Relative Newton tolerance, in (0, 1).
    max_iter : int, optional
        Newton iterations allowed per point (≥ 1).

    Returns
    -------
    FreeSum
        The lazy law ν = μ₁ ⊞ μ₂ ⊞ …

    Examples
    --------
    The semicircle's R-transform is var·g, so semicircles of variances 1 and 3 add to the semicircle of variance 4:

    >>> from rmtnet.spectra.laws import Semicircle
    >>> nu = free_add(Semicircle(1), Semicircle(3))
    >>> round(float(nu.var()), 6)
    4.0
    >>> print(f"{float(nu.pdf(0.5)):.6f} {float(Semicircle(4).pdf(0.5)):.6f}")
    0.157907 0.157907
    """
    tol, max_iter = _solver_settings(tol, max_iter)
    if len(measures) == 1 and isinstance(measures[0], (list, tuple)):
        measures = tuple(measures[0])
    if len(measures) < 1:
        raise ValueError("free_add needs at least one measure")
    for i, mu in enumerate(measures):
        if not isinstance(mu, Measure):
            raise ValueError(f"measures[{i}] must be a Measure, got {type(mu).__name__}")
    return FreeSum(_collect(FreeSum, [(mu, 1.0) for mu in measures], tol, max_iter), tol, max_iter)


def free_add_power(mu, t, *, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
    """μ^{⊞t} for real t ≥ 1 (free cumulants times t).

    Parameters
    ----------
    mu : Measure
        A law on ℝ.
    t : float
        The (real) power, t ≥ 1.
    tol, max_iter : float, int, optional
        Newton tolerance and iteration cap, as in :func:`free_add`.

    Returns
    -------
    FreeSum
        The lazy law μ^{⊞t}.

    Examples
    --------
    The semicircle's only free cumulant is its variance, so Semicircle(1)^{⊞2.5} is Semicircle(2.5):

    >>> from rmtnet.spectra.laws import Semicircle
    >>> nu = free_add_power(Semicircle(1), 2.5)
    >>> round(float(nu.var()), 6)
    2.5
    >>> print(f"{float(nu.pdf(0.3)):.6f} {float(Semicircle(2.5).pdf(0.3)):.6f}")
    0.200409 0.200409
    """
    tol, max_iter = _solver_settings(tol, max_iter)
    if not isinstance(mu, Measure):
        raise ValueError(f"mu must be a Measure, got {type(mu).__name__}")
    t = real_scalar("t", t, lo=1.0)
    return FreeSum(_collect(FreeSum, [(mu, t)], tol, max_iter), tol, max_iter)
