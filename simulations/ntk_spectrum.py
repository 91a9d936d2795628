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

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rmtnet import cli, plot
from rmtnet.spectra import network
from rmtnet.backend import to_numpy
from rmtnet.spectra import critical_sigma_w, fisher, fisher_law, sample_fisher_eigs

ACT, WEIGHTS, SIGMA_B = "hard_tanh", "orthogonal", 0.05


def _net(depth, width):
    return network.mlp(depth, width, weights=WEIGHTS, sigma_w=critical_sigma_w(ACT, SIGMA_B), sigma_b=SIGMA_B,
                    activation=ACT, last_activation=False)


def main(full=False, outdir="figures", seed=0, backend=None):
    n, draws = (2000, 4) if full else (1000, 1)
    overlay_depths = (2, 4, 8, 12) if full else (2, 4, 8)
    lmax_depths = tuple(range(1, 13)) if full else (1, 2, 3, 4, 8)
    deepest = max(set(overlay_depths) | set(lmax_depths))
    laws = dict(enumerate(fisher_law(_net(deepest, n), return_all=True), start=1))     # every depth, one recursion
    fig, axes = plt.subplots(1, len(overlay_depths) + 1, figsize=(4.6 * (len(overlay_depths) + 1), 4.3),
                             layout="constrained")
    tables = {}
    mc_max = {}
    for i, L in enumerate(overlay_depths):
        net, law, ax = _net(L, n), laws[L], axes[i]
        eig = to_numpy(sample_fisher_eigs(net, n_samples=draws, seed=seed + i, backend=backend, qhat="mean_field"))
        mc_max[L] = float(eig.max())
        key = f"Fisher L={L}"
        ax, tables[key] = plot.overlay(law, eig, ax=ax, label="fisher_law")       # narrow bands: fine bins
        m = fisher.fisher_moments(net, 2)
        tables[key].attrs.update(depth=L, lambda_max=law.hull()[1], lambda_max_mc=mc_max[L], m1_theory=m[0],
                                 m1_mc=float(eig.mean()), m2_theory=m[1], m2_mc=float(np.mean(eig ** 2)))
        ax.set(xlabel="eigenvalue of Θ (Fisher dual / NTK)",
               title=f"L = {L}: continuous mass {law.continuous_mass:.3f}\nλ_max = {law.hull()[1]:.4f} "
                     f"(MC {mc_max[L]:.4f})")

    depths = np.array(lmax_depths, dtype=float)
    lmax = np.array([laws[L].hull()[1] for L in lmax_depths])
    slope, intercept = np.polyfit(depths, lmax, 1)
    fit = slope * depths + intercept
    rel_resid = float(np.sqrt(np.mean((lmax - fit) ** 2)) / np.mean(lmax))
    t = pd.DataFrame({"depth": lmax_depths, "lambda_max": lmax, "lambda_max_fit": fit,
                      "lambda_max_mc": [mc_max.get(L, np.nan) for L in lmax_depths],
                      "critical_learning_rate": 2.0 / lmax, "slope": slope, "intercept": intercept,
                      "rel_residual": rel_resid})
    t.attrs.update(slope=float(slope), intercept=float(intercept), rel_residual=rel_resid)
    tables["lambda_max vs depth"] = t
    ax = axes[-1]
    ax.plot(depths, lmax, "ko", ms=5, label="fisher_law(net).hull()[1]")
    ax.plot(depths, fit, "C3-", lw=1,
            label=f"fit {slope:.4f}·L + {intercept:.4f} (rel. resid. {rel_resid:.1e})")
    ax.plot(list(mc_max), list(mc_max.values()), "C0x", ms=8, label="Monte Carlo largest eigenvalue")
    ax.set(xlabel="depth L", ylabel="λ_max", title="λ_max of the Fisher/NTK vs depth\n(right: critical learning "
                                                    "rate 2/λ_max)")
    ax.legend(fontsize=7, loc="upper center")
    ax2 = ax.twinx()
    ax2.plot(depths, 2.0 / lmax, "C2s--", ms=4, lw=1)
    ax2.set_ylabel("2/λ_max", color="C2")
    fig.suptitle(f"One-sample Fisher/NTK spectrum, {ACT}, {WEIGHTS} weights, σ_w = {_net(1, n).sigma_w:.4f}, "
                 f"σ_b = {SIGMA_B}, linear read-out: fisher_law vs Monte Carlo (N = {n}, {draws} draw(s))")
    path = plot.save(fig, Path(outdir) / "ntk_spectrum.png", tables)
    return path, tables


if __name__ == "__main__":
    a = cli.script_args(__doc__, "N = 2000, depths up to 12 (several minutes)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    for k, v in t.items():
        if "ks" in v.attrs:
            print(f"{k:14s} KS = {v.attrs['ks']:.4f}   λ_max {v.attrs['lambda_max']:.6f} "
                  f"(MC {v.attrs['lambda_max_mc']:.6f})   m1 {v.attrs['m1_theory']:.4f} (MC {v.attrs['m1_mc']:.4f})")
    s = t["lambda_max vs depth"]
    print(s[["depth", "lambda_max", "lambda_max_fit", "critical_learning_rate"]].to_string(index=False))
    print(f"λ_max ≈ {s.attrs['slope']:.5f}·L + {s.attrs['intercept']:.5f}, relative residual "
          f"{s.attrs['rel_residual']:.2e}")
    print("wrote", p)
