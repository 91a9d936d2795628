"""Sweeps on a Dask cluster (a two-worker ``distributed.LocalCluster`` on loopback): the same table as the local
pool, a module default that sends every sweep there, a worker killed mid-sweep, and clear errors for bad addresses."""
import functools
import os
import signal
import socket
import time
from pathlib import Path

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

from rmtnet import experiments  # noqa: E402
from rmtnet.experiments import read_store, sweep, use_scheduler  # noqa: E402

GRID = {"a": [1, 2, 3], "b": ["x", "y"]}


def score(a, b, seed):
    """Module level and pure: the same numbers wherever it runs."""
    return {"value": 10 * a + seed + 0.1, "label": f"{b}!", "third": a / 3}


def where(a, seed):
    """The address of the Dask worker this run is on (ValueError outside a worker)."""
    return {"worker": distributed.get_worker().address}


def fragile(a, b, seed, *, workdir, victim, wait_for_rows):
    """``score``, except that the first attempt of the run ``victim`` waits until the sweep's store holds
    ``wait_for_rows`` finished runs, writes that count to a marker file, and SIGKILLs its own worker process."""
    workdir = Path(workdir)
    (workdir / f"call-{a}-{b}-{seed}-{os.getpid()}-{time.monotonic_ns()}").touch()
    if (a, b, seed) == tuple(victim):
        try:
            fd = os.open(workdir / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass                                          # the second attempt, on a fresh or another worker
        else:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                stored = len(read_store(workdir / "store.csv")) if (workdir / "store.csv").exists() else 0
                if stored >= wait_for_rows:
                    break
                time.sleep(0.02)
            os.write(fd, str(stored).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return score(a, b, seed)


@pytest.fixture(scope="module")
def cluster():
    # Worker processes unpickle this module's functions by value: the workers need not import tests/.
    import cloudpickle
    import sys
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  scheduler_port=0, dashboard_address=None) as c:
        yield c
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_cluster_sweep_gives_the_local_pool_table(cluster, tmp_path):
    pooled = sweep(score, GRID, seeds=(0, 1), store=tmp_path / "pool.csv", n_jobs=2, progress=False)
    on_dask = sweep(score, GRID, seeds=(0, 1), store=tmp_path / "dask.csv", scheduler=cluster.scheduler_address,
                    progress=False)
    pd.testing.assert_frame_equal(on_dask, pooled, check_exact=True)
    pd.testing.assert_frame_equal(read_store(tmp_path / "dask.csv").sort_values("run_key", ignore_index=True),
                                  read_store(tmp_path / "pool.csv").sort_values("run_key", ignore_index=True),
                                  check_exact=True)
    # resumable as before: a second call with a wider grid runs only the new configurations
    calls = tmp_path / "calls"
    calls.mkdir()
    wider = sweep(functools.partial(fragile, workdir=calls, victim=(), wait_for_rows=0), {**GRID, "a": [1, 2, 3, 4]},
                  seeds=(0, 1), store=tmp_path / "dask.csv", scheduler=cluster, progress=False)
    assert len(wider) == 16 and {p.name.split("-")[1] for p in calls.glob("call-*")} == {"4"}


def test_use_scheduler_sends_every_sweep_there(cluster, tmp_path):
    workers = set(cluster.scheduler_info["workers"])
    assert experiments.default_scheduler() is None
    with use_scheduler(cluster.scheduler_address) as default:
        assert experiments.default_scheduler() == cluster.scheduler_address
        # n_jobs, as a script would pass it, is overridden by the default scheduler
        ran = sweep(where, {"a": [1, 2, 3, 4]}, store=tmp_path / "w.csv", n_jobs=2, progress=False)
        with use_scheduler(None):                         # nested: local again, then the cluster is restored
            assert experiments.default_scheduler() is None
            with pytest.raises(experiments.SweepError, match="(?i)no worker"):
                sweep(where, {"a": [1]}, store=None, progress=False)
        assert experiments.default_scheduler() == cluster.scheduler_address
    assert experiments.default_scheduler() is None and default.sweeps == 1
    assert set(ran.worker) <= workers and len(ran) == 4
    with pytest.raises(ValueError, match="scheduler must be"):
        use_scheduler(42)


def test_a_worker_killed_mid_sweep_loses_no_finished_run(cluster, tmp_path):
    grid = {"a": list(range(6)), "b": ["x", "y"]}
    victim = (1, "y", 0)
    fn = functools.partial(fragile, workdir=tmp_path, victim=victim, wait_for_rows=3)
    table = sweep(fn, grid, seeds=(0,), store=tmp_path / "store.csv", scheduler=cluster.scheduler_address,
                  progress=False)
    stored_before_kill = int((tmp_path / "killed").read_text())
    assert stored_before_kill >= 3                        # runs were in the store while the sweep was under way
    assert len(table) == 12 and not table.duplicated(["a", "b", "seed"]).any()
    assert (table.value == 10 * table.a + table.seed + 0.1).all()
    raw = pd.read_csv(tmp_path / "store.csv", dtype={"run_key": str})
    assert len(raw) == 12 and raw.run_key.is_unique       # the file itself: every run exactly once
    attempts = [p.name.split("-")[1:5] for p in tmp_path.glob("call-*")]
    victims = [pid for *run, pid in attempts if run == ["1", "y", "0"]]
    assert len(victims) == 2 and victims[0] != victims[1]     # run again, in another process, after the kill
    # (a run that was queued on, or had finished but not yet been fetched from, the killed worker may run twice too:
    # Dask recomputes what the lost worker held; the store keeps one row per run all the same)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_scheduler_addresses_give_clear_errors(tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"            # nothing listens there
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ConnectionError, match=rf"scheduler='{address}': no Dask scheduler answered"):
            sweep(score, GRID, store=tmp_path / "r.csv", scheduler=address, progress=False)
    assert not (tmp_path / "r.csv").exists()                # nothing stored (read_store: FileNotFoundError)
    with pytest.raises(ValueError, match="scheduler must be a Dask scheduler address.*'nonsense'"):
        sweep(score, GRID, store=None, scheduler="nonsense", progress=False)
    with pytest.raises(ValueError, match="scheduler must be a Dask scheduler address.*42"):
        sweep(score, GRID, store=None, scheduler=42, progress=False)
    with pytest.raises(ValueError, match="executor or scheduler, not both"):
        sweep(score, GRID, store=None, scheduler=address, executor=object(), progress=False)
