"""rmtnet: random-matrix theory and free probability for deep networks.

Subpackages and modules, from the bottom layer up (a layer imports from the layers below it, never above):

_validation         (internal) the argument checks every layer shares; ``_deprecation`` the moved names' signposts.
backend             the array library (NumPy or CuPy) of the numerics: ``set_backend``, ``rng``, ``HostStream``.
spectra             limit laws as measures, free convolution (⊠, ⊞), transforms, and the network theory read off them.
spectra.sampling    finite-size counterparts: random matrices, network Monte Carlo, structured operators, Lanczos (SLQ).
plot                theory-over-simulation overlays in the house style, Kolmogorov–Smirnov distances, PNG + CSV.
figures             the figure scripts' shared plumbing: sizes, seeds, compute() → tables, draw() → figure, outputs.
experiments         resumable grid × seeds sweeps on local processes or a Dask cluster.
cli                 the ``rmtnet`` command line: list and run the figure scripts.
nets                trainable torch models (Mixers, sparse MLPs, ensembles), data, training, probes, similarity.
studies             the paper studies behind the figures (EMN, subnetwork ensembles, Mixer width, wider nets,
                    asymptotic freeness).
simulations         one script per figure, installed with the wheel (``rmtnet list``, ``rmtnet run NAME``).
"""
from . import backend  # noqa: F401

__version__ = "0.1.0"
