"""Deprecated alias of :mod:`rmtnet.spectra.network` (the network description lives beside the theory that reads it)."""
from rmtnet._deprecation import moved_module

moved_module(__name__, "rmtnet.spectra.network")
