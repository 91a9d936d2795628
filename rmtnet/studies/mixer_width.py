"""Training runs the figure scripts sweep over, as picklable module-level functions (so that
:func:`rmtnet.experiments.sweep` can hand them to worker processes).

:func:`width_run` is one point of the width study of Hayase & Karakida (ICML 2024, arXiv 2306.01470): a Mixer-family
model with S tokens (from the patch size) and C channels trained on an offline image set (MNIST-5k, digits, or
CIFAR-10 from a folder the user supplies), reporting its test error
together with the effective width m = S·C and the connection budget Ω = γ(CS² + SC²)/2 it used.
"""
from __future__ import annotations

import functools
import time

import torch

from rmtnet._validation import one_of
from rmtnet.spectra import mixer
from rmtnet.nets import data as datasets
from rmtnet.nets.layers import MaskedLinear
from rmtnet.nets.models import MLPMixer, MonarchMLP, RPMixer, SWMLP
from rmtnet.nets.training import train

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


def patched(dataset, patch, seed=0, canvas=None, data_dir=None):
    """The data set ``dataset`` (a name of :data:`LOADERS`) as (n, S, C_in) patch tokens of size ``patch`` (cached
    per process). ``canvas``: first centre the images on a zero canvas of that side (:func:`centre_pad`; 32 for MNIST
    gives S = 64 tokens of 4 × 4). Images are then zero-padded at the bottom and right when ``patch`` does not divide
    their side (28 = 3·10 − 2: S = 100). ``data_dir``: CIFAR-10's folder (:func:`rmtnet.nets.data.cifar10_path`;
    None reads ``$RMTNET_CIFAR10``), resolved before the cache is consulted; None for the other sets."""
    one_of("dataset", dataset, sorted(LOADERS))
    if dataset == "cifar10":
        data_dir = str(datasets.cifar10_path(data_dir))
    return _patched(dataset, patch, seed, canvas, data_dir)


@functools.lru_cache(maxsize=8)
def _patched(dataset, patch, seed, canvas, data_dir):
    data = datasets.classification(dataset, seed=seed, data_dir=data_dir)
    if canvas is not None:
        data = data.map_x(lambda x: centre_pad(x, int(canvas)))
    return data.map_x(lambda x: datasets.to_patches(x, int(patch), pad=True))


def trainable_weights(net):
    """Number of trainable weights that can be nonzero: parameters, with a MaskedLinear's weight counted by its mask."""
    masked = {id(m.weight): int(m.mask.sum()) for m in net.modules() if isinstance(m, MaskedLinear)}
    return sum(masked.get(id(p), p.numel()) for p in net.parameters() if p.requires_grad)


def fit(model, patch, channels, depth=2, gamma=2.0, epochs=10, lr=5e-3, weight_decay=0.05, batch_size=128,
        pool="flatten", dataset="mnist5k", canvas=None, seed=0, threads=1, device="cpu", data_dir=None,
        **model_kwargs):
    """Build ``model`` (see :data:`MODELS`) with S = (image side / patch)² tokens and ``channels`` channels, train it
    by AdamW with a one-cycle schedule, and return (the trained model, its metrics table, the data).
    ``pool="flatten"`` reads out all m = S·C features (no C-channel bottleneck at small C; see the models);
    ``dataset``: ``"mnist5k"``, ``"digits"`` or ``"cifar10"`` (read from ``data_dir``, or ``$RMTNET_CIFAR10`` when
    that is None; :func:`rmtnet.nets.data.cifar10`); ``canvas``: the side the images are centred on before patching
    (:func:`patched`);
    ``model_kwargs`` go to the model (e.g. ``density`` for SW-MLP). ``threads``: torch's intra-op threads while
    training (one is fastest for these small models; the previous setting is restored). ``device``: where the
    model is trained (``"cuda"`` for a GPU; the weights are initialised on the CPU from ``seed`` either way)."""
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        data = patched(dataset, patch, canvas=None if canvas is None else int(canvas), data_dir=data_dir)
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
