"""Bad input, round two — files: every output path goes through one check before any work (rmtnet._io.output_path),
runs stores survive CRLF line endings and name the file and line of a corrupt line, sweeps refuse NaN in their grid
and flag NaN results, checkpoints that cannot be read say which file and what to do, and ``rmtnet run --outdir X``
refuses an unusable X before computing anything. One test per case found by the probe; each asserts that the
message names the argument (or the file and line) and what is allowed or how to recover, and that nothing was
deleted."""
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rmtnet import cli, figures
from rmtnet._io import atomic_write, output_path
from rmtnet.experiments import SweepError, read_store, sweep
from rmtnet.nets.data import Dataset
from rmtnet.nets.training import train

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
UNWRITABLE = Path("/proc/rmtnet-no-such-folder")    # no process, root included, can create files in /proc
needs_proc = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")


def _data():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 3, generator=g), torch.randint(0, 2, (32,), generator=g)
    return Dataset(x[:24], y[:24], x[24:], y[24:], n_classes=2, name="random", shape=(3,))


def _train(**kw):
    torch.manual_seed(0)
    return train(torch.nn.Linear(3, 2), _data(), **{"epochs": 1, "batch_size": 8, "progress": False, **kw})


def _score(a, seed):
    return {"y": a * 10 + seed}


# ---------------------------------------------------------------- paths: one check for every writer, before work

def test_same_path_for_checkpoint_and_metrics_is_refused_naming_both(tmp_path):
    same = tmp_path / "run.out"
    with pytest.raises(ValueError, match=r"metrics and checkpoint must be different files, got '.*run\.out'"):
        _train(checkpoint=same, metrics=str(same))
    assert not same.exists()                                     # refused before the first epoch


def test_same_file_by_another_spelling_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"\bmetrics\b and \bcheckpoint\b must be different files"):
        _train(checkpoint="sub/../run.pt", metrics=tmp_path / "run.pt")


def test_a_file_standing_where_a_directory_is_wanted_names_the_argument(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    with pytest.raises(ValueError, match=r"checkpoint='.*blocker/sub/ck\.pt' cannot be created: '.*blocker' is "
                                         r"a file, not a directory"):
        _train(checkpoint=blocker / "sub" / "ck.pt")
    with pytest.raises(ValueError, match=r"\bstore\b='.*blocker/runs\.csv' cannot be created"):
        sweep(_score, {"a": [1]}, store=blocker / "runs.csv", progress=False)
    assert blocker.read_text() == "a file"


def test_a_directory_where_a_file_is_wanted_names_the_argument(tmp_path):
    for kw, name in ((dict(metrics=tmp_path), "metrics"), (dict(checkpoint=str(tmp_path)), "checkpoint")):
        with pytest.raises(ValueError, match=rf"^{name} must be a file path, got the directory '.*'"):
            _train(**kw)
    with pytest.raises(ValueError, match=r"^store must be a file path, got the directory"):
        sweep(_score, {"a": [1]}, store=tmp_path, progress=False)


@needs_proc
def test_an_unwritable_location_is_refused_before_any_work_naming_it():
    """/proc takes no new files, for root too (a chmod'ed folder does not stop root)."""
    calls = []
    for call, name in ((lambda: _train(checkpoint=UNWRITABLE / "ck.pt"), "checkpoint"),
                       (lambda: _train(metrics=UNWRITABLE / "m.csv"), "metrics"),
                       (lambda: sweep(lambda a, seed: calls.append(a) or {"y": 1}, {"a": [1]},
                                      store=UNWRITABLE / "runs.csv", progress=False), "store"),
                       (lambda: figures.output_dir(UNWRITABLE), "outdir")):
        with pytest.raises(ValueError, match=rf"^{name}='/proc/rmtnet-no-such-folder.*' cannot be created: no "
                                             r"permission to create files in '/proc'.*writable directory"):
            call()
    assert calls == []                                           # the sweep ran nothing


@pytest.mark.skipif(ROOT_USER or sys.platform == "win32", reason="root writes into read-only folders")
def test_a_read_only_directory_is_refused_naming_it(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(ValueError, match=r"^checkpoint='.*ro/ck\.pt' cannot be created: no permission"):
            _train(checkpoint=folder / "ck.pt")
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("bad", [b"run.pt", 3, 1.5, ["run.pt"]])
def test_a_non_path_is_a_type_error_naming_the_argument(bad):
    for call, name in ((lambda: _train(checkpoint=bad), "checkpoint"), (lambda: _train(metrics=bad), "metrics"),
                       (lambda: sweep(_score, {"a": [1]}, store=bad, progress=False), "store"),
                       (lambda: read_store(bad), "store"), (lambda: figures.output_dir(bad), "outdir")):
        with pytest.raises(TypeError, match=rf"^{name} must be a path \(str or os\.PathLike\), got"):
            call()


def test_none_and_empty_paths_are_refused_where_a_path_is_needed(tmp_path):
    with pytest.raises(TypeError, match=r"^store must be a path"):
        read_store(None)
    with pytest.raises(TypeError, match=r"^outdir must be a path"):
        figures.output_dir(None)
    with pytest.raises(ValueError, match=r"^checkpoint must be a path \(a non-empty str"):
        _train(checkpoint="")


def test_bytes_path_names_the_way_out():
    with pytest.raises(TypeError, match=r"decode a bytes path first"):
        output_path("checkpoint", b"x.pt")


def test_atomic_write_names_the_file_not_its_temporary(tmp_path):
    target = tmp_path / "out.csv"

    def fails(tmp):
        raise PermissionError(13, "Permission denied", tmp)
    with pytest.raises(OSError, match=r"cannot write '.*out\.csv': Permission denied") as err:
        atomic_write(target, fails)
    assert ".tmp" not in str(err.value) and os.listdir(tmp_path) == []


# ---------------------------------------------------------------- runs stores

def _crlf_store(tmp_path):
    """A store of runs a = 1, 2 (seed 0) as sweep writes it, then with its lines ended by CRLF (saved on Windows)."""
    store = tmp_path / "runs.csv"
    sweep(_score, {"a": [1, 2]}, store=store, progress=False)
    store.write_bytes(store.read_bytes().replace(b"\n", b"\r\n"))
    return store


def test_a_crlf_store_is_not_damaged_and_the_sweep_returns_every_run(tmp_path):
    store = _crlf_store(tmp_path)
    before = store.read_bytes()
    assert read_store(store)["y"].tolist() == [10, 20]
    table = sweep(_score, {"a": [1, 2, 3]}, store=store, progress=False)
    assert table["a"].tolist() == [1, 2, 3] and table["y"].tolist() == [10, 20, 30]      # not one run short
    after = store.read_bytes()
    assert after.startswith(before)                              # the old runs untouched
    assert after.count(b"\r\n") == after.count(b"\n") == 4       # the new line in the file's own line ends
    assert len(read_store(store)) == 3


def test_a_crlf_store_widened_by_a_new_result_column_keeps_every_run(tmp_path):
    store = _crlf_store(tmp_path)
    table = sweep(lambda a, seed: {"y": a * 10 + seed, "z": 1.0}, {"a": [3]}, store=store, progress=False)
    assert table["y"].tolist() == [30]
    assert read_store(store)["a"].tolist() == [1, 2, 3]


def test_a_crlf_store_with_a_truncated_last_line_resumes(tmp_path):
    store = _crlf_store(tmp_path)
    store.write_bytes(store.read_bytes() + b"3,0,3")             # a run killed mid-write
    assert len(read_store(store)) == 2
    with pytest.warns(RuntimeWarning, match=r"cut its incomplete last line"):
        assert sweep(_score, {"a": [1, 2, 3]}, store=store, progress=False)["y"].tolist() == [10, 20, 30]
    assert store.read_bytes().count(b"\r\n") == store.read_bytes().count(b"\n") == 4


def test_a_sweep_pointed_at_an_ordinary_csv_is_refused_naming_store(tmp_path):
    store = tmp_path / "data.csv"
    pd.DataFrame({"x": [1, 2], "y": [3, 4]}).to_csv(store, index=False)
    before = store.read_bytes()
    for call in (lambda: sweep(_score, {"a": [1]}, store=store, progress=False), lambda: read_store(store)):
        with pytest.raises(ValueError, match=r"^store='.*data\.csv' is not a runs store of rmtnet\.experiments\."
                                             r"sweep: its first line has no 'run_key' column \(a store's header"):
            call()
    assert store.read_bytes() == before


def _corrupt(tmp_path, old: bytes, new: bytes):
    store = tmp_path / "runs.csv"
    sweep(_score, {"a": [1, 2, 3]}, store=store, progress=False)
    lines = store.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(old, new, 1)                     # line 3 of the file: the run a = 2
    store.write_bytes(b"\n".join(lines))
    return store, store.read_bytes()


def test_a_corrupt_store_line_bad_json_names_the_file_and_line(tmp_path):
    store, before = _corrupt(tmp_path, b'""a"": 2', b'""a"": 2,,')
    for call in (lambda: read_store(store), lambda: sweep(_score, {"a": [1, 2, 3]}, store=store, progress=False)):
        with pytest.raises(ValueError, match=r"runs store '.*runs\.csv' is corrupt: line 3: its run_config is not "
                                             r"JSON .*nothing was deleted: fix line 3 of '.*runs\.csv' or delete"):
            call()
    assert store.read_bytes() == before


def test_a_corrupt_store_line_bad_utf8_names_the_file_and_line(tmp_path):
    store, before = _corrupt(tmp_path, b"2,0", b"\xff\xfe,0")
    for call in (lambda: read_store(store), lambda: sweep(_score, {"a": [4]}, store=store, progress=False)):
        with pytest.raises(ValueError, match=r"runs store '.*runs\.csv' is corrupt: line 3 is not UTF-8 text .*"
                                             r"nothing was deleted"):
            call()
    assert store.read_bytes() == before


def test_a_store_line_with_extra_fields_names_the_file_and_line(tmp_path):
    store, before = _corrupt(tmp_path, b"2,0", b"2,0,extra")
    with pytest.raises(ValueError, match=r"runs store '.*' is corrupt: line 3: it has \d+ fields, the header \d+"):
        read_store(store)
    assert store.read_bytes() == before


def test_read_store_of_a_missing_file_raises_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"store='.*nowhere\.csv': no such file"):
        read_store(tmp_path / "nowhere.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert read_store(empty).empty                               # an empty file is a store with no runs yet


# ---------------------------------------------------------------- NaN in sweeps

@pytest.mark.parametrize("bad", [float("nan"), np.float64("inf"), -np.inf])
def test_a_sweep_refuses_nan_and_inf_in_its_grid_naming_the_key(bad, tmp_path):
    store = tmp_path / "runs.csv"
    with pytest.raises(ValueError, match=r"^grid\['lr'\] must hold finite values, got (nan|inf|-inf)"):
        sweep(_score, {"a": [1], "lr": [0.1, bad]}, store=store, progress=False)
    with pytest.raises(ValueError, match=r"^grid\['lr'\] must hold finite values"):
        sweep(_score, [{"a": 1, "lr": bad}], store=None, progress=False)
    assert not store.exists()


def test_a_nan_result_is_stored_and_flagged_naming_the_run(tmp_path):
    store = tmp_path / "runs.csv"

    def fn(a, seed):
        return {"loss": float("nan") if a == 2 else 0.5, "acc": 1.0 / 0.0 if a == 3 else 1.0} if a != 3 else \
            {"loss": 0.1, "acc": float("inf")}
    with pytest.warns(RuntimeWarning, match=r"2 run\(s\) of the sweep have a NaN or infinite result") as record:
        table = sweep(fn, {"a": [1, 2, 3]}, seeds=[7], store=store, progress=False)
    message = str(record[0].message)
    assert "{'a': 2} seed=7: loss=nan" in message and "{'a': 3} seed=7: acc=inf" in message
    assert "'a': 1}" not in message
    assert np.isnan(table["loss"][1]) and np.isinf(read_store(store)["acc"][2])      # stored as they are
    with pytest.warns(RuntimeWarning, match=r"\{'a': 2\} seed=7: loss=nan"):         # a resumed sweep says it again
        sweep(fn, {"a": [1, 2, 3]}, seeds=[7], store=store, progress=False)


def test_nan_results_can_be_ignored_or_made_failures(tmp_path):
    def fn(a, seed):
        return {"loss": float("nan") if a == 2 else 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(sweep(fn, {"a": [1, 2]}, store=None, progress=False, nonfinite="ignore")) == 2
    store = tmp_path / "runs.csv"
    with pytest.raises(SweepError, match=r"(?s)1 run\(s\) of the sweep failed.*\{'a': 2\} seed=0: FloatingPointError: "
                                         r"results not finite: \{'loss': nan\}"):
        sweep(fn, {"a": [1, 2]}, store=store, progress=False, nonfinite="raise")
    assert read_store(store)["a"].tolist() == [1]                 # nothing stored for the failed run
    with pytest.raises(ValueError, match=r"^nonfinite must be one of \('warn', 'ignore', 'raise'\), got 'no'"):
        sweep(fn, {"a": [1]}, store=None, progress=False, nonfinite="no")


def test_finite_results_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep(lambda a, seed: {"y": a, "ok": True, "tag": "x"}, {"a": [1, 2]}, store=None, progress=False)


# ---------------------------------------------------------------- checkpoints

def _bad_checkpoint(tmp_path, content):
    ckpt = tmp_path / "run.pt"
    if isinstance(content, bytes):
        ckpt.write_bytes(content)
    else:
        torch.save(content, ckpt)
    return ckpt, ckpt.read_bytes()


@pytest.mark.parametrize("content, why", [
    (b"this is a text file\n", r"truncated or corrupt, or not a file written by rmtnet\.nets\.train"),
    (b"", r"truncated or corrupt"),
    ({"weights": torch.zeros(2)}, r"not a checkpoint of rmtnet\.nets\.train, or of another version of it: missing "
                                  r"config, epoch"),
    ([1, 2, 3], r"not a checkpoint of rmtnet\.nets\.train.*missing \(not a dict\)"),
])
def test_a_checkpoint_that_cannot_be_read_names_the_file_and_the_way_out(tmp_path, content, why):
    ckpt, before = _bad_checkpoint(tmp_path, content)
    with pytest.raises(RuntimeError, match=rf"^checkpoint .*run\.pt cannot be read \({why}.*\); nothing was "
                                           r"deleted: delete it to restart .*or give another checkpoint path"):
        _train(checkpoint=ckpt)
    assert ckpt.read_bytes() == before                           # nothing deleted


def test_a_checkpoint_of_other_arguments_or_another_version_names_the_way_out(tmp_path):
    ckpt = tmp_path / "run.pt"
    _train(checkpoint=ckpt)
    state = torch.load(ckpt, weights_only=True)
    state["config"]["loss"] = "cross_entropy(v0)"                 # as another version of train would name it
    torch.save(state, ckpt)
    before = ckpt.read_bytes()
    with pytest.raises(ValueError, match=r"^checkpoint .*run\.pt was written with other arguments .*'loss'.*use "
                                         r"another checkpoint path .*delete it yourself .*nothing was deleted"):
        _train(checkpoint=ckpt)
    assert ckpt.read_bytes() == before


def test_a_checkpoint_of_another_model_names_the_file(tmp_path):
    ckpt = tmp_path / "run.pt"
    _train(checkpoint=ckpt)
    before = ckpt.read_bytes()
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match=r"(?s)^checkpoint .*run\.pt cannot be read \(it holds another model "
                                           r"or optimiser: .*nothing was deleted"):
        train(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)), _data(), epochs=1, batch_size=8,
              progress=False, checkpoint=ckpt)
    assert ckpt.read_bytes() == before


# ---------------------------------------------------------------- the command line and the figure scripts

def _never_computed(monkeypatch):
    def computed(*args, **kwargs):
        raise AssertionError("a simulation ran although --outdir was unusable")
    monkeypatch.setattr(cli.runpy, "run_path", computed)


def test_cli_outdir_that_is_a_file_fails_at_once_without_computing(tmp_path, monkeypatch, capsys):
    _never_computed(monkeypatch)
    blocker = tmp_path / "figs"
    blocker.write_text("a file")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", cli.names()[0], "--outdir", str(blocker), "--jobs", "1"])
    assert exit_.value.code == 2
    assert "error: --outdir must be a directory, got the file '" in capsys.readouterr().err
    assert blocker.read_text() == "a file"


def test_cli_outdir_under_a_file_fails_at_once_without_computing(tmp_path, monkeypatch, capsys):
    _never_computed(monkeypatch)
    blocker = tmp_path / "figs"
    blocker.write_text("a file")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run-all", "--outdir", str(blocker / "sub"), "--jobs", "1"])
    assert exit_.value.code == 2
    assert "error: --outdir='" in capsys.readouterr().err


@needs_proc
def test_cli_unwritable_outdir_fails_at_once_without_computing(monkeypatch, capsys):
    _never_computed(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", cli.names()[0], "--outdir", str(UNWRITABLE), "--jobs", "1"])
    assert exit_.value.code == 2
    assert "--outdir='/proc/rmtnet-no-such-folder' cannot be created: no permission" in capsys.readouterr().err


def test_script_outdir_is_checked_by_its_own_arguments(tmp_path, capsys):
    blocker = tmp_path / "figs"
    blocker.write_text("a file")
    with pytest.raises(SystemExit) as exit_:
        cli.script_args("doc", "full", ["--outdir", str(blocker)])
    assert exit_.value.code == 2 and "--outdir must be a directory" in capsys.readouterr().err


def test_figures_make_checks_outdir_before_computing(tmp_path):
    blocker = tmp_path / "figs"
    blocker.write_text("a file")

    def compute(size, seed=0, backend=None):
        raise AssertionError("computed although outdir was unusable")
    with pytest.raises(ValueError, match=r"^outdir must be a directory, got the file '.*figs'"):
        figures.make("demo", compute, None, outdir=blocker)


def test_figures_write_refuses_a_directory_standing_at_its_output(tmp_path):
    from matplotlib.figure import Figure
    (tmp_path / "demo.png").mkdir()
    with pytest.raises(ValueError, match=r"^outdir must be a file path, got the directory '.*demo\.png'"):
        figures.write(Figure(), tmp_path, "demo", {"a": pd.DataFrame({"x": [1.0]})})


def test_the_store_format_is_unchanged_for_lf_stores(tmp_path):
    """The path checks and the CRLF handling leave a new store as it was: LF line ends, run_key last."""
    store = tmp_path / "runs.csv"
    sweep(_score, {"a": [1]}, store=store, progress=False)
    text = store.read_bytes().decode()
    assert "\r" not in text and text.splitlines()[0] == "a,seed,y,run_config,run_key"
    assert json.loads(pd.read_csv(store)["run_config"][0]) == {"a": 1}


def test_a_store_saved_without_a_final_line_break_keeps_its_last_run(tmp_path):
    """An editor that drops the final line break must not cost the last run (it was cut as a truncated write)."""
    for ending in (b"\n", b"\r\n"):
        store = tmp_path / f"runs{len(ending)}.csv"
        sweep(_score, {"a": [1, 2]}, store=store, progress=False)
        store.write_bytes(store.read_bytes().replace(b"\n", ending).removesuffix(ending))
        assert read_store(store)["a"].tolist() == [1, 2]
        calls = []
        table = sweep(lambda a, seed: calls.append(a) or _score(a, seed), {"a": [1, 2, 3]}, store=store,
                      progress=False)
        assert calls == [3] and table["y"].tolist() == [10, 20, 30]
        assert store.read_bytes().count(ending) == 4 and store.read_bytes().endswith(ending)


def test_a_truncated_last_line_is_cut_with_a_warning_quoting_it(tmp_path):
    store = tmp_path / "runs.csv"
    sweep(_score, {"a": [1]}, store=store, progress=False)
    store.write_bytes(store.read_bytes() + b"2,0,20,")                # a run killed mid-write
    with pytest.warns(RuntimeWarning, match=r"runs store '.*runs\.csv': cut its incomplete last line .*b'2,0,20,'"):
        assert sweep(_score, {"a": [1, 2]}, store=store, progress=False)["y"].tolist() == [10, 20]


def test_a_one_line_file_without_a_line_break_is_not_taken_for_an_empty_store(tmp_path):
    store = tmp_path / "notes.csv"
    store.write_bytes(b"x,y")
    with pytest.raises(ValueError, match=r"^store='.*notes\.csv' is not a runs store .*no complete line.*nothing "
                                         r"was deleted"):
        sweep(_score, {"a": [1]}, store=store, progress=False)
    assert store.read_bytes() == b"x,y"


def test_read_store_of_a_directory_is_refused_naming_store(tmp_path):
    with pytest.raises(ValueError, match=r"^store must be a runs store file, got the directory"):
        read_store(tmp_path)


def test_plot_save_checks_its_path_before_drawing(tmp_path):
    """Before: an existing folder was accepted as the PNG's path, bytes/None/int gave TypeErrors naming nothing and a
    file standing where a folder goes gave a raw FileExistsError."""
    from matplotlib.figure import Figure
    from rmtnet import plot
    (tmp_path / "blocker").write_text("x")
    for bad, match in [(tmp_path, "path must be a file path, got the directory"), (b"x.png", "^path must be"),
                       (None, "^path must be"), (3, "^path must be"), (tmp_path / "blocker" / "f.png", "path")]:
        with pytest.raises(ValueError, match=match):
            plot.save(Figure(), bad)
    assert plot.save(Figure(), tmp_path / "new" / "f.png").is_file()


def test_a_sweep_fn_returning_a_vector_names_fn(tmp_path):
    """Before: 'result v must be a scalar' in the SweepError, which did not say the value came from fn."""
    with pytest.raises(SweepError, match=r"fn's result v must be a scalar"):
        sweep(lambda a, seed: {"v": np.ones(3)}, {"a": [1]}, store=tmp_path / "runs.csv", progress=False)


@pytest.mark.parametrize("stored", [True, False])
def test_a_result_only_other_runs_return_is_not_flagged(tmp_path, stored):
    """A column one run returns is NaN in the table for the runs that do not return it: that is no NaN result
    (the EMN and subnetwork-ensemble sweeps were flagged for columns that did not apply to them)."""
    def fn(a, seed):
        return {"x": 1.0} if a == 1 else {"x": 2.0, "y": 3.0 if a == 2 else float("nan")}
    store = tmp_path / "runs.csv" if stored else None
    with pytest.warns(RuntimeWarning, match=r"1 run\(s\) of the sweep have a NaN") as record:
        table = sweep(fn, {"a": [1, 2, 3]}, store=store, progress=False)
    assert "{'a': 3} seed=0: y=nan" in str(record[0].message) and "'a': 1}" not in str(record[0].message)
    assert np.isnan(table["y"][0]) and np.isnan(table["y"][2])


@pytest.mark.parametrize("seeds", [np.array(0.5), torch.tensor(1.5), np.array(np.inf)])
def test_sweep_seeds_given_a_0d_float_are_refused_naming_seeds(seeds):
    """Found by the fuzz's stress profile: a 0-d float array or tensor gave 'iteration over a 0-d array'."""
    with pytest.raises(ValueError, match=r"^seeds must be an integer or a non-empty list of integers"):
        sweep(lambda a, seed: {"v": 1.0}, {"a": [1]}, seeds=seeds, store=None, progress=False)
