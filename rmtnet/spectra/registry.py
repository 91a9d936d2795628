"""Every public law class of :mod:`rmtnet.spectra`, with example parameters: the list the Measure contract test
walks (tests/test_measure_contract.py), in the manner of SciPy's ``scipy/stats/_distr_params.py``.

Each :class:`LawExample` names one instance of a class: its parameters are written out in ``make`` (laws built from
other laws, such as ⊠ products and push-forwards, need their factors built too). A class may have several
examples — each reaching a different branch of its code (an atom, a hard edge, a reflection) — and every public
Measure subclass exported by :mod:`rmtnet.spectra` needs at least one (:func:`unregistered` lists those without).

Examples
--------
>>> from rmtnet.spectra.registry import LAWS, example
>>> law = example("marchenko_pastur")
>>> law
MarchenkoPastur(ratio=0.5, scale=2)
>>> sorted({e.law_class.__name__ for e in LAWS})[:3]
['Affine', 'Arcsine', 'Bernoulli']
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .free import FreeProduct, FreeSum, free_add, free_mult
from .laws import Arcsine, Bernoulli, FussCatalan, MarchenkoPastur, Semicircle
from .measures import (Affine, Empirical, GaussianPushforward, GridDensity, Measure, Mixture, OtherGram,
                       PointMasses, Tabulated, gaussian_pushforward, tabulate)

__all__ = ["LawExample", "LAWS", "example", "unregistered"]


@dataclass(frozen=True)
class LawExample:
    """One example of a law class.

    Parameters
    ----------
    name : str
        The example's name, unique in :data:`LAWS`.
    law_class : type
        The Measure subclass it builds (``type(make()) is law_class``).
    make : callable
        A call without arguments that builds the law from written-out parameters.

    Examples
    --------
    >>> from rmtnet.spectra import Semicircle
    >>> from rmtnet.spectra.registry import LawExample
    >>> entry = LawExample("semicircle", Semicircle, lambda: Semicircle(var=2.0))
    >>> type(entry.make()) is entry.law_class
    True
    """
    name: str
    law_class: type
    make: Callable[[], Measure]


def _relu(h):
    """max(h, 0): a push-forward with an atom (the Gaussian mass below 0 lands on 0)."""
    return np.maximum(h, 0.0)


def _tanh_derivative_squared(h):
    """tanh′(h)² = (1 − tanh² h)², the D² law of a tanh layer."""
    return (1.0 - np.tanh(h) ** 2) ** 2


def _tent():
    return GridDensity([0.0, 0.5, 2.0, 3.0], [0.0, 0.6, 0.2, 0.0], atoms=([4.0], [0.2]), normalize=True)


LAWS = (
    LawExample("marchenko_pastur", MarchenkoPastur, lambda: MarchenkoPastur(0.5, scale=2.0)),
    LawExample("marchenko_pastur_hard_edge", MarchenkoPastur, lambda: MarchenkoPastur(1.0)),
    LawExample("marchenko_pastur_atom", MarchenkoPastur, lambda: MarchenkoPastur(4.0)),
    LawExample("semicircle", Semicircle, lambda: Semicircle(var=2.0, loc=1.0)),
    LawExample("fuss_catalan", FussCatalan, lambda: FussCatalan(2, scale=0.5)),
    LawExample("arcsine", Arcsine, lambda: Arcsine(1.0, 3.0)),
    LawExample("bernoulli", Bernoulli, lambda: Bernoulli(0.3)),
    LawExample("point_masses", PointMasses, lambda: PointMasses([-1.0, 0.5, 2.0], [0.25, 0.375, 0.375])),
    LawExample("empirical", Empirical, lambda: Empirical(np.random.default_rng(7).normal(size=40))),
    LawExample("grid_density_atom", GridDensity, _tent),
    LawExample("tabulated", Tabulated, lambda: tabulate(MarchenkoPastur(0.3))),
    LawExample("mixture", Mixture,
               lambda: Mixture([MarchenkoPastur(0.5), PointMasses([3.0], [1.0])], [0.6, 0.4])),
    LawExample("affine_reflected_atom", Affine, lambda: Affine(MarchenkoPastur(4.0), -1.5, 1.0)),
    LawExample("other_gram", OtherGram, lambda: OtherGram(MarchenkoPastur(0.5), 2.0)),
    LawExample("gaussian_pushforward", GaussianPushforward,
               lambda: gaussian_pushforward(_tanh_derivative_squared, 0.7)),
    LawExample("gaussian_pushforward_atom", GaussianPushforward, lambda: gaussian_pushforward(_relu, 1.0)),
    LawExample("free_mult", FreeProduct, lambda: free_mult(MarchenkoPastur(0.5), MarchenkoPastur(0.3))),
    LawExample("free_mult_atom", FreeProduct,
               lambda: free_mult(Bernoulli(0.5), MarchenkoPastur(1.0, scale=2.0))),
    LawExample("free_add", FreeSum, lambda: free_add(Semicircle(), MarchenkoPastur(0.5))),
)


def example(name):
    """The law of the example called ``name`` in :data:`LAWS`, newly built.

    Parameters
    ----------
    name : str
        An example's name (``LawExample.name``).

    Returns
    -------
    Measure
        The law, of the example's ``law_class``.

    Examples
    --------
    >>> from rmtnet.spectra.registry import example
    >>> example("bernoulli").atoms()[1].tolist()
    [0.7, 0.3]
    """
    for entry in LAWS:
        if entry.name == name:
            return entry.make()
    raise ValueError(f"no law example called {name!r}; the names are {[e.name for e in LAWS]}")


def unregistered(namespace, laws=LAWS):
    """The names of the public Measure subclasses in ``namespace`` (a module or a mapping of names to objects)
    that no example in ``laws`` builds: a public law class must have an example, so that the contract test
    checks it. ``Measure`` itself, the abstract base, needs none.

    Parameters
    ----------
    namespace : module or mapping
        Where to look (``rmtnet.spectra``): its public names (without a leading underscore; a module's
        ``__all__`` where it has one).
    laws : sequence of LawExample
        The registry (default :data:`LAWS`).

    Returns
    -------
    list of str
        The names without an example, sorted.

    Examples
    --------
    >>> import rmtnet.spectra
    >>> from rmtnet.spectra.registry import unregistered
    >>> unregistered(rmtnet.spectra)
    []
    """
    if inspect.ismodule(namespace):
        names = getattr(namespace, "__all__", [n for n in vars(namespace) if not n.startswith("_")])
        items = {n: getattr(namespace, n) for n in names}
    else:
        items = {n: v for n, v in dict(namespace).items() if not n.startswith("_")}
    covered = {entry.law_class for entry in laws}
    return sorted(n for n, v in items.items()
                  if inspect.isclass(v) and issubclass(v, Measure) and v is not Measure and v not in covered)
