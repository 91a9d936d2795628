"""The spectral audit of (trained) layers (rmtnet.nets.spectral_audit): at initialisation every layer sits on its law
within the Monte Carlo noise of its size, for each model type; the power-law MLE recovers a known exponent; the
spiked-model test finds a planted rank-one spike above the BBP threshold and not one below; the table's columns."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from rmtnet.nets import spectral_audit as sa  # noqa: E402
from rmtnet.nets.models import EMN, MLP, MLPMixer, RPMixer, SWMLP  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_one_thread")

MODELS = {
    "mlp": lambda seed: MLP([196, 128, 64, 10], seed=seed),
    "mixer": lambda seed: MLPMixer(16, 49, 16, 1, 10, seed=seed),
    "rp": lambda seed: RPMixer(16, 49, 16, 1, 10, seed=seed),
    "swmlp": lambda seed: SWMLP(16, 49, 16, 1, 10, storage="dense", seed=seed),
    "emn": lambda seed: EMN(40, copies=(1,), seed=seed),
}


@pytest.mark.parametrize("kind", list(MODELS))
def test_every_layer_at_initialisation_is_on_its_law_within_the_monte_carlo_noise(kind):
    """KS of each layer's distinct eigenvalues to its law ≤ the DKW band √(log(2/α)/(2n)) at α = 1 % (n = the
    layer's number of distinct eigenvalues; 10 … 128 here, band 0.51 … 0.14), seeds 0–2. Eigenvalues are more regular
    than iid draws, so the measured KS are well inside (MLP 0.019–0.173 against bands 0.14–0.51, Mixer and RP-Mixer
    0.063–0.171 against 0.41–0.51, SW-MLP 0.010–0.171, EMN 0.048–0.152 against 0.26). Control: the same layers
    against a law of 4× the scale (σ_w = 2 claimed, 1 drawn) leave the band wherever n ≥ 16 (KS 0.27–0.75 against
    0.14–0.41; masked layers keep the σ_w they record and are not in the control)."""
    for seed in range(3):
        table = sa.layer_spectra(MODELS[kind](seed))
        assert len(table) >= 2
        assert (table.ks <= table.ks_noise).all(), table[["layer", "ks", "ks_noise"]]
        wrong = sa.layer_spectra(MODELS[kind](seed), sigma_w=2.0, mask_draws=0)
        big = (wrong.n_eigs >= 16) & (wrong.kind != "masked")      # masked layers keep their own σ_w
        assert (wrong.ks[big] > wrong.ks_noise[big]).all(), wrong[["layer", "ks", "ks_noise"]]


def test_the_table_has_its_columns_and_kinds():
    table = sa.layer_spectra(SWMLP(8, 49, 8, 1, 10, storage="dense", seed=0))
    assert tuple(table.columns) == sa.COLUMNS
    assert list(table.kind) == ["kronecker", "masked", "masked", "masked", "masked", "dense"]
    assert list(table.repeat) == [8, 1, 1, 1, 1, 1]
    assert table.law.iloc[1] == "mask MC(16)" and table.law.iloc[-1] == "MP(0.8)"


def test_the_power_law_mle_recovers_pareto_exponents():
    """Pareto(α, x_min = 1) samples, n = 4000, seed 0: with x_min fixed, the closed-form MLE 1 + n/Σ log x; with
    x_min chosen by KS, α̂ within 4 standard errors (α − 1)/√n_tail of α, for α = 1.8, 2.5, 4."""
    rng = np.random.default_rng(0)
    for alpha in (1.8, 2.5, 4.0):
        x = (1.0 - rng.random(4000)) ** (-1.0 / (alpha - 1.0))
        fixed = sa.power_law_fit(x, x_min=1.0)
        assert fixed["alpha"] == pytest.approx(1 + x.size / np.sum(np.log(x)), rel=1e-12)
        assert fixed["n_tail"] == x.size
        fit = sa.power_law_fit(x)
        assert abs(fit["alpha"] - alpha) <= 4 * (alpha - 1) / math.sqrt(fit["n_tail"]), fit
    body = rng.uniform(0.1, 1.0, 3000)                          # a body below x_min = 1 is cut off by the KS choice
    tail = (1.0 - rng.random(1000)) ** (-1.0 / 1.5)             # α = 2.5 above 1
    fit = sa.power_law_fit(np.concatenate([body, tail]))
    assert 0.9 <= fit["x_min"] <= 1.3 and abs(fit["alpha"] - 2.5) <= 4 * 1.5 / math.sqrt(fit["n_tail"]), fit


@pytest.mark.parametrize("shape", [(400, 200), (200, 400)])
def test_a_planted_spike_is_found_above_the_bbp_threshold_and_not_below(shape):
    """W = G + θ uvᵀ, G entries N(0, 1/n_in) (seed 1), u, v seed 0: at θ = 2θ_c one spike, its position and θ̂ within
    15 % of the Benaych-Georges–Nadakuditi limit and of θ (the outlier fluctuates by O(n^{−1/2}): over weight seeds
    0–7 at 200 × 400 it fell at 4.25–4.92 against the limit 4.51, sd 4.5 %; 15 % ≈ 3 sd); at θ = θ_c/2 none (the
    top eigenvalue stays inside the TW₁ 99 % margin)."""
    n_out, n_in = shape
    law = sa.layer_law(n_out, n_in)
    theta_c = sa.spike_threshold(law.ratio, law.scale)
    g = torch.Generator().manual_seed(0)
    u, v = torch.randn(n_out, 1, generator=g, dtype=torch.float64), torch.randn(1, n_in, generator=g, dtype=torch.float64)
    spike = (u / u.norm()) @ (v / v.norm())
    for factor, found in ((2.0, 1), (0.5, 0)):
        net = MLP([n_in, n_out], seed=1, dtype=torch.float64)
        net.layers[0].weight.data.add_(factor * theta_c * spike)
        row = sa.layer_spectra(net).iloc[0]
        assert row.spikes == found and row.theta_c == pytest.approx(theta_c)
        if found:
            t = 2.0 * law.ratio ** 0.25                               # θ/√s
            where = law.scale * (1 + t * t) * (law.ratio + t * t) / (t * t)
            assert row.spike_thetas[0] == pytest.approx(2 * theta_c, rel=0.15)
            assert row.outlier_positions[0] == pytest.approx(where, rel=0.15)


def test_spike_strength_inverts_the_spike_location_and_is_theta_c_at_the_edge():
    for lam, s in ((1.0, 1.0), (0.25, 3.0)):
        t = np.array([1.5, 2.0, 5.0]) * lam ** 0.25
        e = s * (1 + t ** 2) * (lam + t ** 2) / t ** 2
        assert np.allclose(sa.spike_strength(e, lam, s), np.sqrt(s) * t, rtol=1e-12)
        edge = s * (1 + math.sqrt(lam)) ** 2
        assert sa.spike_strength(edge, lam, s) == pytest.approx(sa.spike_threshold(lam, s), rel=1e-6)


def test_a_fitted_scale_recovers_the_initial_variance_despite_outliers():
    """σ_w = 1.7 (s = 2.89), 300 × 150, plus three planted spikes: the fitted s within 3 % of 2.89, where the plain
    mean of the eigenvalues is pulled > 10 % above it."""
    net = MLP([150, 300], sigma_w=1.7, seed=0, dtype=torch.float64)
    g = torch.Generator().manual_seed(2)
    for theta in (6.0, 8.0, 10.0):
        u, v = torch.randn(300, 1, generator=g, dtype=torch.float64), torch.randn(1, 150, generator=g, dtype=torch.float64)
        net.layers[0].weight.data.add_(theta * (u / u.norm()) @ (v / v.norm()))
    row = sa.layer_spectra(net, scale="fit").iloc[0]
    s_init = sa.layer_law(300, 150, 1.7).scale
    assert row.scale == pytest.approx(s_init, rel=0.03)
    eigs = sa.weight_spectra(net)[0].eigs
    assert eigs.mean() > 1.1 * s_init


def test_ntk_and_jacobian_at_initialisation_follow_their_laws():
    """Fan & Wang's network (normalised tanh, σ_w = 1, no bias), d = 160, n = 80 Gaussian inputs (seeded apart from
    the weights): the NTK's shape within the DKW band of 80 draws (0.18; measured 0.027) and λ_max/edge in
    [0.85, 1.2] (measured 0.94); the 10-output Jacobian JJᵀ over 8 inputs (80 eigenvalues) KS within the same band
    (measured 0.061)."""
    from rmtnet.spectra.meanfield import normalised_activation
    from rmtnet.spectra.network import mlp
    act = normalised_activation("tanh")
    net = mlp(2, widths=[160, 160, 1], activation=act, last_activation=False, q0=1.0)
    x = torch.randn(80, 160, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    out = sa.ntk_against_law(MLP.from_description(net, seed=0, dtype=torch.float64), net, x)
    assert out["ks_shape"] <= sa.dkw_bound(80) and 0.85 <= out["lambda_max_ratio"] <= 1.2, out
    jnet = mlp(2, widths=[160, 160, 10], activation=act, last_activation=False, q0=1.0)
    jac = sa.jacobian_against_law(MLP.from_description(jnet, seed=0, dtype=torch.float64), jnet, x[:8])
    assert jac["ks"] <= sa.dkw_bound(80), jac
