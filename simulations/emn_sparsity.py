"""Ensemble Mask Networks, Figs. 3 and 4 of Luntzel (2023, arXiv 2309.06382): the average test error on binary matrices
against their density ("sparsity": the fraction of nonzero entries), per n and condition, and the learned weights.

Convention (rmtnet.studies.emn): architecture (1), Algorithm 1 with the paper's hyperparameters, each (n, condition)
trained at the paper's best (epochs, meta-epochs) of Table 1; error = the mean squared error on 1000 unsymmetric binary
test matrices (diagonal included) at each density p ∈ {0.1, …, 1.0}, x uniform in [0, 1]^n. Networks in float64 and
float32 (the paper's numbers are float32-sized; see emn_table1). Unlike Fig. 3 of the paper, random subsampling is
kept: as written in Algorithm 1 it converges like the others.
Fig. 4 panels: W_1 of a trained architecture (1), whose rows are constant at c_i with readout 1/c_i (Ŵ = diag(1/c)W_1 =
the all-ones matrix), and of architecture (2, 2) ("less discernable weights": only the readout-weighted sum of a
node's copies is constant). Last panel: networks trained on zero-diagonal matrices (subsampled, (1, 8)), whose error is
not round-off, measured against its expectation from the learned Ŵ, a·p + b·p² in the density (LearnedOperator.
expected_error; here b ≈ 0, as only one entry per row of Ŵ, the diagonal, is off, so the growth is linear). The
converged networks' errors are round-off and grow slowly with density (larger outputs); the paper's "quadratic or
exponential" growth is not resolved at these sizes.
Runs go through rmtnet.experiments.sweep into figures/emn_sparsity_runs.csv, appended run by run: an interrupted run
of this script resumes where it stopped.
Quick mode (default): n ∈ {5, 10}, 3 conditions × 2 dtypes + 3 zero-diagonal runs, 1 seed (``main(ns=(5, 10, 20))``
adds n = 20). ``--full``: n up to 100 (an estimated 2–3 hours on 2 cores,
not run).
Writes figures/emn_sparsity.png and figures/emn_sparsity.csv (panel "fig3": error and expected error per run and
density; panel "fig4": the learned row constants, readouts and their products per architecture and node).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from rmtnet import cli, experiments, figures
from rmtnet.nets import EMN
from rmtnet.studies import emn

ARCHITECTURES = {"(1)": (1,), "(2, 2)": (2, 2)}
ZERO_DIAGONAL_PAIR = (1, 8)
_COMMON = dict(dtypes=("float64", "float32"), pairs=None, seeds=1, n_test=1000, inspect_n=5, inspect_meta_epochs=16)
SIZES = {"tiny": dict(_COMMON, ns=(5,), dtypes=("float64",), pairs={c: (1, 1) for c in emn.CONDITIONS}, n_test=50,
                      inspect_n=3, inspect_meta_epochs=1),
         "quick": dict(_COMMON, ns=(5, 10)), "full": dict(_COMMON, ns=(5, 10, 20, 40, 100))}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    return figures.make("emn_sparsity", compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs,
                        **overrides)


def settings(full, **overrides):
    """Sizes, dtypes, (epochs, meta-epochs) pairs and the inspected network of quick or full mode, or of a size by
    name. ``pairs`` maps a condition to one (epochs, meta-epochs) for every n; None takes the paper's Table 1 pair
    per (n, condition)."""
    return figures.settings(SIZES, full, **overrides)


def pair(s, n, condition):
    if s["pairs"] is not None:
        return s["pairs"][condition]
    _, e, m = emn.PUBLISHED_TABLE1.get((n, condition), (None, 1, 16))
    return e, m


def grid(s):
    conditions = emn.CONDITIONS if s["pairs"] is None else tuple(s["pairs"])
    base = dict(lr=0.1, n_test=s["n_test"])
    configs = [dict(condition=c, n=n, epochs=pair(s, n, c)[0], meta_epochs=pair(s, n, c)[1], dtype=dt,
                    diagonal=True, **base) for dt in s["dtypes"] for c in conditions for n in s["ns"]]
    configs += [dict(condition="subsampled", n=n, epochs=ZERO_DIAGONAL_PAIR[0], meta_epochs=ZERO_DIAGONAL_PAIR[1],
                     dtype="float64", diagonal=False, **base) for n in s["ns"]]
    return conditions, configs


def inspect(s, seed):
    """Fig. 4: the learned weights of architectures (1) and (2, 2) at n = inspect_n (control, 1 epoch, float64)."""
    rows, nets = [], {}
    for name, copies in ARCHITECTURES.items():
        model = EMN(s["inspect_n"], copies=copies, seed=seed, dtype=torch.float64)
        emn.train_emn(model, "control", epochs=1, meta_epochs=s["inspect_meta_epochs"], seed=seed)
        op = emn.learned_operator(model)
        nets[name] = op
        for i in range(s["inspect_n"]):
            for k in range(copies[0]):
                rows.append(dict(architecture=name, node=i, copy=k, constant=op.constants[i, k],
                                 readout=op.readout[i, k], product=op.constants[i, k] * op.readout[i, k],
                                 row_spread=op.row_spread, deviation=op.deviation))
    return pd.DataFrame(rows), nets


def _weights_panel(ax, op, title):
    n, c = op.first.shape[:2]
    W = op.first.reshape(n * c, n)
    lim = np.abs(W).max()
    im = ax.imshow(W, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set(xlabel="input node j", ylabel="node i, copy k" if c > 1 else "node i", xticks=range(n), yticks=range(n * c))
    ax.set_title(title, fontsize=10)
    ax.set_yticklabels([f"{r // c},{r % c}" if c > 1 else str(r) for r in range(n * c)], fontsize=6)
    return im


def draw(tables):
    """Fig. 3 (error against density per condition and dtype) above Fig. 4 (the learned weights)."""
    import matplotlib.pyplot as plt
    fig3, nets, conditions, s = tables["fig3"], tables.extras["nets"], tables.extras["conditions"], tables.extras
    dtypes, ns = list(s["dtypes"]), list(s["ns"])
    fig = plt.figure(figsize=(4.0 * max(len(conditions), 3), 3.0 * (len(dtypes) + 1.2)), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[len(dtypes), 1.2])
    axes = np.array(top.subplots(len(dtypes), len(conditions), sharex=True, sharey="row", squeeze=False))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(ns)))
    main = fig3[fig3.diagonal.astype(bool)]
    for r, dtype in enumerate(dtypes):
        for c, cond in enumerate(conditions):
            ax = axes[r, c]
            for color, n in zip(colors, ns):
                t = main[(main.dtype == dtype) & (main.condition == cond) & (main.n == n)]
                t = t.groupby("density", as_index=False).error.mean()
                e, m = pair(s, n, cond)
                ax.plot(t.density, t.error, "o-", ms=3, color=color, label=f"n = {n} ({e},{m})")
            ax.set(yscale="log", title=f"{cond}, {dtype}")
            if r == len(dtypes) - 1:
                ax.set_xlabel("density of binary A (paper: sparsity)")
            if c == 0:
                ax.set_ylabel("average test error (MSE)")
            ax.legend(fontsize=6)
    top.suptitle("Luntzel (2023), Fig. 3: error on binary test matrices against density, networks of Table 1")

    bx = bottom.subplots(1, 3)
    op = nets["(1)"]
    wc = np.abs(op.readout[:, 0] * op.constants[:, 0] - 1).max()
    im = _weights_panel(bx[0], op, f"(1): W₁ rows constant at c_i\nmax|w_i c_i − 1| = {wc:.0e}")
    for i in range(op.first.shape[0]):
        bx[0].text(op.first.shape[2] - 0.45, i, f"c = {op.constants[i, 0]:.3f}", fontsize=6, va="center",
                   ha="left", clip_on=False)
    bottom.colorbar(im, ax=bx[0], location="left", shrink=0.8, label="weight")
    im = _weights_panel(bx[1], nets["(2, 2)"], f"(2, 2): W₁\nmax|Ŵ − 1| = {nets['(2, 2)'].deviation:.1e}")
    bottom.colorbar(im, ax=bx[1], location="right", shrink=0.8, label="weight")   # its own scale, its own bar
    zero = fig3[~fig3.diagonal.astype(bool)]
    for color, n in zip(colors, ns):
        t = zero[zero.n == n].groupby("density", as_index=False)[["error", "expected"]].mean()
        bx[2].plot(t.density, t.error, "o", ms=4, color=color, label=f"n = {n} measured")
        bx[2].plot(t.density, t.expected, "-", color=color, lw=1, label="a·p + b·p² from Ŵ" if n == ns[0] else None)
    bx[2].set(xlabel="density p of binary A", ylabel="test error (MSE)")
    bx[2].set_title("trained without diagonal\n(subsampled, (1, 8))", fontsize=10)
    bx[2].legend(fontsize=6)
    bottom.suptitle(f"Fig. 4: learned weights, n = {s['inspect_n']}, control, float64; (1): max|Ŵ − 1| = "
                    f"{op.deviation:.1e}")
    return fig


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "fig3" (error per run and density; the runs kept in STORE/emn_sparsity_runs.csv) and "fig4" (the
    learned constants and read-outs of the inspected networks)."""
    s = settings(size, **overrides)
    conditions, configs = grid(s)
    runs = experiments.sweep(emn.emn_run, configs, seeds=figures.seeds(seed, s["seeds"]),
                             store=figures.output_dir(store) / "emn_sparsity_runs.csv", n_jobs=n_jobs)
    fig3 = emn.binary_error_table(runs)
    fig4, nets = inspect(s, seed)
    return figures.Tables({"fig3": fig3, "fig4": fig4}, extras=dict(s, nets=nets, conditions=conditions))


if __name__ == "__main__":
    a = cli.script_args(__doc__, "n up to 100 (hours on 2 cores)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    f3 = t["fig3"]
    print(f3.groupby(["dtype", "diagonal", "condition", "n"]).error.agg(["min", "max"]).to_string(
        float_format=lambda v: f"{v:.3g}"))
    print(t["fig4"].groupby("architecture")[["deviation", "row_spread"]].first().to_string())
    print("wrote", p)
