"""Why Sparse Subnetwork Ensembles lose here: the ensemble against the independent model and against its own parent
as the children get more optimisation steps at an equal total budget (Whitaker 2023, Table 5.1, §5.3.3).

Every run spends ``E`` epochs in all (Adam, fixed lr 1e-3; rmtnet.studies.subnetwork_ensembles.budget_run with
``child_epochs``): a parent trained E − k·c epochs, then k children pruned at 50 % (random masks, R, or Neural
Partitioning, NP) and tuned c epochs each; the independent model trains E epochs. The axis is the optimisation steps
per child, c·⌈n_train/batch⌉ (the training loop keeps the last, smaller batch: MNIST-5k's 4,000 training images are
125 steps an epoch at batch 32 and 32 at batch 128; digits' 1,437 are 45 at batch 32), so batches of 32 and 128 land
on one axis. The schedules (E, k, c): E = 16 with 8 children and c = 1 is the thesis's split
(parent 8 epochs, children 1 epoch each, the subnetwork_ensembles figure's); at E = 32 with 8 children, c = 1, 2, 3
moves 8 → 24 epochs from the parent to the children (parent 24 → 8); with 4 children, c = 1, 2, 3 at E = 16
(parent 12 → 4) and c = 2, 4, 6 at E = 32 (parent 24 → 8). The thesis finds SSE(R) 2–8 points above the
independent model at 16 epochs (LeNet/ResNet/DenseNet, CIFAR).

Panels, per data set: the ensemble − independent model (same E, batch and seed) and the ensemble − its own parent,
in accuracy points, and the ensemble − independent model in test NLL, against steps per child (mean ± SE over seeds
of the per-seed paired difference; zero line). Tables "effects" (per point and comparison — the panels', the mean
child − its parent, the parent − the independent model and NP − R — the paired t-test of
rmtnet.studies.effects.difference, p two-sided), "trend" (least squares of the per-seed difference on log₂ steps
per child within each (E, k) series, both batches pooled: the change per doubling) and "runs". The caption's
verdict is computed from "effects".

Measured (full, MNIST-5k, SSE(R), 5 seeds; accuracy points unless NLL): the deficit shrinks as the children get more
steps, +0.32 to +0.96 points per doubling (p < 0.001 in each of the four series), from −2.84 ± 0.30 at 32 steps
(batch 128, the thesis's split; p = 0.0007) and −0.96 ± 0.16 at 125 (batch 32, the thesis's split; p = 0.004) to
−0.56 … +0.04 points, none significant (p ≥ 0.057), at 192 steps and more — but it never turns positive: at 0 of
the 20 points is the ensemble above the independent model at p < 0.05 (12 below; best +0.04 ± 0.09 at 250 steps,
p = 0.69). The mean child climbs from 3.6 points below its parent (32 steps) to between −0.4 and +0.5 (375–750
steps) while the members' disagreement falls (0.068 → 0.031); and the model is saturated at this budget: the
parent after 8 epochs is 0.3–0.7 points below the 16-epoch independent model, which gains only 0.12–0.14 points
from 16 to 32 epochs, so there is no undertrained independent model for the ensemble to beat (the thesis's LeNet-L
is at 70 % on CIFAR-10). The ensemble beats its own parent only where the parent is cut to 4 epochs (+1.48 ± 0.38
at 375 steps, p = 0.017; 1 of 20 points). In test NLL the sign does flip: the ensemble is below the independent
model (whose NLL rises from 0.21 to 0.23 between 16 and 32 epochs) at 13 of 20 points (p < 0.05): at every
batch-32 point (−0.018 ± 0.004 nats at the thesis's split, p = 0.016; −0.080 ± 0.003 at 500 steps) and at batch
128 from 96 steps per child on. Neural Partitioning changes none of this: SSE(NP) is above the independent model at
0 of 20 points (11 below at p < 0.05), and NP − R from the same parent lies between −0.20 and +0.26 points (1 of 20
at p < 0.05; +0.05 ± 0.04 over all 100 paired runs, p = 0.19).

Sizes: tiny (tests: digits, width 16, batch 128, E = 16, 4 children, c = 1, 3, 2 seeds); quick (digits, width 64,
batch 32, E = 16, 4 children, c = 1, 2, 3, SSE(R), 4 seeds; 12.5 s measured at load ≈ 1.9 on two shared
cores); full (``--full``: MNIST-5k, width 256, batches 32 and 128, the ten schedules, SSE(R) and SSE(NP), 5
seeds: 220 runs; measured as R first, 29 min at load ≈ 3.3 on two shared cores, then NP, 15 min at load ≈ 2.4 —
≈ 20 min of training on one quiet core in one process, where NP reuses R's parents). Runs are appended to
``<outdir>/subnetwork_child_steps[_full]_runs.csv`` through rmtnet.experiments.sweep (an interrupted run resumes).
CIFAR-10 (the thesis's data): ``compute(datasets=("cifar10",), data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10=FOLDER``;
FOLDER holds the unpacked python batches, see rmtnet.nets.data.cifar10; nothing is downloaded).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.studies.effects import difference, linear_model
from rmtnet.studies.subnetwork_ensembles import budget_run

NAMES = {"mnist5k": "MNIST-5k", "digits": "digits", "cifar10": "CIFAR-10"}
LABELS = {"sse_r": "SSE (R)", "sse_np": "SSE (NP)"}
COMPARISONS = {"ensemble − independent": ("accuracy", "independent_accuracy", 100),  # the two panels (points)
               "ensemble − its parent": ("accuracy", "parent_accuracy", 100),
               "mean child − its parent": ("member_accuracy", "parent_accuracy", 100),  # does a child recover?
               "parent − independent": ("parent_accuracy", "independent_accuracy", 100),
               "ensemble − independent, NLL": ("nll", "independent_nll", 1)}          # test NLL (nats)
PANELS = ("ensemble − independent", "ensemble − its parent", "ensemble − independent, NLL")
THESIS = (16, 8, 1)
SIZES = {"tiny": dict(datasets=("digits",), batch_sizes=(128,), width=16, seeds=2, methods=("sse_r",),
                      schedules=((16, 4, 1), (16, 4, 3))),
         "quick": dict(datasets=("digits",), batch_sizes=(32,), width=64, seeds=4, methods=("sse_r",),
                       schedules=((16, 4, 1), (16, 4, 2), (16, 4, 3))),
         "full": dict(datasets=("mnist5k",), batch_sizes=(32, 128), width=256, seeds=5, methods=("sse_r", "sse_np"),
                      schedules=((16, 8, 1), (32, 8, 1), (32, 8, 2), (32, 8, 3), (16, 4, 1), (16, 4, 2),
                                 (16, 4, 3), (32, 4, 2), (32, 4, 4), (32, 4, 6)))}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    name = "subnetwork_child_steps_full" if full else "subnetwork_child_steps"
    return figures.make(name, compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs, **overrides)


def settings(full, **overrides):
    """Data sets, batch sizes, width, seeds, SSE methods and (E, k, c) schedules of a size (``overrides`` replace
    any of them)."""
    return figures.settings(SIZES, full, **overrides)


def grid(s):
    """One independent run per (data set, batch, E); one SSE run per schedule and method, draw 0."""
    configs = []
    for dataset in s["datasets"]:
        for bs in s["batch_sizes"]:
            common = dict(dataset=dataset, batch_size=int(bs), width=int(s["width"]), **figures.data_dir_argument(s))
            for total in sorted({e for e, _, _ in s["schedules"]}):
                configs.append(dict(method="independent", epochs=int(total), **common))
            configs += [dict(method=m, epochs=int(e), members=int(k), child_epochs=int(c), **common)
                        for e, k, c in s["schedules"] for m in s["methods"]]
    return configs


def paired(runs):
    """The SSE runs with the accuracy and NLL of the independent model of the same data set, batch, E and seed."""
    keys = ["dataset", "batch_size", "epochs", "seed"]
    ind = runs[runs.method == "independent"][keys + ["accuracy", "nll"]].rename(
        columns={"accuracy": "independent_accuracy", "nll": "independent_nll"})
    return runs[runs.method != "independent"].merge(ind, on=keys, how="inner")


def effects(runs):
    """Per point (data set, batch, E, k, c, method) and comparison: the paired per-seed difference in accuracy
    points (mean, SE, t, p) with the steps per child and the parent's epochs."""
    rows = []
    keys = ["dataset", "batch_size", "epochs", "members", "child_epochs", "method"]
    for point, t in paired(runs).groupby(keys, sort=False):
        point = _point(keys, point)
        for name, (col, ref, scale) in COMPARISONS.items():
            d = difference(scale * t[col], scale * t[ref], paired=True)
            rows.append(dict(point, comparison=name, child_steps=int(t.child_steps.iloc[0]),
                             parent_epochs=int(t.parent_epochs.iloc[0]), diff=d["diff"], se=d["se"], t=d["t"],
                             p=d["p"], n_seeds=d["n_a"]))
    return pd.DataFrame(rows + _np_minus_r(runs, keys[:-1]))


def _point(keys, values):
    """A point of the axis as a dict: (data set, batch, E, k, c[, method]) with the counts as ints."""
    point = dict(zip(keys, values))
    return point | {k: int(point[k]) for k in ("batch_size", "epochs", "members", "child_epochs")}


def _np_minus_r(runs, keys):
    """SSE(NP) − SSE(R) from the same parent, paired per seed, in accuracy points (where both were run)."""
    rows = []
    both = runs[runs.method.isin(["sse_r", "sse_np"])].pivot_table(index=keys + ["seed"], columns="method",
                                                                    values=["accuracy", "child_steps",
                                                                            "parent_epochs"])
    if "sse_np" not in both["accuracy"] or "sse_r" not in both["accuracy"]:
        return rows
    for point, t in both.dropna().groupby(level=keys, sort=False):
        d = difference(100 * t["accuracy", "sse_np"], 100 * t["accuracy", "sse_r"], paired=True)
        rows.append(dict(_point(keys, point), method="sse_np", comparison="SSE(NP) − SSE(R)",
                         child_steps=int(t["child_steps", "sse_np"].iloc[0]),
                         parent_epochs=int(t["parent_epochs", "sse_np"].iloc[0]), diff=d["diff"], se=d["se"],
                         t=d["t"], p=d["p"], n_seeds=d["n_a"]))
    return rows


def trend(runs):
    """Per (data set, method, E, k) series and comparison: least squares of the per-seed difference (points) on
    log₂(steps per child), both batch sizes pooled: the change per doubling of the child's steps, its SE and p."""
    rows = []
    t = paired(runs)
    for (dataset, method, total, k), s in t.groupby(["dataset", "method", "epochs", "members"], sort=False):
        if s.child_steps.nunique() < 2 or len(s) < 4:
            continue
        for name, (col, ref, scale) in COMPARISONS.items():
            fit = linear_model(scale * (s[col] - s[ref]), {"log2_steps": np.log2(s.child_steps)})
            slope = fit.loc["log2_steps"]
            rows.append(dict(dataset=dataset, method=method, epochs=int(total), members=int(k), comparison=name,
                             per_doubling=slope["coef"], se=slope["se"], p=slope["p"], n=len(s),
                             steps=f"{int(s.child_steps.min())}–{int(s.child_steps.max())}"))
    return pd.DataFrame(rows)


def verdict(eff):
    """The caption's sentence, from the effects: per data set and panel (SSE R), how many points are better and
    worse than the reference at p < 0.05 (higher accuracy, lower NLL), the best point, and where the sign flips."""
    out = []
    shown = eff[(eff.method == "sse_r") & eff.comparison.isin(PANELS)]
    for (dataset, name), t in shown.groupby(["dataset", "comparison"], sort=False):
        sign = -1.0 if name.endswith("NLL") else 1.0                   # the direction of "better"
        gain = sign * t["diff"]
        better, worse = t[(gain > 0) & (t.p < 0.05)], t[(gain < 0) & (t.p < 0.05)]
        best = t.loc[gain.idxmax()]
        flip = (f"significantly better at {len(better)} point(s), the first at {int(better.child_steps.min())} steps "
                "per child" if len(better) else
                f"no significant sign flip (better in the mean at {int((gain > 0).sum())} points)" if (gain > 0).any()
                else "worse in the mean at every point")
        out.append(f"{NAMES.get(dataset, dataset)}, SSE(R) {name}: worse at {len(worse)} and better at "
                   f"{len(better)} of {len(t)} points (p < 0.05); {flip}; best {best['diff']:+.3g} ± {best.se:.2g} "
                   f"at {int(best.child_steps)} steps (E = {int(best.epochs)}, {int(best.members)} children, batch "
                   f"{int(best.batch_size)}, p = {best.p:.2g})")
    return "; ".join(out + _np_sentences(eff)) + "."


def _np_sentences(eff):
    """Per data set with NP runs: SSE(NP) against the independent model, and NP − R, counted at p < 0.05."""
    out = []
    for dataset, t in eff[eff.method == "sse_np"].groupby("dataset", sort=False):
        ind, np_r = t[t.comparison == "ensemble − independent"], t[t.comparison == "SSE(NP) − SSE(R)"]
        worse, better = ((ind.p < 0.05) & (sign * ind["diff"] > 0) for sign in (-1, 1))
        out.append(f"{NAMES.get(dataset, dataset)}, SSE(NP) − independent: worse at {int(worse.sum())} "
                   f"of {len(ind)} points and better at {int(better.sum())}; SSE(NP) − "
                   f"SSE(R) from {np_r['diff'].min():+.2f} to {np_r['diff'].max():+.2f} points "
                   f"({int((np_r.p < 0.05).sum())} of {len(np_r)} at p < 0.05)")
    return out


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "effects", "trend" and "runs" (kept in STORE/subnetwork_child_steps[_full]_runs.csv)."""
    size = figures.size_name(size)
    s = settings(size, **overrides)
    name = "subnetwork_child_steps_full" if size == "full" else "subnetwork_child_steps"
    runs = experiments.sweep(budget_run, grid(s), seeds=figures.seeds(seed, s["seeds"]),
                             store=figures.output_dir(store) / f"{name}_runs.csv", n_jobs=n_jobs)
    eff = effects(runs)
    return figures.Tables({"effects": eff, "trend": trend(runs), "runs": runs.copy()},
                          extras=dict(s, verdict=verdict(eff)))


def _series(ax, eff, name):
    t = eff[eff.comparison == name]
    series = sorted(t.groupby(["epochs", "members"]).groups)
    named_np = False
    for (total, k, method, bs), s in t.groupby(["epochs", "members", "method", "batch_size"]):
        s = s.sort_values("child_steps")
        label = f"{LABELS[method]}, E = {total}, {k} children, batch {bs}"
        if method == "sse_np":                            # one legend entry for all NP lines
            label, named_np = (None if named_np else "SSE (NP): dotted, same colours"), True
        ax.errorbar(s.child_steps, s["diff"], yerr=s.se, color=f"C{series.index((total, k))}", capsize=3, lw=1.2,
                    ls="-" if method == "sse_r" else ":", marker="o" if bs == 32 else "s", ms=4, label=label)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xscale("log", base=2)
    ticks = sorted(int(v) for v in t.child_steps.unique())
    ax.set_xticks(ticks, [str(v) for v in ticks], fontsize=7, rotation=60)
    ax.minorticks_off()


def draw(tables):
    eff = tables["effects"]
    data = list(dict.fromkeys(eff.dataset))
    fig, axes = figures.subplots(len(data), len(PANELS), 5.4, 4.2)
    for row, dataset in zip(axes, data):
        t = eff[eff.dataset == dataset]
        for ax, name in zip(row, PANELS):
            _series(ax, t, name)
            unit = "test NLL, nats" if name.endswith("NLL") else "accuracy points"
            figures.style(ax, legend=6 if name == PANELS[0] else None, title_size=9,
                          xlabel="optimisation steps per child", ylabel=f"paired difference ({unit}, mean ± SE)",
                          title=f"{NAMES.get(dataset, dataset)}: {name}, {int(t.n_seeds.max())} seeds")
    fig.suptitle("Sparse Subnetwork Ensembles at an equal total budget: longer children, shorter parent "
                 "(Whitaker 2023, Table 5.1 analogue, MLPs)", fontsize=10)
    figures.caption(fig, verdict(eff), fontsize=7)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "MNIST-5k, batches 32 and 128, seven schedules, R and NP, 5 seeds")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    fmt = dict(index=False, float_format=lambda v: f"{v:.4g}")
    print(t["effects"].to_string(**fmt))
    print(t["trend"].to_string(**fmt))
    print(t.extras["verdict"])
    print("wrote", p)
