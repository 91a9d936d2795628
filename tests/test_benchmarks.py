"""benchmarks/gpu.py without a GPU: it exits cleanly saying so, and ``--cpu-only`` runs every item's CPU half at
small sizes. The SLQ item's operator is checked against the dense Kronecker product it stands for."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from rmtnet import _backend

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gpu_bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(_backend.gpu_available(), reason="checks the behaviour without a GPU")
def test_without_a_gpu_it_says_so_and_exits_cleanly(gpu_bench, capsys):
    assert gpu_bench.main([]) is None
    assert "No CUDA device" in capsys.readouterr().out


def _check_cpu_only(results, out, items):
    assert set(results) == set(items)
    for item in items:
        assert f"[{item}]" in out
        t = results[item]
        assert (t.cpu_s > 0).all() and t.gpu_s.isna().all()


def test_cpu_only_runs_the_spectral_items(gpu_bench, capsys):
    items = ["eig", "jacobian", "slq", "boxtimes"]
    results = gpu_bench.main(["--cpu-only", "--items", *items])
    _check_cpu_only(results, capsys.readouterr().out, items)
    assert len(results["eig"]) == 2 and len(results["jacobian"]) == 1


@pytest.mark.slow          # 3-12 s on 2 shared cores: torch's first optimiser step imports torch._dynamo
def test_cpu_only_runs_every_item(gpu_bench, capsys):
    results = gpu_bench.main(["--cpu-only"])
    _check_cpu_only(results, capsys.readouterr().out, gpu_bench.ITEMS)
    assert len(results["train"]) == 3 and (results["train"].cpu_samples_per_s > 0).all()


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
    rows = gpu_bench.boxtimes_item(points=400, cpu_points=100, repeats=1, gpu=False)
    assert rows[0]["cpu_s"] > 0 and "scaled linearly to 400" in rows[0]["note"]
