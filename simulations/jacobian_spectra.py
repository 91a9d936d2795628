"""Spectra of the input–output Jacobian JJᵀ of deep random MLPs at criticality (Pennington, Schoenholz & Ganguli
2017, 2018): the free-probability law rmtnet.spectra.jacobian_law overlaid on Monte Carlo histograms, and the
variance of JJᵀ against depth.

Convention (rmtnet.spectra.network): J = D_L W_L ⋯ D_1 W_1 (last_activation=True), square layers, input at the fixed point
q* of the length map (q0="fixed_point"), σ_w = critical_sigma_w(φ, σ_b) on the line χ = 1 with σ_b = 0 for
linear and ReLU and σ_b = 0.05 for hard-tanh, erf and tanh; Gaussian weights (entries N(0, σ_w²/N)) or σ_w times
a Haar orthogonal matrix. Overlay panels: one (activation, weights, depth L) each, KS distance in the legend;
purely atomic laws (orthogonal linear: δ₁; orthogonal ReLU / hard-tanh at L = 1) are drawn as atoms, with the
Monte Carlo mass at each atom beside the theory mass. Last panel: Var(JJᵀ) = law.var() (exact, from moments)
against L up to 100, with Monte Carlo sample variances (mean ± 1 standard error over draws) and the reference lines
2L (ReLU, Gaussian), L (ReLU orthogonal; linear Gaussian) and 0 (linear orthogonal: JJᵀ = I).

Quick mode (default): N = 1000, one draw per overlay, depths 1, 2, 4 for linear / ReLU / hard-tanh and 2, 8 for
orthogonal erf and tanh; the variance sweep samples N = 400, 3 draws, L = 1 … 32.
``--full``: N = 2000, four draws, depths 1, 2, 4, 8, Gaussian erf and tanh added; the sweep samples N = 1000,
8 draws, L = 1 … 100. The Monte Carlo eigenvalues are squared singular values of J, accurate down to ~1e-28·max,
so the KS distance counts a sample on the atom at 0 only below ATOM_RTOL = 1e-24·max: the continuous part of a
deep law crowds to 0 like x^{1/(L+1)} in cdf and would otherwise be mistaken for atom mass.
Writes figures/jacobian_spectra.png and figures/jacobian_spectra.csv (one panel per overlay, KS per panel, and
the variance sweep).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rmtnet import cli, plot
from rmtnet.spectra import network
from rmtnet.backend import to_numpy
from rmtnet.spectra import critical_sigma_w, jacobian_law, sample_jacobian_eigs

SIGMA_B = {"linear": 0.0, "relu": 0.0, "hard_tanh": 0.05, "erf": 0.05, "tanh": 0.05}
ATOMIC_DEPTHS = {False: (1, 2, 4), True: (1, 2, 4, 8)}
SMOOTH_DEPTHS = (2, 8)
ATOM_RTOL = 1e-24       # squared singular values: exact zeros come out below ~1e-28·max (plot.ks_distance)
# (activation, weights, reference Var(JJᵀ)/L at criticality or None) for the depth sweep
SWEEP = (("relu", "gaussian", 2.0), ("relu", "orthogonal", 1.0), ("linear", "gaussian", 1.0),
         ("linear", "orthogonal", 0.0), ("hard_tanh", "gaussian", None), ("hard_tanh", "orthogonal", None))


@lru_cache(maxsize=None)
def _sigma_w(act):
    return critical_sigma_w(act, SIGMA_B[act])


def _net(act, weights, depth, width):
    return network.mlp(depth, width, weights=weights, sigma_w=_sigma_w(act), sigma_b=SIGMA_B[act], activation=act)


def _panels(full):
    out = [(a, "gaussian", L) for a in ("linear", "relu", "hard_tanh") for L in ATOMIC_DEPTHS[full]]
    if full:
        out += [(a, "gaussian", L) for a in ("erf", "tanh") for L in SMOOTH_DEPTHS]
    out += [("linear", "orthogonal", ATOMIC_DEPTHS[full][-1])]                  # δ₁ at every depth: one panel
    out += [(a, "orthogonal", L) for a in ("relu", "hard_tanh") for L in ATOMIC_DEPTHS[full]]
    out += [(a, "orthogonal", L) for a in ("erf", "tanh") for L in SMOOTH_DEPTHS]
    return out


def main(full=False, outdir="figures", seed=0, backend=None):
    n, draws = (2000, 4) if full else (1000, 1)
    sweep_n, sweep_draws = (1000, 8) if full else (400, 3)
    sweep_mc = (1, 2, 4, 8, 16, 32, 64, 100) if full else (1, 2, 4, 8, 16, 32)
    panels = _panels(full)
    ncols = 6
    nrows = -(-(len(panels) + 1) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.0 * nrows), layout="constrained")
    axes = axes.ravel()
    tables = {}
    for i, (act, weights, L) in enumerate(panels):
        net = _net(act, weights, L, n)
        law = jacobian_law(net)
        eig = to_numpy(sample_jacobian_eigs(net, n_samples=draws, seed=seed + i, backend=backend))
        ax = axes[i]
        key = f"{act} {weights} L={L}"
        bins = int(np.clip(law.continuous_mass * eig.size / 12, 10, 80))       # few eigenvalues: fewer bins
        ax, tables[key] = plot.overlay(law, eig, ax=ax, bins=bins, label=f"jacobian_law (var {law.var():.3g})",
                                       atom_rtol=ATOM_RTOL)
        if law.continuous_support() is not None and law.continuous_support()[0] < 1e-6 and L > 1:   # density singular at 0: log y
            ax.set_yscale("log")
        tables[key].attrs.update(sigma_w=net.sigma_w, sigma_b=net.sigma_b, q_star=net.q[0],
                                 var_theory=law.var(), var_mc=float(eig.var()))
        ax.set_title(f"{act}, {weights}, L = {L}\nσ_w = {net.sigma_w:.4g}, σ_b = {net.sigma_b}", fontsize=9)
        ax.set_xlabel("eigenvalue of JJᵀ", fontsize=8)

    # Var(JJᵀ) against depth: exact theory (every L) and Monte Carlo (a few L)
    r, c = divmod(len(panels), ncols)
    for a in axes[len(panels):]:
        a.remove()
    ax = fig.add_subplot(axes[0].get_gridspec()[r, c:])                      # the rest of the last row
    depths = np.arange(1, 101)
    rows = []
    for k, (act, weights, slope) in enumerate(SWEEP):
        c = f"C{k}"
        theory = np.array([jacobian_law(_net(act, weights, int(L), n)).var() for L in depths])
        ax.plot(depths, theory, color=c, lw=1.5, label=f"{act}, {weights}")
        mc_mean, mc_se = [], []
        for j, L in enumerate(sweep_mc):
            e = to_numpy(sample_jacobian_eigs(_net(act, weights, L, sweep_n), n_samples=sweep_draws,
                                              seed=seed + 1000 + 100 * k + j, backend=backend))
            v = e.reshape(sweep_draws, -1).var(axis=1)
            mc_mean.append(v.mean())
            mc_se.append(v.std(ddof=1) / np.sqrt(sweep_draws))
        ax.errorbar(sweep_mc, mc_mean, yerr=mc_se, fmt="o", ms=3.5, color=c, capsize=2)
        ref = np.full(depths.shape, np.nan) if slope is None else slope * depths
        mc_col = np.full(depths.shape, np.nan)
        se_col = np.full(depths.shape, np.nan)
        mc_col[np.array(sweep_mc) - 1], se_col[np.array(sweep_mc) - 1] = mc_mean, mc_se
        rows.append(pd.DataFrame({"model": f"{act} {weights}", "depth": depths, "var_theory": theory,
                                  "var_reference": ref, "var_mc": mc_col, "var_mc_se": se_col}))
    for slope, txt, va in ((2.0, "2L", "bottom"), (1.0, "L", "top"), (0.0, "0", "bottom")):
        ax.plot(depths, slope * depths, "k:", lw=0.8)
        ax.annotate(txt, (depths[-1], slope * depths[-1]), fontsize=8, ha="left", va=va)
    sweep = pd.concat(rows, ignore_index=True)
    dev = (sweep.var_theory - sweep.var_reference).abs()
    sweep.attrs.update(max_abs_dev_from_reference=float(dev.max()), mc_width=sweep_n, mc_draws=sweep_draws)
    tables["variance vs depth"] = sweep
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_ylim(0, None)
    ax.set(xlabel="depth L", ylabel="Var of the JJᵀ spectrum (symlog)",
           title=f"Var(JJᵀ) vs depth at criticality\nlines: law.var(); dots: MC N = {sweep_n}, {sweep_draws} draws")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.suptitle(f"JJᵀ spectra at criticality: jacobian_law (lines) vs Monte Carlo (N = {n}, {draws} draw(s))")
    path = plot.save(fig, Path(outdir) / "jacobian_spectra.png", tables)
    return path, tables


if __name__ == "__main__":
    a = cli.script_args(__doc__, "N = 2000, more depths and draws")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    for k, v in t.items():
        if "ks" in v.attrs:
            print(f"{k:28s} KS = {v.attrs['ks']:.4f}   Var theory {v.attrs['var_theory']:.4g}, MC "
                  f"{v.attrs['var_mc']:.4g}")
    s = t["variance vs depth"].attrs
    print(f"variance vs depth: max |law.var() - reference| = {s['max_abs_dev_from_reference']:.2e}")
    print("wrote", p)
