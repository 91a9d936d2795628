"""Bad input, round two — the "memory" classes: sizes beyond the machine (refused at once, before any allocation,
with the bytes needed and the alternative), user callables returning the wrong thing (a message naming the
argument and what came back), and discrete gradient descent above its critical learning rate in the NTK predictor
(ValueError stating 2N/λ_max instead of NaN).

The sizes are refused by comparing a lower bound of the bytes an operation holds with the memory available
(:func:`rmtnet._system.check_allocation`); each such call runs in a worker process under a 5 s limit per call (the
hang guard: a regression that starts allocating or sampling fails the test instead of hanging the suite). The
worker imports rmtnet once, before the clock starts, and is restarted after a case that times out.
"""
from __future__ import annotations

import json
import math
import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from rmtnet._system import CHECK_ABOVE, MemoryLimitError, available_memory, check_allocation, human_bytes
from rmtnet.nets.data import Dataset
from rmtnet.nets.training import CallableResultError, DivergenceError, train
from rmtnet.spectra import kernels, predict
from rmtnet.spectra.network import mlp

pytestmark = pytest.mark.usefixtures("torch_one_thread")

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 5.0

# The worker: imports once, then runs the named case for each line on stdin and answers one JSON line.
WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from rmtnet.nets import layers as L, models as M
    from rmtnet.spectra import network
    from rmtnet.spectra.sampling import lanczos, montecarlo as mc, operators as op, random_matrices as rm
    relu = network.mlp(3, 100, activation="relu", sigma_w=2 ** 0.5)
    fan_wang = network.mlp(2, 100, activation="relu", sigma_w=1.0)
    CASES = {
        "sparse_masked_linear": lambda: L.SparseMaskedLinear(10 ** 7, 10 ** 7, density=0.5),
        "masked_linear": lambda: L.MaskedLinear(10 ** 6, 10 ** 6, density=0.5),
        "mlp": lambda: M.MLP([10, 10 ** 9, 10]),
        "token_mixing": lambda: L.TokenMixing(10 ** 7, 10 ** 7),
        "swmlp_dense": lambda: M.SWMLP(1000, 3, 1000, 1, 10, storage="dense"),
        "wishart_eigs": lambda: rm.wishart_eigs(10 ** 6, 10),
        "ginibre_product_eigs": lambda: rm.ginibre_product_eigs(10 ** 6, 2),
        "free_product_eigs": lambda: rm.free_product_eigs([np.ones(10 ** 6)]),
        "sample_jacobian_eigs": lambda: mc.sample_jacobian_eigs(relu, width=10 ** 6),
        "sample_fisher_eigs": lambda: mc.sample_fisher_eigs(relu, width=10 ** 6),
        "sample_ck_eigs": lambda: mc.sample_ck_eigs(relu, 10 ** 9),
        "sample_ntk": lambda: mc.sample_ntk(fan_wang, 10 ** 6),
        "sample_nngp_kernel": lambda: mc.sample_nngp_kernel(relu, np.ones((2, 10)), width=10 ** 6),
        "propagate": lambda: next(mc.propagate(relu, width=10 ** 6)),
        "mlp_network": lambda: op.mlp_network(relu, width=10 ** 6),
        "sparse_network": lambda: op.sparse_network(relu, 10 ** 4, 10 ** 4, density=0.5),
        "slq": lambda: lanczos.slq(lambda X: X, dim=10 ** 9, n_steps=80),
        "to_dense": lambda: op.TokenMixing(np.eye(2), 10 ** 6).to_dense(),
        "rvs": lambda: __import__("rmtnet.spectra", fromlist=["x"]).MarchenkoPastur(0.5).rvs(10 ** 13),
    }
    print("ready", flush=True)
    for line in sys.stdin:
        try:
            CASES[line.strip()]()
            out = {"type": None, "message": ""}
        except BaseException as exc:
            out = {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
        print(json.dumps(out), flush=True)
""")


class Worker:
    """One worker process; :meth:`run` answers within ``LIMIT_S`` or kills it (and a later call starts another)."""

    def __init__(self):
        self.proc = None

    def _start(self):
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=ROOT)
        assert self.proc.stdout.readline().strip() == "ready"     # the imports, before the clock starts

    def run(self, case):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(case + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], LIMIT_S)
        if not ready:
            self.close()
            pytest.fail(f"{case} did not answer within {LIMIT_S} s (it should refuse at once)")
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            pytest.fail(f"{case}: the worker died (killed for memory?)")
        return json.loads(line)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def refused(worker, case, name, *alternative):
    """The case raised MemoryLimitError (a MemoryError and a ValueError) within the limit, naming the size argument
    ``name`` as a word, the bytes needed and available, and the ``alternative`` words."""
    out = worker.run(case)
    assert out["type"] == "MemoryLimitError", out
    assert {"MemoryError", "ValueError"} <= set(out["mro"])
    message = out["message"]
    assert message.startswith(f"{name} is too large for this machine"), message
    assert " would need " in message and " available; " in message, message
    for word in alternative:
        assert word in message, message
    return message


# ------------------------------------------------------------------------------------------------------------------
# The helper itself

def test_check_allocation_never_refuses_what_fits():
    check_allocation("n", CHECK_ABOVE, what="x", alternative="y")             # below the threshold: unchecked
    check_allocation("n", 10 ** 12, what="x", alternative="y", available=10 ** 12)  # exactly what is free
    with pytest.raises(MemoryLimitError, match=r"^n is too large .* would need 932 GiB, 931 GiB available; y$"):
        check_allocation("n", 10 ** 12 + 2 ** 30, what="x", alternative="y", available=10 ** 12)
    assert available_memory() is None or available_memory() > 0


def test_human_bytes():
    assert [human_bytes(b) for b in (512, 1.5 * 2 ** 20, 23 * 2 ** 30, 8e12)] == ["512 B", "1.5 MiB", "23 GiB",
                                                                                 "7.3 TiB"]
    assert human_bytes(10 ** 400) == "more than 10³⁰⁸ B"


# ------------------------------------------------------------------------------------------------------------------
# Sizes beyond the machine: refused within 5 s, naming the size argument, the bytes and the alternative

def test_sparse_masked_linear_10_7_squared(worker):
    refused(worker, "sparse_masked_linear", "in_features × out_features × density", "PiB", "smaller density",
            "sparse_network")


def test_masked_linear_dense_refused(worker):
    refused(worker, "masked_linear", "in_features × out_features", "TiB", "SparseMaskedLinear")


@pytest.mark.skipif((available_memory() or 0) > 2 ** 37, reason="this machine holds MLP([10, 10**9, 10])")
def test_mlp_10_9_wide(worker):
    refused(worker, "mlp", "widths[1]", "smaller widths", "mlp_network")


def test_token_mixing(worker):
    refused(worker, "token_mixing", "tokens_in × tokens_out", "fewer tokens")


def test_swmlp_dense_storage(worker):
    refused(worker, "swmlp_dense", "in_features × out_features", "SparseMaskedLinear")


def test_wishart_eigs_10_6(worker):
    refused(worker, "wishart_eigs", "n", "XXᵀ (1000000×1000000)", "MarchenkoPastur(n/m)", "slq")


def test_ginibre_product_eigs(worker):
    refused(worker, "ginibre_product_eigs", "n", "FussCatalan(s)")


def test_free_product_eigs(worker):
    refused(worker, "free_product_eigs", "diagonals", "shorter diagonals", "free_mult")


def test_sample_jacobian_eigs_width_10_6(worker):
    refused(worker, "sample_jacobian_eigs", "width", "smaller width", "slq")


def test_sample_fisher_eigs(worker):
    refused(worker, "sample_fisher_eigs", "width")


def test_sample_ck_eigs_n_data(worker):
    refused(worker, "sample_ck_eigs", "n_data")


def test_sample_ntk_n_data(worker):
    refused(worker, "sample_ntk", "n_data")


def test_sample_nngp_kernel(worker):
    refused(worker, "sample_nngp_kernel", "width")


def test_propagate(worker):
    refused(worker, "propagate", "width")


def test_mlp_network_dense_weights(worker):
    refused(worker, "mlp_network", "width", "matrix-free")


def test_sparse_network(worker):
    refused(worker, "sparse_network", "tokens × channels × density")


def test_slq_full_reorthogonalisation(worker):
    refused(worker, "slq", "n_steps", "reorth='none'")


def test_operator_to_dense(worker):
    refused(worker, "to_dense", "this 2000000×2000000 factor", "matrix-free")


def test_measure_rvs_10_13(worker):
    refused(worker, "rvs", "size", "chunks")


def test_sizes_that_fit_still_build():
    from rmtnet.nets import layers, models
    assert layers.SparseMaskedLinear(2 ** 12, 2 ** 12, density=0.01, seed=0).connections > 0
    assert models.MLP([4, 300, 2], seed=0)(torch.ones(1, 4)).shape == (1, 2)


# ------------------------------------------------------------------------------------------------------------------
# User callables returning the wrong thing

@pytest.fixture(scope="module")
def tiny():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 3, generator=g), torch.randint(0, 2, (32,), generator=g)
    return Dataset(x[:24], y[:24], x[24:], y[24:], n_classes=2, name="random", shape=(3,))


def _train(data, **kw):
    return train(torch.nn.Linear(3, 2), data, epochs=1, batch_size=8, progress=False, **kw)


def _ce(o, y):
    return torch.nn.functional.cross_entropy(o, y)


def test_loss_returning_a_python_float(tiny):
    with pytest.raises(CallableResultError, match=r"^loss= callable .* torch tensor .*got float 0\.\d+"):
        _train(tiny, loss=lambda o, y: float(_ce(o, y)))


def test_loss_returning_a_vector(tiny):
    with pytest.raises(CallableResultError, match=r"^loss= callable .* one number.*shape \(24,\)"):
        _train(tiny, loss=lambda o, y: torch.nn.functional.cross_entropy(o, y, reduction="none"))


def test_loss_returning_nan_at_the_first_evaluation(tiny):
    with pytest.raises(DivergenceError, match=r"^the loss callable .* \(loss=\) returned nan at the evaluation after "
                                              r"epoch 0, step 0"):
        _train(tiny, loss=lambda o, y: _ce(o, y) * float("nan"))


def test_loss_returning_nan_at_step_3(tiny):
    calls = []

    def loss(o, y):                       # finite at the epoch-0 evaluation (train and test), NaN at step 3
        calls.append(o.requires_grad and torch.is_grad_enabled() and o.shape[0] == 8)
        return _ce(o, y) * (float("nan") if sum(calls) == 3 and calls[-1] else 1.0)
    with pytest.raises(DivergenceError, match=r"^the loss callable .*<locals>\.loss \(loss=\) returned nan at "
                                              r"epoch 1, step 3 "):
        _train(tiny, loss=loss, eval_every=1)


def test_loss_returning_a_detached_tensor(tiny):
    with pytest.raises(CallableResultError, match=r"^loss= callable .* without a gradient"):
        _train(tiny, loss=lambda o, y: _ce(o, y).detach())


def test_schedule_returning_none(tiny):
    with pytest.raises(CallableResultError, match=r"^schedule= callable .* learning-rate scheduler.*got NoneType None"):
        _train(tiny, schedule=lambda opt, total: None)


def test_schedule_returning_a_string(tiny):
    with pytest.raises(CallableResultError, match=r"^schedule= callable .*got str 'cosine'"):
        _train(tiny, schedule=lambda opt, total: "cosine")


def test_schedule_returning_the_optimizer(tiny):
    """The optimizer has step() and state_dict() too: it was accepted and stepped twice per batch."""
    with pytest.raises(CallableResultError, match=r"^schedule= callable .*got SGD"):
        _train(tiny, schedule=lambda opt, total: opt)


def test_schedule_giving_a_nan_learning_rate_names_schedule(tiny):
    """Before: a DivergenceError about the training loss that did not say the schedule made the rate NaN."""
    nan_rate = lambda opt, total: torch.optim.lr_scheduler.LambdaLR(opt, lambda k: float("nan"))   # noqa: E731
    with pytest.raises(ValueError, match=r"^schedule=.* gave the learning rate nan at epoch 1, step 1"):
        _train(tiny, schedule=nan_rate)


def test_probe_returning_a_string(tiny):
    with pytest.raises(CallableResultError, match=r"^probe 'p' \(probes=\) must return a real number.*got str 'x'"):
        _train(tiny, probes={"p": lambda model, data: "x"})


def test_probe_returning_a_0d_tensor_is_its_number(tiny):
    table = _train(tiny, probes={"p": lambda model, data: torch.tensor(1.5)})
    assert table["p"].tolist() == [1.5, 1.5]


def test_a_good_loss_callable_trains_as_before(tiny):
    torch.manual_seed(0)
    a = _train(tiny, loss=_ce, seed=3)
    torch.manual_seed(0)
    b = _train(tiny, loss="cross_entropy", seed=3)
    assert np.allclose(a["train_loss"], b["train_loss"], rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------------------------
# Silent NaN: discrete gradient descent above 2N/λ_max

@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    X, Xt, Y = rng.standard_normal((6, 3)), rng.standard_normal((4, 3)), rng.standard_normal(6)
    net = mlp(2, widths=(3, 8, 1), activation="relu", q0=1.0, sigma_w=2 ** 0.5)
    theta = kernels.ntk_kernel(net, X, return_all=True)[-1][1]
    return net, X, Y, Xt, theta, 2 * Y.size / np.linalg.eigvalsh(theta)[-1]


def test_ntk_predict_steps_1000_learning_rate_1e3(task):
    net, X, Y, Xt, _, border = task
    with pytest.raises(ValueError, match=rf"^learning_rate must be at most 2N/λ_max = .* = {border:.6g} .*got 1000"):
        predict.ntk_predict(net, X, Y, Xt, steps=1000, learning_rate=1e3)


def test_ntk_predict_just_below_and_above_the_border(task):
    net, X, Y, Xt, _, border = task
    mean, cov = predict.ntk_predict(net, X, Y, Xt, steps=1000, learning_rate=border * (1 - 1e-9))
    assert np.isfinite(mean).all() and np.isfinite(cov).all()
    with pytest.raises(ValueError, match=rf"learning_rate.*{border:.6g}"):
        predict.ntk_predict(net, X, Y, Xt, steps=1000, learning_rate=border * (1 + 1e-6))


def test_ntk_predict_gradient_flow_unaffected(task):
    net, X, Y, Xt, _, border = task
    mean, cov = predict.ntk_predict(net, X, Y, Xt, t=10.0, learning_rate=1e3)
    assert np.isfinite(mean).all() and np.isfinite(cov).all()
    # η t/N large: gradient flow has converged to kernel regression, t = ∞
    assert np.allclose(mean, predict.ntk_predict(net, X, Y, Xt)[0], atol=1e-8)


def test_ntk_predict_zero_steps_any_learning_rate(task):
    net, X, Y, Xt, _, _ = task
    mean, _ = predict.ntk_predict(net, X, Y, Xt, steps=0, learning_rate=1e3)
    assert np.array_equal(mean, np.zeros(4))


def test_gradient_descent_mse_above_the_border(task):
    _, _, Y, _, theta, border = task
    with pytest.raises(ValueError, match=rf"^learning_rate must be at most .*{border:.6g}"):
        predict.gradient_descent_mse(theta, Y, learning_rate=border * 1.01, steps=True)
    # multi-output: N = y_train.size, the border scales with the number of outputs
    Y2 = np.stack([Y, -Y], axis=1)
    fit = predict.gradient_descent_mse(theta, Y2, learning_rate=border * 1.99, steps=True)
    assert np.isfinite(fit(10 ** 4)).all()
    with pytest.raises(ValueError, match=r"learning_rate"):
        predict.gradient_descent_mse(theta, Y2, learning_rate=border * 2.01, steps=True)
    assert np.isfinite(predict.gradient_descent_mse(theta, Y, learning_rate=1e6)(1.0)).all()   # flow: any η
