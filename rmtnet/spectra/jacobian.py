"""Limit spectrum of the input–output Jacobian JJᵀ of a deep random network (Pennington, Schoenholz & Ganguli
2017; AISTATS 2018).

With J = D_L W_L ⋯ D_1 W_1 (``net.last_activation``; otherwise without D_L), asymptotic freeness of the D_ℓ and the
W_ℓ (Collins & Hayase, Comm. Math. Phys. 2023, arXiv 2103.13466) gives, for square layers,

    μ_{JJᵀ} = ⊠_ℓ ( law(D_ℓ²) ⊠ law(W_ℓᵀ W_ℓ) ),      S_{JJᵀ} = Π_ℓ S_{D_ℓ²} S_{W_ℓW_ℓᵀ},

where law(D_ℓ²) is the law of φ′(h)², h ~ N(0, q_ℓ), at the layer's own mean-field variance q_ℓ (not only at q*),
and law(WᵀW) is σ_w² MP(1) for Gaussian weights, δ_{σ_w²} for orthogonal ones. A non-square layer
n_ℓ ≠ n_{ℓ-1} (ratio r = n_ℓ/n_{ℓ-1}) acts on the n_{ℓ-1}-dimensional law K by K ⊠ law(W_ℓᵀW_ℓ) — now
(σ_w² r)·MP(1/r) or the law of σ_w² r·(a rank-min(1, r) projection) — and then moves it to n_ℓ dimensions
(:class:`~rmtnet.spectra.measures.OtherGram`: the nonzero eigenvalues of W K Wᵀ and K^{1/2} WᵀW K^{1/2} agree).
Runs of square layers are one flat ⊠ product (one Newton system); each width change nests the product so far.
The nested product is tabulated first (:func:`~rmtnet.spectra.measures.tabulate`: its density on tanh-sinh nodes,
its moments still exact), so that the next level sees a closed-form Cauchy transform: without it every evaluation
at level ℓ runs a full continuation at level ℓ − 1, a cost exponential in the number of width changes. The price
is the table's O(h²) interpolation error: with n0 = 800 nodes per band, the density of a three-change ReLU network
agrees with the untabulated law to 2e-5 relative and its band edges to 1e-4. Square networks are one product and
are not tabulated.
"""
from __future__ import annotations

import numpy as np

from .free import FreeProduct, free_mult_scaled
from .laws import MarchenkoPastur
from .measures import Affine, Measure, OtherGram, PointMasses, tabulate
from .meanfield import d2_law
from .network import check_network, dead_layers, warn_collapsed

__all__ = ["jacobian_law", "weight_gram_law", "layer_d2_law", "jacobian_moments"]


def weight_gram_law(weights, sigma_w, ratio=1.0) -> Measure:
    """Law of W_ℓᵀ W_ℓ (n_{ℓ-1}×n_{ℓ-1}) for W_ℓ ∈ ℝ^{n_ℓ×n_{ℓ-1}} with entries of variance σ_w²/n_{ℓ-1} and
    r = n_ℓ/n_{ℓ-1}: Gaussian → (σ_w² r)·MP(1/r); orthogonal → δ_{σ_w² r} (r ≥ 1) or (1 - r)δ₀ + r δ_{σ_w²}.

    Parameters
    ----------
    weights : {"gaussian", "orthogonal"}
        The weight ensemble.
    sigma_w : float
        σ_w.
    ratio : float, default 1.0
        r = n_ℓ/n_{ℓ−1}.

    Returns
    -------
    Measure
        A :class:`~rmtnet.spectra.laws.MarchenkoPastur` or :class:`~rmtnet.spectra.measures.PointMasses`.

    Examples
    --------
    Gaussian, σ_w² = 2, square: 2·MP(1), m₂ = 4·2; orthogonal, halving the width: ½δ₀ + ½δ₁:

    >>> print(f"{weight_gram_law('gaussian', 2 ** 0.5).moment(2):.6f}")
    8.000000
    >>> locs, masses = weight_gram_law("orthogonal", 1.0, ratio=0.5).atoms()
    >>> print(locs, masses)
    [0. 1.] [0.5 0.5]
    """
    s2 = float(sigma_w) ** 2
    if weights == "gaussian":
        return MarchenkoPastur(1.0 / ratio, scale=s2 * ratio)
    if weights == "orthogonal":
        if ratio >= 1:
            return PointMasses([s2 * ratio], [1.0])
        return PointMasses([0.0, s2], [1.0 - ratio, ratio])
    raise ValueError(f"weights must be 'gaussian' or 'orthogonal', got {weights!r}")


def layer_d2_law(act, q) -> Measure:
    """law(D²) = law of φ′(h)², h ~ N(0, q); δ_{φ′(0)²} at q = 0 (the ordered phase's collapsed signal).

    Parameters
    ----------
    act : Activation
        From :func:`rmtnet.spectra.activations.activation`.
    q : float
        The pre-activation variance q ≥ 0.

    Returns
    -------
    Measure
        The law of φ′(h)².

    Examples
    --------
    ReLU: φ′(h)² is 0 or 1 with probability ½ each; tanh at q = 0: δ₁:

    >>> from rmtnet.spectra import activations
    >>> print(*layer_d2_law(activations.activation("relu"), 1.0).atoms())
    [0. 1.] [0.5 0.5]
    >>> print(*layer_d2_law(activations.activation("tanh"), 0.0).atoms())
    [1.] [1.]
    """
    if q == 0:
        return PointMasses([float(np.asarray(act.dphi(np.zeros(1)))[0]) ** 2], [1.0])
    return d2_law(act, q)


def _layers(net):
    """Per layer ℓ: (ratio r_ℓ, law(W_ℓᵀW_ℓ), law(D_ℓ²) or None). Equal q_ℓ share one D² object, so that the
    ⊠ engine merges them into a power (one Newton unknown instead of L)."""
    cache = {}
    out = []
    for ell, (r, q) in enumerate(zip(net.ratios, net.q), start=1):
        d2 = None
        if ell < net.depth or net.last_activation:
            key = float(q)
            if key not in cache:
                cache[key] = layer_d2_law(net.activation, q)
            d2 = cache[key]
        out.append((r, weight_gram_law(net.weights, net.sigma_w, r), d2))
    return out


def jacobian_law(net) -> Measure:
    """The limit spectral law of JJᵀ for the network ``net`` (an :func:`rmtnet.spectra.network.mlp`), on the output space
    ℝ^{n_L}; see the module docstring for the convention and the product formula. A lazy :class:`Measure`.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (:func:`rmtnet.spectra.network.mlp`): depth, widths, weights, σ_w, σ_b, activation, q_ℓ.

    Returns
    -------
    Measure
        The law of JJᵀ's eigenvalues.

    Examples
    --------
    A depth-2 ReLU network at criticality (Gaussian weights, σ_w² = 2) keeps ReLU's atom ½δ₀; its m₂ = 5 is the
    exact (Bernoulli(½) ⊠ 2·MP(1))^{⊠2} value of :func:`rmtnet.spectra.symbolic.free_mult_moments`:

    >>> from rmtnet.spectra import network
    >>> law = jacobian_law(network.mlp(2, 100, sigma_w=2 ** 0.5, activation="relu"))
    >>> print(*law.atoms(), f"{law.moment(2):.8f}")
    [0.] [0.5] 5.00000000

    A law that is δ₀ because of the input or the phase (ReLU fed its ordered-phase fixed point q* = 0, where every
    φ′(h) = 0) warns, naming the cause.
    """
    net = check_network("net", net)
    warn_collapsed("the Jacobian law", net, dead_layers(net))
    factors, scale = [], 1.0
    wcache = {}
    for r, wlaw, d2 in _layers(net):
        if r == 1:
            key = id(type(wlaw)), repr(wlaw)
            wlaw = wcache.setdefault(key, wlaw)          # one object per distinct law: merged into a power
            factors.append(wlaw)
        else:
            base = free_mult_scaled(factors + [wlaw], scale)
            if isinstance(base.base if isinstance(base, Affine) else base, FreeProduct):
                base = tabulate(base, n0=800)            # no Newton solve nested inside the next level's
            factors, scale = [OtherGram(base, r)], 1.0
        if d2 is not None:
            factors.append(d2)
    return free_mult_scaled(factors, scale)


def jacobian_moments(net, K=4):
    """Exact moments m_1 … m_K of :func:`jacobian_law` (square layers) from the S-transform series of the factors
    (free.FreeProduct's moment path): the independent check of the engine's density.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (:func:`rmtnet.spectra.network.mlp`).
    K : int, default 4
        How many moments.

    Returns
    -------
    ndarray
        m₁, …, m_K.

    Examples
    --------
    A linear Gaussian network of depth L has the Fuss–Catalan(L) moments C((L+1)k, k)/(Lk + 1):

    >>> from rmtnet.spectra import network
    >>> print(jacobian_moments(network.mlp(3, 100, activation="linear"), K=3))
    [ 1.  4. 22.]
    """
    law = jacobian_law(net)
    return np.array([law.moment(k) for k in range(1, K + 1)])
