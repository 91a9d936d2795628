"""Figure scripts and the command line: each runs at quick size, writes its figure and CSV, and agrees with MC."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rmtnet import cli

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
