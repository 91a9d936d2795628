"""Ensemble Mask Networks, Table 1 of Luntzel (2023, arXiv 2309.06382): the minimum test error over the parameter sweep
epochs ∈ {1, 2, 3} × meta-epochs ∈ {1, 2, 4, 8, 16} for the control, shuffled and randomly subsampled conditions,
ours beside the published values.

Convention (rmtnet.studies.emn): architecture (1) (EMN(n, copies=(1,))), Algorithm 1 with the paper's hyperparameters
(|d| = round(36 n^1.3) binary symmetric training matrices with free diagonals, allocated by L1-norm class; k = 8n
vectors per matrix, batch k/4, SGD lr 0.1, MSE); error = the mean squared error on 1000 unsymmetric test pairs with
entries uniform in [0, 1] at density 0.5, one test set for every run. Each (condition, n, epochs) is one run of 16
meta-epochs read after 1, 2, 4, 8 and 16 (the same numbers as separate runs: one generator, fixed draw order).
Networks are trained in float64 and, separately, in float32: the paper's control/shuffled values (6e-14 … 1.5e-11) are
the float32 round-off floor of a converged network, which float32 reproduces and float64 goes far below. A fourth row
trains the subsampled condition on zero-diagonal matrices: W_1's diagonal is then never unmasked and the error sits
near 0.05 — the size of the paper's subsampled column, which the condition as written in Algorithm 1 does not
reproduce.

Panels: one per n, the test error against meta-epochs, colour = condition, marker = epochs, solid = float64,
dashed = float32, stars = the published minimum at its (epochs, meta-epochs); below, the table itself.
Runs go through rmtnet.experiments.sweep into figures/emn_table1_runs.csv (figures/emn_table1_full_runs.csv at the
full size), appended run by run: an interrupted run of this script resumes where it stopped.
Quick mode (default): n ∈ {5, 10}, float64 and float32, 1 seed: 42 runs (|d| ∝ n^1.3 puts 64 % of the SGD steps of
n ∈ {5, 10, 20} at n = 20, each on the largest matrices: ``--full`` or ``main(ns=(5, 10, 20))`` adds it).
``--full``: n ∈ {5, 10, 20, 40, 100}, 105 runs; writes figures/emn_table1_full.png and .csv. From the command line
one run per core; ``main(full=True, n_jobs=1)`` trains the runs of each (n, epochs, dtype) together in one process
(rmtnet.studies.emn.sweep_emn(batched=True): the same numbers bit for bit, 1.1–1.5× less time per run, n = 20–100).
``--full --stored-only`` trains nothing and tabulates the runs in figures/emn_table1_full_runs.csv, which holds
those of the table below; the table marks an (n, condition) with fewer than all 15 (epochs, meta-epochs) pairs run
as [pairs run/15], and a rerun of ``--full`` completes the rest.
Cost (profile of one meta-epoch of one epoch): a step is two n × n × k/4 matrix products (the forward pass and the
masked gradient), and each matrix adds k·n uniform draws and the float64 target product. Half the time is the
steps, a quarter to a third the draws and targets (40 % in float32 at n = 100), the rest test sets, training
matrices and bookkeeping; all in one run costs 80 µs per step at n = 20, 200 µs at n = 40 and 1.35 ms at n = 100
(float32 0.65 ms; load average 3–9). A run of 16 meta-epochs is 64·|d|·epochs steps: the full grid is 1.7 M steps
per (condition, dtype) at n = 40 and 5.5 M at n = 100 — at those speeds about half an hour at n = 40 and 11 hours
at n = 100 on one core, half that on two.
Measured for the table in figures/emn_table1_full_runs.csv (seed 0; one process at nice 10, each group's runs
together, on 2 cores shared with five other jobs, load average 8–22): n = 20, the 21 runs in 3.5 minutes; n = 40,
the whole sweep (21 runs, 15 pairs each) in 29 minutes; n = 100, 18 runs of one or two meta-epochs in 40 minutes —
float32 at (epochs, meta-epochs) (1, 1–2), (2, 1), (3, 1), float64 at (1, 1), (2, 1), zero diagonal at (1–3, 1) —
marked [4/15], [2/15], [3/15] in the table; the 21 whole runs at n = 100 are the 11 hours above (``--full``
trains them beside the stored ones). n = 5 and 10 are the quick runs (a minute and 4 minutes).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.studies import emn

ZERO_DIAGONAL = "subsampled, zero diagonal"
COLORS = {"control": "C0", "shuffled": "C1", "subsampled": "C2", ZERO_DIAGONAL: "C3"}
STYLES = {"float64": "-", "float32": "--"}
MARKERS = {1: "o", 2: "s", 3: "^"}
_COMMON = dict(epochs=emn.EPOCHS, meta_epochs=emn.META_EPOCHS, dtypes=("float64", "float32"), seeds=1, n_test=1000,
               batched=False)
SIZES = {"tiny": dict(_COMMON, ns=(5,), epochs=(1,), meta_epochs=(1, 2), dtypes=("float64",), n_test=50),
         "quick": dict(_COMMON, ns=(5, 10)), "full": dict(_COMMON, ns=(5, 10, 20, 40, 100), batched=True)}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, stored_only=False, **overrides):
    name = "emn_table1_full" if full else "emn_table1"
    return figures.make(name, compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs,
                        stored_only=stored_only, **overrides)


def settings(full, **overrides):
    """Sizes, sweep axes, dtypes and seeds of quick or full mode, or of a size by name (``overrides`` replace any
    of them)."""
    return figures.settings(SIZES, full, **overrides)


def run_sweeps(s, store, seed, n_jobs):
    """The tidy sweep of all conditions per dtype, and the zero-diagonal subsampled variant in the first dtype
    (``s["batched"]`` and ``n_jobs=1``: the conditions of each (n, epochs, dtype) trained together in this
    process; else one run per worker)."""
    seeds = figures.seeds(seed, s["seeds"])
    common = dict(ns=s["ns"], epochs=s["epochs"], meta_epochs=s["meta_epochs"], seeds=seeds, store=store,
                  n_test=s["n_test"], n_jobs=n_jobs, batched=bool(s["batched"] and n_jobs == 1))
    parts = [emn.sweep_emn(emn.CONDITIONS, dtype=dtype, **common) for dtype in s["dtypes"]]
    zero = emn.sweep_emn(("subsampled",), dtype=s["dtypes"][0], diagonal=False, **common)
    zero["condition"] = ZERO_DIAGONAL
    return pd.concat(parts + [zero], ignore_index=True)


def stored_sweeps(s, store, seed):
    """The tidy table of every run in ``store`` within the size's n, epochs, dtypes, seeds, lr and n_test, whatever
    its number of meta-epochs (a run of m meta-epochs gives the rows 1, 2, 4, … ≤ m of ``s["meta_epochs"]``): the
    table of a sweep that has not finished (``stored_only``), with nothing trained."""
    runs = experiments.read_store(store) if Path(store).exists() else pd.DataFrame()
    if runs.empty:
        raise ValueError(f"stored_only needs the runs of an earlier sweep in {store}; there are none")
    seeds = set(figures.seeds(seed, s["seeds"]))
    keep = (runs.n.isin(s["ns"]) & runs.epochs.isin(s["epochs"]) & runs.seed.isin(seeds) & (runs.lr == 0.1)
            & (runs.n_test == s["n_test"]) & ((runs.dtype == s["dtypes"][0]) | runs.diagonal)
            & runs.dtype.isin(s["dtypes"]))
    rows = []
    for run in runs[keep].to_dict("records"):
        condition = run["condition"] if run["diagonal"] else ZERO_DIAGONAL
        for m in (m for m in s["meta_epochs"] if m <= run["meta_epochs"]):
            rows.append(dict(condition=condition, n=int(run["n"]), epochs=int(run["epochs"]), meta_epochs=int(m),
                             seed=int(run["seed"]), dtype=run["dtype"], diagonal=bool(run["diagonal"]),
                             test_error=float(run[f"test_error_m{m}"]), run_key=run["run_key"]))
    tidy = pd.DataFrame(rows)
    return tidy.drop_duplicates(["condition", "n", "epochs", "meta_epochs", "seed", "dtype"]).reset_index(drop=True)


def summarise(tidy, dtypes):
    """Table 1: per (n, condition) our minimum error and its (epochs, meta-epochs) for each dtype, and the paper's."""
    out = None
    for dtype in dtypes:
        part = tidy[tidy.dtype == dtype]
        t = emn.table1(part)
        t = t.rename(columns={"error": f"error_{dtype}", "best_epochs": f"epochs_{dtype}",
                              "best_meta_epochs": f"meta_epochs_{dtype}"})
        pairs = part.groupby(["n", "condition"]).apply(lambda g: len(g[["epochs", "meta_epochs"]].drop_duplicates()),
                                                      include_groups=False)
        t[f"pairs_{dtype}"] = [int(pairs[(n, c)]) for n, c in zip(t.n, t.condition)]
        keep = ["n", "condition", f"error_{dtype}", f"epochs_{dtype}", f"meta_epochs_{dtype}", f"pairs_{dtype}"]
        out = t[keep] if out is None else out.merge(t[keep], on=["n", "condition"], how="outer")
    order = {c: i for i, c in enumerate(COLORS)}
    out = out.sort_values(["n", "condition"], key=lambda c: c.map(order) if c.name == "condition" else c)
    none = (np.nan, np.nan, np.nan)                                 # the paper has no zero-diagonal row
    published = [emn.PUBLISHED_TABLE1.get((int(n), c), none) for n, c in zip(out.n, out.condition)]
    for i, column in enumerate(["paper_error", "paper_epochs", "paper_meta_epochs"]):
        out[column] = [p[i] for p in published]
    return out.reset_index(drop=True)


def _fmt(err, e, m, pairs=None, total=None):
    """'error (e,m)', with '[pairs/total]' where fewer than all (epochs, meta-epochs) pairs were run."""
    if pd.isna(err):
        return "—"
    part = "" if pairs is None or pd.isna(pairs) or pairs >= total else f" [{int(pairs)}/{total}]"
    return f"{err:.3g} ({int(e)},{int(m)}){part}"


def draw(tables):
    """Error against meta-epochs per n (the paper's minima as stars) above Table 1, ours beside the paper's."""
    import matplotlib.pyplot as plt
    tidy, table, s = tables["sweep"], tables["table1"], tables.extras
    ns = list(s["ns"])
    fig = plt.figure(figsize=(max(4.2 * len(ns), 9), 4.0 + 0.2 * len(table) + 0.4), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[4.0, 0.2 * len(table) + 0.4])
    axes = np.atleast_1d(top.subplots(1, len(ns), sharey=True))
    mean = tidy.groupby(["condition", "dtype", "n", "epochs", "meta_epochs"], as_index=False).test_error.mean()
    for ax, n in zip(axes, ns):
        for (cond, dtype, e), t in mean[mean.n == n].groupby(["condition", "dtype", "epochs"]):
            t = t.sort_values("meta_epochs")
            ax.plot(t.meta_epochs, t.test_error, STYLES.get(dtype, ":"), marker=MARKERS.get(e, "x"), ms=3.5,
                    lw=1, color=COLORS[cond], alpha=0.8)
        for i, cond in enumerate(emn.CONDITIONS):
            if (n, cond) in emn.PUBLISHED_TABLE1:                  # side by side where two share a pair
                err, _, m = emn.PUBLISHED_TABLE1[(n, cond)]
                ax.plot([m * 1.07 ** (i - 1)], [err], "*", ms=12, color=COLORS[cond], mec="k", mew=0.5)
        ax.set(xscale="log", yscale="log", xlabel="meta-epochs", title=f"n = {n}, |d| = {emn.training_size(n)}")
        ax.set_xticks(list(s["meta_epochs"]), [str(m) for m in s["meta_epochs"]])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
    for cond, color in COLORS.items():                              # legend proxies: colour, line style, marker
        axes[0].plot([], [], "-", color=color, label=cond)
    for dtype in s["dtypes"]:
        axes[0].plot([], [], STYLES.get(dtype, ":"), color="0.3", label=dtype)
    for e in sorted(set(mean.epochs)):
        axes[0].plot([], [], MARKERS.get(e, "x"), color="0.3", ls="none", label=f"{e} epoch{'s' if e > 1 else ''}")
    axes[0].plot([], [], "*", ms=10, color="w", mec="k", label="paper's minimum at its (e, m)")
    axes[0].set_ylabel("test error (MSE)")
    top.legend(*axes[0].get_legend_handles_labels(), loc="outside right center", fontsize=7)
    top.suptitle("Ensemble mask network, Table 1 of Luntzel (2023): error on unsymmetric A ∈ [0, 1] at density 0.5")
    ax = bottom.subplots()
    ax.axis("off")
    cols = [f"ours {d} (e,m) [pairs run]" for d in s["dtypes"]] + ["paper (e,m)"]
    total = len(s["epochs"]) * len(s["meta_epochs"])
    cells = [[_fmt(r[f"error_{d}"], r[f"epochs_{d}"], r[f"meta_epochs_{d}"], r.get(f"pairs_{d}"), total)
              for d in s["dtypes"]]
             + [_fmt(r["paper_error"], r["paper_epochs"], r["paper_meta_epochs"])] for _, r in table.iterrows()]
    rows = [f"n = {r.n}, {r.condition}" for r in table.itertuples()]
    tab = ax.table(cellText=cells, rowLabels=rows, colLabels=cols, loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    return fig


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, stored_only=False, **overrides):
    """Tables "table1" (ours beside the paper's) and "sweep" (every run; kept in STORE/emn_table1_runs.csv,
    STORE/emn_table1_full_runs.csv at the full size). ``stored_only``: train nothing, tabulate the stored runs."""
    s = settings(size, **overrides)
    path = figures.output_dir(store) / f"emn_table1{'_full' * (size == 'full')}_runs.csv"
    tidy = stored_sweeps(s, path, seed) if stored_only else run_sweeps(s, path, seed, n_jobs)
    return figures.Tables({"table1": summarise(tidy, s["dtypes"]), "sweep": tidy.drop(columns=["run_key"])},
                          extras=s)


if __name__ == "__main__":
    stored = "--stored-only" in sys.argv                         # tabulate the stored runs, train nothing
    a = cli.script_args(__doc__, "n up to 100 (hours on 2 cores; resumable); with --stored-only: tabulate the "
                        "stored runs", [v for v in sys.argv[1:] if v != "--stored-only"])
    p, t = main(a.full, a.outdir, a.seed, a.backend, stored_only=stored)
    print(t["table1"].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print("wrote", p)
