import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from rmtnet.experiments import SweepError, expand_grid, read_store, run_key, sweep

REPO = Path(__file__).resolve().parents[1]
GRID = {"a": [1, 2], "b": ["x", "y", "z"]}


def score(a, b, seed):
    """Module level, so that worker processes can unpickle it."""
    return {"value": 10 * a + seed + 0.1, "label": f"{b}!", "third": 1 / 3 * a}


def failing_on_y(a, b, seed):
    if b == "y":
        raise RuntimeError(f"no y please (a={a})")
    return score(a, b, seed)


def counted(calls):
    def fn(**kwargs):
        calls.append(kwargs)
        return score(**kwargs)
    return fn


def sorted_table(table):
    return table.sort_values("run_key").reset_index(drop=True)


def test_cartesian_grid_with_seeds_runs_everything_once(tmp_path):
    calls = []
    table = sweep(counted(calls), GRID, seeds=(0, 1), store=tmp_path / "r.csv", progress=False)
    assert len(calls) == len(table) == 12
    assert list(table.columns) == ["a", "b", "seed", "value", "label", "third", "run_key"]
    # grid order: configurations (last key fastest), then seeds
    assert list(zip(table["a"], table["b"], table["seed"]))[:4] == [(1, "x", 0), (1, "x", 1), (1, "y", 0),
                                                                   (1, "y", 1)]
    assert not table.duplicated(["a", "b", "seed"]).any() and table["run_key"].is_unique
    assert (table["value"] == 10 * table["a"] + table["seed"] + 0.1).all()
    assert (table["third"] == table["a"] / 3).all()  # floats come back from the CSV exactly
    assert (table["label"] == table["b"] + "!").all()


def test_grid_forms_and_keys():
    assert expand_grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand_grid([{"a": 1}, {"b": 2.5}]) == [{"a": 1}, {"b": 2.5}]
    assert expand_grid({}) == [{}]
    # stable: a fixed value (stores written today must be recognised by later versions), independent of key order
    assert run_key({"a": 1, "b": "x"}, 0) == run_key({"b": "x", "a": 1}, 0) == "af1ce0c54dbddfa3"
    assert run_key({"a": 1}, 0) != run_key({"a": 1.0}, 0) != run_key({"a": 1}, 1)
    for bad in ({"a": 3}, {"seed": [1]}, "abc", [{"a": [1, 2]}], {"a": [object()]}):
        with pytest.raises(ValueError, match="grid"):
            expand_grid(bad)
    with pytest.raises(ValueError, match="same run twice"):
        sweep(score, [{"a": 1, "b": "x"}, {"a": 1, "b": "x"}], store=None, progress=False)
    with pytest.raises(ValueError, match="on_error"):
        sweep(score, GRID, store=None, on_error="ignore")
    with pytest.raises(ValueError, match="n_jobs"):
        sweep(score, GRID, store=None, n_jobs=0)


def test_restart_skips_finished_runs(tmp_path):
    store = tmp_path / "r.csv"
    first = []
    sweep(counted(first), {"a": [1], "b": ["x", "y"]}, seeds=(0, 1), store=store, progress=False)
    assert len(first) == 4
    second = []
    table = sweep(counted(second), {"a": [1, 2], "b": ["x", "y"]}, seeds=(0, 1), store=store, progress=False)
    assert len(second) == 4 and {c["a"] for c in second} == {2}  # only the new configurations ran
    assert len(table) == 8 and table["run_key"].is_unique
    third = []
    again = sweep(counted(third), {"a": [1, 2], "b": ["x", "y"]}, seeds=(0, 1), store=store, progress=False)
    assert third == []
    pd.testing.assert_frame_equal(again, table)
    # a sweep over part of the store returns only its own runs
    assert len(sweep(score, {"a": [2], "b": ["y"]}, seeds=(1,), store=store, progress=False)) == 1


def test_truncated_last_line_is_dropped_and_repaired(tmp_path):
    store = tmp_path / "r.csv"
    sweep(score, {"a": [1], "b": ["x", "y"]}, store=store, progress=False)
    with open(store, "a") as f:
        f.write("2,z,0,20.1,z!,0.66")  # a run killed mid-write: no line break
    assert len(read_store(store)) == 2
    calls = []
    table = sweep(counted(calls), {"a": [1, 2], "b": ["x", "y", "z"]}, store=store, progress=False)
    assert len(calls) == 4 and len(table) == 6  # the truncated run (a=2, z) was run again
    text = store.read_text()
    assert text.endswith("\n") and "0.66\n" not in text and len(text.splitlines()) == 7  # header + 6 runs
    assert len(pd.read_csv(store)) == 6  # the file is a clean CSV again


def test_a_wider_result_widens_the_header(tmp_path):
    def fn(kind, seed):
        return {"loss": 1.0 * seed} if kind == "plain" else {"loss": 2.0, "extra": "yes"}

    store = tmp_path / "r.csv"
    table = sweep(fn, [{"kind": "plain"}, {"kind": "fancy"}], seeds=(0, 1), store=store, progress=False)
    assert list(table.columns) == ["kind", "seed", "loss", "run_key", "extra"]
    assert table["extra"].isna().tolist() == [True, True, False, False]


def test_sigkilled_sweep_resumes_with_every_run_once(tmp_path):
    store = tmp_path / "killed.csv"
    grid = {"a": list(range(6)), "b": ["x", "y"]}
    script = textwrap.dedent(f"""
        import time
        from rmtnet.experiments import sweep

        def slow(a, b, seed):
            time.sleep(0.1)
            return {{"value": 10 * a + seed}}

        sweep(slow, {grid!r}, seeds=(0, 1), store={str(store)!r}, progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if store.exists() and store.read_text().count("\n") >= 1 + 5:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep finished (or died) before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = set(read_store(store)["run_key"])
    assert 5 <= len(done) < 24

    calls = []

    def fast(a, b, seed):
        calls.append((a, b, seed))
        return {"value": 10 * a + seed}

    table = sweep(fast, grid, seeds=(0, 1), store=store, progress=False)
    assert len(calls) == 24 - len(done)
    assert len(table) == 24 and not table.duplicated(["a", "b", "seed"]).any()
    assert (table["value"] == 10 * table["a"] + table["seed"]).all()
    raw = pd.read_csv(store, dtype={"run_key": str})
    assert len(raw) == 24 and raw["run_key"].is_unique  # the file itself holds every run exactly once


def test_failures_are_collected_and_retried(tmp_path):
    store = tmp_path / "r.csv"
    with pytest.raises(SweepError, match=r"(?s)2 run\(s\).*'b': 'y'.*no y please") as info:
        sweep(failing_on_y, GRID, store=store, progress=False)
    assert len(info.value.failures) == 2
    assert len(read_store(store)) == 4  # the other runs are stored
    calls = []
    table = sweep(counted(calls), GRID, store=store, progress=False)
    assert [c["b"] for c in calls] == ["y", "y"] and len(table) == 6

    with pytest.raises(RuntimeError, match="no y please"):
        sweep(failing_on_y, GRID, store=None, on_error="raise", progress=False)
    with pytest.warns(RuntimeWarning, match="2 run"):
        table = sweep(failing_on_y, GRID, store=None, on_error="skip", progress=False)
    assert len(table) == 4 and "y" not in set(table["b"])


def test_results_must_be_scalars_without_name_clashes():
    with pytest.raises(SweepError, match="must be a scalar"):
        sweep(lambda a, seed: {"v": [a]}, {"a": [1]}, store=None, progress=False)
    with pytest.raises(SweepError, match="must not reuse"):
        sweep(lambda a, seed: {"a": a}, {"a": [1]}, store=None, progress=False)
    one_row = sweep(lambda a, seed: pd.DataFrame({"v": [2.0 * a]}), {"a": [1, 2]}, store=None, progress=False)
    assert one_row["v"].tolist() == [2.0, 4.0]


def test_process_pool_gives_the_same_table(tmp_path):
    serial = sweep(score, GRID, seeds=(0, 1), store=tmp_path / "serial.csv", progress=False)
    pooled = sweep(score, GRID, seeds=(0, 1), store=tmp_path / "pooled.csv", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(sorted_table(pooled), sorted_table(serial), check_exact=True)
    pd.testing.assert_frame_equal(pooled, serial, check_exact=True)  # returned in grid order either way


class FakeDaskClient:
    """Stands in for dask.distributed.Client: its own submit() returns non-concurrent futures, and
    get_executor() gives the concurrent.futures view that sweep must use."""

    def __init__(self):
        self.pool = cf.ThreadPoolExecutor(2)

    def submit(self, *args, **kwargs):
        raise AssertionError("sweep must go through get_executor()")

    def get_executor(self):
        return self.pool


def test_executor_hook(tmp_path):
    serial = sweep(score, GRID, store=tmp_path / "serial.csv", progress=False)
    with cf.ThreadPoolExecutor(3) as pool:
        threaded = sweep(score, GRID, store=tmp_path / "threads.csv", executor=pool, progress=False)
        assert not pool._shutdown  # the caller keeps ownership
    pd.testing.assert_frame_equal(threaded, serial, check_exact=True)
    client = FakeDaskClient()
    try:
        dask_like = sweep(score, GRID, store=tmp_path / "dask.csv", executor=client, progress=False)
    finally:
        client.pool.shutdown()
    pd.testing.assert_frame_equal(dask_like, serial, check_exact=True)
    with pytest.raises(ValueError, match="executor"):
        sweep(score, GRID, store=None, executor=object(), progress=False)


def test_available_cores_is_the_share_rmtnet_run_gives(monkeypatch):
    """n_jobs=-1 means the cores this process may use: $RMTNET_CORES (set by `rmtnet run --jobs N` in each
    simulation's process) when present, else the CPU affinity; a bad value is an error naming the variable."""
    from rmtnet import experiments
    monkeypatch.delenv("RMTNET_CORES", raising=False)
    assert experiments.available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("RMTNET_CORES", "1")
    assert experiments.available_cores() == 1
    runs = sweep(score, GRID, store=None, n_jobs=-1, progress=False)       # one core: runs in this process
    assert len(runs) == len(experiments.expand_grid(GRID))
    monkeypatch.setenv("RMTNET_CORES", "zero")
    with pytest.raises(ValueError, match="RMTNET_CORES"):
        experiments.available_cores()


def test_an_unwritable_store_is_a_clear_error_naming_it(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    store = blocker / "runs.csv"                        # its parent is a file: no folder can be made there
    with pytest.raises(ValueError, match=r"store='.*a_file/runs.csv' cannot be created"):
        sweep(score, GRID, store=store, progress=False)


# --- the store keeps each configuration value's type ------------------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

CONFIG_VALUES = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=4),
    st.sampled_from(["1", "1.0", "", "True", "None", "nan", "NaN", "null", '"a"', "a,b"]),
    st.integers(-10 ** 20, 10 ** 20), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, 0.0, -0.0, 1e300, 5e-324]), st.booleans(), st.none())


def _same(a, b):
    """Equal with the same type (NaN equal to NaN, -0.0 told from 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a != a and b != b) or (a == b and str(a) == str(b))
    return a == b


def typed(a, b, seed):
    return {"type_a": type(a).__name__, "type_b": type(b).__name__}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.tuples(CONFIG_VALUES, CONFIG_VALUES), min_size=1, max_size=4,
                       unique_by=lambda p: run_key({"a": p[0], "b": p[1]}, 0)))
def test_config_values_round_trip_with_their_types(tmp_path_factory, values):
    """str "1" comes back as str, 1 as int, 1.0 as float, bools and None as themselves — from a fresh sweep's
    table, from read_store, and from a resumed sweep, which runs nothing again and hands fn the same types."""
    store = tmp_path_factory.mktemp("typed") / "r.csv"
    grid = [{"a": a, "b": b} for a, b in values]
    calls = []

    def fn(**kwargs):
        calls.append(kwargs)
        return typed(**kwargs)

    half = grid[:len(grid) // 2]
    if half:
        sweep(fn, half, store=store, progress=False)
    table = sweep(fn, grid, store=store, progress=False)        # resumes after the first half
    fresh = []
    sweep(lambda **kw: (fresh.append(kw), typed(**kw))[1], grid, store=None, progress=False)
    assert len(calls) == len(grid)
    for got, want in zip(calls, fresh):                           # fn saw the same values and types either way
        assert all(_same(got[k], want[k]) for k in want)
    again = []
    resumed = sweep(lambda **kw: (again.append(kw), typed(**kw))[1], grid, store=store, progress=False)
    assert again == []                                            # every finished run recognised
    for t in (table, read_store(store), resumed):
        assert "run_config" not in t.columns
        for i, config in enumerate(grid):
            for key in ("a", "b"):
                assert _same(t[key].tolist()[i], config[key]), (key, t[key].tolist()[i], config[key])
            assert t["type_a"][i] == type(config["a"]).__name__


def test_typed_columns_keep_their_dtype():
    """A column of one type keeps that dtype (ints int64, floats float64, bools bool), so arithmetic on it works;
    None or a mixture of types makes it object."""
    table = sweep(typed, {"a": [1, 2], "b": [0.5]}, store=None, progress=False)
    assert table["a"].dtype == "int64" and table["b"].dtype == "float64"
    table = sweep(typed, {"a": [True, False], "b": [None, 1]}, store=None, progress=False)
    assert table["a"].dtype == bool and table["b"].dtype == object and table["b"].tolist() == [None, 1, None, 1]


def test_a_store_written_without_types_is_read_and_resumed(tmp_path):
    """Stores of earlier versions (no run_config column) read as pandas parses them, their runs are recognised,
    and new runs are appended with their types."""
    store = tmp_path / "old.csv"
    old = [{"a": 1, "b": "1"}, {"a": 2, "b": "x"}]
    lines = ["a,b,seed,type_a,type_b,run_key"] + [f"{c['a']},{c['b']},0,int,str,{run_key(c, 0)}" for c in old]
    store.write_text("\n".join(lines) + "\n")
    legacy = read_store(store)
    assert legacy["b"].tolist() == [1, "x"] or legacy["b"].tolist() == ["1", "x"]   # as pandas parses it
    calls = []
    table = sweep(counted_typed(calls), old + [{"a": 3, "b": "1"}], store=store, progress=False)
    assert calls == [{"a": 3, "b": "1", "seed": 0}]                # the old runs are recognised
    assert table["b"].tolist()[2] == "1" and type(table["a"].tolist()[2]) is int
    assert len(read_store(store)) == 3 and "run_config" in pd.read_csv(store).columns


def counted_typed(calls):
    def fn(**kwargs):
        calls.append(kwargs)
        return typed(**kwargs)
    return fn
