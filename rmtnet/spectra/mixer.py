"""MLP-Mixer as a wide sparse MLP: effective width, the connection budget, and the singular-value laws of its layers.

Hayase & Karakida, "Understanding MLP-Mixer as a Wide and Sparse MLP" (ICML 2024, arXiv 2306.01470). A Mixer with
S tokens, C channels and expansion γ is an MLP of effective width m = S·C whose layers are kron(W, I_C) (density 1/C)
and kron(I_S, V) (density 1/S). At a fixed budget of connections per layer

    Ω = γ (C S² + S C²) / 2                                  (Hayase & Karakida 2024: the average non-zeros per layer)

the width m = S·C is largest at S* = C* = (Ω/γ)^{1/3}, where m_max = (Ω/γ)^{2/3}; for a given C the budget allows
S(C) = (√(C² + 8Ω/(γC)) − C)/2.

Singular values (squared singular values = eigenvalues of W Wᵀ, n_out of them counting zeros):

* SW-MLP layer M ⊙ W, n_out × n_in, density p, kept entries N(0, 1/(p·n_in)): Marchenko–Pastur with ratio
  λ = n_out/n_in, largest singular value → c_γ = 1 + √λ — provided p·n_in ≫ log n_in (otherwise empty or nearly
  empty rows and columns put mass near 0 and the edge moves; :func:`mp_regime` reports p·n/log n).
* Kronecker layer kron(W, I_C) or kron(I_S, W), and the RP layer P₁ (I ⊗ W) P₂: exactly the singular values of W,
  each repeated C (or S) times — so at finite S their law is the empirical law of one S-sized Gaussian matrix, and only
  as S → ∞ the same MP law. :func:`kronecker_singular_values` computes them from W's without building kron.

Products of layers. kron(A, B) kron(A, B)ᵀ = kron(AAᵀ, BBᵀ) has the products a_i b_j of the two sides' eigenvalues,
so the token and channel sides of a linear Mixer are *classically* (tensor-)independent, not free: the law of its
JJᵀ is that of X·Y for independent X, Y (:func:`kronecker_gram_law`, :class:`ClassicalProduct`), e.g. for L linear
Gaussian layers X, Y ~ FussCatalan(L), whereas a dense (or sparse, or randomly permuted) net of the same 2L factors
has the free product MP^{⊠2L} = FussCatalan(2L): second moments (L + 1)² against 2L + 1 (m₂(FussCatalan(s)) = s + 1).
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from scipy.optimize import elementwise

from rmtnet._validation import finite_array, integer_at_least, real_scalar, whole_number
from .laws import MarchenkoPastur
from .measures import Measure

__all__ = ["effective_width", "connections", "tokens_for_channels", "optimal_tokens_channels", "max_effective_width",
           "sparse_weight_law", "c_gamma", "kronecker_singular_values", "mp_regime", "ClassicalProduct",
           "kronecker_gram_law"]


def _positive(name, v):
    return real_scalar(name, v, lo=0.0, lo_open=True)


def _finite(value, **args):
    """``value`` if finite, else ValueError naming the arguments it came from (their product overflowed)."""
    if not np.all(np.isfinite(value)):
        named = ", ".join(f"{k} = {v!r}" for k, v in args.items())
        raise ValueError(f"{named} give a result beyond float64 ({value!r}); give smaller values")
    return value


def effective_width(tokens, channels):
    """m = S·C, the width of the MLP a Mixer's mixing layers form (the "effective width" of Hayase & Karakida,
    ICML 2024, arXiv 2306.01470).

    Parameters
    ----------
    tokens, channels : float
        S > 0 and C > 0.

    Returns
    -------
    float
        S·C.

    Examples
    --------
    >>> print(effective_width(16, 16))
    256.0
    """
    return _finite(_positive("tokens", tokens) * _positive("channels", channels), tokens=tokens, channels=channels)


def connections(tokens, channels, gamma=1.0, gamma_channel=None):
    """Ω = γ(C S² + S C²)/2: the average number of nonzero weights per layer of a Mixer block (Hayase & Karakida
    2024): its two token layers have γS·S·C nonzeros each, its two channel layers γC·C·S. ``gamma_channel``
    (default γ) gives the channel MLP its own expansion, Ω = (γ_S C S² + γ_C S C²)/2 — Mixer-B/16 has
    γ_S = 384/196, γ_C = 4.

    Parameters
    ----------
    tokens, channels : float
        S > 0 and C > 0.
    gamma : float, default 1.0
        The expansion γ of the token MLP (and of the channel MLP unless ``gamma_channel`` is given).
    gamma_channel : float, optional
        γ_C.

    Returns
    -------
    float
        Ω.

    Examples
    --------
    S = C = 16, γ = 2: Ω = 2·(16·256 + 16·256)/2 = 8192:

    >>> print(connections(16, 16, gamma=2))
    8192.0
    """
    S, C, g = _positive("tokens", tokens), _positive("channels", channels), _positive("gamma", gamma)
    gc = g if gamma_channel is None else _positive("gamma_channel", gamma_channel)
    with np.errstate(over="ignore"):
        omega = (g * C * np.float64(S) ** 2 + gc * S * np.float64(C) ** 2) / 2.0
    return _finite(float(omega), tokens=tokens, channels=channels, gamma=gamma, gamma_channel=gamma_channel)


def tokens_for_channels(channels, omega, gamma=1.0):
    """S(C) = (√(C² + 8Ω/(γC)) − C)/2: the number of tokens a budget Ω allows at C channels (the positive root of
    Ω = γ(CS² + SC²)/2 in S).

    Parameters
    ----------
    channels : float
        C > 0.
    omega : float
        The budget Ω > 0.
    gamma : float, default 1.0
        The expansion γ > 0.

    Returns
    -------
    float
        S, not rounded.

    Examples
    --------
    At Ω = 2¹⁹, γ = 2 the budget allows S = 64 tokens at C = 64 (2·(64·64² + 64·64²)/2 = 2¹⁹):

    >>> print(f"{tokens_for_channels(64, 2 ** 19, gamma=2):.6f}")
    64.000000
    """
    C, W, g = _positive("channels", channels), _positive("omega", omega), _positive("gamma", gamma)
    with np.errstate(over="ignore"):
        s = (np.sqrt(np.float64(C) ** 2 + 8.0 * W / (g * C)) - C) / 2.0
    return _finite(float(s), channels=channels, omega=omega, gamma=gamma)


def optimal_tokens_channels(omega, gamma=1.0):
    """(S*, C*) = ((Ω/γ)^{1/3}, (Ω/γ)^{1/3}): the shape of largest effective width at budget Ω (Hayase &
    Karakida, ICML 2024).

    Parameters
    ----------
    omega : float
        The budget Ω > 0.
    gamma : float, default 1.0
        The expansion γ > 0.

    Returns
    -------
    tuple of float
        (S*, C*), equal.

    Examples
    --------
    >>> S, C = optimal_tokens_channels(2 ** 19, gamma=2)
    >>> print(f"{S:.6f} {C:.6f}")
    64.000000 64.000000
    """
    s = _finite((_positive("omega", omega) / _positive("gamma", gamma)) ** (1.0 / 3.0), omega=omega, gamma=gamma)
    return s, s


def max_effective_width(omega, gamma=1.0):
    """max_{S,C} S·C at budget Ω: (Ω/γ)^{2/3} (Hayase & Karakida, ICML 2024).

    Parameters
    ----------
    omega : float
        The budget Ω > 0.
    gamma : float, default 1.0
        The expansion γ > 0.

    Returns
    -------
    float
        m_max = S*·C*.

    Examples
    --------
    >>> print(f"{max_effective_width(2 ** 19, gamma=2):.6f}")         # 64 · 64
    4096.000000
    """
    return _finite((_positive("omega", omega) / _positive("gamma", gamma)) ** (2.0 / 3.0), omega=omega, gamma=gamma)


def sparse_weight_law(n_out, n_in):
    """The limit law of the eigenvalues of W Wᵀ (n_out of them) for a static-mask layer M ⊙ W, n_out × n_in, kept
    entries N(0, 1/(p·n_in)): MarchenkoPastur(n_out/n_in) (as in Hayase & Karakida 2024), valid when
    p·n_in ≫ log n_in.

    Parameters
    ----------
    n_out, n_in : float
        The layer's shape.

    Returns
    -------
    MarchenkoPastur
        Ratio n_out/n_in, scale 1.

    Examples
    --------
    >>> law = sparse_weight_law(64, 128)
    >>> print(f"{law.moment(2):.6f}")               # 1 + n_out/n_in
    1.500000
    """
    return MarchenkoPastur(_positive("n_out", n_out) / _positive("n_in", n_in))


def c_gamma(ratio):
    """c_γ = 1 + √γ, the limit of the largest singular value of an MP matrix with ratio γ = n_out/n_in: the square
    root of the MP right edge (the reference line c_γ in the singular-value plots of Hayase & Karakida 2024).

    Parameters
    ----------
    ratio : float
        γ = n_out/n_in > 0.

    Returns
    -------
    float
        1 + √γ.

    Examples
    --------
    >>> print(f"{c_gamma(1.0):.6f}", f"{c_gamma(0.5) ** 2:.6f}")   # (1 + √γ)² is MP's right edge
    2.000000 2.914214
    """
    return 1.0 + np.sqrt(_positive("ratio", ratio))


def kronecker_singular_values(w, repeat):
    """Singular values of kron(W, I_r) (= those of kron(I_r, W) and of any P₁(I_r ⊗ W)P₂ with permutations P₁, P₂):
    W's singular values, each repeated r times, descending; kron is never formed.

    Parameters
    ----------
    w : array_like
        A 2-d matrix (NumPy, or anything ``np.asarray`` takes).
    repeat : int
        r ≥ 1.

    Returns
    -------
    ndarray
        min(w.shape)·r singular values.

    Examples
    --------
    >>> w = np.array([[3.0, 0.0], [0.0, 1.0]])
    >>> print(kronecker_singular_values(w, 2))
    [3. 3. 1. 1.]
    >>> print(np.linalg.svd(np.kron(w, np.eye(2)), compute_uv=False))
    [3. 3. 1. 1.]
    """
    w = np.asarray(w, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"w must be a 2-d matrix, got shape {w.shape}")
    r = whole_number("repeat", repeat, 1)
    return np.repeat(np.linalg.svd(w, compute_uv=False), r)


def mp_regime(density, n):
    """p·n / log n: how far a static mask of density p on n inputs is into the regime p·n ≫ log n where the
    Marchenko–Pastur law (and its edge c_γ) holds for M ⊙ W.

    Parameters
    ----------
    density : float
        p ∈ (0, 1].
    n : float
        The number of inputs, n > 1.

    Returns
    -------
    float
        p·n/log n.

    Examples
    --------
    A token layer of a Mixer with S = C = 16 seen as an SW-MLP layer (p = 1/16 on m = 256 inputs):

    >>> print(f"{mp_regime(1 / 16, 256):.6f}")                 # 16/log 256
    2.885390
    """
    p = real_scalar("density", density, lo=0.0, hi=1.0, lo_open=True)
    n = _positive("n", n)
    if n <= 1:
        raise ValueError(f"n must be > 1, got {n!r}")
    return p * n / np.log(n)


# ------------------------------------------------------------------------------------------------------------------
class ClassicalProduct(Measure):
    """The law of X·Y for *independent* X ~ ``a`` and Y ~ ``b`` on [0, ∞): the limit spectrum of kron(P, Q) for
    positive semi-definite P, Q whose spectra tend to a and b (the eigenvalues of a Kronecker product are the
    products of the factors' eigenvalues). ``b`` may carry an atom at 0 and no other atom; ``a`` is arbitrary.

    With β₀ = b({0}) and Q_b the quantile function of b (the continuous part lives on u ∈ (β₀, 1)):

        F(t) = β₀ + ∫_{β₀}^1 F_a(t / Q_b(u)) du,             t ≥ 0,
        ρ(t) = ∫_{β₀}^1 ρ_a(t / Q_b(u)) / Q_b(u) du,          (continuous part; a's atoms at x contribute x·b)
        G(z) = β₀/z + ∫_{β₀}^1 G_a(z / Q_b(u)) / Q_b(u) du,
        m_k = m_k(a) m_k(b)                                   (exact).

    The u-integrals use composite Gauss–Legendre rules (``n_panels`` panels of 8 nodes) after the substitution
    u = β₀ + (1 − β₀)(1 − cos πs)/2, which crowds the nodes at both ends of (β₀, 1) where the quantile function is
    singular (Q_b(u) ≈ edge − c(1 − u)^{2/3} at a square-root edge); Q_b is evaluated once. Measured accuracy of the
    cdf with the default 400 panels (against 6400): 4e-8 for MP·MP, 1e-8 for FussCatalan(2)², 6e-9 for
    FussCatalan(4)² (uniform panels in u: 2e-5 for MP·MP). Against Monte Carlo: KS 0.0009 to 10⁶ products of
    independent FussCatalan(4) draws (the sampling noise). ``quantile`` inverts a 4096-point table of the cdf
    (linear interpolation). ``cauchy`` evaluates a's Cauchy transform at n_panels·8 points per z: exact but slow for
    laws computed by the ⊠ engine.

    Parameters
    ----------
    a : Measure
        The law of X, on [0, ∞).
    b : Measure
        The law of Y, on [0, ∞), with no atom other than at 0.
    n_panels : int, default 400
        Gauss–Legendre panels (8 nodes each) of the u-integrals.

    Examples
    --------
    Moments multiply: m₂ = m₂(a)·m₂(b) = 2 · 1.5:

    >>> from rmtnet.spectra import MarchenkoPastur
    >>> law = ClassicalProduct(MarchenkoPastur(1.0), MarchenkoPastur(0.5))
    >>> print(f"{law.moment(2):.6f}", f"{law.cdf(1e9):.6f}")
    3.000000 1.000000
    """

    def __init__(self, a, b, n_panels=400):
        for name, mu in (("a", a), ("b", b)):
            if not isinstance(mu, Measure):
                raise ValueError(f"{name} must be a Measure, got {type(mu).__name__}")
            if mu.hull()[0] < 0:
                raise ValueError(f"{name} must live on [0, inf), its support starts at {mu.hull()[0]!r}")
        locs, masses = b.atoms()
        if np.any((locs != 0) & (masses > 0)):
            raise ValueError("b may carry an atom at 0 only (put the law with atoms elsewhere as a)")
        self.a, self.b = a, b
        self._b0 = float(masses[locs == 0].sum())
        n_panels = integer_at_least("n_panels", n_panels, 1)
        # u = β₀ + (1 − β₀)(1 − cos πs)/2, composite Gauss–Legendre in s: the panels crowd at both ends of (β₀, 1),
        # where Q_b is singular (Q_b(u) ≈ edge − c(1 − u)^{2/3} at a square-root edge)
        x, w = np.polynomial.legendre.leggauss(8)
        edges = np.linspace(0.0, 1.0, n_panels + 1)
        lo, hi = edges[:-1, None], edges[1:, None]
        sn = (0.5 * (lo + hi) + 0.5 * (hi - lo) * x).ravel()
        ws = (0.5 * (hi - lo) * w).ravel()
        span = 1.0 - self._b0
        self._u = self._b0 + span * 0.5 * (1.0 - np.cos(np.pi * sn))
        self._wu = ws * span * 0.5 * np.pi * np.sin(np.pi * sn)
        self._y = np.maximum(b.quantile(self._u), 0.0)           # Q_b(u) > 0 on (β₀, 1) for b without other atoms
        self._chunk = max(1, 2 ** 21 // self._u.size)            # points per block: ~16 MB of intermediates

    def atoms(self):
        la, ma = self.a.atoms()
        zero = self._b0 + (1 - self._b0) * float(ma[la == 0].sum())
        return (np.array([0.0]), np.array([zero])) if zero > 0 else (np.empty(0), np.empty(0))

    def continuous_support(self):
        sb = self.b.continuous_support()
        if sb is None:                                   # b = δ₀: the product is δ₀
            return None
        sa = self.a.continuous_support()
        la, ma = self.a.atoms()
        nonzero = [float(x) for x, w in zip(la, ma) if x > 0 and w > 0]
        lo = ([sa[0]] if sa else []) + nonzero
        hi = ([sa[1]] if sa else []) + nonzero
        if not lo:                                       # a = δ₀
            return None
        return float(min(lo) * sb[0]), float(max(hi) * sb[1])

    def _cdf(self, x):
        t = finite_array("x", x)
        flat = t.ravel()
        out = np.zeros(flat.shape)
        idx = np.nonzero(flat >= 0)[0]
        y, wu = self._y[self._y > 0], self._wu[self._y > 0]
        zero = float(self._wu[self._y <= 0].sum())        # Q_b(u) = 0 on a null set of nodes: X·0 = 0 ≤ t
        for s in range(0, idx.size, self._chunk):
            i = idx[s:s + self._chunk]
            out[i] = self._b0 + zero + self.a.cdf(flat[i, None] / y[None, :]) @ wu
        return np.clip(out, 0.0, 1.0).reshape(t.shape)

    def _pdf(self, x):
        t = finite_array("x", x)
        flat = t.ravel()
        out = np.zeros(flat.shape)
        idx = np.nonzero(flat > 0)[0]
        y, wu = self._y[self._y > 0], self._wu[self._y > 0]
        for s in range(0, idx.size, self._chunk):
            i = idx[s:s + self._chunk]
            out[i] = (self.a.pdf(flat[i, None] / y[None, :]) / y[None, :]) @ wu
        la, ma = self.a.atoms()
        for x, w in zip(la, ma):                          # an atom x > 0 of a carries a copy of b scaled by x
            if x > 0 and w > 0:
                out[idx] += w * self.b.pdf(flat[idx] / x) / x
        return out.reshape(t.shape)

    def _g(self, z):
        z = np.asarray(z, dtype=complex)
        y = self._y[self._y > 0]
        wu = self._wu[self._y > 0]
        zz = z[..., None] / y
        g, dg = self.a._g(zz)
        return self._b0 / z + (g / y) @ wu, -self._b0 / z ** 2 + (dg / y ** 2) @ wu

    def _moment(self, k):
        return float(self.a.moment(k) * self.b.moment(k))

    @cached_property
    def _table(self):
        """(x, F(x)) on 4096 nodes of [lo, hi] (geometric from lo or from 1e-12·hi, and uniform), F made monotone."""
        lo, hi = self.hull()
        top = max(hi, 1e-300)
        start = max(lo, top * 1e-12)
        x = np.unique(np.concatenate([[lo, hi], np.geomspace(start, top, 2048), np.linspace(lo, top, 2048)]))
        x = x[(x >= lo) & (x <= hi)]
        return x, np.maximum.accumulate(self.cdf(x))

    def _ppf(self, q):
        """inf{x : F(x) ≥ q}: q = 0 and 1 give the ends of :meth:`support`, q within the atom at 0 gives 0, and any
        other q is bracketed on the cdf table (:attr:`_table`) and solved on the cdf itself (Chandrupatla,
        :func:`scipy.optimize.elementwise.find_root`), so that cdf(quantile(q)) = q to the cdf's accuracy."""
        flat = q.ravel()
        lo, hi = self.hull()
        x, F = self._table
        out = np.where(flat >= 1, hi, lo)
        atom = self._b0 + (1 - self._b0) * float(self.a.atoms()[1][self.a.atoms()[0] == 0].sum())
        on_atom = (flat > 0) & (flat <= atom)
        out[on_atom] = 0.0
        solve = (flat > atom) & (flat > 0) & (flat < 1)
        if solve.any():
            t = flat[solve]
            i = np.clip(np.searchsorted(F, t, side="left"), 1, x.size - 1)
            a, b = x[i - 1], x[i]
            res = elementwise.find_root(lambda v, target: self.cdf(v) - target, (a, b), args=(t,),
                                        tolerances=dict(xatol=0.0, xrtol=4 * np.finfo(float).eps))
            lin = np.interp(t, F, x)
            out[solve] = np.where(res.success & np.isfinite(res.x), res.x, lin)
        return out.reshape(q.shape)

    def _expect_continuous(self, func, lo, hi, rtol, atol):
        """∫ func·ρ over the continuous part. Over the whole law, the double sum E f(XY) = Σ_ij p_i q_j f(x_i y_j)
        over the nodes and weights of a's and b's own quadrature rules (the tanh-sinh tables behind their cdfs,
        plus atoms and edge tails), less the atom at 0: func(x·y) is smooth in x and y where the product's density,
        a sum of thousands of scaled densities, has a kink at every node. On a part [lo, hi] of the support, the
        generic route (tanh-sinh on the density, which may stop at those kinks and then raises
        ConvergenceError)."""
        s_lo, s_hi = self.hull()
        if lo > s_lo or hi < s_hi:
            return super()._expect_continuous(func, lo, hi, rtol, atol)
        xa, wa = _rule(self.a)
        yb, wb = _rule(self.b)
        total = 0.0
        chunk = max(1, 2 ** 20 // max(yb.size, 1))
        for s in range(0, xa.size, chunk):
            prod = xa[s:s + chunk, None] * yb[None, :]
            f = np.asarray(func(prod))
            if f.ndim == 0:
                f = np.broadcast_to(f, prod.shape)
            elif f.shape != prod.shape:
                raise ValueError(f"func must act elementwise: for x of shape {prod.shape} it returned shape {f.shape}")
            f = np.where(prod == 0, 0.0, f)            # the atom at 0 is summed by expect() itself
            total = total + wa[s:s + chunk] @ f @ wb
        return total

    def __repr__(self):
        return f"ClassicalProduct({self.a!r}, {self.b!r})"


def _rule(mu):
    """Nodes and weights that integrate smooth functions against μ: its atoms, its density's tanh-sinh nodes
    (``Measure._quad``, the table behind its cdf) and its edge tails (mass next to a band's end, put at the end)."""
    locs, masses = mu.atoms()
    nodes, weights = [np.asarray(locs, float)], [np.asarray(masses, float)]
    if mu.continuous_support() is not None:
        for x, w, fx, h in mu._quad:
            nodes.append(np.asarray(x, float))
            weights.append(h * np.asarray(w, float) * np.asarray(fx, float))
        tails = mu.edge_tails()
        nodes.append(np.array([e for e, _, _ in tails], float))
        weights.append(np.array([m for _, m, _ in tails], float))
    return np.concatenate(nodes), np.concatenate(weights)


def kronecker_gram_law(a, b=None, n_panels=400):
    """The limit spectral law of kron(P, Q) for PSD P, Q with limit laws ``a`` and ``b`` (default b = a): the law of
    X·Y, X ~ a, Y ~ b independent (:class:`ClassicalProduct`).

    For a linear Mixer of depth L, J = kron(W_L⋯W_1, V_L⋯V_1) and JJᵀ = kron(AAᵀ, BBᵀ); with Gaussian W, V of entry
    variances σ/S, σ/C the two sides tend to σ^L·FussCatalan(L) each, so JJᵀ → ``kronecker_gram_law(FussCatalan(L,
    σ^L))``: m₂ = σ^{4L}(L + 1)² — 25σ^16 at L = 4 — against σ^{4L}(2L + 1) = 9σ^16 for the free product
    FussCatalan(2L) of a dense or sparse net of the same 2L factors (m₂(FussCatalan(s)) = s + 1). Tensor
    independence, not freeness, is what the Kronecker structure leaves between the two sides
    (:mod:`rmtnet.spectra.sampling.operators`).

    Parameters
    ----------
    a : Measure
        The limit law of P's spectrum, on [0, ∞).
    b : Measure, optional
        The limit law of Q's spectrum (default ``a``), on [0, ∞), with no atom other than at 0.
    n_panels : int, default 400
        Quadrature panels of :class:`ClassicalProduct`.

    Returns
    -------
    ClassicalProduct
        The law of X·Y.

    Examples
    --------
    A linear Mixer of depth 2 (σ = 1): m₂ = (L + 1)² = 9, where the free product FussCatalan(4) has 2L + 1 = 5:

    >>> from rmtnet.spectra import FussCatalan
    >>> print(f"{kronecker_gram_law(FussCatalan(2)).moment(2):.6f}", f"{FussCatalan(4).moment(2):.6f}")
    9.000000 5.000000
    """
    return ClassicalProduct(a, a if b is None else b, n_panels=n_panels)
