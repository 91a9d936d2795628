"""Deprecated alias of :mod:`rmtnet.spectra.sampling.operators` (moved with the other samplers into the sampling wing)."""
from rmtnet._deprecation import moved_module

moved_module(__name__, "rmtnet.spectra.sampling.operators")
