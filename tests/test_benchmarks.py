"""benchmarks/gpu.py without a GPU: it exits cleanly saying so, and ``--cpu-only`` runs every item's CPU half at
small sizes (items whose library code is missing say "not available" and why). The SLQ operator is checked against
the dense Kronecker product it stands for, and the SLQ / ⊠ items against stand-ins of the interfaces they expect."""
import importlib.util
import math
import sys
import types
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
        if results[item] is None:
            assert item in ("slq", "boxtimes")           # the parts that wait for code being written elsewhere
        else:
            t = results[item]
            assert (t.cpu_s > 0).all() and t.gpu_s.isna().all()
    assert out.count("not available:") == sum(r is None for r in results.values())


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
    op = gpu_bench.mixer_jacobian_operator(side, depth, "numpy", seed=4)
    rng = _backend.rng(4, "numpy")                    # the same draws, in the same order
    eye = np.eye(side)
    J = np.eye(side * side)
    for _ in range(depth):
        w = rng.standard_normal((side, side)) / math.sqrt(side)
        v = rng.standard_normal((side, side)) / math.sqrt(side)
        J = np.kron(eye, v) @ np.kron(w, eye) @ J     # row-major vec: W X ↦ (W ⊗ I) vec X, X Vᵀ ↦ (I ⊗ V) vec X
    x = np.random.default_rng(0).standard_normal(side * side)
    assert op.shape == (side * side, side * side)
    np.testing.assert_allclose(op.matvec(x), J @ J.T @ x, rtol=1e-12, atol=1e-12)


def test_slq_and_boxtimes_items_call_the_expected_interfaces(gpu_bench, monkeypatch):
    calls = []

    def slq(operator, n_probes=4, n_steps=20, seed=None, backend=None):
        calls.append((operator.shape, n_probes, n_steps, seed, backend))
        return operator.matvec(np.ones(operator.shape[0]))

    import rmtnet.spectra
    fake = types.SimpleNamespace(slq=slq)          # both routes of `from rmtnet.spectra import lanczos`
    monkeypatch.setitem(sys.modules, "rmtnet.spectra.lanczos", fake)
    monkeypatch.setattr(rmtnet.spectra, "lanczos", fake, raising=False)
    rows = gpu_bench.slq_item(side=6, depth=4, n_probes=3, n_steps=7, repeats=1, gpu=False)
    assert calls == [((36, 36), 3, 7, 0, "numpy")] and rows[0]["cpu_s"] > 0

    bad = types.SimpleNamespace(slq=lambda op: None)
    monkeypatch.setitem(sys.modules, "rmtnet.spectra.lanczos", bad)
    monkeypatch.setattr(rmtnet.spectra, "lanczos", bad, raising=False)
    with pytest.raises(gpu_bench.NotAvailable, match="does not take"):
        gpu_bench.slq_item(side=6, depth=4, n_probes=3, n_steps=7, repeats=1, gpu=False)

    class Law:
        def support(self):
            return 0.0, 2.0

        def pdf(self, x, backend=None):
            calls.append((len(x), backend))
            return np.ones_like(x)

    monkeypatch.setattr(gpu_bench, "boxtimes_law", Law)
    rows = gpu_bench.boxtimes_item(points=1000, cpu_points=100, repeats=1, gpu=False)
    assert calls[-1] == (100, "numpy") and "scaled linearly to 1000" in rows[0]["note"]
