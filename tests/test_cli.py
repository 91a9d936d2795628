"""The ``rmtnet`` command: list, run (names, --all, run-all), argument errors, pass-through of --seed/--backend/
--outdir/--full, --scheduler through rmtnet.experiments, the final report of paths; and the common signature of every
figure script (running them all is for ``rmtnet run --all``; test_simulations.py runs the quick ones)."""
import ast
import inspect
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rmtnet import backend, cli, experiments

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p for p in (ROOT / "simulations").glob("*.py") if not p.name.startswith("_"))

# A figure script in the shape of simulations/*.py: records how it was called, sweeps a trivial grid (fake_sweep),
# writes NAME.png and NAME.csv through plot.save.
FAKE = '''
"""Fake simulation {name}: records its arguments. Second sentence. Not shown by list."""
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rmtnet import experiments, plot


def _where(a, seed):
    try:
        from distributed import get_worker
        return {{"worker": get_worker().address}}
    except (ImportError, ValueError):
        return {{"worker": "local"}}


def main(full=False, outdir="figures", seed=0, backend=None):
    if {fail!r}:
        raise RuntimeError("this simulation fails on purpose")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    workers = []
    if {sweeps!r}:
        runs = experiments.sweep(_where, {{"a": [1, 2, 3]}}, seeds=[seed], store=outdir / "{name}_runs.csv",
                                 n_jobs=1, progress=False)
        workers = sorted(set(runs.worker))
    (outdir / "{name}_args.json").write_text(json.dumps(dict(full=full, seed=seed, backend=backend,
                                                             workers=workers)))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [seed, seed])
    table = pd.DataFrame({{"x": [0, 1], "y": [seed, seed]}})
    return plot.save(fig, outdir / "{name}.png", {{"line": table}}), {{"line": table}}
'''


@pytest.fixture
def fake_sims(tmp_path, monkeypatch):
    """A simulations directory with fake_plain (no sweep), fake_sweep (one sweep) and broken (raises)."""
    sims = tmp_path / "sims"
    sims.mkdir()
    for name, sweeps, fail in [("fake_plain", False, False), ("fake_sweep", True, False), ("broken", False, True)]:
        (sims / f"{name}.py").write_text(FAKE.format(name=name, sweeps=sweeps, fail=fail))
    (sims / "_helper.py").write_text('"""Not a simulation."""\n')
    monkeypatch.setattr(cli, "SIMULATIONS_DIR", sims)
    return sims


def args_of(outdir, name):
    return json.loads((Path(outdir) / f"{name}_args.json").read_text())


# -- every real script ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_every_simulation_has_the_common_main_and_a_description(path):
    """`rmtnet run NAME` calls main(full=, outdir=, seed=, backend=): every script must take them, with the
    documented defaults, import without running, and have a docstring for `rmtnet list`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert len(cli.description(path)) > 20
    main = cli.load_simulation(path.stem)["main"]
    params = list(inspect.signature(main).parameters.values())
    assert [p.name for p in params[:4]] == ["full", "outdir", "seed", "backend"]
    assert [p.default for p in params[:4]] == [False, "figures", 0, None]
    assert all(p.default is not inspect.Parameter.empty or p.kind is p.VAR_KEYWORD for p in params)
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "script_args" in calls                      # run directly, it takes the same options


# -- list -------------------------------------------------------------------------------------------------------------

def test_list_shows_every_simulation_from_its_docstring_without_running_it(capsys, monkeypatch):
    monkeypatch.setattr(cli.runpy, "run_path", lambda *a, **k: pytest.fail("list must not run the scripts"))
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for path in SCRIPTS:
        line = next(ln for ln in out.splitlines() if ln.startswith(path.stem + " "))
        assert cli.description(path)[:30] in line
    assert f"{len(SCRIPTS)} simulations" in out


def test_description_is_the_first_sentence(fake_sims):
    assert cli.description(fake_sims / "fake_plain.py") == "Fake simulation fake_plain: records its arguments."
    assert cli.names() == ["broken", "fake_plain", "fake_sweep"]     # _helper.py is not a simulation


# -- errors -----------------------------------------------------------------------------------------------------------

def test_unknown_names_exit_nonzero_with_close_matches():
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "jacobian_spectrum", "mp_and_fuss_catalan", "zzzz"])
    msg = str(e.value.code)
    assert "'jacobian_spectrum' (did you mean jacobian_spectra" in msg
    assert "no simulation named 'zzzz'\n" in msg and "rmtnet list" in msg
    assert "mp_and_fuss_catalan" not in msg            # the known name is not reported


def test_version_is_the_installed_distribution_s(capsys):
    from importlib import metadata
    import rmtnet
    try:
        expected = metadata.version("rmtnet")
    except metadata.PackageNotFoundError:
        expected = rmtnet.__version__
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"rmtnet {expected}"
    assert cli.version() == expected


def test_a_prefix_lists_every_simulation_starting_with_it_and_runs_nothing(monkeypatch):
    ran = []
    monkeypatch.setattr(cli, "_run_all", lambda chosen, a: ran.append(chosen))
    monkeypatch.setattr(cli.runpy, "run_path", lambda *a, **k: ran.append(a))
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "ntk", "--outdir", "/nonexistent/never-written"])
    msg = str(e.value.code)
    assert "no simulation named 'ntk' (did you mean ntk_dynamics, ntk_over_data, ntk_spectrum?)" in msg
    assert ran == [] and not Path("/nonexistent/never-written").exists()


def test_a_close_misspelling_is_suggested_first_and_nothing_runs(monkeypatch):
    monkeypatch.setattr(cli, "_run_all", lambda chosen, a: pytest.fail("ran a simulation"))
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "ntk_spectrm", "mp_and_fuss_catalan"])
    assert "no simulation named 'ntk_spectrm' (did you mean ntk_spectrum" in str(e.value.code)
    assert cli.suggestions("freenes", cli.names())[0] == "freeness"
    assert cli.suggestions("zzzz", cli.names()) == []


def test_the_console_refuses_an_abbreviated_option_with_status_2(tmp_path):
    """``--ful`` is not taken for ``--full`` (argparse's prefix matching is off): status 2, nothing written."""
    r = subprocess.run([sys.executable, "-m", "rmtnet.cli", "run", "nngp", "--ful", "--outdir", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "unrecognized arguments: --ful" in r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, message", [
    (["run", "nngp", "--ful"], "unrecognized arguments: --ful"),
    (["run", "nngp", "--see", "1"], "unrecognized arguments: --see"),
    (["run-all", "--out", "x"], "unrecognized arguments: --out"),
    (["--vers"], "required"),
    (["run", "nngp", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "nngp", "--backend", "torch"], "invalid choice: 'torch'"),
    (["run", "nngp", "--seed", "x"], "invalid int value: 'x'"),
    (["run"], "name at least one simulation"),
    (["run", "nngp", "--all"], "names or --all, not both"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "required"),
])
def test_bad_options_exit_2_with_the_reason(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.skipif(backend.gpu_available(), reason="checks the message given without a GPU")
def test_backend_cupy_without_a_gpu_is_a_clear_error_not_a_traceback():
    r = subprocess.run([sys.executable, "-m", "rmtnet.cli", "run", "mp_and_fuss_catalan", "--backend", "cupy"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "--backend cupy" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(SystemExit) as e:              # a script run directly: an argument error
        cli.script_args("doc", "full", ["--backend", "cupy"])
    assert e.value.code == 2


def test_a_script_run_directly_refuses_abbreviations_too(capsys):
    with pytest.raises(SystemExit) as e:
        cli.script_args("doc", "full", ["--ful"])
    assert e.value.code == 2 and "unrecognized arguments: --ful" in capsys.readouterr().err


def test_bad_scheduler_address_exits_before_running(fake_sims, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "fake_plain", "--scheduler", "no-port-here", "--outdir", str(tmp_path / "out")])
    assert "--scheduler" in str(e.value.code) and "'no-port-here'" in str(e.value.code)
    assert not (tmp_path / "out").exists()


# -- run --------------------------------------------------------------------------------------------------------------

def test_run_passes_options_and_reports_where_figures_and_tables_went(fake_sims, tmp_path, capsys):
    out = tmp_path / "figs"
    assert cli.main(["run", "fake_plain", "fake_sweep", "fake_plain.py", "--seed", "7", "--backend", "numpy",
                     "--full", "--outdir", str(out)]) == 0
    for name in ("fake_plain", "fake_sweep"):
        assert args_of(out, name) == dict(full=True, seed=7, backend="numpy",
                                          workers=["local"] if name == "fake_sweep" else [])
    text = capsys.readouterr().out
    report = text[text.index("simulation "):]
    for name in ("fake_plain", "fake_sweep"):
        assert f"figure  {out / name}.png" in report and f"table   {out / name}.csv" in report
        assert (out / f"{name}.png").exists() and (out / f"{name}.csv").exists()
    assert f"runs    {out / 'fake_sweep'}_runs.csv" in report and "fake_plain_runs" not in report
    assert report.count("figure  ") == 2               # fake_plain named twice, run once
    assert "2 of 2 simulations done in" in report


def test_run_all_and_its_alias_run_everything_and_a_failure_sets_the_status(fake_sims, tmp_path, capsys):
    for argv in (["run", "--all"], ["run-all"]):
        out = tmp_path / argv[-1].strip("-")
        assert cli.main([*argv, "--outdir", str(out)]) == 1
        text = capsys.readouterr()
        assert "this simulation fails on purpose" in text.err           # its traceback, then the others ran
        assert "2 of 3 simulations done" in text.out and "failed: broken" in text.out
        assert args_of(out, "fake_plain")["seed"] == 0 and args_of(out, "fake_sweep")["backend"] is None


def test_scheduler_sends_the_sweeps_to_dask_and_says_when_there_is_none(fake_sims, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "figs"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", scheduler_port=0, dashboard_address=None) as cluster:
        assert cli.main(["run", "fake_plain", "fake_sweep", "--scheduler", cluster.scheduler_address,
                         "--outdir", str(out)]) == 0
        workers = set(cluster.scheduler_info["workers"])
    text = capsys.readouterr().out
    assert "[fake_plain] note: no parameter sweep in this simulation, so it ran locally" in text
    assert "[fake_sweep] note" not in text
    ran_on = set(args_of(out, "fake_sweep")["workers"])
    assert ran_on and ran_on <= workers
    assert experiments.default_scheduler() is None      # the default is restored after the command


def test_script_args_applies_scheduler_through_experiments():
    try:
        a = cli.script_args("doc", "full", ["--seed", "3", "--scheduler", "tcp://127.0.0.1:8786"])
        assert a.seed == 3 and experiments.default_scheduler() == "tcp://127.0.0.1:8786"
    finally:
        experiments.use_scheduler(None)
    with pytest.raises(SystemExit) as e:
        cli.script_args("doc", "full", ["--scheduler", "nope"])
    assert e.value.code == 2


def test_figures_script_runs_every_simulation_on_every_core():
    """The command line of scripts/figures.sh, parsed by the command's own parser: run --all, at quick sizes, with
    --jobs left at the available cores."""
    line = next(ln for ln in (ROOT / "scripts" / "figures.sh").read_text().splitlines() if "rmtnet.cli" in ln)
    words = shlex.split(line)
    argv = [w for w in words[words.index("rmtnet.cli") + 1:] if w != '$@']
    a = cli._parser()[0].parse_args(argv)
    assert (a.cmd, a.all, a.full, a.jobs) == ("run", True, False, cli.available_cores())
    assert cli._chosen(a, None) == cli.scripts()


def test_jobs_run_concurrently_and_start_the_longest_first(fake_sims, tmp_path, capsys):
    """--jobs 2: two worker processes; the second run reads the first's times and starts the slowest first; each
    simulation's report is printed whole, and the failure still sets the status."""
    out = tmp_path / "figs"
    assert cli.main(["run", "--all", "--jobs", "2", "--outdir", str(out)]) == 1
    times = json.loads((out / cli.TIMES_FILE).read_text())["quick"]
    assert set(times) == {"fake_plain", "fake_sweep"}               # the failed one has no time
    text = capsys.readouterr()
    assert "2 at a time" in text.out and "this simulation fails on purpose" in text.err
    assert "2 of 3 simulations done" in text.out and "failed: broken" in text.out
    a = cli._parser()[0].parse_args(["run", "--all", "--outdir", str(out)])
    times["fake_plain"] = 100.0
    (out / cli.TIMES_FILE).write_text(json.dumps({"quick": times}))
    assert [p.stem for p in sorted(cli.scripts(), key=lambda p: -cli._read_times(a).get(p.stem, float("inf")))] \
        == ["broken", "fake_plain", "fake_sweep"]                  # unknown first, then the slowest


THREADS = '''
"""Reports the thread limits its process runs under."""
import json, os
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from rmtnet import experiments


def main(full=False, outdir="figures", seed=0, backend=None):
    np.linalg.eigvalsh(np.eye(50))                       # BLAS loaded and used
    pools = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
    Path(outdir).mkdir(parents=True, exist_ok=True)
    (Path(outdir) / f"{Path(__file__).stem}.json").write_text(json.dumps(dict(
        pools=pools, omp=os.environ.get("OMP_NUM_THREADS"), cores=experiments.available_cores(),
        bars=os.environ.get("TQDM_DISABLE"))))
'''


def test_jobs_limit_every_thread_pool_of_their_workers(tmp_path, monkeypatch):
    """Each of --jobs 2's workers runs BLAS/OpenMP with cores // 2 threads (at least 1), and its sweeps with that many
    workers; without the limit two workers would each start one BLAS thread per core and oversubscribe them. Their
    progress bars are off (TQDM_DISABLE=1): two workers' bars on one terminal would overwrite each other and the
    parent's."""
    sims = tmp_path / "sims"
    sims.mkdir()
    for name in ("threads_a", "threads_b"):
        (sims / f"{name}.py").write_text(THREADS)
    monkeypatch.setattr(cli, "SIMULATIONS_DIR", sims)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    out = tmp_path / "out"
    assert cli.main(["run", "--all", "--jobs", "2", "--outdir", str(out)]) == 0
    share = max(1, cli.available_cores() // 2)
    for name in ("threads_a", "threads_b"):
        seen = json.loads((out / f"{name}.json").read_text())
        assert seen["pools"] and set(seen["pools"].values()) == {share}, seen
        assert seen["omp"] == str(share) and seen["cores"] == share
        assert seen["bars"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "7"                    # this process's own setting is restored


def test_a_first_run_orders_by_the_times_shipped_with_the_scripts(fake_sims, tmp_path):
    """Without a times file in --outdir, simulations/times.json orders the run; the outdir's own times win."""
    (fake_sims / cli.SHIPPED_TIMES).write_text(json.dumps({"quick": {"fake_plain": 5.0, "fake_sweep": 50.0}}))
    a = cli._parser()[0].parse_args(["run", "--all", "--outdir", str(tmp_path / "new")])
    assert cli._read_times(a) == {"fake_plain": 5.0, "fake_sweep": 50.0}
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / cli.TIMES_FILE).write_text(json.dumps({"quick": {"fake_plain": 500.0}}))
    assert cli._read_times(a) == {"fake_plain": 500.0, "fake_sweep": 50.0}


def test_the_shipped_times_cover_every_simulation():
    times = json.loads((ROOT / "simulations" / cli.SHIPPED_TIMES).read_text())["quick"]
    assert set(times) == {p.stem for p in SCRIPTS} and all(t > 0 for t in times.values())


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_integer(value, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--all", "--jobs", value])
    assert e.value.code == 2 and "--jobs" in capsys.readouterr().err


@pytest.mark.slow          # one real figure through the console entry point (~15-60 s on 2 cores)
def test_console_runs_a_real_simulation_into_outdir(tmp_path):
    script = textwrap.dedent("""
        import sys
        from rmtnet.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    r = subprocess.run([sys.executable, "-c", script, "run", "mp_and_fuss_catalan", "--seed", "1", "--outdir",
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"figure  {tmp_path / 'mp_and_fuss_catalan.png'}" in r.stdout
    assert f"table   {tmp_path / 'mp_and_fuss_catalan.csv'}" in r.stdout
    assert (tmp_path / "mp_and_fuss_catalan.png").exists() and (tmp_path / "mp_and_fuss_catalan.csv").exists()
