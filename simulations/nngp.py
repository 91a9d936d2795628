"""NNGP kernels of deep random MLPs (Lee et al., ICLR 2018, arXiv 1711.00165): theory vs wide-network Monte Carlo,
and Bayesian regression with the NNGP prior.

Panels 1–2: the correlation map ρ_ℓ(θ) = Σ_ℓ(x, x′)/√(Σ_ℓ(x, x)Σ_ℓ(x′, x′)) of the pre-activations h_ℓ against the
angle θ between two inputs on the circle ‖x‖²/n₀ = 1, at depths 1, 2, 4, 8, 16, 32: ReLU at criticality
(σ_w² = 2, σ_b = 0; closed-form arc-cosine kernel) and erf at σ_w = 1.5, σ_b = 0.3 (Williams' closed form).
Lines: rmtnet.spectra.kernels.nngp_kernel; dots: sample_nngp_kernel (mean over networks, ±1 standard error).
Panel 3: GP regression with the depth-3 ReLU NNGP on a toy task on the circle, t ↦ x = √2(cos t, sin t),
y = sin 2t + ½ cos 3t + noise: posterior mean ± 2 std against the data and the truth.

Quick mode (default): width 1024, 128 Gaussian networks drawn in law on the inputs (sampler="marginal").
``--full``: width 4096, 4 networks with every weight matrix materialised (sampler="weights"; use --backend cupy).
Writes figures/nngp.png and figures/nngp.csv.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rmtnet import cli, plot
from rmtnet.spectra.network import mlp
from rmtnet.spectra import kernels, predict
from rmtnet.spectra.sampling import montecarlo

DEPTHS = (1, 2, 4, 8, 16, 32)
MODELS = {"ReLU": dict(activation="relu", sigma_w=np.sqrt(2.0), sigma_b=0.0),
          "erf": dict(activation="erf", sigma_w=1.5, sigma_b=0.3)}
NOISE_STD = 0.1


def _circle(theta):
    return np.sqrt(2.0) * np.column_stack([np.cos(theta), np.sin(theta)])      # ‖x‖²/n₀ = 1


def _rho(K):
    """Correlation of the first input with every input, for a (…, B, B) Gram."""
    d = np.diagonal(K, axis1=-2, axis2=-1)
    return K[..., 0, :] / np.sqrt(d[..., :1] * d)


def _target(t):
    return np.sin(2 * t) + 0.5 * np.cos(3 * t)


def main(full=False, outdir="figures", seed=0, backend=None):
    width, n_nets, sampler = (4096, 4, "weights") if full else (1024, 128, "marginal")
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), layout="constrained")
    tables = {}
    theta_line = np.linspace(0.0, np.pi, 91)
    theta_mc = np.linspace(0.0, np.pi, 13)
    for j, (name, kw) in enumerate(MODELS.items()):
        net = mlp(max(DEPTHS), width, **kw)
        theory = np.array(kernels.nngp_kernel(net, _circle(theta_line), return_all=True))
        at_mc = _rho(np.array(kernels.nngp_kernel(net, _circle(theta_mc), return_all=True)))
        grams = montecarlo.sample_nngp_kernel(net, _circle(theta_mc), width, n_samples=n_nets, seed=seed + j,
                                           backend=backend, sampler=sampler, return_all=True, return_samples=True)
        r = _rho(np.array(grams))                                               # (L, n_nets, B)
        mc, se = r.mean(axis=1), r.std(axis=1, ddof=1) / np.sqrt(n_nets)
        ax = axes[j]
        rows_t, rows_m = [], []
        for k, ell in enumerate(DEPTHS):
            c = f"C{k}"
            line = _rho(theory[ell - 1])
            ax.plot(theta_line, line, color=c, lw=1.4, label=f"ℓ = {ell}")
            ax.errorbar(theta_mc, mc[ell - 1], yerr=se[ell - 1], fmt="o", ms=3.5, color=c, capsize=2)
            rows_t.append(pd.DataFrame({"depth": ell, "theta": theta_line, "rho_theory": line}))
            rows_m.append(pd.DataFrame({"depth": ell, "theta": theta_mc, "rho_mc": mc[ell - 1],
                                        "rho_mc_se": se[ell - 1], "rho_theory": at_mc[ell - 1]}))
        t_theory, t_mc = pd.concat(rows_t, ignore_index=True), pd.concat(rows_m, ignore_index=True)
        err = np.abs(t_mc.rho_mc - t_mc.rho_theory)
        t_mc.attrs.update(max_abs_err=float(err.max()), max_se=float(t_mc.rho_mc_se.max()),
                          max_z=float((err / t_mc.rho_mc_se.where(t_mc.rho_mc_se > 0)).max()),
                          width=width, n_nets=n_nets)
        tables[f"{name} correlation theory"] = t_theory
        tables[f"{name} correlation MC"] = t_mc
        ax.set(xlabel="input angle θ", ylabel="ρ_ℓ(θ) of h_ℓ", ylim=(-1.05, 1.05),
               title=f"{name}, σ_w² = {kw['sigma_w'] ** 2:.3g}, σ_b = {kw['sigma_b']}\n"
                     f"lines: NNGP; dots: MC n = {width}, {n_nets} nets (max |Δρ| {err.max():.3f})")
        ax.legend(fontsize=7, ncol=2)

    # GP regression on the circle with the depth-3 ReLU NNGP
    rng = np.random.default_rng(seed)
    t_train = np.sort(rng.uniform(0.0, 2 * np.pi, 16))
    y_train = _target(t_train) + NOISE_STD * rng.standard_normal(t_train.size)
    t_test = np.linspace(0.0, 2 * np.pi, 301)
    net = mlp(3, width, sigma_w=np.sqrt(2.0), sigma_b=0.1, activation="relu")
    mean, var = predict.nngp_regression(net, _circle(t_train), y_train, _circle(t_test), noise=NOISE_STD ** 2)
    std = np.sqrt(var)
    truth = _target(t_test)
    ax = axes[2]
    ax.fill_between(t_test, mean - 2 * std, mean + 2 * std, color="C0", alpha=0.25, label="posterior ± 2 std")
    ax.plot(t_test, mean, "C0", lw=1.5, label="posterior mean")
    ax.plot(t_test, truth, "k--", lw=1, label="truth sin 2t + ½ cos 3t")
    ax.plot(t_train, y_train, "ko", ms=4, label=f"data (noise std {NOISE_STD})")
    rmse = float(np.sqrt(np.mean((mean - truth) ** 2)))
    coverage = float(np.mean(np.abs(mean - truth) <= 2 * std))
    ax.set(xlabel="t  (input x = √2 (cos t, sin t))", ylabel="y",
           title=f"NNGP regression, ReLU depth 3 (σ_w² = 2, σ_b = 0.1)\nRMSE {rmse:.3f}, truth within ±2 std "
                 f"{100 * coverage:.0f}%")
    ax.legend(fontsize=7)
    gp = pd.DataFrame({"t": t_test, "mean": mean, "std": std, "truth": truth})
    gp.attrs.update(rmse=rmse, coverage=coverage)
    tables["GP regression"] = gp
    tables["GP data"] = pd.DataFrame({"t": t_train, "y": y_train})
    fig.suptitle("NNGP kernel propagation (Lee et al. 2018): theory (lines) vs wide random networks (dots)")
    path = plot.save(fig, Path(outdir) / "nngp.png", tables)
    return path, tables


if __name__ == "__main__":
    a = cli.script_args(__doc__, "width 4096, weight matrices materialised")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    for k, v in t.items():
        if "max_abs_err" in v.attrs:
            print(f"{k:28s} max |Δρ| = {v.attrs['max_abs_err']:.4f}  (max SE {v.attrs['max_se']:.4f})")
        if "rmse" in v.attrs:
            print(f"{k:28s} RMSE = {v.attrs['rmse']:.4f}, coverage = {v.attrs['coverage']:.2f}")
    print("wrote", p)
