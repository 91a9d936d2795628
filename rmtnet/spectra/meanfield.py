"""Mean-field signal propagation in deep random networks (Poole et al. 2016, Schoenholz et al. 2017,
Pennington, Schoenholz & Ganguli 2017/2018).

Convention: h_ℓ = W_ℓ φ(h_{ℓ-1}) + b_ℓ with W_ℓ entries of variance σ_w²/N and b_ℓ of variance σ_b². The
pre-activation variance obeys

    q_ℓ = σ_w² E[φ(√q_{ℓ-1} ξ)²] + σ_b²,   ξ ~ N(0, 1),                                  (length map)

with fixed point q*; the slope of the Jacobian per layer is χ = σ_w² E[φ′(√q* ξ)²] and χ = 1 is criticality.
The law of D² = φ′(h)², h ~ N(0, q), enters the Jacobian spectrum; μ_k = E[φ′(h)^{2k}] are its moments.

Activations are the :class:`~rmtnet.spectra.activations.Activation` definitions of
:mod:`rmtnet.spectra.activations` (φ, φ′, kinks and optional closed forms; a name is looked up there). ``erf`` is
φ(h) = erf(√π h/2), normalised so that φ′(0) = 1 as in Pennington et al.; ``hard_tanh`` is clip(h, -1, 1).
Expectations use closed forms where they exist and composite Gauss–Legendre quadrature against the Gaussian
otherwise (:func:`gaussian_expectation`); a user activation needs only φ and φ′.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import optimize

from .._deprecation import moved_names
from . import activations as _activations
from rmtnet._validation import ConvergenceError, moment_order, real_scalar
from .activations import activation as _activation
from .measures import Measure, gaussian_pushforward

__all__ = ["gaussian_expectation", "second_moment", "length_map", "variance_profile", "q_star", "chi", "critical_sigma_w",
           "d2_law", "d2_moments"]


@lru_cache(maxsize=16)
def _gauss_legendre(n):
    """The n-point Gauss–Legendre rule on [−1, 1], computed once per n (the mean-field fixed points call
    :func:`gaussian_expectation` tens of thousands of times; the rule's eigenproblem was a fifth of their time)."""
    x, w = np.polynomial.legendre.leggauss(n)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def gaussian_expectation(f, q, breakpoints=(), width=10.0, panel=0.1, n_gauss=10, core=50.0):
    """E[f(h)], h ~ N(0, q), by composite Gauss–Legendre quadrature on [-width·√q, width·√q] (Gaussian mass
    outside < 2e-23): panels of at most ``panel`` in |h| ≤ ``core`` (where the activations' features live: tanh′'s
    poles at ±iπ/2, erf's Gaussian, hard_tanh's kinks at ±1), graded beyond it — each at most 5 % of |h| and a
    quarter of √q — and panel ends at ``breakpoints`` (kinks of f). The grading keeps a narrow feature resolved at
    any q: at σ_w = 10⁶ (q ≈ 10¹²) the sech⁴ peak of tanh′² is a millionth of √q wide, and uniform panels capped in
    number stepped over it (χ came out 9.9e-4 instead of 5.3e5).

    Chosen over Gauss–Hermite because activations such as tanh have poles near the real axis (tanh′ at ±iπ/2),
    where Hermite rules converge slowly once √q is large; panels resolve them at any q. A user activation whose φ
    or φ′ has features beyond |h| = ``core`` should raise ``core`` past them.

    Parameters
    ----------
    f : callable
        Vectorised function of h.
    q : float
        Variance of h (≥ 0; q = 0 gives f(0)).
    breakpoints : sequence of float
        Kinks or jumps of f, made panel ends.
    width, panel, n_gauss, core : float, float, int, float
        Range in standard deviations, panel length, Gauss–Legendre points per panel, and the uniform core (above).

    Returns
    -------
    float
        E[f(h)].

    Examples
    --------
    E[h²] = q, and E[relu(h)²] = q/2 (half the mass of h², by symmetry).

    >>> print(f"{gaussian_expectation(lambda h: h ** 2, 2.0):.10f}")
    2.0000000000
    >>> print(f"{gaussian_expectation(lambda h: np.maximum(h, 0.0) ** 2, 3.0, breakpoints=(0.0,)):.10f}")
    1.5000000000
    """
    q = real_scalar("q", q, lo=0.0)
    if q == 0:
        return float(np.asarray(f(np.zeros(1)), dtype=float)[0])
    H = width * np.sqrt(q)
    R = min(H, core)
    inner = np.linspace(-R, R, int(max(np.ceil(2 * R / panel), 16)) + 1)
    outer = []
    h = R
    while h < H:
        h = min(H, h + max(panel, min(0.05 * h, 0.25 * np.sqrt(q))))
        outer.append(h)
    outer = np.array(outer)
    edges = np.union1d(np.concatenate([-outer[::-1], inner, outer]), [b for b in breakpoints if -H < b < H])
    x, w = _gauss_legendre(int(n_gauss))
    a, b = edges[:-1, None], edges[1:, None]
    h = (0.5 * (a + b) + 0.5 * (b - a) * x).ravel()
    wt = (0.5 * (b - a) * w).ravel() * np.exp(-h * h / (2 * q)) / np.sqrt(2 * np.pi * q)
    return float(np.sum(wt * np.asarray(f(h), dtype=float)))


def second_moment(act, q):
    """E[φ(h)²], h ~ N(0, q): closed form where known, else quadrature.

    Parameters
    ----------
    act : Activation
        An :class:`~rmtnet.spectra.activations.Activation` object (not a name).
    q : float
        Variance of h.

    Returns
    -------
    float
        E[φ(h)²].

    Examples
    --------
    E[relu(h)²] = q/2 by symmetry.

    >>> from rmtnet.spectra.activations import activation
    >>> print(f"{second_moment(activation('relu'), 3.0):.6f}")
    1.500000
    """
    if act.second_moment is not None:
        return float(act.second_moment(q))
    return gaussian_expectation(lambda h: act.phi(h) ** 2, q, act.breakpoints)


def d2_moments(act, q, k):
    """μ_k = E[φ′(h)^{2k}], h ~ N(0, q).

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    q : float
        Variance of h (≥ 0).
    k : int
        The order, a non-negative integer.

    Returns
    -------
    float
        μ_k.

    Examples
    --------
    ReLU′² is the indicator of h > 0, so every μ_k (k ≥ 1) is P(h > 0) = 1/2; linear gives 1.

    >>> print(d2_moments("relu", 1.0, 2), d2_moments("linear", 4.0, 3))
    0.5 1.0
    """
    act = _activation(act)
    q = real_scalar("q", q, lo=0.0)
    k = moment_order(k)
    if k == 0:                                          # E[(φ′²)⁰] = 1: the closed forms hold for k ≥ 1
        return 1.0
    if act.derivative_moment is not None and q > 0:
        return float(act.derivative_moment(q, int(k)))
    return gaussian_expectation(lambda h: act.dphi(h) ** (2 * int(k)), q, act.breakpoints)


SIGMA_MAX = 1e150      # σ_w, σ_b at most this: their squares, which every variance multiplies, stay in float64


def _sigma(name, value):
    """σ_w or σ_b as a float in [0, SIGMA_MAX], or ValueError naming it (σ² of a larger one overflows)."""
    return real_scalar(name, value, lo=0.0, hi=SIGMA_MAX)


def length_map(act, q, sigma_w, sigma_b=0.0):
    """q ↦ σ_w² E[φ(√q ξ)²] + σ_b² (one layer of the variance recursion).

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    q : float
        The pre-activation variance q_{ℓ−1} (≥ 0).
    sigma_w, sigma_b : float
        Weight and bias scales.

    Returns
    -------
    float
        q_ℓ.

    Examples
    --------
    ReLU: σ_w²·q/2 + σ_b², so 2·(1/2) = 1 at σ_w² = 2 (every q is fixed) and 1/2 + 1/4 = 0.75 at σ_w = 1, σ_b = 1/2.

    >>> print(f"{length_map('relu', 1.0, np.sqrt(2)):.6f} {length_map('relu', 1.0, 1.0, 0.5):.6f}")
    1.000000 0.750000
    """
    act = _activation(act)
    sigma_w = _sigma("sigma_w", sigma_w)
    sigma_b = _sigma("sigma_b", sigma_b)
    q = real_scalar("q", q, lo=0.0)
    return sigma_w ** 2 * second_moment(act, q) + sigma_b ** 2


def variance_profile(act, sigma_w, sigma_b, q0, depth):
    """Pre-activation variances (q_1, …, q_L) of a network fed an input with ‖x₀‖²/n₀ = q0:
    q_1 = σ_w² q0 + σ_b², q_{ℓ+1} = σ_w² E[φ(√q_ℓ ξ)²] + σ_b² (the length map).

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    sigma_w, sigma_b : float
        Weight and bias scales.
    q0 : float
        The input's ‖x₀‖²/n₀.
    depth : int
        L, the number of layers.

    Returns
    -------
    tuple of float
        (q_1, …, q_L).

    Examples
    --------
    Linear: q_ℓ = σ_w^{2ℓ} q0 = 4, 16, 64 at σ_w = 2; ReLU at σ_w² = 2: q_1 = 2 q0 = 2, then 2·(2/2) = 2 at every layer.

    >>> variance_profile("linear", 2.0, 0.0, 1.0, 3)
    (4.0, 16.0, 64.0)
    >>> np.round(variance_profile("relu", np.sqrt(2), 0.0, 1.0, 3), 10).tolist()
    [2.0, 2.0, 2.0]
    """
    act = _activation(act)
    q = [sigma_w ** 2 * real_scalar("q0", q0, lo=0.0) + sigma_b ** 2]
    for _ in range(int(depth) - 1):
        q.append(length_map(act, q[-1], sigma_w, sigma_b))
    if not np.all(np.isfinite(q)):
        raise ValueError(f"the mean-field variances overflow (q = {q}); lower sigma_w or q0")
    return tuple(float(v) for v in q)


def q_star(act, sigma_w, sigma_b=0.0, q0=1.0, noise=1e-13):
    """Fixed point q* of the length map reached from q0 by iterating it (the q_ℓ of a deep network started at q0).

    The map q ↦ σ_w² E[φ(√q ξ)²] + σ_b² is increasing, so the iteration moves monotonically to the nearest fixed
    point in the direction of g(q0) = map(q0) - q0. That fixed point is found directly: a geometric scan from q0 in
    that direction brackets the first sign change of g (trusted only where |g| exceeds ``noise``·q, the rounding of
    the quadrature) and Brent's method solves it — no slow iteration near criticality, where q_ℓ approaches q* like
    1/ℓ. Cases: |g(q0)| ≤ noise·q0 gives q* = q0 (a line of fixed points: linear at σ_w = 1, ReLU at σ_w² = 2 with
    σ_b = 0); moving down without a fixed point gives q* = 0 (σ_b = 0, φ(0) = 0: the ordered phase); moving up without
    one raises ValueError (q grows without bound).

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    sigma_w, sigma_b : float
        Weight and bias scales.
    q0 : float
        The starting variance (> 0).
    noise : float
        Relative size of |map(q) − q| below which its sign is not trusted.

    Returns
    -------
    float
        q*.

    Examples
    --------
    ReLU at σ_w = σ_b = 1: q = q/2 + 1 gives q* = 2; linear at σ_w = 1/2, σ_b = 1: q = q/4 + 1 gives q* = 4/3.

    >>> print(f"{q_star('relu', 1.0, 1.0):.10f} {q_star('linear', 0.5, 1.0):.10f}")
    2.0000000000 1.3333333333
    """
    act = _activation(act)
    q0 = real_scalar("q0", q0, lo=0.0, lo_open=True)
    g = lambda t: length_map(act, t, sigma_w, sigma_b) - t       # noqa: E731
    g0 = g(q0)
    if abs(g0) <= noise * q0:
        return q0
    down = g0 < 0
    prev_t, prev_g = q0, g0
    for k in range(1, 1400):
        t = q0 * (0.5 ** k if down else 2.0 ** k)
        if t < 1e-300 or t > 1e300:
            break
        gt = g(t)
        if abs(gt) <= noise * t:                          # below the rounding floor: no trusted sign beyond
            if down and length_map(act, 0.0, sigma_w, sigma_b) == 0.0:
                return 0.0
            return float(t)
        if np.sign(gt) != np.sign(prev_g):
            a, b = sorted((t, prev_t))
            # xtol is absolute: a fixed point near 1e-197 (σ_b ~ 1e-99) takes ~130 Brent steps, beyond the default 100
            return float(optimize.brentq(g, a, b, xtol=1e-300, rtol=1e-15, maxiter=2000))
        prev_t, prev_g = t, gt
    if down:
        return 0.0
    raise ValueError(f"the length map of {act.name} at sigma_w={sigma_w}, sigma_b={sigma_b} has no finite fixed point "
                     "above q0 (q grows without bound)")


def chi(act, sigma_w, sigma_b=0.0, q=None):
    """χ = σ_w² E[φ′(√q ξ)²] at q (default q*): the mean squared singular value of one layer's Jacobian.

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    sigma_w, sigma_b : float
        Weight and bias scales.
    q : float, optional
        The variance at which χ is taken; default q*(σ_w, σ_b).

    Returns
    -------
    float
        χ.

    Examples
    --------
    ReLU: χ = σ_w²/2 at every q (1 at σ_w = √2). erf at q = 1: E[exp(−πh²/2)] = 1/√(1 + π) ≈ 0.491379.

    >>> print(f"{chi('relu', np.sqrt(2)):.10f} {chi('erf', 1.0, q=1.0):.6f}")
    1.0000000000 0.491379
    """
    act = _activation(act)
    sigma_w = _sigma("sigma_w", sigma_w)
    sigma_b = _sigma("sigma_b", sigma_b)
    if act.homogeneous:                                 # E[φ′²] does not depend on q (linear, ReLU)
        return sigma_w ** 2 * d2_moments(act, 1.0, 1)
    q = q_star(act, sigma_w, sigma_b) if q is None else real_scalar("q", q, lo=0.0)
    return sigma_w ** 2 * d2_moments(act, q, 1)


def critical_sigma_w(act, sigma_b=0.0, bracket=(0.05, 20.0)):
    """σ_w on the critical line χ(σ_w, σ_b) = 1 (with q = q*(σ_w, σ_b)), searched in ``bracket`` = (lo, hi),
    0 < lo < hi ≤ SIGMA_MAX; ValueError where χ − 1 has the same sign at both ends.

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    sigma_b : float
        Bias scale.
    bracket : tuple of float
        (lo, hi), the range of σ_w searched.

    Returns
    -------
    float
        The critical σ_w.

    Examples
    --------
    ReLU at σ_b = 0: χ = σ_w²/2 = 1 at σ_w = √2; linear: χ = σ_w² = 1.

    >>> print(f"{critical_sigma_w('relu'):.10f} {critical_sigma_w('linear'):.10f}")
    1.4142135624 1.0000000000
    """
    act = _activation(act)
    sigma_b = _sigma("sigma_b", sigma_b)
    try:
        a, b = bracket
    except (TypeError, ValueError):
        raise ValueError(f"bracket must be a pair (lo, hi) of values of sigma_w, got {bracket!r:.60}") from None
    a = real_scalar("bracket[0]", a, lo=0.0, lo_open=True, hi=SIGMA_MAX)
    b = real_scalar("bracket[1]", b, lo=0.0, lo_open=True, hi=SIGMA_MAX)
    if not a < b:
        raise ValueError(f"bracket must have lo < hi, got ({a!r}, {b!r})")
    f = lambda s: chi(act, s, sigma_b) - 1.0           # noqa: E731
    if f(a) * f(b) > 0:
        raise ValueError(f"no critical sigma_w in bracket=({a:g}, {b:g}) for {act.name} at sigma_b={sigma_b}")
    return float(optimize.brentq(f, a, b, xtol=1e-14, rtol=1e-14))


def d2_law(act, q) -> Measure:
    """The law of D² = φ′(h)², h ~ N(0, q): a two-point law for piecewise-linear φ (ReLU: Bernoulli(½); hard-tanh:
    Bernoulli(erf(1/√(2q))); linear: δ₁), otherwise the Gaussian push-forward by quadrature.

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    q : float
        Variance of h (> 0).

    Returns
    -------
    Measure
        The law of φ′(h)².

    Examples
    --------
    Hard-tanh′² = 1 on |h| < 1: mass P(|h| < 1) = erf(1/√2) ≈ 0.682689 at 1 when q = 1, the rest at 0.

    >>> locs, masses = d2_law("hard_tanh", 1.0).atoms()
    >>> print(np.round(locs, 6).tolist(), np.round(masses, 6).tolist())
    [0.0, 1.0] [0.317311, 0.682689]
    """
    act = _activation(act)
    q = real_scalar("q", q, lo=0.0, lo_open=True)
    if act.d2_atoms is not None:
        return act.d2_atoms(q)
    return gaussian_pushforward(lambda h: np.asarray(act.dphi(h), float) ** 2, q)


def normalised_activation(act) -> _activations.Activation:
    """φ̃ = (φ - E φ(ξ))/√Var φ(ξ), ξ ~ N(0, 1): centred with unit second moment (Fan & Wang's Assumption 3.1).

    Parameters
    ----------
    act : str, Activation or callable
        The activation (not constant under N(0, 1)).

    Returns
    -------
    Activation
        φ̃, with φ̃′ and the same breakpoints.

    Examples
    --------
    ReLU: E relu(ξ) = 1/√(2π), Var = 1/2 − 1/(2π), so φ̃(0) = −(1/√(2π))/√(1/2 − 1/(2π)) ≈ −0.683332.

    >>> phi = normalised_activation("relu")
    >>> print(f"{float(phi.phi(np.zeros(1))[0]):.6f}")
    -0.683332
    >>> print(f"{gaussian_expectation(lambda h: phi.phi(h) ** 2, 1.0, phi.breakpoints):.8f}")
    1.00000000
    """
    act = _activation(act)
    mean = gaussian_expectation(act.phi, 1.0, act.breakpoints)
    var = second_moment(act, 1.0) - mean ** 2
    if not var > 1e-14:
        raise ValueError(f"activation {act.name!r} is constant under N(0, 1); it cannot be normalised")
    sd = float(np.sqrt(var))
    phi, dphi = act.phi, act.dphi
    return _activations.Activation(f"normalised {act.name}", lambda h: (phi(h) - mean) / sd,
                                   lambda h: dphi(h) / sd, second_moment=None, breakpoints=act.breakpoints)


# Moved to rmtnet.spectra.activations: deprecated aliases for one release.
__getattr__ = moved_names(__name__, {"Activation": "rmtnet.spectra.activations:Activation",
                                     "activation": "rmtnet.spectra.activations:activation"})
