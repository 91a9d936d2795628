"""Subnetwork Ensembles: many children from one trained parent (T. J. Whitaker, "Neural Subnetwork Ensembles", PhD
thesis, Colorado State University, 2023; Whitaker & Whitley, "Prune and Tune Ensembles", AAAI 2022).

Framework (Ch. 3). Train one parent F; for i = 1..k copy it, sample a mask M for the weight matrix W of every layer and
perturb the copy with an operator ξ(W, M); optionally tune the child; predict with the mean of the children's
softmax outputs f̄(x) = (1/k) Σ_i softmax(f_i(x)) (Eq. 3.22). Three operators:

==========  ============================================  =============================================  ============
children    perturbation                                  function                                       thesis
==========  ============================================  =============================================  ============
noisy       Ŵ = W + N ∘ M,  N ~ 𝒩(μ, σ²), no tuning;      :func:`noisy_children` (σ from                 Eq. 3.17,
            mirrored: W ± N ∘ M, W ± N ∘ (1 − M)          :func:`trust_region_search`, best by           Alg. 1,
                                                          :func:`select_top_k`)                          Eqs. 4.6–11
pruned      Ŵ = W ∘ M, zeros frozen, then tuned           :func:`pruned_children`, :func:`tune`          Eq. 3.4,
            (one-shot, or iteratively over ε epochs)                                                     Alg. 2
stochastic  Ŵ = W ∘ Bernoulli(P_e), a new draw every      :func:`stochastic_children`, :func:`tune`      Eqs. 3.19–21,
            forward pass in training, P_e annealed to M                                                  Alg. 3
            over ε epochs; Ŵ = W ∘ M at test
==========  ============================================  =============================================  ============

Masks. A mask set is a dict ``{"<module name>.weight": 0/1 tensor of the weight's shape}`` (the keys of the model's
``state_dict`` before masking). For pruning, 1 means *keep*; for noise, 1 means *mutate*. One name for one quantity:
``sparsity`` is the fraction of weights removed (or left unmutated), 1 − the thesis's Bernoulli ρ of Ch. 4–5
(Ch. 6 uses ρ for the sparsity itself).

- Which weights. The ``weight`` of every ``nn.Linear``, ``nn.Conv1d/2d/3d`` and rmtnet ``MaskedLinear`` (the thesis
  masks "the weight matrices for each layer"), or only the modules named in ``layers``. Biases, LayerNorm/BatchNorm
  parameters and embeddings are never masked (the thesis does not say; we leave them alone and dense).
- ``method``: ``"random"`` — iid Bernoulli(1 − sparsity) entries (Eqs. 4.1, 5.1: the realised sparsity is random), or
  exactly round(sparsity · n) removed units at uniformly random positions with ``exact=True``; ``"magnitude"`` — remove
  the round(sparsity · n) units of smallest |w| (``torch.nn.utils.prune.l1_unstructured``; ties by position);
  ``"partition"`` — Neural Partitioning (§3.2.2): k-way partitions, each weight in exactly one child of a group, so
  sparsity = 1 − 1/k (k = 2: a mask and its anti-mask 1 − M).
- ``structure``: ``"unstructured"`` (single connections) or ``"structured"`` (whole output rows of W, i.e. neurons or
  conv filters, Eq. 3.5; a row's magnitude is its mean |w|). In structured mode the last maskable layer is left whole
  unless ``layers`` names it: its rows are the class logits.
- ``scope``: ``"local"`` (the same sparsity in every layer: all the thesis's experiments) or ``"global"`` (one budget of
  round(sparsity · n) units over all layers together: one magnitude threshold for the net, or uniformly random
  positions, so for random masks only the per-layer counts differ from local).

Frozen zeros. A pruned or stochastic child carries a ``torch.nn.utils.parametrize`` parametrization on each masked
weight: ``module.weight`` is computed as ``original ∘ M`` on every access, so the weight the layer applies is exactly 0
off the mask whatever the optimizer does (SGD momentum, weight decay, AdamW). One-shot masks also zero ``original``
off the mask, where the gradient is then exactly 0 and the decay of 0 is 0, so the stored values stay 0 as well.
:func:`child_masks` reads back a child's deterministic masks; ``parametrize.remove_parametrizations(module, "weight")``
(in eval mode) bakes W ∘ M in.

Annealed masks change once per epoch (Alg. 3): :func:`set_epoch` moves a child's masks to epoch e (0-based: e is the
epoch about to be trained), and :func:`tune` calls it through the training loop's callback. The Bernoulli draws of a
stochastic mask use torch's global RNG, which :func:`rmtnet.nets.training.train` seeds, so a tuning run is
reproducible from its seed.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar, scalar, seed_value

from . import metrics
from .layers import MaskedLinear, SparseMaskedLinear
from .training import apply_model, train

__all__ = [
    "maskable_weights", "sample_masks", "anti_masks", "partition_masks", "apply_masks", "child_masks",
    "noisy_children", "pruned_children", "stochastic_children", "set_epoch", "temperature", "tune", "OneCycle",
    "trust_region_search", "TrustRegion", "select_top_k", "member_probabilities", "ensemble_predict",
    "evaluate_ensemble", "output_kl", "FixedMask", "IterativeMask", "TemperatureMask", "RandomAnnealMask",
]

METHODS = ("random", "magnitude", "partition")
STRUCTURES = ("unstructured", "structured")
SCOPES = ("local", "global")
ANNEALS = ("temperature", "random")
COMBINE = ("average", "vote")
MASKED_TYPES = (nn.Linear, nn.modules.conv._ConvNd, MaskedLinear)


# --------------------------------------------------------------------------------------------------------------
# argument checks

def _sparsity(value, name="sparsity"):
    return real_scalar(name, value, lo=0.0, hi=1.0, hi_open=True)


def generator(seed):
    """A CPU ``torch.Generator`` seeded with ``int(seed)``: the source of this module's masks and noise.

    Parameters
    ----------
    seed : int
        The seed.

    Returns
    -------
    torch.Generator

    Examples
    --------
    The same seed gives the same draws:

    >>> g = generator(3)
    >>> print(g.initial_seed(), torch.equal(torch.randn(4, generator=g), torch.randn(4, generator=generator(3))))
    3 True
    """
    return torch.Generator().manual_seed(seed_value("seed", seed, none=False, generators=False))


def _next_seed(g):
    return int(torch.randint(2 ** 62, (1,), generator=g))


# --------------------------------------------------------------------------------------------------------------
# which weights, and units (single weights or output rows)

def _modules(model, layers=None, structure="unstructured"):
    """``{module name: module}`` of the masked layers, in registration order (see the module docstring)."""
    sparse = [name for name, m in model.named_modules() if isinstance(m, SparseMaskedLinear)]
    if sparse:
        raise ValueError(f"the model has SparseMaskedLinear layers {sparse}, whose kept weights are a sparse vector "
                         f"that subnetwork masks and pruning do not cover; build it with dense masked layers "
                         f"(e.g. SWMLP(..., storage='dense')) to mask or prune it")
    found = {name: m for name, m in model.named_modules() if isinstance(m, MASKED_TYPES)}
    if layers is None:
        if structure == "structured":
            found = dict(list(found.items())[:-1])        # the last layer's rows are the outputs: keep them whole
    else:
        if isinstance(layers, str) or not isinstance(layers, Sequence):
            raise ValueError(f"layers must be a list of module names or None, got {layers!r}")
        missing = [n for n in layers if n not in found]
        if missing:
            raise ValueError(f"layers must name Linear/Conv/MaskedLinear modules of the model; not found: {missing} "
                             f"(available: {list(found)})")
        found = {n: found[n] for n in layers}
    if not found:
        raise ValueError("the model has no layer to mask: it needs an nn.Linear, nn.Conv*d or MaskedLinear "
                         "(structured masks leave the last one whole, so they need two)")
    return found


def _raw(module):
    """The stored weight tensor of a layer: ``original`` under a parametrization, else ``weight``."""
    if parametrize.is_parametrized(module, "weight"):
        return module.parametrizations.weight.original
    return module.weight


def maskable_weights(model: nn.Module, layers: Sequence[str] | None = None,
                     structure: str = "unstructured") -> dict[str, torch.Tensor]:
    """``{"<module>.weight": stored weight}`` of the layers that masks act on (see the module docstring): every
    ``nn.Linear``, ``nn.Conv*d`` and ``MaskedLinear`` or the modules named in ``layers``; in structured mode the last
    one is left out unless ``layers`` is given.

    Parameters
    ----------
    model : nn.Module
        The network.
    layers : list of str, optional
        Module names to mask (default every maskable layer).
    structure : {"unstructured", "structured"}, default "unstructured"
        Single weights or whole output rows.

    Returns
    -------
    dict of str to torch.Tensor
        ``{"<module>.weight": stored weight}``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> print({k: tuple(w.shape) for k, w in maskable_weights(net).items()})
    {'0.weight': (3, 4), '2.weight': (2, 3)}
    >>> print(list(maskable_weights(net, structure="structured")))       # the output layer stays whole
    ['0.weight']
    """
    one_of("structure", structure, STRUCTURES)
    return {f"{n}.weight": _raw(m) for n, m in _modules(model, layers, structure).items()}


def _unit_shape(weight, structure):
    return tuple(weight.shape) if structure == "unstructured" else (weight.shape[0],) + (1,) * (weight.ndim - 1)


def _magnitude(weight, structure):
    """|w| per weight, or the mean |w| of each output row (shape (n_out, 1, …), broadcasting against W)."""
    a = weight.detach().abs().to(torch.float64).cpu()
    return a if structure == "unstructured" else a.reshape(a.shape[0], -1).mean(dim=1).reshape(
        _unit_shape(weight, structure))


def _keep_lowest_removed(scores, sparsity, scope, removed=None):
    """Masks that remove the round(sparsity · n) units of lowest score (stable: ties go by position), per layer
    (``scope="local"``) or over all layers together (``"global"``). ``removed`` (name → bool) forces units out."""
    if removed is not None:
        scores = {k: torch.where(removed[k], torch.full_like(s, -math.inf), s) for k, s in scores.items()}
    out = {}
    if scope == "local":
        for k, s in scores.items():
            n_out = round(sparsity * s.numel())
            keep = torch.ones(s.numel(), dtype=torch.float64)
            keep[torch.argsort(s.reshape(-1), stable=True)[:n_out]] = 0.0
            out[k] = keep.reshape(s.shape)
        return out
    flat = torch.cat([s.reshape(-1) for s in scores.values()])
    keep = torch.ones(flat.numel(), dtype=torch.float64)
    keep[torch.argsort(flat, stable=True)[:round(sparsity * flat.numel())]] = 0.0
    start = 0
    for k, s in scores.items():
        out[k] = keep[start:start + s.numel()].reshape(s.shape)
        start += s.numel()
    return out


def _uniform(shapes, g):
    return {k: torch.rand(shape, generator=g, dtype=torch.float64) for k, shape in shapes.items()}


def _unit_masks(weights, sparsity, method, structure, scope, exact, g):
    """Unit-shaped 0/1 float64 masks (full shape, or (n_out, 1, …) rows when structured)."""
    shapes = {k: _unit_shape(w, structure) for k, w in weights.items()}
    if method == "magnitude":
        return _keep_lowest_removed({k: _magnitude(w, structure) for k, w in weights.items()}, sparsity, scope)
    u = _uniform(shapes, g)
    if scope == "local" and not exact:
        return {k: (v >= sparsity).to(torch.float64) for k, v in u.items()}         # iid Bernoulli(1 − sparsity)
    return _keep_lowest_removed(u, sparsity, scope)                                 # exact count, random positions


def _full(unit_mask, weight):
    return unit_mask.expand(weight.shape).to(device=weight.device, dtype=weight.dtype).clone()


def sample_masks(model: nn.Module, sparsity: float, *, method: str = "random", structure: str = "unstructured",
                 scope: str = "local", exact: bool = False, layers: Sequence[str] | None = None,
                 seed: int = 0) -> dict[str, torch.Tensor]:
    """One mask set for ``model``: ``{"<module>.weight": 0/1 tensor of the weight's shape and dtype}``, 1 = keep.

    ``sparsity`` ∈ [0, 1) is the fraction removed. ``method`` ``"random"`` draws iid Bernoulli(1 − sparsity) entries
    (Eqs. 4.1, 5.1) — exactly round(sparsity · n) removed units with ``exact=True`` or ``scope="global"`` — and
    ``"magnitude"`` removes the units of smallest |w| (per layer, or one threshold for the net when global).
    Structured masks remove whole output rows (Eq. 3.5). Deterministic given ``seed`` (a CPU generator). Equation
    numbers are those of Whitaker, "Neural Subnetwork Ensembles" (PhD thesis, Colorado State University, 2023).

    Parameters
    ----------
    model : nn.Module
        The network.
    sparsity : float
        The fraction removed, in [0, 1).
    method : {"random", "magnitude"}, default "random"
        How units are chosen.
    structure : {"unstructured", "structured"}, default "unstructured"
        Single weights or whole output rows.
    scope : {"local", "global"}, default "local"
        Per layer, or one ranking / count for the whole net.
    exact : bool, default False
        Remove exactly round(sparsity·n) units per layer (random, local).
    layers : list of str, optional
        Module names to mask.
    seed : int, default 0
        Seeds the random masks.

    Returns
    -------
    dict of str to torch.Tensor
        One 0/1 mask per masked weight, 1 = keep.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> masks = sample_masks(net, 0.5, exact=True, seed=0)
    >>> print({k: int(m.sum()) for k, m in masks.items()})               # half of 12 and of 6 kept
    {'0.weight': 6, '2.weight': 3}
    >>> kept = sample_masks(net, 0.5, method="magnitude")["0.weight"] == 1
    >>> w = net[0].weight.abs()
    >>> print(bool(w[kept].min() >= w[~kept].max()))                     # the largest |w| are kept
    True
    """
    exact = boolean("exact", exact)
    sparsity = _sparsity(sparsity)
    one_of("method", method, ("random", "magnitude"))
    one_of("structure", structure, STRUCTURES)
    one_of("scope", scope, SCOPES)
    weights = maskable_weights(model, layers, structure)
    units = _unit_masks(weights, sparsity, method, structure, scope, bool(exact), generator(seed))
    return {k: _full(units[k], w) for k, w in weights.items()}


def anti_masks(masks: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The anti-mask M′ = 1 − M of every mask (Neural Partitioning with k = 2, §3.2.2): the complementary child.

    Parameters
    ----------
    masks : dict of str to torch.Tensor
        0/1 masks.

    Returns
    -------
    dict of str to torch.Tensor
        1 − M for each.

    Examples
    --------
    >>> print(anti_masks({"0.weight": torch.tensor([1.0, 0.0, 1.0])}))
    {'0.weight': tensor([0., 1., 0.])}
    """
    if not isinstance(masks, dict) or not masks:
        raise ValueError("masks must be a non-empty dict of mask tensors")
    for k, m in masks.items():
        if not torch.all((m == 0) | (m == 1)):
            raise ValueError(f"masks[{k!r}] must contain only 0 and 1")
    return {k: 1 - m for k, m in masks.items()}


def _partition_units(weights, k, structure, balanced, g):
    """Unit-shaped k-way partitions: ``[{key: 0/1 float64}]`` for j = 0..k−1 with Σ_j M_j = 1 entrywise."""
    owner = {}
    for key, w in weights.items():
        shape = _unit_shape(w, structure)
        n = math.prod(shape)
        idx = torch.randperm(n, generator=g) % k if balanced else torch.randint(k, (n,), generator=g)
        owner[key] = idx.reshape(shape)
    return [{key: (o == j).to(torch.float64) for key, o in owner.items()} for j in range(k)]


def partition_masks(model: nn.Module, k: int, *, structure: str = "unstructured", balanced: bool = True,
                    layers: Sequence[str] | None = None, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """k-way Neural Partitioning (§3.2.2, §5.2): k mask sets with M_1 + … + M_k = 1 entrywise, so every weight (or
    output row, when structured) belongs to exactly one child and each child has sparsity 1 − 1/k.

    Each unit draws its child j ∈ {0, …, k−1}: ``balanced=True`` deals the units of every layer round-robin over a
    uniformly random permutation (child sizes differ by at most one unit per layer); ``balanced=False`` draws j
    uniformly and independently for every unit. Returns ``[M_1, …, M_k]`` in the format of
    :func:`sample_masks`.

    Parameters
    ----------
    model : nn.Module
        The network.
    k : int
        The number of children, ≥ 2.
    structure : {"unstructured", "structured"}, default "unstructured"
        Single weights or whole output rows.
    balanced : bool, default True
        Deal units round-robin (sizes within one unit) instead of independently.
    layers : list of str, optional
        Module names to mask.
    seed : int, default 0
        Seeds the partition.

    Returns
    -------
    list of dict
        k mask sets.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> parts = partition_masks(net, 3, seed=0)
    >>> print(torch.equal(sum(p["0.weight"] for p in parts), torch.ones(3, 4)),
    ...       [int(p["0.weight"].sum()) for p in parts])
    True [4, 4, 4]
    """
    balanced = boolean("balanced", balanced)
    k = integer_at_least("k", k, lo=2)
    one_of("structure", structure, STRUCTURES)
    weights = maskable_weights(model, layers, structure)
    parts = _partition_units(weights, k, structure, bool(balanced), generator(seed))
    return [{key: _full(m[key], w) for key, w in weights.items()} for m in parts]


# --------------------------------------------------------------------------------------------------------------
# mask parametrizations: weight ↦ original ∘ mask

class FixedMask(nn.Module):
    """Prune and freeze: ``weight = original ∘ M`` with a static 0/1 mask M (Eq. 3.4). ``mask`` is a buffer of the
    weight's shape or of a broadcasting row shape (n_out, 1, …) for structured masks.

    Parameters
    ----------
    mask : torch.Tensor
        0/1, of the weight's shape or a row shape.

    Examples
    --------
    >>> print(FixedMask(torch.tensor([1.0, 0.0]))(torch.tensor([3.0, 4.0])))
    tensor([3., 0.])
    """

    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, weight):
        return weight * self.mask

    def deterministic(self):
        """The mask the layer applies in eval mode."""
        return self.mask


class IterativeMask(FixedMask):
    """Iterative pruning (baseline of Ch. 6): at the start of epoch e (0-based) the mask removes the fraction
    s_e = s · min(e + 1, ε)/ε of the units — the lowest-``priority`` ones (random pruning: a fixed uniform priority,
    so the masks are nested) or the smallest |w| among those still kept (magnitude pruning) — reaching the target s at
    epoch ε − 1 and keeping it after. The ranking is done by :func:`set_epoch` over every layer of the child
    (``scope``); ``weight = original ∘ mask_e`` as for :class:`FixedMask`. Built by :func:`pruned_children` with
    ``prune_epochs`` > 0.

    Parameters
    ----------
    mask : torch.Tensor
        The starting 0/1 mask.
    priority : torch.Tensor
        The units' fixed random priority (NaN: magnitude pruning).
    sparsity : float
        The target s.
    prune_epochs : int
        ε.
    scope : {"local", "global"}
        Where units are ranked.
    structure : {"unstructured", "structured"}
        Single weights or output rows.

    Examples
    --------
    Target ½ over ε = 2 epochs: ¼ of the 12 first-layer weights are removed at epoch 0, ½ from epoch 1 on:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> child = pruned_children(net, 1, 0.5, prune_epochs=2, exact=True, seed=0)[0]
    >>> print([child[0].parametrizations.weight[0].sparsity_at(e) for e in (0, 1, 5)])
    [0.25, 0.5, 0.5]
    >>> print([int(child_masks(set_epoch(child, e))["0.weight"].sum()) for e in (0, 1)])
    [9, 6]
    """

    def __init__(self, mask, priority, sparsity, prune_epochs, scope, structure):
        super().__init__(mask)
        self.register_buffer("priority", priority)           # NaN: magnitude pruning (ranked by |w|)
        self.sparsity, self.prune_epochs, self.scope, self.structure = sparsity, prune_epochs, scope, structure

    def sparsity_at(self, epoch):
        return self.sparsity * min(epoch + 1, self.prune_epochs) / self.prune_epochs


def temperature(epoch: float, tau0: float, anneal_epochs: int) -> float:
    """τ_e = τ₀ · ½ (1 + cos(π e / ε)) for 0 ≤ e ≤ ε and 0 after (§6.2.2, Eq. 6.3 with the π the printed equation
    lacks): τ₀ at e = 0, τ₀/2 at e = ε/2, 0 from e = ε on.

    Parameters
    ----------
    epoch : float
        e ≥ 0.
    tau0 : float
        τ₀ ∈ [0, 1].
    anneal_epochs : int
        ε ≥ 1.

    Returns
    -------
    float
        τ_e.

    Examples
    --------
    >>> print([f"{temperature(e, 0.5, 10):.6f}" for e in (0, 5, 10, 12)])
    ['0.500000', '0.250000', '0.000000', '0.000000']
    """
    tau0 = real_scalar("tau0", tau0, lo=0.0, hi=1.0)
    anneal_epochs = integer_at_least("anneal_epochs", anneal_epochs)
    epoch = real_scalar("epoch", epoch, lo=0.0)
    return tau0 * 0.5 * (1 + math.cos(math.pi * min(epoch, anneal_epochs) / anneal_epochs))


class _StochasticMask(FixedMask):
    """``weight = original ∘ B`` with B ~ Bernoulli(P_e) drawn anew on every access in training mode (once per
    forward pass of a layer: every minibatch gets its own subnetwork, Eqs. 3.19–3.21), and ``original ∘ M`` in eval
    mode. ``mask`` is the target M, ``prob`` the current P_e (both unit-shaped)."""

    def __init__(self, mask, anneal_epochs):
        super().__init__(mask)
        self.anneal_epochs = anneal_epochs
        self.register_buffer("prob", mask.clone())
        self.register_buffer("epoch", torch.zeros((), dtype=torch.float64))

    def forward(self, weight):
        if self.training and float(self.epoch) < self.anneal_epochs:
            return weight * torch.bernoulli(self.prob)
        return weight * self.mask

    def set_epoch(self, epoch):
        self.epoch.fill_(epoch)
        self.prob.copy_(self.probability(epoch))


class TemperatureMask(_StochasticMask):
    """Temperature annealing (§6.2.2, Eq. 6.6, the one-sided "reverse dropout" form the thesis uses): P_e = 1 where
    M = 1 and τ_e elsewhere, τ_e = :func:`temperature` (e, τ₀, ε); the target subnetwork is always on and pruned
    weights pop back in with probability τ_e → 0.

    Parameters
    ----------
    mask : torch.Tensor
        The target M.
    tau0 : float
        τ₀.
    anneal_epochs : int
        ε.

    Examples
    --------
    >>> m = TemperatureMask(torch.tensor([1.0, 0.0]), tau0=0.5, anneal_epochs=4)
    >>> print(m.probability(0).tolist(), m.probability(2).tolist(), m.probability(4).tolist())
    [1.0, 0.5] [1.0, 0.25] [1.0, 0.0]
    """

    def __init__(self, mask, tau0, anneal_epochs):
        super().__init__(mask, anneal_epochs)
        self.tau0 = tau0
        self.set_epoch(0)

    def probability(self, epoch):
        tau = temperature(epoch, self.tau0, self.anneal_epochs)
        return self.mask + (1 - self.mask) * tau


class RandomAnnealMask(_StochasticMask):
    """Random annealing (§6.2.1): P₀ = U ~ U(0, 1) per unit, the target M keeps the units with U ≥ s (or the top
    1 − s by U for an exact count), and P_e = U + (M − U) · min(e/ε, 1) moves each probability linearly to 0 or 1
    (mean activation ≈ ½ at e = 0 whatever the sparsity, as the thesis notes).

    Parameters
    ----------
    mask : torch.Tensor
        The target M.
    uniform : torch.Tensor
        U, per unit.
    anneal_epochs : int
        ε.

    Examples
    --------
    >>> m = RandomAnnealMask(torch.tensor([1.0, 0.0]), torch.tensor([0.6, 0.2]), anneal_epochs=4)
    >>> print([[round(p, 6) for p in m.probability(e).tolist()] for e in (0, 2, 4)])
    [[0.6, 0.2], [0.8, 0.1], [1.0, 0.0]]
    """

    def __init__(self, mask, uniform, anneal_epochs):
        super().__init__(mask, anneal_epochs)
        self.register_buffer("uniform", uniform)
        self.set_epoch(0)

    def probability(self, epoch):
        return self.uniform + (self.mask - self.uniform) * min(epoch / self.anneal_epochs, 1.0)


_MASK_TYPES = (FixedMask,)


def _mask_parametrizations(model):
    """``[(key, module, parametrization)]`` of every mask parametrization in ``model``."""
    out = []
    for name, module in model.named_modules():
        if parametrize.is_parametrized(module, "weight"):
            for p in module.parametrizations.weight:
                if isinstance(p, _MASK_TYPES):
                    out.append((f"{name}.weight", module, p))
    return out


def _register(module, parametrization, zero_original):
    parametrization = parametrization.to(device=_raw(module).device, dtype=_raw(module).dtype)
    if zero_original:
        with torch.no_grad():
            _raw(module).mul_(parametrization.mask)
    parametrize.register_parametrization(module, "weight", parametrization)


def apply_masks(model: nn.Module, masks: dict[str, torch.Tensor]) -> nn.Module:
    """Prune ``model`` in place with frozen zeros: ``weight = original ∘ M`` on every masked layer, ``original``
    zeroed off the mask (see the module docstring). Masks may have the weight's shape or a row shape (n_out, 1, …).
    Returns ``model``.

    Parameters
    ----------
    model : nn.Module
        Pruned in place.
    masks : dict of str to torch.Tensor
        As :func:`sample_masks` returns them.

    Returns
    -------
    nn.Module
        ``model``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> masks = sample_masks(net, 0.5, exact=True, seed=0)
    >>> child = apply_masks(copy.deepcopy(net), masks)
    >>> print(torch.equal(child[0].weight, net[0].weight * masks["0.weight"]))
    True
    """
    if not isinstance(masks, dict) or not masks:
        raise ValueError("masks must be a non-empty dict {'<module>.weight': 0/1 tensor}")
    modules = dict(model.named_modules())
    for key, m in masks.items():
        name = key.removesuffix(".weight")
        if not key.endswith(".weight") or name not in modules or not isinstance(modules[name], MASKED_TYPES):
            raise ValueError(f"masks key {key!r} must be '<module>.weight' of a Linear/Conv/MaskedLinear of the model")
        w = _raw(modules[name])
        if m.ndim != w.ndim or any(a not in (1, b) for a, b in zip(m.shape, w.shape)):
            raise ValueError(f"masks[{key!r}] has shape {tuple(m.shape)}, which does not broadcast to the weight's "
                             f"{tuple(w.shape)}")
        if not torch.all((m == 0) | (m == 1)):
            raise ValueError(f"masks[{key!r}] must contain only 0 and 1")
    for key, m in masks.items():
        _register(modules[key.removesuffix(".weight")], FixedMask(m.detach().clone()), zero_original=True)
    return model


def child_masks(model: nn.Module) -> dict[str, torch.Tensor]:
    """The deterministic masks a child applies at test time, ``{"<module>.weight": 0/1 tensor of the weight's
    shape}`` (the product when a layer carries several); layers without a mask are absent.

    Parameters
    ----------
    model : nn.Module
        A child.

    Returns
    -------
    dict of str to torch.Tensor
        Its masks.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> masks = sample_masks(net, 0.5, exact=True, seed=0)
    >>> child = apply_masks(copy.deepcopy(net), masks)
    >>> print(all(torch.equal(child_masks(child)[k], m) for k, m in masks.items()), child_masks(net))
    True {}
    """
    out = {}
    for key, module, p in _mask_parametrizations(model):
        m = p.deterministic().expand(_raw(module).shape)
        out[key] = out[key] * m if key in out else m.clone()
    return out


def set_epoch(model: nn.Module, epoch: int) -> nn.Module:
    """Move every scheduled mask of ``model`` to epoch ``epoch`` (0-based: the epoch about to be trained): iterative
    masks prune to s_e, annealed masks set P_e. Static masks are unaffected. Returns ``model``.

    Parameters
    ----------
    model : nn.Module
        A child.
    epoch : int
        e ≥ 0.

    Returns
    -------
    nn.Module
        ``model``.

    Examples
    --------
    A temperature-annealed child (τ₀ = ½, ε = 4) lets pruned weights back in with probability τ_e, ¼ at e = 2:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> child = stochastic_children(net, 1, 0.5, anneal_epochs=4, tau0=0.5, seed=0)[0]
    >>> mask = set_epoch(child, 2)[0].parametrizations.weight[0]
    >>> print(mask.probability(2).unique().tolist())
    [0.25, 1.0]
    """
    epoch = integer_at_least("epoch", epoch, lo=0)
    iterative = [(key, module, p) for key, module, p in _mask_parametrizations(model) if isinstance(p, IterativeMask)]
    if iterative:
        groups = {}
        for item in iterative:                       # children built by one call share (sparsity, ε, scope)
            p = item[2]
            groups.setdefault((p.sparsity, p.prune_epochs, p.scope, p.structure), []).append(item)
        for (_, _, scope, structure), items in groups.items():
            target = items[0][2].sparsity_at(epoch)
            scores = {}
            for key, module, p in items:
                scores[key] = (_magnitude(_raw(module), structure) if torch.isnan(p.priority).any()
                               else p.priority.cpu())
            removed = {key: (p.mask == 0).cpu() for key, _, p in items}
            new = _keep_lowest_removed(scores, target, scope, removed)
            for key, module, p in items:
                p.mask.copy_(new[key])
                with torch.no_grad():
                    _raw(module).mul_(p.mask)            # pruned now: the stored weight is zeroed too
    for _, _, p in _mask_parametrizations(model):
        if isinstance(p, _StochasticMask):
            p.set_epoch(epoch)
    return model


# --------------------------------------------------------------------------------------------------------------
# children

def _children_masks(parent, n_children, sparsity, method, structure, scope, exact, layers, g):
    """One unit-shaped mask set per child: independent draws, or k-way partitions in groups of k."""
    weights = maskable_weights(parent, layers, structure)
    if method == "partition":
        k = round(1 / (1 - sparsity)) if sparsity < 1 else 0
        if k < 2 or abs((1 - 1 / k) - sparsity) > 1e-9:
            raise ValueError(f"sparsity must be 1 − 1/k for an integer k >= 2 with method='partition' "
                             f"(0.5, 2/3, 0.75, …), got {sparsity!r}")
        if n_children % k:
            raise ValueError(f"n_children must be a multiple of k = {k} with method='partition', got {n_children}")
        return [m for _ in range(n_children // k) for m in _partition_units(weights, k, structure, True, g)]
    return [_unit_masks(weights, sparsity, method, structure, scope, exact, generator(_next_seed(g)))
            for _ in range(n_children)]


def _check_common(parent, n_children, sparsity, method, structure, scope):
    if not isinstance(parent, nn.Module):
        raise ValueError(f"parent must be a torch.nn.Module, got {type(parent).__name__}")
    n_children = integer_at_least("n_children", n_children)
    sparsity = _sparsity(sparsity)
    one_of("method", method, METHODS)
    one_of("structure", structure, STRUCTURES)
    one_of("scope", scope, SCOPES)
    return n_children, sparsity


def pruned_children(parent: nn.Module, n_children: int, sparsity: float = 0.5, *, method: str = "random",
                    structure: str = "unstructured", scope: str = "local", exact: bool = False, prune_epochs: int = 0,
                    layers: Sequence[str] | None = None, seed: int = 0) -> list[nn.Module]:
    """``n_children`` pruned copies of ``parent`` with frozen zeros (Alg. 2, "prune"): child i has
    ``weight = original ∘ M_i`` on every masked layer (see the module docstring); tune them with :func:`tune`.

    ``method``: ``"random"`` (an independent mask per child), ``"magnitude"`` (the smallest |w| removed: the same
    mask for every child) or ``"partition"`` (Neural Partitioning: groups of k = 1/(1 − sparsity) children whose masks
    partition the weights; ``sparsity=0.5`` gives anti-mask pairs M, 1 − M; ``n_children`` must be a multiple of k).
    ``prune_epochs`` = 0 prunes everything at once (one-shot); ε > 0 prunes iteratively, to sparsity · min(e+1, ε)/ε
    at the start of tuning epoch e (random: nested masks of a fixed random priority; magnitude: smallest |w| among
    the weights still kept), reaching the target at epoch ε − 1 (the iterative baseline of Ch. 6; random iterative
    masks remove exact counts). The parent is not modified.

    Parameters
    ----------
    parent : nn.Module
        The trained parent.
    n_children : int
        How many children.
    sparsity : float, default 0.5
        The fraction removed.
    method : {"random", "magnitude", "partition"}, default "random"
        How masks are chosen.
    structure, scope, exact, layers, seed
        As :func:`sample_masks`.
    prune_epochs : int, default 0
        ε (0: one-shot).

    Returns
    -------
    list of nn.Module
        The children.

    Examples
    --------
    An anti-mask pair splits the parent's weights between two children:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> a, b = (child_masks(c)["0.weight"] for c in pruned_children(net, 2, 0.5, method="partition", seed=0))
    >>> print(torch.equal(a + b, torch.ones(3, 4)))
    True
    """
    exact = boolean("exact", exact)
    n_children, sparsity = _check_common(parent, n_children, sparsity, method, structure, scope)
    prune_epochs = integer_at_least("prune_epochs", prune_epochs, lo=0)
    g = generator(seed)
    children = []
    if prune_epochs == 0:
        for masks in _children_masks(parent, n_children, sparsity, method, structure, scope, exact, layers, g):
            children.append(apply_masks(copy.deepcopy(parent), masks))
        return children
    if method == "partition":
        raise ValueError("method='partition' prunes one-shot; use prune_epochs=0 (iterative pruning supports "
                         "method='random' or 'magnitude')")
    weights = maskable_weights(parent, layers, structure)
    for _ in range(n_children):
        child = copy.deepcopy(parent)
        mods = _modules(child, layers, structure)
        cg = generator(_next_seed(g))
        for key, w in weights.items():
            shape = _unit_shape(w, structure)
            priority = (torch.rand(shape, generator=cg, dtype=torch.float64) if method == "random"
                        else torch.full(shape, math.nan, dtype=torch.float64))
            p = IterativeMask(torch.ones(shape, dtype=torch.float64), priority, sparsity, prune_epochs, scope,
                              structure)
            _register(mods[key.removesuffix(".weight")], p, zero_original=False)
        children.append(set_epoch(child, 0))
    return children


def stochastic_children(parent: nn.Module, n_children: int, sparsity: float = 0.5, *, anneal: str = "temperature",
                        anneal_epochs: int = 5, tau0: float = 0.5, method: str = "random",
                        structure: str = "unstructured", scope: str = "local", exact: bool = False,
                        layers: Sequence[str] | None = None, seed: int = 0) -> list[nn.Module]:
    """``n_children`` copies of ``parent`` with stochastic, annealed masks (Ch. 6, Alg. 3); tune them with
    :func:`tune`. In training mode every forward pass draws B ~ Bernoulli(P_e) and uses ``original ∘ B``; in eval
    mode the target ``original ∘ M``. Nothing is zeroed: the weights off M keep the parent's values and can pop back in.

    ``anneal="temperature"`` (:class:`TemperatureMask`): M from ``method`` (``"random"``, ``"magnitude"`` or
    ``"partition"`` as in :func:`pruned_children`), P_e = M + (1 − M) τ_e with τ_e = :func:`temperature`
    (e, ``tau0``, ``anneal_epochs``). ``anneal="random"`` (:class:`RandomAnnealMask`, ``method="random"`` only):
    U ~ U(0, 1) per unit, M = 1[U ≥ sparsity] (exact count by rank with ``exact=True`` or global scope), and P moves
    linearly from U to M over ``anneal_epochs`` epochs. From epoch ε on the mask is M and no longer random.

    Parameters
    ----------
    parent : nn.Module
        The trained parent.
    n_children : int
        How many children.
    sparsity : float, default 0.5
        The target's fraction removed.
    anneal : {"temperature", "random"}, default "temperature"
        The annealing.
    anneal_epochs : int, default 5
        ε.
    tau0 : float, default 0.5
        τ₀ (temperature annealing).
    method, structure, scope, exact, layers, seed
        As :func:`pruned_children`.

    Returns
    -------
    list of nn.Module
        The children.

    Examples
    --------
    In eval mode a child applies its target mask:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> child = stochastic_children(net, 2, 0.5, seed=0)[0].eval()
    >>> original = child[0].parametrizations.weight.original
    >>> print(torch.equal(child[0].weight, original * child_masks(child)["0.weight"]))
    True
    """
    exact = boolean("exact", exact)
    n_children, sparsity = _check_common(parent, n_children, sparsity, method, structure, scope)
    one_of("anneal", anneal, ANNEALS)
    anneal_epochs = integer_at_least("anneal_epochs", anneal_epochs)
    tau0 = real_scalar("tau0", tau0, lo=0.0, hi=1.0)
    g = generator(seed)
    weights = maskable_weights(parent, layers, structure)
    if anneal == "temperature":
        unit_sets = _children_masks(parent, n_children, sparsity, method, structure, scope, exact, layers, g)
        make = [{key: TemperatureMask(m[key], tau0, anneal_epochs) for key in m} for m in unit_sets]
    else:
        if method != "random":
            raise ValueError(f"anneal='random' draws its own random target (method='random'), got method={method!r}")
        make = []
        for _ in range(n_children):
            u = _uniform({key: _unit_shape(w, structure) for key, w in weights.items()}, generator(_next_seed(g)))
            if scope == "local" and not exact:
                target = {key: (v >= sparsity).to(torch.float64) for key, v in u.items()}
            else:
                target = _keep_lowest_removed(u, sparsity, scope)
            make.append({key: RandomAnnealMask(target[key], u[key], anneal_epochs) for key in u})
    children = []
    for params in make:
        child = copy.deepcopy(parent)
        mods = _modules(child, layers, structure)
        for key, p in params.items():
            _register(mods[key.removesuffix(".weight")], p, zero_original=False)
        children.append(child)
    return children


def _perturb(child, noise):
    with torch.no_grad():
        mods = dict(child.named_modules())
        for key, delta in noise.items():
            w = _raw(mods[key.removesuffix(".weight")])
            w.add_(delta.to(device=w.device, dtype=w.dtype))


def noisy_children(parent: nn.Module, n_children: int, sigma: float, sparsity: float = 0.0, *, mu: float = 0.0,
                   mirrored: bool = False, layers: Sequence[str] | None = None, seed: int = 0) -> list[nn.Module]:
    """``n_children`` noise-mutated copies of ``parent``, no training (Ch. 4, Alg. 1): on every masked layer
    Ŵ = W + N ∘ M with N ~ 𝒩(μ, σ²) entrywise (absolute σ, the same in every layer) and M ~ Bernoulli(1 − sparsity)
    the mutation mask (1 = mutated; ``sparsity`` is the fraction of weights left untouched, Eq. 4.1).

    ``mirrored=True``: mirrored and partitioned noise (Eqs. 4.6–4.11); every draw of (M, N) gives four children
    W + N∘M, W + N∘(1−M), W − N∘M, W − N∘(1−M), in that order, so ``n_children`` must be a multiple of 4 (children
    2j+1 and 2j+3 of a group sum to 2W, as do 2j+2 and 2j+4). Under a mask parametrization (a pruned parent) the
    stored ``original`` is perturbed, so frozen zeros stay zero. Select the best with :func:`select_top_k`, pick σ
    with :func:`trust_region_search`.

    Parameters
    ----------
    parent : nn.Module
        The trained parent.
    n_children : int
        How many children (a multiple of 4 when mirrored).
    sigma : float
        σ ≥ 0.
    sparsity : float, default 0.0
        The fraction of weights left untouched.
    mu : float, default 0.0
        μ.
    mirrored : bool, default False
        Mirrored and partitioned noise.
    layers : list of str, optional
        Module names to perturb.
    seed : int, default 0
        Seeds masks and noise.

    Returns
    -------
    list of nn.Module
        The children.

    Examples
    --------
    Mirrored children W + N∘M and W − N∘M average to the parent:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> kids = noisy_children(net, 4, sigma=0.1, sparsity=0.5, mirrored=True, seed=0)
    >>> print(len(kids), torch.allclose(kids[0][0].weight + kids[2][0].weight, 2 * net[0].weight))
    4 True
    """
    if not isinstance(parent, nn.Module):
        raise ValueError(f"parent must be a torch.nn.Module, got {type(parent).__name__}")
    mirrored = boolean("mirrored", mirrored)
    n_children = integer_at_least("n_children", n_children)
    sigma = real_scalar("sigma", sigma, lo=0.0)
    sparsity = _sparsity(sparsity)
    mu = real_scalar("mu", mu)
    if mirrored and n_children % 4:
        raise ValueError(f"n_children must be a multiple of 4 with mirrored=True (4 children per draw), "
                         f"got {n_children}")
    weights = maskable_weights(parent, layers)
    g = generator(seed)
    children = []
    for _ in range(n_children // 4 if mirrored else n_children):
        m = _unit_masks(weights, sparsity, "random", "unstructured", "local", False, g)
        n = {k: mu + sigma * torch.randn(w.shape, generator=g, dtype=torch.float64) for k, w in weights.items()}
        signs_and_masks = ([(+1, m), (+1, anti_masks(m)), (-1, m), (-1, anti_masks(m))] if mirrored else [(+1, m)])
        for sign, mask in signs_and_masks:
            child = copy.deepcopy(parent)
            _perturb(child, {k: sign * n[k] * mask[k] for k in weights})
            children.append(child)
    return children


# --------------------------------------------------------------------------------------------------------------
# evaluation and combination

@torch.no_grad()
def _logits(model, x, batch_size=4096):
    """Outputs of ``model`` on ``x`` in eval mode (deterministic masks, no dropout), float64 on the CPU."""
    was = model.training
    model.eval()
    try:
        p = next(model.parameters(), None)
        def move(t):
            return t.to(device=p.device, dtype=p.dtype if t.is_floating_point() else None) if p is not None else t
        x = tuple(move(t) for t in x) if isinstance(x, tuple) else move(x)
        n = len(x[0]) if isinstance(x, tuple) else len(x)
        outs = []
        for s in range(0, n, batch_size):
            xb = tuple(t[s:s + batch_size] for t in x) if isinstance(x, tuple) else x[s:s + batch_size]
            outs.append(apply_model(model, xb).to(torch.float64).cpu())
        return torch.cat(outs)
    finally:
        model.train(was)


def member_probabilities(members: Sequence[nn.Module], x, batch_size: int = 4096) -> torch.Tensor:
    """softmax(f_i(x)) of every member, a float64 tensor of shape (k, N, C) (eval mode; logits cast to float64 before
    the softmax, so a confident wrong member underflows to 0 only past a logit gap of ~745).

    Parameters
    ----------
    members : sequence of nn.Module
        The ensemble's members (classifiers returning logits).
    x : torch.Tensor or tuple of torch.Tensor
        Inputs.
    batch_size : int, default 4096
        Samples per forward pass.

    Returns
    -------
    torch.Tensor
        (k, N, C), float64.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> p = member_probabilities([net, net], torch.randn(6, 4))
    >>> print(tuple(p.shape), torch.allclose(p.sum(-1), torch.ones(2, 6, dtype=torch.float64)))
    (2, 6, 2) True
    """
    if isinstance(members, nn.Module) or not isinstance(members, Sequence) or not members:
        raise ValueError("members must be a non-empty list of torch modules")
    return torch.stack([torch.softmax(_logits(m, x, batch_size), dim=-1) for m in members])


def ensemble_predict(members: Sequence[nn.Module], x, *, method: str = "average", parent: nn.Module | None = None,
                     include_parent: bool = False, batch_size: int = 4096) -> torch.Tensor:
    """The ensemble's class scores on ``x``, a float64 (N, C) tensor whose argmax is the ensemble's prediction
    (§3.2.5).

    ``method="average"`` (default): f̄(x) = (1/k) Σ_i softmax(f_i(x)), the mean of the members' softmax outputs
    (Eq. 3.22, w_i = 1). ``method="vote"``: the fraction of members whose argmax is each class, f̄(x)_c =
    (1/k) Σ_i 1[argmax f_i(x) = c]; its argmax is the majority vote (mode), ties to the lowest class index.
    The members are the children only (Table 5.3 counts children only); ``include_parent=True`` adds ``parent`` as one
    more member, as Algs. 1–3 print it.

    Parameters
    ----------
    members : sequence of nn.Module
        The ensemble's members (classifiers returning logits).
    x : torch.Tensor or tuple of torch.Tensor
        Inputs.
    method : {"average", "vote"}, default "average"
        How members combine.
    parent : nn.Module, optional
        The parent, for ``include_parent``.
    include_parent : bool, default False
        Count the parent as a member.
    batch_size : int, default 4096
        Samples per forward pass.

    Returns
    -------
    torch.Tensor
        (N, C), float64.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> kids = noisy_children(net, 2, sigma=0.1, seed=0)
    >>> x = torch.randn(6, 4)
    >>> print(torch.allclose(ensemble_predict(kids, x), member_probabilities(kids, x).mean(0)))
    True
    >>> print(torch.allclose(ensemble_predict(kids, x, method="vote").sum(-1), torch.ones(6, dtype=torch.float64)))
    True
    """
    include_parent = boolean("include_parent", include_parent)
    one_of("method", method, COMBINE)
    if include_parent:
        if parent is None:
            raise ValueError("include_parent=True needs parent")
        members = [parent, *members]
    probs = member_probabilities(members, x, batch_size)
    if method == "average":
        return probs.mean(dim=0)
    votes = F.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(torch.float64)
    return votes.mean(dim=0)


def evaluate_ensemble(members: Sequence[nn.Module], x, y, *, parent: nn.Module | None = None,
                      include_parent: bool = False, diversity: bool = True) -> dict:
    """Acc, NLL and ECE (Eqs. 3.26–3.28) of the averaged ensemble, its majority-vote accuracy, the members' mean
    accuracy (± population std) and, with ``diversity`` and ≥ 2 members, the pairwise disagreement, KL and
    correlation (mean and std over pairs, :func:`rmtnet.nets.metrics.pairwise_diversity`).

    Parameters
    ----------
    members : sequence of nn.Module
        The ensemble's members (classifiers returning logits).
    x : torch.Tensor or tuple of torch.Tensor
        Inputs.
    y : torch.Tensor
        Integer labels.
    parent : nn.Module, optional
        The parent, for ``include_parent``.
    include_parent : bool, default False
        Count the parent as a member.
    diversity : bool, default True
        Add the pairwise measures.

    Returns
    -------
    dict
        Metric name → value.

    Examples
    --------
    Two copies of one network never disagree:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> r = evaluate_ensemble([net, net], torch.randn(6, 4), torch.tensor([0, 1, 0, 1, 0, 1]))
    >>> print(r["n_members"], r["disagreement"], r["kl"], r["accuracy"] == r["member_accuracy"])
    2 0.0 0.0 True
    """
    include_parent, diversity = boolean("include_parent", include_parent), boolean("diversity", diversity)
    if include_parent:
        if parent is None:
            raise ValueError("include_parent=True needs parent")
        members = [parent, *members]
    probs = member_probabilities(members, x)
    avg = probs.mean(dim=0)
    votes = F.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(torch.float64).mean(dim=0)
    member_acc = np.array([metrics.accuracy(p, y) for p in probs])
    out = {"accuracy": metrics.accuracy(avg, y), "nll": metrics.nll(avg, y), "ece": metrics.ece(avg, y),
           "vote_accuracy": metrics.accuracy(votes, y), "member_accuracy": float(member_acc.mean()),
           "member_accuracy_std": float(member_acc.std()), "n_members": len(members)}
    if diversity and len(members) >= 2:
        out.update(metrics.pairwise_diversity(probs))
    return out


def output_kl(parent: nn.Module, child: nn.Module, x) -> float:
    """KL(F(x; θ) ‖ F(x; θ + γ)) = (1/N) Σ_n Σ_c F_c log(F_c / F′_c) on softmax outputs (Eq. 4.5), from log-softmaxes
    in float64 (no 0·log 0 issues).

    Parameters
    ----------
    parent, child : nn.Module
        The two networks.
    x : torch.Tensor or tuple of torch.Tensor
        Inputs.

    Returns
    -------
    float
        The mean KL divergence, in nats.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> x = torch.randn(6, 4)
    >>> print(output_kl(net, net, x), output_kl(net, noisy_children(net, 1, sigma=0.5)[0], x) > 0)
    0.0 True
    """
    lp = torch.log_softmax(_logits(parent, x), dim=-1)
    lq = torch.log_softmax(_logits(child, x), dim=-1)
    return float((lp.exp() * (lp - lq)).sum(dim=-1).mean())


def select_top_k(members: Sequence[nn.Module], x, y, k: int) -> tuple[list[nn.Module], np.ndarray]:
    """The ``k`` members of highest accuracy on the validation set (x, y) ("fitness", Alg. 1), best first (ties keep
    the input order), and all members' accuracies in the input order.

    Parameters
    ----------
    members : sequence of nn.Module
        The ensemble's members (classifiers returning logits).
    x : torch.Tensor or tuple of torch.Tensor
        Validation inputs.
    y : torch.Tensor
        Validation labels.
    k : int
        1 ≤ k ≤ len(members).

    Returns
    -------
    tuple
        (the k best members, an ndarray of every member's accuracy).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> kids = noisy_children(net, 4, sigma=0.5, seed=0)
    >>> best, acc = select_top_k(kids, torch.randn(6, 4), torch.tensor([0, 1, 0, 1, 0, 1]), 2)
    >>> print(len(best), acc.shape, bool(acc[kids.index(best[0])] == acc.max()))
    2 (4,) True
    """
    if isinstance(members, nn.Module) or not isinstance(members, Sequence) or not members:
        raise ValueError("members must be a non-empty list of torch modules")
    k = integer_at_least("k", k)
    if k > len(members):
        raise ValueError(f"k must be <= the number of members ({len(members)}), got {k}")
    acc = np.array([metrics.accuracy(torch.softmax(_logits(m, x), -1), y) for m in members])
    order = np.argsort(-acc, kind="stable")[:k]
    return [members[i] for i in order], acc


# --------------------------------------------------------------------------------------------------------------
# trust-region search (§4.2.1)

@dataclasses.dataclass(frozen=True)
class TrustRegion:
    """Result of :func:`trust_region_search`: the chosen mutation ``sigma`` and ``sparsity``, the mean output KL there
    (Eq. 4.5), the children's mean validation accuracy there (NaN without labels), whether the target KL was reached
    inside the σ range (``reached``), and every evaluation in ``table`` (columns sigma, sparsity, kl, kl_std,
    accuracy, stage ∈ {"grid", "bisection"}).

    Parameters
    ----------
    sigma, sparsity : float
        The chosen noise scale and mutation sparsity.
    kl : float
        The mean output KL there.
    accuracy : float
        The children's mean validation accuracy there (NaN without labels).
    reached : bool
        Whether the target KL was reached.
    table : pandas.DataFrame
        Every evaluation of the search.

    Examples
    --------
    >>> r = TrustRegion(sigma=0.1, sparsity=0.0, kl=0.02, accuracy=float("nan"), reached=True, table=pd.DataFrame())
    >>> print([f.name for f in dataclasses.fields(r)], r.reached)
    ['sigma', 'sparsity', 'kl', 'accuracy', 'reached', 'table'] True
    """

    sigma: float
    sparsity: float
    kl: float
    accuracy: float
    reached: bool
    table: pd.DataFrame


def _checked_search(parent, target_kl, y, sigmas, sparsities, n_draws, rtol, max_iter):
    """:func:`trust_region_search`'s arguments checked, in that order; returns ``(target_kl, rtol, n_draws,
    max_iter, sigmas, sparsities)``, the default σ grid filled in and the sparsities as a list."""
    if not isinstance(parent, nn.Module):
        raise ValueError(f"parent must be a torch.nn.Module, got {type(parent).__name__}")
    target_kl = real_scalar("target_kl", target_kl, lo=0.0, lo_open=True)
    rtol = real_scalar("rtol", rtol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    n_draws, max_iter = integer_at_least("n_draws", n_draws), integer_at_least("max_iter", max_iter)
    sigmas = np.geomspace(1e-4, 1.0, 13) if sigmas is None else np.asarray(sigmas, dtype=np.float64)
    if sigmas.ndim != 1 or len(sigmas) < 1 or not np.all(np.isfinite(sigmas)) or np.any(sigmas <= 0) \
            or np.any(np.diff(sigmas) <= 0):
        raise ValueError(f"sigmas must be a 1-d strictly increasing array of positive numbers, got {sigmas!r}")
    if isinstance(scalar(sparsities), numbers.Real):
        sparsities = (sparsities,)
    sparsities = [_sparsity(s, "sparsities") for s in sparsities]
    if not sparsities:
        raise ValueError("sparsities must hold at least one value in [0, 1)")
    if len(sparsities) > 1 and y is None:
        raise ValueError("y (validation labels) is needed to choose among several sparsities")
    return target_kl, rtol, n_draws, max_iter, sigmas, sparsities


class _Mutants:
    """Mutants W + σ Z_d ∘ M_d of ``parent`` (on a copy of it) compared with it on the held-out inputs ``x``: the
    draws (Z_d, M_d) of one sparsity are made once and rescaled at every σ (common random numbers); every
    evaluation is kept as a row of the search's table."""

    def __init__(self, parent, x, y, layers):
        self.weights = maskable_weights(parent, layers)
        self.base = {k: w.detach().clone() for k, w in self.weights.items()}
        self.log_p = torch.log_softmax(_logits(parent, x), dim=-1)
        self.work = copy.deepcopy(parent)
        self.wmods = {f"{n}.weight": m for n, m in _modules(self.work, layers).items()}
        self.x, self.y, self.rows = x, y, []

    def draw(self, sparsity, n_draws, g):
        """``n_draws`` new draws from the generator ``g``: Z_d ~ 𝒩(0, 1) masked by M_d ~ Bernoulli(1 − sparsity)."""
        self.sparsity, self.draws = sparsity, []
        for _ in range(n_draws):
            m = _unit_masks(self.weights, sparsity, "random", "unstructured", "local", False, g)
            self.draws.append({k: torch.randn(w.shape, generator=g, dtype=torch.float64) * m[k]
                               for k, w in self.weights.items()})

    def measure(self, sigma, stage):
        """The row of σ: mean and std over the draws of KL(F(x; W) ‖ F(x; W + σ Z_d ∘ M_d)) (Eq. 4.5), and the
        mutants' mean accuracy on (x, y) (NaN without labels)."""
        kls, accs = [], []
        for z in self.draws:
            with torch.no_grad():
                for k, w0 in self.base.items():
                    _raw(self.wmods[k]).copy_(w0 + (sigma * z[k]).to(device=w0.device, dtype=w0.dtype))
            log_q = torch.log_softmax(_logits(self.work, self.x), dim=-1)
            kls.append(float((self.log_p.exp() * (self.log_p - log_q)).sum(-1).mean()))
            if self.y is not None:
                accs.append(metrics.accuracy(log_q.exp(), self.y))
        row = {"sigma": float(sigma), "sparsity": self.sparsity, "kl": float(np.mean(kls)),
               "kl_std": float(np.std(kls)), "accuracy": float(np.mean(accs)) if accs else math.nan, "stage": stage}
        self.rows.append(row)
        return row


def _crossing(measure, sigmas, target_kl, rtol, max_iter):
    """``(row, reached)``: the row where ``measure``'s KL crosses ``target_kl``. The grid ``sigmas`` first; the
    first grid point with KL ≥ target and the one below it (σ = 0 below the first) bracket the crossing, which is
    bisected geometrically until |KL − target| ≤ ``rtol`` · target (after ``max_iter`` steps, the bracket's end
    closer to it). A grid that never reaches the target gives its largest σ, unreached."""
    grid = [measure(sig, "grid") for sig in sigmas]
    above = [i for i, r in enumerate(grid) if r["kl"] >= target_kl]
    if not above:
        return grid[-1], False
    j = above[0]
    hi = grid[j]
    lo = grid[j - 1] if j > 0 else {"sigma": 0.0, "kl": 0.0}
    found = hi if abs(hi["kl"] - target_kl) <= rtol * target_kl else None
    for _ in range(max_iter if found is None else 0):
        mid_sigma = math.sqrt(lo["sigma"] * hi["sigma"]) if lo["sigma"] > 0 else hi["sigma"] / 2
        mid = measure(mid_sigma, "bisection")
        if abs(mid["kl"] - target_kl) <= rtol * target_kl:
            found = mid
            break
        lo, hi = (mid, hi) if mid["kl"] < target_kl else (lo, mid)
    if found is None:                 # max_iter ran out: the closer end of the final bracket
        found = min((lo, hi), key=lambda r: abs(r["kl"] - target_kl) if "stage" in r else math.inf)
    return found, True


def _most_accurate(best, y):
    """Among the sparsities' ``(row, reached)``, those that reached the target (all if none did): the most
    accurate with labels ``y`` (NaN last), else the first."""
    reached_any = any(ok for _, ok in best)
    pool = [(r, ok) for r, ok in best if ok] if reached_any else best
    return max(pool, key=lambda t: -math.inf if math.isnan(t[0]["accuracy"]) else t[0]["accuracy"]) \
        if y is not None else pool[0]


def trust_region_search(parent: nn.Module, x, *, target_kl: float = 0.02, y=None, sigmas=None,
                        sparsities=(0.0,), n_draws: int = 4, rtol: float = 0.05, max_iter: int = 40,
                        layers: Sequence[str] | None = None, seed: int = 0) -> TrustRegion:
    """The noise scale σ (and mutation sparsity) whose mutants diverge from ``parent`` by the target output KL Δ on
    held-out inputs ``x`` (§4.2.1, Alg. 1's ``trustRegionSearch``).

    For each sparsity s the mean KL over ``n_draws`` mutants, KL_s(σ) = mean_d KL(F(x; W) ‖ F(x; W + σ Z_d ∘ M_d))
    with Z_d ~ 𝒩(0, 1) and M_d ~ Bernoulli(1 − s), uses the same draws (Z_d, M_d) at every σ (common random numbers,
    so KL_s is a smooth function of σ). It is evaluated on the ascending grid ``sigmas`` (default 13 points
    geometrically from 1e-4 to 1); the first grid point with KL ≥ Δ and the one below it bracket the crossing, which
    is then bisected (geometrically) until |KL − Δ| ≤ ``rtol`` · Δ or ``max_iter`` steps. If the grid never reaches Δ
    the largest σ is kept with ``reached=False``. Among sparsities, the one whose children are most accurate on
    (x, ``y``) at their σ wins ("the σ that maximizes accuracy while KL ≈ Δ"); several sparsities need ``y``.

    Parameters
    ----------
    parent : nn.Module
        The trained parent (a classifier returning logits; not modified).
    x : torch.Tensor or tuple of torch.Tensor
        Held-out inputs.
    target_kl : float, default 0.02
        Δ, in nats.
    y : torch.Tensor, optional
        Held-out labels (for the accuracies; needed with several sparsities).
    sigmas : array_like, optional
        The ascending σ grid.
    sparsities : float or sequence of float, default (0.0,)
        Mutation sparsities s ∈ [0, 1) to try.
    n_draws : int, default 4
        Mutants per sparsity.
    rtol : float, default 0.05
        Relative tolerance on the KL.
    max_iter : int, default 40
        Bisection steps at most.
    layers : sequence of str, optional
        The modules mutated (None: every maskable weight).
    seed : int, default 0
        Seed of the draws.

    Returns
    -------
    TrustRegion

    Examples
    --------
    The KL found is within rtol · Δ = 0.001 of Δ = 0.02, after the 13 grid points and some bisection steps:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> r = trust_region_search(net, torch.randn(16, 4), target_kl=0.02)
    >>> print(r.reached, abs(r.kl - 0.02) <= 0.05 * 0.02, int((r.table["stage"] == "grid").sum()))
    True True 13
    """
    target_kl, rtol, n_draws, max_iter, sigmas, sparsities = _checked_search(
        parent, target_kl, y, sigmas, sparsities, n_draws, rtol, max_iter)
    mutants = _Mutants(parent, x, y, layers)
    g = generator(seed)
    best = []
    for s in sparsities:
        mutants.draw(s, n_draws, g)
        best.append(_crossing(mutants.measure, sigmas, target_kl, rtol, max_iter))
    chosen, ok = _most_accurate(best, y)
    return TrustRegion(sigma=chosen["sigma"], sparsity=chosen["sparsity"], kl=chosen["kl"],
                       accuracy=chosen["accuracy"], reached=ok, table=pd.DataFrame(mutants.rows))


# --------------------------------------------------------------------------------------------------------------
# tuning

class OneCycle:
    """The thesis's one-cycle tuning schedule (§5.2, Eqs. 5.4–5.5) for the ``schedule`` argument of
    :func:`rmtnet.nets.training.train`: cosine warm-up from η_init = max_lr/div_factor to ``max_lr`` over the first
    ``pct_start`` of the steps, then cosine cool-down to η_min = η_init/final_div_factor, no annihilation phase; the
    momentum (SGD) or β₁ (Adam) follows the inverse cycle 0.95 → 0.85 → 0.95 (Fig. 5.3; the values are torch's
    defaults, the thesis gives none). Defaults: 0.001 → 0.1 at 10 % → 1e-7, i.e.
    ``OneCycleLR(max_lr=0.1, pct_start=0.1, div_factor=100, final_div_factor=1e4, anneal_strategy="cos")``.
    (``train``'s own ``"onecycle"`` is Smith's policy with torch's other defaults and fixed momentum.)

    Parameters
    ----------
    max_lr : float, default 0.1
        The peak learning rate.
    pct_start : float, default 0.1
        The warm-up's share of the steps.
    div_factor : float, default 100.0
        η_init = max_lr/div_factor.
    final_div_factor : float, default 1e4
        η_min = η_init/final_div_factor.
    cycle_momentum : bool, default True
        Cycle the momentum (or β₁) inversely.

    Examples
    --------
    Called with an optimizer and the number of steps it returns torch's scheduler:

    >>> opt = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
    >>> scheduler = OneCycle()(opt, total_steps=100)
    >>> lrs = []
    >>> for _ in range(100):
    ...     lrs.append(opt.param_groups[0]["lr"])
    ...     opt.step()
    ...     scheduler.step()
    >>> print(f"{lrs[0]:.6f} {max(lrs):.6f}", lrs[-1] < 1e-6)
    0.001000 0.100000 True
    """

    def __init__(self, max_lr: float = 0.1, pct_start: float = 0.1, div_factor: float = 100.0,
                 final_div_factor: float = 1e4, cycle_momentum: bool = True):
        cycle_momentum = boolean("cycle_momentum", cycle_momentum)
        self.max_lr = real_scalar("max_lr", max_lr, lo=0.0, lo_open=True)
        self.pct_start = real_scalar("pct_start", pct_start, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        self.div_factor = real_scalar("div_factor", div_factor, lo=0.0, lo_open=True)
        self.final_div_factor = real_scalar("final_div_factor", final_div_factor, lo=0.0, lo_open=True)
        self.cycle_momentum = bool(cycle_momentum)

    def __call__(self, optimizer, total_steps):
        return torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=self.max_lr, total_steps=total_steps, pct_start=self.pct_start, anneal_strategy="cos",
            div_factor=self.div_factor, final_div_factor=self.final_div_factor, three_phase=False,
            cycle_momentum=self.cycle_momentum)

    def __repr__(self):
        return (f"OneCycle(max_lr={self.max_lr:g}, pct_start={self.pct_start:g}, div_factor={self.div_factor:g}, "
                f"final_div_factor={self.final_div_factor:g}, cycle_momentum={self.cycle_momentum})")


def tune(child: nn.Module, data, epochs: int, *, optimizer: str = "sgd", lr: float = 0.1,
         schedule: str | Callable = "onecycle", momentum: float = 0.9, weight_decay: float = 0.0,
         batch_size: int = 128, seed: int = 0, progress: bool = False, callback: Callable | None = None,
         **train_kwargs) -> pd.DataFrame:
    """Tune one child (Alg. 2/3, "tune") with :func:`rmtnet.nets.training.train` and return its metrics table.

    ``schedule="onecycle"`` is the thesis's :class:`OneCycle` peaking at ``lr`` (0.001 → 0.1 → 1e-7 by default);
    ``"constant"`` keeps ``lr`` (the thesis's "FT" baseline uses 0.01); anything else goes to ``train`` as it is.
    Every scheduled mask is moved to epoch e before the e-th epoch (:func:`set_epoch`, through ``train``'s callback,
    which needs an evaluation every epoch: ``eval_every`` is 1). Frozen zeros hold under any optimizer (see the module
    docstring). ``train_kwargs`` go to ``train`` (not ``checkpoint``: annealed masks are not checkpointed).

    Parameters
    ----------
    child : nn.Module
        The child (from :func:`pruned_children`, :func:`stochastic_children`, …); tuned in place.
    data : rmtnet.nets.data.Dataset
        The data.
    epochs : int
        Tuning epochs.
    optimizer, lr, momentum, weight_decay, batch_size, seed, progress
        As in :func:`rmtnet.nets.training.train`.
    schedule : str or callable, default "onecycle"
        ``"onecycle"`` (:class:`OneCycle` peaking at ``lr``) or anything ``train`` takes.
    callback : callable, optional
        ``callback(epoch, model, row)`` after every evaluation, after the masks have moved.
    **train_kwargs
        Further arguments of ``train``.

    Returns
    -------
    pandas.DataFrame
        ``train``'s metrics table, one row per epoch (epoch 0 included).

    Examples
    --------
    12 training points in batches of 4 are 3 steps an epoch; exactly half of the first layer's 12 weights were
    pruned (``exact=True``), and those 6 zeros stay zero through tuning:

    >>> from rmtnet.nets.data import Dataset
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    >>> data = Dataset(x[:12], y[:12], x[12:], y[12:], n_classes=2, name="random", shape=(4,))
    >>> child = pruned_children(net, 1, 0.5, exact=True, seed=0)[0]
    >>> table = tune(child, data, epochs=2, batch_size=4)
    >>> print(len(table), table["step"].tolist(), int((child[0].weight == 0).sum()))
    3 [0, 3, 6] 6
    """
    if "checkpoint" in train_kwargs or "eval_every" in train_kwargs:
        raise ValueError("tune does not take checkpoint or eval_every (annealed masks move once per epoch)")
    if schedule == "onecycle":
        schedule = OneCycle(max_lr=lr)

    def step(epoch, model, row):
        set_epoch(model, epoch)
        if callback is not None:
            callback(epoch, model, row)

    set_epoch(child, 0)
    return train(child, data, epochs=epochs, batch_size=batch_size, optimizer=optimizer, lr=lr, momentum=momentum,
                 weight_decay=weight_decay, schedule=schedule, seed=seed, progress=progress, callback=step,
                 eval_every=1, **train_kwargs)
