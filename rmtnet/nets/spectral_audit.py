"""The spectra of a (trained) torch model's weights, input–output Jacobian and NTK against the laws of its
initialisation: one row per weight layer — the KS distance of the bulk to the law, the outliers past the law's edge
and whether they are spikes, and the heavy-tail exponent that practitioners read (Martin & Mahoney, "Implicit
self-regularization in deep neural networks", JMLR 22, 2021, arXiv 1810.01075).

Conventions.
  * A layer's spectrum is the n = min(n_out, n_in) squared singular values of its weight W (n_out × n_in), i.e. the
    eigenvalues of the smaller of WWᵀ and WᵀW (the other has the same ones and |n_out − n_in| zeros). At
    initialisation W has iid entries of variance σ_w²/n_in (Gaussian, or any law of that variance by universality),
    and they follow the Marchenko–Pastur law MP(λ, s) (Marchenko & Pastur 1967) with λ = n/m ≤ 1 (m = max(n_out,
    n_in)) and scale s = σ_w²·m/n_in (:func:`layer_law`): no atom, right edge s(1 + √λ)².
  * Which matrix and which law, per layer type:

    - ``nn.Linear``: W itself, MP; σ_w from ``sigma_w`` (rmtnet's MLP and the Mixer heads draw N(0, σ_w²/n_in);
      torch's own default U(±1/√n_in) has σ_w² = 1/3).
    - :class:`~rmtnet.nets.layers.MaskedLinear`, :class:`~rmtnet.nets.layers.SparseMaskedLinear` (static masks): the
      effective M ⊙ W, kept entries N(0, σ_w²/(p·n_in)), so entry variance σ_w²/n_in on average. Its limit law is
      MP (:func:`rmtnet.spectra.mixer.sparse_weight_law`) when p·n_in ≫ log n_in (the table's ``mp_regime`` =
      p·n_in/log n_in, :func:`rmtnet.spectra.mixer.mp_regime`); at p·n_in ~ 3 log n_in (a Mixer-sized SW-MLP) the
      mask's uneven row and column counts push the top eigenvalues past MP's edge and would read as spikes. So by
      default the law is the mask-weighted one at initialisation *given the layer's own mask*: the pooled squared
      singular values of M ⊙ G over ``mask_draws`` fresh Gaussian G (seeded, :data:`MASK_SEED`), an
      :class:`~rmtnet.spectra.measures.Empirical` law whose edge is the largest of the draws' top eigenvalues and
      whose spike margin is max(edge, mean + 3 sd of the draws' top eigenvalues). ``mask_draws=0`` uses MP.
      (Measured on SWMLP(S = C = 16) at initialisation: KS to MP 0.03–0.04 and 3–5 "spikes" per layer; KS to the
      mask-weighted law 0.010–0.023 and none.)
    - :class:`~rmtnet.nets.layers.TokenMixing`, :class:`~rmtnet.nets.layers.ChannelMixing` (kron(W, I_C),
      kron(I_S, W)) and :class:`~rmtnet.nets.layers.PermutedMixing` (P₁(I ⊗ W)P₂): the Kronecker law — W's own
      singular values, each repeated (``repeat`` = C, S or the number of blocks;
      :func:`rmtnet.spectra.mixer.kronecker_singular_values`), so the law is MP of W's own shape and the finite-size
      noise that of a min(W.shape)-sized matrix, not of the effective S·C one. (The law of a whole linear Mixer's
      JJᵀ, the tensor product of the two sides, is :func:`rmtnet.spectra.mixer.kronecker_gram_law`.)
    - :class:`~rmtnet.nets.layers.AdjacencyLinear` (EMN): its dense weight (the per-sample adjacency mask is data,
      not weight), MP with n_in = n·c_in.
    - :class:`~rmtnet.nets.layers.ClusterLinear` (EMN): block-diagonal, n blocks c_out × c_in of entry variance
      σ_w²/c_in; the squared singular values of all blocks pooled. With c_in = c_out = 1 they are σ_w²·χ²₁ exactly
      (the law of σ_w²h², h ~ N(0, 1)); otherwise MP of a block's shape (its c → ∞ limit).

    :class:`~rmtnet.nets.layers.MonarchLinear` and convolutions have no law here and are left out.
  * Scale. ``scale="init"`` (default) takes s from the known initialisation — the law the layer *started* from, so
    that what training moved shows as distance. ``scale="fit"`` fits s to the bulk as weightwatcher does (Martin &
    Mahoney 2021): s is the fixed point of s = mean of the eigenvalues ≤ s(1 + √λ)² (MP(λ, s) has mean s and no mass
    past its edge), started from the mean of all of them, so outliers do not inflate it.
  * KS is :func:`rmtnet.plot.ks_distance` over the layer's distinct eigenvalues. ``ks_noise`` is the
    Dvoretzky–Kiefer–Wolfowitz bound √(log(2/α)/(2n)) at α = 1 − ``confidence`` (Massart 1990, Ann. Probab. 18,
    1269–1283): the KS distance n iid draws from the law exceed with probability ≤ α. Eigenvalues of a random matrix
    repel and are *more* regular than iid draws (their KS to the limit is O(log n/n) plus an O(1/n) finite-size
    bias), so it is a conservative band for "at initialisation".
  * Outliers are the eigenvalues above the law's right edge λ₊ = s(1 + √λ)². A *spike* is an outlier beyond the
    edge's own finite-size fluctuation: above s(μ + q·σ)/m with Johnstone's centring μ = (√(m−1) + √n)² and scaling
    σ = (√(m−1) + √n)(1/√(m−1) + 1/√n)^{1/3} of the largest Wishart eigenvalue (Johnstone 2001, Ann. Statist. 29,
    295–327) and q = 2.0234, the 99 % quantile of Tracy–Widom TW₁. For each outlier the implied spike strength θ̂
    inverts the rank-one spiked-model map of Benaych-Georges & Nadakuditi (J. Multivariate Anal. 111, 2012,
    120–135; the BBP transition of Baik, Ben Arous & Péché, Ann. Probab. 33, 2005): for W = X + θuvᵀ (X of the law's
    scale s), the top squared singular value separates from λ₊ iff θ > θ_c = √s·λ^{1/4}, and then tends to
    s(1 + t²)(λ + t²)/t², t = θ/√s. ``spikes`` counts the outliers that clear the TW₁ margin, i.e. whose θ̂ is above
    θ_c by more than the edge's fluctuation. (These statistics live in :mod:`rmtnet.spectra.diagnostics`.)
  * A masked layer's spikes are read against its own mask-weighted law, not MP: θ̂ solves D(√e) = θ^{−2} for the
    D-transform of the law's pooled draws (:func:`rmtnet.spectra.diagnostics.spike_strength_in`; Benaych-Georges &
    Nadakuditi 2012, Theorem 2.8, for spike directions generic with respect to the mask). A sample law has no sharp
    BBP threshold (its D-transform diverges at its top draw), so such a layer's ``theta_c`` is NaN (not available);
    its spikes are those past its Monte Carlo margin.
  * The tail exponent is the continuous power-law MLE α̂ = 1 + n_tail/Σ log(x_i/x_min) over the eigenvalues x ≥
    x_min (density ∝ x^{−α}), x_min the eigenvalue minimising the KS distance between the tail and the fitted law,
    with at least ``min_tail`` points in the tail (Clauset, Shalizi & Newman, SIAM Review 51, 2009, 661–703; the fit
    weightwatcher's alpha makes on the eigenvalues of WᵀW), over the eigenvalues above :data:`ZERO_RTOL`·λ_max (a
    low-rank layer's numerical zeros left out). Standard error (α̂ − 1)/√n_tail. A layer with fewer than
    ``min_tail`` such eigenvalues is fitted with all of them in the tail (``n_tail`` < ``min_tail`` flags
    it); NaN (and n_tail = 0) only when fewer than two distinct positive eigenvalues are left.
  * A 1 × 1-block ClusterLinear's σ_w²χ²₁ law has no right edge: its ``edge`` (and spike margin) is the quantile
    1 − (1 − confidence)/n, which any of its n iid squared weights passes with probability ≤ 1 − confidence; its
    ``theta_c`` is √edge and a spike's θ̂ the weight's |w|.
  * ``mp_regime`` = p·n_in/log n_in (p = 1 for unmasked layers; 0 for a single-input block).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from rmtnet import plot
from rmtnet._validation import boolean, finite_array, integer_at_least, one_of, real_scalar
from rmtnet.nets._modules import check_model
from rmtnet.spectra import MarchenkoPastur
from rmtnet.spectra.diagnostics import (TW1_99, dkw_bound, layer_law, mp_bulk_scale, power_law_fit, spike_strength,
                                        spike_strength_in, spike_threshold, tracy_widom_margin)
from rmtnet.spectra.measures import Empirical, Measure, gaussian_pushforward
from rmtnet.spectra.mixer import mp_regime

__all__ = ["LayerSpectrum", "layer_law", "weight_spectra", "layer_spectra", "spectrum_table", "power_law_fit",
           "spike_threshold", "spike_strength", "dkw_bound", "jacobian_against_law", "fan_wang_ntk", "ntk_against_law", "TW1_99",
           "COLUMNS", "MASK_SEED"]

#: The columns of :func:`layer_spectra`, in order.
COLUMNS = ("layer", "kind", "shape", "repeat", "law", "sigma_w", "scale", "ratio", "n_eigs", "mp_regime", "ks",
           "ks_noise", "edge", "lambda_max", "outliers", "outlier_positions", "spikes", "spike_thetas",
           "theta_c", "alpha", "alpha_se", "x_min", "n_tail", "power_law_ks")
SCALES = ("init", "fit")
#: Eigenvalues below this fraction of the largest are numerical zeros, left out of the tail fit.
ZERO_RTOL = 1e-10
#: The seed of the fresh weights behind a masked layer's Monte Carlo law.
MASK_SEED = 20231


@dataclass
class LayerSpectrum:
    """One weight layer's spectrum and the law it is compared with (see the module notes).

    Attributes: ``name`` (module name), ``kind`` ("dense", "masked", "kronecker", "adjacency", "cluster"),
    ``shape`` (the stored weight's (n_out, n_in); for "cluster" one block's), ``repeat`` (multiplicity of each
    eigenvalue in the effective layer), ``eigs`` (the distinct squared singular values, ascending, float64),
    ``law`` (a Measure), ``law_name``, ``sigma_w``, ``scale`` (s), ``ratio`` (λ ≤ 1), ``density`` (mask density or
    1), ``n_min``/``n_max`` (min and max of one matrix's sides), ``edge`` (the law's right edge λ₊) and
    ``spike_margin`` (the eigenvalue past which an outlier counts as a spike).

    Examples
    --------
    The first layer of an MLP 20 → 10 → 3 at initialisation (σ_w = 1, s = 1) is a dense 10 × 20 matrix: 10 squared
    singular values, ratio λ = 10/20, compared with Marchenko–Pastur's law of right edge (1 + √λ)²:

    >>> from rmtnet.nets.models import MLP
    >>> layer = weight_spectra(MLP([20, 10, 3], seed=0))[0]
    >>> layer.kind, layer.shape, layer.eigs.shape, layer.ratio, (layer.n_min, layer.n_max), layer.law_name
    ('dense', (10, 20), (10,), 0.5, (10, 20), 'MP(0.5)')
    >>> bool(np.isclose(layer.edge, (1 + np.sqrt(0.5)) ** 2)), layer.spike_margin > layer.edge
    (True, True)
    """
    name: str
    kind: str
    shape: tuple
    repeat: int
    eigs: np.ndarray
    law: Measure
    law_name: str
    sigma_w: float
    scale: float
    ratio: float
    density: float
    n_min: int
    n_max: int
    edge: float
    spike_margin: float


def _squared_sv(w):
    """Squared singular values of w (…, a, b), float64, ascending, pooled over leading dimensions."""
    w = w.detach().to(torch.float64).cpu()
    if not bool(torch.isfinite(w).all()):
        raise ValueError("the model's weights must be finite (no NaN or inf)")
    return np.sort(torch.linalg.svdvals(w).square().reshape(-1).numpy())


def _sigma(sigma_w, name, mod):
    """A layer's σ_w: its own ``sigma_w`` attribute (MaskedLinear records it), else ``sigma_w[name]`` (default 1)
    or the one number ``sigma_w``."""
    if hasattr(mod, "sigma_w"):
        return float(mod.sigma_w)
    if isinstance(sigma_w, dict):
        return real_scalar(f"sigma_w[{name!r}]", sigma_w.get(name, 1.0), lo=0.0, lo_open=True)
    return float(sigma_w)


def _structured(name, mod, sigma_w, tokens, channels):
    """(kind, weight or blocks, repeat, sigma_w, density, law or None) for rmtnet's structured layers, else None."""
    from .layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, PermutedMixing,
                         SparseMaskedLinear, TokenMixing)
    s = _sigma(sigma_w, name, mod)
    if isinstance(mod, (MaskedLinear, SparseMaskedLinear)):
        return "masked", mod.effective_weight(), 1, s, float(mod.density), None
    if isinstance(mod, (TokenMixing, ChannelMixing)):
        repeat = channels if isinstance(mod, TokenMixing) else tokens
        return "kronecker", mod.weight, int(repeat or 1), s, 1.0, None
    if isinstance(mod, PermutedMixing):
        return "kronecker", mod.weight, int(mod.n_blocks), s, 1.0, None
    if isinstance(mod, AdjacencyLinear):
        return "adjacency", mod.weight, 1, s, 1.0, None
    if isinstance(mod, ClusterLinear):
        law = (gaussian_pushforward(lambda h: h * h, s * s / mod.c_in)
               if mod.c_in == 1 and mod.c_out == 1 else None)
        return "cluster", mod.weight, 1, s, 1.0, law
    return None


def weight_spectra(model, sigma_w=1.0, scale="init", tokens=None, channels=None, mask_draws=16, confidence=0.99):
    """Every weight layer of ``model`` with its spectrum and its law at initialisation (module notes), in module order.

    Parameters
    ----------
    model : torch.nn.Module
        The network (trained or not).
    sigma_w : float or dict, default 1.0
        σ_w of every layer (entry variance σ_w²/n_in at initialisation), or ``{module name: σ_w}`` (layers not
        named: 1). A layer that records its own ``sigma_w`` (MaskedLinear, SparseMaskedLinear) uses that. rmtnet's
        Mixer-family models and EMN build every layer with σ_w = 1.
    scale : {"init", "fit"}, default "init"
        The law's scale s from the initialisation, or fitted to the bulk (module notes).
    tokens, channels : int, optional
        S and C, the repeats of TokenMixing (C) and ChannelMixing (S) (None: the model's attributes).
    mask_draws : int, default 16
        Masked layers: the number of fresh Gaussian draws on the layer's own mask behind its law (module notes);
        0 takes the limit law :func:`rmtnet.spectra.mixer.sparse_weight_law` instead.
    confidence : float, default 0.99
        For the σ²χ²₁ law of 1 × 1 blocks, which has no right edge: the edge is its quantile 1 − (1 − confidence)/n,
        past which any of n iid draws falls with probability ≤ 1 − confidence.

    Returns
    -------
    list of LayerSpectrum

    Examples
    --------
    >>> from rmtnet.nets.models import MLP
    >>> [(l.name, l.shape, l.law_name) for l in weight_spectra(MLP([20, 10, 3], seed=0))]
    [('layers.0', (10, 20), 'MP(0.5)'), ('layers.1', (3, 10), 'MP(0.3)')]
    """
    check_model(model)
    if not isinstance(sigma_w, dict):
        real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
    one_of("scale", scale, SCALES)
    dkw_bound(1, confidence)
    mask_draws = integer_at_least("mask_draws", mask_draws, 0)
    if mask_draws == 1:
        raise ValueError("mask_draws must be 0 (the MP limit) or at least 2 (a spread of the top eigenvalue)")
    S = integer_at_least("tokens", tokens) if tokens is not None else getattr(model, "tokens", None)
    C = integer_at_least("channels", channels) if channels is not None else getattr(model, "channels", None)
    out = []
    for name, mod in model.named_modules():
        found = _structured(name, mod, sigma_w, S, C)
        if found is None and isinstance(mod, torch.nn.Linear):
            found = "dense", mod.weight, 1, _sigma(sigma_w, name, mod), 1.0, None
        if found is not None:
            out.append(_layer(name, *found, scale, mask_draws, confidence))
    return out


def _layer(name, kind, weight, repeat, s, density, law, scale, mask_draws, confidence):
    shape = tuple(int(d) for d in weight.shape[-2:])
    eigs = _squared_sv(weight)
    lo, hi = min(shape), max(shape)
    if law is not None:                              # ClusterLinear with 1 × 1 blocks: σ_w²·χ²₁, no right edge
        edge = float(law.quantile(1.0 - (1.0 - confidence) / eigs.size))
        return LayerSpectrum(name, kind, shape, repeat, eigs, law, "σ²χ²₁", s, s * s, 1.0, density, lo, hi,
                             edge, edge)
    mp = layer_law(*shape, s)
    if scale == "fit":
        mp = MarchenkoPastur(mp.ratio, scale=mp_bulk_scale(eigs, mp.ratio))
    if kind == "masked" and mask_draws:
        draws = _mask_draws(weight, s, density, mp.scale / layer_law(*shape, s).scale, mask_draws)
        tops = draws[:, -1]
        return LayerSpectrum(name, kind, shape, repeat, eigs, Empirical(draws), f"mask MC({mask_draws})", s,
                             mp.scale, mp.ratio, density, lo, hi, float(tops.max()),
                             float(max(tops.max(), tops.mean() + 3 * tops.std(ddof=1))))
    return LayerSpectrum(name, kind, shape, repeat, eigs, mp, f"MP({mp.ratio:.3g})", s, mp.scale, mp.ratio,
                         density, lo, hi, mp.edges[1], tracy_widom_margin(lo, hi, mp.scale))


def _mask_draws(weight, sigma_w, density, rescale, draws):
    """Squared singular values (draws × n, each row ascending) of M ⊙ G for the layer's own mask M (the non-zero
    pattern of ``weight``) and fresh G ~ N(0, σ_w²·rescale/(p·n_in)), seeded: the law at initialisation given M."""
    mask = (weight.detach().to(torch.float64).cpu() != 0).to(torch.float64)
    g = torch.Generator().manual_seed(MASK_SEED)
    std = sigma_w * math.sqrt(rescale / (density * weight.shape[-1]))
    G = torch.randn((draws,) + tuple(mask.shape), generator=g, dtype=torch.float64) * std
    return np.sort(torch.linalg.svdvals(G * mask).square().numpy(), axis=1)


# ------------------------------------------------------------------------------------------------------------------
# Heavy tails, outliers and spikes

def _outliers(layer):
    """Outliers past the edge, spikes past the margin, their θ̂ against the layer's own law, and θ_c (module notes)."""
    above = layer.eigs[layer.eigs > layer.edge][::-1]
    spikes = above[above > layer.spike_margin]
    out = dict(edge=layer.edge, outliers=int(above.size), outlier_positions=tuple(float(v) for v in above),
               spikes=int(spikes.size))
    if layer.law_name == "σ²χ²₁":                     # 1 × 1 blocks: the "spike" is one large weight |w|
        return dict(out, spike_thetas=tuple(float(np.sqrt(v)) for v in spikes), theta_c=math.sqrt(layer.edge))
    if isinstance(layer.law, Empirical):              # a masked layer's Monte Carlo law: its own D-transform
        thetas = spike_strength_in(spikes, layer.law.samples, layer.ratio) if spikes.size else np.empty(0)
        return dict(out, spike_thetas=tuple(float(t) for t in thetas), theta_c=math.nan)
    thetas = spike_strength(spikes, layer.ratio, layer.scale) if spikes.size else np.empty(0)
    return dict(out, spike_thetas=tuple(float(t) for t in thetas), theta_c=spike_threshold(layer.ratio, layer.scale))


# ------------------------------------------------------------------------------------------------------------------
# The table

def _ks(law, eigs):
    """KS to the law; MP(λ, s) as MP(λ, 1) against eigs/s (KS is scale-free; the cdf stays resolved at any s)."""
    if isinstance(law, MarchenkoPastur):
        return plot.ks_distance(MarchenkoPastur(law.ratio), eigs / law.scale)
    return plot.ks_distance(law, eigs)


def _row(layer, min_tail, confidence):
    e = layer.eigs
    row = dict(layer=layer.name, kind=layer.kind, shape=layer.shape, repeat=layer.repeat, law=layer.law_name,
               sigma_w=layer.sigma_w, scale=layer.scale, ratio=layer.ratio, n_eigs=int(e.size),
               mp_regime=mp_regime(layer.density, layer.shape[1]) if layer.shape[1] > 1 else 0.0,
               ks=_ks(layer.law, e), ks_noise=dkw_bound(e.size, confidence), lambda_max=float(e[-1]))
    row.update(_outliers(layer))
    positive = e[e > ZERO_RTOL * e[-1]]                     # numerically non-zero (a low-rank layer's zeros)
    tail = min(min_tail, positive.size)
    if tail >= 2 and np.unique(positive[-tail:]).size > 1:
        fit = power_law_fit(positive, tail)
    else:
        fit = dict(alpha=np.nan, alpha_se=np.nan, x_min=np.nan, n_tail=0, ks=np.nan)
    row.update(alpha=fit["alpha"], alpha_se=fit["alpha_se"], x_min=fit["x_min"], n_tail=fit["n_tail"],
               power_law_ks=fit["ks"])
    return {c: row[c] for c in COLUMNS}


def layer_spectra(model, sigma_w=1.0, scale="init", min_tail=10, confidence=0.99, tokens=None, channels=None,
                  mask_draws=16):
    """One row per weight layer of ``model``: its spectrum against its law at initialisation (module notes).

    Parameters
    ----------
    model : torch.nn.Module
        The network (trained or not).
    sigma_w : float or dict, default 1.0
        The layers' σ_w at initialisation (see :func:`weight_spectra`).
    scale : {"init", "fit"}, default "init"
        The law's scale from the initialisation, or fitted to the bulk.
    min_tail : int, default 10
        The fewest eigenvalues in a power-law tail (≥ 2).
    confidence : float, default 0.99
        The confidence of ``ks_noise`` (the DKW band).
    tokens, channels : int, optional
        S and C for the Mixer layers' repeats.
    mask_draws : int, default 16
        Fresh draws behind a masked layer's law (0: the MP limit; see :func:`weight_spectra`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS`: ``layer``, ``kind``, ``shape``, ``repeat``, ``law``, ``sigma_w``, ``scale`` (s),
        ``ratio`` (λ), ``n_eigs``, ``mp_regime`` (p·n_in/log n_in; p = 1 unmasked), ``ks``,
        ``ks_noise``, ``edge`` (λ₊), ``lambda_max``, ``outliers`` (count above λ₊), ``outlier_positions``
        (descending), ``spikes`` (count past the TW₁ 99 % margin), ``spike_thetas`` (θ̂ of each), ``theta_c`` (NaN for a
        masked layer's Monte Carlo law: not available),
        ``alpha``, ``alpha_se``, ``x_min``, ``n_tail``, ``power_law_ks``.

    Examples
    --------
    A 200 × 100 Gaussian layer with a planted rank-one spike θ = 3 (θ_c = √2·½^{1/4} ≈ 1.19): one outlier, a spike,
    θ̂ close to 3:

    >>> from rmtnet.nets.models import MLP
    >>> net = MLP([100, 200], seed=0, dtype=torch.float64)
    >>> g = torch.Generator().manual_seed(1)
    >>> u, v = torch.randn(200, 1, generator=g, dtype=torch.float64), torch.randn(1, 100, generator=g, dtype=torch.float64)
    >>> _ = net.layers[0].weight.data.add_(3 * (u / u.norm()) @ (v / v.norm()))
    >>> row = layer_spectra(net).iloc[0]
    >>> print(row.outliers, row.spikes, f"{row.theta_c:.3f}", abs(row.spike_thetas[0] - 3) < 0.3)
    1 1 1.189 True
    """
    min_tail = integer_at_least("min_tail", min_tail, 2)
    return spectrum_table(weight_spectra(model, sigma_w, scale, tokens, channels, mask_draws, confidence), min_tail,
                          confidence)


def spectrum_table(layers, min_tail=10, confidence=0.99):
    """The table of :func:`layer_spectra` from layers already read by :func:`weight_spectra` (each layer's SVD taken
    once, e.g. to keep the eigenvalues as well as the table).

    Parameters
    ----------
    layers : list of LayerSpectrum
        From :func:`weight_spectra` (give it the same ``confidence``: it sets the edge of a σ²χ²₁ law).
    min_tail : int, default 10
        The fewest eigenvalues in a power-law tail (≥ 2).
    confidence : float, default 0.99
        The confidence of ``ks_noise`` (the DKW band).

    Returns
    -------
    pandas.DataFrame
        As :func:`layer_spectra`.

    Examples
    --------
    >>> from rmtnet.nets.models import MLP
    >>> layers = weight_spectra(MLP([20, 10, 3], seed=0))
    >>> spectrum_table(layers).equals(layer_spectra(MLP([20, 10, 3], seed=0)))
    True
    """
    if not isinstance(layers, (list, tuple)) or not all(isinstance(layer, LayerSpectrum) for layer in layers):
        raise ValueError(f"layers must be a list of LayerSpectrum (from weight_spectra), got {type(layers).__name__}")
    min_tail = integer_at_least("min_tail", min_tail, 2)
    dkw_bound(1, confidence)
    return pd.DataFrame([_row(layer, min_tail, confidence) for layer in layers], columns=list(COLUMNS))


# ------------------------------------------------------------------------------------------------------------------
# Input–output Jacobian and NTK against their laws at initialisation

def _description(net):
    from rmtnet.spectra.network import MLP as Description
    if not isinstance(net, Description):
        raise ValueError(f"net must be an rmtnet.spectra.network.mlp description, got {type(net).__name__}")
    return net


def _comparison(law, eigs):
    edge = float(law.support()[1])
    lam = float(np.max(eigs))
    mean, law_mean = float(np.mean(eigs)), float(law.mean())
    if not mean > 0:
        raise ValueError("x gives an all-zero spectrum: nothing to compare with the law")
    return dict(ks=plot.ks_distance(law, eigs), ks_shape=plot.ks_distance(law, eigs * (law_mean / mean)),
                lambda_max=lam, law_edge=edge, lambda_max_ratio=lam / edge, mean=mean, law_mean=law_mean,
                n_eigs=int(np.size(eigs)))


def _given_law(law):
    if law is not None and not isinstance(law, Measure):
        raise ValueError(f"law must be a Measure (the law computed once for the same description) or None, got "
                         f"{type(law).__name__}")
    return law


def jacobian_against_law(model, net, x, law=None):
    """The eigenvalues of JJᵀ (J = ∂f/∂x, :func:`rmtnet.nets.probes.jacobian_spectrum`) at the examples ``x``,
    pooled, against :func:`rmtnet.spectra.jacobian_law` of the description ``net`` the model was built from
    (:meth:`rmtnet.nets.MLP.from_description`) — the law at initialisation, which takes every input at the
    description's ‖x‖²/n₀ = q₀ (give inputs of that norm).

    Parameters
    ----------
    model : torch.nn.Module
        The network (trained or not).
    net : rmtnet.spectra.network.MLP
        Its description at initialisation.
    x : torch.Tensor
        A batch of examples (n, n₀).
    law : Measure, optional
        ``jacobian_law(net)`` computed once (to compare several models of one description without solving it again).

    Returns
    -------
    dict
        ``ks``; ``ks_shape``, the KS distance after scaling the eigenvalues to the law's mean (the shape alone: one
        network's spectrum moves as a whole by O(n^{−1/2}) from draw to draw, e.g. with its read-out's norm);
        ``lambda_max`` (largest eigenvalue over the examples), ``law_edge`` (the law's right end),
        ``lambda_max_ratio`` = lambda_max/law_edge, ``mean``, ``law_mean``, ``n_eigs``.

    Examples
    --------
    A linear square network of depth 2 at initialisation: JJᵀ = W₂W₁W₁ᵀW₂ᵀ, law FussCatalan(2), edge 27/4:

    >>> from rmtnet.nets.models import MLP
    >>> from rmtnet.spectra.network import mlp
    >>> net = mlp(2, 200, activation="linear", q0=1.0)
    >>> out = jacobian_against_law(MLP.from_description(net, seed=0, dtype=torch.float64),
    ...                            net, torch.ones(1, 200, dtype=torch.float64))
    >>> print(f"{out['law_edge']:.4f}", out["ks"] < 0.1, 0.8 < out["lambda_max_ratio"] < 1.2)
    6.7500 True True
    """
    from rmtnet.spectra import jacobian_law
    from .probes import jacobian_spectrum
    net, law = _description(net), _given_law(law)
    check_model(model)
    return _comparison(jacobian_law(net) if law is None else law, jacobian_spectrum(model, x, batched=True))


class _OneOutput(torch.nn.Module):
    def __init__(self, model, index):
        super().__init__()
        self.model, self.index = model, index

    def forward(self, x):
        return self.model(x)[..., self.index:self.index + 1]


def fan_wang_ntk(model, x, output=0):
    """The NTK Gram of output ``output`` of an rmtnet :class:`~rmtnet.nets.MLP` over the inputs ``x`` in Fan & Wang's
    normalisation (NeurIPS 2020, arXiv 2005.11879): K = Σ_ℓ J_ℓJ_ℓᵀ/n_{ℓ−1}, J_ℓ the Jacobian with respect to W_ℓ
    (n_{ℓ−1} its fan-in) — the NTK of the unit-variance weights, which :func:`rmtnet.spectra.ntk_law` describes.

    Parameters
    ----------
    model : rmtnet.nets.MLP
        Without biases (Fan & Wang's network has none).
    x : torch.Tensor
        Inputs (n, n₀).
    output : int, default 0
        The output whose kernel is taken.

    Returns
    -------
    numpy.ndarray
        K, (n, n), float64.

    Examples
    --------
    One linear layer f(x) = wᵀx: K = xxᵀ/n₀:

    >>> from rmtnet.nets.models import MLP
    >>> x = torch.eye(2, dtype=torch.float64)
    >>> fan_wang_ntk(MLP([2, 1], bias=False, seed=0, dtype=torch.float64), x).tolist()
    [[0.5, 0.0], [0.0, 0.5]]
    """
    from .models import MLP
    from .probes import parameter_jacobian
    if not isinstance(model, MLP):
        raise ValueError(f"model must be an rmtnet.nets.MLP, got {type(model).__name__}")
    if any(layer.bias is not None for layer in model.layers):
        raise ValueError("model must have no biases (Fan & Wang's network; build it from a description with σ_b = 0)")
    output = integer_at_least("output", output, 0)
    if output >= model.widths[-1]:
        raise ValueError(f"output must be < the {model.widths[-1]} outputs, got {output}")
    J = parameter_jacobian(_OneOutput(model, output), x)
    K = 0.0
    for i, n_in in enumerate(model.widths[:-1]):
        j = J[f"model.layers.{i}.weight"].flatten(1).to(torch.float64)
        K = K + (j @ j.T).cpu().numpy() / n_in
    return K


def ntk_against_law(model, net, x, input_law="gaussian", output=0, law=None):
    """The NTK Gram spectrum (:func:`fan_wang_ntk`) over the inputs ``x`` against :func:`rmtnet.spectra.ntk_law` of
    the description ``net`` at initialisation (Gaussian weights, σ_w = 1, σ_b = 0, normalised activation; inputs of
    ‖x‖² ≈ n₀).

    Parameters
    ----------
    model : rmtnet.nets.MLP
        The network (trained or not), built from ``net``.
    net : rmtnet.spectra.network.MLP
        Its description.
    x : torch.Tensor
        Inputs (n, n₀).
    input_law : {"gaussian", "data"} or Measure, default "gaussian"
        The law of X₀ᵀX₀, X₀ = xᵀ/√n₀: "gaussian" MP(n/n₀) (iid inputs), "data" the empirical spectrum of the given
        x's Gram, or a Measure.
    output : int, default 0
        The output whose kernel is taken.
    law : Measure, optional
        ``ntk_law`` computed once for the same description, inputs and input law (then ``input_law`` is not used).

    Returns
    -------
    dict
        As :func:`jacobian_against_law`.

    Examples
    --------
    >>> from rmtnet.nets.models import MLP
    >>> from rmtnet.spectra.network import mlp
    >>> from rmtnet.spectra.meanfield import normalised_activation
    >>> net = mlp(2, widths=[120, 120, 1], activation=normalised_activation("tanh"), sigma_w=1.0,
    ...           last_activation=False, q0=1.0)
    >>> x = torch.randn(60, 120, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    >>> out = ntk_against_law(MLP.from_description(net, seed=0, dtype=torch.float64), net, x)
    >>> print(out["ks_shape"] < 0.15, 0.8 < out["lambda_max_ratio"] < 1.2)
    True True
    """
    from rmtnet.spectra import ntk_law
    net, law = _description(net), _given_law(law)
    K = fan_wang_ntk(model, x, output)
    n = K.shape[0]
    if law is not None:
        return _comparison(law, np.linalg.eigvalsh(K))
    if isinstance(input_law, str):
        one_of("input_law", input_law, ("gaussian", "data"))
        if input_law == "data":
            u = x.detach().reshape(n, -1).to(torch.float64).cpu().numpy()
            input_law = Empirical(np.maximum(np.linalg.eigvalsh(u @ u.T / u.shape[1]), 0.0))
        else:
            input_law = None
    elif not isinstance(input_law, Measure):
        raise ValueError(f"input_law must be 'gaussian', 'data' or a Measure, got {input_law!r}")
    return _comparison(ntk_law(net, n, input_law=input_law), np.linalg.eigvalsh(K))
