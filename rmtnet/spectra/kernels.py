"""Neural-network Gaussian process (NNGP) kernels of wide random MLPs, and GP regression with them (Lee et al.,
"Deep Neural Networks as Gaussian Processes", ICLR 2018).

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
user callables). GP regression (:func:`gp_posterior`) uses the posterior mean K(x*,X)K(X,X)⁻¹Y and variance
K(x*,x*) − K(x*,X)K(X,X)⁻¹K(X,x*) (Rasmussen & Williams 2006, eqs. 2.25–2.26).
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from .. import backend as B
from ._checks import finite_array, integer_at_least, mlp_description, real_scalar
from .activations import Activation, activation, registered_activations

__all__ = ["gaussian_pair_expectation", "relu_kernel", "erf_kernel", "pair_kernel", "kernel_map", "nngp_kernel",
           "gp_posterior", "nngp_regression", "sample_nngp_kernel", "relu_derivative_kernel", "erf_derivative_kernel",
           "derivative_pair_kernel", "ntk_kernel", "ntk_predict"]

METHODS = ("auto", "closed_form", "quadrature")
SAMPLERS = ("weights", "marginal")


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

    def clip(v):
        return np.clip(v, -W, W)

    n_u = (n_panels + len(fb) + len(gb) * (1 + 2 * levels.size)) * len(x)
    n_v = (n_panels + len(gb)) * len(x)
    chunk = max(1, int(max_points // (n_u * n_v)))
    for lo in range(0, c11.size, chunk):
        sl = slice(lo, lo + chunk)
        s1_, a_, s_ = s1[sl], a[sl], s[sl]
        m = s1_.size
        extra = []
        for b in fb:                                              # kinks of f(√c11 u)
            extra.append(np.divide(b, s1_, out=np.full(m, W), where=s1_ > 0))
        for b in gb:                                              # near-kinks of the inner integral at u = b/a
            ustar = np.divide(b, a_, out=np.full(m, W), where=a_ != 0)
            delta = np.divide(s_, np.abs(a_), out=np.zeros(m), where=a_ != 0)
            extra.append(ustar)
            for k in levels:
                extra += [ustar - k * delta, ustar + k * delta]
        edges = np.broadcast_to(base, (m, base.size))
        if extra:
            edges = np.concatenate([edges, clip(np.stack(extra, axis=1))], axis=1)
        u, wu = _panels(np.sort(edges, axis=1), x, w)             # (m, Nu)
        wu = wu * np.exp(-0.5 * u * u) / np.sqrt(2 * np.pi)
        au = a_[:, None] * u                                      # (m, Nu)
        vedges = np.broadcast_to(base, au.shape + (base.size,))
        if gb:
            sv = s_[:, None, None]
            vb = [np.divide(b - au[..., None], sv, out=np.full(au.shape + (1,), W), where=sv > 0) for b in gb]
            vedges = np.sort(np.concatenate([vedges] + [clip(v) for v in vb], axis=-1), axis=-1)
        v, wv = _panels(vedges, x, w)                             # (m, Nu, Nv)
        wv = wv * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi)
        inner = np.sum(wv * np.asarray(gn(au[..., None] + s_[:, None, None] * v), dtype=float), axis=-1)
        fu = np.asarray(fn(s1_[:, None] * u), dtype=float)
        out[sl] = np.sum(wu * fu * inner, axis=-1)
    return out.reshape(shape)


def _closed_pair(name, c11, c12, c22):
    """The registered activation ``name``'s closed-form (E[φφ], E[φ′φ′]) on checked covariances."""
    return activation(name).pair_kernels(*_covariances(c11, c12, c22))


def relu_kernel(c11, c12, c22):
    """E[relu(z₁)relu(z₂)] = √(c11c22)/(2π)·(sin θ + (π − θ) cos θ), θ = arccos(c12/√(c11c22)): the degree-1
    arc-cosine kernel (Cho & Saul 2009, eq. (6) with n = 1). Zero when a variance vanishes."""
    return _closed_pair("relu", c11, c12, c22)[0]


def erf_kernel(c11, c12, c22):
    """E[φ(z₁)φ(z₂)] for rmtnet's φ(h) = erf(√π h/2): (2/π) arcsin(2a²c12/√((1 + 2a²c11)(1 + 2a²c22))) with
    2a² = π/2 (Williams 1997, eq. (11), with Σ = a²·covariance and no bias input)."""
    return _closed_pair("erf", c11, c12, c22)[0]


def _closed_names():
    """The registered activations whose pair kernels have a closed form (for error messages)."""
    return sorted(n for n in registered_activations() if activation(n).pair_kernels is not None)


def _method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def pair_kernel(act, c11, c12, c22, method="auto"):
    """E[φ(z₁)φ(z₂)], (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]), for an activation (name, Activation, ...):
    the closed form its definition holds (relu, erf and linear; ``method="auto"`` or ``"closed_form"``),
    quadrature otherwise or with ``method="quadrature"``."""
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
    of Σ_ℓ (Lee et al. 2018, eq. (4)); entrywise on the B×B matrix ``Sigma`` (upper triangle, then symmetrised)."""
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


INPUT_MAX = 1e75      # |x| above this: the kernels' products of two squared norms (~|x|⁴) leave float64


def _inputs(name, X):
    """Inputs as rows: a finite 2-D array with B, n₀ ≥ 1 and entries of magnitude at most :data:`INPUT_MAX`."""
    X = finite_array(name, X)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (inputs as rows, shape (B, n0) with B, n0 ≥ 1), "
                         f"got shape {X.shape}")
    top = float(abs(X).max())
    if top > INPUT_MAX:
        raise ValueError(f"{name} must have entries of magnitude at most {INPUT_MAX:g} (the kernels multiply "
                         f"squared norms, ~|x|⁴, which must stay within float64), got max |x| = {top:g}")
    return X


def _first_layer(net, Xa, Xb):
    """Σ₁ = σ_w² Xa Xbᵀ/n₀ + σ_b²."""
    return net.sigma_w ** 2 * (Xa @ Xb.T) / Xa.shape[1] + net.sigma_b ** 2


def nngp_kernel(net, X, method="auto", return_all=False):
    """The NNGP kernel of ``net`` (an :class:`rmtnet.spectra.network.MLP`) on the inputs X (rows, shape (B, n₀)).

    Returns Σ_L (B × B), the limiting covariance of the output pre-activation h_L: Σ₁ = σ_w² XXᵀ/n₀ + σ_b² and
    Σ_{ℓ+1} = σ_w² E[φ(z)φ(z′)] + σ_b² (module docstring, eqs. (1)–(2); Lee et al. 2018). This is the GP prior
    covariance of f(x) = h_L, a network with a linear read-out. Only the net's depth, σ_w, σ_b and activation enter
    (the widths drop out of the infinite-width limit; n₀ is X.shape[1]). ``return_all=True`` gives the list
    [Σ₁, …, Σ_L]. ``method``: ``"auto"`` (closed forms for relu, erf, linear; quadrature otherwise),
    ``"closed_form"`` or ``"quadrature"``."""
    net = mlp_description("net", net)
    X = _inputs("X", X)
    method = _method(method)
    S = _first_layer(net, X, X)
    S = 0.5 * (S + S.T)
    out = [S]
    for _ in range(net.depth - 1):
        S = kernel_map(net.activation, net.sigma_w, net.sigma_b, S, method)
        out.append(S)
    return out if return_all else out[-1]


# ------------------------------------------------------------------------------------------------------------------
# GP regression

def gp_posterior(K_train, K_cross, K_test, Y, noise=0.0):
    """GP posterior at test points (Rasmussen & Williams 2006, eqs. 2.25–2.26):

        mean = K(x*, X) (K(X, X) + noise·I)⁻¹ Y,
        var  = K(x*, x*) − K(x*, X) (K(X, X) + noise·I)⁻¹ K(X, x*).

    K_train: K(X, X), N × N symmetric positive definite. K_cross: K(x*, X), T × N. K_test: K(x*, x*), either its
    diagonal (T,) — then ``var`` is the vector of posterior variances, clipped at 0 against rounding — or the full
    T × T matrix — then ``var`` is the posterior covariance. Y: (N,) or (N, k). noise ≥ 0: the observation-noise
    variance added to the diagonal of K(X, X) (also a jitter for ill-conditioned kernels). Cholesky solves
    (scipy.linalg.cho_factor); a K(X, X) + noise·I that is not numerically positive definite raises ValueError.
    Returns (mean, var)."""
    noise = real_scalar("noise", noise, lo=0.0)
    Kt = finite_array("K_train", K_train)
    if Kt.ndim != 2 or Kt.shape[0] != Kt.shape[1] or Kt.shape[0] < 1:
        raise ValueError(f"K_train must be a square N×N matrix, got shape {Kt.shape}")
    n = Kt.shape[0]
    scale = max(float(np.max(np.abs(Kt))), 1e-300)
    if np.max(np.abs(Kt - Kt.T)) > 1e-10 * scale:
        raise ValueError("K_train must be symmetric")
    Kx = finite_array("K_cross", K_cross)
    if Kx.ndim != 2 or Kx.shape[1] != n:
        raise ValueError(f"K_cross must have shape (T, N) = (T, {n}) (rows: test points), got {Kx.shape}")
    t = Kx.shape[0]
    Ks = finite_array("K_test", K_test)
    if Ks.shape not in ((t,), (t, t)):
        raise ValueError(f"K_test must be the diagonal ({t},) or the full ({t}, {t}) test kernel, got {Ks.shape}")
    Y = finite_array("Y", Y)
    if Y.ndim not in (1, 2) or Y.shape[0] != n:
        raise ValueError(f"Y must have shape ({n},) or ({n}, k) to match K_train, got {Y.shape}")
    A = 0.5 * (Kt + Kt.T) + noise * np.eye(n)
    try:
        c, lower = linalg.cho_factor(A, lower=True, check_finite=False)
    except linalg.LinAlgError as exc:
        raise ValueError(f"K_train + noise·I is not positive definite ({exc}); use distinct inputs or noise > 0") \
            from None
    piv = np.diag(c) ** 2
    if piv.min() <= 10 * n * np.finfo(float).eps * np.max(np.diag(A)):
        raise ValueError(f"K_train + noise·I is numerically singular (smallest Cholesky pivot² {piv.min():.3g}); "
                         "use distinct inputs or noise > 0")
    mean = Kx @ linalg.cho_solve((c, lower), Y, check_finite=False)
    V = linalg.solve_triangular(c, Kx.T, lower=True, check_finite=False)          # L⁻¹ K(X, x*)
    if Ks.ndim == 1:
        var = np.maximum(Ks - np.sum(V * V, axis=0), 0.0)
    else:
        var = Ks - V.T @ V
        var = 0.5 * (var + var.T)
    return mean, var


def nngp_regression(net, X_train, Y_train, X_test, noise=0.0, method="auto", full_cov=False):
    """Bayesian prediction with the NNGP prior of ``net`` (Lee et al. 2018, §2.3): the :func:`gp_posterior` of
    Y_train observed at X_train with noise variance ``noise``, at the rows of X_test. Only the kernel entries needed
    are propagated (train × train, test × train and the test diagonal, or test × test when ``full_cov``).
    Returns (mean, var) with var the posterior variances (T,) or, with ``full_cov``, the T × T covariance."""
    net = mlp_description("net", net)
    Xa = _inputs("X_train", X_train)
    Xt = _inputs("X_test", X_test)
    if Xt.shape[1] != Xa.shape[1]:
        raise ValueError(f"X_test must have as many columns as X_train ({Xa.shape[1]}), got {Xt.shape[1]}")
    Y = finite_array("Y_train", Y_train)
    if Y.ndim not in (1, 2) or Y.shape[0] != Xa.shape[0]:
        raise ValueError(f"Y_train must have shape ({Xa.shape[0]},) or ({Xa.shape[0]}, k) (a row for each row of "
                         f"X_train), got {Y.shape}")
    noise = real_scalar("noise", noise, lo=0.0)
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
    return gp_posterior(Ktr, Kx, Ks, Y, noise)


# ------------------------------------------------------------------------------------------------------------------
# The neural tangent kernel (Jacot et al. 2018; Lee et al. 2019)

PARAMETERIZATIONS = ("ntk", "standard")


def relu_derivative_kernel(c11, c12, c22):
    """E[relu′(z₁)relu′(z₂)] = (π − θ)/(2π), θ = arccos(c12/√(c11c22)): the degree-0 arc-cosine kernel (Cho & Saul
    2009, eq. (6) with n = 0). Where a variance vanishes θ = π/2 (the value 1/4 of independent signs)."""
    return _closed_pair("relu", c11, c12, c22)[1]


def erf_derivative_kernel(c11, c12, c22):
    """E[φ′(z₁)φ′(z₂)] for rmtnet's φ(h) = erf(ah), a = √π/2, φ′(h) = exp(−πh²/4):
    (4a²/π)/√((1 + 2a²c11)(1 + 2a²c22) − 4a⁴c12²) = 1/√((1 + πc11/2)(1 + πc22/2) − π²c12²/4) (a Gaussian integral;
    the derivative of :func:`erf_kernel` in c12, as the NTK needs: Σ̇ = ∂Σ/∂c12)."""
    return _closed_pair("erf", c11, c12, c22)[1]


def derivative_pair_kernel(act, c11, c12, c22, method="auto"):
    """E[φ′(z₁)φ′(z₂)], (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]): with σ_w² the factor Σ̇ by which the NTK is
    carried through a layer. The closed form its definition holds (relu, erf and linear);
    :func:`gaussian_pair_expectation` of φ′ (the activation's kinks are φ′'s jumps) otherwise or with
    ``method="quadrature"``."""
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


def _ntk_layers(net, X, method, parameterization):
    """[(Σ_ℓ, Θ_ℓ)] for ℓ = 1 … L on the rows of X (see :func:`ntk_kernel`)."""
    act, sw2, sb2 = net.activation, net.sigma_w ** 2, net.sigma_b ** 2
    S = _first_layer(net, X, X)
    S = 0.5 * (S + S.T)
    bias = 1.0 if net.sigma_b > 0 else 0.0
    T = S if parameterization == "ntk" else X @ X.T + bias      # standard: ∂h₁/∂W₁ gives x·x′, ∂h₁/∂b₁ gives 1
    out = [(S, T)]
    closed = method != "quadrature" and act.pair_kernels is not None
    if method == "closed_form" and not closed:
        raise ValueError(f"method='closed_form': no closed form for activation {act.name!r} "
                         f"(available: {_closed_names()})")
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


def ntk_kernel(net, X, method="auto", parameterization="ntk", return_all=False):
    """The infinite-width neural tangent kernel Θ_L (B × B) of ``net`` (an :class:`rmtnet.spectra.network.MLP` with a linear
    read-out h_L) on the rows of X (B × n₀): Θ(x, x′) = lim Σ_θ ∂h_L(x)/∂θ · ∂h_L(x′)/∂θ over every weight and bias,
    for one output unit (Jacot, Gabriel & Hongler, NeurIPS 2018; Arora et al., NeurIPS 2019, "On exact computation
    with an infinitely wide neural net"; Lee et al., NeurIPS 2019).

    Recursion (Jacot et al. 2018; Arora et al. 2019), with Σ_ℓ the NNGP kernel of :func:`nngp_kernel` and, for
    each pair (x, x′), (z, z′) ~ N(0, Σ_ℓ restricted to the pair):

        Σ̇_{ℓ+1} = σ_w² E[φ′(z)φ′(z′)],      Θ_{ℓ+1} = P_{ℓ+1} + Σ̇_{ℓ+1} ⊙ Θ_ℓ,

    where P is what the layer's own parameters add:

    * ``parameterization="ntk"`` (the default, as neural-tangents' ``stax.Dense``): W_ℓ = σ_w ω_ℓ/√n_{ℓ−1},
      b_ℓ = σ_b β_ℓ with ω, β ~ N(0, 1) the trained parameters. Then P_ℓ = Σ_ℓ and Θ₁ = Σ₁ = σ_w² XXᵀ/n₀ + σ_b²;
      the widths drop out.
    * ``"standard"``: W_ℓ (entries N(0, σ_w²/n_{ℓ−1})) and b_ℓ (N(0, σ_b²)) trained directly, as in a torch
      ``nn.Linear`` (:class:`rmtnet.nets.MLP`). Then P_ℓ = n_{ℓ−1} K_{ℓ−1} + 1[bias], K_{ℓ−1} = E[φ(z)φ(z′)] the
      post-activation kernel (K₀ = XXᵀ/n₀), so Θ₁ = XXᵀ + 1. The kernel grows linearly with the widths
      n₀ = X.shape[1], n₁ … n_{L−1} = ``net.widths[1:-1]`` (taken as they are), so the largest stable learning rate
      shrinks as 1/width (Sohl-Dickstein et al. 2020, arXiv 2001.07301); it is the limit of the empirical NTK over
      the widths' growth, read at the net's widths. The bias term is there only if the net has biases (σ_b > 0,
      as :meth:`rmtnet.nets.MLP.from_arch` builds them), and neural-tangents' ``parameterization="standard"`` with
      its widths ``s`` = 1 gives the same numbers.

    E[φφ] and E[φ′φ′] have closed forms for ReLU (arc-cosine kernels of degree 1 and 0), erf and linear; other
    activations use quadrature (:func:`gaussian_pair_expectation`, far slower per pair: for thousands of points
    use a closed-form activation). ``method`` as in :func:`nngp_kernel`. Closed forms are evaluated on X's library
    (NumPy or CuPy: a CuPy X gives CuPy kernels); quadrature runs on the host. ``return_all=True``: the list
    [(Σ₁, Θ₁), …, (Σ_L, Θ_L)]."""
    net = mlp_description("net", net)
    X = _inputs("X", X)
    method = _method(method)
    if not isinstance(parameterization, str) or parameterization not in PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {parameterization!r}")
    layers = _ntk_layers(net, X, method, parameterization)
    return layers if return_all else layers[-1][1]


def _spectral_factor(lam, tau, steps, eta_n):
    """(1 − e^{−λτ})/λ (gradient flow to time τ = ηt/N) or (1 − (1 − λη/N)^k)/λ (k steps of gradient descent), with
    their limits τ and kη/N at λ = 0; λ = 0 without a time (t = ∞) gives 1/λ."""
    if steps is not None:
        r = 1.0 - lam * eta_n
        small = np.abs(lam * eta_n) < 1e-8
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(small, steps * eta_n * (1 - 0.5 * (steps - 1) * lam * eta_n), (1.0 - r ** steps) / lam)
        return f
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(lam * tau) < 1e-12, tau * (1 - 0.5 * lam * tau), -np.expm1(-lam * tau) / lam)


def ntk_predict(net, X_train, Y_train, X_test, t=None, learning_rate=1.0, diag_reg=0.0, *, steps=None,
                diag_reg_absolute_scale=False, parameterization="ntk", method="auto"):
    """Mean and covariance, at the rows of X_test, of the infinite ensemble of infinitely wide networks ``net``
    trained on (X_train, Y_train) by gradient descent on the mean squared error (Lee et al., "Wide neural networks
    of any depth evolve as linear models under gradient descent", NeurIPS 2019, §2.3–2.4 and eq. (16)).

    Loss and time, as neural-tangents' ``predict.gradient_descent_mse_ensemble``: L = (1/2N) Σ (f(x_i) − y_i)² with
    N = Y_train.size, gradient flow dθ/dt = −η ∇L at ``learning_rate`` η, so the train outputs obey
    df/dt = −(η/N) Θ (f − Y). With τ = ηt/N, Θ = Θ(X, X) (+ the ridge below), Θ* = Θ(X*, X), K the NNGP kernel:

        mean = Θ* Θ⁻¹ (I − e^{−τΘ}) Y,
        cov  = K(X*, X*) + Θ* Θ⁻¹(I − e^{−τΘ}) K (I − e^{−τΘ})Θ⁻¹ Θ*ᵀ − [Θ* Θ⁻¹(I − e^{−τΘ}) K(X, X*) + transpose].

    ``t=None``: t = ∞, kernel regression, mean = Θ*Θ⁻¹Y (the NTK-GP of Lee et al. 2019; :func:`nngp_regression`
    is its Bayesian counterpart). ``steps=k`` instead of t: k steps of full-batch gradient descent at learning rate
    η, e^{−τΘ} → (I − ηΘ/N)^k (stable for η < 2N/λ_max(Θ)). The ensemble is over initialisations; its mean starts
    at 0 and its covariance at K(X*, X*).

    ``diag_reg`` ≥ 0 adds λI to Θ(X, X) before solving, λ = diag_reg·tr Θ/N_train (neural-tangents' default) or
    λ = diag_reg with ``diag_reg_absolute_scale=True``. ``parameterization``, ``method``: as in :func:`ntk_kernel`.
    Y_train (N_train,) or (N_train, k) (k outputs share the kernel). Returns (mean, cov): mean (T,) or (T, k), cov
    T × T (the same for every output); host NumPy, float64. Solves by the eigendecomposition of Θ(X, X) + λI; a
    matrix that is not numerically positive definite at t = ∞ raises ValueError (use diag_reg > 0)."""
    net = mlp_description("net", net)
    Xa = B.to_numpy(_inputs("X_train", X_train))
    Xt = B.to_numpy(_inputs("X_test", X_test))
    if Xt.shape[1] != Xa.shape[1]:
        raise ValueError(f"X_test must have as many columns as X_train ({Xa.shape[1]}), got {Xt.shape[1]}")
    Y = B.to_numpy(finite_array("Y_train", Y_train))
    if Y.ndim not in (1, 2) or Y.shape[0] != Xa.shape[0]:
        raise ValueError(f"Y_train must have shape ({Xa.shape[0]},) or ({Xa.shape[0]}, k) (a row for each row of "
                         f"X_train), got {Y.shape}")
    eta = real_scalar("learning_rate", learning_rate, lo=0.0, lo_open=True)
    reg = real_scalar("diag_reg", diag_reg, lo=0.0)
    if t is not None and steps is not None:
        raise ValueError("give either t (gradient flow) or steps (gradient descent), not both")
    if t is not None:
        t = real_scalar("t", t, lo=0.0)
    if steps is not None:
        steps = integer_at_least("steps", steps, lo=0)
    if not isinstance(parameterization, str) or parameterization not in PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS}, got {parameterization!r}")
    method = _method(method)
    n = Xa.shape[0]
    Sig, Th = _ntk_layers(net, np.concatenate([Xa, Xt]), method, parameterization)[-1]
    Th_tr, Th_x = Th[:n, :n], Th[n:, :n]
    K_tr, K_x, K_te = Sig[:n, :n], Sig[n:, :n], Sig[n:, n:]
    lam_reg = reg if diag_reg_absolute_scale else reg * np.trace(Th_tr) / n
    A = Th_tr + lam_reg * np.eye(n)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"diag_reg = {diag_reg!r} makes Θ(X_train, X_train) + λI overflow float64 (λ = {lam_reg!r}); "
                         f"give a smaller diag_reg")
    lam, V = linalg.eigh(A)
    if t is None and steps is None:
        if lam[0] <= 10 * n * np.finfo(float).eps * max(lam[-1], 1e-300):
            raise ValueError(f"Θ(X_train, X_train) + diag_reg is not numerically positive definite (smallest "
                             f"eigenvalue {lam[0]:.3g}); use distinct inputs or diag_reg > 0")
        f = 1.0 / lam
    else:
        if lam[0] < -1e-10 * lam[-1]:
            raise ValueError(f"Θ(X_train, X_train) + diag_reg has a negative eigenvalue {lam[0]:.3g}")
        lam = np.maximum(lam, 0.0)
        f = _spectral_factor(lam, None if t is None else eta * t / Y.size, steps, eta / Y.size)
    M = (V * f) @ V.T                                                 # Θ⁻¹(I − e^{−τΘ}) or its discrete analogue
    P = Th_x @ M                                                      # T × N
    mean = P @ Y
    cov = K_te + P @ K_tr @ P.T - P @ K_x.T - K_x @ P.T
    return mean, 0.5 * (cov + cov.T)

# ------------------------------------------------------------------------------------------------------------------
# Wide-network Monte Carlo

def _count(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def sample_nngp_kernel(net, X, width=None, n_samples=1, seed=None, backend=None, sampler="weights",
                       return_all=False, return_samples=False, max_bytes=2 ** 28):
    """Monte Carlo of the NNGP kernel: draw random networks, push the rows of X through them and return the empirical
    pre-activation Gram h_L h_Lᵀ/n_L (B × B, host NumPy, float64) averaged over ``n_samples`` networks.

    Widths: the input width is n₀ = X.shape[1]; the layer widths n₁ … n_L are ``net.scaled_widths(width)[1:]``
    (``width`` for a square net; the net's own widths when ``width`` is None). Weights W_ℓ ∈ ℝ^{n_ℓ×n_{ℓ-1}} are
    Gaussian with entries N(0, σ_w²/n_{ℓ-1}) or, for ``net.weights == "orthogonal"``, σ_w times a Haar orthogonal
    matrix (a scaled Haar partial isometry where n_ℓ ≠ n_{ℓ-1}, e.g. the input layer;
    :func:`rmtnet.spectra.sampling.montecarlo.layer_weights`); biases N(0, σ_b²), shared by all inputs.

    sampler: ``"weights"`` materialises every W_ℓ (cost O(n²) per layer, batched over samples within ``max_bytes``).
    ``"marginal"`` (Gaussian weights only) draws the same joint law of (h₁, …, h_L) on the B inputs without forming
    W_ℓ: given x_{ℓ-1} (B × n_{ℓ-1}), the columns of x_{ℓ-1}W_ℓᵀ are iid N(0, σ_w² x_{ℓ-1}x_{ℓ-1}ᵀ/n_{ℓ-1}), drawn as
    M Z with M Mᵀ = x_{ℓ-1}x_{ℓ-1}ᵀ (eigendecomposition of the B × B Gram) and Z iid N(0, σ_w²/n_{ℓ-1}) — cost
    O(n B²) per layer instead of O(n²), so hundreds of wide networks are cheap (tight Monte Carlo error bars).

    ``return_all``: the list of the L per-layer Grams h_ℓ h_ℓᵀ/n_ℓ. ``return_samples``: per-sample Grams (leading
    axis of length n_samples) instead of their mean. Runs on NumPy or CuPy (``backend``), in float64."""
    net = mlp_description("net", net)
    X = _inputs("X", X)
    S = _count("n_samples", n_samples)
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if sampler == "marginal" and net.weights != "gaussian":
        raise ValueError("sampler='marginal' needs net.weights == 'gaussian'; use sampler='weights'")
    if width is not None:
        width = _count("width", width)
    from .sampling.random_matrices import layer_weights
    widths = (X.shape[1],) + tuple(net.scaled_widths(width)[1:])
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    phi = net.activation.phi
    L, nb = net.depth, X.shape[0]
    x0 = xp.asarray(X, dtype=xp.float64)
    if sampler == "weights":
        per_sample = 3 * 8 * max(a * b for a, b in zip(widths[:-1], widths[1:]))
    else:
        per_sample = 6 * 8 * nb * max(widths)
    batch = int(max(1, min(S, max_bytes // per_sample)))
    grams = [[] for _ in range(L)]
    for start in range(0, S, batch):
        s = min(batch, S - start)
        x = xp.broadcast_to(x0, (s,) + x0.shape)                          # (s, B, n_{ℓ-1})
        for ell, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:]), start=1):
            if sampler == "weights":
                w = layer_weights(net.weights, n_out, n_in, net.sigma_w, rng, backend, batch=s)
                h = x @ xp.swapaxes(w, -1, -2)                            # (s, B, n_out) = x Wᵀ
                del w
            else:
                lam, u = xp.linalg.eigh(x @ xp.swapaxes(x, -1, -2))      # x xᵀ = U Λ Uᵀ (s, B, B)
                m = u * xp.sqrt(xp.maximum(lam, 0.0))[..., None, :]       # M Mᵀ = x xᵀ
                z = rng.standard_normal((s, nb, n_out), dtype="float64") * (net.sigma_w / n_in ** 0.5)
                h = m @ z                                                 # (s, B, n_out), law of x Wᵀ
            if net.sigma_b > 0:
                h = h + net.sigma_b * rng.standard_normal((s, 1, n_out), dtype="float64")
            if return_all or ell == L:
                grams[ell - 1].append(B.to_numpy(h @ xp.swapaxes(h, -1, -2)) / n_out)
            if ell < L:
                x = phi(h)
    out = [np.concatenate(g, axis=0) for g in grams if g]
    if not return_samples:
        out = [g.mean(axis=0) for g in out]
    return out if return_all else out[-1]
