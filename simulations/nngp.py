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

import numpy as np
import pandas as pd

from rmtnet import cli, figures
from rmtnet.spectra.network import mlp
from rmtnet.spectra import kernels, predict
from rmtnet.spectra.sampling import montecarlo

DEPTHS = (1, 2, 4, 8, 16, 32)
MODELS = {"ReLU": dict(activation="relu", sigma_w=np.sqrt(2.0), sigma_b=0.0),
          "erf": dict(activation="erf", sigma_w=1.5, sigma_b=0.3)}
NOISE_STD = 0.1
SIZES = {"tiny": dict(width=64, n_nets=8, sampler="marginal"),
         "quick": dict(width=1024, n_nets=128, sampler="marginal"),
         "full": dict(width=4096, n_nets=4, sampler="weights")}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("nngp", compute, draw, full, outdir, seed, backend)


def _circle(theta):
    return np.sqrt(2.0) * np.column_stack([np.cos(theta), np.sin(theta)])      # ‖x‖²/n₀ = 1


def _rho(K):
    """Correlation of the first input with every input, for a (…, B, B) Gram."""
    d = np.diagonal(K, axis1=-2, axis2=-1)
    return K[..., 0, :] / np.sqrt(d[..., :1] * d)


def _target(t):
    return np.sin(2 * t) + 0.5 * np.cos(3 * t)


def _correlations(net, width, n_nets, sampler, seed, backend):
    """The NNGP correlation maps of ``net`` at every depth of DEPTHS: the theory on a fine angle grid, and the
    Monte Carlo mean (± standard error) over ``n_nets`` networks beside the theory at 13 angles."""
    theta_line, theta_mc = np.linspace(0.0, np.pi, 91), np.linspace(0.0, np.pi, 13)
    theory = np.array(kernels.nngp_kernel(net, _circle(theta_line), return_all=True))
    at_mc = _rho(np.array(kernels.nngp_kernel(net, _circle(theta_mc), return_all=True)))
    grams = montecarlo.sample_nngp_kernel(net, _circle(theta_mc), width, n_samples=n_nets, seed=seed, backend=backend,
                                       sampler=sampler, return_all=True, return_samples=True)
    r = _rho(np.array(grams))                                               # (L, n_nets, B)
    mc, se = r.mean(axis=1), r.std(axis=1, ddof=1) / np.sqrt(n_nets)
    rows_t, rows_m = [], []
    for ell in DEPTHS:
        rows_t.append(pd.DataFrame({"depth": ell, "theta": theta_line, "rho_theory": _rho(theory[ell - 1])}))
        rows_m.append(pd.DataFrame({"depth": ell, "theta": theta_mc, "rho_mc": mc[ell - 1],
                                    "rho_mc_se": se[ell - 1], "rho_theory": at_mc[ell - 1]}))
    t_theory, t_mc = pd.concat(rows_t, ignore_index=True), pd.concat(rows_m, ignore_index=True)
    err = np.abs(t_mc.rho_mc - t_mc.rho_theory)
    t_mc.attrs.update(max_abs_err=float(err.max()), max_se=float(t_mc.rho_mc_se.max()),
                      max_z=float((err / t_mc.rho_mc_se.where(t_mc.rho_mc_se > 0)).max()),
                      width=width, n_nets=n_nets)
    return t_theory, t_mc


def _regression(width, seed):
    """GP regression on the circle with the depth-3 ReLU NNGP: the posterior on a test grid and the data."""
    rng = np.random.default_rng(seed)
    t_train = np.sort(rng.uniform(0.0, 2 * np.pi, 16))
    y_train = _target(t_train) + NOISE_STD * rng.standard_normal(t_train.size)
    t_test = np.linspace(0.0, 2 * np.pi, 301)
    net = mlp(3, width, sigma_w=np.sqrt(2.0), sigma_b=0.1, activation="relu")
    mean, var = predict.nngp_regression(net, _circle(t_train), y_train, _circle(t_test), noise=NOISE_STD ** 2)
    std = np.sqrt(var)
    truth = _target(t_test)
    gp = pd.DataFrame({"t": t_test, "mean": mean, "std": std, "truth": truth})
    gp.attrs.update(rmse=float(np.sqrt(np.mean((mean - truth) ** 2))),
                    coverage=float(np.mean(np.abs(mean - truth) <= 2 * std)))
    return gp, pd.DataFrame({"t": t_train, "y": y_train})


def compute(size="quick", seed=0, backend=None):
    """Correlation maps (theory and Monte Carlo) per model, then the GP regression and its data."""
    s = figures.settings(SIZES, size)
    tables = figures.Tables(extras=s)
    for j, (name, kw) in enumerate(MODELS.items()):
        net = mlp(max(DEPTHS), s["width"], **kw)
        tables[f"{name} correlation theory"], tables[f"{name} correlation MC"] = _correlations(
            net, s["width"], s["n_nets"], s["sampler"], seed + j, backend)
    tables["GP regression"], tables["GP data"] = _regression(s["width"], seed)
    return tables


def draw(tables):
    fig, axes = figures.subplots(1, 3, 17 / 3, 4.8)
    axes = axes[0]
    for ax, (name, kw) in zip(axes, MODELS.items()):
        theory, mc = tables[f"{name} correlation theory"], tables[f"{name} correlation MC"]
        for k, ell in enumerate(DEPTHS):
            t, m = theory[theory.depth == ell], mc[mc.depth == ell]
            ax.plot(t.theta, t.rho_theory, color=f"C{k}", lw=1.4, label=f"ℓ = {ell}")
            ax.errorbar(m.theta, m.rho_mc, yerr=m.rho_mc_se, fmt="o", ms=3.5, color=f"C{k}", capsize=2)
        ax.set(xlabel="input angle θ", ylabel="ρ_ℓ(θ) of h_ℓ", ylim=(-1.05, 1.05),
               title=f"{name}, σ_w² = {kw['sigma_w'] ** 2:.3g}, σ_b = {kw['sigma_b']}\n"
                     f"lines: NNGP; dots: MC n = {mc.attrs['width']}, {mc.attrs['n_nets']} nets "
                     f"(max |Δρ| {mc.attrs['max_abs_err']:.3f})")
        ax.legend(fontsize=7, ncol=2)
    gp, data, ax = tables["GP regression"], tables["GP data"], axes[2]
    ax.fill_between(gp.t, gp["mean"] - 2 * gp["std"], gp["mean"] + 2 * gp["std"], color="C0", alpha=0.25,
                    label="posterior ± 2 std")
    ax.plot(gp.t, gp["mean"], "C0", lw=1.5, label="posterior mean")
    ax.plot(gp.t, gp.truth, "k--", lw=1, label="truth sin 2t + ½ cos 3t")
    ax.plot(data.t, data.y, "ko", ms=4, label=f"data (noise std {NOISE_STD})")
    figures.style(ax, xlabel="t  (input x = √2 (cos t, sin t))", ylabel="y",
                  title=f"NNGP regression, ReLU depth 3 (σ_w² = 2, σ_b = 0.1)\nRMSE {gp.attrs['rmse']:.3f}, "
                        f"truth within ±2 std {100 * gp.attrs['coverage']:.0f}%")
    fig.suptitle("NNGP kernel propagation (Lee et al. 2018): theory (lines) vs wide random networks (dots)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "width 4096, weight matrices materialised")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), attrs=("max_abs_err", "max_se", "rmse", "coverage"))
