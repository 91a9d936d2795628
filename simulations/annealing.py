"""One-shot pruning, iterative pruning, random annealing and temperature annealing of a child network at 50–98 %
sparsity (Whitaker 2023, Table 6.1 / Fig. 6.3, §6.3.1), with an MLP on MNIST-5k.

A parent MLP (flatten → w → w → 10, ReLU; w = 128 quick, 256 full) is trained 10 epochs by Adam (lr 1e-3). One
child per cell is pruned to the target sparsity (per layer, unstructured, exact counts; random or magnitude targets)
and tuned for T epochs by SGD with momentum 0.9, at a constant learning rate 0.01 (the thesis's "FT") or with the
thesis's one-cycle schedule (0.001 → 0.1 at 10 % → 1e-7, rmtnet.nets.ensembles.OneCycle); minibatches of 32.
The methods (rmtnet.studies.subnetwork_ensembles.anneal_run):
- one-shot: prune everything, then tune;
- iterative: prune to sparsity · (e+1)/ε at the start of epoch e, reaching the target after ε epochs;
- random annealing: P₀ ~ U(0, 1) per weight, moved linearly to the target M (1[U ≥ s]) over ε epochs, a fresh
  Bernoulli(P) subnetwork for every minibatch;
- temperature annealing: P = 1 on M and τ_e = τ₀ · ½(1 + cos(π e/ε)) off it (τ₀ = 0.5), cosine to 0 over ε epochs.
One-shot and temperature annealing share the target mask of a seed. The score is the best test accuracy over the
epochs in which the target sparsity is in force (e ≥ ε; the thesis reports the best) and, beside it, the final one.
The thesis (ResNet-18 on CIFAR-100, 20 epochs) finds temperature ≥ random ≳ iterative ≥ one-shot, the gap growing
with sparsity: at 98 %, +6.2 points (random masks, constant LR), +4.0 (random, one-cycle), +2.4 and +1.1 (magnitude).

Quick mode (default): width 128, random masks, sparsities 90/98 % (where the methods differ; at ≤ 90 % every
method is within about half a point of one-shot, see below), both schedules, T = 10, ε = 3, 2 seeds (32 runs; the
numbers quoted below for quick mode come from the earlier five sparsities 50/70/90/95/98 %, of which these two are a
subset). ``--full``: width 256, random and
magnitude masks, T = 20, ε = 5, 5 seeds (350 runs; 140 of them, sparsities 90/98 % only, took 12.6 minutes).

Measured at 98 % (best accuracy at the target, temperature annealing − one-shot, points, mean ± SE of per-seed
differences): quick settings with 3 seeds (width 128) +15.6 ± 2.4 with constant lr (3 of 3 seeds), +7.2 ± 3.7 one-cycle
(2 of 3); full settings at 90/98 % (width 256, 5 seeds) random masks +3.3 ± 1.0 constant (4 of 5), +0.4 ± 0.3
one-cycle (3 of 5), magnitude masks +0.2 ± 0.2 constant, −0.3 ± 0.5 one-cycle, where iterative magnitude pruning
leads (+1.3 ± 0.7, +3.3 ± 0.8). Random annealing is as good as temperature annealing (+3.9 ± 0.8, +0.9 ± 0.5 at
width 256). At ≤ 90 % every method is within about half a point of one-shot.
Runs are appended to figures/annealing_runs.csv through rmtnet.experiments.sweep (an interrupted run resumes).
CIFAR-10 (the thesis's data): ``compute(dataset="cifar10", data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10=FOLDER``; FOLDER
holds the unpacked python batches, see rmtnet.nets.data.cifar10; nothing is downloaded).
Writes figures/annealing.png and figures/annealing.csv (panels "summary", "gains", "runs").
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.studies.subnetwork_ensembles import ANNEAL_METHODS, anneal_run

LABELS = {"one_shot": "one-shot", "iterative": "iterative", "random_anneal": "random annealing",
          "temperature_anneal": "temperature annealing"}
SCHEDULES = ("constant", "onecycle")
SIZES = {"tiny": dict(dataset="digits", masks=("random",), sparsities=(0.5, 0.9), tune_epochs=1, anneal_epochs=1,
                      tau0=0.5, width=16, seeds=2),
         "quick": dict(dataset="mnist5k", masks=("random",), sparsities=(0.9, 0.98), tune_epochs=10,
                       anneal_epochs=3, tau0=0.5, width=128, seeds=2),
         "full": dict(dataset="mnist5k", masks=("random", "magnitude"), sparsities=(0.5, 0.7, 0.9, 0.95, 0.98),
                      tune_epochs=20, anneal_epochs=5, tau0=0.5, width=256, seeds=5)}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    return figures.make("annealing", compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs,
                        **overrides)


def settings(full, **overrides):
    """The settings of ``full`` (a bool, or a size of SIZES by name), with ``overrides`` in place of any."""
    return figures.settings(SIZES, full, **overrides)


def grid(s):
    configs = []
    for mask in s["masks"]:
        for schedule in SCHEDULES:
            for sparsity in s["sparsities"]:
                for method in ANNEAL_METHODS:
                    if method == "random_anneal" and mask != "random":
                        continue                       # random annealing draws its own random target
                    configs.append(dict(dataset=s["dataset"], method=method, sparsity=float(sparsity),
                                        schedule=schedule, mask=mask, tune_epochs=int(s["tune_epochs"]),
                                        anneal_epochs=int(s["anneal_epochs"]), tau0=float(s["tau0"]),
                                        width=int(s["width"]), **figures.data_dir_argument(s)))
    return configs


def _se(x):
    x = np.asarray(x, dtype=float)
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def summarise(runs):
    keys = ["mask", "schedule", "method", "sparsity"]
    g = runs.groupby(keys, sort=False)
    out = g.agg(best_mean=("best_accuracy", "mean"), final_mean=("final_accuracy", "mean"),
                n_seeds=("seed", "nunique"), parent_accuracy=("parent_accuracy", "mean")).reset_index()
    out["best_se"] = g.best_accuracy.apply(_se).to_numpy()
    out["final_se"] = g.final_accuracy.apply(_se).to_numpy()
    return out


def gains(runs):
    """Per-seed paired differences to one-shot (same parent and, for temperature annealing, the same mask)."""
    rows = []
    for (mask, schedule, sparsity), t in runs.groupby(["mask", "schedule", "sparsity"], sort=False):
        wide = {c: t.pivot_table(index="seed", columns="method", values=c) for c in ("best_accuracy",
                                                                                  "final_accuracy")}
        for method in ANNEAL_METHODS:
            if method == "one_shot" or method not in wide["best_accuracy"]:
                continue
            row = dict(mask=mask, schedule=schedule, sparsity=sparsity, method=method)
            for c, name in (("best_accuracy", "best"), ("final_accuracy", "final")):
                d = (wide[c][method] - wide[c]["one_shot"]).dropna()
                row[f"{name}_gain"], row[f"{name}_gain_se"], row["n_seeds"] = float(d.mean()), _se(d), len(d)
                row[f"{name}_wins"] = int((d > 0).sum())
            rows.append(row)
    return pd.DataFrame(rows)


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "summary" (per mask, schedule, method and sparsity), "gains" (paired by seed, over one-shot) and
    "runs" (kept in STORE/annealing_runs.csv)."""
    s = settings(size, **overrides)
    runs = experiments.sweep(anneal_run, grid(s), seeds=figures.seeds(seed, s["seeds"]),
                             store=figures.output_dir(store) / "annealing_runs.csv", n_jobs=n_jobs)
    return figures.Tables({"summary": summarise(runs), "gains": gains(runs), "runs": runs.copy()}, extras=s)


def _sparsity_axis(ax, s, title, **properties):
    ax.set_xticks(range(len(s["sparsities"])), [f"{100 * v:g} %" for v in s["sparsities"]])
    figures.style(ax, legend=None, title_size=9, xlabel="sparsity", title=title, **properties)


def _draw_accuracy(ax, t, mask, schedule, s):
    for i, method in enumerate(ANNEAL_METHODS):
        m = t[t.method == method].sort_values("sparsity")
        if len(m):
            ax.errorbar(np.arange(len(m)) + (i - 1.5) * 0.06, m.best_mean, yerr=m.best_se, fmt="o-", capsize=3,
                        color=f"C{i}", label=LABELS[method])
    parent = t.parent_accuracy.mean()
    ax.axhline(parent, color="k", ls="--", lw=1, label="dense parent")
    _sparsity_axis(ax, s, f"{mask} masks, {'constant lr 0.01' if schedule == 'constant' else 'one-cycle, max 0.1'}"
                          f" ({s['tune_epochs']} epochs, ε = {s['anneal_epochs']}; mean ± SE, {s['seeds']} seeds)",
                   ylabel="best test accuracy at the target sparsity")
    lo = min(float((t.best_mean - t.best_se.fillna(0)).min()), parent)   # the parent's line inside, off the spine
    hi = max(float((t.best_mean + t.best_se.fillna(0)).max()), parent)
    ax.set_ylim(lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo))
    ax.legend(fontsize=7, loc="lower left")


def _draw_gains(ax, g, mask, s):
    for i, method in enumerate(ANNEAL_METHODS):
        for schedule, ls in zip(SCHEDULES, ("-", ":")):
            m = g[(g.method == method) & (g.schedule == schedule)].sort_values("sparsity")
            if len(m):
                ax.errorbar(np.arange(len(m)) + (i - 1.5) * 0.06, 100 * m.best_gain, yerr=100 * m.best_gain_se,
                            fmt="o", ls=ls, capsize=3, color=f"C{i}", label=f"{LABELS[method]}, {schedule}")
    ax.axhline(0, color="k", lw=0.8)
    _sparsity_axis(ax, s, f"{mask} masks: best accuracy minus one-shot's (solid constant, dotted one-cycle)",
                   ylabel="gain over one-shot, points (paired by seed)")
    ax.legend(fontsize=6)


def draw(tables):
    s, summary, gain = tables.extras, tables["summary"], tables["gains"]
    fig, axes = figures.subplots(len(s["masks"]), 3, 16 / 3, 4.2)
    for row, mask in zip(axes, s["masks"]):
        for ax, schedule in zip(row[:2], SCHEDULES):
            t = summary[(summary["mask"] == mask) & (summary.schedule == schedule)]
            _draw_accuracy(ax, t, mask, schedule, s)
        _draw_gains(row[2], gain[gain["mask"] == mask], mask, s)
    fig.suptitle(f"Pruning a {s['dataset']} MLP ({s['width']}-{s['width']}): one-shot, iterative, random and "
                 f"temperature annealing (Whitaker 2023, Table 6.1 analogue)", fontsize=11)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "random and magnitude masks, 20 tuning epochs, ε = 5, 5 seeds")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    fmt = dict(index=False, float_format=lambda v: f"{v:.4f}")
    sm = t["summary"]
    print(sm.pivot_table(index=["mask", "schedule", "method"], columns="sparsity", values="best_mean")
          .to_string(float_format=lambda v: f"{v:.3f}"))
    g = t["gains"]
    print(g[g.sparsity == max(g.sparsity)].to_string(**fmt))
    print("wrote", p)
