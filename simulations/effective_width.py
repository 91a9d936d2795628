"""Test error against effective width at a fixed connection budget Ω: MLP-Mixer, RP-Mixer and SW-MLP on MNIST-5k
(the left panel of Hayase & Karakida's width figure, ICML 2024, arXiv 2306.01470; the "wider at fixed parameters"
hypothesis of Golubeva, Neyshabur & Gur-Ari, ICLR 2021).

Convention (rmtnet.spectra.mixer): S tokens × C channels, expansion γ = 2, effective width m = S·C, budget
Ω = γ(CS² + SC²)/2 nonzero weights per mixing layer. The tokens are the patches of the 28×28 digits (patch sizes
14, 10, 7, 6, 5 give S = 4, 9, 16, 25, 36, zero-padding where the patch does not divide 28); for each S the channels are
C = round((√(S² + 8Ω/(γS)) − S)/2), the budget solved for C (:func:`rmtnet.spectra.mixer.tokens_for_channels` with S
and C exchanged: Ω is symmetric in them), so every point spends about the same Ω; the largest width is at S* = C* = (Ω/γ)^{1/3}. SW-MLP replaces each Kronecker layer by a
static random mask of the same density (1/C token-like, 1/S channel-like). All three read out the whole m-vector
(``pool="flatten"``, so a small C is not a bottleneck before the 10-way head), two blocks, GELU, AdamW with a one-cycle
schedule. Each configuration is run for several seeds through rmtnet.experiments.sweep (local processes), whose
results table ``figures/effective_width_runs.csv`` is appended run by run: an interrupted run of this script resumes
where it stopped.

Quick mode (default): Ω/γ = 16³ (S* = C* = 16), S ∈ {4, 9, 16, 25, 36}, 10 epochs, 3 seeds (45 runs, a few minutes on
2 cores). ``--full``: Ω/γ = 25³ (S* = C* = 25), S ∈ {4, 9, 16, 25, 36, 49, 100}, 20 epochs, 5 seeds (roughly an hour
on 2 cores).
``--backend cupy`` trains on the GPU (torch's CUDA device).
Writes figures/effective_width.png and figures/effective_width.csv (per-configuration mean ± std and the runs).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from rmtnet import cli, experiments, plot
from rmtnet._backend import torch_device
from rmtnet.studies.mixer_width import width_run
from rmtnet.spectra import mixer

GAMMA = 2.0
PATCH_FOR_TOKENS = {4: 14, 9: 10, 16: 7, 25: 6, 36: 5, 49: 4, 100: 3}     # 28×28 images, zero-padded
MODELS = {"mixer": "MLP-Mixer", "rp": "RP-Mixer", "swmlp": "SW-MLP (static mask)"}


def settings(full, **overrides):
    """side = S* = C* (so Ω = γ·side³), the token counts, epochs and seeds of quick or full mode (``overrides``
    replace any of them)."""
    s = (dict(side=25, tokens=(4, 9, 16, 25, 36, 49, 100), epochs=20, seeds=5) if full else
         dict(side=16, tokens=(4, 9, 16, 25, 36), epochs=10, seeds=3))
    return {**s, **overrides}


def grid(s, device="cpu"):
    """Ω and the sweep's configurations; ``device`` (the torch device) enters the configurations only when it is not
    the CPU, so a GPU run has its own rows in the store."""
    omega = GAMMA * s["side"] ** 3
    configs = []
    for S in s["tokens"]:
        C = max(1, int(round(mixer.tokens_for_channels(S, omega, GAMMA))))     # the budget is symmetric in S, C
        for model in MODELS:
            configs.append(dict(model=model, patch=PATCH_FOR_TOKENS[S], channels=C, epochs=s["epochs"], gamma=GAMMA,
                                **({} if device == "cpu" else {"device": device})))
    return omega, configs


def summarise(runs):
    """Mean, standard deviation and count of the test error per (model, S, C), with m and the realised Ω."""
    g = runs.groupby(["model", "tokens", "channels"], sort=True)
    out = g.agg(width=("width", "first"), expanded_width=("expanded_width", "first"),
                connections=("connections", "first"), test_error_mean=("test_error", "mean"),
                test_error_std=("test_error", "std"), train_error_mean=("train_error", "mean"),
                seeds=("test_error", "size")).reset_index()
    out["s_over_c"] = out.tokens / out.channels
    return out


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    s = settings(full, **overrides)
    omega, configs = grid(s, torch_device(backend))
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = experiments.sweep(width_run, configs, seeds=range(seed, seed + s["seeds"]),
                             store=outdir / "effective_width_runs.csv", n_jobs=n_jobs)
    summary = summarise(runs)
    best = summary.loc[summary.groupby("model").test_error_mean.idxmin()].set_index("model")
    summary.attrs.update(omega=omega, s_star=s["side"],
                         **{f"argmin_tokens_{m}": int(best.loc[m, "tokens"]) for m in best.index},
                         **{f"argmin_s_over_c_{m}": float(best.loc[m, "s_over_c"]) for m in best.index})

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for i, (model, label) in enumerate(MODELS.items()):
        t = summary[summary.model == model].sort_values("tokens")          # the path S = 4 → 36 (m rises, then falls)
        off = (i - 1) * 0.012 * t.expanded_width                      # small offsets so error bars don't overlap
        axes[0].errorbar(t.expanded_width + off, t.test_error_mean, yerr=t.test_error_std, fmt="o-", capsize=3,
                         label=label, color=f"C{i}")
        t2 = t.sort_values("s_over_c")
        axes[1].errorbar(t2.s_over_c * (1 + (i - 1) * 0.04), t2.test_error_mean, yerr=t2.test_error_std, fmt="o-",
                         capsize=3, label=label, color=f"C{i}")
    for S, C, m in summary[summary.model == "mixer"][["tokens", "channels", "expanded_width"]].itertuples(index=False):
        axes[0].annotate(f"S={S}\nC={C}", (m, axes[0].get_ylim()[1]), fontsize=7, ha="center", va="top")
    axes[0].axvline(GAMMA * mixer.max_effective_width(omega, GAMMA), color="0.5", ls=":", lw=1,
                    label=f"max γm = γ(Ω/γ)^(2/3) = {GAMMA * mixer.max_effective_width(omega, GAMMA):.0f}")
    axes[0].set(xlabel="effective width γm = γ·S·C", ylabel="test error (mean ± std over seeds)",
                title=f"MNIST-5k, Ω = {omega:.0f} connections per layer, {s['seeds']} seeds")
    axes[1].axvline(1.0, color="0.5", ls=":", lw=1, label="S = C (largest m)")
    axes[1].set(xscale="log", xlabel="S / C", ylabel="test error", title="the same points against S/C")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle("Test error vs effective width at a fixed connection budget (after Hayase & Karakida 2024, width figure, left)")
    runs = runs.copy()
    path = plot.save(fig, outdir / "effective_width.png", {"summary": summary, "runs": runs})
    return path, {"summary": summary, "runs": runs}


if __name__ == "__main__":
    a = cli.script_args(__doc__, "Ω/γ = 25³, S up to 100, 20 epochs, 5 seeds (about an hour on 2 cores)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    s = t["summary"]
    print(s[["model", "tokens", "channels", "expanded_width", "connections", "test_error_mean", "test_error_std",
             "seeds"]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for m in MODELS:
        print(f"{m}: lowest mean test error at S = {s.attrs[f'argmin_tokens_{m}']} (S/C = "
              f"{s.attrs[f'argmin_s_over_c_{m}']:.2f}); the widest configuration is S = C = {s.attrs['s_star']}")
    print("wrote", p)
