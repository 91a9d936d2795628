"""Ensemble Mask Network experiments of Luntzel ("Ensemble Mask Networks", 2023, arXiv 2309.06382, §4–5): the training
matrices, Algorithm 1, the test sets and error of Table 1 and Fig. 3, the learned operator of Fig. 4, and resumable
sweeps of all of it.

Conventions
-----------
Model
    :class:`rmtnet.nets.models.EMN`, y = W_L ⋯ W_2 (A ⊙ W_1) x. §4 uses architecture (1): ``EMN(n, copies=(1,))``,
    one hidden layer with one copy per node, no activations, no biases, so y_i = w_i Σ_j A_ij W1_ij x_j.
Training matrices d (§4)
    Binary **symmetric** n×n matrices **with a free diagonal**: the sample space has 2^{n(n+1)/2} members (the
    n(n−1)/2 off-diagonal pairs and the n diagonal entries are free). The diagonal is included because the test
    matrices of Table 1 have diagonal entries (self-loops, §2), and W1_ii is trained only by matrices with A_ii = 1
    (masked edges receive no gradient): without them the diagonal weights keep their random initial values and the
    test error stays near E[a²]E[x²]·mean_i (Ŵ_ii − 1)² ≈ 0.06 (``diagonal=False`` shows it). A matrix with o ones
    above the diagonal and g ones on it has elementwise sum (L1 norm) s = 2o + g, so the class of sum s has
    N(s) = Σ_{2o+g=s} C(n(n−1)/2, o) C(n, g) members and p(s) = N(s) / 2^{n(n+1)/2}, counted exactly in Python
    integers. |d| = round(36 n^1.3); class s receives p(s)|d| matrices rounded by the largest-remainder rule (so the
    counts sum to |d|; equal remainders go to the smaller sum first), each drawn uniformly from its class and
    independently of the others (with replacement: for small n a class has fewer members than draws). d is listed
    class by class in increasing sum, the order in which §4 generates it ("for all possible norms"); the control
    condition keeps that order.
Algorithm 1 (§4)
    For each meta-epoch: "subsampled" draws a fresh d, "shuffled" permutes d, "control" keeps the d drawn once before
    the first meta-epoch. For each A of d in turn: k = 8n fresh vectors x uniform in [0, 1]^n, targets A x; then
    ``epochs`` passes over those k pairs in minibatches of k/4 (reshuffled every pass), plain SGD (no momentum, no
    weight decay) with learning rate 0.1 on the mean squared error (mean over the batch and the n outputs, torch's
    ``MSELoss``). The mask-train-merge of Algorithm 1 is the :class:`AdjacencyLinear` forward pass: an edge with
    A_ij = 0 contributes nothing to the output, its gradient is exactly zero, and plain SGD leaves its weight
    unchanged — the merged network is the masked one with the unmasked weights updated.
    One NumPy generator, seeded by ``seed``, draws everything in a fixed order (d, the permutation, each matrix's
    vectors, each pass's batch order), so a run of M meta-epochs stopped after m < M is exactly the run of m
    meta-epochs (:func:`sweep_emn` uses that to read a whole meta-epoch sweep off one run), and control and
    subsampled runs with the same seed agree through their first meta-epoch. The model's initial weights come from
    its own ``seed`` (torch).
Test sets and error (§5, Table 1, Fig. 3)
    Unsymmetric A with diagonal: each entry nonzero with probability ``density`` (the paper's "sparsity", "the
    average fraction of non-zero entries"; Table 1 uses 0.5), its value uniform in [0, 1] (``weights="uniform"``,
    Table 1) or 1 (``weights="binary"``, Fig. 3); x uniform in [0, 1]^n, one x per A. The **error** is the mean
    squared error over the test pairs and the n outputs, mean (ŷ_i − (A x)_i)², the training loss of §4 on test data.
    The paper does not define its error; the MSE is our reading: it is the loss it trains with, and its Table 1
    control values (6e-14 at n = 5 to 1.5e-11 at n = 100) are the size of float32 round-off in squared outputs of
    size ~n/8, which a converged float32 network reaches (``dtype="float32"`` here shows it); float64 goes far lower.
Learned weights (Fig. 4)
    :func:`learned_operator` contracts the network to its effective matrix Ŵ, y = (A ⊙ Ŵ) x for every A: learning
    A ↦ A x means Ŵ = the all-ones matrix (Fig. 4 (0)); architecture (1) gets there as
    diag(1/c_i) · (rows of W_1 constant at c_i).
Findings (simulations/emn_table1.py, one seed; n = 40 the whole sweep, n = 100 its first meta-epochs)
    float64: all three conditions reach round-off, ~1e-31 at n = 5–20, 1.3e-30 at n = 40 and 1.1e-29 at n = 100,
    by 2–4 meta-epochs at n ≤ 20 and within the first at n ≥ 40. float32: 3.4e-14, 8.4e-14, 1.5e-13, 3.3e-13
    and 2.6e-12 at n = 5, 10, 20, 40, 100 — below the paper's 6.4e-14, 1.6e-13, 4.8e-13, 2.1e-12, 1.5e-11 by a
    factor 2 at n ≤ 10 and 3–6 at n ≥ 20 (the published floor grows faster with n). Random subsampling as
    Algorithm 1 states it is not worse than control at any n (the paper: 0.045–0.055, 0.16 at n = 100); training
    on zero-diagonal matrices gives 0.057–0.075 (n = 5–100), the paper's size, which suggests (no more) that its
    subsampler drew no diagonal.
"""
from __future__ import annotations

import contextlib
import functools
import math
import numbers
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from rmtnet import experiments
from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar, runs_table, scalar

from rmtnet.nets.models import EMN

__all__ = ["CONDITIONS", "TARGETS", "EPOCHS", "META_EPOCHS", "DENSITIES", "TEST_SEED", "PUBLISHED_TABLE1",
           "training_size", "sum_class_counts", "sum_class_probabilities", "class_allocation",
           "sample_symmetric_binary", "training_matrices", "train_emn", "sample_test_pairs", "emn_error",
           "LearnedOperator", "learned_operator", "emn_run", "sweep_emn", "binary_error_table", "table1"]

CONDITIONS = ("control", "shuffled", "subsampled")
TARGETS = ("Ax", "A2x", "Ax+A2x")
ENGINES = ("auto", "numpy", "torch")
WEIGHTS = ("uniform", "binary")
DTYPES = {"float64": torch.float64, "float32": torch.float32}
EPOCHS = (1, 2, 3)                     # the parameter sweep of §4
META_EPOCHS = (1, 2, 4, 8, 16)
DENSITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)   # binary test matrices of Fig. 3
TEST_SEED = 20230913                   # the test pairs of every run (the paper's date): one test set for all runs

# Table 1 of Luntzel 2023: (n, condition) -> (minimum error over the sweep, epochs, meta-epochs)
PUBLISHED_TABLE1 = {
    (5, "control"): (6.36e-14, 1, 16), (5, "shuffled"): (5.32e-14, 3, 16), (5, "subsampled"): (0.045, 1, 8),
    (10, "control"): (1.56e-13, 1, 16), (10, "shuffled"): (1.51e-13, 3, 16), (10, "subsampled"): (0.052, 2, 8),
    (20, "control"): (4.77e-13, 3, 16), (20, "shuffled"): (1.95e-13, 3, 8), (20, "subsampled"): (0.046, 2, 16),
    (40, "control"): (2.065e-12, 2, 8), (40, "shuffled"): (1.98e-12, 1, 8), (40, "subsampled"): (0.055, 2, 4),
    (100, "control"): (1.51e-11, 3, 16), (100, "shuffled"): (1.61e-11, 3, 16), (100, "subsampled"): (0.16, 2, 1),
}


# ----------------------------------------------------------------------------------------------------------------
# argument checks

def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


# ----------------------------------------------------------------------------------------------------------------
# training matrices (§4)

def training_size(n: int) -> int:
    """|d| = round(36 n^1.3), the number of training matrices of §4 (halves rounded up).

    Parameters
    ----------
    n : int
        The number of nodes, ≥ 1.

    Returns
    -------
    int
        |d|.

    Examples
    --------
    At n = 5, 36 · 5^1.3 = 291.7…, so d has 292 matrices; at n = 2, 36 · 2^1.3 = 88.6… gives 89.

    >>> training_size(5), training_size(2)
    (292, 89)
    """
    n = integer_at_least("n", n)
    return int(math.floor(36 * n ** 1.3 + 0.5))


def sum_class_counts(n: int, diagonal: bool = True) -> list[int]:
    """N(s) for s = 0, 1, …, s_max: the number of binary symmetric n×n matrices with elementwise sum s, exact.

    With ``diagonal`` (the default, see the module notes) the n diagonal entries are free: s = 2o + g for o ones
    above the diagonal and g on it, N(s) = Σ_g C(n(n−1)/2, (s−g)/2) C(n, g), s_max = n², Σ N(s) = 2^{n(n+1)/2}.
    Without, the diagonal is zero: N(2o) = C(n(n−1)/2, o), odd sums empty, s_max = n(n−1), Σ N(s) = 2^{n(n−1)/2}.
    Computed as the coefficients of the generating function (1 + t²)^{n(n−1)/2} (1 + t)^g_max, one factor (1 + t)
    at a time (big-integer additions only: n = 100 in well under a second).

    Parameters
    ----------
    n : int
        The matrix size, ≥ 1.
    diagonal : bool, default True
        Whether the diagonal entries are free (else zero).

    Returns
    -------
    list of int
        N(0), …, N(s_max), exact.

    Examples
    --------
    For n = 2 there is one off-diagonal pair and two diagonal entries: (1 + t²)(1 + t)² = 1 + 2t + 2t² + 2t³ + t⁴,
    2³ = 8 matrices in all; with a zero diagonal only (1 + t²) is left.

    >>> sum_class_counts(2)
    [1, 2, 2, 2, 1]
    >>> sum_class_counts(2, diagonal=False)
    [1, 0, 1]
    >>> sum(sum_class_counts(5)) == 2 ** 15
    True
    """
    diagonal = boolean("diagonal", diagonal)
    n = integer_at_least("n", n)
    return list(_sum_class_counts(n, bool(diagonal)))


@functools.lru_cache(maxsize=64)
def _binomials(m):
    """(C(m, 0), …, C(m, m)) exact, by the multiplicative recurrence."""
    row, c = [], 1
    for k in range(m + 1):
        row.append(c)
        c = c * (m - k) // (k + 1)
    return tuple(row)


@functools.lru_cache(maxsize=64)
def _sum_class_counts(n, diagonal):
    pairs, diag = n * (n - 1) // 2, (n if diagonal else 0)
    counts = [0] * (2 * pairs + diag + 1)
    counts[0:2 * pairs + 1:2] = _binomials(pairs)               # (1 + t²)^pairs
    top = 2 * pairs
    for _ in range(diag):                                       # × (1 + t), diag times
        top += 1
        for s in range(top, 0, -1):
            counts[s] += counts[s - 1]
    return tuple(counts)


def sum_class_probabilities(n: int, diagonal: bool = True) -> np.ndarray:
    """p(s) = N(s) / Σ N for s = 0, …, s_max (:func:`sum_class_counts`), each the correctly rounded float of the
    exact fraction (Python's integer division; classes below ~1e-308 round to 0).

    Parameters
    ----------
    n, diagonal
        As in :func:`sum_class_counts`.

    Returns
    -------
    numpy.ndarray
        p(0), …, p(s_max), float64, summing to 1 up to round-off.

    Examples
    --------
    The counts (1, 2, 2, 2, 1) of n = 2 (:func:`sum_class_counts`) divided by their total 8:

    >>> sum_class_probabilities(2).tolist()
    [0.125, 0.25, 0.25, 0.25, 0.125]
    """
    counts = sum_class_counts(n, diagonal)
    total = sum(counts)
    return np.array([c / total for c in counts])


def class_allocation(n: int, size: int | None = None, diagonal: bool = True) -> np.ndarray:
    """How many of the ``size`` training matrices (default |d| = :func:`training_size`) have each sum s: p(s)·size
    rounded by the largest-remainder rule in exact integer arithmetic — floor(N(s)·size / Σ N) to every class, then
    one more to the classes with the largest remainders (the smaller sum first among equal ones) until the counts sum
    to ``size``. Index s of the result is the count of sum s.

    Parameters
    ----------
    n : int
        The matrix size, ≥ 1.
    size : int, optional
        The number of training matrices, ≥ 1; default :func:`training_size`.
    diagonal : bool, default True
        As in :func:`sum_class_counts`.

    Returns
    -------
    numpy.ndarray
        int64 counts indexed by the sum s, summing to ``size``.

    Examples
    --------
    For n = 2 and 10 matrices, p(s)·10 = 1.25, 2.5, 2.5, 2.5, 1.25: the floors 1, 2, 2, 2, 1 sum to 8, and the two
    left go to the largest remainders (0.5 at s = 1, 2, 3), the smaller sums first.

    >>> class_allocation(2, size=10).tolist()
    [1, 3, 3, 2, 1]
    >>> int(class_allocation(5).sum()) == training_size(5)
    True
    """
    diagonal = boolean("diagonal", diagonal)
    n = integer_at_least("n", n)
    size = training_size(n) if size is None else integer_at_least("size", size)
    return np.array(_class_allocation(n, size, bool(diagonal)), dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _class_allocation(n, size, diagonal):
    counts = _sum_class_counts(n, diagonal)
    total = sum(counts)
    quotients = [divmod(c * size, total) for c in counts]
    alloc = [q for q, _ in quotients]
    short = size - sum(alloc)
    for s in sorted(range(len(counts)), key=lambda s: (-quotients[s][1], s))[:short]:
        alloc[s] += 1
    return tuple(alloc)


def sample_symmetric_binary(n: int, total: int, size: int, rng=None, diagonal: bool = True) -> np.ndarray:
    """``size`` independent binary symmetric n×n matrices, each uniform among those with elementwise sum ``total``.

    Uniform within the class: the number g of diagonal ones is drawn with probability C(n(n−1)/2, o) C(n, g) / N(s)
    (o = (s − g)/2), then o of the off-diagonal pairs and g of the diagonal entries uniformly. Returns 0/1 entries
    as uint8, shape (size, n, n). ``diagonal=False``: zero diagonal (even ``total`` only).

    Parameters
    ----------
    n : int
        The matrix size, ≥ 1.
    total : int
        The elementwise sum s, in [0, s_max].
    size : int
        How many matrices, ≥ 0.
    rng : int, numpy.random.Generator or None
        The seed or generator.
    diagonal : bool, default True
        Whether the diagonal entries are free (else zero).

    Returns
    -------
    numpy.ndarray
        uint8, shape (size, n, n).

    Examples
    --------
    Five 3×3 matrices with four ones each, every one symmetric:

    >>> A = sample_symmetric_binary(3, 4, size=5, rng=0)
    >>> A.shape, A.sum(axis=(1, 2)).tolist()
    ((5, 3, 3), [4, 4, 4, 4, 4])
    >>> bool((A == A.transpose(0, 2, 1)).all())
    True
    """
    diagonal = boolean("diagonal", diagonal)
    n = integer_at_least("n", n)
    size = integer_at_least("size", size, 0)
    rng = _rng(rng)
    pairs, diag = n * (n - 1) // 2, (n if diagonal else 0)
    s_max = 2 * pairs + diag
    total = scalar(total)
    if isinstance(total, bool) or not isinstance(total, numbers.Integral) or not 0 <= total <= s_max:
        raise ValueError(f"total must be an integer in [0, {s_max}] for n = {n} (diagonal={diagonal}), got {total!r}")
    gs = [g for g in range(diag + 1) if (total - g) % 2 == 0 and 0 <= (total - g) // 2 <= pairs]
    if not gs:
        raise ValueError(f"total must be even without a diagonal (diagonal=False), got {total!r}")
    weights = [_binomials(pairs)[(total - g) // 2] * _binomials(diag)[g] for g in gs]
    norm = sum(weights)
    probs = np.array([w / norm for w in weights])
    g = rng.choice(np.array(gs), size=size, p=probs / probs.sum())
    o = (total - g) // 2
    # a uniform o-subset of the pairs: o ones then zeros, each row shuffled uniformly (Fisher–Yates per row)
    upper = rng.permuted(np.arange(pairs) < o[:, None], axis=1)
    on_diag = rng.permuted(np.arange(diag) < g[:, None], axis=1)
    A = np.zeros((size, n, n), dtype=np.uint8)
    iu = np.triu_indices(n, 1)
    A[:, iu[0], iu[1]] = upper
    A[:, iu[1], iu[0]] = upper
    if diag:
        A[:, np.arange(n), np.arange(n)] = on_diag
    return A


def training_matrices(n: int, size: int | None = None, rng=None, diagonal: bool = True) -> np.ndarray:
    """The training set d of §4: :func:`class_allocation` many matrices of each sum, drawn by
    :func:`sample_symmetric_binary`, listed class by class in increasing sum. Shape (|d|, n, n), 0/1 as uint8
    (n = 100: 143 MB).

    Parameters
    ----------
    n, size, diagonal
        As in :func:`class_allocation`.
    rng : int, numpy.random.Generator or None
        The seed or generator.

    Returns
    -------
    numpy.ndarray
        uint8, shape (|d|, n, n).

    Examples
    --------
    Ten 3×3 training matrices, listed by increasing elementwise sum, as many of each sum as
    :func:`class_allocation` says:

    >>> d = training_matrices(3, size=10, rng=0)
    >>> d.shape
    (10, 3, 3)
    >>> sums = d.sum(axis=(1, 2))
    >>> bool((np.diff(sums) >= 0).all()), np.bincount(sums, minlength=10).tolist() == class_allocation(3, 10).tolist()
    (True, True)
    """
    alloc = class_allocation(n, size, diagonal)
    rng = _rng(rng)
    parts = [sample_symmetric_binary(n, s, int(c), rng, diagonal) for s, c in enumerate(alloc) if c]
    return np.concatenate(parts) if parts else np.zeros((0, n, n), dtype=np.uint8)


# ----------------------------------------------------------------------------------------------------------------
# Algorithm 1

def _target_matrix(A, target):
    """The operator B(A) with target y = B(A) x: A, A², or A + A² (batched over leading axes)."""
    if target == "Ax":
        return A
    A2 = A @ A
    return A2 if target == "A2x" else A + A2


class _NumpyEMN:
    """A linear, bias-free, non-sequential EMN's weights as NumPy arrays, with the forward pass and the gradient of
    the mean squared error written out (backpropagation by hand). The same arithmetic as autograd on the torch module
    (the tests compare the two), much faster for these tiny layers, where torch's per-operation overhead dominates.

    Shapes: W1[i, k, j] = weight of edge j → copy k of node i (the first layer's weight reshaped (n, c_1, n));
    cluster layer ℓ: V_ℓ[i] of shape (c_{ℓ+1}, c_ℓ); h_1[b, i, k] = Σ_j A_ij W1[i, k, j] x[b, j],
    h_{ℓ+1}[b, i] = V_ℓ[i] h_ℓ[b, i], y[b, i] = h_L[b, i, 0]."""

    def __init__(self, model):
        n = model.n
        self.n = n
        self.W1 = model.first.weight.detach().cpu().numpy().reshape(n, model.first.c_out, n).copy()
        self.V = [layer.weight.detach().cpu().numpy().copy() for layer in model.hidden]

    @staticmethod
    def supports(model):
        return (isinstance(model, EMN) and model.second is None and isinstance(model.phi, torch.nn.Identity)
                and model.first.bias is None and all(layer.bias is None for layer in model.hidden)
                and model.first.c_in == 1)

    def step(self, x, y, A, lr):
        """One SGD step on the batch (x, y) under the mask A; returns the batch loss before the step."""
        b, n = x.shape
        if self.W1.shape[1] == 1 and len(self.V) == 1:              # architecture (1): y = w ⊙ ((A ⊙ W1) x)
            return self._step_1(x, y, A, lr)
        M = A[:, None, :] * self.W1                                   # (n, c1, n): A ⊙ W1
        hs = [(x @ M.reshape(-1, n).T).reshape(b, n, -1)]
        for V in self.V:
            hs.append(np.einsum("ikl,bil->bik", V, hs[-1]))
        residual = hs[-1][..., 0] - y
        g = (residual * (2.0 / residual.size))[..., None]             # d mean((y − t)²) / dy
        grads = [None] * len(self.V)
        for ell in range(len(self.V) - 1, -1, -1):
            grads[ell] = np.einsum("bik,bil->ikl", g, hs[ell])
            g = np.einsum("ikl,bik->bil", self.V[ell], g)
        gW1 = (g.reshape(b, -1).T @ x).reshape(self.W1.shape) * A[:, None, :]   # masked edges: exactly zero
        self.W1 -= lr * gW1
        for V, gV in zip(self.V, grads):
            V -= lr * gV
        return float(np.mean(residual ** 2))

    def _step_1(self, x, y, A, lr):
        """:meth:`step` for architecture (1), the paper's, with the cluster layer as a vector w (fewer, cheaper
        operations; the same arithmetic)."""
        W1, w = self.W1[:, 0, :], self.V[0][:, 0, 0]
        h = x @ (A * W1).T
        residual = h * w - y
        g = residual * (2.0 / residual.size)
        gw = np.einsum("bi,bi->i", g, h)
        gW1 = ((g * w).T @ x) * A
        W1 -= lr * gW1                                                # views: updates self.W1, self.V[0]
        w -= lr * gw
        return float(np.einsum("bi,bi->", residual, residual)) / residual.size

    def write_back(self, model):
        with torch.no_grad():
            model.first.weight.copy_(torch.from_numpy(self.W1.reshape(model.first.weight.shape)))
            for layer, V in zip(model.hidden, self.V):
                layer.weight.copy_(torch.from_numpy(V))


def _checked_training(model, condition, target, engine, epochs, meta_epochs, lr, samples_per_matrix, batch_size,
                      size, callback):
    """:func:`train_emn`'s arguments checked, in that order; returns ``(epochs, meta_epochs, lr, k, batch_size,
    size, use_numpy)`` with the defaults filled in (k = 8n vectors per matrix, batches of ⌈k/4⌉, |d| =
    :func:`training_size`) and whether the NumPy engine runs."""
    if not isinstance(model, EMN):
        raise ValueError(f"model must be an rmtnet.nets.EMN, got {type(model).__name__}")
    one_of("condition", condition, CONDITIONS)
    one_of("target", target, TARGETS)
    one_of("engine", engine, ENGINES)
    epochs = integer_at_least("epochs", epochs)
    meta_epochs = integer_at_least("meta_epochs", meta_epochs)
    lr = real_scalar("lr", lr, lo=0, lo_open=True)
    n = model.n
    k = 8 * n if samples_per_matrix is None else integer_at_least("samples_per_matrix", samples_per_matrix)
    bs = -(-k // 4) if batch_size is None else integer_at_least("batch_size", batch_size)
    if bs > k:
        raise ValueError(f"batch_size must lie in [1, samples_per_matrix = {k}], got {bs}")
    size = training_size(n) if size is None else integer_at_least("size", size)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r}")
    if engine == "numpy" and not _NumpyEMN.supports(model):
        raise ValueError("engine='numpy' needs a linear, bias-free, non-sequential EMN; use engine='torch'")
    return epochs, meta_epochs, lr, k, bs, size, engine == "numpy" or (engine == "auto" and _NumpyEMN.supports(model))


class _MatrixSGD:
    """The inner loops of Algorithm 1 on an EMN, by the NumPy engine (:class:`_NumpyEMN`, whose weights are written
    back to the module after each meta-epoch) or by autograd through the module; counts the matrices and steps."""

    def __init__(self, model, use_numpy, *, lr, k, batch_size, epochs, target):
        param = next(model.parameters())
        self.dtype, self.device = param.dtype, param.device
        self.np_dtype = {torch.float64: np.float64, torch.float32: np.float32}.get(self.dtype)
        if use_numpy and self.np_dtype is None:
            raise ValueError(f"engine='numpy' needs a float32 or float64 model, got {self.dtype}")
        self.model, self.use_numpy, self.fast = model, use_numpy, _NumpyEMN(model) if use_numpy else None
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.lr, self.k, self.batch_size, self.epochs, self.target = lr, k, batch_size, epochs, target
        self.matrices = self.steps = 0

    def _torch_step(self, x, y, A, lr):
        """:meth:`_NumpyEMN.step` by autograd through the module."""
        out = self.model(torch.from_numpy(x).to(self.device, self.dtype), A)
        loss = F.mse_loss(out, torch.from_numpy(y).to(self.device, self.dtype))
        grads = torch.autograd.grad(loss, self.params)
        with torch.no_grad():
            for p, g in zip(self.params, grads):
                p.sub_(lr * g)                              # plain SGD: a zero gradient leaves p unchanged
        return float(loss.detach())

    def fit(self, A01, rng, meta):
        """Train on one matrix A of d: k vectors x ~ U[0, 1)ⁿ with targets y = B(A) x (in float64, then the
        engine's dtype), ``epochs`` passes over them in minibatches, each pass in a fresh random order. Returns the
        minibatch losses, each before its step; a non-finite one raises, naming meta-epoch ``meta``."""
        A64 = A01.astype(np.float64)
        x64 = rng.random((self.k, self.model.n))
        y64 = x64 @ _target_matrix(A64, self.target).T
        if self.use_numpy:
            A, x, y = (a.astype(self.np_dtype, copy=False) for a in (A64, x64, y64))
        else:
            A, x, y = torch.from_numpy(A64).to(self.device, self.dtype), x64, y64
        step = self.fast.step if self.use_numpy else self._torch_step
        losses = []
        for _ in range(self.epochs):
            perm = rng.permutation(self.k)
            for lo in range(0, self.k, self.batch_size):
                idx = perm[lo:lo + self.batch_size]
                loss = step(x[idx], y[idx], A, self.lr)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"non-finite training loss at meta-epoch {meta}, matrix "
                                             f"{self.matrices + 1}, step {self.steps + 1} (lr {self.lr:g})")
                losses.append(loss)
                self.steps += 1
        self.matrices += 1
        return losses

    def write_back(self):
        """Put the NumPy engine's weights into the module (the torch engine trains the module's own)."""
        if self.use_numpy:
            self.fast.write_back(self.model)


def train_emn(model: EMN, condition: str = "control", *, epochs: int = 1, meta_epochs: int = 1, seed=0,
              lr: float = 0.1, size: int | None = None, samples_per_matrix: int | None = None,
              batch_size: int | None = None, target: str = "Ax", diagonal: bool = True, engine: str = "auto",
              callback=None, progress: bool = False) -> pd.DataFrame:
    """Train ``model`` in place by Algorithm 1 of Luntzel 2023 (§4; conventions in the module notes).

    Parameters
    ----------
    model : an :class:`EMN` on n nodes; trained in its own dtype (float64 for the acceptance tests).
    condition : ``"control"`` (one d for every meta-epoch, in generation order), ``"shuffled"`` (d permuted every
        meta-epoch), ``"subsampled"`` (a new d every meta-epoch).
    epochs : passes over each matrix's k vectors ("epochs" of Table 1).
    meta_epochs : passes over d ("meta-epochs" of Table 1).
    seed : int or ``numpy.random.Generator``; draws d, the orders and the vectors.
    size : |d|, default round(36 n^1.3). samples_per_matrix : k, default 8n. batch_size : default k/4 (rounded
        up). lr : the SGD learning rate, default 0.1.
    target : ``"Ax"`` (§4), ``"A2x"`` or ``"Ax+A2x"`` (second order, for sequential masks, Luntzel 2023, Fig. 5: an
        ``EMN(sequential=True)`` represents A²x, with ``self_loops=True`` A x + A² x).
    diagonal : whether training matrices have free diagonals (default; see the module notes).
    engine : ``"torch"`` (autograd through the module), ``"numpy"`` (the same SGD with the gradients written out,
        for linear, bias-free, non-sequential EMNs) or ``"auto"`` (NumPy where it applies).
    callback : ``callback(meta_epoch, model) -> dict`` after every meta-epoch, with the model's weights current; its
        entries are added to that meta-epoch's row.

    Returns
    -------
    pandas.DataFrame, one row per meta-epoch: ``meta_epoch``, ``matrices`` and ``steps`` (cumulative),
    ``train_loss`` (mean minibatch loss over the meta-epoch, before each step), ``wall_s``, and the callback's
    entries.

    Examples
    --------
    Two meta-epochs over 3 matrices at n = 2: k = 16 vectors per matrix in batches of 4 make 4 steps per matrix.

    >>> model = EMN(2, copies=(1,), seed=0)
    >>> history = train_emn(model, size=3, meta_epochs=2)
    >>> history.matrices.tolist(), history.steps.tolist()
    ([3, 6], [12, 24])
    """
    diagonal, progress = boolean("diagonal", diagonal), boolean("progress", progress)
    epochs, meta_epochs, lr, k, bs, size, use_numpy = _checked_training(
        model, condition, target, engine, epochs, meta_epochs, lr, samples_per_matrix, batch_size, size, callback)
    sgd = _MatrixSGD(model, use_numpy, lr=lr, k=k, batch_size=bs, epochs=epochs, target=target)
    rng = _rng(seed)
    rows, start, d = [], time.perf_counter(), None
    bar = tqdm(total=meta_epochs * size, desc=f"EMN {condition} n={model.n}", unit="matrix",
               disable=None if progress else True)
    try:
        for meta in range(1, meta_epochs + 1):
            if d is None or condition == "subsampled":
                d = training_matrices(model.n, size, rng, diagonal)
            order = rng.permutation(len(d)) if condition == "shuffled" else np.arange(len(d))
            losses = []
            for A01 in d[order]:
                losses += sgd.fit(A01, rng, meta)
                bar.update(1)
            sgd.write_back()
            row = {"meta_epoch": meta, "matrices": sgd.matrices, "steps": sgd.steps,
                   "train_loss": float(np.mean(losses)), "wall_s": time.perf_counter() - start}
            if callback is not None:
                row.update(callback(meta, model) or {})
            rows.append(row)
    finally:
        bar.close()
    return pd.DataFrame(rows)


class _BatchedSGD:
    """Algorithm 1 for R runs of architecture (1) at once, in lockstep: the same n, dtype, epochs, k, batch size and
    learning rate, each run with its own condition, generator, training matrices and weights. Every array carries
    a leading run axis, each minibatch step is one stacked matrix product per layer (``numpy.matmul`` calls the same
    BLAS product on each run's slice as :class:`_NumpyEMN` does on its own arrays), and each run draws from its
    generator in exactly :func:`train_emn`'s order — so every run is bit for bit the run :func:`train_emn` makes
    alone (the tests check it), at a fraction of the interpreter overhead per step for small n."""

    def __init__(self, models, conditions, rngs, diagonals, *, lr, epochs):
        nets = [_NumpyEMN(m) for m in models]
        self.models, self.conditions, self.rngs, self.diagonals = models, conditions, rngs, diagonals
        self.n, self.lr, self.epochs = models[0].n, lr, epochs
        self.k = 8 * self.n
        self.batch_size = -(-self.k // 4)
        self.W1 = np.stack([net.W1[:, 0, :] for net in nets])           # (R, n, n)
        self.w = np.stack([net.V[0][:, 0, 0] for net in nets])          # (R, n)
        self.d = [None] * len(models)
        self.steps = 0

    def meta_epoch(self, size, meta):
        """One pass of every run over its d (drawn anew for ``"subsampled"``, permuted for ``"shuffled"``)."""
        orders = []
        for r, (condition, rng) in enumerate(zip(self.conditions, self.rngs)):
            if self.d[r] is None or condition == "subsampled":
                self.d[r] = training_matrices(self.n, size, rng, self.diagonals[r])
            orders.append(rng.permutation(size) if condition == "shuffled" else np.arange(size))
        runs = np.arange(len(self.rngs))[:, None]
        for j in range(size):
            A = np.stack([d[order[j]] for d, order in zip(self.d, orders)]).astype(np.float64)
            x = np.stack([rng.random((self.k, self.n)) for rng in self.rngs])
            y = np.matmul(x, A.transpose(0, 2, 1)).astype(self.W1.dtype, copy=False)
            A, x = A.astype(self.W1.dtype, copy=False), x.astype(self.W1.dtype, copy=False)
            for _ in range(self.epochs):
                perms = np.stack([rng.permutation(self.k) for rng in self.rngs])
                for lo in range(0, self.k, self.batch_size):
                    idx = perms[:, lo:lo + self.batch_size]
                    self._step(x[runs, idx], y[runs, idx], A)
            if not np.isfinite(self.w).all():
                raise FloatingPointError(f"non-finite weights at meta-epoch {meta}, matrix {j + 1} (lr {self.lr:g})")
        self._write_back()

    def _step(self, x, y, A):
        """One SGD step of every run: :meth:`_NumpyEMN._step_1` with a leading run axis."""
        h = np.matmul(x, (A * self.W1).transpose(0, 2, 1))
        residual = h * self.w[:, None, :] - y
        g = residual * (2.0 / (residual.shape[1] * residual.shape[2]))
        gw = np.einsum("rbi,rbi->ri", g, h)
        gW1 = np.matmul((g * self.w[:, None, :]).transpose(0, 2, 1), x) * A
        self.W1 -= self.lr * gW1
        self.w -= self.lr * gw
        self.steps += 1

    def _write_back(self):
        with torch.no_grad():
            for model, W1, w in zip(self.models, self.W1, self.w):
                model.first.weight.copy_(torch.from_numpy(W1.reshape(model.first.weight.shape)))
                model.hidden[0].weight.copy_(torch.from_numpy(w.reshape(model.hidden[0].weight.shape)))


# ----------------------------------------------------------------------------------------------------------------
# test sets and error (Table 1, Fig. 3)

def sample_test_pairs(n: int, size: int = 1000, density: float = 0.5, weights: str = "uniform", seed=TEST_SEED):
    """``size`` test pairs (A, x) of §5: A unsymmetric n×n with diagonal, each entry nonzero with probability
    ``density`` (the paper's "sparsity": the fraction of nonzero entries), its value uniform in [0, 1]
    (``weights="uniform"``, Table 1) or 1 (``"binary"``, Fig. 3); x uniform in [0, 1]^n. Returns float64 arrays
    A of shape (size, n, n) and x of shape (size, n).

    Parameters
    ----------
    n : int
        The matrix size, ≥ 1.
    size : int, default 1000
        The number of pairs, ≥ 1.
    density : float, default 0.5
        The probability of a nonzero entry, in [0, 1].
    weights : {"uniform", "binary"}
        The law of the nonzero entries.
    seed : int, numpy.random.SeedSequence or numpy.random.Generator
        Default :data:`TEST_SEED`, the test set of every run.

    Returns
    -------
    A, x : numpy.ndarray
        float64, shapes (size, n, n) and (size, n).

    Examples
    --------
    >>> A, x = sample_test_pairs(3, size=4)
    >>> A.shape, x.shape
    ((4, 3, 3), (4, 3))

    Binary test matrices at density 1 are all ones:

    >>> A, _ = sample_test_pairs(3, size=4, density=1.0, weights="binary")
    >>> bool((A == 1).all())
    True
    """
    n = integer_at_least("n", n)
    size = integer_at_least("size", size)
    density = real_scalar("density", density, lo=0, hi=1)
    one_of("weights", weights, WEIGHTS)
    rng = _rng(seed)
    mask = rng.random((size, n, n)) < density
    A = mask * rng.random((size, n, n)) if weights == "uniform" else mask.astype(np.float64)
    x = rng.random((size, n))
    return A, x


@torch.no_grad()
def emn_error(model: EMN, A, x, target: str = "Ax") -> float:
    """The test error of §5: mean over the pairs and the n outputs of (model(x, A)_i − (B(A) x)_i)², B(A) = A, A²
    or A + A² by ``target``. The model runs in its own dtype; the target is computed in float64 and the squared
    difference accumulated in float64.

    Parameters
    ----------
    model : EMN
        The network on n nodes.
    A, x : array_like
        Test pairs, shapes (size, n, n) and (size, n) (:func:`sample_test_pairs`).
    target : {"Ax", "A2x", "Ax+A2x"}
        The operator learned.

    Returns
    -------
    float
        The mean squared error (inf or NaN for a diverged network).

    Examples
    --------
    A network whose weights are all one computes (A ⊙ 1) x = A x, so its error is zero up to float64 round-off:

    >>> model = EMN(3, copies=(1,), seed=0, dtype=torch.float64)
    >>> with torch.no_grad():
    ...     for p in model.parameters():
    ...         _ = p.fill_(1.0)
    >>> emn_error(model, *sample_test_pairs(3, size=8)) < 1e-28
    True
    """
    one_of("target", target, TARGETS)
    A, x = np.asarray(A, dtype=np.float64), np.asarray(x, dtype=np.float64)
    if A.ndim != 3 or x.ndim != 2 or A.shape[1:] != (model.n, model.n) or x.shape != A.shape[:2]:
        raise ValueError(f"A must have shape (size, {model.n}, {model.n}) and x shape (size, {model.n}), "
                         f"got {A.shape} and {x.shape}")
    param = next(model.parameters())
    out = model(torch.from_numpy(x).to(param.device, param.dtype), torch.from_numpy(A).to(param.device, param.dtype))
    y = np.einsum("sij,sj->si", _target_matrix(A, target), x)
    with np.errstate(over="ignore", invalid="ignore"):          # a diverged network's error is inf or nan
        return float(np.mean((out.double().cpu().numpy() - y) ** 2))


# ----------------------------------------------------------------------------------------------------------------
# learned weights (Fig. 4)

@dataclass(frozen=True)
class LearnedOperator:
    """What a linear, non-sequential EMN has learned (Luntzel 2023, Fig. 4). For every A the network computes
    y = (A ⊙ ``effective``) x, so learning A ↦ A x means ``effective`` = the all-ones matrix (Fig. 4 (0)).

    ``first`` is W_1 as (n, c_1, n) (copy k of node i ← node j), ``readout`` the product of the later, cluster-wise
    layers as (n, c_1), so effective_ij = Σ_k readout_ik first_ikj. ``constants`` are the row means of W_1 over j,
    Fig. 4's c_i (architecture (1): W_1 rows constant at c_i, readout 1/c_i); ``row_spread`` the largest
    max_j − min_j of a row of W_1 relative to its |mean| (0 when the rows are exactly constant; with several copies
    only the readout-weighted sum must be constant, Fig. 4's "less discernable weights"). ``deviation`` is
    max_ij |effective_ij − 1|, ``rms_deviation`` its root mean square over the n² entries.

    Examples
    --------
    Rows of W_1 constant at c_i = 2 with readout 1/2 give the all-ones effective matrix: the network has learned
    A ↦ A x exactly, and its expected test error is 0.

    >>> model = EMN(2, copies=(1,), seed=0)
    >>> with torch.no_grad():
    ...     _ = model.first.weight.fill_(2.0)
    ...     _ = model.hidden[0].weight.fill_(0.5)
    >>> op = learned_operator(model)
    >>> op.effective.tolist(), op.constants.ravel().tolist(), op.deviation, op.expected_error()
    ([[1.0, 1.0], [1.0, 1.0]], [2.0, 2.0], 0.0, 0.0)
    """
    effective: np.ndarray
    first: np.ndarray
    readout: np.ndarray
    constants: np.ndarray
    row_spread: float
    deviation: float
    rms_deviation: float

    def expected_error(self, density: float = 0.5, weights: str = "uniform") -> float:
        """The error of this network on test pairs of :func:`sample_test_pairs`, in expectation and exact arithmetic:
        with D = Ŵ − 1 and independent entries,

            E error = (1/n) Σ_i [ E[a²] E[x²] Σ_j D_ij² + E[a]² E[x]² ((Σ_j D_ij)² − Σ_j D_ij²) ],

        E[x] = 1/2, E[x²] = 1/3, and E[a] = p/2, E[a²] = p/3 for ``weights="uniform"``, E[a] = E[a²] = p for
        ``"binary"`` at density p. For binary test matrices it is a p + b p² in the density (Fig. 3's growth with
        density). Round-off of the forward pass is not included: a float64 network with D at round-off level
        measures errors of the order of that round-off squared, not this."""
        density = real_scalar("density", density, lo=0, hi=1)
        one_of("weights", weights, WEIGHTS)
        a1, a2 = (density / 2, density / 3) if weights == "uniform" else (density, density)
        D = self.effective - 1.0
        s1, s2 = D.sum(axis=1), (D ** 2).sum(axis=1)
        return float(np.mean(a2 / 3 * s2 + a1 ** 2 / 4 * (s1 ** 2 - s2)))


def learned_operator(model: EMN) -> LearnedOperator:
    """Contract a linear, bias-free, non-sequential :class:`EMN` to its effective matrix (Fig. 4); see
    :class:`LearnedOperator`.

    Parameters
    ----------
    model : EMN
        Linear, bias-free and non-sequential.

    Returns
    -------
    LearnedOperator

    Examples
    --------
    The untrained network's effective matrix is W_1 scaled row by row by its readout, here one weight per node:

    >>> model = EMN(2, copies=(1,), seed=0)
    >>> op = learned_operator(model)
    >>> W1 = model.first.weight.detach().numpy()
    >>> w = model.hidden[0].weight.detach().numpy().reshape(2, 1)
    >>> op.effective.shape, bool(np.allclose(op.effective, w * W1))
    ((2, 2), True)
    """
    if not _NumpyEMN.supports(model):
        raise ValueError("model must be a linear, bias-free, non-sequential EMN (its map is then (A ⊙ Ŵ) x)")
    net = _NumpyEMN(model)
    W1 = net.W1.astype(np.float64)
    v = np.ones((model.n, 1, 1))
    for V in reversed(net.V):                                  # v ← v V_ℓ, from the output back to layer 1
        v = v @ V.astype(np.float64)
    readout = v[:, 0, :]                                       # (n, c1)
    effective = np.einsum("ik,ikj->ij", readout, W1)
    constants = W1.mean(axis=2)
    spread = float(np.max(np.ptp(W1, axis=2) / np.abs(constants)))
    dev = effective - 1.0
    return LearnedOperator(effective, W1, readout, constants, spread, float(np.abs(dev).max()),
                           float(np.sqrt(np.mean(dev ** 2))))


# ----------------------------------------------------------------------------------------------------------------
# one run and sweeps

def _binary_column(p, kind="error"):
    return f"binary_{kind}_{p:g}"


def emn_run(condition: str, n: int, epochs: int, meta_epochs: int, seed: int, *, dtype: str = "float64",
            lr: float = 0.1, n_test: int = 1000, diagonal: bool = True, test_seed: int = TEST_SEED) -> dict:
    """One run of §4 for a sweep: a fresh ``EMN(n, copies=(1,), seed=seed)`` trained by :func:`train_emn`, one
    intra-op thread (torch and BLAS).

    Returns a flat dict: ``test_error`` (after the last meta-epoch) and ``test_error_m{j}`` (after meta-epoch j, for
    j = 1, …, ``meta_epochs``) on ``n_test`` unsymmetric pairs with entries uniform in [0, 1] at density 0.5 (Table
    1); ``binary_error_{p}`` on binary test matrices at the densities :data:`DENSITIES` (Fig. 3) after the last
    meta-epoch, and ``binary_expected_{p}`` its expectation from the learned weights
    (:meth:`LearnedOperator.expected_error`); the learned operator's ``deviation``, ``rms_deviation``,
    ``row_spread`` (Fig. 4) and its ``expected_error`` on the Table 1 test distribution; ``training_size``,
    ``steps``, ``wall_s``. Every run uses the same test pairs (seeded by ``test_seed``). ``diagonal=False`` trains
    on zero-diagonal matrices (module notes).

    Examples
    --------
    The smallest run: n = 2, one epoch, one meta-epoch over its 89 matrices, 4 steps each, 10 test pairs per set.

    >>> out = emn_run("control", 2, epochs=1, meta_epochs=1, seed=0, n_test=10)
    >>> out["training_size"], out["steps"], out["test_error"] == out["test_error_m1"]
    (89, 356, True)
    >>> sorted(k for k in out if k.startswith("binary_error_"))[:2]
    ['binary_error_0.1', 'binary_error_0.2']
    """
    diagonal = boolean("diagonal", diagonal)
    one_of("dtype", dtype, tuple(DTYPES))
    n_test = integer_at_least("n_test", n_test)
    continuous = sample_test_pairs(n, n_test, 0.5, "uniform", seed=np.random.SeedSequence([test_seed, 0]))
    with _one_thread():
        model = EMN(n, copies=(1,), seed=seed, dtype=DTYPES[dtype])
        history = train_emn(model, condition, epochs=epochs, meta_epochs=meta_epochs, seed=seed, lr=lr,
                            diagonal=bool(diagonal),
                            callback=lambda m, net: {"test_error": emn_error(net, *continuous)})
        return _run_results(model, list(history.test_error), int(history.steps.iloc[-1]),
                            float(history.wall_s.iloc[-1]), n_test, test_seed)


@contextlib.contextmanager
def _one_thread():
    """One intra-op thread for torch and BLAS inside the block (restored after)."""
    try:
        from threadpoolctl import threadpool_limits             # BLAS to one thread
    except ImportError:                                         # pragma: no cover
        threadpool_limits = contextlib.nullcontext
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(before)


def _run_results(model, test_errors, steps, wall_s, n_test, test_seed):
    """:func:`emn_run`'s dict for a trained model and its test errors after each meta-epoch."""
    n = model.n
    out = {"test_error": float(test_errors[-1]),
           **{f"test_error_m{m}": float(e) for m, e in enumerate(test_errors, start=1)}}
    for i, p in enumerate(DENSITIES):
        pairs = sample_test_pairs(n, n_test, p, "binary", seed=np.random.SeedSequence([test_seed, 1, i]))
        out[_binary_column(p)] = emn_error(model, *pairs)
    op = learned_operator(model)
    out.update({_binary_column(p, "expected"): op.expected_error(p, "binary") for p in DENSITIES})
    out.update(deviation=op.deviation, rms_deviation=op.rms_deviation, row_spread=op.row_spread,
               expected_error=op.expected_error(0.5, "uniform"), training_size=training_size(n),
               steps=int(steps), wall_s=float(wall_s))
    return out


def _batched_runs(runs, *, n, epochs, meta_epochs, dtype, lr, n_test, test_seed=TEST_SEED):
    """:func:`emn_run` for several runs ``[(condition, seed, diagonal), ...]`` sharing everything else, trained
    together by :class:`_BatchedSGD`: the same dicts, bit for bit, except ``wall_s`` (the batch's wall time
    divided by the number of runs)."""
    continuous = sample_test_pairs(n, n_test, 0.5, "uniform", seed=np.random.SeedSequence([test_seed, 0]))
    start = time.perf_counter()
    with _one_thread():
        models = [EMN(n, copies=(1,), seed=seed, dtype=DTYPES[dtype]) for _, seed, _ in runs]
        sgd = _BatchedSGD(models, [c for c, _, _ in runs], [_rng(seed) for _, seed, _ in runs],
                          [bool(diag) for _, _, diag in runs], lr=lr, epochs=epochs)
        errors = [[] for _ in runs]
        for meta in range(1, meta_epochs + 1):
            sgd.meta_epoch(training_size(n), meta)
            for model, err in zip(models, errors):
                err.append(emn_error(model, *continuous))
        wall = (time.perf_counter() - start) / len(runs)
        return [_run_results(model, err, sgd.steps, wall, n_test, test_seed) for model, err in zip(models, errors)]


def _batched_emn_run(grid, seeds, store):
    """A sweep function for ``grid`` × ``seeds``: the first call for a run trains, by :func:`_batched_runs`, every
    run not yet in ``store`` that shares its n, epochs, meta-epochs, dtype, lr and n_test, and caches the others'
    results for the calls that follow (so an interrupted sweep loses at most the group in training)."""
    done = set(experiments.read_store(store).run_key) if store is not None and Path(store).exists() else set()
    pending = [(c, s) for c in grid for s in seeds if experiments.run_key(c, s) not in done]
    cache = {}

    def fn(seed, **config):
        key = experiments.run_key(config, seed)
        if key not in cache:
            shared = {k: config[k] for k in ("n", "epochs", "meta_epochs", "dtype", "lr", "n_test")}
            group = [(c, s) for c, s in pending if all(c[k] == v for k, v in shared.items())]
            outs = _batched_runs([(c["condition"], s, c["diagonal"]) for c, s in group], **shared)
            cache.update({experiments.run_key(c, s): out for (c, s), out in zip(group, outs)})
        return cache.pop(key)
    return fn


def sweep_emn(conditions=CONDITIONS, ns=(5, 10), epochs=EPOCHS, meta_epochs=META_EPOCHS, seeds=(0,), *,
              store=None, nested: bool = True, dtype: str = "float64", lr: float = 0.1, n_test: int = 1000,
              diagonal: bool = True, n_jobs: int = 1, progress: bool = True, return_runs: bool = False,
              batched: bool = False):
    """The parameter sweep of §4 over (condition, n, epochs, meta-epochs, seed) through
    :func:`rmtnet.experiments.sweep` (resumable: each run is appended to ``store`` as it finishes).

    ``nested=True`` (default) trains one run of max(``meta_epochs``) meta-epochs per (condition, n, epochs, seed)
    and reads the shorter ones off it (exactly the same numbers as separate runs: see the module notes), ~2× less
    work for the sweep of §4; ``nested=False`` trains every meta-epoch count separately.

    ``batched=True`` (with ``n_jobs=1``) trains the runs that share n, epochs, meta-epochs, dtype, lr and n_test
    — the conditions and seeds of one call — together, one stacked matrix product per step for all of them: the
    same results bit for bit (only ``wall_s`` becomes the group's wall time divided by its size), less interpreter
    overhead per step (n ≤ 40). The store is written group by group: an interrupted sweep resumes at the group it
    was training.

    Returns the tidy table, one row per (condition, n, epochs, meta_epochs, seed): those columns, ``dtype``,
    ``diagonal``, ``test_error`` (Table 1's error) and ``run_key`` (the stored run it was read from); with
    ``return_runs`` also the stored runs themselves (one row per :func:`emn_run`), as ``(tidy, runs)``.

    Examples
    --------
    One nested run of 2 meta-epochs at n = 2 gives two rows of the tidy table, both read off the same stored run:

    >>> tidy, runs = sweep_emn(("control",), ns=(2,), epochs=(1,), meta_epochs=(1, 2), n_test=10, progress=False,
    ...                        return_runs=True)
    >>> tidy.meta_epochs.tolist(), len(runs), tidy.run_key.nunique()
    ([1, 2], 1, 1)
    """
    nested, diagonal, batched = boolean("nested", nested), boolean("diagonal", diagonal), boolean("batched", batched)
    progress, return_runs = boolean("progress", progress), boolean("return_runs", return_runs)
    conditions, ns, epochs, meta_epochs = (list(v) for v in (conditions, ns, epochs, meta_epochs))
    for c in conditions:
        one_of("conditions", c, CONDITIONS)
    for name, values in (("ns", ns), ("epochs", epochs), ("meta_epochs", meta_epochs)):
        if not values:
            raise ValueError(f"{name} must list at least one value")
        for v in values:
            integer_at_least(name, v)
    one_of("dtype", dtype, tuple(DTYPES))
    base = dict(dtype=dtype, lr=float(lr), n_test=int(n_test), diagonal=bool(diagonal))
    lengths = [max(meta_epochs)] if nested else meta_epochs
    grid = [dict(condition=c, n=int(n), epochs=int(e), meta_epochs=int(m), **base)
            for c in conditions for n in ns for e in epochs for m in lengths]
    if batched:
        if n_jobs != 1:
            raise ValueError(f"n_jobs must be 1 with batched=True (one process trains each group), got {n_jobs}")
        seed_list = [int(s) for s in ([seeds] if isinstance(seeds, numbers.Integral) else seeds)]
        fn = _batched_emn_run(grid, seed_list, store)
    else:
        fn = emn_run
    runs = experiments.sweep(fn, grid, seeds=seeds, store=store, n_jobs=n_jobs, progress=progress)
    rows = []
    for run in runs.to_dict("records"):
        for m in (meta_epochs if nested else [run["meta_epochs"]]):
            rows.append(dict(condition=run["condition"], n=int(run["n"]), epochs=int(run["epochs"]),
                             meta_epochs=int(m), seed=int(run["seed"]), dtype=run["dtype"],
                             diagonal=bool(run["diagonal"]),
                             test_error=float(run[f"test_error_m{m}"]), run_key=run["run_key"]))
    tidy = pd.DataFrame(rows)
    return (tidy, runs) if return_runs else tidy


def binary_error_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3's numbers from stored :func:`emn_run` rows: one row per (run, density) with the run's ``condition``,
    ``n``, ``epochs``, ``meta_epochs``, ``seed``, ``dtype``, ``diagonal``, then ``density``, ``error`` (measured on
    binary test matrices at that density) and ``expected`` (from the learned weights, exact arithmetic).

    Parameters
    ----------
    runs : pandas.DataFrame
        Rows of :func:`emn_run` with their sweep columns (``sweep_emn(..., return_runs=True)[1]``).

    Returns
    -------
    pandas.DataFrame
        ``len(runs) · len(DENSITIES)`` rows.

    Examples
    --------
    One stored run (here written by hand) becomes one row per density of :data:`DENSITIES`:

    >>> run = dict(condition="control", n=5, epochs=1, meta_epochs=1, seed=0, dtype="float64", diagonal=True)
    >>> run.update({f"binary_{kind}_{p:g}": p for p in DENSITIES for kind in ("error", "expected")})
    >>> table = binary_error_table(pd.DataFrame([run]))
    >>> len(table), table.density.tolist()[:3], bool((table.error == table.density).all())
    (10, [0.1, 0.2, 0.3], True)
    """
    ids = ["condition", "n", "epochs", "meta_epochs", "seed", "dtype", "diagonal"]
    measured = [_binary_column(p) for p in DENSITIES]
    expected = [_binary_column(p, "expected") for p in DENSITIES]
    runs = runs_table("runs", runs, ids + measured + expected, of="emn_run rows")
    rows = []
    for run in runs.to_dict("records"):
        for p, m, e in zip(DENSITIES, measured, expected):
            rows.append({**{c: run[c] for c in ids}, "density": p, "error": run[m], "expected": run[e]})
    return pd.DataFrame(rows)


def table1(tidy: pd.DataFrame) -> pd.DataFrame:
    """Table 1 from a tidy sweep (:func:`sweep_emn`): per (n, condition) the minimum over (epochs, meta_epochs) of
    the seed-mean test error, with its (epochs, meta_epochs), beside the published value and pair
    (:data:`PUBLISHED_TABLE1`; NaN where the paper has none).

    Parameters
    ----------
    tidy : pandas.DataFrame
        The tidy table of :func:`sweep_emn`.

    Returns
    -------
    pandas.DataFrame
        One row per (n, condition): ``n``, ``condition``, ``best_epochs``, ``best_meta_epochs``, ``error``,
        ``paper_error``, ``paper_epochs``, ``paper_meta_epochs``, ordered by n and then condition.

    Examples
    --------
    Two (epochs, meta-epochs) pairs at n = 5, two seeds each: the means are 2e-3 and 2e-5, so the second is best.

    >>> tidy = pd.DataFrame(dict(n=5, condition="control", epochs=[1, 1, 2, 2], meta_epochs=[4, 4, 8, 8],
    ...                          seed=[0, 1, 0, 1], test_error=[1e-3, 3e-3, 1e-5, 3e-5]))
    >>> row = table1(tidy).iloc[0]
    >>> int(row.best_epochs), int(row.best_meta_epochs), float(row.paper_error)
    (2, 8, 6.36e-14)
    """
    tidy = runs_table("tidy", tidy, ["n", "condition", "epochs", "meta_epochs", "test_error"],
                      of="sweep_emn")
    mean = tidy.groupby(["n", "condition", "epochs", "meta_epochs"], as_index=False).test_error.mean()
    best = mean.loc[mean.groupby(["n", "condition"]).test_error.idxmin()].reset_index(drop=True)
    best = best.rename(columns={"test_error": "error", "epochs": "best_epochs", "meta_epochs": "best_meta_epochs"})
    pub = [PUBLISHED_TABLE1.get((int(n), c), (np.nan, np.nan, np.nan)) for n, c in zip(best.n, best.condition)]
    best["paper_error"] = [p[0] for p in pub]
    best["paper_epochs"] = [p[1] for p in pub]
    best["paper_meta_epochs"] = [p[2] for p in pub]
    order = {c: i for i, c in enumerate(CONDITIONS)}
    return best.sort_values(["n", "condition"], key=lambda s: s.map(order) if s.name == "condition" else s
                            ).reset_index(drop=True)
