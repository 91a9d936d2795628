"""Monarch layers: the singular-value law of a Monarch matrix with Gaussian blocks, and the DFT as Monarch factors.

A Monarch matrix (Dao et al., ICML 2022, arXiv 2204.00595) of size m = b·k is M = Pᵀ L P R with R = diag(R_1, …, R_b)
(b blocks k × k), P the stride permutation (the commutation of a b × k array, row-major), L = diag(L_1, …, L_k)
(k blocks b × b). In row-major (s, c) order, s ∈ [b] the block (token), c ∈ [k] the position in it (channel),

    M[(s, c), (s′, c′)] = L_c[s, s′] · R_{s′}[c, c′]

(the convention of :class:`rmtnet.nets.MonarchLinear` and :func:`~rmtnet.spectra.sampling.operators.monarch_factors`).

A linear MLP-Mixer layer x ↦ flatten(W X Vᵀ) is the same with tied blocks, R_s = V and L_c = W for all s, c
(Hayase & Karakida, ICML 2024, arXiv 2306.01470): M[(s, c), (s′, c′)] = W[s, s′] V[c, c′] = kron(W, V).

**The law (derivation).** Take R_s with entries N(0, σ_R²/k), L_c with entries N(0, σ_L²/b), all independent, and
b, k → ∞. Every entry of M is a product of two Gaussians, of variance σ_R²σ_L²/m. By Wick's theorem
(1/m) E tr (MMᵀ)ⁿ is a sum over pairs (π, ρ) of pairings of the 2n L-entries and of the 2n R-entries of the trace;
a pairing of two L-entries identifies their channel labels c as well as their token indices, and a pairing of two
R-entries their token labels s′ as well as their channel indices. With tied blocks the labels are absent, π and ρ
range independently over the non-crossing pairings, and mₙ = Catₙ² — the *classical* product MP·MP of the Kronecker
layer (:func:`rmtnet.spectra.mixer.kronecker_gram_law`, m₂ = 4). Untied, the label identifications cost a power of b
or k unless π and ρ are compatible, and only the pairs counted by the free multiplicative convolution survive. For
n = 2 the count is explicit: of the four leading terms of the Kronecker layer, the one that pairs the L-entries of a
common column (forcing s₁ = s₃) with the R-entries of a common row (forcing c₂ = c₄) now also needs c₁ = c₃ and
s₂ = s₄ from the block labels, two index pairs too many, so m₂ → 3 = m₂(MP ⊠ MP). Counting all nine pairs of
pairings exactly, at any b and k (σ_Rσ_L = 1):

    E (1/m) tr (MMᵀ)² = 3 + 1/b + 1/k + 4/m.

The limit is the **free** product

    MMᵀ → σ_R²σ_L² · MP(1) ⊠ MP(1) = σ_R²σ_L² · FussCatalan(2)        (m₂ = 3, m₃ = 12, right edge 27/4),

the law of a product of two independent dense Ginibre matrices — as for the RP-Mixer and the SW-MLP, whose factors
are free, and unlike the Kronecker layer (Hayase & Karakida 2024's large-width comparison draws both). Untying the
blocks does for the Mixer's two factors what the RP-Mixer's random permutations do: it makes them asymptotically free.
A linear net of L independent Monarch layers, each of gain σ_w (σ_Rσ_L = σ_w), has JJᵀ → σ_w^{2L} FussCatalan(2L)
(free products of free products). Checked against the dense eigenvalues at m = 4096 (b = k = 64: KS 0.006, m₂ 3.07,
m₃ 12.5 at seed 0) and stochastic Lanczos quadrature at m ≈ 10⁵ (tests/test_monarch.py).

**The DFT.** For n = b², ω = e^{−2πi/n}, the four-step Cooley–Tukey factorisation reads F_n = Pᵀ L P R P with R =
I_b ⊗ F_b (block-diagonal DFT_b), L_c = F_b · diag(ω^{c·s′})_{s′} (DFT_b after the twiddle diagonal) and P the
stride permutation (an involution for a square b × b array): the DFT is a Monarch matrix times a permutation
(Dao et al. 2022, §3), since ω^{(bs + c)(bc′ + s′)} = ω_b^{s s′} · ω^{c s′} · ω_b^{c c′} with ω_b = ω^b.
:func:`dft_monarch_blocks` gives R's and L's blocks.
"""
from __future__ import annotations

import numpy as np

from rmtnet._validation import integer_at_least, real_scalar
from .laws import FussCatalan

__all__ = ["monarch_gram_law", "dft_monarch_blocks"]


def monarch_gram_law(depth=1, sigma_w=1.0):
    """The limit spectral law of JJᵀ (the squared singular values) of a linear net of ``depth`` Monarch layers with
    independent Gaussian blocks, each layer of gain σ_w (entries of variance σ_w²/m; blocks of gain √σ_w each, the
    convention of :func:`~rmtnet.spectra.sampling.operators.mixer_network` with ``structure="monarch"``), as the
    number of blocks b and their size k both tend to infinity: the **free** product σ_w^{2L} FussCatalan(2L)
    (module docstring for the derivation) — not the classical product of the Kronecker layer with the same blocks
    tied.

    Parameters
    ----------
    depth : int, default 1
        L ≥ 1 layers.
    sigma_w : float, default 1.0
        The layer gain σ_w > 0.

    Returns
    -------
    FussCatalan
        FussCatalan(2L) scaled by σ_w^{2L}; the singular values of the product are the square roots.

    Examples
    --------
    One layer: m₂ = 3 (free) where the Kronecker layer has 4 (classical MP·MP); the top singular value tends to
    √6.75 ≈ 2.598:

    >>> law = monarch_gram_law()
    >>> print(f"{law.moment(2):.6f} {law.edges[1] ** 0.5:.4f}")
    3.000000 2.5981
    >>> print(f"{monarch_gram_law(2, sigma_w=1.5).moment(1):.4f}")
    5.0625
    """
    L = integer_at_least("depth", depth, 1)
    sigma = real_scalar("sigma_w", sigma_w, lo=0.0, lo_open=True)
    try:
        scale = sigma ** (2 * L)
    except OverflowError:
        scale = np.inf
    if not 0.0 < scale < np.inf:
        raise ValueError(f"sigma_w^(2·depth) must be a positive finite float, got sigma_w = {sigma_w!r} at depth = {L}")
    return FussCatalan(2 * L, scale=scale)


def dft_monarch_blocks(b):
    """R's and L's blocks of the DFT of size n = b² as a Monarch matrix: F_n = Pᵀ L P R P, with R = diag(F_b, …, F_b)
    (b blocks), L = diag(L_0, …, L_{b−1}), L_c = F_b · diag(ω^{c·s})_{s < b}, ω = e^{−2πi/n}, F_b[j, k] = ω^{b·jk}
    (NumPy's unnormalised ``np.fft.fft`` convention), and P the stride permutation of a b × b array (the four-step
    Cooley–Tukey FFT; module docstring).

    Parameters
    ----------
    b : int
        The block size and count, ≥ 1.

    Returns
    -------
    r, l : ndarray
        complex128 arrays of shape (b, b, b): R's blocks and L's blocks
        (:func:`~rmtnet.spectra.sampling.operators.monarch_factors`).

    Examples
    --------
    The DFT of x = e₁ (n = 4) is (ω^j)_j = (1, −i, −1, i), ω = e^{−2πi/4}: M = Pᵀ L P R applied to P x:

    >>> r, l = dft_monarch_blocks(2)
    >>> px = np.array([0, 0, 1, 0.0])          # P e₁ = e₂ for the 2 × 2 stride permutation
    >>> y = np.einsum("csz,zcd,zd->sc", l, r, px.reshape(2, 2)).reshape(-1)
    >>> print(np.allclose(y, np.fft.fft([0, 1, 0, 0])))
    True
    """
    b = integer_at_least("b", b, 1)
    n = b * b
    j = np.arange(b)
    f_b = np.exp(-2j * np.pi * np.outer(j, j) / b)
    twiddle = np.exp(-2j * np.pi * np.outer(j, j) / n)            # twiddle[c, s] = ω^{c·s}
    r = np.broadcast_to(f_b, (b, b, b)).copy()
    l = f_b[None, :, :] * twiddle[:, None, :]                     # L_c[s, s′] = F_b[s, s′] ω^{c·s′}
    return r, l
