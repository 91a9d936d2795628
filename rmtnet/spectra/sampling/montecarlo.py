"""Finite-N Monte Carlo of the random matrices whose limits the laws describe (NumPy or CuPy, float64).

Every sampler takes an explicit ``seed`` and a ``backend`` ("numpy", "cupy", or None for the global default) and
returns eigenvalues on that backend; :func:`rmtnet.backend.to_numpy` brings them to the host.
"""
from __future__ import annotations

import numpy as np

from ... import backend as B
from rmtnet._progress import bar, check_progress
from rmtnet._system import check_allocation
from rmtnet._validation import boolean, finite_array, input_rows, integer_at_least, one_of, positive_integers
from ..network import check_network
from ..meanfield import normalised_activation
from .random_matrices import (free_product_eigs, ginibre, ginibre_product_eigs, haar_isometry, haar_orthogonal,
                              layer_weights, random_input, signed_permutation, wishart_eigs)

# The random-matrix ensembles (ginibre, haar_orthogonal, wishart_eigs, …) are imported from random_matrices and
# stay reachable here; this module's own names are the network samplers.
__all__ = ["propagate", "sample_jacobian_eigs", "sample_fisher_eigs", "sample_ck_eigs", "ntk_gram", "sample_ntk",
           "sample_ntk_eigs", "sample_nngp_kernel"]


def _fits(name, nbytes, what, backend):
    """Refuse, before drawing, a sample that cannot fit in memory: :func:`rmtnet._system.check_allocation` naming
    the size argument ``name`` (``nbytes`` a lower bound of what the sampler holds at once, float64 throughout)."""
    check_allocation(name, float(nbytes), what=what, backend=B.get_backend() if backend is None else backend,
                     alternative=f"give a smaller {name} or n_samples (the limit laws of rmtnet.spectra need no "
                                 f"sampling, and rmtnet.spectra.slq of the matrix-free operators of "
                                 f"rmtnet.spectra.sampling.operators reaches widths in the millions)")


def _layer_sizes(net, width):
    """The widths n₀ … n_L (rescaled to n₀ = ``width``), the largest n_ℓ·n_{ℓ−1}, and the name of the argument that
    sets them (``width``, or ``net`` when ``width`` is None)."""
    widths = net.scaled_widths(width)
    return widths, max(a * b for a, b in zip(widths[:-1], widths[1:])), "net" if width is None else "width"


# --------------------------------------------------------------------------------------------------------------
# Random networks: weights, a propagated input, and the spectra of their Jacobian, Fisher dual and CK.
# The net is an rmtnet.spectra.network.MLP (duck-typed here: spectra does not import arch).

def propagate(net, width=None, n_samples=1, seed=None, backend=None, weights=None):
    """Draw ``n_samples`` networks and push one random input (‖x₀‖²/n₀ = net.q0) through each.

    Yields, for ℓ = 1 … L, (W_ℓ, x_{ℓ-1}, h_ℓ) with shapes (S, n_ℓ, n_{ℓ-1}), (S, n_{ℓ-1}), (S, n_ℓ): the actual
    pre-activations, so the empirical q_ℓ follow the mean-field recursion up to O(1/√n) fluctuations.
    ``weights`` overrides ``net.weights`` with any kind :func:`layer_weights` accepts.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (:func:`rmtnet.spectra.network.mlp`).
    width : int, optional
        n₀ (the other widths scaled with it); default the description's widths.
    n_samples : int, default 1
        Independent networks, batched.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    weights : str, optional
        Overrides ``net.weights``.

    Yields
    ------
    tuple of ndarray
        (W_ℓ, x_{ℓ−1}, h_ℓ) for ℓ = 1 … L.

    Examples
    --------
    >>> from rmtnet.spectra import network
    >>> net = network.mlp(3, 20, weights="orthogonal", activation="linear", q0=1.0)
    >>> for w, x, h in propagate(net, n_samples=2, seed=0):
    ...     print(w.shape, x.shape, h.shape, np.round(np.mean(h * h, axis=-1), 10))
    (2, 20, 20) (2, 20) (2, 20) [1. 1.]
    (2, 20, 20) (2, 20) (2, 20) [1. 1.]
    (2, 20, 20) (2, 20) (2, 20) [1. 1.]
    """
    net = check_network("net", net)
    positive_integers(n_samples=n_samples)
    widths, widest, name = _layer_sizes(net, width)
    _fits(name, 8.0 * n_samples * widest, f"a batch of n_samples = {n_samples} weight matrices of {widest:.3g} "
                                          f"entries", backend)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    x = random_input(widths[0], net.q0, rng, xp, n_samples)
    phi = net.activation.phi
    for n_in, n_out in zip(widths[:-1], widths[1:]):
        w = layer_weights(weights or net.weights, n_out, n_in, net.sigma_w, rng, backend, batch=n_samples)
        h = (w @ x[..., None])[..., 0]
        if net.sigma_b > 0:
            h = h + net.sigma_b * rng.standard_normal(h.shape, dtype="float64")
        yield w, x, h
        x = phi(h)


def _gram_eigs(a, xp):
    """Eigenvalues of A Aᵀ (batched, ascending) as the squared singular values of A, padded with the zeros of the
    larger side. Squaring singular values keeps small eigenvalues to absolute accuracy ~(ε‖A‖)² rather than the
    ε‖A‖² of an eigensolver on the formed Gram matrix: a deep Jacobian's law crowds towards 0 like x^{1/(L+1)}, so
    at L = 8 about 2 % of JJᵀ's eigenvalues lie below 1e-15·λ_max and would come out as ±1e-16 noise."""
    n, m = a.shape[-2:]
    e = xp.linalg.svd(a, compute_uv=False)[..., ::-1] ** 2
    if n <= m:
        return e
    return xp.concatenate([xp.zeros(e.shape[:-1] + (n - m,)), e], axis=-1)


def sample_jacobian_eigs(net, width=None, n_samples=1, seed=None, backend=None, return_floor=False, progress=True):
    """Eigenvalues of JJᵀ for ``n_samples`` random draws of ``net`` (J = ∂x_L/∂x₀ = D_L W_L ⋯ D_1 W_1, or without
    D_L when ``net.last_activation`` is False), at the reference widths or with n₀ = ``width``. Float64; NumPy or
    CuPy; batched over samples. Returns shape (n_samples·n_L,) on the backend.

    ``return_floor=True`` also returns the float64 resolution floor x₀ = n·(ε‖J‖₂)² = n·ε²·λ_max(JJᵀ) (largest
    over the samples, n = the larger side of J). The singular values come out of LAPACK with an absolute error of
    order ε‖J‖₂, and forming the product J in float64 adds an error of the same order (checked against an 80-bit
    extended-precision product: at L = 32, n = 300 the float64 eigenvalues agree with it to 1e-10 relative at x ≈
    1e-13 and 1e-6 at x ≈ 1e-20), so eigenvalues below ~ε²λ_max are counted correctly but placed at random; the
    factor n is a margin for the rounding growth in length-n inner products. For deep Gaussian nets the law has real
    mass down there — Fuss–Catalan s = 32 at n = 800: x₀ ≈ 3e-27 with 15.7 % of the mass below it, and the float64
    samples pile up in [1e-36, 1e-30] where the law puts 9 % of its mass below 1e-35 (full KS 0.09; on x ≥ x₀
    0.004). Pass it as ``floor`` to :func:`rmtnet.plot.ks_distance`.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (:func:`rmtnet.spectra.network.mlp`).
    width : int, optional
        n₀ (the other widths scaled with it).
    n_samples : int, default 1
        Independent networks, pooled.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    return_floor : bool, default False
        Also return x₀.
    progress : bool, default True
        A bar over the layers (all samples at once) and the final SVD on a terminal (:func:`rmtnet._progress.bar`;
        it changes no number).

    Returns
    -------
    ndarray or (ndarray, float)
        The eigenvalues, shape (n_samples·n_L,); with ``return_floor`` also x₀.

    Examples
    --------
    An orthogonal linear network is an isometry (all eigenvalues 1); a critical ReLU network has about half of them
    at 0 and mean 1, as :func:`~rmtnet.spectra.jacobian.jacobian_law` predicts:

    >>> from rmtnet.spectra import network
    >>> e = sample_jacobian_eigs(network.mlp(3, 20, weights="orthogonal", activation="linear"), seed=0)
    >>> print(np.allclose(e, 1.0))
    True
    >>> e = sample_jacobian_eigs(network.mlp(2, 100, sigma_w=2 ** 0.5, activation="relu"), n_samples=4, seed=0)
    >>> print(e.shape, f"{np.mean(e < 1e-12):.1f}", f"{e.mean():.1f}")
    (400,) 0.5 1.0
    """
    net = check_network("net", net)
    return_floor = boolean("return_floor", return_floor)
    progress = check_progress(progress)
    positive_integers(n_samples=n_samples)
    widths, _, name = _layer_sizes(net, width)
    # per layer W_ℓ, D_ℓ W_ℓ, the product so far and the next one (n_{ℓ−1}×n₀ and n_ℓ×n₀) at once
    held = max(2 * b * a + (a + b) * widths[0] * (ell > 1) for ell, (a, b) in enumerate(zip(widths, widths[1:]), 1))
    _fits(name, 8.0 * n_samples * held, f"n_samples = {n_samples} Jacobian products and weight matrices", backend)
    xp = B.native(backend)
    dphi = net.activation.dphi
    L = net.depth
    j = None
    with bar(total=L + 1, progress=progress, desc="Jacobian samples", unit="step") as b:
        for ell, (w, _, h) in enumerate(propagate(net, width, n_samples, seed, backend), start=1):
            a = dphi(h)[..., :, None] * w if (ell < L or net.last_activation) else w
            j = a if j is None else a @ j
            b.update()
        eigs = _gram_eigs(j, xp).ravel()
        b.update()
    if not return_floor:
        return eigs
    return eigs, max(j.shape[-2:]) * np.finfo(float).eps ** 2 * float(xp.max(eigs))


def sample_fisher_eigs(net, width=None, n_samples=1, seed=None, backend=None, qhat="empirical", progress=True):
    """Eigenvalues of the one-sample Fisher dual / NTK Θ = Σ_ℓ q̂_{ℓ-1} B_ℓB_ℓᵀ (Hayase & Karakida, AISTATS 2021), B_ℓ
    the Jacobian of the output with respect to h_ℓ; by the recursion Θ₁ = q̂₀ I, Θ_{ℓ+1} = q̂_ℓ I + W_{ℓ+1} D_ℓ Θ_ℓ D_ℓ
    W_{ℓ+1}ᵀ (output h_L; D_L Θ D_L if the last layer has an activation). Square widths. Returns shape (n_samples·n,) on
    the backend.

    ``qhat="empirical"``: q̂_{ℓ-1} = ‖x_{ℓ-1}‖²/n of the actual input — the network's own NTK, whose moments
    fluctuate by O(√(L/n)) from sample to sample (the norms perform a multiplicative random walk) and carry an
    O(L/n) bias in m₂. ``qhat="mean_field"``: the limits q̂_ℓ = E φ(h_ℓ)² instead, everything else unchanged — the
    same limit law with that scalar source of finite-n noise removed.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        A square network description (:func:`rmtnet.spectra.network.mlp`).
    width : int, optional
        n (every width).
    n_samples : int, default 1
        Independent networks, pooled.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    qhat : {"empirical", "mean_field"}, default "empirical"
        The source terms q̂_ℓ.
    progress : bool, default True
        A bar over the layers (all samples at once) on a terminal (:func:`rmtnet._progress.bar`; it changes no number).

    Returns
    -------
    ndarray
        Shape (n_samples·n,).

    Examples
    --------
    For an orthogonal linear network of depth L every B_ℓB_ℓᵀ = I and q̂_ℓ = q₀, so Θ = L·q₀·I:

    >>> from rmtnet.spectra import network
    >>> net = network.mlp(3, 20, weights="orthogonal", activation="linear", q0=1.0)
    >>> print(np.allclose(sample_fisher_eigs(net, n_samples=2, seed=0), 3.0))
    True
    """
    net = check_network("net", net)
    xp = B.native(backend)
    if len(set(net.scaled_widths(width))) != 1:
        raise ValueError("sample_fisher_eigs needs equal widths (a square network)")
    if not isinstance(qhat, str) or qhat not in ("empirical", "mean_field"):
        raise ValueError(f"qhat must be 'empirical' or 'mean_field', got {qhat!r}")
    positive_integers(n_samples=n_samples)
    _, widest, name = _layer_sizes(net, width)
    _fits(name, 8.0 * n_samples * 4 * widest, f"n_samples = {n_samples} n×n matrices Θ, W, W D and their products "
                                              f"(n² = {widest:.3g})", backend)
    layers = bar(propagate(net, width, n_samples, seed, backend), progress=check_progress(progress),
                 desc="Fisher samples", total=net.depth, unit="layer")
    dphi = net.activation.dphi
    theta, d_prev = None, None
    qbar = net.post_activation_moments()
    for ell, (w, x, h) in enumerate(layers):
        qhat_l = xp.mean(x * x, axis=-1)[..., None, None] if qhat == "empirical" else qbar[ell]
        eye = xp.eye(w.shape[-1])
        if theta is None:
            theta = qhat_l * xp.ones((w.shape[0], 1, 1)) * eye
        else:
            a = w * d_prev[..., None, :]                     # W_{ℓ+1} D_ℓ
            theta = qhat_l * eye + a @ theta @ xp.swapaxes(a, -1, -2)
        d_prev = dphi(h)
    if net.last_activation:
        theta = d_prev[..., :, None] * theta * d_prev[..., None, :]
    return xp.linalg.eigvalsh(theta).ravel()


def _feature_widths(net, width):
    """d₀ … d_{L−1} (rescaled to d₀ = ``width``): the input and hidden widths of Fan & Wang's network; the
    description's L-th weight matrix is the read-out (:mod:`rmtnet.spectra.ntk`)."""
    if net.depth < 2:
        raise ValueError(f"net must have a hidden layer (depth ≥ 2: the hidden layers and the read-out W_L), got "
                         f"depth {net.depth}")
    return net.scaled_widths(width)[:-1]


def sample_ck_eigs(net, n_data, width=None, n_samples=1, seed=None, backend=None, progress=True):
    """Eigenvalues of the conjugate kernel (1/d_{L−1}) X_{L−1}ᵀ X_{L−1} (n_data × n_data) of Fan & Wang (2020), the
    Gram matrix of the features the read-out W_L of the depth-L description sees: X₀ has iid N(0, 1) entries
    (d₀ × n), X_ℓ = φ̃(W_ℓ X_{ℓ-1}) (ℓ = 1 … L − 1) with W_ℓ entries N(0, 1/d_{ℓ-1}) and φ̃ the net's activation
    centred and scaled so that E φ̃(ξ) = 0, E φ̃(ξ)² = 1.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description (:func:`rmtnet.spectra.network.mlp`): widths and activation.
    n_data : int
        n, the number of inputs.
    width : int, optional
        d₀ (the other widths scaled with it).
    n_samples : int, default 1
        Independent networks and data sets, pooled.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    progress : bool, default True
        A bar over the layers (all samples at once) on a terminal (:func:`rmtnet._progress.bar`; it changes no number).

    Returns
    -------
    ndarray
        Shape (n_samples·n_data,).

    Examples
    --------
    The normalised activation makes the mean eigenvalue (the mean of ‖x_{L−1}‖²/d_{L−1}) ≈ 1:

    >>> from rmtnet.spectra import network
    >>> e = sample_ck_eigs(network.mlp(2, widths=[200, 200, 200], activation="tanh", sigma_w=1.0), 100, seed=0)
    >>> print(e.shape, f"{e.mean():.1f}")
    (100,) 1.0
    """
    net = check_network("net", net)
    positive_integers(n_data=n_data, n_samples=n_samples)
    progress = check_progress(progress)
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    widths = _feature_widths(net, width)
    # per layer W, X_{ℓ−1} and W X_{ℓ−1} at once (the Gram is never formed: its eigenvalues are X's singular values²)
    held = max((a * b + (a + b) * n_data for a, b in zip(widths[:-1], widths[1:])), default=widths[0] * n_data)
    _fits("n_data" if n_data > max(widths) else ("net" if width is None else "width"), 8.0 * n_samples * held,
          f"n_samples = {n_samples} weight and feature ({max(widths)}×{n_data}) matrices", backend)
    phi = normalised_activation(net.activation).phi
    x = rng.standard_normal((n_samples, widths[0], n_data), dtype="float64")
    for n_in, n_out in bar(list(zip(widths[:-1], widths[1:])), progress=progress, desc="CK samples", unit="layer"):
        x = phi(ginibre(n_out, n_in, rng, backend, batch=n_samples) @ x)
    return _gram_eigs(xp.swapaxes(x, -1, -2) / widths[-1] ** 0.5, xp).ravel()


READOUTS = ("gaussian", "sphere")


def ntk_gram(X, weights, readout, activation, return_parts=False):
    """The NTK Gram matrix K = Σ_θ ∇_θf ∇_θfᵀ of one Fan–Wang network with the given weights, from its features in
    closed form (no autograd): X₀ = ``X`` (d₀ × n, inputs as columns; a leading batch axis is allowed throughout),
    H_ℓ = W_ℓX_{ℓ−1}, X_ℓ = φ(H_ℓ)/√d_ℓ for ``weights`` = [W₁, …, W_L] (W_ℓ: d_ℓ × d_{ℓ−1}), f(x) = wᵀx_L with
    w = ``readout`` (d_L × 1), gradients over every entry of W₁ … W_L and w. With S_L = diag(w)φ′(H_L)/√d_L and
    S_{ℓ−1} = φ′(H_{ℓ−1}) ⊙ (W_ℓᵀS_ℓ)/√d_{ℓ−1},

        K = X_LᵀX_L + Σ_{ℓ=1}^{L} (X_{ℓ−1}ᵀX_{ℓ−1}) ⊙ (S_ℓᵀS_ℓ)

    (∂f/∂W_ℓ = S_ℓX_{ℓ−1}ᵀ per input). ``activation``: an :class:`~rmtnet.spectra.activations.Activation` (φ and φ′).
    ``return_parts``: also the L + 1 Grams X_ℓᵀX_ℓ.

    Parameters
    ----------
    X : ndarray
        Inputs as columns, (d₀, n) or (S, d₀, n).
    weights : list of ndarray
        W₁, …, W_L.
    readout : ndarray
        w, (d_L, 1).
    activation : Activation
        φ and φ′.
    return_parts : bool, default False
        Also return the Grams.

    Returns
    -------
    ndarray or (ndarray, list of ndarray)
        K, (n, n) (with the batch axis if any).

    Examples
    --------
    One linear layer, f(x) = wᵀWx/√d₁: K(x, y) = xᵀWᵀWy/d₁ + ‖w‖² xᵀy/d₁, written out by hand:

    >>> from rmtnet.spectra import activations
    >>> rng = np.random.default_rng(0)
    >>> X, W, w = rng.standard_normal((3, 2)), rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
    >>> K = ntk_gram(X, [W], w, activations.activation("linear"))
    >>> print(np.allclose(K, X.T @ W.T @ W @ X / 4 + (w.T @ w) * (X.T @ X) / 4))
    True
    """
    return_parts = boolean("return_parts", return_parts)
    xp = B.module_of(X)
    feats, pre = [X], []
    for w in weights:
        h = w @ feats[-1]
        pre.append(h)
        feats.append(activation.phi(h) / w.shape[-2] ** 0.5)
    grams = [xp.swapaxes(f, -1, -2) @ f for f in feats]
    K = grams[-1].copy()
    s = readout * activation.dphi(pre[-1]) / weights[-1].shape[-2] ** 0.5            # S_L (d_L × n)
    for ell in range(len(pre), 0, -1):
        K = K + grams[ell - 1] * (xp.swapaxes(s, -1, -2) @ s)
        if ell > 1:
            w = weights[ell - 1]
            s = activation.dphi(pre[ell - 2]) * (xp.swapaxes(w, -1, -2) @ s) / w.shape[-1] ** 0.5
    return (K, grams) if return_parts else K


def _ntk_widths(net, width, n_data, n_samples, backend):
    """The feature widths of :func:`sample_ntk`, checked by :func:`_fits` to hold every layer's weights, the features
    forward and backward, and two Grams."""
    widths = _feature_widths(net, width)
    weights_size = sum(a * b for a, b in zip(widths[:-1], widths[1:]))
    features = 2 * n_data * sum(widths)
    _fits("n_data" if n_data ** 2 + features > weights_size and n_data > widths[0] else
          ("net" if width is None else "width"), 8.0 * n_samples * (weights_size + features + 2 * n_data ** 2),
          f"n_samples = {n_samples} networks' weights, features and NTK Gram ({n_data}×{n_data})", backend)
    return widths


def sample_ntk(net, n_data, X=None, width=None, n_samples=1, seed=None, backend=None, readout="gaussian",
               return_parts=False, progress=True):
    """NTK Gram matrices (n_samples × n_data × n_data, on the backend) of random networks in Fan & Wang's setting
    (:func:`rmtnet.spectra.ntk.ntk_law`): :func:`ntk_gram` with W_ℓ iid N(0, 1) of the net's hidden widths
    (``net.scaled_widths(width)[:-1]``: the depth-L description has L − 1 hidden layers and its read-out W_L, one
    row of which is w ∈ ℝ^{d_{L−1}}), its activation normalised
    (:func:`~rmtnet.spectra.meanfield.normalised_activation`).

    X: the inputs as columns (d₀ × n_data, of norm ≈ 1), default iid N(0, 1/d₀) entries drawn per network.
    ``readout``: ``"gaussian"`` draws w iid N(0, 1) (the model); ``"sphere"`` draws w uniformly on the sphere
    ‖w‖² = d_L. The Gaussian read-out's ‖w‖²/d_L fluctuates by O(d_L^{−1/2}) and scales every backpropagated factor,
    moving each draw's whole spectrum; the sphere removes that part (the limit law is the same). A smaller
    fluctuation of the same kind remains one layer down (‖W_Lᵀw‖²/(d_{L−1}‖w‖²), about √(2/d_{L−1}) from 1): compare
    pooled draws with the law, and moments by their spread over draws.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        Fan & Wang's network: Gaussian weights, σ_w = 1, σ_b = 0.
    n_data : int
        n.
    X : ndarray, optional
        (d₀, n_data), shared by the draws.
    width : int, optional
        d₀ (the other widths scaled with it).
    n_samples : int, default 1
        Independent networks.
    seed : int or Generator, optional
        Anything :func:`rmtnet.backend.rng` accepts.
    backend : str, optional
        "numpy" or "cupy".
    readout : {"gaussian", "sphere"}, default "gaussian"
        The read-out's law.
    return_parts : bool, default False
        Also the Grams of :func:`ntk_gram`.
    progress : bool, default True
        A bar over the two steps, drawing the weights (all samples at once) and the Gram, on a terminal
        (:func:`rmtnet._progress.bar`; it changes no number).

    Returns
    -------
    ndarray or (ndarray, list of ndarray)
        Shape (n_samples, n_data, n_data).

    Examples
    --------
    >>> from rmtnet.spectra import network
    >>> net = network.mlp(2, widths=[200, 200, 200], activation="tanh", sigma_w=1.0)
    >>> K = sample_ntk(net, 50, n_samples=2, seed=0)
    >>> print(K.shape, np.allclose(K, np.swapaxes(K, -1, -2)))
    (2, 50, 50) True
    """
    net = check_network("net", net)
    if net.weights != "gaussian" or net.sigma_w != 1.0 or net.sigma_b != 0.0:
        raise ValueError(f"sample_ntk draws Fan & Wang's network: net must have weights='gaussian', sigma_w=1, "
                         f"sigma_b=0, got {net.weights!r}, {net.sigma_w}, {net.sigma_b}")
    positive_integers(n_data=n_data, n_samples=n_samples)
    one_of("readout", readout, READOUTS)
    progress, return_parts = check_progress(progress), boolean("return_parts", return_parts)
    xp, rng = B.native(backend), B.rng(seed, backend)
    widths = _ntk_widths(net, width, n_data, n_samples, backend)
    if X is None:
        x = rng.standard_normal((n_samples, widths[0], n_data), dtype="float64") / widths[0] ** 0.5
    else:
        X = finite_array("X", X, "float64")
        if X.ndim != 2 or tuple(X.shape) != (widths[0], n_data):
            raise ValueError(f"X must have shape (d0, n_data) = ({widths[0]}, {n_data}) (inputs as columns), got "
                             f"{tuple(X.shape)}")
        x = xp.broadcast_to(xp.asarray(X), (n_samples,) + tuple(X.shape))
    with bar(total=2, progress=progress, desc="NTK samples", unit="step") as steps:
        weights = [rng.standard_normal((n_samples, n_out, n_in), dtype="float64")
                   for n_in, n_out in zip(widths[:-1], widths[1:])]
        v = rng.standard_normal((n_samples, widths[-1], 1), dtype="float64")
        if readout == "sphere":
            v = v * (widths[-1] / xp.sum(v * v, axis=1, keepdims=True)) ** 0.5
        steps.update()                                              # the weights drawn
        out = ntk_gram(x, weights, v, normalised_activation(net.activation), return_parts)
        steps.update()                                              # the Gram
    _check_finite_ntk(out[0] if return_parts else out, x, xp)
    return out


def _check_finite_ntk(K, x, xp):
    """OverflowError when the NTK Gram K overflowed float64 (inputs x far from norm 1)."""
    if not bool(xp.all(xp.isfinite(K))):
        raise OverflowError("the NTK Gram matrix overflows float64: X's entries are too large (max |X| = "
                            f"{float(xp.max(xp.abs(x))):.3g}; inputs of norm ≈ 1 are the model's)")


def sample_ntk_eigs(net, n_data, X=None, width=None, n_samples=1, seed=None, backend=None, readout="gaussian",
                    progress=True):
    """Eigenvalues of :func:`sample_ntk`, all draws pooled: a draw of :func:`rmtnet.spectra.ntk.ntk_law`.

    Parameters
    ----------
    net, n_data, X, width, n_samples, seed, backend, readout, progress
        As :func:`sample_ntk`.

    Returns
    -------
    ndarray
        Shape (n_samples·n_data,), on the backend.

    Examples
    --------
    >>> from rmtnet.spectra import network
    >>> net = network.mlp(2, widths=[200, 200, 200], activation="tanh", sigma_w=1.0)
    >>> e = sample_ntk_eigs(net, 50, n_samples=2, seed=0)
    >>> print(e.shape, bool(e.min() > 0))
    (100,) True
    """
    K = sample_ntk(net, n_data, X, width, n_samples, seed, backend, readout, progress=progress)
    xp = B.native(backend)
    return xp.linalg.eigvalsh(K).ravel()


# --------------------------------------------------------------------------------------------------------------
# The NNGP kernel of wide random networks (the Monte Carlo of rmtnet.spectra.kernels.nngp_kernel)

SAMPLERS = ("weights", "marginal")


def _count(name, v):
    return integer_at_least(name, v, 1)


def _nngp_batch(sampler, widths, nb, S, max_bytes, width=None, backend=None):
    """How many of the S networks :func:`sample_nngp_kernel` draws at once within ``max_bytes`` (at least one, which
    must fit in memory: :func:`_fits` naming ``width``, or ``net`` when it is None)."""
    if sampler == "weights":
        per_sample = 3 * 8 * max(a * b for a, b in zip(widths[:-1], widths[1:]))
    else:
        per_sample = 6 * 8 * nb * max(widths)
    batch = int(max(1, min(S, max_bytes // per_sample)))
    _fits("net" if width is None else "width", batch * per_sample, f"a batch of {batch} networks", backend)
    return batch


def sample_nngp_kernel(net, X, width=None, n_samples=1, seed=None, backend=None, sampler="weights",
                       return_all=False, return_samples=False, max_bytes=2 ** 28, progress=True):
    """Monte Carlo of the NNGP kernel: draw random networks, push the rows of X through them and return the empirical
    pre-activation Gram h_L h_Lᵀ/n_L (B × B, host NumPy, float64) averaged over ``n_samples`` networks.

    Widths: the input width is n₀ = X.shape[1]; the layer widths n₁ … n_L are ``net.scaled_widths(width)[1:]``
    (``width`` for a square net; the net's own widths when ``width`` is None). Weights W_ℓ ∈ ℝ^{n_ℓ×n_{ℓ-1}} are
    Gaussian with entries N(0, σ_w²/n_{ℓ-1}) or, for ``net.weights == "orthogonal"``, σ_w times a Haar orthogonal
    matrix (a scaled Haar partial isometry where n_ℓ ≠ n_{ℓ-1}, e.g. the input layer;
    :func:`rmtnet.spectra.sampling.montecarlo.layer_weights`); biases N(0, σ_b²), shared by all inputs.

    sampler: ``"weights"`` materialises every W_ℓ (cost O(n²) per layer, batched over samples within ``max_bytes``).
    ``"marginal"`` (Gaussian weights only) draws the same joint law of (h₁, …, h_L) on the B inputs without forming
    W_ℓ: given x_{ℓ-1} (B × n_{ℓ-1}), the columns of x_{ℓ-1}W_ℓᵀ are iid N(0, σ_w² x_{ℓ-1}x_{ℓ-1}ᵀ/n_{ℓ-1}), drawn as
    M Z with M Mᵀ = x_{ℓ-1}x_{ℓ-1}ᵀ (eigendecomposition of the B × B Gram) and Z iid N(0, σ_w²/n_{ℓ-1}) — cost
    O(n B²) per layer instead of O(n²), so hundreds of wide networks are cheap (tight Monte Carlo error bars).

    ``return_all``: the list of the L per-layer Grams h_ℓ h_ℓᵀ/n_ℓ. ``return_samples``: per-sample Grams (leading
    axis of length n_samples) instead of their mean. Runs on NumPy or CuPy (``backend``), in float64. ``progress``: a
    bar over the networks drawn, on a terminal (:func:`rmtnet._progress.bar`; it changes no number).

    Parameters
    ----------
    net, X : rmtnet.spectra.network.MLP, array_like
        The description and the inputs as rows (B, n₀); the other arguments as above.

    Returns
    -------
    ndarray (B × B), or a list of them: one per layer (``return_all``), one per sample (``return_samples``)

    Examples
    --------
    >>> from rmtnet.spectra.network import mlp
    >>> net, X = mlp(2, 2, weights="orthogonal", sigma_w=1.5, activation="linear", q0=1.0), np.tril(np.ones((2, 2)))
    >>> np.round(sample_nngp_kernel(net, X, seed=0), 6).tolist()    # square Haar layers keep x·y: σ_w⁴XXᵀ/n₀ exactly
    [[2.53125, 2.53125], [2.53125, 5.0625]]
    """
    net = check_network("net", net)
    X = input_rows("X", X)
    return_all, return_samples = boolean("return_all", return_all), boolean("return_samples", return_samples)
    S = _count("n_samples", n_samples)
    progress = check_progress(progress)
    one_of("sampler", sampler, SAMPLERS)
    if sampler == "marginal" and net.weights != "gaussian":
        raise ValueError("sampler='marginal' needs net.weights == 'gaussian'; use sampler='weights'")
    if width is not None:
        width = _count("width", width)
    widths = (X.shape[1],) + tuple(net.scaled_widths(width)[1:])
    xp = B.native(backend)
    rng = B.rng(seed, backend)
    phi = net.activation.phi
    L, nb = net.depth, X.shape[0]
    x0, batch = xp.asarray(X, dtype=xp.float64), _nngp_batch(sampler, widths, nb, S, max_bytes, width, backend)
    grams = [[] for _ in range(L)]
    networks = bar(total=S, progress=progress, desc="NNGP samples", unit="net")
    for start in range(0, S, batch):
        s = min(batch, S - start)
        x = xp.broadcast_to(x0, (s,) + x0.shape)                          # (s, B, n_{ℓ-1})
        for ell, (n_in, n_out) in enumerate(zip(widths[:-1], widths[1:]), start=1):
            if sampler == "weights":
                w = layer_weights(net.weights, n_out, n_in, net.sigma_w, rng, backend, batch=s)
                h = x @ xp.swapaxes(w, -1, -2)                            # (s, B, n_out) = x Wᵀ
                del w
            else:
                lam, u = xp.linalg.eigh(x @ xp.swapaxes(x, -1, -2))      # x xᵀ = U Λ Uᵀ (s, B, B)
                m = u * xp.sqrt(xp.maximum(lam, 0.0))[..., None, :]       # M Mᵀ = x xᵀ
                z = rng.standard_normal((s, nb, n_out), dtype="float64") * (net.sigma_w / n_in ** 0.5)
                h = m @ z                                                 # (s, B, n_out), law of x Wᵀ
            if net.sigma_b > 0:
                h = h + net.sigma_b * rng.standard_normal((s, 1, n_out), dtype="float64")
            if return_all or ell == L:
                grams[ell - 1].append(B.to_numpy(h @ xp.swapaxes(h, -1, -2)) / n_out)
            if ell < L:
                x = phi(h)
        networks.update(s)
    networks.close()
    out = [np.concatenate(g, axis=0) for g in grams if g]
    if not return_samples:
        out = [g.mean(axis=0) for g in out]
    return out if return_all else out[-1]
