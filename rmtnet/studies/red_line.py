"""The learning-rate "red line", trained: where full-batch gradient descent on deep fully-connected networks stops
being stable, against the line 2/λ_max that the spectrum of the NTK at initialisation predicts (Karakida, Akaho &
Amari, AISTATS 2019, arXiv 1806.01316; Hayase & Karakida, AISTATS 2021, arXiv 2006.07814), and what happens above it
(the catapult of Lewkowycz, Bahri, Dyer, Sohl-Dickstein & Gur-Ari, 2020, arXiv 2003.02218).

Loss and step. L = ½·mean over the N inputs and k outputs of (f − y)² (``loss="mse"``, rmtnet's convention), full-batch
gradient descent θ ← θ − η∇L (:func:`rmtnet.nets.train` with one batch, no momentum), float64. In this convention the
linearised dynamics are stable for η < η* = 2Nk/λ_max(Θ), Θ the NTK Gram over the training set
(:mod:`rmtnet.spectra.stability`); with the mean without ½ every η here halves (1/λ instead of 2/λ).

Two settings, each the setting of one law:

- ``"one_sample"`` (Hayase & Karakida): a square network of width n (n inputs, n outputs, depth L, no biases) trained
  on N = 1 input with ‖x‖² = n and a target y ~ N(0, I_n). Θ/n has the one-sample Fisher/NTK law; the law's line is
  :func:`rmtnet.spectra.fisher.critical_learning_rate` (read off the laws of every depth in one recursion). Any
  activation, Gaussian or orthogonal weights, any σ_w.
- ``"data"`` (Fan & Wang, NeurIPS 2020, arXiv 2005.11879): N inputs on the sphere ‖x‖² = d in d dimensions, hidden
  widths d, one linear output, targets y ~ N(0, 1); the activation is normalised (centred, unit variance under
  N(0, 1): :func:`rmtnet.spectra.meanfield.normalised_activation`). The law's line is
  :func:`rmtnet.spectra.stability.ntk_learning_rate` (the right edge of the NTK law, Θ = d·K in the standard
  parameterisation) where the net is in the law's regime (Gaussian weights, σ_w = 1); elsewhere only the empirical
  line is drawn.

In both, the *empirical* line is η* from the top eigenvalue of the network's own NTK Gram at initialisation (the
top eigenvalue of Θ by Lanczos on Θv = J(Jᵀv), :func:`rmtnet.nets.sharpness.ntk_top_eigenvalues`), and the
*Hessian* line 2/λ_max(∇²L) at initialisation (the Gauss–Newton part (1/(Nk))Θ plus the residual term).

Outcome of one run of T steps, from the loss L_t after every step (L₀ at initialisation):

- ``"converged"``: no step raised the loss by more than 0.1 % while it was above 10⁻¹⁰L₀ (in the linearised dynamics
  below η* every mode decays monotonically, so the loss does too);
- ``"spiked"``: some step raised it, and it ended below L₀ (spiked then converged: the catapult);
- ``"stalled"``: some step raised it, it stayed finite and below 10³L₀, and it ended at or above L₀;
- ``"diverged"``: non-finite, or above 10³L₀ (:class:`rmtnet.nets.DivergenceError`).

Two borders per network, by bisection in η between grid points: the *stability border* (the smallest η that is not
"converged") and the *divergence border* (the smallest η that diverges). The stability border is the one the line
predicts; the divergence border lies above it by the width of the catapult band.
"""
from __future__ import annotations

import functools
import math
import time

import numpy as np
import torch

from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar
from rmtnet.nets.data import Dataset
from rmtnet.nets.models import MLP
from rmtnet.nets.sharpness import hessian_top_eigenvalues, ntk_top_eigenvalues
from rmtnet.nets.training import DivergenceError, loss_function, train
from rmtnet.spectra.fisher import fisher_law
from rmtnet.spectra.meanfield import normalised_activation
from rmtnet.spectra.network import mlp
from rmtnet.spectra.stability import learning_rate_border, ntk_learning_rate

__all__ = ["SETTINGS", "OUTCOMES", "red_line_description", "red_line_task", "gradient_descent_outcome",
           "predicted_learning_rates", "border", "red_line_run"]

SETTINGS = ("one_sample", "data")
OUTCOMES = ("converged", "spiked", "stalled", "diverged")
#: One letter per outcome, for a grid's outcomes as one string.
LETTERS = {"converged": "C", "spiked": "S", "stalled": "T", "diverged": "D"}
BLOWUP, FLOOR, RISE = 1e3, 1e-10, 1e-3
MSE = loss_function("mse", None)        # ½·mean over samples and outputs, rmtnet's "mse"
DATA_STREAM = 0x5EED       # the data's random stream, apart from the initial weights' (seeded by the same seed)


def red_line_description(setting, activation, weights, sigma_w, depth, width):
    """The :func:`rmtnet.spectra.network.mlp` description of one network of the study (module docstring).

    Parameters
    ----------
    setting : {"one_sample", "data"}
        Square with n outputs, or widths d with one output and the activation normalised.
    activation : str
        A registered activation ("relu", "tanh", …).
    weights : {"gaussian", "orthogonal"}
        The law of the initial weights.
    sigma_w : float
        σ_w > 0 (σ_b = 0).
    depth, width : int
        L ≥ 2 weight matrices; n (or d).

    Returns
    -------
    rmtnet.spectra.network.MLP

    Examples
    --------
    >>> red_line_description("data", "relu", "gaussian", 1.0, 3, 64).widths
    (64, 64, 64, 1)
    """
    one_of("setting", setting, SETTINGS)
    depth = integer_at_least("depth", depth, 2)
    width = integer_at_least("width", width, 1)
    common = dict(weights=weights, sigma_w=sigma_w, sigma_b=0.0, last_activation=False, q0=1.0)
    if setting == "one_sample":
        return mlp(depth, width, activation=activation, **common)
    return mlp(depth, widths=(width,) * depth + (1,), activation=normalised_activation(activation), **common)


def red_line_task(setting, width, n_data=None, seed=0):
    """Inputs on the sphere ‖x‖² = width and Gaussian targets: one input with ``width`` targets (``"one_sample"``)
    or ``n_data`` inputs with one target each (``"data"``), float64; the test split is the first training input.

    Parameters
    ----------
    setting : {"one_sample", "data"}
        The setting.
    width : int
        The input dimension n (or d).
    n_data : int, optional
        N (default 1 for "one_sample"; required for "data").
    seed : int, default 0
        Seeds inputs and targets.

    Returns
    -------
    rmtnet.nets.data.Dataset

    Examples
    --------
    >>> data = red_line_task("data", 16, n_data=8, seed=0)
    >>> tuple(data.x_train.shape), tuple(data.y_train.shape), round(float((data.x_train ** 2).sum(1)[0]), 10)
    ((8, 16), (8, 1), 16.0)
    """
    one_of("setting", setting, SETTINGS)
    width = integer_at_least("width", width, 1)
    if n_data is None and setting == "data":
        raise ValueError("n_data is required for setting='data' (the number of training inputs N ≥ 1)")
    n = integer_at_least("n_data", 1 if n_data is None else n_data, 1)
    rng = np.random.default_rng([integer_at_least("seed", seed, 0), DATA_STREAM])   # not the weights' stream
    x = rng.standard_normal((n, width))
    x = torch.from_numpy(x * math.sqrt(width) / np.linalg.norm(x, axis=1, keepdims=True))
    y = torch.from_numpy(rng.standard_normal((n, width if setting == "one_sample" else 1)))
    return Dataset(x, y, x[:1], y[:1], n_classes=None, name=f"red_line[{setting}, N={n}]", shape=(width,))


class _Stop(Exception):
    """The outcome of a run is known: stop training."""


class _Watch:
    """The loss after every step (nets.train's train_loss rows), stopping the run once the outcome is known."""

    def __init__(self, stop_at_rise):
        self.losses, self.rose, self.stop_at_rise = [], False, stop_at_rise

    def __call__(self, epoch, model, row):
        loss = row["train_loss"]
        l0 = self.losses[0] if self.losses else loss
        if self.losses and self.losses[-1] > FLOOR * l0 and loss > self.losses[-1] * (1 + RISE):
            self.rose = True
        self.losses.append(loss)
        if loss < FLOOR * l0 or (self.rose and self.stop_at_rise):
            raise _Stop


def gradient_descent_outcome(description, data, learning_rate, steps, seed=0, stop_at_rise=False):
    """Train the network of ``description`` (initial weights from ``seed``) on ``data`` by full-batch gradient descent
    on the ½·mean squared loss for ``steps`` steps at ``learning_rate``; classify the run (module docstring).

    Parameters
    ----------
    description : rmtnet.spectra.network.MLP
        The network (:func:`red_line_description`).
    data : rmtnet.nets.data.Dataset
        The training set (:func:`red_line_task`).
    learning_rate : float
        η > 0.
    steps : int
        T ≥ 1.
    seed : int, default 0
        Seed of the initial weights.
    stop_at_rise : bool, default False
        Stop at the first rise of the loss (enough to tell "converged" from the rest, as the bisection needs).

    Returns
    -------
    dict
        ``outcome`` (one of :data:`OUTCOMES`), ``steps`` run, ``max_ratio`` = max_t L_t/L₀, ``final_ratio``.

    Examples
    --------
    >>> data = red_line_task("data", 32, n_data=4, seed=0)
    >>> net = red_line_description("data", "relu", "gaussian", 1.0, 2, 32)
    >>> gradient_descent_outcome(net, data, 1e-3, 20)["outcome"]
    'converged'
    """
    eta = real_scalar("learning_rate", learning_rate, lo=0.0, lo_open=True)
    steps = integer_at_least("steps", steps, 1)
    model = MLP.from_description(description, seed=integer_at_least("seed", seed, 0), dtype=torch.float64)
    watch = _Watch(boolean("stop_at_rise", stop_at_rise))
    outcome = None
    try:
        train(model, data, epochs=steps, batch_size=len(data.y_train), optimizer="sgd", lr=eta, momentum=0.0,
              loss=MSE, progress=False, dtype=torch.float64, callback=watch, blowup=BLOWUP)
    except DivergenceError:
        outcome = "diverged"
    except _Stop:
        pass
    losses = np.asarray(watch.losses)
    if outcome is None:
        outcome = "converged" if not watch.rose else ("spiked" if losses[-1] < losses[0] else "stalled")
    finite = losses[np.isfinite(losses)]
    return {"outcome": outcome, "steps": len(losses) - 1, "max_ratio": float(finite.max() / losses[0]),
            "final_ratio": float(losses[-1] / losses[0])}


@functools.lru_cache(maxsize=32)
def _fisher_lines(activation, weights, sigma_w, max_depth):
    """The one-sample law's η* = 2/λ_max for depths 1 … max_depth, from one recursion (fisher_law, return_all)."""
    net = mlp(max_depth, 100, activation=activation, weights=weights, sigma_w=sigma_w, sigma_b=0.0,
              last_activation=False, q0=1.0)
    return tuple(learning_rate_border(law.hull()[1], 1, 1, "mse") for law in fisher_law(net, return_all=True))


def predicted_learning_rates(setting, description, data, seed=0, max_depth=None):
    """The predicted η*: from the law (``law``; None where the network is not in its law's regime) and from the
    network's own NTK Gram at initialisation (``empirical``), and from the loss Hessian at initialisation
    (``hessian``).

    Parameters
    ----------
    setting : {"one_sample", "data"}
        The setting of ``description``.
    description : rmtnet.spectra.network.MLP
        The network.
    data : rmtnet.nets.data.Dataset
        Its training set.
    seed : int, default 0
        Seed of the initial weights.
    max_depth : int, optional
        For "one_sample": the deepest network of the sweep, so that one recursion serves every depth.

    Returns
    -------
    dict
        ``law``, ``empirical`` (η* of the NTK Gram's top eigenvalue ``lambda_max``, by Lanczos on Θv = J(Jᵀv):
        :func:`rmtnet.nets.sharpness.ntk_top_eigenvalues`), and ``hessian`` = 2/λ_max(∇²L) at initialisation
        (Lanczos on Hessian-vector products, :func:`rmtnet.nets.sharpness.hessian_top_eigenvalues`: the
        Gauss–Newton part and the residual term together).

    Examples
    --------
    >>> data = red_line_task("one_sample", 32, seed=0)
    >>> net = red_line_description("one_sample", "linear", "orthogonal", 1.0, 3, 32)
    >>> p = predicted_learning_rates("one_sample", net, data)
    >>> round(p["law"], 12), round(p["empirical"], 12)           # Θ/n = 3·I exactly
    (0.666666666667, 0.666666666667)
    """
    one_of("setting", setting, SETTINGS)
    square = len(set(description.widths)) == 1
    if (setting == "one_sample") != square or (setting == "data" and description.widths[-1] != 1):
        raise ValueError(f"setting={setting!r} does not describe this network (widths {description.widths}): "
                         "'one_sample' is square, 'data' has one output (red_line_description)")
    model = MLP.from_description(description, seed=integer_at_least("seed", seed, 0), dtype=torch.float64)
    x, k = data.x_train, description.widths[-1]
    lam = float(ntk_top_eigenvalues(model, x, k=1)[0])
    empirical = learning_rate_border(lam, len(x), k, "mse")
    top = float(hessian_top_eigenvalues(model, data, loss="mse", k=1)[0])
    if not top > 0:
        raise FloatingPointError(f"the loss Hessian's top eigenvalue at initialisation is {top!r}, not positive: no "
                                 f"curvature bounds the learning rate of this network (depth {description.depth})")
    hessian = 2.0 / top
    if setting == "one_sample":
        depth = description.depth
        lines = _fisher_lines(description.activation.name, description.weights, float(description.sigma_w),
                              max(depth, max_depth or depth))
        law = lines[depth - 1] if len(x) == 1 else None
    elif description.weights == "gaussian" and float(description.sigma_w) == 1.0:
        law = ntk_learning_rate(description, len(x), loss="mse", parameterization="standard")
    else:
        law = None
    return {"law": law, "empirical": empirical, "lambda_max": lam, "hessian": hessian}


def border(unstable, lo, hi, iterations):
    """Geometric bisection of [lo, hi] for the point where ``unstable(η)`` turns True (False at lo, True at hi).

    Parameters
    ----------
    unstable : callable
        η ↦ bool.
    lo, hi : float
        0 < lo < hi with unstable(lo) False and unstable(hi) True (not re-checked).
    iterations : int
        Halvings of log(hi/lo).

    Returns
    -------
    float
        √(lo·hi) of the last bracket.

    Examples
    --------
    >>> print(f"{border(lambda eta: eta > 2.0, 1.0, 4.0, 20):.5f}")
    2.00000
    """
    lo, hi = real_scalar("lo", lo, lo=0.0, lo_open=True), real_scalar("hi", hi, lo=0.0, lo_open=True)
    if not lo < hi:
        raise ValueError(f"lo must be below hi (a bracket 0 < lo < hi), got lo = {lo!r}, hi = {hi!r}")
    for _ in range(integer_at_least("iterations", iterations, 0)):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if unstable(mid) else (mid, hi)
    return math.sqrt(lo * hi)


def _grid_border(factors, outcomes, is_unstable):
    """Where the grid puts a border: ``(bracket, censored)`` — the factors (f_lo, f_hi) around the first that
    ``is_unstable`` and ``"no"``, or ``(None, "below")`` when the grid's first point already is (the border lies below
    0.1×), ``(None, "above")`` when none is (above 10×)."""
    for i, o in enumerate(outcomes):
        if is_unstable(o):
            return ((factors[i - 1], factors[i]), "no") if i > 0 else (None, "below")
    return None, "above"


def _fraction_on_side(factors, reference, line, outcomes):
    """The fraction of grid cells on the side of ``line`` it predicts: below it converged, above it not."""
    if line is None:
        return float("nan")
    etas = np.asarray(factors) * reference
    right = [(o == "converged") == (eta < line) for eta, o in zip(etas, outcomes)]
    return float(np.mean(right))


def red_line_run(setting, activation, weights, sigma_w, depth, width, n_data=1, steps=60, n_grid=7, bisections=4,
                 max_depth=None, seed=0):
    """One network of the study (one seed): its predicted lines, the outcomes on a grid of η from 0.1× to 10× the
    law's line (the empirical one where the law does not apply), and the two borders by bisection.

    Parameters
    ----------
    setting, activation, weights, sigma_w, depth, width
        As :func:`red_line_description`.
    n_data : int, default 1
        N.
    steps : int, default 60
        T, the steps of every run.
    n_grid : int, default 7
        Grid points, log-spaced over [0.1, 10] × the reference line.
    bisections : int, default 4
        Halvings of the grid bracket around each border.
    max_depth : int, optional
        The deepest network of the sweep (one Fisher recursion serves all depths).
    seed : int, default 0
        Seeds the data and the initial weights.

    Returns
    -------
    dict
        The predictions (``eta_law``, ``eta_empirical``, ``lambda_max``), ``reference``, ``grid`` (one letter per
        grid point: C converged, S spiked, T stalled, D diverged), the borders ``stability_border`` and
        ``divergence_border`` with ``stability_censored`` and ``divergence_censored`` (``"no"`` where the border was
        bisected; ``"below"`` where the grid's first point, 0.1×, is already past it and ``"above"`` where no point
        up to 10× is, and then the border is NaN), their ratios to each line (law, empirical, Hessian), the
        fractions of grid cells on the predicted side of the law's and the empirical line (NaN where there is no law),
        ``seconds``.

    Examples
    --------
    >>> row = red_line_run("data", "relu", "gaussian", 1.0, 2, 64, n_data=8, steps=30, n_grid=5, bisections=2)
    >>> row["grid"][0], 0.5 < row["stability_border"] / row["eta_empirical"] < 2
    ('C', True)
    """
    t0 = time.perf_counter()
    net = red_line_description(setting, activation, weights, sigma_w, depth, width)
    steps, bisections = integer_at_least("steps", steps, 1), integer_at_least("bisections", bisections, 0)
    factors = np.geomspace(0.1, 10.0, integer_at_least("n_grid", n_grid, 2))
    if max_depth is not None and integer_at_least("max_depth", max_depth, 2) < net.depth:
        raise ValueError(f"max_depth must be at least depth = {net.depth} (the deepest network of the sweep), "
                         f"got {max_depth!r}")
    data = red_line_task(setting, width, n_data, seed)
    pred = predicted_learning_rates(setting, net, data, seed, max_depth)
    reference = pred["law"] if pred["law"] is not None else pred["empirical"]
    outcomes = [gradient_descent_outcome(net, data, f * reference, steps, seed)["outcome"] for f in factors]
    row = {"eta_law": np.nan if pred["law"] is None else pred["law"], "eta_empirical": pred["empirical"],
           "eta_hessian": pred["hessian"], "lambda_max": pred["lambda_max"], "reference": reference,
           "grid": "".join(LETTERS[o] for o in outcomes)}
    tests = {"stability": (lambda o: o != "converged", True), "divergence": (lambda o: o == "diverged", False)}
    for name, (is_unstable, at_rise) in tests.items():
        bracket, censored = _grid_border(factors, outcomes, is_unstable)
        value = np.nan
        if bracket is not None:
            def unstable(eta, is_unstable=is_unstable, at_rise=at_rise):
                run = gradient_descent_outcome(net, data, eta, steps, seed, stop_at_rise=at_rise)
                return is_unstable(run["outcome"])
            value = border(unstable, bracket[0] * reference, bracket[1] * reference, bisections)
        row[f"{name}_border"], row[f"{name}_censored"] = value, censored
        for line in ("law", "empirical", "hessian"):
            row[f"{name}_over_{line}"] = value / row[f"eta_{line}"]
    for line in ("law", "empirical"):
        row[f"on_side_{line}"] = _fraction_on_side(factors, reference, pred[line], outcomes)
    row["seconds"] = time.perf_counter() - t0
    return row
