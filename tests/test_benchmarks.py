"""benchmarks/gpu.py without a GPU: it exits cleanly saying so, and ``--cpu-only`` runs every item's CPU half at
small sizes, whose computed results are checked (identities, exact moments, a dense baseline), not only timed. The
SLQ item's operator is checked against the dense Kronecker product it stands for."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import sympy as sp

from rmtnet import backend
from rmtnet.spectra.sampling import lanczos as lz
from rmtnet.spectra import symbolic

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gpu_bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(backend.gpu_available(), reason="checks the behaviour without a GPU")
def test_without_a_gpu_it_says_so_and_exits_cleanly(gpu_bench, capsys):
    assert gpu_bench.main([]) is None
    assert "No CUDA device" in capsys.readouterr().out


def _check_cpu_only(results, out, items):
    assert set(results) == set(items)
    for item in items:
        assert f"[{item}]" in out
        t = results[item]
        assert (t.cpu_s > 0).all() and t.gpu_s.isna().all()
        assert t.cpu_result.notna().all()                 # every CPU run ran (nothing skipped at these sizes)


def _check_eig(gpu_bench, table):
    """The eigenvalues of the benchmark's matrix (N = 128, 256): as many as N, equal to SciPy's (another LAPACK
    driver) to rounding, and Σλ = tr a, Σλ² = ‖a‖²_F."""
    assert list(table["size"]) == ["N=128", "N=256"]
    for size, eig in zip((128, 256), table.cpu_result):
        a = gpu_bench._symmetric(size, "numpy")
        scale = np.linalg.norm(a)
        assert eig.shape == (size,)
        np.testing.assert_allclose(eig, scipy.linalg.eigvalsh(a, driver="evr"), rtol=0, atol=1e-12 * scale)
        assert abs(eig.sum() - np.trace(a)) < 1e-12 * scale
        assert abs(np.sum(eig ** 2) - scale ** 2) < 1e-12 * scale ** 2


def _check_jacobian(table):
    """JJᵀ of the depth-2 ReLU network at criticality (σ_w² = 2), N = 128: N eigenvalues, non-negative, with mean
    tr(JJᵀ)/N whose expectation is (σ_w² E[φ′²])² = 1. Its spread comes mostly from the fraction of active units of
    each layer, Binomial(N, ½)/N, relative sd 1/√N ≈ 0.09 each, ≈ 0.125 for the two: |mean − 1| < 0.75 is 6 sd, and
    a wrong σ_w or activation (mean 0.25 at σ_w = 1, 4 for a linear net) falls outside."""
    (eig,) = table.cpu_result
    assert eig.shape == (128,) and np.isfinite(eig).all()
    assert eig.min() >= -1e-12 * eig.max()
    assert abs(eig.mean() - 1.0) < 0.75


def _check_slq(gpu_bench, table):
    """The SLQ estimate of the benchmark's operator (side 32, 2 probes, 10 steps, seed 0) equals SLQ on the dense
    JJᵀ it stands for (the same probes from the same seed): nodes and moments to rounding."""
    (quad,) = table.cpu_result
    J = gpu_bench.mixer_network(32, 4, "numpy").jacobian()
    dense = lz.slq(J @ J.T, n_steps=10, n_probes=2, seed=0)
    assert quad.dim == 1024 and len(quad.probe_nodes) == 2
    for got, want in zip(quad.probe_nodes, dense.probe_nodes):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.max(want))
    for k in (1, 2, 3):
        assert quad.moment(k) == pytest.approx(dense.moment(k), rel=1e-9)


def _check_boxtimes(gpu_bench, table):
    """The density on the benchmark's grid (1000 midpoints of [0, edge]) integrates to the law's first two moments,
    which the exact S-transform series gives independently: Bernoulli(½)^⊠10 ⊠ MP(1, 2)^⊠10 has m₁ = 1, m₂ = 21 (the
    atom ½ at 0 adds nothing). The midpoint rule's error is O(h) here (x^k ρ(x) has a cusp at 0 and a square-root
    edge; h = edge/1000 ≈ 0.054): about 3e-5 relative at these points (1e-5 on a 4× finer grid), and the test allows
    1e-3; a neighbouring depth (m₂ = 19 or 23) or a wrong scale misses by far."""
    (result,) = table.cpu_result
    x, pdf = result
    law = gpu_bench.boxtimes_law()
    assert x.shape == pdf.shape == (1000,) and np.all(pdf >= 0) and np.isfinite(pdf).all()
    h = law.continuous_support()[1] / x.size
    np.testing.assert_allclose(np.diff(x), h, rtol=1e-9)
    half = sp.Rational(1, 2)
    exact = symbolic.free_mult_moments((symbolic.bernoulli_s_transform(half), 10), (symbolic.mp_s_transform(1, 2), 10),
                                       K=2)
    assert exact == [1, 21]
    for k, m in zip((1, 2), exact):
        assert np.sum(x ** k * pdf) * h == pytest.approx(float(m), rel=1e-3)


def test_cpu_only_runs_the_spectral_items(gpu_bench, capsys):
    items = ["eig", "jacobian", "slq", "boxtimes"]
    results = gpu_bench.main(["--cpu-only", "--items", *items])
    _check_cpu_only(results, capsys.readouterr().out, items)
    _check_eig(gpu_bench, results["eig"])
    _check_jacobian(results["jacobian"])
    _check_slq(gpu_bench, results["slq"])
    _check_boxtimes(gpu_bench, results["boxtimes"])


@pytest.mark.slow          # 3-12 s on 2 shared cores: torch's first optimiser step imports torch._dynamo
def test_cpu_only_runs_every_item(gpu_bench, capsys):
    """Every item; the three models train: the loss on the benchmark's fixed batch falls over the timed steps."""
    results = gpu_bench.main(["--cpu-only"])
    _check_cpu_only(results, capsys.readouterr().out, gpu_bench.ITEMS)
    train = results["train"]
    assert len(train) == 3 and (train.cpu_samples_per_s > 0).all()
    assert [name.split()[1] for name in train["item"]] == ["Mixer", "RP-Mixer", "SW-MLP"]
    for first, last in train.cpu_result:
        assert np.isfinite(first) and last < first


def test_bad_arguments_exit_2(gpu_bench):
    with pytest.raises(SystemExit) as e:
        gpu_bench.main(["--repeats", "0"])
    assert e.value.code == 2


def test_mixer_operator_is_jjt_of_the_kronecker_layers(gpu_bench):
    side, depth = 5, 3
    network = gpu_bench.mixer_network(side, depth, "numpy", seed=4)
    J = network.jacobian()
    eye = np.eye(side)
    K = np.eye(side * side)
    for (token, channel) in network.layers:       # row-major vec: W X ↦ (W ⊗ I) vec X, X Vᵀ ↦ (I ⊗ V) vec X
        K = np.kron(eye, channel.v) @ np.kron(token.w, eye) @ K
    np.testing.assert_allclose(J, K, rtol=1e-12, atol=1e-12)
    x = np.random.default_rng(0).standard_normal(side * side)
    op = network.jacobian_gram()
    assert op.shape == (side * side, side * side)
    np.testing.assert_allclose(op.matvec(x), K @ K.T @ x, rtol=1e-12, atol=1e-12)


def test_boxtimes_item_scales_the_cpu_time_to_the_grid(gpu_bench):
    """400 points asked, 100 timed on the CPU: the density is computed on the 100-point grid, and the time is scaled
    by 400/100 and says so."""
    rows = gpu_bench.boxtimes_item(points=400, cpu_points=100, repeats=1, gpu=False)
    assert rows[0]["cpu_s"] > 0 and "scaled linearly to 400" in rows[0]["note"]
    x, pdf = rows[0]["cpu_result"]
    edge = gpu_bench.boxtimes_law().continuous_support()[1]
    np.testing.assert_allclose(x, edge * (np.arange(100) + 0.5) / 100, rtol=1e-15)
    # the density of the law at those points: a few of them solved on their own give the same values
    np.testing.assert_allclose(pdf[::25], gpu_bench.boxtimes_law().pdf(x[::25]), rtol=1e-8)
    assert np.all(pdf > 0)


def test_cpu_estimate_beyond_the_cap_scales_by_the_power(gpu_bench):
    """_cpu_or_estimate: measured at or below the cap, t(n₀)(n/n₀)^p beyond it from the largest measured n₀, and a
    skip note without any measurement."""
    measured = {}
    assert gpu_bench._cpu_or_estimate(100, 200, lambda: 2.0, measured) == (2.0, "")
    assert gpu_bench._cpu_or_estimate(200, 200, lambda: 5.0, measured) == (5.0, "")
    t, note = gpu_bench._cpu_or_estimate(800, 200, lambda: 1 / 0, measured)
    assert t == pytest.approx(5.0 * 4 ** 3) and "N^3 from N=200" in note and "--cpu-max 200" in note
    t, note = gpu_bench._cpu_or_estimate(800, 200, lambda: 1 / 0, {})
    assert np.isnan(t) and "CPU skipped" in note


def test_peer_neural_tangents_without_the_peer_times_rmtnet_alone(capsys):
    """benchmarks/peer_neural_tangents.py with no peer interpreter says that neural-tangents is not compared and
    times rmtnet's NTK and NNGP kernels (ReLU and erf) at the threads asked; the peer's environment pins its threads."""
    spec = importlib.util.spec_from_file_location("bench_nt", ROOT / "benchmarks" / "peer_neural_tangents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--points", "30", "--depth", "3", "--repeats", "1", "--threads", "1", "--peer-python", ""])
    assert "neural-tangents is not compared" in capsys.readouterr().out
    assert [(r["act"], r["kernel"]) for r in rows] == [("relu", "ntk"), ("relu", "nngp"), ("erf", "ntk"),
                                                         ("erf", "nngp")]
    assert all(r["rmtnet_s"] > 0 and np.isnan(r["peer_s"]) for r in rows)
    env = module.peer_environment(1)
    assert env["OMP_NUM_THREADS"] == "1" and "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    assert module.max_relative_difference(np.array([1.0, -2.0]), np.array([1.0, -2.0 + 2e-8])) == pytest.approx(1e-8)
