"""The subordination engine of ⊠ and ⊞: the arrowhead Newton system, its continuation in z, and the transforms read
off its solution (:mod:`rmtnet.spectra.free` describes the method; the bands and the mass books are in
:mod:`rmtnet.spectra._support`, the descent's step control and stall rule in :mod:`rmtnet.spectra.continuation`).

For ν = ⊠_i μ_i^{⊠t_i} (or ⊞) the unknowns are an outer value u (a function of G_ν(z)) and the subordination points
ω_i, one per factor (Belinschi & Bercovici, "A new approach to subordination results in free probability",
J. Anal. Math. 101, 2007); each factor enters through its own transform and derivative, and a Newton step costs
O(number of factors) by a Schur complement. Every z = x + iy is reached by continuation from far above the spectrum.
"""
from __future__ import annotations

import contextvars
import itertools
import time
import warnings

import numpy as np

from ... import backend as B
from rmtnet._validation import ConvergenceError, real_scalar, whole_number
from ..continuation import Descent
from ..measures import Measure, atom_cauchy

__all__ = ["Subordination", "DEFAULT_TOL", "DEFAULT_MAX_ITER", "TIME_BUDGET"]

DEFAULT_TOL = 1e-13           # the relative Newton tolerance of the ⊠/⊞ engine
DEFAULT_MAX_ITER = 2000       # Newton iterations per point before ConvergenceError
TIME_BUDGET = 40.0            # CPU seconds a continuation of up to BUDGET_POINTS points may take before ConvergenceError
BUDGET_POINTS = 4096          # a larger batch gets TIME_BUDGET per BUDGET_POINTS points (10⁶ grid points: 2.7 h)
# The budgets of the continuations under way in this thread (or asyncio task): id(law) → (deadline, budget). A nested
# solve of the same law shares its caller's budget; another thread starts with none of them, so two threads may
# evaluate one law at once (the budget was once an attribute of the law, which the first thread to finish deleted).
_BUDGETS = contextvars.ContextVar("rmtnet_continuation_budgets", default={})


class Subordination(Measure):
    """Common machinery of ⊠ and ⊞: the arrowhead Newton system and its continuation in z.

    A subclass defines the factors' inner transforms (:meth:`_inner`), the outer equation (:meth:`_outer`,
    :meth:`_zeta`), the far-field start (:meth:`_start`) and the physical sheet (:meth:`_physical`);
    :class:`rmtnet.spectra._support.Convolution` adds the bands and the mass books."""

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

    def __init__(self, factors, tol=DEFAULT_TOL, max_iter=DEFAULT_MAX_ITER):
        self.factors = factors                        # list of (Measure, t)
        self.T = float(sum(t for _, t in factors))
        self.tol = real_scalar("tol", tol, lo=0, lo_open=True)
        self.max_iter = whole_number("max_iter", max_iter, 1)

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
        """Up to ``iters`` Newton steps at fixed z, converged where the step is below ``tol`` (relative) from a point
        whose residual was below 1e-9 (or where Newton stalls at the rounding floor, below). Returns (u, ω,
        converged mask, residual, iterations used)."""
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
            if act.all():
                act = slice(None)       # every point still active: views instead of copies (the same arithmetic)
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
            step = np.abs(du) / scale_u + (np.abs(dom) / np.maximum(np.abs(oa), 1e-300)).sum(0)
            u[act] = ua + du
            om[:, act] = oa + dom
            used[act] += 1
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
        running = _BUDGETS.get()
        if id(self) in running:                # a retry from afar, or a nested call: the same budget
            return self._solve_within(z, return_state)
        budget = self._time_budget * max(1.0, np.size(z) / BUDGET_POINTS)   # large grids are not stalls
        token = _BUDGETS.set({**running, id(self): (time.process_time() + budget, budget)})
        try:
            return self._solve_within(z, return_state)
        finally:
            _BUDGETS.reset(token)

    _time_budget = TIME_BUDGET

    def _over_budget(self, x, y, active):
        """ConvergenceError where this continuation has used up its CPU-time budget (``TIME_BUDGET`` s per
        ``BUDGET_POINTS`` points, at least ``TIME_BUDGET``): where
        (the lowest height still to be left, and its x) and why (the heights there are those of a nearly singular
        system, next to an atom or a hard edge at 0, that float64 resolves only in ever smaller steps)."""
        deadline, budget = _BUDGETS.get()[id(self)]
        if time.process_time() <= deadline:
            return
        k = active[np.argmin(y[active])]
        raise ConvergenceError(f"{self.kind}: the continuation ran past its time budget of {budget:.3g} s "
                               f"of CPU time with {active.size} point(s) still descending, the lowest at "
                               f"Im z = {float(y[k]):.3g} above x = {float(x[k]):.6g}: next to a hard edge or an "
                               f"atom the system is nearly singular and the steps down shrink{self._reach_note()}",
                               z=complex(x[k], y[k]), iteration=None, residual=None)

    def _solve_within(self, z, return_state):
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
                return self._solve_within(z, return_state)
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
                return self._solve_within(z, return_state)
            raise ConvergenceError(f"{self.kind}: continuation from Im z = {float(y0[k]):.3g} stalled at Im z = "
                                   f"{float(y[k]):.3g}{self._reach_note()}",
                                   z=complex(z[k]), iteration=int(iters[k]), residual=r)
        zhat = x + 1j * y
        if return_state:
            return u, om, zhat, iters
        return u, om, zhat

    def _descend(self, x, ytar, y, u, om, iters, ymin, scale):
        """The continuation proper: from the solutions (u, ω) at heights y down to the targets ytar at x, the step
        in log y grown by 1.5 (up to log 10³) after easy Newton solves and halved after failures (below ``ymin`` the
        next step is the target itself; :class:`~rmtnet.spectra.continuation.Descent`). Returns (u, ω, y, iters,
        k, r): k the first point that stalled (None if none did) and r its residual; points that stall within reach
        of the axis are kept at their height (Cauchy-regularised)."""
        walk = Descent(y, ytar, floor=ymin, grow=1.5, largest=np.log(1e3), smallest=1e-9)
        # A point within Im z ≤ max(1e-10·|x|, 1e-8·scale) of the axis that cannot reach it (a nearly singular
        # system, next to an atom or a hard edge at 0) keeps its value at that height: the density there is the
        # Stieltjes (Cauchy-kernel) regularisation at width y, which preserves mass.
        size = scale + abs(self._center())
        reach = np.where(ytar == 0, np.maximum(1e-10 * np.abs(x), 1e-8 * size), 0.0)
        while not walk.finished:
            act = walk.active()
            self._over_budget(x, y, act)
            ynew = walk.heights(act)
            ua, oa, good, res, used = self._step(x[act], y[act], ynew, u[act], om[:, act], walk.log_step[act],
                                                 ytar[act])
            iters[act] += used
            ga = act[good]
            u[ga], om[:, ga] = ua[good], oa[:, good]
            # easy: at most three Newton steps, or four in the far field (Im z above the law's scale), where the
            # predictor is good to ~1 % and the step may grow
            walk.advance(act, ynew, good, easy=good & ((used <= 3) | ((used <= 4) & (ynew >= scale))))
            stuck = walk.stalled() | (~walk.done & (iters >= self.max_iter))
            kept, failed = walk.settle(stuck, reach)
            if kept.any():
                self._kept_near_axis(kept, x, y, size)
            if failed.any():
                k = int(np.nonzero(failed)[0][0])
                j = np.nonzero(act == k)[0]
                return u, om, y, iters, k, float(res[j[0]]) if j.size else float("nan")
        return u, om, y, iters, None, 0.0

    def _step(self, x, y, ynew, u, om, log_step, ytar):
        """One step of the descent from heights y to ynew at x: predict (Euler, :meth:`_predict`), correct (Newton
        to 1e-4, and to ``tol`` where ynew is the target), accept where Newton converged on the physical sheet
        without a jump. Returns (u, ω, accepted, residual, Newton iterations)."""
        zn = x + 1j * ynew
        ua, oa = self._predict(x + 1j * y, zn, u, om)
        up, op = ua.copy(), oa.copy()
        final = ynew == ytar
        # intermediate steps only need to stay on the branch; the target itself gets the full tolerance
        # small steps are taken where Newton is slow (near a spectral edge the root is nearly double and
        # Newton converges only linearly): give those more iterations.
        budget = 6 if np.all(log_step > 0.05) else 40
        # The residual must be 1e-9 before a step of at most 1e-4 is accepted, in the far field too: accepting a
        # residual of 1e-4 there (Newton's quadratic convergence would make such a point good to ~1e-8) saved an
        # iteration per step, but where a point ends near a singular edge depends on where it starts, and it moved
        # the edge of the Fisher recursion's bands at x = q̂(1 + σ²) (an x^{-1/2} singularity) by 4e-7, the tables
        # built on those edges by 0.4 % a level, and tripled their tabulation's time.
        ua, oa, conv, res, used = self._newton(zn, ua, oa, budget, tol=1e-4)
        if final.any():
            fa = np.nonzero(final & conv)[0]
            u2, o2, c2, r2, n2 = self._newton(zn[fa], ua[fa], oa[:, fa], 30)
            ua[fa], oa[:, fa], conv[fa], res[fa] = u2, o2, c2, r2
            used[fa] += n2
        phys = self._physical(ua, oa, ynew)
        # a branch jump shows as Newton landing far from the predictor (which already carries the expected
        # change, power laws included)
        jump = (np.abs(ua - up) <= 0.5 * np.abs(up) + 1e-3 * np.abs(ua) + 1e-300) | \
               np.all(np.abs(oa - op) <= 0.5 * np.abs(op), axis=0)
        return ua, oa, conv & phys & jump, res, used

    def _kept_near_axis(self, kept, x, y, size):
        """Count the points kept at their height by the stall rule, and say so where that height is coarse."""
        # (a height below float64's resolution of x itself regularises nothing: x ± y are the same doubles)
        coarse = kept & (y > 1e-10 * np.abs(x)) & (y > 1e-13 * size) & (y > 8 * np.finfo(float).eps * np.abs(x))
        if coarse.any():
            warnings.warn(f"{self.kind}: {int(coarse.sum())} point(s) near x = {float(x[coarse][0]):.3g} "
                          f"evaluated at height Im z ≤ {float(y[coarse].max()):.2g} (Newton could not reach "
                          "the axis there); their density is Cauchy-regularised at that width",
                          RuntimeWarning, stacklevel=5)
        self.regularised_points = getattr(self, "regularised_points", 0) + int(kept.sum())

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

    def atoms(self):
        """(locations, masses) of the atoms: each kind's ``_atoms`` (⊠: products, ⊞: sums of the factors' atoms),
        computed once."""
        locs, masses = self._atoms
        return locs.copy(), masses.copy()

