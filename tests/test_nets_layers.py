"""rmtnet.nets layers and models: the Kronecker identities of REFERENCE §3, Mixer = effective sparse MLP, RP with
commutations = Mixer, Monarch's batched path = its dense reference, static-mask invariants, the EMN layer."""
import copy

import numpy as np
import pytest
import torch

from rmtnet import plot
from rmtnet.nets.layers import (AdjacencyLinear, ChannelMixing, ClusterLinear, MaskedLinear, MonarchLinear,
                                PermutedMixing, TokenMixing, commutation)
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
    with pytest.raises(ValueError, match="density"):
        MaskedLinear(3, 3, density=0.0)
    with pytest.raises(ValueError, match="mask"):
        MaskedLinear(3, 3, mask="dense")
    with pytest.raises(ValueError, match="shape"):
        MaskedLinear(3, 3, mask=torch.ones(2, 3))


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
    from rmtnet import arch
    net = arch.mlp(3, 40, weights="orthogonal", sigma_w=1.3, sigma_b=0.1, activation="tanh", q0=1.0)
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
