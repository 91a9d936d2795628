"""mlp's default describes a network people train (the activation's critical σ_w), a law that collapses to δ₀ because
of the input or the phase says why (one UserWarning per cause), a law that is a point mass by construction does not,
and a torch model handed to a law is refused with the way back to its description."""
import math
import warnings

import numpy as np
import pytest

from rmtnet.spectra import fisher, meanfield, network
from rmtnet.spectra.fisher import critical_learning_rate, fisher_law
from rmtnet.spectra.jacobian import jacobian_law, jacobian_moments


def _quiet(f, *args, **kw):
    """f(*args, **kw) with every UserWarning an error: the call must not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        return f(*args, **kw)


# --- the default σ_w ----------------------------------------------------------------------------------------------

def test_default_relu_is_critical_and_its_jacobian_is_not_degenerate():
    """mlp(3, 100): ReLU at σ_w = √2 exactly; E[JJᵀ] = χ^L = (σ_w²/2)³ = 1 (the old default gave δ₀, mean 0)."""
    net = network.mlp(3, 100)
    assert net.sigma_w == math.sqrt(2.0) and net.q == (1.0, 1.0, 1.0)
    law = _quiet(jacobian_law, net)
    assert law.mean() == pytest.approx(1.0, rel=1e-12)
    assert _quiet(fisher_law, net).mean() > 0


@pytest.mark.parametrize("act, sigma_b", [("linear", 0.0), ("relu", 0.0), ("relu", 0.3), ("tanh", 0.0), ("erf", 0.0),
                                          ("hard_tanh", 0.0), ("tanh", 0.3), ("erf", 0.3)])
def test_default_sigma_w_is_on_the_critical_line(act, sigma_b):
    """χ = σ_w² E[φ′(√q* ξ)²] = 1 at the default σ_w (q* the fixed point; 0 for the sigmoids at σ_b = 0, whose
    default input is then q₀ = 1), and no law of the default warns (the exact moments: the smooth laws' densities
    take minutes)."""
    net = network.mlp(2, 10, activation=act, sigma_b=sigma_b)
    q_star = meanfield.q_star(act, net.sigma_w, sigma_b)
    assert meanfield.chi(act, net.sigma_w, sigma_b, q=q_star) == pytest.approx(1.0, abs=1e-7)
    if sigma_b == 0 and act in ("tanh", "erf", "hard_tanh"):
        assert net.sigma_w == 1.0 and net.q0 == 1.0                      # 1/φ′(0), fed q₀ = 1 instead of q* = 0
    assert _quiet(jacobian_moments, net, K=1)[0] > 0 and _quiet(fisher.fisher_moments, net, K=1)[0] > 0


def test_gelu_without_a_critical_sigma_w_asks_for_one():
    with pytest.raises(ValueError, match="no critical sigma_w.*give sigma_w"):
        network.mlp(2, 10, activation="gelu")
    assert network.mlp(2, 10, activation="gelu", sigma_w=1.0).sigma_w == 1.0


# --- one warning per cause ----------------------------------------------------------------------------------------

ORDERED_RELU = dict(activation="relu", sigma_w=1.0)                      # the old default: q* = 0, a zero input


def test_jacobian_law_warns_for_the_ordered_phase_zero_input():
    net = network.mlp(3, 100, **ORDERED_RELU)
    assert net.q0 == 0.0
    with pytest.warns(UserWarning, match=r"Jacobian law of net is δ₀ .*input is zero: q0 = 0.*relu at sigma_w=1.*"
                                         r"ordered phase"):
        law = jacobian_law(net)
    assert law.mean() == 0.0                                             # the value is unchanged
    with pytest.warns(UserWarning, match="Jacobian law of net is δ₀"):
        assert np.all(jacobian_moments(net, K=2) == 0.0)


def test_jacobian_law_warns_when_the_variances_underflow():
    """A numeric q₀ = 1 but σ_w = 1e-100: q₁ = 1e-200, q₂ = 1e-200·1e-200/2 = 0 in float64 — D₂ = δ₀."""
    net = network.mlp(3, 10, activation="relu", sigma_w=1e-100, q0=1.0)
    assert net.q[1] == 0.0 < net.q[0]
    with pytest.warns(UserWarning, match=r"Jacobian law of net is δ₀ .*q_2 underflows to 0"):
        jacobian_law(net)


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_fisher_law_warns_for_a_zero_input(act):
    """q₀ = 0 (the fixed point q* = 0 at σ_w = 1, σ_b = 0): every q̂_ℓ = 0 and Θ = 0. For tanh the Jacobian
    (D = φ′(0) = 1) is not degenerate and does not warn."""
    net = network.mlp(3, 10, activation=act, sigma_w=1.0)
    with pytest.warns(UserWarning, match=rf"Fisher/NTK law of net is δ₀ .*input is zero: q0 = 0.*{act}"):
        law = fisher_law(net)
    assert law.hull()[1] == 0.0
    with pytest.warns(UserWarning, match="Fisher/NTK law of net is δ₀"):
        assert np.all(fisher.fisher_moments(net, K=2) == 0.0)
    if act == "tanh":
        assert _quiet(jacobian_law, net).mean() == pytest.approx(1.0, rel=1e-12)


def test_fisher_law_warns_when_the_last_variance_underflows():
    net = network.mlp(3, 10, activation="relu", sigma_w=1e-100, q0=1.0)      # q̂₀ = 1 but D_3² = δ₀
    with pytest.warns(UserWarning, match=r"Fisher/NTK law of net is δ₀ .*q_3 underflows"):
        assert fisher_law(net).hull()[1] == 0.0


def test_critical_learning_rate_raises_without_warning():
    with pytest.raises(ValueError, match="δ₀"):
        _quiet(critical_learning_rate, network.mlp(3, 10, **ORDERED_RELU))


def test_point_masses_by_construction_do_not_warn():
    """Linear orthogonal: JJᵀ = I (δ₁) and Θ = L·q₀·I (δ₃) — point masses, but not collapsed ones."""
    net = network.mlp(3, 10, weights="orthogonal", activation="linear")
    assert _quiet(jacobian_law, net).atoms()[0].tolist() == [1.0]
    assert _quiet(fisher_law, net).atoms()[0].tolist() == [3.0]
    assert _quiet(fisher.fisher_law, network.mlp(3, 10, **ORDERED_RELU), q0=1.0).mean() > 0   # q0 given: no collapse


# --- the torch model is not a description -------------------------------------------------------------------------

def test_a_torch_model_is_refused_naming_both_classes_and_the_way_back():
    torch = pytest.importorskip("torch")
    from rmtnet.nets import MLP
    from rmtnet.spectra import ck_law
    from rmtnet.spectra.sampling import montecarlo, operators
    desc = network.mlp(2, 10, activation="tanh", sigma_w=1.2, q0=1.0)
    model = MLP.from_description(desc, seed=0, dtype=torch.float64)
    calls = [lambda n: jacobian_law(n), lambda n: fisher_law(n), lambda n: ck_law(n, 5),
             lambda n: montecarlo.sample_jacobian_eigs(n, seed=0), lambda n: operators.mlp_network(n, seed=0)]
    for call in calls:
        with pytest.raises(ValueError, match=r"rmtnet\.nets\.MLP .*rmtnet\.spectra\.network\.MLP.*model\.description"):
            call(model)
    assert model.description == desc
    assert MLP.from_description(desc, width=5).description.widths == (5, 5, 5)
    built = MLP([10, 10, 10], activation="tanh", sigma_w=1.2, last_activation=False)
    assert built.description == network.mlp(2, 10, activation="tanh", sigma_w=1.2, last_activation=False, q0=1.0)
    assert jacobian_law(built.description).mean() > 0
