"""Installed = usable: the wheel carries the figure scripts, and its `rmtnet` command lists and runs them with no
checkout in sight and no network; pyproject's package list is every package folder of rmtnet/."""
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.stem for p in (ROOT / "simulations").glob("*.py") if not p.name.startswith("_"))


def test_pyproject_lists_every_package_folder():
    """setuptools gets an explicit list (the simulations are mapped in), so a new subpackage must be added to it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rmtnet").rglob("__init__.py")}
    assert set(config["packages"]) == folders | {"rmtnet.simulations"}
    assert config["package-dir"]["rmtnet.simulations"] == "simulations"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this checkout (no build isolation, no network), installed into a bare folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"             # a copy, so that no build/ left in the checkout feeds stale files in
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "figures", "*.egg-info",
                                                                 "__pycache__", ".hypothesis", ".pytest_cache"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(tmp / "dist"), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel, = (tmp / "dist").glob("rmtnet-*.whl")
    target = tmp / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target",
                              str(target), str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    work = tmp / "work"                                  # a working directory with no checkout around it
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(target), OMP_NUM_THREADS="1")
    return target, work, env


def _rmtnet(installed, *args):
    target, work, env = installed
    return subprocess.run([str(target / "bin" / "rmtnet"), *args], capture_output=True, text=True, cwd=work,
                          env=env)


def test_the_wheel_carries_the_scripts_and_imports_from_itself(installed):
    target, work, env = installed
    assert sorted(p.stem for p in (target / "rmtnet" / "simulations").glob("*.py")
                  if not p.name.startswith("_")) == SCRIPTS
    r = subprocess.run([sys.executable, "-c", "import rmtnet, rmtnet.cli as c; print(rmtnet.__file__); "
                        "print(c.SIMULATIONS_DIR)"], capture_output=True, text=True, cwd=work, env=env)
    package, sims = r.stdout.split()
    assert Path(package).parent == target / "rmtnet" and Path(sims) == target / "rmtnet" / "simulations"


def test_installed_command_lists_every_simulation(installed):
    r = _rmtnet(installed, "list")
    assert r.returncode == 0, r.stderr
    listed = [line.split()[0] for line in r.stdout.splitlines()[:len(SCRIPTS)]]
    assert listed == SCRIPTS and f"{len(SCRIPTS)} simulations" in r.stdout


def test_installed_command_runs_a_simulation_into_the_working_directory(installed):
    """nngp, the quickest real figure (~10 s): its PNG and CSV land in ./figures of the working directory."""
    _, work, _ = installed
    r = _rmtnet(installed, "run", "nngp", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    assert (work / "figures" / "nngp.png").stat().st_size > 10_000
    assert (work / "figures" / "nngp.csv").read_text().count("\n") > 10
    assert "1 of 1 simulations done" in r.stdout
