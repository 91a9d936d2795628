"""Closed-form laws: Marchenko–Pastur, semicircle, Fuss–Catalan, Bernoulli, arcsine, point masses.

Parameters follow scipy.stats where it has one: ``scale`` multiplies the variable (the law of c·X), ``loc`` shifts
it; each is kept under its own name as an attribute (``MarchenkoPastur(0.5, scale=2).scale == 2``)."""
from __future__ import annotations

import numbers
import warnings
from functools import cached_property

import numpy as np
from scipy import integrate, special

from .. import backend as B
from rmtnet._validation import finite_array, integer_at_least, real_scalar, scalar, whole_number
from .measures import Measure, PointMasses
from .measures._quadrature import apply_elementwise, tanh_sinh_pieces

__all__ = ["MarchenkoPastur", "Semicircle", "FussCatalan", "Bernoulli", "PointMasses", "Arcsine"]


def _sqrt_cut(z, a, b):
    """√((z - a)(z - b)) with the cut on [a, b] and ~ z at infinity (for Im z ≥ 0 and real z off [a, b])."""
    return np.sqrt(z - a) * np.sqrt(z - b)



def _integral(name, value):
    """An integral real (3.0) as an int ≥ 1, or ValueError naming ``name`` (NaN, inf, 2.5, strings, bools)."""
    return whole_number(name, value, 1)

def _finite_edges(edges, names, *values):
    """The support's ends, or ValueError naming the parameters when they overflow float64."""
    if not all(np.isfinite(e) for e in edges):
        raise ValueError(f"{names} = {', '.join(repr(v) for v in values)} put the support's ends beyond float64 "
                         f"(got {tuple(float(e) for e in edges)})")
    return tuple(float(e) for e in edges)


class MarchenkoPastur(Measure):
    """Marchenko–Pastur law of σ²·XXᵀ, X N×M with iid entries of variance 1/M, ratio λ = N/M (Marchenko & Pastur
    1967, Math. USSR-Sbornik 1, 457–483). ``scale`` = σ² is scipy's scale parameter: MarchenkoPastur(λ, σ²) is the law
    of σ²·W for W ~ MarchenkoPastur(λ), and :attr:`scale` holds it.

    Density √((λ₊ - x)(x - λ₋))/(2πλσ²x) on [λ₋, λ₊], λ± = σ²(1 ± √λ)², plus an atom 1 - 1/λ at 0 when λ > 1
    (then :meth:`support` is [0, λ₊] and :meth:`continuous_support` [λ₋, λ₊]). Moments σ^{2k} Σ_j N(k, j) λ^{j-1}
    (Narayana numbers; Bai & Silverstein 2010, Spectral Analysis of Large Dimensional Random Matrices, 2nd ed.,
    Springer, ch. 3), so mean σ² and variance λσ⁴; S(w) = 1/(σ²(1 + λw)).

    Parameters
    ----------
    ratio : float
        λ = N/M > 0.
    scale : float, optional
        σ² > 0, the variance scale (the law of σ²·W).

    Examples
    --------
    Mean σ² = 2, variance λσ⁴ = 0.5·4 = 2, edges σ²(1 ± √λ)² = 3 ∓ 2√2; for λ = 2 the atom at 0 has mass 1 - 1/λ:

    >>> mp = MarchenkoPastur(0.5, scale=2.0)
    >>> print(f"{mp.mean():.6f} {mp.var():.6f}")
    2.000000 2.000000
    >>> print(f"{mp.edges[0]:.6f} {mp.edges[1]:.6f}")
    0.171573 5.828427
    >>> locs, masses = MarchenkoPastur(2.0).atoms()
    >>> locs.tolist(), masses.round(6).tolist()
    ([0.0], [0.5])
    """

    TINY_RATIO = 1e-6     # below it the law is computed in u = (x − σ²(1 + λ))/(2σ²√λ) (:meth:`_tiny_cdf`)

    def __init__(self, ratio, scale=1.0):
        self.ratio = real_scalar("ratio", ratio, lo=0, lo_open=True)
        self.scale = real_scalar("scale", scale, lo=0, lo_open=True)
        r = np.sqrt(self.ratio)
        if self._tiny:       # σ²(1 ∓ √λ)² as σ²(1 + λ ∓ 2√λ), rounded outwards: 1 − √λ rounds to 1 for λ < 1e-32
            edges = (np.nextafter(self.scale * (1 + self.ratio - 2 * r), -np.inf),
                     np.nextafter(self.scale * (1 + self.ratio + 2 * r), np.inf))
        else:
            edges = (self.scale * (1 - r) ** 2, self.scale * (1 + r) ** 2)
        self.edges = _finite_edges(edges, "ratio and scale", ratio, scale)

    @property
    def _tiny(self):
        return self.ratio < self.TINY_RATIO

    def _u(self, x):
        """u = (x − σ²(1 + λ))/(2σ²√λ) ∈ [−1, 1] on the band, x − σ² first (exact next to σ²)."""
        return ((x - self.scale) - self.scale * self.ratio) / (2 * self.scale * np.sqrt(self.ratio))

    def _u_weight(self, t):
        """The law's density in u = t, (2/π)√(1 − t²)/(1 + λ + 2√λ t): a semicircle tilted by 1/x."""
        return 2.0 / np.pi * np.sqrt(np.maximum(1.0 - t * t, 0.0)) / (1 + self.ratio + 2 * np.sqrt(self.ratio) * t)

    _GL = np.polynomial.legendre.leggauss(32)

    def _tiny_cdf(self, u):
        """μ(u' ≤ u) = (2/π)∫_{arccos u}^{π} sin²θ/(1 + λ + 2√λ cos θ) dθ by 32-point Gauss–Legendre in θ (t = cos θ):
        the integrand is analytic, its poles at cos θ = −(1 + λ)/(2√λ) < −500 for λ < 10⁻⁶ (geometric convergence
        far below 1e-16). Used below :attr:`TINY_RATIO`, where the band 4σ²√λ is too narrow for a table in x (for
        λ ≲ 10⁻³² it is a few ulp of σ² wide)."""
        lo = np.arccos(np.clip(u, -1.0, 1.0))
        t, w = self._GL
        th = lo[..., None] + 0.5 * (np.pi - lo[..., None]) * (t + 1.0)
        val = np.sin(th) ** 2 / (1 + self.ratio + 2 * np.sqrt(self.ratio) * np.cos(th))
        return np.where(u >= 1, 1.0, np.clip(0.5 * (np.pi - lo) * (val @ w) * 2.0 / np.pi, 0.0, 1.0))

    def _cdf(self, x):
        if not self._tiny:
            return super()._cdf(x)
        return self._tiny_cdf(self._u(x))

    def _own_cdf(self):
        return self._tiny

    def _ppf(self, q):
        """Below :attr:`TINY_RATIO`, bisection in u on :meth:`_tiny_cdf` (to 1e-15 of the band)."""
        if not self._tiny:
            return super()._ppf(q)
        lo, hi = np.full(q.shape, -1.0), np.full(q.shape, 1.0)
        for _ in range(52):
            mid = 0.5 * (lo + hi)
            below = self._tiny_cdf(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        x = self.scale * (1 + self.ratio) + 2 * self.scale * np.sqrt(self.ratio) * hi
        return np.clip(x, *self.edges)

    def _entropy(self):
        """Below :attr:`TINY_RATIO`, log(2σ²√λ) − ∫ w log w du with w the density in u (:meth:`_u_weight`), by
        quadrature in θ (u = cos θ): −ρ log ρ in x cannot be sampled inside a band a few ulp wide."""
        if not self._tiny:
            return super()._entropy()
        def minus_w_log_w(theta):
            w = self._u_weight(np.cos(theta))
            return -w * np.log(np.where(w > 0, w, 1.0)) * np.sin(theta)
        inner = integrate.quad(minus_w_log_w, 0.0, np.pi, epsabs=1e-13, epsrel=1e-12)[0]
        return float(inner + np.log(2 * self.scale * np.sqrt(self.ratio)))

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """Below :attr:`TINY_RATIO`, tanh-sinh in θ (x = σ²(1 + λ + 2√λ cos θ)) on the part of [0, π] in [lo, hi]."""
        if not self._tiny:
            return super()._expect_continuous(func, lo, hi, rtol, atol)
        th = sorted(float(np.arccos(np.clip(self._u(np.float64(v)), -1.0, 1.0))) for v in (max(lo, self.edges[0]),
                                                                                             min(hi, self.edges[1])))
        r = np.sqrt(self.ratio)

        def g(theta):
            x = self.scale * (1 + self.ratio + 2 * r * np.cos(theta))
            return apply_elementwise(func, x) * np.sin(theta) ** 2 * 2.0 / np.pi / (1 + self.ratio + 2 * r * np.cos(theta))
        return tanh_sinh_pieces(g, [tuple(th)], -np.inf, np.inf, rtol, atol, self) if th[1] > th[0] else 0.0

    def atoms(self):
        if self.ratio > 1:
            return np.array([0.0]), np.array([1.0 - 1.0 / self.ratio])
        return np.empty(0), np.empty(0)

    def continuous_support(self):
        return self.edges

    def _g(self, z):
        # G = (z - c - R)/(2λσ²z) with c = σ²(1 - λ), R = √((z - λ₋)(z - λ₊)); written as 2/(z - c + R), which
        # has no cancellation for large |z|.
        z = B.as_array(z, complex)
        a, b = self.edges
        c = self.scale * (1 - self.ratio)
        R = _sqrt_cut(z, a, b)
        dR = (2 * z - a - b) / (2 * R)
        d = z - c + R
        return 2.0 / d, -2.0 * (1 + dR) / (d * d)

    def _mt(self, z):
        # M = zG - 1 = (z + c - R)/(z - c + R), with z - R = ((a + b)z - ab)/(z + R) to avoid cancellation
        z = B.as_array(z, complex)
        a, b = self.edges
        c = self.scale * (1 - self.ratio)
        R = _sqrt_cut(z, a, b)
        dR = (2 * z - a - b) / (2 * R)
        d = z - c + R
        num = c + ((a + b) * z - a * b) / (z + R)
        dnum = 1 - dR
        return num / d, 2.0 * z / d, (dnum * d - num * (1 + dR)) / (d * d)

    def _pdf(self, x):
        a, b = self.edges
        if self._tiny:
            u = self._u(x)
            return np.where(np.abs(u) < 1, self._u_weight(u) / (2 * self.scale * np.sqrt(self.ratio)), 0.0)
        inside = (x > a) & (x < b)
        xs = np.where(inside, x, 0.5 * (a + b))
        rho = np.sqrt(np.maximum((b - xs) * (xs - a), 0.0)) / (2 * np.pi * self.ratio * self.scale * xs)
        return np.where(inside, rho, 0.0)

    def _moment(self, k):
        if k == 0:
            return 1.0
        j = np.arange(1, k + 1)
        narayana = special.comb(k, j) * special.comb(k, j - 1) / k
        return float(self.scale ** k * np.sum(narayana * self.ratio ** (j - 1)))

    def _var(self):
        return self.ratio * self.scale ** 2

    def _central_moment(self, k):
        """σ^{2k} Σ_b N(k, b) λ^{k−b}: the free cumulants of X − σ² are 0, λσ⁴, λ²σ⁶, … (κ_n = λ^{n−1}σ^{2n} for
        n ≥ 2), and the moment–cumulant formula sums over non-crossing partitions without singletons, of which
        N(k, b) = C(k+1, b)·C(k−b−1, b−1)/(k+1) have b blocks (Nica & Speicher 2006, Lectures on the Combinatorics of
        Free Probability, Cambridge UP, lecture 11). All terms are positive: no cancellation at small λ."""
        b = np.arange(1, k // 2 + 1)
        count = special.comb(k + 1, b) * special.comb(k - b - 1, b - 1) / (k + 1)
        return float(self.scale ** k * np.sum(count * self.ratio ** (k - b)))

    def _s_transform(self, w):
        return 1.0 / (self.scale * (1 + self.ratio * w))

    def sample(self, n, seed=None, backend=None):
        """Eigenvalues of one σ²XXᵀ with N = n rows and M = round(n/λ) columns (finite-N Monte Carlo).

        Deprecated: the theory does not sample random matrices; use
        ``rmtnet.spectra.sampling.wishart_eigs(n, max(1, round(n / ratio)), seed=seed) * scale``."""
        warnings.warn("MarchenkoPastur.sample is deprecated: use rmtnet.spectra.sampling.wishart_eigs(n, "
                      "max(1, round(n / ratio)), seed=seed) * scale, the Wishart sampler's home",
                      DeprecationWarning, stacklevel=2)
        from .sampling.random_matrices import wishart_eigs
        return wishart_eigs(n, max(1, round(n / self.ratio)), seed=seed, backend=backend) * self.scale

    def __repr__(self):
        return f"MarchenkoPastur(ratio={self.ratio:g}, scale={self.scale:g})"


class Semicircle(Measure):
    """Wigner's semicircle law with centre ``loc`` and variance ``var`` (kept as :attr:`variance`; the method
    :meth:`var` returns it): support loc ± 2√var (Wigner 1958, Ann. of Math. 67, 325–327).

    G(z) = (z - loc - √((z - loc)² - 4 var))/(2 var); even moments var^k · Catalan(k).

    Parameters
    ----------
    var : float, optional
        The variance, > 0.
    loc : float, optional
        The centre.

    Examples
    --------
    Support 1 ± 2√2; E(X - 1)⁴ = var²·Catalan(2) = 8, so E X⁴ = 1 + 6·var + 8 = 21:

    >>> sc = Semicircle(var=2.0, loc=1.0)
    >>> print(f"{sc.mean():.6f} {sc.var():.6f} {sc.moment(4):.6f}")
    1.000000 2.000000 21.000000
    >>> print(f"{sc.edges[0]:.6f} {sc.edges[1]:.6f}")
    -1.828427 3.828427
    """

    def __init__(self, var=1.0, loc=0.0):
        self.variance = real_scalar("var", var, lo=0, lo_open=True)
        self.loc = real_scalar("loc", loc)
        r = 2 * np.sqrt(self.variance)
        self.edges = _finite_edges((self.loc - r, self.loc + r), "var and loc", var, loc)
        if not self.edges[1] > self.edges[0]:
            ulp = float(np.spacing(abs(self.loc)))
            least = (ulp / 4) ** 2 if ulp < 1e154 else float("inf")
            raise ValueError(f"var = {var!r} and loc = {loc!r} give a band loc ± 2√var narrower than the float64 "
                             f"spacing at loc ({ulp:.3g}): var must be at least (spacing/4)² = {least:.3g} at this "
                             f"loc (beyond float64 where inf: give a smaller |loc|)")

    def _var(self):
        return self.variance

    def _central_moment(self, k):
        """var^{k/2}·Catalan(k/2) for even k, 0 for odd k."""
        return 0.0 if k % 2 else float(self.variance ** (k // 2) * special.comb(k, k // 2) / (k // 2 + 1))

    def continuous_support(self):
        return self.edges

    def _g(self, z):
        # (z - loc - R)/(2 var) = 2/(z - loc + R): no cancellation for large |z|
        z = B.as_array(z, complex)
        a, b = self.edges
        R = _sqrt_cut(z, a, b)
        dR = (z - self.loc) / R
        d = z - self.loc + R
        return 2.0 / d, -2.0 * (1 + dR) / (d * d)

    def _pdf(self, x):
        d = x - self.loc
        return np.sqrt(np.maximum(4 * self.variance - d * d, 0.0)) / (2 * np.pi * self.variance)

    def _cdf(self, x):
        u = np.clip((x - self.loc) / (2 * np.sqrt(self.variance)), -1.0, 1.0)
        return 0.5 + (u * np.sqrt(1 - u * u) + np.arcsin(u)) / np.pi

    def _moment(self, k):
        total = 0.0
        for j in range(0, k + 1, 2):      # E (loc + X)^k, X centred semicircle
            cat = special.comb(j, j // 2) / (j // 2 + 1)
            total += special.comb(k, j) * self.loc ** (k - j) * self.variance ** (j // 2) * cat
        return float(total)

    def _entropy(self):
        """log(πR) − ½ with R = 2√var the radius: the differential entropy of the semicircle law."""
        return float(np.log(2.0 * np.pi * np.sqrt(self.variance)) - 0.5)

    def __repr__(self):
        return f"Semicircle(var={self.variance:g}, loc={self.loc:g})"


class FussCatalan(Measure):
    """Fuss–Catalan law of order s: the limit spectrum of (G_s⋯G_1)(G_s⋯G_1)ᵀ for s square Ginibre matrices with
    entry variance 1/N, i.e. MarchenkoPastur(1)^{⊠s}. Moments C((s+1)k, k)/(sk + 1); support [0, (s+1)^{s+1}/s^s].
    ``scale`` (the attribute :attr:`scale`) is scipy's scale parameter, the law of scale·X.

    Exact parametric density (Penson & Życzkowski 2011, Phys. Rev. E 83, 061118; Haagerup & Möller 2012,
    arXiv:1211.4457; Neuschel 2014, Random Matrices: Theory Appl. 3, 1450003), 0 < φ < π/(s+1):
    x(φ) = sin^{s+1}((s+1)φ)/(sin φ · sin^s(sφ)),  ρ(x(φ)) = sin²φ · sin^{s-1}(sφ)/(π sin^s((s+1)φ)).

    Parameters
    ----------
    s : int
        The order, ≥ 1 (s = 1 is MarchenkoPastur(1)).
    scale : float, optional
        The scale factor, > 0.

    Examples
    --------
    The moments are the Fuss–Catalan numbers C(3k, k)/(2k + 1) = 1, 3, 12, the right edge 3³/2² = 6.75; scale 3
    multiplies the k-th moment by 3^k:

    >>> fc = FussCatalan(2)
    >>> [round(float(fc.moment(k)), 6) for k in (1, 2, 3)]
    [1.0, 3.0, 12.0]
    >>> print(f"{fc.edges[1]:.6f} {FussCatalan(2, scale=3.0).moment(2):.6f}")
    6.750000 27.000000
    """

    def __init__(self, s, scale=1.0):
        self.s = integer_at_least("s", s, 1) if isinstance(scalar(s), numbers.Integral) else _integral("s", s)
        self.scale = real_scalar("scale", scale, lo=0, lo_open=True)
        s = self.s        # (s + 1)^{s+1}/s^s exactly for small s; as (s + 1)(1 + 1/s)^s (→ e(s + 1)) beyond
        top = (s + 1) ** (s + 1) / s ** s if s <= 100 else (s + 1) * (1.0 + 1.0 / s) ** s
        with np.errstate(over="ignore"):
            self.edges = _finite_edges((0.0, self.scale * top), "s and scale", s, scale)

    def continuous_support(self):
        return self.edges

    def x_of_phi(self, phi):
        """x(φ), from its logarithm: the powers sin^s underflow for large s (s ≳ 100) although x does not."""
        s = self.s
        log_x = (s + 1) * np.log(np.sin((s + 1) * phi)) - np.log(np.sin(phi)) - s * np.log(np.sin(s * phi))
        return self.scale * np.exp(log_x)

    def rho_of_phi(self, phi):
        """ρ(x(φ)), from its logarithm (as :meth:`x_of_phi`)."""
        s = self.s
        log_rho = (2 * np.log(np.sin(phi)) + (s - 1) * np.log(np.sin(s * phi))
                   - s * np.log(np.sin((s + 1) * phi)) - np.log(np.pi))
        return np.exp(log_rho) / self.scale

    def phi_density(self, phi):
        """The law's density in φ, ρ(x(φ))·|x′(φ)| = sin φ sin((s+1)φ)/(π sin(sφ)) · |(s+1)²cot((s+1)φ) − cot φ −
        s²cot(sφ)|: smooth and free of large powers on (0, π/(s+1)), where it integrates to 1."""
        s = self.s
        dlog_x = (s + 1) ** 2 / np.tan((s + 1) * phi) - 1.0 / np.tan(phi) - s ** 2 / np.tan(s * phi)
        return np.sin(phi) * np.sin((s + 1) * phi) / (np.pi * np.sin(s * phi)) * np.abs(dlog_x)

    _GL = np.polynomial.legendre.leggauss(64)
    TABLE_MAX_ORDER = 64      # up to this order the generic cdf table in x holds the law (m₁ from it to 1e-6)

    def _mass_above(self, phi):
        """μ((x(φ), ∞)) = ∫_0^φ of :meth:`phi_density`, by 64-point Gauss–Legendre on [0, φ] (the integrand is
        analytic there), for an array φ."""
        t, w = self._GL
        nodes = 0.5 * phi[:, None] * (t[None, :] + 1.0)
        return 0.5 * phi * (self.phi_density(nodes) @ w)

    def _cdf(self, x):
        """μ((−∞, x]). Above order :attr:`TABLE_MAX_ORDER`, from the density in φ (:meth:`phi_density`),
        1 − ∫_0^{φ(x)}, exact to ~1e-14 but a bisection per point: the generic table in x cannot hold the law there
        (a tenth of FussCatalan(300)'s mass lies below 1e-300, where the density has not yet reached its power law).
        Up to it, the generic table (m₁ from the cdf exact to 1e-6)."""
        if self.s <= self.TABLE_MAX_ORDER:
            return super()._cdf(x)                 # the generic table: as exact there, and far cheaper per point
        x = finite_array("x", x)
        a, b = self.edges
        out = np.where(x >= b, 1.0, 0.0)
        inside = (x > a) & (x < b)
        if inside.any():
            out[inside] = 1.0 - self._mass_above(self._phi_of_x(x[inside]))
        return np.clip(out, 0.0, 1.0)

    def _own_cdf(self):
        """Up to TABLE_MAX_ORDER the cdf is the generic table integrated up from 0, so :meth:`cdf_above` integrates
        down from the top instead; above it the cdf in φ is exact everywhere."""
        return self.s > self.TABLE_MAX_ORDER

    def _ppf(self, q):
        """inf{x : cdf(x) ≥ q}, by bisection in φ on the mass above (see :meth:`cdf`); q = 0 and 1 give the ends."""
        if self.s <= self.TABLE_MAX_ORDER:
            return super()._ppf(q)
        phi = self._bisect_phi(lambda mid: self._mass_above(mid.ravel()).reshape(q.shape) < 1.0 - q, q)
        out = self.x_of_phi(phi)
        out = np.where(q <= 0, self.edges[0], np.where(q >= 1, self.edges[1], out))
        return out

    def _bisect_phi(self, right_of, like):
        """The φ in (0, π/(s+1)) where the monotone test ``right_of(φ)`` (True: the answer lies above φ) turns, by
        vectorised bisection to machine precision; an array of ``like``'s shape, on its device (``zeros_like``)."""
        lo = np.zeros_like(like, dtype=float)
        hi = np.full_like(like, np.pi / (self.s + 1), dtype=float)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            right = right_of(mid)
            lo = np.where(right, mid, lo)
            hi = np.where(right, hi, mid)
            if np.all(hi - lo <= 4e-16 * hi):
                break
        return 0.5 * (lo + hi)

    def _phi_of_x(self, x):
        """Invert the decreasing map φ ↦ x(φ) on (0, π/(s+1))."""
        return self._bisect_phi(lambda mid: self.x_of_phi(mid) > x, x)

    def _pdf(self, x):
        a, b = self.edges
        inside = (x > a) & (x < b)
        out = np.zeros_like(x)
        if inside.any():
            out[inside] = self.rho_of_phi(self._phi_of_x(x[inside]))
        return out

    def _moment(self, k):
        s = self.s
        return float(self.scale ** k * special.comb((s + 1) * k, k, exact=True) / (s * k + 1))

    def _var(self):
        """s·scale²: m₂ = C(2s + 2, 2)/(2s + 1) = s + 1 and m₁ = 1."""
        return self.s * self.scale ** 2

    @cached_property
    def _engine(self):
        from .free import free_mult_power
        return free_mult_power(MarchenkoPastur(1.0, self.scale ** (1.0 / self.s)), self.s)

    def free_factors(self):
        """The law as the free power MP(1, scale^{1/s})^{⊠s}: [(MarchenkoPastur, s)], the pairs (μ, t) a free product
        takes apart (``free_mult`` solves FussCatalan(s) ⊠ ν with the MP factor's closed form, not a nested solve).

        Returns
        -------
        list of (MarchenkoPastur, float)

        Examples
        --------
        >>> FussCatalan(2, scale=4.0).free_factors()
        [(MarchenkoPastur(ratio=1, scale=2), 2.0)]
        """
        return [(self._engine.factors[0][0], float(self.s))]

    def _g(self, z):
        return self._engine._g(z)

    def _mt(self, z):
        return self._engine._mt(z)

    def _s_transform(self, w):
        return 1.0 / (self.scale * (1 + w) ** self.s)

    def __repr__(self):
        return f"FussCatalan(s={self.s}, scale={self.scale:g})"


class Bernoulli(PointMasses):
    """(1 - p)δ₀ + pδ₁: the D² law of ReLU (p = ½) and hard-tanh layers. S(w) = (1 + w)/(p + w).

    Parameters
    ----------
    p : float
        The mass at 1, in [0, 1].

    Examples
    --------
    Mean p, variance p(1 - p) = 0.1875, and S(½) = 1.5/0.75 = 2:

    >>> b = Bernoulli(0.25)
    >>> print(f"{b.mean():.6f} {b.var():.6f} {complex(b.s_transform(0.5)).real:.6f}")
    0.250000 0.187500 2.000000
    >>> locs, masses = b.atoms()
    >>> locs.tolist(), masses.tolist()
    ([0.0, 1.0], [0.75, 0.25])
    """

    def __init__(self, p):
        self.p = real_scalar("p", p, lo=0.0, hi=1.0)
        super().__init__([0.0, 1.0], [1.0 - self.p, self.p])

    def _s_transform(self, w):
        return (1 + w) / (self.p + w)

    def __repr__(self):
        return f"Bernoulli(p={self.p:g})"


class Arcsine(Measure):
    """Arcsine law on [lo, hi]: density 1/(π√((x - lo)(hi - x))); G(z) = 1/√((z - lo)(z - hi)).

    Parameters
    ----------
    lo, hi : float, optional
        The ends of the support, lo < hi.

    Examples
    --------
    On [0, 1]: mean ½, variance (hi - lo)²/8, density 1/(π·½) = 2/π at ½, cdf (2/π)·arcsin(√x) = ½ there:

    >>> a = Arcsine(0.0, 1.0)
    >>> print(f"{a.mean():.6f} {a.var():.6f} {float(a.pdf(0.5)):.6f} {float(a.cdf(0.5)):.6f}")
    0.500000 0.125000 0.636620 0.500000
    """

    def __init__(self, lo=0.0, hi=1.0):
        self.lo = real_scalar("lo", lo)
        self.hi = real_scalar("hi", hi)
        if not self.hi > self.lo:
            raise ValueError(f"hi must exceed lo, got lo={lo!r}, hi={hi!r}")

    def continuous_support(self):
        return self.lo, self.hi

    def _g(self, z):
        z = B.as_array(z, complex)
        R = _sqrt_cut(z, self.lo, self.hi)
        g = 1.0 / R
        dR = (2 * z - self.lo - self.hi) / (2 * R)
        return g, -dR / (R * R)

    def _pdf(self, x):
        inside = (x > self.lo) & (x < self.hi)
        xs = np.where(inside, x, 0.5 * (self.lo + self.hi))
        return np.where(inside, 1.0 / (np.pi * np.sqrt((xs - self.lo) * (self.hi - xs))), 0.0)

    def _cdf(self, x):
        u = np.clip((x - self.lo) / (self.hi - self.lo), 0.0, 1.0)
        return 2.0 / np.pi * np.arcsin(np.sqrt(u))

    def _ppf(self, q):
        return self.lo + (self.hi - self.lo) * np.sin(0.5 * np.pi * q) ** 2

    def _var(self):
        """(hi − lo)²/8, as r²/2 with r = hi/2 − lo/2 the half-width (exact, no overflow)."""
        r = 0.5 * self.hi - 0.5 * self.lo
        return 0.5 * r * r

    def _central_moment(self, k):
        """r^k·C(k, k/2)/2^k for even k (X = centre + r cos Θ, Θ uniform), 0 for odd k."""
        r = 0.5 * self.hi - 0.5 * self.lo
        return 0.0 if k % 2 else float(r ** k * special.comb(k, k // 2) / 2.0 ** k)

    def _moment(self, k):
        if k == 1:
            return 0.5 * self.lo + 0.5 * self.hi
        w = self.hi - self.lo
        return float(sum(special.comb(k, j) * self.lo ** (k - j) * w ** j * special.comb(2 * j, j) / 4 ** j
                         for j in range(k + 1)))

    def _entropy(self):
        """log(π(hi − lo)/4), the differential entropy of the arcsine law on [lo, hi]."""
        return float(np.log(0.25 * np.pi * (self.hi - self.lo)))

    def __repr__(self):
        return f"Arcsine(lo={self.lo:g}, hi={self.hi:g})"
