"""Activations, each defined once: φ, φ′, their kinks, the Gaussian closed forms that exist, and the torch module.

One :class:`Activation` holds everything the theory and the torch models read from an activation, in the shape of
neural-tangents' ``stax.elementwise`` (one definition = the forward function and its kernel maps):

* ``phi``, ``dphi``: φ and φ′, vectorised, written on the array's own namespace so that the same function runs on
  NumPy, CuPy and torch tensors (the Monte Carlo and :class:`rmtnet.nets.MLP` apply the very same φ);
* ``breakpoints``: the kinks of φ or jumps of φ′ (panel ends for the Gaussian quadratures);
* ``pair_kernels``: where it exists, the closed form of the pair (E[φ(z₁)φ(z₂)], E[φ′(z₁)φ′(z₂)]) for
  (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]) — the NNGP map and the NTK's derivative factor together, from one
  pass (Cho & Saul 2009 for ReLU, Williams 1997 for erf);
* ``second_moment``, ``derivative_moment``, ``d2_atoms``: closed forms of the mean-field expectations
  E[φ(√q ξ)²], E[φ′(√q ξ)^{2k}] and of the law of φ′², where they exist;
* ``torch_module``: the name of a ``torch.nn`` class computing φ (``"ReLU"``), or None, in which case
  :mod:`rmtnet.nets` wraps φ itself in a module (this module never imports torch).

Everything without a closed form is computed by quadrature from φ and φ′ (:mod:`rmtnet.spectra.meanfield`,
:mod:`rmtnet.spectra.kernels`), so a new activation needs only φ, φ′ and its kinks
(:func:`define_activation`). Built in: ``linear``, ``relu``, ``hard_tanh`` (clip(h, −1, 1)), ``erf``
(φ(h) = erf(√π h/2), normalised so that φ′(0) = 1 as in Pennington, Schoenholz & Ganguli 2017), ``tanh`` and
``gelu`` (φ(h) = h Φ(h), Hendrycks & Gimpel 2016, arXiv 1606.08415).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable, Optional

import numpy as np
from array_api_compat import array_namespace
from scipy import special

from rmtnet._validation import boolean

from .laws import Bernoulli
from .measures import PointMasses

__all__ = ["Activation", "activation", "define_activation", "registered_activations"]


@dataclass(frozen=True)
class Activation:
    """One activation function, defined once: φ, φ′, kinks, closed forms where they exist, torch module.

    Parameters
    ----------
    name : str
        The activation's name (the key under which :func:`define_activation` registers it).
    phi, dphi : callable
        φ and φ′, vectorised over arrays. Written with the array's namespace (``array_api_compat.array_namespace``)
        they run on NumPy, CuPy and torch alike.
    second_moment : callable, optional
        q ↦ E[φ(√q ξ)²], ξ ~ N(0, 1), in closed form.
    derivative_moment : callable, optional
        (q, k) ↦ E[φ′(√q ξ)^{2k}] in closed form.
    d2_atoms : callable, optional
        q ↦ the law of φ′(√q ξ)² as a :class:`~rmtnet.spectra.measures.Measure`, when φ′² takes finitely many values.
    breakpoints : tuple of float
        Kinks of φ or jumps of φ′: panel ends for the quadratures.
    homogeneous : bool
        φ(ah) = aφ(h) for a > 0, so that E[φ′(√q ξ)²] does not depend on q.
    pair_kernels : callable, optional
        (c11, c12, c22) ↦ (E[φ(z₁)φ(z₂)], E[φ′(z₁)φ′(z₂)]) for (z₁, z₂) ~ N(0, [[c11, c12], [c12, c22]]), in closed
        form, on arrays of covariances already checked to be valid (of any array library).
    torch_module : str, optional
        The name of the ``torch.nn`` class computing φ; None: the torch models wrap ``phi`` in a module.

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.activations import activation
    >>> relu = activation("relu")
    >>> relu.phi(np.array([-1.0, 2.0])), relu.breakpoints, relu.torch_module
    (array([0., 2.]), (0.0,), 'ReLU')
    """
    name: str
    phi: Callable
    dphi: Callable
    second_moment: Optional[Callable] = None
    derivative_moment: Optional[Callable] = None
    d2_atoms: Optional[Callable] = None
    breakpoints: tuple = ()
    homogeneous: bool = False
    pair_kernels: Optional[Callable] = None
    torch_module: Optional[str] = None

    def __reduce__(self):
        """A registered activation pickles as its name (its φ may be a lambda); any other one field by field."""
        if _REGISTRY.get(self.name) is self:
            return activation, (self.name,)
        return Activation, tuple(getattr(self, f.name) for f in fields(self))


# ------------------------------------------------------------------------------------------------------------------
# Array namespaces

def _namespace(h):
    """NumPy for NumPy and CuPy arrays and Python numbers (CuPy takes NumPy's ufuncs through ``__array_ufunc__``),
    the array-API namespace of any other array (torch tensors)."""
    if isinstance(h, (np.ndarray, np.generic, float, int)) or type(h).__module__.startswith("cupy"):
        return np
    return array_namespace(h)


def _erf(h):
    """erf on the array's own library: SciPy's for NumPy, cupyx's for CuPy, the tensor's method for torch."""
    kind = type(h).__module__
    if kind.startswith("cupy"):
        import cupyx.scipy.special as cs
        return cs.erf(h)
    if kind.startswith("torch"):
        return h.erf()
    return special.erf(h)


_ERF_SCALE = math.sqrt(math.pi) / 2            # rmtnet's erf is erf(√π h/2), slope 1 at 0; a Python float, so that
_SQRT_HALF = math.sqrt(0.5)                    # a torch tensor times it stays a tensor
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


# ------------------------------------------------------------------------------------------------------------------
# Closed-form pair kernels: (E[φ(z₁)φ(z₂)], E[φ′(z₁)φ′(z₂)]) on valid covariances

def _relu_pair(c11, c12, c22):
    """The arc-cosine kernels of degree 1 and 0 (Cho & Saul 2009, eq. (6)) from one θ = arccos ρ:
    E[relu relu] = √(c11c22)/(2π)·(sin θ + (π − θ) cos θ), E[relu′ relu′] = (π − θ)/(2π); θ = π/2 where a variance
    vanishes."""
    bound = np.sqrt(c11 * c22)
    rho = np.divide(c12, bound, out=np.zeros_like(bound), where=bound > 0)     # cos θ
    np.clip(rho, -1.0, 1.0, out=rho)
    pi_theta = np.subtract(np.pi, np.arccos(rho))                                # π − θ
    j = np.sqrt(np.multiply(np.subtract(1.0, rho), np.add(1.0, rho)))          # sin θ + (π − θ) cos θ, the last
    j += np.multiply(pi_theta, rho, out=rho)                                     # product in cos θ's memory
    bound /= 2 * np.pi                                                           # (in place: no n × n temporaries)
    bound *= j
    pi_theta /= 2 * np.pi
    return bound, pi_theta


def _erf_pair(c11, c12, c22):
    """E[φφ] = (2/π) arcsin(2a²c12/√((1 + 2a²c11)(1 + 2a²c22))) (Williams 1997, eq. (11)) and
    E[φ′φ′] = 1/√((1 + 2a²c11)(1 + 2a²c22) − 4a⁴c12²) for φ(h) = erf(ah), a = √π/2 (2a² = π/2), from one A."""
    k = np.pi / 2
    A = (1.0 + k * c11) * (1.0 + k * c22)
    return 2.0 / np.pi * np.arcsin(np.clip(k * c12 / np.sqrt(A), -1.0, 1.0)), 1.0 / np.sqrt(A - (k * c12) ** 2)


def _linear_pair(c11, c12, c22):
    """(c12, 1)."""
    return c12 * 1.0, c12 * 0.0 + 1.0


# ------------------------------------------------------------------------------------------------------------------
# Mean-field closed forms

def _erf_moment(q, k):
    """E[φ′(√q ξ)^{2k}] for erf: φ′(h)² = exp(−πh²/2), so E[exp(−kπh²/2)] = 1/√(1 + kπq)."""
    return 1.0 / np.sqrt(1.0 + k * np.pi * q)


def _erf_second(q):
    """E[erf(a h)²] = (2/π) arcsin(2a²q/(1 + 2a²q)), a = √π/2 (Williams 1997)."""
    c = np.pi * q / 2
    return 2.0 / np.pi * np.arcsin(c / (1.0 + c))


def _hard_tanh_p(q):
    """P(|h| < 1), h ~ N(0, q): the mass of φ′² = 1 for hard-tanh."""
    return float(special.erf(1.0 / np.sqrt(2.0 * q)))


# ------------------------------------------------------------------------------------------------------------------
# The built-in activations

def _gelu(h):
    """h Φ(h), Φ(h) = (1 + erf(h/√2))/2."""
    return h * (0.5 + 0.5 * _erf(h * _SQRT_HALF))


def _gelu_derivative(h):
    """Φ(h) + h φ_N(h), φ_N the standard normal density."""
    return 0.5 + 0.5 * _erf(h * _SQRT_HALF) + h * _INV_SQRT_2PI * _namespace(h).exp(-0.5 * h * h)


_REGISTRY = {}


def _register(act):
    _REGISTRY[act.name] = act
    return act


_register(Activation("linear", lambda h: h * 1.0, lambda h: h * 0.0 + 1.0,
                     second_moment=lambda q: q, derivative_moment=lambda q, k: 1.0,
                     d2_atoms=lambda q: PointMasses([1.0], [1.0]), homogeneous=True, pair_kernels=_linear_pair,
                     torch_module="Identity"))
_register(Activation("relu", lambda h: _namespace(h).maximum(h, 0.0), lambda h: (h > 0) * 1.0,
                     second_moment=lambda q: q / 2, derivative_moment=lambda q, k: 0.5,
                     d2_atoms=lambda q: Bernoulli(0.5), breakpoints=(0.0,), homogeneous=True,
                     pair_kernels=_relu_pair, torch_module="ReLU"))
_register(Activation("hard_tanh", lambda h: _namespace(h).minimum(_namespace(h).maximum(h, -1.0), 1.0),
                     lambda h: (abs(h) < 1) * 1.0,
                     derivative_moment=lambda q, k: _hard_tanh_p(q),
                     d2_atoms=lambda q: Bernoulli(_hard_tanh_p(q)), breakpoints=(-1.0, 1.0),
                     torch_module="Hardtanh"))
_register(Activation("erf", lambda h: _erf(_ERF_SCALE * h), lambda h: _namespace(h).exp(-np.pi / 4 * h * h),
                     second_moment=_erf_second, derivative_moment=_erf_moment, pair_kernels=_erf_pair))
_register(Activation("tanh", lambda h: _namespace(h).tanh(h), lambda h: 1.0 - _namespace(h).tanh(h) ** 2,
                     torch_module="Tanh"))
_register(Activation("gelu", _gelu, _gelu_derivative, torch_module="GELU"))
_BUILT_IN = frozenset(_REGISTRY)


# ------------------------------------------------------------------------------------------------------------------
# Look-up and definition

def activation(spec, dphi=None) -> Activation:
    """The :class:`Activation` named by ``spec``, ``spec`` itself if it is one, or a new one from a callable φ.

    Parameters
    ----------
    spec : str, Activation or callable
        A registered name (:func:`registered_activations`: ``linear``, ``relu``, ``hard_tanh``, ``erf``, ``tanh``,
        ``gelu`` and those added by :func:`define_activation`), an :class:`Activation`, or a vectorised φ.
    dphi : callable, optional
        φ′, required with a callable ``spec`` (the new activation is not registered and has no closed forms).

    Returns
    -------
    Activation

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.activations import activation
    >>> activation("erf").dphi(np.array([0.0]))
    array([1.])
    >>> activation(np.sin, np.cos).name
    'sin'
    """
    if isinstance(spec, Activation):
        return spec
    if isinstance(spec, str):
        if spec not in _REGISTRY:
            raise ValueError(f"activation must be one of {sorted(_REGISTRY)} or a callable, got {spec!r}")
        return _REGISTRY[spec]
    if callable(spec):
        if dphi is None or not callable(dphi):
            raise ValueError("a callable activation needs its derivative: activation(phi, dphi)")
        return Activation(getattr(spec, "__name__", "custom"), spec, dphi)
    raise ValueError(f"activation must be a name, an Activation or a callable, got {type(spec).__name__}")


def define_activation(name, phi, dphi, *, breakpoints=(), pair_kernels=None, second_moment=None,
                      derivative_moment=None, d2_atoms=None, homogeneous=False, torch_module=None,
                      replace=False) -> Activation:
    """Define an activation once and register it by ``name``: the mean field, the NNGP and NTK kernels, the Jacobian
    law and the torch models then all accept ``name`` (or the returned object).

    Parameters
    ----------
    name : str
        A name not yet registered (or, with ``replace``, one defined earlier by this function).
    phi, dphi : callable
        φ and φ′, vectorised; written on the array's namespace (``array_api_compat.array_namespace(h)``) they also
        run on torch tensors, so the torch model applies the same φ.
    breakpoints : sequence of float, optional
        Kinks of φ or jumps of φ′ (panel ends for the quadratures).
    pair_kernels, second_moment, derivative_moment, d2_atoms, homogeneous, torch_module
        Optional closed forms and torch class name, as in :class:`Activation`; what is not given is computed by
        quadrature from φ and φ′ (or, for the torch module, by wrapping φ).
    replace : bool, optional
        Redefine a name defined earlier by :func:`define_activation` (the built-in ones stay as they are).

    Returns
    -------
    Activation
        The registered definition.

    Examples
    --------
    >>> import numpy as np
    >>> from rmtnet.spectra.activations import define_activation
    >>> from rmtnet.spectra import meanfield
    >>> cube = define_activation("doc_cube", lambda h: h ** 3, lambda h: 3 * h ** 2)
    >>> round(meanfield.second_moment(cube, 1.0), 10)                      # E[ξ⁶] = 15
    15.0
    """
    homogeneous, replace = boolean("homogeneous", homogeneous), boolean("replace", replace)
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in _BUILT_IN or (name in _REGISTRY and not replace):
        raise ValueError(f"an activation named {name!r} is already defined"
                         + ("" if name in _BUILT_IN else "; pass replace=True to redefine it"))
    if not callable(phi) or not callable(dphi):
        raise ValueError("phi and dphi must be callables (φ and φ′)")
    for name_, fn in (("pair_kernels", pair_kernels), ("second_moment", second_moment),
                      ("derivative_moment", derivative_moment), ("d2_atoms", d2_atoms)):
        if fn is not None and not callable(fn):
            raise ValueError(f"{name_} must be a callable or None, got {type(fn).__name__}")
    try:
        kinks = tuple(sorted(float(b) for b in breakpoints))
    except (TypeError, ValueError):
        raise ValueError(f"breakpoints must be a sequence of real numbers, got {breakpoints!r:.60}") from None
    if not all(math.isfinite(b) for b in kinks):
        raise ValueError(f"breakpoints must be finite, got {kinks}")
    if torch_module is not None and not isinstance(torch_module, str):
        raise ValueError(f"torch_module must be the name of a torch.nn class or None, got {torch_module!r}")
    return _register(Activation(name, phi, dphi, second_moment=second_moment, derivative_moment=derivative_moment,
                                d2_atoms=d2_atoms, breakpoints=kinks, homogeneous=bool(homogeneous),
                                pair_kernels=pair_kernels, torch_module=torch_module))


def registered_activations() -> tuple:
    """The names of the registered activations, sorted.

    Takes no parameters.

    Returns
    -------
    tuple of str
        The sorted names that :func:`activation` accepts: the built-ins and those added by
        :func:`define_activation`.

    Examples
    --------
    The six built-ins (``linear``, ``relu``, ``hard_tanh``, ``erf``, ``tanh``, ``gelu``) are always there:

    >>> from rmtnet.spectra.activations import registered_activations
    >>> names = registered_activations()
    >>> {"linear", "relu", "hard_tanh", "erf", "tanh", "gelu"} <= set(names), names == tuple(sorted(names))
    (True, True)
    """
    return tuple(sorted(_REGISTRY))
