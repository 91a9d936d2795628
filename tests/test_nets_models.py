"""Trained and probed models against exact facts: the EMN learns A x to machine precision; a torch MLP's Jacobian
spectrum at initialisation samples rmtnet.spectra.jacobian_law; effective singular values of Kronecker/RP layers equal
those of the dense effective matrices (built here, in tests only)."""
import numpy as np
import pytest
import torch

from rmtnet import arch, plot
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
    net = arch.mlp(2, 600, weights="gaussian", sigma_w=np.sqrt(2.0), activation="relu")
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
