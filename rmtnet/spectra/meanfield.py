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
from rmtnet._validation import ConvergenceError, real_scalar
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
    or φ′ has features beyond |h| = ``core`` should raise ``core`` past them."""
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
    """E[φ(h)²], h ~ N(0, q): closed form where known, else quadrature."""
    if act.second_moment is not None:
        return float(act.second_moment(q))
    return gaussian_expectation(lambda h: act.phi(h) ** 2, q, act.breakpoints)


def d2_moments(act, q, k):
    """μ_k = E[φ′(h)^{2k}], h ~ N(0, q)."""
    act = _activation(act)
    q = real_scalar("q", q, lo=0.0)
    if isinstance(k, bool) or int(k) != k or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    if act.derivative_moment is not None and q > 0:
        return float(act.derivative_moment(q, int(k)))
    return gaussian_expectation(lambda h: act.dphi(h) ** (2 * int(k)), q, act.breakpoints)


SIGMA_MAX = 1e150      # σ_w, σ_b at most this: their squares, which every variance multiplies, stay in float64


def _sigma(name, value):
    """σ_w or σ_b as a float in [0, SIGMA_MAX], or ValueError naming it (σ² of a larger one overflows)."""
    return real_scalar(name, value, lo=0.0, hi=SIGMA_MAX)


def length_map(act, q, sigma_w, sigma_b=0.0):
    """q ↦ σ_w² E[φ(√q ξ)²] + σ_b² (one layer of the variance recursion)."""
    act = _activation(act)
    sigma_w = _sigma("sigma_w", sigma_w)
    sigma_b = _sigma("sigma_b", sigma_b)
    q = real_scalar("q", q, lo=0.0)
    return sigma_w ** 2 * second_moment(act, q) + sigma_b ** 2


def variance_profile(act, sigma_w, sigma_b, q0, depth):
    """Pre-activation variances (q_1, …, q_L) of a network fed an input with ‖x₀‖²/n₀ = q0:
    q_1 = σ_w² q0 + σ_b², q_{ℓ+1} = σ_w² E[φ(√q_ℓ ξ)²] + σ_b² (the length map)."""
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
    one raises ValueError (q grows without bound)."""
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
    """χ = σ_w² E[φ′(√q ξ)²] at q (default q*): the mean squared singular value of one layer's Jacobian."""
    act = _activation(act)
    sigma_w = _sigma("sigma_w", sigma_w)
    sigma_b = _sigma("sigma_b", sigma_b)
    if act.homogeneous:                                 # E[φ′²] does not depend on q (linear, ReLU)
        return sigma_w ** 2 * d2_moments(act, 1.0, 1)
    q = q_star(act, sigma_w, sigma_b) if q is None else real_scalar("q", q, lo=0.0)
    return sigma_w ** 2 * d2_moments(act, q, 1)


def critical_sigma_w(act, sigma_b=0.0, bracket=(0.05, 20.0)):
    """σ_w on the critical line χ(σ_w, σ_b) = 1 (with q = q*(σ_w, σ_b)), searched in ``bracket`` = (lo, hi),
    0 < lo < hi ≤ SIGMA_MAX; ValueError where χ − 1 has the same sign at both ends."""
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
    Bernoulli(erf(1/√(2q))); linear: δ₁), otherwise the Gaussian push-forward by quadrature."""
    act = _activation(act)
    q = real_scalar("q", q, lo=0.0, lo_open=True)
    if act.d2_atoms is not None:
        return act.d2_atoms(q)
    return gaussian_pushforward(lambda h: np.asarray(act.dphi(h), float) ** 2, q)


def normalised_activation(act) -> _activations.Activation:
    """φ̃ = (φ - E φ(ξ))/√Var φ(ξ), ξ ~ N(0, 1): centred with unit second moment (Fan & Wang's Assumption 3.1)."""
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
