"""Deprecated alias of :mod:`rmtnet.backend` (the array-library backend under its public name)."""
from rmtnet._deprecation import moved_module

moved_module(__name__, "rmtnet.backend")
