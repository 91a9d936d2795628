"""Figure scripts and the command line: each runs at quick size, writes its figure and CSV, and agrees with MC."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rmtnet import backend as B
from rmtnet import cli
from rmtnet.spectra import mixer

ROOT = Path(__file__).resolve().parent.parent


def test_mp_and_fuss_catalan_figure(tmp_path):
    path, tables = cli.load_simulation("mp_and_fuss_catalan")["main"](full=False, outdir=tmp_path)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    csv = pd.read_csv(Path(path).with_suffix(".csv"))
    assert set(csv.columns) >= {"panel", "x", "mc_density", "theory_density", "ks"}
    assert len(tables) == 9 and set(csv.panel) == set(tables)
    for name, t in tables.items():
        assert t.attrs["ks"] < 0.02, name           # N = 1000: the KS of a correct law is ≈ 1/√N·const


def test_cli_lists_and_rejects_unknown_names(capsys):
    assert cli.main(["list"]) == 0
    assert "mp_and_fuss_catalan" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "no_such_figure"])
    assert "no_such_figure" in str(e.value.code) and e.value.code != 0


def test_console_script_exit_status():
    r = subprocess.run([sys.executable, "-m", "rmtnet.cli", "run", "nope"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "nope" in r.stderr


def _figure(name, tmp_path):
    path, tables = cli.load_simulation(name)["main"](full=False, outdir=tmp_path)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    csv = pd.read_csv(Path(path).with_suffix(".csv"))
    assert set(csv.panel) == set(tables)
    return tables


@pytest.mark.slow          # ~60 s on 2 cores: the theory cdf of ~20 laws for the KS distances
@pytest.mark.agreement
def test_jacobian_spectra_figure(tmp_path):
    tables = _figure("jacobian_spectra", tmp_path)
    overlays = {k: t for k, t in tables.items() if "ks" in t.attrs}
    assert len(overlays) == 20
    for name, t in overlays.items():
        assert t.attrs["ks"] < 0.05, name            # N = 1000, one draw
    sweep = tables["variance vs depth"]
    ref = sweep.dropna(subset=["var_reference"])
    # Var(JJᵀ) at criticality: 2L (ReLU Gaussian), L (ReLU orthogonal, linear Gaussian), 0 (linear orthogonal)
    assert set(ref.model) == {"relu gaussian", "relu orthogonal", "linear gaussian", "linear orthogonal"}
    assert len(ref) == 400 and ref.depth.max() == 100
    assert (ref.var_theory - ref.var_reference).abs().max() < 1e-8
    expect = {"relu gaussian": 2.0, "relu orthogonal": 1.0, "linear gaussian": 1.0, "linear orthogonal": 0.0}
    for model, slope in expect.items():
        r = ref[ref.model == model]
        assert np.allclose(r.var_theory, slope * r.depth, rtol=0, atol=1e-8), model
    # hard-tanh at σ_b = 0.05: per-layer Var(σ_w²D²) = v, so Var = L(1 + v) Gaussian, L·v orthogonal (v ≈ 0.018)
    hg = sweep[sweep.model == "hard_tanh gaussian"].var_theory.to_numpy()
    ho = sweep[sweep.model == "hard_tanh orthogonal"].var_theory.to_numpy()
    L = np.arange(1, 101)
    v = ho[0]
    assert 0.01 < v < 0.03 and np.allclose(ho, L * v, rtol=1e-8) and np.allclose(hg, L * (1 + v), rtol=1e-8)
    mc = sweep.dropna(subset=["var_mc"])
    shallow = mc[(mc.depth <= 4) & (mc.var_theory > 0)]      # N = 400, 3 draws: heavy tails, ~10 % scatter
    assert (abs(shallow.var_mc - shallow.var_theory) / shallow.var_theory).max() < 0.25
    assert mc[mc.model == "linear orthogonal"].var_mc.abs().max() < 1e-12     # JJᵀ = I exactly


@pytest.mark.slow          # ~40 s on 2 cores: the quick figure's critical line, χ grid and Monte Carlo check
@pytest.mark.agreement
def test_dynamical_isometry_figure(tmp_path):
    from rmtnet.spectra import chi
    tables = _figure("dynamical_isometry", tmp_path)
    line = tables["critical line"]
    for sw, sb in zip(line.sigma_w, line.sigma_b):       # recomputed here, not read from the table
        assert abs(chi("tanh", sw, sb) - 1.0) < 1e-8, (sw, sb)
    assert np.all(np.diff(line.sigma_w) > 0) and np.all(np.diff(line.q_star) > 0)
    # orthogonal: Var(JJᵀ) → 0 as σ_b → 0 (dynamical isometry); Gaussian: Var ≥ L all along the line
    L = line.attrs["depth"]
    assert line.var_orthogonal.iloc[0] < 1e-6 and np.all(np.diff(line.var_orthogonal) > 0)
    assert np.all(line.var_gaussian >= L - 1e-6)
    assert np.allclose(line.var_gaussian - line.var_orthogonal, L, atol=1e-8)   # the MP factors add 1 per layer
    # the grid's sign of log χ agrees with the critical line (away from it)
    grid = tables["log chi grid"]
    crit = np.interp(grid.sigma_b, line.sigma_b, line.sigma_w)
    far = (grid.sigma_w - crit).abs() > 0.03
    assert far.sum() > 400
    assert np.all(np.sign(grid.log_chi[far]) == np.sign(grid.sigma_w - crit)[far])
    mc = tables["MC check"]
    assert len(mc) >= 4 and mc.rel_err.abs().max() < 0.25


@pytest.mark.slow          # ~60 s on 2 cores: the Fisher recursion to depth 8, each level tabulated
@pytest.mark.agreement
def test_ntk_spectrum_figure(tmp_path):
    from rmtnet.spectra import fisher
    ns = cli.load_simulation("ntk_spectrum")
    path, tables = ns["main"](full=False, outdir=tmp_path)
    assert Path(path).exists() and Path(path).with_suffix(".csv").exists()
    overlays = {k: t for k, t in tables.items() if "ks" in t.attrs}
    assert len(overlays) == 3
    for name, t in overlays.items():
        a = t.attrs
        assert a["ks"] < 0.05, name
        assert abs(a["lambda_max_mc"] - a["lambda_max"]) < 1e-6 * a["lambda_max"], name   # the top atom
        assert abs(a["m1_mc"] - a["m1_theory"]) < 0.03 * a["m1_theory"], name
    t = tables["lambda_max vs depth"]
    assert t.attrs["slope"] > 0 and t.attrs["rel_residual"] < 0.05
    assert np.all(np.diff(t.lambda_max) > 0)
    assert np.allclose(t.critical_learning_rate, 2.0 / t.lambda_max)
    row = t[t.depth == 2].iloc[0]                         # the library's own 2/λ_max at a cheap depth
    assert abs(fisher.critical_learning_rate(ns["_net"](2, 1000)) - row.critical_learning_rate) < 1e-10


def test_effective_width_small_sweep_resumes(tmp_path):
    """effective_width.py on a reduced grid (S = 4, 16; one epoch; 2 seeds): every (model, S, seed) once, the
    budget Ω within 2 % of its target at each S, and a second call reads the finished runs back instead of training."""
    ns = cli.load_simulation("effective_width")
    small = dict(side=16, tokens=(4, 16), epochs=1, seeds=2)
    path, tables = ns["main"](full=False, outdir=tmp_path, n_jobs=1, **small)
    runs = tables["runs"]
    assert Path(path).exists() and len(runs) == 12
    assert runs.groupby(["model", "tokens"]).seed.nunique().eq(2).all()
    assert ((runs.connections - 2 * 16 ** 3).abs() / (2 * 16 ** 3)).max() < 0.02
    again = ns["main"](full=False, outdir=tmp_path, n_jobs=1, **small)[1]["runs"]
    pd.testing.assert_series_equal(again.seconds, runs.seconds)       # read from the store, not re-run
    s = tables["summary"]
    text = ns["caption"](s)                                           # the verdict names each model's best S
    assert text.startswith(("Reproduced", "Not reproduced")) and text.count(": lowest") == 3
    mixer_best = int(s[s.model == "mixer"].set_index("tokens").test_error_mean.idxmin())
    assert f"MLP-Mixer: lowest {s[s.model == 'mixer'].test_error_mean.min():.3f} at S = {mixer_best}" in text


def test_effective_width_grid_names_the_device_only_off_the_cpu():
    """A GPU run's configurations carry ``device="cuda"`` (so its runs have their own keys in the store); a CPU run's
    configurations are those of earlier stores (no device key)."""
    ns = cli.load_simulation("effective_width")
    s = ns["settings"](False)
    omega, cpu = ns["grid"](s)
    omega2, gpu = ns["grid"](s, "cuda")
    assert omega == omega2 and len(cpu) == len(gpu) == 3 * len(s["tokens"])
    assert all("device" not in c for c in cpu) and all(c.pop("device") == "cuda" for c in gpu) and cpu == gpu


def test_effective_width_full_grid_is_the_published_budget():
    """--full: Ω = 2¹⁹ (S* = C* = 64, Hayase & Karakida's budget); at every S the integer C whose budget is closest to
    Ω (within 3.2 %: S = 256, C = 8 is the coarsest) and S = C = 64 on the grid;
    the patches cut the 32 × 32 canvas into exactly S tokens (the data's shape), and quick mode keeps its patches."""
    from rmtnet.studies.mixer_width import centre_pad, patched
    ns = cli.load_simulation("effective_width")
    s = ns["settings"](True)
    omega, configs = ns["grid"](s)
    assert omega == 2 ** 19
    for c in configs[::3]:
        S = (-(-32 // c["patch"])) ** 2
        gap = [abs(mixer.connections(S, c["channels"] + k, 2.0) - omega) for k in (-1, 0, 1)]
        assert gap[1] <= min(gap) and gap[1] / omega < 0.032
    assert any(c["patch"] == 4 and c["channels"] == 64 for c in configs)
    assert patched("digits", 2, canvas=32).shape == (256, 4)           # 8×8 digits on 32×32, 2×2 patches
    x = torch.ones(1, 1, 28, 28)
    assert centre_pad(x, 32)[0, 0, 2:30, 2:30].eq(1).all() and centre_pad(x, 32).sum() == 28 * 28
    assert [ns["patch_for_tokens"](S, 28) for S in (4, 9, 16, 25, 36, 49, 100)] == [14, 10, 7, 6, 5, 4, 3]
    with pytest.raises(ValueError, match="canvas"):
        centre_pad(x, 20)


@pytest.mark.gpu
@pytest.mark.skipif(not B.gpu_available(), reason="needs CuPy and a CUDA device")
def test_effective_width_trains_on_cuda_in_worker_processes(tmp_path):
    """``--backend cupy``: the sweep's worker processes train on the GPU, and the test errors are those of the CPU
    protocol (the same initial weights; float32 rounding differs, so within 0.03 of the CPU run's error)."""
    ns = cli.load_simulation("effective_width")
    small = dict(side=16, tokens=(4, 16), epochs=2, seeds=1)
    gpu = ns["main"](outdir=tmp_path / "gpu", backend="cupy", n_jobs=2, **small)[1]["runs"]
    cpu = ns["main"](outdir=tmp_path / "cpu", n_jobs=2, **small)[1]["runs"]
    assert len(gpu) == len(cpu) == 6 and gpu.device.eq("cuda").all()
    merged = gpu.merge(cpu, on=["model", "tokens", "channels", "seed"], suffixes=("_gpu", "_cpu"))
    assert len(merged) == 6
    assert (merged.test_error_gpu - merged.test_error_cpu).abs().max() < 0.03, merged


@pytest.mark.slow          # ~70 s: 60 dense eigensolves up to m = 2304
@pytest.mark.agreement
def test_mixer_singular_values_figure(tmp_path):
    """SW-MLP's largest singular value decreases towards c_γ from above as p·m/log m grows, and its squared
    singular values at m = 2304 match Marchenko–Pastur (KS < 0.02); the Kronecker/RP spectra are W's repeated."""
    tables = _figure("mixer_singular_values", tmp_path)
    s = tables["summary"]
    sw = s[s.model == "swmlp"].sort_values("width")
    assert np.all(np.diff(sw.sv_max_mean) < 0) and np.all(sw.sv_max_mean > 1 + np.sqrt(2))
    assert sw.ks_mean.iloc[-1] < 0.02


@pytest.mark.slow          # ~70 s: eight short trainings
@pytest.mark.agreement
def test_cka_figure(tmp_path):
    """Mean diagonal CKA with the Mixer falls as the SW-MLP gets denser (p = 1/16 > 1/4 > 1), seed 002's trend."""
    tables = _figure("cka_mixer_vs_swmlp", tmp_path)
    s = tables["diagonal summary"].sort_values("density")
    assert np.all(np.diff(s["mean"]) < 0), s


def test_ntk_dynamics_figure_and_resume(tmp_path):
    """ntk_dynamics.py at widths 64 and 256, 4 networks, 30 steps: every (width, seed) once; at the first step the
    networks' mean test MSE is within 3 standard errors of the NTK ensemble's expected MSE at the wider width; the
    NNGP line is there; a second call reads the runs back from the store."""
    ns = cli.load_simulation("ntk_dynamics")
    small = dict(widths=(64, 256), n_nets=4, steps=30)
    path, tables = ns["main"](full=False, outdir=tmp_path, **small)
    assert Path(path).exists() and (tmp_path / "ntk_dynamics_runs.csv").exists()
    c = tables["test MSE against step"]
    first = c[(c.width == 256) & (c.step == 1)].iloc[0]
    assert abs(first.mse_nets - first.mse_theory) <= 3 * first.mse_nets_se
    assert c.attrs["nngp_mse"] > 0
    g = tables["gap against width"]
    assert list(g.width) == [64, 256] and (g.n_nets == 4).all()
    runs = pd.read_csv(tmp_path / "ntk_dynamics_runs.csv")
    again = ns["main"](full=False, outdir=tmp_path, **small)[1]["gap against width"]
    assert len(pd.read_csv(tmp_path / "ntk_dynamics_runs.csv")) == len(runs) == 8
    pd.testing.assert_frame_equal(again, g)


@pytest.mark.slow
@pytest.mark.agreement
def test_ntk_over_data_figure(tmp_path):
    """ntk_over_data.py at its quick size (n = 400, 2 networks; ~70 s): every panel has a KS distance; on Gaussian
    data every CK law and the tanh NTK to depth 2 agree with their networks (KS ≤ 0.03; measured ≤ 0.017), and the
    ReLU NTK at depth 3 is the worst of the Gaussian panels (its finite-n departure, see test_ntk_law.py), which the
    finite-width law shrinks at least 3× (measured 0.174 → 0.032 at depth 3, 0.069 → 0.022 at depth 2)."""
    ns = cli.load_simulation("ntk_over_data")
    path, tables = ns["main"](full=False, outdir=tmp_path)
    assert Path(path).exists()
    s = tables["summary"].set_index("kernel and setting")
    assert len(s) == 16 and s.ks.notna().all()
    gauss = s[s.index.str.contains("Gaussian")]
    good = gauss[gauss.index.str.startswith("CK") | gauss.index.isin(
        [f"NTK, tanh, depth {d}, Gaussian data" for d in (1, 2)])]
    assert len(good) == 8 and (good.ks <= 0.03).all(), good
    assert gauss.ks.idxmax() == "NTK, relu, depth 3, Gaussian data"
    relu = s.loc[[f"NTK, relu, depth {d}, Gaussian data" for d in (2, 3)]]
    assert (relu.ks_finite_width <= relu.ks / 3).all(), relu
