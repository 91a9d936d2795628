"""rmtnet.nets layers and models: the Kronecker identities of REFERENCE §3, Mixer = effective sparse MLP, RP with
commutations = Mixer, Monarch's batched path = its dense reference, static-mask invariants, the EMN layer."""
import copy

import numpy as np
import pytest
import torch

from rmtnet import plot
from rmtnet.nets.layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, MonarchLinear,
                                PermutedMixing, SparseMaskedLinear, TokenMixing, bernoulli_positions, commutation,
                                uniform_subset)
from rmtnet.nets.models import EMN, MLP, MLPMixer, MonarchMLP, RPMixer, SWMLP
from rmtnet.spectra import mixer

F64 = torch.float64
pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _vec(X):
    """Column-major vec (seed 004): vec(X)[(j−1)S + i] = X_ij."""
    return X.T.reshape(-1)


def test_kronecker_identities_row_and_column_major():
    """flatten(A X B) = kron(A, Bᵀ) flatten(X) (row-major) and vec(A X B) = (Bᵀ ⊗ A) vec(X) (column-major), 1e-12."""
    g = torch.Generator().manual_seed(0)
    A, X, B = (torch.randn(*s, generator=g, dtype=F64) for s in [(5, 4), (4, 3), (3, 6)])
    Y = A @ X @ B
    assert torch.allclose(torch.kron(A, B.T.contiguous()) @ X.reshape(-1), Y.reshape(-1), rtol=0, atol=1e-12)
    assert torch.allclose(torch.kron(B.T.contiguous(), A) @ _vec(X), _vec(Y), rtol=0, atol=1e-12)
    # the commutation permutation turns one into the other: flatten(Xᵀ) = vec(X)
    assert torch.equal(X.reshape(-1)[commutation(4, 3)], _vec(X))


def _kron_token(layer, C):
    """Dense effective matrix and bias of TokenMixing on row-major (S, C) features: kron(W, I_C), kron(b, 1_C)."""
    return torch.kron(layer.weight, torch.eye(C, dtype=F64)), torch.kron(layer.bias, torch.ones(C, dtype=F64))


def _kron_channel(layer, S):
    """Dense effective matrix and bias of ChannelMixing: kron(I_S, V), kron(1_S, b)."""
    return torch.kron(torch.eye(S, dtype=F64), layer.weight), torch.kron(torch.ones(S, dtype=F64), layer.bias)


def _sw_from_mixer(mixer_model, activation):
    """The effective SW-MLP of a Mixer, built from the dense Kronecker factors (tests only): an SWMLP whose every
    MaskedLinear holds kron(…) as weight and its nonzero pattern as mask."""
    S, C = mixer_model.tokens, mixer_model.channels
    norm = isinstance(mixer_model.norm, torch.nn.LayerNorm)
    sw = SWMLP(S, mixer_model.in_channels, C, len(mixer_model.blocks) // 2, mixer_model.head.out_features,
               gamma=mixer_model.gamma, activation=activation, norm=norm, dtype=F64, seed=1)
    sw.load_state_dict({k: v for k, v in mixer_model.state_dict().items() if not k.startswith("blocks")}, strict=False)
    densities = []
    for blk_m, blk_s in zip(mixer_model.blocks, sw.blocks):
        blk_s.norm.load_state_dict(blk_m.norm.state_dict())
        for name in ("layer1", "layer2"):
            src, dst = getattr(blk_m.f, name), getattr(blk_s.f, name)
            K, b = _kron_token(src, C) if isinstance(src, TokenMixing) else _kron_channel(src, S)
            pattern = (_kron_token(TokenMixing(src.tokens_in, src.tokens_out), C)[0] != 0
                       if isinstance(src, TokenMixing) else
                       _kron_channel(ChannelMixing(src.channels_in, src.channels_out), S)[0] != 0)
            with torch.no_grad():
                dst.mask.copy_(pattern.to(F64))
                dst.weight.copy_(K)
                dst.bias.copy_(b)
            densities.append((type(src).__name__, float(dst.mask.mean())))
    return sw, densities


@pytest.mark.parametrize("activation", ["gelu", "linear"])
@pytest.mark.parametrize("norm", [True, False])
def test_mixer_equals_its_effective_sparse_mlp(activation, norm):
    """A Mixer (two blocks, LayerNorm, residuals) = the SW-MLP built from its dense Kronecker factors (1e-10), with
    and without activation; the effective masks have densities exactly 1/C (token) and 1/S (channel)."""
    S, C, C_in = 6, 5, 7
    mix = MLPMixer(S, C_in, C, depth=2, n_classes=3, gamma=2.0, activation=activation, norm=norm, seed=0, dtype=F64)
    with torch.no_grad():        # nonzero biases and non-trivial LayerNorm affine parameters, so they are tested too
        for p in mix.parameters():
            if p.ndim == 1:
                p.add_(0.3 * torch.randn(p.shape, dtype=F64, generator=torch.Generator().manual_seed(p.numel())))
    sw, dens = _sw_from_mixer(mix, activation)
    x = torch.randn(4, S, C_in, dtype=F64, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(sw.features(x), mix.features(x), rtol=0, atol=1e-10)
    assert torch.allclose(sw(x), mix(x), rtol=0, atol=1e-10)
    for kind, d in dens:
        assert d == (1.0 / C if kind == "TokenMixing" else 1.0 / S), (kind, d)


def test_rp_with_commutations_is_the_mixer_and_random_rp_is_not():
    S, C = 6, 5
    x = torch.randn(3, S, 4, dtype=F64, generator=torch.Generator().manual_seed(0))
    mix = MLPMixer(S, 4, C, 2, 3, seed=7, dtype=F64)
    rp_c = RPMixer(S, 4, C, 2, 3, permutations="commutation", seed=7, dtype=F64)
    rp_r = RPMixer(S, 4, C, 2, 3, permutations="random", seed=7, dtype=F64)
    assert torch.allclose(rp_c(x), mix(x), rtol=0, atol=1e-12)
    assert (rp_r(x) - mix(x)).abs().max() > 1e-3


def test_permuted_mixing_singular_values_are_the_weights_repeated():
    """P_out (I_n ⊗ W) P_in has W's singular values, each n times (whatever the permutations):
    mixer.kronecker_singular_values against the dense matrix of the layer (tests only)."""
    layer = PermutedMixing(4, 5, 7, bias=False, seed=3, dtype=F64)
    dense = layer(torch.eye(20, dtype=F64)).detach().T                      # columns: images of the basis vectors
    sv = torch.linalg.svdvals(dense).numpy()
    ref = mixer.kronecker_singular_values(layer.weight.detach().numpy(), 4)
    np.testing.assert_allclose(np.sort(sv), np.sort(ref), rtol=0, atol=1e-12)


def test_monarch_batched_path_equals_dense_reference():
    for n_in, n_out, b in [(16, 16, 4), (12, 24, 3), (30, 10, 5)]:
        layer = MonarchLinear(n_in, n_out, b, seed=0, dtype=F64)
        with torch.no_grad():
            layer.bias.normal_(generator=torch.Generator().manual_seed(1))
        x = torch.randn(5, n_in, dtype=F64, generator=torch.Generator().manual_seed(2))
        assert torch.allclose(layer(x), x @ layer.dense().T + layer.bias, rtol=0, atol=1e-10)


def test_monarch_with_tied_blocks_is_a_linear_mixer_pair():
    """flatten(W X Vᵀ) = M flatten(X) for the Monarch matrix with R-blocks all V (b = S) and L-blocks all W."""
    S, C = 4, 6
    g = torch.Generator().manual_seed(0)
    W, V, X = torch.randn(S, S, generator=g, dtype=F64), torch.randn(C, C, generator=g, dtype=F64), \
        torch.randn(S, C, generator=g, dtype=F64)
    layer = MonarchLinear(S * C, S * C, S, bias=False, dtype=F64)
    with torch.no_grad():
        layer.R.copy_(V.expand(S, C, C))
        layer.L.copy_(W.expand(C, S, S))
    assert torch.allclose(layer(X.reshape(-1)), (W @ X @ V.T).reshape(-1), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------------------------------------------
# Static masks

def _masked_net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(MaskedLinear(30, 40, density=0.2, seed=1), torch.nn.Tanh(),
                               MaskedLinear(40, 5, density=0.3, mask="exact", seed=2))


@pytest.mark.parametrize("opt", ["sgd_momentum", "adamw_decay"])
def test_masked_weights_never_change_under_optimizers(opt):
    net = _masked_net()
    masks = [m.mask.clone() for m in net if isinstance(m, MaskedLinear)]
    before = [m.weight.detach().clone() for m in net if isinstance(m, MaskedLinear)]
    optim = (torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3) if opt == "sgd_momentum"
             else torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.1))
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        x, y = torch.randn(16, 30, generator=g), torch.randn(16, 5, generator=g)
        optim.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        optim.step()
    for layer, m, w0 in zip([m for m in net if isinstance(m, MaskedLinear)], masks, before):
        assert torch.equal(layer.mask, m)
        assert torch.all(layer.weight[m == 0] == 0)                 # exactly zero, every step
        assert not torch.allclose(layer.weight[m == 1], w0[m == 1])  # the kept weights did train


def test_mask_survives_state_dict_to_and_deepcopy():
    net = _masked_net()
    layer = net[0]
    assert "mask" in layer.state_dict()
    clone = _masked_net(seed=5)
    clone[0] = MaskedLinear(30, 40, density=0.9, seed=99)            # a different mask before loading
    clone.load_state_dict(net.state_dict())
    assert torch.equal(clone[0].mask, layer.mask)
    moved = copy.deepcopy(net).to(F64)
    assert moved[0].mask.dtype == F64 and torch.equal(moved[0].mask, layer.mask.to(F64))
    dc = copy.deepcopy(net)
    assert torch.equal(dc[0].mask, layer.mask) and dc[0].mask.data_ptr() != layer.mask.data_ptr()
    x = torch.randn(3, 30)
    assert torch.allclose(dc(x), net(x))


def test_mask_kinds_and_bad_input():
    exact = MaskedLinear(50, 40, density=0.25, mask="exact", seed=0)
    assert int(exact.mask.sum()) == 500
    bern = MaskedLinear(200, 200, density=0.25, seed=0)
    assert abs(float(bern.mask.mean()) - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 40000)
    # kept weights have variance σ²/(p·n_in): sample variance within 3 standard errors (kurtosis 3: var of s² = 2σ⁴/k)
    w = bern.weight.detach()[bern.mask == 1].double()
    target = 1.0 / (bern.density * 200)
    assert abs(float(w.var()) - target) < 3 * target * np.sqrt(2.0 / w.numel())


@pytest.mark.parametrize("layer", [MaskedLinear, SparseMaskedLinear])
@pytest.mark.parametrize("args, kwargs, message", [
    ((3, 3), dict(density=0.0), "density"),
    ((3, 3), dict(density=1.5), "density"),
    ((3, 3), dict(mask="dense"), "mask"),
    ((3, 3), dict(mask=torch.ones(2, 3)), "shape"),
    ((3, 3), dict(mask=torch.full((3, 3), 0.5)), "only 0 and 1"),
    ((3, 3), dict(mask=torch.zeros(3, 3)), "at least one"),
    ((0, 3), dict(), "in_features"),
])
def test_masked_layers_refuse_the_same_bad_input(layer, args, kwargs, message):
    """The dense-mask and the sparse static-mask layer share one contract for their arguments."""
    with pytest.raises(ValueError, match=message):
        layer(*args, **kwargs)


def test_sparse_layer_singular_values_follow_marchenko_pastur():
    """SW-MLP layer at initialisation, m = 2048, p = 1/32 (p·m/log m = 8.4): eigenvalues of (M⊙W)(M⊙W)ᵀ against
    MarchenkoPastur(1), KS < 0.03 (squared singular values, so the KS is that of the singular values)."""
    m = 2048
    layer = MaskedLinear(m, m, density=1 / 32, bias=False, seed=0, dtype=F64)
    assert mixer.mp_regime(1 / 32, m) > 8
    w = layer.effective_weight().detach().numpy()
    ks = plot.ks_distance(mixer.sparse_weight_law(m, m), np.linalg.eigvalsh(w @ w.T))
    assert ks < 0.03, ks


# ----------------------------------------------------------------------------------------------------------------
# Static masks stored sparse

def _dense_and_sparse(dtype, n_in=60, n_out=80, density=0.1, seed=1):
    """A MaskedLinear with a nonzero bias and the SparseMaskedLinear holding the same mask, kept weights and bias."""
    dense = MaskedLinear(n_in, n_out, density=density, seed=seed, dtype=dtype)
    with torch.no_grad():
        dense.bias.copy_(torch.randn(n_out, generator=torch.Generator().manual_seed(seed), dtype=dtype))
    return dense, SparseMaskedLinear.from_masked(dense)


@pytest.mark.parametrize("dtype, rel", [(torch.float32, 1e-6), (F64, 1e-14)])
@pytest.mark.parametrize("block", [None, 16])
def test_sparse_layer_equals_dense_masked_layer(dtype, rel, block, monkeypatch):
    """Same mask, kept weights and bias: outputs and gradients w.r.t. the input, the kept weights and the bias agree
    to ``rel`` times the largest entry (float32: 1e-6; float64: 1e-14), on (batch, tokens, features) inputs — stored
    as one CSR block, and (``BLOCK = 16``) as 4 column blocks of M and 5 row blocks of Mᵀ."""
    if block is not None:
        monkeypatch.setattr(SparseMaskedLinear, "BLOCK", block)
    dense, sparse = _dense_and_sparse(dtype, density=0.1 if block is None else 0.5)
    blocks = (sparse.crow_indices.shape[0], sparse.t_crow_indices.shape[0])
    assert blocks == ((1, 1) if block is None else (4, 5))
    rows, cols = sparse.indices()
    assert sparse.connections == int(dense.mask.sum()) and torch.equal(sparse.dense_mask(), dense.mask)
    assert torch.equal(sparse.effective_weight(), dense.effective_weight())
    g = torch.Generator().manual_seed(3)
    x = torch.randn(9, 3, 60, generator=g, dtype=dtype, requires_grad=True)
    y_d, y_s = dense(x), sparse(x)
    w = torch.randn(y_d.shape, generator=g, dtype=dtype)
    gx_d, gw_d, gb_d = torch.autograd.grad(y_d, (x, dense.weight, dense.bias), w)
    gx_s, gv_s, gb_s = torch.autograd.grad(y_s, (x, sparse.values, sparse.bias), w)
    assert gv_s.shape == (sparse.connections,)
    for got, ref in [(y_s, y_d), (gx_s, gx_d), (gv_s, gw_d[rows, cols]), (gb_s, gb_d)]:
        assert got.shape == ref.shape and got.dtype == dtype
        assert (got - ref).abs().max() <= rel * ref.abs().max(), float((got - ref).abs().max() / ref.abs().max())
    assert torch.all(gw_d[dense.mask == 0] == 0)       # masked gradients of the dense layer: nothing the sparse lacks


@pytest.mark.parametrize("opt", ["sgd_momentum", "adamw_decay"])
def test_sparse_and_dense_masked_layers_train_alike(opt):
    """20 optimizer steps (float64) from the same mask and weights: the sparse layer's values follow the dense layer's
    kept weights to 1e-12, and the dense layer's masked weights stay exactly 0."""
    dense, sparse = _dense_and_sparse(F64, 30, 20, density=0.3)
    make = ((lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3)) if opt == "sgd_momentum" else
            (lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1)))
    opt_d, opt_s = make(dense.parameters()), make(sparse.parameters())
    g = torch.Generator().manual_seed(0)
    v0 = sparse.values.detach().clone()
    for _ in range(20):
        x, y = torch.randn(16, 30, generator=g, dtype=F64), torch.randn(16, 20, generator=g, dtype=F64)
        for layer, o in ((dense, opt_d), (sparse, opt_s)):
            o.zero_grad()
            torch.nn.functional.mse_loss(torch.tanh(layer(x)), y).backward()
            o.step()
    rows, cols = sparse.indices()
    assert torch.all(dense.weight[dense.mask == 0] == 0)
    assert (sparse.values - dense.weight[rows, cols]).abs().max() < 1e-12
    assert (sparse.values - v0).abs().max() > 1e-2                      # they did train


def test_sparse_layer_stores_only_connections_and_indices():
    """m = 2¹⁶ (a dense mask would hold 2³² elements, 16 GiB in float32): parameters are the kept weights and the
    bias, buffers the int32 CSR indices of M and Mᵀ; building it and a forward/backward pass allocate no tensor
    beyond 64 MiB (torch profiler). With blocks (m = 2¹⁴, p = 1/128): 8 column blocks of M, 8 row blocks of Mᵀ,
    their row pointers within a quarter of the connections."""
    from torch.profiler import ProfilerActivity, profile
    m = 2 ** 16
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        layer = SparseMaskedLinear(m, m, density=2.0 ** -13, seed=0)
        x = torch.randn(4, m, requires_grad=True)
        layer(x).square().sum().backward()
    nnz = layer.connections
    assert abs(nnz - m * m * 2.0 ** -13) < 5 * np.sqrt(m * m * 2.0 ** -13)          # Binomial(m², p) count
    params = {n: t.numel() for n, t in layer.named_parameters()}
    buffers = {n: (t.numel(), t.dtype) for n, t in layer.named_buffers()}
    assert params == {"values": nnz, "bias": m}
    assert buffers == {"crow_indices": (m + 1, torch.int32), "col_indices": (nnz, torch.int32),
                       "t_crow_indices": (m + 1, torch.int32), "t_col_indices": (nnz, torch.int32),
                       "t_order": (nnz, torch.int32)}        # one block each: 2¹⁶ + 1 row pointers ≥ nnz/4 already
    stored = sum(params.values()) + sum(n for n, _ in buffers.values())
    assert stored == 4 * nnz + 3 * m + 2                  # connections + their index storage (+ bias, row pointers)
    assert layer.values.grad.shape == (nnz,) and x.grad.shape == (4, m)
    largest = max(e.cpu_memory_usage for e in prof.events())
    assert largest < 64 * 2 ** 20, largest
    blocked = SparseMaskedLinear(2 ** 14, 2 ** 14, density=1 / 128, seed=0)
    pointers = blocked.crow_indices.numel() + blocked.t_crow_indices.numel()
    assert blocked.crow_indices.shape == blocked.t_crow_indices.shape == (8, 2 ** 14 + 1)
    assert pointers <= blocked.connections / 2


def test_uniform_subset_is_uniform():
    """Every 3-subset of range(6) equally likely (χ² over the 20 subsets, 4000 draws, below the 1e-4 quantile 50.8 of
    χ²₁₉), both through the rejection rounds (k ≤ n/2) and the complement (k > n/2); sorted, distinct, in range."""
    from itertools import combinations
    from scipy.stats import chi2
    g = torch.Generator().manual_seed(0)
    for k in (3, 4):
        subsets = {c: 0 for c in combinations(range(6), k)}
        for _ in range(4000):
            s = uniform_subset(6, k, g)
            subsets[tuple(s.tolist())] += 1
        counts = np.array(list(subsets.values()))
        expected = 4000 / len(counts)
        stat = float(((counts - expected) ** 2 / expected).sum())
        assert stat < chi2.isf(1e-4, len(counts) - 1), (k, stat)
    big = uniform_subset(2 ** 40, 1000, g)
    assert big.numel() == 1000 and torch.all(big[1:] > big[:-1]) and 0 <= int(big[0]) and int(big[-1]) < 2 ** 40
    assert torch.equal(uniform_subset(5, 5, g), torch.arange(5)) and uniform_subset(5, 0, g).numel() == 0
    with pytest.raises(ValueError, match="k must"):
        uniform_subset(5, 6, g)
    # Bernoulli positions by geometric gaps: sorted, distinct, in range, a Binomial(n, p) count (5 sd)
    pos = bernoulli_positions(2 ** 40, 2.0 ** -30, g)
    assert torch.all(pos[1:] > pos[:-1]) and 0 <= int(pos[0]) and int(pos[-1]) < 2 ** 40
    assert abs(pos.numel() - 1024) < 5 * 32
    assert torch.equal(bernoulli_positions(5, 1.0, g), torch.arange(5))
    with pytest.raises(ValueError, match="p must"):
        bernoulli_positions(5, 0.0, g)


def test_sparse_mask_law_matches_masked_linear():
    """The law of MaskedLinear without its dense draws. Bernoulli: the count over 400 layers of 30 × 40 at p = 0.2
    has mean N·p and variance N·p(1 − p) (within 4 standard errors) and every cell is kept with frequency p (within
    4.5 standard errors, 1200 cells); exact: exactly round(p·N) distinct cells; kept weights N(0, σ²/(p·n_in)) (sample
    variance within 3 standard errors)."""
    p, N, reps = 0.2, 1200, 400
    counts, freq = [], torch.zeros(40, 30, dtype=F64)
    for seed in range(reps):
        layer = SparseMaskedLinear(30, 40, density=p, seed=seed, dtype=F64)
        counts.append(layer.connections)
        freq += layer.dense_mask()
    counts = np.array(counts, dtype=float)
    mean, var = N * p, N * p * (1 - p)
    assert abs(counts.mean() - mean) < 4 * np.sqrt(var / reps)
    assert abs(counts.var(ddof=1) - var) < 4 * var * np.sqrt(2 / (reps - 1))
    assert float((freq / reps - p).abs().max()) < 4.5 * np.sqrt(p * (1 - p) / reps)
    exact = SparseMaskedLinear(50, 40, density=0.25, mask="exact", seed=0)
    rows, cols = exact.indices()
    assert exact.connections == 500 and torch.unique(rows * 50 + cols).numel() == 500
    big = SparseMaskedLinear(200, 200, density=0.25, seed=0, dtype=F64)
    w = big.values.detach()
    target = 1.0 / (0.25 * 200)
    assert abs(float(w.var()) - target) < 3 * target * np.sqrt(2.0 / w.numel())


def test_sparse_layer_given_masks_state_dict_and_bad_input():
    g = torch.Generator().manual_seed(0)
    mask = (torch.rand(7, 5, generator=g) < 0.4).to(F64)
    from_dense = SparseMaskedLinear(5, 7, mask=mask, seed=0, dtype=F64)
    from_coo = SparseMaskedLinear(5, 7, mask=mask.to_sparse(), seed=0, dtype=F64)
    from_csr = SparseMaskedLinear(5, 7, mask=mask.to_sparse_csr(), seed=0, dtype=F64)
    for layer in (from_dense, from_coo, from_csr):
        assert torch.equal(layer.dense_mask(), mask) and layer.density == float(mask.mean())
    assert torch.equal(from_coo.values, from_dense.values)
    # a state of another mask (another number of connections) loads, buffers and values resized
    other = SparseMaskedLinear(5, 7, density=0.9, seed=3, dtype=F64)
    assert other.connections != from_dense.connections
    other.load_state_dict(from_dense.state_dict())
    x = torch.randn(3, 5, dtype=F64)
    assert torch.equal(other(x), from_dense(x)) and torch.equal(other.dense_mask(), mask)
    moved = copy.deepcopy(from_dense).to(torch.float32)
    assert moved.values.dtype == torch.float32 and moved.col_indices.dtype == torch.int32
    assert torch.allclose(moved(x.float()), from_dense(x).float(), atol=1e-6)
    with pytest.raises(ValueError, match="equal to 1"):          # a sparse mask's specified entries
        SparseMaskedLinear(3, 3, mask=(2 * torch.eye(3)).to_sparse())
    with pytest.raises(ValueError, match="sigma_w"):
        SparseMaskedLinear(3, 3, sigma_w=0.0)


def test_sparse_layer_with_no_connection_is_its_bias():
    """A Bernoulli mask may keep nothing (here N·p = 1.2e-4): the layer is then x ↦ b, with zero input gradient."""
    layer = SparseMaskedLinear(30, 40, density=1e-7, seed=0)
    assert layer.connections == 0
    with torch.no_grad():
        layer.bias.fill_(0.5)
    x = torch.randn(3, 30, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    assert torch.equal(y, torch.full((3, 40), 0.5)) and torch.equal(x.grad, torch.zeros(3, 30))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_sparse_layer_on_cuda_equals_cpu():
    """The same layer on CUDA (cuSPARSE products) and on the CPU: outputs and gradients to 1e-5 relative (float32)."""
    dense, sparse = _dense_and_sparse(torch.float32, 300, 500, density=0.05)
    gpu = copy.deepcopy(sparse).to("cuda")
    x = torch.randn(64, 300, generator=torch.Generator().manual_seed(0))
    outs = []
    for layer, dev in ((sparse, "cpu"), (gpu, "cuda")):
        xd = x.to(dev).requires_grad_()
        y = layer(xd)
        gx, gv = torch.autograd.grad(y.square().sum(), (xd, layer.values))
        outs.append([t.cpu() for t in (y, gx, gv)])
    for got, ref in zip(outs[1], outs[0]):
        assert (got - ref).abs().max() <= 1e-5 * ref.abs().max()


# ----------------------------------------------------------------------------------------------------------------
# Ensemble Mask Networks

def test_adjacency_layer_with_all_ones_is_a_linear_layer():
    layer = AdjacencyLinear(5, 2, 3, bias=True, seed=0, dtype=F64)
    x = torch.randn(7, 10, dtype=F64)
    ones = torch.ones(7, 5, 5, dtype=F64)
    assert torch.allclose(layer(x, ones), torch.nn.functional.linear(x, layer.weight, layer.bias), atol=1e-13)


def test_adjacency_layer_masks_and_scales_edges():
    """h = (kron(A, 1) ⊙ W) x per sample, against the dense per-sample mask (tests only); self-loops add I."""
    n, ci, co = 4, 2, 3
    layer = AdjacencyLinear(n, ci, co, seed=1, dtype=F64)
    g = torch.Generator().manual_seed(0)
    A = torch.rand(6, n, n, generator=g, dtype=F64) * (torch.rand(6, n, n, generator=g) < 0.5)
    x = torch.randn(6, n * ci, generator=g, dtype=F64)
    dense = torch.stack([(torch.kron(a, torch.ones(co, ci, dtype=F64)) * layer.weight) @ xi for a, xi in zip(A, x)])
    assert torch.allclose(layer(x, A), dense, atol=1e-13)
    loops = AdjacencyLinear(n, ci, co, self_loops=True, seed=1, dtype=F64)
    assert torch.allclose(loops(x, A), layer(x, A + torch.eye(n, dtype=F64)), atol=1e-13)
    with pytest.raises(ValueError, match="A must have shape"):
        layer(x, A[:, :3, :3])


def test_cluster_layer_is_block_diagonal():
    layer = ClusterLinear(3, 2, 4, seed=0, dtype=F64)
    x = torch.randn(5, 6, dtype=F64)
    assert torch.allclose(layer(x), x @ torch.block_diag(*layer.weight).T, atol=1e-13)


def test_emn_computes_a_weighted_row_sum_per_node():
    """An EMN is linear in x with y = (A ⊙ Ŵ) x for the effective matrix Ŵ_ij = Σ paths; sequential masks give
    (A ⊙ ·)(A ⊙ ·) paths: check against the weights contracted by hand."""
    n = 4
    emn = EMN(n, copies=(2, 3), seed=0, dtype=F64)
    g = torch.Generator().manual_seed(1)
    A = torch.rand(n, n, generator=g, dtype=F64)
    # effective matrix: ClusterLinear chain collapses each cluster to one number per (i, first-layer copy)
    W1 = emn.first.weight.reshape(n, 2, n)                          # (i, k, j)
    v = torch.einsum("iok,ikl->iol", emn.hidden[1].weight, emn.hidden[0].weight)[:, 0, :]   # (i, copy of layer 1)
    W_eff = torch.einsum("il,ilj->ij", v, W1)
    x = torch.randn(n, dtype=F64, generator=g)
    assert torch.allclose(emn(x, A), (A * W_eff) @ x, atol=1e-13)
    with pytest.raises(ValueError, match="sequential"):
        EMN(n, copies=(1,), sequential=True)


def test_dense_mlp_from_arch_matches_its_description():
    from rmtnet.spectra import network
    net = network.mlp(3, 40, weights="orthogonal", sigma_w=1.3, sigma_b=0.1, activation="tanh", q0=1.0)
    model = MLP.from_arch(net, seed=0, dtype=F64)
    W = model.layers[0].weight.detach()
    assert torch.allclose(W @ W.T, 1.3 ** 2 * torch.eye(40, dtype=F64), atol=1e-12)   # σ_w × Haar
    assert len(model.layers) == 3 and model.last_activation
    assert model(torch.randn(2, 40, dtype=F64)).shape == (2, 40)
    with pytest.raises(ValueError, match="weights"):
        MLP((3, 3), weights="uniform")


def test_models_shapes_and_bad_input():
    x = torch.randn(2, 16, 12)
    for cls in (MLPMixer, RPMixer, SWMLP, MonarchMLP):
        model = cls(16, 12, 8, 1, 10, seed=0)
        assert model(x).shape == (2, 10) and model.width == 128
        with pytest.raises(ValueError, match="input must have shape"):
            model(torch.randn(2, 12, 16))
    with pytest.raises(ValueError, match="gamma"):
        MLPMixer(16, 12, 8, 1, 10, gamma=0)
    with pytest.raises(ValueError, match="n_blocks"):
        MonarchLinear(10, 12, 3)


def test_sequential_emn_paths_are_second_order():
    """Seed 000 Fig. 5: masking the second layer by A as well makes every path a length-2 path of A, so with all
    weights 1 (one copy per node) the network computes A² x, and with self-loops in the second mask (A + I) A x."""
    n = 4
    g = torch.Generator().manual_seed(0)
    A = torch.rand(3, n, n, generator=g, dtype=F64) * (torch.rand(3, n, n, generator=g) < 0.5)
    x = torch.randn(3, n, generator=g, dtype=F64)
    for loops, ref in [(False, A @ A), (True, (A + torch.eye(n, dtype=F64)) @ A)]:
        emn = EMN(n, copies=(1, 1), sequential=True, self_loops=loops, dtype=F64)
        with torch.no_grad():
            for p in emn.parameters():
                p.fill_(1.0)
        assert torch.allclose(emn(x, A), torch.einsum("bij,bj->bi", ref, x), atol=1e-13)
