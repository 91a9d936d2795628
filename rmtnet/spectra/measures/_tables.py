"""The generic tables of a law's continuous part, built from its density alone: tanh-sinh nodes per quadrature
panel, the cumulative table with its cubic Hermite interpolant and power-law edge tails (the generic ``cdf`` and
``ppf`` of :class:`~rmtnet.spectra.measures.Measure`), the tables above a floor for ``cdf_above``, and the
quadrature moments. A mixin of :class:`~rmtnet.spectra.measures.Measure`: it reads the law through ``pdf``,
``atoms`` and ``_panels``."""
from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np
from scipy.optimize import elementwise

from rmtnet._progress import bar
from ._quadrature import cumulative, cumulative_panels, edge_tail, hermite, hermite_at, panel_table, resolved_tanh_sinh


class CdfTables:
    """The cached quadrature tables of a law's continuous part (see the module docstring); every table is built on
    first use from the law's ``pdf`` on its ``_panels()`` and kept on the instance."""

    def _quadrature_moment(self, k):
        """The atoms' Σ p a^k plus the tanh-sinh quadrature of x^k·ρ(x) over the bands and their edge tails."""
        locs, masses = self.atoms()
        total = float(np.sum(masses * locs ** k))
        for x, w, fx, h in self._quad:
            total += h * float(np.sum(fx * x ** k * w))
        return total + sum(m * e ** k for e, m, _ in self.edge_tails())

    _TABLE_BAR_DELAY = 3.0    # seconds before a table still being built shows a bar (counting density values)

    @cached_property
    def _quad_panels(self):
        """[(a, b, pieces)] per panel: pieces (x, dx/dt, ρ(x), h) on nested tanh-sinh nodes, laid end to end, each
        refined until its mass converges and to at least 1600 nodes, and split where the density is not resolved
        (:func:`resolved_tanh_sinh`), so that the Hermite cdf between the nodes is accurate to ~1e-10. A table
        that takes longer than ``_TABLE_BAR_DELAY`` seconds shows a bar counting the density values computed
        (on a terminal only, :func:`rmtnet._progress.bar`; the environment's ``TQDM_DISABLE=1`` turns it off)."""
        panels = self._panels()
        with bar(desc=f"cdf table of {type(self).__name__} ({len(panels)} panel{'s' * (len(panels) != 1)})",
                 unit=" ρ(x)", delay=self._TABLE_BAR_DELAY) as counter:
            def pdf(x):
                values = self.pdf(x)
                counter.update(np.size(x))
                return values
            return [(a, b, resolved_tanh_sinh(pdf, a, b, min_level=2)) for a, b in panels]

    @cached_property
    def _quad(self):
        """The pieces of every panel (:attr:`_quad_panels`), laid end to end."""
        return [piece for _, _, pieces in self._quad_panels for piece in pieces]

    @cached_property
    def _cdf_table(self):
        """(x, C(x), ρ(x)): C the continuous part's cumulative integral on the quadrature nodes (cumulative Simpson
        in t, panel by panel), each panel's ends included as nodes with the mass of its edge tails
        (:meth:`edge_tails`); repeated abscissae (nodes that merge at a panel's end) are dropped."""
        table = cumulative_panels(self._panel_tables, self._tails)
        self._report_tails()
        return table

    @cached_property
    def _panel_tables(self):
        """[(a, b, v, C, ρ)] per panel (:func:`panel_table`)."""
        return [(a, b, *panel_table(a, b, pieces)) for a, b, pieces in self._quad_panels]

    _TAIL_WARN = 1e-6         # an edge tail holding more than this is reported (once per measure)

    @cached_property
    def _tails(self):
        """Per panel ((left mass, β), (right mass, β)) of :func:`edge_tail`."""
        return [(edge_tail(v, r, a, +1), edge_tail(v, r, b, -1)) for a, b, v, _, r in self._panel_tables]

    @cached_property
    def _tail_cells(self):
        """The table's cells between a panel's end and its outermost node that hold an edge tail: (x_lo, x_hi, C_lo,
        C_hi, end, β). There the continuous cdf is C_lo + m·((x − end)/d)^{β+1} at a left end and
        C_hi − m·((end − x)/d)^{β+1} at a right end (m = C_hi − C_lo, d = x_hi − x_lo), not the cubic."""
        xs, cs, _ = self._cdf_table
        cells = []
        for (a, b, *_), ((left, bl), (right, br)) in zip(self._panel_tables, self._tails):
            for end, mass, beta, step in ((a, left, bl, +1), (b, right, br, -1)):
                if not mass > 0:
                    continue
                i = int(np.searchsorted(xs, end))
                if i >= xs.size or xs[i] != end or not 0 <= i + step < xs.size:
                    continue
                lo, hi = sorted((i, i + step))
                cells.append((xs[lo], xs[hi], cs[lo], cs[hi], end, beta))
        return cells

    def _report_tails(self):
        """Warn about every edge tail holding more than ``_TAIL_WARN`` of the mass."""
        for edge, mass, beta in self.edge_tails():
            if mass > self._TAIL_WARN:
                warnings.warn(f"{self!r}: a mass of {mass:.4g} lies next to the edge {edge:.6g}, closer to it than "
                              f"the quadrature's nodes reach in float64; it is taken from the density's power law "
                              f"there (ρ ∝ |x − {edge:.6g}|^{beta:.6g}) and included in the cdf and quantiles "
                              f"(see edge_tails())", RuntimeWarning, stacklevel=4)

    def edge_tails(self):
        """[(edge, mass, β), …]: the mass between each panel's end and its outermost quadrature node, where the
        density is taken to follow its power law at the end, ρ ≈ c|x − edge|^β (β > −1, measured on the three
        outermost nodes; the mass is ρ(x₁)|x₁ − edge|/(β + 1)). Negligible at a square-root edge (~1e-24); not at an
        edge more singular than that, where the nodes stop at the edge's float64 neighbourhood, and above all at a
        hard edge at 0 with β close to −1 — the JJᵀ law of a deep critical ReLU network keeps 1.6 % of its mass
        below 1e-300 at depth 200 — where the mass below the smallest node is beyond float64's reach of the
        density and comes from this asymptotic law alone. The cdf and quantiles include it; ends where the power law
        cannot be read off (fewer than three nodes with density, or inconsistent exponents) contribute nothing."""
        out = []
        for (a, b, *_), (left, right) in zip(self._panel_tables, self._tails):
            out += [(a, *left), (b, *right)]
        return [(float(e), float(m), float(beta)) for e, m, beta in out if m > 0]

    @cached_property
    def _cdf_spline(self):
        """C(x) between the nodes (:func:`hermite`)."""
        return hermite(*self._cdf_table)

    def _continuous_cdf(self, x):
        """C(x) = ∫_{-∞}^x ρ for an array x (0 left of the support, the continuous mass right of it)."""
        if not self._panels():
            return np.zeros(np.shape(x))
        xs, cs, _ = self._cdf_table
        x = np.asarray(x, dtype=float)
        out = np.where(x >= xs[-1], cs[-1], 0.0)
        inside = (x > xs[0]) & (x < xs[-1])
        if inside.any():
            out[inside] = hermite_at(self._cdf_spline, x[inside], xs, cs)
        for x_lo, x_hi, c_lo, c_hi, end, beta in self._tail_cells:
            cell = (x > x_lo) & (x < x_hi)
            if cell.any():
                frac = (np.abs(x[cell] - end) / (x_hi - x_lo)) ** (1.0 + beta)
                out[cell] = c_lo + (c_hi - c_lo) * frac if end == x_lo else c_hi - (c_hi - c_lo) * frac
        return out

    def _upper_tables(self, lo):
        """Per band with a part above lo: (a, b, in log x?, nodes v, C(v), the cubic Hermite of C) with a = max(band
        start, lo) and C the band's integral from a (C[-1] its mass above a). Cached per lo; a table built for a
        lower positive lo serves any higher one (the integrals above x do not depend on where the table starts)."""
        cache = self.__dict__.setdefault("_upper_cache", {})
        lower = [k for k in cache if 0 < k <= lo]
        if lower:
            return cache[max(lower)]
        if lo not in cache:
            tables = []
            for a, b in self._panels():
                if b <= lo:
                    continue
                a = max(a, lo)
                log = a > 0 and a == lo
                if log:
                    pieces = resolved_tanh_sinh(lambda s: self.pdf(np.exp(s)) * np.exp(s), np.log(a), np.log(b),
                                                rtol=1e-10, n0=120, min_level=2)
                else:
                    pieces = resolved_tanh_sinh(self.pdf, a, b, min_level=2)
                v, c, r = cumulative(pieces)
                tables.append((a, b, log, v, c, hermite(v, c, r)))
            cache[lo] = tables
        return cache[lo]

    def _continuous_quantile(self, t):
        """inf{x : C(x) ≥ t} on the table: the cell with C(x_{i-1}) < t ≤ C(x_i), then a root of the cubic."""
        xs, cs, _ = self._cdf_table
        t = np.clip(t, 0.0, cs[-1])
        idx = np.clip(np.searchsorted(cs, t, side="left"), 1, xs.size - 1)
        out = xs[idx].copy()
        solve = cs[idx] > t
        if solve.any():
            a, b, tt = xs[idx - 1][solve], xs[idx][solve], t[solve]
            res = elementwise.find_root(lambda x, target: self._cdf_spline(x) - target, (a, b), args=(tt,))
            ok = res.success & np.isfinite(res.x)
            # a bracket spoiled by rounding at a node: fall back to linear interpolation within the cell
            lin = a + (tt - cs[idx - 1][solve]) / (cs[idx][solve] - cs[idx - 1][solve]) * (b - a)
            out[solve] = np.where(ok, res.x, lin)
        for x_lo, x_hi, c_lo, c_hi, end, beta in self._tail_cells:        # the tails' own power law
            cell = (t > c_lo) & (t < c_hi)
            if cell.any():
                frac = ((t[cell] - c_lo) if end == x_lo else (c_hi - t[cell])) / (c_hi - c_lo)
                off = (x_hi - x_lo) * frac ** (1.0 / (1.0 + beta))
                out[cell] = end + off if end == x_lo else end - off
        return out
