"""Spectral measures on the real line with a scipy.stats-like interface.

A :class:`Measure` is a probability measure μ = (atoms) + (absolutely continuous part). Every kind answers

``pdf(x)``        density of the continuous part (atoms excluded),
``cdf(x)``        μ((-∞, x]), atoms included,
``moment(k)``     ∫ x^k dμ,
``support()``     (lo, hi), the hull of the continuous part (``None`` if there is none),
``atoms()``       (locations, masses),
``quantile(q)``   inf{x : cdf(x) ≥ q},
``rvs(n, seed)``  iid draws,
``cauchy(z)``     G(z) = ∫ dμ(x)/(z - x)   (REFERENCE §1; Im G < 0 for Im z > 0),
``s_transform(w)`` S(w) = (1 + w)/(w M⁻¹(w)) with M(z) = zG(z) - 1,
``scale(a)``, ``shift(b)``  push-forwards by x ↦ a·x and x ↦ x + b.

Kinds here: :class:`PointMasses` (and :class:`Empirical`), :class:`GridDensity` (a piecewise-linear density on a
grid, optionally with atoms), :class:`Mixture`, :class:`Affine` push-forwards and :class:`GaussianPushforward`
(the law of f(h), h ~ N(0, q)). Closed-form laws live in :mod:`rmtnet.spectra.laws`; ⊠/⊞ products in
:mod:`rmtnet.spectra.free`.

Subclasses implement ``_g(z) -> (G, G')`` on the closed upper half-plane; everything else has a generic default
(double-exponential quadrature of the density for ``cdf``/``moment``, inversion of the cdf for ``quantile``/``rvs``)
that a subclass overrides where it knows better.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy import integrate, special

from ._checks import finite_array, probability_vector, real_scalar

__all__ = ["Measure", "PointMasses", "Empirical", "GridDensity", "Mixture", "Affine", "GaussianPushforward",
           "gaussian_pushforward", "tanh_sinh_grid"]


def tanh_sinh_grid(lo, hi, n=1601, t_max=6.0):
    """Nodes x_j on (lo, hi) and weights dx/dt for double-exponential (tanh-sinh) quadrature with step h.

    Returns ``(x, dxdt, h)``: ∫_lo^hi f ≈ h Σ f(x_j) dxdt_j, exponentially accurate even for integrable algebraic
    singularities at the ends (the x^{-s/(s+1)} hard edge of Fuss–Catalan, the 1/√ edges of arcsine laws).
    Offsets from ``lo`` are formed without cancellation, so a singular end at 0 is resolved down to 1e-300.
    """
    t = np.linspace(-t_max, t_max, n)
    s = 0.5 * np.pi * np.sinh(t)
    w = hi - lo
    left = w * special.expit(2 * s)         # x - lo
    right = w * special.expit(-2 * s)       # hi - x
    x = np.where(t <= 0, lo + left, hi - right)
    dxdt = w * 0.25 * np.pi * np.cosh(t) / np.cosh(s) ** 2
    keep = (x > lo) & (x < hi) & (dxdt > 0)
    return x[keep], dxdt[keep], t[1] - t[0]


class Measure:
    """A probability measure on ℝ. See the module docstring for the interface and conventions."""

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

    def support(self):
        """(lo, hi) of the continuous part, or ``None`` if the measure is purely atomic."""
        raise NotImplementedError

    def pdf(self, x):
        """Density of the continuous part at real x (Stieltjes inversion: ρ(x) = -Im G(x + i0)/π)."""
        x = finite_array("x", x)
        out = np.zeros_like(x)
        sup = self.support()
        if sup is None:
            return out
        inside = (x > sup[0]) & (x < sup[1])
        if np.any(inside):
            g, _ = self._g(x[inside] + 1e-300j)
            out[inside] = np.maximum(-g.imag / np.pi, 0.0)
        return out

    # ----- derived quantities ----------------------------------------------------------------------------------
    @property
    def continuous_mass(self):
        return max(0.0, 1.0 - float(np.sum(self.atoms()[1])))

    def hull(self):
        """(lo, hi) of the whole support, atoms included."""
        locs, _ = self.atoms()
        sup = self.support()
        pts = list(locs) + (list(sup) if sup is not None else [])
        return float(min(pts)), float(max(pts))

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
        """S(w) = (1 + w)/(w M⁻¹(w)), M⁻¹ on the branch continued from w → 0 (needs m₁ ≠ 0)."""
        from .transforms import s_transform
        return s_transform(self, w)

    def mean(self):
        return self.moment(1)

    def var(self):
        return self.moment(2) - self.moment(1) ** 2

    def moment(self, k):
        """∫ x^k dμ: atoms plus double-exponential quadrature of the continuous part."""
        k = _order(k)
        locs, masses = self.atoms()
        total = float(np.sum(masses * locs ** k))
        sup = self.support()
        if sup is not None:
            x, w, h = self._quad_nodes()
            total += h * float(np.sum(self._pdf_nodes * x ** k * w))
        return total

    @cached_property
    def _quad(self):
        sup = self.support()
        return tanh_sinh_grid(*sup)

    def _quad_nodes(self):
        return self._quad

    @cached_property
    def _pdf_nodes(self):
        x, _, _ = self._quad
        return self.pdf(x)

    @cached_property
    def _cdf_table(self):
        """Continuous part's cumulative integral on the quadrature nodes (cumulative Simpson in t)."""
        x, w, h = self._quad
        f = self._pdf_nodes * w
        c = integrate.cumulative_simpson(f, dx=h, initial=0.0)
        return x, np.maximum.accumulate(c)

    def cdf(self, x):
        """μ((-∞, x]): atoms at or left of x plus the integral of the density up to x."""
        x = finite_array("x", x)
        locs, masses = self.atoms()
        out = (masses[None, :] * (locs[None, :] <= x.reshape(-1, 1))).sum(axis=1).reshape(x.shape)
        sup = self.support()
        if sup is not None:
            xs, cs = self._cdf_table
            out = out + np.interp(x, xs, cs, left=0.0, right=cs[-1])
        return np.clip(out, 0.0, 1.0)

    def quantile(self, q):
        """inf{x : cdf(x) ≥ q} for q in [0, 1]."""
        q = finite_array("q", q)
        if np.any((q < 0) | (q > 1)):
            raise ValueError("q must lie in [0, 1]")
        pts = [np.asarray(self.atoms()[0])]
        sup = self.support()
        if sup is not None:
            pts.append(self._cdf_table[0])
            pts.append(np.asarray(sup, dtype=float))
        xs = np.unique(np.concatenate(pts))
        fs = self.cdf(xs)
        idx = np.clip(np.searchsorted(fs, q, side="left"), 0, len(xs) - 1)
        out = xs[idx]
        # inside the continuous part, interpolate linearly between the bracketing nodes
        prev = np.clip(idx - 1, 0, len(xs) - 1)
        f0, f1 = fs[prev], fs[idx]
        lin = (f1 > f0) & (idx > 0)
        locs = self.atoms()[0]
        is_atom = np.isin(xs[idx], locs)
        jump_left = self.cdf(xs[idx]) - self._atom_mass_at(xs[idx])
        interp = lin & ~(is_atom & (q > jump_left))
        frac = np.where(interp, (q - f0) / np.where(f1 > f0, f1 - f0, 1.0), 1.0)
        out = np.where(interp, xs[prev] + np.clip(frac, 0, 1) * (xs[idx] - xs[prev]), out)
        return out

    def _atom_mass_at(self, x):
        locs, masses = self.atoms()
        return (masses[None, :] * (locs[None, :] == np.reshape(x, (-1, 1)))).sum(axis=1).reshape(np.shape(x))

    def rvs(self, n, seed=None):
        """n iid draws by inversion of the cdf."""
        n = int(real_scalar("n", n, lo=0))
        u = np.random.default_rng(seed).uniform(size=n)
        return self.quantile(u)

    # ----- push-forwards --------------------------------------------------------------------------------------
    def scale(self, a):
        """Law of a·X (a ≠ 0). S_{aX}(w) = S_X(w)/a."""
        return Affine(self, a, 0.0)

    def shift(self, b):
        """Law of X + b."""
        return Affine(self, 1.0, b)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _order(k):
    if isinstance(k, bool) or int(k) != k or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    return int(k)


# ------------------------------------------------------------------------------------------------------------------
class PointMasses(Measure):
    """Σ_j p_j δ_{a_j}. ``masses`` must be non-negative and sum to 1."""

    def __init__(self, locations, masses):
        locs = finite_array("locations", locations).ravel()
        masses = probability_vector("masses", np.asarray(masses, dtype=float).ravel(), tol=1e-9)
        if locs.shape != masses.shape:
            raise ValueError(f"locations and masses must have the same length, got {locs.size} and {masses.size}")
        order = np.argsort(locs, kind="stable")
        locs, masses = locs[order], masses[order]
        uniq, inv = np.unique(locs, return_inverse=True)
        self._locs = uniq
        self._masses = np.bincount(inv, weights=masses)

    def atoms(self):
        return self._locs.copy(), self._masses.copy()

    def support(self):
        return None

    @property
    def continuous_mass(self):
        return 0.0

    def _g(self, z):
        z = np.asarray(z, dtype=complex)[..., None]
        d = 1.0 / (z - self._locs)
        return (self._masses * d).sum(-1), -(self._masses * d * d).sum(-1)

    def _mt(self, z):
        z = np.asarray(z, dtype=complex)[..., None]
        d = 1.0 / (z - self._locs)
        a = self._masses * self._locs
        return (a * d).sum(-1), (self._masses * z * d).sum(-1), -(a * d * d).sum(-1)

    def moment(self, k):
        k = _order(k)
        return float(np.sum(self._masses * self._locs ** k))

    def pdf(self, x):
        return np.zeros_like(finite_array("x", x))

    def rvs(self, n, seed=None):
        n = int(real_scalar("n", n, lo=0))
        return np.random.default_rng(seed).choice(self._locs, size=n, p=self._masses)

    def __repr__(self):
        return f"PointMasses(locations={self._locs.tolist()}, masses={self._masses.tolist()})"


class Empirical(PointMasses):
    """The empirical spectral measure of samples (e.g. eigenvalues): mass 1/n at each sample."""

    def __init__(self, samples):
        s = finite_array("samples", samples).ravel()
        if s.size == 0:
            raise ValueError("samples must not be empty")
        super().__init__(s, np.full(s.size, 1.0 / s.size))
        self.samples = np.sort(s)

    def cdf(self, x):
        x = finite_array("x", x)
        return np.searchsorted(self.samples, x, side="right") / self.samples.size

    def quantile(self, q):
        q = finite_array("q", q)
        if np.any((q < 0) | (q > 1)):
            raise ValueError("q must lie in [0, 1]")
        idx = np.clip(np.ceil(q * self.samples.size).astype(int) - 1, 0, self.samples.size - 1)
        return self.samples[idx]

    def __repr__(self):
        return f"Empirical(n={self.samples.size})"


# ------------------------------------------------------------------------------------------------------------------
def _bin_cauchy(z, c, w, mu):
    """Cauchy transform (per unit mass) of the linear density on [c - w/2, c + w/2] with mean ``mu``; with derivative.

    With d = z - c and r = w/(2d): G = A(r)/d + 3(mu - c) B(r)/d², A = atanh(r)/r, B = (atanh(r) - r)/r³;
    series for small |r| keep it exact as w → 0 (a point mass at c plus a dipole).
    """
    d = z - c
    r = w / (2 * d)
    r2 = r * r
    A = 1 + r2 * (1 / 3 + r2 * (1 / 5 + r2 * (1 / 7 + r2 / 9)))
    B = 1 / 3 + r2 * (1 / 5 + r2 * (1 / 7 + r2 * (1 / 9 + r2 / 11)))
    big = np.abs(r) >= 0.02
    if big.any():
        rb = r[big]
        at = np.arctanh(rb)
        A[big] = at / rb
        B[big] = (at - rb) / rb ** 3
    dm = mu - c
    q = 1.0 / (1.0 - r2)
    g = A / d + 3 * dm * B / (d * d)
    dg = -(q / (d * d) + 3 * dm * (q - B) / (d * d * d))
    return g, dg


class GridDensity(Measure):
    """A density given by its values on a grid (linear in between), plus optional atoms.

    The Cauchy transform is exact for the piecewise-linear density (closed-form logarithms), so the measure can
    sit inside the ⊠ engine even where the subordination points come close to the real axis.
    ``normalize=True`` rescales the density so that density + atoms have total mass 1; otherwise a total mass
    differing from 1 by more than 1e-6 raises ValueError.
    """

    def __init__(self, x, density, atoms=None, normalize=False):
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
            locs = finite_array("atoms locations", atoms[0]).ravel()
            masses = probability_vector("atoms masses", atoms[1], total=None)
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

    def support(self):
        return self._sup

    def pdf(self, x):
        x = finite_array("x", x)
        return np.interp(x, self.x, self.rho, left=0.0, right=0.0)

    def _g(self, z, chunk=256):
        z = np.asarray(z, dtype=complex)
        flat = z.reshape(-1)
        g = np.empty_like(flat)
        dg = np.empty_like(flat)
        x0, x1 = self.x[:-1], self.x[1:]
        r0, r1 = self.rho[:-1], self.rho[1:]
        h = x1 - x0
        slope = (r1 - r0) / h
        for s in range(0, flat.size, chunk):
            zz = flat[s:s + chunk, None]
            # ∫_{x0}^{x1} ρ(t)/(z-t) dt with ρ(t) = ρ(z) - slope (z - t), ρ(z) = r0 + slope (z - x0)
            l0, l1 = np.log(zz - x0), np.log(zz - x1)
            rz = r0 + slope * (zz - x0)
            seg = rz * (l0 - l1) - slope * h
            dseg = slope * (l0 - l1) + rz * (1.0 / (zz - x0) - 1.0 / (zz - x1))
            g[s:s + chunk] = seg.sum(-1)
            dg[s:s + chunk] = dseg.sum(-1)
        g, dg = g.reshape(z.shape), dg.reshape(z.shape)
        if self._alocs.size:
            d = 1.0 / (z[..., None] - self._alocs)
            g = g + (self._amasses * d).sum(-1)
            dg = dg - (self._amasses * d * d).sum(-1)
        return g, dg

    def moment(self, k):
        k = _order(k)
        # exact for piecewise-linear ρ: integrate t^k (r0 + slope (t - x0)) on each cell
        x0, x1 = self.x[:-1], self.x[1:]
        r0, r1 = self.rho[:-1], self.rho[1:]
        slope = (r1 - r0) / (x1 - x0)
        a = r0 - slope * x0
        p1 = (x1 ** (k + 1) - x0 ** (k + 1)) / (k + 1)
        p2 = (x1 ** (k + 2) - x0 ** (k + 2)) / (k + 2)
        total = float(np.sum(a * p1 + slope * p2))
        locs, masses = self.atoms()
        return total + float(np.sum(masses * locs ** k))

    @cached_property
    def _cdf_table(self):
        c = integrate.cumulative_trapezoid(self.rho, self.x, initial=0.0)
        return self.x, c


# ------------------------------------------------------------------------------------------------------------------
class Mixture(Measure):
    """Σ_k w_k μ_k for measures μ_k and weights w_k ≥ 0 summing to 1."""

    def __init__(self, measures, weights):
        self.components = list(measures)
        if not self.components or not all(isinstance(m, Measure) for m in self.components):
            raise ValueError("measures must be a non-empty sequence of Measure")
        self.weights = probability_vector("weights", weights, tol=1e-9)
        if self.weights.size != len(self.components):
            raise ValueError("weights must have one entry per measure")

    def _g(self, z):
        g = dg = 0.0
        for w, m in zip(self.weights, self.components):
            a, b = m._g(z)
            g, dg = g + w * a, dg + w * b
        return g, dg

    def _mt(self, z):
        out = [0.0, 0.0, 0.0]
        for w, m in zip(self.weights, self.components):
            out = [o + w * t for o, t in zip(out, m._mt(z))]
        return tuple(out)

    def atoms(self):
        locs = [m.atoms()[0] for m in self.components]
        masses = [w * m.atoms()[1] for w, m in zip(self.weights, self.components)]
        locs, masses = np.concatenate(locs), np.concatenate(masses)
        if locs.size == 0:
            return locs, masses
        uniq, inv = np.unique(locs, return_inverse=True)
        return uniq, np.bincount(inv, weights=masses)

    def support(self):
        sups = [m.support() for w, m in zip(self.weights, self.components) if w > 0 and m.support() is not None]
        if not sups:
            return None
        return min(s[0] for s in sups), max(s[1] for s in sups)

    def pdf(self, x):
        x = finite_array("x", x)
        return sum(w * m.pdf(x) for w, m in zip(self.weights, self.components))

    def cdf(self, x):
        x = finite_array("x", x)
        return sum(w * m.cdf(x) for w, m in zip(self.weights, self.components))

    def moment(self, k):
        return float(sum(w * m.moment(k) for w, m in zip(self.weights, self.components)))

    def rvs(self, n, seed=None):
        n = int(real_scalar("n", n, lo=0))
        rng = np.random.default_rng(seed)
        which = rng.choice(len(self.components), size=n, p=self.weights)
        out = np.empty(n)
        for k, m in enumerate(self.components):
            idx = np.nonzero(which == k)[0]
            if idx.size:
                out[idx] = m.rvs(idx.size, seed=rng.integers(2 ** 63))
        return out


class Affine(Measure):
    """Push-forward of ``base`` by x ↦ a·x + b (a ≠ 0): G(z) = G_base((z - b)/a)/a."""

    def __init__(self, base, a, b=0.0):
        if not isinstance(base, Measure):
            raise ValueError("base must be a Measure")
        self.base = base
        self.a = real_scalar("a", a)
        if self.a == 0:
            raise ValueError("a must be non-zero (scale(0) is δ₀: use PointMasses([0], [1]))")
        self.b = real_scalar("b", b)

    def _g(self, z):
        u = (z - self.b) / self.a
        if self.a > 0:
            g, dg = self.base._g(u)
        else:
            g, dg = self.base.cauchy(u), self.base.cauchy_prime(u)
        return g / self.a, dg / self.a ** 2

    def atoms(self):
        locs, masses = self.base.atoms()
        locs = self.a * locs + self.b
        order = np.argsort(locs)
        return locs[order], masses[order]

    def support(self):
        s = self.base.support()
        if s is None:
            return None
        e = sorted((self.a * s[0] + self.b, self.a * s[1] + self.b))
        return e[0], e[1]

    def pdf(self, x):
        x = finite_array("x", x)
        return self.base.pdf((x - self.b) / self.a) / abs(self.a)

    def cdf(self, x):
        x = finite_array("x", x)
        y = (x - self.b) / self.a
        if self.a > 0:
            return self.base.cdf(y)
        return 1.0 - self.base.cdf(y) + self.base._atom_mass_at(y)

    def moment(self, k):
        k = _order(k)
        return float(sum(special.comb(k, j) * self.a ** j * self.b ** (k - j) * self.base.moment(j)
                         for j in range(k + 1)))

    def quantile(self, q):
        q = finite_array("q", q)
        return self.a * self.base.quantile(q if self.a > 0 else 1.0 - q) + self.b

    def rvs(self, n, seed=None):
        return self.a * self.base.rvs(n, seed) + self.b

    def __repr__(self):
        return f"Affine({self.base!r}, a={self.a}, b={self.b})"


# ------------------------------------------------------------------------------------------------------------------
class GaussianPushforward(Measure):
    """The law ν of f(h), h ~ N(0, q), for a vectorised callable f (e.g. f = φ'(·)², the D² law of a layer).

    Construction (deterministic quadrature, no sampling):

    * h is restricted to [-H, H], H = 9√q (Gaussian mass outside < 1e-18), cut into ``n_panels`` panels.
      Where f is exactly constant on an h-interval of positive Gaussian mass (ReLU', hard-tanh') that interval is an
      **atom**; its ends are located by bisection to machine precision and its mass is the Gaussian probability.
    * **Moments** use ``n_gauss``-point Gauss–Legendre rules on every panel against the Gaussian density (spectral
      accuracy for smooth f).
    * The **Cauchy transform** of the continuous part replaces each panel by a linear density on the panel's image
      [min f, max f] with the panel's exact mass and mean. Its transform is closed form (:func:`_bin_cauchy`), stays
      bounded as z approaches the real axis (where a point-mass quadrature would resolve its own nodes), and is
      second-order accurate in the panel width — this is what lets the ⊠ engine take laws that are not algebraic.
    * The **density** sums φ_q(h)/|f'(h)| over the preimages of x, located on the panels and Newton-polished.
    """

    def __init__(self, f, q, n_panels=1200, n_gauss=8, width=9.0):
        if not callable(f):
            raise ValueError("f must be a callable h -> f(h) acting elementwise on arrays")
        self.f = f
        self.q = real_scalar("q", q, lo=0, lo_open=True)
        if isinstance(n_panels, bool) or int(n_panels) != n_panels or n_panels < 8:
            raise ValueError(f"n_panels must be an integer ≥ 8, got {n_panels!r}")
        sd = np.sqrt(self.q)
        H = width * sd
        h = np.linspace(-H, H, int(n_panels) + 1)
        fh = np.asarray(f(h), dtype=float)
        if fh.shape != h.shape or not np.all(np.isfinite(fh)):
            raise ValueError("f must map a float array to a finite float array of the same shape")
        self._build_atoms(h, fh)
        nodes, weights = np.polynomial.legendre.leggauss(n_gauss)
        flat = np.diff(fh) == 0
        a, b = self._trim_panels(h[:-1][~flat], h[1:][~flat])
        self._pa, self._pb = a, b
        mid, half = (a + b) / 2, (b - a) / 2
        hq = mid[:, None] + half[:, None] * nodes[None, :]
        wq = half[:, None] * weights[None, :] * _gauss_pdf(hq, self.q)
        fq = np.asarray(f(hq.ravel()), dtype=float).reshape(hq.shape)
        fa, fb = np.asarray(f(a), dtype=float), np.asarray(f(b), dtype=float)
        self._fa, self._fb = fa, fb
        # exact panel masses; Gauss–Legendre moments rescaled to them
        pm = special.ndtr(b / sd) - special.ndtr(a / sd)
        wq = wq * (pm / np.where(wq.sum(1) > 0, wq.sum(1), 1.0))[:, None]
        tot = pm.sum() + self._atom_masses.sum()
        self._wq, self._fq = (wq / tot).ravel(), fq.ravel()
        self._atom_masses = self._atom_masses / tot
        pm = pm / tot
        lo = np.minimum(np.minimum(fa, fb), fq.min(1))
        hi = np.maximum(np.maximum(fa, fb), fq.max(1))
        mean = (wq * fq).sum(1) / np.where(wq.sum(1) > 0, wq.sum(1), 1.0)
        keep = pm > 0
        self._bc, self._bw, self._bm, self._bp = ((lo + hi) / 2)[keep], (hi - lo)[keep], mean[keep], pm[keep]
        self._sup = None if not keep.any() else (float(lo[keep].min()), float(hi[keep].max()))

    def _build_atoms(self, h, fh, min_mass=1e-12):
        """Exactly flat runs of f with Gaussian mass ≥ ``min_mass`` become atoms."""
        flat = np.diff(fh) == 0
        sd = np.sqrt(self.q)
        locs, masses, intervals = [], [], []
        j, n = 0, flat.size
        while j < n:
            if not flat[j]:
                j += 1
                continue
            k = j
            while k + 1 < n and flat[k + 1]:
                k += 1
            val = fh[j]
            same = lambda t: float(np.asarray(self.f(np.array([t])), dtype=float)[0]) == val  # noqa: E731
            lo = h[j] if j == 0 else _bisect_edge(h[j - 1], h[j], same)
            hi = h[k + 1] if k + 1 == n else _bisect_edge(h[k + 2], h[k + 1], same)
            mass = special.ndtr(hi / sd) - special.ndtr(lo / sd)
            if j == 0:
                mass += special.ndtr(lo / sd)        # the flat run extends into the Gaussian tail
            if k + 1 == n:
                mass += special.ndtr(-hi / sd)
            if mass >= min_mass:
                intervals.append((lo, hi))
                locs.append(val)
                masses.append(mass)
            j = k + 1
        self._atom_intervals = intervals
        locs, masses = np.asarray(locs, dtype=float), np.asarray(masses, dtype=float)
        if locs.size:
            uniq, inv = np.unique(locs, return_inverse=True)
            self._atom_locs, self._atom_masses = uniq, np.bincount(inv, weights=masses)
        else:
            self._atom_locs, self._atom_masses = locs, masses

    def _trim_panels(self, a, b):
        """Cut the parts of non-flat panels that lie inside an atom's h-interval."""
        for lo, hi in self._atom_intervals:
            a = np.where((a < hi) & (b > hi), np.maximum(a, hi), a)
            b = np.where((a < lo) & (b > lo), np.minimum(b, lo), b)
        keep = b > a
        return a[keep], b[keep]

    def atoms(self):
        return self._atom_locs.copy(), self._atom_masses.copy()

    def support(self):
        return self._sup

    def _g(self, z, chunk=64):
        z = np.asarray(z, dtype=complex)
        flat = z.reshape(-1)
        g = np.empty_like(flat)
        dg = np.empty_like(flat)
        for s in range(0, flat.size, chunk):
            gb, dgb = _bin_cauchy(flat[s:s + chunk, None], self._bc, self._bw, self._bm)
            g[s:s + chunk] = gb @ self._bp
            dg[s:s + chunk] = dgb @ self._bp
        g, dg = g.reshape(z.shape), dg.reshape(z.shape)
        if self._atom_locs.size:
            d = 1.0 / (z[..., None] - self._atom_locs)
            g = g + (self._atom_masses * d).sum(-1)
            dg = dg - (self._atom_masses * d * d).sum(-1)
        return g, dg

    def moment(self, k):
        k = _order(k)
        return float(np.sum(self._wq * self._fq ** k) + np.sum(self._atom_masses * self._atom_locs ** k))

    def pdf(self, x):
        """ρ(x) = Σ_{h: f(h) = x} φ_q(h)/|f'(h)| over the non-flat panels."""
        x = finite_array("x", x)
        flat = x.ravel()
        out = np.zeros_like(flat)
        fa, fb = self._fa, self._fb
        lo, hi = np.minimum(fa, fb), np.maximum(fa, fb)
        for s in range(0, flat.size, 256):
            xx = flat[s:s + 256, None]
            rows, cols = np.nonzero((xx >= lo) & (xx < hi))
            if rows.size == 0:
                continue
            a, b = self._pa[cols], self._pb[cols]
            t = (xx[rows, 0] - fa[cols]) / (fb[cols] - fa[cols])
            hh = a + t * (b - a)
            for _ in range(4):      # Newton polish of f(h) = x within the panel
                d = _derivative(self.f, hh)
                with np.errstate(all="ignore"):
                    step = np.where(d != 0, (np.asarray(self.f(hh)) - xx[rows, 0]) / d, 0.0)
                hh = np.clip(hh - step, a, b)
            d = np.abs(_derivative(self.f, hh))
            contrib = np.where(d > 0, _gauss_pdf(hh, self.q) / np.where(d > 0, d, 1.0), 0.0)
            np.add.at(out, s + rows, contrib)
        return out.reshape(x.shape)

    def rvs(self, n, seed=None):
        n = int(real_scalar("n", n, lo=0))
        h = np.random.default_rng(seed).normal(0.0, np.sqrt(self.q), size=n)
        return np.asarray(self.f(h), dtype=float)

    def __repr__(self):
        return f"GaussianPushforward(f={getattr(self.f, '__name__', self.f)!r}, q={self.q})"


def gaussian_pushforward(f, q, **kwargs):
    """The law of f(h) for h ~ N(0, q), as a :class:`GaussianPushforward` measure (quadrature, no sampling).

    Example: the D² law of a tanh layer at pre-activation variance q is
    ``gaussian_pushforward(lambda h: (1 - np.tanh(h)**2)**2, q)``.
    """
    return GaussianPushforward(f, q, **kwargs)


def _gauss_pdf(h, q):
    return np.exp(-0.5 * h * h / q) / np.sqrt(2 * np.pi * q)


def _derivative(f, h, rel=1e-6):
    step = rel * np.maximum(1.0, np.abs(h))
    return (np.asarray(f(h + step), dtype=float) - np.asarray(f(h - step), dtype=float)) / (2 * step)


def _bisect_edge(outside, inside, same, iters=64):
    """Point between ``outside`` (f ≠ value) and ``inside`` (f == value) where the flat interval ends."""
    for _ in range(iters):
        mid = 0.5 * (outside + inside)
        if mid == outside or mid == inside:
            break
        if same(mid):
            inside = mid
        else:
            outside = mid
    return inside
