import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rmtnet.nets import data as D
from rmtnet.nets.training import DivergenceError, evaluate, train


pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def digits():
    return D.digits(seed=0)


def mlp(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.Tanh(), nn.Dropout(dropout), nn.Linear(32, 10))


def tiny_regression(n_train=16, dtype=torch.float64):
    return D.teacher_student(n_train, 8, d=3, width=4, seed=0, dtype=dtype)


def test_loss_decreases_on_digits(digits):
    table = train(mlp(), digits, epochs=4, batch_size=64, lr=0.05, progress=False)
    assert list(table.columns) == ["epoch", "step", "lr", "train_loss", "train_error", "test_loss", "test_error",
                                   "wall_s"]
    assert table["epoch"].tolist() == [0, 1, 2, 3, 4]
    assert table["step"].tolist() == [0, 23, 46, 69, 92]  # ⌈1437 / 64⌉ = 23 steps per epoch
    assert np.all(np.diff(table["train_loss"]) < 0)
    assert table["train_loss"].iloc[-1] < 0.25 * table["train_loss"].iloc[0]
    assert table["test_error"].iloc[0] > 0.7 and table["test_error"].iloc[-1] < 0.1  # chance is 0.9


def test_metrics_agree_with_a_direct_evaluation(digits):
    model = mlp()
    table = train(model, digits, epochs=1, batch_size=128, lr=0.05, progress=False)
    model.eval()
    with torch.no_grad():
        out = model(digits.x_test)
    assert table["test_loss"].iloc[-1] == pytest.approx(nn.functional.cross_entropy(out, digits.y_test).item(),
                                                        rel=1e-5)
    assert table["test_error"].iloc[-1] == pytest.approx((out.argmax(1) != digits.y_test).double().mean().item())
    assert evaluate(model, digits, "test")["test_error"] == table["test_error"].iloc[-1]


class Stop(Exception):
    pass


CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                       reason="needs a CUDA build of torch and a GPU")])


@pytest.mark.parametrize("device", ["cpu", CUDA])
def test_interrupted_then_resumed_run_is_identical(digits, tmp_path, device):
    """On the CPU and on CUDA (dropout then draws from the CUDA generator, whose state the checkpoint also holds)."""
    kwargs = dict(epochs=4, batch_size=128, optimizer="adamw", lr=0.01, weight_decay=0.05, schedule="onecycle",
                  seed=3, progress=False, device=device)
    reference_model = mlp(seed=0, dropout=0.2)  # dropout draws from the global torch RNG, saved in the checkpoint
    reference = train(reference_model, digits, **kwargs)

    ckpt, csv = tmp_path / "run.pt", tmp_path / "metrics.csv"

    def stop_after_epoch_2(epoch, model, row):
        if epoch == 2:
            raise Stop

    with pytest.raises(Stop):
        train(mlp(seed=0, dropout=0.2), digits, checkpoint=ckpt, metrics=csv, callback=stop_after_epoch_2, **kwargs)
    assert ckpt.exists() and pd.read_csv(csv)["epoch"].tolist() == [0, 1, 2]

    resumed_model = mlp(seed=99, dropout=0.2)  # other initial weights: everything must come from the checkpoint
    seen = []
    resumed = train(resumed_model, digits, checkpoint=ckpt, metrics=csv,
                    callback=lambda epoch, model, row: seen.append(epoch), **kwargs)
    assert seen == [3, 4]
    for (name, a), (_, b) in zip(reference_model.state_dict().items(), resumed_model.state_dict().items()):
        assert a.device.type == device and torch.equal(a, b), name
    timeless = ["epoch", "step", "lr", "train_loss", "train_error", "test_loss", "test_error"]
    pd.testing.assert_frame_equal(resumed[timeless], reference[timeless], check_exact=True)
    # the CSV holds each float's shortest repr, which Python's own float() reads back exactly (pandas' default C
    # parser need not: pandas 3.0.6 on the GPU machine kept 16 decimal places, pandas 3.1.1 here every digit)
    exact = {c: float for c in timeless if c not in ("epoch", "step")}
    pd.testing.assert_frame_equal(pd.read_csv(csv, converters=exact)[timeless], reference[timeless], check_exact=True)

    # a finished run returns its table; other arguments are refused
    again = train(mlp(), digits, checkpoint=ckpt, **kwargs)
    pd.testing.assert_frame_equal(again, resumed)
    with pytest.raises(ValueError, match="other arguments.*lr"):
        train(mlp(), digits, checkpoint=ckpt, **{**kwargs, "lr": 0.02})


def test_same_seed_same_run_other_seed_other_shuffle():
    data = tiny_regression(n_train=64)
    weights, tables = [], []
    for seed in (0, 0, 1):
        torch.manual_seed(5)  # the same initial weights; train's seed fixes the shuffling
        model = nn.Linear(3, 1, dtype=torch.float64)
        tables.append(train(model, data, epochs=2, batch_size=8, seed=seed, progress=False).drop(columns="wall_s"))
        weights.append(model.weight.detach().clone())
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)


def test_metrics_csv_is_written_during_the_run(digits, tmp_path):
    csv = tmp_path / "sub" / "metrics.csv"
    seen = []

    def look(epoch, model, row):
        written = pd.read_csv(csv)
        seen.append((epoch, written["epoch"].tolist()))

    train(mlp(), digits, epochs=5, eval_every=2, batch_size=256, lr=0.05, metrics=csv, callback=look, progress=False)
    assert seen == [(0, [0]), (2, [0, 2]), (4, [0, 2, 4]), (5, [0, 2, 4, 5])]
    assert not list(csv.parent.glob("*.tmp"))  # temporary files were renamed away


def onecycle_lr(k, lr, total, pct=0.3, div=25.0, final_div=1e4):
    """Smith's one-cycle policy as torch's OneCycleLR defines it: cosine annealing from lr/div up to lr over steps
    0 … pct·T − 1, then down to lr/div/final_div at step T − 1."""
    start, end = lr / div, lr / div / final_div
    k1 = pct * total - 1

    def cos(a, b, t):
        return b + (a - b) * (1 + math.cos(math.pi * t)) / 2

    return cos(start, lr, k / k1) if k <= k1 else cos(lr, end, (k - k1) / (total - 1 - k1))


@pytest.mark.parametrize("schedule", ["onecycle", "cosine", "step", "constant"])
def test_learning_rate_schedules_follow_their_closed_forms(schedule):
    # one step per epoch (batch = the whole training split), so the per-evaluation lr column is the per-step trace
    total, lr = 20, 0.4
    table = train(nn.Linear(3, 1, dtype=torch.float64), tiny_regression(), epochs=total, batch_size=16, lr=lr,
                  momentum=0.0, schedule=schedule, progress=False)
    trace = table["lr"].to_numpy()[1:]  # row k + 1 holds the lr of step k
    k = np.arange(total)
    expected = {
        "onecycle": [onecycle_lr(i, lr, total) for i in k],
        "cosine": lr * (1 + np.cos(np.pi * k / total)) / 2,
        "step": lr * np.where(k < 10, 1.0, np.where(k < 15, 0.1, 0.01)),
        "constant": np.full(total, lr),
    }[schedule]
    np.testing.assert_allclose(trace, expected, rtol=1e-12, atol=0)
    if schedule == "onecycle":
        assert int(np.argmax(trace)) == 5 and trace.max() == pytest.approx(lr, rel=1e-15)  # step 0.3·20 − 1


def test_float64_linear_regression_reaches_machine_precision():
    data = D.teacher_student(n_train=256, n_test=64, d=8, width=16, seed=0, activation="linear",
                             dtype=torch.float64)
    torch.manual_seed(0)
    model = nn.Linear(8, 1, bias=False, dtype=torch.float64)
    table = train(model, data, epochs=60, batch_size=32, optimizer="sgd", lr=0.1, progress=False)
    assert table["test_mse"].iloc[-1] < 1e-12 and table["train_mse"].iloc[-1] < 1e-12
    beta = data.info["W"].T @ data.info["a"] / math.sqrt(8 * 16)
    torch.testing.assert_close(model.weight.detach()[0], beta, rtol=0, atol=1e-5)


def test_masked_weights_stay_exactly_zero_under_adamw_with_weight_decay(digits):
    from rmtnet.nets.layers import MaskedLinear

    model = nn.Sequential(nn.Flatten(), MaskedLinear(64, 48, density=0.25, seed=0), nn.ReLU(),
                          MaskedLinear(48, 10, density=0.5, seed=1))
    layers = [model[1], model[3]]
    masks = [layer.mask.clone() for layer in layers]
    before = [layer.weight.detach().clone() for layer in layers]
    table = train(model, digits, epochs=3, batch_size=64, optimizer="adamw", lr=1e-2, weight_decay=0.1,
                  schedule="cosine", progress=False)
    assert table["test_error"].iloc[-1] < 0.2
    for layer, mask, w0 in zip(layers, masks, before):
        assert torch.equal(layer.mask, mask)
        assert torch.all(layer.weight[mask == 0] == 0)  # exactly zero, not merely small
        assert torch.all(layer.weight[mask == 1] != w0[mask == 1])  # the kept weights did train


def test_non_finite_loss_raises_before_the_update():
    class NaNOnThirdStep(nn.Linear):
        """Returns NaN on the third training forward pass and remembers the weights it had then."""
        calls, weight_then = 0, None

        def forward(self, x):
            out = super().forward(x)
            if self.training:
                self.calls += 1
                if self.calls == 3:
                    self.weight_then = self.weight.detach().clone()
                    return out * float("nan")
            return out

    model = NaNOnThirdStep(3, 1, dtype=torch.float64)
    with pytest.raises(FloatingPointError, match="epoch 2, step 3"):  # 2 steps per epoch
        train(model, tiny_regression(n_train=16), epochs=3, batch_size=8, progress=False)
    assert torch.equal(model.weight.detach(), model.weight_then)  # the NaN step was not applied

    # non-finite data cannot reach training: the Dataset refuses it
    data = tiny_regression(n_train=16)
    x_train = data.x_train.clone()
    x_train[3, 0] = float("nan")
    with pytest.raises(ValueError, match="x_train"):
        D.Dataset(x_train, data.y_train, data.x_test, data.y_test, None, "nan", data.shape)
    # and a model that is already non-finite is caught at the first evaluation, before any training
    broken = nn.Linear(3, 1, dtype=torch.float64)
    with torch.no_grad():
        broken.weight[0, 1] = float("inf")
    with pytest.raises(FloatingPointError, match="train.*epoch 0, step 0"):
        train(broken, data, epochs=1, progress=False)

    # and so is a diverging learning rate
    with pytest.raises(FloatingPointError, match=r"epoch \d+, step \d+"):
        train(nn.Linear(3, 1), tiny_regression(dtype=torch.float32), epochs=200, batch_size=4, lr=50.0,
              progress=False)


@pytest.mark.parametrize("bad, name", [
    (dict(epochs=0), "epochs"), (dict(lr=0.0), "lr"), (dict(lr=float("nan")), "lr"), (dict(batch_size=0), "batch_size"),
    (dict(optimizer="adam"), "optimizer"), (dict(schedule="linear"), "schedule"), (dict(momentum=1.0), "momentum"),
    (dict(weight_decay=-1e-3), "weight_decay"), (dict(eval_every=0), "eval_every"), (dict(loss="hinge"), "loss"),
    (dict(loss="cross_entropy"), "cross_entropy"),
])
def test_bad_arguments_name_themselves(bad, name):
    kwargs = dict(epochs=1, progress=False) | bad
    with pytest.raises(ValueError, match=name):
        train(nn.Linear(3, 1, dtype=torch.float64), tiny_regression(), **kwargs)


def test_two_inputs_mse_on_labels_and_a_callable_loss():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(200, 3, generator=gen), torch.randn(200, 2, generator=gen)
    y = (a[:, 0] + b[:, 1] > 0).long()
    data = D.Dataset((a[:160], b[:160]), y[:160], (a[160:], b[160:]), y[160:], n_classes=2, name="pair",
                     shape=((3,), (2,)))

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.lin = nn.Linear(5, 2)

        def forward(self, u, v):
            return self.lin(torch.cat([u, v], dim=1))

    table = train(TwoInputs(), data, epochs=30, batch_size=32, lr=0.1, loss="mse", progress=False)
    assert table["test_error"].iloc[-1] < 0.15  # linearly separable up to the two-feature margin
    by_name = train(TwoInputs(), data, epochs=2, batch_size=32, progress=False)
    by_callable = train(TwoInputs(), data, epochs=2, batch_size=32, loss=nn.functional.cross_entropy,
                        progress=False)
    cols = ["train_loss", "test_loss", "test_error"]
    pd.testing.assert_frame_equal(by_name[cols], by_callable[cols], check_exact=True)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_trains_on_cuda(digits):
    model = mlp()
    table = train(model, digits, epochs=2, batch_size=64, lr=0.05, device="cuda", progress=False)
    assert next(model.parameters()).is_cuda
    assert table["test_error"].iloc[-1] < 0.2


def test_a_truncated_checkpoint_is_a_clear_error_naming_the_file(digits, tmp_path):
    """A checkpoint cut short (a full disk, a copy interrupted) stops train with the file's name and what to do,
    not torch's zip-reader message."""
    ckpt = tmp_path / "run.pt"
    train(mlp(), digits, epochs=1, batch_size=256, lr=0.05, checkpoint=ckpt)
    ckpt.write_bytes(ckpt.read_bytes()[:200])
    with pytest.raises(RuntimeError, match=r"checkpoint .*run\.pt cannot be read .* delete it to restart"):
        train(mlp(), digits, epochs=1, batch_size=256, lr=0.05, checkpoint=ckpt)


def test_bad_arguments_are_named_and_divergence_is_an_overflow(tmp_path, monkeypatch):
    """Found by tests/test_fuzz.py: a non-module model gave AttributeError; seed went through int() (NaN: "cannot
    convert float NaN to integer", 10**30: "Overflow when unpacking long long"); an array for optimizer, schedule or
    loss gave NumPy's "truth value … ambiguous"; a number for checkpoint or metrics "expected str, bytes or
    os.PathLike", a directory a RuntimeError or OSError; dtype=torch.complex64 "clamp is not supported for complex
    types"; lr = 1e308 on float32 weights torch's "value cannot be converted to type float without overflow"; a model
    that does not fit the data torch's shape RuntimeError; and a run diverging at lr = 1e30 raised, at the
    evaluation, a FloatingPointError naming neither lr nor weight_decay."""
    from rmtnet.nets.training import DivergenceError
    monkeypatch.chdir(tmp_path)
    data = tiny_regression()
    model = lambda: nn.Linear(3, 1, dtype=torch.float64)     # noqa: E731
    for kwargs, name in ((dict(seed=np.nan), "seed"), (dict(seed=10 ** 30), "seed"), (dict(seed=-1), "seed"),
                         (dict(optimizer=np.array(["sgd"])), "optimizer"), (dict(schedule=np.array([])), "schedule"),
                         (dict(loss=np.array([1.0, 2.0])), "loss"), (dict(checkpoint=3), "checkpoint"),
                         (dict(checkpoint=""), "checkpoint"), (dict(metrics="."), "metrics"),
                         (dict(dtype=torch.complex64), "dtype"), (dict(dtype="float32"), "dtype"),
                         (dict(lr=1e308, dtype=torch.float32), "lr"),
                         (dict(weight_decay=1e300, dtype=torch.float32), "weight_decay")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            train(model(), data, epochs=1, progress=False, **kwargs)
    with pytest.raises(ValueError, match=r"\bmodel\b"):
        train(None, data, epochs=1, progress=False)
    with pytest.raises(ValueError, match=r"model cannot be applied to data"):
        train(nn.Linear(5, 1, dtype=torch.float64), data, epochs=1, progress=False)
    for kwargs, name in ((dict(lr=1e30), "lr"), (dict(weight_decay=1e30), "weight_decay")):
        with pytest.raises(DivergenceError, match=rf"\b{name}\b") as info:
            train(model(), data, epochs=2, batch_size=4, progress=False, **kwargs)
        assert isinstance(info.value, OverflowError) and isinstance(info.value, FloatingPointError)


def test_squared_loss_conventions_mse_is_half_the_mean_squared_error():
    # L = c · mean over samples and outputs of (f − y)²: c = ½ for "mse" (neural-tangents' and ntk_predict's
    # convention), 1 for "mean_squared" (torch's mse_loss); by hand on a 2 × 2 residual (1, 2; −1, 0): mean 6/4.
    import rmtnet.nets.training as T
    out, y = torch.tensor([[1.0, 2.0], [-1.0, 0.0]]), torch.zeros(2, 2)
    T._MSE_NOTICE_GIVEN = False
    with pytest.warns(FutureWarning, match="½·mean"):
        half = T._loss_function("mse", None)(out, y)
    assert float(half) == 0.75 and float(T._loss_function("mean_squared", None)(out, y)) == 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        T._loss_function("mse", None)                            # the notice is given once per process
    labels = torch.tensor([1, 0])                                # one-hot targets (0, 1) and (1, 0)
    assert float(T._loss_function("mean_squared", 2)(out, labels)) == pytest.approx((1 + 1 + 4 + 0) / 4)


def test_a_loss_past_blowup_times_its_start_is_a_divergence():
    # f(x) = Wx on 4 inputs: above the border 2Nk/λ_max(XXᵀ) the loss grows by (ηλ − 1)² per step
    rng = np.random.default_rng(2)
    x, y = torch.from_numpy(rng.standard_normal((4, 6))), torch.from_numpy(rng.standard_normal((4, 1)))
    data = D.Dataset(x, y, x[:1], y[:1], n_classes=None, name="linear", shape=(6,))
    border = 2 * 4 / float(np.linalg.eigvalsh((x @ x.T).numpy())[-1])
    torch.manual_seed(0)
    with pytest.raises(DivergenceError, match="blowup = 10"):
        train(nn.Linear(6, 1, bias=False, dtype=torch.float64), data, epochs=100, batch_size=4, lr=1.5 * border,
              momentum=0.0, loss="mse", blowup=10.0, progress=False)
    table = train(nn.Linear(6, 1, bias=False, dtype=torch.float64), data, epochs=100, batch_size=4,
                  lr=0.5 * border, momentum=0.0, loss="mse", blowup=10.0, progress=False)
    assert len(table) == 101
    with pytest.raises(ValueError, match="blowup"):
        train(nn.Linear(6, 1, dtype=torch.float64), data, epochs=1, blowup=1.0, progress=False)


def test_a_checkpoint_from_before_mse_took_its_half_is_not_resumed(tmp_path):
    data, ckpt = tiny_regression(), tmp_path / "run.pt"
    kwargs = dict(epochs=2, batch_size=8, loss="mse", checkpoint=ckpt, progress=False)
    train(nn.Linear(3, 1, dtype=torch.float64), data, **kwargs)
    state = torch.load(ckpt, weights_only=True)
    del state["config"]["squared_loss_factor"]                  # what rmtnet 0.1 wrote
    torch.save(state, ckpt)
    with pytest.raises(ValueError, match="squared_loss_factor"):
        train(nn.Linear(3, 1, dtype=torch.float64), data, **{**kwargs, "epochs": 3})
