"""Spectral probes of torch models: input–output Jacobians, the empirical neural tangent kernel, weight spectra
(the empirical NTK of Jacot, Gabriel & Hongler, NeurIPS 2018).

Conventions.
  * An *example* is what one row of a batch holds: ``x`` of any shape the model takes without its batch dimension
    ((d_in,) for an MLP, (C, H, W) for an image model). Models are called on batches, so f(x) = model(x[None]) with
    its output flattened to k = d_out numbers. Models whose forward takes several inputs (the Ensemble Mask
    Network's (x, A)) are given a tuple ``(x, a, …)``: every element is per-example data and gets the batch
    dimension; input Jacobians differentiate with respect to the first element only.
  * The input–output Jacobian is J = ∂f/∂x of shape (d_out, d_in), input and output flattened row-major;
    :func:`jacobian_spectrum` returns the eigenvalues of JJᵀ (d_out of them), as the squared singular values of J
    in float64, padded with the d_out − d_in zeros when d_out > d_in — the convention of
    :func:`rmtnet.spectra.sampling.montecarlo.sample_jacobian_eigs`, so the two can be overlaid.
  * The empirical NTK is Θ(x, x′) = J_θ(x) J_θ(x′)ᵀ with J_θ(x) = ∂f(x)/∂θ over every trainable parameter θ
    (``requires_grad=True``; buffers and frozen parameters are held fixed), unnormalised (no 1/n or 1/width factor:
    divide as the theory at hand requires), in the model's own dtype. ``layout``
    "matrix" gives shape (n₁k, n₂k), row i·k + a for output a of example i (the flattening of a (n₁, k) output
    batch); "blocks" gives (n₁, n₂, k, k) with Θ[i, j] the k × k block of examples i and j. The forward pass must be
    deterministic and treat the examples of a batch independently (call ``model.eval()`` first when it has dropout or
    BatchNorm): the "jacobian" method runs one example at a time, the "products" method a whole batch.
  * Inputs are moved to the device of the model's parameters; the model decides the device.

A MaskedLinear layer computes F.linear(x, weight ⊙ mask, bias), so ∂f/∂weight is exactly zero at masked coordinates
and Θ only sees the unmasked ones.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call, jacrev, jvp, vjp, vmap

from rmtnet.nets._modules import apply_to, check_model, model_dtype
from rmtnet._validation import boolean, integer_at_least, one_of

__all__ = ["input_jacobian", "jacobian_spectrum", "parameter_jacobian", "empirical_ntk", "weight_singular_values",
           "effective_singular_values"]

NTK_METHODS = ("jacobian", "products")
LAYOUTS = ("matrix", "blocks")


# ------------------------------------------------------------------------------------------------------------------
# Inputs

def _model_device(model):
    p = next(model.parameters(), None)
    if p is None:
        p = next(model.buffers(), None)
    return None if p is None else p.device


def batch_inputs(model, x, name="x", batched=True):
    """``x`` (tensor or tuple of tensors) as a tuple of tensors on the model's device; with ``batched``, check that
    all share a leading dimension n ≥ 1 and return n too. The input check of every probe in :mod:`rmtnet.nets`
    (also :mod:`rmtnet.nets.sharpness`)."""
    batched = boolean("batched", batched)
    xs = tuple(x) if isinstance(x, (tuple, list)) else (x,)
    if not xs:
        raise ValueError(f"{name} must be a tensor or a non-empty tuple of tensors")
    dev, dtype = _model_device(model), model_dtype(model)
    out = []
    for j, t in enumerate(xs):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a tensor or a tuple of tensors, got {type(t).__name__} at position {j}")
        if t.is_complex():
            raise ValueError(f"{name} must be real, got dtype {t.dtype} at position {j}")
        if t.is_floating_point():
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} must be finite (no NaN or inf), position {j}")
            if dtype is not None:                     # floating inputs take the model's precision
                t = t.to(dtype)
        out.append(t if dev is None else t.to(dev))
    if not batched:
        return tuple(out)
    if any(t.ndim < 1 for t in out):
        raise ValueError(f"{name} must have a leading batch dimension (n, …), got shapes {[tuple(t.shape) for t in out]}")
    n = out[0].shape[0]
    if n < 1 or any(t.shape[0] != n for t in out):
        raise ValueError(f"every tensor of {name} must hold the same n ≥ 1 examples along dimension 0, got shapes "
                         f"{[tuple(t.shape) for t in out]}")
    return tuple(out), n


def checked_forward(model, xs, name, batched=True):
    """One forward pass on the inputs ``xs`` (a batch, or one example when not ``batched``), before any Jacobian: a
    model that cannot take them, or whose output on them is not finite, is reported naming ``name``. Shared with
    :mod:`rmtnet.nets.sharpness`."""
    batched = boolean("batched", batched)
    with torch.no_grad():
        out = apply_to(model, xs if batched else tuple(t.unsqueeze(0) for t in xs), name)
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"the model's output on {name} must be a tensor, got {type(out).__name__}")
    if batched and (out.ndim < 1 or out.shape[0] != xs[0].shape[0]):
        raise ValueError(f"the model's output on {name} (shape {tuple(out.shape)}) does not keep {name}'s batch of "
                         f"{xs[0].shape[0]} examples along dimension 0 (input shapes {[tuple(t.shape) for t in xs]})")
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        raise ValueError(f"the model's output on {name} is not finite (NaN or inf)")


def _per_example(model):
    """f(x, *context) = model(x[None], *context[None]) flattened: the network as a function of one example."""
    def f(x, *context):
        return model(x.unsqueeze(0), *(c.unsqueeze(0) for c in context)).reshape(-1)
    return f


# ------------------------------------------------------------------------------------------------------------------
# Input–output Jacobians

def input_jacobian(model, x):
    """The input–output Jacobian J = ∂f/∂x at one example, shape (d_out, d_in) (input and output flattened).

    ``x``: one example without the batch dimension, or a tuple ``(x, *context)`` whose other elements are held fixed
    (e.g. the EMN adjacency A). Computed by reverse mode (torch.func.jacrev) in the model's dtype.

    Parameters
    ----------
    model : torch.nn.Module
        The network (called on a batch of one).
    x : torch.Tensor or tuple of torch.Tensor
        One example, or ``(x, *context)``.

    Returns
    -------
    torch.Tensor
        J, shape (d_out, d_in), detached.

    Examples
    --------
    A linear model's input Jacobian is its weight matrix:

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> lin = torch.nn.Linear(3, 2, dtype=torch.float64)
    >>> J = input_jacobian(lin, torch.randn(3, dtype=torch.float64))
    >>> print(tuple(J.shape), torch.allclose(J, lin.weight))
    (2, 3) True
    """
    check_model(model)
    x, *context = batch_inputs(model, x, batched=False)
    if not x.is_floating_point():
        raise ValueError(f"x must be floating point (the Jacobian is taken with respect to it), got dtype {x.dtype}")
    if x.numel() == 0:
        raise ValueError(f"x must hold at least one number, got shape {tuple(x.shape)}")
    checked_forward(model, (x, *context), "x", batched=False)
    J = jacrev(_per_example(model))(x, *context)
    return J.reshape(J.shape[0], x.numel()).detach()


def _gram_eigs(J):
    """Eigenvalues of JJᵀ (…, d_out), ascending, as squared float64 singular values padded with zeros."""
    J = J.to(torch.float64)
    d_out, d_in = J.shape[-2:]
    e = torch.linalg.svdvals(J).flip(-1).square()
    if d_out > d_in:
        e = torch.cat([e.new_zeros(e.shape[:-1] + (d_out - d_in,)), e], dim=-1)
    return e


def jacobian_spectrum(model, x, batched=False):
    """Eigenvalues of JJᵀ for the input–output Jacobian J of :func:`input_jacobian`, as a float64 NumPy array.

    Squared singular values of J (float64 ``torch.linalg.svdvals``; accurate to ~(ε‖J‖)² near 0, unlike an
    eigensolver on JJᵀ), ascending, with d_out − d_in zeros when d_out > d_in. With ``batched=True``, ``x`` (or each
    element of the tuple) carries a leading dimension of n examples; the Jacobians are computed with vmap(jacrev)
    and the result is the n spectra, each ascending, concatenated in example order: shape (n·d_out,).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    x : torch.Tensor or tuple of torch.Tensor
        One example (or ``(x, *context)``); with ``batched``, n examples.
    batched : bool, default False
        Whether ``x`` holds n examples.

    Returns
    -------
    numpy.ndarray
        float64, shape (d_out,), or (n·d_out,) with ``batched``.

    Examples
    --------
    For f(x) = Wx with W = diag(3, 4) (2 × 2), JJᵀ = WWᵀ has eigenvalues 9 and 16; for W = (3, 4)ᵀ (2 × 1),
    WWᵀ has rank 1 and eigenvalues 0 and 3² + 4² = 25:

    >>> import torch
    >>> lin = torch.nn.Linear(2, 2, bias=False, dtype=torch.float64)
    >>> _ = lin.weight.data.copy_(torch.tensor([[3.0, 0.0], [0.0, 4.0]]))
    >>> jacobian_spectrum(lin, torch.ones(2, dtype=torch.float64)).round(8).tolist()
    [9.0, 16.0]
    >>> col = torch.nn.Linear(1, 2, bias=False, dtype=torch.float64)
    >>> _ = col.weight.data.copy_(torch.tensor([[3.0], [4.0]]))
    >>> jacobian_spectrum(col, torch.ones(3, 1, dtype=torch.float64), batched=True).round(8).tolist()
    [0.0, 25.0, 0.0, 25.0, 0.0, 25.0]
    """
    check_model(model)
    if not boolean("batched", batched):
        return _gram_eigs(input_jacobian(model, x)).cpu().numpy()
    (x, *context), n = batch_inputs(model, x)
    if not x.is_floating_point():
        raise ValueError(f"x must be floating point (the Jacobian is taken with respect to it), got dtype {x.dtype}")
    checked_forward(model, (x, *context), "x")
    J = vmap(jacrev(_per_example(model)))(x, *context)
    J = J.reshape(n, J.shape[1], x[0].numel()).detach()
    return _gram_eigs(J).reshape(-1).cpu().numpy()


# ------------------------------------------------------------------------------------------------------------------
# Empirical neural tangent kernel

def trainable_state(model):
    """Trainable parameters (differentiated) and everything else (buffers, frozen parameters; held fixed), as two
    dicts for ``torch.func.functional_call``. Shared with :mod:`rmtnet.nets.sharpness`."""
    params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    fixed = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}
    fixed.update({k: v for k, v in model.named_buffers()})
    if not params:
        raise ValueError("model has no trainable parameters (requires_grad=True): its NTK is empty")
    return params, fixed


def parameter_jacobian(model, x, chunk_size=None):
    """Per-example Jacobians of the flattened output with respect to every trainable parameter.

    ``x``: a batch (n, …) or a tuple of batches (inputs of ``model(*x)``). Returns {name: tensor of shape
    ``(n, k, *param.shape)``}, computed as vmap over examples of jacrev of torch.func.functional_call, in the model's
    dtype. For a MaskedLinear weight the entries at masked coordinates are exactly zero. ``chunk_size`` bounds how
    many examples vmap treats at once (memory).

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    x : torch.Tensor or tuple of torch.Tensor
        A batch (n, …), or a tuple of batches.
    chunk_size : int, optional
        At most this many examples at once (None: all).

    Returns
    -------
    dict
        ``{parameter name: tensor (n, k, *param.shape)}``, detached.

    Examples
    --------
    For f(x) = Wx + b, ∂f_a/∂W_bc = δ_ab x_c and ∂f_a/∂b_c = δ_ac:

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> lin = torch.nn.Linear(3, 2, dtype=torch.float64)
    >>> x = torch.randn(4, 3, dtype=torch.float64)
    >>> J = parameter_jacobian(lin, x)
    >>> print(tuple(J["weight"].shape), tuple(J["bias"].shape))
    (4, 2, 2, 3) (4, 2, 2)
    >>> expected = torch.stack([torch.zeros(3, dtype=torch.float64), x[0]])   # output a = 1 of example 0
    >>> print(torch.equal(J["weight"][0, 1], expected), torch.equal(J["bias"][0], torch.eye(2, dtype=torch.float64)))
    True True
    """
    check_model(model)
    xs, _ = batch_inputs(model, x)
    if chunk_size is not None:
        chunk_size = integer_at_least("chunk_size", chunk_size, 1)
    checked_forward(model, xs, "x")
    params, fixed = trainable_state(model)

    def f(p, x, *context):
        out = functional_call(model, {**p, **fixed}, (x.unsqueeze(0), *(c.unsqueeze(0) for c in context)))
        return out.reshape(-1)

    in_dims = (None,) + (0,) * len(xs)
    jac = vmap(jacrev(f), in_dims=in_dims, chunk_size=chunk_size)(params, *xs)
    return {k: v.detach() for k, v in jac.items()}


def _ntk_jacobian(model, xs1, xs2, chunk_size):
    J1 = parameter_jacobian(model, xs1, chunk_size)
    J2 = J1 if xs2 is None else parameter_jacobian(model, xs2, chunk_size)
    return sum(torch.einsum("iaP,jbP->iajb", J1[k].flatten(2), J2[k].flatten(2)) for k in J1)


def _ntk_products(model, xs1, xs2, chunk_size):
    """Θ = J₁J₂ᵀ one column at a time: the vjp with a basis vector eⱼ of the n₂k outputs gives the parameter-shaped
    cotangent J₂ᵀeⱼ, and the jvp of the first batch along it gives J₁J₂ᵀeⱼ; vmap runs all columns at once."""
    params, fixed = trainable_state(model)
    xs2 = xs1 if xs2 is None else xs2

    def batch_output(xs):
        return lambda p: functional_call(model, {**p, **fixed}, xs).reshape(-1)

    out1 = batch_output(xs1)
    y2, pullback = vjp(batch_output(xs2), params)

    def column(e):
        (tangent,) = pullback(e)
        return jvp(out1, (params,), (tangent,))[1]

    basis = torch.eye(y2.numel(), dtype=y2.dtype, device=y2.device)
    cols = vmap(column, chunk_size=chunk_size)(basis)              # (n₂k, n₁k): row j = J₁J₂ᵀeⱼ
    return cols.T.detach()


def empirical_ntk(model, x1, x2=None, method="jacobian", layout="matrix", chunk_size=None):
    """Empirical NTK Θ(x1, x2) = J_θ(x1) J_θ(x2)ᵀ over all trainable parameters (Jacot, Gabriel & Hongler,
    NeurIPS 2018).

    ``x1`` (n₁, …), ``x2`` (n₂, …) or None for x2 = x1: batches, or tuples of batches for multi-input models.
    ``method="jacobian"``: per-example parameter Jacobians (:func:`parameter_jacobian`) contracted over parameters;
    memory ~ (n₁ + n₂)·k·P. ``method="products"``: vector–Jacobian then Jacobian–vector products
    (torch.func.vjp, torch.func.jvp), one per output of the x2 batch, without per-example Jacobians; memory
    ~ n₂k·P with ``chunk_size=None`` (``chunk_size`` columns at a time otherwise). Both give the same Θ up to rounding.
    ``layout="matrix"``: (n₁k, n₂k); ``"blocks"``: (n₁, n₂, k, k). A torch tensor in the model's dtype, detached.
    Its train × train and test × train blocks (``.numpy()``) go through the same predictor as an infinite-width
    kernel, :func:`rmtnet.spectra.gradient_descent_mse`: the linearised model trained by gradient descent.

    Parameters
    ----------
    model : torch.nn.Module
        The network; its trainable parameters are θ.
    x1 : torch.Tensor or tuple of torch.Tensor
        A batch of n₁ examples.
    x2 : torch.Tensor or tuple of torch.Tensor, optional
        A batch of n₂ examples (None: ``x1``).
    method : {"jacobian", "products"}, default "jacobian"
        How Θ is computed.
    layout : {"matrix", "blocks"}, default "matrix"
        The shape of the result.
    chunk_size : int, optional
        Examples ("jacobian") or columns ("products") at once.

    Returns
    -------
    torch.Tensor
        Θ, (n₁k, n₂k) or (n₁, n₂, k, k).

    Examples
    --------
    For f(x) = Wx (no bias), J_θ(x) = I_k ⊗ xᵀ, so Θ(x, y) = (xᵀy)·I_k and the matrix layout is kron(X₁X₂ᵀ, I_k):

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> lin = torch.nn.Linear(3, 2, bias=False, dtype=torch.float64)
    >>> x1, x2 = torch.randn(4, 3, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    >>> theta = empirical_ntk(lin, x1, x2)
    >>> expected = torch.kron(x1 @ x2.T, torch.eye(2, dtype=torch.float64))
    >>> print(tuple(theta.shape), torch.allclose(theta, expected),
    ...       torch.allclose(empirical_ntk(lin, x1, x2, method="products"), expected))
    (8, 10) True True
    >>> blocks = empirical_ntk(lin, x1, x2, layout="blocks")
    >>> print(tuple(blocks.shape), torch.allclose(blocks[1, 2], (x1[1] @ x2[2]) * torch.eye(2, dtype=torch.float64)))
    (4, 5, 2, 2) True
    """
    check_model(model)
    one_of("method", method, NTK_METHODS)
    one_of("layout", layout, LAYOUTS)
    if chunk_size is not None:
        chunk_size = integer_at_least("chunk_size", chunk_size, 1)
    xs1, n1 = batch_inputs(model, x1, "x1")
    xs2, n2 = (None, n1) if x2 is None else batch_inputs(model, x2, "x2")
    checked_forward(model, xs1, "x1")
    if xs2 is not None:
        checked_forward(model, xs2, "x2")
    if method == "jacobian":
        theta = _ntk_jacobian(model, xs1, xs2, chunk_size)                      # (n₁, k, n₂, k)
        k = theta.shape[1]
        theta = theta.reshape(n1 * k, n2 * k)
    else:
        theta = _ntk_products(model, xs1, xs2, chunk_size)                      # (n₁k, n₂k)
        if theta.shape[0] % n1:
            raise ValueError(f"the model's output ({theta.shape[0]} numbers for {n1} examples) does not split "
                             "evenly into examples")
        k = theta.shape[0] // n1
    if layout == "blocks":
        theta = theta.reshape(n1, k, n2, k).permute(0, 2, 1, 3)
    return theta


# ------------------------------------------------------------------------------------------------------------------
# Weights

def weight_singular_values(weight):
    """Singular values of a dense weight matrix (torch tensor or array, shape (out, in)), float64, descending, as a
    NumPy array. For a MaskedLinear pass ``layer.weight`` (stored with zeros at masked coordinates) or
    ``layer.weight * layer.mask``.

    Parameters
    ----------
    weight : torch.Tensor or array_like
        A real, finite matrix (out, in).

    Returns
    -------
    numpy.ndarray
        The min(out, in) singular values, float64, descending.

    Examples
    --------
    diag(3, 4) has singular values 4 and 3; the all-ones 2 × 2 matrix = 2·uuᵀ (u = (1, 1)/√2) has 2 and 0:

    >>> weight_singular_values([[3.0, 0.0], [0.0, 4.0]]).round(8).tolist()
    [4.0, 3.0]
    >>> weight_singular_values(torch.ones(2, 2)).round(6).tolist()
    [2.0, 0.0]
    """
    if isinstance(weight, torch.Tensor):
        w = weight.detach()
    else:
        try:
            arr = np.asarray(weight)
        except (ValueError, TypeError) as exc:                # ragged nested lists
            raise ValueError(f"weight must be a real numeric matrix ({exc})") from None
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) or arr.dtype.kind == "c":
            raise ValueError(f"weight must be a real numeric matrix, got dtype {arr.dtype}")
        w = torch.from_numpy(np.array(arr, dtype=np.float64, copy=True))
    if w.is_complex():
        raise ValueError(f"weight must be real, got dtype {w.dtype}")
    if w.ndim != 2:
        raise ValueError(f"weight must be a matrix of shape (out, in), got shape {tuple(w.shape)}")
    w = w.to(torch.float64)
    if not bool(torch.isfinite(w).all()):
        raise ValueError("weight must be finite (no NaN or inf)")
    sv = torch.linalg.svdvals(w)
    if not bool(torch.isfinite(sv).all()):
        raise OverflowError(f"the singular values of weight exceed float64 (max |w| = {float(w.abs().max()):.3g})")
    return sv.cpu().numpy()


def effective_singular_values(model, tokens=None, channels=None, max_dense=4096):
    """Singular values of every mixing layer of ``model`` as a layer of its effective MLP on width m = S·C
    (Hayase & Karakida, ICML 2024, arXiv 2306.01470), as ``{module name: descending float64 array}``.

    Never builds a Kronecker product: TokenMixing W acts as kron(W, I_C), so its singular values are W's, each
    repeated C times; ChannelMixing V as kron(I_S, V), V's repeated S times; PermutedMixing (RP) P₁(I_n ⊗ W)P₂ has
    W's repeated n_blocks times (:func:`rmtnet.spectra.mixer.kronecker_singular_values`). MaskedLinear gives those of
    M ⊙ W, and so does SparseMaskedLinear (only up to ``max_dense`` on a side: it builds the dense M ⊙ W);
    MonarchLinear those of its dense matrix (only up to ``max_dense`` on a side). S and C are read from the
    model (``tokens``/``channels`` attributes, as the Mixer-family models have) unless given.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    tokens, channels : int, optional
        S and C (None: the model's attributes).
    max_dense : int, default 4096
        The largest side of a structured layer's dense matrix.

    Returns
    -------
    dict
        ``{module name: numpy.ndarray}``, each descending.

    Examples
    --------
    An MLP-Mixer with S = 4, C = 2: the stem (C_in = 3 → 2) has 2 singular values, each repeated S = 4 times; the
    first token layer W (8 × 4) has 4, each repeated C = 2 times:

    >>> import numpy as np
    >>> from rmtnet.nets.models import MLPMixer
    >>> net = MLPMixer(tokens=4, in_channels=3, channels=2, depth=1, n_classes=5, seed=0)
    >>> sv = effective_singular_values(net)
    >>> print({name: len(v) for name, v in sv.items()})
    {'stem': 8, 'blocks.0.f.layer1': 8, 'blocks.0.f.layer2': 8, 'blocks.1.f.layer1': 8, 'blocks.1.f.layer2': 8}
    >>> W = net.blocks[0].f.layer1.weight
    >>> print(np.allclose(sv["blocks.0.f.layer1"], np.repeat(weight_singular_values(W), 2)))
    True
    """
    from rmtnet.spectra.mixer import kronecker_singular_values
    from .layers import ChannelMixing, MaskedLinear, MonarchLinear, PermutedMixing, SparseMaskedLinear, TokenMixing

    check_model(model)
    S = integer_at_least("tokens", tokens, 1) if tokens is not None else getattr(model, "tokens", None)
    C = integer_at_least("channels", channels, 1) if channels is not None else getattr(model, "channels", None)
    max_dense = integer_at_least("max_dense", max_dense, 1)
    out = {}
    for name, mod in model.named_modules():
        if isinstance(mod, (TokenMixing, ChannelMixing)):
            other = C if isinstance(mod, TokenMixing) else S
            if other is None:
                raise ValueError(f"{name}: give tokens= and channels= (the model has no tokens/channels attributes)")
            out[name] = kronecker_singular_values(mod.weight.detach().double().cpu().numpy(), other)
        elif isinstance(mod, PermutedMixing):
            out[name] = kronecker_singular_values(mod.weight.detach().double().cpu().numpy(), mod.n_blocks)
        elif isinstance(mod, MaskedLinear):
            out[name] = weight_singular_values(mod.effective_weight())
        elif isinstance(mod, (SparseMaskedLinear, MonarchLinear)):      # structured: needs the dense matrix
            if max(mod.in_features, mod.out_features) > max_dense:
                raise ValueError(f"{name}: a {mod.out_features}×{mod.in_features} {type(mod).__name__} exceeds "
                                 f"max_dense = {max_dense} (its singular values need its dense matrix)")
            dense = mod.effective_weight() if isinstance(mod, SparseMaskedLinear) else mod.dense()
            out[name] = weight_singular_values(dense)
    return out
