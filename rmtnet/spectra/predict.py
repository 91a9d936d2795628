"""Prediction with infinite-width kernels: Gaussian-process regression with the NNGP kernel, and the outputs of a
network trained by gradient descent on the squared loss, in the kernel regime, with any kernel (the infinite-width
NTK of :func:`~rmtnet.spectra.kernels.ntk_kernel` or the empirical NTK of a finite network,
:func:`rmtnet.nets.probes.empirical_ntk`).

Conventions. GP regression: posterior mean K(x*,X)(K(X,X) + σ²I)⁻¹Y and covariance K(x*,x*) −
K(x*,X)(K(X,X) + σ²I)⁻¹K(X,x*) (Rasmussen & Williams, "Gaussian Processes for Machine Learning", MIT Press 2006,
eqs. 2.25–2.26). Gradient descent: the loss is L = (1/2N) Σ (f(x_i) − y_i)², N = y_train.size (½ times the mean of
the squared errors), trained at learning rate η; in the kernel regime (the network linearised about its
initialisation, exact at infinite width: Jacot, Gabriel & Hongler, NeurIPS 2018; Lee et al., "Wide neural networks
of any depth evolve as linear models under gradient descent", NeurIPS 2019) the outputs obey
df/dt = −(η/N) Θ (f − y) under gradient flow, and f ← f − (η/N) Θ (f − y) per step of gradient descent. These are
neural-tangents' conventions (``neural_tangents.predict.gradient_descent_mse``), whose name and call shape
:func:`gradient_descent_mse` takes.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg

from .. import backend as B
from rmtnet._validation import boolean, finite_array, input_rows, integer_at_least, one_of, real_scalar
from .network import check_network
from .stability import learning_rate_border
from .kernels import METHODS, PARAMETERIZATIONS, nngp_blocks, ntk_kernel

__all__ = ["gp_posterior", "nngp_regression", "gradient_descent_mse", "ensemble_moments", "ntk_predict"]


# ------------------------------------------------------------------------------------------------------------------
# GP regression

def gp_posterior(K_train, K_cross, K_test, Y, noise=0.0):
    """GP posterior at test points (Rasmussen & Williams 2006, eqs. 2.25–2.26):

        mean = K(x*, X) (K(X, X) + noise·I)⁻¹ Y,
        var  = K(x*, x*) − K(x*, X) (K(X, X) + noise·I)⁻¹ K(X, x*).

    K_train: K(X, X), N × N symmetric positive definite. K_cross: K(x*, X), T × N. K_test: K(x*, x*), either its
    diagonal (T,) — then ``var`` is the vector of posterior variances, clipped at 0 against rounding — or the full
    T × T matrix — then ``var`` is the posterior covariance. Y: (N,) or (N, k). noise ≥ 0: the observation-noise
    variance added to the diagonal of K(X, X) (also a jitter for ill-conditioned kernels). Cholesky solves
    (scipy.linalg.cho_factor); a K(X, X) + noise·I that is not numerically positive definite raises ValueError.
    Returns (mean, var).

    Parameters
    ----------
    K_train : array_like
        K(X, X), N × N.
    K_cross : array_like
        K(x*, X), T × N.
    K_test : array_like
        K(x*, x*): its diagonal (T,) or the full T × T matrix.
    Y : array_like
        Observations, (N,) or (N, k).
    noise : float
        Observation-noise variance (≥ 0).

    Returns
    -------
    mean : ndarray
        (T,) or (T, k).
    var : ndarray
        Posterior variances (T,) or covariance (T, T), as ``K_test``.

    Examples
    --------
    By hand: K⁻¹(1, 1)ᵀ = (1/3, 1/3)ᵀ for K = [[2, 1], [1, 2]], so mean = 2/3 and var = 2 − 2/3 = 4/3.

    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> mean, var = gp_posterior(K, np.array([[1.0, 1.0]]), np.array([2.0]), np.array([1.0, 1.0]))
    >>> print(np.round(mean, 6).tolist(), np.round(var, 6).tolist())
    [0.666667] [1.333333]
    """
    noise = real_scalar("noise", noise, lo=0.0)
    Kt = finite_array("K_train", K_train)
    if Kt.ndim != 2 or Kt.shape[0] != Kt.shape[1] or Kt.shape[0] < 1:
        raise ValueError(f"K_train must be a square N×N matrix, got shape {Kt.shape}")
    n = Kt.shape[0]
    scale = max(float(np.max(np.abs(Kt))), 1e-300)
    if np.max(np.abs(Kt - Kt.T)) > 1e-10 * scale:
        raise ValueError("K_train must be symmetric")
    Kx = finite_array("K_cross", K_cross)
    if Kx.ndim != 2 or Kx.shape[1] != n:
        raise ValueError(f"K_cross must have shape (T, N) = (T, {n}) (rows: test points), got {Kx.shape}")
    t = Kx.shape[0]
    Ks = finite_array("K_test", K_test)
    if Ks.shape not in ((t,), (t, t)):
        raise ValueError(f"K_test must be the diagonal ({t},) or the full ({t}, {t}) test kernel, got {Ks.shape}")
    Y = finite_array("Y", Y)
    if Y.ndim not in (1, 2) or Y.shape[0] != n:
        raise ValueError(f"Y must have shape ({n},) or ({n}, k) to match K_train, got {Y.shape}")
    A = 0.5 * (Kt + Kt.T) + noise * np.eye(n)
    try:
        c, lower = linalg.cho_factor(A, lower=True, check_finite=False)
    except linalg.LinAlgError as exc:
        raise ValueError(f"K_train + noise·I is not positive definite ({exc}); use distinct inputs or noise > 0") \
            from None
    piv = np.diag(c) ** 2
    if piv.min() <= 10 * n * np.finfo(float).eps * np.max(np.diag(A)):
        raise ValueError(f"K_train + noise·I is numerically singular (smallest Cholesky pivot² {piv.min():.3g}); "
                         "use distinct inputs or noise > 0")
    mean = Kx @ linalg.cho_solve((c, lower), Y, check_finite=False)
    V = linalg.solve_triangular(c, Kx.T, lower=True, check_finite=False)          # L⁻¹ K(X, x*)
    if Ks.ndim == 1:
        var = np.maximum(Ks - np.sum(V * V, axis=0), 0.0)
    else:
        var = Ks - V.T @ V
        var = 0.5 * (var + var.T)
    return mean, var


def nngp_regression(net, X_train, Y_train, X_test, noise=0.0, method="auto", full_cov=False):
    """Bayesian prediction with the NNGP prior of ``net`` (Lee et al. 2018, §2.3): the :func:`gp_posterior` of
    Y_train observed at X_train with noise variance ``noise``, at the rows of X_test. Only the kernel entries needed
    are propagated (train × train, test × train and the test diagonal, or test × test when ``full_cov``:
    :func:`~rmtnet.spectra.kernels.nngp_blocks`). Returns (mean, var) with var the posterior variances (T,) or, with
    ``full_cov``, the T × T covariance.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description.
    X_train, Y_train, X_test : array_like
        Train inputs (N, n₀) and targets (N,) or (N, k); test inputs (T, n₀).
    noise : float
        Observation-noise variance.
    method, full_cov
        As in :func:`~rmtnet.spectra.kernels.nngp_blocks`.

    Returns
    -------
    mean, var : ndarray
        Posterior mean and variances (or covariance).

    Examples
    --------
    A linear depth-1 net has K = XXᵀ/n₀: noiseless GP regression is least squares, y = x·(1, 2), so at x* = (1, 1)
    the mean is 3 and, x* lying in the span of the train inputs, the variance 0.

    >>> from rmtnet.spectra.network import mlp
    >>> net = mlp(1, widths=(2, 1), activation="linear", q0=1.0)
    >>> mean, var = nngp_regression(net, np.eye(2), np.array([1.0, 2.0]), np.array([[1.0, 1.0]]))
    >>> print(np.round(mean, 6).tolist(), (np.round(var, 6) + 0.0).tolist())
    [3.0] [0.0]
    """
    net = check_network("net", net)
    Xa = input_rows("X_train", X_train)
    Xt = input_rows("X_test", X_test)
    if Xt.shape[1] != Xa.shape[1]:
        raise ValueError(f"X_test must have as many columns as X_train ({Xa.shape[1]}), got {Xt.shape[1]}")
    Y = finite_array("Y_train", Y_train)
    if Y.ndim not in (1, 2) or Y.shape[0] != Xa.shape[0]:
        raise ValueError(f"Y_train must have shape ({Xa.shape[0]},) or ({Xa.shape[0]}, k) (a row for each row of "
                         f"X_train), got {Y.shape}")
    noise = real_scalar("noise", noise, lo=0.0)
    Ktr, Kx, Ks = nngp_blocks(net, Xa, Xt, method, full_cov)
    return gp_posterior(Ktr, Kx, Ks, Y, noise)


# ------------------------------------------------------------------------------------------------------------------
# Gradient descent on the squared loss, in the kernel regime

def _spectral_factor(lam, tau, steps, eta_n):
    """(1 − e^{−λτ})/λ (gradient flow to time τ = ηt/N) or (1 − (1 − λη/N)^k)/λ (k steps of gradient descent), with
    their limits τ and kη/N at λ = 0; λ = 0 without a time (t = ∞) gives 1/λ."""
    if steps is not None:
        r = 1.0 - lam * eta_n
        small = np.abs(lam * eta_n) < 1e-8
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(small, steps * eta_n * (1 - 0.5 * (steps - 1) * lam * eta_n), (1.0 - r ** steps) / lam)
        return f
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(lam * tau) < 1e-12, tau * (1 - 0.5 * lam * tau), -np.expm1(-lam * tau) / lam)


def _times(t, steps):
    """t as a float array (gradient flow: t ≥ 0) or an int array (steps of gradient descent: t ≥ 0 integers)."""
    arr = np.asarray(t)
    if steps:
        flat = [integer_at_least("t", v.item() if isinstance(v, np.generic) else v, lo=0) for v in arr.ravel()]
        return np.asarray(flat, dtype=np.int64).reshape(arr.shape)
    flat = [real_scalar("t", v.item() if isinstance(v, np.generic) else v, lo=0.0) for v in arr.ravel()]
    return np.asarray(flat, dtype=float).reshape(arr.shape)


class _Eigenbasis:
    """A = K + λI once diagonalised, and the functions of A that the predictor applies (cached eigendecomposition)."""

    def __init__(self, A, eta_n):
        self.A, self.eta_n, self._eig = A, eta_n, None

    @property
    def eig(self):
        if self._eig is None:
            self._eig = linalg.eigh(self.A)
        return self._eig

    def clipped(self):
        """The eigenvalues (a negative one beyond rounding refused), clipped at 0, and the eigenvectors."""
        lam, V = self.eig
        if lam[0] < -1e-10 * lam[-1]:
            raise ValueError(f"k_train_train + diag_reg·I has a negative eigenvalue {lam[0]:.3g}")
        return np.maximum(lam, 0.0), V

    def transfer(self, t, steps):
        """A⁻¹(I − e^{−τA}) (τ = ηt/N), A⁻¹(I − (I − ηA/N)^k) (k = t steps), or A⁻¹ (t = None): (…, N, N)."""
        if t is None:
            lam, V = self.eig
            n = lam.size
            if lam[0] <= 10 * n * np.finfo(float).eps * max(lam[-1], 1e-300):
                raise ValueError(f"k_train_train + diag_reg·I is not numerically positive definite (smallest "
                                 f"eigenvalue {lam[0]:.3g}); use distinct inputs or diag_reg > 0")
            return (V * (1.0 / lam)) @ V.T
        lam, V = self.clipped()
        t = np.asarray(t)[..., None]
        f = _spectral_factor(lam, None, t, self.eta_n) if steps else _spectral_factor(lam, t * self.eta_n, None,
                                                                                       self.eta_n)
        return (V * f[..., None, :]) @ V.T

    def decay(self, t, steps):
        """e^{−τA} or (I − ηA/N)^k: the factor by which the train residual f − y shrinks, (…, N, N)."""
        lam, V = self.clipped()
        t = np.asarray(t)[..., None]
        g = (1.0 - lam * self.eta_n) ** t if steps else np.exp(-lam * (t * self.eta_n))
        return (V * g[..., None, :]) @ V.T


def _check_stable(basis, eta, Y):
    """Discrete gradient descent f ← f − (η/N) A (f − y) contracts iff |1 − ηλ/N| ≤ 1 for every eigenvalue λ of A, i.e.
    η ≤ 2N/λ_max(A) (:func:`rmtnet.spectra.stability.learning_rate_border` with the loss ½·mean over N = y.size):
    above it the iterates grow like |1 − ηλ_max/N|^k and soon overflow, so ValueError naming learning_rate and the
    critical value."""
    lam_max = float(basis.eig[0][-1])
    if lam_max <= 0:
        return
    n_rows = Y.shape[0]
    border = learning_rate_border(lam_max, n_rows, Y.size // n_rows, "mse")
    if eta > border:
        raise ValueError(f"learning_rate must be at most 2N/λ_max = 2·{Y.size}/{lam_max:.6g} = {border:.6g} for "
                         f"discrete gradient descent (steps) on the loss ½·mean over N = {Y.size} targets, λ_max the "
                         f"largest eigenvalue of the train kernel (+ ridge); above it the iterates diverge as "
                         f"|1 − η·λ_max/N|^k = {abs(1 - eta * lam_max / Y.size):.4g}^k; got {eta!r}. Give a "
                         f"learning_rate ≤ {border:.6g}, or gradient flow (continuous time t) instead")


def _train_kernel(K, Y):
    K = B.to_numpy(finite_array("k_train_train", K))
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 1:
        raise ValueError(f"k_train_train must be a square N × N matrix, got shape {K.shape}")
    scale = max(float(np.max(np.abs(K))), 1e-300)
    if np.max(np.abs(K - K.T)) > 1e-10 * scale:
        raise ValueError("k_train_train must be symmetric")
    Y = B.to_numpy(finite_array("y_train", Y))
    if Y.ndim not in (1, 2) or Y.shape[0] != K.shape[0]:
        raise ValueError(f"y_train must have shape ({K.shape[0]},) or ({K.shape[0]}, k) (a row for each row of "
                         f"k_train_train), got {Y.shape}")
    return K, Y


class _MSEPredictor:
    """``predict(t, fx_train_0, fx_test_0, k_test_train)`` of :func:`gradient_descent_mse`, over one cached
    eigenbasis of A = Θ + λI."""

    def __init__(self, basis, Y, steps):
        self.basis, self.Y, self.steps = basis, Y, steps

    def transfer(self, t=None):
        """A⁻¹(I − e^{−τA}) (or its discrete analogue, or A⁻¹ at t = None), N_train × N_train."""
        return self.basis.transfer(None if t is None else _times(t, self.steps), self.steps)

    def __call__(self, t=None, fx_train_0=0.0, fx_test_0=None, k_test_train=None):
        Y, n, basis, steps = self.Y, self.Y.shape[0], self.basis, self.steps
        times = None if t is None else _times(t, steps)
        f0 = np.broadcast_to(B.to_numpy(finite_array("fx_train_0", fx_train_0)), Y.shape)
        residual = (Y - f0).reshape(n, -1)                     # columns: the outputs sharing the kernel
        if times is None:
            fx_train = np.array(Y, dtype=float)
        else:
            fx_train = (Y.reshape(n, -1) - basis.decay(times, steps) @ residual).reshape(times.shape + Y.shape)
        if k_test_train is None:
            return fx_train
        Kx = B.to_numpy(finite_array("k_test_train", k_test_train))
        if Kx.ndim != 2 or Kx.shape[1] != n:
            raise ValueError(f"k_test_train must have shape (N_test, {n}) (rows: test points), got {Kx.shape}")
        ft0 = 0.0 if fx_test_0 is None else B.to_numpy(finite_array("fx_test_0", fx_test_0))
        shape = (Kx.shape[0],) + Y.shape[1:]
        step = (Kx @ (basis.transfer(times, steps) @ residual)).reshape((() if times is None else times.shape) + shape)
        return fx_train, np.broadcast_to(ft0, shape) + step


def gradient_descent_mse(k_train_train, y_train, learning_rate=1.0, diag_reg=0.0, *, diag_reg_absolute_scale=False,
                         steps=False):
    """The outputs of a network trained by gradient descent on the squared loss in the kernel regime, at any time.

    With Θ = ``k_train_train`` (+ the ridge below), A = Θ + λI, N = y_train.size and the loss (1/2N) Σ (f − y)²,
    gradient flow at learning rate η gives, after time t (τ = ηt/N),

        f_train(t) = y + e^{−τA}(f_train(0) − y),
        f_test(t)  = f_test(0) + Θ(X*, X) A⁻¹(I − e^{−τA})(y − f_train(0)),

    and k steps of full-batch gradient descent (``steps=True``, t = k) the same with e^{−τA} → (I − ηA/N)^k (stable
    for η ≤ 2N/λ_max(A); a larger ``learning_rate`` raises ValueError stating 2N/λ_max(A), since the iterates
    diverge). t = None is t = ∞: f_train = y and f_test = f_test(0) + Θ(X*, X)A⁻¹(y − f_train(0)), kernel
    regression (Jacot, Gabriel & Hongler, NeurIPS 2018; Lee et al., NeurIPS 2019, eqs. (9)–(11)).

    Same as neural-tangents' ``predict.gradient_descent_mse`` (Novak et al., ICLR 2020): the name and arguments,
    the loss ½·mean (time in units of η, normalised by y_train.size), ``diag_reg`` (λ = diag_reg·tr Θ/N_train, or
    λ = diag_reg with ``diag_reg_absolute_scale``), t = None as ∞ with f_train = y, an array of times giving a
    leading time axis, and the returned ``predict(t, fx_train_0, fx_test_0, k_test_train)``. Different: one
    output kernel (Θ is N_train × N_train, shared by y_train's columns, neural-tangents' default
    ``trace_axes=(-1,)``); test outputs are returned whenever ``k_test_train`` is given (``fx_test_0=None`` reads as
    0), not when ``fx_test_0`` is; ``steps=True`` (discrete gradient descent) is rmtnet's own; the eigendecomposition
    serves t = None too (neural-tangents uses a Cholesky factor there); NumPy float64 on the host.

    Parameters
    ----------
    k_train_train : array_like
        Θ(X, X), N_train × N_train, symmetric: any kernel (infinite-width NTK or NNGP, or an empirical NTK).
    y_train : array_like
        Targets, (N_train,) or (N_train, k).
    learning_rate : float
        η > 0.
    diag_reg : float
        Ridge ≥ 0 added to Θ's diagonal (see above).
    diag_reg_absolute_scale : bool
        Whether ``diag_reg`` is λ itself rather than relative to the mean diagonal of Θ.
    steps : bool
        Whether t counts steps of gradient descent (integers) instead of continuous time.

    Returns
    -------
    predict : callable
        ``predict(t=None, fx_train_0=0.0, fx_test_0=None, k_test_train=None)`` → f_train(t), or (f_train(t),
        f_test(t)) when ``k_test_train`` (N_test × N_train) is given; t a scalar or an array (its shape leads the
        outputs'). ``predict.transfer(t)`` is the N_train × N_train matrix A⁻¹(I − e^{−τA}) (or its discrete
        analogue, or A⁻¹ at t = None) that carries y − f_train(0) to the test outputs through ``k_test_train``. The
        eigendecomposition of A is computed at the first call and kept.

    Examples
    --------
    >>> import numpy as np
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> predict = gradient_descent_mse(K, np.array([1.0, -1.0]), learning_rate=1.0)
    >>> predict()                                          # t = ∞: the train targets
    array([ 1., -1.])
    >>> np.round(predict(t=[0.0, 2.0]), 4)                 # from f = 0: residual shrinks by e^{−(ηt/N)·1}
    array([[ 0.    , -0.    ],
           [ 0.6321, -0.6321]])
    >>> _, f_test = predict(None, 0.0, None, k_test_train=np.array([[1.0, 1.0]]))
    >>> f_test                                             # Θ*Θ⁻¹y
    array([0.])
    """
    K, Y = _train_kernel(k_train_train, y_train)
    diag_reg_absolute_scale = boolean("diag_reg_absolute_scale", diag_reg_absolute_scale)
    steps = boolean("steps", steps)
    eta = real_scalar("learning_rate", learning_rate, lo=0.0, lo_open=True)
    reg = real_scalar("diag_reg", diag_reg, lo=0.0)
    steps = bool(steps)
    n = K.shape[0]
    lam_reg = reg if diag_reg_absolute_scale else reg * np.trace(K) / n
    A = K + lam_reg * np.eye(n)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"diag_reg = {diag_reg!r} makes k_train_train + λI overflow float64 (λ = {lam_reg!r}); "
                         f"give a smaller diag_reg")
    basis = _Eigenbasis(A, eta / Y.size)
    if steps:
        _check_stable(basis, eta, Y)
    return _MSEPredictor(basis, Y, steps)


def ensemble_moments(predict, k_test_train, nngp_train_train, nngp_test_train, nngp_test_test, t=None):
    """Mean and covariance at the test points of the infinite ensemble of wide networks trained by gradient descent on
    the squared loss, from kernel matrices (Lee et al., NeurIPS 2019, eq. (16)): with P = Θ*Θ⁻¹(I − e^{−τΘ}),

        mean = P Y,      cov = K** + P K Pᵀ − P K*ᵀ − K* Pᵀ,

    Θ the NTK and K the NNGP kernel; the ensemble is over initialisations, its mean starting at 0. ``predict`` is the
    :func:`gradient_descent_mse` of Θ(X, X) and Y (its learning rate, ridge and time convention apply), so one
    kernel computation and one eigendecomposition serve every time in ``t`` (a scalar, or an array that leads the
    outputs' shapes). :func:`ntk_predict` is this function on a network's kernels.

    Parameters
    ----------
    predict : callable
        :func:`gradient_descent_mse` ``(k_train_train = Θ(X, X), y_train = Y, …)``.
    k_test_train : array_like
        Θ(X*, X), N_test × N_train.
    nngp_train_train, nngp_test_train, nngp_test_test : array_like
        K(X, X), K(X*, X), K(X*, X*).
    t : float, int, array_like or None
        Time(s) in ``predict``'s units; None is t = ∞.

    Returns
    -------
    mean, cov : ndarray
        (…, N_test[, k]) and (…, N_test, N_test), with t's shape leading.

    Examples
    --------
    At t = 0 the ensemble is the prior: mean 0, covariance K(X*, X*).

    >>> import numpy as np
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> fit = gradient_descent_mse(K, np.array([1.0, -1.0]))
    >>> mean, cov = ensemble_moments(fit, K[:1], K, K[:1], K[:1, :1], t=[0.0, 1e9])
    >>> print(np.round(mean, 6).tolist(), np.round(cov[:, 0, 0], 6).tolist())
    [[0.0], [1.0]] [2.0, 0.0]
    """
    _, mean = predict(t, 0.0, None, k_test_train)
    P = np.asarray(k_test_train) @ predict.transfer(t)        # Θ*Θ⁻¹(I − e^{−τΘ}) or its discrete analogue
    PT = np.swapaxes(P, -1, -2)
    K_tr, K_x, K_te = (np.asarray(k) for k in (nngp_train_train, nngp_test_train, nngp_test_test))
    cov = K_te + P @ K_tr @ PT - P @ K_x.T - K_x @ PT
    return mean, 0.5 * (cov + np.swapaxes(cov, -1, -2))


def ntk_predict(net, X_train, Y_train, X_test, t=None, learning_rate=1.0, diag_reg=0.0, *, steps=None,
                diag_reg_absolute_scale=False, parameterization="ntk", method="auto"):
    """Mean and covariance, at the rows of X_test, of the infinite ensemble of infinitely wide networks ``net``
    trained on (X_train, Y_train) by gradient descent on the mean squared error (Lee et al., "Wide neural networks
    of any depth evolve as linear models under gradient descent", NeurIPS 2019, §2.3–2.4 and eq. (16)).

    Loss and time, as neural-tangents' ``predict.gradient_descent_mse_ensemble``: L = (1/2N) Σ (f(x_i) − y_i)² with
    N = Y_train.size, gradient flow dθ/dt = −η ∇L at ``learning_rate`` η, so the train outputs obey
    df/dt = −(η/N) Θ (f − Y). With τ = ηt/N, Θ = Θ(X, X) (+ the ridge below), Θ* = Θ(X*, X), K the NNGP kernel:

        mean = Θ* Θ⁻¹ (I − e^{−τΘ}) Y,
        cov  = K(X*, X*) + Θ* Θ⁻¹(I − e^{−τΘ}) K (I − e^{−τΘ})Θ⁻¹ Θ*ᵀ − [Θ* Θ⁻¹(I − e^{−τΘ}) K(X, X*) + transpose].

    ``t=None``: t = ∞, kernel regression, mean = Θ*Θ⁻¹Y (the NTK-GP of Lee et al. 2019; :func:`nngp_regression`
    is its Bayesian counterpart). ``steps=k`` instead of t: k steps of full-batch gradient descent at learning rate
    η, e^{−τΘ} → (I − ηΘ/N)^k (stable for η ≤ 2N/λ_max(Θ); above it, ValueError stating that critical value).
    The ensemble is over initialisations; its mean starts at 0 and its covariance at K(X*, X*).

    ``diag_reg`` ≥ 0 adds λI to Θ(X, X) before solving, λ = diag_reg·tr Θ/N_train (neural-tangents' default) or
    λ = diag_reg with ``diag_reg_absolute_scale=True``. ``parameterization``, ``method``: as in :func:`ntk_kernel`.
    Y_train (N_train,) or (N_train, k) (k outputs share the kernel). Returns (mean, cov): mean (T,) or (T, k), cov
    T × T (the same for every output); host NumPy, float64. The mean is :func:`gradient_descent_mse` of
    Θ(X, X) from f = 0, and the covariance uses the same cached eigendecomposition of Θ(X, X) + λI; a matrix that is
    not numerically positive definite at t = ∞ raises ValueError (use diag_reg > 0). To predict at many times, or
    with an empirical kernel, call :func:`gradient_descent_mse` directly.

    Parameters
    ----------
    net : rmtnet.spectra.network.MLP
        The network description.
    X_train, Y_train, X_test : array_like
        Train inputs (N, n₀) and targets; test inputs (T, n₀).
    t, learning_rate, diag_reg, steps, diag_reg_absolute_scale, parameterization, method
        As above.

    Returns
    -------
    mean, cov : ndarray
        (T,) or (T, k), and T × T.

    Examples
    --------
    Linear depth 1: Θ = Σ = XXᵀ/n₀, so at t = ∞ the mean is that of least squares, 3 (as :func:`nngp_regression`),
    and cov = K** + PKPᵀ − 2PK*ᵀ with P = Θ*Θ⁻¹ = (1, 1): 1 + 1 − 2 = 0.

    >>> from rmtnet.spectra.network import mlp
    >>> net = mlp(1, widths=(2, 1), activation="linear", q0=1.0)
    >>> mean, cov = ntk_predict(net, np.eye(2), np.array([1.0, 2.0]), np.array([[1.0, 1.0]]))
    >>> print(np.round(mean, 6).tolist(), (np.round(cov, 6) + 0.0).tolist())
    [3.0] [[0.0]]
    """
    diag_reg_absolute_scale = boolean("diag_reg_absolute_scale", diag_reg_absolute_scale)
    net = check_network("net", net)
    Xa = B.to_numpy(input_rows("X_train", X_train))
    Xt = B.to_numpy(input_rows("X_test", X_test))
    if Xt.shape[1] != Xa.shape[1]:
        raise ValueError(f"X_test must have as many columns as X_train ({Xa.shape[1]}), got {Xt.shape[1]}")
    Y = B.to_numpy(finite_array("Y_train", Y_train))
    if Y.ndim not in (1, 2) or Y.shape[0] != Xa.shape[0]:
        raise ValueError(f"Y_train must have shape ({Xa.shape[0]},) or ({Xa.shape[0]}, k) (a row for each row of "
                         f"X_train), got {Y.shape}")
    eta = real_scalar("learning_rate", learning_rate, lo=0.0, lo_open=True)
    reg = real_scalar("diag_reg", diag_reg, lo=0.0)
    if t is not None and steps is not None:
        raise ValueError("give either t (gradient flow) or steps (gradient descent), not both")
    if t is not None:
        t = real_scalar("t", t, lo=0.0)
    if steps is not None:
        steps = integer_at_least("steps", steps, lo=0)
    one_of("parameterization", parameterization, PARAMETERIZATIONS)
    one_of("method", method, METHODS)
    n = Xa.shape[0]
    Sig, Th = ntk_kernel(net, np.concatenate([Xa, Xt]), method=method, parameterization=parameterization,
                         return_all=True)[-1]
    Th_tr, Th_x = Th[:n, :n], Th[n:, :n]
    K_tr, K_x, K_te = Sig[:n, :n], Sig[n:, :n], Sig[n:, n:]
    predict = gradient_descent_mse(Th_tr, Y, eta, reg, diag_reg_absolute_scale=diag_reg_absolute_scale,
                                   steps=bool(steps))              # steps=0 is gradient flow to t = 0: any η
    return ensemble_moments(predict, Th_x, K_tr, K_x, K_te, steps if steps else (0.0 if steps == 0 else t))
