"""Predictive and diversity metrics of ensembles (Whitaker 2023, "Neural Subnetwork Ensembles", §3.3 and Ch. 7).

Conventions. A prediction is a matrix of class probabilities ``p`` of shape (N, C): N samples, C ≥ 2 classes, every
row on the probability simplex (entries in [0, 1], row sums 1 within 1e-4, so float32 softmax outputs pass). Labels
``y`` are integers in [0, C) of shape (N,). Torch tensors and array-likes are accepted; everything is computed in
float64 NumPy and returned as Python floats. The predicted class is argmax_c p[n, c], ties going to the lowest class
index (``numpy.argmax``). Bad input raises ValueError naming the argument.

==============  =============================================================================  =================
metric          definition                                                                     thesis
==============  =============================================================================  =================
accuracy        (1/N) Σ_n 1[argmax p_n = y_n]                                                  Eq. 3.26
nll             −(1/N) Σ_n log p_n[y_n] (+inf if a true class has probability 0)               Eq. 3.27
ece             Σ_b (|B_b|/N) |acc(B_b) − conf(B_b)|; B_b the samples whose top-label          Eq. 3.28
                confidence max_c p_n,c lies in ((b−1)/B, b/B], B = 15 equal-width bins
kl              d_KL(p ‖ q) = (1/N) Σ_n Σ_c p_n,c log(p_n,c / q_n,c), with 0 log 0 = 0         Eqs. 7.2, 4.5
disagreement    d_PDR = (1/N) Σ_n 1[argmax p_n ≠ argmax q_n]                                   Eq. 7.3
correlation     (1/N) Σ_n Pearson(p_n, q_n), the correlation of the two C-vectors of sample n  Eq. 7.1 (read so)
mask_distance   CD(A, B) = √(Σ_i |a_i − b_i|) (for 0/1 masks: √Hamming = Euclidean distance)   Eq. 3.13
total_distance  TD = Σ_i Σ_j CD(M_i, M_j) over ordered pairs of a set of masks                 Eq. 3.14
==============  =============================================================================  =================

(The thesis's text cites the first three as Eqs. 3.15–3.17; they are numbered 3.26–3.28.) Eq. 7.1 as printed sums a
covariance over classes and is ill-posed; :func:`correlation` is the per-sample Pearson correlation of the two
probability vectors, averaged over samples (for C = 2 it is ±1 on every sample: the centred 2-vectors are collinear).
ECE bins follow the ``uncertainty-calibration`` library the thesis cites: 15 equal-width, top-label, plug-in.
:func:`pairwise_diversity` averages the pairwise measures over all pairs of ensemble members (Fig. 7.1, Table 7.1).
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from rmtnet._validation import integer_at_least

__all__ = ["accuracy", "nll", "ece", "kl", "disagreement", "correlation", "mask_distance", "total_distance",
           "pairwise_diversity"]

ROW_SUM_TOL = 1e-4


def _numpy(x):
    if hasattr(x, "detach"):                     # a torch tensor (on any device)
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _probabilities(name, p):
    """``p`` as a float64 (N, C) array of probability rows, or ValueError naming ``name``."""
    p = _numpy(p)
    if p.dtype == object or not (np.issubdtype(p.dtype, np.floating) or np.issubdtype(p.dtype, np.integer)):
        raise ValueError(f"{name} must be a real array of probabilities, got dtype {p.dtype}")
    p = p.astype(np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 2:
        raise ValueError(f"{name} must have shape (N, C) with N >= 1 samples and C >= 2 classes, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if p.min() < 0 or p.max() > 1:
        raise ValueError(f"{name} must be probabilities in [0, 1], got entries in [{float(p.min())}, {float(p.max())}]")
    err = np.abs(p.sum(axis=1) - 1).max()
    if err > ROW_SUM_TOL:
        raise ValueError(f"{name} rows must sum to 1 (within {ROW_SUM_TOL}); the worst row is off by {err:.3g} "
                         f"(pass softmax outputs, not logits)")
    return p


def _labels(name, y, p):
    y = _numpy(y)
    if y.ndim != 1 or not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        raise ValueError(f"{name} must be a 1-d array of integer class labels, got dtype {y.dtype}, shape {y.shape}")
    if len(y) != len(p):
        raise ValueError(f"{name} must have one label per row of the probabilities ({len(p)}), got {len(y)}")
    y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"{name} must lie in [0, {p.shape[1] - 1}] (C = {p.shape[1]} classes), "
                         f"got [{y.min()}, {y.max()}]")
    return y


def _pair(p, q, names=("p", "q")):
    p, q = _probabilities(names[0], p), _probabilities(names[1], q)
    if p.shape != q.shape:
        raise ValueError(f"{names[0]} and {names[1]} must have the same shape (N, C), got {p.shape} and {q.shape}")
    return p, q


def accuracy(probs, labels) -> float:
    """Acc = (1/N) Σ_n 1[argmax_c p_n,c = y_n] (Eq. 3.26).

    Parameters
    ----------
    probs : array_like or torch.Tensor
        (N, C) probability rows.
    labels : array_like or torch.Tensor
        (N,) integer classes.

    Returns
    -------
    float
        The fraction of samples whose top class is the label.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> print(f"{accuracy(p, [0, 0, 1]):.6f}")            # argmax [0, 1, 1]: two of three right
    0.666667
    """
    p = _probabilities("probs", probs)
    y = _labels("labels", labels, p)
    return float(np.mean(p.argmax(axis=1) == y))


def nll(probs, labels) -> float:
    """NLL = −(1/N) Σ_n log p_n[y_n] (Eq. 3.27): the mean negative log-probability of the true class (natural log).
    No clipping: a true class given probability exactly 0 makes it +inf.

    Parameters
    ----------
    probs : array_like or torch.Tensor
        (N, C) probability rows.
    labels : array_like or torch.Tensor
        (N,) integer classes.

    Returns
    -------
    float
        The NLL, in nats.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> print(f"{nll(p, [0, 0, 1]):.6f}")                 # −(log 0.9 + log 0.4 + log 0.8)/3
    0.414932
    """
    p = _probabilities("probs", probs)
    y = _labels("labels", labels, p)
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def ece(probs, labels, n_bins: int = 15) -> float:
    """Expected calibration error, ECE = Σ_b (|B_b|/N) |acc(B_b) − conf(B_b)| (Eq. 3.28).

    Top-label, plug-in, ``n_bins`` equal-width bins: sample n has confidence c_n = max_c p_n,c and falls in bin
    b = ⌈c_n · B⌉ (so bin b covers ((b−1)/B, b/B]); acc(B_b) is the fraction of its samples whose argmax is right
    and conf(B_b) their mean confidence. Empty bins contribute nothing.

    Parameters
    ----------
    probs : array_like or torch.Tensor
        (N, C) probability rows.
    labels : array_like or torch.Tensor
        (N,) integer classes.
    n_bins : int, default 15
        B.

    Returns
    -------
    float
        The ECE, in [0, 1].

    Examples
    --------
    Three samples in three bins: (|1 − 0.9| + |0 − 0.6| + |1 − 0.8|)/3:

    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> print(f"{ece(p, [0, 0, 1]):.6f}")
    0.300000
    """
    n_bins = integer_at_least("n_bins", n_bins, 1)
    p = _probabilities("probs", probs)
    y = _labels("labels", labels, p)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    b = np.clip(np.ceil(conf * n_bins).astype(np.int64), 1, n_bins)      # c = 0 cannot occur (c ≥ 1/C)
    total = 0.0
    for k in np.unique(b):
        in_bin = b == k
        total += in_bin.sum() / len(y) * abs(correct[in_bin].mean() - conf[in_bin].mean())
    return float(total)


def kl(p, q) -> float:
    """d_KL(p ‖ q) = (1/N) Σ_n Σ_c p_n,c log(p_n,c / q_n,c) (Eq. 7.2; the trust-region divergence of Eq. 4.5 with p
    the parent's and q the mutant's outputs). Terms with p_n,c = 0 are 0; p_n,c > 0 = q_n,c gives +inf.

    Parameters
    ----------
    p, q : array_like or torch.Tensor
        (N, C) probability rows of one shape.

    Returns
    -------
    float
        The mean KL divergence, in nats.

    Examples
    --------
    Against the uniform prediction, d_KL = log C − H(p) averaged over samples:

    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> u = np.full((3, 2), 0.5)
    >>> entropy = -(p * np.log(p)).sum(axis=1)
    >>> print(f"{kl(p, u):.6f}", f"{np.mean(np.log(2) - entropy):.6f}")
    0.193648 0.193648
    """
    p, q = _pair(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return float(terms.sum(axis=1).mean())


def disagreement(p, q) -> float:
    """Prediction disagreement ratio d_PDR = (1/N) Σ_n 1[argmax p_n ≠ argmax q_n] (Eq. 7.3).

    Parameters
    ----------
    p, q : array_like or torch.Tensor
        (N, C) probability rows of one shape.

    Returns
    -------
    float
        The fraction of samples whose top classes differ.

    Examples
    --------
    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> q = np.array([[0.6, 0.4], [0.7, 0.3], [0.3, 0.7]])
    >>> print(f"{disagreement(p, q):.6f}")                 # they differ on the second sample only
    0.333333
    """
    p, q = _pair(p, q)
    return float(np.mean(p.argmax(axis=1) != q.argmax(axis=1)))


def correlation(p, q) -> float:
    """Mean over samples of the Pearson correlation between the probability vectors p_n and q_n (Eq. 7.1, read as a
    per-sample correlation over the C classes). A sample where either vector is constant (uniform) has no
    correlation and is left out of the mean; if every sample is, the result is NaN. For C = 2 every defined term
    is ±1.

    Parameters
    ----------
    p, q : array_like or torch.Tensor
        (N, C) probability rows of one shape.

    Returns
    -------
    float
        The mean correlation, in [−1, 1] (NaN if no sample defines one).

    Examples
    --------
    With two classes each sample scores +1 (the same top class) or −1: (1 − 1 + 1)/3:

    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> q = np.array([[0.6, 0.4], [0.7, 0.3], [0.3, 0.7]])
    >>> print(f"{correlation(p, q):.6f}")
    0.333333
    """
    p, q = _pair(p, q)
    a = p - p.mean(axis=1, keepdims=True)
    b = q - q.mean(axis=1, keepdims=True)
    norm = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    defined = norm > 0
    if not defined.any():
        return float("nan")
    return float(np.mean((a * b).sum(axis=1)[defined] / norm[defined]))


def _flat_mask(name, m):
    """One mask set — an array, a sequence of arrays (one per layer) or a mapping name → array — as one 1-d
    float64 vector (mappings in key order), plus its per-part shapes for the comparison of two sets."""
    if isinstance(m, Mapping):
        parts = [(str(k), _numpy(v)) for k, v in m.items()]
    elif isinstance(m, Sequence) and not isinstance(m, str) and len(m) and not np.isscalar(m[0]):
        parts = [(str(i), _numpy(v)) for i, v in enumerate(m)]
    else:
        parts = [("", _numpy(m))]
    if not parts:
        raise ValueError(f"{name} must hold at least one array")
    for key, v in parts:
        if not (np.issubdtype(v.dtype, np.number) or v.dtype == bool) or not np.all(np.isfinite(v)):
            raise ValueError(f"{name}{'[' + key + ']' if key else ''} must be a finite real array")
    layout = tuple((k, v.shape) for k, v in parts)
    return np.concatenate([v.astype(np.float64).ravel() for _, v in parts]), layout


def mask_distance(a, b) -> float:
    """Mask distance CD(A, B) = √(Σ_i |a_i − b_i|) (Eq. 3.13) over all coordinates of the two mask sets (an array,
    a list of per-layer arrays, or a mapping layer name → array, as returned by
    :func:`rmtnet.nets.ensembles.sample_masks`). For 0/1 masks it is √(Hamming distance).

    Parameters
    ----------
    a, b : array_like, sequence of array_like, or mapping
        Two mask sets of the same layers and shapes.

    Returns
    -------
    float
        CD(A, B).

    Examples
    --------
    >>> print(f"{mask_distance([1, 1, 0, 0], [1, 0, 1, 0]):.6f}")         # √2: they differ in two places
    1.414214
    >>> print(mask_distance({"w": np.ones((2, 2))}, {"w": np.eye(2)}))
    1.4142135623730951
    """
    va, la = _flat_mask("a", a)
    vb, lb = _flat_mask("b", b)
    if la != lb:
        raise ValueError(f"a and b must have the same layers and shapes, got {la} and {lb}")
    return float(np.sqrt(np.abs(va - vb).sum()))


def total_distance(masks) -> float:
    """Total mask distance TD = Σ_i Σ_j CD(M_i, M_j) over all ordered pairs of the mask sets in ``masks`` (Eq. 3.14;
    every unordered pair counts twice, i = j contributes 0). Neural Partitioning aims to make it large.

    Parameters
    ----------
    masks : sequence
        At least two mask sets, each as :func:`mask_distance` takes them.

    Returns
    -------
    float
        TD.

    Examples
    --------
    CD = √2, 2, √2 over the three pairs, each counted twice: 2(2√2 + 2):

    >>> print(f"{total_distance([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 1, 1]]):.6f}", f"{2 * (2 * 2 ** 0.5 + 2):.6f}")
    9.656854 9.656854
    """
    if isinstance(masks, (Mapping, str)) or not isinstance(masks, Sequence) or len(masks) < 2:
        raise ValueError("masks must be a sequence of at least 2 mask sets")
    return float(2 * sum(mask_distance(masks[i], masks[j])
                         for i, j in itertools.combinations(range(len(masks)), 2)))


_PAIRWISE = {"disagreement": (disagreement, True), "kl": (kl, False), "correlation": (correlation, True)}


def pairwise_diversity(members, metrics=("disagreement", "kl", "correlation")) -> dict:
    """Pairwise diversity of ensemble members: for each measure in ``metrics`` its mean and (population) standard
    deviation over member pairs, as ``{name: mean, name + "_std": std}`` (Fig. 7.1 reports correlation as
    mean ± std over pairs; Table 7.1 the mean PDR and KL).

    ``members`` is a sequence of k ≥ 2 probability matrices of one shape (N, C), or an array (k, N, C). The symmetric
    measures (``"disagreement"``, ``"correlation"``) run over the k(k−1)/2 unordered pairs; ``"kl"`` is asymmetric
    and runs over the k(k−1) ordered pairs.

    Parameters
    ----------
    members : sequence of array_like, or array_like
        k ≥ 2 probability matrices (N, C), or one (k, N, C) array.
    metrics : str or sequence of str, default ("disagreement", "kl", "correlation")
        The measures.

    Returns
    -------
    dict
        ``{name: mean, name + "_std": std}`` per measure.

    Examples
    --------
    Members p, q, p: the pairs (p, q), (p, p), (q, p) disagree on 1/3, 0, 1/3 of the samples:

    >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
    >>> q = np.array([[0.6, 0.4], [0.7, 0.3], [0.3, 0.7]])
    >>> d = pairwise_diversity([p, q, p], metrics="disagreement")
    >>> print(f"{d['disagreement']:.6f} {d['disagreement_std']:.6f}", f"{2 / 9:.6f} {np.sqrt(2) / 9:.6f}")
    0.222222 0.157135 0.222222 0.157135
    """
    if isinstance(metrics, str):
        metrics = (metrics,)
    unknown = [m for m in metrics if m not in _PAIRWISE]
    if unknown or not metrics:
        raise ValueError(f"metrics must be a non-empty subset of {tuple(_PAIRWISE)}, got {tuple(metrics)!r}")
    if hasattr(members, "ndim") and getattr(members, "ndim") == 3:
        members = [members[i] for i in range(members.shape[0])]
    if isinstance(members, (Mapping, str)) or not isinstance(members, Sequence) or len(members) < 2:
        raise ValueError("members must hold at least 2 probability matrices of shape (N, C)")
    probs = [_probabilities(f"members[{i}]", m) for i, m in enumerate(members)]
    if len({p.shape for p in probs}) != 1:
        raise ValueError(f"members must share one shape (N, C), got {sorted({p.shape for p in probs})}")
    out = {}
    for name in metrics:
        fn, symmetric = _PAIRWISE[name]
        pairs = (itertools.combinations if symmetric else itertools.permutations)(range(len(probs)), 2)
        values = np.array([fn(probs[i], probs[j]) for i, j in pairs])
        out[name], out[f"{name}_std"] = float(np.mean(values)), float(np.std(values))
    return out
