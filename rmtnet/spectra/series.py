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
    """First n coefficients of the product a·b (Cauchy product).

    Parameters
    ----------
    a, b : array_like
        Coefficients, ``a[k]`` of w^k.
    n : int
        How many coefficients.

    Returns
    -------
    ndarray
        The first n coefficients (fewer if a and b are shorter).

    Examples
    --------
    >>> print(mul(np.array([1.0, 1.0]), np.array([1.0, 1.0]), 3))      # (1 + w)²
    [1. 2. 1.]
    """
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
    """First n coefficients of the composition f(g(w)), for g(0) = 0.

    Parameters
    ----------
    f, g : array_like
        Coefficients; g[0] must be 0.
    n : int
        How many coefficients.

    Returns
    -------
    ndarray
        Length n.

    Examples
    --------
    1/(1 − g) with g = w + w² is the generating function of the Fibonacci numbers:

    >>> print(compose(np.ones(5), np.array([0.0, 1.0, 1.0]), 5))
    [1. 1. 2. 3. 5.]
    """
    out = np.zeros(n)
    p = np.zeros(n)
    p[0] = 1.0
    for k in range(min(n, len(f))):
        out += f[k] * p
        p = mul(p, g, n)
    return out


def reversion(f, n):
    """First n coefficients of the compositional inverse g of f (f(g(w)) = w), for f(0) = 0, f'(0) ≠ 0.

    Parameters
    ----------
    f : array_like
        Coefficients, at least n of them.
    n : int
        How many coefficients.

    Returns
    -------
    ndarray
        Length n, g[0] = 0.

    Examples
    --------
    The inverse of w − w² is (1 − √(1 − 4w))/2, the generating function of the Catalan numbers:

    >>> print(reversion([0.0, 1.0, -1.0, 0.0, 0.0], 5))
    [0. 1. 1. 2. 5.]
    """
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
    """First n coefficients of f^t for real t, f(0) > 0 (J. C. P. Miller's recurrence: Knuth, TAOCP vol. 2,
    §4.7).

    Parameters
    ----------
    f : array_like
        Coefficients, f[0] > 0.
    t : float
        The exponent.
    n : int
        How many coefficients.

    Returns
    -------
    ndarray
        Length n.

    Examples
    --------
    √(1 + w) = 1 + w/2 − w²/8 + w³/16 − …:

    >>> print(power([1.0, 1.0], 0.5, 4))
    [ 1.      0.5    -0.125   0.0625]
    """
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
    """S-transform coefficients s₀, …, s_{K−1} from moments m₁, …, m_K (m₁ ≠ 0).

    Parameters
    ----------
    moments : array_like
        m₁, …, m_K.

    Returns
    -------
    ndarray
        Length K.

    Examples
    --------
    Marchenko–Pastur of ratio 1 (Catalan moments): S(w) = 1/(1 + w):

    >>> print(s_coefficients([1, 2, 5, 14]))
    [ 1. -1.  1. -1.]
    """
    m = np.asarray(moments, dtype=float)
    K = m.size
    psi = np.concatenate([[0.0], m])
    chi = reversion(psi, K + 1)                    # χ(w) = Σ_{k=1..K} c_k w^k
    s = np.convolve(chi[1:], [1.0, 1.0])[:K]       # χ(w)/w · (1 + w)
    return s


def moments_from_s(s):
    """Moments m₁, …, m_K from S-transform coefficients s₀, …, s_{K−1} (the inverse of :func:`s_coefficients`).

    Parameters
    ----------
    s : array_like
        s₀ ≠ 0, …, s_{K−1}.

    Returns
    -------
    ndarray
        Length K.

    Examples
    --------
    >>> print(moments_from_s([1.0, -1.0, 1.0, -1.0]))
    [ 1.  2.  5. 14.]
    """
    s = np.asarray(s, dtype=float)
    K = s.size
    inv1pw = (-1.0) ** np.arange(K)                # 1/(1 + w)
    chi = np.concatenate([[0.0], mul(s, inv1pw, K)])
    psi = reversion(chi, K + 1)
    return psi[1:]


def product_moments(factors, K):
    """Moments 1..K of ⊠_i μ_i^{⊠t_i} (S-transforms multiply).

    Parameters
    ----------
    factors : list of (array_like, float)
        Pairs (moments_i, t_i), each moment sequence of length ≥ K with m₁ ≠ 0, t_i > 0.
    K : int
        How many moments.

    Returns
    -------
    ndarray
        m₁, …, m_K.

    Examples
    --------
    Two free Marchenko–Pastur(1) factors give Fuss–Catalan(2), m_k = C(3k, k)/(2k + 1):

    >>> mp = [1, 2, 5, 14]
    >>> print(product_moments([(mp, 1), (mp, 1)], 4))
    [ 1.  3. 12. 55.]
    """
    s = np.zeros(K)
    s[0] = 1.0
    for mom, t in factors:
        s = mul(s, power(s_coefficients(np.asarray(mom[:K], dtype=float)), t, K), K)
    return moments_from_s(s)


def free_cumulants(moments):
    """Free cumulants κ₁, …, κ_K from moments m₁, …, m_K (M(z) = C(z M(z)), the module's convention).

    Parameters
    ----------
    moments : array_like
        m₁, …, m_K.

    Returns
    -------
    ndarray
        Length K.

    Examples
    --------
    >>> print(free_cumulants([0, 1, 0, 2]) + 0.0)       # the semicircle: κ₂ = 1 only
    [0. 1. 0. 0.]
    """
    m = np.asarray(moments, dtype=float)
    K = m.size
    M = np.concatenate([[1.0], m])
    f = np.concatenate([[0.0], M[:K]])             # f(z) = z M(z)
    g = reversion(f, K + 1)
    C = compose(M, g, K + 1)
    return C[1:]


def moments_from_free_cumulants(kappa):
    """Moments m₁, …, m_K from free cumulants κ₁, …, κ_K (the inverse of :func:`free_cumulants`).

    Parameters
    ----------
    kappa : array_like
        κ₁, …, κ_K.

    Returns
    -------
    ndarray
        Length K.

    Examples
    --------
    >>> print(moments_from_free_cumulants([0, 1, 0, 0]) + 0.0)
    [0. 1. 0. 2.]
    """
    kappa = np.asarray(kappa, dtype=float)
    K = kappa.size
    C = np.concatenate([[1.0], kappa])
    # f = z C(f)  ⇔  f^{-1}(w) = w / C(w)
    inv_c = power(C, -1.0, K + 1)
    finv = np.concatenate([[0.0], inv_c])
    f = reversion(finv, K + 2)                     # f(z) = z M(z) = z + Σ m_k z^{k+1}
    return f[2:K + 2]


def sum_moments(factors, K):
    """Moments 1..K of ⊞_i μ_i^{⊞t_i} (free cumulants add).

    Parameters
    ----------
    factors : list of (array_like, float)
        Pairs (moments_i, t_i), each moment sequence of length ≥ K, t_i > 0.
    K : int
        How many moments.

    Returns
    -------
    ndarray
        m₁, …, m_K.

    Examples
    --------
    Two free semicircles of variance 1 make the semicircle of variance 2:

    >>> sc = [0, 1, 0, 2]
    >>> print(sum_moments([(sc, 1), (sc, 1)], 4) + 0.0)
    [0. 2. 0. 8.]
    """
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
