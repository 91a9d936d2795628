"""Classical random-matrix ensembles, sampled on NumPy or CuPy in float64: Ginibre, Haar orthogonal matrices and partial
isometries (QR with the signs of diag(R) folded in: Mezzadri, Notices AMS 2007), random signed permutations, Wishart and
Ginibre-product eigenvalues, free products of diagonals conjugated by Haar matrices, and the layer weights of a random
network (Gaussian, orthogonal, permutation) in rmtnet.spectra.network's convention.

These are the bottom of rmtnet.spectra's sampling: the laws (``MarchenkoPastur.rvs``) and the network samplers of
:mod:`rmtnet.spectra.sampling.montecarlo` build on them, and this module imports nothing else of rmtnet but the backend and
the argument checks. ``rng`` arguments are generators from :func:`rmtnet.backend.rng`; ``seed`` arguments anything
it accepts.
"""
from __future__ import annotations

import math

import numpy as np

from ... import backend as B
from rmtnet._progress import bar, check_progress
from rmtnet._system import check_allocation
from rmtnet._validation import finite_array, positive_integers

__all__ = ["ginibre", "haar_orthogonal", "haar_isometry", "signed_permutation", "layer_weights", "random_input",
           "wishart_eigs", "ginibre_product_eigs", "free_product_eigs"]


def _fits(name, elements, what, backend, law, smaller=None):
    """Refuse, before drawing, ``elements`` float64 entries that cannot fit in memory: a
    :class:`rmtnet._system.MemoryLimitError` naming the size argument ``name`` and the ``law`` to use instead."""
    check_allocation(name, 8.0 * elements, what=what, backend=B.get_backend() if backend is None else backend,
                     alternative=f"{smaller or f'give a smaller {name} or n_samples'}; the limit law {law} needs no "
                                 f"sampling, and "
                                 f"rmtnet.spectra.slq estimates the spectrum of a matrix-free operator of this size")


def ginibre(n, m, rng, backend=None, batch=None):
    """n×m real Gaussian matrix (or a batch of them) with iid N(0, 1/m) entries.

    Parameters
    ----------
    n, m : int
        The shape.
    rng : Generator
        From :func:`rmtnet.backend.rng` (NumPy or CuPy).
    backend : str, optional
        Unused (the array library is ``rng``'s); kept for a uniform signature.
    batch : int, optional
        A leading batch axis of this length.

    Returns
    -------
    ndarray
        Shape (n, m) or (batch, n, m), float64.

    Examples
    --------
    >>> from rmtnet import backend
    >>> g = ginibre(200, 100, backend.rng(0))
    >>> print(g.shape, f"{100 * g.var():.1f}")                 # entries of variance 1/m
    (200, 100) 1.0
    """
    shape = (n, m) if batch is None else (batch, n, m)
    return rng.standard_normal(shape, dtype="float64") / (m ** 0.5)


def haar_orthogonal(n, rng, backend=None, batch=None):
    """Haar-distributed orthogonal n×n matrices: QR of a Ginibre matrix with the sign of diag(R) folded into Q
    (Mezzadri, Notices of the AMS 2007), so the law is exactly Haar, not merely orthogonal. The square case of
    :func:`haar_isometry`.

    Parameters
    ----------
    n : int
        The size.
    rng : Generator
        From :func:`rmtnet.backend.rng`.
    backend : str, optional
        The array library ("numpy", "cupy"; default the global one).
    batch : int, optional
        A leading batch axis of this length.

    Returns
    -------
    ndarray
        Shape (n, n) or (batch, n, n).

    Examples
    --------
    >>> from rmtnet import backend
    >>> o = haar_orthogonal(5, backend.rng(0))
    >>> print(np.allclose(o @ o.T, np.eye(5)))
    True
    """
    return haar_isometry(n, n, rng, backend, batch)


def wishart_eigs(n, m, seed=None, backend=None, n_samples=1):
    """Eigenvalues of XXᵀ, X n×m with entries N(0, 1/m): a draw of MarchenkoPastur(n/m).

    Parameters
    ----------
    n, m : int
        The shape of X.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy" (default the global one).
    n_samples : int, default 1
        Independent matrices, pooled.

    Returns
    -------
    ndarray
        Shape (n_samples·n,), on the backend.

    Examples
    --------
    MarchenkoPastur(1/2) has m₁ = 1, m₂ = 1 + 1/2:

    >>> e = wishart_eigs(200, 400, seed=0)
    >>> print(e.shape, f"{e.mean():.1f}", f"{(e ** 2).mean():.1f}")
    (200,) 1.0 1.5
    """
    positive_integers(n=n, m=m, n_samples=n_samples)
    _fits("n" if n >= m else "m", n_samples * (n * m + 2 * n * n),
          f"n_samples = {n_samples} matrices X ({n}×{m}) and XXᵀ ({n}×{n})", backend, "MarchenkoPastur(n/m)")
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    x = ginibre(n, m, rng, backend, batch=n_samples)
    return xp.linalg.eigvalsh(x @ xp.swapaxes(x, -1, -2)).ravel()


def ginibre_product_eigs(n, s, seed=None, backend=None, n_samples=1, progress=True):
    """Eigenvalues of (G_s⋯G_1)(G_s⋯G_1)ᵀ for s iid n×n Ginibre matrices (entries N(0, 1/n)): a draw of
    FussCatalan(s).

    Parameters
    ----------
    n : int
        The size.
    s : int
        The number of factors.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    n_samples : int, default 1
        Independent products, pooled.
    progress : bool, default True
        A bar over the s factors on a terminal (:func:`rmtnet._progress.bar`; it changes no number).

    Returns
    -------
    ndarray
        Shape (n_samples·n,).

    Examples
    --------
    FussCatalan(2) has m₂ = 3:

    >>> e = ginibre_product_eigs(200, 2, seed=0)
    >>> print(f"{e.mean():.1f}", f"{(e ** 2).mean():.1f}")
    1.0 3.0
    """
    positive_integers(n=n, s=s, n_samples=n_samples)
    _fits("n", 4 * n_samples * n * n, f"n_samples = {n_samples} products of {n}×{n} matrices", backend,
          "FussCatalan(s)")
    progress = check_progress(progress)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    p = None
    for _ in bar(range(s), progress=progress, desc="Ginibre product", unit="factor"):
        g = ginibre(n, n, rng, backend, batch=n_samples)
        p = g if p is None else g @ p
    return xp.linalg.eigvalsh(p @ xp.swapaxes(p, -1, -2)).ravel()


def free_product_eigs(diagonals, seed=None, backend=None, progress=True):
    """Eigenvalues of X Xᵀ with X = D_k O_k ⋯ D_1 O_1 for given diagonals d_i (arrays of length n, the square
    roots of the factors' eigenvalues) and independent Haar orthogonal O_i: a draw of ⊠_i law(d_i²).

    Parameters
    ----------
    diagonals : sequence of array_like
        k ≥ 1 arrays of one length n.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    progress : bool, default True
        A bar over the k factors on a terminal (:func:`rmtnet._progress.bar`; it changes no number).

    Returns
    -------
    ndarray
        The n eigenvalues, ascending.

    Examples
    --------
    δ₁ ⊠ (½δ₀ + ½δ₂) is ½δ₀ + ½δ₂ itself: half the eigenvalues vanish, m₂ = 2:

    >>> d2 = np.sqrt(np.r_[np.zeros(50), np.full(50, 2.0)])
    >>> e = free_product_eigs([np.ones(100), d2], seed=0)
    >>> print(int(np.sum(e < 1e-9)), f"{e.mean():.6f}", f"{(e ** 2).mean():.6f}")
    50 1.000000 2.000000
    """
    if len(diagonals) == 0:
        raise ValueError("diagonals must hold at least one array")
    diagonals = [finite_array(f"diagonals[{i}]", d).ravel() for i, d in enumerate(diagonals)]
    n = diagonals[0].size
    if n == 0 or any(d.size != n for d in diagonals):
        raise ValueError(f"diagonals must be non-empty arrays of the same length, got lengths "
                         f"{[int(d.size) for d in diagonals]}")
    log_top = sum(2.0 * math.log(float(abs(d).max())) if float(abs(d).max()) > 0 else -math.inf for d in diagonals)
    if log_top + math.log(n) > math.log(np.finfo(float).max):
        raise ValueError(f"diagonals must keep the product's eigenvalues within float64: n·Π max|d_i|² = "
                         f"e^{log_top + math.log(n):.6g} overflows; rescale them")
    _fits("diagonals", 3 * n * n, f"the {n}×{n} product and Haar matrices (n = the diagonals' length)", backend,
          "rmtnet.spectra.free_mult of the diagonals' laws", "give shorter diagonals")
    progress = check_progress(progress)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    x = xp.eye(n)
    for d in bar(diagonals, progress=progress, desc="free product", unit="factor"):
        o = haar_orthogonal(n, rng, backend)
        x = xp.asarray(d)[:, None] * (o @ x)
    return xp.linalg.eigvalsh(x @ x.T)


def haar_isometry(n, m, rng, backend=None, batch=None):
    """An n×m Haar partial isometry: orthonormal columns if n ≥ m, orthonormal rows otherwise (QR of a Gaussian
    matrix with the signs of diag(R) folded in, so the law is exactly Haar). n = m gives :func:`haar_orthogonal`.

    Parameters
    ----------
    n, m : int
        The shape.
    rng : Generator
        From :func:`rmtnet.backend.rng`.
    backend : str, optional
        "numpy" or "cupy".
    batch : int, optional
        A leading batch axis of this length.

    Returns
    -------
    ndarray
        Shape (n, m) or (batch, n, m).

    Examples
    --------
    >>> from rmtnet import backend
    >>> v = haar_isometry(6, 3, backend.rng(0))
    >>> print(v.shape, np.allclose(v.T @ v, np.eye(3)))
    (6, 3) True
    """
    xp = B.native(backend)
    tall = n >= m
    shape = (n, m) if tall else (m, n)
    a = rng.standard_normal(shape if batch is None else (batch,) + shape, dtype="float64")
    q, r = xp.linalg.qr(a)
    d = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))
    d = xp.where(d == 0, 1.0, d)
    q = q * d[..., None, :]
    return q if tall else xp.swapaxes(q, -1, -2)


def signed_permutation(n, rng, backend=None, batch=None):
    """Uniformly random signed n×n permutation matrices, built densely: orthogonal but not Haar, and not
    asymptotically free from diagonal matrices — the control of :mod:`~rmtnet.studies.freeness`.

    Parameters
    ----------
    n : int
        The size.
    rng : Generator
        From :func:`rmtnet.backend.rng`.
    backend : str, optional
        "numpy" or "cupy".
    batch : int, optional
        A leading batch axis of this length.

    Returns
    -------
    ndarray
        Shape (n, n) or (batch, n, n): one ±1 per row and column.

    Examples
    --------
    >>> from rmtnet import backend
    >>> p = signed_permutation(4, backend.rng(0))
    >>> print(np.abs(p).sum(axis=0), np.allclose(p @ p.T, np.eye(4)))
    [1. 1. 1. 1.] True
    """
    xp = B.native(backend)
    b = 1 if batch is None else batch
    perm = xp.argsort(rng.random((b, n)), axis=-1)
    sign = xp.where(rng.random((b, n)) < 0.5, -1.0, 1.0)
    p = xp.zeros((b, n, n), dtype="float64")
    p[xp.arange(b)[:, None], xp.arange(n)[None, :], perm] = sign
    return p if batch is not None else p[0]


def layer_weights(kind, n_out, n_in, sigma_w, rng, backend=None, batch=None):
    """W ∈ ℝ^{n_out×n_in} with entries of variance σ_w²/n_in: ``"gaussian"``, or ``"orthogonal"``: a Haar
    (partial) isometry scaled by σ_w·√(max(1, n_out/n_in)) (rmtnet.spectra.network's convention; square: σ_w O), or
    ``"permutation"`` (square only): σ_w times a random signed permutation, the non-free control.

    Parameters
    ----------
    kind : {"gaussian", "orthogonal", "permutation"}
        The ensemble.
    n_out, n_in : int
        The shape.
    sigma_w : float
        σ_w.
    rng : Generator
        From :func:`rmtnet.backend.rng`.
    backend : str, optional
        "numpy" or "cupy".
    batch : int, optional
        A leading batch axis of this length.

    Returns
    -------
    ndarray
        Shape (n_out, n_in) or (batch, n_out, n_in).

    Examples
    --------
    An orthogonal layer that doubles the width: WᵀW = σ_w²·(n_out/n_in)·I:

    >>> from rmtnet import backend
    >>> w = layer_weights("orthogonal", 8, 4, 2.0, backend.rng(0))
    >>> print(np.allclose(w.T @ w, 2.0 ** 2 * 2 * np.eye(4)))
    True
    """
    if kind == "gaussian":
        return sigma_w * ginibre(n_out, n_in, rng, backend, batch)
    if kind == "orthogonal":
        return sigma_w * max(1.0, n_out / n_in) ** 0.5 * haar_isometry(n_out, n_in, rng, backend, batch)
    if kind == "permutation":
        if n_out != n_in:
            raise ValueError(f"weights='permutation' needs square layers, got {n_out}×{n_in}")
        return sigma_w * signed_permutation(n_in, rng, backend, batch)
    raise ValueError(f"weights must be 'gaussian', 'orthogonal' or 'permutation', got {kind!r}")


def random_input(n, q0, rng, xp, batch):
    """A random input direction scaled to ‖x₀‖²/n = q0 exactly, one per sample.

    Parameters
    ----------
    n : int
        The input width.
    q0 : float
        ‖x₀‖²/n.
    rng : Generator
        From :func:`rmtnet.backend.rng`.
    xp : module
        The array library of ``rng`` (numpy or cupy).
    batch : int
        The number of samples.

    Returns
    -------
    ndarray
        Shape (batch, n).

    Examples
    --------
    >>> from rmtnet import backend
    >>> x = random_input(10, 0.5, backend.rng(0), np, 3)
    >>> print(np.round(np.sum(x * x, axis=-1) / 10, 12))
    [0.5 0.5 0.5]
    """
    x = rng.standard_normal((batch, n), dtype="float64")
    return x * xp.sqrt(q0 * n / xp.sum(x * x, axis=-1, keepdims=True))
