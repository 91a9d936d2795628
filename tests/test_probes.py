"""Spectral probes of torch models (rmtnet.nets.probes): input–output Jacobians against closed forms, the two
empirical-NTK methods against each other and against hand computations, masked coordinates, weight spectra."""
import numpy as np
import pytest
import torch
from torch import nn

from rmtnet.nets.layers import AdjacencyLinear, MaskedLinear
from rmtnet.nets.probes import (effective_singular_values, empirical_ntk, input_jacobian, jacobian_spectrum,
                                parameter_jacobian, weight_singular_values)

F64 = torch.float64

# torch.func.jvp loads torch's jvp decompositions on first use, which call the deprecated torch.jit.script internally.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _mlp(seed=0, dims=(5, 7, 6, 3)):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers).to(F64)


def _masked_net(seed=0):
    return nn.Sequential(MaskedLinear(5, 8, density=0.4, seed=seed, dtype=F64), nn.Tanh(),
                         MaskedLinear(8, 6, density=0.5, seed=seed + 1, dtype=F64), nn.Tanh(),
                         nn.Linear(6, 3, dtype=F64))


def _x(n, d, seed=1):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


# ---------------------------------------------------------------------------------------------------------------
# Input–output Jacobians

def test_jacobian_spectrum_of_linear_model_is_squared_singular_values():
    """f(x) = Wx: J = W, eig(JJᵀ) = σ(W)², padded with d_out − d_in zeros when W is tall."""
    torch.manual_seed(0)
    for d_in, d_out in [(7, 4), (4, 7)]:
        f = nn.Linear(d_in, d_out, bias=False).to(F64)
        W = f.weight.detach().numpy()
        x = _x(1, d_in)[0]
        np.testing.assert_allclose(input_jacobian(f, x).numpy(), W, rtol=0, atol=1e-15)
        expected = np.sort(np.concatenate([np.linalg.svd(W, compute_uv=False) ** 2, np.zeros(max(0, d_out - d_in))]))
        eig = jacobian_spectrum(f, x)
        assert eig.shape == (d_out,) and eig.dtype == np.float64
        np.testing.assert_allclose(eig, expected, rtol=1e-13, atol=1e-15)


def test_deep_linear_jacobian_is_product_of_weights():
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(6, 9, bias=False), nn.Linear(9, 4, bias=False)).to(F64)
    W1, W2 = net[0].weight.detach(), net[1].weight.detach()
    J = input_jacobian(net, _x(1, 6)[0])
    torch.testing.assert_close(J, W2 @ W1, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(jacobian_spectrum(net, _x(1, 6)[0]),
                               np.sort(np.linalg.eigvalsh((W2 @ W1 @ W1.T @ W2.T).numpy())), rtol=1e-12, atol=1e-14)


def test_tanh_mlp_jacobian_closed_form():
    """f(x) = W₂ tanh(W₁x + b₁) + b₂: J = W₂ diag(1 − tanh²(W₁x + b₁)) W₁."""
    net = _mlp(2, dims=(5, 7, 3))
    W1, b1, W2 = net[0].weight.detach(), net[0].bias.detach(), net[2].weight.detach()
    x = _x(1, 5)[0]
    expected = W2 @ torch.diag(1 - torch.tanh(W1 @ x + b1) ** 2) @ W1
    torch.testing.assert_close(input_jacobian(net, x), expected, rtol=1e-13, atol=1e-15)


def test_batched_jacobian_spectrum_concatenates_examples():
    net = _mlp(3)
    xs = _x(4, 5)
    batched = jacobian_spectrum(net, xs, batched=True)
    assert batched.shape == (4 * 3,)
    np.testing.assert_allclose(batched, np.concatenate([jacobian_spectrum(net, x) for x in xs]), rtol=1e-12,
                               atol=1e-15)


def test_input_jacobian_of_image_shaped_input():
    torch.manual_seed(4)
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(3 * 2 * 2, 5)).to(F64)
    x = torch.randn(2, 4, 4, dtype=F64)
    J = input_jacobian(net, x)
    assert tuple(J.shape) == (5, 32)
    # directional derivative check: J v = d/dt f(x + t v) at t = 0 (central difference, exact for this affine net)
    v = torch.randn(2, 4, 4, dtype=F64)
    fd = (net((x + v)[None]) - net((x - v)[None]))[0] / 2
    torch.testing.assert_close(J @ v.reshape(-1), fd, rtol=1e-12, atol=1e-13)


class _EMN(nn.Module):
    """A two-input model in the EMN shape: h = (A ⊙ W₁)x per sample, then tanh and a dense read-out."""

    def __init__(self, n=4):
        super().__init__()
        self.adj = AdjacencyLinear(n, 1, 2, bias=True, seed=0, dtype=F64)
        self.out = nn.Linear(2 * n, 2, dtype=F64)

    def forward(self, x, A):
        return self.out(torch.tanh(self.adj(x, A)))


def test_input_jacobian_with_context_input():
    """Single adjacency layer with one copy in and out: h = (A ⊙ W)x, so ∂h/∂x = A ⊙ W; A is held fixed."""
    layer = AdjacencyLinear(4, seed=1, dtype=F64)
    x = _x(1, 4)[0]
    A = torch.rand(4, 4, generator=torch.Generator().manual_seed(2), dtype=F64)
    torch.testing.assert_close(input_jacobian(layer, (x, A)), A * layer.weight.detach(), rtol=1e-14, atol=1e-15)


# ---------------------------------------------------------------------------------------------------------------
# Empirical NTK

@pytest.mark.parametrize("make", [_mlp, _masked_net], ids=["mlp", "masked"])
def test_ntk_methods_agree(make):
    net = make()
    x1, x2 = _x(4, 5, seed=1), _x(3, 5, seed=2)
    for a, b in [(x1, None), (x1, x2)]:
        jac = empirical_ntk(net, a, b, method="jacobian")
        prod = empirical_ntk(net, a, b, method="products")
        n2 = a.shape[0] if b is None else b.shape[0]
        assert tuple(jac.shape) == (a.shape[0] * 3, n2 * 3) and jac.dtype == F64
        assert _rel(prod, jac) < 1e-6
    # Θ(x1, x1) is symmetric positive semi-definite; Θ(x2, x1) = Θ(x1, x2)ᵀ
    theta = empirical_ntk(net, x1)
    torch.testing.assert_close(theta, theta.T, rtol=1e-12, atol=1e-14)
    assert float(torch.linalg.eigvalsh(theta).min()) > -1e-12 * float(theta.abs().max())
    torch.testing.assert_close(empirical_ntk(net, x2, x1), empirical_ntk(net, x1, x2).T, rtol=1e-12, atol=1e-14)


def test_ntk_methods_agree_on_two_input_model():
    net = _EMN()
    g = torch.Generator().manual_seed(3)
    x, A = torch.randn(3, 4, generator=g, dtype=F64), torch.rand(3, 4, 4, generator=g, dtype=F64)
    jac = empirical_ntk(net, (x, A), method="jacobian")
    prod = empirical_ntk(net, (x, A), method="products", chunk_size=2)
    assert tuple(jac.shape) == (6, 6)
    assert _rel(prod, jac) < 1e-6


def test_ntk_of_linear_model_is_inner_product_times_identity():
    """f(x) = Wx, W (k × d), no bias: ∂f_a/∂W_bc = δ_ab x_c, so Θ(x, x′) = (xᵀx′) I_k."""
    torch.manual_seed(5)
    k, d = 3, 6
    net = nn.Linear(d, k, bias=False).to(F64)
    x1, x2 = _x(4, d, seed=6), _x(2, d, seed=7)
    expected = torch.einsum("ij,ab->iajb", x1 @ x2.T, torch.eye(k, dtype=F64))
    for method in ("jacobian", "products"):
        blocks = empirical_ntk(net, x1, x2, method=method, layout="blocks")
        assert tuple(blocks.shape) == (4, 2, k, k)
        torch.testing.assert_close(blocks, expected.permute(0, 2, 1, 3), rtol=1e-14, atol=1e-14)
        torch.testing.assert_close(empirical_ntk(net, x1, x2, method=method), expected.reshape(4 * k, 2 * k),
                                   rtol=1e-14, atol=1e-14)


def test_ntk_ignores_frozen_parameters():
    """Only requires_grad parameters count: freezing the last layer removes its term, Θ_last = (φᵀφ′ + 1) I_k."""
    net = _mlp(8, dims=(5, 7, 3))
    x = _x(4, 5)
    full = empirical_ntk(net, x)
    for p in net[2].parameters():
        p.requires_grad_(False)
    frozen = empirical_ntk(net, x, method="products")
    h = torch.tanh(net[0](x)).detach()
    last = torch.einsum("ij,ab->iajb", h @ h.T + 1, torch.eye(3, dtype=F64)).reshape(12, 12)
    torch.testing.assert_close(full - frozen, last, rtol=1e-12, atol=1e-13)


def test_masked_coordinates_contribute_nothing():
    """The per-example Jacobian is exactly 0 at masked weight coordinates, and Θ equals J_u J_uᵀ for the vector u of
    unmasked coordinates (and the dense parameters), computed here by torch.autograd.functional.jacobian of the
    network written as a function of u: an independent route."""
    net = _masked_net(3)
    x = _x(5, 5, seed=4)
    jac = parameter_jacobian(net, x)
    masks = {"0.weight": net[0].mask, "2.weight": net[2].mask}
    for name, mask in masks.items():
        assert mask.sum() < mask.numel()                                   # there are masked coordinates
        assert torch.all(jac[name][..., mask == 0] == 0)
    names = [k for k, _ in net.named_parameters()]
    shapes = {k: v.shape for k, v in net.named_parameters()}
    keep = {k: masks[k].bool() if k in masks else torch.ones(shapes[k], dtype=torch.bool) for k in names}
    u0 = torch.cat([p.detach()[keep[k]] for k, p in net.named_parameters()])

    def f(u):
        params, i = {}, 0
        for k in names:
            m = int(keep[k].sum())
            params[k] = torch.zeros(shapes[k], dtype=F64).masked_scatter(keep[k], u[i:i + m])
            i += m
        return torch.func.functional_call(net, params, (x,)).reshape(-1)

    Ju = torch.autograd.functional.jacobian(f, u0)                         # (n·k, #unmasked)
    expected = Ju @ Ju.T
    for method in ("jacobian", "products"):
        torch.testing.assert_close(empirical_ntk(net, x, method=method), expected, rtol=1e-12, atol=1e-13)
    # and the values stored at masked coordinates are irrelevant
    with torch.no_grad():
        net[0].weight.add_((1 - net[0].mask) * 5.0)
    torch.testing.assert_close(empirical_ntk(net, x), expected, rtol=1e-12, atol=1e-13)


def test_ntk_validation():
    net = _mlp()
    x = _x(3, 5)
    with pytest.raises(ValueError, match="method"):
        empirical_ntk(net, x, method="finite_differences")
    with pytest.raises(ValueError, match="layout"):
        empirical_ntk(net, x, layout="dense")
    with pytest.raises(ValueError, match="chunk_size"):
        empirical_ntk(net, x, chunk_size=0)
    with pytest.raises(ValueError, match="same n"):
        empirical_ntk(_EMN(), (x[:, :4], torch.rand(2, 4, 4, dtype=F64)))
    with pytest.raises(ValueError, match="no trainable parameters"):
        empirical_ntk(nn.Tanh(), x)
    with pytest.raises(ValueError, match="nn.Module"):
        input_jacobian(lambda t: t, x[0])


# ---------------------------------------------------------------------------------------------------------------
# Weights

def test_weight_singular_values():
    rng = np.random.default_rng(9)
    W = rng.standard_normal((6, 10))
    sv = weight_singular_values(torch.tensor(W, dtype=torch.float32))
    assert sv.dtype == np.float64 and np.all(np.diff(sv) <= 0)
    np.testing.assert_allclose(sv, np.linalg.svd(W.astype(np.float32).astype(np.float64), compute_uv=False),
                               rtol=1e-12)
    np.testing.assert_allclose(weight_singular_values(W), np.linalg.svd(W, compute_uv=False), rtol=1e-12)
    layer = MaskedLinear(10, 6, density=0.3, seed=0)
    np.testing.assert_allclose(weight_singular_values(layer.weight),
                               np.linalg.svd(layer.effective_weight().detach().double().numpy(), compute_uv=False),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="matrix"):
        weight_singular_values(np.ones(4))
    with pytest.raises(ValueError, match="finite"):
        weight_singular_values(np.full((2, 2), np.inf))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_probes_on_cuda_match_cpu():
    net = _masked_net(0)
    x = _x(3, 5)
    cpu = empirical_ntk(net, x, method="products")
    net = net.cuda()
    for method in ("jacobian", "products"):
        gpu = empirical_ntk(net, x, method=method)          # inputs follow the model to its device
        assert gpu.device.type == "cuda"
        assert _rel(gpu.cpu(), cpu) < 1e-10
    np.testing.assert_allclose(jacobian_spectrum(net, x, batched=True),
                               jacobian_spectrum(net.cpu(), x, batched=True), rtol=1e-10, atol=1e-14)


def test_probe_arguments_are_named():
    """Found by tests/test_fuzz.py: a model that cannot take x gave torch's RuntimeError ("mat1 and mat2 shapes
    cannot be multiplied", "expected m1 and m2 to have the same dtype"), NaN inputs a NaN kernel, chunk_size = 2.0
    "can't multiply sequence by non-int", batched = "no" an IndexError, an array for method NumPy's "truth value …
    ambiguous", a non-module effective_singular_values an AttributeError, tokens='a' was accepted silently (a model
    without channel mixing does not use it) and max_dense='a' gave a TypeError; weights of 1e308 gave inf singular
    values."""
    from rmtnet.nets import layers as L
    from rmtnet.nets import models as M
    net = M.MLP([3, 4, 2], seed=0).double()
    x = torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(2, 3)
    for call, name in ((lambda: empirical_ntk(net, torch.zeros(2, 4, dtype=torch.float64)), "x1"),
                       (lambda: empirical_ntk(net, x, torch.full((2, 3), float("nan"))), "x2"),
                       (lambda: empirical_ntk(net, x, chunk_size=2.0), "chunk_size"),
                       (lambda: empirical_ntk(net, x, method=np.array([])), "method"),
                       (lambda: jacobian_spectrum(net, torch.zeros(2, 3, dtype=torch.int64), batched=True), "x"),
                       (lambda: effective_singular_values(1.0), "model"),
                       (lambda: effective_singular_values(nn.Sequential(L.TokenMixing(4, 3, seed=0)), tokens="a",
                                                          channels=3), "tokens"),
                       (lambda: effective_singular_values(nn.Sequential(L.MonarchLinear(4, 4, 2, seed=0)),
                                                          max_dense="a"), "max_dense")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()
    for call, name in ((lambda: empirical_ntk(net, torch.zeros(3, dtype=torch.float64)), "x1"),    # 3 scalars
                       (lambda: jacobian_spectrum(net, torch.zeros(0, 3, dtype=torch.float64)), "x"),
                       (lambda: weight_singular_values([[1.0], [2.0, 3.0]]), "weight"),
                       (lambda: weight_singular_values(np.eye(2) * (1 + 1j)), "weight")):   # its imaginary part
        with pytest.raises(ValueError, match=rf"\b{name}\b"):                                  # was dropped
            call()
    with pytest.raises(TypeError, match="batched"):
        jacobian_spectrum(net, x, batched="no")
    with pytest.raises(OverflowError, match="weight"):
        weight_singular_values(np.full((2, 2), 1e308))
    # a float32 input takes the model's float64: the same kernel as the float64 input
    torch.testing.assert_close(empirical_ntk(net, x.float()), empirical_ntk(net, x.float().double()))
