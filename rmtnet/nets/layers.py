"""Layers of the trained models: static masks, token/channel mixing, permuted mixing, Monarch and the EMN layer.

Conventions (Hayase & Karakida, "Understanding MLP-Mixer as a Wide and Sparse MLP", ICML 2024, arXiv 2306.01470).
Features of a Mixer-type model are S×C matrices X (S tokens, C channels), batched as (…, S, C). Their **row-major**
flattening x = flatten(X), x[s·C + c] = X[s, c], is the effective MLP's input; then

    flatten(A X B) = kron(A, Bᵀ) flatten(X),

so token mixing X ↦ W X is the layer kron(W, I_C) (density 1/C) and channel mixing X ↦ X Vᵀ is kron(I_S, V)
(density 1/S): an MLP of effective width m = S·C with very sparse weights. Hayase & Karakida write the same identities
for the column-major vec, vec(W X V) = (Vᵀ ⊗ W) vec(X); the two differ by the commutation permutation
(:func:`commutation`).

No layer here builds a Kronecker product: mixing is a matmul on one axis, RP mixing an index gather and a batched
matmul, Monarch two batched matmuls, the EMN layer one einsum over the per-sample adjacency. A static mask is either
stored densely (:class:`MaskedLinear`: an n_out × n_in weight and mask, the reference at small widths) or as its kept
weights alone in CSR form (:class:`SparseMaskedLinear`: memory and work ∝ the connections).
Weights are initialised N(0, σ_w²/fan_in) with fan_in the number of *nonzero* inputs of a row (so a masked layer of
density p uses σ_w²/(p·n_in)), biases at 0: the scaling under which the limit laws of :mod:`rmtnet.spectra` apply.
"""
from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from rmtnet._system import check_allocation
from rmtnet._validation import boolean, integer_at_least, positive_integers, real_scalar, seed_value


def generator(seed, device=None):
    """A torch.Generator seeded with ``seed`` (None: from torch's global RNG, so torch.manual_seed governs it).

    Parameters
    ----------
    seed : int or None
        The seed.
    device : str or torch.device, optional
        The generator's device (default the CPU).

    Returns
    -------
    torch.Generator

    Examples
    --------
    >>> print(torch.equal(torch.randn(3, generator=generator(0)), torch.randn(3, generator=generator(0))))
    True
    """
    seed = seed_value("seed", seed, generators=False)
    g = torch.Generator(device=device or "cpu")
    g.manual_seed(int(torch.randint(2 ** 62, (1,)).item()) if seed is None else seed)
    return g


def gaussian_(tensor, std, generator, name="sigma_w"):
    """Fill ``tensor`` in place with N(0, std²) draws from ``generator`` (drawn on the CPU, so the same seed gives the
    same weights on every device). Draws that overflow the tensor's dtype (std near its largest value) raise
    ValueError naming ``name``, the parameter std comes from.

    Parameters
    ----------
    tensor : torch.Tensor
        Filled in place.
    std : float
        The standard deviation.
    generator : torch.Generator
        A CPU generator.
    name : str, default "sigma_w"
        The parameter named in an error.

    Returns
    -------
    torch.Tensor
        ``tensor``.

    Examples
    --------
    >>> t = gaussian_(torch.empty(3, dtype=torch.float64), 2.0, generator(0))
    >>> print(torch.equal(t, 2.0 * torch.randn(3, generator=generator(0), dtype=torch.float64)))
    True
    """
    with torch.no_grad():
        tensor.copy_(torch.randn(tensor.shape, generator=generator, dtype=torch.float64).mul_(std))
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{name} gives initial weights of standard deviation {std!r}, beyond what "
                             f"{tensor.dtype} holds; give a smaller {name}")
    return tensor


def check_parameters(name, numel, *, what, alternative, device=None, dtype=None, scratch=8, scratch_numel=None):
    """Refuse, before any tensor exists, ``numel`` parameters that cannot fit: a
    :class:`rmtnet._system.MemoryLimitError` (a MemoryError and a ValueError) naming the size argument ``name``, the
    bytes needed against those available, and the ``alternative``.

    The need counted is a lower bound (never a size that fits is refused): ``numel`` elements of ``dtype`` (default
    torch's) on ``device`` (checked against the CUDA device's free memory there), plus ``scratch`` bytes per element
    of the largest tensor, ``scratch_numel`` elements (default ``numel``), on the host (the float64 draws of
    :func:`gaussian_`, one tensor at a time).

    Parameters
    ----------
    name : str
        The argument(s) setting the size, e.g. "in_features × out_features".
    numel : int
        Elements to allocate.
    what, alternative : str
        What would be allocated, and what to use instead.
    device, dtype : optional
        Where and in what dtype the parameters would live.
    scratch : int, default 8
        Host bytes per element needed while initialising.
    scratch_numel : int, optional
        The elements of the largest tensor initialised at once (default ``numel``).

    Examples
    --------
    >>> check_parameters("width", 10 ** 6, what="a weight", alternative="a smaller width")     # 4 MB: fits
    >>> try:
    ...     check_parameters("width", 10 ** 20, what="a weight", alternative="a smaller width")
    ... except MemoryError as e:
    ...     print(str(e)[:38])
    width is too large for this machine: a
    """
    item = torch.empty((), dtype=dtype or torch.get_default_dtype()).element_size()
    device = torch.device(device) if device is not None else None
    what = f"{what} ({float(numel):.3g} elements of {dtype or torch.get_default_dtype()})"
    if device is not None and device.type == "cuda" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(device)
        check_allocation(name, float(numel) * item, what=what + f" on {device}", alternative=alternative,
                         available=int(free))
        item = 0
    scratch_numel = numel if scratch_numel is None else scratch_numel
    check_allocation(name, float(numel) * item + float(scratch_numel) * scratch, what=what, alternative=alternative)


def init_scale(name, value):
    """A standard deviation parameter (σ_w) of a layer: a finite real > 0, or ValueError naming ``name``.

    Parameters
    ----------
    name : str
        The parameter's name.
    value : float
        Its value.

    Returns
    -------
    float

    Examples
    --------
    >>> print(init_scale("sigma_w", 2))
    2.0
    >>> init_scale("sigma_w", -1.0)
    Traceback (most recent call last):
    ...
    ValueError: sigma_w must ...
    """
    return real_scalar(name, value, lo=0.0, lo_open=True)


def density_value(value):
    """The density p of a masked layer: a finite real in (0, 1], or ValueError naming ``density``.

    Parameters
    ----------
    value : float
        p.

    Returns
    -------
    float

    Examples
    --------
    >>> print(density_value(0.25))
    0.25
    >>> density_value(1.5)
    Traceback (most recent call last):
    ...
    ValueError: density must ...
    """
    return real_scalar("density", value, lo=0.0, hi=1.0, lo_open=True)


def commutation(rows, cols, device=None):
    """Indices of the commutation permutation K of an rows×cols matrix in row-major order: for X of that shape,
    ``flatten(X)[..., K] == flatten(Xᵀ)`` (the commutation matrix J_c of Hayase & Karakida 2024,
    J_c vec(X) = vec(Xᵀ), in row-major form).

    Parameters
    ----------
    rows, cols : int
        The matrix's shape.
    device : str or torch.device, optional
        The result's device.

    Returns
    -------
    torch.Tensor
        rows·cols int64 indices.

    Examples
    --------
    >>> X = torch.arange(6).reshape(2, 3)
    >>> K = commutation(2, 3)
    >>> print(K.tolist(), torch.equal(X.reshape(-1)[K], X.T.reshape(-1)))
    [0, 3, 1, 4, 2, 5] True
    """
    positive_integers(rows=rows, cols=cols)
    return torch.arange(rows * cols, device=device).reshape(rows, cols).T.reshape(-1)


# --------------------------------------------------------------------------------------------------------------
# Static sparse masks (SW-MLP)

class MaskedLinear(nn.Module):
    """y = (M ⊙ W) x + b with a static 0/1 mask M (the static-mask SW-MLP layer of Hayase & Karakida 2024:
    W replaced by M ⊙ W).

    The mask is a registered buffer (it follows ``.to()``, ``state_dict``, ``deepcopy``) and ``weight`` is stored with
    exact zeros at masked coordinates. The forward pass uses ``weight * mask``, so masked coordinates receive exactly
    zero gradient; an optimizer step whose update is a function of (gradient, weight) — SGD with momentum, Adam(W) with
    weight decay — then leaves them exactly 0. ``enforce_mask()`` re-zeroes them for optimizers that would not.

    Parameters
    ----------
    in_features, out_features : int
        n_in and n_out.
    density : float, default 1.0
        p ∈ (0, 1], the fraction of kept weights.
    bias : bool, default True
        Add a bias b (initialised to 0).
    mask : {"bernoulli", "exact"} or torch.Tensor, default "bernoulli"
        ``"bernoulli"`` (iid Bernoulli(p) entries), ``"exact"`` (exactly round(p·n_out·n_in) kept entries at
        uniformly random positions) or a 0/1 tensor of shape (out_features, in_features) (then ``density`` is its
        mean).
    seed : int, optional
        Seeds the mask and the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        Kept weights are N(0, σ_w²/(p·n_in)), so each row has input variance σ_w² (times the input's), as for a
        dense layer; for p·n_in ≫ log n_in the singular values of M ⊙ W then follow Marchenko–Pastur with ratio
        n_out/n_in, largest → c_γ = 1 + √(n_out/n_in).
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> layer = MaskedLinear(8, 4, density=0.5, mask="exact", seed=0)
    >>> w = layer.effective_weight()
    >>> print(int(layer.mask.sum()), bool((w[layer.mask == 0] == 0).all()), tuple(layer(torch.ones(2, 8)).shape))
    16 True (2, 4)
    """

    def __init__(self, in_features, out_features, density=1.0, bias=True, mask="bernoulli", seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(in_features=in_features, out_features=out_features)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.in_features, self.out_features = int(in_features), int(out_features)
        check_parameters("in_features × out_features", self.out_features * self.in_features, device=device,
                         dtype=dtype, scratch=8 if isinstance(mask, torch.Tensor) else 16,
                         what="MaskedLinear's dense weight and mask",
                         alternative="use SparseMaskedLinear (memory ∝ density · in_features · out_features) or "
                                     "smaller in_features, out_features")
        factory = dict(device=device, dtype=dtype)
        g = generator(seed)
        shape = (self.out_features, self.in_features)
        if isinstance(mask, torch.Tensor):
            if tuple(mask.shape) != shape:
                raise ValueError(f"mask must have shape (out_features, in_features) = {shape}, got {tuple(mask.shape)}")
            if not torch.all((mask == 0) | (mask == 1)):
                raise ValueError("mask must contain only 0 and 1")
            m = mask.detach().to(torch.float64).cpu()
            density = float(m.mean())
            if density == 0.0:
                raise ValueError("mask must keep at least one weight")
        else:
            density = density_value(density)
            if mask == "bernoulli":
                m = (torch.rand(shape, generator=g, dtype=torch.float64) < density).to(torch.float64)
            elif mask == "exact":
                k = max(1, round(density * self.out_features * self.in_features))
                m = torch.zeros(self.out_features * self.in_features, dtype=torch.float64)
                m[torch.randperm(m.numel(), generator=g)[:k]] = 1.0
                m = m.reshape(shape)
            else:
                raise ValueError(f"mask must be 'bernoulli', 'exact' or a 0/1 tensor, got {mask!r}")
        self.density, self.sigma_w = float(density), float(sigma_w)
        self.weight = nn.Parameter(torch.empty(shape, **factory))
        self.bias = nn.Parameter(torch.zeros(self.out_features, **factory)) if bias else None
        self.register_buffer("mask", m.to(device=self.weight.device, dtype=self.weight.dtype))
        gaussian_(self.weight, self.sigma_w / math.sqrt(self.density * self.in_features), g, "sigma_w (over "
                  "√(density·in_features))")
        self.enforce_mask()

    @torch.no_grad()
    def enforce_mask(self):
        """Set the weights at masked coordinates to exactly 0 (idempotent)."""
        self.weight.mul_(self.mask)
        return self

    def effective_weight(self):
        """M ⊙ W, the matrix the layer applies."""
        return self.weight * self.mask

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, density={self.density:.4g}, "
                f"bias={self.bias is not None}")


def uniform_subset(n, k, generator, chunk=2 ** 22):
    """``k`` distinct integers drawn uniformly from range(``n``) — a uniform random k-subset — as a sorted int64
    tensor, in O(k) memory (never an n-element tensor unless k itself is that large).

    For k ≤ n/2: rounds of k − (kept so far) iid uniform draws, duplicates dropped, until k are distinct; the result
    is the set of the first k distinct values of an iid uniform sequence, which is a uniform k-subset. For k > n/2 the
    n − k left-out integers are drawn that way and the rest enumerated ``chunk`` at a time.

    Parameters
    ----------
    n : int
        The range.
    k : int
        The subset's size, 0 ≤ k ≤ n.
    generator : torch.Generator
        The random source.
    chunk : int, default 2**22
        Integers enumerated at a time.

    Returns
    -------
    torch.Tensor
        k sorted int64 values.

    Examples
    --------
    >>> s = uniform_subset(10, 3, generator(0))
    >>> print(len(s), len(set(s.tolist())), bool((s.diff() > 0).all()), bool(0 <= s.min() and s.max() < 10))
    3 3 True True
    >>> print(uniform_subset(5, 5, generator(0)).tolist())
    [0, 1, 2, 3, 4]
    """
    n, k = integer_at_least("n", n, 0), integer_at_least("k", k, 0)
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, n] = [0, {n}], got {k}")
    if 2 * k > n:
        out = uniform_subset(n, n - k, generator, chunk)
        kept = []
        for lo in range(0, n, chunk):
            block = torch.arange(lo, min(n, lo + chunk), dtype=torch.int64)
            pos = torch.searchsorted(out, block).clamp_(max=max(out.numel() - 1, 0))
            kept.append(block if out.numel() == 0 else block[out[pos] != block])
        return torch.cat(kept) if kept else torch.empty(0, dtype=torch.int64)
    have = torch.empty(0, dtype=torch.int64)
    while have.numel() < k:
        have = torch.unique(torch.cat([have, torch.randint(n, (k - have.numel(),), generator=generator)]))
    return have


def bernoulli_positions(n, p, generator, chunk=2 ** 22):
    """The kept positions of n iid Bernoulli(``p``) trials, sorted int64, in O(kept) memory: the gaps between
    successive kept positions are iid Geometric(p) on {1, 2, …}, drawn ``chunk`` at a time and summed.

    Parameters
    ----------
    n : int
        The number of trials.
    p : float
        The success probability, in (0, 1].
    generator : torch.Generator
        The random source.
    chunk : int, default 2**22
        Gaps drawn at a time.

    Returns
    -------
    torch.Tensor
        The kept positions, sorted int64 in [0, n).

    Examples
    --------
    About p·n of them (binomial: standard deviation √(np(1 − p)) ≈ 95 here):

    >>> kept = bernoulli_positions(100_000, 0.1, generator(0))
    >>> print(abs(len(kept) - 10_000) < 400, bool(kept.max() < 100_000))
    True True
    >>> print(bernoulli_positions(5, 1.0, generator(0)).tolist())
    [0, 1, 2, 3, 4]
    """
    n, p = integer_at_least("n", n, 0), real_scalar("p", p, lo=0.0, hi=1.0, lo_open=True)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must lie in (0, 1], got {p!r}")
    if p == 1.0:
        return torch.arange(n, dtype=torch.int64)
    pieces, last = [], -1                                    # last: the latest kept position so far
    while True:
        want = min(chunk, int(1.05 * p * (n - 1 - last)) + 64)
        gaps = torch.empty(want, dtype=torch.float64).geometric_(p, generator=generator)
        pos = gaps.cumsum_(0).add_(last)        # float64: a gap beyond 2⁶³ (p ~ 1e-19) must not wrap as an int
        inside = pos[pos < n].to(torch.int64)
        pieces.append(inside)
        if inside.numel() < pos.numel():
            return torch.cat(pieces)
        last = int(pos[-1])


def _csr(crow, col, values, shape):
    """A sparse CSR tensor over existing index and value tensors (no invariant check: the layer builds them)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(crow, col, values, shape, check_invariants=False)


def _bounds(n, blocks):
    """The edges of ``blocks`` near-equal consecutive parts of range(n)."""
    return [i * n // blocks for i in range(blocks + 1)]


def _blocked_product(out, crow, col, values, offsets, bounds, dense):
    """out = Σ_b W_b dense[bounds[b]:bounds[b+1]] for the column blocks W_b of a blocked CSR matrix (the rows of
    ``crow`` are the blocks' row pointers, ``offsets`` their starts in ``col``/``values``): each block reads a slice of
    ``dense`` small enough to stay in cache."""
    first = True
    for b in range(len(bounds) - 1):
        lo, hi = offsets[b], offsets[b + 1]
        if hi == lo:
            continue
        W = _csr(crow[b], col[lo:hi], values[lo:hi], (out.shape[0], bounds[b + 1] - bounds[b]))
        torch.addmm(out, W, dense[bounds[b]:bounds[b + 1]], beta=0.0 if first else 1.0, out=out)
        first = False
    if first:
        out.zero_()
    return out


class _BlockedCSRLinear(torch.autograd.Function):
    """y = x Wᵀ for W stored as column blocks in CSR form: forward Σ_b W_b x_bᵀ, input gradient through the stored
    blocked CSR of Wᵀ (its values gathered by ``order``), value gradient (gyᵀ x) sampled at each block's pattern
    (``torch.sparse.sampled_addmm``): work and memory ∝ the connections, never ∝ n_out × n_in.

    The products run on feature-major (features × batch) operands, so y and ∂x are returned as transposed views of
    feature-major results: an elementwise activation keeps that layout and the next layer reads it without a copy."""

    @staticmethod
    def forward(ctx, x, values, crow, col, tcrow, tcol, order, n_out, geometry):
        n_in = tcrow.shape[1] - 1
        xT = x.T.contiguous()
        ctx.save_for_backward(xT, values, crow, col, tcrow, tcol, order)
        ctx.n_out, ctx.geometry = n_out, geometry
        out = torch.empty(n_out, xT.shape[1], dtype=xT.dtype, device=xT.device)
        col_bounds, offsets = geometry[0], geometry[1]
        assert col_bounds[-1] == n_in
        return _blocked_product(out, crow, col, values, offsets, col_bounds, xT).T

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        xT, values, crow, col, tcrow, tcol, order = ctx.saved_tensors
        col_bounds, offsets, row_bounds, t_offsets = ctx.geometry
        gyT = gy.T.contiguous()
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = torch.empty(xT.shape, dtype=gyT.dtype, device=gyT.device)
            gx = _blocked_product(gx, tcrow, tcol, values.index_select(0, order), t_offsets, row_bounds, gyT).T
        if ctx.needs_input_grad[1]:
            pieces = []
            for b in range(len(col_bounds) - 1):
                lo, hi = offsets[b], offsets[b + 1]
                if hi > lo:
                    W = _csr(crow[b], col[lo:hi], values[lo:hi], (ctx.n_out, col_bounds[b + 1] - col_bounds[b]))
                    xb = xT[col_bounds[b]:col_bounds[b + 1]].T
                    pieces.append(torch.sparse.sampled_addmm(W, gyT, xb, beta=0.0).values())
            gv = torch.cat(pieces) if pieces else torch.zeros_like(values)
        return gx, gv, None, None, None, None, None, None, None


class SparseMaskedLinear(nn.Module):
    """y = (M ⊙ W) x + b with a static random mask M, storing only the kept weights: the static-mask SW-MLP layer of
    Hayase & Karakida (ICML 2024, arXiv 2306.01470) at a cost proportional to its connections.

    The same law as :class:`MaskedLinear` — mask modes, initialisation N(0, σ_w²/(p·n_in)) of the kept entries, zero
    bias — but the trainable parameter ``values`` holds exactly the kept weights, one per connection. Storage: the
    columns (inputs) are cut into blocks of about :attr:`BLOCK` features, and each block of M is a CSR matrix
    (buffers ``crow_indices``, one row of row pointers per block, and ``col_indices``, the column within the block;
    ``values`` block after block); likewise Mᵀ by blocks of output rows (``t_crow_indices``, ``t_col_indices``) with
    ``t_order``, the position in ``values`` of each of its entries. A product then reads one block's slice of the
    batch at a time, which stays in cache; the backward pass is the blocked product by Mᵀ and a sampled product
    (``torch.sparse.sampled_addmm``) per block. Indices are int32 when they fit. No tensor of n_out × n_in elements
    is created at any point: masks are drawn in index space and a given sparse mask is read from its indices.

    Masked coordinates do not exist as parameters, so no optimizer can move them. Works on any device where torch
    has sparse CSR products (CPU, CUDA). ``load_state_dict`` accepts a state of another mask of the same shape (the
    index buffers and ``values`` take the stored sizes). Gradients go through ``torch.autograd`` only: the
    functional transforms of ``torch.func`` (vmap, jacrev) do not apply to this layer — use :class:`MaskedLinear`
    (``SWMLP(storage="dense")``) for Jacobians by torch.func.

    Parameters
    ----------
    in_features, out_features : int
        n_in and n_out.
    density : float, default 1.0
        p ∈ (0, 1], the fraction of kept weights.
    bias : bool, default True
        Add a bias b (initialised to 0).
    mask : {"bernoulli", "exact"} or torch.Tensor, default "bernoulli"
        ``"bernoulli"`` — iid Bernoulli(p) entries, drawn block by block as runs of Geometric(p) gaps between kept
        positions (:func:`bernoulli_positions`, the same law); ``"exact"`` — exactly round(p·n_out·n_in) kept
        entries at uniformly random positions (:func:`uniform_subset`); or a 0/1 tensor of shape (out_features,
        in_features), dense or torch-sparse (COO/CSR, its specified entries all 1), whose density is then its mean.
    seed : int, optional
        Seeds the mask and the initialisation.
    sigma_w : float, default 1.0
        Kept weights are N(0, σ_w²/(p·n_in)), as in :class:`MaskedLinear`.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> print(SparseMaskedLinear(64, 32, density=0.25, mask="exact", seed=0).connections)     # 0.25 · 64 · 32
    512

    The sparse twin of a dense-mask layer applies the same map:

    >>> dense = MaskedLinear(8, 4, density=0.5, mask="exact", seed=0)
    >>> sparse = SparseMaskedLinear.from_masked(dense)
    >>> x = torch.randn(5, 8, generator=generator(1))
    >>> print(sparse.connections, torch.allclose(sparse(x), dense(x)))
    16 True
    """

    #: features per block of the stored CSR matrices (a batch of 128 float32 rows of this many features is 1 MiB)
    BLOCK = 2048
    _INDEX_BUFFERS = ("crow_indices", "col_indices", "t_crow_indices", "t_col_indices", "t_order")

    def __init__(self, in_features, out_features, density=1.0, bias=True, mask="bernoulli", seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = int(in_features), int(out_features)
        sigma_w = init_scale("sigma_w", sigma_w)
        n_out, n_in = self.out_features, self.in_features
        g = generator(seed)
        if isinstance(mask, torch.Tensor):
            rows, cols = self._given_mask(mask)
            density = rows.numel() / (n_out * n_in)
        else:
            density = density_value(density)
            if not isinstance(mask, str) or mask not in ("bernoulli", "exact"):
                raise ValueError(f"mask must be 'bernoulli', 'exact' or a 0/1 tensor, got {mask!r}")
            # per kept weight: its value, int64 row and column while drawing, three int32 stored indices at least
            check_parameters("in_features × out_features × density", density * n_out * n_in, device=device,
                             dtype=dtype, scratch=28, what="SparseMaskedLinear's kept weights and their indices",
                             alternative="give a smaller density, in_features or out_features (spectra at such sizes: "
                                         "rmtnet.spectra.sampling.operators.sparse_network with rmtnet.spectra.slq)")
        n_cb = self._blocks(n_in, n_out, density)
        col_bounds = _bounds(n_in, n_cb)
        if mask == "bernoulli":
            # block by block, so that the draws come out in storage order: (block, row, column)
            rows, cols = [], []
            for b in range(n_cb):
                width = col_bounds[b + 1] - col_bounds[b]
                pos = bernoulli_positions(n_out * width, density, g)
                rows.append(pos // width)
                cols.append(pos % width + col_bounds[b])
            rows, cols = torch.cat(rows), torch.cat(cols)
        else:
            if mask == "exact":
                pos = uniform_subset(n_out * n_in, max(1, round(density * n_out * n_in)), g)
                rows, cols = pos // n_in, pos % n_in
                del pos
            block = torch.bucketize(cols, torch.tensor(col_bounds[1:-1], dtype=torch.int64), right=True)
            perm = torch.argsort(block * n_out + rows, stable=True)      # row-major input → (block, row, column)
            rows, cols = rows[perm], cols[perm]
            del perm, block
        self.density, self.sigma_w = float(density), float(sigma_w)
        factory = dict(device=device, dtype=dtype)
        self.values = nn.Parameter(torch.empty(rows.numel(), **factory))
        self.bias = nn.Parameter(torch.zeros(n_out, **factory)) if bias else None
        std = self.sigma_w / math.sqrt(self.density * n_in)
        with torch.no_grad():
            for lo in range(0, rows.numel(), 2 ** 22):       # float64 draws a block at a time, as gaussian_ does
                hi = min(rows.numel(), lo + 2 ** 22)
                self.values[lo:hi] = torch.randn(hi - lo, generator=g, dtype=torch.float64).mul_(std)
            if not bool(torch.isfinite(self.values).all()):
                raise ValueError(f"sigma_w (over √(density·in_features)) gives initial weights of standard deviation "
                                 f"{std!r}, beyond what {self.values.dtype} holds; give a smaller sigma_w")
        for name, t in zip(self._INDEX_BUFFERS, self._pattern(rows, cols, col_bounds)):
            self.register_buffer(name, t.to(self.values.device))

    def _blocks(self, n_in, n_out, density):
        """Column blocks of about BLOCK features, but no more than keep the row pointers below a quarter of the
        expected connections."""
        return max(1, min(-(-n_in // self.BLOCK), int(density * n_in * n_out) // (4 * (n_out + 1))))

    def _given_mask(self, mask):
        shape = (self.out_features, self.in_features)
        if tuple(mask.shape) != shape:
            raise ValueError(f"mask must have shape (out_features, in_features) = {shape}, got {tuple(mask.shape)}")
        if mask.layout == torch.strided:
            if not torch.all((mask == 0) | (mask == 1)):
                raise ValueError("mask must contain only 0 and 1")
            rows, cols = mask.detach().cpu().nonzero(as_tuple=True)
        elif mask.layout in (torch.sparse_coo, torch.sparse_csr):
            coo = (mask.to_sparse_coo() if mask.layout == torch.sparse_csr else mask).detach().cpu().coalesce()
            if not torch.all(coo.values() == 1):
                raise ValueError("a sparse mask must specify only entries equal to 1")
            rows, cols = coo.indices()
        else:
            raise ValueError(f"mask must be a strided, sparse COO or sparse CSR tensor, got layout {mask.layout}")
        if rows.numel() == 0:
            raise ValueError("mask must keep at least one weight")
        return rows, cols            # row-major order (nonzero and coalesce both sort by row, then column)

    def _pattern(self, rows, cols, col_bounds):
        """Blocked CSR of M (crow, col) and of Mᵀ (tcrow, tcol, order) from the kept (rows, cols) in storage order."""
        n_out, n_in, nnz = self.out_features, self.in_features, rows.numel()
        idx = torch.int32 if max(n_out, n_in, nnz) < 2 ** 31 - 1 else torch.int64
        n_cb, n_rb = len(col_bounds) - 1, self._blocks(n_out, n_in, self.density)
        row_bounds = _bounds(n_out, n_rb)
        cb = torch.bucketize(cols, torch.tensor(col_bounds[1:-1], dtype=torch.int64), right=True)
        rb = torch.bucketize(rows, torch.tensor(row_bounds[1:-1], dtype=torch.int64), right=True)
        crow = torch.zeros(n_cb, n_out + 1, dtype=torch.int64)
        crow[:, 1:] = torch.bincount(cb * n_out + rows, minlength=n_cb * n_out).reshape(n_cb, n_out).cumsum(1)
        col = cols - torch.tensor(col_bounds[:-1])[cb]
        # Mᵀ in (row block, column, row) order: stable by (row block, column), since storage has rows ascending
        key = rb * n_in + cols
        order = torch.argsort(key.to(idx) if idx == torch.int32 and n_rb * n_in < 2 ** 31 else key, stable=True)
        tcrow = torch.zeros(n_rb, n_in + 1, dtype=torch.int64)
        tcrow[:, 1:] = torch.bincount(key, minlength=n_rb * n_in).reshape(n_rb, n_in).cumsum(1)
        tcol = (rows - torch.tensor(row_bounds[:-1])[rb])[order]
        return crow.to(idx), col.to(idx), tcrow.to(idx), tcol.to(idx), order.to(idx)

    def _geometry(self):
        """Block edges and the blocks' starts in ``values`` (column blocks of M) and in Mᵀ's order (row blocks)."""
        col_bounds = _bounds(self.in_features, self.crow_indices.shape[0])
        row_bounds = _bounds(self.out_features, self.t_crow_indices.shape[0])
        offsets = [0] + self.crow_indices[:, -1].long().cumsum(0).tolist()
        t_offsets = [0] + self.t_crow_indices[:, -1].long().cumsum(0).tolist()
        return col_bounds, offsets, row_bounds, t_offsets

    @property
    def connections(self):
        """The number of kept weights (nonzeros of M)."""
        return self.values.numel()

    def indices(self):
        """(rows, cols) of the kept weights, int64, in the order of ``values``."""
        col_bounds, offsets, _, _ = self._geometry()
        rows, cols = [], []
        out_range = torch.arange(self.out_features, device=self.values.device)
        for b in range(len(col_bounds) - 1):
            rows.append(torch.repeat_interleave(out_range, self.crow_indices[b].diff().long()))
            cols.append(self.col_indices[offsets[b]:offsets[b + 1]].long() + col_bounds[b])
        return torch.cat(rows), torch.cat(cols)

    def effective_weight(self):
        """M ⊙ W as a dense n_out × n_in tensor (for tests and small layers only)."""
        rows, cols = self.indices()
        dense = torch.zeros(self.out_features, self.in_features, dtype=self.values.dtype, device=self.values.device)
        return dense.index_put((rows, cols), self.values)

    def dense_mask(self):
        """M as a dense 0/1 tensor of the values' dtype (for tests and small layers only)."""
        rows, cols = self.indices()
        dense = torch.zeros(self.out_features, self.in_features, dtype=self.values.dtype, device=self.values.device)
        return dense.index_put_((rows, cols), torch.ones((), dtype=dense.dtype, device=dense.device))

    @classmethod
    def from_masked(cls, layer):
        """The sparse layer with ``layer``'s mask, kept weights and bias (a :class:`MaskedLinear`; for tests and
        conversion of small layers: it reads the dense mask)."""
        out = cls(layer.in_features, layer.out_features, bias=layer.bias is not None, mask=layer.mask,
                  sigma_w=layer.sigma_w, device=layer.weight.device, dtype=layer.weight.dtype)
        rows, cols = out.indices()
        with torch.no_grad():
            out.values.copy_(layer.weight[rows, cols])
            if layer.bias is not None:
                out.bias.copy_(layer.bias)
        out.density = layer.density
        return out

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # another mask of the same shape may keep a different number of weights: take the stored sizes first
        for name in ("values",) + self._INDEX_BUFFERS:
            key = prefix + name
            if key in state_dict and state_dict[key].shape != getattr(self, name).shape:
                new = state_dict[key]
                if name == "values":
                    self.values.data = torch.empty(new.shape, dtype=self.values.dtype, device=self.values.device)
                else:
                    setattr(self, name, torch.empty(new.shape, dtype=new.dtype, device=getattr(self, name).device))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x):
        lead = x.shape[:-1]
        y = _BlockedCSRLinear.apply(x.reshape(-1, self.in_features), self.values, self.crow_indices, self.col_indices,
                                    self.t_crow_indices, self.t_col_indices, self.t_order, self.out_features,
                                    self._geometry())
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*lead, self.out_features)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, density={self.density:.4g}, "
                f"connections={self.connections}, bias={self.bias is not None}")


# --------------------------------------------------------------------------------------------------------------
# Token and channel mixing (MLP-Mixer) and their random-permuted (RP) counterpart

class TokenMixing(nn.Module):
    """X ↦ W X + b 1ᵀ on (…, S_in, C) features: the token-mixing layer, W of shape (S_out, S_in).

    Effective layer on flatten(X): kron(W, I_C) with bias kron(b, 1_C) (density 1/C). W ~ N(0, σ_w²/S_in).

    Parameters
    ----------
    tokens_in, tokens_out : int
        S_in and S_out.
    bias : bool, default True
        Add b (initialised to 0).
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> layer = TokenMixing(3, 4, seed=0)
    >>> X = torch.randn(5, 3, 2, generator=generator(1))
    >>> kron = torch.kron(layer.weight, torch.eye(2))
    >>> flat = X.reshape(5, -1) @ kron.T + torch.kron(layer.bias, torch.ones(2))
    >>> print(tuple(layer(X).shape), torch.allclose(layer(X).reshape(5, -1), flat))
    (5, 4, 2) True
    """

    def __init__(self, tokens_in, tokens_out, bias=True, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(tokens_in=tokens_in, tokens_out=tokens_out)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.tokens_in, self.tokens_out = int(tokens_in), int(tokens_out)
        check_parameters("tokens_in × tokens_out", self.tokens_in * self.tokens_out, device=device, dtype=dtype,
                         what="TokenMixing's dense weight", alternative="give fewer tokens")
        self.weight = nn.Parameter(torch.empty(self.tokens_out, self.tokens_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.tokens_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.tokens_in), generator(seed))

    def forward(self, x):
        # W X + b1ᵀ = (Xᵀ Wᵀ + 1bᵀ)ᵀ: one GEMM with the batch folded in (a broadcast W @ X would be many small ones)
        return F.linear(x.transpose(-1, -2), self.weight, self.bias).transpose(-1, -2)

    def extra_repr(self):
        return f"tokens_in={self.tokens_in}, tokens_out={self.tokens_out}, bias={self.bias is not None}"


class ChannelMixing(nn.Module):
    """X ↦ X Vᵀ + 1 bᵀ on (…, S, C_in) features: the channel-mixing layer, V of shape (C_out, C_in).

    Effective layer on flatten(X): kron(I_S, V) with bias kron(1_S, b) (density 1/S). V ~ N(0, σ_w²/C_in).

    Parameters
    ----------
    channels_in, channels_out : int
        C_in and C_out.
    bias : bool, default True
        Add b (initialised to 0).
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> layer = ChannelMixing(2, 4, seed=0)
    >>> X = torch.randn(5, 3, 2, generator=generator(1))
    >>> kron = torch.kron(torch.eye(3), layer.weight)
    >>> flat = X.reshape(5, -1) @ kron.T + torch.kron(torch.ones(3), layer.bias)
    >>> print(tuple(layer(X).shape), torch.allclose(layer(X).reshape(5, -1), flat))
    (5, 3, 4) True
    """

    def __init__(self, channels_in, channels_out, bias=True, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(channels_in=channels_in, channels_out=channels_out)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.channels_in, self.channels_out = int(channels_in), int(channels_out)
        check_parameters("channels_in × channels_out", self.channels_in * self.channels_out, device=device,
                         dtype=dtype, what="ChannelMixing's dense weight", alternative="give fewer channels")
        self.weight = nn.Parameter(torch.empty(self.channels_out, self.channels_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.channels_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.channels_in), generator(seed))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"channels_in={self.channels_in}, channels_out={self.channels_out}, bias={self.bias is not None}"


class PermutedMixing(nn.Module):
    """x ↦ P_out (I_n ⊗ W) P_in x + b on flat (…, n·d_in) vectors: one weight W (d_out × d_in) shared by n blocks,
    between two fixed permutations (the RP-Mixer of Hayase & Karakida 2024: J_cᵀ(I ⊗ W)J_c with the commutations J_c
    replaced by independent uniform permutations J₁, J₂). Here (P x)[i] = x[perm[i]].

    ``perm_in``/``perm_out``: index tensors, ``"random"`` (uniform, drawn from ``seed``) or None (the identity: no
    gather; two layers around an elementwise activation need only one permutation between them). With
    ``perm_in = commutation(d_in, n)`` and ``perm_out = commutation(n, d_out)`` the layer is exactly token mixing
    kron(W, I_n) on row-major features (d_in tokens × n channels): the RP layer with the commutations put back.
    Its singular values are those of W, each repeated n times, whatever the permutations. The bias b (d_out) is
    added blockwise before P_out, i.e. the effective bias is P_out kron(1_n, b).

    Parameters
    ----------
    n_blocks : int
        n.
    d_in, d_out : int
        W's shape is (d_out, d_in).
    perm_in, perm_out : torch.Tensor, "random" or None, default "random"
        The permutations.
    bias : bool, default True
        Add b (initialised to 0).
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    With the commutations put back the layer is token mixing, kron(W, I_n):

    >>> n, d_in, d_out = 3, 2, 4
    >>> layer = PermutedMixing(n, d_in, d_out, perm_in=commutation(d_in, n), perm_out=commutation(n, d_out),
    ...                        bias=False, seed=0)
    >>> x = torch.randn(5, d_in * n, generator=generator(1))
    >>> print(torch.allclose(layer(x), x @ torch.kron(layer.weight, torch.eye(n)).T))
    True
    """

    def __init__(self, n_blocks, d_in, d_out, perm_in="random", perm_out="random", bias=True, seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(n_blocks=n_blocks, d_in=d_in, d_out=d_out)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.n_blocks, self.d_in, self.d_out = int(n_blocks), int(d_in), int(d_out)
        check_parameters("d_in × d_out", self.d_in * self.d_out + 2 * self.n_blocks * (self.d_in + self.d_out),
                         device=device, dtype=dtype, scratch_numel=self.d_in * self.d_out,
                         what="PermutedMixing's dense weight and permutations",
                         alternative="give smaller d_in, d_out or fewer n_blocks")
        g = generator(seed)
        self.register_buffer("perm_in", self._perm(perm_in, self.n_blocks * self.d_in, g, "perm_in", device))
        self.register_buffer("perm_out", self._perm(perm_out, self.n_blocks * self.d_out, g, "perm_out", device))
        self.weight = nn.Parameter(torch.empty(self.d_out, self.d_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.d_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.d_in), g)

    @staticmethod
    def _perm(perm, n, g, name, device):
        if perm is None:
            return None
        if isinstance(perm, str):
            if perm != "random":
                raise ValueError(f"{name} must be 'random' or an index tensor, got {perm!r}")
            return torch.randperm(n, generator=g).to(device)
        perm = torch.as_tensor(perm, dtype=torch.long)
        if perm.shape != (n,) or not torch.equal(torch.sort(perm).values, torch.arange(n)):
            raise ValueError(f"{name} must be a permutation of range({n})")
        return perm.to(device)

    def forward(self, x):
        lead = x.shape[:-1]
        if self.perm_in is not None:
            x = x.index_select(-1, self.perm_in)
        z = F.linear(x.reshape(*lead, self.n_blocks, self.d_in), self.weight, self.bias)
        z = z.reshape(*lead, self.n_blocks * self.d_out)
        return z if self.perm_out is None else z.index_select(-1, self.perm_out)

    def extra_repr(self):
        return f"n_blocks={self.n_blocks}, d_in={self.d_in}, d_out={self.d_out}, bias={self.bias is not None}"


# --------------------------------------------------------------------------------------------------------------
# Monarch

class MonarchLinear(nn.Module):
    """A Monarch matrix M = Pᵀ L P R (Dao et al. 2022, arXiv 2204.00595) applied to flat vectors, plus a bias.

    With n_in = b·k_in and n_out = b·k_out: R = diag(R_1, …, R_b), blocks k_out × k_in; P the commutation of a
    b × k_out array (row-major), so that L = diag(L_1, …, L_{k_out}), blocks b × b, mixes across the R-blocks; Pᵀ
    restores the order. Square with b = √n gives Dao's √n blocks of size √n. Computed as two batched matmuls; the
    dense n_out × n_in matrix exists only through :meth:`dense` (a reference for tests).

    Without activation a Mixer pair is a Monarch matrix with tied blocks: flatten(W X Vᵀ) for X of shape S×C is
    M x with b = S, R_i = V, L_j = W (``kron(I_S, V)`` then ``kron(W, I_C)``).
    Blocks are N(0, σ_w²/k_in) (R) and N(0, 1/b) (L): each output coordinate has variance σ_w² times the mean
    squared input, as for a dense layer N(0, σ_w²/n_in).

    Parameters
    ----------
    in_features, out_features : int
        n_in and n_out, multiples of ``n_blocks``.
    n_blocks : int
        b.
    bias : bool, default True
        Add a bias (initialised to 0).
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> layer = MonarchLinear(8, 8, n_blocks=2, seed=0)
    >>> x = torch.randn(3, 8, generator=generator(1))
    >>> print(torch.allclose(layer(x), x @ layer.dense().T + layer.bias, atol=1e-6))
    True
    """

    def __init__(self, in_features, out_features, n_blocks, bias=True, seed=None, sigma_w=1.0, device=None,
                 dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(in_features=in_features, out_features=out_features, n_blocks=n_blocks)
        sigma_w = init_scale("sigma_w", sigma_w)
        if in_features % n_blocks or out_features % n_blocks:
            raise ValueError(f"n_blocks = {n_blocks} must divide in_features = {in_features} and "
                             f"out_features = {out_features}")
        self.in_features, self.out_features, self.n_blocks = int(in_features), int(out_features), int(n_blocks)
        b, k_in, k_out = self.n_blocks, self.in_features // n_blocks, self.out_features // n_blocks
        check_parameters("in_features × out_features / n_blocks", b * k_out * k_in + k_out * b * b, device=device,
                         dtype=dtype, scratch_numel=max(b * k_out * k_in, k_out * b * b),
                         what="MonarchLinear's block factors R and L",
                         alternative="give smaller in_features, out_features or more n_blocks")
        g = generator(seed)
        self.R = nn.Parameter(torch.empty(b, k_out, k_in, device=device, dtype=dtype))
        self.L = nn.Parameter(torch.empty(k_out, b, b, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.out_features, device=device, dtype=dtype)) if bias else None
        gaussian_(self.R, sigma_w / math.sqrt(k_in), g)
        gaussian_(self.L, 1.0 / math.sqrt(b), g)

    def forward(self, x):
        lead = x.shape[:-1]
        b = self.n_blocks
        z = x.reshape(-1, b, self.in_features // b).transpose(0, 1)     # (b, batch, k_in)
        z = torch.bmm(z, self.R.transpose(1, 2))                          # R: (b, batch, k_out)
        z = z.permute(2, 1, 0)                                            # P: (k_out, batch, b)
        z = torch.bmm(z, self.L.transpose(1, 2))                          # L: (k_out, batch, b)
        y = z.permute(1, 2, 0).reshape(*lead, self.out_features)          # Pᵀ: back to (batch, b, k_out)
        return y if self.bias is None else y + self.bias

    def dense(self):
        """The n_out × n_in matrix Pᵀ L P R, built densely (for tests and small n only)."""
        b, k_out = self.n_blocks, self.out_features // self.n_blocks
        P = torch.eye(self.out_features, dtype=self.R.dtype, device=self.R.device)[commutation(b, k_out)]
        return P.T @ torch.block_diag(*self.L) @ P @ torch.block_diag(*self.R)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, n_blocks={self.n_blocks}, "
                f"bias={self.bias is not None}")


# --------------------------------------------------------------------------------------------------------------
# Ensemble Mask Networks (Luntzel 2023, arXiv 2309.06382)

class AdjacencyLinear(nn.Module):
    """The EMN layer: h = (Â ⊙ W) x per sample, where Â masks and scales W by the sample's adjacency A (Luntzel 2023,
    arXiv 2309.06382, §2).

    Nodes are n input nodes, each carried by a cluster of c copies: the input has n·c_in features ordered node-major
    (feature i·c_in + l is copy l of node i), the output n·c_out. The mask is Â = kron(A, 1_{c_out×c_in}): copy k of
    node i receives copy l of node j through W[(i,k),(j,l)] scaled by A_ij — edges j → i weighted by A_ij ∈ [0, 1],
    directed, self-loops allowed. ``self_loops=True`` uses A + I (Luntzel 2023, Fig. 5: with a second, sequential
    adjacency layer it gives A x + A² x). With A = all ones the layer is an ordinary dense linear layer.
    Computed as one einsum over A, never as a per-sample dense mask.

    Parameters
    ----------
    n_nodes : int
        n.
    copies_in, copies_out : int, default 1
        c_in and c_out.
    bias : bool, default False
        Add a bias (initialised to 0).
    self_loops : bool, default False
        Use A + I.
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    With A all ones the layer is dense:

    >>> layer = AdjacencyLinear(3, copies_in=2, copies_out=2, seed=0)
    >>> x, A = torch.randn(4, 6, generator=generator(1)), torch.ones(4, 3, 3)
    >>> print(torch.allclose(layer(x, A), x @ layer.weight.T, atol=1e-6))
    True
    """

    def __init__(self, n_nodes, copies_in=1, copies_out=1, bias=False, self_loops=False, seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        bias, self_loops = boolean("bias", bias), boolean("self_loops", self_loops)
        positive_integers(n_nodes=n_nodes, copies_in=copies_in, copies_out=copies_out)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.n, self.c_in, self.c_out, self.self_loops = int(n_nodes), int(copies_in), int(copies_out), bool(self_loops)
        check_parameters("n_nodes", self.n ** 2 * self.c_out * self.c_in, device=device, dtype=dtype,
                         what="AdjacencyLinear's dense (n_nodes·copies_out) × (n_nodes·copies_in) weight",
                         alternative="give fewer n_nodes or copies")
        self.weight = nn.Parameter(torch.empty(self.n * self.c_out, self.n * self.c_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.n * self.c_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.n * self.c_in), generator(seed))

    def forward(self, x, A):
        n = self.n
        if A.shape[-2:] != (n, n):
            raise ValueError(f"A must have shape (…, {n}, {n}), got {tuple(A.shape)}")
        if self.self_loops:
            A = A + torch.eye(n, dtype=A.dtype, device=A.device)
        W = self.weight.reshape(n, self.c_out, n, self.c_in)
        h = torch.einsum("...ij,ikjl,...jl->...ik", A, W, x.reshape(*x.shape[:-1], n, self.c_in))
        h = h.reshape(*h.shape[:-2], n * self.c_out)
        return h if self.bias is None else h + self.bias

    def extra_repr(self):
        return (f"n_nodes={self.n}, copies_in={self.c_in}, copies_out={self.c_out}, self_loops={self.self_loops}, "
                f"bias={self.bias is not None}")


class ClusterLinear(nn.Module):
    """An EMN hidden layer pruned to respect node identity (Luntzel 2023, §2): copy k of node i's cluster receives only
    from the c_in copies of the same node i, W_i of shape (c_out, c_in) — the block-diagonal matrix diag(W_1, …, W_n),
    applied as one batched matmul.

    Parameters
    ----------
    n_nodes : int
        n.
    copies_in, copies_out : int
        c_in and c_out.
    bias : bool, default False
        Add a bias (initialised to 0).
    seed : int, optional
        Seeds the initialisation (None: from torch's global generator).
    sigma_w : float, default 1.0
        The weight scale σ_w.
    device, dtype : optional
        Where and in what dtype the parameters live.

    Examples
    --------
    >>> layer = ClusterLinear(3, 2, 2, seed=0)
    >>> x = torch.randn(4, 6, generator=generator(1))
    >>> print(torch.allclose(layer(x), x @ torch.block_diag(*layer.weight).T, atol=1e-6))
    True
    """

    def __init__(self, n_nodes, copies_in, copies_out, bias=False, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        bias = boolean("bias", bias)
        positive_integers(n_nodes=n_nodes, copies_in=copies_in, copies_out=copies_out)
        sigma_w = init_scale("sigma_w", sigma_w)
        self.n, self.c_in, self.c_out = int(n_nodes), int(copies_in), int(copies_out)
        check_parameters("n_nodes × copies_in × copies_out", self.n * self.c_out * self.c_in, device=device,
                         dtype=dtype, what="ClusterLinear's weights", alternative="give fewer n_nodes or copies")
        self.weight = nn.Parameter(torch.empty(self.n, self.c_out, self.c_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.n * self.c_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.c_in), generator(seed))

    def forward(self, x):
        z = x.reshape(*x.shape[:-1], self.n, self.c_in)
        h = torch.einsum("ikl,...il->...ik", self.weight, z).reshape(*x.shape[:-1], self.n * self.c_out)
        return h if self.bias is None else h + self.bias

    def extra_repr(self):
        return f"n_nodes={self.n}, copies_in={self.c_in}, copies_out={self.c_out}, bias={self.bias is not None}"
