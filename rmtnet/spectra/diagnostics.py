"""Reading an empirical spectrum against a law: the Kolmogorov–Smirnov band, outliers and spikes past the law's edge,
a power-law tail. Pure NumPy (no torch): the statistics behind :func:`rmtnet.nets.layer_spectra`.

Conventions.
  * A rectangular n_out × n_in matrix with iid entries of variance σ_w²/n_in has n = min(n_out, n_in) squared singular
    values; they follow the Marchenko–Pastur law MP(λ, s) (Marchenko & Pastur, Math. USSR-Sb. 1, 1967) with ratio
    λ = n/m ≤ 1 (m = max(n_out, n_in)) and scale s = σ_w²·m/n_in (:func:`layer_law`): mean s, no atom, right edge
    λ₊ = s(1 + √λ)².
  * KS band: :func:`dkw_bound` is the Dvoretzky–Kiefer–Wolfowitz bound √(log(2/α)/(2n)) with Massart's constant
    (Massart, Ann. Probab. 18, 1990, 1269–1283): n iid draws from a law are farther than this from it in KS distance
    with probability ≤ α. Eigenvalues of a random matrix repel and are more regular than iid draws, so it is a
    conservative band for them.
  * Edge fluctuation: :func:`tracy_widom_margin` is Johnstone's centring μ = (√(m−1) + √n)² plus q times his scaling
    σ = (√(m−1) + √n)(1/√(m−1) + 1/√n)^{1/3} of the largest eigenvalue of a white Wishart matrix (Johnstone, Ann.
    Statist. 29, 2001, 295–327), in the law's units s/m; q = :data:`TW1_99` = 2.0234, the 99 % quantile of the
    Tracy–Widom law TW₁ (Johnstone 2001, Table 1).
  * Spikes: for W = X + θuvᵀ (X's squared singular values of law MP(λ, s)) the top squared singular value separates
    from λ₊ iff θ > θ_c = √s·λ^{1/4} (:func:`spike_threshold`) and then tends to s(1 + t²)(λ + t²)/t², t = θ/√s;
    :func:`spike_strength` inverts that map (Benaych-Georges & Nadakuditi, Adv. Math. 227, 2011, 494–521 and
    J. Multivariate Anal. 111, 2012, 120–135; the BBP transition of Baik, Ben Arous & Péché, Ann. Probab. 33, 2005,
    1643–1697).
  * Bulk scale: :func:`mp_bulk_scale` is the fixed point of s = mean{x ≤ s(1 + √λ)²} (MP(λ, s) has mean s and no
    mass past its edge), started from the mean of all values, so outliers do not inflate it.
  * Tail: :func:`power_law_fit` is the continuous power-law MLE with x_min chosen by KS distance (Clauset, Shalizi &
    Newman, SIAM Review 51, 2009, 661–703).
"""
from __future__ import annotations

import math

import numpy as np

from rmtnet._validation import finite_array, integer_at_least, real_scalar
from .laws import MarchenkoPastur

__all__ = ["TW1_99", "layer_law", "dkw_bound", "tracy_widom_margin", "spike_threshold", "spike_strength",
           "spike_strength_in", "mp_bulk_scale", "power_law_fit"]

#: The 99 % quantile of the Tracy–Widom law TW₁ (Johnstone 2001, Table 1).
TW1_99 = 2.0234


def layer_law(n_out, n_in, sigma_w=1.0):
    """The Marchenko–Pastur law MP(λ, s) of the min(n_out, n_in) squared singular values of an n_out × n_in matrix
    with iid entries of variance σ_w²/n_in: λ = min/max of the sides, s = σ_w²·max(n_out, n_in)/n_in.

    Parameters
    ----------
    n_out, n_in : int
        The shape.
    sigma_w : float, default 1.0
        σ_w > 0.

    Returns
    -------
    MarchenkoPastur

    Examples
    --------
    A 50 × 200 layer has λ = ¼, s = σ_w², right edge σ_w²(1 + ½)²; its transpose (200 × 50) the same λ and
    s = 4σ_w² (its 50 squared singular values are those of a 50 × 200 matrix of entry variance 4σ_w²/200):

    >>> print(layer_law(50, 200), layer_law(200, 50, sigma_w=0.5).edges[1])
    MarchenkoPastur(ratio=0.25, scale=1) 2.25
    """
    n_out, n_in = integer_at_least("n_out", n_out), integer_at_least("n_in", n_in)
    sigma_w = real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
    lo, hi = min(n_out, n_in), max(n_out, n_in)
    scale = sigma_w * sigma_w * hi / n_in
    if not (scale >= 1e-300 and math.isfinite(4 * scale)):
        raise ValueError(f"sigma_w = {sigma_w!r} gives a law of scale {scale!r}, outside float64; give a σ_w nearer 1")
    return MarchenkoPastur(lo / hi, scale=scale)


def dkw_bound(n, confidence=0.99):
    """√(log(2/α)/(2n)), α = 1 − confidence: n iid draws from a law are farther than this from it in KS distance
    with probability ≤ α (Dvoretzky–Kiefer–Wolfowitz with Massart's constant, Ann. Probab. 18, 1990).

    Parameters
    ----------
    n : int
        The number of draws.
    confidence : float, default 0.99
        1 − α ∈ (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> print(f"{dkw_bound(100, 0.99):.5f}")                 # √(log 200/200)
    0.16276
    """
    n = integer_at_least("n", n)
    alpha = 1.0 - real_scalar("confidence", confidence, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return math.sqrt(math.log(2.0 / alpha) / (2.0 * n))


def tracy_widom_margin(n_min, n_max, scale=1.0, quantile=TW1_99):
    """s(μ + q·σ)/m: where the largest of the n_min squared singular values of an n_max × n_min (or n_min × n_max)
    matrix of iid entries with MP(n_min/n_max, s) law stays with probability ≈ TW₁(q) — Johnstone's centring
    μ = (√(m−1) + √n)² and scaling σ = (√(m−1) + √n)(1/√(m−1) + 1/√n)^{1/3} (Johnstone, Ann. Statist. 29, 2001),
    n = n_min, m = n_max (m − 1 floored at 1).

    Parameters
    ----------
    n_min, n_max : int
        The shorter and the longer side (n_min ≤ n_max).
    scale : float, default 1.0
        s > 0, the law's scale (its mean).
    quantile : float, default TW1_99
        q, a quantile of TW₁ (2.0234: 99 %).

    Returns
    -------
    float
        Above the law's right edge s(1 + √λ)² by O(m^{−2/3}).

    Examples
    --------
    A 400 × 200 white matrix (λ = ½, s = 1, edge (1 + √½)² ≈ 2.914): the 99 % margin sits ≈ 3 % above the edge:

    >>> print(f"{tracy_widom_margin(200, 400):.4f}")
    2.9953
    """
    n, m = integer_at_least("n_min", n_min), integer_at_least("n_max", n_max)
    if n > m:
        raise ValueError(f"n_min must be ≤ n_max, got n_min = {n}, n_max = {m}")
    s = real_scalar("scale", scale, lo=0.0, lo_open=True)
    q = real_scalar("quantile", quantile)
    m1 = max(m - 1, 1)
    root = math.sqrt(m1) + math.sqrt(n)
    margin = s * (root ** 2 + q * root * (1 / math.sqrt(m1) + 1 / math.sqrt(n)) ** (1 / 3)) / m
    if not math.isfinite(margin):
        raise OverflowError(f"scale = {s!r} puts the Tracy–Widom margin s(√n_max + √n_min)²/n_max beyond float64")
    return margin


def _ratio_scale(ratio, scale):
    return (real_scalar("ratio", ratio, lo=0.0, hi=1.0, lo_open=True),
            real_scalar("scale", scale, lo=0.0, lo_open=True))


def spike_threshold(ratio, scale=1.0):
    """θ_c = √s·λ^{1/4}: a rank-one θuvᵀ added to a matrix whose squared singular values follow MP(λ, s) (λ ≤ 1) moves
    the top singular value out of the bulk iff θ > θ_c (Benaych-Georges & Nadakuditi, J. Multivariate Anal. 111,
    2012; the BBP transition of Baik, Ben Arous & Péché, Ann. Probab. 33, 2005).

    Parameters
    ----------
    ratio : float
        λ ∈ (0, 1].
    scale : float, default 1.0
        s > 0.

    Returns
    -------
    float

    Examples
    --------
    >>> print(f"{spike_threshold(1.0):.6f} {spike_threshold(1 / 16, scale=4.0):.6f}")   # 1 and 2·½
    1.000000 1.000000
    """
    lam, s = _ratio_scale(ratio, scale)
    return math.sqrt(s) * lam ** 0.25


def spike_strength(eig, ratio, scale=1.0):
    """θ̂, the spike whose squared singular value sits at ``eig``: the inverse of e = s(1 + t²)(λ + t²)/t², t = θ/√s
    (Benaych-Georges & Nadakuditi 2012), the larger root of u² + (1 + λ − e/s)u + λ = 0 in u = t².

    Parameters
    ----------
    eig : float or array_like
        Squared singular values at or above the right edge s(1 + √λ)².
    ratio : float
        λ ∈ (0, 1].
    scale : float, default 1.0
        s > 0.

    Returns
    -------
    numpy.ndarray
        θ̂ (≥ θ_c, equal to it at the edge), the shape of ``eig``.

    Examples
    --------
    λ = 1, s = 1: a spike θ = 2 puts its squared singular value at (1 + 4)²/4 = 6.25, and the inverse gives 2 back:

    >>> print(spike_strength(6.25, 1.0))
    2.0
    """
    lam, s = _ratio_scale(ratio, scale)
    y = finite_array("eig", eig) / s
    if np.any(y < (1 + math.sqrt(lam)) ** 2 * (1 - 1e-12)):
        raise ValueError(f"eig must be at or above the right edge s(1 + √λ)² = {s * (1 + math.sqrt(lam)) ** 2!r}")
    b = y - 1 - lam                                          # ≥ 2√λ > 0 at and above the edge
    with np.errstate(over="ignore"):
        u = b * (1 + np.sqrt(np.maximum(1 - 4 * lam / b / b, 0.0))) / 2
    if not np.all(np.isfinite(u)):
        raise OverflowError(f"eig = {np.asarray(eig)[~np.isfinite(u)][:2].tolist()} over the scale s = {s!r} leaves "
                            f"float64 in θ̂² = s·(y − 1 − λ)(1 + √(1 − 4λ/(y − 1 − λ)²))/2")
    return np.sqrt(s) * np.sqrt(u)


def spike_strength_in(eig, bulk, ratio):
    """θ̂ against any bulk law: the spike θuvᵀ (u, v generic, e.g. uniformly random) whose squared singular value sits
    at ``eig`` on top of a noise matrix whose squared singular values are ``bulk`` — the root of D(√eig) = θ^{−2},
    D(z) = φ(z)(λφ(z) + (1 − λ)/z), φ(z) = mean of z/(z² − t) over the bulk's values t (the D-transform of
    Benaych-Georges & Nadakuditi, J. Multivariate Anal. 111, 2012, Theorem 2.8). For MP(λ, s) it is
    :func:`spike_strength`; here the bulk is a sample of the noise law (e.g. the pooled Monte Carlo draws of a
    masked layer at initialisation).

    Parameters
    ----------
    eig : float or array_like
        Squared singular values above every value of ``bulk``.
    bulk : array_like
        Squared singular values of the noise (its min(n_out, n_in) per draw, pooled), non-negative.
    ratio : float
        λ = min/max of the sides ∈ (0, 1].

    Returns
    -------
    numpy.ndarray
        θ̂ > 0, the shape of ``eig``.

    Examples
    --------
    Against the quantiles of MP(1) (a 4000-point bulk), the outlier at 6.25 is the θ = 2 spike, as in
    :func:`spike_strength`:

    >>> bulk = MarchenkoPastur(1.0).quantile((np.arange(4000) + 0.5) / 4000)
    >>> print(f"{float(spike_strength_in(6.25, bulk, 1.0)):.3f}")
    2.000
    """
    y = finite_array("eig", eig)
    t = finite_array("bulk", bulk).ravel()
    if t.size == 0 or np.any(t < 0):
        raise ValueError("bulk must be a non-empty array of non-negative values (squared singular values)")
    lam = real_scalar("ratio", ratio, lo=0.0, hi=1.0, lo_open=True)
    if np.any(y <= t.max()):
        raise ValueError(f"eig must lie above the bulk's largest value {t.max()!r} (an outlier), got min {y.min()!r}")
    z = np.sqrt(y)[..., None]
    phi = np.mean(z / (z * z - t), axis=-1)
    d = phi * (lam * phi + (1 - lam) / z[..., 0])
    return 1.0 / np.sqrt(d)


def mp_bulk_scale(eigs, ratio, iterations=200):
    """The scale s of MP(λ, s) fitted to a bulk with outliers: the fixed point of s = mean{x ≤ s(1 + √λ)²} (MP(λ, s)
    has mean s and no mass past its edge), from the mean of all values — the fit weightwatcher makes (Martin &
    Mahoney, JMLR 22, 2021, arXiv 1810.01075), robust to a few spikes.

    Parameters
    ----------
    eigs : array_like
        Non-negative, finite values, not all zero.
    ratio : float
        λ ∈ (0, 1].
    iterations : int, default 200
        The most fixed-point steps.

    Returns
    -------
    float

    Examples
    --------
    The midpoint quantiles of MP(¼, 2) and one far outlier: the scale comes back as 2, where the plain mean is 2.5:

    >>> x = np.r_[MarchenkoPastur(0.25, scale=2.0).quantile((np.arange(99) + 0.5) / 99), 51.8]
    >>> print(f"{mp_bulk_scale(x, 0.25):.2f} {x.mean():.2f}")
    2.00 2.50
    """
    x = finite_array("eigs", eigs).ravel()
    if x.size == 0 or np.any(x < 0):
        raise ValueError("eigs must be a non-empty array of non-negative values (squared singular values)")
    lam = real_scalar("ratio", ratio, lo=0.0, hi=1.0, lo_open=True)
    iterations = integer_at_least("iterations", iterations)
    s, edge = float(np.mean(x)), (1 + math.sqrt(lam)) ** 2
    for _ in range(iterations):
        kept = x[x <= s * edge]
        new = float(np.mean(kept)) if kept.size else s
        if new == s:
            break
        s = new
    if not s > 0:
        raise ValueError("eigs are all zero: no scale can be fitted")
    return s


def power_law_fit(x, min_tail=10, x_min=None):
    """The continuous power-law fit of Clauset, Shalizi & Newman (SIAM Review 51, 2009, 661–703): for each
    candidate x_min (each distinct value with at least ``min_tail`` values ≥ it) the MLE α̂ = 1 + n_tail/Σ
    log(x_i/x_min) over the tail x_i ≥ x_min (density ∝ x^{−α}), and the x_min whose tail is closest to its
    fitted law 1 − (x/x_min)^{1−α̂} in KS distance.

    Parameters
    ----------
    x : array_like
        Positive, finite values (at least ``min_tail``).
    min_tail : int, default 10
        The fewest values a tail may hold (≥ 2).
    x_min : float, optional
        Fix x_min instead of choosing it.

    Returns
    -------
    dict
        ``alpha``, ``alpha_se`` = (α̂ − 1)/√n_tail, ``x_min``, ``n_tail``, ``ks`` (of the chosen tail).

    Examples
    --------
    The quantiles of a Pareto law with α = 3 (x_min = 1), (1 − u)^{−1/2}, recover α:

    >>> u = (np.arange(4000) + 0.5) / 4000
    >>> fit = power_law_fit((1 - u) ** -0.5)
    >>> print(f"{fit['alpha']:.2f}", fit["x_min"] < 1.1)
    3.00 True
    """
    xs = np.sort(finite_array("x", x).ravel())
    min_tail = integer_at_least("min_tail", min_tail, 2)
    if xs.size < min_tail:
        raise ValueError(f"x must hold at least min_tail = {min_tail} values, got {xs.size}")
    if not xs[0] > 0:
        raise ValueError(f"x must be positive (a power law lives on (0, ∞)), got min {xs[0]!r}")
    logs = np.log(xs)
    suffix = np.cumsum(logs[::-1])[::-1]                         # Σ_{j ≥ i} log x_j
    if x_min is not None:
        x_min = real_scalar("x_min", x_min, lo=0.0, lo_open=True)
        start = int(np.searchsorted(xs, x_min, side="left"))
        if xs.size - start < 2:
            raise ValueError(f"x_min = {x_min!r} leaves fewer than 2 values in the tail")
        return _tail_fit(xs, logs, suffix, start, x_min)
    best = None
    starts = np.flatnonzero(np.r_[True, xs[1:] > xs[:-1]])
    for i in starts[starts <= xs.size - min_tail]:
        fit = _tail_fit(xs, logs, suffix, int(i), float(xs[i]))
        if np.isfinite(fit["alpha"]) and (best is None or fit["ks"] < best["ks"]):
            best = fit
    if best is None:
        raise ValueError("x has no tail of min_tail values that are not all equal")
    return best


def _tail_fit(xs, logs, suffix, i, x_min):
    n_t = xs.size - i
    spread = suffix[i] - n_t * math.log(x_min)
    if not spread > 0:
        return dict(alpha=np.nan, alpha_se=np.nan, x_min=x_min, n_tail=n_t, ks=np.inf)
    alpha = 1.0 + n_t / spread
    F = 1.0 - (xs[i:] / x_min) ** (1.0 - alpha)
    k = np.arange(n_t)
    ks = float(max(np.max(np.abs((k + 1) / n_t - F)), np.max(np.abs(k / n_t - F))))
    return dict(alpha=alpha, alpha_se=(alpha - 1.0) / math.sqrt(n_t), x_min=x_min, n_tail=n_t, ks=ks)
