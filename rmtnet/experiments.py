"""Parameter sweeps that survive interruption: a grid of configurations × seeds, one row per finished run.

:func:`sweep` calls ``fn(**config, seed=seed)`` for every configuration of a grid and every seed and appends each
finished run to a CSV store at once (one line, flushed and fsync'd). Restarting with the same store skips the runs
already there — identified by :func:`run_key`, a stable hash of the configuration and the seed — so a sweep killed at
any moment (SIGKILL included) resumes where it stopped and ends with every run present exactly once. A kill during a
write leaves at most a truncated last line, which the reader drops and the next writer cuts away (with a warning
quoting it). A store written or edited on Windows (``\r\n`` line ends) or saved without its final line break is
read whole and extended in its own line ends; a file that is no store, or a corrupt line, is refused naming the file
and the line, and nothing is deleted.

Runs go in this process (``n_jobs=1``), to a local process pool (``n_jobs > 1``), to any ``executor`` with the
``concurrent.futures`` interface (a Dask ``distributed.Client`` is accepted as it is: its ``get_executor()``), or to
a Dask cluster named by its scheduler's address (``scheduler="tcp://host:8786"``). :func:`use_scheduler` makes an
address the default of every sweep that names no executor or scheduler of its own, so a whole script's sweeps go to
a cluster without editing it (``rmtnet run NAME --scheduler ADDRESS`` does this). Whatever runs them, only the
calling process writes the store, one line per run as it finishes, so the table is the same and as resumable.

On a Dask cluster each run is one task. A worker lost mid-run (killed, out of memory, its machine gone) costs only
the runs it was executing: Dask hands them to another worker (up to ``distributed.scheduler.allowed-failures`` times,
3 by default, after which the run counts as failed with ``KilledWorker``), and every run finished before was stored
when it came back. The workers must be able to import ``fn`` (a module-level function of an installed package, such
as ``rmtnet.studies.mixer_width``; functions of a script are pickled by value) and run the same versions of its libraries.
"""
from __future__ import annotations

import concurrent.futures as cf
import csv
import hashlib
import io
import itertools
import json
import multiprocessing
import numbers
import os
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from rmtnet._io import NotAPathError, atomic_write, output_path
from rmtnet._optional import MissingExtra, require
from rmtnet._progress import tqdm_disable
from rmtnet._system import affinity_cores
from rmtnet._validation import one_of, scalar

__all__ = ["sweep", "use_scheduler", "default_scheduler", "expand_grid", "run_key", "read_store", "SweepError"]

ON_ERROR = ("collect", "raise", "skip")
NONFINITE = ("warn", "ignore", "raise")
# pandas ≥ 3 parses floats exactly by default (and deprecates the option); pandas 2's default parser may be 1 ulp off
_EXACT_FLOATS = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
KEY = "run_key"
SEED = "seed"
CONFIG = "run_config"     # the store's typed copy of each run's configuration (JSON), see read_store


class SweepError(RuntimeError):
    """Some runs of a sweep raised. ``failures`` lists ``(config, seed, exception)``; the other runs are stored.

    Examples
    --------
    >>> err = SweepError([({"n": 1}, 0, ValueError("n too small"))])
    >>> len(err.failures), str(err).splitlines()[1]
    (1, "  {'n': 1} seed=0: ValueError: n too small")
    """

    def __init__(self, failures):
        self.failures = failures
        lines = [f"  {config} seed={seed}: {type(exc).__name__}: {exc}" for config, seed, exc in failures[:20]]
        more = [f"  … and {len(failures) - 20} more"] if len(failures) > 20 else []
        super().__init__("\n".join([f"{len(failures)} run(s) of the sweep failed (nothing stored for them; "
                                    f"run the sweep again to retry them):", *lines, *more]))


def _scalar(name, value):
    """``value`` as a plain Python scalar (int, float, str, bool or None) that survives a CSV round trip."""
    if isinstance(value, np.generic) or (hasattr(value, "item") and getattr(value, "ndim", None) == 0):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        if isinstance(value, str) and ("\n" in value or "\r" in value):
            raise ValueError(f"{name} must not contain line breaks, got {value!r}")
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise ValueError(f"{name} must be a scalar (int, float, str, bool or None), got {type(value).__name__} {value!r}")


def run_key(config: Mapping, seed) -> str:
    """A stable name for one run: the first 16 hex digits of SHA-256 of the canonical JSON of ``config`` and
    ``seed`` (keys sorted). It depends on the values' types (``1`` and ``1.0`` differ), not on the key order, and is
    the same in every process and Python version.

    Examples
    --------
    The key has 16 hex digits, ignores the key order and tells the int ``1`` from the float ``1.0``:

    >>> k = run_key({"n": 1, "q": 0.5}, seed=0)
    >>> len(k), k == run_key({"q": 0.5, "n": 1}, 0), k == run_key({"n": 1.0, "q": 0.5}, 0)
    (16, True, False)
    """
    canonical = {str(k): _scalar(f"config[{k!r}]", v) for k, v in config.items()}
    text = json.dumps({"config": canonical, SEED: _scalar("seed", seed)}, sort_keys=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _config_json(config: Mapping) -> str:
    """The typed text of a configuration in the store's ``run_config`` column: JSON, which tells str ``"1"``,
    int ``1``, float ``1.0``, bool ``true`` and None ``null`` apart (NaN and ±inf as ``NaN``, ``±Infinity``)."""
    return json.dumps({str(k): _scalar(f"config[{k!r}]", v) for k, v in config.items()}, allow_nan=True)


def _typed_column(values: list) -> pd.Series:
    """A column of exact Python values: int64, float64 or bool when every value is of that one type (and the ints
    fit int64), else object dtype holding the values as they are (str, None, or a mixture), so that
    ``column.tolist()`` gives back each value with its type."""
    kinds = {type(v) for v in values}
    if kinds == {int} and all(-2 ** 63 <= v < 2 ** 63 for v in values):
        return pd.Series(values, dtype="int64")
    if kinds == {float}:
        return pd.Series(values, dtype="float64")
    if kinds == {bool}:
        return pd.Series(values, dtype="bool")
    return pd.Series(values, dtype=object)


def _plain(value):
    """A cell of a table read without types (a store written before ``run_config``): NumPy scalars as Python
    ones, an empty cell (NaN) as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _typed_configs(table: pd.DataFrame) -> pd.DataFrame:
    """Restore each configuration value's type from the ``run_config`` column and drop that column. Rows without
    it (written by an rmtnet that did not keep it) keep the values as pandas parsed them."""
    if CONFIG not in table.columns:
        return table
    configs = [json.loads(text) if isinstance(text, str) and text else None for text in table[CONFIG]]
    table = table.drop(columns=[CONFIG])
    keys = list(dict.fromkeys(k for c in configs if c is not None for k in c))
    for key in keys:
        old = table[key].tolist() if key in table.columns else [None] * len(table)
        values = [c[key] if c is not None and key in c else _plain(v) for c, v in zip(configs, old)]
        table[key] = _typed_column(values).set_axis(table.index)
    return table


def expand_grid(grid) -> list[dict]:
    """The configurations of ``grid``: a dict of lists (their Cartesian product, the last key varying fastest) or
    a list of dicts (taken as they are). Values must be scalars; no key may be ``seed`` or ``run_key``.

    Examples
    --------
    Two widths × two ratios give 2 · 2 = 4 configurations, the last key varying fastest:

    >>> expand_grid({"n": [10, 20], "q": [0.5, 1.0]})
    [{'n': 10, 'q': 0.5}, {'n': 10, 'q': 1.0}, {'n': 20, 'q': 0.5}, {'n': 20, 'q': 1.0}]
    """
    if isinstance(grid, Mapping):
        for key, values in grid.items():
            if not isinstance(values, (list, tuple, range, np.ndarray)):
                raise ValueError(f"grid[{key!r}] must be a list of values, got {type(values).__name__} {values!r}")
        configs = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    elif isinstance(grid, Sequence) and not isinstance(grid, str) and all(isinstance(c, Mapping) for c in grid):
        configs = [dict(c) for c in grid]
    else:
        raise ValueError(f"grid must be a dict of lists or a list of dicts, got {type(grid).__name__}")
    for config in configs:
        for key, value in config.items():
            if not isinstance(key, str) or key in (SEED, KEY, CONFIG):
                raise ValueError(f"grid keys must be strings other than {SEED!r}, {KEY!r} and {CONFIG!r}, got "
                                 f"{key!r}")
            config[key] = _scalar(f"grid value {key}", value)
            if isinstance(config[key], float) and not np.isfinite(config[key]):
                raise ValueError(f"grid[{key!r}] must hold finite values, got {config[key]!r} (a NaN or ±inf "
                                 f"configuration would be stored and run as if it were a number)")
    return configs


def _run(fn, config, seed, nonfinite="warn"):
    """One run, in whichever process executes it: ``fn(**config, seed=seed)`` as a flat dict of scalars; with
    ``nonfinite="raise"`` a NaN or ±inf result is a FloatingPointError (the run fails, see :func:`sweep`)."""
    result = fn(**config, seed=seed)
    if isinstance(result, pd.DataFrame):
        if len(result) != 1:
            raise ValueError(f"fn must return one row, got a DataFrame with {len(result)} rows")
        result = result.iloc[0]
    if isinstance(result, pd.Series):
        result = result.to_dict()
    if not isinstance(result, Mapping):
        raise ValueError(f"fn must return a mapping of result names to scalars, got {type(result).__name__}")
    clash = set(result) & (set(config) | {SEED, KEY, CONFIG})
    if clash:
        raise ValueError(f"fn's results must not reuse the names of config keys, {SEED!r}, {KEY!r} or {CONFIG!r}: "
                         f"{sorted(clash)}")
    result = {str(k): _scalar(f"fn's result {k}", v) for k, v in result.items()}
    bad = {k: v for k, v in result.items() if isinstance(v, float) and not np.isfinite(v)}
    if bad and nonfinite == "raise":
        raise FloatingPointError(f"results not finite: {bad} (nonfinite='raise' counts such a run as failed)")
    return result


def _whole_row(head: bytes, tail: bytes) -> bool:
    """Whether ``tail``, a last line without a line break after the lines ``head``, is a whole run all the same
    (a store edited by hand and saved without a final line break): the header's number of fields, ending in a
    16-hex-digit ``run_key`` where the header ends in ``run_key``. A line is written with one ``write``, so one
    cut short by a kill that still ends in a whole key lacks only its line break."""
    try:
        header = next(csv.reader([head.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")]), [])
        fields = next(csv.reader([tail.decode("utf-8").rstrip("\r")]), [])
    except (UnicodeDecodeError, csv.Error):
        return False
    key = fields[-1] if fields else ""
    return (bool(header) and header[-1] == KEY and len(fields) == len(header) and len(key) == 16
            and all(c in "0123456789abcdef" for c in key))


def _complete_bytes(path: Path) -> bytes:
    """The store's bytes up to its last line break (a run killed mid-write leaves a truncated last line), or, when
    the last line lacks only its line break (:func:`_whole_row`), all of them with the line break added."""
    data = path.read_bytes() if path.exists() else b""
    end = data.rfind(b"\n") + 1
    if end and end < len(data) and _whole_row(data[:end], data[end:]):
        return data + (b"\r\n" if data[:end].endswith(b"\r\n") else b"\n")
    return data[:end]


def _recovery(path, number) -> str:
    return (f"nothing was deleted: fix line {number} of {str(path)!r} or delete that line yourself (its run is "
            f"then run again by the next sweep), or give the sweep another store")


def _decoded(path: Path, data: bytes) -> str:
    """The store's complete lines as text with ``\n`` line ends (a store written on Windows or edited there ends
    its lines with ``\r\n``); ValueError naming the file and the line of bytes that are not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data[:exc.start].count(b"\n") + 1
        raise ValueError(f"runs store {str(path)!r} is corrupt: line {number} is not UTF-8 text ({exc.reason}); "
                         f"{_recovery(path, number)}") from None
    return text.replace("\r\n", "\n")


def _complete_text(path: Path) -> str:
    """The store's complete lines (see :func:`_complete_bytes`) as text with ``\n`` line ends."""
    return _decoded(path, _complete_bytes(path))


def _checked_lines(path: Path, text: str):
    """Check the store's text line by line before pandas parses it: a header naming ``run_key`` (else this is no
    runs store), and on every other non-blank line the header's number of fields and a ``run_config`` that is JSON.
    ValueError naming the file, the line and how to recover."""
    lines = text.split("\n")
    header = next(csv.reader([lines[0]]), [])
    if KEY not in header:
        raise ValueError(f"store={str(path)!r} is not a runs store of rmtnet.experiments.sweep: its first line "
                         f"has no {KEY!r} column (a store's header names the configuration keys, {SEED!r}, the "
                         f"results, {CONFIG!r} and {KEY!r}, one line per run below it); give a new file or an "
                         f"existing runs store")
    column = header.index(CONFIG) if CONFIG in header else None
    for number, fields in enumerate(csv.reader(lines[1:]), start=2):
        if not fields:
            continue
        problem = (f"it has {len(fields)} fields, the header {len(header)}" if len(fields) != len(header) else
                   None if column is None or not fields[column] else _json_problem(fields[column]))
        if problem:
            raise ValueError(f"runs store {str(path)!r} is corrupt: line {number}: {problem}; "
                             f"{_recovery(path, number)}")


def _json_problem(text):
    try:
        json.loads(text)
    except ValueError as exc:
        return f"its {CONFIG} is not JSON ({exc})"
    return None


def read_store(store) -> pd.DataFrame:
    """The runs in a sweep's CSV store, one row each (a truncated last line is dropped; a run stored twice is kept
    once). Floats are read back exactly (the shortest repr written by ``csv`` parsed round-trip); ``run_key`` stays
    a string. Lines may end in ``\\n`` or ``\\r\\n`` (a store written or edited on Windows).

    A ``store`` that does not exist is a FileNotFoundError naming it (an empty file is a store with no runs yet:
    an empty table with a ``run_key`` column). A file that is no runs store (no ``run_key`` column in its first
    line) and a corrupt line (not UTF-8, the wrong number of fields, a ``run_config`` that is not JSON) are
    ValueErrors naming the file and the line, and saying how to recover; nothing is deleted.

    Configuration values come back with the type they had in the grid — str ``"1"`` as str, ``1`` as int, ``1.0``
    as float, bools and None as themselves — from the store's ``run_config`` column, each run's configuration as
    JSON, which is decoded and dropped (:func:`_typed_configs`; a column of one type has that dtype, a mixed one or
    one holding None is of object dtype). Rows of stores written before that column existed are read as pandas
    parses the CSV (``"1"`` as 1, an empty cell as NaN). Result columns are always parsed by pandas.

    Examples
    --------
    The str ``"1"`` of the grid comes back as a str, not as the int pandas would parse:

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = os.path.join(folder, "runs.csv")
    ...     _ = sweep(lambda tag, seed: {"y": 0.1 * seed}, {"tag": ["1"]}, seeds=[0, 1], store=store,
    ...               progress=False)
    ...     table = read_store(store)
    >>> table["tag"].tolist(), table["seed"].tolist(), table["y"].tolist()
    (['1', '1'], [0, 1], [0.0, 0.1])
    """
    if not isinstance(store, (str, os.PathLike)):
        raise NotAPathError(f"store must be a path (str or os.PathLike), got {type(store).__name__} {store!r}")
    path = Path(store)
    if path.is_dir():
        raise ValueError(f"store must be a runs store file, got the directory {str(path)!r}")
    if not path.is_file():
        raise FileNotFoundError(f"store={str(path)!r}: no such file")
    text = _complete_text(path)
    if not text:
        return pd.DataFrame(columns=[KEY])
    _checked_lines(path, text)
    table = pd.read_csv(io.StringIO(text), dtype={KEY: str, CONFIG: str}, on_bad_lines="warn", **_EXACT_FLOATS)
    return _typed_configs(table.drop_duplicates(KEY, keep="first").reset_index(drop=True))


class _Store:
    """Append-only CSV: a header line, then one line per finished run, each written with a single ``write`` and
    fsync'd. A run with columns the header lacks rewrites the file once, atomically, with the wider header."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _complete_bytes(path)
        text = _decoded(path, data)
        if text:
            _checked_lines(path, text)
        self._repair(data)
        first = text.split("\n", 1)[0]
        self.header = next(csv.reader([first])) if first else []
        self.newline = "\r\n" if data.split(b"\n", 1)[0].endswith(b"\r") else "\n"   # as the file has them

    def _repair(self, data: bytes):
        """Make the file end as ``data`` (its complete lines) ends: cut a truncated last line (a run killed
        mid-write, run again by this sweep), with a warning quoting it, or add the line break a whole last line
        lacks."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size and not data:                    # no whole line: not a store (a sweep's first write is 2 lines)
            raise ValueError(f"store={str(self.path)!r} is not a runs store of rmtnet.experiments.sweep: it holds "
                             f"no complete line (a store's first line is its header, ending in {KEY!r}); nothing "
                             f"was deleted: give a new file, or delete this one yourself if a sweep was killed "
                             f"while it wrote its first run")
        if size > len(data):
            with open(self.path, "rb") as f:
                cut = f.read()[len(data):]
            warnings.warn(f"runs store {str(self.path)!r}: cut its incomplete last line (a run killed while it was "
                          f"written; it runs again): {cut[:200]!r}", RuntimeWarning, stacklevel=5)
            os.truncate(self.path, len(data))
        elif size < len(data):
            with open(self.path, "ab") as f:
                f.write(data[size:])

    def keys(self) -> set[str]:
        return set(read_store(self.path)[KEY]) if self.header else set()

    def _line(self, header, row):
        buf = io.StringIO()
        csv.writer(buf, lineterminator=self.newline).writerow(["" if row.get(c) is None else row.get(c)
                                                              for c in header])
        return buf.getvalue()

    def append(self, row: dict):
        new = [c for c in row if c not in self.header]
        if new and self.header:  # a wider header: rewrite everything atomically
            old = list(csv.DictReader(io.StringIO(_complete_text(self.path))))
            header = self.header + new
            text = "".join(self._line(header, r) for r in [dict(zip(header, header)), *old])
            atomic_write(self.path, lambda tmp: Path(tmp).write_text(text, newline=""))
            self.header = header
        text = self._line(self.header or list(row), row)
        if not self.header:
            self.header = list(row)
            text = self._line(self.header, dict(zip(self.header, self.header))) + text
        with open(self.path, "a", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


def _caller_executor(executor):
    """The caller's executor as a ``concurrent.futures.Executor``: a Dask Client through its ``get_executor()``
    (the Client's own futures do not work with ``concurrent.futures.as_completed``)."""
    if hasattr(executor, "get_executor"):
        executor = executor.get_executor()
    if not hasattr(executor, "submit"):
        raise ValueError(f"executor must have submit() (a concurrent.futures.Executor) or get_executor() "
                         f"(a dask.distributed.Client), got {type(executor).__name__}")
    return executor


def _distributed():
    try:
        return require("distributed", "scheduler=")
    except MissingExtra as exc:  # pragma: no cover - installed with rmtnet[cluster]
        raise RuntimeError(str(exc)) from exc


def scheduler_address(scheduler) -> str:
    """``scheduler`` as a checked address string: a string such as ``"tcp://host:8786"`` (``"host:8786"`` means
    tcp), or a Dask cluster object (``LocalCluster``, ``SSHCluster``, …) by its ``scheduler_address``. Only the
    form is checked here (a network scheme, a host and a port), nothing connects."""
    address = getattr(scheduler, "scheduler_address", scheduler)
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler must be a Dask scheduler address such as 'tcp://host:8786' (or a Dask cluster "
                         f"object with .scheduler_address), got {type(scheduler).__name__} {scheduler!r}")
    comm = _distributed().comm
    try:
        address = comm.normalize_address(address.strip())
        if comm.parse_address(address)[0] == "inproc":
            raise ValueError("an in-process address; pass such a cluster's Client as executor= instead")
        comm.get_address_host_port(address)
    except ValueError as exc:
        raise ValueError(f"scheduler must be a Dask scheduler address such as 'tcp://host:8786', got "
                         f"{address!r} ({exc})") from None
    return address


class use_scheduler:
    """Send every :func:`sweep` that names no ``executor`` or ``scheduler`` of its own to the Dask scheduler at
    ``address`` (a string such as ``"tcp://10.0.0.5:8786"``, or a Dask cluster object); ``None`` sends them back to
    their own ``n_jobs``.

    Called plainly it sets the module default until it is changed again; used as a context manager it restores the
    previous default on exit::

        with experiments.use_scheduler("tcp://head:8786") as cluster:
            cli.load_simulation("effective_width")["main"](full=True)
        cluster.sweeps            # how many sweeps took this default meanwhile (0: the script has none)

    Nothing connects here: each sweep opens its own client when it starts and closes it when it ends (an address
    that does not answer fails that sweep with a ``ConnectionError``, after Dask's
    ``distributed.comm.timeouts.connect``, 30 s by default). The default is one per process, not per thread.

    Examples
    --------
    ``None`` (no scheduler: sweeps run on their own ``n_jobs``) needs no cluster; an address such as
    ``"tcp://head:8786"`` is set the same way (and needs the ``cluster`` extra to be checked):

    >>> with use_scheduler(None) as choice:
    ...     print(default_scheduler(), choice.sweeps)
    None 0
    """

    def __init__(self, address):
        global _default
        self.address = None if address is None else scheduler_address(address)
        self.sweeps = 0
        self._previous = _default
        _default = self if self.address is not None else None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        global _default
        _default = self._previous
        return False

    def __repr__(self):
        return f"use_scheduler({self.address!r})"


_default: use_scheduler | None = None


def default_scheduler() -> str | None:
    """The scheduler address set by :func:`use_scheduler`, or None (sweeps run on their own ``n_jobs``).

    Examples
    --------
    >>> default_scheduler() is None     # nothing set in this process
    True
    """
    return None if _default is None else _default.address


def connect(address, timeout=None):
    """A ``distributed.Client`` of the scheduler at ``address`` (checked by :func:`scheduler_address`), waiting
    ``timeout`` seconds for it (None: Dask's ``distributed.comm.timeouts.connect``, 30 s by default)."""
    wait = {} if timeout is None else {"timeout": timeout}
    try:
        return _distributed().Client(address, set_as_default=False, **wait)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"scheduler={address!r}: no Dask scheduler answered ({exc}). Start one with "
                              f"`dask scheduler` and workers with `dask worker {address}`, or check the "
                              f"address and port") from exc


def _local_pool(n_jobs):
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    return cf.ProcessPoolExecutor(max_workers=n_jobs, mp_context=multiprocessing.get_context(method))


def available_cores() -> int:
    """The cores this process should use: ``$RMTNET_CORES`` when set (``rmtnet run --jobs N`` sets it in each
    simulation's process to its share of the machine), else those of its CPU affinity (``os.cpu_count()`` where the
    OS does not tell)."""
    share = os.environ.get("RMTNET_CORES")
    if share is not None:
        try:
            value = int(share)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"RMTNET_CORES must be a positive integer, got {share!r}")
        return value
    return affinity_cores()


def _checked_jobs(fn, on_error, n_jobs, nonfinite="warn") -> int:
    """Check :func:`sweep`'s ``fn``, ``on_error`` and ``nonfinite``; its ``n_jobs`` as a number of local workers
    (-1: every core this process may use)."""
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {fn!r}")
    one_of("on_error", on_error, ON_ERROR)
    one_of("nonfinite", nonfinite, NONFINITE)
    n_jobs = scalar(n_jobs)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"n_jobs must be an integer >= 1 or -1 (all CPUs), got {n_jobs!r}")
    return available_cores() if n_jobs == -1 else n_jobs


def _seed_list(seeds) -> list[int]:
    """:func:`sweep`'s ``seeds`` (an integer or a non-empty list of integers) as a list of Python ints."""
    if isinstance(scalar(seeds), (numbers.Integral, np.integer)):
        seeds = (seeds,)
    if isinstance(seeds, (str, bytes, Mapping)) or not hasattr(seeds, "__iter__") or getattr(seeds, "ndim", 1) == 0:
        raise ValueError(f"seeds must be an integer or a non-empty list of integers, got {seeds!r}")
    seeds = [_scalar("seeds", s) for s in seeds]
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    return seeds


def _runs(grid, seeds) -> list[tuple[dict, int, str]]:
    """The runs ``(config, seed, run_key)`` of a sweep in grid order (configurations, then seeds), none twice."""
    runs = [(config, seed, run_key(config, seed)) for config in expand_grid(grid) for seed in seeds]
    counts = Counter(key for _, _, key in runs)
    for config, seed, key in runs:
        if counts[key] > 1:
            raise ValueError(f"grid and seeds contain the same run twice: {config} seed={seed}")
    return runs


def _destination(executor, scheduler):
    """Where a sweep's runs go: ``(pool, address)``, the caller's executor or None, and a Dask scheduler's checked
    address or None (the one set by :func:`use_scheduler` when the sweep names neither, counted as its sweep)."""
    if executor is not None and scheduler is not None:
        raise ValueError("give executor or scheduler, not both")
    pool = None if executor is None else _caller_executor(executor)
    if executor is None and scheduler is None and _default is not None:
        scheduler = _default.address
        _default.sweeps += 1
    return pool, None if scheduler is None else scheduler_address(scheduler)


def _open_store(store):
    """The :class:`_Store` at the path ``store``, or None for ``store=None``; ValueError if it cannot be opened
    (:func:`rmtnet._io.output_path`'s checks, then the store's own: a runs store, no corrupt line)."""
    if store is None:
        return None
    path = output_path("store", store)
    try:
        return _Store(path)
    except OSError as exc:
        raise ValueError(f"store={str(store)!r} cannot be created or read ({exc.strerror or exc}); give a path in "
                         f"a writable folder, or store=None to keep nothing on disk") from exc


class _Outcomes:
    """What became of a sweep's runs as they come back: a finished run is stored at once (one line) and kept, a
    failed one is collected (``on_error`` "collect" or "skip") or re-raised ("raise"); either moves the bar on."""

    def __init__(self, writer, on_error, bar, nonfinite="warn"):
        self.writer, self.on_error, self.bar, self.nonfinite = writer, on_error, bar, nonfinite
        self.kept, self.failures = [], []

    def finish(self, run, outcome):
        config, seed, key = run
        row = {**config, SEED: seed, **outcome, CONFIG: _config_json(config), KEY: key}
        if self.writer is not None:
            self.writer.append(row)
        self.kept.append(row)
        self.bar.update(1)

    def fail(self, run, exc):
        if self.on_error == "raise":
            if hasattr(exc, "add_note"):
                exc.add_note(f"in sweep run {run[0]} seed={run[1]}")
            raise exc
        self.failures.append((run[0], run[1], exc))
        self.bar.update(1)


def _run_here(fn, todo, outcomes):
    """The runs ``todo`` one after the other in this process."""
    for run in todo:
        try:
            outcome = _run(fn, run[0], run[1], outcomes.nonfinite)
        except Exception as exc:  # noqa: BLE001 - any failure of a run is reported, not fatal
            outcomes.fail(run, exc)
        else:
            outcomes.finish(run, outcome)


def _run_elsewhere(fn, todo, outcomes, pool, address, n_jobs):
    """The runs ``todo`` on the caller's executor ``pool``, else on the Dask scheduler at ``address`` (through a
    client opened and closed here), else on a local process pool of ``n_jobs`` workers, each stored as it comes
    back; whatever is still pending when this ends (``on_error="raise"``, an interrupt) is cancelled."""
    client = None
    if address is not None:
        client = connect(address)
        pool = client.get_executor()
    owned = pool is None
    pool = _local_pool(n_jobs) if owned else pool
    try:
        futures = {pool.submit(_run, fn, config, seed, outcomes.nonfinite): (config, seed, key) for config, seed, key in todo}
        try:
            # Results are stored in the order they come back; a task of a lost Dask worker is run again
            # elsewhere by the scheduler and simply comes back later (or raises KilledWorker: a failure).
            for future in cf.as_completed(futures):
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001
                    outcomes.fail(futures[future], exc)
                else:
                    outcomes.finish(futures[future], outcome)
        finally:
            for future in futures:
                future.cancel()
    finally:
        if owned:
            pool.shutdown(wait=True, cancel_futures=True)
        if client is not None:
            client.close()


def _sweep_table(store, kept, keys) -> pd.DataFrame:
    """The runs ``keys`` of a sweep in that order: read back from the ``store`` (runs of earlier attempts
    included), or with ``store=None`` the rows ``kept`` by this call."""
    if store is not None and Path(store).exists():
        table = read_store(Path(store))
    elif store is not None:            # nothing was stored (no runs)
        table = pd.DataFrame(columns=[KEY])
    else:
        table = _typed_configs(pd.DataFrame(kept)) if kept else pd.DataFrame(columns=[KEY])
    order = {key: i for i, key in enumerate(keys)}
    table = table[table[KEY].isin(order)]
    return table.sort_values(KEY, key=lambda k: k.map(order)).reset_index(drop=True)


def _written(table: pd.DataFrame, results, store, kept) -> np.ndarray:
    """Which of ``results`` each run of ``table`` returned itself: a column another run returned is NaN in the
    table for a run that did not (an empty field in the store, where a NaN result is written ``nan``)."""
    if store is not None and Path(store).exists():
        raw = pd.read_csv(io.StringIO(_complete_text(Path(store))), dtype=str, keep_default_na=False)
        raw = raw.drop_duplicates(KEY, keep="first").set_index(KEY)
        return (raw.loc[table[KEY], results] != "").to_numpy()
    own = {row[KEY]: row.keys() for row in kept}
    return np.array([[c in own.get(key, ()) for c in results] for key in table[KEY]], dtype=bool).reshape(
        len(table), len(results))


def _flag_nonfinite(table: pd.DataFrame, config_keys, store=None, kept=()) -> pd.DataFrame:
    """``table`` as it is, with a RuntimeWarning naming every run (configuration and seed) whose results hold NaN
    or ±inf, and those results' columns (a result column only another run returned does not count)."""
    results = [c for c in table.columns if c not in {*config_keys, SEED, KEY}
               and pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])]
    bad = ~np.isfinite(table[results].to_numpy(dtype=float)) if results else np.zeros((len(table), 0), bool)
    bad &= _written(table, results, store, kept) if results else bad
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size:
        runs = table.iloc[rows[:20]].to_dict("records")                  # Python scalars, not NumPy ones
        lines = [f"  { {k: run[k] for k in config_keys if k in run} } seed={run[SEED]}: "
                 + ", ".join(f"{c}={run[c]}" for c, b in zip(results, bad[i]) if b) for i, run in zip(rows, runs)]
        more = [f"  … and {rows.size - 20} more"] if rows.size > 20 else []
        warnings.warn("\n".join([f"{rows.size} run(s) of the sweep have a NaN or infinite result (stored and "
                                  f"returned as they are; a run diverged or fn divided by zero):", *lines, *more]),
                      RuntimeWarning, stacklevel=3)
    return table


def sweep(fn: Callable, grid, seeds=(0,), store="results.csv", n_jobs: int = 1, progress: bool = True,
          executor=None, on_error: str = "collect", scheduler=None, nonfinite: str = "warn") -> pd.DataFrame:
    """Run ``fn(**config, seed=seed)`` for every configuration of ``grid`` and every seed; return the table.

    Parameters
    ----------
    fn : returns a mapping of result names to scalars (a dict, a pandas Series or a one-row DataFrame). With a
        process pool or another executor it must be picklable (a module-level function).
    grid : a dict of lists (Cartesian product) or a list of dicts; see :func:`expand_grid`.
    seeds : the seeds of every configuration.
    store : the CSV file the runs are appended to as they finish (created if absent; the runs of other grids in it
        are left alone), or None to keep nothing on disk. A line holds the config values, ``seed``, the results,
        ``run_config`` (the configuration as JSON, so that :func:`read_store` gives each value back with its type)
        and ``run_key``.
    n_jobs : 1 runs in this process; n > 1 a local ``ProcessPoolExecutor`` of n workers ("forkserver" start where
        available, else "spawn"); -1 one worker per core this process may use (:func:`available_cores`: under
        ``rmtnet run --jobs N`` each simulation's share). Ignored when an executor or a scheduler is in force.
    progress : a bar over the runs (True or False; shown only when stderr is a terminal and ``TQDM_DISABLE`` is not
        set: :func:`rmtnet._progress.bar`'s rule).
    executor : anything with ``submit(fn, *args) -> concurrent.futures.Future`` (a thread or process pool, Dask's
        ``Client.get_executor()``), or a Dask ``distributed.Client`` itself. The caller keeps ownership.
    scheduler : the address of a Dask scheduler (``"tcp://host:8786"``) or a Dask cluster object: the runs go to
        its workers through a client this call opens and closes. None (the default) takes the address set by
        :func:`use_scheduler`, if any. Not together with ``executor``.
    on_error : what a run that raises does. ``"collect"``: store nothing for it, go on, and raise a
        :class:`SweepError` listing the failed runs at the end; ``"raise"``: stop at once (pending runs are
        cancelled) and re-raise; ``"skip"``: go on and end with a warning.
    nonfinite : what a run whose results hold NaN or ±inf does. ``"warn"`` (the default): it is stored and
        returned as it is, with a RuntimeWarning at the end naming its configuration, seed and those results;
        ``"ignore"``: the same without the warning (results where NaN means "not measured"); ``"raise"``: the run
        fails with a FloatingPointError, handled by ``on_error`` (nothing stored for it).

    Returns
    -------
    pandas.DataFrame, one row per run of this sweep (read back from the store, so a resumed sweep returns the runs
    of earlier attempts too) in grid order (configurations, then seeds): the config columns, ``seed``, the results,
    ``run_key``. NaN or ±inf in ``grid`` is a ValueError naming the key (see ``nonfinite`` for results).

    Examples
    --------
    Two configurations × two seeds are 4 runs, each ``y = n · seed``; ``store=None`` keeps nothing on disk:

    >>> table = sweep(lambda n, seed: {"y": n * seed}, {"n": [1, 2]}, seeds=[0, 1], store=None, progress=False)
    >>> table[["n", "seed", "y"]].values.tolist()
    [[1, 0, 0], [1, 1, 1], [2, 0, 0], [2, 1, 2]]
    """
    n_jobs, disable = _checked_jobs(fn, on_error, n_jobs, nonfinite), tqdm_disable(progress)
    runs = _runs(grid, _seed_list(seeds))
    pool, address = _destination(executor, scheduler)
    writer = _open_store(store)
    done = writer.keys() if writer is not None else set()
    todo = [run for run in runs if run[2] not in done]

    bar = tqdm(total=len(runs), initial=len(runs) - len(todo), desc="sweep", unit="run",
               disable=disable)
    outcomes = _Outcomes(writer, on_error, bar, nonfinite)
    try:
        if pool is None and address is None and n_jobs == 1:
            _run_here(fn, todo, outcomes)
        elif todo:
            _run_elsewhere(fn, todo, outcomes, pool, address, n_jobs)
    finally:
        bar.close()

    if outcomes.failures and on_error == "collect":
        raise SweepError(outcomes.failures)
    if outcomes.failures:
        warnings.warn(str(SweepError(outcomes.failures)), RuntimeWarning, stacklevel=2)
    table = _sweep_table(store, outcomes.kept, [key for _, _, key in runs])
    keys = dict.fromkeys(k for config, _, _ in runs for k in config)
    return _flag_nonfinite(table, keys, store, outcomes.kept) if nonfinite == "warn" else table
