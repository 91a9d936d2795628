"""Matrix-free sharpness against dense linear algebra: the loss Hessian's top eigenvalues (Lanczos on Hessian-vector
products) against the eigenvalues of the dense Hessian, Hutchinson's trace against the dense trace, the empirical
NTK's top eigenvalue against eigvalsh of the dense Gram, and the training loop's probe columns."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from rmtnet.nets import MLP, data as D, sharpness as S
from rmtnet.nets.probes import empirical_ntk
from rmtnet.nets.training import loss_function, train

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def small(seed=0, outputs=2):
    """A tanh MLP 3 → 6 → 5 → outputs with biases (P = 24 + 35 + 6·outputs… parameters) in float64, 9 inputs."""
    net = MLP([3, 6, 5, outputs], activation="tanh", sigma_b=0.3, seed=seed, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    return net, torch.randn(9, 3, generator=g, dtype=torch.float64)


def dense_hessian(model, x, y, loss):
    """∇²L as a P × P matrix, by torch.autograd.functional.hessian of L over the flattened parameters."""
    names = [k for k, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    loss_fn = loss_function(loss, None if y.is_floating_point() else 2)

    def L(flat):
        p = {k: t.reshape(s) for k, t, s in zip(names, torch.split(flat, sizes), shapes)}
        return loss_fn(torch.func.functional_call(model, p, (x,)), y)
    return torch.autograd.functional.hessian(L, theta).numpy()


@pytest.mark.parametrize("loss", ["mse", "mean_squared", "cross_entropy"])
def test_hessian_top_eigenvalues_equal_the_dense_hessians(loss):
    net, x = small()
    y = (torch.randn(9, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64) if loss != "cross_entropy"
         else torch.tensor([0, 1, 1, 0, 1, 0, 0, 1, 1]))
    H = dense_hessian(net, x, y, loss)
    assert np.allclose(H, H.T, atol=1e-12)
    dense = np.sort(np.linalg.eigvalsh(H))[::-1][:3]
    lanczos = S.hessian_top_eigenvalues(net, (x, y), loss=loss, k=3, tol=1e-12)
    np.testing.assert_allclose(lanczos, dense, rtol=1e-6, atol=1e-9)


def test_squared_loss_factor_halves_the_hessian():
    """"mse" is ½ × "mean_squared", so is its Hessian."""
    net, x = small()
    y = torch.zeros(9, 2, dtype=torch.float64)
    half = S.hessian_top_eigenvalues(net, (x, y), loss="mse", tol=1e-12)[0]
    full = S.hessian_top_eigenvalues(net, (x, y), loss="mean_squared", tol=1e-12)[0]
    assert half == pytest.approx(full / 2, rel=1e-9)


def test_hutchinson_trace_is_within_three_standard_errors_of_the_dense_trace():
    net, x = small()
    y = torch.randn(9, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    H = dense_hessian(net, x, y, "mse")
    est = S.hessian_trace(net, (x, y), loss="mse", n_probes=200, seed=0)
    # Var zᵀHz = 2 Σ_{i≠j} H_ij² for Rademacher z: the standard error it states is that, estimated
    sd = math.sqrt(2 * (np.sum(H ** 2) - np.sum(np.diag(H) ** 2)))
    assert est.n_probes == 200 and 0.75 < est.standard_error / (sd / math.sqrt(200)) < 1.25
    assert abs(est.value - np.trace(H)) <= 3 * est.standard_error


def test_ntk_top_eigenvalues_equal_eigvalsh_of_the_empirical_ntk():
    net, x = small(outputs=3)
    dense = np.sort(np.linalg.eigvalsh(empirical_ntk(net, x).numpy()))[::-1][:4]
    np.testing.assert_allclose(S.ntk_top_eigenvalues(net, x, k=4, tol=1e-12), dense, rtol=1e-8, atol=0)


def test_at_an_interpolating_point_the_mse_hessian_is_the_gauss_newton_ntk_over_nk():
    """With targets y = f(x) the residual term vanishes: ∇²L = JᵀJ/(Nk), whose non-zero eigenvalues are Θ's/(Nk)."""
    net, x = small(outputs=2)
    with torch.no_grad():
        y = net(x)
    top_h = S.hessian_top_eigenvalues(net, (x, y), loss="mse", k=2, tol=1e-12)
    top_ntk = S.ntk_top_eigenvalues(net, x, k=2, tol=1e-12)
    np.testing.assert_allclose(top_h, top_ntk / (9 * 2), rtol=1e-8)


def _regression(n=12):
    return D.teacher_student(n, 6, d=3, width=4, seed=0, dtype=torch.float64)


def test_probes_write_their_columns_into_the_table_and_csv_and_survive_a_resume(tmp_path):
    data = _regression()
    probe = S.sharpness_probe("mse", n_examples=8, tol=1e-10)
    kw = dict(epochs=4, batch_size=data.n_train, momentum=0.0, lr=0.2, loss="mse", progress=False, seed=0,
              probes={"sharp": probe, "one": lambda model, d: 1.0}, probe_every=2)
    whole = train(MLP([3, 8, 1], activation="tanh", seed=0, dtype=torch.float64), data, **kw)
    assert {"sharp_hessian", "sharp_ntk", "one"} <= set(whole.columns)
    probed = whole["sharp_hessian"].notna().tolist()
    assert probed == [True, False, True, False, True]               # rows 0, 2, 4 (every 2nd, and the last)
    # the value at epoch 0 is the initial model's sharpness
    first = probe(MLP([3, 8, 1], activation="tanh", seed=0, dtype=torch.float64), data)
    assert whole["sharp_hessian"].iloc[0] == pytest.approx(first["hessian"], rel=1e-8)
    assert whole["sharp_ntk"].iloc[0] == pytest.approx(first["ntk"], rel=1e-8)

    def stop(epoch, model, row):
        if epoch == 2:
            raise KeyboardInterrupt
    ckpt, csv = tmp_path / "run.pt", tmp_path / "run.csv"
    with pytest.raises(KeyboardInterrupt):
        train(MLP([3, 8, 1], activation="tanh", seed=0, dtype=torch.float64), data, checkpoint=ckpt, metrics=csv,
              callback=stop, **kw)
    resumed = train(MLP([3, 8, 1], activation="tanh", seed=5, dtype=torch.float64), data, checkpoint=ckpt,
                    metrics=csv, **kw)
    cols = ["epoch", "train_loss", "sharp_hessian", "sharp_ntk", "one"]
    pd.testing.assert_frame_equal(resumed[cols], whole[cols], rtol=1e-10)
    pd.testing.assert_frame_equal(pd.read_csv(csv)[cols], whole[cols], rtol=1e-10)
    with pytest.raises(ValueError, match="other arguments"):        # the probes are part of what is resumed
        train(MLP([3, 8, 1], activation="tanh", seed=0, dtype=torch.float64), data, checkpoint=ckpt,
              **{**kw, "probes": {"other": lambda model, d: 2.0}})


@pytest.mark.parametrize("probes, probe_every, match", [
    ({"a": 3.0}, 1, "probes"), ([lambda m, d: 1.0], 1, "probes"), ({"": lambda m, d: 1.0}, 1, "probes"),
    ({"a": lambda m, d: 1.0}, 0, "probe_every"), ({"a": lambda m, d: "x"}, 1, "real number"),
    ({"a": lambda m, d: math.nan}, 1, "probe column 'a'")])
def test_bad_probes_are_refused(probes, probe_every, match):
    with pytest.raises((ValueError, FloatingPointError), match=match):
        train(MLP([3, 4, 1], seed=0, dtype=torch.float64), _regression(), epochs=1, batch_size=4, progress=False,
              loss="mse", probes=probes, probe_every=probe_every)


def test_a_probes_own_error_at_epoch_0_passes_unchanged():
    """Not relabelled as a model that cannot take the data (what a failure of the first evaluation means)."""
    def broken(model, data):
        raise RuntimeError("the probe broke")
    with pytest.raises(RuntimeError, match="the probe broke"):
        train(MLP([3, 4, 1], seed=0, dtype=torch.float64), _regression(), epochs=1, batch_size=4, progress=False,
              loss="mse", probes={"broken": broken})


def test_bad_arguments_name_themselves():
    net, x = small()
    y = torch.zeros(9, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="data"):
        S.hessian_top_eigenvalues(net, x)
    with pytest.raises(ValueError, match="data.s y must"):
        S.hessian_top_eigenvalues(net, (x, y[:4]))
    with pytest.raises(ValueError, match="class labels"):
        S.hessian_top_eigenvalues(net, (x, torch.full((9,), 5)), loss="cross_entropy")
    with pytest.raises(ValueError, match="k must"):
        S.hessian_top_eigenvalues(net, (x, y), k=0)
    with pytest.raises(ValueError, match="loss must"):
        S.hessian_top_eigenvalues(net, (x, y), loss="l1")
    with pytest.raises(ValueError, match="n_probes"):
        S.hessian_trace(net, (x, y), n_probes=1)
    with pytest.raises(ValueError, match="k must"):
        S.ntk_top_eigenvalues(net, x, k=18)
    with pytest.raises(ValueError, match="n_examples"):
        S.sharpness_probe(n_examples=0)


def test_train_stops_a_blown_up_run_at_the_first_evaluation_past_blowup_times_the_initial_loss():
    """Full-batch GD on a linear model at η = 3/λ_max(∇²L): the top mode's error grows ×|1 − 3| = 2 a step, the loss
    ×4; with blowup = 100 the run raises DivergenceError at the first evaluation above 100× epoch 0's loss, and the
    rows it recorded before all lie below that line (without blowup the same 6 steps finish)."""
    from rmtnet.nets import DivergenceError
    data = _regression()
    lam = S.hessian_top_eigenvalues(torch.nn.Linear(3, 1, dtype=torch.float64), data, "mse", tol=1e-12)[0]
    kw = dict(epochs=6, batch_size=data.n_train, momentum=0.0, lr=3.0 / lam, loss=loss_function("mse", None),
              progress=False)
    torch.manual_seed(0)
    free = train(torch.nn.Linear(3, 1, dtype=torch.float64), data, **kw)
    assert free["train_loss"].iloc[-1] > 100 * free["train_loss"].iloc[0]
    rows = []
    torch.manual_seed(0)
    with pytest.raises(DivergenceError, match="blowup = 100"):
        train(torch.nn.Linear(3, 1, dtype=torch.float64), data, blowup=100.0,
              callback=lambda epoch, model, row: rows.append(row["train_loss"]), **kw)
    first_above = int(np.argmax(free["train_loss"].to_numpy() > 100 * free["train_loss"].iloc[0]))
    np.testing.assert_allclose(rows, free["train_loss"].iloc[:first_above], rtol=1e-12)
    for bad in (1.0, 0.5, math.inf, "10", True):
        with pytest.raises(ValueError, match=r"blowup must (lie in \(1.0, inf\]|be a finite real number)"):
            train(torch.nn.Linear(3, 1, dtype=torch.float64), data, blowup=bad, **kw)


def test_small_sizes_check_every_argument_before_their_shortcut():
    """P = 1 (one weight) and Nk = 1 (one output of one input) need no Lanczos, but bad arguments are still refused."""
    one = torch.nn.Linear(1, 1, bias=False, dtype=torch.float64)
    x, y = torch.ones(3, 1, dtype=torch.float64), torch.zeros(3, 1, dtype=torch.float64)
    assert S.hessian_top_eigenvalues(one, (x, y))[0] == pytest.approx(1.0, rel=1e-12)     # ∇²L = mean x² = 1
    assert S.ntk_top_eigenvalues(one, x[:1])[0] == pytest.approx(1.0, rel=1e-12)          # Θ = x² = 1
    for name, value in (("tol", -1), ("tol", 1.5), ("seed", -5), ("maxiter", 0), ("ncv", 2), ("ncv", "4")):
        with pytest.raises(ValueError, match=name):
            S.hessian_top_eigenvalues(one, (x, y), **{name: value})
        with pytest.raises(ValueError, match=name):
            S.ntk_top_eigenvalues(one, x[:1], **{name: value})


def test_ncv_is_at_least_k_plus_two_everywhere():
    net, x = small()
    y = torch.zeros(9, 2, dtype=torch.float64)
    for call in (lambda v: S.hessian_top_eigenvalues(net, (x, y), k=2, ncv=v), lambda v: S.ntk_top_eigenvalues(
            net, x, k=2, ncv=v)):
        with pytest.raises(ValueError, match="ncv must be an integer >= 4"):
            call(3)
        assert np.all(np.isfinite(call(4)))
    with pytest.raises(ValueError, match="ncv must be an integer >= 3"):
        S.sharpness_probe(ncv=2)
    assert S.sharpness_probe(ncv=3).ncv == 3


def test_an_overflowing_loss_is_a_divergence():
    """Weights of 10²⁰ in float32 give finite outputs (10²⁰ < 3.4·10³⁸) whose squares overflow: DivergenceError."""
    from rmtnet.nets import DivergenceError
    lin = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        lin.weight.fill_(1e20)
    x, y = torch.ones(4, 2), torch.zeros(4, 1)
    for call in (lambda: S.hessian_top_eigenvalues(lin, (x, y)), lambda: S.hessian_trace(lin, (x, y))):
        with pytest.raises(DivergenceError, match="not finite"):
            call()


def test_the_probe_evaluates_in_eval_mode_and_restores_the_mode():
    """With dropout p = 0.5 in train mode the loss is random; the probe's value is that of the model in eval mode
    (dropout off), and the model comes back in the mode it was in."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
    model = model.double()
    data = _regression()
    probe = S.sharpness_probe("mse", tol=1e-10)
    for mode in (True, False):
        model.train(mode)
        row = probe(model, data)
        assert model.training is mode
        model.eval()
        assert row["hessian"] == pytest.approx(S.hessian_top_eigenvalues(model, data, tol=1e-10)[0], rel=1e-8)
        assert row["ntk"] == pytest.approx(S.ntk_top_eigenvalues(model, data.x_train, tol=1e-10)[0], rel=1e-8)


def test_the_hessian_operator_counts_its_products_and_matches_the_dense_hessian():
    net, x = small()
    y = torch.randn(9, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    H = S.HessianOperator(net, (x, y), "mse")
    dense = dense_hessian(net, x, y, "mse")
    assert H.dim == dense.shape[0] and H.products == 0
    np.testing.assert_allclose(H.hvp(np.eye(H.dim)[:, :5]), dense[:, :5], rtol=1e-10, atol=1e-12)
    assert H.products == 5


def test_a_dead_relu_net_has_zero_sharpness():
    """Every ReLU unit off (bias −100) and no read-out bias: f ≡ 0 near θ, so ∇²L = 0 and Θ = 0 (ARPACK alone stops
    there, its Krylov space collapsing)."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2, bias=False)).double()
    with torch.no_grad():
        net[0].bias.fill_(-100.0)
    _, x = small()
    y = torch.randn(9, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert S.hessian_top_eigenvalues(net, (x, y), k=2).tolist() == [0.0, 0.0]
    assert S.ntk_top_eigenvalues(net, x).tolist() == [0.0]


def test_the_study_marks_a_blown_up_run_and_gives_no_loss_notice(monkeypatch):
    """An erf MLP 784-8-10 on 16 digits at η = 0.5 · 2/λ₀ converges; at 200 · 2/λ₀ the loss passes 10³ × its start
    and the run is stopped and marked (the steps after it NaN); the study's own training gives no notice of the
    squared-loss convention (it hands train the loss itself)."""
    import warnings
    from rmtnet.nets import training
    from rmtnet.studies import sharpness as study
    monkeypatch.setattr(training, "_MSE_NOTICE_GIVEN", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        runs = study.sharpness_sweep([0.5, 200.0], width=8, depth=2, n_train=16, steps=6, probe_every=2,
                                     activation="erf")
    stable, blown = runs.iloc[0], runs.iloc[1]
    assert stable.diverged == 0 and stable.steps_done == 6 and stable.eta * stable.hessian / 2 == pytest.approx(0.5)
    assert stable.hessian_0 == pytest.approx(stable.hessian, rel=1e-3)           # the probe at step 0 is λ₀
    losses = blown[[f"loss_{t}" for t in range(7)]].to_numpy(dtype=float)
    done = int(blown.steps_done)
    assert blown.diverged == 1 and done < 6 and np.isnan(losses[done + 1:]).all()
    assert np.all(losses[:done + 1] <= 1e3 * losses[0])
    long = study.curves(runs)
    assert len(long) == 2 * 7 and long.hessian.notna().sum() == 4 + (done // 2 + 1)


def test_the_study_refuses_bad_arguments_before_any_work():
    from rmtnet.studies import sharpness as study
    for kw, name in ((dict(activation="gelu"), "activation"), (dict(tol=0.0), "tol"), (dict(ncv=2), "ncv"),
                     (dict(seed=-1), "seed"), (dict(n_train=0), "n_train"), (dict(width=0), "width")):
        with pytest.raises(ValueError, match=name):
            study.sharpness_run(0.5, **{**dict(width=4, depth=2, n_train=4, steps=1, probe_every=1), **kw})
    for args, name in ((([],), "eta_factors"), ((0.5,), "eta_factors"), (([0.5], []), "seeds"),
                       (([0.5], [-1]), "seeds")):
        with pytest.raises(ValueError, match=name):
            study.sharpness_sweep(*args, width=4, depth=2, n_train=4, steps=1, probe_every=1)
    with pytest.raises(TypeError, match="runs must be the table of sharpness_sweep"):
        study.curves({"eta": 1})
    with pytest.raises(ValueError, match=r"missing \['seed', 'eta', 'two_over_eta'\]"):
        study.curves(pd.DataFrame({"eta_factor": [0.5]}))
