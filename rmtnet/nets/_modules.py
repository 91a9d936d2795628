"""What the probes, CKA and the training loop ask of a torch model they are handed: that it is one, its precision,
and a forward pass whose failure names the argument the model was applied to."""
from __future__ import annotations

import torch
from torch import nn


def check_model(model, name="model"):
    """ValueError naming ``name`` unless ``model`` is a torch.nn.Module."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")


def model_dtype(model, default=None):
    """The dtype of the model's first floating-point parameter (its precision), else ``default``."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), default)


def apply_to(model, inputs, name):
    """``model(*inputs)``; a model that cannot take them (a RuntimeError, TypeError, IndexError or ValueError from
    inside it) is reported as a ValueError naming ``name``, with the inputs' shapes and dtypes."""
    try:
        return model(*inputs)
    except (RuntimeError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"the model cannot be applied to {name} (shapes {[tuple(t.shape) for t in inputs]}, dtypes "
                         f"{[t.dtype for t in inputs]}): {type(exc).__name__}: {exc}") from exc
