"""Centred kernel alignment between the hidden features of a trained MLP-Mixer and of static-mask sparse MLPs of
several densities (the CKA figure of Hayase & Karakida, ICML 2024, arXiv 2306.01470): the sparser the MLP, the
more Mixer-like its features.

Convention: S = C = 16 (7×7 patches of MNIST-5k digits), expansion γ = 2, two blocks, GELU, read-out of the whole
m = S·C vector, AdamW with a one-cycle schedule (rmtnet.studies.mixer_width.fit). SW-MLP with one density p in every layer;
p = 1/C = 1/16 is the Mixer's own density (its kron(W, I_C) and kron(I_S, V) layers have densities 1/C and 1/S), and
p = 1 is the dense MLP of width m. Features: the stem's output and each residual sub-block's output, (S, C) flattened
to m; minibatch linear CKA (Nguyen, Raghu & Kornblith 2021; rmtnet.nets.cka_between) over the test set in batches
of 200.

Panels: (a) the mean of the diagonal of the CKA matrix (same layer of both models) against p, mean ± std over seeds
(their panel a); (b) the full layer × layer CKA matrix, Mixer against SW-MLP at p = 1/C (panel b); (c) the same
against the dense MLP (panel c).
Quick mode (default): p ∈ {1/16, 1/4, 1}, 2 seeds, 8 epochs (about two minutes on 2 cores). ``--full``: p ∈ {1/16,
1/8, 1/4, 1/2, 1}, 4 seeds (as the paper), 20 epochs.

CIFAR-10 (the paper's data): ``compute(dataset="cifar10", data_dir=FOLDER)`` (or ``$RMTNET_CIFAR10=FOLDER``; FOLDER
holds the unpacked python batches, see rmtnet.nets.data.cifar10; nothing is downloaded), with 8 × 8 patches so that
S = 16 again (``patch=`` overrides it; C_in = 3·8² = 192); the official 50,000 / 10,000 split, so an epoch is 12.5
times MNIST-5k's.
Writes figures/cka_mixer_vs_swmlp.png and figures/cka_mixer_vs_swmlp.csv.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rmtnet import cli, figures
from rmtnet.nets import cka_between
from rmtnet.studies.mixer_width import fit

DEPTH = 2
NAMES = {"mnist5k": "MNIST-5k", "digits": "digits", "cifar10": "CIFAR-10"}
SIZES = {"tiny": dict(densities=(1 / 4, 1.0), seeds=1, epochs=1, dataset="digits", patch=2, channels=4),
         "quick": dict(densities=(1 / 16, 1 / 4, 1.0), seeds=2, epochs=8, dataset="mnist5k", patch=7, channels=16),
         "full": dict(densities=(1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0), seeds=4, epochs=20, dataset="mnist5k", patch=7,
                      channels=16)}


# the patch side that cuts each data set's images into S = 16 tokens (28 = 4·7, 8 = 4·2, 32 = 4·8)
PATCH_FOR_16_TOKENS = {"mnist5k": 7, "digits": 2, "cifar10": 8}


def main(full=False, outdir="figures", seed=0, backend=None, **overrides):
    return figures.make("cka_mixer_vs_swmlp", compute, draw, full, outdir, seed, backend, **overrides)


def settings(size, **overrides):
    """Densities, seeds, epochs, data set, patch and channels of a size; ``overrides`` replace any of them, and
    ``data_dir`` (CIFAR-10's folder) may be added. A data set given without a patch gets the patch that makes
    S = 16 tokens (:data:`PATCH_FOR_16_TOKENS`)."""
    s = figures.settings(SIZES, size, **overrides)
    if "dataset" in overrides and "patch" not in overrides:
        s["patch"] = PATCH_FOR_16_TOKENS[s["dataset"]]
    return s


def _layers(model):
    return ["stem"] + [f"blocks.{i}" for i in range(len(model.blocks))]


def _train(s, seed):
    """For one seed: the Mixer and an SW-MLP per density, their CKA matrices and test errors."""
    common = dict(depth=DEPTH, epochs=s["epochs"], seed=seed, dataset=s["dataset"], **figures.data_dir_argument(s))
    mixer, table, data = fit("mixer", s["patch"], s["channels"], **common)
    errors = [dict(model="mixer", density=np.nan, seed=seed, test_error=table.test_error.iloc[-1])]
    batches = [data.x_test[i:i + 200] for i in range(0, data.n_test, 200)]
    matrices = {}
    for p in s["densities"]:
        sw, table, _ = fit("swmlp", s["patch"], s["channels"], density=p, **common)
        errors.append(dict(model="swmlp", density=p, seed=seed, test_error=table.test_error.iloc[-1]))
        matrices[p] = cka_between(mixer, sw, batches, _layers(mixer), _layers(sw))
    return matrices, errors, _layers(mixer)


def compute(size="quick", seed=0, backend=None, **overrides):
    """Tables "diagonal" (per density and seed), "diagonal summary", "test errors" and the mean CKA matrices
    against the sparsest SW-MLP and the dense MLP. ``overrides``: see :func:`settings` (e.g. ``dataset="cifar10",
    data_dir=FOLDER``)."""
    s = settings(size, **overrides)
    rows, matrices, errors = [], {}, []
    for sd in figures.seeds(seed, s["seeds"]):
        found, err, layers = _train(s, sd)
        errors += err
        for p, m in found.items():
            matrices.setdefault(p, []).append(m)
            rows.append(dict(density=p, seed=sd, mean_diagonal=float(np.mean(np.diag(m)))))
    diag = pd.DataFrame(rows)
    summary = diag.groupby("density").mean_diagonal.agg(["mean", "std", "size"]).reset_index()
    tables = figures.Tables({"diagonal": diag, "diagonal summary": summary, "test errors": pd.DataFrame(errors)},
                            extras=s)
    for p in (s["densities"][0], 1.0):
        m = np.mean(matrices[p], axis=0)
        tables[f"cka matrix p={p:.4g}"] = pd.DataFrame(m, index=layers, columns=layers).reset_index(names="mixer_layer")
    return tables


def draw(tables):
    s = tables.extras
    fig, axes = figures.subplots(1, 3, 5, 4.3)
    axes = axes[0]
    summary = tables["diagonal summary"]
    axes[0].errorbar(summary.density, summary["mean"], yerr=summary["std"], fmt="o-", capsize=3)
    axes[0].axvline(1 / s["channels"], color="0.5", ls=":", label="p = 1/C (the Mixer's density)")
    figures.style(axes[0], xscale="log", xlabel="density p of the SW-MLP", ylabel="mean diagonal CKA with the Mixer",
                  title=f"(a) Mixer vs SW-MLP, S = C = {s['channels']}\nmean ± std over {s['seeds']} seeds")
    for ax, p, tag in [(axes[1], s["densities"][0], "(b) SW-MLP p = 1/C"), (axes[2], 1.0, "(c) dense MLP (p = 1)")]:
        t = tables[f"cka matrix p={p:.4g}"]
        layers, m = list(t.mixer_layer), t.drop(columns="mixer_layer").to_numpy()
        im = ax.imshow(m, vmin=0, vmax=1, cmap="magma", origin="lower")
        ax.set(xticks=range(len(layers)), yticks=range(len(layers)), xlabel=f"{tag} layer", ylabel="Mixer layer",
               title=f"{tag}: mean diagonal {np.mean(np.diag(m)):.3f}")
        ax.set_xticklabels(layers, rotation=45, fontsize=7)
        ax.set_yticklabels(layers, fontsize=7)
    fig.colorbar(im, ax=axes[1:], shrink=0.8, label="minibatch linear CKA")
    fig.suptitle(f"Hidden-feature similarity: MLP-Mixer vs static-mask sparse MLPs on {NAMES[s['dataset']]} "
                 "(after Hayase & Karakida 2024, CKA figure)")
    return fig


if __name__ == "__main__":
    a = cli.script_args(__doc__, "five densities, 4 seeds, 20 epochs")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    print(t["diagonal summary"].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(t["test errors"].groupby(["model", "density"], dropna=False).test_error.mean().to_string())
    print("wrote", p)
