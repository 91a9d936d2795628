"""Training dynamics of wide networks against the NTK predictor (Lee et al., "Wide neural networks of any depth evolve
as linear models under gradient descent", NeurIPS 2019): test error against training step for actual torch networks
trained by full-batch gradient descent, the infinite ensemble's prediction (rmtnet.spectra.predict.ntk_predict), and
the NNGP posterior (Lee et al., ICLR 2018) as the Bayesian reference.

Task: 48 training and 64 test inputs on the sphere ‖x‖²/n₀ = 1 in n₀ = 8 dimensions, y = sin(3 x·u/√n₀) + ½ cos(x·v)
for fixed random u, v. Networks: depth 3 (two hidden ReLU layers of width W and a linear read-out), σ_w² = 2,
σ_b = 0.1, rmtnet.nets.MLP.from_arch, i.e. torch nn.Linear layers trained directly (the *standard*
parameterisation; the matching kernel is ntk_kernel(..., parameterization="standard"), which grows with W).
Loss ½·mean (f − y)² over the N = 48 outputs, full-batch gradient descent at learning rate η = N/λ_max(Θ) (half the
largest stable one), k steps: the predictor is gradient_descent_mse(Θ, y, learning_rate=η, steps=True), its
ensemble's mean and covariance rmtnet.spectra.predict.ensemble_moments, from one kernel computation for every
checkpoint. The prediction is for the ensemble over initialisations: its expected test MSE is mean((μ − y)²) + mean(diag Σ), against the networks' mean
per-network test MSE.

Panel 1: test MSE against k (networks: mean ± 1 standard error over seeds; theory: line), NNGP posterior's test MSE
(noise variance 1e-4) as a horizontal line. Panel 2: the mean prediction of the trained networks at the last step
against the predicted mean, at the test points. Panel 3: the rms gap between the networks' mean prediction and the
predicted mean at the last step, against W, with the standard error of the networks' mean; with 20 networks that
error (the spread of the initial functions f₀) hides the gap, so the gap is shown again with a control variate
subtracted: each network's f₀ as the linear model carries it, f₀(X*) − Θ*Θ⁻¹(I − (I − ηΘ/N)^k)f₀(X), which has mean
0 over the ensemble. What remains is the networks' departure from the linearised model; its rms for a single
network (triangles) shrinks with W (measured 0.19 → 0.12 from W = 512 to 2048, slower than W^{−1/2}: the empirical
NTK of these ReLU networks fluctuates by ~4.7/√W about its limit).

Quick mode (default): widths 128 and 512, 12 networks each, 300 steps (~10 s). ``--full``: widths 512 and 2048,
20 networks each, 2000 steps (~15 min on 2 cores). Runs are stored as they finish in OUTDIR/ntk_dynamics_runs.csv
(rmtnet.experiments.sweep): an interrupted run resumes. Writes figures/ntk_dynamics.png and figures/ntk_dynamics.csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from rmtnet import cli, experiments, figures
from rmtnet.spectra.network import mlp
from rmtnet.nets import MLP
from rmtnet.spectra import kernels, predict

N0, N_TRAIN, N_TEST = 8, 48, 64
SIGMA_W, SIGMA_B = np.sqrt(2.0), 0.1
N_CHECKPOINTS = 12
SIZES = {"tiny": dict(widths=(16, 32), n_nets=2, steps=5), "quick": dict(widths=(128, 512), n_nets=12, steps=300),
         "full": dict(widths=(512, 2048), n_nets=20, steps=2000)}


def main(full=False, outdir="figures", seed=0, backend=None, widths=None, n_nets=None, steps=None):
    """``widths``, ``n_nets``, ``steps`` override the mode's sizes (the tests use small ones)."""
    return figures.make("ntk_dynamics", compute, draw, full, outdir, seed, backend, store=outdir, widths=widths,
                        n_nets=n_nets, steps=steps)


def _task(seed=1234):
    rng = np.random.default_rng(seed)

    def sphere(n):
        x = rng.standard_normal((n, N0))
        return np.sqrt(N0) * x / np.linalg.norm(x, axis=1, keepdims=True)
    u, v = rng.standard_normal(N0), rng.standard_normal(N0) / np.sqrt(N0)
    X, Xt = sphere(N_TRAIN), sphere(N_TEST)

    def f(x):
        return np.sin(3 * x @ u / np.sqrt(N0)) + 0.5 * np.cos(x @ v)
    return X, f(X), Xt, f(Xt)


def _net(width):
    return mlp(3, widths=(N0, width, width, 1), activation="relu", sigma_w=SIGMA_W, sigma_b=SIGMA_B,
               last_activation=False)


def _learning_rate(theta):
    """η = N/λ_max(Θ) for the train-set NTK Θ: half the largest stable step of full-batch gradient descent."""
    return N_TRAIN / float(np.linalg.eigvalsh(theta)[-1])


def _checkpoints(steps):
    return np.unique(np.round(np.geomspace(1, steps, N_CHECKPOINTS)).astype(int))


def train_run(width, steps, seed):
    """One network of width ``width`` trained for ``steps`` full-batch GD steps: its test MSE at the checkpoints and
    its test predictions at the last step (one column per test point)."""
    X, y, Xt, yt = _task()
    net = _net(width)
    eta = _learning_rate(kernels.ntk_kernel(net, X, parameterization="standard"))
    torch.manual_seed(seed)
    model = MLP.from_arch(net, seed=seed, dtype=torch.float64)
    opt = torch.optim.SGD(model.parameters(), lr=eta)
    xs, ys, xts = (torch.from_numpy(a) for a in (X, y[:, None], Xt))
    marks = set(_checkpoints(steps).tolist())
    with torch.no_grad():                       # the initial function, for the control variate of compute()
        out = {f"f0_train_{i}": float(v) for i, v in enumerate(model(xs)[:, 0])}
        out.update({f"f0_test_{i}": float(v) for i, v in enumerate(model(xts)[:, 0])})
    for k in range(1, steps + 1):
        opt.zero_grad()
        loss = 0.5 * torch.mean((model(xs) - ys) ** 2)
        loss.backward()
        opt.step()
        if k in marks:
            with torch.no_grad():
                pred = model(xts)[:, 0].numpy()
            out[f"mse_{k}"] = float(np.mean((pred - yt) ** 2))
    out.update({f"pred_{i}": float(p) for i, p in enumerate(pred)})
    return out


def _theory(width, steps):
    """The infinite ensemble at every checkpoint, from one NTK/NNGP kernel computation on the train and test points
    and one eigendecomposition: the test-MSE curve, the final mean, the learning rate and the kernel blocks."""
    X, y, Xt, yt = _task()
    n = len(X)
    nngp, theta = kernels.ntk_kernel(_net(width), np.concatenate([X, Xt]), parameterization="standard",
                                     return_all=True)[-1]
    eta = _learning_rate(theta[:n, :n])
    ks = _checkpoints(steps)
    fit = predict.gradient_descent_mse(theta[:n, :n], y, learning_rate=eta, steps=True)
    means, covs = predict.ensemble_moments(fit, theta[n:, :n], nngp[:n, :n], nngp[n:, :n], nngp[n:, n:], t=ks)
    mse = np.mean((means - yt) ** 2, axis=-1) + np.mean(np.diagonal(covs, axis1=-2, axis2=-1), axis=-1)
    curve = pd.DataFrame({"width": width, "step": ks.astype(int), "mse_theory": mse})
    return curve, means[-1], eta, theta


def _against_theory(r, width, steps):
    """The networks of one width (their runs ``r``) against the NTK predictor: the test-MSE curve, the gaps of the
    ensemble mean (plain and with each network's f₀ carried by the linear model subtracted) and the predictions."""
    X, y, Xt, yt = _task()
    n, ks = len(X), _checkpoints(steps)
    theory, mean_final, eta, theta = _theory(width, steps)
    mse = r[[f"mse_{k}" for k in ks]].to_numpy()
    theory["mse_nets"] = mse.mean(axis=0)
    theory["mse_nets_se"] = mse.std(axis=0, ddof=1) / np.sqrt(len(r))
    theory["learning_rate"] = eta
    P = r[[f"pred_{i}" for i in range(N_TEST)]].to_numpy()             # networks × test points
    m, se = P.mean(axis=0), P.std(axis=0, ddof=1) / np.sqrt(len(P))
    # control variate: each network's own initial function f₀ carried by the linear model,
    # f₀(X*) − Θ*Θ⁻¹(I − (I − ηΘ/N)^k) f₀(X), has mean 0 over the ensemble; subtracted, the mean residual
    # measures the networks' departure from the linear model without the spread of f₀ (≈ √K(x*, x*)/√nets).
    # The same kernel; its predictor takes the networks' f₀ as one multi-output target, so N = y_train.size there.
    F0 = r[[f"f0_train_{i}" for i in range(N_TRAIN)]].to_numpy().T          # train points × networks
    _, carried = predict.gradient_descent_mse(theta[:n, :n], F0, learning_rate=eta, steps=True)(
        steps, 0.0, None, theta[n:, :n])
    resid = P - mean_final - (r[[f"f0_test_{i}" for i in range(N_TEST)]].to_numpy() - carried.T)
    cv, cv_se = resid.mean(axis=0), resid.std(axis=0, ddof=1) / np.sqrt(len(resid))
    gap = {"width": width, "rms_gap": float(np.sqrt(np.mean((m - mean_final) ** 2))),
           "rms_se_of_mean": float(np.sqrt(np.mean(se ** 2))),
           "rms_gap_cv": float(np.sqrt(np.mean(cv ** 2))), "rms_se_cv": float(np.sqrt(np.mean(cv_se ** 2))),
           "rms_network_vs_linear": float(np.sqrt(np.mean(resid ** 2))), "n_nets": len(P), "steps": steps}
    pred = pd.DataFrame({"width": width, "test_point": np.arange(N_TEST), "y": yt, "nets_mean": m, "nets_se": se,
                         "ntk_mean": mean_final})
    return theory, gap, pred


def compute(size="quick", seed=0, backend=None, store="figures", widths=None, n_nets=None, steps=None):
    """Tables "test MSE against step", "gap against width" and "predictions"; the trained networks' runs are kept
    in STORE/ntk_dynamics_runs.csv. ``widths``, ``n_nets``, ``steps`` override the size's (the tests use small
    ones)."""
    s = figures.settings(SIZES, size, **{k: v for k, v in dict(widths=widths, n_nets=n_nets, steps=steps).items()
                                         if v})
    widths, n_nets, steps = tuple(s["widths"]), s["n_nets"], s["steps"]
    runs = experiments.sweep(train_run, {"width": list(widths), "steps": [steps]}, seeds=figures.seeds(seed, n_nets),
                             store=figures.output_dir(store) / "ntk_dynamics_runs.csv",
                             on_error="raise")
    curves, gaps, preds = [], [], []
    for width in widths:
        theory, gap, pred = _against_theory(runs[(runs.width == width) & (runs.steps == steps)], width, steps)
        curves.append(theory)
        gaps.append(gap)
        preds.append(pred)
    X, y, Xt, yt = _task()
    nngp_mean, nngp_var = predict.nngp_regression(_net(widths[-1]), X, y, Xt, noise=1e-4)
    curves = pd.concat(curves, ignore_index=True)
    curves.attrs.update(nngp_mse=float(np.mean((nngp_mean - yt) ** 2) + np.mean(nngp_var)))
    return figures.Tables({"test MSE against step": curves, "gap against width": pd.DataFrame(gaps),
                           "predictions": pd.concat(preds, ignore_index=True)}, extras=s)


def _style_widths(ax, g, n_nets):
    """A linear y axis from 0: the standard errors are about the size of the gaps, so their lower bars reach 0
    (off a log axis); the legend above the points, the widths run as the x ticks."""
    top = max(float((g.rms_gap + g.rms_se_of_mean).max()), float((g.rms_gap_cv + g.rms_se_cv).max()),
              float(g.rms_network_vs_linear.max()))
    ax.axhline(0.0, color="k", lw=0.6)
    widths = g.width.to_numpy(dtype=float)
    figures.style(ax, legend=None, xscale="log", xlim=(widths.min() / 1.4, widths.max() * 1.4), ylim=(None, 1.7 * top),
                  xlabel="width W", ylabel="rms (networks' mean − NTK mean)",
                  title=f"Networks against the NTK predictor, by width\n({n_nets} networks per width; "
                        f"bars ± 1 SE of the mean)")
    ax.legend(fontsize=7, loc="upper center")
    figures.log_ticks(ax, "x", values=widths)


def draw(tables):
    curves, g, preds = tables["test MSE against step"], tables["gap against width"], tables["predictions"]
    steps, n_nets = tables.extras["steps"], tables.extras["n_nets"]
    fig, axes = figures.subplots(1, 3, 17 / 3, 4.8)
    axes = axes[0]
    for j, gap in enumerate(g.itertuples()):
        c, t, p = f"C{j}", curves[curves.width == gap.width], preds[preds.width == gap.width]
        axes[0].errorbar(t.step, t.mse_nets, yerr=t.mse_nets_se, fmt="o", ms=3.5, color=c, capsize=2,
                         label=f"W = {gap.width}: {gap.n_nets} trained networks")
        axes[0].plot(t.step, t.mse_theory, color=c, lw=1.4, label=f"W = {gap.width}: NTK ensemble prediction")
        axes[1].errorbar(p.ntk_mean, p.nets_mean, yerr=p.nets_se, fmt="o", ms=3, color=c, capsize=1.5,
                         label=f"W = {gap.width}: rms gap {gap.rms_gap:.3f} (SE of the mean {gap.rms_se_of_mean:.3f})")
    nngp_mse = curves.attrs["nngp_mse"]
    axes[0].axhline(nngp_mse, color="k", ls="--", lw=1, label=f"NNGP posterior (expected MSE {nngp_mse:.3f})")
    figures.style(axes[0], xscale="log", yscale="log", xlabel="gradient-descent step k", ylabel="test MSE",
                  title="Full-batch GD, ReLU depth 3, η = N/λ_max(Θ)\ntest MSE: networks (dots) and the NTK "
                        "predictor (lines)")
    figures.log_ticks(axes[0])                          # 0.8 … 1.6 labelled, the NNGP line's 1.135 among them
    lim = [float(preds.ntk_mean.min()), float(preds.ntk_mean.max())]
    axes[1].plot(lim, lim, "k--", lw=1)
    figures.style(axes[1], xlabel=f"NTK predicted mean at step {steps}", ylabel="mean over trained networks",
                  title="Ensemble mean: networks against\nthe infinite-width prediction")
    axes[2].errorbar(g.width, g.rms_gap, yerr=g.rms_se_of_mean, fmt="o-", capsize=3,
                     label="networks' mean − NTK mean (± SE of the mean)")
    axes[2].errorbar(g.width, g.rms_gap_cv, yerr=g.rms_se_cv, fmt="s-", capsize=3,
                     label="the same with each network's f₀ carried by the linear model subtracted")
    axes[2].plot(g.width, g.rms_network_vs_linear, "^-", label="one network against its own linear model (rms)")
    _style_widths(axes[2], g, n_nets)
    fig.suptitle("Wide networks trained by gradient descent against the NTK ensemble predictor (Lee et al. 2019)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "widths 512 and 2048, 2000 steps")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("gap against width", "test MSE against step"))
