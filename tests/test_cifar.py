"""CIFAR-10 from a user-supplied folder: the python batches read without torchvision, the refusal when they are
absent, and the CKA and effective-width studies run end to end on a small generated file set in the same format."""
from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
import torch

from rmtnet.nets import data as D
from rmtnet.cli import load_simulation
from rmtnet.studies import mixer_width, subnetwork_ensembles

PER_BATCH, N_TEST = 40, 60          # 5·40 = 200 training and 60 test images


def write_cifar(folder, seed=0):
    """A small CIFAR-10 file set in the exact format of the python version: FOLDER/cifar-10-batches-py/ with
    data_batch_1 … 5 and test_batch, pickled dicts of b"data" (uint8, (n, 3072): the R, G, B planes, row-major)
    and b"labels" (a list of ints), plus b"batch_label" and b"filenames" as in the originals. The images are noise
    whose red plane is brighter by 10 grey levels per class, the blue plane quartered (channels that differ)."""
    rng = np.random.default_rng(seed)
    out = folder / "cifar-10-batches-py"
    out.mkdir(parents=True)
    every = {}
    for name, n in [(f"data_batch_{i}", PER_BATCH) for i in range(1, 6)] + [("test_batch", N_TEST)]:
        labels = rng.integers(0, 10, size=n)
        images = rng.integers(0, 150, size=(n, 3, 32, 32))
        images[:, 0] += 10 * labels[:, None, None]
        images[:, 2] //= 4
        batch = {b"batch_label": name.encode(), b"labels": [int(v) for v in labels],
                 b"data": images.reshape(n, 3072).astype(np.uint8),
                 b"filenames": [f"img_{name}_{i}.png".encode() for i in range(n)]}
        with open(out / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)
        every[name] = (images.astype(np.uint8), labels)
    return every


@pytest.fixture(scope="module")
def cifar_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cifar")
    return folder, write_cifar(folder)


def test_batches_are_read_in_order_with_the_channel_standardisation(cifar_folder):
    folder, raw = cifar_folder
    d = D.cifar10(folder, dtype=torch.float64)
    assert (d.n_train, d.n_test, d.shape, d.n_classes) == (5 * PER_BATCH, N_TEST, (3, 32, 32), 10)
    x_train = np.concatenate([raw[f"data_batch_{i}"][0] for i in range(1, 6)]) / 255.0
    y_train = np.concatenate([raw[f"data_batch_{i}"][1] for i in range(1, 6)])
    assert d.y_train.tolist() == y_train.tolist() and d.y_test.tolist() == raw["test_batch"][1].tolist()
    mean, std = x_train.mean(axis=(0, 2, 3)), x_train.std(axis=(0, 2, 3))        # per channel, training only
    assert np.allclose(d.info["channel_mean"], mean, rtol=0, atol=1e-14)
    assert np.allclose(d.info["channel_std"], std, rtol=0, atol=1e-14)
    expected = (raw["test_batch"][0] / 255.0 - mean[None, :, None, None]) / std[None, :, None, None]
    torch.testing.assert_close(d.x_test, torch.as_tensor(expected), rtol=0, atol=1e-12)
    x = d.x_train
    torch.testing.assert_close(x.mean(dim=(0, 2, 3)), torch.zeros(3, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(x.std(dim=(0, 2, 3), unbiased=False), torch.ones(3, dtype=torch.float64), rtol=0,
                               atol=1e-12)
    # row k of a batch is pixel (c, i, j) at k = 1024 c + 32 i + j
    first = d.x_train[0, :, 2, 5].numpy() * std + mean
    assert np.allclose(first * 255, raw["data_batch_1"][0][0, :, 2, 5], atol=1e-9)


def test_folder_from_argument_subfolder_or_environment(cifar_folder, monkeypatch):
    folder, _ = cifar_folder
    inner = folder / "cifar-10-batches-py"
    assert D.cifar10_path(folder) == inner and D.cifar10_path(inner) == inner and D.cifar10_path(str(inner)) == inner
    monkeypatch.setenv("RMTNET_CIFAR10", str(folder))
    assert D.cifar10_path() == inner
    assert torch.equal(D.cifar10().x_test, D.cifar10(folder).x_test)
    assert D.classification("cifar10").n_test == N_TEST


def test_refusal_says_where_to_put_the_files_and_where_to_get_them(tmp_path, monkeypatch):
    monkeypatch.delenv("RMTNET_CIFAR10", raising=False)
    with pytest.raises(FileNotFoundError) as no_folder:
        D.cifar10()
    message = str(no_folder.value)
    for said in ("RMTNET_CIFAR10", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                 "cifar-10-batches-py/data_batch_1", "test_batch", "root=None", "downloads nothing"):
        assert said in message, said
    (tmp_path / "cifar-10-batches-py").mkdir()
    (tmp_path / "cifar-10-batches-py" / "data_batch_1").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="lacks data_batch_2, data_batch_3, data_batch_4, data_batch_5, "
                                                r"test_batch\. .*cifar-10-python\.tar\.gz") as missing:
        D.cifar10(tmp_path)
    assert str(tmp_path / "cifar-10-batches-py") in str(missing.value)
    for study in (lambda: mixer_width.fit("mixer", 8, 4, dataset="cifar10", data_dir=tmp_path, epochs=1),
                  lambda: subnetwork_ensembles.load("cifar10", tmp_path)):
        with pytest.raises(FileNotFoundError, match="RMTNET_CIFAR10=FOLDER"):
            study()


def test_bad_folders_and_damaged_batches(tmp_path, monkeypatch):
    for bad, error in ((3, TypeError), (b"/tmp", TypeError), ("", ValueError), ("a\0b", ValueError)):
        with pytest.raises(error, match="root"):
            D.cifar10(bad)
    monkeypatch.setenv("RMTNET_CIFAR10", " ")
    with pytest.raises(FileNotFoundError, match="RMTNET_CIFAR10 is not set"):
        D.cifar10_path()
    write_cifar(tmp_path)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_3"
    batch.write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="data_batch_3.*not a CIFAR-10 python batch"):
        D.cifar10(tmp_path)
    with open(batch, "wb") as f:
        pickle.dump({b"data": np.zeros((4, 3072), np.float32), b"labels": [0, 1, 2, 3]}, f)
    with pytest.raises(ValueError, match="uint8 of shape"):
        D.cifar10(tmp_path)
    with open(batch, "wb") as f:
        pickle.dump({b"data": np.zeros((4, 3072), np.uint8), b"labels": [0, 1, 2, 10]}, f)
    with pytest.raises(ValueError, match="integers in 0…9"):
        D.cifar10(tmp_path)
    with pytest.raises(ValueError, match="data_dir is read for cifar10 only"):
        D.classification("digits", data_dir=tmp_path)
    with pytest.raises(ValueError, match="name must be one of"):
        D.classification("cifar100")


def test_download_needs_torchvision(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)   # import torchvision → ImportError even where installed
    with pytest.raises(ImportError, match="pip install torchvision"):
        D.cifar10(tmp_path, download=True)
    with pytest.raises(ValueError, match="root must name a folder"):
        D.cifar10(download=True)


def test_cka_and_effective_width_studies_run_on_the_generated_files(cifar_folder, tmp_path):
    """Both studies of Hayase & Karakida (2024) end to end at their tiny sizes on CIFAR-shaped data: 16 tokens of
    8 × 8 × 3 for the CKA study, the 32 × 32 images cut into S = 4 patches of 16 × 16 for the width study."""
    folder, _ = cifar_folder
    cka = load_simulation("cka_mixer_vs_swmlp")
    tables = cka["compute"]("tiny", dataset="cifar10", data_dir=folder)
    assert tables.extras["patch"] == 8
    errors = tables["test errors"]
    assert len(errors) == 3 and errors.test_error.between(0, 1).all()
    summary = tables["diagonal summary"]
    assert summary["mean"].between(0, 1 + 1e-9).all() and len(summary) == 2
    matrix = tables["cka matrix p=1"].drop(columns="mixer_layer").to_numpy()
    assert matrix.shape == (5, 5) and np.isfinite(matrix).all()              # the stem and 2 × 2 sub-blocks

    width = load_simulation("effective_width")
    tables = width["compute"]("tiny", store=tmp_path, n_jobs=1, dataset="cifar10", data_dir=str(folder))
    runs = tables["runs"]
    assert set(runs.model) == set(width["MODELS"]) and (runs.dataset == "cifar10").all()
    assert (runs.tokens == 4).all() and runs.test_error.between(0, 1).all()
    assert (runs.patch == 16).all()                                   # ⌈32/16⌉² = 4 tokens of 3·16² inputs


def test_width_controls_run_on_the_generated_files(cifar_folder, tmp_path):
    """The width controls (data size, SW-MLP widened by sparsity, C against m) at their tiny size on CIFAR-shaped
    data: subsets of the 200 generated training images (100 of them a stratified subset, 200 all), the same 60 test
    images, the tokens cut from the 32 × 32 colour images (S = 4, 9, 16: patches 16, 11, 8)."""
    folder, _ = cifar_folder
    ctrl = load_simulation("width_controls")
    tables = ctrl["compute"]("tiny", store=tmp_path, n_jobs=1, dataset="cifar10", data_dir=str(folder))
    runs = tables["runs"]
    assert (runs.dataset == "cifar10").all() and runs.test_error.between(0, 1).all()
    assert set(runs.n_train) == {100, 200} and set(runs.tokens) == {4, 9, 16}
    assert set(runs.patch) == {16, 11, 8}
    assert set(tables["gap"].n_train) == {100, 200} and len(tables["sparse"]) == 2
    assert tables["sparse"].density.iloc[1] == mixer_width.sparse_density(9, 14, 2 * 8 ** 3)
    sub = mixer_width.patched("cifar10", 16, data_dir=folder, n_train=100)
    assert (sub.n_train, sub.n_test, sub.shape) == (100, N_TEST, (4, 768))


@pytest.mark.parametrize("script, data", [("subnetwork_ensembles", dict(datasets=("cifar10",))),
                                          ("subnetwork_child_steps", dict(datasets=("cifar10",))),
                                          ("annealing", dict(dataset="cifar10"))])
def test_the_thesis_studies_run_on_the_generated_files(cifar_folder, tmp_path, script, data):
    """Whitaker's studies (subnetwork ensembles, steps per child, annealing) at their tiny size on CIFAR-shaped data:
    every run carries the folder given and reads the 200 generated training images from it (at batch 128 an epoch
    is ⌈200/128⌉ = 2 steps, where the offline digits' 1,437 images would be 12)."""
    folder, _ = cifar_folder
    tables = load_simulation(script)["compute"]("tiny", store=tmp_path, n_jobs=1, data_dir=str(folder), **data)
    runs = tables["runs"]
    assert (runs.dataset == "cifar10").all() and (runs.data_dir == str(folder)).all()
    accuracy = runs["final_accuracy" if script == "annealing" else "accuracy"]
    assert accuracy.between(0, 1).all() and runs.parent_accuracy.dropna().between(0, 1).all()
    if script == "subnetwork_child_steps":
        assert (runs.steps_per_epoch.dropna() == 2).all()
