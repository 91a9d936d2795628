"""Trainable torch models of rmtnet, their data, training loop and probes — the reusable library.

Layers (:mod:`.layers`): static masks (stored dense or sparse), token/channel and permuted mixing, Monarch, the EMN
layers. Models (:mod:`.models`): MLP, MLPMixer, RPMixer, SWMLP, MonarchMLP, EMN. Offline data (:mod:`.data`), one
training loop (:mod:`.training`), probes of spectra and kernels (:mod:`.probes`), the loss Hessian's and the NTK's
top eigenvalues and trace along training (:mod:`.sharpness`), the spectra of (trained) layers, Jacobians and NTKs
against their laws at initialisation (:mod:`.spectral_audit`), CKA (:mod:`.similarity`); the
subnetwork-ensemble methods of Whitaker ("Neural Subnetwork Ensembles", PhD thesis, Colorado State University, 2023) —
children by noise, pruning or annealing, partition masks, ensemble prediction (:mod:`.ensembles`) — and their metrics
(:mod:`.metrics`).

The paper studies that use this library live in :mod:`rmtnet.studies`; the Ensemble Mask Network experiments of
Luntzel (2023, arXiv 2309.06382) moved there (:mod:`rmtnet.studies.emn`) and stay importable from here under their
old names (``rmtnet.nets.emn``, ``rmtnet.nets.train_emn``, …) as deprecated aliases until rmtnet 0.3, loaded on
first use (this package never imports the studies). ``rmtnet.spectra`` never imports this package; this package uses ``rmtnet.spectra`` for
predictions.
"""
from .._optional import require

require("torch", "rmtnet.nets")         # before any submodule imports it: the error names the extra to install

from .._deprecation import moved_names  # noqa: E402
from . import data, ensembles, layers, metrics, models, probes, sharpness, similarity, spectral_audit, training
from .ensembles import ensemble_predict, noisy_children, partition_masks, pruned_children, stochastic_children
from .layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, MonarchLinear, PermutedMixing,
                     SparseMaskedLinear, TokenMixing, commutation)
from .models import EMN, MLP, MLPMixer, MonarchMLP, RPMixer, SWMLP
from .probes import effective_singular_values, empirical_ntk, input_jacobian, jacobian_spectrum, weight_singular_values
from .sharpness import hessian_top_eigenvalues, hessian_trace, ntk_top_eigenvalues, sharpness_probe
from .similarity import MinibatchCKA, cka, cka_between, hsic, layer_features
from .spectral_audit import (fan_wang_ntk, jacobian_against_law, layer_spectra, ntk_against_law, power_law_fit,
                             weight_spectra)
from .training import DivergenceError, evaluate, train

__all__ = ["AdjacencyLinear", "ChannelMixing", "ClusterLinear", "MaskedLinear", "MonarchLinear", "PermutedMixing",
           "SparseMaskedLinear", "TokenMixing", "commutation", "EMN", "MLP", "MLPMixer", "MonarchMLP", "RPMixer", "SWMLP",
           "empirical_ntk",
           "input_jacobian", "jacobian_spectrum", "weight_singular_values", "effective_singular_values", "MinibatchCKA", "cka", "cka_between",
           "hsic", "layer_features", "evaluate", "train", "DivergenceError", "data", "layers", "models", "probes", "similarity",
           "training", "ensembles", "sharpness", "hessian_top_eigenvalues", "hessian_trace", "ntk_top_eigenvalues",
           "sharpness_probe", "metrics", "ensemble_predict", "noisy_children",
           "partition_masks", "pruned_children", "stochastic_children", "spectral_audit", "layer_spectra",
           "weight_spectra", "power_law_fit", "jacobian_against_law", "ntk_against_law", "fan_wang_ntk"]


# The Ensemble Mask Network names, moved to rmtnet.studies.emn: deprecated aliases, resolved on first access (PEP 562).
__getattr__ = moved_names(__name__, {"emn": "rmtnet.studies.emn", **{name: f"rmtnet.studies.emn:{name}" for name in (
    "LearnedOperator", "class_allocation", "emn_error", "emn_run", "learned_operator", "sample_symmetric_binary",
    "sample_test_pairs", "sum_class_counts", "sum_class_probabilities", "sweep_emn", "train_emn", "training_matrices",
    "training_size")}})
