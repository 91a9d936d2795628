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
Writes figures/cka_mixer_vs_swmlp.png and figures/cka_mixer_vs_swmlp.csv.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rmtnet import cli, plot
from rmtnet.nets import cka_between
from rmtnet.studies.mixer_width import fit

PATCH, CHANNELS, DEPTH = 7, 16, 2


def _layers(model):
    return ["stem"] + [f"blocks.{i}" for i in range(len(model.blocks))]


def main(full=False, outdir="figures", seed=0, backend=None):
    densities = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0) if full else (1 / 16, 1 / 4, 1.0)
    seeds, epochs = (range(seed, seed + 4), 20) if full else (range(seed, seed + 2), 8)
    rows, matrices, errors = [], {}, []
    for s in seeds:
        mixer, table, data = fit("mixer", PATCH, CHANNELS, depth=DEPTH, epochs=epochs, seed=s)
        errors.append(dict(model="mixer", density=np.nan, seed=s, test_error=table.test_error.iloc[-1]))
        batches = [data.x_test[i:i + 200] for i in range(0, data.n_test, 200)]
        for p in densities:
            sw, table, _ = fit("swmlp", PATCH, CHANNELS, depth=DEPTH, epochs=epochs, seed=s, density=p)
            errors.append(dict(model="swmlp", density=p, seed=s, test_error=table.test_error.iloc[-1]))
            m = cka_between(mixer, sw, batches, _layers(mixer), _layers(sw))
            matrices.setdefault(p, []).append(m)
            rows.append(dict(density=p, seed=s, mean_diagonal=float(np.mean(np.diag(m)))))
    diag = pd.DataFrame(rows)
    summary = diag.groupby("density").mean_diagonal.agg(["mean", "std", "size"]).reset_index()
    layers = _layers(mixer)

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3), layout="constrained")
    ax = axes[0]
    ax.errorbar(summary.density, summary["mean"], yerr=summary["std"], fmt="o-", capsize=3)
    ax.axvline(1 / CHANNELS, color="0.5", ls=":", label="p = 1/C (the Mixer's density)")
    ax.set(xscale="log", xlabel="density p of the SW-MLP", ylabel="mean diagonal CKA with the Mixer",
           title=f"(a) Mixer vs SW-MLP, S = C = {CHANNELS}, {len(seeds)} seeds")
    ax.legend(fontsize=7)
    tables = {"diagonal": diag, "diagonal summary": summary, "test errors": pd.DataFrame(errors)}
    for ax, p, tag in [(axes[1], densities[0], "(b) SW-MLP p = 1/C"), (axes[2], 1.0, "(c) dense MLP (p = 1)")]:
        m = np.mean(matrices[p], axis=0)
        im = ax.imshow(m, vmin=0, vmax=1, cmap="magma", origin="lower")
        ax.set(xticks=range(len(layers)), yticks=range(len(layers)), xlabel=f"{tag} layer", ylabel="Mixer layer",
               title=f"{tag}: mean diagonal {np.mean(np.diag(m)):.3f}")
        ax.set_xticklabels(layers, rotation=45, fontsize=7)
        ax.set_yticklabels(layers, fontsize=7)
        tables[f"cka matrix p={p:.4g}"] = pd.DataFrame(m, index=layers, columns=layers).reset_index(names="mixer_layer")
    fig.colorbar(im, ax=axes[1:], shrink=0.8, label="minibatch linear CKA")
    fig.suptitle("Hidden-feature similarity: MLP-Mixer vs static-mask sparse MLPs on MNIST-5k (after Hayase & Karakida 2024, CKA figure)")
    path = plot.save(fig, Path(outdir) / "cka_mixer_vs_swmlp.png", tables)
    return path, tables


if __name__ == "__main__":
    a = cli.script_args(__doc__, "five densities, 4 seeds, 20 epochs")
    p, t = main(a.full, a.outdir, a.seed, a.backend)
    print(t["diagonal summary"].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(t["test errors"].groupby(["model", "density"], dropna=False).test_error.mean().to_string())
    print("wrote", p)
