"""Limit spectra of the conjugate kernel (CK) and the neural tangent kernel (NTK) of a deep random network over n
inputs, at linear width (Fan & Wang, "Spectra of the conjugate kernel and neural tangent kernel for linear-width
neural networks", NeurIPS 2020, arXiv 2005.11879).

Convention: the description of :mod:`rmtnet.spectra.network` is the whole network. Its L weight matrices are W₁ … W_L, the last
one the read-out: X₀ ∈ ℝ^{d₀×n} holds the n inputs as columns (iid N(0, 1/d₀) entries by default, so that X₀ᵀX₀ →
MP(γ₀)), the L − 1 hidden layers are X_ℓ = φ̃(W_ℓX_{ℓ-1})/√d_ℓ (ℓ = 1 … L − 1, W_ℓ ∈ ℝ^{d_ℓ×d_{ℓ-1}} iid N(0, 1)),
and the output is f = W_L X_{L-1} (one row per output unit; the kernels are those of one unit), with d_ℓ = n_ℓ the
description's widths and γ_ℓ = n/d_ℓ. Fan & Wang's setting asks for Gaussian weights, σ_w = 1, σ_b = 0 and an
activation φ̃ normalised so that E φ̃(ξ) = 0, E φ̃(ξ)² = 1, ξ ~ N(0, 1): the laws use
:func:`~rmtnet.spectra.meanfield.normalised_activation` of the net's activation (give it as the net's activation
for the description to be the network exactly). The read-out is linear whatever ``last_activation`` says.

**Conjugate kernel** (Fan & Wang 2020, Theorem 3.4): the Gram matrix K_{L-1} = X_{L-1}ᵀX_{L-1} of the features the
read-out sees has, as n, d_ℓ → ∞ with γ_ℓ fixed,

    μ₀ = MP(γ₀),      μ_ℓ = MP(γ_ℓ) ⊠ ((1 - b) + b·μ_{ℓ-1})_*,      b = (E φ̃′(ξ))²,

so with one hidden layer m₂(μ₁) = 1 + γ₁ + b²γ₀.

**Neural tangent kernel** over W₁ … W_L (Fan & Wang 2020): K − (r₊I + Σ_{ℓ<L} c_ℓ X_ℓᵀX_ℓ) → 0 in
operator norm (:func:`ntk_coefficients`), whose law :class:`NTKLaw` solves by deterministic equivalents
(:func:`ntk_law`, exact moments :func:`ntk_moments`).

The one-sample Fisher information / NTK of Karakida et al. (2019) and Hayase & Karakida (2021) is in
:mod:`rmtnet.spectra.fisher`.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import _deprecation
from . import series
from rmtnet._validation import ConvergenceError, boolean, integer_at_least
from .network import check_network
from .continuation import Descent, cell_grid, check_books, dense, k_section, mass_books, runs
from .free import free_mult, free_mult_scaled
from .laws import MarchenkoPastur
from .measures import Affine, GridDensity, Measure, Tabulated, gaussian_pushforward, resolved_tanh_sinh, tabulate
from .meanfield import gaussian_expectation, normalised_activation

__all__ = ["ntk_factor_variance", "ck_law", "ck_moments", "ntk_coefficients", "NTKLaw", "ntk_law", "ntk_moments"]

# deprecated aliases (one release): the one-sample Fisher laws moved to rmtnet.spectra.fisher
__getattr__ = _deprecation.moved_names(__name__, {name: f"rmtnet.spectra.fisher:{name}" for name in
                                                  ("fisher_law", "fisher_moments", "critical_learning_rate")})


# ------------------------------------------------------------------------------------------------------------------
# Conjugate kernel

def _ck_setup(net, n_data):
    net = check_network("net", net)
    n_data = integer_at_least("n_data", n_data, 1)
    if net.weights != "gaussian":
        raise ValueError(f"net must be Fan & Wang's Gaussian-weight network: weights must be 'gaussian', got "
                         f"{net.weights!r}")
    if net.sigma_w != 1.0 or net.sigma_b != 0.0:
        raise ValueError(f"net must use Fan & Wang's scaling: sigma_w must be 1 and sigma_b 0, got sigma_w="
                         f"{net.sigma_w}, sigma_b={net.sigma_b} (mlp's default sigma_w is the activation's critical "
                         "one: give sigma_w=1.0)")
    act = normalised_activation(net.activation)
    b = gaussian_expectation(act.dphi, 1.0, act.breakpoints) ** 2
    gammas = [int(n_data) / d for d in _feature_widths(net)]
    return b, gammas


def _feature_widths(net):
    """d₀ … d_{L−1}: the widths of the input and of the L − 1 hidden layers; the L-th weight matrix of the
    description is the read-out, whose width (the number of outputs) does not enter the kernels of one output."""
    if net.depth < 2:
        raise ValueError(f"net must have a hidden layer (depth ≥ 2: the hidden layers and the read-out W_L), got "
                         f"depth {net.depth}")
    return net.widths[:-1]


def ck_law(net, n_data, input_law=None) -> Measure:
    """Limit spectral law of the conjugate kernel X_{L−1}ᵀX_{L−1} over ``n_data`` inputs — the Gram matrix of the
    features that the read-out W_L of the depth-L description sees (Fan & Wang map, module docstring) — for ``net``
    with Gaussian weights, σ_w = 1, σ_b = 0 and its activation normalised (:func:`normalised_activation`);
    γ_ℓ = n_data/d_ℓ from the widths d₀ … d_{L−1}. ``input_law``: the law of X₀ᵀX₀/d₀,
    default MP(γ₀) (iid Gaussian data); a purely atomic one (a data set's Gram spectrum) is solved by the
    deterministic equivalents of :class:`NTKLaw` instead of the ⊠ engine.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Gaussian weights, σ_w = 1, σ_b = 0, depth ≥ 2; widths d₀ … d_{L−1} (the read-out's width does not enter).
    n_data : int
        n, the number of inputs.
    input_law : Measure, optional
        The law of X₀ᵀX₀ (default MP(γ₀)).

    Returns
    -------
    Measure
        The limit law of X_{L−1}ᵀX_{L−1}.

    Examples
    --------
    Linear (b = 1), depth 2, n = 50, d₀ = 100, d₁ = 50: MP(1) ⊠ MP(1/2), mean 1 and m₂ = 1 + γ₁ + γ₀ = 2.5.

    >>> from rmtnet.spectra.network import mlp
    >>> law = ck_law(mlp(2, widths=(100, 50, 1), activation="linear", q0=1.0), 50)
    >>> print(f"{law.mean():.6f} {law.moment(2):.6f}")
    1.000000 2.500000
    """
    b, gammas = _ck_setup(net, n_data)
    mu = MarchenkoPastur(gammas[0]) if input_law is None else input_law
    if not isinstance(mu, Measure):
        raise ValueError(f"input_law must be a Measure, got {type(mu).__name__}")
    if mu.continuous_support() is None:
        # a data set's Gram spectrum (n atoms): the ⊠ engine would track every atom's band; the same map solved by
        # the deterministic equivalents of NTKLaw with r₊ = 0 and c = (0, …, 0, 1) (the two agree to 1e-7, tests)
        if mu.hull()[0] < 0:
            raise ValueError(f"input_law must live on [0, inf) (a Gram spectrum), got hull {mu.hull()}")
        return _combination_law(0.0, [0.0] * (len(gammas) - 1) + [1.0], np.sqrt(b), gammas[1:], mu)
    for ell, g in enumerate(gammas[1:], start=1):
        mu = free_mult_scaled([MarchenkoPastur(g), Affine(mu, b, 1.0 - b)])
        if ell < len(gammas) - 1:                       # the next level's factor: a table, not a nested solve
            mu = tabulate(mu)
    return mu


def ck_moments(net, n_data, K=4):
    """Exact m₁ … m_K of :func:`ck_law` (iid Gaussian data) from moment sequences alone.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Gaussian weights, σ_w = 1, σ_b = 0, depth ≥ 2; widths d₀ … d_{L−1} (the read-out's width does not enter).
    n_data : int
        n, the number of inputs.
    K : int
        The number of moments.

    Returns
    -------
    ndarray
        m₁ … m_K.

    Examples
    --------
    ReLU, one hidden layer: m₂ = 1 + γ₁ + b²γ₀ with b = (E φ̃′)² = (1/4)/(1/2 − 1/(2π)) ≈ 0.733471, γ₀ = 1/2, γ₁ = 1.

    >>> from rmtnet.spectra.network import mlp
    >>> b = 0.25 / (0.5 - 1 / (2 * np.pi))
    >>> m = ck_moments(mlp(2, widths=(100, 50, 1), sigma_w=1.0, q0=1.0), 50, K=2)
    >>> print(np.round(m, 8).tolist(), round(2 + b ** 2 / 2, 8))
    [1.0, 2.26898993] 2.26898993
    """
    b, gammas = _ck_setup(net, n_data)
    want = integer_at_least("K", K, 1)
    K = max(want, 2)
    m = np.array([MarchenkoPastur(gammas[0]).moment(k) for k in range(1, K + 1)])
    for g in gammas[1:]:
        mp = np.array([MarchenkoPastur(g).moment(k) for k in range(1, K + 1)])
        m = series.product_moments([(mp, 1.0), (series.affine_moments(m, b, 1.0 - b), 1.0)], K)
    return m[:want]


# ------------------------------------------------------------------------------------------------------------------
# The NTK over data

def _fan_wang_constants(net, n_data):
    """(a, b, γ₀ … γ_{L−1}) of Fan & Wang's setting for ``net``: a = E φ̃′(ξ)², b = E φ̃′(ξ) of the normalised
    activation, γ_ℓ = n_data/d_ℓ for the input and the L − 1 hidden layers."""
    _ck_setup(net, n_data)                              # the same setting and its checks as ck_law
    act = normalised_activation(net.activation)
    b = gaussian_expectation(act.dphi, 1.0, act.breakpoints)
    a = gaussian_expectation(lambda h: act.dphi(h) ** 2, 1.0, act.breakpoints)
    return a, b, [int(n_data) / d for d in _feature_widths(net)]


def ntk_coefficients(net, n_data):
    """(r₊, [c₀, …, c_H]) of Fan & Wang's linear-combination form of the NTK over data of the depth-L description
    (H = L − 1 hidden layers and the read-out W_L): K_NTK − (r₊I + Σ_{ℓ≤H} c_ℓ X_ℓᵀX_ℓ) → 0 in operator norm,
    c_ℓ = b^{2(H−ℓ)}, r₊ = Σ_{ℓ<H} (a^{H−ℓ} − b^{2(H−ℓ)}), a = E φ̃′(ξ)², b = E φ̃′(ξ) (Fan & Wang, NeurIPS 2020,
    arXiv 2005.11879, Theorem 3.4's NTK part).

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Gaussian weights, σ_w = 1, σ_b = 0, depth ≥ 2; widths d₀ … d_{L−1} (the read-out's width does not enter).
    n_data : int
        n, the number of inputs.

    Returns
    -------
    r_plus : float
        r₊.
    coef : list of float
        [c₀, …, c_H].

    Examples
    --------
    ReLU at H = 1: c = [b², 1] and r₊ = a − b² with a = E φ̃′² = 2b² (ReLU′² = ReLU′), so r₊ = b² = 0.733471 (as in
    :func:`ck_moments`); linear: a = b = 1, r₊ = 0, c = [1, 1].

    >>> from rmtnet.spectra.network import mlp
    >>> r, c = ntk_coefficients(mlp(2, widths=(100, 50, 1), sigma_w=1.0, q0=1.0), 50)
    >>> print(f"{r:.6f}", np.round(c, 6).tolist())
    0.733471 [0.733471, 1.0]
    """
    a, b, _ = _fan_wang_constants(net, n_data)
    L = net.depth - 1                                   # hidden layers: the last weight matrix is the read-out
    coef = [b ** (2 * (L - ell)) for ell in range(L + 1)]
    r_plus = sum(a ** (L - ell) - b ** (2 * (L - ell)) for ell in range(L))
    return float(r_plus), [float(c) for c in coef]


class NTKLaw(Measure):
    """Limit spectral law of the NTK over data, K = r₊I + Σ_{ℓ=0}^{L} c_ℓ K_ℓ with K_ℓ = X_ℓᵀX_ℓ the conjugate kernels
    of Fan & Wang's network (:func:`ntk_law`), by deterministic equivalents peeled one layer at a time.

    **The equations.** Given X_{ℓ−1}, K_ℓ has the law of T_ℓ^{1/2}(GᵀG/d_ℓ)T_ℓ^{1/2} with T_ℓ = (1 − b²)I + b²K_{ℓ−1}
    (Fan & Wang 2020), and for B = C + T^{1/2}(GᵀG/d)T^{1/2} with C, T given, (B − z)⁻¹ ≈ (C − z + T/(1 + δ))⁻¹ with
    δ = (1/d) tr[T(C − z + T/(1 + δ))⁻¹] (Couillet & Liao 2022, ch. 2). Write the resolvent at level j as
    Q_j = (Σ_{k≤j} c_k^{(j)} K_k − e_j)⁻¹, starting from c_k^{(L)} = c_k and e_L = z − r₊. Peeling K_j with
    δ_j turns c_j^{(j)}K_j into c_j^{(j)}T_j/(1 + δ_j), so

        c_{j−1}^{(j−1)} = c_{j−1}^{(j)} + b² c_j^{(j)}/(1 + δ_j),      e_{j−1} = e_j − (1 − b²) c_j^{(j)}/(1 + δ_j),

    down to Q₀ = (c₀^{(0)}K₀ − e₀)⁻¹, a function of K₀ alone. With α = (1/n)tr Q (the same at every level: the
    Stieltjes transform m(z) of the law) and β_j = (1/n)tr K_jQ_j,

        α = ∫ dμ₀(λ)/(c₀^{(0)}λ − e₀),   β₀ = (1 + e₀α)/c₀^{(0)},   τ_j = (1 − b²)α + b²β_{j−1},
        δ_j = γ_j c_j^{(j)} τ_j,          β_j = τ_j/(1 + δ_j)      (j = 1 … L),

    the last from (B − z)Q = I: tr[T^{1/2}WT^{1/2}Q] ≈ tr[T Q̄]/(1 + δ). These are L coupled scalar equations for
    δ₁ … δ_L (Fan & Wang's recursive fixed-point equations in our own variables); μ₀ enters only through its Cauchy
    transform at one point. For L = 1 and c₀ = 0 they are the Marchenko–Pastur equation of T^{1/2}WT^{1/2}
    (Silverstein & Bai 1995), the conjugate kernel of :func:`ck_law`.

    **Solving.** Newton on (δ₁ … δ_L) (a finite-difference Jacobian: the equations are holomorphic in δ), continued
    in z = x + iy from y far above the spectrum (where δ_j → 0) down to y = 10⁻¹⁴·scale (low enough for a hard
    edge at r₊ — ranks summing to exactly n, e.g. linear at n = d, where ρ ∝ (x − r₊)^{-1/2} and smoothing at
    height y loses mass ~√(y/scale); at 10⁻¹² that was 1.6e-6, over the mass check), then polished on the axis;
    the step in y shrinks where Newton fails or leaves the physical sheet (Im m < 0 or |m| > 1/y, impossible for a
    probability law), and a point that cannot be continued raises :class:`ConvergenceError`; a point within 10⁻⁶
    of the scale that stalls or is still creeping after ``max_steps`` (the branch point at a hard edge) keeps its
    value at its height. All points of a grid move together. The bands are found on an 801-point grid of the hull
    [r₊, upper bound] (8× finer if the mass does not balance) and their edges k-sected; the law's mass (bands,
    plus an atom at r₊ of mass max(0, 1 − Σ_ℓ rank fraction of K_ℓ) where the sum is rank-deficient) must be 1 to
    1e-8 (:func:`ntk_law`). Many inputs through a narrow layer (γ_ℓ ≫ 1) put bands of widths ~0.1 and ~γ_ℓ in
    one hull, beside an atom of mass ~1 − Σ 1/γ_ℓ: the band search then runs over many scales (``_MULTISCALE``: Gordon's bound of the
    hull, a geometric grid in x − r₊, thresholds on ρ·(x − r₊), heights relative to each band's width, and steps
    in Im z that move δ by more than half of |δ| + 1 retried shorter: a long step can land Newton on another root
    with Im m ≥ 0, which lost whole bands of ReLU at n/d ~ 10–60).
    :func:`ntk_law` returns its :class:`Tabulated` table, with the exact moments of :func:`ntk_moments`.

    Parameters
    ----------
    r_plus : float
        r₊.
    coef : sequence of float
        c₀ … c_L.
    b : float
        E φ̃′(ξ).
    gammas : sequence of float
        γ₁ … γ_L.
    input_law : Measure
        μ₀, the law of K₀.
    moments : callable, optional
        k ↦ exact m₁ … m_k (else moments from the density).
    tol, max_steps : float, int
        Newton tolerance and the continuation's step limit.

    Examples
    --------
    b = 0, c = (0, 1): T₁ = I and K = K₁ has the law MP(γ₁), whose band is [(1 − √γ₁)², (1 + √γ₁)²] = [0.25, 2.25].

    >>> from rmtnet.spectra.laws import MarchenkoPastur
    >>> law = NTKLaw(0.0, [0.0, 1.0], 0.0, [0.25], MarchenkoPastur(0.5))
    >>> print(np.round(law.intervals(), 6).tolist())
    [[0.25, 2.25]]
    """

    _Y_FLOOR = 1e-14      # a hard edge's ρ ∝ (x − r₊)^{-1/2}, Cauchy-smoothed at height y, loses mass ~√(y/scale)
    _Y_FLOOR_MULTISCALE = 1e-20   # … 1e-7 at 1e-14, over the mass check of 1e-8: 1e-10 over many scales
    _STALL_HEIGHT = 1e-6
    _NEWTON_ITERS = 12
    _POLE_NOISE = 1e-7
    _JUMP = 0.5
    _POLISH_ITERS = 80
    regularised_points = 0

    def __init__(self, r_plus, coef, b, gammas, input_law, moments=None, tol=1e-12, max_steps=400):
        self.r_plus, self.coef, self.b2 = float(r_plus), np.asarray(coef, float), float(b) ** 2
        self.gammas, self.mu0, self.tol, self.max_steps = np.asarray(gammas, float), input_law, tol, max_steps
        self._moments_fn = moments
        self._cache = {}
        locs, masses = input_law.atoms()
        if input_law.continuous_support() is None:             # a purely atomic input law (a data set's Gram spectrum): its
            locs, inv = np.unique(locs, return_inverse=True)        # Cauchy transform as one matrix–vector product
            self._atoms0 = (locs, np.bincount(inv, weights=masses))
        else:
            self._atoms0 = None

    def _cauchy0(self, w):
        """G_{μ₀}(w) = ∫ dμ₀(λ)/(w − λ)."""
        if self._atoms0 is None:
            return self.mu0.cauchy(w)
        locs, masses = self._atoms0
        a = w.real[:, None] - locs[None, :]                 # 1/(w − λ) = (a − ib)/(a² + b²), in real arithmetic
        b = w.imag[:, None]
        inv = 1.0 / (a * a + b * b)
        return (a * inv) @ masses - 1j * ((b * inv) @ masses)

    @property
    def depth(self):
        return len(self.gammas)

    def __repr__(self):
        return (f"NTKLaw(r_plus={self.r_plus:.6g}, coef={np.round(self.coef, 6).tolist()}, "
                f"gammas={self.gammas.tolist()}, input={self.mu0!r})")

    # ----- the equations ---------------------------------------------------------------------------------------
    def _residual(self, z, delta):
        """F(δ; z) = δ_j − γ_j c_j^{(j)} τ_j for every point (rows) and layer (columns), and α = m(z)."""
        L, b2 = self.depth, self.b2
        c = np.broadcast_to(self.coef.astype(complex), (z.size, L + 1)).copy()
        e = z - self.r_plus
        top = np.empty((z.size, L), complex)
        for j in range(L, 0, -1):
            top[:, j - 1] = c[:, j]
            s = c[:, j] / (1.0 + delta[:, j - 1])
            c[:, j - 1] += b2 * s
            e = e - (1.0 - b2) * s
        c0 = c[:, 0]
        if np.any(c0 == 0):
            alpha = -1.0 / e
            beta = -self.mu0.mean() / e
        else:
            w = e / c0
            alpha = -self._cauchy0(w) / c0
            beta = (1.0 + e * alpha) / c0
        F = np.empty_like(delta)
        for j in range(1, L + 1):
            tau = (1.0 - b2) * alpha + b2 * beta
            F[:, j - 1] = delta[:, j - 1] - self.gammas[j - 1] * top[:, j - 1] * tau
            beta = tau / (1.0 + delta[:, j - 1])
        return F, alpha

    def _newton(self, z, delta, iters=None):
        """Newton from ``delta`` at z: (δ, α, converged mask). A point stops once its step is below ``tol``: next to
        an edge the Jacobian is nearly singular, and further steps on a converged point would only stir rounding."""
        delta = delta.copy()
        ok = np.zeros(z.size, bool)
        for _ in range(iters or self._NEWTON_ITERS):
            act = np.flatnonzero(~ok)
            if act.size == 0:
                break
            za, da = z[act], delta[act]
            F, _ = self._residual(za, da)
            J = self._jacobian(za, da, F)
            # a singular Jacobian (a point exactly at an edge) fails that point alone, not the batch
            singular = ~np.isfinite(J).all(axis=(1, 2)) | (np.abs(np.linalg.det(J)) < 1e-300)
            J[singular] = np.eye(self.depth)
            step = np.linalg.solve(J, F[..., None])[..., 0]
            step[singular] = 0.0
            delta[act] = da - step
            ok[act] = np.all(np.abs(step) <= self.tol * (1.0 + np.abs(delta[act])) + 1e-300, axis=1) & ~singular
        F, alpha = self._residual(z, delta)
        good = np.all(np.abs(F) <= 1e3 * self.tol * (1.0 + np.abs(delta)), axis=1)
        return delta, alpha, (ok | good) & good & np.isfinite(alpha)

    def _jacobian(self, z, delta, F):
        """∂F/∂δ by finite differences: forward with steps 10⁻⁷(1 + |δ|) on the first search (the tables of earlier
        releases); central with steps 10⁻⁵(1 + |δ|) over many scales, where next to an atom at r₊ |δ| ~ 1/(x − r₊)
        reaches 10⁶ and the forward difference's error stalled Newton at a relative residual ~10⁻⁹ (ReLU at
        n/d = 431.5, 4.05: the continuation stalled; central differences reach ~10⁻¹²)."""
        J = np.empty(delta.shape + (self.depth,), complex)
        h = (1e-5 if self._MULTISCALE else 1e-7) * (1.0 + np.abs(delta))
        for j in range(self.depth):
            up = delta.copy()
            up[:, j] += h[:, j]
            if self._MULTISCALE:
                down = delta.copy()
                down[:, j] -= h[:, j]
                J[:, :, j] = (self._residual(z, up)[0] - self._residual(z, down)[0]) / (2.0 * h[:, j, None])
            else:
                J[:, :, j] = (self._residual(z, up)[0] - F) / h[:, j, None]
        return J

    @property
    def _floor(self):
        """The height the density is solved at, relative to :meth:`_local_scale`."""
        return self._Y_FLOOR_MULTISCALE if self._MULTISCALE else self._Y_FLOOR

    @property
    def _scale(self):
        return max(self._upper - self.r_plus, 1e-300)

    def _local_scale(self, x):
        """The scale the axis height and the stall rule of :meth:`_solve` are relative to: the hull's width; with
        ``_MULTISCALE``, once the bands are found, the width of the band holding x (or the nearest one), clipped to
        [10⁻⁹, 1] of the hull: bands of widths 0.1 and 10⁴ share a hull where a narrow layer meets many inputs,
        and a point kept at 10⁻⁶ of 10⁴ would smear the narrow band by 10 %."""
        if not (self._MULTISCALE and "_bands" in self.__dict__):
            return self._scale
        x = np.asarray(x, float)
        lo, hi = np.array(self._bands).T
        nearest = np.argmin(np.maximum(lo[None, :] - x[..., None], x[..., None] - hi[None, :]), axis=-1)
        return np.clip(hi[nearest] - lo[nearest], 1e-9 * self._scale, self._scale)

    @cached_property
    def _upper(self):
        """An upper bound of the spectrum: r₊ + Σ c_ℓ‖K_ℓ‖ with ‖K₀‖ the input law's top and ‖K_ℓ‖ bounded by
        :meth:`_layer_tops`; the looser of its two bounds unless the band search spans many scales
        (``_MULTISCALE``)."""
        return self.r_plus + float(np.dot(self.coef, self._layer_tops()[1 if self._MULTISCALE else 0]))

    def _layer_tops(self):
        """Two upper bounds of ‖K₀‖ … ‖K_L‖: ‖T_ℓ‖(1 + √γ_ℓ)² (the MP edge of GᵀG/d_ℓ times ‖T_ℓ‖,
        T_ℓ = (1 − b²)I + b²K_{ℓ−1}), and Gordon's. K_ℓ's nonzero eigenvalues are those of (1/d_ℓ)G T_ℓ Gᵀ
        (G ∈ ℝ^{d_ℓ×n} iid N(0, 1)), and E‖GA‖ ≤ ‖A‖_F + √d‖A‖ (Gordon 1985; A = T_ℓ^{1/2}, concentrated as
        n → ∞), so ‖K_ℓ‖ ≤ (√(γ_ℓ m₁(T_ℓ)) + √‖T_ℓ‖)² with m₁(K_ℓ) = m₁(T_ℓ) = 1 − b² + b²m₁(K_{ℓ−1}): never above
        the first (m₁ ≤ ‖T‖), and far below it where γ_ℓ ≫ 1 and T_ℓ has few large eigenvalues (many inputs through
        a narrow layer: ‖T_ℓ‖ ~ γ_{ℓ−1} while m₁(T_ℓ) = 1)."""
        loose, tight, mean = [self.mu0.hull()[1]], [self.mu0.hull()[1]], self.mu0.mean()
        for g in self.gammas:
            loose.append((1.0 - self.b2 + self.b2 * loose[-1]) * (1.0 + np.sqrt(g)) ** 2)
            t_top, mean = 1.0 - self.b2 + self.b2 * tight[-1], 1.0 - self.b2 + self.b2 * mean
            tight.append((np.sqrt(g * mean) + np.sqrt(t_top)) ** 2)
        return np.array(loose), np.array(tight)

    def _solve(self, x, y_target, return_height=False):
        """α = m(x + i·y_target) for real x (array), by continuation in y (class docstring); with ``return_height``
        also the height each point ended at (0 where the polish on the axis took).

        The descent (:class:`~rmtnet.spectra.continuation.Descent`) halves Im z at first, doubles the step in
        log y after every accepted Newton solve (up to a factor 10² per step) and halves it after a refused one; a
        point whose step falls below 10⁻⁶, or that is still on its way after ``max_steps`` steps, is settled by the
        stall rule: kept at its height within 10⁻⁶ of the scale (Cauchy-smoothed over that height, where the
        density is ~10⁻³ of its size and the quadrature weights are tiny), :class:`ConvergenceError` above it."""
        x = np.asarray(x, float)
        scale = self._scale
        local = self._local_scale(x)
        # start far above the spectrum, or at the target itself where that is higher still (z far from the support)
        y = np.maximum(10.0 * scale + np.abs(x - self.r_plus), y_target)
        delta, alpha = self._start(x, y)
        target = np.broadcast_to(np.asarray(y_target, float), x.shape).copy()
        walk = Descent(y, target, grow=2.0, largest=np.log(1e2), smallest=1e-6)
        height = np.full(x.shape, np.nan)
        steps = 0
        while not walk.finished:
            steps += 1
            idx = walk.active()
            y_new = walk.heights(idx)
            d_new, a_new, ok = self._newton(x[idx] + 1j * y_new, delta[idx])
            # the physical sheet: a Stieltjes transform of a probability law has Im m ≥ 0 and |m(z)| ≤ 1/Im z
            ok &= (a_new.imag >= 0) & (np.abs(a_new) * y_new <= 1.0 + 1e-9)
            # continuity: a long step can land Newton on another root that passes both tests (ReLU at n/d ~ 10–60:
            # a whole band lost); with ``_MULTISCALE`` a step that moves δ by more than half of |δ| + 1 is retried
            # shorter (not on the first search, whose tables earlier releases made)
            if self._MULTISCALE:
                ok &= np.all(np.abs(d_new - delta[idx]) <= self._JUMP * (np.abs(delta[idx]) + 1.0), axis=1)
            delta[idx[ok]], alpha[idx[ok]] = d_new[ok], a_new[ok]
            walk.advance(idx, y_new, good=ok, easy=ok)
            # next to a band's edge (a square-root branch point) Newton's Jacobian is singular on the axis: steps
            # shrink to nothing; at a hard edge (ρ ∝ (x − r₊)^{-1/2}) a point creeps down, its steps alternately
            # taken and refused
            stalled = walk.stalled()
            stuck = stalled | (~walk.done if steps >= self.max_steps else False)
            kept, failed = walk.settle(stuck, self._STALL_HEIGHT * (4.0 * local if self._MULTISCALE else local))
            if failed.any():
                i = int(np.flatnonzero(failed)[0])
                why = ("stalled (steps in Im z shrank to nothing)" if stalled[i] else
                       f"did not reach Im z = {walk.target[i]:.3g} in {self.max_steps} steps")
                raise ConvergenceError(f"NTKLaw: the continuation {why}", z=complex(x[i] + 1j * y[i]),
                                       iteration=steps, residual=None)
            self.regularised_points += int(kept.sum())
            height[kept] = y[kept]                      # where α was solved: the atoms' poles are taken off there
            y[kept] = walk.target[kept]
        y = np.where(np.isnan(height), y, height)
        if np.all(y_target == self._floor * local):   # polish on the axis: exact 0 outside the bands
            alpha, y = self._polish(x, delta, alpha, y)
        return (alpha, y) if return_height else alpha

    def _start(self, x, y):
        """(δ, α) at x + iy far above the spectrum: the map δ ↦ γcτ contracts there; then Newton."""
        delta = np.zeros((x.size, self.depth), complex)
        for _ in range(200):
            F, _ = self._residual(x + 1j * y, delta)
            delta = delta - F
            if np.max(np.abs(F), initial=0.0) < 1e-15:
                break
        delta, alpha, ok = self._newton(x + 1j * y, delta)
        if not ok.all():
            raise ConvergenceError("NTKLaw: no start far above the spectrum", z=complex(x[~ok][0] + 1j * y[~ok][0]),
                                   iteration=0, residual=None)
        return delta, alpha

    def _polish(self, x, delta, alpha, y):
        """Newton on the axis itself from the solutions at the floor (next to an edge the root is nearly double and
        Newton converges only linearly: more steps); kept where it stays on the physical sheet next to α."""
        d0, a0, ok = self._newton(x + 0j, delta, iters=self._POLISH_ITERS)
        ok &= (a0.imag >= -1e-12 * np.abs(a0)) & (np.abs(a0 - alpha) <= 1e-3 * np.abs(alpha) + 1e-300)
        return np.where(ok, a0, alpha), np.where(ok, 0.0, y)

    def _density(self, x):
        x = np.asarray(x, float)
        key = x.tobytes()
        if key not in self._cache:
            alpha, y = self._solve(x, self._floor * self._local_scale(x), return_height=True)
            locs, masses = self.atoms()
            pole = np.zeros(x.shape)
            for a, m in zip(locs, masses):              # the atom's pole is not density (its Cauchy tail at y > 0)
                alpha = alpha - m / (a - (x + 1j * y))
                pole = pole + m / np.abs(a - (x + 1j * y))
            rho = np.maximum(alpha.imag / np.pi, 0.0)
            if self._MULTISCALE:
                # next to the atom α is its pole, accepted to a relative residual ~10⁻⁹: what is left below
                # 10⁻⁷ of the pole is that rounding (it made spurious bands 10⁻⁸ wide next to r₊), not density
                rho[rho <= self._POLE_NOISE * pole] = 0.0
            self._cache[key] = rho
        return self._cache[key]

    # ----- the measure -----------------------------------------------------------------------------------------
    def _pdf(self, x):
        out = np.zeros(x.shape)
        inside = np.zeros(x.shape, bool)
        for a, b in self.intervals():
            inside |= (x > a) & (x < b)
        if inside.any():
            out[inside] = self._density(x[inside])
        return out

    def _g(self, z):
        """G(z) = −α(z) and G′(z) by central differences along the real direction (step 10⁻⁶ of the scale): per
        height Im z, one continuation for the points and their two neighbours together (the descent is pointwise)."""
        z = np.asarray(z, complex)
        flat = z.ravel()
        alpha, gp = np.empty(flat.shape, complex), np.empty(flat.shape, complex)
        h = 1e-6 * self._scale
        for y in np.unique(flat.imag):
            sel = flat.imag == y
            x = flat[sel].real
            yy = np.broadcast_to(np.maximum(y, self._floor * self._local_scale(x)), x.shape)
            mid, up, down = np.split(self._solve(np.concatenate([x, x + h, x - h]), np.tile(yy, 3)), 3)
            alpha[sel], gp[sel] = mid, -(up - down) / (2 * h)
        return -alpha.reshape(z.shape), gp.reshape(z.shape)

    def atoms(self):
        """An atom at r₊ of mass 1 − rank(Σ_ℓ c_ℓK_ℓ)/n where that rank is short of n. For b² < 1 the ranks add
        (T_ℓ = (1 − b²)I + b²K_{ℓ−1} is invertible, so K_ℓ has rank min(n, d_ℓ) in general position). For b² = 1 (a
        linear activation) T_ℓ = K_{ℓ−1}: range(K_ℓ) ⊆ range(K_{ℓ−1}), so the sum has the rank of its first term,
        min(rank K₀, d₁, …, d_j) for the first j with c_j ≠ 0."""
        mass = 1.0 - self._rank()
        if mass > 1e-12:
            return np.array([self.r_plus]), np.array([mass])
        return np.empty(0), np.empty(0)

    def _rank(self):
        """rank(Σ_ℓ c_ℓK_ℓ)/n in the limit, at most 1 (:meth:`atoms`); for b² < 1 the sum of the layers' rank
        fractions before it is capped at 1 is :meth:`_rank_sum`."""
        rank0 = 1.0 - float(np.sum(self.mu0.atoms()[1][self.mu0.atoms()[0] == 0]))
        if self.b2 >= 1.0 - 1e-12:
            rank = rank0
            for g, c in zip((None,) + tuple(self.gammas), self.coef):
                rank = rank if g is None else min(rank, 1.0 / g)
                if c:
                    break
        else:
            rank = self._rank_sum()
        return min(rank, 1.0)

    def _rank_sum(self):
        """Σ_ℓ rank(K_ℓ)/n over the layers with c_ℓ ≠ 0 (b² < 1: T_ℓ invertible, K_ℓ of rank min(n, d_ℓ))."""
        rank = self._input_rank() if self.coef[0] else 0.0
        return rank + sum(min(1.0, 1.0 / g) for g, c in zip(self.gammas, self.coef[1:]) if c)

    def _width_sum(self):
        """Σ_ℓ d_ℓ/n over the layers with c_ℓ ≠ 0 (d₀/n where the input law is MP(γ₀), else the input's rank).
        Where it is 1 to within :data:`_EDGE_REACH` (b² < 1) the law's lower edge sits at r₊ (a hard edge,
        ρ ∝ (x − r₊)^{−1/2}) or within ~(sum − 1)² of the scale of r₊, or an atom that small sits beside a band
        reaching down to it; a single layer wider than n (d_ℓ/n > 1) keeps its gap."""
        if not self.coef[0]:
            first = 0.0
        elif isinstance(self.mu0, MarchenkoPastur):
            first = 1.0 / self.mu0.ratio
        else:
            first = self._input_rank()
        return first + sum(1.0 / g for g, c in zip(self.gammas, self.coef[1:]) if c)

    def _input_rank(self):
        """rank(K₀)/n: one minus the input law's atom at 0."""
        x, w = self.mu0.atoms()
        return 1.0 - float(np.sum(w[x == 0]))

    _GRID = 801
    _MULTISCALE = False     # the band search over many scales: Gordon's bound, a geometric grid, log-mass thresholds
    _PER_DECADE = 120       # the geometric grid's points per decade of x − r₊ (relative spacing 1.9 %) …
    _DECADES = 9            # … over (10⁻⁹, 1]·(upper − r₊)

    def _search_grid(self):
        """The band search's grid: the ``_GRID`` − 2 interior cell ends of the hull [r₊, upper]; with
        ``_MULTISCALE`` also r₊ + (upper − r₊)·10^{−k/``_PER_DECADE``}, k = 1 … ``_DECADES``·``_PER_DECADE``, for
        bands far narrower than the hull (a narrow layer's MP(γ) with γ ≫ 1, of relative width 4/√γ, next to
        the O(1) bands of the wide layers)."""
        lo, hi = self.r_plus, self._upper
        x = cell_grid(lo, hi, self._GRID - 1)
        if self._MULTISCALE:
            k = np.arange(1, self._DECADES * self._PER_DECADE + 1)
            x = np.union1d(x, lo + (hi - lo) * 10.0 ** (-k / self._PER_DECADE))
            x = x[(x > lo) & (x < hi)]
        return x

    def _weight(self, x):
        """What the band search thresholds the density by: 1 on a uniform grid; with ``_MULTISCALE``, x − r₊ (ρ·(x −
        r₊) is the mass per unit of log(x − r₊), so a band of mass 10⁻⁴ at x ~ 10⁴ counts beside one of mass 1 at
        x ~ 1, where their densities differ by 10⁸)."""
        return (np.asarray(x) - self.r_plus) if self._MULTISCALE else 1.0

    @cached_property
    def _bands(self):
        """The bands: runs of the search grid's points (:meth:`_search_grid`) where the density (times
        :meth:`_weight`) exceeds 10⁻⁹ of its largest value on the grid, each edge k-sected (:meth:`_edges`)."""
        lo, hi = self.r_plus, self._upper
        x = self._search_grid()
        rho = self._density(x) * self._weight(x)
        pos = dense(x, rho, relative=1e-9)
        if not pos.any():
            raise ConvergenceError("NTKLaw: no band found on the hull grid", z=None, iteration=0, residual=None)
        grid = np.concatenate([[lo], x, [hi]])
        pairs = []
        for first, last in runs(pos):                       # x[first … last] have density; grid[j + 1] = x[j]
            pairs += [(grid[first], grid[first + 1]), (grid[last + 2], grid[last + 1])]
        ends = self._edges(np.array(pairs), 1e-9 * float(rho.max()))
        if self._MULTISCALE:                            # the density from here on at the bands' own scales
            self._cache.clear()
        return [(float(a), float(b)) for a, b in zip(ends[::2], ends[1::2])]

    def _edges(self, pairs, threshold, rounds=10, k=16):
        """k-section of every (outside, inside) bracket at once: each round evaluates k − 1 points per bracket and
        keeps the cell where the density (times :meth:`_weight`) first exceeds ``threshold`` (10 rounds: 16⁻¹⁰ of a
        grid cell)."""
        out, _ = k_section(lambda t: self._density(t) * self._weight(t) > threshold, pairs[:, 0], pairs[:, 1],
                           points=k - 1, rounds=rounds)
        return out

    def intervals(self):
        return list(self._bands)

    def continuous_support(self):
        bands = self._bands
        return (bands[0][0], bands[-1][1])

    def _moment(self, k):
        if k == 0:
            return 1.0
        if self._moments_fn is None:
            return super()._moment(k)
        return float(self._moments_fn(k)[k - 1])


def _ntk_series(r_plus, coef, b, gammas, mu0, K):
    """m₁ … m_K of :class:`NTKLaw` by its equations in formal power series of w = 1/z (class docstring): with
    e_j = z·ε_j, α = −w Σ_i m_i(μ₀)(c₀w)^i ε₀^{−i−1} and β₀ = −w Σ_i m_{i+1}(μ₀)(c₀w)^i ε₀^{−i−1} (μ₀'s moments up
    to K + 2); every pass of the fixed point fixes one more order, and m_k = −[w^{k+1}] α."""
    N = K + 2

    def _smul(u, v):                                             # every series here has N coefficients
        return series.mul(u, v, N)

    b2 = b * b
    input_moments = [1.0] + [mu0.moment(i) for i in range(1, N + 1)]
    L = len(gammas)
    w = np.zeros(N)
    w[1] = 1.0
    one = np.zeros(N)
    one[0] = 1.0
    m0 = np.asarray(input_moments, float)                        # m_0 … m_{N}
    delta = [np.zeros(N) for _ in range(L)]
    for _ in range(N + 1):
        c = [one * ck for ck in coef]
        eps = one - r_plus * w
        top = [None] * (L + 1)
        for j in range(L, 0, -1):
            top[j] = c[j]
            s = _smul(c[j], series.reciprocal(one + delta[j - 1]))
            c[j - 1] = c[j - 1] + b2 * s
            eps = eps - (1.0 - b2) * _smul(w, s)
        inv_eps = series.reciprocal(eps)
        cw = _smul(c[0], w)
        alpha, beta = np.zeros(N), np.zeros(N)
        term = _smul(w, inv_eps)                           # w (c₀w)^i ε₀^{−i−1}, i = 0
        for i in range(N):
            alpha -= m0[i] * term
            beta -= m0[i + 1] * term
            term = _smul(term, _smul(cw, inv_eps))
        new = []
        for j in range(1, L + 1):
            tau = (1.0 - b2) * alpha + b2 * beta
            new.append(gammas[j - 1] * _smul(top[j], tau))
            beta = _smul(tau, series.reciprocal(one + new[-1]))
        delta = new
    return -alpha[2:K + 2]


def _ntk_setup(net, n_data, input_law):
    a, b, gammas = _fan_wang_constants(net, n_data)
    r_plus, coef = ntk_coefficients(net, n_data)
    mu0 = MarchenkoPastur(gammas[0]) if input_law is None else input_law
    if not isinstance(mu0, Measure):
        raise ValueError(f"input_law must be a Measure, got {type(mu0).__name__}")
    if mu0.hull()[0] < 0:
        raise ValueError(f"input_law must live on [0, inf) (a Gram spectrum), got hull {mu0.hull()}")
    return r_plus, coef, b, gammas[1:], mu0


def ntk_moments(net, n_data, K=4, input_law=None):
    """Exact m₁ … m_K of :func:`ntk_law`, from the same equations in formal power series (no density, no grid):
    the independent check of the law's table. ``input_law``'s moments up to K + 2 are used.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Gaussian weights, σ_w = 1, σ_b = 0, depth ≥ 2; widths d₀ … d_{L−1} (the read-out's width does not enter).
    n_data : int
        n, the number of inputs.
    K : int
        The number of moments.
    input_law : Measure, optional
        The law of X₀ᵀX₀ (default MP(γ₀)).

    Returns
    -------
    ndarray
        m₁ … m_K.

    Examples
    --------
    Every X_ℓᵀX_ℓ has mean eigenvalue E φ̃² = 1, so m₁ = r₊ + Σ c_ℓ: 2 (linear) and b² + b² + 1 ≈ 2.466942 (ReLU, with
    :func:`ntk_coefficients`' example).

    >>> from rmtnet.spectra.network import mlp
    >>> lin, relu = (mlp(2, widths=(100, 50, 1), activation=a, sigma_w=1.0, q0=1.0) for a in ("linear", "relu"))
    >>> print(f"{ntk_moments(lin, 50, K=1)[0]:.6f} {ntk_moments(relu, 50, K=1)[0]:.6f}")
    2.000000 2.466942
    """
    r_plus, coef, b, gammas, mu0 = _ntk_setup(net, n_data, input_law)
    K = integer_at_least("K", K, 1)
    try:
        m = _ntk_series(r_plus, coef, b, gammas, mu0, K)
    except OverflowError as exc:                        # an input moment of order ≤ K + 2 beyond float64
        raise OverflowError(f"ntk_moments(K={K}): input_law's moments up to order K + 2 are needed and are not "
                            f"representable in float64 ({exc})") from None
    if not np.all(np.isfinite(m)):
        raise OverflowError(f"ntk_moments(K={K}): the moments are not representable in float64 (got {m}); lower K")
    return m


def ntk_law(net, n_data, input_law=None, finite_width=False) -> Measure:
    """Limit spectral law of the NTK over ``n_data`` inputs (Fan & Wang, "Spectra of the conjugate kernel and neural
    tangent kernel for linear-width neural networks", NeurIPS 2020, arXiv 2005.11879), in the setting of
    :func:`ck_law`: ``net`` with Gaussian weights, σ_w = 1, σ_b = 0, its activation normalised
    (:func:`normalised_activation`), γ_ℓ = n_data/d_ℓ from its widths (d₀ the input dimension).

    The depth-L description is the whole network (module docstring): H = L − 1 hidden layers
    X_ℓ = φ̃(W_ℓX_{ℓ−1})/√d_ℓ (ℓ ≤ H) with W_ℓ iid N(0, 1) and X₀'s columns of norm ≈ 1 (iid N(0, 1/d₀) entries by
    default, so X₀ᵀX₀ → MP(γ₀); ``input_law`` replaces MP(γ₀) by any law of X₀ᵀX₀ on [0, ∞), e.g. the Gram
    spectrum of real data), and the read-out f(x) = wᵀx_H with w (a row of W_L) iid N(0, 1). The NTK is
    K = Σ_θ ∇_θf ∇_θfᵀ over all L weight matrices (n × n), and K − (r₊I + Σ_{ℓ≤H} b^{2(H−ℓ)} X_ℓᵀX_ℓ) → 0
    (:func:`ntk_coefficients`). Below, "depth" counts hidden layers, H. Its law solves the
    equations of :class:`NTKLaw`; returned as a :class:`Tabulated` density (cdf, quantiles, Cauchy transform exact
    for the table) whose moments are the exact series of :func:`ntk_moments`. Raises :class:`ConvergenceError`
    where the continuation fails or the bands found do not hold the mass to 1e-8, and at once (naming the ratios)
    for b² < 1 where the width ratios Σ_ℓ d_ℓ/n are within 3·10⁻³ of 1: the lower edge then sits at r₊ or just
    above it with ρ ∝ (x − r₊)^{−1/2}, out of the continuation's reach to 1e-8 (e.g. n/d = 1000, 1 or 2, 2).

    **Finite n.** This is the n → ∞ law. At finite n each sample's backpropagated norms ‖s_{ℓ,i}‖² (and its
    feature norms) fluctuate by O(n^{−1/2}) about their limits a^{L−ℓ+1}, so the actual NTK is close to
    F^{1/2}(r₊I + Σ_ℓ c_ℓX_ℓᵀX_ℓ)F^{1/2} with F = diag(K_ii/(r₊ + Σ_ℓ c_ℓ‖x_{ℓ,i}‖²)), per-sample factors of relative
    spread C/√n. The law's lower edge sits near r₊ and is steep (a quarter of the mass within 0.5 of it at γ_ℓ = 1),
    and F smears it over ≈ edge·C/√n; the rest of the spectrum and m₁ are untouched. For tanh (r₊ = 1.6 at depth 3,
    C ≈ 1.7) this is invisible at n = 2000. For ReLU a = 2b², so r₊ = Σ_k (a^k − b^{2k}) is large (2.35 at depth
    2, 5.11 at depth 3) and the Bernoulli φ̃′² compounds the spread down the layers (C ≈ 1.9 at depth 2, 2.5 at
    depth 3): measured KS between the law and the actual NTK at n = 2000 (d₀ = 2n, d_ℓ = n, sphere read-out, 2
    networks) 0.016–0.028 (depth 2) and 0.061–0.095 (depth 3) as the draws vary, all of it below the law's 25 %
    quantile, falling with n; the linear combination on the same draws matches the law to KS 0.002, and removing F
    (F^{−1/2}KF^{−1/2}) brings depth 3 to 0.022 (tests/test_ntk_law.py).

    ``finite_width=True`` returns the law with that first finite-width effect put back: μ_A ⊠ μ_F, with F's
    entries independent of A (a diagonal matrix of iid factors is asymptotically free from a matrix with delocalised
    eigenvectors), μ_F log-normal with mean 1 and the variance of :func:`ntk_factor_variance` (derived from the
    widths, not fitted; m₁ is unchanged, m₂ grows by v·m₁²), tabulated (:func:`tabulate`: cdf and quantiles
    from the table, moments exact from the product). ReLU at n = 2000, d₀ = 2n, d_ℓ = n, 4 networks,
    each draw divided by its mean eigenvalue: KS to the limit / to this law 0.024 / 0.010 at depth 2 and
    0.080 / 0.019 at depth 3. The draws' common scale is not in it: each network's spectrum moves as a whole by about
    1–2 % from draw to draw at n = 2000 (more for tanh than ReLU), so pool several networks or compare each draw's
    spectrum divided by its mean eigenvalue.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Gaussian weights, σ_w = 1, σ_b = 0, depth ≥ 2; widths d₀ … d_{L−1} (the read-out's width does not enter).
    n_data : int
        n, the number of inputs.
    input_law : Measure, optional
        The law of X₀ᵀX₀ (default MP(γ₀)).
    finite_width : bool
        Whether to include the per-sample factors (above).

    Returns
    -------
    Measure
        The law, tabulated.

    Examples
    --------
    Linear depth 2: K = X₀ᵀX₀ + X₁ᵀX₁, mean 1 + 1 = 2 (each Gram has mean 1).

    >>> from rmtnet.spectra.network import mlp
    >>> law = ntk_law(mlp(2, widths=(100, 50, 1), activation="linear", q0=1.0), 50)
    >>> print(f"{law.mean():.6f}")
    2.000000
    """
    finite_width = boolean("finite_width", finite_width)
    law = _combination_law(*_ntk_setup(net, n_data, input_law))
    if not finite_width:
        return law
    v = ntk_factor_variance(net)
    q = float(np.log1p(v))
    # a table to ~1e-5 in the cdf (the finite-width correction itself is first order): 4× cheaper than 1e-9
    return tabulate(free_mult(law, gaussian_pushforward(lambda h: np.exp(h - q / 2), q)), n0=100, rtol=1e-7)


def ntk_factor_variance(net):
    """Variance v of the per-sample factors F_i = K_ii/A_ii, A = r₊I + Σ_ℓ c_ℓX_ℓᵀX_ℓ, of the NTK over data of
    ``net`` at its finite widths (:func:`ntk_law`'s "Finite n"), to first order in 1/d_ℓ. Below L counts the hidden
    layers (the description's depth less its read-out).

    The gradient with respect to W_ℓ of f(x_i) is s_{ℓ,i}x_{ℓ−1,i}ᵀ, so K_ii = Σ_{ℓ=1}^{L+1} q_{ℓ−1,i}S_{ℓ,i} with
    q_ℓ = ‖x_ℓ‖² and S_ℓ = ‖s_ℓ‖² (ℓ = L + 1 the read-out, S = 1), E S_ℓ = a^{L−ℓ+1}, while
    A_ii = r₊ + Σ_m b^{2(L−m)}q_m; both have mean T = Σ_{j=0}^{L} a^j. Two sources of fluctuation, each O(d^{−1/2}):

    * backward: going down one layer multiplies S by ρ_k = (1/d_k)Σ_j φ̃′(h_{k,j})²g_j²/a with g ≈ iid N(0, 1)
      (gradient independence), Var ρ_k = κ_k/d_k, κ_k = 3m₄/a² − 1 (m₄ = E φ̃′⁴), and κ_L = 3(m₄/a² − 1) at the
      read-out layer (w on the sphere of radius √d_L; a Gaussian w adds a common scale 2/d_L that moves each
      network's whole spectrum instead);
    * forward: q_m = χq_{m−1} + η_m with χ = d/dq E φ̃(√q ξ)² at q = 1, Var η_m = (E φ̃⁴ − 1)/d_m, Var q₀ = 2/d₀, and
      Cov(ρ_k, η_k) = Cov(φ̃′², φ̃²)/(a d_k) (the same pre-activations).

    To first order T(F_i − 1) = Σ_k C_k(ρ_k − 1) + Σ_j β_jη_j with C_k = Σ_{ℓ≤k} a^{L−ℓ+1} and
    β_j = Σ_{m=j}^{L−1} (a^{L−m} − b^{2(L−m)})χ^{m−j} (the top layer's norm enters K and A alike), hence

        v = [Σ_k C_k²κ_k/d_k + β₀²·2/d₀ + Σ_{j≥1} (β_j²(E φ̃⁴ − 1) + 2C_jβ_j Cov(φ̃′², φ̃²)/a)/d_j] / T².

    Against the measured spread of K_ii/A_ii (n = 400, d₀ = 2n, d_ℓ = n, 4 networks, ±1.8 %): measured/predicted
    sd 1.044, 0.985, 0.986 for ReLU at depth 1–3, 1.017, 1.007, 1.008 for tanh. Not included: the dependence of
    ρ_k on q_{k−1} (zero for ReLU) and the per-network common scale.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        As in :func:`ntk_law`, at its widths.

    Returns
    -------
    float
        v.

    Examples
    --------
    Linear (a = b = 1, m₄ = 1, so β = 0 and κ_L = 0, κ₁ = 2): v = C₁²κ₁/(d₁T²) with C₁ = 1, T = 3 at L = 2 hidden
    layers, = 2/(50·9) ≈ 0.004444 at d₁ = 50; at L = 1, v = 0 (K_ii = A_ii for a read-out on the sphere).

    >>> from rmtnet.spectra.network import mlp
    >>> v = [ntk_factor_variance(mlp(len(w) - 1, widths=w, activation="linear", q0=1.0))
    ...      for w in [(100, 50, 1), (100, 50, 50, 1)]]
    >>> print(np.round(v, 6).tolist())
    [0.0, 0.004444]
    """
    net = check_network("net", net)
    a, b, _ = _fan_wang_constants(net, net.widths[0])
    act = normalised_activation(net.activation)

    def E(f, q=1.0):
        return gaussian_expectation(f, q, act.breakpoints)

    m4 = E(lambda h: act.dphi(h) ** 4)
    p4 = E(lambda h: act.phi(h) ** 4)
    cov = E(lambda h: act.dphi(h) ** 2 * act.phi(h) ** 2) - a * E(lambda h: act.phi(h) ** 2)
    eps = 1e-4
    chi = (E(lambda h: act.phi(h) ** 2, 1 + eps) - E(lambda h: act.phi(h) ** 2, 1 - eps)) / (2 * eps)
    L, d = net.depth - 1, net.widths[:-1]               # hidden layers and their widths (W_{L+1} is the read-out)
    total = sum(a ** j for j in range(L + 1))
    C = [sum(a ** (L - ell + 1) for ell in range(1, k + 1)) for k in range(L + 1)]
    alpha = [a ** (L - m) - b ** (2 * (L - m)) for m in range(L)]
    beta = [sum(alpha[m] * chi ** (m - j) for m in range(j, L)) for j in range(L)] + [0.0]
    v = beta[0] ** 2 * 2.0 / d[0]
    for k in range(1, L + 1):
        kappa = 3.0 * (m4 / a ** 2 - 1.0) if k == L else 3.0 * m4 / a ** 2 - 1.0
        v += (C[k] ** 2 * kappa + beta[k] ** 2 * (p4 - 1.0) + 2.0 * C[k] * beta[k] * cov / a) / d[k]
    if not np.isfinite(v) or v < 0:
        raise ConvergenceError(f"ntk_factor_variance: the variance came out {v!r} for {net!r}", z=None,
                               iteration=0, residual=v)
    return float(v / total ** 2)


_NTK_MASS_TOL = 1e-8        # the books of NTKLaw's table: bands (tanh-sinh on each) and atoms hold 1 to this


def _combination_law(r_plus, coef, b, gammas, mu0):
    """The :class:`NTKLaw` of r₊I + Σ c_ℓK_ℓ, its mass checked, as a :class:`Tabulated` table with exact moments.

    The bands are searched on the hull's uniform grid, then (where the books do not balance) over many scales
    (``NTKLaw._MULTISCALE``), then both 8× finer; straight over many scales where the loose bound of the hull is
    more than 10× Gordon's (:meth:`NTKLaw._layer_tops`: a layer much narrower than the data)."""
    law = NTKLaw(r_plus, coef, b, gammas, mu0, moments=series.CachedMoments(_ntk_series, r_plus, coef, b, gammas, mu0))
    _check_reach(law)
    loose, tight = (float(np.dot(law.coef, t)) for t in law._layer_tops())
    searches = [(NTKLaw._GRID, False), (NTKLaw._GRID, True), (8 * NTKLaw._GRID, False), (8 * NTKLaw._GRID, True)]
    if loose > 10.0 * tight:
        searches = [s for s in searches if s[1]]
    for grid, multiscale in searches:
        if multiscale != law._MULTISCALE:               # another hull and scale: the cached solutions are stale
            law._cache.clear()
            law.__dict__.pop("_upper", None)
        law._GRID, law._MULTISCALE = grid, multiscale
        law.__dict__.pop("_bands", None)
        try:
            per_band, books = _books(law)
        except ConvergenceError as exc:
            message = str(exc.args[0]).split(" (z=")[0]
            raise ConvergenceError(f"{message}, at n/d_ℓ = {_ratios(law)} (band search on {grid} points"
                                   f"{', over many scales' if multiscale else ''})", z=exc.z,
                                   iteration=exc.iteration, residual=exc.residual) from exc
        if abs(books["total"] - 1.0) <= _NTK_MASS_TOL:
            break
    else:
        check_books(books, _NTK_MASS_TOL, f"ntk_law at n/d_ℓ = {_ratios(law)}", law)
    pieces = [p for band in per_band for p in band]
    return _Table(law, pieces)


_EDGE_REACH = 3e-3          # |Σ_ℓ rank(K_ℓ)/n − 1| below this (b² < 1) is refused: see _check_reach


def _check_reach(law):
    """Refuse at once (:class:`ConvergenceError`) the aspect ratios whose lower edge the continuation cannot resolve
    to the mass check: for b² < 1 with the layers' width ratios Σ_ℓ d_ℓ/n (:meth:`NTKLaw._width_sum`) within
    :data:`_EDGE_REACH` of 1
    the band next to r₊ starts within ~(Σ − 1)² of its width above r₊ with ρ ∝ (x − r₊)^{−1/2} over it (or at r₊
    itself, Σ = 1), and the continuation, stalled next to that edge, smears 10⁻⁷–10⁻⁵ of the mass over it (tanh
    n/d = 1000, 1: Σ − 1 = 10⁻³, 4.7e-7 missing after 280 s; erf n/d = 2, 2: Σ = 1, 5.7e-7 after 440 s; at
    Σ − 1 = 0.01 and 0.033, tanh n/d = 100, 1 and 30, 1, the books hold to 5e-13 in 19 s and 3 s)."""
    if law.b2 >= 1.0 - 1e-12 or abs(law._width_sum() - 1.0) >= _EDGE_REACH:
        return
    total = law._width_sum()
    raise ConvergenceError(
        f"ntk_law at n/d_ℓ = {_ratios(law)}: out of reach — the layers' width ratios Σ_ℓ d_ℓ/n add to "
        f"{total:.6g}, within {_EDGE_REACH:g} of 1, so the spectrum's lower edge lies at r₊ = {law.r_plus:.6g} or "
        f"within ~(Σ − 1)² = {(total - 1.0) ** 2:.2g} of the band's width above it, with a density ∝ (x − r₊)^(-1/2) "
        "there that the continuation cannot resolve to the mass check of 1e-8; move one n/d_ℓ so that the sum is at "
        f"least {_EDGE_REACH:g} away from 1", z=None, iteration=0, residual=total - 1.0)


def _books(law):
    """tanh-sinh on each band of ``law`` (split where the density is not resolved: a data set's spectrum gives
    bands with steep inner features), and the mass books of bands and atoms."""
    bands = law.intervals()
    per_band = [resolved_tanh_sinh(law.pdf, lo, hi, rtol=1e-9, n0=200, min_level=1) for lo, hi in bands]
    return per_band, mass_books(bands, [sum(h * float(np.sum(fx * w)) for _, w, fx, h in band) for band in per_band],
                                float(np.sum(law.atoms()[1])))


def _ratios(law):
    """The aspect ratios γ₀ … γ_L = n/d_ℓ of ``law``, for messages (γ₀ where the input law is MP(γ₀))."""
    first = [f"{law.mu0.ratio:.4g}"] if isinstance(law.mu0, MarchenkoPastur) else ["(input law)"]
    return ", ".join(first + [f"{g:.4g}" for g in law.gammas])


class _Table(Tabulated):
    """The density of :class:`NTKLaw` on the nodes its mass was checked on, as a :class:`Tabulated` law."""

    def __init__(self, source, pieces):
        x = np.concatenate([p[0] for p in pieces])
        rho = np.concatenate([p[2] for p in pieces])
        order = np.argsort(x, kind="stable")
        x, rho = x[order], rho[order]
        keep = np.concatenate([[True], np.diff(x) > 0])
        GridDensity.__init__(self, x[keep], rho[keep], atoms=source.atoms(), normalize=True)
        self.source, self.quadrature = source, pieces   # the tanh-sinh pieces (x, w, ρ(x), h) the books were kept on
