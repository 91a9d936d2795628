"""MLP-Mixer as a wide sparse MLP: effective width, the connection budget, and the singular-value laws of its layers.

Hayase & Karakida (ICML 2024, arXiv 2306.01470; seeds 002 and 004; REFERENCE §3). A Mixer with S tokens, C channels
and expansion γ is an MLP of effective width m = S·C whose layers are kron(W, I_C) (density 1/C) and kron(I_S, V)
(density 1/S). At a fixed budget of connections per layer

    Ω = γ (C S² + S C²) / 2                                                 (seed 004, "average non-zeros per layer")

the width m = S·C is largest at S* = C* = (Ω/γ)^{1/3}, where m_max = (Ω/γ)^{2/3}; for a given C the budget allows
S(C) = (√(C² + 8Ω/(γC)) − C)/2.

Singular values (squared singular values = eigenvalues of W Wᵀ, n_out of them counting zeros):

* SW-MLP layer M ⊙ W, n_out × n_in, density p, kept entries N(0, 1/(p·n_in)): Marchenko–Pastur with ratio
  λ = n_out/n_in, largest singular value → c_γ = 1 + √λ — provided p·n_in ≫ log n_in (otherwise empty or nearly
  empty rows and columns put mass near 0 and the edge moves; :func:`mp_regime` reports p·n/log n).
* Kronecker layer kron(W, I_C) or kron(I_S, W), and the RP layer P₁ (I ⊗ W) P₂: exactly the singular values of W,
  each repeated C (or S) times — so at finite S their law is the empirical law of one S-sized Gaussian matrix, and only
  as S → ∞ the same MP law. :func:`kronecker_singular_values` computes them from W's without building kron.
"""
from __future__ import annotations

import numpy as np

from ._checks import real_scalar
from .laws import MarchenkoPastur

__all__ = ["effective_width", "connections", "tokens_for_channels", "optimal_tokens_channels", "max_effective_width",
           "sparse_weight_law", "c_gamma", "kronecker_singular_values", "mp_regime"]


def _positive(name, v):
    return real_scalar(name, v, lo=0.0, lo_open=True)


def effective_width(tokens, channels):
    """m = S·C, the width of the MLP a Mixer's mixing layers form (seed 004, "effective width")."""
    return _positive("tokens", tokens) * _positive("channels", channels)


def connections(tokens, channels, gamma=1.0, gamma_channel=None):
    """Ω = γ(C S² + S C²)/2: the average number of nonzero weights per layer of a Mixer block (seed 004): its two
    token layers have γS·S·C nonzeros each, its two channel layers γC·C·S. ``gamma_channel`` (default γ) gives the
    channel MLP its own expansion, Ω = (γ_S C S² + γ_C S C²)/2 — Mixer-B/16 has γ_S = 384/196, γ_C = 4."""
    S, C, g = _positive("tokens", tokens), _positive("channels", channels), _positive("gamma", gamma)
    gc = g if gamma_channel is None else _positive("gamma_channel", gamma_channel)
    return (g * C * S ** 2 + gc * S * C ** 2) / 2.0


def tokens_for_channels(channels, omega, gamma=1.0):
    """S(C) = (√(C² + 8Ω/(γC)) − C)/2: the number of tokens a budget Ω allows at C channels (the positive root of
    Ω = γ(CS² + SC²)/2 in S)."""
    C, W, g = _positive("channels", channels), _positive("omega", omega), _positive("gamma", gamma)
    return (np.sqrt(C ** 2 + 8.0 * W / (g * C)) - C) / 2.0


def optimal_tokens_channels(omega, gamma=1.0):
    """(S*, C*) = ((Ω/γ)^{1/3}, (Ω/γ)^{1/3}): the shape of largest effective width at budget Ω (seed 004)."""
    s = (_positive("omega", omega) / _positive("gamma", gamma)) ** (1.0 / 3.0)
    return s, s


def max_effective_width(omega, gamma=1.0):
    """max_{S,C} S·C at budget Ω: (Ω/γ)^{2/3} (seed 004)."""
    return (_positive("omega", omega) / _positive("gamma", gamma)) ** (2.0 / 3.0)


def sparse_weight_law(n_out, n_in):
    """The limit law of the eigenvalues of W Wᵀ (n_out of them) for a static-mask layer M ⊙ W, n_out × n_in, kept
    entries N(0, 1/(p·n_in)): MarchenkoPastur(n_out/n_in) (REFERENCE §2–3), valid when p·n_in ≫ log n_in."""
    return MarchenkoPastur(_positive("n_out", n_out) / _positive("n_in", n_in))


def c_gamma(ratio):
    """c_γ = 1 + √γ, the limit of the largest singular value of an MP matrix with ratio γ = n_out/n_in (seed 004's red
    line: the square root of the MP right edge)."""
    return 1.0 + np.sqrt(_positive("ratio", ratio))


def kronecker_singular_values(w, repeat):
    """Singular values of kron(W, I_r) (= those of kron(I_r, W) and of any P₁(I_r ⊗ W)P₂ with permutations P₁, P₂):
    W's singular values, each repeated r times, descending. ``w`` a 2-d array (NumPy, or anything np.asarray takes)."""
    w = np.asarray(w, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"w must be a 2-d matrix, got shape {w.shape}")
    r = int(repeat)
    if r != repeat or r < 1:
        raise ValueError(f"repeat must be a positive integer, got {repeat!r}")
    return np.repeat(np.linalg.svd(w, compute_uv=False), r)


def mp_regime(density, n):
    """p·n / log n: how far a static mask of density p on n inputs is into the regime p·n ≫ log n where the
    Marchenko–Pastur law (and its edge c_γ) holds for M ⊙ W (REFERENCE §3)."""
    p = real_scalar("density", density, lo=0.0, hi=1.0, lo_open=True)
    n = _positive("n", n)
    if n <= 1:
        raise ValueError(f"n must be > 1, got {n!r}")
    return p * n / np.log(n)
