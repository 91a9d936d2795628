"""The runs behind the Subnetwork Ensemble figure scripts, as picklable module-level functions for
:func:`rmtnet.experiments.sweep` (each returns one flat dict of scalars; the script stays a thin plotting layer).

- :func:`spiral_run` — one cell of Fig. 4.2 (Whitaker 2023, §4.3.1): noise mutations of a spiral MLP at (σ, sparsity).
- :func:`noisy_ensemble_run`, :func:`degradation_fit` — Fig. 4.3 on the spirals: the candidates' KL and accuracy, the
  top-k ensemble by vote and by average; the linear fit of accuracy in KL and the KL where degradation starts.
- :func:`budget_run` — one method of Table 5.1 (§5.3.3, "small budget"): independent, dropout, bagging, SSE with
  random children (R) or Neural Partitioning (NP), all for the same total number of epochs; :func:`steps_per_epoch`.
- :func:`anneal_run` — one cell of Table 6.1 (§6.3.1): one child pruned one-shot or iteratively, or annealed
  (random or temperature), then tuned with a constant or one-cycle learning rate.

Models are small ReLU MLPs (:func:`classifier`); data are rmtnet's offline sets with their fixed seed-0 split (the
``seed`` of a run varies the initial weights, the masks and the minibatch order, not the split), or CIFAR-10 with its
official split from a folder the user supplies (``dataset="cifar10"``, ``data_dir=`` or ``$RMTNET_CIFAR10``;
:func:`load`). Minibatches of 32 by
default (the thesis states none): the budgets are counted in epochs, and an epoch is ⌈n_train/batch⌉ steps
(:func:`steps_per_epoch`; the training loop keeps the last, smaller batch): MNIST-5k's 4,000 training images are 125
steps at batch 32 but only 32 at batch 128 (CIFAR's 50,000 at 128 are 391). ``budget_run(child_epochs=...)`` moves
epochs between the parent and its children at the same total, the steps-per-child axis of the
subnetwork_child_steps figure. Every run sets torch to one intra-op thread and restores the previous setting.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np
import torch
from torch import nn

from rmtnet._validation import finite_array, integer_at_least, one_of, real_scalar
from rmtnet.nets import data as datasets
from rmtnet.nets import ensembles as E
from rmtnet.nets.metrics import total_distance
from rmtnet.nets.layers import gaussian_, generator
from rmtnet.nets.training import train

LOADERS = {"mnist5k": datasets.mnist5k, "digits": datasets.digits, "cifar10": datasets.cifar10}
BUDGET_METHODS = ("independent", "dropout", "bagging", "sse_r", "sse_np")
ANNEAL_METHODS = ("one_shot", "iterative", "random_anneal", "temperature_anneal")


def _one_thread(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(before)
    return wrapper


def load(dataset: str, data_dir=None) -> datasets.Dataset:
    """A classification set by name (``"mnist5k"``, ``"digits"`` with their seed-0 split; ``"cifar10"`` with its
    official split, read from ``data_dir`` or, when that is None, from ``$RMTNET_CIFAR10``), cached per process."""
    one_of("dataset", dataset, sorted(LOADERS))
    if dataset == "cifar10":
        data_dir = str(datasets.cifar10_path(data_dir))
    return _load(dataset, data_dir)


@functools.lru_cache(maxsize=4)
def _load(dataset, data_dir):
    return datasets.classification(dataset, seed=0, data_dir=data_dir)


def classifier(n_in: int, width: int, depth: int, n_classes: int, dropout: float = 0.0, seed: int = 0) -> nn.Module:
    """Flatten → ``depth`` × [Linear(width) → ReLU (→ Dropout(p))] → Linear(n_classes). Weights N(0, 2/fan_in)
    (He), biases 0, drawn from ``seed`` on the CPU, so the model with and without dropout starts from the same
    weights."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
    g = generator(seed)
    layers: list[nn.Module] = [nn.Flatten()]
    widths = [n_in] + [width] * depth
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout > 0 else [])
    layers.append(nn.Linear(widths[-1], n_classes))
    for m in layers:
        if isinstance(m, nn.Linear):
            gaussian_(m.weight, math.sqrt(2.0 / m.in_features), g)
            nn.init.zeros_(m.bias)
    return nn.Sequential(*layers)


def _n_in(data):
    return math.prod(data.shape)


def _adam(model, data, epochs, seed, batch_size=128):
    """Adam with the fixed learning rate 1e-3 of Table 5.1 (``adamw`` with no weight decay is Adam)."""
    return train(model, data, epochs=epochs, optimizer="adamw", lr=1e-3, weight_decay=0.0, batch_size=batch_size,
                 seed=seed, progress=False)


def _test(report, prefix=""):
    return {f"{prefix}{k}": v for k, v in report.items()}


# --------------------------------------------------------------------------------------------------------------
# Fig. 4.2: decision boundaries of noisy children on the spirals

@functools.lru_cache(maxsize=4)
def _spiral_parent_state(seed, epochs, batch_size):
    torch.manual_seed(seed)
    data = datasets.spirals(seed=0)
    net = spiral_model(seed)
    _adam(net, data, epochs, seed, batch_size)
    return {k: v.clone() for k, v in net.state_dict().items()}


def spiral_model(seed: int = 0) -> nn.Module:
    """The 3-layer, 64-unit ReLU MLP of §4.3.1 (2 → 64 → 64 → 64 → 2)."""
    return classifier(2, 64, 3, 2, seed=seed)


def spiral_parent(seed: int = 0, epochs: int = 10, batch_size: int = 32) -> nn.Module:
    """The spiral parent of Fig. 4.2: :func:`spiral_model` trained by Adam (lr 1e-3) for 10 epochs on 2,500
    spiral points (:func:`rmtnet.nets.data.spirals`, seed 0; batch 32, the thesis gives none). Cached per process."""
    net = spiral_model(seed)
    net.load_state_dict(_spiral_parent_state(int(seed), int(epochs), int(batch_size)))
    return net.eval()


@_one_thread
def spiral_run(sigma: float, sparsity: float, n_draws: int = 8, seed: int = 0) -> dict:
    """Noise mutations W + N ∘ M (N ~ 𝒩(0, σ²), M ~ Bernoulli(1 − sparsity)) of the spiral parent: the mean and
    std over ``n_draws`` children of the output KL to the parent on the 250 test points (Eq. 4.5) and of their
    accuracy, the accuracy of their averaged ensemble, and the parent's accuracy. Child 0 is the one drawn in the
    figure (``noisy_children(parent, n_draws, sigma, sparsity, seed=seed)[0]``)."""
    data = datasets.spirals(seed=0)
    parent = spiral_parent(seed)
    kids = E.noisy_children(parent, int(n_draws), float(sigma), float(sparsity), seed=int(seed))
    kls = torch.tensor([E.output_kl(parent, k, data.x_test) for k in kids], dtype=torch.float64)
    rep = E.evaluate_ensemble(kids, data.x_test, data.y_test, diversity=False)
    return {"kl": float(kls.mean()), "kl_std": float(kls.std(unbiased=False)),
            "child_accuracy": rep["member_accuracy"], "child_accuracy_std": rep["member_accuracy_std"],
            "ensemble_accuracy": rep["accuracy"],
            "parent_accuracy": E.evaluate_ensemble([parent], data.x_test, data.y_test)["accuracy"]}


# --------------------------------------------------------------------------------------------------------------
# Fig. 4.3: KL against child accuracy, vote against average

def spiral_test_points(n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` fresh spiral points, the held-out split of :func:`rmtnet.nets.data.spirals` drawn with seed 1 (the
    parent learns from seed 0's training split and its candidates are selected on seed 0's 250 held-out points): the
    test set of the selected ensembles."""
    d = datasets.spirals(n_train=1, n_test=n, seed=1)
    return d.x_test, d.y_test


@_one_thread
def noisy_ensemble_run(sigma: float, sparsity: float, n_candidates: int = 16, top_k: int = 4, seed: int = 0,
                       pool: int = 0, parent_epochs: int = 10) -> dict:
    """Algorithm 1 of Whitaker (2023, Ch. 4) at one (σ, sparsity) on the spiral parent (:func:`spiral_parent`):
    ``n_candidates`` noise children W + N ∘ M (:func:`rmtnet.nets.ensembles.noisy_children`, masks and noise from
    ``1000·seed + pool``), each child's output KL to the parent (Eq. 4.5) and accuracy on the 250 held-out points
    of ``spirals(seed=0)`` (the validation set), the ``top_k`` most accurate there combined by averaging their
    softmax outputs and by majority vote (ties to the lower class), both scored on :func:`spiral_test_points`
    (the CIFAR ablation of Fig. 4.3: 16 candidates, the best 4).

    Returns lists ``kl`` and ``child_accuracy`` (one entry per candidate) and the scalars ``average_accuracy``,
    ``vote_accuracy``, ``member_test_accuracy`` (the selected members' mean), ``parent_accuracy`` (validation),
    ``parent_test_accuracy`` and ``n_validation``."""
    data = datasets.spirals(seed=0)
    parent = spiral_parent(seed, epochs=parent_epochs)
    kids = E.noisy_children(parent, int(n_candidates), float(sigma), float(sparsity), seed=1000 * int(seed) + pool)
    best, accuracy = E.select_top_k(kids, data.x_test, data.y_test, int(top_k))
    x_test, y_test = spiral_test_points()
    ensemble = E.evaluate_ensemble(best, x_test, y_test, diversity=False)
    return {"kl": [E.output_kl(parent, k, data.x_test) for k in kids], "child_accuracy": accuracy.tolist(),
            "average_accuracy": ensemble["accuracy"], "vote_accuracy": ensemble["vote_accuracy"],
            "member_test_accuracy": ensemble["member_accuracy"],
            "parent_accuracy": E.evaluate_ensemble([parent], data.x_test, data.y_test)["accuracy"],
            "parent_test_accuracy": E.evaluate_ensemble([parent], x_test, y_test)["accuracy"],
            "n_validation": data.n_test}


def degradation_fit(kl, accuracy, parent_accuracy: float, n_eval: int, *, groups=None, chance: float = 0.5,
                    drop: float | None = None) -> dict:
    """The linear fit of child accuracy against output KL and the KL at which degradation starts (Whitaker 2023,
    §4.2.1 and Fig. 4.3: accuracy falls about linearly in the KL; degradation starts near KL 0.02–0.05).

    The linear region: the children of the ``groups`` (e.g. the (σ, sparsity) cells; each child its own group when
    None) whose mean accuracy keeps at least half of the parent's margin over chance, mean ≥ (parent + chance)/2.
    On it, least squares acc ≈ a − b·KL. The threshold is the KL over which the line loses ``drop``, KL* = drop/b,
    with ``drop`` by default two standard errors of the parent's accuracy on ``n_eval`` points, 2√(p(1 − p)/n_eval)
    (a loss the evaluation set can tell from sampling noise); it is +inf when the accuracy does not fall (b ≤ 0). It
    is measured from the line's own value at KL = 0, a, not from the parent's accuracy: the accuracy bends from a
    plateau into the line, so a straight fit starts a little below the parent, by an amount that varies from parent
    to parent.

    Parameters
    ----------
    kl, accuracy : array_like
        One entry per child: the output KL to the parent (≥ 0) and the accuracy (in [0, 1]).
    parent_accuracy : float
        The parent's accuracy on the same points, in [0, 1].
    n_eval : int
        The number of points the accuracies were measured on.
    groups : array_like, optional
        A label per child (its cell).
    chance : float, default 0.5
        The accuracy of guessing (1/classes), in [0, parent_accuracy).
    drop : float, optional
        The accuracy loss that counts as degradation, > 0.

    Returns
    -------
    dict
        ``intercept`` a, ``slope`` −b (accuracy per nat), ``r2`` on the region, ``drop``, ``threshold`` KL*,
        ``kl_max`` (the region's largest KL), ``n_points`` and ``level`` (the region's accuracy level).

    Examples
    --------
    Children exactly on acc = 0.99 − 0.4·KL, measured on 250 points, parent at 0.99: the loss of 2 SE = 0.0126 is
    reached at KL = 0.0126/0.4:

    >>> kl = np.linspace(0.0, 1.0, 11)
    >>> fit = degradation_fit(kl, 0.99 - 0.4 * kl, 0.99, 250)
    >>> print(round(fit["slope"], 6), round(fit["threshold"], 4), round(2 * (0.99 * 0.01 / 250) ** 0.5 / 0.4, 4))
    -0.4 0.0315 0.0315
    """
    kl, acc = finite_array("kl", kl).ravel(), finite_array("accuracy", accuracy).ravel()
    if len(kl) != len(acc) or len(kl) < 2:
        raise ValueError(f"kl and accuracy must have one entry per child and at least 2, got {len(kl)} and "
                         f"{len(acc)}")
    if kl.min() < 0 or acc.min() < 0 or acc.max() > 1:
        raise ValueError("kl must be >= 0 and accuracy must lie in [0, 1]")
    parent = real_scalar("parent_accuracy", parent_accuracy, lo=0.0, hi=1.0)
    n_eval = integer_at_least("n_eval", n_eval, 1)
    chance = real_scalar("chance", chance, lo=0.0, hi=1.0, hi_open=True)
    if not chance < parent:
        raise ValueError(f"chance must be below parent_accuracy, got chance={chance!r} and parent_accuracy={parent!r}")
    drop = (2 * math.sqrt(parent * (1 - parent) / n_eval) if drop is None else
            real_scalar("drop", drop, lo=0.0, hi=1.0, lo_open=True))
    labels = np.arange(len(kl)) if groups is None else np.asarray(groups)
    if labels.shape != kl.shape:
        raise ValueError(f"groups must have one label per child ({len(kl)}), got shape {labels.shape}")
    level = (parent + chance) / 2
    region = np.zeros(len(kl), dtype=bool)
    for g in np.unique(labels):
        cell = labels == g
        region |= cell & (acc[cell].mean() >= level)
    if region.sum() < 2 or np.ptp(kl[region]) == 0:
        raise ValueError(f"kl: fewer than 2 distinct KL values keep accuracy >= {level:.3f}: no linear region")
    slope, intercept = np.polyfit(kl[region], acc[region], 1)
    resid = acc[region] - (intercept + slope * kl[region])
    spread = np.sum((acc[region] - acc[region].mean()) ** 2)
    return {"intercept": float(intercept), "slope": float(slope),
            "r2": float(1 - resid @ resid / spread) if spread > 0 else 1.0, "drop": float(drop),
            "threshold": float(drop / -slope) if slope < 0 else math.inf,
            "kl_max": float(kl[region].max()), "n_points": int(region.sum()), "level": float(level)}


# --------------------------------------------------------------------------------------------------------------
# Table 5.1: equal-budget comparison

@functools.lru_cache(maxsize=64)          # a sweep cycles through its seeds: keep every parent (~1 MB each)
def _budget_parent_state(dataset, width, depth, epochs, batch_size, seed, data_dir=None):
    data = load(dataset, data_dir)
    net = classifier(_n_in(data), width, depth, data.n_classes, seed=seed)
    _adam(net, data, epochs, seed, batch_size)
    return {k: v.clone() for k, v in net.state_dict().items()}


def _subset(data, fraction, g):
    idx = torch.randperm(data.n_train, generator=g)[:round(fraction * data.n_train)]
    return dataclasses.replace(data, x_train=data.x_train[idx], y_train=data.y_train[idx])


@_one_thread
def budget_run(dataset: str, method: str, draw: int = 0, width: int = 256, depth: int = 2, epochs: int = 16,
               members: int = 8, sparsity: float = 0.5, batch_size: int = 32, seed: int = 0, data_dir=None,
               child_epochs: int | None = None) -> dict:
    """One entry of the small-budget benchmark (Table 5.1, §5.3.3): ``epochs`` epochs in all, Adam at lr 1e-3.

    ``method``:

    - ``"independent"`` — one model, ``epochs`` epochs;
    - ``"dropout"`` — the same model with Dropout(0.5) after every hidden layer;
    - ``"bagging"`` — ``members`` models from different initial weights, each trained ``epochs/members`` epochs
      on its own random 90 % of the training split (drawn without replacement);
    - ``"sse_r"`` / ``"sse_np"`` — a parent trained ``epochs/2`` epochs, then ``members`` children pruned at
      ``sparsity`` (random masks, or Neural Partitioning: anti-mask pairs) and tuned ``epochs/(2·members)`` epochs
      each; the parent (the same for both, given ``seed``) is reported as ``parent_*``. ``draw`` picks another set
      of masks and tuning order for the same parent (for the within-parent variance of R vs NP).

    ``child_epochs`` (SSE only; None keeps the split above): each child is tuned ``child_epochs`` epochs and the
    parent trained the rest, ``epochs − members·child_epochs`` (at least 1), so the total stays ``epochs``; the run
    then also reports ``parent_epochs``, ``steps_per_epoch`` (:func:`steps_per_epoch`),
    ``parent_steps`` and ``child_steps`` (optimisation steps of the parent and of each child). The split
    ``child_epochs = epochs/(2·members)`` gives the same run as None.

    Returns the averaged ensemble's test accuracy, NLL, ECE, its vote accuracy, the members' accuracy (for SSE also
    ``with_parent_*``: the parent averaged in as a ninth member, as Algs. 1–3 print it) and, for ensembles, the
    pairwise disagreement / KL / correlation. For SSE, ``mask_td_fraction`` = TD / (k(k−1)·√n), the
    total mask distance (Eq. 3.14) over its largest value: a pair of anti-masks has CD = √n, two independent 50 %
    masks CD ≈ √(n/2), so R gives ≈ 0.707 and 4 NP pairs (8 of the 56 ordered pairs are anti-masks) ≈ 0.749.
    """
    one_of("method", method, BUDGET_METHODS)
    explicit = child_epochs is not None
    parent_epochs, child_epochs = _budget_split(method, epochs, members, child_epochs)
    start = time.perf_counter()
    data = load(dataset, data_dir)
    n_in, c = _n_in(data), data.n_classes
    out = {}
    if method in ("independent", "dropout"):
        net = classifier(n_in, width, depth, c, dropout=0.5 if method == "dropout" else 0.0, seed=seed)
        _adam(net, data, epochs, seed, batch_size)
        nets = [net]
    elif method == "bagging":
        g = generator(seed)
        nets = []
        for i in range(members):
            net = classifier(n_in, width, depth, c, seed=1000 * seed + i)
            _adam(net, _subset(data, 0.9, g), epochs // members, 1000 * seed + i, batch_size)
            nets.append(net)
    else:
        parent = classifier(n_in, width, depth, c, seed=seed)
        parent.load_state_dict(_budget_parent_state(dataset, width, depth, parent_epochs, batch_size, seed,
                                                    data.info.get("folder")))
        out.update(_test(E.evaluate_ensemble([parent], data.x_test, data.y_test), "parent_"))
        nets = E.pruned_children(parent, members, sparsity, method="partition" if method == "sse_np" else "random",
                                 seed=1000 * seed + draw)
        for i, child in enumerate(nets):
            _adam(child, data, child_epochs, 1000 * (1000 * seed + draw) + i, batch_size)
        masks = [E.child_masks(k) for k in nets]
        n = sum(m.numel() for m in masks[0].values())
        out["mask_td_fraction"] = total_distance(masks) / (members * (members - 1) * math.sqrt(n))
    out.update(E.evaluate_ensemble(nets, data.x_test, data.y_test))
    if method in ("sse_r", "sse_np"):                # Algs. 1–3 as printed also average the parent in
        with_parent = E.evaluate_ensemble(nets, data.x_test, data.y_test, parent=parent, include_parent=True,
                                          diversity=False)
        out.update({f"with_parent_{k}": with_parent[k] for k in ("accuracy", "nll", "ece")})
    out["total_epochs"] = epochs
    if explicit:
        per_epoch = steps_per_epoch(data.n_train, batch_size)
        out.update(parent_epochs=parent_epochs, steps_per_epoch=per_epoch,
                   parent_steps=parent_epochs * per_epoch, child_steps=child_epochs * per_epoch)
    out["wall_s"] = time.perf_counter() - start
    return out


def _budget_split(method, epochs, members, child_epochs):
    """(parent epochs, epochs per child) of a budget run; the thesis's half-and-half split when child_epochs is None."""
    if child_epochs is None:
        if epochs % members or epochs % 2 or (epochs // 2) % members:
            raise ValueError(f"epochs must be divisible by 2·members = {2 * members}, got {epochs}")
        return epochs // 2, epochs // 2 // members
    if method not in ("sse_r", "sse_np"):
        raise ValueError(f"child_epochs applies to 'sse_r' and 'sse_np' only, got method={method!r}")
    epochs, members = integer_at_least("epochs", epochs, 2), integer_at_least("members", members, 1)
    child_epochs = integer_at_least("child_epochs", child_epochs, 1)
    if epochs - members * child_epochs < 1:
        raise ValueError(f"child_epochs must leave the parent at least 1 epoch: members·child_epochs <= "
                         f"{epochs - 1} (epochs={epochs}, members={members}), got child_epochs={child_epochs}")
    return epochs - members * child_epochs, child_epochs


def steps_per_epoch(n_train: int, batch_size: int) -> int:
    """Optimisation steps in one epoch of the training loop, ⌈n_train / batch_size⌉: every sample once, the last
    batch smaller when ``batch_size`` does not divide ``n_train`` (:func:`rmtnet.nets.training.train` keeps it;
    the count is :meth:`rmtnet.nets.data.Batches.count`, the loop's own).

    Parameters
    ----------
    n_train : int
        Training samples, ≥ 1 (MNIST-5k's split: 4,000; digits: 1,437).
    batch_size : int
        Minibatch size, ≥ 1.

    Returns
    -------
    int

    Examples
    --------
    MNIST-5k's 4,000 training images at batch 32 and 128:

    >>> steps_per_epoch(4000, 32), steps_per_epoch(4000, 128)
    (125, 32)
    """
    n_train = integer_at_least("n_train", n_train, 1)
    return datasets.Batches.count(n_train, batch_size)


# --------------------------------------------------------------------------------------------------------------
# Table 6.1: one-shot vs iterative vs annealing

@functools.lru_cache(maxsize=64)
def _anneal_parent_state(dataset, width, depth, epochs, batch_size, seed, data_dir=None):
    return _budget_parent_state(dataset, width, depth, epochs, batch_size, seed, data_dir)


@_one_thread
def anneal_run(dataset: str, method: str, sparsity: float, schedule: str, mask: str = "random",
               tune_epochs: int = 10, anneal_epochs: int = 3, tau0: float = 0.5, width: int = 256, depth: int = 2,
               parent_epochs: int = 10, batch_size: int = 32, seed: int = 0, data_dir=None) -> dict:
    """One cell of the annealing study (Table 6.1, §6.3.1) on an MLP parent (Adam 1e-3, ``parent_epochs``).

    One child at ``sparsity`` (exact counts, per layer) is made by ``method`` — ``"one_shot"`` (prune everything,
    then tune), ``"iterative"`` (prune linearly over ``anneal_epochs`` epochs), ``"random_anneal"`` (U → M linearly
    over ``anneal_epochs``; random masks only) or ``"temperature_anneal"`` (P = M + (1 − M) τ_e, τ_e cosine from
    ``tau0`` to 0 over ``anneal_epochs``) — with ``mask`` ``"random"`` or ``"magnitude"`` targets, then tuned for
    ``tune_epochs`` by SGD (momentum 0.9) with ``schedule`` ``"constant"`` (lr 0.01, the thesis's FT) or
    ``"onecycle"`` (:class:`rmtnet.nets.ensembles.OneCycle`, 0.001 → 0.1 → 1e-7). One-shot and temperature
    annealing share the target mask for a given seed. Reports the final test accuracy and the best one over the
    evaluations made with the target sparsity in force (after epoch ε on; the thesis reports the best; for iterative
    pruning earlier epochs are less sparse), the accuracy before tuning (``pruned_accuracy``: the eval-mode mask at
    epoch 0, which for iterative pruning is the first step's sparsity) and the parent's accuracy."""
    one_of("method", method, ANNEAL_METHODS)
    if not isinstance(schedule, str) or schedule not in ("constant", "onecycle"):
        raise ValueError(f"schedule must be 'constant' or 'onecycle', got {schedule!r}")
    start = time.perf_counter()
    data = load(dataset, data_dir)
    parent = classifier(_n_in(data), width, depth, data.n_classes, seed=seed)
    parent.load_state_dict(_anneal_parent_state(dataset, width, depth, parent_epochs, batch_size, seed,
                                                data.info.get("folder")))
    common = dict(method=mask, exact=True, seed=1000 + seed)
    if method == "one_shot":
        child = E.pruned_children(parent, 1, sparsity, **common)[0]
    elif method == "iterative":
        child = E.pruned_children(parent, 1, sparsity, prune_epochs=anneal_epochs, **common)[0]
    elif method == "random_anneal":
        if mask != "random":
            raise ValueError("random annealing draws random targets: mask must be 'random'")
        child = E.stochastic_children(parent, 1, sparsity, anneal="random", anneal_epochs=anneal_epochs, **common)[0]
    else:
        child = E.stochastic_children(parent, 1, sparsity, anneal="temperature", anneal_epochs=anneal_epochs,
                                      tau0=tau0, **common)[0]
    lr = 0.1 if schedule == "onecycle" else 0.01
    table = E.tune(child, data, tune_epochs, optimizer="sgd", lr=lr, momentum=0.9, schedule=schedule,
                   batch_size=batch_size, seed=seed)
    acc = 1.0 - table.test_error
    at_target = acc[table.epoch >= min(anneal_epochs, tune_epochs)]     # evaluations after epoch ε − 1 use M
    realised = E.child_masks(child)
    kept = sum(float(m.sum()) for m in realised.values()) / sum(m.numel() for m in realised.values())
    return {"final_accuracy": float(acc.iloc[-1]), "best_accuracy": float(at_target.max()),
            "pruned_accuracy": float(acc.iloc[0]), "parent_accuracy": 1.0 - _parent_error(parent, data),
            "realised_sparsity": 1.0 - kept, "wall_s": time.perf_counter() - start}


def _parent_error(parent, data):
    return 1.0 - E.evaluate_ensemble([parent], data.x_test, data.y_test)["accuracy"]
