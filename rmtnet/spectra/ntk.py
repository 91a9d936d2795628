"""Limit spectra of the one-sample Fisher information / NTK (Hayase & Karakida 2021) and of the conjugate kernel over
data (Fan & Wang 2020) of deep random networks (REFERENCE §2; seed 002 §2).

**Fisher / one-sample NTK.** For one input x₀ and the network of :mod:`rmtnet.arch` (square layers), the NTK of the
output with respect to all weights, Θ = Σ_ℓ q̂_{ℓ-1} B_ℓ B_ℓᵀ (B_ℓ = ∂x_L/∂h_ℓ, q̂_ℓ = ‖x_ℓ‖²/n), is the dual of the
Fisher information: they share their nonzero eigenvalues. It obeys (Hayase & Karakida 2021, eq. (9))

    Θ₁ = q̂₀ I,      Θ_{ℓ+1} = q̂_ℓ I + W_{ℓ+1} D_ℓ Θ_ℓ D_ℓ W_{ℓ+1}ᵀ,      Θ = D_L Θ_L D_L  (or Θ_L without a last
                                                                                        activation),

and asymptotic freeness of (W_ℓ, W_ℓᵀ) and the D_ℓ (Collins & Hayase 2023) turns it into a recursion of laws:

    μ₁ = δ_{q̂₀},      μ_{ℓ+1} = (x ↦ q̂_ℓ + σ_w² x)_* ( ν_ℓ ⊠ μ_ℓ [⊠ MP(1) for Gaussian weights] ),

with ν_ℓ the law of φ′(h_ℓ)², h_ℓ ~ N(0, q_ℓ), at the layer's own mean-field variance. The shift makes every level a
new law (no S-transform product closes the recursion), so each μ_ℓ is tabulated (:func:`~rmtnet.spectra.measures.
tabulate`) before it enters the next ⊠: one density table per layer instead of nested Newton solves. Moments stay
exact (series of the factors' moments, then the affine binomial), which is the independent check of the density.
m₁(μ_{ℓ+1}) = q̂_ℓ + σ_w² m₁(ν_ℓ) m₁(μ_ℓ) grows linearly in depth at criticality; gradient descent on the squared loss
diverges for learning rates above 2/λ_max (seed 002's "red line"), λ_max the top of the support.

**Conjugate kernel** (Fan & Wang 2020, Theorem 3.4). Data X₀ ∈ ℝ^{d₀×n} with iid N(0, 1) entries, X_ℓ = φ̃(W_ℓ X_{ℓ-1}),
W_ℓ ∈ ℝ^{d_ℓ×d_{ℓ-1}} Gaussian with entries N(0, 1/d_{ℓ-1}), φ̃ normalised (E φ̃(ξ) = 0, E φ̃(ξ)² = 1, ξ ~ N(0, 1),
:func:`normalised_activation`). The CK K_ℓ = X_ℓᵀX_ℓ/d_ℓ (n × n) has, as n, d_ℓ → ∞ with γ_ℓ = n/d_ℓ fixed,

    μ₀ = MP(γ₀),      μ_ℓ = MP(γ_ℓ) ⊠ ((1 - b) + b·μ_{ℓ-1})_*,      b = (E φ̃′(ξ))²,

so m₂(μ₁) = 1 + γ₁ + b²γ₀.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ._checks import real_scalar
from .free import free_mult_scaled
from .jacobian import layer_d2_law
from .laws import MarchenkoPastur
from .measures import Affine, Measure, PointMasses, tabulate
from .meanfield import Activation, activation, gaussian_expectation, second_moment, variance_profile

__all__ = ["normalised_activation", "fisher_law", "fisher_moments", "critical_learning_rate", "ck_law",
           "ck_moments"]


# ------------------------------------------------------------------------------------------------------------------
# Fisher / one-sample NTK

def _square(net, what):
    if not net.square:
        raise ValueError(f"{what} needs equal layer widths (a square network), got widths {net.widths}")


def _with_input(net, q0):
    """The same network fed an input with ‖x₀‖²/n₀ = q0 (q_ℓ recomputed by the mean-field recursion)."""
    if q0 is None:
        return net
    q0 = real_scalar("q0", q0, lo=0.0, lo_open=True)
    q = variance_profile(net.activation, net.sigma_w, net.sigma_b, q0, net.depth)
    return replace(net, q0=q0, q=q)


def _fisher_levels(net):
    """Per layer ℓ = 1 … L: (q̂_{ℓ-1}, law(φ′(h_ℓ)²) or None where D_ℓ is absent)."""
    qhat = net.post_activation_moments()
    out = []
    for ell, q in enumerate(net.q, start=1):
        d2 = layer_d2_law(net.activation, q) if (ell < net.depth or net.last_activation) else None
        out.append((qhat[ell - 1], d2))
    return out


def fisher_law(net, q0=None) -> Measure:
    """Limit spectral law of the one-sample NTK / Fisher dual Θ of ``net`` (square, an :func:`rmtnet.arch.mlp`) by the
    Hayase–Karakida recursion (module docstring). ``q0`` overrides the input's ‖x₀‖²/n₀ (then every q_ℓ follows).

    Each level is tabulated before the next ⊠; purely atomic levels (linear or ReLU–orthogonal nets at small depth)
    stay exact point masses. The top of the support is λ_max; :func:`critical_learning_rate` gives 2/λ_max."""
    _square(net, "fisher_law")
    net = _with_input(net, q0)
    s2 = float(net.sigma_w) ** 2
    mp = MarchenkoPastur(1.0) if net.weights == "gaussian" else None
    levels = _fisher_levels(net)
    mu = PointMasses([levels[0][0]], [1.0])                         # μ₁ = δ_{q̂₀}
    for (qhat, _), (_, d2) in zip(levels[1:], levels[:-1]):
        core = free_mult_scaled([f for f in (d2, mp, mu) if f is not None], s2)
        mu = tabulate(Affine(core, 1.0, qhat))
    d2_last = levels[-1][1]
    return mu if d2_last is None else free_mult_scaled([d2_last, mu])


def fisher_moments(net, K=4, q0=None):
    """Exact m₁ … m_K of :func:`fisher_law`, by the same recursion on moment sequences (S-transform series for ⊠,
    the binomial theorem for the shift), without any density: the independent check of the tabulated law."""
    from . import series
    _square(net, "fisher_moments")
    net = _with_input(net, q0)
    s2 = float(net.sigma_w) ** 2
    levels = _fisher_levels(net)
    K = max(int(K), 2)

    def moments(mu):
        return np.array([mu.moment(k) for k in range(1, K + 1)])

    mp = moments(MarchenkoPastur(1.0)) if net.weights == "gaussian" else None
    m = levels[0][0] ** np.arange(1, K + 1, dtype=float)
    for (qhat, _), (_, d2) in zip(levels[1:], levels[:-1]):
        facs = [(f, 1.0) for f in (moments(d2) if d2 is not None else None, mp, m) if f is not None]
        prod = series.product_moments(facs, K) if len(facs) > 1 else m
        m = _affine_moments(prod, s2, qhat)
    if levels[-1][1] is not None:
        m = series.product_moments([(moments(levels[-1][1]), 1.0), (m, 1.0)], K)
    return m


def _affine_moments(m, a, b):
    """Moments of b + aX from those of X (m[k-1] = E X^k): binomial expansion."""
    from math import comb
    K = len(m)
    full = np.concatenate([[1.0], m])
    return np.array([sum(comb(k, j) * a ** j * full[j] * b ** (k - j) for j in range(k + 1)) for k in range(1, K + 1)])


def critical_learning_rate(net, q0=None):
    """2/λ_max of the Fisher/NTK law: gradient descent on the squared loss diverges above it (seed 002)."""
    law = fisher_law(net, q0)
    return 2.0 / law.hull()[1]


# ------------------------------------------------------------------------------------------------------------------
# Conjugate kernel

def normalised_activation(act) -> Activation:
    """φ̃ = (φ - E φ(ξ))/√Var φ(ξ), ξ ~ N(0, 1): centred with unit second moment (Fan & Wang's Assumption 3.1)."""
    act = activation(act)
    mean = gaussian_expectation(act.phi, 1.0, act.breakpoints)
    var = second_moment(act, 1.0) - mean ** 2
    if not var > 1e-14:
        raise ValueError(f"activation {act.name!r} is constant under N(0, 1); it cannot be normalised")
    sd = float(np.sqrt(var))
    phi, dphi = act.phi, act.dphi
    return Activation(f"normalised {act.name}", lambda h: (phi(h) - mean) / sd, lambda h: dphi(h) / sd,
                      second_moment=None, breakpoints=act.breakpoints)


def _ck_setup(net, n_data):
    if isinstance(n_data, bool) or int(n_data) != n_data or n_data < 1:
        raise ValueError(f"n_data must be a positive integer, got {n_data!r}")
    if net.weights != "gaussian":
        raise ValueError(f"ck_law is Fan & Wang's Gaussian-weight result: weights must be 'gaussian', got "
                         f"{net.weights!r}")
    if net.sigma_w != 1.0 or net.sigma_b != 0.0:
        raise ValueError(f"ck_law uses Fan & Wang's scaling: sigma_w must be 1 and sigma_b 0, got sigma_w="
                         f"{net.sigma_w}, sigma_b={net.sigma_b}")
    act = normalised_activation(net.activation)
    b = gaussian_expectation(act.dphi, 1.0, act.breakpoints) ** 2
    gammas = [int(n_data) / d for d in net.widths]
    return b, gammas


def ck_law(net, n_data, input_law=None) -> Measure:
    """Limit spectral law of the conjugate kernel X_Lᵀ X_L/d_L over ``n_data`` inputs (Fan & Wang map, module
    docstring), for ``net`` with Gaussian weights, σ_w = 1, σ_b = 0 and its activation normalised
    (:func:`normalised_activation`); γ_ℓ = n_data/d_ℓ from the net's widths. ``input_law``: the law of X₀ᵀX₀/d₀,
    default MP(γ₀) (iid Gaussian data)."""
    b, gammas = _ck_setup(net, n_data)
    mu = MarchenkoPastur(gammas[0]) if input_law is None else input_law
    if not isinstance(mu, Measure):
        raise ValueError(f"input_law must be a Measure, got {type(mu).__name__}")
    for ell, g in enumerate(gammas[1:], start=1):
        mu = free_mult_scaled([MarchenkoPastur(g), Affine(mu, b, 1.0 - b)])
        if ell < len(gammas) - 1:                       # the next level's factor: a table, not a nested solve
            mu = tabulate(mu)
    return mu


def ck_moments(net, n_data, K=4):
    """Exact m₁ … m_K of :func:`ck_law` (iid Gaussian data) from moment sequences alone."""
    from . import series
    b, gammas = _ck_setup(net, n_data)
    K = max(int(K), 2)
    m = np.array([MarchenkoPastur(gammas[0]).moment(k) for k in range(1, K + 1)])
    for g in gammas[1:]:
        mp = np.array([MarchenkoPastur(g).moment(k) for k in range(1, K + 1)])
        m = series.product_moments([(mp, 1.0), (_affine_moments(m, b, 1.0 - b), 1.0)], K)
    return m
