"""Asymptotic freeness of D_ℓ² and W_ℓ D_{ℓ-1}² W_ℓᵀ in an actual MLP (Collins & Hayase, CMP 2023).

Slopes are fits of log|mean deviation| on log N (rmtnet.studies.freeness.loglog_fit); fixed seeds, so every number
below is deterministic. Measured (seed 0, NumPy, OpenBLAS):
  ReLU, σ_w² = 2, depth 2, N = 32…512, 64 networks per point, word tr(a°b°a°b°):
      Haar −1.06 ± 0.10, Gaussian −0.95, control (signed permutations) +0.02; control/Haar at N = 512 ≈ 360.
  Over seeds 0–5 the Haar slope ranged over −0.88 … −1.06, the Gaussian one −0.78 … −1.07, the control 0.00 … +0.02.
  With 256 networks per point: ReLU Haar −0.94 ± 0.07, Gaussian −0.89 ± 0.07; tanh (σ_w = 1.5, σ_b = 0.1) Haar
  −1.01 ± 0.03, Gaussian −0.95 ± 0.06, control −0.004 ± 0.003. Single-sample spreads fall like N^{-1.0} (Haar,
  Gaussian) and N^{-0.5} (control).
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rmtnet import backend as B
from rmtnet import cli
from rmtnet.spectra.network import mlp
from rmtnet.spectra import Bernoulli, MarchenkoPastur, free_mult
from rmtnet.studies.freeness import (WORDS, free_abab, freeness_deviations, freeness_test, loglog_fit, sample_network,
                                     word_values)
from rmtnet.spectra.sampling.montecarlo import haar_orthogonal

RELU = dict(depth=2, activation="relu", sigma_w=2 ** 0.5, sigma_b=0.0)


@pytest.fixture(scope="module")
def relu_result():
    return freeness_test(widths=(32, 64, 128, 256, 512), n_samples=64, seed=0, words=("abab_c", "ab"), **RELU)


def test_haar_and_gaussian_deviation_falls_like_one_over_n(relu_result):
    r = relu_result
    # measured: Haar −1.06 ± 0.10, Gaussian −0.95 (seed 0); the expected value is −1
    for case in ("haar", "gaussian"):
        slope, se = r.slope(case, "abab_c")
        assert slope < -0.5, (case, slope, se)
        assert np.isfinite(se) and se < 0.4
        # the single-sample spread is O(1/N), not O(1/√N): the sample's own moments are used for the centring
        sd_slope = float(r.slopes[(r.slopes.case == case) & (r.slopes.word == "abab_c")].sd_slope.iloc[0])
        assert -1.3 < sd_slope < -0.75, (case, sd_slope)
    t = r.table[(r.table.case == "haar") & (r.table.word == "abab_c")].sort_values("N")
    assert t["mean"].abs().iloc[-1] < t["mean"].abs().iloc[0] / 5          # 16× the width, ≥ 5× smaller


def test_control_is_not_free(relu_result):
    r = relu_result
    slope, _ = r.slope("control", "abab_c")
    assert slope > -0.2                                                    # measured +0.02
    dev_c, se_c = r.deviation("control", "abab_c")
    dev_h, _ = r.deviation("haar", "abab_c")
    assert dev_c > 0.1 and dev_c > 10 * se_c                               # O(1), resolved
    assert dev_c >= 10 * dev_h                                             # measured ≈ 360×


def test_result_table_is_tidy(relu_result):
    t = relu_result.table
    assert set(t.columns) >= {"case", "weights", "word", "N", "n_samples", "mean", "se", "sd", "rms"}
    assert set(t.case) == {"haar", "gaussian", "control"} and set(t.word) == {"abab_c", "ab"}
    assert (t.n_samples == 64).all() and np.allclose(t.se, t.sd / 8)
    assert set(relu_result.slopes.columns) >= {"case", "word", "slope", "slope_se", "sd_slope"}


def test_shuffled_control_separates_order_four_from_order_two():
    # b = σ² Π D₁² Πᵀ: the spectrum of the Haar b, but commuting with a and classically independent of it.
    # tr(a°b°) → 0 (independence suffices), tr(a°b°a°b°) → tr(a°²)tr(b°²) ≠ 0 (freeness fails at order four).
    r = freeness_test(widths=(32, 64, 128), n_samples=16, seed=3, cases=("control",), control="shuffled",
                      words=("ab", "abab_c"), **RELU)
    t = r.table.set_index(["word", "N"])
    assert (t.weights == "shuffled").all()
    assert abs(t.loc[("abab_c", 128), "mean"]) > 0.2                       # ReLU: tr(a°²) = 1/4, tr(b°²) ≈ 1
    assert abs(t.loc[("ab", 128), "mean"]) < 4 * t.loc[("ab", 128), "se"] + 1e-12
    assert r.slope("control", "abab_c")[0] > -0.2


# ---------------------------------------------------------------------------------------------------------------
# the free prediction and the word evaluation, checked independently

def test_free_abab_is_the_second_moment_of_the_free_product():
    # m₂(μ ⊠ ν) by rmtnet's ⊠ engine (S-transforms), an independent route to φ(abab) for free a, b
    for mu, nu, ma, mb in ((MarchenkoPastur(0.5), MarchenkoPastur(0.25), (1, 1.5), (1, 1.25)),
                           (Bernoulli(0.5), MarchenkoPastur(0.25), (0.5, 0.5), (1, 1.25))):
        assert free_abab(ma[0], ma[1], mb[0], mb[1]) == pytest.approx(free_mult(mu, nu).moment(2), rel=1e-9)
    assert free_abab(1, 2, 1, 2) == 3                                     # Fuss–Catalan(2): m₂ = C(6,2)/5 = 3


def test_free_prediction_holds_for_an_exactly_free_pair():
    # a = a projection of trace ½, b = O diag(β) Oᵀ with O Haar independent of it: free as N → ∞.
    # Limit: tr(abab) = ½·tr(β)² + ¼·tr(β²) − ¼·tr(β)² = 7/12 for β uniform on [0, 2] (computed from the
    # deterministic moments, not the sample's). Measured at N = 400 over 8 draws: single-draw spread 2.2e-3, mean
    # deviation 5e-4; the tolerance is 3e-3 (≈ 4 standard errors of the mean plus the O(1/N) bias).
    n, s = 400, 8
    rng = B.rng(1, "numpy")
    a = np.r_[np.ones(n // 2), np.zeros(n - n // 2)]
    beta = np.linspace(0.0, 2.0, n)
    o = haar_orthogonal(n, rng, batch=s)
    b = (o * beta[None, None, :]) @ np.swapaxes(o, -1, -2)
    ab = a[None, :, None] * b
    tr_abab = np.einsum("sij,sji->s", ab, ab) / n
    pred = free_abab(0.5, 0.5, beta.mean(), (beta ** 2).mean())
    assert pred == pytest.approx(7 / 12, abs=2e-3)
    assert abs(tr_abab.mean() - pred) < 3e-3
    v = word_values(np.broadcast_to(a, (s, n)), b)
    se = {w: x.std(ddof=1) / np.sqrt(s) for w, x in v.items()}
    for w in WORDS:
        assert abs(v[w].mean()) < 5 * se[w] + 1e-3, w


def test_word_values_match_dense_traces():
    rng = np.random.default_rng(5)
    n = 7
    a = rng.random((2, n))
    g = rng.standard_normal((2, n, n))
    b = g @ np.swapaxes(g, -1, -2) / n
    v = word_values(a, b)
    for k in range(2):
        A, Bm = np.diag(a[k]), b[k]
        tr = lambda m: np.trace(m) / n                                    # noqa: E731
        Ac, Bc = A - tr(A) * np.eye(n), Bm - tr(Bm) * np.eye(n)
        assert v["ab"][k] == pytest.approx(tr(Ac @ Bc), abs=1e-13)
        assert v["abab_c"][k] == pytest.approx(tr(Ac @ Bc @ Ac @ Bc), abs=1e-13)
        assert v["ababab_c"][k] == pytest.approx(tr(Ac @ Bc @ Ac @ Bc @ Ac @ Bc), abs=1e-13)
        free = tr(A @ A) * tr(Bm) ** 2 + tr(A) ** 2 * tr(Bm @ Bm) - tr(A) ** 2 * tr(Bm) ** 2
        assert v["abab"][k] == pytest.approx(tr(A @ Bm @ A @ Bm) - free, abs=1e-13)
    # a diagonal b given as its diagonal agrees with the dense route; commuting pairs violate freeness
    d = rng.random((2, n))
    dense = word_values(a, d[:, :, None] * np.eye(n))
    diag = word_values(a, d, diagonal_b=True)
    for w in WORDS:
        assert np.allclose(dense[w], diag[w], atol=1e-14)


def test_sampler_propagates_an_actual_input():
    net = mlp(3, 50, weights="orthogonal", activation="tanh", sigma_w=1.5, sigma_b=0.1, q0=1.0)
    d1 = sample_network(net, 64, n_samples=3, seed=4)
    d2 = sample_network(net, 64, n_samples=3, seed=4)
    assert d1.depth == 3 and d1.n == 64 and d1.n_samples == 3
    assert np.array_equal(d1.weights[2], d2.weights[2])                  # seeded
    assert np.allclose(np.sum(d1.x0 ** 2, axis=-1) / 64, 1.0)
    w = d1.weights[1]
    assert np.allclose(w @ np.swapaxes(w, -1, -2), 1.5 ** 2 * np.eye(64), atol=1e-12)
    x1 = np.tanh(d1.h[0])
    assert np.allclose(d1.d[1], 1 - np.tanh(d1.h[1]) ** 2)
    resid = d1.h[1] - (w @ x1[..., None])[..., 0]                        # = the bias, σ_b = 0.1
    assert 0.05 < resid.std() < 0.2
    a, b = d1.jacobian_pair(2)
    assert a.shape == (3, 64) and b.shape == (3, 64, 64)
    assert np.allclose(b, (w * d1.d[0][:, None, :] ** 2) @ np.swapaxes(w, -1, -2))
    p = sample_network(net, 16, seed=0, weights="permutation").weights[0] / 1.5
    assert np.allclose(np.abs(p).sum(axis=-1), 1) and np.allclose(np.abs(p).sum(axis=-2), 1)
    assert np.allclose(p @ np.swapaxes(p, -1, -2), np.eye(16))


def test_loglog_fit_recovers_a_power_law():
    n = np.array([32, 64, 128, 256])
    fit = loglog_fit(n, 3.0 / n)
    assert fit.slope == pytest.approx(-1.0, abs=1e-12) and fit.slope_se == pytest.approx(0.0, abs=1e-12)
    fit = loglog_fit(n, -3.0 / n, se=0.1 * 3.0 / n)                      # |y| is fitted; se = 10 % on every point
    assert fit.slope == pytest.approx(-1.0, abs=1e-12)
    assert fit.slope_se == pytest.approx(0.1 / np.sqrt(np.sum((np.log(n) - np.log(n).mean()) ** 2)), rel=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# bad input

@pytest.mark.parametrize("kwargs, match", [
    (dict(widths=(64,)), "widths"),
    (dict(widths=(64, 64)), "widths"),
    (dict(widths=(1, 64)), "widths"),
    (dict(widths=64), "widths"),
    (dict(n_samples=1), "n_samples"),
    (dict(words=("abba",)), "words"),
    (dict(words=()), "words"),
    (dict(cases=("haar", "unitary")), "cases"),
    (dict(control="identity"), "control"),
    (dict(layer=1), "layer"),
    (dict(layer=3), "layer"),
    (dict(seed=-1), "seed"),
])
def test_bad_input_is_rejected_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        freeness_test(**{**dict(widths=(8, 16), n_samples=2), **kwargs})


def test_bad_network_is_rejected():
    with pytest.raises(ValueError, match="square"):
        freeness_test(mlp(2, 16, ratios=(2.0, 0.5), sigma_w=1.0), widths=(8, 16), n_samples=2)
    with pytest.raises(ValueError, match="depth"):
        freeness_test(mlp(1, 16, sigma_w=1.0), widths=(8, 16), n_samples=2)
    with pytest.raises(ValueError, match="net"):
        freeness_test(mlp(2, 16, sigma_w=1.0), widths=(8, 16), n_samples=2, activation="relu")
    with pytest.raises(ValueError, match="weights"):
        sample_network(mlp(2, 16, sigma_w=1.0), weights="unitary")
    with pytest.raises(ValueError, match="width"):
        freeness_deviations(mlp(2, 16, sigma_w=1.0), 0)
    with pytest.raises(ValueError, match="y"):
        loglog_fit([8, 16], [1.0, 0.0])
    with pytest.raises(ValueError, match="same N"):
        word_values(np.ones((2, 4)), np.ones((2, 5, 5)))


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_cupy_backend_agrees_in_law():
    """The CPU acceptance setting (widths 32…512, 64 networks per point, seed 0) drawn on the GPU with CuPy's own
    generator: the same assertions as the NumPy run. (An earlier version used 16 networks at widths 64…256, where the
    Haar slope is not resolved: on the CPU over seeds 0–11 it ranged from −2.50 to +1.25, standard errors 0.36–1.06.)"""
    r = freeness_test(widths=(32, 64, 128, 256, 512), n_samples=64, seed=0, backend="cupy", words=("abab_c",), **RELU)
    for case in ("haar", "gaussian"):
        slope, se = r.slope(case, "abab_c")
        assert slope < -0.5 and se < 0.4, (case, slope, se)
    assert r.slope("control", "abab_c")[0] > -0.2


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_cupy_word_values_equal_numpy_on_the_same_draws():
    """With NumPy's stream on the device (HostStream) the networks are the same, and so are the deviations of every
    word, to 1e-10 of their scale."""
    net = mlp(width=128, **RELU)
    host = sample_network(net, 128, 4, seed=7, backend="numpy")
    dev = sample_network(net, 128, 4, seed=B.HostStream(7, "cupy"), backend="cupy")
    vh, vd = word_values(*host.jacobian_pair()), word_values(*dev.jacobian_pair())
    for w in vh:
        got = B.to_numpy(vd[w])
        assert np.abs(got - vh[w]).max() <= 1e-10 * np.abs(vh[w]).max(), w


# ---------------------------------------------------------------------------------------------------------------
# the figure script

def test_freeness_figure(tmp_path):
    path, tables = cli.load_simulation("freeness")["main"](full=False, outdir=tmp_path)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    csv = pd.read_csv(Path(path).with_suffix(".csv"))
    assert set(csv.columns) >= {"panel", "N", "mean", "se", "abs_mean", "slope", "slope_se"}
    assert set(csv.panel) == set(tables) and len(tables) == 3 * len(WORDS)
    for name, t in tables.items():
        assert np.isfinite(t.attrs["slope"]) and np.allclose(t.slope, t.attrs["slope"]), name
    # tanh, σ_w = 1.5, σ_b = 0.1, N = 64…512, 32 networks: measured Haar −0.99 ± 0.15, Gaussian −1.17 ± 0.28,
    # control +0.01 ± 0.01 (word tr(a°b°a°b°))
    assert tables["haar abab_c"].attrs["slope"] < -0.5
    assert tables["gaussian abab_c"].attrs["slope"] < -0.5
    assert tables["control abab_c"].attrs["slope"] > -0.2
    assert tables["control abab_c"].abs_mean.iloc[-1] >= 10 * tables["haar abab_c"].abs_mean.iloc[-1]


def test_freeness_test_names_its_arguments_and_refuses_degenerate_nets():
    """Found by tests/test_fuzz.py: widths/words/cases that are not sequences gave "'float' object is not
    iterable", a depth-1 net an error that did not name net, and a linear (or saturated tanh) net, whose D² is
    constant so that every deviation is exactly 0, "y must be finite and non-zero (its logarithm is fitted)"."""
    for kwargs, name in ((dict(widths=None), "widths"), (dict(widths=3.0), "widths"), (dict(words=1.0), "words"),
                         (dict(cases=None), "cases"), (dict(words=object()), "words")):
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            freeness_test(mlp(2, 4, activation="tanh", sigma_w=1.0), n_samples=2, **{"widths": (4, 6), **kwargs})
    for net in (mlp(1, 4, sigma_w=1.0), mlp(2, 4, activation="linear"), mlp(2, 4, sigma_w=100.0, activation="tanh")):
        with pytest.raises(ValueError, match=r"\bnet\b"):
            freeness_test(net, widths=(4, 6, 8), n_samples=2)
