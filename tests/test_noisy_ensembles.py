"""Fig. 4.3 of Whitaker (2023) on the spirals: the linear fit of child accuracy in the output KL, the KL where
degradation starts, and the vote against the average of the selected children (the tiny compute of
simulations/noisy_ensembles.py)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rmtnet.cli import load_simulation
from rmtnet.studies.subnetwork_ensembles import degradation_fit


def test_fit_of_an_exact_line_and_its_threshold():
    kl = np.linspace(0.0, 0.5, 26)
    fit = degradation_fit(kl, 0.985 - 0.3 * kl, 0.99, 400)
    se2 = 2 * math.sqrt(0.99 * 0.01 / 400)                      # the default drop: 2 SE of the parent on 400 points
    assert fit["drop"] == pytest.approx(se2, rel=1e-15)
    assert fit["slope"] == pytest.approx(-0.3, abs=1e-12) and fit["intercept"] == pytest.approx(0.985, abs=1e-12)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-12)
    # the line a − b·KL loses the drop over KL* = drop/b, whatever its intercept
    assert fit["threshold"] == pytest.approx(se2 / 0.3, abs=1e-12)
    assert degradation_fit(kl, 0.985 - 0.3 * kl, 0.99, 400, drop=0.05)["threshold"] == pytest.approx(0.05 / 0.3)
    assert degradation_fit(kl, 0.9 - 0.3 * kl, 0.99, 400)["threshold"] == pytest.approx(se2 / 0.3, abs=1e-12)


def test_the_linear_region_leaves_out_the_cells_past_collapse():
    # three cells on the line 0.99 − 0.4·KL, two collapsed cells at chance level with large KL
    kl = np.r_[np.full(4, 0.01), np.full(4, 0.1), np.full(4, 0.4), np.full(4, 2.0), np.full(4, 5.0)]
    wobble = np.tile([-0.01, 0.01, -0.005, 0.005], 5)
    acc = np.where(kl < 1, 0.99 - 0.4 * kl, 0.5) + wobble
    cells = np.repeat(np.arange(5), 4)
    fit = degradation_fit(kl, acc, 0.99, 250, groups=cells)
    assert fit["n_points"] == 12 and fit["kl_max"] == 0.4 and fit["level"] == pytest.approx((0.99 + 0.5) / 2)
    assert fit["slope"] == pytest.approx(-0.4, abs=1e-12)            # the wobble sums to 0 in every cell
    everything = np.polyfit(kl, acc, 1)[0]
    assert everything > -0.1                                          # the collapsed cells would flatten the line


def test_monte_carlo_slope_and_threshold_within_their_standard_errors():
    """400 children with KL ~ U(0, 0.5), accuracy 0.97 − 0.4·KL + N(0, 0.01²), seed 0: the slope's standard error
    is 0.01/(√400 · sd(KL)) ≈ 0.0035; the estimate must lie within 4 of them, the threshold correspondingly."""
    rng = np.random.default_rng(0)
    kl = rng.uniform(0, 0.5, 400)
    acc = 0.97 - 0.4 * kl + 0.01 * rng.standard_normal(400)
    fit = degradation_fit(kl, acc, 0.97, 250)
    se = 0.01 / (math.sqrt(400) * kl.std())
    assert abs(fit["slope"] + 0.4) < 4 * se
    assert abs(fit["threshold"] - fit["drop"] / 0.4) < 0.01
    rising = degradation_fit(kl, 0.95 + 0.01 * kl, 0.99, 250)             # no degradation: no threshold
    assert rising["slope"] > 0 and rising["threshold"] == math.inf


def test_refusals():
    kl = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="chance must be below parent_accuracy"):
        degradation_fit(kl, 1 - kl / 2, 0.4, 100)
    with pytest.raises(ValueError, match="groups"):
        degradation_fit(kl, 1 - kl / 2, 0.9, 100, groups=[0, 1])
    with pytest.raises(ValueError, match="kl: fewer than 2"):
        degradation_fit(kl, np.full(5, 0.1), 0.9, 100)
    with pytest.raises(ValueError, match="accuracy must lie in"):
        degradation_fit(kl, kl + 0.5, 0.9, 100)


def test_tiny_figure_tables_are_the_fit_of_their_children():
    ns = load_simulation("noisy_ensembles")
    tables = ns["compute"]("tiny")
    s, children, cells, fit = tables.extras, tables["children"], tables["cells"], tables["fit"].iloc[0]
    assert len(children) == len(s["sigmas"]) * len(s["sparsities"]) * s["candidates"] * s["pools"]
    assert len(cells) == len(s["sigmas"]) * len(s["sparsities"])
    # the fit row is the least-squares line through the children of the linear region, recomputed here by hand
    level = (fit.parent_accuracy + 0.5) / 2
    cell_mean = children.groupby(["sparsity", "sigma"]).accuracy.transform("mean")
    region = children[cell_mean >= level]
    assert children.in_linear_region.equals(cell_mean >= level) and fit.n_points == len(region)
    slope, intercept = np.polyfit(region.kl, region.accuracy, 1)
    assert fit.slope == pytest.approx(slope, abs=1e-12) and fit.intercept == pytest.approx(intercept, abs=1e-12)
    drop = 2 * math.sqrt(fit.parent_accuracy * (1 - fit.parent_accuracy) / fit.n_validation)
    assert fit["drop"] == pytest.approx(drop, rel=1e-12)
    expected = drop / -slope if slope < 0 else math.inf
    assert fit.threshold == pytest.approx(expected, rel=1e-12)
    assert fit.in_thesis_band == (0.02 <= fit.threshold <= 0.05)
    # the KL grows with σ (a mean over the candidates), the ensembles' accuracies are accuracies
    assert cells.sort_values("sigma").kl_mean.is_monotonic_increasing
    for c in ("average_accuracy", "vote_accuracy"):
        assert cells[c].between(0, 1).all()
    assert np.allclose(cells.average_minus_vote, cells.average_accuracy - cells.vote_accuracy)
    votes = tables["vote vs average"]
    every = votes[votes.mutations == "all"].iloc[0]
    assert every.n_cells == len(cells) and every.average_wins == (cells.average_minus_vote > 0).sum()
    assert isinstance(votes, pd.DataFrame)
