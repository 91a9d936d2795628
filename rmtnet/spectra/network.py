"""The network description: one object that feeds the limit laws (``rmtnet.spectra``) and the Monte Carlo.

Convention (Pennington, Schoenholz & Ganguli 2017 and AISTATS 2018; Collins & Hayase, CMP 2023): an input x₀ ∈ ℝ^{n₀}
with q₀ = ‖x₀‖²/n₀, and for ℓ = 1, …, L

    h_ℓ = W_ℓ x_{ℓ-1} + b_ℓ,      x_ℓ = φ(h_ℓ),      W_ℓ ∈ ℝ^{n_ℓ × n_{ℓ-1}},  b_ℓ ~ N(0, σ_b² I),

with W_ℓ either Gaussian (iid entries N(0, σ_w²/n_{ℓ-1})) or orthogonal (σ_w times a Haar orthogonal matrix; for
n_ℓ ≠ n_{ℓ-1} a Haar partial isometry scaled so that its entries also have variance σ_w²/n_{ℓ-1}). The
input–output Jacobian is::

    J = D_L W_L D_{L-1} ⋯ D_1 W_1   (``last_activation=True``, L factors D_ℓ = diag φ′(h_ℓ)), or
    J = W_L D_{L-1} ⋯ D_1 W_1       (``last_activation=False``: a linear read-out f(x) = h_L, as in
                                    Collins & Hayase 2023).

**One description, one network.** The L weight matrices W₁ … W_L are the whole network, and W_L is its read-out:
the output is h_L = W_L x_{L-1} + b_L (n_L outputs), with φ applied to it only when ``last_activation``. Every
function that reads a description reads this network: the Jacobian and one-sample Fisher laws and their Monte Carlo
(the output x_L as above); the kernels (:func:`~rmtnet.spectra.kernels.nngp_kernel`,
:func:`~rmtnet.spectra.kernels.ntk_kernel`: the kernel of one output unit of h_L, every layer trained); Fan & Wang's
laws over data (:func:`~rmtnet.spectra.ntk.ck_law`, :func:`~rmtnet.spectra.ntk.ntk_law`, their Monte Carlo): the
L − 1 hidden layers and the read-out W_L to one output unit, so depth ≥ 2; and the torch model
(:meth:`rmtnet.nets.MLP.from_description`). The kernels and Fan & Wang's laws describe a linear read-out (h_L)
whatever ``last_activation`` says; give ``last_activation=False`` for the torch model to be that network.

Pre-activations obey the mean-field recursion q₁ = σ_w² q₀ + σ_b², q_{ℓ+1} = σ_w² E[φ(√q_ℓ ξ)²] + σ_b²; the
theory uses these per-layer q_ℓ, and the Monte Carlo propagates an actual input, so both see the same q_ℓ.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from . import meanfield
from rmtnet._validation import real_scalar
from .activations import Activation, activation as _activation

__all__ = ["MLP", "mlp", "check_network"]

WEIGHTS = ("gaussian", "orthogonal")
SIGMA_RANGE = (1e-150, 1e150)     # σ_w, σ_b (other than σ_b = 0): their squares stay normal float64 numbers


@dataclass(frozen=True)
class MLP:
    """A random multilayer perceptron at initialisation. Build it with :func:`mlp`.

    ``widths`` = (n₀, n₁, …, n_L) at the reference width; theory depends only on the ratios n_ℓ/n_{ℓ-1}, Monte Carlo
    may rescale every width by a common factor.

    Parameters
    ----------
    widths : tuple of int
        n₀, n₁, …, n_L.
    weights : {"gaussian", "orthogonal"}
        The weight ensemble.
    sigma_w, sigma_b : float
        The weight scale σ_w > 0 and the bias standard deviation σ_b ≥ 0.
    activation : Activation
        φ, with φ′ and its Gaussian moments.
    last_activation : bool
        Whether φ is applied to the output h_L.
    q0 : float
        The input's ‖x₀‖²/n₀.
    q : tuple of float
        q_1 … q_L, the pre-activation variances of the mean-field recursion.

    Examples
    --------
    Critical ReLU (σ_w² = 2) from q₀ = 1: q_ℓ = 2·q_{ℓ-1}/2 stays 2 and q̂_ℓ = E[relu(h)²] = q_ℓ/2 = 1:

    >>> net = mlp(3, 100, ratios=[0.5, 2.0, 1.0], activation="relu", sigma_w=2 ** 0.5, q0=1.0)
    >>> net.widths, net.depth, net.ratios, net.square, net.scaled_widths(10)
    ((100, 50, 100, 100), 3, (0.5, 2.0, 1.0), False, (10, 5, 10, 10))
    >>> [round(v, 6) for v in net.q], [round(v, 6) for v in net.post_activation_moments()]
    ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
    """
    widths: tuple
    weights: str
    sigma_w: float
    sigma_b: float
    activation: Activation
    last_activation: bool
    q0: float
    q: tuple = field(repr=False)          # q_1 … q_L, pre-activation variances of the mean-field recursion

    @property
    def depth(self) -> int:
        return len(self.widths) - 1

    @property
    def width(self) -> int:
        return self.widths[0]

    @property
    def ratios(self) -> tuple:
        """n_ℓ/n_{ℓ-1} for ℓ = 1 … L."""
        return tuple(b / a for a, b in zip(self.widths[:-1], self.widths[1:]))

    @property
    def square(self) -> bool:
        return len(set(self.widths)) == 1

    def post_activation_moments(self):
        """q̂_ℓ = E[φ(h_ℓ)²] = ‖x_ℓ‖²/n_ℓ in the limit, for ℓ = 0 … L-1 (q̂₀ = q₀, the input)."""
        return (self.q0,) + tuple(meanfield.second_moment(self.activation, q) for q in self.q[:-1])

    def d_layers(self):
        """Indices ℓ (1-based) of the layers whose D_ℓ enters the Jacobian."""
        return range(1, self.depth + 1) if self.last_activation else range(1, self.depth)

    def scaled_widths(self, width=None):
        """The widths with n₀ set to ``width`` and every other width scaled by the same factor (rounded)."""
        if width is None:
            return self.widths
        try:
            ok = (not isinstance(width, bool) and isinstance(width, numbers.Real) and math.isfinite(width)
                  and int(width) == width and width >= 1)
        except OverflowError:
            ok = False
        if not ok:
            raise ValueError(f"width must be a positive integer, got {width!r:.60}")
        f = int(width) / self.widths[0]
        return tuple(max(1, int(round(n * f))) for n in self.widths)


def _int(name, v, lo=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an integer ≥ {lo}, got {v!r}")
    return int(v)


def mlp(depth, width=1000, *, ratios=None, widths=None, weights="gaussian", sigma_w=1.0, sigma_b=0.0,
        activation="relu", dphi=None, last_activation=True, q0="fixed_point") -> MLP:
    """Describe a random MLP (see the module docstring for the convention).

    Parameters
    ----------
    depth, width : int
        L ≥ 1 weight layers; n₀ (and every nₗ when neither ``ratios`` nor ``widths`` is given).
    ratios, widths : sequence, optional
        L numbers n_ℓ/n_{ℓ-1} (the widths follow by rounding), or the L + 1 widths n₀ … n_L directly.
    weights, sigma_w, sigma_b, last_activation : str, float, float, bool, optional
        ``"gaussian"`` or ``"orthogonal"``; the weight scale σ_w > 0; the bias standard deviation σ_b ≥ 0; whether φ
        is applied to the output h_L (see the module docstring).
    activation, dphi : str, Activation or callable; callable, optional
        A registered name (``linear``, ``relu``, ``hard_tanh``, ``erf``, ``tanh``, ``gelu`` or one added by
        :func:`~rmtnet.spectra.activations.define_activation`), an :class:`~rmtnet.spectra.activations.Activation`,
        or a callable φ with ``dphi`` = φ′.
    q0 : float or "fixed_point", optional
        The input's ‖x₀‖²/n₀, or ``"fixed_point"`` for the input whose first pre-activation variance is the fixed
        point q* of the length map reached from q = 1 (then every q_ℓ = q*, Pennington et al.'s setting).

    Returns
    -------
    MLP

    Examples
    --------
    Linear with σ_w = 1, σ_b² = ¼ and q₀ = 2: q₁ = 2 + ¼ and q₂ = q₁ + ¼ (widths: see :class:`MLP`'s example):

    >>> mlp(2, 100, activation="linear", sigma_b=0.5, q0=2.0).q
    (2.25, 2.5)
    """
    depth = _int("depth", depth)
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    sigma_w = real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
    sigma_b = real_scalar("sigma_b", sigma_b, lo=0.0)
    for name, value in (("sigma_w", sigma_w), ("sigma_b", sigma_b)):
        if value and not SIGMA_RANGE[0] <= value <= SIGMA_RANGE[1]:      # σ² enters every variance
            raise ValueError(f"{name} must be 0 or lie in [{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}] (its square, "
                             f"which every variance multiplies, must be a normal float64), got {value!r}")
    act = _activation(activation, dphi)
    if widths is not None:
        if ratios is not None:
            raise ValueError("give either ratios or widths, not both")
        widths = tuple(_int(f"widths[{i}]", n) for i, n in enumerate(widths))
        if len(widths) != depth + 1:
            raise ValueError(f"widths must have depth + 1 = {depth + 1} entries, got {len(widths)}")
    else:
        width = _int("width", width)
        if ratios is None:
            widths = (width,) * (depth + 1)
        else:
            ratios = [real_scalar(f"ratios[{i}]", r, lo=0.0, lo_open=True) for i, r in enumerate(ratios)]
            if len(ratios) != depth:
                raise ValueError(f"ratios must have depth = {depth} entries, got {len(ratios)}")
            widths = [width]
            for r in ratios:
                widths.append(max(1, int(round(widths[-1] * r))))
            widths = tuple(widths)
    if isinstance(q0, str):
        if q0 != "fixed_point":
            raise ValueError(f"q0 must be a positive number or 'fixed_point', got {q0!r}")
        try:
            qs = meanfield.q_star(act, sigma_w, sigma_b, q0=1.0)
        except ValueError:
            if not act.homogeneous:
                raise ValueError(f"{act.name} at sigma_w={sigma_w}, sigma_b={sigma_b} has no finite fixed point; "
                                 "give a numeric q0") from None
            qs = None                            # φ′² does not depend on q: any input will do
        if qs is None:
            q0 = 1.0
            q = meanfield.variance_profile(act, sigma_w, sigma_b, q0, depth)
        else:
            q0 = max(qs - sigma_b ** 2, 0.0) / sigma_w ** 2
            q = (qs,) * depth
    else:
        q0 = real_scalar("q0", q0, lo=0.0, lo_open=True)
        q = meanfield.variance_profile(act, sigma_w, sigma_b, q0, depth)
    return MLP(widths, weights, sigma_w, sigma_b, act, bool(last_activation), float(q0), tuple(float(v) for v in q))


def check_network(name, net) -> MLP:
    """Return ``net`` if it is a network description (an :class:`MLP`, built by :func:`mlp`), else raise ValueError
    naming ``name``: every law, kernel and sampler that reads a description checks it here.

    Examples
    --------
    >>> check_network("net", mlp(2, 10)).depth
    2
    >>> check_network("net", [10, 10])
    Traceback (most recent call last):
    ...
    ValueError: net must be an rmtnet.spectra.network.MLP (built with rmtnet.spectra.network.mlp), got list
    """
    if not isinstance(net, MLP):
        raise ValueError(f"{name} must be an rmtnet.spectra.network.MLP (built with rmtnet.spectra.network.mlp), got "
                         f"{type(net).__name__}")
    return net
