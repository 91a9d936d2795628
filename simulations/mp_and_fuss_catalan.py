"""Marchenko–Pastur densities at several ratios and the Fuss–Catalan law of products of s Ginibre matrices,
each computed by rmtnet's ⊠ engine (and closed forms) and overlaid on Monte Carlo histograms.

Writes figures/mp_and_fuss_catalan.png and figures/mp_and_fuss_catalan.csv (the plotted numbers, KS per panel).
Quick mode (default): N = 1000, one draw per panel. ``--full``: N = 4000, four draws (tiny: N = 200, s = 1, 2).
"""
from __future__ import annotations

import numpy as np

from rmtnet import cli, figures, plot
from rmtnet.backend import to_numpy
from rmtnet.spectra import FussCatalan, MarchenkoPastur, free_mult_power
from rmtnet.spectra.sampling import montecarlo

RATIOS = (0.1, 0.25, 0.5, 1.0, 2.0)
ORDERS = (1, 2, 3, 5)
SIZES = {"tiny": dict(n=200, draws=1, orders=(1, 2)), "quick": dict(n=1000, draws=1, orders=ORDERS),
         "full": dict(n=4000, draws=4, orders=ORDERS)}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("mp_and_fuss_catalan", compute, draw, full, outdir, seed, backend)


def compute(size="quick", seed=0, backend=None):
    """The Monte Carlo histograms under their laws: one panel per ratio λ, then one per order s."""
    s = figures.settings(SIZES, size)
    n, draws = s["n"], s["draws"]
    tables = figures.Tables(extras=s)
    for j, lam in enumerate(RATIOS):
        eig = to_numpy(montecarlo.wishart_eigs(n, round(n / lam), seed=seed + j, backend=backend, n_samples=draws))
        h = plot.histogram(MarchenkoPastur(lam), eig, label=f"MP λ={lam}")
        tables[f"MP ratio={lam}"], tables.extras[f"MP ratio={lam}"] = h.table, h
    for j, order in enumerate(s["orders"]):
        law = free_mult_power(MarchenkoPastur(1.0), order)        # Fuss–Catalan(s) by the ⊠ engine
        eig = to_numpy(montecarlo.ginibre_product_eigs(n, order, seed=seed + 100 + j, backend=backend,
                                                       n_samples=draws))
        lo, hi = law.continuous_support()
        h = plot.histogram(law, eig, label=f"MP(1)^⊠{order}", x_max=hi)
        x = np.linspace(lo, hi, 400)[1:]
        tables[f"Fuss-Catalan s={order}"] = h.table
        tables.extras[f"Fuss-Catalan s={order}"] = (h, x, FussCatalan(order).pdf(x))
    return tables


def draw(tables):
    s = tables.extras
    orders = s["orders"]
    fig, axes = figures.subplots(2, max(len(RATIOS), len(orders)), 18 / 5, 3.5)
    for j, lam in enumerate(RATIOS):
        ax = plot.draw_histogram(axes[0, j], s[f"MP ratio={lam}"])
        ax.set(title=f"Marchenko–Pastur, λ = {lam}", xlabel="eigenvalue", ylabel="density")
    for j, order in enumerate(orders):
        h, x, pdf = s[f"Fuss-Catalan s={order}"]
        ax = plot.draw_histogram(axes[1, j], h)
        ax.plot(x, pdf, "r--", lw=1, label="parametric Fuss–Catalan")
        ax.legend(fontsize=7)
        ax.set_yscale("log")
        # one rule in every panel: from a third of the lowest non-empty bin (one eigenvalue's height) up, not down
        # to where the law's density falls to 0 at the support's edge
        heights = h.table.mc_density.to_numpy()
        ax.set_ylim(heights[heights > 0].min() / 3, 2 * max(heights.max(), float(np.nanmax(pdf))))
        ax.set(title=f"{order} Ginibre factor(s)", xlabel="eigenvalue", ylabel="density (log scale)")
    for ax in axes.ravel()[len(RATIOS):len(axes[0])]:
        ax.axis("off")
    for ax in axes[1, len(orders):]:
        ax.axis("off")
    fig.suptitle(f"Theory (lines) vs Monte Carlo (N = {s['n']}, {s['draws']} draw(s))")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "larger N and more draws")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), width=24)
