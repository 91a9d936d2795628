"""The static-sparsity control of Golubeva, Neyshabur & Gur-Ari (ICLR 2021): the model keeps the weight budget
exactly at every width, its initialisation law, and the data protocol."""
import numpy as np
import pytest
import torch

from rmtnet import cli
from rmtnet.studies.wider_nets import WideSparseMLP, budget, max_width, mnist_subset, width_at_fixed_weights_run


def test_budget_and_largest_width_are_theirs():
    """N = 8·(784 + 10) = 6352 weights; the widest net with a dense classifier and a hidden weight left is 635."""
    assert budget() == 6352 and max_width() == 635


@pytest.mark.parametrize("width", [8, 9, 32, 216, 634, 635])
def test_sparse_net_keeps_exactly_the_budget(width):
    net = WideSparseMLP(width, seed=width)
    assert net.weights() == 6352
    assert int(net.hidden.mask.sum()) == 6352 - 10 * width
    assert int((net.hidden.weight != 0).sum()) == 6352 - 10 * width        # masked entries are exact zeros
    assert net(torch.zeros(3, 1, 28, 28)).shape == (3, 10)


def test_dense_reference_and_bad_widths():
    assert WideSparseMLP(100, sparse=False, seed=0).weights() == 794 * 100
    for width in (7, 636):
        with pytest.raises(ValueError, match="width must lie in \\[base_width, 635\\]"):
            WideSparseMLP(width)
    with pytest.raises(ValueError, match="width"):
        WideSparseMLP(0)
    with pytest.raises(ValueError, match="kind"):
        width_at_fixed_weights_run(8, kind="sparse ")


def test_initialisation_variance():
    """Kept hidden weights N(0, 1/(p·784)) (each hidden unit's pre-activation has the input's variance), classifier
    N(0, 1/w); sample variances of 6352 − 3280 and 3280 draws within 6 standard errors (2·var²/n)."""
    net = WideSparseMLP(328, seed=3)
    w = net.hidden.weight[net.hidden.mask.bool()].double()
    target = 1.0 / (net.hidden.density * 784)
    assert abs(w.var().item() - target) < 6 * target * np.sqrt(2 / w.numel())
    c = net.classifier.weight.double()
    assert abs(c.var().item() - 1 / 328) < 6 * (1 / 328) * np.sqrt(2 / c.numel())


def test_mnist_subset_protocol():
    """2048 stratified digits (204 or 205 per class), pixelwise standardised on the subset: each non-constant pixel
    has mean 0 and standard deviation 1 there; constant pixels are 0 in both splits; the 1000 test digits kept."""
    d = mnist_subset(2048)
    assert d.n_train == 2048 and d.n_test == 1000 and d.x_train.shape == (2048, 784)
    counts = np.bincount(d.y_train.numpy(), minlength=10)
    assert counts.min() >= 204 and counts.max() <= 205
    x = d.x_train.double()
    sd = x.std(0, unbiased=False)
    live = sd > 0
    assert torch.allclose(x.mean(0), torch.zeros(784, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(sd[live], torch.ones(int(live.sum()), dtype=torch.float64), atol=1e-6)
    assert d.x_test[:, ~live].eq(0).all() and 0 < int((~live).sum()) < 784
    with pytest.raises(ValueError, match="n_train"):
        mnist_subset(5000)


def test_wider_at_fixed_weights_small_sweep_resumes(tmp_path):
    """The simulation on widths 8 and 64 (2 epochs, 1 seed): a row per (kind, width), the sparse and dense nets of
    width 8 are the same net (same seed, same errors), and a second call reads the runs back."""
    ns = cli.load_simulation("wider_at_fixed_weights")
    small = dict(widths=(8, 64), epochs=2, seeds=1)
    path, t = ns["main"](outdir=tmp_path, n_jobs=1, **small)
    s = t["summary"].set_index(["kind", "width"])
    assert path.exists() and len(s) == 4
    assert s.loc[("sparse", 8), "test_error_mean"] == s.loc[("dense", 8), "test_error_mean"]
    assert s.loc[("sparse", 64), "weights"] == 6352 and s.loc[("dense", 64), "weights"] == 794 * 64
    again = ns["main"](outdir=tmp_path, n_jobs=1, **small)[1]["runs"]
    assert again.seconds.tolist() == t["runs"].seconds.tolist()
