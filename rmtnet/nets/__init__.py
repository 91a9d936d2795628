"""Trainable torch models of rmtnet, their data, training loop and probes.

Layers (:mod:`.layers`): static masks, token/channel and permuted mixing, Monarch, the EMN layers. Models
(:mod:`.models`): MLP, MLPMixer, RPMixer, SWMLP, MonarchMLP, EMN. Offline data (:mod:`.data`), one training loop
(:mod:`.training`), probes of spectra and kernels (:mod:`.probes`), CKA (:mod:`.similarity`); the Ensemble Mask
Network experiments of Luntzel (2023, arXiv 2309.06382) (:mod:`.emn`); the subnetwork ensembles of Whitaker ("Neural
Subnetwork Ensembles", PhD thesis, Colorado State University, 2023) (:mod:`.ensembles`) and their metrics
(:mod:`.metrics`).
``rmtnet.spectra`` never imports this package; this package uses ``rmtnet.spectra`` for predictions.
"""
from . import data, emn, ensembles, layers, metrics, models, probes, similarity, training
from .emn import (LearnedOperator, class_allocation, emn_error, emn_run, learned_operator, sample_symmetric_binary,
                  sample_test_pairs, sum_class_counts, sum_class_probabilities, sweep_emn, train_emn,
                  training_matrices, training_size)
from .ensembles import ensemble_predict, noisy_children, partition_masks, pruned_children, stochastic_children
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
           "training", "emn", "LearnedOperator", "class_allocation", "emn_error", "emn_run", "learned_operator",
           "sample_symmetric_binary", "sample_test_pairs", "sum_class_counts", "sum_class_probabilities", "sweep_emn",
           "train_emn", "training_matrices", "training_size", "ensembles", "metrics", "ensemble_predict", "noisy_children",
           "partition_masks", "pruned_children", "stochastic_children"]
