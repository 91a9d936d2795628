"""Dynamical isometry (Pennington, Schoenholz & Ganguli 2017): the (σ_w, σ_b) phase diagram of a deep tanh network
and the spread of its JJᵀ spectrum along the critical line, orthogonal against Gaussian weights.

Panel 1: heat map of log χ, χ = σ_w² E[φ′(√q* ξ)²] at the fixed point q*(σ_w, σ_b) of the length map
(rmtnet.spectra.chi), over σ_w ∈ [0.5, 2.5], σ_b ∈ [0, 0.5]; the critical line χ = 1 from critical_sigma_w (black),
with the χ = 1 contour of the grid (yellow dashed, on top of it) as a check. Left of it the ordered phase (χ < 1,
gradients vanish), right of it the chaotic phase (χ > 1, gradients explode).
Panel 2: Var(JJᵀ) of a depth-L network (J = D_L W_L ⋯ D_1 W_1, input at q*) along the critical line, exact from the
moments of jacobian_law (law.var()); Gaussian weights give Var ≥ L whatever σ_b, orthogonal weights give
Var → 0 as σ_b → 0 (q* → 0, D² → δ₁): dynamical isometry. Dots: Monte Carlo sample variance of the eigenvalues
(mean ± 1 standard error over draws) at a few points of the line.
Panel 3: q* along the critical line (the smaller q*, the closer D² is to the identity).

Quick mode (default): 30 × 20 grid, L = 16, 26 points on the line, MC at σ_b = 0.05 and 0.3 with N = 1000 and 6
draws (a draw's variance scatters by ~20 %: the input's norm performs a random walk over the layers).
``--full``: 80 × 50 grid, 51 points on the line, MC at six points with N = 2000 and 8 draws.
Writes figures/dynamical_isometry.png and figures/dynamical_isometry.csv (panels "log chi grid", "critical line",
"MC check").
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, figures
from rmtnet.spectra import network
from rmtnet.backend import to_numpy
from rmtnet.spectra import chi, critical_sigma_w, jacobian_law, q_star, sample_jacobian_eigs

ACT = "tanh"
DEPTH = 16
SIZES = {"tiny": dict(n_w=6, n_b=4, n_line=4, n=100, draws=2, mc_sb=(0.3,)),
         "quick": dict(n_w=30, n_b=20, n_line=26, n=1000, draws=6, mc_sb=(0.05, 0.3)),
         "full": dict(n_w=80, n_b=50, n_line=51, n=2000, draws=8, mc_sb=(0.01, 0.05, 0.1, 0.2, 0.3, 0.5))}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("dynamical_isometry", compute, draw, full, outdir, seed, backend)


def _net(weights, sigma_w, sigma_b, width=1000):
    return network.mlp(DEPTH, width, weights=weights, sigma_w=sigma_w, sigma_b=sigma_b, activation=ACT)


def _phase_grid(n_w, n_b):
    """log χ over an n_w × n_b grid of (σ_w, σ_b)."""
    sw_grid, sb_grid = np.linspace(0.5, 2.5, n_w), np.linspace(0.0, 0.5, n_b)
    log_chi = np.array([[np.log(chi(ACT, sw, sb)) for sw in sw_grid] for sb in sb_grid])
    SW, SB = np.meshgrid(sw_grid, sb_grid)
    return pd.DataFrame({"sigma_w": SW.ravel(), "sigma_b": SB.ravel(), "log_chi": log_chi.ravel()})


def _critical_line(n_line):
    """q*, χ and Var(JJᵀ) (Gaussian and orthogonal weights) along the critical line σ_w = critical_sigma_w(σ_b)."""
    sb_line = np.linspace(0.0, 0.5, n_line)
    sw_line = np.array([critical_sigma_w(ACT, sb) for sb in sb_line])
    q_line = np.array([q_star(ACT, sw, sb) for sw, sb in zip(sw_line, sb_line)])
    var = {w: np.array([jacobian_law(_net(w, sw, sb)).var() for sw, sb in zip(sw_line, sb_line)])
           for w in ("gaussian", "orthogonal")}
    line = pd.DataFrame({"sigma_b": sb_line, "sigma_w": sw_line, "q_star": q_line,
                         "chi": [chi(ACT, sw, sb) for sw, sb in zip(sw_line, sb_line)],
                         "var_gaussian": var["gaussian"], "var_orthogonal": var["orthogonal"]})
    line.attrs.update(depth=DEPTH, max_abs_chi_minus_1=float(np.abs(line.chi - 1.0).max()))
    return line


def _mc_check(s, seed, backend):
    """Monte Carlo sample variance of JJᵀ (mean ± standard error over draws) at a few points of the line."""
    n, draws, rows = s["n"], s["draws"], []
    for i, sb in enumerate(s["mc_sb"]):
        sw = critical_sigma_w(ACT, sb)
        for j, w in enumerate(("gaussian", "orthogonal")):
            net = _net(w, sw, sb, n)
            e = to_numpy(sample_jacobian_eigs(net, n_samples=draws, seed=seed + 10 * i + j, backend=backend))
            v = e.reshape(draws, -1).var(axis=1)
            rows.append(dict(weights=w, sigma_b=sb, sigma_w=sw, var_theory=jacobian_law(net).var(),
                             var_mc=v.mean(), var_mc_se=v.std(ddof=1) / np.sqrt(draws)))
    mc = pd.DataFrame(rows)
    mc["rel_err"] = (mc.var_mc - mc.var_theory) / mc.var_theory
    mc.attrs.update(width=n, draws=draws, max_abs_rel_err=float(mc.rel_err.abs().max()))
    return mc


def compute(size="quick", seed=0, backend=None):
    """Tables "log chi grid", "critical line" and "MC check"."""
    s = figures.settings(SIZES, size)
    return figures.Tables({"log chi grid": _phase_grid(s["n_w"], s["n_b"]),
                           "critical line": _critical_line(s["n_line"]), "MC check": _mc_check(s, seed, backend)},
                          extras=s)


def _draw_phases(fig, ax, grid, line):
    n_w, n_b = grid.sigma_w.nunique(), grid.sigma_b.nunique()
    SW, SB, log_chi = (grid[c].to_numpy().reshape(n_b, n_w) for c in ("sigma_w", "sigma_b", "log_chi"))
    lim = float(np.abs(log_chi).max())
    im = ax.pcolormesh(SW, SB, log_chi, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="auto")
    fig.colorbar(im, ax=ax, label="log χ")
    # the line lies where log χ = 0, the colour map's white: drawn black, the grid's contour dashed yellow on it
    ax.plot(line.sigma_w, line.sigma_b, "k-", lw=3, label="critical_sigma_w: χ = 1")
    ax.contour(SW, SB, log_chi, levels=[0.0], colors="gold", linestyles="--", linewidths=1.2)
    ax.plot([], [], "--", color="gold", lw=1.2, label="χ = 1 contour of the grid")
    ax.text(0.6, 0.45, "ordered\nχ < 1", fontsize=9)
    ax.text(2.0, 0.05, "chaotic\nχ > 1", fontsize=9)
    figures.style(ax, legend=None, xlabel="σ_w", ylabel="σ_b",
                  title=f"{ACT}: log χ over (σ_w, σ_b), {n_w} × {n_b} grid")
    ax.legend(fontsize=7, loc="lower right")


def draw(tables):
    fig, axes = figures.subplots(1, 3, 18.5 / 3, 4.8)
    axes = axes[0]
    line, mc = tables["critical line"], tables["MC check"]
    _draw_phases(fig, axes[0], tables["log chi grid"], line)
    ax = axes[1]
    for w, c in (("gaussian", "C1"), ("orthogonal", "C0")):
        ax.plot(line.sigma_b, line[f"var_{w}"], color=c, lw=1.5, label=f"{w}: law.var()")
        m = mc[mc.weights == w]
        ax.errorbar(m.sigma_b, m.var_mc, yerr=m.var_mc_se, fmt="o", ms=4, color=c, capsize=2,
                    label=f"{w}: MC N = {mc.attrs['width']}, {mc.attrs['draws']} draws")
    ax.axhline(DEPTH, color="k", ls=":", lw=0.8)
    ax.annotate(f"L = {DEPTH}", (float(line.sigma_b.max()), DEPTH), fontsize=8, ha="right", va="bottom")
    figures.style(ax, xlabel="σ_b (σ_w = critical_sigma_w(σ_b))", ylabel="Var of the JJᵀ spectrum",
                  title=f"{ACT}, L = {DEPTH}, on the critical line: spread of JJᵀ\n"
                        f"orthogonal → 0 as σ_b → 0 (dynamical isometry); Gaussian ≥ L")
    axes[2].plot(line.sigma_b, line.q_star, "k-", lw=1.5)
    figures.style(axes[2], legend=None, xlabel="σ_b", ylabel="q*", title="fixed point q* on the critical line")
    fig.suptitle(f"Dynamical isometry of deep {ACT} networks (Pennington, Schoenholz & Ganguli 2017)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "finer grid and line, larger N")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    print(f"critical line: max |χ - 1| = {t['critical line'].attrs['max_abs_chi_minus_1']:.2e}")
    print(t["MC check"].to_string(index=False))
    print("wrote", p)
