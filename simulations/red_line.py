"""The learning-rate red line, trained: full-batch gradient descent on deep fully-connected networks over a grid of
(depth, learning rate), each run classified converged / spiked then converged / stalled / diverged, against the line
η* = 2Nk/λ_max(Θ) that the NTK spectrum at initialisation predicts (Karakida, Akaho & Amari, AISTATS 2019, arXiv
1806.01316; Hayase & Karakida, AISTATS 2021, arXiv 2006.07814) — from the law, and from each network's own NTK.

Loss ½·mean over samples and outputs of (f − y)² (rmtnet's "mse"; with the mean without ½, every η halves: 1/λ_max
instead of 2/λ_max at Nk = 1). Top row: one panel per network family; dots are the runs of the grid (0.1× to 10× the
law's line, all seeds; green converged, blue spiked then converged — the catapult of Lewkowycz et al. 2020, arXiv
2003.02218 —, grey stalled, red diverged), the red line is the law's η* (Hayase–Karakida's one-sample Fisher law, or
the right edge of Fan & Wang's NTK law over N inputs), the dashed line the empirical NTK's, the dotted one 2/λ_max of
the loss Hessian at initialisation (Gauss–Newton part and residual term), black diamonds the measured stability
border (the smallest η whose loss rises at some step; mean and range over seeds), open triangles the divergence
border. Bottom row: the borders divided by the predicted lines, by depth. Settings and protocol:
rmtnet.studies.red_line.

Measured (quick, 3 seeds; ratio of the stability border to the law's line at depths 2 / 4 / 6, range over seeds):
data ReLU 1.05–1.27 / 1.54–2.05 / 0.79–0.87 (to the empirical line 1.06–1.23 / 1.62–2.02 / 1.19–1.45: at depth 6
the law's edge is below the finite network's top eigenvalue); data tanh 1.05–1.27 / 1.15–1.40 / 1.54–2.49; one-sample
tanh with orthogonal weights (dynamical isometry, Hayase & Karakida's case) 0.95 / 0.95 / 0.95–1.05; one-sample ReLU
with orthogonal weights 1.05 / 2.05–2.49 / 3.32–4.02. At depth 2 the border is the line within 27 %; with depth it
moves above the line where the network is not lazy (one input and n outputs at width n, or depth/width not small):
the top of the NTK falls in the first steps, before the unstable mode has grown (the early sharpness reduction of
Kalra & Barkeshli, NeurIPS 2023, arXiv 2302.12250). The divergence border lies 1.9–4.4× above the law's line (the
catapult band); one-sample ReLU nets did not diverge up to 10×.

Quick (default, about 55 s on one core): data setting (N = 32 Gaussian inputs on the sphere, width 192, one output;
ReLU and tanh, normalised, Gaussian weights, σ_w = 1) and one-sample setting (width 96; tanh orthogonal σ_w = 1, ReLU
orthogonal σ_w = √2), depths 2, 4, 6, 3 seeds, 40 steps per run, a 7-point grid, 3 bisections. ``--full``: depths 2 …
32 (8 of them), width 256 / 128, eight families (Gaussian and orthogonal weights, ReLU and tanh, and σ_w away from
criticality: tanh at σ_w = 1.5 in both settings), 3 seeds, the quick run's steps, grid and bisections, its sweep on
every core (about 40 minutes on 2 cores, estimated from the rate of a partial run). Runs are stored as they finish in
OUTDIR/red_line_runs.csv (OUTDIR/red_line_full_runs.csv for --full; rmtnet.experiments.sweep): an interrupted run
resumes. Writes figures/red_line.png and figures/red_line.csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.studies import red_line

ROOT2 = float(np.sqrt(2.0))
QUICK_FAMILIES = (("data", "relu", "gaussian", 1.0), ("data", "tanh", "gaussian", 1.0),
                  ("one_sample", "tanh", "orthogonal", 1.0), ("one_sample", "relu", "orthogonal", ROOT2))
FULL_FAMILIES = QUICK_FAMILIES + (("data", "tanh", "gaussian", 1.5), ("one_sample", "tanh", "gaussian", 1.0),
                                  ("one_sample", "relu", "gaussian", ROOT2), ("one_sample", "tanh", "orthogonal", 1.5))
SIZES = {"tiny": dict(families=(("data", "relu", "gaussian", 1.0), ("one_sample", "relu", "orthogonal", ROOT2)),
                      depths=(2, 3), widths={"data": 32, "one_sample": 24}, n_data=8, n_seeds=1, steps=15, n_grid=5,
                      bisections=1),
         "quick": dict(families=QUICK_FAMILIES, depths=(2, 4, 6), widths={"data": 192, "one_sample": 96},
                       n_data=32, n_seeds=3, steps=40, n_grid=7, bisections=3),
         "full": dict(families=FULL_FAMILIES, depths=(2, 3, 4, 6, 8, 12, 16, 32),
                      widths={"data": 256, "one_sample": 128}, n_data=32, n_seeds=3, steps=40, n_grid=7,
                      bisections=3)}
COLOURS = {"C": "tab:green", "S": "tab:blue", "T": "0.6", "D": "tab:red"}
NAMES = {"C": "converged", "S": "spiked then converged", "T": "stalled", "D": "diverged"}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("red_line", compute, draw, full, outdir, seed, backend, store=outdir)


def _grid(s):
    """The sweep's configurations: every family at every depth."""
    top = max(s["depths"])
    return [dict(setting=f[0], activation=f[1], weights=f[2], sigma_w=f[3], depth=d, width=s["widths"][f[0]],
                 n_data=1 if f[0] == "one_sample" else s["n_data"], steps=s["steps"], n_grid=s["n_grid"],
                 bisections=s["bisections"], max_depth=top)
            for f in s["families"] for d in s["depths"]]


def _family(row):
    return f"{row.setting}: {row.activation}, {row.weights}, σ_w = {row.sigma_w:.3g}"


def _by_depth(runs):
    """Per family and depth: the lines and borders over seeds (mean, min, max of the ratios to the law's line)."""
    out = []
    for (fam, depth), g in runs.groupby(["family", "depth"], sort=False):
        row = {"family": fam, "depth": depth, "seeds": len(g), "eta_law": g.eta_law.mean(),
               "eta_empirical": g.eta_empirical.mean(), "eta_hessian": g.eta_hessian.mean()}
        for col in ("stability_over_law", "stability_over_empirical", "stability_over_hessian",
                    "divergence_over_law"):
            row.update({f"{col}_mean": g[col].mean(), f"{col}_min": g[col].min(), f"{col}_max": g[col].max()})
        row.update(stability_border=g.stability_border.mean(), divergence_border=g.divergence_border.mean(),
                   on_side_law=g.on_side_law.mean(), on_side_empirical=g.on_side_empirical.mean())
        for name in ("stability", "divergence"):        # the seeds behind each mean, and those the grid censored
            row[f"{name}_seeds"] = int((g[f"{name}_censored"] == "no").sum())
            row[f"{name}_above_grid"] = int((g[f"{name}_censored"] == "above").sum())
            row[f"{name}_below_grid"] = int((g[f"{name}_censored"] == "below").sum())
        out.append(row)
    return pd.DataFrame(out)


def compute(size="quick", seed=0, backend=None, store="figures"):
    """Tables "runs" (one row per network and seed) and "borders by depth"; the runs are kept in
    STORE/red_line_runs.csv (STORE/red_line_full_runs.csv for the full size)."""
    s = figures.settings(SIZES, size)
    runs = experiments.sweep(red_line.red_line_run, _grid(s), seeds=figures.seeds(seed, s["n_seeds"]),
                             store=figures.output_dir(store) / f"red_line{'_full' * (size == 'full')}_runs.csv",
                             on_error="raise", n_jobs=-1 if size == "full" else 1,
                             nonfinite="ignore")         # divergence_*: NaN where no step on the grid diverged
    runs = runs.drop(columns=["run_key"], errors="ignore")
    runs.insert(0, "family", [_family(r) for r in runs.itertuples()])
    return figures.Tables({"runs": runs, "borders by depth": _by_depth(runs)}, extras=s)


def _depth_axis(ax, depths):
    """Depth on a log axis with the depths themselves as tick labels."""
    ax.set_xscale("log")
    ax.set_xticks(list(depths), [str(d) for d in depths])
    ax.minorticks_off()


def _cells(ax, g, n_grid):
    """The grid's runs of one family: every seed's outcomes at their learning rates, slightly apart by seed."""
    factors = np.geomspace(0.1, 10.0, n_grid)
    seen = set()
    for r in g.itertuples():
        for f, letter in zip(factors, r.grid):
            x = r.depth * (1 + 0.04 * (r.seed - g.seed.min()))
            ax.scatter(x, f * r.reference, s=9, color=COLOURS[letter], zorder=2,
                       label=None if letter in seen else NAMES[letter])
            seen.add(letter)


def _legend_below(fig, axes):
    """One legend under the panels, the grid's outcomes and lines (top row) then the ratios (bottom row): inside a
    panel it hid the runs of the grid."""
    handles, labels = axes[0, 0].get_legend_handles_labels()
    more = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles + more[0], labels + more[1], loc="outside lower center", ncol=6, fontsize=7, frameon=False)


def draw(tables):
    runs, depth = tables["runs"], tables["borders by depth"]
    families = list(dict.fromkeys(runs.family))
    fig, axes = figures.subplots(2, len(families), 4.4, 3.9)
    for j, fam in enumerate(families):
        g, d = runs[runs.family == fam], depth[depth.family == fam]
        ax = axes[0, j]
        _cells(ax, g, tables.extras["n_grid"])
        ax.plot(d.depth, d.eta_law, "r-", lw=1.6, label="law: η* = 2Nk/λ_max")
        ax.plot(d.depth, d.eta_empirical, "k--", lw=1, label="empirical NTK at init")
        ax.plot(d.depth, d.eta_hessian, "k:", lw=1, label="2/λ_max of the loss Hessian at init")
        span = [d.stability_border - g.groupby("depth").stability_border.min().values,
                g.groupby("depth").stability_border.max().values - d.stability_border]
        ax.errorbar(d.depth, d.stability_border, yerr=np.abs(span), fmt="D", color="k", ms=4, capsize=2,
                    label="measured stability border")
        ax.plot(d.depth, d.divergence_border, "^", mfc="none", color="tab:red", label="measured divergence border")
        figures.style(ax, legend=None, yscale="log", xlabel="depth L", ylabel="learning rate η", title=fam,
                      title_size=8)
        _depth_axis(ax, sorted(d.depth))
        ax = axes[1, j]
        for col, mark, label in (("stability_over_law", "D-", "stability border / law's η*"),
                                 ("stability_over_empirical", "o--", "stability border / empirical η*"),
                                 ("stability_over_hessian", "s:", "stability border / Hessian's 2/λ_max"),
                                 ("divergence_over_law", "^:", "divergence border / law's η*")):
            mean = d[f"{col}_mean"]
            err = [mean - d[f"{col}_min"], d[f"{col}_max"] - mean]
            ax.errorbar(d.depth, mean, yerr=np.abs(err), fmt=mark, ms=4, capsize=2, label=label)
        ax.axhline(1.0, color="r", lw=1)
        figures.style(ax, legend=None, yscale="log", xlabel="depth L", ylabel="measured / predicted",
                      title=f"borders against the predicted lines ({int(d.seeds.max())} seeds)", title_size=8)
        _depth_axis(ax, sorted(d.depth))
        figures.log_ticks(ax)                           # ratios of 0.8 to 4: labelled, not the lone 10⁰
    _legend_below(fig, axes)
    fig.suptitle("Full-batch gradient descent on ½·mean (f − y)²: where training stops being stable, against the "
                 "NTK's η* = 2Nk/λ_max (Hayase & Karakida 2021; Fan & Wang 2020)", fontsize=10)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "depths 2 … 32, 9 families, 5 seeds, 100 steps (~50 min on 2 cores)")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("borders by depth",))
