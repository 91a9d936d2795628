"""Theory-over-simulation overlays in the house style.

Every figure shows the limit law (line) and the Monte Carlo sample (histogram) on the same axes, with the
Kolmogorov–Smirnov distance between them in the legend, and the plotted numbers can be written to a CSV beside it.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ._backend import to_numpy  # noqa: E402

__all__ = ["ks_distance", "overlay", "density_curve", "save"]


def ks_distance(law, samples):
    """sup_x |F_n(x) - F(x)| between the empirical cdf of ``samples`` and ``law.cdf``, exact with ties and atoms
    (compared at every sample value v both at v and just left of v)."""
    s = _snap_to_atoms(law, np.sort(to_numpy(samples).ravel()))
    v, counts = np.unique(s, return_counts=True)
    n = s.size
    Fn = np.cumsum(counts) / n
    Fn_left = Fn - counts / n
    F = law.cdf(v)
    F_left = F - law._atom_mass_at(v)
    return float(max(np.max(np.abs(Fn - F)), np.max(np.abs(Fn_left - F_left))))


def _snap_to_atoms(law, s, rel=1e-9):
    """Samples within rel·max|s| of an atom are put on it: eigenvalues that are zero in exact arithmetic come out
    of a float64 eigensolver as ±1e-13, which would otherwise fall on the wrong side of the atom's jump."""
    locs, _ = law.atoms()
    if locs.size == 0 or s.size == 0:
        return s
    tol = rel * max(1.0, float(np.abs(s).max()))
    d = np.abs(s[:, None] - locs[None, :])
    j = np.argmin(d, axis=1)
    near = d[np.arange(s.size), j] <= tol
    out = s.copy()
    out[near] = locs[j[near]]
    return np.sort(out)


def density_curve(law, n=600, pad=0.02):
    """(x, ρ(x)) on the continuous support of ``law``, with a little padding either side."""
    lo, hi = law.support()
    w = hi - lo
    x = np.linspace(max(lo - pad * w, 0.0 if lo >= 0 else lo - pad * w), hi + pad * w, n)
    return x, law.pdf(x)


def overlay(law, samples, ax=None, bins=80, label=None, color=None, x_max=None):
    """Histogram of ``samples`` (continuous part) under the density of ``law``; atoms noted in the legend.

    Returns (ax, table) where ``table`` is a DataFrame of the plotted numbers (bin centres, histogram heights,
    theory density at the centres) — write it with :func:`save`.
    """
    s = np.sort(to_numpy(samples).ravel())
    ax = ax if ax is not None else plt.gca()
    locs, masses = law.atoms()
    snapped = _snap_to_atoms(law, s)                       # the same atom rule as the KS distance
    cont = snapped[~np.isin(snapped, locs)]
    lo, hi = law.support()
    hi_plot = hi if x_max is None else x_max
    edges = np.linspace(lo, hi_plot, bins + 1)
    heights, _ = np.histogram(cont, bins=edges)
    heights = heights / (s.size * np.diff(edges))          # density of the continuous part, mass-weighted
    centres = 0.5 * (edges[1:] + edges[:-1])
    ks = ks_distance(law, s)
    ax.stairs(heights, edges, fill=True, alpha=0.35, color=color or "C0", label=f"Monte Carlo (KS {ks:.3f})")
    x = np.linspace(lo, hi_plot, 600)
    name = label or repr(law)
    atom_note = "" if not locs.size else "; atoms " + ", ".join(f"{m:.3g}@{a:.3g}" for a, m in zip(locs, masses))
    ax.plot(x, law.pdf(x), color=color or "k", lw=1.5, label=f"{name}{atom_note}")
    ax.legend(fontsize=7)
    table = pd.DataFrame({"x": centres, "mc_density": heights, "theory_density": law.pdf(centres)})
    table.attrs["ks"] = ks
    return ax, table


def save(fig, path, tables=None):
    """Write ``fig`` to ``path`` (PNG) and, if given, the concatenated plotted numbers to the same name .csv."""
    from pathlib import Path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
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
