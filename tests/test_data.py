import numpy as np
import pytest
import torch

from rmtnet.nets import data as D


pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def digits():
    return D.digits(test_fraction=0.2, seed=0)


def class_counts(y, n_classes):
    return np.bincount(y.numpy(), minlength=n_classes)


# ---------------------------------------------------------------- offline loaders

def test_digits_split_and_standardisation(digits):
    from sklearn.datasets import load_digits

    assert (digits.n_train, digits.n_test) == (1437, 360)
    assert digits.x_train.shape == (1437, 1, 8, 8) and digits.shape == (1, 8, 8)
    assert digits.x_train.dtype == torch.float32 and digits.y_train.dtype == torch.int64
    # scalar standardisation with training statistics: train pixels have mean 0 and std 1 (float32 rounding)
    x = digits.x_train.double()
    assert abs(x.mean().item()) < 1e-6 and abs(x.std(unbiased=False).item() - 1) < 1e-6
    # stratified: every class has 0.2 · (its count) ± 1 test samples
    total = np.bincount(load_digits().target)
    assert np.all(np.abs(class_counts(digits.y_test, 10) - 0.2 * total) <= 1)


def test_digits_test_split_is_mapped_by_the_training_map(digits):
    # raw pixels are integers 0..16, and both 0 and 16 occur in the training split, so the training split's smallest
    # and largest standardised values fix the affine map; inverting it must return the test pixels to integers 0..16
    lo, hi = digits.x_train.double().min().item(), digits.x_train.double().max().item()
    test_raw = (digits.x_test.double().numpy() - lo) * 16 / (hi - lo)
    assert np.allclose(test_raw, np.round(test_raw), atol=1e-4)
    assert test_raw.min() > -1e-4 and test_raw.max() < 16 + 1e-4


def test_loaders_are_deterministic_in_the_seed(digits):
    again = D.digits(seed=0)
    other = D.digits(seed=1)
    assert torch.equal(again.x_train, digits.x_train) and torch.equal(again.y_test, digits.y_test)
    assert not torch.equal(other.y_test, digits.y_test)


def test_mnist5k_stratified():
    data = D.mnist5k(test_fraction=0.2, seed=3)
    assert (data.n_train, data.n_test, data.shape) == (4000, 1000, (1, 28, 28))
    assert data.x_test.shape == (1000, 1, 28, 28)
    # 500 digits per class, 20 % held out, stratified: exactly 100 per class in the test split
    assert np.array_equal(class_counts(data.y_test, 10), np.full(10, 100))
    x = data.x_train.double()
    assert abs(x.mean().item()) < 1e-6 and abs(x.std(unbiased=False).item() - 1) < 1e-6
    # the digits are read once per process; each call returns new tensors: changing one leaves the next call alone
    before = data.x_train.clone()
    data.x_train.add_(1.0)
    again = D.mnist5k(test_fraction=0.2, seed=3)
    assert torch.equal(again.x_train, before) and torch.equal(again.y_test, data.y_test)


def test_mnist1d_generated_locally_and_restandardised():
    import random

    import mnist1d.data

    np.random.seed(123)
    random.seed(123)
    before_np, before_py = np.random.get_state()[1].copy(), random.getstate()
    data = D.mnist1d(n_samples=500, seed=7)
    # the generator reseeds the global RNGs; the loader restores them
    assert np.array_equal(np.random.get_state()[1], before_np) and random.getstate() == before_py
    assert (data.n_train, data.n_test, data.shape) == (400, 100, (1, 40))
    assert np.array_equal(class_counts(torch.cat([data.y_train, data.y_test]), 10), np.full(10, 50))
    # identity: ours = (generator's − its train mean) / its train std, i.e. the generator's pooled scaling is undone
    args = mnist1d.data.get_dataset_args()
    args.num_samples, args.seed = 500, 7
    raw = mnist1d.data.make_dataset(args)
    m, s = raw["x"].mean(), raw["x"].std()
    np.testing.assert_allclose(data.x_train[:, 0].double().numpy(), (raw["x"] - m) / s, atol=1e-6)
    np.testing.assert_allclose(data.x_test[:, 0].double().numpy(), (raw["x_test"] - m) / s, atol=1e-6)
    assert np.array_equal(data.y_test.numpy(), raw["y_test"])
    with pytest.raises(ValueError, match="n_samples"):
        D.mnist1d(n_samples=505)


def test_teacher_student_targets_are_the_teacher():
    data = D.teacher_student(n_train=300, n_test=100, d=5, width=7, seed=2, activation="erf", dtype=torch.float64)
    W, a = data.info["W"], data.info["a"]
    x = torch.cat([data.x_train, data.x_test])
    y = torch.erf(x @ W.T / 5 ** 0.5) @ a / 7 ** 0.5
    torch.testing.assert_close(torch.cat([data.y_train, data.y_test])[:, 0], y, rtol=0, atol=1e-14)
    assert data.n_classes is None and data.y_train.shape == (300, 1) and data.shape == (5,)
    # a linear teacher is the linear map β = Wᵀa / √(d·width)
    lin = D.teacher_student(50, 10, d=4, width=3, seed=0, activation="linear", dtype=torch.float64)
    beta = lin.info["W"].T @ lin.info["a"] / (4 * 3) ** 0.5
    torch.testing.assert_close(lin.y_train[:, 0], lin.x_train @ beta, rtol=0, atol=1e-14)


def test_teacher_student_noise_level():
    # residual standard deviation ≈ noise: 20,000 draws, relative standard error 1/√(2n) = 0.5 %, tolerance 3 %
    clean = D.teacher_student(20000, 1, d=3, width=4, seed=5, dtype=torch.float64)
    noisy = D.teacher_student(20000, 1, d=3, width=4, seed=5, noise=0.5, dtype=torch.float64)
    assert torch.equal(clean.x_train, noisy.x_train)
    residual = (noisy.y_train - clean.y_train).std().item()
    assert abs(residual / 0.5 - 1) < 0.03
    with pytest.raises(ValueError, match="noise"):
        D.teacher_student(10, 10, 3, 4, seed=0, noise=-1.0)
    with pytest.raises(ValueError, match="activation"):
        D.teacher_student(10, 10, 3, 4, seed=0, activation="gelu")


# CIFAR-10 (read from its python batches, without torchvision): tests/test_cifar.py


# ---------------------------------------------------------------- patches

def test_to_patches_hand_checked():
    images = torch.arange(2 * 4 * 4).reshape(1, 2, 4, 4)
    tokens = D.to_patches(images, 2)
    assert tokens.shape == (1, 4, 8)  # S = (4/2)², C = 2·2²
    # token 0: top-left 2×2 of channel 0, then of channel 1; token 1: top-right; tokens 2, 3: bottom row
    assert tokens[0, 0].tolist() == [0, 1, 4, 5, 16, 17, 20, 21]
    assert tokens[0, 1].tolist() == [2, 3, 6, 7, 18, 19, 22, 23]
    assert tokens[0, 2].tolist() == [8, 9, 12, 13, 24, 25, 28, 29]
    assert tokens[0, 3].tolist() == [10, 11, 14, 15, 26, 27, 30, 31]


@pytest.mark.parametrize("patch, H, W", [(1, 4, 6), (2, 4, 6), (3, 6, 9), (4, 8, 4), (7, 28, 28)])
def test_patches_round_trip(patch, H, W):
    images = torch.randn(3, 2, H, W, generator=torch.Generator().manual_seed(0))
    tokens = D.to_patches(images, patch)
    assert tokens.shape == (3, (H // patch) * (W // patch), 2 * patch ** 2)
    assert torch.equal(D.from_patches(tokens, patch, (H, W)), images)


def test_patches_equal_a_strided_convolution():
    # the channel order (colour, row, column) is that of a flattened Conv2d(kernel=stride=p) weight
    gen = torch.Generator().manual_seed(1)
    images = torch.randn(2, 3, 8, 8, generator=gen, dtype=torch.float64)
    conv = torch.nn.Conv2d(3, 5, kernel_size=4, stride=4, dtype=torch.float64)
    expected = conv(images).flatten(2).transpose(1, 2)  # (n, S, 5), tokens in row-major order
    tokens = D.to_patches(images, 4)
    got = tokens @ conv.weight.reshape(5, -1).T + conv.bias
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_patches_need_divisibility_or_padding():
    images = torch.randn(1, 1, 5, 7)
    with pytest.raises(ValueError, match="patch must divide"):
        D.to_patches(images, 2)
    tokens = D.to_patches(images, 2, pad=True)
    assert tokens.shape == (1, 3 * 4, 4)
    assert torch.equal(D.from_patches(tokens, 2, (5, 7), pad=True), images)
    # the padding is zeros: the last token row covers image row 4 and a zero row 5
    assert torch.all(D.to_patches(images, 2, pad=True)[0, -1, 2:] == 0)
    with pytest.raises(ValueError, match="patch"):
        D.to_patches(images, 0)
    with pytest.raises(ValueError, match="do not tile"):
        D.from_patches(torch.zeros(1, 5, 4), 2, (4, 4))


# ---------------------------------------------------------------- standardise, Dataset, Batches

def test_standardise_uses_training_statistics_only():
    rng = np.random.default_rng(0)
    train, test = rng.normal(3, 2, size=(500, 4)), rng.normal(-10, 7, size=(50, 4))
    tr, te = D.standardise(train, test)
    assert abs(tr.mean()) < 1e-12 and abs(tr.std() - 1) < 1e-12
    np.testing.assert_allclose(te, (test - train.mean()) / train.std(), rtol=1e-14)
    # changing the test set does not change how the training set is mapped
    tr2, _ = D.standardise(train, test * 100)
    assert np.array_equal(tr, tr2)
    # per feature, with a constant feature only centred
    train[:, 2] = 5.0
    tr, = D.standardise(train, per_feature=True)
    np.testing.assert_allclose(tr.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(tr.std(axis=0), [1, 1, 0, 1], atol=1e-12)
    with pytest.raises(ValueError, match="constant"):
        D.standardise(np.ones((4, 3)))


def test_batches_cover_each_sample_once_per_epoch(digits):
    batches = digits.loader("train", batch_size=100, seed=4)
    assert len(batches) == 15  # ⌈1437 / 100⌉
    first = torch.cat([y for _, y in batches])
    second = torch.cat([y for _, y in batches])
    assert torch.equal(first.sort().values, digits.y_train.sort().values)
    assert not torch.equal(first, second)  # a fresh permutation each epoch
    replay = digits.loader("train", batch_size=100, seed=4)
    assert torch.equal(torch.cat([y for _, y in replay]), first)  # same seed, same order
    test = torch.cat([y for _, y in digits.loader("test", batch_size=64)])
    assert torch.equal(test, digits.y_test)  # the test split is not shuffled by default
    assert len(digits.loader("train", batch_size=100, drop_last=True)) == 14
    for size, drop in ((100, False), (100, True), (1437, True), (64, False)):   # the count is what a pass yields
        loader = digits.loader("train", batch_size=size, drop_last=drop)
        assert len(list(loader)) == len(loader) == D.Batches.count(1437, size, drop)
    with pytest.raises(ValueError, match="batch_size"):
        digits.loader(batch_size=0)
    with pytest.raises(ValueError, match="split"):
        digits.loader("validation")


def test_dataset_tuple_inputs_map_and_to():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(10, 3, generator=gen), torch.randn(10, 2, generator=gen)
    y = torch.arange(10) % 3
    data = D.Dataset((a, b), y, (a[:4], b[:4]), y[:4], n_classes=3, name="pair", shape=((3,), (2,)))
    (xa, xb), yb = next(iter(data.loader(batch_size=4, seed=0)))
    assert xa.shape == (4, 3) and xb.shape == (4, 2)
    # rows stay aligned across the two inputs and the labels
    idx = [int(torch.nonzero((a == row).all(dim=1))[0]) for row in xa]
    assert torch.equal(xb, b[idx]) and torch.equal(yb, y[idx])
    double = data.to(dtype=torch.float64)
    assert double.x_train[0].dtype == torch.float64 and double.y_train.dtype == torch.int64
    doubled = data.map_x(lambda t: torch.cat([t, t], dim=1))
    assert doubled.shape == ((6,), (4,))
    with pytest.raises(ValueError, match="same number of samples"):
        D.Dataset(a, y[:5], a, y, n_classes=3, name="bad", shape=(3,))
    with pytest.raises(ValueError, match="lie in"):
        D.Dataset(a, y + 5, a, y, n_classes=3, name="bad", shape=(3,))
