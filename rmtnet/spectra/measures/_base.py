"""The base class :class:`Measure` — public methods that validate their arguments and call the private hooks a law
implements — and :class:`Affine`, the push-forward by x ↦ a·x + b that its ``dilate`` and ``shift`` return."""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import special

from ... import backend as B
from rmtnet._system import check_allocation
from rmtnet._validation import (boolean, finite_array, integer_at_least, moment_order, probabilities,
                                 real_scalar)
from ._quadrature import EDGE_ULPS, apply_elementwise, edge_tail, hermite_at, tanh_sinh_pieces
from ._tables import CdfTables


LARGE_ORDER = 10_000      # moments of higher order are not computed by a kind's own (O(k) or slower) method
_LOG_MAX = float(np.log(np.finfo(float).max))
_LOG_TINY = float(np.log(np.finfo(float).smallest_subnormal))


def _large_order_moment(mu, k):
    """m_k for k > :data:`LARGE_ORDER`, in O(1) of k: |m_k| ≤ r^k with r = max |x| on the support, so m_k is 0 in
    float64 where r^k underflows, and beyond float64 (inf, reported as OverflowError) where r^k·k⁻³ overflows (a
    law's mass within r/k of its extreme point r decays no faster than a power of k for the laws rmtnet builds);
    in between (r within a factor e^{±709/k} of 1) the generic route of :meth:`Measure.moment`: the atoms plus the
    tanh-sinh quadrature of x^k·ρ(x), whose nodes crowd at the band ends where x^k·ρ is concentrated. Measured
    there: relative error ~3e-8 where the density vanishes like a square root at r (MarchenkoPastur(1, 1/4),
    k = 5·10⁴), but 2e-3 to 8e-3 where it diverges like |x − r|^{-1/2} (the arcsine law on [0, 1], k = 2·10⁴ to
    2·10⁵): the exact orders k ≤ 10⁴ are what a kind's own method guarantees."""
    lo, hi = Measure.support(mu)
    r = max(abs(lo), abs(hi))
    if r == 0:
        return 0.0
    log_bound = k * float(np.log(r))
    if log_bound < _LOG_TINY:
        return 0.0
    if log_bound - 3.0 * math.log(k) > _LOG_MAX:
        return np.inf
    return mu._quadrature_moment(k)


_CANCELLATION = 1e6       # the shifted raw moments are used where they lose fewer than six digits


def _shifted_moments(mu, k):
    """μ_k = Σ_j C(k, j) m_j (−m₁)^{k−j} from the raw moments where the terms cancel to no less than 10⁻⁶ of their
    size (k = 2: m₂ − m₁², as before); otherwise :meth:`Measure._centred_quadrature`, which does not cancel."""
    try:
        m1 = float(mu.moment(1))
        if k == 2:
            m2 = float(mu.moment(2))
            value, size = m2 - m1 ** 2, m2 + m1 ** 2
        else:
            terms = [special.comb(k, j) * float(mu.moment(j)) * (-m1) ** (k - j) for j in range(k + 1)]
            value, size = math.fsum(terms), math.fsum(abs(t) for t in terms)
    except OverflowError:
        return mu._centred_quadrature(k)
    if np.isfinite(size) and abs(value) * _CANCELLATION >= size:
        return value
    return mu._centred_quadrature(k)


def _draw_size(size):
    """``size`` of :meth:`Measure.rvs` checked: None, an integer ≥ 0 or a tuple of them (returned as ints)."""
    if size is None:
        return None
    if isinstance(size, tuple):
        for i, n in enumerate(size):
            integer_at_least(f"size[{i}]", n, 0)
        return tuple(int(n) for n in size)
    return integer_at_least("size", size, 0)


def _generator(rng, seed):
    """The NumPy generator of :meth:`Measure.rvs`: ``rng`` by the scientific-Python convention (SPEC 7: None, an
    int, a SeedSequence or a Generator, which is used as it is), or the deprecated ``seed`` (the same values and
    the same stream: ``seed=s`` and ``rng=s`` draw the same numbers)."""
    if seed is not _NO_SEED:
        if rng is not None:
            raise TypeError("rvs takes rng or the deprecated seed, not both")
        warnings.warn("rvs(…, seed=s) is deprecated: pass rng=s (an int, a numpy.random.Generator or None), which "
                      "draws the same numbers", DeprecationWarning, stacklevel=3)
        return B.rng(seed, "numpy")
    if isinstance(rng, np.random.RandomState):
        raise TypeError("rng must be None, an int, a SeedSequence or a numpy.random.Generator, not a RandomState "
                        "(SPEC 7)")
    try:
        return B.rng(rng, "numpy")
    except ValueError as exc:
        raise ValueError(str(exc).replace("seed must", "rng must", 1)) from None


_NO_SEED = object()       # rvs' deprecated ``seed`` not given


class Measure(CdfTables):
    """A probability measure on ℝ. See the package docstring for the interface and conventions.

    **Public methods are final.** ``pdf``, ``logpdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``, ``ppf``,
    ``quantile``, ``isf``, ``moment``, ``mean``, ``var``, ``std``, ``median``, ``interval``, ``stats``,
    ``entropy``, ``expect``, ``rvs``, ``s_transform``, ``cauchy`` and the other names in :attr:`FINAL_METHODS`
    validate their arguments once (finite arrays, probabilities in [0, 1], integer orders, sizes and generators),
    handle what is common to every law (the atoms in ``cdf``/``ppf``, orders above :data:`LARGE_ORDER`, the
    finiteness of moments and S-transforms), and call private hooks; a subclass overrides hooks only, as with
    SciPy's ``rv_continuous`` (``pdf`` → ``_pdf``, ``ppf`` → ``_ppf``, ``moment`` → ``_munp``, ``rvs`` → ``_rvs``).

    **What a kind describes** (public, overridden by kinds): ``atoms()`` (default none), ``continuous_support()``
    (required), ``intervals()`` (default: the continuous support as one band), ``__repr__``.

    **Hooks** (arguments already validated; each has a generic default):

    ``_g(z)``            (G(z), G′(z)) for Im z ≥ 0: the one hook every kind with a continuous part must provide,
    ``_mt(z)``           (M, 1 + M, M′), computed from ``_g`` by default,
    ``_pdf(x)``          density of the continuous part at a finite float array x (Stieltjes inversion of ``_g``),
    ``_logpdf(x)``       log of ``_pdf``; ``_logcdf(x)``, ``_logsf(x)`` logs of ``cdf`` and ``sf``,
    ``_cdf(x)``          μ((−∞, x]) at a finite float array (atoms plus the tanh-sinh table of ``_pdf``),
    ``_ppf(q)``          inf{x : cdf(x) ≥ q} for a float array q in [0, 1] (atoms, then the inverse table),
    ``_moment(k)``       ∫ x^k dμ for an int 0 ≤ k ≤ ``LARGE_ORDER`` (atoms plus quadrature),
    ``_var()``           the variance (``_central_moment(2)`` by default),
    ``_central_moment(k)`` ∫ (x − m₁)^k dμ for an int 2 ≤ k ≤ ``LARGE_ORDER`` (by default the raw moments
    shifted where that does not cancel, centred quadrature where it does: :func:`_shifted_moments`),
    ``_rvs(size, rng)``  draws of shape ``size`` (an int or a tuple) from a ``numpy.random.Generator`` (inversion),
    ``_s_transform(w)``  S(w) at a finite complex array (inversion of M),
    ``_entropy()``       differential entropy of a continuous law (quadrature of −ρ log ρ),
    ``_panels()``, ``_expect_continuous(func, lo, hi, rtol, atol)``, ``_own_cdf()``: quadrature panels, the
    continuous part of ``expect``, and whether ``_cdf`` is the law's own (``cdf_above`` then uses it).

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.measures import Measure
    >>> class Uniform(Measure):                   # the uniform law on [0, 1], by its hooks alone
    ...     def continuous_support(self):
    ...         return 0.0, 1.0
    ...     def _pdf(self, x):
    ...         return np.where((x >= 0) & (x <= 1), 1.0, 0.0)
    ...     def _cdf(self, x):
    ...         return np.clip(x, 0.0, 1.0)
    >>> u = Uniform()
    >>> float(u.cdf(0.25)), round(float(u.moment(2)), 8), round(u.entropy(), 8)
    (0.25, 0.33333333, 0.0)
    """

    FINAL_METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "quantile", "isf", "moment", "mean",
                     "var", "central_moment", "std", "median", "interval", "stats", "entropy", "expect", "rvs", "s_transform",
                     "cauchy", "cauchy_prime", "m_transform", "psi", "eta", "support", "hull", "cdf_above",
                     "edge_tails", "dilate", "shift")

    # ----- what a subclass provides -------------------------------------------------------------------------
    def _g(self, z):
        """(G(z), G'(z)) for Im z ≥ 0 (z complex, broadcastable)."""
        raise NotImplementedError

    def _mt(self, z):
        """(M(z), 1 + M(z), M'(z)) with M(z) = ∫ x/(z - x) dμ = zG(z) - 1 and 1 + M = zG = ∫ z/(z - x) dμ.

        Both M and 1 + M are returned so that each is accurate where it is small: M far from the support,
        1 + M next to a hard edge at 0. Kinds that can, compute them without cancellation."""
        g, dg = self._g(z)
        a = z * g
        return a - 1.0, a, g + z * dg

    def atoms(self):
        """(locations, masses) of the atoms, sorted by location."""
        return np.empty(0), np.empty(0)

    def continuous_support(self):
        """(lo, hi), the hull of the continuous part's bands (:meth:`intervals`), or ``None`` if the measure is
        purely atomic. :meth:`support` is the whole law's, atoms included."""
        raise NotImplementedError(f"{type(self).__name__} must implement continuous_support()")

    def pdf(self, x, *, backend=None):
        """Density of the continuous part at real x (atoms excluded). ``backend`` ("numpy", "cupy") moves x to that
        array library first: the ⊠/⊞ engine then solves all points in one batch on the device (other kinds
        compute with NumPy)."""
        if backend is not None:
            x = B.native(backend).asarray(x, dtype=float)
        return self._pdf(finite_array("x", x))

    def logpdf(self, x):
        """The logarithm of :meth:`pdf`, as scipy.stats' ``logpdf``.

        Parameters
        ----------
        x : array_like
            Finite real points.

        Returns
        -------
        numpy.ndarray
            log ρ(x), −inf where the continuous part has no density (off its bands; everywhere for a purely atomic
            law, whose atoms are :meth:`atoms`). Kinds may compute it without forming ρ (the hook ``_logpdf``).

        Examples
        --------
        >>> import numpy as np
        >>> from rmtnet.spectra import Semicircle
        >>> bool(np.isclose(Semicircle().logpdf(0.0), -np.log(np.pi)))          # ρ(0) = 1/π
        True
        """
        return self._logpdf(finite_array("x", x))

    def _pdf(self, x):
        """Stieltjes inversion: ρ(x) = -Im G(x + i0)/π."""
        out = np.zeros_like(x)
        sup = self.continuous_support()
        if sup is None:
            return out
        inside = (x > sup[0]) & (x < sup[1])
        if np.any(inside):
            g, _ = self._g(x[inside] + 1e-300j)
            out[inside] = np.maximum(-g.imag / np.pi, 0.0)
        return out

    def _logpdf(self, x):
        with np.errstate(divide="ignore"):
            return np.log(self._pdf(x))

    # ----- derived quantities ----------------------------------------------------------------------------------
    @property
    def continuous_mass(self):
        return max(0.0, 1.0 - float(np.sum(self.atoms()[1])))

    def support(self):
        """(lo, hi), the smallest closed interval holding the whole law, atoms included — scipy's ``support()``
        (for a purely atomic law, the least and greatest atom). The continuous part's hull alone is
        :meth:`continuous_support`."""
        locs, _ = self.atoms()
        sup = self.continuous_support()
        pts = list(locs) + (list(sup) if sup is not None else [])
        return float(min(pts)), float(max(pts))

    def hull(self):
        """The same as :meth:`support` (the whole law's hull, atoms included); kept for existing callers."""
        return Measure.support(self)

    def _z(self, z, name="z"):
        z = finite_array(name, z, dtype=complex)
        return z

    def cauchy(self, z):
        """G(z) = ∫ dμ(x)/(z - x); off the real axis, or on it away from the support. G(z̄) = conj G(z)."""
        z = self._z(z)
        lower = z.imag < 0
        zu = z.real + 1j * np.abs(z.imag)   # maps Im = -0.0 to +0.0: real z means z + i0
        g, _ = self._g(zu)
        g = np.broadcast_to(g, zu.shape)
        return np.where(lower, np.conj(g), g)

    def cauchy_prime(self, z):
        z = self._z(z)
        lower = z.imag < 0
        _, dg = self._g(z.real + 1j * np.abs(z.imag))
        dg = np.broadcast_to(dg, z.shape)
        return np.where(lower, np.conj(dg), dg)

    def m_transform(self, z):
        """M(z) = zG(z) - 1 = Σ_k m_k z^{-k} (Pennington's convention)."""
        z = self._z(z)
        return z * self.cauchy(z) - 1.0

    def psi(self, u):
        """ψ(u) = ∫ ux/(1 - ux) dμ = M(1/u)."""
        u = self._z(u, "u")
        return self.m_transform(1.0 / u)

    def eta(self, u):
        """η(u) = ψ(u)/(1 + ψ(u))."""
        p = self.psi(u)
        return p / (1.0 + p)

    def s_transform(self, w):
        """S(w) = (1 + w)/(w M⁻¹(w)), M⁻¹ on the branch continued from w → 0 (needs m₁ ≠ 0). Raises ValueError
        naming w where S has a pole or its branch ends (a value that is not finite)."""
        w = finite_array("w", w, dtype=complex)
        value = self._s_transform(w)
        bad = ~np.isfinite(np.asarray(value))
        if np.any(bad):
            where = w[bad] if w.shape == bad.shape else w
            raise ValueError(f"s_transform of {self!r}: w = {np.ravel(where)[:3].tolist()} is a pole or lies outside "
                             f"the domain of the S-transform (its value there is not finite)")
        return value

    def _s_transform(self, w):
        from ..transforms import s_transform
        return s_transform(self, w)

    def mean(self):
        return self.moment(1)

    def var(self):
        """The variance ∫ (x − m₁)² dμ, by a route that does not cancel for a law far from 0 relative to its width
        (a kind's closed form, or the centred moments of :meth:`central_moment`). A variance beyond float64 raises
        OverflowError naming var (PointMasses([1e308, -1e308], [0.5, 0.5]) has variance 1e616)."""
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                value = self._var()
            except OverflowError:
                value = np.inf
        if not np.all(np.isfinite(value)):
            raise OverflowError(f"var() of {self!r} is not representable in float64 (got {value!r}): the variance "
                                f"overflows")
        return value

    def _var(self):
        return self._central_moment(2)

    def central_moment(self, k):
        """The central moment ∫ (x − m₁)^k dμ, m₁ the mean, for an integer 0 ≤ k ≤ :data:`LARGE_ORDER`.

        Computed without the cancellation of the shifted raw moments Σ_j C(k, j) m_j (−m₁)^{k−j} (which loses every
        digit for a law far from 0 relative to its width): a kind's own closed form (semicircle, arcsine,
        Marchenko–Pastur, …), the centred sum or quadrature of its atoms and density, or the shifted raw moments
        where they lose fewer than six digits. ``central_moment(2)`` is :meth:`var`.

        Parameters
        ----------
        k : int
            The order, 0 ≤ k ≤ 10⁴.

        Returns
        -------
        float
            μ_k; OverflowError naming k where it is beyond float64.

        Examples
        --------
        The arcsine law on [lo, hi] has μ₂ = (hi − lo)²/8 and μ₄ = 3(hi − lo)⁴/128, also a billion from 0:

        >>> from rmtnet.spectra import Arcsine
        >>> a = Arcsine(1e9, 1e9 + 2.0)
        >>> a.central_moment(2), a.central_moment(3), a.central_moment(4)
        (0.5, 0.0, 0.375)
        """
        order = moment_order(k)
        if order > LARGE_ORDER:
            raise ValueError(f"k must be an integer in [0, {LARGE_ORDER}] for central_moment, got {k!r}")
        if order < 2:
            return (1.0, 0.0)[order]
        if order == 2:
            return float(self.var())
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                value = self._central_moment(order)
            except OverflowError:
                value = np.inf
        if not np.all(np.isfinite(value)):
            raise OverflowError(f"central_moment(k={k!r}) of {self!r} is not representable in float64 (got "
                                f"{value!r})")
        return float(value)

    def _central_moment(self, k):
        return _shifted_moments(self, k)

    def _centred_quadrature(self, k):
        """∫ (x − m)^k dμ by the atoms' centred sum and the quadrature of :meth:`expect` over the continuous part,
        the centre the mean m₁ plus the centred first moment δ (m₁ from a quadrature carries its relative
        error times |m₁|, which is not small against the width for a law far from 0)."""
        locs, masses = self.atoms()
        cont = self.continuous_support() is not None

        def centred(j, m, low=0.0):
            total = float(np.sum(masses * ((locs - m) - low) ** j))
            if cont:
                total += float(self._expect_continuous(lambda x: ((x - m) - low) ** j, -np.inf, np.inf, 1e-10, None))
            return total
        m = float(self.moment(1))
        return centred(k, m, centred(1, m))

    def std(self):
        """√var() (a variance that rounds below 0 counts as 0)."""
        return float(np.sqrt(max(float(self.var()), 0.0)))

    def moment(self, k):
        """∫ x^k dμ: atoms plus double-exponential quadrature of the continuous part. Orders k above
        :data:`LARGE_ORDER` (10⁴) are computed in O(1) of k for every kind (see :func:`_large_order_moment`); a
        moment beyond float64 raises OverflowError naming k (every moment of a law rmtnet computes is a finite
        real: a value that is not is float64 overflow or a failed series)."""
        order = moment_order(k)
        why = ""
        try:
            value = _large_order_moment(self, order) if order > LARGE_ORDER else self._moment(order)
        except OverflowError as exc:        # float ** int raises where NumPy would return inf
            value, why = np.inf, f" ({exc})" if str(exc) else ""
        if not np.all(np.isfinite(value)):
            raise OverflowError(f"moment(k={k!r}) of {self!r} is not representable in float64 (got {value!r}): the "
                                f"moment overflows, or the series for it failed at this order{why}")
        return value

    def _moment(self, k):
        return self._quadrature_moment(k)

    def intervals(self):
        """The bands of the continuous part, [(a₁, b₁), (a₂, b₂), …] in increasing order (one for most laws)."""
        sup = self.continuous_support()
        return [] if sup is None else [tuple(sup)]

    def _panels(self):
        """Intervals on which the density is smooth inside (singular at most at the ends): the bands by default."""
        return self.intervals()

    def cdf(self, x):
        """μ((-∞, x]): atoms at or left of x plus the integral of the density up to x."""
        return self._cdf(finite_array("x", x))

    def logcdf(self, x):
        """The logarithm of :meth:`cdf` (−inf left of the support), as scipy.stats' ``logcdf``.

        Parameters
        ----------
        x : array_like
            Finite real points.

        Returns
        -------
        numpy.ndarray
            log μ((−∞, x]).

        Examples
        --------
        >>> from rmtnet.spectra import Bernoulli
        >>> Bernoulli(0.5).logcdf([-1.0, 0.0]).round(6).tolist()
        [-inf, -0.693147]
        """
        return self._logcdf(finite_array("x", x))

    def logsf(self, x):
        """The logarithm of :meth:`sf` (−inf right of the support), as scipy.stats' ``logsf``.

        Parameters
        ----------
        x : array_like
            Finite real points.

        Returns
        -------
        numpy.ndarray
            log μ((x, ∞)).

        Examples
        --------
        >>> from rmtnet.spectra import Bernoulli
        >>> Bernoulli(0.5).logsf([0.0, 1.0]).round(6).tolist()
        [-0.693147, -inf]
        """
        return self._logsf(finite_array("x", x))

    def _logcdf(self, x):
        with np.errstate(divide="ignore"):
            return np.log(self._cdf(x))

    def _logsf(self, x):
        with np.errstate(divide="ignore"):
            return np.log(np.clip(1.0 - self._cdf(x), 0.0, 1.0))

    def _cdf(self, x):
        locs, masses = self.atoms()
        out = (masses[None, :] * (locs[None, :] <= x.reshape(-1, 1))).sum(axis=1).reshape(x.shape)
        return np.clip(out + self._continuous_cdf(x), 0.0, 1.0)

    def cdf_above(self, x, lo):
        """μ((-∞, x]) for x ≥ lo, from the density on [lo, ∞) alone: 1 − (atoms right of x) − ∫_x^∞ ρ.

        :meth:`cdf` integrates the density up from the bottom of the support. For a law whose mass crowds against
        0 over hundreds of decades — the JJᵀ law of a deep network: Fuss–Catalan(32) keeps 9 % of its mass below
        1e-35 — that means solving for the density at nodes down to 1e-300. A comparison with samples that resolve
        only x ≥ lo (a float64 floor, :func:`rmtnet.spectra.sampling.montecarlo.sample_jacobian_eigs`) needs none of it:
        the mass below lo is the complement of the mass above. Each band is integrated on its part above lo by
        tanh-sinh, in s = log x when lo > 0 (ρ(eˢ)eˢ is smooth over the decades), and interpolated by the cubic
        Hermite of (∫, ρ) like :meth:`cdf`. Laws with a cdf of their own (a closed form, a table) use it.

        Convention: the total mass is 1 (atoms plus continuous part), so any deficit of the continuous part's
        density (quadrature or engine) shows up below lo rather than above it."""
        x = finite_array("x", x)
        lo = real_scalar("lo", lo)
        if np.any(x < lo):
            raise ValueError(f"x must be ≥ lo = {lo:g}; got min(x) = {float(np.min(x)):g}")
        if self._own_cdf():
            return self.cdf(x)
        locs, masses = self.atoms()
        out = 1.0 - (masses[None, :] * (locs[None, :] > x.reshape(-1, 1))).sum(axis=1).reshape(x.shape)
        for a, b, log, vs, cs, spline in self._upper_tables(lo):
            mass = cs[-1]
            inside = (x > a) & (x < b)
            above = np.where(x <= a, mass, 0.0)            # the whole band lies right of x
            if inside.any():
                above[inside] = mass - hermite_at(spline, np.log(x[inside]) if log else x[inside], vs, cs)
            out = out - above
        return np.clip(out, 0.0, 1.0)

    def _own_cdf(self):
        """Whether :meth:`cdf` is the law's own (a closed form, a table, an exact quadrature) rather than the
        integral of the density up from the bottom of the support; :meth:`cdf_above` then uses it."""
        return type(self)._cdf is not Measure._cdf

    def quantile(self, q):
        """inf{x : cdf(x) ≥ q} for q in [0, 1], the same function as scipy's :meth:`ppf`."""
        return self.ppf(q)

    def _ppf(self, q):
        """inf{x : cdf(x) ≥ q} for q in [0, 1]: an atom for every q in its
        jump (cdf(a−), cdf(a)], the left end of a stretch where the cdf is flat at q. q = 0 and q = 1 give the ends of
        :meth:`support`, as scipy's ppf (its discrete laws, on integers, give the least point minus 1 at q = 0).

        q falls either in the jump of an atom (the answer is the atom) or in a stretch where the atoms' cumulative
        mass A is constant; there C(x) = q - A is solved on the Hermite cdf table by a bracketed root finder
        (Chandrupatla, :func:`scipy.optimize.elementwise.find_root`)."""
        flat = q.ravel()
        locs, masses = self.atoms()
        lo, hi = self.hull()
        out = np.full(flat.shape, lo)
        # atoms: F(a_k) and F(a_k-) = F(a_k) - m_k; q in (F(a_k-), F(a_k)] selects a_k
        F_at = self.cdf(locs) if locs.size else np.empty(0)
        F_left = F_at - masses
        if locs.size:
            # where no continuous mass lies between two atoms their jumps meet, F(a_k−) = F(a_{k−1}); the two sums
            # differ by rounding, and a q in that crack would match no atom (it fell to the bottom of the support)
            crack = 8 * np.finfo(float).eps
            joined = np.abs(F_left[1:] - F_at[:-1]) <= crack
            F_left[1:][joined] = F_at[:-1][joined]
            F_left[0] = 0.0 if abs(F_left[0]) <= crack else F_left[0]
        hit = (F_left[None, :] < flat[:, None]) & (flat[:, None] <= F_at[None, :])
        on_atom = hit.any(axis=1)
        if on_atom.any():
            out[on_atom] = locs[np.argmax(hit[on_atom], axis=1)]
        rest = np.nonzero(~on_atom & (flat > 0))[0]
        if rest.size and self._panels():
            # atoms strictly left of the answer are those with F(a_k) < q
            A = (masses[None, :] * (F_at[None, :] < flat[rest, None])).sum(axis=1)
            out[rest] = self._continuous_quantile(flat[rest] - A)
        # q = 1: the top of the support, as scipy's ppf(1); the table's cdf can round to its total short of the end
        out[flat == 1] = hi
        return out.reshape(q.shape)

    def _atom_mass_at(self, x):
        locs, masses = self.atoms()
        return (masses[None, :] * (locs[None, :] == np.reshape(x, (-1, 1)))).sum(axis=1).reshape(np.shape(x))

    # ----- scipy.stats' vocabulary --------------------------------------------------------------------------
    def ppf(self, q):
        """Percent point function, scipy's name for :meth:`quantile`: inf{x : cdf(x) ≥ q}, the generalised inverse
        of the cdf: an atom for every q in its jump (cdf(a−), cdf(a)] (as scipy's discrete laws), the left end of a
        stretch where the cdf is flat at q; q = 0 and q = 1 give the ends of :meth:`support`, as scipy's ppf (its
        discrete laws, on integers, give the least point minus 1 at q = 0)."""
        return self._ppf(probabilities("q", q))

    def sf(self, x):
        """Survival function μ((x, ∞)) = 1 − cdf(x); at an atom a, sf(a) excludes a's mass (as scipy's)."""
        return np.clip(1.0 - self.cdf(x), 0.0, 1.0)

    def isf(self, q):
        """Inverse survival function ppf(1 − q) = min{x : sf(x) ≤ q}: scipy's rule for its continuous and its
        discrete laws alike (``rv_generic._isf`` is ``_ppf(1 − q)``). Like scipy's, it resolves the upper tail
        only as far as 1 − q does in float64 (q ≳ 1e-16)."""
        q = probabilities("q", q)
        return self._ppf(1.0 - q)

    def median(self):
        """ppf(½)."""
        return float(self.ppf(0.5))

    def interval(self, confidence):
        """(ppf((1 − c)/2), ppf((1 + c)/2)) for confidence c in [0, 1], as scipy's ``interval``: each tail outside
        holds at most (1 − c)/2 (exactly that for a continuous law). c = 1 gives :meth:`support`."""
        c = probabilities("confidence", confidence)
        return self._ppf(0.5 * (1.0 - c)), self._ppf(0.5 * (1.0 + c))

    def stats(self, moments="mv"):
        """Mean ('m'), variance ('v'), skewness ('s') and excess kurtosis ('k'), in the order the letters are given,
        as scipy.stats' ``stats``: a tuple, or the one value for one letter.

        Parameters
        ----------
        moments : str
            Letters among 'm', 'v', 's', 'k' (default 'mv').

        Returns
        -------
        float or tuple of float
            The skewness μ₃/σ³ and the excess kurtosis μ₄/σ⁴ − 3 are taken from the raw moments m₁ … m₄
            (:meth:`moment`: exact series for the closed-form and free-probability laws), NaN for a law of zero
            variance (as scipy's).

        Examples
        --------
        >>> from rmtnet.spectra import Semicircle
        >>> [round(v, 12) for v in Semicircle(var=2.0, loc=1.0).stats("mvsk")]
        [1.0, 2.0, 0.0, -1.0]
        """
        if not isinstance(moments, str) or not moments or set(moments) - set("mvsk"):
            raise ValueError(f"moments must be a non-empty string of the letters 'm', 'v', 's', 'k', got {moments!r}")
        m1, var = float(self.mean()), float(self.var())
        out = []
        for letter in moments:
            if letter == "m":
                out.append(m1)
            elif letter == "v":
                out.append(var)
            elif not var > 0:
                out.append(float("nan"))
            elif letter == "s":
                out.append(self.central_moment(3) / var ** 1.5)
            else:
                out.append(self.central_moment(4) / var ** 2 - 3.0)
        return out[0] if len(out) == 1 else tuple(out)

    def entropy(self):
        """The entropy of the law: −∫ ρ log ρ dx for a law with a density (differential entropy, natural log);
        −Σ p log p for a purely atomic law (Shannon entropy, scipy's ``rv_discrete.entropy``); −inf for a law with
        both atoms and a continuous part.

        The last is the differential entropy of a law that is not absolutely continuous: smearing each atom of mass
        p into a density of width ε adds p log ε to −∫ ρ log ρ, which tends to −∞ as ε → 0 (Cover & Thomas 2006,
        Elements of Information Theory, 2nd ed., Wiley, §8.3: the differential entropy of a quantised law is its
        discrete entropy plus log ε). A number that mixed the continuous part's differential entropy with the
        atoms' discrete entropy would depend on the unit of x; −inf does not.

        Returns
        -------
        float
            Closed forms where a kind has one (:class:`~rmtnet.spectra.laws.Semicircle`,
            :class:`~rmtnet.spectra.laws.Arcsine`), otherwise the tanh-sinh quadrature of −ρ log ρ over the bands
            (the route of :meth:`expect`).

        Examples
        --------
        >>> import numpy as np
        >>> from rmtnet.spectra import Arcsine, Bernoulli, MarchenkoPastur
        >>> bool(np.isclose(Arcsine(0.0, 4.0).entropy(), np.log(np.pi)))      # log(π(hi − lo)/4)
        True
        >>> bool(np.isclose(Bernoulli(0.5).entropy(), np.log(2.0)))
        True
        >>> float(MarchenkoPastur(2.0).entropy())                               # an atom at 0 beside a band
        -inf
        """
        locs, masses = self.atoms()
        if self.continuous_support() is None:
            p = masses[masses > 0]
            return float(-np.sum(p * np.log(p)))
        if np.any(masses > 0):
            return -np.inf
        return float(self._entropy())

    def _entropy(self):
        """−∫ ρ log ρ by the tanh-sinh quadrature of :meth:`expect` over the continuous part, to 1e-10 relative or
        1e-12 absolute (an entropy of 0 — the uniform law on an interval of length 1 — has no relative scale)."""
        def minus_log_density(x):
            rho = self.pdf(x)
            with np.errstate(divide="ignore"):
                return np.where(rho > 0, -np.log(np.where(rho > 0, rho, 1.0)), 0.0)
        return self._expect_continuous(minus_log_density, -np.inf, np.inf, 1e-10, 1e-12)

    def expect(self, func=None, lb=None, ub=None, conditional=False, *, rtol=1e-10, atol=None):
        """∫_{[lb, ub]} func dμ, scipy.stats' ``expect``: the atoms in the closed interval [lb, ub] summed (as
        scipy's discrete laws, lb ≤ a ≤ ub), plus the continuous part by :func:`scipy.integrate.tanhsinh` of
        func·ρ over each piece of [lb, ub] on which ρ is smooth (the bands, split where a kind knows better; a grid
        law cell by cell, a Gaussian push-forward f(h) in h). ``conditional=True`` divides by μ([lb, ub]).

        ``func`` (default x ↦ x) must act elementwise on arrays, like ``pdf``; it may return complex values
        (``func = lambda x: 1/(z - x)`` gives G(z)). Each piece is integrated to ``rtol`` relative or ``atol``
        absolute, whichever is looser; ``atol=None`` takes rtol times ∫|func|ρ on the coarsest tanh-sinh level,
        divided among the pieces (a relative tolerance alone is never met by an integral that cancels, such as an
        odd moment of a symmetric law). A piece that does not converge raises :class:`ConvergenceError` naming it:
        func must be smooth inside each band (a kink such as |x| or a step inside a band stalls tanh-sinh; split the
        integral there with lb and ub, minding an atom at the split point, which both halves would count). Mass the
        quadrature's nodes cannot reach in float64 (:meth:`edge_tails`: the deep-network laws with mass below
        1e-300) is not included."""
        conditional = boolean("conditional", conditional)
        if func is None:
            func = _identity
        elif not callable(func):
            raise TypeError(f"func must be a callable acting elementwise on arrays (or None for x ↦ x), got "
                            f"{type(func).__name__}")
        lo = -np.inf if lb is None else real_scalar("lb", lb)
        hi = np.inf if ub is None else real_scalar("ub", ub)
        if lo > hi:
            raise ValueError(f"lb must not exceed ub, got lb={lo!r} > ub={hi!r}")
        rtol = real_scalar("rtol", rtol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        atol = None if atol is None else real_scalar("atol", atol, lo=0.0)
        locs, masses = self.atoms()
        inside = (locs >= lo) & (locs <= hi)
        total = np.sum(masses[inside] * apply_elementwise(func, locs[inside])) if inside.any() else 0.0
        total = total + self._expect_continuous(func, lo, hi, rtol, atol)
        if conditional:
            mass = self._mass_between(lo, hi)
            if not mass > 0:
                raise ValueError(f"conditional=True needs mass in [lb, ub] = [{lo!r}, {hi!r}], which holds none")
            total = total / mass
        return complex(total) if np.iscomplexobj(total) else float(total)

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """∫_{[lo, hi]} func·ρ over the continuous part (:meth:`expect`): tanh-sinh on each quadrature panel
        (:meth:`_panels`, smooth inside) cut to [lo, hi], less 10⁶ ulp (at most 10⁻⁶ of the piece) at either end,
        plus the mass of those end cells from the density's power law there (:func:`edge_tail`, as the cdf's edge
        tails) times func at the outermost node. Closer to an end than that, x − end is not resolved in float64 and
        a density singular there is evaluated at the wrong distance: for the arcsine law on [1, 3], whose
        ρ ∝ |x − end|^{-1/2}, tanh-sinh on the whole band misses 1.2e-8 of the mass."""
        pieces = [(max(a, lo), min(b, hi)) for a, b in self._panels()]
        pieces = [(a, b) for a, b in pieces if b > a]
        inner, tail = [], 0.0
        for a, b in pieces:
            guards = [min(EDGE_ULPS * np.spacing(abs(end)), 1e-6 * (b - a)) for end in (a, b)]
            inner.append((a + guards[0], b - guards[1]))
            for end, side, d in ((a, 1.0, guards[0]), (b, -1.0, guards[1])):
                v = np.sort(end + side * d * np.array([1.0, 4.0, 16.0]))
                mass, _ = edge_tail(v, self.pdf(v), end, side)
                if mass > 0:
                    tail = tail + mass * apply_elementwise(func, np.array([end + side * d]))[0]
        integrand = lambda x: apply_elementwise(func, x) * self.pdf(x)          # noqa: E731
        return tanh_sinh_pieces(integrand, inner, lo, hi, rtol, atol, self) + tail

    def _mass_between(self, lo, hi):
        """μ([lo, hi]), either end possibly infinite."""
        upper = 1.0 if hi == np.inf else float(self.cdf(hi))
        lower = 0.0 if lo == -np.inf else float(self.cdf(lo) - self._atom_mass_at(lo))
        return max(upper - lower, 0.0)

    def rvs(self, size=None, *, rng=None, seed=_NO_SEED):
        """iid draws from the law.

        Parameters
        ----------
        size : int, tuple of int or None
            The shape of the draws; None gives one draw as a float (scipy's convention).
        rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
            The source of randomness, by the scientific-Python convention (SPEC 7): an int or SeedSequence seeds
            ``numpy.random.default_rng``, a Generator is used as it is (and advanced), None draws fresh entropy.
        seed : deprecated
            The former name of ``rng`` (DeprecationWarning): ``rvs(n, seed=s)`` draws exactly what
            ``rvs(n, rng=s)`` does.

        Returns
        -------
        numpy.ndarray or float
            Draws of shape ``size``; kinds without a sampler of their own invert the cdf at uniform draws.

        Examples
        --------
        >>> from rmtnet.spectra import MarchenkoPastur
        >>> x = MarchenkoPastur(0.5).rvs((2, 3), rng=1)
        >>> x.shape, bool((x > 0).all())
        ((2, 3), True)
        """
        size = _draw_size(size)
        count = math.prod(size) if isinstance(size, tuple) else (size or 1)
        check_allocation("size", 16.0 * count, what=f"{size} float64 draws and their uniforms",
                         alternative="draw in chunks (rvs(k, rng=g) repeatedly with one Generator g) or use the "
                                     "law's cdf, ppf or moments")
        gen = _generator(rng, seed)
        if size is None:
            return float(np.asarray(self._rvs(1, gen))[0])
        return self._rvs(size, gen)

    def _rvs(self, size, rng):
        """Inversion of the cdf at uniform draws."""
        return self.ppf(rng.uniform(size=size))

    # ----- push-forwards --------------------------------------------------------------------------------------
    def dilate(self, a):
        """The law of a·X (a ≠ 0), the dilation D_a μ of free probability; S_{aX}(w) = S_X(w)/a.

        Not named ``scale``: in scipy.stats ``scale`` is a parameter of a law, and that is what the ``scale``
        attribute of :class:`~rmtnet.spectra.laws.MarchenkoPastur` and :class:`~rmtnet.spectra.laws.FussCatalan`
        is — MarchenkoPastur(λ, scale=c) is MarchenkoPastur(λ).dilate(c)."""
        return Affine(self, a, 0.0)

    def shift(self, b):
        """Law of X + b."""
        return Affine(self, 1.0, b)

    def __repr__(self):
        return f"{type(self).__name__}()"



def _identity(x):
    return x


class Affine(Measure):
    """Push-forward of ``base`` by x ↦ a·x + b (a ≠ 0): G(z) = G_base((z - b)/a)/a.

    Parameters
    ----------
    base : Measure
        The law of X.
    a : float
        The non-zero slope.
    b : float, optional
        The shift.

    Examples
    --------
    2X + 1 for X semicircular of variance 1: mean 1, variance 4, density ρ((x - 1)/2)/2, so at x = 1 it is
    (1/π)/2 = 0.159155; 1 - X for X ~ Bernoulli(0.3) is Bernoulli(0.7), with cdf 0.3 at ½:

    >>> from rmtnet.spectra.laws import Bernoulli, Semicircle
    >>> y = Affine(Semicircle(1.0), 2.0, 1.0)
    >>> print(f"{y.mean():.6f} {y.var():.6f} {float(y.pdf(1.0)):.6f}")
    1.000000 4.000000 0.159155
    >>> flip = Affine(Bernoulli(0.3), -1.0, 1.0)
    >>> flip.atoms()[1].round(6).tolist(), round(float(flip.cdf(0.5)), 6)
    ([0.3, 0.7], 0.3)
    """

    def __init__(self, base, a, b=0.0):
        if not isinstance(base, Measure):
            raise ValueError("base must be a Measure")
        self.base = base
        self.a = real_scalar("a", a)
        if self.a == 0:
            raise ValueError("a must be non-zero (dilate(0) is δ₀: use PointMasses([0], [1]))")
        self.b = real_scalar("b", b)

    def _g(self, z):
        u = (z - self.b) / self.a
        if self.a > 0:
            g, dg = self.base._g(u)
        else:
            g, dg = self.base.cauchy(u), self.base.cauchy_prime(u)
        return g / self.a, dg / self.a ** 2

    def _image(self, y):
        """a·y + b for points of the base's support, or ValueError naming a and b where that leaves float64 (the
        law then lies beyond what its numbers can hold; checked here rather than at construction, where the base's
        support may not be known yet)."""
        with np.errstate(over="ignore", invalid="ignore"):
            x = self.a * np.asarray(y, dtype=float) + self.b
        if not np.all(np.isfinite(x)):
            raise ValueError(f"a = {self.a!r}, b = {self.b!r} map the support of {self.base!r} beyond float64 "
                             f"(points {np.ravel(y)[:2].tolist()} → {np.ravel(x)[:2].tolist()}); give smaller a or b")
        return x

    def atoms(self):
        locs, masses = self.base.atoms()
        locs = self._image(locs)
        order = np.argsort(locs)
        return locs[order], masses[order]

    def continuous_support(self):
        s = self.base.continuous_support()
        if s is None:
            return None
        e = sorted(float(v) for v in self._image(s))
        return e[0], e[1]

    def _panels(self):
        """The base's quadrature panels mapped by x ↦ a·x + b (in increasing order): its gaps and sharp interior
        minima stay panel ends. (The default, the hull of the support, would put a gap between two bands inside
        one panel, where tanh-sinh nodes are sparse and the density has edges.)"""
        panels = [tuple(sorted(float(v) for v in self._image(p))) for p in self.base._panels()]
        return sorted(panels)

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """∫ func(a·y + b) over the base's continuous part, on y between (lo − b)/a and (hi − b)/a."""
        y = sorted(((lo - self.b) / self.a, (hi - self.b) / self.a))
        return self.base._expect_continuous(lambda t: apply_elementwise(func, self.a * t + self.b), y[0], y[1], rtol,
                                            atol)

    def _pdf(self, x):
        return self.base.pdf((x - self.b) / self.a) / abs(self.a)

    def _cdf(self, x):
        y = (x - self.b) / self.a
        if self.a > 0:
            return self.base.cdf(y)
        return 1.0 - self.base.cdf(y) + self.base._atom_mass_at(y)

    def _moment(self, k):
        return float(sum(special.comb(k, j) * self.a ** j * self.b ** (k - j) * self.base.moment(j)
                         for j in range(k + 1)))

    def _var(self):
        return self.a ** 2 * self.base.var()

    def _central_moment(self, k):
        return self.a ** k * self.base.central_moment(k)

    def _ppf(self, q):
        """a·Q(q) + b for a > 0. For a < 0, inf{y : P(aX + b ≤ y) ≥ q} = a·Q⁺(1 − q) + b with Q⁺(p) = inf{x : F(x) > p}
        the base's right-continuous inverse: it is x = Q(p) unless F(x) = p, where F may stay flat to the right of x
        (x the top of an atom's jump or a band's end). There Q⁺ is x itself if x lies in a band below its end, and
        otherwise the next point where F rises: the next atom or band start above x."""
        if self.a > 0:
            return self.a * self.base.quantile(q) + self.b
        p = 1.0 - q
        x = np.array(self.base.quantile(p), dtype=float)
        flat = np.asarray(self.base.cdf(x) <= p)
        if flat.any():
            bands = self.base.intervals()
            rises = np.unique(np.concatenate([self.base.atoms()[0], [lo for lo, _ in bands]]))
            xf = x[flat]
            inside = np.zeros(xf.shape, dtype=bool)
            for lo, hi in bands:
                inside |= (xf >= lo) & (xf < hi)
            nxt = np.searchsorted(rises, xf, side="right")
            later = rises[np.minimum(nxt, rises.size - 1)] if rises.size else xf
            x[flat] = np.where(inside | (nxt >= rises.size), xf, later)
        return self.a * x + self.b

    def _rvs(self, size, rng):
        return self.a * self.base.rvs(size, rng=rng) + self.b

    def __repr__(self):
        return f"Affine({self.base!r}, a={self.a}, b={self.b})"

