"""Numerical test of the asymptotic freeness of layerwise Jacobians (Collins & Hayase, CMP 2023, arXiv 2103.13466).

Setting (that of Collins & Hayase, with Gaussian weights and a control added). A square MLP of width N, fed one
actual input x₀ with ‖x₀‖²/N = q₀:

    h_ℓ = W_ℓ x_{ℓ-1} + b_ℓ,   x_ℓ = φ(h_ℓ),   d_ℓ = φ′(h_ℓ) ∈ ℝ^N,   D_ℓ = diag(d_ℓ),

with W_ℓ = σ_w O_ℓ (O_ℓ Haar orthogonal), or Gaussian entries N(0, σ_w²/N), or — the control — σ_w times a
uniformly random signed permutation matrix, b_ℓ ~ N(0, σ_b² I). D_ℓ depends on W_ℓ through h_ℓ, yet Collins & Hayase
prove that for Haar weights the family (W_1, W_1ᵀ), …, (W_L, W_Lᵀ), (D_1, …, D_{L-1}) is asymptotically free as
N → ∞ (for Gaussian weights: Hanin & Nica; Pastur; Yang). Freeness is Voiculescu's (1985): with the normalised trace
tr = (1/N) Tr as the state φ, elements a, b are free when every alternating product of centred elements has
vanishing state, φ(p₁(a)° p₂(b)° p₃(a)° ⋯) = 0, where x° = x − φ(x)·1.

What is tested. The pair that drives the Jacobian recursion J_ℓ J_ℓᵀ = D_ℓ W_ℓ (J_{ℓ-1}J_{ℓ-1}ᵀ) W_ℓᵀ D_ℓ at
layer ℓ ≥ 2 (:meth:`NetworkDraw.jacobian_pair`):

    a = D_ℓ²  (kept as its diagonal d_ℓ²),      b = W_ℓ D_{ℓ-1}² W_ℓᵀ.

(At ℓ = 1, b = W_1W_1ᵀ = σ_w² I for Haar weights, which is trivially free from everything.) Each sample gives the
deviations of mixed moments from their free values, computed with the sample's own single-variable moments
tr(a), tr(a²), tr(b), tr(b²), so that only the mixed structure is tested (:data:`WORDS`):

    "ab"        tr(a°b°) = tr(ab) − tr(a)tr(b)
    "abab"      tr(abab) − [tr(a²)tr(b)² + tr(a)²tr(b²) − tr(a)²tr(b)²]       (the free value, :func:`free_abab`)
    "abab_c"    tr(a°b°a°b°)                     (free value 0)
    "ababab_c"  tr(a°b°a°b°a°b°)                 (free value 0)

with a° = a − tr(a)·I of the same sample. Orders in N, for Haar and Gaussian weights: E[deviation] = O(1/N) (finite-N
bias; orthogonal invariance has 1/N, not 1/N², corrections), and a single sample fluctuates about it by O(1/N) as well
(second-order freeness: centring by the sample's own moments removes the O(1/√N) fluctuations of tr(a), tr(a²), …,
which would otherwise dominate). Both the mean and the root-mean-square of the deviation therefore fall like 1/N; the
mean over S samples has standard error O(1/(N√S)), so |mean| is resolved at every N once S is a few tens, and a
least-squares fit of log|mean| on log N gives slope ≈ −1 (:func:`loglog_fit`). For the control (random signed
permutations: orthogonal, norm-preserving, the same mean-field q_ℓ, but not Haar) a and b are both diagonal, hence
commute: tr(a°b°a°b°) = tr(a°²b°²) > 0 stays O(1) and the slope is ≈ 0. A second control, ``"shuffled"``, keeps the
Haar network's a and replaces b by σ_w² Π D_{ℓ-1}² Πᵀ with Π a uniform random permutation: b then has exactly the
spectrum of the Haar b but is classically independent of a instead of free — "ab" still vanishes (at rate 1/√N),
while "abab_c" → tr(a°²)tr(b°²) ≠ 0: freeness is seen at order four, not two.

Public names: :func:`sample_network` (the sampler), :class:`NetworkDraw`, :func:`word_values`, :func:`free_abab`,
:func:`freeness_deviations` (tidy table at one width), :func:`loglog_fit`, :func:`freeness_test` (widths × cases, with
fitted slopes) and its result :class:`FreenessResult`. Float64 throughout, NumPy or CuPy (``backend``), seeded.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import array_api_compat
import numpy as np
import pandas as pd

from .. import backend as B
from .._validation import boolean, integer_at_least
from ..spectra.network import mlp
from ..spectra.sampling.montecarlo import propagate

__all__ = ["WORDS", "WEIGHTS", "CASES", "CONTROLS", "NetworkDraw", "sample_network", "free_abab", "word_values",
           "freeness_deviations", "loglog_fit", "LogLogFit", "FreenessResult", "freeness_test"]

WORDS = ("ab", "abab", "abab_c", "ababab_c")
WEIGHTS = ("orthogonal", "gaussian", "permutation")
CASES = ("haar", "gaussian", "control")
CONTROLS = ("permutation", "shuffled")

_ELEMENTS_PER_CHUNK = 2 ** 23          # samples are drawn in chunks of at most this many entries per N×N stack


# --------------------------------------------------------------------------------------------------------------
# validation

def _int(name, v, lo=1):
    return integer_at_least(name, v, lo)


def _choice(name, v, allowed):
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {v!r}")
    return v


def _sequence(name, v, what):
    """``v`` as a tuple (a lone string as a 1-tuple), or ValueError naming ``name`` if it is not a sequence."""
    if isinstance(v, str):
        return (v,)
    if isinstance(v, (bytes, dict)) or not isinstance(v, Iterable) or getattr(v, "ndim", 1) == 0:
        raise ValueError(f"{name} must be {what}, got {v!r:.60}")
    return tuple(v)


def _layer(net, layer):
    """The layer ℓ of the pair (D_ℓ², W_ℓD_{ℓ−1}²W_ℓᵀ): ``layer``, or the last one when None, in [2, depth]."""
    if net.depth < 2:
        raise ValueError(f"net must have depth ≥ 2 for the freeness test (the pair D_ℓ², W_ℓD_{{ℓ-1}}²W_ℓᵀ has "
                         f"ℓ ≥ 2), got depth {net.depth}")
    layer = net.depth if layer is None else _int("layer", layer, lo=2)
    if layer > net.depth:
        raise ValueError(f"layer must lie in [2, {net.depth}] (the network's depth), got {layer}")
    return layer


def _words(words):
    words = _sequence("words", words, f"a word or a non-empty subset of {WORDS}")
    if not words:
        raise ValueError(f"words must be a non-empty subset of {WORDS}, got ()")
    for w in words:
        _choice("words", w, WORDS)
    return words


def _square_net(net):
    for attr in ("widths", "depth", "sigma_w", "sigma_b", "activation", "q0"):
        if not hasattr(net, attr):
            raise ValueError(f"net must be an rmtnet.spectra.network.MLP (missing .{attr}), got {type(net).__name__}")
    if len(set(net.widths)) != 1:
        raise ValueError(f"net must be square (all widths equal) for the freeness test, got widths {net.widths}")
    return net


# --------------------------------------------------------------------------------------------------------------
# the sampler

@dataclass(frozen=True)
class NetworkDraw:
    """``n_samples`` independent square networks of width N, each fed its own input, on the sampling backend.

    weights[ℓ-1] = W_ℓ, shape (S, N, N); h[ℓ-1] = h_ℓ and d[ℓ-1] = d_ℓ = φ′(h_ℓ), shape (S, N) (the diagonal of D_ℓ;
    no dense diagonal matrix is formed); x0 the inputs, shape (S, N); kind the weight law ("orthogonal", "gaussian",
    "permutation").

    Examples
    --------
    Three draws of a depth-2, width-4 tanh network with Haar weights (:func:`sample_network`):

    >>> net = mlp(depth=2, width=4, activation="tanh", sigma_w=1.5, sigma_b=0.1, weights="orthogonal")
    >>> draw = sample_network(net, n_samples=3, seed=0)
    >>> draw.depth, draw.n, draw.n_samples, draw.kind
    (2, 4, 3, 'orthogonal')
    >>> a, b = draw.jacobian_pair()
    >>> a.shape, b.shape
    ((3, 4), (3, 4, 4))
    """
    weights: tuple
    h: tuple
    d: tuple
    x0: object
    kind: str
    sigma_w: float

    @property
    def depth(self) -> int:
        return len(self.weights)

    @property
    def n(self) -> int:
        return int(self.x0.shape[-1])

    @property
    def n_samples(self) -> int:
        return int(self.x0.shape[0])

    def d2(self, ell):
        """d_ℓ² (S, N), the diagonal of D_ℓ²; ℓ = 0 gives ones (the input layer has no activation)."""
        ell = _int("ell", ell, lo=0)
        if ell > self.depth:
            raise ValueError(f"ell must lie in [0, {self.depth}], got {ell}")
        if ell == 0:
            return self.x0 * 0.0 + 1.0
        return self.d[ell - 1] ** 2

    def jacobian_pair(self, ell=None):
        """(a, b) at layer ℓ (default: the last): a = d_ℓ², the diagonal of D_ℓ², shape (S, N), and
        b = W_ℓ D_{ℓ-1}² W_ℓᵀ, shape (S, N, N). Needs 2 ≤ ℓ ≤ depth."""
        ell = self.depth if ell is None else ell
        ell = _int("layer", ell, lo=2)
        if ell > self.depth:
            raise ValueError(f"layer must lie in [2, {self.depth}] (the network's depth), got {ell}")
        w = self.weights[ell - 1]
        b = (w * self.d2(ell - 1)[..., None, :]) @ _swap(w)
        return self.d2(ell), b


def _swap(m):
    return m.swapaxes(-1, -2)


def sample_network(net, width=None, n_samples=1, seed=None, backend=None, weights=None) -> NetworkDraw:
    """Draw ``n_samples`` square networks described by ``net`` (an :class:`rmtnet.spectra.network.MLP`; width N = ``width``,
    default ``net.width``) and propagate one random input through each (‖x₀‖²/N = net.q0 exactly).

    weights: "orthogonal" (σ_w·Haar, the QR-with-signs sampler of :mod:`~rmtnet.spectra.sampling.montecarlo`), "gaussian"
    (entries N(0, σ_w²/N)), "permutation" (σ_w·uniform random signed permutation: orthogonal but not Haar, the
    non-free control), or None for ``net.weights``. Float64, on ``backend``, reproducible from ``seed``.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network (all widths equal).
    width : int, optional
        N ≥ 1; default ``net.width``.
    n_samples : int, default 1
        Independent networks, ≥ 1.
    seed : int or None
        The seed.
    backend : str or None
        The sampling backend (NumPy by default, or CuPy).
    weights : {"orthogonal", "gaussian", "permutation"} or None
        The weight law, see above.

    Returns
    -------
    NetworkDraw

    Examples
    --------
    Haar weights are σ_w times an orthogonal matrix, so W Wᵀ = σ_w² I = 2.25 I at σ_w = 1.5:

    >>> net = mlp(depth=2, width=4, activation="tanh", sigma_w=1.5, sigma_b=0.1, weights="orthogonal")
    >>> draw = sample_network(net, n_samples=3, seed=0)
    >>> w = draw.weights[1]
    >>> w.shape, bool(np.allclose(w @ w.swapaxes(-1, -2), 2.25 * np.eye(4)))
    ((3, 4, 4), True)
    >>> bool(np.allclose((draw.x0 ** 2).mean(axis=-1), net.q0))
    True
    """
    net = _square_net(net)
    n = net.width if width is None else _int("width", width)
    n_samples = _int("n_samples", n_samples)
    kind = _choice("weights", net.weights if weights is None else weights, WEIGHTS)
    ws, hs, ds, x0 = [], [], [], None
    for w, x, h in propagate(net, n, n_samples, seed, backend, weights=kind):
        x0 = x if x0 is None else x0
        ws.append(w)
        hs.append(h)
        ds.append(net.activation.dphi(h) * 1.0)
    return NetworkDraw(tuple(ws), tuple(hs), tuple(ds), x0, kind, float(net.sigma_w))


# --------------------------------------------------------------------------------------------------------------
# mixed moments

def free_abab(tr_a, tr_a2, tr_b, tr_b2):
    """φ(abab) for free a, b from their own moments: φ(a²)φ(b)² + φ(a)²φ(b²) − φ(a)²φ(b)² (Voiculescu; equivalently
    m₂ of law(a) ⊠ law(b)). Works elementwise on arrays.

    Parameters
    ----------
    tr_a, tr_a2, tr_b, tr_b2 : float or array
        φ(a), φ(a²), φ(b), φ(b²).

    Returns
    -------
    float or array
        φ(abab) if a and b were free.

    Examples
    --------
    For a = 2·1 and b = 3·1 (scalars are free from everything) φ(abab) = (2·3)² = 36:

    >>> free_abab(2.0, 4.0, 3.0, 9.0)
    36.0
    """
    return tr_a2 * tr_b ** 2 + tr_a ** 2 * tr_b2 - tr_a ** 2 * tr_b ** 2


def word_values(a, b, words=WORDS, *, diagonal_b=False):
    """Deviations of mixed moments of (a, b) from their free values, per sample (see the module docstring).

    a: the diagonal of a diagonal matrix, shape (..., N) (the pair's a = D_ℓ² is always diagonal). b: a matrix
    (..., N, N), or with ``diagonal_b=True`` the diagonal of one, (..., N). tr = (1/N) Tr; the centring a° = a − tr(a),
    b° = b − tr(b) and the free value of "abab" use the moments of the same sample. Returns {word: array (...)} on
    the input's backend.

    Examples
    --------
    A multiple of the identity is free from every a: all deviations vanish.

    >>> a = np.array([0.0, 2.0])
    >>> {w: float(v) for w, v in word_values(a, 3 * np.eye(2)).items()}
    {'ab': 0.0, 'abab': 0.0, 'abab_c': 0.0, 'ababab_c': 0.0}

    Two commuting diagonals are not free: with a = b = diag(0, 2), a° = b° = diag(−1, 1), so tr(a°b°) = 1, and
    tr(abab) = 8 against the free value 2·1 + 1·2 − 1·1 = 3:

    >>> {w: float(v) for w, v in word_values(a, a, diagonal_b=True).items()}
    {'ab': 1.0, 'abab': 5.0, 'abab_c': 1.0, 'ababab_c': 1.0}
    """
    diagonal_b = boolean("diagonal_b", diagonal_b)
    words = _words(words)
    n = a.shape[-1]
    bd = b if diagonal_b else b.diagonal(axis1=-2, axis2=-1)
    if bd.shape[-1] != n or (not diagonal_b and b.shape[-2] != n):
        raise ValueError(f"a (…, N) and b (…, N, N) must have the same N, got shapes {a.shape} and {b.shape}")
    ta = a.mean(axis=-1)
    tb = bd.mean(axis=-1)
    ac = a - ta[..., None]
    out = {}
    if diagonal_b:
        bc = bd - tb[..., None]
        prods = {"ab": ac * bc, "abab_c": (ac * bc) ** 2, "ababab_c": (ac * bc) ** 3}
        for w in words:
            if w in prods:
                out[w] = prods[w].mean(axis=-1)
        if "abab" in words:
            tr_abab = (a * bd * a * bd).mean(axis=-1)
            out["abab"] = tr_abab - free_abab(ta, (a * a).mean(axis=-1), tb, (bd * bd).mean(axis=-1))
        return {w: out[w] for w in words}
    # M = a° b° (a° diagonal: a row scaling), so tr((a°b°)^k) = tr(M^k)
    idx = array_api_compat.array_namespace(b).arange(n)
    bc = b.copy()
    bc[..., idx, idx] -= tb[..., None]
    m = ac[..., :, None] * bc
    if "ab" in words:
        out["ab"] = m.diagonal(axis1=-2, axis2=-1).mean(axis=-1)
    if "abab_c" in words or "ababab_c" in words:
        mt = _swap(m)
        if "abab_c" in words:
            out["abab_c"] = (m * mt).sum(axis=(-2, -1)) / n
        if "ababab_c" in words:
            out["ababab_c"] = ((m @ m) * mt).sum(axis=(-2, -1)) / n
    if "abab" in words:
        ab = a[..., :, None] * b
        tr_abab = (ab * _swap(ab)).sum(axis=(-2, -1)) / n
        tr_b2 = (b * _swap(b)).sum(axis=(-2, -1)) / n
        out["abab"] = tr_abab - free_abab(ta, (a * a).mean(axis=-1), tb, tr_b2)
    return {w: out[w] for w in words}


# --------------------------------------------------------------------------------------------------------------
# one width: tidy table

def _seed_int(*key):
    return int(np.random.SeedSequence([int(k) for k in key]).generate_state(1)[0])


def _chunk(n, depth):
    return max(1, _ELEMENTS_PER_CHUNK // (n * n * max(depth, 1)))


def _deviation_samples(net, n, n_samples, seed, backend, weights, layer, words, shuffled):
    """{word: NumPy array (n_samples,)} of per-sample deviations at width n, drawn in memory-bounded chunks."""
    xp = B.native(backend)
    chunks, done, k = {w: [] for w in words}, 0, 0
    step = _chunk(n, net.depth)
    while done < n_samples:
        s = min(step, n_samples - done)
        draw = sample_network(net, n, s, seed=_seed_int(seed, n, k), backend=backend, weights=weights)
        if shuffled:
            a = draw.d2(layer)
            rng = B.rng(_seed_int(seed, n, k, 1), backend)
            perm = xp.argsort(rng.random((s, n)), axis=-1)
            b = draw.sigma_w ** 2 * xp.take_along_axis(draw.d2(layer - 1), perm, axis=-1)
            vals = word_values(a, b, words, diagonal_b=True)
        else:
            a, b = draw.jacobian_pair(layer)
            vals = word_values(a, b, words)
        for w in words:
            chunks[w].append(B.to_numpy(vals[w]))
        done += s
        k += 1
    return {w: np.concatenate(v) for w, v in chunks.items()}


def freeness_deviations(net, width, n_samples=32, seed=0, backend=None, weights=None, layer=None, words=WORDS,
                        control=None):
    """Tidy table of the free-value deviations of ``words`` for the Jacobian pair at ``layer`` (default: the last),
    width N = ``width``, over ``n_samples`` independent networks.

    weights as in :func:`sample_network`; ``control="shuffled"`` replaces b by σ_w² Π D_{ℓ-1}² Πᵀ (see the module
    docstring). Columns: weights, word, N, n_samples, mean (of the per-sample deviation), se (= sd/√S), sd (the
    single-sample spread), rms (√mean of squares).

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network of depth ≥ 2.
    width : int
        N ≥ 2.
    n_samples : int, default 32
        S ≥ 2 networks.
    seed : int, default 0
        ≥ 0; each chunk of samples gets a seed derived from it and N.
    backend, weights
        As in :func:`sample_network`.
    layer : int, optional
        ℓ ∈ [2, depth].
    words : str or sequence of str
        A subset of :data:`WORDS`.
    control : {None, "shuffled"}
        Whether b is replaced by its shuffled control.

    Returns
    -------
    pandas.DataFrame
        One row per word.

    Examples
    --------
    One row per word at width 8 over 4 Haar networks; se is sd/√4 = sd/2:

    >>> net = mlp(depth=2, width=8, activation="tanh", sigma_w=1.5, sigma_b=0.1)
    >>> t = freeness_deviations(net, 8, n_samples=4, weights="orthogonal")
    >>> t.word.tolist(), bool(np.allclose(t.se, t.sd / 2))
    (['ab', 'abab', 'abab_c', 'ababab_c'], True)
    """
    net = _square_net(net)
    width = _int("width", width, lo=2)
    n_samples = _int("n_samples", n_samples, lo=2)
    seed = _int("seed", seed, lo=0)
    words = _words(words)
    layer = _layer(net, layer)
    kind = _choice("weights", net.weights if weights is None else weights, WEIGHTS)
    if control is not None:
        _choice("control", control, CONTROLS)
    shuffled = control == "shuffled"
    vals = _deviation_samples(net, width, n_samples, seed, backend, kind, layer, words, shuffled)
    rows = []
    for w in words:
        v = vals[w]
        sd = float(np.std(v, ddof=1))
        rows.append(dict(weights="shuffled" if shuffled else kind, word=w, N=width, n_samples=n_samples,
                         mean=float(np.mean(v)), se=sd / math.sqrt(n_samples), sd=sd,
                         rms=float(np.sqrt(np.mean(v * v)))))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------------------
# slopes

@dataclass(frozen=True)
class LogLogFit:
    """log|y| = intercept + slope·log N, with the slope's standard error.

    Examples
    --------
    y = 3/N lies exactly on a line of slope −1 and intercept log 3:

    >>> fit = loglog_fit([10, 100, 1000], [0.3, 0.03, 0.003])
    >>> round(fit.slope, 6), round(math.exp(fit.intercept), 6), fit.slope_se < 1e-12
    (-1.0, 3.0, True)
    """
    slope: float
    slope_se: float
    intercept: float


def loglog_fit(n, y, se=None) -> LogLogFit:
    """Least-squares fit of log|y| on log N.

    Without ``se``: ordinary least squares, slope SE from the residuals (the classical formula; NaN with two points).
    With ``se`` (the standard errors of y): weighted least squares with the delta-method errors σ = se/|y| of log|y|
    (capped at 1, i.e. a point resolved at less than one standard error gets the weight of an e-fold uncertainty),
    and slope SE = √(cov₁₁ · max(1, χ²/(k − 2))): the propagated error, inflated by the reduced χ² when the points
    scatter more than their error bars say (Birge ratio).

    Parameters
    ----------
    n : array_like
        Positive widths, at least two distinct.
    y : array_like
        Finite, non-zero values, as many as ``n``.
    se : array_like, optional
        Their standard errors, finite and ≥ 0.

    Returns
    -------
    LogLogFit

    Examples
    --------
    |y| = 5 N² exactly (the sign is dropped): slope 2, intercept log 5; with two points the OLS slope error is NaN.

    >>> fit = loglog_fit([1, 2, 4], [-5.0, -20.0, -80.0])
    >>> round(fit.slope, 6), round(math.exp(fit.intercept), 6)
    (2.0, 5.0)
    >>> math.isnan(loglog_fit([1, 2], [1.0, 4.0]).slope_se)
    True
    """
    n = np.asarray(n, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if n.size != y.size or n.size < 2:
        raise ValueError(f"n and y must have the same length ≥ 2, got {n.size} and {y.size}")
    if np.any(~np.isfinite(n)) or np.any(n <= 0):
        raise ValueError("n must be finite and positive")
    if np.unique(n).size < 2:
        raise ValueError("n must contain at least two distinct widths")
    if np.any(~np.isfinite(y)) or np.any(y == 0):
        raise ValueError("y must be finite and non-zero (its logarithm is fitted)")
    x, ly = np.log(n), np.log(np.abs(y))
    X = np.column_stack([np.ones_like(x), x])
    k = n.size
    if se is None:
        coef, *_ = np.linalg.lstsq(X, ly, rcond=None)
        r = ly - X @ coef
        if k > 2:
            s2 = float(r @ r) / (k - 2)
            slope_se = math.sqrt(s2 / float(np.sum((x - x.mean()) ** 2)))
        else:
            slope_se = float("nan")
        return LogLogFit(float(coef[1]), slope_se, float(coef[0]))
    se = np.asarray(se, dtype=float).ravel()
    if se.size != k or np.any(~np.isfinite(se)) or np.any(se < 0):
        raise ValueError("se must be finite, non-negative and as long as y")
    sig = np.clip(se / np.abs(y), 1e-12, 1.0)
    wts = 1.0 / sig ** 2
    A = X.T @ (wts[:, None] * X)
    cov = np.linalg.inv(A)
    coef = cov @ (X.T @ (wts * ly))
    r = ly - X @ coef
    birge = float(wts @ (r * r)) / (k - 2) if k > 2 else 1.0
    return LogLogFit(float(coef[1]), math.sqrt(cov[1, 1] * max(1.0, birge)), float(coef[0]))


# --------------------------------------------------------------------------------------------------------------
# the test over widths

@dataclass(frozen=True)
class FreenessResult:
    """Output of :func:`freeness_test`.

    table: one row per (case, word, N) — case, weights, word, N, n_samples, mean, se, sd, rms (see
    :func:`freeness_deviations`). slopes: one row per (case, word) — slope and slope_se of log|mean| on log N
    (weighted by se, :func:`loglog_fit`), sd_slope and sd_slope_se of the single-sample spread, and the deviation
    |mean| at the largest N.

    Examples
    --------
    A tiny test (widths 8 and 16, 4 networks each): 3 cases × 4 words × 2 widths rows, one slope per (case, word).

    >>> result = freeness_test(widths=(8, 16), n_samples=4)
    >>> result.table.shape[0], result.slopes.shape[0], result.layer
    (24, 12, 2)
    >>> mean, se = result.deviation("haar", "abab_c", n=16)
    >>> row = result.table.query("case == 'haar' and word == 'abab_c' and N == 16").iloc[0]
    >>> mean == abs(float(row["mean"])), se == float(row.se)
    (True, True)
    """
    table: pd.DataFrame
    slopes: pd.DataFrame
    net: object
    layer: int

    def slope(self, case="haar", word="abab_c"):
        row = self._row(case, word)
        return float(row["slope"]), float(row["slope_se"])

    def deviation(self, case="haar", word="abab_c", n=None):
        """(|mean|, se) of the deviation at width n (default: the largest)."""
        t = self.table[(self.table.case == case) & (self.table.word == word)]
        if t.empty:
            raise ValueError(f"no rows for case={case!r}, word={word!r}")
        n = int(t.N.max()) if n is None else n
        r = t[t.N == n]
        if r.empty:
            raise ValueError(f"n must be one of {sorted(t.N.unique())}, got {n!r}")
        return abs(float(r["mean"].iloc[0])), float(r["se"].iloc[0])

    def _row(self, case, word):
        r = self.slopes[(self.slopes.case == case) & (self.slopes.word == word)]
        if r.empty:
            raise ValueError(f"no slope for case={case!r}, word={word!r}; cases {sorted(self.slopes.case.unique())},"
                             f" words {sorted(self.slopes.word.unique())}")
        return r.iloc[0]


_NET_DEFAULTS = dict(depth=2, activation="tanh", sigma_w=1.5, sigma_b=0.1)


def freeness_test(net=None, *, widths=(64, 128, 256, 512), n_samples=32, words=WORDS, cases=CASES,
                  control="permutation", layer=None, seed=0, backend=None, **mlp_kwargs) -> FreenessResult:
    """Deviation from freeness of the Jacobian pair (a, b) = (D_ℓ², W_ℓ D_{ℓ-1}² W_ℓᵀ) against the width N, for Haar
    weights (Collins & Hayase 2023), Gaussian weights, and a non-free control; with fitted log–log slopes.

    net: a square :class:`rmtnet.spectra.network.MLP` (its ``weights`` field is ignored: each case sets the weights), or None to
    build ``rmtnet.spectra.network.mlp(**mlp_kwargs)`` with defaults depth=2, activation="tanh", sigma_w=1.5, sigma_b=0.1.
    widths: at least two distinct widths N ≥ 2 (three or more for a residual-based slope error). n_samples: networks
    per width (≥ 2). cases: a subset of ("haar", "gaussian", "control"). control: "permutation" (σ_w·random signed
    permutation weights: a and b commute) or "shuffled" (Haar network, b replaced by a shuffled σ_w² D_{ℓ-1}²).
    layer: ℓ ∈ [2, depth], default the last. Every (case, N) has its own seed derived from ``seed``.

    Expected: slopes ≈ −1 for "haar" and "gaussian" (mean deviation = O(1/N) bias; the single-sample spread sd is
    O(1/N) too, see the module docstring), ≈ 0 for the control (on the order-4 words).

    Examples
    --------
    Too few widths and samples to resolve the slopes (the default widths are N = 64 … 512), but it shows the output:

    >>> result = freeness_test(widths=(8, 16), n_samples=4, cases=("haar",), words=("abab_c",))
    >>> result.table.N.tolist(), result.slopes.columns.tolist()[:4]
    ([8, 16], ['case', 'word', 'slope', 'slope_se'])
    """
    if net is None:
        kw = {**_NET_DEFAULTS, **mlp_kwargs}
        kw.setdefault("width", 64)
        net = mlp(**kw)
    elif mlp_kwargs:
        raise ValueError(f"give either net or network keyword arguments, not both (got {sorted(mlp_kwargs)})")
    net = _square_net(net)
    if isinstance(widths, str):
        raise ValueError(f"widths must be a sequence of integers ≥ 2, got {widths!r}")
    widths = _sequence("widths", widths, "a sequence of integers ≥ 2")
    widths = tuple(sorted({_int("widths", w, lo=2) for w in widths}))
    if len(widths) < 2:
        raise ValueError(f"widths must contain at least two distinct integers ≥ 2, got {widths}")
    n_samples = _int("n_samples", n_samples, lo=2)
    words = _words(words)
    cases = tuple(_choice("cases", c, CASES) for c in _sequence("cases", cases, f"a non-empty subset of {CASES}"))
    if not cases:
        raise ValueError(f"cases must be a non-empty subset of {CASES}")
    control = _choice("control", control, CONTROLS)
    seed = _int("seed", seed, lo=0)
    layer = _layer(net, layer)

    frames = []
    for case in cases:
        if case == "control":
            kind, ctl = ("permutation", None) if control == "permutation" else ("orthogonal", "shuffled")
        else:
            kind, ctl = ("orthogonal" if case == "haar" else "gaussian"), None
        for n in widths:
            t = freeness_deviations(net, n, n_samples, seed=_seed_int(seed, CASES.index(case)), backend=backend,
                                    weights=kind, layer=layer, words=words, control=ctl)
            t.insert(0, "case", case)
            frames.append(t)
    table = pd.concat(frames, ignore_index=True)
    rows = []
    for case in cases:
        for w in words:
            t = table[(table.case == case) & (table.word == w)].sort_values("N")
            if np.any(t["mean"] == 0):
                raise ValueError(
                    f"the {w!r} deviations of case {case!r} are exactly 0 at N = {list(t.N[t['mean'] == 0])}: D_ℓ² is "
                    f"constant there (net's activation {net.activation.name!r} at sigma_w={net.sigma_w}, sigma_b="
                    f"{net.sigma_b} is linear or saturated), so (a, b) are trivially free and log|deviation| cannot "
                    "be fitted")
            fit = loglog_fit(t.N, t["mean"], t.se)
            sd_fit = loglog_fit(t.N, t.sd)
            rows.append(dict(case=case, word=w, slope=fit.slope, slope_se=fit.slope_se, sd_slope=sd_fit.slope,
                             sd_slope_se=sd_fit.slope_se, n_max=int(t.N.iloc[-1]),
                             deviation_at_n_max=abs(float(t["mean"].iloc[-1])), se_at_n_max=float(t.se.iloc[-1])))
    return FreenessResult(table, pd.DataFrame(rows), net, layer)
