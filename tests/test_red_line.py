"""The learning-rate border of gradient descent (rmtnet.spectra.stability) and the red-line study
(rmtnet.studies.red_line): the stated loss convention is the one training obeys, the laws' scale is the torch
networks', and a ReLU network trained below and above the law's line converges and does not."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from rmtnet.nets import MLP
from rmtnet.nets.data import Dataset
from rmtnet.nets.probes import empirical_ntk
from rmtnet.nets.training import train
from rmtnet.spectra import fisher, stability
from rmtnet.spectra.network import mlp
from rmtnet.spectra.ntk import ntk_law
from rmtnet.studies import red_line as rl

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.mark.parametrize("loss", ["mse", "mean_squared"])
def test_the_line_a_user_computes_is_the_line_their_training_obeys(loss):
    # f(x) = Wx: Θ = XXᵀ ⊗ I_k exactly and for ever, so the linearised border is the border. N = 4 inputs in 6
    # dimensions (XXᵀ invertible: the loss can reach 0), k = 3 outputs.
    rng = np.random.default_rng(1)
    x, y = torch.from_numpy(rng.standard_normal((4, 6))), torch.from_numpy(rng.standard_normal((4, 3)))
    data = Dataset(x, y, x[:1], y[:1], n_classes=None, name="linear", shape=(6,))
    lam = float(np.linalg.eigvalsh((x @ x.T).numpy())[-1])
    eta = stability.learning_rate_border(lam, n_samples=4, n_outputs=3, loss=loss)
    final = {}
    for factor in (0.98, 1.02):
        torch.manual_seed(0)
        model = nn.Linear(6, 3, bias=False, dtype=torch.float64)
        table = train(model, data, epochs=600, batch_size=4, lr=factor * eta, momentum=0.0, loss=loss,
                      progress=False)
        final[factor] = table.train_loss.iloc[-1] / table.train_loss.iloc[0]
    # |1 − ηλ| = 0.96 below, 1.04 above: the top mode's residual shrinks or grows by that per step
    assert final[0.98] < 1e-3 and final[1.02] > 1e6


def test_learning_rate_border_conventions_and_the_one_sample_law():
    assert stability.learning_rate_border(4.0, 3, 2) == pytest.approx(2 * 3 * 2 / 4.0, rel=1e-15)
    assert stability.learning_rate_border(4.0, 3, 2, loss="mean_squared") == pytest.approx(3 * 2 / 4.0, rel=1e-15)
    net = rl.red_line_description("one_sample", "linear", "orthogonal", 1.0, 4, 16)      # Θ/n = 4·I exactly
    assert fisher.critical_learning_rate(net) == pytest.approx(0.5, rel=1e-12)
    assert fisher.critical_learning_rate(net, loss="mean_squared") == pytest.approx(0.25, rel=1e-12)
    with pytest.raises(ValueError, match="parameterization='standard' needs equal widths"):
        stability.ntk_learning_rate(mlp(2, widths=(20, 10, 1), activation="linear", q0=1.0), 5)


def _gram_moments(description, setting, width, n_data, seeds):
    """m₁, m₂ of the empirical NTK Gram divided by the width, per seed."""
    out = []
    for s in seeds:
        data = rl.red_line_task(setting, width, n_data, s)
        gram = empirical_ntk(MLP.from_description(description, seed=s, dtype=torch.float64), data.x_train).numpy()
        gram = gram / width
        out.append((np.trace(gram) / len(gram), np.trace(gram @ gram) / len(gram)))
    return np.array(out)


@pytest.mark.parametrize("setting, activation, weights, sigma_w, width, n_data", [
    ("data", "relu", "gaussian", 1.0, 256, 32),
    ("one_sample", "relu", "orthogonal", math.sqrt(2.0), 128, 1),
    ("one_sample", "tanh", "gaussian", 1.0, 128, 1),
])
def test_the_laws_are_the_torch_networks_ntk_divided_by_the_width(setting, activation, weights, sigma_w, width,
                                                                   n_data):
    # the scale behind both lines: Θ_SP/d has the Fan–Wang law (data) and the Hayase–Karakida law (one sample).
    # Monte Carlo over 4 networks: each moment within 4 standard errors plus an O(1/width) allowance (2/width
    # relative) for the finite-width bias.
    net = rl.red_line_description(setting, activation, weights, sigma_w, 3, width)
    if setting == "data":
        law = ntk_law(net, n_data)
        exact = np.array([law.mean(), law.moment(2)])
    else:
        exact = fisher.fisher_moments(net, K=2)
    m = _gram_moments(net, setting, width, n_data, range(4))
    se = m.std(axis=0, ddof=1) / 2
    assert np.all(np.abs(m.mean(axis=0) - exact) <= 4 * se + 2 / width * exact), (m.mean(axis=0), se, exact)


def test_a_relu_network_converges_below_the_laws_line_and_not_above_it():
    # Fan & Wang's setting, lazy (N = 16 inputs, width 512, depth 2): at 0.8 × η* the loss falls at every step; at
    # 1.25 × η* it rises at some step (the linearised dynamics diverge; the net then catapults); at 5 × η*, past the
    # catapult band, it exceeds 10³ × its start.
    net = rl.red_line_description("data", "relu", "gaussian", 1.0, 2, 512)
    eta = stability.ntk_learning_rate(net, 16)
    for seed in (0, 1):
        data = rl.red_line_task("data", 512, 16, seed)
        outcome = {f: rl.gradient_descent_outcome(net, data, f * eta, 40, seed=seed)["outcome"] for f in (0.8, 1.25, 5)}
        assert outcome == {0.8: "converged", 1.25: outcome[1.25], 5: "diverged"} and outcome[1.25] != "converged"


def test_red_line_run_brackets_its_borders_in_its_grid():
    row = rl.red_line_run("one_sample", "tanh", "orthogonal", 1.0, 2, 24, steps=25, n_grid=5, bisections=2, seed=0)
    factors = np.geomspace(0.1, 10.0, 5)
    first = {name: next(i for i, o in enumerate(row["grid"]) if test(o))
             for name, test in (("stability", lambda o: o != "C"), ("divergence", lambda o: o == "D"))}
    for name, i in first.items():
        ratio = row[f"{name}_border"] / row["reference"]
        assert factors[i - 1] < ratio < factors[i]
    assert set(row["grid"]) <= set("CSTD") and row["grid"][0] == "C"
    assert row["stability_censored"] == row["divergence_censored"] == "no"
    assert row["eta_law"] == pytest.approx(fisher.critical_learning_rate(
        rl.red_line_description("one_sample", "tanh", "orthogonal", 1.0, 2, 24)), rel=1e-12)


def test_a_border_the_grid_does_not_bracket_is_censored_not_guessed():
    # a linear network at a tiny reference: nothing in 0.1× … 10× of it is unstable, so both borders lie above
    net = rl.red_line_description("data", "linear", "gaussian", 1.0, 2, 16)
    data = rl.red_line_task("data", 16, 4, 0)
    factors = np.geomspace(0.1, 10.0, 3)
    outcomes = [rl.gradient_descent_outcome(net, data, f * 1e-4, 10)["outcome"] for f in factors]
    assert rl._grid_border(factors, outcomes, lambda o: o != "converged") == (None, "above")
    assert rl._grid_border(factors, ["diverged"] * 3, lambda o: o == "diverged") == (None, "below")
    with pytest.raises(ValueError, match="max_depth"):
        rl.red_line_run("data", "relu", "gaussian", 1.0, 3, 16, n_data=4, max_depth=2)
