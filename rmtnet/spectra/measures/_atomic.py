"""Atomic and grid kinds: :class:`PointMasses` and :class:`Empirical` (atoms only), :class:`GridDensity` (a
piecewise-linear density on a grid, optionally with atoms) and :class:`Tabulated` (a law frozen onto such a grid)."""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy import integrate

from ... import backend as B
from rmtnet._validation import boolean, finite_array, integer_at_least, probability_vector, real_scalar
from ._base import Measure
from ._cauchy import atom_cauchy, binned_cauchy
from ..continuation import k_section
from ._quadrature import adaptive_tanh_sinh, apply_elementwise, tanh_sinh_pieces


def _rounding_of_mean(centred, mass):
    """δ = ∫ (x − m) dμ / M for a float m next to the mean and M = ∫ dμ (1 up to the rounding of the masses): the
    centre m + δ is the mean of the normalised law to twice the float precision, which a law a few ulp of m wide
    needs (its central moments are those of μ/M, equal to μ's to the rounding of M)."""
    return centred / mass


class PointMasses(Measure):
    """Σ_j p_j δ_{a_j}. ``masses`` must be non-negative and sum to 1.

    Parameters
    ----------
    locations : array_like
        The atoms a_j (finite; repeated locations are merged, their masses added).
    masses : array_like
        The masses p_j ≥ 0, summing to 1.

    Examples
    --------
    ½δ₀ + ½δ₂ has mean 1, variance 1 and G(i) = ½/i + ½/(i - 2) = -0.2 - 0.6i:

    >>> pm = PointMasses([2.0, 0.0, 2.0], [0.25, 0.5, 0.25])
    >>> pm
    PointMasses(locations=[0.0, 2.0], masses=[0.5, 0.5])
    >>> print(f"{pm.mean():.6f} {pm.var():.6f} {complex(pm.cauchy(1j)):.6f}")
    1.000000 1.000000 -0.200000-0.600000j
    """

    def __init__(self, locations, masses):
        locs = finite_array("locations", locations).ravel()
        masses = probability_vector("masses", finite_array("masses", masses).ravel(), tol=1e-9)
        if locs.shape != masses.shape:
            raise ValueError(f"locations and masses must have the same length, got {locs.size} and {masses.size}")
        order = np.argsort(locs, kind="stable")
        locs, masses = locs[order], masses[order]
        uniq, inv = np.unique(locs, return_inverse=True)
        self._locs = uniq
        self._masses = np.bincount(inv, weights=masses)

    def atoms(self):
        return self._locs.copy(), self._masses.copy()

    def continuous_support(self):
        return None

    @property
    def continuous_mass(self):
        return 0.0

    def _g(self, z):
        return atom_cauchy(B.as_array(z, complex), self._locs, self._masses)

    def _mt(self, z):
        z = B.as_array(z, complex)[..., None]
        locs, masses = B.as_array(self._locs, like=z), B.as_array(self._masses, like=z)
        d = 1.0 / (z - locs)
        a = masses * locs
        return (a * d).sum(-1), (masses * z * d).sum(-1), -(a * d * d).sum(-1)

    def _moment(self, k):
        return float(np.sum(self._masses * self._locs ** k))

    def _var(self):
        """Σ p (x − mean)², centred first (no cancellation for atoms far from 0)."""
        return self._central_moment(2)

    def _central_moment(self, k):
        """Σ p (x − m)^k about the mean, held as m + δ with m = Σ p x and δ = Σ p (x − m) (the rounding of m, which
        is not negligible against a width of a few ulp of m): x − m is exact next to m, then δ is taken off."""
        m = float(np.sum(self._masses * self._locs))
        delta = _rounding_of_mean(float(np.sum(self._masses * (self._locs - m))), float(np.sum(self._masses)))
        return float(np.sum(self._masses * ((self._locs - m) - delta) ** k))

    def _pdf(self, x):
        return np.zeros_like(x)

    def _rvs(self, size, rng):
        return rng.choice(self._locs, size=size, p=self._masses)

    def __repr__(self):
        return f"PointMasses(locations={self._locs.tolist()}, masses={self._masses.tolist()})"


class Empirical(PointMasses):
    """The empirical spectral measure of samples (e.g. eigenvalues): mass 1/n at each sample.

    Parameters
    ----------
    samples : array_like
        The samples (finite, at least one); kept sorted in :attr:`samples`.

    Examples
    --------
    Samples 1, 2, 2, 3: mean 2, variance (1 + 0 + 0 + 1)/4 = 0.5, cdf(2) = 3/4:

    >>> e = Empirical([3.0, 1.0, 2.0, 2.0])
    >>> print(e, f"{e.mean():.6f} {e.var():.6f} {float(e.cdf(2.0)):.6f}")
    Empirical(n=4) 2.000000 0.500000 0.750000
    >>> e.atoms()[1].tolist()
    [0.25, 0.5, 0.25]
    """

    def __init__(self, samples):
        s = finite_array("samples", samples).ravel()
        if s.size == 0:
            raise ValueError("samples must not be empty")
        super().__init__(s, np.full(s.size, 1.0 / s.size))
        self.samples = np.sort(s)

    def _cdf(self, x):
        return np.searchsorted(self.samples, x, side="right") / self.samples.size

    def _ppf(self, q):
        idx = np.clip(np.ceil(q * self.samples.size).astype(int) - 1, 0, self.samples.size - 1)
        return self.samples[idx]

    def __repr__(self):
        return f"Empirical(n={self.samples.size})"



class GridDensity(Measure):
    """A density given by its values on a grid (linear in between), plus optional atoms.

    The Cauchy transform is exact for the piecewise-linear density (closed-form logarithms), so the measure can
    sit inside the ⊠ engine even where the subordination points come close to the real axis.
    ``normalize=True`` rescales the density so that density + atoms have total mass 1; otherwise a total mass
    differing from 1 by more than 1e-6 raises ValueError.

    Parameters
    ----------
    x : array_like
        The grid, strictly increasing, at least 2 points.
    density : array_like
        ρ(x) ≥ 0 on the grid (0 outside it).
    atoms : tuple of (array_like, array_like), optional
        The atoms as ``(locations, masses)``.
    normalize : bool, optional
        Rescale the density so that the total mass is 1.

    Examples
    --------
    ρ(x) = 2x on [0, 1] (exact, being linear): mean 2/3, second moment 1/2, cdf(½) = ¼:

    >>> g = GridDensity([0.0, 0.25, 0.5, 0.75, 1.0], [0.0, 0.5, 1.0, 1.5, 2.0])
    >>> print(f"{g.mean():.6f} {g.moment(2):.6f} {float(g.cdf(0.5)):.6f}")
    0.666667 0.500000 0.250000

    With an atom ½δ₂ and ``normalize=True`` the uniform part gets mass ½, so the mean is ¼ + 1:

    >>> g2 = GridDensity([0.0, 1.0], [1.0, 1.0], atoms=([2.0], [0.5]), normalize=True)
    >>> print(f"{g2.mean():.6f} {g2.continuous_mass:.6f}")
    1.250000 0.500000
    """

    def __init__(self, x, density, atoms=None, normalize=False):
        normalize = boolean("normalize", normalize)
        x = finite_array("x", x).ravel()
        rho = finite_array("density", density).ravel()
        if x.size < 2 or x.shape != rho.shape:
            raise ValueError("x and density must be 1-d of equal length ≥ 2")
        if np.any(np.diff(x) <= 0):
            raise ValueError("x must be strictly increasing")
        if np.any(rho < 0):
            raise ValueError("density must be non-negative")
        if atoms is None:
            locs, masses = np.empty(0), np.empty(0)
        else:
            if not isinstance(atoms, (tuple, list)) or len(atoms) != 2:
                raise ValueError(f"atoms must be a pair (locations, masses) of equal-length arrays, got {atoms!r}")
            locs = finite_array("atoms locations", atoms[0]).ravel()
            masses = probability_vector("atoms masses", np.ravel(atoms[1]), total=None)
            if locs.shape != masses.shape:
                raise ValueError(f"atoms must be a pair (locations, masses) of equal length, got {locs.size} "
                                 f"locations and {masses.size} masses")
        cont = float(np.trapezoid(rho, x))
        if normalize:
            target = 1.0 - masses.sum()
            if target < 0 or cont <= 0:
                raise ValueError("cannot normalize: atoms carry mass > 1 or the density vanishes")
            rho = rho * (target / cont)
            cont = target
        elif abs(cont + masses.sum() - 1.0) > 1e-6:
            raise ValueError(f"density + atoms must integrate to 1, got {cont + masses.sum()!r}")
        self.x, self.rho = x, rho
        order = np.argsort(locs)
        self._alocs, self._amasses = locs[order], masses[order]
        self._cmass = cont
        nz = np.nonzero(rho > 0)[0]
        self._sup = None if nz.size == 0 else (float(x[max(nz[0] - 1, 0)]), float(x[min(nz[-1] + 1, x.size - 1)]))

    def atoms(self):
        return self._alocs.copy(), self._amasses.copy()

    def continuous_support(self):
        return self._sup

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """tanh-sinh cell by cell over the cells that carry density (ρ is linear inside each, bounded at the ends)."""
        live = (self.rho[:-1] > 0) | (self.rho[1:] > 0)
        cells = list(zip(self.x[:-1][live], self.x[1:][live]))
        return tanh_sinh_pieces(lambda x: apply_elementwise(func, x) * self.pdf(x), cells, lo, hi, rtol, atol, self)

    def _pdf(self, x):
        return np.interp(x, self.x, self.rho, left=0.0, right=0.0)

    @cached_property
    def _bins(self):
        """The cells as bins for :func:`binned_cauchy`: centre, width, mean of the linear density, mass."""
        x0, x1 = self.x[:-1], self.x[1:]
        r0, r1 = self.rho[:-1], self.rho[1:]
        w = x1 - x0
        mass = 0.5 * w * (r0 + r1)
        keep = mass > 0
        x0, w, r0, r1, mass = x0[keep], w[keep], r0[keep], r1[keep], mass[keep]
        mean = x0 + w * (r0 + 2 * r1) / (3 * (r0 + r1))          # centroid of the trapezoid
        return x0 + w / 2, w, mean, mass

    def _g(self, z):
        # the cell-by-cell closed form written with the small-cell series of _bin_cauchy: no cancellation between
        # log(z - x0) and log(z - x1) for the tiny cells at a tanh-sinh table's ends, nor far from the support
        return binned_cauchy(z, *self._bins, self._alocs, self._amasses)

    def _moment(self, k):
        return self._moment_about(k, 0.0)

    def _moment_about(self, k, c, c_low=0.0):
        """∫ (t − c)^k dμ, exact for piecewise-linear ρ: the integrand (t − c)^k·(linear) has degree k + 1, which
        Gauss–Legendre with ⌈(k + 2)/2⌉ nodes per cell integrates exactly; unlike expanding the polynomial, this stays
        accurate for the tiny cells at a tanh-sinh table's ends, and t − c = (x₀ − c) + h·s does not cancel for a
        grid far from 0 (c its mean; c + c_low the centre to twice the float precision)."""
        s, ws = np.polynomial.legendre.leggauss((k + 1) // 2 + 1)
        s, ws = 0.5 * (s + 1), 0.5 * ws
        x0, h = self.x[:-1, None], np.diff(self.x)[:, None]
        r0, r1 = self.rho[:-1, None], self.rho[1:, None]
        t = ((x0 - c) - c_low) + h * s
        total = float(np.sum(h * ws * (r0 * (1 - s) + r1 * s) * t ** k))
        locs, masses = self.atoms()
        return total + float(np.sum(masses * ((locs - c) - c_low) ** k))

    def _central_moment(self, k):
        """About the mean m₁ + δ, δ = ∫ (t − m₁) dμ the rounding of m₁ (not negligible against a narrow grid)."""
        m = self._moment_about(1, 0.0)
        return self._moment_about(k, m, _rounding_of_mean(self._moment_about(1, m), self._moment_about(0, 0.0)))

    def _panels(self):
        return [] if self._sup is None else [(float(self.x[0]), float(self.x[-1]))]

    def _own_cdf(self):
        """The table's cdf is exact for the piecewise-linear density (:attr:`_cdf_table`)."""
        return True

    @cached_property
    def _cdf_table(self):
        """Exact: the trapezoid rule integrates the piecewise-linear density, and the Hermite interpolant of
        (C, ρ) is the exact piecewise-quadratic C between the nodes."""
        return self.x, integrate.cumulative_trapezoid(self.rho, self.x, initial=0.0), self.rho


def _band_start(pdf, x, rho, end, side, jump=1e3, near=1e-3, rounds=6, points=16):
    """Where the density of a panel really starts next to its end ``end`` (``side`` +1: the left end, −1: the
    right one), given its values ρ on the tanh-sinh nodes x. A band edge that a solver located a little off the
    band (outside it) leaves the nodes clustered next to a point of no density, while the density rises, at an edge
    singular like |x − e|^β (β < 0), between two nodes further in: there ρ jumps by more than ``jump`` times
    everything nearer the end (the solver's rounding-level values at most), to a value holding mass (ρ·|x − end|
    above 1e-8 of the panel's), between two nodes a factor < 2 apart in distance, which no power law does. Where
    such a jump lies within ``near`` of the panel's width of the end, the edge e is bracketed there and found by
    k-section on ρ > 0 (``rounds`` rounds of ``points`` points); otherwise ``end`` is returned."""
    order = np.argsort(side * (x - end))
    d, r = side * (x[order] - end), rho[order]
    width = float(np.max(d)) if d.size else 0.0
    mass = abs(float(np.trapezoid(rho, x)))
    below = np.maximum.accumulate(r)                       # the largest value between the end and each node
    for k in range(1, d.size):
        if d[k] > near * width:
            break
        if r[k] > jump * below[k - 1] and r[k] * d[k] > 1e-8 * mass and d[k] < 2 * d[k - 1]:
            level = 1e-6 * r[k]
            out, _ = k_section(lambda t: np.asarray(pdf(t)) > level, [end + side * d[k - 1]],
                               [end + side * d[k]], points=points, rounds=rounds)
            return float(out[0])
    return end


class Tabulated(GridDensity):
    """A lazy law frozen onto a table of its density: piecewise linear through (x_i, ρ(x_i)) on tanh-sinh nodes of
    each band (clustered at the band ends, where the density changes fastest), plus its atoms; the moments are still
    taken exactly from the source.

    Recursions that feed a law back into the engine after an affine map (the Fisher recursion
    μ_{ℓ+1} = (q + σ²·)_*(ν ⊠ μ_ℓ), the conjugate-kernel map) would otherwise nest one Newton solve inside another
    at every level, at a cost exponential in depth; tabulated, each level costs one density table and the next
    level sees the closed-form Cauchy transform of :class:`GridDensity`. ``n0`` is the initial tanh-sinh step
    count per panel, refined (step halved) until the panel's mass changes by less than ``rtol``: ~2·n0 to a few
    thousand nodes per panel.

    The panels are the source's (``_panels``: its bands, split at sharp interior minima), so every band edge is
    a panel end where the nodes cluster, and a gap between bands holds no density (two zero nodes at its ends).
    Between the nodes the density is linear: its interpolation error is O(h²) in the node spacing where ρ is
    smooth (relative ~(Δx/d)²/8 at a distance d from a square-root edge); next to a singular end (ρ ∝ |x − e|^β,
    β < 0) the chords over-estimate the mass, and ``normalize`` rescales the table to 1 − atoms (a relative change
    of 7e-5 for the ReLU–orthogonal depth-4 law, falling as h²). An end that the source
    placed a little outside a band that rises singularly (a jump of ρ by > 10³ between neighbouring nodes near the
    end) is moved to where the density starts, found by k-section on ρ > 0, and that panel is tabulated again.

    Parameters
    ----------
    source : Measure
        The law to freeze (its ``_panels`` give the bands, its atoms are kept).
    n0 : int, optional
        Initial tanh-sinh step count per band.
    rtol : float, optional
        Relative change of each band's mass at which refinement stops.

    Examples
    --------
    The semicircle's cdf at 1 is ½ + √3/(4π) + 1/6 = 0.804499; the table agrees to its O(h²):

    >>> from rmtnet.spectra.laws import Semicircle
    >>> tb = Tabulated(Semicircle(1.0))
    >>> print(tb, f"{tb.moment(2):.6f} {float(tb.cdf(1.0)):.4f}")
    tabulate(Semicircle(var=1, loc=0)) 1.000000 0.8045
    """

    def __init__(self, source, n0=200, rtol=1e-9):
        n0 = integer_at_least("n0", n0, 1)
        rtol = real_scalar("rtol", rtol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        xs, rs, prev = [], [], None
        for a, b in source._panels():
            x, _, fx, _ = adaptive_tanh_sinh(source.pdf, a, b, rtol=rtol, n0=n0, min_level=1)
            a2, b2 = _band_start(source.pdf, x, fx, a, +1), _band_start(source.pdf, x, fx, b, -1)
            if (a2, b2) != (a, b):                          # an end placed off the band: tabulate from where it starts
                x, _, fx, _ = adaptive_tanh_sinh(source.pdf, a2, b2, rtol=rtol, n0=n0, min_level=1)
            if prev is not None and a > prev:               # a gap between two bands: no density across it
                xs.append(np.array([prev, a]))
                rs.append(np.zeros(2))
            xs.append(x)
            rs.append(fx)
            prev = b
        x, rho = np.concatenate(xs), np.concatenate(rs)
        keep = np.concatenate([[True], np.diff(x) > 0])
        super().__init__(x[keep], rho[keep], atoms=source.atoms(), normalize=True)
        self.source = source

    def _moment(self, k):
        return self.source.moment(k)

    def _var(self):
        return self.source.var()

    def _central_moment(self, k):
        return self.source.central_moment(k)

    def __repr__(self):
        return f"tabulate({self.source!r})"


def tabulate(mu, n0=200, rtol=1e-9):
    """μ as a :class:`Tabulated` grid law (``n0``, ``rtol`` as there); purely atomic laws come back as :class:`PointMasses`, grid laws as they
    are.

    Parameters
    ----------
    mu : Measure
        The law to tabulate.
    n0 : int, optional
        Initial tanh-sinh step count per band.
    rtol : float, optional
        Relative change of each band's mass at which refinement stops.

    Returns
    -------
    Measure
        A :class:`Tabulated` law, a :class:`PointMasses` (no continuous part) or ``mu`` itself (a grid law).

    Examples
    --------
    The semicircle's density at ½ is √3.75/(2π) = 0.308202 (the table matches to 1e-5):

    >>> from rmtnet.spectra.laws import Bernoulli, Semicircle
    >>> tb = tabulate(Semicircle(1.0))
    >>> print(type(tb).__name__, f"{float(tb.pdf(0.5)):.4f}")
    Tabulated 0.3082
    >>> tabulate(Bernoulli(0.5))
    PointMasses(locations=[0.0, 1.0], masses=[0.5, 0.5])
    """
    if not isinstance(mu, Measure):
        raise ValueError(f"mu must be a Measure, got {type(mu).__name__}")
    n0 = integer_at_least("n0", n0, 1)
    rtol = real_scalar("rtol", rtol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if isinstance(mu, GridDensity):
        return mu
    if mu.continuous_support() is None or mu.continuous_mass <= 1e-14:
        locs, masses = mu.atoms()
        return PointMasses(locs, masses / masses.sum())
    return Tabulated(mu, n0, rtol)

