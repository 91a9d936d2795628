"""Spectrum of the one-sample Fisher information / NTK of a deep hard-tanh network near dynamical isometry against
depth (Hayase & Karakida 2021): rmtnet.spectra.fisher_law overlaid on Monte Carlo, and λ_max with the critical
learning rate 2/λ_max against depth.

Convention (rmtnet.spectra.network, rmtnet.spectra.ntk): Θ = Σ_ℓ q̂_{ℓ-1} B_ℓB_ℓᵀ for one input at the fixed point q*, square
layers, linear read-out (last_activation=False), orthogonal weights σ_w·O with σ_w = critical_sigma_w("hard_tanh",
0.05) (χ = 1) and σ_b = 0.05, so that q* is small and D² is close to the identity. Monte Carlo:
sample_fisher_eigs(..., qhat="mean_field") (the limits q̂_ℓ in place of the input's own norms, the same limit law).
Panels 1–3: the law against the histogram at depths L; the law has two atoms (a small one at q̂₀ and, at the top
of the spectrum, the all-active subspace) that the legend lists, and the histogram shows the continuous part
(L = 2 is purely atomic: stems, with the Monte Carlo mass at each atom). Last panel: λ_max = fisher_law(net).hull()[1]
against L with a least-squares straight line (slope, intercept, relative residual in the table) and the Monte
Carlo largest eigenvalue; the critical learning rate 2/λ_max (fisher.critical_learning_rate's definition) is in the
table and on the right axis.

Quick mode (default): N = 1000, one draw, overlays at L = 2, 4, 8, λ_max at L = 1, 2, 3, 4, 8 (one recursion to the
deepest L gives every shallower law on the way, fisher_law(..., return_all=True); each level is tabulated).
``--full``: N = 2000, four draws, overlays
at L = 2, 4, 8, 12, λ_max at L = 1 … 12 (several minutes).
Writes figures/ntk_spectrum.png and figures/ntk_spectrum.csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, figures, plot
from rmtnet.spectra import network
from rmtnet.backend import to_numpy
from rmtnet.spectra import critical_sigma_w, fisher, fisher_law, sample_fisher_eigs

ACT, WEIGHTS, SIGMA_B = "hard_tanh", "orthogonal", 0.05
SIZES = {"tiny": dict(n=200, draws=1, overlay_depths=(2, 3), lmax_depths=(1, 2, 3)),
         "quick": dict(n=1000, draws=1, overlay_depths=(2, 4, 8), lmax_depths=(1, 2, 3, 4, 8)),
         "full": dict(n=2000, draws=4, overlay_depths=(2, 4, 8, 12), lmax_depths=tuple(range(1, 13)))}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("ntk_spectrum", compute, draw, full, outdir, seed, backend)


def _net(depth, width):
    return network.mlp(depth, width, weights=WEIGHTS, sigma_w=critical_sigma_w(ACT, SIGMA_B), sigma_b=SIGMA_B,
                    activation=ACT, last_activation=False)


def _overlay(law, L, n, draws, seed, backend):
    """The law against the Monte Carlo spectrum at depth L, with λ_max and the first two moments of both."""
    net = _net(L, n)
    eig = to_numpy(sample_fisher_eigs(net, n_samples=draws, seed=seed, backend=backend, qhat="mean_field"))
    h = plot.histogram(law, eig, label="limit law")                  # narrow bands: fine bins
    m = fisher.fisher_moments(net, 2)
    h.table.attrs.update(depth=L, lambda_max=law.hull()[1], lambda_max_mc=float(eig.max()), m1_theory=m[0],
                         m1_mc=float(eig.mean()), m2_theory=m[1], m2_mc=float(np.mean(eig ** 2)),
                         continuous_mass=law.continuous_mass)
    return h


def _lambda_max(laws, depths, mc_max):
    """λ_max against depth with its least-squares line and the critical learning rate 2/λ_max."""
    lmax = np.array([laws[L].hull()[1] for L in depths])
    slope, intercept = np.polyfit(np.array(depths, dtype=float), lmax, 1)
    fit = slope * np.array(depths, dtype=float) + intercept
    rel_resid = float(np.sqrt(np.mean((lmax - fit) ** 2)) / np.mean(lmax))
    t = pd.DataFrame({"depth": depths, "lambda_max": lmax, "lambda_max_fit": fit,
                      "lambda_max_mc": [mc_max.get(L, np.nan) for L in depths],
                      "critical_learning_rate": 2.0 / lmax, "slope": slope, "intercept": intercept,
                      "rel_residual": rel_resid})
    t.attrs.update(slope=float(slope), intercept=float(intercept), rel_residual=rel_resid)
    return t


def compute(size="quick", seed=0, backend=None):
    """One overlay table per depth of overlay_depths ("Fisher L=…"), then "lambda_max vs depth"."""
    s = figures.settings(SIZES, size)
    deepest = max(set(s["overlay_depths"]) | set(s["lmax_depths"]))
    laws = dict(enumerate(fisher_law(_net(deepest, s["n"]), return_all=True), start=1))   # every depth, one recursion
    tables = figures.Tables(extras=s)
    for i, L in enumerate(s["overlay_depths"]):
        h = _overlay(laws[L], L, s["n"], s["draws"], seed + i, backend)
        tables[f"Fisher L={L}"], tables.extras[f"Fisher L={L}"] = h.table, h
    mc_max = {t.attrs["depth"]: t.attrs["lambda_max_mc"] for t in tables.values()}
    tables["lambda_max vs depth"] = _lambda_max(laws, s["lmax_depths"], mc_max)
    return tables


def draw(tables):
    s = tables.extras
    fig, axes = figures.subplots(1, len(s["overlay_depths"]) + 1, 4.6, 4.3)
    axes = axes[0]
    for ax, L in zip(axes, s["overlay_depths"]):
        a = tables[f"Fisher L={L}"].attrs
        plot.draw_histogram(ax, s[f"Fisher L={L}"])
        ax.set(xlabel="eigenvalue of Θ (Fisher dual / NTK)",
               title=f"L = {L}: continuous mass {a['continuous_mass']:.3f}\nλ_max = {a['lambda_max']:.4f} "
                     f"(MC {a['lambda_max_mc']:.4f})")
    t, ax = tables["lambda_max vs depth"], axes[-1]
    ax.plot(t.depth, t.lambda_max, "ko", ms=5, label="λ_max of the limit law (top of its support)")
    ax.plot(t.depth, t.lambda_max_fit, "C3-", lw=1, label=f"fit {t.attrs['slope']:.4f}·L "
            f"{'+' if t.attrs['intercept'] >= 0 else '−'} {abs(t.attrs['intercept']):.4f} "
            f"(rel. resid. {t.attrs['rel_residual']:.1e})")
    mc = t.dropna(subset=["lambda_max_mc"])
    ax.plot(mc.depth, mc.lambda_max_mc, "C0x", ms=8, label="Monte Carlo largest eigenvalue")
    figures.style(ax, legend=None, xlabel="depth L", ylabel="λ_max",
                  title="λ_max of the Fisher/NTK vs depth\n(right: critical learning rate 2/λ_max)")
    ax.legend(fontsize=7, loc="upper center")
    ax2 = ax.twinx()
    ax2.plot(t.depth, t.critical_learning_rate, "C2s--", ms=4, lw=1)
    ax2.set_ylabel("2/λ_max", color="C2")
    fig.suptitle(f"One-sample Fisher/NTK spectrum, {ACT}, {WEIGHTS} weights, σ_w = {_net(1, s['n']).sigma_w:.4f}, "
                 f"σ_b = {SIGMA_B}, linear read-out: the limit law of Hayase & Karakida (AISTATS 2021) vs Monte "
                 f"Carlo (N = {s['n']}, {s['draws']} draw(s))")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "N = 2000, depths up to 12 (several minutes)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    figures.report((p, t), attrs=("lambda_max", "lambda_max_mc", "m1_theory", "m1_mc"), width=14)
    s = t["lambda_max vs depth"]
    print(s[["depth", "lambda_max", "lambda_max_fit", "critical_learning_rate"]].to_string(index=False))
    print(f"λ_max ≈ {s.attrs['slope']:.5f}·L + {s.attrs['intercept']:.5f}, relative residual "
          f"{s.attrs['rel_residual']:.2e}")
