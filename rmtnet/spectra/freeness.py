"""Deprecated alias of :mod:`rmtnet.studies.freeness` (the numerical test of asymptotic freeness is a study)."""
from rmtnet._deprecation import moved_module

moved_module(__name__, "rmtnet.studies.freeness")
