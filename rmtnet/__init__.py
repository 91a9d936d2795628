"""rmtnet: random-matrix theory and free probability for deep networks.

Subpackages
-----------
spectra   limit laws (free probability) and their Monte Carlo counterparts (NumPy / CuPy).
plot      theory-over-simulation overlays in the house style.
"""
from . import backend  # noqa: F401

__version__ = "0.1.0"
