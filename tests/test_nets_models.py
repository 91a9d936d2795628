"""Trained and probed models against exact facts: the EMN learns A x to machine precision; a torch MLP's Jacobian
spectrum at initialisation samples rmtnet.spectra.jacobian_law; effective singular values of Kronecker/RP layers equal
those of the dense effective matrices (built here, in tests only)."""
import numpy as np
import pytest
import torch

from rmtnet import plot
from rmtnet.spectra import network
from rmtnet.nets import EMN, MLP, MLPMixer, RPMixer, SWMLP, effective_singular_values, jacobian_spectrum, train
from rmtnet.nets.data import Dataset
from rmtnet.spectra import jacobian_law, sample_jacobian_eigs

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _emn_data(n, n_train, n_test, seed):
    """(x, A) ↦ A x with A ∈ [0, 1]^{n×n} at density 0.5 (directed, self-loops allowed), x ~ N(0, I)."""
    g = torch.Generator().manual_seed(seed)

    def split(k):
        A = torch.rand(k, n, n, generator=g, dtype=F64) * (torch.rand(k, n, n, generator=g) < 0.5)
        x = torch.randn(k, n, generator=g, dtype=F64)
        return (x, A), torch.einsum("kij,kj->ki", A, x)

    (x_tr, y_tr), (x_te, y_te) = split(n_train), split(n_test)
    return Dataset(x_tr, y_tr, x_te, y_te, None, "emn-ax", (n,))


def test_linear_emn_learns_matrix_vector_product():
    """A linear EMN, architecture (1) of seed 000 (one hidden layer, one copy per node), float64, n = 5, SGD: test MSE
    < 1e-12 on fresh (A, x) after 10 epochs."""
    model = EMN(5, copies=(1,), seed=0, dtype=F64)
    table = train(model, _emn_data(5, 2000, 500, seed=0), epochs=10, batch_size=50, optimizer="sgd", lr=0.1,
                  momentum=0.9, progress=False, seed=0)
    assert table["test_mse"].iloc[0] > 0.1
    assert table["test_mse"].iloc[-1] < 1e-12, table["test_mse"].tolist()


def test_torch_mlp_jacobian_at_init_samples_the_limit_law():
    """MLP.from_arch (critical ReLU, Gaussian, L = 2, N = 600): the eigenvalues of JJᵀ by torch.func at init against
    jacobian_law — KS below 0.04 over 2 networks (the NumPy Monte Carlo of the same description, for scale, also
    below 0.04)."""
    net = network.mlp(2, 600, weights="gaussian", sigma_w=np.sqrt(2.0), activation="relu")
    law = jacobian_law(net)
    eigs = []
    for seed in (0, 1):
        model = MLP.from_arch(net, seed=seed, dtype=F64)
        x0 = torch.randn(600, dtype=F64, generator=torch.Generator().manual_seed(seed)) * np.sqrt(net.q0)
        eigs.append(jacobian_spectrum(model, x0))
    ks_torch = plot.ks_distance(law, np.concatenate(eigs))
    ks_numpy = plot.ks_distance(law, sample_jacobian_eigs(net, n_samples=2, seed=0))
    assert ks_torch < 0.04 and ks_numpy < 0.04, (ks_torch, ks_numpy)


def _dense_effective(model, name, x_shape):
    """The dense matrix of the linear sub-layer ``name`` acting on the flattened (S, C) features (tests only)."""
    mod = dict(model.named_modules())[name]
    if hasattr(mod, "perm_in"):                              # PermutedMixing: flat in, flat out
        n = mod.n_blocks * mod.d_in
        basis = torch.eye(n, dtype=F64)
    else:
        S, C = x_shape
        basis = torch.eye(S * C, dtype=F64).reshape(S * C, S, C)
    with torch.no_grad():
        bias = mod.bias
        mod.bias = None
        try:
            out = mod(basis).reshape(basis.shape[0], -1)
        finally:
            mod.bias = bias
    return out.T


def test_effective_singular_values_without_kron():
    S, C = 6, 5
    mix = MLPMixer(S, 3, C, 1, 4, gamma=2.0, seed=0, dtype=F64)
    rp = RPMixer(S, 3, C, 1, 4, gamma=2.0, seed=0, dtype=F64)
    sw = SWMLP(S, 3, C, 1, 4, gamma=2.0, seed=0, dtype=F64)
    for model, name, shape in [(mix, "blocks.0.f.layer1", (S, C)), (mix, "blocks.1.f.layer1", (S, C)),
                               (rp, "blocks.0.f.layer2", None)]:
        ref = np.sort(torch.linalg.svdvals(_dense_effective(model, name, shape)).numpy())[::-1]
        got = effective_singular_values(model)[name]
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    sv = effective_singular_values(sw)
    assert set(sv) == {"stem"} | {f"blocks.{b}.f.layer{k}" for b in (0, 1) for k in (1, 2)}
    assert sv["blocks.0.f.layer1"].size == min(S * C, 2 * S * C)


def test_effective_singular_values_of_sparse_layers():
    """A sparse-storage SW-MLP's layers give the singular values of their M ⊙ W (equal to the dense-storage twin's),
    not nothing; a layer wider than max_dense raises, naming it."""
    dense = SWMLP(6, 3, 5, 1, 4, gamma=2.0, seed=0, dtype=F64, storage="dense")
    sparse = _sparse_copy(dense)
    got, ref = effective_singular_values(sparse), effective_singular_values(dense)
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="blocks.0.f.layer1.*max_dense"):
        effective_singular_values(sparse, max_dense=20)


def _sparse_copy(model):
    """A copy of a dense-storage SWMLP with every MaskedLinear replaced by the SparseMaskedLinear of the same mask,
    kept weights and bias."""
    import copy
    from rmtnet.nets.layers import MaskedLinear, SparseMaskedLinear
    out = copy.deepcopy(model)
    for block in out.blocks:
        for name in ("layer1", "layer2"):
            layer = getattr(block.f, name)
            assert isinstance(layer, MaskedLinear)
            setattr(block.f, name, SparseMaskedLinear.from_masked(layer))
    return out


def test_swmlp_sparse_storage_is_the_dense_model():
    """An SWMLP with its masks stored sparse computes the dense-mask model (same masks and weights): logits and every
    parameter gradient to 1e-12 (float64), two blocks, S = 6, C = 5, the token layers of density 1/C."""
    dense = SWMLP(6, 3, 5, 2, 4, gamma=2.0, storage="dense", seed=0, dtype=F64)
    sparse = _sparse_copy(dense)
    x = torch.randn(7, 6, 3, dtype=F64, generator=torch.Generator().manual_seed(1))
    y = torch.randint(4, (7,), generator=torch.Generator().manual_seed(2))
    grads = []
    for model in (dense, sparse):
        model.zero_grad()
        out = model(x)
        torch.nn.functional.cross_entropy(out, y).backward()
        grads.append((out.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (out_d, g_d), (out_s, g_s) = grads
    assert torch.allclose(out_s, out_d, rtol=0, atol=1e-12)
    for name, g in g_s.items():
        if name.endswith(".values"):                      # the sparse layer's kept weights: the dense gradient there
            dense_layer = dict(dense.named_modules())[name[:-len(".values")]]
            rows, cols = dict(sparse.named_modules())[name[:-len(".values")]].indices()
            ref = g_d[name[:-len("values")] + "weight"][rows, cols]
            assert dense_layer.mask[rows, cols].min() == 1
        else:
            ref = g_d[name]
        assert torch.allclose(g, ref, rtol=0, atol=1e-12), name


def test_swmlp_storage_choice_and_size():
    """``storage="auto"``: dense masks below SPARSE_MIN_WIDTH or above SPARSE_MAX_DENSITY, sparse otherwise; a sparse
    SWMLP at S = C = 32 (m = 1024) stores one value per connection in its mixing layers (the Mixer's Ω per layer on
    average: within 5 standard deviations of the Binomial count) and no tensor larger than one layer's connections."""
    from rmtnet.nets.layers import MaskedLinear, SparseMaskedLinear
    from rmtnet.nets.models import SPARSE_MAX_DENSITY, SPARSE_MIN_WIDTH, sparse_storage
    from rmtnet.spectra import mixer
    assert SWMLP(8, 4, 16, 1, 3, seed=0).storage == "dense"                       # m = 128
    assert SWMLP(16, 4, 16, 1, 3, seed=0).storage == "sparse"                     # m = 256, p = 1/16
    assert SWMLP(16, 4, 16, 1, 3, density=0.5, seed=0).storage == "dense"
    assert sparse_storage(SPARSE_MIN_WIDTH, SPARSE_MAX_DENSITY) == "sparse"
    assert sparse_storage(SPARSE_MIN_WIDTH - 1, SPARSE_MAX_DENSITY) == "dense"
    assert sparse_storage(10 ** 6, 2 * SPARSE_MAX_DENSITY) == "dense"
    S = C = 32
    model = SWMLP(S, 4, C, 1, 3, storage="sparse", seed=0)
    layers = [m for m in model.modules() if isinstance(m, (MaskedLinear, SparseMaskedLinear))]
    assert len(layers) == 4 and all(isinstance(m, SparseMaskedLinear) for m in layers)
    omega = mixer.connections(S, C, 2.0)                     # connections per layer, γ(CS² + SC²)/2 = 2·32³
    for layer in layers:
        n = layer.in_features * layer.out_features
        assert abs(layer.connections - omega) < 5 * np.sqrt(n * layer.density * (1 - layer.density))
    biggest = max(t.numel() for t in list(model.parameters()) + list(model.buffers()))
    assert biggest < 1.1 * omega and omega == (S * C) ** 2 // 16, biggest   # a layer's values, never m² = 16·Ω
    with pytest.raises(ValueError, match="storage"):
        SWMLP(8, 4, 16, 1, 3, storage="csr")
    with pytest.raises(ValueError, match="density"):
        SWMLP(8, 4, 16, 1, 3, density=0.0)
