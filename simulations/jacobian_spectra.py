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

import numpy as np
import pandas as pd

from rmtnet import cli, figures, plot
from rmtnet.spectra import network
from rmtnet.backend import to_numpy
from rmtnet.spectra import critical_sigma_w, jacobian_law, sample_jacobian_eigs

SIGMA_B = {"linear": 0.0, "relu": 0.0, "hard_tanh": 0.05, "erf": 0.05, "tanh": 0.05}
SMOOTH_DEPTHS = (2, 8)
ATOM_RTOL = 1e-24       # squared singular values: exact zeros come out below ~1e-28·max (plot.ks_distance)
# (activation, weights, reference Var(JJᵀ)/L at criticality or None) for the depth sweep
SWEEP = (("relu", "gaussian", 2.0), ("relu", "orthogonal", 1.0), ("linear", "gaussian", 1.0),
         ("linear", "orthogonal", 0.0), ("hard_tanh", "gaussian", None), ("hard_tanh", "orthogonal", None))
SIZES = {"tiny": dict(n=100, draws=1, atomic_depths=(1,), smooth_depths=(), smooth_gaussian=False, sweep_n=50,
                      sweep_draws=2, sweep_mc=(1, 2), sweep_depths=3),
         "quick": dict(n=1000, draws=1, atomic_depths=(1, 2, 4), smooth_depths=SMOOTH_DEPTHS, smooth_gaussian=False,
                       sweep_n=400, sweep_draws=3, sweep_mc=(1, 2, 4, 8, 16, 32), sweep_depths=100),
         "full": dict(n=2000, draws=4, atomic_depths=(1, 2, 4, 8), smooth_depths=SMOOTH_DEPTHS, smooth_gaussian=True,
                      sweep_n=1000, sweep_draws=8, sweep_mc=(1, 2, 4, 8, 16, 32, 64, 100), sweep_depths=100)}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("jacobian_spectra", compute, draw, full, outdir, seed, backend)


@lru_cache(maxsize=None)
def _sigma_w(act):
    return critical_sigma_w(act, SIGMA_B[act])


def _net(act, weights, depth, width):
    return network.mlp(depth, width, weights=weights, sigma_w=_sigma_w(act), sigma_b=SIGMA_B[act], activation=act)


def _panels(atomic_depths, smooth_depths, smooth_gaussian):
    out = [(a, "gaussian", L) for a in ("linear", "relu", "hard_tanh") for L in atomic_depths]
    if smooth_gaussian:
        out += [(a, "gaussian", L) for a in ("erf", "tanh") for L in smooth_depths]
    out += [("linear", "orthogonal", atomic_depths[-1])]                  # δ₁ at every depth: one panel
    out += [(a, "orthogonal", L) for a in ("relu", "hard_tanh") for L in atomic_depths]
    out += [(a, "orthogonal", L) for a in ("erf", "tanh") for L in smooth_depths]
    return out


def _overlay(act, weights, L, n, draws, seed, backend):
    """jacobian_law against the Monte Carlo spectrum of JJᵀ for one (activation, weights, depth)."""
    net = _net(act, weights, L, n)
    law = jacobian_law(net)
    eig = to_numpy(sample_jacobian_eigs(net, n_samples=draws, seed=seed, backend=backend))
    bins = int(np.clip(law.continuous_mass * eig.size / 12, 10, 80))       # few eigenvalues: fewer bins
    h = plot.histogram(law, eig, bins=bins, label=f"jacobian_law (var {law.var():.3g})", atom_rtol=ATOM_RTOL)
    support = law.continuous_support()
    h.table.attrs.update(sigma_w=net.sigma_w, sigma_b=net.sigma_b, q_star=net.q[0], var_theory=law.var(),
                         var_mc=float(eig.var()),
                         log_y=support is not None and support[0] < 1e-6 and L > 1)   # density singular at 0
    return h


def _variance_sweep(s, n, seed, backend):
    """Var(JJᵀ) against depth for every model of SWEEP: exact (every depth) and Monte Carlo (sweep_mc depths)."""
    depths = np.arange(1, s["sweep_depths"] + 1)
    rows = []
    for k, (act, weights, slope) in enumerate(SWEEP):
        theory = np.array([jacobian_law(_net(act, weights, int(L), n)).var() for L in depths])
        mc_mean, mc_se = [], []
        for j, L in enumerate(s["sweep_mc"]):
            e = to_numpy(sample_jacobian_eigs(_net(act, weights, L, s["sweep_n"]), n_samples=s["sweep_draws"],
                                              seed=seed + 1000 + 100 * k + j, backend=backend))
            v = e.reshape(s["sweep_draws"], -1).var(axis=1)
            mc_mean.append(v.mean())
            mc_se.append(v.std(ddof=1) / np.sqrt(s["sweep_draws"]))
        ref = np.full(depths.shape, np.nan) if slope is None else slope * depths
        mc_col = np.full(depths.shape, np.nan)
        se_col = np.full(depths.shape, np.nan)
        mc_col[np.array(s["sweep_mc"]) - 1], se_col[np.array(s["sweep_mc"]) - 1] = mc_mean, mc_se
        rows.append(pd.DataFrame({"model": f"{act} {weights}", "depth": depths, "var_theory": theory,
                                  "var_reference": ref, "var_mc": mc_col, "var_mc_se": se_col}))
    sweep = pd.concat(rows, ignore_index=True)
    dev = (sweep.var_theory - sweep.var_reference).abs()
    sweep.attrs.update(max_abs_dev_from_reference=float(dev.max()), mc_width=s["sweep_n"],
                       mc_draws=s["sweep_draws"])
    return sweep


def compute(size="quick", seed=0, backend=None):
    """One overlay table per panel ("ACT WEIGHTS L=…"), then "variance vs depth"."""
    s = figures.settings(SIZES, size)
    s["panels"] = _panels(s["atomic_depths"], s["smooth_depths"], s["smooth_gaussian"])
    tables = figures.Tables(extras=s)
    for i, (act, weights, L) in enumerate(s["panels"]):
        key = f"{act} {weights} L={L}"
        h = _overlay(act, weights, L, s["n"], s["draws"], seed + i, backend)
        tables[key], tables.extras[key] = h.table, h
    tables["variance vs depth"] = _variance_sweep(s, s["n"], seed, backend)
    return tables


def _draw_sweep(ax, sweep):
    for k, (model, t) in enumerate(sweep.groupby("model", sort=False)):
        ax.plot(t.depth, t.var_theory, color=f"C{k}", lw=1.5, label=model.replace(" ", ", "))
        mc = t.dropna(subset=["var_mc"])
        ax.errorbar(mc.depth, mc.var_mc, yerr=mc.var_mc_se, fmt="o", ms=3.5, color=f"C{k}", capsize=2)
    depths = t.depth.to_numpy()
    for slope, txt, dy in ((2.0, "2L", 2), (1.0, "L", -2), (0.0, "0", 2)):
        ax.plot(depths, slope * depths, "k:", lw=0.8)
        ax.annotate(txt, (depths[-1], slope * depths[-1]), xytext=(-3, dy), textcoords="offset points",
                    fontsize=8, ha="right", va="bottom" if dy > 0 else "top")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_ylim(0, 10 * max(2.0 * depths[-1], float(sweep.var_theory.max())))   # room above 2L for its label
    figures.style(ax, legend=None, title_size=9, xlabel="depth L", ylabel="Var of the JJᵀ spectrum (symlog)",
                  title=f"Var(JJᵀ) vs depth at criticality\nlines: law.var(); dots: MC N = "
                        f"{sweep.attrs['mc_width']}, {sweep.attrs['mc_draws']} draws")
    ax.legend(fontsize=7, ncol=2, loc="upper left")


def draw(tables):
    s, ncols = tables.extras, 6
    panels = s["panels"]
    nrows = -(-(len(panels) + 1) // ncols)
    fig, axes = figures.subplots(nrows, ncols, 3.6, 3.0)
    axes = axes.ravel()
    for ax, (act, weights, L) in zip(axes, panels):
        key = f"{act} {weights} L={L}"
        a = tables[key].attrs
        plot.draw_histogram(ax, s[key])
        if a["log_y"]:
            ax.set_yscale("log")
        ax.set_title(f"{act}, {weights}, L = {L}\nσ_w = {a['sigma_w']:.4g}, σ_b = {a['sigma_b']}", fontsize=9)
        ax.set_xlabel("eigenvalue of JJᵀ", fontsize=8)
    r, c = divmod(len(panels), ncols)
    for a in axes[len(panels):]:
        a.remove()
    _draw_sweep(fig.add_subplot(axes[0].get_gridspec()[r, c:]), tables["variance vs depth"])   # rest of the row
    fig.suptitle(f"Spectra of JJᵀ at criticality: the free-probability limit law (lines) against Monte Carlo "
                 f"(histograms, N = {s['n']}, {s['draws']} draw(s)); Pennington, Schoenholz & Ganguli, NeurIPS 2017 "
                 f"and AISTATS 2018")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "N = 2000, more depths and draws")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    figures.report((p, t), attrs=("var_theory", "var_mc"))
    s = t["variance vs depth"].attrs
    print(f"variance vs depth: max |law.var() - reference| = {s['max_abs_dev_from_reference']:.2e}")
