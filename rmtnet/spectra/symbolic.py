"""Exact moments of free convolutions with SymPy (rational arithmetic where the inputs are rational).

This is the independent check of the numerical engine, and useful on its own. It works through Lagrange inversion,
not the recursion of :mod:`rmtnet.spectra.series`:

* χ = ψ⁻¹ for ψ(u) = Σ m_k u^k has [w^n]χ = (1/n)[u^{n-1}] (u/ψ(u))^n, so S(w) = (1 + w)χ(w)/w;
* conversely the moments of the law with S-transform S are m_n = (1/n)[w^{n-1}] ((1 + w)/S(w))^n
  (χ(w) = wS(w)/(1 + w): Voiculescu, J. Operator Theory 18, 1987; Nica & Speicher, Lectures on the Combinatorics
  of Free Probability, Cambridge 2006, Lecture 18).

For ⊞, free cumulants come from m_n = Σ over non-crossing partitions, here through the R-transform:
κ from the functional inverse of G(z) = 1/z + Σ m_k z^{-k-1}, by the same Lagrange inversion.

Every series is a list of its first coefficients, multiplied and raised to powers by the Cauchy product and J. C. P.
Miller's power recurrence (Knuth, TAOCP vol. 2, §4.7), so the arithmetic is exactly that of the inputs: rational
inputs give SymPy Rationals (floating-point SymPy inputs give Floats, symbols give expressions in them), and nothing
is guessed back from a number. Python ints and fractions.Fraction are taken exactly; Python floats are converted by
``sp.nsimplify`` (0.5 → 1/2), the one place a value is guessed; pass SymPy numbers to avoid it.
"""
from __future__ import annotations

import math
import numbers

import sympy as sp

from rmtnet._validation import integer_at_least, scalar

__all__ = ["w", "s_series_from_moments", "moments_from_s", "free_mult_moments", "free_cumulants",
           "moments_from_free_cumulants", "free_add_moments", "mp_s_transform", "bernoulli_s_transform",
           "narayana_moments", "fuss_catalan_moments"]

w = sp.Symbol("w")


def _rational(x):
    """A SymPy value for an input number: SymPy values unchanged, integers and fractions exactly, floats through
    ``sp.nsimplify``."""
    if isinstance(x, sp.Basic):
        return x
    x = scalar(x)
    if isinstance(x, bool):
        raise ValueError(f"expected a number, got the bool {x!r}")
    if isinstance(x, numbers.Integral):
        return sp.Integer(int(x))
    if isinstance(x, numbers.Rational):
        return sp.Rational(int(x.numerator), int(x.denominator))
    if isinstance(x, numbers.Real):
        f = float(x)
        if not math.isfinite(f):
            return sp.sympify(f)                     # nan, ±oo: refused by the callers' finiteness checks
        guess = sp.nsimplify(f)
        # nsimplify's guess, unless it is not the float (it turns 1e-45 into 0): then the float's exact value
        return guess if f == 0 or abs(float(guess) - f) <= 1e-15 * abs(f) else sp.Rational(f)
    if isinstance(x, numbers.Number):            # complex: kept exactly, refused by the real-valued checks
        return sp.sympify(x)
    raise ValueError(f"expected a number or a SymPy expression, got {type(x).__name__} {x!r:.60}")


def _sequence(name, values):
    """A sequence of numbers or SymPy expressions (a moment or cumulant sequence), each through :func:`_rational`,
    or ValueError naming ``name``: not a sequence, an entry that is no number, or NaN/±inf."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__") or getattr(values, "ndim", 1) == 0:
        raise ValueError(f"{name} must be a sequence of numbers or SymPy expressions, got {values!r:.60}")
    out = []
    for i, x in enumerate(values):
        try:
            value = _rational(x)
        except ValueError:
            raise ValueError(f"{name}[{i}] must be a number or a SymPy expression, got {x!r:.60}") from None
        if not isinstance(value, sp.Expr) or value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"{name}[{i}] must be a finite number or a SymPy expression, got {x!r:.60}")
        out.append(value)
    return out


def _parameter(name, x, *, lo=None, lo_open=False, hi=None):
    """:func:`_rational` of ``x``, with a numeric value checked against [lo, hi] (``lo_open``: lo excluded); a
    symbolic parameter (free symbols) passes unchecked. ValueError names ``name`` and the range."""
    try:
        value = _rational(x)
    except ValueError:
        raise ValueError(f"{name} must be a number or a SymPy expression, got {x!r:.60}") from None
    if not isinstance(value, sp.Expr):
        raise ValueError(f"{name} must be a number or a SymPy expression, got {x!r}")
    if value.free_symbols:
        return value
    if not (value.is_real and value.is_finite):
        raise ValueError(f"{name} must be a finite real number, got {x!r}")
    below = lo is not None and (value <= lo if lo_open else value < lo)
    if below or (hi is not None and value > hi):
        left = "(" if lo_open else "["
        span = f"{left}{'-oo' if lo is None else lo}, {'oo)' if hi is None else f'{hi}]'}"
        raise ValueError(f"{name} must lie in {span}, got {x!r}")
    return value


def _order(K, name="K"):
    """The number of moments asked for: an integer K ≥ 0, or ValueError naming K."""
    return integer_at_least(name, K, 0)


def _tidy(x):
    """Numbers as they are; expressions (symbols, surds) expanded so that equal values print alike."""
    return x if x.is_Number else sp.expand(x)


# ------------------------------------------------------------------------------------------------------------------
# Truncated power series as coefficient lists [a_0, a_1, …, a_{N-1}]

def _mul(a, b, N):
    """The first N coefficients of the product of two series."""
    return [_tidy(sp.Add(*[a[i] * b[k - i] for i in range(max(0, k - len(b) + 1), min(k, len(a) - 1) + 1)]))
            for k in range(N)]


def _power(a, t, N):
    """The first N coefficients of A(x)^t, any exponent t (A(0) = a₀ ≠ 0): from A·(A^t)′ = t·A′·A^t,
    b₀ = a₀^t, b_n = (1/(n a₀)) Σ_{k=1}^{n} ((t + 1)k − n) a_k b_{n−k} (Miller's recurrence)."""
    a0 = a[0]
    if a0 == 0:
        raise ValueError("a power series raised to a power here must have a non-zero constant term")
    a = list(a) + [sp.Integer(0)] * max(0, N - len(a))
    b = [_tidy(a0 ** t)]
    for n in range(1, N):
        s = sp.Add(*[((t + 1) * k - n) * a[k] * b[n - k] for k in range(1, n + 1)])
        b.append(_tidy(s / (n * a0)))
    return b


def _series_coeffs(expr, N):
    """The first N Taylor coefficients at w = 0 of an expression in :data:`w`: rational functions of w by exact
    polynomial division, anything else through ``sp.series``."""
    expr = sp.sympify(expr)
    if not expr.has(w):
        return [expr] + [sp.Integer(0)] * (N - 1)
    num, den = sp.fraction(sp.together(expr))
    if num.is_polynomial(w) and den.is_polynomial(w):
        p = sp.Poly(num, w).all_coeffs()[::-1]
        q = sp.Poly(den, w).all_coeffs()[::-1]
        if q[0] != 0:
            return _mul(p, _power(q, -1, N), N)
    s = sp.expand(sp.series(expr, w, 0, N).removeO())
    return [s.coeff(w, k) for k in range(N)]


def _as_poly(coeffs):
    return sp.Add(*[c * w ** k for k, c in enumerate(coeffs)])


# ------------------------------------------------------------------------------------------------------------------
# ⊠: S-transforms

def _s_coeffs_from_moments(m, K):
    """[w^0 … w^{K-1}] of S from the moments m₁, m₂, …: [w^n]χ = (1/n)[u^{n-1}] (ψ(u)/u)^{-n}."""
    psi_over_u = list(m[:K])
    chi = [sp.Integer(0)]                                            # [w^0]χ = 0
    for n in range(1, K + 1):
        chi.append(_tidy(sp.Rational(1, n) * _power(psi_over_u, -n, n)[n - 1]))
    chi_over_w = chi[1:]                                             # χ/w through w^{K-1}
    return [_tidy(chi_over_w[k] + (chi_over_w[k - 1] if k else 0)) for k in range(K)]   # × (1 + w)


def s_series_from_moments(moments, order=None):
    """The S-transform's series S(w) = (1 + w)χ(w)/w, χ = ψ⁻¹, as a polynomial in :data:`w` through w^{K−1}.

    Parameters
    ----------
    moments : sequence of numbers
        m₁, …, m_K (m₁ ≠ 0), taken exactly (see the module docstring).
    order : int, optional
        The number of coefficients (default K = len(moments); missing moments count as 0).

    Returns
    -------
    sympy.Expr
        The polynomial in :data:`w`.

    Examples
    --------
    Marchenko–Pastur of ratio 1 (Catalan moments) has S(w) = 1/(1 + w) = 1 − w + w² − …:

    >>> s_series_from_moments([1, 2, 5])
    w**2 - w + 1
    """
    m = _sequence("moments", moments)
    if not m:
        raise ValueError("moments must hold at least m₁")
    K = len(m) if order is None else _order(order, "order")
    if m[0] == 0:
        raise ValueError("the S-transform needs m₁ ≠ 0")
    m = m + [sp.Integer(0)] * max(0, K - len(m))
    return _as_poly(_s_coeffs_from_moments(m, K))


def _moments_from_s_coeffs(s, K):
    """m_1..m_K from [w^0 … w^{K-1}] of S: m_n = (1/n)[w^{n-1}] ((1 + w)/S)^n."""
    inv = _power(s, -1, K)
    r = [_tidy(inv[k] + (inv[k - 1] if k else 0)) for k in range(K)]   # (1 + w)/S
    out, rn = [], [sp.Integer(1)]
    for n in range(1, K + 1):
        rn = _mul(rn, r, K)                                          # ((1 + w)/S)^n through w^{K-1}
        out.append(_tidy(sp.Rational(1, n) * rn[n - 1]))
    return out


def moments_from_s(S, K):
    """Moments m₁, …, m_K of the law whose S-transform is ``S``: m_n = (1/n)[w^{n−1}] ((1 + w)/S(w))^n.

    Parameters
    ----------
    S : sympy.Expr
        An expression in :data:`w`, analytic at 0 with S(0) = 1/m₁ ≠ 0.
    K : int
        How many moments.

    Returns
    -------
    list of sympy numbers or expressions
        [m₁, …, m_K].

    Examples
    --------
    S(w) = 1/(1 + w) is Marchenko–Pastur of ratio 1, whose moments are the Catalan numbers:

    >>> moments_from_s(1 / (1 + w), 4)
    [1, 2, 5, 14]
    """
    K = _order(K)
    if K == 0:
        return []
    s = _series_coeffs(S, K)
    if s[0] == 0:
        raise ValueError("S(0) = 1/m₁ must be non-zero")
    return _moments_from_s_coeffs(s, K)


def free_mult_moments(*factors, K=6):
    """Exact moments 1..K of a free multiplicative convolution μ₁ ⊠ μ₂ ⊠ ⋯ (S_{μ⊠ν} = S_μ S_ν).

    Parameters
    ----------
    *factors : sequence of numbers, sympy.Expr, or tuple
        Each factor is a moment sequence (length ≥ K, m₁ ≠ 0), an S-transform expression in :data:`w`, or a pair
        (factor, t) for the power μ^{⊠t} (t > 0, rational for exact results).
    K : int, default 6
        How many moments.

    Returns
    -------
    list of sympy numbers
        [m₁, …, m_K] of the product.

    Examples
    --------
    The product of s Marchenko–Pastur laws of ratio 1 is Fuss–Catalan(s), m_k = C((s+1)k, k)/(sk + 1)
    (Banica, Belinschi, Capitaine & Collins, Canad. J. Math. 2011):

    >>> free_mult_moments(mp_s_transform(), mp_s_transform(), K=4)
    [1, 3, 12, 55]
    >>> free_mult_moments((mp_s_transform(), 3), K=4) == fuss_catalan_moments(3, 4)
    True

    A ReLU layer at criticality, D² ⊠ WWᵀ with D² ~ Bernoulli(1/2) and σ_w² = 2 (Pennington, Schoenholz & Ganguli,
    NeurIPS 2017):

    >>> free_mult_moments(bernoulli_s_transform(sp.Rational(1, 2)), mp_s_transform(1, 2), K=4)
    [1, 3, 11, 45]
    """
    K = _order(K)
    if K == 0:
        return []
    S = [sp.Integer(1)] + [sp.Integer(0)] * (K - 1)
    for i, f in enumerate(factors):
        t = sp.Integer(1)
        if isinstance(f, tuple):
            f, t = f
            t = _parameter(f"the power of factors[{i}]", t, lo=0, lo_open=True)
        if isinstance(f, sp.Basic):
            Sf = _series_coeffs(f, K)
        else:
            m = _sequence(f"factors[{i}]", f)[:K]
            if len(m) < K:
                raise ValueError(f"a moment sequence factor needs at least K = {K} moments, got {len(m)}")
            if m[0] == 0:
                raise ValueError("the S-transform needs m₁ ≠ 0")
            Sf = _s_coeffs_from_moments(m, K)
        S = _mul(S, Sf if t == 1 else _power(Sf, t, K), K)
    return _moments_from_s_coeffs(S, K)


def mp_s_transform(ratio=1, scale=1):
    """S-transform of ``MarchenkoPastur(ratio, scale)``: 1/(scale·(1 + ratio·w)).

    Parameters
    ----------
    ratio : number, default 1
        λ = N/M > 0.
    scale : number, default 1
        σ² > 0.

    Returns
    -------
    sympy.Expr
        The S-transform in :data:`w`.

    Examples
    --------
    >>> mp_s_transform(sp.Rational(1, 2), 2)
    1/(w + 2)
    """
    scale = _parameter("scale", scale, lo=0, lo_open=True)
    return 1 / (scale * (1 + _parameter("ratio", ratio, lo=0, lo_open=True) * w))


def bernoulli_s_transform(p):
    """S-transform of (1 − p)δ₀ + pδ₁: (1 + w)/(p + w).

    Parameters
    ----------
    p : number
        The mass at 1, 0 < p ≤ 1 (p = 0 is δ₀, which has no S-transform).

    Returns
    -------
    sympy.Expr
        The S-transform in :data:`w`.

    Examples
    --------
    >>> bernoulli_s_transform(sp.Rational(1, 2))
    (w + 1)/(w + 1/2)
    """
    return (1 + w) / (_parameter("p", p, lo=0, lo_open=True, hi=1) + w)


def narayana_moments(ratio, K):
    """Marchenko–Pastur moments m_k = Σ_j N(k, j) λ^{j−1} (N the Narayana numbers), exactly.

    Parameters
    ----------
    ratio : number
        λ > 0.
    K : int
        How many moments.

    Returns
    -------
    list of sympy numbers
        [m₁, …, m_K].

    Examples
    --------
    m₂ = 1 + λ and m₃ = 1 + 3λ + λ²:

    >>> narayana_moments(sp.Rational(1, 2), 3)
    [1, 3/2, 11/4]
    """
    lam = _parameter("ratio", ratio, lo=0, lo_open=True)
    K = _order(K)
    return [_tidy(sp.Add(*[sp.binomial(k, j) * sp.binomial(k, j - 1) / k * lam ** (j - 1) for j in range(1, k + 1)]))
            for k in range(1, K + 1)]


def fuss_catalan_moments(s, K):
    """Fuss–Catalan moments m_k = C((s+1)k, k)/(sk + 1), exactly (the law of s free Marchenko–Pastur(1) factors).

    Parameters
    ----------
    s : int
        s ≥ 1.
    K : int
        How many moments.

    Returns
    -------
    list of sympy Integers
        [m₁, …, m_K].

    Examples
    --------
    >>> fuss_catalan_moments(2, 4)
    [1, 3, 12, 55]
    """
    s = _parameter("s", s, lo=1)
    K = _order(K)
    return [sp.binomial((s + 1) * k, k) / (s * k + 1) for k in range(1, K + 1)]


# ------------------------------------------------------------------------------------------------------------------
# ⊞: free cumulants

def free_cumulants(moments):
    """Free cumulants κ₁, …, κ_K: R(g) = G⁻¹(g) − 1/g = Σ κ_n g^{n−1}.

    Computed with G(z) = Σ_{k≥0} m_k z^{−k−1} by Lagrange inversion of f(y) = y·M(y) (M(y) = 1 + Σ m_k y^k), since
    C(f(y)) = M(y) and C(w) = 1 + Σ κ_n w^n (Nica & Speicher, Cambridge 2006, Lecture 16).

    Parameters
    ----------
    moments : sequence of numbers
        m₁, …, m_K.

    Returns
    -------
    list of sympy numbers
        [κ₁, …, κ_K].

    Examples
    --------
    The semicircle of variance 1 has κ₂ = 1 and no other; Marchenko–Pastur of ratio 1 has every κ_n = 1:

    >>> free_cumulants([0, 1, 0, 2, 0, 5])
    [0, 1, 0, 0, 0, 0]
    >>> free_cumulants(narayana_moments(1, 4))
    [1, 1, 1, 1]
    """
    moments = _sequence("moments", moments)
    K = len(moments)
    M = [sp.Integer(1)] + moments
    # [w^n] C(w) = [w^n] M(f^{-1}(w)); Lagrange–Bürmann: [w^n] H(f^{-1}(w)) = (1/n)[u^{n-1}] H'(u) (u/f(u))^n
    dM = [k * M[k] for k in range(1, K + 1)]
    out = []
    for n in range(1, K + 1):
        Mn = _power(M, -n, n)
        out.append(_tidy(sp.Rational(1, n) * sp.Add(*[dM[j] * Mn[n - 1 - j] for j in range(n)])))
    return out


def moments_from_free_cumulants(kappa):
    """Moments from free cumulants: M(y) = C(y M(y)); with f = yM, f⁻¹(w) = w/C(w), so
    m_n = [y^{n+1}] f = (1/(n+1))[w^n] C(w)^{n+1} (Lagrange inversion).

    Parameters
    ----------
    kappa : sequence of numbers
        κ₁, …, κ_K.

    Returns
    -------
    list of sympy numbers
        [m₁, …, m_K].

    Examples
    --------
    κ₂ = 1 alone gives the semicircle's moments, the Catalan numbers at even orders:

    >>> moments_from_free_cumulants([0, 1, 0, 0, 0, 0])
    [0, 1, 0, 2, 0, 5]
    """
    kappa = _sequence("kappa", kappa)
    K = len(kappa)
    C = [sp.Integer(1)] + kappa
    out, Cn = [], C
    for n in range(1, K + 1):
        Cn = _mul(Cn, C, K + 1)                                      # C^{n+1} through w^K
        out.append(_tidy(sp.Rational(1, n + 1) * Cn[n]))
    return out


def free_add_moments(*factors, K=6):
    """Exact moments 1..K of a free additive convolution μ₁ ⊞ μ₂ ⊞ ⋯ (free cumulants add).

    Parameters
    ----------
    *factors : sequence of numbers or tuple
        Moment sequences (length ≥ K), or pairs (moments, t) for the power μ^{⊞t}, t > 0.
    K : int, default 6
        How many moments.

    Returns
    -------
    list of sympy numbers
        [m₁, …, m_K] of the sum.

    Examples
    --------
    Two free semicircles of variance 1 add to the semicircle of variance 2 (m_{2k} = 2^k C_k):

    >>> free_add_moments([0, 1, 0, 2, 0, 5], [0, 1, 0, 2, 0, 5])
    [0, 2, 0, 8, 0, 40]
    """
    K = _order(K)
    kappa = [sp.Integer(0)] * K
    for i, f in enumerate(factors):
        t = sp.Integer(1)
        if isinstance(f, tuple):
            f, t = f
            t = _parameter(f"the power of factors[{i}]", t, lo=0, lo_open=True)
        f = _sequence(f"factors[{i}]", f)[:K]
        if len(f) < K:
            raise ValueError(f"a moment sequence needs at least K = {K} moments, got {len(f)}")
        kf = free_cumulants(f)
        kappa = [_tidy(a + t * b) for a, b in zip(kappa, kf)]
    return moments_from_free_cumulants(kappa)
