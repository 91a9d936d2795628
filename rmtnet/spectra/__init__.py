"""Limit laws of random matrices and deep networks, by free probability, with Monte Carlo counterparts.

Conventions (M as in Pennington, Schoenholz & Ganguli, AISTATS 2018): G(z) = ∫ dμ(x)/(z - x), M(z) = zG(z) - 1,
ψ(u) = M(1/u), η = ψ/(1 + ψ), S(w) = (1 + w)/(w M⁻¹(w)), S_{μ⊠ν} = S_μ S_ν.

Layers, lowest first (each imports only those below it): the free-probability core (measures, laws, ⊠/⊞, transforms,
series, symbolic), the network theory (the description :mod:`.network`, mean field, Jacobian, Fisher, NTK, kernels,
Mixer), and the sampling wing :mod:`.sampling` (random matrices, network Monte Carlo, structured operators, Lanczos),
which nothing in the theory imports; beside it :mod:`.diagnostics` reads an empirical spectrum against a law (the KS
band, the Tracy–Widom margin and BBP spikes past the edge, a power-law tail).
"""
from rmtnet._validation import ConvergenceError
from .measures import (Measure, PointMasses, Empirical, GridDensity, Mixture, Affine, OtherGram, GaussianPushforward,
                       gaussian_pushforward, Tabulated, tabulate)
from .laws import MarchenkoPastur, Semicircle, FussCatalan, Bernoulli, Arcsine
from .free import free_mult, free_mult_scaled, free_mult_power, free_add, free_add_power, FreeProduct, FreeSum
from .transforms import (cauchy, m_transform, psi, eta, s_transform, cauchy_inverse, m_inverse, psi_inverse,
                         eta_inverse)
from .activations import Activation, activation, define_activation
from .meanfield import q_star, chi, critical_sigma_w, d2_law, d2_moments, length_map
from .jacobian import jacobian_law
from .fisher import fisher_law, critical_learning_rate
from .stability import learning_rate_border, ntk_learning_rate
from .ntk import ck_law, ntk_factor_variance, ntk_law, ntk_moments
from .predict import gradient_descent_mse
from .network import MLP, mlp
from . import (activations, series, network, meanfield, jacobian, fisher, ntk, kernels, predict, mixer, monarch,
               sampling, stability)
from .sampling import sample_jacobian_eigs, sample_fisher_eigs, sample_ck_eigs, sample_ntk_eigs
from . import diagnostics
from .diagnostics import (TW1_99, dkw_bound, layer_law, mp_bulk_scale, power_law_fit, spike_strength,
                          spike_strength_in, spike_threshold, tracy_widom_margin)

__all__ = [
    "ConvergenceError", "Measure", "PointMasses", "Empirical", "GridDensity", "Mixture", "Affine",
    "GaussianPushforward", "gaussian_pushforward", "MarchenkoPastur", "Semicircle", "FussCatalan", "Bernoulli",
    "Arcsine", "free_mult", "free_mult_power", "free_add", "free_add_power", "FreeProduct", "FreeSum",
    "cauchy", "m_transform", "psi", "eta", "s_transform", "cauchy_inverse", "m_inverse", "psi_inverse",
    "eta_inverse", "series", "sampling", "network", "MLP", "mlp", "meanfield", "activations", "Activation",
    "activation", "define_activation", "q_star", "chi", "critical_sigma_w",
    "d2_law", "d2_moments", "length_map", "jacobian_law", "sample_jacobian_eigs", "sample_fisher_eigs",
    "sample_ck_eigs", "jacobian", "fisher_law", "ck_law", "critical_learning_rate", "learning_rate_border",
    "ntk_learning_rate", "stability", "ntk", "kernels",
    "mixer", "monarch", "Tabulated", "tabulate", "OtherGram", "free_mult_scaled", "ntk_law", "ntk_moments",
    "ntk_factor_variance", "sample_ntk_eigs", "fisher", "predict", "gradient_descent_mse",
    "diagnostics", "TW1_99", "dkw_bound", "layer_law", "mp_bulk_scale", "power_law_fit", "spike_strength",
    "spike_strength_in", "spike_threshold", "tracy_widom_margin",
]
