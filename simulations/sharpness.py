"""Sharpness along training: the top eigenvalue λ_max(t) of the training-loss Hessian (Lanczos on Hessian-vector
products, rmtnet.nets.sharpness) of an erf MLP trained by full-batch gradient descent on an MNIST-5k subset, at
learning rates η = c · 2/λ_max(θ₀), against 2/η (progressive sharpening and the edge of stability, Cohen et al.,
ICLR 2021, arXiv 2103.00065; the catapult above 2/λ₀, Lewkowycz et al. 2020, arXiv 2003.02218), the training loss,
and the Gauss–Newton share λ_max(Θ)/(Nk) of the sharpness (Θ the empirical NTK Gram). The predicted initial value
(the infinite-width NTK's λ_max(K)/(Nk), rmtnet.spectra.kernels.ntk_kernel in the standard parameterisation) is the
star at t = 0; the setting, the prediction and what it leaves out are in rmtnet.studies.sharpness. Loss ½·mean over
the N samples and k = 10 outputs of (f − y)² (train's loss="mse"), so the linear stability limit is η < 2/λ_max(∇²L)
with no other factor.

Measured at the quick size (N = 256, W = 128, depth 4, erf, seed 0): λ_max(∇²L(θ₀)) = 9.80, its Gauss–Newton part
λ_max(Θ)/(Nk) = 10.41, the kernel prediction 5.99 (0.61 of the measured value: the finite-width top eigenvalue sits
above its limit; with ReLU the ratio is 0.50–0.60 at W = 128 and 0.83–0.89 at W = 2048). Along training λ_max first
falls at every η; at c = 2.5 it then sharpens past 2/η = 3.92 (4.21 at step 140), the loss jumps at step 150, and
λ_max hovers within 4 % of 2/η (3.99–4.08) to step 200 (edge of stability); at c = 1.9 it sharpens towards
2/η = 5.16 (5.08 at step 200); at c = 0.5 λ_max only falls (8.0 at step 200, 2/η = 19.6); c = 4 diverges within 7
steps. From step 10 on the Gauss–Newton part is 0.99–1.02 of λ_max.

Quick mode (default): c ∈ {0.5, 1.9, 2.5, 4}, 200 steps, probes every 10 steps, one seed (27 s on one core,
measured). ``--full``: N = 1000, W = 256, c ∈ {0.5, 1.0, 1.5, 1.9, 2.5, 3.5}, 1000 steps, probes every 20 steps, two
seeds (≈ 1 h on one core, estimated: one of its runs, c = 2.5, took 280 s on a loaded 2-core machine; that run:
λ_max(θ₀) = 11.23, Gauss–Newton 11.37, kernel prediction 8.05 (0.72); λ_max falls to 4.19 by step 40, sharpens past
2/η = 4.49 to 4.83 by step 140 and then stays in 4.45–4.74 (−1 % to +6 % of 2/η) to step 1000 while the loss falls
non-monotonically from 0.0096 to 0.0014–0.0017: the edge of stability).
Runs are kept as they finish in OUTDIR/sharpness_runs_SIZE.csv (rmtnet.experiments.sweep): an interrupted run
resumes. Writes figures/sharpness.png and figures/sharpness.csv.
"""
from __future__ import annotations

from rmtnet import cli, figures
from rmtnet.studies import sharpness as study

SIZES = {"tiny": dict(n_train=24, width=16, depth=3, activation="erf", factors=(0.5, 4.0), steps=3, probe_every=1,
                     seeds=1),
         "quick": dict(n_train=256, width=128, depth=4, activation="erf", factors=(0.5, 1.9, 2.5, 4.0), steps=200,
                       probe_every=10, seeds=1),
         "full": dict(n_train=1000, width=256, depth=4, activation="erf", factors=(0.5, 1.0, 1.5, 1.9, 2.5, 3.5),
                      steps=1000, probe_every=20, seeds=2)}
INITIAL = ["hessian", "gauss_newton", "kernel_prediction", "gauss_newton_over_hessian", "prediction_over_hessian"]


def main(full=False, outdir="figures", seed=0, backend=None):
    """Train, probe and draw; ``backend`` is unused (torch on the CPU)."""
    return figures.make("sharpness", compute, draw, full, outdir, seed, backend, store=outdir)


def compute(size="quick", seed=0, backend=None, store="figures"):
    """Tables "sharpness against step" (η factor, seed, step, loss, λ_max of the Hessian and λ_max(Θ)/(Nk)),
    "initial" (the step-0 values and the prediction, per seed) and "runs" (per η factor and seed: η, 2/η, diverged,
    the last loss and λ_max). The runs are kept in STORE/sharpness_runs_SIZE.csv (None: not kept)."""
    s = figures.settings(SIZES, size)
    path = None if store is None else figures.output_dir(store) / f"sharpness_runs_{size}.csv"
    runs = study.sharpness_sweep(s["factors"], figures.seeds(seed, s["seeds"]), store=path, width=s["width"],
                                 depth=s["depth"], n_train=s["n_train"], steps=s["steps"],
                                 probe_every=s["probe_every"], activation=s["activation"])
    long = study.curves(runs)
    initial = runs.drop_duplicates("seed")[["seed", *INITIAL]].reset_index(drop=True)
    last = long.dropna(subset=["hessian"]).sort_values("step").groupby(["eta_factor", "seed"]).last()
    summary = runs[["eta_factor", "seed", "eta", "two_over_eta", "diverged", "steps_done"]].merge(
        last[["train_loss", "hessian"]].rename(columns={"train_loss": "last_probed_loss",
                                                       "hessian": "last_probed_hessian"}).reset_index(),
        on=["eta_factor", "seed"], how="left")
    return figures.Tables({"sharpness against step": long, "initial": initial, "runs": summary}, extras=s)


def draw(tables):
    long, initial, runs = tables["sharpness against step"], tables["initial"], tables["runs"]
    s = tables.extras
    fig, axes = figures.subplots(1, 3, 5.6, 4.4)
    ax_h, ax_l, ax_g = axes[0]
    for j, (c, group) in enumerate(long.groupby("eta_factor")):
        color = f"C{j}"
        first = group[group.seed == group.seed.min()]
        probed = first.dropna(subset=["hessian"])
        diverged = bool(runs[(runs.eta_factor == c)].diverged.any())
        label = f"c = {c:g}, η = {first.eta.iloc[0]:.3g}" + (" (diverged)" if diverged else "")
        ax_h.plot(probed.step, probed.hessian, "o-", ms=3, color=color, label=label)
        ax_h.axhline(first.two_over_eta.iloc[0], color=color, ls="--", lw=1)
        ax_l.plot(first.step, first.train_loss, color=color, label=label)
        ax_g.plot(probed.step, probed.ntk / probed.hessian, "o-", ms=3, color=color, label=label)
    predicted = initial.kernel_prediction.mean()
    ax_h.plot([0], [predicted], "k*", ms=11, label=f"predicted λ_max(θ₀) = λ_max(K)/(Nk) = {predicted:.3g}")
    figures.style(ax_h, legend=None, yscale="log", xlabel="gradient-descent step t", ylabel="λ_max(∇²L)",
                  title=f"Sharpness λ_max(∇²L) (dots) and 2/η (dashed)\n{s['activation']} MLP, depth {s['depth']}, W = "
                        f"{s['width']}, N = {s['n_train']} MNIST digits, η = c·2/λ_max(θ₀)")
    figures.log_ticks(ax_h)
    # one legend under the panels (the runs' colours are the same in all three): inside the first it hid a 2/η line
    fig.legend(*ax_h.get_legend_handles_labels(), loc="outside lower center", ncol=5, fontsize=8, frameon=False)
    figures.style(ax_l, legend=None, yscale="log", xlabel="gradient-descent step t",
                  ylabel="training loss ½·mean (f − y)²", title="Training loss (full-batch GD)")
    h0 = initial.hessian.mean()
    figures.style(ax_g, legend=None, xlabel="gradient-descent step t", ylabel="λ_max(Θ)/(Nk) ÷ λ_max(∇²L)",
                  title=f"Gauss–Newton share of the sharpness\nat t = 0: λ_max(∇²L) = {h0:.3g}, "
                        f"λ_max(Θ)/(Nk) = {initial.gauss_newton.mean():.3g}, kernel {predicted:.3g}")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "N = 1000, W = 256, 6 learning rates × 2 seeds, 1000 steps (≈ 1 h, estimated)")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("initial", "runs"))
