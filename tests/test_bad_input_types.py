"""Bad input, round two, the "types" class: NumPy and torch scalars and 0-d arrays stand for the number they hold
wherever a number is expected (a 1-element 1-d array stays a shape mistake), and flags, choices and seeds take only
what they document (a truthy 1 or "no" is not a bool; a negative seed is not a seed).

One regression test per case of the issue, then a parametrised check that each numeric argument found by hand-written
checks gives the same result for 4, np.int64(4), np.array(4) and torch.tensor(4) (and likewise for reals).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from rmtnet._validation import boolean, integer_at_least, moment_order, one_of, real_scalar, scalar, seed_value
from rmtnet.nets import data, layers, metrics, models
from rmtnet.spectra import (FussCatalan, MarchenkoPastur, Semicircle, free_add_power, gaussian_pushforward, kernels,
                            meanfield, network, predict, symbolic)
from rmtnet.spectra.sampling import lanczos, montecarlo

pytestmark = pytest.mark.usefixtures("torch_one_thread")

X3 = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0], [0.0, 0.3, 1.0]])
NET = network.mlp(2, 3, activation="relu", sigma_w=1.4)


# --- NumPy and torch scalars where a number is expected ------------------------------------------------------------
def test_to_patches_takes_a_numpy_int64_patch():
    """data.to_patches(x, np.int64(4)) raised 'patch must be an integer >= 1, got np.int64(4)'."""
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    assert torch.equal(data.to_patches(x, np.int64(4)), data.to_patches(x, 4))
    assert torch.equal(data.from_patches(data.to_patches(x, np.int64(4)), torch.tensor(4), (8, 8)), x)


def test_marchenko_pastur_takes_a_0d_array_ratio():
    """MarchenkoPastur(np.array(0.5)) was refused though it is plainly 0.5."""
    mu = MarchenkoPastur(np.array(0.5))
    assert mu.ratio == 0.5 and type(mu.ratio) is float
    assert mu.moment(3) == MarchenkoPastur(0.5).moment(3)


def test_marchenko_pastur_takes_a_0d_tensor_ratio():
    """MarchenkoPastur(torch.tensor(0.5)) was refused; a tensor that requires grad holds a number all the same."""
    assert MarchenkoPastur(torch.tensor(0.5)).var() == MarchenkoPastur(0.5).var()
    assert MarchenkoPastur(torch.tensor(0.5, requires_grad=True)).var() == MarchenkoPastur(0.5).var()


def test_a_one_element_1d_array_is_still_a_shape_mistake():
    with pytest.raises(ValueError, match=r"ratio must be a finite real number, got array\(\[0.5\]\)"):
        MarchenkoPastur(np.array([0.5]))
    with pytest.raises(ValueError, match="patch must be an integer >= 1"):
        data.to_patches(torch.zeros(1, 1, 4, 4), torch.tensor([2]))


@pytest.mark.parametrize("value", [np.array(True), torch.tensor(True), np.array(0.5 + 1j), torch.tensor(0.5j),
                                   np.array("0.5"), np.array(np.nan), torch.tensor(float("inf"))])
def test_bool_complex_text_and_nonfinite_0d_values_are_not_reals(value):
    with pytest.raises(ValueError, match=r"ratio must be a finite real number"):
        MarchenkoPastur(value)


def test_integers_take_integer_scalars_and_keep_their_rule_for_floats():
    for four in (np.int64(4), np.uint8(4), np.array(4), torch.tensor(4), torch.tensor(4, dtype=torch.int16)):
        assert integer_at_least("n", four) == 4 and type(integer_at_least("n", four)) is int
        assert moment_order(four) == 4
    with pytest.raises(ValueError, match=r"n must be an integer >= 1, got np.float64\(4.0\)"):
        integer_at_least("n", np.float64(4.0))                  # integer_at_least refuses integral floats…
    assert moment_order(np.float64(4.0)) == moment_order(torch.tensor(4.0)) == 4   # …moment_order takes them
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        integer_at_least("n", torch.tensor(True))
    assert real_scalar("x", np.float32(0.25)) == 0.25 and scalar(np.int64(3)) == 3


def test_choices_and_flags_take_numpy_scalars_of_the_right_kind():
    assert one_of("method", np.str_("closed_form"), ("closed_form", "quadrature")) == "closed_form"
    assert one_of("n", np.int64(2), (1, 2)) == 2
    with pytest.raises(ValueError, match=r"n must be one of \(1, 2\), got True"):
        one_of("n", True, (1, 2))                              # True == 1 in Python; not a choice of 1
    with pytest.raises(ValueError, match="method must be one of"):
        kernels.nngp_kernel(NET, X3, method=np.array(["closed_form", "quadrature"]))
    assert boolean("flag", np.bool_(True)) is True and boolean("flag", torch.tensor(False)) is False
    assert boolean("flag", np.array(True)) is True


# --- Wrong booleans and choices --------------------------------------------------------------------------------------
def test_last_activation_1_is_refused():
    with pytest.raises(TypeError, match="last_activation must be True or False, got 1"):
        models.MLP([3, 4, 2], last_activation=1)
    with pytest.raises(TypeError, match="last_activation must be True or False, got 1"):
        network.mlp(2, 3, last_activation=1)


def test_return_all_1_is_refused():
    for call in (lambda: kernels.nngp_kernel(NET, X3, return_all=1), lambda: kernels.ntk_kernel(NET, X3, return_all=1),
                 lambda: montecarlo.sample_nngp_kernel(NET, X3, return_all=1, progress=False)):
        with pytest.raises(TypeError, match="return_all must be True or False, got 1"):
            call()


def test_full_cov_yes_is_refused():
    with pytest.raises(TypeError, match="full_cov must be True or False, got 'yes'"):
        predict.nngp_regression(NET, X3, np.ones((3, 1)), X3, full_cov="yes")
    with pytest.raises(TypeError, match="full_cov must be True or False, got 'yes'"):
        kernels.nngp_blocks(NET, X3, X3, full_cov="yes")


def test_bias_no_is_refused():
    with pytest.raises(TypeError, match="bias must be True or False, got 'no'"):
        layers.MaskedLinear(3, 4, bias="no")
    with pytest.raises(TypeError, match="bias must be True or False, got 'no'"):
        models.MLP([3, 4, 2], bias="no")


def test_norm_yes_is_refused():
    with pytest.raises(TypeError, match="norm must be True or False, got 'yes'"):
        models.MLPMixer(4, 3, 8, 1, 2, norm="yes")


def test_progress_no_is_refused():
    d = data.spirals(20, 10, seed=0)
    with pytest.raises(TypeError, match="progress must be True or False, got 'no'"):
        from rmtnet.nets.training import train
        train(torch.nn.Linear(2, 2), d, epochs=1, progress="no")
    with pytest.raises(TypeError, match="progress must be True or False, got 'no'"):
        lanczos.slq(np.eye(3), n_steps=2, progress="no")
    with pytest.raises(TypeError, match="progress must be True or False, got 'no'"):
        from rmtnet.experiments import sweep
        sweep(lambda n, seed: {"y": n}, {"n": [1]}, store=None, progress="no")


def test_negative_seed_for_masked_linear_is_refused():
    """MaskedLinear(…, seed=-1) was accepted (torch wraps it to 2**64 - 1)."""
    with pytest.raises(ValueError, match=r"seed must be None, an integer in \[0, 18446744073709551615\], got -1"):
        layers.MaskedLinear(3, 4, seed=-1)


@pytest.mark.parametrize("call", [
    lambda: models.MLP([3, 4, 2], seed=-1),
    lambda: layers.MaskedLinear(3, 4, seed=2 ** 64),
    lambda: layers.MaskedLinear(3, 4, seed=1.5),
    lambda: layers.MaskedLinear(3, 4, seed=True),
    lambda: data.Batches(torch.zeros(4, 1), torch.zeros(4), 2, seed=-3),
    lambda: montecarlo.sample_nngp_kernel(NET, X3, seed=-1, progress=False),
    lambda: MarchenkoPastur(0.5).rvs(3, rng=-1),
], ids=["MLP", "MaskedLinear-2**64", "MaskedLinear-1.5", "MaskedLinear-True", "Batches", "sample_nngp_kernel",
        "rvs"])
def test_every_seed_argument_refuses_a_negative_or_non_integer_seed(call):
    with pytest.raises(ValueError, match="seed|rng"):
        call()


def test_seeds_take_integer_scalars_and_generators():
    w = layers.MaskedLinear(3, 4, density=0.5, seed=7).weight
    for seven in (np.int64(7), np.array(7), torch.tensor(7)):
        assert torch.equal(layers.MaskedLinear(3, 4, density=0.5, seed=seven).weight, w)
    g = np.random.default_rng(0)
    assert seed_value("seed", g) is g and seed_value("seed", None) is None


def test_numpy_generators_take_0d_integer_seeds():
    """B.rng (wishart_eigs, slq, the operators' seeds) refused np.array(0) and torch.tensor(0)."""
    from rmtnet import backend as B
    from rmtnet.spectra.sampling.random_matrices import wishart_eigs
    expected = wishart_eigs(4, 3, seed=0)
    for zero in (np.array(0), torch.tensor(0), np.int64(0)):
        assert np.array_equal(wishart_eigs(4, 3, seed=zero), expected)
    with pytest.raises(ValueError, match="seed must be None, a non-negative integer"):
        B.rng(np.array(-1))


def test_sequences_given_a_0d_array_are_refused_naming_them():
    """MLP(np.array(0.5)), free_cumulants(np.array(1.0)) …: 'iteration over a 0-d array', naming nothing."""
    with pytest.raises(ValueError, match="widths must be a sequence"):
        models.MLP(np.array(0.5))
    with pytest.raises(ValueError, match="moments must be a sequence"):
        symbolic.free_cumulants(torch.tensor(1.0))


def test_figure_size_takes_a_numpy_bool():
    from rmtnet.figures import size_name
    assert size_name(np.True_) == "full" and size_name(np.array(False)) == "quick"


def test_slq_of_a_non_symmetric_matrix_is_refused():
    A = np.array([[2.0, 1.0], [0.0, 3.0]])
    with pytest.raises(ValueError, match=r"operator must be a symmetric matrix .* max \|A - A\^T\| = 1"):
        lanczos.slq(A, n_steps=2, progress=False)
    with pytest.raises(ValueError, match="operator must be a symmetric matrix"):
        lanczos.slq(sp.csr_matrix(A), n_steps=2, progress=False)
    with pytest.raises(ValueError, match="operator must be a symmetric matrix"):
        lanczos.top_eigenvalues(np.triu(np.ones((4, 4))), k=1)


def test_slq_takes_a_matrix_symmetric_up_to_round_off():
    W = np.random.default_rng(0).standard_normal((30, 20))
    A = W @ np.diag(np.linspace(0.1, 3.0, 20)) @ W.T                  # symmetric up to round-off only
    assert lanczos.slq(A, n_steps=5, n_probes=2, seed=0, progress=False).moment(1) == pytest.approx(
        np.trace(A) / 30, rel=0.5)
    assert lanczos.slq(lambda X: A @ X, dim=30, n_steps=3, n_probes=1, seed=0, progress=False).mean() > 0


# every boolean flag of the public entry points refuses a truthy non-bool, naming itself
FLAGS = [
    ("pad", lambda v: data.to_patches(torch.zeros(1, 1, 4, 4), 2, pad=v)),
    ("per_feature", lambda v: data.standardise(np.ones((3, 2)), per_feature=v)),
    ("shuffle", lambda v: data.Batches(torch.zeros(4, 1), torch.zeros(4), 2, shuffle=v)),
    ("drop_last", lambda v: data.Batches(torch.zeros(4, 1), torch.zeros(4), 2, drop_last=v)),
    ("bias", lambda v: layers.TokenMixing(3, 3, bias=v)),
    ("self_loops", lambda v: models.EMN(3, (1, 1), sequential=True, self_loops=v)),
    ("sequential", lambda v: models.EMN(3, (1, 1), sequential=v)),
    ("return_floor", lambda v: montecarlo.sample_jacobian_eigs(NET, return_floor=v, progress=False)),
    ("return_samples", lambda v: montecarlo.sample_nngp_kernel(NET, X3, return_samples=v, progress=False)),
    ("steps", lambda v: predict.gradient_descent_mse(np.eye(2), np.ones((2, 1)), steps=v)),
    ("diag_reg_absolute_scale", lambda v: predict.gradient_descent_mse(np.eye(2), np.ones((2, 1)),
                                                                        diag_reg_absolute_scale=v)),
    ("log", lambda v: lanczos.slq(np.eye(3), n_steps=2, progress=False).smoothed(log=v)),
    ("block", lambda v: lanczos.as_block_operator(np.eye(3), block=v)),
    ("batched", lambda v: __import__("rmtnet.nets.probes", fromlist=["x"]).batch_inputs(
        torch.nn.Linear(3, 2), torch.zeros(2, 3), batched=v)),
    ("conditional", lambda v: Semicircle().expect(lambda x: x, lb=0.0, conditional=v)),
    ("normalize", lambda v: __import__("rmtnet.spectra.measures", fromlist=["GridDensity"]).GridDensity(
        [0.0, 1.0, 2.0], [0.5, 0.5, 0.5], normalize=v)),
    ("homogeneous", lambda v: __import__("rmtnet.spectra.activations", fromlist=["x"]).define_activation(
        "bad_flag_probe", np.tanh, lambda h: 1 - np.tanh(h) ** 2, homogeneous=v)),
]


@pytest.mark.parametrize("flag, call", FLAGS, ids=[f for f, _ in FLAGS])
@pytest.mark.parametrize("value", [1, "yes", "no", None, np.array([True])], ids=["1", "yes", "no", "None", "array"])
def test_every_flag_refuses_a_truthy_non_bool(flag, call, value):
    with pytest.raises(TypeError, match=rf"{flag} must be True or False"):
        call(value)


# --- every numeric argument that had its own check: the scalar types give the Python number's result ---------------
def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, torch.nn.Module):
        return all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    if isinstance(a, data.Dataset):
        return torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


IMAGES = torch.arange(2 * 8 * 8, dtype=torch.float32).reshape(1, 2, 8, 8)
PROBS = np.array([[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]])
INTEGER_ARGUMENTS = [
    ("to_patches.patch", 4, lambda v: data.to_patches(IMAGES, v)),
    ("spirals.n_train", 20, lambda v: data.spirals(v, 10, seed=0)),
    ("teacher_student.width", 4, lambda v: data.teacher_student(5, 3, 2, v, seed=0)),
    ("Batches.batch_size", 2, lambda v: torch.cat([y for _, y in data.Batches(torch.zeros(5, 1), torch.arange(5), v,
                                                                               seed=1)])),
    ("Batches.seed", 3, lambda v: torch.cat([y for _, y in data.Batches(torch.zeros(5, 1), torch.arange(5), 2,
                                                                         seed=v)])),
    ("MaskedLinear.seed", 5, lambda v: layers.MaskedLinear(3, 4, density=0.5, seed=v)),
    ("MLP.seed", 5, lambda v: models.MLP([3, 4, 2], seed=v)),
    ("ece.n_bins", 4, lambda v: metrics.ece(PROBS, [0, 0, 1], n_bins=v)),
    ("mlp.depth", 2, lambda v: network.mlp(v, 3).widths),
    ("scaled_widths.width", 6, lambda v: network.mlp(2, 3).scaled_widths(v)),
    ("FussCatalan.s", 2, lambda v: FussCatalan(v).moment(2)),
    ("moment.k", 3, lambda v: MarchenkoPastur(0.5).moment(v)),
    ("d2_moments.k", 2, lambda v: meanfield.d2_moments("tanh", 1.0, v)),
    ("narayana_moments.K", 3, lambda v: symbolic.narayana_moments(0.5, v)),
    ("top_eigenvalues.k", 2, lambda v: lanczos.top_eigenvalues(np.diag(np.arange(1.0, 6.0)), k=v)),
    ("sample_nngp_kernel.n_samples", 2, lambda v: montecarlo.sample_nngp_kernel(NET, X3, n_samples=v, seed=0,
                                                                                 progress=False)),
    ("gaussian_pushforward.n_panels", 64, lambda v: gaussian_pushforward(np.tanh, 1.0, n_panels=v).var()),
]
REAL_ARGUMENTS = [
    ("MarchenkoPastur.ratio", 0.5, lambda v: MarchenkoPastur(v).moment(3)),
    ("Semicircle.var", 2.0, lambda v: Semicircle(v, loc=1.0).moment(4)),
    ("free_add_power.t", 2.0, lambda v: free_add_power(Semicircle(), v).var()),
    ("gaussian_pushforward.q", 0.5, lambda v: gaussian_pushforward(np.tanh, v, n_panels=64).mean()),
    ("gaussian_pushforward.width", 6.0, lambda v: gaussian_pushforward(np.tanh, 1.0, n_panels=64, width=v).var()),
    ("mlp.sigma_w", 1.5, lambda v: kernels.nngp_kernel(network.mlp(2, 3, sigma_w=v), X3)),
    ("d2_moments.q", 0.5, lambda v: meanfield.d2_moments("tanh", v, 2)),
    ("spirals.noise", 0.25, lambda v: data.spirals(20, 10, noise=v, seed=0)),
    ("nngp_regression.noise", 0.5, lambda v: predict.nngp_regression(NET, X3, np.ones((3, 1)), X3, noise=v)[0]),
]


def _forms(value):
    if isinstance(value, int):
        return [np.int64(value), np.int32(value), np.array(value), torch.tensor(value)]
    return [np.float64(value), np.float32(value), np.array(value), torch.tensor(value, dtype=torch.float64)]


@pytest.mark.parametrize("name, value, call", INTEGER_ARGUMENTS + REAL_ARGUMENTS,
                         ids=[n for n, _, _ in INTEGER_ARGUMENTS + REAL_ARGUMENTS])
def test_numpy_and_torch_scalars_give_the_python_numbers_result(name, value, call):
    expected = call(value)
    for form in _forms(value):
        assert _same(call(form), expected), f"{name}={form!r}"
