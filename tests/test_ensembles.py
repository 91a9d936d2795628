"""Subnetwork Ensembles (Whitaker 2023): metrics against hand arithmetic, masks, frozen zeros, noise, annealing,
trust-region search, combination, the spirals data and the figure scripts at tiny sizes."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rmtnet import cli
from rmtnet.nets import ensembles as E
from rmtnet.nets import metrics as M
from rmtnet.nets.data import Dataset, spirals
from rmtnet.nets.layers import MaskedLinear
from rmtnet.nets.models import MLP
from rmtnet.nets.training import train

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def mlp(widths=(8, 16, 16, 3), seed=0, dtype=torch.float32):
    return MLP(widths, sigma_w=math.sqrt(2), seed=seed, dtype=dtype)


def toy_data(n=96, d=8, c=3, seed=0):
    """A learnable toy classification set: labels from a random linear map of Gaussian inputs."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2 * n, d, generator=g)
    y = (x @ torch.randn(d, c, generator=g)).argmax(1)
    return Dataset(x[:n], y[:n], x[n:], y[n:], n_classes=c, name="toy", shape=(d,))


def modules(model):
    return dict(model.named_modules())


# ------------------------------------------------------------------------------------------------ metrics by hand
# 4 samples, 2 classes. argmax p = 0, 1, 1, 0 against y = 0, 0, 1, 1: right, wrong, right, wrong.
P = np.array([[0.91, 0.09], [0.08, 0.92], [0.35, 0.65], [0.75, 0.25]])
Y = np.array([0, 0, 1, 1])
Q = np.array([[0.50, 0.50], [0.20, 0.80], [0.60, 0.40], [0.75, 0.25]])   # argmax 0 (tie → 0), 1, 0, 0


def test_accuracy_and_nll_by_hand():
    assert M.accuracy(P, Y) == 0.5
    expected = -(math.log(0.91) + math.log(0.08) + math.log(0.65) + math.log(0.25)) / 4
    assert M.nll(P, Y) == pytest.approx(expected, rel=1e-14)
    assert M.nll(torch.tensor(P), torch.tensor(Y)) == pytest.approx(expected, rel=1e-14)     # torch input


def test_ece_by_hand():
    # confidences .91, .92, .65, .75; 15 bins of width 1/15: ⌈.91·15⌉ = ⌈13.65⌉ = 14, ⌈13.8⌉ = 14, ⌈9.75⌉ = 10,
    # ⌈11.25⌉ = 12. Bin 14 holds one right and one wrong (acc ½, conf .915); bin 10 one right; bin 12 one wrong.
    expected = 2 / 4 * abs(0.5 - 0.915) + 1 / 4 * abs(1 - 0.65) + 1 / 4 * abs(0 - 0.75)      # = 0.4825
    assert M.ece(P, Y) == pytest.approx(expected, rel=1e-12)
    # two bins (0, ½], (½, 1]: everything in the upper one, acc ½ against mean confidence .8075
    assert M.ece(P, Y, n_bins=2) == pytest.approx(abs(0.5 - (0.91 + 0.92 + 0.65 + 0.75) / 4), rel=1e-12)
    # a perfectly calibrated bin: confidence 0.75 on four samples, three of them right
    p = np.array([[0.75, 0.25]] * 4)
    assert M.ece(p, [0, 0, 0, 1]) == pytest.approx(0.0, abs=1e-15)


def test_kl_and_disagreement_by_hand():
    assert M.disagreement(P, Q) == 0.25                        # only sample 3 differs (1 vs 0)
    expected = (0.91 * math.log(0.91 / 0.5) + 0.09 * math.log(0.09 / 0.5)
                + 0.08 * math.log(0.08 / 0.2) + 0.92 * math.log(0.92 / 0.8)
                + 0.35 * math.log(0.35 / 0.6) + 0.65 * math.log(0.65 / 0.4) + 0.0) / 4
    assert M.kl(P, Q) == pytest.approx(expected, rel=1e-13)
    assert M.kl(P, P) == 0.0
    # 0 log 0 = 0 on the p side; q = 0 where p > 0 is an infinite divergence
    assert M.kl([[1.0, 0.0]], [[0.5, 0.5]]) == pytest.approx(math.log(2), rel=1e-14)
    assert M.kl([[0.5, 0.5]], [[1.0, 0.0]]) == math.inf


def test_correlation_by_hand_and_against_numpy():
    # C = 2: each defined term is ±1. Sample 1 has q uniform (undefined, left out); 2 and 4 are +1, 3 is −1.
    assert M.correlation(P, Q) == pytest.approx(1 / 3, rel=1e-14)
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(5), 7), rng.dirichlet(np.ones(5), 7)
    ref = np.mean([np.corrcoef(a[i], b[i])[0, 1] for i in range(7)])
    assert M.correlation(a, b) == pytest.approx(ref, rel=1e-12)


def test_pairwise_diversity_averages_over_pairs():
    members = [P, Q, np.array([[0.2, 0.8]] * 4)]
    d = M.pairwise_diversity(members)
    pdr = [M.disagreement(members[i], members[j]) for i, j in ((0, 1), (0, 2), (1, 2))]
    kls = [M.kl(members[i], members[j]) for i in range(3) for j in range(3) if i != j]
    assert d["disagreement"] == pytest.approx(np.mean(pdr)) and d["disagreement_std"] == pytest.approx(np.std(pdr))
    assert d["kl"] == pytest.approx(np.mean(kls))
    assert M.pairwise_diversity(np.stack(members), metrics="kl")["kl"] == pytest.approx(np.mean(kls))


def test_metrics_reject_bad_input():
    with pytest.raises(ValueError, match="probs.*shape"):
        M.accuracy(np.array([0.5, 0.5]), [0])
    with pytest.raises(ValueError, match="sum to 1"):
        M.nll(np.array([[0.9, 0.9], [0.3, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match=r"probs.*\[0, 1\]"):
        M.nll(np.array([[2.0, -1.0], [0.5, 0.5]]), [0, 1])                 # logits, not probabilities
    with pytest.raises(ValueError, match=r"labels.*\[0, 1\]"):
        M.ece(P, [0, 1, 2, 0])
    with pytest.raises(ValueError, match="same shape"):
        M.kl(P, P[:3])
    with pytest.raises(ValueError, match="n_bins"):
        M.ece(P, Y, n_bins=0)
    with pytest.raises(ValueError, match="probs.*finite"):
        M.accuracy(np.array([[np.nan, 1.0]]), [0])


def test_mask_distance_and_total_distance():
    a, b, c = np.array([1, 0, 1, 1]), np.array([0, 0, 1, 0]), np.array([0, 1, 0, 0])
    assert M.mask_distance(a, b) == pytest.approx(math.sqrt(2))           # Hamming 2
    assert M.mask_distance({"w": a}, {"w": b}) == pytest.approx(math.sqrt(2))
    assert M.total_distance([a, b, c]) == pytest.approx(2 * (math.sqrt(2) + math.sqrt(4) + math.sqrt(2)))
    # an anti-mask is the farthest mask: CD = √n
    assert M.mask_distance(a, 1 - a) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="same layers"):
        M.mask_distance({"w": a}, {"v": b})


# ------------------------------------------------------------------------------------------------ masks

def test_partition_masks_are_disjoint_and_cover_every_weight():
    net = mlp()
    for k in (2, 3, 5):
        parts = E.partition_masks(net, k, seed=k)
        assert len(parts) == k
        for key, w in E.maskable_weights(net).items():
            stack = torch.stack([p[key] for p in parts])
            assert torch.equal(stack.sum(0), torch.ones_like(w))            # each weight in exactly one child
            assert set(stack.unique().tolist()) <= {0.0, 1.0}
            counts = stack.flatten(1).sum(1)
            assert counts.max() - counts.min() <= 1                          # balanced
    rows = E.partition_masks(net, 2, structure="structured", seed=1)
    for key, m in rows[0].items():
        assert torch.all(m == m[:, :1])                                       # whole output rows
        assert torch.equal(m + rows[1][key], torch.ones_like(m))
    assert "layers.2.weight" not in rows[0]                                   # the logit layer stays whole


def test_anti_masks_and_partitioned_children():
    net = mlp()
    masks = E.sample_masks(net, 0.5, seed=3)
    anti = E.anti_masks(masks)
    for k in masks:
        assert torch.equal(anti[k], 1 - masks[k])
    kids = E.pruned_children(net, 4, 0.5, method="partition", seed=0)
    m = [E.child_masks(c) for c in kids]
    for k in m[0]:
        assert torch.equal(m[0][k] + m[1][k], torch.ones_like(m[0][k]))      # pair (1, 2) is M, 1 − M
        assert torch.equal(m[2][k] + m[3][k], torch.ones_like(m[2][k]))
        assert not torch.equal(m[0][k], m[2][k])                              # the two pairs are independent
    assert M.total_distance([m[0], m[1]]) == pytest.approx(2 * math.sqrt(sum(v.numel() for v in m[0].values())))
    with pytest.raises(ValueError, match="0 and 1"):
        E.anti_masks({"w": torch.tensor([0.5])})


def test_sample_masks_sparsity_structure_and_scope():
    net = mlp((8, 64, 64, 3))
    exact = E.sample_masks(net, 0.7, exact=True, seed=0)
    for k, m in exact.items():
        assert int((m == 0).sum()) == round(0.7 * m.numel())
    bern = E.sample_masks(net, 0.7, seed=0)
    big = bern["layers.1.weight"]                                       # 4096 iid Bernoulli(0.3) entries
    assert abs(float(big.mean()) - 0.3) < 4 * math.sqrt(0.3 * 0.7 / big.numel())
    # global magnitude: one threshold over the whole net
    g = E.sample_masks(net, 0.6, method="magnitude", scope="global")
    w = E.maskable_weights(net)
    kept = torch.cat([w[k].abs()[g[k] == 1] for k in w])
    cut = torch.cat([w[k].abs()[g[k] == 0] for k in w])
    assert kept.min() >= cut.max()
    assert int(sum((m == 0).sum() for m in g.values())) == round(0.6 * sum(m.numel() for m in g.values()))
    # local magnitude: the smallest |w| in every layer
    loc = E.sample_masks(net, 0.6, method="magnitude")
    for k in w:
        assert w[k].abs()[loc[k] == 1].min() >= w[k].abs()[loc[k] == 0].max()
    # structured: whole rows, and a row's magnitude is its mean |w|
    s = E.sample_masks(net, 0.5, method="magnitude", structure="structured")
    for k, m in s.items():
        assert torch.all(m == m[:, :1])
        row_mean = w[k].abs().mean(1)
        assert row_mean[m[:, 0] == 1].min() >= row_mean[m[:, 0] == 0].max()


def test_mask_arguments_are_checked():
    net = mlp()
    with pytest.raises(ValueError, match=r"sparsity.*\[0.0, 1.0\)"):
        E.sample_masks(net, 1.0)
    with pytest.raises(ValueError, match="method"):
        E.pruned_children(net, 2, 0.5, method="lottery")
    with pytest.raises(ValueError, match="1 − 1/k"):
        E.pruned_children(net, 2, 0.6, method="partition")
    with pytest.raises(ValueError, match="multiple of k = 2"):
        E.pruned_children(net, 3, 0.5, method="partition")
    with pytest.raises(ValueError, match="multiple of 4"):
        E.noisy_children(net, 6, 0.1, mirrored=True)
    with pytest.raises(ValueError, match="layers"):
        E.sample_masks(net, 0.5, layers=["nope"])


# ------------------------------------------------------------------------------------------------ frozen zeros

@pytest.mark.parametrize("optimizer, weight_decay", [("sgd", 5e-3), ("adamw", 0.1)])
def test_pruned_weights_stay_exactly_zero_through_tuning(optimizer, weight_decay):
    data = toy_data()
    parent = mlp()
    before = {k: v.clone() for k, v in parent.state_dict().items()}
    child = E.pruned_children(parent, 1, 0.5, seed=1)[0]
    masks = E.child_masks(child)
    start = {k: E._raw(modules(child)[k[:-7]]).detach().clone() for k in masks}
    E.tune(child, data, 3, optimizer=optimizer, lr=0.05, momentum=0.9, weight_decay=weight_decay,
           schedule="onecycle", batch_size=16)
    for key, m in masks.items():
        mod = modules(child)[key[:-7]]
        assert torch.all(mod.weight[m == 0] == 0)                       # the weight the layer applies
        assert torch.all(E._raw(mod)[m == 0] == 0)                      # and the stored one
        assert not torch.equal(E._raw(mod)[m == 1], start[key][m == 1])  # the kept weights were tuned
    assert all(torch.equal(before[k], v) for k, v in parent.state_dict().items())   # parent untouched


def test_masked_linear_parent_and_frozen_zeros():
    net = nn.Sequential(MaskedLinear(8, 32, density=0.5, seed=0), nn.ReLU(), nn.Linear(32, 3))
    child = E.pruned_children(net, 1, 0.5, seed=0)[0]
    E.tune(child, toy_data(), 2, optimizer="sgd", lr=0.05, weight_decay=1e-2, batch_size=16)
    m = E.child_masks(child)["0.weight"]
    eff = child[0].effective_weight()
    assert torch.all(eff[(m == 0) | (child[0].mask == 0)] == 0)


def test_structured_pruning_of_a_conv_net_removes_whole_filters():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 6, 6, generator=g)
    y = (x.flatten(1) @ torch.randn(36, 3, generator=g)).argmax(1)
    data = Dataset(x[:48], y[:48], x[48:], y[48:], n_classes=3, name="img", shape=(1, 6, 6))
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 3))
    child = E.pruned_children(net, 1, 0.5, structure="structured", exact=True, seed=0)[0]
    masks = E.child_masks(child)
    assert set(masks) == {"0.weight"}                                    # the logit layer is left whole
    E.tune(child, data, 2, optimizer="sgd", lr=0.05, weight_decay=1e-2, batch_size=16)
    w = child[0].weight
    dead = masks["0.weight"][:, 0, 0, 0] == 0
    assert int(dead.sum()) == 4
    assert torch.all(w[dead] == 0) and torch.all(w[~dead].flatten(1).abs().sum(1) > 0)   # whole filters


# ------------------------------------------------------------------------------------------------ noise

def test_mirrored_noise_children_sum_pairwise_to_twice_the_parent():
    parent = mlp(dtype=torch.float64)
    kids = E.noisy_children(parent, 8, sigma=0.3, sparsity=0.5, mirrored=True, seed=2)
    W = E.maskable_weights(parent)
    for g in range(2):
        c = [E.maskable_weights(k) for k in kids[4 * g:4 * g + 4]]
        for key, w in W.items():
            scale = float(w.detach().abs().max()) + 1.0
            assert torch.allclose(c[0][key] + c[2][key], 2 * w, rtol=0, atol=1e-14 * scale)     # ±N∘M
            assert torch.allclose(c[1][key] + c[3][key], 2 * w, rtol=0, atol=1e-14 * scale)     # ±N∘(1−M)
            d1, d2 = c[0][key] - w, c[1][key] - w
            assert torch.all((d1 == 0) | (d2 == 0))                      # N∘M and N∘(1−M): disjoint supports
            assert 0.3 < float((d1 != 0).double().mean()) < 0.7             # the mask mutates about half
    assert not torch.equal(E.maskable_weights(kids[0])["layers.0.weight"],
                           E.maskable_weights(kids[4])["layers.0.weight"])    # groups are independent draws


def test_noisy_children_noise_scale_and_sparsity():
    parent = mlp((8, 128, 128, 3), dtype=torch.float64)
    kid = E.noisy_children(parent, 1, sigma=0.2, sparsity=0.75, seed=0)[0]
    d = (E.maskable_weights(kid)["layers.1.weight"] - E.maskable_weights(parent)["layers.1.weight"]).detach().flatten()
    n = d.numel()
    frac = float((d != 0).double().mean())
    assert abs(frac - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)
    nz = d[d != 0]
    se = 0.2 ** 2 * math.sqrt(2 / len(nz))                               # sd of a sample variance of N(0, σ²)
    assert abs(float(nz.pow(2).mean()) - 0.04) < 4 * se


def test_trust_region_search_hits_the_target_kl():
    data = toy_data(n=256)
    parent = mlp()
    train(parent, data, epochs=5, optimizer="adamw", lr=1e-2, progress=False)
    target = 0.05
    tr = E.trust_region_search(parent, data.x_test, target_kl=target, y=data.y_test, n_draws=4, rtol=0.05, seed=0)
    assert tr.reached and abs(tr.kl - target) <= 0.05 * target
    grid = tr.table[tr.table.stage == "grid"]
    below, above = grid[grid.sigma < tr.sigma], grid[grid.sigma > tr.sigma]
    assert below.kl.max() < target < above.kl.min()                      # the bracket the bisection came from
    # independent check on fresh mutants: 32 new draws at σ*. One draw's KL scatters by ~kl_std; the search's
    # mean of 4 draws and this mean of 32 each carry that noise / √n, so allow 5 of those standard errors.
    kids = E.noisy_children(parent, 32, tr.sigma, seed=123)
    fresh = np.array([E.output_kl(parent, k, data.x_test) for k in kids])
    sd = fresh.std()
    assert abs(fresh.mean() - target) < 5 * sd * math.sqrt(1 / 32 + 1 / 4) + 0.05 * target


def test_trust_region_picks_the_more_accurate_sparsity():
    data = toy_data(n=256)
    parent = mlp()
    train(parent, data, epochs=5, optimizer="adamw", lr=1e-2, progress=False)
    tr = E.trust_region_search(parent, data.x_test, target_kl=0.05, y=data.y_test, sparsities=(0.0, 0.8))
    hits = tr.table.groupby("sparsity").apply(lambda t: t.iloc[(t.kl - 0.05).abs().argmin()], include_groups=False)
    assert tr.accuracy == hits.accuracy.max() and tr.sparsity == hits.accuracy.idxmax()
    with pytest.raises(ValueError, match="y"):
        E.trust_region_search(parent, data.x_test, sparsities=(0.0, 0.5))


def test_select_top_k():
    data = toy_data(n=256)
    parent = mlp()
    train(parent, data, epochs=5, optimizer="adamw", lr=1e-2, progress=False)
    kids = E.noisy_children(parent, 6, sigma=0.3, seed=0)
    best, acc = E.select_top_k(kids, data.x_test, data.y_test, 3)
    assert [acc[kids.index(b)] for b in best] == sorted(acc, reverse=True)[:3]
    assert acc.max() > acc.min()                                          # the children do differ


# ------------------------------------------------------------------------------------------------ annealing

def test_temperature_schedule_endpoints():
    assert E.temperature(0, 0.6, 5) == 0.6
    assert E.temperature(2.5, 0.6, 5) == pytest.approx(0.3, abs=1e-15)
    assert E.temperature(5, 0.6, 5) == pytest.approx(0.0, abs=1e-15)
    assert E.temperature(9, 0.6, 5) == pytest.approx(0.0, abs=1e-15)
    assert E.temperature(1, 0.6, 4) == pytest.approx(0.6 * (1 + math.cos(math.pi / 4)) / 2, rel=1e-15)
    with pytest.raises(ValueError, match="tau0"):
        E.temperature(0, 1.5, 5)


def test_temperature_mask_probabilities_and_fresh_draws():
    parent = mlp((8, 64, 64, 3))
    child = E.stochastic_children(parent, 1, 0.7, anneal="temperature", anneal_epochs=4, tau0=0.5, seed=0)[0]
    lin = child.layers[1]
    p = lin.parametrizations.weight[0]
    m = p.mask
    assert torch.equal(p.prob[m == 1], torch.ones_like(p.prob[m == 1]))
    assert torch.allclose(p.prob[m == 0], torch.full_like(p.prob[m == 0], 0.5))
    child.train()
    w1, w2 = lin.weight.clone(), lin.weight.clone()
    assert not torch.equal(w1, w2)                                        # a new Bernoulli draw per access
    orig = E._raw(lin)
    assert torch.equal(w1[m == 1], orig[m == 1])                          # the target is always on
    off = (w1[m == 0] != 0).double().mean()                               # pruned weights pop in w.p. τ = ½
    n = int((m == 0).sum())
    assert abs(float(off) - 0.5) < 4 * math.sqrt(0.25 / n)
    child.eval()
    assert torch.equal(lin.weight, orig * m)                              # deterministic M at test
    E.set_epoch(child, 2)
    assert torch.allclose(p.prob[m == 0], torch.full_like(p.prob[m == 0], 0.25))
    E.set_epoch(child, 4)
    child.train()
    assert torch.equal(lin.weight, orig * m)                              # annealed: the subnetwork is fixed


def test_random_annealing_moves_linearly_from_uniform_to_the_mask():
    parent = mlp((8, 64, 64, 3))
    child = E.stochastic_children(parent, 1, 0.9, anneal="random", anneal_epochs=4, seed=0)[0]
    p = child.layers[1].parametrizations.weight[0]
    u, m = p.uniform, p.mask
    assert torch.equal(m, (u >= 0.9).to(m.dtype))
    assert torch.allclose(p.prob, u)
    assert abs(float(p.prob.mean()) - 0.5) < 0.05                          # ~½ active at the start, as the thesis says
    E.set_epoch(child, 2)
    assert torch.allclose(p.prob, (u + m) / 2)
    E.set_epoch(child, 4)
    assert torch.equal(p.prob, m)


def test_iterative_pruning_schedule_is_nested_and_reaches_the_target():
    parent = mlp((8, 64, 64, 3))
    child = E.pruned_children(parent, 1, 0.8, prune_epochs=4, seed=0)[0]
    previous = None
    for e, s in enumerate([0.2, 0.4, 0.6, 0.8, 0.8]):
        E.set_epoch(child, e)
        masks = E.child_masks(child)
        for k, mk in masks.items():
            assert int((mk == 0).sum()) == round(s * mk.numel())
            if previous is not None:
                assert torch.all(mk <= previous[k])                      # nested: pruned weights stay pruned
            assert torch.all(E._raw(modules(child)[k[:-7]])[mk == 0] == 0)
        previous = masks


def test_stochastic_child_tunes_and_ends_on_its_target():
    data = toy_data()
    parent = mlp()
    child = E.stochastic_children(parent, 1, 0.5, anneal="temperature", anneal_epochs=2, tau0=0.5, seed=0)[0]
    table = E.tune(child, data, 3, optimizer="sgd", lr=0.05, schedule="constant", batch_size=16)
    assert list(table.epoch) == [0, 1, 2, 3]
    p = child.layers[0].parametrizations.weight[0]
    assert float(p.epoch) == 3 and torch.equal(p.prob, p.mask)
    masks = E.child_masks(child)
    child.eval()
    assert torch.equal(child.layers[0].weight, E._raw(child.layers[0]) * masks["layers.0.weight"])


# ------------------------------------------------------------------------------------------------ combination

class Fixed(nn.Module):
    """A 'model' whose outputs are fixed logits, whatever the input."""

    def __init__(self, probs):
        super().__init__()
        self.register_buffer("logits", torch.log(torch.tensor(probs, dtype=torch.float64)))

    def forward(self, x):
        return self.logits.expand(len(x), -1)


def test_vote_and_average_differ_on_a_constructed_example():
    members = [Fixed([0.9, 0.1]), Fixed([0.45, 0.55]), Fixed([0.45, 0.55])]
    x = torch.zeros(1, 1)
    avg = E.ensemble_predict(members, x)
    vote = E.ensemble_predict(members, x, method="vote")
    assert torch.allclose(avg, torch.tensor([[0.6, 0.4]], dtype=torch.float64), atol=1e-15)   # mean of softmaxes
    assert torch.allclose(vote, torch.tensor([[1 / 3, 2 / 3]], dtype=torch.float64))          # two votes for 1
    assert int(avg.argmax()) == 0 and int(vote.argmax()) == 1
    # the parent joins only when asked
    with_parent = E.ensemble_predict(members, x, parent=Fixed([0.1, 0.9]), include_parent=True)
    assert torch.allclose(with_parent, torch.tensor([[0.475, 0.525]], dtype=torch.float64))
    rep = E.evaluate_ensemble(members, x, torch.tensor([1]))
    assert rep["accuracy"] == 0.0 and rep["vote_accuracy"] == 1.0 and rep["n_members"] == 3


# ------------------------------------------------------------------------------------------------ data

def test_spirals_geometry_and_split():
    d = spirals(n_train=500, n_test=100, noise=0.0, turns=1.5, seed=3)
    assert (d.n_train, d.n_test, d.n_classes, d.shape) == (500, 100, 2, (2,))
    x = torch.cat([d.x_train, d.x_test]).double().numpy()
    y = torch.cat([d.y_train, d.y_test]).numpy()
    # noise 0: r = t and the angle is 2π·turns·t + π·class (mod 2π)
    r = np.hypot(x[:, 0], x[:, 1])
    phase = np.angle(np.exp(1j * (np.arctan2(x[:, 1], x[:, 0]) - 2 * np.pi * 1.5 * r - np.pi * y)))
    assert np.abs(phase).max() < 1e-5 and r.max() <= 1.0
    assert 0.4 < y.mean() < 0.6
    again = spirals(n_train=500, n_test=100, noise=0.0, seed=3)
    assert torch.equal(again.x_train, d.x_train) and not torch.equal(spirals(seed=4).x_train[:500], d.x_train)
    with pytest.raises(ValueError, match="turns"):
        spirals(turns=0)
    with pytest.raises(ValueError, match="noise"):
        spirals(noise=-0.1)


# ------------------------------------------------------------------------------------------------ figure scripts

def _figure(name, tmp_path, **overrides):
    path, tables = cli.load_simulation(name)["main"](full=False, outdir=tmp_path, **overrides)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    csv = pd.read_csv(Path(path).with_suffix(".csv"))
    assert set(csv.panel) == set(tables)
    return tables


def test_spiral_decision_boundaries_figure(tmp_path):
    tables = _figure("spiral_decision_boundaries", tmp_path, sigmas=(0.05, 0.25), sparsities=(0.0, 0.9), n_draws=3,
                     resolution=30)
    cells = tables["cells"].set_index(["sparsity", "sigma"])
    assert len(cells) == 4 and cells.parent_accuracy.min() > 0.95
    # sparse mutations move the outputs less at the same σ, and KL grows with σ (thesis Fig. 4.2)
    assert cells.loc[(0.9, 0.25), "kl"] < cells.loc[(0.0, 0.25), "kl"]
    assert cells.loc[(0.0, 0.05), "kl"] < cells.loc[(0.0, 0.25), "kl"]
    region = tables["trust_region"].set_index("sparsity")
    assert region.reached.all() and np.allclose(region.kl, 0.02, rtol=0.05, atol=0)
    assert region.loc[0.9, "sigma"] > region.loc[0.0, "sigma"]            # the window widens with sparsity


def test_subnetwork_ensembles_figure(tmp_path):
    tables = _figure("subnetwork_ensembles", tmp_path, datasets=("digits",), seeds=2, draws=2, width=32, n_jobs=1)
    s = tables["summary"].set_index("method")
    assert set(s.index) == {"independent", "dropout", "bagging", "sse_r", "sse_np", "parent_8ep"}
    assert (s.accuracy_mean > 0.8).all()
    runs = tables["runs"]
    assert len(runs) == 2 * (3 + 2 * 2) and set(runs.total_epochs) == {16}
    # mask distances by theory: independent 50 % masks differ on half the weights (CD = √(n/2)); an anti-mask pair
    # on all of them (CD = √n); 4 NP pairs put 8 of the 56 ordered pairs at √n
    v = tables["variance"].set_index("method")
    assert abs(v.loc["sse_r", "mask_td_fraction"] - math.sqrt(0.5)) < 0.01
    assert abs(v.loc["sse_np", "mask_td_fraction"] - (8 + 48 * math.sqrt(0.5)) / 56) < 0.01
    eff = tables["effects"].set_index("comparison")
    d = tables["runs"].groupby(["method", "seed"]).accuracy.mean().unstack("method")
    assert eff.loc["SSE(R) − independent", "accuracy_diff"] == pytest.approx((d.sse_r - d.independent).mean())
    for bad in (dict(draws=1), dict(seeds=1), dict(seeds=2.0)):   # refused before any run: no spread, no t-test
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an integer >= 2"):
            _figure("subnetwork_ensembles", tmp_path, datasets=("digits",), n_jobs=1, **bad)


def test_annealing_figure(tmp_path):
    tables = _figure("annealing", tmp_path, dataset="digits", sparsities=(0.5, 0.98), tune_epochs=3,
                     anneal_epochs=2, seeds=1, n_jobs=1)
    runs = tables["runs"]
    assert len(runs) == 4 * 2 * 2
    assert np.allclose(runs.realised_sparsity, runs.sparsity, atol=1e-3)   # exact counts per layer
    # one-shot and temperature annealing start from the same pruned child (same parent, same target mask)
    w = runs.pivot_table(index=["schedule", "sparsity"], columns="method", values="pruned_accuracy")
    assert np.array_equal(w.one_shot, w.temperature_anneal)
    assert runs.parent_accuracy.min() > 0.9
    g = tables["gains"]
    assert len(g) == 3 * 2 * 2 and set(g.method) == {"iterative", "random_anneal", "temperature_anneal"}


def test_sparse_masked_layers_are_not_left_out_silently():
    """Subnetwork masks and pruning work on dense weight tensors; a model with SparseMaskedLinear layers raises,
    naming them, instead of masking only its other layers."""
    from rmtnet.nets.layers import SparseMaskedLinear
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), SparseMaskedLinear(8, 3, density=0.5, seed=0))
    with pytest.raises(ValueError, match="SparseMaskedLinear layers \\['2'\\].*storage='dense'"):
        E.pruned_children(model, 2, sparsity=0.5, seed=0)
