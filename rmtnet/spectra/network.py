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
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import meanfield
from rmtnet._validation import boolean, integer_at_least, real_scalar, whole_number
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
        f = whole_number("width", width, 1) / self.widths[0]
        return tuple(max(1, int(round(n * f))) for n in self.widths)


def _int(name, v, lo=1):
    return integer_at_least(name, v, lo)


def _critical_sigma_w(act, sigma_b=0.0):
    """The σ_w of :func:`mlp`'s default: the edge of chaos χ = σ_w² E[φ′(√q* ξ)²] = 1 (Poole et al., NeurIPS 2016;
    Schoenholz et al., ICLR 2017) for the activation at bias scale σ_b.

    Homogeneous φ (linear, ReLU): E[φ′²] does not depend on q, so σ_w = 1/√E[φ′²] exactly (1, √2 — He et al.'s
    initialisation, ICCV 2015). σ_b = 0 and φ(0) = 0 (tanh, erf, hard-tanh): q* = 0 and χ = σ_w² φ′(0)², so
    σ_w = 1/|φ′(0)| (1 for all three) where the length map brings q = 1 down to that fixed point (not for GELU,
    whose q grows there); σ_b > 0: the root of χ − 1 by :func:`~rmtnet.spectra.meanfield.critical_sigma_w`.
    ValueError where none exists (give σ_w yourself).
    """
    if act.homogeneous:
        return math.sqrt(1.0 / meanfield.d2_moments(act, 1.0, 1))
    phi0, dphi0 = (float(np.asarray(f(np.zeros(1)))[0]) for f in (act.phi, act.dphi))
    if sigma_b == 0 and phi0 == 0:          # q = 0 is a fixed point; the ordered phase ends where χ(0) = 1
        s = 1.0 / abs(dphi0) if dphi0 != 0 else math.inf
        if s <= SIGMA_RANGE[1] and meanfield.length_map(act, 1.0, s) < 1.0 and meanfield.q_star(act, s) == 0.0:
            return s
        raise ValueError(f"{act.name} at sigma_b=0 has no critical sigma_w (the default) whose fixed point is reached "
                         "from q = 1; give sigma_w")
    try:
        return meanfield.critical_sigma_w(act, sigma_b)
    except ValueError:
        raise ValueError(f"{act.name} at sigma_b={sigma_b} has no critical sigma_w (the default); give sigma_w"
                         ) from None


def _widths(depth, width, ratios, widths):
    """n₀ … n_L from ``widths`` or from n₀ = ``width`` and the ``ratios`` (rounded), checked."""
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
    return widths


def _variances(act, sigma_w, sigma_b, q0, depth, default_w):
    """(q₀, (q_1 … q_L)) for a numeric ``q0`` or ``"fixed_point"`` (see :func:`mlp`)."""
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
        if qs is None or (qs == 0 and default_w):  # the default σ_w's fixed point is the zero input: feed q₀ = 1
            q0 = 1.0
            q = meanfield.variance_profile(act, sigma_w, sigma_b, q0, depth)
        else:
            q0 = max(qs - sigma_b ** 2, 0.0) / sigma_w ** 2
            q = (qs,) * depth
    else:
        q0 = real_scalar("q0", q0, lo=0.0, lo_open=True)
        q = meanfield.variance_profile(act, sigma_w, sigma_b, q0, depth)
    return q0, q


def mlp(depth, width=1000, *, ratios=None, widths=None, weights="gaussian", sigma_w=None, sigma_b=0.0,
        activation="relu", dphi=None, last_activation=True, q0="fixed_point") -> MLP:
    """Describe a random MLP (see the module docstring for the convention).

    Parameters
    ----------
    depth, width : int
        L ≥ 1 weight layers; n₀ (and every nₗ when neither ``ratios`` nor ``widths`` is given).
    ratios, widths : sequence, optional
        L numbers n_ℓ/n_{ℓ-1} (the widths follow by rounding), or the L + 1 widths n₀ … n_L directly.
    weights, sigma_w, sigma_b, last_activation : str, float or None, float, bool, optional
        ``"gaussian"`` or ``"orthogonal"``; the weight scale σ_w > 0; the bias standard deviation σ_b ≥ 0; whether φ
        is applied to the output h_L (see the module docstring). The default ``sigma_w=None`` is the activation's
        critical σ_w at this σ_b (√2 for ReLU, 1 for linear, tanh, erf and
        hard-tanh at σ_b = 0): the initialisation people train (He et al. 2015 for ReLU) and the edge of chaos, where
        the Jacobian neither vanishes nor explodes with depth. A fixed σ_w = 1 would put ReLU in the ordered phase,
        whose fixed point q* = 0 is a zero input: every law of it is δ₀. Where the default σ_w's own fixed point is
        q* = 0 (tanh, erf, hard-tanh at σ_b = 0, whose q_ℓ decay like 1/ℓ), ``q0="fixed_point"`` feeds q₀ = 1
        instead. GELU at σ_b = 0 has no critical σ_w (ValueError: give one).
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

    The default σ_w is critical: √2 for ReLU, where every input is a fixed point (q₀ = ½ gives q_ℓ = 1):

    >>> net = mlp(3, 100)
    >>> net.sigma_w == 2 ** 0.5, net.q
    (True, (1.0, 1.0, 1.0))
    """
    last_activation = boolean("last_activation", last_activation)
    depth = _int("depth", depth)
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    sigma_b = real_scalar("sigma_b", sigma_b, lo=0.0)
    act = _activation(activation, dphi)
    default_w = sigma_w is None
    if default_w:
        sigma_w = _critical_sigma_w(act, sigma_b)
    else:
        sigma_w = real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
    for name, value in (("sigma_w", sigma_w), ("sigma_b", sigma_b)):
        if value and not SIGMA_RANGE[0] <= value <= SIGMA_RANGE[1]:      # σ² enters every variance
            raise ValueError(f"{name} must be 0 or lie in [{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}] (its square, "
                             f"which every variance multiplies, must be a normal float64), got {value!r}")
    widths = _widths(depth, width, ratios, widths)
    q0, q = _variances(act, sigma_w, sigma_b, q0, depth, default_w)
    return MLP(widths, weights, sigma_w, sigma_b, act, bool(last_activation), float(q0), tuple(float(v) for v in q))


def check_network(name, net) -> MLP:
    """Return ``net`` if it is a network description (an :class:`MLP`, built by :func:`mlp`), else raise ValueError
    naming ``name``: every law, kernel and sampler that reads a description checks it here. A trainable torch model
    (:class:`rmtnet.nets.MLP`, recognised by its module so that this module never imports torch) is refused with
    the way back to its description.

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
        cls = type(net)
        if cls.__module__.startswith("rmtnet.nets"):
            raise ValueError(f"{name} is an rmtnet.nets.{cls.__qualname__} (a trainable torch model); the laws read "
                             "its description, an rmtnet.spectra.network.MLP: pass model.description (the "
                             "description it was built from by rmtnet.nets.MLP.from_description), or build one "
                             "with rmtnet.spectra.network.mlp(depth, width, ...)")
        raise ValueError(f"{name} must be an rmtnet.spectra.network.MLP (built with rmtnet.spectra.network.mlp), got "
                         f"{type(net).__name__}")
    return net


def dead_layers(net):
    """The layers ℓ whose D_ℓ² = φ′(0)² = 0 is δ₀ because q_ℓ = 0 (ReLU fed a zero input): each makes the Jacobian
    δ₀."""
    dphi0 = float(np.asarray(net.activation.dphi(np.zeros(1)))[0])
    return [ell for ell in net.d_layers() if net.q[ell - 1] == 0 and dphi0 == 0]


def _collapse_cause(net, layers):
    """Why a law built on the q_ℓ of ``layers`` (1-based indices of the layers whose q_ℓ = 0 kills it) is δ₀, as a
    sentence, or None: the input is zero (q₀ = 0 — the fixed point q* = 0 of the ordered phase when
    ``q0="fixed_point"``) or the variances underflowed to 0 by layer ℓ."""
    if not layers:
        return None
    if net.q0 == 0:
        return (f"its input is zero: q0 = 0, the fixed point q* = 0 of the length map of {net.activation.name} at "
                f"sigma_w={net.sigma_w:g}, sigma_b={net.sigma_b:g} (the ordered phase; the critical sigma_w, mlp's "
                "default, or a numeric q0 > 0 gives a non-degenerate law)")
    return (f"its pre-activation variance q_{layers[0]} underflows to 0 ({net.activation.name} at "
            f"sigma_w={net.sigma_w:g}, sigma_b={net.sigma_b:g}: deep in the ordered phase)")


def warn_collapsed(what, net, layers):
    """One UserWarning, shared by every law that can collapse: "``what`` of net is δ₀ because …" (see
    :func:`_collapse_cause`); nothing when ``layers`` is empty."""
    cause = _collapse_cause(net, layers)
    if cause is not None:
        warnings.warn(f"{what} of net is δ₀ (a point mass at 0) because {cause}", UserWarning, stacklevel=3)
