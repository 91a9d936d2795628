"""Deprecated aliases of public names that moved, kept for one release so that users' scripts do not break silently.

A moved module leaves a shim file at its old path whose only statement is :func:`moved_module`; moved names of a
module are served by a module-level ``__getattr__`` made by :func:`moved_names`. Both import their target by name
when first used (never at import time of the old module's package), warn with a :class:`DeprecationWarning` that
names the new place, and are removed in :data:`REMOVED_IN`. A function whose arguments were renamed or moved
keeps the old call working itself and warns through :func:`warn_changed`. ``tests/test_layering.py`` reads these
calls: an alias may point to any layer of the package, since it is not part of the layering, only a signpost for
one release.
"""
from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["REMOVED_IN", "moved_module", "moved_names", "warn_changed", "warn_moved"]

REMOVED_IN = "0.3"


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that the public name ``old`` is deprecated in favour of ``new``."""
    warnings.warn(f"{old} has moved to {new}; the old name is deprecated and will be removed in rmtnet "
                  f"{REMOVED_IN}", DeprecationWarning, stacklevel=stacklevel)


def warn_changed(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that a call written ``old`` (an argument renamed or moved to another position) is deprecated: write
    ``new`` instead."""
    warnings.warn(f"{old} is deprecated; write {new} (the old form will be removed in rmtnet {REMOVED_IN})",
                  DeprecationWarning, stacklevel=stacklevel)


def moved_module(old: str, new: str):
    """Make the shim module ``old`` an alias of the module ``new``: ``import old`` and ``from old import x`` then give
    the new module and its names (with a DeprecationWarning)."""
    warn_moved(old, new, stacklevel=4)
    module = importlib.import_module(new)
    sys.modules[old] = module
    return module


def moved_names(module: str, names: dict):
    """A module-level ``__getattr__`` for ``module`` (PEP 562) that serves each old name in ``names`` from its new
    place: ``names[old] = "package.module:new_name"`` for a name, or ``"package.module"`` for a module itself."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, _, new_name = names[name].partition(":")
        warn_moved(f"{module}.{name}", f"{target}.{new_name}" if new_name else target)
        value = importlib.import_module(target)
        return getattr(value, new_name) if new_name else value

    return __getattr__
