"""The figures' headline agreements, asserted where no other test asserts them: each test computes the figure (its
quick size, or the rows of it that carry the claim) and checks the number its caption or docstring states, with the
tolerance that claim gives (its rounding, its standard error over seeds, or the resolution of the measurement).

These are slow (the quick figures train networks: 20 s to 3 minutes each on one core) and marked ``agreement``:
``.ci/run`` runs ``-m "slow and agreement"`` after the quick suite, so a change that moves a published effect fails
there. The figures whose agreements are asserted elsewhere: tests/test_simulations.py (mp_and_fuss_catalan,
jacobian_spectra, dynamical_isometry, ntk_spectrum, mixer_singular_values, cka_mixer_vs_swmlp, ntk_over_data,
ntk_dynamics at reduced size), tests/test_lanczos.py (large_width), tests/test_freeness.py (freeness, decay faster
than N^{-1/2}), tests/test_kernels.py (nngp), tests/test_emn.py (emn_table1, emn_sparsity), tests/test_ensembles.py
(spiral_decision_boundaries), tests/test_trained_spectra.py (trained_spectra at initialisation).
"""

import numpy as np
import pytest

from rmtnet import cli

pytestmark = [pytest.mark.slow, pytest.mark.agreement, pytest.mark.usefixtures("torch_one_thread")]


def _compute(name, tmp_path, **overrides):
    """The figure's quick compute() with its runs stored under ``tmp_path`` (one process)."""
    ns = cli.load_simulation(name)
    return ns["compute"]("quick", seed=0, store=tmp_path, **overrides)


# ------------------------------------------------------------------------------------------------ freeness
def test_freeness_deviation_falls_like_one_over_n(tmp_path):
    """freeness.py (quick: N = 64 … 512, 32 networks): the fitted slope of |mean deviation| of tr(a°b°a°b°) against N
    is the free prediction −1 for Haar and Gaussian weights within 3 of its standard errors (measured −0.99 ± 0.15,
    −1.17 ± 0.28), and 0 for the commuting control within 0.05 (measured +0.01 ± 0.01). tests/test_freeness.py only
    asserts a decay faster than N^{−1/2}."""
    tables = cli.load_simulation("freeness")["compute"]("quick", seed=0)
    for case in ("haar", "gaussian"):
        a = tables[f"{case} abab_c"].attrs
        assert abs(a["slope"] + 1.0) <= 3 * a["slope_se"], (case, a["slope"], a["slope_se"])
    a = tables["control abab_c"].attrs
    assert abs(a["slope"]) <= 0.05, (a["slope"], a["slope_se"])


# ------------------------------------------------------------------------------------------------ red line
# The borders are geometric midpoints of a bisected bracket: the grid's step 10^(1/3) halved 3 times in log, so a
# border is known to within a factor 10^(1/48) = 1.049 either way.
BORDER_RESOLUTION = 10 ** (1 / 48)


def test_red_line_border_is_the_laws_line_at_depth_2(tmp_path):
    """red_line.py (quick: 4 families × depths 2, 4, 6 × 3 seeds): "At depth 2 the border is the line within 27 %"
    — every seed's stability border over the law's η* = 2Nk/λ_max is in [1/1.27, 1.27], widened by the border's
    resolution; and the catapult band: the loss blows up 1.9–4.4× above the line (every run whose divergence the grid
    brackets), above its own stability border."""
    runs = _compute("red_line", tmp_path)["runs"]
    two = runs[runs.depth == 2]
    assert len(two) == 4 * 3 and (two.stability_censored == "no").all()
    lo, hi = 1 / (1.27 * BORDER_RESOLUTION), 1.27 * BORDER_RESOLUTION
    assert two.stability_over_law.between(lo, hi).all(), two[["family", "seed", "stability_over_law"]]
    div = runs[runs.divergence_censored == "no"]
    assert len(div) >= len(runs) // 2
    assert div.divergence_over_law.between(1.9 / BORDER_RESOLUTION, 4.4 * BORDER_RESOLUTION).all(), \
        div[["family", "depth", "seed", "divergence_over_law"]]
    assert (div.divergence_border > div.stability_border).all()


# ------------------------------------------------------------------------------------------------ subnetworks
def test_subnetwork_ensembles_show_no_advantage_on_mnist5k(tmp_path):
    """subnetwork_ensembles.py (quick settings with 4 seeds, the MNIST-5k rows: 2 mask draws): "The thesis's SSE advantage at this
    budget does not appear" — the thesis's smallest advantage, +2 points over the independent model, lies above the
    paired effect SSE(R) − independent by more than 2 of its standard errors (measured at 5 seeds, 3 draws:
    −0.94 ± 0.27 points; here −0.85 ± 0.18), and the children's ensemble does not beat its own 8-epoch parent by 2
    standard errors (measured −0.08 ± 0.50; here −0.53 ± 0.34)."""
    eff = _compute("subnetwork_ensembles", tmp_path, datasets=("mnist5k",), seeds=4, n_jobs=1)["effects"]
    eff = eff[eff.dataset == "mnist5k"].set_index("comparison")
    d = eff.loc["SSE(R) − independent"]
    assert d.n_seeds == 4 and d.accuracy_diff + 2 * d.accuracy_se < 0.02, d
    p = eff.loc["SSE(R) − its 8-epoch parent"]
    assert p.accuracy_diff - 2 * p.accuracy_se < 0, p


def test_temperature_annealing_beats_one_shot_at_98_percent(tmp_path):
    """annealing.py (quick settings with 3 seeds, its 98 % rows: width 128, random masks): temperature annealing − one-shot, best
    accuracy at the target, measured +15.6 ± 2.4 points with the constant learning rate (3 of 3 seeds) and +7.2 ± 3.7
    one-cycle (2 of 3); here +16.3 ± 1.8 and +5.0 ± 4.0. Asserted: the constant-lr gain within 2 of the published
    standard errors of +15.6 and won by every seed; the one-cycle gain within 2 of its standard errors of +7.2."""
    g = _compute("annealing", tmp_path, sparsities=(0.98,), seeds=3, n_jobs=1)["gains"]
    g = g[(g.method == "temperature_anneal") & (g.sparsity == 0.98)].set_index("schedule")
    const, cycle = g.loc["constant"], g.loc["onecycle"]
    assert const.n_seeds == 3 and const.best_wins == 3, const
    assert abs(100 * const.best_gain - 15.6) <= 2 * 2.4, const
    assert abs(100 * cycle.best_gain - 7.2) <= 2 * 3.7, cycle


# ------------------------------------------------------------------------------------------------ sharpness
def test_sharpness_prediction_and_edge_of_stability(tmp_path):
    """sharpness.py (quick: N = 256, W = 128, depth 4, erf, seed 0), its stated numbers to their rounding: the
    kernel prediction is 0.61 of λ_max(∇²L(θ₀)) (9.80; Gauss–Newton part 10.41); from step 10 on the Gauss–Newton
    share is 0.99–1.02; at c = 2.5 λ_max sharpens past 2/η by step 140 and, after the loss jumps at step 150, stays
    within 4 % of 2/η to step 200 (the edge of stability); at c = 1.9 it rises towards 2/η from below (5.08 at step 200
    against 5.16); at c = 0.5 it only falls (to 8.0); c = 4 diverges within 7 steps."""
    t = _compute("sharpness", tmp_path)
    init = t["initial"].iloc[0]
    assert abs(init.hessian - 9.80) <= 0.005 and abs(init.gauss_newton - 10.41) <= 0.005, init
    assert abs(init.prediction_over_hessian - 0.61) <= 0.005, init
    probes = t["sharpness against step"].dropna(subset=["hessian"])
    runs = t["runs"].set_index("eta_factor")
    late = probes[(probes.step >= 10) & probes.eta_factor.isin(runs.index[runs.diverged == 0])]
    share = late.ntk / late.hessian
    assert share.between(0.985, 1.025).all(), late.assign(share=share)[share.sub(1.0).abs() > 0.015]
    by = {c: g.set_index("step").hessian for c, g in probes.groupby("eta_factor")}
    two = {c: float(g.two_over_eta.iloc[0]) for c, g in probes.groupby("eta_factor")}
    eos = by[2.5]
    assert eos[eos.index <= 140].max() > two[2.5]
    assert (eos[eos.index >= 150] / two[2.5] - 1).abs().max() <= 0.04, eos / two[2.5]
    rise = by[1.9][by[1.9].index >= 70]
    assert np.all(np.diff(rise.to_numpy()) > 0) and rise.iloc[-1] < two[1.9] and abs(rise.iloc[-1] - 5.08) <= 0.005
    assert np.all(np.diff(by[0.5].to_numpy()) < 0) and abs(by[0.5].iloc[-1] - 8.0) <= 0.05
    assert runs.loc[4.0, "diverged"] and runs.loc[4.0, "steps_done"] <= 7


# ------------------------------------------------------------------------------------------------ trained spectra
def test_trained_spectra_what_training_moves(tmp_path):
    """trained_spectra.py (quick: MLP width 128, Mixer C = 16, EMN n = 20, 3 epochs, seed 0), what the results page
    states of the audit, against each layer's own Monte Carlo KS band (``ks_noise``): at initialisation every layer is
    on its law; trained, the MLP's first layer grows spikes past the Tracy–Widom margin (measured 12 at this size,
    12–15 at the full size) with its bulk still on the law, its read-out leaves its law, the static-mask layers do
    not move, and EMN's adjacency layer collapses to rank one (a single eigenvalue past the law's edge, the
    rest off the law). (The page's KS numbers, read-outs 0.7–0.9 and masks ≤ 0.021, are the full size's: here they are
    0.50–0.64 and ≤ 0.027, and the Mixers' 10-eigenvalue heads are inside their wide band.)"""
    layers = _compute("trained_spectra", tmp_path, n_jobs=1)["layers"].set_index(["model", "stage", "layer"])
    init = layers.xs("init", level="stage")
    assert (init.ks <= init.ks_noise).all(), init[init.ks > init.ks_noise]
    first = layers.loc[("mlp", "trained", "layers.0")]
    assert first.spikes >= 10 and first.ks <= first.ks_noise, first
    head = layers.loc[("mlp", "trained", "layers.2")]
    assert head.ks > head.ks_noise, head
    masked = layers[layers.kind == "masked"].xs("trained", level="stage")
    assert len(masked) == 8 and (masked.ks <= masked.ks_noise).all(), masked
    adj = layers.loc[("emn", "trained", "first")]
    assert adj.outliers == 1 and adj.ks > adj.ks_noise, adj


# ------------------------------------------------------------------------------------------------ NTK dynamics
def test_wide_networks_train_like_their_ntk_ensemble(tmp_path):
    """ntk_dynamics.py (quick: widths 128 and 512, 12 networks, 300 steps): the networks' mean test MSE is the NTK
    ensemble's expected MSE within 3 standard errors at every checkpoint (measured |z| ≤ 1.8); their mean prediction
    after the last step is the predicted mean within 3 standard errors (rms over the test points, with and without
    the control variate); and a single network's departure from its linearised model shrinks with W, slower than
    W^{−1/2} (the docstring: 0.19 → 0.12 from 512 to 2048 at the full size; here 0.38 → 0.25 from 128 to 512)."""
    t = _compute("ntk_dynamics", tmp_path)
    c = t["test MSE against step"]
    z = (c.mse_nets - c.mse_theory) / c.mse_nets_se
    assert set(c.width) == {128, 512} and z.abs().max() <= 3, c.assign(z=z)
    g = t["gap against width"].set_index("width")
    assert (g.rms_gap <= 3 * g.rms_se_of_mean).all() and (g.rms_gap_cv <= 3 * g.rms_se_cv).all(), g
    shrink = g.rms_network_vs_linear[512] / g.rms_network_vs_linear[128]
    assert (128 / 512) ** 0.5 < shrink < 1, g


# ------------------------------------------------------------------------------------------------ Monarch
def test_monarch_and_dense_mixing_beat_the_kronecker_mixer_on_mnist5k(tmp_path):
    """monarch.py (quick: 2 seeds × 6 epochs at equal connections per block): the measured effect, Monarch's and
    dense mixing's test errors below the Kronecker Mixer's by more than 2 Welch standard errors each (quick measured:
    Mixer 8.75 %, Monarch 5.60 %, dense 6.25 %; full, 10 seeds: −1.61 ± 0.21 and −1.36 ± 0.19 points). Hayase &
    Karakida's "Monarch and Kronecker perform similarly" (CIFAR-10) is what this does *not* reproduce; a change that
    makes the two alike here fails this test and must be looked at."""
    tables = cli.load_simulation("monarch")["compute"]("quick", seed=0, store=tmp_path / "monarch_runs.csv")
    summary = tables["summary"].set_index("model")
    for model in ("monarch", "dense"):
        diff, se = summary.loc[model, "diff_to_mixer"], summary.loc[model, "diff_se"]
        assert diff < -2 * se, (model, diff, se)


# ------------------------------------------------------------------------------------------------ Fig. 4.3
def test_noisy_children_degrade_linearly_in_kl_up_to_the_thesis_threshold():
    """noisy_ensembles.py (quick, seed 0; Whitaker 2023, Fig. 4.3): child accuracy falls linearly with the output
    KL to the parent (least-squares slope below 0 by more than 3 of its standard errors, computed here from the
    children on the fit's region), and the KL where the line has lost two standard errors of the parent's accuracy
    is inside the thesis's band 0.02–0.05 (quick measured 0.026, 0.026, 0.036 for seeds 0–2; R² 0.90–0.94)."""
    tables = cli.load_simulation("noisy_ensembles")["compute"]("quick", seed=0)
    fit = tables["fit"].iloc[0]
    assert fit.thesis_low <= fit.threshold <= fit.thesis_high, fit.threshold
    assert bool(fit.in_thesis_band)
    children = tables["children"]
    region = children[children.in_linear_region]
    x, y = region.kl.to_numpy(), region.accuracy.to_numpy()
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    se = np.sqrt(resid @ resid / (x.size - 2) / np.sum((x - x.mean()) ** 2))
    assert b < -3 * se, (b, se)
