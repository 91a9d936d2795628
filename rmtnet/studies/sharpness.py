"""Sharpness along full-batch gradient descent: the top eigenvalue λ_max(t) of the training-loss Hessian of an MLP
trained on an MNIST-5k subset at several learning rates η, against 2/η, with its predicted initial value.

What is run. An MLP 784 → W → … → W → 10 (``depth`` weight layers; φ = ReLU with σ_w² = 2, or rmtnet's erf
φ(h) = erf(√π h/2) or tanh with σ_w = 1; no biases, Gaussian weights: :meth:`rmtnet.nets.MLP.from_arch` of
:func:`rmtnet.spectra.network.mlp`, torch ``nn.Linear`` layers trained directly, the *standard* parameterisation)
on the first ``n_train`` digits of the training split of MNIST-5k (:func:`rmtnet.nets.data.mnist5k`, split seed 0,
pixels standardised by one scalar mean and deviation), loss ``"mse"`` = ½·mean over the N samples and k = 10 outputs
of (f − y)², one-hot targets, full-batch gradient descent (``train(..., batch_size=N, momentum=0, loss="mse")``) at
η = c · 2/λ_max(∇²L(θ₀)) for factors c, λ_max measured at initialisation by Lanczos. Along the run the probe
:func:`rmtnet.nets.sharpness.sharpness_probe` writes λ_max(∇²L) and λ_max(Θ) (the empirical NTK Gram over the N
inputs) into the training metrics every ``probe_every`` steps.

What the literature says happens, and what was seen (N = 256, W = 128, depth 4, seed 0, Lanczos tol 1e-3).
  * Progressive sharpening and the edge of stability (Cohen, Kaur, Li, Kolter & Talwalkar, ICLR 2021,
    arXiv 2103.00065): λ_max grows until it reaches 2/η, then hovers there while the loss keeps falling
    non-monotonically. Seen with erf at c = 2.5: λ_max falls from 9.80 to 3.76 in 30 steps, sharpens to 4.21 above
    2/η = 3.92 by step 140, the loss jumps (0.0039 → 0.0052 at step 150) and λ_max then stays within 4 % of 2/η
    (3.99–4.08) to step 200. At c = 1.9 λ_max sharpens from 4.71 (step 70) to 5.08 by step 200, approaching 2/η = 5.16.
    At c = 0.5 (and c = 1) the net fits the 256 digits first: with tanh, 1500 steps take λ_max from 7.0 to 7.3 only
    while the loss falls to 10⁻⁴, far from 2/η — a small training set is fitted before it sharpens.
  * The *catapult* (Lewkowycz, Bahri, Dyer, Sohl-Dickstein & Gur-Ari, 2020, arXiv 2003.02218): for 1 < c < c_max
    the loss first grows, λ_max falls below 2/η, and the run converges in a flatter region; c_max = 2 (η < 4/λ₀) for
    their two-layer model; they report a larger upper end, about 12/λ₀, for deep ReLU nets. Seen: erf converges at c = 2.5 and diverges
    at c = 4; ReLU converges up to c = 6 (λ_max from 42.4 to 2.4, below 2/η = 7.1) and diverges at c = 10.
  * ReLU nets in this setting start with a large outlier λ_max(θ₀) = 42.4 (the mean mode of a non-centred kernel)
    that GD removes early at every η (c = 0.5: 42.4 → 17.8 by step 40, 13.5 by step 100); at c = 0.5 and c = 1,
    1500 steps end at λ_max ≈ 9.9 and 9.3, far
    below 2/η = 85 and 42, so η set from λ₀ never meets the edge of stability from below; erf (odd, no mean mode)
    is the activation of the figure.
  * Divergence: non-finite, or loss above 10³ × its initial value (``train(..., blowup=1e3)``): the run is stopped
    and marked.

What is predicted, and how well. For the squared loss ∇²L = JᵀJ/(Nk) + (residual term), J the N k × P Jacobian;
the first (Gauss–Newton) term has the non-zero eigenvalues of Θ/(Nk), Θ = JJᵀ. At initialisation of a wide net Θ
is close to the infinite-width kernel of the standard parameterisation, K ⊗ I_k with K =
:func:`rmtnet.spectra.kernels.ntk_kernel` ``(net, X, parameterization="standard")`` (Jacot, Gabriel & Hongler,
NeurIPS 2018), so the prediction is

    λ_max(∇²L(θ₀)) ≈ λ_max(K)/(N k),    and the largest stable step 2/λ_max(∇²L(θ₀)) ≈ 2Nk/λ_max(K).

The table "initial" gives, per seed, the Lanczos value of λ_max(∇²L(θ₀)), λ_max(Θ(θ₀))/(Nk) (the Gauss–Newton part,
exact for the net) and λ_max(K)/(Nk) (the theory), with their ratios. Measured at N = 256, depth 4, seed 0: erf,
W = 128: Hessian 9.80, Gauss–Newton 10.41 (the residual term is negative here), kernel 5.99 (0.61 of the Hessian);
ReLU, W = 128: 42.39, 40.79, 25.23 (0.60). The kernel's share grows with the width but slowly (ReLU, two seeds:
0.50–0.60 at W = 128, 0.70–0.87 at W = 512, 0.83–0.89 at W = 2048): the finite-width top eigenvalue of the k = 10
coupled outputs sits above its limit. For ReLU λ_max(K) is an *outlier*, the constant mode of a non-centred kernel
over non-centred images, of order N times the mean kernel entry. The Fan–Wang law (:func:`rmtnet.spectra.ntk_law`;
Fan & Wang, NeurIPS 2020, arXiv 2005.11879) describes the *bulk* of Θ for centred activations at widths
proportional to N and has no such outlier, so its right edge is not a prediction of λ_max here; it is not used.
What happens after step 0 — the early fall, sharpening, the catapult — is beyond any law at initialisation: the
figure shows it against the 2/η lines only.

Everything resumable: :func:`sharpness_sweep` stores one row per (η factor, seed) in a CSV through
:func:`rmtnet.experiments.sweep` (the curves as columns ``loss_<t>``, ``hessian_<t>``, ``ntk_<t>``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from rmtnet import experiments
from rmtnet._validation import boolean, integer_at_least, one_of, real_scalar, runs_table
from rmtnet.nets import MLP, DivergenceError, data as nets_data, train
from rmtnet.nets._modules import check_model
from rmtnet.nets.sharpness import hessian_top_eigenvalues, ntk_top_eigenvalues, sharpness_probe
from rmtnet.nets.training import loss_function
from rmtnet.spectra import kernels
from rmtnet.spectra import network
from rmtnet.spectra.network import mlp

__all__ = ["mnist_subset", "description", "initial_sharpness", "sharpness_run", "sharpness_sweep", "curves"]

N_CLASSES = 10
BLOW_UP = 1e3                  # a run whose training loss exceeds BLOW_UP × its initial loss is stopped: diverged
ACTIVATIONS = ("relu", "erf", "tanh")


def mnist_subset(n_train, n_test=200, dtype=torch.float32):
    """The first ``n_train`` training and ``n_test`` test digits of MNIST-5k (split seed 0), inputs (n, 1, 28, 28).

    Parameters
    ----------
    n_train : int
        Training digits, 1 … 4000.
    n_test : int, default 200
        Test digits, 1 … 1000.
    dtype : torch.dtype, default torch.float32
        The inputs' dtype.

    Returns
    -------
    rmtnet.nets.data.Dataset

    Examples
    --------
    >>> d = mnist_subset(32, 8)
    >>> print(d.n_train, d.n_test)
    32 8
    """
    n_train = integer_at_least("n_train", n_train, 1)
    n_test = integer_at_least("n_test", n_test, 1)
    if n_train > 4000 or n_test > 1000:
        raise ValueError(f"n_train must be at most 4000 and n_test at most 1000, got {n_train}, {n_test}")
    d = nets_data.mnist5k(seed=0, dtype=dtype)             # read once per process, split afresh
    return nets_data.Dataset(d.x_train[:n_train], d.y_train[:n_train], d.x_test[:n_test], d.y_test[:n_test],
                             N_CLASSES, f"mnist5k[:{n_train}]", d.shape)


def description(width, depth, activation="relu"):
    """The network: ``depth`` weight layers 784 → W → … → 10, σ_w² = 2 for ReLU, σ_w = 1 for erf and tanh (the
    critical points at small q), no biases, linear read-out (:func:`rmtnet.spectra.network.mlp`).

    Parameters
    ----------
    width : int
        W, the hidden width.
    depth : int
        Weight layers, ≥ 2.
    activation : {"relu", "erf", "tanh"}, default "relu"
        φ.

    Returns
    -------
    rmtnet.spectra.network.MLP

    Examples
    --------
    >>> description(64, 3).widths
    (784, 64, 64, 10)
    """
    width = integer_at_least("width", width, 1)
    depth = integer_at_least("depth", depth, 2)
    one_of("activation", activation, ACTIVATIONS)
    return mlp(depth, widths=[784] + [width] * (depth - 1) + [N_CLASSES], activation=activation,
               sigma_w=math.sqrt(2.0) if activation == "relu" else 1.0, last_activation=False)


def initial_sharpness(model, net, data, *, tol=1e-6, seed=0):
    """λ_max(∇²L(θ₀)) by Lanczos, the Gauss–Newton part λ_max(Θ)/(Nk), and the infinite-width prediction
    λ_max(K)/(Nk) of ``net``'s standard-parameterisation NTK K over the training inputs (module docstring); loss
    "mse" (½·mean over the N samples and k outputs of (f − y)², one-hot targets for the k classes).

    Parameters
    ----------
    model : torch.nn.Module
        The network at initialisation (its inputs flattened are ``net``'s).
    net : rmtnet.spectra.network.MLP
        Its description (for the kernel).
    data : rmtnet.nets.data.Dataset
        A classification data set with as many classes as the model has outputs; the training split is used.
    tol : float, default 1e-6
        Lanczos' relative residual.
    seed : int, default 0
        Lanczos' start vectors.

    Returns
    -------
    dict
        ``hessian``, ``gauss_newton``, ``kernel_prediction`` and the ratios ``gauss_newton_over_hessian``,
        ``prediction_over_hessian``.

    Examples
    --------
    A linear read-out of a wide erf layer at initialisation, on 24 Gaussian inputs with 2 classes: at width 256 the
    Gauss–Newton part and the kernel's prediction are within 1 % of the Hessian's top:

    >>> net = mlp(2, widths=[3, 256, 2], activation="erf", sigma_w=1.0, last_activation=False)
    >>> model = MLP.from_arch(net, seed=0, dtype=torch.float64)
    >>> g = torch.Generator().manual_seed(0)
    >>> x, y = torch.randn(24, 3, generator=g, dtype=torch.float64), torch.randint(0, 2, (24,), generator=g)
    >>> out = initial_sharpness(model, net, nets_data.Dataset(x, y, x, y, 2, "gauss", (3,)))
    >>> print([round(out[key], 1) for key in ("hessian", "gauss_newton", "kernel_prediction")])
    [21.0, 21.0, 20.9]
    """
    check_model(model)
    _check_data(net, data)
    n, k = data.n_train, data.n_classes
    hessian = float(hessian_top_eigenvalues(model, data, "mse", tol=tol, seed=seed)[0])
    gauss_newton = float(ntk_top_eigenvalues(model, data.x_train, tol=tol, seed=seed)[0]) / (n * k)
    X = data.x_train.reshape(n, -1).double().cpu().numpy()
    K = kernels.ntk_kernel(net, X, parameterization="standard")
    predicted = float(np.linalg.eigvalsh(K)[-1]) / (n * k)
    return {"hessian": hessian, "gauss_newton": gauss_newton, "kernel_prediction": predicted,
            "gauss_newton_over_hessian": gauss_newton / hessian, "prediction_over_hessian": predicted / hessian}


def _check_data(net, data):
    """``data`` a classification Dataset whose flattened inputs are ``net``'s; ``net`` an MLP description."""
    if not isinstance(net, network.MLP):
        raise ValueError(f"net must be an rmtnet.spectra.network.MLP, got {type(net).__name__}")
    if not isinstance(data, nets_data.Dataset) or data.n_classes is None:
        raise ValueError(f"data must be a classification rmtnet.nets.data.Dataset, got {type(data).__name__}")
    if isinstance(data.x_train, tuple) or math.prod(data.x_train.shape[1:]) != net.widths[0]:
        raise ValueError(f"data's inputs ({data.shape}) must flatten to net's {net.widths[0]} inputs")


def _train_with_probes(model, data, eta, steps, probe_every, probe):
    """Full-batch GD on "mse", stopped (diverged) when the loss is not finite or exceeds BLOW_UP × its initial value;
    the rows evaluated before that, and whether it diverged."""
    rows = []
    try:
        train(model, data, epochs=steps, batch_size=data.n_train, optimizer="sgd", momentum=0.0, lr=eta,
              loss=loss_function("mse", data.n_classes), progress=False, probes={"sharp": probe},
              probe_every=probe_every, blowup=BLOW_UP, callback=lambda epoch, model, row: rows.append(row))
    except DivergenceError:
        return rows, True
    return rows, False


def sharpness_run(eta_factor, *, width, depth, n_train, steps, probe_every, activation="relu", tol=1e-3, ncv=4,
                  seed=0):
    """One run: the net of :func:`description` (weights from ``seed``), λ₀ = λ_max(∇²L(θ₀)), full-batch GD at
    η = ``eta_factor`` · 2/λ₀ for ``steps`` steps on :func:`mnist_subset` (``n_train``), sharpness probed every
    ``probe_every`` steps (Lanczos ``tol``, ``ncv``). A row for :func:`rmtnet.experiments.sweep`.

    Parameters
    ----------
    eta_factor : float
        c > 0 in η = c · 2/λ₀.
    width, depth, n_train, steps, probe_every : int
        The net, the data, the run and the probes' spacing in steps.
    activation : {"relu", "erf", "tanh"}, default "relu"
        φ.
    tol : float, default 1e-3
        The probes' Lanczos residual, in (0, 1).
    ncv : int, default 4
        The probes' Lanczos basis, ≥ 3.
    seed : int, default 0
        The initial weights.

    Returns
    -------
    dict
        The step-0 numbers of :func:`initial_sharpness`, ``eta``, ``two_over_eta``, ``diverged`` (0/1),
        ``steps_done``, and the curves ``loss_<t>`` (t = 0 … steps), ``hessian_<t>``, ``ntk_<t>`` (at the probed
        steps; λ_max(Θ)/(Nk)); steps after a divergence are NaN.

    Examples
    --------
    The smallest run: an erf net of width 4 and depth 2 on 8 digits, two steps at c = 1/2, so that
    η · (2/η) = 2 and η = c · 2/λ₀ = 1/λ₀, with a loss at t = 0, 1, 2 and the step-0 probe repeating λ₀ to
    Lanczos' tolerance 10⁻³:

    >>> out = sharpness_run(0.5, width=4, depth=2, n_train=8, steps=2, probe_every=1, activation="erf")
    >>> bool(np.isclose(out["eta"] * out["two_over_eta"], 2.0)), bool(np.isclose(out["eta"], 1 / out["hessian"]))
    (True, True)
    >>> out["diverged"], out["steps_done"], [key for key in out if key.startswith("loss_")]
    (0, 2, ['loss_0', 'loss_1', 'loss_2'])
    >>> bool(abs(out["hessian_0"] / out["hessian"] - 1) < 1e-3)
    True
    """
    eta_factor = real_scalar("eta_factor", eta_factor, lo=0.0, lo_open=True)
    steps = integer_at_least("steps", steps, 1)
    probe_every = integer_at_least("probe_every", probe_every, 1)
    net = description(width, depth, activation)
    probe = sharpness_probe("mse", tol=tol, ncv=ncv, seed=seed)
    data = mnist_subset(n_train)
    model = MLP.from_arch(net, seed=seed)
    start = initial_sharpness(model, net, data, seed=seed)
    eta = eta_factor * 2.0 / start["hessian"]
    if not (eta > 0 and math.isfinite(2.0 / eta) and eta <= torch.finfo(data.x_train.dtype).max):
        raise ValueError(f"eta_factor must give a step η = c·2/λ₀ (λ₀ = {start['hessian']:.4g}) with η and 2/η finite in "
                         f"{data.x_train.dtype}, got c = {eta_factor!r}")
    rows, diverged = _train_with_probes(model, data, eta, steps, probe_every, probe)
    out = {**start, "eta": eta, "two_over_eta": 2.0 / eta, "diverged": int(diverged), "steps_done": rows[-1]["step"]}
    nk = data.n_train * N_CLASSES
    for t in range(steps + 1):
        row = rows[t] if t < len(rows) else {}
        out[f"loss_{t}"] = row.get("train_loss", math.nan)
        if t % probe_every == 0 or t == steps:
            out[f"hessian_{t}"] = row.get("sharp_hessian", math.nan)
            out[f"ntk_{t}"] = row.get("sharp_ntk", math.nan) / nk
    return out


def sharpness_sweep(eta_factors, seeds=(0,), *, store=None, progress=True, **settings):
    """:func:`sharpness_run` for every η factor and seed through :func:`rmtnet.experiments.sweep` (resumable with a
    ``store`` CSV); ``settings`` are its keyword arguments (width, depth, n_train, steps, probe_every, …).

    Parameters
    ----------
    eta_factors : sequence of float
        The factors c > 0 (at least one).
    seeds : sequence of int, default (0,)
        Initial weights (at least one, each ≥ 0).
    store : path, optional
        The sweep's CSV (None: kept in memory only).
    progress : bool, default True
        The sweep's progress bar.
    **settings
        Passed to every run.

    Returns
    -------
    pandas.DataFrame
        One row per run.

    Examples
    --------
    Two factors on the same initial weights (one λ₀) give steps in the ratio 1 : 2:

    >>> runs = sharpness_sweep([0.5, 1.0], width=4, depth=2, n_train=8, steps=1, probe_every=1, activation="erf",
    ...                        progress=False)
    >>> len(runs), runs["eta_factor"].tolist(), bool(np.isclose(runs["eta"][1] / runs["eta"][0], 2.0))
    (2, [0.5, 1.0], True)
    """
    factors = [real_scalar("eta_factors", c, lo=0.0, lo_open=True) for c in _sequence("eta_factors", eta_factors)]
    seeds = [integer_at_least("seeds", seed, 0) for seed in _sequence("seeds", seeds)]
    boolean("progress", progress)
    grid = {"eta_factor": factors, **{k: [v] for k, v in settings.items()}}
    return experiments.sweep(sharpness_run, grid, seeds=seeds, store=store, progress=progress, on_error="raise")


def _sequence(name, values):
    """``values`` as a non-empty list (of a list, tuple, range or 1-D array), or ValueError naming ``name``."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        values = values.tolist()
    if not isinstance(values, (list, tuple, range)) or not len(values):
        raise ValueError(f"{name} must be a non-empty list, tuple or range, got {values!r:.60}")
    return list(values)


def curves(runs):
    """The runs of :func:`sharpness_sweep` as a long table: one row per (η factor, seed, step) with ``train_loss``,
    ``hessian`` and ``ntk`` (λ_max(Θ)/(Nk); NaN at steps that were not probed), ``eta``, ``two_over_eta``.

    Parameters
    ----------
    runs : pandas.DataFrame
        The sweep's table.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    A hand-written run of one step probed at step 0 only (a real sweep's table has the same columns): two rows,
    the unprobed step's ``hessian`` NaN:

    >>> runs = pd.DataFrame({"eta_factor": [0.5], "seed": [0], "eta": [0.1], "two_over_eta": [20.0],
    ...                      "loss_0": [0.3], "loss_1": [0.2], "hessian_0": [10.0], "ntk_0": [12.0]})
    >>> curves(runs)[["step", "train_loss", "hessian"]].values.tolist()
    [[0.0, 0.3, 10.0], [1.0, 0.2, nan]]
    """
    runs = runs_table("runs", runs, ["eta_factor", "seed", "eta", "two_over_eta"], of="sharpness_sweep")
    steps = sorted(int(c[5:]) for c in runs.columns if c.startswith("loss_"))
    long = []
    for _, r in runs.iterrows():
        for t in steps:
            long.append({"eta_factor": r["eta_factor"], "seed": r["seed"], "step": t, "eta": r["eta"],
                         "two_over_eta": r["two_over_eta"], "train_loss": r[f"loss_{t}"],
                         "hessian": r.get(f"hessian_{t}", math.nan), "ntk": r.get(f"ntk_{t}", math.nan)})
    return pd.DataFrame(long)
