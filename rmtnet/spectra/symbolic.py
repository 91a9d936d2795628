"""Exact moments of free convolutions with SymPy (rational arithmetic where the inputs are rational).

This is the independent check of the numerical engine, and useful on its own. It works through Lagrange inversion,
not the recursion of :mod:`rmtnet.spectra.series`:

* χ = ψ⁻¹ for ψ(u) = Σ m_k u^k has [w^n]χ = (1/n)[u^{n-1}] (u/ψ(u))^n, so S(w) = (1 + w)χ(w)/w;
* conversely the moments of the law with S-transform S are m_n = (1/n)[w^{n-1}] ((1 + w)/S(w))^n
  (REFERENCE §1: χ(w) = wS(w)/(1 + w)).

For ⊞, free cumulants come from m_n = Σ over non-crossing partitions, here through the R-transform:
κ from the functional inverse of G(z) = 1/z + Σ m_k z^{-k-1}, by the same Lagrange inversion.
"""
from __future__ import annotations

import sympy as sp

__all__ = ["w", "s_series_from_moments", "moments_from_s", "free_mult_moments", "free_cumulants",
           "moments_from_free_cumulants", "free_add_moments", "mp_s_transform", "bernoulli_s_transform",
           "narayana_moments", "fuss_catalan_moments"]

w = sp.Symbol("w")
_u = sp.Symbol("u")


def _coeff(expr, var, n):
    """[var^n] of a series expression (n ≥ 0)."""
    return sp.expand(sp.series(expr, var, 0, n + 1).removeO()).coeff(var, n)


def _rational(x):
    return sp.nsimplify(x) if not isinstance(x, sp.Basic) else x


def s_series_from_moments(moments, order=None):
    """S(w) as a polynomial in ``w`` through w^{K-1}, K = len(moments) (needs m₁ ≠ 0)."""
    m = [_rational(x) for x in moments]
    K = len(m) if order is None else order
    if m[0] == 0:
        raise ValueError("the S-transform needs m₁ ≠ 0")
    psi_over_u = sum(m[k] * _u ** k for k in range(len(m)))          # ψ(u)/u
    chi = 0
    for n in range(1, K + 1):
        chi += sp.Rational(1, n) * _coeff(psi_over_u ** (-n), _u, n - 1) * w ** n
    return sp.expand(sp.series(sp.expand(chi * (1 + w) / w), w, 0, K).removeO())


def moments_from_s(S, K):
    """Moments m_1..m_K of the law whose S-transform is the expression ``S`` in :data:`w`."""
    return [sp.nsimplify(sp.Rational(1, n) * _coeff(((1 + w) / S) ** n, w, n - 1)) for n in range(1, K + 1)]


def free_mult_moments(*factors, K=6):
    """Exact moments 1..K of a ⊠-product. Each factor is either a moment sequence (length ≥ K), an S-transform
    expression in :data:`w`, or a pair (factor, t) for the power μ^{⊠t} (t rational)."""
    S = sp.Integer(1)
    for f in factors:
        t = 1
        if isinstance(f, tuple):
            f, t = f
            t = _rational(t)
        Sf = f if isinstance(f, sp.Basic) else s_series_from_moments(list(f)[:K], K)
        S = S * Sf ** t
    return moments_from_s(S, K)


def mp_s_transform(ratio=1, scale=1):
    """S-transform of MarchenkoPastur(ratio, scale): 1/(scale(1 + ratio·w)) (REFERENCE §2)."""
    return 1 / (_rational(scale) * (1 + _rational(ratio) * w))


def bernoulli_s_transform(p):
    """S-transform of (1 - p)δ₀ + pδ₁: (1 + w)/(p + w)."""
    return (1 + w) / (_rational(p) + w)


def narayana_moments(ratio, K):
    """Marchenko–Pastur moments Σ_j N(k, j) λ^{j-1}, exactly."""
    lam = _rational(ratio)
    return [sum(sp.binomial(k, j) * sp.binomial(k, j - 1) / k * lam ** (j - 1) for j in range(1, k + 1))
            for k in range(1, K + 1)]


def fuss_catalan_moments(s, K):
    """C((s+1)k, k)/(sk + 1), exactly."""
    return [sp.binomial((s + 1) * k, k) / (s * k + 1) for k in range(1, K + 1)]


def free_cumulants(moments):
    """Free cumulants κ_1..κ_K: R(g) = G⁻¹(g) - 1/g with G(z) = Σ_{k≥0} m_k z^{-k-1}, via Lagrange inversion of
    f(y) = y·M(y) (M(y) = 1 + Σ m_k y^k), since C(f(y)) = M(y) and C(w) = 1 + Σ κ_n w^n."""
    m = [sp.Integer(1)] + [_rational(x) for x in moments]
    K = len(moments)
    M = sum(m[k] * _u ** k for k in range(K + 1))
    # [w^n] C(w) = [w^n] M(f^{-1}(w)); Lagrange–Bürmann: [w^n] H(f^{-1}(w)) = (1/n)[u^{n-1}] H'(u) (u/f(u))^n
    dM = sp.diff(M, _u)
    return [sp.nsimplify(sp.Rational(1, n) * _coeff(dM * M ** (-n), _u, n - 1)) for n in range(1, K + 1)]


def moments_from_free_cumulants(kappa):
    """Moments from free cumulants: M(y) = C(y M(y)); with f = yM, f⁻¹(w) = w/C(w), so
    m_n = [y^{n+1}] f = (1/(n+1))[w^n] C(w)^{n+1} (Lagrange inversion)."""
    K = len(kappa)
    C = 1 + sum(_rational(kappa[k]) * w ** (k + 1) for k in range(K))
    return [sp.nsimplify(sp.Rational(1, n + 1) * _coeff(C ** (n + 1), w, n)) for n in range(1, K + 1)]


def free_add_moments(*factors, K=6):
    """Exact moments 1..K of a ⊞-sum of moment sequences (or pairs (moments, t) for powers μ^{⊞t})."""
    kappa = [sp.Integer(0)] * K
    for f in factors:
        t = 1
        if isinstance(f, tuple):
            f, t = f
            t = _rational(t)
        kf = free_cumulants(list(f)[:K])
        kappa = [a + t * b for a, b in zip(kappa, kf)]
    return moments_from_free_cumulants(kappa)
