"""Spectra of trained networks against their laws at initialisation: MLP, MLP-Mixer, RP-Mixer, SW-MLP (static masks)
and EMN trained (MNIST-5k; EMN on its own graph task) and every weight layer audited before and after training by
rmtnet.nets.layer_spectra — the KS distance of its squared singular values to the law it started from (MP of its
shape and σ_w; for a static mask the mask-weighted law given its own mask; for the Mixer's Kronecker layers MP of W's
own shape, each value repeated C or S times), the outliers past the law's edge, the spikes past the Tracy–Widom
margin with their BBP strength θ̂ (Benaych-Georges & Nadakuditi, J. Multivariate Anal. 2012), and the power-law tail
exponent α of Clauset, Shalizi & Newman (SIAM Review 2009), as weightwatcher reads it (Martin & Mahoney, JMLR 2021,
arXiv 1810.01075). For the MLP (Fan & Wang's network: normalised tanh, σ_w = 1, no biases) also the input–output
Jacobian JJᵀ over 8 training images and the NTK over n_kernel of them against jacobian_law and ntk_law of its
description (KS, KS of the shape, λ_max/edge).

Setting: rmtnet.studies.trained_spectra (cross-entropy, SGD with momentum 0.9, batch 128, lr 0.05; Mixers on 7 × 7
patches, S = 16, depth 2; EMN on n nodes by Algorithm 1 of Luntzel 2023, lr 0.1, one meta-epoch).
Top row: per model, the eigenvalue histogram of its largest hidden layer at initialisation (grey) and trained
(colour) over the MP law at initialisation of its shape (black; for SW-MLP the MP limit, while its KS in the table is
to the mask-weighted law), the law's edge dashed, the range cut at twice the edge (eigenvalues beyond it counted in
the title).
Bottom row: per layer, KS at initialisation and trained against the DKW band (ticks), spikes after training
annotated.
Quick mode (default): MLP width 128, Mixer C = 16, EMN n = 20, 3 epochs, 1 seed (≈ 30 s on one core).
``--full``: MLP width 256, C = 24, EMN n = 40, 10 epochs, 3 seeds, NTK over 200 images (measured: 5.8 minutes of
runs, 4.3 minutes wall on 2 cores). Writes figures/trained_spectra.png and figures/trained_spectra.csv
(trained_spectra_full.* with --full); the runs (resumable) go to figures/trained_spectra_runs.csv
(trained_spectra_full_runs.csv) and the initial and trained weights to figures/trained_spectra_weights/
(trained_spectra_full_weights/).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from rmtnet import cli, experiments, figures
from rmtnet.spectra.diagnostics import layer_law
from rmtnet.studies import trained_spectra as ts

NAMES = {"mlp": "MLP", "mixer": "MLP-Mixer", "rp": "RP-Mixer", "swmlp": "SW-MLP", "emn": "EMN"}
SIZES = {"tiny": dict(width=16, channels=4, n_nodes=6, epochs=1, seeds=1, n_kernel=12, n_train=256, jacobian=False),
         "quick": dict(width=128, channels=16, n_nodes=20, epochs=3, seeds=1, n_kernel=120, n_train=None,
                       jacobian=True),
         "full": dict(width=256, channels=24, n_nodes=40, epochs=10, seeds=3, n_kernel=200, n_train=None,
                      jacobian=True)}
LR = {"mlp": 0.05, "mixer": 0.05, "rp": 0.05, "swmlp": 0.05, "emn": 0.1}
TABLE = ["model", "seed", "stage", "layer", "kind", "shape", "law", "n_eigs", "ks", "ks_noise", "edge", "lambda_max",
         "outliers", "spikes", "theta_c", "spike_thetas", "alpha", "alpha_se", "x_min", "n_tail", "scale", "ratio"]


def main(full=False, outdir="figures", seed=0, backend=None, n_jobs=-1, **overrides):
    name = "trained_spectra_full" if full else "trained_spectra"
    return figures.make(name, compute, draw, full, outdir, seed, backend, store=outdir, n_jobs=n_jobs, **overrides)


def configs(s):
    """One configuration per model."""
    width = {"mlp": s["width"], "emn": s["n_nodes"]}
    return [dict(model=m, width=width.get(m, s["channels"]), epochs=s["epochs"], lr=LR[m], n_nodes=s["n_nodes"],
                 n_kernel=s["n_kernel"], n_train=s["n_train"], jacobian=s["jacobian"]) for m in NAMES]


def _largest_hidden(table):
    t = table[(table.stage == "init") & ~table.layer.isin(["head", "stem"]) & ~table.layer.str.endswith(".2")
              & (table.kind != "cluster")]
    return t.sort_values("n_eigs", ascending=False, kind="stable").iloc[0]


def _histograms(runs, layers, seed):
    rows = []
    for model in NAMES:
        row = _largest_hidden(layers[(layers.model == model) & (layers.seed == seed)])
        n_out, n_in = (int(v) for v in row["shape"].split("x"))
        law = layer_law(n_out, n_in, row.sigma_w)
        eigs = ts.eigenvalues(runs, model, seed, row.layer)
        hi = min(max(law.edges[1], *(e.max() for e in eigs.values())), 2 * law.edges[1]) * 1.02
        edges = np.linspace(0.0, hi, 41)
        centres = (edges[:-1] + edges[1:]) / 2
        for stage, e in eigs.items():          # density of all n eigenvalues; those beyond the range are counted
            density = np.histogram(e, bins=edges)[0] / (e.size * (edges[1] - edges[0]))
            rows += [dict(model=model, layer=row.layer, stage=stage, x=c, density=d, law_density=p, law_edge=row.edge,
                          beyond=int(np.sum(e > hi))) for c, d, p in zip(centres, density, law.pdf(centres))]
    return pd.DataFrame(rows)


def compute(size="quick", seed=0, backend=None, store="figures", n_jobs=-1, **overrides):
    """Tables "layers" (one row per model, seed, stage and layer), "kernels" (the MLP's Jacobian and NTK against
    their laws), "runs" (test error, loss, time per run) and "histograms" (the top row). Runs are kept in
    STORE/trained_spectra_runs.csv (_full at the full size), weights in STORE/trained_spectra_weights."""
    s = figures.settings(SIZES, size, **overrides)
    name = "trained_spectra_full" if size in (True, "full") else "trained_spectra"
    out = figures.output_dir(store)
    run = functools.partial(ts.spectra_run, weights_dir=str(out / f"{name}_weights"))
    run.__module__, run.__name__ = ts.spectra_run.__module__, ts.spectra_run.__name__
    runs = experiments.sweep(run, configs(s), seeds=figures.seeds(seed, s["seeds"]),
                             store=out / f"{name}_runs.csv", n_jobs=n_jobs,
                             nonfinite="ignore")         # test_error: NaN for the EMN (no test split)
    layers = ts.layer_table(runs)
    layers["spike_thetas"] = layers.spike_thetas.map(lambda t: ";".join(f"{v:.4g}" for v in t))
    kernels = ts.kernel_table(runs)
    summary = runs[["model", "seed", "width", "epochs", "lr", "train_loss", "test_error", "wall_s"]].copy()
    return figures.Tables({"layers": layers[TABLE + ["sigma_w"]], "kernels": kernels, "runs": summary,
                           "histograms": _histograms(runs, layers, int(runs.seed.iloc[0]))}, extras=s)


def _layer_name(path, short=False):
    """A readable name of a layer's module path: "layers.0" → "layer 1"; "blocks.2.f.layer1" → "token mixing 2,
    layer 1" ("T2.1" short; the Mixers' sub-blocks alternate token, channel); "hidden.0" → "hidden 1"."""
    parts = path.split(".")
    if parts[0] == "blocks" and len(parts) == 4:
        b, j = int(parts[1]), parts[3].removeprefix("layer")
        kind = ("token", "channel")[b % 2]
        return f"{kind[0].upper()}{b // 2 + 1}.{j}" if short else f"{kind} mixing {b // 2 + 1}, layer {j}"
    if parts[0] in ("layers", "hidden") and len(parts) == 2:
        return f"{'layer' if parts[0] == 'layers' else 'hidden'} {int(parts[1]) + 1}"
    return path


def _draw_histogram(ax, h, model, colour):
    for stage, kw in (("init", dict(color="0.6", lw=1.2)), ("trained", dict(color=colour, lw=1.5))):
        t = h[h.stage == stage]
        ax.step(t.x, t.density, where="mid", label=stage, **kw)
    t = h[h.stage == "init"]
    ax.plot(t.x, t.law_density, "k-", lw=1, label="law at init")
    ax.axvline(t.law_edge.iloc[0], color="k", ls="--", lw=0.8)
    beyond = int(h[h.stage == "trained"].beyond.iloc[0])
    figures.style(ax, xlabel="eigenvalue of WᵀW (squared singular value)", legend=6,
                  title=f"{NAMES[model]}: {_layer_name(t.layer.iloc[0])}" + (f" (+{beyond} trained beyond)" if beyond
                                                                              else ""), title_size=10)


def _draw_ks(ax, t, colour, note=""):
    init, trained = t[t.stage == "init"], t[t.stage == "trained"]
    x = np.arange(len(init))
    ax.bar(x - 0.2, init.ks, 0.4, color="0.6", label="KS at init")
    ax.bar(x + 0.2, trained.ks, 0.4, color=colour, label="KS trained")
    ax.plot(x, init.ks_noise, "k_", ms=12, label="DKW 99 % band")
    for xi, n in zip(x, trained.spikes):
        if n:
            ax.annotate(f"{n}", (xi + 0.2, 0.02), ha="center", fontsize=7, color="white")
    ax.set_xticks(x, [_layer_name(name, short=True) for name in init.layer], rotation=70, fontsize=6)
    mixing = any(name.startswith("blocks.") for name in init.layer)
    top = max(float(init.ks.max()), float(trained.ks.max()), float(init.ks_noise.max()))
    figures.style(ax, ylabel="KS to the law at init", legend=None, ylim=(0, 1.5 * top), title_size=9,
                  xlabel="layer (T/C k.j: token/channel mixing k, layer j)" if mixing else "layer",
                  title="per layer (white numbers: spikes after training)" + note)
    ax.legend(fontsize=6, loc="upper left")             # above the bars: the axis has room over the tallest


def draw(tables):
    fig, axes = figures.subplots(2, len(NAMES), 3.6, 3.4)
    layers, hist = tables["layers"], tables["histograms"]
    seed = layers.seed.min()
    k, note = tables["kernels"], ""
    if "jacobian_lambda_max_ratio" in k:
        t = k[k.seed == k.seed.min()].set_index("stage")
        note = (f"\nMLP λ_max/edge, init → trained: NTK {t.ntk_lambda_max_ratio['init']:.2f} → "
                f"{t.ntk_lambda_max_ratio['trained']:.2f}; JJᵀ {t.jacobian_lambda_max_ratio['init']:.2f}"
                f" → {t.jacobian_lambda_max_ratio['trained']:.2f}")
    for i, model in enumerate(NAMES):
        _draw_histogram(axes[0][i], hist[hist.model == model], model, f"C{i}")
        _draw_ks(axes[1][i], layers[(layers.model == model) & (layers.seed == seed)], f"C{i}",
                 note if model == "mlp" else "")
    fig.suptitle("Trained layers against their laws at initialisation: the KS distance of each layer's squared "
                 "singular values to its law, outliers and spikes\n(Benaych-Georges & Nadakuditi 2012), as in the "
                 "spectral audits of trained networks of Martin & Mahoney (JMLR 2021)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "MLP width 256, C = 24, 10 epochs, 3 seeds (about 6 minutes of runs)")
    figures.report(main(a.full, a.outdir, a.seed, a.backend), tables=("runs", "kernels"))
