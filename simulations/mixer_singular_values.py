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

import numpy as np
import pandas as pd
import torch

from rmtnet import cli, figures, plot
from rmtnet.nets import MaskedLinear, PermutedMixing, TokenMixing, effective_singular_values
from rmtnet.spectra import MarchenkoPastur, mixer

GAMMA = 2
KINDS = {"swmlp": "SW-MLP M ⊙ W", "mixer": "Mixer kron(W, I_C)", "rp": "RP-Mixer P₁(I ⊗ W)P₂"}
LAW = MarchenkoPastur(1.0 / GAMMA, scale=float(GAMMA))        # nonzero squared singular values
SIZES = {"tiny": dict(sizes=(4, 6), seeds=2), "quick": dict(sizes=(8, 16, 32, 48), seeds=5),
         "full": dict(sizes=(8, 16, 32, 64, 96), seeds=5)}


def main(full=False, outdir="figures", seed=0, backend=None):
    return figures.make("mixer_singular_values", compute, draw, full, outdir, seed, backend)


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


def compute(size="quick", seed=0, backend=None):
    """Tables "runs" (per model, size and seed), "summary" (per model and width) and the pooled SW-MLP histogram
    at the largest size; the mean singular values per (model, S) go to the drawing."""
    s = figures.settings(SIZES, size)
    seeds = figures.seeds(seed, s["seeds"])
    c_g = mixer.c_gamma(GAMMA)
    sv = {(k, S): np.array([singular_values(k, S, sd) for sd in seeds]) for k in KINDS for S in s["sizes"]}
    rows = []
    for (k, S), a in sv.items():
        for sd, v in zip(seeds, a):
            rows.append(dict(model=k, tokens=S, channels=S, width=S * S, density=1.0 / S, seed=sd, sv_max=v[0],
                             c_gamma=c_g, mp_regime=mixer.mp_regime(1.0 / S, S * S),
                             ks=plot.ks_distance(LAW, v ** 2)))
    runs = pd.DataFrame(rows)
    summary = runs.groupby(["model", "width"]).agg(sv_max_mean=("sv_max", "mean"), sv_max_std=("sv_max", "std"),
                                                   ks_mean=("ks", "mean"), mp_regime=("mp_regime", "first"))
    last = s["sizes"][-1]
    hist = plot.histogram(LAW, sv[("swmlp", last)].ravel() ** 2, label="MarchenkoPastur(1/γ, scale γ)")
    mean_sv = {key: a.mean(0) for key, a in sv.items()}
    return figures.Tables({"runs": runs, "summary": summary.reset_index(),
                           f"swmlp histogram m={last * last}": hist.table},
                          extras=dict(s, c_gamma=c_g, mean_sv=mean_sv, hist=hist))


def _draw_ranks(ax, curves, c_g, legend_edge):
    u = np.linspace(0.0005, 0.9995, 400)
    for label, mean, kw in curves:
        ax.plot(np.arange(1, mean.size + 1) / mean.size, mean, label=label, **kw)
    ax.plot(u, np.sqrt(LAW.quantile(1 - u)), "k--", lw=1, label="MP quantiles")
    ax.axhline(c_g, color="red", lw=1.2, **({"label": f"c_γ = 1 + √γ = {c_g:.4f}"} if legend_edge else {}))


_M = np.geomspace(np.e ** 2, 1e12, 4001)           # √m / log m increases from m = e² on: tabulated for its inverse


def _sparsity_ratio(m):
    """p·m / log m = √m / log m at S = C = √m, p = 1/C (clamped at m = e², where it is least)."""
    m = np.maximum(np.asarray(m, float), np.e ** 2)
    return np.sqrt(m) / np.log(m)


def _width_at_ratio(r):
    """The inverse of :func:`_sparsity_ratio` on m ≥ e² (the top axis's ticks are placed through it)."""
    return np.interp(r, _sparsity_ratio(_M), _M)


def draw(tables):
    x = tables.extras
    sizes, c_g, sv, S = x["sizes"], x["c_gamma"], x["mean_sv"], x["sizes"][-1]
    import matplotlib.pyplot as plt
    fig, axes = figures.subplots(1, 4, 5, 4.4)
    axes = axes[0]
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, len(sizes)))         # red is kept for c_γ
    _draw_ranks(axes[0], [(f"m = {n * n} (p·m/log m = {mixer.mp_regime(1 / n, n * n):.1f})", sv[("swmlp", n)],
                           dict(color=colours[i], lw=1.2)) for i, n in enumerate(sizes)], c_g, True)
    figures.style(axes[0], xlabel="rank / m", ylabel=f"singular value (mean over {x['seeds']} seeds)",
                  title="SW-MLP, p = 1/C, S = C")
    _draw_ranks(axes[1], [(name, sv[(k, S)], dict(color=f"C{i}", lw=1.2 if k != "rp" else 2.5,
                                                  alpha=1 if k != "rp" else 0.45))
                          for i, (k, name) in enumerate(KINDS.items())], c_g, False)
    figures.style(axes[1], xlabel="rank / m", title=f"the three models at m = {S * S} (S = C = {S})")
    ax, summary = axes[2], tables["summary"]
    for i, (k, name) in enumerate(KINDS.items()):
        t = summary[summary.model == k]
        ax.errorbar(t.width * (1 + 0.03 * (i - 1)), t.sv_max_mean, yerr=t.sv_max_std, fmt="o-", capsize=3,
                    color=f"C{i}", label=name)
    ax.axhline(c_g, color="red", lw=1.2, label="c_γ")
    ax.set_xscale("log")                                  # the limits are final before the top axis copies them
    top = ax.twiny()                                      # p·m / log m at the same positions (a monotone map of m)
    top.set(xscale="log", xlim=ax.get_xlim())
    lo, hi = _sparsity_ratio(np.array(ax.get_xlim()))
    ticks = [r for r in (1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 70, 100) if lo <= r <= hi]
    top.set_xticks(_width_at_ratio(np.array(ticks, float)), [f"{r:g}" for r in ticks])
    top.minorticks_off()
    top.set_xlabel("p·m / log m = √m / log m", fontsize=8)
    figures.style(ax, xscale="log", xlabel="effective width m = S·C", ylabel="largest singular value",
                  title="edge against width (mean ± std over seeds)")
    plot.draw_histogram(axes[3], x["hist"])
    axes[3].set(xlabel="squared singular value", title=f"SW-MLP at m = {S * S}, {x['seeds']} seeds pooled")
    fig.suptitle("Effective weights at initialisation: sparse mask vs Kronecker vs random permutation "
                 "(after Hayase & Karakida 2024, width figure, right)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "S = C up to 96 (m = 9216; a few minutes)")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("summary",))
