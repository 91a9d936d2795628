"""One training loop for every rmtnet model: seeded, resumable, with a tidy metrics table.

:func:`train` runs minibatch SGD or AdamW on a :class:`~rmtnet.nets.data.Dataset` and returns a pandas table with
one row per evaluation. With ``checkpoint=path`` it saves everything that determines the rest of the run after every
epoch (model, optimiser, scheduler, the global torch RNG and the shuffling generator, the metrics so far) and resumes
from that file when called again: on CPU an interrupted-then-resumed run ends with exactly the weights and metrics
of an uninterrupted one. Files are written atomically (a temporary file, then ``os.replace``).
"""
from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Callable

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from rmtnet._io import atomic_write, output_path
from rmtnet.nets._modules import check_model, model_dtype
from rmtnet.nets.data import Dataset
from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar
from rmtnet.spectra.stability import SQUARED_LOSSES

__all__ = ["train", "evaluate", "loss_function", "DivergenceError"]

OPTIMIZERS = ("sgd", "adamw")
SCHEDULES = ("constant", "cosine", "onecycle", "step")
LOSSES = ("cross_entropy", "mse", "mean_squared")


# what a checkpoint written by train holds (read back by _Run._resume)
_CHECKPOINT_KEYS = frozenset({"config", "model", "optimizer", "scheduler", "torch_rng", "shuffle_rng", "rows",
                              "epoch", "step", "wall_s"})


class DivergenceError(FloatingPointError, OverflowError):
    """A training loss or metric left float64 (NaN or ±inf): the run diverged. Both a FloatingPointError (as it
    always was) and an OverflowError (the weights or the loss exceeded float64); the message names the epoch, the
    step and the optimiser's lr, momentum and weight_decay.

    Parameters
    ----------
    message : str
        What diverged, and where.

    Examples
    --------
    >>> issubclass(DivergenceError, FloatingPointError), issubclass(DivergenceError, OverflowError)
    (True, True)
    """


def _paths(**named):
    """The output files ``named`` (name → path or None) as Paths or None, in order, each checked by
    :func:`rmtnet._io.output_path` (a writable place, not a directory, none of the others): TypeError for a
    non-path, ValueError naming the argument for a bad path or one path given twice."""
    paths = {}
    for name, value in named.items():
        paths[name] = None if value is None else output_path(name, value, others=paths)
    return list(paths.values())


def _shapes(x):
    return [tuple(t.shape) for t in x] if isinstance(x, tuple) else tuple(x.shape)


def apply_model(model, x):
    """``model(x)``, or ``model(*x)`` for a tuple of inputs (a batch's inputs as :func:`train` hands them over).

    Parameters
    ----------
    model : callable
        The network.
    x : torch.Tensor or tuple of torch.Tensor
        The inputs.

    Returns
    -------
    torch.Tensor
        The model's output.

    Examples
    --------
    A tuple is spread over the arguments, so torch.add gets (1, 2) and (10, 20) and returns (11, 22):

    >>> apply_model(torch.add, (torch.tensor([1, 2]), torch.tensor([10, 20]))).tolist()
    [11, 22]
    >>> apply_model(torch.nn.Identity(), torch.tensor([3.0])).tolist()
    [3.0]
    """
    return model(*x) if isinstance(x, tuple) else model(x)


def _one_hot_targets(output, y, n_classes, loss):
    """The regression targets, or one-hot class targets, checked to have the output's shape."""
    if n_classes is not None:
        y = F.one_hot(y, n_classes).to(output.dtype)
    if output.shape != y.shape:
        raise ValueError(f"loss={loss!r} needs the model output to have the targets' shape {tuple(y.shape)}, "
                         f"got {tuple(output.shape)}")
    return y


def _mse_notice():
    """Once per process: loss="mse" changed its factor in rmtnet 0.2 (a FutureWarning until 0.3)."""
    global _MSE_NOTICE_GIVEN
    if not _MSE_NOTICE_GIVEN:
        _MSE_NOTICE_GIVEN = True
        warnings.warn("since rmtnet 0.2, train's loss='mse' is ½·mean((f − y)²) over samples and outputs (the "
                      "convention of rmtnet.spectra.predict and neural-tangents), half of the mean squared error it "
                      "was before; loss='mean_squared' is the old one (torch.nn.functional.mse_loss). This notice is "
                      "given once and goes in rmtnet 0.3", FutureWarning, stacklevel=4)


_MSE_NOTICE_GIVEN = False


def _default_loss(loss, n_classes):
    """``loss``, or for None the default: "cross_entropy" for classification, "mse" for regression."""
    if loss is None:
        return "mse" if n_classes is None else "cross_entropy"
    return loss


def _loss_function(loss, n_classes, notice=True):
    """``(output, y) ↦ mean loss`` for ``loss`` ∈ {"cross_entropy", "mse", "mean_squared", callable}; None picks
    cross-entropy for classification and "mse" for regression. The squared losses compare the output with one-hot
    targets for class labels: "mse" is ½·mean((f − y)²) over samples and outputs
    (:data:`rmtnet.spectra.stability.SQUARED_LOSSES`),
    "mean_squared" the mean without ½."""
    loss = _default_loss(loss, n_classes)
    if callable(loss):                          # a built-in loss or one checked already passes as it is
        return loss if loss is F.cross_entropy or getattr(loss, "rmtnet_checked", False) else _checked_loss(loss)
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES} or a callable (output, y) -> scalar, got {loss!r:.60}")
    if loss == "cross_entropy":
        if n_classes is None:
            raise ValueError("loss='cross_entropy' needs class labels; this data set is a regression (n_classes=None)")
        return F.cross_entropy
    if loss == "mse" and notice:
        _mse_notice()
    factor = SQUARED_LOSSES[loss]

    def squared(output, y):
        return factor * F.mse_loss(output, _one_hot_targets(output, y, n_classes, loss))
    squared.__qualname__, squared.rmtnet_checked = loss, True
    return squared


class CallableResultError(TypeError, ValueError):
    """A callable given to :func:`train` (``loss=``, ``schedule=``, ``probes=``) returned something it cannot use; the
    message names the argument and what came back. A TypeError (the wrong kind of result) and a ValueError (what a
    probe's wrong result always raised)."""


def _returned(value):
    """What a callable returned, in words: the type, a tensor's shape and dtype, a short repr."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r:.60}"


def _checked_loss(loss):
    """A user's ``loss`` callable with each result checked: one floating-point number as a torch tensor (0-d or of one
    element, returned 0-d), finite; else :class:`CallableResultError` / :class:`DivergenceError` naming ``loss``."""
    name = _name(loss)

    def checked(output, y):
        value = loss(output, y)
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            raise CallableResultError(f"loss= callable {name} must return the mean loss as a floating-point torch "
                                      f"tensor (with its graph: not .item() or a Python float), got "
                                      f"{_returned(value)}")
        if value.numel() != 1:
            raise CallableResultError(f"loss= callable {name} must return one number, the mean loss over the batch "
                                      f"(reduce it with .mean()), got {_returned(value)}")
        if not bool(torch.isfinite(value)):
            raise DivergenceError(f"the loss callable {name} (loss=) returned {float(value.detach())}")
        return value.reshape(())
    checked.__qualname__, checked.rmtnet_checked, checked.user_callable = name, True, True
    return checked


def loss_function(loss, n_classes):
    """The mean loss ``(output, y) -> L`` that :func:`train` minimises for its ``loss`` argument on a data set with
    ``n_classes`` classes (None: regression), without the once-per-process notice of "mse"'s convention.

    Parameters
    ----------
    loss : str, callable or None
        As in :func:`train`.
    n_classes : int or None
        The data set's classes (squared losses compare the output with one-hot targets), or None.

    Returns
    -------
    callable
        ``(output, y) -> mean loss``.

    Examples
    --------
    ½·mean over 2 samples × 2 outputs of (f − y)²: (1 + 0 + 4 + 1)/8 = 0.75.

    >>> out, y = torch.tensor([[1.0, 0.0], [2.0, 1.0]]), torch.zeros(2, 2)
    >>> float(loss_function("mse", None)(out, y)), float(loss_function("mean_squared", None)(out, y))
    (0.75, 1.5)
    """
    return _loss_function(loss, n_classes, notice=False)


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: Dataset, split: str = "test", loss: str | Callable | None = None,
             batch_size: int = 1024) -> dict:
    """Mean loss over ``split`` with the model in eval mode, and the error rate 1 − accuracy (classification: argmax
    of the output) or the mean squared error over samples and outputs (regression). Keys: ``{split}_loss`` and
    ``{split}_error`` or ``{split}_mse``. The data are moved to the device and floating dtype of the model's first
    parameter (a no-op when they are there already).

    Parameters
    ----------
    model : torch.nn.Module
        The network (put back in its training mode afterwards).
    data : rmtnet.nets.data.Dataset
        The data.
    split : {"test", "train"}, default "test"
        The split evaluated.
    loss : str or callable, optional
        As in :func:`train` (None: cross-entropy for classification, MSE for regression).
    batch_size : int, default 1024
        Examples per forward pass.

    Returns
    -------
    dict
        ``{f"{split}_loss": float, f"{split}_error" or f"{split}_mse": float}``.

    Examples
    --------
    The identity on 2-d inputs: the logits are the inputs. By hand, (1, 0) with label 0 costs log(1 + e⁻¹) =
    0.313262, with label 1 log(1 + e) = 1.313262, so the mean is (2·0.313262 + 1.313262)/3 = 0.646595; the
    predictions (0, 1, 0) miss one label of three:

    >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), torch.tensor([0, 1, 1])
    >>> data = Dataset(x, y, x, y, n_classes=2, name="toy", shape=(2,))
    >>> net = torch.nn.Linear(2, 2)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.eye(2)), net.bias.zero_()
    >>> row = evaluate(net, data)
    >>> print(f"{row['test_loss']:.6f} {row['test_error']:.6f}")
    0.646595 0.333333
    """
    loss_fn = _loss_function(loss, data.n_classes)
    param = next(model.parameters(), None)
    if param is not None:
        data = data.to(param.device, param.dtype)
    was_training = model.training
    model.eval()
    total_loss = total_score = 0.0
    for x, y in data.loader(split, batch_size=batch_size, shuffle=False):
        out = apply_model(model, x)
        total_loss += float(loss_fn(out, y)) * len(y)
        if data.n_classes is None:
            total_score += float(F.mse_loss(out, y.reshape(out.shape))) * len(y)
        else:
            total_score += float((out.argmax(dim=1) != y).sum())
    model.train(was_training)
    n = len(data.split(split)[1])
    row = {f"{split}_loss": total_loss / n, f"{split}_{'mse' if data.n_classes is None else 'error'}": total_score / n}
    if not all(math.isfinite(v) for v in row.values()):
        raise FloatingPointError(f"non-finite {split} metrics {row}")
    return row


def _optimizer(name, params, lr, momentum, weight_decay):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def _scheduler(schedule, optimizer, total_steps, lr):
    """Every schedule is stepped once per optimisation step (``total_steps`` in all)."""
    S = torch.optim.lr_scheduler
    if callable(schedule):
        sched = schedule(optimizer, total_steps)
        if isinstance(sched, torch.optim.Optimizer) or not all(
                callable(getattr(sched, f, None)) for f in ("step", "state_dict", "load_state_dict")):
            raise CallableResultError(f"schedule= callable {_name(schedule)} must return a learning-rate scheduler "
                                      f"(step(), state_dict(), load_state_dict(): e.g. "
                                      f"torch.optim.lr_scheduler.LambdaLR), got {_returned(sched)}")
        return sched
    if schedule == "constant":
        return S.ConstantLR(optimizer, factor=1.0, total_iters=0)
    if schedule == "cosine":
        return S.CosineAnnealingLR(optimizer, T_max=total_steps)
    if schedule == "onecycle":
        return S.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps, cycle_momentum=False)
    return S.MultiStepLR(optimizer, milestones=[total_steps // 2, (3 * total_steps) // 4], gamma=0.1)


def _name(x):
    return x if isinstance(x, str) or x is None else getattr(x, "__qualname__", repr(x))


def _checked_arguments(data, epochs, batch_size, eval_every, lr, momentum, weight_decay, optimizer, schedule,
                       callback, seed, dtype):
    """:func:`train`'s data and hyperparameters checked, in that order; returns the numbers it goes on with:
    ``(epochs, batch_size, eval_every, lr, momentum, weight_decay, seed)``."""
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be an rmtnet.nets.data.Dataset, got {type(data).__name__}")
    epochs = integer_at_least("epochs", epochs)
    batch_size = integer_at_least("batch_size", batch_size)
    eval_every = integer_at_least("eval_every", eval_every)
    lr = real_scalar("lr", lr, lo=0, lo_open=True)
    momentum = real_scalar("momentum", momentum, lo=0, hi=1, hi_open=True)
    weight_decay = real_scalar("weight_decay", weight_decay, lo=0)
    one_of("optimizer", optimizer, OPTIMIZERS)
    if not (callable(schedule) or (isinstance(schedule, str) and schedule in SCHEDULES)):
        raise ValueError(f"schedule must be one of {SCHEDULES} or a callable (optimizer, total_steps), "
                         f"got {schedule!r:.60}")
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r:.60}")
    seed = integer_at_least("seed", seed, 0)
    if seed >= 2 ** 63:
        raise ValueError(f"seed must be below 2**63 (torch's generators take a 64-bit seed), got {seed}")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype must be a real floating-point torch.dtype (torch.float32, torch.float64, …) or None, "
                         f"got {dtype!r:.60}")
    return epochs, batch_size, eval_every, lr, momentum, weight_decay, seed


def _checked_probes(probes, probe_every):
    """``probes`` as a dict {str name: callable} (None: empty) and ``probe_every`` as an int ≥ 1."""
    if probes is None:
        probes = {}
    if not isinstance(probes, dict) or not all(isinstance(k, str) and k and callable(v) for k, v in probes.items()):
        raise ValueError(f"probes must be a dict {{name (non-empty str): callable(model, data)}} or None, "
                         f"got {probes!r:.80}")
    return dict(probes), integer_at_least("probe_every", probe_every)


def _loss_config(loss, n_classes):
    """What the checkpoint remembers of the loss: its name and, for the squared losses, the factor c of
    L = c·mean (f − y)², so that a run saved before "mse" took its ½ (rmtnet 0.2) is not resumed under it."""
    name = _default_loss(loss, n_classes)
    factor = SQUARED_LOSSES.get(name) if isinstance(name, str) else None
    return {"loss": _name(loss), **({"squared_loss_factor": factor} if factor is not None else {})}


def _extra_config(loss, n_classes, probes, probe_every, blowup):
    """What the checkpoint remembers of the loss, the probes and ``blowup`` (only what was given, so that older
    checkpoints still resume where nothing changed)."""
    return {**_loss_config(loss, n_classes), **_probe_config(probes, probe_every),
            **({"blowup": blowup} if blowup is not None else {})}


def _probe_config(probes, probe_every):
    """What the checkpoint remembers of the probes (nothing without probes, so older checkpoints still resume)."""
    return {"probes": sorted(probes), "probe_every": probe_every} if probes else {}


def _training_dtype(model, dtype, lr, weight_decay):
    """The dtype the run trains in (``dtype``, else the model's own), checked to hold ``lr`` and ``weight_decay``:
    the optimiser's step multiplies by them in that dtype."""
    if dtype is None:
        dtype = model_dtype(model, torch.get_default_dtype())
    for name, value in (("lr", lr), ("weight_decay", weight_decay)):
        if value > torch.finfo(dtype).max:
            raise ValueError(f"{name} must be at most {torch.finfo(dtype).max:g}, the largest {dtype}, got {value!r}")
    return dtype


class _Run:
    """One call of :func:`train` under way: the model, its optimiser and schedule, the shuffling loader, the metrics
    rows, the epoch and step reached and the seconds spent — everything the checkpoint saves — with the epoch of
    optimisation steps, the evaluation that appends a row, and the checkpoint's writing and reading."""

    def __init__(self, model, data, batches, opt, sched, loss_fn, *, config, checkpoint, metrics, eval_batch_size,
                 settings, probes=None, probe_every=1, blowup=None):
        self.model, self.data, self.batches, self.loss_fn = model, data, batches, loss_fn
        self.blowup = blowup
        self.probes, self.probe_every = probes or {}, probe_every
        self.opt, self.sched = opt, sched
        self.config, self.checkpoint, self.metrics = config, checkpoint, metrics
        self.eval_batch_size, self.settings = eval_batch_size, settings
        self.rows, self.epoch, self.step, self.wall_before = [], 0, 0, 0.0

    @classmethod
    def start(cls, model, data, loss_fn, schedule, config, **options):
        """The run of :func:`train`'s checked ``config`` on ``model`` and ``data`` (both on the training device and
        dtype): the shuffling loader, the optimiser and the schedule over all its steps; resumed from the
        checkpoint if there is one (:meth:`resume_or_seed`)."""
        c = config
        batches = data.loader("train", batch_size=c["batch_size"], shuffle=True, seed=c["seed"])
        opt = _optimizer(c["optimizer"], model.parameters(), c["lr"], c["momentum"], c["weight_decay"])
        sched = _scheduler(schedule, opt, c["epochs"] * len(batches), c["lr"])
        run = cls(model, data, batches, opt, sched, loss_fn, config=config, eval_batch_size=max(c["batch_size"], 1024),
                  settings=f"lr {c['lr']:g}, momentum {c['momentum']:g}, weight_decay {c['weight_decay']:g}",
                  **options)
        run.resume_or_seed(c["seed"])
        return run

    def resume_or_seed(self, seed):
        """Continue from the checkpoint if its file exists, else seed the global torch RNG; start the clock."""
        if self.checkpoint is not None and self.checkpoint.exists():
            self._resume()
        else:
            torch.manual_seed(seed)
        self.start = time.perf_counter()
        self.last_lr = self.opt.param_groups[0]["lr"]

    def _unreadable(self, why):
        """The error for a checkpoint file that cannot be resumed from: its name, why, and what to do (nothing is
        deleted here)."""
        return RuntimeError(f"checkpoint {self.checkpoint} cannot be read ({why}); nothing was deleted: delete it "
                            f"to restart this training from epoch 0 (or give another checkpoint path), or put back "
                            f"an intact copy to resume")

    def _resume(self):
        checkpoint = self.checkpoint
        try:
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch's unpickler fails on garbage with any error (IndexError…)
            raise self._unreadable(f"truncated or corrupt, or not a file written by rmtnet.nets.train: {exc}") from exc
        missing = sorted(_CHECKPOINT_KEYS - set(state)) if isinstance(state, dict) else ["(not a dict)"]
        if missing or not isinstance(state["config"], dict):
            raise self._unreadable(f"not a checkpoint of rmtnet.nets.train, or of another version of it: "
                                   f"missing {', '.join(missing) or 'its config'}")
        changed = {k: (state["config"].get(k), v) for k, v in self.config.items() if state["config"].get(k) != v}
        if changed:
            raise ValueError(f"checkpoint {checkpoint} was written with other arguments (saved, given): {changed}; "
                             f"use another checkpoint path or the same arguments (or delete it yourself to "
                             f"restart from epoch 0; nothing was deleted)")
        try:
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["optimizer"])
            self.sched.load_state_dict(state["scheduler"])
        except (RuntimeError, ValueError, KeyError) as exc:
            raise self._unreadable(f"it holds another model or optimiser: {exc}") from exc
        torch.set_rng_state(state["torch_rng"])
        if state.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.batches.generator.set_state(state["shuffle_rng"])
        self.rows, self.epoch, self.step = state["rows"], state["epoch"], state["step"]
        self.wall_before = state["wall_s"]

    def _save(self):  # the keys are _CHECKPOINT_KEYS (and "cuda_rng")
        state = {"config": self.config, "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                 "scheduler": self.sched.state_dict(), "torch_rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                 "shuffle_rng": self.batches.generator.get_state(), "rows": self.rows, "epoch": self.epoch,
                 "step": self.step, "wall_s": self.wall_before + time.perf_counter() - self.start}
        atomic_write(self.checkpoint, lambda tmp: torch.save(state, tmp))

    def _probed(self):
        """The probes' values on the model now, as columns: ``name`` for a number, ``name_key`` for a dict's items;
        a non-finite value is a divergence."""
        values = {}
        for name, probe in self.probes.items():
            out = probe(self.model, self.data)
            for key, value in (out.items() if isinstance(out, dict) else [(None, out)]):
                column = name if key is None else f"{name}_{key}"
                if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.dtype.is_complex:
                    value = value.item()                     # a 0-d tensor is the number it holds
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    raise CallableResultError(f"probe {name!r} (probes=) must return a real number or a dict of them, "
                                              f"got {_returned(value)} for {column!r}")
                if not math.isfinite(value):
                    raise DivergenceError(f"probe column {column!r} is {value} after epoch {self.epoch}, step "
                                          f"{self.step} ({self.settings})")
                values[column] = float(value)
        return values

    def _evaluated(self):
        """The row's metrics: both splits evaluated; a non-finite metric diverged."""
        row = {"epoch": self.epoch, "step": self.step, "lr": self.last_lr}
        for split in ("train", "test"):
            try:
                row.update(evaluate(self.model, self.data, split, loss=self.loss_fn,
                                    batch_size=self.eval_batch_size))
            except FloatingPointError as exc:
                raise DivergenceError(f"{exc} at the evaluation after epoch {self.epoch}, step {self.step} "
                                      f"({self.settings})") from None
        return row

    def _record(self, row=None, last=False):
        """Evaluate both splits (unless ``row`` holds them) and the probes (at every ``probe_every``-th row and the
        ``last``), append the row (and write the metrics file)."""
        row = self._evaluated() if row is None else row
        if self.blowup is not None and self.rows and row["train_loss"] > self.blowup * self.rows[0]["train_loss"]:
            raise DivergenceError(f"train_loss {row['train_loss']:.4g} exceeds blowup = {self.blowup:g} × its start "
                                  f"{self.rows[0]['train_loss']:.4g} at epoch {self.epoch}, step {self.step} "
                                  f"({self.settings})")
        if self.probes and (len(self.rows) % self.probe_every == 0 or last):
            row.update(self._probed())
        row["wall_s"] = self.wall_before + time.perf_counter() - self.start
        self.rows.append(row)
        if self.metrics is not None:
            atomic_write(self.metrics, lambda tmp: pd.DataFrame(self.rows).to_csv(tmp, index=False))
        return row

    def _first_record(self):
        """:meth:`_record` at epoch 0, the model's first forward pass: a failure of the evaluation there is a
        mismatch of shapes or dtypes between the model and the data (the probes' own errors pass unchanged)."""
        try:
            row = self._evaluated()
        except CallableResultError:
            raise
        except (RuntimeError, TypeError, IndexError) as exc:
            raise ValueError(f"model cannot be applied to data's inputs (x_train of shape "
                             f"{_shapes(self.data.x_train)}): {type(exc).__name__}: {exc}") from exc
        return self._record(row)

    def _one_epoch(self):
        """One pass over the shuffled training split, one optimisation step (and schedule step) per batch; a
        non-finite loss stops it before its update."""
        self.epoch += 1
        self.model.train()
        for x, y in self.batches:
            self.last_lr = self.opt.param_groups[0]["lr"]
            if not (math.isfinite(self.last_lr) and self.last_lr >= 0):
                raise ValueError(f"schedule={self.config['schedule']} gave the learning rate {self.last_lr!r} at "
                                 f"epoch {self.epoch}, step {self.step + 1}: a learning rate must be finite and >= 0")
            self.opt.zero_grad(set_to_none=True)
            try:
                value = self.loss_fn(apply_model(self.model, x), y)
            except DivergenceError as exc:                    # a loss callable's NaN: where it happened
                raise DivergenceError(f"{exc} at epoch {self.epoch}, step {self.step + 1} ({self.settings}; lr at "
                                      f"this step {self.last_lr:g})") from None
            if not torch.isfinite(value):
                raise DivergenceError(f"non-finite training loss {float(value.detach())} at epoch {self.epoch}, "
                                      f"step {self.step + 1} ({self.settings}; lr at this step {self.last_lr:g})")
            if not value.requires_grad and getattr(self.loss_fn, "user_callable", False):
                raise CallableResultError(f"loss= callable {self.config['loss']} returned a tensor without a "
                                          f"gradient (requires_grad=False): compute it from the model's output with "
                                          f"torch operations, not from .item(), .detach() or NumPy")
            value.backward()
            self.opt.step()
            self.sched.step()
            self.step += 1

    def epochs_with_bar(self, epochs, eval_every, callback, progress):
        """:meth:`epochs_up_to` under a tqdm bar of the epochs (shown when ``progress``)."""
        bar = tqdm(total=epochs, initial=self.epoch, desc=f"train {self.data.name}", unit="epoch",
                   disable=None if boolean("progress", progress) else True)
        try:
            self.epochs_up_to(epochs, eval_every, callback, bar)
        finally:
            bar.close()

    def epochs_up_to(self, epochs, eval_every, callback, bar):
        """Evaluate at epoch 0 (unless resumed past it), then train epoch after epoch up to ``epochs``: evaluate
        every ``eval_every`` and after the last, save the checkpoint after each, call ``callback`` after each
        evaluation (once the epoch's checkpoint is saved)."""
        if self.epoch == 0:
            row = self._first_record()
            if callback is not None:
                callback(self.epoch, self.model, row)
        while self.epoch < epochs:
            self._one_epoch()
            evaluated = self.epoch % eval_every == 0 or self.epoch == epochs
            if evaluated:
                row = self._record(last=self.epoch == epochs)
                bar.set_postfix({k: f"{v:.4g}" for k, v in row.items() if k.startswith("test_")})
            if self.checkpoint is not None:
                self._save()
            bar.update(1)
            if evaluated and callback is not None:
                callback(self.epoch, self.model, row)


def train(model: torch.nn.Module, data: Dataset, *, epochs: int, batch_size: int = 128, optimizer: str = "sgd",
          lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 0.0, schedule: str | Callable = "constant",
          loss: str | Callable | None = None, device="cpu", seed: int = 0, checkpoint=None, metrics=None,
          progress: bool = True, eval_every: int = 1, dtype: torch.dtype | None = None,
          callback: Callable | None = None, probes: dict | None = None, probe_every: int = 1,
          blowup: float | None = None) -> pd.DataFrame:
    """Train ``model`` on ``data`` for ``epochs`` passes over the training split; return the metrics table.

    Parameters
    ----------
    model, data : the network (initial weights the caller's) and its :class:`~rmtnet.nets.data.Dataset`.
    epochs, batch_size, lr, momentum, weight_decay, device, progress : passes, minibatch, optimiser, device, tqdm bar.
    optimizer : ``"sgd"`` (with ``momentum`` and L2 ``weight_decay`` added to the gradient) or ``"adamw"`` (decoupled
        ``weight_decay``, default betas; ``momentum`` is unused).
    schedule : learning-rate schedule over the T = epochs · ⌈n_train / batch_size⌉ optimisation steps, stepped
        after every step: ``"constant"``; ``"cosine"`` (lr_k = lr (1 + cos(π k / T)) / 2); ``"onecycle"`` (Smith's
        one-cycle policy, torch's ``OneCycleLR`` with peak ``lr`` at step 0.3 T − 1, start lr/25, end lr/25/10⁴;
        the momentum is held at ``momentum``, not cycled); ``"step"`` (×0.1 after T/2 and 3T/4 steps); or a callable
        ``(optimizer, T) -> LRScheduler``.
    loss : ``"cross_entropy"``, ``"mse"``, ``"mean_squared"`` or a callable ``(output, y) -> mean loss``; by default
        cross-entropy for classification, ``"mse"`` for regression. The squared losses compare the output with
        one-hot targets for class labels. ``"mse"`` is L = ½·mean over the N samples and k outputs of (f − y)², the
        convention of :func:`rmtnet.spectra.predict.gradient_descent_mse` and neural-tangents (since rmtnet 0.2; a
        FutureWarning says so once per process until 0.3); ``"mean_squared"`` is the mean without ½
        (``torch.nn.functional.mse_loss``, what ``"mse"`` was before 0.2). Full-batch gradient descent is linearly
        stable for η < Nk/(c·λ_max(Θ)), c = ½ or 1, Θ the empirical NTK Gram over the training set
        (:func:`rmtnet.spectra.stability.learning_rate_border`).
    seed : seeds the global torch RNG (dropout and the like; ``torch.manual_seed``) and the generator that shuffles
        the training split. The model's initial weights are the caller's.
    checkpoint : a path; after every epoch the full state is saved there. If the file exists when ``train`` starts,
        the run continues from the epoch after the saved one (the arguments must be the same; a finished run just
        returns its table).
    metrics, eval_every : a path for the table as CSV, written after every evaluation; evaluate before training
        (epoch 0), every ``eval_every`` epochs and after the last one.
    dtype : cast the model and the floating-point data to this dtype (default: the model's own).
    callback : ``callback(epoch, model, row)`` after every evaluation (``row`` a dict); it may raise to stop the
        run — the epoch's checkpoint is already saved.
    probes, probe_every : ``{name: probe(model, data) -> number or {key: number}}`` (e.g.
        :func:`rmtnet.nets.sharpness.sharpness_probe`), run at every ``probe_every``-th evaluation (epoch 0's
        included) and the last, written as columns ``name`` or ``name_key`` (NaN on the other rows) before the row,
        the CSV and the checkpoint (a resumed run keeps them); a non-finite value is a divergence.
    blowup : a float > 1: an evaluation whose ``train_loss`` exceeds ``blowup`` × epoch 0's is a divergence too.

    Returns
    -------
    pandas.DataFrame with one row per evaluation: ``epoch``, ``step`` (optimisation steps so far), ``lr`` (the
    learning rate of the most recent step; on row 0 that of the first step), ``train_loss``, ``test_loss`` (means over
    the whole split, model in eval mode), ``train_error``, ``test_error`` (1 − accuracy; classification) or
    ``train_mse``, ``test_mse`` (regression: mean (f − y)², twice the "mse" loss), probe columns, ``wall_s`` (seconds
    of this run, resumed segments included).

    Raises :class:`DivergenceError` (a FloatingPointError and an OverflowError), naming the epoch, step, lr, momentum
    and weight_decay, once a training loss (before its update), a metric or a probe is not finite, or passes blowup.

    Examples
    --------
    24 training points in batches of 8 are 3 steps an epoch, and rows come at epochs 0, 1 and 2:

    >>> _ = torch.manual_seed(0)
    >>> x, y = torch.randn(32, 3), torch.randint(0, 2, (32,))
    >>> data = Dataset(x[:24], y[:24], x[24:], y[24:], n_classes=2, name="random", shape=(3,))
    >>> table = train(torch.nn.Linear(3, 2), data, epochs=2, batch_size=8, progress=False)
    >>> print(len(table), table["step"].tolist())
    3 [0, 3, 6]
    """
    check_model(model)
    epochs, batch_size, eval_every, lr, momentum, weight_decay, seed = _checked_arguments(
        data, epochs, batch_size, eval_every, lr, momentum, weight_decay, optimizer, schedule, callback, seed, dtype)
    checkpoint, metrics = _paths(checkpoint=checkpoint, metrics=metrics)
    probes, probe_every = _checked_probes(probes, probe_every)
    blowup = None if blowup is None else real_scalar("blowup", blowup, lo=1.0, lo_open=True)
    loss_fn, dtype = _loss_function(loss, data.n_classes), _training_dtype(model, dtype, lr, weight_decay)
    config = dict(epochs=epochs, batch_size=batch_size, optimizer=optimizer, lr=lr, momentum=momentum, seed=seed,
                  weight_decay=weight_decay, schedule=_name(schedule), eval_every=eval_every, dtype=str(dtype),
                  data=data.name, n_train=data.n_train,
                  **_extra_config(loss, data.n_classes, probes, probe_every, blowup))
    run = _Run.start(model.to(device=device, dtype=dtype), data.to(device, dtype), loss_fn, schedule, config,
                     checkpoint=checkpoint, metrics=metrics, probes=probes, probe_every=probe_every, blowup=blowup)
    run.epochs_with_bar(epochs, eval_every, callback, progress)
    return pd.DataFrame(run.rows)
