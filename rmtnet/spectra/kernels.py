"""Infinite-width kernels of random MLPs: the neural-network Gaussian process (NNGP) kernel (Lee et al., "Deep Neural
Networks as Gaussian Processes", ICLR 2018) and the neural tangent kernel (NTK; Jacot, Gabriel & Hongler, NeurIPS
2018), with the bivariate Gaussian expectations they are made of. Prediction with them (GP regression, gradient
descent on the squared loss) is in :mod:`rmtnet.spectra.predict`.

Convention (that of :mod:`rmtnet.spectra.network`): inputs x ∈ ℝ^{n₀} are the rows of X (B × n₀), and for ℓ = 1 … L

    h_ℓ = W_ℓ x_{ℓ-1} + b_ℓ,   x_ℓ = φ(h_ℓ),   W_ℓ entries of variance σ_w²/n_{ℓ-1},   b_ℓ ~ N(0, σ_b² I).

As every width n_ℓ → ∞ the pre-activations at the B inputs become a Gaussian process. With the post-activation
kernel K_ℓ(x, x′) = lim (1/n_ℓ) Σ_j x_{ℓ,j} x′_{ℓ,j} and K₀(x, x′) = x·x′/n₀ (the input Gram matrix), the
pre-activation covariance is

    Σ_ℓ(x, x′) = σ_w² K_{ℓ-1}(x, x′) + σ_b²,                                                         (1)
    K_ℓ(x, x′) = E[φ(z₁)φ(z₂)],   (z₁, z₂) ~ N(0, [[Σ_ℓ(x,x), Σ_ℓ(x,x′)], [Σ_ℓ(x,x′), Σ_ℓ(x′,x′)]]),         (2)

(Lee et al. 2018, eq. (4)). :func:`nngp_kernel` returns Σ_L, the covariance of the last pre-activation h_L: the GP prior
of f(x) = h_L, i.e. of a network whose last layer is a linear read-out (the last activation φ(h_L) is never applied,
whatever ``net.last_activation`` says). Its diagonal is the mean-field length map q_ℓ of :mod:`rmtnet.spectra.meanfield`
(q₁ = σ_w² q₀ + σ_b²).

The expectation (2) has closed forms for

* ReLU, the degree-1 arc-cosine kernel (Cho & Saul 2009): E[relu(z₁)relu(z₂)] = √(c₁₁c₂₂)/(2π)·(sin θ + (π − θ)cos θ),
  cos θ = c₁₂/√(c₁₁c₂₂);
* rmtnet's erf, φ(h) = erf(√π h/2) (Williams 1997): E[erf(a z₁)erf(a z₂)] = (2/π) arcsin(2a²c₁₂/√((1+2a²c₁₁)(1+2a²c₂₂))),
  a = √π/2;
* linear: c₁₂;

each held, with its derivative kernel E[φ′(z₁)φ′(z₂)], by the activation's definition
(:attr:`~rmtnet.spectra.activations.Activation.pair_kernels`, :mod:`rmtnet.spectra.activations`), and is computed by
quadrature (:func:`gaussian_pair_expectation`) for every other activation (tanh, hard_tanh,
user callables). Prediction with these kernels is :mod:`rmtnet.spectra.predict`.

:func:`nngp_kernel` and :func:`ntk_kernel` take one set of inputs x1 or two, ``(net, x1, x2)``, as neural-tangents'
``kernel_fn(x1, x2, ...)`` (Novak et al., "Neural Tangents", ICLR 2020): with x2 they return the n₁ × n₂ cross
kernel. Since (2) needs of a pair only Σ_ℓ(x, x), Σ_ℓ(x′, x′) and Σ_ℓ(x, x′), the recursion runs on the diagonals of
both sets and the cross block: n₁n₂ + n₁ + n₂ pair evaluations a layer instead of the (n₁ + n₂)(n₁ + n₂ + 1)/2 of
the joint kernel's upper triangle.
"""
from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backend as B
from .. import _deprecation
from rmtnet._validation import INPUT_MAX, boolean, finite_array, input_rows, one_of, real_scalar
from .network import check_network
from .activations import Activation, activation, registered_activations

__all__ = ["gaussian_pair_expectation", "relu_kernel", "erf_kernel", "pair_kernel", "kernel_map", "nngp_kernel",
           "nngp_blocks", "relu_derivative_kernel", "erf_derivative_kernel", "derivative_pair_kernel", "ntk_kernel",
           "INPUT_MAX", "METHODS", "PARAMETERIZATIONS"]

METHODS = ("auto", "closed_form", "quadrature")


# ------------------------------------------------------------------------------------------------------------------
# Bivariate Gaussian expectations

def _covariances(c11, c12, c22, tol=1e-8):
    """Broadcast (c11, c12, c22) to one shape; check c11, c22 ≥ 0 and c12² ≤ c11·c22 (within ``tol``, relative)."""
    c11 = finite_array("c11", c11)
    c12 = finite_array("c12", c12)
    c22 = finite_array("c22", c22)
    try:
        c11, c12, c22 = np.broadcast_arrays(c11, c12, c22)
    except ValueError:
        raise ValueError(f"c11, c12, c22 must broadcast together, got shapes {c11.shape}, {c12.shape}, "
                         f"{c22.shape}") from None
    if np.any(c11 < 0) or np.any(c22 < 0):
        raise ValueError("c11 and c22 (variances) must lie in [0, inf)")
    bound = np.sqrt(c11 * c22)
    if np.any(np.abs(c12) > bound * (1 + tol) + 1e-300):
        raise ValueError("c12 must satisfy |c12| ≤ √(c11·c22) (the 2×2 covariance must be positive semi-definite)")
    return c11, c12, c22


def _correlation(c11, c12, c22):
    """ρ = c12/√(c11c22) clipped into [-1, 1]; 0 where a variance vanishes."""
    bound = np.sqrt(c11 * c22)
    pos = bound > 0
    rho = np.divide(c12, bound, out=np.zeros_like(bound), where=pos)
    return np.clip(rho, -1.0, 1.0), bound


def _as_function(f, breakpoints, name):
    if isinstance(f, Activation):
        return f.phi, tuple(f.breakpoints) + tuple(breakpoints)
    if not callable(f):
        raise ValueError(f"{name} must be a callable or an Activation, got {type(f).__name__}")
    return f, tuple(breakpoints)


def _panels(edges, x, w):
    """Composite Gauss–Legendre nodes and weights for panels between consecutive ``edges`` (last axis, sorted)."""
    a, b = edges[..., :-1, None], edges[..., 1:, None]
    half = 0.5 * (b - a)
    shape = edges.shape[:-1] + (-1,)
    return (0.5 * (a + b) + half * x).reshape(shape), (half * w).reshape(shape)


def _pair_chunk(fn, gn, fb, gb, s1, a, s, base, rule, W, levels):
    """E[f(√c11 u) g(a u + s v)] for one chunk of covariances: the panels in u (kinks of f, graded near-kinks of the
    inner integral) and in v (kinks of g), then the two Gauss–Legendre sums (:func:`gaussian_pair_expectation`)."""
    x, w = rule
    m = s1.size
    extra = []
    for b in fb:                                              # kinks of f(√c11 u)
        extra.append(np.divide(b, s1, out=np.full(m, W), where=s1 > 0))
    for b in gb:                                              # near-kinks of the inner integral at u = b/a
        ustar = np.divide(b, a, out=np.full(m, W), where=a != 0)
        delta = np.divide(s, np.abs(a), out=np.zeros(m), where=a != 0)
        extra.append(ustar)
        for k in levels:
            extra += [ustar - k * delta, ustar + k * delta]
    edges = np.broadcast_to(base, (m, base.size))
    if extra:
        edges = np.concatenate([edges, np.clip(np.stack(extra, axis=1), -W, W)], axis=1)
    u, wu = _panels(np.sort(edges, axis=1), x, w)             # (m, Nu)
    wu = wu * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)
    au = a[:, None] * u                                       # (m, Nu)
    vedges = np.broadcast_to(base, au.shape + (base.size,))
    if gb:
        sv = s[:, None, None]
        vb = [np.divide(b - au[..., None], sv, out=np.full(au.shape + (1,), W), where=sv > 0) for b in gb]
        vedges = np.sort(np.concatenate([vedges] + [np.clip(v, -W, W) for v in vb], axis=-1), axis=-1)
    v, wv = _panels(vedges, x, w)                             # (m, Nu, Nv)
    wv = wv * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi)
    inner = np.sum(wv * np.asarray(gn(au[..., None] + s[:, None, None] * v), dtype=float), axis=-1)
    fu = np.asarray(fn(s1[:, None] * u), dtype=float)
    return np.sum(wu * fu * inner, axis=-1)


def gaussian_pair_expectation(f, g, c11, c12, c22, *, f_breakpoints=(), g_breakpoints=(), width=9.0, panel=1.0,
                              n_gauss=10, grading=3.0, n_grading=18, max_points=2_000_000):
    """E[f(z₁)g(z₂)] for (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]), vectorised over arrays of (c11, c12, c22).

    ``f`` and ``g`` are vectorised callables or :class:`~rmtnet.spectra.activations.Activation` objects (whose φ and
    breakpoints are used); ``f_breakpoints``/``g_breakpoints`` add kinks or jumps of f and g.

    Method: conditioning on z₁ = √c11·u, z₂ = a·u + s·v with a = ρ√c22, s = √(c22(1 − ρ²)) and u, v iid N(0, 1), so

        E[f(z₁)g(z₂)] = ∫ φ(u) f(√c11 u) [∫ φ(v) g(a u + s v) dv] du,

    both integrals by composite Gauss–Legendre rules on [-width, width] (standard units; Gaussian mass outside
    ≈ 2e-19 for width 9) with panels no longer than ``panel`` in z-units nor 1 standard unit, as in
    :func:`~rmtnet.spectra.meanfield.gaussian_expectation`. Panel ends are put at every kink: in v at
    (b − a u)/s for each breakpoint b of g (one per outer node), in u at b/√c11 for the breakpoints of f. The inner
    integral as a function of u has a near-kink of width s/|a| at u = b/a when |ρ| → 1; panels there are graded
    geometrically (ratio ``grading``, ``n_grading`` levels), which keeps the rule accurate to ~1e-14 up to |ρ| = 1.
    Correlation ±1 (s = 0) and zero variances are handled exactly (no NaN). Accuracy ~1e-12 or better for the
    registered activations at variances O(1); the node count grows like √max(c) for large variances.

    Parameters
    ----------
    f, g : callable or Activation
        The two functions (vectorised).
    c11, c12, c22 : float or array_like
        The covariance entries (broadcast together; c11, c22 ≥ 0, |c12| ≤ √(c11 c22)).
    f_breakpoints, g_breakpoints : sequence of float
        Extra kinks or jumps of f and g.
    width, panel, n_gauss, grading, n_grading, max_points
        The rule, as above (``max_points`` bounds the nodes held at once).

    Returns
    -------
    ndarray
        E[f(z₁)g(z₂)], shaped like the broadcast covariances.

    Examples
    --------
    E[z₁z₂] = c12, and for ReLU at equal entries E[relu(z)²] = q/2:

    >>> relu = lambda z: np.maximum(z, 0.0)
    >>> print(np.round(gaussian_pair_expectation(lambda z: z, lambda z: z, 2.0, 0.5, 1.0), 12),
    ...       np.round(gaussian_pair_expectation(relu, relu, 1.5, 1.5, 1.5, f_breakpoints=(0,), g_breakpoints=(0,)), 12))
    0.5 0.75
    """
    fn, fb = _as_function(f, f_breakpoints, "f")
    gn, gb = _as_function(g, g_breakpoints, "g")
    c11, c12, c22 = _covariances(c11, c12, c22)
    shape = c11.shape
    c11, c12, c22 = (np.ravel(c).astype(float) for c in (c11, c12, c22))
    rho, _ = _correlation(c11, c12, c22)
    W = real_scalar("width", width, lo=0.0, lo_open=True)
    panel = real_scalar("panel", panel, lo=0.0, lo_open=True)
    s1 = np.sqrt(c11)
    a = rho * np.sqrt(c22)
    s = np.sqrt(c22) * np.sqrt((1.0 - rho) * (1.0 + rho))
    out = np.empty(c11.size)
    if c11.size == 0:
        return out.reshape(shape)
    scale = max(1.0, float(np.sqrt(max(c11.max(), c22.max()))) / panel)
    n_panels = int(np.ceil(2 * W * scale))
    base = np.linspace(-W, W, n_panels + 1)
    x, w = np.polynomial.legendre.leggauss(int(n_gauss))
    levels = grading ** np.arange(int(n_grading)) if gb else np.empty(0)

    n_u = (n_panels + len(fb) + len(gb) * (1 + 2 * levels.size)) * len(x)
    n_v = (n_panels + len(gb)) * len(x)
    chunk = max(1, int(max_points // (n_u * n_v)))
    for lo in range(0, c11.size, chunk):
        sl = slice(lo, lo + chunk)
        out[sl] = _pair_chunk(fn, gn, fb, gb, s1[sl], a[sl], s[sl], base, (x, w), W, levels)
    return out.reshape(shape)


def _closed_pair(name, c11, c12, c22):
    """The registered activation ``name``'s closed-form (E[φφ], E[φ′φ′]) on checked covariances."""
    return activation(name).pair_kernels(*_covariances(c11, c12, c22))


def relu_kernel(c11, c12, c22):
    """E[relu(z₁)relu(z₂)] = √(c11c22)/(2π)·(sin θ + (π − θ) cos θ), θ = arccos(c12/√(c11c22)): the degree-1
    arc-cosine kernel (Cho & Saul 2009, eq. (6) with n = 1). Zero when a variance vanishes.

    Parameters
    ----------
    c11, c12, c22 : array_like
        Variances of z₁, z₂ and their covariance (broadcast together; c12² ≤ c11·c22).

    Returns
    -------
    ndarray
        The expectation, entrywise, in the broadcast shape.

    Examples
    --------
    At c12 = c11 = c22 = q it is E[relu(z)²] = q/2; at c12 = 0 (θ = π/2) it is √(c11c22)/(2π) = 1/(2π) ≈ 0.159155.

    >>> print(f"{float(relu_kernel(1.0, 1.0, 1.0)):.6f} {float(relu_kernel(1.0, 0.0, 1.0)):.6f}")
    0.500000 0.159155
    """
    return _closed_pair("relu", c11, c12, c22)[0]


def erf_kernel(c11, c12, c22):
    """E[φ(z₁)φ(z₂)] for rmtnet's φ(h) = erf(√π h/2): (2/π) arcsin(2a²c12/√((1 + 2a²c11)(1 + 2a²c22))) with
    2a² = π/2 (Williams 1997, eq. (11), with Σ = a²·covariance and no bias input).

    Parameters
    ----------
    c11, c12, c22 : array_like
        Variances of z₁, z₂ and their covariance (broadcast together; c12² ≤ c11·c22).

    Returns
    -------
    ndarray
        The expectation, entrywise, in the broadcast shape.

    Examples
    --------
    At c12 = c11 = c22 = 1: (2/π) arcsin((π/2)/(1 + π/2)) = (2/π) arcsin(π/(2 + π)) ≈ 0.418477; odd φ, c12 = 0: 0.

    >>> print(f"{float(erf_kernel(1.0, 1.0, 1.0)):.6f} {float(erf_kernel(1.0, 0.0, 1.0)):.6f}")
    0.418477 0.000000
    """
    return _closed_pair("erf", c11, c12, c22)[0]


def _closed_names():
    """The registered activations whose pair kernels have a closed form (for error messages)."""
    return sorted(n for n in registered_activations() if activation(n).pair_kernels is not None)


def _method(method):
    one_of("method", method, METHODS)
    return method


def pair_kernel(act, c11, c12, c22, method="auto"):
    """E[φ(z₁)φ(z₂)], (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]), for an activation (name, Activation, ...):
    the closed form its definition holds (relu, erf and linear; ``method="auto"`` or ``"closed_form"``),
    quadrature otherwise or with ``method="quadrature"``.

    Parameters
    ----------
    act : str, Activation or callable
        The activation (anything :func:`~rmtnet.spectra.activations.activation` accepts).
    c11, c12, c22 : array_like
        Variances and covariance of (z₁, z₂), broadcast together.
    method : {"auto", "closed_form", "quadrature"}
        Closed form where one exists (``"auto"``), required (``"closed_form"``), or quadrature.

    Returns
    -------
    ndarray
        E[φ(z₁)φ(z₂)] in the broadcast shape.

    Examples
    --------
    ReLU at ρ = 1/2 (θ = π/3): (sin θ + (π − θ)cos θ)/(2π) = (√3/2 + π/3)/(2π) ≈ 0.304499, by quadrature too.

    >>> print(f"{float(pair_kernel('relu', 1.0, 0.5, 1.0, method='quadrature')):.6f}")
    0.304499
    """
    act = activation(act)
    method = _method(method)
    if method != "quadrature" and act.pair_kernels is not None:
        return act.pair_kernels(*_covariances(c11, c12, c22))[0]
    if method == "closed_form":
        raise ValueError(f"method='closed_form': no closed form for activation {act.name!r} "
                         f"(available: {_closed_names()})")
    return gaussian_pair_expectation(act, act, c11, c12, c22)


# ------------------------------------------------------------------------------------------------------------------
# Kernel propagation

def _gram(name, S):
    S = finite_array(name, S)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix, got shape {S.shape}")
    scale = max(1.0, float(np.max(np.abs(S)))) if S.size else 1.0
    if np.max(np.abs(S - S.T), initial=0.0) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")
    if np.any(np.diag(S) < 0):
        raise ValueError(f"{name} must have a non-negative diagonal (variances)")
    return 0.5 * (S + S.T)


def _step(act, sw2, sb2, c11, c12, c22, method):
    """One layer of (1)–(2) on entries: Σ_{ℓ+1} = σ_w² E[φ(z₁)φ(z₂)] + σ_b²."""
    return sw2 * pair_kernel(act, c11, c12, c22, method) + sb2


def kernel_map(act, sigma_w, sigma_b, Sigma, method="auto"):
    """One layer of NNGP propagation, Σ_ℓ ↦ Σ_{ℓ+1} = σ_w² E[φ(z)φ(z′)] + σ_b² with (z, z′) drawn from the 2×2 blocks
    of Σ_ℓ (Lee et al. 2018, eq. (4)); entrywise on the B×B matrix ``Sigma`` (upper triangle, then symmetrised).

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    sigma_w, sigma_b : float
        Weight and bias scales (≥ 0).
    Sigma : array_like
        Σ_ℓ, B × B symmetric with a non-negative diagonal.
    method : {"auto", "closed_form", "quadrature"}
        As in :func:`pair_kernel`.

    Returns
    -------
    ndarray
        Σ_{ℓ+1}, B × B.

    Examples
    --------
    ReLU at σ_w² = 2: the diagonal stays 2·(1/2) = 1; off it 2·0.304499 (:func:`pair_kernel`'s example).

    >>> np.round(kernel_map("relu", np.sqrt(2), 0.0, [[1.0, 0.5], [0.5, 1.0]]), 6).tolist()
    [[1.0, 0.608998], [0.608998, 1.0]]
    """
    act = activation(act)
    sw2 = real_scalar("sigma_w", sigma_w, lo=0.0) ** 2
    sb2 = real_scalar("sigma_b", sigma_b, lo=0.0) ** 2
    S = _gram("Sigma", Sigma)
    d = np.diag(S)
    i, j = np.triu_indices(S.shape[0])
    vals = _step(act, sw2, sb2, d[i], S[i, j], d[j], _method(method))
    out = np.empty_like(S)
    out[i, j] = vals
    out[j, i] = vals
    return out


def _first_layer(net, Xa, Xb):
    """Σ₁ = σ_w² Xa Xbᵀ/n₀ + σ_b²."""
    return net.sigma_w ** 2 * (Xa @ Xb.T) / Xa.shape[1] + net.sigma_b ** 2


def _input_sets(x1, x2):
    """x1 and x2 (or None) as checked input rows, x2 on x1's library; x2 must have x1's input dimension n₀. An x2
    equal to x1 is returned as None: the kernel of x1 with itself, whose diagonal is exact (a cross block computes
    the correlation of a point with itself from two roundings, which the arc-cosine kernel's arccos, ill-conditioned
    at ρ = 1, turns into an error ~1e-8)."""
    x1 = input_rows("x1", x1)
    if x2 is None:
        return x1, None
    x2 = B.as_array(input_rows("x2", x2), like=x1)
    if x2.shape[1] != x1.shape[1]:
        raise ValueError(f"x2 must have as many columns as x1 (the input dimension n0 = {x1.shape[1]}), "
                         f"got x2 of shape {x2.shape}")
    return x1, None if x2 is x1 or bool(B.module_of(x1).array_equal(x1, x2)) else x2


def _squared_norms(x1, x2):
    """‖x‖² for the rows of x1, then those of x2 (one vector, n₁ + n₂)."""
    xp = B.module_of(x1)
    return xp.concatenate([xp.sum(x1 * x1, axis=1), xp.sum(x2 * x2, axis=1)])


def _pairs_on_sets(act, d, C, method, derivative=True):
    """(E[φ(z)φ(z′)], E[φ′(z)φ′(z′)]) for two input sets, from what a pair needs: the variances d of both sets
    (n₁ + n₂, those of x1 first) and the cross covariances C (n₁ × n₂). Returns ((K, D) at (d, d, d), i.e. every
    point's own variance, and (K, D) at (d₁, C, d₂), the cross block), as the joint kernel of the concatenated sets
    would have them: closed forms on d's library; quadrature on the host, with the variances of both sets in each call
    (the quadrature's panels are set by the largest variance of a call, as in the joint kernel); D is None there
    without ``derivative``."""
    n1 = C.shape[0]
    if method != "quadrature" and act.pair_kernels is not None:
        return act.pair_kernels(d, d, d), act.pair_kernels(d[:n1, None], C, d[None, n1:])
    if method == "closed_form":
        raise ValueError(f"method='closed_form': no closed form for activation {act.name!r} "
                         f"(available: {_closed_names()})")
    dh, Ch = B.to_numpy(d), B.to_numpy(C)
    fns = [functools.partial(pair_kernel, act, method="quadrature")]
    if derivative:
        fns.append(functools.partial(derivative_pair_kernel, act, method="quadrature"))
    own = [B.as_array(f(dh, dh, dh), like=d) for f in fns]
    cross = [B.as_array(f(dh[:n1, None], Ch, dh[None, n1:]), like=C) for f in fns]
    return (own + [None])[:2], (cross + [None])[:2]


def _nngp_cross(net, x1, x2, method):
    """[Σ₁(x1, x2), …, Σ_L(x1, x2)]: the recursion (1)–(2) carried on the variances of both sets and the cross
    block only (see :func:`nngp_kernel`)."""
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    d = sw2 * _squared_norms(x1, x2) / x1.shape[1] + sb2
    S = _first_layer(net, x1, x2)
    out = [S]
    for _ in range(net.depth - 1):
        (Kd, _), (K, _) = _pairs_on_sets(act, d, S, method, derivative=False)
        d, S = sw2 * Kd + sb2, sw2 * K + sb2
        out.append(S)
    return out


def _nngp_layers(net, X, method, return_all=True):
    """[Σ₁, …, Σ_L] on the rows of X (only [Σ_L] without ``return_all`` where the closed forms run on a NumPy X, by
    :func:`_blockwise_layers`), else :func:`kernel_map` layer after layer."""
    if method != "quadrature" and net.activation.pair_kernels is not None and isinstance(X, np.ndarray):
        return [S for S, _ in _blockwise_layers(net, X, "ntk", tangent=False, return_all=return_all)]
    S = _first_layer(net, X, X)
    S = 0.5 * (S + S.T)
    out = [S]
    for _ in range(net.depth - 1):
        S = kernel_map(net.activation, net.sigma_w, net.sigma_b, S, method)
        out.append(S)
    return out


def _options_after_x2(*names):
    """Keep for one release the calls of rmtnet 0.1, ``f(net, X, method, ...)``: the inputs were named X and the
    options ``names`` followed them positionally, where x2 now is. A method's name in x2's place (never an input
    set) is read as that old call, as is the keyword X, each with a DeprecationWarning; any other string is refused
    as x2."""
    def wrap(f):
        name = f.__name__

        @functools.wraps(f)
        def call(net, *args, **kwargs):
            if "X" in kwargs:
                if args or "x1" in kwargs:
                    raise TypeError(f"{name}() got multiple values for argument 'x1' (X is its old name)")
                _deprecation.warn_changed(f"{name}(net, X=...)", f"{name}(net, x1, x2=None, ...)")
                args = (kwargs.pop("X"),)
            if len(args) < 2 or not isinstance(args[1], str) or args[1] not in METHODS:
                return f(net, *args, **kwargs)
            if len(args) - 1 > len(names):
                raise TypeError(f"{name}() takes at most {len(names) + 2} positional arguments in its old form "
                                f"(net, X, {', '.join(names)})")
            old = dict(zip(names, args[1:]))
            clash = sorted(set(old) & set(kwargs))
            if clash:
                raise TypeError(f"{name}() got multiple values for argument {clash[0]!r}")
            _deprecation.warn_changed(f"{name}(net, X, {', '.join(old)}) with the options positional",
                                      f"{name}(net, x1, x2=None, {', '.join(k + '=...' for k in old)}) (the "
                                      f"third argument is now the second set of inputs, x2)")
            return f(net, args[0], **old, **kwargs)
        return call
    return wrap


@_options_after_x2("method", "return_all")
def nngp_kernel(net, x1, x2=None, *, method="auto", return_all=False):
    """The NNGP kernel of ``net`` (an :class:`rmtnet.spectra.network.MLP`) on the inputs x1 (rows, shape (n₁, n₀)),
    or between x1 and x2 (rows, (n₂, n₀)), as neural-tangents' ``kernel_fn(x1, x2, "nngp")``.

    Returns Σ_L (n₁ × n₁), the limiting covariance of the output pre-activation h_L: Σ₁ = σ_w² x₁x₁ᵀ/n₀ + σ_b² and
    Σ_{ℓ+1} = σ_w² E[φ(z)φ(z′)] + σ_b² (module docstring, eqs. (1)–(2); Lee et al. 2018). This is the GP prior
    covariance of f(x) = h_L, a network with a linear read-out. Only the net's depth, σ_w, σ_b and activation enter
    (the widths drop out of the infinite-width limit; n₀ is x1.shape[1]). With x2, the n₁ × n₂ cross kernel
    Σ_L(x1, x2), the corresponding block of the kernel of the concatenated inputs (to rounding), computed without it:
    a pair's next covariance needs only the two points' own variances and their covariance, so the recursion runs on
    the variances of both sets and the cross block. ``return_all=True`` gives the list [Σ₁, …, Σ_L] (cross blocks
    with x2). ``method``: ``"auto"`` (closed forms for relu, erf, linear; quadrature otherwise), ``"closed_form"``
    or ``"quadrature"``. The closed forms on a NumPy x1 run as in :func:`ntk_kernel` (blocks of rows, BLAS threads).

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (depth, σ_w, σ_b, activation).
    x1 : array_like
        Inputs as rows, (n₁, n₀).
    x2 : array_like or None
        A second set of inputs, (n₂, n₀), or None for the kernel of x1 with itself (as is an x2 equal to x1).
    method : {"auto", "closed_form", "quadrature"}
        As above (keyword only; in rmtnet 0.1 it was the third positional argument, still read with a
        DeprecationWarning).
    return_all : bool
        Whether to return [Σ₁, …, Σ_L] instead of Σ_L.

    Returns
    -------
    ndarray or list of ndarray
        Σ_L (n₁ × n₁, or n₁ × n₂ with x2), or every layer's kernel.

    Examples
    --------
    A linear net of depth L = 3 at σ_b = 0 has Σ_L = σ_w^{2L} x₁x₂ᵀ/n₀: 1.5⁶/2 = 5.6953125 and 1.5⁶ = 11.390625.

    >>> from rmtnet.spectra.network import mlp
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> net = mlp(3, 2, sigma_w=1.5, activation="linear", q0=1.0)
    >>> np.round(nngp_kernel(net, X), 7).tolist()
    [[5.6953125, 5.6953125], [5.6953125, 11.390625]]
    >>> np.round(nngp_kernel(net, X, X[1:]), 7).tolist()
    [[5.6953125], [11.390625]]
    """
    return_all = boolean("return_all", return_all)
    net = check_network("net", net)
    x1, x2 = _input_sets(x1, x2)
    method = _method(method)
    if x2 is not None:
        out = _nngp_cross(net, x1, x2, method)
        return out if return_all else out[-1]
    out = _nngp_layers(net, x1, method, return_all)
    return out if return_all else out[-1]


def nngp_blocks(net, X_train, X_test, method="auto", full_cov=False):
    """The blocks of the NNGP kernel of ``net`` that a prediction at X_test from X_train needs, propagated together.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (only depth, σ_w, σ_b and the activation enter, as in :func:`nngp_kernel`).
    X_train, X_test : array_like
        Inputs as rows, shapes (N, n₀) and (T, n₀).
    method : {"auto", "closed_form", "quadrature"}
        As in :func:`nngp_kernel`.
    full_cov : bool
        Whether to propagate the full test × test block or only its diagonal.

    Returns
    -------
    K_train : ndarray
        Σ_L(X_train, X_train), N × N.
    K_cross : ndarray
        Σ_L(X_test, X_train), T × N.
    K_test : ndarray
        Σ_L(X_test, X_test), T × T with ``full_cov``, else its diagonal (T,).

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.network import mlp
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> Ktr, Kx, Ks = nngp_blocks(mlp(2, 2, sigma_w=1.4), X[:2], X[2:])
    >>> Kx.shape, Ks.shape
    ((1, 2), (1,))
    >>> bool(np.allclose(Ktr, nngp_kernel(mlp(2, 2, sigma_w=1.4), X[:2])))
    True
    """
    full_cov = boolean("full_cov", full_cov)
    net = check_network("net", net)
    Xa = input_rows("X_train", X_train)
    Xt = input_rows("X_test", X_test)
    if Xt.shape[1] != Xa.shape[1]:
        raise ValueError(f"X_test must have as many columns as X_train ({Xa.shape[1]}), got {Xt.shape[1]}")
    method = _method(method)
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    Ktr = _first_layer(net, Xa, Xa)
    Ktr = 0.5 * (Ktr + Ktr.T)
    Kx = _first_layer(net, Xt, Xa)
    Ks = _first_layer(net, Xt, Xt) if full_cov else sw2 * np.sum(Xt * Xt, axis=1) / Xt.shape[1] + sb2
    for _ in range(net.depth - 1):
        da = np.diag(Ktr)
        dt = np.diag(Ks) if full_cov else Ks
        Kx = _step(act, sw2, sb2, dt[:, None], Kx, da[None, :], method)
        Ktr = kernel_map(act, net.sigma_w, net.sigma_b, Ktr, method)
        Ks = kernel_map(act, net.sigma_w, net.sigma_b, Ks, method) if full_cov else _step(act, sw2, sb2, dt, dt, dt,
                                                                                          method)
    return Ktr, Kx, Ks


# ------------------------------------------------------------------------------------------------------------------
# The neural tangent kernel (Jacot et al. 2018; Lee et al. 2019)

PARAMETERIZATIONS = ("ntk", "standard")


def relu_derivative_kernel(c11, c12, c22):
    """E[relu′(z₁)relu′(z₂)] = (π − θ)/(2π), θ = arccos(c12/√(c11c22)): the degree-0 arc-cosine kernel (Cho & Saul
    2009, eq. (6) with n = 0). Where a variance vanishes θ = π/2 (the value 1/4 of independent signs).

    Parameters
    ----------
    c11, c12, c22 : array_like
        Variances of z₁, z₂ and their covariance (broadcast together; c12² ≤ c11·c22).

    Returns
    -------
    ndarray
        The expectation, entrywise, in the broadcast shape.

    Examples
    --------
    θ = 0 (c12 = c11 = c22) gives P(z > 0) = 1/2; θ = π/2 (c12 = 0) gives independent signs, 1/4.

    >>> print(f"{float(relu_derivative_kernel(1.0, 1.0, 1.0)):.6f} {float(relu_derivative_kernel(1.0, 0.0, 1.0)):.6f}")
    0.500000 0.250000
    """
    return _closed_pair("relu", c11, c12, c22)[1]


def erf_derivative_kernel(c11, c12, c22):
    """E[φ′(z₁)φ′(z₂)] for rmtnet's φ(h) = erf(ah), a = √π/2, φ′(h) = exp(−πh²/4):
    (4a²/π)/√((1 + 2a²c11)(1 + 2a²c22) − 4a⁴c12²) = 1/√((1 + πc11/2)(1 + πc22/2) − π²c12²/4) (a Gaussian integral;
    the derivative of :func:`erf_kernel` in c12, as the NTK needs: Σ̇ = ∂Σ/∂c12).

    Parameters
    ----------
    c11, c12, c22 : array_like
        Variances of z₁, z₂ and their covariance (broadcast together; c12² ≤ c11·c22).

    Returns
    -------
    ndarray
        The expectation, entrywise, in the broadcast shape.

    Examples
    --------
    At c12 = 0 it is (E exp(−πz²/4))² = (1/√(1 + π/2))² = 1/(1 + π/2) ≈ 0.388985.

    >>> print(f"{float(erf_derivative_kernel(1.0, 0.0, 1.0)):.6f}")
    0.388985
    """
    return _closed_pair("erf", c11, c12, c22)[1]


def derivative_pair_kernel(act, c11, c12, c22, method="auto"):
    """E[φ′(z₁)φ′(z₂)], (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]): with σ_w² the factor Σ̇ by which the NTK is
    carried through a layer. The closed form its definition holds (relu, erf and linear);
    :func:`gaussian_pair_expectation` of φ′ (the activation's kinks are φ′'s jumps) otherwise or with
    ``method="quadrature"``.

    Parameters
    ----------
    act : str, Activation or callable
        The activation.
    c11, c12, c22 : array_like
        Variances and covariance of (z₁, z₂), broadcast together.
    method : {"auto", "closed_form", "quadrature"}
        As in :func:`pair_kernel`.

    Returns
    -------
    ndarray
        E[φ′(z₁)φ′(z₂)] in the broadcast shape.

    Examples
    --------
    ReLU at ρ = 1/2 (θ = π/3): (π − θ)/(2π) = 1/3, here by quadrature of the step function.

    >>> print(f"{float(derivative_pair_kernel('relu', 1.0, 0.5, 1.0, method='quadrature')):.6f}")
    0.333333
    """
    act = activation(act)
    method = _method(method)
    if method != "quadrature" and act.pair_kernels is not None:
        return act.pair_kernels(*_covariances(c11, c12, c22))[1]
    if method == "closed_form":
        raise ValueError(f"method='closed_form': no closed form of E[φ′φ′] for activation {act.name!r} "
                         f"(available: {_closed_names()})")
    return gaussian_pair_expectation(act.dphi, act.dphi, c11, c12, c22, f_breakpoints=act.breakpoints,
                                     g_breakpoints=act.breakpoints)


def _on_pairs(fn, S):
    """fn(c11, c12, c22) by quadrature on the upper triangle of the symmetric kernel S ((c11, c22) from its
    diagonal), mirrored; computed on the host, returned in S's library."""
    Sh = B.to_numpy(S)
    d = np.diag(Sh)
    i, j = np.triu_indices(Sh.shape[0])
    vals = fn(d[i], Sh[i, j], d[j])
    out = np.empty_like(Sh)
    out[i, j] = vals
    out[j, i] = vals
    return B.as_array(out, like=S)


_BLOCK_ENTRIES = 1 << 16        # entries of a block of rows (512 KiB of float64): the block, Θ's and the closed forms'
                                # temporaries stay in a core's L2 cache through all the layers


def _blas_threads():
    """The number of threads the BLAS may use (threadpoolctl; 1 if none is found): the blockwise recursion runs as
    many blocks at once, so that limiting the BLAS threads (``threadpool_limits(k)``, ``rmtnet run --jobs``) limits
    it too."""
    from threadpoolctl import threadpool_info
    counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return max(1, min(counts + [os.cpu_count() or 1])) if counts else 1


def _variances(act, sw2, sb2, d, depth):
    """[d₁, …, d_L], d_ℓ = Σ_ℓ(x, x): (1)–(2) at c11 = c12 = c22 = d, the n pairs of a point with itself."""
    out = [d]
    for _ in range(depth - 1):
        d = sw2 * act.pair_kernels(d, d, d)[0] + sb2
        out.append(d)
    return out


def _block_layers(net, parameterization, S, T, variances, rows, cols):
    """Carry one block (Σ₁, Θ₁)[rows, cols] through the layers of (1)–(2) and of :func:`ntk_kernel`'s Θ recursion
    (Θ None: Σ alone), yielding each layer's (Σ_ℓ, Θ_ℓ) block. Entrywise given the variances: the pair (i, j) needs of
    layer ℓ only Σ_ℓ(i, j), d_ℓ(i) and d_ℓ(j). The block's entries with i = j (``diag``: pairs of a point with itself)
    are set to d_ℓ at each layer, so that their correlation is exactly 1 (the arc-cosine kernels' arccos is
    ill-conditioned there), as on the diagonal of the full matrix."""
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    bias = 1.0 if net.sigma_b > 0 else 0.0
    diag = (np.arange(rows.stop - rows.start), np.arange(rows.start - cols.start, rows.stop - cols.start))
    S[diag] = variances[0][rows]
    yield S, T
    for width, d, d_next in zip(net.widths[1:-1], variances, variances[1:]):
        K, D = act.pair_kernels(d[rows, None], S, d[None, cols])
        S = sw2 * K + sb2
        S[diag] = d_next[rows]
        if T is not None:
            T = (S if parameterization == "ntk" else width * K + bias) + sw2 * D * T
        yield S, T


def _blockwise_layers(net, X, parameterization, tangent=True, return_all=False):
    """[(Σ_ℓ, Θ_ℓ)] for ℓ = 1 … L on the rows of the NumPy array X, by the closed forms, as :func:`_ntk_layers`
    computes them on whole matrices; without ``return_all`` only [(None, Θ_L)], or [(Σ_L, None)] without
    ``tangent``.

    The variances d_ℓ are carried first (:func:`_variances`); then each block of rows [r₀, r₁) of the upper
    triangle (columns j ≥ r₀) goes through all L layers while it sits in the cache (:func:`_block_layers`) and is
    written to its place and, transposed, to the lower triangle: n(n + 1)/2 + O(n·rows) pair evaluations a layer
    instead of n², and no n × n temporary. The blocks run on as many threads as the BLAS may use
    (:func:`_blas_threads`; the closed forms' NumPy loops release the GIL)."""
    n = X.shape[0]
    S1 = _first_layer(net, X, X)
    variances = _variances(net.activation, net.sigma_w ** 2, net.sigma_b ** 2, S1.diagonal().copy(), net.depth)
    bias = 1.0 if net.sigma_b > 0 else 0.0
    T1 = S1 if parameterization == "ntk" else X @ X.T + bias   # standard: ∂h₁/∂W₁ gives x·x′, ∂h₁/∂b₁ gives 1
    keep = range(net.depth) if return_all else [net.depth - 1]
    out = {layer: (np.empty((n, n)) if return_all or not tangent else None, np.empty((n, n)) if tangent else None)
           for layer in keep}                            # Σ_L alone, Θ_L alone, or every layer's (Σ_ℓ, Θ_ℓ)

    def run(r0):
        rows, cols = slice(r0, min(n, r0 + step)), slice(r0, n)
        S = S1[rows, cols].copy()
        T = None if not tangent else S if parameterization == "ntk" else T1[rows, cols].copy()
        for layer, blocks in enumerate(_block_layers(net, parameterization, S, T, variances, rows, cols)):
            for full, block in zip(out.get(layer, ()), blocks):
                if full is not None:                   # the block, and its transpose below the diagonal
                    full[rows, cols] = block
                    full[rows.stop:, rows] = block[:, rows.stop - r0:].T

    step = max(4, _BLOCK_ENTRIES // max(n, 1))
    starts = range(0, n, step)
    threads = _blas_threads() if len(starts) > 1 else 1
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run, starts))
    else:
        for r0 in starts:
            run(r0)
    return [out[layer] for layer in keep]


def _ntk_layers(net, X, method, parameterization, return_all=True):
    """[(Σ_ℓ, Θ_ℓ)] for ℓ = 1 … L on the rows of X (see :func:`ntk_kernel`); closed forms on a NumPy X by
    :func:`_blockwise_layers` (then only [(Σ_L, Θ_L)] without ``return_all``)."""
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    closed = method != "quadrature" and act.pair_kernels is not None
    if method == "closed_form" and not closed:
        raise ValueError(f"method='closed_form': no closed form for activation {act.name!r} "
                         f"(available: {_closed_names()})")
    if closed and isinstance(X, np.ndarray):          # a block of rows at a time, in the cache
        return _blockwise_layers(net, X, parameterization, return_all=return_all)
    S = _first_layer(net, X, X)
    S = 0.5 * (S + S.T)
    bias = 1.0 if net.sigma_b > 0 else 0.0
    T = S if parameterization == "ntk" else X @ X.T + bias      # standard: ∂h₁/∂W₁ gives x·x′, ∂h₁/∂b₁ gives 1
    out = [(S, T)]
    for width in net.widths[1:-1]:
        if closed:                                    # both kernels from one pass over the matrix
            d = S.diagonal()
            K, D = act.pair_kernels(d[:, None], S, d[None, :])
            K, D = 0.5 * (K + K.T), 0.5 * (D + D.T)
        else:
            K = _on_pairs(lambda a, c, b: pair_kernel(act, a, c, b, "quadrature"), S)
            D = _on_pairs(lambda a, c, b: derivative_pair_kernel(act, a, c, b, "quadrature"), S)
        S_next = sw2 * K + sb2
        T = (S_next if parameterization == "ntk" else width * K + bias) + sw2 * D * T
        S = S_next
        out.append((S, T))
    return out


def _ntk_cross_layers(net, x1, x2, method, parameterization):
    """[(Σ_ℓ(x1, x2), Θ_ℓ(x1, x2))] for ℓ = 1 … L: :func:`_ntk_layers`' recursion carried on the variances of both
    sets (d, and Θ's diagonal t) and the cross blocks only."""
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    if method == "closed_form" and act.pair_kernels is None:
        raise ValueError(f"method='closed_form': no closed form for activation {act.name!r} "
                         f"(available: {_closed_names()})")
    norms = _squared_norms(x1, x2)
    d, S = sw2 * norms / x1.shape[1] + sb2, _first_layer(net, x1, x2)
    bias = 1.0 if net.sigma_b > 0 else 0.0
    t, T = (d, S) if parameterization == "ntk" else (norms + bias, x1 @ x2.T + bias)
    out = [(S, T)]
    for width in net.widths[1:-1]:
        (Kd, Dd), (K, D) = _pairs_on_sets(act, d, S, method)
        d_next, S_next = sw2 * Kd + sb2, sw2 * K + sb2
        if parameterization == "ntk":
            t, T = d_next + sw2 * Dd * t, S_next + sw2 * D * T
        else:
            t, T = (width * Kd + bias) + sw2 * Dd * t, (width * K + bias) + sw2 * D * T
        d, S = d_next, S_next
        out.append((S, T))
    return out


@_options_after_x2("method", "parameterization", "return_all")
def ntk_kernel(net, x1, x2=None, *, method="auto", parameterization="ntk", return_all=False):
    """The infinite-width neural tangent kernel Θ_L of ``net`` (an :class:`rmtnet.spectra.network.MLP` with a linear
    read-out h_L) on the rows of x1 (n₁ × n₀), n₁ × n₁, or between x1 and x2 (n₂ × n₀), n₁ × n₂, as neural-tangents'
    ``kernel_fn(x1, x2, "ntk")``: Θ(x, x′) = lim Σ_θ ∂h_L(x)/∂θ · ∂h_L(x′)/∂θ over every weight and bias,
    for one output unit (Jacot, Gabriel & Hongler, NeurIPS 2018; Arora et al., NeurIPS 2019, "On exact computation
    with an infinitely wide neural net"; Lee et al., NeurIPS 2019).

    Recursion (Jacot et al. 2018; Arora et al. 2019), with Σ_ℓ the NNGP kernel of :func:`nngp_kernel` and, for
    each pair (x, x′), (z, z′) ~ N(0, Σ_ℓ restricted to the pair):

        Σ̇_{ℓ+1} = σ_w² E[φ′(z)φ′(z′)],      Θ_{ℓ+1} = P_{ℓ+1} + Σ̇_{ℓ+1} ⊙ Θ_ℓ,

    where P is what the layer's own parameters add:

    * ``parameterization="ntk"`` (the default, as neural-tangents' ``stax.Dense``): W_ℓ = σ_w ω_ℓ/√n_{ℓ−1},
      b_ℓ = σ_b β_ℓ with ω, β ~ N(0, 1) the trained parameters. Then P_ℓ = Σ_ℓ and Θ₁ = Σ₁ = σ_w² x·x′/n₀ + σ_b²;
      the widths drop out.
    * ``"standard"``: W_ℓ (entries N(0, σ_w²/n_{ℓ−1})) and b_ℓ (N(0, σ_b²)) trained directly, as in a torch
      ``nn.Linear`` (:class:`rmtnet.nets.MLP`). Then P_ℓ = n_{ℓ−1} K_{ℓ−1} + 1[bias], K_{ℓ−1} = E[φ(z)φ(z′)] the
      post-activation kernel (K₀ = x·x′/n₀), so Θ₁ = x·x′ + 1. The kernel grows linearly with the widths
      n₀ = x1.shape[1], n₁ … n_{L−1} = ``net.widths[1:-1]`` (taken as they are), so the largest stable learning rate
      shrinks as 1/width (Sohl-Dickstein et al. 2020, arXiv 2001.07301); it is the limit of the empirical NTK over
      the widths' growth, read at the net's widths. The bias term is there only if the net has biases (σ_b > 0,
      as :meth:`rmtnet.nets.MLP.from_arch` builds them), and neural-tangents' ``parameterization="standard"`` with
      its widths ``s`` = 1 gives the same numbers.

    E[φφ] and E[φ′φ′] have closed forms for ReLU (arc-cosine kernels of degree 1 and 0), erf and linear; other
    activations use quadrature (:func:`gaussian_pair_expectation`, far slower per pair: for thousands of points
    use a closed-form activation). ``method`` as in :func:`nngp_kernel`. Closed forms run on x1's library (a CuPy x1
    gives CuPy kernels; NumPy: row blocks, the BLAS's threads); quadrature on the host. ``return_all=True``: the list
    [(Σ₁, Θ₁), …, (Σ_L, Θ_L)], the last pair being neural-tangents' ``kernel_fn(x1, x2, ("nngp", "ntk"))``. With x2
    every Σ_ℓ, Θ_ℓ is the cross block (x1, x2) of the kernel of the concatenated inputs (to rounding), computed from
    the variances of both sets and the cross blocks alone, without the (n₁ + n₂)² joint kernel.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description.
    x1 : array_like
        Inputs as rows, (n₁, n₀).
    x2 : array_like or None
        A second set of inputs, (n₂, n₀), or None for the kernel of x1 with itself (as is an x2 equal to x1).
    method : {"auto", "closed_form", "quadrature"}
        As in :func:`nngp_kernel` (the options are keyword only; rmtnet 0.1's positional form
        ``ntk_kernel(net, X, method, parameterization, return_all)`` still works, with a DeprecationWarning).
    parameterization : {"ntk", "standard"}
        See above.
    return_all : bool
        Whether to return [(Σ₁, Θ₁), …, (Σ_L, Θ_L)] instead of Θ_L.

    Returns
    -------
    ndarray or list of tuple
        Θ_L (n₁ × n₁, or n₁ × n₂ with x2), or every layer's (Σ_ℓ, Θ_ℓ).

    Examples
    --------
    Linear, σ_w = 1, σ_b = 0: Θ_ℓ = Σ_ℓ + Θ_{ℓ−1} = ℓ·x·x′/n₀, so 3·x·x′/2 at L = 3. ReLU at σ_w² = 2 on ‖x‖²/n₀ = 1:
    Σ₁ = Σ₂ = 2, Σ̇₂ = 2·(1/2) = 1, Θ₂ = 2 + 1·2 = 4.

    >>> from rmtnet.spectra.network import mlp
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> np.round(ntk_kernel(mlp(3, 2, activation="linear", q0=1.0), X), 6).tolist()
    [[1.5, 1.5], [1.5, 3.0]]
    >>> np.round(ntk_kernel(mlp(2, 2, sigma_w=np.sqrt(2), q0=1.0), X[1:]), 6).tolist()
    [[4.0]]
    >>> np.round(ntk_kernel(mlp(3, 2, activation="linear", q0=1.0), X, X[1:]), 6).tolist()
    [[1.5], [3.0]]
    """
    return_all = boolean("return_all", return_all)
    net = check_network("net", net)
    x1, x2 = _input_sets(x1, x2)
    method = _method(method)
    one_of("parameterization", parameterization, PARAMETERIZATIONS)
    if x2 is not None:
        layers = _ntk_cross_layers(net, x1, x2, method, parameterization)
    else:
        layers = _ntk_layers(net, x1, method, parameterization, return_all)
    return layers if return_all else layers[-1][1]


# ------------------------------------------------------------------------------------------------------------------
# Deprecated aliases (one release): prediction moved to rmtnet.spectra.predict, the Monte Carlo of the NNGP kernel to
# rmtnet.spectra.sampling.montecarlo. Resolved lazily (PEP 562), so that this theory module imports neither at load time.

__getattr__ = _deprecation.moved_names(__name__, {
    "gp_posterior": "rmtnet.spectra.predict:gp_posterior",
    "nngp_regression": "rmtnet.spectra.predict:nngp_regression",
    "ntk_predict": "rmtnet.spectra.predict:ntk_predict",
    "sample_nngp_kernel": "rmtnet.spectra.sampling.montecarlo:sample_nngp_kernel",
    "SAMPLERS": "rmtnet.spectra.sampling.montecarlo:SAMPLERS"})
