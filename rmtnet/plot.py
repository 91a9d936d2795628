"""Theory-over-simulation overlays in the house style.

Every figure shows the limit law (line) and the Monte Carlo sample (histogram) on the same axes, with the
Kolmogorov–Smirnov distance between them in the legend, and the plotted numbers can be written to a CSV beside it.

The numbers of a figure and its drawing are apart: :func:`histogram` computes what an overlay shows (without
matplotlib, which this module imports only when it draws), :func:`draw_histogram` draws it, and :func:`overlay` does
both.

Importing this module imports no matplotlib and so chooses no matplotlib backend: the user's choice
(``matplotlib.use``, ``MPLBACKEND``, matplotlibrc) stands. Where none is made, matplotlib picks one when pyplot first needs it, and without a display
(no DISPLAY or WAYLAND_DISPLAY on Linux, e.g. a batch job or CI) that is the non-interactive Agg, so scripts that
build figures with pyplot and write them with :func:`save` run headless as they are. :func:`save` writes through the
figure's own canvas (``Figure.savefig``), which needs no interactive backend, so figures built without pyplot
(``matplotlib.figure.Figure()``) can be saved too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .backend import to_numpy
from rmtnet._io import output_path
from rmtnet._validation import finite_array, real_scalar
from .spectra.measures import Measure

__all__ = ["ks_distance", "Histogram", "histogram", "draw_histogram", "overlay", "density_curve", "save"]


def ks_distance(law, samples, atom_rtol=1e-9, floor=0.0):
    """sup_x |F_n(x) - F(x)| between the empirical cdf of ``samples`` and ``law.cdf``, exact with ties and atoms
    (compared at every sample value v both at v and just left of v).

    Samples within ``atom_rtol``·max|samples| (+ 1e-9·|a|) of one of the law's atoms a are counted on it (see
    :func:`_snap_to_atoms`); set it to the relative noise floor of the eigensolver that produced them.
    ``floor`` > 0: the samples resolve only values ≥ floor (e.g. the float64 floor of a deep Jacobian product,
    :func:`rmtnet.spectra.sampling.montecarlo.sample_jacobian_eigs` with ``return_floor=True``): the sup is taken over
    x ≥ floor, which still compares the mass below the floor, F_n(floor⁻) against F(floor), but not where inside
    [0, floor) the samples fell. F there is :meth:`Measure.cdf_above`, which needs the law's density above the
    floor only.

    Parameters
    ----------
    law : Measure
        The limit law.
    samples : array_like
        Finite values (NumPy or CuPy), any shape.
    atom_rtol : float, default 1e-9
        The relative distance within which a sample counts as on an atom.
    floor : float, default 0.0
        Compare on x ≥ floor only.

    Returns
    -------
    float
        The Kolmogorov–Smirnov distance.

    Examples
    --------
    The n midpoint quantiles F⁻¹((i − ½)/n) of a continuous law are at KS distance 1/(2n) from it; an atomic law
    counts exact hits:

    >>> from rmtnet.spectra import Bernoulli, MarchenkoPastur
    >>> law = MarchenkoPastur(0.5)
    >>> print(f"{ks_distance(law, law.quantile((np.arange(100) + 0.5) / 100)):.6f}")
    0.005000
    >>> print(ks_distance(Bernoulli(0.5), [0.0, 1.0, 1.0, 1.0]))
    0.25
    """
    if not isinstance(law, Measure):
        raise ValueError(f"law must be a Measure of rmtnet.spectra, got {type(law).__name__}")
    samples = to_numpy(finite_array("samples", samples)).ravel()
    if samples.size == 0:
        raise ValueError("samples must hold at least one value, got an empty array")
    atom_rtol = real_scalar("atom_rtol", atom_rtol, lo=0.0)
    floor = real_scalar("floor", floor, lo=0.0)
    s = _snap_to_atoms(law, np.sort(samples), atom_rtol)
    v, counts = np.unique(s, return_counts=True)
    n = s.size
    Fn = np.cumsum(counts) / n
    Fn_left = Fn - counts / n
    keep = v >= floor
    if floor > 0:
        v, Fn, Fn_left = v[keep], Fn[keep], Fn_left[keep]
        F = law.cdf_above(v, floor)
    else:
        F = law.cdf(v)
    F_left = F - law._atom_mass_at(v)
    d = max(np.max(np.abs(Fn - F), initial=0.0), np.max(np.abs(Fn_left - F_left), initial=0.0))
    if floor > 0:
        d = max(d, abs(float(np.mean(s < floor)) - float(law.cdf_above(floor, floor))))
    return float(d)


def _snap_to_atoms(law, s, rel=1e-9):
    """Samples within rel·max|s| + 1e-9·|a| of an atom a are put on it: eigenvalues that are zero in exact arithmetic
    come out of a float64 eigensolver as ±1e-13 (relative to the largest; ~1e-28 as squared singular values, as
    :func:`rmtnet.spectra.sampling.montecarlo.sample_jacobian_eigs` computes them), and those equal to a ≠ 0 as a(1 ± 1e-15),
    which would otherwise fall on the wrong side of the atom's jump. The rule also moves genuine continuous-part
    samples within that distance onto the atom: for a density crowding to an atom at 0 like x^{-L/(L+1)} that is a
    mass of order rel^{1/(L+1)}, so keep rel at the noise floor of the samples."""
    locs, _ = law.atoms()
    if locs.size == 0 or s.size == 0:
        return s
    tol = rel * max(1.0, float(np.abs(s).max())) + 1e-9 * np.abs(locs)[None, :]
    d = np.abs(s[:, None] - locs[None, :])
    j = np.argmin(d, axis=1)
    near = d[np.arange(s.size), j] <= tol[0, j]
    out = s.copy()
    out[near] = locs[j[near]]
    return np.sort(out)


def density_curve(law, n=600, pad=0.02):
    """(x, ρ(x)) on the continuous support of ``law``, with a little padding either side (not below 0 for a law on
    [0, ∞)).

    Parameters
    ----------
    law : Measure
        A law with a continuous part.
    n : int, default 600
        The number of points.
    pad : float, default 0.02
        The padding, as a fraction of the support's width.

    Returns
    -------
    tuple of ndarray
        x and the density at x.

    Examples
    --------
    The semicircle's density is √(4 − x²)/(2π):

    >>> from rmtnet.spectra import Semicircle
    >>> x, rho = density_curve(Semicircle(), n=5, pad=0.0)
    >>> print(x, np.allclose(rho, np.sqrt(4 - x ** 2) / (2 * np.pi)))
    [-2. -1.  0.  1.  2.] True
    """
    lo, hi = law.continuous_support()
    w = hi - lo
    x = np.linspace(max(lo - pad * w, 0.0 if lo >= 0 else lo - pad * w), hi + pad * w, n)
    return x, law.pdf(x)


@dataclass(frozen=True)
class Histogram:
    """What an overlay of a Monte Carlo sample on its limit law shows, computed apart from its drawing.

    Attributes
    ----------
    table : pandas.DataFrame
        The plotted numbers, with the KS distance in ``table.attrs["ks"]``: bin centres ``x``, the Monte Carlo
        density of the continuous part ``mc_density`` and the law's density ``theory_density`` at the centres; or,
        for a purely atomic law, the atoms ``x`` with their Monte Carlo and theory masses.
    label : str
        The law's legend entry (its name, then its atoms as mass@location).
    edges : numpy.ndarray or None
        The histogram's bin edges (None for a purely atomic law).
    curve : tuple of numpy.ndarray or None
        (x, ρ(x)) of the law's density on 600 points of the plotted range (None for a purely atomic law).

    Examples
    --------
    Made by :func:`histogram`; a sample at the law's own quantiles is close to it in KS distance (at most
    1/(2·100) from the midpoint quantiles, up to the quantile's accuracy):

    >>> from rmtnet.spectra import MarchenkoPastur
    >>> law = MarchenkoPastur(0.5)
    >>> h = histogram(law, law.quantile((np.arange(100) + 0.5) / 100), bins=10)
    >>> len(h.table), len(h.edges), len(h.curve[0]), h.ks == h.table.attrs["ks"], h.ks < 0.01
    (10, 11, 600, True, True)
    """
    table: pd.DataFrame
    label: str
    edges: np.ndarray | None = None
    curve: tuple | None = field(default=None, repr=False)

    @property
    def ks(self):
        """The Kolmogorov–Smirnov distance between the sample and the law (:func:`ks_distance`)."""
        return self.table.attrs["ks"]


def histogram(law, samples, bins=80, label=None, x_max=None, atom_rtol=1e-9):
    """The numbers of :func:`overlay`, without drawing: a :class:`Histogram` of ``samples`` under ``law``.

    Parameters
    ----------
    law : Measure
        The limit law.
    samples : array_like
        The Monte Carlo sample (e.g. eigenvalues), any shape (flattened).
    bins : int
        Number of equal bins over the continuous support [lo, hi] (or [lo, x_max]).
    label : str, optional
        The law's name in the legend (default ``repr(law)``).
    x_max : float, optional
        Right end of the plotted range (default: the end of the continuous support).
    atom_rtol : float
        Samples this close to an atom count on it, as in :func:`ks_distance`.

    Returns
    -------
    Histogram
        The table of plotted numbers (KS distance in its ``attrs["ks"]``) and what the drawing needs.

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.laws import MarchenkoPastur
    >>> X = np.random.default_rng(0).standard_normal((200, 400)) / np.sqrt(400)
    >>> h = histogram(MarchenkoPastur(0.5), np.linalg.eigvalsh(X @ X.T), bins=20)
    >>> list(h.table.columns), len(h.table), h.ks < 0.05
    (['x', 'mc_density', 'theory_density'], 20, True)
    """
    s = np.sort(to_numpy(samples).ravel())
    locs, masses = law.atoms()
    snapped = _snap_to_atoms(law, s, atom_rtol)            # the same atom rule as the KS distance
    ks = ks_distance(law, s, atom_rtol)
    name = label or repr(law)
    atom_note = "" if not locs.size else "; atoms " + ", ".join(f"{m:.3g}@{a:.3g}" for a, m in zip(locs, masses))
    if law.continuous_support() is None:
        mc_mass = (snapped[:, None] == locs[None, :]).mean(axis=0)
        table = pd.DataFrame({"x": locs, "mc_mass": mc_mass, "theory_mass": masses})
        table.attrs["ks"] = ks
        return Histogram(table, f"{name}{atom_note}")
    cont = snapped[~np.isin(snapped, locs)]
    lo, hi = law.continuous_support()
    hi_plot = hi if x_max is None else x_max
    edges = np.linspace(lo, hi_plot, bins + 1)
    heights, _ = np.histogram(cont, bins=edges)
    heights = heights / (s.size * np.diff(edges))          # density of the continuous part, mass-weighted
    centres = 0.5 * (edges[1:] + edges[:-1])
    x = np.linspace(lo, hi_plot, 600)
    # the drawn curve before the centres, in overlay's order: a law that keeps what it solved (its density over an
    # empirical input law, say) gives the numbers it gave there
    curve = (x, law.pdf(x))
    table = pd.DataFrame({"x": centres, "mc_density": heights, "theory_density": law.pdf(centres)})
    table.attrs["ks"] = ks
    return Histogram(table, f"{name}{atom_note}", edges, curve)


def draw_histogram(ax, hist, color=None):
    """Draw a :class:`Histogram` on ``ax`` in the house style: the sample's histogram (continuous part) filled
    under the law's density line, the KS distance and the atoms (on a second line) in the legend, the y axis
    labelled "density"; a purely atomic law as stems at its atoms (theory mass) beside bars of the Monte Carlo mass
    on each, the y axis labelled "mass". Returns ``ax``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel.
    hist : Histogram
        What :func:`histogram` computed.
    color : str, optional
        The colour of the bars and of the law's line (default C0 and black).

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``.

    Examples
    --------
    On a figure that pyplot does not manage (nothing to close), the legend holds the sample with its KS distance
    and the law:

    >>> from matplotlib.figure import Figure
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> law = MarchenkoPastur(0.5)
    >>> h = histogram(law, law.quantile((np.arange(100) + 0.5) / 100), bins=10, label="MP(1/2)")
    >>> ax = draw_histogram(Figure().subplots(), h)
    >>> [t.get_text() for t in ax.get_legend().get_texts()] == [f"Monte Carlo (KS {h.ks:.3f})", "MP(1/2)"]
    True
    >>> ax.get_ylabel()
    'density'
    """
    t, mc_label = hist.table, f"Monte Carlo (KS {hist.ks:.3f})"
    law_label = hist.label.replace("; atoms ", "\natoms ")   # the atoms on a line of their own: a narrow legend
    if hist.edges is None:
        locs = t["x"].to_numpy()
        pad = 0.1 * max(float(locs.max() - locs.min()), 0.1 * float(np.abs(locs).max()), 1e-3)
        ax.bar(locs, t["mc_mass"], width=0.3 * pad, alpha=0.35, color=color or "C0", label=mc_label)
        ax.vlines(locs, 0, t["theory_mass"], color=color or "k", lw=1.5)
        ax.plot(locs, t["theory_mass"], "o", color=color or "k", ms=4, label=law_label)
        ax.set(ylim=(0, 1.1), xlim=(locs.min() - pad, locs.max() + pad), ylabel="mass")
    else:
        ax.stairs(t["mc_density"].to_numpy(), hist.edges, fill=True, alpha=0.35, color=color or "C0",
                  label=mc_label)
        ax.plot(*hist.curve, color=color or "k", lw=1.5, label=law_label)
        ax.set_ylabel("density")
    ax.legend(fontsize=7)
    return ax


def overlay(law, samples, ax=None, bins=80, label=None, color=None, x_max=None, atom_rtol=1e-9):
    """Histogram of ``samples`` (continuous part) under the density of ``law``; atoms noted in the legend.

    A purely atomic law (no continuous part) is drawn as stems at its atoms (theory mass) beside bars of the
    Monte Carlo mass found on each atom, by the same atom rule as the KS distance.

    Returns (ax, table) where ``table`` is a DataFrame of the plotted numbers (bin centres, histogram heights,
    theory density at the centres; or atoms, Monte Carlo and theory masses) — write it with :func:`save`.
    ``atom_rtol`` as in :func:`ks_distance`. The same as :func:`histogram` then :func:`draw_histogram`.

    Parameters
    ----------
    law : Measure
        The limit law.
    samples : array_like
        The Monte Carlo values (NumPy or CuPy).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default ``plt.gca()``).
    bins : int, default 80
        Histogram bins over the continuous support.
    label : str, optional
        The law's legend entry (default its repr).
    color : str, optional
        Matplotlib colour of both.
    x_max : float, optional
        The right end of the histogram and curve (default the support's).
    atom_rtol : float, default 1e-9
        As in :func:`ks_distance`.

    Returns
    -------
    tuple
        (ax, table): the axes and a pandas DataFrame of the plotted numbers, ``table.attrs["ks"]`` the KS distance.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> law = MarchenkoPastur(0.5)
    >>> ax, table = overlay(law, law.quantile((np.arange(100) + 0.5) / 100), ax=Figure().subplots(), bins=10)
    >>> print(table.shape, list(table.columns), f"{table.attrs['ks']:.6f}")
    (10, 3) ['x', 'mc_density', 'theory_density'] 0.005000
    """
    if ax is None:
        import matplotlib.pyplot as plt
        ax = plt.gca()
    hist = histogram(law, samples, bins=bins, label=label, x_max=x_max, atom_rtol=atom_rtol)
    return draw_histogram(ax, hist, color=color), hist.table


def save(fig, path, tables=None):
    """Write ``fig`` to ``path`` (PNG) and, if given, the concatenated plotted numbers to the same name .csv.

    A figure that pyplot manages is closed afterwards (its window, if any, and its memory released); a figure made
    directly as ``matplotlib.figure.Figure()`` is not known to pyplot and is left as it is.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or Path
        The PNG's path (folders are created).
    tables : dict of str to DataFrame, optional
        Panel name → the table :func:`overlay` returned; concatenated with a ``panel`` column (and ``ks`` where the
        table has one) into ``path`` with the suffix .csv.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import os, tempfile
    >>> from matplotlib.figure import Figure
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> fig = Figure()
    >>> law = MarchenkoPastur(0.5)
    >>> _, table = overlay(law, law.quantile((np.arange(100) + 0.5) / 100), ax=fig.subplots(), bins=10)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print(save(fig, os.path.join(folder, "mp.png"), {"mp": table}).name, sorted(os.listdir(folder)))
    mp.png ['mp.csv', 'mp.png']
    """
    import matplotlib.pyplot as plt
    path = output_path("path", path)
    if tables is not None:
        output_path("path", path.with_suffix(".csv"), others={"path": path})   # the tables' CSV beside it
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)                                          # a no-op for a figure pyplot does not manage
    if tables is not None:
        frames = []
        for key, t in tables.items():
            t = t.copy()
            t.insert(0, "panel", key)
            if "ks" in t.attrs:
                t["ks"] = t.attrs["ks"]
            frames.append(t)
        pd.concat(frames, ignore_index=True).to_csv(path.with_suffix(".csv"), index=False)
    return path
