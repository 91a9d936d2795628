"""Trainable torch models of rmtnet, their data, training loop and probes (issue 4; DESIGN §2).

Layers (:mod:`.layers`): static masks, token/channel and permuted mixing, Monarch, the EMN layers. Models
(:mod:`.models`): MLP, MLPMixer, RPMixer, SWMLP, MonarchMLP, EMN. Offline data (:mod:`.data`), one training loop
(:mod:`.training`), probes of spectra and kernels (:mod:`.probes`), CKA (:mod:`.similarity`).
``rmtnet.spectra`` never imports this package; this package uses ``rmtnet.spectra`` for predictions.
"""
from . import data, layers, models, probes, similarity, training
from .layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, MonarchLinear, PermutedMixing,
                     TokenMixing, commutation)
from .models import EMN, MLP, MLPMixer, MonarchMLP, RPMixer, SWMLP
from .probes import effective_singular_values, empirical_ntk, input_jacobian, jacobian_spectrum, weight_singular_values
from .similarity import MinibatchCKA, cka, cka_between, hsic, layer_features
from .training import evaluate, train

__all__ = ["AdjacencyLinear", "ChannelMixing", "ClusterLinear", "MaskedLinear", "MonarchLinear", "PermutedMixing",
           "TokenMixing", "commutation", "EMN", "MLP", "MLPMixer", "MonarchMLP", "RPMixer", "SWMLP", "empirical_ntk",
           "input_jacobian", "jacobian_spectrum", "weight_singular_values", "effective_singular_values", "MinibatchCKA", "cka", "cka_between",
           "hsic", "layer_features", "evaluate", "train", "data", "layers", "models", "probes", "similarity",
           "training"]
