"""How far training moves each layer's spectrum from the law it started from: MLP, MLP-Mixer, RP-Mixer, SW-MLP
(static masks) and EMN, each audited at initialisation and after training by :func:`rmtnet.nets.layer_spectra` (the
law at initialisation of every layer: MP of its shape, the mask-weighted law of a static mask, the Kronecker law of
the Mixer's layers; KS, outliers past the edge, spikes past the BBP/TW₁ margin, the Clauset–Shalizi–Newman tail
exponent), and for the MLP the input–output Jacobian and the NTK against ``jacobian_law`` / ``ntk_law`` of its
description (Martin & Mahoney, JMLR 22, 2021, arXiv 1810.01075, read trained layers without a law at
initialisation; here every number is against one).

Setting. Images of MNIST-5k (:func:`rmtnet.nets.data.mnist5k`, offline; 4000 training and 1000 test images).
MLP: Fan & Wang's network (NeurIPS 2020, arXiv 2005.11879) — widths 784 → w → w → 10, tanh normalised to unit
second moment, Gaussian σ_w = 1, no biases — on images centred by the training mean image and scaled to ‖x‖² = 784
(so q₀ = 1), so that both laws apply at initialisation. Mixers: 7 × 7 patches (S = 16 tokens of C_in = 49), C
channels, depth 2, expansion 2, mean pooling; SW-MLP on the same S and C with dense-stored masks of density 1/C and
1/S. All trained by :func:`rmtnet.nets.train` (cross-entropy, SGD, momentum 0.9, batch 128). EMN: Luntzel's
Ensemble Mask Network (arXiv 2309.06382) on n nodes, copies (1,), trained as its paper trains it
(:func:`rmtnet.studies.emn.train_emn`, Algorithm 1, target A x; its data are graphs, not images).

:func:`spectra_run` is one (model, seed) run for :func:`rmtnet.experiments.sweep` (resumable through its CSV
store); the layer tables, the kernels' numbers and the eigenvalues come back as JSON columns, unpacked by
:func:`layer_table`, :func:`kernel_table` and :func:`eigenvalues`. With ``weights_dir`` the initial and trained
state dicts are saved (``{model}-seed{seed}-{stage}.pt``) for side-by-side readings by other tools.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from rmtnet._io import output_path
from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar, runs_table
from rmtnet.nets import data as datasets
from rmtnet.nets.models import EMN, MLP, MLPMixer, RPMixer, SWMLP
from rmtnet.nets.spectral_audit import jacobian_against_law, ntk_against_law, spectrum_table, weight_spectra
from rmtnet.nets.training import train
from rmtnet.spectra.meanfield import normalised_activation
from rmtnet.spectra.network import mlp

__all__ = ["MODELS", "description", "build", "image_data", "spectra_run", "layer_table", "kernel_table",
           "eigenvalues"]

MODELS = ("mlp", "mixer", "rp", "swmlp", "emn")
IMAGE_MODELS = MODELS[:4]
N_TRAIN = 4000                                                  # MNIST-5k's training split
PATCH, TOKENS, IN_CHANNELS, DEPTH = 7, 16, 49, 2


def description(width):
    """The MLP's description: widths 784 → w → w → 10, normalised tanh, σ_w = 1, σ_b = 0, q₀ = 1.

    Examples
    --------
    >>> description(64).widths
    (784, 64, 64, 10)
    """
    width = integer_at_least("width", width)
    return mlp(3, widths=[784, width, width, 10], activation=normalised_activation("tanh"), last_activation=False,
               q0=1.0, sigma_w=1.0)


def build(model, width, seed, n_nodes=20):
    """The untrained network ``model`` ("mlp", "mixer", "rp", "swmlp", "emn") of width ``width`` (the MLP's hidden
    width, the Mixers' channels C; EMN: ``n_nodes`` nodes), seeded.

    Examples
    --------
    >>> type(build("rp", 8, seed=0)).__name__, build("mlp", 32, seed=0).widths
    ('RPMixer', (784, 32, 32, 10))
    """
    one_of("model", model, MODELS)
    width, seed = integer_at_least("width", width), integer_at_least("seed", seed, 0)
    n_nodes = integer_at_least("n_nodes", n_nodes, 2)
    if model == "mlp":
        return MLP.from_description(description(width), seed=seed)
    if model == "emn":
        return EMN(n_nodes, copies=(1,), seed=seed, dtype=torch.float64)
    cls = {"mixer": MLPMixer, "rp": RPMixer, "swmlp": SWMLP}[model]
    extra = dict(storage="dense") if model == "swmlp" else {}
    return cls(TOKENS, IN_CHANNELS, width, DEPTH, 10, seed=seed, **extra)


def image_data(model, seed=0, n_train=None):
    """MNIST-5k for ``model``: flattened, centred by the training mean image, each image scaled to ‖x‖² = 784
    (the MLP), or as 7 × 7 patches (the Mixers); the first ``n_train`` training images only, if given.

    Parameters
    ----------
    model : {"mlp", "mixer", "rp", "swmlp"}
        EMN trains on graphs, not images.
    seed : int, default 0
        The split's shuffle (≥ 0).
    n_train : int, optional
        1 ≤ n_train ≤ 4000 (None: all 4000).

    Returns
    -------
    rmtnet.nets.data.Dataset

    Examples
    --------
    EMN is refused before any image is read:

    >>> image_data("emn")
    Traceback (most recent call last):
    ...
    ValueError: model must be one of ...

    The MLP's images are flat with ‖x‖² = 784 each; the Mixers' are 16 patches of 7 · 7 = 49 pixels (skipped as a
    doctest: reading MNIST-5k takes about 3 s on one core):

    >>> x = image_data("mlp", n_train=10).x_train  # doctest: +SKIP
    >>> tuple(x.shape), bool(torch.allclose(x.square().sum(1), torch.tensor(784.0)))  # doctest: +SKIP
    ((10, 784), True)
    >>> tuple(image_data("mixer", n_train=10).x_train.shape)  # doctest: +SKIP
    (10, 16, 49)
    """
    one_of("model", model, IMAGE_MODELS)
    seed = integer_at_least("seed", seed, 0)
    n = None if n_train is None else integer_at_least("n_train", n_train)
    data = datasets.mnist5k(seed=seed)                        # read once per process, split afresh
    if n is not None:
        if n > data.n_train:
            raise ValueError(f"n_train must be at most the {data.n_train} training images, got {n}")
        data = dataclasses.replace(data, x_train=data.x_train[:n], y_train=data.y_train[:n])
    if model != "mlp":
        return data.map_x(lambda x: datasets.to_patches(x, PATCH))
    mean = data.x_train.flatten(1).mean(0)

    def unit(x):
        x = x.flatten(1) - mean
        return x * (784 ** 0.5 / x.norm(dim=1, keepdim=True).clamp_min(1e-12))
    return data.map_x(unit)


def _kernel_laws(width, x_ntk, jacobian=True):
    """jacobian_law and ntk_law (input law: the inputs' Gram spectrum) of the MLP's description, solved once."""
    from rmtnet.spectra import jacobian_law, ntk_law
    from rmtnet.spectra.measures import Empirical
    d = description(width)
    u = x_ntk.detach().to(torch.float64).numpy()
    gram = Empirical(np.maximum(np.linalg.eigvalsh(u @ u.T / u.shape[1]), 0.0))
    return jacobian_law(d) if jacobian else None, ntk_law(d, u.shape[0], input_law=gram)


def _kernels(net, width, x_jac, x_ntk, laws):
    d = description(width)
    with torch.no_grad():
        net64 = copy.deepcopy(net).to(torch.float64)
    parts = {"ntk": ntk_against_law(net64, d, x_ntk.to(torch.float64), law=laws[1])}
    if x_jac is not None:
        parts["jacobian"] = jacobian_against_law(net64, d, x_jac.to(torch.float64), law=laws[0])
    return {f"{kind}_{k}": v for kind, out in parts.items() for k, v in out.items()}


def _audit(net, stage, model, width, kernel_inputs):
    layers = weight_spectra(net)                                # every layer's SVD, once
    table = spectrum_table(layers).assign(stage=stage)
    eigs = {layer.name: layer.eigs.tolist() for layer in layers}
    kernels = _kernels(net, width, *kernel_inputs) if model == "mlp" else {}
    return table, eigs, kernels


def _fit(net, model, seed, epochs, lr, data):
    if model == "emn":
        from rmtnet.studies.emn import train_emn
        history = train_emn(net, "control", epochs=epochs, meta_epochs=1, seed=seed, lr=lr)
        return dict(train_loss=float(history.train_loss.iloc[-1]), test_error=np.nan)
    history = train(net, data, epochs=epochs, batch_size=128, lr=lr, momentum=0.9, seed=seed, progress=False)
    last = history.iloc[-1]
    return dict(train_loss=float(last.train_loss), test_error=float(last.test_error))


def spectra_run(model, width, epochs, lr, seed, n_nodes=20, n_kernel=120, n_train=None, jacobian=True,
                weights_dir=None):
    """One run: ``model`` built (:func:`build`), audited, trained for ``epochs`` at learning rate ``lr``, audited
    again (one intra-op thread).

    Returns
    -------
    dict
        ``train_loss``, ``test_error`` (NaN for EMN, whose test is not classification: its loss is the measure),
        ``wall_s``, and JSON strings ``layers`` (the two :func:`rmtnet.nets.layer_spectra` tables, a ``stage``
        column "init"/"trained"), ``eigs`` ({stage: {layer: eigenvalues}}) and ``kernels`` ({stage: the
        Jacobian's and NTK's comparison}, the MLP only; the Jacobian over 8 training images, the NTK over
        ``n_kernel``; ``jacobian=False`` leaves the Jacobian out, whose law takes seconds to solve). ``n_train``:
        train on the first n_train training images only (None: all 4000).

    Examples
    --------
    The cheapest run: an EMN on 3 nodes (no images, no kernels) trained for one epoch; its two weight layers are
    audited at both stages:

    >>> out = spectra_run("emn", width=1, epochs=1, lr=0.01, seed=0, n_nodes=3)
    >>> eigs, kernels = json.loads(out["eigs"]), json.loads(out["kernels"])
    >>> sorted(out), sorted(eigs["init"]), kernels  # doctest: +NORMALIZE_WHITESPACE
    (['eigs', 'kernels', 'layers', 'test_error', 'train_loss', 'wall_s'], ['first', 'hidden.0'],
     {'init': {}, 'trained': {}})
    """
    one_of("model", model, MODELS)
    epochs, seed = integer_at_least("epochs", epochs), integer_at_least("seed", seed, 0)
    lr = real_scalar("lr", lr, lo=0.0, lo_open=True)
    n_kernel, jacobian = integer_at_least("n_kernel", n_kernel, 2), boolean("jacobian", jacobian)
    if n_train is not None:
        n_train = integer_at_least("n_train", n_train)
        if n_train > N_TRAIN or (model == "mlp" and n_train < n_kernel):
            raise ValueError(f"n_train must be in [{n_kernel if model == 'mlp' else 1}, {N_TRAIN}] (MNIST-5k's training "
                             f"images; the MLP's NTK takes n_kernel = {n_kernel} of them), got {n_train}")
    if weights_dir is not None:
        weights_dir = output_path("weights_dir", weights_dir, kind="directory")
    before, start = torch.get_num_threads(), time.perf_counter()
    torch.set_num_threads(1)
    try:
        net = build(model, width, seed, n_nodes)
        data = image_data(model, seed, n_train) if model != "emn" else None
        kernel_inputs = None
        if model == "mlp":
            x_ntk = data.x_train[:n_kernel]
            kernel_inputs = (data.x_train[:8] if jacobian else None, x_ntk, _kernel_laws(width, x_ntk, jacobian))
        stages = {"init": _audit(net, "init", model, width, kernel_inputs)}
        _save(net, weights_dir, model, seed, "init")
        out = _fit(net, model, seed, epochs, lr, data)
        stages["trained"] = _audit(net, "trained", model, width, kernel_inputs)
        _save(net, weights_dir, model, seed, "trained")
    finally:
        torch.set_num_threads(before)
    tables = pd.concat([t for t, _, _ in stages.values()], ignore_index=True)
    tables["shape"] = tables["shape"].map(lambda s: "x".join(map(str, s)))
    return dict(out, wall_s=time.perf_counter() - start, layers=tables.to_json(orient="records"),
                eigs=json.dumps({k: e for k, (_, e, _) in stages.items()}),
                kernels=json.dumps({k: c for k, (_, _, c) in stages.items()}))


def _save(net, weights_dir, model, seed, stage):
    if weights_dir is not None:
        path = Path(weights_dir)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(net.state_dict(), path / f"{model}-seed{seed}-{stage}.pt")


def _runs(runs, columns):
    """``runs``: a :func:`spectra_run` sweep's table (a DataFrame with ``columns``, at least one row)."""
    return runs_table("runs", runs, columns, of="a spectra_run sweep")


def layer_table(runs):
    """The per-layer rows of every run of a :func:`spectra_run` sweep: the run's ``model`` and ``seed``, then the
    :func:`rmtnet.nets.layer_spectra` columns and ``stage``.

    Parameters
    ----------
    runs : pandas.DataFrame
        The sweep's table (columns ``model``, ``seed``, ``layers``, …; at least one row).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    One EMN run (3 nodes, one epoch) has two weight layers at two stages, 2 · 2 = 4 rows:

    >>> runs = pd.DataFrame([dict(model="emn", seed=0, **spectra_run("emn", 1, 1, 0.01, 0, n_nodes=3))])
    >>> layer_table(runs)[["model", "stage", "layer", "n_eigs"]].values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [['emn', 'init', 'first', 3], ['emn', 'init', 'hidden.0', 3],
     ['emn', 'trained', 'first', 3], ['emn', 'trained', 'hidden.0', 3]]
    """
    runs = _runs(runs, ("model", "seed", "layers"))
    frames = [pd.read_json(_text(row.layers), orient="records").assign(model=row.model, seed=row.seed)
              for row in runs.itertuples()]
    out = pd.concat(frames, ignore_index=True)
    return out[["model", "seed", "stage"] + [c for c in out.columns if c not in ("model", "seed", "stage")]]


def kernel_table(runs):
    """The Jacobian's and NTK's comparisons of the MLP runs, one row per (seed, stage).

    Parameters
    ----------
    runs : pandas.DataFrame
        The sweep's table (columns ``model``, ``seed``, ``kernels``; at least one row).

    Returns
    -------
    pandas.DataFrame
        Empty when no run is an MLP.

    Examples
    --------
    On a hand-written table (an MLP run's ``kernels`` column holds such JSON; a real one takes seconds), the stage
    without numbers gives no row:

    >>> runs = pd.DataFrame({"model": ["mlp", "emn"], "seed": [0, 0],
    ...                      "kernels": ['{"init": {"ntk_ks": 0.05}, "trained": {}}', '{"init": {}, "trained": {}}']})
    >>> kernel_table(runs).values.tolist()
    [['mlp', 0, 'init', 0.05]]
    """
    runs = _runs(runs, ("model", "seed", "kernels"))
    rows = [dict(model=row.model, seed=row.seed, stage=stage, **values)
            for row in runs.itertuples() for stage, values in json.loads(row.kernels).items() if values]
    return pd.DataFrame(rows)


def eigenvalues(runs, model, seed, layer):
    """{stage: eigenvalues (ascending)} of one layer of one run.

    Parameters
    ----------
    runs : pandas.DataFrame
        The sweep's table (columns ``model``, ``seed``, ``eigs``).
    model : {"mlp", "mixer", "rp", "swmlp", "emn"}
    seed : int
        A seed the sweep ran for ``model``.
    layer : str
        A weight layer's module name in that run.

    Returns
    -------
    dict
        {"init": array, "trained": array}.

    Examples
    --------
    An EMN on 3 nodes has 3 × 3 weights, so 3 eigenvalues per stage:

    >>> runs = pd.DataFrame([dict(model="emn", seed=0, **spectra_run("emn", 1, 1, 0.01, 0, n_nodes=3))])
    >>> {stage: e.shape for stage, e in eigenvalues(runs, "emn", 0, "first").items()}
    {'init': (3,), 'trained': (3,)}
    """
    runs = _runs(runs, ("model", "seed", "eigs"))
    one_of("model", model, MODELS)
    seed = integer_at_least("seed", seed, 0)
    match = runs[(runs.model == model) & (runs.seed == seed)]
    if match.empty:
        ran = sorted(int(v) for v in set(runs.seed[runs.model == model]))
        raise ValueError(f"seed must be one the sweep ran for model {model!r} ({ran}), got {seed}")
    stages = json.loads(match.iloc[0].eigs)
    names = sorted({name for e in stages.values() for name in e})
    if not isinstance(layer, str) or layer not in names:
        raise ValueError(f"layer must be one of the run's layers {names}, got {layer!r}")
    return {stage: np.asarray(e[layer]) for stage, e in stages.items()}


def _text(value):
    from io import StringIO
    return StringIO(value)
