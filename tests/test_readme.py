"""Every code block of the README works as written.

Each ```python block runs alone in a fresh interpreter (a temporary working directory, rmtnet importable from this
checkout, a time limit), as a newcomer pasting it would run it: a block that uses a name it never imports fails
here. The first block, the ten-line tour, must also print what the README says it prints. Every ``bash
scripts/NAME.sh`` the README tells one to run exists, and every ``rmtnet run NAME`` names a simulation.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rmtnet import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
TIMEOUT_S = 300


def run_fresh(source, cwd):
    """Run ``source`` in a fresh interpreter in ``cwd`` (one thread, no display)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", source], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def test_readme_has_python_blocks():
    assert BLOCKS, "README.md has no python block"


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_readme_block_runs_alone(k, tmp_path):
    done = run_fresh(BLOCKS[k], tmp_path)
    assert done.returncode == 0, f"README python block {k + 1} failed:\n{done.stderr[-3000:]}"
    if k == 0:                                 # the ten-line tour prints what the README says it prints
        assert len([line for line in BLOCKS[0].splitlines() if line.strip()]) <= 10
        said = re.search(r"It prints `(.*?)…` and `(.*?)`", README)
        assert said, "README.md no longer says what the tour prints"
        printed = done.stdout.splitlines()
        assert printed[0].startswith(said.group(1)) and printed[1] == said.group(2), done.stdout


def test_readme_commands_exist():
    """The scripts and simulation names the README's shell blocks and text use are there."""
    scripts = set(re.findall(r"bash (scripts/[\w.]+\.sh)", README))
    assert {"scripts/figures.sh", "scripts/test.sh"} <= scripts
    assert [s for s in scripts if not (ROOT / s).exists()] == []
    names = {p.stem for p in cli.scripts()}
    used = set(re.findall(r"rmtnet run ([a-z][a-z0-9_]*)", README))      # NAME is a placeholder
    assert used and used <= names, used - names
