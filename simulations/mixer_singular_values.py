"""Singular values of the effective weights of SW-MLP, MLP-Mixer and RP-Mixer at initialisation against the
Marchenko–Pastur prediction and its edge c_γ (the right panel of Hayase & Karakida's width figure, ICML 2024,
arXiv 2306.01470).

Convention (rmtnet.spectra.mixer, after Hayase & Karakida 2024): S = C tokens and channels, effective width m = S·C, expansion γ = 2;
the layer is the token-like expansion m → γm. SW-MLP: M ⊙ W with a static Bernoulli mask of density p = 1/C and kept
entries N(0, 1/(p·m)) (rmtnet.nets.MaskedLinear), whose m nonzero squared singular values follow
MarchenkoPastur(1/γ, scale γ) — the eigenvalues of WᵀW — with largest singular value → c_γ = 1 + √γ, when
p·m = S ≫ log m. Mixer: kron(W, I_C) with W (γS × S) ~ N(0, 1/S) (rmtnet.nets.layers.TokenMixing); RP-Mixer:
P₁(I_C ⊗ W)P₂ (PermutedMixing). Both have W's singular values each repeated C times
(rmtnet.nets.effective_singular_values; no Kronecker product is built), so at finite S their spectrum is that of one
S-sized matrix: the same MP law in the limit, but a staircase with edge fluctuations of order S^{-2/3}, not m^{-2/3}.

Panels: (1) SW-MLP singular values sorted descending and averaged over seeds (the seed's blue line) for each m, with
the MP quantile curve and c_γ (red); (2) the same at the largest m for the three models; (3) the largest singular value
against m (mean ± std over seeds) with p·m/log m, the regime parameter, on the top axis; (4) the histogram of SW-MLP's
squared singular values at the largest m against the MP density (KS in the legend and the CSV).
Quick mode (default): S = C ∈ {8, 16, 32, 48} (m up to 2304), 5 seeds, a few seconds.
``--full``: S = C ∈ {8, 16, 32, 64, 96} (m up to 9216), 5 seeds (a few minutes).
Writes figures/mixer_singular_values.png and figures/mixer_singular_values.csv.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from rmtnet import cli, plot
from rmtnet.nets import MaskedLinear, PermutedMixing, TokenMixing, effective_singular_values
from rmtnet.spectra import MarchenkoPastur, mixer

GAMMA = 2


def singular_values(kind, S, seed):
    """Descending singular values (m of them) of the token-like expansion layer of ``kind`` at S = C, from ``seed``."""
    C, m = S, S * S
    if kind == "swmlp":
        w = MaskedLinear(m, GAMMA * m, density=1.0 / C, bias=False, seed=seed, dtype=torch.float64)
        w = w.effective_weight().detach().numpy()
        return np.sqrt(np.clip(np.linalg.eigvalsh(w.T @ w), 0, None))[::-1]       # WᵀW: m × m, no zero atom
    layer = (TokenMixing(S, GAMMA * S, bias=False, seed=seed, dtype=torch.float64) if kind == "mixer" else
             PermutedMixing(C, S, GAMMA * S, bias=False, seed=seed, dtype=torch.float64))
    holder = torch.nn.Module()
    holder.layer = layer
    return effective_singular_values(holder, tokens=S, channels=C)["layer"]


def main(full=False, outdir="figures", seed=0, backend=None):
    sizes = (8, 16, 32, 64, 96) if full else (8, 16, 32, 48)
    seeds = range(seed, seed + 5)
    law = MarchenkoPastur(1.0 / GAMMA, scale=float(GAMMA))        # nonzero squared singular values
    c_g = mixer.c_gamma(GAMMA)
    kinds = {"swmlp": "SW-MLP M ⊙ W", "mixer": "Mixer kron(W, I_C)", "rp": "RP-Mixer P₁(I ⊗ W)P₂"}
    sv = {(k, S): np.array([singular_values(k, S, s) for s in seeds]) for k in kinds for S in sizes}
    rows = []
    for (k, S), a in sv.items():
        for s, v in zip(seeds, a):
            rows.append(dict(model=k, tokens=S, channels=S, width=S * S, density=1.0 / S, seed=s, sv_max=v[0],
                             c_gamma=c_g, mp_regime=mixer.mp_regime(1.0 / S, S * S),
                             ks=plot.ks_distance(law, v ** 2)))
    runs = pd.DataFrame(rows)

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.4), layout="constrained")
    ax = axes[0]
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, len(sizes)))         # red is kept for c_γ
    for i, S in enumerate(sizes):
        mean = sv[("swmlp", S)].mean(0)
        ax.plot(np.arange(1, mean.size + 1) / mean.size, mean, color=colours[i], lw=1.2,
                label=f"m = {S * S} (p·m/log m = {mixer.mp_regime(1 / S, S * S):.1f})")
    u = np.linspace(0.0005, 0.9995, 400)
    ax.plot(u, np.sqrt(law.quantile(1 - u)), "k--", lw=1, label="MP quantiles")
    ax.axhline(c_g, color="red", lw=1.2, label=f"c_γ = 1 + √γ = {c_g:.4f}")
    ax.set(xlabel="rank / m", ylabel="singular value (mean over 5 seeds)", title="SW-MLP, p = 1/C, S = C")
    ax.legend(fontsize=7)

    ax = axes[1]
    S = sizes[-1]
    for i, (k, name) in enumerate(kinds.items()):
        mean = sv[(k, S)].mean(0)
        ax.plot(np.arange(1, mean.size + 1) / mean.size, mean, color=f"C{i}", lw=1.2 if k != "rp" else 2.5,
                alpha=1 if k != "rp" else 0.45, label=name)
    ax.plot(u, np.sqrt(law.quantile(1 - u)), "k--", lw=1, label="MP quantiles")
    ax.axhline(c_g, color="red", lw=1.2)
    ax.set(xlabel="rank / m", title=f"the three models at m = {S * S} (S = C = {S})")
    ax.legend(fontsize=7)

    ax = axes[2]
    summary = runs.groupby(["model", "width"]).agg(sv_max_mean=("sv_max", "mean"), sv_max_std=("sv_max", "std"),
                                                   ks_mean=("ks", "mean"), mp_regime=("mp_regime", "first"))
    summary = summary.reset_index()
    for i, (k, name) in enumerate(kinds.items()):
        t = summary[summary.model == k]
        ax.errorbar(t.width * (1 + 0.03 * (i - 1)), t.sv_max_mean, yerr=t.sv_max_std, fmt="o-", capsize=3,
                    color=f"C{i}", label=name)
    ax.axhline(c_g, color="red", lw=1.2, label="c_γ")
    ax.set(xscale="log", xlabel="effective width m = S·C", ylabel="largest singular value",
           title="edge against width (mean ± std over seeds)")
    top = ax.secondary_xaxis("top", functions=(lambda m: np.sqrt(np.maximum(m, 1)) / np.log(np.maximum(m, 2)),
                                               lambda r: r))
    top.set_xlabel("p·m / log m = √m / log m", fontsize=8)
    ax.legend(fontsize=7)

    ax = axes[3]
    ax, hist = plot.overlay(law, sv[("swmlp", S)].ravel() ** 2, ax=ax, label="MarchenkoPastur(1/γ, scale γ)")
    ax.set(xlabel="squared singular value", title=f"SW-MLP at m = {S * S}, 5 seeds pooled")
    fig.suptitle("Effective weights at initialisation: sparse mask vs Kronecker vs random permutation "
                 "(after Hayase & Karakida 2024, width figure, right)")
    tables = {"runs": runs, "summary": summary, f"swmlp histogram m={S * S}": hist}
    path = plot.save(fig, Path(outdir) / "mixer_singular_values.png", tables)
    return path, tables


if __name__ == "__main__":
    a = cli.script_args(__doc__, "S = C up to 96 (m = 9216; a few minutes)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    print(t["summary"].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("wrote", p)
