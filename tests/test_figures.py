"""The figure scripts' two halves. ``compute()`` of every script at its tiny size, run in a fresh interpreter, returns
the tables the figure shows (rmtnet.figures.Tables of non-empty DataFrames) without ever importing matplotlib;
``draw()`` then draws each from those tables alone, and rmtnet.figures.write puts the PNG and the CSV side by side."""
import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.stem for p in (ROOT / "simulations").glob("*.py") if not p.name.startswith("_"))

_COMPUTE_THEN_DRAW = """
    import inspect, json, sys, time
    from pathlib import Path
    import pandas as pd
    from rmtnet import cli, figures
    out, results, computed = Path(sys.argv[1]), {}, {}
    results["_imports"] = "matplotlib" in sys.modules          # rmtnet.cli and rmtnet.figures load none
    for name in sys.argv[2:]:
        ns = cli.load_simulation(name)
        takes = inspect.signature(ns["compute"]).parameters      # a sweep keeps its runs in store, here in-process
        kwargs = {**({"store": out / name} if "store" in takes else {}), **({"n_jobs": 1} if "n_jobs" in takes else {})}
        t0 = time.perf_counter()
        tables = ns["compute"]("tiny", seed=0, **kwargs)
        results[name] = dict(seconds=time.perf_counter() - t0, matplotlib="matplotlib" in sys.modules,
                             tables=isinstance(tables, figures.Tables),
                             frames=all(isinstance(t, pd.DataFrame) and len(t) > 0 for t in tables.values()),
                             n_tables=len(tables))
        computed[name] = (ns["draw"], tables)
        if "matplotlib" in sys.modules:
            break                                               # the culprit is named; the rest would hide it
    for name, (draw, tables) in computed.items():
        path = figures.write(draw(tables), out, name, tables)
        csv = pd.read_csv(path.with_suffix(".csv"))
        results[name]["drawn"] = path.exists() and set(csv.panel) == set(tables)
    print(json.dumps(results))
"""


def test_every_script_has_compute_draw_and_main():
    for name in SCRIPTS:
        tree = ast.parse((ROOT / "simulations" / f"{name}.py").read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert {"compute", "draw", "main"} <= defined, name
        imports = {a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names} | {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
        assert not any(str(m).startswith("matplotlib") for m in imports), f"{name} imports matplotlib at the top"


def test_compute_at_tiny_size_imports_no_matplotlib_and_draw_draws_its_tables(tmp_path):
    """Every script's tiny compute and draw, in two fresh interpreters side by side (alternate scripts; the 25
    computes take about 60 s of CPU together, the longest, subnetwork_ensembles, 7 s); each interpreter checks that
    its own computes import no matplotlib."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    env.pop("MPLBACKEND", None)
    runs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(_COMPUTE_THEN_DRAW), str(tmp_path), *half],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
            for half in (SCRIPTS[0::2], SCRIPTS[1::2])]
    results = {}
    for r in runs:
        out, err = r.communicate(timeout=900)
        assert r.returncode == 0, err[-4000:]
        half = json.loads(out.strip().splitlines()[-1])
        assert half.pop("_imports") is False, "importing rmtnet.cli or rmtnet.figures loaded matplotlib"
        results.update(half)
    for name in SCRIPTS:
        assert name in results, f"{name} not reached: an earlier compute imported matplotlib"
        res = results[name]
        assert not res["matplotlib"], f"{name}: compute imported matplotlib"
        assert res["tables"] and res["frames"] and res["n_tables"] >= 1, (name, res)
        assert res["drawn"], name
