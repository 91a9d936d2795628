"""Trainable models: a dense MLP, MLP-Mixer, random-permuted (RP) Mixer, static-mask sparse MLP (SW-MLP), Monarch MLP
and the Ensemble Mask Network.

The Mixer family shares one skeleton (Tolstikhin et al., NeurIPS 2021, arXiv 2105.01601; Hayase & Karakida, ICML 2024,
arXiv 2306.01470): patches (…, S, C_in) → per-patch linear stem to C channels → ``depth`` blocks → LayerNorm → mean over
tokens → linear head. A block is a pair of residual sub-blocks x ↦ x + f(LN(x)), LN over the C channels of each token,
and f a two-layer MLP with expansion γ and an activation in the middle. What differs is only how f acts on the effective
width m = S·C (row-major flatten, see :mod:`.layers`):

==========  ================================================================  =======================================
model       token sub-block f                                                 channel sub-block f
==========  ================================================================  =======================================
MLPMixer    W₂ φ(W₁ X): kron(W, I_C), density 1/C                             φ(X V₁ᵀ) V₂ᵀ: kron(I_S, V), density 1/S
RPMixer     P₂ (I_C ⊗ W) P₁: the commutations replaced by uniform random      as the Mixer
            permutations (RP-Mixer of Hayase & Karakida 2024),
            ``permutations="commutation"`` = Mixer
SWMLP       (M ⊙ W), static random masks of density 1/C (default), stored     (M ⊙ W), density 1/S (default)
            sparse or dense (``storage``)
MonarchMLP  Monarch layers m → γm → m with S blocks, one sub-block per block  (no separate channel sub-block)
==========  ================================================================  =======================================

so each layer of SWMLP has the same number of connections (on average) as the Mixer layer it replaces: the budget
Ω = γ(CS² + SC²)/2 of :func:`rmtnet.spectra.mixer.connections`. All models take a ``seed`` (weights, masks and
permutations are drawn from it on the CPU, identically on every device).
"""
from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from rmtnet.spectra import activations
from rmtnet.spectra.network import mlp as _describe
from rmtnet._validation import boolean, positive_integers, real_scalar

from .layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, MonarchLinear, PermutedMixing,
                     SparseMaskedLinear, TokenMixing, check_parameters, commutation, gaussian_, generator)

__all__ = ["MLP", "MLPMixer", "RPMixer", "SWMLP", "MonarchMLP", "EMN", "activation_module", "Elementwise",
           "sparse_storage", "SPARSE_MIN_WIDTH", "SPARSE_MAX_DENSITY"]


class Elementwise(nn.Module):
    """φ applied entrywise, for an activation whose definition names no ``torch.nn`` class: its φ (written on the
    array's namespace, see :mod:`rmtnet.spectra.activations`) runs on the tensor itself.

    Parameters
    ----------
    activation : rmtnet.spectra.activations.Activation
        The definition whose ``phi`` is applied.

    Examples
    --------
    >>> import torch
    >>> from rmtnet.nets.models import Elementwise
    >>> from rmtnet.spectra.activations import activation
    >>> Elementwise(activation("erf"))(torch.zeros(2))
    tensor([0., 0.])
    """

    def __init__(self, activation):
        super().__init__()
        self.activation = activation

    def forward(self, x):
        return self.activation.phi(x)

    def extra_repr(self):
        return self.activation.name


def activation_module(spec):
    """The torch module of an activation: the ``torch.nn`` class its definition names, else φ wrapped in
    :class:`Elementwise`.

    Parameters
    ----------
    spec : str, rmtnet.spectra.activations.Activation or torch.nn.Module
        A registered activation name (:func:`rmtnet.spectra.activations.registered_activations`), a definition,
        or a module (returned as it is).

    Returns
    -------
    torch.nn.Module

    Examples
    --------
    >>> from rmtnet.nets.models import activation_module
    >>> activation_module("gelu"), activation_module("erf")
    (GELU(approximate='none'), Elementwise(erf))
    """
    if isinstance(spec, nn.Module):
        return spec
    if not isinstance(spec, (str, activations.Activation)):
        raise ValueError(f"activation must be one of {list(activations.registered_activations())}, an Activation "
                         f"or an nn.Module, got {spec!r}")
    try:
        act = activations.activation(spec)
    except ValueError:
        raise ValueError(f"activation must be one of {list(activations.registered_activations())}, an Activation "
                         f"or an nn.Module, got {spec!r}") from None
    return getattr(nn, act.torch_module)() if act.torch_module is not None else Elementwise(act)


# --------------------------------------------------------------------------------------------------------------
# Dense MLP

class MLP(nn.Module):
    """A dense MLP with widths n₀ → n₁ → … → n_L, in rmtnet.spectra.network's convention: h_ℓ = W_ℓ x_{ℓ−1} + b_ℓ,
    x_ℓ = φ(h_ℓ), W_ℓ Gaussian N(0, σ_w²/n_{ℓ−1}) or σ_w × Haar orthogonal (a partial isometry scaled to the same
    entry variance when n_ℓ ≠ n_{ℓ−1}), b_ℓ ~ N(0, σ_b²); the last layer has φ only if ``last_activation``.
    Inputs of any shape (…, ``*``) are flattened to (…, n₀).

    :meth:`from_arch` builds the torch face of an :func:`rmtnet.spectra.network.mlp` description, so its input–output Jacobian
    at initialisation samples the law of :func:`rmtnet.spectra.jacobian_law`; :attr:`description` goes back (the laws
    read descriptions, not torch models).

    Parameters
    ----------
    widths : sequence of int
        n₀, n₁, …, n_L (at least two).
    activation : str, Activation or torch.nn.Module, default "relu"
        φ (see :func:`activation_module`).
    weights : {"gaussian", "orthogonal"}, default "gaussian"
        The law of the initial weights.
    sigma_w, sigma_b : float, default 1.0 and 0.0
        σ_w > 0 and σ_b ≥ 0.
    last_activation : bool, default False
        Apply φ after the last layer too.
    bias : bool, default True
        Give the layers biases.
    seed : int, optional
        Seed of the initial weights (drawn on the CPU).
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    Widths 3 → 4 → 2 have 3·4 + 4 + 4·2 + 2 = 26 parameters:

    >>> import torch
    >>> net = MLP([3, 4, 2], seed=0)
    >>> print(tuple(net(torch.randn(5, 3)).shape), sum(p.numel() for p in net.parameters()))
    (5, 2) 26
    """

    def __init__(self, widths, activation="relu", weights="gaussian", sigma_w=1.0, sigma_b=0.0, last_activation=False,
                 bias=True, seed=None, device=None, dtype=None):
        super().__init__()
        last_activation, bias = boolean("last_activation", last_activation), boolean("bias", bias)
        if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__") or getattr(widths, "ndim", 1) == 0:
            raise ValueError(f"widths must be a sequence of integers n₀, n₁, …, got {widths!r}")
        widths = tuple(widths)
        if len(widths) < 2:
            raise ValueError(f"widths must list at least n₀ and n₁, got {widths!r}")
        positive_integers(**{f"widths[{i}]": n for i, n in enumerate(widths)})
        widths = tuple(int(n) for n in widths)
        if not isinstance(weights, str) or weights not in ("gaussian", "orthogonal"):
            raise ValueError(f"weights must be 'gaussian' or 'orthogonal', got {weights!r}")
        sigma_w = real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
        sigma_b = real_scalar("sigma_b", sigma_b, lo=0.0)
        self.widths, self.last_activation = widths, bool(last_activation)
        widest = max(range(len(widths)), key=widths.__getitem__)
        check_parameters(f"widths[{widest}]", sum(a * b + b for a, b in zip(widths[:-1], widths[1:])), device=device,
                         dtype=dtype, scratch_numel=max(a * b for a, b in zip(widths[:-1], widths[1:])),
                         what=f"MLP's {len(widths) - 1} dense weight matrices",
                         alternative="give smaller widths (the spectra of wide networks without weights: "
                                     "rmtnet.spectra.network.MLP with its limit laws, or "
                                     "rmtnet.spectra.sampling.operators.mlp_network with rmtnet.spectra.slq)")
        g = generator(seed)
        self.layers = nn.ModuleList()
        for n_in, n_out in zip(widths[:-1], widths[1:]):
            lin = nn.Linear(n_in, n_out, bias=bias, device=device, dtype=dtype)
            if weights == "gaussian":
                gaussian_(lin.weight, sigma_w / math.sqrt(n_in), g)
            else:
                with torch.no_grad():
                    lin.weight.copy_(_haar_isometry(n_out, n_in, g) * (sigma_w * math.sqrt(max(n_out, n_in) / n_in)))
                    if not bool(torch.isfinite(lin.weight).all()):
                        raise ValueError(f"sigma_w = {sigma_w!r} gives initial weights beyond what "
                                         f"{lin.weight.dtype} holds; give a smaller sigma_w")
            if bias:
                gaussian_(lin.bias, sigma_b, g, "sigma_b")
            self.layers.append(lin)
        self.phi = activation_module(activation)
        self._spec = dict(weights=weights, sigma_w=sigma_w, sigma_b=sigma_b, activation=activation,
                          last_activation=self.last_activation)
        self._description = None

    @property
    def description(self):
        """The :class:`rmtnet.spectra.network.MLP` description of this model, which the laws and samplers read: the
        one it was built from by :meth:`from_description` (at this model's widths), else the description of its
        constructor's arguments fed an input with ‖x₀‖²/n₀ = 1 (``q0=1.0``). ValueError for an activation given as
        a torch module (the theory needs φ and φ′: give an :class:`~rmtnet.spectra.activations.Activation`).

        Examples
        --------
        >>> from rmtnet.spectra import jacobian_law
        >>> model = MLP([10, 10, 10], activation="linear", weights="orthogonal", last_activation=True)
        >>> jacobian_law(model.description).atoms()                     # J = W₂W₁ orthogonal: δ₁
        (array([1.]), array([1.]))
        """
        if self._description is not None:
            return self._description
        if isinstance(self._spec["activation"], nn.Module):
            raise ValueError("this MLP's activation is a torch module, which has no description (φ′ and its "
                             "Gaussian moments): build it from an activation name or an Activation")
        return _describe(len(self.widths) - 1, widths=self.widths, q0=1.0, **self._spec)

    @classmethod
    def from_description(cls, net, width=None, seed=None, device=None, dtype=None):
        """The trainable network that the description ``net`` (:func:`rmtnet.spectra.network.mlp`) describes: its L weight
        matrices as L ``nn.Linear`` layers (the last one the read-out), φ after the last only with
        ``net.last_activation``, biases where σ_b > 0 (widths rescaled to n₀ = ``width`` as in Monte Carlo). Its
        empirical NTK (:func:`rmtnet.nets.probes.empirical_ntk`) tends to
        :func:`rmtnet.spectra.kernels.ntk_kernel` of the same ``net`` (standard parameterisation) as the widths grow.

        Parameters
        ----------
        net : rmtnet.spectra.network.MLP
            The description.
        width : int, optional
            n₀ of the model; every width is scaled by the same factor (None: the description's widths).
        seed : int, optional
            Seed of the initial weights.
        device, dtype : optional
            torch device and dtype of the parameters.

        Returns
        -------
        MLP

        Examples
        --------
        >>> from rmtnet.spectra.network import mlp
        >>> MLP.from_description(mlp(3, widths=[4, 8, 8, 1], last_activation=False), seed=0).widths
        (4, 8, 8, 1)
        """
        return cls.from_arch(net, width, seed, device, dtype)

    @classmethod
    def from_arch(cls, net, width=None, seed=None, device=None, dtype=None):
        """The trainable MLP of an :class:`rmtnet.spectra.network.MLP` (widths rescaled to n₀ = ``width`` as in Monte Carlo);
        the same as :meth:`from_description`."""
        model = cls(net.scaled_widths(width), activation=net.activation, weights=net.weights, sigma_w=net.sigma_w,
                    sigma_b=net.sigma_b, last_activation=net.last_activation, bias=net.sigma_b > 0, seed=seed,
                    device=device, dtype=dtype)
        model._description = dataclasses.replace(net, widths=model.widths)    # the laws depend on the ratios only
        return model

    def forward(self, x):
        if x.shape[-1] != self.widths[0]:
            x = x.flatten(1)
        for i, lin in enumerate(self.layers):
            x = lin(x)
            if i < len(self.layers) - 1 or self.last_activation:
                x = self.phi(x)
        return x


def _haar_isometry(n_out, n_in, g):
    """An n_out × n_in Haar partial isometry (QR of a Gaussian matrix with the signs of diag R folded in)."""
    big, small = max(n_out, n_in), min(n_out, n_in)
    q, r = torch.linalg.qr(torch.randn(big, small, generator=g, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    return q if n_out >= n_in else q.T


# --------------------------------------------------------------------------------------------------------------
# The Mixer skeleton and its blocks

class Residual(nn.Module):
    """x ↦ x + f(LN(x)), LN over the last axis (channels), or x + f(x) without normalisation.

    Parameters
    ----------
    f : torch.nn.Module
        The residual branch.
    channels : int
        The size of the last axis (LayerNorm's normalised shape).
    norm : bool, default True
        Apply LayerNorm before ``f``.
    device, dtype : optional
        torch device and dtype of the LayerNorm's parameters.

    Examples
    --------
    With f the identity, x + f(x) = 2x; with LN, x = (1, 2, 3) (mean 2, variance 2/3) becomes
    x + (x − 2)/√(2/3 + 10⁻⁵) (LayerNorm's ε = 10⁻⁵; 1/√0.66667667 = 1.2247357) ≈ (−0.224736, 2, 4.224736):

    >>> import torch
    >>> x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    >>> Residual(torch.nn.Identity(), 3, norm=False)(x).tolist()
    [[2.0, 4.0, 6.0]]
    >>> block = Residual(torch.nn.Identity(), 3, dtype=torch.float64)
    >>> [round(v, 6) for v in block(x)[0].tolist()]
    [-0.224736, 2.0, 4.224736]
    """

    def __init__(self, f, channels, norm=True, device=None, dtype=None):
        super().__init__()
        norm = boolean("norm", norm)
        self.norm = nn.LayerNorm(channels, device=device, dtype=dtype) if norm else nn.Identity()
        self.f = f

    def forward(self, x):
        return x + self.f(self.norm(x))


class TwoLayer(nn.Module):
    """f(x) = layer₂(φ(layer₁(x))), on (…, S, C) features; ``flat=True`` flattens to (…, S·C) around the layers
    (for layers that act on the effective width m: masked, permuted, Monarch).

    Parameters
    ----------
    layer1, layer2 : torch.nn.Module
        The two layers.
    activation : str, Activation or torch.nn.Module
        φ between them (see :func:`activation_module`).
    shape : tuple of int, optional
        (S, C): flatten the last two axes before the layers and restore them after (None: no flattening).

    Examples
    --------
    Linear 2 → 3 and 3 → 1 have 2·3 + 3 + 3·1 + 1 = 13 parameters:

    >>> import torch
    >>> f = TwoLayer(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1), "relu")
    >>> print(tuple(f(torch.randn(4, 2)).shape), sum(p.numel() for p in f.parameters()))
    (4, 1) 13
    """

    def __init__(self, layer1, layer2, activation, shape=None):
        super().__init__()
        self.layer1, self.phi, self.layer2, self.shape = layer1, activation_module(activation), layer2, shape

    def forward(self, x):
        if self.shape is not None:
            x = x.flatten(-2)
        y = self.layer2(self.phi(self.layer1(x)))
        return y.unflatten(-1, self.shape) if self.shape is not None else y


class _PatchNet(nn.Module):
    """Patches (…, S, C_in) → ChannelMixing stem to C → blocks → LN → pooling → linear head.

    ``pool="mean"`` (Tolstikhin et al.): mean over tokens, head Linear(C, n_classes). ``pool="flatten"``: the whole
    m = S·C feature vector, head Linear(m, n_classes) — the effective MLP's own read-out, which avoids a C-channel
    bottleneck when C is small (few channels, many tokens)."""

    def __init__(self, tokens, in_channels, channels, n_classes, norm, g, device, dtype, pool="mean"):
        super().__init__()
        positive_integers(tokens=tokens, in_channels=in_channels, channels=channels, n_classes=n_classes)
        if not isinstance(pool, str) or pool not in ("mean", "flatten"):
            raise ValueError(f"pool must be 'mean' or 'flatten', got {pool!r}")
        self.tokens, self.in_channels, self.channels, self.pool = int(tokens), int(in_channels), int(channels), pool
        self._g, self._factory = g, dict(device=device, dtype=dtype)
        self.stem = ChannelMixing(in_channels, channels, seed=self._seed(), **self._factory)
        self.blocks = nn.Sequential()
        self.norm = nn.LayerNorm(channels, **self._factory) if norm else nn.Identity()
        n_read = channels if pool == "mean" else self.tokens * self.channels
        self.head = nn.Linear(n_read, n_classes, **self._factory)
        gaussian_(self.head.weight, 1.0 / math.sqrt(n_read), g)
        nn.init.zeros_(self.head.bias)

    def _seed(self):
        return int(torch.randint(2 ** 62, (1,), generator=self._g))

    @property
    def width(self):
        """The effective width m = S·C."""
        return self.tokens * self.channels

    def features(self, x):
        """The (…, S, C) features after the last block (before the final norm and pooling)."""
        if x.shape[-2:] != (self.tokens, self.in_channels):
            raise ValueError(f"input must have shape (…, S, C_in) = (…, {self.tokens}, {self.in_channels}), got "
                             f"{tuple(x.shape)}; images go through rmtnet.nets.data.to_patches first")
        return self.blocks(self.stem(x))

    def forward(self, x):
        z = self.norm(self.features(x))
        return self.head(z.mean(-2) if self.pool == "mean" else z.flatten(-2))


def _expanded(gamma, n, name):
    gamma = real_scalar("gamma", gamma, lo=0.0, lo_open=True)
    if round(gamma * n) < 1:
        raise ValueError(f"gamma must be > 0 with round(gamma·{name}) ≥ 1, got {gamma!r}")
    return int(round(gamma * n))


class MLPMixer(_PatchNet):
    """MLP-Mixer (Tolstikhin et al. 2021) on S tokens × C channels with expansion γ (token hidden γS, channel hidden
    γC). Token-MLP(X) = W₂ φ(W₁ X), Channel-MLP(X) = φ(X W₃) W₄ (Tolstikhin et al. 2021); pre-norm residual blocks.

    Parameters
    ----------
    tokens, in_channels : int
        S and C_in: the input is (…, S, C_in) patches (:func:`rmtnet.nets.data.to_patches`).
    channels : int
        C, the width of the stem and of the blocks.
    depth : int
        The number of blocks.
    n_classes : int
        The number of outputs.
    gamma : float, default 2.0
        The expansion γ (hidden widths round(γS), round(γC)).
    activation : str, Activation or torch.nn.Module, default "gelu"
        φ in the sub-blocks.
    norm : bool, default True
        The LayerNorms (pre-norm blocks and the final one).
    pool : {"mean", "flatten"}, default "mean"
        Mean over tokens before the head, or the whole S·C feature vector.
    seed : int, optional
        Seed of the weights (drawn on the CPU).
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    S = 4, C_in = 3, C = 2, γ = 2 (hidden 8 and 4), 5 classes, by hand: stem 3·2 + 2 = 8; token sub-block LN 4 +
    (4·8 + 8) + (8·4 + 4) = 80; channel sub-block 4 + (2·4 + 4) + (4·2 + 2) = 26; final LN 4; head 2·5 + 5 = 15;
    in all 133:

    >>> import torch
    >>> net = MLPMixer(tokens=4, in_channels=3, channels=2, depth=1, n_classes=5, seed=0)
    >>> print(tuple(net(torch.randn(6, 4, 3)).shape), sum(p.numel() for p in net.parameters()))
    (6, 5) 133
    """

    def __init__(self, tokens, in_channels, channels, depth, n_classes, gamma=2.0, activation="gelu", norm=True,
                 pool="mean", seed=None, device=None, dtype=None):
        super().__init__(tokens, in_channels, channels, n_classes, norm, generator(seed), device, dtype, pool)
        positive_integers(depth=depth)
        S, C, f = self.tokens, self.channels, self._factory
        gS, gC = _expanded(gamma, S, "S"), _expanded(gamma, C, "C")
        self.gamma = gamma
        for _ in range(depth):
            self.blocks.append(Residual(TwoLayer(TokenMixing(S, gS, seed=self._seed(), **f),
                                                 TokenMixing(gS, S, seed=self._seed(), **f), activation), C, norm, **f))
            self.blocks.append(Residual(TwoLayer(ChannelMixing(C, gC, seed=self._seed(), **f),
                                                 ChannelMixing(gC, C, seed=self._seed(), **f), activation), C, norm,
                                        **f))


class RPMixer(_PatchNet):
    """Random-permuted Mixer (Hayase & Karakida, ICML 2024, arXiv 2306.01470): the token sub-block's J_cᵀ(I ⊗ W)J_c
    becomes J₁(I_C ⊗ W)J₂ with independent uniform permutations, fixed at initialisation (a fresh pair for each of its
    two layers; the two between the layers are drawn as their composition, one uniform permutation, since the activation
    between them is elementwise). Channel sub-blocks are the Mixer's. ``permutations="commutation"`` puts the
    commutations back, and the model is then exactly an :class:`MLPMixer` (the same seed draws the same weights: a
    PermutedMixing with commutations draws no permutation, so its weight is the TokenMixing's).

    Parameters
    ----------
    tokens, in_channels : int
        S and C_in: the input is (…, S, C_in) patches (:func:`rmtnet.nets.data.to_patches`).
    channels : int
        C, the width of the stem and of the blocks.
    depth : int
        The number of blocks.
    n_classes : int
        The number of outputs.
    gamma : float, default 2.0
        The expansion γ (hidden widths round(γS), round(γC)).
    activation : str, Activation or torch.nn.Module, default "gelu"
        φ in the sub-blocks.
    norm : bool, default True
        The LayerNorms (pre-norm blocks and the final one).
    permutations : {"random", "commutation"}, default "random"
        Uniform random permutations, or the commutations (the Mixer).
    pool : {"mean", "flatten"}, default "mean"
        Mean over tokens before the head, or the whole S·C feature vector.
    seed : int, optional
        Seed of the weights (drawn on the CPU).
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    The same shapes as the Mixer's, so the same 133 parameters as the :class:`MLPMixer` example; with the commutations
    put back it has the Mixer's weights for the same seed (every parameter equal) and so its outputs (to rounding):

    >>> import torch
    >>> x = torch.randn(6, 4, 3)
    >>> rp = RPMixer(tokens=4, in_channels=3, channels=2, depth=1, n_classes=5, seed=0)
    >>> print(tuple(rp(x).shape), sum(p.numel() for p in rp.parameters()))
    (6, 5) 133
    >>> same = RPMixer(4, 3, 2, 1, 5, permutations="commutation", seed=0)
    >>> mixer = MLPMixer(4, 3, 2, 1, 5, seed=0)
    >>> print(all(torch.equal(p, q) for p, q in zip(same.parameters(), mixer.parameters())),
    ...       torch.allclose(same(x), mixer(x), atol=1e-5))
    True True
    """

    def __init__(self, tokens, in_channels, channels, depth, n_classes, gamma=2.0, activation="gelu", norm=True,
                 permutations="random", pool="mean", seed=None, device=None, dtype=None):
        super().__init__(tokens, in_channels, channels, n_classes, norm, generator(seed), device, dtype, pool)
        positive_integers(depth=depth)
        if not isinstance(permutations, str) or permutations not in ("random", "commutation"):
            raise ValueError(f"permutations must be 'random' or 'commutation', got {permutations!r}")
        S, C, f = self.tokens, self.channels, self._factory
        gS, gC = _expanded(gamma, S, "S"), _expanded(gamma, C, "C")
        self.gamma, self.permutations = gamma, permutations
        commute = permutations == "commutation"
        for _ in range(depth):
            s1, s2 = self._seed(), self._seed()
            # J₁(I ⊗ W₁)J₂ → φ → J₃(I ⊗ W₂)J₄: φ is elementwise, so J₂ and J₃ merge into one permutation, put on
            # the second layer (the commutations cancel; two independent uniform permutations compose to a uniform one)
            p1 = dict(perm_in=commutation(S, C) if commute else "random", perm_out=None)
            p2 = dict(perm_in=None, perm_out=commutation(C, S)) if commute else dict(perm_in="random")
            token = TwoLayer(PermutedMixing(C, S, gS, seed=s1, **p1, **f), PermutedMixing(C, gS, S, seed=s2, **p2, **f),
                             activation, (S, C))
            self.blocks.append(Residual(token, C, norm, **f))
            self.blocks.append(Residual(TwoLayer(ChannelMixing(C, gC, seed=self._seed(), **f),
                                                 ChannelMixing(gC, C, seed=self._seed(), **f), activation), C, norm,
                                        **f))


#: ``SWMLP(storage="auto")`` stores its masks sparse from this effective width m on …
SPARSE_MIN_WIDTH = 256
#: … when no layer is denser than this (a sparse layer's work is ∝ its connections, a dense-mask layer's ∝ m²;
#: the crossover is measured by ``benchmarks/mixing.py --crossover``).
SPARSE_MAX_DENSITY = 1 / 8


def sparse_storage(width, density):
    """The storage ``SWMLP(storage="auto")`` picks, ``"sparse"`` or ``"dense"``, for effective width m = ``width``
    and largest layer density ``density``: sparse when m ≥ :data:`SPARSE_MIN_WIDTH` and density ≤
    :data:`SPARSE_MAX_DENSITY`, else dense.

    Parameters
    ----------
    width : int
        The effective width m = S·C.
    density : float
        The largest layer density, in (0, 1].

    Returns
    -------
    str
        ``"sparse"`` or ``"dense"``.

    Examples
    --------
    >>> sparse_storage(256, 1 / 8), sparse_storage(255, 1 / 8), sparse_storage(1024, 0.5)
    ('sparse', 'dense', 'dense')
    """
    positive_integers(width=width)
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must lie in (0, 1], got {density!r}")
    return "sparse" if width >= SPARSE_MIN_WIDTH and density <= SPARSE_MAX_DENSITY else "dense"


class SWMLP(_PatchNet):
    """Static-mask sparse MLP on the effective width m = S·C (the SW-MLP of Hayase & Karakida 2024): each Mixer layer is
    replaced by a :class:`MaskedLinear` M ⊙ W of the same shape on the flattened features, with a fixed random mask of
    density ``density`` — by default 1/C in the token-like and 1/S in the channel-like sub-block, the densities of the
    Mixer's kron(W, I_C) and kron(I_S, V), so both have Ω connections per layer on average. A single number sets every
    layer's density (``density=1`` is the dense MLP of width m with the same stem, norms and head). ``mask``:
    ``"bernoulli"`` or ``"exact"`` (see :class:`MaskedLinear`).

    ``storage``: ``"sparse"`` builds the layers as :class:`SparseMaskedLinear` (only the kept weights are stored
    and multiplied: memory and time ∝ the connections), ``"dense"`` as :class:`MaskedLinear` (an n_out × n_in weight
    and mask per layer: memory and time ∝ m², the reference for tests, and the storage that ``torch.func`` probes
    need), ``"auto"`` (default) as :func:`sparse_storage` says. Both draw masks and kept weights from the same law, so
    the choice does not change the model's distribution, only the draws a given seed gives.

    Parameters
    ----------
    tokens, in_channels : int
        S and C_in: the input is (…, S, C_in) patches (:func:`rmtnet.nets.data.to_patches`).
    channels : int
        C, the width of the stem and of the blocks.
    depth : int
        The number of blocks.
    n_classes : int
        The number of outputs.
    gamma : float, default 2.0
        The expansion γ (hidden widths round(γS), round(γC)).
    activation : str, Activation or torch.nn.Module, default "gelu"
        φ in the sub-blocks.
    norm : bool, default True
        The LayerNorms (pre-norm blocks and the final one).
    density : float, optional
        One density for every layer (None: 1/C token-like, 1/S channel-like).
    mask : {"bernoulli", "exact"}, default "bernoulli"
        How the masks are drawn.
    pool : {"mean", "flatten"}, default "mean"
        Mean over tokens before the head, or the whole S·C feature vector.
    storage : {"auto", "sparse", "dense"}, default "auto"
        How the masked layers are stored.
    seed : int, optional
        Seed of the weights (drawn on the CPU).
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    m = 4·2 = 8 < 256, so "auto" stores dense; dense masked layers hold every weight: stem 8; each sub-block
    LN 4 + (8·16 + 16) + (16·8 + 8) = 284 (γS·C = S·γC = 16); final LN 4; head 15; in all 595:

    >>> import torch
    >>> net = SWMLP(tokens=4, in_channels=3, channels=2, depth=1, n_classes=5, seed=0)
    >>> print(net.storage, tuple(net(torch.randn(6, 4, 3)).shape), sum(p.numel() for p in net.parameters()))
    dense (6, 5) 595
    """

    def __init__(self, tokens, in_channels, channels, depth, n_classes, gamma=2.0, activation="gelu", norm=True,
                 density=None, mask="bernoulli", pool="mean", storage="auto", seed=None, device=None, dtype=None):
        super().__init__(tokens, in_channels, channels, n_classes, norm, generator(seed), device, dtype, pool)
        positive_integers(depth=depth)
        S, C, f = self.tokens, self.channels, self._factory
        m, gS, gC = S * C, _expanded(gamma, S, "S"), _expanded(gamma, C, "C")
        p_token, p_channel = (1.0 / C, 1.0 / S) if density is None else (density, density)
        self.gamma = gamma
        self.storage = sparse_storage(m, max(p_token, p_channel)) if storage == "auto" else storage
        if self.storage not in ("sparse", "dense"):
            raise ValueError(f"storage must be 'sparse', 'dense' or 'auto', got {storage!r}")
        layer = SparseMaskedLinear if self.storage == "sparse" else MaskedLinear

        def masked(n_in, n_out, p):
            return layer(n_in, n_out, density=p, mask=mask, seed=self._seed(), **f)

        for _ in range(depth):
            self.blocks.append(Residual(TwoLayer(masked(m, gS * C, p_token), masked(gS * C, m, p_token), activation,
                                                 (S, C)), C, norm, **f))
            self.blocks.append(Residual(TwoLayer(masked(m, S * gC, p_channel), masked(S * gC, m, p_channel),
                                                 activation, (S, C)), C, norm, **f))


class MonarchMLP(_PatchNet):
    """MLP on the effective width m = S·C whose layers are Monarch matrices with S blocks (Dao et al. 2022), m → γm
    → m in each residual block: one Monarch layer mixes channels within each token (R, blocks C → γC) and tokens
    within each channel (L, blocks S × S), so one block here plays the part of a Mixer's token + channel pair.

    Parameters
    ----------
    tokens, in_channels : int
        S and C_in: the input is (…, S, C_in) patches (:func:`rmtnet.nets.data.to_patches`).
    channels : int
        C, the width of the stem and of the blocks.
    depth : int
        The number of blocks.
    n_classes : int
        The number of outputs.
    gamma : float, default 2.0
        The expansion γ (hidden widths round(γS), round(γC)).
    activation : str, Activation or torch.nn.Module, default "gelu"
        φ in the sub-blocks.
    norm : bool, default True
        The LayerNorms (pre-norm blocks and the final one).
    pool : {"mean", "flatten"}, default "mean"
        Mean over tokens before the head, or the whole S·C feature vector.
    seed : int, optional
        Seed of the weights (drawn on the CPU).
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    S = 4 blocks, m = 8 → γm = 16 → 8: R (4 blocks 4×2) 32 + L (4 × 4×4) 64 + bias 16 = 112, then R 32 + L (2 × 4×4)
    32 + bias 8 = 72; with LN 4, stem 8, final LN 4 and head 15: 215 parameters:

    >>> import torch
    >>> net = MonarchMLP(tokens=4, in_channels=3, channels=2, depth=1, n_classes=5, seed=0)
    >>> print(tuple(net(torch.randn(6, 4, 3)).shape), sum(p.numel() for p in net.parameters()))
    (6, 5) 215
    """

    def __init__(self, tokens, in_channels, channels, depth, n_classes, gamma=2.0, activation="gelu", norm=True,
                 pool="mean", seed=None, device=None, dtype=None):
        super().__init__(tokens, in_channels, channels, n_classes, norm, generator(seed), device, dtype, pool)
        positive_integers(depth=depth)
        S, C, f = self.tokens, self.channels, self._factory
        m, gm = S * C, S * _expanded(gamma, C, "C")
        self.gamma = gamma
        for _ in range(depth):
            self.blocks.append(Residual(TwoLayer(MonarchLinear(m, gm, S, seed=self._seed(), **f),
                                                 MonarchLinear(gm, m, S, seed=self._seed(), **f), activation, (S, C)),
                                        C, norm, **f))


# --------------------------------------------------------------------------------------------------------------
# Ensemble Mask Network

class EMN(nn.Module):
    """Ensemble Mask Network (Luntzel 2023, arXiv 2309.06382, §2): y = W_L ⋯ W_2 (Â ⊙ W_1) x for inputs (x, A), x ∈ ℝⁿ
    and a per-sample adjacency A ∈ [0, 1]^{n×n}.

    ``copies`` = (c_1, …, c_k): hidden layer i has c_i copies of each of the n nodes (Luntzel 2023, Fig. 2: (1,) is
    architecture (0)/(1), (2, 2) and (2, 3) the others). The first layer is an :class:`AdjacencyLinear` masked by A;
    later layers are :class:`ClusterLinear` (each node's cluster receives only from the same node's cluster) ending in
    one output per node. ``sequential=True`` masks the second layer by A as well (Luntzel 2023, Fig. 5: two A-steps, so
    the network represents A²x), and ``self_loops=True`` adds I to that second mask (A x + A² x). No activations by
    default, as in the paper; ``activation`` puts one between layers. Weights N(0, σ_w²/fan_in).

    Parameters
    ----------
    n : int
        The number of nodes.
    copies : sequence of int, default (1,)
        Copies of each node in every hidden layer.
    sequential : bool, default False
        Mask the second layer by A as well (needs two hidden layers).
    self_loops : bool, default False
        Add I to the second layer's mask (needs ``sequential``).
    activation : str, Activation or torch.nn.Module, default "linear"
        φ between layers.
    bias : bool, default False
        Give the layers biases.
    seed : int, optional
        Seed of the weights.
    sigma_w : float, default 1.0
        The weights' scale.
    device, dtype : optional
        torch device and dtype of the parameters.

    Examples
    --------
    n = 3 nodes with 2 copies: the first layer is 6 × 3 (18 weights), the last one weight per copy (3·2 = 6),
    24 in all; without biases A = 0 gives y = 0:

    >>> import torch
    >>> net = EMN(3, copies=(2,), seed=0)
    >>> x = torch.randn(5, 3)
    >>> y = net(x, torch.zeros(5, 3, 3))
    >>> print(tuple(y.shape), sum(p.numel() for p in net.parameters()), bool((y == 0).all()))
    (5, 3) 24 True
    """

    def __init__(self, n, copies=(1,), sequential=False, self_loops=False, activation="linear", bias=False, seed=None,
                 sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        sequential, self_loops = boolean("sequential", sequential), boolean("self_loops", self_loops)
        bias = boolean("bias", bias)
        copies = tuple(copies)
        if not copies:
            raise ValueError("copies must list at least one hidden layer's copies per node")
        positive_integers(n=n, **{f"copies[{i}]": c for i, c in enumerate(copies)})
        if sequential and len(copies) < 2:
            raise ValueError("sequential=True needs at least two hidden layers (copies of length ≥ 2)")
        if self_loops and not sequential:
            raise ValueError("self_loops applies to the second, sequential adjacency layer: set sequential=True")
        self.n, self.copies, self.sequential = int(n), copies, bool(sequential)
        g = generator(seed)
        kw = dict(bias=bias, sigma_w=sigma_w, device=device, dtype=dtype)
        seeds = lambda: int(torch.randint(2 ** 62, (1,), generator=g))
        self.first = AdjacencyLinear(n, 1, copies[0], seed=seeds(), **kw)
        self.second = (AdjacencyLinear(n, copies[0], copies[1], self_loops=self_loops, seed=seeds(), **kw)
                       if sequential else None)
        chain = copies[1:] if sequential else copies
        self.hidden = nn.ModuleList(ClusterLinear(n, a, b, seed=seeds(), **kw) for a, b in zip(chain, chain[1:] + (1,)))
        self.phi = activation_module(activation)

    def forward(self, x, A):
        h = self.first(x, A)
        if self.second is not None:
            h = self.second(self.phi(h), A)
        for layer in self.hidden:
            h = layer(self.phi(h))
        return h
