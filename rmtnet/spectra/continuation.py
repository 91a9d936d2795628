"""Continuation toward the real axis: the one helper of the ⊠/⊞ subordination engine (:mod:`rmtnet.spectra.free`)
and of the deterministic equivalents of :class:`~rmtnet.spectra.ntk.NTKLaw`.

Both compute a Cauchy transform G(z) of a law by solving a fixed-point system at z = x + iy: subordination
(Belinschi & Bercovici, "A new approach to subordination results in free probability", J. Anal. Math. 101, 2007)
or deterministic equivalents (Couillet & Liao, "Random Matrix Methods for Machine Learning", Cambridge University
Press 2022, ch. 2). Far above the spectrum the solution is its far-field expansion and unambiguous; it is carried
down to the target height (y = 0 for a density) by *continuation*, Newton correcting a prediction at every step, so
that it stays on the branch with Im G < 0. The four pieces every such solver needs are here:

* **Descent in Im z** (:class:`Descent`): every point takes its next height y·e^{-s}, s its step in log y; after
  an accepted step s grows by a factor (up to a largest step), after a refused one it is halved. Below a floor the
  next step is the target itself.
* **The stall rule** (:meth:`Descent.settle`): a point whose step fell below the smallest, or whose budget ran out,
  cannot be continued. Where its height is within a reach of the axis it is kept there — its density is then the
  Cauchy (Poisson-kernel) regularisation at that width, which preserves mass; above the reach it has failed.
* **Bands on a grid** (:func:`cell_grid`, :func:`dense`, :func:`runs`, :func:`k_section`): the density on a grid
  of the hull, the runs of grid points where it carries mass (the bands, where -Im G > 0), and each band's edge
  between a point outside and one inside found by k-section.
* **Books of mass** (:func:`mass_books`, :func:`check_books`): the bands' masses and the atoms must add to 1, or
  :class:`~rmtnet._validation.ConvergenceError` says which bands were found and how much is missing — a band
  missed by the grid loses its whole mass and shows here.

The two solvers differ in their parameters, not in the rules: the ⊠/⊞ engine grows its step by 1.5 up to
log 10³ and calls a step below 10⁻⁹ a stall; NTKLaw doubles its step up to log 10² and calls 10⁻⁶ a stall. The
engine's grid has 200 cells with one point at 0.382 of each (irrational, so no point lands on a rational atom) and
counts a cell as dense where it holds mass ρ·Δx > 10⁻¹⁰; NTKLaw's has 800 cells with the interior cell ends as
points and counts density above 10⁻⁹ of the largest.
"""
from __future__ import annotations

import numpy as np

from .. import backend as B
from rmtnet._validation import ConvergenceError

__all__ = ["Descent", "cell_grid", "dense", "runs", "k_section", "mass_books", "check_books"]


class Descent:
    """Points z = x + iy walked down in Im z from heights ``y`` to ``target``, each with its own step in log y.

    Parameters
    ----------
    y : array of float
        The heights the points start at (modified in place as they descend).
    target : array of float
        The heights to reach (0 for a density on the real axis).
    floor : float or array of float
        Below ``max(floor, target)`` the next height is the target itself (default 0).
    first : float
        The first step s in log y: the first height is y·e^{-s} (default log 2, a halving).
    grow : float
        The factor by which s grows after an easy step (default 1.5).
    largest : float
        The largest step (default log 10³).
    smallest : float
        A step below this has stalled (default 10⁻⁹).

    Attributes
    ----------
    y : array of float
        The height each point has reached.
    log_step : array of float
        Each point's current step s.
    done : array of bool
        The points at their target, or kept by :meth:`settle` in this round.

    Examples
    --------
    >>> import numpy as np
    >>> walk = Descent(np.array([8.0, 8.0]), np.array([1.0, 0.5]), grow=2.0)
    >>> idx = walk.active()
    >>> heights = walk.heights(idx)
    >>> heights.tolist()
    [4.0, 4.0]
    >>> walk.advance(idx, heights, good=np.array([True, False]), easy=np.array([True, False]))
    >>> walk.y.tolist(), walk.log_step.round(4).tolist()
    ([4.0, 8.0], [1.3863, 0.3466])
    """

    def __init__(self, y, target, *, floor=0.0, first=np.log(2.0), grow=1.5, largest=np.log(1e3), smallest=1e-9):
        self.y, self.target, self.floor = y, target, floor
        self.log_step = B.module_of(y).full(y.shape, first)
        self.grow, self.largest, self.smallest = grow, largest, smallest
        self.done = y <= target

    @property
    def finished(self):
        """Whether every point is done."""
        return bool(self.done.all())

    def active(self):
        """The indices of the points still on their way down."""
        return np.nonzero(~self.done)[0]

    def heights(self, idx):
        """The next height of the points ``idx``: y·e^{-s}, or the target itself where that falls below the floor."""
        target = self.target[idx]
        floor = self.floor[idx] if np.ndim(self.floor) else self.floor
        new = self.y[idx] * np.exp(-self.log_step[idx])
        return np.where(new < np.maximum(floor, target), target, new)

    def advance(self, idx, heights, good, easy):
        """The points ``idx`` step to ``heights`` where ``good``; the step grows where ``easy`` (accepted with little
        work) and is halved where not ``good``."""
        grown = idx[easy]
        self.y[idx[good]] = heights[good]
        self.log_step[grown] = np.minimum(self.log_step[grown] * self.grow, self.largest)
        self.log_step[idx[~good]] *= 0.5
        self.done = self.y <= self.target

    def stalled(self):
        """The points not done whose step has shrunk below the smallest."""
        return (~self.done) & (self.log_step < self.smallest)

    def settle(self, stuck, reach):
        """The stall rule for the points ``stuck`` (that cannot be continued): where their height is at most
        ``reach`` they are kept there — their value is the transform's Cauchy regularisation at that width, which
        preserves mass; the others have failed. Returns the masks (kept, failed). A kept point is done until the
        next :meth:`advance`, which tries it again while other points still descend (a later step may yet succeed);
        a solver that gives it up for good sets its height to the target."""
        kept = stuck & (self.y <= reach)
        self.done |= kept
        return kept, stuck & ~kept


def cell_grid(lo, hi, cells, offset=0.0):
    """The points lo + (hi − lo)(k + offset)/cells strictly above lo, k = 0 … cells − 1: one point at fraction
    ``offset`` of each of ``cells`` equal cells of [lo, hi] (offset 0: the interior cell ends).

    Parameters
    ----------
    lo, hi : float
        The hull searched.
    cells : int
        The number of cells.
    offset : float
        Where in each cell its point sits, in [0, 1).

    Returns
    -------
    ndarray
        The grid, increasing.

    Examples
    --------
    >>> cell_grid(0.0, 1.0, 4).tolist()
    [0.25, 0.5, 0.75]
    >>> cell_grid(0.0, 1.0, 2, offset=0.5).tolist()
    [0.25, 0.75]
    """
    t = np.arange(cells) + offset
    t = t[t > 0]
    return lo + (hi - lo) * t / cells


def dense(x, rho, *, cell_mass=None, relative=None):
    """Where the density ρ on the grid x carries mass: ρ(x_j)·Δx_j > ``cell_mass`` (Δx_j the width of point j's
    cell; a single point: ρ > 0), or ρ > ``relative``·max ρ.

    Parameters
    ----------
    x : array of float
        The grid, sorted.
    rho : array of float
        The density on it.
    cell_mass, relative : float
        Exactly one of the two thresholds.

    Returns
    -------
    ndarray of bool

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0.0, 1.0, 5)
    >>> dense(x, np.array([0.0, 1e-12, 1.0, 2.0, 0.0]), cell_mass=1e-10).tolist()
    [False, False, True, True, False]
    >>> dense(x, np.array([0.0, 1e-12, 1.0, 2.0, 0.0]), relative=1e-9).tolist()
    [False, False, True, True, False]
    """
    if relative is not None:
        return rho > relative * max(float(rho.max()), 1e-300)
    x = np.asarray(x, float)
    if x.size == 1:
        return rho > 0
    return rho * np.abs(np.gradient(x)) > cell_mass


def runs(mask):
    """The runs of True in ``mask``: (first, last) index pairs, both included, in order.

    Parameters
    ----------
    mask : array of bool
        One flag per grid point (where the density carries mass, :func:`dense`).

    Returns
    -------
    list of (int, int)
        Each run's first and last index: a band's grid points.

    Examples
    --------
    >>> import numpy as np
    >>> runs(np.array([False, True, True, False, True]))
    [(1, 2), (4, 4)]
    """
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(mask).astype(int), [0]])))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def k_section(inside, out, inn, *, points, rounds, settled=None):
    """Edges of the sets where ``inside`` holds, each between a point ``out`` (outside) and one ``inn`` (inside), by
    k-section: every round puts ``points`` equally spaced points in each bracket, keeps the cell where ``inside``
    first holds, and so shrinks the bracket by points + 1. A bracket whose points all coincide with its ends
    (rounding), or that ``settled(out, inn)`` marks as settled, is left as it is.

    Parameters
    ----------
    inside : callable
        A flat array of points → bool array (all brackets' points of a round are passed together).
    out, inn : array of float
        The brackets' outside and inside ends.
    points, rounds : int
        Points per bracket and round; rounds.
    settled : callable, optional
        (out, inn) → bool array of brackets that need no more rounds.

    Returns
    -------
    (out, inn) : ndarrays
        The final brackets.

    Examples
    --------
    >>> import numpy as np
    >>> out, inn = k_section(lambda t: t > 0.3, np.array([0.0]), np.array([1.0]), points=15, rounds=10)
    >>> bool(abs(out[0] - 0.3) < 1e-12 and out[0] <= 0.3 < inn[0])
    True
    """
    out, inn = np.array(out, float), np.array(inn, float)
    for _ in range(rounds):
        live = np.ones(out.shape, bool) if settled is None else ~np.asarray(settled(out, inn))
        pts = out[:, None] + (inn - out)[:, None] * np.arange(1, points + 1)[None, :] / (points + 1)
        live &= ~np.all((pts == out[:, None]) | (pts == inn[:, None]), axis=1)
        if not live.any():
            break
        pts = pts[live]
        ins = np.asarray(inside(pts.ravel())).reshape(pts.shape)
        first = np.where(ins.any(axis=1), ins.argmax(axis=1), points)
        rows = np.arange(pts.shape[0])
        out[live] = np.where(first > 0, pts[rows, np.maximum(first - 1, 0)], out[live])
        inn[live] = np.where(first < points, pts[rows, np.minimum(first, points - 1)], inn[live])
    return out, inn


def mass_books(bands, masses, atoms, continuous=None):
    """The books of a law's mass: its bands with their masses, its atoms, and the total.

    Parameters
    ----------
    bands : list of (float, float)
        The bands found.
    masses : list of float
        Each band's mass (the integral of the density over it).
    atoms : float
        The atoms' total mass.
    continuous : float, optional
        The continuous part's mass where it is known as a whole (a cdf table's last value); default the bands'
        masses added.

    Returns
    -------
    dict
        {"bands": [(a, b, mass), …], "atoms": float, "total": float}.

    Examples
    --------
    >>> mass_books([(0.0, 1.0), (2.0, 3.0)], [0.25, 0.5], 0.25)["total"]
    1.0
    """
    bands = [(a, b, float(m)) for (a, b), m in zip(bands, masses)]
    continuous = sum(m for *_, m in bands) if continuous is None else continuous
    return {"bands": bands, "atoms": float(atoms), "total": float(atoms) + float(continuous)}


def check_books(books, tol, who, law):
    """Raise :class:`~rmtnet._validation.ConvergenceError` where the books of :func:`mass_books` are off 1 by
    more than ``tol``, naming the bands found (where) and the mass missing or in excess (why: a band not found, or
    its density not resolved).

    Parameters
    ----------
    books : dict
        The books of :func:`mass_books`.
    tol : float
        How far the total may be off 1.
    who : str
        The solver, first in the message.
    law : object
        The law, named in the message by its repr.

    Raises
    ------
    ConvergenceError
        Where |1 − total| > tol (or the total is NaN).

    Examples
    --------
    >>> check_books(mass_books([(0.0, 1.0)], [1.0 - 1e-12], 0.0), 1e-8, "demo", "a law")
    >>> try:
    ...     check_books(mass_books([(0.0, 1.0)], [0.5], 0.0), 1e-8, "demo", "a law")
    ... except RuntimeError as err:
    ...     print(str(err).split("'a law': ")[1].split(";")[0])
    the bands found ([0, 1]: 0.5) and the atoms (0) hold 0.5, not 1 (+0.5 missing)
    """
    missing = 1.0 - books["total"]
    if not abs(missing) <= tol:                 # (NaN books do not balance either)
        where = ", ".join(f"[{a:.4g}, {b:.4g}]: {m:.6g}" for a, b, m in books["bands"][:8])
        raise ConvergenceError(
            f"{who}: mass accounting failed for {law!r}: the bands found ({where}"
            f"{', …' if len(books['bands']) > 8 else ''}) and the atoms ({books['atoms']:.6g}) hold "
            f"{books['total']:.10g}, not 1 ({missing:+.3g} {'missing' if missing > 0 else 'too much'}); a band "
            f"was not found or its density not resolved",
            z=None, iteration=0, residual=float(missing))
