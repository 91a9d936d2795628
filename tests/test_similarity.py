"""CKA and HSIC (rmtnet.nets.similarity): the published reference value, closed forms and identities of the estimators,
invariances, debiasing on independent noise, minibatch CKA, and feature extraction from torch models."""
import itertools

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group
from torch import nn

from rmtnet.nets.similarity import MinibatchCKA, cka, cka_between, gram, hsic, layer_features


def _reference_pair():
    np.random.seed(1337)
    X = np.random.randn(100, 10)
    Y = np.random.randn(100, 10) + X
    return X, Y


def _song_hsic1(K, L):
    """Song et al. 2012, eq. 5, written out independently of the library."""
    n = K.shape[0]
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    return (np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
            - 2.0 / (n - 2) * one @ Kt @ Lt @ one) / (n * (n - 3))


def _u_statistic(K, L):
    """HSIC as the U-statistic of Song et al. 2012 (Theorem 3): the average over ordered 4-tuples (i, j, q, r) of
    distinct indices of k_ij l_ij + k_ij l_qr − 2 k_ij l_iq (the average over all orderings symmetrises the kernel)."""
    t = np.array(list(itertools.permutations(range(K.shape[0]), 4)))
    i, j, q, r = t.T
    return np.mean(K[i, j] * L[i, j] + K[i, j] * L[q, r] - 2 * K[i, j] * L[i, q])


# ---------------------------------------------------------------------------------------------------------------
# Published value and estimator identities

def test_reference_linear_cka():
    """Kornblith et al.'s tutorial example (their reference code's notebook): linear CKA 0.55761."""
    X, Y = _reference_pair()
    assert abs(cka(X, Y) - 0.55761) < 5e-6
    # torch input, float32 or float64, gives the same number (float64 inside)
    assert cka(torch.tensor(X), torch.tensor(Y)) == pytest.approx(cka(X, Y), abs=1e-15)
    assert abs(cka(torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32)) - 0.55761) < 5e-6


def test_linear_cka_feature_space_formula():
    """Biased linear CKA = ‖Y_cᵀX_c‖²_F / (‖X_cᵀX_c‖_F ‖Y_cᵀY_c‖_F) (Kornblith et al. 2019, eq. 5)."""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((40, 7)), rng.standard_normal((40, 13))
    Y[:, :7] += 0.5 * X
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    expected = np.linalg.norm(Yc.T @ Xc) ** 2 / (np.linalg.norm(Xc.T @ Xc) * np.linalg.norm(Yc.T @ Yc))
    assert cka(X, Y) == pytest.approx(expected, rel=1e-12)
    assert cka(Y, X) == pytest.approx(expected, rel=1e-12)
    assert cka(X, X) == pytest.approx(1.0, abs=1e-14)


def test_hsic_biased_is_trace_formula():
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((9, 9)), rng.standard_normal((9, 9))
    K, L = A + A.T, B @ B.T
    H = np.eye(9) - np.ones((9, 9)) / 9
    assert hsic(K, L) == pytest.approx(np.trace(K @ H @ L @ H) / 8 ** 2, rel=1e-12)


@pytest.mark.parametrize("n", [4, 5, 7])
def test_hsic_unbiased_song_formula_and_u_statistic(n):
    """The U-centred inner product used by the library = Song et al.'s eq. 5 = the 4-tuple U-statistic, for any
    symmetric K, L (not only PSD), down to the smallest n = 4."""
    rng = np.random.default_rng(n)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    K, L = A + A.T, B + B.T
    value = hsic(K, L, unbiased=True)
    assert value == pytest.approx(_song_hsic1(K, L), rel=1e-12, abs=1e-14)
    assert value == pytest.approx(_u_statistic(K, L), rel=1e-12, abs=1e-14)


def test_unbiased_self_hsic_vanishes_on_additive_gram():
    """HSIC₁(K, K) = ‖Ũ_K‖²/(n(n−3)) ≥ 0, zero exactly when K̃ᵢⱼ = aᵢ + aⱼ off the diagonal (whatever the diagonal)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal(6)
    K = a[:, None] + a[None, :] + np.diag(rng.standard_normal(6))
    assert abs(hsic(K, K, unbiased=True)) < 1e-14
    for seed in range(20):   # and positive on generic symmetric matrices, PSD or not
        A = np.random.default_rng(seed).standard_normal((6, 6))
        assert hsic(A + A.T, A + A.T, unbiased=True) > 0


def test_debiased_cka_is_a_cosine():
    """|debiased CKA| ≤ 1 (Cauchy–Schwarz for ⟨Ũ_K, Ũ_L⟩), even at n = 5 where the estimator is noisiest."""
    rng = np.random.default_rng(3)
    values = [cka(rng.standard_normal((5, 3)), rng.standard_normal((5, 2)), debiased=True) for _ in range(200)]
    assert max(abs(v) for v in values) <= 1 + 1e-12
    assert min(values) < 0   # it does go negative (an unbiased estimate of 0 on independent data)


# ---------------------------------------------------------------------------------------------------------------
# Invariances

@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize("c", [3.7, -0.2])
def test_invariance_to_scaling_rotation_offset(kernel, debiased, c):
    """CKA(X, cXQ + 1bᵀ) = 1: linear CKA by construction; RBF CKA because distances scale by |c| and so does the
    median bandwidth."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((60, 8))
    Q = ortho_group.rvs(8, random_state=5)
    b = 10.0 * rng.standard_normal(8)
    assert cka(X, c * X @ Q + b, kernel=kernel, debiased=debiased) == pytest.approx(1.0, abs=1e-12)


def test_rbf_scale_invariance_comes_from_the_median_bandwidth():
    """With a fixed absolute σ the RBF kernel is invariant to rotations and offsets but not to scaling."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 8))
    Q = ortho_group.rvs(8, random_state=7)

    def fixed_sigma_cka(A, B, sigma=2.0):
        K, L = gram(A, "rbf", sigma=sigma), gram(B, "rbf", sigma=sigma)
        return hsic(K, L) / np.sqrt(hsic(K, K) * hsic(L, L))

    assert fixed_sigma_cka(X, X @ Q - 5.0) == pytest.approx(1.0, abs=1e-12)
    assert fixed_sigma_cka(X, 3.0 * X) < 0.9
    for median in ("all_squared", "distinct_pairs"):
        assert cka(X, 3.0 * X, kernel="rbf", median=median) == pytest.approx(1.0, abs=1e-12)


def _direct_sq_distances(X):
    return ((X[:, None] - X[None]) ** 2).sum(-1)


def _kornblith_rbf(X, bandwidth):
    """The RBF Gram matrix of Kornblith et al.'s reference code (ICML 2019), written out here: squared distances from
    direct differences, σ² = bandwidth² × np.median over all n² entries (zero diagonal included)."""
    D2 = _direct_sq_distances(X)
    return np.exp(-D2 / (2 * bandwidth ** 2 * np.median(D2)))


def _pairs_rbf(X, bandwidth):
    """σ = bandwidth × np.median of the distances over pairs i < j."""
    D2 = _direct_sq_distances(X)
    d = np.sqrt(D2[np.triu_indices(len(X), 1)])
    return np.exp(-D2 / (2 * (bandwidth * np.median(d)) ** 2))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 31, 60])
def test_rbf_median_rules_match_direct_formulas(n):
    """Both median rules, at odd and even n (odd and even counts of entries and of pairs), against the formulas
    written with np.median on direct differences; the diagonal of K is exactly 1."""
    X = np.random.default_rng(n).standard_normal((n, 8))
    for median, ref in (("all_squared", _kornblith_rbf), ("distinct_pairs", _pairs_rbf)):
        K = gram(X, "rbf", bandwidth=0.7, median=median).numpy()
        np.testing.assert_allclose(K, ref(X, 0.7), rtol=1e-12, atol=1e-14)
        assert np.all(np.diag(K) == 1.0)
    # the default is Kornblith et al.'s rule, and the two rules differ (the n zeros of the diagonal lower the median)
    np.testing.assert_array_equal(gram(X, "rbf").numpy(), gram(X, "rbf", median="all_squared").numpy())
    if n > 2:
        assert np.abs(gram(X, "rbf").numpy() - gram(X, "rbf", median="distinct_pairs").numpy()).max() > 1e-4


def test_reference_rbf_cka():
    """RBF CKA at bandwidth 0.5 on the reference example: 0.65483 with Kornblith et al.'s median of all squared
    distances (the default; the value their reference code gives), 0.65401 with the median distance over pairs; and
    the same as the independent formula above to rounding."""
    X, Y = _reference_pair()
    default = cka(X, Y, kernel="rbf", bandwidth=0.5)
    assert abs(default - 0.65483) < 5e-6
    assert abs(cka(X, Y, kernel="rbf", bandwidth=0.5, median="distinct_pairs") - 0.65401) < 5e-6
    H = np.eye(100) - 1 / 100
    Kc, Lc = H @ _kornblith_rbf(X, 0.5) @ H, H @ _kornblith_rbf(Y, 0.5) @ H
    assert default == pytest.approx(np.sum(Kc * Lc) / (np.linalg.norm(Kc) * np.linalg.norm(Lc)), abs=1e-13)
    assert cka(torch.tensor(X), torch.tensor(Y), kernel="rbf", bandwidth=0.5) == pytest.approx(default, abs=1e-15)


@pytest.mark.parametrize("offset", [1e3, 1e6, 1e8])
def test_rbf_gram_accurate_for_clusters_far_from_the_mean(offset):
    """Two tight clusters (42 and 18 examples, spread 1) at ±offset: the squared distances from the Gram identity
    lose about u·offset² to cancellation (u = 2⁻⁵³), which ruins K within the clusters where σ is small; the
    library recomputes those rows from direct differences and matches the direct formula to 1e-12 (the naive
    identity is shown off by far more at the two larger offsets)."""
    rng = np.random.default_rng(13)
    X = rng.standard_normal((60, 8))
    X[:42] += offset
    X[42:] -= offset
    expected = _kornblith_rbf(X, 0.5)
    np.testing.assert_allclose(gram(X, "rbf").numpy(), expected, rtol=0, atol=1e-12)
    Xc = X - X.mean(0)
    G = Xc @ Xc.T
    D2 = np.maximum(np.diag(G)[:, None] + np.diag(G)[None] - 2 * G, 0)
    naive = np.exp(-D2 / (2 * 0.25 * np.median(D2)))
    if offset >= 1e6:
        assert np.abs(naive - expected).max() > 1e-6


def test_rbf_gram_identity_used_on_ordinary_data(monkeypatch):
    """On ordinary data no row is recomputed from direct differences (the rounding-error bound is far below the
    tolerance), so torch.cdist is never called; on the far clusters it is."""
    calls = []
    cdist = torch.cdist
    monkeypatch.setattr(torch, "cdist", lambda *a, **k: calls.append(1) or cdist(*a, **k))
    rng = np.random.default_rng(14)
    X = rng.standard_normal((300, 256)) + 5.0
    np.testing.assert_allclose(gram(X, "rbf").numpy(), _kornblith_rbf(X, 0.5), rtol=0, atol=1e-12)
    gram(X, "rbf", bandwidth=0.1)
    assert calls == []
    X[:200] += 1e6
    gram(X, "rbf")
    assert calls


# ---------------------------------------------------------------------------------------------------------------
# Debiasing

def test_debiased_cka_near_zero_on_independent_noise():
    """Independent N(0, I) features, n = 200, p = q = 500. Biased linear CKA ≈ p/(n + p) (ratio of expectations:
    E‖Y_cᵀX_c‖² = pq(n−1), E‖X_cᵀX_c‖² = p(n−1)(n+p); fluctuations O((np)^{-1/2}) ≈ 3e-3, tolerance 0.01).
    Debiased CKA estimates the population value 0 with standard deviation ≈ √2/n (HSIC₁ has sd ≈ √(2pq)/n, the
    normaliser ≈ √(pq)): tolerance 5√2/n ≈ 0.035."""
    rng = np.random.default_rng(8)
    n, p = 200, 500
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, p))
    biased, debiased = cka(X, Y), cka(X, Y, debiased=True)
    assert biased == pytest.approx(p / (n + p), abs=0.01)
    assert abs(debiased) < 5 * np.sqrt(2) / n


# ---------------------------------------------------------------------------------------------------------------
# Minibatch CKA

def _layers(rng, n, dims=(5, 9, 3)):
    base = rng.standard_normal((n, 4))
    return [np.tanh(base @ rng.standard_normal((4, d)) + 0.3 * rng.standard_normal((n, d))) for d in dims]


def test_minibatch_one_batch_is_full_batch_debiased_cka():
    rng = np.random.default_rng(9)
    A, B = _layers(rng, 64), _layers(rng, 64, dims=(6, 2))
    acc = MinibatchCKA()
    acc.update([torch.tensor(a) for a in A], [torch.tensor(b) for b in B])
    expected = np.array([[cka(a, b, debiased=True) for b in B] for a in A])
    out = acc.compute()
    assert out.shape == (3, 2) and out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    # float32 features (what a model gives): the same up to float32 rounding of the features
    acc32 = MinibatchCKA()
    acc32.update([torch.tensor(a, dtype=torch.float32) for a in A], [torch.tensor(b, dtype=torch.float32) for b in B])
    np.testing.assert_allclose(acc32.compute(), expected, rtol=0, atol=1e-6)


def test_minibatch_several_batches_is_mean_of_hsic_formula():
    """k batches: mean HSIC₁(XᵢXᵢᵀ, YᵢYᵢᵀ) / √(mean HSIC₁(XX) · mean HSIC₁(YY)), computed here with hsic()."""
    rng = np.random.default_rng(10)
    A, B = _layers(rng, 60), _layers(rng, 60, dims=(6, 2))
    batches = [slice(0, 20), slice(20, 40), slice(40, 60)]
    acc = MinibatchCKA()
    for s in batches:
        acc.update([torch.tensor(a[s]) for a in A], [torch.tensor(b[s]) for b in B])
    assert acc.n_batches == 3

    def mean_hsic(P, Q):
        return np.mean([hsic(P[s] @ P[s].T, Q[s] @ Q[s].T, unbiased=True) for s in batches])

    expected = np.array([[mean_hsic(a, b) / np.sqrt(mean_hsic(a, a) * mean_hsic(b, b)) for b in B] for a in A])
    np.testing.assert_allclose(acc.compute(), expected, rtol=0, atol=1e-12)
    # ... which is NOT the full-batch debiased CKA of the tiled data: each batch only sees its own 4-tuples
    full = np.array([[cka(a, b, debiased=True) for b in B] for a in A])
    assert np.max(np.abs(acc.compute() - full)) > 1e-3


def test_partition_average_of_minibatch_hsic_is_full_batch_hsic():
    """The exact identity behind minibatch CKA: averaged over every split of n = 8 examples into two batches of 4,
    the mean of the batch HSIC₁ equals the full-batch HSIC₁ (each 4-tuple of distinct examples lies inside one batch
    equally often). Linear Gram matrices of correlated features."""
    rng = np.random.default_rng(11)
    X = rng.standard_normal((8, 3))
    Y = X @ rng.standard_normal((3, 2)) + 0.5 * rng.standard_normal((8, 2))
    K, L = X @ X.T, Y @ Y.T
    values = []
    for first in itertools.combinations(range(8), 4):
        second = [i for i in range(8) if i not in first]
        values.append(np.mean([hsic(K[np.ix_(b, b)], L[np.ix_(b, b)], unbiased=True) for b in (list(first), second)]))
    assert len(values) == 70
    full = hsic(K, L, unbiased=True)
    assert np.mean(values) == pytest.approx(full, rel=1e-12)
    assert np.std(values) > 1e-3 * abs(full)   # while single splits differ from it


def test_minibatch_validation():
    acc = MinibatchCKA()
    with pytest.raises(ValueError, match="at least one update"):
        acc.compute()
    with pytest.raises(ValueError, match="at least 4"):
        acc.update([torch.randn(3, 5)], [torch.randn(3, 5)])
    with pytest.raises(ValueError, match="same batch"):
        acc.update([torch.randn(8, 5), torch.randn(7, 5)], [torch.randn(8, 5)])
    with pytest.raises(ValueError, match="list"):
        acc.update(torch.randn(8, 5), [torch.randn(8, 5)])
    acc.update([torch.randn(8, 5)], [torch.randn(8, 5)])
    with pytest.raises(ValueError, match="number of layers"):
        acc.update([torch.randn(8, 5), torch.randn(8, 2)], [torch.randn(8, 5)])
    acc.reset()
    acc.update([torch.full((8, 5), float("nan"))], [torch.randn(8, 5)])
    with pytest.raises(ValueError, match="NaN or inf"):
        acc.compute()
    acc.reset()
    acc.update([torch.ones(8, 5)], [torch.randn(8, 5)])
    with pytest.raises(ValueError, match="zero up to rounding"):
        acc.compute()


# ---------------------------------------------------------------------------------------------------------------
# Validation of cka / hsic

def test_cka_validation():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((10, 3))
    with pytest.raises(ValueError, match="same number of rows"):
        cka(X, X[:9])
    with pytest.raises(ValueError, match="kernel"):
        cka(X, X, kernel="poly")
    with pytest.raises(ValueError, match="bandwidth"):
        cka(X, X, kernel="rbf", bandwidth=0.0)
    with pytest.raises(ValueError, match="n ≥ 4"):
        cka(X[:3], X[:3], debiased=True)
    with pytest.raises(ValueError, match="finite"):
        cka(np.where(X > 1, np.nan, X), X)
    with pytest.raises(ValueError, match="constant"):
        cka(np.ones((10, 3)), X)
    with pytest.raises(ValueError, match="shape"):
        cka(X[:, 0], X)
    with pytest.raises(ValueError, match="median must be one of"):
        cka(X, X, kernel="rbf", median="pairs")
    with pytest.raises(ValueError, match="median must be one of"):
        gram(X, "rbf", median=None)
    # more than half of the n² squared distances are 0 (7 of 10 examples equal: 10 + 42 zeros of 100) but fewer
    # than half of the 45 pairs coincide (21): the default rule has no bandwidth, the pairwise rule has one
    dup = np.vstack([np.zeros((7, 3)), rng.standard_normal((3, 3))])
    with pytest.raises(ValueError, match="median squared distance"):
        gram(dup, "rbf")
    assert np.isfinite(gram(dup, "rbf", median="distinct_pairs").numpy()).all()
    assert np.isfinite(gram(dup, "rbf", sigma=1.0).numpy()).all()
    # all examples equal but one: HSIC₁(X, X) = 0 exactly, no NaN or noise comes back
    outlier = np.zeros((10, 3))
    outlier[3] = 1.0
    with pytest.raises(ValueError, match="zero up to rounding"):
        cka(outlier, X, debiased=True)
    assert 0 < cka(outlier, X) < 1   # the biased estimator is fine with it
    with pytest.raises(ValueError, match="symmetric"):
        hsic(rng.standard_normal((5, 5)), np.eye(5))
    with pytest.raises(ValueError, match="same shape"):
        hsic(np.eye(5), np.eye(6))


# ---------------------------------------------------------------------------------------------------------------
# Features of torch models

def _mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))


def _all_hooks_removed(model):
    return all(not m._forward_hooks for m in model.modules())


def test_layer_features_shapes_and_hooks_removed():
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))
    x = torch.randn(7, 2, 5, 5)
    feats = layer_features(conv, x, [conv[0], "1", conv[3]])
    assert [tuple(f.shape) for f in feats] == [(7, 100), (7, 100), (7, 3)]
    torch.testing.assert_close(feats[2], conv(x))
    torch.testing.assert_close(feats[1], torch.relu(conv[0](x)).flatten(1))
    assert _all_hooks_removed(conv)


def test_layer_features_hooks_removed_on_error():
    model = _mlp(0)
    with pytest.raises(ValueError, match="cannot be applied to inputs") as info:   # wrong input width
        layer_features(model, torch.randn(4, 5), [model[0], model[2]])
    assert isinstance(info.value.__cause__, RuntimeError)                       # torch's own error, chained
    assert _all_hooks_removed(model)
    with pytest.raises(ValueError, match="not a submodule name"):
        layer_features(model, torch.randn(4, 6), ["7"])
    with pytest.raises(ValueError, match="not a submodule"):
        layer_features(model, torch.randn(4, 6), [nn.Linear(2, 2)])
    shared = nn.Tanh()
    twice = nn.Sequential(nn.Linear(6, 6), shared, nn.Linear(6, 6), shared)
    with pytest.raises(ValueError, match="called 2 times"):
        layer_features(twice, torch.randn(4, 6), [shared])
    assert _all_hooks_removed(twice)


class _TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 5), nn.Linear(5, 2)

    def forward(self, x, z):
        return self.b(torch.tanh(self.a(x) * z))


def test_layer_features_tuple_inputs():
    torch.manual_seed(1)
    model = _TwoInputs()
    x, z = torch.randn(6, 4), torch.randn(6, 5)
    feats = layer_features(model, (x, z), ["a", "b"])
    torch.testing.assert_close(feats[1], model(x, z))
    assert tuple(feats[0].shape) == (6, 5)


def test_cka_between_models():
    model_a, model_b = _mlp(0), _mlp(1)
    g = torch.Generator().manual_seed(2)
    data = torch.randn(96, 6, generator=g)
    batches = [data[i:i + 32] for i in range(0, 96, 32)]
    out = cka_between(model_a, model_b, batches, [model_a[0], model_a[2]], ["0", "2", "4"])
    assert out.shape == (2, 3)
    acc = MinibatchCKA()
    with torch.no_grad():
        for x in batches:
            acc.update(layer_features(model_a, x, [model_a[0], model_a[2]]),
                       layer_features(model_b, x, [model_b[0], model_b[2], model_b[4]]))
    np.testing.assert_allclose(out, acc.compute(), rtol=0, atol=1e-12)
    model_a.eval()
    cka_between(model_a, model_b, batches, ["0"], ["0"])
    assert all(m.training for m in model_b.modules())     # training flags restored
    assert not any(m.training for m in model_a.modules())
    assert _all_hooks_removed(model_a) and _all_hooks_removed(model_b)
    # a model against itself on the same layers: ones on the diagonal
    self_cka = cka_between(model_a, model_a, batches, ["0", "2", "4"], ["0", "2", "4"])
    np.testing.assert_allclose(np.diag(self_cka), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(self_cka, self_cka.T, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="empty"):
        cka_between(model_a, model_b, [], ["0"], ["0"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_minibatch_cka_on_cuda_matches_cpu():
    model_a, model_b = _mlp(0), _mlp(1)
    data = torch.randn(64, 6, generator=torch.Generator().manual_seed(3))
    batches = [data[:32], data[32:]]
    cpu = cka_between(model_a, model_b, batches, ["0", "2"], ["0", "2"])
    gpu = cka_between(model_a.cuda(), model_b.cuda(), batches, ["0", "2"], ["0", "2"], device="cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-5)
    X, Y = _reference_pair()
    assert abs(cka(torch.tensor(X, device="cuda"), torch.tensor(Y, device="cuda")) - 0.55761) < 5e-6
    # RBF: the median is selected with torch.kthvalue on the device instead of np.partition
    for median in ("all_squared", "distinct_pairs"):
        on_gpu = cka(torch.tensor(X, device="cuda"), torch.tensor(Y, device="cuda"), kernel="rbf", median=median)
        assert on_gpu == pytest.approx(cka(X, Y, kernel="rbf", median=median), abs=1e-12)


def test_similarity_arguments_are_named():
    """Found by tests/test_fuzz.py: debiased took any truthy value ("no" meant True) and an array gave NumPy's "truth
    value … ambiguous", as did an array for kernel; bandwidth = 1e308 gave a bare OverflowError and 1e6 (an RBF Gram
    matrix of ones) an error naming neither bandwidth nor kernel; features of 1e-200 (squared distances underflow)
    an error naming neither X nor Y; MinibatchCKA named no feature list in its batch-size and non-finite errors and
    gave torch's TypeError for text; layer_features and cka_between gave AttributeError for a non-module or a
    number as inputs, "'float' object is not iterable" for batches, and torch's RuntimeError for a model that
    cannot take them."""
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    for call, name in ((lambda: cka(X, Y, kernel=np.array(["rbf"])), "kernel"),
                       (lambda: cka(X, Y, kernel="rbf", bandwidth=1e308), "bandwidth"),
                       (lambda: cka(X, Y, kernel="rbf", bandwidth=1e6), "bandwidth"),
                       (lambda: cka(X, Y * 1e-200, kernel="rbf"), "Y")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()
    for flag in ("no", 1, np.array([True]), None):
        with pytest.raises(TypeError, match="debiased"):
            cka(X, Y, debiased=flag)
    acc = MinibatchCKA()
    for feats, name in ((["a"], "feats_a"), ([X[:3]], "feats_a")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            acc.update(feats, [Y])
    acc.update([X], [np.full((6, 2), np.nan)])
    with pytest.raises(ValueError, match=r"\bfeats_b\b"):
        acc.compute()
    for bad in ([[1.0], [2.0, 3.0]], X * (1 + 1j)):              # ragged; complex (its imaginary part was dropped)
        with pytest.raises(ValueError, match=r"\bX\b"):
            cka(bad, Y)
    model = _mlp(0)
    for call, name in ((lambda: layer_features(1.0, torch.randn(4, 6), ["0"]), "model"),
                       (lambda: layer_features(model, torch.randn(6), ["0"]), "inputs"),    # 16 "rows" from 6 numbers
                       (lambda: layer_features(model, torch.full((4, 6), np.nan), ["0"]), "inputs"),
                       (lambda: layer_features(model, torch.zeros(0, 6), ["0"]), "inputs"),
                       (lambda: layer_features(model, 2.0, ["0"]), "inputs"),
                       (lambda: layer_features(model, torch.randn(4, 5), ["0"]), "inputs"),
                       (lambda: cka_between(model, None, [torch.randn(4, 6)], ["0"], ["0"]), "model_b"),
                       (lambda: cka_between(model, model, 3.0, ["0"], ["2"]), "batches"),
                       (lambda: cka_between(model, model, [torch.randn(2, 6)], ["0"], ["2"]), "batches"),
                       (lambda: cka_between(model, model, [torch.randn(4, 5)], ["0"], ["2"]), "batches")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            call()
