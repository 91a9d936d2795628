"""The bands and the mass books of the ⊠/⊞ engine: where the continuous part lives (a grid search that follows the
law's scales, gaps narrower than the grid, edges on the real branch) and the check that the bands found and the atoms
hold mass 1 (:mod:`rmtnet.spectra.free` describes the method; the grid, runs, k-section and books are the shared
helpers of :mod:`rmtnet.spectra.continuation`)."""
from __future__ import annotations

from functools import cached_property

import numpy as np
from scipy import optimize

from rmtnet._validation import ConvergenceError
from ._subordination import Subordination
from ..continuation import cell_grid, check_books, dense, k_section, mass_books, runs
from ..measures import cumulative_panels

__all__ = ["Convolution"]


class Convolution(Subordination):
    """The ⊠/⊞ engine (:class:`~rmtnet.spectra._subordination.Subordination`) with the bands of its continuous part,
    their edges and the books of its mass; :class:`~rmtnet.spectra.free.FreeProduct` and
    :class:`~rmtnet.spectra.free.FreeSum` are its two kinds."""

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
        return dense(x, rho, cell_mass=cls._SIGNIFICANT)

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
        return cell_grid(lo, hi, 200, offset=0.3819660112501051)

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
        # bands: runs of positive density on the grid; every edge is refined on the real branch
        bands = []
        for j0, j1 in runs(inside):
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
        """The books (:func:`~rmtnet.spectra.continuation.mass_books`) from the cdf table (xs, cs): each band's mass
        and the continuous part's whole mass from the table, the atoms from :meth:`atoms`."""
        bands, masses = self.intervals(), []
        for a, b in bands:
            inside = (xs >= a) & (xs <= b)
            masses.append(float(cs[inside][-1] - cs[inside][0]) if inside.any() else 0.0)
        return mass_books(bands, masses, float(np.sum(self.atoms()[1])), continuous=float(cs[-1]) if cs.size else 0.0)

    def _account(self, acc):
        """Raise where the books of :meth:`_accounting` do not balance to ``_MASS_TOL``."""
        check_books(acc, self._MASS_TOL, self.kind, self)

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
        out, inn = k_section(lambda t: self._solve_density(t)[2] > 1e-10 * ref, [x_out], [x_in], points=k,
                             rounds=rounds,
                             settled=lambda a, b: np.abs(b - a) * ref <= 1e-3 * self._SIGNIFICANT)  # mass in doubt
        return 0.5 * (out[0] + inn[0])

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


