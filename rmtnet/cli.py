"""`rmtnet` command line: list and run the figure scripts of simulations/.

    rmtnet list                          the simulations, one line each (from each script's docstring)
    rmtnet run NAME [NAME ...] [options] run some of them (quick sizes unless --full)
    rmtnet run --all [options]           run every one (`rmtnet run-all` is the same)
    rmtnet --version                     the installed version

options: --full (the larger sizes of each script), --seed N (default 0), --backend numpy|cupy (the array library of
the spectral Monte Carlo; with cupy, effective_width also trains its models on CUDA; the other trained-network
simulations, whose small models gain little on a GPU, ignore it), --outdir DIR (default
./figures), --scheduler ADDRESS (send the simulations' parameter sweeps, rmtnet.experiments.sweep, to the Dask
scheduler at ADDRESS, e.g. tcp://head:8786; a simulation without a sweep runs locally and says so), --jobs N (how
many simulations run at once, each in its own process with cores/N BLAS and torch threads; default: the number of
cores this process may use). Options are spelled out in full (`--ful` is an error, not `--full`).

A name that is no simulation runs nothing and exits 1, naming the closest simulations and every one that begins
with it (`rmtnet run ntk` lists ntk_dynamics, ntk_over_data, ntk_spectrum).

Progress: a bar over the simulations, and, when they run one at a time, the bars of their own long steps (sweeps,
Monte Carlo samplers, Lanczos quadrature, training); with --jobs N > 1 only the simulations' bar, so that the
workers' bars do not overwrite each other. Bars appear only on a terminal; TQDM_DISABLE=1 turns them all off.

Each simulation writes DIR/NAME.png and, beside it, DIR/NAME.csv, the numbers it plots; sweeping ones also keep
their runs in DIR/NAME_runs.csv (a second call resumes from it). The command ends by listing where each went and
the total time. The figure scripts are the package's ``rmtnet/simulations/`` when installed from a wheel, and the
checkout's top-level ``simulations/`` (their source) in a clone.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import json
import os
import re
import runpy
import shutil
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from tqdm.auto import tqdm

from rmtnet._optional import hint
from rmtnet._system import affinity_cores

_PACKAGE = Path(__file__).resolve().parent
# Installed from a wheel, the scripts are the subpackage rmtnet/simulations/ (pyproject maps the checkout's
# simulations/ there); in a checkout (editable install included) they are the top-level simulations/.
_CANDIDATES = (_PACKAGE / "simulations", _PACKAGE.parent / "simulations")
SIMULATIONS_DIR = next((p for p in _CANDIDATES if p.is_dir()), _CANDIDATES[0])
BACKENDS = ("numpy", "cupy")
TIMES_FILE = ".rmtnet-times.json"      # in --outdir: each simulation's last time, to start the longest first
SHIPPED_TIMES = "times.json"           # beside the scripts: the times of a quick run on 2 cores, for a first run


def _sim_dir() -> Path:
    if not SIMULATIONS_DIR.is_dir():
        raise SystemExit(f"the figure scripts were not found (looked in {', '.join(map(str, _CANDIDATES))}); "
                         f"reinstall rmtnet from its wheel or a checkout (pip install -e .)")
    return SIMULATIONS_DIR


available_cores = affinity_cores   # the machine's cores, shared out by --jobs (a simulation reads its share from
                                   # experiments.available_cores)


def scripts() -> list[Path]:
    """The figure scripts, ``simulations/*.py`` (files starting with ``_`` are helpers), sorted by name."""
    return sorted(p for p in _sim_dir().glob("*.py") if not p.name.startswith("_"))


def names() -> list[str]:
    return [p.stem for p in scripts()]


def suggestions(name: str, known: list[str]) -> list[str]:
    """The known names a mistyped ``name`` may have meant: every one that begins with it (``ntk`` → ``ntk_dynamics``,
    ``ntk_over_data``, ``ntk_spectrum``), then up to three close ones (:func:`difflib.get_close_matches`, similarity
    ≥ 0.5), each once, in that order."""
    stem = Path(name).name.removesuffix(".py")
    starting = [k for k in known if stem and k.startswith(stem)]
    close = difflib.get_close_matches(stem, known, n=3, cutoff=0.5)
    return list(dict.fromkeys(starting + close))


def _unknown(bad: list[str]) -> SystemExit:
    """The error for simulation names that do not exist, with the known names they may have meant."""
    known = names()
    lines = []
    for name in bad:
        close = suggestions(name, known)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        lines.append(f"rmtnet: no simulation named {name!r}{hint}")
    lines.append("`rmtnet list` shows the available ones")
    return SystemExit("\n".join(lines))


def script_path(name: str) -> Path:
    """``simulations/NAME.py`` (``NAME`` may end in ``.py``); SystemExit with close matches if there is none."""
    stem = Path(name).name.removesuffix(".py")
    path = _sim_dir() / f"{stem}.py"
    if not stem or stem.startswith("_") or not path.is_file():
        raise _unknown([name])
    return path


def load_simulation(name: str) -> dict:
    """The namespace of ``simulations/NAME.py``, run as a module (not as ``__main__``). Its
    ``main(full=False, outdir="figures", seed=0, backend=None, ...)`` draws the figure and returns
    ``(path of the PNG, {panel name: DataFrame})``."""
    return runpy.run_path(str(script_path(name)))


def description(path: Path) -> str:
    """The first sentence of a script's docstring, read with ``ast`` (the script is not run)."""
    doc = ast.get_docstring(ast.parse(Path(path).read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    # a sentence ends at ". " before a capital ("Figs. 3", "et al. 2018" go on)
    return re.split(r"(?<=\.)\s+(?=[A-Z])", first, maxsplit=1)[0]


def script_args(doc, full_help, argv=None):
    """The arguments every figure script takes when run directly: ``--full`` (described by ``full_help``),
    ``--outdir``, ``--seed``, ``--backend``, ``--scheduler``; ``doc`` (the script's docstring) is the help text.

    ``--scheduler ADDRESS`` is applied here, through :func:`rmtnet.experiments.use_scheduler`, so that the script's
    sweeps go to that Dask scheduler without the script passing it on. ``--backend cupy`` without CuPy or a CUDA
    device is an argument error (exit status 2)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--full", action="store_true", help=full_help)
    ap.add_argument("--outdir", default="figures")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default=None, choices=BACKENDS)
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="run the script's parameter sweeps on this Dask scheduler (e.g. tcp://head:8786)")
    a = ap.parse_args(argv)
    problem = _backend_problem(a.backend) or _outdir_problem(a.outdir)
    if problem:
        ap.error(problem)
    if a.scheduler is not None:
        from rmtnet import experiments
        try:
            experiments.use_scheduler(a.scheduler)
        except ValueError as exc:
            ap.error(f"--scheduler: {exc}")
    return a


def _backend_problem(backend):
    """Why ``backend`` cannot be used here (None when it can): CuPy missing or no CUDA device."""
    if backend != "cupy":
        return None
    from rmtnet import backend as array_backend
    try:
        array_backend.cupy_module()
    except RuntimeError as exc:
        return f"--backend cupy: {exc}"
    return None


def _outdir_problem(outdir):
    """Why ``--outdir`` cannot take the outputs (None when it can): a file standing there or above it, a folder
    this process cannot write in (:func:`rmtnet._io.output_path`), checked before any simulation starts rather
    than when its figure is written, minutes later."""
    from rmtnet._io import output_path
    try:
        output_path("--outdir", outdir, kind="directory")
    except (TypeError, ValueError) as exc:
        return str(exc)
    return None


def _scheduler_problem(address, timeout=10.0):
    """Why the Dask scheduler at ``address`` cannot be used (None when a client connects to it within
    ``timeout`` seconds): checked before any simulation starts rather than at its first sweep."""
    from rmtnet import experiments
    try:
        experiments.connect(experiments.scheduler_address(address), timeout=timeout).close()
    except (ValueError, ConnectionError, RuntimeError) as exc:
        return f"--scheduler: {exc}"
    return None


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


def version() -> str:
    """The installed distribution's version (``importlib.metadata``), or ``rmtnet.__version__`` where rmtnet runs
    from a source tree that was never installed."""
    from importlib import metadata
    try:
        return metadata.version("rmtnet")
    except metadata.PackageNotFoundError:
        import rmtnet
        return getattr(rmtnet, "__version__", "unknown")


def _parser():
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--full", action="store_true", help="the larger sizes of each simulation (slower)")
    common.add_argument("--seed", type=int, default=0, help="the first seed of every simulation (default 0)")
    common.add_argument("--backend", choices=BACKENDS, default=None,
                        help="array library of the spectral Monte Carlo (default: rmtnet's default, numpy); "
                             "cupy also trains effective_width's models on CUDA")
    common.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run the simulations' parameter sweeps on the Dask scheduler at ADDRESS "
                             "(e.g. tcp://head:8786); simulations without a sweep run locally")
    common.add_argument("--outdir", default="figures", metavar="DIR",
                        help="where figures and tables go (default ./figures)")
    common.add_argument("--jobs", type=_positive_int, default=available_cores(), metavar="N",
                        help="simulations run at once, each in its own process with cores/N threads "
                             f"(default: the cores available, here {available_cores()})")
    ap = argparse.ArgumentParser(prog="rmtnet", description=__doc__, formatter_class=argparse.RawTextHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--version", action="version", version=f"rmtnet {version()}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="{list,run,run-all}")
    sub.add_parser("list", help="the simulations, one line each", allow_abbrev=False)
    run = sub.add_parser("run", parents=[common], help="run the named simulations (or --all)", allow_abbrev=False,
                         description="Run figure scripts of simulations/ and say where their output went.")
    run.add_argument("names", nargs="*", metavar="NAME", help="simulations to run (see `rmtnet list`)")
    run.add_argument("--all", action="store_true", help="run every simulation")
    alias = sub.add_parser("run-all", parents=[common], help="the same as `run --all`", allow_abbrev=False,
                           description="Run every figure script of simulations/ (the same as `rmtnet run --all`).")
    alias.set_defaults(all=True, names=[])
    return ap, run


def _list():
    paths = scripts()
    width = max(len(p.stem) for p in paths) if paths else 0
    room = max(40, shutil.get_terminal_size((120, 24)).columns - width - 3)
    for p in paths:
        text = description(p)
        if len(text) > room:
            text = text[:room - 1].rstrip() + "…"
        print(f"{p.stem:{width}s}  {text}")
    print(f"\n{len(paths)} simulations in {_sim_dir()}; `rmtnet run NAME [--full]` runs one, "
          f"`rmtnet run --all` all of them")
    return 0


def _chosen(a, run_parser):
    """The scripts a ``run`` names, in the order given and each once, or all of them for ``--all``."""
    if a.all:
        if a.names:
            run_parser.error("give simulation names or --all, not both")
        return scripts()
    if not a.names:
        run_parser.error("name at least one simulation (`rmtnet list` shows them) or use --all")
    known = set(names())
    bad = [n for n in a.names if Path(n).name.removesuffix(".py") not in known]
    if bad:
        raise _unknown(bad)
    return list(dict.fromkeys(script_path(n) for n in a.names))      # in the order given, each once


def _one(path, a):
    """Run one simulation; returns its record for the final summary, with the lines to print about it (printed by
    the parent, so that concurrent simulations' reports do not interleave)."""
    from rmtnet import experiments
    name = path.stem
    t0 = time.perf_counter()
    scheduled = experiments.use_scheduler(a.scheduler) if a.scheduler else contextlib.nullcontext()
    try:
        with scheduled:
            out = runpy.run_path(str(path))["main"](full=a.full, outdir=a.outdir, seed=a.seed, backend=a.backend)
    except Exception as exc:  # noqa: BLE001 - reported, and the other simulations still run
        seconds = time.perf_counter() - t0
        needs = hint(exc, "this simulation")         # a missing optional dependency: which extra brings it
        return dict(name=name, seconds=seconds, ok=False, out=[],
                    err=[f"[{name}] failed after {seconds:.1f} s:\n{traceback.format_exc()}"
                         + (f"[{name}] {needs}\n" if needs else "")])
    seconds = time.perf_counter() - t0
    figure, tables = out if isinstance(out, tuple) and len(out) == 2 else (out, None)
    figure = Path(figure) if figure is not None else None
    table = figure.with_suffix(".csv") if figure is not None else None
    lines = [f"[{name}] {seconds:.1f} s -> {figure}"]
    for key, t in (tables or {}).items():
        ks = getattr(t, "attrs", {}).get("ks")
        if ks is not None:
            lines.append(f"    {key:28s} KS = {ks:.4f}")
    if a.scheduler and scheduled.sweeps == 0:
        lines.append(f"[{name}] note: no parameter sweep in this simulation, so it ran locally "
                     f"(--scheduler applies to rmtnet.experiments.sweep)")
    runs = figure.with_name(f"{figure.stem}_runs.csv") if figure is not None else None
    return dict(name=name, seconds=seconds, ok=True, figure=figure, out=lines, err=[],
                table=table if table is not None and table.exists() else None,
                runs=runs if runs is not None and runs.exists() else None)


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "RMTNET_CORES")


@contextlib.contextmanager
def _thread_environment(threads):
    """Within the block, this process's environment gives every thread pool ``threads`` threads, so that worker
    processes started in it inherit the limits before they import anything (a spawned worker imports rmtnet, and with
    it NumPy, while unpickling its first task: setting the variables in the worker would come too late for BLAS)."""
    saved = {var: os.environ.get(var) for var in _THREAD_VARS}
    os.environ.update({var: str(threads) for var in _THREAD_VARS})
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def _init_worker(threads):
    """A worker process of ``--jobs N``: BLAS, OpenMP and torch get ``threads`` threads (from the environment it
    inherited, see :func:`_thread_environment`; thread pools already loaded are limited again here through
    threadpoolctl), and so do its parameter sweeps (``RMTNET_CORES``, read by
    :func:`rmtnet.experiments.available_cores`: a sweep with ``n_jobs=-1`` then runs that many workers). Its
    progress bars are off (``TQDM_DISABLE``, see :mod:`rmtnet._progress`): the parent shows the simulations'."""
    os.environ.update({var: str(threads) for var in _THREAD_VARS})
    os.environ["TQDM_DISABLE"] = "1"           # only the parent's bar: concurrent workers' bars would overwrite it
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                        # pragma: no cover - a declared dependency of rmtnet
        return
    threadpool_limits(threads)


def _report(record):
    for line in record["out"]:
        tqdm.write(line)
    for line in record["err"]:
        tqdm.write(line, file=sys.stderr)
    return record


def _times_path(a):
    return Path(a.outdir) / TIMES_FILE


def _load_times(path, size):
    try:
        times = json.loads(Path(path).read_text())[size]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return times if isinstance(times, dict) else {}


def _read_times(a):
    """Seconds per simulation at this size (quick or --full): the last run's, from --outdir, over the times shipped
    with the scripts (``simulations/times.json``, measured on 2 cores), so that a first run also starts the
    longest first; {} if neither has any."""
    size = "full" if a.full else "quick"
    return {**_load_times(_sim_dir() / SHIPPED_TIMES, size), **_load_times(_times_path(a), size)}


def _write_times(a, records):
    path = _times_path(a)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    if not isinstance(saved, dict):
        saved = {}
    size = saved.setdefault("full" if a.full else "quick", {})
    size.update({r["name"]: round(r["seconds"], 1) for r in records if r["ok"]})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(saved, indent=1, sort_keys=True))
    except OSError:
        pass                                   # an unwritable --outdir already made the simulations fail


def _run_all(chosen, a):
    """Run the chosen scripts, ``a.jobs`` at a time, the longest (by the last run's times; unknown ones first)
    first; returns their records in the order chosen."""
    jobs = min(a.jobs, len(chosen))
    if jobs <= 1:
        return [_report(_one(path, a)) for path in tqdm(chosen, desc="simulations", unit="sim", disable=None)]
    last = _read_times(a)
    order = sorted(chosen, key=lambda p: -last.get(p.stem, float("inf")))
    threads = max(1, available_cores() // jobs)
    tqdm.write(f"running {len(chosen)} simulations, {jobs} at a time ({threads} thread{'s' * (threads > 1)} each)")
    records = {}
    # by the module's import name, so that the workers find these functions when this file runs as __main__
    import rmtnet.cli as this
    with _thread_environment(threads), ProcessPoolExecutor(
            max_workers=jobs, mp_context=get_context("spawn"), initializer=this._init_worker,
            initargs=(threads,)) as pool:
        futures = {pool.submit(this._one, path, a): path for path in order}
        for future in tqdm(as_completed(futures), total=len(futures), desc="simulations", unit="sim",
                           disable=None):
            path = futures[future]
            try:
                records[path] = _report(future.result())
            except BrokenProcessPool as exc:          # a worker died (killed, out of memory): say which
                records[path] = _report(dict(name=path.stem, seconds=0.0, ok=False, out=[],
                                             err=[f"[{path.stem}] its worker process died: {exc}"]))
    return [records[p] for p in chosen]


def _summary(records, total):
    width = max(len(r["name"]) for r in records)
    print(f"\n{'simulation':{width}s}  {'time':>8s}  output")
    for r in records:
        head = f"{r['name']:{width}s}  {r['seconds']:7.1f}s"
        if not r["ok"]:
            print(f"{head}  FAILED (traceback above)")
            continue
        print(f"{head}  figure  {r['figure']}")
        print(f"{'':{width + 12}s}table   {r['table'] if r['table'] else '(none written)'}")
        if r["runs"]:
            print(f"{'':{width + 12}s}runs    {r['runs']}  (the sweep's store: a second run resumes from it)")
    failed = [r["name"] for r in records if not r["ok"]]
    print(f"{len(records) - len(failed)} of {len(records)} simulations done in {total:.1f} s "
          f"({sum(r['seconds'] for r in records):.1f} s of simulation)"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv=None):
    """Entry point of the ``rmtnet`` command; returns the exit status (argparse exits 2 on a bad option or an
    --outdir that cannot take the outputs, checked before anything runs; an unknown simulation name or an unusable
    --backend/--scheduler exits 1 with a message, a failed simulation makes the status 1 after the others ran)."""
    ap, run_parser = _parser()
    a = ap.parse_args(argv)
    if a.cmd == "list":
        return _list()
    chosen = _chosen(a, run_parser)
    problem = _outdir_problem(a.outdir)
    if problem:
        run_parser.error(problem)
    for problem in (_backend_problem(a.backend), a.scheduler and _scheduler_problem(a.scheduler)):
        if problem:
            raise SystemExit(f"rmtnet: {problem}")
    t0 = time.perf_counter()
    records = _run_all(chosen, a)
    _write_times(a, records)
    return _summary(records, time.perf_counter() - t0)


if __name__ == "__main__":
    sys.exit(main())
