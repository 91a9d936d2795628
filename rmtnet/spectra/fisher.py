"""Limit spectra of the one-sample Fisher information / NTK of a deep random network (Karakida, Akaho & Amari,
"Universal statistics of Fisher information in deep neural networks: mean field approach", AISTATS 2019,
arXiv 1806.01316; Hayase & Karakida, "The spectrum of Fisher information of deep networks achieving dynamical
isometry", AISTATS 2021, arXiv 2006.07814).

Convention: the network of :mod:`rmtnet.spectra.network` (square layers: every n_ℓ equal), its L weight matrices W₁ … W_L all
trained, the output x_L = φ(h_L) (``last_activation=True``) or h_L (``False``). For one input x₀ the NTK of the
output with respect to every weight, Θ = Σ_ℓ q̂_{ℓ-1} B_ℓ B_ℓᵀ (B_ℓ = ∂x_L/∂h_ℓ, q̂_ℓ = ‖x_ℓ‖²/n), is the dual of
the Fisher information: they share their nonzero eigenvalues. It obeys (Hayase & Karakida 2021, eq. (9))

    Θ₁ = q̂₀ I,      Θ_{ℓ+1} = q̂_ℓ I + W_{ℓ+1} D_ℓ Θ_ℓ D_ℓ W_{ℓ+1}ᵀ,      Θ = D_L Θ_L D_L  (or Θ_L without a last
                                                                                        activation),

and asymptotic freeness of (W_ℓ, W_ℓᵀ) and the D_ℓ (Collins & Hayase, CMP 2023) turns it into a recursion of laws:

    μ₁ = δ_{q̂₀},      μ_{ℓ+1} = (x ↦ q̂_ℓ + σ_w² x)_* ( ν_ℓ ⊠ μ_ℓ [⊠ MP(1) for Gaussian weights] ),

with ν_ℓ the law of φ′(h_ℓ)², h_ℓ ~ N(0, q_ℓ), at the layer's own mean-field variance. The shift makes every level a
new law (no S-transform product closes the recursion), so each μ_ℓ is tabulated (:func:`~rmtnet.spectra.measures.
tabulate`, one tanh-sinh panel per band of μ_ℓ, 100 initial steps each) before it enters the next ⊠: one density
table per layer instead of nested Newton solves. For hard-tanh with orthogonal weights the tables agree with the
untabulated recursion (Bernoulli(p) ⊠ μ by free compression, Nica & Speicher 2006) to a median 1.5e-4 and at
worst 1.0e-3 relative on the inner 80 % of every band at depth 8 (1.5e-3 at 5 % from an edge); the atoms and the
moments are exact. Moments stay
exact (series of the factors' moments, then the affine binomial: :mod:`rmtnet.spectra.series`), which is the
independent check of the density. m₁(μ_{ℓ+1}) = q̂_ℓ + σ_w² m₁(ν_ℓ) m₁(μ_ℓ) grows linearly in depth at criticality
(Karakida et al. 2019); gradient descent on the squared loss diverges for learning rates above 2/λ_max (Hayase &
Karakida 2021), λ_max the top of the support.

The NTK over many inputs (Fan & Wang 2020) is in :mod:`rmtnet.spectra.ntk`.
"""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from . import series
from rmtnet._validation import boolean, integer_at_least, real_scalar
from .network import check_network, warn_collapsed
from .free import free_mult_scaled
from .jacobian import layer_d2_law
from .laws import MarchenkoPastur
from .measures import Affine, PointMasses, tabulate
from .meanfield import variance_profile
from .stability import learning_rate_border, squared_loss_factor

__all__ = ["fisher_law", "fisher_moments", "critical_learning_rate"]


def _square(net, what):
    net = check_network("net", net)
    if not net.square:
        raise ValueError(f"{what} needs equal layer widths (a square network): net has widths {net.widths}")
    return net


def _with_input(net, q0):
    """The same network fed an input with ‖x₀‖²/n₀ = q0 (q_ℓ recomputed by the mean-field recursion). A q0 whose
    variances q_ℓ or q̂_ℓ come out subnormal (below 2.2e-308, where a law scaled by them has an infinite density)
    is refused naming q0."""
    if q0 is None:
        return net
    q0 = real_scalar("q0", q0, lo=0.0, lo_open=True)
    q = variance_profile(net.activation, net.sigma_w, net.sigma_b, q0, net.depth)
    out = replace(net, q0=q0, q=q)
    tiny = np.finfo(float).tiny
    if any(0 < v < tiny for v in (q0,) + tuple(q) + tuple(out.post_activation_moments())):
        raise ValueError(f"q0 = {q0!r} makes a mean-field variance of net subnormal (below {tiny:.3g}); give a larger "
                         "q0")
    return out


def _fisher_levels(net):
    """Per layer ℓ = 1 … L: (q̂_{ℓ-1}, law(φ′(h_ℓ)²) or None where D_ℓ is absent)."""
    qhat = net.post_activation_moments()
    out = []
    for ell, q in enumerate(net.q, start=1):
        d2 = layer_d2_law(net.activation, q) if (ell < net.depth or net.last_activation) else None
        out.append((qhat[ell - 1], d2))
    return out


_TABLE_N0 = 100               # initial tanh-sinh steps per band of each level's table (tabulate's n0): one per band


def fisher_law(net, q0=None, return_all=False):
    """Limit spectral law of the one-sample NTK / Fisher dual Θ of ``net`` (square, an :func:`rmtnet.spectra.network.mlp`) by the
    Hayase–Karakida recursion (module docstring). ``q0`` overrides the input's ‖x₀‖²/n₀ (then every q_ℓ follows).

    Each level is tabulated before the next ⊠; purely atomic levels (linear or ReLU–orthogonal nets at small depth)
    stay exact point masses. The top of the support is λ_max; :func:`critical_learning_rate` gives 2/λ_max.

    ``return_all=True`` returns the list of laws [μ₁, …, μ_L] in one pass of the recursion: μ_ℓ (ℓ < L) is the law of
    the network cut after layer ℓ with a linear read-out (``last_activation=False``) — the same q_ℓ and q̂_ℓ, since
    they depend only on the layers below — and μ_L is this net's own law. A sweep over depth thus costs one deep
    recursion instead of one per depth.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network description.
    q0 : float, optional
        ‖x₀‖²/n₀ of the input (default: the description's).
    return_all : bool
        Whether to return the laws of every depth 1 … L.

    Returns
    -------
    Measure or list of Measure

    Examples
    --------
    >>> from rmtnet.spectra.network import mlp
    >>> fisher_law(mlp(3, 10, weights="orthogonal", activation="linear")).atoms()    # Θ = L·q₀·I
    (array([3.]), array([1.]))
    """
    net = _square(net, "fisher_law")
    return_all = boolean("return_all", return_all)
    net = _with_input(net, q0)
    s2 = float(net.sigma_w) ** 2
    mp = MarchenkoPastur(1.0) if net.weights == "gaussian" else None
    levels = _fisher_levels(net)
    mu = PointMasses([levels[0][0]], [1.0])                         # μ₁ = δ_{q̂₀}
    laws = [mu]
    for (qhat, _), (_, d2) in zip(levels[1:], levels[:-1]):
        core = free_mult_scaled([f for f in (d2, mp, mu) if f is not None], s2)
        mu = tabulate(Affine(core, 1.0, qhat), n0=_TABLE_N0)
        laws.append(mu)
    d2_last = levels[-1][1]
    if d2_last is not None:
        laws[-1] = free_mult_scaled([d2_last, mu])
    warn_collapsed("the Fisher/NTK law", net, _collapsed_levels(levels, d2_last))
    return laws if return_all else laws[-1]


def _collapsed_levels(levels, d2_last):
    """[ℓ] if the recursion's last law is δ₀ (every level's q̂ is 0 or is cut by a D² = δ₀ above it), else []."""
    is_zero = lambda d2: d2 is not None and isinstance(d2, PointMasses) and not np.any(d2.atoms()[0])   # noqa: E731
    zero = levels[0][0] == 0
    for (qhat, _), (_, d2) in zip(levels[1:], levels[:-1]):
        zero = (zero or is_zero(d2)) and qhat == 0
    return [len(levels)] if zero or is_zero(d2_last) else []


def fisher_moments(net, K=4, q0=None):
    """Exact m₁ … m_K of :func:`fisher_law`, by the same recursion on moment sequences (S-transform series for ⊠,
    the binomial theorem for the shift), without any density: the independent check of the tabulated law.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network description.
    K : int
        The number of moments.
    q0 : float, optional
        ‖x₀‖²/n₀ of the input (default: the description's).

    Returns
    -------
    ndarray
        m₁ … m_K.

    Examples
    --------
    >>> from rmtnet.spectra.network import mlp
    >>> fisher_moments(mlp(3, 10, weights="orthogonal", activation="linear"), K=2)
    array([3., 9.])
    """
    net = _square(net, "fisher_moments")
    want = integer_at_least("K", K, 1)
    net = _with_input(net, q0)
    s2 = float(net.sigma_w) ** 2
    levels = _fisher_levels(net)
    warn_collapsed("the Fisher/NTK law", net, _collapsed_levels(levels, levels[-1][1]))
    K = max(want, 2)

    def moments(mu):
        return np.array([mu.moment(k) for k in range(1, K + 1)])

    try:
        mp = moments(MarchenkoPastur(1.0)) if net.weights == "gaussian" else None
        m = levels[0][0] ** np.arange(1, K + 1, dtype=float)
        for (qhat, _), (_, d2) in zip(levels[1:], levels[:-1]):
            facs = [f for f in (moments(d2) if d2 is not None else None, mp, m) if f is not None]
            m = series.affine_moments(series.gram_product_moments(facs, K), s2, qhat)
        if levels[-1][1] is not None:
            m = series.gram_product_moments([moments(levels[-1][1]), m], K)
    except OverflowError as exc:                        # a factor's moment of order ≤ K beyond float64
        raise OverflowError(f"fisher_moments(K={want}): a factor's moments up to order K are not representable in "
                            f"float64 ({exc})") from None
    if not np.all(np.isfinite(m)):
        raise OverflowError(f"fisher_moments(K={want}): m_1 … m_K of the law of net (q0 = {net.q0!r}, q̂ = "
                            f"{tuple(float(v) for v in net.post_activation_moments())}) are not representable in "
                            f"float64 (got {m[:want]}); lower K or bring q0 nearer 1")
    return m[:want]


def critical_learning_rate(net, q0=None, loss="mse"):
    """The learning-rate border ("red line") of Hayase & Karakida (AISTATS 2021): 2/λ_max of the Fisher/NTK law for
    the loss ``"mse"`` (1/λ_max for ``"mean_squared"``), λ_max the top of its support. Gradient descent above it is
    unstable (:mod:`rmtnet.spectra.stability`).

    The law is that of Θ = Θ_SP/n, Θ_SP = JJᵀ the n × n NTK of one input with respect to the weights of the torch
    network in the standard parameterisation (:meth:`rmtnet.nets.MLP.from_description`, σ_b = 0). Trained on that
    one input with the loss L = c·mean over its n outputs of (f − y)², ∇²L's Gauss–Newton part is (2c/n)JᵀJ, whose
    top is 2c·λ_max(Θ): η* = 1/(c·λ_max): 2/λ_max for the default ``"mse"`` (c = ½, rmtnet's and
    neural-tangents'), 1/λ_max for ``"mean_squared"`` (c = 1). Where the law is δ₀ (an
    input with q0 = 0, e.g. ReLU's fixed point in the ordered phase) no learning rate diverges: ValueError naming
    net and q0.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network description.
    q0 : float, optional
        ‖x₀‖²/n₀ of the input (default: the description's).
    loss : {"mse", "mean_squared"}, default "mse"
        The loss convention.

    Returns
    -------
    float
        η* = 1/(c·λ_max).

    Examples
    --------
    >>> from rmtnet.spectra.network import mlp
    >>> net = mlp(3, 10, weights="orthogonal", activation="linear")            # Θ = 3·I
    >>> critical_learning_rate(net), critical_learning_rate(net, loss="mean_squared")
    (0.6666666666666666, 0.3333333333333333)
    """
    squared_loss_factor(loss)                         # the convention checked before the law is computed
    with warnings.catch_warnings():                   # δ₀ raises below, naming the cause
        warnings.filterwarnings("ignore", message="the Fisher/NTK law of net is δ₀", category=UserWarning)
        law = fisher_law(net, q0)
    top = law.hull()[1]
    if not top > 0:
        net = _with_input(net, q0)
        raise ValueError(f"the Fisher/NTK law of net is δ₀ (q0 = {net.q0!r}: every q̂_ℓ is 0), so gradient descent "
                         "diverges at no learning rate; give a q0 > 0")
    return learning_rate_border(top, 1, 1, loss)
