"""Layers of the trained models: static masks, token/channel mixing, permuted mixing, Monarch and the EMN layer.

Conventions (Hayase & Karakida, "Understanding MLP-Mixer as a Wide and Sparse MLP", ICML 2024, arXiv 2306.01470).
Features of a Mixer-type model are S×C matrices X (S tokens, C channels), batched as (…, S, C). Their **row-major**
flattening x = flatten(X), x[s·C + c] = X[s, c], is the effective MLP's input; then

    flatten(A X B) = kron(A, Bᵀ) flatten(X),

so token mixing X ↦ W X is the layer kron(W, I_C) (density 1/C) and channel mixing X ↦ X Vᵀ is kron(I_S, V)
(density 1/S): an MLP of effective width m = S·C with very sparse weights. Hayase & Karakida write the same identities
for the column-major vec, vec(W X V) = (Vᵀ ⊗ W) vec(X); the two differ by the commutation permutation
(:func:`commutation`).

No layer here builds a Kronecker product or a dense m×m mask: mixing is a matmul on one axis, RP mixing an index
gather and a batched matmul, Monarch two batched matmuls, the EMN layer one einsum over the per-sample adjacency.
Weights are initialised N(0, σ_w²/fan_in) with fan_in the number of *nonzero* inputs of a row (so a masked layer of
density p uses σ_w²/(p·n_in)), biases at 0: the scaling under which the limit laws of :mod:`rmtnet.spectra` apply.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rmtnet.spectra._checks import positive_integers


def generator(seed, device=None):
    """A torch.Generator seeded with ``seed`` (None: from torch's global RNG, so torch.manual_seed governs it)."""
    g = torch.Generator(device=device or "cpu")
    g.manual_seed(int(torch.randint(2 ** 62, (1,)).item()) if seed is None else int(seed))
    return g


def gaussian_(tensor, std, generator):
    """Fill ``tensor`` in place with N(0, std²) draws from ``generator`` (drawn on the CPU, so the same seed gives the
    same weights on every device)."""
    with torch.no_grad():
        tensor.copy_(torch.randn(tensor.shape, generator=generator, dtype=torch.float64).mul_(std))
    return tensor


def commutation(rows, cols, device=None):
    """Indices of the commutation permutation K of an rows×cols matrix in row-major order: for X of that shape,
    ``flatten(X)[..., K] == flatten(Xᵀ)`` (the commutation matrix J_c of Hayase & Karakida 2024,
    J_c vec(X) = vec(Xᵀ), in row-major form)."""
    positive_integers(rows=rows, cols=cols)
    return torch.arange(rows * cols, device=device).reshape(rows, cols).T.reshape(-1)


# --------------------------------------------------------------------------------------------------------------
# Static sparse masks (SW-MLP)

class MaskedLinear(nn.Module):
    """y = (M ⊙ W) x + b with a static 0/1 mask M (the static-mask SW-MLP layer of Hayase & Karakida 2024:
    W replaced by M ⊙ W).

    Parameters
    ----------
    density : p ∈ (0, 1], the fraction of kept weights.
    mask : ``"bernoulli"`` (iid Bernoulli(p) entries), ``"exact"`` (exactly round(p·n_out·n_in) kept entries at
        uniformly random positions) or a 0/1 tensor of shape (out_features, in_features) (then ``density`` is its mean).
    sigma_w : kept weights are N(0, σ_w²/(p·n_in)), so each row has input variance σ_w² (times the input's), as for a
        dense layer; for p·n_in ≫ log n_in the singular values of M ⊙ W then follow Marchenko–Pastur with ratio
        n_out/n_in, largest → c_γ = 1 + √(n_out/n_in).

    The mask is a registered buffer (it follows ``.to()``, ``state_dict``, ``deepcopy``) and ``weight`` is stored with
    exact zeros at masked coordinates. The forward pass uses ``weight * mask``, so masked coordinates receive exactly
    zero gradient; an optimizer step whose update is a function of (gradient, weight) — SGD with momentum, Adam(W) with
    weight decay — then leaves them exactly 0. ``enforce_mask()`` re-zeroes them for optimizers that would not.
    """

    def __init__(self, in_features, out_features, density=1.0, bias=True, mask="bernoulli", seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        positive_integers(in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = int(in_features), int(out_features)
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
            if not 0.0 < density <= 1.0:
                raise ValueError(f"density must lie in (0, 1], got {density!r}")
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
        gaussian_(self.weight, self.sigma_w / math.sqrt(self.density * self.in_features), g)
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


# --------------------------------------------------------------------------------------------------------------
# Token and channel mixing (MLP-Mixer) and their random-permuted (RP) counterpart

class TokenMixing(nn.Module):
    """X ↦ W X + b 1ᵀ on (…, S_in, C) features: the token-mixing layer, W of shape (S_out, S_in).

    Effective layer on flatten(X): kron(W, I_C) with bias kron(b, 1_C) (density 1/C). W ~ N(0, σ_w²/S_in)."""

    def __init__(self, tokens_in, tokens_out, bias=True, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        positive_integers(tokens_in=tokens_in, tokens_out=tokens_out)
        self.tokens_in, self.tokens_out = int(tokens_in), int(tokens_out)
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

    Effective layer on flatten(X): kron(I_S, V) with bias kron(1_S, b) (density 1/S). V ~ N(0, σ_w²/C_in)."""

    def __init__(self, channels_in, channels_out, bias=True, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        positive_integers(channels_in=channels_in, channels_out=channels_out)
        self.channels_in, self.channels_out = int(channels_in), int(channels_out)
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
    added blockwise before P_out, i.e. the effective bias is P_out kron(1_n, b)."""

    def __init__(self, n_blocks, d_in, d_out, perm_in="random", perm_out="random", bias=True, seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        positive_integers(n_blocks=n_blocks, d_in=d_in, d_out=d_out)
        self.n_blocks, self.d_in, self.d_out = int(n_blocks), int(d_in), int(d_out)
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
    """

    def __init__(self, in_features, out_features, n_blocks, bias=True, seed=None, sigma_w=1.0, device=None,
                 dtype=None):
        super().__init__()
        positive_integers(in_features=in_features, out_features=out_features, n_blocks=n_blocks)
        if in_features % n_blocks or out_features % n_blocks:
            raise ValueError(f"n_blocks = {n_blocks} must divide in_features = {in_features} and "
                             f"out_features = {out_features}")
        self.in_features, self.out_features, self.n_blocks = int(in_features), int(out_features), int(n_blocks)
        b, k_in, k_out = self.n_blocks, self.in_features // n_blocks, self.out_features // n_blocks
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
    """

    def __init__(self, n_nodes, copies_in=1, copies_out=1, bias=False, self_loops=False, seed=None, sigma_w=1.0,
                 device=None, dtype=None):
        super().__init__()
        positive_integers(n_nodes=n_nodes, copies_in=copies_in, copies_out=copies_out)
        self.n, self.c_in, self.c_out, self.self_loops = int(n_nodes), int(copies_in), int(copies_out), bool(self_loops)
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
    applied as one batched matmul."""

    def __init__(self, n_nodes, copies_in, copies_out, bias=False, seed=None, sigma_w=1.0, device=None, dtype=None):
        super().__init__()
        positive_integers(n_nodes=n_nodes, copies_in=copies_in, copies_out=copies_out)
        self.n, self.c_in, self.c_out = int(n_nodes), int(copies_in), int(copies_out)
        self.weight = nn.Parameter(torch.empty(self.n, self.c_out, self.c_in, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(self.n * self.c_out, device=device, dtype=dtype)) if bias else None
        gaussian_(self.weight, sigma_w / math.sqrt(self.c_in), generator(seed))

    def forward(self, x):
        z = x.reshape(*x.shape[:-1], self.n, self.c_in)
        h = torch.einsum("ikl,...il->...ik", self.weight, z).reshape(*x.shape[:-1], self.n * self.c_out)
        return h if self.bias is None else h + self.bias

    def extra_repr(self):
        return f"n_nodes={self.n}, copies_in={self.c_in}, copies_out={self.c_out}, bias={self.bias is not None}"
