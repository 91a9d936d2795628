"""The sampling wing: finite-N Monte Carlo counterparts of the limit laws, on NumPy or (on a GPU) CuPy.

- :mod:`.random_matrices` — the ensembles: Ginibre, Haar orthogonal and isometries (QR with sign correction, Mezzadri,
  Notices AMS 2007), signed permutations, one network layer's weights, Wishart and product eigenvalues.
- :mod:`.montecarlo` — random networks described by :func:`rmtnet.spectra.network.mlp`: a propagated input and the
  spectra of their Jacobian JJᵀ, one-sample Fisher dual, conjugate kernel and NTK Gram.
- :mod:`.operators` — matrix-free structured networks (Mixer, permuted Mixer, static sparse masks) as operators.
- :mod:`.lanczos` — stochastic Lanczos quadrature and top eigenvalues of such operators (Ubaru, Chen & Saad, SIAM
  J. Matrix Anal. Appl. 2017; Ghorbani, Krishnan & Xiao, ICML 2019).

Nothing in the theory (``rmtnet.spectra``'s laws and network theory) imports this wing: theory and simulation meet
only in the figures, the tests and the user's code.
"""
from . import lanczos, montecarlo, operators, random_matrices
from .lanczos import SpectralQuadrature, slq, top_eigenvalues
from .montecarlo import (ntk_gram, propagate, sample_ck_eigs, sample_fisher_eigs, sample_jacobian_eigs, sample_nngp_kernel,
                         sample_ntk,
                         sample_ntk_eigs)
from .operators import bernoulli_csr, mixer_network, mlp_network, sparse_network
from .random_matrices import (free_product_eigs, ginibre, ginibre_product_eigs, haar_isometry, haar_orthogonal,
                              layer_weights, random_input, signed_permutation, wishart_eigs)

__all__ = ["random_matrices", "montecarlo", "operators", "lanczos", "ginibre", "haar_orthogonal", "haar_isometry",
           "signed_permutation", "layer_weights", "random_input", "wishart_eigs", "ginibre_product_eigs",
           "free_product_eigs", "propagate", "sample_jacobian_eigs", "sample_fisher_eigs", "sample_ck_eigs",
           "ntk_gram", "sample_ntk", "sample_ntk_eigs", "sample_nngp_kernel", "mixer_network", "sparse_network", "mlp_network",
           "bernoulli_csr", "slq", "top_eigenvalues", "SpectralQuadrature"]
