"""Finite-N Monte Carlo of the random matrices whose limits the laws describe (NumPy or CuPy, float64).

Every sampler takes an explicit ``seed`` and a ``backend`` ("numpy", "cupy", or None for the global default) and
returns eigenvalues on that backend; :func:`rmtnet._backend.to_numpy` brings them to the host.
"""
from __future__ import annotations

from .. import _backend as B

__all__ = ["ginibre", "haar_orthogonal", "wishart_eigs", "ginibre_product_eigs", "free_product_eigs"]


def _check_dims(**dims):
    for name, v in dims.items():
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def ginibre(n, m, rng, backend=None, batch=None):
    """n×m real Gaussian matrix (or a batch of them) with iid N(0, 1/m) entries."""
    shape = (n, m) if batch is None else (batch, n, m)
    return rng.standard_normal(shape, dtype="float64") / (m ** 0.5)


def haar_orthogonal(n, rng, backend=None, batch=None):
    """Haar-distributed orthogonal n×n matrices: QR of a Ginibre matrix with the sign of diag(R) folded into Q
    (Mezzadri 2007), so the law is exactly Haar, not merely orthogonal."""
    xp = B.native(backend)
    a = rng.standard_normal((n, n) if batch is None else (batch, n, n), dtype="float64")
    q, r = xp.linalg.qr(a)
    d = xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))
    d = xp.where(d == 0, 1.0, d)
    return q * d[..., None, :]


def wishart_eigs(n, m, seed=None, backend=None, n_samples=1):
    """Eigenvalues of XXᵀ, X n×m with entries N(0, 1/m): a draw of MarchenkoPastur(n/m). Shape (n_samples·n,)."""
    _check_dims(n=n, m=m, n_samples=n_samples)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    x = ginibre(n, m, rng, backend, batch=n_samples)
    return xp.linalg.eigvalsh(x @ xp.swapaxes(x, -1, -2)).ravel()


def ginibre_product_eigs(n, s, seed=None, backend=None, n_samples=1):
    """Eigenvalues of (G_s⋯G_1)(G_s⋯G_1)ᵀ for s iid n×n Ginibre matrices (entries N(0, 1/n)): FussCatalan(s)."""
    _check_dims(n=n, s=s, n_samples=n_samples)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    p = ginibre(n, n, rng, backend, batch=n_samples)
    for _ in range(s - 1):
        p = ginibre(n, n, rng, backend, batch=n_samples) @ p
    return xp.linalg.eigvalsh(p @ xp.swapaxes(p, -1, -2)).ravel()


def free_product_eigs(diagonals, seed=None, backend=None):
    """Eigenvalues of X Xᵀ with X = D_k O_k ⋯ D_1 O_1 for given diagonals d_i (arrays of length n, the square
    roots of the factors' eigenvalues) and independent Haar orthogonal O_i: a draw of ⊠_i law(d_i²)."""
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    n = len(diagonals[0])
    x = xp.eye(n)
    for d in diagonals:
        o = haar_orthogonal(n, rng, backend)
        x = xp.asarray(d)[:, None] * (o @ x)
    return xp.linalg.eigvalsh(x @ x.T)
