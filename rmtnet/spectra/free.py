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
"""
from __future__ import annotations

import itertools
import warnings
from functools import cached_property

import numpy as np
from scipy import optimize

from .. import backend as B
from . import series
from ._checks import ConvergenceError, integer_at_least, log_upper, real_scalar
from .measures import Affine, Measure, PointMasses, atom_cauchy, cumulative_panels

__all__ = ["free_mult", "free_mult_scaled", "free_mult_power", "free_add", "free_add_power", "FreeProduct", "FreeSum"]

_DEFAULT_TOL = 1e-13
_DEFAULT_MAX_ITER = 2000


# ---------------------------------------------------------------------------------------------------------------
class _Convolution(Measure):
    """Common machinery of ⊠ and ⊞: the arrowhead Newton system and its continuation in z."""

    kind = ""
    _symbol = ""                        # ⊠ or ⊞, for repr
    _series = None                      # the moment series of the convolution: (factor moments, K) -> m_1..m_K

    def _moments(self, K):
        """m_1 … m_K (K ≥ 2) from the factors' moments by the convolution's series, cached."""
        K = max(K, 2)
        cache = self.__dict__.setdefault("_mom_cache", {})
        if K not in cache:
            facs = [(np.array([mu.moment(k) for k in range(1, K + 1)]), t) for mu, t in self.factors]
            cache[K] = type(self)._series(facs, K)
        return cache[K]

    def __repr__(self):
        parts = [f"{mu!r}" + (f"^{t:g}" if t != 1 else "") for mu, t in self.factors]
        return f" {self._symbol} ".join(parts)

    def __init__(self, factors, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
        self.factors = factors                        # list of (Measure, t)
        self.T = float(sum(t for _, t in factors))
        self.tol = real_scalar("tol", tol, lo=0, lo_open=True)
        if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
        self.max_iter = int(max_iter)

    # --- pieces a subclass defines --------------------------------------------------------------------------
    def _inner(self, mu, w):            # (R_i, R_i') with R_i = 1/F_i: 1/M_i for ⊠, 1/G_i for ⊞
        raise NotImplementedError

    def _outer(self, u, om):            # Ψ(u, ω), ∂Ψ/∂u, [∂Ψ/∂ω_i]
        raise NotImplementedError

    def _zeta(self, z):                 # ζ(z), ζ'(z) with Ψ = ζ(z) on the solution
        raise NotImplementedError

    def _start(self, z):                # initial (u, ω) for |z| large
        raise NotImplementedError

    def _physical(self, u, om, y):      # boolean mask of solutions on the physical sheet
        raise NotImplementedError

    def _retry_from_afar(self, scale):
        """Whether to start the continuation again from above the support's radius (once per law: the radius is
        then kept), because it lies well beyond the scale the start used."""
        if "_reach" in self.__dict__:
            return False
        self._reach = max(self._radius(), scale)
        return self._reach > 2.0 * scale

    def _reach_note(self):
        """A clause for a failure: the scale ratio of the problem (:meth:`_scale_ratio`) where it is large."""
        try:
            scale = float(self._scale())
            ratio, what = self._scale_ratio()
        except (ArithmeticError, ValueError, ConvergenceError):
            return ""
        if not 1e-150 < scale < 1e150:
            return (f"; the law's scale {scale:.3g} lies where squares of z underflow or overflow in float64 "
                    f"(|z|² beyond 1e±300): solve it on a unit scale (its factors' .dilate) and dilate the result back")
        if not ratio > self._REACH:
            return ""
        return (f"; the law spans a scale ratio of {ratio:.3g} ({what}), beyond what the float64 continuation "
                f"resolves here (ratios up to {self._REACH:.0e} are solved in the tests)")

    def _center(self):                  # where the law sits: the start and the height floors go by |x − centre|
        return 0.0

    def _outer_size(self, u, om, zeta):  # the size of the outer equation's terms, its residual's unit
        return 1.0

    # --- Newton on the arrowhead system ---------------------------------------------------------------------
    def _newton(self, z, u, om, iters, tol=None):
        """Up to ``iters`` Newton steps at fixed z. Returns (u, ω, converged mask, residual, iterations used)."""
        tol = self.tol if tol is None else tol
        xp = B.module_of(z)
        zeta, _ = self._zeta(z)
        conv = xp.zeros(z.shape, bool)
        res = xp.full(z.shape, np.inf)
        used = xp.zeros(z.shape, int)
        prev = xp.full(z.shape, np.inf)
        prev_r = xp.full(z.shape, np.inf)
        for _ in range(iters):
            act = ~conv
            if not act.any():
                break
            ua, oa = u[act], om[:, act]
            F = np.empty_like(oa)
            dF = np.empty_like(oa)
            for i, (mu, _) in enumerate(self.factors):
                F[i], dF[i] = self._inner(mu, oa[i])
            E = F - ua
            psi, b, a = self._outer(ua, oa)
            E0 = (psi - zeta[act]) / self._outer_size(ua, oa, zeta[act])
            with np.errstate(all="ignore"):
                c = a / dF
                du = (-(psi - zeta[act]) + (c * E).sum(0)) / (b + c.sum(0))
                dom = (du - E) / dF
            # natural scale of the outer variable: |v| or, where v passes near 0, the variation of R_i = 1/F_i
            scale_u = np.maximum(np.abs(ua), np.max(np.abs(oa * dF), axis=0)) + 1e-300
            r = np.abs(E0) + (np.abs(E) / scale_u).sum(0)
            ok = np.isfinite(du) & np.all(np.isfinite(dom), axis=0)
            du = np.where(ok, du, 0.0)
            dom = np.where(ok, dom, 0.0)
            u[act] = ua + du
            om[:, act] = oa + dom
            used[act] += 1
            step = np.abs(du) / scale_u + (np.abs(dom) / np.maximum(np.abs(oa), 1e-300)).sum(0)
            res[act] = np.where(ok, r, np.inf)
            # converged: the step is below tol, or it has stalled at the rounding floor of the transforms, or the
            # residual is at that floor (at a spectral edge the root is double and Newton only halves the error),
            # or the residual has stopped falling at a level the factors' own rounding sets (MP(10⁶)'s transform
            # is good to ~1e-9 relative: a residual flat at 6e-9 is that floor, not a failure; at a double root
            # the residual still quarters per step)
            stalled = ((step <= 1e-9) & (step >= 0.5 * prev[act])) | (r <= 1e-13) | \
                      ((r <= 1e-7) & (r >= 0.9 * prev_r[act]))
            conv[act] = ok & (((step <= tol) & (r <= 1e-9)) | stalled)
            prev[act] = step
            prev_r[act] = np.where(ok, r, np.inf)
        return u, om, conv, res, used

    def _predict(self, z0, z1, u, om):
        """Euler predictor from the solution at z0 to z1, taken in log coordinates (exact in the far field,
        where u ∝ 1/z and ω_i ∝ z)."""
        dF = np.empty_like(om)
        for i, (mu, _) in enumerate(self.factors):
            dF[i] = self._inner(mu, om[i])[1]
        _, b, a = self._outer(u, om)
        with np.errstate(all="ignore"):
            du = (self._zeta(z1)[0] - self._zeta(z0)[0]) / (b + (a / dF).sum(0))
            dom = du / dF
            # multiplicative where the relative change is moderate, additive otherwise
            u1 = np.where(np.abs(du) < 2.0 * np.abs(u), u * np.exp(du / u), u + du)
            om1 = np.where(np.abs(dom) < 2.0 * np.abs(om), om * np.exp(dom / om), om + dom)
        ok = np.isfinite(u1) & np.all(np.isfinite(om1), axis=0)
        return np.where(ok, u1, u), np.where(ok, om1, om)

    def _solve(self, z, return_state=False):
        """Solve the system at points z (Im z ≥ 0) by continuation from y₀ down to Im z.

        Returns (u, ω, ẑ): ẑ = z except at points that were stopped just above the real axis (see below), where
        ẑ = x + iy is the height actually reached; every transform must then be evaluated at ẑ."""
        z = B.as_array(z, complex).ravel()
        xp = B.module_of(z)
        x, ytar = z.real, z.imag
        scale = self._scale()
        xc = np.abs(x - self._center())              # the distance from the law's centre sets the start and floors
        ymin = 1e-14 * np.maximum(np.minimum(xc, scale), 1e-250)
        # the start: far above the spectrum, where the far-field expansion holds. 10·(|x| + scale) is far enough
        # unless a small mass sits far out (MP(10⁶) ⊠ MP(1): 10⁻⁶ of the mass near 10⁶, scale 1.4·10³); when the
        # continuation fails from there, it is tried once more from above the support's radius, estimated by the
        # moment ratios m_{k+1}/m_k (a lower bound that tends to it): see _retry_from_afar
        reach = self.__dict__.get("_reach", scale)
        y0 = np.maximum(10.0 * (xc + reach), ytar)
        y = y0.copy()
        zc = x + 1j * y
        u, om = self._start(zc)
        iters = xp.zeros(z.shape, int)
        u, om, conv, res, used = self._newton(zc, u, om, 50)
        iters += used
        if not conv.all():
            if self._retry_from_afar(scale):
                return self._solve(z, return_state)
            k = np.argmax(~conv)
            raise ConvergenceError(f"{self.kind}: Newton failed at the start of the continuation for "
                                   f"{self!r}{self._reach_note()}", z=complex(zc[k]), iteration=int(iters[k]),
                                   residual=float(res[k]))
        y, u, om, stop = self._from_trunk(x, ytar, xc, y, u, om, reach)
        if stop.any():                  # below the trunk's reach: kept at its end (Cauchy-regularised there)
            self.regularised_points = getattr(self, "regularised_points", 0) + int(stop.sum())
        u, om, y, iters, k, r = self._descend(x, np.where(stop, y, ytar), y, u, om, iters, ymin, scale)
        if k is not None:
            if self._retry_from_afar(scale):
                return self._solve(z, return_state)
            raise ConvergenceError(f"{self.kind}: continuation from Im z = {float(y0[k]):.3g} stalled at Im z = "
                                   f"{float(y[k]):.3g}{self._reach_note()}",
                                   z=complex(z[k]), iteration=int(iters[k]), residual=r)
        zhat = x + 1j * y
        if return_state:
            return u, om, zhat, iters
        return u, om, zhat

    def _descend(self, x, ytar, y, u, om, iters, ymin, scale):
        """The continuation proper: from the solutions (u, ω) at heights y down to the targets ytar at x, the step
        in log y grown after easy Newton solves and halved after failures (below ``ymin`` the next step is the
        target itself). Returns (u, ω, y, iters, k, r): k the first point that stalled (None if none did) and r its
        residual; points that stall within reach of the axis are kept at their height (Cauchy-regularised)."""
        xp = B.module_of(y)
        logstep = xp.full(y.shape, np.log(2.0))      # each step divides Im z by exp(logstep)
        done = y <= ytar
        while not done.all():
            act = np.nonzero(~done)[0]
            ynew = y[act] * np.exp(-logstep[act])
            ynew = np.where(ynew < np.maximum(ymin[act], ytar[act]), ytar[act], ynew)
            zn = x[act] + 1j * ynew
            ua, oa = self._predict(x[act] + 1j * y[act], zn, u[act], om[:, act])
            up, op = ua.copy(), oa.copy()
            final = ynew == ytar[act]
            # intermediate steps only need to stay on the branch; the target itself gets the full tolerance
            # small steps are taken where Newton is slow (near a spectral edge the root is nearly double and
            # Newton converges only linearly): give those more iterations
            budget = 6 if np.all(logstep[act] > 0.05) else 40
            ua, oa, conv, res, used = self._newton(zn, ua, oa, budget, tol=1e-4)
            if final.any():
                fa = np.nonzero(final & conv)[0]
                u2, o2, c2, r2, n2 = self._newton(zn[fa], ua[fa], oa[:, fa], 30)
                ua[fa], oa[:, fa], conv[fa], res[fa] = u2, o2, c2, r2
                used[fa] += n2
            iters[act] += used
            phys = self._physical(ua, oa, ynew)
            # a branch jump shows as Newton landing far from the predictor (which already carries the expected
            # change, power laws included)
            jump = (np.abs(ua - up) <= 0.5 * np.abs(up) + 1e-3 * np.abs(ua) + 1e-300) | \
                   np.all(np.abs(oa - op) <= 0.5 * np.abs(op), axis=0)
            good = conv & phys & jump
            ga = act[good]
            u[ga], om[:, ga], y[ga] = ua[good], oa[:, good], ynew[good]
            # step control: grow after an easy step, shrink after a failure
            easy = good & (used <= 3)
            logstep[act[easy]] = np.minimum(logstep[act[easy]] * 1.5, np.log(1e3))
            logstep[act[~good]] *= 0.5
            done = y <= ytar
            stuck = (~done) & ((logstep < 1e-9) | (iters >= self.max_iter))
            # A point that got within Im z ≤ max(1e-10·|x|, 1e-8·scale) of the axis but cannot reach it (a nearly
            # singular system, next to an atom or a hard edge at 0) keeps its value at that height: the density
            # there is the Stieltjes (Cauchy-kernel) regularisation at width y, which preserves mass. Say so.
            size = scale + abs(self._center())
            close = stuck & (ytar == 0) & (y <= np.maximum(1e-10 * np.abs(x), 1e-8 * size))
            if close.any():
                # (a height below float64's resolution of x itself regularises nothing: x ± y are the same doubles)
                coarse = close & (y > 1e-10 * np.abs(x)) & (y > 1e-13 * size) & (y > 8 * np.finfo(float).eps * np.abs(x))
                if coarse.any():
                    warnings.warn(f"{self.kind}: {int(coarse.sum())} point(s) near x = {float(x[coarse][0]):.3g} "
                                  f"evaluated at height Im z ≤ {float(y[coarse].max()):.2g} (Newton could not reach "
                                  "the axis there); their density is Cauchy-regularised at that width",
                                  RuntimeWarning, stacklevel=4)
                self.regularised_points = getattr(self, "regularised_points", 0) + int(close.sum())
            done |= close
            stuck &= ~close
            if stuck.any():
                k = int(np.nonzero(stuck)[0][0])
                j = np.nonzero(act == k)[0]
                return u, om, y, iters, k, float(res[j[0]]) if j.size else float("nan")
        return u, om, y, iters, None, 0.0

    _TRUNK_RATIO = 1e-3       # a point this close to the centre (relative to the start's scale) starts from the trunk
    _TRUNK_RUNG = 1e3         # the trunk's heights, one per this factor

    def _from_trunk(self, x, ytar, xc, y, u, om, reach):
        """Start points near the law's centre (⊠: near 0) lower down. Until Im z is a few times |x − centre|, the
        path of such a point is that of the centre itself, z = c + iy: the solution there is computed once, on a
        ladder of heights 10⁻³ apart (:meth:`_trunk`), and a point with |x − c| ≤ y_k/30 starts at the lowest rung
        y_k above max(30|x − c|, its target), moved sideways from c + iy_k to x + iy_k by the Euler predictor and
        Newton. Near a hard edge at 0 the quadrature's nodes reach 10⁻³⁰⁰ and each would otherwise walk ~100
        steps of the same trunk down.

        Returns (y, u, ω, stop): ``stop`` marks density points (target 0) below the end of a trunk that could not
        be continued further (the system is singular to float64 there): they cannot reach the axis either, and
        are kept at the trunk's end — Cauchy-regularised at that width, as a point that stalls within reach of
        the axis is — instead of spending ``max_iter`` Newton steps to find so."""
        stop = B.module_of(y).zeros(y.shape, bool)
        need = np.maximum(30.0 * xc, ytar)
        deep = need < self._TRUNK_RATIO * 10.0 * reach
        if not deep.any():
            return y, u, om, stop
        ys, us, oms, ended = self._trunk(float(need[deep].min()), reach, B.module_of(y))
        if ys.size < 2:
            return y, u, om, stop
        idx = np.nonzero(deep)[0]
        k = np.searchsorted(-ys, -need[idx], side="right") - 1          # the lowest rung at or above `need`
        keep = k >= 1
        idx, k = idx[keep], k[keep]
        if not idx.size:
            return y, u, om, stop
        centre = self._center()
        zt = centre + 1j * ys[k]
        zn = x[idx] + 1j * ys[k]
        up, op = self._predict(zt, zn, us[k], oms[:, k])
        ua, oa, conv, _, _ = self._newton(zn, up.copy(), op.copy(), 30)
        near = np.abs(ua - up) <= 0.5 * np.abs(up) + 1e-3 * np.abs(ua) + 1e-300      # no jump off the branch
        good = conv & near & self._physical(ua, oa, ys[k])
        g = idx[good]
        y, u, om = y.copy(), u.copy(), om.copy()
        y[g], u[g], om[:, g] = ys[k][good], ua[good], oa[:, good]
        if ended:
            stop[g] = (need[g] < ys[-1]) & (ytar[g] == 0)
        return y, u, om, stop

    def _trunk(self, lowest, reach, xp):
        """(heights, u, ω, ended) of the solution at z = c + iy on the ladder y_k = 10·reach·10^{-3k} down to
        ``lowest`` (extended as needed and cached per array module); a rung the continuation cannot reach ends the
        ladder for good (``ended``)."""
        cache = self.__dict__.setdefault("_trunks", {})
        key = (xp.__name__, float(reach))
        if key not in cache:
            z0 = xp.asarray([self._center() + 10.0 * reach * 1j])
            u0, o0 = self._start(z0)
            u0, o0, conv, _, _ = self._newton(z0, u0, o0, 50)
            if not bool(conv.all()):
                return xp.empty(0), xp.empty(0, complex), xp.empty((len(self.factors), 0), complex), True
            cache[key] = [[10.0 * reach], [u0[0]], [o0[:, 0]], False]
        ys, us, oms, ended = cache[key]
        scale = self._scale()
        while ys[-1] > lowest and not ended and ys[-1] > 1e-290 * scale:
            target = ys[-1] / self._TRUNK_RUNG
            one = xp.asarray([target])
            u, om, y, _, k, _ = self._descend(xp.asarray([self._center()]), one, xp.asarray([ys[-1]]),
                                              xp.asarray([us[-1]]), xp.stack([oms[-1]], axis=1),
                                              xp.zeros(1, int), xp.asarray([1e-300]), scale)
            if k is not None or not float(y[0]) <= target:
                cache[key][3] = True
                break
            ys.append(target)
            us.append(u[0])
            oms.append(om[:, 0])
        return xp.asarray(ys), xp.stack(us), xp.stack(oms, axis=1), cache[key][3]

    # --- Measure interface ----------------------------------------------------------------------------------
    _FAR = 1e8              # |z| beyond _FAR·r (r: the moments' radius, :meth:`_radius`): the moment series
    _FAR_TERMS = 8

    def _far(self, z):
        """Where |z| > _FAR·r, the points at which G comes from its expansion at infinity (:meth:`_far_series`):
        there the continuation would start at a height of ~|z| and take its steps in units of r, which float64
        no longer resolves (it stalled at |z| ~ 1e15 for a law of radius 8)."""
        r = self._radius()
        if not (np.isfinite(r) and r > 0):
            return np.zeros(np.shape(z), dtype=bool)
        return np.abs(z) > self._FAR * r

    def _far_series(self, z):
        """(1 + M, M, M′) at far points from m_0 … m_K: 1 + M = Σ_k m_k z^{-k}; the first term left out is
        ~(r/|z|)^{K+1} < 1e-64 relative."""
        m = np.concatenate([[1.0], self._moments(self._FAR_TERMS)])
        zi = 1.0 / z
        one_m = sum(m[k] * zi ** k for k in range(m.size))
        dm = -sum(k * m[k] * zi ** (k + 1) for k in range(1, m.size))
        return one_m - 1.0, one_m, dm

    def _g(self, z):
        z = B.as_array(z, complex)
        far = self._far(z) if B.module_of(z) is np else None
        if far is not None and far.any():
            g, dg = np.empty(z.shape, complex), np.empty(z.shape, complex)
            _, one_m, dm = self._far_series(z[far])
            g[far], dg[far] = one_m / z[far], dm / z[far] - one_m / z[far] ** 2
            if (~far).any():
                g[~far], dg[~far] = self._g(z[~far])
            return g, dg
        u, om, zhat = self._solve(z.ravel())
        g, dg = self._g_from(zhat, u, om)
        return g.reshape(z.shape), dg.reshape(z.shape)

    def _pdf(self, x):
        """Density of the continuous part: -Im G(x + i0)/π, solved on the real axis itself.

        ``pdf(x, backend="cupy")`` (or x a CuPy array) solves all points in one batch on the GPU and returns a CuPy
        array; the support and atoms, a few scalars, are located on the host first (they are cached)."""
        xp = B.module_of(x)
        out = xp.zeros(x.shape)
        sup = self.continuous_support()
        if sup is None:
            return out
        locs, _ = self.atoms()
        inside = (x > sup[0]) & (x < sup[1]) & ~xp.isin(x, xp.asarray(locs))
        if inside.any():
            out[inside] = self._solve_density(x[inside])[2]
        return out

    def _solve_density(self, x):
        """(u, ω, ρ) at real points x: the solution and the continuous part's density -Im G/π (≥ 0) there.

        Next to an atom G is dominated by the atom's pole, and the outer unknown's error (Newton's relative
        tolerance ``tol``) moves G by |∂G/∂u|·tol·|u| ∝ |G|²·tol — for ⊠ at 1e-10 from an atom of mass 0.004
        that is 1e3 times the density (the measured noise was 1.6–3.8 times the floor at tol). Where |Im G| is
        below that floor with u moved by 4·tol relative, the density is not resolved and is reported as 0: the mass
        so dropped is below the floor times the width where it happens (~1e-12 for that case), while the noise,
        integrated, put 5e-5 of spurious mass next to the atom."""
        u, om, zhat = self._solve(B.as_array(x, float) + 0j)
        g_all, _ = self._g_from(zhat, u, om)
        g = self._without_atoms(zhat, g_all)
        rho = np.maximum(-g.imag / np.pi, 0.0)
        if self.atoms()[0].size:
            with np.errstate(all="ignore"):
                g_moved, _ = self._g_from(zhat, u * (1.0 + 4.0 * self.tol), om)
                floor = np.abs(g_moved - g_all)
            rho = np.where(np.abs(g.imag) > floor, rho, 0.0)
        return u, om, rho

    def _without_atoms(self, zhat, g):
        """G of the continuous part alone at ẑ, from the whole G: the atoms' poles Σ a_k/(ẑ - x_k) are removed, so
        that a point evaluated at a small height next to an atom does not pick up the atom's Cauchy tail."""
        locs, masses = self.atoms()
        if locs.size:
            with np.errstate(all="ignore"):
                poles, _ = atom_cauchy(zhat, locs, masses)
            g = g - np.where(zhat.imag > 0, poles, 0.0)
        return g

    def _moment(self, k):
        if k == 0:
            return 1.0
        return float(self._moments(k)[k - 1])

    def _var(self):
        """The variance from the factors' own variances, without the cancellation of m₂ − m₁² (a law far from 0
        relative to its width): for ⊞ free cumulants add, κ₂ = Σ t_i Var μ_i; for ⊠ the normalised variances
        add, Var/m₁² = Σ t_i Var μ_i/m₁(μ_i)² (from m₂ = m₁² (1 + Σ t_i (m₂ᵢ/m₁ᵢ² − 1)), Nica & Speicher 2006)."""
        return self._variance([(mu.var(), mu.moment(1), t) for mu, t in self.factors])

    def _radius(self, K=8):
        """max_k m_{k+1}/m_k over the absolute moments' proxies |m_k| (k < K): a lower bound on the support's radius
        that tends to it, for a start above a far-out small mass."""
        m = np.abs(np.concatenate([[1.0], self._moments(K)]))
        with np.errstate(all="ignore"):
            ratios = m[1:] / m[:-1]
        ratios = ratios[np.isfinite(ratios)]
        return float(ratios.max()) if ratios.size else 0.0

    def _scale_ratio(self):
        r, sc = self._radius(), self._scale()
        return r / sc, f"the support's radius ≳ {r:.3g} against the root mean square {sc:.3g}"

    def _scale(self):
        m1 = abs(self._moments(2)[0])
        m2 = self._moments(2)[1]
        return max(float(np.sqrt(max(m2, 0.0))), m1, 1e-300)

    # --- atoms ----------------------------------------------------------------------------------------------
    def _combine_atoms(self, combine):
        """Atoms at combine((a_i), (t_i)) with mass Σ t_i p_i - (T - 1) > 0 (one atom per factor)."""
        per = []
        for mu, t in self.factors:
            locs, masses = mu.atoms()
            keep = t * (1 - masses) < 1.0
            per.append([(a, p, t) for a, p in zip(locs[keep], masses[keep])])
        out = {}
        if all(per):
            for combo in itertools.product(*per):
                mass = sum(t * p for _, p, t in combo) - (self.T - 1.0)
                if mass > 1e-15:
                    loc = combine([a for a, _, _ in combo], [t for _, _, t in combo])
                    out[loc] = out.get(loc, 0.0) + mass
        return out

    # --- support --------------------------------------------------------------------------------------------
    _SIGNIFICANT = 1e-10          # mass ρ·Δx of a grid cell below which it counts as no density (_significant)
    _MAX_SEEDS = 4096             # candidate band locations taken from the factors' features (beyond: none)

    @classmethod
    def _significant(cls, x, rho):
        """Where the density carries mass: ρ(x_j)·Δx_j > 1e-10, Δx_j the width of grid point j's cell (x sorted).
        A fraction of max ρ would discard a band whose density is 10¹² times lower than another's only because it
        sits 10¹² times further out; and a positive ρ alone takes the engine's rounding-level values (1e-52 next to
        a band of ⊞, erratic 1e-13 … 10 in the far tail of a push-forward product, holding ~1e-10 in all) for bands.
        The mass so ignored is below the 1e-8 to which the mass accounting holds the books."""
        x = np.asarray(x, float)
        if x.size == 1:
            return rho > 0
        cell = np.gradient(x)
        return rho * np.abs(cell) > cls._SIGNIFICANT

    def _seeds(self, lo, hi):
        """Where bands may sit, from the factors' own features: for every choice of one feature per factor (an atom,
        a band's edges or middle) the point that choice maps to (Σ t_i f_i for ⊞, Π f_i^{t_i} for ⊠), inside the
        hull (lo, hi). Empty when there are more than ``_MAX_SEEDS`` choices (many factors: the scale grid alone is
        used)."""
        feats = []
        for mu, _ in self.factors:
            f = list(mu.atoms()[0])
            for a, b in mu.intervals():
                f += [a, b, 0.5 * (a + b)]
            feats.append(np.unique(np.asarray(f, float)))
        if int(np.prod([max(f.size, 1) for f in feats], dtype=float)) > self._MAX_SEEDS:
            return np.empty(0)
        t = np.array([t for _, t in self.factors])
        seeds = np.unique(self._combine_seeds(feats, t))
        return seeds[(seeds > lo) & (seeds < hi)]

    def _combine_seeds(self, feats, t):
        raise NotImplementedError

    def _around(self, seeds, lo, hi):
        raise NotImplementedError

    def _scale_grid(self, lo, hi, seeds):
        raise NotImplementedError

    def _search_grid(self, lo, hi):
        """The second search: the hull's 200 points, a grid over the law's scales (logarithmic for ⊠) and fine
        grids around every seed (:meth:`_seeds`): bands are found whatever their scale relative to the hull."""
        seeds = self._seeds(lo, hi)
        parts = [self._hull_grid(lo, hi), self._scale_grid(lo, hi, seeds)]
        if seeds.size:
            parts.append(self._around(seeds, lo, hi))
        x = np.unique(np.concatenate(parts))
        return x[(x > lo) & (x < hi)]

    def _missed(self, bands, lo, hi):
        """Whether the first search left a band out: density with mass next to a seed, outside every band found.
        (Cheap: only the seeds' neighbourhoods that lie outside the bands are solved.)"""
        seeds = self._seeds(lo, hi)
        if not seeds.size:
            return False
        x = np.unique(self._around(seeds, lo, hi))
        x = x[(x > lo) & (x < hi)]
        for a, b in bands:
            margin = 1e-9 * max(abs(a), abs(b), hi - lo)
            x = x[(x < a - margin) | (x > b + margin)]
        x = self._off_atoms(x, lo, hi)
        if not x.size:
            return False
        return bool(self._significant(x, self._solve_density(x)[2]).any())

    def _off_atoms(self, x, lo, hi):
        """x without the points next to an atom (whose pole would swamp the density)."""
        locs = self.atoms()[0]
        if locs.size:
            gap = np.maximum(1e-9 * np.abs(locs)[None, :], 1e-12 * (hi - lo))
            x = x[np.all(np.abs(x[:, None] - locs[None, :]) > gap, axis=1)]
        return x

    @staticmethod
    def _hull_grid(lo, hi):
        """The first search: 200 evenly spaced points of the hull (irrationally offset, so no point lands on a
        rational atom). Enough for every law whose bands are not far narrower than, or far apart within, the hull;
        the mass accounting sends the others to :meth:`_search_grid`."""
        return lo + (hi - lo) * (np.arange(200) + 0.3819660112501051) / 200

    @cached_property
    def _support(self):
        """(bands, splits): the bands of the continuous part and, inside them, the sharp local minima of the
        density (where quadrature panels are split). First on the hull's 200-point grid; where that finds nothing,
        or density is left next to a seed (:meth:`_missed`), or the mass accounting fails later, on the
        multi-scale grid (:meth:`_search_grid`)."""
        if self.continuous_mass <= 1e-14:
            return None
        lo, hi = self._bracket_hull()
        if not self.__dict__.get("_multiscale"):
            found = self._bands_on(self._hull_grid(lo, hi), lo, hi)
            if found is not None and not self._missed(found[0], lo, hi):
                return found
            self._multiscale = True
        found = self._bands_on(self._search_grid(lo, hi), lo, hi)
        if found is None:
            raise ConvergenceError(f"{self.kind}: no continuous density found on the bracket [{lo}, {hi}]",
                                   z=complex(lo), iteration=0, residual=0.0)
        return found

    def _bands_on(self, x, lo, hi):
        """(bands, splits) read off the density on the grid x (None where no cell of it holds density)."""
        x = self._off_atoms(x, lo, hi)
        u, om, rho = self._solve_density(x)
        sig = self._significant
        pos = np.nonzero(sig(x, rho))[0]
        if pos.size == 0:
            return None
        if pos[0] == 0:
            # density already at the first grid point: look closer to the bracket's end for a gap (a soft edge
            # just above lo) before concluding that the continuous part reaches lo (a hard edge)
            xc = (lo + (x[0] - lo) * np.array([1e-8, 1e-4, 1e-2, 0.1, 0.2, 0.5]))
            uc, oc, rc = self._solve_density(xc)
            x, u = np.concatenate([xc, x]), np.concatenate([uc, u])
            om, rho = np.concatenate([oc, om], axis=1), np.concatenate([rc, rho])
            pos = np.nonzero(sig(x, rho))[0]
            zero = np.nonzero(~sig(xc, rc))[0]
            if zero.size:
                pos = pos[pos > zero[-1]]
        if pos[-1] == x.size - 1:
            # likewise at the top of the bracket
            xc = hi - (hi - x[-1]) * np.array([0.5, 0.2, 0.1, 1e-2, 1e-4, 1e-8])
            uc, oc, rc = self._solve_density(xc)
            n0 = x.size
            x, u = np.concatenate([x, xc]), np.concatenate([u, uc])
            om, rho = np.concatenate([om, oc], axis=1), np.concatenate([rho, rc])
            keep = sig(x, rho)
            zero = np.nonzero(~keep[n0:])[0]
            if zero.size:
                keep[n0 + zero[0]:] = False
            first = pos[0]
            pos = np.nonzero(keep)[0]
            pos = pos[pos >= first]
        # narrow gaps: every interior local minimum of ρ on the grid is minimised locally; a minimum at zero
        # density joins the grid as an outside point, and splits the band there
        first, last = x[pos[0]], x[pos[-1]]
        x, u, om, rho, splits = self._probe_local_minima(x, u, om, rho, pos, sig)
        inside = sig(x, rho) & (x >= first) & (x <= last)
        pos = np.nonzero(inside)[0]
        # bands: runs of positive density on the grid; every edge is refined on the real branch
        starts = [j for j in pos if j == pos[0] or not inside[j - 1]]
        ends = [j for j in pos if j == pos[-1] or not inside[j + 1]]
        bands = []
        for j0, j1 in zip(starts, ends):
            a = lo if j0 == 0 else self._refine_edge(x[j0 - 1], u[j0 - 1], om[:, j0 - 1], x[j0], u[j0], om[:, j0])
            b = hi if j1 == x.size - 1 else self._refine_edge(x[j1 + 1], u[j1 + 1], om[:, j1 + 1], x[j1], u[j1],
                                                              om[:, j1])
            bands.append((float(a), float(b)))
        return bands, [t for t in splits if any(a < t < b for a, b in bands)]

    def _probe_local_minima(self, x, u, om, rho, pos, sig):
        """Look for gaps narrower than the grid spacing: at each interior local minimum of the grid density,
        minimise ρ on the neighbouring cells (bounded Brent); where it reaches zero, add that point and its
        (real-branch) solution to the grid, sorted. Minima with positive density are returned as split points."""
        def density(t):
            return float(self._solve_density(np.array([t]))[2][0])

        found, splits = [], []
        ok = sig(x, rho)
        for j in range(pos[0] + 1, pos[-1]):
            if ok[j] and ok[j - 1] and ok[j + 1] and rho[j] < rho[j - 1] and rho[j] <= rho[j + 1]:
                width = x[j + 1] - x[j - 1]
                r = optimize.minimize_scalar(density, bounds=(x[j - 1], x[j + 1]), method="bounded",
                                             options={"xatol": 1e-10 * width})
                (splits if r.fun * 0.5 * width > self._SIGNIFICANT else found).append(float(r.x))
        if not found:
            return x, u, om, rho, splits
        xf = np.array(found)
        uf, of, rf = self._solve_density(xf)
        x, u = np.concatenate([x, xf]), np.concatenate([u, uf])
        om, rho = np.concatenate([om, of], axis=1), np.concatenate([rho, rf])
        order = np.argsort(x)
        return x[order], u[order], om[:, order], rho[order], splits

    # The books must balance to 1e-8 (a missed band loses its whole mass, far more): the quadrature's ~1e-10, and the
    # edge tails (Measure.edge_tails) for the mass beyond the last node at a singular edge (MP(2) ⊠ MP(2): 1.2e-10).
    _MASS_TOL = 1e-8              # books off by more than this are closed by an edge tail where one agrees, or raise

    @cached_property
    def _cdf_table(self):
        """The cdf table of :class:`Measure`, accepted only once the mass is accounted for
        (:meth:`mass_accounting`): a band the search missed would otherwise make a law that is quietly short. The
        bands are first searched on the hull's 200-point grid (fast, and enough for most laws); where the books do
        not balance, again on the multi-scale grid (:meth:`_search_grid`), and a second failure raises."""
        table = cumulative_panels(self._panel_tables, self._tails)
        acc = self._accounting(*table[:2])
        if abs(1.0 - acc["total"]) > self._MASS_TOL and not self.__dict__.get("_multiscale"):
            # bands missing from the first search (200 points of the hull): search again on the multi-scale grid
            self._multiscale = True
            for name in ("_support", "_quad_panels", "_quad", "_panel_tables", "_tails", "_tail_cells", "_cdf_spline"):
                self.__dict__.pop(name, None)
            table = cumulative_panels(self._panel_tables, self._tails)
            acc = self._accounting(*table[:2])
        if abs(1.0 - acc["total"]) > self._MASS_TOL and self._close_by_tail(1.0 - acc["total"]):
            table = cumulative_panels(self._panel_tables, self._tails)
            acc = self._accounting(*table[:2])
        self._account(acc)
        self._report_tails()
        return table

    _TAIL_AGREEMENT = 0.02        # how far the books may differ from an edge tail's power-law estimate, relative

    def _close_by_tail(self, missing):
        """Where the books are off by ``missing`` and the largest edge tail's power-law estimate agrees with that to
        2 % of its mass, the tail is what float64 cannot resolve and its mass is 1 minus everything resolved (the
        estimate drifts: at depth 200 the critical ReLU law's exponent at 0 moves from −0.995429 at 1e-20 to
        −0.995003 at 1e-295, so a power law read at the last nodes is off by 3e-4 of the tail). Returns whether the
        tail was so set; ``mass_accounting()["tail_estimates"]`` keeps the power-law values."""
        flat = [(m, k, side) for k, pair in enumerate(self._tails) for side, (m, _) in enumerate(pair)]
        if not flat:
            return False
        mass, k, side = max(flat)
        if not mass > 0 or abs(missing) > self._TAIL_AGREEMENT * mass:
            return False
        self._tail_estimates = self.edge_tails()
        tails = [list(pair) for pair in self._tails]
        tails[k][side] = (mass + missing, tails[k][side][1])
        self._tails = [tuple(pair) for pair in tails]
        return True

    def mass_accounting(self):
        """{"bands": [(a, b, mass), …], "atoms": Σ atom masses, "total": the two together, "tails": the edge tails
        included in the bands' masses (:meth:`edge_tails`), "tail_estimates": their power-law values where the books
        set one (see below)}: the mass of every band (the integral of the density) and of the atoms. A law whose bands
        were all found has total 1 (to the quadrature's ~1e-10 for most laws); the cdf and everything built on it
        raise :class:`ConvergenceError` when the total is off by more than ``_MASS_TOL``. Where the density
        crowds into an edge beyond float64's reach (a deep critical ReLU network's JJᵀ law at 0), the mass there is
        1 minus the resolved mass, accepted only where it agrees with the edge's power law to 2 %."""
        xs, cs, _ = self._cdf_table
        acc = self._accounting(xs, cs)
        acc.update(tails=self.edge_tails(), tail_estimates=getattr(self, "_tail_estimates", self.edge_tails()))
        return acc

    def _accounting(self, xs, cs):
        bands = []
        for a, b in self.intervals():
            inside = (xs >= a) & (xs <= b)
            mass = float(cs[inside][-1] - cs[inside][0]) if inside.any() else 0.0
            bands.append((a, b, mass))
        atoms = float(np.sum(self.atoms()[1]))
        return {"bands": bands, "atoms": atoms, "total": atoms + (float(cs[-1]) if cs.size else 0.0)}

    def _account(self, acc):
        """Raise where the books of :meth:`_accounting` do not balance to ``_MASS_TOL``."""
        missing = 1.0 - acc["total"]
        if abs(missing) > self._MASS_TOL:
            where = ", ".join(f"[{a:.4g}, {b:.4g}]: {m:.6g}" for a, b, m in acc["bands"][:8])
            raise ConvergenceError(
                f"{self.kind}: mass accounting failed for {self!r}: the bands found ({where}"
                f"{', …' if len(acc['bands']) > 8 else ''}) and the atoms ({acc['atoms']:.6g}) hold "
                f"{acc['total']:.10g}, not 1 ({missing:+.3g} {'missing' if missing > 0 else 'too much'}); a band "
                f"was not found or its density not resolved",
                z=None, iteration=0, residual=float(missing))

    def intervals(self):
        """Bands of the continuous part: located on a grid that follows the law's scales (:meth:`_search_grid`:
        the hull, a logarithmic grid for ⊠, and fine grids at every scale around the points the factors' atoms and
        band edges map to), with every local minimum of the grid density searched for a gap, and each edge refined
        to a real critical point of z(m). A gap whose neighbourhood shows no local minimum on the grid is not
        resolved; a band missed altogether shows in the mass accounting of the cdf (:meth:`mass_accounting`)."""
        return [] if self._support is None else list(self._support[0])

    def _panels(self):
        """Quadrature panels: the bands, split at the density's sharp interior minima (near-gaps), where
        double-exponential quadrature would otherwise converge slowly."""
        if self._support is None:
            return []
        bands, splits = self._support
        out = []
        for a, b in bands:
            cuts = [a] + sorted(t for t in splits if a < t < b) + [b]
            out += list(zip(cuts[:-1], cuts[1:]))
        return out

    def continuous_support(self):
        if self._support is None:
            return None
        bands = self._support[0]
        return bands[0][0], bands[-1][1]

    def _refine_edge(self, x_out, u_out, om_out, x_in, u_in, om_in):
        """The spectral edge between a grid point outside the support (x_out) and one inside (x_in): the real
        critical point of z(u) (secant on dΨ/du = 0 along the real branch), accepted only if it lies between the
        two; otherwise (the real branch left the bracket) bisection on the sign of the density."""
        edge = self._edge_on_real_branch(u_out, om_out, u_in)
        if edge is not None and min(x_out, x_in) <= edge <= max(x_out, x_in):
            return edge
        return self._edge_by_sections(x_out, x_in)

    def _edge_by_sections(self, x_out, x_in, rounds=14, k=16):
        """The edge between x_out (no density) and x_in (density) by k-section on the sign of the density: each
        round solves k points side by side and keeps the cell where the density starts (k = 16, 14 rounds: the
        bracket shrinks by 17¹⁴ ≈ 10¹⁷, to rounding), or until the mass the bracket can hold, its width times the
        density inside, is below 10⁻¹⁵ (an edge in a far tail of negligible mass, costly to solve near)."""
        ref = float(self._solve_density(np.array([x_in]))[2][0])
        a, b = x_out, x_in
        for _ in range(rounds):
            if abs(b - a) * ref <= 1e-3 * self._SIGNIFICANT:       # the mass still in doubt is negligible
                break
            t = a + (b - a) * np.arange(1, k + 1) / (k + 1)
            if np.all((t == a) | (t == b)):
                break
            inside = self._solve_density(t)[2] > 1e-10 * ref
            j = int(np.argmax(inside)) if inside.any() else k      # first point from a's side with density
            a, b = (a if j == 0 else t[j - 1]), (t[j] if j < k else b)
        return 0.5 * (a + b)

    def _edge_on_real_branch(self, u_out, om_out, u_in):
        """Secant on dΨ/du = 0 along the real branch from the outside solution towards Re u_in; None if it fails."""
        u0 = float(u_out.real)
        om0 = om_out.real.astype(float)
        target = float(u_in.real)
        d0 = self._real_denom(u0, om0)
        if d0 is None:
            return None
        ua, da, oma = u0, d0[0], d0[1]
        # march towards the inside with growing steps until dΨ/du changes sign or the real branch ends
        step = (target - u0) / 64.0
        ub = ua
        for _ in range(200):
            ub = ua + step
            if abs(ub - u0) > 8 * abs(target - u0):
                return None
            r = self._real_denom(ub, oma)
            if r is None or not np.isfinite(r[0]):
                step /= 2
                if abs(step) < 1e-15 * max(abs(ua), 1e-300):
                    return self._x_of(ua, oma)
                continue
            db, omb = r
            if np.sign(db) != np.sign(da):
                break
            ua, da, oma = ub, db, omb
            step *= 1.5
        else:
            return None
        # secant (safeguarded by bisection) on [ua, ub]; the answer is the point with the smallest |dΨ/du|
        lo_u, lo_d, lo_om = ua, da, oma
        hi_u, hi_d = ub, db
        best = (abs(lo_d), lo_u, lo_om)
        for _ in range(100):
            uc = lo_u - lo_d * (hi_u - lo_u) / (hi_d - lo_d)
            if not (min(lo_u, hi_u) < uc < max(lo_u, hi_u)):
                uc = 0.5 * (lo_u + hi_u)
            r = self._real_denom(uc, lo_om)
            if r is None:
                uc = 0.5 * (lo_u + hi_u)
                r = self._real_denom(uc, lo_om)
                if r is None:
                    break
            dc, omc = r
            if abs(dc) < best[0]:
                best = (abs(dc), uc, omc)
            if np.sign(dc) == np.sign(lo_d):
                lo_u, lo_d, lo_om = uc, dc, omc
            else:
                hi_u, hi_d = uc, dc
            if abs(hi_u - lo_u) <= 1e-15 * max(abs(lo_u), 1e-300) or dc == 0:
                break
        return self._x_of(best[1], best[2])

    def _real_denom(self, u, om):
        """On the real branch at outer value u: inner Newton for real ω, then dΨ/du. None if no real ω."""
        # a real ω can land exactly on an atom of a factor: the transforms are then ±inf/nan, which is handled
        # below (None), so the division warnings are noise
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._real_denom_at(u, om)

    def _real_denom_at(self, u, om):
        om = np.array(om, dtype=float)
        for i, (mu, _) in enumerate(self.factors):
            w = om[i]
            for _ in range(100):
                F, dF = self._inner(mu, np.array([w + 0j]))
                F, dF = float(F[0].real), float(dF[0].real)
                if not np.isfinite(F) or not np.isfinite(dF) or dF == 0:
                    return None
                if abs(F - u) <= 1e-15 * max(abs(u), 1.0):
                    break
                dw = (F - u) / dF
                w = w - dw
                if abs(dw) <= 1e-15 * max(abs(w), 1e-300):
                    break
            F, _ = self._inner(mu, np.array([w + 0j]))
            if not abs(F[0] - u) <= 1e-10 * max(abs(u), 1e-300):
                return None
            om[i] = w
        F = np.empty(len(self.factors))
        dF = np.empty(len(self.factors))
        for i, (mu, _) in enumerate(self.factors):
            f, d = self._inner(mu, np.array([om[i] + 0j]))
            dF[i] = d[0].real
        _, b, a = self._outer(np.array([u + 0j]), om[:, None] + 0j)
        return float((b[0] + (a[:, 0] / dF).sum()).real), om

    def _bracket_hull(self):
        raise NotImplementedError

    def _x_of(self, u, om):
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
class FreeProduct(_Convolution):
    """ν = ⊠_i μ_i^{⊠t_i} for measures μ_i on [0, ∞) and real t_i ≥ 1; see the module docstring for the method.

    Convention: the law of the product of free positive elements, e.g. of A^{1/2} B A^{1/2} for free A, B;
    S_ν = Π_i S_{μ_i}^{t_i} with S(w) = (1 + w)/(w M⁻¹(w)) (:mod:`rmtnet.spectra.transforms`). Use
    :func:`free_mult` / :func:`free_mult_power` to build one.
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

    def atoms(self):
        locs, masses = self._atoms
        return locs.copy(), masses.copy()

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


class FreeSum(_Convolution):
    """ν = ⊞_i μ_i^{⊞t_i} (real t_i ≥ 1) by subordination, G_i(ω_i) = G_ν(z), z = Σ t_i ω_i - (T - 1)/G_ν(z)."""

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

    def atoms(self):
        locs, masses = self._atoms
        return locs.copy(), masses.copy()

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


# ---------------------------------------------------------------------------------------------------------------
def _solver_settings(tol, max_iter):
    """``tol`` in (0, 1) and ``max_iter`` an integer ≥ 1, or ValueError naming them."""
    return (real_scalar("tol", tol, lo=0.0, hi=1.0, lo_open=True, hi_open=True),
            integer_at_least("max_iter", max_iter, 1))


def _collect(cls, pairs, tol, max_iter):
    """Flatten nested convolutions of the same kind and merge repeated factors (powers add).

    Exact because the transforms linearise: (μ ⊠ ν)^{⊠t} has S-transform S_μ^t S_ν^t, so it is μ^{⊠t} ⊠ ν^{⊠t}
    (and (μ ⊞ ν)^{⊞t} = μ^{⊞t} ⊞ ν^{⊞t}, R-transforms adding). A nested product is thus one Newton system of the
    distinct factors, never a solve inside a solve."""
    merged = {}
    order = []
    for mu, t in pairs:
        if not isinstance(mu, Measure):
            raise ValueError(f"factors must be Measure objects, got {type(mu).__name__}")
        inner = [(mu, t)]
        if type(mu) is cls:
            inner = [(m, s * t) for m, s in mu.factors]
        for m, s in inner:
            if id(m) not in merged:
                order.append(m)
                merged[id(m)] = 0.0
            merged[id(m)] += s
    return [(m, merged[id(m)]) for m in order]


def _check_nonnegative(mu, name):
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
    remaining law (dilated) when one is, else an :class:`Affine` of a :class:`FreeProduct`."""
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
    """μ^{⊠t} for real t ≥ 1: the measure with S-transform S_μ^t (for integer t, μ ⊠ … ⊠ μ, t times)."""
    tol, max_iter = _solver_settings(tol, max_iter)
    if not isinstance(mu, Measure):
        raise ValueError(f"mu must be a Measure, got {type(mu).__name__}")
    t = real_scalar("t", t, lo=1.0)
    _check_nonnegative(mu, "mu")
    return FreeProduct(_collect(FreeProduct, [(mu, t)], tol, max_iter), tol, max_iter)


def free_add(*measures, tol=_DEFAULT_TOL, max_iter=_DEFAULT_MAX_ITER):
    """Free additive convolution μ₁ ⊞ μ₂ ⊞ … (R-transforms add), by the same continuation engine."""
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
    """μ^{⊞t} for real t ≥ 1 (free cumulants times t)."""
    tol, max_iter = _solver_settings(tol, max_iter)
    if not isinstance(mu, Measure):
        raise ValueError(f"mu must be a Measure, got {type(mu).__name__}")
    t = real_scalar("t", t, lo=1.0)
    return FreeSum(_collect(FreeSum, [(mu, t)], tol, max_iter), tol, max_iter)
