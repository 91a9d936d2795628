"""Paper studies built on rmtnet's library: the runs behind the figure scripts, one module per paper.

- :mod:`.effects` — effect sizes and p-values (Welch and paired t-tests, Spearman's ρ, least squares) behind the
  studies' verdicts.
- :mod:`.emn` — the Ensemble Mask Network experiments of Luntzel (2023, arXiv 2309.06382): training matrices,
  Algorithm 1, the test error of Table 1 and Fig. 3, the learned operator of Fig. 4, resumable sweeps.
- :mod:`.subnetwork_ensembles` — the runs of Whitaker ("Neural Subnetwork Ensembles", PhD thesis, Colorado State
  University, 2023): noise mutations on spirals, the small-budget comparison, pruning and annealing of children.
- :mod:`.freeness` — the numerical test of asymptotic freeness of the Jacobian's factors (Pennington, Schoenholz &
  Ganguli, AISTATS 2018; Hanin & Nica 2020): deviations of mixed moments from their free values against width.
- :mod:`.mixer_width` — one point of the effective-width study of Hayase & Karakida (ICML 2024, arXiv 2306.01470).
- :mod:`.red_line` — the learning-rate border of gradient descent against the NTK's 2/λ_max (Karakida, Akaho &
  Amari, AISTATS 2019; Hayase & Karakida, AISTATS 2021), trained over depth and learning rate.
- :mod:`.sharpness` — the loss Hessian's top eigenvalue along gradient descent against 2/η (Cohen et al., ICLR
  2021; Lewkowycz et al. 2020).
- :mod:`.trained_spectra` — MLP, MLP-Mixer, RP-Mixer, SW-MLP and EMN trained, every layer's spectrum (and the MLP's
  Jacobian and NTK) against its law at initialisation before and after training.
- :mod:`.wider_nets` — the static-sparsity control of Golubeva, Neyshabur & Gur-Ari (ICLR 2021, arXiv 2010.14495):
  one-hidden-layer MLPs widened at a fixed number of weights.

The library they use — models, layers, training, probes, the subnetwork-ensemble methods — is :mod:`rmtnet.nets`
(and :mod:`rmtnet.spectra` for predictions); nothing in those imports this package.
"""
from .._optional import require

require("torch", "rmtnet.studies")      # before any study imports it: the error names the extra to install

from . import effects, emn, freeness, mixer_width, red_line, sharpness, subnetwork_ensembles, trained_spectra, wider_nets

__all__ = ["effects", "emn", "freeness", "mixer_width", "red_line", "sharpness", "subnetwork_ensembles", "trained_spectra",
           "wider_nets"]
