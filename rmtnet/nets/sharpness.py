"""Sharpness of the training loss, matrix-free: the top of the loss Hessian's spectrum, its trace, and the top of the
empirical NTK Gram over the training batch.

Conventions.
  * The loss is the one :func:`rmtnet.nets.train` minimises, given by the same ``loss`` argument: ``"mse"`` is
    L(θ) = ½·mean over the N samples and k outputs of (f − y)² (one-hot targets for class labels),
    ``"mean_squared"`` the mean without ½, ``"cross_entropy"`` the mean cross-entropy, or a callable
    ``(output, y) -> mean loss``. So λ_max(∇²L) is compared with the step size directly: full-batch gradient descent
    at learning rate η is linearly stable iff η < 2/λ_max(∇²L) (Cohen et al., "Gradient descent on neural networks
    typically occurs at the edge of stability", ICLR 2021, arXiv 2103.00065).
  * ∇²L acts on vectors by Hessian-vector products, reverse over reverse (``torch.func.vjp`` of ``torch.func.grad``,
    the graph of ∇L built once per call; Pearlmutter, Neural Computation 6:147, 1994; forward over reverse trips on
    ``torch.nn.functional.mse_loss`` in torch 2.x): one product costs a few backward passes and no P × P matrix is
    formed (P the number of trainable parameters). The top eigenvalues come from implicitly restarted Lanczos
    (:func:`rmtnet.spectra.sampling.lanczos.top_eigenvalues`), the trace from Hutchinson's estimator
    tr ∇²L = E zᵀ∇²L z over Rademacher z (Hutchinson, Commun. Stat. Simul. Comput. 19:433, 1990), with the standard
    error of the mean over the probes.
  * The empirical NTK Gram Θ = J Jᵀ (N k × N k, J = ∂f/∂θ over the batch, rows i·k + a as in
    :func:`rmtnet.nets.probes.empirical_ntk`) acts by a vector–Jacobian product followed by a Jacobian–vector product:
    Θv = J(Jᵀv). For ``"mse"`` the Gauss–Newton part of the Hessian is JᵀJ/(Nk), whose non-zero eigenvalues are those
    of Θ/(Nk): near a global minimum, and at initialisation of a wide net, λ_max(∇²L) ≈ λ_max(Θ)/(Nk).
  * Everything is computed in the model's dtype and returned in float64; the forward pass must be deterministic
    (``model.eval()`` first for dropout or BatchNorm; :func:`sharpness_probe` does that itself and restores the
    model's mode). A non-finite loss at θ raises :class:`rmtnet.nets.DivergenceError`. Parameters with
    ``requires_grad=False`` and buffers are held.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np
import torch
from scipy.sparse.linalg import ArpackError
from torch.func import functional_call, grad, jvp, vjp

from rmtnet._validation import boolean, integer_at_least, real_scalar, scalar
from rmtnet.nets._modules import check_model
from rmtnet.nets.data import Dataset
from rmtnet.nets.probes import batch_inputs, checked_forward, trainable_state
from rmtnet.nets.training import DivergenceError, apply_model, loss_function
from rmtnet.spectra.sampling.lanczos import top_eigenvalues

__all__ = ["hessian_top_eigenvalues", "hessian_trace", "ntk_top_eigenvalues", "HessianOperator", "TraceEstimate",
           "SharpnessProbe", "sharpness_probe"]


class TraceEstimate(NamedTuple):
    """A Hutchinson estimate of a trace: the mean of zᵀAz over ``n_probes`` Rademacher probes (``value``) and the
    standard error of that mean (``standard_error``: sample standard deviation / √n_probes), with ``n_probes``.

    Examples
    --------
    What :func:`hessian_trace` returns, a named tuple. For f(x) = Wx on X = diag(1, 2), ½·mean squared loss,
    ∇²L = diag(1, 4)/2 is diagonal, so every probe gives its trace 5/2 and the standard error is 0:

    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    >>> value, standard_error, n_probes = hessian_trace(lin, (x, y), n_probes=3)
    >>> isinstance(hessian_trace(lin, (x, y)), TraceEstimate), round(value, 10), round(standard_error, 10), n_probes
    (True, 2.5, 0.0, 3)
    """
    value: float
    standard_error: float
    n_probes: int


# ------------------------------------------------------------------------------------------------------------------
# The batch, the loss and the parameters as one flat vector

def _batch(model, data):
    """(inputs as a tuple on the model's device and dtype, targets, n_classes) from a Dataset (its training split) or
    a pair (x, y); integer y are class labels (as many classes as the model has outputs), floating y regression
    targets."""
    if isinstance(data, Dataset):
        x, y, n_classes = data.x_train, data.y_train, data.n_classes
    elif isinstance(data, (tuple, list)) and len(data) == 2:
        (x, y), n_classes = data, None
    else:
        raise ValueError(f"data must be an rmtnet.nets.data.Dataset or a pair (x, y), got {type(data).__name__}")
    xs, n = batch_inputs(model, x, "data's x")
    checked_forward(model, xs, "data's x")
    if not isinstance(y, torch.Tensor) or y.is_complex() or y.dtype == torch.bool or y.ndim < 1 or len(y) != n:
        raise ValueError(f"data's y must be a real tensor holding the {n} examples' targets along dimension 0, got "
                         f"{type(y).__name__} {tuple(getattr(y, 'shape', ()))}")
    if y.is_floating_point():
        if not bool(torch.isfinite(y).all()):
            raise ValueError("data's y must be finite (no NaN or inf)")
        y = y.to(xs[0].device, next(model.parameters()).dtype)
    elif n_classes is None:
        with torch.no_grad():
            n_classes = apply_model(model, xs if len(xs) > 1 else xs[0]).shape[-1]
        if y.ndim != 1 or int(y.min()) < 0 or int(y.max()) >= n_classes:
            raise ValueError(f"data's integer y must be class labels in [0, {n_classes}) (the model's outputs), got "
                             f"values in [{int(y.min())}, {int(y.max())}] of shape {tuple(y.shape)}")
    return xs, y.to(xs[0].device), n_classes


class HessianOperator:
    """The training-loss Hessian ∇²L(θ) at the model's trainable parameters θ as a matrix-free operator: ``hvp(V)``
    is ∇²L V for the columns of a P × b float64 array (P = ``dim``), and ``products`` counts the Hessian-vector
    products taken so far. What :func:`hessian_top_eigenvalues` and :func:`hessian_trace` use; give ``hvp`` to any
    eigensolver or trace estimator (and read ``products`` to count its cost).

    Parameters
    ----------
    model, data, loss
        As in :func:`hessian_top_eigenvalues`.

    Raises
    ------
    rmtnet.nets.DivergenceError
        When the loss at θ is not finite (the weights have diverged).

    Examples
    --------
    f(x) = Wx on X = diag(1, 2), ½·mean squared loss: ∇²L = XᵀX/N = diag(1, 4)/2.

    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    >>> H = HessianOperator(lin, (x, y))
    >>> print(H.dim, H.hvp(np.eye(2)).tolist(), H.products)
    2 [[0.5, 0.0], [0.0, 2.0]] 2
    """

    def __init__(self, model, data, loss="mse"):
        check_model(model)
        if not (callable(loss) or isinstance(loss, str)):
            raise ValueError(f"loss must be a str or a callable (output, y) -> scalar, got {loss!r:.60}")
        self.params, self.fixed = trainable_state(model)
        self.xs, self.y, n_classes = _batch(model, data)
        self.loss_fn = loss_function(loss, n_classes)
        self.model = model
        self.names = list(self.params)
        self.shapes = [self.params[k].shape for k in self.names]
        self.sizes = [self.params[k].numel() for k in self.names]
        self.dim = sum(self.sizes)
        first = self.params[self.names[0]]
        self.dtype, self.device, self.pullback, self.products = first.dtype, first.device, None, 0
        value = float(self(self.params))
        if not math.isfinite(value):
            raise DivergenceError(f"the loss at the model's parameters is not finite ({value}): they have diverged")

    def __call__(self, p):
        return self.loss_fn(functional_call(self.model, {**p, **self.fixed}, self.xs), self.y)

    def unflatten(self, v):
        v = torch.as_tensor(v, dtype=self.dtype, device=self.device)
        return {k: t.reshape(s) for k, t, s in zip(self.names, torch.split(v, self.sizes), self.shapes)}

    def flatten(self, p):
        return torch.cat([p[k].reshape(-1) for k in self.names]).detach().to("cpu", torch.float64).numpy()

    def hvp(self, V):
        """∇²L V for the columns of V (P × b): the vector–Jacobian product of ∇L (reverse over reverse; ∇²L is
        symmetric), its graph built once and pulled back once per column."""
        if self.pullback is None:
            _, self.pullback = vjp(grad(self), self.params)
        cols = [self.flatten(self.pullback(self.unflatten(V[:, j]))[0]) for j in range(V.shape[1])]
        self.products += V.shape[1]
        return np.stack(cols, axis=1)


def _checked_ncv(ncv, k):
    """The Lanczos basis size for the k top eigenvalues: None (ARPACK's default) or an integer ≥ k + 2 (ARPACK's rule
    for its thick restarts; :func:`rmtnet.spectra.sampling.lanczos.top_eigenvalues`)."""
    return None if ncv is None else integer_at_least("ncv", ncv, k + 2)


def _lanczos_options(k, dim, tol, maxiter, ncv, seed):
    """The Lanczos arguments of the k top eigenvalues of a dim × dim operator, all checked (also where ``dim`` < 2
    needs no Lanczos); ``ncv`` at most ``dim`` (then ARPACK's default where that leaves fewer than k + 2)."""
    ncv = _checked_ncv(ncv, k)
    if ncv is not None:
        ncv = min(ncv, dim) if min(ncv, dim) >= k + 2 else None
    return dict(tol=real_scalar("tol", tol, lo=0.0, hi=1.0, lo_open=True),
                maxiter=None if maxiter is None else integer_at_least("maxiter", maxiter, 1), ncv=ncv,
                seed=integer_at_least("seed", seed, 0))


def _top(operator, k, dim, options):
    """The k top eigenvalues of a symmetric ``operator`` (dim × dim, on P × b arrays) by Lanczos; a zero operator
    (a ReLU net whose units are all dead has ∇²L = 0 and Θ = 0), on which ARPACK stops ("starting vector is zero":
    its Krylov space collapses), has k zeros."""
    try:
        return top_eigenvalues(operator, k, dim=dim, **options)
    except ArpackError:
        v = np.random.default_rng(options["seed"]).standard_normal((dim, 1))
        if np.any(operator(v)):           # H v = 0 for a Gaussian v only when H = 0 (with probability one)
            raise
        return np.zeros(k)


def _top_k(k, dim, name):
    """``k`` as an int in [1, dim − 1] (k = 1 also when dim = 1), or ValueError naming ``k``."""
    number = scalar(k)
    if isinstance(number, bool) or not isinstance(number, numbers.Integral) or not 1 <= number < max(dim, 2):
        raise ValueError(f"k must be an integer in [1, {name} - 1] = [1, {dim - 1}], got {k!r}")
    return int(number)


# ------------------------------------------------------------------------------------------------------------------
# The loss Hessian

def hessian_top_eigenvalues(model, data, loss="mse", k=1, *, tol=1e-8, maxiter=None, ncv=None, seed=0):
    """The k largest eigenvalues of the training-loss Hessian ∇²L(θ), descending, by Lanczos on Hessian-vector
    products (no P × P matrix; module docstring). Full-batch gradient descent at step η is linearly stable at θ iff
    η < 2/λ_max.

    Parameters
    ----------
    model : torch.nn.Module
        The network; θ its trainable parameters.
    data : rmtnet.nets.data.Dataset or tuple
        A Dataset (its training split) or a pair (x, y): x a batch (or a tuple of batches), y class labels (int64,
        as many classes as outputs) or regression targets shaped like the output.
    loss : str or callable, default "mse"
        As in :func:`rmtnet.nets.train`: "mse" (½·mean (f − y)²), "mean_squared", "cross_entropy" or
        ``(output, y) -> mean loss``.
    k : int, default 1
        How many eigenvalues, 1 ≤ k < P.
    tol : float, default 1e-8
        Relative residual asked of each Ritz pair (the eigenvalue's error is of order tol² × its gap ratio).
    maxiter, ncv : int, optional
        Lanczos restarts (≥ 1) and basis size (≥ k + 2, ARPACK's rule; at most P is used); ARPACK's defaults when
        None; a small ``ncv`` such as k + 3 takes fewer products when the top is well separated.
    seed : int, default 0
        The start vector.

    Returns
    -------
    ndarray
        The k largest eigenvalues of ∇²L, float64, descending.

    Examples
    --------
    A linear model f(x) = Wx (no bias) with ½·mean squared loss over N samples and k outputs has
    ∇²L = (I_k ⊗ XᵀX)/(Nk): for X = diag(1, 2) and k = 1, λ = (4, 1)/2:

    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    >>> print(np.round(hessian_top_eigenvalues(lin, (x, y)), 10))
    [2.]
    """
    H = HessianOperator(model, data, loss)
    k = _top_k(k, H.dim, "P (trainable parameters)")
    options = _lanczos_options(k, H.dim, tol, maxiter, ncv, seed)
    if H.dim < 2:
        return np.array([float(H.hvp(np.ones((1, 1)))[0, 0])])
    return _top(H.hvp, k, H.dim, options)


def hessian_trace(model, data, loss="mse", *, n_probes=64, seed=0):
    """Hutchinson's estimate of tr ∇²L(θ), the mean of zᵀ∇²L z over Rademacher probes z ∈ {±1}^P, with its standard
    error (module docstring). Unbiased; its variance is 2 Σ_{i≠j} H_ij² / n_probes.

    Parameters
    ----------
    model, data, loss
        As in :func:`hessian_top_eigenvalues`.
    n_probes : int, default 64
        Rademacher probes, ≥ 2 (for a standard error).
    seed : int, default 0
        The probes (NumPy's default generator).

    Returns
    -------
    TraceEstimate
        ``(value, standard_error, n_probes)``.

    Examples
    --------
    A diagonal Hessian is traced exactly by every probe (zᵢ² = 1): for f(x) = Wx on X = diag(1, 2), ½·mean
    squared loss, tr ∇²L = (1 + 4)/2:

    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    >>> est = hessian_trace(lin, (x, y), n_probes=4)
    >>> print(round(est.value, 10), round(est.standard_error, 10), est.n_probes)
    2.5 0.0 4
    """
    n_probes = integer_at_least("n_probes", n_probes, 2)
    seed = integer_at_least("seed", seed, 0)
    H = HessianOperator(model, data, loss)
    z = np.where(np.random.default_rng(seed).random((H.dim, n_probes)) < 0.5, -1.0, 1.0)
    quad = np.einsum("pi,pi->i", z, H.hvp(z))
    return TraceEstimate(float(quad.mean()), float(quad.std(ddof=1) / math.sqrt(n_probes)), n_probes)


# ------------------------------------------------------------------------------------------------------------------
# The empirical NTK Gram

def ntk_top_eigenvalues(model, x, k=1, *, tol=1e-10, maxiter=None, ncv=None, seed=0):
    """The k largest eigenvalues of the empirical NTK Gram Θ = J Jᵀ over the batch ``x`` (N k × N k, J = ∂f/∂θ; the
    matrix of :func:`rmtnet.nets.probes.empirical_ntk`), descending, by Lanczos on Θv = J(Jᵀv) (a vector–Jacobian
    then a Jacobian–vector product; Θ is never formed).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    x : torch.Tensor or tuple of torch.Tensor
        The batch (N, …), or a tuple of batches for a multi-input model.
    k : int, default 1
        How many eigenvalues, 1 ≤ k < N·(outputs per example).
    tol : float, default 1e-10
        Relative residual asked of each Ritz pair.
    maxiter, ncv : int, optional
        Lanczos restarts and basis size, as in :func:`hessian_top_eigenvalues`.
    seed : int, default 0
        The start vector.

    Returns
    -------
    ndarray
        The k largest eigenvalues of Θ, float64, descending.

    Examples
    --------
    For f(x) = Wx, Θ = XXᵀ ⊗ I_k: on X = diag(1, 2) with k = 2 outputs the eigenvalues are 4, 4, 1, 1:

    >>> lin = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
    >>> print(np.round(ntk_top_eigenvalues(lin, torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64), k=3), 10))
    [4. 4. 1.]
    """
    check_model(model)
    xs, _ = batch_inputs(model, x, "x")
    checked_forward(model, xs, "x")
    params, fixed = trainable_state(model)

    def out(p):
        return functional_call(model, {**p, **fixed}, xs).reshape(-1)

    y, pullback = vjp(out, params)
    first = next(iter(params.values()))
    m = y.numel()
    k = _top_k(k, m, "Nk (outputs over the batch)")
    options = _lanczos_options(k, m, tol, maxiter, ncv, seed)

    def gram(V):
        cols = []
        for j in range(V.shape[1]):
            (tangent,) = pullback(torch.as_tensor(V[:, j], dtype=first.dtype, device=first.device))
            cols.append(jvp(out, (params,), (tangent,))[1].detach().to("cpu", torch.float64).numpy())
        return np.stack(cols, axis=1)

    if m < 2:
        return np.array([float(gram(np.ones((1, 1)))[0, 0])])
    return _top(gram, k, m, options)


# ------------------------------------------------------------------------------------------------------------------
# A probe for the training loop

class SharpnessProbe:
    """``probe(model, data) -> {"hessian": λ_max(∇²L), "ntk": λ_max(Θ)}`` over the training split (or a fixed subset
    of it), for :func:`rmtnet.nets.train`'s ``probes`` argument (columns ``{name}_hessian``, ``{name}_ntk``). Made
    by :func:`sharpness_probe`, which documents the arguments.

    Examples
    --------
    Without the NTK the row has the Hessian's λ_max only: for f(x) = Wx on X = diag(1, 2), ½·mean squared loss,
    ∇²L = diag(1, 4)/2, so λ_max = 2; the model is probed in eval mode and handed back in training mode:

    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    >>> data = Dataset(x, torch.zeros(2, 1, dtype=torch.float64), x, x[:, :1], None, "toy", (2,))
    >>> probe = sharpness_probe(ntk=False)
    >>> row = probe(lin, data)
    >>> isinstance(probe, SharpnessProbe), list(row), round(row["hessian"], 10), lin.training
    (True, ['hessian'], 2.0, True)
    """

    def __init__(self, loss, n_examples, ntk, tol, seed, ncv=None):
        self.loss, self.n_examples, self.ntk, self.tol, self.seed, self.ncv = loss, n_examples, ntk, tol, seed, ncv

    def _subset(self, data):
        n = data.n_train
        if self.n_examples is None or self.n_examples >= n:
            return data.x_train, data.y_train
        index = torch.from_numpy(np.sort(np.random.default_rng(self.seed).choice(n, self.n_examples, replace=False)))
        pick = (lambda t: t[index.to(t.device)])
        x = tuple(pick(t) for t in data.x_train) if isinstance(data.x_train, tuple) else pick(data.x_train)
        return x, pick(data.y_train)

    def __call__(self, model, data):
        """The row ``{"hessian": …, "ntk": …}`` of ``model`` on ``data``, evaluated in eval mode (dropout off,
        BatchNorm's running statistics: the loss that :func:`rmtnet.nets.evaluate` reports); the model's mode is
        restored afterwards."""
        if not isinstance(data, Dataset):
            raise ValueError(f"data must be an rmtnet.nets.data.Dataset, got {type(data).__name__}")
        x, y = self._subset(data)
        xy = Dataset(x, y, x, y, data.n_classes, data.name, data.shape)
        lanczos = dict(tol=self.tol, ncv=self.ncv, seed=self.seed)
        was_training = model.training
        model.eval()
        try:
            row = {"hessian": float(hessian_top_eigenvalues(model, xy, self.loss, **lanczos)[0])}
            if self.ntk:
                row["ntk"] = float(ntk_top_eigenvalues(model, x, **lanczos)[0])
        finally:
            model.train(was_training)
        return row


def sharpness_probe(loss="mse", *, n_examples=None, ntk=True, tol=1e-6, ncv=None, seed=0):
    """A probe of the sharpness for :func:`rmtnet.nets.train` (``probes={"sharpness": sharpness_probe(...)}``): at
    each probed evaluation, λ_max of the training-loss Hessian (:func:`hessian_top_eigenvalues`) and, with ``ntk``,
    λ_max of the empirical NTK Gram (:func:`ntk_top_eigenvalues`) over the training split, or over a fixed random
    subset of ``n_examples`` of it (drawn from ``seed``, the same at every step).

    Parameters
    ----------
    loss : str or callable, default "mse"
        The loss that ``train`` minimises (give the same).
    n_examples : int, optional
        Probe on this many training examples (None: all of them).
    ntk : bool, default True
        Also the NTK's top eigenvalue.
    tol : float, default 1e-6
        Lanczos' relative residual.
    ncv : int, optional
        Lanczos' basis size, ≥ 3 (k + 2 for the probe's one eigenvalue; :func:`hessian_top_eigenvalues`).
    seed : int, default 0
        The subset and the Lanczos start vectors.

    Returns
    -------
    SharpnessProbe

    Examples
    --------
    >>> lin = torch.nn.Linear(2, 1, bias=False, dtype=torch.float64)
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    >>> data = Dataset(x, torch.zeros(2, 1, dtype=torch.float64), x, x[:, :1], None, "toy", (2,))
    >>> {k: round(v, 10) for k, v in sharpness_probe()(lin, data).items()}
    {'hessian': 2.0, 'ntk': 4.0}
    """
    if not (callable(loss) or isinstance(loss, str)):
        raise ValueError(f"loss must be a str or a callable (output, y) -> scalar, got {loss!r:.60}")
    loss_function(loss, 2)              # an unknown name is refused here, not at the first probe
    if n_examples is not None:
        n_examples = integer_at_least("n_examples", n_examples, 1)
    ntk = boolean("ntk", ntk)
    options = _lanczos_options(1, 3, tol, None, ncv, seed)         # the probe's k = 1: ncv ≥ 3
    return SharpnessProbe(loss, n_examples, bool(ntk), options["tol"], options["seed"], _checked_ncv(ncv, 1))
