"""⊠: the free multiplicative convolution of laws on [0, ∞) as a kind of the subordination engine
(:mod:`rmtnet.spectra.free` describes the method; Belinschi & Bercovici, J. Anal. Math. 101, 2007)."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ... import backend as B
from .. import series
from rmtnet._validation import ConvergenceError, log_upper
from ._support import Convolution

__all__ = ["FreeProduct"]


class FreeProduct(Convolution):
    """ν = ⊠_i μ_i^{⊠t_i} for measures μ_i on [0, ∞) and real t_i ≥ 1; see the module docstring for the method.

    Convention: the law of the product of free positive elements, e.g. of A^{1/2} B A^{1/2} for free A, B;
    S_ν = Π_i S_{μ_i}^{t_i} with S(w) = (1 + w)/(w M⁻¹(w)) (:mod:`rmtnet.spectra.transforms`). Use
    :func:`free_mult` / :func:`free_mult_power` to build one.

    Parameters
    ----------
    factors : list of (Measure, float)
        The pairs (μ_i, t_i), μ_i on [0, ∞) with positive mean and t_i ≥ 1.
    tol : float
        Relative Newton tolerance.
    max_iter : int
        Newton iterations allowed per point.

    Examples
    --------
    ReLU's D² law Bernoulli(½) keeps its atom: (μ ⊠ ν)({0}) = max(μ({0}), ν({0})) = max(½, 0) (Belinschi 2003):

    >>> from rmtnet.spectra.free import free_mult
    >>> from rmtnet.spectra.laws import Bernoulli, MarchenkoPastur
    >>> nu = free_mult(Bernoulli(0.5), MarchenkoPastur(0.5))
    >>> type(nu).__name__
    'FreeProduct'
    >>> locs, masses = nu.atoms()
    >>> locs.tolist(), masses.round(6).tolist()
    ([0.0], [0.5])
    """

    kind = "free_mult"
    _symbol = "⊠"
    _REACH = 1e3          # radius / rms scale solved in the tests (MP(10⁶) ⊠ MP(1)); 10⁴ (MP(10⁸)) is not
    _series = staticmethod(series.product_moments)

    def _inner(self, mu, w):
        # P_i(ω) = (1 + M_i(ω))/M_i(ω) = 1/η_i(1/ω), each part computed where it is accurate
        F, A, dF = mu._mt(w)
        with np.errstate(all="ignore"):
            return A / F, -dF / (F * F)

    def _outer(self, p, om):
        # unknown p = (1 + m)/m: log z = (1 - T) log p + Σ t_i log ω_i, with P_i(ω_i) = p
        T = self.T
        t = B.as_array([t for _, t in self.factors], float, like=om)[:, None]
        psi = (t * log_upper(om)).sum(0)
        b = np.zeros_like(p)
        if T != 1:
            psi = psi + (1 - T) * log_upper(p)
            b = (1 - T) / p
        return psi, b, t / om

    def _zeta(self, z):
        return log_upper(z), 1.0 / z

    def _start(self, z):
        m1 = self._moments(2)
        u = m1[0] / z + m1[1] / z ** 2
        om = []
        for mu, _ in self.factors:
            a1, a2 = mu.moment(1), mu.moment(2)
            om.append(a1 / u + a2 / a1)
        return 1.0 + 1.0 / u, B.module_of(u).stack(om).astype(complex)

    def _physical(self, p, om, y):
        tol = 1e-10
        return (p.imag >= -tol * np.abs(p)) & np.all(om.imag >= -tol * np.abs(om), axis=0)

    def _variance(self, parts):
        return self.moment(1) ** 2 * sum(t * v / m ** 2 for v, m, t in parts)

    def _combine_seeds(self, feats, t):
        # Π f_i^{t_i} in log space; a zero feature maps to 0, which the grid's geometric bottom covers
        logs = [np.log(f[f > 0]) for f in feats]
        if any(v.size == 0 for v in logs):
            return np.empty(0)
        total = sum(ti * g.ravel() for ti, g in zip(t, np.meshgrid(*logs, indexing="ij")))
        return np.exp(total[(total > -745.0) & (total < 709.0)])

    def _around(self, seeds, lo, hi):
        """Points at relative distances 10⁻⁶ … 1 on either side of every seed."""
        r = np.geomspace(1e-6, 1.0, 14)
        return (seeds[:, None] * np.exp(np.concatenate([-r, r]))[None, :]).ravel()

    def _scale_grid(self, lo, hi, seeds):
        """The hull's range on 4 points per decade (down to 10⁻⁸ of the lowest seed when the hull reaches 0)."""
        bottom = lo if lo > 0 else 1e-8 * min(seeds.min() if seeds.size else hi, hi)
        decades = np.log10(hi) - np.log10(bottom)                 # not log10(hi/bottom): a subnormal bottom
        n = int(np.ceil(4 * decades)) + 1
        return np.power(10.0, np.log10(bottom) + decades * (np.arange(n) + 0.3819660112501051) / n)

    def _m_and_derivative(self, z, p, om):
        """m = 1/(p - 1), 1 + m = p/(p - 1) and dm/dz from the solution (p, ω) at z."""
        _, b, a = self._outer(p, om)
        dR = B.module_of(om).stack([self._inner(mu, om[i])[1] for i, (mu, _) in enumerate(self.factors)])
        with np.errstate(all="ignore"):
            dpdz = 1.0 / (z * (b + (a / dR).sum(0)))
            v = p - 1.0
            return 1.0 / v, p / v, -dpdz / (v * v)

    def _g_from(self, z, p, om):
        m, one_m, dm = self._m_and_derivative(z, p, om)
        with np.errstate(all="ignore"):
            return one_m / z, dm / z - one_m / z ** 2

    def _mt(self, z):
        # M(z̄) = conj M(z) (Schwarz reflection): the continuation runs in the upper half-plane only; a point just
        # below the axis (a transient Newton iterate of an enclosing product) is reflected.
        z = B.as_array(z, complex)
        far = self._far(z) if B.module_of(z) is np else None
        if far is not None and far.any():
            out = [np.empty(z.shape, complex) for _ in range(3)]
            for o, v in zip(out, self._far_series(z[far])):
                o[far] = v
            if (~far).any():
                for o, v in zip(out, self._mt(z[~far])):
                    o[~far] = v
            return tuple(out)
        lower = z.imag < 0
        zu = np.where(lower, np.conj(z), z)
        p, om, zhat = self._solve(zu.ravel())
        out = self._m_and_derivative(zhat, p, om)
        return tuple(np.where(lower, np.conj(v.reshape(z.shape)), v.reshape(z.shape)) for v in out)

    def _x_of(self, p, om):
        t = np.array([t for _, t in self.factors])
        logx = (1 - self.T) * np.log(abs(p)) + np.sum(t * np.log(np.abs(om)))
        return float(np.exp(logx))

    @cached_property
    def _atoms(self):
        out = self._combine_atoms(lambda a, t: float(np.prod(np.power(a, t))) if all(x != 0 for x in a) else 0.0)
        out.pop(0.0, None)
        p0 = max(float(mu.atoms()[1][mu.atoms()[0] == 0].sum()) for mu, _ in self.factors)
        if p0 > 0:
            out[0.0] = p0
        locs = np.array(sorted(out))
        return locs, np.array([out[a] for a in locs])

    def _bracket_hull(self):
        """[lo, hi] containing the continuous part: hi from λ_max ≤ min over moment ratios is not a bound, so use
        the operator-norm bound Π hi_i^{t_i} capped by a moment estimate, and lo = Π lo_i^{t_i}."""
        # in log space: the norm bound Π b_i^{t_i} of a deep power overflows long before λ_max does
        with np.errstate(divide="ignore"):
            log_lo = sum(t * np.log(max(mu.hull()[0], 0.0)) for mu, t in self.factors)
            log_hi = sum(t * np.log(mu.hull()[1]) for mu, t in self.factors)
        # λ_max ≤ (m_k)^{1/k} · (k-dependent factor) is not a bound either; use a right edge located on the
        # real branch from m → 0⁺ when it is far below the norm bound
        edge = self._right_edge_estimate() * 1.05
        with np.errstate(over="ignore"):
            hi = float(min(np.exp(log_hi), edge))
        if not np.isfinite(hi):
            raise ConvergenceError(f"{self.kind}: the largest point of the support of {self!r} is not representable "
                                   f"in float64 (log of the norm bound {log_hi:.4g}; the real-branch edge search "
                                   f"gave {edge!r})", z=None, iteration=0, residual=float(log_hi))
        return float(np.exp(log_lo)), hi

    def _right_edge_estimate(self):
        """λ_max = min_{m>0} z(m) along the real branch started at m → 0⁺ (the support edges of a law on
        [0, ∞) are real critical points of M⁻¹)."""
        m1 = self._moments(1)[0]
        scale = self._scale()
        m = m1 / (1e3 * scale)
        u = 1.0 + 1.0 / m
        om = np.array([mu.moment(1) / m + mu.moment(2) / mu.moment(1) for mu, _ in self.factors])
        r = self._real_denom(u, om)
        if r is None:
            return np.inf
        d, om = r
        x_prev = self._x_of(u, om)
        for _ in range(400):
            u_new = 1.0 + (u - 1.0) / 1.25
            r = self._real_denom(u_new, om)
            if r is None:
                return x_prev
            d_new, om_new = r
            x_new = self._x_of(u_new, om_new)
            if np.sign(d_new) != np.sign(d) or x_new > x_prev:
                return x_prev
            u, d, om, x_prev = u_new, d_new, om_new, x_new
        return x_prev
