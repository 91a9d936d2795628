"""⊞: the free additive convolution as a kind of the subordination engine (:mod:`rmtnet.spectra.free` describes the
method; Voiculescu's subordination, Biane, "Processes with free increments", Math. Z. 227, 1998)."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ... import backend as B
from .. import series
from ._support import Convolution

__all__ = ["FreeSum"]


class FreeSum(Convolution):
    """ν = ⊞_i μ_i^{⊞t_i} (real t_i ≥ 1) by subordination, G_i(ω_i) = G_ν(z), z = Σ t_i ω_i - (T - 1)/G_ν(z).

    Built by :func:`free_add` / :func:`free_add_power`.

    Parameters
    ----------
    factors : list of (Measure, float)
        The pairs (μ_i, t_i) with t_i ≥ 1.
    tol : float
        Relative Newton tolerance.
    max_iter : int
        Newton iterations allowed per point.

    Examples
    --------
    Free cumulants add: for semicircle ⊞ Bernoulli(½) the mean is 0 + ½ and the variance 1 + ¼:

    >>> from rmtnet.spectra.free import free_add
    >>> from rmtnet.spectra.laws import Bernoulli, Semicircle
    >>> nu = free_add(Semicircle(1), Bernoulli(0.5))
    >>> type(nu).__name__
    'FreeSum'
    >>> print(f"{float(nu.mean()):.6f} {float(nu.var()):.6f}")
    0.500000 1.250000
    """

    kind = "free_add"
    _symbol = "⊞"
    _REACH = 2e6          # hull width / narrowest factor's width solved in the tests (atoms ±10⁶ ⊞ semicircle)
    _series = staticmethod(series.sum_moments)

    def _inner(self, mu, w):
        G, dG = mu._g(w)
        with np.errstate(all="ignore"):
            return 1.0 / G, -dG / (G * G)

    def _outer(self, v, om):
        # unknown v = 1/G(z) (the F-transform): z = Σ t_i ω_i - (T - 1) v, with 1/G_i(ω_i) = v
        T = self.T
        t = B.as_array([t for _, t in self.factors], float, like=om)[:, None]
        psi = (t * om).sum(0) - (T - 1) * v
        b = np.full_like(v, -(T - 1), dtype=complex)
        return psi, b, np.broadcast_to(t, om.shape).astype(complex)

    def _zeta(self, z):
        return z, np.ones_like(z)

    def _start(self, z):
        means = np.array([mu.moment(1) for mu, _ in self.factors])
        t = np.array([t for _, t in self.factors])
        v = z - float(np.sum(t * means))
        om = B.module_of(v).stack([v + float(m) for m in means]).astype(complex)
        return v, om

    def _physical(self, v, om, y):
        tol = 1e-10
        return (v.imag >= -tol * np.abs(v)) & np.all(om.imag >= -tol * np.abs(om), axis=0)

    def _variance(self, parts):
        return sum(t * v for v, _, t in parts)

    def _combine_seeds(self, feats, t):
        return sum(ti * g.ravel() for ti, g in zip(t, np.meshgrid(*feats, indexing="ij")))

    def _around(self, seeds, lo, hi):
        """Points at distances 10⁻⁹ … ½ of the hull's width on either side of every seed."""
        r = (hi - lo) * np.geomspace(1e-9, 0.5, 16)
        return (seeds[:, None] + np.concatenate([-r, r])[None, :]).ravel()

    def _scale_grid(self, lo, hi, seeds):
        return np.empty(0)

    def _g_from(self, z, v, om):
        _, b, a = self._outer(v, om)
        dR = B.module_of(om).stack([self._inner(mu, om[i])[1] for i, (mu, _) in enumerate(self.factors)])
        with np.errstate(all="ignore"):
            dvdz = 1.0 / (b + (a / dR).sum(0))
            return 1.0 / v, -dvdz / (v * v)

    def _x_of(self, v, om):
        t = np.array([t for _, t in self.factors])
        return float(np.sum(t * om) - (self.T - 1) * v)

    @cached_property
    def _atoms(self):
        out = self._combine_atoms(lambda a, t: float(np.dot(a, t)))
        locs = np.array(sorted(out))
        return locs, np.array([out[a] for a in locs])

    def _bracket_hull(self):
        lo = hi = 0.0
        for mu, t in self.factors:
            a, b = mu.hull()
            lo += t * a
            hi += t * b
        return lo, hi

    def _center(self):
        return float(self._moments(2)[0])

    def _scale_ratio(self):
        sds = [np.sqrt(max(mu.var(), 0.0)) for mu, _ in self.factors]
        lo, hi = self._bracket_hull()
        narrow = min(sd for sd in sds if sd > 0) if any(sd > 0 for sd in sds) else self._scale()
        return (hi - lo) / narrow, f"the hull's width {hi - lo:.3g} against the narrowest factor's width {narrow:.3g}"

    def _scale(self):
        """The law's width √Var (from the factors' variances, without cancellation); the start and the floors of
        the continuation are measured from the mean (:meth:`_center`), so a law far from 0 relative to its width
        (semicircles 10⁸ from the origin) is solved on its own scale."""
        return max(float(np.sqrt(max(self.var(), 0.0))), 1e-300)

    def _outer_size(self, v, om, z):
        # z = Σ t_i ω_i − (T − 1)v is a sum of terms each as large as the factors' locations: its residual can only
        # be as small as their rounding (atoms at ±10⁵ with a unit semicircle: terms 10¹⁰ next to a gap)
        t = B.as_array([t for _, t in self.factors], float, like=om)[:, None]
        return np.abs(z) + (t * np.abs(om)).sum(0) + (self.T - 1) * np.abs(v) + 1e-300
