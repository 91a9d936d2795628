"""Effect sizes and p-values for the studies' outcomes: the numbers a claim of "reproduced" or "not reproduced" rests on.

- :func:`difference` — mean(a) − mean(b) with its standard error, t, degrees of freedom and two-sided p: Welch's
  unequal-variance t-test for independent samples (Welch 1947, Biometrika 34), or the paired t-test on per-seed
  differences (``paired=True``);
- :func:`rank_correlation` — Spearman's ρ with its two-sided p (SciPy's t-approximation);
- :func:`linear_model` — ordinary least squares with an intercept: each coefficient with its standard error, t and
  two-sided p (Student t on n − k − 1 degrees of freedom), and R². Used to ask which of two correlated variables
  (e.g. the channel count C and the width m = S·C) a test error follows.

All three refuse NaN/inf and samples too small for a standard error, naming the argument.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from rmtnet._validation import finite_array

__all__ = ["difference", "rank_correlation", "linear_model"]


def _sample(name, values, at_least):
    x = finite_array(name, values).ravel().astype(float)
    if len(x) < at_least:
        raise ValueError(f"{name} must have at least {at_least} values, got {len(x)}")
    return x


def difference(a, b, paired: bool = False) -> dict:
    """mean(a) − mean(b) with its standard error and a two-sided t-test.

    ``paired=False``: Welch's test, se = √(s_a²/n_a + s_b²/n_b), degrees of freedom by the Welch–Satterthwaite
    formula. ``paired=True``: a and b are matched (e.g. by seed), the test is on d = a − b, se = s_d/√n, n − 1
    degrees of freedom. When both samples are constant and equal, t = 0 and p = 1; constant and different, p = 0
    (an exact difference).

    Parameters
    ----------
    a, b : array_like
        The two samples, finite, at least 2 values each (of equal length when ``paired``).
    paired : bool, default False
        Whether a[i] and b[i] belong together (the same seed).

    Returns
    -------
    dict
        ``diff``, ``se``, ``t``, ``dof``, ``p`` (two-sided), ``n_a``, ``n_b``.

    Examples
    --------
    >>> r = difference([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    >>> round(r["diff"], 6), round(r["t"], 4), round(r["dof"], 6), round(r["p"], 4)
    (-3.0, -3.6742, 4.0, 0.0213)
    """
    a, b = _sample("a", a, 2), _sample("b", b, 2)
    if paired:
        if len(a) != len(b):
            raise ValueError(f"a and b must have the same length when paired, got {len(a)} and {len(b)}")
        d = a - b
        se, dof = float(np.std(d, ddof=1) / math.sqrt(len(d))), float(len(d) - 1)
    else:
        va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
        se = float(math.sqrt(va + vb))
        dof = float((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))) if se > 0 else math.inf
    diff = float(a.mean() - b.mean())
    if se == 0:
        t, p = (0.0, 1.0) if diff == 0 else (math.copysign(math.inf, diff), 0.0)
    else:
        t = diff / se
        p = float(2 * stats.t.sf(abs(t), dof))
    return dict(diff=diff, se=se, t=float(t), dof=dof, p=p, n_a=len(a), n_b=len(b))


def rank_correlation(x, y) -> dict:
    """Spearman's ρ between ``x`` and ``y`` (ties get average ranks) and its two-sided p.

    Parameters
    ----------
    x, y : array_like
        Paired finite values, at least 3, each with at least two distinct values.

    Returns
    -------
    dict
        ``rho``, ``p`` (two-sided) and ``n`` (the number of pairs).

    Examples
    --------
    >>> r = rank_correlation([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    >>> round(r["rho"], 4), r["n"]
    (0.8208, 5)
    """
    x, y = _sample("x", x, 3), _sample("y", y, 3)
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("x and y must each take at least two distinct values (a rank correlation needs them)")
    rho, p = stats.spearmanr(x, y)
    return dict(rho=float(rho), p=float(p), n=len(x))


def linear_model(y, predictors: dict) -> pd.DataFrame:
    """Ordinary least squares y ≈ b₀ + Σ_j b_j x_j, one row per coefficient (``"intercept"`` first, then the keys of
    ``predictors``, a mapping of name → values) with columns ``coef``, ``se``, ``t``, ``p``; ``attrs`` holds ``r2``,
    ``n`` and ``dof`` (n − k − 1). The standard errors are the usual σ̂²(XᵀX)⁻¹ with σ̂² = RSS/(n − k − 1).
    Refuses collinear predictors (rank-deficient design), naming them.

    Parameters
    ----------
    y : array_like
        The response, finite, more values than coefficients.
    predictors : dict
        Name → values (one per y), not collinear.

    Returns
    -------
    pandas.DataFrame
        Indexed by coefficient name, columns ``coef``, ``se``, ``t``, ``p``; ``attrs`` ``r2``, ``n``, ``dof``.

    Examples
    --------
    >>> x = np.arange(6.0)
    >>> fit = linear_model(1.0 + 2.0 * x + np.array([0.1, -0.1, 0.1, -0.1, 0.1, -0.1]), {"x": x})
    >>> round(float(fit.loc["x", "coef"]), 4), round(fit.attrs["r2"], 4)
    (1.9829, 0.9992)
    """
    y = _sample("y", y, 3)
    if not predictors:
        raise ValueError("predictors must name at least one variable")
    names = list(predictors)
    cols = [_sample(f"predictors[{n!r}]", predictors[n], 3) for n in names]
    for n, c in zip(names, cols):
        if len(c) != len(y):
            raise ValueError(f"predictors[{n!r}] must have one value per y ({len(y)}), got {len(c)}")
    X = np.column_stack([np.ones(len(y)), *cols])
    dof = len(y) - X.shape[1]
    if dof < 1:
        raise ValueError(f"y must have more values ({len(y)}) than coefficients ({X.shape[1]})")
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise ValueError(f"predictors {names} are collinear (with each other or the intercept): the coefficients "
                         "are not identified")
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    sigma2 = float(resid @ resid) / dof
    se = np.sqrt(np.diag(sigma2 * np.linalg.inv(X.T @ X)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, coef / se, np.sign(coef) * np.inf)
    p = 2 * stats.t.sf(np.abs(t), dof)
    out = pd.DataFrame({"coef": coef, "se": se, "t": t, "p": p}, index=["intercept", *names])
    spread = float(((y - y.mean()) ** 2).sum())
    out.attrs.update(r2=1.0 - float(resid @ resid) / spread if spread > 0 else 1.0, n=len(y), dof=dof)
    return out
