"""Moment series of free convolutions in floating point (the symbolic twin is :mod:`rmtnet.spectra.symbolic`).

Power series are 1-d coefficient arrays ``c`` with ``c[k]`` the coefficient of w^k. Conventions (those of
:mod:`rmtnet.spectra.transforms`): ψ(u) = Σ_{k≥1} m_k u^k, χ = ψ^{-1}, S(w) = χ(w)(1 + w)/w, S_{μ⊠ν} = S_μ S_ν;
free cumulants κ_k from M(z) = C(z M(z)) with M(z) = 1 + Σ m_k z^k and C(w) = 1 + Σ κ_k w^k, κ_{μ⊞ν} = κ_μ + κ_ν.
"""
from __future__ import annotations

import numpy as np

__all__ = ["mul", "reciprocal", "reversion", "power", "compose", "s_coefficients", "moments_from_s", "free_cumulants",
           "moments_from_free_cumulants", "product_moments", "sum_moments", "gram_product_moments", "affine_moments",
           "CachedMoments"]


def mul(a, b, n):
    """First n coefficients of a·b."""
    return np.convolve(a[:n], b[:n])[:n]


def reciprocal(a):
    """First ``len(a)`` coefficients of 1/a for a power series with a[0] ≠ 0.

    Parameters
    ----------
    a : ndarray
        Coefficients a_0, a_1, … (a_0 ≠ 0).

    Returns
    -------
    ndarray
        The coefficients of 1/a, truncated to a's length.

    Examples
    --------
    >>> import numpy as np
    >>> reciprocal(np.array([1.0, -1.0, 0.0, 0.0]))          # 1/(1 − w) = 1 + w + w² + …
    array([1., 1., 1., 1.])
    """
    out = np.zeros_like(a)
    out[0] = 1.0 / a[0]
    for k in range(1, a.size):
        out[k] = -np.dot(a[1:k + 1], out[k - 1::-1][:k]) / a[0]
    return out


def compose(f, g, n):
    """First n coefficients of f(g(w)) for g(0) = 0."""
    out = np.zeros(n)
    p = np.zeros(n)
    p[0] = 1.0
    for k in range(min(n, len(f))):
        out += f[k] * p
        p = mul(p, g, n)
    return out


def reversion(f, n):
    """First n coefficients of the compositional inverse of f, f(0) = 0, f'(0) ≠ 0."""
    f = np.asarray(f, dtype=float)
    if f[0] != 0 or f[1] == 0:
        raise ValueError("series reversion needs f(0) = 0 and f'(0) != 0")
    g = np.zeros(n)
    g[1] = 1.0 / f[1]
    powers = [None, np.asarray(f[:n], dtype=float)]
    for j in range(2, n):
        powers.append(mul(powers[-1], f, n))
    for k in range(2, n):
        acc = sum(g[j] * powers[j][k] for j in range(1, k))
        g[k] = -acc / f[1] ** k
    return g


def power(f, t, n):
    """First n coefficients of f^t for real t, f(0) > 0 (J. C. P. Miller's recurrence)."""
    f = np.asarray(f, dtype=float)
    if f[0] <= 0:
        raise ValueError("power of a series needs f(0) > 0")
    p = np.zeros(n)
    p[0] = f[0] ** t
    for k in range(1, n):
        j = np.arange(1, min(k, len(f) - 1) + 1)
        p[k] = np.sum((t * j - k + j) * f[j] * p[k - j]) / (k * f[0])
    return p


def s_coefficients(moments):
    """S-transform coefficients s_0..s_{K-1} from moments m_1..m_K (m_1 ≠ 0)."""
    m = np.asarray(moments, dtype=float)
    K = m.size
    psi = np.concatenate([[0.0], m])
    chi = reversion(psi, K + 1)                    # χ(w) = Σ_{k=1..K} c_k w^k
    s = np.convolve(chi[1:], [1.0, 1.0])[:K]       # χ(w)/w · (1 + w)
    return s


def moments_from_s(s):
    """Moments m_1..m_K from S-transform coefficients s_0..s_{K-1}."""
    s = np.asarray(s, dtype=float)
    K = s.size
    inv1pw = (-1.0) ** np.arange(K)                # 1/(1 + w)
    chi = np.concatenate([[0.0], mul(s, inv1pw, K)])
    psi = reversion(chi, K + 1)
    return psi[1:]


def product_moments(factors, K):
    """Moments 1..K of ⊠_i μ_i^{⊠t_i} for ``factors`` = [(moments_i (length ≥ K), t_i), ...]."""
    s = np.zeros(K)
    s[0] = 1.0
    for mom, t in factors:
        s = mul(s, power(s_coefficients(np.asarray(mom[:K], dtype=float)), t, K), K)
    return moments_from_s(s)


def free_cumulants(moments):
    """Free cumulants κ_1..κ_K from moments m_1..m_K."""
    m = np.asarray(moments, dtype=float)
    K = m.size
    M = np.concatenate([[1.0], m])
    f = np.concatenate([[0.0], M[:K]])             # f(z) = z M(z)
    g = reversion(f, K + 1)
    C = compose(M, g, K + 1)
    return C[1:]


def moments_from_free_cumulants(kappa):
    kappa = np.asarray(kappa, dtype=float)
    K = kappa.size
    C = np.concatenate([[1.0], kappa])
    # f = z C(f)  ⇔  f^{-1}(w) = w / C(w)
    inv_c = power(C, -1.0, K + 1)
    finv = np.concatenate([[0.0], inv_c])
    f = reversion(finv, K + 2)                     # f(z) = z M(z) = z + Σ m_k z^{k+1}
    return f[2:K + 2]


def sum_moments(factors, K):
    """Moments 1..K of ⊞_i μ_i^{⊞t_i} for ``factors`` = [(moments_i, t_i), ...]."""
    kappa = np.zeros(K)
    for mom, t in factors:
        kappa += t * free_cumulants(np.asarray(mom[:K], dtype=float))
    return moments_from_free_cumulants(kappa)


def gram_product_moments(moment_sequences, K):
    """m₁ … m_K of the free multiplicative convolution μ₁ ⊠ μ₂ ⊠ … of laws on [0, ∞) given by their moments.

    A law with m₁ = 0 is δ₀ (the input of a network with q0 = 0, or a layer whose φ′ vanishes), and δ₀ ⊠ μ = δ₀: all
    zeros, where the S-transform series (which needs m₁ ≠ 0) cannot be formed. Otherwise :func:`product_moments`
    with every exponent 1 (Voiculescu's S-transform, S_{μ⊠ν} = S_μ S_ν; Mingo & Speicher, "Free Probability and
    Random Matrices", Springer 2017, ch. 3).

    Parameters
    ----------
    moment_sequences : list of ndarray
        One sequence m₁, m₂, … (length ≥ K) per factor.
    K : int
        The number of moments wanted.

    Returns
    -------
    ndarray
        m₁ … m_K of the product (the single sequence itself when only one is given).

    Examples
    --------
    >>> import numpy as np
    >>> mp = np.array([1.0, 2.0, 5.0])                  # Marchenko–Pastur(1): Catalan numbers
    >>> gram_product_moments([mp, mp], 3)               # MP ⊠ MP: the Fuss–Catalan numbers 1, 3, 12
    array([ 1.,  3., 12.])
    """
    if len(moment_sequences) == 1:
        return moment_sequences[0]
    if any(seq[0] == 0 for seq in moment_sequences):
        return np.zeros(K)
    return product_moments([(seq, 1.0) for seq in moment_sequences], K)


def affine_moments(m, a, b):
    """Moments of b + aX from those of X, by the binomial theorem.

    Parameters
    ----------
    m : array_like
        m[k − 1] = E X^k, k = 1 … K.
    a, b : float
        The scale and the shift.

    Returns
    -------
    ndarray
        E (b + aX)^k for k = 1 … K.

    Examples
    --------
    >>> affine_moments([0.0, 1.0], 2.0, 1.0)            # X ~ N(0, 1): E(1 + 2X) = 1, E(1 + 2X)² = 5
    array([1., 5.])
    """
    from math import comb
    K = len(m)
    full = np.concatenate([[1.0], m])
    return np.array([sum(comb(k, j) * a ** j * full[j] * b ** (k - j) for j in range(k + 1)) for k in range(1, K + 1)])


class CachedMoments:
    """k ↦ ``fn(*constants, k)`` (the moments m₁ … m_k of a law given by its series), computed once per k.

    A class, not a closure, so that a law holding it pickles (``fn`` must be a module-level function).

    Parameters
    ----------
    fn : callable
        ``fn(*constants, k)`` returns m₁ … m_k.
    *constants
        The law's constants.

    Examples
    --------
    >>> import numpy as np
    >>> moments = CachedMoments(np.arange, 1.0)         # a stand-in: k ↦ arange(1, k)
    >>> moments(3)
    array([1., 2.])
    """

    def __init__(self, fn, *constants):
        self.fn, self.constants, self.cache = fn, constants, {}

    def __call__(self, k):
        if k not in self.cache:
            self.cache[k] = self.fn(*self.constants, k)
        return self.cache[k]
