"""The static-sparsity control of Golubeva, Neyshabur & Gur-Ari (ICLR 2021): the model keeps the weight budget
exactly at every width, its initialisation law, and the data protocol."""
import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from rmtnet import cli
from rmtnet.studies.wider_nets import (PAPER_LEARNING_RATES, PAPER_POINTS, PAPER_WIDTHS, WideSparseMLP, budget,
                                       kernel_distance, max_width, mnist_subset, width_at_fixed_weights_run,
                                       width_effects)


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


def test_ntk_parameterisation_is_theirs():
    """Their released net: effective weights (prefactor × stored weight) U(−a, a) with a = 1/√(p·784) on the kept
    hidden weights and 1/√w on the classifier, so variances 1/(3·p·784) and 1/(3w) (sample variances within 6
    standard errors, 2·var²/n would be Gaussian's: the uniform's 0.8·var²/n is smaller); the same mask as the
    standard net of the same seed; and the forward pass is the standard net with those effective weights."""
    ntk, std = WideSparseMLP(328, seed=3, parameterization="ntk"), WideSparseMLP(328, seed=3)
    assert torch.equal(ntk.hidden.mask, std.hidden.mask) and ntk.weights() == 6352
    kept = ntk.hidden.mask.bool()
    w = ntk.hidden.weight[kept].double() / np.sqrt(784)
    target = 1.0 / (3 * ntk.hidden.density * 784)
    assert abs(w.var().item() - target) < 6 * target * np.sqrt(2 / w.numel())
    assert float(ntk.hidden.weight.detach().abs().max()) <= 1 / np.sqrt(ntk.hidden.density)
    assert int((ntk.hidden.weight != 0).sum()) == 6352 - 3280
    c = ntk.classifier.weight.double() / np.sqrt(328)
    assert abs(c.var().item() - 1 / (3 * 328)) < 6 / (3 * 328) * np.sqrt(2 / c.numel())
    x = torch.randn(5, 784, generator=torch.Generator().manual_seed(0))
    by_hand = torch.relu(x @ (ntk.hidden.weight / np.sqrt(784)).T) @ (ntk.classifier.weight / np.sqrt(328)).T
    assert torch.allclose(ntk(x), by_hand, atol=1e-6)
    with pytest.raises(ValueError, match="parameterization"):
        WideSparseMLP(32, parameterization="NTK")
    with pytest.raises(ValueError, match="width must be one of their widths"):
        width_at_fixed_weights_run(16, protocol="theirs")
    with pytest.raises(ValueError, match="protocol"):
        width_at_fixed_weights_run(8, protocol="paper")
    with pytest.raises(ValueError, match="lr"):
        width_at_fixed_weights_run(8, lr=-0.1)


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
    assert "effects" not in t and ns["caption"](t["summary"]).startswith("One seed: no test of the claim")


def test_full_size_holds_the_papers_widths():
    """The full sweep runs every width of their Fig. 8 (and some between); their learning rates name the same ones."""
    full = cli.load_simulation("wider_at_fixed_weights")["SIZES"]["full"]
    assert set(PAPER_WIDTHS) <= set(full["widths"]) and full["epochs"] == 300
    assert all(set(rates) == set(PAPER_WIDTHS) for rates in PAPER_LEARNING_RATES.values())
    assert set(PAPER_POINTS.width) == {5, 80, 160} and (PAPER_POINTS.test_error < 0.11).all()


def test_kernel_distance_is_their_formula_at_the_nets_density():
    """Their eq. (4) with p the kept fraction the built net actually has: (¼(1/√p − 1)² + (d/n)(1 − 1/π²))/(4d);
    at w = 8 (dense, p = 1) only the finite-width term (1 − 1/π²)/32 is left. Its least value over 8 … 635 is at
    w = 135: smaller than both neighbours."""
    for width in (8, 32, 216, 635):
        p = WideSparseMLP(width, seed=0).hidden.density
        expected = (0.25 * (1 / np.sqrt(p) - 1) ** 2 + 784 / width * (1 - 1 / np.pi ** 2)) / (4 * 784)
        assert kernel_distance(width) == pytest.approx(expected, rel=1e-12)
    assert kernel_distance(8) == pytest.approx((1 - 1 / np.pi ** 2) / 32, rel=1e-12)
    assert kernel_distance(134) > kernel_distance(135) < kernel_distance(136)
    for bad in (7, 636):
        with pytest.raises(ValueError, match="width must lie in \\[8, 635\\]"):
            kernel_distance(bad)


def _runs(errors, train=None):
    """Synthetic sparse runs: width → test errors over seeds (train error 0 unless ``train`` gives a width's)."""
    rows = [dict(kind="sparse", width=w, seed=i, test_error=e, train_error=(train or {}).get(w, 0.0))
            for w, es in errors.items() for i, e in enumerate(es)]
    return pd.DataFrame(rows)


def test_width_effects_welch_numbers_and_three_verdicts():
    """Each difference is SciPy's Welch test; the verdict follows the numbers: a curve that keeps falling up to the
    widest trainable width is "reproduced", one that stops early "reproduced only under stated conditions" (with the
    plateau and the significantly worse widths named), a flat one "not reproduced"; untrainable widths are left
    out of the best width and the verdict."""
    falling = {8: [.15, .16, .14], 32: [.12, .13, .125], 128: [.10, .105, .095], 635: [.9, .88, .87]}
    e = width_effects(_runs(falling, train={635: 0.9}))
    ref = stats.ttest_ind(falling[32], falling[8], equal_var=False)
    row = e.set_index("width").loc[32]
    assert row.p_vs_base == pytest.approx(ref.pvalue, rel=1e-10) and row.diff_vs_base == pytest.approx(-0.025)
    a = e.attrs
    assert (a["best_width"], a["plateau_width"], a["widest_trainable"], a["verdict"]) == (128, 128, 128, "reproduced")
    assert a["rho"] < -0.9 and a["rho_n"] == 9 and not e.set_index("width").loc[635, "trains"]

    early = {8: [.15, .16, .14], 32: [.12, .11, .115], 128: [.118, .121, .116], 512: [.135, .14, .13]}
    a = width_effects(_runs(early)).attrs
    assert (a["best_width"], a["plateau_width"], a["verdict"]) == (32, 32, "reproduced only under stated conditions")
    assert [w for w, _, _ in a["worse_than_best"]] == [512] and "w = 512 is worse than w = 32" in a["reason"]

    flat = {8: [.12, .13, .125], 32: [.126, .12, .13], 128: [.13, .12, .125]}
    assert width_effects(_runs(flat)).attrs["verdict"] == "not reproduced"
    a = width_effects(_runs(falling, train={32: 0.2, 128: 0.3, 635: 0.9})).attrs
    assert a["verdict"] == "not reproduced" and a["reason"].startswith("no width wider than w = 8 trains")


def test_width_effects_refuses_what_it_cannot_test():
    with pytest.raises(ValueError, match="at least 2 seeds"):
        width_effects(_runs({8: [.1, .2], 32: [.1]}))
    with pytest.raises(ValueError, match="base_width = 8"):
        width_effects(_runs({16: [.1, .2], 32: [.1, .2]}))
    with pytest.raises(ValueError, match="runs must be the table of a width_at_fixed_weights_run sweep with the "
                                         "columns"):
        width_effects(_runs({8: [.1, .2]}).drop(columns="train_error"))
    with pytest.raises(ValueError, match="test_error"):
        width_effects(_runs({8: [.1, np.nan], 32: [.1, .2]}))
    for name, value in (("trainable", 0.0), ("alpha", 1.0)):
        with pytest.raises(ValueError, match=name):
            width_effects(_runs({8: [.1, .2], 32: [.1, .2]}), **{name: value})


@pytest.mark.slow
@pytest.mark.agreement
def test_agreement_width_8_to_32_improvement():
    """The figure's headline at the full protocol (2048 digits, plain SGD, lr 0.1, batch 256, 300 epochs), seeds
    0–4, widths 8, 32 and 64 only (15 runs: about 45 s on one quiet core, 100 s measured on two cores shared at
    load 5.5): the sparse w = 32 net beats the dense w = 8 baseline, and w = 64 does not beat w = 32.

    Pinned values: the committed full runs (figures/wider_at_fixed_weights_full_runs.csv) give w = 32 − w = 8 =
    −3.0 points (Welch s.e. 0.42, p = 1e-4) and w = 64 − w = 32 = +0.3 points (s.e. 0.39). The tolerance is 3 of
    those standard errors around each measured difference, rounded outwards to 0.1 point: [−4.3, −1.7] and
    [−0.9, +1.5] points; the first must also keep Welch p < 0.05."""
    errors = {w: np.array([width_at_fixed_weights_run(w, seed=seed)["test_error"] for seed in range(5)])
              for w in (8, 32, 64)}
    gain = stats.ttest_ind(errors[32], errors[8], equal_var=False)
    assert -0.043 <= errors[32].mean() - errors[8].mean() <= -0.017 and gain.pvalue < 0.05
    assert -0.009 <= errors[64].mean() - errors[32].mean() <= 0.015
