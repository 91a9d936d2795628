"""Decision boundaries of noisy subnetwork children on two interleaved spirals (Whitaker 2023, Fig. 4.2, §4.3.1).

A 3-layer, 64-unit ReLU MLP (2 → 64 → 64 → 64 → 2) is trained by Adam (lr 1e-3) for 10 epochs on 2,500 spiral points
(rmtnet.nets.data.spirals; batch 32, which the thesis does not give). Children are noise mutations of it (Eq. 3.17,
Alg. 1): Ŵ = W + N ∘ M on every weight matrix, N ~ 𝒩(0, σ²), M ~ Bernoulli(1 − sparsity) (biases untouched). For each
cell of a grid σ × sparsity the figure draws one child's decision boundary (P(class 1) on a grid of the plane) over
the 250 held-out points, annotated with the mean output KL to the parent on those points (Eq. 4.5) over the cell's
children and their mean accuracy. The left column shows the parent and KL against σ per sparsity, with the σ that
rmtnet.nets.ensembles.trust_region_search finds for the target KL Δ = 0.02 (the thesis's ImageNet target).

The thesis's claim (digest §5, 1): at fixed σ the KL and the damage fall as the mutation sparsity rises; dense noise
collapses the boundary at a much smaller σ. Measured (quick mode): at σ = 0.25 the KL is 2.77 dense and 0.20 at 90 %
sparsity (child accuracy 0.59 vs 0.89, parent 0.99); the trust-region σ for Δ = 0.02 grows from 0.042 (dense) to
0.106 (90 % sparse).

Quick mode (default): σ ∈ {0.05, 0.10, 0.15, 0.20, 0.25} × sparsity ∈ {0, 0.3, 0.6, 0.9}, 8 children per cell, one
parent (72 s measured on 2 cores shared with other jobs). ``--full``: 9 σ × 6 sparsities, 32 children.
Cells go through rmtnet.experiments.sweep into figures/spiral_decision_boundaries_runs.csv (an interrupted run
resumes). Writes figures/spiral_decision_boundaries.png and .csv (panels "cells", "trust_region").
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from rmtnet import cli, experiments, figures
from rmtnet.nets import ensembles as E
from rmtnet.nets.data import spirals
from rmtnet.studies.subnetwork_ensembles import spiral_parent, spiral_run

TARGET_KL = 0.02
LIM = 1.3                 # the drawn square [-LIM, LIM]²
SIZES = {"tiny": dict(sigmas=(0.1,), sparsities=(0.0, 0.5), n_draws=2, resolution=20),
         "quick": dict(sigmas=(0.05, 0.1, 0.15, 0.2, 0.25), sparsities=(0.0, 0.3, 0.6, 0.9), n_draws=8,
                       resolution=150),
         "full": dict(sigmas=(0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.175, 0.2, 0.25),
                      sparsities=(0.0, 0.2, 0.4, 0.6, 0.8, 0.9), n_draws=32, resolution=200)}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=1, **overrides):
    return figures.make("spiral_decision_boundaries", compute, draw, full, outdir, seed, backend, store=outdir,
                        n_jobs=n_jobs, **overrides)


def settings(full, **overrides):
    """σ grid, sparsities, children per cell and the drawn grid's resolution of quick or full mode, or of a size by
    name (``overrides`` replace any of them)."""
    return figures.settings(SIZES, full, **overrides)


@torch.no_grad()
def _boundary(model, xx, yy):
    grid = torch.tensor(np.stack([xx.ravel(), yy.ravel()], axis=1), dtype=torch.float32)
    return E.ensemble_predict([model], grid)[:, 1].numpy().reshape(xx.shape)


def _trust_region(parent, data, s, seed):
    """Per sparsity, the σ at which the children reach the target KL (rmtnet.nets.ensembles.trust_region_search)."""
    region = []
    for sp in s["sparsities"]:
        tr = E.trust_region_search(parent, data.x_test, target_kl=TARGET_KL, y=data.y_test, sparsities=(sp,),
                                   sigmas=np.geomspace(1e-3, 1.0, 16), n_draws=s["n_draws"], seed=seed)
        region.append(dict(sparsity=sp, sigma=tr.sigma, kl=tr.kl, child_accuracy=tr.accuracy, reached=tr.reached,
                           target_kl=TARGET_KL))
    return pd.DataFrame(region)


def _boundaries(parent, s, seed):
    """The class-1 probability over the drawn grid of the parent and of the first child of every (σ, sparsity)."""
    xx, yy = np.meshgrid(np.linspace(-LIM, LIM, s["resolution"]), np.linspace(-LIM, LIM, s["resolution"]))
    out = {"parent": _boundary(parent, xx, yy)}
    for sp in s["sparsities"]:
        for sig in s["sigmas"]:
            child = E.noisy_children(parent, int(s["n_draws"]), float(sig), float(sp), seed=seed)[0]
            out[(sig, sp)] = _boundary(child, xx, yy)
    return xx, yy, out


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=1, **overrides):
    """Tables "cells" (KL and accuracy of the children per σ and sparsity; kept in
    STORE/spiral_decision_boundaries_runs.csv) and "trust_region"; the decision boundaries go to the drawing."""
    s = settings(size, **overrides)
    grid = [dict(sigma=float(a), sparsity=float(b), n_draws=int(s["n_draws"])) for b in s["sparsities"]
            for a in s["sigmas"]]
    cells = experiments.sweep(spiral_run, grid, seeds=[seed],
                              store=figures.output_dir(store) / "spiral_decision_boundaries_runs.csv", n_jobs=n_jobs)
    data = spirals(seed=0)
    parent = spiral_parent(seed)
    region = _trust_region(parent, data, s, seed)
    xx, yy, maps = _boundaries(parent, s, seed)
    return figures.Tables({"cells": cells.copy(), "trust_region": region},
                          extras=dict(s, xx=xx, yy=yy, maps=maps, x_test=data.x_test.numpy(),
                                      y_test=data.y_test.numpy()))


def _draw_kl(ax, cells, region, sparsities):
    for k, sp in enumerate(sparsities):
        t = cells[cells.sparsity == float(sp)].sort_values("sigma")
        ax.errorbar(t.sigma, t.kl, yerr=t.kl_std, fmt="o-", ms=3, capsize=2, color=f"C{k}", label=f"sparsity {sp:g}")
        r = region[region.sparsity == sp].iloc[0]
        ax.plot([r.sigma], [r.kl], "*", ms=9, color=f"C{k}", mec="k")
    ax.axhline(TARGET_KL, color="0.4", ls=":", lw=1, label=f"Δ = {TARGET_KL} (★ trust-region σ)")
    ax.axhspan(0.02, 0.05, color="0.85", zorder=0, label="KL 0.02–0.05 (thesis: degradation starts)")
    figures.style(ax, legend=6, yscale="log", xlabel="σ", ylabel="KL(parent ‖ child), mean ± std over children")


def draw(tables):
    import matplotlib.pyplot as plt
    x, cells = tables.extras, tables["cells"]
    n_rows, n_cols = len(x["sparsities"]), len(x["sigmas"])
    fig = plt.figure(figsize=(2.3 * (n_cols + 1.6), 2.3 * n_rows + 0.6), layout="constrained")
    gs = fig.add_gridspec(n_rows, n_cols + 1, width_ratios=[1.6] + [1] * n_cols)

    def panel(ax, key, title):
        filled = ax.contourf(x["xx"], x["yy"], x["maps"][key], levels=np.linspace(0, 1, 11), cmap="RdBu_r",
                             alpha=0.75)
        ax.scatter(x["x_test"][:, 0], x["x_test"][:, 1], c=x["y_test"], cmap="RdBu_r", s=4, edgecolors="k",
                   linewidths=0.2)
        ax.set(xticks=[], yticks=[], xlim=(-LIM, LIM), ylim=(-LIM, LIM), aspect="equal")   # the plane unstretched
        ax.set_title(title, fontsize=7)
        return filled

    parent = fig.add_subplot(gs[0, 0])
    filled = panel(parent, "parent", f"parent (test acc {float(cells.parent_accuracy.iloc[0]):.3f})")
    bar = fig.colorbar(filled, ax=parent, location="right", shrink=0.9, ticks=np.linspace(0, 1, 6))
    bar.set_label("P(class 1), every panel\n(dots: test points, by class)", fontsize=7)
    bar.ax.tick_params(labelsize=7)
    for i, sp in enumerate(x["sparsities"]):
        for j, sig in enumerate(x["sigmas"]):
            row = cells[(cells.sigma == float(sig)) & (cells.sparsity == float(sp))].iloc[0]
            panel(fig.add_subplot(gs[i, j + 1]), (sig, sp),
                  f"σ={sig:g}, sparsity={sp:g}\nKL={row.kl:.3f}, acc={row.child_accuracy:.3f}")
    if n_rows > 1:
        _draw_kl(fig.add_subplot(gs[1:, 0]), cells, tables["trust_region"], x["sparsities"])
    fig.suptitle("Noisy subnetwork children of a spiral MLP: decision boundaries over σ × mutation sparsity "
                 "(Whitaker 2023, Fig. 4.2)", fontsize=10)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "9 σ × 6 sparsities, 32 children per cell")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    c = t["cells"]
    print(c.pivot(index="sparsity", columns="sigma", values="kl").to_string(float_format=lambda v: f"{v:.4f}"))
    print(t["trust_region"].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("wrote", p)
