"""rmtnet.studies.effects: the t-tests, rank correlation and least squares behind the studies' verdicts, each checked
against an independent computation (SciPy's own tests, a closed form, or the definition)."""
import math

import numpy as np
import pytest
from scipy import stats

from rmtnet.studies.effects import difference, linear_model, rank_correlation


def test_welch_matches_scipy_and_the_closed_form():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.05, 0.01, 7), rng.normal(0.04, 0.02, 5)
    r = difference(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert r["t"] == pytest.approx(ref.statistic, rel=1e-12)
    assert r["p"] == pytest.approx(ref.pvalue, rel=1e-10)
    va, vb = a.var(ddof=1) / 7, b.var(ddof=1) / 5
    assert r["se"] == pytest.approx(math.sqrt(va + vb), rel=1e-14)
    assert r["dof"] == pytest.approx((va + vb) ** 2 / (va ** 2 / 6 + vb ** 2 / 4), rel=1e-14)


def test_paired_is_the_one_sample_test_of_the_differences():
    rng = np.random.default_rng(1)
    a = rng.normal(size=6)
    b = a + rng.normal(0.3, 0.1, 6)
    r = difference(a, b, paired=True)
    ref = stats.ttest_rel(a, b)
    assert r["t"] == pytest.approx(ref.statistic, rel=1e-12) and r["p"] == pytest.approx(ref.pvalue, rel=1e-10)
    assert r["dof"] == 5 and r["diff"] == pytest.approx(np.mean(a - b), rel=1e-14)


def test_constant_samples_give_exact_answers_not_nan():
    assert difference([1.0, 1.0], [1.0, 1.0])["p"] == 1.0
    r = difference([2.0, 2.0], [1.0, 1.0])
    assert r["p"] == 0.0 and r["t"] == math.inf


def test_spearman_is_pearson_on_ranks():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=20), rng.normal(size=20)
    y[::3] = x[::3]
    r = rank_correlation(x, y)
    assert r["rho"] == pytest.approx(np.corrcoef(stats.rankdata(x), stats.rankdata(y))[0, 1], rel=1e-12)
    assert r["n"] == 20 and 0 < r["p"] < 1


def test_least_squares_one_predictor_matches_linregress():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 5, 30)
    y = 0.7 - 0.2 * x + rng.normal(0, 0.3, 30)
    fit, ref = linear_model(y, {"x": x}), stats.linregress(x, y)
    assert fit.loc["x", "coef"] == pytest.approx(ref.slope, rel=1e-12)
    assert fit.loc["x", "se"] == pytest.approx(ref.stderr, rel=1e-10)
    assert fit.loc["x", "p"] == pytest.approx(ref.pvalue, rel=1e-8)
    assert fit.loc["intercept", "se"] == pytest.approx(ref.intercept_stderr, rel=1e-10)
    assert fit.attrs["r2"] == pytest.approx(ref.rvalue ** 2, rel=1e-12)


def test_least_squares_separates_two_correlated_predictors():
    # y follows u only; v is correlated with u but carries no effect of its own: the fit must say so
    rng = np.random.default_rng(4)
    u = rng.normal(size=200)
    v = u + rng.normal(0, 0.5, 200)
    y = 1.0 + 2.0 * u + rng.normal(0, 0.1, 200)
    fit = linear_model(y, {"u": u, "v": v})
    assert abs(fit.loc["u", "coef"] - 2.0) < 4 * fit.loc["u", "se"]
    assert abs(fit.loc["v", "coef"]) < 4 * fit.loc["v", "se"]
    assert fit.loc["u", "p"] < 1e-50 and fit.attrs["dof"] == 197


@pytest.mark.parametrize("call, match", [
    (lambda: difference([1.0], [1.0, 2.0]), "a must have at least 2"),
    (lambda: difference([1.0, math.nan], [1.0, 2.0]), "a"),
    (lambda: difference([1.0, 2.0, 3.0], [1.0, 2.0], paired=True), "same length"),
    (lambda: rank_correlation([1, 1, 1], [1, 2, 3]), "two distinct"),
    (lambda: linear_model([1.0, 2.0, 3.0, 4.0], {"a": [1, 2, 3, 4], "b": [2, 4, 6, 8]}), "collinear"),
    (lambda: linear_model([1.0, 2.0, 3.0], {"a": [1, 2, 4], "b": [0, 1, 0]}), "more values"),
    (lambda: linear_model([1.0, 2.0, 3.0], {}), "at least one"),
])
def test_bad_input_is_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()
