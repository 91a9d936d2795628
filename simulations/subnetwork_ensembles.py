"""Sparse Subnetwork Ensembles at a small, equal training budget (Whitaker 2023, Table 5.1, §5.3.3), with MLPs on
MNIST-5k and digits.

Every method gets the same 16 epochs, Adam at the fixed learning rate 1e-3 (rmtnet.studies.subnetwork_ensembles.budget_run):
an independent model (one MLP, 16 epochs), the same model with Dropout(0.5) after each hidden layer, a bagged ensemble
(8 models × 2 epochs on random 90 % subsets), and Sparse Subnetwork Ensembles: a parent trained 8 epochs, then 8
children pruned at 50 % (unstructured, per layer, frozen zeros) and tuned 1 epoch each, with random masks (SSE R) or
Neural Partitioning, 4 anti-mask pairs (SSE NP). The MLP is flatten → 256 → 256 → classes (ReLU, He init); minibatches
of 32 (the thesis gives none; see rmtnet.studies.subnetwork_ensembles). Ensembles average their members' softmax outputs (children only).
The thesis (LeNet/ResNet/DenseNet on CIFAR) finds SSE ahead of the independent model by 2–8 points, NP a little
ahead of R with standard errors no larger, and dropout and bagging below the independent model.

Reported: test accuracy, NLL and ECE (15 bins) per method as mean ± standard error over seeds (each seed a new
parent, initialisation and minibatch order; SSE values averaged over the mask draws of the seed first); pairwise
disagreement, KL and correlation of the members; the paired per-seed effects SSE − independent, SSE − its own
8-epoch parent and NP − R (mean ± SE); and the spread of the SSE ensemble accuracy over mask draws from one parent
(``draws`` sets of 8 children per seed), R against NP: the variance the antithetic anti-masks should reduce.

Quick mode (default): MNIST-5k, 3 seeds, 2 mask draws (21 runs; ``datasets=("mnist5k", "digits")`` adds
the digits). ``--full``: 10 seeds, 6 draws, and minibatches of 32 and 128. Runs are appended to
figures/subnetwork_ensembles_runs.csv through rmtnet.experiments.sweep (an interrupted run resumes). Writes
figures/subnetwork_ensembles.png and .csv (panels "summary", "effects", "variance", "runs").
CIFAR-10 (the thesis's data): ``compute(datasets=("cifar10",), data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10=FOLDER``;
FOLDER holds the unpacked python batches, see rmtnet.nets.data.cifar10; nothing is downloaded).

Measured with both data sets, 5 seeds and 3 mask draws (mean ± SE of paired per-seed differences, accuracy in percentage points): on
MNIST-5k SSE(R) − independent = −0.94 ± 0.27 (NLL −0.023 ± 0.014, ECE +0.011 ± 0.003), SSE(R) − its 8-epoch parent =
−0.08 ± 0.50; on digits SSE(R) − independent = −2.0 ± 0.2 with NLL +0.17 (the 1-epoch children stay
underconfident). NP − R: −0.09 ± 0.10 (MNIST-5k), +0.06 ± 0.11 (digits); within-parent sd of the ensemble accuracy NP/R 0.0028/0.0034
(MNIST-5k), 0.0046/0.0036 (digits). With minibatches of 128 (MNIST-5k, 5 seeds, 3 draws) it is further away:
SSE(R) − independent = −2.79 ± 0.22, SSE(R) − its parent = −2.47 ± 0.19, NP − R +0.09 ± 0.10, within-parent sd NP/R
0.0031/0.0028. The thesis's SSE advantage at this budget does not appear with these MLPs, and the children's ensemble
does not beat its own 8-epoch parent. One epoch of MNIST-5k's 4,000 training images is ⌈4000/32⌉ = 125 steps at
batch 32 and ⌈4000/128⌉ = 32 at batch 128 (the training loop keeps the last, smaller batch; a CIFAR epoch of 50,000
at 128 would be 391), so a one-epoch child gets 125 or 32 steps. subnetwork_child_steps.py trains the children
longer (or the parent shorter) at the same total budget: the deficit shrinks with the steps per child (+0.3 to +1.0
points per doubling) to within noise of 0 from about 200 steps on, but the ensemble never beats the independent
model in accuracy (0 of 20 points, MNIST-5k, 5 seeds); it does in test NLL from about 100 steps per child on. Few
steps explain the negative sign, not the missing advantage: at this budget the MLP is saturated (the 8-epoch parent
is within 0.3–0.7 points of the 16-epoch independent model).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.studies.subnetwork_ensembles import budget_run

LABELS = {"independent": "Independent", "dropout": "Dropout", "bagging": "Bagging", "sse_r": "SSE (R)",
          "sse_np": "SSE (NP)"}
METRICS = ("accuracy", "nll", "ece", "disagreement", "correlation", "kl", "member_accuracy")
ORDER = ["independent", "dropout", "bagging", "sse_r", "sse_np"]
SIZES = {"tiny": dict(datasets=("digits",), seeds=2, draws=2, batch_sizes=(32,), width=16),
         "quick": dict(datasets=("mnist5k",), seeds=3, draws=2, batch_sizes=(32,), width=256),
         "full": dict(datasets=("mnist5k", "digits"), seeds=10, draws=6, batch_sizes=(32, 128), width=256)}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    return figures.make("subnetwork_ensembles", compute, draw, full, outdir, seed, backend, store=outdir,
                        n_jobs=n_jobs, **overrides)


def settings(full, **overrides):
    """Data sets, seeds, mask draws, batch sizes and width of quick or full mode, or of a size by name
    (``overrides`` replace any of them). ``seeds`` and ``draws`` are at least 2: the effects are paired t-tests over
    seeds and the "variance" table is the spread over mask draws from one parent."""
    s = figures.settings(SIZES, full, **overrides)
    for name in ("seeds", "draws"):
        if isinstance(s[name], bool) or not isinstance(s[name], (int, np.integer)) or s[name] < 2:
            raise ValueError(f"{name} must be an integer >= 2 (paired effects over seeds, the spread over mask "
                             f"draws), got {s[name]!r}")
    return s


def grid(s):
    configs = []
    for dataset in s["datasets"]:
        for bs in s["batch_sizes"]:
            common = dict(dataset=dataset, batch_size=int(bs), width=int(s["width"]), **figures.data_dir_argument(s))
            configs += [dict(method=m, draw=0, **common) for m in ("independent", "dropout", "bagging")]
            configs += [dict(method=m, draw=d, **common) for m in ("sse_r", "sse_np") for d in range(s["draws"])]
    return configs


def _se(x):
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def per_seed(runs):
    """One row per (dataset, batch, method, seed): SSE metrics averaged over the seed's mask draws."""
    keys = ["dataset", "batch_size", "method", "seed"]
    extra = [f"{who}_{c}" for who in ("parent", "with_parent") for c in ("accuracy", "nll", "ece")]
    cols = [c for c in (*METRICS, *extra) if c in runs]
    return runs.groupby(keys, sort=False)[cols].mean().reset_index()


def summarise(runs):
    seeds = per_seed(runs)
    rows = []
    for (dataset, bs, method), t in seeds.groupby(["dataset", "batch_size", "method"], sort=False):
        row = dict(dataset=dataset, batch_size=bs, method=method, n_seeds=len(t))
        for c in METRICS:
            if c in t and t[c].notna().any():
                row[f"{c}_mean"], row[f"{c}_se"] = float(t[c].mean()), _se(t[c])
        rows.append(row)
        if method == "sse_r":                                    # the 8-epoch parent, as its own line
            prow = dict(dataset=dataset, batch_size=bs, method="parent_8ep", n_seeds=len(t))
            for c in ("accuracy", "nll", "ece"):
                prow[f"{c}_mean"], prow[f"{c}_se"] = float(t[f"parent_{c}"].mean()), _se(t[f"parent_{c}"])
            rows.append(prow)
    return pd.DataFrame(rows)


def effects(runs):
    """Paired per-seed differences (mean ± SE over seeds) of accuracy, NLL and ECE."""
    seeds = per_seed(runs).set_index(["dataset", "batch_size", "seed", "method"])
    rows = []
    for (dataset, bs), t in seeds.groupby(level=["dataset", "batch_size"], sort=False):
        t = t.droplevel(["dataset", "batch_size"])
        wide = {c: t[c].unstack("method") for c in ("accuracy", "nll", "ece")}
        parent = {c: t[f"parent_{c}"].unstack("method")["sse_r"] for c in ("accuracy", "nll", "ece")}
        joint = {c: t[f"with_parent_{c}"].unstack("method")["sse_r"] for c in ("accuracy", "nll", "ece")}
        pairs = {"SSE(R) − independent": lambda c: wide[c]["sse_r"] - wide[c]["independent"],
                 "SSE(NP) − independent": lambda c: wide[c]["sse_np"] - wide[c]["independent"],
                 "SSE(R) − its 8-epoch parent": lambda c: wide[c]["sse_r"] - parent[c],
                 "SSE(R) with the parent as 9th member − independent": lambda c: joint[c] - wide[c]["independent"],
                 "SSE(NP) − SSE(R)": lambda c: wide[c]["sse_np"] - wide[c]["sse_r"],
                 "bagging − independent": lambda c: wide[c]["bagging"] - wide[c]["independent"],
                 "dropout − independent": lambda c: wide[c]["dropout"] - wide[c]["independent"]}
        for name, diff in pairs.items():
            row = dict(dataset=dataset, batch_size=bs, comparison=name)
            for c in ("accuracy", "nll", "ece"):
                d = diff(c).dropna()
                row[f"{c}_diff"], row[f"{c}_se"], row["n_seeds"] = float(d.mean()), _se(d), len(d)
            row["accuracy_t"] = row["accuracy_diff"] / row["accuracy_se"] if row["accuracy_se"] > 0 else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def variance(runs):
    """Spread of the SSE ensemble accuracy, R vs NP: within one parent over mask draws (the antithetic claim), and
    across seeds for draw 0 (the thesis's standard error over runs)."""
    rows = []
    sse = runs[runs.method.isin(["sse_r", "sse_np"])]
    for (dataset, bs, method), t in sse.groupby(["dataset", "batch_size", "method"], sort=False):
        within = t.groupby("seed").accuracy.var(ddof=1)
        first = t[t.draw == 0].accuracy
        rows.append(dict(dataset=dataset, batch_size=bs, method=method, draws=int(t.draw.nunique()),
                         n_seeds=int(t.seed.nunique()), within_parent_sd=float(np.sqrt(within.mean())),
                         across_seed_sd_draw0=float(first.std(ddof=1)), across_seed_se_draw0=_se(first),
                         mask_td_fraction=float(t.mask_td_fraction.mean())))
    out = pd.DataFrame(rows)
    if len(out):
        ratio = out.pivot_table(index=["dataset", "batch_size"], columns="method", values="within_parent_sd")
        out.attrs["within_sd_ratio_np_over_r"] = (ratio["sse_np"] / ratio["sse_r"]).to_dict()
    return out


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "summary" (per data set, batch size and method), "effects" (paired differences), "variance" (spread
    of the SSE ensembles) and "runs" (kept in STORE/subnetwork_ensembles_runs.csv)."""
    s = settings(size, **overrides)
    runs = experiments.sweep(budget_run, grid(s), seeds=figures.seeds(seed, s["seeds"]),
                             store=figures.output_dir(store) / "subnetwork_ensembles_runs.csv", n_jobs=n_jobs)
    return figures.Tables({"summary": summarise(runs), "effects": effects(runs), "variance": variance(runs),
                           "runs": runs.copy()}, extras=s)


def _draw_metric(ax, t, st, metric, name, title):
    """Mean ± SE of one metric per method (a marker with error bars: the axis is zoomed on the differences, where
    bars from a cut baseline would exaggerate them), each seed (dots beside it), the SSE parent after 8 epochs
    (dashed)."""
    pos = np.arange(len(ORDER))
    for i, m in enumerate(ORDER):
        ax.errorbar(i, t.loc[m, f"{metric}_mean"], yerr=t.loc[m, f"{metric}_se"], fmt="o", ms=7, capsize=4,
                    color=f"C{i}", elinewidth=1.5)
        v = st[st.method == m][metric]
        ax.plot(np.full(len(v), i + 0.25) + np.linspace(-0.06, 0.06, len(v)), v, "k.", ms=3,
                label="each seed" if i == 0 else None)
    p = t.loc["parent_8ep"]
    ax.axhline(p[f"{metric}_mean"], color="k", ls="--", lw=1, label="SSE parent after 8 epochs")
    lo = min(t.loc[ORDER, f"{metric}_mean"].min(), p[f"{metric}_mean"])
    hi = max(t.loc[ORDER, f"{metric}_mean"].max(), p[f"{metric}_mean"])
    pad = 0.6 * (hi - lo) + 1e-3
    figures.style(ax, legend=None, title_size=9, xticks=pos, xlim=(-0.5, len(ORDER) - 0.5),
                  ylim=(max(0.0, lo - pad), hi + pad),
                  ylabel=f"{name} (mean ± SE, {int(t.n_seeds.max())} seeds)", title=f"{title}: {name}")
    ax.set_xticklabels([LABELS[m] for m in ORDER], rotation=20, fontsize=8)
    ax.legend(fontsize=7)


def _draw_diversity(ax, t, v):
    ens = ["bagging", "sse_r", "sse_np"]
    pos = np.arange(len(ens))
    ax.bar(pos - 0.2, t.loc[ens, "disagreement_mean"], 0.4, yerr=t.loc[ens, "disagreement_se"], capsize=3,
           label="disagreement (PDR)")
    ax.bar(pos + 0.2, 1 - t.loc[ens, "correlation_mean"], 0.4, yerr=t.loc[ens, "correlation_se"], capsize=3,
           label="1 − correlation")
    figures.style(ax, legend=None, title_size=8, xticks=pos, ylabel="pairwise diversity of members",
                  title=f"diversity; within-parent sd of ens. acc: R {v.loc['sse_r', 'within_parent_sd']:.4f}, "
                        f"NP {v.loc['sse_np', 'within_parent_sd']:.4f}")
    ax.set_xticklabels([LABELS[m] for m in ens], fontsize=8)
    ax.legend(fontsize=7)


def draw(tables):
    summary, var = tables["summary"], tables["variance"]
    seeds = per_seed(tables["runs"])
    panels = list(summary.groupby(["dataset", "batch_size"], sort=False).groups)
    fig, axes = figures.subplots(len(panels), 4, 17 / 4, 3.8)
    for row, (dataset, bs) in zip(axes, panels):
        t = summary[(summary.dataset == dataset) & (summary.batch_size == bs)].set_index("method")
        st = seeds[(seeds.dataset == dataset) & (seeds.batch_size == bs)]
        for ax, metric, name in zip(row[:3], ("accuracy", "nll", "ece"), ("test accuracy", "test NLL", "test ECE")):
            _draw_metric(ax, t, st, metric, name, f"{dataset}, batch {bs}")
        _draw_diversity(row[3], t, var[(var.dataset == dataset) & (var.batch_size == bs)].set_index("method"))
    fig.suptitle("Equal 16-epoch budget: independent, dropout, bagging and Sparse Subnetwork Ensembles "
                 "(Whitaker 2023, Table 5.1 analogue, MLPs)", fontsize=11)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "10 seeds, 6 mask draws, batches of 32 and 128")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    fmt = dict(index=False, float_format=lambda v: f"{v:.4f}")
    print(t["summary"][["dataset", "batch_size", "method", "n_seeds", "accuracy_mean", "accuracy_se", "nll_mean",
                        "ece_mean", "disagreement_mean", "correlation_mean"]].to_string(**fmt))
    print(t["effects"][["dataset", "batch_size", "comparison", "accuracy_diff", "accuracy_se", "accuracy_t",
                        "nll_diff", "nll_se", "ece_diff", "ece_se", "n_seeds"]].to_string(**fmt))
    print(t["variance"].to_string(**fmt))
    print("wrote", p)
