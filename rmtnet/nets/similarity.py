"""Centred kernel alignment (CKA) between representations.

Conventions. A representation is a matrix X of shape (n, p) whose rows are n examples (the same examples, in the same
order, for both representations compared) and whose columns are p features. Its Gram matrix is K = k(xᵢ, xⱼ) with

  * the linear kernel, K = X_c X_cᵀ, X_c the column-centred features (centring changes no HSIC below: the biased
    estimator is centred by H anyway, and the unbiased one is exactly invariant to K ↦ K + a1ᵀ + 1aᵀ + c11ᵀ; centring
    first only keeps the rounding error of a large offset out of K);
  * the Gaussian (RBF) kernel, K_ij = exp(−‖xᵢ − xⱼ‖² / (2σ²)). By default σ² = ``bandwidth``² × the median of the
    squared distances over all n² entries, zero diagonal included (the two middle values averaged when n² is even):
    the rule of Kornblith et al.'s reference code, which their published RBF CKA values use.
    ``median="distinct_pairs"`` takes σ = ``bandwidth`` × the median Euclidean distance over the n(n−1)/2 pairs
    i < j instead, the wording of their paper ("a fraction of the median distance"); it gives a slightly larger σ.
    See :func:`gram`.

With H = I − 11ᵀ/n and K̃, L̃ the Gram matrices with their diagonals set to zero, the two HSIC estimators are::

    HSIC₀(K, L) = tr(KHLH) / (n − 1)²                                    (Gretton et al., ALT 2005, biased),
    HSIC₁(K, L) = [tr(K̃L̃) + (1ᵀK̃1)(1ᵀL̃1) / ((n−1)(n−2)) − 2/(n−2) · 1ᵀK̃L̃1] / (n(n − 3))
                                                                           (Song et al., JMLR 2012, eq. 5, unbiased),

and CKA(K, L) = HSIC(K, L) / √(HSIC(K, K) HSIC(L, L)) (Kornblith, Norouzi, Lee & Hinton, ICML 2019, eq. 3); with the
linear kernel and HSIC₀ it is ‖Y_cᵀX_c‖²_F / (‖X_cᵀX_c‖_F ‖Y_cᵀY_c‖_F). "Debiased" CKA uses HSIC₁ in all three places.

Both estimators are Frobenius inner products of centred Gram matrices, and that is how they are computed here:
HSIC₀(K, L) = ⟨HKH, HLH⟩/(n − 1)², and HSIC₁(K, L) = ⟨Ũ_K, Ũ_L⟩/(n(n − 3)) with Ũ the U-centring of K̃ (Székely &
Rizzo, Ann. Statist. 2014, §2: Ũᵢⱼ = K̃ᵢⱼ − (K̃1)ᵢ/(n−2) − (1ᵀK̃)ⱼ/(n−2) + 1ᵀK̃1/((n−1)(n−2)) off the diagonal, 0
on it), an identity with Song et al.'s formula for symmetric K, L that the tests check. HSIC₁ is a U-statistic (an
average over ordered 4-tuples of distinct examples) and HSIC₁(K, L) can be negative, but HSIC₁(K, K) = ‖Ũ_K‖²/(n(n−3))
never is: it vanishes exactly when K̃ᵢⱼ = aᵢ + aⱼ off the diagonal (e.g. all examples equal but one), and debiased
CKA, a cosine, lies in [−1, 1]. A self-HSIC that is zero up to rounding raises ValueError instead of giving NaN or
noise.

Minibatch CKA (Nguyen, Raghu & Kornblith, ICLR 2021, §3.1) over k batches Xᵢ, Yᵢ of the same examples::

    CKA_mb = k⁻¹Σᵢ HSIC₁(XᵢXᵢᵀ, YᵢYᵢᵀ) / √(k⁻¹Σᵢ HSIC₁(XᵢXᵢᵀ, XᵢXᵢᵀ) · k⁻¹Σᵢ HSIC₁(YᵢYᵢᵀ, YᵢYᵢᵀ)).

With one batch this is exactly the full-batch debiased linear CKA. With several it is not: each HSIC₁(batch) averages
only the 4-tuples inside that batch. What is exact is the mean over partitions: averaged over all partitions of the n
examples into k batches of equal size, k⁻¹Σᵢ HSIC₁(batch i) equals the full-batch HSIC₁ (every 4-tuple of distinct
examples falls inside one batch with the same probability), so with randomly shuffled batches each of the three
accumulated means is an unbiased estimate of its full-batch value, and all are unbiased for the population HSIC.
The accumulated self-terms are sums of squared norms and the cross term a sum of inner products, so CKA_mb ∈ [−1, 1]
by Cauchy–Schwarz.

Everything is computed in float64 with torch, on the device of the features (NumPy input runs on the CPU).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from ._modules import apply_to, check_model, model_dtype
from rmtnet._validation import boolean, one_of, real_scalar

__all__ = ["gram", "hsic", "cka", "MinibatchCKA", "layer_features", "cka_between"]

KERNELS = ("linear", "rbf")
MEDIANS = ("all_squared", "distinct_pairs")


# ------------------------------------------------------------------------------------------------------------------
# Inputs

def _as_float64(name, a, device=None):
    """``a`` (torch tensor or array-like) as a float64 torch tensor (on ``device`` for non-tensors), finite."""
    if isinstance(a, torch.Tensor):
        t = a.detach()
    else:
        try:
            arr = np.asarray(a)
        except (ValueError, TypeError) as exc:                # ragged nested lists
            raise ValueError(f"{name} must be a real numeric array or tensor ({exc})") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ValueError(f"{name} must be a real numeric array or tensor, got dtype {arr.dtype}")
        if arr.dtype.kind == "c":                             # np.array(…, float64) would drop the imaginary part
            raise ValueError(f"{name} must be real, got dtype {arr.dtype}")
        t = torch.from_numpy(np.array(arr, dtype=np.float64, copy=True)).to(device or "cpu")
    if t.is_complex():
        raise ValueError(f"{name} must be real, got dtype {t.dtype}")
    t = t.to(torch.float64)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t


def _features(name, a, device=None):
    t = _as_float64(name, a, device)
    if t.ndim != 2:
        raise ValueError(f"{name} must have shape (n, features) with rows the examples, got shape {tuple(t.shape)}")
    return t


def _feature_pair(X, Y):
    """X and Y as float64 (n, ·) tensors on one device (NumPy input joins the other's device)."""
    dev = next((a.device for a in (X, Y) if isinstance(a, torch.Tensor)), None)
    X, Y = _features("X", X, dev), _features("Y", Y, dev)
    if X.device != Y.device:
        raise ValueError(f"X and Y must be on the same device, got {X.device} and {Y.device}")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have the same number of rows (examples), got {X.shape[0]} and {Y.shape[0]}")
    return X, Y


BANDWIDTH_RANGE = (1e-150, 1e150)     # σ² = bandwidth² × a squared distance must stay a normal float64


def _check_kernel(kernel, bandwidth, median):
    one_of("kernel", kernel, KERNELS)
    one_of("median", median, MEDIANS)
    bandwidth = real_scalar("bandwidth", bandwidth, lo=0.0, lo_open=True)
    if not BANDWIDTH_RANGE[0] <= bandwidth <= BANDWIDTH_RANGE[1]:
        raise ValueError(f"bandwidth must lie in [{BANDWIDTH_RANGE[0]:g}, {BANDWIDTH_RANGE[1]:g}] (its square scales "
                         f"the squared distances), got {bandwidth!r}")
    return bandwidth


# ------------------------------------------------------------------------------------------------------------------
# Gram matrices and HSIC

# Absolute accuracy kept on every entry of an RBF Gram matrix (judged by a rounding-error bound; see _rbf_gram).
RBF_ATOL = 1e-10


def _order_statistics(flat, ranks):
    """The entries of 0-based ascending ``ranks`` of a 1-D float64 tensor, found by selection, not a full sort:
    np.partition on the CPU (on a zero-copy view), torch.kthvalue on other devices."""
    if flat.device.type == "cpu":
        part = np.partition(flat.numpy(), sorted(set(ranks)))
        return [float(part[k]) for k in ranks]
    return [float(flat.kthvalue(k + 1).values) for k in ranks]


def _median_sq_distance(D2, median):
    """The squared median distance that σ² is ``bandwidth²`` times, from the squared distances D2 (n, n), symmetric
    with an exactly zero diagonal (see :func:`gram` for the two rules).

    Sorted, the n² entries of D2 are the n zeros of the diagonal followed by the value of every pair i < j twice, so
    the pair of rank q sits at ranks n + 2q and n + 2q + 1: both rules are two selections on the same flat array."""
    n = D2.shape[0]
    if median == "all_squared":
        a, b = _order_statistics(D2.reshape(-1), ((n * n - 1) // 2, n * n // 2))
        return 0.5 * (a + b)
    m = n * (n - 1) // 2
    a, b = _order_statistics(D2.reshape(-1), (n + 2 * ((m - 1) // 2), n + 2 * (m // 2)))
    return (0.5 * (np.sqrt(a) + np.sqrt(b))) ** 2


def _rbf_gram(X, Xc, bandwidth, median, sigma, name="X"):
    """exp(−D²/(2σ²)) for float64 features X (n, p), Xc the column-centred X, σ given or from the median rule.

    Squared distances come from the Gram identity D²ᵢⱼ = sᵢ + sⱼ − 2gᵢⱼ (G = XcXcᵀ, s = diag G): one matrix product
    instead of n² difference vectors. Negative rounding residues are clipped to 0 and the diagonal is set to exactly
    0. Its rounding error is at most β_ij = 2(p + 4)u(sᵢ + sⱼ) (u = 2⁻⁵³: p-term dot products, Higham, Accuracy and
    Stability of Numerical Algorithms, 2002, §3.1; the two additions; and the centring, whose error on xᵢ − xⱼ is
    at most u(|xc_i| + |xc_j|) per coordinate since the error of the mean itself cancels), which moves K_ij by at most
    K_ij β_ij/(2σ²) to first order. Where that bound exceeds RBF_ATOL — features far from their mean compared with σ,
    e.g. two tight clusters far apart — the rows concerned are recomputed from direct differences of the uncentred
    features (and σ with them), so every entry of K is accurate to RBF_ATOL whatever the offsets; on ordinary data
    nothing is recomputed."""
    n, p = Xc.shape
    G = Xc @ Xc.T
    s = G.diagonal().clone()
    D2 = G.mul_(-2.0).add_(s[:, None]).add_(s[None, :]).clamp_(min=0.0)
    D2.fill_diagonal_(0.0)
    b = 2.0 * (p + 4) * float(np.finfo(np.float64).eps / 2) * s     # β_ij = b_i + b_j
    exact = torch.zeros(n, dtype=torch.bool, device=Xc.device)     # rows recomputed from direct differences
    while True:
        if sigma is None:
            sigma2 = bandwidth ** 2 * _median_sq_distance(D2, median)
            if not sigma2 > 0:
                what = ("squared distance over all n² entries" if median == "all_squared"
                        else "distance over pairs i < j")
                raise ValueError(f"the median {what} of the features {name} is 0 (too many examples coincide, or "
                                 f"they are so small that their squared distances underflow), so the RBF "
                                 f"bandwidth σ is 0 (median={median!r}); pass sigma to gram(), or another median rule")
        else:
            sigma2 = sigma ** 2
        bi = torch.where(exact, 0.0, b)
        if not float(bi.max()) / sigma2 > RBF_ATOL:    # cheap test: max β_ij/(2σ²) ≤ RBF_ATOL, no entry can be off
            break
        beta = bi[:, None] + bi[None, :]
        beta[exact] = 0.0
        beta[:, exact] = 0.0
        beta.fill_diagonal_(0.0)
        err = beta / (2 * sigma2) * torch.exp(-(D2 - beta).clamp_(min=0.0) / (2 * sigma2))
        rows = (err > RBF_ATOL).any(dim=1)
        if not bool(rows.any()):
            break
        idx = torch.nonzero(rows).reshape(-1)
        direct = torch.cdist(X[idx], X, compute_mode="donot_use_mm_for_euclid_dist").square_()
        D2[idx] = direct
        D2[:, idx] = direct.T
        D2.fill_diagonal_(0.0)
        exact |= rows
    return D2.mul_(-1.0 / (2 * sigma2)).exp_()


def _gram(X, kernel, bandwidth, sigma=None, median="all_squared", name="X"):
    """Gram matrix of float64 features X (n, p); see :func:`gram` for the conventions."""
    Xc = X - X.mean(dim=0, keepdim=True)
    if kernel == "linear":
        return Xc @ Xc.T
    if sigma is None and X.shape[0] < 2:
        raise ValueError(f"the RBF bandwidth needs n ≥ 2 examples for a median distance, got n = {X.shape[0]}")
    return _rbf_gram(X, Xc, bandwidth, median, sigma, name)


def gram(X, kernel="linear", bandwidth=0.5, sigma=None, median="all_squared"):
    """Gram matrix of the representation X (n, p), rows = examples, as a float64 torch tensor (n, n).

    ``kernel="linear"``: K = X_c X_cᵀ on column-centred features. ``kernel="rbf"``: K_ij = exp(−‖xᵢ − xⱼ‖²/(2σ²))
    with the absolute ``sigma`` when given (then the kernel is no longer invariant to rescaling X), otherwise σ from
    the median rule ``median``:

    * ``"all_squared"`` (default): σ² = ``bandwidth``² × the median of all n² squared distances, the zero diagonal
      included (the two middle values averaged when n² is even, as np.median does). This is the rule of Kornblith et
      al.'s reference code (``gram_rbf(x, threshold)``, Kornblith, Norouzi, Lee & Hinton, ICML 2019), from which
      their published RBF CKA values come. ckatorch (a PyTorch port of that code) takes the same median with
      torch.median, i.e. the lower of the two middle values, which can differ in the fifth digit.
    * ``"distinct_pairs"``: σ = ``bandwidth`` × the median Euclidean distance over the n(n−1)/2 pairs i < j (the two
      middle values averaged when their count is even), the paper's wording ("a fraction of the median distance");
      it gives a slightly larger σ.

    Squared distances come from the Gram identity with a rounding-error guard (every entry accurate to 1e-10).

    Parameters
    ----------
    X : array_like or torch.Tensor
        (n, p) features, rows = examples.
    kernel : {"linear", "rbf"}, default "linear"
        The kernel.
    bandwidth : float, default 0.5
        The fraction of the median distance that sets σ (RBF without ``sigma``).
    sigma : float, optional
        An absolute σ for the RBF kernel.
    median : {"all_squared", "distinct_pairs"}, default "all_squared"
        The median rule.

    Returns
    -------
    torch.Tensor
        (n, n), float64.

    Examples
    --------
    >>> print(gram(np.array([[0.0], [1.0], [2.0]])).numpy() + 0.0)         # x_c = (−1, 0, 1): K = x_c x_cᵀ
    [[ 1.  0. -1.]
     [ 0.  0.  0.]
     [-1.  0.  1.]]
    >>> K = gram(np.array([[0.0], [1.0]]), kernel="rbf", sigma=1.0)
    >>> print(f"{K[0, 1].item():.6f}", f"{np.exp(-0.5):.6f}")
    0.606531 0.606531
    """
    bandwidth = _check_kernel(kernel, bandwidth, median)
    X = _features("X", X)
    if sigma is not None:
        sigma = real_scalar("sigma", sigma, lo=0.0, lo_open=True)
    return _gram(X, kernel, bandwidth, sigma, median)


def _centred(Ks, unbiased):
    """The centred Gram matrices whose Frobenius inner products are the HSIC estimators, for a stack (…, n, n).

    Biased: HKH. Unbiased: the U-centring of K̃ (K with its diagonal set to 0; Székely & Rizzo 2014, §2),
    Ũᵢⱼ = K̃ᵢⱼ − (K̃1)ᵢ/(n−2) − (1ᵀK̃)ⱼ/(n−2) + 1ᵀK̃1/((n−1)(n−2)) for i ≠ j, Ũᵢᵢ = 0."""
    n = Ks.shape[-1]
    if not unbiased:
        return (Ks - Ks.mean(dim=-1, keepdim=True) - Ks.mean(dim=-2, keepdim=True)
                + Ks.mean(dim=(-2, -1), keepdim=True))
    A = Ks - torch.diag_embed(torch.diagonal(Ks, dim1=-2, dim2=-1))
    U = (A - A.sum(dim=-1, keepdim=True) / (n - 2) - A.sum(dim=-2, keepdim=True) / (n - 2)
         + A.sum(dim=(-2, -1), keepdim=True) / ((n - 1) * (n - 2)))
    return U - torch.diag_embed(torch.diagonal(U, dim1=-2, dim2=-1))


def _denominator(n, unbiased):
    return n * (n - 3) if unbiased else (n - 1) ** 2


def _hsic_terms(Ks, Ls, unbiased):
    """Everything CKA needs from the stacks Ks (a, n, n) and Ls (c, n, n), each centred once: the cross HSIC (a, c),
    the self-HSICs (a,) and (c,) as sums of squares, and their scales (a,), (c,) — the same sums over the uncentred
    matrices (K, or K̃ for the unbiased estimator), against which a self-HSIC is judged zero up to rounding."""
    den = _denominator(Ks.shape[-1], unbiased)
    C, D = _centred(Ks, unbiased), _centred(Ls, unbiased)

    def scale(G):
        raw = G - torch.diag_embed(torch.diagonal(G, dim1=-2, dim2=-1)) if unbiased else G
        return raw.square().sum(dim=(-2, -1)) / den

    cross = (C.flatten(1) @ D.flatten(1).T) / den
    return cross, C.square().sum(dim=(-2, -1)) / den, scale(Ks), D.square().sum(dim=(-2, -1)) / den, scale(Ls)


def _min_examples(unbiased):
    return 4 if unbiased else 2


def hsic(K, L, unbiased=False):
    """Hilbert–Schmidt independence criterion of two symmetric n × n Gram matrices, as a float.

    ``unbiased=False``: HSIC₀ = tr(KHLH)/(n − 1)², H = I − 11ᵀ/n (Gretton et al. 2005; the normalisation of Kornblith
    et al. 2019), n ≥ 2. ``unbiased=True``: the unbiased estimator HSIC₁ of Song et al. 2012 (eq. 5; formula in the
    module docstring), n ≥ 4; it can be negative for K ≠ L, never for K = L.

    Parameters
    ----------
    K, L : array_like or torch.Tensor
        Symmetric (n, n) Gram matrices.
    unbiased : bool, default False
        HSIC₁ instead of HSIC₀.

    Returns
    -------
    float
        The estimate.

    Examples
    --------
    A centred K has HKH = K, so HSIC₀(K, K) = ‖K‖²_F/(n − 1)² = 4/4:

    >>> K = gram(np.array([[0.0], [1.0], [2.0]]))
    >>> print(hsic(K, K))
    1.0
    """
    unbiased = boolean("unbiased", unbiased)
    dev = next((a.device for a in (K, L) if isinstance(a, torch.Tensor)), None)
    K, L = _as_float64("K", K, dev), _as_float64("L", L, dev)
    for name, g in (("K", K), ("L", L)):
        if g.ndim != 2 or g.shape[0] != g.shape[1]:
            raise ValueError(f"{name} must be a square (n, n) Gram matrix, got shape {tuple(g.shape)}")
        if not torch.allclose(g, g.T, rtol=1e-10, atol=1e-12 * float(g.abs().max())):
            raise ValueError(f"{name} must be symmetric (a Gram matrix k(xᵢ, xⱼ))")
    if K.shape != L.shape:
        raise ValueError(f"K and L must have the same shape, got {tuple(K.shape)} and {tuple(L.shape)}")
    if K.device != L.device:
        raise ValueError(f"K and L must be on the same device, got {K.device} and {L.device}")
    n, need = K.shape[0], _min_examples(unbiased)
    if n < need:
        raise ValueError(f"{'unbiased' if unbiased else 'biased'} HSIC needs n ≥ {need} examples, got n = {n}")
    return float(_hsic_terms(K[None], L[None], unbiased)[0][0, 0])


# A self-HSIC below ZERO_RTOL² × its scale (the centred Gram matrix's norm below 1e-10 of the uncentred one's) is zero
# up to rounding: the centring annihilated the Gram matrix, and any ratio formed with it is noise.
ZERO_RTOL = 1e-10


def _normalise(h_xy, h_xx, s_xx, h_yy, s_yy, names=("X", "Y"), what="HSIC", hint=""):
    """h_xy / √(h_xx h_yy) (broadcasting), raising ValueError where a self-HSIC is zero up to rounding (``hint``
    appended to the message)."""
    for name, h, s in zip(names, (h_xx, h_yy), (s_xx, s_yy)):
        bad = ~(h > ZERO_RTOL ** 2 * s)
        if bool(bad.any()):
            where = "" if h.ndim == 0 else f" at layer {int(torch.nonzero(bad.reshape(-1))[0])}"
            raise ValueError(
                f"{what}({name}, {name}) is zero up to rounding{where} (the centred Gram matrix is below "
                f"{ZERO_RTOL:g} of the Gram matrix in norm), so CKA is undefined: the features carry no variation "
                f"the estimator sees (for the unbiased estimator this includes all examples equal but one){hint}")
    return h_xy / torch.sqrt(h_xx * h_yy)


def cka(X, Y, kernel="linear", debiased=False, bandwidth=0.5, median="all_squared"):
    """Centred kernel alignment of two representations of the same n examples, as a float.

    X (n, p), Y (n, q): torch tensors or NumPy arrays, rows = examples. CKA = HSIC(K, L)/√(HSIC(K, K) HSIC(L, L))
    (Kornblith et al. 2019, eq. 3) with K, L the ``kernel`` Gram matrices ("linear", or "rbf" with σ set by
    ``bandwidth`` and the ``median`` rule: "all_squared", σ² = bandwidth² × the median of all n² squared distances,
    as in Kornblith et al.'s reference code and ckatorch; or "distinct_pairs", σ = bandwidth × the median distance
    over pairs i < j; see :func:`gram`) and HSIC₀, or HSIC₁ (Song et al. 2012) in all three places when ``debiased``
    (n ≥ 4). Both are cosines of centred Gram matrices, so CKA ∈ [0, 1] (biased, PSD kernels) or [−1, 1] (debiased).
    Linear CKA is invariant to X ↦ cXQ + 1bᵀ (c ≠ 0, Q orthogonal); RBF CKA too, through the median rule.
    Raises ValueError for mismatched n, an unknown kernel or median rule, bandwidth ≤ 0, constant features (every
    row equal), or a self-HSIC that is zero up to rounding.

    Parameters
    ----------
    X, Y : array_like or torch.Tensor
        (n, p) and (n, q) features of the same examples.
    kernel : {"linear", "rbf"}, default "linear"
        The kernel of both.
    debiased : bool, default False
        HSIC₁ instead of HSIC₀.
    bandwidth : float, default 0.5
        The RBF bandwidth, a fraction of the median distance.
    median : {"all_squared", "distinct_pairs"}, default "all_squared"
        The median rule of :func:`gram`.

    Returns
    -------
    float
        CKA(X, Y).

    Examples
    --------
    Linear CKA is ‖Y_cᵀX_c‖²_F/(‖X_cᵀX_c‖_F ‖Y_cᵀY_c‖_F), and invariant to X ↦ cXQ + 1bᵀ:

    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((20, 5)), rng.standard_normal((20, 3))
    >>> Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    >>> fro = np.linalg.norm
    >>> print(f"{cka(X, Y):.10f}", f"{fro(Yc.T @ Xc) ** 2 / (fro(Xc.T @ Xc) * fro(Yc.T @ Yc)):.10f}")
    0.1241994665 0.1241994665
    >>> Q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    >>> print(f"{cka(X, 3 * X @ Q + 1):.10f}")
    1.0000000000
    """
    bandwidth = _check_kernel(kernel, bandwidth, median)
    debiased = boolean("debiased", debiased)
    X, Y = _feature_pair(X, Y)
    n, need = X.shape[0], _min_examples(debiased)
    if n < need:
        raise ValueError(f"{'debiased' if debiased else 'biased'} CKA needs n ≥ {need} examples, got n = {n}")
    for name, F in (("X", X), ("Y", Y)):
        if bool((F == F[0]).all()):
            raise ValueError(f"{name} is constant (every row equal): its centred Gram matrix is 0 and CKA is undefined")
    K, L = (_gram(F, kernel, bandwidth, median=median, name=name)[None] for name, F in (("X", X), ("Y", Y)))
    h_xy, h_xx, s_xx, h_yy, s_yy = _hsic_terms(K, L, debiased)
    hint = (f"; with kernel='rbf' at bandwidth={bandwidth!r} the Gram matrix may be all ones (bandwidth too large) "
            "or the identity" if kernel == "rbf" else "")
    return float(_normalise(h_xy[0, 0], h_xx[0], s_xx[0], h_yy[0], s_yy[0], what="HSIC₁" if debiased else "HSIC₀",
                            hint=hint))


# ------------------------------------------------------------------------------------------------------------------
# Minibatch CKA

class MinibatchCKA:
    """Minibatch linear CKA (Nguyen, Raghu & Kornblith, ICLR 2021, §3.1) between every layer of a list A and every layer
    of a list B, accumulated batch by batch:

        CKA_mb[a, b] = mean_i HSIC₁(X_{a,i}X_{a,i}ᵀ, Y_{b,i}Y_{b,i}ᵀ)
                       / √(mean_i HSIC₁(X_{a,i}X_{a,i}ᵀ, ·) · mean_i HSIC₁(Y_{b,i}Y_{b,i}ᵀ, ·)).

    Call :meth:`update` once per batch with one (batch, …) tensor per layer (dimensions beyond the first are
    flattened; the batch must hold the same examples, in the same order, for every layer, and at least 4 of them),
    then :meth:`compute`. Sums stay in float64 on the features' device and :meth:`update` never synchronises with
    the host (shapes are checked, values only in :meth:`compute`, which copies the result to the host).
    One batch gives exactly the full-batch debiased linear CKA; see the module docstring for several.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((20, 5)), rng.standard_normal((20, 3))
    >>> mb = MinibatchCKA()
    >>> mb.update([torch.tensor(X)], [torch.tensor(Y), torch.tensor(X)])
    >>> print(np.round(mb.compute(), 10), f"{cka(X, Y, debiased=True):.10f}")
    [[-0.06130126  1.        ]] -0.0613012619
    """

    def __init__(self):
        self.reset()

    def reset(self):
        """Forget every batch seen so far."""
        # Σᵢ HSIC₁(a, b) (len_a, len_b); Σᵢ HSIC₁(a, a) and its scale (len_a,); the same for b.
        self._sums = None
        self.n_batches = 0

    @staticmethod
    def _grams(name, feats):
        if isinstance(feats, torch.Tensor) or not isinstance(feats, Sequence) or len(feats) == 0:
            raise ValueError(f"{name} must be a non-empty list with one (batch, features) tensor per layer")
        mats = []
        for j, f in enumerate(feats):
            if isinstance(f, torch.Tensor):
                t = f.detach()
            else:
                arr = np.asarray(f) if not isinstance(f, (str, bytes)) else np.asarray(f, dtype=object)
                if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
                    raise ValueError(f"{name}[{j}] must be a real numeric array or tensor, got {type(f).__name__}")
                t = torch.as_tensor(arr)
            if t.is_complex():
                raise ValueError(f"{name}[{j}] must be real, got dtype {t.dtype}")
            if t.ndim < 1:
                raise ValueError(f"{name}[{j}] must have a leading batch dimension, got a scalar")
            mats.append(t.reshape(t.shape[0], -1).to(torch.float64))
        b, dev = mats[0].shape[0], mats[0].device
        for j, t in enumerate(mats):
            if t.shape[0] != b:
                raise ValueError(f"every layer must hold the same batch of examples: {name}[0] has {b} rows, "
                                 f"{name}[{j}] has {t.shape[0]}")
            if t.device != dev:
                raise ValueError(f"{name}[{j}] is on {t.device}, {name}[0] on {dev}: features must share a device")
        if b < 4:
            raise ValueError(f"{name} must hold a batch of at least 4 examples (the unbiased HSIC), got {b}")
        # HSIC₁ is invariant to feature offsets; centring only keeps their rounding error out of the Gram matrices.
        centred = [t - t.mean(dim=0) for t in mats]
        return torch.stack([c @ c.T for c in centred])

    def update(self, feats_a, feats_b):
        """Add one batch.

        Parameters
        ----------
        feats_a, feats_b : list of torch.Tensor
            One (batch, …) tensor per layer, all of the same batch of at least 4 examples.
        """
        Ka, Kb = self._grams("feats_a", feats_a), self._grams("feats_b", feats_b)
        if Ka.shape[1] != Kb.shape[1]:
            raise ValueError(f"feats_a and feats_b must hold the same batch of examples, got {Ka.shape[1]} and "
                             f"{Kb.shape[1]} rows")
        if Ka.device != Kb.device:
            raise ValueError(f"feats_a and feats_b must share a device, got {Ka.device} and {Kb.device}")
        terms = _hsic_terms(Ka, Kb, True)
        if self._sums is None:
            self._sums = terms
        else:
            shape, dev = self._sums[0].shape, self._sums[0].device
            if terms[0].shape != shape:
                raise ValueError(f"the number of layers changed between batches: was {tuple(shape)}, got "
                                 f"{tuple(terms[0].shape)} (len(feats_a), len(feats_b))")
            if terms[0].device != dev:
                raise ValueError(f"features moved from {dev} to {terms[0].device} between batches")
            self._sums = tuple(acc + t for acc, t in zip(self._sums, terms))
        self.n_batches += 1

    def compute(self):
        """The minibatch CKA matrix.

        Returns
        -------
        ndarray
            (len(feats_a), len(feats_b)), float64.
        """
        if self.n_batches == 0:
            raise ValueError("MinibatchCKA.compute() needs at least one update()")
        ab, aa, sa, bb, sb = (t / self.n_batches for t in self._sums)
        # Non-finite features are detected here, once, rather than by a host synchronisation per batch.
        for name, terms in (("feats_a", (aa, sa)), ("feats_b", (bb, sb)), ("feats_a and feats_b", (ab,))):
            if not all(bool(torch.isfinite(t).all()) for t in terms):
                raise ValueError(f"the HSIC sums of {name} are not finite: some batch held NaN or inf, or features so "
                                 "large (beyond ~1e75) that their Gram matrices overflow")
        out = _normalise(ab, aa[:, None], sa[:, None], bb[None, :], sb[None, :], names=("feats_a", "feats_b"),
                         what="mean HSIC₁")
        return out.cpu().numpy()


# ------------------------------------------------------------------------------------------------------------------
# Features of torch models

def _resolve_modules(model, modules, name="modules"):
    if isinstance(modules, (str, nn.Module)) or not isinstance(modules, Iterable) or getattr(modules, "ndim", 1) == 0:
        raise ValueError(f"{name} must be a list of submodules or of names from model.named_modules()")
    named = dict(model.named_modules())
    ids = {id(m) for m in named.values()}
    out = []
    for m in modules:
        if isinstance(m, str):
            if m not in named:
                raise ValueError(f"{name}: {m!r} is not a submodule name of the model (see model.named_modules())")
            out.append(named[m])
        elif isinstance(m, nn.Module):
            if id(m) not in ids:
                raise ValueError(f"{name}: {type(m).__name__} is not a submodule of the model")
            out.append(m)
        else:
            raise ValueError(f"{name} entries must be nn.Module or str, got {type(m).__name__}")
    if not out:
        raise ValueError(f"{name} must name at least one submodule")
    return out


def _as_inputs(inputs, device=None, name="inputs"):
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not inputs or not all(isinstance(x, torch.Tensor) and x.ndim >= 1 for x in inputs):
        raise ValueError(f"{name} must be a tensor with a batch dimension or a non-empty tuple of them (the model's "
                         f"arguments), got {[type(x).__name__ for x in inputs]}")
    if device is not None:
        inputs = tuple(x.to(device) for x in inputs)
    return inputs


def layer_features(model, inputs, modules):
    """Outputs of the given submodules during one forward pass ``model(*inputs)``, as a list of (batch, features)
    tensors (dimensions beyond the first flattened), in the order of ``modules``.

    ``inputs``: a tensor or a tuple of tensors. ``modules``: nn.Module objects inside ``model`` or names from
    ``model.named_modules()``. Forward hooks are removed afterwards, also when the forward pass raises. Each module
    must return a tensor and be called exactly once per forward pass (ValueError otherwise). The tensors keep their
    autograd history: call under torch.no_grad() when only the values are wanted.

    Parameters
    ----------
    model : torch.nn.Module
        The model.
    inputs : torch.Tensor or tuple of torch.Tensor
        One batch: ``model(*inputs)``.
    modules : list of nn.Module or str
        The submodules whose outputs to take.

    Returns
    -------
    list of torch.Tensor
        One (batch, features) tensor per module.

    Examples
    --------
    >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> feats = layer_features(net, torch.zeros(5, 3), ["0", "2"])
    >>> print([tuple(f.shape) for f in feats])
    [(5, 4), (5, 2)]
    """
    return _layer_features(model, inputs, modules, "inputs")


def _layer_features(model, inputs, modules, name):
    check_model(model)
    mods = _resolve_modules(model, modules)
    inputs = _as_inputs(inputs, name=name)
    n = inputs[0].shape[0]
    if n < 1:
        raise ValueError(f"{name} must hold at least one example, got shapes {[tuple(x.shape) for x in inputs]}")
    if any(x.is_floating_point() and not bool(torch.isfinite(x).all()) for x in inputs):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    dtype = model_dtype(model)
    if dtype is not None:                                     # floating inputs take the model's precision
        inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    captured = [[] for _ in mods]

    def hook_for(j):
        def hook(module, args, output):
            captured[j].append(output)
        return hook

    with contextlib.ExitStack() as stack:
        for j, m in enumerate(mods):
            stack.callback(m.register_forward_hook(hook_for(j)).remove)
        apply_to(model, inputs, name)
    feats = []
    for j, (m, outs) in enumerate(zip(mods, captured)):
        if len(outs) != 1:
            raise ValueError(f"modules[{j}] ({type(m).__name__}) was called {len(outs)} times in one forward pass; "
                             "its features are ambiguous: pick a submodule that runs once")
        out = outs[0]
        if not isinstance(out, torch.Tensor) or out.ndim < 1:
            raise ValueError(f"modules[{j}] ({type(m).__name__}) must return a tensor with a batch dimension, "
                             f"got {type(out).__name__}")
        if out.shape[0] != n:
            raise ValueError(f"modules[{j}] ({type(m).__name__}) returned {out.shape[0]} rows for the {n} examples of "
                             f"{name} (shapes {[tuple(x.shape) for x in inputs]}): give {name} a batch dimension")
        feats.append(out.reshape(out.shape[0], -1))
    return feats


def cka_between(model_a, model_b, batches, modules_a, modules_b, device=None, progress=False):
    """Minibatch linear CKA (:class:`MinibatchCKA`) between layers ``modules_a`` of ``model_a`` and ``modules_b`` of
    ``model_b``, over an iterable of input ``batches`` (each a tensor or a tuple of tensors: ``model(*batch)``; for a
    DataLoader of (x, y) pairs pass ``(x for x, _ in loader)``). Batches are moved to ``device`` when given. Runs
    under torch.no_grad() with both models in eval mode (their training flags are restored afterwards).

    Parameters
    ----------
    model_a, model_b : torch.nn.Module
        The two models (may be the same one).
    batches : iterable
        Input batches, each a tensor or a tuple of tensors.
    modules_a, modules_b : list of nn.Module or str
        The layers compared.
    device : str or torch.device, optional
        Where batches are moved.
    progress : bool, default False
        Show a progress bar.

    Returns
    -------
    ndarray
        (len(modules_a), len(modules_b)), float64.

    Examples
    --------
    A model against itself has CKA 1 between each layer and itself:

    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> x = torch.randn(8, 3)
    >>> print(np.round(np.diag(cka_between(net, net, [x, x], ["0", "2"], ["0", "2"])), 10))
    [1. 1.]
    """
    progress = boolean("progress", progress)
    check_model(model_a, "model_a")
    check_model(model_b, "model_b")
    if isinstance(batches, (str, bytes, torch.Tensor)) or not isinstance(batches, Iterable) \
            or getattr(batches, "ndim", 1) == 0:
        raise ValueError(f"batches must be an iterable of input batches (tensors or tuples of tensors), got "
                         f"{type(batches).__name__}")
    mods_a = _resolve_modules(model_a, modules_a, "modules_a")
    mods_b = _resolve_modules(model_b, modules_b, "modules_b")
    same = model_a is model_b
    acc = MinibatchCKA()
    models = (model_a,) if same else (model_a, model_b)
    modes = [[m.training for m in model.modules()] for model in models]
    try:
        for model in models:
            model.eval()
        with torch.no_grad():
            for batch in tqdm(batches, desc="minibatch CKA", disable=not progress):
                inputs = _as_inputs(batch, device, "batches")
                if inputs[0].shape[0] < 4:
                    raise ValueError(f"batches must hold at least 4 examples each (the unbiased HSIC), got a batch of "
                                     f"{inputs[0].shape[0]}")
                if same:  # one forward pass serves both lists
                    feats = _layer_features(model_a, inputs, mods_a + mods_b, "batches")
                    fa, fb = feats[:len(mods_a)], feats[len(mods_a):]
                else:
                    fa = _layer_features(model_a, inputs, mods_a, "batches")
                    fb = _layer_features(model_b, inputs, mods_b, "batches")
                acc.update(fa, fb)
    finally:
        for model, flags in zip(models, modes):
            for m, flag in zip(model.modules(), flags):
                m.training = flag
    if acc.n_batches == 0:
        raise ValueError("batches is empty: no input batch to compare the models on")
    return acc.compute()
