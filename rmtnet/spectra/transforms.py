"""The transforms of a measure and their numerical inverses. Conventions (M as in Pennington, Schoenholz & Ganguli,
AISTATS 2018):

G(z) = ∫ dμ(x)/(z - x)   M(z) = zG(z) - 1   ψ(u) = M(1/u)   η(u) = ψ(u)/(1 + ψ(u))
S(w) = (1 + w)/(w M⁻¹(w))      (needs m₁ ≠ 0)

All functions are vectorised over arrays of their argument. The inverses are *branch-safe*: each target value
v is reached by continuation along the ray s·v, s from ~0 up to 1, starting on the branch that is unambiguous
near 0 (M⁻¹(w) ≈ m₁/w, G⁻¹(g) ≈ 1/g + m₁ — the branch continued from |z| → ∞), with Newton polishing at every
step. A failure raises :class:`ConvergenceError` with the point, the iteration and the residual.
"""
from __future__ import annotations

import numpy as np

from rmtnet._validation import ConvergenceError, finite_array

__all__ = ["cauchy", "m_transform", "psi", "eta", "s_transform", "cauchy_inverse", "m_inverse", "psi_inverse",
           "eta_inverse"]


def cauchy(mu, z):
    """The Cauchy transform G_μ(z) = ∫ dμ(x)/(z − x) (Im G < 0 for Im z > 0).

    Parameters
    ----------
    mu : Measure
        The law μ.
    z : complex or array_like
        Points off the support of μ.

    Returns
    -------
    complex ndarray
        G_μ(z), the shape of ``z``.

    Examples
    --------
    The semicircle law of variance 1 has G(z) = (z − √(z² − 4))/2:

    >>> import numpy as np
    >>> from rmtnet.spectra import Semicircle
    >>> print(f"{cauchy(Semicircle(), 3.0).real:.12f}", f"{(3 - np.sqrt(5)) / 2:.12f}")
    0.381966011250 0.381966011250
    """
    return mu.cauchy(z)


def m_transform(mu, z):
    """The moment function M_μ(z) = zG_μ(z) − 1 = Σ_{k≥1} m_k z^{−k} (Pennington, Schoenholz & Ganguli,
    AISTATS 2018).

    Parameters
    ----------
    mu : Measure
        The law μ.
    z : complex or array_like
        Points off the support of μ.

    Returns
    -------
    complex ndarray
        M_μ(z), the shape of ``z``.

    Examples
    --------
    >>> from rmtnet.spectra import Semicircle
    >>> print(f"{m_transform(Semicircle(), 3.0).real:.12f}")     # 3·(3 − √5)/2 − 1
    0.145898033750
    """
    return mu.m_transform(z)


def psi(mu, u):
    """The moment generating function ψ_μ(u) = M_μ(1/u) = Σ_{k≥1} m_k u^k.

    Parameters
    ----------
    mu : Measure
        The law μ.
    u : complex or array_like
        Points with 1/u off the support of μ.

    Returns
    -------
    complex ndarray
        ψ_μ(u), the shape of ``u``.

    Examples
    --------
    Marchenko–Pastur of ratio 1/2 against its Narayana moments m_k = Σ_j N(k, j) λ^{j−1}, summed to 60 terms:

    >>> from math import comb
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> m = [sum(comb(k, j) * comb(k, j - 1) / k * 0.5 ** (j - 1) for j in range(1, k + 1)) for k in range(1, 61)]
    >>> print(f"{psi(MarchenkoPastur(0.5), 0.1).real:.12f}", f"{sum(mk * 0.1 ** k for k, mk in enumerate(m, 1)):.12f}")
    0.118472692880 0.118472692880
    """
    return mu.psi(u)


def eta(mu, u):
    """η_μ(u) = ψ_μ(u)/(1 + ψ_μ(u)).

    Parameters
    ----------
    mu : Measure
        The law μ.
    u : complex or array_like
        Points with 1/u off the support of μ.

    Returns
    -------
    complex ndarray
        η_μ(u), the shape of ``u``.

    Examples
    --------
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> mp = MarchenkoPastur(0.5)
    >>> p = psi(mp, 0.1)
    >>> print(f"{eta(mp, 0.1).real:.12f}", f"{(p / (1 + p)).real:.12f}")
    0.105923634644 0.105923634644
    """
    return mu.eta(u)


def _invert(fn, target, start, name, max_iter=400, tol=1e-14, arg="w"):
    """Solve fn(ω) = target (vectorised) by continuation along s·target with Newton. fn returns (F, F'). A target
    the continuation does not reach raises ConvergenceError naming ``arg`` (the target may lie outside the
    transform's range on this branch)."""
    target = np.asarray(target, dtype=complex)
    flat = target.ravel()
    s = np.full(flat.shape, 1e-6)
    step = np.full(flat.shape, 10.0)
    om = start(s * flat)
    iters = np.zeros(flat.shape, int)

    def newton(w, tgt, n):
        conv = np.zeros(w.shape, bool)
        res = np.full(w.shape, np.inf)
        for _ in range(n):
            F, dF = fn(w)
            with np.errstate(all="ignore"):
                d = (F - tgt) / dF
            res = np.abs(F - tgt) / np.maximum(np.abs(tgt), 1e-300)
            ok = np.isfinite(d)
            w = np.where(ok, w - d, w)
            # converged: a step below tol, or a residual at the rounding floor of the transform
            conv = ok & ((np.abs(d) <= tol * np.maximum(np.abs(w), 1e-300)) | (res <= 1e-13))
            if conv.all():
                break
        return w, conv, res

    om, conv, res = newton(om, s * flat, 60)
    if not conv.all():
        k = int(np.argmin(conv))
        raise ConvergenceError(f"{name}: Newton failed at the start of the continuation to {arg} = "
                               f"{complex(flat[k])!r}", z=complex(flat[k]), iteration=60,
                               residual=float(res[k]))
    while np.any(s < 1):
        act = np.nonzero(s < 1)[0]
        snew = np.minimum(s[act] * step[act], 1.0)
        # Euler predictor in log coordinates (exact in the far field, where F ∝ 1/ω)
        _, dF = fn(om[act])
        with np.errstate(all="ignore"):
            pred = om[act] * np.exp((snew - s[act]) * flat[act] / (dF * om[act]))
        pred = np.where(np.isfinite(pred), pred, om[act])
        w, conv, res = newton(pred, snew * flat[act], 8)
        iters[act] += 8
        jump = np.abs(w - om[act]) <= 2.0 * np.abs(om[act])
        good = conv & jump
        om[act[good]] = w[good]
        s[act[good]] = snew[good]
        step[act[good]] = np.minimum(step[act[good]] * 2, 10.0)
        step[act[~good]] = np.sqrt(step[act[~good]])
        bad = (s < 1) & ((step < 1 + 1e-9) | (iters > max_iter))
        if bad.any():
            k = int(np.nonzero(bad)[0][0])
            raise ConvergenceError(f"{name}: the continuation to {arg} = {complex(flat[k])!r} stalled at s = "
                                   f"{s[k]:.3g} ({arg} may lie outside the range of the transform on the branch "
                                   f"continued from 0)", z=complex(flat[k]),
                                   iteration=int(iters[k]), residual=float(np.max(res)))
    return om.reshape(target.shape)


_NEAR_ZERO = 1e-6       # |w| (or |g|) below this: the inverse from its expansion at 0, not by continuation


def _near_zero(name, v, series, solve):
    """``solve`` on the points with |v| ≥ :data:`_NEAR_ZERO`, ``series`` on the others (where the continuation
    would start at heights ~1/|v| and stall); v = 0 is the inverse's pole (z = ∞) and raises ValueError."""
    if np.any(v == 0):
        raise ValueError(f"{name} = 0 is a pole of the inverse (z = ∞); give {name} ≠ 0")
    small = np.abs(v) < _NEAR_ZERO
    if not small.any():
        return solve(v)
    out = np.asarray(series(v), dtype=complex)
    if (~small).any():
        out[~small] = solve(v[~small])
    return out


def m_inverse(mu, w):
    """M_μ⁻¹(w): the z with M_μ(z) = w on the branch z ≈ m₁/w as w → 0.

    For |w| < 1e-6 the expansion z = m₁/w + m₂/m₁ + (m₃m₁ − m₂²)/m₁³·w (relative error O(w³)); elsewhere the
    branch-safe continuation of the module docstring.

    Parameters
    ----------
    mu : Measure
        The law μ; its mean m₁ must be non-zero.
    w : complex or array_like
        Targets, non-zero.

    Returns
    -------
    complex ndarray
        z with M_μ(z) = w, the shape of ``w``.

    Raises
    ------
    ValueError
        For w = 0 (z = ∞) or m₁ = 0.
    ConvergenceError
        Where the continuation does not reach w.

    Examples
    --------
    Marchenko–Pastur of ratio λ has S(w) = 1/(1 + λw), so M⁻¹(w) = (1 + w)(1 + λw)/w = 5.625 at λ = 1/2, w = 1/4:

    >>> from rmtnet.spectra import MarchenkoPastur
    >>> mp = MarchenkoPastur(0.5)
    >>> z = m_inverse(mp, 0.25)
    >>> print(f"{z.real:.10f}", f"{m_transform(mp, z).real:.10f}")
    5.6250000000 0.2500000000
    """
    w = finite_array("w", w, dtype=complex)
    m1, m2 = mu.moment(1), mu.moment(2)
    if m1 == 0:
        raise ValueError("M⁻¹ near 0 needs a measure with non-zero mean (m₁ ≠ 0)")
    m3 = mu.moment(3)
    with np.errstate(over="ignore", invalid="ignore"):
        z = _near_zero("w", w, lambda v: m1 / v + m2 / m1 + (m3 * m1 - m2 ** 2) / m1 ** 3 * v,
                       lambda v: _invert(lambda z: _mt_any(mu, z), v, lambda u: m1 / u + m2 / m1, "m_inverse"))
    if not np.all(np.isfinite(z)):
        raise OverflowError(f"w = {w[~np.isfinite(z)][:2].tolist()} is so close to 0 that M⁻¹(w) ≈ m₁/w leaves "
                            f"float64")
    return z


def _mt_any(mu, z):
    lower = z.imag < 0
    zu = z.real + 1j * np.abs(z.imag)
    F, _, dF = mu._mt(zu)
    F, dF = np.broadcast_to(F, zu.shape), np.broadcast_to(dF, zu.shape)
    return np.where(lower, np.conj(F), F), np.where(lower, np.conj(dF), dF)


def _g_any(mu, z):
    lower = z.imag < 0
    zu = z.real + 1j * np.abs(z.imag)
    F, dF = mu._g(zu)
    F, dF = np.broadcast_to(F, zu.shape), np.broadcast_to(dF, zu.shape)
    return np.where(lower, np.conj(F), F), np.where(lower, np.conj(dF), dF)


def cauchy_inverse(mu, g):
    """G_μ⁻¹(g): the z with G_μ(z) = g on the branch z ≈ 1/g + m₁ as g → 0 (for |g| < 1e-6 the expansion
    1/g + m₁ + (m₂ − m₁²)g).

    Parameters
    ----------
    mu : Measure
        The law μ.
    g : complex or array_like
        Targets, non-zero (g = 0 raises ValueError).

    Returns
    -------
    complex ndarray
        z with G_μ(z) = g, the shape of ``g``.

    Examples
    --------
    The semicircle's G⁻¹(g) = g + 1/g (its R-transform is R(g) = g):

    >>> from rmtnet.spectra import Semicircle
    >>> g = 0.4
    >>> print(f"{cauchy_inverse(Semicircle(), g).real:.10f}", f"{g + 1 / g:.10f}")
    2.9000000000 2.9000000000
    """
    g = finite_array("g", g, dtype=complex)
    m1, m2 = mu.moment(1), mu.moment(2)
    return _near_zero("g", g, lambda v: 1.0 / v + m1 + (m2 - m1 ** 2) * v,
                      lambda v: _invert(lambda z: _g_any(mu, z), v, lambda u: 1.0 / u + m1, "cauchy_inverse",
                                                        arg="g"))


def psi_inverse(mu, p):
    """ψ_μ⁻¹(p) = 1/M_μ⁻¹(p) (χ = ψ⁻¹, so that S(w) = χ(w)(1 + w)/w).

    Parameters
    ----------
    mu : Measure
        The law μ, with non-zero mean.
    p : complex or array_like
        Targets, non-zero.

    Returns
    -------
    complex ndarray
        u with ψ_μ(u) = p.

    Examples
    --------
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> print(f"{psi_inverse(MarchenkoPastur(0.5), 0.25).real:.10f}", f"{1 / 5.625:.10f}")
    0.1777777778 0.1777777778
    """
    return 1.0 / m_inverse(mu, p)


def eta_inverse(mu, e):
    """η_μ⁻¹(e) = ψ_μ⁻¹(e/(1 − e)).

    Parameters
    ----------
    mu : Measure
        The law μ, with non-zero mean.
    e : complex or array_like
        Targets, non-zero and ≠ 1.

    Returns
    -------
    complex ndarray
        u with η_μ(u) = e.

    Examples
    --------
    η = 0.2 is ψ = 0.25, so this is the ψ⁻¹(0.25) = 1/5.625 of Marchenko–Pastur of ratio 1/2:

    >>> from rmtnet.spectra import MarchenkoPastur
    >>> print(f"{eta_inverse(MarchenkoPastur(0.5), 0.2).real:.10f}")
    0.1777777778
    """
    e = finite_array("e", e, dtype=complex)
    return psi_inverse(mu, e / (1.0 - e))


def s_transform(mu, w):
    """The S-transform S_μ(w) = (1 + w)/(w M_μ⁻¹(w)), on the branch continued from w → 0 (S(0) = 1/m₁), so that
    S_{μ⊠ν} = S_μ S_ν (Voiculescu, J. Operator Theory 1987).

    Parameters
    ----------
    mu : Measure
        The law μ, with non-zero mean.
    w : complex or array_like
        Points (|w| < 1e-8 uses the expansion 1/m₁ − (m₂ − m₁²)/m₁³·w).

    Returns
    -------
    complex ndarray
        S_μ(w), the shape of ``w``.

    Examples
    --------
    Marchenko–Pastur of ratio λ: S(w) = 1/(1 + λw).

    >>> import numpy as np
    >>> from rmtnet.spectra import MarchenkoPastur
    >>> w = np.array([0.0, 0.25, 0.5])
    >>> print(np.round(s_transform(MarchenkoPastur(0.5), w).real, 10), np.round(1 / (1 + 0.5 * w), 10))
    [1.         0.88888889 0.8       ] [1.         0.88888889 0.8       ]
    """
    w = finite_array("w", w, dtype=complex)
    small = np.abs(w) < 1e-8
    wsafe = np.where(small, 1e-8, w)
    s = (1 + wsafe) / (wsafe * m_inverse(mu, wsafe))
    if small.any():
        m1, m2 = mu.moment(1), mu.moment(2)
        # S(w) = 1/m₁ - (m₂ - m₁²)/m₁³ · w + O(w²)
        s = np.where(small, 1 / m1 - (m2 - m1 ** 2) / m1 ** 3 * w, s)
    return s
